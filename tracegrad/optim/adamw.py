"""``torch.optim.adamw``: where PyTorch keeps ``AdamW`` (``from torch.optim.adamw import
AdamW``); tracegrad's is in :mod:`.adam`."""
from .adam import AdamW

__all__ = ["AdamW"]
