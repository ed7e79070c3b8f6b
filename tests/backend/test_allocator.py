"""tracegrad keeps freed memory for reuse (backend/allocator.py): NumPy temporaries of a
few MB stop page-faulting their memory in on every operation."""
import os
import subprocess
import sys
import textwrap

import pytest

from tracegrad.backend import allocator

# A loop making and dropping 1 MiB temporaries, as an eager op and its vjp do; prints the
# minor page faults of 100 rounds and what keep_freed_memory() did.
_SCRIPT = textwrap.dedent("""
    import resource
    import numpy as np
    import tracegrad
    from tracegrad.backend import allocator
    x = np.ones(1 << 17)
    def work():
        a = x * 2.0; b = a + x; c = b * a; d = c - b; e = d * d
        return float(e[0])
    for _ in range(5):
        work()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(100):
        work()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, allocator.status)
""")

glibc_only = pytest.mark.skipif(allocator.status in ("not Linux", "not glibc"),
                                reason=f"the allocator is not glibc's ({allocator.status})")


def _run(**env):
    clean = {k: v for k, v in os.environ.items()
             if k not in ("TRACEGRAD_KEEP_FREED_MEMORY", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")}
    out = subprocess.run([sys.executable, "-c", _SCRIPT], env={**clean, **env}, capture_output=True,
                         text=True, check=True, timeout=120).stdout.split()
    return int(out[0]), " ".join(out[1:])


@glibc_only
def test_freed_memory_is_reused_without_page_faults():
    kept, status = _run()
    returned, off = _run(TRACEGRAD_KEEP_FREED_MEMORY="0")
    assert status == "tuned" and off == "TRACEGRAD_KEEP_FREED_MEMORY=0"
    # 100 rounds of five 1 MiB temporaries: ~125,000 faults when glibc returns them, none kept
    assert returned > 10_000
    assert kept < returned / 100


@glibc_only
def test_user_settings_of_the_allocator_are_left_alone():
    _, status = _run(MALLOC_TRIM_THRESHOLD_="1000000")
    assert status == "MALLOC_TRIM_THRESHOLD_ is set"


def test_acts_once():
    assert allocator.keep_freed_memory() is allocator.status
