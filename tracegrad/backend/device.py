"""Device objects, spelled and printed like ``torch.device``."""

__all__ = ["device"]

_outer_defaults = []  # default devices to restore, one per open `with device(...)` block


class device:
    """Where a tensor's storage lives: ``device('cpu')``, ``device('cuda')``, ``device('cuda', 1)``."""

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, str) and ":" in type:
            type, _, idx = type.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'")
            index = int(idx)
        if type not in ("cpu", "cuda", "meta"):
            raise RuntimeError(f"Expected one of cpu, cuda, meta device type at start of device string: {type}")
        if type in ("cpu", "meta") and index not in (None, 0):
            raise RuntimeError(f"{'CPU' if type == 'cpu' else 'Meta'} device index must be 0 or None, got {index}")
        self.type = type
        self.index = index

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __enter__(self):
        """``with tracegrad.device('cuda'):`` makes it the default device for the block."""
        from . import _default_device
        _outer_defaults.append(_default_device[0])
        _default_device[0] = self
        return self

    def __exit__(self, *exc):
        from . import _default_device
        _default_device[0] = _outer_defaults.pop()
        return False

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"


CPU = device("cpu")

