"""Argument helpers of the layer classes, as in ``torch.nn.modules.utils``: an int or an
iterable made into an n-tuple (``_pair(3) == (3, 3)``)."""
import collections.abc
import itertools

__all__ = []


def _ntuple(n, name="parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(itertools.repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")


def _reverse_repeat_tuple(t, n):
    """Each element of ``t`` repeated ``n`` times, last first: ``F.pad``'s order of sizes."""
    return tuple(x for x in reversed(t) for _ in range(n))


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Strip ``prefix`` from the keys of ``state_dict`` that start with it, in place (a
    checkpoint saved from a ``DataParallel``/DDP model has ``module.`` in front of every
    key), and from its ``_metadata``'s keys too -- ``"module"`` itself becoming the root
    ``""``-less entry, as PyTorch renames it."""
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
                metadata[key[len(prefix):]] = metadata.pop(key)
