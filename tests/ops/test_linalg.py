"""Matrix products through the public API: values and gradients against hand formulas,
PyTorch's error messages and node names, dtypes, and (marked ``torch``) real PyTorch."""
import itertools

import numpy as np
import pytest

import tracegrad as tg

rng = np.random.default_rng(7)


def leaf(*shape, dtype=np.float64):
    return tg.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)


def backward_with(y):
    """Backpropagate a random weight ``w`` (the gradient of sum(w * y)); return it."""
    w = rng.standard_normal(tuple(y.shape))
    y.backward(tg.tensor(w, dtype=y.dtype))
    return w


def close(t, expected, **kw):
    np.testing.assert_allclose(t.detach().numpy(), expected, rtol=1e-10, atol=1e-12, **kw)


# -- values and gradients against hand formulas ----------------------------------------------

def test_mm_values_and_gradients():
    a, b = leaf(2, 3), leaf(3, 4)
    y = tg.mm(a, b)
    close(y, a.detach().numpy() @ b.detach().numpy())
    w = backward_with(y)
    close(a.grad, w @ b.detach().numpy().T)
    close(b.grad, a.detach().numpy().T @ w)


def test_matmul_operator_on_matrices_is_mm():
    a, b = leaf(2, 3), leaf(3, 4)
    y = a @ b
    assert y.grad_fn.name() == "MmBackward0"
    w = backward_with(y)
    close(a.grad, w @ b.detach().numpy().T)


def test_bmm_values_and_gradients():
    a, b = leaf(5, 2, 3), leaf(5, 3, 4)
    y = tg.bmm(a, b)
    A, B = a.detach().numpy(), b.detach().numpy()
    close(y, A @ B)
    w = backward_with(y)
    close(a.grad, w @ B.transpose(0, 2, 1))
    close(b.grad, A.transpose(0, 2, 1) @ w)


def test_dot_vdot_mv_outer():
    x, v = leaf(4), leaf(4)
    y = tg.dot(x, v)
    assert y.shape == () and y.grad_fn.name() == "DotBackward0"
    close(y, x.detach().numpy() @ v.detach().numpy())
    y.backward()
    close(x.grad, v.detach().numpy())
    close(v.grad, x.detach().numpy())
    y = tg.vdot(x, v)
    assert y.grad_fn.name() == "VdotBackward0"
    m = leaf(3, 4)
    y = tg.mv(m, v)
    w = backward_with(y)
    close(m.grad, np.outer(w, v.detach().numpy()))
    o = tg.outer(leaf(3), leaf(2))
    assert o.shape == (3, 2) and o.grad_fn.name() == "MulBackward0"


def test_matmul_broadcast_batch_gradient_is_summed():
    a, b = leaf(4, 1, 2, 3), leaf(5, 3, 2)
    y = a @ b
    assert y.shape == (4, 5, 2, 2)
    A, B = a.detach().numpy(), b.detach().numpy()
    close(y, np.matmul(A, B))
    w = backward_with(y)
    close(a.grad, (w @ B.transpose(0, 2, 1)).sum(axis=1, keepdims=True))
    close(b.grad, (A.transpose(0, 1, 3, 2) @ w).sum(axis=0))


@pytest.mark.parametrize("sa,sb", [((3,), (2, 3, 4)), ((2, 2, 3), (3,)), ((3,), (3, 4)), ((3,), (3,))])
def test_matmul_with_vectors(sa, sb):
    a, b = leaf(*sa), leaf(*sb)
    y = tg.matmul(a, b)
    A, B = a.detach().numpy(), b.detach().numpy()
    close(y, np.matmul(A, B))
    w = backward_with(y)
    # finite differences of sum(w * (a @ b)) in a random direction of a
    d = rng.standard_normal(sa)
    eps = 1e-6
    numeric = (np.sum(w * np.matmul(A + eps * d, B)) - np.sum(w * np.matmul(A - eps * d, B))) / (2 * eps)
    assert np.isclose(np.sum(a.grad.numpy() * d), numeric, rtol=1e-6)
    assert b.grad.shape == b.shape


