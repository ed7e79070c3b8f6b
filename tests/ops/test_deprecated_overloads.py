"""PyTorch's deprecated overloads that put the scale first -- ``add(alpha, other)``,
``sub``, ``addcmul(value, t1, t2)``, ``addcdiv`` and their in-place forms (``p.data.add_(-lr,
grad)`` in DARTS and in copies of old optimizers) -- with PyTorch's warning, once."""
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.ops import pointwise

A, B, C = [1.0, 2.0], [3.0, 4.0], [5.0, 6.0]
CALLS = {
    "add": (lambda a, b, c: a.add(2.0, b), [7.0, 10.0]),
    "torch.add": (lambda a, b, c: tg.add(a, 2.0, b), [7.0, 10.0]),
    "sub": (lambda a, b, c: tg.sub(a, 2.0, b), [-5.0, -6.0]),
    "add_": (lambda a, b, c: a.clone().add_(2.0, b), [7.0, 10.0]),
    "sub_": (lambda a, b, c: a.clone().sub_(2.0, b), [-5.0, -6.0]),
    "addcmul": (lambda a, b, c: tg.addcmul(a, 0.5, b, c), [8.5, 14.0]),
    "addcmul_": (lambda a, b, c: a.clone().addcmul_(0.5, b, c), [8.5, 14.0]),
    "addcdiv_": (lambda a, b, c: a.clone().addcdiv_(0.5, b, c), [1.3, 2.0 + 1.0 / 3.0]),
    "0-d scale": (lambda a, b, c: a.clone().add_(b.norm() / b.norm() * 2.0, b), [7.0, 10.0]),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_scale_first_overloads_compute_as_pytorch(name):
    call, expected = CALLS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = call(tg.tensor(A), tg.tensor(B), tg.tensor(C))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)


def test_the_warning_names_the_overload_once(monkeypatch):
    monkeypatch.setattr(pointwise, "_warned", set())
    a, b = tg.tensor(A), tg.tensor(B)
    with pytest.warns(UserWarning, match=r"This overload of add is deprecated:\n\tadd\(Number alpha, Tensor other\)"):
        a.add(2.0, b)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a.add(2.0, b)  # (once per process, as PyTorch)
    with pytest.warns(UserWarning, match="This overload of sub is deprecated"):
        a.clone().sub_(1.0, b)


def test_gradients_flow_through_the_old_form():
    a, b = tg.tensor(A, requires_grad=True), tg.tensor(B, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tg.add(a, -0.5, b).sum().backward()
    assert a.grad.tolist() == [1.0, 1.0] and b.grad.tolist() == [-0.5, -0.5]


@pytest.mark.parametrize("call, message", [
    (lambda a, b: a.add(b, 2), r"add\(\) takes 2 positional arguments but 3 were given"),
    (lambda a, b: a.add(2.0, b, alpha=3), r"add\(\) takes 2 positional arguments but 3 were given"),
    (lambda a, b: tg.addcmul(a, b, b, b), r"addcmul\(\) takes 3 positional arguments but 4 were given"),
])
def test_other_extra_arguments_are_type_errors(call, message):
    with pytest.raises(TypeError, match=message):
        call(tg.tensor(A), tg.tensor(B))
