"""TreeSHAP: ``predict_contributions`` against exact Shapley values and the shap package.

The reference is a naive twin: for each tree, the path-dependent conditional
expectation v(S) (follow the row on the features of S, average both children by
their covers ``weighted_n`` elsewhere) and the Shapley values by enumerating every
subset of the other features, in plain Python. It is exponential in the number of
features, so the models here are small. The shap package's ``TreeExplainer`` on the
same model exported to scikit-learn is the second reference.
"""

import itertools
import math
import pickle
import time

import numpy as np
import pytest

from gbc_core import Booster, Ensemble, GradientBoostingClassifier

from conftest import assert_arrays_equal, make_continuous, require


def _v(tree, x, S, j=0):
    """E[T(x) | x_S] with the path-dependent expectation over the other features."""
    node = tree[j]
    if node["feature"] < 0:
        return float(node["value"])
    f = int(node["feature"])
    left, right = int(node["left"]), int(node["right"])
    if f in S:
        xv = np.float32(x[f])
        go_right = (not node["missing_go_left"]) if np.isnan(xv) else (
            xv > node["threshold32"])
        return _v(tree, x, S, right if go_right else left)
    return (tree[left]["weighted_n"] * _v(tree, x, S, left)
            + tree[right]["weighted_n"] * _v(tree, x, S, right)) / node["weighted_n"]


def naive_contributions(ensemble, x):
    """(n_outputs, n_features + 1): exact Shapley values of each feature for the raw
    scores of row ``x``, and the expected value, by enumerating feature subsets."""
    M, K = ensemble.n_features, ensemble.n_outputs
    phi = np.zeros((K, M + 1))
    phi[:, M] = ensemble.init_raw
    for t, tree in enumerate(ensemble.trees()):
        k = t % K
        for f in range(M):
            others = [g for g in range(M) if g != f]
            for size in range(M):
                weight = math.factorial(size) * math.factorial(M - size - 1) / math.factorial(M)
                for S in itertools.combinations(others, size):
                    S = set(S)
                    phi[k, f] += weight * ensemble.learning_rate * (
                        _v(tree, x, S | {f}) - _v(tree, x, S))
        phi[k, M] += ensemble.learning_rate * _v(tree, x, set())
    return phi


