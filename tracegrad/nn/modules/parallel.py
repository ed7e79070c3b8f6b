"""PyTorch's parallel wrappers, so that scripts written for them
run: ``DataParallel`` (calls its module directly when there is at most one device),
``SyncBatchNorm`` (batch norm; across MPI processes its statistics are the whole batch's,
see ``tracegrad.distributed._sync_batchnorm``), and the deprecated ``Container``."""
import warnings

from ...runtime.grad_mode import no_grad
from .batchnorm import _BatchNorm
from .module import Module

__all__ = ["DataParallel", "SyncBatchNorm", "Container"]


def _cuda_count():
    from ... import cuda
    return cuda.device_count() if cuda.is_available() else 0


class DataParallel(Module):
    """Wraps ``module`` (as ``.module``, so state_dict keys gain ``module.``); with no GPU, or
    one, the forward is the module's own; splitting a batch over several GPUs is not supported."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        count = _cuda_count()
        if count == 0:
            self.module = module
            self.device_ids = []
            return
        device_ids = list(range(count)) if device_ids is None else [getattr(d, "index", d) for d in device_ids]
        self.dim = dim
        self.module = module
        self.device_ids = device_ids
        self.output_device = device_ids[0] if output_device is None else getattr(output_device, "index",
                                                                                 output_device)
        if len(self.device_ids) > 1:
            raise NotImplementedError("DataParallel over several GPUs is not supported by tracegrad; use one device "
                                      "(device_ids=[0])")
        self.module.to(f"cuda:{self.device_ids[0]}")

    def forward(self, *inputs, **kwargs):
        if self.device_ids:
            device = f"cuda:{self.device_ids[0]}"
            inputs = tuple(x.to(device) if hasattr(x, "to") else x for x in inputs)
            kwargs = {k: v.to(device) if hasattr(v, "to") else v for k, v in kwargs.items()}
        return self.module(*inputs, **kwargs)


def _world_size(process_group):
    """How many processes would share the statistics (1 without ``tracegrad.distributed``)."""
    try:
        from ... import distributed
    except ImportError:
        return 1
    if not (getattr(distributed, "is_available", lambda: False)() and distributed.is_initialized()):
        return 1
    return distributed.get_world_size(process_group) if process_group is not None else distributed.get_world_size()


class SyncBatchNorm(_BatchNorm):
    """Batch norm whose statistics are those of the whole batch, every process of
    ``process_group`` together; in a single process it is exactly :class:`BatchNorm2d`
    (any rank >= 2)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device=device, dtype=dtype,
                         bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        if self.training and _world_size(self.process_group) > 1:
            from ...distributed._sync_batchnorm import sync_batch_norm
            factor = 0.0 if self.momentum is None else self.momentum
            if self.track_running_stats and self.num_batches_tracked is not None:
                if self.momentum is None:  # a cumulative average, as batch norm's
                    factor = 1.0 / (float(self.num_batches_tracked) + 1)
                self.num_batches_tracked.add_(1)
            return sync_batch_norm(self, input, factor)
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every batch norm layer replaced by a SyncBatchNorm sharing its
        parameters and buffers."""
        converted = module
        if isinstance(module, _BatchNorm):
            converted = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                      module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                with no_grad():
                    converted.weight = module.weight
                    converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted


class Container(Module):
    """The deprecated ancestor of :class:`Module`: its keyword arguments become submodules."""

    def __init__(self, **kwargs):
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now implemented in `nn.Module`. "
                      "Subclass that instead.", FutureWarning, stacklevel=2)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)
