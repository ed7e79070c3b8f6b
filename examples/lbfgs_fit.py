"""Fit a damped oscillation with ``optim.LBFGS`` and a strong-Wolfe line search.

    python examples/lbfgs_fit.py [--steps 20]

Noisy samples of ``a * exp(-b t) * cos(w t + phi)`` are fitted by least squares. LBFGS
calls the closure (loss and gradient) as often as its line search needs, so a full-batch
problem like this one converges in a few outer steps where first-order methods take
thousands. The script prints the loss per step and the recovered parameters.
"""
import argparse

import tracegrad as torch

TRUE = {"a": 2.0, "b": 0.3, "w": 1.7, "phi": 0.4}


def model(params, t):
    return params["a"] * torch.exp(-params["b"] * t) * torch.cos(params["w"] * t + params["phi"])


def main(steps=20, seed=0, log=print):
    """Return (the final loss, the fitted parameters as floats)."""
    torch.manual_seed(seed)
    t = torch.linspace(0, 10, 200, dtype=torch.float64)
    target = model({k: torch.tensor(v, dtype=torch.float64) for k, v in TRUE.items()}, t)
    target = target + 0.01 * torch.randn(t.shape, dtype=torch.float64)
    start = {"a": 1.0, "b": 0.1, "w": 1.5, "phi": 0.0}  # near enough for a local method
    params = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in start.items()}
    optimizer = torch.optim.LBFGS(params.values(), lr=1, max_iter=20, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = ((model(params, t) - target) ** 2).mean()
        loss.backward()
        return loss

    for step in range(1, steps + 1):
        loss = optimizer.step(closure)
        log(f"step {step:2d}  loss {loss.item():.6e}")
    fitted = {k: v.item() for k, v in params.items()}
    log("fitted  " + "  ".join(f"{k}={v:.4f} (true {TRUE[k]})" for k, v in fitted.items()))
    return closure().item(), fitted


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    main(args.steps)
