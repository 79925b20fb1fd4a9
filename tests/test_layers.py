"""The folders are the layers, and imports run one way: views -> scoring -> core.

Checked on the source (every import statement, at module level or inside a
function), so an upward import fails here before it can become a cycle.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "ppl_widget"

#: Layer of each sub-package; a module may import its own layer and lower ones.
#: Modules directly under ppl_widget/ (the CLI, the IPython extension) sit on top.
RANK = {"core": 0, "scoring": 1, "views": 2}
TOP = 3

#: Libraries the pure core must never import, even lazily.
CORE_FORBIDDEN = {"torch", "transformers", "anywidget", "ipywidgets", "traitlets", "IPython",
                  "altair", "accelerate", "gguf"}

#: Convenience methods that forward to a higher layer with a function-level import
#: (e.g. ``ScoreResult.to_html`` -> the export view).  Each one is listed here on purpose.
ALLOWED_UPWARD: set[tuple[str, str]] = {
    # Comparison.chart(): the comparison's chart, imported when asked for
    ("ppl_widget.scoring.compare", "ppl_widget.views.charts"),
    # Comparison.widget(): the comparison view of finished results
    ("ppl_widget.scoring.compare", "ppl_widget.views.compare_widget"),
    # ScoreResult.to_html(): the self-contained page, built by the export view
    ("ppl_widget.core.result", "ppl_widget.views.export"),
}


def _module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) >= 3 or (len(parts) == 2 and parts[1] in RANK):
        return RANK.get(parts[1], TOP)
    return TOP


def _imports(path: pathlib.Path) -> list[tuple[str, int]]:
    """(absolute module imported, line) for every import in the file."""
    me = _module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
                if node.module is None:  # from . import protocol
                    out += [(f"{target}.{a.name}", node.lineno) for a in node.names]
                    continue
            else:
                target = node.module or ""
            out.append((target, node.lineno))
    return out


SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_run_one_way(path: pathlib.Path) -> None:
    me = _module_name(path)
    mine = _layer(me)
    for target, line in _imports(path):
        if not target.startswith("ppl_widget") or target == "ppl_widget":
            continue
        if _layer(target) > mine and (me, target) not in ALLOWED_UPWARD:
            pytest.fail(f"{me} (line {line}) imports {target}, a higher layer")


@pytest.mark.parametrize("path", sorted((PACKAGE / "core").rglob("*.py")),
                         ids=lambda p: p.name)
def test_core_imports_no_heavy_library(path: pathlib.Path) -> None:
    for target, line in _imports(path):
        root = target.split(".")[0]
        assert root not in CORE_FORBIDDEN, f"{path.name}:{line} imports {target}"


def test_every_layer_is_a_folder() -> None:
    for name in RANK:
        assert (PACKAGE / name / "__init__.py").is_file()
    loose = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    # only the entry points sit directly in the package
    assert loose <= {"cli", "corpus_cli", "magics"}, f"modules outside a layer folder: {loose}"
