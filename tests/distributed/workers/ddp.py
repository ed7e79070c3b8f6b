"""DistributedDataParallel on this job's ranks (run by tests/distributed/test_ddp.py under
mpiexec -n 2 and -n 4): its gradients against single-process gradients computed on every
rank from the same data. Prints ``ok <name>`` lines on rank 0; a failure aborts the job."""
import pathlib
import sys

import numpy as np

import tracegrad as torch
import tracegrad.distributed as dist
import tracegrad.nn as nn
from tracegrad.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, n = dist.get_rank(), dist.get_world_size()
torch.set_default_dtype(torch.float64)


def ok(name):
    if rank == 0:
        print("ok", name, flush=True)


def make_model(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3))


def data(count, seed=1):
    g = np.random.default_rng(seed)
    return torch.from_numpy(g.standard_normal((count, 5))), torch.from_numpy(g.standard_normal((count, 3)))


def grads(model):
    return [None if p.grad is None else p.grad.numpy().copy() for p in model.parameters()]


def close(a, b, name):
    assert len(a) == len(b), name
    for x, y in zip(a, b):
        assert (x is None) == (y is None), (name, x, y)
        if x is not None:
            assert np.allclose(x, y, rtol=1e-12, atol=1e-13), (name, rank, np.abs(x - y).max())


def same_on_all_ranks(values, name):
    everyone = [None] * n
    dist.all_gather_object(everyone, values)
    for theirs in everyone:
        close(theirs, everyone[0], name)


# -- construction: rank 0's parameters everywhere; state_dict keys as torch's -------------------
reference = make_model(0)
model = DDP(make_model(rank), bucket_cap_mb=0.0002)  # (tiny buckets: several of them)
close([p.detach().numpy() for p in model.module.parameters()], [p.detach().numpy() for p in reference.parameters()],
      "broadcast at construction")
assert len(model.reducer.buckets) > 2, model.reducer.buckets
assert list(model.state_dict()) == ["module." + k for k in reference.state_dict()]
assert model.module is model._modules["module"]
ok("construction")

# -- gradients equal the full batch's on one process ---------------------------------------------
x, y = data(4 * n)
for cap in (0.0002, None):
    model = DDP(make_model(rank), bucket_cap_mb=cap)
    loss = nn.functional.mse_loss(model(x[rank::n]), y[rank::n])
    loss.backward()
    single = make_model(0)
    nn.functional.mse_loss(single(x), y).backward()
    close(grads(model.module), grads(single), f"full batch, bucket_cap_mb={cap}")
ok("gradients")

# -- the all-reduces start while backward still runs (overlap) ----------------------------------
class Probe(torch.autograd.Function):
    """Identity whose backward (the last node of the pass) records how many buckets were started."""
    seen = []

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        Probe.seen.append(model.reducer.next_bucket)
        return g


model = DDP(make_model(rank), bucket_cap_mb=0.0002)
w = torch.zeros(5, requires_grad=True)
model(Probe.apply(x[rank::n] + w)).sum().backward()
assert Probe.seen[-1] >= len(model.reducer.buckets) - 1 > 1, (Probe.seen, len(model.reducer.buckets))
ok("overlap")

# -- no_sync: local accumulation, then one average of the sums ----------------------------------
model = DDP(make_model(rank), bucket_cap_mb=0.0002)
single = make_model(0)
halves = [slice(0, 2 * n), slice(2 * n, 4 * n)]
with model.no_sync():
    nn.functional.mse_loss(model(x[halves[0]][rank::n]), y[halves[0]][rank::n]).backward()
local = make_model(0)
nn.functional.mse_loss(local(x[halves[0]][rank::n]), y[halves[0]][rank::n]).backward()
close(grads(model.module), grads(local), "no_sync keeps local gradients")
nn.functional.mse_loss(model(x[halves[1]][rank::n]), y[halves[1]][rank::n]).backward()
for h in halves:
    nn.functional.mse_loss(single(x[h]), y[h]).backward()
close(grads(model.module), grads(single), "no_sync then sync")
ok("no_sync")

# -- a second backward after one forward would leave local gradients: refused ---------------------
model = DDP(make_model(rank))
loss = model(x[rank::n]).sum()
loss.backward(retain_graph=True)
try:
    loss.backward()
except RuntimeError as e:
    assert "Expected to mark a variable ready only once" in str(e), e
else:
    raise AssertionError("a second backward after one DDP forward was not refused")
model(x[rank::n]).sum().backward()  # a forward re-arms it
ok("second backward refused")

# -- uneven last batch: rank r has r+1 samples; DDP averages the ranks' mean-loss gradients ------
model = DDP(make_model(rank))
nn.functional.mse_loss(model(x[:rank + 1]), y[:rank + 1]).backward()
expected = None
for r in range(n):
    m = make_model(0)
    nn.functional.mse_loss(m(x[:r + 1]), y[:r + 1]).backward()
    expected = grads(m) if expected is None else [e + g for e, g in zip(expected, grads(m))]
