"""The front door: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``, ``jacobian``, ``hessian``.

Each transform is a *builder* run on the recording tape (see :mod:`.staged`): it marks
the arguments it differentiates with fresh aliases, calls the user's function (whose
primitives are recorded), then appends a reverse or forward sweep. The same builder
serves a top-level call (traced, compiled, cached) and a nested one (``grad(grad(f))``:
the inner builder records into the outer tape, so the outer sweep differentiates the
inner gradient computation).
"""
import weakref

from ..backend import cpu as np  # dtypes and shapes (host metadata)
from ..backend import namespace_of

from .checks import (argnum_positions, check_argnums, check_input, check_output, check_outputs,
                     positional_arguments, split_aux)
from .tape.aliasing import current_tree
from .tape.numpy_map.construct import recording_form
from .tape.pruning import Pruner
from .tape.staged import Staged
from .tape.sweeps import alias, forward, reverse
from .tape.tape import Var, shape_of
from .tape.tracing import active_tape
from .tree import flatten, tree_map, unflatten

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "jacobian", "hessian", "vjp_at", "jvp_at"]

_MODES = ("auto", "tape", "ast")


def _check_mode(mode):
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, not {mode!r}")
    return mode


def _by_mode(f, mode, make_tape, name, argnums, has_aux=False, with_value=False, holomorphic=False):
    """The transformed function for ``mode``: the AST path's, the tape's, or (``auto``)
    the AST path's where it can transform ``f``, else the tape's."""
    if mode == "tape":
        return make_tape()
    from .ast.front import AstFunction, AutoFunction

    def make_ast():
        return AstFunction(f, argnums, name, has_aux=has_aux, with_value=with_value, holomorphic=holomorphic)
    if mode == "ast":
        return make_ast()
    return AutoFunction(f, make_ast, make_tape)


def _mark(tape, args, nums, fname, holomorphic=False):
    """Replace the differentiated arguments by fresh aliases; return the aliases."""
    args = list(args)
    wrt = []
    for n in nums:
        leaves, spec = flatten(args[n])
        marked = []
        for x in leaves:
            check_input(x, n, fname, holomorphic)
            marked.append(mark_leaf(tape, x))
        wrt.extend(marked)
        args[n] = unflatten(spec, marked)
    return args, wrt


def mark_leaf(tape, x):
    """A fresh alias of leaf ``x`` (a tracer, an array or a Python float -- a float64
    constant, as at the top level), marked as differentiated; it stands for an immutable
    number where ``x`` does (a Python float: ``s += 1`` rebinds it)."""
    number = type(x) in (float, complex) or (isinstance(x, Var) and x.id in tape.immutable)
    python = type(x) is float or (isinstance(x, Var) and x.id in tape.python_floats)
    if type(x) in (float, complex):
        x = np.asarray(x, dtype=np.float64 if type(x) is float else np.complex128)
    v = alias(tape, x)
    tape.marked.add(v.id)
    tape.argument_ids.add(v.id)
    if number:
        tape.immutable.add(v.id)
    if python:
        tape.python_floats.add(v.id)
    return v


def _scalar_output(out, fname, has_aux, holomorphic=False):
    out, aux = split_aux(out, fname) if has_aux else (out, None)
    check_output(out, fname, holomorphic)
    return out, aux


def _xp(v):
    return namespace_of(v.value) if isinstance(v, Var) else np


def _zeros(v):
    return _xp(v).zeros(v.shape, dtype=v.npdtype)


def _with_phase(tape, phase, fn, *args):
    tape.freeze_written_captures()  # (what the function wrote into, its sweep reads as it read it)
    prev = tape.phase
    tape.phase = phase
    try:
        return fn(*args)
    finally:
        tape.phase = prev


def _regroup(values, args, nums, single):
    """Per differentiated argument, its values in the argument's own structure."""
    it = iter(values)
    groups = []
    for n in nums:
        leaves, spec = flatten(args[n])
        groups.append(unflatten(spec, [next(it) for _ in leaves]))
    return groups[0] if single else tuple(groups)


def _aux_kinds(aux, kinds):
    k = "tensor" if "tensor" in flatten(kinds)[0] else "array"
    return unflatten(flatten(aux)[1], [k if isinstance(x, Var) else None for x in flatten(aux)[0]])


