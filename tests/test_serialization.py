"""tracegrad.save / tracegrad.load: round trips, the file format, and every way a file can be bad."""
import io
import json
import math
import os
import re
import sys
import tracemalloc
import zipfile
import threading
import zlib
from collections import OrderedDict

import numpy as np
import pytest
from numpy.lib import format as npy

import tracegrad
from tracegrad import nn, serialization

INDEX = "__tracegrad_index__.npy"


def roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    tracegrad.save(obj, buf)
    buf.seek(0)
    return tracegrad.load(buf, **load_kwargs)


def saved_bytes(obj):
    buf = io.BytesIO()
    tracegrad.save(obj, buf)
    return buf.getvalue()


def assert_same_tensor(a, b):
    assert type(a) is type(b) and a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
    assert a.requires_grad == b.requires_grad
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def checkpoint():
    w = tracegrad.arange(6.0).reshape(2, 3)
    model = OrderedDict(weight=w, bias=tracegrad.zeros(3))
    optim = {"state": {0: {"step": tracegrad.tensor(4.0), "exp_avg": tracegrad.ones(2, 3)}, 1: {}},
             "param_groups": [{"lr": 0.01, "betas": (0.9, 0.999), "params": [0, 1], "nesterov": False,
                               "foreach": None}]}
    return {"epoch": 3, "model": model, "optim": optim}


# -- round trips ----------------------------------------------------------------------------
def test_checkpoint_round_trip_keeps_structure_and_types():
    ck = checkpoint()
    out = roundtrip(ck)
    assert list(out) == ["epoch", "model", "optim"] and out["epoch"] == 3
    assert type(out["model"]) is OrderedDict and list(out["model"]) == ["weight", "bias"]
    for k in ck["model"]:
        assert_same_tensor(out["model"][k], ck["model"][k])
    assert list(out["optim"]["state"]) == [0, 1]  # int keys stay ints
    assert_same_tensor(out["optim"]["state"][0]["step"], ck["optim"]["state"][0]["step"])
    assert out["optim"]["state"][1] == {}
    assert out["optim"]["param_groups"] == ck["optim"]["param_groups"]
    assert type(out["optim"]["param_groups"][0]["betas"]) is tuple


def test_plain_values_keep_their_exact_type():
    values = [None, True, False, 0, -7, 2**70, 1.0, -0.0, 1e-300, "", "héllo ✓", 1 + 2j,
              tracegrad.Size([2, 3]), tracegrad.float16, tracegrad.bool, tracegrad.device("cpu"),
              (), [], {}, OrderedDict(), ((1,), [2.5, (None,)])]
    out = roundtrip(values)
    assert out == values
    assert [type(v) for v in out] == [type(v) for v in values]
    assert math.copysign(1, out[7]) == -1.0


def test_non_finite_floats():
    out = roundtrip([math.inf, -math.inf, math.nan])
    assert out[:2] == [math.inf, -math.inf] and math.isnan(out[2])


def test_dict_keys_of_every_plain_kind():
    d = {0: "a", -1: "b", 2.5: "c", True: "d", None: "e", "x": "f", (1, "y"): "g", 1 + 1j: "h",
         tracegrad.float32: "i"}
    out = roundtrip(d)
    assert out == d and list(out) == list(d)


@pytest.mark.parametrize("dtype", [tracegrad.bool, tracegrad.uint8, tracegrad.int8, tracegrad.int16,
                                   tracegrad.int32, tracegrad.int64, tracegrad.float16, tracegrad.float32,
                                   tracegrad.float64, tracegrad.complex64, tracegrad.complex128])
def test_every_dtype(dtype):
    t = (tracegrad.arange(12).reshape(3, 4) % 3).to(dtype)
    assert_same_tensor(roundtrip(t), t)


@pytest.mark.parametrize("shape", [(), (0,), (0, 3), (3, 0, 2), (1, 1, 1, 1)])
def test_zero_dim_and_empty_tensors(shape):
    t = tracegrad.randn(shape, dtype=tracegrad.float64)
    assert_same_tensor(roundtrip(t), t)


def test_views_come_back_with_their_own_storage():
    """A transposed or permuted view comes back with its strides (as from PyTorch, which
    saves storage and strides); a view with gaps or repeats comes back contiguous."""
    base = tracegrad.arange(24.0).reshape(4, 6)
    views = [base.t(), base[:, 1::2], base[1], base.expand(2, 4, 6), base[..., None],
             tracegrad.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1)]
    out = roundtrip([base] + views)
    for got, want in zip(out, [base] + views):
        assert_same_tensor(got, want)
        assert got.storage_offset() == 0
    assert out[1].stride() == (1, 6) and out[6].stride() == (1, 12, 4)
    assert all(t.is_contiguous() for t in out[:1] + out[2:6])
    out[0].add_(1)  # storage sharing between different tensors is not kept
    np.testing.assert_array_equal(out[1].numpy(), base.t().numpy())


