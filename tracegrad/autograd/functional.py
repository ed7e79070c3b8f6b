"""Derivatives of whole functions, as ``torch.autograd.functional``: ``vjp``, ``jvp``,
``jacobian``, ``hessian``, ``vhp``, ``hvp``.

Every one of them is a few ``autograd.grad`` calls on a fresh copy of the inputs:

- ``vjp``: one backward pass with ``v`` as the output gradient.
- ``jvp``: the double-backward trick. The backward pass ``u -> J^T u`` is linear in ``u``,
  so differentiating it with respect to ``u`` (with ``v`` as the gradient) gives ``J v``.
- ``jacobian``: one backward pass per output element (rows); ``strategy="forward-mode"``
  builds it from one ``jvp`` per input element instead (columns).
- ``hessian``: the jacobian of a function that returns the gradient; ``vhp`` and ``hvp``
  a second backward pass through the gradient (``hvp`` with the double-backward trick).

``inputs`` is a Tensor or a tuple of Tensors and the results mirror that shape (and the
shape of the function's outputs). Results are detached unless ``create_graph=True``.
With ``strict=True``, an output that does not depend on an input is an error instead of
a zero block. ``vectorize`` is accepted for compatibility; rows are computed one by one.
"""
from ..ops.shape import stack
from ..runtime import grad_mode
from ..runtime.creation import zeros, zeros_like
from ..runtime.engine import grad
from ..runtime.tensor import Tensor

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), v^T J)``: the function's value and its vector-Jacobian product."""
    with grad_mode.enable_grad():
        in_tuple, xs = _prepare(inputs, "inputs", "vjp", create_graph)
        out_tuple, ys = _call(func, xs, "vjp", strict)
        vs = _vector(v, ys, out_tuple, "vjp", create_graph,
                     "the user-provided function returns a single Tensor with a single element")
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        gs = _fill(_pull(ys, xs, vs, create_graph), xs, strict, create_graph,
                   "The output of the user-provided function is independent of input {i}.")
    return _shape(_finish(ys, create_graph), out_tuple), _shape(_finish(gs, create_graph), in_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), J v)``: the function's value and its Jacobian-vector product."""
    with grad_mode.enable_grad():
        in_tuple, xs = _prepare(inputs, "inputs", "jvp", create_graph)
        vs = _vector(v, xs, in_tuple, "jvp", create_graph,
                     "the input to the user-provided function is a single Tensor with a single element")
        out_tuple, ys = _call(func, xs, "jvp", strict)
        jv = _forward(ys, xs, vs, create_graph, strict)
    return _shape(_finish(ys, create_graph), out_tuple), _shape(_finish(jv, create_graph), out_tuple)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """Every partial derivative: block ``[i][j]`` has shape ``outputs[i].shape +
    inputs[j].shape`` (tuples dropped where ``inputs`` or the outputs are single Tensors)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError(f'jacobian(): strategy must be "forward-mode" or "reverse-mode", not {strategy!r}')
    with grad_mode.enable_grad():
        in_tuple, xs = _prepare(inputs, "inputs", "jacobian", create_graph)
        out_tuple, ys = _call(func, xs, "jacobian", strict)
        if strategy == "reverse-mode":
            blocks = [_rows(y, i, xs, create_graph, strict) for i, y in enumerate(ys)]
        else:
            blocks = _columns(ys, xs, create_graph, strict)
    blocks = tuple(_finish(row, create_graph) for row in blocks)
    if not in_tuple:
        blocks = tuple(row[0] for row in blocks)
    return blocks if out_tuple else blocks[0]


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """Second derivatives of a function with a one-element output: block ``[i][j]`` has
    shape ``inputs[i].shape + inputs[j].shape``."""
    in_tuple, xs = _as_tensors(inputs, "inputs", "hessian")

    def scalar(*args):
        out = func(*args)
        out_tuple, ys = _as_tensors(out, "outputs of the user-provided function", "hessian")
        _check_outputs(ys, strict)
        _check_scalar(out_tuple, ys, "hessian")
        return out.squeeze()

    def gradient(*args):
        g = jacobian(scalar, args, create_graph=True)
        if strict:
            _require_graph(g, _HESSIAN_STRICT)
        return g

    h = jacobian(gradient, xs, create_graph=create_graph, strict=strict,
                 strategy=outer_jacobian_strategy)
    if not in_tuple:
        h = h[0][0]
    return h


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), v^T H)`` for a function with a one-element output."""
    with grad_mode.enable_grad():
        in_tuple, xs, vs, out_tuple, ys, gs = _first_gradient(func, inputs, v, create_graph, strict, "vhp")
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        hv = _fill(_pull(gs, xs, vs, create_graph), xs, strict, create_graph,
                   "The jacobian of the user-provided function is independent of input {i}.")
    return _shape(_finish(ys, create_graph), out_tuple), _shape(_finish(hv, create_graph), in_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), H v)`` for a function with a one-element output."""
    with grad_mode.enable_grad():
        in_tuple, xs, vs, out_tuple, ys, gs = _first_gradient(func, inputs, v, create_graph, strict, "hvp")
        hv = _forward(gs, xs, vs, create_graph, strict)
    return _shape(_finish(ys, create_graph), out_tuple), _shape(_finish(hv, create_graph), in_tuple)


# -- the pieces ------------------------------------------------------------------------------

def _as_tensors(value, what, fn):
    """``(was_tuple, tuple_of_tensors)``, refusing anything that is not a Tensor."""
    was_tuple = isinstance(value, tuple)
    items = value if was_tuple else (value,)
    for i, item in enumerate(items):
        if not isinstance(item, Tensor):
            where = f"the value at index {i}" if was_tuple else f"the given {what}"
            raise TypeError(f"The {what} given to {fn} must be either a Tensor or a tuple of "
                            f"Tensors but {where} has type {type(item)}.")
    return was_tuple, items


def _prepare(inputs, what, fn, create_graph):
    """New Tensor objects for the inputs, requiring grad: the function is differentiated
    with respect to these, not to the same tensors captured from elsewhere. With
    ``create_graph`` an input that requires grad stays connected to its own history."""
    was_tuple, xs = _as_tensors(inputs, what, fn)
    return was_tuple, tuple(x.view_as(x) if create_graph and x.requires_grad
                            else x.detach().requires_grad_(True) for x in xs)


def _call(func, xs, fn, strict):
    out_tuple, ys = _as_tensors(func(*xs), "outputs of the user-provided function", fn)
    _check_outputs(ys, strict)
    return out_tuple, ys


def _check_outputs(ys, strict):
    if strict:
        for i, y in enumerate(ys):
            if not y.requires_grad:
                raise RuntimeError(f"Output {i} of the user-provided function does not require "
                                   "gradients. The outputs must be computed in a differentiable "
                                   "manner from the input when running in strict mode.")


def _check_scalar(out_tuple, ys, fn):
    if out_tuple:
        raise RuntimeError(f"The function given to {fn} should return a single Tensor")
    if ys[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn} should contain a single element")


def _vector(v, like, like_tuple, fn, create_graph, when_optional):
    """``v`` as a tuple matching ``like`` in length and shapes (None only for one element)."""
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            raise RuntimeError(f"The vector v can only be None if {when_optional}.")
        return None
    _, vs = _as_tensors(v, "v", fn)
    if len(vs) != len(like):
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got {len(vs)}."
                           if like_tuple else "The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(vs, like)):
        if a.shape != b.shape:
            prefix = f"Entry {i} in " if like_tuple else ""
            raise RuntimeError(f"{prefix}v has invalid size: should be {b.shape} but got {a.shape}.")
    return tuple(a if create_graph and a.requires_grad else a.detach() for a in vs)


def _pull(outputs, inputs, cotangents, create_graph, retain_graph=None):
    """``autograd.grad`` over the outputs that have history; None where an input is unused."""
    pairs = [(y, None if cotangents is None else c)
             for y, c in zip(outputs, cotangents or (None,) * len(outputs))
             if y is not None and y.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    ys, cs = zip(*pairs)
    return grad(ys, inputs, None if cotangents is None else cs, retain_graph=retain_graph,
                create_graph=create_graph, allow_unused=True)


def _forward(ys, xs, vs, create_graph, strict):
    """``J v`` by the double-backward trick: ``u -> J^T u`` is linear, so its derivative
    with respect to ``u`` in direction ``v`` is ``J v`` (``u``'s value does not matter)."""
    us = tuple(zeros_like(y, requires_grad=True) for y in ys)
    back = _pull(ys, xs, us, create_graph=True)
    if strict:
        for i, b in enumerate(back):
            if b is None or not b.requires_grad:
                raise RuntimeError(f"The gradient with respect to input {i} is independent of the "
                                   "inputs of the user-provided function. This is not allowed in strict mode.")
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        return _fill(_pull(back, us, vs, create_graph), ys, strict, create_graph,
                     "The gradient with respect to the input is independent of entry {i} in the "
                     "grad_outputs when using the double backward trick to compute forward mode "
                     "gradients.")


def _first_gradient(func, inputs, v, create_graph, strict, fn):
    """The common start of ``vhp``/``hvp``: checked inputs, ``v``, and the gradient with
    its graph kept (it is differentiated again)."""
    in_tuple, xs = _prepare(inputs, "inputs", fn, create_graph)
    vs = _vector(v, xs, in_tuple, fn, create_graph,
                 "the input to the user-provided function is a single Tensor with a single element")
    out_tuple, ys = _call(func, xs, fn, strict)
    _check_scalar(out_tuple, ys, fn)
    gs = _pull(ys, xs, None, create_graph=True)
    if strict:
        _require_graph(gs, _HESSIAN_STRICT)
    return in_tuple, xs, vs, out_tuple, ys, gs


_HESSIAN_STRICT = ("While computing the hessian, found that the jacobian of the user-provided function "
                   "with respect to input {i} is independent of the input. This is not allowed in "
                   "strict mode. You should ensure that your function is twice differentiable and that "
                   "the jacobian depends on the inputs (this would be violated by a linear function for "
                   "example).")


def _require_graph(grads, message):
    for i, g in enumerate(grads):
        if g is None or not g.requires_grad:
            raise RuntimeError(message.format(i=i))


def _fill(grads, refs, strict, create_graph, message):
    """Zeros for the inputs nothing depends on; under ``strict``, an error instead."""
    out = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(message.format(i=i) + " This is not allowed in strict mode.")
            g = zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            raise RuntimeError(message.format(i=i) + " This is not allowed in strict mode "
                               "when create_graph=True.")
        out.append(g)
    return tuple(out)


def _rows(y, i, xs, create_graph, strict):
    """The Jacobian blocks of output ``y``: one backward pass per element of ``y``."""
    flat = y.reshape(-1)
    rows = [[] for _ in xs]
    for k in range(flat.numel()):
        gs = _pull((flat[k],), xs, None, create_graph, retain_graph=True)
        for j, (g, x) in enumerate(zip(gs, xs)):
            if g is None:
                if strict:
                    raise RuntimeError(f"Output {i} of the user-provided function is independent of "
                                       f"input {j}. This is not allowed in strict mode.")
                g = zeros_like(x)
            elif strict and create_graph and not g.requires_grad:
                raise RuntimeError(f"The jacobian of the user-provided function is independent of "
                                   f"input {i}. This is not allowed in strict mode when create_graph=True.")
            rows[j].append(g)
    return tuple(_assemble(r, y.shape + x.shape, x) for r, x in zip(rows, xs))


def _columns(ys, xs, create_graph, strict):
    """The Jacobian from one forward-mode product per input element (one column each)."""
    cols = [[[] for _ in xs] for _ in ys]
    for j, x in enumerate(xs):
        for k in range(x.numel()):
            basis = tuple(zeros_like(xx) for xx in xs)
            basis[j].view(-1)[k] = 1
            for i, jv in enumerate(_forward(ys, xs, basis, create_graph, strict)):
                cols[i][j].append(jv)
    blocks = []
    for y, per_input in zip(ys, cols):
        row = []
        for x, c in zip(xs, per_input):
            n = len(c)  # columns come stacked first: move that axis behind the output's
            stacked = _assemble(c, (n,) + y.shape, x)
            row.append(stacked.reshape(n, -1).t().reshape(y.shape + x.shape)
                       if n else stacked.reshape(y.shape + x.shape))
        blocks.append(tuple(row))
    return blocks


def _assemble(parts, shape, like):
    if not parts:  # an empty output or input: an empty block
        return zeros(shape, dtype=like.dtype, device=like.device)
    return stack(parts, 0).reshape(shape)


def _finish(values, create_graph):
    return tuple(values) if create_graph else tuple(v.detach() for v in values)


def _shape(values, was_tuple):
    return values if was_tuple else values[0]
