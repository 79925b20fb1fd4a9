"""The widget's scoring settings, checked by the very rules ``score()`` applies.

One source of the rules: the window goes through ``core.windows.check_window_settings``
(and, once the model is loaded, ``scoring.runner.scorer.resolve_window``, which adds its
default and context length), counts through ``core.validation``, and the prefix
through the documented choices.  A rejected value raises
``SettingError``: a ``traitlets.TraitError`` (what traitlets users catch) that
is also a ``ValueError`` (what ``score()`` raises), carrying score()'s message
and the name of the setting (``field``) so the front end can show it beside
the control.
"""

from __future__ import annotations

from typing import Any

import traitlets

from ..core.protocols import get_protocol
from ..core.validation import as_count, check_batch_size, check_top_k
from ..core.windows import check_window_settings

#: The settings a front-end control changes, in the form's order.
CONTROL_FIELDS = ("max_length", "stride", "prefix", "prefix_every_window")


class SettingError(traitlets.TraitError, ValueError):
    """A widget setting that ``score()`` would reject; ``field`` names the setting."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def _field_of(message: str, default: str) -> str:
    """The setting a window-rule message is about (its first word), else ``default``."""
    first = message.split(" ", 1)[0]
    return first if first in CONTROL_FIELDS else default


def check_prefix(value: Any) -> str:
    """``"bos"`` or ``"none"`` (the trait's spelling of ``prefix=None``)."""
    if value is None or value == "none":
        return "none"
    if value == "bos":
        return "bos"
    # score()'s message; "none" is the front end's spelling of None
    raise SettingError(f"prefix must be 'bos' or None, got {value!r}", "prefix")


def check_window(max_length: Any, stride: Any, lm: Any = None, *, field: str = "stride",
                 prefix_every_window: bool = False) -> tuple[int | None, int | None]:
    """``(max_length, stride)`` as ints (None = the model's default), or ``SettingError``.

    With ``lm`` (a loaded model) the full check ``score()`` makes, context length
    included; without it, the rules that do not depend on the model.
    """
    try:
        max_length, stride = check_window_settings(max_length, stride,
                                                   prefix_every_window=prefix_every_window)
        if lm is not None:  # the model's default max_length and its context length
            from ..scoring.runner.scorer import resolve_window

            resolve_window(lm, max_length, stride, prefix_every_window)
    except ValueError as exc:
        raise SettingError(str(exc), _field_of(str(exc), field)) from None
    return max_length, stride


class Count(traitlets.TraitType):
    """An optional count: any integral value (numpy ints too) taken through as_count."""

    default_value = None
    info_text = "an integer or None"

    def validate(self, obj: Any, value: Any) -> int | None:
        if value is None:
            return None
        try:
            return as_count(self.name, value)
        except ValueError as exc:
            raise SettingError(str(exc), self.name) from None


class Prefix(traitlets.TraitType):
    """``"bos"`` or ``"none"``; ``None`` is taken as ``"none"``; nothing else."""

    default_value = "bos"
    info_text = "'bos' or None"

    def validate(self, obj: Any, value: Any) -> str:
        return check_prefix(value)


class Context(traitlets.TraitType):
    """What the model reads before the text: None, a string or a chat, checked as
    ``score()`` checks it (``scoring/runner/context.py``)."""

    default_value = None
    allow_none = True
    info_text = "None, a string or a list of {'role', 'content'} messages"

    def validate(self, obj: Any, value: Any) -> Any:
        from ..scoring.runner.context import check_context

        try:
            return check_context(value)
        except ValueError as exc:
            raise SettingError(str(exc), "context") from None


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """The non-window options of a re-score, checked as ``stream()`` checks them."""
    out = dict(options)
    if "top_k" in out:
        out["top_k"] = check_top_k(out["top_k"])
    if "batch_size" in out:
        out["batch_size"] = check_batch_size(out["batch_size"])
    if "protocol" in out:
        get_protocol(out["protocol"])  # its own rules against the window: score()'s
    return out
