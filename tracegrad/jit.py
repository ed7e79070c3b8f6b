"""``tracegrad.jit``: PyTorch's TorchScript entry points, for programs that use them.

tracegrad has no TorchScript compiler (``tracegrad.compile`` stages eager code instead).
Model code often marks itself for TorchScript -- ``@torch.jit.script`` on a helper,
``torch.jit.is_scripting()`` branches, ``@torch.jit.ignore`` -- and runs unchanged in
eager PyTorch as well; here these entry points give the Python function or module
itself, which computes the same values. What needs a TorchScript program (``save`` and
``load`` of its archives, ``.graph``/``.code``) raises, naming what is missing.
"""
import typing

from .nn.modules.module import Module as _Module

__all__ = ["Attribute", "Error", "Final", "Future", "ScriptFunction", "ScriptModule", "annotate",
           "enable_onednn_fusion", "export", "fork", "freeze", "ignore", "interface", "is_scripting",
           "is_tracing", "load", "onednn_fusion_enabled", "optimize_for_inference", "save", "script",
           "script_if_tracing", "script_method", "trace", "trace_module", "unused", "wait"]

Final = typing.Final
Error = RuntimeError


def script(obj=None, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """``obj`` itself: a scripted function or module computes what the Python one does."""
    return obj


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs=True):
    """``func`` itself (a traced program replays what ``func`` computed on these inputs;
    ``func`` computes it for any input)."""
    return func


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
                 strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
                 example_inputs_is_kwarg=False, _store_inputs=True):
    return mod


def script_if_tracing(fn):
    return fn


def _marker(fn=None, **_):
    """A decorator TorchScript reads and eager code ignores (``@ignore``, ``@ignore(drop=True)``)."""
    return fn if fn is not None else (lambda f: f)


ignore = unused = export = interface = script_method = _marker


def is_scripting():
    """False: code runs as Python here, never as TorchScript."""
    return False


def is_tracing():
    return False


def annotate(the_type, the_value):
    return the_value


def Attribute(value, type=None):  # noqa: N802,A002  (PyTorch's names)
    return value


class Future:
    """The result of :func:`fork`: the call has already run; ``wait()`` gives its value."""

    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value

    def value(self):
        return self._value

    def done(self):
        return True


def fork(func, *args, **kwargs):
    """Run ``func(*args, **kwargs)`` now (TorchScript may run it asynchronously) and give a
    :class:`Future` of its result."""
    return Future(func(*args, **kwargs))


def wait(future):
    return future.wait()


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    return mod


def optimize_for_inference(mod, other_methods=None):
    return mod


def enable_onednn_fusion(enabled):
    """Accepted and ignored (no TorchScript fuser here)."""


def onednn_fusion_enabled():
    return False


def _no_archives(what):
    raise NotImplementedError(f"tracegrad.jit.{what}: tracegrad has no TorchScript, so it cannot write or read "
                              "TorchScript archives; use tracegrad.save / tracegrad.load of a state_dict")


def save(m, f, _extra_files=None):
    _no_archives("save")


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    _no_archives("load")


class ScriptModule(_Module):
    """An ``nn.Module``: TorchScript's module classes (``class LSTMLayer(jit.ScriptModule)``
    with ``@jit.script_method``, as PyTorch's custom_lstms.py writes them) run as plain
    modules. ``script(module)`` gives the module itself, which is not one of these."""


class ScriptFunction:
    """Never made here (``script(fn)`` gives the function itself); for ``isinstance``."""
