"""``DistributedDataParallel``: one model replica per MPI process, gradients averaged.

At construction every rank checks it holds the same parameters (shapes, dtypes) and takes
rank 0's parameters and buffers. Each forward with gradients on (training or not, as
torch) re-broadcasts the buffers from rank 0 when ``broadcast_buffers`` and arms the
Reducer (``tracegrad.distributed._reducer``), whose hooks average the gradients in buckets
while backward runs. ``no_sync()`` skips the averaging, so gradients accumulate locally
until the next synchronised backward. CuPy tensors are averaged through host copies (see
``tracegrad.distributed._buffers``)."""
import contextlib

from ...runtime import grad_mode
from ...runtime.tensor import Tensor
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024  # as torch.distributed's


class DistributedDataParallel(Module):
    """Wraps ``module`` (as ``.module``: state_dict keys gain ``module.``) for data-parallel
    training over the ranks of ``process_group`` (see the module docstring)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True, init_sync=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None,
                 skip_all_reduce_unused_params=False, bucket_cap_mb_list=None, batched_grad_copy=False,
                 forward_sync_buffers=None):
        from ... import distributed as dist
        from ...distributed._reducer import Reducer
        super().__init__()
        pg = dist.process_group.resolve(process_group)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter that "
                               "requires a gradient.")
        devices = {p.device for _, p in module.named_parameters()}
        if device_ids is not None and all(d.type == "cpu" for d in devices):
            raise ValueError("DistributedDataParallel device_ids and output_device arguments only work with "
                             "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                             f"{device_ids}, output_device {output_device}, and module parameters {devices}.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        for unsupported, value in (("mixed_precision", mixed_precision), ("device_mesh", device_mesh),
                                   ("delay_all_reduce_named_params", delay_all_reduce_named_params),
                                   ("bucket_cap_mb_list", bucket_cap_mb_list)):
            if value is not None:
                raise NotImplementedError(f"DistributedDataParallel({unsupported}=...) is not supported by tracegrad")
        self.module = module
        self.process_group = pg
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        self._params = [p for _, p in named]
        if pg is not None and init_sync:
            _check_same_model(pg, module)
            self._sync_module_states()
        self.reducer = None if pg is None else Reducer(
            self._params, [n for n, _ in named], pg, self.bucket_bytes_cap,
            _DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap, find_unused_parameters)

    def _sync_module_states(self):
        """Rank 0's parameters and buffers on every rank."""
        from ... import distributed as dist
        with grad_mode.no_grad():
            for t in list(self.module.parameters()) + list(self.module.buffers()):
                dist.broadcast(t.detach(), src=self.process_group.ranks[0], group=self.process_group)

    def forward(self, *inputs, **kwargs):
        syncing = grad_mode.is_grad_enabled()  # (as torch: whether training or not)
        if self.process_group is not None and self.broadcast_buffers and syncing and self.process_group.size() > 1:
            from ... import distributed as dist
            with grad_mode.no_grad():
                for b in self.module.buffers():
                    dist.broadcast(b.detach(), src=self.process_group.ranks[0], group=self.process_group)
        output = self.module(*inputs, **kwargs)
        if self.reducer is not None:
            if syncing and self.require_backward_grad_sync:
                self.reducer.prepare_for_backward(_tensors_in(output))
            else:
                self.reducer.forward_without_sync()
        return output

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate gradients locally; the first synchronised one
        after it averages the accumulated sums."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def join(self, divide_by_initial_world_size=True, enable=True, throw_on_early_termination=False):
        raise NotImplementedError("DistributedDataParallel.join (uneven numbers of batches per rank) is not supported "
                                  "by tracegrad: give every rank as many batches (DistributedSampler pads to that)")

    def register_comm_hook(self, state, hook):
        raise NotImplementedError("DistributedDataParallel.register_comm_hook is not supported by tracegrad")

    def _set_static_graph(self):
        self.static_graph = True


def _tensors_in(output):
    """The tensors of a forward's output (nested tuples, lists, dicts)."""
    if isinstance(output, Tensor):
        return [output]
    if isinstance(output, dict):
        output = list(output.values())
    if isinstance(output, (list, tuple)):
        return [t for item in output for t in _tensors_in(item)]
    return []


def _check_same_model(pg, module):
    """Every rank must wrap the same parameters (torch's _verify_param_shape_across_processes)."""
    from ... import distributed as dist
    mine = [(tuple(p.shape), str(p.dtype)) for p in module.parameters()]
    everyone = [None] * pg.size()
    dist.all_gather_object(everyone, mine, group=pg)
    for r, theirs in enumerate(everyone):
        if len(theirs) != len(everyone[0]):
            raise RuntimeError(f"DDP expects same model across all ranks, but Rank {pg.rank()} has {len(mine)} params, "
                               f"while rank {r} has inconsistent {len(theirs)} params.")
        for i, (a, b) in enumerate(zip(everyone[0], theirs)):
            if a != b:
                raise RuntimeError(f"DDP expects same model across all ranks, but rank {r}'s parameter {i} is "
                                   f"{b[1]} of shape {list(b[0])} where rank 0's is {a[1]} of shape {list(a[0])}.")
