"""Plots of a fitted model: importances, a tree, losses per iteration, contributions.

matplotlib is an optional dependency (the ``plot`` extra: ``pip install ".[plot]"``
from a checkout), imported when a function is called. Every function takes the
estimator (:class:`~gbc_core.GradientBoostingClassifier`) or a
:class:`~gbc_core.Booster` (a loaded model file), draws on ``ax`` (a new figure's
axes when None) and returns that ``matplotlib.axes.Axes``. Nothing here imports
scikit-learn.
"""

from __future__ import annotations

import numpy as np

__all__ = ["plot_importance", "plot_tree", "plot_metric", "plot_contributions", "importances",
           "staged_loss"]

#: The importance types of :func:`plot_importance`.
IMPORTANCE_TYPES = ("gain", "split", "shap")


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError('gbc_core.plotting needs matplotlib: pip install matplotlib '
                          '(the plot extra, pip install ".[plot]" from a checkout)') from None
    return plt


def _axes(ax, figsize=None):
    if ax is not None:
        return ax
    _, ax = _pyplot().subplots(figsize=figsize)
    return ax


def _booster(model):
    """The fitted :class:`Booster` of ``model`` (an estimator or a Booster)."""
    if hasattr(model, "ensemble") and hasattr(model, "loss_function"):
        return model
    if "booster_" in getattr(model, "__dict__", {}):  # a fitted estimator
        return model.booster_
    if hasattr(model, "fit") and hasattr(model, "predict_contributions"):
        # The estimator, not fitted: scikit-learn's error (the estimator has already
        # imported scikit-learn).
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(f"this {type(model).__name__} is not fitted: call fit "
                             "before plotting it")
    if hasattr(model, "fit"):
        raise TypeError(f"{type(model).__name__} is not a gbc-core model: pass a "
                        "gbc_core.GradientBoostingClassifier or a gbc_core.Booster")
    raise TypeError(f"expected a gbc-core model (GradientBoostingClassifier or Booster), "
                    f"got {type(model).__name__}")


def _feature_names(booster, feature_names=None):
    n = booster.n_features_in_
    if feature_names is not None:
        names = [str(s) for s in feature_names]
        if len(names) != n:
            raise ValueError(f"feature_names has {len(names)} names; the model has {n} "
                             "features")
        return names
    if booster.feature_names_in_ is not None:
        return [str(s) for s in booster.feature_names_in_]
    return [f"f{j}" for j in range(n)]


def _output_index(booster, class_label):
    """The output (tree per iteration) of ``class_label``: 0 for two classes."""
    if booster.ensemble.n_outputs == 1:
        if class_label is not None:
            raise ValueError("class_label applies to models of 3 or more classes (this "
                             "one has one tree per iteration)")
        return 0
    if class_label is None:
        raise ValueError(f"the model has one tree per class and iteration: pass "
                         f"class_label, one of {booster.classes_.tolist()}")
    hits = np.flatnonzero(booster.classes_ == class_label)
    if hits.size != 1:
        raise ValueError(f"class_label {class_label!r} is not a class of the model "
                         f"({booster.classes_.tolist()})")
    return int(hits[0])


def importances(model, importance_type="gain", X=None):
    """Each feature's importance, as :func:`plot_importance` draws it.

    Parameters
    ----------
    model : GradientBoostingClassifier or Booster
        A fitted model.
    importance_type : {"gain", "split", "shap"}, default="gain"
        ``"gain"``: the normalised total squared-error decrease of the splits on each
        feature (``feature_importances_``); ``"split"``: the number of splits on
        each feature over all trees; ``"shap"``: the mean absolute TreeSHAP value of
        each feature over the rows of ``X`` (summed over the classes' outputs for 3
        or more classes).
    X : array-like of shape (n_samples, n_features), optional
        The rows of ``importance_type="shap"`` (required there, unused otherwise).

    Returns
    -------
    ndarray of float64, shape (n_features,)

    Examples
    --------
    >>> import numpy as np
    >>> from gbc_core import GradientBoostingClassifier
    >>> from gbc_core.plotting import importances
    >>> X = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 0.0], [3.0, 0.0]])
    >>> model = GradientBoostingClassifier(n_estimators=3, max_depth=1).fit(X, [0, 0, 1, 1])
    >>> importances(model, "split")
    array([3., 0.])
    """
    booster = _booster(model)
    if importance_type == "gain":
        return np.asarray(booster.feature_importances_, dtype=np.float64)
    if importance_type == "split":
        counts = np.zeros(booster.n_features_in_, dtype=np.float64)
        for nodes in booster.trees():
            feature = nodes["feature"][nodes["feature"] >= 0]
            counts += np.bincount(feature, minlength=counts.size)
        return counts
    if importance_type == "shap":
        if X is None:
            raise ValueError('importance_type="shap" needs X: the rows whose TreeSHAP '
                             "values are averaged")
        phi = booster.predict_contributions(X)
        phi = phi[..., :-1]  # the last column is the expected value
        absolute = np.abs(phi)
        if absolute.ndim == 3:  # (n, K, n_features): summed over the classes
            absolute = absolute.sum(axis=1)
        return absolute.mean(axis=0)
    raise ValueError(f"importance_type must be one of {IMPORTANCE_TYPES}, got "
                     f"{importance_type!r}")


