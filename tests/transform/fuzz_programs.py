"""Hypothesis strategies that write small random NumPy programs as Python *source text*.

A drawn :class:`Program` is the source of a module defining ``f(x, y)`` (sometimes
``f(x, y, k)`` with a Python int ``k``) and perhaps helper functions it calls, plus the
inputs to call it with and what every differentiation mode must do with it: give the
gradient, or refuse with a clear error (``expect``).

The generator keeps the programs meaningful for finite differences: each candidate
statement is executed on the real inputs while the program is being written (plain
NumPy, the ground truth), and is dropped if it fails or makes values non-finite or large.
Logs and square roots only see positive expressions (``np.log(e * e + 1.0)``), divisions
divide by ``e * e + 1.0``. Shapes are whatever NumPy says they are at that point, so the
generator needs no shape algebra of its own.

Besides the rule-table ops and control flow, the generator writes the known hazard
classes (aliasing, ``out=``, in-place methods, ``np.copyto``, ``np.add.at``, ``float()``
of a traced value...), programs of complex inputs (differentiated in JAX's convention), and
programs that every mode must refuse (integer and bool inputs; non-scalar, complex and
string outputs).
"""
import copy
import dataclasses
import math
import warnings

import numpy as np
from hypothesis import reject
from hypothesis import strategies as st

FLOAT_FMT = "{:.3g}"

# Features after which the eager (PyTorch-like) path is *expected* to lose the gradient,
# as PyTorch does: a traced value turned into a Python float.
EAGER_DETACHING = {"float", "math", "item"}


@dataclasses.dataclass
class Program:
    source: str
    args: tuple                      # the inputs, in order
    argnums: object                  # int or tuple: the arguments differentiated
    features: set                    # construct names used (for notes and filtering)
    expect: str = "grad"             # "grad" | "bad_input" | "bad_output"
    fname: str = "f"

    def describe(self):
        lines = ["---- program ----", self.source, "---- inputs ----"]
        for i, a in enumerate(self.args):
            lines.append(f"arg{i} = {_literal(a)}")
        lines.append(f"argnums = {self.argnums!r}; expect = {self.expect}; "
                     f"features = {sorted(self.features)}")
        return "\n".join(lines)

    @property
    def float_argnums(self):
        return (self.argnums,) if isinstance(self.argnums, int) else tuple(self.argnums)


def _literal(a):
    if isinstance(a, np.ndarray):
        with np.printoptions(precision=17, floatmode="unique", threshold=10_000):
            return f"np.array({a.tolist()!r}, dtype=np.{a.dtype.name}).reshape({a.shape!r})"
    return repr(a)


def _fmt(c):
    return FLOAT_FMT.format(c) if abs(c) >= 1e-3 else "0.0"


# ---------------------------------------------------------------------------------
# the writer


class _Reject(Exception):
    pass


