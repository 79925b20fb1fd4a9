"""The first load says what it does (issue 23): one progress line while a GGUF is
prepared for the first time, nothing on later loads.  A fake conversion (the tiny GPT-2
standing in for the dequantized model) keeps these fast; test_wheel.py does it
once for real."""

from __future__ import annotations

import inspect
import io
import time
from pathlib import Path

import pytest

from ppl_widget.cli.load_bar import LoadBar
from ppl_widget.scoring.kinds.load_progress import FIRST_LOAD_NOTE, StepProgress


def test_step_progress_rises_to_one_only_at_a_clean_end():
    seen: list[tuple[str, float]] = []
    with StepProgress(lambda n, f: seen.append((n, f)), (0.05, 0.05), interval_s=0.01) as steps:
        time.sleep(0.1)
        assert 0 < steps.fraction() < 0.5  # inside the first step, never past its end
        steps.next_step()
        time.sleep(0.05)
    fractions = [f for _, f in seen]
    assert fractions[0] == 0.0 and fractions[-1] == 1.0
    assert fractions == sorted(set(fractions))  # rising, each whole percent once
    assert fractions.count(1.0) == 1 and {n for n, _ in seen} == {FIRST_LOAD_NOTE}

    failed: list[float] = []
    with pytest.raises(KeyError), StepProgress(lambda n, f: failed.append(f), (1.0,)):
        raise KeyError("x")
    assert 1.0 not in failed


def test_a_failing_display_does_not_stop_the_load():
    def broken(note, fraction):
        raise RuntimeError("widget closed")

    with StepProgress(broken, (0.01,), interval_s=0.005):
        time.sleep(0.03)


def test_the_cli_bar_is_one_line():
    err = io.StringIO()
    bar = LoadBar(err, width=10)
    for f in (0.0, 0.5, 1.0):
        bar(FIRST_LOAD_NOTE, f)
    bar.close()
    text = err.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")
    assert text.split("\r")[-1] == f"{FIRST_LOAD_NOTE} [##########] 100%\n"
    assert f"{FIRST_LOAD_NOTE} [#####.....]  50%" in text
    cut = io.StringIO()
    bar = LoadBar(cut)
    bar(FIRST_LOAD_NOTE, 0.3)
    bar.close()  # a failed preparation: the error that follows starts on its own line
    assert cut.getvalue().endswith("%\n")


