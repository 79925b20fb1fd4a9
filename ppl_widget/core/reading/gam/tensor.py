"""mgcv's tensor product smooth ``te()`` of cr margins, before its constraint: the model
matrix as the row-wise Kronecker product of the margins' and one penalty per margin,
``S_1 (x) I`` and ``I (x) S_2``, each margin's penalty first divided by its largest
eigenvalue (``smooth.construct.tensor.smooth.spec``). mgcv's margin reparametrisation
(``np = TRUE``) is skipped for cr margins (their ``noterp`` flag), so none is done here.
"""

from __future__ import annotations

import numpy as np

from .basis import CrBasis


def row_kronecker(matrices: list[np.ndarray]) -> np.ndarray:
    """Row i of the result is the Kronecker product of row i of each matrix, the first
    margin's index varying slowest (mgcv's ``tensor.prod.model.matrix``)."""
    out = matrices[0]
    for m in matrices[1:]:
        out = (out[:, :, None] * m[:, None, :]).reshape(len(out), -1)
    return out


def tensor_penalties(penalties: list[np.ndarray]) -> list[np.ndarray]:
    """One penalty per margin: its own penalty in its place of the Kronecker product and
    identities elsewhere (mgcv's ``tensor.prod.penalties``)."""
    out = []
    for i in range(len(penalties)):
        total = np.ones((1, 1))
        for j, s in enumerate(penalties):
            total = np.kron(total, s if i == j else np.eye(len(s)))
        out.append((total + total.T) / 2)
    return out


def tensor_raw(margins: list[CrBasis]) -> list[np.ndarray]:
    """The margins' penalties scaled as te scales them (by their largest eigenvalue),
    then as Kronecker products."""
    scaled = [m.penalty / np.linalg.eigvalsh(m.penalty)[-1] for m in margins]
    return tensor_penalties(scaled)
