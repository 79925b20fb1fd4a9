"""The ways bench_pairs.py compares score_pairs with, on the same model object: minicons'
batched ``sequence_score`` and lm-evaluation-harness's own ``HFLM.loglikelihood``.

Each ``*_scorer(lm, batch_size)`` returns a function from sentences to their total NLLs
(nats, one per sentence), or None when the library is not installed; building it (and
its first call, the warm-up) stays outside the timed runs.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Scorer = Callable[[list[str]], np.ndarray]

#: Per-sentence agreement asserted, in nats, by the model's dtype: (score_pairs against
#: the loop of score(), score_pairs against minicons and lm-eval).  float32: round-off of
#: the same sentence computed in another row layout (score_pairs' packed rows, the others'
#: padded batches; seen: 4e-5 and 2e-4).  bfloat16 (float16): logits rounded to 8 (11)
#: bits come out different in other batch shapes, and minicons and lm-eval take their
#: log-softmax in the model's dtype (score_pairs in float32).  Seen on SmolLM2 in bf16 on
#: this CPU, 200 sentences of ~50 nats: at most 0.29 (score()), 0.47 (minicons) and 0.58
#: nats (lm-eval); not yet measured on a GPU.
TOLERANCE = {"float32": (1e-4, 1e-3), "float16": (0.25, 0.5), "bfloat16": (1.0, 2.0)}


def minicons_scorer(lm: Any, batch_size: int = 32) -> Scorer | None:
    """minicons' ``IncrementalLMScorer.sequence_score(batch, reduction=lambda x: x.sum(0),
    bos_token=True)`` in batches of ``batch_size`` (None if minicons is not installed)."""
    try:
        from minicons import scorer
    except ImportError:
        return None
    tok = lm.tokenizer
    if tok.pad_token is None:  # minicons would set it and warn; same choice, said here
        tok.pad_token = tok.eos_token
    mc = scorer.IncrementalLMScorer(lm.model, device=str(lm.device), tokenizer=tok)

    def run(sentences: list[str]) -> np.ndarray:
        out = []
        for i in range(0, len(sentences), batch_size):
            out += mc.sequence_score(sentences[i:i + batch_size],
                                     reduction=lambda x: x.sum(0), bos_token=True)
        return -np.array([float(x) for x in out])

    return run


@dataclass
class LmEval:
    """lm-eval's ``HFLM`` on the loaded model and the token it conditions an empty
    context on (``prefix_id``), beside the one score() puts before a text (``ours_id``)."""

    run: Scorer
    prefix_id: int | None
    ours_id: int | None
    tokenizer: Any

    def same_prefix(self) -> bool:
        return self.prefix_id == self.ours_id

    def prefix_note(self) -> str:
        def name(i: int | None) -> str:
            return "none" if i is None else f"{self.tokenizer.convert_ids_to_tokens(i)!r} (id {i})"

        tok = self.tokenizer
        which = ("BOS" if self.prefix_id == tok.bos_token_id else
                 "EOS/EOT, the tokenizer has no BOS" if self.prefix_id == tok.eos_token_id
                 else "neither BOS nor EOS")
        if self.same_prefix():
            return (f"lm-eval conditions each sentence on {name(self.prefix_id)}, the "
                    f"{which}, as score() does")
        return (f"lm-eval conditions each sentence on {name(self.prefix_id)} ({which}), "
                f"score() on {name(self.ours_id)}: the totals are not comparable, their "
                "agreement is not asserted")


def lm_eval_import_error() -> str | None:
    """Why lm-eval's HFLM cannot be imported here (None when it can): "lm_eval not
    installed", or what its import lacks (accelerate, say) where lm_eval is installed."""
    if importlib.util.find_spec("lm_eval") is None:
        return "lm_eval not installed"
    try:
        from lm_eval.api.instance import Instance  # noqa: F401
        from lm_eval.models.huggingface import HFLM  # noqa: F401
    except ImportError as exc:
        return f"lm_eval is installed but HFLM cannot be imported ({exc})"
    return None


def lm_eval_scorer(lm: Any, batch_size: int = 32) -> LmEval | None:
    """lm-evaluation-harness's own ``HFLM(pretrained=model, tokenizer=tokenizer,
    batch_size=..., max_length=...).loglikelihood``: one request per sentence, an empty
    context and the sentence as the continuation, so lm-eval scores every token of the
    sentence after its ``prefix_token_id`` (None if lm_eval is not installed)."""
    if lm_eval_import_error() is not None:
        return None
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    from ppl_widget.scoring.runner.prepare import check_and_prefix

    quiet = logging.getLogger("lm_eval")  # "`pretrained` model kwarg is not of type `str`"
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        hf = HFLM(pretrained=lm.model, tokenizer=lm.tokenizer, batch_size=batch_size,
                  max_length=lm.default_max_length())
    finally:
        quiet.setLevel(level)

    def run(sentences: list[str]) -> np.ndarray:
        reqs = [Instance(request_type="loglikelihood", doc={}, arguments=("", s), idx=i)
                for i, s in enumerate(sentences)]
        return -np.array([ll for ll, _greedy in hf.loglikelihood(reqs, disable_tqdm=True)])

    try:
        ours = check_and_prefix("", lm.tokenizer, "bos", False)[0]  # score()'s default
    except ValueError:  # a tokenizer with neither BOS nor EOS
        ours = None
    return LmEval(run, hf.prefix_token_id, ours, lm.tokenizer)
