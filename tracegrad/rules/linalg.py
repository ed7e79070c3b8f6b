"""Linear algebra rules: the matrix products (mm, bmm, dot, vdot, mv, the broadcasting
matmul), the fused multiply-adds (addmm, baddbmm) and einsum.

Products are bilinear, so each operand's jvp is the product with the tangent in that
operand's place, and each vjp is a product of the gradient with the other operand
(transposed). The broadcasting ones reduce the gradient over broadcast batch dims with
``sum_to``. Shape checks and PyTorch's error messages live in :mod:`tracegrad.ops.linalg`;
einsum's equation parser is here because its kernel and its vjp both need it.
"""
import functools
import math

from .broadcast import broadcast_to, expand_to, sum_to, unbroadcast
from .core import KEEP, primitive
from .shape import reshape, transpose


def _mT(a):
    """``a`` with its last two dims swapped (a view)."""
    return transpose(a, dim0=a.ndim - 2, dim1=a.ndim - 1)


def _shape(v):
    """The shape of an operand or gradient (a NumPy scalar or Python number is 0-d)."""
    return tuple(getattr(v, "shape", ()))


def _shapes(operands):
    return tuple(_shape(o) for o in operands)


def _scaled(v, s):
    return v if s == 1 else v * s


# -- mm, bmm, dot, vdot, mv -----------------------------------------------------------------

@primitive("MmBackward0", saved_names=("self", "mat2"), complex=True)
def mm(xp, x, y):
    return x @ y


@primitive("BmmBackward0", saved_names=("self", "mat2"), complex=True)
def bmm(xp, x, y):
    return x @ y


def _product(a, b):
    """mm for matrices, bmm for batches of them (addmm and baddbmm share vjps too)."""
    return mm(a, b) if a.ndim == 2 else bmm(a, b)


def product_vjp_x(g, out, x, y):
    return _product(g, _mT(y))


def _stored_transposed(a):
    """Whether a matrix operand lies in memory transposed, as ``weight.t()`` does in
    ``linear``: its gradient is then made in that layout too (``(g^T x)^T``), so that it
    reaches the weight contiguous and accumulates without a copy, as in PyTorch."""
    strides = getattr(a, "strides", None)  # arrays and Meta placeholders; None for others
    return strides is not None and len(strides) == 2 and strides[0] < strides[1]


def product_vjp_y(g, out, x, y):
    if _stored_transposed(y):
        return _mT(_product(_mT(g), x))
    return _product(_mT(x), g)


def product_jvp_x(t, out, x, y):
    return _product(t, y)


def product_jvp_y(t, out, x, y):
    return _product(x, t)


@primitive("DotBackward0", saved_names=("self", "tensor"), complex=True)
def dot(xp, x, y):
    return xp.asarray(xp.dot(x, y))  # a 0-d array, not a NumPy scalar


@primitive("VdotBackward0", saved_names=("self", "other"))
def vdot(xp, x, y):
    """``dot`` for real operands under PyTorch's other node name (complex is refused in
    :mod:`tracegrad.ops.linalg`: conjugation would change the vjps)."""
    return xp.asarray(xp.dot(x, y))


def dot_vjp_x(g, out, x, y):
    return g * y


def dot_vjp_y(g, out, x, y):
    return g * x


def dot_jvp_x(t, out, x, y):
    return dot(t, y)


def dot_jvp_y(t, out, x, y):
    return dot(x, t)


for _p, _vjps in ((mm, (product_vjp_x, product_vjp_y, product_jvp_x, product_jvp_y)),
                  (bmm, (product_vjp_x, product_vjp_y, product_jvp_x, product_jvp_y)),
                  (dot, (dot_vjp_x, dot_vjp_y, dot_jvp_x, dot_jvp_y)),
                  (vdot, (dot_vjp_x, dot_vjp_y, dot_jvp_x, dot_jvp_y))):
    _p.vjp("x", uses="y")(_vjps[0])
    _p.vjp("y", uses="x")(_vjps[1])
    _p.jvp("x")(_vjps[2])
    _p.jvp("y")(_vjps[3])


