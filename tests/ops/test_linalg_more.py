"""The rest of ``tracegrad.linalg`` (lu family, triangular solves, lstsq, the ``_ex``
variants, matrix_rank, cond, tensorinv/tensorsolve, householder_product, vecdot, vander,
cross...) and torch's legacy twins against real PyTorch: values, named-result fields,
gradients of real-valued losses (float64, batched, complex where torch supports it),
``out=`` and errors (type and message)."""
import math

import numpy as np
import pytest

import tracegrad as tg

rng = np.random.default_rng(1621)


def _torch():
    return pytest.importorskip("torch")


def rand(*shape, complex_=False):
    a = rng.standard_normal(shape)
    return a + 1j * rng.standard_normal(shape) if complex_ else a


def invertible(*shape, complex_=False):
    return rand(*shape, complex_=complex_) + 3 * np.eye(shape[-1])


def _leaves(T, arrays):
    out = []
    for a in arrays:
        if isinstance(a, np.ndarray) and a.dtype.kind in "fc":
            out.append(T.tensor(a, requires_grad=True))
        elif isinstance(a, np.ndarray):
            out.append(T.tensor(a))
        else:
            out.append(a)
    return out


def _flat(y):
    if isinstance(y, (tuple, list)):
        return [v for part in y for v in _flat(part)]
    return [y]


def _loss(T, outputs):
    total = 0
    for k, y in enumerate(outputs):
        if not (y.is_floating_point() or y.is_complex()) or not y.requires_grad:
            continue
        w = T.tensor(np.random.default_rng(k).standard_normal(tuple(y.shape)))
        total = total + ((y.real * w).sum() + (y.imag * w.flip(0) if y.ndim else y.imag * w).sum()
                         if y.is_complex() else (y * w).sum())
    return total


def oracle(fn, *arrays, grad=True, atol=1e-8, fields=None):
    """``fn(T, *tensors)`` under tracegrad and torch: equal values (and named fields), and
    equal gradients of a weighted sum of the differentiable outputs."""
    torch = _torch()
    got_in, want_in = _leaves(tg, arrays), _leaves(torch, arrays)
    got, want = fn(tg, *got_in), fn(torch, *want_in)
    if fields is not None:
        assert list(got._fields) == list(fields)
        for k, name in enumerate(fields):
            assert getattr(got, name) is got[k] and getattr(want, name) is want[k]
    g_out, w_out = _flat(got), _flat(want)
    assert len(g_out) == len(w_out)
    for g, w in zip(g_out, w_out):
        assert tuple(g.shape) == tuple(w.shape)
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        np.testing.assert_allclose(g.detach().numpy(), w.detach().resolve_conj().numpy(), atol=atol, rtol=1e-7)
    if not grad:
        return
    gl, wl = _loss(tg, g_out), _loss(torch, w_out)
    g_leaves = [t for t in got_in if isinstance(t, tg.Tensor) and t.requires_grad]
    w_leaves = [t for t in want_in if isinstance(t, torch.Tensor) and t.requires_grad]
    g_grads = tg.autograd.grad(gl, g_leaves, allow_unused=True)
    w_grads = torch.autograd.grad(wl, w_leaves, allow_unused=True)
    for g, w in zip(g_grads, w_grads):
        if w is None:
            assert g is None or not g.abs().sum().item()
            continue
        np.testing.assert_allclose(g.numpy(), w.resolve_conj().numpy(), atol=1e-7, rtol=1e-6)


def raises(fn, *args, **kwargs):
    """The (type name, message) ``fn`` raises under tracegrad and under torch agree."""
    torch = _torch()
    with pytest.raises(Exception) as got:
        fn(tg, *args, **kwargs)
    with pytest.raises(Exception) as want:
        fn(torch, *args, **kwargs)
    assert str(got.value) == str(want.value)
    return got.value, want.value


SHAPES = [(3, 3), (2, 4, 4), (4, 2), (2, 3), (2, 5, 3), (1, 1)]


@pytest.mark.torch
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("complex_", [False, True])
def test_lu_factor_and_lu(shape, complex_):
    a = rand(*shape, complex_=complex_)
    oracle(lambda T, A: T.linalg.lu_factor(A), a, fields=["LU", "pivots"])
    oracle(lambda T, A: T.linalg.lu(A), a, fields=["P", "L", "U"])
    oracle(lambda T, A: T.linalg.lu_factor_ex(A), a, fields=["LU", "pivots", "info"])
    oracle(lambda T, A: T.lu_unpack(*T.linalg.lu_factor(A)), a)


