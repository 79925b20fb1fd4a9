"""The live page's sentence cases (sentences.json, written by generate.py): the sentence
spans core/sentences.sentence_spans gives (pysbd), in UTF-16 code units, that the page's
segmenter (js/src/live/sentences.js, a port of pysbd's main rules) must give too.

``differs``: texts where the port is known to part from pysbd (rules it leaves out); the
JS side checks they still differ, so the list of limits in docs/live-transformer.md stays
true, and a port that learns the rule moves the text to the agreeing cases.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ppl_widget.core.sentences import paragraph_spans, sentence_spans

ROOT = Path(__file__).resolve().parents[2]

#: each shows one of pysbd's rules the port copies
RULES = [
    "Hello world. How are you? I am fine!",
    "Dr. Smith went to Washington. He arrived at 3 p.m. and left.",
    "The price is $3.14 today. Tomorrow it rises.",
    "line one\nline two. still two\n\nnew para.",
    'He said "Stop." Then he left.',
    "Wait... what? Really!!! Yes.",
    "I saw Mr. Brown, e.g. at the U.S. embassy. It was late.",
    "See p. 5 for details. No. 7 is next.",
    "the cat sat. the dog ran.",
    "It costs 5 USD. (That is cheap.) Buy it.",
    "Version 2.0 is out. Get it at example.com. Now.",
    "He was born in 1990. He is 30 years old.",
    "Hello world.   Two spaces.",
    "what? really now.",
    "Stop! you fool.",
    'He asked "why?" and left. Ok.',
    'He asked "why?" Then left.',
    '"Stop. Go." he said. Then.',
    "(see p. 5) It works.",
    "The U.S. Army came. The U.S. He left.",
    "I went to the U.S. it was fun.",
    "At 5 p.m. We ate.",
    "At 5 p.m. we ate.",
    "J. Smith came. I. Then.",
    "Hmm?! Yes.",
    "Is it?? No.",
    "wow!! great.",
    "It is e.g. Fine.",
    "Mr. Smith. Dr. Who.",
    "etc. And then.",
    "Jan. 5 was cold. Feb. Was colder.",
    "fig. 3 shows.",
    "I saw it.Then left.",
    "ok . Then",
    "He said 'hi.' Then left.",
    "Email me at a.b@example.com. Thanks.",
    "The file is in ~/.cache today. Fine.",
    "It was late (after 9 p.m.) so we left. Bye.",
    "Prof. Jones and Sen. Smith met. They talked.",
    "He paid 3.50 dollars. It was cheap.",
    "Are you sure?I am. Yes!",
    "Go now!  Then stop.",
    "\u201cYes.\u201d She nodded. \u201cNo.\u201d he said.",
    "Caf\u00e9 au lait. Tr\u00e8s bon. \u00dcn\u00efc\u00f6d\u00e9 works\u2026 maybe.",
    "The U.K. is big. The E.U. It is bigger.",
    "First sentence\r\nSecond line. Third.",
    "Trailing space. ",
    "  Leading space. Next.",
    "1. First item\n2. Second item",
    "It's 5 a.m. The sun rises.",
    "Call 555.1234 now. Or later.",
    "Vs. them. Go.",
    "They met vs. us. Then left.",
    "Ph.D. students work. They rest.",
    "Art. 5 says so. It holds.",
    "He lives on Main St. near the park. Nice.",
    "I like it... But not much.",
    "Emoji \U0001F600 here. And \U0001F389 there.",
    "**Bold.** Then `~/.cache` and `.gguf` files. ![an image](x.png) Done.",
    "An aside (it runs\nover a line.) Then more.",
    "",
]

#: pysbd's rules the port leaves out: alphabetical list items, numbers read as list items
DIFFERS = [
    "a) first b) second. Done.",
    "Mix of. Numbers 1. 2. 3. Go.",
    "Go.. Now.",
]

#: real prose: every paragraph of these files (fixed texts: a table that changed with the
#: docs would go stale)
FILES = ["examples/course_site/corpus.txt", "benchmarks/texts/kld_prose.txt",
         "benchmarks/texts/kld_story.txt"]


def _spans16(text: str) -> list[list[int]]:
    def u16(i: int) -> int:
        return len(text[:i].encode("utf-16-le")) // 2

    return [[u16(a), u16(b)] for a, b in sentence_spans(text).tolist()]


def sentence_cases() -> list[dict[str, Any]]:
    """{text, spans16[, differs]} for the rules' texts, the known differences and every
    paragraph of FILES."""
    texts = list(RULES)
    for name in FILES:
        whole = (ROOT / name).read_text(encoding="utf-8")
        texts += [whole[a:b] for a, b in paragraph_spans(whole).tolist()]
    cases = [{"text": t, "spans16": _spans16(t)} for t in texts]
    return cases + [{"text": t, "spans16": _spans16(t), "differs": True} for t in DIFFERS]
