"""PyTorch's refusals for in-place writes under autograd, each with PyTorch's message.

Writing into a tensor must not silently break a gradient: not into a leaf that requires
grad (or a view of one), an inference tensor outside inference mode, a view made without
recording, one output of a multi-view op, or a view returned by a custom Function --
nor into ``z.real`` / ``z.imag``, copies here where PyTorch's are views.
"""
from . import grad_mode
from .tensor import INFERENCE_VIEW

__all__ = ["check_inplace", "forward_name"]

_GRAD, _INFERENCE = grad_mode.GRAD, grad_mode.INFERENCE


def check_inplace(self, mode):
    """PyTorch's refusals for writing into ``self`` in the current grad ``mode``."""
    if self._extra is not None and self._extra.get("inference") and mode != _INFERENCE:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not "
                           "allowed.You can make a clone to get a normal tensor before doing "
                           "inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details.")
    root = self if self._base is None else self._base
    if root._extra is not None and root._extra.get("part_copy"):
        raise RuntimeError("writing into z.real, z.imag, view_as_real(z) or view_as_complex(x) is not "
                           "supported: in tracegrad they are copies, not views, so the write would not reach "
                           "the tensor they came from. Build the new value instead, e.g. "
                           "z = torch.complex(new_real, z.imag)")
    if mode != _GRAD:
        return
    if self._grad_fn is None and self._requires_grad and self._base is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    view = self._view
    if view is None:
        return
    custom = self._extra.get("function_view") if self._extra is not None else None
    if custom is not None and self._requires_grad:
        raise RuntimeError(
            f"Output {custom[1]} of {custom[0]} is a view and is being modified inplace. This view "
            "was created inside a custom Function (or because an input was returned as-is) and the "
            "autograd logic to handle view+inplace would override the custom backward associated "
            "with the custom Function, leading to incorrect gradients. This behavior is forbidden. "
            "You can fix this by cloning the output of the custom Function.")
    base = self._base
    if base._grad_fn is None and base._requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    chain, _, tracked = view
    prim, params, k = chain[-1]
    if not tracked and self._requires_grad:
        what = "A view was" if tracked is False else \
            f"Output {k} of {forward_name(prim, params)} is a view of a view which was"
        if custom is None and self._extra is not None and self._extra.get(INFERENCE_VIEW):
            made, now, block = "inference mode", "in normal mode", "inference_mode"
        else:
            made, now, block = "no_grad mode", "with grad mode enabled", "no_grad"
        raise RuntimeError(
            f"{what} created in {made} and is being modified inplace {now}. Given that this use "
            "case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving "
            f"both the view and the inplace either both inside the {block} block (if you don't want "
            "the inplace to be tracked) or both outside (if you want the inplace to be tracked).")
    if prim.nout != 1 and self._requires_grad:
        raise RuntimeError(
            f"Output {k} of {forward_name(prim, params)} is a view and is being modified inplace. "
            "This view is the output of a function that returns multiple views. Such functions do not allow the output "
            "views to be modified inplace. You should replace the inplace operation by an "
            "out-of-place one.")


def forward_name(prim, params):
    """The op as PyTorch's view messages name it: its node's name without "Backward0"."""
    return prim.node_name((), params).replace("Backward0", "")
