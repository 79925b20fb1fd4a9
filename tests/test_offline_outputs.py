"""Charts drawn offline whoever built them, and the check test_notebooks.py runs on every
executed notebook's outputs (notebook_outputs.py) catches what loads from the network."""

from __future__ import annotations

import json
import subprocess
import sys

import nbformat
import pytest
from notebook_outputs import network_loads, offline_problems

pytest.importorskip("altair")

#: A user's own chart in an IPython shell that imported ppl_widget before Altair: the mime
#: bundles the notebook would save and the renderer Altair had, shown before and after the
#: user chose Altair's "html" renderer.
_USER_CHART = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_cell("import ppl_widget")
assert "altair" not in sys.modules  # importing ppl_widget did not import Altair
ip.run_cell("import altair as alt, pandas as pd\\n"
            "chart = alt.Chart(pd.DataFrame({'x': [1, 2]})).mark_point().encode(x='x')")
shown = []
for choice in ("", "alt.renderers.enable('html')"):
    ip.run_cell(choice)
    data, _ = ip.display_formatter.format(ip.user_ns["chart"])
    shown.append({"data": data, "renderer": ip.user_ns["alt"].renderers.active})
print(json.dumps(shown))
"""


@pytest.fixture(scope="module")
def user_chart() -> list[dict]:
    out = subprocess.run([sys.executable, "-c", _USER_CHART], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _altair_default_html() -> str:
    import altair as alt
    import pandas as pd

    chart = alt.Chart(pd.DataFrame({"x": [1, 2]})).mark_point().encode(x="x")
    with alt.renderers.enable("html"):
        bundle = chart._repr_mimebundle_()
    return (bundle[0] if isinstance(bundle, tuple) else bundle)["text/html"]


def test_a_users_own_altair_chart_is_drawn_offline_after_import_ppl_widget(user_chart):
    shown = user_chart[0]
    assert shown["renderer"] == "ppl_widget"
    assert "application/vnd.vegalite.v5+json" in shown["data"]
    assert not any(network_loads(v) for k, v in shown["data"].items() if k == "text/html")


def test_a_renderer_the_user_chose_is_kept(user_chart):
    shown = user_chart[1]
    assert shown["renderer"] == "html"
    assert network_loads(shown["data"]["text/html"])  # the user's choice, CDN and all


def test_the_check_finds_altairs_cdn_scripts_and_other_fetches():
    assert any("cdn.jsdelivr.net" in hit for hit in network_loads(_altair_default_html()))
    for fetching in ('<script src="https://x.org/a.js"></script>',
                     "<link rel=stylesheet href=//cdn.x.org/a.css>",
                     '<script type="module">import {a} from "https://esm.sh/a";</script>',
                     "<style>@import url('https://fonts.x.com/f.css');</style>",
                     '<svg><image href="http://x.org/i.png"/></svg>'):
        assert network_loads(fetching), fetching
    for offline in ('<a href="https://x.org">a link</a>',
                    '<svg xmlns="http://www.w3.org/2000/svg"></svg>',
                    '<script>document.createElementNS("http://www.w3.org/2000/svg", "g")</script>',
                    '<p>"https://x.org" is only text here</p>'):
        assert not network_loads(offline), offline


def test_the_notebook_check_reports_errors_tracebacks_and_network_outputs():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(outputs=[
            nbformat.v4.new_output("error", ename="ValueError", evalue="bad", traceback=[])]),
        nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output(
            "stream", name="stderr", text="Traceback (most recent call last):\n  ...\n")]),
        nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output(
            "display_data", data={"text/html": _altair_default_html()})]),
        nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output(
            "stream", name="stderr", text="a warning, no traceback\n")]),
    ])
    problems = offline_problems(nb)
    assert [p.split(":")[0] for p in problems][:2] == ["cell 0", "cell 1"]
    assert any(p.startswith("cell 2: text/html loads from the network") for p in problems)
    assert not any(p.startswith("cell 3") for p in problems)
