"""Samples for ``matrix_exp``: small and larger norms (no scaling, several squarings),
stacks, 1x1, empty and complex matrices."""
import numpy as np

from .sampling import S

_rng = np.random.default_rng(1623)


def r(*shape):
    return _rng.standard_normal(shape)


SAMPLES = {
    "matrix_exp": [S(0.2 * r(3, 3)), S(r(3, 3)), S(2 * r(2, 3, 3)), S(r(1, 1)),
                   S(r(0, 0), tags="empty"), S(r(2, 0, 0), tags="empty")],
}
EXEMPT = {"matrix_exp": {"0d": "operands are (stacks of) square matrices"}}
COMPLEX_SAMPLES = {"matrix_exp": [S(r(3, 3) + 1j * r(3, 3)), S(0.3 * (r(2, 2, 2) + 1j * r(2, 2, 2)))]}


def _torch():
    import torch
    return torch


TORCH = {"matrix_exp": lambda a: _torch().linalg.matrix_exp(a)}
