"""Run All with several widgets on the default model (issue #23): widgets constructed in a
row in a fresh process each start a thread that needs the model; one load is shared by all."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import json, sys, threading
    from ppl_widget import PerplexityWidget, score
    from ppl_widget.scoring.kinds import models

    loads = []
    real = models.load_model
    def counting(spec=None, **kw):
        loads.append(threading.get_ident())
        return real(spec, **kw)
    models.load_model = counting

    texts = ["The cat sat on the mat.", "Colourless green ideas sleep furiously.",
             "A third cell, run with no wait."]
    widgets = [PerplexityWidget(t, max_length=32, stride=16) for t in texts]  # no wait between
    results = [w.wait(timeout=600) for w in widgets]
    serial = [score(t, max_length=32, stride=16) for t in texts]
    print(json.dumps({
        "status": [w.status for w in widgets],
        "loads": len(loads),
        "diff": max(float(abs(r.surprisal - s.surprisal).max()) for r, s in zip(results, serial)),
        "same_model": len({id(models.as_loaded(None))}) == 1,
    }))
""")


@pytest.mark.usefixtures("default_lm")  # the converted weights are cached before the subprocess
def test_widgets_started_in_a_row_share_one_load_of_the_default_model():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["status"] == ["done", "done", "done"], (out, proc.stderr[-3000:])
    assert out["loads"] == 1, out
    assert out["diff"] < 1e-5, out


def test_a_model_path_loaded_from_many_threads_is_loaded_once(tiny_gpt2_dir, monkeypatch):
    """Any spec, not only the default: concurrent callers wait for one load and share it."""
    import threading

    from ppl_widget.scoring.kinds import models

    calls = []
    real = models.load_model

    def slow(spec=None, **kw):
        calls.append(spec)
        return real(spec, **kw)

    monkeypatch.setattr(models, "load_model", slow)
    got: list = []
    threads = [threading.Thread(target=lambda: got.append(models.as_loaded(str(tiny_gpt2_dir))))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len({id(g) for g in got}) == 1
