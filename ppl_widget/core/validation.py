"""Checks shared by every entry point (``score()``, the widget, the command line).

A count is any integral value: a Python ``int``, a numpy integer, a 0-d numpy
array or torch tensor of an integer dtype; it is taken through
``operator.index`` (the protocol Python itself uses for list indices), so a
stride sweep written with ``np.arange`` or a pandas column just works.  Bools
(``True`` is an ``int`` to Python, but never a count someone meant) and floats
(``32.0``) are refused.
"""

from __future__ import annotations

import operator
from typing import Any


def _is_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    dtype = getattr(value, "dtype", None)  # numpy bool_, bool arrays, torch.bool tensors
    return dtype is not None and str(dtype).replace("torch.", "") in ("bool", "bool_")


def as_count(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None,
             rule: str = "an integer") -> int:
    """``value`` as a Python ``int``, or a ``ValueError`` naming ``name`` and the rule.

    ``rule`` says what the setting must be ("a non-negative integer"); a value of
    the wrong type, or outside ``[minimum, maximum]``, is reported as
    ``"{name} must be {rule}, got {value!r}"``.  Without a ``rule`` a value out of
    range says the bound it broke ("top_k must be at least 0, got -1").
    """
    shape = getattr(value, "shape", ())
    if _is_bool(value) or (shape is not None and len(tuple(shape)) != 0):
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    try:
        count = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be {rule}, got {value!r}") from None
    custom = rule != "an integer"
    if minimum is not None and count < minimum:
        raise ValueError(f"{name} must be {rule}, got {count!r}" if custom
                         else f"{name} must be at least {minimum}, got {count}")
    if maximum is not None and count > maximum:
        raise ValueError(f"{name} must be {rule}, got {count!r}" if custom
                         else f"{name} must be at most {maximum}, got {count}")
    return int(count)


def check_top_k(value: Any) -> int:
    """``top_k`` (alternatives kept per token): 0 or more."""
    return as_count("top_k", value, minimum=0, rule="a non-negative integer")


def check_batch_size(value: Any) -> int | str:
    """``batch_size`` (input positions per model call, in windows): ``"auto"`` or 1 or more."""
    if isinstance(value, str) and value == "auto":
        return value
    return as_count("batch_size", value, minimum=1, rule="'auto' or a positive integer")


def check_text(text: Any, add_eos: bool = False, *, name: str = "text",
               eos_option: str = "add_eos=True", blank_ok: bool = False) -> str:
    """``text`` as given, or an error naming the rule: a text is a ``str`` with at least
    one character to score.  An empty text is allowed only with ``add_eos`` (the
    end-of-text token alone is scored).  ``name`` and ``eos_option`` say how the caller
    calls the text and the option (the command line: the file and ``--add-eos``).
    Whitespace alone is as empty, in Python as in a file or a cell: it has no word, so
    its word perplexity is undefined, and a user who scores it almost surely passed the
    wrong string.  ``blank_ok=True`` lets whitespace through (a caller that scores pieces
    of a text, where a blank piece is legitimate)."""
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    if not add_eos and not (text if blank_ok else text.strip()):
        what = "is empty" if not text else "holds only whitespace (no word)"
        raise ValueError(f"{name} {what}: there is nothing to score (a text needs at least "
                         f"one character{'' if blank_ok else ' besides whitespace'}; "
                         f"{eos_option} scores the end-of-text token alone)")
    return text
