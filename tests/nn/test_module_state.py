"""Module.state_dict / load_state_dict: keys, sharing, strictness, PyTorch's error texts,
and no half-loaded module when loading fails."""
import sys
from collections import OrderedDict

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from module_trees import classes

Affine, Scale, Block, Tree = classes(tg)


def _snapshot(module):
    return {k: v.tolist() for k, v in module.state_dict().items()}


def test_state_dict_is_ordered_detached_and_shares_storage():
    m = Affine(2, 3)
    sd = m.state_dict()
    assert type(sd) is OrderedDict and list(sd) == ["weight", "bias", "calls"]  # scratch: non-persistent
    assert type(sd["weight"]) is tg.Tensor and not sd["weight"].requires_grad
    with tg.no_grad():
        m.weight.fill_(7.0)
    assert sd["weight"].tolist()[0] == [7.0, 7.0]  # same storage
    kept = m.state_dict(keep_vars=True)
    assert kept["weight"] is m.weight
    assert list(m.state_dict(prefix="net.")) == ["net.weight", "net.bias", "net.calls"]
    assert sd._metadata == OrderedDict([("", {"version": 1})])
    dest = OrderedDict()
    assert m.state_dict(destination=dest) is dest and list(dest) == ["weight", "bias", "calls"]


def test_state_dict_positional_arguments_warn():
    with pytest.warns(FutureWarning, match="Positional args are being deprecated"):
        sd = Affine(2, 2).state_dict(None, "p.")
    assert next(iter(sd)) == "p.weight"


def test_load_state_dict_round_trip():
    a, b = Tree(), Tree()
    with tg.no_grad():
        for p in a.parameters():
            p.mul_(-1)
    result = b.load_state_dict(a.state_dict())
    assert repr(result) == "<All keys matched successfully>"
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert _snapshot(a) == _snapshot(b)
    w = b.stem.weight
    b.load_state_dict(Tree().state_dict())
    assert b.stem.weight is w  # copied in place


def test_load_error_text_and_nothing_changed():
    m = Affine(3, 4)
    before = _snapshot(m)
    sd = OrderedDict(weight=tg.zeros(3, 3), foo=tg.zeros(1), calls=tg.full((1,), 9.0))
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(sd)
    assert str(e.value) == (
        'Error(s) in loading state_dict for Affine:\n\tMissing key(s) in state_dict: "bias". '
        '\n\tUnexpected key(s) in state_dict: "foo". '
        "\n\tsize mismatch for weight: copying a param with shape tracegrad.Size([3, 3]) from "
        "checkpoint, the shape in current model is tracegrad.Size([4, 3]).")
    assert _snapshot(m) == before  # "calls" was loadable but nothing was copied


def test_size_mismatch_raises_even_when_not_strict():
    m = Affine(2, 2)
    before = _snapshot(m)
    with pytest.raises(RuntimeError, match=r"size mismatch for bias: copying a param with shape tracegrad.Size\(\[5\]\)"):
        m.load_state_dict({"bias": tg.zeros(5), "calls": tg.ones(1)}, strict=False)
    assert _snapshot(m) == before


def test_non_strict_reports_keys_and_loads_the_rest():
    t = Tree()
    r = t.load_state_dict({"gain": tg.tensor([4.0]), "blocks.0.fc.nope": tg.ones(1), "zzz": tg.ones(1)},
                          strict=False)
    assert t.gain.tolist() == [4.0]
    assert r.unexpected_keys == ["zzz", "blocks.0.fc.nope"]
    assert r.missing_keys[:2] == ["steps", "stem.weight"]
    assert "missing_keys=" in repr(r)


def test_nested_missing_and_non_tensor_values():
    t = Tree()
    sd = t.state_dict()
    del sd["blocks.1.act.scale"]
    sd["heads.0.weight"] = [[1.0]]
    with pytest.raises(RuntimeError) as e:
        t.load_state_dict(sd)
    text = str(e.value)
    assert text.startswith("Error(s) in loading state_dict for Tree:\n\tMissing key(s) in state_dict: "
                           '"blocks.1.act.scale". \n\t')
    assert ('While copying the parameter named "heads.0.weight", expected tracegrad.Tensor or '
            "Tensor-like object from checkpoint but received <class 'list'>") in text


def test_load_state_dict_argument_checks():
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like, got <class 'list'>."):
        Affine(2, 2).load_state_dict([1])


def test_scalar_from_one_element_vector_and_dtype_cast():
    s = Scale()
    s.load_state_dict({"scale": tg.tensor([5.0], dtype=tg.float64)})
    assert s.scale.shape == () and s.scale.item() == 5.0 and s.scale.dtype == tg.float32


