"""torch's older top-level names for the lu family, triangular / Cholesky solves and
Householder products (``torch.triangular_solve``, ``torch.lu``, ``torch.lu_unpack``,
``torch.lu_solve``, ``torch.cholesky_solve``, ``torch.cholesky_inverse``, ``torch.geqrf``,
``torch.orgqr``, ``torch.ormqr``) and their Tensor methods, over
:mod:`tracegrad.linalg_solvers` and :mod:`tracegrad.linalg_misc`; and the functions
PyTorch removed (``torch.lstsq``, ``eig``, ``symeig``, ``matrix_rank``), which raise its
errors; and ``torch.nuclear_norm``/``frobenius_norm``, deprecated but kept for TorchScript."""
import warnings

from .. import linalg_misc as _M
from .. import linalg_solvers as _S
from . import return_types
from .return_types import _structseq

_geqrf_result = _structseq("geqrf", ["a", "tau"])
setattr(return_types, "geqrf", _geqrf_result)  # (out= answers geqrf_out)

_REMOVED = "This function was deprecated since version 1.9 and is now removed. "
_REMOVED_MESSAGES = {
    "lstsq": _REMOVED + (
        "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has reversed "
        "arguments and does not return the QR decomposition in the returned tuple (although it returns other "
        "information about the problem).\n\nTo get the QR decomposition consider using `torch.linalg.qr`.\n\n"
        "The returned solution in `torch.lstsq` stored the residuals of the solution in the last m - n columns "
        "of the returned value whenever m > n. In torch.linalg.lstsq, the residuals are in the field 'residuals' "
        "of the returned named tuple.\n\nThe unpacking of the solution, as in\nX, _ = torch.lstsq(B, A)."
        "solution[:A.size(1)]\nshould be replaced with:\nX = torch.linalg.lstsq(A, B).solution"),
    "eig": _REMOVED + (
        "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real tensors "
        "mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced with:\nL_complex = "
        "torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\n"
        "L_complex, V_complex = torch.linalg.eig(A)"),
    "matrix_rank": "This function was deprecated since version 1.9 and is now removed.\nPlease use the "
                   "`torch.linalg.matrix_rank` function instead. The parameter 'symmetric' was renamed in "
                   "`torch.linalg.matrix_rank()` to 'hermitian'.",
    "symeig": _REMOVED + (
        "The default behavior has changed from using the upper triangular portion of the matrix by default to "
        "using the lower triangular portion.\n\nL, _ = torch.symeig(A, upper=upper) should be replaced with:\n"
        "L = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\nL, V = torch.symeig(A, "
        "eigenvectors=True) should be replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')"),
}


def _removed(name):
    def removed(*args, **kwargs):
        raise RuntimeError(_REMOVED_MESSAGES[name])
    removed.__name__ = name
    return removed


_DEPRECATED = {
    "triangular_solve": "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will be "
                        "removed in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments "
                        "reversed and does not return a copy of one of the inputs.\nX = torch.triangular_solve(B, A)"
                        ".solution\nshould be replaced with\nX = torch.linalg.solve_triangular(A, B).",
    "lu": "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be "
          "removed in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\nshould be replaced "
          "with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = torch.lu(A, "
          "compute_pivots, get_infos=True)\nshould be replaced with\nLU, pivots, info = "
          "torch.linalg.lu_factor_ex(A, compute_pivots)",
    "lu_solve": "torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a future "
                "PyTorch release.\nNote that torch.linalg.lu_solve has its arguments reversed.\nX = "
                "torch.lu_solve(B, LU, pivots)\nshould be replaced with\nX = torch.linalg.lu_solve(LU, pivots, B)",
}
_WARNED = set()


def _deprecated(name, fn, once):
    """``fn`` warning as PyTorch does: ``once`` per process (its C++ TORCH_WARN_ONCE) or
    at every call (its Python warning, which Python's filters show once per place)."""
    def warned(*args, **kwargs):
        if not (once and name in _WARNED):
            _WARNED.add(name)
            warnings.warn(_DEPRECATED[name], UserWarning, stacklevel=2)
        return fn(*args, **kwargs)
    warned.__name__ = name
    return warned


def geqrf(input):
    return _geqrf_result(*_M.geqrf(input))

def _jit_only(name, replacement):
    warnings.warn(f"at::{name} is deprecated and it is just left for JIT compatibility. It will be removed "
                  f"in a future PyTorch release. Please use `{replacement}` instead", UserWarning, stacklevel=3)


def nuclear_norm(input, dim=None, keepdim=False):
    """The nuclear norm of a matrix (of the two ``dim`` of a batch), as the deprecated
    ``torch.nuclear_norm`` kept for TorchScript; ``torch.nuclear_norm(A, keepdim)`` too."""
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    _jit_only("nuclear_norm", "linalg.matrix_norm(A, 'nuc', dim, keepdim)")
    from .. import linalg
    return linalg.matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim)


def frobenius_norm(input, dim, keepdim=False):
    """The 2-norm over ``dim``, as the deprecated ``torch.frobenius_norm``."""
    _jit_only("frobenius_norm", "linalg.vector_norm(A, 2., dim, keepdim)")
    from .. import linalg
    return linalg.vector_norm(input, 2.0, dim, keepdim)


FUNCTIONS = {
    "nuclear_norm": nuclear_norm,
    "frobenius_norm": frobenius_norm,
    "triangular_solve": _deprecated("triangular_solve", _S.triangular_solve, once=True),
    "lu": _deprecated("lu", _S.lu_legacy, once=False),
    "lu_unpack": _S.lu_unpack,
    "lu_solve": _deprecated("lu_solve", _S.lu_solve_legacy, once=True),
    "cholesky_solve": _S.cholesky_solve,
    "cholesky_inverse": _S.cholesky_inverse,
    "geqrf": geqrf,
    "orgqr": _M.householder_product,
    "ormqr": _M.ormqr,
    **{name: _removed(name) for name in _REMOVED_MESSAGES},
}

METHODS = {name: FUNCTIONS[name] for name in
           ("triangular_solve", "lu_solve", "cholesky_solve", "cholesky_inverse", "geqrf", "orgqr", "ormqr",
            "lstsq", "eig", "symeig")}
METHODS["lu"] = _S.lu_legacy  # (Tensor.lu does not warn)
