"""DataLoader in the main process (num_workers=0): batches, lengths, drop_last, samplers,
collate functions and every incompatible-options error, against torch; reproducible
shuffling; progress bars (tqdm)."""
import warnings

import numpy as np
import pytest

import tracegrad
from tracegrad.utils.data import (BatchSampler, DataLoader, IterableDataset, SequentialSampler, TensorDataset,
                                  default_collate)

from .data_helpers import Squares, plain, train_linear


def _stream(L, n=3, sized=True):
    """An iterable dataset of ``range(n)`` of library ``L`` (torch's DataLoader knows only its own)."""
    class Stream(L.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(n))

    if sized:
        Stream.__len__ = lambda self: n
    return Stream()


def _library(data_module):
    """tracegrad or torch, from its ``utils.data`` module."""
    return tracegrad if data_module.__name__.startswith("tracegrad") else __import__("torch")


def _tensor_dataset(L):
    return L.utils.data.TensorDataset(L.arange(14.0).reshape(7, 2), L.arange(7))


# each case: a DataLoader built from a library (tracegrad or torch); deterministic output
LOADERS = {
    "default": lambda L: L.utils.data.DataLoader(_tensor_dataset(L)),
    "batch_3": lambda L: L.utils.data.DataLoader(_tensor_dataset(L), batch_size=3),
    "batch_3_drop_last": lambda L: L.utils.data.DataLoader(_tensor_dataset(L), batch_size=3, drop_last=True),
    "batch_7_drop_last": lambda L: L.utils.data.DataLoader(_tensor_dataset(L), batch_size=7, drop_last=True),
    "batch_10": lambda L: L.utils.data.DataLoader(_tensor_dataset(L), batch_size=10),
    "no_batching": lambda L: L.utils.data.DataLoader(_tensor_dataset(L), batch_size=None),
    "no_batching_numpy": lambda L: L.utils.data.DataLoader([np.arange(2) + i for i in range(3)], batch_size=None),
    "list_of_pairs": lambda L: L.utils.data.DataLoader([(i, float(i) / 2, str(i)) for i in range(5)], batch_size=2),
    "dicts": lambda L: L.utils.data.DataLoader([{"x": np.ones(2) * i, "y": i} for i in range(4)], batch_size=3),
    "sampler": lambda L: L.utils.data.DataLoader(list(range(10)), batch_size=4, sampler=[9, 0, 5, 5, 2, 1]),
    "batch_sampler": lambda L: L.utils.data.DataLoader(list(range(10)), batch_sampler=[[3, 1], [0], [9, 8, 7]]),
    "torch_batch_sampler": lambda L: L.utils.data.DataLoader(
        list(range(10)), batch_sampler=L.utils.data.BatchSampler(L.utils.data.SequentialSampler(range(5)), 2, False)),
    "collate_fn": lambda L: L.utils.data.DataLoader(list(range(6)), batch_size=4, collate_fn=lambda b: sum(b)),
    "collate_fn_no_batching": lambda L: L.utils.data.DataLoader(list(range(3)), batch_size=None,
                                                                collate_fn=lambda x: x * 10),
    "iterable": lambda L: L.utils.data.DataLoader(_stream(L, 5), batch_size=2),
    "iterable_drop_last": lambda L: L.utils.data.DataLoader(_stream(L, 5), batch_size=2, drop_last=True),
    "iterable_no_batching": lambda L: L.utils.data.DataLoader(_stream(L), batch_size=None),
}


@pytest.mark.torch
@pytest.mark.parametrize("name", LOADERS)
def test_loader_matches_torch(name):
    import torch
    ours, theirs = LOADERS[name](tracegrad), LOADERS[name](torch)
    assert plain(list(ours)) == plain(list(theirs))
    assert len(ours) == len(theirs)
    assert (ours.batch_size, ours.drop_last) == (theirs.batch_size, theirs.drop_last)


