"""``tracegrad.nn.parallel``: torch.nn.parallel's data parallelism.

``DataParallel`` is single-process: tracegrad drives at most one device, so it has at most
one replica (on CUDA it moves the inputs to the device first, as PyTorch does with one
device id; more than one is refused). ``DistributedDataParallel`` runs one replica per MPI
process (``tracegrad.distributed``) and averages the gradients.
"""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "data_parallel", "DistributedDataParallel"]
