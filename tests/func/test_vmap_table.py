"""vmap over the whole rule table: every primitive's samples (tests/rules/samples_*.py)
run under vmap give what a loop over the samples gives, stacked -- with every float
operand batched, and with only the first one batched along its last dim. Each sample's
float operands are scaled per batch entry (staying in the rule's domain)."""
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.func import vmap
from tracegrad.rules import TABLE

from ..rules.test_table import SAMPLES

B = 3
# Primitives vmap cannot map, and why (torch refuses them under vmap too).
UNMAPPABLE = {
    "nonzero": "data-dependent output shape",
}
CASES = [(name, k) for name in sorted(SAMPLES) if name in TABLE and name not in UNMAPPABLE
         for k in range(len(SAMPLES[name]))]


def _scaled(a, k):
    return np.asarray(a * (1.0 - 0.1 * k))


def _is_float(a):
    return isinstance(a, np.ndarray) and a.dtype.kind in "fc"


def _tensor(a):
    return tg.tensor(a) if isinstance(a, np.ndarray) else a


def _as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _check(prim, args, params, batched, in_dim):
    """vmap(prim) over operands ``batched`` (batch at ``in_dim``) against a loop."""
    per_sample = [[_scaled(a, k) if i in batched else a for i, a in enumerate(args)] for k in range(B)]
    expected = [_as_tuple(prim(*[_tensor(a) for a in s], **params)) for s in per_sample]
    stacked = [tg.tensor(np.moveaxis(np.stack([s[i] for s in per_sample]), 0, in_dim)) if i in batched
               else _tensor(a) for i, a in enumerate(args)]
    dims = tuple(in_dim if i in batched else None for i in range(len(args)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the fallback's performance warning)
        got = _as_tuple(vmap(lambda *xs: prim(*xs, **params), in_dims=dims)(*stacked))
    assert len(got) == len(expected[0])
    for j, g in enumerate(got):
        want = np.stack([np.asarray(e[j]._data if isinstance(e[j], tg.Tensor) else e[j]) for e in expected])
        assert tuple(g.shape) == want.shape, (j, tuple(g.shape), want.shape)
        np.testing.assert_allclose(np.asarray(g._data), want, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name,k", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_vmap_matches_a_loop(name, k):
    prim, sample = TABLE[name], SAMPLES[name][k]
    floats = [i for i, a in enumerate(sample.args) if _is_float(a)]
    if not floats:
        pytest.skip("no float operand to batch")
    _check(prim, sample.args, sample.params, set(floats), 0)
    first = floats[0]
    if np.ndim(sample.args[first]) > 0:
        _check(prim, sample.args, sample.params, {first}, -1)
