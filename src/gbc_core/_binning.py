"""The binning layer: map float32 features to at most 256 small integers (uint8).

A ``BinMapper`` learns, per feature, ascending thresholds; a non-NaN value ``x`` of
feature ``j`` goes to bin ``b`` = the number of thresholds below ``x`` (compared as
float64), NaN to the bin ``missing_bin`` (= ``max_bins``). So ``x <= thresholds[j][b]``
iff the bin of ``x`` is at most ``b``, and a split "bin <= b" is the split
"x <= thresholds[j][b]" of the model format, with the predictor's rule on float32 x
(``x <= `` the largest float32 not above the threshold).

Every threshold is the exact split finder's threshold between two consecutive
distinct values (``midpoint`` in ``_common.pxd``: lo/2 + hi/2 in float64; lo where
that rounds to hi or overflows; -DBL_MAX for lo = -inf). A feature with at most
``max_bins`` distinct values gets one bin per value (all the midpoints), so a
histogram search has the candidate splits of the exact search; ``bin_values`` gives
the value of each bin, from which the exact search's threshold in a node follows
(``midpoint`` of the node's nearest values either side of the split). A
feature with more gets at most ``max_bins - 1`` thresholds at quantiles of its
values (or of a subsample of ``subsample`` of them, drawn with a seeded NumPy
Generator), each moved to the end of the run of equal values it falls in, as
scikit-learn's ``_find_binning_thresholds`` does with its percentiles.

The same mapper bins the training data, the eval sets and the validation split. For
data spread over processes, each partition gives a small, picklable ``BinSketch``
(``BinMapper.sketch``) and ``BinMapper.from_sketches`` merges them; where every
feature has at most ``max_bins`` distinct values in all, the result is the mapper a
fit on the concatenated data gives, whatever the order and number of partitions.
"""

import numbers
import operator

import numpy as np

from ._binning_kernels import (
    map_to_bins,
    map_to_bins_csc,
    midpoints,
    scan_distinct,
    scan_distinct_csc,
    sorted_sample,
    sorted_sample_csc,
)
from ._validation import is_sparse_matrix, sparse_arrays

MISSING_BIN_DOC = "NaN goes to bin index max_bins (255 with the default)"

#: The largest ``max_bins``: bins are uint8 and the missing bin is ``max_bins``.
MAX_BINS = 255

#: The most points a sketch keeps per feature with more than ``MAX_BINS`` distinct
#: values (a quantile summary: rank error at most 1 / SKETCH_POINTS of the partition).
SKETCH_POINTS = 2048


