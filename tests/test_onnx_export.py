"""The ONNX export for a live page (scoring/kinds/onnx/: onnx_export.py, onnx_files.py): the
graph gives score()'s statistics for every target of a window (fp32, tiny random models), the
smaller variants carry their measured difference, and the files the page loads are all there."""

from __future__ import annotations

import json
import tempfile

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from ppl_widget import score  # noqa: E402
from ppl_widget.core.windows import plan_windows  # noqa: E402
from ppl_widget.scoring.kinds.onnx import onnx_export  # noqa: E402
from ppl_widget.scoring.kinds.onnx.onnx_check import (  # noqa: E402
    CHECK_TEXT,
    piece_stats,
    session,
    window_stats,
)
from ppl_widget.scoring.kinds.onnx.onnx_files import (  # noqa: E402
    OnnxLiveModel,
    check_browser_tokenizer,
    export_onnx_model,
)


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory):
    """Exports of this module cached in a folder of its own (each variant reuses one
    fp32 export), not in the user's cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("PPL_WIDGET_CACHE", str(tmp_path_factory.mktemp("onnx-cache")))
    yield
    mp.undo()


@pytest.fixture(scope="module")
def llama_fp32(tiny_llama, onnx_cache, tmp_path_factory):
    folder = tmp_path_factory.mktemp("page") / "tiny"
    return folder, export_onnx_model(tiny_llama, folder, "fp32", webgpu=False)


@pytest.mark.parametrize("kind", ["llama", "gpt2"])
def test_graph_gives_scores_statistics(kind, tiny_llama, tiny_gpt2, onnx_cache, tmp_path,
                                       llama_fp32):
    lm = tiny_llama if kind == "llama" else tiny_gpt2
    folder, entry = llama_fp32 if kind == "llama" else (
        tmp_path, export_onnx_model(tiny_gpt2, tmp_path, "fp32", webgpu=False))
    k = entry["settings"]["graph_top_k"]
    max_length = entry["settings"]["max_length"]
    ref = score(CHECK_TEXT, lm, max_length=max_length, stride=max_length // 2, top_k=k)
    sequence = np.concatenate([[lm.tokenizer.bos_token_id], ref.token_ids])
    sess = session(folder / entry["files"]["model"])
    got: dict[str, list] = {}
    windows = plan_windows(len(sequence), max_length, max_length // 2)
    assert len(windows) > 2  # several windows: strided targets are what the page runs
    for w in windows:
        out = window_stats(sess, sequence[w.input_start:w.input_end],
                           sequence[w.target_start:w.target_end])
        for key, value in out.items():
            got.setdefault(key, []).append(value)
    got = {key: np.concatenate(v) for key, v in got.items()}
    np.testing.assert_allclose(got["surprisal"], ref.surprisal, atol=2e-5)
    np.testing.assert_allclose(got["entropy"], ref.entropy, atol=2e-5)
    np.testing.assert_array_equal(got["rank"], ref.rank)
    np.testing.assert_array_equal(got["topk_ids"], ref.topk_ids)
    np.testing.assert_allclose(got["topk_probs"], ref.topk_probs, rtol=2e-5, atol=2e-6)
    assert entry["difference"]["max_abs_nats"] < 1e-4


@pytest.mark.parametrize("kind", ["llama", "gpt2"])
def test_graph_runs_a_window_in_pieces_over_its_cache(kind, tiny_llama, tiny_gpt2, onnx_cache,
                                                      tmp_path, llama_fp32):
    """The key/value cache: a window run in pieces (each over the cache the pieces before
    it gave), and an edit run from its first changed token over the cache of the text
    before it, give score()'s numbers for the text as it is (torch, from scratch)."""
    lm = tiny_llama if kind == "llama" else tiny_gpt2
    folder, entry = llama_fp32 if kind == "llama" else (
        tmp_path, export_onnx_model(tiny_gpt2, tmp_path, "fp32", webgpu=False, measure=False))
    kv = entry["settings"]["kv_cache"]
    assert kv["layers"] == 2 and kv["heads"] == 2  # llama: 2 key/value heads of 4
    sess = session(folder / entry["files"]["model"])
    text, edited = CHECK_TEXT[:50], CHECK_TEXT[:25] + "Z" + CHECK_TEXT[26:50]

    def torch_surprisal(t):
        ref = score(t, lm, max_length=entry["settings"]["max_length"], top_k=0)
        assert len(ref.token_ids) < entry["settings"]["max_length"]  # one window
        return np.concatenate([[lm.tokenizer.bos_token_id], ref.token_ids]), ref.surprisal

    def run(seq, start, past, piece):
        got = []
        for a in range(start, len(seq) - 1, piece):
            b = min(a + piece, len(seq) - 1)
            stats, past = piece_stats(sess, seq[a:b], seq[a + 1:b + 1], past)
            got.append(stats["surprisal"])
        return np.concatenate(got), past

    seq, want = torch_surprisal(text)
    got, past = run(seq, 0, None, 7)
    np.testing.assert_allclose(got, want, atol=2e-5)
    assert past[0].shape == (1, kv["heads"], len(seq) - 1, kv["head_dim"])
    # an edit: keep the cache of the unchanged start, run from the first changed token
    new_seq, new_want = torch_surprisal(edited)
    cut = int(np.flatnonzero(new_seq[:len(seq)] != seq[:len(new_seq)])[0])
    kept = [p[:, :, :cut - 1] for p in past]  # the row before the change predicts it
    tail, _ = run(new_seq, cut - 1, kept, 5)
    np.testing.assert_allclose(np.concatenate([got[:cut - 1], tail]), new_want, atol=2e-5)
    assert cut > 5 and not np.allclose(tail[:3], got[cut - 1:cut + 2])  # the edit mattered


