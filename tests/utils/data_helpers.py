"""Shared by the tests of tracegrad.utils.data: a library-neutral view of a batch (to
compare tracegrad's with torch's), and module-level datasets (picklable, so that worker
processes of every start method can load them)."""
import collections
import os
import time

import numpy as np

import tracegrad
from tracegrad.utils.data import Dataset, IterableDataset, get_worker_info


def plain(x):
    """``x`` with every tensor replaced by ``('tensor', dtype name, shape, values)``, so a
    tracegrad batch and a torch batch compare equal exactly when they agree (container
    types included)."""
    if hasattr(x, "tolist") and type(x).__name__ in ("Tensor", "Parameter"):
        return ("tensor", str(x.dtype).rsplit(".", 1)[-1], tuple(x.shape), x.tolist())
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, tuple(plain(v) for v in x))
    if isinstance(x, collections.abc.Mapping):
        return (type(x).__name__, {k: plain(v) for k, v in x.items()})
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [plain(v) for v in x])
    if isinstance(x, np.ndarray):
        return ("ndarray", x.dtype.str, x.tolist())
    return x


class Squares(Dataset):
    """Sample i is (i, i*i as a float tensor); index ``fail_at`` raises ``error``."""

    def __init__(self, n=10, fail_at=None, error=ValueError):
        self.n, self.fail_at, self.error = n, fail_at, error

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise self.error(f"bad index {i}")
        return i, tracegrad.tensor([float(i * i)])


class WhoAmI(Dataset):
    """Sample i records which worker loaded it and what its seeded generators drew."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return {"index": i, "worker": info.id, "num_workers": info.num_workers, "seed": info.seed,
                "same_dataset": info.dataset is self, "pid": os.getpid(),
                "tracegrad_draw": float(tracegrad.rand(())), "numpy_draw": float(np.random.rand()),
                "init": getattr(self, "initialised_by", -1)}


class Sleepy(Dataset):
    """Sample i after ``delay`` seconds (to make a DataLoader's timeout fire)."""

    def __init__(self, delay):
        self.delay = delay

    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(self.delay)
        return i


class Dies(Dataset):
    """A worker process that exits without a word at index 2."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            os._exit(3)
        return i


class Shards(IterableDataset):
    """``range(n)``, each worker reading every num_workers-th item (its shard)."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        return self.n


def mark_worker(worker_id):
    """A worker_init_fn: tags the worker's copy of the dataset."""
    get_worker_info().dataset.initialised_by = worker_id


def failing_init(worker_id):
    raise KeyError(f"init of worker {worker_id}")


class PicklesOnce(Squares):
    """Pickles (as a plain Squares) once, then refuses: the second worker cannot start."""
    pickled = 0

    def __reduce__(self):
        type(self).pickled += 1
        if type(self).pickled > 1:
            raise TypeError("cannot pickle twice")
        return Squares, (self.n,)


def train_linear(torch, num_workers=0):
    """A PyTorch training loop, unchanged for ``import tracegrad as torch``: the final weights."""
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.normal(size=(12, 3)), dtype=torch.float32)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.25
    model = torch.nn.Linear(3, 1)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[0.1, 0.2, 0.3]]))
        model.bias.fill_(0.0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=4, num_workers=num_workers)
    for _ in range(3):
        for xb, yb in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
    return model.weight.detach().numpy().copy(), model.bias.detach().numpy().copy()
