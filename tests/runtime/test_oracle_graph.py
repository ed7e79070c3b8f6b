"""Oracle tests: the backward graph tracegrad records, compared with real PyTorch's.

Each graph is built twice from the same float64 data -- once with tracegrad, once with
torch -- and compared as a canonical nested structure (node ``name()``, the number of
``next_functions``, which edges are None, their ``output_nr``, and which leaf each
``AccumulateGrad`` holds; a node reached twice is written as a back-reference, so the
sharing in a DAG is compared too), then by the gradients of every leaf.

View + in-place graphs are compared by the facts a user sees (the base's grad_fn after the
in-place op, ``_version`` counters, ``_base`` identity, gradients), ``_saved_*`` attributes
of a handful of nodes by name and value, and errors by type and message (PyTorch's text with
"torch" replaced by "tracegrad").

Every expectation comes from torch at test time; nothing is taken from tracegrad.
"""
import numpy as np
import pytest

from ._helpers import assert_same, npy, raises_like, tg

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def pt():
    """Real PyTorch, the oracle (the tests skip without it)."""
    return pytest.importorskip("torch")


# -- canonical structure ---------------------------------------------------------------------------

def graph_structure(node, leaves, seen=None):
    """A nested tuple describing the backward graph below ``node``.

    ``(name, ((child, output_nr), ...))`` for a function node; ``(name, "leaf", i)`` for an
    ``AccumulateGrad`` whose ``variable`` is ``leaves[i]`` (-1: none of them); None for a
    missing edge; ``("ref", k)`` for the k-th node already visited (so shared subgraphs show)."""
    if node is None:
        return None
    seen = {} if seen is None else seen
    if id(node) in seen:
        return ("ref", seen[id(node)])
    seen[id(node)] = len(seen)
    variable = getattr(node, "variable", None)
    if variable is not None:
        index = next((i for i, leaf in enumerate(leaves) if leaf is variable), -1)
        return (node.name(), "leaf", index)
    return (node.name(), tuple((graph_structure(child, leaves, seen), nr) for child, nr in node.next_functions))


def tensor_structure(t, leaves):
    """``(output_nr, graph below grad_fn)`` of one tensor."""
    return (t.output_nr, graph_structure(t.grad_fn, leaves))


def make_leaves(lib, datas, flags):
    """float64 tensors from the same NumPy data; ``flags[i]`` says whether leaf i requires grad."""
    return [lib.tensor(d, requires_grad=f) for d, f in zip(datas, flags)]


def case_data(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def upstream(shape):
    """The gradient fed to ``backward`` for an output of this shape (same in both libraries)."""
    return np.random.default_rng(1).standard_normal(tuple(shape))


# -- custom autograd.Functions, defined once per library -------------------------------------------

_FUNCTIONS = {}


def functions(lib):
    """``(Exp, ScaledAdd)`` subclassing ``lib.autograd.Function``: the seeds' Exp, and one with a
    non-tensor argument in the middle (its gradient slot is None)."""
    if lib.__name__ not in _FUNCTIONS:
        class Exp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, i):
                result = i.exp()
                ctx.save_for_backward(result)
                return result

            @staticmethod
            def backward(ctx, grad_output):
                (result,) = ctx.saved_tensors
                return grad_output * result

        class ScaledAdd(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, alpha, y):
                ctx.alpha = alpha
                return x * alpha + y

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output * ctx.alpha, None, grad_output

        _FUNCTIONS[lib.__name__] = (Exp, ScaledAdd)
    return _FUNCTIONS[lib.__name__]


def _times_own_sine(y):
    """``y * y.sin()``: one intermediate node feeding two others (a DAG, not a tree)."""
    return y * y.sin()


def _pair(parts):
    """``parts[2] * parts[0]``: two outputs of one multi-output node (output_nr 2 and 0)."""
    return parts[2] * parts[0]


