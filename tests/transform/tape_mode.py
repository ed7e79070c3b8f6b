"""``tracegrad`` with ``grad``, ``value_and_grad`` and ``hessian`` pinned to
``mode="tape"``: the tape tests exercise the tape, whatever ``mode="auto"`` picks."""
import functools
import types

import tracegrad


class _TapeMode(types.ModuleType):
    def __getattr__(self, name):
        return getattr(tracegrad, name)


tg = _TapeMode("tracegrad_tape_mode")
for _name in ("grad", "value_and_grad", "hessian"):
    setattr(tg, _name, functools.partial(getattr(tracegrad, _name), mode="tape"))
