"""examples/train_digits.py trains to >= 97% test accuracy, repeatably, printing one line per epoch."""
import importlib.util
import pathlib
import re

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_digits.py"
LINE = re.compile(r"epoch (\d+)/(\d+)  loss \d+\.\d{3}  test accuracy \d+\.\d%  \(\d+\.\d s\)")


def load_example():
    spec = importlib.util.spec_from_file_location("train_digits", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_train_digits_reaches_97_percent():
    lines = []
    acc = load_example().main(epochs=10, seed=0, log=lines.append)
    assert acc >= 0.97, lines
    assert len(lines) == 10 and all(LINE.fullmatch(line) for line in lines), lines
    assert [LINE.fullmatch(line).groups() for line in lines][-1] == ("10", "10")
    assert f"test accuracy {100 * acc:.1f}%" in lines[-1]


def test_train_digits_is_repeatable():
    def first_epoch():
        lines = []
        load_example().main(epochs=1, seed=3, log=lines.append)
        return lines[0].rsplit("(", 1)[0]  # all but the timing

    assert first_epoch() == first_epoch()
