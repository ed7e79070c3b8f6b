"""The seed-002 example scripts run and show what the seed says: the MLP's gradients equal
their hand derivations; fine-tuning a frozen ResNet-18 gives gradients only to the new fc."""
import importlib.util
import pathlib

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def load_example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mlp_gradients_match_hand_derivations(capsys):
    checks = load_example("mlp").main()
    assert checks and all(checks.values()), checks
    out = capsys.readouterr().out
    assert "l = tensor(" in out and "grad_fn=<SumBackward0>" in out
    assert out.count(": True") == len(checks)


def test_finetune_resnet18_trains_only_fc(capsys):
    result = load_example("finetune_resnet18").main()
    assert result["n_params"] == 11_689_512
    assert result["with_grad"] == ["fc.weight", "fc.bias"]
    assert result["changed"] == ["fc.weight", "fc.bias"]
    out = capsys.readouterr().out
    assert "parameters that received gradients: fc.weight, fc.bias\n" in out
    assert "fine-tuning: 60 frozen parameter tensors, classifier Linear(in_features=512, out_features=10, bias=True)" in out


def test_finetune_resnet18_loads_weights_from_file(tmp_path):
    """``--weights``: a state dict saved with tracegrad.save comes back through load_state_dict."""
    tracegrad = pytest.importorskip("tracegrad")
    example = load_example("finetune_resnet18")
    tracegrad.manual_seed(5)
    source = example.load_model()
    path = tmp_path / "resnet18.npz"
    tracegrad.save(source.state_dict(), str(path))
    loaded = example.load_model(str(path))
    for (name, a), (_, b) in zip(source.state_dict().items(), loaded.state_dict().items()):
        assert tracegrad.equal(a, b), name
