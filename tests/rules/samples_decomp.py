"""Samples for the decomposition rules (inv, det, slogdet, solve, cholesky, qr) and the
spectral ones (eigh, eig, svd): stacked matrices, 1x1 and empty ones, and broadcast
batches for solve. Matrices are kept well conditioned, with well separated eigen- and
singular values, so that finite differences are accurate to second order."""
import numpy as np

from .sampling import S

_rng = np.random.default_rng(1515)  # (its own stream: samples do not move when other modules draw)


def r(*shape):
    return _rng.standard_normal(shape)

BROADCASTING = {"solve"}


def invertible(*shape):
    """Random square matrices pushed away from singular (``r + 3 I``)."""
    return r(*shape) + 3 * np.eye(shape[-1])


def _with_noise(a, upper):
    """``a`` with the triangle the kernel does not read replaced by noise."""
    n = a.shape[-1]
    unread = np.tril(np.ones((n, n)), -1) if upper else np.triu(np.ones((n, n)), 1)
    return np.where(unread.astype(bool), r(*a.shape), a)


def spd(*shape, upper=False):
    b = r(*shape)
    a = b @ np.swapaxes(b, -1, -2) + shape[-1] * np.eye(shape[-1])
    return _with_noise(a, upper)


def spread_eigen(*shape, upper=False):
    """Symmetric matrices with eigenvalues 1, 2, ..., n (well separated) in random bases,
    noise in the unread triangle."""
    n = shape[-1]
    q, _ = np.linalg.qr(r(*shape))
    a = (q * np.arange(1.0, n + 1)[..., None, :]) @ np.swapaxes(q, -1, -2)
    return _with_noise(a, upper)


def spread_singular(*shape):
    """Matrices with singular values 1, 2, ... in random bases."""
    m, n = shape[-2:]
    k = min(m, n)
    u, _ = np.linalg.qr(r(*shape[:-2], m, k))
    v, _ = np.linalg.qr(r(*shape[:-2], n, k))
    return (u * np.arange(1.0, k + 1)) @ np.swapaxes(v, -1, -2)


def spread_general(*shape):
    """Non-symmetric matrices with real eigenvalues 1, 2, ... (diagonalizable)."""
    n = shape[-1]
    p = invertible(*shape)
    return (p * np.arange(1.0, n + 1)[..., None, :]) @ np.linalg.inv(p)


SAMPLES = {
    "inv": [S(invertible(3, 3)), S(invertible(2, 4, 4)), S(invertible(1, 1)),
            S(invertible(0, 0), tags="empty"), S(invertible(0, 3, 3), tags="empty")],
    "det": [S(invertible(3, 3)), S(invertible(2, 3, 3)), S(invertible(1, 1)),
            S(-invertible(2, 2)), S(invertible(0, 0), tags="empty"), S(invertible(2, 0, 0), tags="empty")],
    "cofactor": [S(invertible(3, 3)), S(invertible(2, 3, 3)), S(invertible(1, 1)), S(-invertible(2, 2)),
                 S(invertible(0, 0), tags="empty"), S(invertible(2, 0, 0), tags="empty")],
    "slogdet": [S(invertible(3, 3)), S(-invertible(3, 3)), S(invertible(2, 3, 3)), S(invertible(1, 1)),
                S(invertible(0, 0), tags="empty"), S(invertible(0, 2, 2), tags="empty")],
    "solve": [S(invertible(3, 3), r(3, 2)), S(invertible(2, 3, 3), r(2, 3, 1)),
              S(invertible(2, 3, 3), r(3, 2), tags="broadcast"), S(invertible(3, 3), r(2, 3, 4), tags="broadcast"),
              S(invertible(2, 1, 3, 3), r(4, 3, 2), tags="broadcast"), S(invertible(1, 1), r(1, 1)),
              S(invertible(0, 0), r(0, 2), tags="empty"), S(invertible(3, 3), r(3, 0), tags="empty")],
    "cholesky": [S(spd(3, 3)), S(spd(2, 4, 4)), S(spd(3, 3, upper=True), upper=True),
                 S(spd(2, 3, 3, upper=True), upper=True), S(spd(1, 1)),
                 S(spd(0, 0), tags="empty"), S(spd(0, 2, 2), tags="empty")],
    "qr": [S(r(4, 3)), S(r(3, 3)), S(r(3, 5)), S(r(2, 4, 3)), S(r(2, 3, 4)), S(r(1, 1)),
           S(r(3, 3), mode="complete"), S(r(2, 5), mode="complete"),
           S(r(0, 3, 2), tags="empty"), S(r(2, 0, 0), tags="empty")],
    "eigh": [S(spread_eigen(3, 3)), S(spread_eigen(2, 4, 4)), S(spread_eigen(3, 3, upper=True), upper=True),
             S(r(1, 1)), S(r(0, 0), tags="empty"), S(r(2, 0, 0), tags="empty")],
    "eig": [S(spread_general(3, 3)), S(spread_general(2, 3, 3)), S(r(1, 1)),
            S(r(0, 0), tags="empty")],
    "svd": [S(spread_singular(4, 3), full_matrices=False), S(spread_singular(3, 5), full_matrices=False),
            S(spread_singular(3, 3)), S(spread_singular(2, 4, 3), full_matrices=False),
            S(spread_singular(2, 3, 3)), S(spread_singular(2, 2, 4), full_matrices=False), S(r(1, 1)),
            S(spread_singular(4, 1), full_matrices=False),
            S(r(0, 0), tags="empty"), S(r(2, 0, 3), full_matrices=False, tags="empty")],
}