class _Writer:
    """Writes statements one at a time, executing each on a copy of the live values."""

    MAX_ABS = 1e3

    def __init__(self, draw, env, module_ns, features, prefix="v", indent="    "):
        self.draw = draw
        self.env = env                  # name -> live value (arrays, floats, ints, lists)
        self.ns = module_ns             # the module's globals (np, math, helpers)
        self.features = features
        self.lines = []
        self.prefix = prefix
        self.indent = indent
        self.counter = 0
        self.helpers = []               # helper source blocks (module level)
        self.passed = []                # helpers f takes as default parameter values

    # -- names and values -------------------------------------------------------
    def fresh(self, stem=None):
        self.counter += 1
        return f"{stem or self.prefix}{self.counter}"

    def arrays(self, min_ndim=0, float_only=True):
        out = []
        for k, v in self.env.items():
            if isinstance(v, np.ndarray) and v.ndim >= min_ndim and (not float_only or v.dtype.kind == "f"):
                out.append(k)
            elif min_ndim == 0 and isinstance(v, float):
                out.append(k)
        return sorted(out)

    def pick(self, names):
        return self.draw(st.sampled_from(names))

    def _eval(self, code, env=None):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return eval(code, self.ns, dict(self.env if env is None else env))

    def _ok_value(self, v):
        if isinstance(v, (float, int, np.floating)) and not isinstance(v, bool):
            return math.isfinite(v) and abs(v) < self.MAX_ABS
        if isinstance(v, np.ndarray):
            return v.dtype.kind in "fb" and bool(np.all(np.isfinite(v))) and (v.size == 0 or float(np.max(np.abs(v))) < self.MAX_ABS)
        return False

    def try_expr(self, code):
        """The value of ``code`` in the live environment, or raise _Reject."""
        try:
            v = self._eval(code)
        except Exception:
            raise _Reject(code)
        if not self._ok_value(v):
            raise _Reject(code)
        return v

    def try_stmts(self, lines):
        """Execute ``lines`` on a copy of the environment; adopt the result or raise _Reject."""
        env = copy.deepcopy(self.env)
        src = "\n".join(lines)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                exec(compile(src, "<fuzz>", "exec"), self.ns, env)
        except Exception:
            raise _Reject(src)
        for k, v in env.items():
            if isinstance(v, list):
                if not all(self._ok_value(np.asarray(e)) for e in v):
                    raise _Reject(src)
            elif not (isinstance(v, (int, float, np.ndarray)) and (isinstance(v, int) or self._ok_value(v))):
                raise _Reject(src)
        self.env = env
        self.lines.extend(self.indent + ln for ln in lines)

    # -- expressions ------------------------------------------------------------
    def expr(self, depth=2):
        """Source of a float expression over the environment (validated)."""
        for _ in range(6):
            code = self._expr(depth)
            try:
                self.try_expr(code)
                return code
            except _Reject:
                continue
        return self.pick(self.arrays())

    def _leaf(self):
        names = self.arrays()
        if self.draw(st.integers(0, 9)) == 0:
            return _fmt(self.draw(st.floats(-2, 2)))
        return self.pick(names)

    def _expr(self, depth):
        if depth <= 0:
            return self._leaf()
        kind = self.draw(st.sampled_from(
            ["leaf", "unary", "unary", "binary", "binary", "binary", "reduce", "index",
             "matmul", "shape", "where", "scalar"]))
        sub = lambda: self._expr(depth - 1)  # noqa: E731
        if kind == "leaf":
            return self._leaf()
        if kind == "unary":
            self.features.add("unary")
            e = sub()
            return self.draw(st.sampled_from([
                "np.tanh({e})", "np.exp(np.tanh({e}))", "np.log(np.abs({e}) + 1.0)",
                "np.log({e} * {e} + 1.0)", "np.sin({e})", "np.cos({e})",
                "np.sqrt({e} * {e} + 1.0)", "(-{e})", "np.square({e})", "({e}) ** 2",
                "({e} * {e} + 0.5) ** 1.5", "1.0 / ({e} * {e} + 1.0)", "np.arctan({e})",
                "np.maximum({e}, 0.25)", "np.abs({e})", "np.negative({e})",
                "np.log1p({e} * {e})", "np.expm1(np.tanh({e}))", "np.clip({e}, -0.5, 0.5)",
                "np.exp2(np.sin({e}))", "np.cbrt({e} * {e} + 1.0)", "np.sinh(np.tanh({e}))",
                "np.cosh(np.tanh({e}))", "np.reciprocal({e} * {e} + 1.0)",
            ])).format(e=e)
        if kind == "binary":
            self.features.add("binary")
            a, b = sub(), sub()
            return self.draw(st.sampled_from([
                "({a} + {b})", "({a} - {b})", "({a} * {b})", "({a} / ({b} * {b} + 1.0))",
                "(({a}) * ({a}) + 1.0) ** np.tanh({b})", "np.add({a}, {b})",
                "np.multiply({a}, {b})", "np.subtract({a}, {b})", "np.hypot({a}, {b})",
                "np.maximum({a}, {b})", "np.minimum({a}, {b})", "np.arctan2({a}, {b} * {b} + 1.0)",
                "np.true_divide({a}, np.exp({b} * 0.1))",
            ])).format(a=a, b=b)
        if kind == "scalar":
            self.features.add("pyfloat")
            e = sub()
            c = _fmt(self.draw(st.floats(-3, 3)))
            return self.draw(st.sampled_from(
                ["({e} * {c})", "({c} - {e})", "({e} / 2.0)", "({c} + {e} * 0.5)", "(2.0 ** {e})"]
            )).format(e=e, c=c)
        if kind == "reduce":
            self.features.add("reduce")
            e = sub()
            fn = self.draw(st.sampled_from(["np.sum", "np.mean", "np.max", "np.min", "np.prod",
                                            "np.var", "method_sum", "method_mean"]))
            axis = self.draw(st.sampled_from([None, 0, -1, 1, (0, 1)]))
            keep = self.draw(st.booleans())
            args = ""
            if axis is not None:
                args += f", axis={axis!r}"
            if keep:
                args += ", keepdims=True"
            if fn.startswith("method_"):
                return f"({e}).{fn[7:]}({args[2:]})"
            return f"{fn}({e}{args})"
        if kind == "index":
            self.features.add("index_read")
            e = sub()
            idx = self.draw(st.sampled_from(
                ["[1:]", "[::-1]", "[[0, 1]]", "[[1, 0, 1]]", "[..., 0]", "[0]", "[-1]",
                 "[:, 1:]", "[1:, ::2]", "[:2]", "[None]", "[:, None]", "[np.array([0, 0])]",
                 "[:, [1, 0]]", "[0, 1]"]))
            return f"({e}){idx}"
        if kind == "matmul":
            self.features.add("matmul")
            a, b = sub(), sub()
            return self.draw(st.sampled_from(["({a} @ {b})", "np.dot({a}, {b})", "np.matmul({a}, {b})",
                                              "np.inner({a}, {b})", "np.outer({a}, {b})",
                                              "({a}).dot({b})", "np.einsum('ij,j->i', {a}, {b})",
                                              "np.tensordot({a}, {b}, axes=1)"])).format(a=a, b=b)
        if kind == "shape":
            self.features.add("shape")
            e = sub()
            choice = self.draw(st.sampled_from(
                ["reshape", "T", "transpose", "ravel", "concat", "stack", "squeeze", "expand",
                 "flip", "tile", "swap", "broadcast_to", "hstack", "vstack", "cumsum"]))
            if choice == "reshape":
                return f"({e}).reshape(-1)" if self.draw(st.booleans()) else f"np.reshape({e}, (1, -1))"
            if choice == "T":
                return f"({e}).T"
            if choice == "transpose":
                return f"np.transpose({e})"
            if choice == "ravel":
                return f"np.ravel({e})"
            if choice in ("concat", "stack", "hstack", "vstack"):
                b = sub()
                ax = self.draw(st.sampled_from([0, -1]))
                if choice == "concat":
                    return f"np.concatenate([{e}, {b}], axis={ax})"
                if choice == "stack":
                    return f"np.stack([{e}, {b}], axis={ax})"
                return f"np.{choice}([{e}, {b}])"
            if choice == "squeeze":
                return f"np.expand_dims({e}, 0).squeeze(0)"
            if choice == "expand":
                return f"np.expand_dims({e}, -1)"
            if choice == "flip":
                return f"np.flip({e})"
            if choice == "tile":
                return f"np.tile({e}, 2)"
            if choice == "swap":
                return f"np.swapaxes({e}, 0, -1)"
            if choice == "broadcast_to":
                return f"np.broadcast_to({e}, (2,) + np.shape({e}))"
            return f"np.cumsum({e})"
        if kind == "where":
            self.features.add("where")
            c, a, b = sub(), sub(), sub()
            return f"np.where({c} > 0.0, {a}, {b})"
        raise AssertionError(kind)

    # -- statements ------------------------------------------------------------------
    def statement(self, allow_hazards=True, allow_blocks=True):
        kinds = ["assign", "assign", "assign", "aug", "copy_write", "copy_write_aug", "pyfloat"]
        if allow_blocks:
            kinds += ["for", "while", "if_data", "if_py", "helper", "helper_tuple", "recursive",
                      "list_append", "math", "helper_value", "box", "tool_method"]
        if allow_hazards:
            kinds += ["alias_aug", "alias_view_write", "alias_view_then_base", "out_arg",
                      "fill", "sort", "copyto", "add_at", "float", "int", "item",
                      "setitem_view_chain"]
        kind = self.draw(st.sampled_from(kinds))
        for _ in range(4):
            try:
                getattr(self, "st_" + kind)()
                return
            except _Reject:
                continue
        # fall back to a plain assignment that always works
        name = self.fresh()
        self.try_stmts([f"{name} = {self.pick(self.arrays())} * 1.0"])

    def _target_like(self, min_ndim=0):
        names = [n for n in self.arrays(min_ndim) if isinstance(self.env[n], np.ndarray)]
        if not names:
            raise _Reject("no target")
        return self.pick(names)

    def st_assign(self):
        name = self.fresh()
        self.try_stmts([f"{name} = {self.expr()}"])

    def st_aug(self):
        self.features.add("augassign")
        t = self._target_like()
        op = self.draw(st.sampled_from(["+=", "-=", "*=", "/="]))
        e = self.expr(1)
        if op == "/=":
            e = f"({e} * {e} + 1.0)"
        self.try_stmts([f"{t} {op} {e}"])

    def _index_for(self, name):
        v = self.env[name]
        cands = ["[0]", "[-1]", "[1:]", "[::2]", "[[0, 1]]", "[..., 0]", "[:1]", "[np.array([1, 0])]"]
        if v.ndim >= 2:
            cands += ["[0, 1]", "[:, 0]", "[1:, 1:]", "[:, [0, 1]]", "[0, ::-1]"]
        return self.draw(st.sampled_from(cands))

    def st_copy_write(self):
        self.features.add("index_write")
        src = self._target_like(1)
        w = self.fresh("w")
        cp = self.draw(st.sampled_from(["{s} * 1.0", "{s}.copy()", "np.copy({s})", "np.array({s})",
                                        "{s} + 0.0"])).format(s=src)
        idx = self._index_for(src)
        e = self.expr(1)
        if self.draw(st.booleans()):
            e = f"np.sum({e})"
        self.try_stmts([f"{w} = {cp}", f"{w}{idx} = {e}"])

    def st_copy_write_aug(self):
        self.features.add("index_write_aug")
        src = self._target_like(1)
        w = self.fresh("w")
        idx = self._index_for(src)
        op = self.draw(st.sampled_from(["+=", "-=", "*="]))
        e = self.expr(1)
        if self.draw(st.booleans()):
            e = f"np.sum({e})"
        self.try_stmts([f"{w} = {src} * 1.0", f"{w}{idx} {op} {e}"])

    def st_pyfloat(self):
        self.features.add("pyfloat")
        c = self.fresh("c")
        a, b = self.draw(st.floats(-2, 2)), self.draw(st.floats(-2, 2))
        t = self._target_like()
        name = self.fresh()
        self.try_stmts([f"{c} = {_fmt(a)}", f"{c} = {c} * 2.0 + {_fmt(b)}", f"{name} = {t} * {c}"])

    def _carried_body(self, acc, extra_env_lines=()):
        e = self.expr(1)
        form = self.draw(st.sampled_from([
            "{a} = np.tanh({a} * 0.9 + {e})", "{a} = {a} * 0.5 + np.sin({e})",
            "{a} += 0.3 * np.tanh({e})", "{a} = {a} + np.tanh({a}) * 0.5",
        ]))
        return form.format(a=acc, e=e)

    def st_for(self):
        self.features.add("for")
        acc = self._target_like()
        k = self.draw(st.integers(1, 3))
        i = self.fresh("i")
        body = self._carried_body(acc)
        lines = [f"for {i} in range({k}):", f"    {body}"]
        if self.draw(st.booleans()):
            lines.append(f"    {acc} = {acc} + {i} * 0.1")
        self.try_stmts(lines)

    def st_while(self):
        self.features.add("while")
        acc = self._target_like()
        n = self.fresh("n")
        k = self.draw(st.integers(1, 3))
        body = self._carried_body(acc)
        self.try_stmts([f"{n} = 0", f"while {n} < {k}:", f"    {body}", f"    {n} += 1"])

    def st_if_data(self):
        self.features.add("if_data")
        c = self.expr(1)
        cond = self.draw(st.sampled_from(["np.sum({c}) > 0.0", "np.mean({c}) < 0.1",
                                          "np.max({c}) > 0.5", "np.all({c} > -2.0)"])).format(c=c)
        name = self.fresh()
        a, b = self.expr(), self.expr()
        lines = [f"if {cond}:", f"    {name} = {a}", "else:", f"    {name} = {b}"]
        # both branches must give the same shape for the program to be sensible
        if np.shape(self.try_expr(a)) != np.shape(self.try_expr(b)):
            raise _Reject("branch shapes")
        self.try_stmts(lines)

    def st_if_py(self):
        self.features.add("if_py")
        name = self.fresh()
        t = self._target_like()
        cond = self.draw(st.sampled_from([f"{t}.ndim >= 1", f"len(np.shape({t})) == 0",
                                          f"np.size({t}) > 2", "True"]))
        a, b = self.expr(), self.expr()
        if np.shape(self.try_expr(a)) != np.shape(self.try_expr(b)):
            raise _Reject("branch shapes")
        lines = [f"if {cond}:", f"    {name} = {a}", "elif 1 > 2:", f"    {name} = {b} * 2.0",
                 "else:", f"    {name} = {b}"]
        self.try_stmts(lines)

    def _helper(self, nparams, tuple_out=False):
        hname = self.fresh("h")
        args = [self._target_like() for _ in range(nparams)]
        params = [f"p{j}" for j in range(nparams)]
        sub = _Writer(self.draw, {p: copy.deepcopy(self.env[a]) for p, a in zip(params, args)},
                      self.ns, self.features, prefix="u")
        for _ in range(self.draw(st.integers(0, 2))):
            sub.statement(allow_hazards=False, allow_blocks=False)
        outs = [sub.expr() for _ in range(2 if tuple_out else 1)]
        body = sub.lines + [f"    return {', '.join(outs)}"]
        src = f"def {hname}({', '.join(params)}):\n" + "\n".join(body) + "\n"
        return hname, args, src

    def _define(self, src):
        try:
            exec(compile(src, "<fuzz-helper>", "exec"), self.ns)
        except Exception:
            raise _Reject(src)
        self.helpers.append(src)

    def st_helper(self):
        self.features.add("helper")
        hname, args, src = self._helper(self.draw(st.integers(1, 2)))
        self._define(src)
        name = self.fresh()
        self.try_stmts([f"{name} = {hname}({', '.join(args)})"])

    def st_helper_tuple(self):
        self.features.add("helper_tuple")
        hname, args, src = self._helper(self.draw(st.integers(1, 2)), tuple_out=True)
        self._define(src)
        a, b = self.fresh(), self.fresh()
        self.try_stmts([f"{a}, {b} = {hname}({', '.join(args)})"])

    def st_helper_value(self):
        """A helper passed as a value (``def f(x, y, h3=h3)``): a call the AST path cannot
        read, differentiated by tracing it. Its body may write into its first argument, one
        of f's own (directly or through a view): the adjoint's trace of the call would
        then start from the values the forward's run had changed."""
        self.features.add("helper_value")
        hname = self.fresh("h")
        own = [n for n in ("x", "y") if isinstance(self.env.get(n), np.ndarray)]
        if not own:
            raise _Reject("x and y are not arrays here")
        first = self.pick(own)
        args = [first] + ([self._target_like()] if self.draw(st.booleans()) else [])
        params = [f"p{j}" for j in range(len(args))]
        sub = _Writer(self.draw, {p: copy.deepcopy(self.env[a]) for p, a in zip(params, args)},
                      self.ns, self.features, prefix="u")
        view = self.draw(st.sampled_from([None, "p0", "p0[None]", "np.asarray(p0)", "np.reshape(p0, -1)",
                                          "p0[..., ::-1]", "p0[1:]", "np.expand_dims(p0, 0)"]))
        if view is not None:
            self.features.add("helper_value_writes")
            op = self.draw(st.sampled_from(["*=", "+=", "-="]))
            sub.try_stmts([f"u0 = {view}", f"u0 {op} {sub.expr(1)}"])
        if self.draw(st.booleans()):
            sub.st_assign()
        src = f"def {hname}({', '.join(params)}):\n" + "\n".join(sub.lines + [f"    return {sub.expr()}"]) + "\n"
        self._define(src)
        name = self.fresh()
        self.try_stmts([f"{name} = {hname}({', '.join(args)})"])
        self.passed.append(hname)

    def st_box(self):
        """An object of a class holding a value being differentiated (the AST path refuses
        it; auto takes the tape)."""
        self.features.add("box")
        if "Box" not in self.ns:
            self._define("class Box:\n    def __init__(self, w):\n        self.w = w\n\n"
                         "    def scaled(self, p):\n        return self.w * p\n")
        t, e = self._target_like(), self.expr(1)
        use = self.draw(st.sampled_from(["Box({t}).scaled({e})", "Box({t}).w * {e}", "Box({t} * {e}).w"]))
        self.try_stmts([f"{self.fresh()} = {use.format(t=t, e=e)}"])

    def st_tool_method(self):
        """A user's object whose method is named like an array's (``TOOL3.sum(y)``,
        ``Tool3().dot(x, v1)``), whose body may write into its first argument, one of f's
        own (directly or through a view): AST mode must not take it for an array's method."""
        self.features.add("tool_method")
        own = [n for n in ("x", "y") if isinstance(self.env.get(n), np.ndarray)]
        if not own:
            raise _Reject("x and y are not arrays here")
        args = [self.pick(own)] + ([self._target_like()] if self.draw(st.booleans()) else [])
        params = [f"p{j}" for j in range(len(args))]
        sub = _Writer(self.draw, {p: copy.deepcopy(self.env[a]) for p, a in zip(params, args)},
                      self.ns, self.features, prefix="u", indent="        ")
        view = self.draw(st.sampled_from([None, "p0", "p0[None]", "np.reshape(p0, -1)", "p0[1:]"]))
        if view is not None:
            self.features.add("tool_method_writes")
            sub.try_stmts([f"u0 = {view}", f"u0 *= {sub.expr(1)}"])
        cls = self.fresh("Tool")
        method = self.draw(st.sampled_from(["sum", "dot", "mean", "max", "reshape", "copy"]))
        body = sub.lines + [f"        return {sub.expr()}"]
        self._define(f"class {cls}:\n    def {method}(self, {', '.join(params)}):\n" + "\n".join(body)
                     + f"\n\n\n{cls.upper()} = {cls}()\n")
        obj = self.draw(st.sampled_from([cls.upper(), f"{cls}()"]))
        self.try_stmts([f"{self.fresh()} = {obj}.{method}({', '.join(args)})"])

    def st_recursive(self):
        self.features.add("recursive")
        hname = self.fresh("r")
        depth = self.draw(st.integers(0, 3))
        step = self.draw(st.sampled_from(["np.tanh(a) * 0.9 + 0.1", "a * 0.5 + np.sin(a)",
                                          "np.sqrt(a * a + 1.0) - 0.5"]))
        src = (f"def {hname}(a, n):\n    if n <= 0:\n        return a\n"
               f"    return {hname}({step}, n - 1)\n")
        self._define(src)
        t = self._target_like()
        name = self.fresh()
        self.try_stmts([f"{name} = {hname}({t}, {depth})"])

    def st_list_append(self):
        self.features.add("list")
        lst, i, name = self.fresh("L"), self.fresh("i"), self.fresh()
        e = self.expr(1)
        k = self.draw(st.integers(1, 3))
        red = self.draw(st.sampled_from(["sum({L})", "np.sum(np.stack({L}))", "{L}[0] + {L}[-1]"]))
        self.try_stmts([f"{lst} = []", f"for {i} in range({k}):",
                        f"    {lst}.append(np.sum({e}) * ({i} + 1.0))",
                        f"{name} = {red.format(L=lst)}"])

    def st_math(self):
        self.features.add("math")
        t = self._target_like()
        name = self.fresh("s")
        fn = self.draw(st.sampled_from(["math.exp(np.sum({t}) * 0.1)", "math.sin(np.mean({t}))",
                                        "math.tanh(np.sum({t}))", "math.sqrt(np.sum({t} * {t}) + 1.0)",
                                        "math.log(np.sum({t} * {t}) + 1.0)"])).format(t=t)
        t2 = self._target_like()
        name2 = self.fresh()
        self.try_stmts([f"{name} = {fn}", f"{name2} = {t2} * {name}"])

    # -- hazards ------------------------------------------------------------------------
    def st_alias_aug(self):
        self.features.add("alias_aug")
        t = self._target_like()
        w, z = self.fresh("w"), self.fresh("z")
        e = self.expr(1)
        self.try_stmts([f"{w} = {t} * 1.0", f"{z} = {w}", f"{z} += {e}",
                        f"{self.fresh()} = {w} * 2.0"])

    def st_alias_view_write(self):
        self.features.add("alias_view_write")
        t = self._target_like(1)
        w, u = self.fresh("w"), self.fresh("u")
        e = self.expr(1)
        self.try_stmts([f"{w} = {t} * 1.0", f"{u} = {w}[1:]", f"{u}[0] = np.sum({e})",
                        f"{self.fresh()} = {w} * 1.0"])

    def st_alias_view_then_base(self):
        self.features.add("alias_view_then_base")
        t = self._target_like(1)
        w, u = self.fresh("w"), self.fresh("u")
        e = self.expr(1)
        self.try_stmts([f"{w} = {t} * 1.0", f"{u} = {w}[1:]", f"{w}[1] = np.sum({e})",
                        f"{self.fresh()} = {u} * 1.0"])

    def st_setitem_view_chain(self):
        self.features.add("alias_view_aug")
        t = self._target_like(1)
        w, u = self.fresh("w"), self.fresh("u")
        e = self.expr(1)
        self.try_stmts([f"{w} = {t} * 1.0", f"{u} = {w}[::-1]", f"{u} += np.sum({e})",
                        f"{self.fresh()} = {w} * 1.0"])

    def st_out_arg(self):
        self.features.add("out")
        t = self._target_like()
        w = self.fresh("w")
        e = self.expr(1)
        form = self.draw(st.sampled_from(["np.multiply({t}, 2.0, out={w})", "np.add({t}, {e}, out={w})",
                                          "np.tanh({t}, out={w})", "np.exp(np.tanh({t}), out={w})"]))
        self.try_stmts([f"{w} = {t} * 0.0", form.format(t=t, w=w, e=e)])

    def st_fill(self):
        self.features.add("fill")
        t = self._target_like(1)
        w = self.fresh("w")
        e = self.expr(1)
        self.try_stmts([f"{w} = {t} * 1.0", f"{w}.fill(0.5)", f"{w} = {w} + {e}"])

    def st_sort(self):
        self.features.add("sort")
        t = self._target_like(1)
        w = self.fresh("w")
        self.try_stmts([f"{w} = {t} * 1.0", f"{w}.sort()"])

    def st_copyto(self):
        self.features.add("copyto")
        t = self._target_like()
        w = self.fresh("w")
        e = self.expr(1)
        self.try_stmts([f"{w} = {t} * 0.0", f"np.copyto({w}, {e})"])

    def st_add_at(self):
        self.features.add("add_at")
        t = self._target_like(1)
        w = self.fresh("w")
        e = self.expr(1)
        self.try_stmts([f"{w} = {t} * 1.0", f"np.add.at({w}, [0, 0], np.sum({e}))"])

    def st_float(self):
        self.features.add("float")
        t = self._target_like()
        s, name = self.fresh("s"), self.fresh()
        self.try_stmts([f"{s} = float(np.sum({t}))", f"{name} = {t} * {s}"])

    def st_item(self):
        self.features.add("item")
        t = self._target_like()
        s, name = self.fresh("s"), self.fresh()
        self.try_stmts([f"{s} = np.mean({t}).item()", f"{name} = {t} + {s}"])

    def st_int(self):
        self.features.add("int")
        t = self._target_like()
        n, name, i = self.fresh("n"), self.fresh(), self.fresh("i")
        self.try_stmts([f"{n} = int(abs(np.sum({t}))) % 3 + 1", f"{name} = {t} * 1.0",
                        f"for {i} in range({n}):", f"    {name} = np.tanh({name}) + {t}"])


