"""Saving and loading: tracegrad.save / tracegrad.load against torch.save / torch.load
(when installed), in seconds and peak memory, as ratios against torch.

  save, load: one float32 tensor in a dict (``{"w": t}``) of 1, 16, 128 and 512 MiB, to
              and from a file in a temporary directory (so reads come from the page cache);
  mmap:       ``load(..., mmap=True)`` of the same files (tracegrad still checks every
              CRC-32, which reads the mapped pages once; torch checks none);
  refusal:    a 1 MiB file that declares a 1 GiB tensor: in the .npy header of an honest
              1 MiB entry, in its zip directory, or as a deflated entry that inflates to
              1 GiB (a zip bomb): each must be refused at once, without allocating.

Every measurement runs in a fresh child process (this script with ``--child``), so that
one cannot pollute another's memory figures. In the child, after the imports and the
set-up (for save: making the tensor), the peak RSS is reset (``/proc/self/clear_refs``),
then the operation runs alone:
  *seconds*  its wall time;
  *cpu*      its user + system time, all threads together (on a busy machine the wall
             time says as much about the neighbours);
  *peak*     the child's peak RSS (``VmHWM``) minus its RSS before: the memory the
             operation needed on top of what the process held (where ``/proc`` is
             missing: the child's ``ru_maxrss`` from ``os.wait4``, minus nothing);
  *kept*     the private memory (``RssAnon``) still held afterwards: the loaded tensor
             itself (a mapped one keeps none; its pages are the page cache's).
Each row is the best of ``--repeats`` runs (best time, lowest peak), after one untimed run
per contender; the contenders alternate so that the machine's slow spells hit them alike.

Run: ``python benchmarks/serialization.py`` (``--quick``: 2 repeats, no 512 MiB).
"""
import argparse
import io
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time
import zipfile

import numpy as np

MiB = 2**20
SIZES = (1, 16, 128, 512)  # MiB of float32
DECLARED = 2**30  # what the bad files claim to hold


# -- the child: one operation, measured --------------------------------------------------------

