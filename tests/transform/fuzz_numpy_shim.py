"""A NumPy-named shim over tracegrad's *eager* Tensor functions, for the differential
fuzzer only: the programs ``fuzz_programs`` writes for NumPy run unchanged on eager
Tensors that require grad, so the eager path can be checked against finite differences
and the staged modes.

``np`` below is a module-like object. Each function it has keeps NumPy's semantics
(``axis=``/``keepdims=``, ``np.dot``'s and ``np.inner``'s contraction rules, ``np.flip``
and ``np.transpose`` over every axis, ``np.var``'s ``ddof=0``, an int axis on a 0-d
array, ``out=`` writes...) and calls tracegrad's eager functions when any argument is a
Tensor; with no Tensor among the arguments it is NumPy's own function. Everything the
shim does not define is NumPy's (``np.float64``, ``np.pi``...), so a program that uses
a NumPy function the shim lacks fails on Tensors (the eager check then skips it).

``eager_function(source, fname)`` executes a program's source with the shim bound as
``np``. The source-level changes, all mechanical: the program's ``import numpy as np``
binds the shim; method calls NumPy and tracegrad spell differently (``a.dot(b)``,
``a.copy()``, ``a.fill(v)``, ``a.sum(axis=...)``, ``a.mean``, ``a.reshape``, ``a.squeeze``) and the
``.T`` attribute go through the shim (which uses the Tensor method with NumPy's meaning
when ``a`` is a Tensor, and ``a``'s own method otherwise); ``name op= value`` goes through
the shim too, which writes in place into arrays but rebinds a 0-d value that stands for a
NumPy scalar (a 0-d Tensor is mutable, a NumPy scalar is not). ``np.flip`` is a view in
NumPy and a copy on Tensors: a write (``a op= v``, ``a[i] = v``, ``a[i] op= v``) into an
array a live flip was taken of, or into the flip, is reported as inexpressible.
"""
import ast
import builtins
import math
import operator
import types
import weakref

import numpy as _np

import tracegrad as tg

Tensor = tg.Tensor


# 0-d Tensors that stand for 0-d NumPy *arrays* (mutable: the inputs, np.array/np.copy
# results). Every other 0-d result stands for a NumPy scalar, which ``+=`` rebinds rather
# than changes (NumPy's operations on 0-d arrays return immutable scalars).
_MUTABLE_0D = {}


def mark_array(t):
    """Record that the 0-d Tensor ``t`` stands for a (mutable) 0-d NumPy array."""
    if isinstance(t, Tensor) and t.ndim == 0:
        _MUTABLE_0D[id(t)] = weakref.ref(t)
    return t


def _is_array(t):
    if t.ndim:
        return True
    r = _MUTABLE_0D.get(id(t))
    return r is not None and r() is t


_IOPS = {"+=": (operator.iadd, operator.add), "-=": (operator.isub, operator.sub),
         "*=": (operator.imul, operator.mul), "/=": (operator.itruediv, operator.truediv),
         "**=": (operator.ipow, operator.pow)}


def _iop(a, b, op):
    """``a op= b`` with NumPy's meaning: in place on arrays, a new value for scalars."""
    inplace, plain = _IOPS[op]
    if isinstance(a, Tensor) and not _is_array(a):
        return plain(a, b)
    _refuse_write_into_flipped(a)
    if isinstance(a, _np.ndarray) and isinstance(b, Tensor):
        # NumPy writes into ``a`` (and every name aliasing it); a Tensor operand would make
        # a new Tensor and rebind ``a`` alone, leaving the aliases behind
        raise ShimUnsupported(f"'{op}' of a Tensor into a NumPy array")
    return inplace(a, b)


def _setitem(a, index, value):
    """``a[index] = value`` (refused where NumPy would also write a flip's view of ``a``)."""
    _refuse_write_into_flipped(a)
    a[index] = value


class ShimUnsupported(NotImplementedError):
    """The shim cannot express this NumPy call on eager Tensors."""


