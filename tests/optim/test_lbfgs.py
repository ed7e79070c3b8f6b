"""LBFGS on a Rosenbrock problem: step by step against PyTorch (losses, parameters, the
state and its counters), and without PyTorch against the method's own definition (the
first step, convergence, the cubic interpolation) plus its errors."""
import pickle

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.optim._line_search import cubic_interpolate

X0 = [-1.5, 2.0, 0.5, -0.3]


def _rosenbrock(lib, x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def _run(lib, steps=6, x0=X0, dtype="float64", **kwargs):
    """``steps`` LBFGS steps; returns (losses, parameters after each step, optimizer, x)."""
    x = lib.tensor(x0, dtype=getattr(lib, dtype), requires_grad=True)
    opt = lib.optim.LBFGS([x], **kwargs)

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(lib, x)
        loss.backward()
        return loss

    losses, points = [], []
    for _ in range(steps):
        losses.append(opt.step(closure).item())
        points.append(x.detach().numpy().copy())
    return losses, points, opt, x


CONFIGS = [
    {},
    {"line_search_fn": "strong_wolfe"},
    {"lr": 0.5, "history_size": 3, "max_iter": 5},
    {"line_search_fn": "strong_wolfe", "history_size": 2, "max_iter": 7, "max_eval": 9},
    {"lr": 0.1, "max_iter": 4, "tolerance_change": 1e-5, "tolerance_grad": 1e-3},
]


def _as_number(value):
    return float(value) if not isinstance(value, (list, type(None))) else value


@pytest.mark.torch
@pytest.mark.parametrize("kwargs", CONFIGS, ids=[str(c) for c in CONFIGS])
def test_matches_torch(kwargs):
    torch = pytest.importorskip("torch")
    losses, points, opt, x = _run(tg, **kwargs)
    t_losses, t_points, t_opt, tx = _run(torch, **kwargs)
    np.testing.assert_allclose(losses, t_losses, rtol=1e-10)
    np.testing.assert_allclose(points, t_points, rtol=1e-9, atol=1e-12)
    assert x._version == tx._version  # the same number of trial steps and restores
    sd, tsd = opt.state_dict(), t_opt.state_dict()
    assert sd["param_groups"] == tsd["param_groups"]
    st, tst = sd["state"][0], tsd["state"][0]
    assert list(st) == list(tst)
    assert (st["func_evals"], st["n_iter"]) == (tst["func_evals"], tst["n_iter"])
    for key in ("d", "prev_flat_grad"):
        np.testing.assert_allclose(st[key].numpy(), tst[key].numpy(), rtol=1e-8, atol=1e-9, err_msg=key)
    assert len(st["old_dirs"]) == len(tst["old_dirs"]) and len(st["ro"]) == len(tst["ro"])
    for key in ("old_dirs", "old_stps"):
        for a, b in zip(st[key], tst[key]):
            # differences of nearby iterates: rounding shows relative to their entries' scale
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-8, atol=1e-9, err_msg=key)
    np.testing.assert_allclose([float(r) for r in st["ro"]], [float(r) for r in tst["ro"]], rtol=1e-8)
    assert type(st["t"]).__name__ == type(tst["t"]).__name__  # a number or a 0-d tensor, as there
    assert float(st["t"]) == pytest.approx(float(tst["t"]), rel=1e-8)
    assert float(st["H_diag"]) == pytest.approx(float(tst["H_diag"]), rel=1e-8)
    assert st["prev_loss"] == pytest.approx(tst["prev_loss"], rel=1e-10)


@pytest.mark.torch
def test_float32_and_two_parameters_match_torch():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tg, torch):
        a = lib.tensor([-1.2, 0.7], requires_grad=True)
        b = lib.tensor([[1.5]], requires_grad=True)
        opt = lib.optim.LBFGS([a, b], line_search_fn="strong_wolfe", max_iter=10)

        def closure():
            opt.zero_grad()
            loss = (1 - a[0]) ** 2 + 100 * (a[1] - a[0] ** 2) ** 2 + (b[0, 0] - a[1]) ** 2
            loss.backward()
            return loss

        for _ in range(3):
            opt.step(closure)
        results.append(np.concatenate([a.detach().numpy(), b.detach().numpy().ravel()]))
        assert a.dtype == lib.float32
    np.testing.assert_allclose(results[0], results[1], rtol=1e-4, atol=1e-5)


def test_first_iteration_is_a_scaled_gradient_step():
    """With no history, the direction is -g and the step min(1, 1/|g|_1) * lr."""
    x = np.array(X0)
    g = np.concatenate([-400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1]), [0.0]])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    _, points, _, _ = _run(tg, steps=1, max_iter=1, lr=0.7)
    np.testing.assert_allclose(points[0], x - min(1.0, 1 / np.abs(g).sum()) * 0.7 * g, rtol=1e-13)