@primitive("MvBackward0", saved_names=("self", "vec"), complex=True)
def mv(xp, x, y):
    return x @ y


@mv.vjp("x", uses="y")
def mv_vjp_x(g, out, x, y):
    return reshape(g, shape=(g.shape[0], 1)) * y  # the outer product g y^T


@mv.vjp("y", uses="x")
def mv_vjp_y(g, out, x, y):
    return mv(_mT(x), g)


@mv.jvp("x")
def mv_jvp_x(t, out, x, y):
    return mv(t, y)


@mv.jvp("y")
def mv_jvp_y(t, out, x, y):
    return mv(x, t)


# -- matmul: any ranks >= 1, broadcasting batch dims ------------------------------------------

_SMALL_NODES = {(1, 1): "DotBackward0", (2, 1): "MvBackward0", (1, 2): "SqueezeBackward4",
                (2, 2): "MmBackward0"}


def _matmul_node(args, params):
    """The node PyTorch's matmul ends with: it folds or batches the operands and finishes
    with ``_unsafe_view``, except 2-D @ N-D with a 2-D side requiring grad, which it
    computes transposed and makes contiguous (a clone, or a bare transpose when that is
    already contiguous). A 3-D left side with batch 1 against a batched 3-D right side
    is squeezed to 2-D first."""
    x, y = args
    if y.ndim <= 2:  # (linear's case: decided by the ranks alone)
        if x.ndim <= 2:
            return _SMALL_NODES[x.ndim, y.ndim]
        return "UnsafeViewBackward0"
    xs, ys = tuple(x.shape), tuple(y.shape)
    if len(xs) == 3 and len(ys) == 3 and xs[0] == 1 and ys[0] != 1:
        xs = xs[1:]
    if len(xs) == 2 and len(ys) >= 3 and getattr(x, "requires_grad", False):
        n, p = xs[0], ys[-1]
        empty = math.prod(ys[:-2]) * n * p == 0
        return "TransposeBackward0" if n == 1 or p == 1 or empty else "CloneBackward0"
    return "UnsafeViewBackward0"


@primitive(_matmul_node, saved_names=("self", "other"), complex=True)
def matmul(xp, x, y):
    if x.ndim > 2 and y.ndim == 2:  # batch dims folded into rows: one GEMM, as PyTorch does
        return (x.reshape(math.prod(x.shape[:-1]), x.shape[-1]) @ y).reshape(x.shape[:-1] + (y.shape[-1],))
    out = x @ y
    return xp.asarray(out) if x.ndim == 1 and y.ndim == 1 else out


def _as_batched(g, x, y):
    """``g`` (the result's gradient) with the dims matmul dropped for 1-D operands put back
    as size 1, so that it is ``batch + (rows, cols)``."""
    rows = 1 if x.ndim == 1 else x.shape[-2]
    cols = 1 if y.ndim == 1 else y.shape[-1]
    batch = tuple(_shape(g)[:len(_shape(g)) - (x.ndim > 1) - (y.ndim > 1)])
    return reshape(g, shape=batch + (rows, cols)) if (x.ndim == 1 or y.ndim == 1) else g


def _back_to(grad, a, column):
    """A matrix-form gradient summed over broadcast batch dims and shaped like ``a`` (a
    1-D ``a`` took part as a row, or as a ``column``)."""
    shape = tuple(a.shape) if a.ndim > 1 else (a.shape[0], 1) if column else (1, a.shape[0])
    if tuple(grad.shape) != shape:
        grad = sum_to(grad, shape=shape)
    return reshape(grad, shape=tuple(a.shape)) if a.ndim == 1 else grad


