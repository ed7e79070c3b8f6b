"""``grad(f, mode="ast")``: the callable that runs a generated adjoint. It hands the
arguments to the generated function as they are (arrays, Python floats, Tensors), seeds
the output gradient in the arguments' dtype, and gives results back in each
argument's kind (a gradient that never reached an argument is zeros)."""
import contextlib
import functools
import types

from ...backend import cpu as np  # host-side type checks only
from ...backend import is_array, namespace_of
from ...runtime.grad_mode import no_grad
from ...runtime.tensor import Tensor, wrap
from ..tape.randomness import Draws, DrawsDiffer
from ..tape.tracing import active_tape, positional_params
from ..tape.tape import Var
from ..checks import check_input, positional_arguments
from ..reads import Reads
from ..tree import flatten, tree_map, unflatten
from .. import jit
from ..tape.fusion import fusion_enabled
from .aliasing import AliasError, refuse_zero_d_arguments
from .driver import _source_function, adjoint, tangents, written_for_now
from ..undefined import check_defined
from .support import zero_tangent

__all__ = ["AstFunction"]


class AstFunction:
    """A gradient made by source transformation (see :mod:`tracegrad.transform.ast`).
    ``.source`` is the generated Python, ``.mode`` is ``"ast"``."""

    mode = "ast"

    def __init__(self, f, argnums, name, has_aux=False, with_value=False, holomorphic=False):
        self.single = isinstance(argnums, int)
        self.argnums = (argnums,) if self.single else tuple(argnums)
        self._self = None  # a bound method's object: its function is transformed, and
        if isinstance(f, types.MethodType):  # called with the object first
            self._self, f = (f.__self__,), f.__func__
            self.argnums = tuple(n + 1 if n >= 0 else n for n in self.argnums)
        self.f = f
        self.holomorphic = holomorphic
        self._name, self.has_aux, self.with_value = name, has_aux, with_value
        self._gen = None
        self._reads = None  # the globals its generated code copied (see reads.py)
        self._fuse = fusion_enabled()  # (set when the gradient is made, as for the tape)
        self._calls = 0     # plain NumPy calls, until hot (jit.HOT_CALLS): then fused
        functools.update_wrapper(self, f, updated=())

    def generated(self, nargs=None):
        """The :class:`~.driver.Generated` adjoint (transformed on first use)."""
        if self._gen is None:
            checked = nargs is not None
            if checked and self._self is not None:
                nargs += 1  # (the caller counts a bound method's arguments without its object)
            nargs = nargs if checked else len(positional_params(self.f))
            positions = tuple(n % nargs if nargs else n for n in self.argnums)
            for n in self.argnums if checked else ():
                if not -nargs <= n < nargs:
                    raise ValueError(f"argnums {self.argnums if not self.single else self.argnums[0]!r} "
                                     f"out of range for {getattr(self.f, '__name__', 'f')} called with "
                                     f"{nargs} positional argument(s)")
            gen = adjoint(self.f, positions, self._name, single=self.single,
                          has_aux=self.has_aux, with_value=self.with_value, holomorphic=self.holomorphic)
            gen.refresh()
            self._gen = gen
        return self._gen

    @property
    def source(self):
        return self.generated().source

    @property
    def fused_source(self):
        """``source`` as it runs once hot: its elementwise runs as CPU kernels (see
        :mod:`.fusing`), where fusion is on and Numba is installed."""
        gen = self.generated()
        if not self._fuse:
            return gen.source
        return "\n\n".join([gen.fused()[1]] + [c.fused()[1] for c in _callees(gen)])

    def _ast_function(self):
        """The generated adjoint, for a transformation of this gradient (higher order)."""
        if self.has_aux or self.with_value:
            from .source import TransformError
            raise TransformError("a gradient with has_aux or its value cannot be transformed "
                                 "again", construct="higher order")
        return self.generated().fn

    def __repr__(self):
        return f"<ast-transformed {self._name} of {getattr(self.f, '__qualname__', self.f)!r}>"

    def __get__(self, obj, cls=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if self._self is not None:
            args = self._self + args
        if kwargs:  # (keyword-only parameters and **kwargs stay keywords)
            args, kwargs = positional_arguments(self.f, args, kwargs)
        gen = self._gen or self.generated(len(args) - len(self._self or ()))
        if self._reads is None:
            self._reads = Reads(self.f)
        elif self._reads.changed():  # a global it reads was rebound: copied again, or, for
            if not written_for_now(gen):  # a function it calls, the code written again
                self._gen = None
                gen = self.generated(len(args) - len(self._self or ()))
            gen.refresh()
            self._reads = Reads(self.f)
        refuse_zero_d_arguments(gen, args, getattr(self.f, "__name__", "f"))
        positions = gen_positions(self, len(args))
        given = args
        args = _differentiable_arguments(args, positions, self.holomorphic)
        first = args[positions[0]]
        if active_tape() is not None or any(isinstance(x, Var) for x in flatten(first)[0]):
            return self._finish(gen.fn(*args, **kwargs, **{gen.seed: _seed(first)}), given, positions, raw=True)
        xp = _device_namespace(args)
        fn = gen.fn if xp is None else gen.on_device(xp)
        if xp is None and self._fuse:
            if self._calls <= jit.HOT_CALLS:
                self._calls += 1
            elif _errors_only_warn():
                fn = gen.fused()[0]
        seed = {gen.seed: _seed(first, xp)}
        if any(isinstance(a, Tensor) for a in args):
            with no_grad():
                args = tuple(a.detach() if isinstance(a, Tensor) else a for a in args)
                return self._finish(fn(*args, **kwargs, **seed), given, positions)
        return self._finish(fn(*args, **kwargs, **seed), given, positions)

    def _finish(self, out, args, positions, raw=False):
        if self.with_value or self.has_aux:
            value, grads = out
        else:
            value, grads = None, out
        if self.single:
            grads = _result(grads, args[positions[0]], raw)
        else:
            grads = tuple(_result(g, args[p], raw) for g, p in zip(grads, positions))
        if self.has_aux:
            v, aux = value
            aux = _plain_floats(aux)
            return ((_value(v, raw), aux), grads) if self.with_value else (grads, aux)
        if self.with_value:
            return _value(value, raw), grads
        return grads


def _errors_only_warn():
    """Whether NumPy's floating-point error handling (``np.errstate``) at most warns: the
    kernels neither warn nor raise, so under ``divide="raise"`` (or ``"call"``) the
    adjoint runs unfused, where NumPy raises as it would."""
    return all(v in ("ignore", "warn") for v in np.geterr().values())


def _callees(gen):
    """The generated functions ``gen`` calls, each once (as ``Generated.source`` lists them)."""
    seen, out, todo = {id(gen)}, [], list(gen.callees)
    while todo:
        g = todo.pop(0)
        if id(g) not in seen:
            seen.add(id(g))
            out.append(g)
            todo.extend(g.callees)
    return out


def _differentiable_arguments(args, positions, holomorphic=False):
    """The arguments as the generated code takes them: the differentiated ones checked
    (floating point, as on the tape) and their Python complex numbers made complex128
    NumPy scalars (the rules compare them, ``y >= 0``, which Python's complex refuses).
    Python floats stay Python floats (:class:`PythonFloat`, which has a shape and a dtype
    as the tape's float64 tracers have): the user's operators on them keep Python's
    meaning, as on the tape (see tape/python_numbers.py)."""
    args = list(args)
    for n in positions:
        a = args[n]
        leaves, spec = flatten(a)
        for x in leaves:
            check_input(x, n, "grad", holomorphic)
        if any(type(x) in (float, complex) for x in leaves):
            args[n] = unflatten(spec, [PythonFloat(x) if type(x) is float else np.complex128(x)
                                       if type(x) is complex else x for x in leaves])
    return tuple(args)


class PythonFloat(float):
    """A differentiated Python float argument in AST mode: Python's own float, whose
    operators keep Python's meaning (``(-8.0) ** (1 / 3)`` is complex, ``x / 0.0`` raises),
    which also answers NumPy's scalar attributes as a float64 (``x.shape == ()``,
    ``x.dtype``, ``x.sum()``), as the tape's tracer of it does. Arithmetic gives plain
    floats, as Python's does."""

    __slots__ = ()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(np.float64(self), name)


def _device_namespace(args):
    """The namespace of the first array argument on a device (None if all are on the
    host): the generated function runs with NumPy's names rebound to it. (Tensors need no
    such thing: NumPy hands its calls on Tensors to tracegrad, which computes on their
    device.)"""
    for a in args:
        if type(a) not in _HOST and is_array(a):
            xp = namespace_of(a)
            if xp is not np:
                return xp
    return None


_HOST = {np.ndarray, float, int, bool}


def gen_positions(fn, nargs):
    return tuple(n % nargs for n in fn.argnums)


def _seed(x, xp=None):
    """The output gradient, 1 in the dtype of the first differentiated argument (on
    device ``xp`` where the arguments live on one)."""
    if xp is not None and not is_array(x) and not isinstance(x, Tensor):
        return xp.from_host(_seed(x))  # (a Python float beside device arrays)
    if isinstance(x, Tensor):
        return wrap(namespace_of(x._data).ones((), dtype=x._data.dtype))
    if isinstance(x, Var):
        return np.ones((), dtype=x.npdtype)
    dtype = getattr(x, "dtype", None)
    if dtype is not None and dtype.kind in "fc":
        return namespace_of(x).ones((), dtype=dtype)
    if isinstance(x, (list, tuple, dict)):
        leaves = [v for v in flatten(x)[0] if getattr(v, "dtype", None) is not None]
        if leaves:
            return _seed(leaves[0])
    return np.ones((), dtype=np.float64)


def _result(g, like, raw):
    """A gradient in the kind of its argument ``like`` (a list, tuple or dict of them for
    a list, tuple or dict: a pytree, as on the tape)."""
    check_defined(g)  # (a derivative a rule does not have, needed after all: its error)
    if isinstance(like, (list, tuple)):
        gs = list(g) if g is not None else [None] * len(like)
        gs += [None] * (len(like) - len(gs))
        return type(like)(_result(gi, li, raw) for gi, li in zip(gs, like))
    if isinstance(like, dict):
        gs = g if isinstance(g, dict) else {}
        out = {k: _result(gs.get(k), v, raw) for k, v in like.items()}
        try:
            return out if type(like) is dict else type(like)(out)
        except TypeError:  # (a dict subclass that takes other arguments)
            return out
    if raw:  # (traced: a real argument's gradient is real, as below)
        if g is None:
            return like * 0.0
        if _kind(g) == "c" and _kind(like) in ("f", "i", "u"):
            from ...rules import TABLE
            return TABLE["real"](g)
        return g
    if g is None:
        if isinstance(like, Tensor):
            return wrap(namespace_of(like._data).zeros_like(like._data))
        if type(like) in (float, complex):
            return type(like)(0)
        return namespace_of(like).zeros_like(like, dtype=like.dtype if like.dtype.kind in "fc" else np.float64)
    if isinstance(like, Tensor):
        if not isinstance(g, Tensor):
            g = wrap(np.asarray(g) if not hasattr(g, "shape") or isinstance(g, np.generic) else g)
        return g if g._data.dtype == like._data.dtype else g.to(like.dtype)
    if type(like) is float:  # (the real part of a complex one, as for arrays below)
        return float(getattr(g, "real", g))
    if type(like) is complex:
        return complex(g)
    if isinstance(g, Tensor):
        g = g._data
    if not is_array(g):  # a NumPy scalar or a Python number: an array on like's device
        g = (namespace_of(like) if is_array(like) else np).asarray(g)
    want = getattr(like, "dtype", None)
    if want is not None and want.kind in "fc" and g.dtype != want:
        if want.kind == "f" and g.dtype.kind == "c":  # a real argument: the real part
            g = g.real
        g = g.astype(want)
    elif _broadcast_view(g):  # (the gradient of a sum): an array of its own
        g = g.copy()
    return g


def _kind(x):
    """The dtype kind of an array, tracer or Python number ("" if it has none)."""
    dtype = getattr(x, "npdtype", None) or getattr(x, "dtype", None)
    if dtype is None:
        return "c" if type(x) is complex else "f" if type(x) is float else ""
    return getattr(dtype, "kind", "")


def _broadcast_view(a):
    """NumPy marks broadcast views read-only; CuPy keeps no such flag: a zero stride over
    more than one element tells."""
    return not getattr(a.flags, "writeable", True) or (a.size > 1 and 0 in a.strides)


def _value(v, raw):
    if raw or not isinstance(v, np.generic):
        return _plain_floats(v)
    return np.asarray(v)


def _plain_floats(tree):
    """``tree`` with each :class:`PythonFloat` (an argument handed back as it came, as
    the value or in ``aux``) a plain float again, as the tape gives it."""
    return tree_map(lambda x: float(x) if type(x) is PythonFloat else x, tree)


# What generated code may raise at run time where the tape, which follows the values, may
# not: a refusal (memory shared, a list where an array was expected, a value NumPy's own
# function made a constant of), a rule without the derivative of an argument that the AST
# path took to be differentiated only because a list held it beside one that is
# (``args[k] = x; f(*args)``), or a construct its helpers do not take. mode="auto" then runs
# the tape, which raises the error again where it is the function's own.
RETRY_ON_TAPE = (Exception,)


class AutoFunction:
    """``mode="auto"``: the AST transformation where it applies, else the tape. Which one
    is decided at the first call (or the first look at ``.source``/``.mode``) and kept;
    the AST path takes keyword arguments and dict arguments as the tape does."""

    def __init__(self, f, make_ast, make_tape):
        self.f = f
        self._make_ast, self._make_tape = make_ast, make_tape
        self._ast = self._tape = None
        self._chosen = None
        self._ran = False  # (a call of the AST function has completed)
        self.fallback_reason = None
        functools.update_wrapper(self, f, updated=())

    def _choose(self, nargs=None):
        if self._chosen is None:
            from .source import TransformError
            try:
                fn = self._make_ast()
                gen = fn.generated(nargs)
                _prefer_the_tape(gen)
                self._ast = self._chosen = fn
            except TransformError as e:
                self.fallback_reason = e
                self._chosen = self._tape_fn()
        return self._chosen

    def _tape_fn(self):
        if self._tape is None:
            self._tape = self._make_tape()
        return self._tape

    @property
    def mode(self):
        return self._choose().mode

    @property
    def source(self):
        return self._choose().source

    @property
    def fused_source(self):
        """The chosen function's source as it runs once hot (see ``AstFunction.fused_source``)."""
        chosen = self._choose()
        return chosen.fused_source if chosen.mode == "ast" else chosen.source

    @property
    def tape(self):
        return self._tape_fn().tape

    def _ast_function(self):
        chosen = self._choose()
        if chosen is not self._ast:
            from .source import TransformError
            raise TransformError("the inner function was differentiated on the tape",
                                 construct="higher order")
        return chosen._ast_function()

    def __repr__(self):
        return f"<auto-staged {getattr(self.f, '__qualname__', self.f)!r}>"

    def __get__(self, obj, cls=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if kwargs:  # (as the tape does: argnums name the same parameters either way)
            args, kwargs = positional_arguments(self.f, args, kwargs)
        chosen = self._chosen or self._choose(len(args))
        if chosen is not self._ast:
            return chosen(*args, **kwargs)
        # (the first call, where a refusal at run time is likeliest, notes the random
        # generators: the tape that runs instead draws the same numbers)
        draws = Draws(self.f) if not self._ran else None
        try:
            out = chosen(*args, **kwargs)
        except RETRY_ON_TAPE as e:
            if getattr(e, "arguments_changed", False) or \
                    (not getattr(e, "before_run", False) and chosen.generated().writes_params):
                raise  # (the caller's arrays were written: running again would differ)
            if draws is not None:
                draws.undo()
            self.fallback_reason, self._chosen = e, self._tape_fn()
            return self._chosen(*args, **kwargs)
        self._ran = True
        return out


def _prefer_the_tape(gen):
    """For ``mode="auto"``: a function where a name changed in place visibly shares memory
    with another, or that changes its own arguments in place (a refusal at run time could
    not be retried on the tape then: the caller's arrays would be changed twice), takes
    the tape, which follows NumPy's memory."""
    if getattr(gen, "visible_aliasing", False) or getattr(gen, "writes_params", False):
        from .source import TransformError
        raise TransformError("the function changes an array in place that another name, or "
                             "its caller, may share (the tape follows NumPy's memory)",
                             construct="in-place change of an aliased array")


def ast_jvp(f, primals, tangent_values, auto=False):
    """``(f(*primals), tangent)`` through ``f``'s forward-mode version (generated once);
    ``auto``: refuse (for the tape) where :func:`_prefer_the_tape` says so."""
    gen = tangents(f, f"{getattr(f, '__name__', 'f')}_jvp")
    if auto:
        _prefer_the_tape(gen)
    refuse_zero_d_arguments(gen, primals, getattr(f, "__name__", "f"))
    try:
        return _run_jvp(gen, f, primals, tangent_values)
    except AliasError as e:  # (safe to run again on the tape only if no argument was written)
        e.before_run = e.before_run or not gen.writes_params
        raise


def _run_jvp(gen, f, primals, tangent_values):
    src = _source_function(f)
    missing = src.__code__.co_argcount - len(primals)
    if 0 < missing <= len(src.__defaults__ or ()):  # defaulted parameters: constants
        extra = tuple(src.__defaults__[-missing:])
        primals, tangent_values = primals + extra, tangent_values + tuple(zero_tangent(v) for v in extra)
    if active_tape() is not None or any(isinstance(p, Var) for p in primals):
        return _call_jvp(gen, gen.fn, primals, tangent_values)
    tangent_values = tuple(_tangent_kinds(p, t) for p, t in zip(primals, tangent_values)) + \
        tangent_values[len(primals):]
    xp = _device_namespace(primals)
    fn = gen.fn if xp is None else gen.on_device(xp)
    if any(isinstance(a, Tensor) for a in primals + tangent_values):
        with no_grad():
            primals = tuple(a.detach() if isinstance(a, Tensor) else a for a in primals)
            tangent_values = tuple(a.detach() if isinstance(a, Tensor) else a for a in tangent_values)
            out, tout = _call_jvp(gen, fn, primals, tangent_values)
    else:
        out, tout = _call_jvp(gen, fn, primals, tangent_values)
    like = primals[0] if primals else 0.0
    out, tout = _result(out, out, False) if _is_numpy_scalar(out) else out, \
        _result(tout, out if out is not None else like, False)
    return _arrays(out), _arrays(tout)


def _arrays(tree):
    """Python numbers among jvp's results as 0-d arrays, as the tape gives them (and JAX)."""
    return tree_map(lambda v: np.asarray(v) if type(v) in (float, complex, int) else v, tree)


def _tangent_kinds(primal, tangent):
    """``tangent`` with each Python-number leaf of a NumPy scalar's or array's primal made
    that NumPy kind (dtype and 0-d-ness): the generated code calls the primal's methods on
    its tangent (``db.sum()`` for ``b.sum()``)."""
    pl, spec = flatten(primal)
    tl, tspec = flatten(tangent)
    if spec != tspec or not any(type(t) in (float, int) for t in tl):
        return tangent
    return unflatten(tspec, [_numpy_kind(p, t) for p, t in zip(pl, tl)])


def _numpy_kind(p, t):
    if type(t) not in (float, int) or type(p) in (float, int):
        return t
    if isinstance(p, np.ndarray):
        return np.asarray(t, dtype=p.dtype)
    if isinstance(p, np.generic):
        return p.dtype.type(t)
    return t


def _call_jvp(gen, fn, primals, tangent_values):
    """The generated forward-mode function called: tangents after the primals, or, for a
    function taking ``*args`` (whose tangents are keyword-only), by name -- the tangents
    of the extra positional arguments as one tuple."""
    if not getattr(gen, "keyword_tangents", False):
        return fn(*primals, *tangent_values)
    n = gen.nparams
    named = dict(zip(gen.tangent_names, tuple(tangent_values[:n]) + (tuple(tangent_values[n:]),)))
    return fn(*primals, **named)


def _is_numpy_scalar(x):
    return isinstance(x, np.generic)


def ast_vjp(f, primals, has_aux=False, auto=False, positions=None):
    """``(f(*primals), f_vjp)`` (and ``aux`` with ``has_aux``) whose pullback is an adjoint
    written from ``f``'s source (generated once; it takes the cotangent as its seed, so
    outputs of any shape, and pytrees of them, are pulled back); ``auto``: refuse (for the
    tape) where :func:`_prefer_the_tape` says so."""
    from ..api import check_cotangent, value_on_copies
    from ..checks import split_aux
    from .source import TransformError
    positions = tuple(range(len(primals))) if positions is None else tuple(positions)
    name = f"{getattr(f, '__name__', 'f')}_vjp"
    gen = adjoint(f, positions, name, internal=True, has_aux=has_aux)
    if auto:
        _prefer_the_tape(gen)
    refuse_zero_d_arguments(gen, primals, getattr(f, "__name__", "f"))
    for n in positions:
        for x in flatten(primals[n])[0]:
            check_input(x, n, "vjp")
    draws = Draws(f)
    out = value_on_copies(f, primals)
    # the adjoint runs f again for each pullback: if f drew random numbers, with the
    # generators put back where they were, so that it draws those the value used
    replay = draws.replay() if draws.happened() else contextlib.nullcontext()
    aux = None
    if has_aux:
        out, aux = split_aux(out, "vjp")

    def f_vjp(cotangent):
        check_cotangent(out, cotangent)
        try:
            with replay:
                grads = _run_pullback(gen, primals, positions, cotangent)
        except DrawsDiffer:
            raise TransformError(f"vjp of {getattr(f, '__qualname__', 'f')}: it draws random numbers, and the "
                                 "adjoint written from its source, run again for the pullback, drew other "
                                 "numbers than its value used (the tape runs it once)") from None
        except RETRY_ON_TAPE as e:
            if isinstance(e, AliasError):  # (an argument written in place: the tape would differ)
                e.before_run = e.before_run or not gen.writes_params
            if not auto or gen.writes_params or getattr(e, "arguments_changed", False):
                raise
            from ..traced_vjp import traced_vjp  # (mode="auto": the tape's pullback instead)
            return traced_vjp(f, primals, positions, has_aux)[1](cotangent)
        if has_aux:
            grads = grads[1]
        raw = active_tape() is not None or any(isinstance(x, Var) for p in primals for x in flatten(p)[0])
        return tuple(_result(g, primals[n], raw) for g, n in zip(grads, positions))
    return (out, f_vjp, aux) if has_aux else (out, f_vjp)


def _run_pullback(gen, primals, positions, cotangent):
    """The generated adjoint run with ``cotangent`` as its seed (on the primals' device;
    Tensors detached, as the tape's results are)."""
    primals = _differentiable_arguments(primals, positions)
    if active_tape() is not None or any(isinstance(x, Var) for p in primals for x in flatten(p)[0]):
        return gen.fn(cotangent, *primals)
    xp = _device_namespace(primals)
    fn = gen.fn if xp is None else gen.on_device(xp)
    if any(isinstance(a, Tensor) for a in flatten((primals, cotangent))[0]):
        with no_grad():
            primals, cotangent = (unflatten(s, [a.detach() if isinstance(a, Tensor) else a for a in leaves])
                                  for leaves, s in (flatten(primals), flatten(cotangent)))
            return fn(cotangent, *primals)
    return fn(cotangent, *primals)