_MATRICES = "operands are (stacks of) square matrices"
EXEMPT = {name: {"0d": _MATRICES} for name in ("inv", "det", "cofactor", "slogdet", "cholesky", "eigh", "eig")}
EXEMPT.update({"solve": {"0d": _MATRICES}, "qr": {"0d": "operands are matrices"},
               "svd": {"0d": "operands are matrices"}})


# -- complex samples (walked by test_complex_table.py) ------------------------------------------

def c(*shape):
    return r(*shape) + 1j * r(*shape)


def c_invertible(*shape):
    return c(*shape) + 3 * np.eye(shape[-1])


def _unitary(*shape):
    return np.linalg.qr(c(*shape))[0]


def c_spread_eigen(*shape, upper=False):
    """Hermitian matrices with eigenvalues 1..n; noise in the unread triangle and in the
    imaginary part of the diagonal (the kernels ignore both)."""
    n = shape[-1]
    q = _unitary(*shape)
    a = (q * np.arange(1.0, n + 1)[..., None, :]) @ np.conj(np.swapaxes(q, -1, -2))
    return _with_noise(a + 1j * np.eye(n) * r(*shape[:-1])[..., None, :], upper)


def c_spd(*shape, upper=False):
    b = c(*shape)
    a = b @ np.conj(np.swapaxes(b, -1, -2)) + shape[-1] * np.eye(shape[-1])
    return _with_noise(a + 0.3j * np.eye(shape[-1]), upper)


def c_spread_singular(*shape):
    m, n = shape[-2:]
    k = min(m, n)
    u, v = _unitary(*shape[:-2], m, k), _unitary(*shape[:-2], n, k)
    return (u * np.arange(1.0, k + 1)) @ np.conj(np.swapaxes(v, -1, -2))


def c_spread_general(*shape):
    n = shape[-1]
    p = c_invertible(*shape)
    return (p * (np.arange(1.0, n + 1) + 0.5j * np.arange(n))[..., None, :]) @ np.linalg.inv(p)


def rotation_like(n):
    """A real matrix whose eigenvalues come in complex pairs (2 +- i, 4 +- 2i, ...)."""
    blocks = np.zeros((n, n))
    for k in range(0, n - 1, 2):
        a, b = 2.0 + 2 * k, 1.0 + k
        blocks[k:k + 2, k:k + 2] = [[a, -b], [b, a]]
    if n % 2:
        blocks[-1, -1] = 7.0
    p = invertible(n, n)
    return p @ blocks @ np.linalg.inv(p)


