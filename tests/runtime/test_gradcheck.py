"""``autograd.gradcheck`` / ``gradgradcheck`` / ``GradcheckError`` as PyTorch defines them.

Pinned down here: True for correct custom Functions and built-in ops (float64); a wrong
backward raises ``GradcheckError`` (a ``RuntimeError``) that names the output/input pair
and prints both Jacobians (PyTorch's layout: one row per input element), or returns False
with ``raise_exception=False``; an output that ignores autograd but moves numerically is
caught; PyTorch's warning for non-double inputs and error for no input requiring grad;
``eps``, ``atol`` and ``rtol`` mean what they mean in PyTorch (|a - n| <= atol + rtol*|n|,
central differences of step eps); ``gradgradcheck`` checks second derivatives.

Expected verdicts come from calculus: the wrong backwards below are wrong by a known amount
(x 1.1, a missing term), and a central difference of x^3 with step h is 3x^2 + h^2 exactly.
The tracegrad-only report of mismatching entries is checked by its own test; the oracle
tests at the end (marked ``torch``) compare verdicts, warnings and messages with PyTorch.
"""
import functools
import importlib
import re
import warnings

import numpy as np
import pytest

from ._functions import with_shared
from ._helpers import LIB, npy, raises_like, tg

XS = [0.1, 0.5, -0.3]
NOT_DOUBLE = "Input #{} requires gradient and is not a double precision floating point"
NO_INPUT = ("gradcheck expects at least one input tensor to require gradient, but none of them have "
            "requires_grad=True.")


def _f(values=XS, lib=None, requires_grad=True, dtype=np.float64):
    lib = lib or tg
    return lib.tensor(np.asarray(values, dtype=dtype), requires_grad=requires_grad)


def _gradcheck_error(lib=None):
    """GradcheckError where PyTorch keeps it (``torch.autograd.gradcheck`` the module)."""
    return importlib.import_module(f"{(lib or tg).__name__}.autograd.gradcheck").GradcheckError


@functools.cache
def _functions(lib):
    """Right and deliberately wrong custom Functions, written once against ``lib``: the right
    ones of ``_functions.shared_functions`` (Exp, Cube, CubeSetup, CubeOnce, MulAdd) and this
    module's own."""
    Function = lib.autograd.Function

    class BadExp(Function):
        """Backward 10% too large: analytical = 1.1 * exp(x)."""
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y * 1.1

    class CubeDetached(Function):
        """First derivative right, but backward detaches x: its own derivative is lost."""
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x.detach() ** 2 * g

    class MulAddBad(Function):
        """(a*b, a+b) whose backward forgets d(a+b)/db."""
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b, a + b

        @staticmethod
        def backward(ctx, g_prod, g_sum):
            a, b = ctx.saved_tensors
            return g_prod * b + g_sum, g_prod * a

    class BadWeightedSum(Function):
        """R^3 -> R^2, both outputs sum(a * [1, 2, 3]); backward says weight 4 for a[2]."""
        @staticmethod
        def forward(ctx, a):
            s = (a * lib.tensor([1.0, 2.0, 3.0], dtype=a.dtype)).sum()
            return s * lib.ones(2, dtype=a.dtype)

        @staticmethod
        def backward(ctx, g):
            return g.sum() * lib.tensor([1.0, 2.0, 4.0], dtype=g.dtype)

    class Scale(Function):
        """x * k with a Python-number k."""
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    return with_shared(lib, locals())


F = _functions(tg)


