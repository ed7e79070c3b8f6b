"""``torch.optim._functional``: the functional optimizers, as older code and federated
learning clients import them (``from torch.optim import _functional as F``;
``F.sgd(params, grads, bufs, ...)``). Each is the one its optimizer's module defines
(``torch.optim.adam.adam``...), sharing that optimizer's update."""
from .adam import adam, adamw
from .sgd import sgd

__all__ = ["adam", "adamw", "sgd"]
