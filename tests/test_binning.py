"""The binning layer (``gbc_core._binning``) against a naive NumPy twin.

The twin: a non-NaN value ``x`` of feature ``j`` is in bin
``np.searchsorted(thresholds[j], float64(x), side="left")`` (the number of thresholds
below it), NaN in ``missing_bin``; a feature with at most ``max_bins`` distinct values
has as thresholds the exact split finder's midpoints of its consecutive distinct
values, computed here in plain Python floats; a feature with more has thresholds that
are each such a midpoint, at most ``max_bins - 1`` of them, with balanced bins.
Routing: for every value and threshold, the predictor's float32 test
``x <= float32_at_most(t)`` holds iff the bin is at most the threshold's index.
"""

import itertools
import pickle
import warnings

import numpy as np
import pytest

from gbc_core._binning import (
    MAX_BINS, MISSING_BIN_DOC, SKETCH_POINTS, BinMapper, BinSketch,
)
from gbc_core.paper import float32_at_most

F32 = np.float32
DBL_MAX = np.finfo(np.float64).max


def naive_midpoint(lo, hi):
    """The exact finder's threshold between consecutive distinct values lo < hi."""
    lo, hi = float(lo), float(hi)
    if lo == -np.inf:
        return -DBL_MAX
    t = lo / 2.0 + hi / 2.0
    if t == hi or np.isinf(t):
        t = lo
    return t


def naive_distinct(column):
    """Distinct non-NaN values, ascending, -0.0 and 0.0 as one (written 0.0)."""
    v = column[~np.isnan(column)].astype(np.float64)
    return np.unique(v + 0.0)  # x + 0.0 turns -0.0 into 0.0


def naive_thresholds(column):
    u = naive_distinct(column)
    return np.array([naive_midpoint(a, b) for a, b in zip(u[:-1], u[1:])], dtype=np.float64)


def naive_bins(X, mapper):
    out = np.empty(X.shape, dtype=np.int64)
    for j in range(X.shape[1]):
        x = X[:, j].astype(np.float64)
        b = np.searchsorted(mapper.thresholds[j], x, side="left")
        out[:, j] = np.where(np.isnan(x), mapper.missing_bin, b)
    return out