def test_same_tensor_twice_loads_as_one_object_and_is_stored_once():
    t = tracegrad.ones(100)
    out = roundtrip({"a": t, "b": [t], "c": t.clone()})
    assert out["a"] is out["b"][0] and out["c"] is not out["a"]
    assert len(saved_bytes([t, t])) < len(saved_bytes([t, t.clone()])) - 300


def test_tied_weights_load_sharing_memory_and_are_stored_once():
    """A state_dict of tied weights holds one tensor per name over the same elements:
    saved once, loaded as two objects over one memory (PyTorch keeps the storage shared)."""
    wte = nn.Embedding(10, 4)
    head = nn.Linear(4, 10, bias=False)
    head.weight = wte.weight
    sd = nn.ModuleDict({"wte": wte, "head": head}).state_dict()
    assert sd["wte.weight"] is not sd["head.weight"]
    data = saved_bytes(sd)
    out = tracegrad.load(io.BytesIO(data))
    assert out["wte.weight"] is not out["head.weight"]
    assert out["wte.weight"].data_ptr() == out["head.weight"].data_ptr()
    assert_same_tensor(out["head.weight"], sd["head.weight"])
    out["wte.weight"][0, 0] = 99.0
    assert out["head.weight"][0, 0].item() == 99.0
    assert index_of(data)["version"] == 2 and len(index_of(data)["tensors"]) == 1
    assert len(data) < len(saved_bytes({k: v.clone() for k, v in sd.items()})) - 100


def test_aliases_keep_their_own_kind_and_requires_grad():
    p = nn.Parameter(tracegrad.ones(3))
    out = roundtrip([p, p.detach(), nn.Parameter(p.data, requires_grad=False), p[:2], p.detach().t()])
    assert [type(t).__name__ for t in out] == ["Parameter", "Tensor", "Parameter", "Tensor", "Tensor"]
    assert [t.requires_grad for t in out] == [True, False, False, True, False]
    assert out[0].data_ptr() == out[1].data_ptr() == out[2].data_ptr()
    out[1].add_(1)  # (p[:2] is another shape: its own copy)
    assert out[3].tolist() == [1.0, 1.0] and out[2].tolist() == [2.0, 2.0, 2.0]


def test_a_file_without_aliases_keeps_format_1():
    t = tracegrad.ones(3)
    assert index_of(saved_bytes({"a": t, "b": t, "c": t.clone()}))["version"] == 1


@pytest.mark.parametrize("alias", [[5, False, False], [0, "no", False], [0, False], [0, True, False]])
def test_a_malformed_alias_is_refused(alias):
    data = saved_bytes([tracegrad.arange(3), tracegrad.arange(3)])
    index = index_of(data)
    index["version"], index["root"]["list"][1] = 2, {"alias": alias}
    with pytest.raises(RuntimeError, match="unexpected entry"):
        tracegrad.load(io.BytesIO(rewrite(data, index)))


def test_loaded_tensors_are_fresh():
    t = tracegrad.arange(4.0)
    a, b = roundtrip(t), roundtrip(t)
    a.mul_(10)
    assert t.tolist() == [0, 1, 2, 3] and b.tolist() == [0, 1, 2, 3]


def test_requires_grad_and_history():
    leaf = tracegrad.ones(3, requires_grad=True)
    leaf.grad = tracegrad.full((3,), 5.0)
    nonleaf = leaf * 2
    a, b = roundtrip([leaf, nonleaf])
    assert a.requires_grad and a.is_leaf and a.grad is None  # .grad is not saved, as in PyTorch
    assert b.requires_grad and b.is_leaf and b.grad_fn is None and b.tolist() == [2, 2, 2]
    (a * b).sum().backward()
    assert a.grad.tolist() == [2, 2, 2]


def test_parameter_round_trips_as_parameter():
    p = nn.Parameter(tracegrad.randn(2, 2))
    frozen = nn.Parameter(tracegrad.randn(2), requires_grad=False)
    out = roundtrip({"p": p, "f": frozen, "t": tracegrad.ones(1)})
    assert type(out["p"]) is nn.Parameter and out["p"].requires_grad
    assert type(out["f"]) is nn.Parameter and not out["f"].requires_grad
    assert type(out["t"]) is tracegrad.Tensor
    np.testing.assert_array_equal(out["p"].detach().numpy(), p.detach().numpy())


def test_module_state_dict_round_trip():
    m = nn.Module()
    m.w = nn.Parameter(tracegrad.randn(3, 2))
    m.register_buffer("running", tracegrad.zeros(2))
    sd = roundtrip(m.state_dict())
    assert type(sd) is OrderedDict and list(sd) == ["w", "running"]
    m2 = nn.Module()
    m2.w = nn.Parameter(tracegrad.zeros(3, 2))
    m2.register_buffer("running", tracegrad.ones(2))
    m2.load_state_dict(sd)
    np.testing.assert_array_equal(m2.w.detach().numpy(), m.w.detach().numpy())
    assert m2.running.tolist() == [0, 0]


