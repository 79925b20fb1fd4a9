"""A masked LM's result through every view, on a tiny random BertForMaskedLM (WordPiece
tokenizer trained on the test's text; nothing downloaded): the levels, top-k and the
tooltip's data, streaming and cancel, the widget and its export, compare() with a causal
model per word and per byte, minimal pairs (BLiMP's criterion on PLL, as Salazar et al.
report it), word lists, a corpus, the CLI, and explain(): occlusion re-scores the target's
PLL with a unit deleted (checked against the model run by hand in float64); gradient and
the context curve are a clear error."""

from __future__ import annotations

import json
import re
import threading

import numpy as np
import pytest
from float64 import TINY_NATS, assert_within, float64_copy
from masked_models import CORPUS, build_masked

from ppl_widget.core.explain.target import ExplainError
from ppl_widget.core.levels import assign_tokens, word_spans
from ppl_widget.scoring.runner.scorer import score, stream

TEXT = CORPUS.splitlines()[0]  # 70+ tokens: two windows of the 64-position model
PAIRS = [("The dogs were sleeping.", "The dogs was sleeping."),
         ("The children played tag nearby.", "The children plays tag nearby.")]


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    from ppl_widget.scoring.kinds.models import load_model

    path = build_masked("bert", tmp_path_factory.mktemp("masked_views") / "bert")
    return load_model(str(path), device="cpu", dtype="float32")


@pytest.fixture(scope="module")
def result(bert):
    return score(TEXT, bert, top_k=3)


def test_levels_add_up_and_are_named_pseudo(result):
    assert result.settings["objective"] == "pll"
    assert len(result.unscored_token_ids) == 0  # every text token scored, the first too
    total = result.metrics()["total_nll"]
    for level in ("word", "sentence"):
        frame = result.to_frame(level)
        outside = sum(t["surprisal"] for t in frame.attrs["outside"])
        assert frame["surprisal"].sum() + outside == pytest.approx(total, rel=1e-9)
        assert frame.attrs["measure"] == "pseudo-surprisal"
        assert frame.columns.name.startswith("pseudo-surprisal (PLL, within-word l2r")
    assert result.metrics()["perplexity_label"] == "pseudo-perplexity"


def test_top_k_are_the_masked_positions_predictions(bert, result):
    # the alternatives are the distribution at the masked position: the target's own
    # probability sits among them at its rank, and they are sorted
    probs = result.topk_probs
    assert (np.diff(probs, axis=1) <= 1e-7).all()
    for i in np.flatnonzero(result.rank <= 3):
        k = int(result.rank[i]) - 1
        assert result.topk_ids[i, k] == result.token_ids[i]
        assert probs[i, k] == pytest.approx(np.exp(-result.surprisal[i]), rel=1e-4)
    from ppl_widget.views import protocol as P

    data = P.result_data(result)
    assert data["metrics"]["objective"] == "pll"
    settings = P.result_settings(result)
    assert settings["objective"] == "pll" and settings["pll_metric"] == "within_word_l2r"


def test_stream_and_cancel_keep_the_pll_labels(bert):
    items = list(stream(TEXT, bert, batch_size=4))
    assert len(items) > 1 and items[-1].finished
    assert items[-1].result.settings["objective"] == "pll"
    cancel = threading.Event()
    seen = []
    for item in stream(TEXT, bert, batch_size=4, cancel=cancel):
        seen.append(item)
        cancel.set()
    last = seen[-1].result
    assert last.partial and 0 < len(last) < len(items[-1].result)
    assert "partial" in repr(last) and "pseudo-perplexity" in repr(last)
    # batches of four in both runs: the same windows in the same batches, bit for bit
    np.testing.assert_array_equal(last.surprisal, items[-1].result.surprisal[:len(last)])


def test_widget_and_its_export_on_a_masked_model(bert):
    from ppl_widget.views.widget import PerplexityWidget

    w = PerplexityWidget(TEXT, bert, pll_metric="original", top_k=3)
    res = w.wait(timeout=120)
    assert w.status == "done" and res.settings["pll_metric"] == "original"
    assert w.settings["objective"] == "pll" and w.settings["pll_metric"] == "original"
    assert w.result_data["metrics"]["objective"] == "pll"
    page = w.to_html()
    assert "pseudo-perplexity (PLL, original (Salazar et al. 2020))" in page
    # the widget's explain() honours the metric the widget scored with
    ex = w.explain(word=3)
    assert ex.settings["pll_metric"] == "original"
    w.close()


