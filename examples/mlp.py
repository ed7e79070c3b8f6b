"""Seed 002's hand-checked MLP ("一个简单的 MLP 示例"): a two-layer linear network trained on a
squared error, whose gradients are read with ``autograd.grad`` and re-derived by hand.

    python examples/mlp.py

Each check prints the gradient tracegrad computed next to the hand formula and whether they
agree. Unlike the seed, the backward pass keeps the graph (``retain_graph=True``): the seed
calls ``autograd.grad`` on ``l`` after a plain ``l.backward()``, which PyTorch refuses
("Trying to backward through the graph a second time").
"""
import tracegrad as torch
import tracegrad.autograd as autograd  # noqa: PLR0402 -- the seed's `import torch.autograd as autograd`


def main(seed=0):
    torch.manual_seed(seed)
    x = torch.randn((5, 3), requires_grad=False)
    y = torch.randn(5, requires_grad=False)

    w1 = torch.randn((3, 4), requires_grad=True)
    b1 = torch.randn(4, requires_grad=True)
    w2 = torch.randn((4, 1), requires_grad=True)
    b2 = torch.randn(1, requires_grad=True)

    y1 = x @ w1 + b1
    y2 = y1 @ w2 + b2
    l = ((y - y2.squeeze()) ** 2).sum()
    l.backward(retain_graph=True)
    print("l =", l)

    # d l / d y2 = 2 (y2 - y)
    (y2_grad,) = autograd.grad(l, y2, retain_graph=True)
    by_hand = 2 * (y2.squeeze() - y)
    print("y2_grad =", y2_grad.squeeze())
    print("2 * (y2 - y) =", by_hand.detach())

    # d l / d y1 = y2_grad @ w2^T
    (y1_grad,) = autograd.grad(l, y1, retain_graph=True)
    print("y1_grad =", y1_grad)
    print("y2_grad @ w2.t() =", (y2_grad @ w2.t()).detach())

    # d l / d w1 = x^T @ y1_grad, d l / d b1 = y1_grad summed over the batch
    print("w1.grad =", w1.grad)
    print("x.t() @ y1_grad =", x.t() @ y1_grad)
    print("b1.grad =", b1.grad)
    print("y1_grad.sum(0) =", y1_grad.sum(0))

    checks = {
        "y2_grad == 2 * (y2 - y)": torch.allclose(y2_grad.squeeze(), by_hand.detach()),
        "y1_grad == y2_grad @ w2.t()": torch.allclose(y1_grad, (y2_grad @ w2.t()).detach()),
        "w1.grad == x.t() @ y1_grad": torch.allclose(w1.grad, x.t() @ y1_grad),
        "b1.grad == y1_grad.sum(0)": torch.allclose(b1.grad, y1_grad.sum(0)),
        "w2.grad == y1.t() @ y2_grad": torch.allclose(w2.grad, (y1.t() @ y2_grad).detach()),
        "b2.grad == y2_grad.sum()": torch.allclose(b2.grad, y2_grad.sum().reshape(1)),
    }
    for name, ok in checks.items():
        print(f"{name}: {ok}")
    return checks


if __name__ == "__main__":
    main()
