"""Fusion of compiled tapes on the CPU: runs of scalar lines become one Numba kernel.

A run of consecutive elementwise eqns of one result shape -- a whole straight-line tape,
forward and backward, when all its ops are scalar -- is written as one kernel: one loop
over the elements whose body is the run's lines on scalars, as the shared emitter writes
them (``t2 = np.tanh(t1)``), so intermediate values never become arrays. The tape's
source shows the kernel (decorated ``@cpu_kernel``) above the function that calls it.
In the kernel module ``np`` is :mod:`tracegrad.transform.kernel_numpy` (NumPy with a
``tanh`` LLVM vectorizes); Python compiles the kernel's def in the tape's source as a
blank stub of the same lines (:meth:`tracegrad.transform.jit.Kernels.stubbed`).

A line is fused only where the scalar code computes what NumPy does: float32/float64
operands and result (NumPy's promotion of float operands is Numba's), each array operand
of the result's shape or a single element (broadcasting by repetition), Python-number
operands cast to the line's dtype as NumPy 2 treats them (``x32 * 1.01`` stays float32),
and division by zero giving inf/nan (``error_model="numpy"``). Other lines run unfused.
"""
from ...backend import cpu as np  # dtypes (host metadata)

from ...rules.core import Primitive
from ..emit import _BINARY, elementwise, prim_expr
from .. import jit
from .tape import Var

