"""The rule table's machinery: a :class:`Primitive` is one differentiable operation.

A primitive bundles, written once and shared by the eager, tape and AST paths:

* a forward kernel ``impl(xp, *arrays, **params)`` over backend arrays (``xp`` is the
  array namespace of the inputs' device, see :mod:`tracegrad.backend`);
* one vjp per differentiable positional input, ``vjp(g, out, *args, **params)``, written
  with operators and other primitives only, so the same function runs on raw arrays, on
  Tensors under ``create_graph=True`` and on tracers;
* one jvp per differentiable input, ``jvp(t, out, *args, **params)`` (or derived: a
  primitive with a diagonal Jacobian uses its vjp, a linear one applies itself to the
  tangent);
* whether its derivatives hold for complex values (``complex=True``, see below);
* whether it is *scalar* (``scalar=True``): on float operands its kernel is exactly its
  operator or its NumPy ufunc applied element by element, so the emitters write it as
  ``x * y`` or ``xp.tanh(x)`` and a fusing compiler (``cupy.fuse``, Numba on the CPU) may
  compile the line as scalar code. Vjps need no declaration of their own: they are written
  with primitives, so a vjp made of scalar ones fuses as it is. A primitive whose NumPy
  kernel is not one ufunc but is still elementwise (relu, where) may instead give
  ``scalar_code(args, dtypes, out_dtype, numbers)``: the Python expression its kernel
  computes on one element, bit for bit (``args``: the operands' texts; ``dtypes``: their
  NumPy dtypes, None for a Python number; ``numbers``: those numbers, None for arrays;
  ``np`` in the expression is NumPy), or None where no expression would equal the kernel
  for these operands. Fused CPU kernels (Numba) then compile it;
* what the eager runtime needs to record a PyTorch-like node: the node's name, which
  argument values each vjp reads (``uses``: only those are saved, so an input that no
  needed vjp reads may be modified in place afterwards), whether the result is a view,
  and how inputs are promoted to a common dtype.

Complex numbers: vjps follow JAX's (and HIPS autograd's) convention, in which the vjp of
a holomorphic ``f`` is ``g * f'(z)`` -- no conjugate -- so most rules hold for complex
values as written; a non-holomorphic rule (abs, real, imag, angle, norms) writes its
conjugates. Only a rule declared ``complex=True`` is trusted with complex values: every
path refuses to differentiate a complex value through any other, by name, rather than
risk a wrong gradient. The eager runtime gives PyTorch's (conjugate) convention by
conjugating at each node: torch's vjp is ``conj(vjp(conj(g)))``.

Positional arguments are the array-like operands (Tensors, arrays, tracers or Python
numbers); keyword-only arguments are static parameters (dims, flags, shapes).

Calling a primitive dispatches on its operands, like ``bind`` in JAX's autodidax: if any
operand's type has a registered handler (Tensor, tape tracer) the handler runs the
primitive; otherwise the kernel runs directly on the arrays.
"""
import inspect

from ..backend import namespace_of

__all__ = ["Primitive", "primitive", "Meta", "meta", "TABLE", "register_handler", "PROMOTE", "FLOAT",
           "KEEP", "OUT"]

PROMOTE = "promote"  # cast array operands to torch.result_type of all operands
FLOAT = "float"      # as PROMOTE, then integers and bools compute in the default float dtype
KEEP = "keep"        # no casting (shape ops, indexing, reductions that choose their own dtype)
OUT = "out"          # names the primitive's result in ``uses``

TABLE = {}           # name -> Primitive: the whole rule table, walked by the tests

_HANDLERS = {}       # operand type -> handler(prim, args, params), or None (cached per type)
_HANDLER_BASES = []  # (base class, handler) registered by the runtimes


