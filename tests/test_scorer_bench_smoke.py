"""The benchmarks' --smoke forms run end to end on the CPU (tiny shapes), their checks hold."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("anywidget")

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_bench(script: str, *args: str) -> str:
    """Run ``benchmarks/<script> --smoke ...`` in its own process; its stdout."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--smoke", *args],
                          capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


#: The smoke runs of this file's tests: each benchmark's arguments after ``--smoke``.
#: One run serves every test that reads it (bench_gpu's plain and --compiled checks).
SMOKES = {
    "bench_gpu.py": ("--compiled", "--json", "{tmp}/bench.json"),
    "bench_editable.py": (),
    "bench_stream_host.py": ("--max-length", "256", "--batch-size", "2", "--strides", "256,128"),
    "bench_prepare_ahead.py": (),
    "bench_corpus_host.py": (),
    "bench_pairs.py": (),
    "bench_words.py": (),
    "bench_corpus_ranks.py": (),
    "bench_divergence.py": (),
    "bench_explain.py": (),
    "bench_llama_cpp.py": (),
    "bench_masked.py": (),
    "bench_predictive_power.py": (),
}
#: What a smoke run needs beyond the test extras' torch: without it, its test is skipped.
NEEDS = {"bench_masked.py": "minicons", "bench_predictive_power.py": "wordfreq"}


@pytest.fixture(scope="module")
def smokes(tmp_path_factory) -> dict:
    """All of SMOKES run once, one after another in one process (benchmarks/run_smokes.py:
    torch and transformers imported once, not once a script): each script's run by name."""
    tmp = tmp_path_factory.mktemp("smokes")
    runs: list[str] = []
    wanted = [s for s in SMOKES if importlib.util.find_spec(NEEDS.get(s, "torch"))]
    for script in wanted:
        runs += ["--", script, *(a.format(tmp=tmp) for a in SMOKES[script])]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run_smokes.py"),
                           "--out", str(tmp / "runs.json"), *runs[1:]],
                          capture_output=True, text=True, timeout=1200, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    done = {r["argv"][0]: r for r in json.loads((tmp / "runs.json").read_text())}
    assert list(done) == wanted, proc.stderr[-3000:]
    return {"tmp": tmp, "stderr": proc.stderr, **done}


def smoke_stdout(smokes: dict, script: str) -> str:
    """What ``benchmarks/<script> --smoke`` printed; the test fails where the script did."""
    if script not in smokes:
        pytest.skip(f"{NEEDS[script]} is not installed")
    run = smokes[script]
    assert run["error"] is None, run["stdout"][-3000:] + run["error"] + smokes["stderr"][-3000:]
    return run["stdout"]


def test_bench_gpu_smoke_prints_its_tables(smokes):
    out = smokes["tmp"] / "bench.json"
    text = smoke_stdout(smokes, "bench_gpu.py")
    assert "| method    | seconds | tokens/s" in text
    for name in ("guide", "score", "stream"):
        assert f"| {name:9} |" in text
    assert "lm-eval" in text and "Targets (H100)" in text and "bf16 vs fp32" in text
    assert "stream(): first chunk after" in text and "largest gap" in text
    figures = json.loads(out.read_text())
    assert [m["model"] for m in figures["models"]] == ["gpt2-large", "llama-1b"]
    for model in figures["models"]:
        for run in model["runs"].values():
            checks = run["checks"]
            assert checks["stream_equals_score"] is True
            # live first colours: when the first chunk came, and the largest gap after it
            pace = checks["stream_pace"]
            assert 0 < pace["first_chunk_s"] <= pace["total_s"]
            assert 0 <= pace["largest_gap_s"] <= pace["total_s"]
            assert 0 < checks["stream_first_chunk_s"] and checks["widget_largest_gap_s"] >= 0
            assert checks["score_tokens"] == model["n_tokens"]
            assert all(r["tokens_per_s"] > 0 for r in run["rows"].values())
        # both strides; lm-eval's rolling windows only where stride == max_length (64);
        # the compiled row (this run's --compiled) at both
        rows = {stride: sorted(r["rows"]) for stride, r in model["runs"].items()}
        assert rows == {"32": ["compiled", "guide", "score", "stream"],
                        "64": ["compiled", "guide", "lm-eval", "score", "stream"]}, rows


