"""Masked language models scored by pseudo-log-likelihood (kinds/masked): every token
of three families (WordPiece BERT, byte-level BPE RoBERTa, Unigram ALBERT) equals a
float64 brute force, one masked copy per token, within 1e-4 nats, under both metrics;
a text five times the model's positions is scored in two-sided windows; ``load_model``
loads a masked LM as one; bad input is a ValueError naming its rule."""

from __future__ import annotations

import numpy as np
import pytest
from masked_models import FAMILIES, brute_pll, build_masked

from ppl_widget.core.two_sided_windows import plan_two_sided
from ppl_widget.scoring.kinds.masked.masked_model import MaskedModel
from ppl_widget.scoring.kinds.model_errors import ModelLoadError
from ppl_widget.scoring.kinds.models import load_model
from ppl_widget.scoring.runner.scorer import score, stream

#: Tolerance against the float64 reference: the float32 path measured 3e-6..5e-6 nats
#: from it on these models; 1e-4 is the task's bound.
TOL = 1e-4
TEXT = "Unbelievably, the dogs were sleeping peacefully: antidisestablishmentarianism " \
       "internationally."
LONG = ("The quick brown fox jumps over the lazy dog. Researchers measured reading times "
        "for sentences with surprising continuations; photosynthesis internationally. ") * 5


@pytest.fixture(scope="module")
def masked_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("masked")
    return {f: build_masked(f, root / f) for f in FAMILIES}


@pytest.fixture(scope="module")
def masked(masked_dirs):
    return {f: load_model(str(p), device="cpu", dtype="float32")
            for f, p in masked_dirs.items()}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("metric", ["original", "within_word_l2r"])
def test_every_token_equals_the_float64_brute_force(masked, family, metric):
    lm = masked[family]
    result = score(TEXT, lm, pll_metric=metric, top_k=3)
    surprisal, entropy, rank = brute_pll(lm.model, lm.tokenizer, TEXT, metric, stats=True)
    ids = lm.tokenizer(TEXT, add_special_tokens=False)["input_ids"]
    assert list(result.token_ids) == ids, "every text token scored, the first included"
    assert len(result.unscored_token_ids) == 0
    assert np.abs(np.asarray(result.surprisal) - surprisal).max() < TOL
    assert np.abs(np.asarray(result.entropy) - entropy).max() < TOL
    assert list(result.rank) == rank
    assert result.settings["objective"] == "pll"
    assert result.settings["pll_metric"] == metric
    assert result.settings["n_windows"] == 1


def test_within_word_l2r_is_the_default_and_differs_from_original(masked):
    lm = masked["bert"]
    default = score(TEXT, lm)
    assert default.settings["pll_metric"] == "within_word_l2r"
    original = score(TEXT, lm, pll_metric="original")
    assert not np.allclose(default.surprisal, original.surprisal)  # a multi-token word
    np.testing.assert_allclose(default.surprisal, score(TEXT, lm, pll_metric=
                                                        "within_word_l2r").surprisal)


@pytest.mark.parametrize("family,metric,stride,batch", [
    ("bert", "within_word_l2r", None, "auto"), ("roberta", "original", 7, 3),
    ("albert", "within_word_l2r", 62, 5)])
def test_a_text_five_times_the_positions_in_two_sided_windows(masked, family, metric, stride,
                                                              batch):
    lm = masked[family]
    n = len(lm.tokenizer(LONG, add_special_tokens=False)["input_ids"])
    assert n >= 5 * lm.context_length
    result = score(LONG, lm, pll_metric=metric, stride=stride, batch_size=batch)
    max_length = result.settings["max_length"]
    assert max_length == lm.context_length == 64
    plan = plan_two_sided(n, max_length - 2, result.settings["stride"])
    reference = brute_pll(lm.model, lm.tokenizer, LONG, metric,
                          windows=[(w.input_start, w.input_end, w.target_start, w.target_end)
                                   for w in plan])
    assert len(result.surprisal) == n
    assert np.abs(np.asarray(result.surprisal) - reference).max() < TOL
    assert result.settings["n_windows"] == len(plan)


def test_stream_yields_batches_and_ends_with_the_score(masked):
    lm = masked["roberta"]
    items = list(stream(LONG[:300], lm, batch_size=4))
    assert len(items) > 2 and items[-1].finished
    np.testing.assert_array_equal(items[-1].result.surprisal,
                                  score(LONG[:300], lm, batch_size=16).surprisal)


