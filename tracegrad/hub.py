"""``tracegrad.hub``: the cache directory, file downloads and checkpoint loading of
``torch.hub``.

``load_state_dict_from_url`` reads a file from ``<hub dir>/checkpoints`` when it is there
and otherwise downloads it with :mod:`urllib` first; the file is read with
:func:`tracegrad.load`: one that :func:`tracegrad.save` wrote, or a checkpoint in PyTorch's
zip format (a damaged or legacy one is refused with an error naming the file). GitHub hub repositories are not run:
their ``hubconf.py`` builds models from PyTorch and torchvision internals, so ``load``,
``list`` and ``help`` on one raise, naming the repository. ``load(dir, model,
source='local')`` runs a local ``hubconf.py``, which is the user's own code.

``tqdm`` is the tqdm package's progress bar, imported on first use; without the package
a small stand-in with the same calls (iteration, ``update``, ``set_description``,
``close``, ``with``) writes the progress to stderr.
"""
import contextlib
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import uuid
import warnings
import zipfile
from urllib.parse import urlparse

from .serialization import INDEX as _SAVE_INDEX
from .serialization import load as _load

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")  # resnet18-bfd8deac.pth -> bfd8deac
ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
READ_DATA_CHUNK = 128 * 1024
_hub_dir = None


# -- the progress bar ------------------------------------------------------------------------
class _StandInTqdm:
    """tqdm's common calls, for when the tqdm package is not installed: the count (and
    the percentage when the total is known) rewritten on one stderr line."""

    def __init__(self, iterable=None, desc=None, total=None, leave=True, file=None, disable=False,
                 unit="it", unit_scale=False, unit_divisor=1000, initial=0, **kwargs):
        if total is None and iterable is not None:
            with contextlib.suppress(TypeError):
                total = len(iterable)
        self.iterable, self.desc, self.total, self.leave = iterable, desc or "", total, leave
        self.file = file if file is not None else sys.stderr
        self.disable, self.unit, self.n, self.postfix = disable, unit, initial, ""
        self._divisor = unit_divisor if unit_scale else None
        self._shown = False

    def __iter__(self):
        if self.iterable is None:
            raise TypeError("this progress bar was made without an iterable")
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __len__(self):
        return self.total if self.total is not None else len(self.iterable)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _size(self, x):
        if self._divisor is None:
            return f"{x:g}"
        for prefix in ("", "k", "M", "G", "T"):
            if abs(x) < self._divisor:
                return f"{x:.1f}{prefix}" if prefix else f"{x:g}"
            x /= self._divisor
        return f"{x:.1f}P"

    def refresh(self):
        if self.disable:
            return
        head = f"{self.desc}: " if self.desc else ""
        pct = f"{100 * self.n / self.total:3.0f}% " if self.total else ""
        of = f"/{self._size(self.total)}" if self.total is not None else ""
        tail = f", {self.postfix}" if self.postfix else ""
        self.file.write(f"\r{head}{pct}{self._size(self.n)}{of} {self.unit}{tail}")
        self.file.flush()
        self._shown = True

    def update(self, n=1):
        self.n += n
        self.refresh()

    def set_description(self, desc=None, refresh=True):
        self.desc = desc or ""
        if refresh:
            self.refresh()

    set_description_str = set_description

    def set_postfix(self, ordered_dict=None, refresh=True, **kwargs):
        items = {**(ordered_dict or {}), **kwargs}
        self.postfix = ", ".join(f"{k}={v}" for k, v in items.items())
        if refresh:
            self.refresh()

    def set_postfix_str(self, s="", refresh=True):
        self.postfix = s
        if refresh:
            self.refresh()

    def close(self):
        if self._shown and not self.disable:
            self.file.write("\n")
            self.file.flush()
        self.disable = True

    @classmethod
    def write(cls, s, file=None, end="\n"):
        (file or sys.stdout).write(s + end)


def _tqdm():
    try:
        from tqdm import tqdm
    except ImportError:
        return _StandInTqdm
    return tqdm


def __getattr__(name):
    # ``from tracegrad.hub import tqdm`` imports tqdm only when someone asks for it.
    if name == "tqdm":
        return _tqdm()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- the cache directory -------------------------------------------------------------------
def _get_torch_home():
    default = os.path.join(os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "torch")
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME, default))


def get_dir():
    """Where hub files go: the directory :func:`set_dir` named, else ``$TORCH_HOME/hub``
    (``$TORCH_HOME`` defaulting to ``$XDG_CACHE_HOME/torch``, that to ``~/.cache/torch``)."""
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    return _hub_dir if _hub_dir is not None else os.path.join(_get_torch_home(), "hub")


