"""The eager hot path's shortcuts keep PyTorch's behaviour: Python numbers passed to NumPy
as cached 0-d arrays, ``grad_fn._saved_<key>`` answered by per-class properties, and the
engine's one-walk count-and-claim of the graph."""
import warnings

import numpy as np
import pytest

from tracegrad.backend import number_operands
from tracegrad.rules.core import TABLE
from tracegrad.runtime import fastpath
from tracegrad.runtime.node import FunctionNode, node_class

from ._helpers import tg

FLOATS = ["float16", "float32", "float64", "complex64", "complex128"]
NUMBERS = [1.01, 0.1, -3.5, 3, 2 ** 60, 1e-8, 1e300, 65504.0, 70000.0, float("inf"), -float("inf"),
           float("nan"), 0.0, -0.0, 0]


def _values(dtype):
    if dtype.startswith("complex"):
        return np.array([0.5 + 1j, -1.0, 1.01 - 2j, 0], dtype=dtype)
    return np.array([0.5, -1.0, 1.01, 60000, 0.0, -0.0, np.nan, np.inf, 1e-7], dtype=dtype)


def _same(a, b):
    """Equal values, dtype, NaNs and signs of zero."""
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.signbit(a.real), np.signbit(b.real))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "lt", "ge", "eq", "maximum"])
def test_number_operands_give_numpys_results(dtype, op):
    """A number operand reaches the kernel as a cached 0-d array of the tensor's dtype;
    results (and the warnings NumPy gives) are those of the number itself, every time."""
    if dtype.startswith("complex") and op in ("lt", "ge", "maximum"):
        pytest.skip("not defined for complex values")
    a = _values(dtype)
    fn = {"maximum": np.maximum}.get(op) or (lambda x, y: getattr(x, f"__{op}__")(y))
    tfn = {"maximum": lambda x, y: tg.maximum(x, tg.tensor(y, dtype=x.dtype))}.get(op) or fn
    for number in NUMBERS:
        with warnings.catch_warnings(record=True) as expected:
            warnings.simplefilter("always")
            want = fn(a, number)
        for _ in range(2):  # the second time, from the cache
            with warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always")
                result = tfn(tg.tensor(a), number)
            if op == "maximum":
                break  # (a tensor operand: no number reaches the kernel)
            _same(result.numpy(), np.asarray(want))
            assert [str(w.message) for w in got] == [str(w.message) for w in expected]


def test_number_cache_keeps_no_zero_nan_or_unrepresentable_value():
    x = tg.tensor([1.0, -2.0], dtype=tg.float16)
    for number in (0.0, -0.0, 0, float("nan"), 1e10, 2 ** 70):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x * number
        assert all(not (k == number or k != k) for k in number_operands.CONSTANTS[np.dtype(np.float16)])
    _same((x * -0.0).numpy(), np.array([-0.0, 0.0], np.float16))
    x * 1.5
    kept = number_operands.CONSTANTS[np.dtype(np.float16)][1.5]
    assert kept.ndim == 0 and kept.dtype == np.float16 and not kept.flags.writeable


def test_number_operand_is_saved_as_the_number():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    for number in (1.01, 2):
        y = x * number
        assert y.grad_fn._saved_other == number and type(y.grad_fn._saved_other) is type(number)
        assert y.grad_fn.next_functions[1] == (None, 0)
    (x * 1.01).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(2, np.float32(1.01)))


def test_number_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(number_operands, "KEPT_MAX", 4)
    for table in number_operands.CONSTANTS.values():  # (a cache: emptying it changes no result)
        table.clear()
    monkeypatch.setattr(number_operands, "_kept", [0])
    x, z = tg.tensor([1.0]), tg.tensor([1.0], dtype=tg.complex64)
    for k in range(1, 20):
        np.testing.assert_array_equal((x * float(k)).numpy(), [float(k)])
        np.testing.assert_array_equal((z * float(k)).numpy(), [float(k)])
        assert sum(len(table) for table in number_operands.CONSTANTS.values()) <= 4