def test_bench_gpu_smoke_compiled_row(smokes):
    """--compiled: lm.compile() on the same model, its row beside score's, and its results
    within bf16 noise of the eager ones (in --smoke compiled by torch.compile's "aot_eager"
    backend, no C++ compiler: the real inductor compile is
    tests/test_corpus_compile.py::test_real_torch_compile_serves_score_and_corpus)."""
    text = smoke_stdout(smokes, "bench_gpu.py")
    assert "lm.compile(): compiled in" in text and "| compiled  |" in text
    diff = float(re.search(r"compiled vs eager: max per-token \|d\| ([\d.]+) nats", text)[1])
    assert diff < 0.05
    assert re.search(r"compiled [\d.]+% of peak", text)


def test_bench_editable_smoke_counts_the_tokens_scored_again(smokes):
    stdout = smoke_stdout(smokes, "bench_editable.py")
    rows = re.findall(r"^\s*(end|\d+% in)\s+([\d,]+)\s+([\d,]+)\s+(\d+)%", stdout, re.M)
    share = {place: int(pct) for place, _again, _of, pct in rows}
    assert len(share) == 6, stdout
    # a keystroke at the end scores only the last window again, at the start everything
    assert share["end"] < share["50% in"] < share["0% in"] == 100, stdout


def test_bench_stream_host_smoke_times_the_widget_host_work(smokes):
    stdout = smoke_stdout(smokes, "bench_stream_host.py")
    num = r"([\d.]+) s"
    rows = re.findall(rf"^\| (\d+) \| (\d+) \| {num} \| {num} \| {num} \| {num} \|$",
                      stdout, re.M)
    assert [r[0] for r in rows] == ["256", "128"], stdout
    chunks = [int(r[1]) for r in rows]
    assert chunks[1] > chunks[0] > 1, stdout  # half the stride, about twice the windows
    for row in rows:
        before, across, after, total = map(float, row[2:])
        assert abs(before + across + after - total) < 0.0025  # the parts add up


def test_bench_prepare_ahead_smoke_compares_the_two_ways(smokes):
    stdout = smoke_stdout(smokes, "bench_prepare_ahead.py")
    num = r"([\d.]+) s"
    rows = re.findall(rf"^\| (\d+) \| (first|ahead) \| {num} \| {num} \| {num} \|$",
                      stdout, re.M)
    # both ways at both strides, and the smoke text really was prepared ahead
    assert [(r[0], r[1]) for r in rows] == [("512", "first"), ("512", "ahead"),
                                            ("1024", "first"), ("1024", "ahead")], stdout
    for _stride, _way, first, total, over in rows:
        assert 0 < float(first) <= float(total) and 0 <= float(over) < float(total)
    assert len(re.findall(r"^stride \d+: [\d.]+ s of device time; ahead saves", stdout,
                          re.M)) == 2


def test_bench_corpus_host_smoke_compares_the_two_ways(smokes):
    stdout = smoke_stdout(smokes, "bench_corpus_host.py")
    num = r"([\d.]+) s"
    rows = re.findall(rf"^\| (in turn|beside)[^|]* \| {num} \| {num} \| {num} \| [\d,]+ \|$",
                      stdout, re.M)
    assert [r[0] for r in rows] == ["in turn", "beside"], stdout
    for _way, total, busy, over in rows:
        assert abs(float(total) - float(busy) - float(over)) < 0.0015
        assert float(busy) > 0
    assert rows[0][2] == rows[1][2]  # the same device work both ways


