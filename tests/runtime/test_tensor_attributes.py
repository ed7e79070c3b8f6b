"""Attributes set on tensors, as PyTorch allows (learn2learn's ``p.update = -lr * g``,
torchmeta's, DEQ code's markers): kept, copied by deepcopy and pickle, absent otherwise."""
import copy
import pickle

import pytest

import tracegrad as tg


def test_a_tensor_takes_new_attributes():
    t = tg.ones(2, requires_grad=True) * 2
    t.update = -0.1 * t
    assert t.update.tolist() == pytest.approx([-0.2, -0.2]) and not hasattr(tg.ones(1), "update")
    with pytest.raises(AttributeError, match="has no attribute 'missing'"):
        _ = t.missing


def test_attributes_survive_deepcopy_and_pickle_and_views_do_not_share_them():
    t = tg.ones(2)
    t.tag = {"kind": "mask"}
    assert copy.deepcopy(t).tag == {"kind": "mask"} and copy.deepcopy(t).tag is not t.tag
    assert pickle.loads(pickle.dumps(t)).tag == {"kind": "mask"}
    assert not hasattr(t.view(2), "tag") and not hasattr(t.detach(), "tag")
    p = tg.nn.Parameter(t)
    assert not hasattr(p, "tag")  # (a Parameter aliases the data, not the attributes)


def test_a_parameters_attributes_survive_pickle():
    """As in PyTorch: pickle keeps them; deepcopy (values only, for layers copied into a
    TransformerEncoder) does not."""
    p = tg.nn.Parameter(tg.ones(2))
    p.lr_scale = 0.1
    back = pickle.loads(pickle.dumps(p))
    assert type(back) is tg.nn.Parameter and back.lr_scale == 0.1 and back.requires_grad
    assert not hasattr(copy.deepcopy(p), "lr_scale")
