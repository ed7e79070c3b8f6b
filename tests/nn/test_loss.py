"""Loss functions and modules: values against hand formulas, gradients against finite
differences, node names, warnings and errors by type and message; and (marked ``torch``)
every option combination against PyTorch, outputs and all gradients."""
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.nn import functional as F

RNG = np.random.default_rng(7)
REDUCTIONS = ("mean", "sum", "none")
TOL = {"float32": dict(rtol=1e-4, atol=1e-6), "float64": dict(rtol=1e-7, atol=1e-10)}


def randn(*shape):
    return RNG.standard_normal(shape)


def probs(*shape):
    return RNG.uniform(0.05, 0.95, shape)


def classes(n, *shape, ignored=()):
    t = RNG.integers(0, n, shape)
    for idx in ignored:
        t[idx] = -100
    return t


def softmax(z, axis):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def reduce_np(v, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction](v)


# -- the cases: (function, positional arrays, keyword arguments, positions taking a gradient) ------

def _cases():
    cases = []
    for red in REDUCTIONS:
        x, y = randn(3, 4), randn(3, 4)
        cases += [("mse_loss", (x, y), dict(reduction=red), (0, 1)),
                  ("l1_loss", (x, y), dict(reduction=red), (0, 1)),
                  ("smooth_l1_loss", (x, y), dict(reduction=red), (0, 1)),
                  ("smooth_l1_loss", (x, y), dict(reduction=red, beta=0.5), (0,)),
                  ("smooth_l1_loss", (x, y), dict(reduction=red, beta=0.0), (0,)),
                  ("huber_loss", (x, y), dict(reduction=red), (0, 1)),
                  ("huber_loss", (x, y), dict(reduction=red, delta=0.7), (0,)),
                  ("mse_loss", (x, y), dict(reduction=red, weight=probs(3, 4)), (0,)),
                  ("l1_loss", (x, y), dict(reduction=red, weight=probs(3, 4)), (0,)),
                  ("huber_loss", (x, y), dict(reduction=red, weight=probs(3, 4)), (0,))]
        # class-index cross entropy / nll: 1-d (unbatched), 2-d, 3-d, 4-d, 5-d inputs
        for shape, tshape in (((5,), ()), ((3, 5), (3,)), ((2, 5, 3), (2, 3)), ((2, 5, 2, 3), (2, 2, 3)),
                              ((2, 5, 2, 1, 2), (2, 2, 1, 2))):
            x, t = randn(*shape), classes(5, *tshape)
            for fn in ("cross_entropy", "nll_loss"):
                cases.append((fn, (x, t), dict(reduction=red), (0,)))
                cases.append((fn, (x, t), dict(reduction=red, weight=probs(5)), (0,)))
            cases.append(("cross_entropy", (x, t), dict(reduction=red, label_smoothing=0.3), (0,)))
            cases.append(("cross_entropy", (x, t), dict(reduction=red, label_smoothing=0.2, weight=probs(5)), (0,)))
        x, t = randn(4, 5), classes(5, 4, ignored=(1,))
        for fn in ("cross_entropy", "nll_loss"):
            cases.append((fn, (x, t), dict(reduction=red, weight=probs(5)), (0,)))
            cases.append((fn, (x, np.array([0, 2, 2, 4])), dict(reduction=red, ignore_index=2), (0,)))
        cases.append(("cross_entropy", (x, t), dict(reduction=red, label_smoothing=0.1, weight=probs(5)), (0,)))
        cases.append(("cross_entropy", (x, np.array([0, 2, 2, 4])),
                      dict(reduction=red, ignore_index=2, label_smoothing=0.4), (0,)))
        # class-probability targets
        for shape in ((3, 5), (5,), (2, 5, 3)):
            cdim = 0 if len(shape) == 1 else 1
            p = softmax(randn(*shape), cdim)
            cases.append(("cross_entropy", (randn(*shape), p), dict(reduction=red), (0, 1)))
            cases.append(("cross_entropy", (randn(*shape), p), dict(reduction=red, weight=probs(5)), (0, 1)))
            cases.append(("cross_entropy", (randn(*shape), p), dict(reduction=red, label_smoothing=0.25), (0, 1)))
        # binary cross entropies
        cases.append(("binary_cross_entropy", (probs(3, 4), probs(3, 4)), dict(reduction=red), (0, 1)))
        cases.append(("binary_cross_entropy", (probs(3, 4), probs(3, 4)), dict(reduction=red, weight=probs(3, 4)), (0, 1)))
        cases.append(("binary_cross_entropy", (probs(3, 4), probs(3, 4)), dict(reduction=red, weight=probs(4)), (0,)))
        z = randn(3, 4) * 4
        cases.append(("binary_cross_entropy_with_logits", (z, probs(3, 4)), dict(reduction=red), (0, 1)))
        cases.append(("binary_cross_entropy_with_logits", (z, probs(3, 4)),
                      dict(reduction=red, weight=probs(3, 4), pos_weight=probs(4) * 3), (0, 1)))
        cases.append(("binary_cross_entropy_with_logits", (z, probs(3, 4)), dict(reduction=red, pos_weight=probs(3, 4)), (0, 1)))
        cases.append(("binary_cross_entropy_with_logits", (z, probs(3, 4)), dict(reduction=red, weight=probs(4)), (0,)))
        cases.append(("binary_cross_entropy_with_logits", (np.array([-200.0, 200.0, 0.0]), np.array([1.0, 0.0, 0.5])),
                      dict(reduction=red), (0,)))
        # kl divergence
        for log_target in (False, True):
            p = softmax(randn(3, 4), 1)
            cases.append(("kl_div", (np.log(softmax(randn(3, 4), 1)), np.log(p) if log_target else p),
                          dict(reduction=red, log_target=log_target), (0, 1)))
    cases.append(("kl_div", (np.log(softmax(randn(3, 4), 1)), softmax(randn(3, 4), 1)), dict(reduction="batchmean"), (0, 1)))
    cases.append(("kl_div", (randn(3, 4), randn(3, 4)), dict(reduction="batchmean", log_target=True), (0, 1)))
    cases.append(("kl_div", (randn(3, 4), np.array([[0.0, 0.5, 0.5, 0.0]] * 3)), dict(reduction="sum"), (0,)))
    # broadcast targets (with PyTorch's warning), 0-d and empty inputs
    cases.append(("mse_loss", (randn(3, 4), randn(4)), {}, (0, 1)))
    cases.append(("l1_loss", (randn(3, 1), randn(1, 4)), dict(reduction="none"), (0, 1)))
    cases.append(("huber_loss", (randn(3, 4), randn(1, 4)), dict(reduction="sum"), (0, 1)))
    cases.append(("mse_loss", (np.array(1.5), np.array(-0.5)), {}, (0, 1)))
    cases.append(("mse_loss", (randn(0, 3), randn(0, 3)), dict(reduction="sum"), (0, 1)))
    cases.append(("cross_entropy", (randn(0, 3), classes(3, 0)), dict(reduction="sum"), (0,)))
    return cases


