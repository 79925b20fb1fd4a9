"""The converted-model cache (issue 23): keyed by the GGUF file's content, listed and
emptied by ``ppl-widget cache``; no model is loaded here (a fake conversion stands in)."""

from __future__ import annotations

import hashlib
import os

import pytest

from ppl_widget.cli import main
from ppl_widget.scoring.kinds import model_cache


@pytest.fixture
def root(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("PPL_WIDGET_CACHE", str(path))
    return path


def test_the_cache_root_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PPL_WIDGET_CACHE", str(tmp_path / "a"))
    assert model_cache.cache_root() == tmp_path / "a"
    monkeypatch.delenv("PPL_WIDGET_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert model_cache.cache_root() == tmp_path / "xdg" / "ppl_widget"


def test_the_key_is_the_files_content_hashed_once(root, tmp_path):
    data = os.urandom(3 * (1 << 20) + 17)  # crosses the 1 MiB read chunks
    first = tmp_path / "env1" / "m.gguf"
    second = tmp_path / "env2" / "site-packages" / "m.gguf"
    for path in (first, second):
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
    expected = hashlib.sha256(data).hexdigest()
    assert model_cache.file_sha256(first) == expected
    # two installs of the same file share one converted copy
    assert model_cache.converted_dir(first) == model_cache.converted_dir(second)
    assert model_cache.converted_dir(first).parent == root / "converted"
    # memoised per (path, size, mtime): a changed memo is believed while the stamp holds...
    memo = model_cache._read_json(root / model_cache.DIGESTS_FILE)
    memo[str(first.resolve())]["sha256"] = "0" * 64
    model_cache._write_json(root / model_cache.DIGESTS_FILE, memo)
    assert model_cache.file_sha256(first) == "0" * 64
    # ...and the file is read again once it changes
    other = data[:-1] + bytes([data[-1] ^ 1])
    first.write_bytes(other)
    os.utime(first, ns=(1, 2))
    assert model_cache.file_sha256(first) == hashlib.sha256(other).hexdigest()
    assert model_cache.converted_dir(first) != model_cache.converted_dir(second)


def _fake_entry(root, gguf, files):
    folder = model_cache.converted_dir(gguf)
    folder.mkdir(parents=True)
    for name, size in files.items():
        (folder / name).write_bytes(b"x" * size)
    model_cache.write_source(folder, gguf)
    return folder


def test_cache_lists_and_clears_what_it_holds(root, tmp_path, capsys):
    assert main(["cache"]) == 0
    assert capsys.readouterr().out == f"nothing cached in {root}\n"
    gguf = tmp_path / "Tiny.Q4.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 100)
    folder = _fake_entry(root, gguf, {"model.safetensors": 2_500_000, "config.json": 500_000})
    size = sum(p.stat().st_size for p in folder.iterdir())
    old = root / "models" / "Old.Q4-0123456789abcdef"  # what earlier versions wrote
    old.mkdir(parents=True)
    (old / "model.safetensors").write_bytes(b"y" * 1_000_000)
    unrelated = root / "notes.txt"
    unrelated.write_text("mine")

    entries = model_cache.cache_entries()
    assert [(e.model, e.source, e.size_bytes, e.path) for e in entries] == [
        ("Tiny.Q4", str(gguf), size, folder),
        ("Old.Q4", "old path-keyed copy, no longer used", 1_000_000, old)]
    assert main(["cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"Tiny.Q4  {gguf}  {size / 1e6:,.1f} MB  {folder}"
    assert lines[1].startswith("Old.Q4  old path-keyed copy") and lines[1].endswith(str(old))
    assert lines[2] == f"total {(size + 1_000_000) / 1e6:,.1f} MB in 2 entries in {root}"

    assert main(["cache", "--clear"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("removed Tiny.Q4") and out[1].startswith("removed Old.Q4")
    assert out[2] == f"removed 2 entries, {(size + 1_000_000) / 1e6:,.1f} MB in all, from {root}"
    assert not folder.exists() and not old.exists()
    assert not (root / model_cache.DIGESTS_FILE).exists()
    assert unrelated.read_text() == "mine"  # only what the cache wrote goes
    assert model_cache.cache_entries() == []


def test_cache_command_imports_no_torch():
    import subprocess
    import sys

    code = ("import sys; from ppl_widget.cli import main; main(['cache']);"
            "sys.exit(1 if 'torch' in sys.modules else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PPL_WIDGET_CACHE": "/nonexistent/ppl"})
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_cache_lists_and_clears_the_onnx_exports_too(root, capsys):
    """One cache folder: the live page's ONNX exports are entries beside the converted
    models, listed with their variants and removed by --clear."""
    from ppl_widget.scoring.kinds.onnx import onnx_export

    export = root / model_cache.ONNX_DIR / "0123abcd-g1-k10-L1024"
    export.mkdir(parents=True)
    (export / "model.fp32.onnx").write_bytes(b"x" * 3_000_000)
    (export / f"model.int8-{onnx_export.RECIPES['int8']}.onnx").write_bytes(b"x" * 1_000_000)
    (export / "source.json").write_text('{"model": "SmolLM2-135M-Instruct"}')
    size = sum(p.stat().st_size for p in export.iterdir())

    entry, = model_cache.cache_entries()
    assert (entry.model, entry.path, entry.size_bytes) == ("SmolLM2-135M-Instruct", export, size)
    assert entry.source == "ONNX export for a live page (fp32, int8)"
    assert main(["cache"]) == 0
    assert "ONNX export for a live page (fp32, int8)" in capsys.readouterr().out
    assert main(["cache", "--clear"]) == 0
    assert capsys.readouterr().out.startswith("removed SmolLM2-135M-Instruct  ONNX export")
    assert not (root / model_cache.ONNX_DIR).exists()


def test_the_onnx_exports_live_in_the_one_cache_folder(root, monkeypatch):
    """onnx_export writes where ``ppl-widget cache`` looks (no second cache folder)."""
    from ppl_widget.scoring.kinds.onnx import onnx_export

    monkeypatch.setattr(onnx_export, "weights_digest", lambda lm: "f" * 64)
    monkeypatch.setattr(onnx_export, "export_fp32",
                        lambda lm, path, **kw: path.write_bytes(b"onnx"))
    lm = type("LM", (), {"name": "Tiny"})()
    path = onnx_export.model_file(lm, "fp32", top_k=5, max_length=64)
    assert path.parent.parent == root / model_cache.ONNX_DIR
    assert [e.source for e in model_cache.cache_entries()] == [
        "ONNX export for a live page (fp32)"]


def test_cache_lists_and_clears_the_downloaded_data_too(root, capsys):
    """Reading-time data downloaded into the cache (no local copy) is listed, a line per
    file, and removed by --clear; a local copy elsewhere is never touched."""
    from ppl_widget.scoring.datasets import fetch

    data = root / fetch.CACHE_DIR / "xlang" / "en.csv"
    data.parent.mkdir(parents=True)
    data.write_bytes(b"x" * 2_000_000)
    assert [(e.model, e.source, e.size_bytes, e.path) for e in fetch.cached_data()] == [
        ("data", "xlang/en.csv", 2_000_000, data)]
    assert main(["cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"data  xlang/en.csv  2.0 MB  {data}", f"total 2.0 MB in 1 entry in {root}"]
    assert main(["cache", "--clear"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"removed data  xlang/en.csv  2.0 MB  {data}"
    assert not (root / fetch.CACHE_DIR).exists() and fetch.cached_data() == []


def test_the_onnx_key_is_the_model_not_where_it_was_read_from(tiny_llama):
    """A GGUF's first load names the file's folder, every later load the converted copy:
    one model, one export (two keys made a second 2-minute export after a conversion)."""
    import torch

    from ppl_widget.scoring.kinds.onnx.onnx_export import weights_digest

    lm = type("LM", (), {"model": tiny_llama.model})()
    config = tiny_llama.model.config
    before, path = weights_digest(lm), config._name_or_path
    try:
        config._name_or_path = "/somewhere/else/converted"
        assert weights_digest(lm) == before
        weight = next(iter(tiny_llama.model.parameters()))
        kept = weight.detach().clone()
        with torch.no_grad():  # ...but any weight is the model
            weight.view(-1)[0] += 1e-3
        assert weights_digest(lm) != before
    finally:
        config._name_or_path = path
        with torch.no_grad():  # the session's model exactly as it was
            weight.copy_(kept)
