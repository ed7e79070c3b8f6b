"""The seeds' nn / optim snippets (seeds 000-004), with ``import tracegrad as torch``.

Where a seed loads pretrained torchvision weights (``resnet18(weights=ResNet18_Weights.DEFAULT)``)
the tests build the same architecture with ``weights=None``: tracegrad bundles no weights, and
says so when asked for them (tested below). Everything else runs as the seeds write it.
"""
import re

import numpy as np
import pytest

import tracegrad as torch
from tracegrad import nn, optim
from tracegrad.models import ResNet18_Weights, resnet18

from ._helpers import arr, assert_node_repr


# -- seed 000: 全连接层梯度求解 ---------------------------------------------------------------------

def test_seed_000_fully_connected_layer_with_bce_with_logits(capsys):
    """``loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)``; the two grad_fn
    prints, then ``w.grad`` and ``b.grad``: d loss / dz = (sigmoid(z) - y) / 3."""
    x = torch.ones(5)  # input tensor
    y = torch.zeros(3)  # expected output
    w = torch.randn(5, 3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    z = torch.matmul(x, w) + b
    loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
    print(f"Gradient function for z = {z.grad_fn}")
    print(f"Gradient function for loss = {loss.grad_fn}")
    loss.backward()
    out = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"Gradient function for z = <AddBackward0 object at 0x[0-9a-f]+>", out[0])
    assert re.fullmatch(r"Gradient function for loss = <BinaryCrossEntropyWithLogitsBackward0 object "
                        r"at 0x[0-9a-f]+>", out[1])
    zv = arr(z)
    np.testing.assert_allclose(arr(loss), np.mean(np.log1p(np.exp(zv))), rtol=1e-5)
    dz = (1 / (1 + np.exp(-zv)) - 0.0) / 3
    np.testing.assert_allclose(arr(b.grad), dz, rtol=1e-5)
    np.testing.assert_allclose(arr(w.grad), np.outer(np.ones(5), dz), rtol=1e-5)


# -- seed 001: requires_grad_ on a module, eval() is orthogonal to no_grad -----------------------

def test_seed_001_module_requires_grad_applies_to_every_parameter():
    """``nn.Module.requires_grad_()`` sets the flag on all the module's parameters (default
    True); frozen parameters are not recorded and get no ``.grad``."""
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    assert all(p.requires_grad for p in model.parameters())  # nn.Parameter: True by default
    assert model[0].requires_grad_(False) is model[0]
    assert [p.requires_grad for p in model.parameters()] == [False, False, True, True]
    model(torch.randn(5, 4)).sum().backward()
    assert model[0].weight.grad is None and model[0].bias.grad is None
    assert model[2].weight.grad is not None
    model.requires_grad_()
    assert all(p.requires_grad for p in model.parameters())


