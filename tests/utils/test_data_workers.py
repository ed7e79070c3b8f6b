"""DataLoader with worker processes (num_workers=2): results in the sampler's order, worker
info and seeding, worker_init_fn, IterableDataset sharding, persistent workers, timeouts,
errors raised again in the main process with the worker's traceback, and no process left
behind (``multiprocessing.active_children()``) however an iteration ends.

Every test runs under an alarm so that a hang fails it instead of stalling CI, and the
datasets live in ``data_helpers`` so that the spawn start method can pickle them."""
import gc
import multiprocessing
import os
import signal
import warnings

import numpy as np
import pytest

import tracegrad
from tracegrad.utils.data import DataLoader, TensorDataset, get_worker_info
from tracegrad.utils.data import worker as worker_module

from .data_helpers import (Dies, PicklesOnce, Shards, Sleepy, Squares, WhoAmI, failing_init, mark_worker, plain,
                           train_linear)

TEST_TIMEOUT_S = 60


@pytest.fixture(autouse=True)
def bounded_and_clean():
    """Fail a test that runs over TEST_TIMEOUT_S; afterwards, no worker may be left alive."""
    def on_alarm(signum, frame):
        raise TimeoutError(f"test ran over {TEST_TIMEOUT_S} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(TEST_TIMEOUT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    gc.collect()
    assert multiprocessing.active_children() == []


def _rows(loader):
    return [row for batch in loader for row in batch["index"].tolist()]


def test_results_in_sampler_order_and_same_as_single_process():
    single = plain(list(DataLoader(Squares(9), batch_size=2)))
    assert plain(list(DataLoader(Squares(9), batch_size=2, num_workers=2))) == single
    sampler = [8, 0, 7, 1, 6, 2, 5]
    batches = list(DataLoader(Squares(9), batch_size=3, sampler=sampler, num_workers=2))
    assert [i for b in batches for i in b[0].tolist()] == sampler
    assert multiprocessing.active_children() == []  # exhausted: the workers are gone already


def test_tasks_go_to_workers_in_turn_and_come_back_in_order():
    batches = list(DataLoader(WhoAmI(), batch_size=2, num_workers=2))
    assert [b["index"].tolist() for b in batches] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert [b["worker"].tolist() for b in batches] == [[0, 0], [1, 1], [0, 0], [1, 1]]
    assert set(_rows(DataLoader(WhoAmI(), batch_size=3, num_workers=2, in_order=False))) == set(range(8))


def test_worker_info_inside_workers_only():
    assert get_worker_info() is None
    batches = list(DataLoader(WhoAmI(), batch_size=None, num_workers=2))
    pids = {b["pid"] for b in batches}
    assert len(pids) == 2 and os.getpid() not in pids
    assert all(b["num_workers"] == 2 and b["same_dataset"] for b in batches)
    seeds = {b["worker"]: b["seed"] for b in batches}
    assert seeds[1] == seeds[0] + 1  # base_seed + worker_id


def test_worker_seeding_is_reproducible_and_differs_between_workers():
    def draws(seed):
        loader = DataLoader(WhoAmI(), batch_size=None, num_workers=2, generator=tracegrad.Generator().manual_seed(seed))
        return [(b["worker"], b["seed"], b["tracegrad_draw"], b["numpy_draw"]) for b in loader]

    first = draws(0)
    assert draws(0) == first  # the loader's generator fixes the base seed
    assert draws(1) != first
    by_worker = {w: (t, n) for w, _, t, n in first}
    assert by_worker[0] != by_worker[1]  # workers' streams differ
    # each worker seeded tracegrad's generator with its seed and NumPy's with torch's hash of it
    worker, seed, tracegrad_draw, numpy_draw = first[0]
    tracegrad.manual_seed(seed)
    assert float(tracegrad.rand(())) == tracegrad_draw
    np.random.seed(worker_module._generate_state(seed - worker, worker))
    assert np.random.rand() == numpy_draw


@pytest.mark.torch
def test_numpy_seed_state_matches_torch():
    from torch.utils.data._utils.worker import _generate_state
    for base_seed, worker_id in [(0, 0), (1, 3), (2 ** 63 - 2, 1), (123456789012345, 7)]:
        assert worker_module._generate_state(base_seed, worker_id) == _generate_state(base_seed, worker_id)


def test_worker_init_fn_runs_in_each_worker():
    batches = list(DataLoader(WhoAmI(), batch_size=None, num_workers=2, worker_init_fn=mark_worker))
    assert all(b["init"] == b["worker"] for b in batches)


def test_iterable_dataset_sharded_by_worker_info():
    batches = [b.tolist() for b in DataLoader(Shards(10), batch_size=2, num_workers=2)]
    assert batches == [[0, 2], [1, 3], [4, 6], [5, 7], [8], [9]]  # torch's interleaving of the two shards
    assert [b.tolist() for b in DataLoader(Shards(5), batch_size=2, num_workers=2, drop_last=True)] == [[0, 2], [1, 3]]


@pytest.mark.torch
def test_iterable_dataset_sharding_matches_torch():
    import torch.utils.data as tud

    class TorchShards(tud.IterableDataset):  # (fork start method: the class need not be picklable)
        def __iter__(self):
            info = tud.get_worker_info()
            return iter(range(info.id, 11, info.num_workers))

    theirs = [b.tolist() for b in tud.DataLoader(TorchShards(), batch_size=3, num_workers=2,
                                                 multiprocessing_context="fork")]
    ours = [b.tolist() for b in DataLoader(Shards(11), batch_size=3, num_workers=2, multiprocessing_context="fork")]
    assert ours == theirs


def test_worker_error_reraised_with_traceback():
    with pytest.raises(ValueError) as info:
        list(DataLoader(Squares(10, fail_at=7), batch_size=2, num_workers=2))
    message = str(info.value)
    assert message.startswith("Caught ValueError in DataLoader worker process 1.\nOriginal Traceback (most recent "
                              "call last):\n")
    assert "data_helpers.py" in message and message.rstrip().endswith("ValueError: bad index 7")


def test_key_error_message_stays_readable():
    with pytest.raises(KeyError) as info:
        list(DataLoader(Squares(4, fail_at=0, error=KeyError), num_workers=2))
    assert str(info.value).startswith("Caught KeyError in DataLoader worker process 0.\nOriginal Traceback")


def test_worker_init_fn_error_reraised():
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 0"):
        list(DataLoader(WhoAmI(), num_workers=2, worker_init_fn=failing_init))


def test_no_workers_left_after_error_break_or_delete():
    it = iter(DataLoader(Squares(10, fail_at=3), num_workers=2))
    with pytest.raises(ValueError):
        list(it)
    assert multiprocessing.active_children() == []  # even while the exception keeps the iterator alive
    with pytest.raises(StopIteration):
        next(it)  # a failed iterator is finished, as a generator that raised
    for _ in DataLoader(Squares(10), num_workers=2):
        break
    gc.collect()
    assert multiprocessing.active_children() == []
    it = iter(DataLoader(Squares(10), num_workers=2))
    next(it)
    assert len(multiprocessing.active_children()) == 2
    del it
    assert multiprocessing.active_children() == []


def test_persistent_workers_survive_epochs():
    loader = DataLoader(WhoAmI(), batch_size=4, num_workers=2, persistent_workers=True)
    first = list(loader)
    children = set(multiprocessing.active_children())
    assert len(children) == 2
    second = list(loader)
    assert {b for batch in first for b in batch["pid"].tolist()} == {b for batch in second for b in batch["pid"].tolist()}
    assert _rows(first) == _rows(second) == list(range(8))
    for _ in loader:  # an epoch left early: the next one starts cleanly
        break
    assert _rows(loader) == list(range(8)) and set(multiprocessing.active_children()) == children
    del loader
    gc.collect()


def test_persistent_iterable_dataset_epochs():
    loader = DataLoader(Shards(5), batch_size=2, num_workers=2, persistent_workers=True)
    assert [b.tolist() for b in loader] == [b.tolist() for b in loader] == [[0, 2], [1, 3], [4]]
    del loader


@pytest.mark.parametrize("prefetch_factor", [1, 3])
def test_prefetch_factor(prefetch_factor):
    loader = DataLoader(Squares(7), batch_size=2, num_workers=2, prefetch_factor=prefetch_factor)
    assert [b[0].tolist() for b in loader] == [[0, 1], [2, 3], [4, 5], [6]]


def test_timeout_raises_torch_error(monkeypatch):
    monkeypatch.setattr(worker_module, "MP_STATUS_CHECK_INTERVAL", 0.2)  # how long shutdown waits for a busy worker
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.3 seconds$"):
        list(DataLoader(Sleepy(5.0), num_workers=2, timeout=0.3))


def test_dead_worker_detected(monkeypatch):
    monkeypatch.setattr(worker_module, "MP_STATUS_CHECK_INTERVAL", 0.2)
    with pytest.raises(RuntimeError, match=r"^DataLoader worker \(pid\(s\) \d+\) exited unexpectedly$"):
        list(DataLoader(Dies(), num_workers=2))


def test_spawn_context():
    batches = list(DataLoader(Squares(5), batch_size=2, num_workers=1, multiprocessing_context="spawn"))
    assert [b[0].tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    assert batches[2][1].tolist() == [[16.0]]


def test_tensors_cross_processes_intact():
    x = tracegrad.arange(12, dtype=tracegrad.float64).reshape(6, 2)
    y = tracegrad.tensor([True, False, True, True, False, False])
    batches = list(DataLoader(TensorDataset(x, y), batch_size=4, num_workers=2))
    assert batches[0][0].dtype == tracegrad.float64 and batches[0][1].dtype == tracegrad.bool
    assert tracegrad.cat([b[0] for b in batches]).tolist() == x.tolist()
    w = tracegrad.ones(3, requires_grad=True)
    (back,) = list(DataLoader([w], batch_size=None, num_workers=1))
    assert back.requires_grad and back.is_leaf and back.tolist() == [1.0, 1.0, 1.0]


def test_pin_memory_with_workers_on_cpu():
    if tracegrad.cuda.is_available():
        pytest.skip("pinning happens where CUDA is available")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = list(DataLoader(Squares(3), batch_size=2, num_workers=2, pin_memory=True))
    assert [b[0].tolist() for b in batches] == [[0, 1], [2]]
    assert any("no accelerator is found" in str(w.message) for w in caught)


def test_tqdm_over_workers():
    tqdm = pytest.importorskip("tqdm").tqdm
    import io
    out = io.StringIO()
    assert [b[0].tolist() for b in tqdm(DataLoader(Squares(5), batch_size=2, num_workers=2), file=out)] == [
        [0, 1], [2, 3], [4]]
    assert "3/3" in out.getvalue()


def test_unpicklable_worker_arguments_under_spawn():
    loader = DataLoader(Squares(4), num_workers=2, collate_fn=lambda batch: batch, multiprocessing_context="spawn")
    with pytest.warns(UserWarning, match="^Got pickle error when attempting to start a worker Process"), \
            pytest.raises((AttributeError, TypeError, __import__("pickle").PicklingError)):
        iter(loader)


def test_persistent_loader_recovers_after_timeout(monkeypatch):
    monkeypatch.setattr(worker_module, "MP_STATUS_CHECK_INTERVAL", 0.2)
    loader = DataLoader(Sleepy(0.5), num_workers=2, timeout=0.1, persistent_workers=True)
    with pytest.raises(RuntimeError, match="timed out"):
        list(loader)
    assert multiprocessing.active_children() == []
    loader.timeout = 10  # patient now: a fresh set of workers
    assert [b.tolist() for b in loader] == [[0], [1], [2], [3]]
    del loader


def test_workers_started_are_stopped_when_a_later_one_cannot_start():
    PicklesOnce.pickled = 0
    loader = DataLoader(PicklesOnce(4), num_workers=2, multiprocessing_context="spawn")
    with pytest.warns(UserWarning, match="^Got pickle error"), pytest.raises(TypeError, match="cannot pickle twice"):
        iter(loader)
    assert PicklesOnce.pickled == 2 and multiprocessing.active_children() == []


def test_training_loop_with_workers_matches_main_process():
    for a, b in zip(train_linear(tracegrad), train_linear(tracegrad, num_workers=2)):
        np.testing.assert_array_equal(a, b)


def test_interpreter_exits_cleanly_with_workers_running():
    """Persistent workers and a half-read iterator at exit: the program ends at once, silently."""
    import subprocess
    import sys
    import textwrap
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    program = textwrap.dedent("""
        from tracegrad.utils.data import DataLoader
        from tests.utils.data_helpers import Squares
        loader = DataLoader(Squares(10), batch_size=2, num_workers=2, persistent_workers=True)
        assert len(list(loader)) == 5
        half_read = iter(DataLoader(Squares(10), batch_size=2, num_workers=2))
        next(half_read)
        next(iter(loader))
        print("done")
    """)
    path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, "-c", program], cwd=root, capture_output=True, text=True, timeout=30,
                            check=False, env={**os.environ, "PYTHONPATH": path})
    assert (result.returncode, result.stdout, result.stderr) == (0, "done\n", "")


def test_context_object_and_typed_classes():
    context = multiprocessing.get_context("fork")
    loader = DataLoader[int](Squares(3), batch_size=None, num_workers=2, multiprocessing_context=context)
    assert loader.multiprocessing_context is context and [i for i, _ in loader] == [0, 1, 2]
