"""Why a token is surprising: attribution of a target's surprisal to its context
(``Explanation``), and the rules that say what a target, its context and a unit are
(``target.py``).  The computation is the scorer's (``scoring/analyses/explain.py``)."""

from .explanation import FRAME_COLUMNS, METHODS, ExplainProgress, Explanation
from .target import ExplainError, ExplainPlan

__all__ = ["FRAME_COLUMNS", "METHODS", "ExplainError", "ExplainPlan", "ExplainProgress",
           "Explanation"]
