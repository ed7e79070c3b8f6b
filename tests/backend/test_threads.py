"""The intra-op threads (tracegrad.backend.threads): slabs cover the range exactly once and
run on several threads when the work is large enough; one thread, or little work, runs in
the caller; errors propagate after every slab has finished; ``tracegrad.set_num_threads``
sets the count; a forked child gets a working pool of its own. And the threaded kernels
(convolution, batch norm) give bit-identical values on 1 and on 3 threads."""
import multiprocessing
import threading

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.backend import threads


@pytest.fixture
def three_threads(monkeypatch):
    """Three threads, and any work worth splitting."""
    before = threads.get_threads()
    threads.set_threads(3)
    monkeypatch.setattr(threads, "MIN_BYTES", 1)
    yield
    threads.set_threads(before)


def _record():
    seen, lock = [], threading.Lock()

    def fn(lo, hi):
        with lock:
            seen.append((lo, hi, threading.get_ident()))
    return seen, fn


def test_slabs_cover_the_range_once_on_several_threads(three_threads):
    seen, fn = _record()
    threads.parallel(fn, 10, 10 ** 9)
    assert sorted((lo, hi) for lo, hi, _ in seen) == [(0, 3), (3, 6), (6, 10)]
    assert threading.get_ident() in {t for *_, t in seen}  # the caller does a slab itself


def test_small_work_or_one_thread_stays_in_the_caller(monkeypatch):
    before = threads.get_threads()
    try:
        threads.set_threads(4)
        seen, fn = _record()
        threads.parallel(fn, 10, threads.MIN_BYTES)  # one thread's worth
        assert seen == [(0, 10, threading.get_ident())]
        threads.set_threads(1)
        seen, fn = _record()
        threads.parallel(fn, 10, 10 ** 9)
        assert seen == [(0, 10, threading.get_ident())]
    finally:
        threads.set_threads(before)


def _assert_threads_agree(run, monkeypatch):
    """``run()``'s arrays on one thread equal them on three (every slab split off)."""
    before = threads.get_threads()
    try:
        threads.set_threads(1)
        one = run()
        threads.set_threads(3)
        monkeypatch.setattr(threads, "MIN_BYTES", 1)
        many = run()
    finally:
        threads.set_threads(before)
    for a, b_ in zip(one, many):
        np.testing.assert_array_equal(a, b_)


def test_no_more_slabs_than_rows(three_threads):
    seen, fn = _record()
    threads.parallel(fn, 2, 10 ** 9)
    assert sorted((lo, hi) for lo, hi, _ in seen) == [(0, 1), (1, 2)]


def test_an_error_propagates_after_every_slab_is_done(three_threads):
    done = []

    def fn(lo, hi):
        if lo == 3:
            raise ValueError("slab 3")
        done.append(lo)
    with pytest.raises(ValueError, match="slab 3"):
        threads.parallel(fn, 9, 10 ** 9)
    assert sorted(done) == [0, 6]


def test_set_num_threads_sets_the_intra_op_threads():
    before = tg.get_num_threads()
    try:
        tg.set_num_threads(3)
        assert threads.get_threads() == 3 and tg.get_num_threads() == 3
    finally:
        tg.set_num_threads(before)
    assert threads.get_threads() == before


def _child(queue):
    out = np.zeros(8)

    def fn(lo, hi):
        out[lo:hi] = np.arange(lo, hi)
    threads.parallel(fn, 8, 10 ** 9)
    queue.put(out.tolist())


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")
def test_a_forked_child_gets_a_pool_of_its_own(three_threads):
    threads.parallel(lambda lo, hi: None, 8, 10 ** 9)  # the parent's pool exists
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(queue,))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert queue.get(timeout=5) == list(range(8))


def _conv_results(x, w, b, **kw):
    xs, ws, bs = (tg.tensor(a, requires_grad=True) for a in (x, w, b))
    y = tg.nn.functional.conv2d(xs, ws, bs, **kw)
    y.backward(tg.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)).astype(x.dtype)))
    return [y.detach().numpy(), xs.grad.numpy(), ws.grad.numpy(), bs.grad.numpy()]


@pytest.mark.parametrize("kw", [dict(padding=1), dict(stride=2, padding=(2, 1), dilation=(1, 2)),
                                dict(padding=1, groups=2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_threaded_convolutions_equal_single_threaded_ones(kw, dtype, monkeypatch):
    rng = np.random.default_rng(3)
    c = 6
    x = rng.standard_normal((5, c, 9, 7)).astype(dtype)
    w = rng.standard_normal((12, c // kw.get("groups", 1), 3, 3)).astype(dtype)
    b = rng.standard_normal(12).astype(dtype)
    _assert_threads_agree(lambda: _conv_results(x, w, b, **kw), monkeypatch)


@pytest.mark.parametrize("shape", [(4, 7, 5, 3), (6, 5), (3, 4, 9)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_threaded_batch_norm_equals_single_threaded(shape, dtype, monkeypatch):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape).astype(dtype) * 3 + 1
    w, b = rng.standard_normal(shape[1]).astype(dtype), rng.standard_normal(shape[1]).astype(dtype)

    def run():
        xs, ws, bs = (tg.tensor(a, requires_grad=True) for a in (x, w, b))
        y = tg.nn.functional.batch_norm(xs, None, None, ws, bs, training=True)
        y.backward(tg.tensor(np.sin(np.arange(y.numel())).reshape(shape).astype(dtype)))
        return [y.detach().numpy(), xs.grad.numpy(), ws.grad.numpy(), bs.grad.numpy()]
    _assert_threads_agree(run, monkeypatch)


@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2, ceil_mode=True),
                                dict(kernel_size=(2, 3), stride=1, dilation=(1, 2))])
def test_threaded_max_pooling_equals_single_threaded(kw, monkeypatch):
    rng = np.random.default_rng(5)
    x = rng.integers(-3, 3, (3, 5, 7, 8)).astype(np.float32)  # ties
    x[0, 1, 2, 3] = np.nan

    def run():
        xs = tg.tensor(x, requires_grad=True)
        y, idx = tg.nn.functional.max_pool2d(xs, return_indices=True, **kw)
        y.backward(tg.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)).astype(np.float32)))
        return [y.detach().numpy(), idx.numpy(), xs.grad.numpy()]
    _assert_threads_agree(run, monkeypatch)


def test_a_slab_that_splits_again_runs_in_its_thread(three_threads):
    """Nested parallel calls do not wait on the pool they run in (no deadlock)."""
    seen, fn = _record()

    def outer(lo, hi):
        threads.parallel(fn, 4, 10 ** 9)
    threads.parallel(outer, 3, 10 ** 9)
    assert len(seen) == 3 + 1 + 1  # the caller's slab splits in three; the pool's two do not


@pytest.mark.parametrize("env,expected", [("3", 3), ("0", 1), ("x", 1), (None, 1)])
def test_the_default_count_is_one_unless_tracegrad_num_threads_says(env, expected, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "4")  # (torch's setting: not this pool's)
    if env is None:
        monkeypatch.delenv("TRACEGRAD_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("TRACEGRAD_NUM_THREADS", env)
    assert threads._default_threads() == expected
