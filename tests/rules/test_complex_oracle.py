"""The complex samples against real PyTorch: for every rule with complex samples
(tests/rules/samples_*.py ``COMPLEX_SAMPLES``) and a PyTorch equivalent (the oracle
walker's ``TORCH``), the eager runtime's forward values and its gradients -- PyTorch's
conjugate convention, made from the table's JAX-convention rules -- equal PyTorch's, for a
random complex cotangent. Real operands mixed with complex ones get real gradients."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.rules import TABLE

from . import checks
from .test_complex_table import SAMPLES, _cotangent, _positions
from .test_oracle_table import TORCH, _assert_close

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

CASES = [(n, k) for n in sorted(SAMPLES) if n in TORCH for k in range(len(SAMPLES[n]))]
IDS = [f"{n}-{k}{SAMPLES[n][k]!r}" for n, k in CASES]


def _host(t):
    t = t.detach()
    return t.resolve_conj().numpy() if hasattr(t, "resolve_conj") else t.numpy()


def _operand(a, diff, lib):
    if not isinstance(a, np.ndarray):
        return a
    t = lib.tensor(a)
    return t.requires_grad_() if diff else t


@pytest.mark.torch
@pytest.mark.parametrize("name,k", CASES, ids=IDS)
def test_eager_complex_gradients_match_torch(name, k):
    prim, sample = TABLE[name], SAMPLES[name][k]
    pos = _positions(prim, sample)
    out = checks.forward(prim, sample.args, sample.params)
    G = _cotangent(prim, out, np.random.default_rng(k))
    Gs = G if isinstance(G, tuple) else (G,)
    got, want = [], []
    for lib, run in ((tg, lambda args: prim(*args, **sample.params)),
                     (torch, lambda args: TORCH[name](*args, **sample.params))):
        args = [_operand(a, i in pos, lib) for i, a in enumerate(sample.args)]
        try:
            res = run(args)
            res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
            leaves = [args[i] for i in pos]
            pairs = [(r, lib.tensor(g)) for r, g in zip(res, Gs) if r.requires_grad]
            grads = lib.autograd.grad([p for p, _ in pairs], leaves, [q for _, q in pairs], allow_unused=True)
        except (RuntimeError, NotImplementedError) as e:
            if lib is torch:  # (PyTorch refuses mixed real/complex operands of most ops)
                pytest.skip(f"PyTorch refuses this sample: {str(e).splitlines()[0][:120]}")
            raise
        (got if lib is tg else want).append(([_host(r) for r in res],
                                             [None if g is None else _host(g) for g in grads]))
    (mine_out, mine_g), (their_out, their_g) = got[0], want[0]
    for a, b in zip(mine_out, their_out):
        _assert_close(a, b, f"{name}: forward")
    for i, a, b in zip(pos, mine_g, their_g):
        if a is None or b is None:
            assert a is None and b is None or np.all((a if a is not None else b) == 0), f"{name}: operand {i}"
            continue
        assert a.dtype == b.dtype, f"{name}: gradient dtype of operand {i}: {a.dtype} vs torch's {b.dtype}"
        _assert_close(a, b, f"{name}: gradient of operand {i}")