def _check_int(value, name, low, high=None):
    """``value`` as an int in [low, high], or a ValueError/TypeError naming it."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    value = operator.index(value)
    if value < low or (high is not None and value > high):
        bounds = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be an int {bounds}, got {value}")
    return value


class _Columns:
    """Sparse columns (a checked float32 CSC matrix, see ``check_features``) as the
    kernels take them: ``data``, ``indices``, ``indptr``, ``shape``."""

    def __init__(self, X):
        self.data, self.indices, self.indptr = sparse_arrays(X)
        self.shape = X.shape


def _check_X(X, n_features=None):
    """X as a 2-D float32 array with C or Fortran layout (others are copied to
    Fortran order, values unchanged), or sparse columns (``_Columns``) of a float32
    CSC matrix, or a clear error."""
    if is_sparse_matrix(X):
        if X.format != "csc" or X.dtype != np.float32:
            raise TypeError(f"a sparse X must be a float32 CSC matrix, got {X.format} "
                            f"of {X.dtype}")
        if n_features is not None and X.shape[1] != n_features:
            raise ValueError(
                f"X has {X.shape[1]} features, but the BinMapper was fitted with "
                f"{n_features} features"
            )
        return _Columns(X)
    if not isinstance(X, np.ndarray):
        raise TypeError(
            f"X must be a NumPy float32 array of shape (n_samples, n_features), got "
            f"{type(X).__name__}"
        )
    if X.dtype != np.float32:
        raise TypeError(
            f"X must have dtype float32 (NaN marks a missing value), got {X.dtype}"
        )
    if X.ndim != 2:
        raise ValueError(
            f"X must be 2-D (n_samples, n_features), got an array of shape {X.shape}"
        )
    if X.shape[1] == 0:
        raise ValueError(f"X has no feature (shape {X.shape}); at least one is required")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(
            f"X has {X.shape[1]} features, but the BinMapper was fitted with "
            f"{n_features} features"
        )
    if not (X.flags.c_contiguous or X.flags.f_contiguous):
        X = np.asfortranarray(X)
    return X


def _scan(X, cap, n_threads):
    """Distinct values (up to ``cap``), their counts, and non-NaN counts per feature."""
    d = X.shape[1]
    values = np.empty((d, cap), dtype=np.float32)
    counts = np.empty((d, cap), dtype=np.int64)
    n_distinct = np.empty(d, dtype=np.int32)
    n_valid = np.empty(d, dtype=np.int64)
    if isinstance(X, _Columns):
        scan_distinct_csc(X.data, X.indices, X.indptr, X.shape[0], values, counts,
                          n_distinct, n_valid, n_threads)
    else:
        scan_distinct(X, values, counts, n_distinct, n_valid, n_threads)
    return values, counts, n_distinct, n_valid


def _sample_ranks(n_valid, subsample, random_state):
    """The ranks (ascending) of the ``subsample`` values kept among ``n_valid``
    non-NaN values: drawn without replacement by a Generator seeded with
    (random_state, n_valid), so features with as many non-NaN values share them."""
    rng = np.random.default_rng([random_state, int(n_valid)])
    ranks = rng.choice(int(n_valid), size=subsample, replace=False)
    ranks.sort()
    return ranks.astype(np.int64, copy=False)


#: Values the sorted samples of a group of features hold at once (64 MB).
SAMPLE_BUFFER = 1 << 24


def _sorted_samples(X, features, n_valid, subsample, random_state, n_threads):
    """For each feature of ``features``: its non-NaN values (-0.0 as 0.0), or
    ``subsample`` of them when it has more, sorted.

    Yields (feature, float32 array) in the order of ``features``; a group of features
    is sampled at once, in parallel, in a buffer of at most ``SAMPLE_BUFFER`` values
    that the next group reuses (copy what must outlive the next step).
    """
    features = np.asarray(features, dtype=np.int32)
    if features.size == 0:
        return
    take = np.minimum(n_valid[features], subsample).astype(np.int64)
    width = max(int(take.max()), 1)
    group = max(1, SAMPLE_BUFFER // width)
    out = np.empty((min(group, features.size), width), dtype=np.float32)
    # The kernels' sort buffers, allocated here with ``out`` (before the ranks'
    # temporaries are freed: the allocator then returns both to the system when
    # they are freed, instead of keeping them resident in its heap).
    keys = np.empty(2 * max(1, min(int(n_threads), out.shape[0])) * width, dtype=np.uint32)
    for lo in range(0, features.size, group):
        chunk = features[lo:lo + group]
        sets = {}
        rank_set = np.full(chunk.size, -1, dtype=np.int32)
        for i, f in enumerate(chunk):
            if n_valid[f] > subsample:
                rank_set[i] = sets.setdefault(int(n_valid[f]), len(sets))
        ranks = np.empty((max(len(sets), 1), subsample if sets else 1), dtype=np.int64)
        for nv, s in sets.items():
            ranks[s] = _sample_ranks(nv, subsample, random_state)
        if isinstance(X, _Columns):
            sorted_sample_csc(X.data, X.indices, X.indptr, X.shape[0], chunk, ranks,
                              rank_set, take[lo:lo + group], out, keys, n_threads)
        else:
            sorted_sample(X, chunk, ranks, rank_set, take[lo:lo + group],
                          n_valid[chunk], out, keys, n_threads)
        for i, f in enumerate(chunk):
            yield f, out[i, : take[lo + i]]


def _distinct_thresholds(values):
    """The thresholds between consecutive distinct sorted float32 ``values``."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    return midpoints(values[:-1], values[1:])


def _quantile_thresholds(values, weights, max_bins):
    """At most ``max_bins - 1`` thresholds at quantiles of sorted ``values``.

    Parameters
    ----------
    values : float32 array, ascending (repeats allowed, -0.0 written as 0.0)
    weights : float64 array of the same length, or None (each value counts once)
        How many data values each value stands for.
    max_bins : int

    Returns
    -------
    float64 array, strictly increasing
        For i = 1 .. max_bins - 1, the target weight i * W / max_bins (W the total
        weight) falls on a value; the threshold is the one after the run of values
        equal to it (the midpoint of its last copy and the next larger value), none
        after the largest value; repeated thresholds are kept once. Index
        arithmetic and sequential sums only, so the thresholds are the same on every
        machine.
    """
    n = values.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.float64)
    if weights is None:
        # The cumulative counts are 1 .. n: the first at or above a target t > 0 is
        # at index ceil(t) - 1 (exact in float64), without an array of n counts.
        targets = np.arange(1, max_bins, dtype=np.float64) * float(n) / max_bins
        at = np.minimum(np.ceil(targets).astype(np.intp) - 1, n - 1)
    else:
        cum = np.cumsum(weights, dtype=np.float64)  # sequential: a fixed order
        targets = np.arange(1, max_bins, dtype=np.float64) * cum[-1] / max_bins
        at = np.minimum(np.searchsorted(cum, targets, side="left"), n - 1)
    ends = np.unique(np.searchsorted(values, values[at], side="right"))
    ends = ends[ends < n]
    lo = np.ascontiguousarray(values[ends - 1])
    hi = np.ascontiguousarray(values[ends])
    return midpoints(lo, hi)


