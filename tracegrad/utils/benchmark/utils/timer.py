"""``Timer``: :class:`timeit.Timer` with tracegrad's habits, as ``torch.utils.benchmark``.

The statement runs in a :class:`timeit.Timer` (so in a compiled loop, with ``torch``
bound to tracegrad unless the globals say otherwise) under the task's thread count, and
every timing clock read first waits for the devices in use (CuPy returns before its
kernels end). The autoranging methods pick a block size big enough that reading the
clock is noise, then time blocks until the budget is spent.
"""
import enum
import textwrap
import time
import timeit as _timeit

from .... import backend
from . import common

__all__ = ["Language", "Timer", "timer"]


def timer():
    """``time.perf_counter`` after every loaded device's queued work has finished."""
    for ns in backend.loaded():
        ns.synchronize()
    return time.perf_counter()


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


def _tidy(code):
    """Dedented, without the leading newline of a triple-quoted block or trailing space."""
    code = textwrap.dedent(code)
    return code.removeprefix("\n").rstrip()


class Timer:
    """Time a Python statement (a string) run in a loop after ``setup``.

    ``globals`` gives the names ``stmt`` uses (copied; ``torch`` is tracegrad unless given).
    ``label``, ``sub_label``, ``description`` and ``env`` only tag the result for printing
    and :class:`Compare` (rows: sub-label, columns: description). ``num_threads`` is
    tracegrad's intra-op thread count while timing (one by default, so timings compare
    like with like). ``language='c++'`` is refused: tracegrad has no C++ API.
    """

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=timer, globals=None,
                 label=None, sub_label=None, description=None, env=None, num_threads=1,
                 language=Language.PYTHON):
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError(
                "Timer(language='c++') times C++ written against libtorch, PyTorch's C++ "
                "library; tracegrad is Python only. Time the Python statement instead "
                "(language='python').")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely "
                             "this code can simply be moved to `setup`.")
        import tracegrad
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", tracegrad)
        self._language = Language.PYTHON
        stmt, setup = _tidy(stmt), _tidy(setup)
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = common.TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup,
                                          label=label, sub_label=sub_label, description=description,
                                          env=env, num_threads=num_threads)

    def _timeit(self, number):
        # No real block takes under a nanosecond; the floor keeps ratios finite.
        return max(self._timer.timeit(number), 1e-9)

    def _measurement(self, number, raw_times):
        return common.Measurement(number_per_run=number, raw_times=raw_times, task_spec=self._task_spec)

    def timeit(self, number=1000000):
        """One block of ``number`` runs (after a warm-up of ``number // 100``, at least 2)."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(max(number // 100, 2))
            return self._measurement(number, [self._timeit(number)])

    def repeat(self, repeat=-1, number=-1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _block_size(self, min_run_time):
        """Runs per block: grown tenfold until the clock's own cost is under 0.01% of a
        block and a block lasts a thousandth of ``min_run_time`` (or a block alone
        outlasts it). Doubles as the warm-up."""
        with common.set_torch_threads(self._task_spec.num_threads):
            overhead = float(sorted(self._timeit(0) for _ in range(5))[2])
            number = 1
            while True:
                took = self._timeit(number)
                if (overhead / took <= 1e-4 and took >= min_run_time / 1000) or took > min_run_time:
                    return number
                if number * 10 > 2 ** 31 - 1:
                    return number
                number *= 10

    def _blocks(self, number, enough, min_run_time, max_run_time=None, callback=None):
        """Time blocks until ``min_run_time`` is spent and ``enough(times)``, or until
        ``max_run_time`` is."""
        times, total, done = [], 0.0, False
        with common.set_torch_threads(self._task_spec.num_threads):
            while total < min_run_time or not done:
                took = self._timeit(number)
                times.append(took)
                total += took
                if callback:
                    callback(number, took)
                done = enough(times)
                if max_run_time and total > max_run_time:
                    break
        return times

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        """Blocks of one chosen size until ``min_run_time`` seconds of them are timed.
        ``callback(number, seconds)`` is told of each block."""
        number = self._block_size(min_run_time)
        times = self._blocks(number, lambda times: True, min_run_time, callback=callback)
        return self._measurement(number, times)

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0, callback=None):
        """Like :meth:`blocked_autorange`, but keeps timing until there are more than 3
        blocks whose IQR is under ``threshold`` of their median, or ``max_run_time``
        seconds are spent."""
        number = self._block_size(min_run_time=0.05)

        def steady(times):
            return len(times) > 3 and self._measurement(number, times).meets_confidence(threshold)

        return self._measurement(number, self._blocks(number, steady, min_run_time, max_run_time, callback))

    def collect_callgrind(self, number=100, *, repeats=None, collect_baseline=True, retain_out_file=False):
        raise NotImplementedError(
            "Timer.collect_callgrind counts instructions by running the statement under "
            "Valgrind in a PyTorch subprocess; tracegrad does not support it. Use "
            "blocked_autorange() for wall times.")
