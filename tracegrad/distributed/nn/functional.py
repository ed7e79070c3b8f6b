"""Differentiable collectives, as ``torch.distributed.nn.functional``: they return new
tensors, and their backward is the adjoint collective (the gradient of a sum over ranks
is the sum over ranks of the gradients). Every rank must run the backward too, as it
runs the forward."""
from ...runtime.function import Function
from ..collectives import ReduceOp, all_reduce as _all_reduce
from ..process_group import group as _group

__all__ = ["all_reduce"]


class _AllReduceSum(Function):
    @staticmethod
    def forward(ctx, group, tensor):
        ctx.group = group
        out = tensor.clone()
        _all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        grad = grad_output.clone()
        _all_reduce(grad, group=ctx.group)
        return None, grad


def all_reduce(tensor, op=ReduceOp.SUM, group=_group.WORLD):
    """The sum of ``tensor`` over the ranks, as a new tensor that gradients flow through
    (only SUM is differentiable here)."""
    if op is not ReduceOp.SUM:
        raise NotImplementedError(f"tracegrad.distributed.nn.functional.all_reduce supports ReduceOp.SUM only, "
                                  f"got {op!r}")
    return _AllReduceSum.apply(group, tensor)
