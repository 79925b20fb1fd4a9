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
    worst = int(np.argmax(err - tol))
    assert (err <= tol).all(), (f"{int((err > tol).sum())} of {err.size} values off by more "
                                f"than {nats_per_token:g} nats per token; the worst: "
                                f"{err.flat[worst]:.3g} where {tol.flat[worst]:.3g} is allowed")