# -- backward of operations with numbers ----------------------------------------------------

@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64"])
def test_backward_of_number_operations_is_the_formula(dtype):
    """Backward of operations with a number operand gives the formulas' values bit for bit."""
    a = np.array([0.5, -1.0, 1.25, 3.0], dtype=dtype)
    g = np.array([1.0, -2.0, 0.5, 4.0], dtype=dtype)
    cases = [(lambda t: t * 1.01, g * 1.01), (lambda t: 3 * t, g * 3), (lambda t: t / 3.0, g / 3.0)]
    if not dtype.startswith("complex"):
        th, sg = np.tanh(a), 1 / (1 + np.exp(-a))
        cases += [(lambda t: t.tanh(), g * (1 - th * th)),
                  (lambda t: t.sigmoid(), g * sg * (1 - sg))]
    for fn, want in cases:
        x = tg.tensor(a, requires_grad=True)
        fn(x).backward(tg.tensor(g))
        _same(x.grad.numpy(), np.asarray(want, dtype=dtype))  # (real numbers: conj changes nothing)

# -- _saved_<key> as properties -------------------------------------------------------------

def test_node_classes_have_no_getattr_hook():
    """A ``__getattr__`` on the node classes would make CPython read every node attribute
    through its slow path (the engine reads a dozen per node)."""
    assert "__getattr__" not in vars(FunctionNode)
    for prim in (TABLE["mul"], TABLE["tanh"]):
        cls = node_class(prim, prim.node_name((), {}))
        assert all("__getattr__" not in vars(c) for c in cls.__mro__ if c is not object)


def _nodes():
    """Nodes of rules whose saved attributes come from params and ``saved_view``."""
    F = tg.nn.functional
    x = tg.randn(4, 6, requires_grad=True)
    w = tg.randn(5, 3, requires_grad=True)
    target = tg.tensor([0, 2, 1, 4])
    outs = [x[1], x[:, 1:5:2], x[..., 2], x.split(2, 1)[0], x.chunk(3, 1)[1], x.sum(1), x.sum(1, keepdim=True),
            x.prod(1), x + x, x.sub(x, alpha=2), F.pad(x, (1, 2)), F.embedding(tg.tensor([1, 4]), w, padding_idx=0),
            F.nll_loss(F.log_softmax(x[:, :5], 1), target), F.mse_loss(x, x.detach(), reduction="sum"),
            F.layer_norm(x, (6,)), F.group_norm(x.reshape(2, 4, 3), 2), F.batch_norm(x, None, None, training=True),
            x.gather(1, tg.tensor([[0], [1], [2], [3]])), F.smooth_l1_loss(x, x.detach() + 1, beta=0.5),
            F.binary_cross_entropy_with_logits(x, tg.rand(4, 6), reduction="none")]
    return [o.grad_fn for o in outs]


def test_every_saved_view_and_param_key_is_an_attribute():
    checked = 0
    for node in _nodes():
        prim = node._prim
        params = node._params or {}
        view = prim.saved_view(params) if prim.saved_view is not None else {}
        expected = {**params, **view}  # (the view wins, as in the lookup)
        for key, value in expected.items():
            got = getattr(node, "_saved_" + key)
            assert got == value if not isinstance(value, np.ndarray) else np.array_equal(got, value), (node, key)
            checked += 1
        with pytest.raises(AttributeError, match=f"'{type(node).__name__}' object has no attribute '_saved_nope'"):
            _ = node._saved_nope
    assert checked >= 30


