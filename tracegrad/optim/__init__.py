"""``tracegrad.optim``: optimizers and learning-rate schedulers, as in ``torch.optim``.

Each optimizer's ``step`` updates the parameters' arrays in place, outside autograd, with
PyTorch's formulas (single-tensor variants) and state names, so trajectories, state dicts
and version counters match PyTorch's.
"""
# ruff: noqa: F401,F403 -- this package is a public namespace: its imports are re-exports
from . import lr_scheduler, swa_utils
from ._stateless import swap_in_optimizer_params_and_state
from .adadelta import *
from .adafactor import *
from .adagrad import *
from .adam import *
from .adamax import *
from .asgd import *
from .lbfgs import *
from .muon import *
from .nadam import *
from .optimizer import Optimizer, register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from .radam import *
from .rmsprop import *
from .rprop import *
from .sgd import *
from .sparse_adam import *

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
           "ASGD", "Rprop", "SparseAdam", "LBFGS", "Adafactor", "Muon", "lr_scheduler", "swa_utils",
           "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook", "swap_in_optimizer_params_and_state"]
