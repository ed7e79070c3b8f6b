"""The README's "PyTorch programs" example runs as written: a DataLoader with worker
processes feeds a transformer layer, and vmap(grad) gives per-sample gradients."""
import pathlib

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _example():
    text = README.read_text()
    start = text.index("```python", text.index("## PyTorch programs")) + len("```python")
    return text[start:text.index("```", start)]


def test_readme_pytorch_programs_example_runs():
    scope = {}
    exec(compile(_example(), "README.md", "exec"), scope)
    per_sample, head = scope["per_sample"], scope["head"]
    assert tuple(per_sample["weight"].shape) == (256, 10, 32)
    assert tuple(per_sample["bias"].shape) == (256, 10)
    assert head.weight.grad is not None  # the training loop's backward reached the head
    # one sample's gradient equals autograd's on that sample alone
    import tracegrad as torch
    x, y = scope["x"], scope["y"]
    head.zero_grad()
    torch.nn.functional.cross_entropy(head(x[3:4, -1]), y[3:4]).backward()
    assert (per_sample["weight"][3] - head.weight.grad).abs().max().item() < 1e-6
