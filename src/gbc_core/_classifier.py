"""The scikit-learn estimator: a thin wrapper around the core.

``GradientBoostingClassifier`` checks its parameters (``_params``) and its inputs
(``_validation``), prepares the data of a fit (class codes, weights, the
early-stopping hold-out) and runs the boosting loop (``_boosting``); the fitted model
is a :class:`~gbc_core.Booster` (``booster_``), which predicts, saves and loads. What
scikit-learn gives every estimator (``get_params``/``set_params``, ``clone``,
metadata routing, the HTML repr, the feature-name warnings, ``score``) comes from
its base classes. With ``_sklearn_io`` (scikit-learn's own model in and out), this is
the only module that imports scikit-learn.
"""

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.dummy import DummyClassifier
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import validate_data

from . import _leaves, _model_io
from ._booster import Booster
from ._boosting import (EarlyStopping, Log, boost, holdout_draw, holdout_sizes,
                        warm_start_from)
from ._categories import categorical_mask, categorical_params, encode, fit_encode
from ._docstrings import fill_docs
from ._loss import loss_for
from ._params import DEFAULTS, check_params, effective_n_threads, resolve, seed_from
from ._record import FitRecord
from ._scoring import (HOLD_OUT, Evaluation, checked_eval_sets, evals_result,
                       metric_names, scorer_of)
from ._split_methods import method_named
from ._validation import (
    align_columns,
    check_features,
    check_label_values,
    check_sample_weight,
    check_target,
    feature_names_of,
    is_sparse_matrix,
    missing_label_rows,
    missing_labels_error,
    scale_weights,
    take_rows,
)


def _fitted_attribute(name, doc):
    """A fitted attribute read from ``booster_``; absent (AttributeError) before fit
    or where the booster has None."""

    def get(self):
        if "booster_" not in self.__dict__:
            raise AttributeError(f"{name} is set by fit; this "
                                 f"{type(self).__name__} is not fitted")
        value = getattr(self.booster_, name)
        if value is None:
            raise AttributeError(f"this model has no {name}")
        return value

    return property(get, doc=doc)


#: Docstring pieces of the scoring methods (``_docstrings.fill_docs``): a docstring
#: line ``<<name>>`` stands for the piece ``name``.
_DOC_PIECES = {
    "of_X": (
        "Parameters\n----------\n"
        "X : {array-like, sparse matrix} of shape (n_samples, n_features)\n"
        "    Rows to score: a NumPy array, a pandas or polars DataFrame (columns matched by\n"
        "    name when the model was fitted with names) or anything with ``__array__``;\n"
        "    NaN is a missing value."),
    "examples": (
        "Examples\n--------\n"
        ">>> from gbc_core import GradientBoostingClassifier\n"
        ">>> X = [[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]]\n"
        ">>> model = GradientBoostingClassifier(n_estimators=5, max_depth=1).fit(X, [0, 0, 0, 1, 1, 1])"),
}