close(grads(model.module), [e / n for e in expected], "uneven last batch")
ok("uneven batch")

# -- unused parameters ----------------------------------------------------------------------
class Branches(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk, self.rank0_only, self.never = nn.Linear(5, 3), nn.Linear(3, 3), nn.Linear(3, 3)

    def forward(self, x, use):
        h = self.trunk(x)
        return self.rank0_only(h) if use else h


torch.manual_seed(0)
model = DDP(Branches(), find_unused_parameters=True)
model(x[rank::n], rank == 0).sum().backward()
g = {name: p.grad for name, p in model.module.named_parameters()}
assert g["never.weight"] is None and g["never.bias"] is None, g
torch.manual_seed(0)
alone = Branches()
expected = {}
for r in range(n):
    alone.zero_grad()
    alone(x[r::n], r == 0).sum().backward()
    for name, p in alone.named_parameters():
        if p.grad is not None:
            expected[name] = expected.get(name, 0) + p.grad.numpy() / n
for name in ("trunk.weight", "trunk.bias", "rank0_only.weight", "rank0_only.bias"):
    close([g[name].numpy()], [expected[name]], f"find_unused_parameters {name}")
ok("find_unused_parameters")

torch.manual_seed(0)
model = DDP(Branches())
try:
    model(x[rank::n], False).sum().backward()
except RuntimeError as e:
    assert "Expected to have finished reduction in the prior iteration" in str(e), e
    assert "find_unused_parameters=True" in str(e) and "rank0_only.weight" in str(e), e
else:
    raise AssertionError("unused parameters without find_unused_parameters were not reported")
ok("unused parameters refused")

# -- buffers: rank 0's at every training forward ----------------------------------------------
class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(5, 3)
        self.register_buffer("count", torch.zeros(1))
        self.seen = []

    def forward(self, x):
        self.seen.append(self.count.item())
        self.count += 1 + rank  # ranks drift apart...
        return self.lin(x)


for broadcast in (True, False):
    model = DDP(Counter(), broadcast_buffers=broadcast)
    for _ in range(3):
        model(x).sum().backward()
    expected = [0.0, 1.0, 2.0] if broadcast else [0.0, 1.0 + rank, 2.0 * (1 + rank)]  # ...unless re-broadcast
    assert model.module.seen == expected, (broadcast, model.module.seen)
ok("broadcast_buffers")

# -- SyncBatchNorm: the whole batch's statistics, all ranks together ------------------------------
images = torch.from_numpy(np.random.default_rng(5).standard_normal((2 * n, 3, 4, 4)))
weights = torch.from_numpy(np.random.default_rng(6).standard_normal((2 * n, 3, 4, 4)))
sync, whole = nn.SyncBatchNorm(3), nn.BatchNorm2d(3)
for bn in (sync, whole):
    with torch.no_grad():
        bn.weight.copy_(torch.tensor([1.5, -0.5, 2.0]))
        bn.bias.copy_(torch.tensor([0.1, 0.2, -0.3]))
mine = images[2 * rank:2 * rank + 2].clone().requires_grad_()
everyone = images.clone().requires_grad_()
out = sync(mine)
(out * weights[2 * rank:2 * rank + 2]).sum().backward()
expected = whole(everyone)
(expected * weights).sum().backward()
close([out.detach().numpy(), mine.grad.numpy(), sync.running_mean.numpy(), sync.running_var.numpy()],
      [expected[2 * rank:2 * rank + 2].detach().numpy(), everyone.grad[2 * rank:2 * rank + 2].numpy(),
       whole.running_mean.numpy(), whole.running_var.numpy()], "SyncBatchNorm")
local_w = [None] * n
dist.all_gather_object(local_w, sync.weight.grad.numpy())
close([sum(local_w)], [whole.weight.grad.numpy()], "SyncBatchNorm weight gradient summed over ranks")
ok("SyncBatchNorm")

# -- device (CuPy) tensors through host staging, on the stub device ------------------------------
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "backend"))
from stub_device import as_cuda  # noqa: E402

with as_cuda():
    t = torch.full((3,), float(rank + 1), device="cuda")
    dist.all_reduce(t)
    assert t.device.type == "cuda" and t.cpu().tolist() == [n * (n + 1) / 2] * 3, t
    model = DDP(make_model(rank).to("cuda"), bucket_cap_mb=0.0002)
    nn.functional.mse_loss(model(x[rank::n].to("cuda")), y[rank::n].to("cuda")).backward()
    on_device = [p.grad.cpu().numpy() for p in model.module.parameters()]
    assert all(p.grad.device.type == "cuda" for p in model.module.parameters())
single = make_model(0)
nn.functional.mse_loss(single(x), y).backward()
close(on_device, grads(single), "device tensors")
ok("device tensors")

dist.destroy_process_group()
ok("done")
