"""Monotonic and interaction constraints (``monotonic_cst``, ``interaction_cst``).

Monotonicity is checked on a dense grid of every constrained feature, the other
features fixed at many training rows: no violation at all, for both split finders,
both growths, with missing values, weights, subsampling and feature draws.
Interaction constraints are checked on every root-to-leaf path of every tree. A
constraint that constrains nothing gives the unconstrained model bit for bit; the
histogram finder equals the exact one where binning is exact; the distributed fit
equals the single-process one; the models compare with scikit-learn's
HistGradientBoostingClassifier under the same constraint.
"""

from fractions import Fraction

import numpy as np
import pytest

from gbc_core import GradientBoostingClassifier, Loss
from gbc_core._loss_state import bounded_values, newton_of


def _data(n=1500, seed=0, nan=0.05):
    """Five features; the target increases with x0, decreases with x1, and has an
    interaction x2 * x3; NaN in every feature."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    logit = 1.5 * X[:, 0] - X[:, 1] + X[:, 2] * X[:, 3] + 0.5 * np.sin(3 * X[:, 4])
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(int)
    X[rng.random(X.shape) < nan] = np.nan
    return X, y


def _violations(model, X, constraints, n_rows=150, seed=1):
    """The number of grid steps (each constrained feature over a dense grid through
    its training range, the other features at ``n_rows`` training rows, missing
    values included) where the raw score moves against the constraint."""
    rng = np.random.default_rng(seed)
    rows = X[rng.choice(X.shape[0], n_rows, replace=False)]
    total = 0
    for f, c in enumerate(constraints):
        if c == 0:
            continue
        seen = np.unique(X[~np.isnan(X[:, f]), f])
        # Every training value and every midpoint between two, and beyond both ends.
        grid = np.unique(np.concatenate([
            seen, (seen[1:] + seen[:-1]) / 2, np.linspace(seen[0] - 1, seen[-1] + 1, 200)]))
        Z = np.repeat(rows, grid.size, axis=0)
        Z[:, f] = np.tile(grid, n_rows)
        raw = model.decision_function(Z).reshape(n_rows, grid.size)
        total += int(np.count_nonzero(c * np.diff(raw, axis=1) < 0))
    return total


MONOTONIC = [1, -1, 0, 0, 0]


@pytest.mark.parametrize("split_method", ["exact", "hist"])
@pytest.mark.parametrize("max_leaf_nodes", [None, 8])
@pytest.mark.parametrize("extra", [
    {},
    dict(subsample=0.7, max_features=2, random_state=3),
    dict(weights=True, min_samples_leaf=5),
])
def test_monotonic_on_a_dense_grid(split_method, max_leaf_nodes, extra):
    X, y = _data()
    extra = dict(extra)
    w = (np.random.default_rng(4).uniform(0.2, 3.0, len(y)) if extra.pop("weights", False)
         else None)
    params = dict(split_method=split_method, n_estimators=40, learning_rate=0.3,
                  max_depth=None if max_leaf_nodes else 4, max_leaf_nodes=max_leaf_nodes,
                  **extra)
    model = GradientBoostingClassifier(monotonic_cst=MONOTONIC, **params).fit(
        X, y, sample_weight=w)
    assert _violations(model, X, MONOTONIC) == 0
    # The check can fail: without the constraint the same fit is not monotone.
    free = GradientBoostingClassifier(**params).fit(X, y, sample_weight=w)
    assert _violations(free, X, MONOTONIC) > 0
    # The constrained features are still used.
    used = np.concatenate([t["feature"] for t in model.trees()])
    assert {0, 1} <= set(used.tolist())


class _Logistic(Loss):
    """The binomial log-loss as a custom loss (its Newton leaf rule by default)."""

    name = "test_constraints_logistic"
    n_outputs = 1

    def gradient_hessian(self, y, raw):
        p = 1.0 / (1.0 + np.exp(-raw))
        return p - y[:, None], p * (1.0 - p)

    def pointwise_loss(self, y, raw):
        return np.logaddexp(0.0, raw[:, 0]) - y * raw[:, 0]


@pytest.mark.parametrize("extra", [
    dict(loss="exponential"),
    dict(leaf_solver="exact"),
    dict(loss="exponential", leaf_solver="exact"),
    dict(criterion="squared_error", min_impurity_decrease=1e-4, ccp_alpha=1e-4),
    dict(loss=_Logistic()),
])
def test_monotonic_with_other_losses_and_tree_rules(extra):
    X, y = _data(seed=2)
    model = GradientBoostingClassifier(monotonic_cst=MONOTONIC, n_estimators=30,
                                       learning_rate=0.3, max_depth=4, **extra).fit(X, y)
    assert _violations(model, X, MONOTONIC) == 0


def test_monotonic_custom_loss_is_the_builtin_loss():
    """The custom loss goes through the same bounds: its model is the built-in
    loss's (to the rounding of NumPy's sums)."""
    X, y = _data(seed=5, n=800)
    params = dict(monotonic_cst=MONOTONIC, n_estimators=15, learning_rate=0.3)
    ref = GradientBoostingClassifier(**params).fit(X, y)
    ours = GradientBoostingClassifier(loss=_Logistic(), **params).fit(X, y)
    for a, b in zip(ref.trees(), ours.trees()):
        np.testing.assert_array_equal(a["feature"], b["feature"])
        np.testing.assert_allclose(a["value"], b["value"], rtol=1e-9, atol=1e-12)


def test_monotonic_dict_by_feature_name():
    pd = pytest.importorskip("pandas")
    X, y = _data(n=800)
    df = pd.DataFrame(X, columns=["a", "b", "c", "d", "e"])
    by_name = GradientBoostingClassifier(monotonic_cst={"a": 1, "b": -1},
                                         n_estimators=10).fit(df, y)
    by_index = GradientBoostingClassifier(monotonic_cst=MONOTONIC, n_estimators=10).fit(df, y)
    assert np.array_equal(by_name.decision_function(df), by_index.decision_function(df))


def _same_model(a, b, X=None):
    """Every field of every node equal, bit for bit (and the raw scores of X)."""
    assert len(a.trees()) == len(b.trees())
    for ta, tb in zip(a.trees(), b.trees()):
        for field in ta.dtype.names:
            assert ta[field].tobytes() == tb[field].tobytes(), field
    if X is not None:
        assert a.decision_function(X).tobytes() == b.decision_function(X).tobytes()


@pytest.mark.parametrize("split_method", ["exact", "hist"])
@pytest.mark.parametrize("max_leaf_nodes", [None, 6])
def test_constraints_that_constrain_nothing_give_the_same_model(split_method,
                                                                max_leaf_nodes):
    X, y = _data(n=800, seed=7)
    params = dict(split_method=split_method, n_estimators=10, max_leaf_nodes=max_leaf_nodes,
                  max_features=3, subsample=0.8, random_state=0)
    ref = GradientBoostingClassifier(**params).fit(X, y)
    for cst in (dict(monotonic_cst=[0] * 5), dict(monotonic_cst=np.zeros(5, dtype=int)),
                dict(interaction_cst=[[0, 1, 2, 3, 4]]),
                dict(interaction_cst=[[0, 1], [0, 1, 2, 3, 4]])):
        _same_model(GradientBoostingClassifier(**params, **cst).fit(X, y), ref, X)


@pytest.mark.parametrize("split_method", ["exact", "hist"])
def test_the_same_constrained_model_on_every_thread_count(split_method):
    X, y = _data(n=3000, seed=9)
    params = dict(split_method=split_method, monotonic_cst=MONOTONIC,
                  interaction_cst=[[0, 1], [1, 2, 3]], n_estimators=8, max_depth=5,
                  max_features=4, random_state=2)
    one = GradientBoostingClassifier(n_jobs=1, **params).fit(X, y)
    for n_jobs in (2, 3):
        _same_model(GradientBoostingClassifier(n_jobs=n_jobs, **params).fit(X, y), one, X)


def _paths(tree):
    """The set of features split on along every root-to-leaf path."""
    out = []
    stack = [(0, frozenset())]
    while stack:
        i, used = stack.pop()
        if tree["feature"][i] < 0:
            out.append(used)
            continue
        used = used | {int(tree["feature"][i])}
        stack.append((int(tree["left"][i]), used))
        stack.append((int(tree["right"][i]), used))
    return out


def _allowed_path(used, groups):
    return any(used <= set(g) for g in groups)


@pytest.mark.parametrize("split_method", ["exact", "hist"])
@pytest.mark.parametrize("max_leaf_nodes", [None, 10])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("extra", [{}, dict(max_features=2, subsample=0.8, random_state=1)])
def test_interaction_constraints_on_every_path(split_method, max_leaf_nodes, n_classes,
                                                extra):
    X, y = _data(seed=11)
    if n_classes == 3:
        y = y + (np.nan_to_num(X[:, 4]) > 0.5)
    # Feature 4 listed in no group: a group of its own (scikit-learn's rule).
    groups = [[0, 1], [1, 2, 3]]
    model = GradientBoostingClassifier(
        split_method=split_method, interaction_cst=groups, n_estimators=20,
        max_depth=None if max_leaf_nodes else 5, max_leaf_nodes=max_leaf_nodes,
        **extra).fit(X, y)
    paths = [p for t in model.trees() for p in _paths(t)]
    assert all(_allowed_path(p, groups + [[4]]) for p in paths)
    # The constraint bound (the same fit without it has paths it forbids), and the
    # groups interact within (some paths use two features of a group).
    free = GradientBoostingClassifier(
        split_method=split_method, n_estimators=20, max_depth=None if max_leaf_nodes else 5,
        max_leaf_nodes=max_leaf_nodes, **extra).fit(X, y)
    assert not all(_allowed_path(p, groups + [[4]]) for t in free.trees()
                   for p in _paths(t))
    assert any(len(p) >= 2 for p in paths)


def test_interaction_string_forms():
    X, y = _data(n=800, seed=12)
    alone = GradientBoostingClassifier(interaction_cst="no_interactions", max_depth=4,
                                       n_estimators=15).fit(X, y)
    assert all(len(p) <= 1 for t in alone.trees() for p in _paths(t))
    pairs = GradientBoostingClassifier(interaction_cst="pairwise", max_depth=4,
                                       n_estimators=15).fit(X, y)
    paths = [p for t in pairs.trees() for p in _paths(t)]
    assert all(len(p) <= 2 for p in paths) and any(len(p) == 2 for p in paths)


def test_both_constraints_together():
    X, y = _data(seed=13)
    groups = [[0, 1], [2, 3, 4]]
    model = GradientBoostingClassifier(monotonic_cst=MONOTONIC, interaction_cst=groups,
                                       n_estimators=30, max_depth=4).fit(X, y)
    assert _violations(model, X, MONOTONIC) == 0
    assert all(_allowed_path(p, groups) for t in model.trees() for p in _paths(t))


def _integer_data(seed, n=400, d=4, values=6):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, values, size=(n, d)).astype(np.float64)
    y = (rng.random(n) < 1 / (1 + np.exp(-(X[:, 0] - X[:, 1] + 0.3 * X[:, 2] - 1)))).astype(int)
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, y


@pytest.mark.parametrize("max_leaf_nodes", [None, 7])
def test_hist_is_exact_bit_for_bit_with_constraints(max_leaf_nodes):
    """Where binning is exact both finders see the same sums and apply the same
    ordered-children rule to them (exact integers on the grid): the same model."""
    for seed in range(6):
        X, y = _integer_data(seed)
        w = np.random.default_rng(seed).integers(1, 4, size=len(y)).astype(np.float64)
        params = dict(monotonic_cst=[1, -1, 1, 0], interaction_cst=[[0, 1], [1, 2, 3]],
                      n_estimators=12, max_leaf_nodes=max_leaf_nodes, subsample=0.8,
                      random_state=seed)
        exact = GradientBoostingClassifier(split_method="exact", **params).fit(
            X, y, sample_weight=w)
        hist = GradientBoostingClassifier(split_method="hist", **params).fit(
            X, y, sample_weight=w)
        _same_model(exact, hist, X)


def _brute_force_split(x, s, w, c):
    """The best split of one node on one feature (no missing values, unit weights)
    among the ordered ones, in exact rational arithmetic: (threshold, proxy)."""
    order = np.argsort(x, kind="stable")
    xs, ss, ws = x[order], s[order], w[order]
    S, W = Fraction(sum(int(v) for v in ss)), Fraction(sum(int(v) for v in ws))
    best = None
    sl = wl = Fraction(0)
    for k in range(len(xs) - 1):
        sl += int(ss[k])
        wl += int(ws[k])
        if xs[k + 1] <= xs[k]:
            continue
        sr, wr = S - sl, W - wl
        if c * (sl * wr - sr * wl) > 0:
            continue  # children out of order
        proxy = ((S - sl) * wl - sl * (W - wl)) ** 2 / (wl * (W - wl))
        if best is None or proxy > best[1]:
            best = (xs[k], proxy)
    return best


@pytest.mark.parametrize("finder", ["exact", "hist"])
def test_finders_choose_the_best_ordered_split(finder):
    """The finders' choice on a constrained feature against a brute force over every
    threshold (the children's order and the proxies in exact rationals)."""
    from gbc_core._binning import BinMapper
    from gbc_core._common import ROW_STAT_DTYPE
    from gbc_core._exact_splitter import ExactSplitFinder
    from gbc_core._histogram_splitter import HistogramSplitFinder, bin_value_ranges

    for seed in range(20):
        rng = np.random.default_rng(seed)
        n = 60
        X = rng.integers(0, 12, size=(n, 1)).astype(np.float32)
        stats = np.zeros(n, dtype=ROW_STAT_DTYPE)
        stats["wr"] = rng.integers(-50, 50, n).astype(np.float64)
        stats["w"] = 1.0
        X32 = np.asfortranarray(X)
        if finder == "exact":
            f = ExactSplitFinder(X32)
        else:
            mapper = BinMapper(max_bins=255).fit(X32, 1)
            bins = mapper.transform(X32, 1)
            lo, hi = bin_value_ranges(X32, bins, mapper.missing_bin, 1)
            f = HistogramSplitFinder(bins, np.asarray(mapper.n_bins_non_missing, dtype=np.int32),
                                     lo, hi, mapper.missing_bin, 1)
        for c in (1, -1):
            got = f.level_splits(stats, np.zeros(n, dtype=np.int32),
                                 monotonic=np.array([c], dtype=np.int8), grid=(1.0, 1.0))[0]
            want = _brute_force_split(X[:, 0], stats["wr"], stats["w"], c)
            if want is None:
                assert got["feature"] == -1
                continue
            assert got["feature"] == 0
            left = X[:, 0] <= got["threshold"]
            # The chosen split's proxy is the best ordered one, and it is ordered.
            sl, wl = stats["wr"][left].sum(), left.sum()
            sr, wr = stats["wr"][~left].sum(), n - wl
            assert c * (sl * wr - sr * wl) <= 0
            S, W = stats["wr"].sum(), n
            proxy = Fraction(int((S - sl) * wl - sl * (W - wl))) ** 2 / (int(wl) * int(W - wl))
            assert proxy == want[1]


def test_bounds_of_a_hand_made_tree():
    """The bounds' rule on a tree of known values: root split on x0 (+1), its left
    child on x1 (unconstrained), right child on x0 again."""
    from gbc_core._common import NODE_DTYPE

    nodes = np.zeros(7, dtype=NODE_DTYPE)
    nodes["feature"] = [0, 1, 0, -1, -1, -1, -1]
    nodes["left"] = [1, 3, 5, -1, -1, -1, -1]
    nodes["right"] = [2, 4, 6, -1, -1, -1, -1]
    # Leaf sums (numerator, denominator); Newton values 4, -2, 1, 3.
    sums = np.zeros((7, 2))
    sums[3], sums[4], sums[5], sums[6] = (4, 1), (-2, 1), (1, 1), (3, 1)
    value = newton_of(sums, 1.0)
    out = bounded_values(nodes, sums, value, np.array([1, 0], dtype=np.int8),
                         lambda s: newton_of(s, 1.0))
    # Node 1: (4 - 2) / 2 = 1; node 2: (1 + 3) / 2 = 2; mid of the root: 1.5.
    # Left subtree at most 1.5: 4 -> 1.5, -2 stays. Right subtree at least 1.5:
    # its own split on x0: values clipped to [1.5, inf): 1 -> 1.5 and 3, mid 2.25;
    # leaves 5 in [1.5, 2.25], 6 in [2.25, inf).
    np.testing.assert_array_equal(out[[3, 4, 5, 6]], [1.5, -2.0, 1.5, 3.0])
    assert np.array_equal(nodes["value"], out)


def test_accuracy_against_scikit_learn_hgb():
    """The same constraints in scikit-learn's HistGradientBoostingClassifier: a
    held-out log-loss within 0.03 of it (both monotone; the constraint costs
    both about as much)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import log_loss

    X, y = _data(n=6000, seed=21)
    Xt, yt, Xv, yv = X[:4000], y[:4000], X[4000:], y[4000:]
    for cst in (dict(monotonic_cst=MONOTONIC), dict(interaction_cst=[[0, 1], [2, 3], [4]])):
        ours = GradientBoostingClassifier(split_method="hist", n_estimators=150,
                                          learning_rate=0.1, max_leaf_nodes=15,
                                          max_depth=None, min_samples_leaf=20,
                                          **cst).fit(Xt, yt)
        hgb = HistGradientBoostingClassifier(max_iter=150, learning_rate=0.1,
                                             max_leaf_nodes=15, early_stopping=False,
                                             random_state=0, **cst).fit(Xt, yt)
        ll_ours = log_loss(yv, ours.predict_proba(Xv))
        ll_hgb = log_loss(yv, hgb.predict_proba(Xv))
        assert abs(ll_ours - ll_hgb) < 0.03, (cst, ll_ours, ll_hgb)
        if "monotonic_cst" in cst:
            assert _violations(ours, X, MONOTONIC) == 0


def test_local_processes_equal_the_single_process_fit():
    """The data-parallel fit (local processes: the Dask fit's protocol) with both
    constraints: the same splits, values to the rounding of per-process sums."""
    from gbc_core._local_processes import fit_local

    X, y = _data(n=1200, seed=31)
    w = np.random.default_rng(31).uniform(0.2, 3.0, len(y))
    params = dict(n_estimators=10, max_depth=3, learning_rate=0.3, random_state=0,
                  monotonic_cst=MONOTONIC, interaction_cst=[[0, 1], [1, 2, 3]],
                  subsample=0.8)
    ref = GradientBoostingClassifier(split_method="hist", **params).fit(X, y, sample_weight=w)
    model = fit_local(X, y, w, n_processes=2, cuts=[0, 500, 1200], **params)
    for a, b in zip(model.trees(), ref.trees()):
        for field in ("feature", "threshold", "left", "right", "n_samples"):
            np.testing.assert_array_equal(a[field], b[field])
    assert np.abs(model.predict_proba(X) - ref.predict_proba(X)).max() <= 1e-9
    assert _violations(model, X, MONOTONIC) == 0


def test_constraints_are_saved_in_the_model_file(tmp_path):
    X, y = _data(n=500)
    model = GradientBoostingClassifier(monotonic_cst=MONOTONIC,
                                       interaction_cst=[[0, 1], [2, 3]],
                                       n_estimators=5).fit(X, y)
    path = tmp_path / "m.gbc"
    model.save(path)
    loaded = GradientBoostingClassifier.load(path)
    assert loaded.get_params()["monotonic_cst"] == MONOTONIC
    assert [list(g) for g in loaded.get_params()["interaction_cst"]] == [[0, 1], [2, 3]]
    assert np.array_equal(loaded.decision_function(X), model.decision_function(X))


@pytest.mark.parametrize("params, match", [
    (dict(monotonic_cst=[1, 0]), "one value per feature"),
    (dict(monotonic_cst=[1, 0, 2, 0, 0]), "monotonic_cst must be"),
    (dict(monotonic_cst="increasing"), "monotonic_cst must be"),
    (dict(monotonic_cst={"a": 1}), "no feature names"),
    (dict(interaction_cst=[[0, 7]]), r"in \[0, 4\]"),
    (dict(interaction_cst=[[0, -1]]), "interaction_cst must be"),
    (dict(interaction_cst="everything"), "interaction_cst must be"),
    (dict(interaction_cst=[0, 1]), "interaction_cst must be"),
    (dict(interaction_cst=iter([[0, 1]])), "interaction_cst must be"),
])
def test_bad_constraints_are_refused_clearly(params, match):
    X, y = _data(n=200)
    with pytest.raises(ValueError, match=match):
        GradientBoostingClassifier(n_estimators=2, **params).fit(X, y)


def test_unknown_feature_names_and_multiclass_are_refused():
    pd = pytest.importorskip("pandas")
    X, y = _data(n=300)
    df = pd.DataFrame(X, columns=["a", "b", "c", "d", "e"])
    with pytest.raises(ValueError, match=r"not in X: \['zz'\]"):
        GradientBoostingClassifier(monotonic_cst={"a": 1, "zz": -1}, n_estimators=2).fit(df, y)
    with pytest.raises(ValueError, match="monotonic_cst must be"):
        GradientBoostingClassifier(monotonic_cst={"a": 3}, n_estimators=2).fit(df, y)
    y3 = y + (X[:, 4] > 0)
    with pytest.raises(ValueError, match="not supported for multiclass"):
        GradientBoostingClassifier(monotonic_cst=MONOTONIC, n_estimators=2).fit(X, y3)
    # Interaction constraints train three classes.
    GradientBoostingClassifier(interaction_cst="pairwise", n_estimators=2).fit(X, y3)


def test_command_line_takes_the_constraints(tmp_path):
    pd = pytest.importorskip("pandas")
    from gbc_core.cli import main
    import gbc_core

    X, y = _data(n=600, seed=41)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d", "e"]).assign(target=y)
    frame.to_csv(tmp_path / "d.csv", index=False)
    main(["train", str(tmp_path / "d.csv"), "--target", "target", "-o",
          str(tmp_path / "m.gbc"), "--n-estimators", "10", "--monotonic-cst",
          '{"a": 1, "b": -1}', "--interaction-cst", "[[0, 1], [2, 3]]"])
    booster = gbc_core.load(tmp_path / "m.gbc")
    assert booster.params["monotonic_cst"] == {"a": 1, "b": -1}
    ref = GradientBoostingClassifier(n_estimators=10, monotonic_cst=MONOTONIC,
                                     interaction_cst=[[0, 1], [2, 3]]).fit(X, y)
    assert np.array_equal(booster.decision_function(X), ref.decision_function(X))
    with pytest.raises(SystemExit):
        main(["train", str(tmp_path / "d.csv"), "--target", "target", "-o",
              str(tmp_path / "n.gbc"), "--monotonic-cst", "[1, 2]"])
