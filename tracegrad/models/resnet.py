"""ResNet-18/34/50, as ``torchvision.models.resnet``.

The architecture, the module and parameter/buffer names (``conv1``, ``bn1``, ``layer1.0.conv1``,
``layer2.0.downsample.0``, ``fc``...) and the initialisation are torchvision's, so a torchvision
``state_dict`` loads unchanged. Written once to a file where torch and torchvision are at hand,

    state = torchvision.models.resnet18(weights="DEFAULT").state_dict()
    tracegrad.save({k: tracegrad.tensor(v.numpy()) for k, v in state.items()}, "resnet18.npz")

it is read back with

    model = resnet18()
    model.load_state_dict(tracegrad.load("resnet18.npz"))

Pretrained weights are not bundled: ``weights=`` anything but ``None`` raises a
:class:`RuntimeError` that shows the line above.
"""
import enum

from .. import nn

__all__ = ["BasicBlock", "Bottleneck", "ResNet", "ResNet18_Weights", "ResNet34_Weights",
           "ResNet50_Weights", "resnet18", "resnet34", "resnet50"]


def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
    """3x3 convolution with padding (no bias: a BatchNorm follows)."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation,
                     groups=groups, bias=False, dilation=dilation)


def conv1x1(in_planes, out_planes, stride=1):
    """1x1 convolution (no bias: a BatchNorm follows)."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions and a shortcut (ResNet-18/34)."""
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64,
                 dilation=1, norm_layer=None):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3, 1x1 expand (by ``expansion``) and a shortcut (ResNet-50); the stride
    sits on the 3x3 convolution, as in torchvision ("ResNet V1.5")."""
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64,
                 dilation=1, norm_layer=None):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    """A stem (7x7 stride-2 convolution, BatchNorm, ReLU, 3x3 max-pool), four stages of
    ``block``s (``layers`` blocks each; stages 2-4 halve the resolution), global average
    pooling and a linear classifier ``fc``."""

    def __init__(self, block, layers, num_classes=1000, zero_init_residual=False, groups=1,
                 width_per_group=64, replace_stride_with_dilation=None, norm_layer=None):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self._norm_layer = norm_layer
        self.inplanes = 64
        self.dilation = 1
        if replace_stride_with_dilation is None:
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError("replace_stride_with_dilation should be None "
                             f"or a 3-element tuple, got {replace_stride_with_dilation}")
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2,
                                       dilate=replace_stride_with_dilation[0])
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2,
                                       dilate=replace_stride_with_dilation[1])
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2,
                                       dilate=replace_stride_with_dilation[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

        norms = tuple(getattr(nn, name) for name in ("BatchNorm2d", "GroupNorm") if hasattr(nn, name))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, norms):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        # Zero-initialising the last BN of each residual branch makes every block start as
        # the identity, which helps large-batch training (https://arxiv.org/abs/1706.02677).
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck) and m.bn3.weight is not None:
                    nn.init.constant_(m.bn3.weight, 0)
                elif isinstance(m, BasicBlock) and m.bn2.weight is not None:
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width,
                        previous_dilation, norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups,
                                base_width=self.base_width, dilation=self.dilation,
                                norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def _forward_impl(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = self.avgpool(x)
        x = x.flatten(1)
        return self.fc(x)

    def forward(self, x):
        return self._forward_impl(x)


# -- weights: named as in torchvision, never downloaded ------------------------------------

_DOWNLOADS = "https://download.pytorch.org/models/"


class _Weights(enum.Enum):
    """torchvision's ``WeightsEnum`` names, so ``resnet18(weights=ResNet18_Weights.DEFAULT)``
    reads the same; the value is the torchvision checkpoint's address."""

    @property
    def url(self):
        return self.value

    @classmethod
    def verify(cls, obj):
        """The member ``obj`` names (a member, its name as a string, or None), as torchvision."""
        if obj is None or isinstance(obj, cls):
            return obj
        if isinstance(obj, str):
            try:
                return cls[obj.replace(cls.__name__ + ".", "")]
            except KeyError:
                raise ValueError(f"Failed to find Weights {obj} in {cls.__name__}. "
                                 f"Try one of {[e.name for e in cls]}.") from None
        raise TypeError(f"Invalid Weight class provided; expected {cls.__name__} "
                        f"but received {type(obj).__name__}.")


class ResNet18_Weights(_Weights):
    IMAGENET1K_V1 = _DOWNLOADS + "resnet18-f37072fd.pth"
    DEFAULT = IMAGENET1K_V1


class ResNet34_Weights(_Weights):
    IMAGENET1K_V1 = _DOWNLOADS + "resnet34-b627a593.pth"
    DEFAULT = IMAGENET1K_V1


class ResNet50_Weights(_Weights):
    IMAGENET1K_V1 = _DOWNLOADS + "resnet50-0676ba61.pth"
    IMAGENET1K_V2 = _DOWNLOADS + "resnet50-11ad3fa6.pth"
    DEFAULT = IMAGENET1K_V2


def _no_pretrained_weights(arch, weights):
    """The error for ``weights=`` anything but None: say what to do instead."""
    return RuntimeError(
        f"{arch}(weights={weights}): pretrained weights are not bundled with tracegrad and "
        f"are never downloaded. Build the model with weights=None and load a state dict from "
        f"a file instead:\n"
        f"    model = tracegrad.models.{arch}()\n"
        f"    model.load_state_dict(tracegrad.load(\"{arch}.npz\"))\n"
        f"where {arch}.npz holds torchvision's state dict, written once in a Python that has "
        f"torch, torchvision and tracegrad:\n"
        f"    state = torchvision.models.{arch}(weights=\"DEFAULT\").state_dict()\n"
        f"    tracegrad.save({{k: tracegrad.tensor(v.numpy()) for k, v in state.items()}}, "
        f"\"{arch}.npz\")")


def _resnet(arch, weights_enum, block, layers, weights, progress, kwargs):
    if kwargs.pop("pretrained", False):   # torchvision's legacy spelling of weights=DEFAULT
        weights = weights_enum.DEFAULT
    if weights is not None:
        weights = weights_enum.verify(weights)
        raise _no_pretrained_weights(arch, weights)
    return ResNet(block, layers, **kwargs)


def resnet18(*, weights=None, progress=True, **kwargs):
    """ResNet-18 (11.7M parameters). ``kwargs`` go to :class:`ResNet` (``num_classes``...)."""
    return _resnet("resnet18", ResNet18_Weights, BasicBlock, [2, 2, 2, 2], weights, progress, kwargs)


def resnet34(*, weights=None, progress=True, **kwargs):
    """ResNet-34 (21.8M parameters). ``kwargs`` go to :class:`ResNet` (``num_classes``...)."""
    return _resnet("resnet34", ResNet34_Weights, BasicBlock, [3, 4, 6, 3], weights, progress, kwargs)


def resnet50(*, weights=None, progress=True, **kwargs):
    """ResNet-50 (25.6M parameters). ``kwargs`` go to :class:`ResNet` (``num_classes``...)."""
    return _resnet("resnet50", ResNet50_Weights, Bottleneck, [3, 4, 6, 3], weights, progress, kwargs)
