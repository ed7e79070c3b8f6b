"""Samples for the rules of tracegrad/rules/arrays.py.

Its two primitives, ``argsort`` and ``argpartition``, return integer positions and have
no derivative, so the walker has nothing to check on them; the samples below still name
them (they must stay real rules) and tests/rules/test_table.py skips them as
non-differentiable. Everything else in that module is a composition of rules that have
their own samples (gather, index_select, diagonal_scatter, flip, transpose, mul, sub,
constant_pad_nd); the compositions are checked where they are used: through
``tracegrad.grad`` in tape and AST mode against finite differences, to second order
(tests/transform/test_numpy_arrays.py), and against PyTorch in eager mode
(tests/ops/test_shape_ops_oracle.py).
"""
import numpy as np

from .sampling import S, r

SAMPLES = {
    "argsort": [S(r(3, 4), dim=1), S(r(3, 4), dim=0, descending=True, stable=True),
                S(np.array(2.0), tags="0d"), S(r(0, 3), dim=1, tags="empty")],
    "argpartition": [S(r(5), kth=2, dim=0), S(r(3, 4), kth=(0, 3), dim=1)],
}
