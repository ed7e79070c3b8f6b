"""The ``Optimizer`` base: parameter groups, per-parameter state, state dicts and hooks.

Subclasses hold only their update rule. Their ``step`` reads each parameter's gradient and
updates the parameter's backend array in place with a few ufunc passes (``out=``), outside
autograd, bumping the version counters as PyTorch's in-place ops would. This class does the
bookkeeping PyTorch users rely on: groups with the defaults filled in, ``state`` keyed by
parameter, ``state_dict``/``load_state_dict`` in PyTorch's layout, ``zero_grad`` and the
step/state-dict hooks, with PyTorch's error types and messages.
"""
import copy
import functools
import itertools
import warnings
from collections import OrderedDict, defaultdict

from .. import backend
from ..backend import dtypes as _dt
from ..backend.quiet import restore, silence
from ..runtime import dispatch, grad_mode
from ..runtime.hooks import RemovableHandle
from ..runtime.profiler import record_function
from ..runtime.tensor import Tensor, wrap
from ..runtime.vmapped import is_vmapped
from ._inplace import advance, scalar_dtype, step_counter, zeros_state

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Marks a default that every parameter group must give itself."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()

_hook_ids = itertools.count()
_global_pre_hooks = OrderedDict()
_global_post_hooks = OrderedDict()


def _add_hook(hooks, hook, prepend=False):
    key = next(_hook_ids)
    hooks[key] = hook
    if prepend:
        hooks.move_to_end(key, last=False)
    return RemovableHandle(hooks, key)


def register_optimizer_step_pre_hook(hook):
    """Call ``hook(optimizer, args, kwargs)`` before every optimizer's ``step``; it may
    return ``(new_args, new_kwargs)``."""
    return _add_hook(_global_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """Call ``hook(optimizer, args, kwargs)`` after every optimizer's ``step``."""
    return _add_hook(_global_post_hooks, hook)


def typename(obj):
    """PyTorch's ``typename``: a tensor's legacy type name, else the qualified class name."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = obj if isinstance(obj, type) else type(obj)
    module = cls.__module__ or ""
    return cls.__qualname__ if module in ("", "builtins") else f"{module}.{cls.__qualname__}"


def _hooked(step):
    """Wrap a subclass's ``step``: run the pre/post hooks around it, as one profiler event
    named as in PyTorch; tracegrad's own optimizers update with grad mode off (their
    closure turns it back on), a user's subclass runs its step in the caller's grad mode,
    as in PyTorch (its closure may call ``backward()``; its update may build a graph). A
    ``super().step()`` call from an overriding ``step`` runs the inner one bare."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if self.__dict__.get("_in_step"):
            return _bare_step(self, step, args, kwargs)
        if dispatch.observer is None:
            return _run_step(self, step, args, kwargs)
        with record_function(f"Optimizer.step#{type(self).__name__}.step"):
            return _run_step(self, step, args, kwargs)

    wrapper.hooked = True
    return wrapper