def plot_importance(model, *, importance_type="gain", X=None, max_num_features=None,
                    feature_names=None, ax=None, title=None, show_values=True):
    """Horizontal bars of each feature's importance, the largest on top.

    Features of zero importance are left out; ties keep the features' order.

    Parameters
    ----------
    model : GradientBoostingClassifier or Booster
        A fitted model.
    importance_type : {"gain", "split", "shap"}, default="gain"
        What is drawn (see :func:`importances`): the normalised squared-error
        decrease (``feature_importances_``), the number of splits, or the mean
        absolute TreeSHAP value over the rows of ``X``.
    X : array-like of shape (n_samples, n_features), optional
        Rows for ``importance_type="shap"``.
    max_num_features : int, optional
        Draw only this many of the most important features.
    feature_names : sequence of str, optional
        Names of the features (default: the model's, else ``f0``, ``f1``, ...).
    ax : matplotlib.axes.Axes, optional
        Where to draw (default: a new figure).
    title : str, optional
        Title of the axes (default: says the importance type).
    show_values : bool, default=True
        Write each bar's value beside it.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from gbc_core import GradientBoostingClassifier
    >>> from gbc_core.datasets import load_higgs_sample
    >>> from gbc_core.plotting import plot_importance
    >>> X, y, _, _ = load_higgs_sample()
    >>> model = GradientBoostingClassifier(n_estimators=20).fit(X, y)
    >>> ax = plot_importance(model, max_num_features=5)
    >>> len(ax.patches)
    5
    """
    booster = _booster(model)
    names = _feature_names(booster, feature_names)
    values = importances(booster, importance_type, X)
    used = np.flatnonzero(values > 0)
    order = used[np.argsort(-values[used], kind="stable")]
    if max_num_features is not None:
        if int(max_num_features) < 1:
            raise ValueError(f"max_num_features must be >= 1, got {max_num_features!r}")
        order = order[: int(max_num_features)]
    ax = _axes(ax, figsize=(6.4, max(2.0, 0.35 * len(order) + 1.2)))
    positions = np.arange(len(order))[::-1]  # the largest on top
    ax.barh(positions, values[order], height=0.6, color="#3b75af")
    ax.set_yticks(positions)
    ax.set_yticklabels([names[j] for j in order])
    if show_values:
        for y, j in zip(positions, order):
            v = values[j]
            text = f"{int(v)}" if importance_type == "split" else f"{v:.3g}"
            ax.text(v, y, " " + text, va="center", fontsize=8)
        if len(order):
            ax.set_xlim(0, values[order].max() * 1.15)
    xlabel = {"gain": "importance (normalised squared-error decrease)",
              "split": "number of splits",
              "shap": "mean |SHAP value| (raw score)"}[importance_type]
    ax.set_xlabel(xlabel)
    ax.set_ylabel("feature")
    ax.set_title(title if title is not None else f"Feature importance ({importance_type})")
    return ax


# ---------------------------------------------------------------------- trees
def _layout(nodes):
    """(x, y) of every node: leaves in order left to right, a split centred over its
    children, the root at y = 0 and each level one lower."""
    n = len(nodes)
    x = np.zeros(n)
    y = np.zeros(n)
    next_leaf = [0.0]
    # Iterative post-order: children placed before their parent.
    stack = [(0, 0, False)]
    while stack:
        i, depth, children_done = stack.pop()
        y[i] = -depth
        if nodes["feature"][i] < 0:
            x[i] = next_leaf[0]
            next_leaf[0] += 1.0
            continue
        left, right = int(nodes["left"][i]), int(nodes["right"][i])
        if children_done:
            x[i] = 0.5 * (x[left] + x[right])
            continue
        stack.append((i, depth, True))
        stack.append((right, depth + 1, False))
        stack.append((left, depth + 1, False))
    return x, y


