"""tracegrad.models.resnet without an oracle: sizes, names, initialisation, the residual
path, gradients by finite differences, the weights error, and seed 002's fine-tuning."""
import re

import numpy as np
import pytest

import tracegrad
from tracegrad import nn, optim
from tracegrad.models import (
    BasicBlock,
    Bottleneck,
    ResNet,
    ResNet18_Weights,
    ResNet50_Weights,
    resnet18,
    resnet34,
    resnet50,
)


def npy(t):
    return np.array(t.detach().numpy(), copy=True)


def n_params(model):
    return sum(p.numel() for p in model.parameters())


@pytest.fixture(scope="module")
def r18():
    tracegrad.manual_seed(0)
    return resnet18()


# -- architecture ---------------------------------------------------------------------------

def test_parameter_counts(r18):
    """torchvision's published sizes."""
    assert n_params(r18) == 11_689_512
    assert n_params(resnet34()) == 21_797_672
    assert n_params(resnet50()) == 25_557_032


def torchvision_keys(blocks, convs, downsample_stages):
    """torchvision's state-dict key list, spelled out from its naming scheme."""
    bn = ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    keys = ["conv1.weight"] + [f"bn1.{b}" for b in bn]
    for stage, count in enumerate(blocks, 1):
        for i in range(count):
            pre = f"layer{stage}.{i}."
            for c in range(1, convs + 1):
                keys += [f"{pre}conv{c}.weight"] + [f"{pre}bn{c}.{b}" for b in bn]
            if i == 0 and stage in downsample_stages:
                keys += [f"{pre}downsample.0.weight"] + [f"{pre}downsample.1.{b}" for b in bn]
    return keys + ["fc.weight", "fc.bias"]


def test_state_dict_keys(r18):
    sd = r18.state_dict()
    assert list(sd) == torchvision_keys([2, 2, 2, 2], 2, {2, 3, 4})
    assert len(sd) == 122
    shapes = {"conv1.weight": (64, 3, 7, 7), "bn1.running_var": (64,),
              "layer1.0.conv1.weight": (64, 64, 3, 3), "layer2.0.conv1.weight": (128, 64, 3, 3),
              "layer2.0.downsample.0.weight": (128, 64, 1, 1), "layer4.1.bn2.bias": (512,),
              "fc.weight": (1000, 512), "fc.bias": (1000,), "bn1.num_batches_tracked": ()}
    for name, shape in shapes.items():
        assert tuple(sd[name].shape) == shape, name
    assert sd["bn1.num_batches_tracked"].dtype == tracegrad.int64


def test_bottleneck_state_dict_keys():
    model = resnet50()
    assert list(model.state_dict()) == torchvision_keys([3, 4, 6, 3], 3, {1, 2, 3, 4})
    assert tuple(model.layer1[0].conv3.weight.shape) == (256, 64, 1, 1)
    assert tuple(model.layer2[0].conv2.weight.shape) == (128, 128, 3, 3)
    assert model.layer2[0].conv2.stride == (2, 2)      # V1.5: the stride is on the 3x3
    assert tuple(model.fc.weight.shape) == (1000, 2048)


def test_module_types_and_names(r18):
    assert isinstance(r18, ResNet) and isinstance(r18, nn.Module)
    assert [name for name, _ in r18.named_children()] == [
        "conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4", "avgpool", "fc"]
    assert isinstance(r18.layer1[0], BasicBlock) and r18.layer1[0].downsample is None
    assert isinstance(r18.layer3[0].downsample, nn.Sequential)
    assert isinstance(resnet50().layer1[0], Bottleneck)


def test_output_shape_and_num_classes(r18):
    out = r18(tracegrad.rand(2, 3, 32, 32))
    assert tuple(out.shape) == (2, 1000) and out.dtype == tracegrad.float32
    small = resnet18(num_classes=10)
    assert tuple(small.fc.weight.shape) == (10, 512)
    small.eval()
    assert tuple(small(tracegrad.rand(1, 3, 64, 64)).shape) == (1, 10)


def test_torchvision_initialisation():
    """kaiming_normal_(mode='fan_out', nonlinearity='relu') convolutions; BatchNorm weight 1,
    bias 0; nn.Linear's own default for fc."""
    r18 = resnet18()
    w = npy(r18.layer3[1].conv2.weight)                 # fan_out = 256 * 3 * 3
    assert abs(w.mean()) < 3e-4
    assert abs(w.std() / np.sqrt(2 / (256 * 9)) - 1) < 0.01
    for name, b in r18.named_modules():
        if isinstance(b, nn.BatchNorm2d):
            assert (npy(b.weight) == 1).all() and (npy(b.bias) == 0).all(), name
            assert (npy(b.running_mean) == 0).all() and (npy(b.running_var) == 1).all(), name
    fc = npy(r18.fc.weight)
    assert np.abs(fc).max() <= 1 / np.sqrt(512) and fc.std() > 0.5 / np.sqrt(3 * 512)


def test_zero_init_residual_makes_blocks_identities():
    """With the last BN of each branch zeroed, an eval-mode block computes relu(shortcut)."""
    model = ResNet(BasicBlock, [1, 1, 1, 1], zero_init_residual=True).eval()
    x = tracegrad.randn(2, 64, 8, 8)
    assert (npy(model.layer1[0].bn2.weight) == 0).all()
    np.testing.assert_array_equal(npy(model.layer1[0](x)), np.maximum(npy(x), 0))
    block = model.layer2[0]
    np.testing.assert_allclose(npy(block(x)), np.maximum(npy(block.downsample(x)), 0), rtol=1e-6)
    deep = ResNet(Bottleneck, [1, 1, 1, 1], zero_init_residual=True)
    assert (npy(deep.layer1[0].bn3.weight) == 0).all()


