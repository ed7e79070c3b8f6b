"""tracegrad.compile's guards and graph breaks: a staged version is reused only while
what its trace took as fixed holds; what cannot be staged runs eagerly (or, with
fullgraph=True, raises Unsupported naming the construct); module state changes are
eager's exactly."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.compiler import Unsupported


def entries(compiled):
    return list(compiled._compiled.cache.values())


def kinds(compiled):
    return sorted(type(e).__name__ for e in entries(compiled))


def test_a_new_shape_dtype_or_requires_grad_stages_a_new_version():
    f = tg.compile(lambda x: (x * 2).sum())
    f(tg.ones(3))
    f(tg.ones(3))
    assert kinds(f) == ["_Variant"]
    assert f(tg.ones(4)).item() == 8.0
    assert f(tg.ones(4, dtype=tg.float64)).dtype == tg.float64
    f(tg.ones(4, requires_grad=True))
    assert kinds(f) == ["_Variant"] * 4
    f(tg.ones(3))  # the first version again
    assert len(entries(f)) == 4


def test_non_tensor_arguments_are_guarded_by_value():
    f = tg.compile(lambda x, k, mode="a": x * k if mode == "a" else x + k)
    x = tg.ones(2)
    assert f(x, 3).tolist() == [3.0, 3.0]
    assert f(x, 4).tolist() == [4.0, 4.0]
    assert f(x, 4, mode="b").tolist() == [5.0, 5.0]
    assert len(entries(f)) == 3


def test_module_training_flag_parameters_and_attributes_are_guarded():
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))
    compiled = tg.compile(model)
    x = tg.randn(2, 3)
    model.eval()
    np.testing.assert_array_equal(compiled(x).detach().numpy(), model(x).detach().numpy())
    with tg.no_grad():
        model[0].weight = nn.Parameter(tg.zeros(3, 3))  # a new parameter object
    np.testing.assert_array_equal(compiled(x).detach().numpy(), model(x).detach().numpy())
    assert len(entries(compiled)) == 2

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = 2.0

        def forward(self, x):
            return x * self.scale
    s = Scaled()
    cs = tg.compile(s)
    assert cs(tg.ones(1)).item() == 2.0
    s.scale = 3.0
    assert cs(tg.ones(1)).item() == 3.0


def test_grad_mode_is_guarded():
    f = tg.compile(lambda x: x * 2)
    x = tg.ones(2, requires_grad=True)
    assert f(x).requires_grad
    with tg.no_grad():
        assert not f(x).requires_grad
    assert f(x).requires_grad


def test_a_rebound_global_is_seen():
    global SCALE
    SCALE = tg.ones(2)

    def f(x):
        return x * SCALE
    cf = tg.compile(f)
    assert cf(tg.ones(2)).tolist() == [1.0, 1.0]
    SCALE = tg.full((2,), 5.0)
    assert cf(tg.ones(2)).tolist() == [5.0, 5.0]


def branchy(x):
    if x.sum() > 0:
        return x * 2
    return x * 3


def with_item(x):
    return x * x.sum().item()


def printing(x):
    print("called")
    return x * 2


def writes_its_input(x):
    x.add_(1)
    return x * 2


@tg.compiler.disable
def kept_eager(x):
    return x + 1


def calls_disabled(x):
    return kept_eager(x) * 2


@pytest.mark.parametrize("fn,construct", [
    (branchy, "Data-dependent branching"), (with_item, r"\.item\(\)"), (printing, r"print\(\)"),
    (writes_its_input, "add_"), (calls_disabled, "tracegrad.compiler.disable")])
def test_what_cannot_be_staged_runs_eagerly_or_raises_with_fullgraph(fn, construct, capsys):
    for sign in (1.0, -1.0):
        x = tg.full((3,), sign)
        want_in = x.clone()
        want = fn(want_in)
        compiled = tg.compile(fn)
        got = compiled(x)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        np.testing.assert_array_equal(x.numpy(), want_in.numpy())  # written once, as eagerly
        assert kinds(compiled) == ["_Break"]
        assert compiled(x.clone()).tolist() == fn(x.clone()).tolist()  # remembered: eager again
    if fn is printing:
        assert capsys.readouterr().out == "called\n" * 8
    with pytest.raises(Unsupported, match=construct) as info:
        tg.compile(fn, fullgraph=True)(tg.ones(3))
    assert isinstance(info.value, RuntimeError)
    assert fn.__name__ in str(info.value)


def test_dropout_in_training_runs_eagerly_with_eager_draws():
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))
    compiled = tg.compile(model)
    x = tg.randn(6, 4)
    for seed in (1, 2):
        tg.manual_seed(seed)
        want, want_next = model(x), tg.rand(1)
        tg.manual_seed(seed)
        got, got_next = compiled(x), tg.rand(1)
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        assert got_next.item() == want_next.item()  # the generator moved as eagerly
    assert kinds(compiled) == ["_Break"]
    model.eval()
    np.testing.assert_array_equal(compiled(x).detach().numpy(), model(x).detach().numpy())
    assert kinds(compiled) == ["_Break", "_Variant"]
    with pytest.raises(Unsupported, match="random noise"):
        model.train()
        tg.compile(model, fullgraph=True)(x)


def test_batch_norm_running_statistics_are_eagers():
    tg.manual_seed(0)
    eager = nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5))
    staged = nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5))
    staged.load_state_dict(eager.state_dict())
    compiled = tg.compile(staged)
    for k in range(3):
        x = tg.randn(8, 4)
        np.testing.assert_array_equal(compiled(x).detach().numpy(), eager(x).detach().numpy())
    for a, b in zip(eager.state_dict().values(), staged.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    eager.eval()
    staged.eval()
    x = tg.randn(8, 4)
    np.testing.assert_array_equal(compiled(x).detach().numpy(), eager(x).detach().numpy())
    assert kinds(compiled) == ["_Break", "_Variant"]


def test_module_hooks_run_eagerly():
    model = nn.Linear(2, 2)
    seen = []
    model.register_forward_hook(lambda m, i, o: seen.append(1))
    compiled = tg.compile(model)
    compiled(tg.ones(2))
    compiled(tg.ones(2))
    assert seen == [1, 1] and entries(compiled) == []


def test_a_result_aliasing_an_input_runs_eagerly():
    f = tg.compile(lambda x: x.view(-1))
    x = tg.ones(2, 2)
    y = f(x)
    assert y._base is x
    assert kinds(f) == ["_Break"]


def test_returning_an_input_hands_back_that_tensor():
    f = tg.compile(lambda x, y: (x, y * 2))
    x = tg.ones(2)
    assert f(x, x)[0] is x


def test_reset_drops_every_staged_version():
    f = tg.compile(lambda x: x + 1)
    f(tg.ones(1))
    assert len(entries(f)) == 1
    tg.compiler.reset()
    assert entries(f) == []


def test_is_compiling_is_true_while_tracing_only():
    def f(x):
        return x * 2 if tg.compiler.is_compiling() else x * 3
    assert tg.compile(f)(tg.ones(1)).item() == 2.0
    assert f(tg.ones(1)).item() == 3.0
    assert tg.compiler.is_compiling() is False


def test_the_recompile_limit_falls_back_to_eager_with_a_warning():
    f = tg.compile(lambda x: x + 1)
    for n in range(1, 9):
        f(tg.ones(n))
    with pytest.warns(UserWarning, match="recompile limit"):
        assert f(tg.ones(9)).tolist() == [2.0] * 9
    assert len(entries(f)) == 8


def test_module_and_object_arguments_are_guarded_by_what_they_hold():
    class Holder:
        def __init__(self, w):
            self.w = w
    f = tg.compile(lambda x, h: x * h.w)
    h = Holder(tg.ones(2))
    assert f(tg.ones(2), h).tolist() == [1.0, 1.0]
    h.w = tg.full((2,), 3.0)
    assert f(tg.ones(2), h).tolist() == [3.0, 3.0]
    g = tg.compile(lambda m, x: m(x))
    model = nn.Linear(2, 2)
    x = tg.ones(2)
    g(model, x)
    with tg.no_grad():
        model.weight = nn.Parameter(tg.zeros(2, 2))
    assert g(model, x).tolist() == model(x).tolist()


def test_a_call_under_the_profiler_runs_eagerly_and_is_staged_later():
    f = tg.compile(lambda x: x * 2)
    with tg.autograd.profiler.profile() as prof:
        assert f(tg.ones(2)).tolist() == [2.0, 2.0]
    assert entries(f) == []
    assert any("mul" in e.name for e in prof.function_events)
    f(tg.ones(2))
    assert kinds(f) == ["_Variant"]


def test_a_compiled_function_inside_a_tape_transform_is_traced_inline():
    f = tg.compile(lambda x: (x * x).sum())
    g = tg.grad(lambda x: f(x) * 3.0, mode="tape")
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(g(x), 6 * x)
    assert entries(f) == []


def test_a_parameter_read_around_the_rule_table_runs_eagerly():
    model = nn.Linear(2, 2)

    def f(x):
        w = tg.tensor(model.weight.tolist())  # read around the rule table
        return x @ w
    compiled = tg.compile(f)
    x = tg.ones(1, 2)
    compiled(x)
    with tg.no_grad():
        model.weight.mul_(2)
    np.testing.assert_array_equal(compiled(x).numpy(), f(x).numpy())
    assert kinds(compiled) == ["_Break"]


def test_a_forward_that_changes_its_module_runs_eagerly_with_its_changes_made_once():
    class Counting(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return self.lin(x)
    model = Counting()
    compiled = tg.compile(model)
    for n in range(1, 4):
        compiled(tg.ones(2))
        assert model.calls == n
    assert kinds(compiled) == ["_Break"] and "attributes changed" in compiled._compiled.graph_breaks[0]


def test_a_tensor_subclass_runs_eagerly():
    class Marked(tg.Tensor):
        pass
    f = tg.compile(lambda x: x * 2)
    x = Marked(tg.ones(2))
    assert f(x).tolist() == [2.0, 2.0]
    assert "Tensor subclass (Marked)" in f._compiled.graph_breaks[0]


def test_a_detached_parameter_read_in_forward_runs_eagerly():
    model = nn.Linear(2, 2)
    f = tg.compile(lambda x: x @ model.weight.detach())
    x = tg.ones(1, 2)
    f(x)
    with tg.no_grad():
        model.weight.data = tg.zeros(2, 2)  # (a new array: a fixed detached tensor would be stale)
    assert f(x).tolist() == [[0.0, 0.0]]
    assert "detach()" in f._compiled.graph_breaks[0]


CALLS = 0


def counting(x):
    global CALLS
    CALLS += 1
    return x * 2


def test_a_function_that_rebinds_a_global_runs_eagerly_and_counts_once_per_call():
    global CALLS
    CALLS = 0
    f = tg.compile(counting)
    for n in range(1, 4):
        assert f(tg.ones(1)).item() == 2.0
        assert CALLS == n
    with pytest.raises(Unsupported, match="global or closure variable"):
        tg.compile(counting, fullgraph=True)(tg.ones(1))


def counting_then_branching(x):
    global CALLS
    CALLS += 1
    return x * 2 if x.sum() > 0 else x


def test_a_broken_trace_puts_rebound_globals_back():
    global CALLS
    CALLS = 0
    f = tg.compile(counting_then_branching)
    f(tg.ones(1))
    f(tg.ones(1))
    assert CALLS == 2
