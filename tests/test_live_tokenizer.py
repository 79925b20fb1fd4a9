"""The live page's tokenizer (js/src/live/tokenizer.js, run by Node) gives the ids and
UTF-16 offsets Python's tokenizer gives, on our cases and llama.cpp's tokenizer test inputs
(tests/cases/browser_tokenizer.json), for the tokenizer.json each model saves: the tiny
byte-level and Metaspace ones, the default model's, and the default model's vocabulary
with other pre-tokenizers (digits apart, a Llama-3-style pattern, a prefix space)."""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

from ppl_widget.scoring.runner.encode import encode_many

ROOT = pathlib.Path(__file__).parents[1]
CASES = json.loads((ROOT / "tests/cases/browser_tokenizer.json").read_text(encoding="utf-8"))
TEXTS = CASES["texts"] + CASES["llama_cpp_texts"]
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?"
                  r"[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
              "use_regex": True}
PRE_TOKENIZERS = {
    "digits apart": {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True}, BYTE_LEVEL]},
    "llama-3 pattern": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": LLAMA3_PATTERN}, "behavior": "Isolated",
         "invert": False}, {**BYTE_LEVEL, "use_regex": False}]},
    "prefix space": {**BYTE_LEVEL, "add_prefix_space": True},
}
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="needs Node")


def utf16(text: str, offsets: np.ndarray) -> list[int]:
    """Python's code-point offsets as UTF-16 code units."""
    prefix = np.concatenate([[0], np.cumsum([1 + (ord(c) > 0xFFFF) for c in text])])
    return prefix[np.asarray(offsets, np.int64).reshape(-1)].astype(int).tolist()


def suite(name: str, tokenizer, folder: pathlib.Path) -> dict:
    path = folder / f"{name.replace(' ', '_')}.json"
    path.write_text(tokenizer.backend_tokenizer.to_str(), encoding="utf-8")
    encoded = encode_many(tokenizer, TEXTS)  # the scorer's own call
    rng = np.random.default_rng(0)
    decode_ids = sorted(set(rng.integers(0, len(tokenizer), 300).tolist()))
    return {"name": name, "tokenizer": str(path), "texts": TEXTS,
            "ids": [ids.tolist() for ids, _ in encoded],
            "offsets": [utf16(t, offs) for t, (_, offs) in zip(TEXTS, encoded, strict=True)],
            "decode_ids": decode_ids,
            "decoded": [tokenizer.decode([i]) for i in decode_ids]}


def with_pre_tokenizer(tokenizer, pre: dict):
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    spec["pre_tokenizer"] = pre
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(json.dumps(spec)))


def run_node(suites: list[dict], folder: pathlib.Path) -> list[dict]:
    cases = folder / "cases.json"
    cases.write_text(json.dumps(suites, ensure_ascii=False), encoding="utf-8")
    out = subprocess.run([NODE, str(ROOT / "tests/live_tokenizer_check.mjs"), str(cases)],
                         capture_output=True, text=True, check=True, timeout=300)
    return json.loads(out.stdout)


def check(report: list[dict]) -> None:
    for r in report:
        assert r["checked"] == len(TEXTS)
        first = r["mismatches"][:2]
        assert not r["mismatches"], (r["name"], len(r["mismatches"]), first)
        assert not r["decode_mismatches"], (r["name"], r["decode_mismatches"][:5])


def test_tiny_tokenizers(tiny_gpt2, tiny_llama, tmp_path):
    check(run_node([suite("tiny byte-level", tiny_gpt2.tokenizer, tmp_path),
                    suite("tiny metaspace", tiny_llama.tokenizer, tmp_path)], tmp_path))


@pytest.mark.default_model
def test_default_model_tokenizer(default_lm, tmp_path):
    tok = default_lm.tokenizer
    suites = [suite("default", tok, tmp_path)]
    suites += [suite(name, with_pre_tokenizer(tok, pre), tmp_path)
               for name, pre in PRE_TOKENIZERS.items()]
    check(run_node(suites, tmp_path))


def test_the_check_can_fail(tiny_gpt2, tmp_path):
    """A wrong expectation is reported, not passed over."""
    s = suite("tiny byte-level", tiny_gpt2.tokenizer, tmp_path)
    s["ids"][0] = s["ids"][0][::-1]
    s["offsets"][1] = [x + 1 for x in s["offsets"][1]]
    report = run_node([s], tmp_path)
    assert [m["text"] for m in report[0]["mismatches"]] == TEXTS[:2]