def plot_tree(model, iteration=0, *, class_label=None, feature_names=None, ax=None,
              precision=3, fontsize=8):
    """Draw one tree: each split's threshold and missing-value direction, each leaf's
    value, and every node's cover.

    A split reads ``feature <= threshold``, or ``feature in {cat_a, cat_b, ...}`` on a
    categorical feature (the categories it sends left, from the model's
    ``categories_``; the first 8 of more, then "... and N more");
    its left edge is "yes" and its right edge "no", and the side that missing values
    (NaN) take is marked "+ missing" (a category unseen in training goes there too).
    A leaf shows the value the tree adds to the raw score, ``learning_rate * gamma``
    (gamma, the stored leaf value, beside it). Every node shows its cover: the sum
    of the sample weights of the training rows that reached it (the row count
    without weights), the weight TreeSHAP averages a feature over.

    Parameters
    ----------
    model : GradientBoostingClassifier or Booster
        A fitted model.
    iteration : int, default=0
        The iteration of the tree (0-based; negative counts from the end).
    class_label : label, optional
        For 3 or more classes, the class whose tree of ``iteration`` is drawn
        (required there).
    feature_names : sequence of str, optional
        Names of the features (default: the model's, else ``f0``, ``f1``, ...).
    ax : matplotlib.axes.Axes, optional
        Where to draw (default: a new figure sized to the tree).
    precision : int, default=3
        Significant digits of thresholds, values and covers.
    fontsize : int, default=8
        Size of the nodes' text.

    Returns
    -------
    matplotlib.axes.Axes
        The axes; each node is one of ``ax.texts`` with a box, in node order, its
        ``gid`` ``"node <i>"``.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from gbc_core.paper import paper_example
    >>> from gbc_core.plotting import plot_tree
    >>> model, _ = paper_example()
    >>> ax = plot_tree(model, iteration=0)
    >>> [t.get_gid() for t in ax.texts if t.get_gid()]
    ['node 0', 'node 1', 'node 2']
    """
    from ._categories import describe_split

    booster = _booster(model)
    names = _feature_names(booster, feature_names)
    output = _output_index(booster, class_label)
    nodes = booster.ensemble.tree_nodes(iteration, output)
    eta = booster.learning_rate
    x, y = _layout(nodes)
    n_leaves = int(np.sum(nodes["feature"] < 0))
    depth = int(-y.min())
    ax = _axes(ax, figsize=(max(4.0, 1.9 * n_leaves), max(2.5, 1.5 * (depth + 1))))
    p = int(precision)
    categorical = booster.ensemble.categorical

    def cover(i):
        w, n = float(nodes["weighted_n"][i]), int(nodes["n_samples"][i])
        if w == n:  # no weights: the row count
            return f"cover {n:,}"
        return f"cover {w:,.{p}g} ({n:,} rows)"

    for i in range(len(nodes)):
        f = int(nodes["feature"][i])
        if f >= 0:
            for child, side in ((int(nodes["left"][i]), "yes"),
                                (int(nodes["right"][i]), "no")):
                ax.plot([x[i], x[child]], [y[i], y[child]], color="#888888", lw=1,
                        zorder=1)
                missing = bool(nodes["missing_go_left"][i]) == (side == "yes")
                ax.text(0.5 * (x[i] + x[child]), 0.5 * (y[i] + y[child]),
                        side + (" + missing" if missing else ""), fontsize=fontsize - 1,
                        ha="center", va="center", color="#555555",
                        bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none"),
                        zorder=2)
    for i in range(len(nodes)):
        f = int(nodes["feature"][i])
        if f >= 0:
            if categorical is not None and categorical[f]:
                test = "in " + describe_split(booster.ensemble, nodes[i],
                                              booster.categories_)
            else:
                test = f"<= {nodes['threshold'][i]:.{p}g}"
            text = f"{names[f]} {test}\n{cover(i)}"
            box = dict(boxstyle="round,pad=0.35", fc="#e8f0f8", ec="#3b75af")
        else:
            value = float(nodes["value"][i])
            text = (f"leaf {eta * value:+.{p}g}\n(gamma {value:.{p}g})\n{cover(i)}")
            box = dict(boxstyle="round,pad=0.35", fc="#fdf1e3", ec="#d08a2e")
        ax.text(x[i], y[i], text, ha="center", va="center", fontsize=fontsize, bbox=box,
                gid=f"node {i}", zorder=3)
    ax.set_xlim(x.min() - 0.7, x.max() + 0.7)
    ax.set_ylim(y.min() - 0.6, 0.6)
    ax.set_axis_off()
    what = f"tree of iteration {iteration}"
    if output or booster.ensemble.n_outputs > 1:
        what += f", class {booster.classes_.tolist()[output]!r}"
    ax.set_title(what)
    return ax