@pytest.mark.torch
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("complex_", [False, True])
def test_lu_solve(left, adjoint, complex_):
    a, b = invertible(2, 3, 3, complex_=complex_), rand(2, 3, 3, complex_=complex_)
    oracle(lambda T, A, B: T.linalg.lu_solve(*T.linalg.lu_factor(A), B, left=left, adjoint=adjoint), a, b)
    # the factors themselves as leaves
    torch = _torch()
    lu, piv = torch.linalg.lu_factor(torch.tensor(a))
    oracle(lambda T, LU, P, B: T.linalg.lu_solve(LU, P, B, left=left, adjoint=adjoint),
           lu.numpy(), piv.numpy(), b)


@pytest.mark.torch
@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("complex_", [False, True])
def test_solve_triangular(upper, left, unit, complex_):
    a, b = invertible(2, 3, 3, complex_=complex_), rand(3, 4, complex_=complex_) if left else rand(4, 3, complex_=complex_)
    oracle(lambda T, A, B: T.linalg.solve_triangular(A, B, upper=upper, left=left, unitriangular=unit), a, b)


@pytest.mark.torch
def test_solve_triangular_zero_pivot_gives_inf_like_torch():
    a = np.triu(invertible(3, 3))
    a[1, 1] = 0
    torch = _torch()
    got = tg.linalg.solve_triangular(tg.tensor(a), tg.ones(3, 1, dtype=tg.float64), upper=True)
    want = torch.linalg.solve_triangular(torch.tensor(a), torch.ones(3, 1, dtype=torch.float64), upper=True)
    np.testing.assert_array_equal(np.isfinite(got.numpy()), np.isfinite(want.numpy()))


@pytest.mark.torch
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("upper", [False, True])
def test_triangular_solve_legacy(transpose, upper):
    a, b = invertible(3, 3), rand(2, 3, 2)
    oracle(lambda T, B, A: T.triangular_solve(B, A, upper=upper, transpose=transpose), b, a,
           fields=["solution", "cloned_coefficient"])
    oracle(lambda T, B, A: B.triangular_solve(A, upper=upper, transpose=transpose), b, a)


@pytest.mark.torch
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("complex_", [False, True])
def test_cholesky_solve_and_inverse(upper, complex_):
    x = rand(2, 3, 3, complex_=complex_)
    spd = x @ np.conj(np.swapaxes(x, -1, -2)) + 3 * np.eye(3)
    factor = np.linalg.cholesky(spd)
    factor = np.conj(np.swapaxes(factor, -1, -2)) if upper else factor
    b = rand(2, 3, 2, complex_=complex_)
    oracle(lambda T, B, L: T.cholesky_solve(B, L, upper=upper), b, factor)
    oracle(lambda T, L: T.cholesky_inverse(L, upper=upper), factor)
    oracle(lambda T, B, L: B.cholesky_solve(L, upper=upper), b, factor)


@pytest.mark.torch
def test_legacy_lu_names():
    a, b = invertible(2, 3, 3), rand(2, 3, 1)
    oracle(lambda T, A: T.lu(A), a)
    oracle(lambda T, A: A.lu(get_infos=True), a)
    oracle(lambda T, B, A: T.lu_solve(B, *T.linalg.lu_factor(A)), b, a)
    oracle(lambda T, B, A: B.lu_solve(*T.linalg.lu_factor(A)), b, a)
    oracle(lambda T, A: T.lu_unpack(*T.linalg.lu_factor(A), unpack_data=False), a, grad=False)
    oracle(lambda T, A: T.lu_unpack(*T.linalg.lu_factor(A), unpack_pivots=False), a)


@pytest.mark.torch
@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape", [((5, 3), (5, 2)), ((2, 4, 3), (2, 4, 2)), ((3, 3), (3,)), ((5, 3), (5,)),
                                   ((3, 5), (3, 2))])
