"""``gradcheck`` and ``gradgradcheck``: compare analytical gradients with finite differences.

The numerical Jacobian comes from central differences, perturbing each element of each
input that requires grad; the analytical one from one ``autograd.grad`` call per output
element. On a mismatch the error names the output/input pair, prints both Jacobians as
PyTorch does, and lists the entries that differ -- the part a learner reads first.
"""
import itertools
import warnings

from ..runtime import engine
from ..runtime.creation import zeros
from ..runtime.tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck/gradgradcheck when the gradients do not match."""


def _as_tuple(x):
    return x if isinstance(x, tuple) else ((x,) if isinstance(x, Tensor) else tuple(x))


def _outputs(func, inputs):
    return tuple(o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor))


def _numerical(func, inputs, i, out_index, eps):
    """d outputs[out_index] / d inputs[i] by central differences, laid out as PyTorch
    prints it: one row per input element, one column per output element. Elements are
    perturbed in the input's own storage (any strides; its version does not move) and
    always put back, even when ``func`` raises."""
    x = inputs[i]
    data = x._data
    n_out = _outputs(func, inputs)[out_index].numel()
    jac = zeros(x.numel(), n_out, dtype=x.dtype, device=x.device)
    steps = (eps, eps * 1j) if x.is_complex() else (eps,)
    # (func runs in grad mode: gradgradcheck's func needs it)
    for k, idx in enumerate(itertools.product(*map(range, data.shape))):
        orig = data[idx].item()
        column = 0
        for step in steps:  # a complex input: its real and its imaginary part
            try:
                data[idx] = orig + step
                plus = _real(_outputs(func, inputs)[out_index])
                data[idx] = orig - step
                minus = _real(_outputs(func, inputs)[out_index])
            finally:
                data[idx] = orig
            column = column + (plus - minus) / (2 * eps) * (step / eps)
        jac[k] = column
    return jac


def _real(out):
    """An output as the analytical Jacobian sees it (a cotangent of 1: its real part), flat.
    With a complex input the two perturbations make PyTorch's convention: the gradient of
    a real function is d/dx + i d/dy."""
    out = out.detach().reshape(-1).clone()
    return out.real if out.is_complex() else out


def _analytical(func, inputs, i, out_index):
    """The same Jacobian from autograd: one vjp per output element fills one column."""
    out = _outputs(func, inputs)[out_index]
    x = inputs[i]
    jac = zeros(x.numel(), out.numel(), dtype=x.dtype, device=x.device)
    for r in range(out.numel()):
        seed = zeros(out.numel(), dtype=out.dtype, device=out.device)
        seed[r] = 1.0
        (g,) = engine.grad(out, x, seed.reshape(out.shape), retain_graph=True, allow_unused=True)
        if g is not None:
            jac[:, r] = g.reshape(-1)
    return jac


def _forward(func, inputs, i, out_index):
    """The same Jacobian by forward mode: one tangent per element of input ``i`` (a unit
    vector; the other inputs carry none) gives one row, the output's tangent."""
    from . import forward_ad as fwAD
    x = inputs[i]
    n_out = _outputs(func, inputs)[out_index].numel()
    jac = zeros(x.numel(), n_out, dtype=x.dtype, device=x.device)
    for k in range(x.numel()):
        tangent = zeros(x.numel(), dtype=x.dtype, device=x.device)
        tangent[k] = 1.0
        with fwAD.dual_level():
            duals = tuple(fwAD.make_dual(a.detach(), tangent.reshape(a.shape)) if j == i else a
                          for j, a in enumerate(inputs))
            t = fwAD.unpack_dual(_outputs(func, duals)[out_index]).tangent
            if t is not None:
                jac[k] = t.reshape(-1)
    return jac


def _report(numerical, analytical, rtol, atol, limit=10):
    """The mismatching Jacobian entries, largest difference first."""
    diff = (numerical - analytical).abs()
    bad = diff > atol + rtol * numerical.abs()
    rows = []
    for k, r in bad.nonzero().tolist():
        rows.append((diff[k, r].item(), k, r))
    rows.sort(reverse=True)
    lines = [f"  d output[{r}] / d input[{k}]: numerical {numerical[k, r].item():.6g}, "
             f"analytical {analytical[k, r].item():.6g} (off by {d:.3g})" for d, k, r in rows[:limit]]
    more = f"\n  ... and {len(rows) - limit} more" if len(rows) > limit else ""
    return f"{len(rows)} of {numerical.numel()} entries differ:\n" + "\n".join(lines) + more


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None):
    """True if ``func``'s analytical gradients match finite differences for ``inputs``
    (use float64 inputs: float32 differences are too coarse to compare): reverse mode's
    (``check_backward_ad``) and forward mode's (``check_forward_ad``, through
    :mod:`tracegrad.autograd.forward_ad`)."""
    inputs = _as_tuple(inputs)
    checked = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    for i in checked:
        if not (inputs[i].dtype.name in ("float64", "complex128")):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex.", UserWarning, stacklevel=2)
    if not checked:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none "
                         "of them have requires_grad=True.")

    def fail(message):
        if raise_exception:
            raise GradcheckError(message)
        return False

    outputs = _outputs(func, inputs)
    for o_index, out in enumerate(outputs):
        for i in checked:
            numerical = _numerical(func, inputs, i, o_index, eps)
            if not out.requires_grad:  # no gradient at all: the output must not move either
                if not bool((numerical == 0).all()):
                    return fail(f"Numerical gradient for function expected to be zero: output "
                                f"{o_index} does not require grad, yet it changes with input {i}")
                continue
            modes = ((("", _analytical),) if check_backward_ad else ()) + (
                (("computed with forward mode ", _forward),) if check_forward_ad else ())
            for how, jacobian in modes:
                analytical = jacobian(func, inputs, i, o_index)
                if not bool(((numerical - analytical).abs() <= atol + rtol * numerical.abs()).all()):
                    return fail(f"Jacobian {how}mismatch for output {o_index} with respect to input {i},\n"
                                f"numerical:{numerical}\nanalytical:{analytical}\n\n"
                                + _report(numerical, analytical, rtol, atol))
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False):
    """True if the second derivatives of ``func`` (its vjp, differentiated again) match
    finite differences of its first derivatives."""
    from ..runtime.creation import randn
    inputs = _as_tuple(inputs)
    outputs = _outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(randn(*o.shape, dtype=o.dtype, device=o.device, requires_grad=True)
                             for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)

    def first_derivatives(*args):
        xs, gs = args[:n], args[n:]
        diff = [x for x in xs if isinstance(x, Tensor) and x.requires_grad]
        grads = engine.grad(_outputs(func, xs), diff, gs, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
