"""``instance_norm`` and ``local_response_norm``: normalisations within one sample.

As in PyTorch, instance norm is batch norm of the input viewed as one sample of N * C
channels (weights and running statistics repeated N times), after which the running
statistics are the batch average of the per-sample ones; local response norm divides by a
power of the average square over neighbouring channels (a padded average pooling).
"""
from ...runtime.grad_mode import no_grad
from .conv import avg_pool2d
from .misc import pad
from .norm import batch_norm
from .pooling import avg_pool3d

__all__ = ["instance_norm", "local_response_norm"]


def _verify_spatial_size(size):
    n = 1
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")


def _repeat(t, b):
    return None if t is None else t.repeat(b)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalise each (sample, channel) plane by its own statistics (``use_input_stats``)
    or by the running ones; the running ones then move towards the batch's average."""
    if use_input_stats:
        _verify_spatial_size(input.size())
    b, c = input.shape[0], input.shape[1]
    shaped = input.reshape(1, b * c, *input.shape[2:])
    means, variances = _repeat(running_mean, b), _repeat(running_var, b)
    out = batch_norm(shaped, means, variances, _repeat(weight, b), _repeat(bias, b), use_input_stats, momentum,
                     eps)
    with no_grad():
        for running, repeated in ((running_mean, means), (running_var, variances)):
            if running is not None:
                running.copy_(repeated.view(b, c).mean(0))
    return out.view(input.shape)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """``x / (k + alpha * mean of x^2 over `size` neighbouring channels) ** beta``."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {dim} "
                         "dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.size()
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.view(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div