@pytest.mark.parametrize("n,batch_size,drop_last", [(7, 3, False), (7, 3, True), (6, 3, False), (6, 3, True)])
def test_batch_shapes_and_len(n, batch_size, drop_last):
    loader = DataLoader(TensorDataset(tracegrad.arange(n * 2.0).reshape(n, 2)), batch_size=batch_size,
                        drop_last=drop_last)
    sizes = [x.shape[0] for (x,) in loader]
    assert len(loader) == len(sizes)
    assert sizes == [batch_size] * (n // batch_size) + ([] if drop_last or n % batch_size == 0 else [n % batch_size])
    assert tracegrad.cat([x for (x,) in loader]).tolist() == tracegrad.arange(n * 2.0).reshape(n, 2)[:sum(sizes)].tolist()


def test_sequential_order_and_tuple_samples():
    batches = list(DataLoader(Squares(5), batch_size=2))
    assert [b[0].tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    assert batches[1][1].tolist() == [[4.0], [9.0]] and batches[1][1].dtype == tracegrad.float32


def test_shuffle_reproducible_with_generator_and_new_each_epoch():
    def order(loader):
        return [i for batch in loader for i in batch.tolist()]

    loader = DataLoader(list(range(20)), batch_size=6, shuffle=True, generator=tracegrad.Generator().manual_seed(3))
    first, second = order(loader), order(loader)
    assert sorted(first) == sorted(second) == list(range(20)) and first != second
    again = DataLoader(list(range(20)), batch_size=6, shuffle=True, generator=tracegrad.Generator().manual_seed(3))
    assert order(again) == first
    tracegrad.manual_seed(11)
    a = order(DataLoader(list(range(20)), batch_size=6, shuffle=True))
    tracegrad.manual_seed(11)
    assert order(DataLoader(list(range(20)), batch_size=6, shuffle=True)) == a


def test_iterable_dataset_length_warning():
    class Liar(IterableDataset):
        def __iter__(self):
            return iter(range(4))

        def __len__(self):
            return 2

    loader = DataLoader(Liar(), batch_size=None)
    assert len(loader) == 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert list(loader) == [0, 1, 2, 3]
    assert [str(w.message).split(" was reported to be ")[1] for w in caught] == [
        f"2(when accessing len(dataloader)), but {n} samples have been fetched. " for n in (3, 4)]


def test_pin_memory_without_accelerator_warns_and_keeps_tensors():
    if tracegrad.cuda.is_available():
        pytest.skip("pinning happens where CUDA is available")
    with pytest.warns(UserWarning, match="^'pin_memory' argument is set as true but no accelerator is found, then "
                                         "device pinned memory won't be used.$"):
        batches = list(DataLoader(TensorDataset(tracegrad.ones(3, 2)), batch_size=2, pin_memory=True))
    assert [x.shape for (x,) in batches] == [(2, 2), (1, 2)] and not batches[0][0].is_pinned()
    with pytest.raises(RuntimeError, match="^Cannot access accelerator device when none is available.$"):
        tracegrad.ones(2).pin_memory()


def test_attributes_and_defaults():
    loader = DataLoader(list(range(5)))
    assert loader.batch_size == 1 and loader.num_workers == 0 and loader.prefetch_factor is None
    assert isinstance(loader.sampler, SequentialSampler) and isinstance(loader.batch_sampler, BatchSampler)
    assert loader.collate_fn is default_collate and loader.timeout == 0 and loader.persistent_workers is False
    assert DataLoader(list(range(5)), num_workers=2).prefetch_factor == 2


def test_tqdm_progress_bar():
    tqdm = pytest.importorskip("tqdm").tqdm
    import io
    out = io.StringIO()
    loader = DataLoader(TensorDataset(tracegrad.arange(10.0), tracegrad.arange(10)), batch_size=4)
    seen = [y.tolist() for x, y in tqdm(loader, file=out)]
    assert seen == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert "3/3" in out.getvalue()  # tqdm read len(loader)


ERRORS = {
    "num_workers": lambda m: m.DataLoader([1], num_workers=-1),
    "timeout": lambda m: m.DataLoader([1], timeout=-1),
    "prefetch_without_workers": lambda m: m.DataLoader([1], prefetch_factor=2),
    "prefetch_negative": lambda m: m.DataLoader([1], num_workers=1, prefetch_factor=-1),
    "persistent_without_workers": lambda m: m.DataLoader([1], persistent_workers=True),
    "shuffle_and_sampler": lambda m: m.DataLoader([1], shuffle=True, sampler=[0]),
    "batch_sampler_and_batch_size": lambda m: m.DataLoader([1], batch_size=2, batch_sampler=[[0]]),
    "batch_sampler_and_shuffle": lambda m: m.DataLoader([1], shuffle=True, batch_sampler=[[0]]),
    "batch_sampler_and_sampler": lambda m: m.DataLoader([1], sampler=[0], batch_sampler=[[0]]),
    "batch_sampler_and_drop_last": lambda m: m.DataLoader([1], drop_last=True, batch_sampler=[[0]]),
    "no_batching_and_drop_last": lambda m: m.DataLoader([1], batch_size=None, drop_last=True),
    "context_without_workers": lambda m: m.DataLoader([1], multiprocessing_context="fork"),
    "context_bad_name": lambda m: m.DataLoader([1], num_workers=1, multiprocessing_context="bogus"),
    "context_bad_type": lambda m: m.DataLoader([1], num_workers=1, multiprocessing_context=3),
    "iterable_shuffle": lambda m: m.DataLoader(_stream(_library(m)), shuffle=True),
    "iterable_sampler": lambda m: m.DataLoader(_stream(_library(m)), sampler=[0]),
    "iterable_batch_sampler": lambda m: m.DataLoader(_stream(_library(m)), batch_sampler=[[0]]),
    "iterable_len": lambda m: len(m.DataLoader(_stream(_library(m), sized=False))),
    "set_batch_size": lambda m: setattr(m.DataLoader([1]), "batch_size", 3),
    "set_sampler": lambda m: setattr(m.DataLoader([1]), "sampler", [0]),
    "timeout_without_workers": lambda m: iter(m.DataLoader([1], timeout=1)),
    "dataset_without_len": lambda m: next(iter(m.DataLoader(m.Dataset()))),
    "dataset_without_getitem": lambda m: next(iter(m.DataLoader(m.Dataset(), sampler=[0]))),
    "pickle_iterator": lambda m: __import__("pickle").dumps(iter(m.DataLoader([1]))),
}


def _outcome(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 (the outcome compared with torch's)
        return type(e).__name__, str(e).replace("torch.", "").replace("tracegrad.", "")
    return None


@pytest.mark.torch
@pytest.mark.parametrize("name", ERRORS)
def test_errors_match_torch(name):
    import torch.utils.data as tud

    import tracegrad.utils.data as ours
    outcome = _outcome(lambda: ERRORS[name](ours))
    expected = _outcome(lambda: ERRORS[name](tud))
    assert outcome is not None and outcome == expected


def test_error_messages():
    with pytest.raises(ValueError, match="^batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                         "sampler, and drop_last$"):
        DataLoader([1], batch_size=2, batch_sampler=[[0]])
    with pytest.raises(ValueError, match="^sampler option is mutually exclusive with shuffle$"):
        DataLoader([1], shuffle=True, sampler=[0])
    with pytest.raises(ValueError, match="^persistent_workers option needs num_workers > 0$"):
        DataLoader([1], persistent_workers=True)
    with pytest.raises(ValueError, match="^prefetch_factor option could only be specified in multiprocessing"):
        DataLoader([1], prefetch_factor=2)


def test_too_many_workers_warns():
    import os
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    with pytest.warns(UserWarning, match=f"^This DataLoader will create {cpus + 1} worker processes in total. "
                                         f"Our suggested max number of worker in current system is {cpus}"):
        DataLoader([1], num_workers=cpus + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DataLoader([1], num_workers=1)


@pytest.mark.torch
def test_training_loop_matches_torch():
    import torch
    for ours, theirs in zip(train_linear(tracegrad), train_linear(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
