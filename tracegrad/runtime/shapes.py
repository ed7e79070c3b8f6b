"""Shape arithmetic with PyTorch's error messages: broadcasting and expanding.

Used by the torch-style functions (``expand``, ``broadcast_shapes``) and by the eager
runtime to turn NumPy's shape errors into the messages PyTorch users know.
"""
from .tensor import Size

__all__ = ["broadcast_shapes", "expand_shape", "shape_args"]


def shape_args(shape):
    """``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])``, ``f(Size)`` -> (2, 3); one-element integer
    tensors count as ints."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    out = []
    for s in shape:
        if hasattr(s, "item") and not isinstance(s, int):
            s = s.item()
        if not isinstance(s, int) or isinstance(s, bool):
            raise TypeError(f"size must be a sequence of ints, but got an element of type {type(s).__name__}")
        out.append(s)
    return tuple(out)


def broadcast_shapes(*shapes):
    """The shape all ``shapes`` broadcast to; RuntimeError naming the first clash."""
    result = ()
    for shape in shapes:
        shape = tuple(shape)
        n = max(len(result), len(shape))
        a = (1,) * (n - len(result)) + result
        b = (1,) * (n - len(shape)) + shape
        for d in range(n - 1, -1, -1):
            if a[d] != b[d] and a[d] != 1 and b[d] != 1:
                raise RuntimeError(f"The size of tensor a ({a[d]}) must match the size of tensor "
                                   f"b ({b[d]}) at non-singleton dimension {d}")
        result = tuple(max(x, y) if min(x, y) != 0 else 0 for x, y in zip(a, b))
    return Size(result)


def expand_shape(shape, sizes, type_name):
    """The shape ``expand(*sizes)`` gives a tensor of ``shape`` (``-1`` keeps a size)."""
    shape, sizes = tuple(shape), tuple(sizes)
    if len(sizes) < len(shape):
        raise RuntimeError(f"expand({type_name}{{{list(shape)}}}, size={list(sizes)}): the number "
                           f"of sizes provided ({len(sizes)}) must be greater or equal to the number "
                           f"of dimensions in the tensor ({len(shape)})")
    lead = len(sizes) - len(shape)
    target = []
    for i, s in enumerate(sizes):
        have = shape[i - lead] if i >= lead else None
        if s == -1:
            if have is None:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                                   f"non-existing dimension {i}")
            s = have
        elif have is not None and have != s and have != 1:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size "
                               f"({have}) at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  "
                               f"Tensor sizes: {list(shape)}")
        target.append(s)
    return tuple(target)
