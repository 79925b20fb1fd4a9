"""llama.cpp's tokenizer test suite (``models/ggml-vocab-*.gguf`` with ``.inp``/``.out``):
where it is, and its cases.  scripts/setup.sh puts it in ``suite_dir()``; the expected
ids in each ``.out`` come from the model's own Hugging Face tokenizer
(llama.cpp's convert_hf_to_gguf_update.py), and llama.cpp's tests check it against them."""

from __future__ import annotations

import os
from pathlib import Path

#: The causal families of the suite (vocabularies whose tokenizer scoring can use).
FAMILIES = ("command-r", "deepseek-coder", "deepseek-llm", "falcon", "gemma-4", "gpt-2",
            "llama-bpe", "llama-spm", "mpt", "phi-3", "qwen2", "qwen35", "refact", "starcoder")
#: The line between two inputs in an ``.inp`` file.
SEPARATOR = "\n__ggml_vocab_test__\n"


def suite_dir() -> Path:
    """``$PPL_WIDGET_LLAMA_VOCAB``, else where scripts/test.sh extracts the suite: the
    package's cache folder (or, where an older set-up left it and test.sh has not moved it
    yet, ``~/.cache/ppl-widget``)."""
    from ppl_widget.scoring.kinds.model_cache import cache_root

    folder = os.environ.get("PPL_WIDGET_LLAMA_VOCAB")
    if folder:
        return Path(folder)
    here = cache_root() / "llama-cpp-vocab"
    old = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ppl-widget" \
        / "llama-cpp-vocab"
    return old if not here.exists() and old.exists() else here


def read_cases(folder: Path, family: str) -> list[tuple[str, list[int]]]:
    """(input text, expected ids) of one family, in file order (read as llama.cpp's
    test-tokenizer-0 reads them: inputs split on the separator, one output line each)."""
    with open(folder / f"ggml-vocab-{family}.gguf.inp", encoding="utf-8", newline="") as f:
        raw = f.read()  # byte for byte: some inputs hold "\r"
    texts = raw.split(SEPARATOR)
    if texts and texts[-1] == "":
        texts.pop()  # the file ends with a separator
    lines = (folder / f"ggml-vocab-{family}.gguf.out").read_text(encoding="utf-8").splitlines()
    if len(texts) != len(lines):
        raise ValueError(f"{family}: {len(texts)} inputs but {len(lines)} output lines")
    return [(text, [int(t) for t in line.split()]) for text, line in zip(texts, lines, strict=True)]
