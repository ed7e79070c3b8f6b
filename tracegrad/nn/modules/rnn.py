"""Recurrent layers ``RNN``, ``LSTM``, ``GRU`` and their single-step cells, with PyTorch's
parameter names, shapes, initialisation, argument checks and messages.

The modules check arguments and shape the states (unbatched inputs, ``batch_first``,
absent initial states, packed sequences); the recurrences themselves are in
:mod:`..functional.rnn`. A :class:`PackedSequence` input is laid out padded and run with
the finished sequences' states frozen; its output is packed the same way.
"""
import math
import numbers
import warnings

from ...runtime.creation import empty, zeros
from .. import init
from ..functional import rnn as R
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, lengths_array, packed_rows, padded_steps
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _check_type(name, value, kind):
    if not isinstance(value, kind):
        raise TypeError(f"{name} should be of type {kind.__name__}, got: {type(value).__name__}")


class RNNBase(Module):
    """The parameters and checks shared by RNN, LSTM and GRU. For layer ``k`` and direction
    suffix ``s`` ('' or '_reverse'): ``weight_ih_l{k}{s}`` (gates * hidden, input),
    ``weight_hh_l{k}{s}`` (gates * hidden, hidden), the two biases, and for an LSTM with
    ``proj_size`` > 0 ``weight_hr_l{k}{s}`` (proj_size, hidden); all start uniform in
    +-1/sqrt(hidden_size)."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=3)
        _check_type("bias", bias, bool)
        _check_type("batch_first", batch_first, bool)
        _check_type("input_size", input_size, int)
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        _check_type("hidden_size", hidden_size, int)
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        directions = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * directions
            for direction in range(directions):
                shapes = [("weight_ih_l{}{}", (gate_size, layer_input)), ("weight_hh_l{}{}", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr_l{}{}", (proj_size, hidden_size))]
                names = [name.format(layer, "_reverse" if direction == 1 else "") for name, _ in shapes]
                for name, (_, shape) in zip(names, shapes):
                    setattr(self, name, Parameter(empty(shape, device=device, dtype=dtype)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    @property
    def _flat_weights(self):
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self):
        """A no-op: the weights are never copied into one cuDNN buffer here."""

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # -- checks (PyTorch's names and messages) -----------------------------------------------
    def check_input(self, input, batch_sizes=None):
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). Convert "
                             f"input: input.to({w.dtype}), or convert model: model.to({input.dtype})")
        want = 2 if batch_sizes is not None else 3
        if input.dim() != want:
            raise RuntimeError(f"input must have {want} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")

    def _mini_batch(self, input, batch_sizes):
        if batch_sizes is not None:
            return int(batch_sizes[0])
        return input.size(0) if self.batch_first else input.size(1)

    def get_expected_hidden_size(self, input, batch_sizes=None):
        mini_batch = self._mini_batch(input, batch_sizes)
        directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * directions, mini_batch, size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != expected_hidden_size:
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes=None):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        """The states reordered along the batch dim (packed batches are sorted by length)."""
        return hx if permutation is None else hx.index_select(1, permutation)

    # -- running -------------------------------------------------------------------------------
    def _batched(self, input, name, suffix):
        """(input with a batch dim, whether it had one, that dim); PyTorch's 2D/3D check."""
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{suffix} instead")
        batch_dim = 0 if self.batch_first else 1
        if input.dim() == 3:
            return input, True, batch_dim
        return input.unsqueeze(batch_dim), False, batch_dim

    def _zeros(self, input, size):
        batch = input.size(0) if self.batch_first else input.size(1)
        directions = 2 if self.bidirectional else 1
        return zeros(self.num_layers * directions, batch, size, dtype=input.dtype, device=input.device)

    def _run(self, input, hx):
        """The recurrence on a checked, batched input; output in the input's layout."""
        if input.size(1 if self.batch_first else 0) == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        x = input.transpose(0, 1) if self.batch_first else input
        out, hidden = R.recurrent(self.mode, x, hx, self._weights(), self.num_layers, self.bidirectional,
                                  self.dropout, self.training)
        return (out.transpose(0, 1) if self.batch_first else out), hidden

    def _weights(self):
        return [tuple(getattr(self, n.format(k, s), None) for n in
                      ("weight_ih_l{}{}", "weight_hh_l{}{}", "bias_ih_l{}{}", "bias_hh_l{}{}", "weight_hr_l{}{}"))
                for k in range(self.num_layers) for s in (("", "_reverse") if self.bidirectional else ("",))]

    def _forward_packed(self, input, hx):
        """A PackedSequence in, a PackedSequence out; ``hx`` and the final states in the
        caller's batch order (PyTorch's permute_hidden on the way in and out)."""
        data, batch_sizes, sorted_indices, unsorted_indices = input
        sizes = lengths_array(batch_sizes)
        lstm = self.mode == "LSTM"
        out_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            hx = _ZeroStates(self, int(sizes[0]), data)
            hx = (hx(out_size), hx(self.hidden_size)) if lstm else hx(self.hidden_size)
        elif lstm:
            hx = (self.permute_hidden(hx[0], sorted_indices), self.permute_hidden(hx[1], sorted_indices))
        else:
            hx = self.permute_hidden(hx, sorted_indices)
        self.check_forward_args(data, hx, batch_sizes)
        x = padded_steps(data, sizes)
        out, hidden = R.recurrent(self.mode, x, hx, self._weights(), self.num_layers, self.bidirectional,
                                  self.dropout, self.training, batch_sizes=sizes)
        output = PackedSequence(packed_rows(out, sizes), batch_sizes, sorted_indices, unsorted_indices)
        if lstm:
            return output, tuple(self.permute_hidden(h, unsorted_indices) for h in hidden)
        return output, self.permute_hidden(hidden, unsorted_indices)

    def _forward_single_state(self, input, hx, name, suffix):
        """RNN and GRU: one state tensor ``hx`` of shape (layers * directions, batch, hidden)."""
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        input, batched, batch_dim = self._batched(input, name, suffix)
        if hx is not None:
            want = 3 if batched else 2
            if hx.dim() != want:
                kind = "batched 3-D" if batched else "unbatched 2-D"
                raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got {hx.dim()}-D tensor")
            if not batched:
                hx = hx.unsqueeze(1)
        else:
            hx = self._zeros(input, self.hidden_size)
        self.check_forward_args(input, hx)
        output, hidden = self._run(input, hx)
        if not batched:
            return output.squeeze(batch_dim), hidden.squeeze(1)
        return output, hidden


