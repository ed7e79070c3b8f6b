"""RNN, LSTM, GRU and their cells: parameters, initialisation, shapes, the equations by hand
(NumPy), gradients by finite differences, errors by type and message; and (marked
``torch``) outputs, final states and ALL gradients against PyTorch with copied weights."""
import itertools
import math

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn

from tracegrad.nn.functional import rnn as RNN_F

from ._oracle import copy_weights

RNG = np.random.default_rng(3)
TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-7, atol=1e-10)}
I, H = 3, 4


def randn(*shape):
    return RNG.standard_normal(shape)


def sig(x):
    return 1 / (1 + np.exp(-x))


def _states(model, batch, unbatched):
    """Random initial state(s) of the right shape for ``model``."""
    layers = model.num_layers * (2 if model.bidirectional else 1)
    lead = (layers,) if unbatched else (layers, batch)
    hsize = model.proj_size if getattr(model, "proj_size", 0) else model.hidden_size
    h = randn(*lead, hsize)
    return (h, randn(*lead, model.hidden_size)) if isinstance(model, nn.LSTM) else h


# -- the layer cases ---------------------------------------------------------------------------------

LAYER_CASES = []
for _cls, _layers, _bi, _bf in itertools.product(("RNN", "LSTM", "GRU"), (1, 2), (False, True), (False, True)):
    LAYER_CASES.append((_cls, dict(num_layers=_layers, bidirectional=_bi, batch_first=_bf)))
LAYER_CASES += [("RNN", dict(nonlinearity="relu", num_layers=2)), ("RNN", dict(bias=False, bidirectional=True)),
                ("LSTM", dict(bias=False, num_layers=2)), ("GRU", dict(bias=False, batch_first=True)),
                ("LSTM", dict(proj_size=2, num_layers=2, bidirectional=True))]
LAYER_IDS = [f"{c}-" + "-".join(f"{k}={v}" for k, v in kw.items()) for c, kw in LAYER_CASES]


def _run_layer(lib, model, x, hx):
    """Forward and backward with fixed cotangents; returns (arrays of the results, gradients
    of the input, of the initial states, and of every parameter by name)."""
    as_t = (lambda a: lib.tensor(a, dtype=model.weight_ih_l0.dtype, requires_grad=True))
    xt = as_t(x)
    states = None if hx is None else (tuple(as_t(h) for h in hx) if isinstance(hx, tuple) else as_t(hx))
    out, hidden = model(xt, states)
    results = [out] + (list(hidden) if isinstance(hidden, tuple) else [hidden])
    rng = np.random.default_rng(0)
    loss = sum((r * lib.tensor(rng.standard_normal(tuple(r.shape)), dtype=r.dtype)).sum() for r in results)
    loss.backward()
    leaves = [xt] + ([] if states is None else list(states) if isinstance(states, tuple) else [states])
    grads = {n: p.grad.numpy() for n, p in model.named_parameters()}
    return [r.detach().numpy() for r in results], [v.grad.numpy() for v in leaves], grads


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("given_state", [False, True], ids=["no-state", "state"])
@pytest.mark.parametrize("cls,kwargs", LAYER_CASES, ids=LAYER_IDS)
def test_layers_match_torch(cls, kwargs, given_state, dtype):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)  # oneDNN threads spin on a busy machine: 100x slower
    theirs = getattr(torch.nn, cls)(I, H, **kwargs).to(getattr(torch, dtype))
    ours = getattr(nn, cls)(I, H, **kwargs).to(getattr(tg, dtype))
    copy_weights(theirs, ours)
    for unbatched in (False, True):
        x = randn(5, I) if unbatched else (randn(2, 5, I) if ours.batch_first else randn(5, 2, I))
        hx = _states(ours, 2, unbatched) if given_state else None
        mine, theirs_ = _run_layer(tg, ours, x, hx), _run_layer(torch, theirs, x, hx)
        for a, b in zip(mine[0] + mine[1], theirs_[0] + theirs_[1]):
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, **TOL[dtype])
        assert mine[2].keys() == theirs_[2].keys()
        for name in mine[2]:
            np.testing.assert_allclose(mine[2][name], theirs_[2][name], **TOL[dtype], err_msg=name)
        ours.zero_grad()
        theirs.zero_grad()


