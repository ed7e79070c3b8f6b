"""``tracegrad.autograd.forward_ad``: PyTorch's forward-mode AD API over dual tensors.

A dual tensor carries a tangent next to its value; every eager op computes its output's
tangent by its rule-table jvp (see :mod:`tracegrad.runtime.forward`). As in PyTorch, one
level exists at a time and its tangents are dropped when it exits.
"""
import functools
from typing import NamedTuple, Optional

from ..runtime import forward as _forward
from ..runtime.tensor import Tensor

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "dual_level"]

# Kept in step with the runtime's level, as torch's module-level variable is.
_current_level = -1


def enter_dual_level():
    """Enter a new forward grad level (the one used by default by the functions below)."""
    global _current_level
    new_level = _forward.enter()
    if new_level != _current_level + 1:
        raise RuntimeError("Entering a new forward AD level but the current level is not valid. "
                           "Make sure you did not modify it directly.")
    _current_level = new_level
    return new_level


def exit_dual_level(*, level=None):
    """Exit the last level entered, deleting the tangents made at it."""
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was "
                           "created. This is not supported.")
    _forward.exit(level)
    _current_level = level - 1


def make_dual(tensor, tangent, *, level=None):
    """A new tensor aliasing ``tensor``'s values with ``tangent`` as its forward gradient
    (the tangent itself when it has the same memory layout, a copy otherwise)."""
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    lvl = _forward.level_at(level, "_make_dual")
    return _forward.make_dual(tensor, tangent, lvl)


class UnpackedDualTensor(NamedTuple):
    r"""Namedtuple returned by :func:`unpack_dual` containing the primal and tangent components of the dual tensor.

    See :func:`unpack_dual` for more details.
    """

    primal: Tensor
    tangent: Optional[Tensor]


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)``: a view of ``tensor``'s value without tangent, and its tangent
    as it is (None when it has none, or once its level has exited)."""
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    primal, tangent = _forward.unpack(tensor, level)
    return UnpackedDualTensor(primal, tangent)


class dual_level:
    """Context manager (and decorator) in which forward AD computation happens; entering
    it while another level is open raises, as in PyTorch."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with dual_level():
                return fn(*args, **kwargs)
        return wrapper

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()