def test_lstsq(driver, shape):
    if driver == "gels" and shape[0][-2] < shape[0][-1]:
        pytest.skip("gels needs full rank tall or square A")
    a, b = rand(*shape[0]), rand(*shape[1])
    oracle(lambda T, A, B: T.linalg.lstsq(A, B, driver=driver), a, b, atol=1e-7,
           fields=["solution", "residuals", "rank", "singular_values"])


@pytest.mark.torch
def test_lstsq_rank_deficient_and_complex():
    a = rand(5, 2) @ rand(2, 3)
    oracle(lambda T, A, B: T.linalg.lstsq(A, B, driver="gelsd"), a, rand(5, 2), grad=False, atol=1e-7)
    oracle(lambda T, A, B: T.linalg.lstsq(A, B, driver="gelsd"), rand(4, 3, complex_=True),
           rand(4, 2, complex_=True), atol=1e-7)


@pytest.mark.torch
@pytest.mark.parametrize("complex_", [False, True])
def test_ex_variants(complex_):
    a = invertible(2, 3, 3, complex_=complex_)
    spd = a @ np.conj(np.swapaxes(a, -1, -2))
    oracle(lambda T, A: T.linalg.inv_ex(A), a, fields=["inverse", "info"])
    oracle(lambda T, A: T.linalg.cholesky_ex(A), spd, fields=["L", "info"], grad=False)
    oracle(lambda T, A, B: T.linalg.solve_ex(A, B), a, rand(2, 3, 2, complex_=complex_), fields=["result", "info"])


@pytest.mark.torch
def test_ex_variants_report_info_on_failure():
    torch = _torch()
    singular = np.stack([np.eye(2), [[1.0, 2.0], [2.0, 4.0]]])
    for fn in (lambda T, A: T.linalg.inv_ex(A), lambda T, A: T.linalg.cholesky_ex(A),
               lambda T, A: T.linalg.solve_ex(A, T.ones(2, 2, 1, dtype=T.float64)),
               lambda T, A: T.linalg.lu_factor_ex(A)):
        got, want = fn(tg, tg.tensor(singular)), fn(torch, torch.tensor(singular))
        np.testing.assert_array_equal(got[-1].numpy(), want[-1].numpy())
        np.testing.assert_allclose(got[0][0].numpy(), want[0][0].numpy())  # the good matrix


@pytest.mark.torch
def test_singular_errors_are_linalg_errors_with_torch_messages():
    s = np.array([[1.0, 2.0], [2.0, 4.0]])
    batch = np.stack([np.eye(2), s])
    cases = [(lambda T: T.linalg.inv(T.tensor(s))), (lambda T: T.linalg.inv(T.tensor(batch))),
             (lambda T: T.inverse(T.tensor(s))), (lambda T: T.linalg.inv_ex(T.tensor(s), check_errors=True)),
             (lambda T: T.linalg.solve(T.tensor(s), T.ones(2, dtype=T.float64))),
             (lambda T: T.linalg.solve(T.tensor(batch), T.ones(2, 2, 1, dtype=T.float64))),
             (lambda T: T.linalg.solve_ex(T.tensor(s), T.ones(2, 1, dtype=T.float64), check_errors=True)),
             (lambda T: T.linalg.cholesky(-T.eye(2))),
             (lambda T: T.linalg.cholesky_ex(-T.eye(2), check_errors=True)),
             (lambda T: T.linalg.tensorinv(T.tensor(s))[0] if False else T.linalg.tensorinv(T.tensor(s), ind=1))]
    torch = _torch()
    for case in cases:
        got, want = raises(case)
        assert isinstance(got, tg.linalg.LinAlgError) and isinstance(want, torch.linalg.LinAlgError)
        assert isinstance(got, RuntimeError) and isinstance(got, np.linalg.LinAlgError)  # (NumPy front end)
    got, want = raises(lambda T: T.linalg.lu_factor(T.tensor(batch)))
    assert type(got) is RuntimeError


