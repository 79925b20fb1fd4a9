"""The self-contained page: what it embeds, how it escapes, what it weighs.

What the page shows in a browser is checked in tests/browser/test_export_offline.py.
"""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest

from ppl_widget import score
from ppl_widget.core.result import ScoreResult
from ppl_widget.core.text_units import TextUnits
from ppl_widget.views import assets, export
from ppl_widget.views import protocol as P

MARKUP = ("<img src=x onerror=alert(1)> </script><script>alert(1)</script> <!-- a --> "
          "<style>*{display:none}</style> & \u2028 \u2029 line\n")
TEXT = MARKUP + "The quick brown fox jumps over the lazy dog. 日本語 🙂 done."


def _payload(page: str) -> dict:
    m = re.search(r'<script type="application/json" class="pplw-state">(.*?)</script>', page,
                  re.S)
    return json.loads(m.group(1))


def _arrays(payload: dict) -> dict[str, np.ndarray]:
    rd = payload["state"]["result_data"]
    dtypes = {name: dtype for name, dtype, _ in P.CHUNK_FIELDS}
    out = {}
    for buf in payload["buffers"]:
        assert buf["path"][0] == "result_data"
        assert rd[buf["path"][1]] is None  # the JSON keeps only the slot
        if buf["path"][1] in dtypes:  # per-token fields (word spans etc. are per unit)
            out[buf["path"][1]] = np.frombuffer(base64.b64decode(buf["data"]),
                                                dtype=dtypes[buf["path"][1]])
    # only OPTIONAL_FIELDS holding nothing but their absent value are left out
    assert set(dtypes) - set(out) <= set(P.OPTIONAL_FIELDS)
    return out


@pytest.fixture(scope="module")
def result(tiny_gpt2):
    return score(TEXT, tiny_gpt2, max_length=24, stride=8, top_k=3)


def test_script_json_is_inert_and_round_trips():
    value = {"t": MARKUP, "k": ["</SCRIPT >", "<!--", "-->", "]]>"]}
    out = export.script_json(value)
    assert not set(out) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(out) == value


def test_buffers_leave_the_json_as_base64_with_their_path():
    state, buffers = export.split_buffers({"a": 1, "r": {"x": b"\x01\x02", "y": [b"\xff"]}})
    assert state == {"a": 1, "r": {"x": None, "y": [None]}}
    assert buffers == [{"path": ["r", "x"], "data": "AQI="},
                       {"path": ["r", "y", 0], "data": "/w=="}]


def test_page_holds_the_result_arrays_exactly(result):
    page = result.to_html()
    payload = _payload(page)
    state = payload["state"]
    assert state["text"] == TEXT
    assert state["status"] == "done"
    rd = state["result_data"]
    assert rd["count"] == len(result) and rd["top_k"] == 3 and rd["partial"] is False
    arrays = _arrays(payload)
    units = TextUnits.of(TEXT)
    assert arrays["token_ids"].tolist() == result.token_ids.tolist()
    assert arrays["start16"].tolist() == units.to_utf16(result.offsets[:, 0]).tolist()
    assert arrays["end16"].tolist() == units.to_utf16(result.offsets[:, 1]).tolist()
    np.testing.assert_array_equal(arrays["surprisal"], result.surprisal.astype(np.float32))
    np.testing.assert_array_equal(arrays["topk_probs"],
                                  result.topk_probs.astype(np.float32).ravel())
    assert arrays["units"].reshape(-1, 3).tolist() == result.units.tolist()
    # word level: each token's word index, as core.levels assigns it
    words = result.to_frame("word")
    assert arrays["word"].max() == len(words) - 1 == rd["levels"]["word"] - 1
    # the panel's numbers are the kernel's (NaN -> null)
    m = {k: (None if isinstance(v, float) and np.isnan(v) else v)
         for k, v in result.metrics().items()}
    assert rd["metrics"] == m
    # every id a tooltip names has its text
    ids = set(result.token_ids.tolist()) | set(result.topk_ids.ravel().tolist())
    assert {int(k) for k in rd["vocab"]} == ids
    assert state["settings"]["model"] == result.settings["model"]
    assert state["settings"]["n_unscored"] == 0