def test_assign_replaces_tensors_keeping_parameter_kind():
    m = Affine(2, 2)
    m.weight.requires_grad_(False)
    new_w = tg.ones(2, 2, dtype=tg.float64)
    m.load_state_dict({"weight": new_w, "bias": tg.zeros(2), "calls": tg.ones(1)}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.dtype == tg.float64
    assert not m.weight.requires_grad and m.bias.requires_grad
    with tg.no_grad():
        new_w.add_(1)
    assert m.weight.tolist() == [[2.0, 2.0], [2.0, 2.0]]  # assigned, not copied
    assert m.calls is m._buffers["calls"]


def test_non_persistent_buffers_and_none_slots_are_skipped():
    m = Affine(2, 2, bias=False)
    assert list(m.state_dict()) == ["weight", "calls"]
    r = m.load_state_dict({"weight": tg.zeros(2, 2), "calls": tg.zeros(1), "scratch": tg.zeros(2)}, strict=False)
    assert r.unexpected_keys == ["scratch"]


def test_extra_state_round_trip():
    class WithExtra(Scale):
        def get_extra_state(self):
            return {"note": self.note}

        def set_extra_state(self, state):
            self.note = state["note"]

    a = WithExtra()
    a.note = "hello"
    sd = a.state_dict()
    assert list(sd) == ["scale", "_extra_state"]
    b = WithExtra()
    b.note = None
    b.load_state_dict(sd)
    assert b.note == "hello"
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "_extra_state"'):
        b.load_state_dict({"scale": tg.tensor(1.0)})
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "_extra_state"'):
        Scale().load_state_dict(sd)


def test_state_dict_and_load_hooks():
    m = Affine(2, 2)
    calls = []
    m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append(("pre", prefix)))
    m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: calls.append(("post", list(sd))))
    m.state_dict()
    assert calls == [("pre", ""), ("post", ["weight", "bias", "calls"])]

    def forgive(mod, keys):
        keys.missing_keys.clear()
    m.register_load_state_dict_post_hook(forgive)
    m.load_state_dict({"weight": tg.zeros(2, 2)})  # missing keys forgiven by the hook
    assert m.weight.tolist() == [[0.0, 0.0], [0.0, 0.0]]

    seen = []
    m.register_load_state_dict_pre_hook(lambda mod, sd, prefix, *rest: seen.append(prefix))
    m.load_state_dict(m.state_dict())
    assert seen == [""]


def test_overridden_load_from_state_dict_joins_the_transaction():
    """A layer may override ``_load_from_state_dict`` (as BatchNorm does to fill in an old
    checkpoint's missing entry) and call super(): its copies wait for the whole check."""
    class Upgrading(Affine):
        def _load_from_state_dict(self, state_dict, prefix, *args):
            state_dict.setdefault(prefix + "calls", tg.full((1,), 42.0))
            super()._load_from_state_dict(state_dict, prefix, *args)

    m = Upgrading(2, 2)
    m.load_state_dict({"weight": tg.zeros(2, 2), "bias": tg.zeros(2)})
    assert m.calls.tolist() == [42.0]
    with pytest.raises(RuntimeError, match="size mismatch"):
        m.load_state_dict({"weight": tg.ones(2, 2), "bias": tg.ones(3)})
    assert m.weight.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def _errors(lib, make_sd):
    m = classes(lib)[3]()
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(make_sd(lib, m.state_dict()))
    return str(e.value)


def _bad_checkpoint(lib, sd):
    sd = OrderedDict(sd)
    del sd["blocks.0.fc.bias"]
    sd["stem.weight"] = lib.zeros(2, 2)
    sd["steps"] = lib.zeros(1)  # 0-d buffer from a 1-element vector: accepted
    sd["heads.1.scale"] = lib.zeros(3)
    sd["extra.weight"] = lib.zeros(1)
    sd["blocks.0.junk"] = lib.zeros(1)
    return sd


@pytest.mark.torch
def test_oracle_load_state_dict_errors_and_results():
    torch = pytest.importorskip("torch")
    assert _errors(tg, _bad_checkpoint) == _errors(torch, _bad_checkpoint).replace("torch.Size", "tracegrad.Size")
    for lib in (tg, torch):
        m = classes(lib)[3]()
        sd = _bad_checkpoint(lib, m.state_dict())
        del sd["stem.weight"], sd["heads.1.scale"]
        r = m.load_state_dict(sd, strict=False)
        if lib is tg:
            ours = r
        else:
            assert (ours.missing_keys, ours.unexpected_keys) == (r.missing_keys, r.unexpected_keys)
            assert repr(ours) == repr(r)
    a, b = classes(tg)[3](), classes(torch)[3]()
    sd = {k: tg.tensor(v.numpy()) for k, v in b.state_dict().items()}
    a.load_state_dict(sd)
    for k, v in a.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), b.state_dict()[k].numpy())


def test_moving_onto_or_off_the_meta_device_makes_new_parameters_and_unties_them():
    """As PyTorch: a meta tensor's storage cannot be swapped in place, so each module gets
    a Parameter of its own (HF models re-tie after to_empty); other moves keep ties."""
    with tg.device("meta"):
        m = tg.nn.Sequential(tg.nn.Linear(2, 2, bias=False), tg.nn.Linear(2, 2, bias=False))
    m[1].weight = m[0].weight
    old = m[0].weight
    m.to_empty(device="cpu")
    assert m[0].weight is not m[1].weight and m[0].weight is not old
    assert isinstance(m[0].weight, tg.nn.Parameter) and m[0].weight.device.type == "cpu"
    assert len(list(m.parameters())) == 2
    assert m[0].weight.data_ptr() != m[1].weight.data_ptr()  # (memory of its own each)
    n = tg.nn.Sequential(tg.nn.Linear(2, 2, bias=False), tg.nn.Linear(2, 2, bias=False))
    n[1].weight = n[0].weight
    n.double()
    n.to("cpu")
    assert n[0].weight is n[1].weight  # (a dtype or same-device move keeps the tie)
    n(tg.ones(1, 2, dtype=tg.float64)).sum().backward()
    n.to("meta")
    assert n[0].weight is not n[1].weight and n[0].weight.device.type == "meta"
    assert n[0].weight.grad is not None and n[0].weight.grad.device.type == "meta"  # (moved too)


def test_consume_prefix_in_state_dict_if_present():
    outer = tg.nn.Module()
    outer.module = tg.nn.Sequential(tg.nn.Linear(2, 2))
    sd = outer.state_dict()
    assert tg.nn.modules.utils.consume_prefix_in_state_dict_if_present(sd, "module.") is None
    assert list(sd.keys()) == ["0.weight", "0.bias"] and list(sd._metadata.keys()) == ["", "0"]
    tg.nn.Sequential(tg.nn.Linear(2, 2)).load_state_dict(sd)
