"""Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""
import sys
from collections import OrderedDict

import pytest

import tracegrad as tg
from tracegrad import nn

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from module_trees import classes

Affine, Scale, Block, Tree = classes(tg)


def _scales(*values):
    return [Scale(v) for v in values]


# -- Sequential --------------------------------------------------------------------------------

def test_sequential_applies_in_order():
    s = nn.Sequential(*_scales(2.0, 3.0))
    assert s(tg.tensor(1.0)).item() == 6.0
    assert nn.Sequential()(tg.tensor(5.0)).item() == 5.0  # empty: identity


def test_sequential_from_ordered_dict_keeps_names():
    a, b = _scales(2.0, 3.0)
    s = nn.Sequential(OrderedDict([("first", a), ("second", b)]))
    assert s.first is a and list(s.state_dict()) == ["first.scale", "second.scale"]
    assert s[1] is b and s[-1] is b


def test_sequential_indexing_and_errors():
    mods = _scales(1.0, 2.0, 3.0)
    s = nn.Sequential(*mods)
    assert s[0] is mods[0] and s[-1] is mods[2] and s[-3] is mods[0]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        s[3]
    with pytest.raises(IndexError, match="index -4 is out of range"):
        s[-4]
    with pytest.raises(TypeError, match="'str' object cannot be interpreted as an integer"):
        s["a"]
    sl = s[1:]
    assert type(sl) is nn.Sequential and list(sl) == mods[1:]
    assert list(sl._modules) == ["1", "2"]  # slicing keeps the keys, as PyTorch does
    assert len(s) == 3 and list(iter(s)) == mods


def test_sequential_mutation():
    mods = _scales(1.0, 2.0, 3.0)
    s = nn.Sequential(*mods)
    new = Scale(9.0)
    s[1] = new
    assert s[1] is new and list(s._modules) == ["0", "1", "2"]
    del s[0]
    assert list(s._modules) == ["0", "1"] and s[0] is new  # renumbered
    del s[-1:]
    assert len(s) == 1
    assert s.append(Scale(4.0)) is s and len(s) == 2
    s.insert(0, Scale(5.0))
    assert [m.scale.item() for m in s] == [5.0, 9.0, 4.0]
    s.insert(-1, Scale(6.0))  # before the last, like list.insert
    assert [m.scale.item() for m in s] == [5.0, 9.0, 6.0, 4.0]
    with pytest.raises(IndexError, match="Index out of range: 9"):
        s.insert(9, Scale())
    with pytest.raises(AssertionError, match="module should be of type"):
        s.insert(0, 3)
    s.extend(_scales(7.0))
    assert s[-1].scale.item() == 7.0 and list(s._modules) == [str(i) for i in range(5)]
    assert s.pop(0).scale.item() == 5.0 and len(s) == 4


def test_sequential_extend_checks_everything_first():
    s = nn.Sequential(Scale())
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        s.extend([Scale(), 3])
    assert len(s) == 1
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        s.append(3)


def test_sequential_add_mul():
    a, b = _scales(2.0, 3.0)
    s = nn.Sequential(a) + nn.Sequential(b)
    assert list(s) == [a, b]
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential class"):
        nn.Sequential(a) + 3
    doubled = nn.Sequential(a, b) * 2
    assert list(doubled) == [a, b, a, b] and len(list(doubled.parameters())) == 2
    with pytest.raises(ValueError, match="Non-positive multiplication factor 0"):
        nn.Sequential(a) * 0
    s2 = nn.Sequential(a)
    s2 += nn.Sequential(b)
    assert list(s2) == [a, b]


def test_sequential_parameters_and_train():
    s = nn.Sequential(Affine(2, 3), Scale())
    assert [n for n, _ in s.named_parameters()] == ["0.weight", "0.bias", "1.scale"]
    s.eval()
    assert not s[0].training
    assert "0" not in dir(s)


# -- ModuleList --------------------------------------------------------------------------------

def test_module_list_basics():
    mods = _scales(1.0, 2.0, 3.0)
    ml = nn.ModuleList(mods)
    assert len(ml) == 3 and ml[-1] is mods[2] and list(ml) == mods
    assert type(ml[:2]) is nn.ModuleList and list(ml[:2]) == mods[:2]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        ml[3]
    ml.append(Scale(4.0))
    ml.extend(_scales(5.0))
    ml += _scales(6.0)
    assert [m.scale.item() for m in ml] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    ml.insert(1, Scale(7.0))
    assert ml[1].scale.item() == 7.0 and list(ml._modules) == [str(i) for i in range(7)]
    del ml[0]
    assert ml[0].scale.item() == 7.0 and list(ml._modules) == [str(i) for i in range(6)]
    del ml[::2]
    assert [m.scale.item() for m in ml] == [2.0, 4.0, 6.0]
    ml[0] = Scale(8.0)
    assert ml[0].scale.item() == 8.0
    assert ml.pop(-1).scale.item() == 6.0
    both = ml + nn.ModuleList(_scales(9.0))
    assert [m.scale.item() for m in both] == [8.0, 4.0, 9.0]
    assert [n for n, _ in both.named_parameters()] == ["0.scale", "1.scale", "2.scale"]


def test_module_list_errors_leave_it_unchanged():
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, but got int"):
        nn.ModuleList(3)
    ml = nn.ModuleList(_scales(1.0))
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        ml.extend([Scale(), 3])
    assert len(ml) == 1


def test_module_list_repr_collapses_repeats():
    ml = nn.ModuleList([Scale(), Scale(), Affine(1, 1), Scale()])
    assert repr(ml) == ("ModuleList(\n  (0-1): 2 x Scale()\n"
                        "  (2): Affine(in_features=1, out_features=1, bias=True)\n  (3): Scale()\n)")
    assert repr(nn.ModuleList()) == "ModuleList()"


# -- ModuleDict --------------------------------------------------------------------------------

def test_module_dict_mapping_api():
    a, b, c = _scales(1.0, 2.0, 3.0)
    md = nn.ModuleDict({"a": a, "b": b})
    assert md["a"] is a and "b" in md and len(md) == 2 and list(md) == ["a", "b"]
    md["c"] = c
    assert list(md.keys()) == ["a", "b", "c"] and list(md.values()) == [a, b, c]
    assert list(md.items())[2] == ("c", c)
    assert md.pop("b") is b and list(md) == ["a", "c"]
    del md["a"]
    assert list(md) == ["c"] and not hasattr(md, "a")
    md.update([("x", a), ("y", b)])
    assert list(md) == ["c", "x", "y"]
    assert [n for n, _ in md.named_parameters()] == ["c.scale", "x.scale", "y.scale"]
    md.clear()
    assert len(md) == 0 and not hasattr(md, "c")


def test_module_dict_errors():
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        nn.ModuleDict({"a": 3})
    with pytest.raises(ValueError, match="ModuleDict update sequence element #0 has length 1; 2 is required"):
        nn.ModuleDict([("a",)])
    with pytest.raises(TypeError, match="ModuleDict update sequence element #0 should be Iterable; isint"):
        nn.ModuleDict([3])
    md = nn.ModuleDict({"a": Scale()})
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        md.update({"b": Scale(), "c": 3})
    assert list(md) == ["a"]


# -- ParameterList / ParameterDict ---------------------------------------------------------------

def test_parameter_list():
    pl = nn.ParameterList([tg.ones(2), nn.Parameter(tg.zeros(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(pl) == 2
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pl.append(tg.ones(1))
    assert pl[-1].shape == (1,) and type(pl[1:]) is nn.ParameterList
    pl[0] = tg.full((2,), 5.0)
    assert isinstance(pl[0], nn.Parameter) and pl[0].tolist() == [5.0, 5.0]
    assert repr(pl).startswith("ParameterList(\n    (0): Parameter containing: [tracegrad.float32 of size 2]")
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        pl(1)
    with pytest.raises(TypeError, match="ParameterList.extend should be called with an iterable"):
        pl.extend(tg.ones(2))


def test_parameter_dict():
    pd = nn.ParameterDict({"b": tg.ones(2), "a": tg.ones(1)})
    assert list(pd) == ["a", "b"]  # a plain dict is added in sorted order (PyTorch)
    pd["c"] = tg.zeros(3)
    assert isinstance(pd["c"], nn.Parameter) and "c" in pd and len(pd) == 3
    assert pd.get("zz", 4) == 4 and pd.setdefault("a") is pd["a"]
    assert [n for n, _ in pd.named_parameters()] == ["a", "b", "c"]
    assert pd.pop("c").shape == (3,) and "c" not in pd
    assert pd.popitem()[0] == "b"
    with pytest.raises(TypeError, match="Index given to ParameterDict cannot be used as a key"):
        pd[1] = tg.ones(1)
    assert repr(pd) == "ParameterDict(  (a): Parameter containing: [tracegrad.FloatTensor of size 1])"
    merged = pd | nn.ParameterDict(OrderedDict(z=tg.ones(1)))
    assert list(merged) == ["a", "z"]
    pd.clear()
    assert len(pd) == 0


@pytest.mark.torch
def test_oracle_containers_repr_and_keys():
    torch = pytest.importorskip("torch")

    def build(lib):
        Aff, Sc = classes(lib)[:2]
        s = lib.nn.Sequential(Aff(2, 3), Sc(), Sc(), lib.nn.ModuleList([Sc(), Sc(), Aff(3, 1)]))
        s.insert(1, Sc())
        s.append(lib.nn.ModuleDict({"z": Sc(), "a": Aff(1, 1, bias=False)}))
        del s[2]
        s.extend([Sc()])
        md = lib.nn.ModuleDict([("k", s[1:3]), ("p", lib.nn.ParameterList([lib.ones(2)]))])
        return lib.nn.ModuleList([s, md, lib.nn.ParameterDict({"x": lib.ones(1)})])

    ours, theirs = build(tg), build(torch)
    assert repr(ours) == repr(theirs).replace("torch.", "tracegrad.")
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
