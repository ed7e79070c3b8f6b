"""One flat vector for a nested container of arrays, and the function that rebuilds it.

``ravel_pytree`` is JAX's ``jax.flatten_util.ravel_pytree`` (HIPS autograd calls it
``autograd.misc.flatten``): optimisers, line searches and Hessian code want one vector,
models keep tuples, lists and dicts of arrays. Both directions are written with NumPy
functions the tape records (``ravel``, ``concatenate``, slicing, ``reshape``), so they are
differentiable in every staged mode, and the vector can be traced through ``unravel``.
"""
import numpy as np

from .transform.tree import flatten, unflatten

__all__ = ["ravel_pytree"]


def ravel_pytree(tree):
    """``(flat, unravel)``: the leaves of ``tree`` (arrays, NumPy or Python numbers, in the
    order of tuples, lists and dicts' keys) raveled and joined into one 1-d array of their
    common dtype, and ``unravel(flat)`` rebuilding a tree of the same structure, each leaf
    with its shape and dtype (``flat`` must have the raveled dtype). An empty tree gives an empty float64 vector.

    >>> flat, unravel = ravel_pytree((1.0, {"w": np.ones((2, 2))}))
    >>> flat.shape
    (5,)
    """
    leaves, spec = flatten(tree)
    for leaf in leaves:
        _check_leaf(leaf)
    shapes = [np.shape(leaf) for leaf in leaves]
    dtypes = [_dtype(leaf) for leaf in leaves]
    dtype = np.result_type(*dtypes) if dtypes else np.dtype(np.float64)
    pieces = [np.ravel(leaf) for leaf in leaves]
    flat = np.concatenate(pieces) if pieces else np.zeros(0, dtype)
    if flat.dtype != dtype:  # an all-integer or all-bool tree of one dtype needs no cast
        flat = flat.astype(dtype)
    sizes = [int(np.prod(shape, dtype=np.int64)) for shape in shapes]
    total = sum(sizes)

    def unravel(vector):
        """The tree ``vector`` was raveled from (``vector`` may be traced)."""
        if np.ndim(vector) != 1 or np.shape(vector)[0] != total:
            raise ValueError(f"unravel: expected a 1-d array of {total} elements, got shape "
                             f"{np.shape(vector)}")
        if _dtype(vector) != dtype:
            raise TypeError(f"unravel: expected an array of dtype {dtype} (the raveled tree's), "
                            f"got {_dtype(vector)}")
        out, start = [], 0
        for shape, size, leaf_dtype in zip(shapes, sizes, dtypes):
            piece = np.reshape(vector[start:start + size], shape)
            if dtype.kind == "c" and leaf_dtype.kind != "c":
                piece = np.real(piece)  # a real leaf's entries of a complex vector (as in JAX)
            if leaf_dtype != _dtype(piece):
                piece = piece.astype(leaf_dtype)
            out.append(piece)
            start += size
        return unflatten(spec, out)

    return flat, unravel


def _dtype(x):
    dtype = getattr(x, "dtype", None)
    return np.dtype(dtype) if dtype is not None else np.result_type(x)


def _check_leaf(leaf):
    if isinstance(leaf, (str, bytes)) or leaf is None or not (
            hasattr(leaf, "shape") or isinstance(leaf, (int, float, complex, np.generic))):
        raise TypeError(f"ravel_pytree: the leaves must be arrays or numbers; got "
                        f"{type(leaf).__name__} ({leaf!r:.60})")
