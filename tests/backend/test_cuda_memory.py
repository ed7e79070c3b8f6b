"""tracegrad.cuda's memory figures: zeros (and PyTorch's errors) without CUDA; CuPy's pool with it."""
import collections

import pytest

import tracegrad as tg

no_cuda = pytest.mark.skipif(tg.cuda.is_available(), reason="a CUDA device is present")
cuda = pytest.mark.skipif(not tg.cuda.is_available(), reason="no CUDA device")


@no_cuda
@pytest.mark.parametrize("name", ["memory_allocated", "memory_reserved", "max_memory_allocated",
                                  "max_memory_reserved"])
def test_figures_are_zero_without_cuda(name):
    assert getattr(tg.cuda, name)() == 0


@no_cuda
def test_stats_and_cache_without_cuda():
    assert tg.cuda.memory_stats() == collections.OrderedDict()
    assert tg.cuda.empty_cache() is None
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        tg.cuda.reset_peak_memory_stats()


@cuda
def test_allocated_bytes_follow_cuda_tensors():
    before = tg.cuda.memory_allocated()
    t = tg.zeros(1 << 20, device="cuda")
    assert tg.cuda.memory_allocated() - before >= 4 << 20
    assert tg.cuda.memory_reserved() >= tg.cuda.memory_allocated()
    del t
    assert tg.cuda.memory_allocated() == before
    with pytest.raises(NotImplementedError, match="keeps no peak"):
        tg.cuda.max_memory_allocated()
