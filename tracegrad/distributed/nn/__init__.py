"""``tracegrad.distributed.nn``: collectives that autograd differentiates (torch's)."""
from . import functional  # noqa: F401

__all__ = ["functional"]
