"""The profiler: ``tracegrad.autograd.profiler`` (as ``torch.autograd.profiler``) and
``tracegrad.profiler`` (as ``torch.profiler``).

Pinned down here: which events a program produces (forward ops as ``tracegrad::<op>``
where PyTorch says ``aten::<op>``, backward nodes by node name, leaf accumulation as
``torch::autograd::AccumulateGrad``, custom Functions and ``record_function`` blocks by
name) and how they nest; the time and memory accounting (self = total - children);
``record_shapes`` / ``profile_memory``; PyTorch's table (columns, sorting, limits,
formatting); the Chrome trace; errors; threads; the ``torch.profiler`` front door; and
that profiling never changes results. Expected values come from formulas (bytes =
elements x item size, PyTorch's formatting rules) or from real PyTorch (oracle tests,
marked ``torch``). Nothing here depends on how fast the machine is: only orderings and
containments of measured times are asserted.

This module pins tracegrad's own event names (``tracegrad::mm``), so it imports
tracegrad directly rather than following ``TRACEGRAD_RUNTIME_TESTS_LIB``.
"""
import collections
import contextlib
import json
import os
import re
import threading
import time
import types
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.autograd import profiler
from tracegrad.runtime import dispatch

ACC = "torch::autograd::AccumulateGrad"
NOT_FINISHED = "Profiler didn't finish running"
SORT_KEYS = ["cpu_time", "cpu_time_total", "self_cpu_time_total", "cpu_memory_usage",
             "self_cpu_memory_usage", "count"]
TIME_COLUMNS = {"Self CPU": "self_cpu_time_total", "CPU total": "cpu_time_total",
                "CPU time avg": "cpu_time"}


# ------------------------------------------------------------------------------ helpers

def _fmt_time(us):
    """PyTorch's ``_format_time``: seconds from 1e6 us, milliseconds from 1e3 us."""
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _fmt_mem(nbytes):
    """PyTorch's ``_format_memory``: binary units (1 KB = 1024 B), two decimals."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _cells(line):
    return re.split(r"\s{2,}", line.strip())


def _parse(table):
    """(header cells, data rows as dicts column -> cell, the 'Self CPU time total' line)."""
    lines = table.splitlines()
    seps = [i for i, line in enumerate(lines) if line.startswith("---")]
    assert len(seps) == 3, f"expected a header rule, a header and a closing rule in:\n{table}"
    header = _cells(lines[seps[0] + 1])
    rows = [dict(zip(header, _cells(line))) for line in lines[seps[1] + 1:seps[2]]]
    return header, rows, lines[seps[2] + 1]


def _names(prof):
    return [e.name for e in prof.function_events]


def _by_name(prof):
    """Events by name (for programs where each name occurs once)."""
    events = {}
    for e in prof.function_events:
        assert e.name not in events, f"{e.name} occurs twice"
        events[e.name] = e
    return events


def _children(prof, parent):
    return [e for e in prof.function_events if e.cpu_parent is parent]


def _f32(*shape, requires_grad=False):
    n = int(np.prod(shape))
    values = np.linspace(-1.0, 1.0, n, dtype=np.float32).reshape(shape)
    return tg.tensor(values, requires_grad=requires_grad)


class Sq(tg.autograd.Function):
    """x * x + 1, with a backward written in Tensor operations (2 * x * g)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x + 1

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def _nested_profile(**options):
    """A profile with every kind of nesting: a record_function block, a custom Function's
    forward and backward, and ops run inside backward under create_graph=True."""
    x = _f32(4, 5)
    w = _f32(5, 3, requires_grad=True)
    with profiler.profile(**options) as prof:
        with profiler.record_function("outer"):
            h = tg.tanh(x @ w)
        y = Sq.apply(h).sum()
        (gw,) = tg.autograd.grad(y, w, create_graph=True)
        gw.sum().backward()
    return prof


# ------------------------------------------------------------------------------ what is recorded

def test_every_forward_op_and_backward_node_is_an_event():
    """x @ w, tanh, sum and the backward through them: one event each, in execution order,
    named as the brief (and PyTorch's aten names, with tracegrad:: in place of aten::) say."""
    x, w = _f32(4, 5), _f32(5, 3, requires_grad=True)
    with profiler.profile() as prof:
        y = tg.tanh(x @ w).sum()
        y.backward()
    assert _names(prof) == ["tracegrad::mm", "tracegrad::tanh", "tracegrad::sum",
                            "SumBackward0", "TanhBackward0", "MmBackward0", ACC]
    assert all(e.cpu_parent is None for e in prof.function_events)


def test_counts_per_name():
    """Repeated ops and nodes are counted: two muls, two MulBackward0, one accumulation per
    leaf (w's two gradients are summed before its single AccumulateGrad, as in PyTorch)."""
    x, w = _f32(4, 3, requires_grad=True), _f32(4, 3, requires_grad=True)
    with profiler.profile() as prof:
        ((x * w) * w).sum().backward()
    counts = {row.key: row.count for row in prof.key_averages()}
    assert counts == {"tracegrad::mul": 2, "tracegrad::sum": 1, "SumBackward0": 1,
                      "MulBackward0": 2, ACC: 2}
    _, rows, _ = _parse(prof.key_averages().table())
    assert {r["Name"]: int(r["# of Calls"]) for r in rows} == counts
    assert collections.Counter(_names(prof)) == counts


