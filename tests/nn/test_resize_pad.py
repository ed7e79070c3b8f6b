"""interpolate / Upsample*, pixel_(un)shuffle and the padding layers: values and input
gradients against PyTorch over the mode x size x align_corners grid (float64, and float32
values), hand formulas and gradcheck without PyTorch, errors by type and message, reprs."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.autograd import gradcheck
from tracegrad.nn import functional as F

from ._oracle import assert_close, compare_modules

RNG = np.random.default_rng(11)

SHAPES = {"linear": (2, 3, 5), "bilinear": (2, 2, 5, 4), "bicubic": (2, 2, 5, 4), "trilinear": (1, 2, 3, 4, 5)}
SIZES = [dict(size=7), dict(size=3), dict(size=1), dict(scale_factor=1.7), dict(scale_factor=0.5),
         dict(scale_factor=2.3, recompute_scale_factor=True)]


def _oracle(shape, dtype="float64", **kw):
    import torch
    x = RNG.standard_normal(shape).astype(dtype)
    t = torch.tensor(x, requires_grad=True)
    o = tg.tensor(x, requires_grad=True)
    expected = torch.nn.functional.interpolate(t, **kw)
    got = F.interpolate(o, **kw)
    tol = 1e-12 if dtype == "float64" else 1e-5
    assert_close(got, expected, rtol=tol, atol=tol, what=f"{kw} values")
    g = RNG.standard_normal(tuple(expected.shape)).astype(dtype)
    expected.backward(torch.tensor(g))
    got.backward(tg.tensor(g))
    assert_close(o.grad, t.grad, rtol=tol * 10, atol=tol * 10, what=f"{kw} grad")


@pytest.mark.torch
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "area"])
@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 2, 5, 4), (1, 2, 3, 4, 5)])
@pytest.mark.parametrize("kw", SIZES[:5], ids=str)
def test_interpolate_nearest_area_against_torch(mode, shape, kw):
    _oracle(shape, mode=mode, **kw)


@pytest.mark.torch
@pytest.mark.parametrize("mode", list(SHAPES))
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("kw", SIZES, ids=str)
def test_interpolate_linear_cubic_against_torch(mode, align_corners, kw):
    _oracle(SHAPES[mode], mode=mode, align_corners=align_corners, **kw)


@pytest.mark.torch
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic", "area"])
@pytest.mark.parametrize("kw", [dict(size=(9, 2)), dict(scale_factor=(1 / 3, 2.5)), dict(scale_factor=3)],
                         ids=str)
def test_interpolate_float32_and_mixed_factors(mode, kw):
    if mode == "area" and "scale_factor" in kw and kw["scale_factor"] == (1 / 3, 2.5):
        kw = dict(size=(2, 10))
    _oracle((1, 2, 6, 4), "float32", mode=mode, **kw)


@pytest.mark.torch
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("kw", [dict(size=(3, 2)), dict(size=(9, 11)), dict(scale_factor=0.3), dict(size=(1, 4)),
                                dict(scale_factor=(0.5, 1.5))], ids=str)
def test_interpolate_antialias_against_torch(mode, align_corners, kw):
    _oracle((2, 2, 10, 8), mode=mode, align_corners=align_corners, antialias=True, **kw)


def test_antialias_shrinking_by_an_integer_factor_is_box_like():
    """Halving with the antialiased triangle filter: each output averages 4 inputs with weights 1, 3, 3, 1."""
    x = RNG.standard_normal((1, 1, 1, 8))
    out = F.interpolate(tg.tensor(x), size=(1, 4), mode="bilinear", antialias=True, align_corners=False).numpy()
    padded = np.concatenate([x[..., :1] * 0, x, x[..., :1] * 0], -1)[0, 0, 0]
    w = np.array([1, 3, 3, 1]) / 8.0
    want = [(padded[2 * i:2 * i + 4] * w).sum() / w[(np.arange(2 * i, 2 * i + 4) >= 1) & (np.arange(2 * i, 2 * i + 4)
                                                                                          <= 8)].sum()
            for i in range(4)]
    np.testing.assert_allclose(out[0, 0, 0], want, atol=1e-12)


def test_linear_align_corners_is_the_hand_formula():
    x = np.array([[[0.0, 1.0, 4.0]]])
    out = F.interpolate(tg.tensor(x), size=5, mode="linear", align_corners=True)
    np.testing.assert_allclose(out.numpy()[0, 0], [0.0, 0.5, 1.0, 2.5, 4.0])
    half = F.interpolate(tg.tensor(x), size=6, mode="linear", align_corners=False)
    # source positions (o + 0.5) / 2 - 0.5, clamped at 0: 0, .25, .75, 1.25, 1.75, 2.25
    np.testing.assert_allclose(half.numpy()[0, 0], [0.0, 0.25, 0.75, 1.75, 3.25, 4.0])


def test_nearest_takes_uint8():
    x = tg.tensor([[[1, 2, 250]]], dtype=tg.uint8)
    out = F.interpolate(x, size=5, mode="nearest-exact")
    assert out.dtype == tg.uint8 and out.tolist() == [[[1, 1, 2, 250, 250]]]
    with pytest.raises(NotImplementedError, match="uint8"):
        F.interpolate(x, size=5, mode="linear")


def test_nearest_repeats_and_cubic_reproduces_a_line():
    x = tg.tensor([[[1.0, 2.0, 3.0]]])
    assert F.interpolate(x, scale_factor=2).tolist() == [[[1.0, 1.0, 2.0, 2.0, 3.0, 3.0]]]
    ramp = tg.tensor(np.arange(8.0).reshape(1, 1, 1, 8).repeat(3, 2))
    # Keys' cubic reproduces linear functions exactly away from the clamped borders
    out = F.interpolate(ramp, size=(3, 15), mode="bicubic", align_corners=True).numpy()[0, 0, 1]
    np.testing.assert_allclose(out[3:-3], np.linspace(0, 7, 15)[3:-3], atol=1e-6)


@pytest.mark.parametrize("mode,shape,kw", [
    ("nearest", (1, 2, 3, 4), dict(size=(5, 3))),
    ("linear", (2, 1, 4), dict(scale_factor=1.6)),
    ("bilinear", (1, 1, 3, 4), dict(size=(5, 2), align_corners=True)),
    ("bicubic", (1, 1, 3, 4), dict(size=(4, 6))),
    ("trilinear", (1, 1, 2, 3, 2), dict(size=(3, 2, 4))),
    ("area", (1, 1, 2, 5, 4), dict(size=(1, 3, 3))),
])
def test_interpolate_gradcheck(mode, shape, kw):
    x = tg.tensor(RNG.standard_normal(shape), requires_grad=True)
    assert gradcheck(lambda t: F.interpolate(t, mode=mode, **kw), (x,))


@pytest.mark.parametrize("call,error,message", [
    (lambda x: F.interpolate(x, size=3, scale_factor=2), ValueError, "only one of size or scale_factor"),
    (lambda x: F.interpolate(x), ValueError, "either size or scale_factor should be defined"),
    (lambda x: F.interpolate(x, size=3, align_corners=True), ValueError, "align_corners option can only"),
    (lambda x: F.interpolate(x, size=(3, 3, 3)), ValueError, "same number of spatial dimensions"),
    (lambda x: F.interpolate(x, size=(3.0, 3)), TypeError, "expected size to be one of int"),
    (lambda x: F.interpolate(x, size=3, recompute_scale_factor=True), ValueError, "not meaningful"),
    (lambda x: F.interpolate(x, size=3, mode="linear"), NotImplementedError,
     "Got 4D input, but linear mode needs 3D input"),
    (lambda x: F.interpolate(x, size=3, mode="cubic"), NotImplementedError, "(got cubic)"),
    (lambda x: F.interpolate(x, size=0), RuntimeError,
     "Input and output sizes should be greater than 0, but got input (H: 4, W: 5) output (H: 0, W: 0)"),
    (lambda x: F.interpolate(x, size=3, mode="nearest", antialias=True), ValueError, "Anti-alias option"),
    (lambda x: F.interpolate(x.long(), size=3, mode="bilinear"), NotImplementedError, "'Long'"),
])
def test_interpolate_errors(call, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        call(tg.zeros(1, 2, 4, 5))


@pytest.mark.torch
def test_interpolate_error_messages_are_torchs():
    import torch
    for args, kw in [((torch.zeros(1, 2, 4, 5),), dict(size=0)), ((torch.zeros(1, 2, 4),), dict(size=0)), ((torch.zeros(1, 2, 4),), dict(size=3, mode="trilinear")),
                     ((torch.zeros(1, 2),), dict(size=3)), ((torch.zeros(1, 2, 4, 5),), dict(size=3, mode="bicubic0"))]:
        with pytest.raises(Exception) as theirs:
            torch.nn.functional.interpolate(*args, **kw)
        with pytest.raises(type(theirs.value)) as ours:
            F.interpolate(tg.zeros(*args[0].shape), **kw)
        assert str(ours.value) == str(theirs.value)


def test_deprecated_upsample_names_warn():
    x = tg.ones(1, 1, 2, 2)
    with pytest.warns(UserWarning, match="upsample_bilinear` is deprecated"):
        assert F.upsample_bilinear(x, scale_factor=2).shape == (1, 1, 4, 4)
    with pytest.warns(UserWarning, match="upsample` is deprecated"):
        assert F.upsample(x, size=3).shape == (1, 1, 3, 3)


# -- pixel shuffle ------------------------------------------------------------------------------------

def test_pixel_shuffle_layout_and_inverse():
    x = tg.arange(2 * 8 * 2 * 3, dtype=tg.float64).reshape(2, 8, 2, 3)
    y = F.pixel_shuffle(x, 2)
    assert y.shape == (2, 2, 4, 6)
    a = x.numpy()
    # out[n, c, h r + i, w r + j] = in[n, c r^2 + i r + j, h, w]
    assert y.numpy()[1, 1, 3, 4] == a[1, 1 * 4 + 1 * 2 + 0, 1, 2]
    assert (F.pixel_unshuffle(y, 2).numpy() == a).all()
    z = tg.tensor(RNG.standard_normal((4, 2, 3)), requires_grad=True)
    assert gradcheck(lambda t: F.pixel_shuffle(t, 2), (z,))


@pytest.mark.torch
@pytest.mark.parametrize("shape,r", [((2, 9, 2, 3), 3), ((3, 2, 8, 2, 2), 2), ((4, 1, 1), 1)])
def test_pixel_shuffle_against_torch(shape, r):
    import torch
    compare_modules(torch.nn.PixelShuffle(r), nn.PixelShuffle(r), RNG.standard_normal(shape))
    back = shape[:-3] + (shape[-3] // (r * r), shape[-2] * r, shape[-1] * r)
    compare_modules(torch.nn.PixelUnshuffle(r), nn.PixelUnshuffle(r), RNG.standard_normal(back))


@pytest.mark.parametrize("call,message", [
    (lambda: F.pixel_shuffle(tg.zeros(2, 3, 4, 4), 2), "input.size(-3)=3 is not divisible by 4"),
    (lambda: F.pixel_shuffle(tg.zeros(4, 4), 2), "at least 3 dimensions, but got input with 2 dimension(s)"),
    (lambda: F.pixel_shuffle(tg.zeros(1, 4, 4, 4), 0), "expects a positive upscale_factor, but got 0"),
    (lambda: F.pixel_unshuffle(tg.zeros(1, 1, 3, 4), 2), "expects height to be divisible by downscale_factor"),
    (lambda: F.pixel_unshuffle(tg.zeros(1, 1, 4, 5), 2), "input.size(-1)=5 is not divisible by 2"),
])
def test_pixel_shuffle_errors(call, message):
    with pytest.raises(RuntimeError) as info:
        call()
    assert message in str(info.value)


# -- layers -------------------------------------------------------------------------------------------

REPRS = ["Upsample(scale_factor=2)", "Upsample(size=(3, 4), mode='bilinear')", "UpsamplingNearest2d(size=5)",
         "UpsamplingBilinear2d(scale_factor=(2, 3))", "PixelShuffle(3)", "PixelUnshuffle(2)",
         "ZeroPad1d(2)", "ZeroPad2d((1, 0, 2, 3))", "ZeroPad3d(1)", "ConstantPad1d((1, 2), 3.5)",
         "ConstantPad2d(1, -1)", "ConstantPad3d((1, 0, 0, 1, 2, 0), 0.5)", "ReflectionPad1d(2)",
         "ReflectionPad2d((1, 0, 2, 1))", "ReflectionPad3d(1)", "ReplicationPad1d(3)",
         "ReplicationPad2d((0, 1, 2, 3))", "ReplicationPad3d(2)", "CircularPad1d(1)", "CircularPad2d((1, 2, 0, 1))",
         "CircularPad3d(1)"]


@pytest.mark.torch
@pytest.mark.parametrize("spec", REPRS)
def test_layer_reprs_and_attributes_match_torch(spec):
    import torch  # noqa: F401 -- used by eval
    ours, theirs = eval("nn." + spec), eval("torch.nn." + spec)
    assert repr(ours) == repr(theirs)
    for name in ("padding", "value", "size", "scale_factor", "mode", "align_corners", "recompute_scale_factor"):
        assert getattr(ours, name, None) == getattr(theirs, name, None), name


PAD_CASES = [("ZeroPad1d(2)", (2, 3, 4)), ("ZeroPad2d((1, 0, 2, 3))", (2, 2, 3, 4)), ("ZeroPad3d(1)", (1, 2, 2, 3)),
             ("ConstantPad1d((1, -1), 3.5)", (3, 4)), ("ConstantPad2d(1, -1.0)", (2, 2, 3, 4)),
             ("ConstantPad3d((1, 0, 0, 1, 2, 0), 0.5)", (1, 2, 2, 3, 2)), ("ReflectionPad1d(2)", (2, 3, 4)),
             ("ReflectionPad2d((1, 0, 2, 1))", (2, 3, 4)), ("ReflectionPad3d(1)", (1, 2, 2, 3, 4)),
             ("ReplicationPad1d(3)", (3, 4)), ("ReplicationPad2d((0, 1, 2, 3))", (1, 2, 3, 4)),
             ("ReplicationPad3d(2)", (2, 2, 3, 2)), ("CircularPad1d(1)", (2, 3, 4)),
             ("CircularPad2d((1, 2, 0, 1))", (2, 2, 3, 4)), ("CircularPad3d(1)", (1, 1, 2, 3, 4))]


@pytest.mark.torch
@pytest.mark.parametrize("spec,shape", PAD_CASES)
def test_padding_layers_against_torch(spec, shape):
    import torch  # noqa: F401 -- used by eval
    compare_modules(eval("torch.nn." + spec), eval("nn." + spec), RNG.standard_normal(shape))


@pytest.mark.torch
@pytest.mark.parametrize("spec,shape", [("Upsample(scale_factor=2)", (2, 3, 4)),
                                        ("Upsample(size=(3, 5), mode='bicubic', align_corners=True)", (1, 2, 4, 4)),
                                        ("Upsample(scale_factor=(1.5, 0.5, 2), mode='trilinear')", (1, 1, 2, 4, 3)),
                                        ("UpsamplingNearest2d(scale_factor=3)", (1, 2, 2, 3)),
                                        ("UpsamplingBilinear2d(size=(5, 7))", (2, 1, 3, 4))])
def test_upsample_layers_against_torch(spec, shape):
    import torch  # noqa: F401 -- used by eval
    compare_modules(eval("torch.nn." + spec), eval("nn." + spec), RNG.standard_normal(shape))


def test_padding_layers_by_hand():
    x = tg.tensor([[[1.0, 2.0, 3.0]]])
    assert nn.ReflectionPad1d(2)(x).tolist() == [[[3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0]]]
    assert nn.ReplicationPad1d((1, 2))(x).tolist() == [[[1.0, 1.0, 2.0, 3.0, 3.0, 3.0]]]
    assert nn.CircularPad1d((2, 1))(x).tolist() == [[[2.0, 3.0, 1.0, 2.0, 3.0, 1.0]]]
    assert nn.ConstantPad1d(1, 7.0)(x).tolist() == [[[7.0, 1.0, 2.0, 3.0, 7.0]]]
    assert nn.ZeroPad2d((0, 1, 1, 0))(tg.ones(1, 1, 1)).tolist() == [[[0.0, 0.0], [1.0, 0.0]]]
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        nn.CircularPad2d(1)(tg.ones(2, 2))
