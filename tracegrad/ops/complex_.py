"""PyTorch's complex-number functions: real, imag, conj, angle, complex, polar, sgn,
view_as_real / view_as_complex, and the ``Tensor.real`` / ``.imag`` attributes.

They call the rules of :mod:`tracegrad.rules.complex_`. One difference from PyTorch:
``z.real`` and ``z.imag`` are copies, not views (this runtime has no view of a part of
a complex value), and writing into them -- which in PyTorch changes ``z`` -- raises a
RuntimeError rather than silently changing nothing.
"""
from ..backend import dtypes as _dt
from ..rules import complex_ as C
from ..rules import unary as U
from ..rules.arith import div, mul, where
from ..rules.shape import stack

__all__ = ["real", "imag", "conj", "angle", "complex", "polar", "sgn", "view_as_real",
           "view_as_complex", "is_conj", "resolve_conj", "conj_physical"]


def real(input):
    if not input.is_complex():
        return input  # (as PyTorch: the real part of a real tensor is the tensor)
    return _part_copy(C.real(input))


def imag(input):
    return _part_copy(C.imag(input))


def _part_copy(t):
    """Marks a part of a complex tensor (or a complex tensor of real pairs), a copy here where
    PyTorch makes a view, so that writing into it -- which in PyTorch changes the tensor it
    came from -- is refused rather than silently changing nothing (runtime/inplace_checks.py)."""
    t._extra = dict(t._extra or (), part_copy=True)
    return t


def conj(input):
    return C.conj(input)


def angle(input):
    """The argument of ``input``; of integers (and bools), in the default float dtype, as
    PyTorch's."""
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        input = input.to(_dt.get_default_dtype())
    return C.angle(input)


def complex(real, imag):
    return C.complex(real, imag)


def polar(abs, angle):
    """``abs * (cos(angle) + i sin(angle))``."""
    return mul(C.complex(U.cos(angle), U.sin(angle)), abs)


def sgn(input):
    """``z / |z|`` (0 at 0); the sign for real inputs."""
    if not input.is_complex():
        return U.sign(input)
    a = U.abs(input)
    zero = a == 0  # (0 there, with a zero gradient, as PyTorch's sgn_backward: not z / 1's)
    return where(zero, 0.0, div(input, where(zero, 1.0, a)))


def view_as_real(input):
    """The real and imaginary parts in a last dimension of size 2 (a copy here, so
    writing into it is refused, as for ``z.real``)."""
    if not input.is_complex():
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return _part_copy(stack(C.real(input), C.imag(input), dim=input.dim()))


def view_as_complex(input):
    """The complex tensor of pairs (a copy here, so writing into it is refused)."""
    if input.dim() == 0 or input.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    return _part_copy(C.complex(input[..., 0], input[..., 1]))


def is_conj(input):
    return False  # conjugation is always materialised here


def resolve_conj(input):
    return input


conj_physical = conj

FUNCTIONS = {name: globals()[name] for name in __all__}
METHODS = {
    "real": property(real), "imag": property(imag), "conj": conj, "conj_physical": conj,
    "angle": angle, "sgn": sgn, "is_conj": is_conj, "resolve_conj": resolve_conj,
}
