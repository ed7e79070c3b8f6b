"""Fused CPU kernels: scalar code compiled by Numba, cached on disk.

NumPy has no fusing compiler: every elementwise line of generated code is one ufunc call,
which costs ~0.5 us of dispatch on small arrays and a pass through memory on large ones.
Runs of such lines are written instead as one *kernel*: a loop over the elements whose
body is the same lines on scalars (the emitter's operators and ``np.<ufunc>`` calls are
valid Numba code), compiled by Numba in nopython mode. The kernels' ``np`` is
:mod:`.kernel_numpy`: NumPy with a ``tanh`` that LLVM vectorizes (the C library's, which
Numba calls otherwise, is one element at a time, ~5x slower).

Numba is optional (the ``jit`` extra): it is imported on the first kernel, never by
``import tracegrad``; where it is missing everything runs unfused. A kernel's source is
written to a file named after the hash of its text and of kernel_numpy's, in the cache
directory (``$TRACEGRAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/tracegrad`` or
``~/.cache/tracegrad``), so Numba's own on-disk cache (``cache=True``, which needs a real
file) lets a second process load the machine code instead of compiling it again; the
module's Python code object is kept beside it too. What a second process still spends
(~10-15 ms for a 140-line kernel on the 2-core development VM, benchmarks/staged.py) is
the tape's recompile with kernels (~2 ms) and Numba's loading of the machine code.

Threads: a kernel over at least :data:`PARALLEL_MIN` elements has a twin running its
blocks on several threads (``numba.prange``); each call runs the twin on tracegrad's
intra-op thread count (``tracegrad.set_num_threads``, ``TRACEGRAD_NUM_THREADS``) when
that is above 1, else the serial kernel. The default is therefore one thread, as for
tracegrad's other intra-op work (see :mod:`tracegrad.backend.threads`: threads that
compete with BLAS's spinning ones lose more than they win on a small machine).

What the kernels compute equals the unfused lines up to the rounding of the transcendental
functions (the C library's in the kernels, NumPy's own in the unfused lines, and
kernel_numpy's ``tanh``, within 2 ulp of NumPy's: a few ulps); NaN, inf, dtypes and
broadcasting are the same, because only lines whose NumPy semantics the scalar code
reproduces exactly are fused (see :func:`tracegrad.transform.tape.codegen`).
"""
import hashlib
import marshal
import os
import sys
import threading
import types
import warnings

from ..backend import cpu  # (the unfused lines' ``np``)

__all__ = ["available", "cache_dir", "load_kernel", "Kernels", "PARALLEL_MIN", "NOT_SCALAR",
           "HOT_CALLS", "Threaded", "kernel_threads"]

# Elements from which a kernel gets a twin whose loop over blocks runs on several threads
# (numba.prange): below it the threads' start-up costs more than they save (measured:
# benchmarks/staged.py). How many threads: :func:`kernel_threads`.
PARALLEL_MIN = 1 << 16
PARALLEL_SUFFIX = "_parallel"

# Scalar primitives whose Numba scalar code differs from NumPy's ufunc: Numba's sign(-0.0)
# is -0.0 (NumPy's 0.0); its maximum/minimum of 0.0 and -0.0 pick the other zero.
NOT_SCALAR = frozenset({"sign", "maximum", "minimum"})

# Replays of a staged variant before it is compiled again with kernels: Numba takes a
# second or more per kernel, which a function called once or twice (a test, a notebook
# cell) never wins back. 0: at the first replay.
HOT_CALLS = 8

# Lines per kernel at most (Numba's compile time grows with the body: ~10 ms a line).
MAX_KERNEL_LINES = 1500

# How a kernel module imports its ``np``: NumPy with a tanh LLVM can vectorize
KERNEL_NUMPY = "from tracegrad.transform import kernel_numpy as np"

_STATE = {}          # "numba": the module, or False where it cannot be imported
_LOADED = {}         # (source hash, name) -> the kernel (a Numba dispatcher)
_LOCK = threading.Lock()


def available():
    """Whether Numba can be imported (it is, on the first call)."""
    numba = _STATE.get("numba")
    if numba is None:
        try:
            with numpy_own_namespace():  # (Numba registers NumPy's functions as it finds them)
                import numba
        except ImportError:
            numba = False
        _STATE["numba"] = numba
    return numba is not False


