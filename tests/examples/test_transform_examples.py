"""examples/per_sample_grads.py, lbfgs_fit.py and forward_ad_jacobian.py give the numbers
their docstrings promise: vmap equals the loop, LBFGS recovers the parameters, forward mode
equals reverse mode."""
from ._load import load_example


def test_per_sample_grads_vmap_equals_the_loop():
    lines = []
    worst = load_example("per_sample_grads").main(batch=8, log=lines.append)
    assert worst < 1e-5, lines
    assert lines[0] == "0.weight   per-sample gradients (8, 8, 1, 3, 3)"


def test_lbfgs_recovers_the_oscillation():
    example = load_example("lbfgs_fit")
    loss, fitted = example.main(steps=5, log=lambda _: None)
    assert loss < 2e-4  # the noise floor: 0.01 ** 2
    for name, value in example.TRUE.items():
        assert abs(fitted[name] - value) < 0.01, (name, fitted)


def test_forward_ad_jacobian_equals_reverse_mode():
    lines = []
    assert load_example("forward_ad_jacobian").main(n=4, log=lines.append) < 1e-12
    assert lines[0] == "f: R^4 -> R^12; 4 forward passes give the (12, 4) Jacobian"
