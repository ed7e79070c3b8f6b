"""tracegrad.compile'd training equals eager training step by step: the staged forward and
the staged backward (one CompiledFunctionBackward node) give the eager values exactly."""
import copy
import importlib.util
import pathlib

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_digits.py"


def digits_model():
    spec = importlib.util.spec_from_file_location("train_digits", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_model()


def mlp():
    return nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 10))


def batches(image, n=4, size=16):
    from tracegrad.datasets import digits_split
    (x, y), _ = digits_split()
    for k in range(n):
        xb = x[k * size:(k + 1) * size]
        yield (xb if image else xb.reshape(size, 64)), y[k * size:(k + 1) * size]


OPTIMIZERS = {"sgd": lambda ps: tg.optim.SGD(ps, lr=0.1, momentum=0.9),
              "adam": lambda ps: tg.optim.Adam(ps, lr=1e-2)}


def train(model, step_of, optimizer, image):
    losses, params = [], []
    for x, y in batches(image):
        loss = step_of(model)(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        params.append([p.detach().clone().numpy() for p in model.parameters()])
    return losses, params


def module_step(model):
    return lambda x, y: nn.functional.cross_entropy(model(x), y)


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
@pytest.mark.parametrize("make,image", [(mlp, False), (digits_model, True)], ids=["mlp", "digits"])
@pytest.mark.parametrize("what", ["module", "loss function"])
def test_compiled_training_equals_eager_step_by_step(make, image, opt, what):
    tg.manual_seed(0)
    eager = make()
    staged = copy.deepcopy(eager)
    if what == "module":
        compiled = tg.compile(staged)
        step = module_step(compiled)
    else:
        compiled = tg.compile(lambda x, y: nn.functional.cross_entropy(staged(x), y))
        step = compiled
    want = train(eager, module_step, OPTIMIZERS[opt](eager.parameters()), image)
    got = train(compiled if what == "module" else staged, lambda m: step,
                OPTIMIZERS[opt]((compiled if what == "module" else staged).parameters()), image)
    assert got[0] == want[0]  # the losses, exactly
    for g, w in zip(got[1], want[1]):
        for a, b in zip(g, w):
            np.testing.assert_array_equal(a, b)
    cache = compiled._compiled.cache
    assert len(cache) == 1 and type(next(iter(cache.values()))).__name__ == "_Variant"


def test_the_staged_forward_is_one_autograd_node():
    model = mlp()
    out = tg.compile(model)(tg.randn(3, 64))
    assert out.grad_fn.name() == "CompiledFunctionBackward"
    # the input (which does not require grad), then the six parameters
    assert [type(n).__name__ for n, _ in out.grad_fn.next_functions] == ["NoneType"] + ["AccumulateGrad"] * 6


def test_gradients_reach_inputs_and_closure_tensors():
    w = tg.randn(3, requires_grad=True)
    x = tg.randn(4, 3, requires_grad=True)

    def f(x):
        return (x * w).tanh().sum()
    f(x).backward()
    want = x.grad.clone(), w.grad.clone()
    x.grad = w.grad = None
    tg.compile(f)(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), want[0].numpy())
    np.testing.assert_array_equal(w.grad.numpy(), want[1].numpy())


def test_a_changed_closure_tensor_is_read_at_each_call():
    w = tg.ones(3)
    f = tg.compile(lambda x: x * w)
    assert f(tg.ones(3)).tolist() == [1.0, 1.0, 1.0]
    with tg.no_grad():
        w.mul_(2)  # in place: the staged code reads w's current data
    assert f(tg.ones(3)).tolist() == [2.0, 2.0, 2.0]


def test_several_outputs_non_differentiable_ones_included():
    model = mlp()

    def f(x):
        z = model(x)
        return {"logits": z, "pred": z.argmax(dim=1), "n": x.shape[0]}
    x = tg.randn(5, 64)
    got, want = tg.compile(f)(x), f(x)
    assert got["n"] == 5 and not got["pred"].requires_grad and got["logits"].requires_grad
    np.testing.assert_array_equal(got["pred"].numpy(), want["pred"].numpy())
    np.testing.assert_array_equal(got["logits"].detach().numpy(), want["logits"].detach().numpy())


def test_backward_sees_an_input_changed_in_place_as_eager_does():
    x = tg.randn(4, 4, requires_grad=True)
    f = tg.compile(lambda a, b: (a * b).sum())
    b = tg.randn(4, 4)
    loss = f(x, b)
    with tg.no_grad():
        b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_double_backward_through_a_staged_call_is_refused():
    x = tg.randn(3, requires_grad=True)
    y = tg.compile(lambda x: (x * x).sum())(x)
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        tg.autograd.grad(y, x, create_graph=True)


def test_no_grad_calls_stage_a_forward_only_version():
    model = mlp()
    compiled = tg.compile(model)
    x = tg.randn(2, 64)
    with tg.no_grad():
        out = compiled(x)
    assert out.grad_fn is None and not out.requires_grad
    np.testing.assert_array_equal(out.numpy(), model(x).detach().numpy())
    (entry,) = compiled._compiled.cache.values()
    assert entry.plan.backward is None


