"""The ``xp`` fixture: each device test runs on the stub device (always: it proves that
nothing calls NumPy on device arrays) and on a real GPU through CuPy (skipped where there
is none). Both answer to ``device='cuda'``."""
import pytest

import tracegrad as tg
from tracegrad import backend

from .stub_device import as_cuda

needs_gpu = pytest.mark.skipif(not tg.cuda.is_available(),
                               reason="no CUDA GPU (or no CuPy: pip install 'tracegrad[gpu]')")


@pytest.fixture(params=["stub", pytest.param("gpu", marks=needs_gpu)])
def xp(request):
    """The array namespace behind ``device='cuda'`` in this test."""
    if request.param == "stub":
        with as_cuda() as ns:
            yield ns
    else:
        yield backend.namespace_for("cuda")


def pytest_collection_modifyitems(items):
    """Every stub-device case before every GPU case: the stub cannot stand in for CUDA once
    a real CUDA namespace is loaded, so on a GPU machine the stub cases run first."""
    def on_gpu(item):
        spec = getattr(item, "callspec", None)
        return spec is not None and spec.params.get("xp") == "gpu"
    items.sort(key=on_gpu)