def _by_position(f, args, kwargs, kinds):
    """Keyword arguments moved to their parameters' positions (see
    :func:`.checks.positional_arguments`), with the kinds the results are handed back in
    moved alike (a default filled in is handed back in its own kind)."""
    if not kwargs:
        return args, kwargs, kinds
    moved, rest = positional_arguments(f, args, kwargs)
    if kinds is not None and len(moved) > len(args):
        from .tape.staged import kind_of
        from .tape.tracing import positional_params
        pos_kinds, kw_kinds = kinds[0], dict(kinds[1])
        names = positional_params(f)[len(args):len(moved)]
        extra = [kw_kinds.pop(n) if n in kw_kinds else tree_map(kind_of, v)
                 for n, v in zip(names, moved[len(args):])]
        kinds = (tuple(pos_kinds) + tuple(extra), kw_kinds)
    return moved, rest, kinds


def _reverse_only(tape, f, args, kwargs):
    """``f(*args, **kwargs)`` traced for reverse sweeps only: when this is the tape's own
    transform, values no vjp reads are dropped as soon as ``f`` lets go of them."""
    if tape.outermost():
        tape.pruner = Pruner(tape)
    try:
        return recording_form(f)(*args, **kwargs)
    finally:
        tape.pruner = None


def _value_and_grad_builder(f, argnums, has_aux, fname, holomorphic=False):
    def build(args, kwargs, kinds):
        tape = active_tape()
        args, kwargs, kinds = _by_position(f, args, kwargs, kinds)
        nums, single = argnum_positions(argnums, len(args), fname)
        marked, wrt = _mark(tape, args, nums, fname, holomorphic)
        start = len(tape.eqns)
        ids = [v.id for v in wrt]
        out, aux = _scalar_output(current_tree(_reverse_only(tape, f, marked, kwargs)), fname, has_aux,
                                  holomorphic)
        wrt = [tape.current(v, i) for v, i in zip(wrt, ids)]
        seed = Var(tape, _xp(out).ones(shape_of(out), dtype=_dtype(out)), "const")
        cts = _with_phase(tape, "g", reverse, tape.eqns[start:], wrt, [out], [seed])
        grads = [g if g is not None else Var(tape, _zeros(v), "const") for g, v in zip(cts, wrt)]
        grads = _regroup(grads, args, nums, single)
        gkinds = None if kinds is None else _regroup(
            [k for n in nums for k in flatten(kinds[0][n])[0]], args, nums, single)
        vkind = None if kinds is None else _value_kind(kinds, nums)
        return out, aux, grads, vkind, gkinds
    return build


def _value_kind(kinds, nums):
    """The kind (array, Tensor) the value comes back in: that of the first differentiated
    leaf, or of the first argument's leaf when those are empty containers (``()``, ``{}``)."""
    leaves = [k for n in nums for k in flatten(kinds[0][n])[0]] or flatten(kinds[0])[0]
    return leaves[0] if leaves else None


def _resolve(f, mode, make, argnums=0):
    """Support ``@grad``, ``@grad(...)`` and ``grad(f, ...)``."""
    _check_mode(mode)
    check_argnums(argnums)
    if f is None:
        return make
    return make(f)


def grad(f=None, argnums=0, mode="auto", has_aux=False, holomorphic=False):
    """The gradient of scalar-valued ``f`` with respect to argument(s) ``argnums``, as a
    function of the same arguments (with ``has_aux``: returns ``(gradient, aux)``).

    Complex numbers follow JAX's (and HIPS autograd's) convention: for a real ``f`` of
    ``z = x + iy`` the gradient is ``df/dx - i df/dy`` (PyTorch's eager ``backward()``
    gives its conjugate). ``holomorphic=True`` differentiates a complex-valued
    holomorphic ``f`` of complex inputs: the result is ``f'(z)``."""
    def make(f):
        fname = "grad"
        build_vg = _value_and_grad_builder(f, argnums, has_aux, fname, holomorphic)

        def build(args, kwargs, kinds):
            out, aux, grads, vkind, gkinds = build_vg(args, kwargs, kinds)
            if has_aux:
                return (grads, aux), (None if kinds is None else (gkinds, _aux_kinds(aux, kinds)))
            return grads, gkinds
        name = _grad_name(f, argnums)
        return _by_mode(f, mode, lambda: Staged(f, build, name, "tape", _grad_hints(f, argnums)),
                        name, argnums, has_aux, holomorphic=holomorphic)
    return _resolve(f, mode, make, argnums)


