"""GGUF tokenizers built from the file's metadata (ppl_widget/scoring/kinds/gguf/gguf_tokenizer.py)
against llama.cpp's vocabulary test suite, case for case, for every causal family, and
against the ids llama.cpp's llama-tokenize gave on our own texts with the default model
(tests/llama_cpp_tokens.json, scripts/record_llama_tokens.py)."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest
from background_setup import wait_for
from llama_vocab_suite import FAMILIES, read_cases, suite_dir

from ppl_widget.scoring.kinds.gguf import gguf_tokenizer
from ppl_widget.scoring.kinds.gguf.gguf import default_gguf_path
from ppl_widget.scoring.kinds.gguf.gguf_metadata import read_metadata
from ppl_widget.scoring.kinds.model_cache import file_sha256

RECORDED = Path(__file__).with_name("llama_cpp_tokens.json")


def _suite() -> Path:
    """The suite's folder; a skip on a developer's machine without it, a failure in CI
    (scripts/test.sh fetches it there, in the background on a new machine)."""
    wait_for("llama-vocab")
    folder = suite_dir()
    if not all((folder / f"ggml-vocab-{f}.gguf.out").is_file() for f in FAMILIES):
        message = (f"llama.cpp's vocabulary test suite is not in {folder}: run "
                   "scripts/setup.sh (or set PPL_WIDGET_LLAMA_VOCAB)")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return folder


@functools.cache
def _family_tokenizer(family: str):
    return gguf_tokenizer.tokenizer_from_gguf(_suite() / f"ggml-vocab-{family}.gguf")


@functools.cache
def _default_tokenizer():
    return gguf_tokenizer.tokenizer_from_gguf(default_gguf_path())


def _mismatches(tok, cases, **kwargs) -> list[str]:
    bad = []
    for text, want in cases:
        got = tok(text, add_special_tokens=False, **kwargs)["input_ids"]
        if got != want:
            bad.append(f"{text[:40]!r}: want {tok.convert_ids_to_tokens(want)[:12]}, "
                       f"got {tok.convert_ids_to_tokens(got)[:12]}")
    return bad


@pytest.mark.parametrize("family", FAMILIES)
def test_the_vocab_suite_case_for_case(family):
    """Every input of llama.cpp's test for the family gives the ids of the model's own
    Hugging Face tokenizer (the .out file), which llama.cpp gives too."""
    cases = read_cases(_suite(), family)
    assert len(cases) >= 46
    bad = _mismatches(_family_tokenizer(family), cases)
    assert not bad, f"{family}: {len(bad)}/{len(cases)} cases differ:\n" + "\n".join(bad[:5])


def _recorded() -> dict:
    data = json.loads(RECORDED.read_text(encoding="utf-8"))
    assert file_sha256(default_gguf_path()) == data["sha256"], \
        "the embedded model is not the file the ids were recorded with"
    return data


def test_the_default_model_tokenizes_as_llama_cpp():
    """Our texts (README, docs, code, whitespace before digits, unicode, special-token
    strings) and the suite's inputs: llama-tokenize's ids, with special-token strings kept
    as text (as the scorer encodes) and parsed."""
    tok = _default_tokenizer()
    cases = _recorded()["cases"]
    assert {"readme", "whitespace_digits", "unicode", "code_python"} <= {c["name"] for c in cases}
    plain = [(c["text"], c["ids"]) for c in cases]
    parsed = [(c["text"], c["ids_parse_special"]) for c in cases]
    bad = _mismatches(tok, plain, split_special_tokens=True) + _mismatches(tok, parsed)
    assert not bad, "\n".join(bad[:5])
    # the two cases of the issue: runs of newlines and of spaces before a digit
    assert tok.tokenize("?\n\n2019") == ["?", "ĊĊ", "2", "0", "1", "9"]
    assert tok.tokenize("  1. Introduction")[:2] == ["ĠĠ", "1"]


def test_the_files_chat_template_comes_along(tmp_path):
    """A chat context is rendered with the template the GGUF carries
    (``tokenizer.chat_template``), also after the converted copy is saved and read back."""
    from transformers import AutoTokenizer

    tok = _default_tokenizer()
    assert tok.chat_template and "<|im_start|>" in tok.chat_template
    chat = [{"role": "user", "content": "Hi"}]
    rendered = tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    assert rendered.rstrip().endswith("<|im_start|>assistant")
    tok.save_pretrained(tmp_path / "saved")
    back = AutoTokenizer.from_pretrained(tmp_path / "saved")
    assert back.apply_chat_template(chat, tokenize=False, add_generation_prompt=True) == rendered


def _same_encodings(a, b, texts) -> None:
    for text in texts:
        for kwargs in ({}, {"add_special_tokens": False, "split_special_tokens": True}):
            x = a(text, return_offsets_mapping=True, **kwargs)
            y = b(text, return_offsets_mapping=True, **kwargs)
            assert x["input_ids"] == y["input_ids"], (text[:40], kwargs)
            assert x["offset_mapping"] == y["offset_mapping"], (text[:40], kwargs)


def test_a_saved_tokenizer_json_loads_back_the_same(tmp_path):
    """What the browser-side tokenizer and the converted cache read: tokenizer.json from
    save_pretrained, loaded by AutoTokenizer, gives the same ids and offsets."""
    from transformers import AutoTokenizer

    texts = [c["text"] for c in _recorded()["cases"]]
    tok = _default_tokenizer()
    tok.save_pretrained(tmp_path / "default")
    _same_encodings(tok, AutoTokenizer.from_pretrained(tmp_path / "default"), texts)
    spm = _family_tokenizer("llama-spm")  # the SentencePiece rules, with a BOS added
    spm.save_pretrained(tmp_path / "spm")
    _same_encodings(spm, AutoTokenizer.from_pretrained(tmp_path / "spm"), texts)
    assert spm("Hello")["input_ids"][0] == spm.bos_token_id == 1


def test_offsets_cover_the_text_in_order():
    """What the scorer maps surprisal back to characters with."""
    tok = _default_tokenizer()
    text = "Cửa Việt:  42 cats\n\n\tend 🌞"
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    assert tok.decode(enc["input_ids"]) == text
    spans = enc["offset_mapping"]
    assert [a for a, _ in spans] == sorted(a for a, _ in spans)
    assert [b for _, b in spans] == sorted(b for _, b in spans)
    assert {i for a, b in spans for i in range(a, b)} == set(range(len(text)))
    digits = [text[a:b] for (a, b), t in zip(spans, tok.convert_ids_to_tokens(enc["input_ids"]),
                                             strict=True) if t in ("4", "2")]
    assert digits == ["4", "2"]


@functools.cache
def _default_meta_read() -> dict:
    return read_metadata(default_gguf_path(), prefix="tokenizer.")


def _default_meta() -> dict:
    """The default model's tokenizer metadata, read once; a copy each test may change."""
    return dict(_default_meta_read())


