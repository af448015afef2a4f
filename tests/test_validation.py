"""Bad input gets a clear ValueError/TypeError naming the problem."""

import numpy as np
import pytest

from gbc_core import GradientBoostingClassifier, NotFittedError, newton_leaf_values

from conftest import make_continuous, require

X, Y = make_continuous(n_samples=200, n_features=4, seed=3)


def _fit(**params):
    return GradientBoostingClassifier(n_estimators=5, **params).fit(X, Y)


@pytest.mark.parametrize("bad_y, match", [
    (np.where(np.arange(200) == 3, np.nan, Y.astype(float)), "NaN or infinity"),
    (np.where(np.arange(200) == 3, np.inf, Y.astype(float)), "NaN or infinity"),
    (np.zeros(200), "only one class"),
    (Y[:150], "inconsistent numbers of samples"),
    (np.arange(200) * 0.37, "continuous"),
])
def test_bad_targets(bad_y, match):
    with pytest.raises(ValueError, match=match):
        GradientBoostingClassifier(n_estimators=2).fit(X, bad_y)


def test_mixed_label_types():
    y = np.array(["a", 1] * 100, dtype=object)
    with pytest.raises(TypeError, match="mixes strings and numbers"):
        GradientBoostingClassifier(n_estimators=2).fit(X, y)


@pytest.mark.parametrize("bad_X, exc, match", [
    (np.empty((0, 4)), ValueError, "0 sample"),
    (np.empty((200, 0)), ValueError, "0 feature"),
    (X[:, 0], ValueError, "must be 2-D"),
    (np.array([["a", "b"]] * 200), ValueError, "must be numeric"),
    (X.astype(complex), ValueError, "Complex data not supported"),
])
def test_bad_features(bad_X, exc, match):
    with pytest.raises(exc, match=match):
        GradientBoostingClassifier(n_estimators=2).fit(bad_X, Y)


@pytest.mark.parametrize("param, value, match", [
    ("learning_rate", 0.0, "learning_rate"),
    ("learning_rate", -1.0, "learning_rate"),
    ("learning_rate", np.nan, "learning_rate"),
    ("max_depth", 0, "max_depth"),
    ("n_estimators", 0, "n_estimators"),
    ("min_samples_split", 1, "min_samples_split"),
    ("min_samples_leaf", 0, "min_samples_leaf"),
    ("min_weight_fraction_leaf", 0.6, "min_weight_fraction_leaf"),
    ("subsample", 0.0, "subsample"),
    ("subsample", 1.5, "subsample"),
    ("max_features", "all", "max_features"),
    ("init", "mean", "init"),
    ("n_jobs", 0, "n_jobs"),
    ("random_state", "seed", "random_state"),
    ("class_weight", "auto", "class_weight"),
])
def test_invalid_hyper_parameters(param, value, match):
    params = {"n_estimators": 2, param: value}
    with pytest.raises(ValueError, match=match):
        GradientBoostingClassifier(**params).fit(X, Y)


@pytest.mark.parametrize("weights, match", [
    (-np.ones(200), "negative"),
    (np.where(np.arange(200) == 0, np.nan, 1.0), "NaN"),
    (np.zeros(200), "zero for every sample"),
    (np.ones(10), "shape"),
])
def test_bad_sample_weight(weights, match):
    with pytest.raises(ValueError, match=match):
        GradientBoostingClassifier(n_estimators=2).fit(X, Y, sample_weight=weights)


def test_predict_time_checks():
    model = _fit()
    with pytest.raises(ValueError, match="X has 3 features, but GradientBoostingClassifier is expecting 4"):
        model.predict_proba(X[:, :3])
    with pytest.raises(ValueError, match="must be 2-D"):
        model.predict(X[0])
    with pytest.raises(NotFittedError, match="not fitted"):
        GradientBoostingClassifier().predict(X)


def test_predict_time_dataframe_columns():
    pd = require("pandas")
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    model = GradientBoostingClassifier(n_estimators=5).fit(df, Y)
    assert list(model.feature_names_in_) == ["a", "b", "c", "d"]
    expected = model.predict_proba(df)
    # Same columns in another order: reordered by name.
    np.testing.assert_array_equal(model.predict_proba(df[["d", "b", "a", "c"]]), expected)
    # Plain array: accepted with the count checked, and scikit-learn's warning that
    # the names cannot be checked.
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        np.testing.assert_array_equal(model.predict_proba(X), expected)
    with pytest.raises(ValueError, match="missing feature"):
        model.predict_proba(df[["a", "b", "c"]].assign(e=1.0))


