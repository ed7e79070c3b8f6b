"""Properties over generated inputs (hypothesis): broadcasting gradients for any pair of
mutually broadcastable shapes, and PyTorch's type-promotion lattice."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import tracegrad as tg
from tracegrad.backend import dtypes as D

# (rule, domain of x, domain of y): values kept where each rule is smooth.
BINARY = {
    "add": ("any", "any"), "sub": ("any", "any"), "mul": ("any", "any"),
    "div": ("any", "away"), "pow": ("positive", "any"), "atan2": ("away", "away"),
    "maximum": ("any", "any"), "minimum": ("any", "any"),
}


def draw(rng, shape, domain):
    if domain == "positive":
        return rng.uniform(0.5, 2.0, shape)
    if domain == "away":
        return rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    return rng.standard_normal(shape)


@settings(max_examples=80, deadline=None)
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
       name=st.sampled_from(sorted(BINARY)), seed=st.integers(0, 2**16))
def test_broadcast_gradients_match_finite_differences(shapes, name, seed):
    """For any broadcastable operand shapes, each operand's gradient has the operand's own
    shape and equals the finite-difference derivative of <f(x, y), g>."""
    rng = np.random.default_rng(seed)
    (sx, sy), out_shape = shapes.input_shapes, shapes.result_shape
    dx, dy = BINARY[name]
    x, y = draw(rng, sx, dx), draw(rng, sy, dy)
    g = rng.standard_normal(out_shape)
    fn = getattr(tg, name)
    tx, ty = tg.tensor(x, requires_grad=True), tg.tensor(y, requires_grad=True)
    (fn(tx, ty) * tg.tensor(g)).sum().backward()
    assert tx.grad.shape == sx and ty.grad.shape == sy
    for leaf, value, other, first in ((tx, x, y, True), (ty, y, x, False)):
        v = rng.standard_normal(value.shape)
        eps = 1e-6

        def f(z):
            a, b = (z, other) if first else (other, z)
            return float((fn(tg.tensor(a), tg.tensor(b)).numpy() * g).sum())
        numeric = (f(value + eps * v) - f(value - eps * v)) / (2 * eps)
        analytic = float((leaf.grad.numpy() * v).sum())
        assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-7)


DTYPES = [D.bool_, D.int32, D.int64, D.float16, D.float32, D.float64, D.complex64, D.complex128]


@given(a=st.sampled_from(DTYPES), b=st.sampled_from(DTYPES))
def test_promotion_is_symmetric_and_matches_binary_ops(a, b):
    """promote_types is symmetric and is the dtype a binary op on two such tensors gets."""
    assert D.promote_types(a, b) is D.promote_types(b, a)
    left = tg.ones(2, dtype=a)
    right = tg.ones(2, dtype=b)
    if a is D.bool_ and b is D.bool_:
        return  # bool + bool stays bool; nothing to promote
    assert (left + right).dtype is D.promote_types(a, b)


@given(a=st.sampled_from(DTYPES), scalar=st.sampled_from([True, 3, 2.5, 1 + 2j]))
def test_python_scalars_never_widen_a_tensor_of_their_category(a, scalar):
    """A Python number only changes a tensor's dtype when it is of a higher category, and
    then to that category's default -- except that a complex number keeps a float
    tensor's precision (PyTorch's wrapped-number rule)."""
    t = tg.ones(2, dtype=a)
    got = (t * scalar).dtype if not (a is D.bool_ and isinstance(scalar, bool)) else D.bool_
    rank = {bool: 0, int: 1, float: 2, complex: 3}[type(scalar)]
    if rank <= a.category:
        assert got is a
    elif rank == 3 and a.is_floating_point:
        assert got is a.to_complex()
    else:
        assert got is {1: D.int64, 2: D.get_default_dtype(), 3: D.get_default_dtype().to_complex()}[rank]
