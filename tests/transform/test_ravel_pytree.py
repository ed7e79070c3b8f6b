"""ravel_pytree (JAX's name; HIPS autograd's misc.flatten): one vector for a tree of arrays,
round trips exactly, and is differentiable both ways in every staged mode."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.flatten_util import ravel_pytree

from .numeric import numeric

MODES = ["tape", "ast", "auto"]
rng = np.random.default_rng(0)


def test_leaves_in_order_and_round_trip():
    tree = (1.0, rng.standard_normal((2, 3)), [rng.standard_normal((1, 4)), {"x": 2.0, "y": rng.standard_normal((4, 2))}])
    flat, unravel = ravel_pytree(tree)
    assert flat.shape == (20,) and flat.dtype == np.float64
    np.testing.assert_array_equal(flat[1:7], tree[1].ravel())
    np.testing.assert_array_equal(flat[7:11], tree[2][0].ravel())
    back = unravel(flat)
    assert type(back) is tuple and type(back[2]) is list and set(back[2][1]) == {"x", "y"}
    np.testing.assert_array_equal(back[2][1]["y"], tree[2][1]["y"])
    assert back[0] == 1.0 and np.shape(back[0]) == ()
    np.testing.assert_array_equal(ravel_pytree(back)[0], flat)


@pytest.mark.filterwarnings("error")  # no ComplexWarning from restoring a real leaf
def test_dtypes_are_promoted_then_restored():
    tree = {"a": np.arange(3, dtype=np.float32), "b": np.array([1, 2], dtype=np.int32), "c": 1 + 2j}
    flat, unravel = ravel_pytree(tree)
    assert flat.dtype == np.complex128
    back = unravel(flat)
    assert back["a"].dtype == np.float32 and back["b"].dtype == np.int32
    assert back["c"] == 1 + 2j
    with pytest.raises(TypeError, match=r"expected an array of dtype complex128 .*got float64"):
        unravel(flat.real)
    flat32, unravel32 = ravel_pytree([np.ones(2, np.float32)])
    assert flat32.dtype == np.float32 and unravel32(flat32)[0].dtype == np.float32


def test_empty_trees_and_empty_leaves():
    flat, unravel = ravel_pytree(((), [], {}))
    assert flat.shape == (0,) and flat.dtype == np.float64
    assert unravel(flat) == ((), [], {})
    tree = (np.zeros((0, 3)), [np.ones(2), 2.5], ())
    flat, unravel = ravel_pytree(tree)
    assert flat.shape == (3,)
    back = unravel(flat)
    assert back[0].shape == (0, 3) and back[1][1] == 2.5


def test_bad_input_is_named():
    with pytest.raises(TypeError, match=r"leaves must be arrays or numbers; got str"):
        ravel_pytree({"a": "text"})
    with pytest.raises(TypeError, match=r"got NoneType"):
        ravel_pytree([np.ones(2), None])
    _, unravel = ravel_pytree([np.ones(2), 1.0])
    with pytest.raises(ValueError, match=r"expected a 1-d array of 3 elements, got shape \(4,\)"):
        unravel(np.ones(4))


def _loss_of_leaves(a, b):
    flat, _ = ravel_pytree([a, {"k": b}, 2.0])
    return np.sum(np.sin(flat) * np.arange(1, flat.size + 1))


def _loss_through_unravel(vector, unravel):
    tree = unravel(vector)
    return np.sum(tree[0] ** 2) + np.sum(np.cos(tree[1]["k"])) * tree[2]


@pytest.mark.parametrize("mode", MODES)
def test_gradient_through_ravel(mode):
    a, b = 0.7, rng.standard_normal((2, 2))
    ga, gb = tg.grad(_loss_of_leaves, argnums=(0, 1), mode=mode)(a, b)
    assert isinstance(ga, float)
    np.testing.assert_allclose(ga, numeric(lambda x: _loss_of_leaves(float(x), b), np.array(a)), rtol=1e-6)
    np.testing.assert_allclose(gb, numeric(lambda x: _loss_of_leaves(a, x), b), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_gradient_through_unravel(mode):
    flat, unravel = ravel_pytree([rng.standard_normal(3), {"k": rng.standard_normal((2, 2))}, 1.5])
    g = tg.grad(_loss_through_unravel, mode=mode)(flat, unravel)
    np.testing.assert_allclose(g, numeric(_loss_through_unravel, flat, unravel), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("mode", MODES)
def test_gradient_with_respect_to_a_tree_matches_the_raveled_gradient(mode):
    """The pytree gradient, raveled, is the gradient of the function of the flat vector."""
    tree = {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    flat, unravel = ravel_pytree(tree)

    def loss(t):
        return np.sum(np.tanh(np.ones((4, 3)) @ t["w"] + t["b"]) ** 2)

    g_tree = tg.grad(loss, mode=mode)(tree)
    g_flat = tg.grad(lambda v: loss(unravel(v)), mode="tape")(flat)
    np.testing.assert_allclose(ravel_pytree(g_tree)[0], g_flat, rtol=1e-12)