@pytest.fixture
def fake_gguf(tmp_path, monkeypatch, tiny_gpt2):
    """A GGUF file whose 'conversion' yields the tiny GPT-2 (the cache read is real)."""
    pytest.importorskip("torch")
    import copy

    from transformers import AutoModelForCausalLM

    from ppl_widget.scoring.kinds.gguf import gguf_tokenizer

    monkeypatch.setenv("PPL_WIDGET_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "Tiny.gguf"
    gguf.write_bytes(b"GGUF\x03\x00\x00\x00 stand-in")
    conversions = []
    real_model = AutoModelForCausalLM.from_pretrained

    def model_from(path, *args, **kwargs):
        if "gguf_file" in kwargs:
            conversions.append(path)
            return copy.deepcopy(tiny_gpt2.model)
        return real_model(path, *args, **kwargs)

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", model_from)
    # the tokenizer is built from the GGUF's metadata (gguf_tokenizer), not by transformers
    monkeypatch.setattr(gguf_tokenizer, "tokenizer_from_gguf", lambda path: tiny_gpt2.tokenizer)
    return gguf, conversions


def test_the_first_load_reports_and_later_loads_do_not(fake_gguf, tmp_path, capfd):
    import torch

    from ppl_widget import load_model
    from ppl_widget.scoring.kinds import model_cache

    gguf, conversions = fake_gguf
    seen: list[tuple[str, float]] = []
    capfd.readouterr()
    first = load_model(str(gguf), device="cpu", progress=lambda n, f: seen.append((n, f)))
    assert conversions == [gguf.parent]
    assert seen[0] == (FIRST_LOAD_NOTE, 0.0) and seen[-1] == (FIRST_LOAD_NOTE, 1.0)
    entry, = model_cache.cache_entries()
    assert entry.model == "Tiny" and entry.source == str(gguf)
    assert entry.path == model_cache.converted_dir(gguf)

    later: list[tuple[str, float]] = []
    again = load_model(str(gguf), device="cpu", progress=lambda n, f: later.append((n, f)))
    assert later == [] and conversions == [gguf.parent]  # read from the cache
    out, err = capfd.readouterr()
    assert out == "" and err == "", err  # neither load printed anything of its own
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        torch.testing.assert_close(first.model(ids).logits, again.model(ids).logits)

    # another environment's copy of the same file: the same converted copy, no conversion
    moved = tmp_path / "env2" / "Tiny.gguf"
    moved.parent.mkdir()
    moved.write_bytes(gguf.read_bytes())
    load_model(str(moved), device="cpu", progress=lambda n, f: later.append((n, f)))
    assert later == [] and conversions == [gguf.parent]


def test_a_copy_converted_with_the_old_tokenizer_is_not_read(fake_gguf, tmp_path):
    """Copies made before the GGUF tokenizer followed llama.cpp were keyed by the file's
    hash alone: such a folder is listed as unused and the model is converted again."""
    from ppl_widget import load_model
    from ppl_widget.scoring.kinds import model_cache

    gguf, conversions = fake_gguf
    old = tmp_path / "cache" / "converted" / model_cache.file_sha256(gguf)[:32]
    old.mkdir(parents=True)
    (old / "config.json").write_text("{not json: reading this copy would fail")
    model_cache.write_source(old, gguf)
    assert model_cache.converted_dir(gguf) != old
    load_model(str(gguf), device="cpu")
    assert conversions == [gguf.parent]  # converted afresh, the old copy untouched
    assert (old / "config.json").read_text().startswith("{not json")
    entries = {e.path: e.source for e in model_cache.cache_entries()}
    assert entries[old].endswith("no longer used")
    assert entries[model_cache.converted_dir(gguf)] == str(gguf)


def test_the_tokenizers_warning_reaches_the_user_at_every_load(fake_gguf, tiny_gpt2,
                                                               monkeypatch):
    """The conversion is quieted (no third-party warnings), but an unknown pre-tokenizer's
    warning is the user's: shown at the first load, and again by each load of the copy."""
    import warnings

    from ppl_widget import load_model
    from ppl_widget.scoring.kinds.gguf import gguf_tokenizer

    def warns(path):
        warnings.warn("pre-tokenizer 'odd' ... tokens may differ from llama.cpp's",
                      gguf_tokenizer.GGUFTokenizerWarning, stacklevel=2)
        return tiny_gpt2.tokenizer

    monkeypatch.setattr(gguf_tokenizer, "tokenizer_from_gguf", warns)
    gguf, conversions = fake_gguf
    for _ in range(2):
        with pytest.warns(gguf_tokenizer.GGUFTokenizerWarning, match="'odd'"):
            load_model(str(gguf), device="cpu")
    assert conversions == [gguf.parent]  # the second load read the cache


def test_the_widget_shows_the_first_load(monkeypatch, sent, tiny_gpt2):
    pytest.importorskip("anywidget")
    from ppl_widget.views import protocol as P
    from ppl_widget.views import widget as widget_module

    statuses = []

    def preparing(spec, progress=None):
        for f in (0.0, 0.4, 1.0):
            statuses.append(w.status)
            progress(FIRST_LOAD_NOTE, f)
        return tiny_gpt2

    monkeypatch.setattr(widget_module, "as_loaded", preparing)
    w = widget_module.PerplexityWidget("The cat sat.", "some/model", autostart=False)
    w.start()
    w.wait()
    assert statuses == ["loading"] * 3 and w.status == "done"
    types = [c["type"] for c, _ in sent]
    loading = [c for c, _ in sent if c["type"] == P.MSG_LOADING]
    assert types[:3] == [P.MSG_LOADING] * 3 and types[3] == P.MSG_RESET
    assert [(c["message"], c["fraction"]) for c in loading] == [
        (FIRST_LOAD_NOTE, 0.0), (FIRST_LOAD_NOTE, 0.4), (FIRST_LOAD_NOTE, 1.0)]
    assert {c["run_id"] for c, _ in sent} == {sent[-1][0]["run_id"]}


def test_a_plain_load_model_draws_one_line_on_stderr_and_then_nothing(fake_gguf, capfd):
    """No progress= (a script, score() on the default model): the first load still says what
    it does, on stderr outside a notebook; a load from the cache prints nothing."""
    from ppl_widget import load_model

    gguf, conversions = fake_gguf
    capfd.readouterr()
    load_model(str(gguf), device="cpu")
    out, err = capfd.readouterr()
    assert conversions == [gguf.parent] and out == ""
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.split("\r")[-1] == f"{FIRST_LOAD_NOTE} [{'#' * 30}] 100%\n"
    load_model(str(gguf), device="cpu")
    assert capfd.readouterr() == ("", "") and conversions == [gguf.parent]


def test_in_a_notebook_the_line_is_one_output_updated_in_place(tmp_path):
    """In a kernel the line is a display updated in place: the saved notebook holds one
    output, at 100%, and nothing on stderr."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    cell = ("from ppl_widget.scoring.kinds.load_progress import FIRST_LOAD_NOTE, FirstLoadLine\n"
            "line = FirstLoadLine()\n"
            "for fraction in (0.0, 0.25, 0.5, 1.0):\n"
            "    line(FIRST_LOAD_NOTE, fraction)\n"
            "line.close()\n")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = nb.cells[0].outputs
    assert [o.output_type for o in outputs] == ["display_data"], outputs
    assert outputs[0].data == {"text/plain": f"{FIRST_LOAD_NOTE} [{'#' * 30}] 100%"}


def test_a_load_that_waits_for_another_process_converting_reads_its_copy(fake_gguf, tiny_gpt2,
                                                                         monkeypatch):
    """Two kernels (or two test workers) loading one GGUF for the first time: the second
    waits on the cache entry's lock while the first converts, then reads the copy the first
    wrote instead of converting again."""
    import threading

    from ppl_widget.scoring.kinds import model_cache
    from ppl_widget.scoring.kinds.gguf import gguf

    path, conversions = fake_gguf
    cached = model_cache.converted_dir(path)
    checked = threading.Event()
    real_check = gguf._load_converted

    def check(folder):
        found = real_check(folder)
        checked.set()
        return found

    monkeypatch.setattr(gguf, "_load_converted", check)
    loaded = []
    with model_cache.entry_lock(cached):  # "another process" is converting
        waiter = threading.Thread(target=lambda: loaded.append(gguf.load_gguf(path)))
        waiter.start()
        assert checked.wait(120)  # the waiter found no copy and goes for the lock
        tiny_gpt2.model.save_pretrained(cached)  # what the other process leaves
        tiny_gpt2.tokenizer.save_pretrained(cached)
        model_cache.write_source(cached, path)
    waiter.join(120)
    assert conversions == [] and len(loaded) == 1  # read, not converted again
    assert loaded[0][0].config.n_embd == tiny_gpt2.model.config.n_embd


def test_a_conversion_reads_the_gguf_file_once(fake_gguf, tiny_gpt2, monkeypatch):
    """transformers opens a GGUFReader for the config and another for the weights, each
    parsing the whole vocabulary (~5 s of CPU): within a conversion both get one reader,
    and gguf's own class is back afterwards."""
    gguf_py = pytest.importorskip("gguf")
    from transformers import AutoModelForCausalLM, modeling_gguf_pytorch_utils

    from ppl_widget import load_model

    # transformers looks the class up in gguf at each call, where the conversion's reader is
    assert "from gguf import GGUFReader" in inspect.getsource(
        modeling_gguf_pytorch_utils.load_gguf_checkpoint)
    opened: list[str] = []

    class CountingReader:
        def __init__(self, path, mode="r"):
            opened.append(str(path))

    monkeypatch.setattr(gguf_py, "GGUFReader", CountingReader)
    gguf, conversions = fake_gguf
    convert = AutoModelForCausalLM.from_pretrained

    def reading_twice(path, *args, **kwargs):
        if "gguf_file" in kwargs:  # as transformers: the config's reader, the weights'
            from gguf import GGUFReader

            file = Path(path) / kwargs["gguf_file"]
            assert GGUFReader(file) is GGUFReader(str(file))
        return convert(path, *args, **kwargs)

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", reading_twice)
    load_model(str(gguf), device="cpu")
    assert conversions == [gguf.parent] and opened == [str(gguf)]
    assert gguf_py.GGUFReader is CountingReader


def test_the_conversions_reader_reads_what_gguf_reads(tmp_path):
    """The conversion's reader slices a plain view of the file's map (``np.memmap``'s
    slices run Python each: about half of parsing a vocabulary): every field's parts, data
    indices and types, and every tensor, the same as gguf's own reader gives."""
    gguf_py = pytest.importorskip("gguf")
    import numpy as np

    from ppl_widget.scoring.kinds.gguf.gguf import _plain_reader

    path = tmp_path / "small.gguf"
    writer = gguf_py.GGUFWriter(str(path), "llama")
    writer.add_uint32("llama.vocab_size", 5)
    writer.add_float32("llama.rope.freq_base", 1e4)
    writer.add_string("general.name", "Ünïcode name")
    writer.add_array("tokenizer.ggml.tokens", ["<s>", "a", "Ġb", "é", ""])
    writer.add_array("tokenizer.ggml.token_type", [3, 1, 1, 1, 1])
    writer.add_array("tokenizer.ggml.merges", ["Ġ b", "a b"])
    writer.add_tensor("token_embd.weight", np.arange(20, dtype=np.float32).reshape(5, 4))
    writer.add_tensor("output_norm.weight", np.linspace(-1, 1, 4, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    real = gguf_py.GGUFReader(path)
    plain = _plain_reader(gguf_py.GGUFReader)(path)
    assert type(plain.data) is np.ndarray and isinstance(real.data, np.memmap)
    assert list(plain.fields) == list(real.fields)
    for name, field in real.fields.items():
        mine = plain.fields[name]
        assert (mine.data, mine.types) == (field.data, field.types), name
        assert [p.tobytes() for p in mine.parts] == [p.tobytes() for p in field.parts], name
        assert [p.dtype for p in mine.parts] == [p.dtype for p in field.parts], name
    assert [(t.name, t.tensor_type, list(t.shape)) for t in plain.tensors] == \
        [(t.name, t.tensor_type, list(t.shape)) for t in real.tensors]
    for mine, theirs in zip(plain.tensors, real.tensors, strict=True):
        assert np.array_equal(mine.data, theirs.data)
