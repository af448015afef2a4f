"""The cast of a training X to float32 (``_binning_kernels.cast_float32``) against
NumPy's ``astype`` and per-block ``fmax``/``fmin``, and ``check_features`` with the
cast against its NumPy path: the same array, the same lossy columns."""
import warnings

import numpy as np
import pytest

from gbc_core import DataConversionWarning, GradientBoostingClassifier
from gbc_core import _validation
from gbc_core._binning_kernels import BLOCK_ROWS, cast_float32
from gbc_core._validation import check_features

SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 3.5e38, -1e300, 1e-46,
                    -1e-40, 16777217.0, 3.4028234e38, 1.0000000000000002])


def _data(n, d, dtype, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(scale=1e3, size=(n, d))
    k = min(n * d, 3 * SPECIAL.size)
    flat = X.reshape(-1)
    flat[rng.choice(n * d, size=k, replace=False)] = np.resize(SPECIAL, k)
    if d > 2 and n > 1:
        X[:, 1] = np.nan  # a column without any number
    with np.errstate(over="ignore"):
        return np.ascontiguousarray(X.astype(dtype))


def _cast(X, order, n_threads):
    n_blocks = -(-X.shape[0] // BLOCK_ROWS)
    out = np.full(X.shape, 7.0, dtype=np.float32, order=order)
    hi = np.full((n_blocks, X.shape[1]), 7.0, dtype=np.float32)
    lo = np.full_like(hi, 7.0)
    cast_float32(X, out, hi, lo, n_threads)
    return out, hi, lo


def _block_extreme(values, reduce, empty):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = reduce.reduce(values, axis=0)
    return np.where(np.isnan(got), empty, got).astype(np.float32)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("n, d", [(1, 1), (5, 3), (BLOCK_ROWS - 1, 17),
                                  (BLOCK_ROWS, 16), (BLOCK_ROWS + 1, 1),
                                  (2 * BLOCK_ROWS + 77, 40)])
def test_cast_equals_numpy_astype_and_block_extremes(dtype, order, n, d):
    X = _data(n, d, dtype, seed=n + d)
    with np.errstate(over="ignore"):
        expected = X.astype(np.float32)
    out, hi, lo = _cast(X, order, 3)
    assert out.flags.f_contiguous == (order == "F") or d == 1 or n == 1
    # The same bits, NaN payloads and the sign of zero included.
    assert np.array_equal(out.view(np.uint32), expected.view(np.uint32))
    for b in range(hi.shape[0]):
        block = expected[b * BLOCK_ROWS:(b + 1) * BLOCK_ROWS]
        assert np.array_equal(hi[b], _block_extreme(block, np.fmax, -np.inf))
        assert np.array_equal(lo[b], _block_extreme(block, np.fmin, np.inf))


@pytest.mark.parametrize("order", ["C", "F"])
def test_cast_does_not_depend_on_the_thread_count(order):
    X = _data(5 * BLOCK_ROWS + 3, 23, np.float64, seed=1)
    one = _cast(X, order, 1)
    for n_threads in (2, 3, 8):
        other = _cast(X, order, n_threads)
        for a, b in zip(one, other):
            assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


def test_cast_checks_shapes():
    X = np.zeros((10, 3))
    good = np.zeros((1, 3), dtype=np.float32)
    with pytest.raises(ValueError, match=r"out has shape \(10, 2\); expected \(10, 3\)"):
        cast_float32(X, np.zeros((10, 2), dtype=np.float32), good, good, 1)
    with pytest.raises(ValueError, match=r"block_max and block_min must have shape \(1, 3\)"):
        cast_float32(X, np.zeros((10, 3), dtype=np.float32), np.zeros((2, 3), np.float32),
                     good, 1)


def _checked(X, order, through_kernel, monkeypatch):
    monkeypatch.setattr(_validation, "_PARALLEL_CAST_FROM", 0 if through_kernel else 1 << 62)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = check_features(X, "X", dtype=np.float32, order=order, training=True,
                             sparse="csc", n_threads=2)
    return out, [str(w.message) for w in caught if issubclass(w.category, DataConversionWarning)]


@pytest.mark.parametrize("order", ["F", "K", "C"])
@pytest.mark.parametrize("column", [
    [16777217.0, 1.0], [-16777217.0, 1.0], [16777217.5, 1.0], [1.2345e20, 1e-45],
    [3.5e38, 0.0], [-1e300, 0.0], [3.4e38, np.inf], [-np.inf, np.nan], [0.1, 2.0],
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_check_features_through_the_cast_as_through_numpy(order, column, dtype, monkeypatch):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4))
    X[:, 2] = np.resize(column, 300)
    with np.errstate(over="ignore"):
        X = X.astype(dtype)
    numpy_out, numpy_warnings = _checked(X, order, False, monkeypatch)
    kernel_out, kernel_warnings = _checked(X, order, True, monkeypatch)
    assert kernel_out.flags.c_contiguous == numpy_out.flags.c_contiguous
    assert kernel_out.flags.f_contiguous == numpy_out.flags.f_contiguous
    assert np.array_equal(kernel_out.view(np.uint32), numpy_out.view(np.uint32))
    assert kernel_warnings == numpy_warnings
    lossy = dtype == np.float64 and column[0] in (16777217.0, -16777217.0, 3.5e38, -1e300)
    assert len(kernel_warnings) == int(lossy)
    if lossy:
        assert "X column(s) 2 hold values that float32 does not represent" in kernel_warnings[0]


def test_large_training_array_is_cast_by_the_kernel_and_warns(monkeypatch):
    calls = []
    real = _validation._cast_float32
    monkeypatch.setattr(_validation, "_cast_float32",
                        lambda *a: calls.append(a[2]) or real(*a))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(_validation._PARALLEL_CAST_FROM // 4 + 10, 4))
    y = (X[:, 0] > 0).astype(int)
    X[7, 3] = 2.0 ** 30 + 1
    with pytest.warns(DataConversionWarning, match=r"X column\(s\) 3 hold values"):
        exact = GradientBoostingClassifier(n_estimators=3, n_jobs=2).fit(X, y)
    assert calls == ["F"]
    # The same model as from the array cast by NumPy.
    reference = GradientBoostingClassifier(n_estimators=3, n_jobs=2).fit(
        X.astype(np.float32), y)
    assert np.array_equal(exact.predict_proba(X), reference.predict_proba(X))