@matmul.vjp("x", uses="y")
def matmul_vjp_x(g, out, x, y):
    y2 = reshape(y, shape=(1, y.shape[0])) if y.ndim == 1 else _mT(y)
    return _back_to(matmul(_as_batched(g, x, y), y2), x, False)


@matmul.vjp("y", uses="x")
def matmul_vjp_y(g, out, x, y):
    if x.ndim > 2 and y.ndim == 2 and tuple(_shape(g)[:-1]) == tuple(x.shape[:-1]):
        # the sum over the batch of x_b^T g_b is one product of the folded rows
        rows = math.prod(x.shape[:-1])
        return matmul(_mT(reshape(x, shape=(rows, x.shape[-1]))), reshape(g, shape=(rows, _shape(g)[-1])))
    x2 = reshape(x, shape=(x.shape[0], 1)) if x.ndim == 1 else _mT(x)
    return _back_to(matmul(x2, _as_batched(g, x, y)), y, True)


@matmul.jvp("x")
def matmul_jvp_x(t, out, x, y):
    return matmul(t, y)


@matmul.jvp("y")
def matmul_jvp_y(t, out, x, y):
    return matmul(x, t)


# -- addmm, baddbmm: beta * input + alpha * (x @ y) ----------------------------------------------

def _fused(xp, input, x, y, beta, alpha):
    """``beta * input + alpha * (x @ y)``: the bias (a Linear layer's) is added into the
    product's fresh array where the sum keeps its shape and dtype -- one pass, no
    temporary, as BLAS's ``beta`` would."""
    p = _scaled(x @ y, alpha)
    if beta == 0:  # PyTorch ignores input then (NaN in it does not propagate)
        return p
    c = _scaled(input, beta)
    if (type(p) is xp.ndarray and p.flags.owndata and getattr(c, "dtype", None) == p.dtype
            and c.ndim <= p.ndim and all(s in (1, n) for s, n in zip(c.shape[::-1], p.shape[::-1]))):
        p += c
        return p
    return p + c


@primitive("AddmmBackward0", saved_names=("self", "mat1", "mat2"), complex=True)
def addmm(xp, input, x, y, *, beta=1, alpha=1):
    return _fused(xp, input, x, y, beta, alpha)


@primitive("BaddbmmBackward0", saved_names=("self", "batch1", "batch2"), complex=True)
def baddbmm(xp, input, x, y, *, beta=1, alpha=1):
    return _fused(xp, input, x, y, beta, alpha)


def fused_vjp_input(g, out, input, x, y, *, beta=1, alpha=1):
    return unbroadcast(_scaled(g, beta), input)


def fused_vjp_x(g, out, input, x, y, *, beta=1, alpha=1):
    return _scaled(_product(g, _mT(y)), alpha)


def fused_vjp_y(g, out, input, x, y, *, beta=1, alpha=1):
    return _scaled(product_vjp_y(g, out, x, y), alpha)


def fused_jvp_input(t, out, input, x, y, *, beta=1, alpha=1):
    return expand_to(_scaled(t, beta), out)


def fused_jvp_x(t, out, input, x, y, *, beta=1, alpha=1):
    return _scaled(_product(t, y), alpha)


def fused_jvp_y(t, out, input, x, y, *, beta=1, alpha=1):
    return _scaled(_product(x, t), alpha)


for _p in (addmm, baddbmm):
    _p.vjp("input")(fused_vjp_input)
    _p.vjp("x", uses="y")(fused_vjp_x)
    _p.vjp("y", uses="x")(fused_vjp_y)
    _p.jvp("input")(fused_jvp_input)
    _p.jvp("x")(fused_jvp_x)
    _p.jvp("y")(fused_jvp_y)


# -- einsum ---------------------------------------------------------------------------------------

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"  # in implicit-output order


def _err(message):
    return RuntimeError("einsum(): " + message)