# -- the graphs ------------------------------------------------------------------------------------
# name -> (build(lib, *leaves) -> output, leaf shapes, requires_grad flags (None: all True)).
# Excluded on purpose (the accepted deviation: tracegrad records matmul/einsum as one node
# where torch decomposes them): batched ``a @ b`` (torch: UnsafeView <- Bmm <- View <- Expand per
# operand) and ``einsum`` (torch: View <- Permute <- View <- Bmm <- ...). 2-D mm and mv are kept,
# since there both record MmBackward0 / MvBackward0.
GRAPHS = {
    "elementwise_chain": (lambda L, a, b: ((a * b).exp() + a.sin()).tanh(), [(3, 4), (3, 4)], None),
    "scalar_arith": (lambda L, a: (2 - a) / 3 + 1 - a * 0.5, [(4,)], None),
    "div_sub_neg": (lambda L, a, b: -(a / b - a), [(4,), (4,)], None),
    "reciprocal_square": (lambda L, a: 1 / a + a ** 2 + a.square(), [(4,)], None),
    "unary_chain": (lambda L, a: (a.abs() + 0.1).sqrt().log().sigmoid().relu().cos(), [(2, 3)], None),
    "broadcast_three": (lambda L, a, b, c: a + b * c, [(3, 1), (4,), (1, 4)], None),
    "broadcast_scalar_tensor": (lambda L, a, b: a * b - b, [(2, 3), ()], None),
    "sum_all": (lambda L, a: a.sum(), [(3, 4)], None),
    "sum_dim_keepdim": (lambda L, a: a.sum(1, keepdim=True) * a, [(3, 4)], None),
    "mean_dims": (lambda L, a: a.mean((0, 2)), [(2, 3, 4)], None),
    "mean_keepdim": (lambda L, a: a.mean(0, keepdim=True), [(3, 4)], None),
    "prod_dim": (lambda L, a: a.prod(1), [(3, 4)], None),
    "max_dim_values": (lambda L, a: a.max(dim=1)[0] + a.min(0).values.sum(), [(3, 4)], None),
    "max_all_amax": (lambda L, a: a.max() * a.amax(1), [(3, 4)], None),
    "var_std_norm_logsumexp": (lambda L, a: a.var() + a.std(1) + a.norm() + a.logsumexp(1), [(3, 4)], None),
    "softmax": (lambda L, a: a.softmax(-1), [(3, 4)], None),
    "log_softmax": (lambda L, a: a.log_softmax(0), [(3, 4)], None),
    "index_select_int": (lambda L, a: a[1] * a[:, 2:3], [(3, 4)], None),
    "index_ellipsis_none_slice": (lambda L, a: a[..., None][1:], [(3, 4)], None),
    # torch records one Slice/Select node per indexed dimension: Slice <- Slice, Select <- Select.
    "index_two_slices": (lambda L, a: a[1:, ::2], [(3, 4)], None),
    "index_two_ints": (lambda L, a: a[1, 2] * a[0], [(3, 4)], None),
    "index_advanced_list": (lambda L, a: a[[0, 2, 1]] + a[:, [1, 0, 3, 2]], [(3, 4)], None),
    # torch: in a multi-part index a slice keeping the whole dimension is no node, and an index
    # made only of those is AliasBackward0 (also when the stop lies past the end); a lone slice
    # (``a[:]``) is always SliceBackward0.
    "index_full_slices": (lambda L, a: a[:, :] * a[0:3, :10] + a[:], [(3, 4)], None),
    "index_tensor": (lambda L, a: a[L.tensor([2, 0])], [(3, 4)], None),
    "index_bool_mask": (lambda L, a: a[a > 0], [(3, 4)], None),
    "gather_index_select": (lambda L, a: a.gather(1, L.tensor([[0], [1], [3]])) * a.index_select(0, L.tensor([2, 0, 1])),
                            [(3, 4)], None),
    "cat": (lambda L, a, b: L.cat([a, b * 2], 0), [(3,), (2,)], None),
    "stack": (lambda L, a, b: L.stack([a, b], 1), [(3,), (3,)], None),
    "split_output_nr": (lambda L, a: _pair(a.split(2)), [(6,)], None),
    "chunk_output_nr": (lambda L, a: _pair(a.chunk(3, 1)), [(2, 6)], None),
    "unbind_output_nr": (lambda L, a: _pair(a.unbind(0)), [(3, 4)], None),
    "split_output_directly": (lambda L, a: a.split(2)[1], [(6,)], None),
    "expand_reshape_permute_squeeze": (lambda L, a: a.unsqueeze(0).expand(2, 3, 4).reshape(6, 4).permute(1, 0).squeeze(),
                                       [(3, 4)], None),
    "view_transpose_flatten": (lambda L, a: a.view(12).view(2, 6).transpose(0, 1).flatten(), [(3, 4)], None),
    "t_T_contiguous": (lambda L, a: a.t().contiguous() + a.T, [(3, 4)], None),
    "squeeze_unsqueeze": (lambda L, a: a.squeeze(1).unsqueeze(-1), [(3, 1, 2)], None),
    "flip_narrow_diagonal_repeat": (lambda L, a: a.flip(0).narrow(1, 1, 3).diagonal().repeat(2), [(3, 4)], None),
    "cumsum_masked_fill": (lambda L, a: a.cumsum(1).masked_fill(a > 0.5, 0.), [(3, 4)], None),
    "clamp_min": (lambda L, a: a.clamp(min=0), [(3, 4)], None),
    "clamp_both": (lambda L, a: a.clamp(-0.5, 0.5), [(3, 4)], None),
    # torch: ClampBackward0 with three edges (self, min, max); a tensor bound is an edge.
    "clamp_tensor_min": (lambda L, a, m: a.clamp(min=m), [(3, 4), (4,)], None),
    "where": (lambda L, a, b: L.where(a > 0, a, b), [(3, 4), (3, 4)], None),
    "maximum_minimum_broadcast": (lambda L, a, b: L.maximum(a, b) + L.minimum(a, b), [(3, 4), (4,)], None),
    "pow_scalar": (lambda L, a: a ** 3, [(4,)], None),
    "pow_tensor_exponent": (lambda L, a, b: (a.abs() + 0.5) ** b, [(4,), (4,)], None),
    "rpow_scalar_base": (lambda L, a: 2 ** a, [(4,)], None),
    "mm": (lambda L, a, b: a @ b, [(2, 3), (3, 4)], None),
    "mv": (lambda L, a, b: a @ b, [(2, 3), (3,)], None),
    "custom_function_exp": (lambda L, a: functions(L)[0].apply(a * 2), [(4,)], None),
    "custom_function_non_tensor_arg": (lambda L, a, b: functions(L)[1].apply(a, 2.0, b.exp()), [(4,), (4,)], None),
    "custom_function_constant_input": (lambda L, a, c: functions(L)[1].apply(c, 3.0, a), [(4,), (4,)], (True, False)),
    "detach_in_the_middle": (lambda L, a, b: a.detach() * b + (a * 2).detach().exp() + a, [(4,), (4,)], None),
    "leaf_used_twice": (lambda L, a: a * a + a, [(4,)], None),
    "shared_intermediate": (lambda L, a: _times_own_sine(a.exp()), [(4,)], None),
    "constant_operand": (lambda L, a, c: a * c + c.exp() + a, [(4,), (4,)], (True, False)),
    "constant_first_operand": (lambda L, c, a: c - a / (c + 2), [(4,), (4,)], (False, True)),
}