__all__ = ["cpu_fusable", "KernelWriter"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def cpu_fusable(e):
    """The eqn's result shape where the CPU kernel can compute it exactly, else None.

    Float operands and results throughout, but for a comparison's boolean result and the
    boolean operands of a rule that writes its own scalar code (``where``'s condition):
    the kernel's ``x <= 0`` is a scalar bool, kept in a bool array only where it is a
    result or read by a later group of lines."""
    op = e.op
    if not isinstance(op, Primitive) or e.multi or len(e.outs) != 1 or op.name in jit.NOT_SCALAR:
        return None
    out = e.outs[0]
    shape, dtype = out.shape, out.npdtype
    coded = op.scalar_code is not None and not e.params
    compares = op.name in _COMPARISONS
    if not shape or not (dtype in _FLOATS or (compares and dtype == _BOOL)):
        return None  # (0-d values may be NumPy scalars, not arrays)
    metas, dtypes = [], []
    for a in e.ins:
        if isinstance(a, Var):
            if not (a.npdtype in _FLOATS or (coded and a.npdtype == _BOOL)) or not a.shape or not (
                    a.shape == shape or _one_element(a.shape, shape)):
                return None
            metas.append((a.shape, a.npdtype))
            dtypes.append(a.npdtype)
        elif type(a) in (int, float):
            metas.append(None)
        else:
            return None
    if not dtypes:
        return None
    if coded:
        return shape if _scalar_code(e, [str(i) for i in range(len(e.ins))]) is not None else None
    if (np.result_type(*dtypes) != (operand_dtype(e) if compares else dtype)
            or not elementwise(op, e.params, metas)):
        return None
    return shape


_BOOL = np.dtype(bool)
_COMPARISONS = frozenset({"gt", "ge", "lt", "le", "eq", "ne"})


def _scalar_code(e, args):
    """The expression a rule with ``scalar_code`` writes for eqn ``e`` (None: it cannot)."""
    dtypes = [a.npdtype if isinstance(a, Var) else None for a in e.ins]
    numbers = [None if isinstance(a, Var) else a for a in e.ins]
    return e.op.scalar_code(args, dtypes, e.outs[0].npdtype, numbers)


def operand_dtype(e):
    """The dtype the eqn computes in: its result's, or -- for a comparison, whose result is
    boolean -- its float operands' (a Python number is read as that dtype: NumPy 2)."""
    if e.op.name in _COMPARISONS:
        return np.result_type(*(a.npdtype for a in e.in_vars()))
    return e.outs[0].npdtype


def exact_line(e):
    """Whether the kernel computes the (fusable) eqn bit for bit as NumPy does: an operator
    (IEEE arithmetic; Numba contracts nothing into FMAs) or a rule's scalar code (a select),
    not a function call (the C library's exp, tracegrad's tanh: a few ulps off NumPy's)."""
    return e.op.name in _BINARY or e.op.name == "neg" or e.op.scalar_code is not None


def single_line_kernel(e):
    """Whether a fusable eqn alone is worth a kernel: a rule with scalar code (relu,
    where), which NumPy computes in several passes or a slow ufunc (maximum's NaN checks:
    4x the kernel's time on 2**17 floats)."""
    return e.op.scalar_code is not None


def kernel_dtype(dtype):
    """The dtype's name in kernel code (Numba knows NumPy's bool as ``np.bool_``)."""
    return "bool_" if dtype == _BOOL else dtype.name


def _one_element(shape, full):
    n = 1
    for s in shape:
        n *= s
    return n == 1 and len(shape) <= len(full)


def scalar_literal(value, dtype):
    """A Python number as NumPy 2 reads it next to an array of ``dtype``: of that dtype
    (float32 or float64)."""
    value = float(value)
    if value != value:
        text = "np.nan"
    elif value in (float("inf"), float("-inf")):
        text = "np.inf" if value > 0 else "-np.inf"
    else:
        text = repr(value)
    # (a float64 line needs no cast: Numba reads a float literal as float64, and it
    # compiles a bare literal faster than a call -- ~10% of a 140-line kernel's time)
    return text if dtype == _FLOATS[1] else f"np.{dtype.name}({text})"


class KernelWriter:
    """Writes one kernel: its parameters (the arrays it reads, in call order), its lines
    (``(target, dtype, operands, rhs, call)``: ``rhs(texts, scalar=True)`` writes the
    line's expression from its operands' texts, on scalars or -- ``scalar=False``, the
    unfused fallback -- on whole arrays; ``call``: it calls a function such as
    ``np.tanh``) and the results it hands back.

    A small array is one loop over its elements running all the lines on scalars. A large
    one is taken in blocks of :data:`BLOCK` elements, and the lines in groups that end at
    each function call, one loop per group: a value used by a later group is kept in a
    scratch row of the block (rows are reused once a value is dead), the others are
    scalars. One loop over a long chain of dependent ``tanh`` calls per element would
    wait on each call's latency (twice NumPy's time on 2**20 floats); grouped, consecutive
    elements' calls overlap, and a block's values stay in the cache."""

    def __init__(self, name, used, size):
        self.name, self.used, self.size = name, used, size
        self.params = []       # (array parameter, its flat view, the value it names)
        self.broadcast = set() # values of one element (read once, before the loop)
        self.lines = []

    def fresh(self, base):
        from ..emit import fresh_name
        return fresh_name(self.used, base, "_")

    def add_param(self, value, full):
        array, flat = self.fresh(f"{value}_in"), self.fresh(f"{value}_")
        self.params.append((array, flat, value))
        if not full:
            self.broadcast.add(value)

    def groups(self):
        """``[(start, stop)]`` over the lines: one loop each."""
        if self.size <= BLOCK:
            return [(0, len(self.lines))]
        groups, start = [], 0
        for k, line in enumerate(self.lines):
            if line[4] or k == len(self.lines) - 1:
                groups.append((start, k + 1))
                start = k + 1
        return groups

    def rows(self, groups, results):
        """The scratch row of each value a later group reads (results are written in
        place instead): dtype -> rows needed, and value -> (dtype, row)."""
        of_line = [g for g, (a, b) in enumerate(groups) for _ in range(a, b)]
        group = {line[0]: of_line[k] for k, line in enumerate(self.lines)}
        last, escapes = {}, set()
        for k, (_, _, operands, _, _) in enumerate(self.lines):
            for o in operands:
                last[o] = k
                if o in group and group[o] != of_line[k]:
                    escapes.add(o)
        free, count, where = {}, {}, {}
        for k, (target, dtype, operands, _, _) in enumerate(self.lines):
            if target in escapes and target not in results:
                name = kernel_dtype(dtype)
                pool = free.setdefault(name, [])
                row = pool.pop() if pool else count.get(name, 0)
                count[name] = max(count.get(name, 0), row + 1)
                where[target] = (name, row)
            for o in dict.fromkeys(operands):
                if last.get(o) == k and o in where:
                    free[where[o][0]].append(where[o][1])
        return count, where

    def source(self, results, into=False):
        """The kernel module's source (the file Numba compiles and caches), the def alone
        (what the tape's source shows), and the lines on whole arrays (unfused: what runs
        should Numba fail): :meth:`kernel` and :meth:`unfused`. ``into``: the kernel takes
        its results as its last parameters (C-contiguous arrays of the result shape, made by
        the caller) and returns nothing (NumPy's allocator and no boxing: see
        :mod:`tracegrad.transform.ast.fused_runs`)."""
        return (*self.kernel(results, into), self.unfused(results))

    def kernel(self, results, into=False):
        """The kernel module's source and the def alone. A large array's kernel has a
        twin running its blocks on several threads (``numba.prange``), named with
        ``jit.PARALLEL_SUFFIX``: which of the two runs is decided at each call (see
        :class:`tracegrad.transform.jit.Threaded`)."""
        text = self._def(*self._names(results), into=into)
        options = 'cache=True, error_model="numpy", nogil=True'
        module = f"import numba\n{jit.KERNEL_NUMPY}\n\n\n@numba.njit({options})\n{text}\n"
        if self.size >= jit.PARALLEL_MIN:
            head, loop = text.split("\n", 1)  # (the twin's name, and its blocks in prange)
            twin = head.replace(f"def {self.name}(", f"def {self.name}{jit.PARALLEL_SUFFIX}(", 1) \
                + "\n" + loop.replace(" in range((", " in numba.prange((", 1)
            module += f"\n\n@numba.njit({options}, parallel=True)\n{twin}\n"
        return module, text

    def unfused(self, results):
        """The function running the kernel's lines on whole arrays."""
        unfused = [f"def {self.name}({', '.join(a for a, _, _ in self.params)}):"]
        unfused += [f"    {v} = {a}" for a, _, v in self.params]
        unfused += [f"    {target} = {rhs(operands, scalar=False)}" for target, _, operands, rhs, _ in self.lines]
        unfused.append(f"    return {', '.join(r for r, _ in results)}")
        return "\n".join(unfused) + "\n"

    def _names(self, results):
        """The kernel's local names: loop variables, outputs, scratch rows and where each
        value lives (the same in both twins)."""
        loop = tuple(self.fresh(x) for x in ("n", "j", "block", "b0", "m"))
        outs = {r: (self.fresh(f"{r}_out"), dt) for r, dt in results}
        groups = self.groups()
        count, where = self.rows(groups, outs)
        scratch = {dt: self.fresh(f"scratch_{dt}") for dt in count}
        return loop, outs, groups, count, where, scratch

    def _def(self, loop, outs, groups, count, where, scratch, into=False):
        """The kernel function: its blocks in a ``range`` loop, or for an array of at most
        one block (:data:`BLOCK` elements), one loop over the elements."""
        n, j, blk, b0, m = loop
        full = [(a, f, v) for a, f, v in self.params if v not in self.broadcast]
        arrays = set(where) | set(outs) | {v for _, _, v in full}
        given = {o: self.fresh(f"{o}_given") for o, _ in outs.values()} if into else {}
        one_block = self.size <= BLOCK
        body = [f"def {self.name}({', '.join([a for a, _, _ in self.params] + list(given.values()))}):"]
        for a, f, v in self.params:  # (one block: the lines index the flat arrays themselves)
            body.append(f"    {v if one_block else f} = np.flat_view({a})" if v not in self.broadcast
                        else f"    {v} = np.flat_view({a})[0]")
        body.append(f"    {n} = {full[0][2] if one_block else full[0][1]}.size")
        body += [f"    {o} = np.flat_view({given[o]})" if into else f"    {o} = np.empty({n}, np.{kernel_dtype(dt)})"
                 for o, dt in outs.values()]
        if one_block:
            body += [f"    {target} = {outs[target][0]}" for target, _, _, _, _ in self.lines if target in outs]
            body.append(f"    for {j} in range({n}):")
            indent = "        "
        else:
            body.append(f"    for {blk} in range(({n} + {BLOCK - 1}) // {BLOCK}):")
            body.append(f"        {b0} = {blk} * {BLOCK}")
            body.append(f"        {m} = min({n} - {b0}, {BLOCK})")
            body += [f"        {row} = np.empty(({count[dt]}, {m}), np.{dt})" for dt, row in scratch.items()]
            body += [f"        {v} = {f}[{b0}:{b0} + {m}]" for _, f, v in full]
            indent = "            "
        for start, stop in groups:
            if not one_block:
                for target, _, _, _, _ in self.lines[start:stop]:
                    if target in outs:
                        body.append(f"        {target} = {outs[target][0]}[{b0}:{b0} + {m}]")
                    elif target in where:
                        dt, row = where[target]
                        body.append(f"        {target} = {scratch[dt]}[{row}]")
                body.append(f"        for {j} in range({m}):")
            for target, _, operands, rhs, _ in self.lines[start:stop]:
                texts = [f"{o}[{j}]" if o in arrays else o for o in operands]
                lhs = f"{target}[{j}]" if target in arrays else target
                body.append(f"{indent}{lhs} = {rhs(texts)}")
        shape = f"{full[0][0]}.shape"
        if not into:
            body.append(f"    return {', '.join(f'{o}.reshape({shape})' for o, _ in outs.values())}")
        return "\n".join(body)


BLOCK = 256  # elements per block (a scratch row of float64 is 2 KiB)


def write_run(writer, start, stop):
    """Emit the kernel for the tape writer's eqns ``[start, stop)`` (all :func:`cpu_fusable`,
    one result shape) and the line calling it; return the outside Vars it reads."""
    m, eqns = writer.m, writer.tape.eqns[start:stop]
    made = {o.id for e in eqns for o in e.outs}
    outer = list(dict.fromkeys(a for e in eqns for a in e.in_vars() if a.id not in made))
    shape = eqns[0].outs[0].shape
    size = 1
    for s in shape:
        size *= s
    helper = m.local(f"{writer.name}_fused{len(m.prelude)}")
    k = KernelWriter(helper, m.used, size)
    for a in outer:
        k.add_param(writer.ref(a), a.shape == shape)
    for e in eqns:
        k.lines.append(_line(m, writer, e))
    results = [(writer.names[o.id], o.npdtype) for e in eqns for o in e.outs
               if o.id in writer.out_ids or writer.last.get(o.id, -1) >= stop]
    module, text = k.kernel(results)
    kernels = m.env.get("cpu_kernel")
    if kernels is None:
        kernels = m.env["cpu_kernel"] = jit.Kernels(m.env)
        m.used.add("cpu_kernel")
    kernels.sources[helper] = module, lambda: k.unfused(results)  # (written if needed)
    kernels.defs.append(text)
    m.prelude.append(f"# {len(eqns)} lines of {writer.name} as one Numba kernel (cached in "
                     f"{jit.cache_dir()})\n@cpu_kernel\n{text}")
    names = [r for r, _ in results]
    m.emit(f"{', '.join(names)} = {helper}({', '.join(writer.ref(a) for a in outer)})")
    writer.live.update(dict.fromkeys(names))
    return outer


def _line(m, writer, e):
    """``(target, dtype, operands, rhs)`` for eqn ``e`` (see :class:`KernelWriter`): its
    expression as the shared emitter writes it, Python numbers cast to the line's dtype."""
    dtype, literal_dtype = e.outs[0].npdtype, operand_dtype(e)
    operands = [writer.ref(a) for a in e.in_vars()]
    metas = [(a.shape, a.npdtype) if isinstance(a, Var) else None for a in e.ins]

    def rhs(texts, scalar=True):
        it = iter(texts)
        args = [next(it) if isinstance(a, Var) else scalar_literal(a, literal_dtype) for a in e.ins]
        if e.op.scalar_code is None:
            return prim_expr(m, e.op, args, e.params, metas, "np")
        if scalar:
            return _scalar_code(e, args)
        return f"rules[{e.op.name!r}].impl(np, {', '.join(args)})"  # (on whole arrays)
    call = e.op.name not in _BINARY and e.op.name != "neg" and e.op.scalar_code is None
    return writer.fresh(e.outs[0]), dtype, operands, rhs, call
