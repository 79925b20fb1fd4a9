"""score_corpus(protocol=...): every document equals score(text, protocol=...), with
its unscored tokens; a document too short for llama.cpp's rule is named."""

from __future__ import annotations

import pytest
from conftest import CORPUS, LONG_TEXT
from test_corpus import assert_same

pytest.importorskip("torch")
pytest.importorskip("pyarrow")

from ppl_widget import score, score_corpus  # noqa: E402

DOCS = {"long": LONG_TEXT, "mid": LONG_TEXT[:220], "s0": CORPUS[1] + " " + CORPUS[2]}


@pytest.mark.parametrize("protocol,opts", [("llama.cpp", {"max_length": 12}),
                                           ("hf-guide", {"max_length": 16, "stride": 5}),
                                           ("lm-eval", {"max_length": 16})])
def test_every_document_equals_score(tiny_gpt2, tmp_path, protocol, opts):
    corpus = score_corpus(DOCS, tmp_path / "c.parquet", tiny_gpt2, top_k=2, batch_size=3,
                          progress=False, protocol=protocol, **opts)
    for doc_id, text in DOCS.items():
        ref = score(text, tiny_gpt2, top_k=2, protocol=protocol, **opts)
        assert_same(corpus[doc_id], ref, tiny_gpt2)
        assert corpus[doc_id].settings["protocol"] == protocol
        # llama.cpp leaves half of each chunk and the tail unscored; the guide the first
        assert len(ref.unscored_token_ids) > 1 if protocol == "llama.cpp" else (
            len(ref.unscored_token_ids) == (1 if protocol == "hf-guide" else 0))


def test_short_document_is_named(tiny_gpt2, tmp_path):
    with pytest.raises(ValueError, match="document 'short': protocol='llama.cpp' needs"):
        score_corpus({"short": "Hi there."}, tmp_path / "c.parquet", tiny_gpt2,
                     max_length=12, progress=False, protocol="llama.cpp")
