"""Matrix products with PyTorch's signatures, argument checks and error messages.

PyTorch never promotes dtypes in a matrix product: mismatched operands are an error, so
each function checks ranks, sizes and dtypes (in PyTorch's order) before calling its rule
in :mod:`tracegrad.rules.linalg`. ``matmul`` dispatches by rank as PyTorch does (dot, mv,
mm, or the broadcasting matmul rule), and ``Tensor.__matmul__`` on two matrices of one
dtype -- every MLP's hot path -- goes straight to the eager fast path.
"""
import math

from ..rules import arith as A
from ..rules import linalg as L
from ..rules import reduce as R
from ..runtime.dispatch import binary
from ..runtime.shapes import expand_shape
from ..runtime.tensor import PLAIN_SUBCLASSES as _PLAIN
from ..runtime.tensor import Tensor
from ._args import scalar, wrap_dim
from .shape import permute, reshape

_mm = L.mm
# PyTorch's error messages name dtypes by their C++ type or their legacy tensor name.
_C_NAMES = {"float16": "c10::Half", "float32": "float", "float64": "double", "int32": "int",
            "int64": "long int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>"}


def _c(t):
    return _C_NAMES.get(t.dtype.name, t.dtype.name)


def _legacy(t):
    return t.dtype.scalar_name


def _tensor(x, fn, arg, pos):
    if not isinstance(x, Tensor) and not getattr(x, "is_traced_tensor", False):
        tp = type(x)
        name = tp.__name__ if tp.__module__ == "builtins" else f"{tp.__module__}.{tp.__qualname__}"
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not {name}")


def _no_bool(t, kernel):
    if t.dtype.name == "bool":
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


def _same_scalar_type(a, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {_legacy(a)} but found {_legacy(b)}")


def _check_mm(a, b, first="self"):
    if a.ndim != 2:
        raise RuntimeError(f"{first} must be a matrix")
    if b.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    _check_mm_sizes(a.shape, b.shape)
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_c(a)} != {_c(b)}")
    _no_bool(a, "addmm_impl_cpu_")


def _check_mm_sizes(sa, sb):
    if sa[1] != sb[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa[0]}x{sa[1]} and {sb[0]}x{sb[1]})")


def _check_mv_sizes(sm, n):
    if sm[1] != n:
        raise RuntimeError(f"size mismatch, got input ({sm[0]}), mat ({sm[0]}x{sm[1]}), vec ({n})")


def _check_bmm_sizes(sa, sb):
    if sb[0] != sa[0] or sb[1] != sa[2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{sa[0]}, {sa[2]}] but got: [{sb[0]}, {sb[1]}].")


def _check_expand(t, sizes):
    """That ``t`` broadcasts to ``sizes`` (what PyTorch's addmm expands ``input`` to)."""
    expand_shape(t.shape, sizes, t.type())


# -- products ---------------------------------------------------------------------------------

def mm(input, mat2):
    _tensor(input, "mm", "input", 1)
    _tensor(mat2, "mm", "mat2", 2)
    _check_mm(input, mat2)
    return _mm(input, mat2)


def bmm(input, mat2):
    _tensor(input, "bmm", "input", 1)
    _tensor(mat2, "bmm", "mat2", 2)
    if input.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    _check_bmm_sizes(input.shape, mat2.shape)
    _same_scalar_type(input, mat2)
    _no_bool(input, "bmm")
    return L.bmm(input, mat2)


def _check_dot(input, other, fn):
    _tensor(input, fn, "input", 1)
    _tensor(other, fn, "tensor" if fn == "dot" else "other", 2)
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{_legacy(input)} and {_legacy(other)}")
    n, m = input.shape[0], other.shape[0]
    if n != m:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the "
                           f"same number of elements, but got {n} and {m} elements respectively")


def dot(input, tensor):
    _check_dot(input, tensor, "dot")
    _no_bool(input, "dot")
    return L.dot(input, tensor)


def vdot(input, other):
    """``dot`` that conjugates ``input`` (``<input|other>``, the inner product of quantum
    states)."""
    _check_dot(input, other, "vdot")
    _no_bool(input, "dot")
    if input.dtype.is_complex:
        return L.dot(input.conj(), other)
    return L.vdot(input, other)


def mv(input, vec):
    _tensor(input, "mv", "input", 1)
    _tensor(vec, "mv", "vec", 2)
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    _check_mv_sizes(input.shape, vec.shape[0])
    if input.dtype is not vec.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {_legacy(vec)}, "
                           f"{_legacy(input)}, and {_legacy(vec)}")
    _no_bool(input, "addmv_impl_cpu")
    return L.mv(input, vec)