def run_graph(lib, name):
    """Build graph ``name`` in ``lib``; return (structure, leaf grads) after ``backward``."""
    build, shapes, flags = GRAPHS[name]
    leaves = make_leaves(lib, case_data(shapes), flags or [True] * len(shapes))
    out = build(lib, *leaves)
    structure = tensor_structure(out, leaves)
    out.backward(lib.tensor(upstream(out.shape)))
    return structure, [leaf.grad for leaf in leaves]


@pytest.mark.parametrize("name", list(GRAPHS))
def test_graph_structure_matches_torch(name, pt):
    """Node names, edge counts, None edges and output_nr below the output, as in torch."""
    mine, _ = run_graph(tg, name)
    theirs, _ = run_graph(pt, name)
    assert mine == theirs


@pytest.mark.parametrize("name", list(GRAPHS))
def test_leaf_grads_match_torch(name, pt):
    """The gradients of every leaf (None for those that do not require grad), as in torch."""
    _, mine = run_graph(tg, name)
    _, theirs = run_graph(pt, name)
    assert_same(mine, theirs, name)


def test_graph_list_is_not_trivial(pt):
    """The comparison sees the things it is meant to: a None edge, a back-reference, an
    output_nr other than 0 (checked on torch's own structures)."""
    text = repr([run_graph(pt, n)[0] for n in GRAPHS])
    assert "(None, 0)" in text and "'ref'" in text and ", 2)" in text and "AccumulateGrad" in text


# -- views + in-place ops --------------------------------------------------------------------------
# Each scenario returns named tensors; "base" is the tensor the in-place op rewrote (or whose
# view it wrote through). x is a leaf requiring grad; b another one.

