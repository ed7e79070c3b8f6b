"""What runs inside a DataLoader worker process, as ``torch.utils.data._utils.worker``.

A worker seeds Python's, tracegrad's and NumPy's random generators from the loader's base
seed and its id (as torch does, so two workers never draw the same augmentations), makes
``get_worker_info()`` answer, runs ``worker_init_fn``, then serves ``(task, index)`` pairs
from its index queue, putting ``(task, result)`` on the shared result queue. An exception
travels back as an ``ExceptionWrapper`` holding the worker's formatted traceback, which the
main process raises again; ``None`` on the index queue tells the worker to exit.
"""
import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass

from ...backend import (
    cpu as host,  # host-side (NumPy) arithmetic, never on device arrays
)
from .fetch import create_fetcher

__all__ = ["WorkerInfo", "get_worker_info"]

MP_STATUS_CHECK_INTERVAL = 5.0
"""Seconds between checks that the other side is alive, while waiting on a queue."""

_worker_info = None


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """What ``get_worker_info()`` answers inside a worker: its ``id`` in
    ``range(num_workers)``, its ``seed`` and its own copy of the ``dataset``."""
    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str = "multiprocessing"


def get_worker_info():
    """The ``WorkerInfo`` of the worker process this runs in; None in the main process.
    An ``IterableDataset`` uses it to read only its share of the stream, and a
    ``worker_init_fn`` to configure each worker's copy of the dataset."""
    return _worker_info


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's iterable dataset is exhausted."""
    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Start a new epoch (persistent workers): the worker makes a fresh fetcher."""
    seed: object = None


class KeyErrorMessage(str):
    """A str whose repr is itself: a KeyError shows its argument's repr, which would
    print a traceback as one line full of ``\\n``."""
    __slots__ = ()

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception and its formatted traceback, picklable, to raise again in another
    process (torch's ``torch._utils.ExceptionWrapper``)."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]  # the traceback object itself is not kept: it holds frames
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise the exception again: same type, the original traceback in the message."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:  # noqa: BLE001 (a type that takes other arguments: say what happened anyway)
            raise RuntimeError(msg) from None
        raise exception


def _generate_state(base_seed, worker_id):
    """NumPy's legacy seed for a worker: 4 words hashed from ``base_seed`` and the id with
    NumPy's ``SeedSequence`` constants, as torch computes it (so that workers' NumPy
    streams are unrelated, not ``seed + i``)."""
    INIT_A, MULT_A, INIT_B, MULT_B = 0x43b0d7e5, 0x931e8875, 0x8b51f9dd, 0x58f38ded
    MIX_MULT_L, MIX_MULT_R, XSHIFT, MASK32 = 0xca01f9dd, 0x4973f715, 16, 0xFFFFFFFF
    entropy = [worker_id, base_seed & MASK32, base_seed >> 32, 0]
    hash_const_A = INIT_A

    def hash(value):
        nonlocal hash_const_A
        value = (value ^ hash_const_A) & MASK32
        hash_const_A = (hash_const_A * MULT_A) & MASK32
        value = (value * hash_const_A) & MASK32
        return (value ^ (value >> XSHIFT)) & MASK32

    def mix(x, y):
        result = ((MIX_MULT_L * x) & MASK32) - ((MIX_MULT_R * y) & MASK32) & MASK32
        return (result ^ (result >> XSHIFT)) & MASK32

    pool = [hash(e) for e in entropy]
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hash(pool[i_src]))
    hash_const_B = INIT_B
    state = []
    for data_val in pool:
        data_val = (data_val ^ hash_const_B) & MASK32
        hash_const_B = (hash_const_B * MULT_B) & MASK32
        data_val = (data_val * hash_const_B) & MASK32
        state.append((data_val ^ (data_val >> XSHIFT)) & MASK32)
    return state


class _ManagerWatchdog:
    """Whether the main process still lives: a worker whose parent died exits instead of
    waiting forever (its parent pid changes when it is re-parented)."""

    def __init__(self):
        self.manager_pid = os.getppid()
        self.manager_dead = False

    def is_alive(self):
        if not self.manager_dead:
            self.manager_dead = os.getppid() != self.manager_pid
        return not self.manager_dead


def _seed_worker(base_seed, worker_id):
    """Seed Python's, tracegrad's and NumPy's global generators for this worker."""
    import tracegrad
    seed = base_seed + worker_id
    random.seed(seed)
    tracegrad.manual_seed(seed)
    host.random.seed(_generate_state(base_seed, worker_id))
    return seed


def _worker_loop(is_iterable, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn,
                 drop_last, base_seed, init_fn, worker_id, num_workers, persistent_workers):
    """A worker process's main loop (module-level, so that every start method can pickle it)."""
    global _worker_info
    try:
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_exception = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = create_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:  # noqa: BLE001 (reported with the first task, where the main process waits for it)
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        iteration_end = False
        watchdog = _ManagerWatchdog()
        while watchdog.is_alive():
            try:
                r = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                fetcher = create_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last)
                continue
            if r is None:
                break
            if done_event.is_set() or iteration_end:
                continue
            idx, index = r
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:  # noqa: BLE001 (any error of the dataset goes to the main process)
                    if isinstance(e, StopIteration) and is_iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, data))
            del data, idx, index, r  # drop references before blocking on the queue again
    except KeyboardInterrupt:
        pass  # the main process handles it and shuts the workers down
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