@pytest.mark.torch
def test_saved_attributes_match_torch():
    import torch
    for lib in (tg, torch):
        x = lib.arange(24.0).reshape(4, 6).requires_grad_()
        nodes = [x[1].grad_fn, x[:, 1:5:2].grad_fn, x.split(2, 1)[0].grad_fn, x.sum(1, keepdim=True).grad_fn,
                 (x * 2).grad_fn, (x + x).grad_fn]
        got = [(n._saved_dim, n._saved_index) for n in nodes[:1]]
        got += [(n._saved_dim, n._saved_start, n._saved_end, n._saved_step) for n in nodes[1:2]]
        got += [(n._saved_dim, n._saved_split_size, n._saved_self_sym_sizes) for n in nodes[2:3]]
        got += [(tuple(n._saved_dim), n._saved_keepdim, n._saved_self_sym_sizes) for n in nodes[3:4]]
        got += [(n._saved_other,) for n in nodes[4:5]]
        got += [(n._saved_alpha,) for n in nodes[5:6]]
        if lib is tg:
            mine = got
    assert [tuple(tuple(v) if isinstance(v, (list, tuple)) else v for v in g) for g in mine] == \
        [tuple(tuple(v) if isinstance(v, (list, tuple)) else v for v in g) for g in got]


# -- the engine's walk -----------------------------------------------------------------------

def test_second_backward_fails_before_any_gradient_moves():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).tanh() * x
    z = y.sum()
    z.backward()
    first = x.grad.clone()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        z.backward()
    np.testing.assert_array_equal(x.grad.numpy(), first.numpy())
    # the nodes the failed pass claimed are released again: a retained graph runs twice
    w = tg.tensor([0.5], requires_grad=True)
    s = ((w * 3).exp() * w).sum()
    s.backward(retain_graph=True)
    s.backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * (np.exp(1.5) + 0.5 * 3 * np.exp(1.5)))


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_chain_gradient_matches_torch(dtype):
    import torch
    x0 = np.random.default_rng(0).standard_normal(16).astype(dtype)
    grads = []
    for lib in (tg, torch):
        x = lib.tensor(x0, requires_grad=True)
        h = x
        for _ in range(50):
            h = (h * 1.01 + 0.1).tanh()
        h.sum().backward()
        grads.append(x.grad.numpy())
    assert grads[0].dtype == grads[1].dtype
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_ufunc_shortcut_is_the_kernel_on_floats(dtype):
    """The fast paths call a ``scalar`` rule's NumPy ufunc in place of its kernel on real
    floats: both give the same values (NaN, infinities, signed zeros included)."""
    from tracegrad.backend import cpu
    x = np.array([0.5, -1.5, 2.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 1e-3, 30.0], dtype=dtype)
    y = np.array([2.0, 0.25, -3.0, -0.0, 0.0, 1.0, np.inf, 2.0, -1e-3, 0.5], dtype=dtype)
    checked = 0
    for name, prim in TABLE.items():
        ufunc = fastpath._exact_ufunc(prim)
        if ufunc is None:
            continue
        args = (x,) if len(prim.argnames) == 1 else (x, y)
        with np.errstate(all="ignore"):
            _same(np.asarray(ufunc(*args)), np.asarray(prim.impl(cpu, *args)))
        checked += 1
    assert checked >= 20


def _set_slots(obj):
    """The names among ``obj``'s slots (and ``__dict__``) that hold a value."""
    names = {n for c in type(obj).__mro__ for n in getattr(c, "__slots__", ()) if n != "__weakref__"}
    return {n for n in names if hasattr(obj, n)} | set(getattr(obj, "__dict__", {}))


def test_the_inlined_node_and_result_set_what_the_general_path_sets():
    """fastpath._tracked repeats dispatch._new_node's and wrap's set-up inline: a field
    added to one and not the other shows here."""
    x = tg.tensor([0.5, -1.0], requires_grad=True)
    fast = x * 1.01                        # fastpath._tracked
    general = tg.clamp(x, min=-0.5)        # dispatch's general path (params)
    assert type(fast.grad_fn).__name__ == "MulBackward0"
    assert _set_slots(fast.grad_fn) == _set_slots(general.grad_fn)
    assert _set_slots(fast) == _set_slots(general)


