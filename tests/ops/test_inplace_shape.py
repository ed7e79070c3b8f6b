"""In-place shape changes (``x.unsqueeze_(0)``...): the tensor becomes a view of its own
memory with the new shape and strides, as in PyTorch; refused for tensors in autograd."""
import numpy as np
import pytest

import tracegrad as tg

CASES = [("unsqueeze_", (-1,)), ("unsqueeze_", (0,)), ("squeeze_", ()), ("squeeze_", (1,)),
         ("transpose_", (0, 1)), ("swapdims_", (0, 2)), ("swapaxes_", (1, 2)), ("t_", ())]


def _start(lib, name):
    x = lib.arange(6).view(2, 1, 3)
    return x.view(2, 3) if name == "t_" else x


@pytest.mark.parametrize("name,args", CASES)
def test_in_place_shape_change_keeps_the_tensor_and_its_memory(name, args):
    x = _start(tg, name)
    before = x.numpy().copy()
    out = getattr(x, name)(*args)
    assert out is x
    expected = getattr(tg.tensor(before), name[:-1])(*args)
    assert tuple(x.shape) == tuple(expected.shape)
    np.testing.assert_array_equal(x.numpy(), expected.numpy())
    x.zero_()  # still the same memory as the original arange
    assert x._base is None or x._base.sum().item() == 0


@pytest.mark.torch
@pytest.mark.parametrize("name,args", CASES)
def test_in_place_shape_change_matches_torch(name, args):
    import torch
    ours, theirs = _start(tg, name), _start(torch, name)
    getattr(ours, name)(*args)
    getattr(theirs, name)(*args)
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_in_place_shape_change_of_a_tensor_in_autograd_is_refused():
    w = tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"unsqueeze_\(\): changing the shape of a tensor that requires "
                                           r"grad in place is not supported by tracegrad; use unsqueeze\(\)"):
        w.unsqueeze_(0)
    assert tuple(w.shape) == (2,)
