"""protocol= in the widget, its saved page and the command line: the protocol and the
tokens it leaves unscored are stated, the greyed tokens' reason goes to the page."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import LONG_TEXT

pytest.importorskip("torch")

from ppl_widget import PerplexityWidget, score  # noqa: E402
from ppl_widget.cli import main  # noqa: E402
from ppl_widget.core.protocols import PROTOCOLS  # noqa: E402


def test_widget_scores_with_the_protocol(tiny_gpt2):
    w = PerplexityWidget(LONG_TEXT, tiny_gpt2, max_length=16, protocol="llama.cpp")
    r = w.wait()
    ref = score(LONG_TEXT, tiny_gpt2, max_length=16, protocol="llama.cpp")
    np.testing.assert_array_equal(r.surprisal, ref.surprisal)  # score()'s stream: bit for bit
    st = w.settings
    assert st["protocol"] == "llama.cpp" and st["n_unscored"] == len(ref.unscored_token_ids)
    assert st["unscored_why"] == PROTOCOLS["llama.cpp"].unscored_why
    assert w.stride is None  # fixed by the protocol: a new max_length takes it along
    w.rescore(max_length=12)
    assert w.wait().settings["stride"] == 12
    # an edit re-scores in full (the chunks move with the text), and gives score()'s result
    w.text = LONG_TEXT + " The end."
    r = w.wait()
    assert "reused_tokens" not in r.settings
    assert r.conventions() == score(w.text, tiny_gpt2, max_length=12,
                                    protocol="llama.cpp").conventions()


def test_widget_rejects_a_broken_protocol_rule(tiny_gpt2):
    with pytest.raises(ValueError, match="stride must equal max_length with protocol='lm-eval'"):
        PerplexityWidget("text", tiny_gpt2, max_length=16, stride=8, protocol="lm-eval",
                         autostart=False)
    with pytest.raises(ValueError, match="protocol must be one of"):
        PerplexityWidget("text", tiny_gpt2, protocol="llama", autostart=False)


def test_saved_page_keeps_the_protocol(tiny_gpt2, tmp_path):
    r = score(LONG_TEXT[:300], tiny_gpt2, max_length=16, stride=5, protocol="hf-guide")
    page = r.to_html()
    assert '"protocol": "hf-guide"' in page or '"protocol":"hf-guide"' in page
    assert PROTOCOLS["hf-guide"].unscored_why in page
    assert "guide_reported_ppl" in page


def test_cli_states_the_protocol(tmp_path, capsys, tiny_gpt2_dir):
    path = tmp_path / "t.txt"
    path.write_text(LONG_TEXT[:300], encoding="utf-8")
    assert main(["score", str(path), "--model", tiny_gpt2_dir, "--max-length", "16",
                 "--stride", "5", "--protocol", "hf-guide"]) == 0
    out = capsys.readouterr().out
    assert "protocol hf-guide:" in out and "the guide's printed perplexity" in out
    assert "counted right" in out
    with pytest.raises(SystemExit):
        main(["score", str(path), "--protocol", "llama"])
    assert main(["score", str(path), "--max-length", "16", "--stride", "5",
                 "--protocol", "lm-eval"]) == 2  # checked before a model is loaded
    assert "stride must equal max_length with protocol='lm-eval'" in capsys.readouterr().err
