"""tracegrad.testing.assert_close: passes and fails where PyTorch's does, with its messages."""
import math

import pytest

import tracegrad
from tracegrad.testing import assert_close

CASES = [
    ("t", [1.0, 2.0, 3.0], "t", [1.0, 2.1, 3.0], {}),
    ("t", [1.0, 2.0, 3.0], "t", [1.0, 2.000001, 3.0], {}),
    ("t", [1.0], "t64", [1.0], {}),
    ("t", [1.0], "t64", [1.0], {"check_dtype": False}),
    ("t", [0.0, 0.0], "t", [0.0, 0.0, 0.0], {}),
    ("t", [math.nan], "t", [math.nan], {}),
    ("t", [math.nan], "t", [math.nan], {"equal_nan": True}),
    ("t", [1.0, 2.0], "t", [1.0, 2.5], {"rtol": 0.0, "atol": 0.6}),
    ("i", [1, 2], "i", [1, 3], {}),
    ("s", 1.0, "s", 1.1, {}),
    ("s", 3, "s", 3, {}),
    ("l", [1.0], "l", [0.0], {}),
    ("d", {"a": 1.0}, "d", {"a": 1.0, "b": 2.0}, {}),
    ("s0", 2, "s0", 3, {}),
    ("s0", 1.0, "s0", math.nan, {}),
    ("t", [[1.0, 5.0]], "t", [[1.0, 2.0]], {}),
]


def make(lib, kind, value):
    if kind == "t":
        return lib.tensor(value)
    if kind == "t64":
        return lib.tensor(value, dtype=lib.float64)
    if kind == "i":
        return lib.tensor(value)
    if kind == "s0":
        return lib.tensor(value)
    if kind == "l":
        return [lib.tensor(v) for v in value]
    return value


def outcome(lib, case):
    ka, a, ke, e, kw = case
    try:
        lib.testing.assert_close(make(lib, ka, a), make(lib, ke, e), **kw)
    except (AssertionError, TypeError, ValueError) as exc:
        return type(exc).__name__, str(exc)
    return "ok", ""


@pytest.mark.torch
@pytest.mark.parametrize("case", CASES)
def test_matches_torch(case):
    import torch
    ours, theirs = outcome(tracegrad, case), outcome(torch, case)
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1].replace("torch.", "tracegrad."), (ours[1], theirs[1])


def test_by_hand():
    assert_close(tracegrad.tensor([1.0, 2.0]), tracegrad.tensor([1.0, 2.0 + 1e-7]))
    with pytest.raises(AssertionError, match=r"Mismatched elements: 1 / 2 \(50.0%\)"):
        assert_close(tracegrad.tensor([1.0, 2.0]), tracegrad.tensor([1.0, 2.5]))
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified or omitted"):
        assert_close(1.0, 1.0, rtol=0.1)
    with pytest.raises(AssertionError, match="custom"):
        assert_close(1.0, 2.0, msg="custom")
