"""Functions in the style of Tangent's test zoo (google/tangent, tests/functions.py), written
here again: containers built from values being differentiated (``[1, a * a, 2]``,
``dict(a=a, ...)``), comprehensions, a local ``def``, and index writes into a zeros
buffer that becomes active (``rnn``). Each is differentiated in ``mode="ast"`` and
``mode="auto"`` and checked against central finite differences; ``mode="tape"``
answers the same or refuses with a TracerError (a NumPy buffer written with traced
values, or ``np.sum`` of a list, cannot be followed by tracing), never otherwise."""
import numpy as np
import pytest

import tracegrad as tg
from tests.transform.test_ast_constructs import assert_tree_close, numeric

RNG = np.random.default_rng(11)


def _mul(a, b):
    return a * b


def _add(a, b):
    return a + b


def saxpy_call(a, b, c):
    return _add(_mul(a, b), c)


def mul_with_call(a, b):
    return _mul(a, b)


def if_mul_with_call(a, b):
    if a > b:
        out = _mul(a, b)
    else:
        out = _mul(b, a * 2.0)
    return out


def iterpower_with_call(a, n):
    for _ in range(n):
        a = _mul(a, a)
    return a


def iterpower_with_nested_def(a, n):
    def _times(a, n):
        return a * n

    for _ in range(n):
        a = _times(a, a)
    return a


def unpacking_args_saxpy(abc):
    a, b, c = abc
    return a * b + c


def dict_saxpy(val):
    return val["a"] * val["b"] + val["c"]


def dict_wrapper(abc):
    a, b, c = abc
    return dict_saxpy(dict(a=a, b=b, c=c))


def nested_dict(p):
    return p["i"]["j"] * p["i"]["k"]


def passthru_pack(a, b, c, i):
    packed = a, b, c
    return packed[i]


def passthru_unpack(abc):
    a, _, _ = abc
    return a


def anf_list(a):
    b = [1, a * a, 2]
    return np.sum(b)


def deep_anf_list(x):
    b = [1, x[0] * x[1] * x[2], 3]
    return np.sum(b)


def list_and_subscript(a):
    xs = [1.0, a, 3.0]
    return xs[0] * xs[1]


def cast_sum(x):
    return np.sum(np.array(x))


def listcomp(a):
    return np.sum([i * 3 for i in a])


def active_subscript(x):
    y = np.zeros_like(x)
    for i in range(len(x)):
        y[i] = x[i]
    return np.sum(y)


def init_array_grad_maybe_active(x):
    h = np.zeros((len(x), 3))
    for t in range(len(h)):
        h[t] = x[t]
    return np.sum(h)


def rnn(inputs, W):
    h = np.zeros((4, 3))
    for t in range(3):
        h[t + 1] = np.dot(inputs[t], W) + h[t]
    return np.sum(h[1:])


def augassign(a):
    x = a * a
    x *= x
    return x


def bilinear(x, h, U, W, b):
    y = np.dot(x, W)
    y = y + np.dot(h, U)
    y = y + b
    y = np.tanh(y)
    return np.sum(y)


def extended_slice(x):
    return np.sum(x[::2, np.newaxis])


def _n(*shape):
    return RNG.normal(size=shape)


ZOO = [
    (saxpy_call, (1.3, -0.7, 0.4), (0, 1, 2)),
    (mul_with_call, (1.3, -0.7), (0, 1)),
    (if_mul_with_call, (1.3, -0.7), (0, 1)),
    (if_mul_with_call, (-1.3, 0.7), (0, 1)),
    (iterpower_with_call, (1.1, 3), 0),
    (iterpower_with_nested_def, (1.1, 3), 0),
    (unpacking_args_saxpy, ((1.3, -0.7, 0.4),), 0),
    (dict_saxpy, ({"a": 1.3, "b": -0.7, "c": 0.4},), 0),
    (dict_wrapper, ((1.3, -0.7, 0.4),), 0),
    (nested_dict, ({"i": {"j": 1.3, "k": -0.7}},), 0),
    (passthru_pack, (1.3, -0.7, 0.4, 1), (0, 1, 2)),
    (passthru_unpack, ((1.3, -0.7, 0.4),), 0),
    (anf_list, (1.3,), 0),
    (deep_anf_list, (_n(3),), 0),
    (list_and_subscript, (1.3,), 0),
    (cast_sum, (_n(4),), 0),
    (listcomp, (_n(4),), 0),
    (active_subscript, (_n(4),), 0),
    (init_array_grad_maybe_active, (_n(4, 3),), 0),
    (rnn, (_n(3, 5), _n(5, 3)), (0, 1)),
    (augassign, (1.3,), 0),
    (bilinear, (_n(3), _n(4), _n(4, 2), _n(3, 2), _n(2)), (0, 1, 2, 3, 4)),
    (extended_slice, (_n(5, 2),), 0),
]
IDS = [f"{fn.__name__}{k}" for k, (fn, _, _) in enumerate(ZOO)]


def _expected(fn, args, argnums):
    nums = (argnums,) if isinstance(argnums, int) else argnums
    want = tuple(numeric(fn, list(args), n) for n in nums)
    return want[0] if isinstance(argnums, int) else want


@pytest.mark.parametrize("mode", ["ast", "auto"])
@pytest.mark.parametrize("fn, args, argnums", ZOO, ids=IDS)
def test_ast_and_auto_match_finite_differences(fn, args, argnums, mode):
    got = tg.grad(fn, argnums=argnums, mode=mode)(*args)
    assert_tree_close(got, _expected(fn, args, argnums))


@pytest.mark.parametrize("fn, args, argnums", ZOO, ids=IDS)
def test_the_tape_answers_the_same_or_refuses(fn, args, argnums):
    try:
        got = tg.grad(fn, argnums=argnums, mode="tape")(*args)
    except tg.TracerError:
        return
    assert_tree_close(got, _expected(fn, args, argnums))


@pytest.mark.parametrize("fn, args, argnums", [c for c in ZOO if not any(
    isinstance(a, (dict, tuple, int)) and not isinstance(a, bool) for a in c[1])], ids=lambda c: getattr(c, "__name__", ""))
def test_forward_mode(fn, args, argnums):
    nums = (argnums,) if isinstance(argnums, int) else argnums
    tangents = tuple(np.ones_like(a) if n in nums else np.zeros_like(a) for n, a in enumerate(args))
    want = sum(float(np.sum(numeric(fn, list(args), n) * tangents[n])) for n in nums)
    _, tangent = tg.jvp(fn, args, tangents, mode="ast")
    np.testing.assert_allclose(tangent, want, rtol=1e-6, atol=1e-8)


def test_rnn_source_reads_like_the_loop_it_came_from():
    src = tg.grad(rnn, argnums=1, mode="ast").source
    assert "h = np.zeros((4, 3))" in src
    assert "for t in reversed(range(3)):" in src
    assert "# grad of: h[t + 1] = np.dot(inputs[t], W) + h[t]" in src
