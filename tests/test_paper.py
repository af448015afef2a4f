"""The paper's appendix (6 samples, 3 stumps, eta = 0.1), number by number.

The paper rounds intermediate probabilities to 4 digits before using them, so some
of its printed values differ from full precision in the 4th decimal; e.g. its
gamma_1 = -0.0669 of iteration 2 is -0.06672 in full precision. Every value is
checked at 1e-4 against the full-precision value (the paper's own digits are within
rounding of it), and the full-precision values are recomputed independently with
plain NumPy from the paper's formulas.
"""

import io

import numpy as np
import pytest

from gbc_core import newton_leaf_values
from gbc_core.paper import PAPER_THRESHOLDS, PAPER_X, PAPER_Y, paper_example

# Values printed in the appendix, iteration by iteration.
PAPER_GAMMA = [(2 / 3, -2 / 3), (-0.0669, 0.0334), (-0.0317, 0.0633)]
PAPER_F = [
    [2 / 30, 2 / 30, 2 / 30, -2 / 30, -2 / 30, -2 / 30],
    [0.0600, 0.0600, 0.0700, -0.0633, -0.0633, -0.0633],
    [0.0568, 0.0568, 0.0668, -0.0665, -0.0570, -0.0570],
]
PAPER_P = [
    [0.5167, 0.5167, 0.5167, 0.4833, 0.4833, 0.4833],
    [0.5150, 0.5150, 0.5175, 0.4842, 0.4842, 0.4842],
    [0.5142, 0.5142, 0.5167, 0.4834, 0.4858, 0.4858],
]
PAPER_RESIDUALS = [
    [0.5, -0.5, 0.5, -0.5, 0.5, -0.5],
    [0.4833, -0.5167, 0.4833, -0.4833, 0.5167, -0.4833],
    [0.4850, -0.5150, 0.4825, -0.4842, 0.5158, -0.4842],
]


def _naive_paper_run():
    """Algorithm 1 with the appendix's assumed splits, in plain NumPy."""
    F = np.zeros(6)
    out = []
    for t in PAPER_THRESHOLDS:
        p = 1 / (1 + np.exp(-F))
        r = PAPER_Y - p
        left = PAPER_X <= t
        g1 = r[left].sum() / (p[left] * (1 - p[left])).sum()
        g2 = r[~left].sum() / (p[~left] * (1 - p[~left])).sum()
        F = F + 0.1 * np.where(left, g1, g2)
        out.append((r, (g1, g2), F.copy(), 1 / (1 + np.exp(-F))))
    return out


def test_naive_reference_matches_paper_digits():
    for m, (r, g, F, p) in enumerate(_naive_paper_run()):
        np.testing.assert_allclose(r, PAPER_RESIDUALS[m], atol=1e-4)
        np.testing.assert_allclose(g, PAPER_GAMMA[m], atol=2e-4)  # paper rounds p first
        np.testing.assert_allclose(F, PAPER_F[m], atol=1e-4)
        np.testing.assert_allclose(p, PAPER_P[m], atol=1e-4)
    # The paper's -0.0669 is -0.06672 in full precision.
    assert _naive_paper_run()[1][1][0] == pytest.approx(-0.06672, abs=1e-5)


def test_model_code_path_reproduces_every_appendix_number():
    model, history = paper_example()
    naive = _naive_paper_run()
    assert len(history) == 3
    for m, h in enumerate(history):
        r, g, F, p = naive[m]
        np.testing.assert_allclose(h["residual"], r, atol=1e-12)
        np.testing.assert_allclose(h["residual"], PAPER_RESIDUALS[m], atol=1e-4)
        np.testing.assert_allclose([h["gamma"][1], h["gamma"][2]], g, atol=1e-12)
        np.testing.assert_allclose([h["gamma"][1], h["gamma"][2]], PAPER_GAMMA[m], atol=2e-4)
        np.testing.assert_allclose(h["raw"], F, atol=1e-12)
        np.testing.assert_allclose(h["raw"], PAPER_F[m], atol=1e-4)
        np.testing.assert_allclose(h["prob"], PAPER_P[m], atol=1e-4)
    # Omega_{m,j} of the appendix figures.
    assert history[0]["leaf"].tolist() == [1, 1, 1, 2, 2, 2]
    assert history[1]["leaf"].tolist() == [1, 1, 2, 2, 2, 2]
    assert history[2]["leaf"].tolist() == [1, 1, 1, 1, 2, 2]


def test_iteration1_gamma_is_exactly_two_thirds():
    _, history = paper_example()
    assert history[0]["gamma"][1] == pytest.approx(2 / 3, abs=1e-15)
    assert history[0]["gamma"][2] == pytest.approx(-2 / 3, abs=1e-15)


