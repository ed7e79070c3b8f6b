"""The guided tour (``python -m tracegrad``) runs start to finish and shows what each
section promises; the tour is the first thing a new user runs, so a broken section is a bug."""
import contextlib
import re
import io

from tracegrad import tour


def _tour_output():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        tour.run()
    return out.getvalue()


def test_every_section_runs_and_is_numbered():
    text = _tour_output()
    for n in range(1, len(tour.SECTIONS) + 1):
        assert f"== {n}. " in text
    assert "Traceback (most recent call last)" not in text


def test_extension_sections_show_their_results():
    text = _tour_output()
    # hooks and custom Functions: the hook multiplies the gradient 3 by 10
    assert "tensor([30., 30.])" in text
    assert "'ExpBackward'" in text
    # anomaly mode: the NaN error and the forward line that made the failing node
    assert "Function 'SqrtBackward0' returned nan values in its 0th output." in text
    assert "Traceback of forward call that caused the error" in text
    assert "y = (x.sqrt() * 0).sum()" in text
    # the profiler table and the graph in Graphviz's language
    assert "Self CPU time total:" in text and "MmBackward0" in text
    assert "digraph {" in text and '[label="ExpBackward0", fillcolor=lightgrey]' in text
    assert "drawn:" in text or "Graphviz" in text


def test_training_section_learns_the_digits():
    text = _tour_output()
    assert "(1): Linear(in_features=64, out_features=64, bias=True)" in text
    accuracy = float(re.search(r"^test accuracy ([\d.]+)%$", text, re.M).group(1))
    assert accuracy > 90
    assert "['3.weight', '3.bias']" in text