def _select_imul(L, x, b):
    y = x * 2
    y[0] *= 3
    return {"base": y}


def _view_mul_(L, x, b):
    y = x * 2
    v = y.view(5, 5)
    v.mul_(2)
    return {"base": y, "view": v}


def _unsqueeze_add_(L, x, b):
    y = x[:5] * 2
    u = y.unsqueeze(0)
    u.add_(1)
    return {"base": y, "view": u}


def _chained_slices_zero_(L, x, b):
    y = x.view(5, 5) * 2
    z = y[1:][::2]
    z.zero_()
    return {"base": y, "view": z}


def _base_inplace_then_view(L, x, b):
    y = x * 2
    v = y[0:2]
    y.mul_(3)
    return {"base": y, "view": v, "use": v * 1}


def _setitem_tensor(L, x, b):
    y = x.view(5, 5) * 1
    y[1] = b
    return {"base": y}


def _setitem_mask(L, x, b):
    y = x * 1
    y[y > 0] = 0.
    return {"base": y}


def _setitem_advanced(L, x, b):
    y = x.view(5, 5) * 1
    y[[0, 2]] = b
    return {"base": y}


def _transpose_clamp_(L, x, b):
    y = x.view(5, 5) * 2
    v = y.transpose(0, 1)
    v.clamp_(min=0)
    return {"base": y, "view": v}


def _view_setitem(L, x, b):
    y = x.view(5, 5) * 2
    v = y.view(-1)
    v[3] = 7.
    return {"base": y, "view": v}


def _slice_add_grad_operand(L, x, b):
    y = x.view(5, 5) * 1
    y[2:3].add_(b)
    return {"base": y}


def _not_a_view(L, x, b):
    y = x.sin()
    y.mul_(2)
    y += b.sum()
    return {"base": y}


def _leaf_view_no_grad_inplace(L, x, b):
    y = x.view(5, 5)
    with L.no_grad():
        y[0].fill_(1.)
    return {"base": x, "view": y}


INPLACE = {f.__name__[1:]: f for f in (_select_imul, _view_mul_, _unsqueeze_add_, _chained_slices_zero_,
                                        _base_inplace_then_view, _setitem_tensor, _setitem_mask, _setitem_advanced,
                                        _transpose_clamp_, _view_setitem, _slice_add_grad_operand, _not_a_view,
                                        _leaf_view_no_grad_inplace)}
# ``y.t_()`` is left out: tracegrad has no Tensor.t_.


def run_inplace(lib, name):
    """Run scenario ``name``; return (facts, structures, grads of x and b)."""
    x, b = make_leaves(lib, case_data([(25,), (5,)], seed=2), [True, True])
    named = INPLACE[name](lib, x, b)
    known = dict(named, x=x, b=b)

    def which(t):
        return next((k for k, v in known.items() if v is t), None if t is None else "other")

    facts = {"base_grad_fn": type(named["base"].grad_fn).__name__}
    for key, t in named.items():
        facts[key] = {"_version": t._version, "_base": which(t._base), "is_leaf": t.is_leaf,
                      "requires_grad": t.requires_grad}
    structures = {k: tensor_structure(t, [x, b]) for k, t in named.items()}
    loss = sum(((t * t).sum() * (i + 1) for i, t in enumerate(named.values())), lib.tensor(0., dtype=lib.float64))
    loss.backward()
    return facts, structures, [x.grad, b.grad]


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_view_facts_match_torch(name, pt):
    """The base's grad_fn type after the in-place op (CopySlices when written through a view),
    the ``_version`` counters, ``_base`` identities, is_leaf/requires_grad, and the grads."""
    facts, _, grads = run_inplace(tg, name)
    facts_pt, _, grads_pt = run_inplace(pt, name)
    assert facts == facts_pt
    assert_same(grads, grads_pt, name)


@pytest.fixture
def view_replay(pt):
    """PyTorch with view replay on: a view whose base was written to gets its grad_fn by
    replaying its own view ops, which is what tracegrad always does (PyTorch's default on
    the CPU regenerates it as one AsStridedBackward0 instead)."""
    pt._C._set_view_replay_enabled(True)
    yield pt
    pt._C._set_view_replay_enabled(False)


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_graph_structure_matches_torch(name, view_replay):
    """The whole backward graph after the in-place op. torch's CopySlices has the base's old
    grad_fn as edge 0 followed by the in-place op's other edges; a view whose base was written
    to gets a regenerated grad_fn (by view replay)."""
    _, mine, _ = run_inplace(tg, name)
    _, theirs, _ = run_inplace(view_replay, name)
    assert mine == theirs


