"""``tracegrad.backends``: PyTorch's backend switches, with tracegrad's truthful answers.

tracegrad computes with NumPy on the CPU and CuPy on CUDA; it calls none of cuDNN, MKL-DNN,
MPS, opt_einsum, MKL or OpenMP itself, so their ``is_available()`` answers False. The
switches programs set (``cudnn.benchmark = True``, ``cudnn.deterministic = True``,
``cuda.matmul.allow_tf32 = ...``) are accepted and remembered; they change no result here.
"""
from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
