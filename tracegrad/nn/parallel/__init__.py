"""``tracegrad.nn.parallel``: torch.nn.parallel's single-process data parallelism.

tracegrad drives at most one device, so ``DataParallel`` has at most one replica: on the
CPU it calls the wrapped module, on CUDA it moves the inputs to the device first, as
PyTorch does with one device id. More than one device id is refused.
"""
from .data_parallel import DataParallel, data_parallel

__all__ = ["DataParallel", "data_parallel"]
