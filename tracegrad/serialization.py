"""``tracegrad.save`` / ``tracegrad.load``: tensors and containers of them, without pickle.

Loading a pickle can run arbitrary code, so a tracegrad file holds data only: one NumPy
``.npz`` archive (a zip of ``.npy`` arrays, read back with pickling off) whose entry
``__tracegrad_index__`` is a small JSON document, stored as a uint8 array, that describes
the saved object: its containers and plain values, and for every tensor its dtype, shape,
``requires_grad``, device and whether it was an ``nn.Parameter``. Every entry's CRC-32 is
checked and each array against the index, so a truncated, corrupt or foreign file is a
``RuntimeError`` naming the file, never wrong values.

Entries are stored uncompressed, their data aligned to 64 bytes, so loading can find each
array's bytes in the file and read them straight into the array it returns (or map them,
``mmap=True``): the zip module only parses the directory. Every size a file declares is
checked against the bytes it holds before anything is allocated.

Saved and restored: ``dict``, ``OrderedDict``, ``list``, ``tuple``, ``tracegrad.Size``,
``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, dtypes, devices and tensors
(a module's ``state_dict``, an optimizer's, a checkpoint holding both), and the few types
PyTorch's weights-only loader allows by default (``set``, ``bytes``, ``bytearray``,
``collections.Counter``). Any other object is saved by the name of its class and its state
and rebuilt on loading only from globals the user allowlisted (:mod:`tracegrad._weights_only`). Tensors come back as
fresh leaves, as in PyTorch: the graph and ``.grad`` are not saved; a transposed or
permuted tensor keeps its strides, any other comes back contiguous. The same
Tensor object saved twice comes back as one object; different Tensor objects over the very
same elements (a ``state_dict()`` of tied weights has one per name) are saved once and come
back sharing memory, as with PyTorch (index format 2, written only where this happens).
Other storage shared between tensors (a view and its base, overlapping slices) is not
preserved: each is saved as its own copy.

``load`` also reads checkpoints PyTorch's ``torch.save`` wrote (its zip format, with the
same ``weights_only`` rules: see :mod:`tracegrad._torch_files`).
"""
import io
import json
import math
import mmap as _mm
import os
import pickle
import shutil
import struct
import zipfile
import zlib
from base64 import b64decode, b64encode
from collections import Counter, OrderedDict, namedtuple

from . import backend
from ._file_args import name_of as _name_of
from ._file_args import opened as _opened
from ._file_args import seekable as _seekable
from ._map_location import check_map_location as _check_map_location
from ._map_location import parameter_class as _parameter_class
from ._map_location import restore as _restore
from ._torch_files import is_torch_archive, load_torch_archive
from ._weights_only import (Unsaveable, add_safe_globals, clear_safe_globals, decode_object,  # noqa: F401
                            encode_object, get_safe_globals, safe_globals)
from .backend.device import device
from .backend.dtypes import ALL as _DTYPES
from .backend.dtypes import dtype
from .runtime.tensor import Size, Tensor
from .runtime.vmapped import is_vmapped

__all__ = ["load", "save"]

_npy = backend.cpu.lib.format  # NumPy's .npy file format: arrays in a file are host arrays

INDEX = "__tracegrad_index__"
FORMAT = "tracegrad.save"
VERSION = 2  # (2: tensors saved as aliases of others, {"alias": ...})
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # an archive with entries / an empty one
_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed zip timestamps: the same object gives the same bytes
_LOCAL = struct.Struct("<4s2B4HL2L2H")  # a zip entry's local header (as zipfile's structFileHeader)
_HEADER_MAX = 16384  # more than any .npy header NumPy will parse (its max_header_size is 10000)
_ZIP64_EXTRA = 20  # the sizes zipfile adds to each local header under force_zip64
_ALIGN = 64  # where entries' data start in a saved file (as PyTorch aligns its records)
_CHUNK = 1 << 22  # bytes read, or checksummed, at a time: small enough to stay in the cache
_OWN_PAGES = 1 << 22  # arrays from this size are read into a mapping of their own (_empty)
_PART = 1 << 22  # the least a thread reads of a large array (_fill)
_DTYPE_BY_NAME = {d.name: d for d in _DTYPES}
_CONTAINER_TAGS = {list: "list", tuple: "tuple", dict: "dict", OrderedDict: "odict", set: "set",
                   Counter: "counter"}