def numpy_own_namespace():
    """A context with NumPy's own functions in its namespace, also while a tape records
    (see :func:`tracegrad.transform.tape.numpy_map.construct.numpy_own_namespace`): every
    compile of a kernel runs in it."""
    from .tape.numpy_map.construct import numpy_own_namespace as own
    return own()


def forget():
    """Forget whether Numba was found and the kernels loaded (tests simulate its absence)."""
    _STATE.clear()
    _LOADED.clear()
    for name in [n for n in sys.modules if n.startswith("tracegrad_kernels.")]:
        del sys.modules[name]


def loaded_any():
    """Whether this process has loaded a kernel (Numba imported and its compiler started:
    a further kernel costs only its own load, see :mod:`tracegrad.rules.compiled`)."""
    return bool(_LOADED)


def cache_dir():
    """Where kernel sources (and Numba's machine code beside them) are kept."""
    root = os.environ.get("TRACEGRAD_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "tracegrad")
    return os.path.join(root, "kernels")


def kernel_threads(numba):
    """How many threads a large kernel runs on: tracegrad's intra-op threads
    (``tracegrad.set_num_threads``, ``TRACEGRAD_NUM_THREADS``; 1 by default, see
    :mod:`tracegrad.backend.threads` for why), at most Numba's own (``NUMBA_NUM_THREADS``,
    the cores). With one, the serial kernel runs and Numba starts no threads."""
    from ..backend.threads import get_threads
    n = get_threads()
    return 1 if n <= 1 else min(n, numba.config.NUMBA_NUM_THREADS)


class Threaded:
    """A large kernel and its twin on several threads: each call runs the serial one or
    the twin on :func:`kernel_threads` threads (Numba's count set for the call and put
    back, so that the caller's own Numba code keeps its setting). Each is compiled (or
    read from the cache) at its first call; should the twin fail to compile, the serial
    one runs from then on."""
    __slots__ = ("serial", "parallel", "numba")

    def __init__(self, serial, parallel, numba):
        self.serial, self.parallel, self.numba = serial, parallel, numba

    def __call__(self, *args):
        numba = self.numba
        n = kernel_threads(numba)
        if n <= 1 or self.parallel is None:
            return self.serial(*args)
        before = numba.get_num_threads()
        numba.set_num_threads(n)
        try:
            return self.parallel(*args)
        except Exception as e:
            if not type(e).__module__.startswith("numba"):
                raise
            warnings.warn(f"tracegrad: Numba could not compile the parallel kernel "
                          f"{self.parallel.__name__} ({type(e).__name__}: {e}); it runs on one "
                          "thread", RuntimeWarning, stacklevel=2)
            self.parallel = None
        finally:
            numba.set_num_threads(before)
        return self.serial(*args)


def load_kernel(source, name):
    """The kernel ``name`` of module source ``source`` (which imports what it needs):
    its Numba dispatcher, or a :class:`Threaded` pair where the module has the twin
    ``name + PARALLEL_SUFFIX``. The module is a file named after the hash of its text and
    of :mod:`.kernel_numpy`'s (written once)."""
    digest = hashlib.sha256(source.encode() + _kernel_numpy_text()).hexdigest()[:20]
    kernel = _LOADED.get((digest, name))
    if kernel is not None:
        return kernel
    with _LOCK:
        kernel = _LOADED.get((digest, name))
        if kernel is None:
            kernel = _LOADED[digest, name] = _load(source, name, digest)
    return kernel


def _kernel_numpy_text():
    """The source of the ``np`` the kernels import: Numba's cache does not see it change."""
    text = _STATE.get("kernel_numpy")
    if text is None:
        with open(os.path.join(os.path.dirname(__file__), "kernel_numpy.py"), "rb") as f:
            text = _STATE["kernel_numpy"] = f.read()
    return text


def _load(source, name, digest):
    folder = cache_dir()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"k_{digest}.py")
    if not os.path.exists(path):
        _write(path, source.encode())
    module_name = f"tracegrad_kernels.k_{digest}"
    module = sys.modules.get(module_name)
    if module is None:  # (another kernel of the same module may have loaded it)
        module = types.ModuleType(module_name)
        module.__file__ = path  # (Numba's cache sits beside the file its functions come from)
        sys.modules[module_name] = module  # (and looks the module up by name)
        exec(_module_code(source, path), module.__dict__)
    kernel = getattr(module, name)
    twin = getattr(module, name + PARALLEL_SUFFIX, None)
    return kernel if twin is None else Threaded(kernel, twin, _STATE["numba"])


