#!/usr/bin/env bash
# The whole test suite, from nothing: set-up, lint, front-end unit tests, then pytest
# (scorer exactness, the default model end to end, widget messages, real JupyterLab in Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PY=${PYTHON:-python3}
"$PY" -m ruff check .
(cd js && npm test)
"$PY" -m pytest -q -p no:cacheprovider "$@"
