"""leaf_solver="exact": every leaf of a fitted model against scipy's root finder.

For each tree of a fit, the rows of each leaf (``model.apply``; with ``subsample`` the
in-bag rows of that iteration) and the raw scores before the iteration (the staged
raw scores of the model) define the leaf's own loss; its exact minimiser is
recomputed here with ``scipy.optimize.brentq`` on the derivative written from the
loss's definition (the softmax itself for 3 classes, not the log-odds reduction the
kernel uses) and compared with the tree's leaf value to 1e-10. Pure leaves have no
minimiser; their capped value is checked against its definition. The default
(``"newton"``) stays eq. 1, bit for bit (also ``test_binary_reference.py`` and the
model-file fixtures).
"""

import numpy as np
import pytest
from scipy.optimize import brentq, minimize_scalar
from scipy.special import expit, logsumexp, softmax

import gbc_core
from gbc_core import GradientBoostingClassifier as GBC
from gbc_core import exact_leaf_values, newton_leaf_values

#: -log(machine epsilon): the margin a pure leaf's rows are moved to.
PURE_MARGIN = -np.log(np.finfo(np.float64).eps)


def _data(n_classes, n=500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    score = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + rng.normal(scale=0.7, size=n)
    if n_classes == 2:
        y = (score > 0).astype(int)
    else:
        y = np.digitize(score, [-0.6, 0.6])
    # A clean region: rows with x3 > 1.2 are all of class 0, so pure leaves occur.
    y[X[:, 3] > 1.2] = 0
    w = rng.exponential(size=n) + 0.1
    return X, y, w


def _in_bag(n, subsample, seed, m):
    """The rows of iteration m (the documented draw: a stream seeded by (seed, m))."""
    if subsample >= 1.0:
        return np.ones(n, dtype=bool)
    rng = np.random.default_rng([seed, m])
    mask = np.zeros(n, dtype=bool)
    mask[rng.choice(n, max(1, int(subsample * n)), replace=False)] = True
    return mask


def _root(derivative, lo, hi):
    while derivative(lo) <= 0:
        lo -= 1.0
    while derivative(hi) >= 0:
        hi += 1.0
    return brentq(derivative, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)


def _binary_gamma(y, f, w):
    """scipy's root of sum w (y - sigma(f + gamma)), or the cap of a pure leaf."""
    if (y == 1).all():
        return max(0.0, PURE_MARGIN - f.min()), True
    if (y == 0).all():
        return min(0.0, -PURE_MARGIN - f.max()), True

    def derivative(g):
        # y - sigma(u) = sigma(-u) for y = 1 and -sigma(u) for y = 0 (no cancellation)
        u = f + g
        return float(np.sum(w * np.where(y == 1, expit(-u), -expit(u))))

    c = np.log(w[y == 1].sum() / w[y == 0].sum())
    return _root(derivative, c - f.max(), c - f.min()), False


def _multinomial_gamma(y, F, w, k):
    """scipy's minimiser of sum w -log softmax(F + gamma e_k)[y] in gamma."""
    t = y == k
    others = np.delete(F, k, axis=1)
    z = F[:, k] - logsumexp(others, axis=1)  # only for the cap of a pure leaf
    if t.all():
        return max(0.0, PURE_MARGIN - z.min()), True
    if not t.any():
        return min(0.0, -PURE_MARGIN - z.max()), True

    def shifted(g):
        G = F.copy()
        G[:, k] += g
        return G

    def derivative(g):
        # [y = k] - p_k, with 1 - p_k as the sum of the other classes' probabilities
        # (1 - p_k itself cancels to 0 once p_k rounds to 1)
        P = softmax(shifted(g), axis=1)
        rest = np.delete(P, k, axis=1).sum(axis=1)
        return float(np.sum(w * np.where(t, rest, -P[:, k])))

    def loss(g):
        G = shifted(g)
        return float(np.sum(w * (logsumexp(G, axis=1) - G[np.arange(len(y)), y])))

    c = np.log(w[t].sum() / w[~t].sum())
    root = _root(derivative, c - z.max(), c - z.min())
    # The root is the minimum of the leaf's loss (convex): scipy's minimiser finds no
    # lower point (up to the rounding of the loss, a sum of differences of ~|F|).
    other = minimize_scalar(loss, bracket=(root - 1.0, root + 1.0)).x
    assert loss(root) <= loss(other) + 1e-13 * np.sum(w) * (1 + np.abs(F).max())
    return root, False


def _exponential_gamma(y, f, w):
    if (y == 1).all():
        return max(0.0, PURE_MARGIN - f.min()), True
    if (y == 0).all():
        return min(0.0, -PURE_MARGIN - f.max()), True
    s = 2 * y - 1

    def derivative(g):
        return float(np.sum(w * s * np.exp(-s * (f + g))))

    closed = 0.5 * np.log(np.sum(w[y == 1] * np.exp(-f[y == 1]))
                          / np.sum(w[y == 0] * np.exp(f[y == 0])))
    root = _root(derivative, closed - 1.0, closed + 1.0)
    assert closed == pytest.approx(root, abs=1e-12)
    return root, False


def _check_every_leaf(model, X, y, w, subsample, seed):
    """Compare each leaf value with scipy's; returns (non-pure, pure) leaf counts."""
    n = X.shape[0]
    K = model.n_trees_per_iteration_
    leaves = model.apply(X)
    init = np.broadcast_to(np.asarray(model.init_raw_, dtype=float), (n, K))
    before = [np.array(init)] + [np.asarray(F).reshape(n, K)
                                 for F in model.staged_decision_function(X)]
    counts = [0, 0]
    for m in range(model.n_estimators_):
        bag = _in_bag(n, subsample, seed, m)
        F = before[m]
        for k in range(K):
            tree = model.estimators_[m, k]
            for leaf in np.unique(leaves[bag, m, k]):
                rows = bag & (leaves[:, m, k] == leaf)
                # The in-bag reconstruction is the fit's: the leaf saw this weight
                # (its sum on the tree's grid: each weight to 2^-51 of the rows'
                # largest possible sum, _choice.pxd).
                assert w[rows].sum() == pytest.approx(tree.weighted_n_node_samples[leaf],
                                                      rel=1e-10)
                if model.loss == "exponential":
                    expected, pure = _exponential_gamma(y[rows], F[rows, 0], w[rows])
                elif K == 1:
                    expected, pure = _binary_gamma(y[rows], F[rows, 0], w[rows])
                else:
                    expected, pure = _multinomial_gamma(y[rows], F[rows], w[rows], k)
                assert tree.value[leaf] == pytest.approx(expected, abs=1e-10), (m, k, leaf)
                counts[pure] += 1
    return counts


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("subsample", [1.0, 0.7])
@pytest.mark.parametrize("weighted", [False, True])
def test_every_leaf_is_scipys_exact_minimiser(n_classes, subsample, weighted):
    X, y, w = _data(n_classes)
    seed = 5
    model = GBC(leaf_solver="exact", n_estimators=6, max_depth=4, learning_rate=0.3,
                subsample=subsample, random_state=seed, init="prior")
    model.fit(X, y, sample_weight=w if weighted else None)
    n_plain, n_pure = _check_every_leaf(model, X, y, w if weighted else np.ones(len(y)),
                                        subsample, seed)
    assert n_plain > 20 and n_pure > 0  # both kinds of leaf were checked


def test_exponential_loss_exact_is_the_closed_form_minimiser():
    X, y, w = _data(2)
    model = GBC(loss="exponential", leaf_solver="exact", n_estimators=6, max_depth=4,
                learning_rate=0.3, subsample=0.7, random_state=3).fit(X, y, sample_weight=w)
    n_plain, n_pure = _check_every_leaf(model, X, y, w, 0.7, 3)
    assert n_plain > 20 and n_pure > 0


def test_a_leaf_far_from_its_root_and_saturated_scores():
    """Raw scores of hundreds (probabilities that round to 0 or 1): the kernel's
    bracket and safeguarded Newton still find scipy's root; eq. 1 cannot (its
    denominator underflows)."""
    rng = np.random.default_rng(1)
    n = 400
    y = (rng.random(n) < 0.3).astype(int)
    f = np.where(y == 1, -rng.uniform(30, 700, n), rng.uniform(-5, 40, n))
    w = rng.exponential(size=n)
    leaf = rng.integers(0, 5, n)
    ours = exact_leaf_values(y, f, leaf, w)
    for j in range(5):
        rows = leaf == j
        expected, pure = _binary_gamma(y[rows], f[rows], w[rows])
        assert not pure
        assert ours[j] == pytest.approx(expected, abs=1e-10, rel=1e-13)


def test_exact_leaf_values_on_the_paper_first_iteration():
    """From F0 = 0 the root is log(W1 / W0): log 2 for the appendix's first leaf
    (2 of 3 rows are class 1), where eq. 1 gives 2/3."""
    y = [1, 0, 1, 0, 1, 0]
    gamma = exact_leaf_values(y, np.zeros(6), [0, 0, 0, 1, 1, 1])
    assert gamma == pytest.approx([np.log(2), -np.log(2)], abs=1e-15)
    newton = newton_leaf_values(np.array(y) - 0.5, np.full(6, 0.5), [0, 0, 0, 1, 1, 1])
    assert newton == pytest.approx([2 / 3, -2 / 3], abs=1e-15)


def test_pure_leaves_are_capped_and_the_fit_stays_finite():
    """Separable data: every leaf soon holds one class. The exact gamma of such a leaf
    would be infinite; capped, 200 iterations at learning_rate 1 keep the raw scores
    finite and the probabilities within machine epsilon of the labels."""
    X = np.arange(40, dtype=float)[:, None]
    y = (X[:, 0] >= 20).astype(int)
    model = GBC(leaf_solver="exact", n_estimators=200, max_depth=2, learning_rate=1.0,
                random_state=0).fit(X, y)
    raw = model.decision_function(X)
    assert np.isfinite(raw).all()
    gammas = np.concatenate([t.value for t in model.estimators_[:, 0]])
    assert np.abs(gammas).max() <= PURE_MARGIN + np.abs(raw).max()
    assert model.predict_proba(X)[np.arange(40), y].min() >= 1 - 4e-16
    # First tree: two pure leaves from F0 = 0, capped at exactly PURE_MARGIN.
    first = model.estimators_[0, 0]
    leaf_values = first.value[first.feature < 0]
    assert set(np.round(np.abs(leaf_values), 12)) == {round(PURE_MARGIN, 12)}


@pytest.mark.parametrize("n_classes", [2, 3])
def test_newton_stays_the_default_and_eq1(n_classes):
    """The default is "newton": the same bytes as naming it, eq. 1's leaf values
    (recomputed leaf by leaf with the public eq. 1 function from scipy's sigma of the
    staged scores, to rounding; bit for bit against the committed references in
    test_binary_reference.py), and different from "exact"."""
    X, y, w = _data(n_classes)
    kw = dict(n_estimators=4, max_depth=3, random_state=0)
    default = GBC(**kw).fit(X, y, sample_weight=w)
    assert default.get_params()["leaf_solver"] == "newton"
    newton = GBC(leaf_solver="newton", **kw).fit(X, y, sample_weight=w)
    exact = GBC(leaf_solver="exact", **kw).fit(X, y, sample_weight=w)
    assert default.to_bytes() == newton.to_bytes()
    assert not np.array_equal(default.decision_function(X), exact.decision_function(X))
    if n_classes == 2:
        leaves = default.apply(X)
        F = np.zeros(len(y))
        for m, raw in enumerate(default.staged_decision_function(X)):
            p = expit(F)
            tree = default.estimators_[m, 0]
            gamma = newton_leaf_values(y - p, p, leaves[:, m, 0], w)
            used = np.unique(leaves[:, m, 0])
            np.testing.assert_allclose(tree.value[used], gamma[used], rtol=1e-12, atol=1e-14)
            F = raw


@pytest.mark.parametrize("n_classes", [2, 3])
def test_exact_fit_is_the_same_for_any_thread_count(n_classes):
    X, y, w = _data(n_classes, n=800)
    kw = dict(leaf_solver="exact", n_estimators=5, max_depth=3, subsample=0.8,
              random_state=2)
    one = GBC(n_jobs=1, **kw).fit(X, y, sample_weight=w)
    two = GBC(n_jobs=2, **kw).fit(X, y, sample_weight=w)
    for a, b in zip(one.estimators_.ravel(), two.estimators_.ravel()):
        assert a.nodes.tobytes() == b.nodes.tobytes()
    np.testing.assert_array_equal(one.train_score_, two.train_score_)


def test_leaf_solver_is_stored_checked_and_kept_by_warm_start(tmp_path):
    X, y, w = _data(2)
    model = GBC(leaf_solver="exact", n_estimators=3, random_state=0).fit(X, y)
    path = tmp_path / "m.gbc"
    model.save(path)
    assert gbc_core.load(path).params["leaf_solver"] == "exact"
    assert GBC.load(path).get_params()["leaf_solver"] == "exact"
    model.set_params(n_estimators=5, warm_start=True, leaf_solver="newton")
    with pytest.raises(ValueError, match="leaf_solver='newton' differs"):
        model.fit(X, y)
    # Warm start with the same solver gives the trees of one fit.
    model.set_params(leaf_solver="exact").fit(X, y)
    once = GBC(leaf_solver="exact", n_estimators=5, random_state=0).fit(X, y)
    np.testing.assert_array_equal(model.decision_function(X), once.decision_function(X))
    with pytest.raises(ValueError, match="leaf_solver must be 'newton' or 'exact'"):
        GBC(leaf_solver="brent").fit(X, y)


def test_exact_leaf_values_rejects_bad_input():
    with pytest.raises(ValueError, match="labels 0 and 1"):
        exact_leaf_values([0, 2], [0.0, 0.0], [0, 0])
    with pytest.raises(ValueError, match="finite"):
        exact_leaf_values([0, 1], [0.0, np.inf], [0, 0])
    with pytest.raises(ValueError, match="same length"):
        exact_leaf_values([0, 1], [0.0], [0, 0])
