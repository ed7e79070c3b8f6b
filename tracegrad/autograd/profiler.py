"""``tracegrad.autograd.profiler``, as ``torch.autograd.profiler``."""
from ..runtime.profiler import profile, record_function
from ..runtime.profiler_events import EventList, FunctionEvent, FunctionEventAvg

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]
