"""Bad arguments to the optimizers: PyTorch's exception types and messages, and nothing
half-changed after a refused ``add_param_group``/``load_state_dict``."""
import warnings

import pytest

import tracegrad as tg

# name: (call(lib, p, q) that must fail, exception type, message with LIB for the library)
CASES = {
    "params-tensor": (lambda lib, p, q: lib.optim.SGD(p), TypeError,
                      ("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                       "but got LIB.FloatTensor")),
    "empty": (lambda lib, p, q: lib.optim.SGD([]), ValueError, "optimizer got an empty parameter list"),
    "empty-generator": (lambda lib, p, q: lib.optim.Adam(iter([])), ValueError,
                        "optimizer got an empty parameter list"),
    "lr": (lambda lib, p, q: lib.optim.SGD([p], lr=-0.1), ValueError, "Invalid learning rate: -0.1"),
    "momentum": (lambda lib, p, q: lib.optim.SGD([p], momentum=-0.1), ValueError, "Invalid momentum value: -0.1"),
    "weight-decay": (lambda lib, p, q: lib.optim.SGD([p], weight_decay=-1), ValueError,
                     "Invalid weight_decay value: -1"),
    "nesterov-no-momentum": (lambda lib, p, q: lib.optim.SGD([p], nesterov=True), ValueError,
                             "Nesterov momentum requires a momentum and zero dampening"),
    "nesterov-dampening": (lambda lib, p, q: lib.optim.SGD([p], momentum=0.9, dampening=0.1, nesterov=True),
                           ValueError, "Nesterov momentum requires a momentum and zero dampening"),
    "two-groups": (lambda lib, p, q: lib.optim.SGD([{"params": [p]}, {"params": [q, p]}]), ValueError,
                   "some parameters appear in more than one parameter group"),
    "non-leaf": (lambda lib, p, q: lib.optim.SGD([p * 2]), ValueError, "can't optimize a non-leaf Tensor"),
    "not-a-tensor": (lambda lib, p, q: lib.optim.SGD([p, 3]), TypeError,
                     "optimizer can only optimize Tensors, but one of the params is int"),
    "set": (lambda lib, p, q: lib.optim.SGD([{"params": {p}}]), TypeError,
            ("optimizer parameters need to be organized in ordered collections, but the ordering of tensors "
             "in sets will change between runs. Please use a list instead.")),
    "names-missing": (lambda lib, p, q: lib.optim.SGD([("a", p), q]), ValueError,
                      "all optimizer params should be with/without names. Some param names are missing"),
    "names-mixed-groups": (lambda lib, p, q: lib.optim.SGD([{"params": [p]}, {"params": [("b", q)]}]),
                           ValueError, ("all optimizer param groups should be with/without names. cannot add "
                                        "param group with names to the optimizer")),
    "tensor-lr": (lambda lib, p, q: lib.optim.SGD([p], lr=lib.tensor([0.1, 0.2])), ValueError,
                  "Tensor lr must be 1-element"),
    "beta0": (lambda lib, p, q: lib.optim.Adam([p], betas=(1.0, 0.9)), ValueError,
              "Invalid beta parameter at index 0: 1.0"),
    "beta1": (lambda lib, p, q: lib.optim.AdamW([p], betas=(0.9, -0.1)), ValueError,
              "Invalid beta parameter at index 1: -0.1"),
    "betas-int": (lambda lib, p, q: lib.optim.Adam([p], betas=(0, 0.9)), ValueError,
                  "betas must be either both floats or both Tensors"),
    "adam-eps": (lambda lib, p, q: lib.optim.Adam([p], eps=-1), ValueError, "Invalid epsilon value: -1"),
    "adam-weight-decay": (lambda lib, p, q: lib.optim.Adam([p], weight_decay=-0.5), ValueError,
                          "Invalid weight_decay value: -0.5"),
    "rmsprop-alpha": (lambda lib, p, q: lib.optim.RMSprop([p], alpha=-1), ValueError, "Invalid alpha value: -1"),
    "rmsprop-momentum": (lambda lib, p, q: lib.optim.RMSprop([p], momentum=-1), ValueError,
                         "Invalid momentum value: -1"),
    "rmsprop-eps": (lambda lib, p, q: lib.optim.RMSprop([p], eps=-1), ValueError, "Invalid epsilon value: -1"),
    "adagrad-lr-decay": (lambda lib, p, q: lib.optim.Adagrad([p], lr_decay=-1), ValueError,
                         "Invalid lr_decay value: -1"),
    "adagrad-initial": (lambda lib, p, q: lib.optim.Adagrad([p], initial_accumulator_value=-1), ValueError,
                        "Invalid initial_accumulator_value value: -1"),
    "fused-foreach": (lambda lib, p, q: lib.optim.Adam([p], fused=True, foreach=True), RuntimeError,
                      "`fused` and `foreach` cannot be `True` together."),
    "adadelta-lr": (lambda lib, p, q: lib.optim.Adadelta([p], lr=-1), ValueError, "Invalid learning rate: -1"),
    "adadelta-rho": (lambda lib, p, q: lib.optim.Adadelta([p], rho=1.5), ValueError, "Invalid rho value: 1.5"),
    "adadelta-eps": (lambda lib, p, q: lib.optim.Adadelta([p], eps=-0.1), ValueError, "Invalid epsilon value: -0.1"),
    "adamax-beta": (lambda lib, p, q: lib.optim.Adamax([p], betas=(0.9, 1.0)), ValueError,
                    "Invalid beta parameter at index 1: 1.0"),
    "adamax-weight-decay": (lambda lib, p, q: lib.optim.Adamax([p], weight_decay=-1), ValueError,
                            "Invalid weight_decay value: -1"),
    "nadam-momentum-decay": (lambda lib, p, q: lib.optim.NAdam([p], momentum_decay=-1), ValueError,
                             "Invalid momentum_decay value: -1"),
    "nadam-lr": (lambda lib, p, q: lib.optim.NAdam([p], lr=-0.5), ValueError, "Invalid learning rate: -0.5"),
    "radam-beta": (lambda lib, p, q: lib.optim.RAdam([p], betas=(-0.1, 0.9)), ValueError,
                   "Invalid beta parameter at index 0: -0.1"),
    "radam-eps": (lambda lib, p, q: lib.optim.RAdam([p], eps=-1e-8), ValueError, "Invalid epsilon value: -1e-08"),
    "asgd-lr": (lambda lib, p, q: lib.optim.ASGD([p], lr=-1), ValueError, "Invalid learning rate: -1"),
    "asgd-weight-decay": (lambda lib, p, q: lib.optim.ASGD([p], weight_decay=-1), ValueError,
                          "Invalid weight_decay value: -1"),
    "rprop-etas": (lambda lib, p, q: lib.optim.Rprop([p], etas=(1.2, 0.5)), ValueError, "Invalid eta values: 1.2, 0.5"),
    "rprop-tensor-lr": (lambda lib, p, q: lib.optim.Rprop([p], lr=lib.ones(2)), ValueError,
                        "Tensor lr must be 1-element"),
    "sparse-adam-lr": (lambda lib, p, q: lib.optim.SparseAdam([p], lr=0), ValueError, "Invalid learning rate: 0"),
    "sparse-adam-eps": (lambda lib, p, q: lib.optim.SparseAdam([p], eps=0.0), ValueError,
                        "Invalid epsilon value: 0.0"),
    "sparse-adam-complex": (lambda lib, p, q: lib.optim.SparseAdam([p, lib.zeros(2, dtype=lib.complex64,
                                                                                  requires_grad=True)]),
                            ValueError, "Complex params at indices [[0, 1]]: SparseAdam does not support complex "
                            "parameters"),
    "sparse-adam-dense-grad": (lambda lib, p, q: _stepped(lib.optim.SparseAdam([p]), p), RuntimeError,
                               "SparseAdam does not support dense gradients, please consider Adam instead"),
    "lbfgs-groups": (lambda lib, p, q: lib.optim.LBFGS([{"params": [p]}, {"params": [q]}]), ValueError,
                     "LBFGS doesn't support per-parameter options (parameter groups)"),
    "capturable-on-cpu": (lambda lib, p, q: _stepped(lib.optim.Adam([p], capturable=True), p), AssertionError,
                          "If capturable=True, params and state_steps must be on supported devices: ['cuda', 'xpu', "
                          "'hpu', 'privateuseone', 'xla']."),
    "capturable-on-cpu-foreach": (lambda lib, p, q: _stepped(lib.optim.NAdam([p], capturable=True, foreach=True), p),
                                  AssertionError, "If capturable=True, params, mu_products, and state_steps must be "
                                  "on supported devices: ['cuda', 'xpu', 'hpu', 'privateuseone']."),
    "capturable-on-cpu-adadelta": (lambda lib, p, q: _stepped(lib.optim.Adadelta([p], capturable=True), p),
                                   AssertionError, "If capturable=True, params and state_steps must be on supported "
                                   "devices: ['cuda', 'xpu', 'hpu', 'privateuseone']."),
    "capturable-on-cpu-asgd": (lambda lib, p, q: _stepped(lib.optim.ASGD([p], capturable=True), p),
                               AssertionError, "If capturable=True, params, mus, etas, and state_steps must be on "
                               "supported devices: ['cuda', 'xpu', 'hpu', 'privateuseone', 'xla']."),
    "adafactor-lr": (lambda lib, p, q: lib.optim.Adafactor([p], lr=-1), ValueError,
                     "Learning rate should be >= 0 but is: -1"),
    "adafactor-beta2-decay": (lambda lib, p, q: lib.optim.Adafactor([p], beta2_decay=0.5), ValueError,
                              "beta2_decay should be <= 0 but is: 0.5"),
    "adafactor-eps1": (lambda lib, p, q: lib.optim.Adafactor([p], eps=(-1, 1e-3)), ValueError,
                       "epsilon1 should be >= 0 but is: -1"),
    "adafactor-d": (lambda lib, p, q: lib.optim.Adafactor([p], d=0.5), ValueError,
                    "Clipping threshold d should be >= 1 but is: 0.5"),
    "adafactor-complex": (lambda lib, p, q: _stepped(lib.optim.Adafactor([lib.zeros(2, dtype=lib.complex64,
                                                                                    requires_grad=True)]), None),
                          RuntimeError, "Adafactor does not support complex parameters"),
    "muon-1d": (lambda lib, p, q: lib.optim.Muon([p]), ValueError,
                "Muon only supports 2D parameters whereas we found a parameter with size: LIB.Size([2])"),
    "muon-lr": (lambda lib, p, q: lib.optim.Muon([p], lr=-1), ValueError, "Learning rate should be >= 0 but is: -1"),
    "add-group-list": (lambda lib, p, q: lib.optim.SGD([p]).add_param_group([q]), TypeError,
                       "param_group must be a dict, but got <class 'list'>"),
    "add-group-again": (lambda lib, p, q: lib.optim.SGD([p]).add_param_group({"params": p}), ValueError,
                        "some parameters appear in more than one parameter group"),
    "load-group-count": (lambda lib, p, q: lib.optim.SGD([p]).load_state_dict({"state": {}, "param_groups": []}),
                         ValueError, "loaded state dict has a different number of parameter groups"),
    "load-group-size": (lambda lib, p, q: lib.optim.SGD([p]).load_state_dict(
        {"state": {}, "param_groups": [{"params": [0, 1], "lr": 0.1}]}), ValueError,
        "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"),
}


def _stepped(opt, p=None):
    """One step of ``opt`` with a gradient on ``p`` (default: its first parameter)."""
    p = opt.param_groups[0]["params"][0] if p is None else p
    p.grad = p.detach() * 0 + 1
    opt.step()


def _leaves(lib):
    return lib.ones(2, requires_grad=True), lib.zeros(3, requires_grad=True)


@pytest.mark.parametrize("case", list(CASES))
def test_error(case):
    call, kind, message = CASES[case]
    p, q = _leaves(tg)
    with pytest.raises(kind) as info:
        call(tg, p, q)
    assert str(info.value) == message.replace("LIB", "tracegrad")


@pytest.mark.torch
@pytest.mark.parametrize("case", list(CASES))
def test_error_as_torch(case):
    torch = pytest.importorskip("torch")
    call, kind, message = CASES[case]
    p, q = _leaves(torch)
    with pytest.raises(kind) as info:
        call(torch, p, q)
    assert str(info.value) == message.replace("LIB", "torch")


def test_refused_group_leaves_optimizer_unchanged():
    p, q = _leaves(tg)
    opt = tg.optim.SGD([p], lr=0.1)
    with pytest.raises(ValueError):
        opt.add_param_group({"params": [q, p]})
    assert len(opt.param_groups) == 1 and opt.param_groups[0]["params"] == [p]
    opt.add_param_group({"params": [q], "lr": 0.5})
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]


def test_refused_load_leaves_state_unchanged():
    p, q = _leaves(tg)
    opt = tg.optim.SGD([p, q], lr=0.1, momentum=0.9)
    p.grad, q.grad = tg.ones(2), tg.ones(3)
    opt.step()
    before = opt.state_dict()
    bad = {"state": {}, "param_groups": [{"params": [0], "lr": 7.0}]}
    with pytest.raises(ValueError):
        opt.load_state_dict(bad)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.state_dict()["state"].keys() == before["state"].keys()


def test_duplicate_parameters_warn():
    p, _ = _leaves(tg)
    with pytest.warns(UserWarning, match="optimizer contains a parameter group with duplicate parameters"):
        tg.optim.SGD([p, p])


def test_required_option():
    from tracegrad.optim.optimizer import required

    class Needy(tg.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": required})

    p, _ = _leaves(tg)
    with pytest.raises(ValueError, match="parameter group didn't specify a value of required optimization "
                                         "parameter lr"):
        Needy([p])
    assert Needy([{"params": [p], "lr": 1.0}]).param_groups[0]["lr"] == 1.0


def test_capturable_with_fused_steps_on_cpu():
    p, _ = _leaves(tg)
    p.grad = tg.ones(2)
    tg.optim.Adam([p], capturable=True, fused=True).step()  # fused ignores capturable, as in PyTorch
    assert p.tolist() == pytest.approx([0.999, 0.999], rel=1e-6)


def test_differentiable_is_refused():
    p, _ = _leaves(tg)
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        tg.optim.Adam([p], differentiable=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tg.optim.SGD([p], fused=True, foreach=False)  # accepted: selects no other kernel here
