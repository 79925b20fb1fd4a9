"""Model terms spelled as in an R formula, so a psycholinguist can paste them: a plain
column ``"surp"``, ``"s(surp, bs='cr', k=6)"`` or ``"te(freq, len, bs='cr')"``.

Only what mgcv fits the same way here is accepted: the cubic regression spline basis
(``bs='cr'``; ``te``'s default, while ``s``'s default is the thin plate basis, which must be
asked for as ``bs='cr'`` to mean the same model), ``k`` (``s``: default 10; ``te``: 5 per
margin, one number or ``c(5, 6)``). Anything else is refused with the term named.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection
from dataclasses import dataclass

from ..spillover import ReadingTimeError

SMOOTHS = ("s", "te")
DEFAULT_K = {"s": 10, "te": 5}


@dataclass(frozen=True)
class Linear:
    """A column entering the model as it is (one coefficient)."""

    column: str

    @property
    def label(self) -> str:
        return self.column

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)


@dataclass(frozen=True)
class Smooth:
    """``s(x)`` or ``te(x, z, ...)`` with cr margins of ``k`` basis functions each."""

    kind: str
    variables: tuple[str, ...]
    k: tuple[int, ...]
    text: str

    @property
    def label(self) -> str:
        """mgcv's label: ``s(surp)``, ``te(freq,len)``."""
        return f"{self.kind}({','.join(self.variables)})"

    @property
    def columns(self) -> tuple[str, ...]:
        return self.variables


Term = Linear | Smooth


def _name(node: ast.expr) -> str | None:
    """A column name: an identifier, R's dotted names (``prev.freq``) included."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _name(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def _integers(node: ast.expr, text: str) -> tuple[int, ...]:
    """``k = 6`` or ``k = c(5, 6)``."""
    items = node.args if (isinstance(node, ast.Call) and _name(node.func) == "c"
                          and not node.keywords) else [node]
    out = []
    for item in items:
        if not (isinstance(item, ast.Constant) and isinstance(item.value, (int, float))
                and not isinstance(item.value, bool) and float(item.value).is_integer()):
            raise ReadingTimeError(f"term {text!r}: k must be a whole number or c(...) of "
                                   f"them, not {ast.unparse(node)!r}")
        out.append(int(item.value))
    return tuple(out)


def parse_term(text: str) -> Term:
    """One term of an R formula's right-hand side (rule: a term is a column name or a cr
    smooth ``s(...)``/``te(...)``; the error names the term and what is wrong)."""
    if not isinstance(text, str) or not text.strip():
        raise ReadingTimeError(f"a model term must be a non-empty string, not {text!r}")
    source = text.strip()
    try:
        node = ast.parse(source.replace("\n", " "), mode="eval").body
    except SyntaxError as error:
        raise ReadingTimeError(f"term {text!r} does not parse as an R formula term "
                               f"({error.msg} at column {error.offset}); write a column name "
                               "or e.g. \"s(surp, bs='cr', k=6)\"") from None
    column = _name(node)
    if column is not None:
        return Linear(column)
    if not isinstance(node, ast.Call) or _name(node.func) not in SMOOTHS:
        raise ReadingTimeError(f"term {text!r}: only column names and the smooths s(...) and "
                               "te(...) are supported (transform columns in the table first)")
    kind = _name(node.func)
    variables = []
    for arg in node.args:
        name = _name(arg)
        if name is None:
            raise ReadingTimeError(f"term {text!r}: {ast.unparse(arg)!r} is not a column name "
                                   f"(the arguments of {kind}() before bs=, k= are columns)")
        variables.append(name)
    if not variables:
        raise ReadingTimeError(f"term {text!r}: {kind}() needs at least one column")
    if kind == "s" and len(variables) > 1:
        raise ReadingTimeError(f"term {text!r}: s() of several columns is a thin plate "
                               "smooth, which is not supported; use te(..., bs='cr')")
    if len(set(variables)) < len(variables):
        raise ReadingTimeError(f"term {text!r} names a column twice")
    options = {}
    for keyword in node.keywords:
        if keyword.arg not in ("bs", "k"):
            raise ReadingTimeError(f"term {text!r}: argument {keyword.arg or '**'}= is not "
                                   "supported (only bs='cr' and k)")
        options[keyword.arg] = keyword.value
    basis = options.get("bs")
    if basis is None and kind == "s":
        raise ReadingTimeError(f"term {text!r}: mgcv's s() defaults to the thin plate basis "
                               "(bs='tp'), which is not supported; write bs='cr'")
    if basis is not None:
        value = basis.value if isinstance(basis, ast.Constant) else None
        if isinstance(basis, ast.Call) and _name(basis.func) == "c" and basis.args \
                and all(isinstance(a, ast.Constant) for a in basis.args):
            values = {a.value for a in basis.args}
            value = values.pop() if len(values) == 1 else None
        if value != "cr":
            raise ReadingTimeError(f"term {text!r}: basis bs={ast.unparse(basis)} is not "
                                   "supported; only the cubic regression spline bs='cr'")
    k = _integers(options["k"], text) if "k" in options else (DEFAULT_K[kind],)
    if len(k) == 1:
        k = k * len(variables)
    if len(k) != len(variables):
        raise ReadingTimeError(f"term {text!r}: k gives {len(k)} values for "
                               f"{len(variables)} margin(s)")
    if min(k) < 3:
        raise ReadingTimeError(f"term {text!r}: a cr basis needs k >= 3 (mgcv would raise "
                               f"k={min(k)} to 3)")
    return Smooth(kind=kind, variables=tuple(variables), k=k, text=source)


def parse_terms(texts: list[str]) -> list[Term]:
    """Each term parsed; a smooth or a column named twice is an error."""
    terms = [parse_term(t) for t in texts]
    labels = [t.label for t in terms]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise ReadingTimeError(f"term(s) {twice} appear more than once in the model")
    return terms


def is_smooth_term(text: str) -> bool:
    """True for a string that is spelled as a call (``s(...)``, ``te(...)``, ...), False for
    a plain column name; used to tell a model with smooths from an OLS one."""
    return isinstance(text, str) and "(" in text


def lagged(term: Term, k: int, name: Callable[[str, int], str]) -> Term:
    """The same term over the k-th previous word's columns (spillover): ``s(surp)`` ->
    ``s(prev1_surp)``; ``name`` spells a lagged column."""
    if isinstance(term, Linear):
        return Linear(name(term.column, k))
    variables = tuple(name(v, k) for v in term.variables)
    ks = ", ".join(str(x) for x in term.k)
    text = f"{term.kind}({', '.join(variables)}, bs='cr', k=c({ks}))"
    return Smooth(kind=term.kind, variables=variables, k=term.k, text=text)


def as_terms(names: list[str], columns: Collection[str]) -> list[Term]:
    """Each name as a term: a column of the table stays a plain column whatever its
    spelling; anything else is parsed as an R term."""
    return [Linear(n) if n in columns or not is_smooth_term(n) else parse_term(n)
            for n in names]