def test_markup_in_the_text_never_becomes_markup(result):
    page = result.to_html()
    # exactly the page's own elements: one style per page part, three scripts
    assert page.count("<script") == 3 and page.lower().count("</script") == 3
    assert "<img" not in page and "<!-- a" not in page and "\u2028" not in page
    assert "<style>*{display" not in page


def test_no_network_reference_in_the_page(result):
    page = result.to_html()
    assert not re.search(r"(?:src|href)\s*=|https?://|@import|url\(", page.split(
        'class="pplw-esm"')[0])
    assert "cdn" not in page.lower().split("pplw-esm")[0]


def test_the_page_inlines_the_widgets_own_bundle(result):
    page = result.to_html()
    m = re.search(r'<script type="application/json" class="pplw-esm">(.*?)</script>', page, re.S)
    bundle = (assets.STATIC / "widget.js").read_text(encoding="utf-8")
    assert json.loads(m.group(1)) == bundle
    assert (assets.STATIC / "widget.css").read_text(encoding="utf-8") in page


def test_to_html_writes_the_file(result, tmp_path):
    path = tmp_path / "r.html"
    page = result.to_html(path, color_mode="rank", show_boundaries=True)
    assert path.read_text(encoding="utf-8") == page
    state = _payload(page)["state"]
    assert state["color_mode"] == "rank" and state["show_boundaries"] is True


def test_unknown_view_setting_is_named(result):
    with pytest.raises(TypeError, match="unknown widget setting.*colour"):
        result.to_html(colour="rank")
    with pytest.raises(TypeError, match="must be a ScoreResult"):
        export.result_to_html("text")


def test_partial_result_is_marked(tiny_gpt2):
    import threading

    from ppl_widget import stream

    cancel = threading.Event()
    items = []
    for item in stream(TEXT * 4, tiny_gpt2, max_length=16, stride=8, cancel=cancel):
        items.append(item)
        cancel.set()
    res = items[-1].result
    assert res.partial
    state = _payload(res.to_html())["state"]
    assert state["status"] == "partial" and state["result_data"]["partial"] is True
    assert state["result_data"]["count"] == len(res) < res.total_tokens


def test_missing_front_end_is_a_clear_error(result, monkeypatch, tmp_path):
    monkeypatch.setattr(assets, "STATIC", tmp_path)
    with pytest.raises(FileNotFoundError, match=r"front end is not built.*install Node 20 "
                       r"and npm and reinstall \(`pip install -e \.`\), or install the wheel"):
        result.to_html()


def test_widget_export_and_notebook_fallback(tiny_gpt2):
    from ppl_widget import PerplexityWidget

    w = PerplexityWidget(TEXT, tiny_gpt2, max_length=24, stride=8, top_k=3)
    res = w.wait()
    state = _payload(w.to_html())["state"]
    assert state["status"] == "done" and state["text"] == TEXT
    assert state["result_data"]["metrics"]["total_nll"] == pytest.approx(
        res.metrics()["total_nll"])
    data, _metadata = w._repr_mimebundle_()
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == w.model_id
    fallback = data["text/html"]
    assert fallback.startswith('<div class="pplw-static') and "<html" not in fallback
    assert _payload(fallback)["state"]["result_data"]["count"] == len(res)
    w.close()


def test_widget_mid_run_exports_what_it_has(tiny_gpt2):
    from ppl_widget import PerplexityWidget

    w = PerplexityWidget(TEXT, tiny_gpt2, autostart=False)
    state = _payload(w.to_html())["state"]
    assert state["status"] == "partial" and not state["result_data"]  # nothing scored yet
    w.close()


