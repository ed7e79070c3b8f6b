"""tracegrad.datasets: the shipped digits archive, load_digits and the fixed split."""
import gzip
import hashlib
import os
import pathlib

import numpy as np
import pytest

import tracegrad
from tracegrad.datasets import DIGITS_PATH, digits_split, load_digits, make_digits

ROOT = pathlib.Path(__file__).resolve().parents[1]
DIGEST = "65e5b4619795efb4"  # sha256 of images + labels bytes, first 16 hex digits
PINNED_TEST_LABELS = [5, 9, 2, 4, 6, 7, 9, 3, 4, 6, 8, 5]  # the default split's first test labels


def test_archive_is_small_and_holds_what_the_docs_say():
    assert os.path.getsize(DIGITS_PATH) < 100_000
    with np.load(DIGITS_PATH, allow_pickle=False) as z:
        assert sorted(z.files) == ["images", "labels"]
        images, labels = z["images"], z["labels"]
    assert images.dtype == np.uint8 and images.shape == (1797, 8, 8)
    assert labels.dtype == np.int64 and labels.shape == (1797,)
    assert images.min() == 0 and images.max() == 16
    assert np.bincount(labels).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    # The first digit of scikit-learn's copy (a zero) and a checksum of the rest.
    assert labels[0] == 0 and images[0, 1].tolist() == [0, 0, 13, 15, 10, 15, 5, 0]
    assert hashlib.sha256(images.tobytes() + labels.tobytes()).hexdigest()[:16] == DIGEST


def test_pyproject_ships_the_archive():
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["tracegrad.datasets"]
    assert any(pathlib.PurePath("digits.npz").match(p) for p in patterns)


def test_load_digits_tensors():
    x, y = load_digits()
    assert isinstance(x, tracegrad.Tensor) and x.dtype == tracegrad.float32 and tuple(x.shape) == (1797, 1, 8, 8)
    assert y.dtype == tracegrad.int64 and tuple(y.shape) == (1797,)
    xs = x.numpy()
    assert xs.min() == 0.0 and xs.max() == 1.0
    np.testing.assert_array_equal(xs * 16, np.round(xs * 16))  # multiples of 1/16
    assert not x.requires_grad and x.is_contiguous()


def test_load_digits_arrays_are_fresh():
    x, y = load_digits(as_tensor=False)
    assert isinstance(x, np.ndarray) and x.dtype == np.float32 and isinstance(y, np.ndarray)
    x[:] = 5
    y[:] = 5
    x2, y2 = load_digits(as_tensor=False)
    assert x2.max() == 1.0 and y2.max() == 9


def test_split_is_stratified_disjoint_and_complete():
    (xtr, ytr), (xte, yte) = digits_split(as_tensor=False)
    assert len(ytr) + len(yte) == 1797
    counts = np.bincount(ytr, minlength=10) + np.bincount(yte, minlength=10)
    assert counts.tolist() == np.bincount(load_digits(as_tensor=False)[1]).tolist()
    per_class = np.bincount(load_digits(as_tensor=False)[1])
    assert np.bincount(yte).tolist() == [round(0.2 * n) for n in per_class]
    # every image lands exactly once: the multiset of (image, label) rows is preserved
    x, y = load_digits(as_tensor=False)

    def rows(xs, ys):
        return sorted(r.tobytes() + bytes([int(label)]) for r, label in zip(xs.reshape(len(ys), -1), ys))
    assert rows(np.concatenate([xtr, xte]), np.concatenate([ytr, yte])) == rows(x, y)


def test_split_is_fixed_by_the_seed():
    _, (b, lb) = digits_split(seed=0, as_tensor=False)
    _, (b2, lb2) = digits_split(seed=0, as_tensor=False)
    np.testing.assert_array_equal(b, b2)
    np.testing.assert_array_equal(lb, lb2)
    (_, _), (c, _) = digits_split(seed=1, as_tensor=False)
    assert not np.array_equal(b, c)
    # pinned: the default split must not drift between versions
    assert lb[:12].tolist() == PINNED_TEST_LABELS


def test_split_tensors_and_fraction():
    (xtr, _), (_, yte) = digits_split(test_fraction=0.5)
    assert isinstance(xtr, tracegrad.Tensor) and tuple(xtr.shape[1:]) == (1, 8, 8)
    assert abs(len(yte) - 1797 / 2) < 10
    for bad in (0, 1, -0.1, 1.5):
        with pytest.raises(ValueError, match="test_fraction must lie strictly between 0 and 1"):
            digits_split(test_fraction=bad)


def test_make_digits_writes_the_same_format(tmp_path):
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 17, size=(1797, 64))
    labels = rng.integers(0, 10, size=1797)
    src = tmp_path / "digits.csv.gz"
    with gzip.open(src, "wt") as fh:
        np.savetxt(fh, np.column_stack([pixels, labels]), fmt="%d", delimiter=",")
    out = tmp_path / "out.npz"
    make_digits.main([str(src), str(out)])
    first = out.read_bytes()
    make_digits.main([str(src), str(out)])
    assert out.read_bytes() == first  # reproducible bytes
    with np.load(out, allow_pickle=False) as z:
        np.testing.assert_array_equal(z["images"], pixels.reshape(-1, 8, 8).astype(np.uint8))
        assert z["images"].dtype == np.uint8 and z["labels"].dtype == np.int64
        np.testing.assert_array_equal(z["labels"], labels)


def test_make_digits_refuses_bad_csv(tmp_path):
    src = tmp_path / "bad.csv.gz"
    with gzip.open(src, "wt") as fh:
        fh.write("1,2,3\n")
    with pytest.raises(ValueError, match="expected 1797 rows of 65 values"):
        make_digits.read_csv(src)
