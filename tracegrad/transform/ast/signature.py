"""The user's signature, as the generated functions take it.

``def f(a, b=2.0, *xs, scale=1.0, **options)``: positional parameters (``a``, ``b``), a
tuple of the extra positional arguments (``xs``), keyword-only parameters and a dict of
the other keywords. ``argnums`` count positional arguments as a call passes them, so
argument 3 of ``f(a, b, u, v)`` is ``xs[1]``: its gradient is the part of ``dxs`` for
item 1. The generated functions keep the user's signature, with the seed ``dout``
(after the positional parameters, keyword-only where ``*xs`` takes everything after
them) or, for forward mode, one tangent per positional parameter.

``ALL`` (positions ``"*"``): every positional argument, however many a call passes --
what the adjoint of a function called as ``f(*args)`` returns, flattened:
``(da, db, *per_item(dxs, len(xs)))``.
"""
import ast
import math

from .anf import _const, _name

__all__ = ["Signature", "ALL"]

ALL = "*"


def _helper(name, *args):
    f = _name(name)
    f._helper = True
    return ast.Call(func=f, args=list(args), keywords=[])


def _literal(v):
    if type(v) in (float, complex):
        return all(math.isfinite(x) for x in (v.real, v.imag))
    return v is None or type(v) in (int, bool, str, bytes)


class Signature:
    """The parameters of user function ``fn`` (its FunctionDef ``node``)."""

    def __init__(self, fn, node):
        a = node.args
        self.fn = fn
        self.params = [p.arg for p in a.posonlyargs + a.args]
        self.vararg = a.vararg.arg if a.vararg else None
        self.kwonly = [p.arg for p in a.kwonlyargs]
        self.kwarg = a.kwarg.arg if a.kwarg else None

    def names(self):
        """Every parameter name."""
        return self.params + [n for n in (self.vararg, self.kwarg) if n] + self.kwonly

    def positions(self, positions):
        """``positions`` (argnums, or ALL) checked, negatives made positive."""
        if positions == ALL:
            return ALL
        n = len(self.params)
        out = tuple(p % n if n and p < 0 else p for p in positions)
        if self.vararg is None and max(out, default=-1) >= n:
            raise ValueError(f"argnums {out} out of range for {self.fn.__qualname__} with "
                             f"{n} parameter(s)")
        return out

    def wrt(self, positions):
        """The parameter names differentiated for ``positions`` (the tuple ``*xs`` once)."""
        if positions == ALL:
            return self.params + ([self.vararg] if self.vararg else [])
        out = []
        for p in positions:
            name = self.params[p] if p < len(self.params) else self.vararg
            if name not in out:
                out.append(name)
        return out

    def results(self, positions, grad):
        """The gradient expressions for ``positions``; ``grad(name)`` is the expression of
        a parameter's whole gradient."""
        n = len(self.params)
        if positions == ALL:
            out = [grad(p) for p in self.params]
            if self.vararg:
                items = ast.Call(func=_name("len"), args=[_name(self.vararg)], keywords=[])
                out.append(ast.Starred(value=_helper("per_item", grad(self.vararg), items), ctx=ast.Load()))
            return out
        return [grad(self.params[p]) if p < n else _helper("part", grad(self.vararg), _const(p - n))
                for p in positions]

    def arguments(self, unit, front=(), back=(), back_defaults=(), defaults=True):
        """``ast.arguments`` for the user's signature with parameters ``front`` before it
        (the seed of an adjoint called by other adjoints) and ``back`` after the
        positional ones (the user-facing seed, tangents) -- keyword-only where ``*xs``
        takes the positional arguments after them; ``back_defaults`` for the last of
        ``back``; ``defaults``: keep the defaults of the positional parameters."""
        pos_defaults = self._defaults(unit) if defaults else []
        back_defaults = list(back_defaults)
        kwonly = list(zip(self.kwonly, self._kw_defaults(unit)))
        back = list(back)
        if self.vararg:
            kwonly += list(zip(back, [None] * (len(back) - len(back_defaults)) + back_defaults))
            back = []
        else:
            pos_defaults += back_defaults
        return ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in list(front) + self.params + back],
                             vararg=ast.arg(arg=self.vararg) if self.vararg else None,
                             kwonlyargs=[ast.arg(arg=k) for k, _ in kwonly], kw_defaults=[d for _, d in kwonly],
                             kwarg=ast.arg(arg=self.kwarg) if self.kwarg else None, defaults=pos_defaults)

    def _value(self, v, hint, unit):
        return _const(v) if _literal(v) else _name(unit.bind(v, hint))

    def _defaults(self, unit):
        """The defaults of the positional parameters: the very objects in
        ``fn.__defaults__`` (made when the user's ``def`` ran; the expressions in its
        source are never evaluated again), as literals where they are plain numbers,
        strings or None, else as names bound to them in the generated code's globals."""
        params = self.params
        values = tuple(self.fn.__defaults__ or ())[-len(params):] if params else ()
        return [self._value(v, f"{p}_default", unit) for p, v in zip(params[len(params) - len(values):], values)]

    def _kw_defaults(self, unit):
        given = self.fn.__kwdefaults__ or {}
        return [self._value(given[k], f"{k}_default", unit) if k in given else None for k in self.kwonly]

    def call_keywords(self):
        """The keyword arguments that pass the user's keyword-only parameters and ``**``
        on to another function of the same signature."""
        kws = [ast.keyword(arg=k, value=_name(k)) for k in self.kwonly]
        if self.kwarg:
            kws.append(ast.keyword(arg=None, value=_name(self.kwarg)))
        return kws
