"""``torch.optim.adamw``: where PyTorch keeps ``AdamW`` (``from torch.optim.adamw import
AdamW``) and its functional form ``adamw``; tracegrad's are in :mod:`.adam`."""
from .adam import AdamW, adamw

__all__ = ["AdamW", "adamw"]