def test_record_function_block_is_the_parent_of_its_ops():
    """Ops run inside ``record_function("outer")`` are its children; it is top level."""
    a = _f32(4, 3)
    with profiler.profile() as prof:
        with profiler.record_function("outer"):
            b = a * 2
            tg.exp(b)
        a + 1
    ev = _by_name(prof)
    assert ev["outer"].cpu_parent is None
    assert [e.name for e in _children(prof, ev["outer"])] == ["tracegrad::mul", "tracegrad::exp"]
    assert ev["tracegrad::add"].cpu_parent is None


def test_record_function_as_decorator_and_without_profile():
    """As a decorator each call is one event; with no profile running it does nothing."""
    @profiler.record_function("step")
    def step(t):
        return t * 2

    a = _f32(2)
    np.testing.assert_array_equal(step(a).numpy(), a.numpy() * 2)  # no profile: plain call
    assert dispatch.observer is None
    with profiler.profile() as prof:
        step(a)
        step(a)
    steps = [e for e in prof.function_events if e.name == "step"]
    assert len(steps) == 2
    assert [[c.name for c in _children(prof, s)] for s in steps] == [["tracegrad::mul"]] * 2


def test_custom_function_forward_and_backward_events_nest_their_ops():
    """A custom Function is an event named after its class (PyTorch records ``Sq``), its
    forward's ops (x * x + 1) its children; its backward node ``SqBackward`` has the ops of
    the user's backward (2 * x * g) as children."""
    x = _f32(4, 3, requires_grad=True)
    with profiler.profile() as prof:
        Sq.apply(x).sum().backward()
    sq = [e for e in prof.function_events if e.name == "Sq"]
    back = [e for e in prof.function_events if e.name == "SqBackward"]
    assert len(sq) == 1 and len(back) == 1
    assert [e.name for e in _children(prof, sq[0])] == ["tracegrad::mul", "tracegrad::add"]
    assert [e.name for e in _children(prof, back[0])] == ["tracegrad::mul", "tracegrad::mul"]
    assert sq[0].cpu_parent is None and back[0].cpu_parent is None


def test_ops_inside_backward_under_create_graph_are_children_of_the_node():
    """With create_graph=True the vjp of x * w runs as Tensor ops (g * w, g * x): two muls,
    both children of MulBackward0."""
    x, w = _f32(4, 3, requires_grad=True), _f32(4, 3, requires_grad=True)
    with profiler.profile() as prof:
        tg.autograd.grad((x * w).sum(), [x, w], create_graph=True)
    (node,) = [e for e in prof.function_events if e.name == "MulBackward0"]
    assert [e.name for e in _children(prof, node)] == ["tracegrad::mul", "tracegrad::mul"]
    forward_mul = prof.function_events[0]
    assert forward_mul.name == "tracegrad::mul" and forward_mul.cpu_parent is None


def test_time_accounting():
    """Totals are non-negative; self time = total - the children's totals; the self times
    add up to the top-level totals, to ``prof.self_cpu_time_total`` and to the table's
    'Self CPU time total' line."""
    prof = _nested_profile()
    events = prof.function_events
    assert any(_children(prof, e) for e in events)  # the program really nests
    for e in events:
        kids = _children(prof, e)
        assert e.cpu_time_total >= 0, e
        assert e.self_cpu_time_total == pytest.approx(
            e.cpu_time_total - sum(c.cpu_time_total for c in kids), abs=1e-6), e
        assert e.self_cpu_time_total >= -1e-6, e  # the children fit inside the parent
    total_self = sum(e.self_cpu_time_total for e in events)
    top = sum(e.cpu_time_total for e in events if e.cpu_parent is None)
    assert total_self == pytest.approx(top, rel=1e-9, abs=1e-6)
    assert prof.self_cpu_time_total == pytest.approx(total_self, rel=1e-12)
    assert _parse(str(prof))[2] == f"Self CPU time total: {_fmt_time(total_self)}"
    averages = prof.key_averages()
    averaged_self = sum(r.self_cpu_time_total for r in averages)
    assert averaged_self == pytest.approx(total_self, rel=1e-9, abs=1e-6)
    assert _parse(averages.table())[2] == f"Self CPU time total: {_fmt_time(averaged_self)}"


def test_children_lie_inside_the_parent_time_range():
    """PyTorch's FunctionEvent API: ``time_range`` (start, end, elapsed_us()) and
    ``cpu_children``; each child's range lies inside its parent's."""
    prof = _nested_profile()
    for e in prof.function_events:
        assert e.time_range.elapsed_us() == pytest.approx(e.cpu_time_total, abs=1e-3)
        assert [c.id for c in e.cpu_children] == [c.id for c in _children(prof, e)]
        for c in e.cpu_children:
            assert e.time_range.start <= c.time_range.start <= c.time_range.end <= e.time_range.end


