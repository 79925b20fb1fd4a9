"""bfloat16 on a CPU: the faster of torch's own bf16 products and float32 products from
the bf16 weights, measured once per CPU (a fake clock here) and cached."""

from __future__ import annotations

import copy
import json
import warnings

import pytest

pytest.importorskip("torch")

from ppl_widget import load_model, score  # noqa: E402
from ppl_widget.scoring.kinds.hf import bf16_products  # noqa: E402
from ppl_widget.scoring.kinds.hf.bf16_products import (  # noqa: E402
    CACHE_FILE,
    ENV,
    choose_bf16_products,
    cpu_key,
    typical_weight,
)
from ppl_widget.scoring.kinds.model_errors import ModelSettingError  # noqa: E402

TEXT = "The keeper climbed the stairs each evening to light the lamp."


class FakeClock:
    """A clock that only products move: each fake product adds its seconds."""

    def __init__(self) -> None:
        self.now = 0.0
        self.calls = {"native": 0, "float32": 0}

    def __call__(self) -> float:
        return self.now

    def product(self, name: str, seconds: float):
        def run(x, weight):
            self.calls[name] += 1
            self.now += seconds
        return run


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache folder and no override: the file the choices go to."""
    monkeypatch.setenv("PPL_WIDGET_CACHE", str(tmp_path))
    monkeypatch.delenv(ENV, raising=False)
    return tmp_path / CACHE_FILE


def fake_speeds(monkeypatch, native: float, float32: float) -> FakeClock:
    clock = FakeClock()
    monkeypatch.setattr(bf16_products, "clock", clock)
    monkeypatch.setitem(bf16_products.PRODUCTS, "native", clock.product("native", native))
    monkeypatch.setitem(bf16_products.PRODUCTS, "float32", clock.product("float32", float32))
    return clock


def bf16_load(tiny_llama):
    pair = (copy.deepcopy(tiny_llama.model), tiny_llama.tokenizer)
    return load_model(pair, device="cpu", dtype="bfloat16")


def marked(lm) -> list[bool]:
    """Per plain-or-upcast linear layer: does it multiply in float32?"""
    import torch

    return [getattr(m, "fp32_products", False) for m in lm.model.modules()
            if isinstance(m, torch.nn.Linear)]


@pytest.mark.parametrize(("native", "float32", "chosen"),
                         [(3.0, 1.0, "float32"), (1.0, 3.0, "native")])
def test_the_faster_path_is_chosen(tiny_llama, cache, monkeypatch, native, float32, chosen):
    clock = fake_speeds(monkeypatch, native, float32)
    lm = bf16_load(tiny_llama)
    assert lm.bf16_products == chosen and str(lm.dtype) == "torch.bfloat16"
    assert set(marked(lm)) == {chosen == "float32"}  # every linear layer, or none
    # one warm-up and the timed rounds of each, taking turns
    assert clock.calls == {"native": 1 + bf16_products.REPEATS,
                           "float32": 1 + bf16_products.REPEATS}
    res = score(TEXT, lm, max_length=16)
    assert res.settings["dtype"] == "bfloat16" and res.settings["bf16_products"] == chosen
    assert f"{chosen} products" in repr(lm)


def test_the_fastest_run_of_each_counts(tiny_llama, cache, monkeypatch):
    """A slow spell in one run (the shared machine) does not decide: each path's best."""
    clock = FakeClock()
    times = {"native": iter([9.0, 9.0, 1.0, 9.0]), "float32": iter([2.0, 2.0, 2.0, 2.0])}

    def product(name):
        def run(x, weight):
            clock.now += next(times[name])
        return run

    monkeypatch.setattr(bf16_products, "clock", clock)
    for name in times:
        monkeypatch.setitem(bf16_products.PRODUCTS, name, product(name))
    choice = choose_bf16_products(tiny_llama.model)
    assert choice.path == "native" and choice.seconds == {"native": 1.0, "float32": 2.0}


def test_the_cache_is_read_on_the_second_load(tiny_llama, cache, monkeypatch):
    import torch

    clock = fake_speeds(monkeypatch, 3.0, 1.0)
    assert bf16_load(tiny_llama).bf16_products == "float32"
    entries = json.loads(cache.read_text())
    weight = typical_weight(tiny_llama.model)
    key = cpu_key(torch.get_num_threads(), tuple(weight.shape))
    assert list(entries) == [key]
    assert entries[key]["path"] == "float32" and entries[key]["seconds"] == {
        "native": 3.0, "float32": 1.0}
    measured = dict(clock.calls)
    # now the other path would measure faster: the cached choice stands, nothing is timed
    fake_speeds(monkeypatch, 1.0, 3.0)
    again = bf16_load(tiny_llama)
    assert again.bf16_products == "float32" and all(marked(again))
    assert bf16_products.clock.calls == {"native": 0, "float32": 0} and measured["native"] > 0
    assert choose_bf16_products(again.model).how == "cached"
    # another key (a different thread count) is measured afresh, beside the first
    monkeypatch.setattr(bf16_products, "cpu_key", lambda threads, shape: "other")
    assert bf16_load(tiny_llama).bf16_products == "native"
    assert set(json.loads(cache.read_text())) == {key, "other"}