def matmul(input, other):
    """PyTorch's dispatch by rank: 1-D.1-D dot, 2-D@1-D mv, 2-D@2-D mm, 1-D@2-D a row
    vector times a matrix, otherwise the broadcasting rule (batch dims broadcast)."""
    _tensor(input, "matmul", "input", 1)
    _tensor(other, "matmul", "other", 2)
    dx, dy = input.ndim, other.ndim
    if dx == 0 or dy == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {dx}D and {dy}D")
    if dx == 1 and dy == 1:
        return dot(input, other)
    if dx == 2 and dy == 1:
        return mv(input, other)
    if dx == 2 and dy == 2:
        return mm(input, other)
    _check_matmul(input, other)
    return L.matmul(input, other)


def _check_matmul(x, y):
    """Sizes and dtypes as PyTorch checks them on the path it takes: folding the N-D side
    into a matrix for mm/mv (N-D @ 1-D/2-D, and 1-D/2-D @ N-D when the small side
    requires grad: then the product is taken transposed), else broadcasting batches for bmm."""
    xs, ys = tuple(x.shape), tuple(y.shape)
    if len(xs) == 1 and len(ys) == 2:  # computed as x.unsqueeze(0).mm(y)
        _check_mm_sizes((1,) + xs, ys)
        if x.dtype is not y.dtype:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_c(x)} != {_c(y)}")
    elif len(ys) <= 2 or (len(xs) <= 2 and x.requires_grad):
        big, small, swap = (x, y, False) if len(ys) <= 2 else (y, x, True)
        bs = tuple(big.shape)
        if swap:  # fold big.mT: (batch * cols, inner)
            rows, inner = math.prod(bs[:-2]) * bs[-1], bs[-2]
        else:
            rows, inner = math.prod(bs[:-1]), bs[-1]
        ss = tuple(small.shape)
        if len(ss) == 1:
            _check_mv_sizes((rows, inner), ss[0])
            if x.dtype is not y.dtype:
                raise RuntimeError(f"addmv input tensors must have the same dtype, but got {_legacy(small)}, "
                                   f"{_legacy(big)}, and {_legacy(small)}")
        else:
            _check_mm_sizes((rows, inner), ss[::-1] if swap else ss)
            if x.dtype is not y.dtype:
                raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_c(big)} != {_c(small)}")
    else:
        batch = _broadcast_batch(xs[:-2], ys[:-2])
        n = math.prod(batch)
        k = xs[-1]
        k2 = ys[-2] if len(ys) > 1 else ys[0]
        if k2 != k:
            raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                               f"[{n}, {k}] but got: [{n}, {k2}].")
        _same_scalar_type(x, y)
    _no_bool(x, "bmm" if len(xs) > 2 and len(ys) > 2 else "addmm_impl_cpu_")