def _plot_recorded_metric(model, metric, eval_set, ax, title):
    """``plot_metric`` with a ``metric``: its ``evals_result_`` curves and those of
    ``eval_set``."""
    import types

    from ._params import EVAL_METRICS
    from ._scoring import METRICS

    if not isinstance(metric, str) or metric not in EVAL_METRICS:
        raise ValueError(f"metric must be one of {list(EVAL_METRICS)}, got {metric!r}")
    booster = _booster(model)
    evals = getattr(model, "evals_result_", None) or {}
    curves = [(name, values[metric]) for name, values in evals.items() if metric in values]
    if not curves and eval_set is None:
        raise ValueError(
            f"the model recorded no {metric!r} per iteration (evals_result_ is a fitted "
            "estimator's, with the metrics of its eval_metric): fit with "
            f"eval_metric={metric!r} and an eval_set, or give eval_set here")
    ax = _axes(ax)
    for name, values in curves:
        ax.plot(np.arange(1, len(values) + 1), np.asarray(values, np.float64), label=name)
    if eval_set is not None:
        if not isinstance(eval_set, dict):
            raise TypeError("eval_set must be a dict of name -> (X, y)")
        loss = booster.loss_function
        ev = types.SimpleNamespace(loss=loss, K=booster.n_classes_,
                                   proba=lambda raw: loss.proba(raw, 1))
        for name, (X, y) in eval_set.items():
            codes = _codes(booster, y, f"eval_set {name!r}")
            values = []
            for decision in booster.staged_decision_function(X):
                raw = np.asarray(decision, dtype=np.float64).reshape(codes.shape[0], -1)
                values.append(METRICS[metric](ev, codes, raw, None))
            ax.plot(np.arange(1, len(values) + 1), values, label=str(name))
    best = getattr(booster, "best_iteration_", None)
    if best is not None:
        ax.axvline(best, color="#555555", ls=":", lw=1, label="_best iteration")
    ax.set_xlabel("iteration")
    ax.set_ylabel(metric)
    ax.legend()
    ax.set_title(title if title is not None else f"{metric} per iteration")
    return ax


# ---------------------------------------------------------------------- losses


def _codes(booster, y, what):
    classes = booster.classes_
    y = np.asarray(y).reshape(-1)
    index = {c: k for k, c in enumerate(classes.tolist())}
    codes = np.empty(y.shape[0], dtype=np.intp)
    for i, label in enumerate(y.tolist()):
        code = index.get(label)
        if code is None:
            raise ValueError(f"{what}: label {label!r} is not a class of the model "
                             f"({classes.tolist()})")
        codes[i] = code
    return codes


def staged_loss(model, X, y):
    """The mean loss of ``model`` on ``(X, y)`` after each iteration.

    The log-loss (binomial or multinomial) or, for ``loss="exponential"``, the
    exponential loss, as the fit's ``train_score_`` divided by the loss's
    ``score_factor`` (scikit-learn's deviance is twice the binomial log-loss).

    Parameters
    ----------
    model : GradientBoostingClassifier or Booster
        A fitted model.
    X : array-like of shape (n_samples, n_features)
        Rows.
    y : array-like of shape (n_samples,)
        Their labels, classes of the model.

    Returns
    -------
    ndarray of float64, shape (n_iterations,)

    Examples
    --------
    >>> from gbc_core.paper import PAPER_X, PAPER_Y, paper_example
    >>> from gbc_core.plotting import staged_loss
    >>> model, _ = paper_example()
    >>> staged_loss(model, PAPER_X[:, None], PAPER_Y).round(4)
    array([0.6826, 0.6825, 0.6825])
    """
    booster = _booster(model)
    codes = _codes(booster, y, "y")
    loss = booster.loss_function
    out = []
    for decision in booster.staged_decision_function(X):
        raw = np.asarray(decision, dtype=np.float64)
        if raw.shape[0] != codes.shape[0]:
            raise ValueError(f"y has {codes.shape[0]} labels for {raw.shape[0]} rows of X")
        out.append(loss.loss(codes, raw.reshape(raw.shape[0], -1)))
    return np.asarray(out)