class _ZeroStates:
    """Zero initial states for a packed batch of ``batch`` sequences."""

    def __init__(self, module, batch, data):
        self.shape = (module.num_layers * (2 if module.bidirectional else 1), batch)
        self.data = data

    def __call__(self, size):
        return zeros(*self.shape, size, dtype=self.data.dtype, device=self.data.device)


class RNN(RNNBase):
    """Elman RNN: ``h_t = nonlinearity(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``, with
    ``nonlinearity`` 'tanh' or 'relu' (the fourth positional argument, as in PyTorch)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_single_state(input, hx, "RNN", " tensor")


class GRU(RNNBase):
    """Gated recurrent unit; returns ``(output, h_n)``."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_single_state(input, hx, "GRU", "")


class LSTM(RNNBase):
    """Long short-term memory; returns ``(output, (h_n, c_n))``. With ``proj_size`` > 0 the
    hidden state is projected to ``proj_size`` features by ``weight_hr``."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes=None):
        mini_batch = self._mini_batch(input, batch_sizes)
        return (self.num_layers * (2 if self.bidirectional else 1), mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes=None):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        input, batched, batch_dim = self._batched(input, "LSTM", "")
        if hx is None:
            hx = (self._zeros(input, self.proj_size if self.proj_size > 0 else self.hidden_size),
                  self._zeros(input, self.hidden_size))
        else:
            h, c = hx[0], hx[1]
            want = 3 if batched else 2
            if h.dim() != want or c.dim() != want:
                kind = "batched 3-D" if batched else "unbatched 2-D"
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                   f"({h.dim()}-D, {c.dim()}-D) tensors")
            hx = (h, c) if batched else (h.unsqueeze(1), c.unsqueeze(1))
        self.check_forward_args(input, hx)
        output, (h_n, c_n) = self._run(input, hx)
        if not batched:
            return output.squeeze(batch_dim), (h_n.squeeze(1), c_n.squeeze(1))
        return output, (h_n, c_n)


# -- cells --------------------------------------------------------------------------------------------

class RNNCellBase(Module):
    """``weight_ih`` (chunks * hidden, input), ``weight_hh`` (chunks * hidden, hidden) and the
    biases ``bias_ih`` / ``bias_hh``, uniform in +-1/sqrt(hidden_size)."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batched(self, input, hidden, name):
        """(input and states with a batch dim, whether the input had one)."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for label, h in hidden:
            if h is not None and h.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {h.dim()}D instead")
        batched = input.dim() == 2
        return (input if batched else input.unsqueeze(0)), batched

    def _state(self, input, hx, batched):
        if hx is None:
            return zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
        return hx if batched else hx.unsqueeze(0)

    def _check_step(self, input, states):
        """PyTorch's checks inside the cell kernels (input size, state batch and size, dtypes)."""
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {self.input_size}")
        for k, h in enumerate(states):
            if input.size(0) != h.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{k} batch size {h.size(0)}")
            if h.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {h.size(1)}, expected "
                                   f"{self.hidden_size}")
        w = self.weight_ih.dtype
        for v in (input, *states):
            if v.dtype != w:
                raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {v.dtype.scalar_name} and "
                                   f"{w.scalar_name}")


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, batched = self._batched(input, (("hidden", hx),), "RNNCell")
        hx = self._state(input, hx, batched)
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        self._check_step(input, (hx,))
        ret = R.rnn_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh, self.nonlinearity)
        return ret if batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        states = () if hx is None else tuple((f"hx[{k}]", h) for k, h in enumerate(hx))
        input, batched = self._batched(input, states, "LSTMCell")
        if hx is None:
            h = c = self._state(input, None, batched)
        else:
            h, c = self._state(input, hx[0], batched), self._state(input, hx[1], batched)
        self._check_step(input, (h, c))
        h, c = R.lstm_cell(input, (h, c), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, batched = self._batched(input, (("hidden", hx),), "GRUCell")
        hx = self._state(input, hx, batched)
        self._check_step(input, (hx,))
        ret = R.gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if batched else ret.squeeze(0)
