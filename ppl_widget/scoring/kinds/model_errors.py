"""The errors of loading a model, below every loader module so that each can raise them
(``models.py`` re-exports them: ``from ppl_widget.scoring.kinds.models import ModelLoadError``)."""

from __future__ import annotations


class ModelLoadError(RuntimeError):
    """A model or tokenizer could not be loaded or is unsuitable for scoring: the
    message says what was given, what was found, and what to do next."""


class ModelSettingError(ModelLoadError, ValueError):
    """A ``device``/``dtype`` value ``load_model`` cannot take (also a ValueError)."""


class ModelTypeError(ModelLoadError, TypeError):
    """A model argument of a type ``load_model`` does not take (also a TypeError)."""


def one_line(exc: BaseException) -> str:
    """An exception as one short line (torch and the Hub write paragraphs)."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first[:200]}"