@fill_docs(_DOC_PIECES)
class GradientBoostingClassifier(ClassifierMixin, BaseEstimator):
    """Gradient boosting for classification with exact splits.

    The model of H.-H. Chen, "Understanding Gradient Boosting Classifier: Training,
    Prediction, and the Role of gamma_j" (Algorithms 1 and 2): starting from F0, each
    iteration fits a squared-error regression tree to the residuals r = y - p, sets
    each leaf to gamma_j = sum r / sum p(1 - p) (eq. 1) and updates F += eta * gamma,
    p = sigma(F). With K >= 3 classes it grows one tree per class and iteration on
    the softmax residuals (the multinomial loss). It is the model scikit-learn's
    ``GradientBoostingClassifier(init="zero")`` trains.

    X may be a scipy.sparse matrix (CSR or CSC, matrix or array classes; other
    formats are converted) in ``fit`` and every method that takes rows: an implicit
    zero is the value 0.0, a stored NaN a missing value, and the results are those
    of the same data dense, bit for bit (see ``fit`` for the memory of each split
    method; prediction never densifies the rows).

    Parameters
    ----------
    n_estimators : int, default=100
        Boosting iterations (M in the paper); one tree per iteration, or one per
        class and iteration for 3 or more classes.
    learning_rate : float, default=0.1
        Shrinkage eta applied to each tree's leaf values; must be > 0.
    max_depth : int or None, default=3
        Maximum depth of each tree, an integer from 1 to 64 (None: grow until the
        leaves are pure or too small).
    max_leaf_nodes : int or None, default=None
        Grow each tree best first, as scikit-learn's trees do with this parameter:
        the node whose split has the largest improvement (weighted squared-error
        decrease) splits next, until the tree has ``max_leaf_nodes`` leaves (an
        integer >= 2); ``max_depth`` still bounds the depth. None grows level by
        level.
    min_samples_split : int or float, default=2
        Minimum samples a node needs to be split (a float is a fraction of n_samples).
    min_samples_leaf : int or float, default=1
        Minimum samples in each leaf (a float is a fraction of n_samples).
    min_weight_fraction_leaf : float, default=0.0
        Minimum fraction of the total sample weight in each leaf, in [0, 0.5].
    subsample : float, default=1.0
        Fraction of rows drawn without replacement for each iteration (stochastic
        gradient boosting); leaf values and the training loss use the in-bag rows,
        and the out-of-bag rows give ``oob_scores_``.
    max_features : int, float, {"sqrt", "log2"} or None, default=None
        Features drawn at random for each node (None: all).
    init : "zero", "prior", None or estimator, default="zero"
        The initial raw scores F0. "zero": F0 = 0 as in the paper. "prior" or None
        (scikit-learn's default): the loss's link of the weighted class
        frequencies (the log-odds for two classes, log p_k - mean log p for more,
        half the log-odds for the exponential loss). An estimator with ``fit`` and
        ``predict_proba`` (scikit-learn's contract): a clone is fitted on the
        training rows (float32, the class codes 0 .. K-1 as floats as the target,
        with the sample weights when ``sample_weight`` or ``class_weight`` is
        given; one that takes no weights is then an error) and its probabilities,
        clipped to [eps, 1 - eps], become each row's initial raw scores through the
        loss's link. A ``DummyClassifier`` whose probabilities do not depend on the
        row (strategy "prior", "most_frequent", "constant", "uniform") gives a
        constant F0, stored in the model file like the prior; any other estimator
        stays with the model (``booster_.init_estimator``), which then cannot be
        saved to a model file (``save``/``to_bytes`` raise; pickle keeps it).
    random_state : int, RandomState, Generator or None, default=None
        Seeds subsampling, feature draws and the early-stopping split.
    n_jobs : int or None, default=None
        Threads for fit and predict: None uses all cores (honouring
        ``OMP_NUM_THREADS``); negative values count back from the number of CPUs.
        Results are bit-identical for any value.
    verbose : int, default=0
        Print scikit-learn's progress report on stdout: ``Iter``, ``Train Loss``,
        ``OOB Improve`` (with ``subsample < 1``), ``Valid Loss`` (with validation
        data) and ``Remaining Time``. 1: iterations 1-10, then every 10th to 100,
        every 100th to 1,000, ... (scikit-learn's rate); > 1: every iteration.
    validation_fraction : float, default=0.1
        Fraction of the training data held out for early stopping when
        ``n_iter_no_change`` is set (stratified: of each class's rows, and with
        zero sample weights of its weighted rows and of the others apart, so
        that the held-out rows have weight).
    n_iter_no_change : int or None, default=None
        Stop when the validation loss (or the ``scoring``) has not improved by
        ``tol`` for this many iterations; the model keeps its best iteration.
    tol : float, default=1e-4
        Minimum improvement of the validation loss for early stopping, in the units
        of ``validation_score_`` (scikit-learn's: for two classes and the
        log-loss, twice the mean log-loss); with a ``scoring``, in the scorer's
        units (an improvement is a score above the best by more than ``tol``).
    scoring : str, callable or None, default="loss"
        What early stopping watches on the validation data (as scikit-learn's
        ``HistGradientBoostingClassifier``): ``"loss"``, the validation loss
        (``validation_score_``); the name of a scikit-learn scorer
        (``sklearn.metrics.get_scorer_names()``: ``"roc_auc"``, ``"accuracy"``,
        ``"neg_log_loss"``, ...; higher is better); a callable
        ``scorer(estimator, X, y)`` (with ``sample_weight=w_val`` when the
        validation rows have weights); or None, the estimator's ``score``
        (accuracy). Used with ``n_iter_no_change`` only; its value after each
        iteration is recorded in ``evals_result_`` under its name (``"score"``
        for a callable). Scores come from the raw scores the fit keeps for the
        validation rows, so a score costs the metric on those rows per
        iteration, whatever the number of trees: ``"roc_auc"``,
        ``"roc_auc_ovr"``, ``"accuracy"``, ``"neg_log_loss"`` and None directly
        (the scorer's values, to rounding); another scorer is given a view of
        the model of the iterations so far whose predictions on the validation
        rows (the float32 array the fit checked) are those raw scores; a scorer
        that predicts other rows or reads the model (``estimators_``,
        ``booster_``) gets that model built, a copy of the trees so far per
        iteration.
    eval_metric : str, list of str or None, default=None
        The metrics recorded after each iteration on every evaluation set
        (``eval_set``, or the early-stopping hold-out) in ``evals_result_``, in
        this order: ``"loss"`` (the loss, in the units of ``validation_score_``),
        ``"log_loss"`` (scikit-learn's ``log_loss`` of the probabilities),
        ``"roc_auc"`` (of the raw scores for two classes, the macro one-vs-rest
        AUC for more; NaN where a set lacks a class), ``"accuracy"`` and
        ``"error"`` (1 - accuracy), weighted with the set's weights. None: the
        loss. They change no tree: early stopping watches ``scoring``.
    warm_start : bool, default=False
        Add trees to the fitted model instead of starting again when ``fit`` is
        called with a larger ``n_estimators``. On the same data, fitting 50
        iterations and warm-starting to 100 gives bit-identical trees to fitting 100
        at once, also with ``subsample < 1``, ``max_features`` and early stopping:
        iteration m draws from a stream seeded by (seed, m), and the seed of the
        first fit is kept (with ``random_state=None`` too; a model loaded from a
        file derives it from ``random_state`` again).
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, multiplied with ``sample_weight``.
    loss : {"log_loss", "exponential"}, str or Loss, default="log_loss"
        The loss minimised: the log-loss (binomial for two classes, multinomial for
        more), or, for two classes only, AdaBoost's exponential loss
        y e^-F + (1 - y) e^F (scikit-learn's: trees fitted to y e^-F - (1 - y) e^F,
        leaf values sum w r / sum w abs(r), probabilities sigma(2F), class 1 where
        F >= 0; ``train_score_`` and the other scores are the mean exponential
        loss). A custom loss: an instance of a :class:`gbc_core.Loss` subclass (its
        gradients and Hessians, its link; fitted in NumPy, slower than the built-in
        losses), or the name of one registered with :func:`gbc_core.register_loss`.
    split_method : {"exact", "hist"}, default="exact"
        "exact" (the paper's) tries every threshold between two distinct values of
        a feature; "hist" bins every feature once per fit (at most ``max_bins``
        bins, quantile edges; a feature with at most ``max_bins`` distinct values
        gets one bin per value, so its thresholds are the exact search's) and tries
        the bin edges: much faster on many rows. Thresholds are stored as real
        values: the model predicts, saves and exports alike.
    max_bins : int, default=255
        Bins per feature of ``split_method="hist"`` (2 to 255; missing values get a
        bin of their own).
    leaf_solver : {"newton", "exact"}, default="newton"
        How a grown tree's leaf values are set. "newton": one Newton step from
        gamma = 0, the paper's eq. 1 (scikit-learn's; for 3 or more classes with
        its factor (K - 1)/K). "exact": each leaf's gamma minimises the weighted
        loss of the leaf's in-bag rows at F + gamma exactly (two classes: the root
        of sum w (y - sigma(F + gamma)) = 0, by a safeguarded Newton iteration; K
        classes: the tree of class k adds gamma to F_k alone, the other scores
        fixed at the start of the iteration, a 1-D convex problem; the
        exponential loss: 1/2 log(sum_{y=1} w e^-F / sum_{y=0} w e^F)). A pure
        leaf (one class only) has no minimiser: its gamma is capped where every
        row's loss is below machine epsilon. The learning rate scales gamma in
        both cases (F += eta * gamma). See ``docs/leaf_solver.md``.
    criterion : {"friedman_mse", "squared_error"}, default="friedman_mse"
        The proxy the splits of a node are ranked by: Friedman's improvement
        (scikit-learn's ``FriedmanMSE``) or scikit-learn's MSE proxy
        (``sum_left^2 / w_left + sum_right^2 / w_right``). Both rank a node's
        splits alike in exact arithmetic and differ only where rounding decides
        between two near-equal splits (scikit-learn 1.9 deprecated the parameter
        and always ranks by the MSE proxy: ``"squared_error"`` is its choice).
    min_impurity_decrease : float, default=0.0
        A node is split only if the split's weighted impurity decrease
        ``N_t / N * (impurity - N_t_R / N_t * right_impurity - N_t_L / N_t *
        left_impurity)`` (N, N_t, N_t_R, N_t_L: the weights of the tree's in-bag
        rows, of the node and of its children; impurity: the weighted variance of
        the residuals the tree fits) plus machine epsilon is at least this, as in
        scikit-learn's trees (whatever ``criterion``).
    ccp_alpha : float, default=0.0
        Minimal cost-complexity pruning of each tree (each class's tree for three
        or more classes), as scikit-learn's trees do it: the grown tree is pruned
        weakest link first while the link's effective alpha is at most
        ``ccp_alpha``, before the leaf values are set, so the rows of a pruned
        branch take part in its new leaf's value. 0: no pruning.
    monotonic_cst : array-like of int of shape (n_features,) or dict, default=None
        Monotonic constraints, as scikit-learn's HistGradientBoostingClassifier
        takes them: per feature, 1 (the probability of the positive class never
        decreases as the feature grows, the other features fixed), -1 (never
        increases) or 0 (no constraint); or a dict of feature name -> constraint
        (X with feature names; unnamed features 0). A split on a constrained
        feature is kept only if its children's mean residuals are in order, and the
        leaf values are bounded by the mid-points of the constrained splits above
        them (scikit-learn's and LightGBM's rule), so every tree is monotone.
        Missing values go to a learned side: monotonicity holds over the
        non-missing values. Two classes only (a ValueError for more). None or all
        0: no constraint (the same model). See the user guide's "Monotonic and
        interaction constraints".
    interaction_cst : {"pairwise", "no_interactions"} or sequence of sequences of int, default=None
        Interaction constraints, as scikit-learn's HistGradientBoostingClassifier
        takes them: groups of feature indices allowed to interact. A node may split
        only on the features of the groups that hold every feature split on along
        its path from the root; the features listed in no group form one more
        group. "no_interactions": one group per feature; "pairwise": one per pair.
        With ``max_features``, each node's features are drawn among those allowed.
        None: no constraint.
    categorical_features : "from_dtype", None or array-like, default="from_dtype"
        The categorical features, as scikit-learn's HistGradientBoostingClassifier
        takes them: "from_dtype", the columns of a DataFrame of pandas' category
        and string dtypes and of object dtype whose non-missing values are all
        strings, and polars' Categorical, Enum and String columns (a NumPy array
        has none); None, none; or feature indices, a boolean mask of shape
        (n_features,) or feature names (X a DataFrame). A categorical feature's
        categories are its distinct non-missing training values, sorted (numbers
        as numbers, booleans as 0 and 1, strings as strings; a feature mixing
        strings and numbers is refused), at most ``max_bins`` of them (both split
        methods); a split sends a set of categories left, chosen by sorting the
        node's categories by their mean residual (exact for squared error:
        Fisher 1958). At predict time a category never seen in training and a
        missing value go where the split sends missing values (as
        HistGradientBoosting; no warning). Dense X only; not with a monotonic
        constraint on the same feature; ``to_sklearn``, TreeSHAP and
        ``estimators_[i, k].tree_`` refuse such a model. See ``is_categorical_``.
    min_samples_category : int, default=1
        In a node, a category of a categorical feature that holds fewer than this
        many of the node's rows is never sent left: it is not sorted with the
        others and goes right, as a category with no row in the node does (as
        LightGBM does below its ``cat_smooth``, default 10 there); the split is the
        best partition keeping such categories right. Raise it when many
        categories are rare, so that a split is not chosen on the mean residual of
        a few rows. The default, 1, sorts every category with a row (as
        scikit-learn's HistGradientBoostingClassifier, which has no such
        parameter); both split methods apply it alike. No effect without
        categorical features. See the user guide's "Categorical features".

    Attributes
    ----------
    booster_ : Booster
        The fitted model; predictions depend on it only (``set_params`` after fit
        does not change them).
    classes_ : ndarray of shape (n_classes,)
        Sorted class labels; for two classes ``classes_[1]`` is the positive class.
    n_classes_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Present when fitted on a DataFrame with string column names.
    n_estimators_ : int
        Number of iterations kept.
    n_trees_per_iteration_ : int
        1 for two classes, the number of classes otherwise.
    estimators_ : ndarray of shape (n_iterations, n_trees_per_iteration)
        The trees (:class:`gbc_core.Tree`: node arrays named as scikit-learn's).
    train_score_ : ndarray of shape (n_iterations,)
        Weighted training loss (in-bag rows) after each iteration, in
        scikit-learn's units: for two classes and the log-loss the binomial
        deviance, twice the mean log-loss; for more classes the mean log-loss; for
        ``loss="exponential"`` the mean exponential loss.
    validation_score_ : ndarray of shape (n_iterations,)
        Weighted validation loss after each iteration run, in the units of
        ``train_score_`` (when there is validation data: ``eval_set`` or
        ``n_iter_no_change``; ``tol`` is in these units, as in scikit-learn),
        including the iterations after ``best_iteration_`` that early stopping
        discarded.
    best_iteration_ : int or None
        With early stopping, the number of iterations kept. Else None.
    evals_result_ : dict
        With evaluation data (``eval_set``, or the hold-out of early stopping,
        named ``"validation"``): set name -> metric name -> list of one value per
        iteration run (as XGBoost's and LightGBM's ``evals_result_``), including
        the iterations after ``best_iteration_`` that early stopping discarded;
        the ``eval_metric`` metrics and, with early stopping, the ``scoring`` of
        the watched set. Kept by pickling, not by a model file (``save``): a
        loaded model has none.
    oob_scores_, oob_improvement_ : ndarray of shape (n_iterations,)
        With ``subsample < 1``: the weighted loss of the out-of-bag rows after
        each iteration, and its decrease over the iteration, in the units of
        ``train_score_``. 0 for the iterations of an earlier fit without
        subsampling that a warm start went on from (as scikit-learn).
    oob_score_ : float
        ``oob_scores_[-1]``.
    max_features_ : int
        Features drawn per node.
    init_raw_ : float or ndarray of shape (n_classes,)
        F0 (0 with an init estimator whose scores vary by row: they come from
        ``booster_.init_estimator``, the fitted clone of ``init``).
    feature_importances_ : ndarray of shape (n_features,)
        Normalised total squared-error decrease per feature.
    is_categorical_ : ndarray of bool of shape (n_features,) or None
        The categorical features of the fit (``categorical_features``); None
        where there are none. Their categories are ``booster_.categories_``.

    Examples
    --------
    >>> from gbc_core import GradientBoostingClassifier
    >>> from gbc_core.datasets import load_higgs_sample
    >>> from gbc_core.metrics import roc_auc
    >>> X_train, y_train, X_test, y_test = load_higgs_sample()
    >>> model = GradientBoostingClassifier(n_estimators=100, max_depth=3).fit(X_train, y_train)
    >>> proba = model.predict_proba(X_test)[:, 1]       # p = sigma(F(x))
    >>> bool(roc_auc(y_test, proba) > 0.8)
    True
    """

    def __init__(
        self,
        n_estimators=DEFAULTS["n_estimators"],
        learning_rate=DEFAULTS["learning_rate"],
        max_depth=DEFAULTS["max_depth"],
        max_leaf_nodes=DEFAULTS["max_leaf_nodes"],
        min_samples_split=DEFAULTS["min_samples_split"],
        min_samples_leaf=DEFAULTS["min_samples_leaf"],
        min_weight_fraction_leaf=DEFAULTS["min_weight_fraction_leaf"],
        subsample=DEFAULTS["subsample"],
        max_features=DEFAULTS["max_features"],
        init=DEFAULTS["init"],
        random_state=DEFAULTS["random_state"],
        n_jobs=DEFAULTS["n_jobs"],
        verbose=DEFAULTS["verbose"],
        validation_fraction=DEFAULTS["validation_fraction"],
        n_iter_no_change=DEFAULTS["n_iter_no_change"],
        tol=DEFAULTS["tol"],
        scoring=DEFAULTS["scoring"],
        eval_metric=DEFAULTS["eval_metric"],
        warm_start=DEFAULTS["warm_start"],
        class_weight=DEFAULTS["class_weight"],
        loss=DEFAULTS["loss"],
        split_method=DEFAULTS["split_method"],
        max_bins=DEFAULTS["max_bins"],
        leaf_solver=DEFAULTS["leaf_solver"],
        criterion=DEFAULTS["criterion"],
        min_impurity_decrease=DEFAULTS["min_impurity_decrease"],
        ccp_alpha=DEFAULTS["ccp_alpha"],
        monotonic_cst=DEFAULTS["monotonic_cst"],
        interaction_cst=DEFAULTS["interaction_cst"],
        categorical_features=DEFAULTS["categorical_features"],
        min_samples_category=DEFAULTS["min_samples_category"],
    ):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.subsample = subsample
        self.max_features = max_features
        self.init = init
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.scoring = scoring
        self.eval_metric = eval_metric
        self.warm_start = warm_start
        self.class_weight = class_weight
        self.split_method = split_method
        self.max_bins = max_bins
        self.loss = loss
        self.leaf_solver = leaf_solver
        self.criterion = criterion
        self.min_impurity_decrease = min_impurity_decrease
        self.ccp_alpha = ccp_alpha
        self.monotonic_cst = monotonic_cst
        self.interaction_cst = interaction_cst
        self.categorical_features = categorical_features
        self.min_samples_category = min_samples_category

    # --------------------------------------------------------------------- fit
    def fit(self, X, y, sample_weight=None, eval_set=None, monitor=None, eval_names=None):
        """Fit the ensemble (paper Algorithm 1).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            Numeric features; NaN marks a missing value. Sparse input (CSR or CSC,
            matrix or array classes; other formats are converted): an implicit
            zero is the value 0.0, never missing, a stored NaN is missing, and the
            model is the one of the same data dense, bit for bit. Memory:
            ``split_method="hist"`` bins the sparse columns without densifying X
            (its bins take n_samples x n_features bytes, as for dense X);
            ``"exact"`` densifies X into an n_samples x n_features float32 array,
            one feature at a time, as its search needs.
        y : array-like of shape (n_samples,)
            Class labels (numbers, strings or bools), at least two distinct ones.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative finite weights, not all zero. Rows of weight 0 take no
            part in the fit (as in scikit-learn's trees); two classes must keep
            weight, also after ``class_weight``.
        eval_set : tuple (X_val, y_val) or (X_val, y_val, w_val), or a list of them, default=None
            Evaluation data: replaces the internal ``validation_fraction`` split.
            Early stopping watches the last set that is not the training data
            (``validation_score_`` is its loss); ``evals_result_`` records the
            ``eval_metric`` metrics of every set after each iteration. A set whose X
            and y are the very objects given as ``X`` and ``y`` is the training
            data (named ``"training"``, as in LightGBM). ``class_weight`` applies
            to these rows too.
        monitor : callable, default=None
            scikit-learn's contract: called after each iteration ``i`` (counted from
            0, warm starts included) as ``monitor(i, self, locals)``; when it returns
            True the fit stops and keeps iterations 0 .. i (``n_estimators_`` = i + 1,
            ``train_score_`` and the out-of-bag arrays as long). During the call
            ``self`` is fitted with the iterations so far: ``train_score_[i]``,
            ``oob_improvement_[i]``, ``estimators_``, ``predict_proba`` and the other
            methods reflect iterations 0 .. i. ``locals`` is a dict of the fit's
            values: ``i``, ``self``, ``X`` (the training rows, float32), ``y`` (their
            class codes), ``sample_weight`` (None or the weights) and ``record``
            (``train_score``, ``validation_score``, ``oob_scores``,
            ``oob_improvement`` lists, and ``evals``, ``evals_result_`` so far,
            with evaluation data); scikit-learn's private locals are not there.
            With early stopping the model keeps its best iteration up to i.
        eval_names : list of str, default=None
            The names of the ``eval_set`` sets in ``evals_result_`` (default:
            ``"valid_0"``, ``"valid_1"``, ... by position, ``"training"`` for the
            training data, as LightGBM names them).

        Returns
        -------
        self
            The fitted estimator.

        Examples
        --------
        >>> from gbc_core import GradientBoostingClassifier
        >>> from gbc_core.datasets import load_higgs_sample
        >>> X, y, X_test, y_test = load_higgs_sample()
        >>> model = GradientBoostingClassifier(n_estimators=500, n_iter_no_change=10)
        >>> model = model.fit(X[:6000], y[:6000], eval_set=(X[6000:], y[6000:]))
        >>> model.best_iteration_ == model.n_estimators_ < 500
        True
        """
        params = check_params(self.get_params(deep=False))
        names = feature_names_of(X)
        # X laid out once, for its split method (_split_methods.SplitMethod.dense_order).
        method = method_named(params["split_method"])
        mask = categorical_mask(X, params["categorical_features"])
        categories = None
        if mask is None:
            Xa = method.lay_out(check_features(
                X, "X", dtype=np.float32, order=method.dense_order, training=True,
                sparse="csc", n_threads=effective_n_threads(params["n_jobs"])))
        else:
            # The categorical columns as codes 0 .. k-1 (_categories).
            Xa, categories = fit_encode(X, mask, params["max_bins"])
            Xa = method.lay_out(Xa)
        n_samples, n_features = Xa.shape
        # int32 codes: the fit's state shares them (4 bytes per row, not 8 + 8).
        classes, codes = check_target(y, n_samples)
        _model_io.check_labels(classes)
        loss = loss_for(classes.size, params["loss"], params["leaf_solver"])
        w, class_factors = _weights(sample_weight, params["class_weight"], classes, codes)
        # scikit-learn fits an init estimator with weights when any are given.
        weighted = sample_weight is not None or params["class_weight"] is not None

        previous = None
        if params["warm_start"] and self.__sklearn_is_fitted__():
            previous = warm_start_from(self.booster_, params, classes, n_features, names,
                                       categorical=mask, categories=categories)
            if previous is None:
                return self
        else:
            self.__dict__.pop("booster_", None)
            self.__dict__.pop("_seed", None)

        seed = self._model_seed(params["random_state"])
        scorer = scorer_of(params["scoring"])
        eval_names, eval_data, given_order = checked_eval_sets(
            eval_set, eval_names, X, y,
            lambda s: _check_eval_set(s, names, classes, n_features, class_factors,
                                      categories))
        if eval_data is None and params["n_iter_no_change"] is not None:
            Xa, codes, w, held_out = _hold_out(method, Xa, codes, w, classes,
                                               params["validation_fraction"], seed)
            eval_names, eval_data = [HOLD_OUT], [held_out]
        init_estimator = (self.booster_.init_estimator if previous is not None
                          else _fit_init(params["init"], Xa, codes, w, weighted))
        init_scores = _init_scores(init_estimator, loss, Xa, eval_data, classes.size)
        if init_estimator is not None and not isinstance(init_scores, tuple):
            init_estimator = None  # constant scores: stored as F0, the model is complete
        if eval_data is not None:
            eval_data = [(Xv, cv, scale_weights(wv)) for Xv, cv, wv in eval_data]
        w = scale_weights(w)
        resolved = resolve(params, Xa.shape[0], n_features,
                           float(Xa.shape[0]) if w is None else _leaves.weight_total(w),
                           feature_names=names)
        categorical_params(resolved, mask, categories, names)
        watch = (None if scorer is None or eval_data is None
                 else (eval_names[-1], scorer[0]))
        callbacks = _callbacks(params, eval_data is not None, watch)

        def booster_of(ensemble, record):
            return Booster(ensemble, classes, feature_names=names,
                           params=self.get_params(deep=False), record=record,
                           max_features=resolved["max_features"], loss=loss,
                           init_estimator=init_estimator, categories=categories)

        evaluate = None
        if eval_data is not None:
            evaluate = Evaluation(
                eval_names, eval_data, metric_names(params["eval_metric"]),
                scorer if params["n_iter_no_change"] is not None else None,
                len(eval_data) - 1, loss, classes,
                lambda ensemble: self._of_booster(booster_of(ensemble, FitRecord())),
                self.__sklearn_tags__(), resolved["n_threads"])

        before = self.__dict__.get("booster_")
        if monitor is not None:
            if not callable(monitor):
                raise TypeError(f"monitor must be callable, got {type(monitor).__name__}")
            callbacks.append(_Monitor(monitor, self, booster_of, Xa, codes, w))
        try:
            ensemble, record = boost(Xa, codes, w, loss, resolved, seed,
                                     eval_set=eval_data, previous=previous,
                                     callbacks=callbacks, init_scores=init_scores,
                                     evaluate=evaluate)
        except BaseException:
            # A monitor saw a provisional model: a failed fit leaves the one before.
            if monitor is not None:
                self.__dict__.pop("booster_", None)
                if before is not None:
                    self.booster_ = before
            raise
        self.booster_ = booster_of(ensemble, record)
        if record.evals is not None:
            self.evals_result_ = evals_result(record, given_order)
        else:
            self.__dict__.pop("evals_result_", None)
        return self

    def _model_seed(self, random_state):
        """The seed of the model being fitted. One seed per model: a warm start goes
        on with the seed of the first fit, and each iteration draws from its own
        stream (seed, iteration), so adding trees later gives the trees a single fit
        would have grown. An integer random_state is the seed; any other is drawn
        from once and the seed kept."""
        seed = self.__dict__.get("_seed")
        if seed is None:
            seed = seed_from(random_state)
            if not isinstance(random_state, numbers.Integral):
                self._seed = seed
        return seed

    # ----------------------------------------------------------------- predict
    def __sklearn_is_fitted__(self):
        return "booster_" in self.__dict__

    def _fitted_booster(self, X=None):
        """``booster_`` (NotFittedError before fit), after scikit-learn's checks of
        ``X``: its feature names against those of the fit (the warnings of a
        DataFrame for a model fitted on an array and the reverse) and its width."""
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' "
                "with appropriate arguments before using this estimator.")
        booster = self.booster_
        if X is not None:
            X = booster.align_columns(X)
            if booster.feature_names_in_ is not None or type(X) is not np.ndarray:
                # (An array for a model fitted without names: nothing to warn about,
                # and the check costs more than scoring a row.)
                validate_data(self, X, reset=False, skip_check_array=True, ensure_2d=False)
            shape = getattr(X, "shape", ())
            if len(shape) == 2 and shape[1] != booster.n_features_in_:
                raise ValueError(
                    f"X has {shape[1]} features, but {type(self).__name__} is expecting "
                    f"{booster.n_features_in_} features as input")
        return booster

    def decision_function(self, X):
        """Raw scores F(x) = F0 + sum_m eta T_m(x) (paper Algorithm 2, before sigma).

        <<of_X>>

        Returns
        -------
        ndarray of shape (n_samples,) for two classes, (n_samples, n_classes) otherwise
            The raw scores; ``predict_proba`` is their sigmoid (softmax).

        <<examples>>
        >>> model.decision_function([[0.0], [5.0]]).round(3)
        array([-0.857,  0.857])
        """
        return self._fitted_booster(X).decision_function(X, n_jobs=self.n_jobs)

    def predict_proba(self, X):
        """Class probabilities: for two classes column 1 is p = sigma(F(x)), otherwise the
        softmax of the raw scores.

        <<of_X>>

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            One column per class, in the order of ``classes_``.

        <<examples>>
        >>> model.predict_proba([[0.0], [5.0]]).round(3)
        array([[0.702, 0.298],
               [0.298, 0.702]])
        """
        return self._fitted_booster(X).predict_proba(X, n_jobs=self.n_jobs)

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`, computed from F (finite where p underflows).

        <<of_X>>

        Returns
        -------
        ndarray of shape (n_samples, n_classes)

        <<examples>>
        >>> model.predict_log_proba([[5.0]]).round(3)
        array([[-1.211, -0.354]])
        """
        return self._fitted_booster(X).predict_log_proba(X, n_jobs=self.n_jobs)

    def predict(self, X):
        """Predicted labels: the class of largest probability (for two classes
        ``classes_[1]`` where F(x) >= 0, as scikit-learn).

        <<of_X>>

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels of ``classes_``, as given to ``fit``.

        <<examples>>
        >>> model.predict([[0.0], [5.0]])
        array([0, 1])
        """
        return self._fitted_booster(X).predict(X, n_jobs=self.n_jobs)

    def staged_decision_function(self, X):
        """The raw scores after each iteration (1, 2, ..., n_iterations).

        <<of_X>>

        Returns
        -------
        generator of ndarray of shape (n_samples,) or (n_samples, n_classes)
            The raw scores of the first m iterations, for m = 1, 2, ...

        <<examples>>
        >>> [round(float(f[0]), 3) for f in model.staged_decision_function([[5.0]])]
        [0.2, 0.382, 0.55, 0.708, 0.857]
        """
        return self._fitted_booster(X).staged_decision_function(X, n_jobs=self.n_jobs)

    def staged_predict_proba(self, X):
        """The class probabilities after each iteration.

        <<of_X>>

        Returns
        -------
        generator of ndarray of shape (n_samples, n_classes)
            The probabilities of the first m iterations, for m = 1, 2, ...

        <<examples>>
        >>> len(list(model.staged_predict_proba([[5.0]])))
        5
        """
        return self._fitted_booster(X).staged_predict_proba(X, n_jobs=self.n_jobs)

    def staged_predict(self, X):
        """The predicted labels after each iteration.

        <<of_X>>

        Returns
        -------
        generator of ndarray of shape (n_samples,)
            The labels of the first m iterations, for m = 1, 2, ...

        <<examples>>
        >>> [int(p[0]) for p in model.staged_predict([[5.0]])]
        [1, 1, 1, 1, 1]
        """
        return self._fitted_booster(X).staged_predict(X, n_jobs=self.n_jobs)

    def predict_contributions(self, X):
        """Feature contributions to :meth:`decision_function`: the exact path-dependent
        TreeSHAP values (Lundberg, Erion and Lee 2018).

        A feature's contribution is its Shapley value for the raw score, the
        expectation over the features left out following each node's cover (the in-bag
        sample weight it saw in the fit); a missing value follows the split's learned
        direction, as in :meth:`predict`. The result does not depend on ``n_jobs``.

        <<of_X>>

        Returns
        -------
        ndarray of shape (n_samples, n_features + 1) for two classes, or (n_samples, n_classes, n_features + 1)
            The last column is the expected value (F0 plus each tree's cover-weighted
            mean); each row (per class) adds up to the decision function.

        <<examples>>
        >>> phi = model.predict_contributions([[5.0]])
        >>> phi.shape, bool(abs(phi.sum() - model.decision_function([[5.0]])[0]) < 1e-12)
        ((1, 2), True)
        """
        return self._fitted_booster(X).predict_contributions(X, n_jobs=self.n_jobs)

    def apply(self, X):
        """The leaf (tree-relative node index) of each row in each tree.

        <<of_X>>

        Returns
        -------
        ndarray of shape (n_samples, n_iterations, n_trees_per_iteration)

        <<examples>>
        >>> model.apply([[0.0], [5.0]])[:, 0, 0].tolist()
        [1, 2]
        """
        return self._fitted_booster(X).apply(X)

    # ------------------------------------------------------------- inspection
    classes_ = _fitted_attribute("classes_", "sorted class labels")
    n_classes_ = _fitted_attribute("n_classes_", "number of classes")
    n_features_in_ = _fitted_attribute("n_features_in_", "number of features")
    feature_names_in_ = _fitted_attribute("feature_names_in_", "feature names of the fit")
    n_estimators_ = _fitted_attribute("n_estimators_", "iterations kept")
    train_score_ = _fitted_attribute("train_score_", "training loss per iteration")
    validation_score_ = _fitted_attribute("validation_score_", "validation loss per iteration")
    best_iteration_ = property(lambda self: self._fitted_booster().best_iteration_,
                               doc="iterations kept by early stopping (None without)")
    oob_scores_ = _fitted_attribute("oob_scores_", "out-of-bag loss per iteration")
    oob_improvement_ = _fitted_attribute("oob_improvement_", "out-of-bag loss decrease")
    oob_score_ = _fitted_attribute("oob_score_", "out-of-bag loss of the last iteration")
    max_features_ = _fitted_attribute("max_features_", "features drawn per node")
    init_raw_ = _fitted_attribute("init_raw_", "F0")
    estimators_ = _fitted_attribute("estimators_", "the trees, (n_iterations, K)")
    feature_importances_ = _fitted_attribute("feature_importances_",
                                             "normalised squared-error decrease per feature")

    @property
    def is_categorical_(self):
        """The categorical features (bool mask), or None where there are none."""
        categorical = self._fitted_booster().ensemble.categorical
        return None if categorical is None else categorical.copy()

    @property
    def n_trees_per_iteration_(self):
        """1 for two classes, the number of classes otherwise."""
        return self._fitted_booster().ensemble.n_outputs

    def trees(self):
        """The fitted trees, each a structured array of nodes (``gbc_core.NODE_DTYPE``).

        Returns
        -------
        list of ndarray
            ``n_iterations * n_trees_per_iteration`` node arrays, in iteration order (the
            trees of the classes of one iteration together).

        <<examples>>
        >>> trees = model.trees()
        >>> len(trees), trees[0]["feature"].tolist()
        (5, [0, -1, -1])
        """
        return self._fitted_booster().trees()

    def to_sklearn(self):
        """The fitted model as a scikit-learn ``GradientBoostingClassifier`` predicting the
        same probabilities (see :meth:`Booster.to_sklearn`).

        Returns
        -------
        sklearn.ensemble.GradientBoostingClassifier
            Fitted, for ``sklearn.tree.plot_tree``, ``partial_dependence`` or
            ``shap.TreeExplainer``.

        <<examples>>
        >>> import numpy as np
        >>> sk = model.to_sklearn()
        >>> bool(np.allclose(sk.predict_proba(X), model.predict_proba(X)))
        True
        """
        return self._fitted_booster().to_sklearn()

    # ------------------------------------------------------------ persistence
    def save(self, path):
        """Save the fitted model to ``path`` (atomically) in the gbc-core model format.

        The format is versioned data, not code (see ``docs/model_format.md``): read it
        back with :func:`gbc_core.load` (a :class:`~gbc_core.Booster`) or :meth:`load` (an
        estimator). The file is written to a temporary file, synced and renamed.

        Parameters
        ----------
        path : str, os.PathLike or binary file object
            Where to write.

        Returns
        -------
        None

        <<examples>>
        >>> import gbc_core, os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "model.gbc")
        >>> model.save(path)
        >>> gbc_core.load(path).n_estimators_
        5
        """
        self._fitted_booster().save(path, params=self.get_params(deep=False))

    def to_bytes(self):
        """The fitted model as ``bytes`` in the gbc-core model format.

        Returns
        -------
        bytes
            What :meth:`save` writes; :meth:`from_bytes` reads it back.

        <<examples>>
        >>> data = model.to_bytes()
        >>> GradientBoostingClassifier.from_bytes(data).n_estimators_
        5
        """
        return self._fitted_booster().to_bytes(params=self.get_params(deep=False))

    @classmethod
    def from_bytes(cls, data):
        """The estimator of :meth:`to_bytes` output, every field validated.

        Parameters
        ----------
        data : bytes-like
            A model in the gbc-core model format.

        Returns
        -------
        GradientBoostingClassifier
            Fitted, with the parameters the model stores.

        Raises
        ------
        gbc_core.ModelFormatError
            For corrupt or invalid data.

        Examples
        --------
        >>> from gbc_core import GradientBoostingClassifier
        >>> X = [[0.0], [1.0], [2.0], [3.0]]
        >>> model = GradientBoostingClassifier(n_estimators=3, max_depth=1).fit(X, [0, 0, 1, 1])
        >>> copy = GradientBoostingClassifier.from_bytes(model.to_bytes())
        >>> copy.get_params()["n_estimators"], bool((copy.predict(X) == model.predict(X)).all())
        (3, True)
        """
        return cls._of_booster(Booster.from_bytes(data))

    @classmethod
    def load(cls, path):
        """The estimator saved at ``path`` (or read from a binary file object).

        Parameters
        ----------
        path : str, os.PathLike or binary file object
            A file written by :meth:`save` (or ``Booster.save``).

        Returns
        -------
        GradientBoostingClassifier
            Fitted, with the parameters the file stores; :func:`gbc_core.load` gives
            the lighter :class:`~gbc_core.Booster` instead.

        Raises
        ------
        gbc_core.ModelFormatError
            For a corrupt, truncated or crafted file.

        Examples
        --------
        >>> import os, tempfile
        >>> from gbc_core import GradientBoostingClassifier
        >>> X = [[0.0], [1.0], [2.0], [3.0]]
        >>> path = os.path.join(tempfile.mkdtemp(), "model.gbc")
        >>> GradientBoostingClassifier(n_estimators=3).fit(X, [0, 0, 1, 1]).save(path)
        >>> GradientBoostingClassifier.load(path).n_estimators_
        3
        """
        return cls._of_booster(Booster.load(path))

    @classmethod
    def _of_booster(cls, booster):
        model = cls(**booster.params)
        model.booster_ = booster
        return model

    def __getstate__(self):
        # A fitted model pickles (and deep-copies) as the bytes of the model format,
        # with the parameter values the format cannot hold and any other attribute
        # (a user's, or the seed a warm start goes on with) alongside.
        state = self.__dict__.copy()
        if not self.__sklearn_is_fitted__():
            return state
        params = self.get_params(deep=False)
        booster = self.booster_
        data, unrepresentable = booster.encode(params=params, without_init_estimator=True)
        extra = {k: v for k, v in state.items() if k != "booster_" and k not in params}
        out = {"gbc_core_model": data, "params": unrepresentable, "attributes": extra}
        if booster.init_estimator is not None:
            # Not data: pickled beside the model's bytes (a model file refuses it).
            out["init_estimator"] = booster.init_estimator
        return out

    def __setstate__(self, state):
        if "gbc_core_model" in state:
            loaded = type(self).from_bytes(state["gbc_core_model"])
            loaded.booster_.init_estimator = state.get("init_estimator")
            self.__dict__.update(loaded.__dict__)
            self.__dict__.update(state.get("params") or {})
            self.__dict__.update(state.get("attributes") or {})
            return
        state = dict(state)
        state.pop("_sklearn_version", None)
        self.__dict__.update(state)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        return tags


class _LazyBooster:
    """The model of the iterations so far, built on its first use: a monitor that
    only counts iterations or reads the clock (the command line's progress) costs
    nothing, where building the model of every iteration would cost time in the
    number of trees so far, each iteration."""

    __slots__ = ("_build", "_booster")

    def __init__(self, build):
        self._build = build
        self._booster = None

    def _get(self):
        if self._booster is None:
            self._booster = self._build()
        return self._booster

    def __getattr__(self, name):
        return getattr(self._get(), name)

    def __reduce__(self):  # pickled (or deep-copied) as the Booster itself
        booster = self._get()
        return booster.__reduce_ex__(2)

    def __repr__(self):
        return repr(self._get())


class _Monitor:
    """The boosting loop's callback of ``fit(monitor=...)``: after each iteration,
    the estimator gets the model of the iterations so far and the monitor is
    called as scikit-learn calls it; a true result stops the fit."""

    def __init__(self, monitor, estimator, booster_of, X, y, sample_weight):
        self.monitor = monitor
        self.estimator = estimator
        self.booster_of = booster_of
        self.values = {"X": X, "y": y, "sample_weight": sample_weight}

    def start(self, record):
        return False

    def after_iteration(self, iteration, record, current):
        n = iteration + 1
        record_so_far = FitRecord(
            record.train_score[:n], record.validation_score,
            None if record.oob_scores is None else record.oob_scores[:n],
            None if record.oob_improvement is None else record.oob_improvement[:n])
        self.estimator.booster_ = _LazyBooster(
            lambda: self.booster_of(current(), record_so_far))
        values = dict(self.values, i=iteration, self=self.estimator, record=record)
        return bool(self.monitor(iteration, self.estimator, values))

    def finish(self, record):
        pass


#: DummyClassifier strategies whose probabilities do not depend on the row.
_CONSTANT_DUMMY = ("prior", "most_frequent", "constant", "uniform")


def _fit_init(init, X, codes, w, weighted):
    """The fitted clone of an ``init`` estimator (None for "zero", "prior", None),
    fitted as scikit-learn does: on the training rows (float32) and the class
    codes as floats, with the sample weights when there are any; an estimator
    that takes no ``sample_weight`` is then an error."""
    if init is None or isinstance(init, str):
        return None
    estimator = clone(init, safe=False)  # (a deep copy of a non-scikit-learn object)
    y = codes.astype(np.float64)
    if not weighted:
        estimator.fit(X, y)
        return estimator
    msg = f"The initial estimator {type(estimator).__name__} does not support sample weights."
    try:
        estimator.fit(X, y, sample_weight=w)
    except TypeError as exc:
        if "unexpected keyword argument 'sample_weight'" in str(exc):
            raise ValueError(msg) from exc
        raise
    except ValueError as exc:
        if "pass parameters to specific steps of your pipeline using the " \
                "stepname__parameter" in str(exc):
            raise ValueError(msg) from exc
        raise
    return estimator


def _init_scores(estimator, loss, X, eval_data, n_classes):
    """The ``init_scores`` of ``boost`` for a fitted init estimator: None without
    one, F0 (n_outputs,) for a DummyClassifier whose probabilities do not depend
    on the row, else (training rows, [rows of each evaluation set] or None)."""
    if estimator is None:
        return None

    def scores(rows):
        proba = np.asarray(estimator.predict_proba(rows))
        if proba.shape != (rows.shape[0], n_classes):
            raise ValueError(
                f"init: {type(estimator).__name__}.predict_proba gave shape "
                f"{proba.shape}, expected ({rows.shape[0]}, {n_classes}): one column per "
                "class of y (its classes_ must be every class code)")
        return loss.raw_from_proba(proba)

    if is_sparse_matrix(X):  # the estimator gets the rows as a float32 CSR matrix
        X = X.tocsr()
    else:
        X = np.ascontiguousarray(X)
    if isinstance(estimator, DummyClassifier) and estimator.strategy in _CONSTANT_DUMMY:
        return scores(X[:1])[0]
    return (scores(X), None if eval_data is None else [scores(s[0]) for s in eval_data])


def _check_weighted_classes(codes, classes, w, cause):
    """Refuse weights that leave fewer than two classes with weight (scikit-learn's
    rule for ``sample_weight``, applied as well to ``sample_weight`` x
    ``class_weight``); ``cause`` names the parameter that trimmed the classes."""
    if w is None:
        return
    weighted = np.bincount(codes, weights=w, minlength=classes.size) > 0
    n_weighted = int(np.count_nonzero(weighted))
    if n_weighted >= 2:
        return
    if cause == "sample_weight":
        raise ValueError(
            f"y contains {n_weighted} class after sample_weight trimmed classes "
            "with zero weights, while a minimum of 2 classes are required.")
    raise ValueError(
        f"y contains {n_weighted} class after class_weight trimmed classes with zero "
        f"weights (sample_weight x class_weight is zero for every row of "
        f"{classes[~weighted].tolist()!r}), while a minimum of 2 classes are required.")


def _class_weights(class_weight, classes, codes, w):
    """(w x class weight of each row, per-class factors or None)."""
    if class_weight is None:
        return w, None
    base = np.ones(codes.shape[0]) if w is None else w
    if class_weight == "balanced":
        counts = np.bincount(codes, minlength=classes.size).astype(np.float64)
        with np.errstate(divide="ignore"):
            per_class = codes.shape[0] / (classes.size * counts)
    else:
        unknown = [k for k in class_weight if not np.any(classes == k)]
        if unknown:
            raise ValueError(f"class_weight has labels not in y: {unknown!r}")
        per_class = np.array([float(class_weight.get(c, 1.0)) for c in classes.tolist()])
    # Powers of two (exact: the model does not depend on the scale of the weights)
    # keep the product finite for any finite weights.
    base, per_class = scale_weights(base), scale_weights(per_class)
    out = base * per_class[codes]
    if not (out > 0).any():
        raise ValueError("sample_weight x class_weight is zero for every sample")
    return np.ascontiguousarray(out), per_class


def _check_eval_set(eval_set, names, classes, n_features, class_factors, categories=None):
    """(X_val float32 C order or float32 CSR, class codes, weights or None) of an
    ``eval_set``; a DataFrame's columns are matched with the training columns
    ``names``; with ``categories`` (of the fit), the categorical columns encoded as
    the model encodes rows to score."""
    if not isinstance(eval_set, (tuple, list)) or len(eval_set) not in (2, 3):
        raise ValueError("eval_set must be a tuple (X_val, y_val) or (X_val, y_val, w_val)")
    if categories is not None:
        Xv = encode(align_columns(eval_set[0], names, "eval_set X"), categories,
                    "eval_set X")
    else:
        Xv = check_features(align_columns(eval_set[0], names, "eval_set X"), "eval_set X",
                            dtype=np.float32, order="C", sparse="csr")
    if Xv.shape[1] != n_features:
        raise ValueError(f"eval_set X has {Xv.shape[1]} features, but X has {n_features}")
    yv = np.asarray(eval_set[1])
    if yv.ndim != 1 or yv.shape[0] != Xv.shape[0]:
        raise ValueError("eval_set y must be 1-D with one label per row of eval_set X")
    missing = missing_label_rows(eval_set[1], yv)
    if missing.size:
        raise missing_labels_error(missing, name="eval_set y")
    check_label_values(yv, name="eval_set y")
    known = np.isin(yv, classes)
    if not known.all():
        raise ValueError(f"eval_set y has labels not seen in y: "
                         f"{np.unique(yv[~known]).tolist()!r}")
    codes = np.searchsorted(classes, yv)
    wv = None
    if len(eval_set) == 3 and eval_set[2] is not None:
        wv = check_sample_weight(eval_set[2], Xv.shape[0], "eval_set w_val")
    if class_factors is not None:
        # The class weights apply to the validation rows too (as to the hold-out of
        # validation_fraction): the validation loss is the loss being minimised.
        wv = (1.0 if wv is None else scale_weights(wv)) * class_factors[codes]
        if not (wv > 0).any():
            raise ValueError(
                "eval_set: its weights (w_val x class_weight) are zero for every row, so "
                "its loss would be a perfect 0 at every iteration; give eval_set rows "
                "weight")
        wv = np.ascontiguousarray(wv, dtype=np.float64)
    return Xv, codes, wv


def _stratified_split(codes, classes, fraction, rng, weighted=None):
    """Indices (train, validation) with ``fraction`` of each class (``classes[code]``)
    held out.

    With ``weighted`` (a bool per row: weight > 0) and rows of zero weight, the rows
    of each class with weight and those without are held out separately (each
    ``fraction``), so that both parts get weight: every class with two or more
    weighted rows has weighted rows on both sides, a class with one keeps it for
    training. A split that cannot give the validation rows any weight (no class has
    two weighted rows) is an error: its loss would be 0 at every iteration, a
    perfect score that would stop the fit after one iteration. So is a fraction that
    holds out all the (weighted) rows of a class, round(fraction x its rows) >= its
    rows (scikit-learn's "The training data after the early stopping split is missing
    some classes"); otherwise each class keeps at least one row in each part.
    """
    if weighted is None or weighted.all():
        groups = [np.flatnonzero(codes == cls) for cls in range(classes.size)]
    else:
        groups = [np.flatnonzero((codes == cls) & flag) for cls in range(classes.size)
                  for flag in (weighted, ~weighted)]
    sizes = np.array([g.size for g in groups], dtype=np.int64)
    if len(groups) > classes.size:
        sizes = sizes.reshape(classes.size, 2)
    # (The draw depends on the group sizes only, so that a distributed fit draws
    # the same hold-out: rng.permutation(idx) is idx[rng.permutation(idx.size)].)
    positions = holdout_draw(sizes, holdout_sizes(sizes, classes, fraction), rng)
    val = [g[p] for g, p in zip(groups, positions)]
    val_idx = np.sort(np.concatenate(val)).astype(np.intp)
    mask = np.ones(codes.shape[0], dtype=bool)
    mask[val_idx] = False
    return np.flatnonzero(mask), val_idx


def _hold_out(method, X, codes, w, classes, fraction, seed):
    """The early-stopping split of the training rows: (X, codes, w) of the rows
    that train (X laid out by the split ``method``) and the validation rows (X_val
    in C order or CSR, codes, weights or None), ``fraction`` of each class held out
    (``_stratified_split``, drawn from ``seed``)."""
    train_idx, val_idx = _stratified_split(codes, classes, fraction,
                                           np.random.default_rng(seed),
                                           None if w is None else w > 0)
    eval_data = (take_rows(X, val_idx, "csr") if is_sparse_matrix(X)
                 else np.ascontiguousarray(X[val_idx]), codes[val_idx],
                 None if w is None else w[val_idx])
    w = None if w is None else np.ascontiguousarray(w[train_idx])
    return method.take_rows(X, train_idx), codes[train_idx], w, eval_data


def _weights(sample_weight, class_weight, classes, codes):
    """(the training weights or None, the class factors of ``class_weight``): the
    sample weights checked, times the class weights, each checked to leave two
    classes weight."""
    w = check_sample_weight(sample_weight, codes.shape[0])
    _check_weighted_classes(codes, classes, w, "sample_weight")
    w, class_factors = _class_weights(class_weight, classes, codes, w)
    _check_weighted_classes(codes, classes, w, "class_weight")
    return w, class_factors


def _callbacks(params, validated, watch=None):
    """The fit's callbacks of ``params``: early stopping (with validation rows; on
    the score ``watch`` of ``record.evals``, (set, scorer name), or else the loss)
    and the progress report."""
    callbacks = []
    early = params["n_iter_no_change"] is not None and validated
    if early:
        callbacks.append(EarlyStopping(params["n_iter_no_change"], params["tol"], watch))
    if params["verbose"]:
        callbacks.append(Log(params["verbose"], params["n_estimators"],
                             params["subsample"], watch=watch if early else None))
    return callbacks

