"""Regenerate ``digits.npz`` from scikit-learn's ``digits.csv.gz`` (not imported by tracegrad).

The CSV is scikit-learn's copy (``sklearn/datasets/data/digits.csv.gz``) of the test set of
the UCI "Optical Recognition of Handwritten Digits" data by E. Alpaydin and C. Kaynak
(1998, CC BY 4.0): 1797 rows of 64 pixel counts in 0..16 (an 8x8 image, row by row)
followed by the label 0..9. The archive stores ``images`` uint8 (1797, 8, 8) and ``labels``
int64 (1797,), deflated, with fixed timestamps so that rerunning gives the same bytes::

    python -m tracegrad.datasets.make_digits path/to/digits.csv.gz
"""
import gzip
import os
import sys
import zipfile

from tracegrad.backend import cpu as xp  # NumPy

npy = xp.lib.format

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "digits.npz")


def read_csv(path):
    with gzip.open(path, "rt") as fh:
        table = xp.loadtxt(fh, delimiter=",", dtype=xp.int64)
    if table.shape != (1797, 65):
        raise ValueError(f"{path}: expected 1797 rows of 65 values, got {table.shape}")
    pixels, labels = table[:, :64], table[:, 64]
    if pixels.min() < 0 or pixels.max() > 16 or labels.min() < 0 or labels.max() > 9:
        raise ValueError(f"{path}: pixels must lie in 0..16 and labels in 0..9")
    return pixels.astype(xp.uint8).reshape(-1, 8, 8), labels


def write_npz(path, arrays):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, arr in arrays.items():
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(info, "w") as member:
                npy.write_array(member, arr, allow_pickle=False)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (1, 2):
        raise SystemExit("usage: python -m tracegrad.datasets.make_digits digits.csv.gz [out.npz]")
    images, labels = read_csv(argv[0])
    out = argv[1] if len(argv) == 2 else OUT
    write_npz(out, {"images": images, "labels": labels})
    print(f"wrote {out}: {len(labels)} images, {os.path.getsize(out)} bytes")


if __name__ == "__main__":
    main()
