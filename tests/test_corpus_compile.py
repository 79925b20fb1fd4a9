"""torch.compile in corpus runs (one batch shape for the compiled body, the "auto" rule)
and each rank's throughput report."""

from __future__ import annotations

import io

import numpy as np
import pytest
from conftest import CORPUS
from test_corpus import assert_same

from ppl_widget.scoring.corpus import compiled, score_corpus
from ppl_widget.scoring.corpus.compiled import CompiledBody, check_choice

# documents of many lengths: full windows, short last windows, documents shorter than one
DOCS = {f"d{i}": " ".join(CORPUS[i:i + 1 + i % 6]) for i in range(14)}
OPTS = dict(max_length=32, stride=16, batch_size=4, progress=False)


def test_compile_choice_is_checked():
    assert check_choice("auto") == "auto"
    assert check_choice("yes") is True and check_choice("no") is False
    assert check_choice(True) is True and check_choice(False) is False
    for bad in ("always", 1, None):
        with pytest.raises(ValueError, match="compile must be 'auto', True or False"):
            check_choice(bad)


def test_compile_needs_a_transformer_body(tmp_path):
    from ppl_widget.scoring.kinds.ngram.ngram import NGramModel

    lm = NGramModel(2, "add-k").fit(CORPUS)
    with pytest.raises(ValueError, match="compile=True compiles a transformers model's body"):
        score_corpus(DOCS, tmp_path / "out.parquet", lm, compile=True, progress=False)
    assert not (tmp_path / "out.parquet").exists()


class _Recorder:
    """Stands in for torch.compile: runs the eager body and records the shapes it gets."""

    def __init__(self, body):
        self.body, self.shapes = body, []

    def __call__(self, **kwargs):
        self.shapes.append(tuple(kwargs["input_ids"].shape))
        return self.body(**kwargs)


def test_compiled_body_gets_full_width_batches_and_the_same_results(tiny_lm, tmp_path,
                                                                    monkeypatch):
    made: list[_Recorder] = []

    def fake_compile(self):
        made.append(_Recorder(self.fwd.base))
        self.fwd.compiled, self.active = made[-1], True

    eager = score_corpus(DOCS, tmp_path / "eager.parquet", tiny_lm, compile=False, **OPTS)
    monkeypatch.setattr(CompiledBody, "_compile", fake_compile)
    comp = score_corpus(DOCS, tmp_path / "comp.parquet", tiny_lm, compile=True, **OPTS)
    assert len(made) == 1 and made[0].shapes
    # one width, max_length (as score() compiles for), two rows or more (the batch size is
    # dynamic; a single row would compile again)
    assert {w for _, w in made[0].shapes} == {32}
    assert min(r for r, _ in made[0].shapes) >= 2
    assert comp.throughput["compiled"].tolist() == [True]
    for k in DOCS:
        assert_same(comp[k], eager[k], tiny_lm)  # every per-token array, as test_corpus checks


def test_real_torch_compile_serves_score_and_corpus(tmp_path):
    """One real inductor compile on the CPU (~20-40 s), shared by score() and a corpus run:
    the path a GPU takes."""
    from conftest import _tiny
    from torch._dynamo.utils import counters

    from ppl_widget import score

    lm, plain = _tiny("gpt2"), _tiny("gpt2")  # same weights (seeded): one compiled, one not
    text = " ".join(CORPUS[:12])
    opts = dict(max_length=32, stride=16, batch_size=4)
    assert lm.compile() is lm and "compiled" in repr(lm)
    graphs = counters["stats"]["unique_graphs"]
    a, b = score(text, plain, **opts), score(text, lm, **opts)
    assert counters["stats"]["unique_graphs"] - graphs == 1  # one compile for all batch sizes
    np.testing.assert_allclose(a.surprisal, b.surprisal, atol=1e-4, rtol=0)
    np.testing.assert_array_equal(a.rank, b.rank)
    eager = score_corpus(DOCS, tmp_path / "eager.parquet", plain, compile=False, **OPTS)
    comp = score_corpus(DOCS, tmp_path / "comp.parquet", lm, **OPTS)  # "auto": the user's
    assert comp.throughput["compiled"].tolist() == [True]
    assert counters["stats"]["unique_graphs"] - graphs == 1  # the corpus reused it
    for k in DOCS:
        np.testing.assert_allclose(eager[k].surprisal, comp[k].surprisal, atol=1e-4, rtol=0)
    off = score_corpus(DOCS, tmp_path / "off.parquet", lm, compile=False, **OPTS)
    assert off.throughput["compiled"].tolist() == [False]


class _Fwd:
    def __init__(self, cuda: bool):
        self.cuda, self.base = cuda, object()
        self.compiled = self.full_width = None


class _Lm:
    compiled_body = None


@pytest.mark.parametrize("cuda, tokens_left, share, expect", [
    (True, 10_000_000, 1.0, False),  # 100 s left: less than a compile saves back
    (True, 20_000_000, 1.0, True),   # 200 s of full batches left: pays
    (True, 20_000_000, 0.5, False),  # half of it in short tails the compiled body skips
    (True, 1_000_000, 1.0, False),   # 10 s left: a 30 s compile does not pay
    (False, 10**9, 1.0, False),      # never on a CPU
])
def test_auto_compiles_when_the_rest_of_the_run_pays(monkeypatch, cuda, tokens_left, share,
                                                     expect):
    monkeypatch.setattr(CompiledBody, "_compile",
                        lambda self: setattr(self, "active", True))
    body = CompiledBody(_Lm(), _Fwd(cuda), "auto", 1024)
    assert body.undecided
    # measured: 1 M tokens in 10 s (100,000 tokens/s)
    rest = tokens_left * share / 100_000
    assert (rest > compiled.COMPILE_PAYS_AFTER_S and cuda) is expect  # the table's arithmetic
    assert body.decide(10.0, 1_000_000, tokens_left, share) is expect
    assert not body.undecided  # decided once
    assert body.decide(10.0, 1_000_000, 10**12, 1.0) is body.active


def test_throughput_report(tiny_gpt2, tmp_path):
    buf = io.StringIO()
    res = score_corpus(DOCS, tmp_path / "out.parquet", tiny_gpt2, max_length=32, stride=16,
                       batch_size=4, progress=buf)
    t = res.throughput
    assert len(t) == 1 and t["rank"][0] == 0 and not t["compiled"][0]
    assert t["documents"][0] == len(DOCS)
    assert t["tokens"][0] == sum(len(r) for r in res.values())
    assert t["flops"][0] > 0 and t["peak_tflops"][0] > 0
    assert 0 < t["percent_of_peak"][0] < 100
    assert t["tokens_per_s"][0] == pytest.approx(t["tokens"][0] / t["seconds"][0])
    last = buf.getvalue().strip().splitlines()[-1]
    assert last.startswith(f"scored {len(DOCS)} documents, {t['tokens'][0]:,} tokens in ")
    assert "% of the" in last and "float32 matrix-product peak measured there" in last


def test_throughput_of_a_model_kind_without_a_flop_count(tmp_path):
    from ppl_widget.scoring.kinds.ngram.ngram import NGramModel

    lm = NGramModel(2, "add-k").fit(CORPUS)
    buf = io.StringIO()
    res = score_corpus(DOCS, tmp_path / "out.parquet", lm, progress=buf)
    t = res.throughput
    assert t["tokens"][0] == sum(len(r) for r in res.values()) > 0
    assert np.isnan(t["percent_of_peak"][0])
    assert "tokens/s" in buf.getvalue() and "% of the" not in buf.getvalue()