@pytest.fixture(scope="module")
def pairs_stdout(smokes) -> str:
    """bench_pairs.py --smoke's output, run once for the tests below."""
    return smoke_stdout(smokes, "bench_pairs.py")


def test_bench_pairs_smoke_checks_totals_and_prints_ratios(pairs_stdout):
    stdout = pairs_stdout
    assert "| score_pairs         |" in stdout and "| loop of score()     |" in stdout, stdout
    assert "tolerance per sentence (float32): score() 0.0001 nats" in stdout, stdout
    diff = float(re.search(r"max \|score_pairs - score\(\)\| per sentence: (\S+) nats",
                           stdout).group(1))
    assert diff < 1e-4
    if "minicons not installed" not in stdout:
        assert re.search(r"score_pairs is [\d.]+x minicons", stdout), stdout


def test_bench_pairs_smoke_checks_lm_eval_loglikelihood(pairs_stdout):
    """lm-eval's own HFLM.loglikelihood on the same model: its row, the prefix token it
    conditions on (the tiny Llama has a BOS, so score()'s), and per-sentence totals
    within 1e-3 nats of score_pairs'.  Skipped, with the reason the benchmark printed,
    only where HFLM cannot be imported (scripts/setup.sh installs lm_eval)."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from pair_methods import lm_eval_import_error

    stdout = pairs_stdout
    if "| lm-eval" not in stdout:  # only then import lm_eval here (seconds) to say why
        why = lm_eval_import_error()
        assert why is not None, stdout  # HFLM imports, so its row must be there
        assert why.split(" (")[0] in stdout, stdout
        pytest.skip(why)
    assert re.search(r"^\| lm-eval \(batch 32\)  \| +48 \| +[\d.]+ \| +[\d.]+ \| +[\d.]+x \|$",
                     stdout, re.M), stdout
    assert "lm-eval conditions each sentence on '<s>' (id 1), the BOS, as score() does" \
        in stdout, stdout
    diff = float(re.search(r"max \|score_pairs - lm-eval\| per sentence: (\S+) nats",
                           stdout).group(1))
    assert diff < 1e-3, stdout
    assert re.search(r"score_pairs is .*[\d.]+x lm-eval", stdout), stdout


def test_bench_words_smoke_checks_words_and_prints_the_ratio(smokes):
    stdout = smoke_stdout(smokes, "bench_words.py")
    assert "| score_words (packed)     |" in stdout and "| one score() per item     |" in stdout
    diff = float(re.search(r"max \|packed - score\(\)\| per word: (\S+) nats", stdout).group(1))
    assert diff < 1e-4
    assert re.search(r"score_words packed is [\d.]+x one score\(\) per item", stdout), stdout


def test_bench_corpus_ranks_smoke_reports_each_rank(smokes):
    """One process (--smoke: without the launcher) and two under torchrun (gloo): each
    rank's report, the same output."""
    text = smoke_stdout(smokes, "bench_corpus_ranks.py")
    assert re.search(r"1 process\(es\): scored \d+ documents, [\d,]+ tokens in .*% of the", text)
    assert "2 process(es): rank 0: scored" in text and "2 process(es): rank 1: scored" in text
    rows = re.findall(r"^\| (\d) \| ([\d,]+) \| [\d.]+ \| [\d,]+ \|", text, re.M)
    assert [r[0] for r in rows] == ["1", "2"] and rows[0][1] == rows[1][1]  # same tokens
    assert "max per-token |1 process - 2 processes|" in text