def test_compare_a_masked_with_a_causal_model_per_word_and_byte(bert, tiny_gpt2):
    from ppl_widget.scoring.analyses.compare import compare

    cmp = compare(TEXT, [bert, tiny_gpt2], labels=["bert", "gpt2"])
    table = cmp.table()
    assert list(table["measure"]) == ["pseudo-perplexity", "perplexity"]
    assert table["n_words"].nunique() == 1 and table["n_bytes"].nunique() == 1
    assert "token_ppl" in table.attrs["not_comparable"]  # per token: not comparable
    assert "pseudo-perplexity" in table.attrs["note"]
    words = cmp.words()
    assert words.attrs["measures"] == {"bert": "pseudo-surprisal", "gpt2": "surprisal"}
    for k, label in enumerate(cmp.labels):
        outside = sum(t["surprisal"] for t in words.attrs["outside"][label])
        assert words[f"surprisal:{label}"].sum() + outside == pytest.approx(
            cmp.results[k].metrics()["total_nll"], rel=1e-9)


def test_minimal_pairs_by_pll(bert, tiny_gpt2):
    from ppl_widget.scoring.analyses.pairs import score_pairs

    for metric in ("original", "within_word_l2r"):
        frame = score_pairs(PAIRS, bert, pll_metric=metric)
        for side in ("good", "bad"):
            want = [score(t, bert, pll_metric=metric).metrics()["total_nll"]
                    for t in frame[side]]
            np.testing.assert_allclose(frame[f"{side}_nll"], want, rtol=1e-9)
        # Salazar et al.: the sentence with the higher PLL (lower -PLL) is the model's pick
        assert list(frame["correct"]) == list(frame["bad_nll"] > frame["good_nll"])
        assert frame.attrs["objective"] == "pll" and frame.attrs["pll_metric"] == metric
    from ppl_widget.views.pairs_view import show_pairs

    view = show_pairs(frame, bert)  # the pieces scored as the frame was: its metric
    assert view.objective == {"objective": "pll", "pll_metric": "within_word_l2r"}
    want = score(PAIRS[0][0], bert).surprisal
    got = [v for _, v in view.pairs[0]["good"]["pieces"] if v is not None]
    np.testing.assert_array_equal(got, want)  # the pieces are score()'s own: bit for bit
    with pytest.raises(ValueError, match="pll_metric= is for masked language models"):
        score_pairs(PAIRS, tiny_gpt2, pll_metric="original")
    with pytest.raises(ValueError, match="pll_metric must be one of"):
        score_pairs(PAIRS, bert, pll_metric="l2r")


def test_word_lists_and_a_corpus(bert, tmp_path):
    from ppl_widget.scoring.analyses.words import score_words
    from ppl_widget.scoring.corpus.run import score_corpus

    words = TEXT.split()[:8]
    frame = score_words(words, bert, pll_metric="original")
    assert frame.attrs["measure"] == "pseudo-surprisal"
    want = score(" ".join(words), bert, pll_metric="original")
    assert frame["surprisal"].sum() == pytest.approx(want.metrics()["total_nll"], rel=1e-9)
    docs = {"a": TEXT, "b": CORPUS.splitlines()[1][:120]}
    out = score_corpus(docs, tmp_path / "c.parquet", bert, pll_metric="original",
                       progress=False)
    assert out.settings["objective"] == "pll" and out.settings["pll_metric"] == "original"
    assert out.metrics()["perplexity_label"] == "pseudo-perplexity"
    for doc_id, text in docs.items():
        got, ref = out[doc_id], score(text, bert, pll_metric="original")
        assert got.settings["objective"] == "pll"
        # two float32 paths batched differently: each is held to the float64 brute force
        # within 1e-4 (test_masked_scoring), so that is all they owe each other on any CPU
        np.testing.assert_allclose(got.surprisal, ref.surprisal, atol=1e-4)