@pytest.mark.torch
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 3), (3, 5)])
def test_matrix_rank(shape):
    full = rand(*shape)
    low = rand(*shape[:-1], 1) @ rand(*shape[:-2], 1, shape[-1])
    for a in (full, low, np.zeros(shape)):
        oracle(lambda T, A: T.linalg.matrix_rank(A), a, grad=False)
        oracle(lambda T, A: T.linalg.matrix_rank(A, atol=0.5, rtol=0.1), a, grad=False)
        oracle(lambda T, A: T.linalg.matrix_rank(A, atol=1e9), a, grad=False)
    oracle(lambda T, A: T.linalg.matrix_rank(A, 0.5, True), full[..., :2, :2] + np.swapaxes(full[..., :2, :2], -1, -2),
           grad=False)
    oracle(lambda T, A: T.linalg.matrix_rank(A, tol=0.5), full, grad=False)
    sym = full[..., :2, :2] + np.swapaxes(full[..., :2, :2], -1, -2)
    oracle(lambda T, A: T.linalg.matrix_rank(A, hermitian=True), sym, grad=False)
    oracle(lambda T, A: T.linalg.matrix_rank(A), rand(*shape, complex_=True), grad=False)


@pytest.mark.torch
@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf])
def test_cond(p):
    # PyTorch 2.13 cannot differentiate the norm-based orders (it fills its inverse in place)
    oracle(lambda T, A: T.linalg.cond(A, p), invertible(2, 3, 3), grad=p in (None, 2, -2))
    if p != "nuc":  # nuc of a singular matrix: 1 / (its rounding-level smallest singular value)
        oracle(lambda T, A: T.linalg.cond(A, p), np.array([[1.0, 2.0], [2.0, 4.0]]), grad=False)
    if p in (None, 2, -2):
        oracle(lambda T, A: T.linalg.cond(A, p), rand(2, 3, 4))
        oracle(lambda T, A: T.linalg.cond(A, p), invertible(2, 3, 3, complex_=True))
    else:
        oracle(lambda T, A: T.linalg.cond(A, p), invertible(3, 3, complex_=True), grad=False)


@pytest.mark.torch
def test_cond_errors():
    raises(lambda T: T.linalg.cond(T.ones(2, 2), 3))
    raises(lambda T: T.linalg.cond(T.ones(2, 3), 1))


@pytest.mark.torch
def test_tensorinv_tensorsolve():
    a = invertible(6, 6).reshape(2, 3, 6)
    oracle(lambda T, A: T.linalg.tensorinv(A, ind=2), a)
    oracle(lambda T, A: T.linalg.tensorinv(A, ind=1), invertible(4, 4).reshape(4, 2, 2))
    oracle(lambda T, A, B: T.linalg.tensorsolve(A, B), a, rand(2, 3))
    oracle(lambda T, A, B: T.linalg.tensorsolve(A, B, dims=(0,)), np.moveaxis(a, 2, 0).copy(), rand(2, 3))
    raises(lambda T: T.linalg.tensorinv(T.ones(2, 3, 6), ind=0))
    raises(lambda T: T.linalg.tensorinv(T.ones(2, 3, 5), ind=2))


@pytest.mark.torch
@pytest.mark.parametrize("shape,k", [((4, 3), 3), ((2, 4, 3), 2), ((3, 3), 3), ((5, 2), 1)])
@pytest.mark.parametrize("complex_", [False, True])
def test_householder_product(shape, k, complex_):
    a, tau = rand(*shape, complex_=complex_), rand(*shape[:-2], k, complex_=complex_)
    oracle(lambda T, A, t: T.linalg.householder_product(A, t), a, tau)
    torch = _torch()
    qr_data, taus = torch.geqrf(torch.tensor(rand(4, 3)))
    oracle(lambda T, A, t: T.linalg.householder_product(A, t), qr_data.numpy(), taus.numpy())


@pytest.mark.torch
def test_householder_product_errors():
    raises(lambda T: T.linalg.householder_product(T.ones(2, 3), T.ones(1)))
    raises(lambda T: T.linalg.householder_product(T.ones(3, 2), T.ones(3)))
    raises(lambda T: T.linalg.householder_product(T.ones(3, 2), T.ones(2, dtype=T.float64)))


@pytest.mark.torch
@pytest.mark.parametrize("complex_", [False, True])
def test_vecdot_cross_matmul_diagonal(complex_):
    x, y = rand(2, 3, complex_=complex_), rand(4, 1, 3, complex_=complex_)
    oracle(lambda T, a, b: T.linalg.vecdot(a, b), x, y)
    oracle(lambda T, a, b: T.linalg.vecdot(a, b, dim=0), rand(3, 2, complex_=complex_), rand(3, 2, complex_=complex_))
    oracle(lambda T, a, b: T.linalg.cross(a, b), rand(1, 3), rand(2, 3))
    oracle(lambda T, a, b: T.linalg.cross(a, b, dim=0), rand(3, 2), rand(3, 2))
    oracle(lambda T, a, b: T.linalg.matmul(a, b), rand(2, 3, 4), rand(4))
    oracle(lambda T, a: T.linalg.diagonal(a, offset=1), rand(2, 3, 4))
    raises(lambda T: T.linalg.vecdot(T.ones(3), T.ones(3, dtype=T.float64)))
    raises(lambda T: T.linalg.cross(T.ones(4), T.ones(4)))