def plot_metric(model, *, metric=None, eval_set=None, ax=None, title=None):
    """The loss per iteration: training, validation and out-of-bag, as recorded by
    the fit, and the loss on any data given in ``eval_set``; or, with ``metric``,
    that metric per iteration of every set in the estimator's ``evals_result_``.

    Curves: "train" (``train_score_``, the in-bag rows), "validation"
    (``validation_score_``, the fit's ``eval_set`` or hold-out, when there was one),
    "out-of-bag" (``oob_scores_``, with ``subsample < 1``) and one per entry of
    ``eval_set``; all in the same units, the mean log-loss (binomial or
    multinomial; the exponential loss for ``loss="exponential"``). With early
    stopping a dotted line marks ``best_iteration_``, the iterations kept.

    With ``metric`` (a name of the estimator's ``eval_metric``: ``"loss"``,
    ``"log_loss"``, ``"roc_auc"``, ``"accuracy"``, ``"error"``), the curves are
    the values ``evals_result_`` recorded for that metric, one per set that has it
    (as LightGBM's ``plot_metric``), plus the metric of each ``eval_set`` entry
    computed from the staged raw scores as the fit computes it.

    Parameters
    ----------
    model : GradientBoostingClassifier or Booster
        A fitted model (``metric`` reads a fitted estimator's ``evals_result_``; a
        Booster has none: give ``eval_set``).
    metric : str, optional
        A metric of ``evals_result_`` to draw instead of the fit's losses.
    eval_set : dict of str to (X, y), optional
        More data whose loss (or ``metric``) per iteration is drawn, by name (e.g.
        ``{"test": (X_test, y_test)}``).
    ax : matplotlib.axes.Axes, optional
        Where to draw (default: a new figure).
    title : str, optional
        Title of the axes.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from gbc_core import GradientBoostingClassifier
    >>> from gbc_core.datasets import load_higgs_sample
    >>> from gbc_core.plotting import plot_metric
    >>> X, y, X_test, y_test = load_higgs_sample()
    >>> model = GradientBoostingClassifier(n_estimators=30).fit(X, y)
    >>> ax = plot_metric(model, eval_set={"test": (X_test, y_test)})
    >>> [line.get_label() for line in ax.get_lines()]
    ['train', 'test']
    >>> model = GradientBoostingClassifier(n_estimators=30, eval_metric="roc_auc").fit(
    ...     X, y, eval_set=[(X, y), (X_test, y_test)], eval_names=["training", "test"])
    >>> ax = plot_metric(model, metric="roc_auc")
    >>> [line.get_label() for line in ax.get_lines()]
    ['training', 'test']
    """
    if metric is not None:
        return _plot_recorded_metric(model, metric, eval_set, ax, title)
    booster = _booster(model)
    factor = booster.loss_function.score_factor
    ax = _axes(ax)
    # (A model without the record of its fit, e.g. built from its trees, has no
    # train curve.)
    curves = [] if booster.train_score_ is None else [("train", booster.train_score_)]
    if not curves and eval_set is None:
        raise ValueError("the model holds no record of its fit (train_score_ is None): "
                         "give eval_set to draw the loss on data")
    validation = getattr(booster, "validation_score_", None)
    if validation is not None and len(validation):
        curves.append(("validation", validation))
    oob = getattr(booster, "oob_scores_", None)
    if oob is not None and len(oob) and np.any(oob != 0):
        curves.append(("out-of-bag", oob))
    for name, scores in curves:
        scores = np.asarray(scores, dtype=np.float64) / factor
        ax.plot(np.arange(1, len(scores) + 1), scores, label=name)
    if eval_set is not None:
        if not isinstance(eval_set, dict):
            raise TypeError("eval_set must be a dict of name -> (X, y)")
        for name, (X, y) in eval_set.items():
            scores = staged_loss(booster, X, y)
            ax.plot(np.arange(1, len(scores) + 1), scores, label=str(name))
    best = getattr(booster, "best_iteration_", None)
    if best is not None:
        ax.axvline(best, color="#555555", ls=":", lw=1, label="_best iteration")
        ax.text(best, ax.get_ylim()[1], f" best iteration {best}", va="top", fontsize=8,
                color="#555555")
    ax.set_xlabel("iteration")
    ax.set_ylabel(f"mean {booster.loss_function.label}")
    ax.legend()
    ax.set_title(title if title is not None else "Loss per iteration")
    return ax


