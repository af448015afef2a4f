"""The worked example of the paper's appendix, run through the model's own code.

The appendix trains 3 decision stumps on 6 samples with eta = 0.1 and *assumes* the
split thresholds 3.5, 2.25 and 5.25 (they are not the squared-error optimum).
:func:`fit_fixed_stumps` reproduces it: the leaves come from the given thresholds,
and everything else (gamma_j of eq. 1, F += eta gamma, p = sigma(F), r = y - p) is
computed by the binomial loss that every fit uses after growing each tree; the
result is an ordinary fitted model (a :class:`~gbc_core.Booster`).

:func:`trace` prints the appendix's tables (rows with p, r, their terminal node, F
and p after the iteration; per terminal node sum r, sum p(1 - p) and gamma of both
leaf solvers: eq. 1's Newton step and the exact minimiser) for any small fit.

This module uses public names only (``gbc_core.__all__``), imported from the
modules that define them: the Booster's and the losses' documented methods and the
leaf-value functions of ``gbc_core``.
"""

import numpy as np

from ._booster import Booster
from ._common import NODE_DTYPE
from ._ensemble import Ensemble
from ._loss import BinomialLoss, MultinomialLoss
from ._record import FitRecord

#: Table 1 of the appendix.
PAPER_X = np.array([1.3, 1.5, 3.0, 4.0, 6.5, 8.4])
PAPER_Y = np.array([1, 0, 1, 0, 1, 0])
#: The assumed split of each iteration (Figures 1-3).
PAPER_THRESHOLDS = (3.5, 2.25, 5.25)
PAPER_LEARNING_RATE = 0.1


def float32_at_most(t):
    """Largest float32 not above ``t`` (so float32 ``x <= t32`` iff ``x <= t``).

    Parameters
    ----------
    t : float
        A threshold.

    Returns
    -------
    numpy.float32

    Examples
    --------
    >>> from gbc_core.paper import float32_at_most
    >>> bool(float32_at_most(0.1) <= 0.1)
    True
    """
    t32 = np.float32(t)
    if float(t32) > t:
        t32 = np.nextafter(t32, np.float32(-np.inf))
    return t32


def stump_nodes(threshold, feature=0):
    """Nodes of a one-split tree: root ``x[feature] <= threshold``, leaves 1 and 2.

    Parameters
    ----------
    threshold : float
        The split.
    feature : int, default=0
        The feature split on.

    Returns
    -------
    ndarray of ``gbc_core.NODE_DTYPE``, shape (3,)
        The root and its two leaves (leaf values 0, set by the fit).

    Examples
    --------
    >>> from gbc_core.paper import stump_nodes
    >>> stump_nodes(3.5)["feature"].tolist()
    [0, -1, -1]
    """
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes["feature"] = [feature, -1, -1]
    nodes["left"] = [1, -1, -1]
    nodes["right"] = [2, -1, -1]
    nodes["depth"] = [0, 1, 1]
    nodes["missing_go_left"] = [1, 0, 0]
    nodes["threshold"][0] = threshold
    nodes["threshold32"][0] = float32_at_most(threshold)
    return nodes


def _record_cover(nodes, x32, residual, leaf):
    """What a fit records in a stump's nodes besides the tree: each node's rows
    (``n_samples``, and ``weighted_n``, unit weights) and the root's improvement,
    Friedman's proxy over the node's weight (``_criterion.h``: diff^2 / den / W, the
    residual sums added as the split search adds them: the root's in row order, the
    left child's in increasing ``x``), so that importances and TreeSHAP's cover work
    on the paper's model as on a fitted one."""
    left = leaf == 1
    n, n_left = leaf.shape[0], int(left.sum())
    nodes["n_samples"] = [n, n_left, n - n_left]
    nodes["weighted_n"] = [float(n), float(n_left), float(n - n_left)]
    total_s, total_w, w_left = 0.0, float(n), float(n_left)
    for r in residual.tolist():
        total_s += r
    s_left = 0.0
    order = np.argsort(x32, kind="stable")
    for r in residual[order][left[order]].tolist():
        s_left += r
    den = w_left * (total_w - w_left)
    if den > 0:
        diff = (total_s - s_left) * w_left - s_left * (total_w - w_left)
        nodes["improvement"][0] = diff * diff / den / total_w


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

    Examples
    --------
    >>> from gbc_core.paper import PAPER_X, PAPER_Y, fit_fixed_stumps
    >>> model, history = fit_fixed_stumps(PAPER_X, PAPER_Y, [3.5], learning_rate=0.1)
    >>> {leaf: round(gamma, 4) for leaf, gamma in history[0]["gamma"].items()}
    {1: 0.6667, 2: -0.6667}
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y)
    if x.ndim != 1 or y.shape != x.shape:
        raise ValueError(f"x and y must be 1-D and of one length, got shapes {x.shape} "
                         f"and {y.shape}")
    if y.dtype.kind not in "biuf" or not np.isin(y, (0, 1)).all():
        raise ValueError("y must hold the labels 0 and 1")
    y = y.astype(np.intp)
    n = x.shape[0]
    X32 = x.astype(np.float32)
    # F0 = 0 (Algorithm 1, lines 1-3); the loss's fit state holds F, p and r.
    state = BinomialLoss().start(y, None, np.zeros((n, 1)), n_threads=1)
    trees, history, losses = [], [], []
    for t in thresholds:
        nodes = stump_nodes(t)
        leaf = np.where(X32 <= nodes["threshold32"][0], 1, 2).astype(np.int32)
        before_r, before_p = state.tree_target(0)[1].copy(), state.prob.copy()
        _record_cover(nodes, X32, before_r.reshape(-1), leaf)
        state.update(0, nodes, leaf, None, learning_rate, 1)
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
    """The appendix run: ``fit_fixed_stumps(PAPER_X, PAPER_Y, PAPER_THRESHOLDS, 0.1)``.

    Returns
    -------
    model : Booster
        The three stumps of the appendix.
    history : list of dict
        Per iteration, as :func:`fit_fixed_stumps` gives it.

    Examples
    --------
    >>> from gbc_core.paper import paper_example
    >>> model, history = paper_example()
    >>> model.predict_proba([[7.0]]).round(4)     # the appendix's prediction for x = 7
    array([[0.5142, 0.4858]])
    """
    return fit_fixed_stumps(PAPER_X, PAPER_Y, PAPER_THRESHOLDS, PAPER_LEARNING_RATE)


