"""torch's older top-level names for the lu family and triangular / Cholesky solves
(``torch.triangular_solve``, ``torch.lu``, ``torch.lu_unpack``, ``torch.lu_solve``,
``torch.cholesky_solve``, ``torch.cholesky_inverse``) and their Tensor methods, over
:mod:`tracegrad.linalg_solvers`."""
from .. import linalg_solvers as _S

FUNCTIONS = {
    "triangular_solve": _S.triangular_solve,
    "lu": _S.lu_legacy,
    "lu_unpack": _S.lu_unpack,
    "lu_solve": _S.lu_solve_legacy,
    "cholesky_solve": _S.cholesky_solve,
    "cholesky_inverse": _S.cholesky_inverse,
}

METHODS = {name: FUNCTIONS[name] for name in
           ("triangular_solve", "lu", "lu_solve", "cholesky_solve", "cholesky_inverse")}
