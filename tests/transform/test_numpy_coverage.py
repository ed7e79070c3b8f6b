"""Every NumPy and SciPy name the tape claims (``numpy_map.catalog.claimed``) is
differentiated here, as users call it, in tape and AST mode: the gradient against central
finite differences (complex arguments: JAX's convention df/dx - i df/dy), ``mode="auto"``
against ``mode="tape"``, and grad of grad (a Hessian-vector product through the inner
gradient) against differences of the gradient. Names whose results carry no derivative
are checked to be recorded as NumPy's exact constant inside a differentiated function.

The examples are in :mod:`tests.transform.numpy_examples`; the first two tests keep that
list and the catalog in step, so a name added to the tape without an example fails here.
"""
import functools
import inspect
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tests.conftest import HAS_SCIPY
from tracegrad.transform.tape.numpy_map.catalog import SECTIONS, claimed

from .numpy_examples import EXAMPLES, NOT_DIFFERENTIABLE

# What the catalog lists that is not a differentiable function of NumPy's or SciPy's: no
# example can be written (none today; the test below keeps it so).
NOT_A_FUNCTION = {}


TESTS = ("grad", "auto", "second", "constant")


def _failing(reason, ids, modes, tests=TESTS):
    return {(i, m, t): reason for i in ids for m in modes for t in tests}


# Examples that fail today, by (example, mode, test) ("auto": the auto-versus-tape test):
# bugs and refusals for the lead, marked strict so that a fix shows here.
KNOWN_BUGS = {
    **_failing("AST mode refuses NumPy's in-place writers (a call whose result is not used); the tape claims them",
               ["np_put", "np_put_along_axis", "np_place", "np_putmask"], ["ast"]),
    **_failing("refused: numpy.gradient with coordinate arrays (only uniform spacings)", ["np_gradient_axis"],
               ["tape", "ast", "auto"]),
}


def _param(ex, mode, test):
    marks = [pytest.mark.scipy] if ex.scipy else []
    if (ex.id, mode, test) in KNOWN_BUGS:
        marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[ex.id, mode, test]))
    return pytest.param(ex, mode, id=f"{ex.id}-{mode}", marks=marks)


def _params(examples, modes, test):
    return [_param(ex, mode, test) for ex in examples for mode in modes]


def _known(kind):
    """The test ``kind``, whose expected failures (KNOWN_BUGS) are re-raised in one line:
    pytest would format each one's whole traceback, re-parsing every file in it (most
    of this file's run time)."""
    def wrap(test):
        @functools.wraps(test)
        def run(ex, mode):
            if (ex.id, mode, kind) not in KNOWN_BUGS:
                return test(ex, mode)
            try:
                test(ex, mode)
            except Exception as e:  # noqa: BLE001 (whatever it raises, in one line)
                raise AssertionError(f"{type(e).__name__}: {e}") from None
        return run
    return wrap


def _quiet(f):
    """``f`` with NumPy's floating-point warnings off (finite differences through NaN
    and inf on purpose), and its deprecation warnings (np.row_stack)."""
    @functools.wraps(f)
    def run(*args):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return f(*args)
    return run


def _replace(args, k, value):
    return args[:k] + (value,) + args[k + 1:]


def _nudged(args, k, i, step):
    """``args`` with element ``i`` of argument ``k`` moved by ``step``."""
    y = args[k].copy()
    y.flat[i] += step
    return _replace(args, k, y)


@functools.cache
def _finite_differences(ex, eps=1e-6):
    """The gradient of ``ex`` by central differences, element by element of each
    differentiated argument (complex ones: df/dx - i df/dy)."""
    args = ex.args()
    f = _quiet(ex.fn)
    loss = (lambda *a: f(*a)[0]) if ex in NOT_DIFFERENTIABLE else f
    grads = []
    for k in ex.nums(args):
        g = np.zeros_like(args[k])
        for i in range(g.size):
            d = (loss(*_nudged(args, k, i, eps)) - loss(*_nudged(args, k, i, -eps))) / (2 * eps)
            if g.dtype.kind == "c":
                d = d - 1j * (loss(*_nudged(args, k, i, 1j * eps)) - loss(*_nudged(args, k, i, -1j * eps))) / (2 * eps)
            g.flat[i] = d
        grads.append(g)
    return tuple(grads)


def _check_gradient(ex, got, args):
    want = _finite_differences(ex)
    nums = ex.nums(args)
    assert len(got) == len(nums)
    for k, g, w in zip(nums, got, want):
        g = np.asarray(g)
        assert g.shape == args[k].shape and g.dtype == args[k].dtype, (g.shape, g.dtype)
        np.testing.assert_allclose(g, w, rtol=ex.rtol, atol=1e-6 * max(1.0, np.abs(w).max(initial=0)))


# -- the list is complete ------------------------------------------------------------------------

def test_every_claimed_name_has_an_example():
    covered = {ex.name for ex in EXAMPLES + NOT_DIFFERENTIABLE}
    missing = sorted(set(claimed()) - covered - set(NOT_A_FUNCTION))
    assert not missing, f"claimed by the tape without an example in numpy_examples.py: {missing}"