def _broadcast_batch(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for i, (p, q) in enumerate(zip(a, b)):
        if p != q and p != 1 and q != 1:
            raise RuntimeError(f"The size of tensor a ({p}) must match the size of tensor b ({q}) "
                               f"at non-singleton dimension {i}")
        out.append(q if p == 1 else p)
    return tuple(out)


def outer(input, vec2):
    """``input.unsqueeze(1) * vec2``, as PyTorch computes it (a MulBackward0 node)."""
    _tensor(input, "outer", "input", 1)
    _tensor(vec2, "outer", "vec2", 2)
    for name, t in (("self", input), ("vec2", vec2)):
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
    return A.mul(reshape(input, (input.shape[0], 1)), vec2)


def inner(input, other):
    _tensor(input, "inner", "input", 1)
    _tensor(other, "inner", "other", 2)
    if input.ndim == 0 or other.ndim == 0:
        return A.mul(input, other)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got "
                           f"shapes {list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, dims=([-1], [-1]))


def tensordot(a, b, dims=2, out=None):
    """PyTorch's algorithm: sum away contracted dims of size 1 (they broadcast), permute
    the free dims of ``a`` first and of ``b`` last, and multiply as matrices."""
    _tensor(a, "tensordot", "a", 1)
    _tensor(b, "tensordot", "b", 2)
    if out is not None:
        raise NotImplementedError("tensordot(out=...) is not supported")
    if isinstance(dims, Tensor):
        dims = int(dims.item()) if dims.numel() == 1 else dims.tolist()
    if isinstance(dims, int) and not isinstance(dims, bool):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(-dims, 0)), list(range(dims))
    else:
        da, db = dims
        for name, d in (("dims_self", da), ("dims_other", db)):
            if not isinstance(d, (list, tuple)):
                raise TypeError(f"tensordot(): argument '{name}' (position {3 if name == 'dims_self' else 4}) "
                                f"must be tuple of ints, not {type(d).__name__}")
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    if a.dtype is not b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    ca, cb = _dim_list(da, a.ndim), _dim_list(db, b.ndim)
    csize = 1
    for i, (p, q) in enumerate(zip(ca, cb)):
        s1, s2 = a.shape[p], b.shape[q]
        if s2 == 1:  # broadcast dims are summed right away
            a = R.sum(a, dim=(p,), keepdim=True)
        elif s1 == 1:
            b = R.sum(b, dim=(q,), keepdim=True)
        elif s1 != s2:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {s1} in dim "
                               f"{da[i]} and second has size {s2} in dim {db[i]}")
        else:
            csize *= s1
    free_a = [d for d in range(a.ndim) if d not in ca]
    free_b = [d for d in range(b.ndim) if d not in cb]
    sizes_a, sizes_b = [a.shape[d] for d in free_a], [b.shape[d] for d in free_b]
    ma = reshape(_permuted(a, free_a + list(ca)), (math.prod(sizes_a), csize))
    mb = reshape(_permuted(b, list(cb) + free_b), (csize, math.prod(sizes_b)))
    return reshape(_mm(ma, mb), tuple(sizes_a + sizes_b))


def _dim_list(dims, ndim):
    wrapped = [wrap_dim(d, ndim) for d in dims]
    for d in wrapped:
        if wrapped.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return wrapped


def _permuted(t, order):
    return t if order == list(range(t.ndim)) else permute(t, order)


# -- fused multiply-adds -------------------------------------------------------------------------