def value_and_grad(f=None, argnums=0, mode="auto", has_aux=False, holomorphic=False):
    """``(f(*args), grad(f)(*args))`` in one pass (with ``has_aux``: ``((value, aux), grad)``)."""
    def make(f):
        build_vg = _value_and_grad_builder(f, argnums, has_aux, "value_and_grad", holomorphic)

        def build(args, kwargs, kinds):
            out, aux, grads, vkind, gkinds = build_vg(args, kwargs, kinds)
            value = (out, aux) if has_aux else out
            if kinds is None:
                return (value, grads), None
            vk = (vkind, _aux_kinds(aux, kinds)) if has_aux else vkind
            return (value, grads), (vk, gkinds)
        name = _safe(f"{getattr(f, '__name__', 'f')}_value_and_grad")
        return _by_mode(f, mode, lambda: Staged(f, build, name), name, argnums, has_aux, with_value=True,
                        holomorphic=holomorphic)
    return _resolve(f, mode, make, argnums)


def _safe(name):
    name = name.replace("<lambda>", "f").replace("<", "").replace(">", "")
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "f"


def _gradient_names(f, argnums):
    """``dx``, ``dw``... for the differentiated parameters of ``f`` ([] where unknown)."""
    from .tape.tracing import param_names, positional_params
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    try:
        names = param_names(f, max(max(nums) + 1, len(positional_params(f))))
        return ["d" + names[n] for n in nums]
    except (ValueError, IndexError, TypeError):
        return []


def _grad_name(f, argnums):
    base = f"d{_safe(getattr(f, '__name__', 'f'))}"
    names = _gradient_names(f, argnums)
    return f"{base}_{'_'.join(names)}" if names else base


def _grad_hints(f, argnums):
    """Names for the generated code's results: the gradients' names, when there are as
    many results as differentiated parameters."""
    names = _gradient_names(f, argnums)
    return lambda n: names if len(names) == n else ()


def vjp(f, *primals, has_aux=False, mode="auto"):
    """``(f(*primals), f_vjp)``; ``f_vjp(cotangent)`` gives one cotangent per primal (each
    in its primal's structure: primals and outputs may be pytrees -- tuples, lists and
    dicts of arrays). ``mode="ast"`` runs an adjoint written from ``f``'s source
    (``"auto"``: where it can be written, else the tape)."""
    return vjp_at(f, primals, tuple(range(len(primals))), has_aux, mode)


def vjp_at(f, args, nums, has_aux=False, mode="auto"):
    """``vjp`` with respect to ``args[n]`` for ``n`` in ``nums`` only, the other arguments
    held fixed (as ``argnums`` does): what ``jacrev`` and ``elementwise_grad`` are made of."""
    _check_mode(mode)
    args, nums = tuple(args), tuple(nums)
    if mode != "tape" and not any(isinstance(x, dict) for x in args):
        from .ast.front import RETRY_ON_TAPE, ast_vjp
        try:
            return ast_vjp(f, args, has_aux, auto=mode == "auto", positions=nums)
        except RETRY_ON_TAPE as e:
            if mode == "ast" or not getattr(e, "before_run", True):
                raise

    from .traced_vjp import traced_vjp
    return traced_vjp(f, args, nums, has_aux)


def value_on_copies(f, args):
    """``f(*args)`` run on copies of the arrays in ``args``: a function that writes its
    arguments in place then leaves the caller's values -- the point its pullback
    differentiates at -- as they were (``x[0] = ...`` would otherwise move it)."""
    from ..runtime.tensor import Tensor

    def copied(x):
        if isinstance(x, Tensor):
            return x.clone()
        return x.copy() if hasattr(x, "copy") and hasattr(x, "shape") else x
    return f(*tree_map(copied, tuple(args)))


def _plain(fn):
    """A builder from a function already written for the recording tape; results come
    back in the kind of the first traced argument."""
    def build(args, kwargs, kinds):
        out = fn(*args, **kwargs)
        if kinds is None:
            return out, None
        first = next((k for k in flatten(kinds)[0] if k is not None), "array")
        k = "tensor" if first == "tensor" else "array"
        return out, unflatten(flatten(out)[1], [k if isinstance(x, Var) else None for x in flatten(out)[0]])
    return build