def test_inner_tensordot():
    a, b = leaf(2, 3), leaf(4, 3)
    y = tg.inner(a, b)
    close(y, np.inner(a.detach().numpy(), b.detach().numpy()))
    w = backward_with(y)
    close(a.grad, w @ b.detach().numpy())
    x, z = leaf(2, 3, 4), leaf(4, 3, 5)
    y = tg.tensordot(x, z, dims=([1, 2], [1, 0]))
    close(y, np.tensordot(x.detach().numpy(), z.detach().numpy(), axes=([1, 2], [1, 0])))
    assert tg.tensordot(leaf(2, 3), leaf(3, 4), dims=0).shape == (2, 3, 3, 4)
    assert tg.inner(leaf(), leaf(2)).grad_fn.name() == "MulBackward0"


def test_addmm_and_baddbmm():
    c, a, b = leaf(4), leaf(3, 2), leaf(2, 4)
    y = tg.addmm(c, a, b, beta=0.5, alpha=2.0)
    assert y.grad_fn.name() == "AddmmBackward0"
    A, B, C = a.detach().numpy(), b.detach().numpy(), c.detach().numpy()
    close(y, 0.5 * C + 2.0 * A @ B)
    w = backward_with(y)
    close(c.grad, 0.5 * w.sum(0))
    close(a.grad, 2.0 * w @ B.T)
    nan = tg.full((3, 4), float("nan"), dtype=tg.float64)
    assert not tg.isnan(tg.addmm(nan, a, b, beta=0)).any()
    y = c.addmm(a, b)
    close(y, C + A @ B)
    y = tg.baddbmm(leaf(1, 4), leaf(2, 3, 5), leaf(2, 5, 4))
    assert y.shape == (2, 3, 4) and y.grad_fn.name() == "BaddbmmBackward0"


@pytest.mark.parametrize("equation,shapes", [
    ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("ij->j", [(2, 3)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)]), ("ij,ij->i", [(2, 3), (2, 1)]), ("i,j->ij", [(3,), (4,)]),
])
def test_einsum_matches_numpy_with_finite_difference_gradients(equation, shapes):
    ts = [leaf(*s) for s in shapes]
    arrays = [t.detach().numpy() for t in ts]
    y = tg.einsum(equation, *ts)
    close(y, np.einsum(equation, *arrays))
    w = backward_with(y)

    def f(k, x):
        moved = list(arrays)
        moved[k] = x
        return float(np.sum(w * tg.einsum(equation, *[tg.tensor(m) for m in moved]).numpy()))
    for k, t in enumerate(ts):
        d = rng.standard_normal(shapes[k])
        numeric = (f(k, arrays[k] + 1e-6 * d) - f(k, arrays[k] - 1e-6 * d)) / 2e-6
        assert np.isclose(np.sum(t.grad.numpy() * d), numeric, rtol=1e-6, atol=1e-8)


def test_einsum_forms():
    a, b = leaf(2, 3), leaf(3, 4)
    expected = a.detach().numpy() @ b.detach().numpy()
    close(tg.einsum("ij,jk->ik", [a, b]), expected)
    close(tg.einsum(" i j , j k -> i k ", a, b), expected)
    close(tg.einsum(a, [0, 1], b, [1, 2], [0, 2]), expected)
    close(tg.einsum(a, [0, 1], b, [1, 2]), expected)
    close(tg.einsum(a, [Ellipsis, 1], [Ellipsis]), a.detach().numpy().sum(1))


def test_einsum_output_is_not_a_view_of_its_operand():
    x = tg.randn(2, 3)
    y = tg.einsum("ij->ij", x)
    assert not np.shares_memory(x.numpy(), y.numpy())