def _any_tensor(*vals):
    for v in vals:
        if isinstance(v, Tensor):
            return True
        if isinstance(v, (list, tuple)) and _any_tensor(*v):
            return True
    return False


def _t(v):
    """A Tensor for ``v``: Tensors as they are, Python and NumPy numbers and arrays as
    float64 (bools stay bool) tensors that do not require grad."""
    if isinstance(v, Tensor):
        return v
    a = _np.asarray(v)
    if a.dtype.kind == "b":
        return tg.tensor(a)
    if a.dtype.kind not in "fiu":
        raise ShimUnsupported(f"no eager tensor for {a.dtype} values")
    return tg.tensor(a.astype(_np.float64), dtype=tg.float64)


def _axes(a, axis):
    """NumPy's ``axis`` for a reduction of ``a`` as a sorted tuple of non-negative dims
    (NumPy lets an int axis 0 or -1 through on a 0-d array: no axis then)."""
    nd = a.ndim
    if axis is None:
        return tuple(range(nd))
    if nd == 0 and isinstance(axis, int) and axis in (0, -1):
        return ()
    axs = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for ax in axs:
        if not -nd <= ax < nd:
            raise _np.exceptions.AxisError(f"axis {ax} is out of bounds for array of dimension {nd}")
        out.append(ax % nd)
    return tuple(sorted(set(out)))


def _write_out(res, out):
    if out is None:
        return res
    if isinstance(out, tuple):
        (out,) = out
    out[...] = res
    return out


# ---------------------------------------------------------------------------------
# elementwise


def _unary(name, tensor_fn):
    numpy_fn = getattr(_np, name)

    def fn(x, out=None, **kw):
        if not _any_tensor(x, out):
            return numpy_fn(x, out=out, **kw) if out is not None else numpy_fn(x, **kw)
        if kw:
            raise ShimUnsupported(f"np.{name} with {sorted(kw)}")
        return _write_out(tensor_fn(_t(x)), out)

    fn.__name__ = name
    return fn


def _binary(name, tensor_fn):
    numpy_fn = getattr(_np, name)

    def fn(a, b, out=None, **kw):
        if not _any_tensor(a, b, out):
            return numpy_fn(a, b, out=out, **kw) if out is not None else numpy_fn(a, b, **kw)
        if kw:
            raise ShimUnsupported(f"np.{name} with {sorted(kw)}")
        return _write_out(tensor_fn(a, b), out)

    fn.__name__ = name
    return fn


def _cbrt(x):
    return tg.sign(x) * tg.abs(x) ** (1.0 / 3.0)


class _Ufunc:
    """np.add / np.multiply...: callable, with ``.at`` for np.add.at."""

    def __init__(self, name, tensor_fn, at=None):
        self._call = _binary(name, tensor_fn)
        self._numpy = getattr(_np, name)
        self._at = at
        self.__name__ = name

    def __call__(self, *args, **kw):
        return self._call(*args, **kw)

    def at(self, a, indices, b=None):
        if not _any_tensor(a, b):
            return self._numpy.at(a, indices, b)
        if self._at is None:
            raise ShimUnsupported(f"np.{self.__name__}.at on Tensors")
        self._at(a, indices, b)

    def __getattr__(self, name):
        return getattr(self._numpy, name)


def _add_at(a, indices, b):
    idx = indices if isinstance(indices, tuple) else (indices,)
    idx = tuple(tg.tensor(_np.asarray(i, dtype=_np.int64)) for i in idx)
    a.index_put_(idx, _t(b), accumulate=True)


# ---------------------------------------------------------------------------------
# reductions


def _reduction(name, tensor_fn):
    numpy_fn = getattr(_np, name)

    def fn(a, axis=None, keepdims=False, **kw):
        if not _any_tensor(a):
            return numpy_fn(a, axis=axis, keepdims=keepdims, **kw)
        if kw:
            raise ShimUnsupported(f"np.{name} with {sorted(kw)}")
        a = _t(a)
        axes = _axes(a, axis)
        if not axes:
            return tensor_fn(a, None, keepdims) if a.ndim == 0 else a * 1.0
        return tensor_fn(a, axes, keepdims)

    fn.__name__ = name
    return fn


