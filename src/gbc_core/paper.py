"""The worked example of the paper's appendix, run through the model's own code.

The appendix trains 3 decision stumps on 6 samples with eta = 0.1 and *assumes* the
split thresholds 3.5, 2.25 and 5.25 (they are not the squared-error optimum).
:func:`fit_fixed_stumps` reproduces it: the leaves come from the given thresholds,
and everything else (gamma_j of eq. 1, F += eta gamma, p = sigma(F), r = y - p) is
computed by the binomial loss that every fit uses after growing each tree; the
result is an ordinary fitted model (a :class:`~gbc_core.Booster`).

This module uses the public API only (``gbc_core.__all__``).
"""

import numpy as np

from ._booster import Booster
from ._boosting import FitRecord
from ._common import NODE_DTYPE
from ._ensemble import Ensemble
from ._loss import BinomialLoss

#: Table 1 of the appendix.
PAPER_X = np.array([1.3, 1.5, 3.0, 4.0, 6.5, 8.4])
PAPER_Y = np.array([1, 0, 1, 0, 1, 0])
#: The assumed split of each iteration (Figures 1-3).
PAPER_THRESHOLDS = (3.5, 2.25, 5.25)
PAPER_LEARNING_RATE = 0.1


def float32_at_most(t):
    """Largest float32 not above ``t`` (so float32 ``x <= t32`` iff ``x <= t``)."""
    t32 = np.float32(t)
    if float(t32) > t:
        t32 = np.nextafter(t32, np.float32(-np.inf))
    return t32


def stump_nodes(threshold, feature=0):
    """Nodes of a one-split tree: root ``x[feature] <= threshold``, leaves 1 and 2."""
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes["feature"] = [feature, -1, -1]
    nodes["left"] = [1, -1, -1]
    nodes["right"] = [2, -1, -1]
    nodes["depth"] = [0, 1, 1]
    nodes["missing_go_left"] = [1, 0, 0]
    nodes["threshold"][0] = threshold
    nodes["threshold32"][0] = float32_at_most(threshold)
    return nodes


def fit_fixed_stumps(x, y, thresholds, learning_rate=0.1):
    """Boost stumps with given thresholds on one feature; return (model, history).

    Parameters
    ----------
    x : array-like of shape (n_samples,)
    y : array-like of {0, 1}
    thresholds : sequence of float
        Split of each iteration: ``x <= t`` goes to leaf 1, the rest to leaf 2.
    learning_rate : float

    Returns
    -------
    model : Booster
        Fitted (``predict_proba`` works as for any fitted model).
    history : list of dict
        Per iteration: ``residual`` (r_m, before the tree), ``prob_before``
        (p_{m-1}), ``leaf`` (1 or 2 per sample), ``gamma`` ({1: gamma_1, 2: gamma_2}),
        ``raw`` (F_m) and ``prob`` (p_m).
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.intp)
    n = x.shape[0]
    X32 = x.astype(np.float32)
    # F0 = 0 (Algorithm 1, lines 1-3); the loss's fit state holds F, p and r.
    state = BinomialLoss().start(y, None, np.zeros((n, 1)), n_threads=1)
    trees, history, losses = [], [], []
    for t in thresholds:
        nodes = stump_nodes(t)
        leaf = np.where(X32 <= nodes["threshold32"][0], 1, 2).astype(np.int32)
        before_r, before_p = state.residual.copy(), state.prob.copy()
        state.update(0, nodes, leaf, None, learning_rate)
        trees.append(nodes)
        losses.append(state.finish_iteration(None))
        history.append({
            "threshold": t, "residual": before_r, "prob_before": before_p, "leaf": leaf,
            "gamma": {1: float(nodes["value"][1]), 2: float(nodes["value"][2])},
            "raw": state.raw.copy(), "prob": state.prob.copy(),
        })
    ensemble = Ensemble.from_trees(trees, n_outputs=1, init_raw=[0.0],
                                   learning_rate=learning_rate, n_features=1)
    model = Booster(ensemble, np.array([0, 1]),
                    params={"n_estimators": len(thresholds), "learning_rate": learning_rate,
                            "max_depth": 1},
                    record=FitRecord([BinomialLoss.score_factor * v for v in losses]))
    return model, history


def paper_example():
    """The appendix run: ``fit_fixed_stumps(PAPER_X, PAPER_Y, PAPER_THRESHOLDS, 0.1)``."""
    return fit_fixed_stumps(PAPER_X, PAPER_Y, PAPER_THRESHOLDS, PAPER_LEARNING_RATE)
