"""Samplers: the deterministic ones against torch, the random ones by their properties
(permutations, reproducibility from a seed, a new order each epoch, replacement, weights
respected statistically with a fixed seed), and torch's argument errors."""
import importlib.util
import math

import numpy as np
import pytest

import tracegrad
from tracegrad.utils.data import (BatchSampler, DistributedSampler, RandomSampler, Sampler, SequentialSampler,
                                  SubsetRandomSampler, WeightedRandomSampler)


def gen(seed):
    return tracegrad.Generator().manual_seed(seed)


def test_sequential_sampler():
    assert list(SequentialSampler(range(5))) == [0, 1, 2, 3, 4] and len(SequentialSampler("abc")) == 3


@pytest.mark.parametrize("n,batch_size,drop_last", [(10, 3, False), (10, 3, True), (9, 3, True), (2, 5, False),
                                                    (2, 5, True), (0, 2, False)])
def test_batch_sampler(n, batch_size, drop_last):
    batches = list(BatchSampler(range(n), batch_size, drop_last))
    full, rest = divmod(n, batch_size)
    expected_len = full if drop_last or rest == 0 else full + 1
    assert len(batches) == len(BatchSampler(range(n), batch_size, drop_last)) == expected_len
    assert [i for b in batches for i in b] == list(range(expected_len * batch_size if drop_last else n))
    assert all(len(b) == batch_size for b in batches[:full])


@pytest.mark.torch
@pytest.mark.parametrize("n,batch_size,drop_last", [(10, 3, False), (10, 3, True), (7, 7, True), (1, 4, False)])
def test_batch_sampler_matches_torch(n, batch_size, drop_last):
    import torch.utils.data as tud
    ours = BatchSampler(SequentialSampler(range(n)), batch_size, drop_last)
    theirs = tud.BatchSampler(tud.SequentialSampler(range(n)), batch_size, drop_last)
    assert (list(ours), len(ours)) == (list(theirs), len(theirs))


def test_random_sampler_is_a_permutation_reproducible_and_new_each_epoch():
    sampler = RandomSampler(range(50), generator=gen(0))
    first, second = list(sampler), list(sampler)
    assert sorted(first) == sorted(second) == list(range(50))
    assert first != second  # the generator moves on: a new order each epoch
    assert list(RandomSampler(range(50), generator=gen(0))) == first  # same seed, same order
    assert list(RandomSampler(range(50), generator=gen(1))) != first


def test_random_sampler_without_generator_follows_manual_seed():
    tracegrad.manual_seed(7)
    a = list(RandomSampler(range(30)))
    b = list(RandomSampler(range(30)))
    tracegrad.manual_seed(7)
    assert list(RandomSampler(range(30))) == a and a != b and sorted(a) == list(range(30))


def test_random_sampler_num_samples():
    # more samples than items without replacement: whole permutations, then a part of one
    drawn = list(RandomSampler(range(4), num_samples=10, generator=gen(0)))
    assert len(drawn) == 10
    assert sorted(drawn[:4]) == sorted(drawn[4:8]) == [0, 1, 2, 3] and len(set(drawn[8:])) == 2
    assert len(list(RandomSampler(range(4), num_samples=3, generator=gen(0)))) == 3


def test_random_sampler_with_replacement():
    drawn = list(RandomSampler(range(3), replacement=True, num_samples=100, generator=gen(0)))
    assert len(drawn) == 100 and set(drawn) == {0, 1, 2}  # repeats, every value in range
    assert list(RandomSampler(range(3), replacement=True, num_samples=100, generator=gen(0))) == drawn
    counts = np.bincount(drawn, minlength=3)
    assert counts.min() > 15  # uniform: each about 33 (probability of failing < 1e-4)


def test_subset_random_sampler():
    indices = [10, 20, 30, 40]
    sampler = SubsetRandomSampler(indices, generator=gen(0))
    first = list(sampler)
    assert sorted(first) == indices and len(sampler) == 4
    assert list(SubsetRandomSampler(indices, generator=gen(0))) == first


def test_weighted_random_sampler_respects_weights():
    weights = [1.0, 0.0, 3.0, 6.0]
    drawn = list(WeightedRandomSampler(weights, 20000, generator=gen(0)))
    freq = np.bincount(drawn, minlength=4) / len(drawn)
    expected = np.array(weights) / sum(weights)
    # 5 standard deviations of a binomial proportion
    assert np.all(np.abs(freq - expected) <= 5 * np.sqrt(expected * (1 - expected) / len(drawn)) + 1e-12)
    assert freq[1] == 0
    assert list(WeightedRandomSampler(weights, 50, generator=gen(0))) == drawn[:50]


