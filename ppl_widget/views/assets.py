"""The front end's built files (``ppl_widget/static/``, bundled from ``js/`` by esbuild):
one place that finds them, for the live widgets and the exported pages."""

from __future__ import annotations

import pathlib

STATIC = pathlib.Path(__file__).parents[1] / "static"


def bundle_path(name: str) -> pathlib.Path:
    """The path of one built file (``widget.js``, ``widget.css``, ``compare.js``, ...)."""
    path = STATIC / name
    if not path.is_file():
        raise FileNotFoundError(
            f"the widget's front end is not built ({path} is missing): install Node 20 and "
            "npm and reinstall (`pip install -e .`), or install the wheel, which holds it")
    return path


def bundle_text(name: str) -> str:
    """One built file's text (inlined by the exported pages)."""
    return bundle_path(name).read_text(encoding="utf-8")
