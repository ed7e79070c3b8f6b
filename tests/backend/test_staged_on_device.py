"""The tape and AST paths on the device: ``grad(f)`` of a function whose inputs live on
the GPU computes there, its generated code calls the backend namespace (on the stub
device any NumPy call on device data raises), plain-NumPy user code in AST mode has its
``np.*`` names rebound to the device's namespace, and compiled tapes fuse elementwise
runs into one kernel (``xp.fuse``) unless fusion is turned off."""
import numpy as np
import pytest

import tracegrad as tg

from . import stub_device

# -- functions differentiated below (module level: the AST path reads their source) ---------

def mlp_loss(x, w):
    h = np.tanh(x @ w)
    return np.sum(h * h)


def loops_and_branches(x, w):
    h = np.tanh(x @ w)
    z = np.zeros(h.shape) + h
    for i in range(3):
        if i % 2 == 0:
            z = z * 0.5 + np.exp(-z)
        else:
            z = np.maximum(z, 0.1) * h
    return np.mean(np.concatenate([z, h], axis=0))


def chain(y):
    for _ in range(4):
        y = np.tanh(y * 1.01 + 0.1)
    return np.sum(y)


def tensor_style(x, w):
    h = (x @ w).relu()
    return (h * h).sum() + tg.sigmoid(x).mean()


NUMPY_STYLE = [mlp_loss, loops_and_branches, chain]


def _args(fn, xp, rng=np.random.default_rng(0)):
    host = (rng.standard_normal((3, 4)),) if fn is chain else (
        rng.standard_normal((3, 4)), rng.standard_normal((4, 2)))
    return host, tuple(xp.from_host(a) for a in host)


def _on_host(xp, value):
    assert isinstance(value, xp.ndarray), f"the result is a {type(value).__name__}, not a device array"
    return xp.to_host(value)


@pytest.mark.parametrize("mode", ["tape", "ast"])
@pytest.mark.parametrize("fn", NUMPY_STYLE, ids=lambda f: f.__name__)
def test_grad_of_numpy_code_on_device_arrays_matches_cpu(xp, fn, mode):
    host, dev = _args(fn, xp)
    argnums = tuple(range(len(host)))
    want = tg.grad(fn, argnums=argnums, mode=mode)(*host)
    got = tg.grad(fn, argnums=argnums, mode=mode)(*dev)
    for g, w in zip(got, want):
        np.testing.assert_allclose(_on_host(xp, g), w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["tape", "ast"])
def test_value_and_grad_and_jvp_on_device(xp, mode):
    host, dev = _args(mlp_loss, xp)
    value, grad = tg.value_and_grad(mlp_loss, argnums=1, mode=mode)(*dev)
    want_value, want_grad = tg.value_and_grad(mlp_loss, argnums=1, mode=mode)(*host)
    np.testing.assert_allclose(_on_host(xp, value), want_value, rtol=1e-12)
    np.testing.assert_allclose(_on_host(xp, grad), want_grad, rtol=1e-10)
    tangents = tuple(xp.ones_like(a) for a in dev)
    out, tangent = tg.jvp(mlp_loss, dev, tangents, mode=mode)
    want_out, want_tangent = tg.jvp(mlp_loss, host, tuple(np.ones_like(a) for a in host), mode=mode)
    np.testing.assert_allclose(_on_host(xp, tangent), want_tangent, rtol=1e-10)
    np.testing.assert_allclose(_on_host(xp, out), want_out, rtol=1e-12)


def test_hessian_on_device(xp):
    host, dev = _args(chain, xp)
    x = dev[0][0]
    got = tg.hessian(chain, mode="tape")(x)
    np.testing.assert_allclose(_on_host(xp, got), tg.hessian(chain, mode="tape")(host[0][0]), rtol=1e-9)


