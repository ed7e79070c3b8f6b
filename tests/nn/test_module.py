"""nn.Module: registration, attribute protocol, iteration, modes, repr, conversion."""
import copy
import pickle
import sys

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from module_trees import classes

Affine, Scale, Block, Tree = classes(tg)


class Empty(nn.Module):
    pass


class Gain(nn.Module):
    """Defined at module level so that pickle can find it."""

    def __init__(self):
        super().__init__()
        self.g = nn.Parameter(tg.tensor([3.0]))


# -- registration ------------------------------------------------------------------------------

def test_assignment_registers_parameters_modules_and_buffers():
    m = Empty()
    p = nn.Parameter(tg.ones(2))
    m.p = p
    m.child = Scale()
    m.buf = nn.Buffer(tg.zeros(1))
    m.plain = tg.zeros(3)  # a plain tensor is just an attribute
    assert m._parameters == {"p": p} and m.p is p
    assert list(m._modules) == ["child"] and list(m._buffers) == ["buf"]
    assert "plain" not in m._buffers and "plain" not in m._parameters
    assert m.buf is m._buffers["buf"]


def test_register_buffer_persistence_and_reassignment():
    m = Empty()
    m.register_buffer("a", tg.zeros(1))
    m.register_buffer("b", tg.zeros(1), persistent=False)
    assert m._non_persistent_buffers_set == {"b"}
    m.b = tg.ones(2)  # a tensor assigned to an existing buffer stays a (non-persistent) buffer
    assert m._buffers["b"].tolist() == [1.0, 1.0] and m._non_persistent_buffers_set == {"b"}
    m.a = nn.Buffer(tg.ones(1), persistent=False)
    assert m._non_persistent_buffers_set == {"a", "b"}
    m.a = None
    assert m._buffers["a"] is None and m.a is None
    with pytest.raises(TypeError, match=r"cannot assign 'int' as buffer 'b' \(tracegrad.nn.Buffer, tracegrad.Tensor or None expected\)"):
        m.b = 3


@pytest.mark.parametrize("call, exc, msg", [
    (lambda m: m.register_parameter(1, None), TypeError, "parameter name should be a string. Got int"),
    (lambda m: m.register_parameter("a.b", None), KeyError, 'parameter name can.+t contain "."'),
    (lambda m: m.register_parameter("", None), KeyError, 'parameter name can.+t be empty string ""'),
    (lambda m: m.register_parameter("forward", None), KeyError, "attribute 'forward' already exists"),
    (lambda m: m.register_parameter("w", tg.ones(1)), TypeError,
     r"cannot assign 'tracegrad.FloatTensor' object to parameter 'w' \(tracegrad.nn.Parameter or None required\)"),
    (lambda m: m.register_buffer("b", 3), TypeError,
     r"cannot assign 'int' object to buffer 'b' \(tracegrad Tensor or None required\)"),
    (lambda m: m.register_buffer("x.y", None), KeyError, 'buffer name can.+t contain "."'),
    (lambda m: m.add_module("c", 3), TypeError, "int is not a Module subclass"),
    (lambda m: m.add_module("a.b", Empty()), KeyError, 'module name can.+t contain ".", got: a.b'),
    (lambda m: m.add_module("", Empty()), KeyError, 'module name can.+t be empty string ""'),
])
def test_registration_errors(call, exc, msg):
    m = Empty()
    with pytest.raises(exc, match=msg):
        call(m)
    assert not m._parameters and not m._buffers and not m._modules


def test_non_leaf_parameter_is_refused_without_change():
    m = Empty()
    m.w = 5
    q = nn.Parameter(tg.ones(2))
    q._grad_fn = (tg.ones(1, requires_grad=True) * 2).grad_fn  # a Parameter with a history
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'w'"):
        m.w = q
    assert m.w == 5 and not m._parameters


