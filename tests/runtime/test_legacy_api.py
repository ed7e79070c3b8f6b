"""Legacy constructors, default device/dtype/tensor type, and the switches and facts
programs read (accelerator, backends, determinism, matmul precision, compile, version)."""
import importlib.util
import warnings

import numpy as np
import pytest

import tracegrad as torch

HAS_CUDA = torch.cuda.is_available()
LEGACY = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor",
          "CharTensor", "ByteTensor", "BoolTensor"]


@pytest.fixture(autouse=True)
def _restore_defaults():
    yield
    torch.set_default_dtype(torch.float32)
    torch.set_default_device(None)
    torch.use_deterministic_algorithms(False)
    torch.set_float32_matmul_precision("highest")


@pytest.mark.torch
@pytest.mark.parametrize("name", LEGACY)
def test_legacy_constructors_match_torch(name):
    import torch as real
    for args in [(2, 3), ([1, 0, 1],), ((2, 1),), (real.Size([2]),), ()]:
        ours_args = tuple(torch.Size(a) if isinstance(a, real.Size) else a for a in args)
        ours, theirs = getattr(torch, name)(*ours_args), getattr(real, name)(*args)
        assert ours.shape == tuple(theirs.shape)
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
        if args and not isinstance(args[0], (int, real.Size)):  # data: the values too
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.torch
@pytest.mark.parametrize("name", LEGACY)
def test_isinstance_matches_torch(name):
    import torch as real
    for d in ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]:
        ours = isinstance(torch.zeros(2, dtype=getattr(torch, d)), getattr(torch, name))
        assert ours == isinstance(real.zeros(2, dtype=getattr(real, d)), getattr(real, name))
    assert not issubclass(getattr(torch, name), torch.Tensor)
    assert not isinstance(torch.zeros(2), getattr(torch.cuda, name))


def test_legacy_type_names_and_conversions():
    assert repr(torch.FloatTensor) == "<class 'tracegrad.FloatTensor'>"
    assert torch.FloatTensor.dtype is torch.float32 and not torch.FloatTensor.is_cuda
    assert torch.zeros(2).type(torch.DoubleTensor).dtype is torch.float64
    assert torch.zeros(2).type("torch.IntTensor").dtype is torch.int32
    t = torch.ones(2)
    torch.FloatTensor(t).add_(1)  # the same storage
    np.testing.assert_array_equal(t.numpy(), [2.0, 2.0])
    with pytest.raises(TypeError, match="expected tracegrad.float32"):
        torch.FloatTensor(torch.ones(2, dtype=torch.float64))
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        torch.FloatTensor(2, dtype=torch.float64)
    with pytest.raises(TypeError, match="invalid type: 'torch.Nope'"):
        torch.zeros(1).type("torch.Nope")


def test_set_default_tensor_type_sets_the_dtype_and_warns():
    with pytest.warns(UserWarning, match=r"set_default_tensor_type\(\) is deprecated"):
        torch.set_default_tensor_type(torch.DoubleTensor)
    assert torch.get_default_dtype() is torch.float64 and torch.zeros(1).dtype is torch.float64
    with pytest.warns(UserWarning):
        torch.set_default_tensor_type("torch.FloatTensor")
    assert torch.tensor([1.5]).dtype is torch.float32
    with pytest.warns(UserWarning), pytest.raises(TypeError, match="only floating-point types are supported"):
        torch.set_default_tensor_type("torch.LongTensor")


def test_default_device():
    assert torch.get_default_device() == torch.device("cpu")
    torch.set_default_device("cpu")
    assert torch.zeros(1).device == torch.device("cpu")
    with torch.device("cpu") as d:
        assert d == torch.device("cpu") and torch.get_default_device() == d
    torch.set_default_device("cuda")
    factories = [lambda: torch.zeros(2), lambda: torch.tensor([1.0]), lambda: torch.rand(2),
                 lambda: torch.arange(3), lambda: torch.full((2,), 1.0), lambda: torch.Tensor(2)]
    for make in factories:
        if HAS_CUDA:
            assert make().device.type == "cuda"
        else:
            with pytest.raises(RuntimeError, match="CUDA is not available"):
                make()
    assert torch.zeros_like(torch.ones(1, device="cpu") if not HAS_CUDA else torch.ones(1)).device.type == (
        "cuda" if HAS_CUDA else "cpu")  # *_like follow their input


@pytest.mark.torch
def test_accelerator_and_backends_answer_truthfully():
    assert torch.accelerator.is_available() is HAS_CUDA
    assert torch.accelerator.device_count() == torch.cuda.device_count()
    if not HAS_CUDA:
        assert torch.accelerator.current_accelerator() is None
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available."):
            torch.accelerator.current_device_index()
    assert torch.backends.mps.is_available() is False
    assert torch.backends.cudnn.is_available() is False  # tracegrad never calls cuDNN
    assert torch.backends.cudnn.enabled and not torch.backends.cudnn.benchmark
    assert torch.backends.cuda.is_built() == (importlib.util.find_spec("cupy") is not None)
    import torch.backends.cudnn as cudnn  # noqa: F401  (import forms programs use)
    import tracegrad.backends.cudnn as our_cudnn
    our_cudnn.benchmark = True
    assert torch.backends.cudnn.benchmark
    our_cudnn.benchmark = False
    with torch.backends.cudnn.flags(enabled=False):
        assert not torch.backends.cudnn.enabled
    assert torch.backends.cudnn.enabled


