"""Results of the ops PyTorch gives no derivative (unique, histc, histogram): tied to the
inputs that require grad, so that a backward through them raises, as in PyTorch, instead
of silently leaving those inputs out of the gradient."""
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
