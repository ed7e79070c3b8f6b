"""Guards: a compiled tape is replayed only where the Python control flow it recorded
would go the same way.

Converting a traced value to Python (``if``, ``while``, ``int()``, ``float()``,
``.item()``) records a guard. The tests count how often the Python body of the function
runs (it runs only when the function is traced): a retrace must happen exactly when an
input takes the code down a path not seen before, and never for a path already cached,
and every gradient -- traced or replayed -- must equal the one worked out by hand.
"""
import math
import re

import numpy as np
import pytest

import tracegrad as tg  # noqa: F401
from .tape_mode import tg  # noqa: F811  (grad etc. with mode="tape")


class Counted:
    """``f`` with a count of how many times its Python body ran (= traces)."""

    def __init__(self, f):
        self.f = f
        self.runs = 0
        self.__name__ = f.__name__

    def __call__(self, *args):
        self.runs += 1
        return self.f(*args)


def branchy(x):
    """sum(x^2) where sum(x) > 0, else sum(sin x)."""
    if x.sum() > 0:
        return np.sum(x ** 2)
    return np.sum(np.sin(x))


def branchy_grad(x):
    return 2 * x if x.sum() > 0 else np.cos(x)


POS = np.array([0.5, 1.0, -0.25])
NEG = np.array([-0.5, -1.0, 0.25])


def test_branch_gradient_is_correct_on_both_sides():
    for x in (POS, NEG):
        np.testing.assert_allclose(tg.grad(branchy)(x), branchy_grad(x), rtol=1e-14)


def test_alternating_sides_retrace_once_per_new_side_and_stay_correct():
    """A B A B ...: the body runs on the first A and the first B only; every later call
    replays the variant whose guard holds (never the other one)."""
    f = Counted(branchy)
    g = tg.grad(f)
    expected_runs = [1, 2, 2, 2, 2, 2]
    for i, runs in enumerate(expected_runs):
        x = (POS if i % 2 == 0 else NEG) * (1 + 0.1 * i)  # new values each call
        np.testing.assert_allclose(g(x), branchy_grad(x), rtol=1e-14)
        assert f.runs == runs, f"call {i}"


def test_cached_variant_is_not_replayed_when_the_branch_flips():
    """After tracing side A only, an input for side B must not get A's gradient: the guard
    fails, the body runs again, and B's gradient comes back."""
    f = Counted(branchy)
    g = tg.grad(f)
    g(POS)
    g(POS * 2)
    assert f.runs == 1  # same side: replayed
    np.testing.assert_allclose(g(NEG), np.cos(NEG), rtol=1e-14)
    assert f.runs == 2


def test_branch_guard_is_visible_in_tape_and_source():
    g = tg.grad(branchy)
    g(POS)
    text = str(g.tape)
    assert re.search(r"^\s*guard bool\(%\d+\) == True$", text, re.M), text
    assert "GuardFailed" in g.source
    g(NEG)  # .tape / .source follow the variant last used
    assert re.search(r"^\s*guard bool\(%\d+\) == False$", str(g.tape), re.M)


def test_branch_on_tensor_input():
    """The same guards for a function written with Tensors; gradients equal eager ones."""
    def f(x):
        if x.sum() > 0:
            return (x * x).sum()
        return tg.sin(x).sum()
    g = tg.grad(f)
    for values in (POS, NEG, POS * 3, NEG * 3):
        got = g(tg.tensor(values, dtype=tg.float64))
        x = tg.tensor(values, dtype=tg.float64, requires_grad=True)
        f(x).backward()
        np.testing.assert_allclose(got.numpy(), x.grad.numpy(), rtol=1e-14)


def doubling(x):
    """Double x until sum(x) >= 10: the result is 2^n x with n set by the data."""
    while np.sum(x) < 10:
        x = x * 2
    return np.sum(x)


def doublings(x):
    n = 0
    while np.sum(x) * 2 ** n < 10:
        n += 1
    return n


@pytest.mark.parametrize("scale", [1.0, 3.0, 0.5, 6.0, 1.1, 0.4])
def test_while_loop_with_data_dependent_trip_count(scale):
    x = np.full(2, scale)
    np.testing.assert_allclose(tg.grad(doubling)(x), np.full(2, 2.0 ** doublings(x)))


def test_while_loop_retraces_per_new_trip_count_only():
    f = Counted(doubling)
    g = tg.grad(f)
    seen = set()
    for scale in [1.0, 3.0, 1.2, 0.5, 3.5, 1.1, 0.6, 6.0]:
        x = np.full(2, scale)
        n = doublings(x)
        new = n not in seen
        seen.add(n)
        before = f.runs
        np.testing.assert_allclose(g(x), np.full(2, 2.0 ** n))
        assert f.runs == before + new, f"scale {scale}: {n} doublings"


