"""A view of a normal tensor made in inference mode is a normal tensor, as in PyTorch: not
an inference tensor (it may be used by autograd later), untracked like a no_grad view
(its ``requires_grad`` is its base's, no grad_fn), and an in-place write into it -- or
into a view of it -- outside inference mode is refused with PyTorch's message. A view of
an inference tensor is still one."""
import pytest

import tracegrad as tg

VIEWS = {"view": lambda t: t.view(6), "slice": lambda t: t[1:], "transpose": lambda t: t.t(),
         "split": lambda t: t.split(1)[0], "unbind": lambda t: t.unbind(0)[1]}


@pytest.mark.parametrize("make", sorted(VIEWS))
def test_a_view_of_a_normal_tensor_made_in_inference_mode_is_a_normal_untracked_view(make):
    a = tg.ones(2, 3, requires_grad=True)
    b = tg.ones(2, 3)
    with tg.inference_mode():
        va, vb = VIEWS[make](a), VIEWS[make](b)
        inner = VIEWS[make](b * 2)  # (b * 2 is an inference tensor: so are its views)
    assert not va.is_inference() and not vb.is_inference() and inner.is_inference()
    assert va.requires_grad and va.grad_fn is None and not vb.requires_grad
    assert va._base is a and vb._base is b
    x = tg.ones(vb.shape, requires_grad=True)
    (vb * x).sum().backward()  # usable by autograd (an inference tensor is refused here)
    assert tg.equal(x.grad, vb)
    vb.add_(1)                 # b does not require grad: the write is allowed, and reaches b
    assert float(b.sum()) > 6.0
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        (inner * x).sum().backward()


def test_writing_into_such_a_view_outside_inference_mode_is_refused_as_in_pytorch():
    a = tg.ones(2, 3, requires_grad=True) * 1.0  # (not a leaf: the view rules apply)
    with tg.inference_mode():
        v = a.view(6)
    with pytest.raises(RuntimeError, match=r"^A view was created in inference mode and is being "
                                           r"modified inplace in normal mode\..*inference_mode block"):
        v.mul_(2)
    with pytest.raises(RuntimeError, match=r"^Output 0 of Slice is a view of a view which was created "
                                           r"in inference mode and is being modified inplace in normal mode"):
        v[1:].mul_(2)
    with tg.no_grad():
        w = a.view(6)
    with pytest.raises(RuntimeError, match=r"^A view was created in no_grad mode .*with grad mode enabled"):
        w.mul_(2)
    with tg.inference_mode():
        v.mul_(2)  # inside inference mode: allowed
    assert float(a.detach().sum()) == 12.0


@pytest.mark.torch
@pytest.mark.parametrize("make", sorted(VIEWS))
def test_inference_mode_views_match_torch(make):
    import torch
    seen = {}
    for lib in (tg, torch):
        a = lib.ones(2, 3, requires_grad=True)
        b = lib.ones(2, 3)
        with lib.inference_mode():
            va, vb, inner = VIEWS[make](a), VIEWS[make](b), VIEWS[make](b * 2)
        row = [(t.is_inference(), t.requires_grad, t.grad_fn is None, t.is_leaf) for t in (va, vb, inner)]
        c = a * 1.0
        with lib.inference_mode():
            vc = VIEWS[make](c)
        try:
            vc.mul_(2)
            row.append("allowed")
        except RuntimeError as e:
            row.append(str(e).replace("tracegrad", "torch"))
        seen[lib] = row
    assert seen[tg] == seen[torch]
