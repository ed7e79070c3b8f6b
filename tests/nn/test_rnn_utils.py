"""nn.utils.rnn (packing, padding, their gradients and errors) and recurrent layers on a
PackedSequence: checked against hand-made layouts and against running each sequence
alone; and (marked ``torch``) against PyTorch, outputs, states and every gradient."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.nn.utils.rnn import (
    PackedSequence,
    invert_permutation,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)

from ._oracle import assert_close, copy_weights

RNG = np.random.default_rng(5)


def randn(*shape):
    return RNG.standard_normal(shape)


# -- without torch -----------------------------------------------------------------------------------

def test_pack_padded_sequence_layout():
    x = np.arange(4 * 3, dtype=np.float64).reshape(4, 3)  # (T, B): value = 3 t + b
    packed = pack_padded_sequence(tg.tensor(x), [4, 2, 1])
    assert packed.batch_sizes.tolist() == [3, 2, 1, 1] and packed.batch_sizes.dtype == tg.int64
    assert packed.data.tolist() == [0, 1, 2, 3, 4, 6, 9]
    assert packed.sorted_indices is None and packed.unsorted_indices is None
    first = pack_padded_sequence(tg.tensor(x.T.copy()), tg.tensor([4, 2, 1]), batch_first=True)
    assert first.data.tolist() == packed.data.tolist()


def test_unsorted_lengths_are_sorted_and_restored():
    x = randn(5, 3, 2)
    packed = pack_padded_sequence(tg.tensor(x), [2, 5, 3], enforce_sorted=False)
    assert packed.sorted_indices.tolist() == [1, 2, 0] and packed.unsorted_indices.tolist() == [2, 0, 1]
    padded, lengths = pad_packed_sequence(packed)
    assert lengths.tolist() == [2, 5, 3]
    for b, n in enumerate([2, 5, 3]):
        np.testing.assert_array_equal(padded.numpy()[:n, b], x[:n, b])
        assert np.all(padded.numpy()[n:, b] == 0)


def test_pad_packed_sequence_options_and_gradient():
    x = tg.tensor(randn(3, 2, 4), requires_grad=True)
    packed = pack_padded_sequence(x, [3, 1])
    padded, lengths = pad_packed_sequence(packed, batch_first=True, padding_value=-7.0, total_length=5)
    assert padded.shape == (2, 5, 4) and lengths.tolist() == [3, 1]
    assert np.all(padded.detach().numpy()[1, 1:] == -7.0)
    padded.sum().backward()
    expected = np.ones((3, 2, 4))
    expected[1:, 1] = 0  # padding positions of the input take no part
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_pad_sequence_both_sides_and_layouts():
    seqs = [tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0, 5.0]), tg.tensor([6.0])]
    assert pad_sequence(seqs, batch_first=True).tolist() == [[1, 2, 0], [3, 4, 5], [6, 0, 0]]
    assert pad_sequence(seqs, batch_first=True, padding_value=9, padding_side="left").tolist() == [
        [9, 1, 2], [3, 4, 5], [9, 9, 6]]
    assert pad_sequence(seqs).tolist() == [[1, 3, 6], [2, 4, 0], [0, 5, 0]]
    assert pad_sequence(tg.ones(2, 3)).shape == (3, 2)  # a tensor is unbound along dim 0
    assert pad_sequence([tg.ones(2, dtype=tg.int64), tg.ones(3)]).dtype == tg.int64  # the first's dtype


def test_pad_sequence_gradient():
    seqs = [tg.tensor(randn(n, 2), requires_grad=True) for n in (2, 4)]
    weights = randn(4, 2, 2)
    (pad_sequence(seqs) * tg.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(seqs[0].grad.numpy(), weights[:2, 0])
    np.testing.assert_array_equal(seqs[1].grad.numpy(), weights[:, 1])


def test_round_trips():
    seqs = [tg.tensor(randn(n, 3)) for n in (2, 5, 1, 3)]
    back = unpack_sequence(pack_sequence(seqs, enforce_sorted=False))
    for a, b in zip(seqs, back):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    padded = pad_sequence(seqs, batch_first=True)
    for a, b in zip(seqs, unpad_sequence(padded, tg.tensor([2, 5, 1, 3]), batch_first=True)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    time_major = pad_sequence(seqs)
    cut = unpad_sequence(time_major, tg.tensor([2, 5, 1, 3]))
    assert [c.shape[0] for c in cut] == [2, 5, 1, 3]
    for a, b in zip(seqs, cut):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_packed_sequence_is_a_named_tuple_with_conversions():
    packed = pack_sequence([tg.ones(2), tg.ones(1)])
    data, batch_sizes, _, _ = packed
    assert isinstance(packed, tuple) and data is packed.data
    assert repr(packed) == ("PackedSequence(data=tensor([1., 1., 1.]), batch_sizes=tensor([2, 1]), "
                            "sorted_indices=None, unsorted_indices=None)")
    assert packed.double().data.dtype == tg.float64 and packed.double().batch_sizes is batch_sizes
    assert packed.to(tg.float32) is packed and not packed.is_cuda
    assert invert_permutation(tg.tensor([2, 0, 1])).tolist() == [1, 2, 0] and invert_permutation(None) is None
    rebuilt = PackedSequence((data, batch_sizes))
    assert rebuilt.batch_sizes is batch_sizes


@pytest.mark.parametrize("call,error,message", [
    (lambda: pack_padded_sequence(tg.ones(4, 3), [2, 3, 1]), RuntimeError,
     "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
     "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if you do "
     "not need ONNX exportability."),
    (lambda: pack_padded_sequence(tg.ones(4, 3), [3, 2, 0]), RuntimeError,
     "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0"),
    (lambda: pack_padded_sequence(tg.ones(4, 3), [3, 2]), RuntimeError,
     "Expected `len(lengths)` to be equal to batch_size, but got 2 (batch_size=3)"),
    (lambda: pad_packed_sequence(pack_sequence([tg.ones(3), tg.ones(1)]), total_length=2), ValueError,
     "Expected total_length to be at least the length of the longest sequence in input, but got total_length=2 "
     "and max sequence length being 3"),
    (lambda: pack_padded_sequence(tg.ones(4, 3), tg.tensor([[3], [2], [1]])), RuntimeError,
     "'lengths' argument should be a 1D CPU int64 tensor, but got 2D cpu Long tensor"),
    (lambda: pack_padded_sequence(tg.ones(4, 3), [[3], [2], [1]], enforce_sorted=False), IndexError,
     "index_select(): Index is supposed to be a vector"),
    (lambda: pad_sequence([]), RuntimeError, "received an empty list of sequences"),
    (lambda: pad_sequence([tg.ones(2)], padding_side="up"), RuntimeError,
     "Expected padding_side to be one of left or right, but got up."),
    (lambda: pad_sequence(5), RuntimeError,
     "pad_sequence: Expected iterable for input sequences, but got arg of type: <class 'int'>"),
    (lambda: pad_sequence([tg.ones(2, 3), tg.ones(3, 2)]), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1"),
])
def test_errors(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert str(info.value) == message


@pytest.mark.parametrize("mode,kw", [("RNN", {}), ("GRU", {"num_layers": 2}), ("LSTM", {"bidirectional": True}),
                                     ("LSTM", {"proj_size": 2, "num_layers": 2})])
def test_packed_input_equals_running_each_sequence_alone(mode, kw):
    model = getattr(nn, mode)(3, 4, **kw).double()
    lengths = [2, 5, 3]
    seqs = [tg.tensor(randn(n, 3)) for n in lengths]
    out, state = model(pack_sequence(seqs, enforce_sorted=False))
    assert isinstance(out, PackedSequence)
    h = state[0] if mode == "LSTM" else state
    for b, seq in enumerate(seqs):
        alone_out, alone_state = model(seq)  # unbatched
        alone_h = alone_state[0] if mode == "LSTM" else alone_state
        np.testing.assert_allclose(unpack_sequence(out)[b].detach().numpy(), alone_out.detach().numpy(),
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(h[:, b].detach().numpy(), alone_h.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_packed_input_gradcheck():
    model = nn.GRU(2, 3, bidirectional=True).double()

    def f(x):
        out, h = model(pack_padded_sequence(x, [3, 1, 2], enforce_sorted=False))
        return out.data, h
    assert tg.autograd.gradcheck(f, (tg.tensor(randn(3, 3, 2), requires_grad=True),))


def test_packed_input_errors():
    packed = pack_sequence([tg.ones(3, 2), tg.ones(2, 2)])
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 2"):
        nn.GRU(3, 3)(packed)
    with pytest.raises(RuntimeError, match="input must have 2 dimensions, got 3"):
        nn.GRU(2, 3)(PackedSequence(tg.ones(5, 1, 2), packed.batch_sizes))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 3\), got \[1, 3, 3\]"):
        nn.RNN(2, 3)(packed, tg.zeros(1, 3, 3))


# -- against PyTorch ---------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths,enforce_sorted", [([5, 3, 2], True), ([2, 5, 3], False)])
def test_packing_matches_torch(batch_first, lengths, enforce_sorted):
    import torch
    import torch.nn.utils.rnn as R
    x = randn(3, 5, 2) if batch_first else randn(5, 3, 2)
    tx, ox = torch.tensor(x, requires_grad=True), tg.tensor(x, requires_grad=True)
    tp = R.pack_padded_sequence(tx, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    op = pack_padded_sequence(ox, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    assert_close(op.data, tp.data, what="data")
    assert op.batch_sizes.tolist() == tp.batch_sizes.tolist()
    for mine, theirs in ((op.sorted_indices, tp.sorted_indices), (op.unsorted_indices, tp.unsorted_indices)):
        assert (mine is None and theirs is None) or mine.tolist() == theirs.tolist()
    t_pad, t_len = R.pad_packed_sequence(tp, batch_first=batch_first, padding_value=0.5, total_length=6)
    o_pad, o_len = pad_packed_sequence(op, batch_first=batch_first, padding_value=0.5, total_length=6)
    assert_close(o_pad, t_pad, what="padded")
    assert o_len.tolist() == t_len.tolist()
    g = randn(*t_pad.shape)
    t_pad.backward(torch.tensor(g))
    o_pad.backward(tg.tensor(g))
    assert_close(ox.grad, tx.grad, what="input grad")


@pytest.mark.torch
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_matches_torch(batch_first, side):
    import torch
    import torch.nn.utils.rnn as R
    arrays = [randn(n, 3) for n in (2, 4, 1)]
    t_seqs = [torch.tensor(a, requires_grad=True) for a in arrays]
    o_seqs = [tg.tensor(a, requires_grad=True) for a in arrays]
    theirs = R.pad_sequence(t_seqs, batch_first=batch_first, padding_value=2.0, padding_side=side)
    ours = pad_sequence(o_seqs, batch_first=batch_first, padding_value=2.0, padding_side=side)
    assert_close(ours, theirs, what="padded")
    g = randn(*theirs.shape)
    theirs.backward(torch.tensor(g))
    ours.backward(tg.tensor(g))
    for a, b in zip(o_seqs, t_seqs):
        assert_close(a.grad, b.grad, what="sequence grad")


RNN_CASES = [("RNN", {}), ("RNN", {"nonlinearity": "relu", "batch_first": True}),
             ("GRU", {"num_layers": 2, "bidirectional": True}), ("LSTM", {"num_layers": 2, "bidirectional": True}),
             ("LSTM", {"proj_size": 2, "bidirectional": True, "batch_first": True})]


@pytest.mark.torch
@pytest.mark.parametrize("mode,kw", RNN_CASES)
@pytest.mark.parametrize("initial_state", [False, True])
def test_recurrent_layers_on_packed_input_match_torch(mode, kw, initial_state):
    import torch
    import torch.nn.utils.rnn as R
    theirs = getattr(torch.nn, mode)(3, 4, **kw).double()
    ours = getattr(nn, mode)(3, 4, **kw).double()
    copy_weights(theirs, ours)
    batch_first = kw.get("batch_first", False)
    lengths = [2, 5, 3]
    x = randn(3, 5, 3) if batch_first else randn(5, 3, 3)
    tx, ox = torch.tensor(x, requires_grad=True), tg.tensor(x, requires_grad=True)
    tp = R.pack_padded_sequence(tx, lengths, batch_first=batch_first, enforce_sorted=False)
    op = pack_padded_sequence(ox, lengths, batch_first=batch_first, enforce_sorted=False)
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    states_t, states_o = [], []
    if initial_state:
        shapes = [(layers, 3, kw.get("proj_size") or 4)] + ([(layers, 3, 4)] if mode == "LSTM" else [])
        for s in shapes:
            a = randn(*s)
            states_t.append(torch.tensor(a, requires_grad=True))
            states_o.append(tg.tensor(a, requires_grad=True))
    hx_t = (tuple(states_t) if mode == "LSTM" else states_t[0]) if initial_state else None
    hx_o = (tuple(states_o) if mode == "LSTM" else states_o[0]) if initial_state else None
    out_t, final_t = theirs(tp, hx_t)
    out_o, final_o = ours(op, hx_o)
    assert isinstance(out_o, PackedSequence) and out_o.batch_sizes.tolist() == out_t.batch_sizes.tolist()
    assert out_o.unsorted_indices.tolist() == out_t.unsorted_indices.tolist()
    assert_close(out_o.data, out_t.data, what="output")
    finals_t = final_t if mode == "LSTM" else (final_t,)
    finals_o = final_o if mode == "LSTM" else (final_o,)
    loss_t, loss_o = (out_t.data ** 2).sum(), (out_o.data ** 2).sum()
    for k, (a, b) in enumerate(zip(finals_o, finals_t)):
        assert_close(a, b, what=f"final state {k}")
        loss_t = loss_t + (b ** 3).sum()
        loss_o = loss_o + (a ** 3).sum()
    loss_t.backward()
    loss_o.backward()
    assert_close(ox.grad, tx.grad, what="input grad")
    for a, b in zip(states_o, states_t):
        assert_close(a.grad, b.grad, what="initial state grad")
    t_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p.grad, t_params[name].grad, what=f"{name}.grad")
