"""PyTorch's float32 GELU as its AVX2 kernel computes it, whatever this CPU offers.

torch's float32 ``gelu`` (exact form) on the CPU is oneDNN's JIT eltwise kernel, and its
erf approximation depends on the instruction set oneDNN picks: with AVX2 it is Abramowitz
& Stegun 7.1.26, which tracegrad's float32 GELU follows (tracegrad/rules/gelu_kernels.py);
with AVX-512 it is another approximation, up to 1.2e-6 away from the AVX2 values (and
``gelu(+-inf)`` is NaN there). tracegrad gives one answer on every CPU, so the oracle tests
compare with the AVX2 kernel: on a CPU with AVX-512 they ask a second process whose oneDNN
is capped at AVX2 (``ONEDNN_MAX_CPU_ISA``, read when torch loads)."""
import os
import subprocess
import sys
import tempfile

import numpy as np

_SCRIPT = """
import sys
import numpy as np
import torch
torch.set_num_threads(1)
x, g = np.load(sys.argv[1]), np.load(sys.argv[2])
t = torch.tensor(x, requires_grad=True)
y = torch.nn.functional.gelu(t, approximate=sys.argv[3])
y.backward(torch.tensor(g))
np.save(sys.argv[4], y.detach().numpy())
np.save(sys.argv[5], t.grad.numpy())
"""


def _avx2_in_process():
    import torch
    return (torch.backends.cpu.get_cpu_capability() in ("DEFAULT", "AVX2")
            or os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper() == "AVX2")


def torch_gelu(x, g, approximate="none"):
    """(value, gradient for the cotangent ``g``) of torch's GELU of the array ``x``, from
    its AVX2 kernel where ``x`` is float32 (in this process when that is the kernel its
    torch runs, else in a second one)."""
    import torch
    if x.dtype != np.float32 or approximate != "none" or _avx2_in_process():
        t = torch.tensor(x, requires_grad=True)
        y = torch.nn.functional.gelu(t, approximate=approximate)
        y.backward(torch.tensor(g))
        return y.detach().numpy(), t.grad.numpy()
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.join(tmp, f"{name}.npy") for name in ("x", "g", "y", "dx")]
        np.save(paths[0], x)
        np.save(paths[1], g)
        env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2")
        subprocess.run([sys.executable, "-c", _SCRIPT, paths[0], paths[1], approximate, *paths[2:]],
                       env=env, check=True)
        return np.load(paths[2]), np.load(paths[3])
