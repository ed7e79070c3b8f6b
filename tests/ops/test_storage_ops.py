"""resize_/resize_as_ (PyTorch's storage semantics where tracegrad can keep them, a clear
refusal where it cannot) and share_memory_/is_shared (memory shared with forked processes
where the tensor alone holds its memory, else a mark: see tracegrad/ops/storage.py), by
hand and against real PyTorch."""
import gc

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.ops import storage

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


def test_shrinking_keeps_the_first_elements_in_the_same_memory():
    x = tg.arange(6.0)
    y = x.resize_(2, 2)
    assert y is x and x.shape == (2, 2) and x.stride() == (2, 1) and x.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    assert x._version == 1
    x.resize_(2, 3)  # grows back into its old elements, as PyTorch's storage does
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and x._version == 2
    x.resize_(3, 3)  # beyond them: zeros (PyTorch leaves them uninitialised)
    assert x.flatten()[:6].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and x.flatten()[6:].tolist() == [0.0] * 3


def test_same_shape_is_a_no_op_and_sizes_take_every_form():
    x = tg.ones(2, 3)
    assert x.resize_(2, 3) is x and x._version == 0
    assert x.resize_((3, 2)).shape == (3, 2)
    assert x.resize_([6]).shape == (6,)
    assert x.resize_(tg.Size([1, 6])).shape == (1, 6)
    assert x.resize_as_(tg.zeros(2, 2)).shape == (2, 2)
    assert tg.resize_as_(x, tg.zeros(0)).shape == (0,)
    assert tg.ones(2).resize_(0, 3).shape == (0, 3)
    assert tg.ones(()).resize_(2).tolist() == [1.0, 0.0]
    assert tg.ones(3).resize_(()).shape == ()


def test_memory_order_is_the_storage_order():
    """A tensor laid out column-major (not a view) keeps its elements in memory order."""
    x = (tg.arange(6.0).reshape(2, 3) + 0).t() * 1.0  # elementwise ops keep the layout
    assert not x.is_contiguous() and x._base is None
    assert x.resize_(6).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_the_shrunk_tensor_still_shares_memory():
    a = np.arange(4.0)
    t = tg.from_numpy(a)
    t.resize_(2)
    a[0] = 10.0
    assert t.tolist() == [10.0, 1.0]
    t.resize_(4)  # within the NumPy array: fine
    assert t.tolist() == [10.0, 1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="cannot grow this tensor beyond its memory: that memory is also held"):
        t.resize_(8)  # (PyTorch refuses too: "Trying to resize storage that is not resizable")
    assert t.shape == (4,) and t._version == 2  # nothing half-changed


def test_growing_memory_held_elsewhere_is_refused_until_it_is_free():
    x = tg.arange(4.0)
    w = x.view(2, 2)
    with pytest.raises(RuntimeError, match=r"resize_: tracegrad cannot grow this tensor .*Resize a copy instead"):
        x.resize_(8)
    d = x.detach()
    del w
    with pytest.raises(RuntimeError, match="held elsewhere"):
        x.resize_(8)
    del d
    gc.collect()
    assert x.resize_(8).tolist() == [0.0, 1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 0.0]
    m = tg.max(tg.arange(6.0).reshape(2, 3), 1).values  # (a kernel's view of its own temporary)
    assert m.resize_(5).tolist() == [2.0, 5.0, 0.0, 0.0, 0.0]


def test_refusals():
    with pytest.raises(RuntimeError, match="^cannot resize variables that require grad$"):
        tg.ones(2, requires_grad=True).resize_(3)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        (tg.ones(2, requires_grad=True) * 2).resize_(1)
    x = tg.arange(6.0).reshape(2, 3)
    with pytest.raises(RuntimeError, match="cannot resize a view of another tensor"):
        x[:, 1:].resize_(4)
    assert x[1].resize_(3).shape == (3,)  # the same shape: nothing to do
    with pytest.raises(RuntimeError, match="not one block of memory"):
        x[:, 1:].detach().resize_(1)
    with pytest.raises(RuntimeError, match=r"Trying to create tensor with negative dimension -1: \[-1\]"):
        tg.ones(2).resize_(-1)
    with pytest.raises(TypeError, match="resize_as_\\(\\): argument 'the_template' \\(position 1\\) must be Tensor"):
        tg.ones(2).resize_as_([1, 2])


