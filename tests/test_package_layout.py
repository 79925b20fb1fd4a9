"""The house's shape: no package folder directly holds more than 20 modules, and each model
kind lives in a subpackage of its own under ``scoring/kinds/`` (issue #44)."""

from __future__ import annotations

import pathlib

PKG = pathlib.Path(__file__).resolve().parents[1] / "ppl_widget"
KINDS = {"hf", "gguf", "ngram", "vllm", "onnx", "masked", "seq2seq"}


def _folders() -> list[pathlib.Path]:
    return [d for d in PKG.rglob("*") if d.is_dir() and (d / "__init__.py").exists()]


def test_no_folder_holds_more_than_20_modules():
    crowded = {str(d.relative_to(PKG)): n for d in _folders()
               if (n := len([p for p in d.glob("*.py") if p.name != "__init__.py"])) > 20}
    assert not crowded, f"split these folders into subpackages: {crowded}"


def test_each_model_kind_has_a_subpackage_and_no_kind_module_is_elsewhere():
    kinds = PKG / "scoring" / "kinds"
    assert {d.name for d in kinds.iterdir() if (d / "__init__.py").exists()} == KINDS
    # a module named after a kind lives in that kind's folder, nowhere else
    for path in PKG.rglob("*.py"):
        for kind in KINDS - {"hf"}:
            if path.stem.startswith(kind + "_") or path.stem == kind:
                assert path.parent == kinds / kind, path.relative_to(PKG)
