"""LazyLinear / LazyConv1d/2d/3d: shapes inferred from the first input, parameters
materialised in place (an optimizer built before keeps working), the switch to the plain
class, state_dict before and after, reprs against PyTorch, and the same init distribution."""
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn


def test_lazy_linear_infers_in_features_and_becomes_linear():
    layer = nn.LazyLinear(3)
    assert isinstance(layer.weight, nn.UninitializedParameter) and repr(layer.weight) == "<UninitializedParameter>"
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        layer.weight.shape  # noqa: B018 -- the access is what raises
    weight = layer.weight
    opt = tg.optim.SGD(layer.parameters(), lr=0.5)
    out = layer(tg.randn(4, 5))
    assert type(layer) is nn.Linear and layer.in_features == 5 and out.shape == (4, 3)
    assert layer.weight is weight and type(weight) is nn.Parameter and weight.shape == (3, 5)
    bound = 1 / np.sqrt(5)  # Linear's kaiming-uniform init, for the inferred fan-in
    assert np.abs(layer.weight.detach().numpy()).max() <= bound
    before = weight.detach().numpy().copy()
    out.sum().backward()
    opt.step()
    assert not np.allclose(before, weight.detach().numpy())
    assert not hasattr(layer, "_initialize_hook")


def test_lazy_state_dict_and_load():
    layer = nn.LazyLinear(2, bias=False)
    assert [type(v).__name__ for v in layer.state_dict().values()] == ["UninitializedParameter"]
    source = nn.Linear(4, 2, bias=False)
    layer.load_state_dict(source.state_dict())
    assert layer.weight.shape == (2, 4)
    np.testing.assert_array_equal(layer.weight.detach().numpy(), source.weight.detach().numpy())
    layer(tg.randn(1, 4))
    assert type(layer) is nn.Linear


@pytest.mark.parametrize("cls,shape,spatial", [("LazyConv1d", (2, 3, 7), 1), ("LazyConv2d", (3, 5, 5), 2),
                                               ("LazyConv3d", (1, 2, 4, 4, 4), 3)])
def test_lazy_conv_infers_in_channels(cls, shape, spatial):
    layer = getattr(nn, cls)(4, 3, padding=1, groups=1)
    out = layer(tg.randn(*shape))
    channels = shape[1] if len(shape) == spatial + 2 else shape[0]
    assert type(layer).__name__ == f"Conv{spatial}d" and layer.in_channels == channels
    assert layer.weight.shape == (4, channels) + (3,) * spatial and out.shape[-spatial:] == shape[-spatial:]


@pytest.mark.parametrize("spatial", [1, 2, 3])
def test_lazy_conv_transpose_infers_in_channels(spatial):
    layer = getattr(nn, f"LazyConvTranspose{spatial}d")(4, 3, stride=2, groups=2)
    out = layer(tg.randn(1, 6, *(3,) * spatial))
    assert type(layer).__name__ == f"ConvTranspose{spatial}d" and layer.in_channels == 6
    assert layer.weight.shape == (6, 2) + (3,) * spatial and out.shape == (1, 4) + (7,) * spatial


def test_nll_loss_2d_is_a_deprecated_nll_loss():
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
        loss = nn.NLLLoss2d(reduction="sum")
    assert isinstance(loss, nn.NLLLoss) and loss.reduction == "sum"


def test_lazy_conv_errors():
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to LazyConv2d"):
        nn.LazyConv2d(4, 3)(tg.randn(2, 3))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv2d(4, 3, groups=2)(tg.randn(1, 3, 5, 5))


@pytest.mark.torch
@pytest.mark.parametrize("spec", ["LazyLinear(3)", "LazyLinear(3, bias=False)", "LazyConv2d(4, 3, padding=1)",
                                  "LazyConv1d(2, 3, stride=2, bias=False)", "LazyConv3d(2, (1, 2, 3))",
                                  "LazyConvTranspose2d(4, 3, stride=2, output_padding=1)",
                                  "LazyConvTranspose1d(2, 3, bias=False)"])
def test_lazy_reprs_match_torch(spec):
    import torch  # noqa: F401 -- used by eval
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert repr(eval("nn." + spec)) == repr(eval("torch.nn." + spec))


@pytest.mark.parametrize("kind,shape", [("BatchNorm1d", (4, 3)), ("BatchNorm2d", (2, 3, 4, 4)),
                                        ("BatchNorm3d", (2, 3, 2, 2, 2)), ("InstanceNorm1d", (2, 3, 5)),
                                        ("InstanceNorm2d", (2, 3, 4, 4))])
def test_lazy_norms_infer_num_features(kind, shape):
    layer = getattr(nn, "Lazy" + kind)()
    assert isinstance(dict(layer.named_buffers())["running_mean"], nn.UninitializedBuffer)
    weight = layer.weight
    x = tg.randn(*shape)
    out = layer(x)
    plain = getattr(nn, kind)(3, affine=True, track_running_stats=True)
    assert type(layer) is type(plain) and layer.num_features == 3 and layer.weight is weight
    np.testing.assert_allclose(out.detach().numpy(), plain(x).detach().numpy(), atol=1e-6)
    np.testing.assert_allclose(layer.running_mean.numpy(), plain.running_mean.numpy(), atol=1e-7)


def test_lazy_norm_loads_a_state_dict():
    layer = nn.LazyBatchNorm1d()
    source = nn.BatchNorm1d(4)
    source.running_mean.fill_(0.5)
    layer.load_state_dict(source.state_dict())
    assert layer.running_mean.tolist() == [0.5] * 4 and layer.weight.shape == (4,)


@pytest.mark.torch
@pytest.mark.parametrize("spec", ["LazyBatchNorm2d()", "LazyBatchNorm1d(affine=False)", "LazyInstanceNorm2d()",
                                  "LazyInstanceNorm3d(track_running_stats=False)", "LazyBatchNorm3d(momentum=None)"])
def test_lazy_norm_reprs_and_state_match_torch(spec):
    import torch  # noqa: F401 -- used by eval
    ours, theirs = eval("nn." + spec), eval("torch.nn." + spec)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_uninitialized_names_in_the_parameter_module():
    from tracegrad.nn import parameter
    assert parameter.UninitializedParameter is nn.UninitializedParameter
    assert parameter.is_lazy(parameter.UninitializedBuffer()) and not parameter.is_lazy(nn.Parameter(tg.ones(1)))
    with pytest.raises(AttributeError):
        parameter.NoSuchThing  # noqa: B018 -- the access is what raises