@pytest.mark.parametrize("mode", ["tape", "ast", "auto"])
def test_grad_of_tensor_code_on_cuda_tensors(xp, mode):
    host, _ = _args(tensor_style, xp)
    want = tg.grad(tensor_style, argnums=(0, 1), mode=mode)(*[tg.tensor(a) for a in host])
    got = tg.grad(tensor_style, argnums=(0, 1), mode=mode)(*[tg.tensor(a, device="cuda") for a in host])
    for g, w in zip(got, want):
        assert isinstance(g, tg.Tensor) and g.device == tg.device("cuda:0")
        np.testing.assert_allclose(g.cpu().numpy(), w.numpy(), rtol=1e-10, atol=1e-12)


def test_generated_tape_code_calls_the_namespace_not_numpy(xp):
    _, dev = _args(loops_and_branches, xp)
    g = tg.grad(loops_and_branches, argnums=(0, 1), mode="tape")
    g(*dev)
    assert "np." not in g.source and "numpy" not in g.source
    assert "xp." in g.source


def test_ast_mode_rebinds_numpy_to_the_device_namespace(xp):
    """The generated adjoint keeps the user's ``np.`` text (it is their code) and runs it
    on the device: on the stub, a NumPy call on device data would raise."""
    _, dev = _args(loops_and_branches, xp)
    g = tg.grad(loops_and_branches, argnums=1, mode="ast")
    got = g(*dev)
    assert "np.tanh" in g.source and "np.zeros" in g.source
    assert isinstance(got, xp.ndarray)
    on_device = g.generated().on_device(xp)
    assert on_device.__globals__["np"] is xp
    assert g.generated().fn.__globals__["np"] is np  # the CPU function is left alone


# -- fusion ------------------------------------------------------------------------------

@pytest.fixture
def stub():
    """The stub device (its fuse counts calls); where a real GPU's namespace is loaded, the
    stub cannot stand in, and the GPU variants of the tests above run instead."""
    if "cuda" in {ns.name for ns in tg.backend.loaded()}:
        pytest.skip("a real CUDA namespace is loaded (the stub-only fusion checks run without one)")
    with stub_device.as_cuda() as ns:
        yield ns


def test_elementwise_runs_are_fused_on_the_device(stub):
    host, dev = _args(chain, stub)
    g = tg.value_and_grad(chain, mode="tape")
    g(*dev)  # (the first call traces: its values come from the trace, not the compiled code)
    before = stub_device.fused_calls[0]
    value, grad = g(*dev)
    assert g.source.count("@xp.fuse(") == 2  # the forward chain and the backward chain
    assert stub_device.fused_calls[0] - before == 2
    want_value, want_grad = tg.value_and_grad(chain, mode="tape")(*host)
    np.testing.assert_allclose(stub.to_host(grad), want_grad, rtol=1e-12)
    np.testing.assert_allclose(stub.to_host(value), want_value, rtol=1e-12)


def test_fused_helpers_read_as_the_lines_they_replace(stub):
    _, dev = _args(mlp_loss, stub)
    g = tg.grad(mlp_loss, argnums=1, mode="tape")
    g(*dev)
    helper = g.source.split("\n\n")[0]
    assert helper.startswith("@xp.fuse(kernel_name='dmlp_loss_dw_fused0')\ndef dmlp_loss_dw_fused0(t0):")
    assert "xp.tanh(" in helper and " * " in helper and helper.rstrip().splitlines()[-1].startswith("    return ")
    body = g.source.split("\n\n")[-1]
    assert "= dmlp_loss_dw_fused0(t0)" in body


def test_fusion_can_be_turned_off(stub):
    _, dev = _args(chain, stub)
    with tg.fusion(False):
        assert not tg.fusion_enabled()
        g = tg.value_and_grad(chain, mode="tape")
        value, grad = g(*dev)
    assert tg.fusion_enabled()
    assert "fuse" not in g.source
    fused_value, fused_grad = tg.value_and_grad(chain, mode="tape")(*dev)
    np.testing.assert_array_equal(stub.to_host(fused_grad), stub.to_host(grad))
    assert tg.set_fusion(False) is True
    assert tg.set_fusion(True) is False