def _module_code(source, path):
    """The kernel module's code object, kept beside it (marshal) so that the next process
    does not compile the module's text again (Python's own .pyc is not written where
    PYTHONDONTWRITEBYTECODE is set)."""
    cached = f"{path[:-3]}.{sys.implementation.cache_tag}.code"
    try:
        with open(cached, "rb") as f:
            return marshal.loads(f.read())
    except (OSError, ValueError, EOFError, TypeError):
        pass
    code = compile(source, path, "exec")
    try:
        _write(cached, marshal.dumps(code))
    except OSError:
        pass
    return code


def _write(path, data):
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)  # (atomic: a process beside this one reads all or nothing)


class Kernels:
    """``@cpu_kernel`` in generated source: the function it decorates becomes a
    :class:`LazyKernel` for the Numba kernel compiled from the same text."""

    def __init__(self, env):
        self.env = env       # the generated module's globals (the kernel is bound there)
        self.sources = {}    # kernel name -> (its module's source, a function writing its
        self.defs = []       # lines on whole arrays); the kernels' defs as the source shows them

    def stubbed(self, source):
        """``source`` with the kernels' bodies blank, line for line: what Python compiles
        (the decorator reads only the def's name; compiling the bodies, never run as
        Python, took a third of a hot tape's recompile)."""
        for text in self.defs:
            lines = text.count("\n")
            stub = text.split("\n", 1)[0] + "\n" * lines + "    pass" if lines else text
            source = source.replace(text, stub, 1)
        return source

    def __call__(self, fn):
        module, arrays = self.sources[fn.__name__]
        return LazyKernel(self.env, fn.__name__, module, _Unfused(fn.__name__, arrays))

    def __repr__(self):
        return f"<Numba kernels {sorted(self.sources)}>"


class _Unfused:
    """A kernel's lines on whole arrays, compiled at the first call (only should Numba
    fail: a hot tape's compile time is spent on the kernels' text otherwise)."""

    def __init__(self, name, text):
        self.name, self.text, self.fn = name, text, None  # (text: a function writing it)

    def __call__(self, *args):
        if self.fn is None:
            from ..rules.core import TABLE  # (a rule with scalar code runs its kernel)
            namespace = {"np": cpu, "rules": TABLE}
            text = self.text() if callable(self.text) else self.text
            exec(compile(text, f"<unfused {self.name}>", "exec"), namespace)
            self.fn = namespace[self.name]
        return self.fn(*args)


class LazyKernel:
    """A fused helper whose kernel is compiled (or read from the cache) at its first call,
    for the argument types of that call; it then takes its own place in the generated
    module, so later calls go straight to Numba. Should Numba fail, the helper's lines run
    unfused, on whole arrays, from then on."""

    def __init__(self, env, name, module, unfused):
        self.env, self.name, self.module, self.unfused = env, name, module, unfused

    def __call__(self, *args):
        try:
            with numpy_own_namespace():
                kernel = load_kernel(self.module, self.name)
                out = kernel(*args)  # (compiled now for these argument types, or read from the cache)
        except Exception as e:  # a kernel Numba cannot compile (a bug, but not the user's)
            if not (type(e).__module__.startswith("numba") or isinstance(e, OSError)):
                raise             # or a cache directory that cannot be written
            warnings.warn(f"tracegrad: Numba could not compile the fused kernel {self.name} "
                          f"({type(e).__name__}: {e}); it runs unfused", RuntimeWarning, stacklevel=2)
            kernel = out = None
        self.bind(kernel or self.unfused)
        return self.unfused(*args) if kernel is None else out

    def bind(self, fn):
        if self.env.get(self.name) is self:
            self.env[self.name] = fn