def test_entry_lists_every_file_the_page_loads(llama_fp32):
    folder, entry = llama_fp32
    assert entry["kind"] == "onnx" and entry["settings"]["variant"] == "fp32"
    for role in ("model", "tokenizer", "config", "ort_wasm", "ort_wasm_glue", "ort_wasm_binary"):
        assert (folder / entry["files"][role]).is_file(), role
    assert "ort_webgpu" not in entry["files"]  # webgpu=False ships the WASM build only
    assert json.loads((folder / "config.json").read_text()) == entry
    spec = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    assert spec["pre_tokenizer"]["type"] == "Metaspace"
    assert entry["settings"]["prefix_id"] == 1 and entry["settings"]["eos_id"] == 2


@pytest.mark.parametrize("variant", ["int8", "q4"])
def test_smaller_variants_carry_their_difference(variant, tiny_llama, llama_fp32, tmp_path):
    _, fp32 = llama_fp32
    entry = export_onnx_model(tiny_llama, tmp_path, variant, webgpu=False)
    assert entry["name"].endswith(f"({variant})")
    assert entry["model_bytes"] < fp32["model_bytes"]
    diff = entry["difference"]
    assert diff["tokens"] == fp32["difference"]["tokens"] > 0
    # quantized weights move the scores; the measure sees it
    assert fp32["difference"]["max_abs_nats"] < diff["max_abs_nats"] < 10
    assert 0 < diff["mean_abs_nats"] <= diff["max_abs_nats"]


def test_live_files_is_the_pages_seam(tiny_llama, llama_fp32, tmp_path):
    model = OnnxLiveModel(tiny_llama, "fp32", webgpu=False, measure=False)
    entry = model.live_files(tmp_path, "shown name")
    assert entry["name"] == "shown name" and "difference" not in entry
    assert all((tmp_path / p).is_file() for p in entry["files"].values())
    with pytest.raises(ValueError, match="variant must be one of"):
        OnnxLiveModel(tiny_llama, "fp16")


def test_an_export_not_cached_leaves_no_folder_behind(tiny_llama, tmp_path, monkeypatch):
    """``cache=False``: the graph is made in a temporary folder, linked or copied into the
    page, and that folder removed (before, every such export left one in /tmp). The export
    itself is stood in for: this is about the folder, not the graph."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setattr(onnx_export, "export_fp32",
                        lambda lm, path, **_: path.write_bytes(b"graph"))
    page = tmp_path / "page"
    entry = export_onnx_model(tiny_llama, page, "fp32", webgpu=False, measure=False,
                              cache=False)
    assert (page / entry["files"]["model"]).read_bytes() == b"graph"
    assert list(scratch.iterdir()) == []


def test_tokenizers_the_page_cannot_run_are_refused():
    base = {"normalizer": None, "pre_tokenizer": {"type": "ByteLevel"},
            "model": {"type": "BPE"}}
    check_browser_tokenizer(base)
    with pytest.raises(ValueError, match="normalizer 'NFKC'"):
        check_browser_tokenizer({**base, "normalizer": {"type": "NFKC"}})
    with pytest.raises(ValueError, match="model 'WordPiece'"):
        check_browser_tokenizer({**base, "model": {"type": "WordPiece"}})
    with pytest.raises(ValueError, match="pre-tokenizer 'Whitespace'"):
        check_browser_tokenizer({**base, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Whitespace"}, {"type": "ByteLevel"}]}})


@pytest.mark.default_model
def test_default_model_fp32_within_a_thousandth_of_a_nat(default_lm, tmp_path):
    """The embedded model's fp32 graph (exported once, then from ~/.cache/ppl_widget/onnx:
    a few minutes the first time) against score(), per token."""
    entry = export_onnx_model(default_lm, tmp_path, "fp32", webgpu=False)
    diff = entry["difference"]
    assert diff["tokens"] > 150
    assert diff["mean_abs_nats"] <= diff["max_abs_nats"] < 1e-3
