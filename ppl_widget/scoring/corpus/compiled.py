"""torch.compile of the model body for a corpus run: whether it pays, and the one batch
shape the compiled body serves.

Measured on an H100 (docs/performance.md): compiling the body takes 20-40 s and makes a
full batch 19-27% faster.  So it pays when the rest of the run would take more than about
``COMPILE_PAYS_AFTER_S`` uncompiled: 150 s x ~20% = 30 s, one compile.  A text never does
(300,000 tokens score in 2-4 s); a corpus of millions of tokens does.

The compiled body is given one shape, a full batch of full-width windows (static shapes:
every new shape would compile again).  Batches whose longest window is near full width are
padded to it (right padding changes no earlier position in a causal model; padded rows go
through no head); the short tail of documents runs through the eager body, so a corpus of
short documents gains nothing from compiling and ``"auto"`` does not compile it.
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
    """Decides whether to compile, compiles, and shapes the batches the compiled body takes.

    ``width``: the widest batch row (a window plus, where the model's context allows, the
    row for b after a document's last token); ``budget``: padded positions per call."""

    def __init__(self, fwd: Any, choice: bool | str, width: int, budget: int):
        self.fwd = fwd
        self.choice = choice
        self.width = width
        self.rows = max(1, budget // width)
        self.active = False
        self._compiled: Any = None
        if fwd is None or fwd.base is None:
            self.choice = False  # no separate body (logits changed after the head): eager
        elif choice is True:
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
        import torch

        self._compiled = torch.compile(self.fwd.base, dynamic=False)
        self.active = True

    def padded_width(self, longest: int) -> int:
        """The width a batch whose longest row is ``longest`` is laid out at."""
        return self.width if self.active and longest >= PAD_UP_FROM * self.width else longest

    def route(self, n_items: int, longest: int) -> tuple[int, int] | None:
        """Point the forward at the compiled body and give the (rows, width) to pad the
        batch to; or, for a batch of another shape, at the eager body and None."""
        if self.active and n_items <= self.rows and self.padded_width(longest) == self.width:
            self.fwd.body = self._compiled
            return self.rows, self.width
        if self.fwd is not None:
            self.fwd.body = self.fwd.base
        return None

    def resize(self, budget: int) -> None:
        """After an out-of-memory retry with a smaller budget (a new shape: compiles again)."""
        self.rows = max(1, budget // self.width)
