"""``DataLoader``, as ``torch.utils.data.DataLoader``: a sampler chooses keys, a fetcher
reads them from the dataset and a collate function makes the batch, in the main process
(``num_workers=0``) or in worker processes.

With workers, each has its own index queue and all share one result queue. The main
process keeps ``prefetch_factor * num_workers`` tasks outstanding, sending them to the
workers in turn, and hands results back in the sampler's order (holding early arrivals)
unless ``in_order=False``. Workers are shut down when the iterator is exhausted, deleted or
fails (persistent workers only when the iterator goes), so no process outlives its loader.
"""
import atexit
import itertools
import math
import multiprocessing
import os
import queue
import warnings
import weakref
from typing import Generic, TypeVar

from . import worker as _worker
from .collate import default_collate, default_convert, pin_memory
from .dataset import IterableDataset
from .fetch import create_fetcher
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    _random_seed,
)
from .worker import ExceptionWrapper, get_worker_info

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

_T_co = TypeVar("_T_co", covariant=True)

_python_exiting = [False]  # set at exit: from then on __del__ leaves workers to multiprocessing's own exit handler
_persistent_iterators = weakref.WeakSet()  # persistent workers outlive epochs: stopped at exit, as torch does


def _at_exit():
    _python_exiting[0] = True
    for it in list(_persistent_iterators):
        it._shutdown_workers(force=True)


atexit.register(_at_exit)


class _InfiniteConstantSampler(Sampler):
    """The index sampler of an iterable dataset: the dataset decides when it ends."""

    def __iter__(self):
        while True:
            yield None


def _accelerator_available():
    from ... import cuda
    return cuda.is_available()


def _check_context(context):
    """``multiprocessing_context`` as a context object: a start method's name, or a context."""
    if isinstance(context, str):
        valid_start_methods = multiprocessing.get_all_start_methods()
        if context not in valid_start_methods:
            raise ValueError("multiprocessing_context option should specify a valid start method in "
                             f"{valid_start_methods!r}, but got multiprocessing_context={context!r}")
        context = multiprocessing.get_context(context)
    if not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError("multiprocessing_context option should be a valid context object or a string specifying "
                        f"the start method, but got multiprocessing_context={context}")
    return context


def _start(process):
    """Start a worker; when its arguments cannot be pickled (start methods other than
    fork pickle the dataset, collate_fn and worker_init_fn), say so as torch does."""
    from pickle import PicklingError
    try:
        process.start()
    except (TypeError, AttributeError, PicklingError):
        warnings.warn("Got pickle error when attempting to start a worker Process. This might be because the worker "
                      "Process arguments are not picklable. Python 3.14+ changed the multiprocessing start method in "
                      "non-Mac POSIX platforms to 'forkserver', which requires the worker Process arguments to be "
                      "picklable. You can also try multiprocessing.set_start_method('fork').", stacklevel=4)
        raise