@pytest.mark.torch
def test_compiled_training_matches_torch():
    import torch
    tg.manual_seed(0)
    model = mlp()
    ref = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.Tanh(), torch.nn.Linear(32, 32),
                              torch.nn.ReLU(), torch.nn.Linear(32, 10))
    with torch.no_grad():
        for p, q in zip(ref.parameters(), model.parameters()):
            p.copy_(torch.from_numpy(q.detach().numpy().copy()))
    compiled = tg.compile(model)
    opt, ropt = tg.optim.Adam(model.parameters(), lr=1e-2), torch.optim.Adam(ref.parameters(), lr=1e-2)
    for x, y in batches(False):
        loss = nn.functional.cross_entropy(compiled(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        rloss = torch.nn.functional.cross_entropy(ref(torch.from_numpy(x.numpy())), torch.from_numpy(y.numpy()))
        ropt.zero_grad()
        rloss.backward()
        ropt.step()
        assert abs(loss.item() - rloss.item()) < 1e-5
    for p, q in zip(ref.parameters(), model.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_a_second_backward_needs_retain_graph_as_eagerly():
    x = tg.randn(3, requires_grad=True)
    f = tg.compile(lambda x: (x.sin() * x).sum())
    y = f(x)
    y.backward(retain_graph=True)
    first = x.grad.clone()
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * first.numpy())
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_saved_tensor_hooks_run_eagerly():
    packed = []
    f = tg.compile(lambda x: (x * x).sum())
    x = tg.randn(3, requires_grad=True)
    with tg.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
        f(x).backward()
    assert packed and f._compiled.cache == {}


def test_a_staged_block_inside_an_eager_graph_called_twice():
    tg.manual_seed(0)
    embed, block = nn.Linear(4, 64), mlp()
    staged = tg.compile(block)
    x = tg.randn(5, 4)

    def loss(run):
        h = embed(x).tanh()  # a non-leaf input, its graph eager
        return (run(h).square().mean() + run(h * 2).mean())
    loss(block).backward()
    want = [p.grad.clone() for p in (*embed.parameters(), *block.parameters())]
    for p in (*embed.parameters(), *block.parameters()):
        p.grad = None
    loss(staged).backward()
    for p, w in zip((*embed.parameters(), *block.parameters()), want):
        np.testing.assert_array_equal(p.grad.numpy(), w.numpy())


def test_a_result_the_backward_reads_changed_in_place_is_caught_as_eagerly():
    x = tg.randn(3, requires_grad=True)
    for fn in (lambda x: x.tanh(), tg.compile(lambda x: x.tanh())):
        y = fn(x)
        with tg.no_grad():
            y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation.*is at version 1; expected "
                                               "version 0"):
            y.sum().backward()


def test_results_never_share_memory_with_inputs_or_each_other():
    f = tg.compile(lambda x: (x * 1, (x * 2).reshape(-1), x * 2))
    x = tg.ones(2, 2)
    a, b, c = f(x)
    a.add_(1)
    b.add_(1)
    assert x.tolist() == [[1.0, 1.0], [1.0, 1.0]] and c.tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_a_parameter_changed_between_forward_and_backward_is_caught_as_eagerly():
    for wrap in (lambda m: m, tg.compile):
        model = nn.Linear(3, 2)
        out = wrap(model)(tg.randn(4, 3, requires_grad=True)).sum()  # (its backward reads W)
        with tg.no_grad():
            model.weight.add_(1)  # (an optimizer step before backward)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.backward()


@pytest.mark.parametrize("make,image", [(mlp, False), (digits_model, True)], ids=["mlp", "digits"])
def test_hot_compiled_training_with_cpu_kernels_still_equals_eager_bit_for_bit(make, image, monkeypatch):
    # hot at once: from the second call the staged halves run Numba kernels -- only the
    # lines a kernel computes exactly as NumPy (operators, relu, masks), so no ulp moves
    pytest.importorskip("numba")
    from tracegrad.transform import jit
    monkeypatch.setattr(jit, "HOT_CALLS", 0)
    tg.manual_seed(0)
    eager = make()
    staged = copy.deepcopy(eager)
    compiled = tg.compile(lambda x, y: nn.functional.cross_entropy(staged(x), y))
    want = train(eager, module_step, OPTIMIZERS["sgd"](eager.parameters()), image)
    got = train(staged, lambda m: compiled, OPTIMIZERS["sgd"](staged.parameters()), image)
    assert "@cpu_kernel" in compiled._compiled.source
    assert got[0] == want[0]
    for g, w in zip(got[1], want[1]):
        for a, b in zip(g, w):
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(np.signbit(a), np.signbit(b))


def test_module_compile_stages_in_place_and_trains_as_eager():
    """``model.compile()`` (nn.Module.compile): the module itself runs staged -- one
    CompiledFunctionBackward node, state dict keys unchanged -- and SGD steps equal eager
    ones; a deep copy stages with its own parameters."""
    rng = np.random.default_rng(5)

    def make():
        m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
        with tg.no_grad():
            for p in m.parameters():
                p.copy_(tg.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
        return m
    compiled, eager = make(), make()
    eager.load_state_dict(compiled.state_dict())
    assert compiled.compile(backend="eager") is None
    assert list(compiled.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    x = tg.tensor(rng.standard_normal((5, 3)).astype(np.float32))
    opts = [tg.optim.SGD(m.parameters(), lr=0.1) for m in (compiled, eager)]
    for _ in range(3):
        for m, opt in zip((compiled, eager), opts):
            opt.zero_grad()
            m(x).pow(2).sum().backward()
            opt.step()
    np.testing.assert_allclose(compiled(x).detach().numpy(), eager(x).detach().numpy(), rtol=1e-6)
    assert type(compiled(x).grad_fn).__name__ == "CompiledFunctionBackward"
    twin = copy.deepcopy(compiled)
    with tg.no_grad():
        twin[0].weight.mul_(2)
        eager[0].weight.mul_(2)
    np.testing.assert_allclose(twin(x).detach().numpy(), eager(x).detach().numpy(), rtol=1e-6)
    with pytest.raises(tg.compiler.InvalidBackend):
        make().compile(backend="nope")
