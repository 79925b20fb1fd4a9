"""A GGUF file's tokenizer, built from its metadata to tokenize as llama.cpp does.

transformers' GGUF support builds a plain byte-level tokenizer for every ``gpt2``-type
vocabulary and ignores ``tokenizer.ggml.pre``, the pre-tokenizer llama.cpp chooses by
name (SmolLM2's ``smollm`` splits digits first, so ``"\\n\\n2019"`` is ``ĊĊ 2 0 1 9``, not
``Ċ Ċ 2 ...``).  This module follows llama.cpp's ``llama-vocab.cpp`` instead:

* ``gpt2`` vocabularies: the pre-type's regexes (``gguf_pretokenizers_table``) applied
  one after another, then GPT-2's byte-to-character map and the file's merges;
  ``ignore_merges`` (a whole piece in the vocabulary is one token) where llama.cpp sets it.
* ``llama`` (SentencePiece) vocabularies: spaces escaped as ``▁``, a space prefixed at the
  start and after each added token when ``add_space_prefix`` (default true), merges by
  token score, unknown characters as ``<0xNN>`` byte tokens.
* ``gemma4``: spaces escaped, newline runs split off, BPE on UTF-8 with byte fallback.
* control, unknown and user-defined tokens are split out before pre-tokenization
  (control ones only when special tokens are parsed; the scorer keeps them as text, as
  llama.cpp does with ``parse_special=false``); BOS/EOS and ``add_bos``/``add_eos`` from
  the metadata.

The result is a Hugging Face ``tokenizers`` pipeline in a ``PreTrainedTokenizerFast``, so
it gives character offsets and saves to a ``tokenizer.json`` that loads back the same.
"""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path
from typing import Any

from .gguf_metadata import read_metadata
from .gguf_pretokenizers_table import NAMES, RAW_UTF8, REGEXES

#: ``tokenizer.ggml.token_type`` values (gguf.TokenType).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
#: The pre-tokenizer used for a name llama.cpp does not know (its plain GPT-2 regex).
FALLBACK_PRE_TYPE = "GPT2"
#: Pre-types whose regex is only a trigger for llama.cpp's own C++ splitting
#: (src/unicode.cpp, unicode_regex_split_custom): no regex says what they do.
OWN_CODE_PRE_TYPES = frozenset({"KIMI_K2", "AFMOE"})
# Whatever changes the tokenizer built here bumps model_cache.TOKENIZER_RULE, so that
# no converted copy keeps a tokenizer made by an older rule.
_SPACE = "\u2581"  # SentencePiece's escaped space


class GGUFTokenizerError(ValueError):
    """The GGUF file's vocabulary cannot be turned into a tokenizer (named rule)."""


class GGUFTokenizerWarning(UserWarning):
    """The tokenizer built may differ from llama.cpp's (an unknown pre-tokenizer)."""


def tokenizer_from_gguf(path: Path | str) -> Any:
    """The tokenizer of a ``.gguf`` file (a model or a vocabulary-only file) as a
    ``PreTrainedTokenizerFast``; its weights are not read."""
    meta = read_metadata(path, prefix="")
    return build_tokenizer({k: v for k, v in meta.items()
                            if k.startswith("tokenizer.") or k == "general.name"},
                           source=str(path))


def build_tokenizer(meta: dict[str, Any], source: str = "GGUF metadata") -> Any:
    """A ``PreTrainedTokenizerFast`` from GGUF metadata (``tokenizer.ggml.*`` keys)."""
    from transformers import PreTrainedTokenizerFast

    vocab = _Vocab(meta, source)
    with tempfile.TemporaryDirectory(prefix="ppl-widget-tok-") as tmp:
        # read by the Rust library in one pass: a tokenizer_object would be deep-copied
        path = Path(tmp) / "tokenizer.json"
        for checked in (False, True):
            path.write_text(json.dumps(tokenizer_json(vocab, checked), ensure_ascii=False),
                            encoding="utf-8")
            try:
                fast = PreTrainedTokenizerFast(tokenizer_file=str(path),
                                               clean_up_tokenization_spaces=False,
                                               **vocab.special_names())
                break
            except Exception:  # a merge of a token outside the vocabulary: check them all
                if checked:
                    raise
    fast.init_kwargs.pop("tokenizer_file", None)  # the temporary file is gone
    template = meta.get("tokenizer.chat_template")
    if isinstance(template, str) and template:  # chats are rendered with the file's own
        fast.chat_template = template
    return fast


