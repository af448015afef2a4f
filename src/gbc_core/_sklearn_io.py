"""scikit-learn's GradientBoostingClassifier as a model format: import and export.

:func:`from_sklearn` reads a fitted ``sklearn.ensemble.GradientBoostingClassifier``
into a gbc-core estimator; :func:`to_sklearn` writes a :class:`~gbc_core.Booster`
as a fitted scikit-learn one. Both go through the public attributes of an
:class:`~gbc_core.Ensemble` and a Booster (the trees' nodes, the offsets, K, F0, the
learning rate, the labels and feature names), like ``_model_io``.

The two models are the same function of X:

- a tree sends x left when ``x <= threshold``, on float32 x: scikit-learn compares
  the float32 value with its float64 threshold, gbc-core with ``threshold32``, the
  largest float32 not above the float64 threshold, which decides alike for every
  float32 x;
- both store a leaf's gamma without the learning rate and add ``learning_rate *
  gamma`` to raw score k, tree after tree in iteration order, from F0;
- a split's direction for missing values (NaN) is the trees' ``missing_go_to_left``
  (scikit-learn >= 1.3), which its trees' own ``predict``/``apply`` follow; its
  GradientBoostingClassifier refuses NaN in fit and predict, so that every gbc-core
  model is written as it is and every scikit-learn one read as its trees are.

scikit-learn is imported here only (and by ``_classifier``): importing gbc-core,
loading a model and scoring never load this module.
"""

import numpy as np

from ._booster import Booster
from ._common import NODE_DTYPE
from ._ensemble import Ensemble, _float32_at_most
from ._loss import loss_for

# Hyper-parameters the two estimators share (same name, same meaning). They shape a
# refit, not the trees read or written.
#: DummyClassifier strategies whose probabilities do not depend on the row.
_CONSTANT_DUMMY = ("prior", "most_frequent", "constant", "uniform")

_SHARED_PARAMS = (
    "learning_rate", "max_depth", "max_leaf_nodes", "min_samples_split", "min_samples_leaf",
    "min_weight_fraction_leaf", "subsample", "max_features", "validation_fraction",
    "n_iter_no_change", "tol", "min_impurity_decrease", "ccp_alpha",
)


def _sklearn_gbc():
    from sklearn.ensemble import GradientBoostingClassifier

    return GradientBoostingClassifier


# ----------------------------------------------------------------- import
def _init_raw_of(est, n_features):
    """F0 of a fitted scikit-learn GradientBoostingClassifier: zeros for
    ``init="zero"``, scikit-learn's own initial raw scores for a prior."""
    from sklearn.dummy import DummyClassifier

    init = est.init_
    if isinstance(init, str) and init == "zero":
        return np.zeros(est.n_trees_per_iteration_, dtype=np.float64), "zero"
    if not (isinstance(init, DummyClassifier) and init.strategy in _CONSTANT_DUMMY):
        raise ValueError(
            f"from_sklearn: the init estimator {init!r} cannot be represented; gbc-core "
            "models start from F0 = 0 (init='zero'), the class prior (the default "
            "init, or DummyClassifier(strategy='prior')) or the constant scores of a "
            "DummyClassifier of another constant strategy")
    # The init's raw scores as scikit-learn computes them (the link of its loss
    # applied to the clipped probabilities): the same for every row.
    row = np.zeros((1, n_features), dtype=np.float32)
    return np.asarray(est._raw_predict_init(row), dtype=np.float64)[0].copy(), "prior"


