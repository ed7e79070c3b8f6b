"""Global module hooks (``torch.nn.modules.module.register_module_*_hook``): they run for every
module, before each module's own hooks, with the same arguments and return conventions;
their handles remove them (and the module call is plain again); registration hooks may
replace what a module registers."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.nn.modules import _module_hooks
from tracegrad.nn.modules import module as M

nn = tg.nn


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    monkeypatch.setattr(_module_hooks, "GLOBAL_FULL_BACKWARD", [None])
    yield
    assert not _module_hooks.ANY_GLOBAL[0], "a test left a global hook registered"


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x, scale=1.0):
        return self.lin(x) * scale


def _block():
    b = Block()
    with tg.no_grad():
        b.lin.weight.copy_(tg.tensor([[1.0, 2.0], [3.0, 4.0]]))
        b.lin.bias.zero_()
    return b


def test_forward_hooks_run_for_every_module_before_its_own():
    seen = []
    b = _block()
    own = b.register_forward_hook(lambda m, a, o: seen.append(f"own:{type(m).__name__}"))
    handles = [M.register_module_forward_pre_hook(lambda m, a: seen.append(f"pre:{type(m).__name__}")),
               M.register_module_forward_hook(lambda m, a, o: seen.append(type(m).__name__)),
               M.register_module_forward_hook(lambda m, a, k, o: seen.append(f"kw:{sorted(k)}"), with_kwargs=True)]
    try:
        b(tg.ones(1, 2), scale=2.0)
    finally:
        for h in handles + [own]:
            h.remove()
    assert seen == ["pre:Block", "pre:Linear", "Linear", "kw:[]", "Block", "kw:['scale']", "own:Block"]
    assert not _module_hooks.ANY_GLOBAL[0]
    seen.clear()
    b(tg.ones(1, 2))
    assert seen == []


def test_hooks_replace_inputs_and_outputs_and_always_call_runs_after_an_error():
    b = _block()
    handles = [M.register_module_forward_pre_hook(lambda m, a: (a[0] * 2,) if isinstance(m, nn.Linear) else None),
               M.register_module_forward_hook(lambda m, a, o: o + 1 if isinstance(m, Block) else None)]
    try:
        np.testing.assert_array_equal(b(tg.ones(1, 2)).detach().numpy(), [[7.0, 15.0]])
    finally:
        for h in handles:
            h.remove()

    class Broken(nn.Module):
        def forward(self, x):
            raise ValueError("broken")
    called = []
    h = M.register_module_forward_hook(lambda m, a, o: called.append(o), always_call=True)
    try:
        with pytest.raises(ValueError, match="broken"):
            Broken()(tg.ones(1))
    finally:
        h.remove()
    assert called == [None]


def test_full_backward_hooks_see_and_replace_gradients():
    b = _block()
    seen = []

    def hook(m, grad_input, grad_output):
        seen.append((type(m).__name__, [None if g is None else g.tolist() for g in grad_input]))

    handles = [M.register_module_full_backward_hook(hook),
               M.register_module_full_backward_pre_hook(lambda m, go: (go[0] * 10,) if isinstance(m, Block) else None)]
    x = tg.ones(1, 2, requires_grad=True)
    try:
        b(x).sum().backward()
        with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
            M.register_module_backward_hook(hook)
    finally:
        for h in handles:
            h.remove()
    assert [name for name, _ in seen] == ["Linear", "Block"]
    np.testing.assert_array_equal(x.grad.numpy(), [[40.0, 60.0]])  # (10 x the column sums)


def test_registration_hooks_may_replace_what_is_registered():
    log = []
    handles = [M.register_module_parameter_registration_hook(lambda m, n, p: log.append(("param", n))),
               M.register_module_buffer_registration_hook(
                   lambda m, n, t: t * 0 if n == "running_mean" else None),
               M.register_module_module_registration_hook(lambda m, n, sub: log.append(("module", n)))]
    try:
        bn = nn.BatchNorm1d(3)
        seq = nn.Sequential(nn.Linear(2, 2))
    finally:
        for h in handles:
            h.remove()
    assert ("param", "weight") in log and ("param", "bias") in log and ("module", "0") in log
    np.testing.assert_array_equal(bn.running_mean.numpy(), np.zeros(3))
    assert isinstance(seq[0], nn.Linear)


@pytest.mark.torch
def test_the_order_is_pytorchs():
    import torch
    import torch.nn.modules.module as TM

    def run(lib, mod):
        seen = []

        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b = lib.nn.Linear(2, 2), lib.nn.ReLU()

            def forward(self, x):
                return self.b(self.a(x))
        net = Net()
        own = net.register_forward_pre_hook(lambda m, a: seen.append("own-pre"))
        hs = [mod.register_module_forward_pre_hook(lambda m, a: seen.append(f"pre:{type(m).__name__}")),
              mod.register_module_forward_hook(lambda m, a, o: seen.append(f"post:{type(m).__name__}")),
              mod.register_module_full_backward_hook(lambda m, gi, go: seen.append(f"bw:{type(m).__name__}"))]
        try:
            net(lib.ones(1, 2, requires_grad=True)).sum().backward()
        finally:
            for h in hs + [own]:
                h.remove()
        return seen
    try:
        assert run(tg, M) == run(torch, TM)
    finally:
        TM._global_is_full_backward_hook = None


def test_a_compiled_module_runs_eagerly_while_a_global_hook_is_registered():
    b = _block()
    compiled = tg.compile(b)
    for _ in range(3):
        compiled(tg.ones(1, 2))
    seen = []
    h = M.register_module_forward_hook(lambda m, a, o: seen.append(type(m).__name__))
    try:
        compiled(tg.ones(1, 2))
    finally:
        h.remove()
    # every module's hook, the OptimizedModule's too (PyTorch's fires for it as well)
    assert seen == ["Linear", "Block", "OptimizedModule"]
    compiled(tg.ones(1, 2))
    assert len(seen) == 3
