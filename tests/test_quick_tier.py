"""The quick tier (tests/quick_tier.txt, `bash scripts/test.sh --quick`) stays what it
promises: at least 300 tests, none of them needing what the quick set-up leaves out
(Chromium, a server, the vLLM environment, a wheel build, the default model)."""

from __future__ import annotations

from collect_probe import ROOT, collect

LIST = ROOT / "tests" / "quick_tier.txt"
MIN_TESTS = 300
#: Marks of tests that need what --quick does not install or that take minutes.
SLOW_MARKS = {"browser", "vllm", "wheel", "default_model", "gpu"}
#: Fixtures that start a browser or a server, or load the embedded model.
SLOW_FIXTURES = {"default_lm", "lab", "browser", "page", "server"}


def quick_files() -> list[str]:
    lines = LIST.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_every_file_of_the_quick_tier_exists_once():
    files = quick_files()
    assert len(files) == len(set(files))
    assert all((ROOT / f).is_file() and f.startswith("tests/test_") for f in files), files


def test_the_quick_tier_collects_300_tests_that_need_no_slow_set_up(tmp_path, request):
    rows = collect(quick_files(), tmp_path, request.session)
    assert len(rows) >= MIN_TESTS, len(rows)
    slow = [(r["id"], sorted(SLOW_MARKS & set(r["marks"])),
             sorted(SLOW_FIXTURES & set(r["fixtures"]))) for r in rows
            if SLOW_MARKS & set(r["marks"]) or SLOW_FIXTURES & set(r["fixtures"])]
    assert not slow, slow[:10]
