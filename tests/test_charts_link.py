"""The link-shape charts and the effects they draw: link_effects (the linear and the
smooth effect of surprisal, anchored at the first value, from the GAM fits), link_chart
(one panel per language, a line and a band per fit, the legend drawn) and link_dll_chart
(linear against non-linear ΔLL per language with the test's p-value), drawn by vl-convert
in the default and the dark theme."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("altair")
vlc = pytest.importorskip("vl_convert")

from test_charts_reading import items, scene  # noqa: E402

from ppl_widget import link_chart, link_dll_chart, link_effects  # noqa: E402
from ppl_widget.core.reading.gam.effect import gam_term_effect  # noqa: E402

BASELINE = ["te(freq, len, bs='cr')"]  # the paper's smooth baseline


def table(seed: int = 0, n: int = 400) -> pd.DataFrame:
    """RT rising with surprisal and flattening: a curve for the smooth to find."""
    rng = np.random.default_rng(seed)
    out = pd.DataFrame({"surp": rng.gamma(2, 2.5, n), "freq": rng.normal(4, 1, n),
                        "len": rng.integers(1, 12, n).astype(float)})
    out["rt"] = 200 + 30 * np.sqrt(out["surp"]) - 6 * out["freq"] + 5 * out["len"] \
        + rng.normal(0, 15, n)
    return out


def test_link_effects_are_the_fits_terms_anchored_at_the_first_value():
    data = table()
    grid = np.linspace(0, 12, 25)
    got = link_effects(data, "rt", "surp", BASELINE, x=grid)
    assert got["fit"].tolist() == ["linear"] * 25 + ["non-linear"] * 25
    lin, curve = got[got["fit"] == "linear"], got[got["fit"] == "non-linear"]
    assert lin["effect"].iloc[0] == 0 and curve["effect"].iloc[0] == 0
    assert np.ptp(np.diff(lin["effect"])) < 1e-9  # a line: equal steps
    ref = gam_term_effect(data, "rt", ["s(surp, bs='cr', k=6)", *BASELINE],
                          "s(surp, bs='cr', k=6)", x=grid)
    shift = ref["effect"].iloc[0]
    np.testing.assert_allclose(curve["effect"], ref["effect"] - shift, atol=1e-9)
    np.testing.assert_allclose(curve["upper"] - curve["lower"], ref["upper"] - ref["lower"])
    steps = np.diff(curve["effect"].to_numpy())
    assert steps[:4].mean() > 1.5 * steps[-4:].mean()  # the curve flattens, as made
    assert got.attrs["edf"]["s(surp)"] > 1.5 and got.attrs["n"] == len(data)
    free = link_effects(data, "rt", "surp", BASELINE, x=grid, anchor=False)
    assert free["effect"].iloc[25] == pytest.approx(ref["effect"].iloc[0])


@pytest.mark.parametrize("theme", [None, "dark"])
def test_link_chart_one_panel_per_language_with_lines_bands_and_legend(theme):
    grid = np.linspace(0, 12, 13)
    effects = link_effects(table(), "rt", "surp", BASELINE, x=grid)
    both = pd.concat([effects.assign(lang="en"), effects.assign(lang="ee")])
    sg = scene(link_chart(both), theme)
    headers = [t["text"] for t in items(sg, "text", "title-text")]
    assert {"English", "Estonian"} <= set(headers)
    assert [t["text"] for t in items(sg, "text", "legend-label")] == ["linear", "non-linear"]
    lines = items(sg, "line", "mark")
    assert len(lines) == 2 * 2 * len(grid)  # 2 panels x 2 fits, a point per x
    areas = items(sg, "area", "mark")
    assert len(areas) == 2 * 2 * len(grid)
    with pytest.raises(ValueError, match=r"no column\(s\) \['upper'\]"):
        link_chart(both.drop(columns="upper"))
    with pytest.raises(ValueError, match=r"fit must be one of \['linear', 'non-linear'\]"):
        link_chart(both.assign(fit="curvy"))


@pytest.mark.parametrize("theme", [None, "dark"])
def test_link_dll_chart_pairs_the_two_fits_per_language(theme):
    rows = [{"lang": lang, "dll_linear": a, "se_linear": 0.002, "dll_nonlinear": b,
             "se_nonlinear": 0.002, "difference": b - a, "se_difference": 0.001,
             "p_value": p, "test": "permutation", "n": 1800}
            for lang, a, b, p in (("en", 0.014, 0.012, 0.09), ("du", 0.010, 0.013, 0.03))]
    chart = link_dll_chart(rows)
    sg = scene(chart, theme)
    assert len(items(sg, "symbol", "mark")) == 4
    intervals = [r for r in items(sg, "rule", "mark") if "y2" in r]
    assert len(intervals) == 4 and all(r["y2"] != r["y"] for r in intervals)
    labels = [t["text"] for t in items(sg, "text", "axis-label")]
    assert "English" in labels and "Dutch" in labels
    assert [t["text"] for t in items(sg, "text", "legend-label")] == ["linear", "non-linear"]
    sub = " ".join(chart.to_dict()["title"]["subtitle"])
    assert "paired permutation test: English: p = 0.09; Dutch: p = 0.03" in sub
    with pytest.raises(ValueError, match=r"no column\(s\) \['p_value'"):
        link_dll_chart(pd.DataFrame(rows).drop(columns="p_value"))


@pytest.mark.parametrize("theme", [None, "dark"])
def test_link_charts_show_both_methods(theme):
    grid = np.linspace(0, 12, 13)
    effects = link_effects(table(), "rt", "surp", BASELINE, x=grid,
                           methods=("GCV.Cp", "REML"))
    assert effects["method"].tolist() == ["GCV.Cp"] * 26 + ["REML"] * 26
    sg = scene(link_chart(effects.assign(lang="en")), theme)
    headers = [t["text"] for t in items(sg, "text", "title-text")]
    assert {"English · GCV.Cp", "English · REML"} <= set(headers)
    assert len(items(sg, "line", "mark")) == 2 * 2 * len(grid)  # 2 methods x 2 fits
    rows = [{"lang": "he", "method": m, "dll_linear": a, "se_linear": 0.002,
             "dll_nonlinear": b, "se_nonlinear": 0.002, "difference": b - a,
             "se_difference": 0.001, "p_value": 0.4, "test": "permutation", "n": 1800,
             "conclusion": c, "conclusion_differs": True}
            for m, a, b, c in (("GCV.Cp", 0.010, 0.011, "no difference (non-linear ahead)"),
                               ("REML", 0.011, 0.0106, "no difference (linear ahead)"))]
    sg = scene(link_dll_chart(rows), theme)
    labels = [t["text"] for t in items(sg, "text", "axis-label")]
    assert "Hebrew · GCV.Cp" in labels and "Hebrew · REML" in labels
    assert len(items(sg, "symbol", "mark")) == 4
    tips = [s["description"] for s in items(sg, "symbol", "mark")]
    assert all("(DIFFERS between methods)" in t for t in tips)
