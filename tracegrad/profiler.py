"""``tracegrad.profiler``, as ``torch.profiler``: the same recorder as
``tracegrad.autograd.profiler`` behind PyTorch's newer front door (``activities``,
``on_trace_ready``, ``step``)."""
import enum

from .runtime import profiler as _recorder
from .runtime.profiler import record_function

__all__ = ["ProfilerActivity", "profile", "record_function"]


class ProfilerActivity(enum.Enum):
    CPU = "CPU"
    CUDA = "CUDA"


class profile(_recorder.profile):
    """``with tracegrad.profiler.profile(activities=[ProfilerActivity.CPU]) as prof: ...``.

    ``on_trace_ready(prof)`` is called when the block ends. Schedules (``schedule=``) are
    not supported: every step inside the block is recorded."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False):
        if schedule is not None:
            raise NotImplementedError("profile(schedule=...) is not supported by tracegrad's "
                                      "profiler: it records everything inside the block")
        activities = set(activities if activities is not None else [ProfilerActivity.CPU])
        unknown = [a for a in activities if not isinstance(a, ProfilerActivity)]
        if unknown:
            raise TypeError(f"profile(activities=...) takes ProfilerActivity values, got {unknown[0]!r}")
        super().__init__(use_cuda=ProfilerActivity.CUDA in activities, record_shapes=record_shapes,
                         profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules)
        self.on_trace_ready = on_trace_ready
        self.step_num = 0

    def step(self):
        """Mark the end of one training step (counted; there is no schedule to advance)."""
        self.step_num += 1

    def start(self):
        self.__enter__()

    def stop(self):
        self.__exit__(None, None, None)

    def __exit__(self, *exc):
        super().__exit__(*exc)
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)
        return False
