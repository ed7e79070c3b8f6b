"""Writes the PyTorch checkpoints tests/test_load_pytorch_files.py reads (run with PyTorch 2.13:
``python tests/data/make_pytorch_files.py``). Every value is made from ``arange``, so the
tests know them without PyTorch."""
import collections
import pathlib

import torch

HERE = pathlib.Path(__file__).parent


def main():
    base = torch.arange(12, dtype=torch.float32)
    lin = torch.nn.Linear(3, 2)
    with torch.no_grad():
        lin.weight.copy_(torch.arange(6.0).reshape(2, 3) / 10)
        lin.bias.copy_(torch.tensor([0.5, -0.5]))
    opt = torch.optim.Adam(lin.parameters(), lr=0.1)
    lin(torch.ones(1, 3)).sum().backward()
    opt.step()
    checkpoint = {
        "epoch": 3, "loss": 0.25, "name": "run", "model": lin.state_dict(), "optimizer": opt.state_dict(),
        "base": base, "view": base[2:8:2], "matrix_t": base.reshape(3, 4).t(),
        "param": torch.nn.Parameter(torch.arange(3, dtype=torch.float64)),
        "ints": torch.arange(4, dtype=torch.int64), "half": torch.arange(3, dtype=torch.float16),
        "flags": torch.tensor([True, False]), "cplx": torch.tensor([1 + 2j, -1j], dtype=torch.complex64),
        "size": torch.Size([2, 3]), "dtype": torch.float64, "device": torch.device("cpu"),
        "ordered": collections.OrderedDict(a=1, b=(2, 3)), "grad_leaf": torch.ones(2, requires_grad=True),
    }
    torch.save(checkpoint, HERE / "pytorch_checkpoint.pt")
    torch.save(lin, HERE / "pytorch_whole_module.pt")


if __name__ == "__main__":
    main()
