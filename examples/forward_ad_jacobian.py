"""A Jacobian by forward-mode AD, column by column, checked against reverse mode.

    python examples/forward_ad_jacobian.py [--n 6]

Forward mode pushes one tangent (a direction in input space) through the computation and
gets one Jacobian column, ``J @ v``, alongside the value: no graph is stored. For a
function with few inputs and many outputs that beats reverse mode, which gets one row per
backward pass. Each column here comes from ``autograd.forward_ad``'s dual tensors, and the
whole matrix again from ``func.jacfwd``; both are compared with
``autograd.functional.jacobian`` (reverse mode).
"""
import argparse

import tracegrad as torch
import tracegrad.autograd.forward_ad as fwAD
from tracegrad.func import jacfwd


def f(x):
    """Few inputs, many outputs: features of a point on a curve."""
    s = torch.sin(x).cumsum(0)
    return torch.cat([s * x[0], torch.tanh(s) ** 2, torch.exp(-x * x) / (1 + x[-1] ** 2)])


def jacobian_by_columns(f, x):
    columns = []
    with fwAD.dual_level():
        for i in range(x.numel()):
            direction = torch.zeros_like(x)
            direction[i] = 1.0
            out = f(fwAD.make_dual(x, direction))
            columns.append(fwAD.unpack_dual(out).tangent)
    return torch.stack(columns, dim=1)


def main(n=6, seed=0, log=print):
    """Return the largest difference between the forward-mode and reverse-mode Jacobians."""
    torch.manual_seed(seed)
    x = torch.randn(n, dtype=torch.float64)
    forward = jacobian_by_columns(f, x)
    functional = jacfwd(f)(x)
    reverse = torch.autograd.functional.jacobian(f, x)
    worst = max((forward - reverse).abs().max().item(), (functional - reverse).abs().max().item())
    log(f"f: R^{n} -> R^{forward.shape[0]}; {n} forward passes give the {tuple(forward.shape)} Jacobian")
    log(f"largest difference from reverse mode: {worst:.2e}")
    return worst


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=6)
    args = parser.parse_args()
    main(args.n)
