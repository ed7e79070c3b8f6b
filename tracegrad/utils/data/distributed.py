"""``DistributedSampler``, as torch's: each of ``num_replicas`` processes reads its own
``1/num_replicas`` of the dataset (every ``num_replicas``-th key from ``rank``), padded by
repeating keys (or cut, with ``drop_last``) so that all get as many. Shuffled, the order is
a permutation seeded with ``seed + epoch``: the same on every replica, new each epoch
(``set_epoch``). Without ``num_replicas``/``rank`` it asks ``tracegrad.distributed``."""
import math

from ...runtime.creation import Generator, randperm
from .sampler import Sampler

__all__ = ["DistributedSampler"]


def _distributed():
    """``tracegrad.distributed`` where it can run (mpi4py is installed), else torch's error."""
    from ... import distributed
    if not distributed.is_available():
        raise RuntimeError("Requires distributed package to be available")
    return distributed


class DistributedSampler(Sampler):
    """This replica's share of ``dataset``'s keys (see the module docstring)."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None:
            num_replicas = _distributed().get_world_size()
        if rank is None:
            rank = _distributed().get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        if self.shuffle:
            indices = randperm(len(self.dataset), generator=Generator().manual_seed(self.seed + self.epoch)).tolist()
        else:
            indices = list(range(len(self.dataset)))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:  # pad with the first keys (repeated as often as needed) to a multiple of num_replicas
            padding_size = self.total_size - len(indices)
            indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size] if padding_size else []
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """The epoch whose order ``__iter__`` gives: set it before each epoch, on every replica."""
        self.epoch = epoch
