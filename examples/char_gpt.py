"""A character-level GPT (nanoGPT's architecture) trained on a few of Shakespeare's sonnets.

    python examples/char_gpt.py [--iters 300] [--seed 0] [--sample 300]

PyTorch code with the import changed (``import tracegrad as torch``): a ``Dataset`` of
character windows, a shuffling ``DataLoader`` wrapped in a tqdm progress bar (when tqdm is
installed), causal self-attention through ``F.scaled_dot_product_attention``, pre-norm
blocks with GELU MLPs, weight tying, ``AdamW`` with a cosine schedule and gradient clipping,
then sampling with temperature and top-k through ``torch.multinomial``. The text ships
with the example (``examples/data/sonnets.txt``, public domain).
"""
import argparse
import math
import pathlib
from dataclasses import dataclass

import tracegrad as torch
from tracegrad import nn
from tracegrad.nn import functional as F
from tracegrad.utils.data import DataLoader, Dataset

TEXT = pathlib.Path(__file__).resolve().parent / "data" / "sonnets.txt"


@dataclass
class GPTConfig:
    block_size: int = 64
    vocab_size: int = 65
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    dropout: float = 0.0


class CharDataset(Dataset):
    """Every window of ``block_size + 1`` characters: inputs and the next-character targets."""

    def __init__(self, text, block_size):
        self.chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}
        self.data = torch.tensor([self.stoi[c] for c in text], dtype=torch.long)
        self.block_size = block_size

    def __len__(self):
        return len(self.data) - self.block_size

    def __getitem__(self, i):
        chunk = self.data[i:i + self.block_size + 1]
        return chunk[:-1], chunk[1:]

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head, self.n_embd, self.dropout = config.n_head, config.n_embd, config.dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0,
                                           is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = nn.Sequential(nn.Linear(config.n_embd, 4 * config.n_embd), nn.GELU(),
                                 nn.Linear(4 * config.n_embd, config.n_embd), nn.Dropout(config.dropout))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd)))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None):
        _, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
        for _ in range(max_new_tokens):
            logits, _ = self(idx[:, -self.config.block_size:])
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("inf")
            probs = F.softmax(logits, dim=-1)
            idx = torch.cat((idx, torch.multinomial(probs, num_samples=1, generator=generator)), dim=1)
        return idx


def progress(iterable, **kwargs):
    """tqdm's progress bar around ``iterable`` when tqdm is installed (it is optional)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, **kwargs)


def main(iters=300, seed=0, batch_size=16, lr=3e-3, sample=300, config=None, log=print,
         show_progress=True):
    """Train for ``iters`` steps; return (the mean loss of the last 20 steps, a sample)."""
    torch.manual_seed(seed)
    config = config or GPTConfig()
    dataset = CharDataset(TEXT.read_text(), config.block_size)
    config.vocab_size = len(dataset.chars)
    model = GPT(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.99), weight_decay=0.1)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=iters, eta_min=lr / 10)
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, drop_last=True,
                        generator=torch.Generator().manual_seed(seed))
    losses, step = [], 0
    bar = progress(range(iters), desc="training", disable=not show_progress)
    while step < iters:
        for x, y in loader:
            _, loss = model(x, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
            step += 1
            if hasattr(bar, "update"):
                bar.update(1)
                bar.set_postfix(loss=f"{loss.item():.3f}")
            if step % 100 == 0 or step == iters:
                log(f"step {step}/{iters}  loss {sum(losses[-20:]) / len(losses[-20:]):.3f}")
            if step == iters:
                break
    if hasattr(bar, "close"):
        bar.close()
    model.eval()
    start = torch.tensor([[dataset.stoi["\n"]]], dtype=torch.long)
    ids = model.generate(start, sample, temperature=0.8, top_k=10,
                         generator=torch.Generator().manual_seed(seed))
    return sum(losses[-20:]) / len(losses[-20:]), dataset.decode(ids[0].tolist())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sample", type=int, default=300)
    args = parser.parse_args()
    final, text = main(args.iters, args.seed, sample=args.sample)
    vocab = len(set(TEXT.read_text()))
    print(f"final loss {final:.3f} (a uniform guess scores {math.log(vocab):.2f})\n--- sample ---{text}")