# ---------------------------------------------------------------------------------
# inputs


def _shapes():
    dim = st.integers(1, 4)
    return st.one_of(st.just(()), st.tuples(dim), st.tuples(dim, dim))


@st.composite
def input_shapes(draw):
    sx = draw(_shapes())
    rel = draw(st.sampled_from(["same", "last", "col", "scalar", "free"]))
    if rel == "same" or not sx:
        sy = sx
    elif rel == "last":
        sy = sx[-1:]
    elif rel == "col" and len(sx) == 2:
        sy = (sx[0], 1)
    elif rel == "scalar":
        sy = ()
    else:
        sy = draw(_shapes())
    if draw(st.booleans()):
        sx, sy = sy, sx
    return sx, sy


def _away_from_kinks(v):
    """Map a drawn float to an input value: no simple numbers (0.5, 0.25... are where the
    generated clips and maximums have kinks) and nothing near 0 (abs, sign)."""
    v = v * 0.973 + 0.0131
    return v if abs(v) > 0.06 else (0.06 + abs(v)) * (1.0 if v >= 0 else -1.0)


@st.composite
def smooth_arrays(draw, *shapes):
    """Float64 arrays of ``shapes`` whose elements are pairwise distinct in absolute value
    (no ties for max, sort or abs between different inputs)."""
    sizes = [int(np.prod(s)) if s else 1 for s in shapes]
    vals = draw(st.lists(st.floats(-1.5, 1.5, allow_nan=False, allow_infinity=False),
                         min_size=sum(sizes), max_size=sum(sizes),
                         unique_by=lambda v: round(abs(_away_from_kinks(v)), 2)))
    vals = [_away_from_kinks(v) for v in vals]
    out, at = [], 0
    for s, n in zip(shapes, sizes):
        out.append(np.array(vals[at:at + n], dtype=np.float64).reshape(s))
        at += n
    return out


