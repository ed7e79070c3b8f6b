"""torch.utils.benchmark's Timer, Measurement and Compare: timings that are real timings of
the statement (sleeps and call counts), statistics equal to NumPy's on the raw times, and
the printed forms PyTorch prints (the same text for the same times, in the oracle tests)."""
import pickle
import re
import time

import numpy as np
import pytest

import tracegrad as torch
import tracegrad.utils.benchmark as benchmark
from tracegrad.utils.benchmark import Compare, Measurement, TaskSpec, Timer

HEADER = re.compile(r"<tracegrad\.utils\.benchmark\.utils\.common\.Measurement object at 0x[0-9a-f]+>")
SLEEP = 0.002


class Counter:
    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1


def _measurement(raw_times, number=1, **spec):
    return Measurement(number_per_run=number, raw_times=list(raw_times), task_spec=TaskSpec(**{"stmt": "f()", "setup": "pass", **spec}))


# -- timings ------------------------------------------------------------------------------
def test_timeit_runs_the_statement_number_times_after_a_warm_up():
    f = Counter()
    m = Timer("f()", globals={"f": f}).timeit(number=500)
    assert f.calls == 500 + 5  # the warm-up runs number // 100 (at least 2)
    assert m.number_per_run == 500 and len(m.raw_times) == 1
    assert m.times == [m.raw_times[0] / 500] and m.median == m.mean == m.times[0]


def test_timeit_of_a_sleep_takes_at_least_the_sleep():
    m = Timer(f"time.sleep({SLEEP})", setup="import time").timeit(number=5)
    assert SLEEP <= m.median < SLEEP + 0.05
    assert m.raw_times[0] >= 5 * SLEEP


def test_blocked_autorange_times_blocks_until_min_run_time():
    seen = []
    m = Timer(f"time.sleep({SLEEP})", setup="import time").blocked_autorange(
        callback=lambda number, t: seen.append((number, t)), min_run_time=0.05)
    assert SLEEP <= m.median < SLEEP + 0.05
    assert sum(m.raw_times) >= 0.05
    assert seen == [(m.number_per_run, t) for t in m.raw_times]


def test_blocked_autorange_calls_are_the_block_size_search_plus_the_blocks():
    f = Counter()
    m = Timer("f()", globals={"f": f}).blocked_autorange(min_run_time=0.02)
    number = m.number_per_run
    assert number >= 1 and str(number) == "1" + "0" * (len(str(number)) - 1)  # a power of ten
    search = sum(10 ** k for k in range(len(str(number))))  # blocks of 1, 10, ... number
    assert f.calls == search + number * len(m.raw_times)
    # a block of cheap calls lasts long enough that reading the clock is noise
    assert m.raw_times[0] >= 0.02 / 1000


def test_adaptive_autorange_stops_at_max_run_time_when_never_steady():
    m = Timer(f"time.sleep({SLEEP})", setup="import time").adaptive_autorange(threshold=0.0, max_run_time=0.05)
    total = sum(m.raw_times)
    assert 0.05 < total < 0.05 + 2 * m.raw_times[-1] + 0.05
    assert SLEEP <= m.median


def test_adaptive_autorange_stops_once_steady():
    m = Timer("x + 1", globals={"x": 1}).adaptive_autorange(threshold=10.0, min_run_time=0.001)
    assert len(m.raw_times) >= 4 and m.meets_confidence(10.0)


def test_torch_is_tracegrad_in_the_statement_unless_given():
    out = []
    Timer("out.append(torch)", globals={"out": out}).timeit(1)
    assert out[0] is torch
    Timer("out.append(torch)", globals={"out": out, "torch": "mine"}).timeit(1)
    assert out[-1] == "mine"
    m = Timer("torch.ones(3) + 1").timeit(10)
    assert m.median > 0


def test_setup_runs_before_the_statement_and_code_is_dedented():
    out = []
    Timer("""
        out.append(y)
    """, setup="""
        y = 41 + 1
    """, globals={"out": out}).timeit(3)
    assert out == [42] * 5


def test_num_threads_is_set_for_the_run_and_put_back():
    seen = []
    before = torch.get_num_threads()
    m = Timer("seen.append(torch.get_num_threads())", globals={"seen": seen}, num_threads=3).timeit(4)
    assert set(seen) == {3} and torch.get_num_threads() == before
    assert m.num_threads == 3 and repr(m).endswith("4 runs , 3 threads")
    with pytest.raises(ZeroDivisionError):
        Timer("1 / 0", num_threads=2).blocked_autorange()
    assert torch.get_num_threads() == before