def test_copyslices_name_matches_torch(pt):
    """``name()`` of the node an in-place op through a view leaves on the base: torch reports
    it namespaced like AccumulateGrad (``torch::autograd::CopySlices``)."""
    names = []
    for lib in (tg, pt):
        y = lib.tensor([1., 2., 3.], requires_grad=True) * 2
        y[0] = 5.
        acc = y.grad_fn.next_functions[0][0].next_functions[0][0]
        names.append((type(y.grad_fn).__name__, y.grad_fn.name(), acc.name()))
    assert names[0] == names[1]


def test_view_grad_fn_regenerated_after_base_inplace_matches_torch(view_replay):
    """After ``y.mul_(3)``, a view ``v = y[0]`` taken before it gets a new grad_fn on access,
    hanging off the base's new history: its own view op replayed (tracegrad always; torch
    with view replay on -- by default torch says AsStridedBackward0 there instead)."""
    names = []
    for lib in (tg, view_replay):
        y = lib.tensor([[1., 2.], [3., 4.]], requires_grad=True) * 2
        v = y[0]
        before = v.grad_fn.name()
        y.mul_(3)
        names.append((before, v.grad_fn.name(), v.grad_fn.next_functions[0][0] is y.grad_fn))
    assert names[0] == names[1] == ("SelectBackward0", "SelectBackward0", True)


# -- _saved_* attributes ---------------------------------------------------------------------------
# name -> build(lib, a, b) -> y; a (2, 3) and b (2, 3) require grad.
SAVED = {
    "mul": lambda L, a, b: a * b,
    "div": lambda L, a, b: a / b,
    "exp": lambda L, a, b: a.exp(),
    "tanh": lambda L, a, b: a.tanh(),
    "pow_scalar": lambda L, a, b: a ** 3,
    "pow_tensor": lambda L, a, b: a ** b,
    "sum_dim_keepdim": lambda L, a, b: a.sum(1, keepdim=True),
    "mean_dim": lambda L, a, b: a.mean(0),
    "softmax": lambda L, a, b: a.softmax(1),
    "log_softmax": lambda L, a, b: a.log_softmax(0),
    "clamp": lambda L, a, b: a.clamp(-0.5, 0.5),
    "max_dim": lambda L, a, b: a.max(1)[0],
    "prod_dim": lambda L, a, b: a.prod(1),
    "where": lambda L, a, b: L.where(a > 0, a, b),
    "maximum": lambda L, a, b: L.maximum(a, b),
    # add(a, b, alpha=2): tracegrad records b * 2 and then AddBackward0 (whose alpha is 1)
    "add": lambda L, a, b: L.add(a, b),
    "sub": lambda L, a, b: a - b,
    "select": lambda L, a, b: a[1],
    "transpose": lambda L, a, b: a.transpose(0, 1),
    "permute": lambda L, a, b: a.permute(1, 0),
    "unsqueeze": lambda L, a, b: a.unsqueeze(1),
    "cat": lambda L, a, b: L.cat([a, b], 1),
    "split": lambda L, a, b: a.split(1, 1)[0],
    "gather": lambda L, a, b: a.gather(1, L.tensor([[0], [2]])),
}


def _saved_value(v, known):
    """A comparable form of a saved attribute: tensors by identity with a known tensor, shape
    and values; sequences element-wise; anything else as is."""
    if hasattr(v, "detach") and hasattr(v, "shape"):
        same = [k for k, t in known.items() if t is v]
        return ("tensor", same, tuple(v.shape), np.round(npy(v).astype(np.float64), 10).tolist())
    if isinstance(v, (tuple, list)):
        return tuple(_saved_value(x, known) for x in v)
    return v