def _sum(a, axes, keep):
    return tg.sum(a) if axes is None else tg.sum(a, dim=axes, keepdim=keep)


def _mean(a, axes, keep):
    return tg.mean(a) if axes is None else tg.mean(a, dim=axes, keepdim=keep)


def _amax(a, axes, keep):
    return tg.max(a) if axes is None else tg.amax(a, dim=axes, keepdim=keep)


def _amin(a, axes, keep):
    return tg.min(a) if axes is None else tg.amin(a, dim=axes, keepdim=keep)


def _prod(a, axes, keep):
    if axes is None:
        return tg.prod(a)
    for ax in sorted(axes, reverse=True):  # tracegrad's prod takes one dim at a time
        a = tg.prod(a, dim=ax, keepdim=keep)
    return a


def _var(a, axes, keep):
    if axes is None:
        return tg.var(a, correction=0)
    return tg.var(a, dim=axes, keepdim=keep, correction=0)


# ---------------------------------------------------------------------------------
# products


def dot(a, b, out=None):
    if not _any_tensor(a, b, out):
        return _np.dot(a, b, out=out)
    a, b = _t(a), _t(b)
    if a.ndim == 0 or b.ndim == 0:
        res = a * b
    elif a.ndim == 1 and b.ndim == 1:
        res = tg.dot(a, b)
    elif b.ndim <= 2:
        res = tg.matmul(a, b)
    else:  # dot(a, b)[i, j, k, m] = sum(a[i, j, :] * b[k, :, m])
        res = tg.tensordot(a, b, dims=([a.ndim - 1], [b.ndim - 2]))
    return _write_out(res, out)