CASES = _cases()
IDS = [f"{k}-{name}-{'-'.join(f'{a}={v}' for a, v in kw.items() if not isinstance(v, np.ndarray))}"
       for k, (name, _, kw, _) in enumerate(CASES)]


# PyTorch's C++ composite for soft-target cross entropy divides by a C++ Scalar (its
# DivBackward1 overload); dividing by a Python number records DivBackward0, in PyTorch too.
SAME_NODE = {"DivBackward1": "DivBackward0"}


def _call(lib, name, arrays, kwargs, diff, dtype):
    """Run ``lib.nn.functional.<name>``; float arrays take ``dtype`` and those at ``diff``
    require grad. Returns (result, leaves)."""
    def tensor(a, grad):
        if a.dtype.kind == "f":
            t = lib.tensor(a, dtype=getattr(lib, dtype))
            return t.requires_grad_() if grad else t
        return lib.tensor(a)
    args = [tensor(a, i in diff) for i, a in enumerate(arrays)]
    kw = {k: tensor(v, False) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = getattr(lib.nn.functional, name)(*args, **kw)
    return out, [args[i] for i in diff]


def _grads(lib, out, leaves, seed):
    g = np.random.default_rng(seed).standard_normal(tuple(out.shape))
    out.backward(lib.tensor(g, dtype=out.dtype))
    return [leaf.grad.numpy() for leaf in leaves]


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("k", range(len(CASES)), ids=IDS)
def test_matches_torch(k, dtype):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)  # oneDNN threads spin on a busy machine: 100x slower
    name, arrays, kwargs, diff = CASES[k]
    ours, our_leaves = _call(tg, name, arrays, kwargs, diff, dtype)
    theirs, their_leaves = _call(torch, name, arrays, kwargs, diff, dtype)
    assert ours.shape == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype).replace("torch.", "tracegrad.")
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **TOL[dtype])
    assert ours.grad_fn.name() == SAME_NODE.get(theirs.grad_fn.name(), theirs.grad_fn.name())
    for i, (a, b) in enumerate(zip(_grads(tg, ours, our_leaves, k), _grads(torch, theirs, their_leaves, k))):
        np.testing.assert_allclose(a, b, **TOL[dtype], err_msg=f"gradient of operand {diff[i]}")


