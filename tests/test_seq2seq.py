"""Encoder-decoder models (kinds/seq2seq): a target's tokens scored through the decoder,
teacher-forced, given a source, against a float64 reference (the model's own ``labels``
path: its tokenizer's labels, its ``shift_tokens_right``, one forward) and minicons'
``Seq2SeqScorer``; long targets in decoder windows; the errors.

Tiny random T5 and BART built from configs, with tokenizers trained here on the test's
own text (T5: Unigram with ``</s>`` appended; BART: byte-level BPE with ``<s> ... </s>``).
"""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ppl_widget import load_model, score  # noqa: E402
from ppl_widget.core.windows import plan_windows  # noqa: E402

TEXT = [
    "The quick brown fox jumps over the lazy dog.",
    "A source sentence is read by the encoder, and the decoder writes the target.",
    "Translation models score every target token given the whole source.",
    "Le renard brun saute par-dessus le chien paresseux.",
    "Surprisal is minus the log probability of a token given its context.",
] * 20
SOURCE = "The quick brown fox jumps over the lazy dog."
TARGET = "Le renard brun saute par-dessus le chien paresseux."
LONG_TARGET = " ".join(TEXT[:5])
#: per-token agreement with the float64 reference, in nats
TOL = 1e-4


def _t5_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    specials = ["<pad>", "</s>", "<unk>", "<extra_id_0>", "<extra_id_1>"]
    tok.train_from_iterator(TEXT, trainers.UnigramTrainer(
        vocab_size=150, special_tokens=specials, unk_token="<unk>"))
    eos = tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(  # T5: text </s>
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", eos)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>",
                                   unk_token="<unk>")