def saved_attributes(lib, name, names):
    """``{attr: value}`` for each attribute in ``names`` of ``y.grad_fn`` ("missing" when absent)."""
    a, b = make_leaves(lib, [np.array([[0.5, -1.5, 2.0], [1.25, 0.75, -0.25]]),
                             np.array([[1.5, 2.0, -0.5], [0.25, 3.0, 1.0]])], [True, True])
    a_pos = a.abs() if name == "pow_tensor" else a
    y = SAVED[name](lib, a_pos, b)
    known = {"a": a, "a_pos": a_pos, "b": b, "y": y}
    out = {}
    for attr in names:
        try:
            out[attr] = _saved_value(getattr(y.grad_fn, attr), known)
        except AttributeError:
            out[attr] = "missing"
    return out


def torch_saved_names(pt, name, sym):
    """The ``_saved_*`` attributes torch's node exposes (``sym``: only the ``*_sym_*`` ones,
    else all others)."""
    a = pt.ones(2, 3, requires_grad=True)
    node = SAVED[name](pt, a.abs() if name == "pow_tensor" else a, pt.ones(2, 3, requires_grad=True)).grad_fn
    return sorted(n for n in dir(node) if n.startswith("_saved_") and ("_sym_" in n) == sym)


@pytest.mark.parametrize("name", list(SAVED))
def test_saved_attributes_match_torch(name, pt):
    """The ``_saved_*`` attributes torch exposes on the node (``_saved_self``, ``_saved_other``,
    ``_saved_result``, ``_saved_exponent``, ``_saved_dim``, ``_saved_keepdim``...): present in
    tracegrad with equal values, and the same tensor objects where torch hands back an input."""
    names = torch_saved_names(pt, name, sym=False)
    if name == "prod_dim":
        # tracegrad's prod rule computes its gradient from the input alone (the products of
        # the other elements, which handles zeros), so it does not keep its result
        names.remove("_saved_result")
    assert saved_attributes(tg, name, names) == saved_attributes(pt, name, names)


@pytest.mark.parametrize("name", ["sum_dim_keepdim", "mean_dim", "select", "max_dim"])
def test_saved_sym_size_attributes_match_torch(name, pt):
    """The ``_saved_self_sym_sizes`` / ``_saved_self_sym_numel`` attributes torch exposes."""
    names = torch_saved_names(pt, name, sym=True)
    assert names, "torch exposes sym-size attributes on this node"
    assert saved_attributes(tg, name, names) == saved_attributes(pt, name, names)


# -- errors ----------------------------------------------------------------------------------------

def _inplace_on_view_of_leaf(L):
    x = L.tensor([1., 2., 3.], requires_grad=True)
    x[1:].mul_(2)


def _inplace_on_view_of_leaf_via_view(L):
    x = L.tensor([1., 2., 3.], requires_grad=True)
    x.view(3).add_(1)


def _inplace_on_leaf(L):
    x = L.tensor([1., 2., 3.], requires_grad=True)
    x.add_(1)


def _setitem_on_leaf(L):
    x = L.tensor([1., 2., 3.], requires_grad=True)
    x[0] = 0.


def _modified_saved_input(L):
    x = L.tensor([1., 2., 3.], requires_grad=True)
    y = x * 2
    z = y * y
    y.add_(1)
    z.sum().backward()


def _modified_saved_output(L):
    x = L.tensor([1., 2., 3.], requires_grad=True)
    y = x.exp()
    y.add_(1)
    y.sum().backward()


def _modified_saved_leaf(L):
    x = L.tensor([1., 2., 3.], requires_grad=True)
    y = (x * x).sum()
    with L.no_grad():
        x.mul_(2)
    y.backward()