@pytest.mark.torch
@pytest.mark.parametrize("name,kwargs", [
    ("cross_entropy", dict(label_smoothing=0.2)), ("cross_entropy", dict(weight=np.array([1.0, 2.0, 0.5, 1.0]))),
    ("nll_loss", {}), ("binary_cross_entropy_with_logits", {}), ("mse_loss", {}), ("smooth_l1_loss", {}),
    ("huber_loss", {}), ("binary_cross_entropy", {})])
def test_second_order_matches_torch(name, kwargs):
    """Hessian-vector products through the losses (create_graph=True)."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)  # oneDNN threads spin on a busy machine: 100x slower
    x = probs(3, 4) if name == "binary_cross_entropy" else randn(3, 4)
    if name in ("cross_entropy", "nll_loss"):
        target = np.array([1, 0, 3])
    else:
        target = probs(3, 4)
    v = randn(3, 4)
    results = []
    for lib in (tg, torch):
        xt = lib.tensor(x, requires_grad=True)
        kw = {k: lib.tensor(a) for k, a in kwargs.items() if isinstance(a, np.ndarray)}
        kw.update({k: a for k, a in kwargs.items() if not isinstance(a, np.ndarray)})
        loss = getattr(lib.nn.functional, name)(xt, lib.tensor(target), **kw)
        (g,) = lib.autograd.grad(loss, xt, create_graph=True)
        if not g.requires_grad:  # nll is linear: its gradient is a constant
            results.append(np.zeros_like(x))
            continue
        (h,) = lib.autograd.grad((g * lib.tensor(v)).sum(), xt, allow_unused=True)
        results.append(np.zeros_like(x) if h is None else h.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-7, atol=1e-10)


# -- values by hand --------------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses_match_formulas(reduction):
    x, y = randn(4, 5), randn(4, 5)
    d = x - y
    a = np.abs(d)
    expected = {
        "mse_loss": d ** 2, "l1_loss": a,
        "smooth_l1_loss": np.where(a < 1, 0.5 * d ** 2, a - 0.5),
        "huber_loss": np.where(a < 0.5, 0.5 * d ** 2, 0.5 * (a - 0.25)),
    }
    for name, per_element in expected.items():
        kw = {"delta": 0.5} if name == "huber_loss" else {}
        got = getattr(F, name)(tg.tensor(x), tg.tensor(y), reduction=reduction, **kw)
        np.testing.assert_allclose(got.numpy(), reduce_np(per_element.astype(np.float32), reduction), rtol=1e-5)


def test_weighted_regression_means():
    x, y, w = randn(3, 2), randn(3, 2), probs(3, 2)
    args = [tg.tensor(v, dtype=tg.float64) for v in (x, y)]
    got = F.mse_loss(*args, weight=tg.tensor(w, dtype=tg.float64))
    assert got.item() == pytest.approx(((x - y) ** 2 * w).sum() / w.sum())
    huber = F.huber_loss(*args, weight=tg.tensor(w, dtype=tg.float64))  # mean over elements, not weights
    a = np.abs(x - y)
    assert huber.item() == pytest.approx((np.where(a < 1, 0.5 * a * a, a - 0.5) * w).mean())


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_matches_formula(reduction):
    x, t, w = randn(6, 4), np.array([0, 3, -100, 1, 1, 2]), probs(4)
    logp = np.log(softmax(x, 1))
    keep = t != -100
    picked = -logp[np.arange(6), np.where(keep, t, 0)] * np.where(keep, w[np.where(keep, t, 0)], 0)
    expected = {"none": picked, "sum": picked.sum(), "mean": picked.sum() / w[t[keep]].sum()}[reduction]
    got = F.cross_entropy(tg.tensor(x, dtype=tg.float64), tg.tensor(t), weight=tg.tensor(w, dtype=tg.float64),
                          reduction=reduction)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_cross_entropy_label_smoothing_and_soft_targets_match_formulas():
    x, t, eps = randn(5, 4), np.array([0, 3, 2, 1, 1]), 0.3
    logp = np.log(softmax(x, 1))
    soft = np.full((5, 4), eps / 4) + (1 - eps) * np.eye(4)[t]
    expected = -(soft * logp).sum(1).mean()
    xt = tg.tensor(x, dtype=tg.float64)
    assert F.cross_entropy(xt, tg.tensor(t), label_smoothing=eps).item() == pytest.approx(expected, rel=1e-12)
    # the same as probability targets
    assert F.cross_entropy(xt, tg.tensor(np.eye(4)[t]), label_smoothing=eps).item() == pytest.approx(expected, rel=1e-12)
    assert F.cross_entropy(xt, tg.tensor(soft)).item() == pytest.approx(expected, rel=1e-12)


def test_cross_entropy_all_ignored_is_nan_with_zero_gradient():
    x = tg.randn(3, 4, requires_grad=True)
    loss = F.cross_entropy(x, tg.tensor([-100, -100, -100]))
    assert np.isnan(loss.item())
    loss.backward()
    assert (x.grad.numpy() == 0).all()
    assert F.cross_entropy(x, tg.tensor([-100, -100, -100]), reduction="sum").item() == 0


def test_nll_zero_total_weight_gives_nan_gradient_at_targets():
    """As in PyTorch: -w[t] * g / total_weight is 0 * inf at the weightless targets."""
    x = tg.randn(3, 4, requires_grad=True)
    loss = F.nll_loss(x, tg.tensor([1, 1, -100]), weight=tg.tensor([1.0, 0.0, 1.0, 1.0]))
    loss.backward()
    assert np.isnan(loss.item())
    grad = x.grad.numpy()
    assert np.isnan(grad[:2, 1]).all() and (np.nan_to_num(grad, nan=0.0) == 0).all()


def test_unbatched_nll_takes_a_one_element_target():
    x = tg.arange(4.0, requires_grad=True)
    loss = F.nll_loss(x, tg.tensor([2]), reduction="none")
    assert loss.shape == () and loss.item() == -2.0
    loss.backward()
    assert x.grad.tolist() == [0.0, 0.0, -1.0, 0.0]


def test_binary_cross_entropy_floors_logs_at_minus_100():
    got = F.binary_cross_entropy(tg.tensor([0.0, 1.0, 0.0]), tg.tensor([1.0, 0.0, 0.0]), reduction="none")
    assert got.tolist() == [100.0, 100.0, 0.0]


def test_binary_cross_entropy_with_logits_is_stable_and_weighted():
    z = np.array([-300.0, -5.0, 0.0, 5.0, 300.0])
    y = np.array([1.0, 0.2, 0.5, 0.0, 0.0])
    pw, w = 3.0, np.array([1.0, 2.0, 0.5, 1.0, 1.5])
    log_sig = np.minimum(z, 0) - np.log1p(np.exp(-np.abs(z)))
    log_sig_neg = np.minimum(-z, 0) - np.log1p(np.exp(-np.abs(z)))
    expected = -(pw * y * log_sig + (1 - y) * log_sig_neg) * w
    got = F.binary_cross_entropy_with_logits(tg.tensor(z, dtype=tg.float64), tg.tensor(y, dtype=tg.float64),
                                             weight=tg.tensor(w, dtype=tg.float64),
                                             pos_weight=tg.tensor([pw], dtype=tg.float64), reduction="none")
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
    assert np.isfinite(got.numpy()).all()


def test_kl_div_batchmean_and_log_target():
    p, q = softmax(randn(4, 3), 1), softmax(randn(4, 3), 1)
    expected = (p * (np.log(p) - np.log(q))).sum() / 4
    lq = tg.tensor(np.log(q), dtype=tg.float64)
    assert F.kl_div(lq, tg.tensor(p, dtype=tg.float64), reduction="batchmean").item() == pytest.approx(expected)
    got = F.kl_div(lq, tg.tensor(np.log(p), dtype=tg.float64), reduction="batchmean", log_target=True)
    assert got.item() == pytest.approx(expected)
    zero = F.kl_div(lq, tg.tensor([[0.0, 1.0, 0.0]] * 4, dtype=tg.float64), reduction="none")
    assert zero.numpy()[:, 0].tolist() == [0.0] * 4  # 0 log 0 = 0


# -- gradients by finite differences ---------------------------------------------------------------

GRADCHECKS = [
    ("cross_entropy", lambda: (randn(3, 4), np.array([1, -100, 3])), dict(weight=probs(4), label_smoothing=0.2)),
    ("cross_entropy", lambda: (randn(2, 4, 3), softmax(randn(2, 4, 3), 1)), dict(weight=probs(4))),
    ("cross_entropy", lambda: (randn(2, 3, 2, 2), classes(3, 2, 2, 2)), dict(reduction="none")),
    ("nll_loss", lambda: (randn(4), np.array(2)), {}),
    ("smooth_l1_loss", lambda: (randn(3, 4), randn(3, 4)), dict(beta=0.5, reduction="sum")),
    ("huber_loss", lambda: (randn(3, 4), randn(3, 4)), dict(delta=0.5)),
    ("binary_cross_entropy", lambda: (probs(3, 4), probs(3, 4)), dict(weight=probs(4))),
    ("binary_cross_entropy_with_logits", lambda: (randn(3, 4), probs(3, 4)), dict(pos_weight=probs(4), weight=probs(3, 4))),
    ("kl_div", lambda: (randn(3, 4), probs(3, 4)), dict(reduction="batchmean")),
]


@pytest.mark.parametrize("name,make,kwargs", GRADCHECKS, ids=[g[0] for g in GRADCHECKS])
def test_gradients_match_finite_differences(name, make, kwargs):
    arrays = make()
    diff = [tg.tensor(a, dtype=tg.float64, requires_grad=True) for a in arrays if a.dtype.kind == "f"]
    fixed = [tg.tensor(a) for a in arrays if a.dtype.kind != "f"]
    kw = {k: tg.tensor(v, dtype=tg.float64) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}

    def f(*inputs):
        return getattr(F, name)(*(list(inputs) + fixed), **kw)
    assert tg.autograd.gradcheck(f, tuple(diff))
    assert tg.autograd.gradgradcheck(f, tuple(diff))


# -- node names, dtypes, warnings --------------------------------------------------------------------

def test_node_names_are_pytorchs():
    x = tg.randn(3, 4, requires_grad=True)
    t = tg.tensor([1, 0, 3])
    assert F.cross_entropy(x, t).grad_fn.name() == "NllLossBackward0"
    assert F.mse_loss(x, tg.randn(3, 4)).grad_fn.name() == "MseLossBackward0"
    assert F.binary_cross_entropy_with_logits(x, tg.rand(3, 4)).grad_fn.name() == "BinaryCrossEntropyWithLogitsBackward0"
    assert F.binary_cross_entropy(x.sigmoid(), tg.rand(3, 4)).grad_fn.name() == "BinaryCrossEntropyBackward0"
    assert F.smooth_l1_loss(x, tg.randn(3, 4)).grad_fn.name() == "SmoothL1LossBackward0"
    assert F.huber_loss(x, tg.randn(3, 4)).grad_fn.name() == "HuberLossBackward0"
    assert F.l1_loss(x, tg.randn(3, 4)).grad_fn.name() == "MeanBackward0"
    assert F.cross_entropy(x, t, label_smoothing=0.1).grad_fn.name() == "AddBackward0"
    image = tg.randn(2, 4, 3, 3, requires_grad=True)
    assert F.cross_entropy(image, tg.zeros(2, 3, 3, dtype=tg.int64)).grad_fn.name() == "NllLoss2DBackward0"
    seq = tg.randn(2, 4, 5, requires_grad=True)
    assert F.cross_entropy(seq, tg.zeros(2, 5, dtype=tg.int64), reduction="none").grad_fn.name() == "ViewBackward0"
    node = F.mse_loss(x, tg.randn(3, 4), reduction="sum").grad_fn
    assert node._saved_reduction == 2
    assert F.nll_loss(x, t, ignore_index=3).grad_fn._saved_ignore_index == 3


def test_result_dtypes():
    x32 = tg.randn(3, 4)
    x64 = x32.double()
    assert F.mse_loss(x32, x64).dtype == tg.float64
    assert F.mse_loss(x32, tg.ones(3, 4, dtype=tg.int64)).dtype == tg.float32
    assert F.binary_cross_entropy_with_logits(x64, x32.sigmoid()).dtype == tg.float32  # the target's
    assert F.cross_entropy(x32, x64.softmax(1)).dtype == tg.float64


def test_warnings():
    x = tg.randn(3, 4)
    with pytest.warns(UserWarning, match=r"Using a target size \(.*\[4\]\)\) that is different to the input size"):
        F.mse_loss(x, tg.randn(4))
    with pytest.warns(UserWarning, match="'mean' divides the total loss by both the batch size"):
        F.kl_div(x, tg.rand(3, 4))
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated, please use reduction='sum'"):
        loss = F.mse_loss(x, x + 1, size_average=False)
    assert loss.item() == pytest.approx(12.0)
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert F.cross_entropy(x, tg.tensor([0, 1, 2]), reduce=False).shape == (3,)


def test_weights_that_require_grad_are_refused():
    x = tg.randn(3, 4, requires_grad=True)
    w = tg.rand(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="The function 'nll_loss_forward' is not differentiable with respect to "
                                           "argument 'weight'. This input cannot have requires_grad True."):
        F.cross_entropy(x, tg.tensor([0, 1, 2]), weight=w)
    with tg.no_grad():
        F.cross_entropy(x, tg.tensor([0, 1, 2]), weight=w)


# -- errors --------------------------------------------------------------------------------------------

def _err(lib, fn, *args, **kwargs):
    getattr(lib.nn.functional, fn)(*args, **kwargs)


ERRORS = [  # (id, call(lib), exception type, message)
    ("reduction", lambda L: _err(L, "mse_loss", L.randn(3), L.randn(3), reduction="foo"),
     ValueError, "foo is not a valid value for reduction"),
    ("ce-reduction", lambda L: _err(L, "cross_entropy", L.randn(3, 2), L.tensor([0, 1, 1]), reduction="avg"),
     ValueError, "avg is not a valid value for reduction"),
    ("weighted-reduction", lambda L: _err(L, "mse_loss", L.randn(3), L.randn(3), weight=L.ones(3), reduction="x"),
     ValueError, "Invalid reduction mode: x. Expected one of 'none', 'mean', 'sum'."),
    ("weight-size", lambda L: _err(L, "l1_loss", L.randn(3), L.randn(3), weight=L.ones(2)),
     ValueError, "Weights and input must have the same size."),
    ("no-broadcast", lambda L: _err(L, "mse_loss", L.randn(3, 4), L.randn(2, 4)),
     RuntimeError, "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"),
    ("mse-long", lambda L: _err(L, "mse_loss", L.ones(3, dtype=L.int64), L.ones(3, dtype=L.int64)),
     NotImplementedError, "\"mse_cpu\" not implemented for 'Long'"),
    ("beta", lambda L: _err(L, "smooth_l1_loss", L.randn(3), L.randn(3), beta=-1.0),
     RuntimeError, "smooth_l1_loss does not support negative values for beta."),
    ("delta", lambda L: _err(L, "huber_loss", L.randn(3), L.randn(3), delta=0.0),
     RuntimeError, "huber_loss does not support non-positive values for delta."),
    ("batch", lambda L: _err(L, "cross_entropy", L.randn(3, 4), L.tensor([1, 0])),
     ValueError, "Expected input batch_size (3) to match target batch_size (2)."),
    ("batch-0d", lambda L: _err(L, "nll_loss", L.randn(3, 4), L.tensor(1)),
     ValueError, "Expected input batch_size (3) to match target batch_size (0)."),
    ("bounds", lambda L: _err(L, "cross_entropy", L.randn(3, 4), L.tensor([1, 0, 5])),
     IndexError, "Target 5 is out of bounds."),
    ("bounds-negative", lambda L: _err(L, "nll_loss", L.randn(3, 4), L.tensor([1, -1, 2])),
     IndexError, "Target -1 is out of bounds."),
    ("bounds-image", lambda L: _err(L, "cross_entropy", L.randn(1, 3, 2, 2), L.tensor([[[0, 1], [3, 0]]])),
     IndexError, "Target 3 is out of bounds."),
    ("float-target", lambda L: _err(L, "cross_entropy", L.randn(3, 4), L.tensor([1.0, 0.0, 2.0])),
     RuntimeError, "expected target dtype to be Long or Byte, but got Float"),
    ("int32-target", lambda L: _err(L, "nll_loss", L.randn(3, 4), L.tensor([1, 0, 2], dtype=L.int32)),
     RuntimeError, "expected target dtype to be Long or Byte, but got Int"),
    ("multi-target", lambda L: _err(L, "cross_entropy", L.randn(3, 4), L.rand(3, 5)),
     RuntimeError, "0D or 1D target tensor expected, multi-target not supported"),
    ("class-weight", lambda L: _err(L, "cross_entropy", L.randn(3, 4), L.tensor([1, 0, 2]), weight=L.ones(3)),
     RuntimeError, "weight tensor should be defined either for all 4 classes or no classes but got weight tensor "
                   "of shape: [3]"),
    ("soft-weight", lambda L: _err(L, "cross_entropy", L.randn(3, 4), L.rand(3, 4), weight=L.ones(3)),
     RuntimeError, "cross_entropy: weight tensor should be defined either for all 4 classes or no classes but got "
                   "weight tensor of shape: [3]"),
    ("weight-dtype", lambda L: _err(L, "nll_loss", L.randn(3, 4), L.tensor([1, 0, 2]), weight=L.ones(4, dtype=L.float64)),
     RuntimeError, "expected scalar type Float but found Double"),
    ("input-long", lambda L: _err(L, "nll_loss", L.ones(3, 4, dtype=L.int64), L.tensor([1, 0, 2])),
     NotImplementedError, "\"nll_loss_out_frame\" not implemented for 'Long'"),
    ("soft-long", lambda L: _err(L, "cross_entropy", L.randn(3, 4), L.ones(3, 4, dtype=L.int64)),
     RuntimeError, "Expected floating point type for target with class probabilities, got Long"),
    ("soft-ignore", lambda L: _err(L, "cross_entropy", L.randn(3, 4), L.rand(3, 4), ignore_index=1),
     RuntimeError, "ignore_index is not supported for floating point target"),
    ("smoothing", lambda L: _err(L, "cross_entropy", L.randn(3, 4), L.tensor([1, 0, 2]), label_smoothing=1.5),
     RuntimeError, "label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
    ("0d-input", lambda L: _err(L, "nll_loss", L.tensor(1.0), L.tensor(0)),
     ValueError, "Expected 1 or more dimensions (got 0)"),
    ("1d-target", lambda L: _err(L, "nll_loss", L.randn(4), L.tensor([2, 1])),
     ValueError, "For 1D input, 1D target must have size 1, but got target size: 2"),
    ("nd-target", lambda L: _err(L, "cross_entropy", L.randn(2, 4, 5), L.zeros(2, 4, dtype=L.int64)),
     RuntimeError, "Expected target size [2, 5], got [2, 4]"),
    ("2d-target-dims", lambda L: _err(L, "nll_loss", L.randn(2, 3, 4, 5), L.zeros(2, 4, dtype=L.int64)),
     RuntimeError, "only batches of spatial targets supported (3D tensors) but got targets of dimension: 2"),
    ("2d-size", lambda L: _err(L, "nll_loss", L.randn(2, 3, 4, 5), L.zeros(2, 5, 7, dtype=L.int64)),
     RuntimeError, "size mismatch (got input: [2, 3, 4, 5] , target: [2, 5, 7]"),
    ("2d-weight", lambda L: _err(L, "nll_loss", L.randn(2, 3, 4, 5), L.zeros(2, 4, 5, dtype=L.int64), weight=L.ones(2)),
     RuntimeError, "weight tensor should be defined either for all or no classes"),
    ("bce-size", lambda L: _err(L, "binary_cross_entropy", L.rand(3, 4), L.rand(4)),
     ValueError, "Using a target size ({S}([4])) that is different to the input size ({S}([3, 4])) is deprecated. "
                 "Please ensure they have the same size."),
    ("bce-range", lambda L: _err(L, "binary_cross_entropy", L.rand(3) * 2 + 1, L.rand(3)),
     RuntimeError, "all elements of input should be between 0 and 1"),
    ("bce-target-range", lambda L: _err(L, "binary_cross_entropy", L.rand(3), L.rand(3) + 1.5),
     RuntimeError, "all elements of target should be between 0 and 1"),
    ("bce-dtype", lambda L: _err(L, "binary_cross_entropy", L.rand(3), L.rand(3, dtype=L.float64)),
     RuntimeError, "Found dtype Double but expected Float"),
    ("bce-weight", lambda L: _err(L, "binary_cross_entropy", L.rand(3, 4), L.rand(3, 4), weight=L.rand(5, 3, 4)),
     RuntimeError, "output with shape [3, 4] doesn't match the broadcast shape [5, 3, 4]"),
    ("bcel-size", lambda L: _err(L, "binary_cross_entropy_with_logits", L.randn(3, 4), L.rand(3, 3)),
     ValueError, "Target size ({S}([3, 3])) must be the same as input size ({S}([3, 4]))"),
    ("bcel-pos-weight", lambda L: _err(L, "binary_cross_entropy_with_logits", L.randn(3, 4), L.rand(3, 4),
                                       pos_weight=L.rand(5)),
     RuntimeError, "The size of tensor a (5) must match the size of tensor b (4) at non-singleton dimension 1"),
    ("bcel-weight", lambda L: _err(L, "binary_cross_entropy_with_logits", L.randn(3, 4), L.rand(3, 4),
                                   weight=L.rand(2, 3, 4)),
     RuntimeError, "output with shape [3, 4] doesn't match the broadcast shape [2, 3, 4]"),
    ("bcel-long-target", lambda L: _err(L, "binary_cross_entropy_with_logits", L.randn(3), L.ones(3, dtype=L.int64)),
     RuntimeError, "result type Float can't be cast to the desired output type Long"),
    ("kl-int", lambda L: _err(L, "kl_div", L.randn(3), L.ones(3, dtype=L.int64), reduction="sum"),
     RuntimeError, "kl_div: Integral inputs not supported."),
    ("kl-reduction", lambda L: _err(L, "kl_div", L.randn(3), L.rand(3), reduction="x"),
     ValueError, "x is not a valid value for reduction"),
]


@pytest.mark.parametrize("call,exc,message", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors(call, exc, message):
    with pytest.raises(exc) as info:
        call(tg)
    assert str(info.value) == message.replace("{S}", "tracegrad.Size")


@pytest.mark.torch
@pytest.mark.parametrize("call,exc,message", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_are_torchs(call, exc, message):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)  # oneDNN threads spin on a busy machine: 100x slower
    with pytest.raises(exc) as info:
        call(torch)
    assert str(info.value) == message.replace("{S}", "torch.Size")


# -- modules -------------------------------------------------------------------------------------------

MODULES = [  # (module name, constructor kwargs (arrays become tensors), functional name, input, target)
    ("MSELoss", dict(reduction="sum"), "mse_loss", randn(3, 4), randn(3, 4)),
    ("L1Loss", {}, "l1_loss", randn(3, 4), randn(3, 4)),
    ("SmoothL1Loss", dict(beta=0.5, reduction="none"), "smooth_l1_loss", randn(3, 4), randn(3, 4)),
    ("HuberLoss", dict(delta=0.3), "huber_loss", randn(3, 4), randn(3, 4)),
    ("CrossEntropyLoss", dict(weight=probs(4), ignore_index=1, label_smoothing=0.1), "cross_entropy", randn(5, 4),
     np.array([0, 1, 2, 3, 1])),
    ("NLLLoss", dict(weight=probs(4), reduction="sum"), "nll_loss", randn(5, 4), np.array([0, 1, 2, 3, 1])),
    ("BCELoss", dict(weight=probs(4)), "binary_cross_entropy", probs(3, 4), probs(3, 4)),
    ("BCEWithLogitsLoss", dict(weight=probs(3, 4), pos_weight=probs(4)), "binary_cross_entropy_with_logits",
     randn(3, 4), probs(3, 4)),
    ("KLDivLoss", dict(reduction="batchmean", log_target=True), "kl_div", randn(3, 4), randn(3, 4)),
]
BUFFERS = {"CrossEntropyLoss": ["weight"], "NLLLoss": ["weight"], "BCELoss": ["weight"],
           "BCEWithLogitsLoss": ["weight", "pos_weight"]}


def _module(lib, name, kwargs, dtype=None):
    kw = {k: lib.tensor(v, dtype=dtype or lib.float32) if isinstance(v, np.ndarray) else v
          for k, v in kwargs.items()}
    return getattr(lib.nn, name)(**kw)


@pytest.mark.parametrize("name,kwargs,fn,x,y", MODULES, ids=[m[0] for m in MODULES])
def test_modules_call_their_functional_form(name, kwargs, fn, x, y):
    module = _module(tg, name, kwargs)
    assert repr(module) == f"{name}()"
    assert list(module.state_dict()) == BUFFERS.get(name, [])
    assert list(module.parameters()) == []
    xt, yt = tg.tensor(x, dtype=tg.float32), tg.tensor(y) if y.dtype.kind == "i" else tg.tensor(y, dtype=tg.float32)
    fkw = {k: getattr(module, k) for k in kwargs}
    np.testing.assert_array_equal(module(xt, yt).numpy(), getattr(F, fn)(xt, yt, **fkw).numpy())
    double = module.double()
    for b in BUFFERS.get(name, []):
        assert getattr(double, b).dtype == tg.float64


@pytest.mark.torch
@pytest.mark.parametrize("name,kwargs,fn,x,y", MODULES, ids=[m[0] for m in MODULES])
def test_modules_match_torch(name, kwargs, fn, x, y):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)  # oneDNN threads spin on a busy machine: 100x slower
    outs = []
    for lib in (tg, torch):
        module = _module(lib, name, kwargs, lib.float64)
        assert list(module.state_dict()) == BUFFERS.get(name, [])
        xt = lib.tensor(x, requires_grad=True)
        loss = module(xt, lib.tensor(y))
        loss.backward(lib.ones_like(loss))
        outs.append((loss.detach().numpy(), xt.grad.numpy()))
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-10)


def test_module_legacy_flags():
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert nn.MSELoss(reduce=False).reduction == "none"
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert nn.CrossEntropyLoss(size_average=False).reduction == "sum"
    assert nn.HuberLoss(reduction="sum", delta=2.0).delta == 2.0
