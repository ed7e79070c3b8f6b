"""tracegrad.compile's surface is torch.compile's: OptimizedModule for modules, a wrapped
function for functions, the decorator forms, and tracegrad.compiler's functions."""
import pickle

import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.compiler import InvalidBackend


def test_a_module_becomes_an_optimized_module_around_it():
    model = nn.Linear(2, 1)
    compiled = tg.compile(model)
    assert type(compiled).__name__ == "OptimizedModule" and isinstance(compiled, nn.Module)
    assert compiled._orig_mod is model
    assert compiled.weight is model.weight and compiled.in_features == 2
    assert list(compiled.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
    assert [n for n, _ in compiled.named_parameters()] == ["_orig_mod.weight", "_orig_mod.bias"]
    compiled.eval()
    assert model.training is False and compiled.training is False
    compiled.train()
    assert model.training is True
    compiled.extra = 3  # attribute writes reach the original
    assert model.extra == 3
    assert repr(compiled) == "OptimizedModule(\n  (_orig_mod): Linear(in_features=2, out_features=1, bias=True)\n)"


def test_a_function_is_wrapped():
    def f(x):
        """doc"""
        return x * 2
    g = tg.compile(f)
    assert g.__name__ == "f" and g.__doc__ == "doc" and g.__wrapped__ is f
    assert g(tg.ones(1)).item() == 2.0


def test_decorator_forms():
    @tg.compile
    def f(x):
        return x + 1

    @tg.compile(fullgraph=True, mode="reduce-overhead")
    def g(x):
        return x + 2
    assert f(tg.ones(1)).item() == 2.0 and g(tg.ones(1)).item() == 3.0

    class M(nn.Module):
        @tg.compile
        def forward(self, x):
            return x * 3
    assert M()(tg.ones(1)).item() == 3.0


def test_argument_checks():
    with pytest.raises(InvalidBackend, match="Invalid backend: 'nope'"):
        tg.compile(nn.Linear(1, 1), backend="nope")
    with pytest.raises(AssertionError, match="A callable function is expected, but <class 'int'> is provided."):
        tg.compile(3)
    with pytest.raises(NotImplementedError, match="custom backend"):
        tg.compile(nn.Linear(1, 1), backend=lambda gm, inputs: gm)
    for name in ("inductor", "eager", "aot_eager", None):
        assert tg.compile(lambda x: x + 1, backend=name)(tg.ones(1)).item() == 2.0


def test_disable_keeps_a_function_eager():
    f = tg.compile(lambda x: x + 1)
    g = tg.compiler.disable(f)
    assert g(tg.ones(1)).item() == 2.0
    assert tg.compiler.disable(recursive=False)(lambda x: x)(3) == 3


def test_an_optimized_module_pickles():
    compiled = tg.compile(nn.Linear(2, 2))
    again = pickle.loads(pickle.dumps(compiled))
    assert type(again).__name__ == "OptimizedModule"
    x = tg.ones(2)
    assert again(x).tolist() == again._orig_mod(x).tolist()


@pytest.mark.torch
def test_the_surface_matches_torch():
    import torch
    for lib in (tg, torch):
        model = lib.nn.Linear(2, 1)
        compiled = lib.compile(model)
        assert type(compiled).__name__ == "OptimizedModule"
        assert list(compiled.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
        assert lib.compile(model, disable=True) is model
        assert lib.compiler.is_compiling() is False
        assert "inductor" in lib.compiler.list_backends()
    assert repr(tg.compile(tg.nn.Linear(2, 1))) == repr(torch.compile(torch.nn.Linear(2, 1)))


def test_the_staged_source_and_the_graph_breaks_can_be_read():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    compiled = tg.compile(model)
    compiled(tg.randn(2, 3, requires_grad=True))
    source = compiled._compiled.source
    assert "def Sequential(" in source and "def Sequential_backward(" in source
    assert "addmm(" in source and "relu(" in source

    def f(x):
        return x if x.sum() > 0 else -x
    g = tg.compile(f)
    g(tg.ones(1))
    assert g._compiled.graph_breaks == [
        ("Data-dependent branching: the result depends on tensor values the staged code does not see "
         f"(at {__file__}:{f.__code__.co_firstlineno + 1})")]


def test_a_deep_copy_stages_its_own_module_and_state_dicts_load():
    import copy
    model = nn.Linear(2, 2)
    compiled = tg.compile(model)
    compiled(tg.ones(2))
    twin = copy.deepcopy(compiled)
    assert twin._compiled.cache == {} and twin._orig_mod is not model
    with tg.no_grad():
        twin._orig_mod.weight.zero_()
    assert twin(tg.ones(2)).tolist() == twin._orig_mod.bias.tolist()
    assert compiled(tg.ones(2)).tolist() == model(tg.ones(2)).tolist()
    other = tg.compile(nn.Linear(2, 2))
    assert str(other.load_state_dict(compiled.state_dict())) == "<All keys matched successfully>"
