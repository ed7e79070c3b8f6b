"""The convolution kernels' alternative paths give the same values: a stride-1 transposed
convolution (a convolution's input gradient) as the correlation with the flipped kernel
(``_flipped``) or as one product and a fold (``_scatter``), whichever ``folds_cheaper``
picks; each against the definition (2-d) and the adjoint identity (1-d, 3-d), with
groups, dilation, padding beyond the kernel's reach and output padding; and (marked
``torch``) input, weight and bias gradients of convolutions whose shapes take each path,
in float32 and float64."""
import itertools

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.backend import cpu
from tracegrad.rules import conv as conv_rules

from ._oracle import assert_close, to_np
from .test_conv import conv_transpose_ref

RNG = np.random.default_rng(23)

# (x shape, w shape, stride, padding, dilation, output_padding, groups); x is (N, Cin, *S)
# and w (Cin, Cout/groups, *K), as conv_transpose's
TRANSPOSED = [
    ((2, 4, 5, 4), (4, 3, 3, 2), (1, 1), (0, 0), (1, 1), (0, 0), 1),
    ((2, 4, 5, 4), (4, 3, 3, 3), (1, 1), (1, 2), (2, 1), (1, 0), 2),
    ((3, 6, 2, 3), (6, 2, 3, 3), (1, 1), (3, 1), (1, 1), (0, 0), 3),   # padding past the kernel: crops
    ((2, 4, 4, 4), (4, 5, 3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 1),
    ((2, 4, 3, 4), (4, 3, 3, 2), (2, 3), (1, 0), (1, 2), (1, 2), 2),
]


def _both(x, w, stride, padding, dilation, output_padding, groups):
    """The fold's result, and the flipped correlation's where it applies (stride 1)."""
    args = (x, w, stride, padding, dilation, output_padding, groups)
    fold = conv_rules._scatter(cpu, *args)
    if all(s == 1 for s in stride):
        return fold, conv_rules._flipped(cpu, x, w, padding, dilation, output_padding, groups)
    return fold, None


@pytest.mark.parametrize("case", TRANSPOSED, ids=[str(i) for i in range(len(TRANSPOSED))])
def test_fold_and_flipped_paths_match_the_definition(case):
    xs, ws, stride, padding, dilation, output_padding, groups = case
    x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
    ref = conv_transpose_ref(x, w, stride=stride, padding=padding, output_padding=output_padding,
                             groups=groups, dilation=dilation)
    fold, flipped = _both(x, w, stride, padding, dilation, output_padding, groups)
    np.testing.assert_allclose(fold, ref, rtol=1e-12, atol=1e-12)
    if flipped is not None:
        np.testing.assert_allclose(flipped, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("nd", [1, 3])
@pytest.mark.parametrize("stride", [1, 2])
def test_fold_and_flipped_paths_are_the_adjoint_of_correlate(nd, stride):
    """<correlate(u, w), v> == <u, correlate_transposed(v, w)> for both paths."""
    n, c, o, groups = 2, 4, 6, 2
    kernel, sizes = (3, 2, 2)[:nd], (7, 6, 5)[:nd]
    st, pad, dil = (stride,) * nd, (1,) * nd, (2, 1, 1)[:nd]
    u = RNG.standard_normal((n, c) + sizes)
    w = RNG.standard_normal((o, c // groups) + kernel)
    y = conv_rules.correlate(cpu, u, w, st, dil, pad, pad, groups)
    v = RNG.standard_normal(y.shape)
    extra = tuple(m - conv_rules.transposed_output_size(q, k, s, p, d, 0)
                  for m, q, k, s, p, d in zip(sizes, y.shape[2:], kernel, st, pad, dil))
    for back in _both(v, w, st, pad, dil, extra, groups):
        if back is not None:
            assert back.shape == u.shape
            np.testing.assert_allclose(np.vdot(y, v), np.vdot(u, back), rtol=1e-12)


def test_the_weight_size_picks_the_path():
    """ResNet's late layers (many channels, tiny images) fold; its early ones unfold."""
    late = np.empty((8, 512, 2, 2), np.float32), np.empty((512, 512, 3, 3), np.float32)
    early = np.empty((8, 64, 16, 16), np.float32), np.empty((64, 64, 3, 3), np.float32)
    assert conv_rules.folds_cheaper(*late, 1)
    assert not conv_rules.folds_cheaper(*early, 1)


# convolutions (x shape, w shape, kwargs, whether the input gradient folds)
GRAD_CASES = [
    ((2, 16, 2, 2), (16, 16, 3, 3), dict(padding=1), True),
    ((2, 8, 2, 2), (16, 4, 3, 3), dict(padding=1, groups=2), True),
    ((2, 8, 3, 2), (8, 8, 2, 2), dict(padding=(1, 0), dilation=(2, 1)), True),
    ((2, 3, 9, 8), (4, 3, 3, 3), dict(padding=1), False),
    ((2, 16, 4, 4), (16, 16, 3, 3), dict(stride=2, padding=1), True),   # strided: always folds
    ((2, 8, 5, 4), (6, 8, 1, 1), dict(padding=(1, 0)), False),          # 1x1: no unfolding copy
    ((2, 3, 9, 8), (4, 3, 7, 7), dict(stride=2, padding=3), True),      # the stem: phase split
]


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", GRAD_CASES, ids=[str(i) for i in range(len(GRAD_CASES))])
def test_conv2d_gradients_against_pytorch(case, dtype):
    import torch
    xs, ws, kw, folds = case
    x, w, b = RNG.standard_normal(xs), RNG.standard_normal(ws), RNG.standard_normal(ws[0])
    results = []
    for lib in (tg, torch):
        dt = getattr(lib, dtype)
        args = [lib.tensor(a, dtype=dt, requires_grad=True) for a in (x, w, b)]
        y = lib.nn.functional.conv2d(*args, **kw)
        g = lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)), dtype=dt)
        y.backward(g)
        results.append([y] + [a.grad for a in args])
    if kw.get("stride", 1) == 1:
        assert conv_rules.folds_cheaper(to_np(results[0][0]), w, kw.get("groups", 1)) == folds
    for ours, theirs in zip(*results):
        assert_close(ours, theirs)


def _windows_ref(x, kernel, stride, dilation, lo, hi):
    """(C, *kernel, *out, N): every tap of every window of x zero-padded by lo/hi, by loops."""
    nd = len(kernel)
    pad = [(0, 0), (0, 0)] + [(max(a, 0), max(b, 0)) for a, b in zip(lo, hi)]
    xp_ = np.pad(x, pad)
    crop = tuple(slice(max(-a, 0), xp_.shape[2 + i] - max(-b, 0)) for i, (a, b) in enumerate(zip(lo, hi)))
    xp_ = xp_[(slice(None), slice(None)) + crop]
    out = [(xp_.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    ref = np.zeros((x.shape[1],) + tuple(kernel) + tuple(out) + (x.shape[0],))
    for k in itertools.product(*map(range, kernel)):
        for pos in itertools.product(*map(range, out)):
            at = tuple(p * s + t * d for p, s, t, d in zip(pos, stride, k, dilation))
            ref[(slice(None),) + k + pos] = xp_[(slice(None), slice(None)) + at].T
    return ref, tuple(out)


UNFOLD = [  # (spatial, kernel, stride, dilation, lo, hi): the last dims' strides take the phase split
    ((9,), (3,), (2,), (1,), (1,), (1,)),
    ((10,), (4,), (3,), (2,), (2,), (0,)),
    ((7, 11), (7, 7), (2, 2), (1, 1), (3, 3), (3, 3)),
    ((6, 9), (2, 3), (1, 3), (2, 2), (0, 1), (1, 2)),
    ((5, 8), (3, 2), (2, 2), (1, 3), (-1, 1), (1, -1)),     # negative padding crops
    ((4, 5, 7), (2, 2, 3), (1, 2, 2), (1, 1, 1), (0, 1, 1), (1, 0, 1)),
    ((6, 6), (1, 1), (2, 2), (1, 1), (0, 0), (0, 0)),        # 1x1, strided: the taken positions' copy
    ((5, 7, 6), (1, 1, 1), (2, 3, 4), (1, 1, 1), (0, 0, 0), (0, 0, 0)),
    ((5, 6), (1, 1), (2, 2), (1, 1), (1, 0), (0, 1)),        # 1x1, strided, padded: unfolded
    ((5, 6), (1, 1), (1, 1), (1, 1), (1, 0), (0, 2)),        # 1x1, stride 1: the padded copy itself
]


@pytest.mark.parametrize("case", UNFOLD, ids=[str(i) for i in range(len(UNFOLD))])
def test_unfold_takes_every_tap_of_every_window(case):
    spatial, kernel, stride, dilation, lo, hi = case
    x = RNG.standard_normal((3, 4) + spatial)
    ref, out = _windows_ref(x, kernel, stride, dilation, lo, hi)
    cols, positions = conv_rules.unfold(cpu, x, kernel, stride, dilation, lo, hi)
    assert positions == out
    np.testing.assert_array_equal(cols, ref)
    fewer = tuple(max(1, m - 1) for m in out)  # the weight gradient's count of positions
    cols, _ = conv_rules.unfold(cpu, x, kernel, stride, dilation, lo, hi, fewer)
    np.testing.assert_array_equal(cols, ref[(Ellipsis,) + tuple(slice(0, m) for m in fewer) + (slice(None),)])
