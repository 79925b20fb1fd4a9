"""Record the token ids llama.cpp's own tokenizer gives on a few of our texts, for
tests/test_gguf_tokenizer.py to compare the GGUF tokenizer with, id for id.

    python scripts/record_llama_tokens.py path/to/llama-tokenize [model.gguf]

With ``PPL_WIDGET_LLAMA_VOCAB`` (or the default folder of scripts/setup.sh) holding
llama.cpp's vocabulary test suite, its inputs are recorded too (``suite_*``): the
tokens llama.cpp gives the default model on the texts every family is tested with.

Writes tests/llama_cpp_tokens.json: each text (kept in the file, so later edits of
README.md change nothing) and llama-tokenize's ids for it, without BOS: ``ids`` with
special-token strings kept as text (what the scorer asks of a tokenizer), and
``ids_parse_special`` with them parsed.  Default model: the embedded one.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "llama_cpp_tokens.json"
#: characters of each repository text: enough for every kind of token, a small fixture
TEXT_CHARS = 3000


def our_texts() -> dict[str, str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    docs = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    code = (ROOT / "ppl_widget" / "scoring" / "encode.py").read_text(encoding="utf-8")
    return {
        "readme": readme[:TEXT_CHARS],
        "docs_architecture": docs[:TEXT_CHARS],
        "code_python": code[:TEXT_CHARS],
        "whitespace_digits": ("?\n\n2019 was a year.\n  1. Introduction\n\t\t42\n   \n\n\n3.14159"
                              "  \n 7 days, 365 nights;   12345678 and 1,000,000.\r\n\r\n2024"),
        "unicode": ("Cửa Việt — naïve café, Straße, 東京は晴れ 🌞🙂 ελληνικά русский текст "
                    "العربية हिन्दी 한국어 ½ ∑ x² ≠ y₀ \u00a0nbsp\u200bzwsp"),
        "special_strings": ("<|im_start|>user\nHi<|im_end|>\n<|endoftext|> plain "
                            "</s> <s> [INST] 'll 've 're I'M"),
    }


def suite_texts() -> dict[str, str]:
    """The inputs of llama.cpp's vocabulary tests (the same list for every family)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from llama_vocab_suite import read_cases, suite_dir

    folder = suite_dir()
    if not (folder / "ggml-vocab-gpt-2.gguf.inp").is_file():
        print(f"no vocabulary test suite in {folder}: its inputs are not recorded")
        return {}
    return {f"suite_{i:02d}": text
            for i, (text, _) in enumerate(read_cases(folder, "gpt-2"))}


def llama_ids(binary: str, gguf: Path, text: str, parse_special: bool) -> list[int]:
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", newline="",
                                     delete=False) as f:
        f.write(text)
    out = subprocess.run([binary, "-m", str(gguf), "-f", f.name, "--ids", "--no-bos",
                          "--no-escape", "--log-disable",
                          # llama-tokenize parses special tokens unless told not to
                          *([] if parse_special else ["--no-parse-special"])],
                         capture_output=True, text=True, check=True)
    Path(f.name).unlink()
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(binary: str, gguf: str | None = None) -> None:
    if gguf is None:
        sys.path.insert(0, str(ROOT))
        from ppl_widget.scoring.kinds.gguf.gguf import default_gguf_path

        path = default_gguf_path()
    else:
        path = Path(gguf)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    cases = [{"name": name, "text": text, "ids": llama_ids(binary, path, text, False),
              "ids_parse_special": llama_ids(binary, path, text, True)}
             for name, text in {**our_texts(), **suite_texts()}.items()]
    head = {"model": path.name, "sha256": digest,
            "llama_cpp": "llama-cpp-python 0.3.36 (vendored llama.cpp), "
                         "llama-tokenize --no-bos --no-escape, --no-parse-special (ids) "
                         "and --parse-special (ids_parse_special)"}
    lines = [json.dumps(head, ensure_ascii=False)[:-1] + ', "cases": [']
    lines += [" " + json.dumps(c, ensure_ascii=False) + ("," if i < len(cases) - 1 else "")
              for i, c in enumerate(cases)]
    OUT.write_text("\n".join([*lines, "]}"]) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: {sum(len(c['ids']) for c in cases)} ids in {len(cases)} texts")


if __name__ == "__main__":
    main(*sys.argv[1:])