def test_block_arguments_are_checked():
    with pytest.raises(ValueError, match="BasicBlock only supports groups=1 and base_width=64"):
        BasicBlock(64, 64, groups=2)
    with pytest.raises(NotImplementedError, match="Dilation > 1 not supported in BasicBlock"):
        BasicBlock(64, 64, dilation=2)
    with pytest.raises(ValueError, match="replace_stride_with_dilation should be None"):
        ResNet(BasicBlock, [1, 1, 1, 1], replace_stride_with_dilation=[False])


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_gradients_match_finite_differences(mode):
    """Directional derivatives of a small float64 ResNet (input and three parameters). A batch
    of 4: with 2, layer4's train-mode BatchNorm normalises two values per channel, whose
    curvature is so large that central differences need eps < 1e-7."""
    tracegrad.manual_seed(1)
    model = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=3).double()
    getattr(model, mode)()
    rng = np.random.default_rng(0)
    x = tracegrad.tensor(rng.standard_normal((4, 3, 32, 32)), requires_grad=True)
    head = tracegrad.tensor(rng.standard_normal((4, 3)))
    # Deep parameters: a perturbation of conv1 moves so many ReLU/max-pool inputs that one
    # crosses its kink even at eps=1e-6.
    picked = [model.layer3[0].conv1.weight, model.layer2[0].bn1.weight, model.fc.bias]

    def loss():
        return (model(x) * head).sum()
    loss().backward()
    for t in [x] + picked:
        v = rng.standard_normal(tuple(t.shape))
        analytic = float((npy(t.grad) * v).sum())
        with tracegrad.no_grad():
            base = t.detach().clone()
            values = []
            for eps in (1e-6, -1e-6):
                t.copy_(base + eps * tracegrad.tensor(v))
                values.append(loss().item())
            t.copy_(base)
        numeric = (values[0] - values[1]) / 2e-6
        assert numeric == pytest.approx(analytic, rel=1e-5, abs=1e-7)


# -- weights --------------------------------------------------------------------------------

@pytest.mark.parametrize("weights", [ResNet18_Weights.DEFAULT, ResNet18_Weights.IMAGENET1K_V1,
                                     "DEFAULT", "IMAGENET1K_V1", "ResNet18_Weights.DEFAULT"])
def test_pretrained_weights_are_not_bundled(weights):
    with pytest.raises(RuntimeError, match="pretrained weights are not bundled") as info:
        resnet18(weights=weights)
    message = str(info.value)
    assert 'model.load_state_dict(tracegrad.load("resnet18.npz"))' in message
    assert "ResNet18_Weights.IMAGENET1K_V1" in message


def test_weights_names_follow_torchvision():
    assert ResNet18_Weights.DEFAULT is ResNet18_Weights.IMAGENET1K_V1
    assert ResNet50_Weights.DEFAULT is ResNet50_Weights.IMAGENET1K_V2
    assert ResNet18_Weights.DEFAULT.url.endswith("resnet18-f37072fd.pth")
    with pytest.raises(RuntimeError, match=re.escape("resnet50(weights=ResNet50_Weights.IMAGENET1K_V2)")):
        resnet50(weights=ResNet50_Weights.DEFAULT)
    with pytest.raises(RuntimeError, match="resnet34"):
        resnet34(pretrained=True)
    assert n_params(resnet18(pretrained=False, num_classes=2)) == 11_689_512 - 998 * 513
    with pytest.raises(ValueError, match="Failed to find Weights IMAGENET1K_V9 in ResNet18_Weights"):
        resnet18(weights="IMAGENET1K_V9")
    with pytest.raises(TypeError, match="expected ResNet18_Weights but received ResNet50_Weights"):
        resnet18(weights=ResNet50_Weights.DEFAULT)


def test_state_dict_round_trip(r18):
    """A state dict taken from one model makes another compute the same function."""
    other = resnet18()
    other.load_state_dict(r18.state_dict())
    r18.eval()
    other.eval()
    x = tracegrad.rand(1, 3, 32, 32)
    np.testing.assert_array_equal(npy(other(x)), npy(r18(x)))
    r18.train()


# -- seed 002: fine-tuning -------------------------------------------------------------------

def test_freezing_and_replacing_fc_trains_only_fc():
    """冻结所有参数, model.fc = nn.Linear(512, 10): only fc's weight and bias get gradients
    and only they move under SGD, even though every parameter is registered."""
    tracegrad.manual_seed(0)
    model = resnet18()
    for param in model.parameters():
        param.requires_grad = False
    model.fc = nn.Linear(512, 10)
    optimizer = optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    before = {k: npy(v) for k, v in model.state_dict().items()}
    data, labels = tracegrad.rand(1, 3, 64, 64), tracegrad.rand(1, 10)
    prediction = model(data)
    assert prediction.requires_grad and prediction.grad_fn.name() == "AddmmBackward0"
    loss = (prediction - labels).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    with_grad = [name for name, p in model.named_parameters() if p.grad is not None]
    assert with_grad == ["fc.weight", "fc.bias"]
    after = model.state_dict()
    moved = [k for k in before if not k.endswith(("running_mean", "running_var", "num_batches_tracked"))
             and not np.array_equal(before[k], npy(after[k]))]
    assert moved == ["fc.weight", "fc.bias"]