def test_a_saved_tensor_resized_fails_backward_as_in_pytorch():
    a = tg.ones(3, requires_grad=True)
    c = tg.ones(3)
    d = a * c
    c.resize_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        d.sum().backward()


def test_share_memory_marks_the_memory():
    z = tg.zeros(3)
    assert not z.is_shared()
    assert z.share_memory_() is z and z.is_shared()
    assert z[1:].is_shared() and z.view(3).is_shared() and z.detach().is_shared()
    assert not z.clone().is_shared()
    p = tg.zeros(2, requires_grad=True)
    assert p.share_memory_().is_shared() and p.requires_grad
    marks = len(storage._SHARED)
    q = tg.zeros(4).share_memory_()
    assert len(storage._SHARED) == marks + 1
    del q
    gc.collect()
    assert len(storage._SHARED) == marks  # the mark goes with the memory
    s = tg.zeros(4).share_memory_()
    s.resize_(2)
    assert s.is_shared()  # (shrunk: the same memory)


def _hogwild_worker(t, model, state):
    t.add_(1.0)
    with tg.no_grad():
        model.weight.mul_(0.0)
    state.add_(5)


@pytest.mark.skipif("fork" not in __import__("multiprocessing").get_all_start_methods(), reason="needs fork")
def test_forked_processes_write_into_shared_tensors():
    """Hogwild / A3C: a model and an optimizer's state shared before the workers fork."""
    import multiprocessing
    t = tg.zeros(3).share_memory_()
    model = tg.nn.Linear(2, 2, bias=False).share_memory()
    state = tg.zeros(1).share_memory_()
    f = tg.zeros(3, 2).t()  # (F-ordered: keeps its strides)
    f.share_memory_()
    assert f.stride() == (1, 2) and f.is_shared()
    worker = multiprocessing.get_context("fork").Process(target=_hogwild_worker, args=(t, model, state))
    worker.start()
    worker.join()
    assert worker.exitcode == 0
    assert t.tolist() == [1.0, 1.0, 1.0] and state.tolist() == [5.0]
    assert model.weight.abs().sum().item() == 0 and isinstance(model.weight, tg.nn.Parameter)


def test_a_tensor_something_else_holds_is_only_marked():
    v = tg.zeros(4)
    w = v[1:]
    a = v.numpy()
    v.share_memory_()
    assert v.is_shared() and w.is_shared()
    v.add_(1.0)  # (still the same memory as its view and its NumPy array)
    assert w.tolist() == [1.0] * 3 and a.tolist() == [1.0] * 4


def test_meta_tensors_are_not_shared():
    m = tg.zeros(3, device="meta")
    assert not m.is_shared()
    with pytest.raises(RuntimeError, match="_share_fd_: only available on CPU"):
        m.share_memory_()
    assert m.resize_(5).shape == (5,)


def test_module_parameters_can_be_shared():
    lin = tg.nn.Linear(2, 2)
    for param in lin.parameters():
        param.share_memory_()
    assert all(param.is_shared() for param in lin.parameters())


@pytest.mark.torch
def test_resize_and_share_memory_match_torch():
    def steps(lib):
        x = lib.arange(6.0)
        seen = [x.resize_(2, 2).tolist(), x._version, x.resize_(2, 3).tolist(), x.resize_(2, 3)._version,
                tuple(x.resize_(3, 1).stride()), x.resize_as_(lib.zeros(1, 2)).tolist()]
        y = (lib.arange(6.0).reshape(2, 3) + 0).t() * 1.0
        seen += [y.is_contiguous(), y.resize_(6).tolist()]
        z = lib.zeros(3)
        seen += [z.is_shared(), z.share_memory_() is z, z.is_shared(), z[1:].is_shared(), z.clone().is_shared()]
        return seen
    assert steps(tg) == steps(torch)
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="^cannot resize variables that require grad$"):
            lib.ones(2, requires_grad=True).resize_(3)

    def grown(lib):  # the kept part of a grown tensor (PyTorch's new elements are uninitialised)
        x = lib.arange(4.0)
        x.resize_(2)
        x.resize_(3, 3)
        return x.flatten()[:4].tolist()
    assert grown(tg) == grown(torch)