def _run_step(self, step, args, kwargs):
    pre = self._optimizer_step_pre_hooks
    if pre or _global_pre_hooks:
        for hook in (*_global_pre_hooks.values(), *pre.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{step} must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {result}.")
                args, kwargs = result
    if dispatch.batching is not None and _array_rules(type(self)):  # a vmap runs
        args, kwargs = _refusing_batched(self, args, kwargs)
    self._in_step = True
    try:
        out = _bare_step(self, step, args, kwargs)
    finally:
        self._in_step = False
    post = self._optimizer_step_post_hooks
    if post or _global_post_hooks:
        for hook in (*post.values(), *_global_post_hooks.values()):
            hook(self, args, kwargs)
    return out


def _bare_step(self, step, args, kwargs):
    """``step`` itself: with grad mode off when it is one of tracegrad's optimizers' (as
    PyTorch's are decorated), in the caller's mode when it is a user's."""
    if not step.__module__.startswith("tracegrad.optim."):
        return step(self, *args, **kwargs)
    prev = grad_mode.swap(False)
    quiet = silence()  # (its updates write in place: NumPy's errors ignored, see backend.quiet)
    try:
        return step(self, *args, **kwargs)
    finally:
        restore(quiet)
        grad_mode.restore(prev)


def _array_rules(cls):
    """Whether ``cls`` updates with tracegrad's array rules (a user's own Optimizer subclass
    may update with tensor operations, which batch)."""
    return any(c is not Optimizer and c.__module__.startswith("tracegrad.optim.") for c in cls.__mro__)


def _refusing_batched(optimizer, args, kwargs):
    """Under vmap: refuse a step over parameters or gradients batched by vmap (the update
    rules compute on arrays, which would be sample 0's), now and after each closure call;
    ``(args, kwargs)`` with the closure wrapped so."""
    def check():
        for group in optimizer.param_groups:
            for p in group["params"]:
                if is_vmapped(p) or is_vmapped(p.grad):
                    raise RuntimeError(f"vmap: {type(optimizer).__name__}.step() over a parameter or gradient "
                                       "batched by vmap is not supported in tracegrad (the update would use "
                                       "the first sample only): compute per-sample updates with tensor "
                                       "operations, or step outside vmap")
    check()
    closure = args[0] if args else kwargs.get("closure")
    if closure is None:
        return args, kwargs

    def checked():
        loss = closure()
        check()
        return loss
    return ((checked,) + tuple(args[1:]), kwargs) if args else (args, dict(kwargs, closure=checked))


# -- argument handling the optimizers share -------------------------------------------
def as_float(value):
    """A hyperparameter as a number for the update's arithmetic, read at each step: a Python
    number as is, a 1-element Tensor as a NumPy scalar of its dtype. PyTorch keeps a Tensor
    ``lr`` a tensor, so what it computes from one (``lr / bias_correction``, ``1 - lr *
    wd``) is rounded to the tensor's precision (float32 by default); NumPy scalars round so
    too."""
    if isinstance(value, Tensor):
        return value.dtype.np.type(value.item())
    return value


def check_lr(lr, nan_ok=False):
    """PyTorch's learning-rate checks (SGD's ``lr < 0`` lets NaN through; the others' do not)."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    check_non_negative(lr, "learning rate", nan_ok)


def check_non_negative(value, what, nan_ok=False):
    if (value < 0.0) if nan_ok else not 0.0 <= value:
        raise ValueError(f"Invalid {what}: {value}")


def check_betas(betas):
    """Each of ``betas`` (Adam-like optimizers' two decay rates) must lie in [0, 1)."""
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


def check_impl_flags(differentiable, fused=None, foreach=None):
    """``foreach``/``fused``/``capturable`` select PyTorch kernels; tracegrad has one fused
    array path, so they are accepted (and kept in the groups) but change nothing. An update
    that autograd records (``differentiable=True``) is not supported."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if differentiable:
        raise NotImplementedError("differentiable=True is not supported: tracegrad's optimizers "
                                  "update parameters in place outside autograd")


def functional_grads(name, params, lists, *, differentiable=False, fused=None, foreach=None, grad_scale=None,
                     found_inf=None):
    """The checks of a functional optimizer (``torch.optim.adam.adam(params, grads, ...)``,
    which custom optimizers call with their own state lists): the flags as the classes
    take them, no gradient scaler's tensors, Tensors in every list of ``lists`` (name ->
    list, the gradients first) at least as long as ``params``, and no parameter that
    autograd would refuse to see updated in place (PyTorch's functions update with
    in-place ops: outside ``no_grad`` a leaf that requires grad raises there). Returns the
    gradients' arrays."""
    check_impl_flags(differentiable, fused, foreach)
    if grad_scale is not None or found_inf is not None:
        raise NotImplementedError(f"{name}: grad_scale and found_inf (a fused optimizer's gradient scaling) "
                                  "are not supported; unscale the gradients before the step")
    for what, values in (("params", params),) + tuple(lists.items()):
        if len(values) < len(params):
            raise IndexError(f"{name}: {what} has {len(values)} entries for {len(params)} params")
        for i, t in enumerate(values[:len(params)]):
            if not isinstance(t, Tensor):
                raise TypeError(f"{name}: {what}[{i}] must be a Tensor, not {type(t).__name__}")
    if grad_mode.is_grad_enabled():
        for p in params:
            if p.requires_grad:
                if p.is_leaf:
                    raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
                raise NotImplementedError(f"{name}: tracegrad updates parameters outside autograd; a parameter "
                                          "that requires grad and is not a leaf needs the update recorded "
                                          "(call it under torch.no_grad() on leaves, or on detached tensors)")
    grads = next(iter(lists.values()))
    return [g._data for g in grads[:len(params)]]


_CAPTURABLE_DEVICES = ["cuda", "xpu", "hpu", "privateuseone"]


def check_capturable(group, param, what="params and state_steps", xla=(True, False), what_foreach=None):
    """``capturable=True`` keeps the step counters on the parameters' device for CUDA graphs:
    PyTorch refuses a step with it on the CPU (unless ``fused``), naming the devices it
    supports; ``xla`` says whether its single-tensor and foreach paths list XLA."""
    if not group.get("capturable") or group.get("fused") or param.device.type == "cuda":
        return
    foreach = bool(group.get("foreach"))
    devices = _CAPTURABLE_DEVICES + ["xla"] * xla[foreach]
    names = (what_foreach or what) if foreach else what
    raise AssertionError(f"If capturable=True, {names} must be on supported devices: {devices}.")


def stepped_params(optimizer, group, init, **capturable):
    """``(param, state, step)`` for each parameter of ``group`` that has a gradient: its state
    made by ``init(param, state)`` on first use, ``check_capturable(group, param, **capturable)``
    passed, and its step counter advanced (``step`` is the new count) -- the loop every
    optimizer's ``step`` opens with."""
    for p in group["params"]:
        if p.grad is None:
            continue
        st = optimizer.state[p]
        if len(st) == 0:
            init(p, st)
        check_capturable(group, p, **capturable)
        yield p, st, advance(st["step"])


def zero_buffers(group, *names):
    """A state ``init`` for :func:`stepped_params`: a step counter (on the parameter's device
    when the group is capturable) and a zero buffer per name."""
    def init(p, st):
        st["step"] = step_counter(p, group["capturable"])
        for name in names:
            st[name] = zeros_state(p)
    return init


def closure_loss(closure):
    """Evaluate the closure (if any) with grad mode on, as ``step`` does in PyTorch."""
    if closure is None:
        return None
    prev = grad_mode.swap(True)
    try:
        return closure()
    finally:
        grad_mode.restore(prev)


class Optimizer:
    """Base class for all optimizers.

    ``params`` is an iterable of Tensors, of ``(name, Tensor)`` pairs, or of dicts (one
    parameter group each, with per-group options); ``defaults`` fills the options a group
    leaves out.
    """

    _tensor_step = False  # True where the state keeps a ``step`` count tensor

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "hooked", False):
            cls.step = _hooked(step)

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._init_hooks()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def _init_hooks(self):
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._init_hooks()
        for group in self.param_groups:  # groups saved by an older version miss newer options
            for name, default in self.defaults.items():
                if default is not required:
                    group.setdefault(name, default)
        self.defaults.setdefault("differentiable", False)  # (not in the groups, as in PyTorch)
        if self._tensor_step:  # old state dicts hold the step count as a number
            for st in self.state.values():
                if isinstance(st, dict) and "step" in st and not isinstance(st["step"], Tensor):
                    st["step"] = wrap(backend.cpu.asarray(float(st["step"]), dtype=scalar_dtype().np))

    def __repr__(self):
        lines = [self.__class__.__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(("\n" if i else "") + f"Parameter Group {i}")  # (groups a blank line apart)
            lines.extend(f"    {key}: {group[key]}" for key in sorted(group) if key != "params")
        return "\n".join(lines) + "\n)"

    def step(self, closure=None):
        """Perform a single optimization step (subclasses implement it)."""
        raise NotImplementedError

    # -- parameter groups ----------------------------------------------------------------
    def add_param_group(self, param_group):
        """Add a parameter group (a dict with ``params`` and optional per-group options),
        e.g. to train layers that were frozen so far."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but "
                            "the ordering of tensors in sets will change between runs. Please use a "
                            "list instead.")
        else:
            params = list(params)
        named = [p for p in params if isinstance(p, tuple)]
        if named:
            if len(named) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = [name for name, _ in named]
            params = [p for _, p in named]
        param_group["params"] = params

        for param in params:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required optimization "
                                 f"parameter {name}")
            param_group.setdefault(name, default)

        if len(params) != len(set(params)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, "
                          "this will cause an error; see github.com/pytorch/pytorch/issues/40967 for "
                          "more information", stacklevel=3)
        seen = set()
        for group in self.param_groups:
            seen.update(group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        """Reset the gradients: drop them (``None``, the default) or fill them with zeros."""
        if dispatch.observer is not None:
            with record_function(f"Optimizer.zero_grad#{type(self).__name__}.zero_grad"):
                return self._zero_grad(set_to_none)
        return self._zero_grad(set_to_none)

    def _zero_grad(self, set_to_none):
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if grad.grad_fn is not None:
                        grad.detach_()
                    else:
                        grad.requires_grad_(False)
                    grad.zero_()

    # -- state dicts ---------------------------------------------------------------------
    def state_dict(self):
        """The optimizer's state: ``{'state': {index: {...}}, 'param_groups': [{..., 'params':
        [indices]}]}``, parameters named by their position across the groups."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        index = {}
        groups = []
        start = 0
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                index.setdefault(id(p), i)
            packed["params"] = [index[id(p)] for p in group["params"]]
            start += len(packed["params"])
            groups.append(packed)
        packed_state = {(index[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict):
        """Load a state from :meth:`state_dict` (deep-copied: the loaded optimizer never
        writes into the dict's tensors); group count and sizes must match."""
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the "
                             "size of optimizer's group")
        id_map = dict(zip(itertools.chain.from_iterable(g["params"] for g in saved_groups),
                          itertools.chain.from_iterable(g["params"] for g in groups)))
        steps_on_device = {k: bool(g.get("capturable") or g.get("fused"))
                           for g in saved_groups for k in g["params"]}
        state = defaultdict(dict)
        with grad_mode.no_grad():
            for k, v in state_dict["state"].items():
                if k in id_map:
                    state[id_map[k]] = _copy_state(id_map[k], v, step_on_device=steps_on_device[k])
                else:
                    state[k] = copy.deepcopy(v)
        for group, new_group in zip(groups, saved_groups):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
        self.__setstate__({"state": state, "param_groups": saved_groups})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)

    # -- hooks ---------------------------------------------------------------------------
    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs before ``step``; it may return new args."""
        return _add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs after ``step``."""
        return _add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        return _add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        return _add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        return _add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        return _add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)