def set_dir(d):
    """Use directory ``d`` (``~`` expanded) for hub files from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


# -- downloads -----------------------------------------------------------------------------
def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Save what ``url`` serves at path ``dst``. The bytes go to a ``.partial`` file beside
    it, moved into place only when complete (and, with ``hash_prefix``, only when their
    SHA-256 starts with it), so a failed download never leaves a broken ``dst``. Network
    failures are urllib's errors."""
    # imported here, not at the top: it is most of this module's import time
    from urllib.request import Request, urlopen

    dst = os.path.expanduser(dst)
    partial = f"{dst}.{uuid.uuid4().hex}.partial"
    sha256 = hashlib.sha256() if hash_prefix is not None else None
    f = open(partial, "xb")  # noqa: SIM115  (closed by the with below, removed by finally)
    try:
        with f, urlopen(Request(url, headers={"User-Agent": "tracegrad.hub"})) as u:
            length = u.info().get_all("Content-Length")
            size = int(length[0]) if length else None
            with _tqdm()(total=size, disable=not progress, unit="B", unit_scale=True, unit_divisor=1024) as bar:
                while chunk := u.read(READ_DATA_CHUNK):
                    f.write(chunk)
                    if sha256 is not None:
                        sha256.update(chunk)
                    bar.update(len(chunk))
        if sha256 is not None:
            digest = sha256.hexdigest()
            if digest[:len(hash_prefix)] != hash_prefix:
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
        shutil.move(partial, dst)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def _single_file_zip(filename):
    """The one member of a zip holding one saved file (a checkpoint someone zipped by hand,
    as PyTorch's hub accepts), or None; a tracegrad file is a zip too, but never this."""
    if not zipfile.is_zipfile(filename):
        return None
    with zipfile.ZipFile(filename) as zf:
        members = zf.infolist()
    if len(members) != 1 or members[0].is_dir() or members[0].filename == _SAVE_INDEX + ".npy":
        return None
    return members[0]


def _extract(filename, member, model_dir):
    """``member`` extracted into ``model_dir``, refusing names that would land outside it."""
    name = os.path.normpath(member.filename)
    root = os.path.realpath(model_dir)
    target = os.path.realpath(os.path.join(root, name))
    if os.path.isabs(name) or os.path.commonpath([root, target]) != root:
        raise ValueError(f"Archive entry escapes target directory: {member.filename}")
    warnings.warn("Loading a checkpoint zipped by hand (PyTorch's format before 1.6): "
                  "save it again with tracegrad.save instead.", FutureWarning, stacklevel=3)
    with zipfile.ZipFile(filename) as zf:
        return zf.extract(member, root)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False,
                             file_name=None, weights_only=False):
    """Load (with :func:`tracegrad.load`) the file ``url`` names, downloading it into
    ``model_dir`` (default ``<get_dir()>/checkpoints``) unless it is there already.

    ``file_name`` replaces the URL's last path part as the local name. With ``check_hash``
    that name must read ``name-<sha256 prefix>.ext``, and the download is checked against it.
    ``map_location`` and ``weights_only`` are passed to :func:`tracegrad.load`.
    """
    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
        match = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached_file, match.group(1) if match else None, progress=progress)
    member = _single_file_zip(cached_file)
    if member is not None:
        cached_file = _extract(cached_file, member, model_dir)
    return _load(cached_file, map_location=map_location, weights_only=weights_only)


# -- hub repositories ----------------------------------------------------------------------
def _no_github(github):
    return RuntimeError(
        f"tracegrad cannot run torch hub repositories' code: {github!r} is a GitHub repository "
        "whose hubconf.py builds its models from PyTorch internals (torch._C, torchvision's "
        "operators) that tracegrad does not have. Build the model with tracegrad.nn and load "
        "its weights with tracegrad.hub.load_state_dict_from_url (from a file saved by "
        "tracegrad.save), or pass source='local' with a directory whose hubconf.py uses tracegrad.")


def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True):
    """The entry points of a GitHub hub repository: refused (see the module docstring)."""
    raise _no_github(github)


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):
    """An entry point's docstring from a GitHub hub repository: refused."""
    raise _no_github(github)


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    """``model(*args, **kwargs)`` from the ``hubconf.py`` of a local directory
    (``source='local'``); a GitHub repository (the default source) is refused."""
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        raise _no_github(repo_or_dir)
    return _load_local(repo_or_dir, model, *args, **kwargs)


def _load_local(hubconf_dir, model, *args, **kwargs):
    sys.path.insert(0, hubconf_dir)  # so hubconf.py can import its neighbours
    try:
        spec = importlib.util.spec_from_file_location(MODULE_HUBCONF, os.path.join(hubconf_dir, MODULE_HUBCONF))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        missing = [d for d in getattr(module, VAR_DEPENDENCY, None) or [] if importlib.util.find_spec(d) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
        if not isinstance(model, str):
            raise ValueError("Invalid input: model should be a string of function name")
        entry = getattr(module, model, None)
        if entry is None or not callable(entry):
            raise RuntimeError(f"Cannot find callable {model} in hubconf")
        return entry(*args, **kwargs)
    finally:
        sys.path.remove(hubconf_dir)
