"""``Variable._execution_engine.queue_callback``: a function run once the backward pass that
queued it has ended (after every leaf has accumulated), as torch's; DDP relies on it."""
import pytest

import tracegrad as tg
from tracegrad.autograd import Variable


def _run(torch):
    log = []
    a = torch.ones(2, requires_grad=True)
    b = torch.ones(3, requires_grad=True)

    def queue(p):
        log.append(("acc", p.numel()))
        if len(log) == 1:
            Variable_ = torch.autograd.Variable
            Variable_._execution_engine.queue_callback(lambda: log.append(("end", a.grad.tolist(), b.grad.tolist())))

    a.register_post_accumulate_grad_hook(queue)
    b.register_post_accumulate_grad_hook(queue)
    ((a * 2).sum() + (b * 3).sum()).backward()
    (a.sum() * 1).backward()  # a new pass: nothing queued, the earlier callback does not run again
    return log


def test_callback_runs_once_after_every_accumulation():
    log = _run(tg)
    assert sorted(log[:2]) == [("acc", 2), ("acc", 3)]
    assert log[2] == ("end", [2.0, 2.0], [3.0, 3.0, 3.0])
    assert log[3:] == [("acc", 2)]


def test_queue_callback_outside_backward_is_refused():
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward pass."):
        Variable._execution_engine.queue_callback(lambda: None)


@pytest.mark.torch
def test_as_torch():
    import torch
    assert [entry[0] for entry in _run(tg)] == [entry[0] for entry in _run(torch)]
    assert _run(tg)[2] == _run(torch)[2]