@pytest.mark.torch
def test_torch_cross_default_dim_is_the_first_of_size_3():
    torch = _torch()
    a, b = rand(3, 4, 3), rand(3, 4, 3)
    with pytest.warns(UserWarning) as got_warnings:
        got = tg.cross(tg.tensor(a), tg.tensor(b))
    with pytest.warns(UserWarning) as want_warnings:
        torch.cross(torch.tensor(a), torch.tensor(b))
    want_text = str(want_warnings[0].message).split(" (Triggered internally")[0]
    assert str(got_warnings[0].message) == want_text
    np.testing.assert_allclose(got.numpy(), torch.linalg.cross(torch.tensor(a), torch.tensor(b), dim=0).numpy())
    raises(lambda T: T.cross(T.ones(4, 2), T.ones(4, 2)))


@pytest.mark.torch
def test_vander_and_matrix_exp():
    oracle(lambda T, x: T.linalg.vander(x), rand(2, 3))
    oracle(lambda T, x: T.linalg.vander(x, N=4), np.array([0.0, 1.5, -2.0]))
    oracle(lambda T, x: T.linalg.vander(x), np.array([[1, 2], [3, 4]]), grad=False)
    raises(lambda T: T.linalg.vander(T.ones(1)))
    oracle(lambda T, a: T.linalg.matrix_exp(a), rand(2, 3, 3))
    raises(lambda T: T.linalg.matrix_exp(T.ones(2, 3)))


@pytest.mark.torch
def test_input_errors():
    a = invertible(3, 3)
    raises(lambda T: T.linalg.solve_triangular(T.tensor(a), T.ones(3, dtype=T.float64), upper=True))
    raises(lambda T: T.linalg.solve_triangular(T.tensor(a), T.ones(2, 1, dtype=T.float64), upper=True))
    raises(lambda T: T.linalg.solve_triangular(T.ones(3, 2, dtype=T.float64), T.ones(3, 1, dtype=T.float64),
                                               upper=True))
    raises(lambda T: T.linalg.lu_factor(T.ones(3, dtype=T.float64)))
    raises(lambda T: T.linalg.lu_factor(T.tensor(a), pivot=False))
    lu = lambda T: T.linalg.lu_factor(T.tensor(a))  # noqa: E731
    raises(lambda T: T.linalg.lu_solve(*lu(T), T.ones(3)))
    raises(lambda T: T.linalg.lu_solve(*lu(T), T.ones(3, dtype=T.float64)))
    raises(lambda T: T.linalg.lu_solve(*lu(T), T.ones(2, 1, dtype=T.float64)))
    raises(lambda T: T.linalg.lstsq(T.tensor(a), T.ones(3, 1, dtype=T.float64), driver="foo"))
    raises(lambda T: T.linalg.lstsq(T.tensor(a), T.ones(3, 1)))
    raises(lambda T: T.linalg.lstsq(T.tensor(a), T.ones(2, 1, dtype=T.float64)))


