"""The float64 references' model and the float32 tolerances against them: one float64 copy
of a model per process, shared by every float64 reference in the tests (the default model's
copy is 1 GB and takes seconds to make: made once, not once per file), and the tolerances
measured for our float32 paths (docs/testing.md, "Float32 tolerances")."""

from __future__ import annotations

import copy

_COPIES: dict[int, object] = {}


def float64_copy(lm):
    """``lm.model`` in float64, in eval mode (kept for the process: a session's models)."""
    key = id(lm.model)
    if key not in _COPIES:
        _COPIES[key] = copy.deepcopy(lm.model).double().eval()
    return _COPIES[key]


# Float32 tolerances, in nats per scored token, against a float64 reference: the largest
# |float32 - float64| measured over every CPU kernel set this machine offers, with 1 and 2
# threads (tests/float32_spread.py; the table in docs/testing.md), times about four for the
# CPUs not measured here. A sum over n tokens (a word, a sentence) gets n times as much.
#: the embedded SmolLM2-135M (30 layers, a 49,152-token softmax): 5.3e-5 per token measured
DEFAULT_MODEL_NATS = 2e-4
#: the tests' tiny random models (two layers of 32): 7.9e-6 per token, 1.7e-5 per word
TINY_NATS = 5e-5


def assert_within(got, want, nats_per_token: float, n_tokens=1) -> None:
    """Each value within ``nats_per_token`` per token it sums (a word of no token: one)."""
    import numpy as np

    err = np.abs(np.asarray(got, float) - np.asarray(want, float))
    tol = np.broadcast_to(nats_per_token * np.maximum(np.asarray(n_tokens), 1), err.shape)
    if err.size == 0:  # an empty document: nothing to hold
        return
    worst = int(np.argmax(err - tol))
    assert (err <= tol).all(), (f"{int((err > tol).sum())} of {err.size} values off by more "
                                f"than {nats_per_token:g} nats per token; the worst: "
                                f"{err.flat[worst]:.3g} where {tol.flat[worst]:.3g} is allowed")



def float64_scores(lm, result) -> dict:
    """The float64 copy's numbers for each scored token of ``result`` (a score() result, a
    corpus document, a partial one), each read from the positions the result says it read:
    target ``p`` of the input sequence from ``sequence[p - context_length : p]``. The
    sequence is laid out as score() lays it out (prefix, context, text, EOS) and its targets
    checked against the result's tokens. Per token: ``surprisal``, ``entropy``,
    ``topk_logp`` (the log-probability of each of its top-k ids), ``log_bow`` (log b: the
    next token begins a word); ``log_bow_end``: log b after the last token."""
    import numpy as np
    import torch

    from ppl_widget.scoring.runner.prepare import prepare
    from ppl_widget.scoring.runner.word_boundary import boundary_mask

    s, n = result.settings, len(result)
    if n == 0:
        return {"surprisal": np.zeros(0), "entropy": np.zeros(0), "log_bow": np.zeros(0),
                "topk_logp": np.zeros((0, result.topk_ids.shape[1])), "log_bow_end": None}
    prep = prepare(result.text, lm, prefix=s["prefix"], add_eos=s["add_eos"],
                   context=result.context)
    seq = torch.as_tensor(np.asarray(prep.sequence, np.int64))
    pos = prep.first_target + _scored_targets(prep, result)
    np.testing.assert_array_equal(seq[pos].numpy(), result.token_ids)
    start = pos - np.asarray(result.context_length)
    model, logp = float64_copy(lm), {}

    @torch.no_grad()
    def read(b: int, e: int):  # log-probabilities after each of seq[b:e]
        window = seq[b:e]
        if s.get("prefix_every_window") and b > 0:  # position 0 read in place of b
            window = torch.cat([seq[:1], seq[b + 1:e]])
        return torch.log_softmax(model(window[None]).logits[0], -1)

    # b after the last token: one more row of the last window where the model has room for
    # it, else a window of the last max_length positions (forward.bow_after_last)
    end, last = len(seq), int(start[-1])
    own_row = pos[-1] == end - 1 and end - last <= (lm.context_length or s["max_length"])
    for b in dict.fromkeys(start.tolist()):  # one forward per window, to its last target
        logp[b] = read(b, end if b == last and own_row else int(pos[start == b].max()))
    rows = torch.stack([logp[b][p - 1 - b] for b, p in zip(start.tolist(), pos.tolist(),
                                                            strict=True)])
    mask = torch.as_tensor(boundary_mask(lm.tokenizer, rows.shape[1]))
    after_last = (logp[last][-1] if own_row else read(max(0, end - s["max_length"]), end)[-1]
                  ) if not np.isnan(result.bow_prob_end) else torch.full_like(rows[0], np.nan)
    return {"surprisal": (-rows.gather(1, torch.as_tensor(result.token_ids)[:, None])[:, 0]
                          ).numpy(),
            "entropy": (-(rows.exp() * rows).sum(-1)).numpy(),
            "topk_logp": rows.gather(1, torch.as_tensor(result.topk_ids)).numpy(),
            "log_bow": torch.logsumexp(rows[:, mask], -1).numpy(),
            "log_bow_end": float(torch.logsumexp(after_last[mask], -1))}


def _scored_targets(prep, result):
    """Which of ``prep``'s targets ``result`` scored (all of them, the first ones of a
    partial result, or a protocol's subset): each scored token matched, in order, to the
    next target with its id and span."""
    import numpy as np

    k, found = 0, []
    for tid, span in zip(result.token_ids.tolist(), result.offsets.tolist(), strict=True):
        while (int(prep.target_ids[k]), list(prep.target_offsets[k])) != (tid, span):
            k += 1
        found.append(k)
        k += 1
    return np.asarray(found, np.int64)


def assert_scores_within(result, lm, nats_per_token: float) -> dict:
    """Each float32 number of ``result`` within ``nats_per_token`` of the float64 copy's
    (``float64_scores``): surprisal and entropy; the top-k probabilities and b (the
    begin-of-word probability, per token and after the last) through their logs. Returns
    the float64 numbers (a total: ``assert_within(total, ref.sum(), nats, n_tokens)``)."""
    import numpy as np

    want = float64_scores(lm, result)
    assert_within(result.surprisal, want["surprisal"], nats_per_token)
    assert_within(result.entropy, want["entropy"], nats_per_token)
    with np.errstate(divide="ignore"):
        assert_within(np.log(result.topk_probs), want["topk_logp"], nats_per_token)
        given = ~np.isnan(result.bow_prob)  # NaN: not asked for
        assert_within(np.log(result.bow_prob[given]), want["log_bow"][given], nats_per_token)
        if not np.isnan(result.bow_prob_end):
            assert_within(np.log(result.bow_prob_end), want["log_bow_end"], nats_per_token)
    return want