def test_tensor_factories_are_recorded():
    """Creating a tensor is an operation too: PyTorch records ``aten::zeros`` (48 B for a
    float32 (4, 3)) and ``aten::ones_like``."""
    a = _f32(4, 3)
    with profiler.profile(profile_memory=True) as prof:
        tg.zeros(4, 3)
        tg.ones_like(a)
    by_name = {e.name: e.cpu_memory_usage for e in prof.function_events if e.cpu_parent is None}
    assert by_name == {"tracegrad::zeros": 48, "tracegrad::ones_like": 48}


# ------------------------------------------------------------------------------ record_shapes

SHAPE_CASES = {
    "matmul": (lambda x, w, a: x @ w, "tracegrad::mm", [[4, 5], [5, 3]]),
    "tanh": (lambda x, w, a: tg.tanh(a), "tracegrad::tanh", [[4, 3]]),
    "mul_number": (lambda x, w, a: a * 2, "tracegrad::mul", [[4, 3], []]),
    "add_float": (lambda x, w, a: a + 2.5, "tracegrad::add", [[4, 3], []]),
    "mul_tensor": (lambda x, w, a: a * a, "tracegrad::mul", [[4, 3], [4, 3]]),
    "sum_dim": (lambda x, w, a: a.sum(0), "tracegrad::sum", [[4, 3], [], [], []]),  # aten::sum.dim_IntList
}


@pytest.mark.parametrize("case", SHAPE_CASES)
def test_record_shapes_lists_input_shapes_like_pytorch(case):
    """Input shapes are lists of lists of ints; a number operand is ``[]``."""
    fn, name, shapes = SHAPE_CASES[case]
    x, w, a = _f32(4, 5), _f32(5, 3), _f32(4, 3)
    with profiler.profile(record_shapes=True) as prof:
        fn(x, w, a)
    (event,) = prof.function_events
    assert event.name == name
    assert event.input_shapes == shapes
    assert type(event.input_shapes) is list and all(type(s) is list for s in event.input_shapes)
    header, rows, _ = _parse(prof.table())
    assert header[-1] == "Input Shapes"
    assert rows[0]["Input Shapes"] == str(shapes)


def test_number_arguments_are_empty_shapes_for_every_op():
    """PyTorch lists every argument: ``a.transpose(0, 1)`` records ``[[4, 3], [], []]``
    (the two dims are numbers, so ``[]`` each)."""
    a = _f32(4, 3)
    with profiler.profile(record_shapes=True) as prof:
        a.transpose(0, 1)
    (event,) = prof.function_events
    assert event.input_shapes == [[4, 3], [], []]


def test_without_record_shapes_there_is_no_shapes_column():
    a = _f32(4, 3)
    with profiler.profile() as prof:
        a * 2
    assert not prof.function_events[0].input_shapes
    assert "Input Shapes" not in str(prof)
    assert "Input Shapes" not in prof.key_averages().table()


def test_group_by_input_shape_splits_rows():
    """Two mul calls on (4, 3) and one on (2, 2): one row of 3 calls, or two rows of 2 and
    1 calls with their shapes when grouping by input shape."""
    a, b = _f32(4, 3), _f32(2, 2)
    with profiler.profile(record_shapes=True) as prof:
        a * 2
        a * 3
        b * 2
    assert [(r.key, r.count) for r in prof.key_averages()] == [("tracegrad::mul", 3)]
    grouped = prof.key_averages(group_by_input_shape=True)
    assert [(r.key, r.count, r.input_shapes) for r in grouped] == [
        ("tracegrad::mul", 2, [[4, 3], []]), ("tracegrad::mul", 1, [[2, 2], []])]
    _, rows, _ = _parse(grouped.table())
    assert [(r["# of Calls"], r["Input Shapes"]) for r in rows] == [
        ("2", "[[4, 3], []]"), ("1", "[[2, 2], []]")]


def test_group_by_input_shape_needs_record_shapes():
    a = _f32(4, 3)
    with profiler.profile() as prof:
        a * 2
    with pytest.raises(RuntimeError, match="record_shapes"):
        prof.key_averages(group_by_input_shape=True)


def test_event_list_key_averages_takes_pytorchs_keyword():
    """``EventList.key_averages`` spells it ``group_by_input_shapes`` in PyTorch (the
    profile's own method says ``group_by_input_shape``)."""
    a = _f32(4, 3)
    with profiler.profile(record_shapes=True) as prof:
        a * 2
    rows = prof.function_events.key_averages(group_by_input_shapes=True)
    assert [r.input_shapes for r in rows] == [[[4, 3], []]]


# ------------------------------------------------------------------------------ profile_memory

