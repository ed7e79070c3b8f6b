"""Data-parallel training with DistributedDataParallel and DistributedSampler, checked
against one process training on the whole batch.

    mpiexec -n 2 python examples/ddp_train.py        # (or -n 4; plain python: one rank)

Each rank reads its share of every batch (DistributedSampler, shuffle off: rank r gets
samples r, r+n, r+2n...), so the ranks' batches together are the batch one process would
read with ``batch_size * n``. DDP averages the ranks' gradients, which for equal shares is
the gradient of the whole batch's mean loss: the ranks end with the parameters one process
gets on whole batches, from the same seed. The 88 samples make the last batch smaller
than the others (8 of 16 on 2 ranks, 24 of 32 on 4), still equal on every rank. Rank 0 then trains that one process itself and
prints the largest difference (float64, so only the summation order differs).
"""
import tracegrad as torch
import tracegrad.distributed as dist
import tracegrad.nn as nn
from tracegrad.nn.parallel import DistributedDataParallel as DDP
from tracegrad.utils.data import DataLoader, DistributedSampler, TensorDataset


def make_data(count=88, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(count, 8, generator=g)
    y = torch.sin(x @ torch.randn(8, 2, generator=g))  # a smooth target to regress
    return TensorDataset(x, y)


def make_model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 2))


def train(model, loader, sampler=None, epochs=3, lr=0.1):
    """Plain SGD on the mean squared error; returns the last loss."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    loss_fn = nn.MSELoss()
    for epoch in range(epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
    return loss.item()


def main(batch_per_rank=8, epochs=3):
    torch.set_default_dtype(torch.float64)
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    data = make_data()
    sampler = DistributedSampler(data, shuffle=False)  # num_replicas, rank: from dist
    model = DDP(make_model(seed=rank))  # (rank 0's initial parameters reach every rank)
    loss = train(model, DataLoader(data, batch_size=batch_per_rank, sampler=sampler), sampler, epochs)
    print(f"rank {rank}/{world}: last loss {loss:.6f}", flush=True)
    params = [p.detach().numpy() for p in model.module.parameters()]
    everyone = [None] * world
    dist.all_gather_object(everyone, params)
    if rank == 0:
        alone = make_model(seed=0)
        train(alone, DataLoader(data, batch_size=batch_per_rank * world), epochs=epochs)
        between_ranks = max(abs(a - b).max() for theirs in everyone for a, b in zip(theirs, params))
        vs_one = max(abs(a - p.detach().numpy()).max() for a, p in zip(params, alone.parameters()))
        print(f"largest difference between ranks: {between_ranks:.3g}")
        print(f"largest difference from one process on the whole batch: {vs_one:.3g}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