def matmul(a, b, out=None):
    if not _any_tensor(a, b, out):
        return _np.matmul(a, b, out=out)
    a, b = _t(a), _t(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    return _write_out(tg.matmul(a, b), out)


def inner(a, b):
    if not _any_tensor(a, b):
        return _np.inner(a, b)
    a, b = _t(a), _t(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tg.tensordot(a, b, dims=([a.ndim - 1], [b.ndim - 1]))


def outer(a, b):
    if not _any_tensor(a, b):
        return _np.outer(a, b)
    return tg.outer(_t(a).reshape(-1), _t(b).reshape(-1))


def tensordot(a, b, axes=2):
    if not _any_tensor(a, b):
        return _np.tensordot(a, b, axes=axes)
    return tg.tensordot(_t(a), _t(b), dims=axes)


def einsum(subscripts, *operands, **kw):
    if not _any_tensor(*operands):
        return _np.einsum(subscripts, *operands, **kw)
    if kw:
        raise ShimUnsupported(f"np.einsum with {sorted(kw)}")
    return tg.einsum(subscripts, *[_t(o) for o in operands])


# ---------------------------------------------------------------------------------
# shapes


def shape(a):
    return tuple(a.shape) if isinstance(a, Tensor) else _np.shape(a)


def ndim(a):
    return a.ndim if isinstance(a, Tensor) else _np.ndim(a)


def size(a, axis=None):
    if not isinstance(a, Tensor):
        return _np.size(a, axis)
    return a.numel() if axis is None else a.shape[axis]


def reshape(a, newshape, order="C"):
    if not _any_tensor(a):
        return _np.reshape(a, newshape, order=order)
    if order != "C":
        raise ShimUnsupported("np.reshape with order")
    newshape = (newshape,) if isinstance(newshape, int) else tuple(newshape)
    return mark_array(tg.reshape(_own_if_scalar(_t(a)), newshape))  # (NumPy: an array, 0-d included)


def ravel(a):
    return _t(a).reshape(-1) if _any_tensor(a) else _np.ravel(a)


def transpose(a, axes=None):
    if not _any_tensor(a):
        return _np.transpose(a, axes)
    a = _t(a)
    perm = tuple(reversed(range(a.ndim))) if axes is None else tuple(ax % a.ndim for ax in axes)
    return a.permute(*perm) if a.ndim else mark_array(_own_if_scalar(a))


def _own_if_scalar(t):
    """A 0-d Tensor standing for a NumPy scalar (immutable: reshaping or transposing it
    makes a new array, never a view a later write would reach) as a copy; else ``t``."""
    return t * 1.0 if isinstance(t, Tensor) and t.ndim == 0 and not _is_array(t) else t


def swapaxes(a, axis1, axis2):
    if not _any_tensor(a):
        return _np.swapaxes(a, axis1, axis2)
    return tg.swapaxes(_t(a), axis1, axis2)


def expand_dims(a, axis):
    if not _any_tensor(a):
        return _np.expand_dims(a, axis)
    a = _own_if_scalar(_t(a))  # (of a NumPy scalar: a new array, not a view of it)
    if isinstance(axis, tuple):
        raise ShimUnsupported("np.expand_dims with a tuple axis")
    return tg.unsqueeze(a, axis if axis >= 0 else a.ndim + 1 + axis)


def squeeze(a, axis=None):
    if not _any_tensor(a):
        return _np.squeeze(a, axis)
    a = _t(a)
    if axis is None:
        return mark_array(a.reshape(tuple(n for n in a.shape if n != 1)))
    axes = axis if isinstance(axis, tuple) else (axis,)
    for ax in sorted((ax % a.ndim for ax in axes), reverse=True):
        if a.shape[ax] != 1:
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
        a = a.squeeze(ax)
    return mark_array(a)


def flip(a, axis=None):
    if not _any_tensor(a):
        return _np.flip(a, axis)
    a = _t(a)
    dims = tuple(range(a.ndim)) if axis is None else tuple(axis if isinstance(axis, tuple) else (axis,))
    out = tg.flip(a, dims) if dims else a * 1.0
    _FLIPPED.append((weakref.ref(_root(a)), weakref.ref(out)))
    return out


# NumPy's flip is a view, torch's (and tracegrad's) a copy: (input's root, result) pairs,
# so that a later write into either, while the other is alive, is reported as inexpressible
_FLIPPED = []


def _root(t):
    return t._base if getattr(t, "_base", None) is not None else t


def _refuse_write_into_flipped(a):
    if not isinstance(a, Tensor):
        return
    _FLIPPED[:] = [(b, c) for b, c in _FLIPPED if b() is not None and c() is not None]
    root = _root(a)
    if any(b() is root or c() is a or _root(c()) is root for b, c in _FLIPPED):
        raise ShimUnsupported("a write into an array np.flip took a view of (or into that view): the eager "
                              "flip is a copy")


def tile(a, reps):
    if not _any_tensor(a):
        return _np.tile(a, reps)
    if not isinstance(reps, int):
        raise ShimUnsupported("np.tile with tuple reps")
    a = _t(a)
    if a.ndim == 0:
        a = a.reshape(1)
    return tg.cat([a] * reps, dim=-1)


def broadcast_to(a, shape):
    if not _any_tensor(a):
        return _np.broadcast_to(a, shape)
    return tg.broadcast_to(_t(a), tuple(shape))


def cumsum(a, axis=None):
    if not _any_tensor(a):
        return _np.cumsum(a, axis)
    a = _t(a)
    if axis is None:
        return tg.cumsum(a.reshape(-1), dim=0)
    return tg.cumsum(a, dim=axis)


def _seq(arrays):
    return [_t(a) for a in arrays]


def concatenate(arrays, axis=0):
    if not _any_tensor(arrays):
        return _np.concatenate(arrays, axis=axis)
    ts = _seq(arrays)
    if any(t.ndim == 0 for t in ts):
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    if axis is None:
        return tg.cat([t.reshape(-1) for t in ts], dim=0)
    return tg.cat(ts, dim=axis)


def stack(arrays, axis=0):
    if not _any_tensor(arrays):
        return _np.stack(arrays, axis=axis)
    return tg.stack(_seq(arrays), dim=axis)


def _atleast_1d(t):
    return t.reshape(1) if t.ndim == 0 else t


def _atleast_2d(t):
    return t.reshape(1, -1) if t.ndim < 2 else t


def hstack(arrays):
    if not _any_tensor(arrays):
        return _np.hstack(arrays)
    ts = [_atleast_1d(t) for t in _seq(arrays)]
    return tg.cat(ts, dim=0 if ts[0].ndim == 1 else 1)


def vstack(arrays):
    if not _any_tensor(arrays):
        return _np.vstack(arrays)
    return tg.cat([_atleast_2d(t) for t in _seq(arrays)], dim=0)


# ---------------------------------------------------------------------------------
# selection, construction, copies


def where(condition, x=None, y=None):
    if not _any_tensor(condition, x, y):
        return _np.where(condition, x, y) if x is not None else _np.where(condition)
    if x is None or y is None:
        raise ShimUnsupported("np.where with one argument")
    c = condition if isinstance(condition, Tensor) else tg.tensor(_np.asarray(condition, dtype=bool))
    return mark_array(tg.where(c, _t(x), _t(y)))  # (NumPy: a 0-d array, not a scalar)


def clip(a, a_min=None, a_max=None, out=None):
    if not _any_tensor(a, a_min, a_max, out):
        return _np.clip(a, a_min, a_max, out=out)
    if _any_tensor(a_min, a_max):
        res = _t(a)
        if a_min is not None:
            res = tg.maximum(res, _t(a_min))
        if a_max is not None:
            res = tg.minimum(res, _t(a_max))
    else:
        res = tg.clip(_t(a), a_min, a_max)
    return _write_out(res, out)


def _all(a, axis=None):
    if not _any_tensor(a):
        return _np.all(a, axis=axis)
    a = _t(a)
    return tg.all(a) if axis is None else tg.all(a, dim=axis)


def _any(a, axis=None):
    if not _any_tensor(a):
        return _np.any(a, axis=axis)
    a = _t(a)
    return tg.any(a) if axis is None else tg.any(a, dim=axis)


def array(obj, dtype=None, copy=True, **kw):
    if not _any_tensor(obj):
        return _np.array(obj, dtype=dtype, copy=copy, **kw)
    if dtype not in (None, float, _np.float64) or kw:
        raise ShimUnsupported("np.array of Tensors with a dtype or options")
    if isinstance(obj, Tensor):
        return mark_array(obj.clone()) if copy else obj
    return tg.stack(_seq(obj))


def asarray(obj, dtype=None):
    if isinstance(obj, Tensor) and dtype in (None, float, _np.float64):
        return obj
    return array(obj, dtype=dtype, copy=False) if _any_tensor(obj) else _np.asarray(obj, dtype=dtype)


def copy(a):
    return mark_array(_t(a).clone()) if _any_tensor(a) else _np.copy(a)


def copyto(dst, src):
    if not _any_tensor(dst, src):
        return _np.copyto(dst, src)
    if not isinstance(dst, Tensor):
        raise ShimUnsupported("np.copyto into a NumPy array from a Tensor")
    dst[...] = src if isinstance(src, Tensor) else _t(src)


def _like(name, tensor_fn):
    numpy_fn = getattr(_np, name)

    def fn(a, dtype=None, **kw):
        if not _any_tensor(a) or dtype is not None or kw:
            return numpy_fn(_np.asarray(a.detach().numpy()) if isinstance(a, Tensor) else a, dtype=dtype, **kw)
        return tensor_fn(a)

    fn.__name__ = name
    return fn


# ---------------------------------------------------------------------------------
# methods (the source is rewritten to call these)


def _fill(a, value):
    a[...] = value  # (ndarray.fill: in place, None)


_METHODS = {"dot": dot, "copy": copy, "reshape": None, "squeeze": squeeze, "sum": None, "mean": None,
            "fill": _fill}


def _method(obj, name, *args, **kw):
    """``obj.name(*args, **kw)`` with NumPy's meaning when ``obj`` is a Tensor."""
    if not isinstance(obj, Tensor):
        return getattr(obj, name)(*args, **kw)
    if name == "reshape":
        shp = args[0] if len(args) == 1 and not isinstance(args[0], int) else args
        return reshape(obj, tuple(shp), **kw)
    if name in ("sum", "mean"):
        return _NS[name](obj, *args, **kw)
    return _METHODS[name](obj, *args, **kw)


def _attr(obj, name):
    if name == "T" and isinstance(obj, Tensor):
        return obj if obj.ndim == 0 else transpose(obj)  # (a 0-d array's .T is itself, a scalar's too)
    return getattr(obj, name)


class _Rewrite(ast.NodeTransformer):
    """``import numpy as np`` binds the shim; NumPy-spelled methods and ``.T`` call it."""

    def visit_Import(self, node):
        keep = [a for a in node.names if a.name != "numpy"]
        if len(keep) == len(node.names):
            return node
        out = [ast.Assign(targets=[ast.Name(a.asname or "numpy", ast.Store())],
                          value=ast.Name("__tracegrad_np_shim__", ast.Load()))
               for a in node.names if a.name == "numpy"]
        if keep:
            out.append(ast.Import(names=keep))
        return out

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in _METHODS and not (
                isinstance(f.value, ast.Name) and f.value.id in ("np", "numpy", "math")):
            return ast.Call(
                func=ast.Attribute(ast.Name("__tracegrad_np_shim__", ast.Load()), "_method", ast.Load()),
                args=[f.value, ast.Constant(f.attr)] + node.args, keywords=node.keywords)
        return node

    _OPS = {ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/=", ast.Pow: "**="}

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if isinstance(node.target, ast.Name) and type(node.op) in self._OPS:
            return ast.Assign(
                targets=[ast.Name(node.target.id, ast.Store())],
                value=ast.Call(
                    func=ast.Attribute(ast.Name("__tracegrad_np_shim__", ast.Load()), "_iop", ast.Load()),
                    args=[ast.Name(node.target.id, ast.Load()), node.value, ast.Constant(self._OPS[type(node.op)])],
                    keywords=[]))
        if isinstance(node.target, ast.Subscript):  # a[i] op= v: checked as a[i] = v is
            check = ast.Expr(ast.Call(
                func=ast.Attribute(ast.Name("__tracegrad_np_shim__", ast.Load()), "_refuse_write_into_flipped",
                                   ast.Load()), args=[node.target.value], keywords=[]))
            return [check, node]
        return node

    def visit_Assign(self, node):
        self.generic_visit(node)
        t = node.targets[0]
        if len(node.targets) == 1 and isinstance(t, ast.Subscript):  # a[i] = v: _setitem(a, i, v)
            return ast.Expr(ast.Call(
                func=ast.Attribute(ast.Name("__tracegrad_np_shim__", ast.Load()), "_setitem", ast.Load()),
                args=[t.value, t.slice, node.value], keywords=[]))
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if node.attr == "T" and isinstance(node.ctx, ast.Load):
            return ast.Call(
                func=ast.Attribute(ast.Name("__tracegrad_np_shim__", ast.Load()), "_attr", ast.Load()),
                args=[node.value, ast.Constant("T")], keywords=[])
        return node


def eager_source(source):
    """The program's source as the eager run executes it (for notes and repros)."""
    tree = ast.fix_missing_locations(_Rewrite().visit(ast.parse(source)))
    return ast.unparse(tree)


def eager_function(source, fname="f"):
    """The function ``fname`` of the program ``source``, executed with the shim as ``np``."""
    tree = ast.fix_missing_locations(_Rewrite().visit(ast.parse(source)))
    ns = {"__name__": "tracegrad_fuzz_eager", "__tracegrad_np_shim__": np, "math": math,
          "__builtins__": builtins}
    exec(compile(tree, "<fuzz-eager>", "exec"), ns)
    return ns[fname]


# ---------------------------------------------------------------------------------
# the module object


_NS = {
    # elementwise, one argument
    "tanh": _unary("tanh", tg.tanh), "exp": _unary("exp", tg.exp), "log": _unary("log", tg.log),
    "abs": _unary("abs", tg.abs), "absolute": _unary("absolute", tg.abs),
    "sin": _unary("sin", tg.sin), "cos": _unary("cos", tg.cos), "sqrt": _unary("sqrt", tg.sqrt),
    "square": _unary("square", tg.square), "arctan": _unary("arctan", tg.arctan),
    "negative": _unary("negative", tg.negative), "log1p": _unary("log1p", tg.log1p),
    "expm1": _unary("expm1", tg.expm1), "exp2": _unary("exp2", tg.exp2),
    "cbrt": _unary("cbrt", _cbrt), "sinh": _unary("sinh", tg.sinh), "cosh": _unary("cosh", tg.cosh),
    "reciprocal": _unary("reciprocal", tg.reciprocal), "sign": _unary("sign", tg.sign),
    # elementwise, two arguments (operators do the broadcasting and Python floats)
    "add": _Ufunc("add", lambda a, b: _t(a) + b, at=_add_at),
    "subtract": _Ufunc("subtract", lambda a, b: _t(a) - b),
    "multiply": _Ufunc("multiply", lambda a, b: _t(a) * b),
    "true_divide": _binary("true_divide", lambda a, b: _t(a) / b),
    "divide": _binary("divide", lambda a, b: _t(a) / b),
    "power": _binary("power", lambda a, b: _t(a) ** b),
    "maximum": _binary("maximum", lambda a, b: tg.maximum(_t(a), _t(b))),
    "minimum": _binary("minimum", lambda a, b: tg.minimum(_t(a), _t(b))),
    "hypot": _binary("hypot", lambda a, b: tg.hypot(_t(a), _t(b))),  # (its rule: 0 at the origin, as the staged paths)
    "arctan2": _binary("arctan2", lambda a, b: tg.arctan2(_t(a), _t(b))),
    # reductions
    "sum": _reduction("sum", _sum), "mean": _reduction("mean", _mean),
    "max": _reduction("max", _amax), "amax": _reduction("amax", _amax),
    "min": _reduction("min", _amin), "amin": _reduction("amin", _amin),
    "prod": _reduction("prod", _prod), "var": _reduction("var", _var),
    # products, shapes, selection, construction
    "dot": dot, "matmul": matmul, "inner": inner, "outer": outer, "tensordot": tensordot,
    "einsum": einsum, "shape": shape, "ndim": ndim, "size": size, "reshape": reshape,
    "ravel": ravel, "transpose": transpose, "swapaxes": swapaxes, "expand_dims": expand_dims,
    "squeeze": squeeze, "flip": flip, "tile": tile, "broadcast_to": broadcast_to,
    "cumsum": cumsum, "concatenate": concatenate, "stack": stack, "hstack": hstack,
    "vstack": vstack, "where": where, "clip": clip, "all": _all, "any": _any, "array": array,
    "asarray": asarray, "copy": copy, "copyto": copyto,
    "zeros_like": _like("zeros_like", lambda a: tg.zeros_like(a)),
    "ones_like": _like("ones_like", lambda a: tg.ones_like(a)),
    "empty_like": _like("empty_like", lambda a: tg.zeros_like(a)),
    # the rewritten source's hooks
    "_method": _method, "_attr": _attr, "_iop": _iop, "_setitem": _setitem,
    "_refuse_write_into_flipped": _refuse_write_into_flipped,
}


class _Shim(types.ModuleType):
    def __getattr__(self, name):  # everything else is NumPy's own
        return getattr(_np, name)


np = _Shim("tracegrad_fuzz_numpy_shim", __doc__)
np.__dict__.update(_NS)

__all__ = ["np", "eager_function", "eager_source", "mark_array", "ShimUnsupported"]