@pytest.mark.torch
def test_matmul_precision_and_tf32_follow_torch():
    import torch as real
    try:
        for lib in (torch, real):
            assert lib.get_float32_matmul_precision() == "highest"
            assert lib.backends.cuda.matmul.allow_tf32 is False
            lib.set_float32_matmul_precision("high")
            assert lib.backends.cuda.matmul.allow_tf32 is True
            lib.set_float32_matmul_precision("highest")
            assert lib.backends.cuda.matmul.allow_tf32 is False
            lib.backends.cuda.matmul.allow_tf32 = True
            assert lib.get_float32_matmul_precision() == "high"
            lib.set_float32_matmul_precision("highest")
            with pytest.warns(UserWarning, match="bad is not one of 'highest', 'high', or 'medium'"):
                lib.set_float32_matmul_precision("bad")
    finally:
        real.set_float32_matmul_precision("highest")


@pytest.mark.torch
def test_deterministic_switches_follow_torch():
    import torch as real
    try:
        for lib in (torch, real):
            lib.use_deterministic_algorithms(True, warn_only=True)
            assert lib.are_deterministic_algorithms_enabled()
            assert lib.is_deterministic_algorithms_warn_only_enabled()
            assert lib.get_deterministic_debug_mode() == 1
            lib.set_deterministic_debug_mode("error")
            assert lib.get_deterministic_debug_mode() == 2 and not lib.is_deterministic_algorithms_warn_only_enabled()
            lib.use_deterministic_algorithms(False)
            assert lib.get_deterministic_debug_mode() == 0
            with pytest.raises(TypeError, match="argument 'mode' \\(position 1\\) must be bool, not str"):
                lib.use_deterministic_algorithms("yes")
    finally:
        real.use_deterministic_algorithms(False)


def test_compile_wraps_the_model_and_checks_its_arguments():
    model = torch.nn.Linear(2, 1)
    assert torch.compile(model)._orig_mod is model
    assert torch.compile(mode="max-autotune")(model)._orig_mod is model
    assert torch.compile(model, disable=True) is model

    @torch.compile
    def f(x):
        return x * 2
    assert f(torch.ones(1)).item() == 2.0
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast"):
        torch.compile(model, mode="fast")
    with pytest.raises(RuntimeError, match="Either mode or options can be specified"):
        torch.compile(model, mode="default", options={})
    assert torch.compiler.is_compiling() is False


def test_manual_seed_returns_a_generator_and_versions():
    g = torch.manual_seed(5)
    assert isinstance(g, torch.Generator) and g.initial_seed() == 5
    assert torch.version.__version__ == torch.__version__
    assert torch.version.cuda is None or HAS_CUDA or importlib.util.find_spec("cupy") is not None
    assert torch.version.hip is None and torch.version.debug is False


def test_default_dtype_checks():
    torch.set_default_dtype(torch.float64)
    assert torch.tensor([1.0]).dtype is torch.float64 and torch.get_default_dtype() is torch.float64
    with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
        torch.set_default_dtype(torch.int64)


def test_random_state_round_trips():
    state = torch.random.get_rng_state()
    a = torch.rand(3)
    torch.random.set_rng_state(state)
    np.testing.assert_array_equal(torch.rand(3).numpy(), a.numpy())
    assert torch.get_rng_state is torch.random.get_rng_state
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.random.fork_rng():
            torch.rand(5)
    np.testing.assert_array_equal(torch.random.get_rng_state().numpy(), torch.get_rng_state().numpy())


def test_generator_state_round_trips():
    """A DataLoader generator's state saved in a checkpoint and restored on resume."""
    g = torch.Generator().manual_seed(7)
    state = g.get_state()
    assert state.dtype is torch.uint8 and state.ndim == 1
    first = torch.randperm(10, generator=g)
    assert g.set_state(state) is g
    np.testing.assert_array_equal(torch.randperm(10, generator=g).numpy(), first.numpy())
    other = torch.Generator().set_state(g.get_state())  # another generator continues the stream
    assert other.initial_seed() == 7  # (the initial seed travels with the state, as in PyTorch)
    twin = g.clone_state()
    a, b, c = (torch.rand(4, generator=x) for x in (g, other, twin))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(a.numpy(), c.numpy())
    default = torch.default_generator.get_state()
    x = torch.rand(3)
    torch.default_generator.set_state(default)
    np.testing.assert_array_equal(torch.rand(3).numpy(), x.numpy())
    with pytest.raises(TypeError, match="expected a torch.ByteTensor"):
        g.set_state(torch.zeros(3))
    with pytest.raises(RuntimeError, match="set_state: not a state"):
        g.set_state(torch.zeros(3, dtype=torch.uint8))


def test_the_version_is_the_pytorch_api_followed_and_compares_as_a_version():
    """Time-Series-Library's ``padding = 1 if torch.__version__ >= '1.5.0' else 2``."""
    import tracegrad as torch
    v = torch.__version__
    assert v.startswith("2.13.0+tracegrad.") and v.split("+")[1] == "tracegrad." + torch.version.tracegrad
    assert v >= "1.5.0" and v >= "2.9" and v > "2.13.0" and v < "2.14" and v >= (2, 0) and v < (3,)
    assert not v < "2.13" and v != "2.12.1" and int(v.split(".")[0]) == 2
    assert isinstance(v, str) and hash(v) == hash(str(v))
