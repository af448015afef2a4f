"""Temporary stand-in for ``_binning.BinMapper`` (removed when the binning layer lands).

Same contract: per-feature increasing float64 thresholds (the exact finder's midpoints
between consecutive distinct float32 values; at most ``max_bins - 1`` of them, at
quantiles, when a feature has more distinct values), bin = number of thresholds below
x, NaN in bin ``max_bins``.
"""

import numpy as np


def _midpoints(lo, hi):
    lo = lo.astype(np.float64)
    hi = hi.astype(np.float64)
    t = lo / 2.0 + hi / 2.0
    bad = (t == hi) | np.isinf(t)
    t[bad] = lo[bad]
    t[np.isneginf(lo)] = -np.finfo(np.float64).max
    return t


class BinMapper:
    def __init__(self, max_bins=255, subsample=200_000, random_state=0):
        self.max_bins = max_bins
        self.subsample = subsample
        self.random_state = random_state

    def fit(self, X, n_threads=1):
        self.thresholds = []
        for f in range(X.shape[1]):
            x = X[:, f]
            values = np.unique(x[~np.isnan(x)])
            t = _midpoints(values[:-1], values[1:])
            if t.size > self.max_bins - 1:
                pick = np.linspace(0, t.size - 1, self.max_bins + 1)[1:-1]
                t = t[np.unique(np.round(pick).astype(np.int64))]
            self.thresholds.append(t)
        self.n_bins_non_missing = np.array([t.size + 1 for t in self.thresholds],
                                           dtype=np.int32)
        self.missing_bin = self.max_bins
        return self

    def transform(self, X, n_threads=1):
        out = np.empty(X.shape, dtype=np.uint8, order="F")
        for f, t in enumerate(self.thresholds):
            x = X[:, f].astype(np.float64)
            b = np.searchsorted(t, x, side="left")
            b[np.isnan(x)] = self.missing_bin
            out[:, f] = b
        return out