def _scan(text, what, offset, ellipsis_error):
    """The labels of one term, with the position of its ellipsis (None if it has none)."""
    labels, ell, i = [], None, 0
    while i < len(text):
        c = text[i]
        if c == ".":
            if ell is not None:
                raise _err(ellipsis_error)
            if text[i:i + 3] != "...":
                raise _err(f"found '.' for {what} that is not part of any ellipsis"
                           + (" (...)" if what == "output" else ""))
            ell, i = len(labels), i + 3
            continue
        if c not in LETTERS:
            raise _err(f"invalid subscript given at index {offset + i} in the equation string, "
                       "subscripts must be in [a-zA-Z]")
        labels.append(c)
        i += 1
    return labels, ell


@functools.lru_cache(maxsize=1024)
def parse(equation, shapes):
    """``(inputs, output, sizes, explicit)`` for an equation and the operands' shapes:
    each operand's labels and the output's with ``...`` spelled as fresh letters (one per
    broadcast ellipsis dim), every label's broadcast size, and the explicit equation.
    Raises PyTorch's errors for malformed equations and mismatched shapes."""
    lhs, arrow, rhs = equation.partition("->")
    terms, start = lhs.split(","), 0
    if len(terms) > len(shapes):
        raise _err("fewer operands were provided than specified in the equation")
    if len(terms) < len(shapes):
        raise _err("more operands were provided than specified in the equation")
    scanned = []
    for k, term in enumerate(terms):
        scanned.append(_scan(term, f"operand {k}", start,
                             f"found '.' for operand {k} for which an ellipsis was already found"))
        start += len(term) + 1
    ell_dims = []
    for k, ((labels, ell), shape) in enumerate(zip(scanned, shapes)):
        if ell is None and len(labels) != len(shape):
            raise _err(f"the number of subscripts in the equation ({len(labels)}) does not match the "
                       f"number of dimensions ({len(shape)}) for operand {k} and no ellipsis was given")
        if ell is not None and len(labels) > len(shape):
            raise _err(f"the number of subscripts in the equation ({len(labels)}) is more than the "
                       f"number of dimensions ({len(shape)}) for operand {k}")
        ell_dims.append(len(shape) - len(labels))
    rank = max(ell_dims, default=0)
    fresh = [c for c in LETTERS if c not in equation][:rank]
    if len(fresh) < rank:
        raise _err("too many subscripts: the equation and its ellipsis need more than 52 letters")
    inputs = tuple("".join(labels[:ell] + fresh[rank - d:] + labels[ell:]) if ell is not None
                   else "".join(labels) for (labels, ell), d in zip(scanned, ell_dims))
    seen = set("".join(inputs))
    if arrow:
        labels, ell = _scan(rhs, "output", len(lhs) + 2, "found '.' for output but an ellipsis (...) was already found")
        for c in labels:
            if labels.count(c) > 1:
                raise _err(f"output subscript {c} appears more than once in the output")
            if c not in seen:
                raise _err(f"output subscript {c} does not appear in the equation for any input operand")
        output = "".join(labels[:ell] + fresh + labels[ell:]) if ell is not None else "".join(labels)
    else:
        counts = "".join(terms)
        output = "".join(fresh) + "".join(sorted(c for c in set(counts) if c in LETTERS and counts.count(c) == 1))
    sizes = {}
    for k, (sub, shape, d) in enumerate(zip(inputs, shapes, ell_dims)):
        local = {}
        for c, s in zip(sub, shape):
            if c in local:
                if local[c] != s:
                    raise _err(f"subscript {c} is repeated for operand {k} but the sizes don't match, {s} != {local[c]}")
                continue
            local[c] = s
            prev = sizes.get(c)
            if prev is None or prev == 1:
                sizes[c] = s
            elif s != 1 and s != prev:
                if c in fresh:
                    j = fresh.index(c) - (rank - d)
                    raise _err(f"dimension {j} covered by ellipsis in operand {k}has size {s} which does not "
                               f"broadcast with previously seen ellipsis with size {prev} for the respective dimension")
                raise _err(f"subscript {c} has size {s} for operand {k} which does not broadcast with "
                           f"previously seen size {prev}")
    return inputs, output, sizes, ",".join(inputs) + "->" + output