# -- files ----------------------------------------------------------------------------------
def test_paths_and_file_objects(tmp_path):
    ck = checkpoint()
    for f in (str(tmp_path / "a.pt"), tmp_path / "b.tar"):
        tracegrad.save(ck, f)
        assert os.path.exists(f)  # no '.npz' appended, unlike np.savez
        assert_same_tensor(tracegrad.load(f)["model"]["weight"], ck["model"]["weight"])
    with open(tmp_path / "c.bin", "wb") as fh:
        fh.write(b"header")
        tracegrad.save(ck, fh)
        assert not fh.closed
    with open(tmp_path / "c.bin", "rb") as fh:
        fh.seek(6)
        assert tracegrad.load(fh)["epoch"] == 3
        assert not fh.closed


def test_non_seekable_stream():
    class Stream(io.RawIOBase):
        def __init__(self, data):
            self._buf = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self._buf.readinto(b)

    assert roundtrip(1) == 1
    assert tracegrad.load(io.BufferedReader(Stream(saved_bytes({"x": 5}))))["x"] == 5


def test_same_object_gives_the_same_bytes():
    assert saved_bytes(checkpoint()) == saved_bytes(checkpoint())


def test_the_file_is_an_npz_with_a_json_index_and_no_pickle(tmp_path):
    tracegrad.save({"w": tracegrad.ones(2, 3), "n": 1}, tmp_path / "f")
    with np.load(tmp_path / "f", allow_pickle=False) as z:
        assert sorted(z.files) == ["__tracegrad_index__", "t0"]
        assert z["__tracegrad_index__"].dtype == np.uint8
        index = json.loads(z["__tracegrad_index__"].tobytes())
        np.testing.assert_array_equal(z["t0"], np.ones((2, 3), np.float32))
    assert index["format"] == "tracegrad.save" and index["version"] == 1
    assert index["tensors"] == [{"key": "t0", "dtype": "float32", "shape": [2, 3], "requires_grad": False,
                                 "device": "cpu", "parameter": False}]


def test_save_into_a_missing_directory(tmp_path):
    with pytest.raises(RuntimeError, match="Parent directory .*nowhere does not exist"):
        tracegrad.save(1, tmp_path / "nowhere" / "f.pt")


def test_f_must_be_a_path_or_file():
    with pytest.raises(TypeError, match="path or a binary file object that can be written, got int"):
        tracegrad.save(1, 3)
    with pytest.raises(TypeError, match="can be read, got float"):
        tracegrad.load(1.5)


def test_weights_only_false_loads_the_same():
    assert roundtrip({"a": (1, 2)}, weights_only=False) == {"a": (1, 2)}


# -- unsupported objects --------------------------------------------------------------------
# (any other object is saved by its class's name: tests/test_serialization_safe_globals.py)
class Foo:
    pass


def _local_instance():
    class Local:
        pass
    return Local()


@pytest.mark.parametrize("obj, where, typename", [
    ({"model": {"x": _local_instance()}}, r"\['model'\]\['x'\]", "Local"),
    (lambda: 0, "the top level", "function"),
    ([1, (2, {3: (i for i in ())})], r"\[1\]\[1\]\[3\]", "generator"),
    ({"lock": threading.Lock()}, r"\['lock'\]", "lock"),
    ({"m": np}, r"\['m'\]", "module"),
])
def test_unsupported_objects_name_type_and_path(obj, where, typename):
    with pytest.raises(TypeError, match=rf"cannot save object of type {typename} at {where}"):
        saved_bytes(obj)


def test_tensor_dict_keys_are_refused():
    with pytest.raises(TypeError, match=r"cannot save a dict key of type Tensor at \[1\]"):
        saved_bytes([0, {tracegrad.ones(1): 1}])


def test_cycles_are_refused():
    loop = [1]
    loop.append({"again": loop})
    with pytest.raises(ValueError, match=r"contains itself \(at \[1\]\['again'\]\)"):
        saved_bytes(loop)


def test_a_failed_save_writes_nothing(tmp_path):
    f = tmp_path / "keep.pt"
    tracegrad.save({"ok": 1}, f)
    before = f.read_bytes()
    with pytest.raises(TypeError):
        tracegrad.save({"ok": 2, "bad": _local_instance()}, f)
    assert f.read_bytes() == before
    with pytest.raises(TypeError):
        tracegrad.save(_local_instance(), tmp_path / "new.pt")
    assert not (tmp_path / "new.pt").exists()


# -- bad files ------------------------------------------------------------------------------
def load_error(data_or_path):
    src = io.BytesIO(data_or_path) if isinstance(data_or_path, bytes) else data_or_path
    with pytest.raises(RuntimeError) as info:
        tracegrad.load(src)
    return str(info.value)


def sample():
    return {"epoch": 3, "w": tracegrad.arange(6.0).reshape(2, 3), "i": tracegrad.tensor([1, 2]),
            "l": [1.5, "x"]}


def equals_sample(out):
    return (out.keys() == {"epoch", "w", "i", "l"} and out["epoch"] == 3 and out["l"] == [1.5, "x"]
            and out["w"].dtype == tracegrad.float32 and out["w"].tolist() == [[0, 1, 2], [3, 4, 5]]
            and out["i"].dtype == tracegrad.int64 and out["i"].tolist() == [1, 2])