def _data(n=400, n_features=4, n_classes=2, nan_fraction=0.0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    score = X[:, 0] + X[:, 1] * X[:, 2] - 0.5 * X[:, 3 % n_features]
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    if nan_fraction:
        X[rng.random(X.shape) < nan_fraction] = np.nan
    return X, y


CASES = {
    "binary": dict(),
    "binary-prior-subsample": dict(fit=dict(init="prior", subsample=0.6, random_state=3)),
    "binary-nan": dict(data=dict(nan_fraction=0.15)),
    "multiclass": dict(data=dict(n_classes=3)),
    "multiclass-nan-prior": dict(data=dict(n_classes=4, nan_fraction=0.1),
                                 fit=dict(init="prior")),
    "deep": dict(data=dict(n_features=5), fit=dict(max_depth=6, n_estimators=3)),
    "weighted": dict(weights=True),
}


def _fitted(case):
    spec = CASES[case]
    X, y = _data(**spec.get("data", {}))
    params = dict(n_estimators=6, max_depth=3, learning_rate=0.3)
    params.update(spec.get("fit", {}))
    w = None
    if spec.get("weights"):
        w = np.random.default_rng(5).exponential(size=y.shape[0])
        w[::7] = 0.0  # zero-weight rows: the covers are what the trees saw
    return GradientBoostingClassifier(**params).fit(X, y, sample_weight=w), X


@pytest.mark.parametrize("case", sorted(CASES))
def test_equals_exact_shapley_values(case):
    model, X = _fitted(case)
    ens = model.booster_.ensemble
    rows = X[:25]
    got = ens.predict_contributions(rows)
    expected = np.array([naive_contributions(ens, x) for x in rows])
    assert_arrays_equal(got, expected, "contributions", atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("case", sorted(CASES))
def test_rows_add_up_to_the_decision_function(case):
    model, X = _fitted(case)
    c = model.predict_contributions(X)
    K = model.n_trees_per_iteration_
    n_features = X.shape[1]
    assert c.shape == ((X.shape[0], n_features + 1) if K == 1
                       else (X.shape[0], K, n_features + 1))
    assert_arrays_equal(c.sum(axis=-1), model.decision_function(X), "sum of contributions",
                        atol=1e-9)
    # The expected value is the same for every row.
    assert (c[..., -1] == c[:1, ..., -1]).all()


def test_missing_values_follow_the_learned_direction():
    model, X = _fitted("binary-nan")
    ens = model.booster_.ensemble
    nodes = ens.nodes
    inner = nodes["feature"] >= 0
    # The model has splits sending NaN each way, and rows with NaN.
    assert (nodes["missing_go_left"][inner] == 1).any()
    assert (nodes["missing_go_left"][inner] == 0).any()
    rows = X[np.isnan(X).any(axis=1)][:20]
    got = ens.predict_contributions(rows)
    expected = np.array([naive_contributions(ens, x) for x in rows])
    assert_arrays_equal(got, expected, "contributions of rows with NaN", atol=1e-12,
                        rtol=1e-10)
    # The other direction is another answer: the test can tell them apart.
    flipped = nodes.copy()
    flipped["missing_go_left"][inner] ^= 1
    other = Ensemble(flipped, ens.tree_offsets, n_outputs=1, init_raw=ens.init_raw,
                     learning_rate=ens.learning_rate, n_features=ens.n_features)
    assert np.abs(other.predict_contributions(rows) - got).max() > 1e-6


def _rows_through(tree, X, j):
    """The rows of ``X`` whose path in ``tree`` passes node ``j`` (predict's rule)."""
    X32 = X.astype(np.float32)
    at = np.zeros(X.shape[0], dtype=np.intp)
    for _ in range(int(tree["depth"].max()) + 1):
        f = tree["feature"][at]
        inner = (f >= 0) & (at != j)
        x = X32[np.arange(X.shape[0]), np.maximum(f, 0)]
        right = np.where(np.isnan(x), tree["missing_go_left"][at] == 0,
                         x > tree["threshold32"][at])
        at = np.where(inner, np.where(right, tree["right"][at], tree["left"][at]), at)
    return np.flatnonzero(at == j)


def test_rows_on_a_threshold_route_as_predict_does():
    """A value equal to a split's float32 threshold goes left, the next float32 up
    right, as in ``predict``: for every split of the model, a row reaching it with
    its feature set to those two values has the exact Shapley values of the naive
    twin (which routes by ``x > threshold32``) and adds up to the raw score."""
    model, X = _fitted("binary")
    ens = model.booster_.ensemble
    rows = []
    for tree in ens.trees():
        for j in np.flatnonzero(tree["feature"] >= 0):
            base = X[_rows_through(tree, X, j)[0]]
            t32 = np.float32(tree["threshold32"][j])
            for value in (t32, np.nextafter(t32, np.float32(np.inf))):
                row = base.copy()
                row[tree["feature"][j]] = value
                rows.append(row)
    rows = np.array(rows)
    got = ens.predict_contributions(rows)
    raw = ens.predict_raw(rows)[:, 0]
    assert_arrays_equal(got.sum(axis=-1)[:, 0], raw, "sum of contributions", atol=1e-12,
                        rtol=1e-12)
    expected = np.array([naive_contributions(ens, x) for x in rows])
    assert_arrays_equal(got, expected, "contributions on thresholds", atol=1e-12,
                        rtol=1e-10)
    # Each pair of values falls on the two sides of its split: other raw scores.
    assert np.all(raw[0::2] != raw[1::2])


def test_learning_rate_scales_the_contributions():
    model, X = _fitted("binary")
    ens = model.booster_.ensemble
    half = Ensemble(ens.nodes, ens.tree_offsets, n_outputs=1, init_raw=ens.init_raw,
                    learning_rate=ens.learning_rate / 2, n_features=ens.n_features)
    full = ens.predict_contributions(X[:50])
    halved = half.predict_contributions(X[:50])
    assert_arrays_equal(halved[..., :-1], full[..., :-1] / 2, "contributions", rtol=1e-12,
                        atol=1e-15)


@pytest.mark.parametrize("case", ["binary", "multiclass-nan-prior"])
def test_same_result_for_any_number_of_threads(case):
    model, X = _fitted(case)
    X = np.tile(X, (5, 1))  # enough rows for several threads
    ens = model.booster_.ensemble
    one = ens.predict_contributions(X, n_jobs=1)
    for n_jobs in (2, 3, -1):
        assert_arrays_equal(ens.predict_contributions(X, n_jobs=n_jobs), one,
                            f"contributions with n_jobs={n_jobs}")


def test_booster_and_estimator_agree_and_check_input():
    pd = require("pandas")
    X, y = make_continuous(n_samples=600, n_features=5, seed=2)
    df = pd.DataFrame(X, columns=[f"c{j}" for j in range(5)])
    model = GradientBoostingClassifier(n_estimators=10).fit(df, y)
    booster = Booster.from_bytes(model.to_bytes())
    expected = model.predict_contributions(df)
    assert_arrays_equal(booster.predict_contributions(df), expected, "booster contributions")
    # Columns are matched by name, as in predict.
    shuffled = df[["c3", "c1", "c0", "c4", "c2"]]
    assert_arrays_equal(model.predict_contributions(shuffled), expected,
                        "contributions of reordered columns")
    with pytest.raises(ValueError, match="c2"):
        booster.predict_contributions(df.drop(columns="c2"))
    with pytest.raises(ValueError, match="features"):
        booster.predict_contributions(X[:, :4])
    # Input predict refuses is refused with predict's message.
    bad = np.array([["a", "b", "c", "d", "e"]], dtype=object)
    with pytest.raises(ValueError) as predict_error:
        booster.predict(bad)
    with pytest.raises(ValueError) as contributions_error:
        booster.predict_contributions(bad)
    assert str(contributions_error.value) == str(predict_error.value)
    # A pickled ensemble explains alike.
    ens = pickle.loads(pickle.dumps(model.booster_.ensemble))
    assert_arrays_equal(ens.predict_contributions(X)[:, 0, :], expected, "after pickling")


def test_zero_cover_split_is_an_error():
    model, _ = _fitted("binary")
    ens = model.booster_.ensemble
    nodes = ens.nodes.copy()
    nodes["weighted_n"][0] = 0.0
    broken = Ensemble(nodes, ens.tree_offsets, n_outputs=1, init_raw=ens.init_raw,
                      learning_rate=ens.learning_rate, n_features=ens.n_features)
    with pytest.raises(ValueError, match="tree 0, node 0.*weighted_n"):
        broken.predict_contributions(np.zeros((1, ens.n_features)))


def _shap_per_tree(shap, sk, X):
    """shap's TreeExplainer on each scikit-learn tree, scaled by the learning rate and
    added up per output: (n, K, n_features)."""
    n_iter, K = sk.estimators_.shape
    out = np.zeros((X.shape[0], K, X.shape[1]))
    for m in range(n_iter):
        for k in range(K):
            explainer = shap.TreeExplainer(sk.estimators_[m, k])
            out[:, k, :] += sk.learning_rate * np.asarray(explainer.shap_values(X))
    return out


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("init", ["zero", "prior"])
def test_equals_shap_tree_explainer(n_classes, init):
    shap = require("shap")
    X, y = _data(n=500, n_features=6, n_classes=n_classes, seed=4)
    keep = ~((y == 0) & (np.arange(y.size) % 3 == 0))  # unbalanced: a prior F0 != 0
    X, y = X[keep], y[keep]
    model = GradientBoostingClassifier(n_estimators=8, max_depth=4, init=init, subsample=0.8,
                                       random_state=0).fit(X, y)
    assert (model.booster_.ensemble.init_raw != 0).any() == (init == "prior")
    sk = model.to_sklearn()
    rows = X[:200]
    ours = model.booster_.ensemble.predict_contributions(rows)
    assert_arrays_equal(ours[:, :, :-1], _shap_per_tree(shap, sk, rows),
                        "contributions vs shap", atol=1e-6)
    if n_classes == 2:
        # shap explains a whole binary GradientBoostingClassifier with a prior init;
        # init="zero" is written as the uniform prior, F0 = 0.
        explainer = shap.TreeExplainer(sk)
        values = np.asarray(explainer.shap_values(rows))
        assert_arrays_equal(ours[:, 0, :-1], values, "contributions vs shap", atol=1e-6)
        assert abs(ours[0, 0, -1] - float(np.ravel(explainer.expected_value)[0])) <= 1e-6


def test_contributions_release_the_gil():
    from conftest import other_thread_progress

    model, X = _fitted("binary")
    ens = model.booster_.ensemble
    t0 = time.perf_counter()
    ens.predict_contributions(X, n_jobs=1)
    reps = max(1, int(np.ceil(0.5 / max(time.perf_counter() - t0, 1e-3))))
    X_big = np.tile(X, (reps, 1))  # a call of about 0.5 s
    count, elapsed, gap = other_thread_progress(
        lambda: ens.predict_contributions(X_big, n_jobs=1))
    # Another Python thread kept counting through the call (a call holding the GIL
    # stops it for the whole call: test_production.py checks that this detects it).
    assert count >= 20000 and gap < 0.5 * elapsed, (count, elapsed, gap)