def _fmt(value, digits):
    text = f"{value:.{digits}f}"
    return "0." + "0" * digits if text == "-0." + "0" * digits else text


def trace(model, X, y, *, digits=4, file=None):
    """Print the appendix's tables for a small fit, iteration by iteration.

    For each iteration m (and each class's tree with 3 or more classes): the table
    of the rows (index i, the features x, label y, p_{m-1}, the residual
    r_m = y - p_{m-1}, the terminal node j of T_m, F_m and p_m after the
    iteration), then one line per terminal node j: Omega_{m,j} (1-based row
    indices), sum r, sum p(1 - p), gamma of eq. 1 (``"newton"``: sum r / sum p(1 - p);
    with K classes (K - 1)/K times it, scikit-learn's), the exact gamma
    (``"exact"``: the root of sum (y - sigma(F + gamma)) = 0; with K classes the
    minimiser in F_k with the other scores fixed) and the value the model's tree
    holds. Unweighted, over the rows given: for a fit with ``subsample < 1`` or
    sample weights the model's leaves were set from other sums.

    Parameters
    ----------
    model : GradientBoostingClassifier or Booster
        Fitted with the log-loss (the paper's; 2 or more classes).
    X : array-like of shape (n_samples, n_features)
        The rows to trace (the training rows, for the appendix's numbers).
    y : array-like of shape (n_samples,)
        Their labels, as given to fit.
    digits : int, default=4
        Decimals printed (the appendix's 4).
    file : text stream, optional
        Where to print (default: standard output).

    Returns
    -------
    str
        The text printed.

    Examples
    --------
    >>> import io
    >>> from gbc_core import GradientBoostingClassifier
    >>> from gbc_core.paper import PAPER_X, PAPER_Y, trace
    >>> model = GradientBoostingClassifier(n_estimators=1, max_depth=1).fit(PAPER_X[:, None], PAPER_Y)
    >>> text = trace(model, PAPER_X, PAPER_Y, file=io.StringIO())
    >>> "Iteration 1" in text and "gamma newton" in text
    True
    """
    import sys

    booster = getattr(model, "booster_", model)
    X, y, codes = _trace_rows(booster, X, y)
    n = X.shape[0]
    K = booster.ensemble.n_outputs
    leaves = booster.apply(X)
    F = np.empty((n, K))
    F[:] = booster.init_raw_
    staged = [F.copy()] + [np.asarray(raw, dtype=np.float64).reshape(n, K)
                           for raw in booster.staged_decision_function(X)]
    lines = [f"Gradient boosting trace: {n} rows, {booster.n_estimators_} iteration(s), "
             f"eta = {booster.learning_rate:g}, F_0 = "
             f"{np.round(np.asarray(booster.init_raw_), digits).tolist()}"]
    for m in range(booster.n_estimators_):
        lines += _trace_iteration(booster, m, X, y, codes, staged[m], staged[m + 1],
                                  leaves[:, m], digits)
    text = "\n".join(lines) + "\n"
    print(text, end="", file=sys.stdout if file is None else file)
    return text


def _trace_rows(booster, X, y):
    """X as 2-D, y as an array and the class codes of y; refuses a loss other than
    the log-loss and labels that are not the model's classes."""
    if booster.loss != "log_loss":
        raise ValueError(f"trace follows the paper's log-loss; this model's loss is "
                         f"{booster.loss!r}")
    X = np.asarray(X)
    if X.ndim == 1:
        X = X[:, None]
    y = np.asarray(y)
    classes = booster.classes_
    codes = np.searchsorted(classes, y)
    if y.shape != (X.shape[0],) or not (
            (codes < classes.size).all() and np.array_equal(classes[np.minimum(
                codes, classes.size - 1)], y)):
        raise ValueError(f"y must hold one label of the model's classes "
                         f"{classes.tolist()} per row of X")
    return X, y, codes


