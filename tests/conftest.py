"""Shared fixtures: tiny randomly initialised models (GPT-2 and Llama shapes)
with small tokenizers trained here, so tests need no network and no hub."""

from __future__ import annotations

import os
import sys

import pytest

# tests/ on the path as pytest puts it there: a notebook's kernel imports this file as
# tests.conftest (for _tiny), and run_plan must import there too
if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
# the run's "python3" kernels, forked from one process that imported torch once
import kernel_fork  # noqa: E402

# whether this run deselected tests: tests/collect_probe.py then collects in a process of
# its own instead of reading this session's tests
from collect_probe import pytest_deselected  # noqa: E402, F401

# how the suite shares out over pytest-xdist's workers (scripts/test.sh runs two)
from run_plan import (  # noqa: E402, F401
    pytest_collection_modifyitems,
    pytest_runtest_logfinish,
    pytest_runtest_logstart,
    pytest_runtest_setup,
    pytest_xdist_make_scheduler,
)
from run_plan import pytest_configure as _plan_configure  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    _plan_configure(config)
    kernel_fork.start()  # here: before pytest-xdist starts its workers, which share it


def pytest_unconfigure(config: pytest.Config) -> None:
    kernel_fork.stop()


def pytest_collection_finish(session: pytest.Session) -> None:
    """What the collection imported (torch, transformers, every test module) out of the
    cyclic collector's reach: its full collections walked all of it each time (five test
    files in one process: 20 full collections, 6.1 -> 3.3 s; docs/testing.md, issue 48).
    What tests make afterwards is collected as before."""
    import gc

    gc.freeze()


# no test may reach a hub: fail fast instead of retrying for half a minute
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# the reading-time data: the shared copy beside the repository (tests/meco_data.py), for
# the tests and the notebooks they run (their kernels inherit it); nothing is downloaded
from meco_data import ENV as _DATA_ENV  # noqa: E402
from meco_data import SHARED as _SHARED_DATA  # noqa: E402

if not os.environ.get(_DATA_ENV) and _SHARED_DATA.is_dir():
    os.environ[_DATA_ENV] = str(_SHARED_DATA)

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Perplexity is the exponential of the average negative log-likelihood.",
    "Sliding windows score every token exactly once, with as much context as fits.",
    "Surprisal is minus the log probability of a token given its context.",
    "Les modèles de langue prédisent le mot suivant. 日本語のテキストも少し。",
] * 20


def _byte_level_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>",
                                   eos_token="<|endoftext|>")


def _metaspace_tokenizer():
    """Sentencepiece-like: '▁' marks spaces, unknown characters become <unk>."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<s>", "</s>"])
    tok.train_from_iterator(CORPUS, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>")


def _tiny(kind: str):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    from ppl_widget import load_model

    torch.manual_seed(0)
    if kind == "gpt2":
        tok = _byte_level_tokenizer()
        cfg = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=2, n_head=2,
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
        model = GPT2LMHeadModel(cfg)
    else:
        tok = _metaspace_tokenizer()
        cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                          max_position_embeddings=64, bos_token_id=tok.bos_token_id,
                          eos_token_id=tok.eos_token_id, tie_word_embeddings=False)
        model = LlamaForCausalLM(cfg)
    # random init gives near-uniform predictions; sharpen them so ranks and top-k differ
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(40.0)
    return load_model((model, tok), device="cpu", dtype="float32")


@pytest.fixture(scope="session")
def tiny_gpt2():
    return _tiny("gpt2")


@pytest.fixture(scope="session")
def tiny_gpt2_dir(tmp_path_factory, tiny_gpt2):
    """``tiny_gpt2`` saved as a model directory (what the command line loads)."""
    path = tmp_path_factory.mktemp("tiny_gpt2")
    tiny_gpt2.model.save_pretrained(path)
    tiny_gpt2.tokenizer.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="session")
def tiny_llama():
    return _tiny("llama")


@pytest.fixture(scope="session", params=["gpt2", "llama"])
def tiny_lm(request, tiny_gpt2, tiny_llama):
    return {"gpt2": tiny_gpt2, "llama": tiny_llama}[request.param]


@pytest.fixture(scope="session")
def default_lm():
    pytest.importorskip("torch")
    from ppl_widget import load_model
    from ppl_widget.scoring.kinds.models import ModelLoadError

    try:
        return load_model(None, device="cpu")
    except ModelLoadError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(exc))


LONG_TEXT = " ".join(CORPUS[:5]) * 3


@pytest.fixture
def sent(monkeypatch):
    """Every (content, buffers) a PerplexityWidget sends, in order (no front end needed)."""
    import threading

    from ppl_widget.views.widget import PerplexityWidget

    log: list[tuple[dict, list]] = []
    lock = threading.Lock()

    def record(self, content, buffers=None):
        with lock:
            log.append((content, list(buffers or [])))

    monkeypatch.setattr(PerplexityWidget, "send", record)
    return log