def tokenizer_json(vocab: _Vocab, checked: bool = True) -> dict[str, Any]:
    """The ``tokenizer.json`` of a GGUF vocabulary: the small pipeline steps serialized
    by ``tokenizers`` itself, the vocabulary, merges and added tokens spliced in."""
    from tokenizers import Tokenizer
    from tokenizers.models import BPE

    shell = Tokenizer(BPE())
    shell.normalizer = vocab.normalizer()
    shell.pre_tokenizer = vocab.pre_tokenizer()
    shell.decoder = vocab.decoder()
    shell.post_processor = vocab.post_processor()
    data = json.loads(shell.to_str())
    data["model"] = vocab.model_json(checked)
    data["added_tokens"] = vocab.added_tokens()  # split out before the pre-tokenizer runs
    return data


class _Vocab:
    """One GGUF vocabulary and the pieces of its tokenizer."""

    def __init__(self, meta: dict[str, Any], source: str) -> None:
        def get(key: str, default: Any = None) -> Any:
            return meta.get("tokenizer.ggml." + key, default)

        self.kind = get("model")
        if self.kind not in ("gpt2", "llama", "gemma4"):
            raise GGUFTokenizerError(
                f"{source}: tokenizer.ggml.model is {self.kind!r}; a causal LM's tokenizer "
                "here is 'gpt2' (byte-level BPE), 'llama' (SentencePiece) or 'gemma4'")
        tokens = get("tokens")
        if not tokens:
            raise GGUFTokenizerError(f"{source}: no tokenizer.ggml.tokens (no vocabulary)")
        # llama.cpp renames empty tokens; a later duplicate of a text wins, as there
        self.tokens = [t or f"[EMPTY_{i}]" for i, t in enumerate(tokens)]
        types = get("token_type")
        self.types = [int(t) for t in types] if types is not None else [NORMAL] * len(tokens)
        scores = get("scores")
        self.scores = [float(s) for s in scores] if scores is not None else None
        self.merges = get("merges")
        self.source = source
        self.model_name = str(meta.get("general.name", "")).lower()
        self.pre_name, self.pre_type, flags = self._pre_type(get("pre"))
        spm = self.kind == "llama"
        self.ignore_merges = "ignore_merges" in flags
        self.escape_spaces = spm or self.kind == "gemma4" or "escape_whitespaces" in flags
        self.space_prefix = bool(get("add_space_prefix", spm))
        self.byte_level = not spm and self.pre_type not in RAW_UTF8
        self.add_bos = bool(get("add_bos_token", spm or "add_bos" in flags))
        self.add_eos = bool(get("add_eos_token", False))
        default_bos, default_eos, default_unk = (1, 2, 0) if spm else (None, None, None)
        self.bos = get("bos_token_id", default_bos)
        self.eos = get("eos_token_id", default_eos)
        self.unk = get("unknown_token_id", default_unk)
        self.pad = get("padding_token_id")

    def _pre_type(self, name: str | None) -> tuple[str, str, tuple[str, ...]]:
        if self.kind == "llama":
            return name or "default", "SPM", ()
        if self.kind == "gemma4":
            name = "gemma4"  # llama.cpp sets it for this tokenizer model, whatever is stored
        if not name:  # llama.cpp: missing means 'default' (and it warns the same way)
            warnings.warn(f"{self.source} has no tokenizer.ggml.pre: using llama.cpp's "
                          "'default' pre-tokenizer, as llama.cpp does", GGUFTokenizerWarning,
                          stacklevel=4)
            return "default", "DEFAULT", ()
        if name == "default":
            return name, "DEFAULT", ()
        known = NAMES.get(name)
        if known is None or known[0] in OWN_CODE_PRE_TYPES or \
                not _compiles(REGEXES.get(known[0], [])):
            why = ("is not one llama.cpp knows" if known is None else
                   f"needs llama.cpp's own code for {known[0]}")
            warnings.warn(
                f"{self.source}: pre-tokenizer {name!r} (tokenizer.ggml.pre) {why}; using "
                f"the GPT-2 pre-tokenizer instead, so tokens may differ from llama.cpp's",
                GGUFTokenizerWarning, stacklevel=4)
            return name, FALLBACK_PRE_TYPE, ()
        return name, known[0], known[1]

    # -- the pipeline ---------------------------------------------------------------
    def model_json(self, checked: bool = True) -> dict[str, Any]:
        """The BPE model; ``checked=False`` passes byte-level merges ``"a b"`` as they are
        (``tokenizers`` splits them, and refuses one whose token is not in the vocabulary;
        a third of the build time of a 256k vocabulary saved)."""
        vocab = {t: i for i, t in enumerate(self.tokens)}
        spm = self.kind == "llama"
        raw = self.merges or []
        if spm:
            merges: list[Any] = [list(m) for m in self._merges_from_scores(vocab)]
        elif not checked and self.byte_level and all(m.count(" ") == 1 for m in raw):
            merges = list(raw)
        else:
            pairs = [_split_merge(m) for m in raw]
            merges = [list(m) for m in pairs if m[0] in vocab and m[1] in vocab]
        unk = self.tokens[self.unk] if spm and self.unk is not None and \
            0 <= self.unk < len(self.tokens) else None
        return {"type": "BPE", "dropout": None, "unk_token": unk,
                "continuing_subword_prefix": None, "end_of_word_suffix": None,
                "fuse_unk": spm, "byte_fallback": not self.byte_level,
                "ignore_merges": self.ignore_merges, "vocab": vocab, "merges": merges}

    def _merges_from_scores(self, vocab: dict[str, int]) -> list[tuple[str, str]]:
        """SentencePiece merges: every split of a normal token into two vocabulary
        pieces, the merged token's score first (llama.cpp merges the best-scored pair)."""
        scores = self.scores or [0.0] * len(self.tokens)
        found = []
        for piece, i in vocab.items():
            if self.types[i] != NORMAL or len(piece) < 2:
                continue
            for cut in range(1, len(piece)):
                left, right = piece[:cut], piece[cut:]
                if left in vocab and right in vocab:
                    found.append((-scores[i], i, cut, left, right))
        found.sort()
        return [(left, right) for *_, left, right in found]

    def normalizer(self) -> Any:
        from tokenizers import normalizers

        if not self.escape_spaces:
            return None
        steps = [normalizers.Replace(" ", _SPACE)]
        if self.space_prefix:
            steps.insert(0, normalizers.Prepend(_SPACE))
        return normalizers.Sequence(steps)

    def pre_tokenizer(self) -> Any:
        from tokenizers import Regex, pre_tokenizers

        if self.kind == "llama":
            return None  # SentencePiece merges over the whole text between added tokens
        steps = [pre_tokenizers.Split(Regex(r), behavior="isolated")
                 for r in REGEXES[self.pre_type]]
        if self.byte_level:
            steps.append(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False,
                                                  trim_offsets=False))
        return pre_tokenizers.Sequence(steps)

    def decoder(self) -> Any:
        from tokenizers import decoders

        if self.byte_level:
            return decoders.ByteLevel()
        steps = [decoders.Replace(_SPACE, " "), decoders.ByteFallback(), decoders.Fuse()]
        if self.space_prefix:
            steps.append(decoders.Strip(" ", 1, 0))
        return decoders.Sequence(steps)

    def added_tokens(self) -> list[dict[str, Any]]:
        """Control, unknown and user-defined tokens, matched in the raw text first
        (llama.cpp's special-token partition); unused and byte tokens are not."""
        # Phi-3: llama.cpp strips the whitespace after its special tokens
        phi3 = "phi-3" in self.model_name or "phi3" in self.model_name
        out = []
        for i, (text, kind) in enumerate(zip(self.tokens, self.types, strict=True)):
            if kind not in (CONTROL, UNKNOWN, USER_DEFINED):
                continue
            rstrip = phi3 and text not in ("<unk>", "<s>", "<|endoftext|>")
            out.append({"id": i, "content": text, "single_word": False, "lstrip": False,
                        "rstrip": rstrip, "normalized": False,
                        "special": kind != USER_DEFINED})
        return out

    def post_processor(self) -> Any:
        from tokenizers import processors

        bos = self.tokens[self.bos] if self.add_bos and self.bos is not None else None
        eos = self.tokens[self.eos] if self.add_eos and self.eos is not None else None
        head, tail = [bos] if bos else [], [eos] if eos else []
        return processors.TemplateProcessing(
            single=[*head, "$A", *tail], pair=[*head, "$A", *tail, *head, "$B:1", *tail],
            special_tokens=[(t, i) for t, i in ((bos, self.bos), (eos, self.eos)) if t])

    def special_names(self) -> dict[str, str]:
        out = {}
        for name, i in (("bos_token", self.bos), ("eos_token", self.eos),
                        ("unk_token", self.unk), ("pad_token", self.pad)):
            if i is not None and 0 <= int(i) < len(self.tokens):
                out[name] = self.tokens[int(i)]
        return out


def _split_merge(merge: str) -> tuple[str, str]:
    """``"a b"`` -> ``("a", "b")``, at the first space after the first character
    (llama.cpp's rule: a merge's left side may itself be a space)."""
    cut = merge.find(" ", 1)
    return (merge, "") if cut < 0 else (merge[:cut], merge[cut + 1:])


def _compiles(regexes: list[str]) -> bool:
    from tokenizers import Regex

    if not regexes:
        return False
    try:
        for r in regexes:
            Regex(r)
    except Exception:  # a pattern only llama.cpp's own code understands
        return False
    return True