# -- per-class code, shared shapes, the grad-mode count -------------------------------------

def test_node_classes_have_their_own_apply_code():
    """CPython specializes attribute reads per code object and type: each node class runs
    its own copy of FunctionNode._apply and _release (same code, separate objects)."""
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    classes = [type(f.grad_fn) for f in (x * 2.0, x + 1.0, x.tanh())]
    codes = [cls._apply.__code__ for cls in classes] + [FunctionNode._apply.__code__]
    assert len({id(c) for c in codes}) == len(codes)
    assert all(c.co_code == FunctionNode._apply.__code__.co_code for c in codes)
    assert all(cls._release.__code__ is not FunctionNode._release.__code__ for cls in classes)


def test_shared_shape_records_give_each_node_its_own_shape():
    """Nodes of operands they do not save share one Meta per (dtype, shape); gradients of
    several shapes and dtypes, interleaved, still reduce to each operand's shape."""
    for dtype in (tg.float32, tg.float64):
        xs = [tg.ones(shape, dtype=dtype, requires_grad=True) for shape in ((3,), (2, 3), (), (3,))]
        ys = [(x * 1.5 + 0.25).tanh() for x in xs]
        for x, y in zip(xs, ys):
            y.sum().backward()
            want = 1.5 * (1 - np.tanh(np.ones(x.shape, x.detach().numpy().dtype) * 1.5 + 0.25) ** 2)
            assert x.grad.shape == x.shape and x.grad.dtype == dtype
            np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)
        metas = [y.grad_fn._args[0] for y in ys]
        assert metas[0] is metas[3] and metas[0] is not metas[1]


def test_grad_mode_count_returns_to_zero_and_threads_keep_their_modes():
    import threading
    from tracegrad.runtime import grad_mode
    x = tg.tensor([1.0], requires_grad=True)
    assert grad_mode.OFF[0] == 0
    with tg.no_grad():
        assert grad_mode.OFF[0] == 1 and (x * 2.0).grad_fn is None
        with tg.enable_grad():
            assert grad_mode.OFF[0] == 0 and (x * 2.0).grad_fn is not None
        with tg.inference_mode():
            assert grad_mode.OFF[0] == 1 and (x * 2.0).grad_fn is None
    with pytest.raises(ZeroDivisionError):
        with tg.no_grad():
            1 / 0
    (x * 2.0).sum().backward()
    assert grad_mode.OFF[0] == 0
    seen, entered, leave = [], threading.Event(), threading.Event()

    def other():
        with tg.no_grad():
            entered.set()
            leave.wait(10)
            seen.append((x * 2.0).grad_fn)
    thread = threading.Thread(target=other)
    thread.start()
    entered.wait(10)
    assert grad_mode.OFF[0] == 1 and (x * 2.0).grad_fn is not None  # this thread still records
    leave.set()
    thread.join()
    assert seen == [None] and grad_mode.OFF[0] == 0


def test_a_thread_ending_out_of_grad_mode_is_uncounted():
    # a worker that calls set_grad_enabled(False) and returns: once it has ended, the other
    # threads' ops go back to skipping the thread-local mode (and still record)
    import gc
    import threading
    from tracegrad.runtime import grad_mode
    x = tg.tensor([1.0], requires_grad=True)
    before = grad_mode.OFF[0]
    seen = []

    def worker(flags):
        tg.set_grad_enabled(False) if flags == "no_grad" else tg.inference_mode().__enter__()
        seen.append((x * 2.0).grad_fn)
        assert grad_mode.OFF[0] == before + 1

    for flags in ("no_grad", "inference"):
        thread = threading.Thread(target=worker, args=(flags,))
        thread.start()
        thread.join()
        gc.collect()
        assert grad_mode.OFF[0] == before
    assert seen == [None, None] and (x * 2.0).grad_fn is not None and tg.is_grad_enabled()
