#!/usr/bin/env python3
"""Write data/digits/digits.csv from scikit-learn's copy of the UCI digits.

The 8x8 handwritten digits (1797 images, 64 pixels valued 0..16, 10 classes)
that sklearn.datasets.load_digits ships inside the package (no download).
One row per image in load_digits' order: p0..p63 (row-major pixels, the
image's row r, column c is p{8r+c}), then the label 0..9. Integers only, "\n"
line ends, so the file is byte-identical whatever the platform.

How to run (from the repository root):

    python3 -m venv .venv-data
    .venv-data/bin/pip install scikit-learn
    .venv-data/bin/python tools/data/export_digits.py

It prints the scikit-learn version and the sha256 of the file it wrote
(data/digits/README.md records both).
"""
import hashlib
import os
import sys

import numpy as np
import sklearn
from sklearn.datasets import load_digits

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "digits", "digits.csv")


def main():
    d = load_digits()
    x, y = d.data, d.target
    assert x.shape == (1797, 64) and y.shape == (1797,)
    xi = x.astype(np.int64)
    assert np.array_equal(xi, x), "pixels are not integers"
    assert xi.min() >= 0 and xi.max() <= 16
    assert set(y.tolist()) == set(range(10))
    lines = [",".join([f"p{i}" for i in range(64)] + ["label"])]
    for row, label in zip(xi, y):
        lines.append(",".join(str(int(v)) for v in row) + f",{int(label)}")
    text = ("\n".join(lines) + "\n").encode("ascii")
    out = os.path.normpath(OUT)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "wb") as f:
        f.write(text)
    print(f"scikit-learn {sklearn.__version__}, numpy {np.__version__}, python {sys.version.split()[0]}")
    print(f"wrote {out}: {len(y)} rows, sha256 {hashlib.sha256(text).hexdigest()}")


if __name__ == "__main__":
    main()