def register_handler(cls, handler, overriding=False):
    """Route primitive calls with an operand of type ``cls`` (or a subclass) to ``handler``.
    An ``overriding`` handler (the tape's) wins over the others whenever one of its
    operands is in the call, but is only looked for while ``OVERRIDING[0]`` is true
    (while a tape records), so the eager hot path pays one list read."""
    _HANDLER_BASES.append((cls, handler))
    _HANDLERS.clear()
    if overriding:
        _OVERRIDING.append((cls, handler))


_OVERRIDING = []     # (class, handler) of overriding handlers
OVERRIDING = [0]     # how many tapes are recording (any thread): look for overriding operands


def _handler_for(tp):
    for base, handler in _HANDLER_BASES:
        if issubclass(tp, base):
            _HANDLERS[tp] = handler
            return handler
    _HANDLERS[tp] = None
    return None


class Meta:
    """Stands in for an operand whose value no needed vjp reads: its shape, its
    ``strides`` when known (a vjp may make its gradient in the operand's memory layout),
    and its ``dtype`` when known (a vjp may need to know whether the operand is complex)."""

    __slots__ = ("shape", "strides", "dtype")

    def __init__(self, shape, strides=None, dtype=None):
        self.shape = shape
        self.strides = strides
        self.dtype = dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __repr__(self):
        return f"Meta(shape={self.shape})"


def meta(shape, strides=None, dtype=None):
    """``Meta(shape, strides, dtype)`` without the call overhead (the eager runtime makes
    one per operand)."""
    m = _new(Meta)
    m.shape = shape
    m.strides = strides
    m.dtype = dtype
    return m


_new = object.__new__