def test_attribute_of_another_kind_is_replaced():
    """PyTorch's rules: a Parameter or Module replaces an attribute of another kind; a
    value that is not a Parameter may not replace a parameter (nor a non-Module a module)."""
    m = Empty()
    m.x = 1
    m.x = nn.Parameter(tg.ones(1))  # plain attribute -> parameter
    assert "x" in m._parameters
    with pytest.raises(TypeError, match="as parameter 'x'"):
        m.x = Scale()
    del m.x
    m.x = nn.Buffer(tg.ones(1))
    assert "x" in m._buffers
    m.x = Scale()  # buffer -> module
    assert "x" not in m._buffers and "x" in m._modules
    with pytest.raises(TypeError, match="as child module 'x'"):
        m.x = nn.Buffer(tg.ones(1))
    m.x = nn.Parameter(tg.ones(1))  # module -> parameter
    assert "x" not in m._modules and "x" in m._parameters and m.x.shape == (1,)


def test_wrong_type_for_existing_parameter_or_module():
    m = Affine(2, 2)
    with pytest.raises(TypeError, match=r"cannot assign 'tracegrad.FloatTensor' as parameter 'weight' \(tracegrad.nn.Parameter or None expected\)"):
        m.weight = tg.zeros(2, 2)
    t = Tree()
    with pytest.raises(TypeError, match=r"cannot assign 'int' as child module 'stem' \(tracegrad.nn.Module or None expected\)"):
        t.stem = 3
    m.weight = None
    assert m.weight is None and "weight" in m._parameters
    assert [n for n, _ in m.named_parameters()] == ["bias"]


