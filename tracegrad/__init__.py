"""tracegrad: automatic differentiation for Python and NumPy, three ways in, one core.

``import tracegrad as torch`` gives the eager, PyTorch-compatible API: Tensors that record
operations, ``backward()``, ``grad_fn``, hooks, ``no_grad``. Every operation is an entry of
one rule table (:mod:`tracegrad.rules`) that the staged paths share.
"""
# ruff: noqa: F401 -- this module is the public namespace: its imports are re-exports
from . import backend, rules
from .backend import device
from .backend.dtypes import (bool_ as bool, complex64, complex128, float16, float32, float64,  # noqa: A001
                             get_default_dtype, int8, int16, int32, int64, set_default_dtype, uint8)
from .backend.dtypes import bfloat16, dtype, promote_types
from .runtime.creation import (Generator, arange, default_generator, as_tensor, empty, empty_like, eye, from_numpy, full,
                               full_like, initial_seed, linspace, logspace, manual_seed, normal, ones,
                               ones_like, rand, rand_like, randint, randint_like, randn, randn_like,
                               randperm, seed, tensor, zeros, zeros_like)
from .runtime.formatting import get_printoptions, set_printoptions
from .runtime.grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                                is_inference_mode_enabled, no_grad, set_grad_enabled)
from .runtime.tensor import Size, Tensor, is_tensor
from .runtime.type_info import finfo, iinfo
from .runtime.anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled
from .runtime import dispatch as _dispatch  # noqa: F401  (registers the eager handler)
from . import ops as _ops
from .ops import return_types  # noqa: F401
from . import autograd, cuda, profiler, viz  # noqa: F401
from . import fft  # noqa: F401
from . import linalg  # noqa: F401
from . import special  # noqa: F401  (torch.special; tracegrad.scipy.special is imported on demand)
from . import signal  # noqa: F401  (torch.signal.windows)
from . import datasets, models, nn, optim  # noqa: F401
from . import func  # noqa: F401  (torch.func: grad, vmap, functional_call...)
from .func import vmap  # noqa: F401  (torch.vmap)
from .serialization import *  # noqa: F403
from . import random, utils  # noqa: F401  (torch.random, torch.utils.checkpoint)
from . import distributed, multiprocessing  # noqa: F401  (mpi4py is imported by init_process_group)
from .random import get_rng_state, set_rng_state  # noqa: F401

globals().update(_ops.FUNCTIONS)
from . import sparse  # noqa: E402  (torch.sparse and the sparse COO layout)
from .sparse import sparse_coo, sparse_coo_tensor  # noqa: E402,F401
sparse.install(globals())  # mm, matmul, add, sum take sparse operands; spmm; Tensor.to_sparse
from . import accelerator, amp, backends, compiler, testing, version, xpu  # noqa: E402,F401
from .amp import GradScaler, autocast, get_autocast_dtype, is_autocast_enabled  # noqa: E402,F401
from .compiler import compile  # noqa: E402,A001  (stages eager code on the tape: see tracegrad.compiler)
from .runtime.flags import *  # noqa: E402,F403  (deterministic algorithms, matmul precision)
from .runtime.legacy_types import (LEGACY_TYPES as _LEGACY_TYPES, get_default_device,  # noqa: E402
                                   set_default_device, set_default_tensor_type)
globals().update(_LEGACY_TYPES)  # FloatTensor, LongTensor...
globals().update(_ops.compat_tensor.CONSTANTS)  # pi, inf, strided, channels_last...
from .transform import (GuardFailed, Tape, TracerError, TransformError, custom_vjp, elementwise_grad,  # noqa: E402
                        fusion, fusion_enabled, grad, grad_of, hessian, hvp, jacfwd, jacobian, jacrev, jvp,
                        set_fusion, stop_gradient, value_and_grad, vjp)
from .transform import trace as _trace_function  # noqa: E402
from . import flatten_util  # noqa: E402  (ravel_pytree, as jax.flatten_util)
from . import cpu, jit  # noqa: E402,F401  (torch.cpu, torch.jit: see their docstrings)

float = float32  # noqa: A001  (torch.float, torch.double... are dtype aliases)
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16
cfloat = complex64
cdouble = complex128


def trace(f):
    """Two meanings, told apart by the argument: ``trace(matrix)`` is torch.trace, the sum of
    a 2-D Tensor's diagonal; ``trace(function)`` is tracegrad's tape tracer, which returns a
    function recording a :class:`Tape` (see :mod:`tracegrad.transform`)."""
    if isinstance(f, Tensor):
        return _ops.arrays.trace(f)
    return _trace_function(f)


def result_type(tensor1, tensor2):
    """The dtype PyTorch's type promotion gives an operation on the two operands."""
    return _dispatch.result_dtype([x._data if isinstance(x, Tensor) else x for x in (tensor1, tensor2)])


def is_floating_point(input):
    return input.is_floating_point()


def is_complex(input):
    return input.is_complex()


def numel(input):
    return input.numel()


from .version import __version__  # noqa: E402 (2.13.0+tracegrad.<release>: see version.py)


# Submodules imported at their first use (``tracegrad.distributions.Normal``), to keep
# ``import tracegrad`` fast: torch.distributions and torch.hub.
_LAZY_SUBMODULES = frozenset({"distributions", "hub"})


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