def test_the_key_names_the_cpu_its_bf16_flags_torch_threads_and_shape(tmp_path, monkeypatch):
    import torch

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Gold 6338\n"
                    "flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_tile amx_bf16\n\n"
                    "processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Gold 6338\n")
    read = bf16_products._cpu_info
    monkeypatch.setattr(bf16_products, "_cpu_info", lambda: read(info))
    key = cpu_key(8, (1536, 576))
    assert key == (f"Intel(R) Xeon(R) Gold 6338 | avx512_bf16,amx_bf16,amx_tile | torch "
                   f"{torch.__version__} | 8 threads | 256x576 @ 576x1536")
    assert cpu_key(4, (1536, 576)) != key and cpu_key(8, (64, 32)) != key
    info.write_text("model name\t: AMD EPYC 7B13\nflags\t: fpu sse2 avx2 fma\n")
    assert cpu_key(8, (1536, 576)).startswith("AMD EPYC 7B13 | no bf16 flags | ")


def test_the_override_forces_either_path_without_measuring(tiny_llama, cache, monkeypatch):
    clock = fake_speeds(monkeypatch, 3.0, 1.0)  # float32 would win a measurement
    monkeypatch.setenv(ENV, "native")
    lm = bf16_load(tiny_llama)
    assert lm.bf16_products == "native" and not any(marked(lm))
    clock = fake_speeds(monkeypatch, 1.0, 3.0)  # native would win
    monkeypatch.setenv(ENV, "float32")
    lm = bf16_load(tiny_llama)
    assert lm.bf16_products == "float32" and all(marked(lm))
    assert clock.calls == {"native": 0, "float32": 0} and not cache.exists()
    assert score(TEXT, lm, max_length=16).settings["bf16_products"] == "float32"
    monkeypatch.setenv(ENV, "fast")
    with pytest.raises(ModelSettingError, match=f"\\${ENV} must be 'auto', 'native' or "
                       "'float32', got 'fast'"):
        bf16_load(tiny_llama)


def test_float32_and_gpu_free_loads_state_no_products(tiny_llama, cache, monkeypatch):
    clock = fake_speeds(monkeypatch, 1.0, 1.0)
    res = score(TEXT, tiny_llama, max_length=16)
    assert res.settings["dtype"] == "float32" and "bf16_products" not in res.settings
    assert tiny_llama.bf16_products is None and clock.calls["native"] == 0


def test_numbers_stay_within_bf16_rounding_on_both_paths(tiny_llama, cache, monkeypatch):
    """Real products: each path's surprisal sits as far from float32 as bf16 allows, and
    the two bf16 paths as close to each other; a float32 product rounds once to bf16."""
    import numpy as np
    import torch

    monkeypatch.setenv(ENV, "native")
    native = bf16_load(tiny_llama)
    monkeypatch.setenv(ENV, "float32")
    upcast = bf16_load(tiny_llama)
    fp32 = score(TEXT, tiny_llama, max_length=16)
    ours, theirs = score(TEXT, upcast, max_length=16), score(TEXT, native, max_length=16)
    scale = np.abs(theirs.surprisal - fp32.surprisal).max() + 1e-3
    assert np.abs(ours.surprisal - fp32.surprisal).max() < 3 * scale
    assert np.abs(ours.surprisal - theirs.surprisal).max() < 3 * scale
    layer = next(m for m in upcast.model.modules() if getattr(m, "fp32_products", False))
    assert layer.weight.dtype == torch.bfloat16  # the weights stay bf16
    x = torch.randn(3, layer.in_features).to(torch.bfloat16)
    exact = x.double() @ layer.weight.double().T
    assert layer(x).dtype == torch.bfloat16
    torch.testing.assert_close(layer(x).double(), exact, rtol=2**-8, atol=1e-6)


def test_the_timed_product_is_a_body_layer_cut_to_a_fraction_of_a_second(tiny_llama,
                                                                         monkeypatch):
    model = tiny_llama.model
    up = model.model.layers[0].mlp.up_proj.weight  # 64 x 32: the largest body layer
    assert typical_weight(model).shape == up.shape  # not the LM head (vocabulary rows)
    monkeypatch.setattr(bf16_products, "MAX_MACS", bf16_products.POSITIONS * 32 * 10)
    assert typical_weight(model).shape == (10, 32)


@pytest.mark.parametrize(("native", "warns"), [(3.0, True), (1.1, False)])
def test_a_bf16_model_given_as_it_is_warns_where_float32_is_much_faster(
        tiny_llama, cache, monkeypatch, native, warns):
    import torch

    fake_speeds(monkeypatch, native, 1.0)
    as_given = (copy.deepcopy(tiny_llama.model).to(torch.bfloat16), tiny_llama.tokenizer)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        kept = load_model(as_given)
    said = [str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)]
    assert bool(said) == warns
    if warns:
        assert "measured 3.0x slower" in said[0] and "dtype='bfloat16'" in said[0]
    assert kept.bf16_products == "native" and not any(marked(kept))