def test_assignment_before_init_is_an_attribute_error():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(tg.ones(1))

    with pytest.raises(AttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"):
        Bad()

    class Bad2(nn.Module):
        def __init__(self):
            self.c = Empty()

    with pytest.raises(AttributeError, match=r"cannot assign module before Module.__init__\(\) call"):
        Bad2()


def test_init_rejects_arguments():
    with pytest.raises(TypeError, match="Empty.__init__\\(\\) got an unexpected keyword argument 'x'"):
        Empty(x=1)
    with pytest.raises(TypeError, match="takes 1 positional argument but 2 were given"):
        Empty(1)


def test_getattr_and_delattr():
    m = Affine(2, 3)
    with pytest.raises(AttributeError, match="'Affine' object has no attribute 'nope'"):
        _ = m.nope
    del m.bias
    assert "bias" not in m._parameters and not hasattr(m, "bias")
    del m.scratch
    assert "scratch" not in m._buffers and not m._non_persistent_buffers_set
    m.z = 1
    del m.z
    assert not hasattr(m, "z")


def test_members_are_mirrored_consistently():
    """Members live in the stores and, for fast reads, in ``__dict__``; every path keeps
    the two in step, and pickles look like PyTorch's (no mirrored entries)."""
    m = Affine(2, 2)
    p = nn.Parameter(tg.zeros(1))
    m._parameters["extra"] = p
    assert m.extra is p
    m._parameters.pop("extra")
    assert not hasattr(m, "extra")
    m._buffers.update(x=tg.ones(1))
    assert m.x is m._buffers["x"]
    m._buffers.clear()
    assert not hasattr(m, "x") and not hasattr(m, "calls")
    m._modules = {"c": Scale()}
    assert isinstance(m.c, Scale)
    m._modules = {}
    assert not hasattr(m, "c")
    state = m.__getstate__()
    assert "weight" not in state and type(state["_parameters"]) is dict


def test_get_submodule_parameter_buffer():
    t = Tree()
    assert t.get_submodule("") is t
    assert t.get_submodule("blocks.1.fc") is t.blocks[1].fc
    assert t.get_parameter("blocks.0.act.scale") is t.blocks[0].act.scale
    assert t.get_parameter("gain") is t.gain
    assert t.get_buffer("stem.calls") is t.stem.calls
    with pytest.raises(AttributeError, match="Sequential has no attribute `7`"):
        t.get_submodule("blocks.7")
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        t.get_submodule("stem.weight.x")
    with pytest.raises(AttributeError, match="`calls` is not an nn.Parameter"):
        t.get_parameter("stem.calls")
    with pytest.raises(AttributeError, match="`weight` is not a buffer"):
        t.get_buffer("stem.weight")
    new = Scale()
    t.set_submodule("blocks.0.act", new)
    assert t.blocks[0].act is new
    with pytest.raises(AttributeError, match="Block has no attribute `zz`"):
        t.set_submodule("blocks.0.zz", Scale(), strict=True)


def test_missing_forward_message():
    with pytest.raises(NotImplementedError, match=r'Module \[Empty\] is missing the required "forward" function'):
        Empty()(tg.ones(1))


# -- iteration ---------------------------------------------------------------------------------

def test_named_parameters_order_duplicates_prefix_recurse():
    t = Tree()
    names = [n for n, _ in t.named_parameters()]
    assert names[:3] == ["gain", "stem.weight", "stem.bias"]
    assert "shared.weight" not in names  # the shared module's parameters come once
    dup = [n for n, _ in t.named_parameters(remove_duplicate=False)]
    assert dup[-2:] == ["shared.weight", "shared.bias"]
    assert [n for n, _ in t.named_parameters(prefix="model", recurse=False)] == ["model.gain"]
    assert len(list(t.parameters())) == len(names)
    assert [n for n, _ in t.heads[0].named_parameters()] == ["weight"]  # a None slot is skipped


def test_shared_parameter_counted_once():
    m = Empty()
    m.a = Scale()
    m.b = Scale()
    m.b.scale = m.a.scale
    assert [n for n, _ in m.named_parameters()] == ["a.scale"]
    assert len(list(m.parameters())) == 1


def test_named_modules_children_buffers():
    t = Tree()
    assert [n for n, _ in t.named_modules()][:4] == ["", "stem", "blocks", "blocks.0"]
    assert [n for n, _ in t.named_modules(prefix="net")][1] == "net.stem"
    names_dup = [n for n, _ in t.named_modules(remove_duplicate=False)]
    assert names_dup[-1] == "shared"
    assert [n for n, _ in t.named_children()] == ["stem", "blocks", "heads"]  # shared skipped
    assert next(iter(t.children())) is t.stem
    assert [n for n, _ in t.named_buffers()][:3] == ["steps", "stem.calls", "stem.scratch"]
    memo = {t.stem}
    assert "stem" not in [n for n, _ in t.named_modules(memo=memo)]
    assert len(list(t.modules())) == 12


# -- modes and gradients -----------------------------------------------------------------------

def test_train_eval_propagate():
    t = Tree()
    assert all(m.training for m in t.modules())
    assert t.eval() is t
    assert not any(m.training for m in t.modules())
    t.train()
    assert all(m.training for m in t.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        t.train(1)


def test_requires_grad_and_zero_grad():
    m = Affine(2, 2)
    m(tg.ones(1, 2)).sum().backward()
    assert m.weight.grad is not None
    g = m.weight.grad
    m.zero_grad(set_to_none=False)
    assert m.weight.grad is g and g.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    m.zero_grad()
    assert m.weight.grad is None and m.bias.grad is None
    assert m.requires_grad_(False) is m
    assert not m.weight.requires_grad and not m.bias.requires_grad


def test_apply_visits_children_first():
    t = Tree()
    seen = []
    assert t.apply(lambda m: seen.append(type(m).__name__)) is t
    assert seen[0] == "Affine" and seen[-1] == "Tree"


# -- conversion --------------------------------------------------------------------------------

def test_to_dtype_keeps_parameter_identity_and_converts_grads():
    m = Affine(2, 2)
    m.register_buffer("count", tg.tensor([3]))
    w = m.weight
    m(tg.ones(1, 2)).sum().backward()
    assert m.double() is m
    assert m.weight is w and w.dtype == tg.float64 and w.grad.dtype == tg.float64
    assert isinstance(m.weight, nn.Parameter) and w.requires_grad
    assert m.calls.dtype == tg.float64 and m.count.dtype == tg.int64  # integers keep their dtype
    m.float()
    assert w.dtype == tg.float32
    m.to(tg.float64)
    assert w.dtype == tg.float64
    m.to(dtype=tg.float32, device="cpu")
    assert w.dtype == tg.float32
    m.to(tg.zeros(1, dtype=tg.float64))
    assert w.dtype == tg.float64
    m.half()
    assert w.dtype == tg.float16
    assert m.cpu() is m


def test_to_integer_dtype_is_refused():
    m = Affine(2, 2)
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes, "
                                        "but got desired dtype=tracegrad.int64"):
        m.to(tg.int64)
    assert m.weight.dtype == tg.float32


def test_failed_conversion_changes_nothing():
    t = Tree()
    before = {k: (v.dtype, v.tolist()) for k, v in t.state_dict().items()}
    count = [0]

    def fn(x):
        count[0] += 1
        if count[0] == 5:
            raise RuntimeError("boom")
        return x.double()
    with pytest.raises(RuntimeError, match="boom"):
        t._apply(fn)
    assert {k: (v.dtype, v.tolist()) for k, v in t.state_dict().items()} == before


# -- printing, copying ---------------------------------------------------------------------------

def test_repr_nested_with_extra_repr():
    t = Tree()
    text = repr(t)
    assert text.startswith("Tree(\n  (stem): Affine(in_features=3, out_features=4, bias=True)\n")
    assert "    (0): Block(\n      two lines\n      of extra repr\n      (fc): Affine(" in text
    assert repr(Empty()) == "Empty()"
    assert repr(Scale()) == "Scale()"


def test_dir_lists_members_once():
    m = Affine(2, 2)
    d = dir(m)
    assert d.count("weight") == 1 and "calls" in d and "forward" in d and "_parameters" in d


def test_deepcopy_and_pickle():
    t = Tree()
    c = copy.deepcopy(t)
    assert c.shared is c.stem and c.stem is not t.stem
    assert c.stem.weight is not t.stem.weight and c.stem.weight.tolist() == t.stem.weight.tolist()
    assert c.stem.weight is c._modules["stem"]._parameters["weight"]
    with tg.no_grad():
        c.stem.weight.add_(1)
    assert c.stem.weight.tolist() != t.stem.weight.tolist()
    np.testing.assert_allclose(c(tg.ones(1, 3)).detach().numpy() * 0 + 1, 1)
    d = pickle.loads(pickle.dumps(nn.Sequential(Gain())))
    assert d[0].g.tolist() == [3.0] and d[0].g is d[0]._parameters["g"] and d[0]._hooked is False


def test_call_forwards_args_and_kwargs():
    class KW(nn.Module):
        def forward(self, x, *, scale=1.0):
            return x * scale

    assert KW()(tg.ones(1), scale=3.0).item() == 3.0


@pytest.mark.torch
def test_oracle_tree_structure_matches_pytorch():
    torch = pytest.importorskip("torch")
    ours, theirs = classes(tg)[3](), classes(torch)[3]()
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert list(ours.state_dict()._metadata) == list(theirs.state_dict()._metadata)
    for method in ("named_modules", "named_parameters", "named_buffers", "named_children"):
        assert [n for n, _ in getattr(ours, method)()] == [n for n, _ in getattr(theirs, method)()]
    assert ([n for n, _ in ours.named_parameters(remove_duplicate=False)]
            == [n for n, _ in theirs.named_parameters(remove_duplicate=False)])
    x = np.linspace(-1, 1, 6).reshape(2, 3).astype(np.float32)
    np.testing.assert_allclose(ours(tg.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert sorted(k for k in dir(ours) if not k.startswith("_")) == sorted(
        k for k in dir(theirs) if not k.startswith("_") and hasattr(ours, k))


@pytest.mark.torch
def test_oracle_module_to_and_errors():
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        m = classes(lib)[0](2, 2)
        w = m.weight
        m.double()
        assert m.weight is w and str(w.dtype).endswith("float64")
    with pytest.raises(TypeError) as theirs:
        classes(torch)[0](2, 2).to(torch.int64)
    with pytest.raises(TypeError) as ours:
        classes(tg)[0](2, 2).to(tg.int64)
    assert str(ours.value) == str(theirs.value).replace("torch.", "tracegrad.")