def _check(fn, *args, **kwargs):
    """gradcheck with float64-warnings turned into errors (none is expected for float64)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return tg.autograd.gradcheck(fn, *args, **kwargs)


# ------------------------------------------------------------------------------ passing


@pytest.mark.parametrize("fn,make_inputs", [
    (lambda: F.Exp.apply, lambda: (_f(),)),
    (lambda: F.Cube.apply, lambda: (_f(),)),
    (lambda: F.CubeSetup.apply, lambda: (_f(),)),
    (lambda: F.MulAdd.apply, lambda: (_f(), _f([1.0, -2.0, 3.0]))),
    (lambda: F.Scale.apply, lambda: (_f(), 3.0)),
    (lambda: tg.tanh, lambda: (_f(),)),
    (lambda: lambda a, b: a * b + a.sin() / (b * b + 1), lambda: (_f(), _f([1.0, -2.0, 3.0]))),
    (lambda: lambda a, b: a @ b, lambda: (_f(np.arange(6.0).reshape(2, 3) / 7), _f(np.ones((3, 2)) / 3))),
    (lambda: lambda a, b: a + b, lambda: (_f(np.ones((2, 3))), _f([1.0, 2.0, 3.0]))),
    (lambda: lambda a: a.sum(), lambda: (_f(),)),
    (lambda: lambda a: (a.exp(), a * 2), lambda: (_f(),)),
    (lambda: lambda a, b: a * b, lambda: (_f(), _f([1.0, 2.0, 3.0], requires_grad=False))),
], ids=["Exp", "Cube", "CubeSetup", "MulAdd", "Scale-number-arg", "tanh", "mul-sin-div", "matmul",
        "broadcast-add", "sum", "two-outputs", "constant-input"])
def test_gradcheck_true_on_correct_gradients(fn, make_inputs):
    """Custom Functions with right backwards and built-in ops pass in float64."""
    assert _check(fn(), make_inputs()) is True


def test_inputs_may_be_a_tensor_or_a_list():
    """A lone tensor and a list are accepted as the inputs, as in PyTorch."""
    assert _check(F.Exp.apply, _f()) is True
    assert _check(lambda a, b: a * b, [_f(), _f()]) is True


def test_gradcheck_leaves_inputs_as_they_were():
    """The perturbations are undone and no .grad is accumulated."""
    x = _f()
    gradcheck_result = _check(F.Cube.apply, (x,))
    assert gradcheck_result is True
    np.testing.assert_array_equal(npy(x), XS)
    assert x.grad is None and x.requires_grad and x.is_leaf


def test_non_contiguous_input_is_perturbed_in_its_own_storage():
    """A transposed input: each perturbation reaches the function (a correct gradient
    passes, the Jacobian is not all zeros) and the version counter never moves."""
    x = tg.tensor(np.arange(6.0).reshape(2, 3) / 7).t().requires_grad_()
    assert not x.is_contiguous()
    v0 = x._version
    assert _check(lambda a: (a * a).sum(0), (x,)) is True
    assert x._version == v0
    with pytest.raises(_gradcheck_error(), match="Jacobian mismatch"):
        _check(lambda a: (a * a).detach().sum(0) + a.sum(0) * 0, (x,))


@pytest.mark.skipif(LIB == "torch", reason="PyTorch leaves the perturbed value in place")
def test_input_is_restored_when_the_function_raises():
    x = _f()
    calls = []

    def fails_on_second_call(a):
        calls.append(1)
        if len(calls) == 2:
            raise ValueError("boom")
        return a * 2

    with pytest.raises(ValueError, match="boom"):
        _check(fails_on_second_call, (x,))
    np.testing.assert_array_equal(npy(x), XS)


# ------------------------------------------------------------------------------ failing


def test_gradcheck_error_is_a_runtime_error():
    assert issubclass(_gradcheck_error(), RuntimeError)


@pytest.mark.skipif(LIB == "torch", reason="a tracegrad extension: torch.autograd has no GradcheckError name")
def test_gradcheck_error_is_exported_from_autograd():
    assert tg.autograd.GradcheckError is _gradcheck_error()


def test_wrong_backward_raises_gradcheck_error():
    """BadExp's analytical Jacobian is 1.1 * the numerical one: GradcheckError naming the
    pair and printing both Jacobians (numerical first)."""
    with pytest.raises(_gradcheck_error()) as info:
        _check(F.BadExp.apply, (_f(),))
    text = str(info.value)
    assert text.startswith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:tensor(")
    assert "\nanalytical:tensor(" in text
    # the 4-digit printouts of both diagonals (exp(x) and 1.1 * exp(x))
    for value in np.exp(XS):
        assert f"{value:.4f}" in text.split("analytical:")[0]
        assert f"{1.1 * value:.4f}" in text.split("analytical:")[1]


def test_wrong_backward_returns_false_without_raise():
    assert _check(F.BadExp.apply, (_f(),), raise_exception=False) is False
    assert _check(F.BadExp.apply, (_f(),), raise_exception=False, fast_mode=True) is False


@pytest.mark.skipif(LIB == "torch", reason="tracegrad's own report of the differing entries")
def test_report_lists_the_differing_entries_largest_first():
    """After the Jacobians, tracegrad lists each differing (output, input) entry with both
    values, the largest difference first: here 0.1 * exp(x), largest at x = 0.5."""
    with pytest.raises(_gradcheck_error()) as info:
        _check(F.BadExp.apply, (_f(),))
    report = str(info.value).split("\n\n", 1)[1]
    lines = report.splitlines()
    assert lines[0] == "3 of 9 entries differ:"
    expected = [f"  d output[{i}] / d input[{i}]: numerical {np.exp(XS[i]):.6g}, analytical "
                f"{1.1 * np.exp(XS[i]):.6g} (off by {0.1 * np.exp(XS[i]):.3g})" for i in (1, 0, 2)]
    assert lines[1:] == expected


@pytest.mark.skipif(LIB == "torch", reason="tracegrad's own report of the differing entries")
def test_report_names_rows_and_columns_of_a_non_square_jacobian():
    """R^3 -> R^2 with a wrong weight for a[2]: entries (output 0, input 2) and (output 1,
    input 2) differ (numerical 3, analytical 4) and nothing else."""
    with pytest.raises(_gradcheck_error()) as info:
        _check(F.BadWeightedSum.apply, (_f(),))
    report = str(info.value).split("\n\n", 1)[1]
    assert report.splitlines()[0] == "2 of 6 entries differ:"
    for r in (0, 1):
        assert f"  d output[{r}] / d input[2]: numerical 3, analytical 4 (off by 1)" in report
    assert "d input[0]" not in report and "d input[1]" not in report


def test_jacobians_are_printed_one_row_per_input_element():
    """PyTorch prints the Jacobians of an R^3 -> R^2 function as 3 x 2 (rows: input elements,
    columns: output elements)."""
    with pytest.raises(_gradcheck_error()) as info:
        _check(F.BadWeightedSum.apply, (_f(),))
    numerical = str(info.value).split("numerical:")[1].split("analytical:")[0]
    rows = re.findall(r"\[([^\[\]]+)\]", numerical)
    assert len(rows) == 3 and all(len(r.split(",")) == 2 for r in rows), numerical


def test_mismatch_names_the_output_and_input():
    """MulAddBad forgets d(a+b)/db = 1: the pair reported is output 1, input 1."""
    with pytest.raises(_gradcheck_error(), match=r"^Jacobian mismatch for output 1 with respect to input 1,\n"):
        _check(F.MulAddBad.apply, (_f(), _f([1.0, 2.0, 3.0])))


def test_output_that_ignores_autograd_is_caught():
    """An output computed from a detached input moves with the input but has no gradient:
    PyTorch raises 'Numerical gradient for function expected to be zero'."""
    with pytest.raises(_gradcheck_error(), match="Numerical gradient for function expected to be zero"):
        _check(lambda a: a.detach() * 2, (_f(),))
    assert _check(lambda a: a.detach() * 2, (_f(),), raise_exception=False) is False


# ------------------------------------------------------------------------------ dtypes and argument errors


def test_float32_input_warns():
    """A float32 input requiring grad: PyTorch's UserWarning naming its index; with loose
    tolerances and a large step the check can still pass."""
    x32 = _f(dtype=np.float32)
    with pytest.warns(UserWarning, match=re.escape(NOT_DOUBLE.format(0))):
        assert tg.autograd.gradcheck(F.Exp.apply, (x32,), eps=1e-3, atol=1e-2, rtol=1e-2) is True
    with pytest.warns(UserWarning, match=re.escape(NOT_DOUBLE.format(1))):
        tg.autograd.gradcheck(lambda a, b: a * b, (_f(), _f(dtype=np.float32)), eps=1e-3, atol=1e-2,
                              rtol=1e-2)


def test_no_input_requiring_grad_is_a_value_error():
    with pytest.raises(ValueError) as info:
        tg.autograd.gradcheck(F.Exp.apply, (_f(requires_grad=False),))
    assert str(info.value) == NO_INPUT


# ------------------------------------------------------------------------------ eps, atol, rtol


def test_eps_is_the_central_difference_step():
    """For x^3 the central difference with step h is exactly 3x^2 + h^2: with eps=0.1 the
    numerical Jacobian is off by 0.01, which atol=0.005 rejects and atol=0.02 accepts."""
    cube = lambda a: a ** 3
    assert _check(cube, (_f(),)) is True
    assert _check(cube, (_f(),), eps=0.1, atol=0.005, rtol=0, raise_exception=False) is False
    assert _check(cube, (_f(),), eps=0.1, atol=0.02, rtol=0) is True
    with pytest.raises(_gradcheck_error()) as info:
        _check(cube, (_f(),), eps=0.1, atol=0.005, rtol=0)
    numerical = str(info.value).split("numerical:")[1].split("analytical:")[0]
    for x in XS:
        assert f"{3 * x * x + 0.01:.4f}" in numerical


@pytest.mark.parametrize("atol,rtol,passes", [
    (0.5, 0.0, True),     # largest difference is 0.1 * e^0.5 = 0.165
    (0.1, 0.0, False),
    (0.0, 0.2, True),     # every difference is 0.1 * numerical
    (0.0, 0.05, False),
    (1e-5, 1e-3, False),  # the defaults
])
def test_atol_and_rtol(atol, rtol, passes):
    """|analytical - numerical| <= atol + rtol * |numerical| with BadExp (10% off)."""
    assert _check(F.BadExp.apply, (_f(),), atol=atol, rtol=rtol, raise_exception=False) is passes


# ------------------------------------------------------------------------------ gradgradcheck


@pytest.mark.parametrize("fn,make_inputs", [
    (lambda: F.Cube.apply, lambda: (_f(),)),
    (lambda: F.CubeSetup.apply, lambda: (_f(),)),
    (lambda: tg.tanh, lambda: (_f(),)),
    (lambda: lambda a, b: a * b * a, lambda: (_f(), _f([1.0, -2.0, 3.0]))),
    (lambda: F.MulAdd.apply, lambda: (_f(), _f([1.0, -2.0, 3.0]))),
], ids=["Cube", "CubeSetup", "tanh", "a*b*a", "MulAdd"])
def test_gradgradcheck_true_on_correct_second_derivatives(fn, make_inputs):
    assert tg.autograd.gradgradcheck(fn(), make_inputs()) is True


def test_gradgradcheck_with_given_grad_outputs():
    """grad_outputs as a tuple or a lone tensor (they are checked too: they require grad)."""
    v = _f([1.0, -2.0, 0.5])
    assert tg.autograd.gradgradcheck(F.Cube.apply, (_f(),), (v,)) is True
    assert tg.autograd.gradgradcheck(F.Cube.apply, (_f(),), v) is True


def test_gradgradcheck_catches_a_backward_that_is_not_differentiable_as_written():
    """CubeDetached passes gradcheck (its first derivative is right) but its backward
    detaches x, so the second derivative (6x g) is lost: GradcheckError, or False."""
    assert _check(F.CubeDetached.apply, (_f(),)) is True
    with pytest.raises(_gradcheck_error(), match=r"^Jacobian mismatch for output 0 with respect to input 0,"):
        tg.autograd.gradgradcheck(F.CubeDetached.apply, (_f(),))
    assert tg.autograd.gradgradcheck(F.CubeDetached.apply, (_f(),), raise_exception=False) is False


def test_gradgradcheck_fails_on_once_differentiable():
    """A @once_differentiable backward has no second derivative for autograd to find:
    PyTorch's gradgradcheck reports the mismatch (analytical zeros vs 6x g)."""
    assert _check(F.CubeOnce.apply, (_f(),)) is True
    with pytest.raises(_gradcheck_error(), match=r"^Jacobian mismatch for output 0 with respect to input 0,"):
        tg.autograd.gradgradcheck(F.CubeOnce.apply, (_f(),))
    assert tg.autograd.gradgradcheck(F.CubeOnce.apply, (_f(),), raise_exception=False) is False


