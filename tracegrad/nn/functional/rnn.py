"""The recurrences behind ``nn.RNN`` / ``nn.LSTM`` / ``nn.GRU`` and their cells, composed
of rule-table primitives (addmm, sigmoid, tanh, chunk, stack), so every path can
differentiate them.

A layer projects its whole input sequence with one ``addmm`` over (time x batch) rows --
with the hidden bias folded in wherever the cell allows -- and loops over time only for
the recurrent product. The per-step slices come from one ``unbind`` and the outputs are
gathered by one ``stack``, so backward does one scatter per layer, not one per step.
Gate order and formulas are PyTorch's: LSTM (i, f, g, o); GRU (r, z, n) with
``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))`` and ``h' = (1 - z) n + z h``.

Nothing here is public (``torch.nn.functional`` has no recurrent functions); the modules
in :mod:`tracegrad.nn.modules.rnn` check arguments and call these.
"""
from ...backend import (
    cpu as host,  # host-side (NumPy) arithmetic, never on device arrays
)
from ...ops.activation import relu, sigmoid
from ...ops.linalg import addmm
from ...ops.pointwise import tanh, where
from ...ops.shape import cat, stack
from ...runtime.creation import tensor
from .misc import dropout as _dropout

__all__ = []


# -- one time step: ``step(projected input, state) -> new state``, h first ---------------------

def _rnn_step(w_hh_t, nonlinearity):
    act = tanh if nonlinearity == "tanh" else relu

    def step(xw, state):
        return (act(addmm(xw, state[0], w_hh_t)),)
    return step


def _lstm_step(w_hh_t, w_hr_t):
    def step(xw, state):
        h, c = state
        i, f, g, o = addmm(xw, h, w_hh_t).chunk(4, 1)
        c = sigmoid(f) * c + sigmoid(i) * tanh(g)
        h = sigmoid(o) * tanh(c)
        return (h if w_hr_t is None else h.mm(w_hr_t), c)
    return step


def _gru_step(w_hh_t, b_hh_n):
    """``xw`` is the pair (r and z rows with both biases, n rows with b_in only)."""
    hidden = w_hh_t.shape[1] // 3
    w_rz, w_n = w_hh_t.split([2 * hidden, hidden], 1)

    def step(xw, state):
        xrz, xn = xw
        h = state[0]
        r, z = sigmoid(addmm(xrz, h, w_rz)).chunk(2, 1)
        hn = h.mm(w_n) if b_hh_n is None else addmm(b_hh_n, h, w_n)
        n = tanh(xn + r * hn)
        return ((h - n) * z + n,)
    return step


# -- input projections: for every step at once (the sequence) or for one (a cell) ---------------

def _affine(x, w, b):
    """``x @ w.T + b`` for 2-d ``x`` (one addmm node)."""
    return x.mm(w.t()) if b is None else addmm(b, x, w.t())


def _both(b_ih, b_hh):
    return None if b_ih is None else b_ih + b_hh


def _projected(x, w_ih, bias):
    """``x @ w_ih.T + bias`` for a (T, B, I) sequence, as a (T, B, G) tensor."""
    t, b, i = x.shape
    return _affine(x.reshape(t * b, i), w_ih, bias).reshape(t, b, w_ih.shape[0])


def _gru_split(xw, b_hh):
    """Projected GRU input -> (r/z rows plus their hidden bias, n rows), along the last dim."""
    hidden = xw.shape[-1] // 3
    xrz, xn = xw.split([2 * hidden, hidden], xw.ndim - 1)
    return (xrz if b_hh is None else xrz + b_hh[:2 * hidden]), xn


