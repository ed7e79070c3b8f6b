"""``tracegrad.backends.cudnn``: tracegrad does not call cuDNN (CuPy kernels do its GPU
work), so ``is_available()`` is False; the flags are remembered for programs that set them."""
import contextlib

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available():
    return False


def version():
    return None


def is_acceptable(tensor):
    return False


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Set the flags for the block, then restore them (as ``torch.backends.cudnn.flags``)."""
    module = globals()
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    saved = {n: module[n] for n in names}
    module.update(enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit,
                  deterministic=deterministic, allow_tf32=allow_tf32)
    try:
        yield
    finally:
        module.update(saved)