def assert_same_bits(a, b):
    """Float arrays equal bit for bit (so -0.0 differs from 0.0)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.uint64), b.view(np.uint64))


def t32(t):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # -DBL_MAX overflows to -inf
        return float32_at_most(t)


def assert_routing(X, mapper, bins):
    """x <= float32_at_most(t_b) (float32 compare, as the predictor) iff bin <= b."""
    for j in range(X.shape[1]):
        x = X[:, j]
        valid = ~np.isnan(x)
        for b, t in enumerate(mapper.thresholds[j]):
            left = x[valid] <= t32(t)
            np.testing.assert_array_equal(left, bins[valid, j] <= b,
                                          err_msg=f"feature {j}, threshold {b} = {t!r}")
        assert np.all(bins[~valid, j] == mapper.missing_bin)


def edge_matrix():
    """Columns with the edge cases: few distinct values of every kind."""
    one = F32(1.0)
    big = np.finfo(np.float32).max
    tiny = np.finfo(np.float32).smallest_subnormal
    cols = [
        [-0.0, 0.0, 1.0, -1.0, 0.0, -0.0],                          # -0.0 vs 0.0
        [-np.inf, 0.0, np.inf, 1.0, np.inf, -np.inf],               # +-inf are values
        [np.nextafter(one, F32(0)), one, np.nextafter(one, F32(2)), one, np.nan, 2.0],
        [big, np.inf, -big, -np.inf, big, np.nan],                   # overflow of lo/2 + hi/2
        [tiny, -tiny, 0.0, -0.0, 2 * tiny, np.nan],                  # subnormals
        [np.nan] * 6,                                                # all NaN
        [3.5] * 6,                                                   # constant
        [-2.0, np.nan, -2.0, np.nan, -2.0, -2.0],                    # constant with NaN
        [np.inf, np.inf, 5.0, 5.0, np.nan, 5.0],                     # lo, +inf
        [-np.inf, -np.inf, -np.inf, 7.0, 7.0, np.nan],               # -inf, hi
        [-np.inf, np.inf, -np.inf, np.inf, np.nan, np.nan],          # only +-inf
    ]
    return np.array(cols, dtype=np.float32).T.copy()


def test_missing_bin_doc_and_attributes():
    assert MISSING_BIN_DOC == "NaN goes to bin index max_bins (255 with the default)"
    m = BinMapper().fit(edge_matrix())
    assert m.missing_bin == 255 == MAX_BINS
    assert BinMapper(max_bins=7).fit(edge_matrix()).missing_bin == 7
    assert m.n_bins_non_missing.dtype == np.int32
    assert m.n_features_in_ == edge_matrix().shape[1]
    for j, t in enumerate(m.thresholds):
        assert t.dtype == np.float64 and t.ndim == 1
        assert np.all(np.diff(t) > 0)
        assert m.n_bins_non_missing[j] == t.size + 1


@pytest.mark.parametrize("max_bins", [2, 3, 255])
def test_few_distinct_values_give_the_exact_midpoints(max_bins):
    X = edge_matrix()
    m = BinMapper(max_bins=max_bins).fit(X)
    for j in range(X.shape[1]):
        expected = naive_thresholds(X[:, j])
        if expected.size + 1 > max_bins:
            continue  # more distinct values than bins: tested below
        assert_same_bits(m.thresholds[j], expected)
        assert_same_bits(m.bin_values[j], naive_distinct(X[:, j]))
    # The cases spelled out, so that the twin itself is checked.
    m = BinMapper().fit(X)
    assert_same_bits(m.thresholds[0], [-0.5, 0.5])                 # -0.0 and 0.0: one value
    assert_same_bits(m.thresholds[1], [-DBL_MAX, 0.5, 1.0])        # -inf | 0 | 1 | inf
    assert m.thresholds[5].size == 0 and m.thresholds[6].size == 0 and m.thresholds[7].size == 0
    assert_same_bits(m.thresholds[8], [5.0])                       # 5 | inf: threshold lo
    assert_same_bits(m.thresholds[10], [-DBL_MAX])                 # -inf | inf
    big = float(np.finfo(np.float32).max)
    assert_same_bits(m.thresholds[3], [-DBL_MAX, 0.0, big])


def test_transform_matches_the_twin_and_routes_like_the_predictor():
    X = edge_matrix()
    m = BinMapper().fit(X)
    bins = m.transform(X)
    assert bins.dtype == np.uint8 and bins.flags.f_contiguous and bins.shape == X.shape
    np.testing.assert_array_equal(bins, naive_bins(X, m))
    np.testing.assert_array_equal(bins[:, 5], 255)                  # all NaN
    np.testing.assert_array_equal(bins[:, 6], 0)                    # constant
    assert_routing(X, m, bins)


def test_values_equal_to_a_threshold_and_float32_neighbours():
    rng = np.random.default_rng(1)
    X = rng.integers(-20, 20, size=(500, 3)).astype(np.float32) / F32(4)
    m = BinMapper().fit(X)
    # New data: each threshold's float32 value and its float32 neighbours.
    probes = []
    for t in m.thresholds[0]:
        v = t32(t)
        probes += [v, np.nextafter(v, F32(-np.inf)), np.nextafter(v, F32(np.inf))]
    probes += [-0.0, 0.0, np.inf, -np.inf, np.nan]
    P = np.repeat(np.array(probes, np.float32)[:, None], 3, axis=1)
    bins = m.transform(P)
    np.testing.assert_array_equal(bins, naive_bins(P, m))
    assert_routing(P, m, bins)
    # A value equal to a threshold goes to its bin (x <= t).
    for b, t in enumerate(m.thresholds[0]):
        if float(F32(t)) == t:
            assert m.transform(np.full((1, 3), t, np.float32))[0, 0] == b


@pytest.mark.parametrize("max_bins", [2, 16, 255])
def test_many_distinct_values_quantile_thresholds(max_bins):
    rng = np.random.default_rng(max_bins)
    n = 20_000
    X = np.column_stack([
        rng.normal(size=n),                                          # continuous
        np.where(rng.random(n) < 0.5, 0.0, rng.exponential(size=n)), # half zeros
        rng.integers(0, 3 * max_bins + 5, size=n),                   # many ties
        np.where(rng.random(n) < 0.3, np.nan, rng.standard_cauchy(size=n)),
    ]).astype(np.float32)
    X[:50, 3] = [np.inf, -np.inf] * 25
    m = BinMapper(max_bins=max_bins).fit(X)
    bins = m.transform(X)
    np.testing.assert_array_equal(bins, naive_bins(X, m))
    assert_routing(X, m, bins)
    for j in range(X.shape[1]):
        t = m.thresholds[j]
        assert 1 <= t.size <= max_bins - 1
        assert np.all(np.diff(t) > 0)
        assert m.bin_values[j] is None
        # Every threshold is the midpoint of two consecutive distinct values.
        u = naive_distinct(X[:, j])
        mids = {naive_midpoint(a, b): k for k, (a, b) in enumerate(zip(u[:-1], u[1:]))}
        assert all(float(x) in mids for x in t), f"feature {j}"
    # Continuous (n <= subsample: exact quantiles): every bin holds n / max_bins values,
    # give or take one.
    counts = np.bincount(bins[:, 0], minlength=max_bins)
    assert m.thresholds[0].size == max_bins - 1
    assert np.abs(counts - n / max_bins).max() <= 1.0
    # Heavy ties: the run of zeros is never split, the other bins stay balanced.
    counts = np.bincount(bins[:, 1])
    zero_bin = bins[X[:, 1] == 0, 1][0]
    assert np.all(bins[X[:, 1] == 0, 1] == zero_bin)
    others = np.delete(counts, zero_bin)
    if max_bins > 2:
        assert others.max() <= 2 * n / max_bins + 1


def test_exactly_max_bins_distinct_values_and_one_more():
    rng = np.random.default_rng(3)
    for max_bins in (2, 255):
        vals = np.sort(rng.normal(size=max_bins + 1).astype(np.float32))
        col = rng.permutation(np.concatenate([vals[:max_bins]] * 3))
        m = BinMapper(max_bins=max_bins).fit(col[:, None])
        assert_same_bits(m.thresholds[0], naive_thresholds(col))    # one bin per value
        assert m.n_bins_non_missing[0] == max_bins
        col = rng.permutation(np.concatenate([vals] * 3))           # one value more
        m = BinMapper(max_bins=max_bins).fit(col[:, None])
        assert m.bin_values[0] is None
        assert m.thresholds[0].size <= max_bins - 1
        mids = {naive_midpoint(a, b) for a, b in zip(vals[:-1], vals[1:])}
        assert set(m.thresholds[0].tolist()) <= mids


def test_subsample_keeps_every_distinct_value_of_a_discrete_feature():
    """The distinct values are counted on all rows, not the subsample: a feature with
    a value that occurs once still gets one bin per value."""
    rng = np.random.default_rng(4)
    n = 30_000
    X = np.column_stack([
        rng.integers(0, 50, size=n).astype(np.float32),
        rng.normal(size=n).astype(np.float32),
    ])
    X[12_345, 0] = 1000.0                     # a rare value a subsample would miss
    m = BinMapper(subsample=1000).fit(X)
    assert_same_bits(m.thresholds[0], naive_thresholds(X[:, 0]))
    # The continuous feature: quantiles of 1000 values, balanced to within sampling
    # noise (5 standard deviations of a binomial count).
    m = BinMapper(max_bins=16, subsample=1000).fit(X)
    assert m.thresholds[1].size == 15
    counts = np.bincount(m.transform(X)[:, 1], minlength=16)
    p = 1 / 16
    assert np.abs(counts - n * p).max() <= 5 * np.sqrt(n * p * (1 - p) * n / 1000)
    # Seeded: the same seed gives the same thresholds, another seed others.
    again = BinMapper(max_bins=16, subsample=1000).fit(X)
    assert_same_bits(again.thresholds[1], m.thresholds[1])
    other = BinMapper(max_bins=16, subsample=1000, random_state=1).fit(X)
    assert not np.array_equal(other.thresholds[1], m.thresholds[1])


def test_mostly_missing_feature_is_subsampled_among_its_values():
    """The subsample is drawn among a feature's non-NaN values, so a feature that is
    almost all NaN still gets its quantiles."""
    rng = np.random.default_rng(5)
    n = 50_000
    X = np.full((n, 2), np.nan, np.float32)
    X[:, 0] = rng.normal(size=n)
    X[rng.choice(n, 2000, replace=False), 1] = rng.normal(size=2000)
    m = BinMapper(max_bins=32, subsample=1000).fit(X)
    assert m.thresholds[1].size == 31
    bins = m.transform(X)
    np.testing.assert_array_equal(bins, naive_bins(X, m))


def test_independent_of_threads_and_memory_order():
    rng = np.random.default_rng(6)
    n = 9000  # several row blocks of the transform kernel, not a multiple of them
    X = np.column_stack([
        rng.normal(size=n), rng.integers(0, 7, size=n), rng.exponential(size=n),
        np.where(rng.random(n) < 0.2, np.nan, rng.normal(size=n)),
        np.full(n, np.nan), np.ones(n),
    ]).astype(np.float32)
    ref = BinMapper(max_bins=64, subsample=5000).fit(X, n_threads=1)
    ref_bins = ref.transform(X, n_threads=1)
    np.testing.assert_array_equal(ref_bins, naive_bins(X, ref))
    views = {"C": np.ascontiguousarray(X), "F": np.asfortranarray(X),
             "strided": np.repeat(X, 2, axis=1)[:, ::2]}
    assert not views["strided"].flags.c_contiguous and not views["strided"].flags.f_contiguous
    for name, V in views.items():
        for n_threads in (1, 2, 3):
            m = BinMapper(max_bins=64, subsample=5000).fit(V, n_threads=n_threads)
            for a, b in zip(m.thresholds, ref.thresholds):
                assert_same_bits(a, b)
            np.testing.assert_array_equal(m.transform(V, n_threads=n_threads), ref_bins,
                                          err_msg=f"{name}, {n_threads} threads")


def _partitions(X, rng, n_parts):
    """Random contiguous partitions of the rows of X (some empty)."""
    cuts = np.sort(rng.integers(0, X.shape[0] + 1, size=n_parts - 1))
    parts = np.split(X, cuts)
    parts.insert(int(rng.integers(0, len(parts) + 1)), X[:0])  # an empty one for sure
    return parts


@pytest.mark.parametrize("max_bins", [16, 255])
def test_from_sketches_equals_fit_when_binning_is_exact(max_bins):
    rng = np.random.default_rng(max_bins)
    n = 6000
    X = np.column_stack([
        rng.integers(0, max_bins, size=n) * F32(0.37),               # max_bins values
        np.where(rng.random(n) < 0.2, np.nan, rng.integers(-3, 3, size=n)),
        rng.choice(np.array([-np.inf, -0.0, 0.0, 1.0, np.inf], np.float32), size=n),
        np.full(n, np.nan),
        np.full(n, 2.5),
    ]).astype(np.float32)
    X[17, 0] = 1e30                        # a value only one partition holds
    X[:, 0][X[:, 0] == 0.37 * 3] = np.nan
    assert naive_distinct(X[:, 0]).size <= max_bins
    fitted = BinMapper(max_bins=max_bins).fit(X)
    for trial in range(4):
        parts = _partitions(X, rng, int(rng.integers(1, 9)))
        sketches = [BinMapper().sketch(np.asfortranarray(p) if trial % 2 else p) for p in parts]
        for order in (sketches, sketches[::-1], list(rng.permutation(sketches))):
            merged = BinMapper.from_sketches(order, max_bins=max_bins)
            assert merged.max_bins == max_bins == merged.missing_bin
            for j in range(X.shape[1]):
                assert_same_bits(merged.thresholds[j], fitted.thresholds[j])
                assert_same_bits(merged.bin_values[j], fitted.bin_values[j])
            np.testing.assert_array_equal(merged.n_bins_non_missing, fitted.n_bins_non_missing)
            np.testing.assert_array_equal(merged.transform(X), fitted.transform(X))


def test_from_sketches_quantiles_are_close_and_order_free():
    """More distinct values than bins: approximate quantiles. Tolerance: the empirical
    CDF at threshold i is within 1/max_bins/2 of the target i/max_bins (the summary's
    rank error is at most 1/SKETCH_POINTS of each partition; partitions here are not
    subsampled)."""
    rng = np.random.default_rng(8)
    n = 60_000
    X = np.column_stack([
        rng.normal(size=n),
        np.where(rng.random(n) < 0.3, np.nan, rng.lognormal(size=n)),
        np.floor(np.sqrt(np.arange(n))),    # 245 values, value k 2k + 1 times
    ]).astype(np.float32)
    max_bins = 64
    parts = _partitions(X, rng, 30)
    sketches = [BinMapper().sketch(p) for p in parts]
    assert all(s.exact[2] for s in sketches) and not all(s.exact[0] for s in sketches)
    merged = BinMapper.from_sketches(sketches, max_bins=max_bins)
    for perm in range(3):
        again = BinMapper.from_sketches(list(rng.permutation(sketches)), max_bins=max_bins)
        for a, b in zip(again.thresholds, merged.thresholds):
            assert_same_bits(a, b)
    for j in (0, 1):
        x = np.sort(X[~np.isnan(X[:, j]), j].astype(np.float64))
        t = merged.thresholds[j]
        assert t.size == max_bins - 1
        cdf = np.searchsorted(x, t, side="right") / x.size
        targets = np.arange(1, max_bins) / max_bins
        assert np.abs(cdf - targets).max() <= 0.5 / max_bins
    # Every partition's sketch of feature 2 holds its exact counts, and the data has
    # fewer values than a subsample: the quantile thresholds are fit's own.
    t = merged.thresholds[2]
    assert t.size == max_bins - 1
    assert_same_bits(t, BinMapper(max_bins=max_bins).fit(X).thresholds[2])
    bins = merged.transform(X)
    np.testing.assert_array_equal(bins, naive_bins(X, merged))
    assert_routing(X[:2000], merged, bins[:2000])


def naive_weighted_thresholds(values, weights, max_bins):
    """The quantile thresholds of pooled (value, weight) points, in plain Python:
    the points sorted by value then weight, their weights added one by one in that
    order; for i = 1 .. max_bins - 1 the first point whose running sum reaches
    i W / max_bins, the threshold the midpoint of its value and the next larger value
    (none after the largest), each threshold once."""
    points = sorted(zip(map(float, values), map(float, weights)))
    running, total = [], 0.0
    for _, w in points:
        total += w
        running.append(total)
    distinct = sorted({v for v, _ in points})
    out = []
    for i in range(1, max_bins):
        target = i * total / max_bins
        k = next((k for k, c in enumerate(running) if c >= target), len(points) - 1)
        larger = [v for v in distinct if v > points[k][0]]
        if larger and naive_midpoint(points[k][0], larger[0]) not in out:
            out.append(naive_midpoint(points[k][0], larger[0]))
    return np.array(out, dtype=np.float64)


def test_from_sketches_weights_a_subsampled_partition_by_its_rows():
    """A partition of more rows than ``subsample`` is summarised by a subsample; each
    of its points stands for rows / points of the partition, so a partition of 20,000
    rows outweighs one of 500 forty to one in the merged quantiles (the twin: the
    pooled points weighted by their partition's rows per point)."""
    rng = np.random.default_rng(11)
    big = rng.uniform(0.0, 1.0, size=(20_000, 1)).astype(np.float32)
    small = rng.uniform(2.0, 3.0, size=(500, 1)).astype(np.float32)
    max_bins = 64
    mapper = BinMapper(subsample=1000)
    sketches = [mapper.sketch(big), mapper.sketch(small)]
    assert [s.values[0].size for s in sketches] == [1000, 500]  # big one subsampled
    merged = BinMapper.from_sketches(sketches, max_bins=max_bins)
    values = np.concatenate([s.values[0] for s in sketches])
    weights = np.concatenate([np.full(s.values[0].size, part.shape[0] / s.values[0].size)
                              for s, part in zip(sketches, (big, small))])
    assert_same_bits(merged.thresholds[0],
                     naive_weighted_thresholds(values, weights, max_bins))
    # About 40/41 of the thresholds fall among the big partition's values.
    assert np.count_nonzero(merged.thresholds[0] < 1.5) >= 0.95 * (max_bins - 1)


def test_from_sketches_is_order_free_with_fractional_weights():
    """Weights that do not add up exactly: the value 3.0 has the weights 0.1 and 0.3
    in two sketches, and 0.3 + 0.3 + 0.2 then 0.1 + 0.3 totals 1.2, then 0.3 + 0.1
    1.2000000000000002, so the median (half the total) lands on 1.0 or on 2.0 as the
    two are added. Sorted by value then weight, every order of the sketches gives the
    twin's thresholds."""
    sketches = [
        BinSketch(2, [2], [False], [np.array([1.0, 3.0], F32)], [np.array([0.3, 0.1])]),
        BinSketch(1, [1], [False], [np.array([1.0], F32)], [np.array([0.3])]),
        BinSketch(2, [2], [False], [np.array([2.0, 3.0], F32)], [np.array([0.2, 0.3])]),
    ]
    values = np.concatenate([s.values[0] for s in sketches])
    weights = np.concatenate([s.weights[0] for s in sketches])
    expected = naive_weighted_thresholds(values, weights, 2)
    for order in itertools.permutations(sketches):
        assert_same_bits(BinMapper.from_sketches(order, max_bins=2).thresholds[0], expected)


def test_sketch_is_small_and_picklable():
    rng = np.random.default_rng(9)
    X = np.column_stack([rng.normal(size=100_000), rng.integers(0, 9, size=100_000)])
    s = BinMapper().sketch(X.astype(np.float32))
    assert s.values[0].size == SKETCH_POINTS and s.exact.tolist() == [False, True]
    assert len(pickle.dumps(s)) < 12 * SKETCH_POINTS * 2 + 4096
    back = pickle.loads(pickle.dumps(s))
    m1 = BinMapper.from_sketches([s])
    m2 = BinMapper.from_sketches([back])
    for a, b in zip(m1.thresholds, m2.thresholds):
        assert_same_bits(a, b)
    assert isinstance(back, BinSketch) and back.n_samples == 100_000


@pytest.mark.parametrize("max_bins", [1, 0, -3, 256, 1000])
def test_max_bins_out_of_range(max_bins):
    with pytest.raises(ValueError, match=r"max_bins must be an int in \[2, 255\]"):
        BinMapper(max_bins=max_bins)
    with pytest.raises(ValueError, match="max_bins"):
        BinMapper.from_sketches([BinMapper().sketch(np.zeros((2, 1), np.float32))],
                                max_bins=max_bins)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"max_bins": 2.5}, TypeError, "max_bins must be an int"),
    ({"max_bins": True}, TypeError, "max_bins must be an int"),
    ({"subsample": 0}, ValueError, "subsample must be an int >= 1"),
    ({"random_state": -1}, ValueError, "random_state must be an int >= 0"),
    ({"random_state": None}, TypeError, "random_state must be an int"),
])
def test_bad_parameters(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        BinMapper(**kwargs)


def test_bad_input():
    X = np.zeros((5, 3), np.float32)
    m = BinMapper()
    with pytest.raises(TypeError, match="dtype float32.*got float64"):
        m.fit(X.astype(np.float64))
    with pytest.raises(TypeError, match="NumPy float32 array"):
        m.fit(X.tolist())
    with pytest.raises(ValueError, match=r"must be 2-D .* shape \(5,\)"):
        m.fit(X[:, 0])
    with pytest.raises(ValueError, match=r"no feature \(shape \(5, 0\)\)"):
        m.fit(X[:, :0])
    with pytest.raises(ValueError, match="not fitted"):
        m.transform(X)
    with pytest.raises(ValueError, match="n_threads must be an int >= 1"):
        m.fit(X, n_threads=0)
    m.fit(X)
    with pytest.raises(ValueError, match="X has 4 features, but the BinMapper was fitted with 3"):
        m.transform(np.zeros((5, 4), np.float32))
    with pytest.raises(TypeError, match="dtype float32"):
        m.transform(X.astype(np.float16))
    with pytest.raises(ValueError, match="at least one BinSketch"):
        BinMapper.from_sketches([])
    with pytest.raises(TypeError, match="BinSketch objects"):
        BinMapper.from_sketches([X])
    with pytest.raises(ValueError, match="different numbers of features"):
        BinMapper.from_sketches([m.sketch(X), m.sketch(np.zeros((5, 2), np.float32))])


def test_fit_and_sketch_of_no_row():
    m = BinMapper().fit(np.zeros((0, 2), np.float32))
    assert [t.size for t in m.thresholds] == [0, 0]
    assert m.transform(np.zeros((0, 2), np.float32)).shape == (0, 2)
    merged = BinMapper.from_sketches([m.sketch(np.zeros((0, 2), np.float32))])
    assert [t.size for t in merged.thresholds] == [0, 0]


def test_rows_of_nan_do_not_change_the_thresholds():
    """The subsample is drawn among a feature's non-NaN values (by their rank among
    them): rows where the feature is NaN, inserted anywhere, change nothing, whether
    the column has NaN (ranks counted by a walk) or none (ranks are rows)."""
    rng = np.random.default_rng(10)
    n = 12_000
    col = rng.normal(size=n).astype(np.float32)
    other = rng.normal(size=n).astype(np.float32)
    X = np.column_stack([col, other])
    nan_rows = np.sort(rng.choice(n + 3000, 3000, replace=False))
    with_nan = np.full(n + 3000, np.nan, np.float32)
    with_nan[np.setdiff1d(np.arange(n + 3000), nan_rows)] = col
    Y = np.column_stack([with_nan, np.resize(other, n + 3000)])
    for order in ("C", "F"):
        a = BinMapper(max_bins=40, subsample=2000).fit(np.asarray(X, order=order))
        b = BinMapper(max_bins=40, subsample=2000).fit(np.asarray(Y, order=order))
        assert a.thresholds[0].size == 39
        assert_same_bits(a.thresholds[0], b.thresholds[0])


def test_fitted_mapper_pickles():
    """A fitted mapper travels (a pickled estimator, warm start, Dask workers)."""
    rng = np.random.default_rng(11)
    X = np.column_stack([rng.normal(size=3000), rng.integers(0, 5, size=3000)])
    X = X.astype(np.float32)
    m = BinMapper(max_bins=100).fit(X)
    back = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(back.transform(X), m.transform(X))
    assert back.max_bins == 100 and back.missing_bin == 100
    for a, b in zip(back.thresholds, m.thresholds):
        assert_same_bits(a, b)


def test_features_sampled_in_groups_give_the_same_thresholds(monkeypatch):
    """Wide data is sampled a group of features at a time (bounded memory): the
    thresholds do not depend on the size of the groups."""
    import gbc_core._binning as binning

    rng = np.random.default_rng(12)
    X = rng.normal(size=(3000, 7)).astype(np.float32)
    # Columns without NaN, and with fewer or more non-NaN values than the subsample.
    X[rng.random(X.shape) < np.array([0, 0.05, 0.5, 0.1, 0.6, 0, 0.3])] = np.nan
    ref = BinMapper(max_bins=50, subsample=2000).fit(X, n_threads=2)
    ref_sketch = BinMapper(subsample=2000).sketch(X)
    monkeypatch.setattr(binning, "SAMPLE_BUFFER", 5000)  # two features per group
    m = BinMapper(max_bins=50, subsample=2000).fit(X, n_threads=2)
    sketch = BinMapper(subsample=2000).sketch(X)
    for j in range(X.shape[1]):
        assert_same_bits(m.thresholds[j], ref.thresholds[j])
        assert_same_bits(sketch.values[j], ref_sketch.values[j])
        np.testing.assert_array_equal(sketch.weights[j], ref_sketch.weights[j])


@pytest.mark.parametrize("n", [1, 2, 300, 5000])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_sorted_sample_sorts_as_numpy(n, n_threads):
    """``sorted_sample`` (radix sort of the float32 bit patterns, digits of 11, 11
    and 10 bits) against ``np.sort``: every bit pattern but NaN's (both signs,
    subnormals, infinities, -0.0 written 0.0, repeats), columns whose keys share
    some digits (a pass skipped), all values and a subsample at given ranks."""
    from gbc_core._binning_kernels import sorted_sample

    rng = np.random.default_rng(n)
    bits = rng.integers(0, 2 ** 32, size=(n, 6), dtype=np.uint64).astype(np.uint32)
    X = bits.view(np.float32).copy()
    X[:, 1] = rng.choice(np.array([-0.0, 0.0, np.inf, -np.inf, 1e-45, -1e-45, 3.5],
                                  dtype=np.float32), size=n)
    X[:, 2] = (np.uint32(0x3F800000) | (bits[:, 2] & np.uint32(0x7FF))).view(np.float32)
    X[:, 3] = (bits[:, 3] & np.uint32(0x7FFFF800)).view(np.float32)
    X[:, 4] = 7.0
    X[rng.random(X.shape) < 0.1] = np.nan
    features = np.arange(X.shape[1], dtype=np.int32)
    n_valid = (~np.isnan(X)).sum(axis=0).astype(np.int64)
    twin = [np.sort(X[~np.isnan(X[:, j]), j] + np.float32(0.0)) for j in features]
    for order in ("C", "F"):
        Xo = np.asarray(X, order=order)
        out = np.full((features.size, n), np.float32(-1.0))
        keys = np.empty(2 * n_threads * n, dtype=np.uint32)
        sorted_sample(Xo, features, np.zeros((1, 1), dtype=np.int64),
                      np.full(features.size, -1, dtype=np.int32), n_valid, n_valid,
                      out, keys, n_threads)
        for j in features:
            assert_same_bits(out[j, :n_valid[j]], twin[j])
        # The values of a subsample: those at some ranks among the non-NaN values.
        take = np.minimum(n_valid, max(1, n // 3))
        ranks = np.stack([np.sort(rng.choice(max(int(v), 1), size=take.max(),
                                             replace=False)) if v >= take.max()
                          else np.arange(take.max()) for v in n_valid]).astype(np.int64)
        out[:] = -1.0
        sorted_sample(Xo, features, ranks, features.copy(), take, n_valid, out, keys,
                      n_threads)
        for j in features:
            column = X[~np.isnan(X[:, j]), j] + np.float32(0.0)
            assert_same_bits(out[j, :take[j]], np.sort(column[ranks[j, :take[j]]]))
