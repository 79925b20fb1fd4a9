"""What the scorer needs from a kind of model, as Protocols: a ``ScoringModel``
(tokenizer, vocabulary, where it runs, its forward) and the ``ScoringForward`` it makes
(the statistics of every target of a batch of windows).

In the spirit of lm-evaluation-harness's ``LM`` base class: the transformers model
(``models.LoadedModel``), the n-gram model (``ngram.NGramModel``) and any future kind
provide these, and ``score``/``stream``/``score_corpus`` use nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ...core.windows import Window


class PendingStats:
    """A batch in flight: calling it waits for the batch and gives its statistics;
    ``ready()`` says whether that call would return without waiting (so the run loop can
    hand out a finished batch before it puts more in flight)."""

    def __init__(self, wait: Callable[[], dict[str, np.ndarray]],
                 ready: Callable[[], bool] | None = None) -> None:
        self._wait = wait
        self._ready = ready

    def __call__(self) -> dict[str, np.ndarray]:
        return self._wait()

    def ready(self) -> bool:
        return True if self._ready is None else bool(self._ready())


@runtime_checkable
class ScoringForward(Protocol):
    """Per target of a batch of windows, its statistics: numpy arrays keyed like
    ``core.result.TOKEN_ARRAYS`` (``surprisal``, ``entropy``, ``rank``, ``topk_ids``,
    ``topk_probs``, ``context_length``; ``bow_prob`` when the kind knows word starts).

    Optional: ``start_text(prep)``, called once per text before its first batch with the
    text's ``Prepared``: a kind that reads more than the windows (an encoder-decoder
    encodes the source there, once, for every window of the text)."""

    #: alternatives kept per target (at most the vocabulary)
    top_k: int
    #: ``submit`` enqueues a batch and returns before it is done (a GPU), so batches can
    #: be kept in flight while the host finishes earlier ones
    supports_async: bool
    #: batches to keep in flight when ``supports_async`` (None: 2 on a CUDA device)
    pipeline_depth: int | None

    def score_batch(self, sequence: Any, batch: list[Window]) -> dict[str, np.ndarray]:
        """The batch's statistics (``sequence``: the text's token ids, on the device)."""
        ...

    def submit(self, sequence: Any, batch: list[Window]) -> PendingStats:
        """Start the batch; the ``PendingStats`` returned waits for it and gives its
        statistics, and says whether it is done."""
        ...

    def bow_after_last(self, sequence: Any, max_length: int) -> float:
        """b(i) after the last token (the probability that a new word starts); NaN when
        the kind does not know word starts.  (``BatchedForward`` also takes
        ``prefixed``, for ``prefix_every_window``, which only neural models allow.)"""
        ...


@runtime_checkable
class ScoringModel(Protocol):
    """A kind of model ``score`` can use: anything with these members.

    Optional: ``windowless = True`` for a kind that reads no window (an n-gram model
    reads its last n-1 symbols): the result's settings say so and views leave the
    window, device and dtype out.  ``prepare_text(text, *, prefix, add_eos, words,
    context)`` for a kind that lays out its own input sequence (``runner/prepare.py``
    calls it in place of the causal layout; an encoder-decoder: the decoder's sequence
    and the source for its encoder).  ``reads_prefix_token = True`` for a kind that is
    not a ``LoadedModel`` but reads a prefix token in every window (``prefix_every_window``)."""

    #: Hugging Face-shaped: ``__call__`` with offsets, ``decode``/``batch_decode``,
    #: ``bos_token_id``/``eos_token_id`` (see ``prepare.py`` and ``vocab.py``)
    tokenizer: Any
    name: str
    device: Any  # a torch.device: where the token ids of a text go
    dtype: Any  # shown in the settings

    @property
    def context_length(self) -> int | None:
        """The longest input the model takes (None: no limit)."""
        ...

    @property
    def vocab_size(self) -> int:
        """Outcomes of each predictive distribution."""
        ...

    def default_max_length(self) -> int:
        """The window length when ``max_length`` is not given."""
        ...

    def make_forward(self, top_k: int, max_length: int) -> ScoringForward:
        """The forward of one run with windows of ``max_length`` positions."""
        ...


@runtime_checkable
class PlansOwnWindows(Protocol):
    """A ``ScoringModel`` that lays out its own windows instead of the causal rule
    (``core/windows.py``): a masked language model, whose every token is a target read
    from both sides (``masked/masked_model.py``, two-sided windows in
    ``core/two_sided_windows.py``).  ``score``/``stream`` then tokenize the text with no
    prefix token and every token a target, and take the kind's plan."""

    def check_run(self, *, pll_metric: Any, protocol: str, add_eos: bool, context: Any,
                  prefix_every_window: bool) -> dict[str, Any]:
        """The run's options by the kind's rules (a ValueError naming the rule broken);
        the settings the kind adds to the result: ``prefix`` (the prefix token it reads:
        None for none), ``objective`` and what else it needs."""
        ...

    def plan_windows(self, prep: Any, max_length: int, stride: int,
                     settings: dict[str, Any]) -> list[Any]:
        """The batches' items for the prepared text (``runner.prepare.Prepared``): objects
        with ``Window``'s fields whose targets tile the text's targets in order."""
        ...


def kind_run_settings(lm: Any, *, pll_metric: Any = None, protocol: str = "exact",
                      add_eos: bool = False, context: Any = None,
                      prefix_every_window: bool = False) -> dict[str, Any]:
    """The settings a run adds for ``lm``'s kind, its options checked by the kind's rules:
    a kind that plans its own windows (a masked LM) by ``check_run``; any other kind
    takes no ``pll_metric`` (a ValueError naming the rule).  score(), the corpus runner,
    minimal pairs and word lists ask here, so the rule and its message live once."""
    if isinstance(lm, PlansOwnWindows):
        return lm.check_run(pll_metric=pll_metric, protocol=protocol, add_eos=add_eos,
                            context=context, prefix_every_window=prefix_every_window)
    if pll_metric is not None:
        name = getattr(lm, "name", type(lm).__name__)
        raise ValueError(f"pll_metric= is for masked language models (pseudo-log-"
                         f"likelihood); {name} is scored left to right, each token from "
                         f"the tokens before it: leave pll_metric unset")
    return {}


class HostForward:
    """The parts of a ``ScoringForward`` a kind that computes on the host shares:
    no batches in flight (``submit`` scores at once), no b(i).  A subclass sets
    ``top_k`` and writes ``score_batch``."""

    top_k: int
    supports_async = False
    pipeline_depth: int | None = None

    def score_batch(self, sequence: Any, batch: list[Window]) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def submit(self, sequence: Any, batch: list[Window]) -> PendingStats:
        arrays = self.score_batch(sequence, batch)
        return PendingStats(lambda: arrays)

    def bow_after_last(self, sequence: Any, max_length: int) -> float:
        return math.nan
