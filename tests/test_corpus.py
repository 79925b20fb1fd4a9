"""Corpus scoring: every document equals score(), the Parquet file opens again,
corpus totals are sums, inputs of every kind, and a killed run resumes.  "Equals": the
same tokens and layout, and both results' numbers within the float32 tolerance of a float64
copy of the model (tests/float64.py): the corpus batches windows of several documents
(padded), score() one text's, so their float32 rounding may differ."""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
from collections import deque

import numpy as np
import pytest
from conftest import CORPUS, LONG_TEXT
from float64 import TINY_NATS, assert_scores_within, assert_within, float64_scores

pytest.importorskip("torch")
pytest.importorskip("pyarrow")

from ppl_widget import load_model, open_corpus, score, score_corpus  # noqa: E402
from ppl_widget.scoring.runner.scorer import stream_any_text  # noqa: E402

#: long (several windows), empty, tiny, whitespace-only, and short documents
DOCS = {"long": LONG_TEXT, "empty": "", "one": "Hi", "space": "  \n", **{
    f"s{i}": t for i, t in enumerate(CORPUS[:6])}, "mid": LONG_TEXT[:180] + " 😀 é"}

EXACT = ("token_ids", "offsets", "units", "is_eos", "context_length", "rank", "topk_ids")


def assert_same(got, ref, lm):
    """The same tokens, layout and settings; each result's surprisal, entropy, top-k
    probabilities and b within the float32 tolerance of ``lm``'s float64 copy."""
    assert got.text == ref.text
    assert len(got) == len(ref)
    for name in EXACT:
        np.testing.assert_array_equal(getattr(got, name), getattr(ref, name), err_msg=name)
    for res in (got, ref):  # against float64, not against each other
        assert_scores_within(res, lm, TINY_NATS)
    np.testing.assert_array_equal(np.isnan(got.bow_prob), np.isnan(ref.bow_prob))
    np.testing.assert_array_equal(got.unscored_token_ids, ref.unscored_token_ids)
    np.testing.assert_array_equal(got.unscored_offsets, ref.unscored_offsets)
    assert got.vocab == ref.vocab
    assert math.isnan(got.bow_prob_end) == math.isnan(ref.bow_prob_end)
    for k in ("max_length", "stride", "prefix", "add_eos", "top_k", "n_windows", "model"):
        assert got.settings[k] == ref.settings[k], k


def score_kept(text, lm, **opts):
    """score(), but an empty or blank document gives its result (a corpus keeps every
    document; score() alone refuses a text that is empty or only whitespace)."""
    if text.strip() or opts.get("add_eos"):
        return score(text, lm, **opts)
    return deque(stream_any_text(text, lm, **opts), maxlen=1)[0].result


@pytest.mark.parametrize("opts", [dict(max_length=32, stride=16, prefix="bos", add_eos=False),
                                  dict(max_length=24, stride=24, prefix=None, add_eos=True)])
def test_every_document_equals_score(tiny_lm, tmp_path, opts):
    out = tmp_path / "c.parquet"
    corpus = score_corpus(DOCS, out, tiny_lm, top_k=3, batch_size=3, flush_docs=4,
                          progress=False, **opts)
    assert list(corpus) == list(DOCS) and len(corpus) == len(DOCS)
    assert not os.path.exists(f"{out}.parts")  # consolidated and cleaned up
    for doc_id, text in DOCS.items():
        assert_same(corpus[doc_id], score_kept(text, tiny_lm, top_k=3, **opts), tiny_lm)
    # batch size and flush size change nothing but the float noise of padding
    again = score_corpus(DOCS, tmp_path / "d.parquet", tiny_lm, top_k=3, batch_size=1,
                         flush_docs=100, progress=False, **opts)
    for doc_id in DOCS:
        assert_same(again[doc_id], corpus[doc_id], tiny_lm)


