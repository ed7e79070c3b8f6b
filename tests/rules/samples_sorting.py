"""Samples for ``take_ranked`` (tracegrad/rules/arrays.py: values at a sort's, topk's or
kthvalue's positions) and ``cdist`` (tracegrad/rules/distance.py).

The counting kernels of tracegrad/rules/counting.py have no derivative; they are checked
against PyTorch in tests/ops/test_sorting_ops.py and tests/ops/test_histogram_ops.py.
"""
import math

import numpy as np

from .sampling import S, r


def _order(x, dim, k=None, descending=False):
    order = np.argsort(-x if descending else x, axis=dim, kind="stable")
    return order if k is None else np.take(order, np.arange(k), axis=dim)


_X = r(3, 4)
_Y = r(2, 5)
BROADCASTING = {"cdist"}
SAMPLES = {
    "take_ranked": [
        S(_X, _order(_X, 1), dim=1),
        S(_X, _order(_X, 0, 2, descending=True), dim=0, op="topk"),
        S(_Y, _order(_Y, 1)[:, 2:3], dim=1, keepdim=False, op="kthvalue"),
        S(np.array(1.5), np.array(0), dim=0, tags="0d"),
        S(r(0, 3), np.zeros((0, 3), dtype=np.int64), dim=1, tags="empty"),
    ],
    "cdist": [
        S(r(3, 4), r(5, 4), p=2.0), S(r(3, 4), r(2, 4), p=1.0), S(r(3, 2), r(4, 2), p=3.0),
        S(r(3, 2), r(4, 2), p=0.5), S(r(3, 2), r(4, 2), p=math.inf), S(r(3, 2), r(2, 2), p=0.0),
        S(r(2, 3, 4), r(5, 4), p=2.0, tags="broadcast"),
        S(r(2, 1, 3, 2), r(3, 4, 2), p=1.5, tags="broadcast"),
        S(r(0, 4), r(5, 4), p=2.0, tags="empty"), S(r(3, 0), r(2, 0), p=2.0, tags="empty"),
    ],
}
EXEMPT = {"cdist": {"0d": "cdist needs matrices"}}