def test_second_order_through_matmul():
    a, b = leaf(2, 3, 4), leaf(4, 2)
    (g,) = tg.autograd.grad((a @ b).pow(2).sum(), [b], create_graph=True)
    assert g.requires_grad
    (h,) = tg.autograd.grad(g.sum(), [a])
    # d/da sum_b 2 * sum(a^T (a b)) ... checked against finite differences
    A, B = a.detach().numpy(), b.detach().numpy()

    def s(Ax):
        return float(np.sum(2 * np.swapaxes(Ax, -1, -2) @ (Ax @ B)))
    d = rng.standard_normal(A.shape)
    numeric = (s(A + 1e-6 * d) - s(A - 1e-6 * d)) / 2e-6
    assert np.isclose(np.sum(h.numpy() * d), numeric, rtol=1e-6)


# -- dtypes --------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn,shapes", [
    (lambda a, b: a @ b, [(2, 3), (3, 4)]), (lambda a, b: a @ b, [(2, 2, 3), (3,)]),
    (tg.bmm, [(2, 2, 3), (2, 3, 4)]), (tg.dot, [(3,), (3,)]), (tg.mv, [(2, 3), (3,)]),
    (lambda a, b: tg.einsum("ii,ij->j", a, b), [(3, 3), (3, 2)]),
    (lambda a, b: tg.tensordot(a, b, dims=1), [(2, 3), (3, 4)]),
    (lambda a, b: tg.addmm(a[0], a, b, alpha=0.5), [(3, 3), (3, 3)]),
])
def test_float32_stays_float32(fn, shapes):
    ts = [leaf(*s, dtype=np.float32) for s in shapes]
    y = fn(*ts)
    assert y.dtype == tg.float32
    y.sum().backward()
    for t in ts:
        assert t.grad.dtype == tg.float32 and t.grad.shape == t.shape


def test_integer_products():
    a = tg.arange(6).reshape(2, 3)
    y = a @ a.t()
    assert y.dtype == tg.int64 and y.tolist() == [[5, 14], [14, 50]]
    o = tg.ones(2, 2, dtype=tg.int64)
    # PyTorch truncates float scalars for integer tensors: alpha=0.5 -> 0, beta=1.5 -> 1
    assert tg.addmm(o, o, o, beta=1.5, alpha=0.5).tolist() == [[1, 1], [1, 1]]


# -- errors ----------------------------------------------------------------------------------------

