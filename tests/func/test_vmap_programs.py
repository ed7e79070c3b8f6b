"""Random small programs (seeded) run under vmap against a loop over the samples: the
program alone, its per-sample gradient (vmap(grad)), its per-sample jvp, nested in a
second vmap, and differentiated from outside (grad(vmap)). Each program chains 1-4
tensor-level operations on a sample ``a`` and, with one, a second operand ``b`` (batched
or shared); in-place writes, index writes, scatters and reductions are among them, as
user code mixes them."""
import random

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn.functional as F
from tracegrad.func import grad, jvp, vmap

pytestmark = pytest.mark.filterwarnings("ignore:There is a performance drop")


def _setitem(c, index, value):
    c[index] = value
    return c


UNARY = [
    lambda a: a.sin(), lambda a: a.exp().clamp(max=5), lambda a: a.abs().sqrt(), lambda a: a * 2 - 1,
    lambda a: a.relu(), lambda a: a.cumsum(-1), lambda a: a.flip(-1), lambda a: a.softmax(-1),
    lambda a: a.log_softmax(0), lambda a: a - a.mean(-1, keepdim=True), lambda a: a / (a.norm() + 1),
    lambda a: a.sort(-1)[0], lambda a: a.max(-1, keepdim=True)[0] + a, lambda a: tg.where(a > 0, a, a * 0.1),
    lambda a: a.roll(1, -1), lambda a: a.t() if a.ndim == 2 else a, lambda a: a.std(-1, keepdim=True) * a,
    lambda a: a.logsumexp(-1, keepdim=True) - a, lambda a: a.topk(1, -1)[0] * a, lambda a: a.masked_fill(a < 0, 0.0),
    lambda a: F.layer_norm(a, a.shape[-1:]), lambda a: a.gather(-1, a.argsort(-1)),
    lambda a: a.scatter(-1, a.argsort(-1), a), lambda a: a.clone().mul_(2).add_(a),
    lambda a: _setitem(a.clone(), (..., 0), 3.0), lambda a: a @ a.t() if a.ndim == 2 else a * a.sum(),
    lambda a: a.median(-1, keepdim=True)[0] + a, lambda a: a.clone().clamp_(min=0),
    lambda a: a.clone().masked_fill_(a > 0.5, -1.0), lambda a: a.cumprod(-1), lambda a: a.prod(-1, keepdim=True) + a,
    lambda a: a.quantile(0.3, -1, keepdim=True) + a, lambda a: a.diag_embed().sum(-1),
    lambda a: F.pad(a, (1, 1))[..., 1:-1], lambda a: a.unsqueeze(0).expand(2, *a.shape).sum(0),
]
BINARY = [
    lambda a, b: a + b, lambda a, b: a * b, lambda a, b: tg.maximum(a, b), lambda a, b: tg.where(a > b, a, b),
    lambda a, b: a.clamp(min=b), lambda a, b: tg.atan2(a, b), lambda a, b: a.masked_fill(b > 0, 0.0),
    lambda a, b: tg.stack([a, b]).sum(0), lambda a, b: tg.cat([a, b], -1)[..., : a.shape[-1]] * 2,
    lambda a, b: tg.lerp(a, b, 0.2), lambda a, b: (a * b).sum(-1, keepdim=True) + a,
    lambda a, b: tg.einsum("...i,...i->...", a, b).unsqueeze(-1) + a, lambda a, b: a.gather(-1, b.argsort(-1)),
    lambda a, b: a.scatter_add(-1, b.argsort(-1), a), lambda a, b: tg.take_along_dim(a, b.argsort(-1), -1),
    lambda a, b: F.smooth_l1_loss(a, b, reduction="none"), lambda a, b: a.clone().copy_(b) * a,
]


def _program(seed):
    rng = random.Random(seed)
    ops = [("b", rng.randrange(len(BINARY))) if rng.random() < 0.4 else ("u", rng.randrange(len(UNARY)))
           for _ in range(rng.randint(1, 4))]
    shape = rng.choice([(4,), (3, 3), (2, 4)])
    shared_b = rng.random() < 0.3
    data = np.random.default_rng(seed)
    a, b = (tg.tensor(data.standard_normal((3,) + shape)) for _ in range(2))

    def run(x, y):
        for kind, k in ops:
            x = UNARY[k](x) if kind == "u" else BINARY[k](x, y)
        return x
    return run, a, (b[0] if shared_b else b), (None if shared_b else 0)


def _loop(fn, a, b, b_dim):
    return tg.stack([fn(a[i], b if b_dim is None else b[i]) for i in range(a.shape[0])])


def _close(got, want):
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-9, atol=1e-10)


SEEDS = range(40)


@pytest.mark.parametrize("seed", SEEDS)
def test_program_under_vmap(seed):
    run, a, b, b_dim = _program(seed)
    _close(vmap(run, in_dims=(0, b_dim))(a, b), _loop(run, a, b, b_dim))


@pytest.mark.parametrize("seed", SEEDS)
def test_per_sample_gradient_of_program(seed):
    run, a, b, b_dim = _program(seed)
    fn = grad(lambda x, y: run(x, y).sum())
    _close(vmap(fn, in_dims=(0, b_dim))(a, b), _loop(fn, a, b, b_dim))


@pytest.mark.parametrize("seed", SEEDS)
def test_per_sample_jvp_of_program(seed):
    run, a, b, b_dim = _program(seed)
    fn = lambda x, y: jvp(lambda u: run(u, y), (x,), (y * 0 + 1,))[1]
    _close(vmap(fn, in_dims=(0, b_dim))(a, b), _loop(fn, a, b, b_dim))


@pytest.mark.parametrize("seed", SEEDS)
def test_program_in_nested_vmaps(seed):
    run, a, b, b_dim = _program(seed)
    fn = lambda x, y: vmap(lambda u: run(u, y))(tg.stack([x, x * 0.5]))
    _close(vmap(fn, in_dims=(0, b_dim))(a, b), _loop(fn, a, b, b_dim))


@pytest.mark.parametrize("seed", SEEDS)
def test_gradient_through_vmap_of_program(seed):
    run, a, b, b_dim = _program(seed)
    got = grad(lambda A: vmap(run, in_dims=(0, b_dim))(A, b).sin().sum())(a)
    want = grad(lambda A: _loop(run, A, b, b_dim).sin().sum())(a)
    _close(got, want)
