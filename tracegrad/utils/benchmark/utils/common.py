"""What a timing is: :class:`TaskSpec` (the statement and its labels) and
:class:`Measurement` (raw block times plus the statistics printed from them), as
``torch.utils.benchmark.utils.common``.

A measurement stores the time of each *block* of ``number_per_run`` runs; every statistic
is per run (block time / ``number_per_run``). Quantiles interpolate linearly, as
``torch.quantile`` does, so the median and IQR equal NumPy's on :attr:`Measurement.times`.
"""
import collections
import contextlib
import dataclasses
import math
import textwrap

from ....backend import cpu as np  # (statistics of host timings)

__all__ = ["Measurement", "TaskSpec", "ordered_unique", "select_unit", "set_torch_threads",
           "trim_sigfig", "unit_to_english"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # no timer resolves better than this (seconds)
_IQR_WARN_THRESHOLD = 0.1         # IQR / median above this earns a warning ...
_IQR_GROSS_WARN_THRESHOLD = 0.25  # ... and above this, a stronger one

_UNITS = {"ns": (1e-9, "nanosecond"), "us": (1e-6, "microsecond"),
          "ms": (1e-3, "millisecond"), "s": (1.0, "second")}


@dataclasses.dataclass(frozen=True, repr=False)
class TaskSpec:
    """Everything that identifies a timed task except its globals (hashable: measurements
    of one task are merged by it)."""
    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self):
        """The label (else the one-line stmt), with the sub-label after a colon."""
        sub = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + sub
        if "\n" not in self.stmt:
            return self.stmt + sub
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n" + textwrap.indent(self.stmt, "  ")

    def setup_str(self):
        if not self.setup or self.setup == "pass":
            return ""
        if "\n" in self.setup:
            return "setup:\n" + textwrap.indent(self.setup, "  ")
        return f"setup: {self.setup}"

    def summarize(self):
        """The task's lines of a measurement's repr (multi-line sections get a blank line after)."""
        parts = [self.title, self.description or "", self.setup_str()]
        return "\n".join(p + "\n" if "\n" in p else p for p in parts if p)


_TASKSPEC_FIELDS = frozenset(f.name for f in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(repr=False)
class Measurement:
    """The block times of one task: ``raw_times[i]`` is the time of ``number_per_run`` runs.

    TaskSpec's fields read through (``m.stmt``, ``m.label``, ``m.num_threads``...).
    ``metadata`` is the user's, carried along untouched.
    """
    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict | None = None

    def __post_init__(self):
        self._stats = None

    def __getattr__(self, name):
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    @property
    def times(self):
        """Per-run times: each block's time over its runs."""
        return [t / self.number_per_run for t in self.raw_times]

    def _statistics(self):
        """(sorted times, median, mean, p25, p75, warnings), computed once."""
        if self._stats is None and self.raw_times:
            ordered = np.sort(np.asarray(self.times, dtype=np.float64))
            p25, median, p75 = np.quantile(ordered, [0.25, 0.5, 0.75])
            stats = (tuple(ordered.tolist()), float(median), float(ordered.mean()), float(p25), float(p75))
            rel = (p75 - p25) / median
            warnings = ()
            if rel >= _IQR_WARN_THRESHOLD:
                why = ("This suggests significant environmental influence." if rel >= _IQR_GROSS_WARN_THRESHOLD
                       else "This could indicate system fluctuation.")
                warning = (f"  WARNING: Interquartile range is {rel * 100:.1f}% of the median "
                           f"measurement.\n           {why}")
                warnings = (warning,)
            self._stats = stats + (warnings,)
        return self._stats or ((), -1.0, -1.0, -1.0, -1.0, ())

    @property
    def median(self):
        return self._statistics()[1]

    @property
    def mean(self):
        return self._statistics()[2]

    @property
    def iqr(self):
        _, _, _, p25, p75, _ = self._statistics()
        return p75 - p25

    @property
    def significant_figures(self):
        """How many digits of the median to trust (1 to 4), from a rough 90% confidence
        interval of the middle half of the times (``Compare.trim_significant_figures``)."""
        ordered, median = self._statistics()[:2]
        n = len(ordered)
        middle = np.asarray(ordered[n // 4:math.ceil(3 * n / 4)])
        spread = 1.645 * float(middle.std()) / math.sqrt(len(middle))
        digits = math.floor(math.log10(median / max(spread, _MIN_CONFIDENCE_INTERVAL)))
        return min(max(digits, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self):
        return bool(self._statistics()[5])

    def meets_confidence(self, threshold=_IQR_WARN_THRESHOLD):
        return self.iqr / self.median < threshold

    @property
    def title(self):
        return self.task_spec.title

    @property
    def env(self):
        # PyTorch's property means "Unspecified env" for None, but a slip in it ends in
        # its attribute fallback, so it gives the task's env (None included): so do we.
        return self.task_spec.env

    @property
    def as_row_name(self):
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self):
        ordered, median, _, p25, p75, warnings = self._statistics()
        n = len(ordered)
        unit, scale = select_unit(median)
        threads = self.num_threads
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {(p75 - p25) / scale:.2f} {unit} ({p25 / scale:.2f} to {p75 / scale:.2f})")
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads} thread{'s' if threads > 1 else ''}")
        lines.extend(warnings)
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements):
        """One measurement per task (replicates pooled at ``number_per_run=1``; metadata dropped)."""
        pooled = collections.defaultdict(list)
        for m in measurements:
            pooled[m.task_spec].extend(m.times)
        return [Measurement(number_per_run=1, raw_times=times, task_spec=spec) for spec, times in pooled.items()]


def select_unit(t):
    """The unit (and its size in seconds) that puts ``t`` seconds in [1, 1000)."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3), "s")
    return unit, _UNITS[unit][0]


def unit_to_english(u):
    return _UNITS[u][1]


def trim_sigfig(x, n):
    """``x`` rounded to ``n`` significant figures (3.14159, 2 -> 3.1)."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    scale = 10.0 ** (math.ceil(math.log10(abs(x))) - n)
    return float(np.round(x / scale) * scale)


def ordered_unique(elements):
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n):
    """Run the block with ``n`` intra-op threads, then put the previous count back."""
    from ....ops.compat_functions import get_num_threads, set_num_threads
    prior = get_num_threads()
    try:
        set_num_threads(n)
        yield
    finally:
        set_num_threads(prior)