R = tg.randn
D = tg.float64
ERRORS = [
    (lambda: tg.mm(R(3), R(3, 4)), RuntimeError, "self must be a matrix"),
    (lambda: tg.mm(R(2, 3), R(2, 3, 4)), RuntimeError, "mat2 must be a matrix"),
    (lambda: tg.mm(R(2, 3), R(4, 5)), RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    (lambda: R(2, 3) @ R(4, 5), RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    (lambda: tg.mm(R(2, 3), R(3, 4, dtype=D)), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda: R(2, 3) @ R(3, 4, dtype=D), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda: tg.mm(R(2, 3), 3), TypeError, "mm(): argument 'mat2' (position 2) must be Tensor, not int"),
    (lambda: tg.bmm(R(2, 3), R(2, 3, 4)), RuntimeError, "batch1 must be a 3D tensor"),
    (lambda: tg.bmm(R(2, 2, 3), R(3, 4)), RuntimeError, "batch2 must be a 3D tensor"),
    (lambda: tg.bmm(R(2, 2, 3), R(3, 3, 4)), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [3, 3]."),
    (lambda: tg.bmm(R(2, 2, 3), R(2, 3, 4, dtype=D)), RuntimeError, "expected scalar type Float but found Double"),
    (lambda: tg.dot(R(2, 3), R(2, 3)), RuntimeError, "1D tensors expected, but got 2D and 2D tensors"),
    (lambda: tg.dot(R(3), R(4)), RuntimeError, "inconsistent tensor size, expected tensor [3] and src [4] to have "
     "the same number of elements, but got 3 and 4 elements respectively"),
    (lambda: tg.dot(R(3), R(3, dtype=D)), RuntimeError,
     "dot : expected both vectors to have same dtype, but found Float and Double"),
    (lambda: tg.vdot(R(2, 3), R(2, 3)), RuntimeError, "1D tensors expected, but got 2D and 2D tensors"),
    (lambda: tg.mv(R(3), R(3)), RuntimeError, "vector + matrix @ vector expected, got 1, 1, 1"),
    (lambda: tg.mv(R(2, 3), R(4)), RuntimeError, "size mismatch, got input (2), mat (2x3), vec (4)"),
    (lambda: tg.mv(R(2, 3), R(3, dtype=D)), RuntimeError,
     "addmv input tensors must have the same dtype, but got Double, Float, and Double"),
    (lambda: tg.matmul(R(()), R(3)), RuntimeError, "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
    (lambda: tg.matmul(R(3), R(4, 5)), RuntimeError, "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x5)"),
    (lambda: tg.matmul(R(2, 2, 3), R(4, 5)), RuntimeError, "mat1 and mat2 shapes cannot be multiplied (4x3 and 4x5)"),
    (lambda: tg.matmul(R(2, 2, 3), R(4)), RuntimeError, "size mismatch, got input (4), mat (4x3), vec (4)"),
    (lambda: tg.matmul(R(6, 2, 2, 3), R(2, 4, 5)), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [12, 3] but got: [12, 4]."),
    (lambda: tg.matmul(R(6, 3, 2, 3), R(7, 1, 3, 5)), RuntimeError,
     "The size of tensor a (6) must match the size of tensor b (7) at non-singleton dimension 0"),
    (lambda: tg.matmul(R(3, 2, 3), R(3, 3, 5, dtype=D)), RuntimeError, "expected scalar type Float but found Double"),
    (lambda: R(3) @ 2, TypeError, "unsupported operand type(s) for @: 'Tensor' and 'int'"),
    (lambda: 2 @ R(3), TypeError, "unsupported operand type(s) for @: 'int' and 'Tensor'"),
    (lambda: tg.outer(R(2, 3), R(3)), RuntimeError, "outer: Expected 1-D argument self, but got 2-D"),
    (lambda: tg.outer(R(3), R(2, 2)), RuntimeError, "outer: Expected 1-D argument vec2, but got 2-D"),
    (lambda: tg.inner(R(2, 3), R(4)), RuntimeError,
     "inner() the last dimension must match on both input tensors but got shapes [2, 3] and [4]"),
    (lambda: tg.tensordot(R(2, 3), R(4, 5), dims=1), RuntimeError,
     "contracted dimensions need to match, but first has size 3 in dim -1 and second has size 4 in dim 0"),
    (lambda: tg.tensordot(R(2, 3), R(3, 5), dims=3), RuntimeError, "tensordot expects dims < ndim_a or ndim_b, but got dims=3"),
    (lambda: tg.tensordot(R(2, 3), R(3, 5), dims=-1), RuntimeError, "tensordot expects dims >= 0, but got dims=-1"),
    (lambda: tg.tensordot(R(2, 3), R(3, 5), dims=([1], [0, 1])), RuntimeError, "both dimension lists should have same length"),
    (lambda: tg.tensordot(R(2, 3), R(3, 5, dtype=D), dims=1), RuntimeError, "both inputs should have same dtype"),
    (lambda: tg.tensordot(R(3, 3), R(3, 3), dims=([0, 0], [0, 1])), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (lambda: tg.addmm(R(3, 3), R(2, 4), R(4, 3)), RuntimeError,
     "The expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension 0.  "
     "Target sizes: [2, 3].  Tensor sizes: [3, 3]"),
    (lambda: tg.addmm(R(2, 3), R(4), R(4, 3)), RuntimeError, "mat1 must be a matrix, got 1-D tensor"),
    (lambda: tg.addmm(R(2, 3), R(2, 4), R(5, 3)), RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x4 and 5x3)"),
    (lambda: tg.addmm(R(2, 3), R(2, 4), R(4, 3, dtype=D)), RuntimeError,
     "self and mat2 must have the same dtype, but got Float and Double"),
    (lambda: tg.einsum("ij"), ValueError, "einsum(): must specify the equation string and at least one operand, "
     "or at least one operand and its subscripts list"),
    (lambda: tg.einsum("ij,jk", R(2, 3)), RuntimeError, "einsum(): fewer operands were provided than specified in the equation"),
    (lambda: tg.einsum("ij", R(2, 3), R(3, 3)), RuntimeError, "einsum(): more operands were provided than specified in the equation"),
    (lambda: tg.einsum("ij", R(2, 3, 4)), RuntimeError, "einsum(): the number of subscripts in the equation (2) does not "
     "match the number of dimensions (3) for operand 0 and no ellipsis was given"),
    (lambda: tg.einsum("...ijk", R(2, 3)), RuntimeError, "einsum(): the number of subscripts in the equation (3) is more "
     "than the number of dimensions (2) for operand 0"),
    (lambda: tg.einsum("ij,jk", R(2, 3), R(4, 5)), RuntimeError,
     "einsum(): subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3"),
    (lambda: tg.einsum("ij->ii", R(2, 3)), RuntimeError, "einsum(): output subscript i appears more than once in the output"),
    (lambda: tg.einsum("ij->k", R(2, 3)), RuntimeError,
     "einsum(): output subscript k does not appear in the equation for any input operand"),
    (lambda: tg.einsum("i1->i", R(2, 3)), RuntimeError,
     "einsum(): invalid subscript given at index 1 in the equation string, subscripts must be in [a-zA-Z]"),
    (lambda: tg.einsum("ij->i->j", R(2, 3)), RuntimeError,
     "einsum(): invalid subscript given at index 5 in the equation string, subscripts must be in [a-zA-Z]"),
    (lambda: tg.einsum("...i...->i", R(2, 3)), RuntimeError,
     "einsum(): found '.' for operand 0 for which an ellipsis was already found"),
    (lambda: tg.einsum("ii->i", R(2, 3)), RuntimeError,
     "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"),
    (lambda: tg.einsum("...i,...i->...", R(2, 3), R(4, 3)), RuntimeError,
     "einsum(): dimension 0 covered by ellipsis in operand 1has size 4 which does not broadcast with previously "
     "seen ellipsis with size 2 for the respective dimension"),
    (lambda: tg.einsum("i,i", R(3), R(3, dtype=D)), RuntimeError, "expected scalar type Float but found Double"),
    (lambda: tg.einsum("i.->i", R(2, 1)), RuntimeError, "einsum(): found '.' for operand 0 that is not part of any ellipsis"),
    (lambda: tg.einsum("i->i..", R(2)), RuntimeError, "einsum(): found '.' for output that is not part of any ellipsis (...)"),
    (lambda: tg.einsum("i->.....", R(2)), RuntimeError,
     "einsum(): found '.' for output but an ellipsis (...) was already found"),
    (lambda: tg.einsum("i", []), ValueError, "einsum(): must specify the equation string and at least one operand, "
     "or at least one operand and its subscripts list"),
    (lambda: tg.matmul(R(2, 3, requires_grad=True), R(4, 5, 2)), RuntimeError,
     "mat1 and mat2 shapes cannot be multiplied (8x5 and 3x2)"),
    (lambda: tg.matmul(R(2, 3, requires_grad=True), R(4, 3, 2, dtype=D)), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: double != float"),
    (lambda: tg.matmul(R(3), R(2, 4, 5)), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."),
    (lambda: tg.matmul(R(3), R(3, 4, dtype=D)), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda: tg.matmul(R(2, 3), R(3, dtype=D)), RuntimeError,
     "addmv input tensors must have the same dtype, but got Double, Float, and Double"),
    (lambda: tg.mm(tg.ones(2, 2, dtype=tg.bool), tg.ones(2, 2, dtype=tg.bool)), NotImplementedError,
     "\"addmm_impl_cpu_\" not implemented for 'Bool'"),
    (lambda: tg.ones(2, 2, dtype=tg.bool) @ tg.ones(2, 2, dtype=tg.bool), NotImplementedError,
     "\"addmm_impl_cpu_\" not implemented for 'Bool'"),
    (lambda: tg.mv(R(2, 2, 3), R(3)), RuntimeError, "vector + matrix @ vector expected, got 1, 3, 1"),
    (lambda: tg.addmm(R(2, 3), R(2, 4, dtype=D), R(4, 3)), RuntimeError,
     "mat1 and mat2 must have the same dtype, but got Double and Float"),
    (lambda: tg.addmm(R(2, 1, 3), R(2, 4), R(4, 3)), RuntimeError,
     "expand(tracegrad.FloatTensor{[2, 1, 3]}, size=[2, 3]): the number of sizes provided (2) must be greater or "
     "equal to the number of dimensions in the tensor (3)"),
    (lambda: tg.baddbmm(R(2, 2, 3), R(2, 2, 4), R(2, 5, 3)), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5]."),
    (lambda: tg.baddbmm(R(3, 2, 3), R(2, 2, 4), R(2, 4, 3)), RuntimeError,
     "The expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension 0.  "
     "Target sizes: [2, 2, 3].  Tensor sizes: [3, 2, 3]"),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_error_messages(k):
    fn, exc, message = ERRORS[k]
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value) == message


# -- node names ----------------------------------------------------------------------------------

@pytest.mark.parametrize("sa,sb,name", [
    ((3,), (3,), "DotBackward0"), ((2, 3), (3,), "MvBackward0"), ((3,), (3, 4), "SqueezeBackward4"),
    ((2, 3), (3, 4), "MmBackward0"), ((5, 2, 3), (3, 4), "UnsafeViewBackward0"),
    ((5, 2, 3), (5, 3, 4), "UnsafeViewBackward0"), ((2, 3), (5, 3, 4), "CloneBackward0"),
    ((1, 3), (5, 3, 4), "TransposeBackward0"), ((1, 2, 3), (5, 3, 4), "CloneBackward0"),
])
def test_matmul_node_names(sa, sb, name):
    assert (leaf(*sa) @ leaf(*sb)).grad_fn.name() == name


def test_methods_and_no_grad():
    a, b, v = leaf(2, 3), leaf(3, 4), leaf(3)
    assert a.matmul(b).shape == (2, 4) and a.mm(b).shape == (2, 4) and a.mv(v).shape == (2,)
    assert v.dot(v).shape == () and v.outer(v).shape == (3, 3) and v.ger(v).shape == (3, 3)
    assert a.inner(a).shape == (2, 2) and leaf(2, 2, 3).bmm(leaf(2, 3, 1)).shape == (2, 2, 1)
    assert a.__rmatmul__(leaf(4, 2)).shape == (4, 3)
    with tg.no_grad():
        y = a @ b
    assert not y.requires_grad and y.grad_fn is None


# -- PyTorch as the oracle ------------------------------------------------------------------------

def _compare(fn, shapes, seed=0, names=True, **kw):
    """Forward values, node name and the gradients of a random weighted sum, against torch."""
    torch = pytest.importorskip("torch")
    g = np.random.default_rng(seed)
    arrays = [g.standard_normal(s) for s in shapes]
    ours = [tg.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, z = fn(tg, *ours), fn(torch, *theirs)
    assert tuple(y.shape) == tuple(z.shape), (shapes, y.shape, z.shape)
    np.testing.assert_allclose(y.detach().numpy(), z.detach().numpy(), rtol=1e-10, atol=1e-12)
    if names:
        assert y.grad_fn.name() == type(z.grad_fn).__name__, shapes
    w = g.standard_normal(tuple(z.shape))
    (y * tg.tensor(w)).sum().backward()
    (z * torch.tensor(w)).sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


def _matmul_shapes():
    for ra, rb in itertools.product(range(1, 5), repeat=2):
        for k in range(3):
            g = np.random.default_rng(10 * ra + rb + 100 * k)
            batch = (3, 2)
            xb = tuple(1 if g.random() < 0.4 else s for s in batch[2 - max(ra - 2, 0):])
            yb = tuple(1 if g.random() < 0.4 else s for s in batch[2 - max(rb - 2, 0):])
            sa = (4,) if ra == 1 else xb + (5, 4)
            sb = (4,) if rb == 1 else yb + (4, 6)
            yield sa, sb


@pytest.mark.torch
@pytest.mark.parametrize("sa,sb", list(_matmul_shapes()))
def test_oracle_matmul(sa, sb):
    _compare(lambda L, a, b: L.matmul(a, b), [sa, sb])
    _compare(lambda L, a, b: a @ b, [sa, sb], seed=1)


@pytest.mark.torch
@pytest.mark.parametrize("sa,sb", [((2, 3), (5, 3, 4)), ((1, 3), (5, 3, 4)), ((3,), (5, 3, 4)), ((2, 3), (5, 3, 1)),
                                   ((1, 2, 3), (5, 3, 4)), ((5, 2, 3), (3, 4)), ((2, 3), (0, 3, 4)),
                                   ((5, 2, 3), (1, 3, 4)), ((1, 2, 3), (1, 3, 4))])
@pytest.mark.parametrize("needs", [(True, True), (True, False), (False, True)])
def test_oracle_matmul_node_names_follow_requires_grad(sa, sb, needs):
    torch = pytest.importorskip("torch")
    ours = tg.randn(*sa, requires_grad=needs[0]) @ tg.randn(*sb, requires_grad=needs[1])
    theirs = torch.randn(*sa, requires_grad=needs[0]) @ torch.randn(*sb, requires_grad=needs[1])
    assert ours.grad_fn.name() == type(theirs.grad_fn).__name__


@pytest.mark.torch
def test_oracle_products():
    _compare(lambda L, a, b: L.mm(a, b), [(3, 4), (4, 2)])
    _compare(lambda L, a, b: L.mm(a, b), [(0, 4), (4, 2)])
    _compare(lambda L, a, b: L.bmm(a, b), [(2, 3, 4), (2, 4, 5)])
    _compare(lambda L, a, b: L.dot(a, b), [(5,), (5,)])
    _compare(lambda L, a, b: L.vdot(a, b), [(5,), (5,)])
    _compare(lambda L, a, b: L.mv(a, b), [(3, 5), (5,)])
    _compare(lambda L, a, b: L.outer(a, b), [(3,), (4,)])
    _compare(lambda L, a, b: L.ger(a, b), [(3,), (4,)])
    _compare(lambda L, a, b: L.inner(a, b), [(2, 3), (4, 5, 3)])
    _compare(lambda L, a, b: L.inner(a, b), [(3,), (3,)])
    _compare(lambda L, a, b: L.inner(a, b), [(), (2, 3)])
    _compare(lambda L, c, a, b: L.addmm(c, a, b), [(4,), (3, 2), (2, 4)])
    _compare(lambda L, c, a, b: L.addmm(c, a, b, beta=0.5, alpha=-2.0), [(3, 1), (3, 2), (2, 4)])
    _compare(lambda L, c, a, b: L.addmm(c, a, b, beta=0), [(3, 4), (3, 2), (2, 4)])
    _compare(lambda L, c, a, b: c.addmm(a, b, alpha=3), [(), (3, 2), (2, 4)])
    _compare(lambda L, c, a, b: L.baddbmm(c, a, b, beta=2.0, alpha=0.5), [(1, 4), (2, 3, 5), (2, 5, 4)])


@pytest.mark.torch
@pytest.mark.parametrize("dims,sa,sb", [
    (2, (2, 3, 4), (3, 4, 5)), (1, (2, 3), (3, 4)), (0, (2, 3), (3, 4)), (2, (2, 3), (2, 3)),
    (([1, 2], [1, 0]), (2, 3, 4), (4, 3, 5)), (([0], [1]), (3, 2), (4, 3)), (([1], [0]), (2, 1), (3, 4)),
    (([-1, 0], [0, -1]), (3, 2, 4), (4, 5, 3)),
])
def test_oracle_tensordot(dims, sa, sb):
    _compare(lambda L, a, b: L.tensordot(a, b, dims=dims), [sa, sb])


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ij,kj->ik", [(2, 3), (4, 3)]),
    ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("iij->j", [(3, 3, 2)]), ("ij->ji", [(2, 3)]), ("ij->j", [(2, 3)]),
    ("i,i->", [(3,), (3,)]), ("i,j->ij", [(3,), (4,)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]), ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)]),
    ("b...i,bi->b...", [(2, 3, 4, 5), (2, 5)]), ("...ii->...i", [(2, 3, 3)]), ("bii->b", [(4, 3, 3)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ij,ij->ij", [(1, 3), (2, 3)]), ("ii,i->i", [(3, 3), (3,)]), (",i->i", [(), (3,)]),
    ("Ab,bA", [(2, 3), (3, 2)]), ("ijk->", [(2, 3, 4)]), ("ij,k->", [(2, 3), (4,)]),
]


@pytest.mark.torch
@pytest.mark.parametrize("equation,shapes", EINSUMS, ids=[e for e, _ in EINSUMS])
def test_oracle_einsum(equation, shapes):
    _compare(lambda L, *ops: L.einsum(equation, *ops), shapes)


@pytest.mark.torch
def test_oracle_float32_matmul():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(3).standard_normal((4, 5, 6)).astype(np.float32)
    b = np.random.default_rng(4).standard_normal((6, 3)).astype(np.float32)
    y = tg.tensor(a) @ tg.tensor(b)
    z = torch.tensor(a) @ torch.tensor(b)
    assert y.dtype == tg.float32
    np.testing.assert_allclose(y.numpy(), z.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.torch
@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_oracle_error_messages(k):
    """Each error program, rerun with torch in place of tracegrad, raises the same."""
    torch = pytest.importorskip("torch")
    fn, exc, message = ERRORS[k]
    g = dict(fn.__globals__, tg=torch, R=torch.randn, D=torch.float64)
    twin = type(fn)(fn.__code__, g)
    with pytest.raises(exc) as info:
        twin()
    # tracegrad names its own types (tracegrad.FloatTensor) where PyTorch says torch.
    assert str(info.value) == message.replace("tracegrad.", "torch.")


@pytest.mark.parametrize("fused", [False, True])
def test_gradient_of_a_transposed_weight_arrives_contiguous(fused):
    """``x @ w.t()`` (``linear``): the weight's gradient is made in the transposed layout,
    so ``w.grad`` is contiguous (no copy at accumulation), with the right values."""
    rng = np.random.default_rng(0)
    x = tg.tensor(rng.standard_normal((4, 5)))
    w = tg.tensor(rng.standard_normal((3, 5)), requires_grad=True)
    b = tg.zeros(3, dtype=tg.float64)
    out = tg.addmm(b, x, w.t()) if fused else tg.mm(x, w.t())
    g = rng.standard_normal((4, 3))
    out.backward(tg.tensor(g))
    assert w.grad.is_contiguous()
    np.testing.assert_allclose(w.grad.numpy(), g.T @ x.numpy(), rtol=1e-12)
    # the rule itself: for a column-major mat2 (known from the placeholder's strides) the
    # gradient comes out column-major, for a row-major one row-major
    from tracegrad.rules.core import TABLE, meta
    vjp_mat2 = TABLE["addmm" if fused else "mm"].vjps[-1]
    extra = (np.zeros(3),) if fused else ()
    column_major = vjp_mat2(g, None, *extra, x.numpy(), meta((5, 3), (8, 40)))
    row_major = vjp_mat2(g, None, *extra, x.numpy(), meta((5, 3), (24, 8)))
    assert column_major.flags.f_contiguous and row_major.flags.c_contiguous
    np.testing.assert_allclose(column_major, row_major, rtol=1e-12)