def test_prediction_for_x_equal_7():
    model, _ = paper_example()
    X = np.array([[7.0]])
    assert model.decision_function(X)[0] == pytest.approx(-0.0570, abs=1e-4)
    assert model.predict_proba(X)[0, 1] == pytest.approx(0.4858, abs=1e-4)
    assert model.predict(X)[0] == 0
    # The model's predictions on the training rows are the trainer's F and p.
    _, history = paper_example()
    np.testing.assert_array_equal(model.decision_function(PAPER_X[:, None]), history[-1]["raw"])


def test_newton_leaf_values_on_the_appendix():
    """gamma of each iteration through the public function, leaf ids 0 and 1."""
    for m, (r, g, F, p) in enumerate(_naive_paper_run()):
        prev_p = 1 / (1 + np.exp(-(F - 0.1 * np.where(PAPER_X <= PAPER_THRESHOLDS[m], g[0], g[1]))))
        leaf = (PAPER_X > PAPER_THRESHOLDS[m]).astype(int)
        gamma = newton_leaf_values(r, prev_p, leaf)
        np.testing.assert_allclose(gamma, PAPER_GAMMA[m], atol=2e-4)
        np.testing.assert_allclose(gamma, g, atol=1e-12)


def test_staged_predictions_follow_the_iterations():
    model, history = paper_example()
    stages = list(model.staged_predict_proba(PAPER_X[:, None]))
    assert len(stages) == 3
    for m, proba in enumerate(stages):
        np.testing.assert_allclose(proba[:, 1], PAPER_P[m], atol=1e-4)
        np.testing.assert_array_equal(proba[:, 1], history[m]["prob"])


# ------------------------------------------------------------------ trace
def _trace_tables(text):
    """The row tables and terminal-node tables of ``paper.trace``'s text."""
    rows, nodes, current = [], [], None
    for line in text.splitlines():
        parts = line.split()
        if line.startswith("Iteration"):
            rows.append([])
            current = rows[-1]
        elif line.startswith("Tree T_"):
            nodes.append([])
            current = nodes[-1]
        elif parts and parts[0].isdigit() and current is not None:
            current.append(parts)
    return rows, nodes


def test_paper_model_records_what_a_fit_records():
    """The appendix's stumps hold each node's rows and the root's improvement, as
    a fit's trees do: naive counts and Friedman's improvement from the history's
    residuals; the fit's own numbers, bit for bit, where a fit picks the same split;
    so importances and TreeSHAP work on it (before: all 0, and TreeSHAP refused it)."""
    from gbc_core import GradientBoostingClassifier
    from gbc_core.paper import fit_fixed_stumps

    model, history = paper_example()
    for tree, step in zip(model.ensemble.trees(), history):
        left = step["leaf"] == 1
        r = step["residual"].reshape(-1)
        n, n_left = len(r), int(left.sum())
        assert tree["n_samples"].tolist() == [n, n_left, n - n_left]
        assert tree["weighted_n"].tolist() == [n, n_left, n - n_left]
        mean_gap = r[left].mean() - r[~left].mean()
        expected = n_left * (n - n_left) * mean_gap ** 2 / n  # w_l w_r (gap)^2 / W
        assert tree["improvement"][0] == pytest.approx(expected, rel=1e-12)
        assert tree["improvement"][0] > 0 and (tree["improvement"][1:] == 0).all()
    assert model.ensemble.feature_importances().tolist() == [1.0]
    for y, message in ((PAPER_Y[:4], "one length"), (PAPER_Y * 2, "labels 0 and 1")):
        with pytest.raises(ValueError, match=message):
            fit_fixed_stumps(PAPER_X, y, PAPER_THRESHOLDS)
    rows = PAPER_X[:, None].astype(np.float32)
    contributions = model.ensemble.predict_contributions(rows)
    np.testing.assert_allclose(contributions.sum(axis=-1)[:, 0],
                               model.ensemble.predict_raw(rows)[:, 0], rtol=0, atol=1e-15)
    # A one-stump fit of the appendix's data splits at 1.4: the same stump forced.
    fitted = GradientBoostingClassifier(n_estimators=1, max_depth=1).fit(rows, PAPER_Y)
    tree = fitted.booster_.ensemble.trees()[0]
    forced = fit_fixed_stumps(PAPER_X, PAPER_Y, [float(tree["threshold"][0])])[0]
    for field in ("n_samples", "weighted_n", "improvement", "value", "threshold32"):
        np.testing.assert_array_equal(forced.ensemble.trees()[0][field], tree[field])


