"""Cross entropy of logits against class indices as one primitive: ``log_softmax`` along
the class dim, then ``nll_loss``, in one kernel and one node.

PyTorch composes the two (two nodes); here the composition cost two dispatches and two
nodes for a loss that every classifier ends with, and in a small model (nanoGPT's 256 x
13 logits) that overhead was most of the loss's time. The kernel runs the two rules'
kernels in turn, so its values are theirs bit for bit; its outputs are ``(loss, logp)``,
as the attention's are ``(O, P)``: the vjp reads the log-probabilities instead of
recomputing them, and is the composition's vjp -- ``nll_loss_backward`` then
``log_softmax``'s vjp, both primitives -- so every order of derivative holds and a first
-order backward on arrays runs those rules' array kernels.

The node is named as PyTorch's top node (``NllLossBackward0``, ``NllLoss2DBackward0``);
its saved values are the logits, not PyTorch's log-probabilities, so they carry names of
their own (``_saved_logits``), not PyTorch's ``_saved_self``.
"""
from .activation import _along, log_softmax_jvp, log_softmax_vjp
from .core import KEEP, primitive
from .loss import _class_dim, _nll_name, _reduction_view, nll_loss, nll_loss_backward

__all__ = ["cross_entropy_loss"]


@primitive(_nll_name, dtypes=KEEP, nout=2, result_names=("result", "log_probs"), saved_outputs=(1,),
           saved_names=("logits", "target", "weight"),
           saved_view=lambda params: {**_reduction_view(params), "ignore_index": params["ignore_index"]})
def cross_entropy_loss(xp, x, target, weight, *, reduction="mean", ignore_index=-100):
    """``(nll_loss(logp, target, weight), logp)`` with ``logp = log_softmax(x)`` along the
    class dim (dim 1, or 0 for one unbatched sample); ``x`` is floating point."""
    logp = _along(xp, x, _class_dim(x.shape), log=True)
    return nll_loss.impl(xp, logp, target, weight, reduction=reduction, ignore_index=ignore_index), logp


@cross_entropy_loss.vjp("x", uses="target weight out")
def cross_entropy_loss_vjp(g, out, x, target, weight, *, reduction="mean", ignore_index=-100):
    g_loss, g_logp = g
    glogp = nll_loss_backward(g_loss, target, weight, shape=tuple(x.shape), reduction=reduction,
                              ignore_index=ignore_index)
    if g_logp is not None:
        glogp = glogp + g_logp
    return log_softmax_vjp(glogp, out[1], x, dim=_class_dim(x.shape))


@cross_entropy_loss.jvp("x")
def cross_entropy_loss_jvp(t, out, x, target, weight, *, reduction="mean", ignore_index=-100):
    t_logp = log_softmax_jvp(t, out[1], x, dim=_class_dim(x.shape))
    return nll_loss(t_logp, target, weight, reduction=reduction, ignore_index=ignore_index), t_logp