def test_bench_divergence_smoke_prints_the_ratio_and_checks_kl(smokes):
    """divergence() beside one score(): its row, its ratio, the base equal to score()'s
    and the first window's KL within 1e-3 of a float64 computation."""
    stdout = smoke_stdout(smokes, "bench_divergence.py")
    assert "| score()      |" in stdout and "| divergence() |" in stdout, stdout
    ratio = float(re.search(r"divergence\(\) is ([\d.]+)x one score\(\)", stdout)[1])
    # the ratio is printed, not judged: a smoke run's timings (0.05 s, beside another
    # worker) say nothing about speed (benchmarks print ratios; tests never time)
    assert ratio > 0 and math.isfinite(ratio), stdout
    same = float(re.search(r"max \|divergence\(\)\.base - score\(\)\| surprisal: (\S+) nats",
                           stdout)[1])
    assert same < 1e-4
    rel = float(re.search(r"max relative \|KL - float64 KL\| (\S+) over", stdout)[1])
    assert rel < 1e-3


def test_bench_explain_smoke_prints_its_ratios(smokes):
    """A tiny random Llama; the ratios are printed (not timed here: speed is the
    benchmark's to report) and the two paths' surprisals agree."""
    text = smoke_stdout(smokes, "bench_explain.py")
    assert re.search(r"gradient x input: [\d.]+ s; one forward \+ backward: [\d.]+ s; "
                     r"ratio [\d.]+ \(target: <= 2\)", text), text
    floor = re.search(r"occlusion of all (\d+) words: [\d.]+ s; floor (\d+) positions x "
                      r"[\d.]+ ms = [\d.]+ s; ratio [\d.]+ \(target: <= 1.3\)", text)
    assert floor and int(floor[1]) > 16 and int(floor[2]) > 64, text
    assert re.search(r"16 nearest words: [\d.]+ s", text), text
    diff = re.search(r"occlusion vs gradient path: \|diff\| ([\d.e+-]+) nats", text)
    assert diff and float(diff[1]) < 1e-4, text


def test_bench_llama_cpp_smoke_prints_its_table(smokes):
    """Without llama.cpp (a tiny random model): score(protocol="llama.cpp") beside
    llama-perplexity's loop written out by hand."""
    text = smoke_stdout(smokes, "bench_llama_cpp.py")
    assert "| dtype    |        loop s | score() s | ratio | median ratio |" in text
    # the smoke run has no median ratio (one run of the loop): that column is blank
    row = re.search(r"\| float32  \|\s+([\d.]+) \|\s+([\d.]+) \|\s+([\d.]+) \|\s+\|"
                    r"\s+([\d.]+) \|\s+([\d.]+) \|\s+(\d+) \|", text)
    assert row, text
    assert float(row[4]) == pytest.approx(float(row[5]), rel=1e-4)  # the same PPL
    assert int(row[6]) == 4 * (32 - 1 - 16)  # 4 chunks of 32, 15 scored in each


def test_bench_masked_smoke_prints_its_ratio(smokes):
    """A tiny random BERT; the ratio to minicons is printed (not timed here: speed is the
    benchmark's to report) and the two agree."""
    text = smoke_stdout(smokes, "bench_masked.py")
    assert re.search(r"score\(\) \(float32, batch_size=\d+\): [\d.]+ s", text), text
    assert re.search(r"ratio [\d.]+x; with ranks [\d.]+x \(target: >= 3\)", text), text
    diff = re.search(r"score\(\) vs minicons: max \|diff\| ([\d.e+-]+) nats", text)
    assert diff and float(diff[1]) < 1e-4, text


def test_bench_predictive_power_smoke(smokes):
    """A bigram on synthetic texts, end to end: both timings and their ratio printed."""
    stdout = smoke_stdout(smokes, "bench_predictive_power.py")
    assert "bigram" in stdout and "720 words" in stdout
    assert re.search(r"\| score_words \(the texts once\)\s+\|\s+\d+\.\d+ \|", stdout)
    assert re.search(r"\| predictive_power \(3 RT measures, 10 folds\)\s+\|\s+\d+\.\d+ \|",
                     stdout)
    assert re.search(r"predictive_power / score_words = \d+\.\d+x \(target <= 1.2x\)",
                     stdout)