def test_seed_001_eval_mode_changes_dropout_and_batchnorm_not_gradients():
    """``module.eval()`` (= ``train(False)``) is orthogonal to no-grad: gradients still flow;
    Dropout stops dropping and BatchNorm2d uses (and no longer updates) its running stats."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.BatchNorm2d(2), nn.Dropout(0.5))
    x = torch.randn(4, 2, 3, 3, requires_grad=True)
    model(x)
    stats = arr(model[0].running_mean)
    assert model.training and model.eval() is model and not model.training
    assert not model[0].training and not model[1].training
    out = model(x)
    np.testing.assert_array_equal(arr(model[0].running_mean), stats)  # not updated in eval
    expected = (arr(x) - stats.reshape(1, 2, 1, 1)) / np.sqrt(arr(model[0].running_var).reshape(1, 2, 1, 1) + 1e-5)
    np.testing.assert_allclose(arr(out), expected, rtol=1e-5, atol=1e-6)  # no dropout either
    assert out.requires_grad  # eval() does not disable gradients
    out.sum().backward()
    assert x.grad is not None
    model.train(False)
    assert not model.training
    model.train()
    assert model[1].training


# -- seed 002: one training step of resnet18, then fine-tuning only fc ---------------------------

def test_seed_002_pretrained_weights_are_not_bundled():
    with pytest.raises(RuntimeError, match="pretrained weights are not bundled"):
        resnet18(weights=ResNet18_Weights.DEFAULT)


def test_seed_002_resnet18_training_step():
    """``prediction = model(data); loss = (prediction - labels).sum(); optim.zero_grad();
    loss.backward(); optim.step()``: every parameter gets a gradient and SGD(momentum) moves
    it by lr * grad on the first step (momentum buffer = grad)."""
    data = torch.rand(1, 3, 64, 64)
    labels = torch.rand(1, 1000)
    model = resnet18(weights=None)
    optim_ = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    prediction = model(data)  # forward pass
    assert tuple(prediction.shape) == (1, 1000)
    loss = (prediction - labels).sum()
    optim_.zero_grad()
    loss.backward()  # backward pass
    before = {n: arr(p) for n, p in model.named_parameters()}
    grads = {n: arr(p.grad) for n, p in model.named_parameters()}
    optim_.step()  # gradient descent
    for n, p in model.named_parameters():
        np.testing.assert_allclose(arr(p), before[n] - 1e-2 * grads[n], rtol=1e-5, atol=1e-7, err_msg=n)
    np.testing.assert_allclose(grads["fc.bias"], np.ones(1000))  # d sum(prediction) / d bias


def test_seed_002_freeze_everything_but_a_new_fc():
    """``for param in model.parameters(): param.requires_grad = False``; ``model.fc =
    nn.Linear(512, 10)``; ``optimizer = optim.SGD(model.parameters(), ...)``: only the
    classifier's weight and bias compute gradients (and so are updated)."""
    model = resnet18(weights=None)
    for param in model.parameters():
        param.requires_grad = False
    model.fc = nn.Linear(512, 10)
    optimizer = optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    before = {n: arr(p) for n, p in model.named_parameters()}
    loss = model(torch.rand(2, 3, 64, 64)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    with_grad = [n for n, p in model.named_parameters() if p.grad is not None]
    assert with_grad == ["fc.weight", "fc.bias"]
    changed = [n for n, p in model.named_parameters() if not np.array_equal(arr(p), before[n])]
    assert changed == ["fc.weight", "fc.bias"]


# -- seed 003: model.zero_grad() / optimizer.zero_grad() reset .grad to None -----------------------

def test_seed_003_zero_grad_sets_grads_to_none():
    """``model.zero_grad()`` resets every learnable parameter's ``.grad``; ``optimizer.zero_grad()``
    only those the optimizer manages -- both to None by default, like ``param.grad = None``."""
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    optimizer = optim.SGD(model[1].parameters(), lr=0.1)
    model(torch.randn(4, 3)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    optimizer.zero_grad()
    assert [p.grad is None for p in model.parameters()] == [False, False, True, True]
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    model(torch.randn(4, 3)).sum().backward()
    model.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not arr(p.grad).any() for p in model.parameters())


def test_seed_003_gradient_accumulates_until_cleared():
    """Gradients of several backward passes add up until cleared (zero_grad per batch)."""
    layer = nn.Linear(3, 1)
    x = torch.randn(2, 3)
    layer(x).sum().backward()
    first = arr(layer.weight.grad)
    layer(x).sum().backward()
    np.testing.assert_allclose(arr(layer.weight.grad), 2 * first, rtol=1e-6)
    for param in layer.parameters():
        param.grad = None
    layer(x).sum().backward()
    np.testing.assert_allclose(arr(layer.weight.grad), first, rtol=1e-6)


# -- seed 004: nn.Parameter; model.eval() and torch.no_grad() ------------------------------------

def test_seed_004_parameter_is_a_leaf_requiring_grad():
    """``w = torch.nn.Parameter(torch.randn(2, 2))``: a leaf that requires grad."""
    w = torch.nn.Parameter(torch.randn(2, 2))
    assert w.requires_grad and w.is_leaf and w.grad_fn is None
    assert isinstance(w, torch.Tensor)
    assert repr(w).startswith("Parameter containing:\ntensor([[")
    assert_node_repr((w - 1).grad_fn, "SubBackward0")


def test_seed_004_eval_and_no_grad_are_unrelated():
    """"model.eval() sets modules like BatchNorm and Dropout to evaluation mode ... but it does
    not help save memory. torch.no_grad() declares that no gradients should be calculated":
    in inference both are used, and each does only its own job."""
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Dropout(0.5))
    x = torch.randn(8, 4)
    model.eval()
    assert model(x).requires_grad  # eval alone: the graph is still recorded
    with torch.no_grad():
        out = model(x)
    assert not out.requires_grad and out.grad_fn is None
    model.train()
    with torch.no_grad():
        dropped = model(x)
    assert (arr(dropped) == 0).any()  # no_grad alone: Dropout still drops in training mode
