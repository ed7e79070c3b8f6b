"""What the profiler recorded, and its reports: PyTorch's table and a Chrome trace.

An event is one timed span (a forward operation, a backward node, a ``record_function``
block) with the spans opened inside it as children, so the time and memory an event spent
itself ("self") is its total minus its children's. ``key_averages`` merges events of one
name (and, optionally, one list of input shapes) into rows for the table.
"""
import json
import os

__all__ = ["SORT_KEYS", "EventList", "FunctionEvent", "FunctionEventAvg"]

SORT_KEYS = ("cpu_time", "cpu_time_total", "self_cpu_time_total", "cpu_memory_usage",
             "self_cpu_memory_usage", "count")
# Device columns PyTorch sorts by: accepted, and all zero (only host time is measured).
DEVICE_KEYS = tuple(f"{pre}{dev}_{what}" for dev in ("cuda", "device")
                    for pre, what in (("", "time"), ("", "time_total"), ("self_", "time_total"),
                                      ("", "memory_usage"), ("self_", "memory_usage")))


class Interval:
    """An event's span on the clock, in microseconds since the profile started."""

    __slots__ = ("start", "end")

    def __init__(self, start, end):
        self.start, self.end = start, end

    def elapsed_us(self):
        return self.end - self.start

    def __repr__(self):
        return f"Interval(start={self.start:.3f}, end={self.end:.3f})"


class _NoDeviceTime:
    """Every device time and memory figure is zero: tracegrad measures host time."""

    __slots__ = ()

    def __getattr__(self, name):
        if name in DEVICE_KEYS:
            return 0
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


class FunctionEvent(_NoDeviceTime):
    """One recorded span. Times are in microseconds, as in PyTorch's events."""

    __slots__ = ("id", "name", "thread", "start_ns", "end_ns", "input_shapes", "stack",
                 "cpu_memory_usage", "children", "cpu_parent")

    def __init__(self, id, name, thread, input_shapes, stack, parent):
        self.id = id
        self.name = name
        self.thread = thread
        self.input_shapes = input_shapes
        self.stack = stack
        self.cpu_memory_usage = 0
        self.children = []
        self.cpu_parent = parent
        self.start_ns = self.end_ns = 0

    @property
    def key(self):
        return self.name

    count = 1

    @property
    def time_range(self):
        """Start and end on the host's monotonic clock, in microseconds."""
        return Interval(self.start_ns / 1000.0, self.end_ns / 1000.0)

    @property
    def cpu_children(self):
        return self.children

    @property
    def cpu_time_total(self):
        return (self.end_ns - self.start_ns) / 1000.0

    cpu_time = cpu_time_total  # the average over one call

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.children)

    @property
    def self_cpu_memory_usage(self):
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.children)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time={_format_time(self.cpu_time_total)} "
                f"cpu_memory_usage={self.cpu_memory_usage} input_shapes={self.input_shapes}>")


class FunctionEventAvg(_NoDeviceTime):
    """Events of one key added together (one row of ``key_averages().table()``)."""

    def __init__(self, key, input_shapes=None, stack=None, cpu_parent=None):
        self.key = key
        self.cpu_parent = cpu_parent  # the first event's: top_level_events_only reads it
        self.input_shapes = input_shapes  # kept only when grouping by input shape
        self.stack = stack
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0

    def add(self, event):
        self.count += event.count
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        self.cpu_memory_usage += event.cpu_memory_usage
        self.self_cpu_memory_usage += event.self_cpu_memory_usage
        return self

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"cpu_time={_format_time(self.cpu_time)} input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events (or of averages) that prints as PyTorch's profiler table."""

    def __init__(self, events=(), profile_memory=False, start_ns=0):
        super().__init__(events)
        self._profile_memory = profile_memory
        self._start_ns = start_ns

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0):
        """One row per operation name (and input shapes, and the ``group_by_stack_n``
        innermost source locations, when asked), in order of first appearance."""
        rows = {}
        for e in self:
            key = (e.key, str(e.input_shapes) if group_by_input_shapes else None,
                   tuple((e.stack or ())[:group_by_stack_n]) if group_by_stack_n else None)
            row = rows.get(key)
            if row is None:
                row = rows[key] = FunctionEventAvg(
                    e.key, e.input_shapes if group_by_input_shapes else None,
                    list(key[2]) if group_by_stack_n else None, e.cpu_parent)
            row.add(e)
        return EventList(rows.values(), self._profile_memory, self._start_ns)

    def total_average(self):
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """The report PyTorch prints: one row per event, sorted by ``sort_by`` (largest
        first), at most ``row_limit`` rows, then the total self CPU time."""
        return _build_table(self, sort_by, row_limit, max_src_column_width, max_name_column_width,
                            max_shapes_column_width, header, top_level_events_only, time_unit,
                            self._profile_memory)

    def __str__(self):
        return self.table()

    def export_chrome_trace(self, path):
        """Write the events as Chrome trace-event JSON (opens in Perfetto, chrome://tracing)."""
        pid = os.getpid()
        threads = sorted({e.thread for e in self})
        trace = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                  "args": {"name": "python (tracegrad)"}}]
        trace += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": t,
                   "args": {"name": f"thread {t}"}} for t in threads]
        for e in self:
            args = {"Input Dims": e.input_shapes} if e.input_shapes else {}
            if self._profile_memory:
                args["Bytes"] = e.cpu_memory_usage
            if e.stack:
                args["Call stack"] = ";".join(e.stack)
            trace.append({"ph": "X", "cat": "cpu_op", "name": e.name, "pid": pid, "tid": e.thread,
                          "ts": (e.start_ns - self._start_ns) / 1000.0,
                          "dur": (e.end_ns - e.start_ns) / 1000.0, "args": args})
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f, indent=1)