def jvp(f, primals, tangents, mode="auto"):
    """``(f(*primals), tangent of the output)`` for input ``tangents`` (forward mode);
    primals, tangents and outputs may be pytrees (tuples, lists and dicts of arrays).
    ``mode="ast"`` runs tangent code written from ``f``'s source (``"auto"``: where it
    can be written, else the tape)."""
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    return jvp_at(f, primals, tuple(range(len(primals))), tangents, mode)


def jvp_at(f, args, nums, tangents, mode="auto"):
    """``jvp`` with tangents for ``args[n]``, ``n`` in ``nums``, only: the other arguments
    are held fixed (as ``argnums`` does); what ``jacfwd`` and ``hvp`` are made of."""
    _check_mode(mode)
    args, nums, tangents = tuple(args), tuple(nums), tuple(tangents)
    _check_like(tuple(args[n] for n in nums), tangents, "jvp", "tangent", "primal")
    _check_tangent_kinds(tuple(args[n] for n in nums), tangents)
    if mode != "tape" and not any(isinstance(x, dict) for x in args):
        from .ast.front import RETRY_ON_TAPE, ast_jvp
        from .ast.support import zero_tangent
        full = [zero_tangent(a) for a in args]
        for n, tn in zip(nums, tangents):
            full[n] = tn
        try:
            return ast_jvp(f, args, tuple(full), auto=mode == "auto")
        except RETRY_ON_TAPE as e:
            if mode == "ast" or not getattr(e, "before_run", True):
                raise  # (a run-time refusal after the function changed its arguments)
    try:
        per = _jvp_cache.setdefault(f, {})
    except TypeError:  # (no weak references to NumPy's ufuncs and functions: they live forever)
        per = _jvp_cache_strong.setdefault(f, {})
    staged = per.get(nums)
    if staged is None:
        staged = per[nums] = Staged(f, _plain(lambda *a: _push(f, a, nums)),
                                    _safe(f"{getattr(f, '__name__', 'f')}_jvp"))
    return staged(*args, *tangents)


_jvp_cache = weakref.WeakKeyDictionary()  # f -> {nums: its staged jvp} (jvp has no decorator form)
_jvp_cache_strong = {}  # the same for functions that cannot be weakly referenced


def _value(x):
    from ..runtime.tensor import Tensor
    return x._data if isinstance(x, Tensor) else x


def _check_tangent_kinds(primals, tangents):
    """A complex tangent for a real primal would lose its imaginary part (as JAX, refused)."""
    for p, t in zip(flatten(primals)[0], flatten(tangents)[0]):
        pd, td = (np.dtype(_dtype(_value(x))) for x in (p, t))
        if td.kind == "c" and pd.kind != "c":
            raise TypeError(f"primal and tangent arguments to jvp do not match: a tangent of dtype {td.name} "
                            f"for a primal of dtype {pd.name} (a real primal takes real tangents)")


def _check_like(values, others, fname, what, of):
    """``others`` (tangents or cotangents) have the pytree structure of ``values`` (primals
    or outputs) and the same shapes leaf by leaf; their leaves, in order."""
    leaves, spec = flatten(values)
    oleaves, ospec = flatten(others)
    if len(leaves) != len(oleaves) or (spec != ospec and len(leaves) > 1):
        raise ValueError(f"{fname}: the {what}s have {len(oleaves)} leaves in the structure "
                         f"{_structure(others)}, but the {of}s have {len(leaves)} in {_structure(values)}")
    for v, o in zip(leaves, oleaves):
        vs, os_ = shape_of(_value(v)), shape_of(_value(o))
        if vs != os_:
            raise ValueError(f"{fname}: {what} of shape {os_} for a {of} of shape {vs}")
    return oleaves


def _structure(tree):
    """A pytree's shape of containers, for messages: ``tuple(array, list(array, array))``."""
    if isinstance(tree, dict):
        return "dict(" + ", ".join(f"{k}={_structure(v)}" for k, v in tree.items()) + ")"
    if isinstance(tree, (tuple, list)):
        return f"{type(tree).__name__}(" + ", ".join(_structure(v) for v in tree) + ")"
    return "leaf"


def check_cotangent(out, ct):
    """The leaves of cotangent ``ct``, checked against output ``out`` (see ``vjp``)."""
    return _check_like(out, ct, "vjp", "cotangent", "output")