def test_corpus_metrics_are_totals_not_means(tiny_gpt2, tmp_path):
    corpus = score_corpus(DOCS, tmp_path / "c.parquet", tiny_gpt2, max_length=32, stride=16,
                          progress=False)
    results = {k: score_kept(t, tiny_gpt2, max_length=32, stride=16) for k, t in DOCS.items()}
    nll = sum(r.metrics()["total_nll"] for r in results.values())
    words = sum(r.metrics()["n_words"] for r in results.values())
    nbytes = sum(r.metrics()["n_bytes"] for r in results.values())
    m = corpus.metrics()
    assert m["n_documents"] == len(DOCS)
    # the corpus batches windows of several documents (padded), score() one text's: each
    # total within its tokens' float32 tolerance of the float64 copy's, not of each other
    want = {k: float64_scores(tiny_gpt2, corpus[k])["surprisal"].sum() for k in DOCS}
    total, n = sum(want.values()), m["n_tokens"]
    assert_within([m["total_nll"], nll], total, TINY_NATS, n)
    assert m["n_words"] == words and m["n_bytes"] == nbytes
    assert_within(math.log(m["word_ppl"]) * words, total, TINY_NATS, n)
    assert_within(m["bits_per_byte"] * nbytes * math.log(2), total, TINY_NATS, n)
    per_doc = [r.metrics()["word_ppl"] for r in results.values() if r.metrics()["n_words"]]
    assert m["word_ppl"] != pytest.approx(np.mean(per_doc), rel=1e-3)  # not a mean of ppls
    table = corpus.table()
    assert list(table.index) == list(DOCS)
    assert_within([table.loc["long", "total_nll"], results["long"].metrics()["total_nll"]],
                  want["long"], TINY_NATS, len(results["long"]))
    assert table["n_tokens"].sum() == m["n_tokens"]
    ci = corpus.metrics(ci=0.9, n_boot=200)
    lo, hi = ci["word_ppl_ci"]
    assert lo < m["word_ppl"] < hi and ci["ci_blocks"] == len(DOCS)


def test_inputs_folder_jsonl_dataset(tiny_llama, tmp_path):
    folder = tmp_path / "texts"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text(CORPUS[0], encoding="utf-8")
    (folder / "sub" / "b.txt").write_bytes(b"\xef\xbb\xbf" + CORPUS[1].encode())  # BOM dropped
    (folder / ".hidden").write_text("skipped")
    c = score_corpus(folder, tmp_path / "f.parquet", tiny_llama, max_length=32, progress=False)
    assert list(c) == ["a.txt", "sub/b.txt"]
    assert c["sub/b.txt"].text == CORPUS[1]

    jl = tmp_path / "d.jsonl"
    jl.write_text("\n".join(json.dumps({"doc": f"x{i}", "body": t})
                            for i, t in enumerate(CORPUS[:3])) + "\n", encoding="utf-8")
    c = score_corpus(jl, tmp_path / "j.parquet", tiny_llama, max_length=32, text_field="body",
                     id_field="doc", progress=False)
    assert list(c) == ["x0", "x1", "x2"] and c["x2"].text == CORPUS[2]
    c = score_corpus(jl, tmp_path / "k.parquet", tiny_llama, max_length=32, text_field="body",
                     progress=False)  # no "id" in the records: numbered from 0
    assert list(c) == ["0", "1", "2"]
    with pytest.raises(ValueError, match="text field 'text' must be a string"):
        score_corpus(jl, tmp_path / "e.parquet", tiny_llama, progress=False)
    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"id": 1, "text": "a"}\n{"id": 1, "text": "b"}\n')
    with pytest.raises(ValueError, match="ids must be unique"):
        score_corpus(dup, tmp_path / "e.parquet", tiny_llama, progress=False)

    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"id": ["p", "q"], "text": CORPUS[3:5]})
    ds.save_to_disk(str(tmp_path / "ds"))
    c = score_corpus(tmp_path / "ds", tmp_path / "s.parquet", tiny_llama, max_length=32,
                     progress=False)
    assert list(c) == ["p", "q"]
    assert_same(c["q"], score(CORPUS[4], tiny_llama, max_length=32), tiny_llama)
    page = c.to_html("q", tmp_path / "q.html")  # a document as the widget shows it
    assert (tmp_path / "q.html").read_text(encoding="utf-8") == page


