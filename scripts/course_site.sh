#!/usr/bin/env bash
# The course page with the default model as a transformer in the reader's browser, in one
# command: the set-up (scripts/setup.sh), the [live] extra the ONNX export needs, the build
# (about two minutes the first time, the export is cached after; ~230 MB written for q4) and
# a local server on http://localhost:8000/ (a page that loads a model must be served: a
# file: page cannot). Arguments go to examples/course_site/build.py, e.g.
#   bash scripts/course_site.sh --transformer fp32 --serve 8080
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/uv pip install --quiet --python .venv/bin/python --constraint .venv/torch-pin.txt \
  -e ".[analysis,charts,live]"
if [ "$#" -eq 0 ]; then set -- --transformer q4 --serve; fi
exec .venv/bin/python examples/course_site/build.py "$@"