COMPLEX_SAMPLES = {
    "inv": [S(c_invertible(3, 3)), S(c_invertible(2, 3, 3)), S(c_invertible(1, 1))],
    "det": [S(c_invertible(3, 3)), S(c_invertible(2, 3, 3))],
    "cofactor": [S(c_invertible(3, 3)), S(c_invertible(2, 3, 3)), S(c_invertible(1, 1))],
    "slogdet": [S(c_invertible(3, 3)), S(c_invertible(2, 2, 2))],
    "solve": [S(c_invertible(3, 3), c(3, 2)), S(c_invertible(2, 3, 3), r(3, 2)), S(invertible(3, 3), c(2, 3, 1))],
    "cholesky": [S(c_spd(3, 3)), S(c_spd(2, 3, 3)), S(c_spd(3, 3, upper=True), upper=True)],
    "qr": [S(c(4, 3)), S(c(3, 3)), S(c(2, 3, 5)), S(c(2, 4), mode="complete")],
    "eigh": [S(c_spread_eigen(3, 3)), S(c_spread_eigen(2, 4, 4)), S(c_spread_eigen(3, 3, upper=True), upper=True)],
    "eig": [S(c_spread_general(3, 3)), S(c_spread_general(2, 3, 3)), S(rotation_like(4)), S(spread_general(3, 3))],
    "svd": [S(c_spread_singular(4, 3), full_matrices=False), S(c_spread_singular(3, 5), full_matrices=False),
            S(c_spread_singular(3, 3)), S(c_spread_singular(2, 3, 3), full_matrices=False),
            S(c_spread_singular(3, 4), full_matrices=False)],
}


# -- PyTorch's equivalents (walked by test_oracle_table.py) ----------------------------------------
# eigh and cholesky read one triangle: torch is given the symmetric matrix that triangle
# stands for (its gradient through that construction is the table's). Vectors' signs are
# LAPACK's choice and differ between NumPy's LAPACK and PyTorch's: torch's are turned to
# NumPy's by a constant sign per vector (which its gradient passes through).

def _torch():
    import torch
    return torch


def _from_triangle(x, upper):
    """The Hermitian matrix the lower (upper) triangle of ``x`` stands for."""
    torch = _torch()
    off = torch.triu(x, 1) if upper else torch.tril(x, -1)
    diagonal = torch.diagonal(x, dim1=-2, dim2=-1)
    return off + off.mT.conj() + torch.diag_embed(diagonal.real if x.is_complex() else diagonal)


def _signs_like(theirs, ours):
    """+-1 per column of ``theirs`` (a torch tensor) that turns it into NumPy's ``ours``."""
    torch = _torch()
    dots = np.sum(np.real(np.conj(theirs.detach().numpy()) * ours), axis=-2)
    return torch.tensor(np.where(dots < 0, -1.0, 1.0))


def _torch_eigh(x, upper=False):
    w, v = _torch().linalg.eigh(_from_triangle(x, upper))
    ours = np.linalg.eigh(x.detach().numpy(), UPLO="U" if upper else "L")[1]
    return w, v * _signs_like(v, ours).unsqueeze(-2)


def _torch_svd(x, full_matrices=True):
    torch = _torch()
    u, s, vh = torch.linalg.svd(x, full_matrices=full_matrices)
    signs = _signs_like(u, np.linalg.svd(x.detach().numpy(), full_matrices=full_matrices)[0])
    k = s.shape[-1]
    row_signs = torch.cat([signs[..., :k], signs.new_ones(signs.shape[:-1] + (vh.shape[-2] - k,))], -1)
    return u * signs.unsqueeze(-2), s, vh * row_signs.unsqueeze(-1)


def _torch_eig(x):
    w, v = _torch().linalg.eig(x)
    ours = np.linalg.eig(x.detach().numpy())[1]
    return w, v * _signs_like(v, ours).unsqueeze(-2)


TORCH = {
    "inv": lambda x: _torch().linalg.inv(x),
    "det": lambda x: _torch().linalg.det(x),
    "cofactor": lambda x: _torch().linalg.det(x)[..., None, None] * _torch().linalg.inv(x).mT,
    "slogdet": lambda x: tuple(_torch().linalg.slogdet(x)),
    "solve": lambda a, b: _torch().linalg.solve(a, b),
    "cholesky": lambda x, upper=False: _torch().linalg.cholesky(_from_triangle(x, upper), upper=upper),
    "qr": lambda x, mode="reduced": tuple(_torch().linalg.qr(x, mode=mode)),
    "eigh": _torch_eigh,
    "eig": _torch_eig,
    "svd": _torch_svd,
}


def _solve_broadcast(rng):
    """Random broadcastable batches of well-conditioned systems, for the torch oracle."""
    shapes = [(), (1,), (2,), (3, 1), (1, 2)]
    ba, bb = shapes[rng.integers(len(shapes))], shapes[rng.integers(len(shapes))]
    a = rng.standard_normal(ba + (3, 3)) * 0.3 + np.eye(3) * 2
    return (a, rng.standard_normal(bb + (3, 2))), {}


BROADCAST_INPUTS = {"solve": _solve_broadcast}
