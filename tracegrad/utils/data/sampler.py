"""Samplers, as ``torch.utils.data.sampler``: iterables of dataset keys (or, for
``BatchSampler``, of lists of keys) that a DataLoader fetches in order.

The random ones draw from a ``tracegrad.Generator`` (``generator=``), or, without one,
from a fresh generator seeded from the global one at each ``iter()``: so
``tracegrad.manual_seed(s)`` makes a run reproducible and every epoch still gets a new
order, as in torch (the permutations themselves are NumPy's, not torch's)."""
import itertools
from typing import Generic, TypeVar

from ... import backend
from ...backend import (
    cpu as host,  # host-side (NumPy) arithmetic, never on device arrays
)
from ...backend import dtypes
from ...runtime.creation import (
    Generator,
    as_tensor,
    default_generator,
    randint,
    randperm,
)

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler",
           "WeightedRandomSampler"]

_T_co = TypeVar("_T_co", covariant=True)


def _random_seed(generator=None):
    """A seed drawn from ``generator`` (the global one by default) over torch's range for
    ``int64.random_()``, [0, 2**63 - 1): how torch seeds a sampler's fresh generator and
    a DataLoader's workers."""
    return int(randint(0, 2 ** 63 - 1, (), dtype=dtypes.int64, generator=generator or default_generator))


class Sampler(Generic[_T_co]):
    """Base class: a subclass defines ``__iter__`` (keys) and, where it knows it, ``__len__``."""

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random order of ``data_source``'s keys: whole permutations (repeated as needed
    for ``num_samples`` beyond the length) or, with ``replacement=True``, independent
    uniform draws."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            generator = Generator().manual_seed(_random_seed())
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from randint(high=n, size=(32,), dtype=dtypes.int64, generator=generator).tolist()
            yield from randint(high=n, size=(self.num_samples % 32,), dtype=dtypes.int64,
                               generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from randperm(n, generator=generator).tolist()
            yield from randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order, a new one at each ``iter()``."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


def _multinomial(weights, num_samples, replacement, generator):
    """``torch.multinomial`` of a 1-d float64 array of weights, with torch's checks: keys
    drawn with probability proportional to their weight. Without replacement it is
    torch's own algorithm (the ``num_samples`` largest of ``w / Exp(1)``), which draws one
    key after another, each in proportion to the weights of those left."""
    if host.any(~(weights >= 0)):  # nan included, as in torch
        raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
    if host.any(host.isinf(weights)):
        raise RuntimeError("invalid multinomial distribution (encountering probability entry = infinity or NaN)")
    if weights.sum() <= 0:
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement and num_samples > weights.size:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    rng = (generator or default_generator).stream(backend.cpu)
    if replacement:
        return rng.choice(weights.size, size=num_samples, p=weights / weights.sum())
    keys = weights / rng.exponential(size=weights.size)
    return host.argsort(-keys, kind="stable")[:num_samples]


class WeightedRandomSampler(Sampler):
    """``num_samples`` keys drawn in proportion to ``weights`` (which need not sum to 1),
    with replacement by default."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")  # noqa: TRY004 (torch's type)
        weights_tensor = as_tensor(weights, dtype=dtypes.float64)
        if len(weights_tensor.shape) != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        drawn = _multinomial(self.weights.detach().cpu().numpy(), self.num_samples, self.replacement,
                             self.generator)
        yield from drawn.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Another sampler's keys in lists of ``batch_size`` (the last one shorter, or
    dropped with ``drop_last=True``)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")  # noqa: TRY004 (torch's type)
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        sampler_iter = iter(self.sampler)
        if self.drop_last:
            yield from (list(batch) for batch in zip(*[sampler_iter] * self.batch_size))
            return
        batch = list(itertools.islice(sampler_iter, self.batch_size))
        while batch:
            yield batch
            batch = list(itertools.islice(sampler_iter, self.batch_size))

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
