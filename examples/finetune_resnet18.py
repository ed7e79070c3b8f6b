"""Seed 002's ResNet-18 examples: one full training step, then fine-tuning with a frozen
backbone ("从有向无环图中排除").

    python examples/finetune_resnet18.py                      # randomly initialised backbone
    python examples/finetune_resnet18.py --weights resnet18.npz

tracegrad bundles no pretrained weights, so where the seed writes
``resnet18(weights=ResNet18_Weights.DEFAULT)`` this builds the model with ``weights=None`` and,
given ``--weights``, loads torchvision's state dict from a file (see
``tracegrad.models.resnet``'s docstring for the one-line export from torchvision).

Fine-tuning freezes every parameter, replaces the classifier with ``nn.Linear(512, 10)``
(created unfrozen), registers *all* parameters with SGD and takes one step: only
``fc.weight`` and ``fc.bias`` receive gradients, so only they move.
"""
import argparse

import tracegrad as torch
from tracegrad import nn, optim
from tracegrad.models import resnet18


def load_model(weights_path=None):
    model = resnet18(weights=None)
    if weights_path is not None:
        model.load_state_dict(torch.load(weights_path))
    return model


def training_step(model):
    """The seed's full step: forward, loss, zero_grad, backward, SGD with momentum."""
    data = torch.rand(1, 3, 64, 64)
    labels = torch.rand(1, 1000)
    optimizer = optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    prediction = model(data)                       # forward pass
    loss = (prediction - labels).sum()
    optimizer.zero_grad()
    loss.backward()                                # backward pass
    optimizer.step()                               # gradient descent
    return loss


def finetune_step(model):
    """Freeze the backbone, replace the classifier, take one step; returns the names of the
    parameters that received a gradient and of those the step changed."""
    for param in model.parameters():               # Freeze all the parameters in the network
        param.requires_grad = False
    model.fc = nn.Linear(512, 10)                  # new classifier, trainable by default
    optimizer = optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)   # all are registered
    before = {name: p.detach().clone() for name, p in model.named_parameters()}

    data, labels = torch.rand(1, 3, 64, 64), torch.rand(1, 10)
    loss = (model(data) - labels).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

    with_grad = [name for name, p in model.named_parameters() if p.grad is not None]
    changed = [name for name, p in model.named_parameters() if not torch.equal(p, before[name])]
    return with_grad, changed


def main(weights_path=None, seed=0):
    torch.manual_seed(seed)
    model = load_model(weights_path)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"resnet18: {n_params:,} parameters")

    loss = training_step(model)
    print(f"full training step: loss = {loss.item():.4f}")

    with_grad, changed = finetune_step(model)
    frozen = sum(1 for p in model.parameters() if not p.requires_grad)
    print(f"fine-tuning: {frozen} frozen parameter tensors, classifier {model.fc}")
    print("parameters that received gradients:", ", ".join(with_grad))
    print("parameters changed by optimizer.step():", ", ".join(changed))
    return {"with_grad": with_grad, "changed": changed, "n_params": n_params}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", help="a .npz file holding torchvision's resnet18 state dict")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.weights, args.seed)
