"""Objects of other classes in saved files: ``load(weights_only=True)`` rebuilds them only
from globals allowlisted with ``add_safe_globals`` / ``safe_globals``, as PyTorch does."""
import argparse
import collections
import enum
import io
import pickle

import numpy as np
import pytest

import tracegrad
from tracegrad import nn
from tracegrad.serialization import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals


class Point:
    def __init__(self, x, t):
        self.x, self.t = x, t


class Slotted:
    __slots__ = ("a",)


class WithState:
    built = 0

    def __init__(self):
        self.calls = 0

    def __getstate__(self):
        return {"calls": 41}

    def __setstate__(self, state):
        self.calls = state["calls"] + 1
        WithState.built += 1


class Color(enum.Enum):
    RED = 1


def helper():
    return 7


@pytest.fixture(autouse=True)
def _empty_allowlist():
    clear_safe_globals()
    yield
    clear_safe_globals()


def roundtrip(obj, lib=tracegrad, **kw):
    buf = io.BytesIO()
    lib.save(obj, buf)
    buf.seek(0)
    return lib.load(buf, **kw)


def unsupported_global(obj, lib=tracegrad):
    with pytest.raises(pickle.UnpicklingError) as info:
        roundtrip(obj, lib)
    return str(info.value).split("WeightsUnpickler error: ")[1].split("\n")[0]


@pytest.mark.parametrize("make", [lambda: Point(1, None), lambda: argparse.Namespace(lr=0.1),
                                  lambda: Color.RED, lambda: helper, lambda: Point, lambda: len])
def test_an_unlisted_global_is_refused_naming_it(make):
    msg = unsupported_global(make())
    assert msg.startswith("Unsupported global: GLOBAL ")
    assert "add_safe_globals([" in msg and "safe_globals([" in msg


def test_the_message_names_the_global_as_torch_does():
    msg = unsupported_global({"p": Point(1, None)})
    name = f"{__name__}.Point"
    assert msg == (f"Unsupported global: GLOBAL {name} was not an allowed global by default. Please use "
                   f"`tracegrad.serialization.add_safe_globals([{name}])` or the "
                   f"`tracegrad.serialization.safe_globals([{name}])` context manager to allowlist "
                   "this global if you trust this class/function.")
    assert "GLOBAL len was not" in unsupported_global(len)  # builtins. is left out


@pytest.mark.torch
@pytest.mark.parametrize("make", [lambda: Point(1, None), lambda: argparse.Namespace(lr=0.1),
                                  lambda: Color.RED, lambda: helper, lambda: len, lambda: slice(1, 2)])
def test_refused_where_torch_refuses(make):
    import torch
    theirs = unsupported_global(make(), torch)
    ours = unsupported_global(make())
    assert ours == theirs.replace("torch.serialization", "tracegrad.serialization")


@pytest.mark.torch
@pytest.mark.parametrize("obj", [{1, 2}, b"raw", bytearray(b"ab"), collections.Counter("aab"),
                                 collections.OrderedDict(a=1), 3 + 4j])
def test_allowed_by_default_as_in_torch(obj):
    import torch
    assert roundtrip(obj, torch) == obj
    back = roundtrip(obj)
    assert back == obj and type(back) is type(obj)


def test_allowlisted_objects_come_back():
    add_safe_globals([Point, argparse.Namespace, Color, helper])
    p = roundtrip({"p": Point(3, tracegrad.ones(2, requires_grad=True))})["p"]
    assert type(p) is Point and p.x == 3
    np.testing.assert_array_equal(p.t.detach().numpy(), [1.0, 1.0])
    assert p.t.requires_grad and p.t.is_leaf
    assert roundtrip(argparse.Namespace(lr=0.1, steps=[1, 2])) == argparse.Namespace(lr=0.1, steps=[1, 2])
    assert roundtrip(Color.RED) is Color.RED
    assert roundtrip(helper) is helper


def test_setstate_and_slots_are_used():
    add_safe_globals([WithState, Slotted])
    assert roundtrip(WithState()).calls == 42
    s = Slotted()
    s.a = 5
    assert roundtrip(s).a == 5


def test_a_global_that_builds_an_unlisted_type_is_refused():
    """Allowlisting a function does not allow setting state on what it returns (torch's BUILD rule)."""
    add_safe_globals([Point])
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL .*WithState was not an allowed"):
        roundtrip([Point(1, 2), WithState()])


def test_safe_globals_context_manager_and_listing():
    assert get_safe_globals() == []
    with safe_globals([Point, (Color, f"{__name__}.Color")]):
        assert get_safe_globals() == [Point, (Color, f"{__name__}.Color")]
        assert roundtrip(Point(1, None)).x == 1
        assert roundtrip(Color.RED) is Color.RED
    assert get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError):
        roundtrip(Point(1, None))


def test_a_pair_names_the_global_as_saved():
    """A (global, path) pair maps the saved name to the object (e.g. a class since moved)."""
    add_safe_globals([(helper, f"{__name__}.Point")])
    assert roundtrip(Point) is helper


def test_weights_only_false_imports_what_the_file_names():
    model = nn.Sequential(nn.Linear(2, 3), nn.Tanh())
    back = roundtrip({"model": model, "args": argparse.Namespace(lr=0.5)}, weights_only=False)
    x = tracegrad.ones(1, 2)
    np.testing.assert_array_equal(back["model"](x).detach().numpy(), model(x).detach().numpy())
    assert back["args"].lr == 0.5
    assert isinstance(back["model"][0].weight, nn.Parameter)


def test_nothing_is_called_before_the_refusal():
    """The refusal comes from the name alone: the class is never instantiated."""
    before = WithState.built
    with pytest.raises(pickle.UnpicklingError):
        roundtrip(WithState())
    assert WithState.built == before
    with safe_globals([WithState]):
        roundtrip(WithState())
    assert WithState.built == before + 1


def test_unreducible_objects_still_refused_at_save():
    with pytest.raises(TypeError, match="cannot save object of type function at \\['f'\\]"):
        roundtrip({"f": lambda: 1})
