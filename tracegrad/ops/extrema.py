"""``cummax``, ``cummin`` and ``mode`` with PyTorch's signatures and named results, over
the rules of :mod:`tracegrad.rules.extrema` (which say which position ties and NaNs pick)."""
from ..rules import extrema as E
from . import return_types
from ._args import wrap_dim


def _refuse_complex(input, kernel):
    if input.dtype.category == 3:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{input.dtype.scalar_name}\'')


def cummax(input, dim):
    """(values, indices): the running maximum along ``dim`` and where it was found."""
    _refuse_complex(input, "cummax_cpu")
    return return_types.cummax(*E.cummax(input, dim=wrap_dim(dim, input.ndim)))


def cummin(input, dim):
    """(values, indices): the running minimum along ``dim`` and where it was found."""
    _refuse_complex(input, "cummin_cpu")
    return return_types.cummin(*E.cummin(input, dim=wrap_dim(dim, input.ndim)))


def mode(input, dim=-1, keepdim=False):
    """(values, indices): the most frequent value along ``dim`` (the smallest of equally
    frequent ones) and its last position."""
    _refuse_complex(input, "mode_cpu")
    d = wrap_dim(dim, input.ndim)
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    return return_types.mode(*E.mode(input, dim=d, keepdim=keepdim))


FUNCTIONS = {"cummax": cummax, "cummin": cummin, "mode": mode}
METHODS = dict(FUNCTIONS)