def test_every_example_names_a_claimed_name():
    names = claimed()
    unknown = sorted({ex.name for ex in EXAMPLES + NOT_DIFFERENTIABLE
                      if ex.name not in names and (HAS_SCIPY or not ex.scipy)})
    assert not unknown, f"examples of names the tape does not claim: {unknown}"
    both = {ex.name for ex in EXAMPLES} & {ex.name for ex in NOT_DIFFERENTIABLE}
    assert not both, f"names both differentiable and not: {sorted(both)}"


# How an example may spell its function other than by name (an alias, an operator)
SPELLINGS = {"absolute": ("np.abs(",), "conjugate": ("np.conj(",), "power": ("**",), "multiply": (" * ",),
             "divide": (" / ",), "matmul": (" @ ",), "greater_equal": (" >= ",), "less_equal": (" <= ",),
             "not_equal": (" != ",), "bitwise_or": (" | ",), "invert": ("~",)}


@pytest.mark.parametrize("ex", [pytest.param(ex, id=ex.id) for ex in EXAMPLES + NOT_DIFFERENTIABLE])
def test_each_example_calls_its_function(ex):
    """(so that an example filed under the wrong name shows)"""
    leaf = ex.name
    for section in sorted(SECTIONS, key=len, reverse=True):
        if leaf.startswith(section + "."):
            leaf = leaf[len(section) + 1:]
            break
    source = inspect.getsource(ex.fn)
    assert any(s in source for s in (f".{leaf}(",) + SPELLINGS.get(leaf, ())), (ex.name, source)


def test_the_catalog_lists_only_functions():
    assert not set(NOT_A_FUNCTION) & set(claimed())


# -- gradients ------------------------------------------------------------------------------------

@pytest.mark.parametrize("ex, mode", _params(EXAMPLES, ("tape", "ast"), "grad"))
@_known("grad")
def test_gradient_matches_finite_differences(ex, mode):
    args = ex.args()
    got = _quiet(tg.grad(ex.fn, argnums=ex.nums(args), mode=mode))(*args)
    _check_gradient(ex, got, args)


@pytest.mark.parametrize("ex, mode", _params(EXAMPLES, ("auto",), "auto"))
@_known("auto")
def test_auto_mode_gives_the_tapes_gradient(ex, mode):
    args = ex.args()
    nums = ex.nums(args)
    tape = _quiet(tg.grad(ex.fn, argnums=nums, mode="tape"))(*args)
    auto = _quiet(tg.grad(ex.fn, argnums=nums, mode=mode))(*args)
    for a, t in zip(auto, tape):
        np.testing.assert_allclose(a, t, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(t).max(initial=0)))


def _directions(args, nums):
    """A fixed direction per differentiated argument (complex for complex ones)."""
    out = []
    for k in nums:
        x = args[k]
        v = np.cos(np.arange(x.size) * 1.3 + 0.4).reshape(x.shape)
        out.append(v + 1j * np.sin(np.arange(x.size) * 0.7 + 1.1).reshape(x.shape) if x.dtype.kind == "c" else v)
    return out


@pytest.mark.parametrize("ex, mode", _params([ex for ex in EXAMPLES if ex.smooth], ("tape", "ast"), "second"))
@_known("second")
def test_second_order_matches_finite_differences(ex, mode):
    """grad of <grad f, v> (the Hessian applied to v; the inner gradient in ``mode``, the
    outer on the tape) against central differences of the (first-order checked) gradient
    along v. For complex arguments both are the complex form of the real Hessian applied
    to (Re v, Im v): <g, v> = Re(sum(g * v)) is the real directional derivative."""
    args = ex.args()
    nums = ex.nums(args)
    vs = _directions(args, nums)
    inner = tg.grad(ex.fn, argnums=nums, mode=mode)

    def along(*a):
        total = 0.0
        for g, v in zip(inner(*a), vs):
            total = total + np.sum(np.real(g * v))
        return total
    got = _quiet(tg.grad(along, argnums=nums, mode="tape"))(*args)
    first = _quiet(tg.grad(ex.fn, argnums=nums, mode="tape"))
    eps = 1e-5

    def shifted(step):
        out = args
        for k, v in zip(nums, vs):
            out = _replace(out, k, args[k] + step * v)
        return first(*out)
    want = [(p - m) / (2 * eps) for p, m in zip(shifted(eps), shifted(-eps))]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(w).max(initial=0)))


# -- results without a derivative -----------------------------------------------------------------

def _same(got, want):
    """``got`` is NumPy's ``want``: the same value, dtype and shape (nested in tuples)."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            _same(g, w)
    elif isinstance(want, np.dtype):
        assert got == want, (got, want)
    else:
        assert type(got) is type(want) or isinstance(got, (np.ndarray, np.generic)), (got, want)
        assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == np.asarray(want).dtype, (got, want)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("ex, mode", _params(NOT_DIFFERENTIABLE, ("tape", "ast", "auto"), "constant"))
@_known("constant")
def test_results_without_derivative_are_numpys_constants(ex, mode):
    args = ex.args()
    grads, result = _quiet(tg.grad(ex.fn, argnums=ex.nums(args), has_aux=True, mode=mode))(*args)
    _same(result, _quiet(ex.fn)(*args)[1])
    _check_gradient(ex, grads, args)
