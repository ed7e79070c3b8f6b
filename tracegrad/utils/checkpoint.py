"""``tracegrad.utils.checkpoint``: activation checkpointing, as ``torch.utils.checkpoint``.

A checkpointed function keeps none of the tensors its operations save for backward; the
backward pass runs it again to get them. Two ways, as in PyTorch:

- ``use_reentrant=True``: a custom :class:`~tracegrad.autograd.Function` whose forward runs
  the function under ``no_grad`` (only the inputs are saved) and whose backward reruns it
  with grad on and calls ``backward`` on the result: a backward pass inside the backward
  pass. So it needs an input that requires grad, takes positional arguments only, and
  cannot serve ``autograd.grad`` or ``backward(inputs=...)``.
- ``use_reentrant=False``: the forward runs with saved-tensor hooks whose pack hook keeps a
  number, not the tensor; the first unpack reruns the function with hooks that collect what
  it saves, in order, and hands back the matching one. Keyword arguments, nested
  structures, ``autograd.grad`` and nesting work.

Either way the CPU (and any loaded device's) random state is saved at the forward and
restored for the rerun, so dropout draws the same mask (``preserve_rng_state=True``).
"""
import contextlib
import warnings

from ..autograd import Function
from ..autograd import backward as _backward
from ..autograd import _is_checkpoint_valid
from ..autograd.graph import saved_tensors_hooks
from ..random import replay_point, replaying
from .. import backend
from ..runtime import grad_mode
from ..runtime.tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "set_checkpoint_early_stop",
           "noop_context_fn", "detach_variable", "check_backward_validity",
           "set_checkpoint_debug_enabled"]

_DEFAULT_DETERMINISM_MODE = "default"
_debug_enabled = None


class CheckpointError(RuntimeError):
    """What a non-reentrant checkpoint's rerun did differently from the forward."""


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Accepted for PyTorch's API; tracegrad's errors name the tensors either way."""
    global _debug_enabled
    prev, _debug_enabled = _debug_enabled, enabled
    try:
        yield
    finally:
        _debug_enabled = prev


_early_stop = True


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Whether a non-reentrant checkpoint's recomputation may stop once it has recomputed
    every saved tensor (PyTorch's default, True). Accepted for PyTorch's API: tracegrad
    recomputes the whole checkpointed function either way, which gives the same gradients."""
    global _early_stop
    prev, _early_stop = _early_stop, bool(enable)
    try:
        yield
    finally:
        _early_stop = prev


def detach_variable(inputs):
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if isinstance(inp, Tensor):
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            inp = x
        out.append(inp)
    return tuple(out)


def check_backward_validity(inputs):
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


def _rng_states():
    """Where every loaded device's random stream stands (what a rerun must start from)."""
    return [(ns, replay_point(ns)) for ns in backend.loaded()]


def _replaying(states):
    """Run the body from the random ``states`` of the forward (None: as things are), and
    give the surrounding states back afterwards."""
    return replaying(states) if states is not None else contextlib.nullcontext()


# -- use_reentrant=True ---------------------------------------------------------------------

class CheckpointFunction(Function):
    """The reentrant checkpoint: forward without a graph, backward by a rerun."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.rng_states = _rng_states() if preserve_rng_state else None
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*(a for a in args if isinstance(a, Tensor)))
        with grad_mode.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if not _is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible"
                " with .grad() or passing an `inputs` parameter to .backward()."
                " To resolve this error, you can either set use_reentrant=False,"
                " or call .backward() without passing the `inputs` argument.")
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        with _replaying(ctx.rng_states):
            detached = detach_variable(tuple(inputs))
            with grad_mode.enable_grad():
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        _backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(x.grad if isinstance(x, Tensor) else None for x in detached)


# -- use_reentrant=False --------------------------------------------------------------------

class _Frame:
    """One non-reentrant checkpoint call: how to rerun it, and what its forward saved
    (metadata only) and its reruns recomputed (by position, until unpacked)."""

    def __init__(self, run, rng_states, check):
        self.run, self.rng_states, self.check = run, rng_states, check
        self.saved_meta = []  # (shape, dtype, device) of each tensor the forward saved
        self.recomputed = {}  # position -> tensor, filled by a rerun, emptied by unpacking

    def pack(self, t):
        self.saved_meta.append(_metadata(t))
        return _Handle(self, len(self.saved_meta) - 1)

    def unpack(self, handle):
        if handle.position not in self.recomputed:
            self._rerun()
        return self.recomputed.pop(handle.position)

    def _rerun(self):
        got = []

        def collect(t):
            got.append(t.detach() if t.grad_fn is not None or t.requires_grad else t)

        with _replaying(self.rng_states), grad_mode.enable_grad(), \
                saved_tensors_hooks(collect, lambda _: None):
            self.run()
        if self.check != "none":
            _check_rerun(self.saved_meta, [_metadata(t) for t in got])
        self.recomputed = dict(enumerate(got))


class _Handle:
    """What the graph holds in place of a saved tensor: its frame and position."""
    __slots__ = ("frame", "position")

    def __init__(self, frame, position):
        self.frame, self.position = frame, position


def _metadata(t):
    return {"shape": t.shape, "dtype": t.dtype, "device": t.device}


def _check_rerun(saved, recomputed):
    if len(saved) != len(recomputed):
        raise CheckpointError(
            "torch.utils.checkpoint: A different number of tensors was saved "
            "during the original forward and recomputation.\n"
            f"Number of tensors saved during forward: {len(saved)}\n"
            f"Number of tensors saved during recomputation: {len(recomputed)}.\n")
    different = [(i, a, b) for i, (a, b) in enumerate(zip(saved, recomputed)) if a != b]
    if different:
        listed = "".join(f"tensor at position {i}:\nsaved metadata: {a}\nrecomputed metadata: {b}\n"
                         for i, a, b in different)
        raise CheckpointError(
            "torch.utils.checkpoint: Recomputed values for the following tensors "
            f"have different metadata than during the forward pass.\n{listed}.\n")


def _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, args, kwargs):
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    forward_context, recompute_context = context_fn()
    states = _rng_states() if preserve else None

    def rerun():
        with recompute_context:
            function(*args, **kwargs)

    frame = _Frame(rerun, states, determinism_check)
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        return function(*args, **kwargs)


# -- front doors ----------------------------------------------------------------------------

def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check=_DEFAULT_DETERMINISM_MODE, debug=False, early_stop=True, **kwargs):
    """``function(*args, **kwargs)``, its saved tensors recomputed in backward instead of
    kept (see the module docstring). Not passing ``use_reentrant`` warns and means True,
    as in PyTorch 2.13."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be "
            "passed explicitly. Starting in PyTorch 2.9, calling checkpoint "
            "without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (an ``nn.Sequential`` or a list of callables) in order, each of
    the first ``segments - 1`` chunks checkpointed; the last chunk runs normally."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
            "parameter should be passed explicitly. "
            "In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    from ..nn import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