MEMORY_CASES = {
    # new result arrays: elements x itemsize
    "add_f32_4x3": (lambda o: o.a + 1, 4 * 3 * 4),
    "matmul_f32_4x5_5x3": (lambda o: o.x @ o.w, 4 * 3 * 4),
    "sum_all_f32": (lambda o: o.a.sum(), 4),
    "sum_dim0_f32": (lambda o: o.a.sum(0), 3 * 4),
    "mul_f64_4x3": (lambda o: o.d * 2, 4 * 3 * 8),
    # views share storage: nothing allocated
    "reshape": (lambda o: o.a.reshape(12), 0),
    "view": (lambda o: o.a.view(3, 4), 0),
    "transpose": (lambda o: o.a.transpose(0, 1), 0),
    "t": (lambda o: o.a.t(), 0),
    "permute": (lambda o: o.a.permute(1, 0), 0),
    "unsqueeze": (lambda o: o.a.unsqueeze(0), 0),
    "slice": (lambda o: o.a[1:], 0),
    "expand": (lambda o: o.a.expand(2, 4, 3), 0),
    # in place: the result is the operand
    "mul_": (lambda o: o.a.mul_(2), 0),
    "add_": (lambda o: o.a.add_(1), 0),
    "iadd": (lambda o: o.a.__iadd__(1), 0),
}


@pytest.mark.parametrize("case", MEMORY_CASES)
def test_profile_memory_counts_new_result_bytes(case):
    """Bytes of the arrays an op newly allocates: a float32 (4, 3) result is 48 B; views
    and in-place ops allocate nothing. Operands are made before the profile starts."""
    fn, nbytes = MEMORY_CASES[case]
    operands = types.SimpleNamespace(a=_f32(4, 3), d=tg.ones(4, 3, dtype=tg.float64),
                                     x=_f32(4, 5), w=_f32(5, 3))
    with profiler.profile(profile_memory=True) as prof:
        fn(operands)
    top = [e for e in prof.function_events if e.cpu_parent is None]
    assert top, "the operation was not recorded"
    assert sum(e.cpu_memory_usage for e in top) == nbytes


def test_memory_of_a_block_includes_its_children():
    """A record_function block's CPU Mem is what its ops allocated (48 B + 48 B); its own
    (self) memory is 0, as in PyTorch."""
    a = _f32(4, 3)
    with profiler.profile(profile_memory=True) as prof, profiler.record_function("outer"):
        a + 1
        a * 2
    outer = _by_name(prof)["outer"]
    assert outer.cpu_memory_usage == 96
    assert outer.self_cpu_memory_usage == 0
    _, rows, _ = _parse(prof.table())
    assert (rows[0]["Name"], rows[0]["CPU Mem"], rows[0]["Self CPU Mem"]) == ("outer", "96 B", "0 B")


def test_memory_columns_only_with_profile_memory():
    a = _f32(4, 3)
    for flag in (False, True):
        with profiler.profile(profile_memory=flag) as prof:
            a + 1
        for table in (str(prof), prof.key_averages().table()):
            header = _parse(table)[0]
            assert ("CPU Mem" in header) is flag
            assert ("Self CPU Mem" in header) is flag


def test_memory_sizes_are_formatted_in_binary_units():
    """B below 1024, then KB and MB with two decimals (PyTorch's ``_format_memory``)."""
    cases = [((4, 3), tg.float32), ((511,), tg.float16), ((512,), tg.float16),
             ((24, 16), tg.float32), ((512, 512), tg.float32), ((3, 512, 512), tg.float32)]
    item = {tg.float32: 4, tg.float16: 2}
    operands = [tg.ones(*shape, dtype=dtype) for shape, dtype in cases]
    with profiler.profile(profile_memory=True) as prof:
        for t in operands:
            t + 1
    expected = [int(np.prod(shape)) * item[dtype] for shape, dtype in cases]
    assert [e.cpu_memory_usage for e in prof.function_events] == expected
    _, rows, _ = _parse(prof.table())
    cells = [r["CPU Mem"] for r in rows]
    assert cells == [_fmt_mem(n) for n in expected]
    assert cells == ["48 B", "1022 B", "1.00 KB", "1.50 KB", "1.00 MB", "3.00 MB"]


# ------------------------------------------------------------------------------ the table

FULL_HEADER = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
               "CPU Mem", "Self CPU Mem", "# of Calls", "Input Shapes"]


@pytest.mark.parametrize("options", [{}, {"record_shapes": True}, {"profile_memory": True},
                                     {"record_shapes": True, "profile_memory": True}],
                         ids=["plain", "shapes", "memory", "shapes+memory"])
def test_table_columns_in_pytorch_order(options):
    """The columns of PyTorch's ``_build_table``, memory columns before '# of Calls',
    'Input Shapes' after it."""
    x, w = _f32(4, 5), _f32(5, 3, requires_grad=True)
    with profiler.profile(**options) as prof:
        tg.tanh(x @ w).sum().backward()
    expected = [c for c in FULL_HEADER
                if (c not in ("CPU Mem", "Self CPU Mem") or options.get("profile_memory"))
                and (c != "Input Shapes" or options.get("record_shapes"))]
    assert _parse(str(prof))[0] == expected


