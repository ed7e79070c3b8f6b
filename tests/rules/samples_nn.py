"""Samples for the layer rules (tracegrad/rules/nn.py): normalisations, embedding, padding."""
import numpy as np

from .sampling import S, ints, pos, r, zd


def _bn(shape, training, affine=True, **kw):
    c = shape[1]
    w, b = (r(c), r(c)) if affine else (None, None)
    if training:
        return S(r(*shape), w, b, eps=1e-5, **kw)
    return S(r(*shape), w, b, r(c), pos(c), eps=1e-5, **kw)


SAMPLES = {
    "batch_norm": [_bn((4, 3), True), _bn((3, 2, 4), True), _bn((2, 3, 2, 2), True),
                   _bn((2, 3, 2, 2), True, affine=False), S(r(4, 3) * 5 + 2, None, r(3), eps=0.1),
                   S(r(4, 3), r(3), None, eps=0.1)],
    "batch_norm_eval": [_bn((4, 3), False), _bn((2, 3, 2, 2), False), _bn((2, 3, 2, 2), False, affine=False),
                        S(r(3, 2, 4), None, r(2), r(2), pos(2), eps=0.5),
                        _bn((2, 3, 0), False, tags="empty")],
    "layer_norm": [S(r(4, 5), r(5), r(5), normalized_shape=(5,), eps=1e-5),
                   S(r(2, 3, 4), r(3, 4), r(3, 4), normalized_shape=(3, 4), eps=1e-5),
                   S(r(2, 3, 4), None, None, normalized_shape=(4,), eps=1e-5),
                   S(r(2, 3, 4), r(4), None, normalized_shape=(4,), eps=0.5),
                   S(r(5), r(5), r(5), normalized_shape=(5,), eps=1e-5),
                   S(r(0, 4), r(4), r(4), normalized_shape=(4,), eps=1e-5, tags="empty")],
    "group_norm": [S(r(2, 6, 3), r(6), r(6), num_groups=3, eps=1e-5),
                   S(r(2, 4, 2, 2), r(4), r(4), num_groups=2, eps=1e-5),
                   S(r(3, 4), None, None, num_groups=2, eps=1e-5),
                   S(r(2, 4, 3), r(4), None, num_groups=1, eps=0.5),
                   S(r(2, 4, 3), None, r(4), num_groups=4, eps=1e-5),
                   S(r(0, 4, 3), r(4), r(4), num_groups=2, eps=1e-5, tags="empty")],
    "embedding": [S(r(5, 3), ints(5, 4)), S(r(5, 3), ints(5, 2, 3)),
                  # (padding_idx is no derivative of the forward: tests/nn/test_functional.py checks it)
                  S(r(5, 3), np.array(2), tags="0d"), S(r(5, 3), ints(5, 0), tags="empty"),
                  S(r(0, 3), ints(1, 0), tags="empty")],
    "constant_pad_nd": [S(r(3, 4), pad=(1, 2)), S(r(2, 3, 4), pad=(1, 0, 2, 1), value=1.5),
                        S(r(3, 4), pad=(-1, 2, 0, -1)), S(r(3, 4), pad=(0, 0)),
                        S(zd(), pad=(), tags="0d"), S(r(0, 3), pad=(1, 1), tags="empty"),
                        S(r(2, 3), pad=(0, 0, 0, 0), tags="empty")],
    "pad_nd": [S(r(2, 5), pad=(2, 3), mode="reflect"), S(r(1, 3, 4), pad=(1, 2, 2, 0), mode="reflect"),
               S(r(2, 5), pad=(2, 3), mode="replicate"), S(r(2, 3, 4), pad=(3, 1, 1, 2), mode="replicate"),
               S(r(2, 5), pad=(2, 3), mode="circular"), S(r(1, 3, 4), pad=(4, 1, 1, 3), mode="circular"),
               S(r(2, 5), pad=(-1, 2), mode="reflect"),
               S(r(0, 2, 5), pad=(1, 2), mode="replicate", tags="empty")],
    "pad_nd_backward": [S(r(2, 10), pad=(2, 3), mode="reflect", shape=(2, 5)),
                        S(r(1, 6, 8), pad=(3, 1, 1, 2), mode="replicate", shape=(1, 3, 4)),
                        S(r(2, 10), pad=(2, 3), mode="circular", shape=(2, 5)),
                        S(r(0, 2, 8), pad=(1, 2), mode="replicate", shape=(0, 2, 5), tags="empty")],
}

EXEMPT = {
    "batch_norm": {"0d": "needs a channel dimension",
                   "empty": "F.batch_norm answers an empty input without this rule, as PyTorch does "
                            "(whose native_batch_norm rejects one in training)"},
    "batch_norm_eval": {"0d": "needs a channel dimension"},
    "layer_norm": {"0d": "normalises at least one dimension"},
    "group_norm": {"0d": "needs a channel dimension"},
    "pad_nd": {"0d": "pads at least one dimension, which a 0-d tensor lacks"},
    "pad_nd_backward": {"0d": "pads at least one dimension, which a 0-d tensor lacks"},
}