def _prepare(mode, x, weights):
    """(per-step inputs, step function) for one layer and direction over sequence ``x``."""
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    if mode == "GRU":
        xrz, xn = _gru_split(_projected(x, w_ih, b_ih), b_hh)
        hidden = w_hh.shape[1]
        b_hn = None if b_hh is None else b_hh[2 * hidden:]
        return list(zip(xrz.unbind(0), xn.unbind(0))), _gru_step(w_hh.t(), b_hn)
    inputs = _projected(x, w_ih, _both(b_ih, b_hh)).unbind(0)
    if mode == "LSTM":
        return inputs, _lstm_step(w_hh.t(), None if w_hr is None else w_hr.t())
    return inputs, _rnn_step(w_hh.t(), "tanh" if mode == "RNN_TANH" else "relu")


def _scan(step, inputs, state, reverse, running=None):
    """Run ``step`` over ``inputs`` (backwards in time if ``reverse``): the hidden states
    stacked in time order, and the final state. ``running[t]`` (packed batches: a (B, 1)
    bool mask of the sequences still running at step t) freezes the state of the others,
    so each sequence ends with the state of its own last step -- and, run backwards,
    starts from the initial state at its own last step."""
    hs = [None] * len(inputs)
    for t in (range(len(inputs) - 1, -1, -1) if reverse else range(len(inputs))):
        new = step(inputs[t], state)
        state = new if running is None else tuple(where(running[t], n, s) for n, s in zip(new, state))
        hs[t] = state[0]
    return stack(hs, 0), state


def _running(batch_sizes, batch, device):
    """Per step, which rows of a packed batch (sorted by decreasing length) still run."""
    return [tensor(host.arange(batch)[:, None] < n, device=device) for n in batch_sizes]


def recurrent(mode, input, hx, weights, num_layers, bidirectional, dropout, training, batch_sizes=None):
    """A whole multi-layer recurrence over a time-major (T, B, I) ``input``.

    ``hx`` is the (layers * directions, B, H) initial state, or the pair (h0, c0) for an
    LSTM; ``weights`` holds one tuple (w_ih, w_hh, b_ih, b_hh, w_hr) per layer and
    direction (None for absent ones); ``batch_sizes`` (a NumPy array, for a padded packed
    batch) says how many sequences run at each step. Returns (output (T, B, D * H),
    h_n or (h_n, c_n)); outputs past a sequence's end are meaningless."""
    directions = 2 if bidirectional else 1
    lstm = mode == "LSTM"
    h0 = (hx[0] if lstm else hx).unbind(0)
    c0 = hx[1].unbind(0) if lstm else None
    finals = []
    x = input
    running = None if batch_sizes is None else _running(batch_sizes, input.shape[1], input.device)
    for layer in range(num_layers):
        outs = []
        for d in range(directions):
            k = layer * directions + d
            inputs, step = _prepare(mode, x, weights[k])
            out, state = _scan(step, inputs, (h0[k], c0[k]) if lstm else (h0[k],), reverse=d == 1,
                                running=running)
            outs.append(out)
            finals.append(state)
        x = outs[0] if directions == 1 else cat(outs, 2)
        if dropout and training and layer < num_layers - 1:
            x = _dropout(x, dropout, True)
    h_n = stack([s[0] for s in finals], 0)
    return x, ((h_n, stack([s[1] for s in finals], 0)) if lstm else h_n)


# -- cells: one step on a (B, I) input ----------------------------------------------------------

def rnn_cell(input, hx, w_ih, w_hh, b_ih, b_hh, nonlinearity):
    return _rnn_step(w_hh.t(), nonlinearity)(_affine(input, w_ih, _both(b_ih, b_hh)), (hx,))[0]


def lstm_cell(input, hx, w_ih, w_hh, b_ih, b_hh):
    return _lstm_step(w_hh.t(), None)(_affine(input, w_ih, _both(b_ih, b_hh)), hx)


def gru_cell(input, hx, w_ih, w_hh, b_ih, b_hh):
    hidden = w_hh.shape[1]
    xw = _gru_split(_affine(input, w_ih, b_ih), b_hh)
    return _gru_step(w_hh.t(), None if b_hh is None else b_hh[2 * hidden:])(xw, (hx,))[0]
