"""nn.Parameter and nn.Buffer: a leaf Tensor subclass aliasing its data; ops give Tensors."""
import copy
import pickle

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn


def test_parameter_is_a_leaf_tensor_sharing_storage_and_version():
    t = tg.zeros(3)
    p = nn.Parameter(t)
    assert isinstance(p, tg.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    t.add_(1)
    assert p.tolist() == [1.0, 1.0, 1.0]  # same storage
    assert p._version == 1  # same version counter
    assert not t.requires_grad  # the source is untouched


def test_parameter_defaults_and_requires_grad_false():
    p = nn.Parameter()
    assert p.shape == (0,) and p.requires_grad and p.dtype == tg.float32
    q = nn.Parameter(tg.ones(2), requires_grad=False)
    assert not q.requires_grad
    with tg.no_grad():  # no_grad does not change the default
        assert nn.Parameter(tg.ones(1)).requires_grad


def test_parameter_of_integers_needs_requires_grad_false():
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype can require gradients"):
        nn.Parameter(tg.tensor([1, 2]))
    p = nn.Parameter(tg.tensor([1, 2]), requires_grad=False)
    assert p.dtype == tg.int64


def test_parameter_from_non_tensor_is_a_type_error():
    with pytest.raises(TypeError, match="must be a Tensor, not list"):
        nn.Parameter([1.0])


def test_parameter_of_a_non_leaf_is_a_leaf():
    x = tg.ones(2, requires_grad=True)
    y = x * 2
    p = nn.Parameter(y)
    assert p.is_leaf and p.grad_fn is None and p.requires_grad


def test_repr_matches_pytorch_text():
    assert repr(nn.Parameter(tg.tensor([1.0, 2.0]))) == (
        "Parameter containing:\ntensor([1., 2.], requires_grad=True)")
    assert str(nn.Parameter(tg.zeros(2), requires_grad=False)) == "Parameter containing:\ntensor([0., 0.])"
    assert repr(nn.Parameter(tg.zeros(1, dtype=tg.float64))) == (
        "Parameter containing:\ntensor([0.], dtype=tracegrad.float64, requires_grad=True)")


def test_operations_on_parameters_give_plain_tensors():
    p = nn.Parameter(tg.ones(2, 2))
    for out in (p * 2, p + p, p @ p, p.t(), p.sum(), tg.exp(p), p[0], p.detach(), p.data, p.view(4)):
        assert type(out) is tg.Tensor
    assert (p * 2).grad_fn.name() == "MulBackward0"
    with tg.no_grad():
        assert type(p.add_(0)) is nn.Parameter  # in-place returns the parameter itself


def test_parameter_gradients_accumulate():
    p = nn.Parameter(tg.tensor([1.0, 2.0]))
    (p * p).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), [2.0, 4.0])
    assert type(p.grad) is tg.Tensor


def test_deepcopy_keeps_type_and_values_but_not_grad_or_storage():
    p = nn.Parameter(tg.tensor([1.0, 2.0]))
    p.grad = tg.tensor([0.5, 0.5])
    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q.requires_grad and q.tolist() == [1.0, 2.0]
    assert q.grad is None  # torch.nn.Parameter.__deepcopy__ copies the data only
    q.data.add_(1)
    assert p.tolist() == [1.0, 2.0]
    r = copy.deepcopy(nn.Parameter(tg.ones(1), requires_grad=False))
    assert not r.requires_grad
    memo = {}
    assert copy.deepcopy(p, memo) is copy.deepcopy(p, memo)


def test_pickle_round_trip():
    p = nn.Parameter(tg.tensor([3.0]), requires_grad=False)
    q = pickle.loads(pickle.dumps(p))
    assert type(q) is nn.Parameter and not q.requires_grad and q.tolist() == [3.0]


def test_buffer_marks_module_state():
    t = tg.zeros(2)
    b = nn.Buffer(t)
    assert isinstance(b, tg.Tensor) and isinstance(b, nn.Buffer)
    assert b.persistent and not b.requires_grad
    assert repr(b) == "tensor([0., 0.])"
    assert nn.Buffer(t, persistent=False).persistent is False
    t.add_(1)
    assert b.tolist() == [1.0, 1.0]
    assert nn.Buffer().shape == (0,)
    c = copy.deepcopy(nn.Buffer(t, persistent=False))
    assert isinstance(c, nn.Buffer) and c.persistent is False and c.tolist() == [1.0, 1.0]
    d = pickle.loads(pickle.dumps(b))
    assert isinstance(d, nn.Buffer) and d.persistent


def test_parameters_take_the_eager_fast_paths():
    """Parameters are in PLAIN_SUBCLASSES: binary ops on them record the same nodes."""
    p = nn.Parameter(tg.ones(2, 2))
    x = tg.ones(2, 2)
    assert (x * p).grad_fn.name() == "MulBackward0"
    assert (x @ p).grad_fn.name() == "MmBackward0"
    (x @ p).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), np.full((2, 2), 2.0))


@pytest.mark.torch
def test_oracle_parameter_repr_and_types():
    torch = pytest.importorskip("torch")
    for make in (lambda m: m.nn.Parameter(m.tensor([1.5, -2.0])),
                 lambda m: m.nn.Parameter(m.zeros(2, 2), requires_grad=False),
                 lambda m: m.nn.Parameter()):
        ours, theirs = make(tg), make(torch)
        assert repr(ours) == repr(theirs).replace("torch.", "tracegrad.")
        assert type(ours * 2).__name__ == type(theirs * 2).__name__ == "Tensor"
        assert type(copy.deepcopy(ours)).__name__ == type(copy.deepcopy(theirs)).__name__