def _push(f, args, nums):
    tape = active_tape()
    n = len(args) - len(nums)
    primals, tangents = args[:n], args[n:]
    marked, wrt = _mark(tape, primals, nums, "jvp")
    start = len(tape.eqns)
    ids = [v.id for v in wrt]
    out = current_tree(recording_form(f)(*marked))
    wrt = [tape.current(v, i) for v, i in zip(wrt, ids)]
    tleaves = [t for tan in tangents for t in flatten(tan)[0]]
    ts = _with_phase(tape, "j", forward, tape.eqns[start:], wrt, tleaves)
    outs, spec = flatten(out)
    touts = [ts.get(o.id) if isinstance(o, Var) else None for o in outs]
    touts = [t if t is not None else Var(tape, _xp(o).zeros(getattr(o, "shape", ()), _dtype(o)), "const")
             for t, o in zip(touts, outs)]
    return out, unflatten(spec, touts)


def _dtype(o):
    d = getattr(o, "npdtype", None) or getattr(o, "dtype", None)
    return d if d is not None else np.result_type(o)




def jacobian(f=None, argnums=0, mode="auto", has_aux=False, holomorphic=False):
    """The Jacobian of ``f`` with respect to argument(s) ``argnums`` (reverse mode, one
    sweep per output element): shape ``out.shape + arg.shape``. On the tape (``"tape"``,
    ``"auto"``) every sweep is one staged function; ``mode="ast"`` (and ``holomorphic``)
    pull back through :func:`~.derived.jacrev`."""
    def make(f):
        if mode == "ast" or holomorphic:
            from .derived import jacrev
            return jacrev(f, argnums, has_aux, holomorphic, mode)
        def build(args, kwargs, kinds):
            tape = active_tape()
            args, kwargs, kinds = _by_position(f, args, kwargs, kinds)
            nums, single = argnum_positions(argnums, len(args), "jacobian")
            marked, wrt = _mark(tape, args, nums, "jacobian")
            start = len(tape.eqns)
            ids = [v.id for v in wrt]
            out = current_tree(_reverse_only(tape, f, marked, kwargs))
            wrt = [tape.current(v, i) for v, i in zip(wrt, ids)]
            if has_aux:
                out, aux = out
            check_outputs(out, "jacobian")
            eqns = tape.eqns[start:]
            outs, ospec = flatten(out)  # (JAX's layout: the output's structure outside, then
            result = unflatten(ospec, [  # the arguments', then out.shape + arg.shape)
                _regroup(_with_phase(tape, "g", _jacobian_rows, eqns, wrt, o), args, nums, single)
                for o in outs])
            if kinds is None:
                return ((result, aux) if has_aux else result), None
            k = "tensor" if "tensor" in flatten(kinds)[0] else "array"
            rk = unflatten(flatten(result)[1], [k] * len(flatten(result)[0]))
            return ((result, aux), (rk, _aux_kinds(aux, kinds))) if has_aux else (result, rk)
        return Staged(f, build, _safe(f"{getattr(f, '__name__', 'f')}_jacobian"))
    return _resolve(f, mode, make, argnums)


def _jacobian_rows(eqns, wrt, out):
    from .tape.numpy_map import P
    oshape = tuple(getattr(out, "shape", ()))
    n = int(np.prod(oshape))
    dtype = _dtype(out)
    rows = [[] for _ in wrt]
    tape = active_tape()
    for k in range(n):
        seed = _xp(out).zeros(oshape, dtype=dtype)
        seed.reshape(-1)[k] = 1
        cts = reverse(eqns, wrt, [out], [Var(tape, seed, "const")])
        for r, g, v in zip(rows, cts, wrt):
            r.append(g if g is not None else Var(tape, _zeros(v), "const"))
    jac = []
    for r, v in zip(rows, wrt):
        if n == 0:
            jac.append(Var(tape, _xp(v).zeros(oshape + v.shape, dtype=v.npdtype), "const"))
            continue
        stacked = P.stack(*r, dim=0) if len(r) > 1 else P.unsqueeze(r[0], dim=0)
        jac.append(P.reshape(stacked, shape=oshape + v.shape))
    return jac


def hessian(f=None, argnums=0, mode="auto", holomorphic=False):
    """The Hessian of scalar-valued ``f``: ``jacobian(grad(f))``."""
    def make(f):
        return jacobian(grad(f, argnums=argnums, mode=mode, holomorphic=holomorphic), argnums=argnums,
                        mode=mode, holomorphic=holomorphic)
    return _resolve(f, mode, make, argnums)