def _synthetic(n: int, top_k: int = 5) -> ScoreResult:
    """n one-word tokens with random numbers: the size does not depend on the model."""
    rng = np.random.default_rng(0)
    vocab = {i: f" w{i}" for i in range(2000)}
    ids = rng.integers(0, 2000, n)
    pieces = [vocab[int(i)] for i in ids]
    ends = np.cumsum([len(p) for p in pieces])
    offsets = np.stack([ends - [len(p) for p in pieces], ends], axis=1)
    topk = rng.integers(0, 2000, (n, top_k))
    return ScoreResult(
        text="".join(pieces), token_ids=ids, offsets=offsets,
        surprisal=rng.exponential(3.0, n), entropy=rng.exponential(3.0, n),
        rank=rng.integers(1, 2000, n), context_length=np.minimum(np.arange(n) + 1, 1024),
        topk_ids=topk, topk_probs=np.sort(rng.dirichlet(np.ones(top_k + 1), n)[:, :top_k])[:, ::-1],
        units=np.stack([np.ones(n, int), [len(p) for p in pieces], [len(p) for p in pieces]], 1),
        is_eos=np.zeros(n, bool), vocab=vocab, settings={"model": "synthetic", "top_k": top_k})


def test_ten_thousand_tokens_stay_a_reasonable_size():
    """Size of a 10,000-token page (reported in docs/export.md)."""
    n = 10_000
    page = _synthetic(n).to_html()
    size = len(page.encode("utf-8"))
    front_end = sum((assets.STATIC / f).stat().st_size
                    for f in ("widget.js", "widget.css", "static.js"))
    per_token = (size - front_end) / n
    print(f"\n{n} tokens, top-5: {size / 1e6:.2f} MB, {per_token:.0f} bytes/token")
    # 4 bytes per value of every per-token field of the protocol (top-k fields 5 values),
    # x 4/3 for base64; plus the text (6 chars a token here), the vocab of the 2,000
    # distinct ids, and per-word arrays (word spans, BOW-corrected surprisal)
    binary = sum(4 * (5 if per == 0 else per) for _name, _dtype, per in P.CHUNK_FIELDS)
    assert per_token < binary * 4 / 3 + 40
    assert size < 2_000_000


def test_result_data_leaves_out_only_all_absent_optional_fields():
    """Columns of -1 / NaN (no unigram=, sentences off, no b(i)) are not in result_data;
    a column with any real value is, byte for byte."""
    from ppl_widget.core.text_units import TextUnits

    text = "ab cd"
    n = 3
    data = {"token_ids": np.arange(n), "offsets": np.array([[0, 2], [2, 3], [3, 5]]),
            "surprisal": np.ones(n), "entropy": np.ones(n), "rank": np.ones(n, int),
            "context_length": np.ones(n, int), "units": np.ones((n, 3), int),
            "topk_ids": np.zeros((n, 2), int), "topk_probs": np.zeros((n, 2)),
            "word": np.array([0, -1, 1]), "sentence": np.full(n, -1),
            "bow_prob": np.array([np.nan, 0.5, np.nan]), "context_gain": np.full(n, np.nan)}
    units = TextUnits.of(text)
    out = P.result_buffers(data, units)
    assert set(P.OPTIONAL_FIELDS) - set(out) == {"sentence", "context_gain"}
    full = dict(zip([f[0] for f in P.CHUNK_FIELDS], P.encode_chunk(data, units), strict=True))
    assert out == {k: v for k, v in full.items() if k in out}
    data.pop("bow_prob")  # a chunk without b(i) at all
    assert "bow_prob" not in P.result_buffers(data, units)


