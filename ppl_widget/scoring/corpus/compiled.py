"""torch.compile of the model body for a corpus run: whether it pays, and the one batch
shape the compiled body serves.

Measured on an H100 (docs/performance.md): compiling the body takes 20-40 s and makes a
full batch 19-27% faster.  So it pays when the rest of the run would take more than about
``COMPILE_PAYS_AFTER_S`` uncompiled: 150 s x ~20% = 30 s, one compile.  A text never does
(300,000 tokens score in 2-4 s); a corpus of millions of tokens does.

The compiled body takes one width, max_length (the one ``score`` uses: a model compiled
by ``LoadedModel.compile`` serves both), with the batch size left dynamic: one compile.
Batches whose longest window is near full width are padded to it (right padding changes no
earlier position in a causal model; padded positions go through no head); the short tail
of documents, and single-row batches, run through the eager body, so a corpus of short
documents gains nothing from compiling and ``"auto"`` does not compile it.
"""

from __future__ import annotations

from typing import Any

#: Compile when the rest of the run, uncompiled, is expected to take longer than this.
COMPILE_PAYS_AFTER_S = 150.0
#: A batch goes through the compiled body when its longest row is at least this share of
#: the full width (shorter rows are padded up to it).
PAD_UP_FROM = 0.75


def check_choice(value: Any) -> bool | str:
    """``compile=``: "auto" (on a CUDA GPU, when it pays), True (always) or False."""
    if isinstance(value, str) and value.lower() in ("auto", "yes", "no"):
        return {"auto": "auto", "yes": True, "no": False}[value.lower()]
    if value is True or value is False:
        return value
    raise ValueError(f"compile must be 'auto', True or False, got {value!r}")


class CompiledBody:
    """Decides whether to compile, compiles (``forward.compile_body``: once per model,
    shared with ``LoadedModel.compile``) and shapes the batches the compiled body takes.

    ``width``: max_length, the width ``score`` compiles for too (rows one longer, a
    document's last window with the row for b after its last token, run eagerly)."""

    def __init__(self, lm: Any, fwd: Any, choice: bool | str, width: int):
        self.lm, self.fwd, self.choice, self.width = lm, fwd, choice, width
        self.active = False
        if fwd is None or fwd.base is None:
            self.choice = False  # no separate body (logits changed after the head): eager
            return
        fwd.full_width = width
        if choice is False:
            fwd.compiled = None  # also when the model was compiled before
        elif choice is True or lm.compiled_body is not None:  # compiled by the user: use it
            self._compile()

    @property
    def undecided(self) -> bool:
        return self.choice == "auto" and not self.active

    def decide(self, seconds_so_far: float, tokens_so_far: int, tokens_left: int,
               full_share: float) -> bool:
        """"auto", after the first part of the run: compile if the rest of the full-width
        batches, at the rate measured so far, would take longer than COMPILE_PAYS_AFTER_S.
        Only on a CUDA GPU (on a CPU the compiled body was not faster: docs/performance.md)."""
        if self.choice != "auto" or self.active:
            return self.active
        self.choice = False  # decided once
        if not self.fwd.cuda or tokens_so_far <= 0 or seconds_so_far <= 0:
            return False
        rest_s = tokens_left * full_share * seconds_so_far / tokens_so_far
        if rest_s > COMPILE_PAYS_AFTER_S:
            self._compile()
        return self.active

    def _compile(self) -> None:
        from ..runner.forward import compile_body

        self.fwd.compiled = compile_body(self.lm)
        self.active = True

    def takes(self, longest: int) -> bool:
        """Whether a batch whose longest row is ``longest`` is one a compiled body serves
        (padded up to full width): the one rule for routing and for "auto"'s estimate."""
        return PAD_UP_FROM * self.width <= longest <= self.width

    def padded_width(self, longest: int) -> int:
        """The width a batch whose longest row is ``longest`` is laid out at."""
        return self.width if self.active and self.takes(longest) else longest

    def width_for(self, n_items: int, longest: int) -> int | None:
        """The width to pad a batch to so the compiled body takes it (full width, two rows
        or more: the batch size is dynamic), or None: laid out as it is, for the eager
        body."""
        if self.active and n_items >= 2 and self.padded_width(longest) == self.width:
            return self.width
        return None