_SUPPORTED = ("tensors, dict, OrderedDict, Counter, list, tuple, set and plain values (None, bool, "
              "int, float, complex, str, bytes, bytearray, dtype, device, Size)")


# -- save -----------------------------------------------------------------------------------
def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Save ``obj`` (tensors in nested dicts/lists/tuples and plain values) to ``f``, a path
    or a binary file object. Nothing is written if ``obj`` holds something unsupported.
    PyTorch's pickle and archive options are accepted and change nothing: the format is
    tracegrad's own (no pickle)."""
    enc = _Encoder()
    root = enc.encode(obj, "")
    # (format 1 where no tensor is an alias: such a file stays readable by older releases)
    index = {"format": FORMAT, "version": VERSION if enc.aliased else 1, "tensors": enc.entries,
             "root": root}
    text = json.dumps(index, separators=(",", ":"), allow_nan=True).encode()
    arrays = {INDEX: backend.cpu.frombuffer(text, dtype=backend.cpu.uint8), **enc.arrays}
    with _opened(f, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        at = fh.tell() if _seekable(fh) else 0  # where the archive starts (zipfile's view too)
        for name, arr in arrays.items():
            info = zipfile.ZipInfo(name + ".npy", date_time=_EPOCH)
            info.extra = _padding(at, len(info.filename))
            with zf.open(info, "w", force_zip64=True) as member:
                _write_array(member, arr)
            at += _LOCAL.size + len(info.filename) + len(info.extra) + _ZIP64_EXTRA + info.file_size
            at += 24 if info.flag_bits & 0x08 else 0  # the sizes after the data, on a stream


def _write_array(member, arr):
    """``arr`` (C-contiguous) as a .npy file, its data written from its own memory in chunks
    (NumPy's ``write_array`` copies each chunk into a new bytes object first)."""
    _npy.write_array_header_1_0(member, _npy.header_data_from_array_1_0(arr))
    view = _bytes_of(arr)
    for i in range(0, len(view), _CHUNK):
        member.write(view[i:i + _CHUNK])


def _padding(at, name_len):
    """A zip extra field (Android zipalign's, id 0xD935) that pads an entry's local header
    so that its data, and so the array after the 64-byte .npy header, starts at a multiple
    of 64 bytes in the file: mapped with ``load(mmap=True)``, arrays are then aligned."""
    header = _LOCAL.size + name_len + 6 + _ZIP64_EXTRA  # 6: the padding field's id, size, alignment
    pad = -(at + header) % _ALIGN
    return struct.pack("<HHH", 0xD935, 2 + pad, _ALIGN) + bytes(pad)


class _Encoder:
    """Turns an object into a JSON-able tree; tensors become ``{"tensor": n}`` references
    to entry ``n`` of :attr:`entries`, whose values go to :attr:`arrays`."""

    def __init__(self):
        self.entries, self.arrays = [], {}
        self._tensor_numbers = {}  # id(tensor) -> entry number: one object, one entry
        self._by_memory = {}  # (address, shape, strides, dtype, device) -> entry number
        self.aliased = False  # whether a tensor was saved as another's alias (format 2)
        self._open = set()  # ids of the containers being encoded, to refuse cycles
        param = _parameter_class()
        self._param = param if param is not None else ()

    def encode(self, obj, path, key=False):
        t = type(obj)
        if obj is None or t in (bool, int, float, str):
            return obj
        if t is complex:
            return {"complex": [obj.real, obj.imag]}
        if t is Size:
            return {"size": list(obj)}
        if t is dtype:
            return {"dtype": obj.name}
        if t is device:
            return {"device": str(obj)}
        if t in (bytes, bytearray):
            return {t.__name__: b64encode(obj).decode()}
        if isinstance(obj, Tensor) and not key:
            return self._tensor(obj)
        if t in _CONTAINER_TAGS and (t is tuple or not key):
            return {_CONTAINER_TAGS[t]: self._items(obj, path, key)}
        if not key:
            return self._object(obj, path)
        raise TypeError(f"cannot save a dict key of type {t.__name__} at {_where(path)}: "
                        f"tracegrad.save stores {_SUPPORTED}")

    def _object(self, obj, path):
        """Any other object, by the name of what rebuilds it and its (encoded) state."""
        if id(obj) in self._open:
            raise ValueError(f"cannot save a {type(obj).__name__} that contains itself (at {_where(path)})")
        self._open.add(id(obj))
        try:
            return encode_object(obj, lambda value, part: self.encode(value, path + part))
        except Unsaveable as e:
            raise TypeError(f"cannot save object of type {type(obj).__name__} at {_where(path)}: {e}; "
                            f"tracegrad.save stores {_SUPPORTED}, and objects that pickle can "
                            "reduce to an importable class or function") from None
        finally:
            self._open.discard(id(obj))

    def _items(self, obj, path, key):
        if id(obj) in self._open:
            raise ValueError(f"cannot save a {type(obj).__name__} that contains itself (at {_where(path)})")
        self._open.add(id(obj))
        try:
            if isinstance(obj, dict):
                return [[self.encode(k, f"{path}[{k!r}]", key=True), self.encode(v, f"{path}[{k!r}]")]
                        for k, v in obj.items()]
            return [self.encode(v, f"{path}[{i}]", key) for i, v in enumerate(obj)]
        finally:
            self._open.discard(id(obj))

    def _tensor(self, t):
        """The index node of tensor ``t``: ``{"tensor": n}``, entry ``n`` holding its values
        (one entry per object), or ``{"alias": [n, requires_grad, parameter]}`` for another
        object over the very same elements as entry ``n``'s tensor (``state_dict()`` of tied
        weights gives one per name), which loads sharing that tensor's memory, as with
        PyTorch (partial overlaps are saved as copies)."""
        n = self._tensor_numbers.get(id(t))
        if n is not None:
            return {"tensor": n}
        if is_vmapped(t):  # (its _data is sample 0 only)
            raise NotImplementedError("vmap: cannot save a Tensor inside vmap: it has one value per "
                                      "sample. Return the Tensor from the function and save the "
                                      "batched result instead.")
        key = _memory_key(t)
        same = None if key is None else self._by_memory.get(key)
        if same is not None:
            self.aliased = True
            return {"alias": [same, t.requires_grad, isinstance(t, self._param)]}
        host, order = _memory_order(backend.namespace_of(t._data).to_host(t._data))
        n = len(self.entries)
        self._tensor_numbers[id(t)] = n
        if key is not None:
            self._by_memory[key] = n
        self.arrays[f"t{n}"] = host
        entry = {"key": f"t{n}", "dtype": t.dtype.name, "shape": list(host.shape),
                 "requires_grad": t.requires_grad, "device": str(t.device),
                 "parameter": isinstance(t, self._param)}
        if order is not None:
            entry["permute"] = order
        self.entries.append(entry)
        return {"tensor": n}


def _memory_key(t):
    """What makes two tensors views of the same elements in the same order (None for an
    array that tells no address: a meta or stand-in device's)."""
    a = t._data
    iface = getattr(a, "__array_interface__", None) or getattr(a, "__cuda_array_interface__", None)
    if iface is None:
        return None
    return (iface["data"][0], a.shape, a.strides, str(a.dtype), str(t.device))


def _in_saved_order(entry, array):
    """The loaded array with the saved tensor's dim order back (see :func:`_memory_order`)."""
    return array.transpose(entry["permute"]) if "permute" in entry else array


def _memory_order(host):
    """``(array, order)``: a C-contiguous array to write and the permutation of its dims that
    gives the tensor back with its strides (a transposed or permuted tensor loads as one, as
    from PyTorch, which saves storage and strides), or None where the array is written in
    row-major order (contiguous already, or with gaps or overlaps: then a row-major copy)."""
    if host.flags.c_contiguous or host.ndim < 2:
        return (host if host.flags.c_contiguous else host.copy(order="C")), None
    axes = sorted(range(host.ndim), key=lambda d: -host.strides[d])
    stored = host.transpose(axes)
    if not stored.flags.c_contiguous or min(host.strides) <= 0:
        return host.copy(order="C"), None
    return stored, [axes.index(d) for d in range(host.ndim)]


def _where(path):
    return path or "the top level"


# -- load -----------------------------------------------------------------------------------
def load(f, map_location=None, *, weights_only=None, mmap=None):
    """Load what :func:`save` wrote to ``f`` (a path or a binary file object).

    ``map_location`` is PyTorch's: None puts each tensor back on the device it was saved
    from; a device or string puts all of them there; a dict maps saved device names to new
    ones (``{'cuda:0': 'cpu'}``); a callable gets ``(cpu_tensor, saved_device_name)`` and
    returns a tensor or None (for the default). ``weights_only`` (None means True, as in
    PyTorch): the file names the classes and functions that rebuild any object other than
    tensors, containers and plain values; with True only those allowlisted with
    :func:`add_safe_globals` / :func:`safe_globals` are used (else ``pickle.UnpicklingError``),
    with False they are imported and called (only for a trusted file).

    By default each tensor gets memory of its own, read straight from the file (no second
    copy), and is independent of the file afterwards. ``mmap=True`` (PyTorch's option, for
    a path only) maps the file instead: the tensors' values are the file's pages, copied
    privately only where written (writes never reach the file), so a large checkpoint
    costs no memory of its own; as with PyTorch, the file must not change or shrink while
    they live. Either way every entry's CRC-32 is checked (reading or mapping it once), so
    a corrupt file is an error, never wrong values. A stream that cannot seek is first read
    into memory (the zip directory is at its end), so it holds the data twice while loading.
    """
    _check_map_location(map_location)
    if mmap and not isinstance(f, (str, bytes, os.PathLike)):
        raise ValueError("f must be a file path in order to use the mmap argument")
    name = _name_of(f)
    with _opened(f, "rb") as fh:
        if not _seekable(fh):
            fh = _buffered(fh)
        archive = _pytorch_archive(fh, name)
        if archive is not None:  # (a checkpoint PyTorch wrote: see _torch_files)
            with archive:
                try:
                    return load_torch_archive(archive, name, map_location, weights_only)
                except (pickle.UnpicklingError, RuntimeError, MemoryError):
                    raise
                except Exception as e:  # (the zip and pickle parsers on damaged bytes)
                    raise RuntimeError(f"cannot load {name}: the PyTorch file is corrupt or truncated "
                                       f"({type(e).__name__}: {e})") from e
        try:
            entries, arrays, root = _read(fh, bool(mmap))
        except _BadFile as e:
            raise RuntimeError(f"cannot load {name}: {e}") from None
        except MemoryError:
            raise
        except Exception as e:  # zip/npy/json parsers on damaged bytes
            raise RuntimeError(f"cannot load {name}: the file is corrupt or truncated "
                               f"({type(e).__name__}: {e})") from e
    tensors = [_restore(entry, _in_saved_order(entry, arrays[entry["key"]]), map_location) for entry in entries]
    try:
        return _decode(root, _Loading(tensors, weights_only is not False))
    except (_BadFile, RecursionError) as e:
        raise RuntimeError(f"cannot load {name}: its index is wrong ({e})") from None


class _BadFile(Exception):
    """What is wrong with a file, in words."""


def _pytorch_archive(fh, name):
    """``fh`` as an open ZipFile when it holds a checkpoint PyTorch wrote, else None (the
    position is left where it was). PyTorch's legacy, non-zip format is refused by name."""
    start = fh.tell()
    head = fh.read(4)
    fh.seek(start)
    if head[:2] == b"\x80\x02" and head[2:3] == b"\x8a":  # (a pickle of PyTorch's magic number)
        raise RuntimeError(f"cannot load {name}: it is in PyTorch's legacy format (written with "
                           "_use_new_zipfile_serialization=False), which tracegrad cannot read; save it "
                           "again with torch.save's default format")
    if head not in _ZIP_MAGIC:
        return None
    try:
        zf = zipfile.ZipFile(fh)
        if INDEX + ".npy" not in zf.namelist() and is_torch_archive(zf.namelist()):
            return zf
        zf.close()
    except Exception:  # (damaged: _read says what is wrong)
        pass
    fh.seek(start)
    return None


def _read(fh, mapped):
    """The validated index entries, their arrays (by key) and the root node of ``fh``.

    The zip module only parses the directory: each entry's bytes are located in the file
    (:func:`_locate`) and read, or mapped, by :func:`_read_array` straight into the array
    that is returned, so no entry's data is ever held twice."""
    if not _seekable(fh):
        fh = _buffered(fh)
    start = fh.tell()
    head = fh.read(4)
    fh.seek(start)
    if not head:
        raise _BadFile("the file is empty")
    if head not in _ZIP_MAGIC:
        raise _BadFile("it is not a file written by tracegrad.save (not an .npz archive)")
    with zipfile.ZipFile(fh) as zf:
        names = set(zf.namelist())
        if INDEX + ".npy" not in names:
            raise _BadFile(f"it is not a file written by tracegrad.save (an archive without "
                           f"the '{INDEX}' entry)")
        spans = _locate(fh, [zf.getinfo(n) for n in sorted(names)], fh.seek(0, io.SEEK_END))
    raw = _read_array(fh, None, spans[INDEX + ".npy"], _DTYPE_BY_NAME["uint8"].np, None)
    try:
        index = json.loads(raw.tobytes())
    except (ValueError, RecursionError) as e:
        raise _BadFile(f"its index is not valid JSON ({e})") from None
    entries = _check_index(index)
    described = {e["key"] + ".npy" for e in entries} | {INDEX + ".npy"}
    if names != described:
        raise _BadFile(f"its index does not match the archive (entries not in the index: "
                       f"{sorted(names - described)}; in the index but missing: "
                       f"{sorted(described - names)})")
    mapping = _mapping(fh) if mapped and entries else None
    arrays = {e["key"]: _read_array(fh, mapping, spans[e["key"] + ".npy"],
                                    _DTYPE_BY_NAME[e["dtype"]].np, tuple(e["shape"]))
              for e in entries}
    return entries, arrays, index["root"]


def _locate(fh, infos, end):
    """Each entry's ``_Span``, by name, after checking what the zip directory says against
    the file: stored as is (``save`` never compresses), a local header that agrees, bytes
    that end inside the file and overlap no other entry's. Only then may a size be trusted
    enough to allocate for."""
    spans, taken = {}, []
    for info in infos:
        name = info.filename
        if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
            raise _BadFile(f"entry {name!r} is compressed or encrypted; tracegrad.save stores "
                           "entries as they are")
        fh.seek(info.header_offset)
        local = fh.read(_LOCAL.size)
        if len(local) != _LOCAL.size or local[:4] != b"PK\x03\x04":
            raise _BadFile(f"the file is corrupt: entry {name!r} has no local header")
        name_len, extra_len = _LOCAL.unpack(local)[-2:]
        encoding = "utf-8" if info.flag_bits & 0x800 else "cp437"
        if fh.read(name_len) != info.orig_filename.encode(encoding):
            raise _BadFile(f"the file is corrupt: entry {name!r} has a local header for another name")
        begin = info.header_offset + _LOCAL.size + name_len + extra_len
        stop = begin + info.file_size
        if info.compress_size != info.file_size or stop > end:
            raise _BadFile(f"the file is corrupt or truncated: entry {name!r} says it holds "
                           f"{info.file_size} bytes from byte {begin}, but the file ends at byte {end}")
        spans[name] = _Span(name, begin, info.file_size, info.CRC)
        taken.append((info.header_offset, stop, name))
    taken.sort()
    for (_, stop, a), (begin, _, b) in zip(taken, taken[1:]):
        if begin < stop:
            raise _BadFile(f"the file is corrupt: entries {a!r} and {b!r} overlap")
    return spans


# where an entry's stored bytes lie in the file, and their CRC-32 from the zip directory
_Span = namedtuple("_Span", "name begin size crc")


def _read_array(fh, mapping, span, want_dtype, want_shape):
    """Entry ``span`` as an array, after checking its .npy header against what the index
    says and the bytes it declares against the bytes the entry holds, all before anything
    is allocated. The values are read from ``fh`` into a new array, or viewed in
    ``mapping`` (an mmap of the file), and CRC-checked on the way, chunk by chunk."""
    name = span.name
    fh.seek(span.begin)
    head = fh.read(min(span.size, _HEADER_MAX))
    member = io.BytesIO(head)
    version = _npy.read_magic(member)
    if version not in ((1, 0), (2, 0)):
        raise _BadFile(f"the file is corrupt: entry {name!r} has an unknown .npy version {version}")
    header = _npy.read_array_header_1_0 if version == (1, 0) else _npy.read_array_header_2_0
    shape, fortran, dt = header(member)
    if dt.hasobject or dt.newbyteorder("=") != want_dtype:
        raise _BadFile(f"the file is corrupt: entry {name!r} holds {dt}, expected {want_dtype}")
    if want_shape is not None and tuple(shape) != want_shape or want_shape is None and len(shape) != 1:
        raise _BadFile(f"the file is corrupt: entry {name!r} has shape {tuple(shape)}, "
                       f"expected {want_shape}")
    skip = member.tell()
    nbytes = math.prod(shape) * dt.itemsize
    if skip + nbytes > span.size:
        raise _BadFile(f"the file is corrupt: entry {name!r} declares {nbytes} bytes of data "
                       f"(shape {tuple(shape)}, {dt}) but holds only {span.size - skip}")
    if skip + nbytes < span.size:
        raise _BadFile(f"the file is corrupt: entry {name!r} is longer than its header says")
    crc = zlib.crc32(head[:skip])
    layout = shape[::-1] if fortran else shape
    if mapping is not None and nbytes:
        out = backend.cpu.frombuffer(mapping, dt, math.prod(shape), span.begin + skip).reshape(layout)
        crc = zlib.crc32(_bytes_of(out), crc)  # reads the mapped pages once, copies nothing
    else:
        out = _empty(layout, dt)
        crc = _fill(fh, _bytes_of(out), span.begin + skip, crc, name)
    if crc != span.crc:
        raise _BadFile(f"the file is corrupt: entry {name!r} fails its CRC-32 check")
    if fortran:
        out = out.T.copy()
    return out if dt == want_dtype else out.astype(want_dtype)


def _empty(shape, dt):
    """A new array to read into. A large one gets a private anonymous mapping of its own
    (unmapped when the array dies), of the 4 KiB pages PyTorch's allocator gets too: NumPy
    asks for transparent huge pages, whose first touch cost 2-10x more, and varied from run
    to run, on the (virtual) development machine."""
    count = math.prod(shape)
    if count * dt.itemsize < _OWN_PAGES or not hasattr(_mm, "MAP_ANONYMOUS"):
        return backend.cpu.empty(shape, dtype=dt)
    try:
        pages = _mm.mmap(-1, count * dt.itemsize, flags=_mm.MAP_PRIVATE | _mm.MAP_ANONYMOUS)
    except OSError as e:
        raise MemoryError(f"cannot allocate {count * dt.itemsize} bytes: {e}") from None
    return backend.cpu.frombuffer(pages, dt, count).reshape(shape)


def _bytes_of(a):
    return memoryview(a.reshape(-1).view(backend.cpu.uint8))


def _fill(fh, view, at, crc, name):
    """Read the bytes at ``at`` in ``fh`` into ``view`` (the kernel copies straight into
    it); the running CRC-32 ``crc`` carried over them, each chunk checksummed while still
    in the cache. From an OS file a large array is read in parts, one thread each (reads,
    page faults and zlib release the GIL), and the parts' CRCs combined: with free cores
    the check then costs no time. (Threads per call, not a pool kept between calls: an
    idle pool thread would not survive a DataLoader worker's fork.)"""
    fd = fh.fileno() if isinstance(getattr(fh, "raw", fh), io.FileIO) else None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    parts = min(cores or 1, 8, len(view) // _PART) if fd is not None and hasattr(os, "preadv") else 1
    if parts < 2:
        fh.seek(at)
        readinto = getattr(fh, "readinto", None) or (lambda b: _read_into(fh, b))
        return _read_range(lambda b, _: readinto(b), view, at, 0, len(view), crc, name)
    from concurrent.futures import ThreadPoolExecutor  # imported only when needed
    cuts = [len(view) * i // parts for i in range(parts + 1)]
    pread = lambda b, pos: os.preadv(fd, [b], pos)  # noqa: E731
    with ThreadPoolExecutor(parts - 1) as pool:
        jobs = [pool.submit(_read_range, pread, view, at, lo, hi, 0, name)
                for lo, hi in zip(cuts[1:-1], cuts[2:])]
        crc = _read_range(pread, view, at, 0, cuts[1], crc, name)
        for job, lo, hi in zip(jobs, cuts[1:-1], cuts[2:]):
            crc = _crc32_combine(crc, job.result(), hi - lo)
    return crc


def _read_range(read, view, at, lo, hi, crc, name):
    """Bytes ``lo:hi`` of ``view`` read by ``read(buffer, position in the file)``; the
    running CRC-32 ``crc`` carried over them."""
    while lo < hi:
        chunk = view[lo:min(lo + _CHUNK, hi)]
        n = read(chunk, at + lo)
        if not n:
            raise _BadFile(f"the file is corrupt: entry {name!r} is truncated")
        crc = zlib.crc32(chunk[:n], crc)
        lo += n
    return crc


def _read_into(fh, b):
    """``readinto`` for a file object that has ``read`` only."""
    data = fh.read(len(b))
    b[:len(data)] = data
    return len(data)


def _crc32_combine(crc1, crc2, len2):
    """The CRC-32 of A + B from A's, B's and B's length: zlib's ``crc32_combine``, which
    Python's zlib does not offer. Appending ``len2`` bytes multiplies A's CRC by x^(8 len2)
    modulo the CRC polynomial; x^(2^k) are tabulated, so that takes log2(len2) products."""
    p, k = 1 << 31, 3  # 1, and x^(2^3): a byte is 8 bits
    while len2:
        if len2 & 1:
            p = _mulmod(_X2N[k & 31], p)
        len2, k = len2 >> 1, k + 1
    return _mulmod(p, crc1) ^ crc2


def _mulmod(a, b):
    """a * b modulo the CRC-32 polynomial, in zlib's bit-reflected form (zlib's multmodp)."""
    m, p = 1 << 31, 0
    while a:
        if a & m:
            p, a = p ^ b, a ^ m
        m, b = m >> 1, (b >> 1) ^ 0xEDB88320 if b & 1 else b >> 1
    return p


_X2N = [1 << 30]  # x^(2^k) modulo the polynomial, k = 0..31
for _ in range(31):
    _X2N.append(_mulmod(_X2N[-1], _X2N[-1]))


def _mapping(fh):
    """The whole file mapped copy-on-write: pages are shared with the page cache until a
    tensor writes to one, and nothing is ever written back."""
    try:
        return _mm.mmap(fh.fileno(), 0, access=_mm.ACCESS_COPY)
    except (OSError, ValueError, AttributeError) as e:
        raise _BadFile(f"it cannot be memory-mapped ({type(e).__name__}: {e}); "
                       "load it with mmap=False") from None


def _buffered(fh):
    """A seekable copy of a stream that is not (the zip directory is at its end)."""
    buf = io.BytesIO()
    shutil.copyfileobj(fh, buf, _CHUNK)
    buf.seek(0)
    return buf


def _check_index(index):
    """The index's tensor entries, after checking every field the loader will use."""
    def bad(what):
        return _BadFile(f"its index is wrong: {what}")
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise _BadFile("it is not a file written by tracegrad.save (its index has no "
                       f"'format': '{FORMAT}')")
    version = index.get("version")
    if type(version) is not int:
        raise bad(f"'version' is {version!r}")
    if version > VERSION:
        raise _BadFile(f"it was written by a newer tracegrad (format version {version}); "
                       f"this one reads format version {VERSION}")
    entries = index.get("tensors")
    if not isinstance(entries, list) or "root" not in index:
        raise bad("'tensors' or 'root' is missing")
    keys = set()
    for i, e in enumerate(entries):
        ok = (isinstance(e, dict) and type(e.get("key")) is str and e["key"] not in keys
              and e["key"] != INDEX and e.get("dtype") in _DTYPE_BY_NAME
              and isinstance(e.get("shape"), list)
              and all(type(s) is int and s >= 0 for s in e["shape"])
              and type(e.get("requires_grad")) is bool and type(e.get("parameter")) is bool
              and type(e.get("device")) is str
              and ("permute" not in e or (isinstance(e["permute"], list)
                                          and sorted(e["permute"]) == list(range(len(e["shape"])))
                                          and all(type(d) is int for d in e["permute"]))))
        if ok and e["requires_grad"]:
            d = _DTYPE_BY_NAME[e["dtype"]]
            ok = d.is_floating_point or d.is_complex
        if ok:
            try:
                device(e["device"])
            except RuntimeError:
                ok = False
        if not ok:
            raise bad(f"tensor entry {i} is malformed: {str(e)[:200]}")
        keys.add(e["key"])
    return entries


def _decode(node, tensors, path="the top level"):
    """The object a JSON node of the index describes."""
    t = type(node)
    if node is None or t in (bool, int, float, str):
        return node
    if t is dict and len(node) == 1:
        (tag, value), = node.items()
        try:
            return _DECODERS[tag](value, tensors, path)
        except (KeyError, TypeError, ValueError, IndexError, RuntimeError):
            pass
    raise _BadFile(f"unexpected entry {str(node)[:100]} at {path}")


class _Loading:
    """What decoding a file's index needs besides the index: its tensors, and whether
    only allowlisted globals may be used."""

    def __init__(self, tensors, weights_only):
        self.tensors, self.weights_only = tensors, weights_only


def _decode_items(value, tensors, path):
    if type(value) is not list:
        raise TypeError(value)
    return [_decode(v, tensors, f"{path}[{i}]") for i, v in enumerate(value)]


def _decode_pairs(value, tensors, path, kind):
    if type(value) is not list or not all(type(p) is list and len(p) == 2 for p in value):
        raise TypeError(value)
    out = kind()
    for k, v in value:
        k = _decode(k, tensors, path)
        out[k] = _decode(v, tensors, f"{path}[{k!r}]")  # an unhashable key: TypeError
    return out


def _number_list(value, kinds):
    if type(value) is not list or not all(type(v) in kinds for v in value):
        raise TypeError(value)
    return value


def _tensor_ref(value, tensors):
    if type(value) is not int or not 0 <= value < len(tensors.tensors):
        raise IndexError(value)
    return tensors.tensors[value]


def _alias_ref(value, tensors):
    """A new tensor over the memory of a loaded one (see ``_Encoder._tensor``)."""
    if type(value) is not list or len(value) != 3 or type(value[1]) is not bool or type(value[2]) is not bool:
        raise TypeError(value)
    base = _tensor_ref(value[0], tensors)
    if value[1] and not (base.dtype.is_floating_point or base.dtype.is_complex):
        raise TypeError(value)
    t = base.detach()
    param = _parameter_class()
    if value[2] and param is not None:
        return param(t, requires_grad=value[1])
    return t.requires_grad_(value[1])


def _decode_bytes(value, kind):
    if type(value) is not str:
        raise TypeError(value)
    return kind(b64decode(value, validate=True))


_DECODERS = {
    "tensor": lambda v, ts, p: _tensor_ref(v, ts),
    "alias": lambda v, ts, p: _alias_ref(v, ts),
    "list": _decode_items,
    "tuple": lambda v, ts, p: tuple(_decode_items(v, ts, p)),
    "dict": lambda v, ts, p: _decode_pairs(v, ts, p, dict),
    "odict": lambda v, ts, p: _decode_pairs(v, ts, p, OrderedDict),
    "size": lambda v, ts, p: Size(_number_list(v, (int,))),
    "complex": lambda v, ts, p: complex(*_number_list(v, (int, float))),
    "dtype": lambda v, ts, p: _DTYPE_BY_NAME[v],
    "device": lambda v, ts, p: device(v),
    "set": lambda v, ts, p: set(_decode_items(v, ts, p)),
    "counter": lambda v, ts, p: Counter(_decode_pairs(v, ts, p, dict)),
    "bytes": lambda v, ts, p: _decode_bytes(v, bytes),
    "bytearray": lambda v, ts, p: _decode_bytes(v, bytearray),
    "global": lambda v, ts, p: _global(v, ts),
    "object": lambda v, ts, p: decode_object(v, lambda child, part: _decode(child, ts, p + part),
                                             ts.weights_only),
}


def _global(path, loading):
    if type(path) is not str:
        raise TypeError(path)
    from ._weights_only import lookup
    return lookup(path, loading.weights_only)