def test_refusals():
    t = Timer("pass")
    for call in (t.repeat, t.autorange):
        with pytest.raises(NotImplementedError, match="blocked_autorange"):
            call()
    with pytest.raises(NotImplementedError, match="C\\+\\+"):
        Timer("x", language="c++")
    with pytest.raises(ValueError, match="Invalid language `rust`"):
        Timer("x", language="rust")
    with pytest.raises(ValueError, match="only a `str` stmt"):
        Timer(lambda: 1)
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        Timer("x", global_setup="#include <x>")
    with pytest.raises(NotImplementedError, match="Valgrind"):
        t.collect_callgrind()
    assert Timer("pass", language=benchmark.Language.PYTHON).timeit(1).number_per_run == 1


def test_timer_reads_a_clock_after_the_devices_finish(monkeypatch):
    a = benchmark.timer()
    time.sleep(0.001)
    assert benchmark.timer() - a >= 0.001
    waits = []

    class Device:  # a device with queued work, as CuPy's is
        def synchronize(self):
            waits.append(1)

    monkeypatch.setattr(torch.backend, "loaded", lambda: [Device(), Device()])
    benchmark.timer()
    assert waits == [1, 1]


def test_a_timer_of_ones_own():
    ticks = iter(range(0, 10 ** 6, 7))
    m = Timer("pass", timer=lambda: next(ticks)).timeit(10)
    assert m.raw_times == [7]  # one block: the difference of two clock reads


def test_measurements_pickle_and_compare_equal():
    m = _measurement(RAW, number=4, label="L")
    m.median  # noqa: B018  (statistics cached before pickling)
    back = pickle.loads(pickle.dumps(m))
    assert back == m and back.median == m.median and back.label == "L"
    assert back != _measurement(RAW, number=2, label="L")


# -- Measurement --------------------------------------------------------------------------
RAW = [3.1e-3, 2.9e-3, 3.0e-3, 3.3e-3, 5.0e-3, 2.8e-3, 3.05e-3, 3.2e-3]


def test_statistics_equal_numpys_on_the_per_run_times():
    m = _measurement(RAW, number=4)
    times = np.array(RAW) / 4
    assert m.times == pytest.approx(times.tolist(), rel=1e-15)
    assert m.median == pytest.approx(np.median(times), rel=1e-14)
    assert m.mean == pytest.approx(times.mean(), rel=1e-14)
    p25, p75 = np.percentile(times, [25, 75])
    assert m.iqr == pytest.approx(p75 - p25, rel=1e-12)
    assert m.meets_confidence(0.5) and not m.meets_confidence((p75 - p25) / np.median(times) * 0.99)


