"""The model matrix and penalties of a GAM as mgcv's ``gam.setup`` lays them out: the
intercept, then the plain columns in the order given, then each smooth's columns in the
order given; each penalty is a block at its smooth's columns (``G$S``, ``G$off``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .formula import Linear, Smooth, Term
from .smooth import SmoothTerm, build_smooth


@dataclass(frozen=True)
class Penalty:
    """One penalty block ``S`` over columns ``start:start+len(S)`` of the model matrix."""

    matrix: np.ndarray
    start: int
    smooth: int  # index into Design.smooths


@dataclass(frozen=True)
class Design:
    """``X`` (n x p), ``linear`` (plain column names, after the intercept), ``smooths``
    (with their column ranges ``spans``) and ``penalties``."""

    X: np.ndarray
    linear: tuple[str, ...]
    smooths: tuple[SmoothTerm, ...]
    spans: tuple[tuple[int, int], ...]
    penalties: tuple[Penalty, ...]

    @property
    def names(self) -> list[str]:
        """Coefficient names as mgcv writes them: ``(Intercept)``, ``surp``,
        ``s(surp).1``, ..."""
        out = ["(Intercept)", *self.linear]
        for sm in self.smooths:
            out += [f"{sm.label}.{i}" for i in range(1, sm.width + 1)]
        return out

    def matrix(self, columns: dict[str, np.ndarray]) -> np.ndarray:
        """The model matrix at new rows (the smooths' bases fixed by the fit's rows)."""
        n = len(next(iter(columns.values())))
        parts = [np.ones((n, 1))] + [np.asarray(columns[c], dtype=np.float64)[:, None]
                                     for c in self.linear]
        parts += [sm.matrix(columns) for sm in self.smooths]
        return np.hstack(parts)


def build_design(terms: list[Term], columns: dict[str, np.ndarray]) -> Design:
    """The design of ``terms`` on the rows of ``columns`` (every column already checked
    present and numeric, no missing values)."""
    linear = tuple(t.column for t in terms if isinstance(t, Linear))
    smooths = tuple(build_smooth(t, columns) for t in terms if isinstance(t, Smooth))
    n = len(next(iter(columns.values())))
    blocks = [np.ones((n, 1))] + [columns[c][:, None] for c in linear]
    spans, penalties = [], []
    start = 1 + len(linear)
    for index, sm in enumerate(smooths):
        blocks.append(sm.X)
        spans.append((start, start + sm.width))
        penalties += [Penalty(matrix=s, start=start, smooth=index) for s in sm.penalties]
        start += sm.width
    return Design(X=np.hstack(blocks), linear=linear, smooths=smooths, spans=tuple(spans),
                  penalties=tuple(penalties))
