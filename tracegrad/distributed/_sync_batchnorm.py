"""SyncBatchNorm's training forward across processes: batch statistics over every rank's
batch, written with the differentiable all-reduce, so that autograd derives the backward
(which all-reduces the sums of the gradient the statistics need, as torch's does)."""
from ..runtime.grad_mode import no_grad
from .nn.functional import all_reduce

__all__ = ["sync_batch_norm"]


def sync_batch_norm(bn, input, factor):
    """``bn`` (a SyncBatchNorm in training) applied to ``input`` with the mean and variance
    of the whole batch, all ranks together; the running statistics updated from them."""
    dims = [0] + list(range(2, input.dim()))
    shape = [1, -1] + [1] * (input.dim() - 2)
    count = input.new_tensor([float(input.numel() // input.size(1))])
    total = all_reduce(count, group=bn.process_group)
    mean = all_reduce(input.sum(dims), group=bn.process_group) / total
    centred = input - mean.reshape(shape)
    var = all_reduce((centred * centred).sum(dims), group=bn.process_group) / total  # (biased, as batch norm)
    out = centred / (var + bn.eps).sqrt().reshape(shape)
    if bn.weight is not None:
        out = out * bn.weight.reshape(shape)
    if bn.bias is not None:
        out = out + bn.bias.reshape(shape)
    if bn.track_running_stats and bn.running_mean is not None:
        with no_grad():
            n = float(total.item())
            if n <= 1:
                raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                                 f"{list(input.shape)} on every rank together")
            bn.running_mean.mul_(1 - factor).add_(mean.detach() * factor)
            bn.running_var.mul_(1 - factor).add_(var.detach() * (n / (n - 1)) * factor)
    return out