def test_significant_figures_from_the_middle_half():
    m = _measurement(RAW, number=4)
    times = np.sort(np.array(RAW) / 4)
    middle = times[len(times) // 4:int(np.ceil(3 * len(times) / 4))]
    ci = max(1.645 * middle.std() / np.sqrt(len(middle)), 25e-9)
    assert m.significant_figures == min(max(int(np.floor(np.log10(np.median(times) / ci))), 1), 4)
    assert _measurement([1.0] * 10).significant_figures == 4  # no spread: all it may claim
    assert _measurement([1.0, 10.0, 20.0, 100.0]).significant_figures == 1


def test_warnings_follow_the_iqr():
    assert not _measurement([1.0, 1.01, 1.02, 1.03]).has_warnings
    mild, gross = _measurement([1.0, 1.0, 1.15, 1.15]), _measurement([1.0, 1.0, 2.0, 2.0])
    assert mild.has_warnings and "system fluctuation" in repr(mild)
    assert gross.has_warnings and "environmental influence" in repr(gross)


def test_task_spec_fields_read_through():
    m = _measurement([1e-3], label="L", sub_label="S", description="D", env="E", num_threads=2)
    assert (m.stmt, m.setup, m.label, m.sub_label, m.description, m.env, m.num_threads) == (
        "f()", "pass", "L", "S", "D", "E", 2)
    assert m.title == "L: S" and m.as_row_name == "S" and m.metadata is None
    assert _measurement([1e-3]).env is None and _measurement([1e-3]).title == "f()"
    with pytest.raises(AttributeError):
        m.nonexistent  # noqa: B018


def test_repr_of_one_block():
    m = Timer("x + 1", globals={"x": torch.ones(3)}).timeit(100)
    lines = repr(m).splitlines()
    assert HEADER.fullmatch(lines[0])
    assert lines[1] == "x + 1"
    assert re.fullmatch(r"  \d+\.\d\d (ns|us|ms|s)", lines[2])
    assert lines[3] == "  1 measurement, 100 runs , 1 thread" and len(lines) == 4


def test_repr_of_many_blocks():
    m = _measurement([2.0e-3, 2.1e-3, 2.2e-3, 2.3e-3, 2.4e-3], number=10, label="add", sub_label="float",
                     description="n=4", setup="y = 1")
    assert repr(m).splitlines()[1:] == [
        "add: float", "n=4", "setup: y = 1",
        "  Median: 220.00 us",
        "  IQR:    20.00 us (210.00 to 230.00)",
        "  5 measurements, 10 runs per measurement, 1 thread"]
    blocked = Timer(f"time.sleep({SLEEP})", globals={"time": time}).blocked_autorange(min_run_time=0.15)
    lines = repr(blocked).splitlines()
    assert re.fullmatch(r"  Median: \d+\.\d\d ms", lines[2])
    assert re.fullmatch(r"  IQR:    \d+\.\d\d ms \(\d+\.\d\d to \d+\.\d\d\)", lines[3])
    assert re.fullmatch(r"  \d+ measurements, \d+ runs per measurement, 1 thread", lines[4])
    assert len(lines) == (7 if blocked.has_warnings else 5)  # a noisy machine's warning: 2 lines


def test_merge_pools_replicates_per_run():
    a, b = _measurement([2.0, 4.0], number=2), _measurement([9.0], number=3)
    other = _measurement([1.0], stmt="g()")
    merged = Measurement.merge([a, b, other])
    assert [m.raw_times for m in merged] == [[1.0, 2.0, 3.0], [1.0]]
    assert merged[0].number_per_run == 1 and merged[0].task_spec == a.task_spec


def test_units_and_rounding_helpers():
    assert [benchmark.select_unit(t)[0] for t in (5e-9, 5e-6, 5e-3, 5.0, 5000.0)] == ["ns", "us", "ms", "s", "s"]
    assert benchmark.unit_to_english("us") == "microsecond"
    assert benchmark.trim_sigfig(3.14159, 2) == pytest.approx(3.1)
    assert benchmark.trim_sigfig(123456.0, 3) == pytest.approx(123000.0)


# -- Compare ------------------------------------------------------------------------------
def _grid():
    out = []
    for sub, base in (("add", 10e-6), ("mul", 20e-6)):
        for j, desc in enumerate(("n=1", "n=64")):
            out.append(_measurement([base * (j + 1)] * 5, label="ops", sub_label=sub, description=desc))
    return out


def test_compare_table():
    text = str(Compare(_grid()))
    assert text == (
        "[---------- ops ----------]\n"
        "           |  n=1   |  n=64\n"
        "1 threads: ----------------\n"
        "      add  |  10.0  |  20.0\n"
        "      mul  |  20.0  |  40.0\n"
        "\n"
        "Times are in microseconds (us).\n")


def test_compare_of_real_timings_names_every_row_column_and_label(capsys):
    results = []
    for n in (1, 100):
        x = torch.ones(n)
        for sub, stmt in (("add", "x + 1"), ("mul", "x * 2")):
            results.append(Timer(stmt, globals={"x": x}, label="elementwise", sub_label=sub,
                                 description=f"n={n}").blocked_autorange(min_run_time=0.01))
    results.append(Timer("sum(range(10))", label="python").timeit(1000))
    Compare(results).print()
    text = capsys.readouterr().out
    assert "[" in text and " elementwise " in text and " python " in text
    for word in ("add", "mul", "n=1", "n=100", "sum(range(10))", "1 threads: "):
        assert word in text
    unit = benchmark.select_unit(min(m.median for m in results[:4]))
    assert f"Times are in {benchmark.unit_to_english(unit[0])}s ({unit[0]})." in text
    add1 = f"{results[0].median / unit[1]:.1f}"
    assert re.search(rf"add\s+\|\s+{re.escape(add1)}\s", text)


def test_compare_options():
    noisy = [_measurement([1e-3, 1e-3, 2e-3, 2e-3], label="L", sub_label="a", description="d"),
             _measurement([3e-3] * 4, label="L", sub_label="b", description="d")]
    c = Compare(noisy)
    c.trim_significant_figures()
    assert "      a  |  2\n" in str(c)  # 1.5 ms kept to its one trusted digit
    c.highlight_warnings()
    text = str(c)
    assert "(! 67%)" in text and "Measurement has high variance" in text
    c.colorize()
    assert "\033[92m" in str(c) and "\033[" not in str(Compare(noisy))
    c.colorize(rowwise=True)
    assert "\033[92m" in str(c)


def test_compare_groups_threads_envs_and_extends():
    ms = [_measurement([1e-6] * 3, label="L", sub_label="s", description="d", num_threads=t, env=e)
          for t in (1, 4) for e in ("A", "B")]
    c = Compare(ms[:2])
    c.extend_results(ms[2:])
    lines = str(c).splitlines()
    assert "1 threads: " in lines[2] and any(line.startswith("4 threads: ") for line in lines)
    assert sum("(A)" in line for line in lines) == 2 and sum("(B)" in line for line in lines) == 2
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        Compare([1])


def test_missing_cells_are_blank():
    ms = [_measurement([1e-3], label="L", sub_label="a", description="x"),
          _measurement([2e-3], label="L", sub_label="b", description="y")]
    rows = str(Compare(ms)).splitlines()
    assert rows[3].rstrip().endswith("1.0  |") and rows[4].split("|")[1].strip() == ""


# -- oracle: PyTorch prints the same text for the same times ------------------------------
def _both(lib_a, lib_b, specs):
    return ([lib.Measurement(n, list(t), lib.TaskSpec(**kw)) for n, t, kw in specs] for lib in (lib_a, lib_b))


def _specs():
    rng = np.random.default_rng(0)
    specs = []
    for label in ("ops", None):
        for threads in (1, 4):
            for sub in ("add", None):
                for desc in ("n=1", "n=64"):
                    base = 10 ** rng.uniform(-8, -1)
                    spread = rng.choice([0.01, 0.3, 1.0])
                    times = base * (1 + rng.uniform(0, spread, size=int(rng.integers(1, 30))))
                    specs.append((int(rng.integers(1, 100)), times.tolist(),
                                  {"stmt": "x+1", "setup": "pass", "label": label, "sub_label": sub,
                                   "description": desc, "num_threads": threads}))
    for env in ("A", "B"):
        specs.append((10, (1e-5 * (1 + 0.1 * rng.random(7))).tolist(),
                      {"stmt": "y", "setup": "pass", "label": "envs", "description": "d", "env": env}))
    return specs


@pytest.mark.torch
@pytest.mark.parametrize("opts", [(), ("trim",), ("color",), ("rows",), ("trim", "color", "warn")])
def test_compare_prints_as_torch(opts):
    import torch.utils.benchmark as tb
    tables = []
    for results in _both(tb, benchmark, _specs()):
        c = (tb if isinstance(results[0], tb.Measurement) else benchmark).Compare(results)
        if "trim" in opts:
            c.trim_significant_figures()
        if "color" in opts or "rows" in opts:
            c.colorize(rowwise="rows" in opts)
        if "warn" in opts:
            c.highlight_warnings()
        tables.append(str(c))
    assert tables[1] == tables[0]


@pytest.mark.torch
def test_measurements_print_as_torch():
    import torch.utils.benchmark as tb
    ours, theirs = _both(benchmark, tb, _specs())
    for a, b in zip(ours, theirs):
        assert repr(a).splitlines()[1:] == repr(b).splitlines()[1:]
        assert (a.significant_figures, a.has_warnings) == (b.significant_figures, b.has_warnings)
        assert a.median == pytest.approx(b.median, rel=1e-12) and a.iqr == pytest.approx(b.iqr, rel=1e-9, abs=1e-18)


@pytest.mark.torch
def test_real_timings_print_in_torchs_shape():
    import torch as real
    import torch.utils.benchmark as tb

    def shape(m):
        lines = repr(m).splitlines()[1:5]  # not the warning a noisy machine may add
        return [re.sub(r"\d+(\.\d+)?", "N", re.sub(r" (ns|us|ms|s)\b", " U", line)) for line in lines]

    for make in (lambda lib, t: lib.Timer("x + 1", globals={"x": t.ones(3)}).timeit(100),
                 lambda lib, t: lib.Timer("time.sleep(0.002)", "import time").blocked_autorange(min_run_time=0.1)):
        assert shape(make(benchmark, torch)) == shape(make(tb, real))