def test_static_pages_replace_only_ppl_widget_views(tiny_gpt2):
    """nbconvert draws a widget from its saved state (a CDN manager, blank offline);
    use_static_pages drops the view from our outputs only, and the state they alone used."""
    import nbformat

    from ppl_widget import PerplexityWidget
    from ppl_widget.views.offline_notebook import WIDGET_STATE, WIDGET_VIEW, use_static_pages

    w = PerplexityWidget("One two three.", tiny_gpt2, max_length=16, stride=8)
    w.wait()
    ours = w._repr_mimebundle_()
    ours = ours[0] if isinstance(ours, tuple) else ours
    other = {WIDGET_VIEW: {"model_id": "slider", "version_major": 2, "version_minor": 0},
             "text/plain": "IntSlider(value=3)"}
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("w", outputs=[nbformat.v4.new_output(
        "display_data", data=ours)]),
        nbformat.v4.new_code_cell("s", outputs=[nbformat.v4.new_output(
            "display_data", data=other)])]
    mine = ours[WIDGET_VIEW]["model_id"]
    state = {mine: {"state": {"layout": "IPY_MODEL_L1"}}, "L1": {"state": {}},
             "slider": {"state": {"layout": "IPY_MODEL_L2"}}, "L2": {"state": {}}}
    nb.metadata["widgets"] = {WIDGET_STATE: {"state": state, "version_major": 2}}
    assert use_static_pages(nb) == 1
    assert WIDGET_VIEW not in nb.cells[0].outputs[0].data
    assert "pplw-static" in nb.cells[0].outputs[0].data["text/html"]
    assert nb.cells[1].outputs[0].data == other
    assert set(nb.metadata["widgets"][WIDGET_STATE]["state"]) == {"slider", "L2"}
    # with only ours, the widget metadata goes, so the page loads no widget manager
    del nb.cells[1]
    nb.cells[0].outputs[0].data[WIDGET_VIEW] = ours[WIDGET_VIEW]
    nb.metadata["widgets"][WIDGET_STATE]["state"] = {mine: {"state": {"layout": "IPY_MODEL_L1"}},
                                                     "L1": {"state": {}}}
    assert use_static_pages(nb) == 1 and "widgets" not in nb.metadata
    # a text/html that merely mentions the class is not taken for ours
    fake = {WIDGET_VIEW: {"model_id": "x"}, "text/html": "<p>pplw-static</p>"}
    nb.cells[0].outputs[0].data = dict(fake)
    assert use_static_pages(nb) == 0 and nb.cells[0].outputs[0].data == fake


def test_eos_scored_means_an_eos_among_the_scored_tokens(tiny_gpt2):
    """"Scored with" says EOS "scored" only when the result holds it: a run with
    add_eos=True that stopped early added it but did not score it."""
    import threading

    from ppl_widget import stream

    cancel = threading.Event()
    items = []
    for item in stream(TEXT * 4, tiny_gpt2, max_length=16, stride=8, add_eos=True,
                       cancel=cancel):
        items.append(item)
        cancel.set()
    partial = items[-1].result
    assert partial.partial and not partial.is_eos.any()
    settings = export.result_state(partial)["settings"]
    assert settings["add_eos"] is True and settings["eos_scored"] is False
    full = score(TEXT, tiny_gpt2, max_length=16, stride=8, add_eos=True)
    assert P.result_settings(full)["eos_scored"] is True
    assert P.result_settings(score(TEXT, tiny_gpt2, max_length=16, stride=8)) \
        ["eos_scored"] is False


def test_a_page_starts_from_every_synced_trait_of_the_widget():
    """export.py reads the view's traits from widget_traits.py (not from the widget, which
    imports export): the widget must sync nothing beyond them."""
    from ppl_widget.views.widget import PerplexityWidget
    from ppl_widget.views.widget_traits import PerplexityTraits

    assert set(PerplexityWidget.class_traits(sync=True)) == \
        set(PerplexityTraits.class_traits(sync=True))
    assert set(export._view_traits()) >= {
        "text", "status", "settings", "max_length", "stride", "prefix", "result_data",
        "color_mode", "level", "surprisal_unit", "bow_correction", "editable"}