def test_open_corpus_rejects_other_files(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1]}), tmp_path / "x.parquet")
    with pytest.raises(ValueError, match="not a ppl-widget corpus"):
        open_corpus(tmp_path / "x.parquet")
    with pytest.raises(FileNotFoundError):
        open_corpus(tmp_path / "none.parquet")


# ---- the command line, killed and resumed -------------------------------------
def cli_env(**extra):
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1", **extra)
    env.pop("WORLD_SIZE", None)
    return env


def run_cli(args, **env):
    return subprocess.run([sys.executable, "-m", "ppl_widget", "score-corpus", *args],
                          capture_output=True, text=True, env=cli_env(**env), timeout=300)


def write_jsonl(path, docs):
    path.write_text("".join(json.dumps({"id": k, "text": t}) + "\n" for k, t in docs.items()),
                    encoding="utf-8")


def test_killed_run_resumes_without_rescoring(tiny_gpt2_dir, tmp_path, capsys):
    """The kill is a real SIGKILL of a CLI process; the resume is the same CLI command in
    this process (a second interpreter's start was most of the test's time)."""
    from ppl_widget.cli import main as cli_main

    src = tmp_path / "docs.jsonl"
    write_jsonl(src, DOCS)
    out = tmp_path / "out.parquet"
    args = [str(src), "--out", str(out), "--model", tiny_gpt2_dir, "--max-length", "32",
            "--stride", "16", "--batch-size", "2", "--flush-docs", "3"]
    killed = run_cli(args, PPL_WIDGET_CORPUS_KILL_AFTER_PARTS="2")
    assert killed.returncode == -9, killed.stderr  # SIGKILL: nothing cleaned up
    assert not out.exists()
    parts = sorted(p.name for p in (tmp_path / "out.parquet.parts").iterdir())
    assert parts == ["manifest.json", "part-0000000000-r0.parquet",
                     "part-0000000003-r0.parquet"]
    # a half-written part left by a kill mid-write is ignored and removed
    (tmp_path / "out.parquet.parts" / "part-0000000006-r0.parquet.tmp-1").write_bytes(b"PAR1x")
    assert cli_main(["score-corpus", *args]) == 0
    resumed = capsys.readouterr()
    assert f"resuming: 6 of {len(DOCS)} documents already scored" in resumed.err
    assert "documents" in resumed.err and "tok/s" in resumed.err
    assert "word" in resumed.out.lower()
    lm = load_model(tiny_gpt2_dir, device="cpu", dtype="float32")
    opts = dict(max_length=32, stride=16, batch_size=2, progress=False)
    b = score_corpus(src, tmp_path / "whole.parquet", lm, flush_docs=100, **opts)
    a = open_corpus(out)
    assert list(a) == list(b) == list(DOCS)
    total = 0.0
    for doc_id in DOCS:
        assert_same(a[doc_id], b[doc_id], lm)
        total += float64_scores(lm, a[doc_id])["surprisal"].sum()
    assert_within([a.metrics()["total_nll"], b.metrics()["total_nll"]], total, TINY_NATS,
                  a.metrics()["n_tokens"])
    # finished: running again scores nothing; other settings are refused, naming them
    err = io.StringIO()
    again = score_corpus(src, out, lm, **{**opts, "progress": err})
    assert err.getvalue() == "" and again.metrics() == a.metrics()
    with pytest.raises(ValueError, match="stride: 16 then, 8 now"):
        score_corpus(src, out, lm, **{**opts, "stride": 8})
