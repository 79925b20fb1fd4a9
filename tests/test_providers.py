"""The seams between core objects and the views (core/providers.py): the package
registers the views lazily, core objects ask for them by name, and a missing one says
what to import or install."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from ppl_widget import ScoreResult
from ppl_widget.core import providers
from ppl_widget.core.comparison import Comparison
from ppl_widget.core.providers import ProviderError, provide, provider, resolve


def _result(text: str = "ab") -> ScoreResult:
    n = len(text)
    return ScoreResult(text=text, token_ids=np.arange(n), offsets=[[i, i + 1] for i in range(n)],
                       surprisal=np.ones(n), entropy=np.ones(n), rank=np.ones(n),
                       context_length=np.arange(1, n + 1), topk_ids=np.zeros((n, 0)),
                       topk_probs=np.zeros((n, 0)), units=[[1, 1, 1]] * n,
                       is_eos=np.zeros(n, bool))


@pytest.fixture
def registry(monkeypatch):
    """The registry, restored after the test."""
    monkeypatch.setattr(providers, "_PROVIDERS", dict(providers._PROVIDERS))
    monkeypatch.setattr(providers, "_HINTS", dict(providers._HINTS))


def test_importing_the_package_imports_no_view():
    code = ("import sys, ppl_widget\n"
            "from ppl_widget.core import providers\n"
            "names = sorted(providers._PROVIDERS)\n"
            "views = sorted(m for m in sys.modules if m.startswith('ppl_widget.views'))\n"
            "print(names, views)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == ("['comparison_chart', 'comparison_widget', 'context_curve', "
                   "'divergence_chart', 'divergence_widget', 'explain', 'explanation_chart', "
                   "'result_to_html'] []")


def test_the_registered_providers_are_the_view_functions():
    pytest.importorskip("anywidget")
    from ppl_widget.views import export
    from ppl_widget.views.charts import charts
    from ppl_widget.views.compare_widget import ComparisonWidget

    assert provider("result_to_html") is export.result_to_html
    assert provider("comparison_chart") is charts.comparison
    assert provider("comparison_widget") == ComparisonWidget.from_comparison
    from ppl_widget.views import divergence_view
    from ppl_widget.views.charts import charts_divergence

    assert provider("divergence_widget") is divergence_view.DivergenceWidget
    assert provider("divergence_chart") is charts_divergence.divergence
    from ppl_widget.scoring.analyses import explain
    from ppl_widget.views.charts import charts_explain

    assert provider("explain") is explain.explain
    assert provider("context_curve") is explain.context_curve
    assert provider("explanation_chart") is charts_explain.explanation_chart


def test_core_objects_forward_to_what_is_registered(registry):
    calls = []
    provide("result_to_html", lambda result, path, **view: calls.append((result, path, view))
            or "<html>")
    provide("comparison_chart", lambda cmp, **kw: calls.append((cmp, kw)) or "chart")
    provide("comparison_widget", lambda cmp, a, b: calls.append((cmp, a, b)) or "widget")
    res = _result()
    assert res.to_html("out.html", unit="nats") == "<html>"
    cmp = Comparison("ab", [res, res], ["x", "y"])
    assert cmp.chart(1, 0, unit="nats") == "chart"
    assert cmp.widget("y", "x") == "widget"
    assert calls == [(res, "out.html", {"unit": "nats"}),
                     (cmp, {"a": 1, "b": 0, "unit": "nats"}), (cmp, "y", "x")]


def test_an_unregistered_provider_says_what_to_import(registry):
    del providers._PROVIDERS["result_to_html"]
    with pytest.raises(ProviderError, match=r"nothing provides 'result_to_html'.*"
                                            r"\(import ppl_widget\)"):
        _result().to_html()
    with pytest.raises(ImportError):  # a ProviderError is an ImportError
        provider("no such seam")


def test_a_provider_that_cannot_be_imported_says_what_to_install(registry):
    provide("comparison_chart", "ppl_widget_no_such_module.charts:comparison",
            hint="pip install 'ppl-widget[charts]'")
    cmp = Comparison("ab", [_result(), _result()], ["x", "y"])
    with pytest.raises(ProviderError) as info:
        cmp.chart()
    message = str(info.value)
    assert message.startswith("'comparison_chart' is provided by "
                              "ppl_widget_no_such_module.charts:comparison, which could not "
                              "be imported (No module named 'ppl_widget_no_such_module')")
    assert message.endswith(": pip install 'ppl-widget[charts]'")


def test_references_are_module_colon_attribute():
    assert resolve("ppl_widget.core.comparison:Comparison.table") is Comparison.table
    with pytest.raises(ProviderError, match="names nothing: ppl_widget.core.comparison has "
                                            "no 'Comparison.chartz'"):
        resolve("ppl_widget.core.comparison:Comparison.chartz")
    with pytest.raises(ValueError, match="'package.module:attribute'"):
        provide("x", "ppl_widget.views.charts.charts")