class BinSketch:
    """A summary of the values of one partition of the rows, for
    ``BinMapper.from_sketches`` (picklable; at most ``SKETCH_POINTS`` values and
    weights per feature).

    Attributes
    ----------
    n_samples : int
        Rows of the partition.
    n_features : int
    n_valid : int64 array of shape (n_features,)
        Non-NaN values of each feature in the partition.
    exact : bool array of shape (n_features,)
        True where ``values[j]`` are all the distinct values of feature ``j`` in the
        partition (at most ``MAX_BINS``) and ``weights[j]`` their counts.
    values : list of float32 arrays
        Ascending values (-0.0 written as 0.0).
    weights : list of float64 arrays
        How many of the partition's values each value stands for (a quantile
        summary where ``exact`` is False).
    """

    def __init__(self, n_samples, n_valid, exact, values, weights):
        self.n_samples = int(n_samples)
        self.n_features = len(values)
        self.n_valid = np.asarray(n_valid, dtype=np.int64)
        self.exact = np.asarray(exact, dtype=bool)
        self.values = list(values)
        self.weights = list(weights)

    def _check(self, n_features):
        """Raise ValueError unless the sketch is well formed for ``n_features``."""
        if self.n_features != n_features:
            raise ValueError(
                f"the sketches have different numbers of features ({self.n_features} "
                f"and {n_features})"
            )
        if self.n_valid.shape != (n_features,) or self.exact.shape != (n_features,):
            raise ValueError("a BinSketch's n_valid and exact must have one entry per feature")
        for j, (v, w) in enumerate(zip(self.values, self.weights)):
            ok = (
                isinstance(v, np.ndarray) and isinstance(w, np.ndarray)
                and v.dtype == np.float32 and w.dtype == np.float64
                and v.ndim == 1 and v.shape == w.shape
                and v.size <= max(SKETCH_POINTS, MAX_BINS)
                and not np.isnan(v).any() and bool(np.all(v[1:] >= v[:-1]))
                and bool(np.all(np.isfinite(w) & (w >= 0)))
            )
            if not ok:
                raise ValueError(
                    f"BinSketch feature {j}: values must be an ascending float32 array "
                    f"without NaN (at most {SKETCH_POINTS}) and weights a float64 array "
                    f"of finite non-negative numbers of the same length"
                )

    def __repr__(self):
        return (f"BinSketch(n_samples={self.n_samples}, n_features={self.n_features}, "
                f"exact features={int(self.exact.sum())})")


