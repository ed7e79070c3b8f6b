"""``Compare``: many measurements as one table per label, as ``torch.utils.benchmark``.

Replicates of a task are pooled first. In a table, rows are grouped by thread count and
named by sub-label (else stmt), with the env in parentheses when the envs differ; columns
are descriptions; each cell is the median in the one unit that suits the table's fastest
task. ``trim_significant_figures`` rounds each cell to the digits its spread supports,
``colorize`` marks each cell against the best of its column (or row), and
``highlight_warnings`` appends the IQR of noisy cells.
"""
import collections
import enum
import math

from . import common

__all__ = ["Colorize", "Compare"]

BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _color(cell, value, best):
    """The cell painted by how far ``value`` is from ``best`` (plain when in between)."""
    if value <= best * 1.01 or value <= best + 100e-9:
        return BEST + BOLD + cell + TERMINATE * 2
    if value <= best * 1.1:
        return GOOD + BOLD + cell + TERMINATE * 2
    if value >= best * 5:
        return VERY_BAD + BOLD + cell + TERMINATE * 2
    if value >= best * 2:
        return BAD + cell + TERMINATE * 2
    return cell


class _Column:
    """How one column writes its numbers: one width and number of decimals for all cells."""

    def __init__(self, results, scale, trim, highlight):
        present = [m for m in results if m is not None]
        self._trim = trim
        self._highlight = highlight and any(m.has_warnings for m in present)
        leading = [math.ceil(math.log10(m.median / scale)) for m in present]
        decimals = min(max(m.significant_figures - d, 0) for m, d in zip(present, leading)) if trim else 1
        width = max(leading) + decimals + (1 if decimals else 0)
        self._template = f"{{:>{width}.{decimals}f}}{{:>{7 if self._highlight else 0}}}"

    def cell(self, value, sigfigs=1, spread=None):
        if value is None:
            return " " * len(self.cell(1, sigfigs))
        if self._trim:
            value = common.trim_sigfig(value, sigfigs)
        note = f" (! {spread * 100:.0f}%)" if self._highlight and spread is not None else ""
        return self._template.format(value, note)


def _row_key(m):
    return m.num_threads, m.env, m.as_row_name


def _table(results, colorize, trim, highlight):
    """The text of one label's table."""
    unit, scale = common.select_unit(min(m.median for m in results))
    row_keys = common.ordered_unique(_row_key(m) for m in results)
    # stable: rows keep their first-seen order within a (threads, env) group; None env first
    row_keys.sort(key=lambda k: (k[0], k[1] is not None, k[1] or ""))
    col_keys = common.ordered_unique(m.description for m in results)
    grid = {(_row_key(m), m.description): m for m in results}
    cells = [[grid.get((r, c)) for c in col_keys] for r in row_keys]

    columns = [_Column([row[j] for row in cells], scale, trim, highlight) for j in range(len(col_keys))]
    envs = {m.env for m in results}
    show_env = len(envs) > 1
    env_width = max(len(str(e)) for e in envs) if show_env else 0

    text_rows, prior = [], None
    for (threads, env, name), row in zip(row_keys, cells):
        # the env is written on the first row of each (threads, env) run
        first = f"({env})" if show_env and (threads, env) != prior else ""
        prior = (threads, env)
        text = ["  " + first.ljust(env_width + 4) + name]
        for m, col in zip(row, columns):
            text.append(col.cell(None) if m is None else
                        col.cell(m.median / scale, m.significant_figures,
                                 m.iqr / m.median if m.has_warnings else None))
        text_rows.append(text)

    header = [""] + ["" if c is None else str(c) for c in col_keys]
    widths = [max(len(r[j]) for r in [header] + text_rows) for j in range(len(header))]
    lines = ["  |  ".join(h.center(w) for h, w in zip(header, widths))]
    width = len(lines[0])
    prior_threads = None
    for (threads, _, _), row, text in zip(row_keys, cells, text_rows):
        if threads != prior_threads:
            lines.append(f"{threads} threads: ".ljust(width, "-"))
            prior_threads = threads
        best = _best(row, cells, row_keys, threads, colorize)
        out = [text[0].ljust(widths[0])]
        for j, (s, w, m) in enumerate(zip(text[1:], widths[1:], row)):
            s = s.center(w)
            if colorize != Colorize.NONE and m is not None and best[j] is not None:
                s = _color(s, m.median, best[j])
            out.append(s)
        lines.append("  |  ".join(out))

    label = results[0].label
    noisy = highlight and any(m.has_warnings for m in results)
    return (f"[{(' ' + (label or '') + ' ').center(width - 2, '-')}]\n" + "\n".join(lines) +
            f"\n\nTimes are in {common.unit_to_english(unit)}s ({unit}).\n" +
            ("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n" if noisy else ""))


def _best(row, cells, row_keys, threads, colorize):
    """Per cell, the median it is judged against (None: nothing to judge by)."""
    if colorize == Colorize.ROWWISE:
        return [min(m.median for m in row if m is not None)] * len(row)
    if colorize == Colorize.COLUMNWISE:
        group = [r for r, k in zip(cells, row_keys) if k[0] == threads]
        return [min((r[j].median for r in group if r[j] is not None), default=None) for j in range(len(row))]
    return [None] * len(row)


class Compare:
    """Print many :class:`Measurement` s as tables (one per label): ``print(compare)`` or
    :meth:`print`."""

    def __init__(self, results):
        self._results = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def extend_results(self, results):
        """Add more measurements (each must be a :class:`Measurement`)."""
        results = list(results)
        for r in results:
            if not isinstance(r, common.Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self):
        self._trim_significant_figures = True

    def colorize(self, rowwise=False):
        """Color each cell against the best of its column (or, ``rowwise``, of its row)."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self):
        self._highlight_warnings = True

    def _render(self):
        by_label = collections.defaultdict(list)
        for m in common.Measurement.merge(self._results):
            by_label[m.label].append(m)
        return [_table(group, self._colorize, self._trim_significant_figures, self._highlight_warnings)
                for group in by_label.values()]

    def __str__(self):
        return "\n".join(self._render())

    def print(self):
        print(str(self))
