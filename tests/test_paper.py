"""The paper's appendix (6 samples, 3 stumps, eta = 0.1), number by number.

The paper rounds intermediate probabilities to 4 digits before using them, so some
of its printed values differ from full precision in the 4th decimal; e.g. its
gamma_1 = -0.0669 of iteration 2 is -0.06672 in full precision. Every value is
checked at 1e-4 against the full-precision value (the paper's own digits are within
rounding of it), and the full-precision values are recomputed independently with
plain NumPy from the paper's formulas.
"""

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
