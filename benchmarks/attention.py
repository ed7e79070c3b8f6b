"""Causal attention and a nanoGPT-style model, forward + backward: tracegrad against torch.

    python benchmarks/attention.py            # --quick for fewer rounds

- **sdpa**: ``F.scaled_dot_product_attention(q, k, v, is_causal=True)`` and its backward
  on (B, H, T, D) float32 tensors -- the fused rule of tracegrad/rules/attention.py
  against torch's fused CPU kernel.
- **block**: the qkv projection, head split, causal SDPA, head merge and output
  projection of one attention block, forward and backward.
- **gpt**: one AdamW step of a 2-layer nanoGPT (token + position embeddings, pre-norm
  blocks with causal self-attention and a GELU MLP, tied head, cross-entropy), written
  once and run by both libraries from the same weights.

tracegrad's optional compiled kernels (GELU, layer norm: tracegrad/rules/compiled.py) are
loaded at once, as a long run has them; ``--short-run`` keeps the default rule instead
(the NumPy kernels until their cost would have paid for loading Numba's, ~1 s), which
is what a run of a few seconds gets.

Each figure is the best of several timed rounds after a warm-up, in CPU time of this
process (``time.process_time``: steadier than wall time on a shared machine); so torch runs
on one thread (``torch.set_num_threads(1)``) and NumPy's BLAS must be one thread too
(``OPENBLAS_NUM_THREADS=1``), else the figures count every thread's time.
"""
import argparse
import math
import time

import numpy as np

import tracegrad


def sdpa_case(lib, B, H, T, D):
    F = lib.nn.functional
    rng = np.random.default_rng(0)
    q, k, v = (lib.tensor(rng.standard_normal((B, H, T, D)).astype("float32"), requires_grad=True)
               for _ in range(3))
    g = lib.tensor(rng.standard_normal((B, H, T, D)).astype("float32"))

    def step():
        F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g)
    return step


def block_case(lib, B, H, T, D):
    F = lib.nn.functional
    C = H * D
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((B, T, C)).astype("float32"), requires_grad=True)
    w_qkv = lib.tensor((rng.standard_normal((3 * C, C)) * 0.1).astype("float32"), requires_grad=True)
    w_out = lib.tensor((rng.standard_normal((C, C)) * 0.1).astype("float32"), requires_grad=True)

    def step():
        q, k, v = F.linear(x, w_qkv).split(C, 2)
        q, k, v = (t.view(B, T, H, D).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).contiguous().view(B, T, C)
        F.linear(y, w_out).square().mean().backward()
    return step


def gpt_case(lib, B, H, T, D, layers=2, vocab=64):
    nn, F = lib.nn, lib.nn.functional
    C = H * D

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.fc, self.proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

        def forward(self, x):
            q, k, v = self.c_attn(self.ln_1(x)).split(C, 2)
            q, k, v = (t.view(B, T, H, D).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).contiguous().view(B, T, C)
            x = x + self.c_proj(y)
            return x + self.proj(F.gelu(self.fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, C), nn.Embedding(T, C)
            self.h = nn.ModuleList([Block() for _ in range(layers)])
            self.ln_f = nn.LayerNorm(C)

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(lib.arange(T))
            for block in self.h:
                x = block(x)
            return F.linear(self.ln_f(x), self.wte.weight)

    lib.manual_seed(0)
    model = GPT()
    rng = np.random.default_rng(0)
    with lib.no_grad():  # the same weights in both libraries
        for p in model.parameters():
            p.copy_(lib.tensor((rng.standard_normal(tuple(p.shape)) * 0.02).astype("float32")))
    idx = lib.tensor(rng.integers(0, vocab, (B, T)))
    targets = lib.tensor(rng.integers(0, vocab, (B, T)))
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(idx).view(-1, vocab), targets.view(-1)).backward()
        opt.step()
    return step


def best_of(step, rounds, repeat):
    step()
    step()
    best = math.inf
    for _ in range(rounds):
        t = time.process_time()
        for _ in range(repeat):
            step()
        best = min(best, (time.process_time() - t) / repeat)
    return best * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--short-run", action="store_true",
                        help="keep the compiled kernels' loading rule (NumPy kernels until worth it)")
    args = parser.parse_args()
    if not args.short_run:
        from tracegrad.rules import compiled
        compiled.FIRST_LOAD_S = compiled.LOAD_S = 0.0
    rounds = 3 if args.quick else 7
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover
        torch = None
    shapes = [(8, 4, 64, 16), (4, 4, 256, 32)]
    for name, case in (("sdpa", sdpa_case), ("block", block_case), ("gpt", gpt_case)):
        for shape in shapes:
            ours = best_of(case(tracegrad, *shape), rounds, 5)
            line = f"{name:5s} B,H,T,D={shape}:  tracegrad {ours:8.2f} ms"
            if torch is not None:
                theirs = best_of(case(torch, *shape), rounds, 5)
                line += f"   torch {theirs:8.2f} ms   ratio {ours / theirs:.2f}x"
            print(line, flush=True)


if __name__ == "__main__":
    main()