def smooth_array(shape):
    return smooth_arrays(shape).map(lambda a: a[0])


def _module_ns():
    return {"np": np, "math": math, "__name__": "fuzz_module"}


# ---------------------------------------------------------------------------------
# programs


@st.composite
def grad_programs(draw, hazards=True):
    """A differentiable program (expect="grad") over float64 inputs."""
    sx, sy = draw(input_shapes())
    x, y = draw(smooth_arrays(sx, sy))
    with_k = draw(st.integers(0, 5)) == 0
    k = draw(st.integers(1, 3))
    env = {"x": x.copy(), "y": y.copy()}
    if with_k:
        env["k"] = k
    features = set()
    ns = _module_ns()
    w = _Writer(draw, env, ns, features)
    if with_k:
        features.add("int_arg")
        try:  # (x and y may not broadcast together: then no loop over k)
            w.try_stmts(["acc = x * 1.0", "for j in range(k):", "    acc = np.tanh(acc + y)"])
        except _Reject:
            pass
    for _ in range(draw(st.integers(1, 6))):
        w.statement(allow_hazards=hazards)
    last = w.expr(1)
    # every value computed contributes to the output (so a wrong one shows)
    live = [n for n, v in w.env.items() if n not in ("x", "y", "k")
            and isinstance(v, (np.ndarray, float)) and not isinstance(v, bool)][-4:]
    terms = [f"np.sum(np.tanh({n})) * {_fmt(draw(st.floats(0.3, 1.7)))}" for n in live]
    ret = draw(st.sampled_from(["np.sum({e})", "np.sum({e} * {e})", "np.mean(np.tanh({e}))",
                                "np.sum({e}) * 0.5 + np.sum(x * y)", "({e}).sum()",
                                "np.max({e})", "float_tuple"]))
    if ret == "float_tuple":
        features.add("tuple_return_unpack")
        ret_lines = [f"    s, t = np.sum({last}), np.sum(np.sin(x))", "    return " + " + ".join(["s + t * 0.5"] + terms)]
    else:
        ret_lines = ["    return " + " + ".join([ret.format(e=last)] + terms)]
    params = ("x, y, k" if with_k else "x, y") + "".join(f", {h}={h}" for h in w.passed)
    args = (x, y, k) if with_k else (x, y)
    header = "import math\nimport numpy as np\n\n\n" + "".join(h + "\n\n" for h in w.helpers)
    src = header + f"def f({params}):\n" + "\n".join(w.lines + ret_lines) + "\n"
    if not _runs(src, args):
        src = header + f"def f({params}):\n" + "\n".join(
            w.lines + ["    return " + " + ".join(["np.sum(x * y)"] + terms)]) + "\n"
        if not _runs(src, args):
            reject()
    argnums = draw(st.sampled_from([0, 1, (0, 1)]))
    return Program(src, args, argnums, features)