def _sortable_profile():
    x, w = _f32(4, 3, requires_grad=True), _f32(4, 3, requires_grad=True)
    big = _f32(64, 64)
    with profiler.profile(profile_memory=True) as prof:
        for _ in range(3):
            big + 1
        with profiler.record_function("outer"):
            y = (x * w * w).sum()
        y.backward()
    return prof


@pytest.mark.parametrize("key", SORT_KEYS)
def test_sort_by_sorts_descending(key):
    prof = _sortable_profile()
    rows = {r.key: r for r in prof.key_averages()}
    _, table_rows, _ = _parse(prof.key_averages().table(sort_by=key))
    names = [r["Name"] for r in table_rows]
    assert sorted(names) == sorted(rows)  # every row, once
    values = [getattr(rows[n], key) for n in names]
    assert values == sorted(values, reverse=True)


def test_sort_by_unknown_key_raises_attribute_error():
    prof = _sortable_profile()
    with pytest.raises(AttributeError, match="no_such_key"):
        prof.key_averages().table(sort_by="no_such_key")


@pytest.mark.parametrize("key", ["cuda_time_total", "self_cuda_time_total", "device_time_total"])
def test_sort_by_device_keys_like_pytorch_on_cpu(key):
    """PyTorch's own recipe sorts by ``cuda_time_total``; on a CPU-only run every device
    time is 0, so (sorting being stable) the table keeps the registration order."""
    prof = _sortable_profile()
    assert prof.key_averages().table(sort_by=key) == prof.key_averages().table()


def test_row_limit():
    prof = _sortable_profile()
    n = len(prof.key_averages())
    assert n > 3
    assert len(_parse(prof.key_averages().table(row_limit=2))[1]) == 2
    assert len(_parse(prof.key_averages().table(row_limit=n + 5))[1]) == n
    limited = _parse(prof.key_averages().table(sort_by="count", row_limit=1))[1]
    assert [(r["Name"], r["# of Calls"]) for r in limited] == [("tracegrad::add", "3")]


@pytest.mark.parametrize("source", ["function_events", "key_averages"])
def test_top_level_events_only(source):
    """Only rows without a parent: the block and the op outside it, both for the events
    and for ``key_averages()`` (whose rows keep their first event's parent in PyTorch)."""
    a = _f32(4, 3)
    with profiler.profile() as prof:
        with profiler.record_function("outer"):
            a * 2
        a + 1
    events = prof.function_events if source == "function_events" else prof.key_averages()
    table = events.table(top_level_events_only=True)
    intro, rest = table.split("This report only display top-level ops statistics\n", 1)
    assert intro.strip("=\n") == ""
    assert [r["Name"] for r in _parse(rest)[1]] == ["outer", "tracegrad::add"]


@pytest.mark.parametrize("width, length, cut", [(55, 51, False), (55, 52, True), (55, 70, True),
                                                (20, 16, False), (20, 17, True)])
def test_long_names_are_cut(width, length, cut):
    """PyTorch's rule: a name of ``max_name_column_width - 3`` characters or more is cut to
    that many characters followed by '...'; the column is ``min(longest + 4, width)`` wide."""
    name = ("block_" + "x" * length)[:length]
    with profiler.profile() as prof, profiler.record_function(name):
        pass
    table = prof.table(max_name_column_width=width)
    cell = _parse(table)[1][0]["Name"]
    assert cell == (name[:width - 3] + "..." if cut else name)
    assert table.splitlines()[0].split("  ")[0] == "-" * min(length + 4, width)


def test_time_cells_follow_pytorchs_format():
    """Every time cell is its value formatted by PyTorch's rule (us below 1 ms, ms below
    1 s); a block sleeping 2 ms shows milliseconds; percentages are of the self total."""
    a = _f32(4, 3)
    with profiler.profile() as prof, profiler.record_function("sleepy"):
        time.sleep(0.002)
        a * 2
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    _, rows, last = _parse(events.table())
    for e, row in zip(events, rows):
        assert row["Name"] == e.key
        for column, attr in TIME_COLUMNS.items():
            assert row[column] == _fmt_time(getattr(e, attr)), (e.key, column)
        assert row["Self CPU %"] == f"{e.self_cpu_time_total * 100 / total:.2f}%"
        assert row["CPU total %"] == f"{e.cpu_time_total * 100 / total:.2f}%"
    assert rows[0]["Name"] == "sleepy" and rows[0]["CPU total"].endswith("ms")
    assert last.startswith("Self CPU time total: ") and last.endswith("ms")


@pytest.mark.parametrize("unit, scale", [("s", 1e6), ("ms", 1e3), ("us", 1.0)])
def test_time_unit_option(unit, scale):
    prof = _sortable_profile()
    events = prof.key_averages()
    _, rows, last = _parse(events.table(time_unit=unit))
    for e, row in zip(events, rows):
        for column, attr in TIME_COLUMNS.items():
            assert row[column] == f"{getattr(e, attr) / scale:.3f}{unit}"
    total = sum(e.self_cpu_time_total for e in events)
    assert last == f"Self CPU time total: {total / scale:.3f}{unit}"