def test_an_unknown_pre_tokenizer_warns_and_falls_back_to_gpt2():
    meta = {**_default_meta(), "tokenizer.ggml.pre": "no-such-pre"}
    with pytest.warns(UserWarning, match=r"'no-such-pre'.*may differ from llama\.cpp"):
        tok = gguf_tokenizer.build_tokenizer(meta, source="test.gguf")
    gpt2 = gguf_tokenizer.build_tokenizer({**meta, "tokenizer.ggml.pre": "gpt-2"})
    text = "?\n\n2019 was  1. Introduction"
    assert tok.tokenize(text) == gpt2.tokenize(text) != _default_tokenizer().tokenize(text)
    meta["tokenizer.ggml.pre"] = "kimi-k2"  # known, but needs llama.cpp's own code
    with pytest.warns(UserWarning, match=r"'kimi-k2'.*llama\.cpp's own code"):
        gguf_tokenizer.build_tokenizer(meta, source="test.gguf")


def test_a_merge_of_tokens_outside_the_vocabulary_is_left_out_as_llama_cpp_does():
    meta = _default_meta()
    merges = list(meta["tokenizer.ggml.merges"])
    meta["tokenizer.ggml.merges"] = [*merges[:10], "zzqx qxzz", *merges[10:]]
    text = "?\n\n2019 was  1. Introduction"
    tok = gguf_tokenizer.build_tokenizer(meta)
    assert tok(text)["input_ids"] == _default_tokenizer()(text)["input_ids"]


def test_a_vocabulary_that_is_no_causal_lms_is_refused():
    meta = {**_default_meta(), "tokenizer.ggml.model": "bert"}
    with pytest.raises(gguf_tokenizer.GGUFTokenizerError, match="'bert'.*'gpt2'"):
        gguf_tokenizer.build_tokenizer(meta)


def test_load_tokenizer_reads_a_vocabulary_only_gguf_without_weights(monkeypatch):
    """A vocab-only file (no tensors) through the public API, and no weights are read."""
    pytest.importorskip("torch")
    from transformers import AutoModelForCausalLM

    import ppl_widget

    def no_weights(*args, **kwargs):
        raise AssertionError("load_tokenizer read weights")

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", no_weights)
    gguf = _suite() / "ggml-vocab-llama-spm.gguf"
    tok = ppl_widget.load_tokenizer(str(gguf))
    assert tok("Hello world")["input_ids"] == [1, 15043, 3186]  # add_bos, as llama.cpp
    assert tok.is_fast
    assert tok.convert_ids_to_tokens(tok("Hi \u2603")["input_ids"]) == [  # byte fallback
        "<s>", "▁Hi", "▁", "<0xE2>", "<0x98>", "<0x83>"]


def test_load_tokenizer_takes_every_spec_load_model_takes(tiny_gpt2, tiny_gpt2_dir, tmp_path):
    import ppl_widget
    from ppl_widget.scoring.kinds.model_errors import ModelLoadError, ModelTypeError

    pair = (tiny_gpt2.model, tiny_gpt2.tokenizer)
    assert ppl_widget.load_tokenizer(pair) is tiny_gpt2.tokenizer
    assert ppl_widget.load_tokenizer(tiny_gpt2) is tiny_gpt2.tokenizer
    from_dir = ppl_widget.load_tokenizer(str(tiny_gpt2_dir))
    assert from_dir("a b c")["input_ids"] == tiny_gpt2.tokenizer("a b c")["input_ids"]
    with pytest.raises(ModelTypeError):
        ppl_widget.load_tokenizer(42)
    with pytest.raises(ModelLoadError, match="no GGUF file"):
        ppl_widget.load_tokenizer(str(tmp_path / "missing.gguf"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelLoadError, match="no tokenizer files"):
        ppl_widget.load_tokenizer(str(empty))
