"""affine_grid and grid_sample: values and gradients (input, grid, theta; float64) against
PyTorch over modes (bicubic on 2-d), padding modes and align_corners, 2-d and 3-d; an identity transform
and gradcheck without PyTorch; errors by type and message."""
import itertools

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.autograd import gradcheck
from tracegrad.nn import functional as F

from ._oracle import assert_close

RNG = np.random.default_rng(53)


def _compare(fn_name, arrays, *args, **kw):
    import torch
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    os_ = [tg.tensor(a, requires_grad=True) for a in arrays]
    expected = getattr(torch.nn.functional, fn_name)(*ts, *args, **kw)
    got = getattr(F, fn_name)(*os_, *args, **kw)
    assert_close(got, expected, 1e-12, 1e-12, "values")
    g = RNG.standard_normal(tuple(expected.shape))
    expected.backward(torch.tensor(g))
    got.backward(tg.tensor(g))
    for k, (o, t) in enumerate(zip(os_, ts)):
        assert_close(o.grad, t.grad, 1e-10, 1e-10, f"grad {k}")


@pytest.mark.torch
@pytest.mark.filterwarnings("ignore:Since version 1.3.0")  # the unit-size grid, warned by both
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 2, 1, 3), (2, 2, 3, 4, 5)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_against_torch(size, align_corners):
    k = len(size) - 2
    _compare("affine_grid", [RNG.standard_normal((size[0], k, k + 1))], size, align_corners=align_corners)


@pytest.mark.torch
@pytest.mark.parametrize("shapes", [((2, 3, 5, 6), (2, 4, 7, 2)), ((1, 2, 3, 4, 5), (1, 2, 3, 4, 3))], ids=str)
@pytest.mark.parametrize("mode,padding_mode,align_corners",
                         list(itertools.product(["bilinear", "nearest"], ["zeros", "border", "reflection"],
                                                [False, True])))
def test_grid_sample_against_torch(shapes, mode, padding_mode, align_corners):
    input_shape, grid_shape = shapes
    _compare("grid_sample", [RNG.standard_normal(input_shape), RNG.uniform(-1.5, 1.5, grid_shape)], mode=mode,
             padding_mode=padding_mode, align_corners=align_corners)


@pytest.mark.torch
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_bicubic_against_torch(padding_mode, align_corners):
    _compare("grid_sample", [RNG.standard_normal((2, 3, 5, 6)), RNG.uniform(-1.5, 1.5, (2, 4, 7, 2))],
             mode="bicubic", padding_mode=padding_mode, align_corners=align_corners)


def test_identity_transform_reproduces_the_input_and_gradchecks():
    x = tg.tensor(RNG.standard_normal((2, 3, 4, 5)))
    theta = tg.tensor(np.tile(np.eye(2, 3), (2, 1, 1)))
    for align_corners in (False, True):
        grid = F.affine_grid(theta, (2, 3, 4, 5), align_corners=align_corners)
        out = F.grid_sample(x, grid, align_corners=align_corners)
        np.testing.assert_allclose(out.numpy(), x.numpy(), atol=1e-12)
    inp = tg.tensor(RNG.standard_normal((1, 2, 3, 4)), requires_grad=True)
    grid = tg.tensor(RNG.uniform(-0.9, 0.9, (1, 2, 3, 2)), requires_grad=True)
    for padding_mode in ("zeros", "border", "reflection"):
        assert gradcheck(lambda a, g: F.grid_sample(a, g, padding_mode=padding_mode, align_corners=False),
                         (inp, grid))
    th = tg.tensor(RNG.standard_normal((1, 2, 3)), requires_grad=True)
    assert gradcheck(lambda t: F.grid_sample(inp.detach(), F.affine_grid(t, (1, 2, 3, 3), align_corners=True),
                                             align_corners=True), (th,))