def _nodes_of_sklearn_tree(tree_):
    """gbc-core nodes (NODE_DTYPE) of a scikit-learn ``Tree`` of a gradient boosting
    stage (missing values go where the tree's ``missing_go_to_left`` sends them)."""
    n = tree_.node_count
    left = tree_.children_left.astype(np.int64)
    right = tree_.children_right.astype(np.int64)
    leaf = left == -1
    nodes = np.zeros(n, dtype=NODE_DTYPE)
    nodes["feature"] = np.where(leaf, -1, tree_.feature)
    nodes["left"] = left
    nodes["right"] = right
    threshold = np.where(leaf, 0.0, tree_.threshold.astype(np.float64))
    nodes["threshold"] = threshold
    nodes["threshold32"] = _float32_at_most(threshold)
    nodes["value"] = np.where(leaf, tree_.value[:, 0, 0], 0.0)
    nodes["n_samples"] = tree_.n_node_samples
    w = tree_.weighted_n_node_samples.astype(np.float64)
    nodes["weighted_n"] = w
    impurity = tree_.impurity.astype(np.float64)
    inner = np.flatnonzero(~leaf)
    # The weighted impurity decrease of each split (what scikit-learn's feature
    # importances add up), never below 0 through rounding.
    decrease = (w[inner] * impurity[inner] - w[left[inner]] * impurity[left[inner]]
                - w[right[inner]] * impurity[right[inner]])
    nodes["improvement"][inner] = np.maximum(decrease, 0.0)
    depth = np.zeros(n, dtype=np.int64)
    for j in inner:  # children come after their parents
        depth[left[j]] = depth[right[j]] = depth[j] + 1
    nodes["depth"] = np.minimum(depth, 255)
    nodes["missing_go_left"] = np.where(leaf, 0, tree_.missing_go_to_left)
    return nodes


def _params_of_sklearn(est, init):
    params = {name: getattr(est, name) for name in _SHARED_PARAMS}
    params["n_estimators"] = int(est.n_estimators_)
    params["loss"] = est.loss
    params["init"] = init
    random_state = est.random_state
    params["random_state"] = random_state if (
        random_state is None or isinstance(random_state, (int, np.integer))) else None
    return params


def from_sklearn(est):
    """A gbc-core model of a fitted scikit-learn ``GradientBoostingClassifier``.

    The trees, F0, the learning rate, the class labels and the feature names are
    read as they are: the model's probabilities are scikit-learn's (to rounding of
    the last bits: the raw scores are the same sums, the sigmoid or softmax is
    gbc-core's) and it can then be saved, scored by the command line, on Dask, and
    explained (``predict_contributions``).

    Parameters
    ----------
    est : sklearn.ensemble.GradientBoostingClassifier
        Fitted, with ``loss="log_loss"`` (binary or multiclass) or
        ``"exponential"``, and ``init="zero"``, the default prior or a
        ``DummyClassifier`` of a constant strategy (``"prior"``, ``"most_frequent"``,
        ``"constant"``, ``"uniform"``: its scores are F0).

    Returns
    -------
    gbc_core.GradientBoostingClassifier
        Fitted (its ``booster_`` holds the imported trees); its parameters are
        scikit-learn's where the two share them (``init`` is ``"zero"`` or
        ``"prior"``), which shape a refit only. A missing value (which scikit-learn's
        GradientBoostingClassifier refuses) goes where the trees'
        ``missing_go_to_left`` sends it.

    Raises
    ------
    TypeError
        For anything but a scikit-learn GradientBoostingClassifier.
    ValueError
        For an unfitted model, or an init estimator whose scores vary by row.

    Examples
    --------
    >>> import numpy as np
    >>> import gbc_core
    >>> from sklearn.ensemble import GradientBoostingClassifier as SklearnGBC
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]])
    >>> sk = SklearnGBC(n_estimators=5, max_depth=1).fit(X, [0, 0, 0, 1, 1, 1])
    >>> model = gbc_core.from_sklearn(sk)
    >>> bool(np.allclose(model.predict_proba(X), sk.predict_proba(X), rtol=0, atol=1e-12))
    True
    """
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    from ._classifier import GradientBoostingClassifier

    if not isinstance(est, _sklearn_gbc()):
        raise TypeError("from_sklearn expects a fitted sklearn.ensemble."
                        f"GradientBoostingClassifier, got {type(est).__name__}")
    try:
        check_is_fitted(est, "estimators_")
    except NotFittedError:
        raise ValueError("from_sklearn: the GradientBoostingClassifier is not fitted") from None
    try:
        ours = loss_for(len(est.classes_), est.loss)
    except (TypeError, ValueError):
        ours = None
    if ours is None or ours.sklearn_loss != est.loss:
        raise ValueError(
            f"from_sklearn: loss={est.loss!r} cannot be represented; gbc-core models "
            "the log-loss and the exponential loss")
    n_features = int(est.n_features_in_)
    init_raw, init = _init_raw_of(est, n_features)
    stages = est.estimators_
    trees = [_nodes_of_sklearn_tree(stages[m, k].tree_)
             for m in range(stages.shape[0]) for k in range(stages.shape[1])]
    ensemble = Ensemble.from_trees(trees, n_outputs=stages.shape[1], init_raw=init_raw,
                                   learning_rate=est.learning_rate, n_features=n_features)
    names = getattr(est, "feature_names_in_", None)
    params = _params_of_sklearn(est, init)
    booster = Booster(ensemble, est.classes_, feature_names=names, params=params,
                      max_features=int(est.max_features_), loss=est.loss)
    model = GradientBoostingClassifier(**params)
    model.booster_ = booster
    return model