class BinMapper:
    """Map float32 features to uint8 bins (histogram split search).

    Parameters
    ----------
    max_bins : int, default=255
        Bins for non-missing values, 2 .. 255. NaN goes to bin index ``max_bins``
        (255 with the default).
    subsample : int, default=200_000
        Thresholds of a feature with more than ``max_bins`` distinct values are
        quantiles of at most this many of its non-NaN values, drawn without
        replacement.
    random_state : int, default=0
        Seeds the subsample (a NumPy Generator seeded with (random_state,
        number of non-NaN values)).

    Attributes
    ----------
    thresholds : list of float64 arrays, one per feature
        Strictly increasing; feature ``j`` has ``len(thresholds[j]) + 1`` non-missing
        bins; a non-NaN ``x`` goes to bin ``b`` = the number of thresholds below
        ``float64(x)``, so ``x <= thresholds[j][b]`` iff its bin is at most ``b``.
    n_bins_non_missing : int32 array of shape (n_features,)
        ``len(thresholds[j]) + 1``.
    missing_bin : int
        ``max_bins``, the bin of NaN for every feature.
    bin_values : list, one per feature
        For a feature binned exactly (at most ``max_bins`` distinct values): its
        distinct values, ascending, float32 (-0.0 written as 0.0), one per bin, so
        ``thresholds[j][b] == midpoint(bin_values[j][b], bin_values[j][b + 1])``;
        None for a feature binned by quantiles.
    n_features_in_ : int
    """

    def __init__(self, max_bins=255, subsample=200_000, random_state=0):
        self.max_bins = _check_int(max_bins, "max_bins", 2, MAX_BINS)
        self.subsample = _check_int(subsample, "subsample", 1)
        self.random_state = _check_int(random_state, "random_state", 0)

    def __repr__(self):
        return (f"BinMapper(max_bins={self.max_bins}, subsample={self.subsample}, "
                f"random_state={self.random_state})")

    def fit(self, X, n_threads=1, n_categories=None):
        """Learn the thresholds of every feature of ``X``.

        Parameters
        ----------
        X : float32 array (n_samples, n_features), C or Fortran order, or float32 CSC
            NaN marks a missing value. Sparse columns are read as they are (an
            implicit zero is the value 0.0, counted, not visited): the thresholds
            of the same data dense.
        n_threads : int, default=1
            OpenMP threads; the thresholds do not depend on it.
        n_categories : int array of shape (n_features,), optional
            Per feature 0 (numeric) or its number of categories k (1 .. max_bins):
            its values are category codes 0 .. k-1, and code c goes to bin c
            (thresholds c + 1/2 whatever codes the rows hold; ``bin_values`` the
            codes), so ``n_bins_non_missing`` is k.

        Returns
        -------
        self
        """
        X = _check_X(X)
        n_threads = _check_int(n_threads, "n_threads", 1)
        values, _, n_distinct, n_valid = _scan(X, self.max_bins, n_threads)
        d = X.shape[1]
        thresholds = [None] * d
        bin_values = [None] * d
        many = np.flatnonzero(n_distinct > self.max_bins)
        for j in np.flatnonzero(n_distinct <= self.max_bins):
            distinct = values[j, : n_distinct[j]].copy()
            bin_values[j] = distinct
            thresholds[j] = _distinct_thresholds(distinct)
        for j, sample in _sorted_samples(X, many, n_valid, self.subsample,
                                         self.random_state, n_threads):
            thresholds[j] = _quantile_thresholds(sample, None, self.max_bins)
        _category_bins(n_categories, self.max_bins, thresholds, bin_values)
        self._set(thresholds, bin_values)
        return self

    def _set(self, thresholds, bin_values):
        """Store the learned thresholds (and the packed copy the kernel reads)."""
        self.thresholds = thresholds
        self.bin_values = bin_values
        self.n_features_in_ = len(thresholds)
        self.n_bins_non_missing = np.array([t.size + 1 for t in thresholds], dtype=np.int32)
        self.missing_bin = self.max_bins
        self._offsets = np.zeros(len(thresholds) + 1, dtype=np.int64)
        np.cumsum([t.size for t in thresholds], out=self._offsets[1:])
        # One element of padding: feature f's thresholds start at a valid index.
        self._packed = np.concatenate(thresholds + [np.array([np.inf])]).astype(np.float64)

    def transform(self, X, n_threads=1):
        """The bins of ``X``.

        Parameters
        ----------
        X : float32 array (n_samples, n_features), C or Fortran order, or float32 CSC
            With the features the mapper was fitted with. NaN marks a missing
            value; a sparse column's implicit zeros go to the bin of 0.0.
        n_threads : int, default=1
            OpenMP threads; the bins do not depend on it.

        Returns
        -------
        uint8 array of shape (n_samples, n_features), Fortran order
            The bin of every value (one byte per value); NaN goes to ``missing_bin``.
        """
        if not hasattr(self, "thresholds"):
            raise ValueError(
                "this BinMapper is not fitted yet: call fit(X) or BinMapper.from_sketches"
            )
        X = _check_X(X, self.n_features_in_)
        n_threads = _check_int(n_threads, "n_threads", 1)
        out = np.empty(X.shape, dtype=np.uint8, order="F")
        if isinstance(X, _Columns):
            map_to_bins_csc(X.data, X.indices, X.indptr, self._packed, self._offsets,
                            self.missing_bin, out, n_threads)
        else:
            map_to_bins(X, self._packed, self._offsets, self.missing_bin, out, n_threads)
        return out

    def sketch(self, X):
        """A summary of the rows ``X`` (one partition of the data), for
        ``from_sketches``; the mapper need not be fitted.

        Per feature: its distinct values and their counts where there are at most
        ``MAX_BINS`` (255) of them, else a quantile summary of at most
        ``SKETCH_POINTS`` values with weights, taken from the sorted subsample that
        ``fit`` would use (``subsample``, ``random_state``).

        Parameters
        ----------
        X : float32 array of shape (n_samples, n_features), C or Fortran order
            May have no row.

        Returns
        -------
        BinSketch
        """
        X = _check_X(X)
        values, counts, n_distinct, n_valid = _scan(X, MAX_BINS, 1)
        d = X.shape[1]
        exact = n_distinct <= MAX_BINS
        vals = [None] * d
        weights = [None] * d
        for j in np.flatnonzero(exact):
            vals[j] = values[j, : n_distinct[j]].copy()
            weights[j] = counts[j, : n_distinct[j]].astype(np.float64)
        many = np.flatnonzero(~exact)
        for j, sample in _sorted_samples(X, many, n_valid, self.subsample,
                                         self.random_state, 1):
            m = sample.size
            scale = float(n_valid[j]) / m
            if m <= SKETCH_POINTS:
                vals[j] = sample.copy()
                weights[j] = np.full(m, scale)
            else:
                # The value at rank ceil(k m / S) - 1 stands for the ranks since the
                # previous point: a rank error below m / S.
                ranks = (np.arange(1, SKETCH_POINTS + 1, dtype=np.int64) * m
                         + SKETCH_POINTS - 1) // SKETCH_POINTS - 1
                vals[j] = sample[ranks]
                weights[j] = np.diff(ranks, prepend=-1).astype(np.float64) * scale
        return BinSketch(X.shape[0], n_valid, exact, vals, weights)

    @classmethod
    def from_sketches(cls, sketches, max_bins=255, n_categories=None):
        """The mapper of the data summarised by ``sketches`` (one per partition).

        Where a feature has at most ``max_bins`` distinct values in all the
        partitions together, its thresholds are the midpoints of those values: the
        mapper equals ``BinMapper(max_bins).fit`` of the concatenated partitions
        for every such feature, whatever the order and number of sketches (empty
        partitions included). Otherwise the thresholds are quantiles (the rule of
        ``fit``) of the merged summaries: approximate, deterministic and independent
        of the order of the sketches (the pooled values are sorted by value, then
        weight, before their weights are added up). They are ``fit``'s quantiles
        too where every partition has at most 255 distinct values of the feature
        (its sketch holds exact counts) and the data at most ``subsample`` non-NaN
        values of it.

        Parameters
        ----------
        sketches : iterable of BinSketch
            At least one, all with the same number of features.
        max_bins : int, default=255
        n_categories : int array of shape (n_features,), optional
            As for :meth:`fit`: a categorical feature's codes are its bins.

        Returns
        -------
        BinMapper
        """
        mapper = cls(max_bins=max_bins)
        sketches = list(sketches)
        if not sketches:
            raise ValueError("from_sketches needs at least one BinSketch")
        for s in sketches:
            if not isinstance(s, BinSketch):
                raise TypeError(f"from_sketches takes BinSketch objects, got {type(s).__name__}")
        d = sketches[0].n_features
        for s in sketches:
            s._check(d)
        thresholds = [None] * d
        bin_values = [None] * d
        for j in range(d):
            vals = np.concatenate([s.values[j] for s in sketches])
            weights = np.concatenate([s.weights[j] for s in sketches])
            if all(s.exact[j] for s in sketches):
                distinct = np.unique(vals)
                if distinct.size <= max_bins:
                    bin_values[j] = distinct
                    thresholds[j] = _distinct_thresholds(distinct)
                    continue
            order = np.lexsort((weights, vals))
            thresholds[j] = _quantile_thresholds(vals[order], weights[order], max_bins)
        _category_bins(n_categories, max_bins, thresholds, bin_values)
        mapper._set(thresholds, bin_values)
        return mapper


def _category_bins(n_categories, max_bins, thresholds, bin_values):
    """Give each categorical feature (``n_categories[j]`` > 0 categories) its codes
    0 .. k-1 as bins: code c in bin c (thresholds c + 1/2), in place."""
    if n_categories is None:
        return
    d = len(thresholds)
    n_categories = np.asarray(n_categories, dtype=np.int64)
    if n_categories.shape != (d,) or (n_categories < 0).any() or (
            n_categories > max_bins).any():
        raise ValueError(f"n_categories must hold {d} counts in [0, {max_bins}]")
    for j in np.flatnonzero(n_categories):
        codes = np.arange(n_categories[j], dtype=np.float32)
        bin_values[j] = codes
        thresholds[j] = _distinct_thresholds(codes)