def _backward_twice(L):
    x = L.tensor([1., 2., 3.], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()


def _autograd_grad_twice(L):
    x = L.tensor([1., 2., 3.], requires_grad=True)
    y = x.exp().sum()
    L.autograd.grad(y, x)
    L.autograd.grad(y, x)


def _saved_tensor_after_free(L):
    x = L.tensor([1., 2., 3.], requires_grad=True)
    y = x * x
    y.sum().backward()
    return y.grad_fn._saved_self


def _hook_on_tensor_without_grad(L):
    L.tensor([1., 2., 3.]).register_hook(lambda g: g)


def _retain_grad_without_grad(L):
    L.tensor([1., 2., 3.]).retain_grad()


def _node_called_with_two_grads(L):
    x = L.tensor([1., 2., 3.], requires_grad=True)
    (x * 2).grad_fn(L.ones(3), L.ones(3))


def _node_called_with_no_grads(L):
    x = L.tensor([1., 2., 3.], requires_grad=True)
    (x * 2).grad_fn()


def _multi_output_node_called_with_one_grad(L):
    x = L.tensor([1., 2., 3., 4.], requires_grad=True)
    x.split(2)[0].grad_fn(L.ones(2))


def _inplace_on_multi_output_view(L):
    y = L.tensor([1., 2., 3., 4.], requires_grad=True) * 1
    y.split(2)[0].mul_(2)


def _inplace_on_view_made_in_no_grad(L):
    y = L.tensor([1., 2., 3.], requires_grad=True) * 1
    with L.no_grad():
        v = y[:2]
    v.mul_(2)


def _implicit_grad_of_non_scalar(L):
    (L.tensor([1., 2., 3.], requires_grad=True) * 2).backward()


def _backward_without_grad(L):
    (L.tensor([1., 2., 3.]) * 2).sum().backward()


def _requires_grad_on_integers(L):
    L.tensor([1, 2], requires_grad=True)


def _requires_grad_of_non_leaf(L):
    y = L.tensor([1., 2.], requires_grad=True) * 2
    y.requires_grad = False


def _gradient_of_wrong_shape(L):
    (L.tensor([1., 2., 3.], requires_grad=True) * 2).backward(L.ones(2))


def _unused_input(L):
    x = L.tensor([1., 2., 3.], requires_grad=True)
    w = L.tensor([1.], requires_grad=True)
    L.autograd.grad((x * 2).sum(), [x, w])


ERRORS = [_inplace_on_view_of_leaf, _inplace_on_view_of_leaf_via_view, _inplace_on_leaf, _setitem_on_leaf,
          _modified_saved_input, _modified_saved_output, _modified_saved_leaf, _backward_twice,
          _autograd_grad_twice, _saved_tensor_after_free, _hook_on_tensor_without_grad,
          _retain_grad_without_grad, _node_called_with_two_grads, _node_called_with_no_grads,
          _multi_output_node_called_with_one_grad, _inplace_on_multi_output_view,
          _inplace_on_view_made_in_no_grad, _implicit_grad_of_non_scalar, _backward_without_grad,
          _requires_grad_on_integers, _requires_grad_of_non_leaf, _gradient_of_wrong_shape, _unused_input]


@pytest.mark.parametrize("case", ERRORS, ids=[f.__name__[1:] for f in ERRORS])
def test_error_type_and_message_match_torch(case, pt):
    """The same exception type, and the same message once "torch" reads "tracegrad"."""
    mine, theirs = raises_like(lambda: case(tg), lambda: case(pt))
    assert theirs is not None, "torch raises here"
    assert mine is not None, f"tracegrad raised nothing; torch: {type(theirs).__name__}: {theirs}"
    assert (type(mine).__name__, str(mine)) == (type(theirs).__name__, str(theirs).replace("torch", tg.__name__))


@pytest.mark.parametrize("method", ["register_hook", "register_prehook"])
def test_node_hook_that_is_not_callable_raises_type_error(method, pt):
    """``node.register_hook(5)``: torch accepts the registration and raises TypeError ("'int'
    object is not callable") when backward reaches the node; tracegrad may refuse earlier, at
    registration. Either way: a TypeError that says the hook is not callable, before any
    gradient is accumulated."""
    for lib in (tg, pt):
        x = lib.tensor([1., 2., 3.], requires_grad=True)
        y = x * 2
        with pytest.raises(TypeError, match="callable"):
            getattr(y.grad_fn, method)(5)
            y.sum().backward()
        assert x.grad is None


def test_calling_a_node_by_hand_matches_torch(pt):
    """``node(grad)`` returns the gradients of its inputs (None for a constant operand); with
    grad mode on and saved tensors that require grad, torch records that computation too."""
    results = []
    for lib in (tg, pt):
        x = lib.tensor([1., 2., 3.], requires_grad=True)
        w = lib.tensor([4., 5., 6.], requires_grad=True)
        c = lib.tensor([7., 8., 9.])
        g = lib.tensor([1., 10., 100.])
        both = (x * w).grad_fn(g)
        one = (x * c).grad_fn(g)
        results.append((both, one, [t.requires_grad for t in both], one[0].requires_grad))
    assert_same(results[0][:2], results[1][:2])
    assert results[0][2:] == results[1][2:]