# ----------------------------------------------------------------- export
def _sklearn_tree(tree, max_features, node_dtype):
    """A fitted scikit-learn ``DecisionTreeRegressor`` with the arrays of a
    :class:`~gbc_core.Tree`'s ``tree_`` (scikit-learn's form and numbering; inner
    nodes' values and impurities derived as that view derives them)."""
    from sklearn.tree import DecisionTreeRegressor
    from sklearn.tree._tree import Tree

    view = tree.tree_
    out = np.zeros(view.node_count, dtype=node_dtype)
    fields = {
        "left_child": view.children_left,
        "right_child": view.children_right,
        "feature": view.feature,
        "threshold": view.threshold,
        "impurity": view.impurity,
        "n_node_samples": view.n_node_samples,
        "weighted_n_node_samples": view.weighted_n_node_samples,
        "missing_go_to_left": view.missing_go_to_left,
    }
    for name in node_dtype.names:
        out[name] = fields[name]
    tree_ = Tree(view.n_features, np.array([1], dtype=np.intp), 1)
    tree_.__setstate__({"max_depth": view.max_depth, "node_count": view.node_count,
                        "nodes": out, "values": np.array(view.value)})
    est = DecisionTreeRegressor()
    est.tree_ = tree_
    est.n_features_in_ = view.n_features
    est.n_outputs_ = 1
    est.max_features_ = max_features
    return est


def _prior_init(booster, n_features, link):
    """A fitted ``DummyClassifier(strategy="prior")`` whose raw scores, ``link`` (that
    of scikit-learn's loss) of its probabilities, are F0 (to rounding)."""
    from sklearn.dummy import DummyClassifier

    init_raw = booster.ensemble.init_raw
    K = booster.n_classes_
    init = DummyClassifier(strategy="prior")
    # scikit-learn fits the init estimator on the class codes (as floats).
    init.fit(np.zeros((K, n_features)), np.arange(K, dtype=np.float64))
    # The model's own sigmoid or softmax of F0.
    prior = booster.proba_from_raw(init_raw.reshape(1, -1), n_jobs=1)[0]
    if K == 2:
        p = prior[1]
        # The probability nearby whose logit is F0 exactly, where there is one.
        for _ in range(4):
            logit = float(link(np.array([p]))[0])
            if logit == init_raw[0]:
                break
            p = np.nextafter(p, np.inf if logit < init_raw[0] else -np.inf)
        prior = np.array([1.0 - p, p])
    init.class_prior_ = prior
    return init


