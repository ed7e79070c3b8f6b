"""A 0-d parameter (CLIP's ``logit_scale``, a GP's log length scale) steps as the same value
of shape (1,) does, in every optimizer: NumPy gives a scalar, not an array, for ufuncs of
0-d arrays, which the update passes' in-place writes refused. State keeps the parameter's
shape, as PyTorch's does (state dicts load across libraries)."""
import numpy as np
import pytest

import tracegrad as tg

O = tg.optim
CASES = [("Adam", {"lr": 0.1}), ("Adam", {"lr": 0.1, "amsgrad": True, "weight_decay": 0.1}),
         ("AdamW", {"lr": 0.1}), ("SGD", {"lr": 0.1, "weight_decay": 0.1}),
         ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
         ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1}),
         ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.9}),
         ("Adagrad", {"lr": 0.1, "weight_decay": 0.1}), ("Adamax", {"lr": 0.1}), ("NAdam", {"lr": 0.1}),
         ("RAdam", {"lr": 0.1}), ("Adadelta", {"lr": 1.0}), ("ASGD", {"lr": 0.1}), ("Rprop", {"lr": 0.1}),
         ("LBFGS", {"lr": 0.5}), ("Adafactor", {"lr": 0.1})]


def _trajectory(lib, name, kw, shape, dtype=np.float32):
    p = lib.nn.Parameter(lib.tensor(np.full(shape, 0.7, dtype)))
    opt = getattr(lib.optim, name)([p], **kw)
    values = []
    for i in range(4):
        def closure():
            opt.zero_grad()
            loss = ((p - 1.5) ** 2).sum() * (1 + 0.1 * i)
            loss.backward()
            return loss
        opt.step(closure)
        values.append(p.detach().numpy().reshape(-1)[0])
    states = {k: tuple(v.shape) for st in opt.state.values() for k, v in st.items() if hasattr(v, "shape")}
    return np.array(values), states


@pytest.mark.parametrize("name, kw", CASES, ids=[f"{n}-{'-'.join(k)}" for n, k in CASES])
def test_a_0d_parameter_steps_as_a_1_element_one(name, kw):
    zero_d, states = _trajectory(tg, name, kw, ())
    one, _ = _trajectory(tg, name, kw, (1,))
    np.testing.assert_array_equal(zero_d, one)
    assert not np.allclose(zero_d, 0.7)  # (it moved)
    if name != "LBFGS":  # (LBFGS keeps flat vectors, as PyTorch)
        assert all(s in ((), (2,)) for k, s in states.items() if k not in ("step",)), states


@pytest.mark.torch
@pytest.mark.parametrize("name, kw", CASES, ids=[f"{n}-{'-'.join(k)}" for n, k in CASES])
def test_a_0d_parameter_steps_as_in_pytorch(name, kw):
    import torch
    ours, our_states = _trajectory(tg, name, kw, (), np.float64)
    theirs, their_states = _trajectory(torch, name, kw, (), np.float64)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    assert our_states == their_states


def test_a_complex_0d_parameter_steps():
    p = tg.nn.Parameter(tg.tensor(0.5 + 0.25j))
    opt = O.Adam([p], lr=0.1)
    (p.abs() ** 2).backward()
    opt.step()
    q = tg.nn.Parameter(tg.tensor([0.5 + 0.25j]))
    opt = O.Adam([q], lr=0.1)
    (q.abs() ** 2).sum().backward()
    opt.step()
    assert p.shape == () and p.detach().numpy() == q.detach().numpy()[0]
