"""``Explanation``: how much each unit of a target's context changed its surprisal.

Pure numpy (pandas when ``frame`` is read).  ``delta_nats[u]`` is the target's surprisal
without unit ``u`` minus its surprisal with the whole context (occlusion), or the
gradient x input of ``u``'s tokens (an approximation of it); positive: ``u`` made the
target more predictable.  NaN: not computed yet (a streamed, partial explanation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..jsonable import float_of_json, json_safe
from ..metrics import LN2
from ..providers import provider

METHODS = ("occlusion", "gradient")
#: the frame's columns, in order (the views and the export read these)
FRAME_COLUMNS = ("unit", "start", "end", "tokens", "delta_nats", "delta_bits", "part")


@dataclass(eq=False)
class Explanation:
    """Attribution of one target's surprisal to the units of its context.

    ``units``/``starts``/``ends``/``tokens``/``delta_nats``: one entry per context unit, in
    text order (``tokens``: how many of the context's tokens the unit holds).  ``target``:
    ``kind`` ("token" or "word"), ``index``, ``start``, ``end``, ``text`` and ``tokens``
    (its indices among the scored tokens).  ``settings``: the scoring settings, the
    method and the unit kind.  ``done`` of the units are computed (``partial`` until all).
    """

    text: str
    target: dict[str, Any]
    method: str
    settings: dict[str, Any]
    target_surprisal_nats: float
    units: list[str]
    starts: np.ndarray
    ends: np.ndarray
    tokens: np.ndarray
    delta_nats: np.ndarray
    #: units computed so far (all of them once finished)
    done: int = -1
    cancelled: bool = False
    elapsed_s: float = 0.0
    #: context tokens the target was scored from (its window's, after the prefix)
    context_tokens: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    #: per unit, where its ``start``/``end`` point: "text", "context" (a string context,
    #: as read) or "message i" (a chat's message i, in its content); None: all "text"
    parts: list[str] | None = None
    #: what the model read before the text (``explain(..., context=...)``), or None
    context: Any = None

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}; got {self.method!r}")
        self.starts = np.asarray(self.starts, np.int64)
        self.ends = np.asarray(self.ends, np.int64)
        self.tokens = np.asarray(self.tokens, np.int64)
        self.delta_nats = np.asarray(self.delta_nats, np.float64)
        n = len(self.units)
        self.parts = ["text"] * n if self.parts is None else [str(p) for p in self.parts]
        for name in ("starts", "ends", "tokens", "delta_nats", "parts"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} has {len(getattr(self, name))} entries, expected "
                                 f"{n} (one per unit)")
        if self.done < 0:
            self.done = int(np.isfinite(self.delta_nats).sum())

    # ---- views -------------------------------------------------------------
    @property
    def partial(self) -> bool:
        return self.done < len(self.units)

    @property
    def exact(self) -> bool:
        """Occlusion is exact; gradient x input is a first-order approximation."""
        return self.method == "occlusion"

    @property
    def target_surprisal_bits(self) -> float:
        return self.target_surprisal_nats / LN2

    @property
    def delta_bits(self) -> np.ndarray:
        return self.delta_nats / LN2

    @property
    def frame(self) -> Any:
        """A pandas DataFrame, one row per context unit in text order: ``unit`` (its
        text), ``start``, ``end`` (character offsets), ``tokens``, ``delta_nats``,
        ``delta_bits`` (NaN where not computed yet), ``part`` (where ``start`` and ``end``
        point: "text", "context" or "message i")."""
        import pandas as pd

        return pd.DataFrame({"unit": list(self.units), "start": self.starts,
                             "end": self.ends, "tokens": self.tokens,
                             "delta_nats": self.delta_nats, "delta_bits": self.delta_bits,
                             "part": list(self.parts)},
                            columns=list(FRAME_COLUMNS))

    def top(self, n: int = 5) -> Any:
        """The ``n`` units that helped most (largest positive delta) and the ``n`` that
        hurt most (most negative), as one frame with an ``effect`` column ("helped" /
        "hurt"); units with no effect, or not computed yet, are left out."""
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
            raise ValueError(f"n must be a non-negative integer, got {n!r}")
        frame = self.frame
        helped = frame[frame.delta_nats > 0].sort_values("delta_nats", ascending=False,
                                                         kind="stable").head(n)
        hurt = frame[frame.delta_nats < 0].sort_values("delta_nats", kind="stable").head(n)
        import pandas as pd

        out = pd.concat([helped.assign(effect="helped"), hurt.assign(effect="hurt")])
        return out.reset_index().rename(columns={"index": "position"})

    def chart(self, **options: Any) -> Any:
        """An Altair bar chart, a bar per unit in text order, coloured by sign (the
        views' work, registered with ``core/providers.py`` by the package)."""
        return provider("explanation_chart")(self, **options)

    # ---- saving ------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Everything as JSON-ready Python objects (NaN: null; ``core/jsonable.py``)."""
        return json_safe({
            "text": self.text, "target": self.target, "method": self.method,
            "settings": self.settings, "target_surprisal_nats": self.target_surprisal_nats,
            "units": list(self.units), "starts": self.starts, "ends": self.ends,
            "tokens": self.tokens, "delta_nats": self.delta_nats, "done": self.done,
            "cancelled": self.cancelled, "elapsed_s": self.elapsed_s,
            "context_tokens": self.context_tokens, "extra": self.extra,
            "parts": list(self.parts), "context": self.context,
        })

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Explanation:
        return cls(text=data["text"], target=data["target"], method=data["method"],
                   settings=data.get("settings", {}),
                   target_surprisal_nats=float_of_json(data["target_surprisal_nats"]),
                   units=list(data["units"]), starts=data["starts"], ends=data["ends"],
                   tokens=data["tokens"],
                   delta_nats=np.asarray(data["delta_nats"], dtype=np.float64),
                   done=int(data.get("done", -1)), cancelled=bool(data.get("cancelled")),
                   elapsed_s=float_of_json(data.get("elapsed_s", 0.0)),
                   context_tokens=int(data.get("context_tokens", 0)),
                   extra=data.get("extra", {}), parts=data.get("parts"),
                   context=data.get("context"))

    def __repr__(self) -> str:
        state = ("cancelled " if self.cancelled else "partial ") if self.partial else ""
        best = ""
        if self.done:
            k = int(np.nanargmax(np.abs(np.where(np.isfinite(self.delta_nats),
                                                 self.delta_nats, 0.0))))
            best = f", largest {self.units[k]!r}: {self.delta_nats[k]:+.3g} nats"
        s = self.target_surprisal_nats
        return (f"<{state}Explanation ({self.method}) of {self.target['kind']} "
                f"{self.target['index']} {self.target['text']!r}: "
                f"{s:.4g} nats{'' if math.isfinite(s) else ''}, {self.done}/{len(self.units)} "
                f"{self.settings.get('unit', 'unit')}s{best}>")


@dataclass
class ExplainProgress:
    """One step of a streamed explanation: the units computed in it (``new``: their
    indices in the explanation's text order) and the explanation so far."""

    explanation: Explanation
    new: np.ndarray
    done: int
    total: int
    elapsed_s: float
    finished: bool = False
    cancelled: bool = False
