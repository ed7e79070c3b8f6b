"""``np.int64(x)`` (and the other integer and bool scalar types) of a traced value: an
integer array carries no derivative, so the tape hands NumPy the integers, guarded (a
replay is valid only while the cast gives the same integers; otherwise it traces again),
and the AST path takes the call as a constant. A float conversion of a value being
differentiated stays refused (its derivative would be lost)."""
import numpy as np
import pytest

import tracegrad as tg
from tests.transform.numeric import numeric

MODES = ["tape", "ast"]
RNG = np.random.default_rng(3)


def gather_by_last_column(W):
    rows = W[:, :-1]
    idx = np.int64(W[:, -1])
    assert idx.dtype == np.int64
    return np.sum(rows[idx] ** 2) + np.sum(np.sin(W))


def _matrix(last):
    W = RNG.normal(size=(5, 4))
    W[:, -1] = last
    return W


@pytest.mark.parametrize("mode", MODES)
def test_an_integer_cast_used_as_an_index(mode):
    g = tg.grad(gather_by_last_column, mode=mode)
    for last in ([0.2, 1.3, 2.5, 1.5, 3.9], [4.1, 4.5, 0.5, 0.3, 2.2]):  # (other integers: traced again)
        W = _matrix(last)
        np.testing.assert_allclose(g(W), numeric(gather_by_last_column, W), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", MODES)
def test_the_replayed_tape_checks_the_integers(mode):
    g = tg.grad(gather_by_last_column, mode=mode)
    W1, W2 = _matrix([0.5, 1.5, 2.5, 3.5, 4.5]), _matrix([4.5, 4.5, 4.5, 4.5, 4.5])
    g(W1)
    np.testing.assert_allclose(g(W2), numeric(gather_by_last_column, W2), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g(W1), numeric(gather_by_last_column, W1), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", [np.int32, np.uint8, np.bool_])
def test_other_integer_and_bool_types(mode, kind):
    def f(x):
        return np.sum(x * kind(x > 0.5 if kind is np.bool_ else np.abs(x) * 3))
    x = np.array([0.2, 0.9, 1.7])
    np.testing.assert_allclose(tg.grad(f, mode=mode)(x), numeric(f, x), rtol=1e-6)
    _, t = tg.jvp(f, (x,), (np.ones(3),), mode=mode)
    np.testing.assert_allclose(t, numeric(f, x).sum(), rtol=1e-6)


def test_a_float_conversion_of_a_differentiated_value_is_still_refused():
    def f(x):
        return np.sum(x * np.float64(x))
    with pytest.raises(tg.TracerError, match="converted to a NumPy array"):
        tg.grad(f, mode="tape")(np.ones(3))


_BUFFER = np.zeros(3, dtype=np.int64)  # (a plain array: not the tape's)


def test_writing_a_traced_value_into_a_plain_integer_array_is_still_refused():
    def f(x):
        _BUFFER[0] = x[0]
        return np.sum(x) + _BUFFER[0]
    with pytest.raises((tg.TracerError, ValueError)):
        tg.grad(f, mode="tape")(np.ones(3))
