"""``rfc3987_syntax`` loaded when first used: ``install()`` puts a finder first on
``sys.meta_path`` that gives ``import rfc3987_syntax`` a stand-in module.  Its
``is_valid_syntax`` (all that jsonschema imports of it) and any other name it is asked for
come from the real module, imported at that first use.  Until then the real one's 38
Earley parsers (about 2 s of CPU) are not built; after it, every answer is the real
module's.  Only the names the real package exports are asked of it (read from its
source): a scan of ``sys.modules`` asks every module for other names (``inspect.getmodule``
for ``__file__``, pickle for a function's name), and those load nothing.  Its submodules
(``rfc3987_syntax.utils``, ``.syntax_helpers``) are the real package's files: the stand-in
has the real package's ``__path__``."""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import sys
from types import ModuleType

# importlib.abc's base classes are left out: importing it took 40 ms, in every process of
# the run; the import system asks only for these methods

NAME = "rfc3987_syntax"
REAL = f"{NAME}.syntax_helpers"  # what the real __init__ star-imports


def _real() -> ModuleType:
    return importlib.import_module(REAL)


def is_valid_syntax(term: str, value: str) -> bool:
    return _real().is_valid_syntax(term, value)


@functools.cache
def _exported(package_dir: str) -> frozenset[str]:
    """The names the real package exports (its ``__init__`` star-imports
    ``syntax_helpers``: every top-level name without a leading ``_``), read from the
    source, so that asking for any other name loads nothing."""
    import ast
    import os

    path = os.path.join(package_dir, "syntax_helpers.py")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update(t.id for t in targets if isinstance(t, ast.Name))
    return frozenset(n for n in found if not n.startswith("_"))


class _Loader:
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        module.is_valid_syntax = is_valid_syntax

        def __getattr__(name: str) -> object:  # PEP 562: every other name, from the real one
            # a scan of sys.modules asks every module for __file__, pickle for a function's
            # name: those load nothing
            if name not in _exported(module.__path__[0]):
                raise AttributeError(name)
            value = getattr(_real(), name)
            setattr(module, name, value)
            return value

        module.__getattr__ = __getattr__


class _Finder:
    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != NAME:
            return None
        real = importlib.machinery.PathFinder.find_spec(fullname, path)
        if real is None:  # not installed: the import fails as it would
            return None
        spec = importlib.machinery.ModuleSpec(NAME, _Loader(), origin=real.origin,
                                              is_package=True)
        spec.submodule_search_locations = real.submodule_search_locations
        spec.has_location = True  # __file__: the real package's __init__.py
        return spec


def install() -> None:
    if NAME not in sys.modules and not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