def test_cli_score_and_pairs_with_pll_metric(bert, tmp_path, capsys):
    from ppl_widget.cli import main

    model_dir = bert.name
    (tmp_path / "t.txt").write_text(TEXT, encoding="utf-8")
    code = main(["score", str(tmp_path / "t.txt"), "--model", model_dir, "--device", "cpu",
                 "--pll-metric", "original", "--json", str(tmp_path / "r.json")])
    text = capsys.readouterr().out
    assert code == 0
    assert text.startswith("Pseudo-perplexity (PLL, original (Salazar et al. 2020))")
    assert re.search(r"pseudo-PPL / word\s+[\d.,]+", text)
    saved = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert saved["settings"]["pll_metric"] == "original"
    csv = tmp_path / "p.csv"
    csv.write_text("good,bad\n" + "\n".join(f"{g},{b}" for g, b in PAIRS) + "\n")
    assert main(["pairs", str(csv), "--model", model_dir, "--device", "cpu",
                 "--pll-metric", "original"]) == 0
    assert "the good sentence has the higher pseudo-log-likelihood" in capsys.readouterr().out


def _by_hand(bert, ids: list[int], t: int, stop: int) -> float:
    """Pseudo-surprisal of ``ids[t]`` with ``ids[t:stop]`` masked, the model in float64
    between [CLS] and [SEP]: the definition, computed apart from the kind's forward."""
    import torch

    tok = bert.tokenizer
    row = [tok.cls_token_id, *ids, tok.sep_token_id]
    for m in range(t, stop):
        row[1 + m] = tok.mask_token_id
    with torch.no_grad():  # the one float64 copy per process (tests/float64.py)
        logits = float64_copy(bert)(input_ids=torch.tensor([row])).logits[0, 1 + t]
    return float(-torch.log_softmax(logits, -1)[ids[t]])


def test_explain_occlusion_rescores_the_targets_pll_with_a_unit_deleted(bert):
    from ppl_widget.scoring.analyses.explain import explain

    text = "the dogs were sleeping peacefully under the old oak tree"
    res = score(text, bert, pll_metric="original")
    ex = explain(text, bert, word=3, pll_metric="original")  # "sleeping"
    frame = res.to_frame("word")
    # both sides are context: words before and after the target are units
    assert ex.units[0] == "the" and ex.units[-1] == "tree" and "sleeping" not in ex.units
    assert ex.settings["objective"] == "pll"
    ids = list(res.token_ids)
    owner = assign_tokens(text, res.offsets, word_spans(text), res.is_eos)  # the levels' rule
    target = np.flatnonzero(owner == 3)
    # the target's surprisal: explain()'s own forward and score()'s, each within the float32
    # tolerance of the float64 definition per token (not held to each other)
    want = sum(_by_hand(bert, ids, int(t), int(t) + 1) for t in target)
    assert_within([ex.target_surprisal_nats, frame["surprisal"].iloc[3]], want, TINY_NATS,
                  len(target))
    for u in (ex.units.index("dogs"), ex.units.index("oak")):
        word = frame.index[frame["text"] == ex.units[u]][0]
        kept = [i for i in range(len(ids)) if owner[i] != word]
        edited = [ids[i] for i in kept]
        want = sum(_by_hand(bert, edited, kept.index(int(t)), kept.index(int(t)) + 1)
                   for t in target)
        assert ex.delta_nats[u] == pytest.approx(want - ex.target_surprisal_nats, abs=1e-4)
    # within_word_l2r: the word's later tokens masked with each of its tokens
    l2r = explain(text, bert, word=3)
    ref = score(text, bert).to_frame("word")["surprisal"].iloc[3]
    want = sum(_by_hand(bert, ids, int(t), int(target[-1]) + 1) for t in target)
    assert_within([l2r.target_surprisal_nats, ref], want, TINY_NATS, len(target))
    assert res.explain(word=3, lm=bert).target_surprisal_nats == pytest.approx(
        ex.target_surprisal_nats, abs=1e-9)  # a result's settings pass back, metric too


def test_gradient_and_context_curve_name_their_rule(bert):
    from ppl_widget.scoring.analyses.explain import context_curve, explain

    with pytest.raises(ExplainError, match=r"method='gradient' is for causal models.*"
                                           r"use explain\(method='occlusion'\)"):
        explain(TEXT, bert, word=3, method="gradient")
    with pytest.raises(ExplainError, match=r"context_curve\(\) is for causal models"):
        context_curve(TEXT, bert, word=3)


def test_divergence_names_why_a_masked_or_seq2seq_model_has_no_next_token_distribution(
        bert, tiny_gpt2):
    from ppl_widget import divergence

    with pytest.raises(TypeError, match=r"causal models' next-token.*a masked model predicts "
                                        r"each token from both sides"):
        divergence(TEXT, tiny_gpt2, bert)
