"""Keep freed array memory in the process for reuse, instead of handing it back to the
kernel at every free (glibc only; done once, when tracegrad is imported).

Why: eager ops and their vjps make short-lived NumPy temporaries of a few hundred KB to a
few MB. glibc serves blocks that large with fresh ``mmap`` pages, or trims the top of its
heap back to the kernel once twice its (dynamic) mmap threshold lies free there, so the
next temporary of that size page-faults its memory in again, page by page. A nanoGPT
training step (benchmarks/attention.py's ``gpt`` case) took ~2,500 minor page faults and
~9 ms of system time -- a quarter of its CPU time -- where torch's step takes ~10 faults.
With the thresholds raised here, the same step takes ~2.

What it costs: up to :data:`TRIM_THRESHOLD` bytes of freed memory stay mapped (and counted
in the resident size) after a peak, as jemalloc and tcmalloc also keep them; a block
larger than :data:`MMAP_THRESHOLD` is still mapped and unmapped on its own.

Nothing is changed where the user tuned glibc's allocator already (``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_TRIM_THRESHOLD_`` or malloc tunables in ``GLIBC_TUNABLES``), where
``TRACEGRAD_KEEP_FREED_MEMORY=0``, or where the C library is not glibc.
"""
import os
import sys

__all__ = ["keep_freed_memory", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

MMAP_THRESHOLD = 32 << 20   # glibc's own ceiling for its dynamic threshold on 64-bit systems
TRIM_THRESHOLD = 128 << 20  # freed memory kept at the top of the heap before trimming it

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameter numbers (malloc.h)

# What keep_freed_memory() did: None before it ran, else a short reason or "tuned".
status = None


def _user_tuned():
    """The reason to leave the allocator alone, or None."""
    if os.environ.get("TRACEGRAD_KEEP_FREED_MEMORY", "1") == "0":
        return "TRACEGRAD_KEEP_FREED_MEMORY=0"
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"):
        if name in os.environ:
            return f"{name} is set"
    if "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return "GLIBC_TUNABLES sets malloc tunables"
    return None


def keep_freed_memory():
    """Raise glibc's mmap and trim thresholds (see the module docstring); returns
    :data:`status`. Safe to call again: it acts once."""
    global status
    if status is not None:
        return status
    reason = _user_tuned()
    if reason is None and not sys.platform.startswith("linux"):
        reason = "not Linux"
    if reason is None:
        try:
            import ctypes
            libc = ctypes.CDLL(None)
            libc.gnu_get_libc_version  # noqa: B018 -- glibc only (musl has no mallopt)
            ok = (libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
                  and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1)
            reason = "tuned" if ok else "mallopt refused"
        except (OSError, AttributeError):
            reason = "not glibc"
    status = reason
    return status