def test_weighted_random_sampler_without_replacement():
    weights = [1.0, 2.0, 4.0, 8.0, 0.5]
    for seed in range(5):
        drawn = list(WeightedRandomSampler(weights, 5, replacement=False, generator=gen(seed)))
        assert sorted(drawn) == [0, 1, 2, 3, 4]
    # the first draw is proportional to the weights (later ones to the weights left)
    g = gen(0)
    first_draws = np.bincount([next(iter(WeightedRandomSampler(weights, 1, replacement=False, generator=g)))
                               for _ in range(4000)], minlength=5) / 4000
    expected = np.array(weights) / sum(weights)
    assert np.all(np.abs(first_draws - expected) <= 5 * np.sqrt(expected * (1 - expected) / 4000))


def test_sampler_base_and_lengths():
    with pytest.raises(NotImplementedError):
        Sampler().__iter__()
    assert len(RandomSampler(range(5))) == 5 and len(WeightedRandomSampler([1, 2], 7)) == 7


SAMPLER_ERRORS = {
    "random_empty": lambda m: m.RandomSampler([]),
    "random_num_samples": lambda m: m.RandomSampler(range(3), num_samples=0),
    "random_replacement_type": lambda m: m.RandomSampler(range(3), replacement=1),
    "batch_size_zero": lambda m: m.BatchSampler(range(3), 0, False),
    "batch_size_bool": lambda m: m.BatchSampler(range(3), True, False),
    "drop_last_type": lambda m: m.BatchSampler(range(3), 2, 0),
    "weighted_num_samples": lambda m: m.WeightedRandomSampler([1.0], 0),
    "weighted_replacement": lambda m: m.WeightedRandomSampler([1.0], 1, replacement=None),
    "weighted_2d": lambda m: m.WeightedRandomSampler([[1.0, 2.0]], 2),
    "weighted_negative": lambda m: list(m.WeightedRandomSampler([1.0, -1.0, 3.0], 2)),
    "weighted_zero_sum": lambda m: list(m.WeightedRandomSampler([0.0, 0.0], 2)),
    "weighted_inf": lambda m: list(m.WeightedRandomSampler([1.0, math.inf], 2)),
    "weighted_nan": lambda m: list(m.WeightedRandomSampler([1.0, math.nan], 2)),
    "weighted_too_many": lambda m: list(m.WeightedRandomSampler([1.0, 2.0], 3, replacement=False)),
}


def _outcome(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 (the outcome compared with torch's)
        return type(e), str(e)
    return None


@pytest.mark.torch
@pytest.mark.parametrize("name", SAMPLER_ERRORS)
def test_sampler_errors_match_torch(name):
    import torch.utils.data as tud

    import tracegrad.utils.data as ours
    outcome = _outcome(lambda: SAMPLER_ERRORS[name](ours))
    assert outcome is not None and outcome == _outcome(lambda: SAMPLER_ERRORS[name](tud))


def test_sampler_error_messages():
    with pytest.raises(ValueError, match="^num_samples should be a positive integer value, but got num_samples=0$"):
        RandomSampler([])
    with pytest.raises(RuntimeError, match=r"^invalid multinomial distribution \(sum of probabilities <= 0\)$"):
        list(WeightedRandomSampler([0.0], 1))


@pytest.mark.torch
@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (9, 3, True), (2, 5, False),
                                                  (7, 2, False), (7, 2, True)])
def test_distributed_sampler_shares_match_torch(n, replicas, drop_last):
    import torch.utils.data as tud
    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = tud.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        assert (list(ours), len(ours), ours.total_size) == (list(theirs), len(theirs), theirs.total_size)


def test_distributed_sampler_shuffled_shares():
    def shares(epoch, seed=0):
        samplers = [DistributedSampler(range(10), 2, rank, seed=seed) for rank in range(2)]
        for s in samplers:
            s.set_epoch(epoch)
        return [list(s) for s in samplers]

    first = shares(0)
    assert sorted(first[0] + first[1]) == list(range(10))  # disjoint, and together the whole dataset
    assert shares(0) == first and shares(1) != first and shares(0, seed=1) != first


def test_distributed_sampler_errors():
    with pytest.raises(ValueError, match=r"^Invalid rank 2, rank should be in the interval \[0, 1\]$"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    if importlib.util.find_spec("tracegrad.distributed") is None:  # torch's error where it has no such package
        with pytest.raises(RuntimeError, match="^Requires distributed package to be available$"):
            DistributedSampler(range(4))