def _copy_state(param, value, key=None, step_on_device=False):
    """A deep copy of one parameter's saved state, tensors moved to the parameter's device
    (and dtype, for a floating-point parameter). ``step`` counters stay where they are,
    unless the saved group was capturable or fused (``step_on_device``): those live on the
    parameter's device as float32, as PyTorch loads them."""
    if isinstance(value, Tensor):
        if key == "step":
            if step_on_device:
                return value.detach().to(device=param.device, dtype=_dt.float32, copy=True)
            return value.detach().clone()
        dtype = param.dtype if param.is_floating_point() else value.dtype
        return value.detach().to(device=param.device, dtype=dtype, copy=True)
    if isinstance(value, dict):
        return {k: _copy_state(param, v, k, step_on_device) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_copy_state(param, v, step_on_device=step_on_device) for v in value)
    return copy.deepcopy(value)


# -- the private helpers optimizers written after PyTorch's own import (timm's, forks of Adam) --

OptimizerPreHook = OptimizerPostHook = object  # (type aliases in PyTorch: names only here)


def _get_value(x):
    """A 0-d (or one-element) tensor's number, anything else as it is."""
    from ..runtime.tensor import Tensor
    return x.item() if isinstance(x, Tensor) else x


def _get_scalar_dtype(is_fused=None):
    """The dtype of a step counter: float32, or float64 where that is the default."""
    if is_fused:
        return _dt.float32
    return _dt.float64 if _dt.get_default_dtype() is _dt.float64 else _dt.float32