def _sort_key(sort_by):
    if sort_by not in SORT_KEYS and sort_by not in DEVICE_KEYS:
        raise AttributeError(f"table(): cannot sort by {sort_by!r}; choose one of "
                             f"{', '.join(SORT_KEYS)} (device times are all 0: only host "
                             "time is measured)")
    return lambda e: getattr(e, sort_by)


def _build_table(events, sort_by, row_limit, max_src_width, max_name_width, max_shapes_width,
                 header, top_level_only, time_unit, profile_memory):
    if not events:
        return ""
    if sort_by is not None:
        events = sorted(events, key=_sort_key(sort_by), reverse=True)
    fmt_time = _time_formatter(time_unit)
    has_shapes = any(e.input_shapes for e in events)
    stacks = [e.stack for e in events if e.stack]
    name_width = min(max(len(e.key) for e in events) + 4, max_name_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    widths = [name_width] + [12] * (len(headers) - 1)
    aligns = [">"] * len(headers)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(min(max(len(str(e.input_shapes)) for e in events) + 4, max_shapes_width))
        aligns.append(">")
    if stacks:
        headers.append("Source Location")
        widths.append(min(max(len(s) for st in stacks for s in st) + 4, max_src_width))
        aligns.append("<")
    row_format = "".join(f"{{:{a}{w}}}  " for a, w in zip(aligns, widths))
    separator = "".join("-" * w + "  " for w in widths)
    line_length = sum(widths) + 2 * (len(widths) - 1)

    total = sum(e.self_cpu_time_total for e in events)
    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [separator, row_format.format(*headers), separator]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_only and getattr(e, "cpu_parent", None) is not None:
            continue
        shown += 1
        name = e.key if len(e.key) < max_name_width - 3 else e.key[:max_name_width - 3] + "..."
        row = [name, _share(e.self_cpu_time_total, total), fmt_time(e.self_cpu_time_total),
               _share(e.cpu_time_total, total), fmt_time(e.cpu_time_total), fmt_time(e.cpu_time)]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
        row.append(e.count)
        if has_shapes:
            row.append(str(e.input_shapes)[:widths[len(row)]])
        if stacks:
            row.append(_trim_path(e.stack[0], widths[-1]) if e.stack else "")
        lines.append(row_format.format(*row))
        for entry in (e.stack or [])[1:] if stacks else ():
            lines.append(row_format.format(*([""] * (len(headers) - 1)), _trim_path(entry, widths[-1])))
    lines += [separator, f"Self CPU time total: {fmt_time(total)}"]
    return "\n".join(lines) + "\n"


def _format_time(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _time_formatter(unit):
    scales = {"s": 1e6, "ms": 1e3, "us": 1.0}
    if unit is None:
        return _format_time
    if unit not in scales:
        raise ValueError(f"table(): time_unit must be one of 's', 'ms', 'us' or None, not {unit!r}")
    return lambda us: f"{us / scales[unit]:.3f}{unit}"


def _share(us, total):
    return "NaN" if total == 0 else f"{us * 100.0 / total:.2f}%"


def _format_memory(nbytes):
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _trim_path(path, width):
    if len(path) > width:
        path = "..." + path[len(path) - width + 3:]
    return path