def to_sklearn(booster):
    """A fitted scikit-learn ``GradientBoostingClassifier`` predicting as ``booster``.

    Parameters
    ----------
    booster : Booster

    Returns
    -------
    sklearn.ensemble.GradientBoostingClassifier
        ``estimators_`` holds ``DecisionTreeRegressor`` s with the trees as the
        ``tree_`` of gbc-core's (nodes numbered as gbc-core's ``apply`` numbers them; inner
        nodes' values are their leaves' cover-weighted means, impurities such that
        the feature importances are gbc-core's, each split's ``missing_go_to_left``
        gbc-core's direction for missing values, which the trees' ``predict`` and
        ``apply`` follow; the GradientBoostingClassifier itself refuses NaN);
        ``init_`` is a ``DummyClassifier(strategy="prior")`` whose raw scores are F0
        (for F0 = 0, ``init="zero"``, the uniform prior: raw scores 0, exactly for
        two classes, to a few 1e-16 and the same for every class otherwise, so that
        shap's ``TreeExplainer`` and ``partial_dependence(method="recursion")``
        take the model; ``init`` is then None), or the booster's fitted
        ``init_estimator`` (scores that vary by row); ``loss`` is
        the booster's. It is for
        prediction and inspection: the record of the fit (``train_score_``, the
        out-of-bag scores) is not written, so scikit-learn cannot warm-start from it.

    Raises
    ------
    ValueError
        For an F0 that scikit-learn's prior cannot give (to 1e-12), a model
        without trees, or a model with categorical features (scikit-learn's
        GradientBoostingClassifier has no categorical splits).
    """
    from sklearn.tree._tree import Tree

    if not isinstance(booster, Booster):
        raise TypeError(f"to_sklearn expects a Booster, got {type(booster).__name__}")
    ensemble = booster.ensemble
    if ensemble.categorical is not None:
        columns = np.flatnonzero(ensemble.categorical).tolist()
        names = booster.feature_names_in_
        shown = columns if names is None else [str(names[j]) for j in columns]
        raise ValueError(
            f"to_sklearn: the model has categorical features {shown[:20]}"
            f"{' ...' if len(shown) > 20 else ''}, whose splits send a set of categories "
            "left; scikit-learn's GradientBoostingClassifier has no categorical splits "
            "(its trees only compare x <= threshold): fit with categorical_features=None "
            "on encoded columns to export")
    if ensemble.n_iterations == 0:
        raise ValueError("to_sklearn: the model has no trees, and a fitted scikit-learn "
                         "GradientBoostingClassifier has at least one iteration")
    sklearn_loss = booster.loss_function.sklearn_loss
    if sklearn_loss is None:
        raise ValueError(f"to_sklearn: the loss {booster.loss!r} is not one of "
                         "scikit-learn's (its GradientBoostingClassifier has the log-loss "
                         "and the exponential loss)")
    n_features, K = ensemble.n_features, ensemble.n_outputs
    per_row = booster.init_estimator is not None
    params = {k: v for k, v in booster.params.items() if k in _SHARED_PARAMS}
    params["loss"] = sklearn_loss
    random_state = booster.params.get("random_state")
    if random_state is None or isinstance(random_state, (int, np.integer)):
        params["random_state"] = random_state
    est = _sklearn_gbc()(n_estimators=ensemble.n_iterations, init=None,
                         **params)
    est.learning_rate = ensemble.learning_rate
    est.classes_ = booster.classes_.copy()
    est.n_classes_ = booster.n_classes_
    est.n_trees_per_iteration_ = K
    est.n_features_in_ = n_features
    if booster.feature_names_in_ is not None:
        est.feature_names_in_ = np.asarray(booster.feature_names_in_, dtype=object)
    max_features = booster.max_features_ if booster.max_features_ is not None else n_features
    est.max_features_ = int(max_features)
    est._loss = est._get_loss(sample_weight=None)
    node_dtype = Tree(1, np.array([1], dtype=np.intp), 1).__getstate__()["nodes"].dtype
    stages = booster.estimators_
    for m in range(ensemble.n_iterations):
        for k in range(K):
            stages[m, k] = _sklearn_tree(stages[m, k], int(max_features), node_dtype)
    est.estimators_ = stages
    est.n_estimators_ = ensemble.n_iterations
    if per_row:
        # scikit-learn's own path: the fitted init estimator's probabilities, clipped,
        # through its loss's link, as gbc-core computes them.
        est.init = est.init_ = booster.init_estimator
        return est
    # F0 = 0 (init="zero") too is written as a prior, the uniform one, whose raw
    # scores scikit-learn's links make 0 (binary: exactly; K classes: the same value
    # for every class, 0 or within a few 1e-16, so the same probabilities): shap's
    # TreeExplainer refuses init_="zero" and partial_dependence(method="recursion")
    # warns on it.
    est.init_ = _prior_init(booster, n_features, est._loss.link.link)
    got = est._raw_predict_init(np.zeros((1, n_features), dtype=np.float32))[0]
    error = np.abs(got - ensemble.init_raw)
    if not (error <= 1e-12 * np.maximum(1.0, np.abs(ensemble.init_raw))).all():
        raise ValueError(
            f"to_sklearn: F0 = {ensemble.init_raw.tolist()} cannot be written as "
            "scikit-learn's prior (its raw scores would be "
            f"{np.asarray(got).tolist()})")
    return est
