"""An example course page with no kernel: a short lesson on surprisal where the reader types
into a live page (a bigram model scoring in the browser) beside a frozen result exported
with ``to_html`` (a model scored once, in Python, at build time).

Plain HTML, one folder, for any static host (GitHub Pages, a course server, ``python -m
http.server``).  Why not Jupyter Book 2: its HTML build (mystmd) fetches its theme from the
network (api.mystmd.org) at build time, so it cannot build offline; the folders below drop
into a Jupyter Book's static files unchanged where the build can reach its theme.

    python examples/course_site/build.py [--out DIR] [--frozen-model default|bigram]
                                         [--transformer fp32|int8|q4] [--serve [PORT]]

``bash scripts/course_site.sh`` does it all in one command: the set-up, the ``[live]`` extra
the ONNX export needs, the build with the q4 transformer, and ``--serve`` (a page that loads a
model must be served over http: a ``file:`` page may not start its worker or fetch its files).

Writes ``DIR/index.html`` (the lesson), ``DIR/live/`` (export_live_page),
``DIR/frozen.html`` (ScoreResult.to_html) and ``DIR/coi-serviceworker.js`` with its
policy ``DIR/coi-on-demand.js`` (cross-origin
isolation on a host that sends no COOP/COEP headers: threads for a transformer).  The live
page lists its models with their sizes; a transformer is downloaded only when the reader
picks it.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import json
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

HERE = Path(__file__).resolve().parent
TEXT = "The cat sat on the rug and the dog saw the cat.\nThe children read a story in the park."

LESSON = """\
<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Surprisal, live</title>
<script defer src="coi-on-demand.js"></script>
<script defer src="coi-serviceworker.js"></script>
<style>
:root {{ color-scheme: light dark; --fg: #1f1f1f; --bg: #ffffff; --muted: #555; --rule: #ddd; }}
@media (prefers-color-scheme: dark) {{
  :root {{ --fg: #e0e0e0; --bg: #1e1e1e; --muted: #aaa; --rule: #444; }} }}
body {{ margin: 0 auto; max-width: 1500px; padding: 24px; font: 16px/1.55 system-ui, sans-serif;
  color: var(--fg); background: var(--bg); }}
p, li {{ max-width: 75ch; }}
.pair {{ display: grid; grid-template-columns: 1fr 1fr; gap: 20px; }}
@media (max-width: 1100px) {{ .pair {{ grid-template-columns: 1fr; }} }}
figure {{ margin: 0; }}
figcaption {{ color: var(--muted); font-size: 14px; margin: 4px 0 8px; }}
iframe {{ width: 100%; height: 820px; border: 1px solid var(--rule); border-radius: 6px; }}
</style></head>
<body>
<h1>Surprisal, live</h1>
<p>A language model reads a text one token at a time and, before each token, gives every
possible next token a probability. The <em>surprisal</em> of the token that really came is
&minus;log<sub>2</sub> of its probability, in bits: a token the model expected costs few bits,
a surprising one many. Perplexity is 2 to the power of the mean surprisal.</p>
<p>On the left, <span id="live-about"><strong>{live_model}</strong>{live_about}</span>
scores whatever you type, in your browser (nothing is sent anywhere){more_models}. On the right,
the same text scored once by <strong>{frozen_model}</strong> when this page was built.
Hover a token to see its probability and the model's other guesses; change a word on the
left and watch its colour and the words after it change.</p>
<ul>
<li>Which words does <strong class="live-name">{live_model}</strong> find surprising? Are
they rare words, or common words in an unusual order?</li>
<li>Type a sentence the training sentences never contain. What happens to the words it has
never seen?</li>
</ul>
<div class="pair">
<figure><figcaption>Live: <span id="live-model">{live_model}</span>, in your browser</figcaption>
<iframe src="live/index.html" title="Live page: type to score"></iframe></figure>
<figure><figcaption>Frozen: {frozen_model}, exported with to_html()</figcaption>
<iframe src="frozen.html" title="Frozen result"></iframe></figure>
</div>
<script>
// the caption and the intro name the model the live page uses: it says so when the reader
// picks one (js/src/live/index.js, MSG_MODEL_IN_USE); names are set as text
const ABOUT = {about_json};
addEventListener("message", (e) => {{
  const d = e.data;
  if (e.origin !== location.origin || !d || d.type !== "ppl-widget-live-model") return;
  const name = String(d.model);
  document.getElementById("live-model").textContent = name;
  for (const el of document.querySelectorAll(".live-name")) el.textContent = name;
  const strong = document.createElement("strong");
  strong.textContent = name;
  document.getElementById("live-about").replaceChildren(strong, ABOUT[name] || "");
}});
</script>
</body></html>
"""


def live_models(sentences: list[str], transformer: str | None) -> list[Any]:
    """The live page's models: the bigram, and the default transformer as ONNX in the given
    variant (the ONNX export: ``scoring/kinds/onnx/onnx_files.py``), None for none."""
    from ppl_widget import NGramModel, load_model

    models: list[Any] = [NGramModel(2, "kneser-ney").fit(sentences)]
    if transformer:
        from ppl_widget.scoring.kinds.onnx.onnx_files import OnnxLiveModel  # the ONNX export

        models.append(OnnxLiveModel(load_model(), transformer))
    return models


def frozen_result(which: str, sentences: list[str]) -> Any:
    from ppl_widget import NGramModel, load_model, score

    lm = load_model() if which == "default" else NGramModel(2, "kneser-ney").fit(sentences)
    return score(TEXT, lm)


def model_about(models: list[Any], n_sentences: int) -> dict[str, str]:
    """What the intro says after each live model's name (the page swaps it in when the
    reader picks another model): the first is the bigram trained here."""
    from ppl_widget import NGramModel

    about = {m.name: ", an n-gram model," if isinstance(m, NGramModel) else
             ", a transformer language model," for m in models[1:]}
    return {models[0].name: f", trained on {n_sentences} sentences,", **about}


def build(out: Path, frozen_model: str = "default", transformer: str | None = None,
          more_models: list[Any] | None = None,
          say: Callable[[str], None] | None = None) -> Path:
    """The site in ``out``; ``more_models``: other models for the live page's menu after the
    bigram (``export_live_page``'s kinds), instead of ``transformer``'s; ``say``: called
    with a line at each step."""
    import shutil

    from ppl_widget import export_live_page

    say = say or (lambda line: None)
    sentences = (HERE / "corpus.txt").read_text(encoding="utf-8").splitlines()
    onnx = bool(transformer and not more_models)
    say("the live page's models: the bigram" + (", and the default model (its GGUF file "
                                                "converted once, then cached)" if onnx else ""))
    models = live_models(sentences, None if more_models else transformer) + (more_models or [])
    say("the live page (export_live_page)" + (f": the default model as ONNX ({transformer}), "
                                              "exported once (minutes), then cached"
                                              if onnx else ""))
    export_live_page(out / "live", models, text=TEXT, title="Type here: surprisal, live")
    # the lesson too is made cross-origin isolated by the service worker (a frame is
    # isolated only inside an isolated page): the live page's transformer gets its threads.
    # On demand: the worker registers on the first visit, and the lesson reloads once only
    # when the reader picks the transformer, so the bigram's first colours never wait.
    for name in ("coi-on-demand.js", "coi-serviceworker.js"):
        shutil.copyfile(out / "live" / name, out / name)
    say(f"the frozen result: score() with the {frozen_model} model, to_html()")
    frozen = frozen_result(frozen_model, sentences)
    frozen.to_html(out / "frozen.html")
    say("the lesson page")
    more = "".join(f"; the menu above it also has <strong>{html.escape(m.name)}</strong>"
                   for m in models[1:])
    about = model_about(models, len(sentences))
    page = LESSON.format(live_model=html.escape(models[0].name),
                         live_about=html.escape(about[models[0].name]), more_models=more,
                         about_json=json.dumps(about).replace("<", "\\u003c"),
                         frozen_model=html.escape(str(frozen.settings.get("model"))))
    (out / "index.html").write_text(page, encoding="utf-8")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "_site")
    ap.add_argument("--frozen-model", choices=("default", "bigram"), default="default",
                    help="the frozen result's model (default: the package's default model)")
    ap.add_argument("--transformer", choices=("fp32", "int8", "q4"),
                    help="also the default model in the live page, as ONNX in this variant")
    ap.add_argument("--serve", type=int, nargs="?", const=8000, metavar="PORT",
                    help="then serve the site on http://localhost:PORT/ (default 8000) until "
                         "Ctrl+C: the page must be served, a file: page cannot load a model")
    ap.add_argument("--quiet-log", type=Path, metavar="LOG",
                    help="what the libraries print (warnings, the exporter's messages) goes "
                         "to LOG; only the steps are shown")
    args = ap.parse_args()
    if args.transformer:
        _require_live_extra()
    with libraries_to(args.quiet_log) as out:
        t0 = time.perf_counter()

        def say(line: str) -> None:
            print(f"[course site build {time.perf_counter() - t0:4.0f}s] {line}", file=out,
                  flush=True)

        site = build(args.out, args.frozen_model, args.transformer, say=say)
        say(f"done: {site / 'index.html'}")
    if args.serve is not None:
        serve(site, args.serve)


@contextlib.contextmanager
def libraries_to(log: Path | None) -> Iterator[TextIO]:
    """Yields where the steps are printed; with ``log``, everything else printed (Python's
    warnings, the libraries' own output, at the file-descriptor level, so native code's
    too) goes to that file meanwhile."""
    if log is None:
        yield sys.stdout
        return
    warnings.simplefilter("ignore")
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    out = os.fdopen(os.dup(1), "w", buffering=1)
    with open(log, "a", encoding="utf-8") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield out
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            out.close()


def _require_live_extra() -> None:
    """The ONNX export needs the ``[live]`` extra: say so before minutes of building."""
    import importlib.util

    missing = [m for m in ("onnx", "onnxscript", "onnxruntime") if not importlib.util.find_spec(m)]
    if missing:
        raise SystemExit(f"--transformer needs the [live] extra ({', '.join(missing)} missing): "
                         "pip install -e '.[live]', or run bash scripts/course_site.sh, which "
                         "installs it")


def serve(site: Path, port: int) -> None:
    """Serve ``site`` on localhost until interrupted (what any static host does)."""
    import functools
    import http.server

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as httpd:
        print(f"serving the course page on http://localhost:{httpd.server_address[1]}/ "
              "(Ctrl+C stops)", flush=True)
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
