"""Integer arithmetic and bits -- ``gcd``, ``lcm``, ``bitwise_left_shift``/``<<``,
``bitwise_right_shift``/``>>`` -- and the float functions ``nextafter`` and ``igamma``/
``igammac`` (``torch.special.gammainc``/``gammaincc`` under their older names), with their
in-place forms, over rules of :mod:`tracegrad.rules.special` and :mod:`~tracegrad.rules.gamma`.

Each refuses the dtypes PyTorch's kernels refuse, with PyTorch's message (``"gcd_cpu" not
implemented for 'Float'``), judged on the promoted dtype; an in-place form whose result
could not be cast back into ``self`` says so first, as in PyTorch. Unlike PyTorch, ``gcd``,
``lcm``, ``nextafter`` and ``igamma`` also take a Python number as ``other``.
"""
from ..rules import gamma as G
from ..rules import special as S
from ..runtime.dispatch import apply, apply_inplace
from ..runtime.tensor import Tensor
from ._args import result_type

_INTEGER, _FLOAT = (1,), (2,)  # dtype categories each kernel takes (0 bool, 1 int, 2 float, 3 complex)


def _check(kernel, categories, operands, inplace=None):
    """Refuse operands whose promoted dtype ``kernel`` does not take. In place, a result
    that cannot be cast into ``inplace`` is left to apply_inplace, which says so."""
    dtype = result_type(*operands)
    if inplace is not None and dtype.category > inplace.dtype.category:
        return
    if dtype.category not in categories:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{dtype.scalar_name}\'')


def _binary(prim, kernel, categories):
    """``torch.<name>(input, other)``, ``x.<name>(other)`` and ``x.<name>_(other)``."""
    def function(input, other):
        _check(kernel, categories, (input, other))
        return prim(input, other)

    def inplace(self, other):
        _check(kernel, categories, (self, other), inplace=self)
        return apply_inplace(prim, (self, other), {})

    function.__name__ = function.__qualname__ = prim.name
    inplace.__name__ = inplace.__qualname__ = prim.name + "_"
    return function, inplace


gcd, gcd_ = _binary(S.gcd, "gcd_cpu", _INTEGER)
lcm, lcm_ = _binary(S.lcm, "lcm_cpu", _INTEGER)
bitwise_left_shift, bitwise_left_shift_ = _binary(S.bitwise_left_shift, "lshift_cpu", _INTEGER)
bitwise_right_shift, bitwise_right_shift_ = _binary(S.bitwise_right_shift, "rshift_cpu", _INTEGER)
nextafter, nextafter_ = _binary(S.nextafter, "nextafter_cpu", _FLOAT)
igamma, igamma_ = _binary(G.gammainc, "igamma_cpu", _FLOAT)
igammac, igammac_ = _binary(G.gammaincc, "igammac_cpu", _FLOAT)
igamma.__name__, igammac.__name__ = "igamma", "igammac"
igamma.__doc__ = "The regularised lower incomplete gamma function P(input, other) (``special.gammainc``)."
igammac.__doc__ = "The regularised upper incomplete gamma function Q(input, other) (``special.gammaincc``)."


def _operand(x):
    return isinstance(x, (Tensor, int, bool)) or hasattr(x, "__array_interface__")


def _shift_operator(prim, kernel, reflected=False):
    """``x << s`` (``s << x`` when ``reflected``) on the eager hot path; other operand
    kinds give NotImplemented, so Python raises its usual TypeError."""
    def op(self, other):
        if not _operand(other) and not isinstance(other, float):
            return NotImplemented
        operands = (other, self) if reflected else (self, other)
        _check(kernel, _INTEGER, operands)
        return apply(prim, operands, {})
    return op


FUNCTIONS = {"gcd": gcd, "lcm": lcm, "bitwise_left_shift": bitwise_left_shift,
             "bitwise_right_shift": bitwise_right_shift, "nextafter": nextafter, "igamma": igamma,
             "igammac": igammac}
METHODS = dict(FUNCTIONS, gcd_=gcd_, lcm_=lcm_, bitwise_left_shift_=bitwise_left_shift_,
               bitwise_right_shift_=bitwise_right_shift_, nextafter_=nextafter_, igamma_=igamma_,
               igammac_=igammac_,
               __lshift__=_shift_operator(S.bitwise_left_shift, "lshift_cpu"),
               __rlshift__=_shift_operator(S.bitwise_left_shift, "lshift_cpu", reflected=True),
               __rshift__=_shift_operator(S.bitwise_right_shift, "rshift_cpu"),
               __rrshift__=_shift_operator(S.bitwise_right_shift, "rshift_cpu", reflected=True),
               __ilshift__=bitwise_left_shift_, __irshift__=bitwise_right_shift_)