def test_cpu_tapes_are_never_fused():
    g = tg.value_and_grad(chain, mode="tape")
    g(np.ones((3, 4)))
    assert "fuse" not in g.source


def test_fusion_does_not_cross_a_guard(stub):
    def clipped(y):
        z = np.tanh(y) * 2.0 + 1.0
        if np.sum(z) > 0:
            z = np.exp(z) * 0.5 - 1.0
        return np.sum(z)
    _, dev = _args(chain, stub)
    g = tg.grad(clipped, mode="tape")
    g(*dev)
    got = g(*dev)
    body = g.source.split("\n\n")[-1]
    assert body.index("_fused0(") < body.index("raise GuardFailed") < body.index("_fused1(")
    want = tg.grad(clipped, mode="tape")(stub.to_host(dev[0]))
    np.testing.assert_allclose(stub.to_host(got), want, rtol=1e-12)


def moves_to_the_device(x):
    y = x.cuda()
    return (y.tanh() * 2).sum().cpu() + x.sum()


@pytest.mark.parametrize("mode", ["tape", "ast"])
def test_a_function_that_moves_its_input_to_the_device(xp, mode):
    """Each generated line computes with the namespace of its own operands' device."""
    x = tg.randn(3, 4, dtype=tg.float64)
    g = tg.grad(moves_to_the_device, mode=mode)
    for _ in range(2):  # traced, then replayed
        got = g(x)
        assert got.device == tg.device("cpu")
        np.testing.assert_allclose(got.numpy(), 2 * (1 - np.tanh(x.numpy()) ** 2) + 1, rtol=1e-12)
    if mode == "tape":
        assert "xp_cuda.tanh(" in g.source and "to_device(xp_cuda, " in g.source


def long_chain(y):
    for _ in range(60):
        y = np.tanh(y * 1.01 + 0.1)
    return np.sum(y)


def test_long_runs_are_cut_to_fit_a_kernel(stub):
    """A 60-step chain saves 60 values for its backward: one helper would take them all."""
    from tracegrad.transform.tape.fusion import MAX_ARGS
    _, dev = _args(chain, stub)
    g = tg.grad(long_chain, mode="tape")
    g(*dev)
    got = g(*dev)
    helpers = [block for block in g.source.split("\n\n") if block.startswith("@xp.fuse(")]
    assert len(helpers) > 2
    for block in helpers:
        lines = block.splitlines()
        params = lines[1][lines[1].index("(") + 1:lines[1].index(")")].split(", ")
        results = lines[-1].removeprefix("    return ").split(", ")
        assert len(params) + len(results) <= MAX_ARGS, block
    want = tg.grad(long_chain, mode="tape")(stub.to_host(dev[0]))
    np.testing.assert_allclose(stub.to_host(got), want, rtol=1e-12)


def broadcast_run(b, x):
    c = np.exp(b) * 2.0
    return np.sum(np.tanh(x * c))


def test_a_fused_run_holds_one_result_shape(stub):
    """A fused kernel gives every output the broadcast shape of all its inputs (the stub's
    fuse does as CuPy's does), so values of a smaller shape are not fused with larger."""
    rng = np.random.default_rng(3)
    b, x = rng.standard_normal(4), rng.standard_normal((3, 4))
    g = tg.grad(broadcast_run, argnums=(0, 1), mode="tape")
    for _ in range(2):
        db, dx = g(stub.from_host(b), stub.from_host(x))
    want_db, want_dx = tg.grad(broadcast_run, argnums=(0, 1), mode="tape")(b, x)
    assert stub.to_host(db).shape == (4,)
    np.testing.assert_allclose(stub.to_host(db), want_db, rtol=1e-12)
    np.testing.assert_allclose(stub.to_host(dx), want_dx, rtol=1e-12)


def scaled(x, s):
    return np.sum(np.tanh(x * s))