def _status(field):
    """A ``/proc/self/status`` field in KiB (None where there is no /proc)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None


def _reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # Linux >= 4.0: VmHWM := VmRSS
        return True
    except OSError:
        return False


def child(lib_name, op, path, mib):
    """Run one operation; print its seconds and memory figures as JSON."""
    if lib_name == "torch":
        import torch as lib
    else:
        import tracegrad as lib
    t = None
    if op == "save":
        t = lib.from_numpy(np.arange(mib * MiB // 4, dtype=np.float32))
    kwargs = {"mmap": True} if op == "mmap" else {}
    if lib_name == "torch" and op != "save":
        kwargs["weights_only"] = True
    before, anon = _status("VmRSS"), _status("RssAnon")
    reset = _reset_peak()
    error = None
    usage = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    try:
        if op == "save":
            lib.save({"w": t}, path)
        else:
            out = lib.load(path, **kwargs)
    except RuntimeError as e:
        error = str(e)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime - usage.ru_utime + after.ru_stime - usage.ru_stime
    if error is None and op != "save" and mib:  # the values are right (outside the timing)
        n = mib * MiB // 4
        assert tuple(out["w"].shape) == (n,) and float(out["w"][-1]) == float(np.float32(n - 1))
    hwm = _status("VmHWM") if reset else None
    kept = None if anon is None else _status("RssAnon") - anon
    print(json.dumps({"seconds": seconds, "cpu": cpu, "before": before, "hwm": hwm, "kept": kept,
                      "error": error}))


# -- the parent: spawn, collect ----------------------------------------------------------------

def measure(lib_name, op, path, mib):
    """One child's figures; peak and kept in MiB."""
    proc = subprocess.Popen([sys.executable, __file__, "--child", lib_name, op, path, str(mib)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.stdout.read(), proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        raise SystemExit(f"{lib_name} {op} {mib} MiB failed:\n{err.decode()}")
    r = json.loads(out)
    maxrss = usage.ru_maxrss / (1024 if sys.platform == "darwin" else 1)  # KiB
    peak = (r["hwm"] if r["hwm"] is not None else maxrss) - (r["before"] or 0)
    r["peak"] = max(peak, 0) / 1024
    r["kept"] = None if r["kept"] is None else r["kept"] / 1024
    return r


def best(libs, op, paths, mib, repeats):
    """The best figures of each contender over ``repeats`` alternating runs."""
    runs = {lib: [] for lib in libs}
    for lib in libs:  # an untimed run each: the first touch of fresh memory is slow on a VM
        measure(lib, op, paths[lib], mib)
    for _ in range(repeats):
        for lib in libs:
            runs[lib].append(measure(lib, op, paths[lib], mib))
    return {lib: {"seconds": min(r["seconds"] for r in rs), "cpu": min(r["cpu"] for r in rs),
                  "peak": min(r["peak"] for r in rs),
                  "kept": min((r["kept"] for r in rs if r["kept"] is not None), default=None),
                  "error": rs[0]["error"]} for lib, rs in runs.items()}


def report(title, results):
    print(title)
    torch = results.get("torch")
    for lib, r in results.items():
        kept = "" if r["kept"] is None else f"  kept {r['kept']:6.1f} MiB"
        line = f"  {lib:10s} {r['seconds']:7.3f} s  (cpu {r['cpu']:6.3f} s)  peak {r['peak']:6.1f} MiB{kept}"
        if torch is not None and lib != "torch":
            line += f"  {r['seconds'] / torch['seconds']:5.2f}x torch time"
            if torch["peak"] >= 1:
                line += f", {r['peak'] / torch['peak']:4.2f}x peak"
        print(line)


# -- files that lie about their size -------------------------------------------------------------

def declaring_file(path, where):
    """A file of about 1 MiB whose index and .npy header declare a 1 GiB tensor:
    ``"npy"``: in an honest 1 MiB entry; ``"zip"``: the zip directory says 1 GiB too (the
    file is cut short); ``"deflate"``: a compressed entry that really inflates to 1 GiB of
    zeros (a zip bomb: deflate packs zeros about 1000 to 1)."""
    index = {"format": "tracegrad.save", "version": 1, "root": {"dict": [["w", {"tensor": 0}]]},
             "tensors": [{"key": "t0", "dtype": "float32", "shape": [DECLARED // 4], "device": "cpu",
                          "requires_grad": False, "parameter": False}]}
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False,
                                                 "shape": (DECLARED // 4,)})
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        with zf.open("__tracegrad_index__.npy", "w") as member:
            np.lib.format.write_array(member, np.frombuffer(json.dumps(index).encode(), np.uint8))
        entry = zipfile.ZipInfo("t0.npy")
        entry.compress_type = zipfile.ZIP_DEFLATED if where == "deflate" else zipfile.ZIP_STORED
        with zf.open(entry, "w", force_zip64=where == "deflate") as member:
            member.write(header.getvalue())
            for _ in range(DECLARED // MiB if where == "deflate" else 1):
                member.write(bytes(MiB))
    data = bytearray(out.getvalue())
    if where == "zip":  # set the central directory's sizes of t0.npy to 1 GiB and its header
        at = 0
        while True:
            at = data.index(b"PK\x01\x02", at + 1)
            name_len = struct.unpack_from("<H", data, at + 28)[0]
            if data[at + 46:at + 46 + name_len] == b"t0.npy":
                size = len(header.getvalue()) + DECLARED
                struct.pack_into("<II", data, at + 20, size, size)
                break
    with open(path, "wb") as fh:
        fh.write(data)


# -- main ----------------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 repeats, sizes up to 128 MiB")
    parser.add_argument("--repeats", type=int, default=None, help="runs per row (default 3)")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        lib, op, path, mib = args.child
        return child(lib, op, path, int(mib))
    repeats = args.repeats or (2 if args.quick else 3)
    sizes = SIZES[:-1] if args.quick else SIZES
    try:
        import torch  # noqa: F401  (only whether it is there)
        libs = ("tracegrad", "torch")
    except ImportError:
        libs = ("tracegrad",)
    print(f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, NumPy {np.__version__}"
          + (f", torch {torch.__version__}" if "torch" in libs else ", no torch")
          + f"; best of {repeats} runs, each in a fresh process")
    with tempfile.TemporaryDirectory() as tmp:
        for mib in sizes:
            paths = {lib: os.path.join(tmp, f"{lib}-{mib}.pt") for lib in libs}
            report(f"save: {{'w': float32 tensor of {mib} MiB}}", best(libs, "save", paths, mib, repeats))
            report(f"load: {mib} MiB", best(libs, "load", paths, mib, repeats))
            report(f"load(mmap=True): {mib} MiB", best(libs, "mmap", paths, mib, repeats))
            for path in paths.values():
                os.remove(path)
        for where in ("npy", "zip", "deflate"):
            path = os.path.join(tmp, f"declares-{where}.pt")
            declaring_file(path, where)
            r = best(("tracegrad",), "load", {"tracegrad": path}, 0, repeats)
            what = {"npy": "its .npy header", "zip": "its zip directory",
                    "deflate": "a deflated entry"}[where]
            report(f"refusal: a {os.path.getsize(path) / MiB:.1f} MiB file, {what} declaring "
                   f"{DECLARED // MiB} MiB", r)
            print(f"    -> {r['tracegrad']['error'] or 'NOT REFUSED'}")


if __name__ == "__main__":
    main()