class Primitive:
    """One entry of the rule table. See the module docstring for the parts."""

    __slots__ = ("name", "impl", "node", "dtypes", "differentiable", "view", "nout", "ufunc",
                 "inplace_impl", "cast", "number_edges", "argnames", "variadic", "params", "vjps",
                 "uses", "vjp_all_fn", "all_uses", "jvps", "jvp_all_fn", "linear", "diagonal",
                 "_diff_pos", "_diff_flags", "_plans", "node_classes", "node_cls", "saved_names",
                 "saved_view", "result_names", "saved_outputs", "complex", "scalar", "scalar_code",
                 "__weakref__")

    def __init__(self, impl, node=None, *, name=None, dtypes=PROMOTE, view=False, nout=1,
                 ufunc=None, linear=False, diagonal=False, cast=None, number_edges=True,
                 saved_names=None, saved_view=None, result_names=None, saved_outputs=None,
                 complex=False, scalar=False, scalar_code=None):
        self.name = name or impl.__name__.rstrip("_")
        self.impl = impl
        self.node = node
        self.dtypes = dtypes
        self.differentiable = False         # becomes True when a vjp is registered
        self.view = view
        self.nout = nout                    # number of outputs; None when it varies (split)
        self.ufunc = ufunc                  # NumPy/CuPy ufunc name: lets in-place ops write via out=
        self.inplace_impl = None            # optional writer(xp, dst, *operands, **params)
        self.linear = linear                # jvp = the primitive applied to the tangents
        self.diagonal = diagonal            # elementwise with a diagonal Jacobian: jvp = vjp
        self.cast = cast                    # operand positions promoted together (None: all)
        # Whether a Python-number operand in a differentiable position still gets a
        # (None, 0) entry in next_functions, as PyTorch's wrapped scalars do (x * 2).
        self.number_edges = number_edges
        self._diff_pos = {}                 # arity -> positions that take a gradient
        self._diff_flags = {}               # arity -> per position: takes a gradient?
        sig = inspect.signature(impl)
        ps = list(sig.parameters.values())[1:]  # drop xp
        self.argnames = tuple(p.name for p in ps if p.kind is p.POSITIONAL_OR_KEYWORD)
        self.variadic = next((p.name for p in ps if p.kind is p.VAR_POSITIONAL), None)
        self.params = tuple(p.name for p in ps if p.kind is p.KEYWORD_ONLY)
        self.vjps = [None] * len(self.argnames)
        self.uses = [frozenset()] * len(self.argnames)
        self.vjp_all_fn = None
        self.all_uses = frozenset()
        self.jvps = [None] * len(self.argnames)
        self.jvp_all_fn = None
        self._plans = {}
        self.node_classes = {}              # filled by the eager runtime: node name -> class
        self.node_cls = None                # the eager runtime's node class when the name is fixed
        # PyTorch's names for the operands, as in grad_fn._saved_<name> (default: self, other)
        self.saved_names = saved_names
        # params -> {PyTorch's name: value} for saved attributes PyTorch derives from them
        # (a select's dim and index, a split's split_size...); and names for saved outputs
        self.saved_view = saved_view
        self.result_names = result_names
        # For a multi-output primitive whose vjps read ``out``: the outputs they read (None:
        # all). The others are neither kept nor version-checked, as in PyTorch (batch norm
        # saves its mean and invstd, not its output, so ``out += x`` after it is allowed).
        self.saved_outputs = saved_outputs
        # Whether the vjps and jvps hold for complex operands and results (JAX's convention,
        # see the module docstring); differentiating complex values through any other
        # rule is refused.
        self.complex = complex
        # Its kernel is its operator or ufunc, element by element (see the module docstring).
        self.scalar = scalar
        # Or the expression its kernel computes on one element, for fused CPU kernels (see
        # the module docstring).
        self.scalar_code = scalar_code
        if self.name in TABLE:
            raise ValueError(f"primitive {self.name!r} is already in the rule table")
        TABLE[self.name] = self

    def __repr__(self):
        return f"<primitive {self.name}>"

    # -- declaring derivatives ------------------------------------------------------------
    def _index(self, argname):
        try:
            return self.argnames.index(argname)
        except ValueError:
            raise ValueError(f"{self.name} has no positional argument {argname!r}; "
                             f"its arguments are {self.argnames}") from None

    def _uses(self, uses):
        names = uses.split() if isinstance(uses, str) else tuple(uses)
        known = set(self.argnames) | {OUT} | ({self.variadic} if self.variadic else set())
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(f"{self.name}: 'uses' names unknown values {unknown}")
        return frozenset(names)

    def vjp(self, wrt, uses=()):
        """Decorator: the vjp for positional argument ``wrt``; ``uses`` names the argument
        values (and ``out``) it reads, which are the ones saved for backward."""
        i = self._index(wrt)

        def register(fn):
            self.vjps[i] = fn
            self.uses[i] = self._uses(uses)
            self._derivatives_changed()
            return fn
        return register

    def vjp_all(self, uses=()):
        """Decorator: one vjp returning a tuple with a gradient for every positional operand
        (None where there is none); used by variadic primitives such as ``cat``."""
        def register(fn):
            self.vjp_all_fn = fn
            self.all_uses = self._uses(uses)
            self._derivatives_changed()
            return fn
        return register

    def _derivatives_changed(self):
        self.differentiable = True
        self._plans.clear()
        self._diff_pos.clear()
        self._diff_flags.clear()

    def jvp(self, wrt):
        """Decorator: the jvp contribution of positional argument ``wrt`` (linear in ``t``)."""
        i = self._index(wrt)

        def register(fn):
            self.jvps[i] = fn
            return fn
        return register

    def inplace(self, fn):
        """Decorator: write this primitive's result straight into its first operand's
        storage (``fn(xp, dst, *other_operands, **params)``), for in-place methods."""
        self.inplace_impl = fn
        return fn

    def jvp_all(self, fn):
        """Decorator: one jvp taking a tuple of tangents (zeros where absent)."""
        self.jvp_all_fn = fn
        return fn

    # -- what the runtimes ask -----------------------------------------------------------
    def is_diff_arg(self, i):
        """Whether positional operand ``i`` can receive a gradient."""
        if self.vjp_all_fn is not None:
            return True
        return i < len(self.vjps) and self.vjps[i] is not None

    def diff_positions(self, nargs):
        """The operand positions (of ``nargs``) that can receive a gradient, in order."""
        pos = self._diff_pos.get(nargs)
        if pos is None:
            pos = self._diff_pos[nargs] = tuple(i for i in range(nargs) if self.is_diff_arg(i))
        return pos

    def diff_flags(self, nargs):
        """Per operand position: whether it can receive a gradient (cached per arity)."""
        flags = self._diff_flags.get(nargs)
        if flags is None:
            flags = self._diff_flags[nargs] = tuple(self.is_diff_arg(i) for i in range(nargs))
        return flags

    def save_plan(self, mask, nargs):
        """For the operands flagged in bit-mask ``mask`` (those needing a gradient): the
        positional indices whose values must be saved, and whether ``out`` must be. Cached
        under ``nargs | mask << 16`` (unambiguous for any arity below 65536)."""
        key = nargs | mask << 16
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._make_plan(mask, nargs)
        return plan

    def _make_plan(self, mask, nargs):
        names = set()
        if self.vjp_all_fn is not None:
            names = set(self.all_uses)
        else:
            for i in range(min(nargs, len(self.vjps))):
                if mask >> i & 1:
                    names |= self.uses[i]
        idx = []
        for i in range(nargs):
            name = self.argnames[i] if i < len(self.argnames) else self.variadic
            if name in names:
                idx.append(i)
        return tuple(idx), OUT in names

    def node_name(self, args, params):
        node = self.node
        if node is None:
            return "".join(p.capitalize() for p in self.name.split("_")) + "Backward0"
        return node if isinstance(node, str) else node(args, params)

    def apply_jvp(self, tangents, out, args, params):
        """Output tangent(s) for input tangents (``None`` where an input has none)."""
        if self.jvp_all_fn is not None or (self.linear and not any(self.jvps)):
            full = tuple(_zeros_like_tangent(a) if t is None and self.is_diff_arg(i)
                         else t for i, (t, a) in enumerate(zip(tangents, args)))
            if self.jvp_all_fn is not None:
                return self.jvp_all_fn(full, out, *args, **params)
            return self(*[t if self.is_diff_arg(i) else a for i, (t, a) in enumerate(zip(full, args))],
                        **params)
        total = None
        for i, t in enumerate(tangents):
            if t is None:
                continue
            fn = self.jvps[i] if i < len(self.jvps) else None
            if fn is None and self.diagonal:
                fn = self.vjps[i]
            if fn is None:
                raise NotImplementedError(f"{self.name} has no jvp for argument {i}")
            contrib = fn(t, out, *args, **params)
            total = contrib if total is None else _add_tangents(total, contrib)
        return total

    # -- calling -------------------------------------------------------------------------
    def __call__(self, *args, **params):
        handlers = _HANDLERS
        for a in args:
            tp = type(a)
            h = handlers[tp] if tp in handlers else _handler_for(tp)
            if h is not None:
                if OVERRIDING[0]:
                    for cls, top in _OVERRIDING:
                        if h is not top and any(isinstance(b, cls) for b in args):
                            return top(self, args, params)
                return h(self, args, params)
        for a in args:
            if a is not None and type(a) not in _PY_NUMBERS:  # NumPy scalars count as arrays
                return self.impl(namespace_of(a), *args, **params)
        # Only Python numbers: compute on the CPU and answer with a Python number, which
        # (unlike a NumPy scalar) adopts the dtype of the arrays it later meets.
        from ..backend import cpu
        out = self.impl(cpu, *args, **params)
        return out.item() if getattr(out, "ndim", None) == 0 else out


_PY_NUMBERS = (int, float, complex, bool)


def _add_tangents(a, b):
    if isinstance(a, tuple):
        return tuple(x + y for x, y in zip(a, b))
    return a + b


def _zeros_like_tangent(a):
    from .broadcast import zeros_like
    return zeros_like(a)


def primitive(node=None, **options):
    """Decorator turning a kernel ``impl(xp, *operands, **params)`` into a table entry."""
    def make(impl):
        return Primitive(impl, node, **options)
    return make