@pytest.mark.parametrize("mode", ["tape", "ast"])
def test_python_float_arguments_beside_device_arrays(xp, mode):
    host = np.random.default_rng(4).standard_normal((3, 4))
    for argnums in (0, 1, (0, 1)):
        g = tg.grad(scaled, argnums=argnums, mode=mode)
        want = tg.grad(scaled, argnums=argnums, mode=mode)(host, 0.5)
        for _ in range(2):
            got = g(xp.from_host(host), 0.5)
            for r, w in zip(got if isinstance(argnums, tuple) else (got,),
                            want if isinstance(argnums, tuple) else (want,)):
                r = float(r) if isinstance(w, float) else _on_host(xp, r)
                np.testing.assert_allclose(r, w, rtol=1e-12)


def test_a_cpu_scalar_tensor_beside_cuda_tensors_on_the_tape(xp):
    x = tg.tensor(np.random.default_rng(5).standard_normal((3, 4)))
    s = tg.tensor(0.5, dtype=tg.float64)
    f = (lambda a, b: (a * b).tanh().sum())
    want = tg.grad(f, argnums=(0, 1), mode="tape")(x, s)
    g = tg.grad(f, argnums=(0, 1), mode="tape")
    for _ in range(2):
        dx, ds = g(x.cuda(), s)
        assert dx.device.type == "cuda" and ds.device.type == "cpu"
        np.testing.assert_allclose(dx.cpu().numpy(), want[0].numpy(), rtol=1e-12)
        np.testing.assert_allclose(ds.numpy(), want[1].numpy(), rtol=1e-12)


def repeated_index_write(x, v):
    y = x * 1.0
    y[np.array([0, 2, 0])] = v * 3.0   # position 0 written twice: the last value stays
    return np.sum(y * y)


@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_a_write_at_a_repeated_index_on_device(xp, mode):
    # the "last write wins" mask is computed beside the gradient (on the device), and the
    # overwritten value gets nothing: d/dv sum(y^2) = 6 y[idx] where kept, else 0
    host = (np.array([0.5, -1.0, 2.0, 0.25]), np.array([1.5, -0.5, 0.75]))
    dev = tuple(xp.from_host(a) for a in host)
    want = tg.grad(repeated_index_write, argnums=(0, 1), mode=mode)(*host)
    got = tg.grad(repeated_index_write, argnums=(0, 1), mode=mode)(*dev)
    np.testing.assert_allclose(want[1], [0.0, 6 * 3 * -0.5, 6 * 3 * 0.75])
    for w, g in zip(want, got):
        np.testing.assert_allclose(_on_host(xp, g), w, rtol=1e-12)


def test_ast_mode_refuses_a_write_at_a_repeated_index_on_device(xp):
    # AST mode runs the write itself, and CuPy leaves open which repeated value stays: the
    # gradient could follow the wrong one (a GPU kept the first). Distinct positions are fine.
    host = (np.array([0.5, -1.0, 2.0, 0.25]), np.array([1.5, -0.5, 0.75]))
    dev = tuple(xp.from_host(a) for a in host)
    want = tg.grad(repeated_index_write, argnums=(0, 1), mode="ast")(*host)
    np.testing.assert_allclose(want[1], [0.0, 6 * 3 * -0.5, 6 * 3 * 0.75])
    with pytest.raises(tg.TransformError, match="writes one position more than once on a cuda device"):
        tg.grad(repeated_index_write, argnums=(0, 1), mode="ast")(*dev)
    with pytest.raises(tg.TransformError, match="writes one position more than once"):
        tg.jvp(repeated_index_write, dev, dev, mode="ast")

    def distinct(x, v):
        y = x * 1.0
        y[np.array([0, 2, 3])] = v * 3.0
        return np.sum(y * y)
    for w, g in zip(tg.grad(distinct, argnums=(0, 1), mode="ast")(*host),
                    tg.grad(distinct, argnums=(0, 1), mode="ast")(*dev)):
        np.testing.assert_allclose(_on_host(xp, g), w, rtol=1e-12)
    (_, t_host), (_, t_dev) = (tg.jvp(distinct, a, a, mode="ast") for a in (host, dev))
    np.testing.assert_allclose(_on_host(xp, t_dev), t_host, rtol=1e-12)