@pytest.mark.parametrize("call,error,message", [
    (lambda: F.grid_sample(tg.zeros(1, 1, 2, 2), tg.zeros(1, 2, 2, 2), mode="cubic"), ValueError,
     "expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'cubic'"),
    (lambda: F.grid_sample(tg.zeros(1, 1, 2, 2), tg.zeros(1, 2, 2, 2), padding_mode="wrap"), ValueError,
     "expected padding_mode to be 'zeros', 'border', or 'reflection', but got: 'wrap'"),
    (lambda: F.grid_sample(tg.zeros(1, 1, 2, 2, 2), tg.zeros(1, 1, 1, 1, 3), mode="bicubic", align_corners=False),
     RuntimeError, "grid_sampler(): bicubic interpolation only supports 4D input"),
    (lambda: F.affine_grid(tg.zeros(1, 2, 3), (1, 1, 2, 2, 2), align_corners=False), ValueError,
     "Expected a batch of 3D affine matrices of shape Nx3x4 for size [1, 1, 2, 2, 2]"),
    (lambda: F.affine_grid(tg.zeros(1, 2, 3), (1, 2, 3), align_corners=False), NotImplementedError,
     "affine_grid only supports 4D and 5D sizes"),
    (lambda: F.affine_grid(tg.zeros(1, 2, 3, dtype=tg.int64), (1, 1, 2, 2), align_corners=False), ValueError,
     "Expected theta to have floating point type"),
])
def test_errors(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)


def test_default_align_corners_warns():
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.grid_sample(tg.zeros(1, 1, 2, 2), tg.zeros(1, 2, 2, 2))


@pytest.mark.parametrize("padding_mode", ["border", "reflection"])
@pytest.mark.parametrize("align_corners", [True, False])
def test_points_on_the_edge_take_no_gradient_from_the_clip(padding_mode, align_corners):
    """An identity affine grid (a spatial transformer's start) puts points exactly on the
    input's edge: there the clip's gradient is 0, as PyTorch's clip_coordinates_set_grad
    has it (clamp's would be 1). Only translation keeps a gradient: sum over the image of
    the input's finite differences, by hand."""
    inp = tg.arange(12.0).view(1, 1, 3, 4)
    theta = tg.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], requires_grad=True)
    grid = tg.nn.functional.affine_grid(theta, (1, 1, 3, 4), align_corners=align_corners)
    tg.nn.functional.grid_sample(inp, grid, padding_mode=padding_mode, align_corners=align_corners).sum().backward()
    # The grid points sit on pixel centres 0..3 (x) and 0..2 (y); only those strictly
    # inside take a gradient. d/dtx: 6 points (columns 1, 2) x dI/dx 1 x dx/dtx ((W-1)/2 =
    # 1.5 with align_corners, else W/2 = 2) = 9 or 12; d/dty: 4 points (row 1) x dI/dy 4 x
    # dy/dty (1 or 1.5) = 16 or 24
    expected = [[0.0, 0.0, 9.0], [0.0, 0.0, 16.0]] if align_corners else [[0.0, 0.0, 12.0], [0.0, 0.0, 24.0]]
    np.testing.assert_allclose(theta.grad.numpy()[0], expected, atol=1e-5)


def test_nan_and_inf_coordinates_sample_as_pytorch():
    """NaN-marked flow (optical-flow evaluation): the clip puts NaN at 0, zeros padding reads
    nothing there (bilinear: NaN weights), reflection of inf is NaN, then 0; no crash."""
    x = tg.arange(20.0).view(1, 1, 4, 5)
    nan, inf = float("nan"), float("inf")

    def sample(point, mode, pad):
        return F.grid_sample(x, tg.tensor([[[point]]]), mode=mode, padding_mode=pad, align_corners=False).item()
    assert np.isnan(sample([nan, 0.0], "bilinear", "zeros"))
    assert sample([nan, 0.0], "bilinear", "border") == 7.5    # (x at 0, y at 1.5)
    assert sample([nan, 0.0], "nearest", "zeros") == 0.0
    assert sample([nan, 0.0], "nearest", "border") == 10.0
    assert sample([nan, nan], "bilinear", "reflection") == 0.0
    assert sample([inf, 0.2], "bilinear", "border") == pytest.approx(13.5)
    assert sample([inf, 0.2], "bilinear", "reflection") == pytest.approx(9.5)
    assert sample([inf, 0.2], "nearest", "zeros") == 0.0