class DataLoader(Generic[_T_co]):
    """Batches of ``dataset``'s samples: ``batch_size`` of them (None: one sample at a
    time, not batched), in order or shuffled (``shuffle``, ``sampler``, ``generator``),
    or as ``batch_sampler`` groups them; collated by ``collate_fn``; loaded by
    ``num_workers`` worker processes when it is positive."""

    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            for name, value in (("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value is not None:
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, "
                                     f"but got {name}={value}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None
        self.check_worker_number_rationality()

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context):
        if multiprocessing_context is not None:
            if self.num_workers <= 0:
                raise ValueError("multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            multiprocessing_context = _check_context(multiprocessing_context)
        self.__multiprocessing_context = multiprocessing_context

    def __setattr__(self, attr, val):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                           "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None or self._iterator._shutdown:  # (a timeout or a dead worker ends them)
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self):
        if not self._is_iterable:
            return len(self._index_sampler)
        length = self._IterableDataset_len_called = len(self.dataset)
        if self.batch_size is not None:
            length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
        return length

    def check_worker_number_rationality(self):
        """Warn, as torch does, when asked for more workers than this process has CPUs."""
        if not self.num_workers:
            return
        cpuset_checked = hasattr(os, "sched_getaffinity")
        max_num_worker_suggest = len(os.sched_getaffinity(0)) if cpuset_checked else os.cpu_count()
        if max_num_worker_suggest is not None and self.num_workers <= max_num_worker_suggest:
            return
        if max_num_worker_suggest is None:
            suggested = "DataLoader is not able to compute a suggested max number of worker in current system."
        else:
            suggested = (f"Our suggested max number of worker in current system is {max_num_worker_suggest}"
                         f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}, which is smaller "
                         "than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {suggested} "
                      "Please be aware that excessive worker creation might get DataLoader running slow or even "
                      "freeze, lower the worker number to avoid potential slowness/freeze if necessary.",
                      stacklevel=2)


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._is_iterable = loader._is_iterable
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be used as the device,"
                          f"ignore pin_memory_device='{loader.pin_memory_device}'.", stacklevel=2)
        accelerator = _accelerator_available() if loader.pin_memory else False
        if loader.pin_memory and not accelerator:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=2)
        self._pin_memory = loader.pin_memory and accelerator
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _random_seed(loader.generator)
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if (self._is_iterable and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            warn_msg = (f"Length of IterableDataset {self._dataset} was reported to be "
                        f"{self._IterableDataset_len_called}(when accessing len(dataloader)), but "
                        f"{self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                warn_msg += ("For multiprocessing data-loading, this could be caused by not properly configuring "
                             "the IterableDataset replica at each worker. Please see "
                             "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for "
                             "examples.")
            warnings.warn(warn_msg, stacklevel=2)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError("{} cannot be pickled", self.__class__.__name__)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._dataset_fetcher = create_fetcher(self._is_iterable, self._dataset, self._auto_collation,
                                               self._collate_fn, self._drop_last)

    def _next_data(self):
        data = self._dataset_fetcher.fetch(self._next_index())
        return pin_memory(data) if self._pin_memory else data


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Loads through ``num_workers`` worker processes (see the module docstring)."""

    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        if self._prefetch_factor <= 0:
            raise AssertionError("prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        context = loader.multiprocessing_context or multiprocessing.get_context()
        self._shutdown = False
        self._workers = []
        self._index_queues = []
        self._worker_result_queue = context.Queue()
        self._workers_done_event = context.Event()
        try:
            for i in range(self._num_workers):
                index_queue = context.Queue()
                index_queue.cancel_join_thread()  # the main process never waits to flush indices
                w = context.Process(
                    target=_worker._worker_loop,
                    args=(self._is_iterable, self._dataset, index_queue, self._worker_result_queue,
                          self._workers_done_event, self._auto_collation, self._collate_fn, self._drop_last,
                          self._base_seed, loader.worker_init_fn, i, self._num_workers, self._persistent_workers))
                w.daemon = True
                self._index_queues.append(index_queue)
                _start(w)
                self._workers.append(w)
        except BaseException:  # stop the workers already started
            self._workers_status = [True] * len(self._workers)
            self._shutdown_workers()
            raise
        self._data_queue = self._worker_result_queue
        if self._persistent_workers:
            _persistent_iterators.add(self)
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0  # the next task to send
        self._rcvd_idx = 0  # the next task to hand back
        self._task_info = {}  # task -> (worker,) while outstanding, (worker, data) once arrived early
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:  # persistent workers: each acknowledges the new epoch before any task
            for index_queue in self._index_queues:
                index_queue.put(_worker._ResumeIteration())
            resume_iteration_cnt = self._num_workers
            while resume_iteration_cnt > 0:
                return_idx, _ = self._get_data()
                if isinstance(return_idx, _worker._ResumeIteration):
                    resume_iteration_cnt -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout=None):
        """(True, item) from the result queue, or (False, None) after ``timeout`` seconds;
        a worker found dead meanwhile is a RuntimeError naming its pid."""
        timeout = _worker.MP_STATUS_CHECK_INTERVAL if timeout is None else timeout
        try:
            return True, self._data_queue.get(timeout=timeout)
        except Exception as e:
            failed_workers = [w for worker_id, w in enumerate(self._workers)
                              if self._workers_status[worker_id] and not w.is_alive()]
            for w in failed_workers:
                self._mark_worker_as_unavailable(self._workers.index(w))
            if failed_workers:
                self._shutdown_workers()
                pids_str = ", ".join(str(w.pid) for w in failed_workers)
                raise RuntimeError(f"DataLoader worker (pid(s) {pids_str}) exited unexpectedly") from e
            if isinstance(e, queue.Empty):
                return False, None
            raise

    def _get_data(self):
        if self._timeout > 0:
            success, data = self._try_get_data(self._timeout)
            if success:
                return data
            self._shutdown_workers()
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        while True:
            success, data = self._try_get_data()
            if success:
                return data

    def _next_data(self):
        if self._shutdown:  # after an error, like a generator that raised: it is finished
            raise StopIteration
        while True:
            # skip tasks of workers that ended (an iterable dataset's) and were never answered
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:  # it arrived earlier
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            idx, data = self._get_data()
            if self._is_iterable and isinstance(data, _worker._IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:
                    return self._process_data(data, self._task_info.pop(idx)[0])
                self._task_info[idx] += (data,)
            else:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _try_put_index(self):
        """Send the next index to the next worker still running (and, out of order, not
        holding more than its share of tasks)."""
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_queue_idx = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_queue_idx] and (
                    self._in_order
                    or self._workers_num_tasks[worker_queue_idx] < max_tasks // sum(self._workers_status)):
                break
        else:
            return
        self._index_queues[worker_queue_idx].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_queue_idx,)
        self._workers_num_tasks[worker_queue_idx] += 1
        self._send_idx += 1

    def _process_data(self, data, worker_idx):
        self._workers_num_tasks[worker_idx] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            if not self._persistent_workers:
                self._shutdown_workers()
            data.reraise()
        return pin_memory(data) if self._pin_memory else data

    def _mark_worker_as_unavailable(self, worker_id):
        """Tell a worker to exit (``None`` on its index queue) and send it nothing more."""
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self, force=False):
        """Stop every worker and wait for it (terminating one that does not exit in time),
        then close the queues. Safe to call more than once, and from ``__del__``."""
        if self._shutdown or (_python_exiting[0] and not force):
            return
        self._shutdown = True
        try:
            self._workers_done_event.set()
            for worker_id in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[worker_id]:
                    self._mark_worker_as_unavailable(worker_id)
            for w in self._workers:
                w.join(timeout=_worker.MP_STATUS_CHECK_INTERVAL)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=_worker.MP_STATUS_CHECK_INTERVAL)
            _persistent_iterators.discard(self)

    def __del__(self):
        if hasattr(self, "_shutdown"):  # not when __init__ failed before the workers existed
            self._shutdown_workers()

