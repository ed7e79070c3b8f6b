"""Adversarial checks of tracegrad.compile for silent wrong answers: each test here failed
(a wrong value, no error) before the fix it names."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn


def test_equal_gradients_of_two_leaves_are_not_one_shared_array():
    # the staged backward computes d/da == d/db once; both leaves adopted that one array as
    # .grad, so the second backward's accumulation into a.grad also added into b.grad
    cf = tg.compile(lambda x, a, b: (x * (a + b)).sum())
    a = tg.zeros(3, requires_grad=True)
    b = tg.zeros(3, requires_grad=True)
    for _ in range(2):
        cf(tg.ones(3), a, b).backward()
    assert a.grad.tolist() == [2.0, 2.0, 2.0]
    assert b.grad.tolist() == [2.0, 2.0, 2.0]
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())


def test_rnn_bias_gradients_accumulate_as_eagerly():
    tg.manual_seed(0)
    eager = nn.RNN(3, 4, batch_first=True)
    model = nn.RNN(3, 4, batch_first=True)
    model.load_state_dict(eager.state_dict())
    compiled = tg.compile(model)
    for _ in range(3):
        x = tg.randn(2, 5, 3)
        (eager(x)[0] ** 2).sum().backward()
        (compiled(x)[0] ** 2).sum().backward()
    for p, q in zip(eager.parameters(), model.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_tensor_where_method_keeps_its_receiver_as_the_input():
    # x.where(c, y) was traced as where(x, c, y) (the function of the name applied to x)
    f = tg.compile(lambda x, c, y: x.where(c, y))
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = tg.tensor([True, False, True])
    out = f(x, c, tg.zeros(3))
    assert out.tolist() == [1.0, 0.0, 3.0]
    out.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0]


def test_losses_and_renorm_built_on_tensor_where_equal_eager():
    import tracegrad.nn.functional as F
    tg.manual_seed(1)
    x = tg.randn(3, 4)
    y = tg.tensor([1.0, -1.0, 1.0])
    cases = [(F.hinge_embedding_loss, (x[:, 0], y)),
             (F.cosine_embedding_loss, (x, x.flip(0), y)),
             (lambda t: t.renorm(2, 0, 1.0), (x,))]
    for fn, args in cases:
        np.testing.assert_allclose(tg.compile(fn)(*args).numpy(), fn(*args).numpy(), rtol=1e-6)


def test_polygamma_method_keeps_its_receiver_as_the_input():
    x = tg.tensor([1.5, 2.0, 3.0])
    np.testing.assert_allclose(tg.compile(lambda t: t.polygamma(1))(x).numpy(), x.polygamma(1).numpy())


@pytest.mark.parametrize("op", [tg.unique, tg.unique_consecutive])
def test_a_value_sized_result_shape_is_not_baked_in(op):
    # the number of distinct values, read as a Python int, was the first call's forever
    f = tg.compile(lambda x: x.float() * op(x).shape[0])
    for values in ([0, 0, 0, 0], [0, 1, 2, 3], [5, 5, 1, 1]):
        x = tg.tensor(values)
        assert f(x).tolist() == (x.float() * op(x).shape[0]).tolist()


def test_a_value_sized_result_breaks_the_graph_with_fullgraph():
    f = tg.compile(lambda x: tg.unique(x).shape[0] + x, fullgraph=True)
    with pytest.raises(tg.compiler.Unsupported, match="shape"):
        f(tg.tensor([1, 1, 2]))


def test_requires_grad_read_while_tracing_is_the_tensors():
    # a traced value answered requires_grad=False always: code branching on it was staged
    # with the wrong branch for inputs that require grad
    f = tg.compile(lambda x: x * 2 if x.requires_grad else x * 3)
    assert f(tg.ones(2)).tolist() == [3.0, 3.0]
    assert f(tg.ones(2, requires_grad=True)).tolist() == [2.0, 2.0]

    def g(x, w):
        with tg.no_grad():
            stopped = x * w
        flags = ((x * w).requires_grad, (x * 2).requires_grad, w.detach().requires_grad,
                 stopped.requires_grad, (x * w).is_leaf, w.is_leaf)
        return x * sum(k * flag for k, flag in zip((1, 2, 4, 8, 16, 32), flags))
    w = tg.ones(2, requires_grad=True)
    assert tg.compile(g)(tg.ones(2), w).tolist() == g(tg.ones(2), w).tolist()


def test_python_random_draws_are_not_replayed():
    import random
    f = lambda x: x * random.random()  # noqa: E731
    cf = tg.compile(f)
    for _ in range(3):
        state = random.getstate()
        expected = f(tg.ones(2))
        random.setstate(state)
        assert cf(tg.ones(2)).tolist() == expected.tolist()


class _Scaled(nn.Module):
    SCALE = 1.0

    def forward(self, x):
        return x * self.SCALE


def test_a_class_attribute_read_through_self_is_watched():
    model = _Scaled()
    compiled = tg.compile(model)
    try:
        for scale in (1.0, 2.0, 3.0):
            _Scaled.SCALE = scale
            assert compiled(tg.ones(2)).tolist() == [scale, scale]
    finally:
        _Scaled.SCALE = 1.0


def test_function_attributes_and_mutable_defaults_are_watched():
    def f(x):
        return x * f.scale
    f.scale = 1.0
    cf = tg.compile(f)

    def g(x, cfg={"s": 1.0}):  # noqa: B006  (the point: changed in place)
        return x * cfg["s"]
    cg = tg.compile(g)
    for k in (1.0, 2.0, 3.0):
        f.scale = k
        g.__defaults__[0]["s"] = k
        assert cf(tg.ones(2)).tolist() == [k, k]
        assert cg(tg.ones(2)).tolist() == [k, k]


class _Cube(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 3 * x * x


def test_a_custom_function_runs_eagerly_and_fullgraph_names_it():
    # its forward ran inside the capture and reported its own ops back without end (a
    # RecursionError caught as a graph break)
    f = tg.compile(lambda x: _Cube.apply(x).sum())
    for values in ([1.0, 2.0], [3.0, -1.0]):
        x = tg.tensor(values, requires_grad=True)
        f(x).backward()
        assert x.grad.tolist() == [3 * v * v for v in values]
    assert f._compiled.graph_breaks[0].startswith("a custom autograd.Function (_Cube.apply)")
    with pytest.raises(tg.compiler.Unsupported, match=r"_Cube\.apply"):
        tg.compile(lambda x: _Cube.apply(x), fullgraph=True)(tg.ones(2))


def test_user_code_sees_traced_values_as_tensors():
    # isinstance(y, Tensor) / is_tensor(y) were False for every value the capture traced,
    # so code branching on them was staged down the other branch
    def f(x):
        y = x * 1
        a = 2.0 if isinstance(x, tg.Tensor) else 3.0
        b = 5.0 if isinstance(y, (int, tg.Tensor)) else 7.0
        c = 11.0 if tg.is_tensor(y) else 13.0
        d = 17.0 if isinstance(y, nn.Parameter) else 19.0
        return [t * a * b * c * d for t in (y, 4) if isinstance(t, tg.Tensor)]
    x = tg.ones(2)
    assert [t.tolist() for t in tg.compile(f)(x)] == [t.tolist() for t in f(x)]
    import builtins
    assert builtins.isinstance is isinstance and tg.is_tensor(x)


def test_layout_reads_answer_as_eagerly_and_strides_are_guarded():
    # a traced value said is_contiguous() True and had row-major strides always, and the
    # guards ignored strides: a transposed argument replayed the contiguous branch
    def f(x):
        scale = 2.0 if x.is_contiguous() else 3.0
        return x * scale * x.stride(0) * (5.0 if x.t().is_contiguous() else 7.0)
    cf = tg.compile(f)
    for x in (tg.ones(2, 3), tg.ones(3, 2).t(), tg.ones(2, 3)):
        assert cf(x).tolist() == f(x).tolist()


@pytest.mark.parametrize("text", [str, repr, lambda t: f"{t}", lambda t: "%s" % t,
                                  lambda t: f"{t:>30}" if t.dim() == 0 else f"{t}"])  # (a spec: 0-d only, as torch)
def test_a_tensor_made_text_is_not_the_tracers(text):
    # str(y) of a traced value was "Traced<f32[]>%2", baked into the staged call
    def f(x):
        return x * len(text(x.sum())), text(x)
    cf = tg.compile(f)
    for x in (tg.ones(2), tg.full((2,), 123.5)):
        got, expected = cf(x), f(x)
        assert got[1] == expected[1] and got[0].tolist() == expected[0].tolist()
    with pytest.raises(tg.compiler.Unsupported, match="of a tensor"):
        tg.compile(f, fullgraph=True)(tg.ones(2))


def test_a_traced_bool_mask_is_staged_and_read_at_each_call():
    # masked_fill refused a traced mask (not a Tensor instance): a graph break at every call
    # of attention with a mask; staged now, the mask's values must be read at each replay
    f = tg.compile(lambda x, m: x.masked_fill(m, -1.0) * 2, fullgraph=True)
    x = tg.arange(4.0)
    for mask in ([True, False, False, True], [False, True, True, False]):
        m = tg.tensor(mask)
        assert f(x, m).tolist() == (x.masked_fill(m, -1.0) * 2).tolist()


_HELD = tg.ones(3)


def test_a_captured_tensor_given_new_data_of_another_shape_or_dtype_is_retraced():
    # G.data = ... keeps the object (the name watch sees no change) but not its shape: the
    # staged call kept the first shape read (G.shape[0]) and the first dtype's casts
    def f(x):
        return x * _HELD.shape[0] + _HELD.sum()
    cf = tg.compile(f)
    x = tg.ones(2)
    try:
        for data in (tg.ones(3), tg.ones(5), tg.ones(5, dtype=tg.float64)):
            _HELD.data = data
            got, expected = cf(x), f(x)
            assert got.dtype == expected.dtype and got.tolist() == expected.tolist()
    finally:
        _HELD.data = tg.ones(3)


def test_an_element_written_into_a_tensor_the_code_made_is_kept():
    # t[0] = v on a factory's tensor ran copy_ into the 0-d view t[0], which the tape took
    # for a number: the write never reached t (the staged call returned zeros)
    def f(x):
        t = tg.zeros(3)
        t[0] = x[1] * 5
        t.mul_(2)
        t[2] = t[0] + x[2]
        return (t * x).sum()
    cf = tg.compile(f)
    for values in ([1.0, 2.0, 3.0], [4.0, 5.0, 7.0]):
        x, y = tg.tensor(values, requires_grad=True), tg.tensor(values, requires_grad=True)
        got, expected = cf(x), f(y)
        assert got.item() == expected.item()
        got.backward()
        expected.backward()
        assert x.grad.tolist() == y.grad.tolist()
    assert cf._compiled.graph_breaks == []


_OFFSET = tg.full((2,), 100.0)


def test_one_tensor_passed_twice_or_also_read_as_a_global_is_not_one_input_later():
    # traced as f(x, x) (or with the global passed as the argument), the staged call made
    # one input of both; a later f(x, y) (same guards) read x for y
    f = tg.compile(lambda a, b: a * 2 + b)
    x, y = tg.ones(2), tg.full((2,), 10.0)
    assert f(x, x).tolist() == [3.0, 3.0]
    assert f(x, y).tolist() == [12.0, 12.0]
    assert f(x, x).tolist() == [3.0, 3.0]
    g = tg.compile(lambda a: a + _OFFSET)
    assert g(_OFFSET).tolist() == [200.0, 200.0]
    assert g(x).tolist() == [101.0, 101.0]


class _SubScaled(nn.Module):
    SCALE = 1.0

    def forward(self, x):
        return x * self.SCALE


def test_a_submodules_class_attribute_is_watched():
    model = nn.Sequential(nn.Linear(2, 2), _SubScaled())
    compiled = tg.compile(model)
    x = tg.ones(1, 2)
    try:
        for scale in (1.0, 5.0):
            _SubScaled.SCALE = scale
            np.testing.assert_array_equal(compiled(x).detach().numpy(), model(x).detach().numpy())
    finally:
        _SubScaled.SCALE = 1.0


class _Helped(nn.Module):
    SCALE = 1.0

    def forward(self, x):
        return self.helper(x)

    def helper(self, x):
        return x * self.SCALE


def test_a_class_attribute_read_in_a_method_the_forward_calls_is_watched():
    model = _Helped()
    compiled = tg.compile(model)
    try:
        for scale in (1.0, 3.0):
            _Helped.SCALE = scale
            assert compiled(tg.ones(2)).tolist() == [scale, scale]
    finally:
        _Helped.SCALE = 1.0