def test_print_prof_is_the_event_table(capsys):
    x, w = _f32(4, 5), _f32(5, 3, requires_grad=True)
    with profiler.profile() as prof:
        tg.tanh(x @ w).sum().backward()
    print(prof)
    out = capsys.readouterr().out
    assert out == str(prof.function_events) + "\n"
    assert str(prof) == prof.function_events.table()
    assert [r["Name"] for r in _parse(out)[1]] == _names(prof)


# ------------------------------------------------------------------------------ Chrome trace

def _assert_nested(trace_events):
    """Per (pid, tid), any two complete events are disjoint or one contains the other."""
    eps = 1e-3  # us; timestamps are nanoseconds divided by 1000
    by_thread = collections.defaultdict(list)
    for e in trace_events:
        by_thread[e["pid"], e["tid"]].append(e)
    for events in by_thread.values():
        open_ends = []
        for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
            while open_ends and open_ends[-1] <= e["ts"] + eps:
                open_ends.pop()
            end = e["ts"] + e["dur"]
            if open_ends:
                assert end <= open_ends[-1] + eps, f"{e['name']} overlaps its enclosing event"
            open_ends.append(end)


def test_export_chrome_trace(tmp_path):
    prof = _nested_profile(record_shapes=True)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    data = json.loads(path.read_text())
    assert isinstance(data["traceEvents"], list)
    complete = [e for e in data["traceEvents"] if e.get("ph") == "X"]
    for e in complete:
        assert {"name", "ts", "dur", "pid", "tid"} <= set(e), e
        assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0
    assert collections.Counter(e["name"] for e in complete) == collections.Counter(_names(prof))
    assert {e["tid"] for e in complete} == {e.thread for e in prof.function_events}
    _assert_nested(complete)
    (outer,) = [e for e in complete if e["name"] == "outer"]
    first_mm = min((e for e in complete if e["name"] == "tracegrad::mm"), key=lambda e: e["ts"])
    assert outer["ts"] <= first_mm["ts"]  # x @ w ran inside the block
    assert first_mm["ts"] + first_mm["dur"] <= outer["ts"] + outer["dur"] + 1e-3


def test_profile_name_writes_the_trace_on_exit(tmp_path):
    """``profile_name`` (the study notes' argument) writes the same file as
    ``export_chrome_trace`` when the block ends, not before."""
    path = tmp_path / "named.json"
    a = _f32(4, 3)
    with profiler.profile(profile_name=str(path)) as prof:
        a * 2
        assert not path.exists()
    assert path.exists()
    other = tmp_path / "exported.json"
    prof.export_chrome_trace(str(other))
    assert json.loads(path.read_text()) == json.loads(other.read_text())
    assert [e["name"] for e in json.loads(path.read_text())["traceEvents"] if e["ph"] == "X"] == \
        ["tracegrad::mul"]


# ------------------------------------------------------------------------------ errors and lifetime

READERS = {
    "key_averages": lambda p: p.key_averages(),
    "table": lambda p: p.table(),
    "str": str,
    "events": lambda p: p.events(),
    "total_average": lambda p: p.total_average(),
    "self_cpu_time_total": lambda p: p.self_cpu_time_total,
    "export_chrome_trace": lambda p: p.export_chrome_trace(os.devnull),
}


@pytest.mark.parametrize("reader", READERS)
def test_reading_results_inside_the_block_raises(reader):
    a = _f32(4, 3)
    with profiler.profile() as prof:
        a * 2
        with pytest.raises(RuntimeError, match=NOT_FINISHED):
            READERS[reader](prof)
    READERS[reader](prof)  # fine once the block has ended


@pytest.mark.parametrize("reader", READERS)
def test_enabled_false_records_nothing(reader):
    a = _f32(4, 3)
    with profiler.profile(enabled=False) as prof:
        assert dispatch.observer is None
        b = a * 2
    np.testing.assert_array_equal(b.numpy(), a.numpy() * 2)
    with pytest.raises(RuntimeError, match="enabled=False"):
        READERS[reader](prof)


def test_second_profile_while_one_is_active_raises():
    """One profile at a time: the second raises RuntimeError, the first keeps recording
    (ops after the failed start included) and ends normally."""
    a = _f32(4, 3)
    with profiler.profile() as prof:
        a * 2
        with pytest.raises(RuntimeError, match="already"), profiler.profile():
            pass
        with pytest.raises(RuntimeError, match="already"), tg.profiler.profile():
            pass
        a + 1
    assert dispatch.observer is None
    assert _names(prof) == ["tracegrad::mul", "tracegrad::add"]


@pytest.mark.parametrize("door", ["autograd.profiler", "profiler"])
@pytest.mark.parametrize("flag", ["with_flops", "with_modules"])
def test_unsupported_options_raise_not_implemented(door, flag):
    make = profiler.profile if door == "autograd.profiler" else tg.profiler.profile
    with pytest.raises(NotImplementedError, match=flag):
        make(**{flag: True})
    assert dispatch.observer is None