def plot_contributions(model, X, *, row=0, class_label=None, max_num_features=10,
                       feature_names=None, ax=None, title=None):
    """One row's TreeSHAP contributions as a waterfall, from the expected value to
    the row's raw score F(x).

    Bars go from the expected value (the average raw score over the training
    covers) through each feature's contribution, the largest in absolute value
    first; features past ``max_num_features`` are summed into one bar. Positive
    contributions are red, negative blue.

    Parameters
    ----------
    model : GradientBoostingClassifier or Booster
        A fitted model.
    X : array-like of shape (n_samples, n_features)
        Rows; only ``X[row]`` is explained.
    row : int, default=0
        The row of ``X`` explained.
    class_label : label, optional
        For 3 or more classes, the class whose raw score is explained (required
        there).
    max_num_features : int, default=10
        Features drawn one by one; the rest are one bar.
    feature_names : sequence of str, optional
        Names of the features (default: the model's, else ``f0``, ``f1``, ...).
    ax : matplotlib.axes.Axes, optional
        Where to draw (default: a new figure).
    title : str, optional
        Title of the axes.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from gbc_core import GradientBoostingClassifier
    >>> from gbc_core.datasets import load_higgs_sample
    >>> from gbc_core.plotting import plot_contributions
    >>> X, y, _, _ = load_higgs_sample()
    >>> model = GradientBoostingClassifier(n_estimators=20).fit(X, y)
    >>> ax = plot_contributions(model, X[:5], row=2, max_num_features=4)
    >>> len(ax.patches)   # 4 features and the rest
    5
    """
    booster = _booster(model)
    names = _feature_names(booster, feature_names)
    output = _output_index(booster, class_label)
    if int(max_num_features) < 1:
        raise ValueError(f"max_num_features must be >= 1, got {max_num_features!r}")
    from ._validation import is_sparse_matrix, take_rows

    if hasattr(X, "iloc"):
        X_row = X.iloc[[row]]
    elif is_sparse_matrix(X):  # the row, still sparse
        X_row = take_rows(X, [row], "csr")
    else:
        X_row = np.asarray(X)[[row]]
    phi = booster.predict_contributions(X_row)
    phi = phi[0] if phi.ndim == 2 else phi[0, output]
    base, contrib = float(phi[-1]), phi[:-1]
    order = np.argsort(-np.abs(contrib), kind="stable")
    shown = order[: int(max_num_features)]
    rest = order[int(max_num_features):]
    labels = [names[j] for j in shown]
    values = [float(contrib[j]) for j in shown]
    if len(rest):
        labels.append(f"{len(rest)} other features")
        values.append(float(contrib[rest].sum()))
    ax = _axes(ax, figsize=(6.4, max(2.5, 0.4 * len(values) + 1.5)))
    start = base
    positions = np.arange(len(values))[::-1]
    for pos, v in zip(positions, values):
        ax.barh(pos, v, left=start, height=0.6, color="#d9534f" if v >= 0 else "#3b75af")
        ax.text(max(start, start + v), pos, f" {v:+.3g}", va="center", fontsize=8)
        start += v
    ax.axvline(base, color="#555555", lw=1, ls=":")
    ax.axvline(start, color="#222222", lw=1)
    ax.set_yticks(positions)
    ax.set_yticklabels(labels)
    ax.set_xlabel(f"raw score F(x): expected value {base:.3g} -> {start:.3g}")
    ax.set_ylabel("feature")
    lo = min(base, start, *(np.cumsum(values) + base))
    hi = max(base, start, *(np.cumsum(values) + base))
    pad = 0.15 * (hi - lo or 1.0)
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_title(title if title is not None else f"Contributions to F(x) of row {row}")
    return ax
