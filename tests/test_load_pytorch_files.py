"""``tracegrad.load`` of checkpoints PyTorch's ``torch.save`` wrote: tensors (views of one
storage share memory again), parameters, an optimizer's state, containers and plain values;
``weights_only`` refusing anything else by name; a whole pickled module with
``weights_only=False``; map_location. The files in tests/data were written by PyTorch 2.13
(tests/data/make_pytorch_files.py: every value comes from ``arange``)."""
import collections
import io
import pathlib
import pickle

import numpy as np
import pytest

import tracegrad as tg

DATA = pathlib.Path(__file__).parent / "data"


def test_a_pytorch_checkpoint_loads_with_its_values_and_shared_storage():
    ck = tg.load(DATA / "pytorch_checkpoint.pt")
    assert ck["epoch"] == 3 and ck["loss"] == 0.25 and ck["name"] == "run"
    base = np.arange(12, dtype=np.float32)
    np.testing.assert_array_equal(ck["base"].numpy(), base)
    np.testing.assert_array_equal(ck["view"].numpy(), base[2:8:2])
    np.testing.assert_array_equal(ck["matrix_t"].numpy(), base.reshape(3, 4).T)
    assert ck["view"].stride() == (2,) and ck["matrix_t"].stride() == (1, 4)
    ck["base"][4] = 100.0  # (view and base were one storage in PyTorch: they are again)
    assert ck["view"].tolist() == [2.0, 100.0, 6.0] and ck["matrix_t"][0, 1].item() == 100.0
    assert isinstance(ck["param"], tg.nn.Parameter) and ck["param"].dtype is tg.float64
    assert ck["param"].tolist() == [0.0, 1.0, 2.0] and ck["param"].requires_grad
    assert ck["ints"].dtype is tg.int64 and ck["half"].dtype is tg.float16 and ck["flags"].tolist() == [True, False]
    assert ck["cplx"].dtype is tg.complex64 and ck["cplx"].tolist() == [1 + 2j, -1j]
    assert ck["size"] == (2, 3) and isinstance(ck["size"], tg.Size)
    assert ck["dtype"] is tg.float64 and ck["device"] == tg.device("cpu")
    assert ck["ordered"] == collections.OrderedDict(a=1, b=(2, 3)) and type(ck["ordered"]) is collections.OrderedDict
    assert ck["grad_leaf"].requires_grad and ck["grad_leaf"].is_leaf


def test_a_model_and_its_optimizer_resume_from_a_pytorch_checkpoint():
    ck = tg.load(DATA / "pytorch_checkpoint.pt")
    lin = tg.nn.Linear(3, 2)
    lin.load_state_dict(ck["model"])
    opt = tg.optim.Adam(lin.parameters(), lr=0.1)
    opt.load_state_dict(ck["optimizer"])
    assert opt.state_dict()["state"][0]["step"].item() == 1.0
    # the step PyTorch took: Adam's first step moves each weight by lr against its gradient's sign
    np.testing.assert_allclose(lin.weight.detach().numpy(), np.arange(6.0).reshape(2, 3) / 10 - 0.1, atol=1e-6)
    lin(tg.ones(1, 3)).sum().backward()
    opt.step()  # (resumes: the second step uses the moments PyTorch saved)
    assert opt.state_dict()["state"][0]["step"].item() == 2.0


def test_weights_only_refuses_other_globals_by_name_and_a_trusted_module_loads():
    with pytest.raises(pickle.UnpicklingError, match="names the global torch.nn.modules.linear.Linear"):
        tg.load(DATA / "pytorch_whole_module.pt")
    lin = tg.load(DATA / "pytorch_whole_module.pt", weights_only=False)
    assert isinstance(lin, tg.nn.Linear)
    out = lin(tg.tensor([[1.0, 2.0, 3.0]]))
    want = np.array([[1.0, 2.0, 3.0]]) @ (np.arange(6.0).reshape(2, 3) / 10 - 0.1).T + np.array([0.4, -0.6])
    np.testing.assert_allclose(out.detach().numpy(), want, atol=1e-6)


def test_map_location_and_streams():
    raw = (DATA / "pytorch_checkpoint.pt").read_bytes()
    seen = []
    ck = tg.load(io.BytesIO(raw), map_location=lambda t, where: seen.append(where))
    assert set(seen) == {"cpu"} and ck["base"].device == tg.device("cpu")
    assert tg.load(io.BytesIO(raw), map_location="cpu")["ints"].tolist() == [0, 1, 2, 3]


def test_pytorchs_legacy_format_is_refused_by_name(tmp_path):
    legacy = tmp_path / "legacy.pt"
    legacy.write_bytes(b"\x80\x02\x8a\x0a" + bytes(16))  # (how such a file starts: its magic number)
    with pytest.raises(RuntimeError, match="PyTorch's legacy format"):
        tg.load(legacy)


@pytest.mark.torch
def test_a_state_dict_pytorch_saves_now_loads_equal(tmp_path):
    import torch
    net = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3), torch.nn.Flatten(),
                              torch.nn.LazyLinear(4))
    net(torch.randn(2, 2, 5, 5))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    net(torch.randn(2, 2, 5, 5)).sum().backward()
    opt.step()
    torch.save({"net": net.state_dict(), "opt": opt.state_dict()}, tmp_path / "ck.pt")
    ours = tg.load(tmp_path / "ck.pt")
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(ours["net"][k].numpy(), v.numpy())
    for i, st in opt.state_dict()["state"].items():
        np.testing.assert_array_equal(ours["opt"]["state"][i]["momentum_buffer"].numpy(), st["momentum_buffer"].numpy())
    assert ours["opt"]["param_groups"] == opt.state_dict()["param_groups"]