@pytest.mark.torch
def test_out_argument():
    torch = _torch()
    a = invertible(3, 3)
    for T in (tg, torch):
        A = T.tensor(a)
        out = T.empty(0, dtype=T.float64)
        assert T.linalg.solve_triangular(A, A, upper=True, out=out) is out
        lu, piv = T.empty(0, dtype=T.float64), T.empty(0, dtype=T.int32)
        res = T.linalg.lu_factor(A, out=(lu, piv))
        assert res.LU is lu and res.pivots is piv and type(res).__name__ == "linalg_lu_factor_out"
    got = tg.linalg.inv(tg.tensor(a), out=tg.empty(0, dtype=tg.float64))
    np.testing.assert_allclose(got.numpy(), np.linalg.inv(a))
    raises(lambda T: T.linalg.inv(T.tensor(a), out=T.empty(0, dtype=T.int64)))
    raises(lambda T: T.linalg.lu_factor(T.tensor(a), out=(T.empty(0, dtype=T.float64), T.empty(0))))
    raises(lambda T: T.linalg.det(T.tensor(a), out=T.empty(0)))
    raises(lambda T: T.linalg.inv(T.tensor(a, requires_grad=True), out=T.empty(0, dtype=T.float64)))
    raises(lambda T: T.linalg.solve_triangular(T.tensor(a, requires_grad=True), T.tensor(a), upper=True,
                                               out=T.empty(0, dtype=T.float64)))
    grads = []
    for T in (tg, torch):  # composite functions copy their value into out, recorded
        out, A = T.empty(0, dtype=T.float64), T.tensor(a, requires_grad=True)
        T.linalg.cond(A, out=out)
        assert out.item() == pytest.approx(np.linalg.cond(a))
        out.backward()
        grads.append(A.grad.numpy())
    np.testing.assert_allclose(*grads)


def test_lu_reconstructs_and_solves_without_torch():
    """P L U = A and lu_solve solves, checked by hand (no oracle)."""
    for shape in [(4, 4), (2, 3, 5), (5, 2)]:
        a = rand(*shape)
        P, L, U = tg.linalg.lu(tg.tensor(a))
        np.testing.assert_allclose((P @ L @ U).numpy(), a, atol=1e-12)
        assert np.all(np.abs(np.tril(L.numpy(), -1)) <= 1 + 1e-12)  # partial pivoting bounds L
    a, b = invertible(3, 3), rand(3, 2)
    x = tg.linalg.lu_solve(*tg.linalg.lu_factor(tg.tensor(a)), tg.tensor(b))
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, b))


def test_gradcheck_composed_functions():
    from tracegrad.autograd import gradcheck, gradgradcheck
    a = tg.tensor(invertible(3, 3), requires_grad=True)
    b = tg.tensor(rand(3, 2), requires_grad=True)
    assert gradcheck(lambda A, B: tg.linalg.lu_solve(*tg.linalg.lu_factor(A), B), (a, b))
    assert gradgradcheck(lambda A, B: tg.linalg.lu_solve(*tg.linalg.lu_factor(A), B), (a, b))
    assert gradcheck(lambda A, B: tg.linalg.solve_triangular(A, B, upper=False), (a, b))
    for p in ("fro", "nuc", 1, -math.inf):
        assert gradcheck(lambda A: tg.linalg.cond(A, p), (a,))
    tall = tg.tensor(rand(4, 3), requires_grad=True)
    assert gradcheck(lambda A, B: tg.linalg.lstsq(A, B).solution, (tall, tg.tensor(rand(4, 2), requires_grad=True)))
    assert gradcheck(lambda A, t: tg.linalg.householder_product(A, t),
                     (tall, tg.tensor(rand(3), requires_grad=True)))
    assert gradcheck(lambda x: tg.linalg.vander(x), (tg.tensor(rand(3), requires_grad=True),))


@pytest.mark.torch
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 3), (2, 3, 4)])
@pytest.mark.parametrize("complex_", [False, True])
def test_geqrf_orgqr_ormqr(shape, complex_):
    a = rand(*shape, complex_=complex_)
    oracle(lambda T, A: T.geqrf(A.detach()), a, grad=False, fields=["a", "tau"])
    torch = _torch()
    h, tau = torch.geqrf(torch.tensor(a))
    m = shape[-2]
    other = rand(*shape[:-2], m, 2, complex_=complex_)
    for left in (True, False):
        for transpose in (False, True):
            o = other if left else np.swapaxes(other, -1, -2).copy()
            oracle(lambda T, H, t, O: T.ormqr(H, t, O, left=left, transpose=transpose), h.numpy(), tau.numpy(), o)
    if shape[-2] >= shape[-1]:
        oracle(lambda T, H, t: T.orgqr(H, t), h.numpy(), tau.numpy())
        oracle(lambda T, H, t: H.orgqr(t), h.numpy(), tau.numpy())


@pytest.mark.torch
def test_removed_functions_raise_torch_errors():
    for name in ("eig", "matrix_rank", "symeig"):
        raises(lambda T: getattr(T, name)(T.ones(2, 2)))
    raises(lambda T: T.lstsq(T.ones(2, 2), T.ones(2, 2)))


