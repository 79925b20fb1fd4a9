"""Masked-LM pseudo-log-likelihood against minicons 0.3.39 (``MaskedLMScorer``, the
field's reference implementation, Misra 2022): every token of the three test families
under both PLL metrics.  minicons calls ``tokenizer.batch_encode_plus``, which
transformers 5 removed: it is aliased to ``__call__`` here."""

from __future__ import annotations

import numpy as np
import pytest
from masked_models import FAMILIES, build_masked

from ppl_widget.scoring.kinds.models import load_model
from ppl_widget.scoring.runner.scorer import score

scorer = pytest.importorskip("minicons.scorer")

#: minicons and score() each measured within 5e-6 nats of a float64 brute force on these
#: models (tests/test_masked_scoring.py); both are float32, so 1e-4 bounds their spread.
TOL = 1e-4
TEXTS = ["Unbelievably, the dogs were sleeping peacefully.",
         "Researchers measured reading times: antidisestablishmentarianism internationally."]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("minicons")
    return {f: load_model(str(build_masked(f, root / f)), device="cpu", dtype="float32")
            for f in FAMILIES}


def minicons_surprisals(lm, text: str, metric: str) -> list[float]:
    tok = lm.tokenizer
    if not hasattr(tok, "batch_encode_plus"):
        tok.batch_encode_plus = tok.__call__  # transformers 5 removed it
    mlm = scorer.MaskedLMScorer(lm.model, device="cpu", tokenizer=tok)
    (scored,) = mlm.token_score([text], surprisal=True, PLL_metric=metric)
    return [s for _, s in scored]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("metric", ["original", "within_word_l2r"])
def test_every_token_agrees_with_minicons(models, family, metric):
    lm = models[family]
    for text in TEXTS:
        ours = np.asarray(score(text, lm, pll_metric=metric).surprisal)
        theirs = np.asarray(minicons_surprisals(lm, text, metric))
        assert ours.shape == theirs.shape
        assert np.abs(ours - theirs).max() < TOL, np.abs(ours - theirs).max()
