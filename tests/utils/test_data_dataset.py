"""Datasets: TensorDataset, StackDataset, ConcatDataset, ChainDataset, Subset and
random_split, by hand and against torch (lengths, items, errors)."""
import warnings

import pytest

import tracegrad
from tracegrad.utils.data import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset,
                                  TensorDataset, random_split)

from .data_helpers import plain


class Count(IterableDataset):
    def __init__(self, start, stop):
        self.start, self.stop = start, stop

    def __iter__(self):
        return iter(range(self.start, self.stop))

    def __len__(self):
        return self.stop - self.start


def test_tensor_dataset_rows():
    x, y = tracegrad.arange(6.0).reshape(3, 2), tracegrad.tensor([0, 1, 0])
    ds = TensorDataset(x, y)
    assert len(ds) == 3
    row, label = ds[1]
    assert row.tolist() == [2.0, 3.0] and label.item() == 1
    with pytest.raises(AssertionError, match="^Size mismatch between tensors$"):
        TensorDataset(tracegrad.ones(3), tracegrad.ones(4))


def test_stack_dataset_tuple_and_dict():
    a, b = list(range(4)), [c for c in "wxyz"]
    assert StackDataset(a, b)[2] == (2, "y")
    assert StackDataset(num=a, char=b)[3] == {"num": 3, "char": "z"}
    assert StackDataset(a, b).__getitems__([0, 3]) == [(0, "w"), (3, "z")]
    assert StackDataset(num=a, char=b).__getitems__([1]) == [{"num": 1, "char": "x"}]
    assert len(StackDataset(a, b)) == 4
    with pytest.raises(ValueError, match="^Size mismatch between datasets$"):
        StackDataset(a, b[:2])
    with pytest.raises(ValueError, match="^At least one dataset should be passed$"):
        StackDataset()
    with pytest.raises(ValueError, match="both types are given"):
        StackDataset(a, k=b)


def test_concat_dataset():
    ds = ConcatDataset([list(range(3)), list(range(10, 12))])
    assert len(ds) == 5 and [ds[i] for i in range(5)] == [0, 1, 2, 10, 11]
    assert ds[-1] == 11 and ds.cumulative_sizes == [3, 5]
    with pytest.raises(ValueError, match="^absolute value of index should not exceed dataset length$"):
        ds[-6]
    with pytest.raises(AssertionError, match="^datasets should not be an empty iterable$"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="^ConcatDataset does not support IterableDataset$"):
        ConcatDataset([Count(0, 2)])


def test_dataset_addition():
    class L(Dataset):
        def __init__(self, items):
            self.items = items

        def __getitem__(self, i):
            return self.items[i]

        def __len__(self):
            return len(self.items)

    joined = L([1, 2]) + L([3])
    assert isinstance(joined, ConcatDataset) and [joined[i] for i in range(3)] == [1, 2, 3]
    chained = Count(0, 2) + Count(5, 7)
    assert isinstance(chained, ChainDataset) and list(chained) == [0, 1, 5, 6] and len(chained) == 4
    with pytest.raises(NotImplementedError, match="^Subclasses of Dataset should implement __getitem__.$"):
        Dataset()[0]


def test_chain_dataset_rejects_map_style():
    with pytest.raises(AssertionError, match="^ChainDataset only supports IterableDataset$"):
        list(ChainDataset([Count(0, 1), [1, 2]]))


def test_subset():
    ds = Subset(list("abcdef"), [4, 0, 2])
    assert len(ds) == 3 and [ds[i] for i in range(3)] == ["e", "a", "c"]
    assert ds.__getitems__([2, 0]) == ["c", "e"]

    class Bad(Subset):
        def __getitem__(self, idx):
            return 0

    with pytest.raises(NotImplementedError, match="Bad overrides __getitem__ but not __getitems__"):
        Bad([1], [0])


def test_random_split_lengths_and_fractions():
    parts = random_split(range(10), [3, 7], generator=tracegrad.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(i for p in parts for i in p.indices) == list(range(10))
    parts = random_split(range(10), [0.25, 0.25, 0.5], generator=tracegrad.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 2, 5]  # floors 2, 2, 5; the remainder (1) goes to the first


def test_random_split_is_reproducible():
    def split(seed):
        return [list(p) for p in random_split(range(20), [0.5, 0.5], generator=tracegrad.Generator().manual_seed(seed))]

    assert split(1) == split(1)
    assert split(1) != split(2)
    tracegrad.manual_seed(5)
    first = [list(p) for p in random_split(range(20), [10, 10])]
    tracegrad.manual_seed(5)
    assert [list(p) for p in random_split(range(20), [10, 10])] == first


def test_random_split_warns_on_empty_split():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parts = random_split(range(2), [0.1, 0.9])
    assert [len(p) for p in parts] == [1, 1]  # the remainder reaches the first split
    with pytest.warns(UserWarning, match="^Length of split at index 0 is 0. This might result in an empty dataset.$"):
        random_split(range(1), [0.0, 1.0])
    assert not caught


@pytest.mark.torch
@pytest.mark.parametrize("lengths", [[3, 3], [0.5, 0.6], [1.5, -0.5], [0.3, 0.3, 0.4], [2, 8], [0.0, 1.0]])
def test_random_split_sizes_and_errors_match_torch(lengths):
    import torch.utils.data as tud

    def run(split):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return [len(p) for p in split(range(10), lengths)]
        except Exception as e:  # noqa: BLE001 (the outcome compared with torch's)
            return type(e), str(e)

    assert run(random_split) == run(tud.random_split)


@pytest.mark.torch
def test_tensor_dataset_items_match_torch():
    import torch
    import torch.utils.data as tud

    def items(L, TD):
        ds = TD(L.arange(12.0).reshape(4, 3), L.tensor([1, 0, 1, 1]))
        return [len(ds), ds[2], ds[-1]]

    assert plain(items(tracegrad, TensorDataset)) == plain(items(torch, tud.TensorDataset))
