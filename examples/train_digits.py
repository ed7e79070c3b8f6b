"""Train a small convnet on the 8x8 handwritten digits that ship with tracegrad.

    python examples/train_digits.py [--epochs 10] [--seed 0]

The script is PyTorch code with one import changed (``import tracegrad as torch``): layers
from ``nn``, ``CrossEntropyLoss``, ``optim.Adam`` with a cosine learning-rate schedule, mini-batches
drawn with ``randperm``. It trains on the fixed split of :func:`tracegrad.datasets.digits_split`
(1437 train / 360 test images) and reaches about 98% test accuracy in ten epochs, the same
as the identical PyTorch model. ``seed`` fixes the initial weights and the batch order, so a
run is repeatable.
"""
import argparse
import time

import tracegrad as torch
from tracegrad import nn
from tracegrad.datasets import digits_split


def make_model():
    """Two 3x3 convolutions at 8x8, pool, one at 4x4, pool, then a linear classifier."""
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(),
        nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2),                              # 32 x 4 x 4
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2),                              # 64 x 2 x 2
        nn.Flatten(),
        nn.Linear(64 * 2 * 2, 10),
    )


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        return (model(x).argmax(dim=1) == y).float().mean().item()


def main(epochs=10, seed=0, batch_size=64, lr=3e-3, log=print):
    """Train for ``epochs`` and return the final test accuracy (a fraction)."""
    torch.manual_seed(seed)
    (x_train, y_train), (x_test, y_test) = digits_split()
    mean, std = x_train.mean(), x_train.std()  # standardise with training statistics only
    x_train, x_test = (x_train - mean) / std, (x_test - mean) / std

    model = make_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()
    n = len(y_train)
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        model.train()
        total = 0.0
        order = torch.randperm(n)
        for i in range(0, n, batch_size):
            idx = order[i:i + batch_size]
            loss = loss_fn(model(x_train[idx]), y_train[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(idx)
        scheduler.step()
        acc = accuracy(model, x_test, y_test)
        log(f"epoch {epoch}/{epochs}  loss {total / n:.3f}  test accuracy {100 * acc:.1f}%  "
            f"({time.perf_counter() - start:.1f} s)")
    return acc


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(epochs=args.epochs, seed=args.seed)
