"""``torch.utils._pytree``: nested tuples, lists and dicts (namedtuples too) flattened to
their leaves and rebuilt, with torch's names and its printed ``TreeSpec``.

The traversal is :mod:`tracegrad.transform.tree`'s, which the staged paths use; this
module gives its structure torch's form (``TreeSpec(kind, context, children)``, ``*`` for
a leaf) for ``torch.func`` and for programs that import ``torch.utils._pytree``."""
from ..transform import tree as _tree

__all__ = ["TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure",
           "tree_map"]


class TreeSpec:
    """The structure of a pytree: a container type, its context (dict keys) and children."""

    def __init__(self, kind, context, children):
        self.kind, self.context, self.children = kind, context, children

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.kind is other.kind and self.context == other.context
                and self.children == other.children)

    __hash__ = None

    @property
    def num_leaves(self):
        return sum(c.num_leaves for c in self.children)

    def __repr__(self, indent=0):
        name = "namedtuple" if hasattr(self.kind, "_fields") else self.kind.__name__
        text = f"TreeSpec({name}, {self.context}, ["
        if self.children:
            indent += 2
            text += self.children[0].__repr__(indent) + ("," if len(self.children) > 1 else "")
            text += ",".join("\n" + " " * indent + c.__repr__(indent) for c in self.children[1:])
        return text + "])"


class LeafSpec(TreeSpec):
    """A leaf, printed ``*``."""

    def __init__(self):
        super().__init__(None, None, [])

    num_leaves = 1

    def __repr__(self, indent=0):
        return "*"


LEAF = LeafSpec()


def _torch_spec(spec):
    if spec is None:
        return LEAF
    if spec[0] is dict:
        return TreeSpec(dict, list(spec[1]), [_torch_spec(s) for s in spec[2]])
    context = spec[0] if hasattr(spec[0], "_fields") else None  # (torch's: a namedtuple's class)
    return TreeSpec(spec[0], context, [_torch_spec(s) for s in spec[1]])


def _own_spec(spec):
    if not isinstance(spec, TreeSpec):
        raise TypeError(f"tree_unflatten: expected a TreeSpec, got {type(spec).__name__}")
    if isinstance(spec, LeafSpec):
        return None
    children = tuple(_own_spec(c) for c in spec.children)
    return (dict, tuple(spec.context), children) if spec.kind is dict else (spec.kind, children)


def tree_flatten(tree):
    """``(leaves, spec)`` of a pytree. Namedtuples (``max``'s ``(values, indices)``) are
    nodes, as in torch's pytree."""
    leaves, spec = _tree.flatten(tree)
    return leaves, _torch_spec(spec)


def tree_unflatten(leaves, treespec):
    """The pytree of ``treespec``'s structure holding ``leaves`` in order."""
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec "
                         f"refers to a pytree that holds {treespec.num_leaves} items ({treespec}).")
    return _tree.unflatten(_own_spec(treespec), leaves)


def tree_leaves(tree):
    return _tree.leaves(tree)


def tree_structure(tree):
    return tree_flatten(tree)[1]


def tree_map(func, tree, *rests):
    """``func`` applied to each leaf of ``tree`` (and the leaves at the same places in
    ``rests``, which must have ``tree``'s structure)."""
    leaves, spec = tree_flatten(tree)
    others = []
    for rest in rests:
        rest_leaves, rest_spec = tree_flatten(rest)
        if rest_spec != spec:
            raise ValueError(f"tree_map: a tree of another structure ({rest_spec}) than the first ({spec})")
        others.append(rest_leaves)
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)