def _runs(src, args):
    """Whether the module ``src``'s ``f(*args)`` gives a finite real scalar (in NumPy)."""
    ns = _module_ns()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            exec(compile(src, "<fuzz-module>", "exec"), ns)
            out = ns["f"](*(copy.deepcopy(a) for a in args))
        return np.ndim(out) == 0 and np.isrealobj(out) and math.isfinite(float(out)) and abs(float(out)) < 1e6
    except Exception:
        return False


# real-valued functions of a complex z (and a real y), composed of rules right for complex
# values: holomorphic maps, their parts, conjugates, moduli and phases
_COMPLEX_INNER = ["z * z", "np.exp(z) * y[0]", "np.sin(z) + z", "z / (z + 2.0)", "np.conj(z) * z",
                  "np.tanh(z) * np.conj(z)", "z ** 3 - 1j * z", "np.log(z + 3.0)", "np.sqrt(z + 2.0)",
                  "np.cumsum(z * 1.5)", "np.flip(z) * z", "np.cosh(z) * 1j"]
_COMPLEX_OUTER = ["np.sum(np.real({e}))", "np.sum(np.imag({e}))", "np.sum(np.abs({e}) ** 2)",
                  "np.sum(np.abs({e}))", "np.sum(np.angle({e}) * np.abs(z))", "np.real(np.sum({e} * y[1]))",
                  "np.var({e})", "np.std({e}) + np.sum(y)", "np.max(np.real({e}))"]


