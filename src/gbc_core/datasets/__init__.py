"""Small real datasets shipped with the package (see ``data/NOTICE`` for sources)."""

import gzip
from importlib import resources

import numpy as np

__all__ = ["load_higgs_sample"]


def _read_tsv_gz(name):
    with resources.files(__package__).joinpath("data", name).open("rb") as raw:
        with gzip.open(raw, "rt") as fh:
            data = np.loadtxt(fh, delimiter="\t", dtype=np.float64)
    return data[:, 1:], data[:, 0].astype(np.int64)


def load_higgs_sample():
    """The HIGGS sample of the LightGBM examples: 7,000 training and 500 test rows.

    Returns
    -------
    X_train : ndarray of shape (7000, 28)
    y_train : ndarray of shape (7000,), labels in {0, 1}
    X_test : ndarray of shape (500, 28)
    y_test : ndarray of shape (500,)

    Examples
    --------
    >>> from gbc_core.datasets import load_higgs_sample
    >>> X_train, y_train, X_test, y_test = load_higgs_sample()
    >>> X_train.shape, X_test.shape, sorted(set(y_train.tolist()))
    ((7000, 28), (500, 28), [0, 1])
    """
    X_train, y_train = _read_tsv_gz("higgs_sample.train.gz")
    X_test, y_test = _read_tsv_gz("higgs_sample.test.gz")
    return X_train, y_train, X_test, y_test
