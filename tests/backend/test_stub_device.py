"""The stub device must have teeth (a NumPy call on its arrays fails, as on a GPU) and
must offer what the real namespaces offer: every function tracegrad's CPU namespace adds
to NumPy exists, with the same parameters, in the CUDA namespace and in the stub. Also:
how tracegrad answers where CUDA is not available."""
import ast
import inspect
import pathlib

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import backend
from tracegrad.backend import cpu

from .stub_device import StubArray, _atomic_add, as_cuda, stub

_CUDA_SOURCE = pathlib.Path(backend.__file__).with_name("cuda.py")


def _added_functions(tree):
    """Name -> parameter names of the module-level functions a namespace module defines."""
    return {n.name: [a.arg for a in n.args.args] for n in tree.body
            if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}


def _imported(source):
    """The names a module imports from other modules (``from m import name``)."""
    return {a.asname or a.name for n in ast.parse(source).body
            if isinstance(n, ast.ImportFrom) for a in n.names}


def test_the_cpu_and_cuda_namespaces_add_the_same_functions():
    cpu_added = _added_functions(ast.parse(inspect.getsource(cpu)))
    cuda_added = _added_functions(ast.parse(_CUDA_SOURCE.read_text()))
    cuda_only = {"device_count", "device_index"}  # (the CPU has one device)
    # CuPy's own, wrapped: to remember their views (CuPy gives them no .base), to take a
    # Python bool condition (where); NumPy's keep theirs, so the CPU imports NumPy's
    wrapped = {"as_strided", "sliding_window_view", "where"}
    assert set(cpu_added) - {"erf"} == set(cuda_added) - cuda_only - wrapped
    assert "erf" in _imported(_CUDA_SOURCE.read_text())  # CuPy's own
    assert wrapped <= _imported(inspect.getsource(cpu)) - set(cpu_added)
    for name, params in cpu_added.items():
        if name in cuda_added:
            assert cuda_added[name] == params, f"{name}: cpu {params}, cuda {cuda_added[name]}"
    for name in wrapped:  # callable as NumPy's, which the CPU namespace uses
        numpy_params = list(inspect.signature(getattr(cpu, name)).parameters)
        assert cuda_added[name] == numpy_params[:len(cuda_added[name])], name


def test_the_stub_adds_what_the_cuda_namespace_adds():
    cuda_added = _added_functions(ast.parse(_CUDA_SOURCE.read_text()))
    for name, params in cuda_added.items():
        method = getattr(type(stub), name)
        assert list(inspect.signature(method).parameters)[1:] == params, name


def test_numpy_refuses_stub_arrays_as_it_refuses_cupy_arrays():
    a = stub.from_host(np.arange(6.0).reshape(2, 3))
    with pytest.raises(TypeError, match="does not support ufuncs"):
        np.tanh(a)
    with pytest.raises(TypeError, match="not allowed"):
        np.asarray(a)
    with pytest.raises(TypeError, match="numpy.sum was called on a stub device array"):
        np.sum(a)
    with pytest.raises(TypeError, match="Unsupported type"):
        a + np.ones(3)
    with pytest.raises(TypeError, match="Unsupported type"):
        np.ones(3) + a
    with pytest.raises(TypeError, match="Unsupported type"):
        stub.concatenate([a, np.ones((1, 3))])
    with pytest.raises(AttributeError, match="no 'frompyfunc'"):
        stub.frompyfunc
    with pytest.raises(TypeError):
        range(stub.asarray(3))  # no __index__ on device arrays


def test_stub_arrays_answer_like_cupy_arrays():
    a = stub.asarray(np.arange(6.0).reshape(2, 3))   # uploading host data is allowed
    total = a.sum()
    assert isinstance(total, StubArray) and total.shape == ()  # 0-d arrays, not scalars
    assert isinstance(a[0, 1], StubArray) and float(a[0, 1]) == 1.0
    assert isinstance(stub.tanh(a), StubArray) and isinstance(a * 2.0 + a, StubArray)
    b = a.copy()
    b += np.float32(1)  # NumPy scalars are scalars on the device too
    np.testing.assert_array_equal(stub.to_host(b), np.arange(6.0).reshape(2, 3) + 1)
    assert stub.to_host(a) is not stub.to_host(a)  # a copy each time


def test_fuse_refuses_what_cupy_cannot_fuse():
    def body(x):
        return stub.sum(x) * 2.0
    fused = stub.fuse(kernel_name="body")(body)
    with pytest.raises(TypeError, match="cannot be compiled by cupy.fuse"):
        fused(stub.ones(3))
    assert float(stub.fuse(lambda x: stub.tanh(x) * 2.0)(stub.zeros(()))) == 0.0


def test_the_stubs_atomic_add_refuses_what_cupyx_scatter_add_refuses():
    for dtype in ("int64", "int16", "uint8", "bool", "complex64"):
        with pytest.raises(TypeError, match=f"no atomicAdd for {dtype}"):
            _atomic_add(stub.zeros(3, dtype=dtype), stub.asarray([1, 1]), stub.ones(2, dtype=dtype))


_DTYPES = ("int64", "int32", "int16", "int8", "uint64", "uint16", "uint8", "bool", "float16",
           "float32", "float64", "complex64", "complex128")


@pytest.mark.parametrize("dtype", _DTYPES)
def test_scatter_add_of_every_dtype_through_the_atomic_adds_there_are(dtype):
    """(The routing the CUDA namespace uses, on the stub's add refusing as CuPy's.)"""
    start = np.arange(12).reshape(4, 3) % 5
    values = np.array([[3, -1, 2 ** 40], [-(2 ** 40), 120, 7]]) * (1 + 2j if "complex" in dtype else 1)
    if dtype == "float16":
        values = values % 1000  # (within its range)
    index = np.array([2, 2])
    want = start.astype(dtype)
    np.add.at(want, index, values.astype(dtype))
    target = stub.asarray(start.astype(dtype))
    stub.scatter_add(target, stub.asarray(index), stub.asarray(values.astype(dtype)))
    np.testing.assert_array_equal(stub.to_host(target), want)
    stub.scatter_add(target, (slice(None), 0), stub.ones((), dtype))  # (0-d, a basic index)
    np.add.at(want, (slice(None), 0), np.ones((), dtype))
    np.testing.assert_array_equal(stub.to_host(target), want)


def test_registering_the_stub_makes_it_the_cuda_device():
    if "cuda" in {ns.name for ns in backend.loaded()}:
        pytest.skip("a real CUDA namespace is loaded (the stub stands in only before)")
    with as_cuda():
        t = tg.ones(2, 3, device="cuda")
        assert isinstance(t._data, StubArray) and t.device == tg.device("cuda", 0)
        assert backend.namespace_of(t._data) is stub
    assert StubArray not in backend.ARRAY_TYPE_SET
    if not tg.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            tg.ones(2, device="cuda")


@pytest.mark.skipif(tg.cuda.is_available(), reason="checks the answers where there is no GPU")
def test_without_cuda_tracegrad_says_so():
    assert tg.cuda.device_count() == 0
    tg.cuda.manual_seed(3)  # ignored, as in PyTorch
    for call in (lambda: tg.zeros(1, device="cuda"), lambda: tg.ones(2).cuda(),
                 lambda: tg.ones(2).to("cuda:0"), tg.cuda.synchronize, tg.cuda.current_device):
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            call()