def _bart_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(TEXT, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.post_processor = processors.TemplateProcessing(  # BART: <s> text </s>
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>", unk_token="<unk>", mask_token="<mask>")


def _build(kind: str, path):
    from transformers import (
        BartConfig,
        BartForConditionalGeneration,
        T5Config,
        T5ForConditionalGeneration,
    )

    torch.manual_seed(0)
    if kind == "t5":
        tok = _t5_tokenizer()
        cfg = T5Config(vocab_size=len(tok), d_model=32, d_kv=8, d_ff=64, num_layers=2,
                       num_decoder_layers=2, num_heads=4, relative_attention_num_buckets=8,
                       pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                       decoder_start_token_id=tok.pad_token_id,
                       architectures=["T5ForConditionalGeneration"])
        model = T5ForConditionalGeneration(cfg)
    else:
        tok = _bart_tokenizer()
        cfg = BartConfig(vocab_size=len(tok), d_model=32, encoder_layers=2, decoder_layers=2,
                         encoder_attention_heads=4, decoder_attention_heads=4,
                         encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
                         bos_token_id=0, pad_token_id=1, eos_token_id=2,
                         decoder_start_token_id=2, forced_bos_token_id=0,
                         architectures=["BartForConditionalGeneration"])
        model = BartForConditionalGeneration(cfg)
    # random init gives near-uniform predictions; sharpen them so ranks and top-k differ
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(8.0)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="module", params=["t5", "bart"])
def seq2seq(request, tmp_path_factory):
    """(kind, the Seq2SeqModel load_model gives for the saved directory, a float64 copy)."""
    path = _build(request.param, tmp_path_factory.mktemp(request.param))
    lm = load_model(str(path), device="cpu", dtype="float32")
    return request.param, lm, copy.deepcopy(lm.model).double().eval()


def _labels(tok, text: str) -> list[int]:
    """The target as the tokenizer tokenizes labels (T5: text </s>; BART: <s> text </s>)."""
    return list(tok(text_target=text)["input_ids"])


def _reference(model64, source_ids: list[int], labels: list[int]) -> np.ndarray:
    """Surprisal of every label, float64, one forward through the model's own labels path
    (it shifts the labels right behind ``decoder_start_token_id``)."""
    with torch.no_grad():
        out = model64(input_ids=torch.tensor([source_ids]), labels=torch.tensor([labels]))
    logp = out.logits[0].log_softmax(-1)
    return -logp[torch.arange(len(labels)), torch.tensor(labels)].numpy()


def _head(kind: str) -> int:
    """Labels the tokenizer puts before the text (BART's <s>): read, not scored."""
    return 1 if kind == "bart" else 0


def test_load_model_recognises_an_encoder_decoder(seq2seq, tmp_path):
    from ppl_widget.scoring.kinds.seq2seq.seq2seq_model import Seq2SeqModel

    kind, lm, _ = seq2seq
    assert isinstance(lm, Seq2SeqModel)
    assert type(lm.model).__name__ == ("T5ForConditionalGeneration" if kind == "t5"
                                       else "BartForConditionalGeneration")
    assert lm.decoder_start_token_id == lm.model.config.decoder_start_token_id
    pair = load_model((lm.model, lm.tokenizer))  # an already-loaded pair, too
    assert isinstance(pair, Seq2SeqModel) and pair.model is lm.model


def test_an_encoder_decoder_is_told_from_its_config():
    """By ``AutoModelForSeq2SeqLM``'s mapping: a seq2seq class among the architectures, or
    an encoder-decoder of a model type in it (a config that names its base model only)."""
    from transformers import BartConfig, GPT2Config, T5Config

    from ppl_widget.scoring.kinds.seq2seq.seq2seq_model import is_seq2seq_config

    assert is_seq2seq_config(T5Config(architectures=["T5ForConditionalGeneration"]))
    assert is_seq2seq_config(BartConfig(architectures=["BartModel"]))  # facebook/bart-base
    assert not is_seq2seq_config(GPT2Config(architectures=["GPT2LMHeadModel"]))
    assert not is_seq2seq_config(BartConfig(architectures=["BartForCausalLM"],
                                            is_encoder_decoder=False))


@pytest.mark.parametrize("add_eos", [False, True])
def test_target_given_source_matches_float64_reference(seq2seq, add_eos):
    kind, lm, model64 = seq2seq
    tok = lm.tokenizer
    result = score(TARGET, lm, context=SOURCE, add_eos=add_eos)
    labels = _labels(tok, TARGET)
    ref = _reference(model64, list(tok(SOURCE)["input_ids"]), labels)
    scored = slice(_head(kind), len(labels) if add_eos else len(labels) - 1)
    assert result.token_ids.tolist() == labels[scored]
    diff = np.abs(result.surprisal - ref[scored]).max()
    print(f"{kind} add_eos={add_eos}: max |diff| vs float64 {diff:.2e} nats "
          f"over {len(ref[scored])} tokens")
    assert diff < TOL
    assert bool(result.is_eos[-1]) is add_eos
    s = result.settings
    assert s["objective"] == "seq2seq" and s["prefix_every_window"] is True
    assert s["prefix_token"] == tok.convert_ids_to_tokens(lm.decoder_start_token_id)
    assert s["context_tokens"] == s["source_tokens"] == len(tok(SOURCE)["input_ids"])
    assert result.context == SOURCE and result.text == TARGET
    # the first target token is predicted from the decoder start (and BART's <s>): scored
    assert result.context_length[0] == 1 + _head(kind)


def test_no_source_reads_the_empty_source(seq2seq):
    """Without a context the encoder reads ``tokenizer("")`` (T5: </s>; BART: <s> </s>)."""
    kind, lm, model64 = seq2seq
    tok = lm.tokenizer
    empty = list(tok("")["input_ids"])
    assert empty == ([tok.eos_token_id] if kind == "t5" else [0, 2])
    result = score(TARGET, lm)
    labels = _labels(tok, TARGET)
    ref = _reference(model64, empty, labels)[_head(kind):len(labels) - 1]
    assert np.abs(result.surprisal - ref).max() < TOL
    assert result.settings["context_tokens"] == 0
    assert result.settings["source_tokens"] == len(empty)
    # a source changes what the decoder predicts
    given = score(TARGET, lm, context=SOURCE)
    assert np.abs(given.surprisal - result.surprisal).max() > 1e-3


def test_long_target_in_decoder_windows_matches_float64_windows(seq2seq):
    """A target longer than the window: causal strided windows over the decoder, the start
    token first in each, one encoder output; each against a float64 forward of the same
    window."""
    kind, lm, model64 = seq2seq
    tok = lm.tokenizer
    max_length, stride = 12, 5
    result = score(LONG_TARGET, lm, context=SOURCE, max_length=max_length, stride=stride,
                   add_eos=True)
    labels = _labels(tok, LONG_TARGET)
    seq = [lm.decoder_start_token_id, *labels]
    windows = plan_windows(len(seq), max_length, stride, first_target=1 + _head(kind))
    assert len(windows) >= 5 and result.settings["n_windows"] == len(windows)
    src = torch.tensor([tok(SOURCE)["input_ids"]])
    ref = []
    with torch.no_grad():
        encoded = model64.get_encoder()(input_ids=src)
        for w in windows:
            reads = seq[:w.input_end] if w.input_start == 0 else \
                [seq[0], *seq[w.input_start + 1:w.input_end]]
            logp = model64(encoder_outputs=encoded, decoder_input_ids=torch.tensor([reads])
                           ).logits[0].log_softmax(-1)
            rows = logp[len(reads) - w.n_targets:]
            ref += (-rows[torch.arange(w.n_targets),
                          torch.tensor(seq[w.target_start:w.target_end])]).tolist()
    assert result.token_ids.tolist() == labels[_head(kind):]
    diff = np.abs(result.surprisal - np.asarray(ref)).max()
    print(f"{kind} long target ({len(ref)} tokens, {len(windows)} windows): max |diff| vs "
          f"float64 windows {diff:.2e} nats")
    assert diff < TOL
    if kind == "bart":  # learned positions: the target does not fit one decoder pass
        assert len(seq) > lm.context_length
    else:  # windows give the targets less context than one pass: the numbers do differ
        whole = _reference(model64, src[0].tolist(), labels)[_head(kind):]
        assert np.abs(whole - np.asarray(ref)).max() > 1e-3


def test_statistics_agree_with_the_distribution(seq2seq):
    kind, lm, model64 = seq2seq
    result = score(TARGET, lm, context=SOURCE, top_k=3)
    tok = lm.tokenizer
    labels = _labels(tok, TARGET)
    dec = [lm.decoder_start_token_id, *labels[:-1]]
    with torch.no_grad():
        logp = model64(input_ids=torch.tensor([tok(SOURCE)["input_ids"]]),
                       decoder_input_ids=torch.tensor([dec])).logits[0].log_softmax(-1)
    rows = logp[_head(kind):len(labels) - 1]
    entropy = -(rows.exp() * rows).sum(-1).numpy()
    assert np.abs(result.entropy - entropy).max() < TOL
    top = rows.topk(3, dim=-1)
    assert (result.topk_ids == top.indices.numpy()).all()
    rank = (rows > rows.gather(1, torch.tensor(result.token_ids)[:, None])).sum(-1) + 1
    assert (result.rank == rank.numpy()).all()


def test_agrees_with_minicons_seq2seq_scorer(seq2seq, tmp_path):
    """minicons' ``conditional_token_score``: the encoder reads the prefix as written (we
    write the tokenizer's special tokens into it, as ``tokenizer(source)`` adds them) and
    the decoder ``start + target`` tokens, the target's tokens scored, no EOS.  T5 only:
    for BART minicons reads no ``<s>`` after the start token and tokenizes the target
    after a space, another layout."""
    kind, lm, _ = seq2seq
    if kind != "t5":
        pytest.skip("minicons' BART layout differs (no <s> label head): compared on T5")
    scorer = pytest.importorskip("minicons.scorer")
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(lm.model.name_or_path)  # minicons changes its own
    if not hasattr(tok, "batch_encode_plus"):  # transformers 5 removed it; minicons calls it
        tok.batch_encode_plus = tok.__call__
    with warnings.catch_warnings():  # it adds a BOS token to a tokenizer without one (T5)
        warnings.simplefilter("ignore", UserWarning)
        mc = scorer.Seq2SeqScorer(copy.deepcopy(lm.model), "cpu", tokenizer=tok)
    prefix = SOURCE + lm.tokenizer.eos_token  # what tokenizer(SOURCE) reads: source </s>
    theirs = mc.conditional_token_score(prefix, TARGET, surprisal=True, decode=False)[0]
    ours = score(TARGET, lm, context=SOURCE)
    assert [t for t, _ in theirs[1:]] == \
        lm.tokenizer.convert_ids_to_tokens(ours.token_ids.tolist())
    diff = np.abs(np.asarray([s for _, s in theirs[1:]]) - ours.surprisal).max()
    print(f"t5 vs minicons Seq2SeqScorer: max |diff| {diff:.2e} nats over "
          f"{len(ours.surprisal)} tokens")
    assert diff < TOL


def test_bad_input_is_a_clear_error(seq2seq):
    kind, lm, _ = seq2seq
    with pytest.raises(ValueError, match="encoder-decoder reads its source as a string"):
        score(TARGET, lm, context=[{"role": "user", "content": SOURCE}])
    with pytest.raises(ValueError, match="prefix must be 'bos'"):
        score(TARGET, lm, context=SOURCE, prefix=None)
    from ppl_widget import divergence

    with pytest.raises(TypeError, match=r"an encoder-decoder model's decoder reads a source"):
        divergence(TARGET, lm, lm)
    long_source = " ".join(TEXT[:10])
    if kind == "t5":  # relative positions: the tokenizer's model_max_length is the limit
        lm = copy.copy(lm)
        lm.tokenizer = copy.deepcopy(lm.tokenizer)
        lm.tokenizer.model_max_length = 16
    with pytest.raises(ValueError, match=r"the encoder takes at most (64|16)"):
        score(TARGET, lm, context=long_source)
    if kind == "bart":  # learned positions: the decoder's window fits them
        with pytest.raises(ValueError, match=r"context length \(64\)"):
            score(TARGET, lm, max_length=65)


def test_stream_ends_with_the_score_result(seq2seq, monkeypatch):
    """The streaming path (what the widget runs) gives score()'s result, batch by batch;
    a batch whose logits would pass the bound goes through in groups, with the same
    numbers."""
    from ppl_widget import stream
    from ppl_widget.scoring.kinds.seq2seq import seq2seq_forward

    kind, lm, _ = seq2seq
    grouped = score(LONG_TARGET, lm, context=SOURCE, max_length=12, stride=5, batch_size=8)
    monkeypatch.setattr(seq2seq_forward, "MAX_LOGIT_ELEMENTS", 1)  # one window a group
    alone = score(LONG_TARGET, lm, context=SOURCE, max_length=12, stride=5, batch_size=8)
    assert np.abs(grouped.surprisal - alone.surprisal).max() < TOL
    assert np.array_equal(grouped.topk_ids, alone.topk_ids)
    chunks = list(stream(LONG_TARGET, lm, context=SOURCE, max_length=12, stride=5,
                         batch_size=2))
    assert len(chunks) > 2 and chunks[-1].finished
    whole = score(LONG_TARGET, lm, context=SOURCE, max_length=12, stride=5)
    assert np.array_equal(chunks[-1].result.surprisal, whole.surprisal)
    assert math.isfinite(whole.metrics()["token_ppl"])


def test_a_failure_mid_run_keeps_what_was_scored(seq2seq, monkeypatch):
    """A batch that fails after others were scored: a ScoringError whose partial result
    holds the scored windows' tokens, equal to the full run's."""
    from ppl_widget.scoring.kinds.seq2seq.seq2seq_forward import Seq2SeqForward
    from ppl_widget.scoring.runner.progress import ScoringError

    kind, lm, _ = seq2seq
    whole = score(LONG_TARGET, lm, context=SOURCE, max_length=12, stride=5, batch_size=1)
    calls = []
    real = Seq2SeqForward._stats

    def fails_third(self, sequence, batch):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("device lost")
        return real(self, sequence, batch)

    monkeypatch.setattr(Seq2SeqForward, "_stats", fails_third)
    with pytest.raises(ScoringError, match="device lost") as caught:
        score(LONG_TARGET, lm, context=SOURCE, max_length=12, stride=5, batch_size=1)
    part = caught.value.partial_result
    n = len(part.surprisal)
    n_seq = 1 + _head(kind) + len(whole.surprisal)  # start token, label head, targets
    first_two = plan_windows(n_seq, 12, 5, first_target=1 + _head(kind))[:2]
    assert part.partial and n == sum(w.n_targets for w in first_two)
    assert np.array_equal(part.surprisal, whole.surprisal[:n])


def test_explain_a_target_scored_without_a_source(seq2seq):
    """Occlusion and the context curve edit the decoder's side; the encoder reads the
    empty source, as score() without a context does, so the target's own surprisal is
    score()'s.  With a source, explain() refuses it as it refuses any context=."""
    from ppl_widget.core.explain.target import ExplainError

    kind, lm, _ = seq2seq
    result = score(TARGET, lm)
    explanation = result.explain(token=6)
    assert abs(explanation.target_surprisal_nats - result.surprisal[6]) < TOL
    curve = result.context_curve(token=6)
    assert abs(curve["surprisal_nats"].iloc[-1] - result.surprisal[6]) < TOL
    with pytest.raises(ExplainError, match="context"):
        score(TARGET, lm, context=SOURCE).explain(token=6)
