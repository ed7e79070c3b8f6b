"""``tracegrad.nn``: modules, parameters, ``functional``, ``init`` and ``utils``, as in PyTorch.

Layers are :class:`Module` subclasses whose ``forward`` calls :mod:`tracegrad.nn.functional`;
the functional forms are compositions of rule-table primitives (convolution and pooling
are primitives of their own, :mod:`tracegrad.rules.conv`), so every layer differentiates
in the eager, tape and AST paths alike.
"""
# ruff: noqa: F401,F403 -- this package is a public namespace: its imports are re-exports
from .parameter import *
from .modules import *
from . import attention, functional, init, parallel, utils
from .parallel import DataParallel  # noqa: F401  (torch.nn.DataParallel)
