"""SparseAdam: Adam for gradients in a sparse layout (``nn.Embedding(sparse=True)``).

tracegrad has no sparse embedding gradients: ``Embedding(sparse=True)`` (and
``EmbeddingBag``) refuse with NotImplementedError when called, and only a sparse COO leaf
used through ``tracegrad.sparse.mm`` gets a sparse gradient. So the optimizer is built and
checked as in PyTorch, and ``step`` refuses the dense gradients it is given with PyTorch's
own error (which points to :class:`Adam`) rather than updating them by another rule.
"""
from .optimizer import Optimizer, check_betas, closure_loss

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Implements the lazy version of Adam suited to sparse gradients."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize})
        complex_params = [[i, j] for i, group in enumerate(self.param_groups)
                          for j, p in enumerate(group["params"]) if p.is_complex()]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support complex "
                             "parameters")

    def step(self, closure=None):
        """Perform a single optimization step: every gradient here is dense, which SparseAdam refuses."""
        loss = closure_loss(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        return loss