@st.composite
def complex_input_programs(draw):
    """A real-valued program of a complex input: differentiated in JAX's convention
    (df/dx - i df/dy), checked against finite differences."""
    sx = draw(st.sampled_from([(), (3,), (2, 2)]))
    n = int(np.prod(sx)) if sx else 1
    re = draw(st.lists(st.floats(-1.5, 1.5, allow_nan=False), min_size=n, max_size=n))
    im = draw(st.lists(st.floats(-1.5, 1.5, allow_nan=False), min_size=n, max_size=n))
    z = (np.array(re) + 1j * np.array(im)).reshape(sx) + (0.3 + 0.2j)
    flat = z.ravel()
    for part in (np.real(flat), np.imag(flat), np.abs(flat)):
        if len(np.unique(np.round(part, 2))) < n:
            reject()  # (a tie between elements is a kink of max: no derivative to compare)
    y = np.linspace(0.1, 0.5, 3)
    inner = draw(st.sampled_from(_COMPLEX_INNER))
    body = draw(st.sampled_from(_COMPLEX_OUTER)).format(e=inner)
    if len(sx) > 1 and "cumsum" in inner and "np.abs(z))" in body:
        reject()  # (cumsum flattens a 2-d z: the product with np.abs(z) would not broadcast)
    src = f"import numpy as np\n\n\ndef f(z, y):\n    return {body}\n"
    return Program(src, (z, y), 0, {"complex_array"}, expect="complex")


