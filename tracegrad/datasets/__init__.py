"""Small datasets that ship with tracegrad, so examples and tests train on real data offline.

``digits.npz`` holds the 8x8 handwritten digits (1797 images, 10 classes): scikit-learn's
copy of the test set of the UCI "Optical Recognition of Handwritten Digits" data by
E. Alpaydin and C. Kaynak (1998), licensed CC BY 4.0. Each pixel counts the "on" pixels of
a 4x4 block of a 32x32 bitmap (0..16). ``make_digits.py`` regenerates the file from the CSV.
"""
import os

from .. import backend
from ..runtime.creation import from_numpy

__all__ = ["DIGITS_PATH", "digits_split", "load_digits"]

DIGITS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "digits.npz")


def _raw_digits():
    """(images uint8 (N, 8, 8) in 0..16, labels int64 (N,)) as stored."""
    with backend.cpu.load(DIGITS_PATH, allow_pickle=False) as archive:
        return archive["images"], archive["labels"]


def load_digits(as_tensor=True):
    """All 1797 digits as ``(images, labels)``: images float32 of shape (N, 1, 8, 8) scaled
    from 0..16 to [0, 1], labels int64 in 0..9. Tensors, or NumPy arrays with
    ``as_tensor=False``; fresh each call, so changing them changes nothing else."""
    images, labels = _raw_digits()
    images = (images.astype(backend.cpu.float32) / 16.0)[:, None]
    return (from_numpy(images), from_numpy(labels)) if as_tensor else (images, labels)


def digits_split(seed=0, test_fraction=0.2, as_tensor=True):
    """A fixed train/test split of :func:`load_digits`: ``((x_train, y_train), (x_test, y_test))``.

    Stratified: from each class, ``round(test_fraction * class size)`` images chosen by a
    NumPy ``default_rng(seed)`` permutation go to the test set, so the same ``seed`` gives
    the same split on every machine and each class is represented in proportion. Both
    sets keep the original order. (The 1797 images come from 13 writers, who appear on
    both sides of any random split, so test accuracy here is an optimistic estimate.)
    """
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must lie strictly between 0 and 1, got {test_fraction}")
    xp = backend.cpu
    images, labels = load_digits(as_tensor=False)
    rng = xp.random.default_rng(seed)
    test = xp.zeros(len(labels), dtype=bool)
    for c in range(int(labels.max()) + 1):
        members = xp.flatnonzero(labels == c)
        test[rng.permutation(members)[:round(test_fraction * len(members))]] = True
    parts = ((images[~test], labels[~test]), (images[test], labels[test]))
    if as_tensor:
        parts = tuple((from_numpy(x), from_numpy(y)) for x, y in parts)
    return parts