def test_truncated_files_name_the_file(tmp_path):
    data = saved_bytes(sample())
    for n in [0, 1, 4, 30, len(data) // 3, len(data) // 2, len(data) - 100, len(data) - 22, len(data) - 1]:
        f = tmp_path / f"cut{n}.pt"
        f.write_bytes(data[:n])
        msg = load_error(f)
        assert msg.startswith(f"cannot load {str(f)!r}: "), msg
        assert ("empty" in msg) if n == 0 else ("corrupt" in msg or "not a file written by" in msg), msg


def test_every_truncation_is_an_error():
    data = saved_bytes(sample())
    for n in range(len(data)):
        load_error(data[:n])


@pytest.mark.parametrize("mask", [0x01, 0x80, 0xFF])
def test_flipped_bytes_are_caught_or_harmless(mask):
    """A flipped bit anywhere either raises RuntimeError or changes nothing that is loaded
    (zip timestamps and flags, for instance): never wrong values or another exception."""
    data = saved_bytes(sample())
    caught = 0
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= mask
        try:
            out = tracegrad.load(io.BytesIO(bytes(bad)))
        except RuntimeError as e:
            assert str(e).startswith("cannot load the BytesIO given: ")
            caught += 1
        else:
            assert equals_sample(out), f"byte {i} flipped with {mask:#x} loaded wrong values"
    assert caught > len(data) // 2


def test_flipped_tensor_byte_is_a_crc_error():
    data = saved_bytes({"w": tracegrad.full((64,), 0.25)})
    pos = data.index(np.full(64, 0.25, np.float32).tobytes()) + 40
    bad = bytearray(data)
    bad[pos] ^= 0x10
    assert "corrupt" in load_error(bytes(bad)) and "CRC" in load_error(bytes(bad))


def test_foreign_files(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello, world\n")
    assert "not a file written by tracegrad.save (not an .npz archive)" in load_error(text)
    plain = tmp_path / "plain.npz"
    np.savez(plain, w=np.ones(3))
    msg = load_error(plain)
    assert "plain.npz" in msg and "an archive without the '__tracegrad_index__' entry" in msg
    single = tmp_path / "one.npy"
    np.save(single, np.ones(3))
    assert "not an .npz archive" in load_error(single)
    torchlike = io.BytesIO()  # (PyTorch's layout, a damaged pickle: see test_load_pytorch_files.py)
    with zipfile.ZipFile(torchlike, "w") as zf:
        zf.writestr("archive/data.pkl", b"\x80\x02}q\x00")
    assert "the PyTorch file is corrupt or truncated" in load_error(torchlike.getvalue())
    assert "the file is empty" in load_error(b"")


def rewrite(data, index=None, arrays=None, drop=()):
    """``data`` (a saved file) with its index replaced (a dict, or raw bytes) and entries
    replaced/added (``arrays``) or dropped."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        entries = {n[:-4]: npy.read_array(zf.open(n)) for n in zf.namelist()}
    if index is not None:
        raw = index if isinstance(index, bytes) else json.dumps(index).encode()
        entries["__tracegrad_index__"] = np.frombuffer(raw, np.uint8)
    entries.update(arrays or {})
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, arr in entries.items():
            if name not in drop:
                with zf.open(name + ".npy", "w") as m:
                    npy.write_array(m, arr)
    return out.getvalue()


def index_of(data):
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return json.loads(npy.read_array(zf.open(INDEX)).tobytes())


def test_rewrite_helper_keeps_a_loadable_file():
    data = saved_bytes(sample())
    assert equals_sample(tracegrad.load(io.BytesIO(rewrite(data, index_of(data)))))


@pytest.mark.parametrize("change, message", [
    (lambda ix: ix.update(format="numpy"), "its index has no 'format': 'tracegrad.save'"),
    (lambda ix: ix.update(version=3), r"written by a newer tracegrad \(format version 3\)"),
    (lambda ix: ix.update(version="1"), "its index is wrong: 'version' is '1'"),
    (lambda ix: ix.pop("root"), "'tensors' or 'root' is missing"),
    (lambda ix: ix["tensors"][0].update(dtype="float128"), "tensor entry 0 is malformed"),
    (lambda ix: ix["tensors"][0].update(shape=[2, -3]), "tensor entry 0 is malformed"),
    (lambda ix: ix["tensors"][1].update(requires_grad=True), "tensor entry 1 is malformed"),
    (lambda ix: ix["tensors"][0].update(device="tpu"), "tensor entry 0 is malformed"),
    (lambda ix: ix["tensors"][1].update(key="t0"), "tensor entry 1 is malformed"),
    (lambda ix: ix["tensors"][0].update(shape=[3, 2]), r"entry 't0.npy' has shape \(2, 3\), expected \(3, 2\)"),
    (lambda ix: ix["tensors"][0].update(dtype="float64"), "entry 't0.npy' holds float32, expected float64"),
    (lambda ix: ix["tensors"].pop(), r"entries not in the index: \['t1.npy'\]"),
    (lambda ix: ix["root"]["dict"].append(["extra", {"tensor": 7}]), "unexpected entry {'tensor': 7} at"),
    (lambda ix: ix["root"]["dict"].append(["extra", {"pickle": "x"}]), "unexpected entry {'pickle': 'x'}"),
    (lambda ix: ix["root"]["dict"].append([{"list": []}, 1]), "its index is wrong"),
    (lambda ix: ix["root"]["dict"].append(["z", {"list": [], "tuple": []}]), "unexpected entry"),
    (lambda ix: ix.update(root={"size": [1.5]}), "unexpected entry {'size': \\[1.5\\]} at the top level"),
])
def test_wrong_index(change, message):
    data = saved_bytes(sample())
    index = index_of(data)
    change(index)
    msg = load_error(rewrite(data, index))
    assert msg.startswith("cannot load the BytesIO given: ")
    assert re.search(message, msg), msg


def test_missing_entry_and_bad_json():
    data = saved_bytes(sample())
    assert r"in the index but missing: ['t1.npy']" in load_error(rewrite(data, drop={"t1"}))
    assert "its index is not valid JSON" in load_error(rewrite(data, b"{not json"))
    assert "its index is not valid JSON" in load_error(rewrite(data, b"[" * 100000))
    assert "entry 't1.npy' holds float64, expected int64" in load_error(
        rewrite(data, arrays={"t1": np.array([1.0, 2.0])}))


def test_an_object_array_is_refused_without_unpickling():
    data = saved_bytes(sample())
    bad = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(bad, "w") as dst:
        for n in src.namelist():
            if n == "t1.npy":
                with dst.open(n, "w") as m:
                    npy.write_array(m, np.array([Foo()], dtype=object), allow_pickle=True)
            else:
                dst.writestr(n, src.read(n))
    assert "holds object, expected int64" in load_error(bad.getvalue())


# -- map_location ---------------------------------------------------------------------------
@pytest.mark.parametrize("where", [None, "cpu", tracegrad.device("cpu"), {"cuda:0": "cpu"},
                                   lambda storage, loc: storage, lambda storage, loc: None])
def test_map_location_to_cpu(where):
    out = roundtrip({"w": tracegrad.ones(2, requires_grad=True)}, map_location=where)
    assert out["w"].device == tracegrad.device("cpu") and out["w"].requires_grad


def test_map_location_callable_result_is_used():
    out = roundtrip(tracegrad.ones(2, requires_grad=True), map_location=lambda s, loc: s * 3)
    assert out.tolist() == [3, 3] and out.is_leaf and out.requires_grad
    with pytest.raises(TypeError, match="map_location returned int"):
        roundtrip(tracegrad.ones(2), map_location=lambda s, loc: 1)


@pytest.mark.skipif(tracegrad.cuda.is_available(), reason="checks the CPU-only error")
def test_map_location_cuda_without_cuda():
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device but "
                       r"tracegrad.cuda.is_available\(\) is False"):
        roundtrip(tracegrad.ones(1), map_location="cuda")
    data = saved_bytes(tracegrad.ones(1))
    index = index_of(data)
    index["tensors"][0]["device"] = "cuda:0"  # as if saved on a GPU machine
    moved = rewrite(data, index)
    with pytest.raises(RuntimeError, match="map_location=tracegrad.device\\('cpu'\\)"):
        tracegrad.load(io.BytesIO(moved))
    assert tracegrad.load(io.BytesIO(moved), map_location="cpu").tolist() == [1.0]
    assert tracegrad.load(io.BytesIO(moved), map_location={"cuda:0": "cpu"}).tolist() == [1.0]


def test_bad_map_location():
    with pytest.raises(TypeError, match="map_location should be None, a str, .* not int"):
        roundtrip(1, map_location=3)
    with pytest.raises(TypeError, match="not dict"):
        roundtrip(1, map_location={"cpu": 0})
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, meta device type"):
        roundtrip(1, map_location="gpu")


# -- oracle ---------------------------------------------------------------------------------
@pytest.mark.torch
def test_same_structure_as_torch_load():
    torch = pytest.importorskip("torch")

    def build(lib):
        leaf = lib.ones(2, requires_grad=True)
        return {"epoch": 1, "sd": OrderedDict(w=lib.nn.Parameter(lib.zeros(2)), b=lib.ones(1)),
                "l": [leaf, leaf * 2, (1, 2.0, None, "s")], "k": {0: lib.tensor([1, 2])}}

    buf = io.BytesIO()
    torch.save(build(torch), buf)
    buf.seek(0)
    want = torch.load(buf)
    got = roundtrip(build(tracegrad))

    def shape_of(x):
        if isinstance(x, (torch.Tensor, tracegrad.Tensor)):
            return (type(x).__name__, str(x.dtype).split(".")[-1], tuple(x.shape), x.requires_grad,
                    x.is_leaf, x.detach().numpy().tolist())
        if isinstance(x, dict):
            return (type(x).__name__, [(k, shape_of(v)) for k, v in x.items()])
        if isinstance(x, (list, tuple)):
            return (type(x).__name__, [shape_of(v) for v in x])
        return x

    assert shape_of(got) == shape_of(want)


# -- reading without copies: sizes checked first, CRC-32 on the way, mmap -------------------
def zip_of(raw):
    """An archive holding ``raw`` (name -> bytes), stored as zipfile writes by default."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in raw.items():
            zf.writestr(name, data)
    return out.getvalue()


def entries_of(data):
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def npy_bytes(arr):
    buf = io.BytesIO()
    npy.write_array(buf, arr)
    return buf.getvalue()


def declaring(data, key, shape):
    """``data`` with tensor ``key``'s .npy header and index entry declaring ``shape``; the
    entry's bytes stay what they were."""
    raw = entries_of(data)
    index = index_of(data)
    next(e for e in index["tensors"] if e["key"] == key)["shape"] = list(shape)
    arr = npy.read_array(io.BytesIO(raw[key + ".npy"]))
    head = io.BytesIO()
    npy.write_array_header_1_0(head, {"descr": npy.dtype_to_descr(arr.dtype), "fortran_order": False,
                                      "shape": tuple(shape)})
    raw[key + ".npy"] = head.getvalue() + arr.tobytes()
    raw[INDEX] = npy_bytes(np.frombuffer(json.dumps(index).encode(), np.uint8))
    return zip_of(raw)


def directory_says(data, name, size):
    """``data`` with the zip directory's sizes of entry ``name`` set to ``size`` bytes."""
    data = bytearray(data)
    at = data.index(b"PK\x05\x06")
    at = int.from_bytes(data[at + 16:at + 20], "little")  # the central directory's start
    while data[at:at + 4] == b"PK\x01\x02":
        n, m, k = (int.from_bytes(data[at + i:at + i + 2], "little") for i in (28, 30, 32))
        if data[at + 46:at + 46 + n] == name.encode():
            data[at + 20:at + 28] = size.to_bytes(4, "little") * 2
            return bytes(data)
        at += 46 + n + m + k
    raise AssertionError(f"no entry {name}")


def test_declared_size_beyond_the_entry_is_refused_before_allocating(tmp_path):
    """A header that says 1 GiB over an entry holding 24 bytes: refused, naming the file and
    the entry, without asking for the memory (tracemalloc sees NumPy's allocations)."""
    f = tmp_path / "liar.pt"
    f.write_bytes(declaring(saved_bytes(sample()), "t0", (2**28,)))
    tracemalloc.start()
    try:
        msg = load_error(f)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert msg.startswith(f"cannot load {str(f)!r}: the file is corrupt: entry 't0.npy' declares "
                          "1073741824 bytes of data (shape (268435456,), float32) but holds only 24"), msg
    assert peak < 2**20, peak


def test_directory_size_beyond_the_file_is_refused_before_allocating(tmp_path):
    """The zip directory, the index and the header all say 1 GiB; the file is 1 MiB."""
    data = saved_bytes({"w": tracegrad.zeros(2**18)})
    data = declaring(data, "t0", (2**28,))
    data = directory_says(data, "t0.npy", 2**30 + 128)
    f = tmp_path / "short.pt"
    f.write_bytes(data)
    for mmap in (False, True):
        tracemalloc.start()
        try:
            with pytest.raises(RuntimeError) as info:
                tracegrad.load(f, mmap=mmap)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert re.match(rf"cannot load {re.escape(repr(str(f)))}: the file is corrupt or truncated: "
                        r"entry 't0.npy' says it holds 1073741952 bytes from byte \d+, but the file "
                        rf"ends at byte {len(data)}$", str(info.value)), str(info.value)
        assert peak < 2**20, peak


def test_entry_longer_than_its_header_says():
    data = saved_bytes(sample())
    raw = entries_of(data)
    raw["t1.npy"] += b"\0" * 8
    assert "entry 't1.npy' is longer than its header says" in load_error(zip_of(raw))


def test_overlapping_entries_are_refused():
    """Two entries claiming the same bytes (a zip bomb's trick) are refused."""
    data = saved_bytes(sample())
    size = len(entries_of(data)["t0.npy"])
    assert "entries 't0.npy' and 't1.npy' overlap" in load_error(directory_says(data, "t0.npy", size + 40))


def test_compressed_entries_are_refused_before_inflating():
    """A deflated entry is refused, not inflated: here a zip bomb, under 128 KiB that
    inflate to the 64 MiB its header declares (the old loader allocated and filled it)."""
    raw = entries_of(declaring(saved_bytes(sample()), "t0", (2**24,)))
    head = io.BytesIO()
    npy.write_array_header_1_0(head, {"descr": "<f4", "fortran_order": False, "shape": (2**24,)})
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w") as zf:
        for name, blob in raw.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED if name == "t0.npy" else zipfile.ZIP_STORED
            with zf.open(info, "w", force_zip64=True) as m:
                m.write(head.getvalue() if name == "t0.npy" else blob)
                for _ in range(64 if name == "t0.npy" else 0):
                    m.write(bytes(2**20))
    assert len(bomb.getvalue()) < 2**17
    tracemalloc.start()
    try:
        msg = load_error(bomb.getvalue())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert msg == ("cannot load the BytesIO given: entry 't0.npy' is compressed or encrypted; "
                   "tracegrad.save stores entries as they are"), msg
    assert peak < 2**20, peak


def big():
    """A tensor of several read chunks (the loader reads and checksums 4 MiB at a time)."""
    return tracegrad.arange(float(3 * 2**20 + 5))


@pytest.mark.parametrize("how", ["read", "mmap", "parts"])
def test_flipped_byte_deep_in_a_large_tensor_is_a_crc_error(tmp_path, monkeypatch, how):
    """In the first and in the last part of a large tensor. "read": by one thread (as on a
    1-core machine); "parts": by 4 threads in small chunks (as on a 4-core machine), whose
    CRCs are combined."""
    cores = {0, 1, 2, 3} if how == "parts" else {0}
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: cores, raising=False)
    if how == "parts":
        monkeypatch.setattr(serialization, "_CHUNK", 4096)
        monkeypatch.setattr(serialization, "_PART", 2**20)
    combined = []
    combine = serialization._crc32_combine
    monkeypatch.setattr(serialization, "_crc32_combine", lambda *a: combined.append(a) or combine(*a))
    f = tmp_path / "big.pt"
    tracegrad.save({"w": big()}, f)
    good = f.read_bytes()
    assert tracegrad.load(f, mmap=how == "mmap")["w"].tolist()[-1] == 3 * 2**20 + 4
    assert len(combined) == (3 if how == "parts" else 0)
    for pos in (good.index(np.arange(1, 3, dtype=np.float32).tobytes()) + 5, len(good) - 2**20):
        bad = bytearray(good)
        bad[pos] ^= 0x01
        f.write_bytes(bad)
        with pytest.raises(RuntimeError) as info:
            tracegrad.load(f, mmap=how == "mmap")
        assert str(info.value) == f"cannot load {str(f)!r}: the file is corrupt: entry 't0.npy' fails its CRC-32 check"


def test_crc32_combine_matches_zlib():
    rng = np.random.default_rng(0)
    data = rng.integers(0, 256, 100_000, dtype=np.uint8).tobytes()
    for cut in (0, 1, 7, 4096, 65537, len(data) - 1, len(data)):
        a, b = data[:cut], data[cut:]
        assert serialization._crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(data), cut
    zeros = bytes(3 * 2**20 + 5)
    assert serialization._crc32_combine(zlib.crc32(b"x"), zlib.crc32(zeros), len(zeros)) == zlib.crc32(b"x" + zeros)


def test_every_truncation_is_an_error_with_mmap(tmp_path):
    data = saved_bytes(sample())
    f = tmp_path / "cut.pt"
    for n in range(0, len(data), 7):
        f.write_bytes(data[:n])
        with pytest.raises(RuntimeError, match=f"cannot load {re.escape(repr(str(f)))}: "):
            tracegrad.load(f, mmap=True)


def test_flipped_bytes_with_mmap(tmp_path):
    """As test_flipped_bytes_are_caught_or_harmless, through the mapped file."""
    data = saved_bytes(sample())
    f = tmp_path / "flip.pt"
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x80
        f.write_bytes(bad)
        try:
            out = tracegrad.load(f, mmap=True)
        except RuntimeError:
            continue
        assert equals_sample(out), f"byte {i} flipped loaded wrong values"


def test_loaded_tensors_are_writable_and_independent_of_the_file(tmp_path):
    f = tmp_path / "w.pt"
    tracegrad.save({"w": big(), "s": tracegrad.ones(3)}, f)
    out = tracegrad.load(f)
    assert out["w"].numpy().flags.writeable and out["s"].numpy().flags.writeable
    before = f.read_bytes()
    out["w"].mul_(2)
    out["s"][0] = 7
    assert f.read_bytes() == before  # writes stay in memory
    tracegrad.save({"w": tracegrad.zeros(3 * 2**20 + 5), "s": tracegrad.zeros(3)}, f)  # rewritten
    assert out["w"][-1].item() == 2 * (3 * 2**20 + 4) and out["s"].tolist() == [7, 1, 1]
    f.unlink()
    assert out["w"].sum().item() == float(np.arange(3 * 2**20 + 5, dtype=np.float32).sum(dtype=np.float32) * 2)


def test_mmap_maps_the_file_copy_on_write(tmp_path):
    f = tmp_path / "m.pt"
    tracegrad.save({"w": big(), "p": nn.Parameter(tracegrad.ones(2, 3))}, f)
    before = f.read_bytes()
    mapped, read = tracegrad.load(f, mmap=True), tracegrad.load(f)
    assert_same_tensor(mapped["w"], read["w"])
    assert type(mapped["p"]) is nn.Parameter and mapped["p"].requires_grad
    w = mapped["w"].numpy()
    assert not w.flags.owndata and w.flags.writeable and w.ctypes.data % 64 == 0  # aligned by save
    mapped["w"][:4].add_(1)  # a private copy of the page written; the file is untouched
    assert mapped["w"][:5].tolist() == [1, 2, 3, 4, 4] and f.read_bytes() == before
    assert tracegrad.load(f, mmap=True)["w"][:2].tolist() == [0, 1]
    if sys.platform.startswith("linux"):  # pages not written are the file's (Linux's MAP_PRIVATE)
        with open(f, "r+b") as fh:
            fh.seek(before.index(np.arange(2**20, 2**20 + 4, dtype=np.float32).tobytes()))
            fh.write(np.float32(-5).tobytes())
        assert mapped["w"][2**20].item() == -5  # mapped: the file's change shows
        assert read["w"][2**20].item() == 2**20  # read: independent of the file
        assert mapped["w"][0].item() == 1  # the written page stays private


def test_mmap_needs_a_path():
    buf = io.BytesIO(saved_bytes(sample()))
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
        tracegrad.load(buf, mmap=True)
    assert equals_sample(tracegrad.load(buf, mmap=False))
    assert equals_sample(tracegrad.load(io.BytesIO(buf.getvalue()), mmap=None))


def test_mmap_of_an_unaligned_file_and_of_empty_tensors(tmp_path):
    """A file not written by this save (no alignment padding) still maps; empty and 0-d
    tensors need no mapping."""
    data = saved_bytes({**sample(), "e": tracegrad.zeros(0, 3), "z": tracegrad.tensor(2.5)})
    f = tmp_path / "plain.pt"
    f.write_bytes(rewrite(data, index_of(data)))
    out = tracegrad.load(f, mmap=True)
    assert equals_sample({k: out[k] for k in ("epoch", "w", "i", "l")})
    assert tuple(out["e"].shape) == (0, 3) and out["z"].item() == 2.5
    out["z"].add_(1)
    assert out["z"].item() == 3.5


class Sink(io.RawIOBase):
    """A stream that can be written, not sought (zipfile then writes data descriptors)."""
    def __init__(self):
        self.data = bytearray()

    def writable(self):
        return True

    def write(self, b):
        self.data += b
        return len(b)


def test_saved_entries_start_at_multiples_of_64():
    """Also after a prefix in the file, and on a stream that cannot seek."""
    obj = {**sample(), "b": tracegrad.ones(5, dtype=tracegrad.float64)}
    for prefix, out in [(b"", io.BytesIO()), (b"abc", io.BytesIO(b"abc")), (b"", Sink())]:
        if out.seekable():
            out.seek(len(prefix))
        tracegrad.save(obj, out)
        data = bytes(out.data) if isinstance(out, Sink) else out.getvalue()
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            for info in zf.infolist():
                at = info.header_offset
                n, m = (int.from_bytes(data[at + i:at + i + 2], "little") for i in (26, 28))
                assert (at + 30 + n + m) % 64 == 0, (prefix, type(out), info.filename)
        src = io.BytesIO(data)
        src.seek(len(prefix))
        out = tracegrad.load(src)
        assert equals_sample({k: v for k, v in out.items() if k != "b"}) and out["b"].tolist() == [1] * 5


def test_file_objects_without_readinto_and_with_an_offset():
    class Reader:  # read, seek and tell only
        def __init__(self, data):
            self._buf = io.BytesIO(data)

        def read(self, n=-1):
            return self._buf.read(n)

        def seek(self, *args):
            return self._buf.seek(*args)

        def tell(self):
            return self._buf.tell()

        def seekable(self):
            return True

    data = saved_bytes({**sample(), "big": big()})
    out = tracegrad.load(Reader(data))
    assert out["big"][-1].item() == 3 * 2**20 + 4
    assert equals_sample({k: v for k, v in out.items() if k != "big"})
    buf = io.BytesIO(b"x" * 100 + data)
    buf.seek(100)
    out = tracegrad.load(buf)
    assert out["big"].tolist() == big().tolist()
    buf = io.BytesIO(data)
    buf.seek(5)
    assert "not an .npz archive" in load_error(buf.read())


def test_save_accepts_pytorchs_pickle_and_archive_options():
    """``_use_new_zipfile_serialization``/``pickle_protocol``/``pickle_module`` (PyTorch's
    saving docs name the first): accepted, the file is tracegrad's own either way."""
    import io
    import pickle
    buf = io.BytesIO()
    tracegrad.save({"w": tracegrad.arange(3.0)}, buf, pickle_module=pickle, pickle_protocol=4, _use_new_zipfile_serialization=False)
    buf.seek(0)
    assert tracegrad.load(buf)["w"].tolist() == [0.0, 1.0, 2.0]


def test_a_parametrized_module_refuses_with_its_own_runtime_error():
    """Its own refusal (a RuntimeError pointing at state_dict()) reaches the caller as it
    is, so code that catches RuntimeError and saves the state dict instead works; what
    pickle cannot reduce stays a TypeError naming where it is."""
    from tracegrad.nn.utils.parametrizations import weight_norm
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only supported through state_dict"):
        tracegrad.save(weight_norm(nn.Linear(2, 2)), io.BytesIO())
    with pytest.raises(TypeError, match=r"cannot save object of type lock at \['a'\]"):
        tracegrad.save({"a": threading.Lock()}, io.BytesIO())
