"""Nested containers of values (tuples, lists, dicts), flattened to a list of leaves and
rebuilt -- what the transforms use for arguments, outputs and auxiliary data."""

__all__ = ["flatten", "unflatten", "leaves", "tree_map"]


def flatten(tree):
    """``(leaves, spec)``: the leaves of ``tree`` in order and what rebuilds it."""
    out = []
    spec = _flatten(tree, out)
    return out, spec


def _flatten(tree, out):
    if isinstance(tree, (tuple, list)):  # (namedtuples too: NumPy's SlogdetResult, max's (values, indices))
        return (type(tree), tuple(_flatten(x, out) for x in tree))
    if isinstance(tree, dict):
        keys = list(tree)
        return (dict, tuple(keys), tuple(_flatten(tree[k], out) for k in keys))
    out.append(tree)
    return None


def unflatten(spec, values):
    it = iter(values)
    return _build(spec, it)


def _build(spec, it):
    if spec is None:
        return next(it)
    if spec[0] is dict:
        return {k: _build(s, it) for k, s in zip(spec[1], spec[2])}
    cls, children = spec[0], [_build(s, it) for s in spec[1]]
    return cls._make(children) if hasattr(cls, "_make") else cls(children)


def leaves(tree):
    return flatten(tree)[0]


def tree_map(fn, tree):
    xs, spec = flatten(tree)
    return unflatten(spec, [fn(x) for x in xs])
