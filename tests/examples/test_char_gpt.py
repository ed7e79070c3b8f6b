"""examples/char_gpt.py: a tiny GPT learns the sonnets' character statistics and samples text."""
import math

import pytest

from ._load import load_example


def tiny(example):
    return example.GPTConfig(block_size=32, n_layer=1, n_head=2, n_embd=32)


def test_char_gpt_learns_and_samples():
    example = load_example("char_gpt")
    lines = []
    loss, sample = example.main(iters=60, sample=40, config=tiny(example), log=lines.append,
                                show_progress=False)
    vocab = sorted(set(example.TEXT.read_text()))
    assert loss < math.log(len(vocab)) - 0.9, (loss, lines)  # well below a uniform guess
    assert lines[-1].startswith("step 60/60  loss ")
    assert len(sample) == 41 and set(sample) <= set(vocab) and sample[0] == "\n"


def test_char_gpt_is_repeatable():
    example = load_example("char_gpt")

    def run():
        return example.main(iters=5, sample=10, config=tiny(example), log=lambda _: None,
                            show_progress=False)

    assert run() == run()


def test_char_gpt_progress_bar_wraps_the_loader(capsys):
    pytest.importorskip("tqdm")
    example = load_example("char_gpt")
    example.main(iters=3, sample=1, config=tiny(example), log=lambda _: None)
    err = capsys.readouterr().err
    assert "training: 100%" in err and "3/3" in err
