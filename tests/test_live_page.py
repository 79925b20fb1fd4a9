"""export_live_page: the folder it writes (manifest, bundles, one subfolder per model), the
seam for other model kinds (live_files), and the rules it refuses with.  The page itself
runs in tests/browser/test_live_page.py; its JS in js/test/live_*.test.js."""

from __future__ import annotations

import json

import pytest

from ppl_widget import NGramModel, export_live_page
from ppl_widget.scoring.kinds.ngram.ngram_export import ngram_to_json

TRAIN = ["the cat sat on the mat", "the dog sat on the log"]


@pytest.fixture(scope="module")
def bigram():
    return NGramModel(2, "kneser-ney").fit(TRAIN)


class FakeKind:
    """A model kind that writes its own files (as the ONNX export does)."""

    def __init__(self, name="fake", files=("weights.bin",), write=True):
        self.name, self.files, self.write = name, files, write

    def live_files(self, folder, name):
        for f in self.files:
            if self.write:
                (folder / f).write_bytes(b"12345")
        return {"kind": "fake", "files": {f"f{i}": f for i, f in enumerate(self.files)},
                "settings": {"max_length": 64}}


def test_folder_and_manifest(tmp_path, bigram):
    text = "the cat </script><img src=x onerror=alert(1)> sat"
    out = export_live_page(tmp_path / "site", [bigram, FakeKind()], text=text,
                           title="A <live> page", stride=128)
    for name in ("index.html", "live.js", "live_worker.js", "widget.css", "manifest.json",
                 "coi-on-demand.js", "coi-serviceworker.js"):
        assert (out / name).is_file(), name
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["text"] == text and manifest["format"] == "ppl-widget-live"
    ngram, fake = manifest["models"]
    assert ngram["name"] == bigram.name and ngram["kind"] == "ngram"
    counts = out / ngram["files"]["counts"]
    assert json.loads(counts.read_text(encoding="utf-8")) == ngram_to_json(bigram)
    assert ngram["bytes"] == counts.stat().st_size
    assert ngram["settings"] == {"stride": 128, "prefix": "bos", "add_eos": False, "top_k": 5}
    # the other kind: its files under its own subfolder, its settings under the page's
    assert fake["kind"] == "fake" and fake["files"] == {"f0": "fake/weights.bin"}
    assert fake["settings"]["max_length"] == 64 and fake["settings"]["stride"] == 128
    assert fake["bytes"] == 5
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "A &lt;live&gt; page" in page and "<img" not in page and "connect-src 'self'" in page
    # the service worker that gives cross-origin isolation loads before the page's module,
    # and its on-demand policy (no reload on a first visit) before it
    assert (page.index('src="coi-on-demand.js"') < page.index('src="coi-serviceworker.js"')
            < page.index('src="live.js"'))


def test_names_and_subfolders_stay_apart(tmp_path, bigram):
    out = export_live_page(tmp_path, [bigram, bigram])
    a, b = json.loads((out / "manifest.json").read_text())["models"]
    assert a["name"] != b["name"] and a["files"]["counts"] != b["files"]["counts"]
    assert (out / a["files"]["counts"]).is_file() and (out / b["files"]["counts"]).is_file()


def test_counts_reproduce_the_model(bigram):
    data = ngram_to_json(bigram)
    index = {s: i for i, s in enumerate(data["symbols"])}
    for ctx, ids, counts in data["counts"][1]:
        for w, c in zip(ids, counts, strict=True):
            assert bigram.count([data["symbols"][ctx[0]], data["symbols"][w]]) == c
    assert data["counts"][0][0][0] == [] and index["<s>"] == 1


@pytest.mark.parametrize(("models", "kw", "error", "match"), [
    ([], {}, ValueError, "non-empty list"),
    ("bigram", {}, ValueError, "non-empty list"),
    ([object()], {}, TypeError, "live_files"),
    (["bigram"], {"stride": 9, "max_length": 4}, ValueError, "must not exceed max_length"),
    (["bigram"], {"prefix": "eos"}, ValueError, "prefix must be 'bos' or None"),
    (["bigram"], {"top_k": -1}, ValueError, "top_k"),
    ([FakeKind(write=False)], {}, FileNotFoundError, "did not write"),
])
def test_refused(tmp_path, bigram, models, kw, error, match):
    models = [bigram if m == "bigram" else m for m in models] if isinstance(models, list) \
        else models
    with pytest.raises(error, match=match):
        export_live_page(tmp_path, models, **kw)


def test_unfitted_and_custom_pattern_refused(tmp_path):
    with pytest.raises(ValueError, match="not fitted"):
        export_live_page(tmp_path, [NGramModel(2)])
    lm = NGramModel(2, pattern=r"\w+").fit(TRAIN)
    with pytest.raises(ValueError, match=r"splits words at whitespace only"):
        export_live_page(tmp_path, [lm])
    # characters travel whatever the pattern
    char = NGramModel(3, "kneser-ney", "char").fit(TRAIN)
    assert ngram_to_json(char)["unit"] == "char"