def test_trace_prints_the_appendix_numbers():
    """paper.trace on the appendix's model: each iteration's p_{m-1}, r_m, terminal
    nodes Omega_{m,j}, F_m and p_m as the appendix prints them, sum r and
    sum p(1 - p) of the naive run, gamma of eq. 1 as the appendix's (within its
    rounding), and the exact gamma as scipy's root of sum (y - sigma(F + gamma))."""
    from scipy.optimize import brentq
    from scipy.special import expit

    from gbc_core.paper import trace

    model, history = paper_example()
    out = io.StringIO()
    text = trace(model, PAPER_X, PAPER_Y, file=out)
    assert out.getvalue() == text
    rows, nodes = _trace_tables(text)
    assert len(rows) == len(nodes) == 3
    omegas = [["1, 2, 3", "4, 5, 6"], ["1, 2", "3, 4, 5, 6"], ["1, 2, 3, 4", "5, 6"]]
    F_before = np.zeros(6)
    naive = _naive_paper_run()
    for m, (table, leaves) in enumerate(zip(rows, nodes)):
        table = np.array([[float(v) for v in r] for r in table])
        # index, x, y, p_{m-1}, r_m, leaf j, F_m, p_m
        np.testing.assert_array_equal(table[:, 0], np.arange(1, 7))
        np.testing.assert_array_equal(table[:, 1], PAPER_X)
        np.testing.assert_array_equal(table[:, 2], PAPER_Y)
        np.testing.assert_allclose(table[:, 4], PAPER_RESIDUALS[m], atol=1.5e-4)
        np.testing.assert_allclose(table[:, 6], PAPER_F[m], atol=1.5e-4)
        np.testing.assert_allclose(table[:, 7], PAPER_P[m], atol=1.5e-4)
        p = expit(F_before)
        np.testing.assert_allclose(table[:, 3], p, atol=5e-5)
        r = PAPER_Y - p
        for j, line in enumerate(leaves):
            # leaf j, Omega (comma-separated indices), sum r, sum p(1-p), newton,
            # exact, tree value
            assert line[0] == str(j + 1)
            members = np.array([int(v.rstrip(",")) for v in line[1:-5]]) - 1
            assert ", ".join(str(i + 1) for i in members) == omegas[m][j]
            sum_r, sum_h, newton, exact, value = map(float, line[-5:])
            assert sum_r == pytest.approx(r[members].sum(), abs=5e-5)
            assert sum_h == pytest.approx((p * (1 - p))[members].sum(), abs=5e-5)
            # (the appendix's -0.0669 is -0.06672 in full precision, printed -0.0667)
            assert newton == pytest.approx(naive[m][1][j], abs=5e-5)
            assert newton == pytest.approx(PAPER_GAMMA[m][j], abs=2.5e-4)
            assert value == newton
            y, f = PAPER_Y[members], F_before[members]
            root = brentq(lambda g: np.sum(y - expit(f + g)), -10, 10, xtol=1e-14)
            assert exact == pytest.approx(root, abs=5e-5)
        F_before = history[m]["raw"]
    # The first leaf of iteration 1: eq. 1's 2/3 against the exact log 2.
    assert nodes[0][0][-3:] == ["0.6667", "0.6931", "0.6667"]


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("solver", ["newton", "exact"])
def test_trace_of_a_small_fit_shows_the_solver_it_used(n_classes, solver):
    """On any small fit (no subsample, no weights) the tree's values are the column
    of the solver the fit used."""
    from gbc_core import GradientBoostingClassifier
    from gbc_core.paper import trace

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.digitize(X[:, 0] + rng.normal(scale=0.5, size=30), [0.0, 0.8][: n_classes - 1])
    labels = np.array(["a", "b", "c"])[y]
    model = GradientBoostingClassifier(n_estimators=3, max_depth=2, learning_rate=0.5,
                                       leaf_solver=solver).fit(X, labels)
    text = trace(model, X, labels, digits=10, file=io.StringIO())
    rows, nodes = _trace_tables(text)
    assert len(nodes) == 3 * (1 if n_classes == 2 else 3)
    column = -3 if solver == "newton" else -2
    for leaves in nodes:
        for line in leaves:
            assert float(line[-1]) == pytest.approx(float(line[column]), abs=2e-10)
    with pytest.raises(ValueError, match="one label of the model's classes"):
        trace(model, X, np.array(["z"] * 30), file=io.StringIO())
    if n_classes == 3:  # each class named as it was given ('a', not np.str_('a'))
        assert "Iteration 1, class 'a'" in text and "Tree T_3 (class 'c')" in text
