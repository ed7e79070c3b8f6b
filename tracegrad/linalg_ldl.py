"""``torch.linalg.ldl_factor``, ``ldl_factor_ex`` and ``ldl_solve``: LAPACK's Bunch-Kaufman
``LDL^T`` (``LDL^H`` when ``hermitian``) factorisation and solve, through SciPy's LAPACK
bindings (``sytrf``/``hetrf``, ``sytrs``/``hetrs``), one matrix at a time over the batch.

The results are LAPACK's, as PyTorch's: ``LD`` holds L below its diagonal and D's blocks
on and next to it (its lower triangle), ``pivots`` LAPACK's 1-based interchanges
(negative for 2x2 blocks). PyTorch does not differentiate these functions; here their
results do not require grad. SciPy is needed (``pip install scipy``).
"""
from .backend import cpu, namespace_of
from .ops.return_types import _structseq
from .ops._args import on_samples
from .runtime.tensor import wrap

linalg_ldl_factor = _structseq("linalg_ldl_factor", ["LD", "pivots"])
linalg_ldl_factor_ex = _structseq("linalg_ldl_factor_ex", ["LD", "pivots", "info"])


def _lapack(names, array):
    try:
        from scipy.linalg import lapack
    except ImportError:  # pragma: no cover - SciPy is an optional dependency
        raise ImportError("torch.linalg.ldl_factor / ldl_solve need SciPy's LAPACK: pip install scipy") from None
    return lapack.get_lapack_funcs(names, (array,))


def _on_host(t):
    xp = namespace_of(t._data)
    return xp, cpu.asarray(xp.to_host(t._data) if hasattr(xp, "to_host") else t._data)


def _routine(hermitian, complex_):
    return "hetr" if hermitian and complex_ else "sytr"


def ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    # (under vmap: every sample factored, A's _data being sample 0 only)
    return on_samples(lambda a: _ldl_factor_ex(a, hermitian, check_errors), A, leading=True)


def _ldl_factor_ex(A, hermitian, check_errors):
    fn = "torch.linalg.ldl_factor_ex"
    if A.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got {A.dtype.scalar_name}")
    xp, a = _on_host(A)
    batch, n = a.shape[:-2], a.shape[-1]
    ld = cpu.zeros(a.shape, dtype=a.dtype)
    pivots = cpu.zeros(batch + (n,), dtype=cpu.int32)
    info = cpu.zeros(batch, dtype=cpu.int32)
    if n:
        (factor,) = _lapack((_routine(hermitian, a.dtype.kind == "c") + "f",), a)
        for i in cpu.ndindex(*batch):
            ldu, ipiv, code = factor(a[i], lower=1)
            ld[i], pivots[i], info[i] = cpu.tril(ldu), ipiv, code
    if check_errors and info.any():
        raise RuntimeError(f"torch.linalg.ldl_factor: Unknown error code: {int(info.reshape(-1)[info.reshape(-1) != 0][0])}.")
    to = getattr(xp, "from_host", cpu.asarray)
    return linalg_ldl_factor_ex(wrap(to(ld)), wrap(to(pivots)), wrap(to(info)))


def ldl_factor(A, *, hermitian=False):
    LD, pivots, _ = ldl_factor_ex(A, hermitian=hermitian, check_errors=True)
    return linalg_ldl_factor(LD, pivots)


def ldl_solve(LD, pivots, B, *, hermitian=False):
    """``A X = B`` from ``ldl_factor``'s results (under vmap: sample by sample)."""
    return on_samples(lambda ld, piv, b: _ldl_solve(ld, piv, b, hermitian), LD, pivots, B)


def _ldl_solve(LD, pivots, B, hermitian):
    if LD.dtype is not B.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {B.dtype.scalar_name} "
                           f"and A of type {LD.dtype.scalar_name} instead.")
    if B.ndim < 2:
        raise RuntimeError("torch.linalg.ldl_solve: The input tensor B must have at least 2 dimensions.")
    xp, ld = _on_host(LD)
    _, piv = _on_host(pivots)
    _, b = _on_host(B)
    batch = cpu.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    ld = cpu.broadcast_to(ld, batch + ld.shape[-2:])
    piv = cpu.broadcast_to(piv, batch + piv.shape[-1:])
    b = cpu.broadcast_to(b, batch + b.shape[-2:])
    x = cpu.zeros(b.shape, dtype=cpu.result_type(ld, b))
    if x.size:
        (solve,) = _lapack((_routine(hermitian, ld.dtype.kind == "c") + "s",), ld)
        for i in cpu.ndindex(*batch):
            x[i] = solve(ld[i], piv[i], b[i], lower=1)[0]
    return wrap(getattr(xp, "from_host", cpu.asarray)(x))