def count_above(x):
    """x[n]^2 where n = number of entries above 1.5: an int() of a traced value used as an
    index."""
    n = int(np.sum(x > 1.5))
    return x[n] ** 2


@pytest.mark.parametrize("values", [
    [0.0, 1.0, 2.0, 0.5], [2.0, 1.0, 0.3, 0.5], [2.0, 3.0, 0.3, 0.5], [2.0, 3.0, 4.0, 0.5],
    [0.0, 1.0, -2.0, 0.7],
])
def test_int_guard_used_as_index(values):
    x = np.array(values)
    n = int(np.sum(x > 1.5))
    expected = np.zeros(4)
    expected[n] = 2 * x[n]
    np.testing.assert_allclose(tg.grad(count_above)(x), expected)


def test_int_guard_replays_and_retraces_correctly():
    """One staged function called with every index in turn, then again: four traces."""
    f = Counted(count_above)
    g = tg.grad(f)
    cases = [[0.0, 1.0, 2.0, 0.5], [2.0, 1.0, 0.3, 0.5], [2.0, 3.0, 0.3, 0.5], [0.0, 0.1, 0.2, 0.3]]
    for rep in range(2):
        for values in cases:
            x = np.array(values) + 0.01 * rep
            n = int(np.sum(x > 1.5))
            expected = np.zeros(4)
            expected[n] = 2 * x[n]
            np.testing.assert_allclose(g(x), expected)
    assert f.runs == 3  # n = 1, 1, 2, 0: three distinct values
    assert re.search(r"guard (int|index)\(%\d+\) == \d", str(g.tape))


def test_int_of_argmax_used_as_index():
    g = tg.grad(lambda x: x[int(x.argmax())] ** 2)
    np.testing.assert_allclose(g(np.array([1.0, 3.0, 2.0])), [0.0, 6.0, 0.0])
    np.testing.assert_allclose(g(np.array([4.0, 3.0, 2.0])), [8.0, 0.0, 0.0])


def test_traced_integer_scalar_index_is_guarded():
    """Indexing with a traced integer scalar reads its value: a guard, not a constant."""
    def f(x, i):
        return x[i[0]] ** 3
    g = tg.grad(f)
    x = np.array([1.0, 2.0, 3.0])
    for k in (0, 2, 1, 2):
        np.testing.assert_allclose(g(x, np.array([k])), 3 * x ** 2 * (np.arange(3) == k))


@pytest.mark.parametrize("convert", [
    lambda x: tg.stop_gradient(x.sum()).item(),
    lambda x: float(tg.stop_gradient(x.sum())),
], ids=["item", "float-of-stop_gradient"])
def test_python_value_guard_is_a_constant_checked_on_replay(convert):
    """d/dx [x0 * s] with s = sum(x) read as a Python value (a constant): [s, 0, 0]. A
    replay that kept the traced s would give a stale gradient for another input."""
    f = Counted(lambda x: x[0] * convert(x))
    g = tg.grad(f)
    for values in ([1.0, 3.0, 2.0], [1.0, 1.0, 1.0], [1.0, 3.0, 2.0], [5.0, 0.0, 0.0]):
        x = np.array(values)
        np.testing.assert_allclose(g(x), [x.sum(), 0.0, 0.0])
    assert f.runs == 3  # 6.0, 3.0, (6.0 replayed), 5.0
    assert "GuardFailed" in g.source


def test_float_guard_on_a_python_float_argument():
    f = Counted(lambda x: x * float(tg.stop_gradient(x)) ** 2)  # d/dx = x^2 (a constant)
    g = tg.grad(f)
    assert [g(v) for v in (2.0, 3.0, 2.0)] == pytest.approx([4.0, 9.0, 4.0])
    assert f.runs == 2


@pytest.mark.parametrize("convert", [float, complex, math.exp, math.sin, math.log1p],
                         ids=["float", "complex", "math.exp", "math.sin", "math.log1p"])
def test_a_value_being_differentiated_made_a_python_number_is_refused(convert):
    """math.exp(x) calls float(x): a tape would keep a constant, a silent zero gradient."""
    with pytest.raises(tg.TracerError, match=r"\(\) of a value being differentiated.*np\.exp"):
        tg.grad(lambda x: convert(x) * 2.0 + x, mode="tape")(1.5)
    with pytest.raises(tg.TracerError, match="value being differentiated"):
        tg.grad(lambda x: np.sum(x) * float(np.sum(x * x)), mode="tape")(np.ones(3))


def test_python_numbers_of_values_not_being_differentiated_stay_guards():
    """float() of an input not differentiated, of a stop_gradient, of a comparison's
    operand in plain tracing, and int() (piecewise constant) stay guards."""
    g = tg.grad(lambda x, s: x * float(s), argnums=0, mode="tape")
    assert g(2.0, 3.0) == 3.0 and g(2.0, 4.0) == 4.0
    assert "guard float" in str(tg.trace(lambda x: x * float(x))(2.0))
    assert tg.grad(lambda x: x * int(x), mode="tape")(2.5) == 2.0