@pytest.mark.torch
@pytest.mark.parametrize("hermitian", [False, True])
@pytest.mark.parametrize("complex_", [False, True])
def test_ldl_factor_and_solve(hermitian, complex_):
    pytest.importorskip("scipy")
    x = rand(2, 4, 4, complex_=complex_)
    a = x + (np.conj(np.swapaxes(x, -1, -2)) if hermitian else np.swapaxes(x, -1, -2))
    b = rand(2, 4, 2, complex_=complex_)
    oracle(lambda T, A: T.linalg.ldl_factor(A.detach(), hermitian=hermitian), a, grad=False, fields=["LD", "pivots"])
    oracle(lambda T, A: T.linalg.ldl_factor_ex(A.detach(), hermitian=hermitian), a, grad=False,
           fields=["LD", "pivots", "info"])
    oracle(lambda T, A, B: T.linalg.ldl_solve(*T.linalg.ldl_factor(A.detach(), hermitian=hermitian), B.detach(),
                                              hermitian=hermitian), a, b, grad=False)
    raises(lambda T: T.linalg.ldl_factor(T.ones(2, 3)))
    raises(lambda T: T.linalg.ldl_solve(*T.linalg.ldl_factor(T.eye(2, dtype=T.float64)), T.ones(2, 1)))


@pytest.mark.torch
def test_legacy_out_gives_named_out_results():
    torch = _torch()
    a, b = invertible(3, 3), rand(3, 2)
    names = []
    for T in (tg, torch):
        two = (T.empty(0, dtype=T.float64), T.empty(0, dtype=T.float64))
        r = T.triangular_solve(T.tensor(b), T.tensor(a), out=two)
        assert r[0] is two[0] and r.cloned_coefficient is two[1]
        three = tuple(T.empty(0, dtype=T.float64) for _ in range(3))
        u = T.lu_unpack(*T.linalg.lu_factor(T.tensor(a)), out=three)
        g = T.geqrf(T.tensor(a), out=(T.empty(0, dtype=T.float64), T.empty(0, dtype=T.float64)))
        names.append((type(r).__name__, type(u).__name__, type(g).__name__))
        np.testing.assert_allclose(three[1].numpy() @ three[2].numpy(), three[0].numpy().T @ a, atol=1e-12)
    assert names[0] == names[1]


@pytest.mark.torch
def test_integer_operands_are_refused_as_torch():
    cases = [lambda T, I: T.linalg.solve_triangular(I, I, upper=True), lambda T, I: T.linalg.lu_factor(I),
             lambda T, I: T.linalg.lu(I), lambda T, I: T.linalg.householder_product(I, I[0]),
             lambda T, I: T.linalg.matrix_exp(I), lambda T, I: T.linalg.cond(I), lambda T, I: T.linalg.matrix_rank(I),
             lambda T, I: T.linalg.vecdot(I, I), lambda T, I: T.linalg.inv_ex(I), lambda T, I: T.linalg.cholesky_ex(I),
             lambda T, I: T.linalg.lstsq(I, I), lambda T, I: T.linalg.tensorinv(I, ind=1),
             lambda T, I: T.cholesky_solve(I, I), lambda T, I: T.cholesky_inverse(I),
             lambda T, I: T.triangular_solve(I, I)]
    for case in cases:
        got, want = raises(lambda T: case(T, T.ones(3, 3, dtype=T.int64)))
        assert type(got).__name__ == type(want).__name__


@pytest.mark.torch
def test_legacy_names_warn_as_torch():
    import warnings
    torch = _torch()
    from tracegrad.ops import linalg_legacy
    linalg_legacy._WARNED.clear()
    calls = [lambda T, A, b: T.triangular_solve(b, A), lambda T, A, b: T.lu(A),
             lambda T, A, b: T.lu_solve(b, *T.linalg.lu_factor(A))]
    for call in calls:
        texts = []
        for T in (tg, torch):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                call(T, T.eye(3, dtype=T.float64), T.ones(3, 1, dtype=T.float64))
            texts.append([str(w.message).split(" (Triggered internally")[0] for w in caught])
        if texts[1]:  # (torch's C++ warnings come once per process)
            assert texts[0] == texts[1]
