"""The scheduler base class and what every scheduler shares: per-group values read from and
written into the optimizer's groups, the initial step, state dicts, and the warnings
(``scheduler.step()`` before ``optimizer.step()``, ``get_lr()`` called by hand,
``step(epoch)``), as in PyTorch 2.13 (which has no ``verbose`` argument any more).
"""
import types
import warnings
import weakref
from functools import wraps

from ...runtime.tensor import Tensor
from ..optimizer import Optimizer, as_float

__all__ = ["LRScheduler", "_LRScheduler", "EPOCH_DEPRECATION_WARNING", "group_values", "set_group_value",
           "format_param", "warn_get_lr_called_outside_step", "lambdas_state_dict", "load_lambdas_state_dict"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being "
    "deprecated where possible. Please use `scheduler.step()` to step the "
    "scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. "
    "Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)


def group_values(optimizer, key):
    """``group[key]`` of every group (tensors copied, so no caller aliases them)."""
    return [_copy(g[key]) for g in optimizer.param_groups]


def _copy(value):
    return value.clone() if isinstance(value, Tensor) else value


def set_group_value(group, key, value):
    """Write ``value`` into ``group[key]``, in place when that is a tensor."""
    if isinstance(group[key], Tensor):
        group[key].fill_(as_float(value))
    else:
        group[key] = value


def format_param(name, optimizer, param):
    """One value per parameter group: ``param`` itself when a list or tuple (of the right
    length), else ``param`` repeated; tensors copied."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has {len(param)} "
                             f"values, param_groups has {len(optimizer.param_groups)}.")
    else:
        param = [param] * len(optimizer.param_groups)
    return [_copy(p) for p in param]


def warn_get_lr_called_outside_step(scheduler):
    """``get_lr()`` computes the next rates from the current ones: called by hand it is
    usually a mistake for ``get_last_lr()``."""
    if not scheduler._get_lr_called_within_step:
        warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                      UserWarning, stacklevel=2)


def lambdas_state_dict(scheduler):
    """The state of a scheduler holding ``lr_lambdas``: a function cannot be saved, so each
    is saved as None, or as its ``__dict__`` when it is a callable object."""
    state = {k: v for k, v in scheduler.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
    state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                           for fn in scheduler.lr_lambdas]
    return state


def load_lambdas_state_dict(scheduler, state_dict):
    lr_lambdas = state_dict.pop("lr_lambdas")
    scheduler.__dict__.update(state_dict)
    state_dict["lr_lambdas"] = lr_lambdas  # leave the caller's dict as it was
    for fn, saved in zip(scheduler.lr_lambdas, lr_lambdas):
        if saved is not None:
            fn.__dict__.update(saved)


class LRScheduler:
    """Base class for learning-rate schedulers: subclasses compute ``get_lr()``.

    Creating a scheduler records each group's ``initial_lr`` (with ``last_epoch=-1``) and
    performs the first step, which sets the epoch-0 learning rates.
    """

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                initial_lr = group["lr"]
                group.setdefault("initial_lr", initial_lr.clone() if isinstance(initial_lr, Tensor) else initial_lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming scheduler "
                        "with last_epoch >= 0.\nThis typically happens when:\n1. You're trying to resume "
                        "training from a checkpoint but haven't properly loaded the optimizer state\n"
                        "2. You're using last_epoch >= 0 for a fresh training run (not recommended)")
        self.base_lrs = group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _track_optimizer_steps(optimizer)
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self):
        """Every attribute but the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)

    def get_last_lr(self):
        """The learning rates the last ``step()`` set, one per group."""
        return self._last_lr

    def get_lr(self):
        """The learning rates for the current ``last_epoch`` (subclasses compute them)."""
        raise NotImplementedError

    def step(self, epoch=None):
        """Advance one epoch (call it after ``optimizer.step()``) and set the new rates."""
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn(
                    "Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                    "initialization. Please, make sure to call `optimizer.step()` before "
                    "`lr_scheduler.step()`. See more details at "
                    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                    UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(
                    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
                    "In PyTorch 1.1.0 and later, you should call them in the opposite order: "
                    "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this "
                    "will result in PyTorch skipping the first value of the learning rate schedule. "
                    "See more details at "
                    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                    UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            set_group_value(group, "lr", lr)
        self._last_lr = group_values(self.optimizer, "lr")


class _LRScheduler(LRScheduler):
    """The old name of :class:`LRScheduler`, kept (as in PyTorch) for older code."""


def _track_optimizer_steps(optimizer):
    """Wrap ``optimizer.step`` (once) so a scheduler can tell whether it ran first."""
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    opt_ref = weakref.ref(optimizer)
    func = optimizer.step.__func__

    @wraps(func)
    def wrapper(*args, **kwargs):
        opt = opt_ref()
        opt._opt_called = True
        return func.__get__(opt, opt.__class__)(*args, **kwargs)

    wrapper._wrapped_by_lr_sched = True
    optimizer.step = wrapper