def test_labels_of_any_type():
    for labels in (np.array(["no", "yes"]), np.array([False, True]), np.array([-3, 7])):
        y = labels[Y]
        model = GradientBoostingClassifier(n_estimators=5).fit(X, y)
        np.testing.assert_array_equal(model.classes_, np.sort(labels))
        assert set(model.predict(X)) <= set(labels)
        ref = GradientBoostingClassifier(n_estimators=5).fit(X, Y)
        np.testing.assert_array_equal(model.predict_proba(X), ref.predict_proba(X))


def test_newton_leaf_values_errors():
    with pytest.raises(ValueError, match="same length"):
        newton_leaf_values([0.1, 0.2], [0.5], [0, 1])
    with pytest.raises(ValueError, match="integer leaf ids"):
        newton_leaf_values([0.1], [0.5], [0.5])
    with pytest.raises(ValueError, match=">= 0"):
        newton_leaf_values([0.1], [0.5], [-1])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        newton_leaf_values([0.1], [1.5], [0])


def test_class_weight_moves_predictions_to_the_heavy_class():
    sk = require("sklearn.datasets")
    Xb, yb = sk.make_blobs(centers=2, random_state=0, cluster_std=20)
    plain = GradientBoostingClassifier(n_estimators=10).fit(Xb[:50], yb[:50])
    weighted = GradientBoostingClassifier(
        n_estimators=10, class_weight={0: 1000, 1: 0.0001}, min_weight_fraction_leaf=0.01
    ).fit(Xb[:50], yb[:50])
    assert np.mean(weighted.predict(Xb[50:]) == 0) > 0.87
    assert np.mean(weighted.predict(Xb[50:]) == 0) > np.mean(plain.predict(Xb[50:]) == 0)
    # "balanced" equals the explicit dict of n / (2 n_c).
    n0, n1 = np.bincount(Y)
    bal = GradientBoostingClassifier(n_estimators=5, class_weight="balanced").fit(X, Y)
    expl = GradientBoostingClassifier(
        n_estimators=5, class_weight={0: 200 / (2 * n0), 1: 200 / (2 * n1)}).fit(X, Y)
    np.testing.assert_array_equal(bal.predict_proba(X), expl.predict_proba(X))


def test_min_weight_fraction_leaf_is_respected():
    w = np.random.default_rng(0).uniform(0.1, 5, size=200)
    model = GradientBoostingClassifier(n_estimators=5, max_depth=4,
                                       min_weight_fraction_leaf=0.1).fit(X, Y, sample_weight=w)
    for tree in model.trees():
        leaves = tree[tree["feature"] < 0]
        assert (leaves["weighted_n"] >= 0.1 * w.sum() - 1e-9).all()


@pytest.mark.parametrize("y", [
    np.array([3, -2, 3, 7, -2, 3], dtype=np.int64),
    np.array([1, 0, 1, 1], dtype=np.int8),
    np.array([200, 5, 200], dtype=np.uint8),
    np.array([2**64 - 1, 0, 2**63], dtype=np.uint64),
    np.array([0.5, -1.25, 0.5], dtype=np.float32),
    np.array([1.0, 0.0, 1.0], dtype=np.float64),
    np.array([-0.0, 1.0, -0.0]),                    # one zero, its sign kept
    np.array([0.0, -0.0, 1.0, -0.0]),               # both zeros: np.unique decides
    np.array([True, False, True]),
    np.arange(3000) % 1500,                          # more classes than the kernel holds
    np.array(["b", "a", "b"]),
    np.array([1, 0, 1], dtype=">i4"),                # non-native byte order
])
def test_check_target_is_np_unique(y):
    """The class labels and codes of ``check_target`` (a kernel for numeric labels)
    are np.unique's, dtype, values and the sign of a zero label included."""
    from gbc_core._validation import check_target

    classes, codes = check_target(y, y.shape[0])
    expected, inverse = np.unique(y, return_inverse=True)
    assert classes.dtype == expected.dtype
    assert classes.tobytes() == expected.tobytes()
    assert codes.dtype == np.int32
    np.testing.assert_array_equal(codes, inverse.ravel())


@pytest.mark.parametrize("dtype", [np.int64, np.float64, bool])
def test_check_target_holds_only_the_codes(dtype):
    """Encoding the labels allocates the int32 codes (4 bytes per row) and nothing
    else of y's size (np.unique sorted a copy: about 40 bytes per row at once)."""
    import tracemalloc

    from gbc_core._validation import check_target

    n = 200_000
    y = (np.random.default_rng(0).uniform(size=n) < 0.3).astype(dtype)
    tracemalloc.start()
    try:
        check_target(y, n)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * n + 64 * 1024, (peak, n)
