"""``affine_grid`` and ``grid_sample`` (spatial transformers), for 2-d and 3-d inputs.

``affine_grid`` is the base grid of normalised coordinates times the transposed affine
matrices (one ``matmul``). ``grid_sample`` maps each grid point to pixel coordinates, folds
them into range by the padding mode (clamped for ``border``, mirrored for ``reflection``),
then reads the 2^k neighbouring pixels with ``gather`` and mixes them with the (multi)linear
weights (``bilinear``), or reads the nearest one (``nearest``); ``bicubic`` (2-d) mixes the
4 x 4 taps around the unfolded point with Keys' weights, folding each tap into range. Every step is a tensor op, so
gradients reach both the input and the grid, as in PyTorch.
"""
import itertools
import warnings

from ...ops.pointwise import where
from ...ops.shape import stack
from ...runtime import creation
from ...runtime.grad_mode import no_grad

__all__ = ["affine_grid", "grid_sample"]

_DEFAULT_CHANGED = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                    "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                    "grid_sample for details.")


def _base_coordinates(n, align_corners, like):
    """The normalised coordinates of ``n`` pixel centres (or corners): PyTorch's ``linspace_from_neg_one``."""
    if n <= 1:
        return creation.zeros(1, dtype=like.dtype, device=like.device)
    steps = creation.linspace(-1, 1, n, dtype=like.dtype, device=like.device)
    return steps if align_corners else steps * ((n - 1) / n)