@pytest.mark.parametrize("door", ["autograd.profiler", "profiler"])
def test_unknown_keyword_raises_type_error(door):
    make = profiler.profile if door == "autograd.profiler" else tg.profiler.profile
    with pytest.raises(TypeError, match="record_shape"):
        make(record_shape=True)


def test_observer_is_removed_when_the_block_raises():
    a = _f32(4, 3)
    with pytest.raises(ValueError, match="boom"), profiler.profile() as prof:
        a * 2
        raise ValueError("boom")
    assert dispatch.observer is None
    a + 1  # not recorded
    assert _names(prof) == ["tracegrad::mul"]
    with profiler.profile() as again:  # a new profile can start
        a - 1
    assert _names(again) == ["tracegrad::sub"]


def test_observer_is_removed_after_backward_raises():
    """An error inside backward (a freed graph) leaves no observer behind either."""
    x = _f32(3, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"), \
            profiler.profile():
        y.backward()
    assert dispatch.observer is None


# ------------------------------------------------------------------------------ threads

def test_ops_in_another_thread_are_recorded_with_its_id_and_nest_per_thread():
    """A worker opens a block; while it is open the main thread opens its own block and
    runs an op; then the worker runs its op. Each op's parent is its own thread's block,
    and the two blocks are both top level, with different thread ids."""
    a = _f32(4, 3)
    opened, main_done = threading.Event(), threading.Event()
    ids = {}

    def worker():
        ids["worker"] = (threading.get_ident(), threading.get_native_id())
        with profiler.record_function("worker_block"):
            opened.set()
            main_done.wait(10)
            a * 3

    with profiler.profile() as prof:
        thread = threading.Thread(target=worker)
        thread.start()
        assert opened.wait(10)
        with profiler.record_function("main_block"):
            a + 1
        main_done.set()
        thread.join(10)
    ev = _by_name(prof)
    assert ev["tracegrad::mul"].cpu_parent is ev["worker_block"]
    assert ev["tracegrad::add"].cpu_parent is ev["main_block"]
    assert ev["worker_block"].cpu_parent is None and ev["main_block"].cpu_parent is None
    assert ev["worker_block"].thread == ev["tracegrad::mul"].thread
    assert ev["main_block"].thread == ev["tracegrad::add"].thread
    assert ev["worker_block"].thread != ev["main_block"].thread
    assert ev["worker_block"].thread in ids["worker"]
    assert ev["main_block"].thread in (threading.get_ident(), threading.get_native_id())


# ------------------------------------------------------------------------------ tracegrad.profiler

def test_torch_profiler_on_trace_ready_and_step():
    """``on_trace_ready(prof)`` is called once, when the block ends, with results readable;
    ``step()`` counts steps in ``step_num``."""
    from tracegrad.profiler import ProfilerActivity

    seen = []

    def ready(p):
        seen.append((p, [row.key for row in p.key_averages()]))

    a = _f32(4, 3)
    with tg.profiler.profile(activities=[ProfilerActivity.CPU], on_trace_ready=ready) as prof:
        for _ in range(3):
            a * 2
            prof.step()
        assert seen == []
    assert seen == [(prof, ["tracegrad::mul"])]
    assert prof.step_num == 3
    assert dispatch.observer is None


def test_torch_profiler_start_stop_and_record_function():
    a = _f32(4, 3)
    prof = tg.profiler.profile(record_shapes=True)
    prof.start()
    with tg.profiler.record_function("work"):
        a * 2
    prof.stop()
    assert dispatch.observer is None
    assert _names(prof) == ["work", "tracegrad::mul"]
    assert prof.function_events[1].input_shapes == [[4, 3], []]


def test_torch_profiler_schedule_is_not_implemented():
    with pytest.raises(NotImplementedError, match="schedule"):
        tg.profiler.profile(schedule=lambda step: None)


# ------------------------------------------------------------------------------ the study notes

class TinyModel:
    """A weight and a forward: tanh(x @ w).sum() (there is no nn.Module yet)."""

    def __init__(self):
        self.weight = _f32(5, 3, requires_grad=True)

    def __call__(self, x):
        return tg.tanh(x @ self.weight).sum()


def test_seed_snippet_prints_a_table(capsys):
    """The notes' snippet, verbatim but for ``torch`` -> ``tg``: runs without warnings
    and prints the event table."""
    torch = tg
    model, x = TinyModel(), _f32(4, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.autograd.profiler.profile(
            use_cuda=False, profile_memory=False, record_shapes=False, profile_name=None) as prof:
            y = model(x)
            y.backward()
        print(prof)
    out = capsys.readouterr().out
    header, rows, last = _parse(out)
    assert header[0] == "Name" and header[-1] == "# of Calls"
    assert [r["Name"] for r in rows] == ["tracegrad::mm", "tracegrad::tanh", "tracegrad::sum",
                                         "SumBackward0", "TanhBackward0", "MmBackward0", ACC]
    assert last.startswith("Self CPU time total: ")
    assert model.weight.grad is not None


# ------------------------------------------------------------------------------ results unchanged

def _program(profiled):
    x = tg.tensor(np.linspace(-1, 1, 12).reshape(4, 3), requires_grad=True)
    w = tg.tensor(np.linspace(0.5, -0.5, 6).reshape(3, 2), requires_grad=True)
    ctx = (profiler.profile(record_shapes=True, profile_memory=True, with_stack=True)
           if profiled else contextlib.nullcontext())
    with ctx:
        y = (Sq.apply(tg.tanh(x @ w)) * 2).sum()
        (gx,) = tg.autograd.grad(y, x, create_graph=True)
        (gx ** 2).sum().backward()
    return [t.detach().numpy() for t in (y, gx, x.grad, w.grad)]


def test_profiling_does_not_change_results():
    """Values, first-order and second-order gradients (through a custom Function) are
    bit-for-bit the same with and without the profiler."""
    plain, profiled = _program(False), _program(True)
    for p, q in zip(plain, profiled):
        np.testing.assert_array_equal(p, q)
    assert dispatch.observer is None


# ------------------------------------------------------------------------------ oracle (PyTorch)

def _both(lib, program, **options):
    with lib.autograd.profiler.profile(**options) as prof:
        program(lib)
    return prof


def _small_graph(lib):
    x = lib.ones(4, 5)
    w = lib.ones(5, 3, requires_grad=True)
    lib.tanh(x @ w).sum().backward()


@pytest.mark.torch
@pytest.mark.parametrize("options", [{}, {"record_shapes": True}, {"profile_memory": True},
                                     {"record_shapes": True, "profile_memory": True}],
                         ids=["plain", "shapes", "memory", "shapes+memory"])
def test_oracle_table_header(options):
    """The column titles of ``print(prof)`` and of ``key_averages().table()`` are PyTorch's,
    in PyTorch's order, for the same profile options."""
    torch = pytest.importorskip("torch")
    mine, theirs = _both(tg, _small_graph, **options), _both(torch, _small_graph, **options)
    assert _parse(str(mine))[0] == _parse(str(theirs))[0]
    assert _parse(mine.key_averages().table())[0] == _parse(theirs.key_averages().table())[0]


@pytest.mark.torch
def test_oracle_event_names():
    """Every tracegrad event name is one PyTorch reports for the same program (with
    ``aten::`` for ``tracegrad::``), the custom Function and its backward node included."""
    torch = pytest.importorskip("torch")

    torch_sq = type("Sq", (torch.autograd.Function,), {"forward": staticmethod(Sq.forward),
                                                        "backward": staticmethod(Sq.backward)})

    def program(lib):
        _small_graph(lib)
        (Sq if lib is tg else torch_sq).apply(lib.ones(4, 3, requires_grad=True)).sum().backward()

    mine = {e.name.replace("tracegrad::", "aten::") for e in _both(tg, program).function_events}
    theirs = {e.name for e in _both(torch, program).function_events}
    assert mine <= theirs, sorted(mine - theirs)


@pytest.mark.torch
@pytest.mark.parametrize("op", [
    lambda L, a, b: L.mm(a, b.t()), lambda L, a, b: L.tanh(a), lambda L, a, b: a * 2,
    lambda L, a, b: a * b, lambda L, a, b: a.pow(2), lambda L, a, b: a.t(),
    lambda L, a, b: a.transpose(0, 1),
], ids=["mm", "tanh", "mul_number", "mul_tensor", "pow_number", "t", "transpose"])
def test_oracle_input_shapes(op):
    """The top-level event's input shapes equal PyTorch's for the same call."""
    torch = pytest.importorskip("torch")
    shapes = []
    for lib in (tg, torch):
        a, b = lib.ones(4, 3), lib.ones(4, 3)
        with lib.autograd.profiler.profile(record_shapes=True) as prof:
            op(lib, a, b)
        shapes.append([e.input_shapes for e in prof.function_events if e.cpu_parent is None][-1])
    assert shapes[0] == shapes[1]


@pytest.mark.torch
@pytest.mark.parametrize("names", [["short", "a" * 60], ["b" * 51, "c" * 52]], ids=["60", "51-52"])
def test_oracle_record_function_only_table_layout(names):
    """With only record_function blocks the tables' header and rule lines are identical
    to PyTorch's character for character, and so are the (cut) name cells."""
    torch = pytest.importorskip("torch")
    tables = []
    for lib in (tg, torch):
        with lib.autograd.profiler.profile() as prof:
            for n in names:
                with lib.autograd.profiler.record_function(n):
                    pass
        tables.append(str(prof))
    mine, theirs = (t.splitlines() for t in tables)
    assert mine[:3] == theirs[:3]
    assert [r["Name"] for r in _parse(tables[0])[1]] == [r["Name"] for r in _parse(tables[1])[1]]
