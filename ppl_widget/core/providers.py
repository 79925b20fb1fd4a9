"""Seams: where a core object hands work to a higher layer, asked for by name.

Some conveniences of core objects are the views' work (``ScoreResult.to_html``,
``Comparison.chart``).  The core never imports a view: it asks ``provider(name)``,
and the top layer (``ppl_widget/__init__.py``) registers each name with a lazy
``"package.module:attribute"`` reference, imported the first time it is asked for.
So imports run one way, and importing the package stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

#: name -> the object, or a "module:attribute" reference to import when first asked for
_PROVIDERS: dict[str, str | Callable[..., Any]] = {}
#: name -> what a user installs when the reference cannot be imported
_HINTS: dict[str, str] = {}


class ProviderError(ImportError):
    """A provider that is not registered, or whose module cannot be imported."""


def provide(name: str, target: str | Callable[..., Any], *, hint: str = "") -> None:
    """Register ``target`` for ``name``: a ``"package.module:attribute"`` reference
    (the attribute may be dotted, ``"m:Class.method"``) or the object itself.
    ``hint`` says what to install when the reference cannot be imported."""
    if isinstance(target, str) and ":" not in target:
        raise ValueError(f"a provider reference is 'package.module:attribute', got {target!r}")
    _PROVIDERS[name] = target
    _HINTS[name] = hint


def provider(name: str) -> Any:
    """The object registered for ``name`` (importing its module now, if need be)."""
    target = _PROVIDERS.get(name)
    if target is None:
        raise ProviderError(
            f"nothing provides {name!r}: it is registered by the views when ppl_widget is "
            f"imported (import ppl_widget), or by ppl_widget.core.providers.provide("
            f"{name!r}, 'package.module:attribute')")
    if not isinstance(target, str):
        return target
    try:
        return resolve(target)
    except ProviderError:
        raise
    except ImportError as exc:
        hint = _HINTS.get(name) or "install what it needs"
        raise ProviderError(f"{name!r} is provided by {target}, which could not be imported "
                            f"({exc}): {hint}") from exc


def resolve(reference: str) -> Any:
    """The object a ``"package.module:attribute"`` reference names, imported now."""
    module_name, _, attribute = reference.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attribute.split(".") if attribute else ():
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ProviderError(f"{reference} names nothing: {module_name} has no "
                                f"{attribute!r}") from None
    return obj
