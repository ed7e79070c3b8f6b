"""torch.hub's cache directory ($TORCH_HOME), downloads (file:// and a refused local port:
no network) and checkpoint loading through tracegrad.load; GitHub hub repositories refused
by name; tqdm, or a stand-in with tqdm's calls when the package is missing."""
import hashlib
import io
import os
import pickle
import sys
import urllib.error
import urllib.request
import zipfile

import numpy as np
import pytest

import tracegrad as torch
import tracegrad.hub as hub

CLOSED_PORT_URL = "http://127.0.0.1:9/weights/w.pth"  # the discard port: nothing listens


class Box:
    def __init__(self, v):
        self.v = v


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fresh $TORCH_HOME, no set_dir in force and no deprecated variables."""
    for var in ("TORCH_HUB", "TORCH_MODEL_ZOO", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    monkeypatch.setattr(hub, "_hub_dir", None)
    return tmp_path / "th"


def _state():
    return {"w": torch.arange(6.0).reshape(2, 3), "b": torch.zeros(3)}


def _checkpoints(home):
    d = home / "hub" / "checkpoints"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _assert_state(sd):
    assert sorted(sd) == ["b", "w"]
    np.testing.assert_array_equal(sd["w"].numpy(), np.arange(6.0).reshape(2, 3))


# -- the directory ------------------------------------------------------------------------
def test_get_dir_follows_torch_home_then_xdg_then_home(home, monkeypatch):
    assert hub.get_dir() == str(home / "hub")
    monkeypatch.delenv("TORCH_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
    assert hub.get_dir() == "/somewhere/cache/torch/hub"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert hub.get_dir() == os.path.expanduser("~/.cache/torch/hub")
    monkeypatch.setenv("TORCH_HOME", "~/th")
    assert hub.get_dir() == os.path.join(os.path.expanduser("~/th"), "hub")


def test_set_dir_wins_and_expands_the_home(home, tmp_path):
    hub.set_dir(tmp_path / "mine")
    assert hub.get_dir() == str(tmp_path / "mine")
    hub.set_dir("~/hubdir")
    assert hub.get_dir() == os.path.expanduser("~/hubdir")


def test_deprecated_torch_hub_variable_warns(home, monkeypatch):
    monkeypatch.setenv("TORCH_HUB", "/old")
    with pytest.warns(UserWarning, match="TORCH_HUB is deprecated"):
        assert hub.get_dir() == str(home / "hub")


# -- load_state_dict_from_url -------------------------------------------------------------
def test_a_file_in_the_checkpoints_dir_is_loaded_without_downloading(home, monkeypatch, capsys):
    torch.save(_state(), _checkpoints(home) / "w.pth")
    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: pytest.fail("downloaded a cached file"))
    _assert_state(hub.load_state_dict_from_url(CLOSED_PORT_URL))
    assert capsys.readouterr().out == ""


def test_map_location_and_weights_only_are_passed_on(home):
    torch.save({"w": torch.ones(2), "box": Box(3)}, _checkpoints(home) / "w.pth")
    seen = []
    sd = hub.load_state_dict_from_url(CLOSED_PORT_URL, weights_only=False,
                                      map_location=lambda t, where: seen.append(where))
    assert sd["box"].v == 3 and seen == ["cpu"]
    with pytest.raises(pickle.UnpicklingError):
        hub.load_state_dict_from_url(CLOSED_PORT_URL, weights_only=True)


def test_download_then_cache(home, tmp_path, capsys):
    src = tmp_path / "resnet-0123abcd.pth"
    torch.save(_state(), src)
    url = src.as_uri()
    _assert_state(hub.load_state_dict_from_url(url, progress=False))
    cached = _checkpoints(home) / src.name
    assert capsys.readouterr().out == f'Downloading: "{url}" to {cached}\n'
    assert cached.read_bytes() == src.read_bytes()
    src.unlink()
    _assert_state(hub.load_state_dict_from_url(url, progress=False))  # from the cache now
    assert capsys.readouterr().out == ""


def test_model_dir_and_file_name(tmp_path, home):
    src = tmp_path / "src.pth"
    torch.save(_state(), src)
    out = tmp_path / "models"
    _assert_state(hub.load_state_dict_from_url(src.as_uri(), model_dir=str(out), file_name="x.pth", progress=False))
    assert os.listdir(out) == ["x.pth"]


def test_check_hash(tmp_path, home):
    src = tmp_path / "src.pth"
    torch.save(_state(), src)
    prefix = hashlib.sha256(src.read_bytes()).hexdigest()[:10]
    good = hub.load_state_dict_from_url(src.as_uri(), file_name=f"w-{prefix}.pth", check_hash=True, progress=False)
    _assert_state(good)
    with pytest.raises(RuntimeError, match='invalid hash value \\(expected "deadbeef", got "'):
        hub.load_state_dict_from_url(src.as_uri(), file_name="v-deadbeef.pth", check_hash=True, progress=False)
    assert sorted(os.listdir(_checkpoints(home))) == [f"w-{prefix}.pth"]  # nothing partial left


def test_network_failures_are_urllibs_errors(home, tmp_path):
    with pytest.raises(urllib.error.URLError):
        hub.load_state_dict_from_url(CLOSED_PORT_URL, progress=False)
    with pytest.raises(urllib.error.URLError):
        hub.load_state_dict_from_url((tmp_path / "missing.pth").as_uri(), progress=False)
    assert os.listdir(_checkpoints(home)) == []


def test_a_pytorch_checkpoint_loads_and_a_damaged_one_is_refused_naming_the_file(home):
    import pathlib
    import shutil
    shutil.copy(pathlib.Path(__file__).parents[1] / "data" / "pytorch_checkpoint.pt", _checkpoints(home) / "pt.pth")
    loaded = hub.load_state_dict_from_url(CLOSED_PORT_URL.replace("w.pth", "pt.pth"))
    assert loaded["epoch"] == 3 and loaded["ints"].tolist() == [0, 1, 2, 3]  # (tests/data: written by PyTorch)
    path = _checkpoints(home) / "torch.pth"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", b"\x80\x02}q\x00")  # (its pickle cut short)
        zf.writestr("archive/version", b"3\n")
    with pytest.raises(RuntimeError, match="torch.pth"):
        hub.load_state_dict_from_url(CLOSED_PORT_URL.replace("w.pth", "torch.pth"))


def test_a_hand_zipped_checkpoint_is_unzipped(home, tmp_path):
    inner = tmp_path / "inner.pth"
    torch.save(_state(), inner)
    with zipfile.ZipFile(_checkpoints(home) / "w.pth", "w") as zf:
        zf.write(inner, "inner.pth")
    with pytest.warns(FutureWarning, match="tracegrad.save"):
        _assert_state(hub.load_state_dict_from_url(CLOSED_PORT_URL))
    assert (_checkpoints(home) / "inner.pth").exists()


def test_a_saved_file_without_tensors_is_not_taken_for_a_zipped_one(home):
    torch.save({"step": 3}, _checkpoints(home) / "w.pth")
    assert hub.load_state_dict_from_url(CLOSED_PORT_URL) == {"step": 3}


# -- download_url_to_file -----------------------------------------------------------------
def test_download_url_to_file(tmp_path, capsys):
    src = tmp_path / "blob.bin"
    src.write_bytes(os.urandom(300_000))
    dst = tmp_path / "copy.bin"
    hub.download_url_to_file(src.as_uri(), str(dst), progress=False)
    assert dst.read_bytes() == src.read_bytes()
    assert capsys.readouterr().err == ""
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    hub.download_url_to_file(src.as_uri(), str(tmp_path / "checked.bin"), hash_prefix=digest[:8], progress=True)
    assert (tmp_path / "checked.bin").read_bytes() == src.read_bytes()
    with pytest.raises(RuntimeError, match="invalid hash value"):
        hub.download_url_to_file(src.as_uri(), str(tmp_path / "bad.bin"), hash_prefix="0" * 64, progress=False)
    with pytest.raises(urllib.error.URLError):
        hub.download_url_to_file(CLOSED_PORT_URL, str(tmp_path / "net.bin"), progress=False)
    assert sorted(os.listdir(tmp_path)) == ["blob.bin", "checked.bin", "copy.bin"]


# -- hub repositories ---------------------------------------------------------------------
@pytest.mark.parametrize("call", [lambda: hub.load("pytorch/vision:v0.10.0", "resnet18", weights=None),
                                  lambda: hub.list("pytorch/vision:v0.10.0"),
                                  lambda: hub.help("pytorch/vision:v0.10.0", "resnet18")])
def test_github_repositories_are_refused_by_name(call, monkeypatch):
    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: pytest.fail("went to the network"))
    with pytest.raises(RuntimeError, match="tracegrad cannot run torch hub repositories' code: 'pytorch/vision:v0.10.0'"):
        call()


def test_unknown_source():
    with pytest.raises(ValueError, match='Unknown source: "svn"'):
        hub.load("x/y", "m", source="SVN")


def test_a_local_hubconf_runs(tmp_path):
    (tmp_path / "helper.py").write_text("WIDTH = 4\n")
    (tmp_path / "hubconf.py").write_text(
        "import tracegrad as torch\nfrom helper import WIDTH\ndependencies = ['numpy']\n"
        "def tiny(out=2):\n    '''A tiny model.'''\n    return torch.nn.Linear(WIDTH, out)\n")
    model = hub.load(str(tmp_path), "tiny", out=3, source="local")
    assert isinstance(model, torch.nn.Linear) and tuple(model.weight.shape) == (3, 4)
    assert str(tmp_path) not in sys.path
    with pytest.raises(RuntimeError, match="Cannot find callable nothing in hubconf"):
        hub.load(str(tmp_path), "nothing", source="local")
    (tmp_path / "hubconf.py").write_text("dependencies = ['no_such_module_xyz']\n")
    with pytest.raises(RuntimeError, match="Missing dependencies: no_such_module_xyz"):
        hub.load(str(tmp_path), "tiny", source="local")


# -- tqdm ---------------------------------------------------------------------------------
def test_tqdm_is_the_packages_when_installed():
    tqdm = pytest.importorskip("tqdm")
    from tracegrad.hub import tqdm as bar
    assert bar is tqdm.tqdm


def test_stand_in_tqdm_when_the_package_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm now fails
    from tracegrad.hub import tqdm
    assert tqdm is hub._StandInTqdm
    out = io.StringIO()
    bar = tqdm(range(4), desc="epochs", file=out)
    assert len(bar) == 4 and list(bar) == [0, 1, 2, 3] and bar.n == 4
    assert "epochs: 100% 4/4 it" in out.getvalue() and out.getvalue().endswith("\n")
    out = io.StringIO()
    with tqdm(total=2048, unit="B", unit_scale=True, unit_divisor=1024, file=out) as b:
        b.update(1024)
        b.set_description("get")
        b.set_postfix(loss=0.5)
        b.update(1024)
    assert b.n == 2048 and "get: 100% 2.0k/2.0k B, loss=0.5" in out.getvalue()
    quiet = io.StringIO()
    with tqdm(total=3, disable=True, file=quiet) as b:
        b.update(3)
    assert quiet.getvalue() == ""


def test_downloads_work_with_the_stand_in(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    src = tmp_path / "blob.bin"
    src.write_bytes(b"x" * 5000)
    hub.download_url_to_file(src.as_uri(), str(tmp_path / "copy.bin"))
    assert (tmp_path / "copy.bin").read_bytes() == src.read_bytes()
    assert "100%" in capsys.readouterr().err


# -- oracle -------------------------------------------------------------------------------
@pytest.mark.torch
def test_get_dir_as_torch(home, monkeypatch):
    import torch.hub as real
    monkeypatch.setattr(real, "_hub_dir", None)
    assert hub.get_dir() == real.get_dir()
    monkeypatch.delenv("TORCH_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", "/x/cache")
    assert hub.get_dir() == real.get_dir()
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert hub.get_dir() == real.get_dir()
