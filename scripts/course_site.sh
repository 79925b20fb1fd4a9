#!/usr/bin/env bash
# The course page with the default model as a transformer in the reader's browser, in one
# command: the set-up (scripts/setup.sh), the [live] extra the ONNX export needs, the build
# (the ONNX export is cached after the first time; ~230 MB written for q4) and a local
# server on http://localhost:8000/ (a page that loads a model must be served: a file: page
# cannot). Arguments go to examples/course_site/build.py, e.g.
#   bash scripts/course_site.sh --transformer fp32 --serve 8080
# One line per step; what the set-up, the installer and the libraries print (their
# warnings) goes to a log, shown only when a step fails. Measured time: README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
LOG=${COURSE_SITE_LOG:-$(mktemp -t course_site.XXXXXX.log)}
T0=$SECONDS
step() { printf '[course site %3ds] %s\n' "$((SECONDS - T0))" "$*"; }
quiet() {  # run a step with its output in the log; on failure show the log's end
  if ! "$@" >>"$LOG" 2>&1; then
    echo "course site: the step failed; the last lines of its log ($LOG):" >&2
    tail -n 40 "$LOG" >&2
    exit 1
  fi
}
step "1/3 set-up (scripts/setup.sh; minutes the first time; output in $LOG)"
quiet bash scripts/setup.sh
step "2/3 the [live] extra (onnx, onnxscript, onnxruntime)"
quiet .venv/bin/uv pip install --quiet --python .venv/bin/python \
  --constraint .venv/torch-pin.txt -e ".[analysis,charts,live]"
if [ "$#" -eq 0 ]; then set -- --transformer q4 --serve; fi
step "3/3 the build (examples/course_site/build.py $*)"
# build.py prints its own steps; what the libraries print (their warnings, the exporter's
# messages) goes to the log (--quiet-log)
PYTHONWARNINGS=ignore exec .venv/bin/python examples/course_site/build.py --quiet-log "$LOG" "$@"