def test_load_model_loads_a_masked_lm_as_one(masked_dirs, masked):
    for family, lm in masked.items():
        assert isinstance(lm, MaskedModel)
        assert "ForMaskedLM" in type(lm.model).__name__, family
        assert "Causal" not in type(lm.model).__name__ and "LMHead" not in type(lm.model).__name__


def test_a_masked_pair_is_a_masked_model(masked):
    lm = masked["bert"]
    pair = load_model((lm.model, lm.tokenizer))
    assert isinstance(pair, MaskedModel)


def test_an_encoder_without_a_head_names_the_rule(tmp_path, masked):
    import transformers as tr

    lm = masked["bert"]
    tr.BertModel(lm.model.config).save_pretrained(tmp_path)
    lm.tokenizer.save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError, match="BertModel: a model without a language-model head"):
        load_model(str(tmp_path))


def test_bad_input_names_the_rule(masked, tiny_gpt2):
    lm = masked["bert"]
    with pytest.raises(ValueError, match="pll_metric must be one of"):
        score(TEXT, lm, pll_metric="within_word")
    with pytest.raises(ValueError, match="pll_metric= is for masked language models"):
        score(TEXT, tiny_gpt2, pll_metric="original")
    for option in ({"context": "Before."}, {"add_eos": True}, {"protocol": "lm-eval"},
                   {"prefix_every_window": True}):
        with pytest.raises(ValueError, match="is for causal models"):
            score(TEXT, lm, **option)
    with pytest.raises(ValueError, match="nothing to score"):
        score("   ", lm)
    with pytest.raises(ValueError, match="max_length must be at least 3"):
        score(TEXT, lm, max_length=2, stride=1)
    with pytest.raises(ValueError, match="stride must not exceed the text tokens"):
        score(TEXT, lm, max_length=10, stride=9)


def test_a_tokenizer_without_a_mask_token_names_the_rule(masked):
    import copy

    lm = masked["bert"]
    tok = copy.deepcopy(lm.tokenizer)
    tok.mask_token = None
    with pytest.raises(ValueError, match="needs a tokenizer with a mask token"):
        load_model((lm.model, tok))


@pytest.mark.parametrize("family", ["distilbert", "deberta-v2", "electra", "modernbert"])
def test_heads_of_other_shapes_read_only_the_target_rows_exactly(masked, family):
    """The MLM head reads one row per copy (a hook cuts the body's output): exact for
    heads laid out unlike BERT's too (DistilBERT's loose layers, DeBERTa-v2's, ELECTRA's
    generator head, ModernBERT's), here with the BERT fixture's tokenizer."""
    import torch
    import transformers as tr

    tok = masked["bert"].tokenizer
    small = dict(num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                 max_position_embeddings=64, pad_token_id=tok.pad_token_id)
    cls, config = {
        "distilbert": (tr.DistilBertForMaskedLM, tr.DistilBertConfig(
            vocab_size=len(tok), dim=32, n_layers=2, n_heads=2, hidden_dim=64,
            max_position_embeddings=64, pad_token_id=tok.pad_token_id)),
        "deberta-v2": (tr.DebertaV2ForMaskedLM, tr.DebertaV2Config(
            vocab_size=len(tok), hidden_size=32, relative_attention=True,
            position_biased_input=False, pos_att_type=["p2c", "c2p"], **small)),
        "electra": (tr.ElectraForMaskedLM, tr.ElectraConfig(
            vocab_size=len(tok), embedding_size=16, hidden_size=32, **small)),
        "modernbert": (tr.ModernBertForMaskedLM, tr.ModernBertConfig(
            vocab_size=len(tok), hidden_size=32, cls_token_id=tok.cls_token_id,
            sep_token_id=tok.sep_token_id, bos_token_id=None, eos_token_id=None,
            global_attn_every_n_layers=1, local_attention=16, **small)),
    }[family]
    torch.manual_seed(0)
    model = cls(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.3)
    lm = load_model((model, tok), device="cpu", dtype="float32")
    assert isinstance(lm, MaskedModel)
    result = score(TEXT, lm, pll_metric="within_word_l2r")
    reference = brute_pll(model, tok, TEXT, "within_word_l2r")
    assert np.abs(np.asarray(result.surprisal) - reference).max() < TOL
