"""Small module trees built the same way from ``tracegrad`` or ``torch`` (the oracle tests
compare the two), from tiny Module subclasses that do not depend on the library's layers."""


def classes(lib):
    """``Affine`` (weight, bias, a persistent and a non-persistent buffer), ``Scale`` (one
    scalar parameter, a ``None`` parameter slot) and ``Tree`` (nested, with a shared child)."""
    nn = lib.nn

    class Affine(nn.Module):
        def __init__(self, n_in, n_out, bias=True):
            super().__init__()
            w = lib.arange(n_out * n_in, dtype=lib.float32).reshape(n_out, n_in) / 10 - 0.3
            self.weight = nn.Parameter(w)
            if bias:
                self.bias = nn.Parameter(lib.linspace(-0.5, 0.5, n_out))
            else:
                self.register_parameter("bias", None)
            self.register_buffer("calls", lib.zeros(1))
            self.register_buffer("scratch", lib.zeros(2), persistent=False)

        def forward(self, x):
            y = x @ self.weight.t()
            return y + self.bias if self.bias is not None else y

        def extra_repr(self):
            return f"in_features={self.weight.shape[1]}, out_features={self.weight.shape[0]}, bias={self.bias is not None}"

    class Scale(nn.Module):
        def __init__(self, value=2.0):
            super().__init__()
            self.scale = nn.Parameter(lib.tensor(value))
            self.register_parameter("offset", None)

        def forward(self, x):
            return x * self.scale

    class Block(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.fc = Affine(n, n)
            self.act = Scale(0.5)

        def forward(self, x):
            return self.act(self.fc(x)).tanh()

        def extra_repr(self):
            return "two lines\nof extra repr"

    class Tree(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = Affine(3, 4)
            self.blocks = nn.Sequential(Block(4), Block(4))
            self.heads = nn.ModuleList([Affine(4, 2, bias=False), Scale()])
            self.shared = self.stem  # registered twice: iterated once
            self.gain = nn.Parameter(lib.tensor([1.5]))
            self.register_buffer("steps", lib.tensor(0))

        def forward(self, x):
            h = self.blocks(self.stem(x))
            return self.heads[1](self.heads[0](h)) * self.gain

    return Affine, Scale, Block, Tree