@st.composite
def bad_input_programs(draw):
    """A program whose differentiated input is int or bool (or a Python int)."""
    kind = draw(st.sampled_from(["int_array", "bool_array", "py_int", "int_scalar"]))
    sx = draw(st.sampled_from([(), (3,), (2, 2)]))
    if kind == "int_array":
        x = np.arange(int(np.prod(sx)) if sx else 1, dtype=np.int64).reshape(sx) + 1
    elif kind == "bool_array":
        x = (np.arange(int(np.prod(sx)) if sx else 1) % 2 == 0).reshape(sx)
    elif kind == "py_int":
        x = 3
    else:
        x = np.int64(2)
    y = np.linspace(0.1, 0.5, 3)
    body = draw(st.sampled_from(["np.sum(x * 2.0) + np.sum(y)", "np.sum(np.tanh(x * 1.0)) * np.sum(y)",
                                 "np.real(np.sum(x * x)) + np.sum(y)", "np.sum(x) * 1.0"]))
    src = f"import numpy as np\n\n\ndef f(x, y):\n    return {body}\n"
    return Program(src, (x, y), 0, {kind}, expect="bad_input")


@st.composite
def bad_output_programs(draw):
    """A program over float inputs whose output is not a real scalar."""
    x = draw(smooth_array(draw(st.sampled_from([(3,), (2, 2), (2, 3)]))))
    y = draw(smooth_array((3,)))
    kind, body = draw(st.sampled_from([
        ("nonscalar", "np.tanh(x)"), ("nonscalar", "x * np.sum(y)"), ("nonscalar", "np.stack([np.sum(x), np.sum(y)])"),
        ("nonscalar", "(np.sum(x), np.sum(y))"), ("nonscalar", "[np.sum(x)]"),
        ("complex", "np.sum(x) * 1j"), ("complex", "np.sum(x + 0j)"), ("complex", "np.sum(x) + 1j * np.sum(y)"),
        ("complex", "np.sum(np.exp(1j * x))"), ("string", "'abc'"), ("string", "str(np.sum(x))"),
        ("none", "None"),
    ]))
    src = f"import numpy as np\n\n\ndef f(x, y):\n    return {body}\n"
    return Program(src, (x, y), 0, {kind}, expect="bad_output")


@st.composite
def empty_input_programs(draw):
    """Zero-size inputs: the gradient is an empty array of the input's shape."""
    x = np.zeros((0,))
    y = draw(smooth_array((3,)))
    body = draw(st.sampled_from([
        "np.sum(x) + np.sum(y * y)", "np.sum(np.tanh(x) * 2.0) + np.sum(np.sin(y))",
        "np.sum(x * x) + np.sum(np.concatenate([x, y]))", "np.sum(x @ x) + np.sum(y)",
        "np.sum(np.exp(x)) + np.prod(y)", "np.sum(x.reshape(0, 3)) + np.sum(y)",
    ]))
    src = f"import numpy as np\n\n\ndef f(x, y):\n    return {body}\n"
    return Program(src, (x, y), draw(st.sampled_from([0, (0, 1)])), {"empty_input"})