def _scalars(input, beta, alpha):
    """Python numbers; PyTorch truncates them to integers for integer tensors."""
    beta, alpha = scalar(beta), scalar(alpha)
    if input.dtype.category < 2:  # bool or integer
        beta, alpha = int(beta), int(alpha)
    return beta, alpha


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat1 @ mat2)``, ``input`` broadcast to the product's shape."""
    for name, t, pos in (("input", input, 1), ("mat1", mat1, 2), ("mat2", mat2, 3)):
        _tensor(t, "addmm", name, pos)
    if out is not None:
        raise NotImplementedError("addmm(out=...) is not supported")
    for name, t in (("mat1", mat1), ("mat2", mat2)):
        if t.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {t.ndim}-D tensor")
    _check_mm_sizes(mat1.shape, mat2.shape)
    if input.dtype is not mat2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_legacy(input)} and {_legacy(mat2)}")
    if mat1.dtype is not mat2.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_legacy(mat1)} and {_legacy(mat2)}")
    _no_bool(mat1, "addmm_impl_cpu_")
    _check_expand(input, (mat1.shape[0], mat2.shape[1]))
    beta, alpha = _scalars(input, beta, alpha)
    return L.addmm(input, mat1, mat2, beta=beta, alpha=alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (batch1 @ batch2)`` over a batch of matrices."""
    for name, t, pos in (("input", input, 1), ("batch1", batch1, 2), ("batch2", batch2, 3)):
        _tensor(t, "baddbmm", name, pos)
    if out is not None:
        raise NotImplementedError("baddbmm(out=...) is not supported")
    for name, t in (("batch1", batch1), ("batch2", batch2)):
        if t.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    _check_bmm_sizes(batch1.shape, batch2.shape)
    _same_scalar_type(input, batch1)
    _same_scalar_type(input, batch2)
    _no_bool(batch1, "bmm")
    _check_expand(input, (batch1.shape[0], batch1.shape[1], batch2.shape[2]))
    beta, alpha = _scalars(input, beta, alpha)
    return L.baddbmm(input, batch1, batch2, beta=beta, alpha=alpha)


# -- einsum ------------------------------------------------------------------------------------

def einsum(*args):
    """``einsum(equation, *operands)``, ``einsum(equation, [operands])`` or the sublist form
    ``einsum(op1, sublist1, op2, sublist2, ..., [sublist_out])``."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    if isinstance(args[0], str):
        equation, operands = args[0], args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
    else:
        equation, operands = _sublist_equation(args)
    if not operands:
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    for i, t in enumerate(operands):
        if not isinstance(t, Tensor) and not getattr(t, "is_traced_tensor", False):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got {type(t).__name__}")
    equation = equation.replace(" ", "")
    L.parse(equation, tuple(tuple(t.shape) for t in operands))  # PyTorch's errors, before any work
    for t in operands[1:]:
        _same_scalar_type(operands[0], t)
    return L.einsum(*operands, equation=equation)


def _sublist_equation(args):
    out = args[-1] if len(args) % 2 else None
    pairs = args[:-1] if len(args) % 2 else args
    operands, subs = pairs[0::2], pairs[1::2]

    def letters(sub):
        text = []
        for s in sub:
            if s is Ellipsis:
                text.append("...")
            elif isinstance(s, int) and 0 <= s < 52:
                text.append(L.LETTERS[s])
            else:
                raise RuntimeError("einsum(): subscript in subscript list is not within the valid range [0, 52)")
        return "".join(text)
    equation = ",".join(letters(s) for s in subs)
    return (equation if out is None else equation + "->" + letters(out)), operands


# -- decompositions under torch's older names (torch.linalg's are in tracegrad/linalg.py) --------

# (tracegrad.linalg imports this package's helpers, so it is imported after them)
from .. import linalg as _LA
from ..rules.decomp import mH as _mH
from .return_types import _structseq

_slogdet_result = _structseq("slogdet", ["sign", "logabsdet"])
_svd_result = _structseq("svd", ["U", "S", "V"])
_qr_result = _structseq("qr", ["Q", "R"])


def inverse(input, *, out=None):
    return _LA.inv(input, out=out)


def det(input):
    return _LA.det(input)


def slogdet(input):
    return _slogdet_result(*_LA.slogdet(input))


def logdet(input):
    """``log(det)``: nan for a negative determinant, -inf for zero (PyTorch's where)."""
    sign, logabs = _LA.slogdet(input)
    return A.where(sign < 0, math.nan, logabs)


def cholesky(input, upper=False, *, out=None):
    return _LA.cholesky(input, upper=upper, out=out)


def svd(input, some=True, compute_uv=True, *, out=None):
    """``(U, S, V)`` with ``V`` (not ``Vh``); without ``compute_uv``, U and V are zeros."""
    if not compute_uv:
        from ..runtime.creation import zeros
        m, n = input.shape[-2], input.shape[-1]
        lead = tuple(input.shape[:-2])
        return _svd_result(zeros(*lead, m, m, dtype=input.dtype), _LA.svdvals(input),
                           zeros(*lead, n, n, dtype=input.dtype))
    u, s, vh = _LA.svd(input, full_matrices=not some, out=out)
    return _svd_result(u, s, _mH(vh))


def qr(input, some=True, *, out=None):
    return _qr_result(*_LA.qr(input, mode="reduced" if some else "complete", out=out))


def pinverse(input, rcond=1e-15):
    return _LA.pinv(input, rtol=rcond)


def matrix_power(input, n):
    return _LA.matrix_power(input, n)


# -- Tensor methods ------------------------------------------------------------------------------

def __matmul__(self, other):
    """``self @ other``; two matrices of one dtype go straight to the eager fast path."""
    if type(other) is Tensor or type(other) in _PLAIN:
        a, b = self._data, other._data
        if a.ndim == 2 and b.ndim == 2 and a.dtype == b.dtype and a.shape[1] == b.shape[0] \
                and a.dtype.kind != "b":
            return binary(_mm, self, other)
    elif not isinstance(other, Tensor):
        return NotImplemented
    return matmul(self, other)


def __rmatmul__(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(other, self)


_DECOMPOSITIONS = {n: globals()[n] for n in (
    "inverse", "det", "slogdet", "logdet", "cholesky", "svd", "qr", "pinverse", "matrix_power")}
FUNCTIONS = {
    **_DECOMPOSITIONS, "matmul": matmul, "mm": mm, "bmm": bmm, "dot": dot, "vdot": vdot, "mv": mv, "outer": outer,
    "ger": outer, "inner": inner, "einsum": einsum, "tensordot": tensordot, "addmm": addmm,
    "baddbmm": baddbmm,
}
METHODS = {
    **_DECOMPOSITIONS, "matmul": matmul, "mm": mm, "bmm": bmm, "dot": dot, "vdot": vdot, "mv": mv, "outer": outer,
    "ger": outer, "inner": inner, "addmm": addmm, "baddbmm": baddbmm,
    "__matmul__": __matmul__, "__rmatmul__": __rmatmul__,
}