def _einsum_node(args, params):
    """PyTorch's einsum is a composite: it ends in a permute (one operand, nothing summed),
    a sum (one operand), a mul (nothing contracted) or the view of a bmm."""
    inputs, output, _, _ = parse(params["equation"], _shapes(args))
    summed = set("".join(inputs)) - set(output)
    if len(inputs) == 1:
        return "SumBackward1" if summed else "PermuteBackward0"
    return "ViewBackward0" if summed else "MulBackward0"


@primitive(_einsum_node, complex=True)
def einsum(xp, *operands, equation):
    """Einstein summation; size-1 dims broadcast against the same label elsewhere."""
    inputs, _, sizes, explicit = parse(equation, _shapes(operands))
    ops = []
    for sub, o in zip(inputs, operands):
        full = tuple(sizes[c] for c in sub)
        ops.append(o if _shape(o) == full else xp.broadcast_to(o, full))
    if len(ops) == 1:  # NumPy may answer with a view of the operand: copy it
        return xp.array(xp.einsum(explicit, ops[0]), copy=True)
    # Beyond a few thousand multiply-adds, a planned contraction (BLAS) pays for its planning.
    big = math.prod(sizes.values()) > 4096 or len(ops) > 2
    return xp.asarray(xp.einsum(explicit, *ops, optimize=big))


@primitive(dtypes=KEEP)
def eye_of(xp, like, *, n):
    """An n x n identity in ``like``'s dtype: einsum's vjp multiplies by it to put a
    gradient back on a diagonal (a label repeated within one operand)."""
    return xp.eye(n, dtype=xp.asarray(like).dtype)


def einsum_grad(g, operands, k, equation):
    """The gradient of operand ``k``: an einsum of ``g`` with the other operands. A label
    repeated in operand k gets a fresh letter tied to the first by an identity matrix;
    a label summed within operand k alone is broadcast back; a size-1 dim that was
    broadcast is summed back."""
    inputs, output, sizes, explicit = parse(equation, _shapes(operands))
    sub, others = inputs[k], [j for j in range(len(inputs)) if j != k]
    spare = iter(c for c in LETTERS if c not in explicit)
    renamed, deltas = [], []
    for c in sub:
        if c in renamed:
            f = next(spare)
            deltas.append(c + f)
            renamed.append(f)
        else:
            renamed.append(c)
    have = set(output).union(*(inputs[j] for j in others), *deltas)
    target = "".join(c for c in renamed if c in have)
    eq = ",".join([output] + [inputs[j] for j in others] + deltas) + "->" + target
    res = einsum(g, *[operands[j] for j in others], *[eye_of(g, n=sizes[d[0]]) for d in deltas],
                 equation=eq)
    shape, got = _shape(operands[k]), iter(_shape(res))
    full = tuple(next(got) if c in have else 1 for c in renamed)
    if full != _shape(res):
        res = reshape(res, shape=full)
    mid = tuple(1 if s == 1 else n for n, s in zip(full, shape))
    if mid != full:
        res = sum_to(res, shape=mid)
    return res if mid == shape else broadcast_to(res, shape=shape)


@einsum.vjp_all(uses="operands")
def einsum_vjp(g, out, *operands, equation):
    return tuple(einsum_grad(g, operands, k, equation) for k in range(len(operands)))


@einsum.jvp_all
def einsum_jvp(tangents, out, *operands, equation):
    total = None
    for k, t in enumerate(tangents):
        term = einsum(*operands[:k], t, *operands[k + 1:], equation=equation)
        total = term if total is None else total + term
    return total


__all__ = ["mm", "bmm", "dot", "vdot", "mv", "matmul", "addmm", "baddbmm", "einsum", "eye_of",
           "parse", "LETTERS"]
