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

from .stub_device import StubArray, as_cuda, stub

_CUDA_SOURCE = pathlib.Path(backend.__file__).with_name("cuda.py")


def _added_functions(tree):
    """Name -> parameter names of the module-level functions a namespace module defines."""
    return {n.name: [a.arg for a in n.args.args] for n in tree.body
            if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}


def test_the_cpu_and_cuda_namespaces_add_the_same_functions():
    cpu_added = _added_functions(ast.parse(inspect.getsource(cpu)))
    cuda_added = _added_functions(ast.parse(_CUDA_SOURCE.read_text()))
    cuda_only = {"device_count", "device_index"}  # (the CPU has one device)
    imported = {a.asname or a.name for n in ast.parse(_CUDA_SOURCE.read_text()).body
                if isinstance(n, ast.ImportFrom) and n.module != "cupy" for a in n.names}
    assert set(cpu_added) - {"erf"} == set(cuda_added) - cuda_only
    assert {"as_strided", "sliding_window_view", "erf"} <= imported  # CuPy's own
    for name, params in cpu_added.items():
        if name in cuda_added:
            assert cuda_added[name] == params, f"{name}: cpu {params}, cuda {cuda_added[name]}"


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


def test_registering_the_stub_makes_it_the_cuda_device():
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
