"""What an executed notebook's outputs must not hold to count as working offline: an error
output, a traceback on stderr, or anything that makes the page load a URL (a script, a
stylesheet, an image or an ES module import from the network).

Looked at: every output's ``text/html``, ``image/svg+xml``, ``text/markdown`` and
``application/javascript`` data (where a front end runs markup and scripts), stderr
streams, and the string values of the widget state nbclient saves in the notebook's
metadata (a widget's ``_esm`` / ``_css`` run in the page too).  A URL that is only
written down (an ``<a href>`` link, a spec's ``$schema``, an ``xmlns``) loads nothing
and is not reported.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

#: ``scheme://`` or a protocol-relative ``//host``: where a page would fetch from (an XML
#: namespace, ``http://www.w3.org/2000/svg`` in ``createElementNS``, names and fetches nothing).
_REMOTE = r"""(?:https?:)?//(?!www\.w3\.org/)[\w.-]+"""
#: Markup that fetches what its attribute names (``<a href>`` only links, and is left out).
_FETCHING_TAG = re.compile(
    r"<(?:script|link|img|iframe|source|embed|object|image|use|video|audio)\b[^>]*?"
    r"""\b(?:src|href|xlink:href|data)\s*=\s*["']?""" + _REMOTE, re.IGNORECASE)
#: CSS that fetches: ``@import url(...)``, ``url(https://...)``, ``@import "https://..."``.
_CSS_FETCH = re.compile(r"""(?:url\(\s*["']?|@import\s+["'])""" + _REMOTE, re.IGNORECASE)
#: A URL in a quoted string inside a script: ``import("https://...")``, ``from "//cdn..."``,
#: ``requirejs.config({paths: ...})``, ``loadScript("https://...")``.
_SCRIPT_URL = re.compile(r"""["'`]""" + _REMOTE, re.IGNORECASE)
_SCRIPT_BLOCK = re.compile(r"<script\b[^>]*>(.*?)</script>", re.IGNORECASE | re.DOTALL)
_MARKUP = ("text/html", "image/svg+xml", "text/markdown")
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^\w+(?:Error|Exception): ",
                        re.MULTILINE)


def network_loads(text: str, *, script: bool = False) -> list[str]:
    """The places in ``text`` that fetch from the network (``script``: ``text`` is
    JavaScript, not markup); each an excerpt around the match."""
    found = [m for pattern in (_FETCHING_TAG, _CSS_FETCH) for m in pattern.finditer(text)]
    scripts = [text] if script else [m.group(1) for m in _SCRIPT_BLOCK.finditer(text)]
    found += [m for code in scripts for m in _SCRIPT_URL.finditer(code)]
    return [m.string[max(0, m.start() - 60): m.end() + 40] for m in found]


def _as_text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _widget_code(nb: Any) -> Iterator[tuple[str, bool]]:
    """(code, is_script) of every saved widget's front end: anywidget's ``_esm`` and ``_css``
    (the other traits are data: a text that quotes a URL fetches nothing)."""
    saved = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    for model in (saved.get("state") or {}).values():
        state = model.get("state") or {}
        for key, is_script in (("_esm", True), ("_css", False)):
            if isinstance(state.get(key), str):
                yield state[key], is_script


def offline_problems(nb: Any) -> list[str]:
    """Everything in an executed notebook that is an error or loads from the network,
    each as ``"cell N: what"``; empty when the notebook ran clean and offline."""
    problems: list[str] = []
    for number, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            kind = output.get("output_type")
            where = f"cell {number}"
            if kind == "error":
                problems.append(f"{where}: error output {output.get('ename')}: "
                                f"{output.get('evalue')}")
            elif kind == "stream" and output.get("name") == "stderr":
                text = _as_text(output.get("text", ""))
                if _TRACEBACK.search(text):
                    problems.append(f"{where}: traceback on stderr: {text[:300]!r}")
            for mime, value in (output.get("data") or {}).items():
                if mime in _MARKUP or mime == "application/javascript":
                    for hit in network_loads(_as_text(value),
                                             script=mime == "application/javascript"):
                        problems.append(f"{where}: {mime} loads from the network: {hit!r}")
    for code, is_script in _widget_code(nb):
        for hit in network_loads(code, script=is_script):
            problems.append(f"a saved widget's front end loads from the network: {hit!r}")
    return problems