def affine_grid(theta, size, align_corners=None):
    """(N, *spatial, k) sampling grid of the affine maps ``theta`` (N, k, k + 1) over ``size``."""
    if align_corners is None:
        warnings.warn(_DEFAULT_CHANGED, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                             f"{theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                             f"{theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    k = len(spatial)
    axes = [_base_coordinates(n, align_corners, theta) for n in spatial]      # D?, H, W
    columns = []
    for i in range(k):  # x runs along the last dim, y the one before, z the first
        shape = [1] * k
        shape[k - 1 - i] = spatial[k - 1 - i]
        columns.append(axes[k - 1 - i].reshape(shape).expand(*spatial))
    columns.append(creation.ones(*spatial, dtype=theta.dtype, device=theta.device))
    base = stack(columns, -1).reshape(1, -1, k + 1)                 # (1, P, k + 1)
    grid = base.matmul(theta.transpose(1, 2))                               # (N, P, k)
    return grid.view(size[0], *spatial, k)


def _unnormalize(coord, n, align_corners):
    return (coord + 1) / 2 * (n - 1) if align_corners else ((coord + 1) * n - 1) / 2


def _reflect(coord, twice_low, twice_high):
    """``coord`` mirrored into [low, high] (PyTorch's ``reflect_coordinates``)."""
    if twice_low == twice_high:
        return coord * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    distance = (coord - low).abs()
    with no_grad():
        flips = (distance / span).floor()
    extra = distance - flips * span
    return where(flips % 2 == 0, extra + low, span - extra + low)


def _source_coordinate(coord, n, padding_mode, align_corners):
    return _fold_into_range(_unnormalize(coord, n, align_corners), n, padding_mode, align_corners)


def _fold_into_range(coord, n, padding_mode, align_corners):
    """Pixel coordinates brought into the input as the padding mode says (zeros: left as they are)."""
    if padding_mode == "border":
        return _clip(coord, n)
    if padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (n - 1)) if align_corners else _reflect(coord, -1, 2 * n - 1)
        return _clip(coord, n)
    return coord


def _clip(coord, n):
    """``coord`` clamped to [0, n - 1], with PyTorch's gradient: 1 strictly inside, 0 on the
    edges too (``clip_coordinates_set_grad``), where ``clamp``'s would be 1 -- an affine
    grid's identity theta puts points exactly there."""
    inside = (coord > 0) & (coord < n - 1)  # (NaN is put at 0, as PyTorch's clip puts it)
    return where(inside, coord, coord.detach().nan_to_num(nan=0.0).clamp(0, n - 1))


def _read(flat, positions, sizes, channels):
    """Values of ``flat`` (N, C, S) at integer positions (one (N, P) tensor per dim, in D, H, W
    order), zero where a position is outside the input."""
    index, inside = None, None
    for pos, n in zip(positions, sizes):
        ok = (pos >= 0) & (pos <= n - 1)
        inside = ok if inside is None else inside & ok
        clamped = pos.nan_to_num(nan=0.0).clamp(0, n - 1).long()  # (NaN: outside, any index)
        index = clamped if index is None else index * n + clamped
    picked = flat.gather(2, index.unsqueeze(1).expand(-1, channels, -1))
    return picked * inside.unsqueeze(1).to(flat.dtype)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` (N, C, *spatial) at the normalised points ``grid`` (N, *out, k)."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_DEFAULT_CHANGED, stacklevel=2)
        align_corners = False
    if input.ndim not in (4, 5):
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    k = input.ndim - 2
    if grid.ndim != input.ndim or grid.shape[0] != input.shape[0] or grid.shape[-1] != k:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {k} in last dimension and the same batch "
                           f"size as input, but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if mode == "bicubic" and k != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    n, c = input.shape[:2]
    sizes = tuple(input.shape[2:])                                          # D?, H, W
    out_shape = tuple(grid.shape[1:-1])
    points = grid.reshape(n, -1, k)
    # grid's last dim lists x (W), y (H), z (D): reverse it to the input's dim order
    coords = [_source_coordinate(points[..., k - 1 - d], sizes[d], padding_mode, align_corners) for d in range(k)]
    flat = input.reshape(n, c, -1)
    if mode == "nearest":
        nearest = [x.round() for x in coords]
        out = _read(flat, [x.detach() for x in nearest], sizes, c)
        # a factor of one whose gradient is round's zero: the grid gets PyTorch's zero gradient, not None
        unit = sum(where(x.isfinite(), x - x.detach(), 0.0) for x in nearest) + 1  # (1 at NaN/inf too)
        return (out * unit.unsqueeze(1)).view(n, c, *out_shape)
    if mode == "bicubic":
        return _bicubic(flat, points, sizes, padding_mode, align_corners).view(n, c, *out_shape)
    with no_grad():
        lows = [x.floor() for x in coords]
    fractions = [x - low for x, low in zip(coords, lows)]
    out = None
    for corner in itertools.product((0, 1), repeat=k):
        weight = None
        for bit, frac in zip(corner, fractions):
            w = frac if bit else 1 - frac
            weight = w if weight is None else weight * w
        term = _read(flat, [low + bit for low, bit in zip(lows, corner)], sizes, c) * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out.view(n, c, *out_shape)


_CUBIC_A = -0.75


def _cubic_weights(t):
    """Keys' cubic convolution weights (A = -0.75) of the taps at -1, 0, 1, 2 for the fraction ``t``."""
    a = _CUBIC_A

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _bicubic(flat, points, sizes, padding_mode, align_corners):
    """PyTorch's bicubic grid sampling: the 4 x 4 taps around each unpadded point, each tap's
    integer position then folded into range by the padding mode (zeros outside)."""
    h, w = sizes
    x = _unnormalize(points[..., 0], w, align_corners)
    y = _unnormalize(points[..., 1], h, align_corners)
    with no_grad():
        x0, y0 = x.floor(), y.floor()
    wx, wy = _cubic_weights(x - x0), _cubic_weights(y - y0)
    out = None
    for i in range(4):
        for j in range(4):
            with no_grad():
                tap_x = _fold_into_range(x0 + (j - 1), w, padding_mode, align_corners)
                tap_y = _fold_into_range(y0 + (i - 1), h, padding_mode, align_corners)
            term = _read(flat, [tap_y.floor(), tap_x.floor()], sizes, flat.shape[1]) * (wy[i] * wx[j]).unsqueeze(1)
            out = term if out is None else out + term
    return out