# ------------------------------------------------------------------------------ oracle: PyTorch


_VERDICT_CASES = {
    "Exp": lambda lib, fns: (fns.Exp.apply, (_f(lib=lib),), {}),
    "BadExp": lambda lib, fns: (fns.BadExp.apply, (_f(lib=lib),), {}),
    "BadExp-rtol": lambda lib, fns: (fns.BadExp.apply, (_f(lib=lib),), {"atol": 0.0, "rtol": 0.2}),
    "BadExp-atol": lambda lib, fns: (fns.BadExp.apply, (_f(lib=lib),), {"atol": 0.1, "rtol": 0.0}),
    "cube-eps": lambda lib, fns: (lambda a: a ** 3, (_f(lib=lib),), {"eps": 0.1, "atol": 0.005, "rtol": 0}),
    "MulAddBad": lambda lib, fns: (fns.MulAddBad.apply, (_f(lib=lib), _f([1.0, 2.0, 3.0], lib)), {}),
    "detached": lambda lib, fns: (lambda a: a.detach() * 2, (_f(lib=lib),), {}),
    "two-outputs": lambda lib, fns: (lambda a: (a.exp(), a * 2), (_f(lib=lib),), {}),
}


# gradgradcheck draws random grad_outputs: cases whose verdict hangs on their size are left
# out ("BadExp-atol"), and so is "detached", where PyTorch's gradgradcheck itself crashes.
_VERDICTS = ([(case, "gradcheck") for case in [*_VERDICT_CASES, "CubeDetached", "CubeOnce"]]
             + [(case, "gradgradcheck") for case in ["Exp", "BadExp", "BadExp-rtol", "cube-eps", "MulAddBad",
                                                     "two-outputs", "CubeDetached", "CubeOnce"]])