def _trace_iteration(booster, m, X, y, codes, before, after, leaves, digits):
    """The lines of iteration m: per tree, the rows' table and the leaves' table."""
    K = before.shape[1]
    p_before = _proba(booster, before)
    p_after = _proba(booster, after)
    log_odds = None
    if K > 1:
        # Each class's log-odds against the others at the start of the iteration,
        # as the fit's exact leaf solve holds them.
        log_odds = MultinomialLoss(K, leaf_solver="exact").start(
            codes, None, before, n_threads=1).log_odds
    labels = booster.classes_.tolist()  # Python values: 'a', not np.str_('a'), in the titles
    lines = []
    for k in range(K):
        column = 1 if K == 1 else k
        t = (codes == column).astype(np.float64)
        p = p_before[:, column]
        r = t - p
        leaf = leaves[:, k]
        ids = np.unique(leaf)
        title = f"Iteration {m + 1}" + ("" if K == 1 else f", class {labels[k]!r}")
        lines += ["", title, ""]
        lines += _row_table(m, X, y if K == 1 else t.astype(int), p, r, leaf, ids,
                            after[:, k], p_after[:, column], digits)
        lines += ["", f"Tree T_{m + 1}" + ("" if K == 1 else f" (class {labels[k]!r})")
                  + ": terminal nodes", ""]
        raw_k = before[:, 0] if K == 1 else log_odds[k]
        lines += _leaf_table(m, booster.estimators_[m, k], t, p, r, leaf, ids, raw_k, K,
                             digits)
    return lines


def _row_table(m, X, y, p, r, leaf, ids, raw_after, p_after, digits):
    """One line per row: i, x, y, p_{m-1}, r_m, its terminal node j, F_m and p_m."""
    n_x = min(X.shape[1], 3)
    w = 9 + digits
    number = {int(node): j + 1 for j, node in enumerate(ids)}
    header = f"{'index i':>8}" + "".join(f"{'x' + str(c + 1) if n_x > 1 else 'x':>{w}}"
                                        for c in range(n_x))
    header += (f"{'y':>6}{'p_' + str(m):>{w}}{'r_' + str(m + 1):>{w}}{'leaf j':>8}"
               f"{'F_' + str(m + 1):>{w}}{'p_' + str(m + 1):>{w}}")
    lines = [header]
    for i in range(X.shape[0]):
        row = f"{i + 1:>8}" + "".join(f"{X[i, c]:>{w}g}" for c in range(n_x))
        row += (f"{str(y[i]):>6}{_fmt(p[i], digits):>{w}}"
                f"{_fmt(r[i], digits):>{w}}{number[int(leaf[i])]:>8}"
                f"{_fmt(raw_after[i], digits):>{w}}"
                f"{_fmt(p_after[i], digits):>{w}}")
        lines.append(row)
    return lines


def _leaf_table(m, tree, t, p, r, leaf, ids, raw, K, digits):
    """One line per terminal node j: its rows, sum r, sum p(1 - p), gamma of both
    leaf solvers (from the log-odds ``raw``) and the tree's value."""
    from ._math import exact_leaf_values, newton_leaf_values

    w = 9 + digits
    dense = np.searchsorted(ids, leaf)
    newton = newton_leaf_values(r, p, dense)
    if K > 1:
        newton = newton * ((K - 1) / K)
    exact = exact_leaf_values(t.astype(np.intp), raw, dense)
    lines = [f"{'leaf j':>8}  {'Omega_' + str(m + 1) + ',j':<24}{'sum r':>{w}}"
             f"{'sum p(1-p)':>{w + 2}}{'gamma newton':>{w + 4}}"
             f"{'gamma exact':>{w + 4}}{'tree value':>{w + 4}}"]
    for j, node in enumerate(ids):
        rows = np.flatnonzero(dense == j)
        members = ", ".join(str(i + 1) for i in rows)
        if len(members) > 24:
            members = members[:20] + " ..."
        sum_r = sum(float(r[i]) for i in rows)
        sum_h = sum(float(p[i] * (1.0 - p[i])) for i in rows)
        lines.append(f"{j + 1:>8}  {members:<24}{_fmt(sum_r, digits):>{w}}"
                     f"{_fmt(sum_h, digits):>{w + 2}}"
                     f"{_fmt(newton[j], digits):>{w + 4}}"
                     f"{_fmt(exact[j], digits):>{w + 4}}"
                     f"{_fmt(tree.value[node], digits):>{w + 4}}")
    return lines


def _proba(booster, raw):
    return booster.proba_from_raw(raw[:, 0] if raw.shape[1] == 1 else raw)