def _default_to_fused_or_foreach(params, differentiable, use_fused=False):
    """``(fused, foreach)``: tracegrad has no separate fused or foreach kernels on the CPU,
    so both False there (PyTorch picks foreach for CUDA tensors)."""
    if differentiable:
        return False, False
    cuda = all(p is None or p.device.type == "cuda" for p in params) and bool(params)
    fused = bool(use_fused) and cuda and all(p is None or p.is_floating_point() for p in params)
    return fused, cuda and not fused


def _use_grad_for_differentiable(func):
    """PyTorch's decorator: the step runs with grad mode as ``defaults['differentiable']``
    says (off unless differentiable)."""
    @functools.wraps(func)
    def _use_grad(self, *args, **kwargs):
        prev = grad_mode.swap(bool(self.defaults.get("differentiable", False)))
        try:
            return func(self, *args, **kwargs)
        finally:
            grad_mode.restore(prev)
    return _use_grad


def _view_as_real(params, *state_and_grads):
    """PyTorch rewrites complex entries as ``view_as_real`` views so that real arithmetic
    updates them in place; tracegrad's ``view_as_real`` is a copy, so an update through it
    would be lost: refused for complex parameters (tracegrad's own optimizers take them)."""
    from ..runtime.tensor import Tensor
    if any(isinstance(p, Tensor) and p.is_complex() for p in params):
        raise NotImplementedError("_view_as_real: tracegrad's view_as_real is a copy, not a view, so an "
                                  "optimizer that updates complex parameters through it would lose the "
                                  "update; use tracegrad's built-in optimizers for complex parameters")


def _stack_if_compiling(x):
    return x


def _get_capturable_supported_devices(supports_xla=True):
    return _CAPTURABLE_DEVICES + (["xla"] if supports_xla else [])


def _cuda_graph_capture_health_check(self):
    """(PyTorch checks CUDA-graph capture here; tracegrad captures none.)"""


def _accelerator_graph_capture_health_check(self):
    """(PyTorch checks accelerator-graph capture here; tracegrad captures none.)"""


def _patch_step_function(self):
    """(PyTorch wraps ``step`` for the profiler here; tracegrad's ``step`` is wrapped when the
    class is made.)"""


def profile_hook_step(func):
    """PyTorch's decorator of a step: runs the global and the optimizer's step hooks and
    records a profiler event (tracegrad's own steps do so already)."""
    return _hooked(func)


Optimizer._cuda_graph_capture_health_check = _cuda_graph_capture_health_check
Optimizer._accelerator_graph_capture_health_check = _accelerator_graph_capture_health_check
Optimizer._patch_step_function = _patch_step_function
Optimizer.profile_hook_step = staticmethod(profile_hook_step)
