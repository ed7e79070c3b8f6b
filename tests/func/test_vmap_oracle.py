"""vmap against torch.func.vmap: in_dims/out_dims forms, nested vmap, per-sample views and
in-place ops, errors, randomness modes, and compositions with the reverse-mode transforms."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad import func as F

from .test_grad_oracle import error_of, same

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

RNG = np.random.default_rng(1)
A = RNG.standard_normal((3, 4))
V = RNG.standard_normal(4)
C = RNG.standard_normal((3, 4, 5))


def both(make, *arrays):
    ours = make(tg, F)(*[tg.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays])
    theirs = make(torch, torch.func)(*[torch.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays])
    same(ours, theirs)
    return ours


def same_error(make, *arrays):
    ours = error_of(lambda: make(tg, F)(*[tg.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays]))
    theirs = error_of(lambda: make(torch, torch.func)(
        *[torch.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays]))
    assert ours[0] is theirs[0]
    assert ours[1].replace("tracegrad", "torch") == theirs[1]


@pytest.mark.parametrize("in_dims,out_dims,arrays", [
    (0, 0, (A,)), (1, 0, (A,)), (-1, 1, (A,)), (2, -1, (C,)), ((0, None), 0, (A, V)), ((1, 0), 1, (C, np.moveaxis(C, 1, 0).copy())),
])
def test_in_dims_and_out_dims(in_dims, out_dims, arrays):
    both(lambda lib, fn: fn.vmap(lambda *xs: sum(x * 2 for x in xs) if len(xs) > 1 else lib.tanh(xs[0]),
                                 in_dims=in_dims, out_dims=out_dims), *arrays)


def test_nested_pytree_in_dims_and_outputs():
    def make(lib, fn):
        def f(d, pair):
            return {"s": d["a"] + pair[0], "t": (pair[1] * 2, d["b"].sum())}
        return fn.vmap(f, in_dims=({"a": 0, "b": 1}, (None, 0)), out_dims={"s": 1, "t": (0, 0)})
    ours = F.vmap(lambda d, p: {"s": d["a"] + p[0], "t": (p[1] * 2, d["b"].sum())},
                  in_dims=({"a": 0, "b": 1}, (None, 0)), out_dims={"s": 1, "t": (0, 0)})(
        {"a": tg.tensor(A), "b": tg.tensor(A.T.copy())}, (tg.tensor(V), tg.tensor(A)))
    theirs = torch.func.vmap(lambda d, p: {"s": d["a"] + p[0], "t": (p[1] * 2, d["b"].sum())},
                             in_dims=({"a": 0, "b": 1}, (None, 0)), out_dims={"s": 1, "t": (0, 0)})(
        {"a": torch.tensor(A), "b": torch.tensor(A.T.copy())}, (torch.tensor(V), torch.tensor(A)))
    same(ours, theirs)


def test_unbatched_output_is_expanded_and_none_out_dim():
    both(lambda lib, fn: fn.vmap(lambda x, y: (y * 2, x), in_dims=(0, None)), A, V)
    both(lambda lib, fn: fn.vmap(lambda x, y: (y * 2, x), in_dims=(0, None), out_dims=(None, 0)), A, V)


def test_nested_vmap():
    both(lambda lib, fn: fn.vmap(fn.vmap(lambda x, v: (x * v).sum() + x.max()), in_dims=(1, None)), C, V[:3].copy())
    both(lambda lib, fn: fn.vmap(fn.vmap(lambda a, b: a @ b, in_dims=(0, None)), in_dims=(None, 1)), A, C[0].copy())


def test_per_sample_shapes_and_views():
    def make(lib, fn):
        def f(x):
            assert x.shape == (4, 5) and x.dim() == 2 and x.size(1) == 5 and x.ndim == 2 and len(x) == 4
            return x.t().reshape(-1)[::3], x[1:, 2], x.view(2, 10).sum(0), x.unsqueeze(0).expand(2, 4, 5)
        return fn.vmap(f)
    both(make, C)


def test_matmul_forms_and_linear_layers():
    both(lambda lib, fn: fn.vmap(lambda x, m: (m @ x, x @ m.T, x @ x), in_dims=(0, None)), A, A)
    both(lambda lib, fn: fn.vmap(lambda x, w, b: lib.nn.functional.linear(x, w, b), in_dims=(0, 0, None)),
         A, C[:, :2, :4].copy(), RNG.standard_normal(2))


def test_in_place_on_batched_tensors():
    def make(lib, fn):
        def f(x, v):
            y = x.clone()
            y.mul_(2)
            y[0] = v[1]
            y += v
            return y
        return fn.vmap(f, in_dims=(0, None))
    both(make, A, V)


def test_in_place_into_an_unbatched_tensor_is_refused():
    same_error(lambda lib, fn: fn.vmap(lambda x: lib.zeros(4, dtype=x.dtype).copy_(x)), A)
    same_error(lambda lib, fn: fn.vmap(lambda x: lib.zeros(4, dtype=x.dtype).mul_(x)), A)


@pytest.mark.parametrize("body", [
    lambda lib: lambda t: t.sum().item(),
    lambda lib: lambda t: t * 2 if t.sum() > 0 else t,
    lambda lib: lambda t: float(t.sum()),
])
def test_data_dependent_python_is_refused(body):
    same_error(lambda lib, fn: fn.vmap(body(lib)), A)


@pytest.mark.parametrize("make", [
    lambda lib, fn: fn.vmap(lambda t: t, in_dims=2),
    lambda lib, fn: fn.vmap(lambda t: t, in_dims=-3),
    lambda lib, fn: fn.vmap(lambda t: t, in_dims=(0, 0)),
    lambda lib, fn: fn.vmap(lambda t: t, in_dims="a"),
    lambda lib, fn: fn.vmap(lambda t: t, in_dims=[0]),
    lambda lib, fn: fn.vmap(lambda t: 3.0),
    lambda lib, fn: fn.vmap(lambda t: (t, t), out_dims=(0, 0, 0)),
    lambda lib, fn: fn.vmap(lambda t: t, out_dims=3),
    lambda lib, fn: fn.vmap(lambda t: t, randomness="bad"),
    lambda lib, fn: fn.vmap(lambda t: t, in_dims=(None,)),
    lambda lib, fn: fn.vmap(lambda t: t, out_dims=None),
    lambda lib, fn: fn.vmap(lambda t: t, out_dims="x"),
    lambda lib, fn: fn.vmap(lambda t: t, chunk_size=0),
    lambda lib, fn: fn.vmap(lambda t: t + lib.randn(4)),
    lambda lib, fn: fn.vmap(lambda t: lib.randn_like(t)),
    lambda lib, fn: fn.vmap(lambda t: lib.nn.functional.dropout(t, 0.5)),
])
def test_errors_match_torch(make):
    same_error(make, A)


def test_mismatched_batch_sizes_and_no_inputs():
    same_error(lambda lib, fn: fn.vmap(lambda a, b: a + b), A, C[0])
    same_error(lambda lib, fn: fn.vmap(lambda a, b: a + b, in_dims=(0, 0)), A, 3.0)
    same_error(lambda lib, fn: fn.vmap(lambda: 1))


def test_randomness_same_and_different():
    same_rows = F.vmap(lambda t: t * 0 + tg.rand(4, dtype=t.dtype), randomness="same")(tg.tensor(A))
    assert np.allclose(same_rows.numpy(), same_rows.numpy()[0])
    diff_rows = F.vmap(lambda t: t * 0 + tg.randn_like(t), randomness="different")(tg.tensor(A))
    assert not np.allclose(diff_rows.numpy()[0], diff_rows.numpy()[1])
    dropped = F.vmap(lambda t: tg.nn.functional.dropout(t, 0.5), randomness="same")(tg.ones(8, 16))
    assert np.allclose(dropped.numpy(), dropped.numpy()[0])
    dropped = F.vmap(lambda t: tg.nn.functional.dropout(t, 0.5), randomness="different")(tg.ones(8, 16))
    assert not np.allclose(dropped.numpy(), dropped.numpy()[0])
    assert set(np.unique(dropped.numpy())) == {0.0, 2.0}
    with pytest.raises(NotImplementedError, match="randomness='different'"):
        F.vmap(lambda t: tg.nn.init.normal_(t.clone()), randomness="different")(tg.ones(3, 4))


def test_chunk_size_gives_the_same_result():
    both(lambda lib, fn: fn.vmap(lambda x, v: (x * v).cumsum(0), in_dims=(1, None), chunk_size=3), C, RNG.standard_normal(5))


# -- compositions -------------------------------------------------------------------------------

def loss(lib):
    return lambda w, x: (lib.tanh(x @ w) ** 2).sum()


def test_vmap_of_grad_with_an_unbatched_weight():
    both(lambda lib, fn: fn.vmap(fn.grad(loss(lib)), in_dims=(None, 0)), C[0].copy(), A)


def test_grad_of_vmap():
    both(lambda lib, fn: fn.grad(lambda w, x: fn.vmap(loss(lib), in_dims=(None, 0))(w, x).sum()),
         C[0].copy(), A)


def test_vmap_of_jacrev_and_jacrev_of_vmap():
    both(lambda lib, fn: fn.vmap(fn.jacrev(lambda x: lib.sin(x) * x.sum())), A)
    both(lambda lib, fn: fn.jacrev(fn.vmap(lambda x: lib.sin(x) * x.sum())), A)


def test_vmap_of_hessian_and_of_grad_of_grad():
    both(lambda lib, fn: fn.vmap(fn.hessian(lambda x: (x ** 3).sum() * x[0])), A)
    both(lambda lib, fn: fn.vmap(fn.grad(lambda x: fn.grad(lambda y: (y ** 3).sum())(x).sum())), A)


def test_nested_vmap_of_grad():
    both(lambda lib, fn: fn.vmap(fn.vmap(fn.grad(lambda x, w: (x * w).sum() ** 2), in_dims=(0, None)),
                                 in_dims=(0, None)), C, RNG.standard_normal(5))


def test_vmap_of_vjp():
    def make(lib, fn):
        def rows(x):
            _, pull = fn.vjp(lambda y: lib.sin(y) * 2, x)
            return fn.vmap(pull)(lib.eye(4, dtype=x.dtype))[0]
        return rows
    both(make, V)


IDX = np.array([[0, 2], [3, 3], [1, 0]])


@pytest.mark.parametrize("in_dims", [(0, 0), (None, 0)])
def test_indexing_with_batched_index_tensors(in_dims):
    data = A if in_dims[0] == 0 else V
    both(lambda lib, fn: fn.vmap(lambda a, k: (a[k], a[k[0]]), in_dims=in_dims), data, IDX)

    def write(lib, fn):
        def f(a, k):
            b = a.clone()
            b[k] = 0
            return b
        return fn.vmap(f, in_dims=in_dims)
    if in_dims[0] == 0:
        both(write, data, IDX)
    else:  # (writing per-sample positions into one shared tensor)
        same_error(write, data, IDX)


def test_one_hot_and_batch_norm_under_vmap():
    both(lambda lib, fn: fn.vmap(lambda t: lib.nn.functional.one_hot(t, 4)), IDX)
    same_error(lambda lib, fn: fn.vmap(lambda t: lib.nn.functional.one_hot(t)), IDX)
    same_error(lambda lib, fn: fn.vmap(lib.nn.BatchNorm1d(4)), C.transpose(0, 2, 1).astype(np.float32))


def test_per_sample_gradient_through_batched_indices():
    both(lambda lib, fn: fn.vmap(fn.grad(lambda a, k: (a[k] ** 2).sum())), A, IDX)
