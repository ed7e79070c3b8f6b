"""Helpers for oracle tests that run a PyTorch module and its tracegrad twin side by side.

``copy_weights(torch_module, our_module)`` copies every parameter and buffer by its
``state_dict`` name (so it works for any module tree whose names match PyTorch's);
``compare_modules`` runs both on the same input and checks outputs, input gradients,
parameter gradients and buffers. Tests using these must be marked ``@pytest.mark.torch``.
"""
import numpy as np

import tracegrad as tg

__all__ = ["copy_weights", "to_tg", "to_np", "compare_modules", "assert_close"]

RTOL = {np.dtype("float32"): 1e-4, np.dtype("float64"): 1e-7}


def to_np(t):
    """A NumPy copy of a torch or tracegrad tensor."""
    return np.array(t.detach().cpu().numpy() if hasattr(t, "cpu") else t.detach().numpy())


def to_tg(t, requires_grad=None):
    """A tracegrad tensor with a torch tensor's values (and, by default, its requires_grad)."""
    out = tg.tensor(to_np(t))
    if requires_grad is None:
        requires_grad = bool(t.requires_grad)
    return out.requires_grad_(requires_grad) if requires_grad else out


def copy_weights(torch_module, our_module):
    """Copy every parameter and buffer of ``torch_module`` into ``our_module`` in place,
    matching by state_dict name; both must have exactly the same names and shapes."""
    theirs = torch_module.state_dict()
    ours = our_module.state_dict(keep_vars=True)
    assert list(theirs) == list(ours), f"state_dict names differ:\n{list(theirs)}\n{list(ours)}"
    with tg.no_grad():
        for name, value in theirs.items():
            target = ours[name]
            src = to_np(value)
            assert tuple(target.shape) == src.shape, f"{name}: {tuple(target.shape)} vs {src.shape}"
            target.copy_(tg.tensor(src, dtype=target.dtype))


def assert_close(ours, theirs, rtol=None, atol=None, what=""):
    a = ours.detach().numpy() if isinstance(ours, tg.Tensor) else np.asarray(ours)
    b = to_np(theirs) if not isinstance(theirs, np.ndarray) else theirs
    if rtol is None:
        rtol = RTOL.get(np.asarray(a).dtype, 1e-4)
    if atol is None:
        atol = rtol
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs {b.shape}"
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=what)


def compare_modules(torch_module, our_module, *inputs, grad_out=None, rtol=None, atol=None, seed=0):
    """Run both modules on the same inputs (NumPy arrays; float ones get requires_grad),
    backpropagate the same random output gradient, and check outputs, input gradients,
    parameter gradients and buffers. Returns (our_output, torch_output)."""
    import torch
    rng = np.random.default_rng(seed)
    t_in = [torch.tensor(x, requires_grad=x.dtype.kind == "f") for x in inputs]
    o_in = [tg.tensor(x, requires_grad=x.dtype.kind == "f") for x in inputs]
    t_out = torch_module(*t_in)
    o_out = our_module(*o_in)
    assert_close(o_out, t_out, rtol, atol, "output")
    if grad_out is None:
        grad_out = rng.standard_normal(tuple(t_out.shape)).astype(to_np(t_out).dtype)
    if t_out.requires_grad:
        t_out.backward(torch.tensor(grad_out))
        o_out.backward(tg.tensor(grad_out))
        for k, (a, b) in enumerate(zip(o_in, t_in)):
            if b.grad is not None:
                assert_close(a.grad, b.grad, rtol, atol, f"input {k} grad")
        t_params = dict(torch_module.named_parameters())
        for name, p in our_module.named_parameters():
            tp = t_params[name]
            if tp.grad is None:
                assert p.grad is None, f"{name}: torch has no grad, we do"
            else:
                assert p.grad is not None, f"{name}: no grad"
                assert_close(p.grad, tp.grad, rtol, atol, f"{name}.grad")
    t_bufs = dict(torch_module.named_buffers())
    for name, b in our_module.named_buffers():
        assert_close(b, t_bufs[name], rtol, atol, f"buffer {name}")
    return o_out, t_out