@pytest.mark.torch
@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_layer_structure_matches_torch(cls):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)  # oneDNN threads spin on a busy machine: 100x slower
    for kwargs in ({}, dict(num_layers=3, bidirectional=True, bias=False, batch_first=True, dropout=0.25)) + (
            (dict(proj_size=2, num_layers=2),) if cls == "LSTM" else ()):
        ours, theirs = getattr(nn, cls)(I, H, **kwargs), getattr(torch.nn, cls)(I, H, **kwargs)
        assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == \
               [(n, tuple(p.shape)) for n, p in theirs.named_parameters()]
        assert repr(ours) == repr(theirs)
        assert ours._flat_weights_names == theirs._flat_weights_names
        assert ours._all_weights == theirs._all_weights
        assert [[tuple(w.shape) for w in ws] for ws in ours.all_weights] == \
               [[tuple(w.shape) for w in ws] for ws in theirs.all_weights]


@pytest.mark.torch
@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_full_dropout_between_layers_matches_torch(cls):
    """With dropout=1 in training mode the second layer sees zeros: deterministic in both."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)  # oneDNN threads spin on a busy machine: 100x slower
    theirs = getattr(torch.nn, cls)(I, H, num_layers=2, dropout=1.0).double()
    ours = getattr(nn, cls)(I, H, num_layers=2, dropout=1.0).double()
    copy_weights(theirs, ours)
    x = randn(4, 2, I)
    a, b = ours(tg.tensor(x))[0], theirs(torch.tensor(x))[0]
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10)


CELL_CASES = [("RNNCell", {}), ("RNNCell", dict(nonlinearity="relu", bias=False)), ("LSTMCell", {}),
              ("LSTMCell", dict(bias=False)), ("GRUCell", {}), ("GRUCell", dict(bias=False))]


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cls,kwargs", CELL_CASES, ids=[f"{c}-{kw}" for c, kw in CELL_CASES])
def test_cells_match_torch(cls, kwargs, dtype):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)  # oneDNN threads spin on a busy machine: 100x slower
    theirs = getattr(torch.nn, cls)(I, H, **kwargs).to(getattr(torch, dtype))
    ours = getattr(nn, cls)(I, H, **kwargs).to(getattr(tg, dtype))
    copy_weights(theirs, ours)
    assert repr(ours) == repr(theirs)
    lstm = cls == "LSTMCell"
    for batch, given in itertools.product((2, None), (False, True)):
        lead = () if batch is None else (batch,)
        x = randn(*lead, I)
        hx = ((randn(*lead, H), randn(*lead, H)) if lstm else randn(*lead, H)) if given else None
        results = []
        for lib, model in ((tg, ours), (torch, theirs)):
            def t(a):
                return lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True)
            xt = t(x)
            states = None if hx is None else (tuple(t(h) for h in hx) if lstm else t(hx))
            out = model(xt, states)
            outs = list(out) if lstm else [out]
            sum((o * (k + 1.5)).sum() for k, o in enumerate(outs)).backward()
            leaves = [xt] + ([] if states is None else list(states) if lstm else [states])
            results.append([o.detach().numpy() for o in outs] + [v.grad.numpy() for v in leaves]
                           + [p.grad.numpy() for _, p in model.named_parameters()])
            model.zero_grad()
        for a, b in zip(*results):
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, **TOL[dtype])


# -- the equations by hand ------------------------------------------------------------------------------

def _np_weights(model, suffix="_l0"):
    get = {n: p.detach().numpy().astype(np.float64) for n, p in model.named_parameters()}
    zero = np.zeros(model.weight_hh_l0.shape[0] if suffix else model.weight_hh.shape[0])
    return (get[f"weight_ih{suffix}"], get[f"weight_hh{suffix}"], get.get(f"bias_ih{suffix}", zero),
            get.get(f"bias_hh{suffix}", zero))


def _np_step(kind, x, h, c, w_ih, w_hh, b_ih, b_hh):
    gi, gh = x @ w_ih.T + b_ih, h @ w_hh.T + b_hh
    if kind == "RNN":
        return np.tanh(gi + gh), None
    if kind == "LSTM":
        i, f, g, o = np.split(gi + gh, 4, axis=-1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        return sig(o) * np.tanh(c), c
    (ir, iz, in_), (hr, hz, hn) = np.split(gi, 3, axis=-1), np.split(gh, 3, axis=-1)
    r, z = sig(ir + hr), sig(iz + hz)
    n = np.tanh(in_ + r * hn)
    return (1 - z) * n + z * h, None


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_single_layer_follows_the_equations(kind):
    model = getattr(nn, kind)(I, H).double()
    x, h0 = randn(6, 2, I), randn(1, 2, H)
    c0 = randn(1, 2, H)
    hx = (tg.tensor(h0), tg.tensor(c0)) if kind == "LSTM" else tg.tensor(h0)
    out, hidden = model(tg.tensor(x), hx)
    h, c = h0[0], c0[0]
    expected = []
    for t in range(6):
        h, c = _np_step(kind, x[t], h, c, *_np_weights(model))
        expected.append(h)
    np.testing.assert_allclose(out.detach().numpy(), np.stack(expected), rtol=1e-12)
    h_n = hidden[0] if kind == "LSTM" else hidden
    np.testing.assert_allclose(h_n.detach().numpy()[0], h, rtol=1e-12)
    if kind == "LSTM":
        np.testing.assert_allclose(hidden[1].detach().numpy()[0], c, rtol=1e-12)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_cells_follow_the_equations(kind):
    cell = getattr(nn, f"{kind}Cell")(I, H).double()
    x, h, c = randn(2, I), randn(2, H), randn(2, H)
    out = cell(tg.tensor(x), (tg.tensor(h), tg.tensor(c)) if kind == "LSTM" else tg.tensor(h))
    eh, ec = _np_step(kind, x, h, c, *_np_weights(cell, suffix=""))
    if kind == "LSTM":
        np.testing.assert_allclose(out[0].detach().numpy(), eh, rtol=1e-12)
        np.testing.assert_allclose(out[1].detach().numpy(), ec, rtol=1e-12)
    else:
        np.testing.assert_allclose(out.detach().numpy(), eh, rtol=1e-12)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_bidirectional_reverse_direction_reads_the_sequence_backwards(kind):
    bi = getattr(nn, kind)(I, H, bidirectional=True).double()
    back = getattr(nn, kind)(I, H).double()
    with tg.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(back, f"{name}_l0").copy_(getattr(bi, f"{name}_l0_reverse"))
    x = tg.tensor(randn(5, 2, I))
    out, _ = bi(x)
    rev, _ = back(x.flip(0))
    np.testing.assert_allclose(out.detach().numpy()[:, :, H:], rev.flip(0).detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_layouts_and_default_state_agree(kind):
    model = getattr(nn, kind)(I, H, num_layers=2, bidirectional=True).double()
    x = tg.tensor(randn(5, 3, I))
    out, hidden = model(x)
    zeros = tg.zeros(4, 3, H, dtype=tg.float64)
    out0, _ = model(x, (zeros, zeros) if kind == "LSTM" else zeros)
    np.testing.assert_array_equal(out.detach().numpy(), out0.detach().numpy())
    assert out.shape == (5, 3, 2 * H)
    first = getattr(nn, kind)(I, H, num_layers=2, bidirectional=True, batch_first=True).double()
    first.load_state_dict(model.state_dict())
    out_bf, _ = first(x.transpose(0, 1))
    np.testing.assert_allclose(out_bf.transpose(0, 1).detach().numpy(), out.detach().numpy(), rtol=1e-12)
    single, hidden1 = model(x[:, 1])  # unbatched: (T, I)
    np.testing.assert_allclose(single.detach().numpy(), out.detach().numpy()[:, 1], rtol=1e-12)
    h = hidden1[0] if kind == "LSTM" else hidden1
    assert h.shape == (4, H)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_gradients_match_finite_differences(kind):
    """gradcheck over the input, the initial state(s) and weights of both layers and both
    directions of a two-layer bidirectional recurrence (the functional form the modules call);
    the oracle tests compare every weight's gradient with PyTorch's."""
    model = getattr(nn, kind)(2, 2, num_layers=2, bidirectional=True).double()
    checked = ("weight_hh_l0", "bias_ih_l0_reverse", "weight_ih_l1_reverse")
    fixed = {n: p.detach() for n, p in model.named_parameters()}
    mode = model.mode

    def f(x, h0, c0, *ws):
        by_name = {**fixed, **dict(zip(checked, ws))}
        weights = [tuple(by_name.get(n.format(k, s)) for n in ("weight_ih_l{}{}", "weight_hh_l{}{}", "bias_ih_l{}{}",
                                                                "bias_hh_l{}{}", "weight_hr_l{}{}"))
                   for k in range(2) for s in ("", "_reverse")]
        out, hidden = RNN_F.recurrent(mode, x, (h0, c0) if mode == "LSTM" else h0, weights, 2, True, 0.0, False)
        return (out,) + (hidden if mode == "LSTM" else (hidden,))
    leaves = [tg.tensor(randn(2, 1, 2)), tg.tensor(randn(4, 1, 2)), tg.tensor(randn(4, 1, 2))]
    inputs = tuple(v.requires_grad_() for v in leaves + [fixed[n].clone() for n in checked])
    if kind == "LSTM":
        assert tg.autograd.gradcheck(f, inputs)
    else:
        assert tg.autograd.gradcheck(lambda x, h0, *ws: f(x, h0, None, *ws), inputs[:2] + inputs[3:])


# -- parameters and initialisation -------------------------------------------------------------------------

def test_parameter_names_shapes_and_init():
    lstm = nn.LSTM(I, H, num_layers=2, bidirectional=True)
    shapes = {n: tuple(p.shape) for n, p in lstm.named_parameters()}
    assert list(shapes)[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l0_reverse"]
    assert shapes["weight_ih_l0"] == (4 * H, I) and shapes["weight_hh_l0"] == (4 * H, H)
    assert shapes["weight_ih_l1_reverse"] == (4 * H, 2 * H) and shapes["bias_hh_l1"] == (4 * H,)
    assert len(shapes) == 16
    bound = 1 / math.sqrt(H)
    values = np.concatenate([p.detach().numpy().ravel() for p in lstm.parameters()])
    assert np.abs(values).max() <= bound and np.abs(values).max() > 0.8 * bound
    gru = nn.GRU(I, H, bias=False)
    assert [n for n, _ in gru.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]
    assert gru.weight_ih_l0.shape == (3 * H, I)
    proj = nn.LSTM(I, H, proj_size=2)
    assert proj.weight_hr_l0.shape == (2, H) and proj.weight_hh_l0.shape == (4 * H, 2)
    cell = nn.GRUCell(I, H)
    assert [(n, tuple(p.shape)) for n, p in cell.named_parameters()] == [
        ("weight_ih", (3 * H, I)), ("weight_hh", (3 * H, H)), ("bias_ih", (3 * H,)), ("bias_hh", (3 * H,))]
    assert nn.RNNCell(I, H, bias=False).bias_ih is None
    assert nn.RNN(I, H, 2, "relu").nonlinearity == "relu" and nn.RNN(I, H, 2, "relu").num_layers == 2


def test_reprs_and_dtype():
    assert repr(nn.LSTM(4, 3, 2, batch_first=True, dropout=0.2, bidirectional=True, proj_size=2)) == \
        "LSTM(4, 3, proj_size=2, num_layers=2, batch_first=True, dropout=0.2, bidirectional=True)"
    assert repr(nn.RNN(4, 3, nonlinearity="relu", bias=False)) == "RNN(4, 3, bias=False)"
    assert repr(nn.RNNCell(4, 3, bias=False, nonlinearity="relu")) == "RNNCell(4, 3, bias=False, nonlinearity=relu)"
    model = nn.GRU(2, 3, dtype=tg.float64)
    assert model.weight_hh_l0.dtype == tg.float64
    out, h = model(tg.randn(4, 1, 2, dtype=tg.float64))
    assert out.dtype == tg.float64 and h.shape == (1, 1, 3)
    assert model._flat_weights[0] is model.weight_ih_l0
    model.flatten_parameters()


def test_dropout_between_layers_is_random_in_training_only():
    model = nn.GRU(I, H, num_layers=2, dropout=0.5).double()
    x = tg.tensor(randn(5, 2, I))
    a, b = model(x)[0], model(x)[0]
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    model.eval()
    np.testing.assert_array_equal(model(x)[0].detach().numpy(), model(x)[0].detach().numpy())
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1, but got "
                                         "dropout=0.5 and num_layers=1"):
        nn.LSTM(I, H, dropout=0.5)


# -- errors -----------------------------------------------------------------------------------------------------

ERRORS = [  # (id, call(lib), exception type, message); {dt} is the library's dtype prefix
    ("dropout", lambda L: L.nn.LSTM(4, 3, dropout=1.5), ValueError,
     "dropout should be a number in range [0, 1] representing the probability of an element being zeroed"),
    ("input-type", lambda L: L.nn.LSTM(4.0, 3), TypeError, "input_size should be of type int, got: float"),
    ("bias-type", lambda L: L.nn.GRU(4, 3, bias=1), TypeError, "bias should be of type bool, got: int"),
    ("hidden-zero", lambda L: L.nn.LSTM(4, 0), ValueError, "hidden_size must be greater than zero"),
    ("layers", lambda L: L.nn.RNN(4, 3, num_layers=0), ValueError, "num_layers must be greater than zero"),
    ("nonlinearity", lambda L: L.nn.RNN(4, 3, nonlinearity="sigmoid"), ValueError,
     "Unknown nonlinearity 'sigmoid'. Select from 'tanh' or 'relu'."),
    ("proj-gru", lambda L: L.nn.GRU(4, 3, proj_size=2), ValueError,
     "proj_size argument is only supported for LSTM, not RNN or GRU"),
    ("proj-size", lambda L: L.nn.LSTM(4, 3, proj_size=3), ValueError, "proj_size has to be smaller than hidden_size"),
    ("input-size", lambda L: L.nn.RNN(4, 3)(L.randn(5, 2, 6)), RuntimeError,
     "input.size(-1) must be equal to input_size. Expected 4, got 6"),
    ("hidden-size", lambda L: L.nn.RNN(4, 3)(L.randn(5, 2, 4), L.randn(1, 3, 3)), RuntimeError,
     "Expected hidden size (1, 2, 3), got [1, 3, 3]"),
    ("hx-dims", lambda L: L.nn.GRU(4, 3)(L.randn(5, 2, 4), L.randn(3, 3)), RuntimeError,
     "For batched 3-D input, hx should also be 3-D but got 2-D tensor"),
    ("hx-unbatched", lambda L: L.nn.RNN(4, 3)(L.randn(5, 4), L.randn(1, 1, 3)), RuntimeError,
     "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"),
    ("input-dtype", lambda L: L.nn.RNN(4, 3)(L.randn(5, 2, 4, dtype=L.float64)), ValueError,
     "RNN input dtype ({dt}.float64) does not match weight dtype ({dt}.float32). Convert input: "
     "input.to({dt}.float32), or convert model: model.to({dt}.float64)"),
    ("input-4d", lambda L: L.nn.RNN(4, 3)(L.randn(5, 2, 2, 4)), ValueError,
     "RNN: Expected input to be 2D or 3D, got 4D tensor instead"),
    ("gru-4d", lambda L: L.nn.GRU(4, 3)(L.randn(5, 2, 2, 4)), ValueError,
     "GRU: Expected input to be 2D or 3D, got 4D instead"),
    ("empty-sequence", lambda L: L.nn.LSTM(4, 3)(L.randn(0, 2, 4)), RuntimeError,
     "Expected sequence length to be larger than 0 in RNN"),
    ("lstm-cx", lambda L: L.nn.LSTM(4, 3, 2)(L.randn(5, 2, 4), (L.randn(2, 2, 3), L.randn(2, 3))), RuntimeError,
     "For batched 3-D input, hx and cx should also be 3-D but got (3-D, 2-D) tensors"),
    ("lstm-c-size", lambda L: L.nn.LSTM(4, 3, 2)(L.randn(5, 2, 4), (L.randn(2, 2, 3), L.randn(2, 3, 3))),
     RuntimeError, "Expected hidden[1] size (2, 2, 3), got [2, 3, 3]"),
    ("lstm-h-size", lambda L: L.nn.LSTM(4, 3, 2)(L.randn(5, 2, 4), (L.randn(1, 2, 3), L.randn(2, 2, 3))),
     RuntimeError, "Expected hidden[0] size (2, 2, 3), got [1, 2, 3]"),
    ("cell-input", lambda L: L.nn.RNNCell(4, 3)(L.randn(2, 5)), RuntimeError,
     "input has inconsistent input_size: got 5 expected 4"),
    ("cell-batch", lambda L: L.nn.RNNCell(4, 3)(L.randn(2, 4), L.randn(3, 3)), RuntimeError,
     "Input batch size 2 doesn't match hidden0 batch size 3"),
    ("cell-hidden", lambda L: L.nn.GRUCell(4, 3)(L.randn(2, 4), L.randn(2, 5)), RuntimeError,
     "hidden0 has inconsistent hidden_size: got 5, expected 3"),
    ("lstmcell-c", lambda L: L.nn.LSTMCell(4, 3)(L.randn(2, 4), (L.randn(2, 3), L.randn(3, 3))), RuntimeError,
     "Input batch size 2 doesn't match hidden1 batch size 3"),
    ("cell-3d", lambda L: L.nn.GRUCell(4, 3)(L.randn(2, 3, 4)), ValueError,
     "GRUCell: Expected input to be 1D or 2D, got 3D instead"),
    ("lstmcell-hx-3d", lambda L: L.nn.LSTMCell(4, 3)(L.randn(2, 4), (L.randn(2, 3), L.randn(1, 2, 3))), ValueError,
     "LSTMCell: Expected hx[1] to be 1D or 2D, got 3D instead"),
    ("cell-dtype", lambda L: L.nn.RNNCell(4, 3)(L.randn(2, 4, dtype=L.float64)), RuntimeError,
     "mat1 and mat2 must have the same dtype, but got Double and Float"),
    ("cell-nonlinearity", lambda L: L.nn.RNNCell(4, 3, nonlinearity="foo")(L.randn(2, 4)), RuntimeError,
     "Unknown nonlinearity: foo"),
]


@pytest.mark.parametrize("call,exc,message", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors(call, exc, message):
    with pytest.raises(exc) as info:
        call(tg)
    assert str(info.value) == message.format(dt="tracegrad")


@pytest.mark.torch
@pytest.mark.parametrize("call,exc,message", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_are_torchs(call, exc, message):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)  # oneDNN threads spin on a busy machine: 100x slower
    with pytest.raises(exc) as info:
        call(torch)
    assert str(info.value) == message.format(dt="torch")
