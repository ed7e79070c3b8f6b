"""torch.utils._pytree's names: leaves in order, structure printed as torch prints it,
rebuilt exactly (namedtuples keep their class), mismatches refused."""
from collections import namedtuple

import pytest

import tracegrad.utils._pytree as pytree

Pair = namedtuple("Pair", "a b")
TREES = [{"a": (1, [2, 3]), "b": 4}, [1, (2,)], Pair(1, [2]), None, 3, (), {"x": {}}, [[], {"k": (5,)}]]


@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_round_trip(tree):
    leaves, spec = pytree.tree_flatten(tree)
    back = pytree.tree_unflatten(leaves, spec)
    assert back == tree and type(back) is type(tree)
    assert pytree.tree_leaves(tree) == leaves and spec.num_leaves == len(leaves)


def test_leaves_in_order_and_printed_form():
    leaves, spec = pytree.tree_flatten({"a": (1, [2, 3]), "b": 4})
    assert leaves == [1, 2, 3, 4]
    assert repr(spec) == ("TreeSpec(dict, ['a', 'b'], [TreeSpec(tuple, None, [*,\n"
                          "    TreeSpec(list, None, [*,\n      *])]),\n  *])")
    assert repr(pytree.tree_structure(Pair(1, 2))) == (
        "TreeSpec(namedtuple, <class 'tests.utils.test_pytree.Pair'>, [*,\n  *])")
    assert repr(pytree.tree_structure(7)) == "*"


def test_tree_map_over_several_trees():
    assert pytree.tree_map(lambda x, y: x + 10 * y, {"a": [1, 2]}, {"a": [3, 4]}) == {"a": [31, 42]}
    with pytest.raises(ValueError, match="another structure"):
        pytree.tree_map(lambda x, y: x, [1, 2], [1])


def test_unflatten_checks_the_leaf_count():
    with pytest.raises(ValueError, match=r"`leaves` has length 1 but the spec refers to a pytree that holds 2"):
        pytree.tree_unflatten([1], pytree.tree_structure([1, 2]))


@pytest.mark.torch
@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_matches_torch(tree):
    torch_pytree = pytest.importorskip("torch.utils._pytree")
    ours, theirs = pytree.tree_flatten(tree), torch_pytree.tree_flatten(tree)
    assert ours[0] == theirs[0] and repr(ours[1]) == repr(theirs[1])
