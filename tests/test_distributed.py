"""Two processes under torchrun (gloo on CPU) give the single-process corpus result: the
same tokens and layout, and each run's numbers within the float32 tolerance of a float64
copy of the model (tests/float64.py; the two runs batch other windows together)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import CORPUS, LONG_TEXT
from float64 import TINY_NATS, assert_scores_within, assert_within

pytest.importorskip("torch")
pytest.importorskip("pyarrow")

from ppl_widget import load_model, open_corpus, score_corpus  # noqa: E402
from ppl_widget.scoring.corpus.distributed import Ranks, device_for_rank, init  # noqa: E402

DOCS = {"long": LONG_TEXT, "empty": "", **{f"s{i}": t for i, t in enumerate(CORPUS[:5])}}


def test_ranks_shard_round_robin():
    shards = [list(Ranks(r, 3).shard(8)) for r in range(3)]
    assert shards == [[0, 3, 6], [1, 4, 7], [2, 5]]
    assert sorted(sum(shards, [])) == list(range(8))


def test_single_process_needs_no_process_group(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert init("cpu") == (Ranks(), "cpu")
    assert device_for_rank("cpu", 1, 2) == "cpu"
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="WORLD_SIZE must be an integer"):
        init("cpu")


def test_torchrun_two_ranks_equal_one_process(tiny_gpt2, tmp_path):
    model = tmp_path / "model"
    tiny_gpt2.model.save_pretrained(model)
    tiny_gpt2.tokenizer.save_pretrained(model)
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps({"id": k, "text": t}) + "\n" for k, t in DOCS.items()),
                   encoding="utf-8")
    out = tmp_path / "two.parquet"
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         "-m", "ppl_widget", "score-corpus", str(src), "--out", str(out), "--model",
         str(model), "--device", "cpu", "--max-length", "32", "--stride", "16",
         "--flush-docs", "2"],
        capture_output=True, text=True, env=env, timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rank 0 of 2" in proc.stderr
    assert proc.stdout.count("documents ->") == 1  # the summary once, from rank 0
    lm = load_model(str(model), device="cpu", dtype="float32")
    one = score_corpus(src, tmp_path / "one.parquet", lm, max_length=32, stride=16,
                       flush_docs=2, progress=False)
    two = open_corpus(out)
    assert list(two) == list(one) == list(DOCS)
    # the closing report: one line per rank, their tokens adding up to the corpus's
    import re

    lines = re.findall(r"rank (\d): scored ([\d,]+) documents, ([\d,]+) tokens in .*"
                       r"% of the .* peak measured there", proc.stderr)
    assert sorted(r for r, _, _ in lines) == ["0", "1"], proc.stderr[-2000:]
    assert sum(int(d.replace(",", "")) for _, d, _ in lines) == len(DOCS)
    assert sum(int(t.replace(",", "")) for _, _, t in lines) == sum(len(r) for r in
                                                                    one.values())
    total = 0.0  # the float64 copy's corpus total
    for doc_id in DOCS:
        a, b = two[doc_id], one[doc_id]
        np.testing.assert_array_equal(a.token_ids, b.token_ids)
        np.testing.assert_array_equal(a.context_length, b.context_length)
        np.testing.assert_array_equal(a.rank, b.rank)
        assert_scores_within(a, lm, TINY_NATS)  # each run against float64, not each other
        total += assert_scores_within(b, lm, TINY_NATS)["surprisal"].sum()
    m1, m2 = one.metrics(), two.metrics()
    for key in ("n_tokens", "n_words", "n_chars", "n_bytes", "n_documents"):
        assert m1[key] == m2[key]
    for m in (m1, m2):  # a sum of n tokens: n times the per-token tolerance
        assert_within(m["total_nll"], total, TINY_NATS, m["n_tokens"])
        assert_within(np.log(m["word_ppl"]) * m["n_words"], total, TINY_NATS, m["n_tokens"])