def sign_pattern(x):
    """Each of four entries takes its own branch: 16 possible paths."""
    s = 0.0
    for i in range(4):
        s = s + (x[i] ** 2 if x[i] > 0 else np.sin(x[i]))
    return s


def pattern(p):
    return np.array([(1 if (p >> i) & 1 else -1) * (0.5 + i) for i in range(4)])


def pattern_grad(x):
    return np.where(x > 0, 2 * x, np.cos(x))


def test_more_branch_patterns_than_cached_variants_stay_correct():
    """16 paths through one signature (more than the 8 cached variants), twice."""
    g = tg.grad(sign_pattern)
    for _ in range(2):
        for p in range(16):
            x = pattern(p)
            np.testing.assert_allclose(g(x), pattern_grad(x), rtol=1e-14)


def test_variant_cache_keeps_the_eight_most_recent_paths():
    """After paths 0..9 the 8 most recent (2..9) replay; path 0, evicted, is traced
    again."""
    f = Counted(sign_pattern)
    g = tg.grad(f)
    for p in range(10):
        g(pattern(p))
    assert f.runs == 10
    for p in range(2, 10):
        np.testing.assert_allclose(g(pattern(p)), pattern_grad(pattern(p)))
    assert f.runs == 10
    np.testing.assert_allclose(g(pattern(0)), pattern_grad(pattern(0)))
    assert f.runs == 11


def test_new_shape_is_a_new_signature():
    """Each shape is traced once; going back to an earlier shape replays it."""
    f = Counted(lambda x: np.sum(np.tanh(x) * x))
    g = tg.grad(f)
    for n, runs in [(3, 1), (5, 2), (3, 2), (4, 3), (5, 3), (4, 3)]:
        x = np.linspace(-1, 1, n)
        np.testing.assert_allclose(g(x), np.tanh(x) + x / np.cosh(x) ** 2, rtol=1e-13)
        assert f.runs == runs, n


def test_new_dtype_and_kind_are_new_signatures():
    """float32 vs float64 and ndarray vs Tensor are separate signatures with results of
    their own dtype and kind."""
    f = Counted(lambda x: (x * x).sum())
    g = tg.grad(f)
    x = np.array([1.0, -2.0])
    assert g(x).dtype == np.float64
    assert g(x.astype(np.float32)).dtype == np.float32
    assert isinstance(g(tg.tensor(x, dtype=tg.float64)), tg.Tensor)
    assert f.runs == 3
    np.testing.assert_allclose(g(x * 3), 6 * x)
    assert f.runs == 3


def test_signature_cache_is_bounded_least_recently_used():
    """Past 32 signatures the least recently used is dropped (traced again when it comes
    back) while the most recent ones still replay."""
    f = Counted(lambda x: np.sum(x ** 3))
    g = tg.grad(f)
    for n in range(1, 34):  # 33 shapes: the first one is evicted
        g(np.ones(n))
    assert f.runs == 33
    np.testing.assert_allclose(g(np.full(33, 2.0)), np.full(33, 12.0))
    assert f.runs == 33
    np.testing.assert_allclose(g(np.full(1, 2.0)), [12.0])
    assert f.runs == 34


def test_guarded_branch_inside_nested_grad():
    """The second derivative of a piecewise function: x^3 for x > 0 (6x), else sin x
    (-sin x), on both sides and back."""
    def f(x):
        return x ** 3 if x > 0 else np.sin(x)
    g2 = tg.grad(tg.grad(f))
    for x in (0.5, -0.5, 2.0, -1.5):
        assert g2(x) == pytest.approx(6 * x if x > 0 else -np.sin(x), rel=1e-12)


RNG = np.random.default_rng(7)


def draws_globally(x):
    return np.sum(x * np.random.randn(3))


def draws_from_a_generator(x):
    return np.sum(x * RNG.normal(size=3))


@pytest.mark.parametrize("f", [draws_globally, draws_from_a_generator])
def test_random_draws_are_not_replayed(f):
    """A replayed tape would return the first call's random numbers on every call."""
    g = tg.grad(f, mode="tape")
    x = np.ones(3)
    for seed in (0, 1):
        np.random.seed(seed)
        state = RNG.bit_generator.state
        got = g(x)
        np.random.seed(seed)
        RNG.bit_generator.state = state
        np.testing.assert_allclose(got, np.random.randn(3) if f is draws_globally else RNG.normal(size=3))


def test_a_function_drawing_nothing_is_still_replayed():
    f = Counted(lambda x: np.sum(np.tanh(x)))
    g = tg.grad(f, mode="tape")
    g(np.ones(3))
    g(np.ones(3))
    assert f.runs == 1
