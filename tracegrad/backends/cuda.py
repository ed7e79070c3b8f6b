"""``tracegrad.backends.cuda``: ``matmul.allow_tf32`` mirrors ``set_float32_matmul_precision``
(as in PyTorch); ``is_built()`` says whether CuPy, tracegrad's CUDA backend, is installed."""
import importlib.util

from ..runtime import flags as _flags


def is_built():
    return importlib.util.find_spec("cupy") is not None


class _Matmul:
    """``backends.cuda.matmul``: TF32 follows the float32 matmul precision; the reduced-
    precision reduction switches are remembered."""

    def __init__(self):
        object.__setattr__(self, "_switches", {"allow_fp16_reduced_precision_reduction": True,
                                               "allow_bf16_reduced_precision_reduction": True,
                                               "allow_fp16_accumulation": False})

    def __getattr__(self, name):
        if name == "allow_tf32":
            return _flags.get_float32_matmul_precision() != "highest"
        if name in self._switches:
            return self._switches[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            _flags.set_float32_matmul_precision("high" if value else "highest")
        elif name in self._switches:
            self._switches[name] = value
        else:
            raise AttributeError(f"Unknown attribute {name}")


matmul = _Matmul()


def preferred_linalg_library(backend=None):
    return "default"


def is_flash_attention_available():
    return False


def flash_sdp_enabled():
    return False


def mem_efficient_sdp_enabled():
    return False


def math_sdp_enabled():
    return True