def test_strong_wolfe_converges_on_the_two_dimensional_rosenbrock():
    losses, points, opt, _ = _run(tg, steps=10, x0=[-1.2, 1.0], line_search_fn="strong_wolfe", max_iter=50)
    np.testing.assert_allclose(points[-1], [1.0, 1.0], atol=1e-4)
    assert losses[-1] < 1e-8 < losses[0]
    state = opt.state[opt.param_groups[0]["params"][0]]
    assert state["n_iter"] > 1 and state["func_evals"] >= state["n_iter"]
    assert len(state["old_dirs"]) == len(state["old_stps"]) == len(state["ro"]) <= 100


def test_fixed_steps_descend():
    losses, *_ = _run(tg, steps=4, x0=[-1.2, 1.0], lr=0.1)
    assert all(a > b for a, b in zip(losses, losses[1:])) and losses[-1] < 0.5 * losses[0]


def test_history_is_bounded():
    *_, opt, _ = _run(tg, steps=3, history_size=2, max_iter=10, lr=0.2)
    state = opt.state_dict()["state"][0]
    assert len(state["old_dirs"]) == 2 and len(state["al"]) == 2


def test_stops_at_once_at_an_optimum():
    x = tg.tensor([1.0, 1.0], dtype=tg.float64, requires_grad=True)
    opt = tg.optim.LBFGS([x])
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = _rosenbrock(tg, x)
        loss.backward()
        return loss

    assert opt.step(closure).item() == 0.0
    assert len(calls) == 1 and x.tolist() == [1.0, 1.0] and x._version == 0


@pytest.mark.parametrize("x1, x2", [(0.0, 2.0), (3.0, -1.0)])
def test_cubic_interpolate_finds_a_cubics_minimum(x1, x2):
    """Values and slopes of a true cubic determine it: the interpolant's minimiser is the
    cubic's own local minimum (x = 1 for x^3 - 3x), clamped to the bounds when given."""
    def f(x):
        return x ** 3 - 3 * x

    def df(x):  # slopes are 0-d tensors, as in LBFGS
        return as_tensor(3 * x ** 2 - 3)

    got = cubic_interpolate(x1, f(x1), df(x1), x2, f(x2), df(x2))
    assert float(got) == pytest.approx(1.0, rel=1e-12)
    assert float(cubic_interpolate(x1, f(x1), df(x1), x2, f(x2), df(x2), bounds=(1.5, 4.0))) == 1.5


def test_cubic_interpolate_without_a_minimum_takes_the_midpoint():
    # slopes 1 and 1 with a secant slope of 2/3: d1 = 0, so d1^2 - g1 g2 < 0 (no real minimiser)
    assert cubic_interpolate(-1.0, 0.0, as_tensor(1.0), 1.0, 4 / 3, as_tensor(1.0), bounds=(0.0, 4.0)) == 2.0
    assert cubic_interpolate(-1.0, 0.0, as_tensor(1.0), 1.0, 4 / 3, as_tensor(1.0)) == 0.0


def as_tensor(v):
    return tg.tensor(v, dtype=tg.float64)


def test_errors():
    x = tg.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="^LBFGS doesn't support per-parameter options \\(parameter groups\\)$"):
        tg.optim.LBFGS([{"params": [x]}, {"params": [tg.zeros(1, requires_grad=True)]}])
    with pytest.raises(ValueError, match="^Invalid learning rate: -1$"):
        tg.optim.LBFGS([x], lr=-1)
    opt = tg.optim.LBFGS([x], line_search_fn="armijo")
    with pytest.raises(TypeError):
        opt.step()  # the closure is required

    def closure():
        opt.zero_grad()
        loss = ((x - 1) ** 2).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="^only 'strong_wolfe' is supported$"):
        opt.step(closure)
    assert tg.optim.LBFGS([x], max_iter=8).defaults["max_eval"] == 10


def _complex_run(lib, resume):
    """LBFGS over a complex and a real parameter; optionally saved (pickled) and resumed."""
    z = lib.tensor([1.0 + 2.0j, -0.5 + 0.3j], dtype=lib.complex128, requires_grad=True)
    r = lib.tensor([0.3, -0.7], dtype=lib.float64, requires_grad=True)

    def make():
        return lib.optim.LBFGS([z, r], line_search_fn="strong_wolfe", max_iter=4, history_size=3)

    opt = make()

    def closure():
        opt.zero_grad()
        loss = ((z - (1 - 1j)).abs() ** 2).sum() + ((r - z.real) ** 4).sum() + (z.imag * r).sum() ** 2
        loss.backward()
        return loss

    losses = []
    for i in range(4):
        losses.append(opt.step(closure).item())
        if resume and i == 1:
            saved = pickle.loads(pickle.dumps(opt.state_dict()))
            opt = make()
            opt.load_state_dict(saved)
    return losses, z.detach().numpy(), r.detach().numpy()


@pytest.mark.torch
@pytest.mark.parametrize("resume", [False, True])
def test_complex_parameters_and_resuming_match_torch(resume):
    """Complex parameters enter the flat vector as (real, imag) pairs; a resumed optimizer
    (its history loaded from a state dict) continues as the uninterrupted one."""
    torch = pytest.importorskip("torch")
    ours, theirs = _complex_run(tg, resume), _complex_run(torch, resume)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10)
    for a, b in zip(ours[1:], theirs[1:]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-14)
    assert ours[0] == _complex_run(tg, not resume)[0]  # resuming changes nothing
