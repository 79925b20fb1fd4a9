"""Build hook: the widget's front end (ppl_widget/static/) is bundled from js/ with npm
when a wheel, an sdist or an editable install is built from a checkout.

pyproject.toml names ``build_front_end.build`` as hatch-jupyter-builder's build function.
A wheel or sdist that already holds the bundle skips it; without Node and npm a checkout
gets one message that says what to do, instead of "could not find cmd (npm)".
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
#: the built files every widget and exported page loads (pyproject's ensured-targets)
BUNDLE = [ROOT / "ppl_widget" / "static" / name
          for name in ("widget.js", "static.js", "compare.js", "pairs.js", "reading.js", "live.js",
                       "live_worker.js", "coi-on-demand.js", "coi-serviceworker.js")]


class FrontEndBuildError(RuntimeError):
    """The front end cannot be built here (no Node or npm) and is not built yet."""


def missing_tools(npm: str = "npm") -> list[str]:
    """The tools the build needs that are not on PATH."""
    return [tool for tool in ("node", npm) if shutil.which(tool) is None]


def missing_tools_message(missing: list[str]) -> str:
    return (
        f"ppl-widget's front end (ppl_widget/static/) is built from js/ with npm, and "
        f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not on PATH. "
        "Install Node 20 and npm (https://nodejs.org, or `apt-get install nodejs npm`) and "
        "install again, or install the wheel, which carries the built front end "
        "(`pip install ppl-widget`, or a wheel built with `python -m build --wheel` where "
        "npm is)."
    )


def build(target_name: str, version: str, **kwargs: Any) -> None:
    """hatch-jupyter-builder's build function: npm install and npm run build in js/."""
    npm = str(kwargs.get("npm") or "npm")
    missing = missing_tools(npm)
    if missing:
        if version == "editable" and all(path.is_file() for path in BUNDLE):
            warnings.warn(missing_tools_message(missing) + " Keeping the front end already "
                          "built in ppl_widget/static/, which may be stale.", stacklevel=2)
            return
        raise FrontEndBuildError(missing_tools_message(missing))
    from hatch_jupyter_builder import npm_builder  # the build environment has it

    npm_builder(target_name, version, **kwargs)
