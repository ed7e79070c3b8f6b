"""Results of the ops PyTorch gives no derivative (unique, histogram, histogramdd): tied to
the inputs that require grad, so that a backward through them raises, as in PyTorch,
instead of silently leaving those inputs out of the gradient. PyTorch has two forms, and
each op here takes its own: a node of the op's name whose backward raises
NotImplementedError (``unique``: :func:`refusing_backward`), and an op whose derivative
is declared not implemented, recorded as a ``NotImplemented`` node whose backward raises
RuntimeError naming the ATen op (``histogram``: :func:`not_implemented`)."""
from ..runtime import grad_mode
from ..runtime.function import Function
from ..runtime.tensor import Tensor


class _NoDerivative(Function):
    @staticmethod
    def forward(ctx, name, result, *inputs):
        ctx.name = name
        return result.clone()

    @staticmethod
    def backward(ctx, grad):
        raise NotImplementedError(f"the derivative for '{ctx.name}' is not implemented.")


def refusing_backward(name, result, *inputs):
    """``result`` (a floating tensor computed from ``inputs`` outside autograd) as an output
    whose backward raises, when grad mode is on and one of ``inputs`` requires grad; else
    ``result`` itself."""
    if not (grad_mode.is_grad_enabled() and result.dtype.is_floating_point
            and any(isinstance(t, Tensor) and t.requires_grad for t in inputs)):
        return result
    return _NoDerivative.apply(name, result, *inputs)


class _NotImplemented(Function):
    @staticmethod
    def forward(ctx, op, nout, *tensors):
        ctx.op = op
        return tuple(t.clone() for t in tensors[:nout])

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(f"derivative for aten::{ctx.op} is not implemented")


class _NotImplementedNode(_NotImplemented._backward_cls):
    """The node, named and printed as PyTorch's C++ one."""

    def name(self):
        return "torch::autograd::NotImplemented"

    def __repr__(self):
        return f"<NotImplemented object at {id(self):#x}>"


_NotImplementedNode.__name__ = "NotImplemented"  # (in the tensor's repr: grad_fn=<NotImplemented>)
_NotImplemented._backward_cls = _NotImplementedNode


def not_implemented(op, results, inputs):
    """``results`` (tensors computed from ``inputs`` outside autograd) as outputs of one
    ``NotImplemented`` node, when grad mode is on and one of ``inputs`` requires grad;
    else ``results`` as they are (a list)."""
    if not (results and grad_mode.is_grad_enabled()
            and any(isinstance(t, Tensor) and t.requires_grad for t in inputs)):
        return list(results)
    return list(_NotImplemented.apply(op, len(results), *results, *inputs))
