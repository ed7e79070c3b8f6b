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


DIFF_CASES = [(name, k) for name, k in CASES if TABLE[name].differentiable]


@pytest.mark.parametrize("name,k", DIFF_CASES, ids=[f"{n}-{k}" for n, k in DIFF_CASES])
def test_vmap_of_grad_matches_a_loop(name, k):
    """The backward pass batches too: per-sample gradients of <outputs, cotangents> through
    every differentiable rule, under vmap, equal a loop of them."""
    prim, sample = TABLE[name], SAMPLES[name][k]
    floats = [i for i, a in enumerate(sample.args) if _is_float(a) and a.dtype.kind == "f" and prim.is_diff_arg(i)]
    if not floats:
        pytest.skip("no real float operand to differentiate")
    first = _as_tuple(prim(*[_tensor(a) for a in sample.args], **sample.params))
    rng = np.random.default_rng(k)
    cts = [tg.tensor(rng.standard_normal(tuple(o.shape))) if o.dtype.is_floating_point else None for o in first]
    if all(c is None for c in cts):
        pytest.skip("no float output")

    def loss(*xs):
        outs = _as_tuple(prim(*xs, **sample.params))
        return sum((o * c).sum() for o, c in zip(outs, cts) if c is not None)

    grad_fn = tg.func.grad(loss, argnums=tuple(floats))
    per_sample = [[_scaled(a, j) if i in floats else a for i, a in enumerate(sample.args)] for j in range(B)]
    expected = [grad_fn(*[_tensor(a) for a in s]) for s in per_sample]
    stacked = [tg.tensor(np.stack([s[i] for s in per_sample])) if i in floats else _tensor(a)
               for i, a in enumerate(sample.args)]
    dims = tuple(0 if i in floats else None for i in range(len(sample.args)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = tg.func.vmap(grad_fn, in_dims=dims)(*stacked)
    for j in range(len(floats)):
        want = np.stack([e[j].numpy() for e in expected])
        np.testing.assert_allclose(got[j].numpy(), want, rtol=1e-6, atol=1e-9)
