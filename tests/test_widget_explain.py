"""The widget's explanations ("why is this token surprising?"): the messages a click
starts, the synced ``explanation`` trait, cancel and clear, errors that name the rule,
and the explanation travelling with the exported page (send captured)."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("anywidget")

from ppl_widget import explain  # noqa: E402
from ppl_widget.views import protocol as P  # noqa: E402
from ppl_widget.views.export import result_state, split_buffers  # noqa: E402
from ppl_widget.views.widget import PerplexityWidget  # noqa: E402

TEXT = "Émoji 🙂 in winter: the <b>cold</b> river froze and the valley had floods."


def explain_messages(sent: list) -> list[dict]:
    return [c for c, _ in sent if c["type"].startswith("explain")]


def wait_for(condition, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, "timed out waiting"
        time.sleep(0.01)


@pytest.fixture
def widget(tiny_gpt2, sent):
    w = PerplexityWidget(TEXT, tiny_gpt2)
    w.wait()
    sent.clear()
    return w


def test_a_click_streams_the_units_nearest_first_then_the_whole_explanation(widget, sent,
                                                                           tiny_gpt2):
    w = widget
    words = np.frombuffer(w.result_data["word"], "<i4")
    target_word = int(words[-2])  # the last word ("floods."), as a click at the word level
    w._on_front_end_message(w, {"type": P.MSG_EXPLAIN, "word": target_word, "request": 7}, [])
    expl = w._explainer.wait()
    msgs = explain_messages(sent)
    kinds = [m["type"] for m in msgs]
    assert kinds[0] == P.MSG_EXPLAIN_START and kinds[-1] == P.MSG_EXPLAIN_DONE
    assert set(kinds[1:-1]) == {P.MSG_EXPLAIN_PART}
    start, parts, done = msgs[0], msgs[1:-1], msgs[-1]
    assert start["request"] == 7 and start["unit"] == "word" and start["method"] == "occlusion"
    # the target is the tokens the view marks as that word (one word rule for both)
    target = start["target"]
    marked = np.flatnonzero(words == target_word)
    assert (target["word"], target["token"]) == (target_word, None)
    assert (target["first"], target["last"]) == (marked[0], marked[-1])
    # UTF-16 spans: JavaScript's text.slice(start16, end16) is the unit's text
    utf16 = TEXT.encode("utf-16-le")
    units = parts[0]["units"]
    for text, s, e in zip(units["text"], units["start16"], units["end16"], strict=True):
        assert utf16[2 * s:2 * e].decode("utf-16-le") == text
    assert utf16[2 * target["start16"]:2 * target["end16"]].decode("utf-16-le") == \
        target["text"]
    # every unit arrives once, the nearest to the target first
    index = [i for p in parts for i in p["index"]]
    assert sorted(index) == list(range(len(units["text"])))
    batches = [p["index"] for p in parts if p["index"]]
    assert max(batches[0]) == len(units["text"]) - 1
    assert [max(b) for b in batches] == sorted((max(b) for b in batches), reverse=True)
    assert [p["done"] for p in parts] == sorted(p["done"] for p in parts)
    # the numbers are explain()'s with the widget's settings, and the trait holds them whole
    api = explain(TEXT, tiny_gpt2, word=target_word, max_length=w.max_length,
                  stride=w.stride)
    streamed = np.full(len(index), np.nan)
    for p in parts:
        streamed[p["index"]] = p["delta_nats"]
    # the widget runs explain()'s iter_explain with the same settings: bit for bit
    np.testing.assert_array_equal(streamed, api.delta_nats)
    np.testing.assert_array_equal(expl.delta_nats, api.delta_nats)
    data = w.explanation
    assert done == {"type": P.MSG_EXPLAIN_DONE, "explain_id": start["explain_id"],
                    "status": "done"}
    assert data["explain_id"] == start["explain_id"] and data["status"] == "done"
    np.testing.assert_array_equal(data["delta_nats"], api.delta_nats)
    assert data["units"] == units and data["target"] == target
    assert data["curve"]["context_tokens"][0] == 0
    assert data["curve"]["context_tokens"][-1] == api.context_tokens
    json.dumps(data, allow_nan=False)  # JSON as it is: no NaN, no numpy


def test_a_token_click_explains_the_token_by_tokens(widget, sent):
    w = widget
    last = len(w.result) - 1
    w._on_front_end_message(w, {"type": P.MSG_EXPLAIN, "token": last, "request": 1,
                                "method": "gradient"}, [])
    w._explainer.wait()
    start = explain_messages(sent)[0]
    assert (start["target"]["token"], start["target"]["first"]) == (last, last)
    assert start["unit"] == "token" and start["method"] == "gradient"
    # token units are the result's tokens before the target, after the prefix
    units = w.explanation["units"]
    assert units["start16"] == list(np.frombuffer(w.result_data["start16"], "<i4")[:last])


def test_cancel_keeps_what_is_computed_and_clear_forgets_it(widget, sent, monkeypatch):
    from ppl_widget.scoring.analyses import explain as explain_module

    real = explain_module.occlusion_steps

    def slow(*args, **kwargs):  # one batch of units at a time, slowly
        for step in real(*args, **kwargs):
            time.sleep(0.2)
            yield step

    monkeypatch.setattr(explain_module, "occlusion_steps", slow)
    w = widget
    last = len(w.result) - 1
    w._on_front_end_message(w, {"type": P.MSG_EXPLAIN, "token": last, "request": 2}, [])
    wait_for(lambda: any(m["type"] == P.MSG_EXPLAIN_PART and m["index"]
                         for m in explain_messages(sent)))
    w._on_front_end_message(w, {"type": P.MSG_EXPLAIN_CANCEL}, [])
    expl = w._explainer.wait()
    assert explain_messages(sent)[-1]["status"] == "cancelled"
    data = w.explanation
    assert data["status"] == "cancelled" and data["curve"] is None
    assert 0 < data["done"] < data["total"] == len(data["delta_nats"])
    computed = [d for d in data["delta_nats"] if d is not None]
    assert len(computed) == data["done"] == expl.done
    w._on_front_end_message(w, {"type": P.MSG_EXPLAIN_CLEAR}, [])
    assert w.explanation is None
    assert w.result is not None and not w.result.partial  # nothing scored is lost


@pytest.mark.parametrize("message, rule", [
    ({"token": 0}, "no context"),  # the first token: read after the prefix alone
    ({"token": 10_000}, "out of range"),
    ({"token": "3"}, "whole number"),
    ({"token": 1, "word": 1}, "exactly one"),
    ({"token": 3, "method": "attention"}, "method must be one of"),
])
def test_a_bad_request_is_an_error_that_names_the_rule_and_loses_nothing(widget, sent,
                                                                        message, rule):
    w = widget
    before = w.result_data
    w._on_front_end_message(w, {"type": P.MSG_EXPLAIN, "request": 5, **message}, [])
    _quiet_wait(w)
    errors = [m for m in explain_messages(sent) if m["type"] == P.MSG_EXPLAIN_ERROR]
    assert len(errors) == 1 and errors[0]["request"] == 5
    assert rule in errors[0]["message"], errors[0]["message"]
    assert w.result_data is before and w.explanation is None


def _quiet_wait(w) -> None:
    try:
        w._explainer.wait()
    except ValueError:
        pass


def test_rescoring_or_a_new_text_clears_the_explanation(widget):
    w = widget
    w.explain(token=len(w.result) - 1, method="gradient")
    assert w.explanation is not None
    w.text = TEXT + " More."
    assert w.explanation is None
    w.wait()


def test_an_explanation_travels_with_the_exported_page(widget, tiny_gpt2):
    w = widget
    expl = w.explain(token=len(w.result) - 1, method="gradient")
    state = json.loads(_state_json(w.to_html()))
    shown = state["state"]["explanation"]
    assert shown["target"]["token"] == len(w.result) - 1 and shown["method"] == "gradient"
    np.testing.assert_allclose(shown["delta_nats"], expl.delta_nats, rtol=1e-6)
    # computed with the API, shown in the widget and in a result's page
    api = explain(TEXT, tiny_gpt2, word=3, max_length=w.max_length, stride=w.stride)
    w.show_explanation(api)
    assert w.explanation["target"]["word"] == 3 and w.explanation["curve"] is None
    page_state = result_state(w.result, explanation=api)
    assert page_state["explanation"]["units"]["text"] == list(api.units)
    split_buffers(page_state)
    other = explain("Another text, not this one.", tiny_gpt2, token=3, unit="token")
    with pytest.raises(ValueError, match="own text"):
        w.show_explanation(other)
    with pytest.raises(ValueError, match="own text"):
        result_state(w.result, explanation=other)


def _state_json(page: str) -> str:
    start = page.index('<script type="application/json" class="pplw-state">')
    body = page[page.index(">", start) + 1:]
    return body[:body.index("</script>")]