@pytest.mark.torch
@pytest.mark.parametrize("case,check", _VERDICTS, ids=[f"{check}-{case}" for case, check in _VERDICTS])
def test_verdicts_same_as_pytorch(case, check):
    """gradcheck/gradgradcheck with raise_exception=False give PyTorch's verdicts."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tg, torch):
        fns = _functions(lib)
        if case in _VERDICT_CASES:
            fn, inputs, kwargs = _VERDICT_CASES[case](lib, fns)
        else:
            fn, inputs, kwargs = getattr(fns, case).apply, (_f(lib=lib),), {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results.append(getattr(lib.autograd, check)(fn, inputs, raise_exception=False, **kwargs))
    assert results[0] == results[1], f"tracegrad {results[0]}, PyTorch {results[1]}"


@pytest.mark.torch
@pytest.mark.parametrize("name", ["BadExp", "BadWeightedSum"])
def test_mismatch_message_same_as_pytorch(name):
    """The mismatch message up to tracegrad's added report is PyTorch's (both Jacobians, in
    PyTorch's layout and print format)."""
    torch = pytest.importorskip("torch")
    mine, theirs = raises_like(lambda: tg.autograd.gradcheck(getattr(_functions(tg), name).apply, (_f(),)),
                               lambda: torch.autograd.gradcheck(getattr(_functions(torch), name).apply,
                                                                (_f(lib=torch),)))
    assert type(theirs).__name__ == type(mine).__name__ == "GradcheckError"
    head = lambda text: text.split("\n\n")[0].rstrip("\n")
    assert head(str(mine).replace(LIB, "torch")) == head(str(theirs))


@pytest.mark.torch
def test_argument_errors_and_warnings_same_as_pytorch():
    """The no-input ValueError text and the non-double warning text are PyTorch's."""
    torch = pytest.importorskip("torch")
    mine, theirs = raises_like(lambda: tg.autograd.gradcheck(lambda a: a * 2, (_f(requires_grad=False),)),
                               lambda: torch.autograd.gradcheck(lambda a: a * 2,
                                                                (_f(lib=torch, requires_grad=False),)))
    assert type(mine) is type(theirs) is ValueError
    assert str(mine) == str(theirs)
    texts = []
    for lib in (tg, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.autograd.gradcheck(lambda a: a * 2, (_f(lib=lib, dtype=np.float32),), atol=1e-2, rtol=1e-2)
        texts.append([(w.category, str(w.message).strip()) for w in caught])
    assert texts[0] == texts[1]


def test_gradcheck_checks_forward_mode_when_asked():
    x = tg.randn(3, dtype=tg.float64, requires_grad=True)
    y = tg.randn(3, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(lambda a, b: (a.sin() * b, a + b), (x, y), check_forward_ad=True)

    class WrongJvp(tg.autograd.Function):  # backward right, jvp twice too large
        @staticmethod
        def forward(ctx, a):
            ctx.result = a.exp()
            return ctx.result

        @staticmethod
        def jvp(ctx, ga):
            return ga * ctx.result * 2

        @staticmethod
        def backward(ctx, g):
            return g * ctx.result

    assert tg.autograd.gradcheck(WrongJvp.apply, (x,))  # forward mode not asked for
    with pytest.raises(tg.autograd.GradcheckError,
                       match="Jacobian computed with forward mode mismatch for output 0 with respect to input 0"):
        tg.autograd.gradcheck(WrongJvp.apply, (x,), check_forward_ad=True, check_backward_ad=False)


def test_complex_inputs_are_perturbed_in_both_parts():
    """The numerical gradient of a complex input is d/dx + i d/dy (PyTorch's convention for
    a real function): a right backward passes, one conjugated the wrong way fails."""
    import numpy as np

    class SquaredAbs(tg.autograd.Function):
        conj = False

        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return (z * z.conj()).real

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            return 2 * g * (z.conj() if SquaredAbs.conj else z)

    z = tg.tensor(np.array([0.5 + 1.5j, -1.0 + 0.25j]), requires_grad=True)
    assert tg.autograd.gradcheck(SquaredAbs.apply, (z,))
    SquaredAbs.conj = True
    with pytest.raises(tg.autograd.GradcheckError, match="Jacobian mismatch"):
        tg.autograd.gradcheck(SquaredAbs.apply, (z,))
    spec = tg.tensor(np.fft.rfft(np.arange(8.0)), requires_grad=True)  # (C -> R: irfft)
    assert tg.autograd.gradcheck(lambda s: tg.fft.irfft(s, n=8), (spec,))
