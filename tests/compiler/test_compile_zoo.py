"""A zoo of nn modules under tracegrad.compile: outputs and gradients (parameters and
input) equal the eager ones exactly, and each is staged -- or, where noted, runs eagerly
for the reason given (a graph break must never change a value)."""
import copy

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn


def resnet18():
    from tracegrad.models import resnet18
    return resnet18(num_classes=3).eval()


ZOO = {  # name: (make, input shape, None if staged else a phrase of the break reason)
    "linear": (lambda: nn.Linear(5, 3), (4, 5), None),
    "conv2d": (lambda: nn.Conv2d(2, 3, 3, padding=1, stride=2), (2, 2, 7, 7), None),
    "batchnorm eval": (lambda: nn.BatchNorm2d(2).eval(), (3, 2, 4, 4), None),
    "batchnorm train": (lambda: nn.Sequential(nn.Conv1d(2, 3, 3), nn.BatchNorm1d(3)), (4, 2, 9),
                        "batch_norm()"),
    "layernorm": (lambda: nn.LayerNorm(6), (3, 6), None),
    "groupnorm": (lambda: nn.GroupNorm(2, 4), (2, 4, 3), None),
    "gelu softmax": (lambda: nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.Softmax(dim=-1)), (3, 4), None),
    "pools": (lambda: nn.Sequential(nn.MaxPool2d(2), nn.AvgPool2d(2), nn.Flatten()), (2, 3, 8, 8), None),
    "adaptive pool": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten()),
                      (2, 3, 6, 6), None),
    "activations": (lambda: nn.Sequential(nn.SiLU(), nn.LeakyReLU(0.1), nn.ELU()), (3, 4), None),
    "relu inplace": (lambda: nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True), nn.Linear(4, 2)), (2, 3), None),
    "dropout eval": (lambda: nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.2)).eval(), (2, 3), None),
    "gru": (lambda: nn.GRU(4, 5, batch_first=True), (2, 3, 4), None),
    "lstm": (lambda: nn.LSTM(4, 5), (3, 2, 4), None),
    "transformer layer eval": (lambda: nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).eval(),
                               (2, 3, 8), None),
    "resnet18 eval": (resnet18, (1, 3, 32, 32), None),
}


def weighted_sum(out):
    out = out[0] if isinstance(out, tuple) else out
    return (out * tg.linspace(0.5, 1.5, out.numel()).reshape(out.shape)).sum()


def grads(model, x):
    weighted_sum(model(x)).backward()
    return [p.grad for p in model.parameters()] + [x.grad]


@pytest.mark.parametrize("name", list(ZOO))
def test_a_compiled_module_gives_eagers_values_and_gradients(name):
    make, shape, reason = ZOO[name]
    tg.manual_seed(0)
    eager = make()
    staged = copy.deepcopy(eager)
    compiled = tg.compile(staged)
    x = tg.randn(*shape)
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    got, want = compiled(b), eager(a)
    got, want = (got[0], want[0]) if isinstance(got, tuple) else (got, want)
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    for w, g in zip(grads(eager, a), grads(compiled, b)):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    breaks = compiled._compiled.graph_breaks
    if reason is None:
        assert breaks == []
    else:
        assert len(breaks) == 1 and reason in breaks[0]


def test_multihead_attention_is_staged():
    tg.manual_seed(0)
    eager = nn.MultiheadAttention(8, 2, batch_first=True)
    staged = copy.deepcopy(eager)
    compiled = tg.compile(staged)
    q = tg.randn(2, 3, 8)
    want, want_w = eager(q, q, q)
    got, got_w = compiled(q, q, q)
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    np.testing.assert_array_equal(got_w.detach().numpy(), want_w.detach().numpy())
    assert compiled._compiled.graph_breaks == []


def test_an_in_place_write_through_a_view_of_an_input_runs_eagerly():
    def f(x):
        x[0].mul_(2)
        return x.sum()
    x = tg.ones(2, 2)
    assert tg.compile(f)(x).item() == 6.0 and x.tolist() == [[2.0, 2.0], [1.0, 1.0]]
