"""A fitted classifier without scikit-learn: what ``gbc_core.load`` returns.

A :class:`Booster` is an :class:`~gbc_core.Ensemble` with the class labels, the
feature names, the loss that turns raw scores into probabilities and labels, the
hyper-parameters it was fitted with and the record of its fit. It predicts like the
estimator (and bit for bit the same), saves and loads the model format, and imports
neither scikit-learn nor pandas: batch jobs, the command line and Dask workers use
it to score quickly. ``GradientBoostingClassifier`` wraps one (``booster_``).

Every method taking rows ``X`` takes arrays, DataFrames and scipy.sparse matrices
(CSR or CSC, matrix or array classes; other formats converted): sparse rows are
scored one at a time, never densified, with the results of the same data dense.
"""

import numbers

import numpy as np

from . import _model_io
from ._categories import encode as encode_categories
from ._docstrings import fill_docs
from ._ensemble import MAX_CATEGORY_CODES, Ensemble, Tree
from ._loss import loss_for
from ._params import effective_n_threads
from ._record import FitRecord
from ._validation import align_columns, check_features


#: Docstring pieces that the Booster's scoring methods share: a docstring line
#: ``<<name>>`` stands for the piece ``name`` (which may hold pieces itself),
#: indented as that line (``_docstrings.fill_docs``).
_DOC_PIECES = {
    "X": (
        "X : {array-like, sparse matrix} of shape (n_samples, n_features)\n"
        "    Rows to score (a DataFrame's columns are matched by name when the model has\n"
        "    feature names); NaN is a missing value."),
    "n_jobs": (
        "n_jobs : int, optional\n"
        "    Threads (None: all cores); the result is the same for any value."),
    "X_and_n_jobs": "Parameters\n----------\n<<X>>\n<<n_jobs>>",
    "examples": "Examples\n--------\n<<booster>>",
    "booster": (
        ">>> import gbc_core\n"
        ">>> from gbc_core import GradientBoostingClassifier\n"
        ">>> X = [[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]]\n"
        ">>> fitted = GradientBoostingClassifier(n_estimators=5, max_depth=1).fit(X, [0, 0, 0, 1, 1, 1])\n"
        ">>> booster = gbc_core.from_bytes(fitted.to_bytes())   # what gbc_core.load gives"),
}


def check_categories(categories, categorical):
    """The categories of a model's features, checked against its categorical mask.

    Parameters
    ----------
    categories : list or None
        Per feature None, or the sorted distinct categories of a categorical one.
    categorical : bool ndarray of shape (n_features,) or None
        ``Ensemble.categorical``.

    Returns
    -------
    list or None
        Read-only arrays (float64 for numbers, object for strings) and None; None
        where no feature is categorical or no categories were given.

    Raises
    ------
    ValueError
        Naming the feature whose entry is wrong and what was expected.
    """
    if categories is None:
        return None
    categories = list(categories)
    if categorical is None:
        if any(c is not None for c in categories):
            raise ValueError("categories were given, but the ensemble has no categorical "
                             "feature")
        return None
    if len(categories) != categorical.shape[0]:
        raise ValueError(f"categories must hold one entry per feature "
                         f"({categorical.shape[0]}), got {len(categories)}")
    out = []
    for j, (values, is_categorical) in enumerate(zip(categories, categorical)):
        if not is_categorical:
            if values is not None:
                raise ValueError(f"feature {j} is not categorical: its categories must be "
                                 "None")
            out.append(None)
            continue
        if values is None:
            raise ValueError(f"feature {j} is categorical: it needs its categories")
        values = list(values)
        if not 1 <= len(values) <= MAX_CATEGORY_CODES:
            raise ValueError(f"feature {j} must have 1 to {MAX_CATEGORY_CODES} categories, "
                             f"got {len(values)}")
        if all(isinstance(v, str) for v in values):
            array = np.array(values, dtype=object)
        elif all(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
                 for v in values):
            array = np.array(values, dtype=np.float64)
            if not np.isfinite(array).all():
                raise ValueError(f"feature {j}'s categories must be finite numbers")
        else:
            raise ValueError(f"feature {j}'s categories must be all strings or all real "
                             f"numbers, got {sorted({type(v).__name__ for v in values})}")
        if any(not a < b for a, b in zip(array[:-1], array[1:])):
            raise ValueError(f"feature {j}'s categories must be sorted and distinct")
        array.flags.writeable = False
        out.append(array)
    return out


@fill_docs(_DOC_PIECES)
class Booster:
    """A fitted gradient boosting classifier.

    Parameters
    ----------
    ensemble : Ensemble
        The trees (``n_outputs`` = 1 for two classes, one per class otherwise).
    classes : array-like of shape (n_classes,)
        The sorted, distinct class labels; class code i is ``classes[i]``.
    feature_names : sequence of str, optional
        Names of the features (column names of the training DataFrame).
    params : dict, optional
        The hyper-parameters of the fit (informative; predictions depend on the
        ensemble only).
    record : FitRecord, optional
        Training, validation and out-of-bag losses of the fit, best iteration.
    max_features : int, optional
        Features drawn per node in the fit.
    loss : {"log_loss", "exponential"}, str or Loss, default="log_loss"
        The loss the trees were fitted with: its link maps raw scores to
        probabilities (``"log_loss"``: sigma(F) for two classes, softmax(F) for
        more; ``"exponential"``, two classes only: sigma(2F)); a custom loss (a
        :class:`gbc_core.Loss`) or a registered one's name.
    init_estimator : fitted classifier, optional
        An ``init`` estimator whose initial raw scores vary by row: every
        prediction starts from its probabilities turned into raw scores by the
        loss's link (the ensemble's ``init_raw`` is then 0). Such a booster cannot
        be written to a model file (``save``/``to_bytes`` raise); it pickles with
        the estimator beside the model's bytes.
    categories : list, optional
        One entry per feature: None for a numeric feature; for a categorical one
        (``ensemble.categorical``) its categories, sorted and distinct (all real
        numbers or all strings), category code c being ``categories[j][c]``: every
        method taking rows encodes such a column (``_categories.encode``), a
        category not among them and a missing value going where each split sends
        missing values. None (the default): X's categorical columns already hold
        the codes.

    Attributes
    ----------
    ensemble : Ensemble
    loss : str
        The name of the loss (``"log_loss"``, ``"exponential"`` or a custom loss's
        name), stored in the model file.
    loss_function : Loss
        The loss object: probabilities, log-probabilities and labels of raw scores
        (through its ``link``).
    init_estimator : object or None
    classes_ : ndarray of shape (n_classes,)
    n_classes_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str or None
    n_estimators_ : int
        Boosting iterations (``ensemble.n_iterations``).
    params : dict
    train_score_ : ndarray or None
    validation_score_ : ndarray or None
    best_iteration_ : int or None
    oob_scores_, oob_improvement_ : ndarray or None
    oob_score_ : float or None
    max_features_ : int or None
    categories_ : list or None
        Per feature, None or the categories of a categorical feature (see
        ``categories``); None for a model without categorical features.

    Examples
    --------
    A Booster is what :func:`gbc_core.load` returns (and an estimator's
    ``booster_``): the fitted model without scikit-learn.

    >>> import io
    >>> import gbc_core
    >>> from gbc_core import GradientBoostingClassifier
    >>> X = [[0.0], [1.0], [2.0], [3.0]]
    >>> buffer = io.BytesIO()
    >>> GradientBoostingClassifier(n_estimators=3).fit(X, ["a", "a", "b", "b"]).save(buffer)
    >>> booster = gbc_core.load(io.BytesIO(buffer.getvalue()))
    >>> booster.classes_.tolist(), booster.predict([[0.0], [3.0]]).tolist()
    (['a', 'b'], ['a', 'b'])
    """

    def __init__(self, ensemble, classes, *, feature_names=None, params=None, record=None,
                 max_features=None, loss="log_loss", init_estimator=None, categories=None):
        if not isinstance(ensemble, Ensemble):
            raise TypeError(f"ensemble must be an Ensemble, got {type(ensemble).__name__}")
        classes = np.asarray(classes)
        if classes.ndim != 1 or classes.shape[0] < 2:
            raise ValueError(f"classes must hold at least 2 labels, got shape {classes.shape}")
        _model_io.check_labels(classes)  # sorted, distinct, of a type a file holds
        self.loss_function = loss_for(classes.shape[0], loss)
        self.loss = self.loss_function.name
        if ensemble.n_outputs != self.loss_function.n_outputs:
            raise ValueError(f"{classes.shape[0]} classes need "
                             f"{self.loss_function.n_outputs} output(s), the ensemble has "
                             f"{ensemble.n_outputs}")
        if init_estimator is not None and not callable(
                getattr(init_estimator, "predict_proba", None)):
            raise TypeError("init_estimator must have a predict_proba method, got "
                            f"{type(init_estimator).__name__}")
        self.init_estimator = init_estimator
        if feature_names is not None:
            feature_names = np.asarray(list(feature_names), dtype=object)
            if feature_names.shape != (ensemble.n_features,) or not all(
                    isinstance(s, str) for s in feature_names):
                raise ValueError(f"feature_names must be {ensemble.n_features} strings")
            if len(set(feature_names)) != feature_names.shape[0]:
                raise ValueError("feature_names must be distinct (a column of a DataFrame "
                                 "would feed two features)")
        self.categories_ = check_categories(categories, ensemble.categorical)
        self.ensemble = ensemble
        self.classes_ = classes
        self.feature_names_in_ = feature_names
        self.params = dict(params or {})
        self.max_features_ = max_features
        self.train_score_ = self.validation_score_ = self.best_iteration_ = None
        self.oob_scores_ = self.oob_improvement_ = self.oob_score_ = None
        if record is not None:
            if record.train_score is not None:
                self.train_score_ = np.asarray(record.train_score, dtype=np.float64)
            if record.validation_score is not None:
                self.validation_score_ = np.asarray(record.validation_score, dtype=np.float64)
            self.best_iteration_ = record.best_iteration
            if record.oob_scores is not None:
                self.oob_scores_ = np.asarray(record.oob_scores, dtype=np.float64)
                self.oob_improvement_ = np.asarray(record.oob_improvement, dtype=np.float64)
                self.oob_score_ = float(self.oob_scores_[-1]) if self.oob_scores_.size else None

    # --------------------------------------------------------------- structure
    n_classes_ = property(lambda self: self.classes_.shape[0], doc="number of classes")
    n_features_in_ = property(lambda self: self.ensemble.n_features, doc="number of features")
    n_estimators_ = property(lambda self: self.ensemble.n_iterations,
                             doc="boosting iterations kept")
    learning_rate = property(lambda self: self.ensemble.learning_rate, doc="eta of the fit")

    @property
    def init_raw_(self):
        """F0: a float for two classes, an array of one value per class otherwise."""
        init = self.ensemble.init_raw
        return float(init[0]) if self.ensemble.n_outputs == 1 else init.copy()

    @property
    def feature_importances_(self):
        """Normalised total squared-error decrease of the splits on each feature."""
        return self.ensemble.feature_importances()

    @property
    def estimators_(self):
        """The trees as an array (n_iterations, n_outputs) of :class:`Tree` (each with
        the parameters of the fit, as scikit-learn's trees)."""
        ens = self.ensemble
        out = np.empty((ens.n_iterations, ens.n_outputs), dtype=object)
        for m in range(ens.n_iterations):
            for k in range(ens.n_outputs):
                out[m, k] = Tree(ens.tree_nodes(m, k), n_features=ens.n_features,
                                 params=self.params, categorical=ens.categorical)
        return out

    def trees(self):
        """Every tree's nodes (structured arrays of ``gbc_core.NODE_DTYPE``), in
        iteration order.

        Returns
        -------
        list of ndarray
            Copies, K per iteration for K outputs.

        <<examples>>
        >>> len(booster.trees())
        5
        """
        return self.ensemble.trees()

    # -------------------------------------------------------------- prediction
    def align_columns(self, X, what="X"):
        """A DataFrame's columns selected by the model's feature names (any order, other
        columns ignored; a missing or repeated name is a ValueError); anything else, or any
        input of a model fitted without names, as is.

        Parameters
        ----------
        <<X>>
        what : str, default="X"
            How an error names the input.

        Returns
        -------
        array-like
            The columns of the model's features, in the model's order.

        <<examples>>
        >>> booster.align_columns(X) is X   # no feature names: as is
        True
        """
        return align_columns(X, self.feature_names_in_, what)

    def _rows(self, X):
        """Rows to score: the columns aligned (:meth:`align_columns`), and the
        categorical columns of a model with categories as their codes (unseen
        categories and missing values NaN, the missing-value side of every split)."""
        X = self.align_columns(X)
        if self.categories_ is not None:
            X = encode_categories(X, self.categories_)
        return X

    def _init_scores(self, X):
        """(initial raw scores (n_samples, n_outputs), the checked float32 rows) of
        the rows ``X`` (already aligned), from the ``init_estimator``'s
        probabilities of the float32 rows (what scikit-learn gives it; sparse rows
        as a float32 CSR matrix)."""
        Xa = check_features(X, "X", dtype=np.float32, order="C", sparse="csr")
        if Xa.shape[1] != self.ensemble.n_features:
            raise ValueError(f"X has {Xa.shape[1]} features, but the model expects "
                             f"{self.ensemble.n_features}")
        proba = np.asarray(self.init_estimator.predict_proba(Xa))
        if proba.shape != (Xa.shape[0], self.n_classes_):
            raise ValueError(
                f"the init estimator's predict_proba gave shape {proba.shape}, expected "
                f"({Xa.shape[0]}, {self.n_classes_}): one column per class")
        return self.loss_function.raw_from_proba(proba), Xa

    def predict_raw(self, X, *, n_jobs=None):
        """Raw scores F(x) of every output.

        <<X_and_n_jobs>>

        Returns
        -------
        ndarray of shape (n_samples, n_outputs)
            n_outputs is 1 for two classes, the number of classes otherwise.

        <<examples>>
        >>> booster.predict_raw([[5.0]]).shape
        (1, 1)
        """
        X = self._rows(X)
        if self.init_estimator is None:
            return self.ensemble.predict_raw(X, n_jobs=n_jobs)
        raw, Xa = self._init_scores(X)
        self.ensemble.add_raw(Xa, raw, 0, self.ensemble.n_iterations,
                              effective_n_threads(n_jobs))
        return raw

    def _staged_raw(self, X, n_jobs):
        X = self._rows(X)
        if self.init_estimator is None:
            yield from self.ensemble.staged_predict_raw(X, n_jobs=n_jobs)
            return
        raw, Xa = self._init_scores(X)
        n_threads = effective_n_threads(n_jobs)
        for m in range(self.ensemble.n_iterations):
            self.ensemble.add_raw(Xa, raw, m, m + 1, n_threads)
            yield raw.copy()

    def proba_from_raw(self, raw, *, n_jobs=None):
        """Class probabilities of raw scores (the loss's link).

        Parameters
        ----------
        raw : array-like of shape (n_samples, n_outputs) or (n_samples,)
            Raw scores, as :meth:`predict_raw` gives them.
        <<n_jobs>>

        Returns
        -------
        ndarray of shape (n_samples, n_classes)

        <<examples>>
        >>> booster.proba_from_raw(booster.predict_raw([[5.0]])).round(3)
        array([[0.298, 0.702]])
        """
        return self.loss_function.proba(np.asarray(raw, dtype=np.float64).reshape(
            -1, self.ensemble.n_outputs), effective_n_threads(n_jobs))

    def labels_from_raw(self, raw):
        """Predicted labels of raw scores: the class of largest probability (for two
        classes ``classes_[1]`` where F >= 0, as scikit-learn).

        Parameters
        ----------
        raw : array-like of shape (n_samples, n_outputs) or (n_samples,)
            Raw scores, as :meth:`predict_raw` gives them.

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels of ``classes_``.

        <<examples>>
        >>> booster.labels_from_raw([[-0.3], [0.0]])
        array([0, 1])
        """
        return self.classes_[self.codes_from_raw(raw)]

    def codes_from_raw(self, raw):
        """Predicted class codes (indices into ``classes_``) of raw scores.

        Parameters
        ----------
        raw : array-like of shape (n_samples, n_outputs) or (n_samples,)
            Raw scores, as :meth:`predict_raw` gives them.

        Returns
        -------
        ndarray of intp, shape (n_samples,)

        <<examples>>
        >>> booster.codes_from_raw([[-0.3], [0.2]]).tolist()
        [0, 1]
        """
        return self.loss_function.decision(
            np.asarray(raw, dtype=np.float64).reshape(-1, self.ensemble.n_outputs))

    def _decision(self, raw):
        return raw[:, 0] if raw.shape[1] == 1 else raw

    def decision_function(self, X, *, n_jobs=None):
        """Raw scores F(x), as the estimator's ``decision_function``.

        <<X_and_n_jobs>>

        Returns
        -------
        ndarray of shape (n_samples,) for two classes, (n_samples, n_classes) otherwise

        <<examples>>
        >>> booster.decision_function([[0.0], [5.0]]).round(3)
        array([-0.857,  0.857])
        """
        return self._decision(self.predict_raw(X, n_jobs=n_jobs))

    def predict_proba(self, X, *, n_jobs=None):
        """Class probabilities; column i is ``classes_[i]``.

        <<X_and_n_jobs>>

        Returns
        -------
        ndarray of shape (n_samples, n_classes)

        <<examples>>
        >>> booster.predict_proba([[5.0]]).round(3)
        array([[0.298, 0.702]])
        """
        return self.proba_from_raw(self.predict_raw(X, n_jobs=n_jobs), n_jobs=n_jobs)

    def predict_log_proba(self, X, *, n_jobs=None):
        """Log of :meth:`predict_proba`, computed from F (finite where p underflows).

        <<X_and_n_jobs>>

        Returns
        -------
        ndarray of shape (n_samples, n_classes)

        <<examples>>
        >>> booster.predict_log_proba([[5.0]]).round(3)
        array([[-1.211, -0.354]])
        """
        return self.loss_function.log_proba(self.predict_raw(X, n_jobs=n_jobs))

    def predict(self, X, *, n_jobs=None):
        """Predicted labels (see :meth:`labels_from_raw`).

        <<X_and_n_jobs>>

        Returns
        -------
        ndarray of shape (n_samples,)

        <<examples>>
        >>> booster.predict([[0.0], [5.0]])
        array([0, 1])
        """
        return self.labels_from_raw(self.predict_raw(X, n_jobs=n_jobs))

    def staged_decision_function(self, X, *, n_jobs=None):
        """F(x) after each iteration.

        <<X_and_n_jobs>>

        Yields
        ------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            The raw scores of the first m iterations, m = 1, 2, ...

        <<examples>>
        >>> [round(float(f[0]), 3) for f in booster.staged_decision_function([[5.0]])]
        [0.2, 0.382, 0.55, 0.708, 0.857]
        """
        for raw in self._staged_raw(X, n_jobs):
            yield self._decision(raw)

    def staged_predict_proba(self, X, *, n_jobs=None):
        """The class probabilities after each iteration.

        <<X_and_n_jobs>>

        Yields
        ------
        ndarray of shape (n_samples, n_classes)

        <<examples>>
        >>> len(list(booster.staged_predict_proba([[5.0]])))
        5
        """
        for raw in self._staged_raw(X, n_jobs):
            yield self.proba_from_raw(raw, n_jobs=n_jobs)

    def staged_predict(self, X, *, n_jobs=None):
        """The predicted labels after each iteration.

        <<X_and_n_jobs>>

        Yields
        ------
        ndarray of shape (n_samples,)

        <<examples>>
        >>> [int(p[0]) for p in booster.staged_predict([[5.0]])]
        [1, 1, 1, 1, 1]
        """
        for raw in self._staged_raw(X, n_jobs):
            yield self.labels_from_raw(raw)

    def predict_contributions(self, X, *, n_jobs=None):
        """Feature contributions to :meth:`decision_function` (exact path-dependent
        TreeSHAP, see :meth:`Ensemble.predict_contributions`).

        <<X_and_n_jobs>>

        Returns
        -------
        ndarray of shape (n_samples, n_features + 1) for two classes, or (n_samples, n_classes, n_features + 1)
            Column f is the SHAP value of feature f; the last column is the expected
            value (F0 plus each tree's cover-weighted mean). Each row (per class)
            adds up to the decision function.

        Raises
        ------
        ValueError
            With an ``init_estimator``: its raw scores vary by row and belong to no
            feature of the trees, so no expected value is common to the rows.

        <<examples>>
        >>> booster.predict_contributions([[5.0]]).round(3)
        array([[0.857, 0.   ]])
        """
        if self.init_estimator is not None:
            raise ValueError(
                f"predict_contributions: the init estimator "
                f"({type(self.init_estimator).__name__}) gives initial raw scores that "
                "vary by row, outside the trees, so the contributions would not add up "
                "to the decision function from one expected value; fit with "
                "init='prior' (or 'zero', or a DummyClassifier)")
        out = self.ensemble.predict_contributions(self._rows(X), n_jobs=n_jobs)
        return out[:, 0, :] if out.shape[1] == 1 else out

    def apply(self, X):
        """The leaf of every row in every tree.

        Parameters
        ----------
        <<X>>

        Returns
        -------
        ndarray of shape (n_samples, n_iterations, n_outputs)
            Tree-relative node indices.

        <<examples>>
        >>> booster.apply([[0.0], [5.0]])[:, 0, 0].tolist()
        [1, 2]
        """
        return self.ensemble.apply(self._rows(X))

    # ---------------------------------------------------------- scikit-learn
    def to_sklearn(self):
        """A fitted scikit-learn ``GradientBoostingClassifier`` with these trees,
        predicting the same probabilities. Needs scikit-learn.

        Each split's direction for missing values is written as the tree's
        ``missing_go_to_left``, which scikit-learn's trees follow; its
        GradientBoostingClassifier refuses NaN in ``predict``.

        Returns
        -------
        sklearn.ensemble.GradientBoostingClassifier
            ``plot_tree``, ``partial_dependence`` and ``shap.TreeExplainer`` work on it.

        <<examples>>
        >>> import numpy as np
        >>> bool(np.allclose(booster.to_sklearn().predict_proba(X), booster.predict_proba(X)))
        True
        """
        from ._sklearn_io import to_sklearn

        return to_sklearn(self)

    # ------------------------------------------------------------- model file
    def _file_content(self, params):
        return {
            "loss": self.loss,
            "classes": self.classes_,
            "feature_names": self.feature_names_in_,
            "params": self.params if params is None else params,
            "train_score": self.train_score_,
            "validation_score": self.validation_score_,
            "best_iteration": self.best_iteration_,
            "oob_scores": self.oob_scores_,
            "oob_improvement": self.oob_improvement_,
            "max_features": self.max_features_,
            "categories": self.categories_,
        }

    def encode(self, *, params=None, without_init_estimator=False):
        """The model's bytes in the model format, and the parameters the format cannot
        hold (they are stored as such and load as None).

        Parameters
        ----------
        params : dict, optional
            Replaces the hyper-parameters stored with the model (default: its own).
        without_init_estimator : bool, default=False
            Write the trees alone, without the init estimator (pickling stores the
            estimator beside them).

        Returns
        -------
        data : bytes
            The model file's content.
        unrepresentable : dict
            The parameters stored as None.

        Raises
        ------
        ValueError
            A booster with an ``init_estimator`` (initial raw scores that vary by row)
            has no complete model file, unless ``without_init_estimator``.

        <<examples>>
        >>> data, unrepresentable = booster.encode()
        >>> data[:4] == booster.to_bytes()[:4], unrepresentable
        (True, {})
        """
        if self.init_estimator is not None and not without_init_estimator:
            raise ValueError(
                f"this model cannot be written to a model file: its init estimator "
                f"({type(self.init_estimator).__name__}) gives initial raw scores that "
                "vary by row, and a model file holds data, not estimators. Fit with "
                "init='prior' (or 'zero', or a DummyClassifier, whose constant raw "
                "scores are stored), or pickle the estimator (pickle, joblib), which "
                "keeps the init estimator")
        return _model_io.encode(self.ensemble, self._file_content(params))

    def to_bytes(self, *, params=None):
        """The model in the gbc-core model format (``docs/model_format.md``).

        A parameter value the format cannot hold (e.g. a ``RandomState``) is not
        stored and loads as None; a warning here says so.

        Parameters
        ----------
        params : dict, optional
            Replaces the hyper-parameters stored with the model (default: its own).

        Returns
        -------
        bytes
            What :meth:`save` writes; :meth:`from_bytes` reads it.

        <<examples>>
        >>> gbc_core.from_bytes(booster.to_bytes()).n_estimators_
        5
        """
        data, unrepresentable = self.encode(params=params)
        _model_io.warn_unrepresentable(unrepresentable)
        return data

    def save(self, path, *, params=None):
        """Write the model to ``path`` atomically (or to a binary file object).

        Parameters
        ----------
        path : str, os.PathLike or binary file object
            Where to write.
        params : dict, optional
            Replaces the hyper-parameters stored with the model (default: its own).

        Returns
        -------
        None

        <<examples>>
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "model.gbc")
        >>> booster.save(path)
        >>> gbc_core.load(path).n_estimators_
        5
        """
        _model_io.save_bytes(self.to_bytes(params=params), path)

    @classmethod
    def from_bytes(cls, data):
        """The model of :meth:`to_bytes` output, every field validated.

        Parameters
        ----------
        data : bytes-like
            A model in the gbc-core model format.

        Returns
        -------
        Booster

        Raises
        ------
        gbc_core.ModelFormatError
            For corrupt or invalid data.

        <<examples>>
        >>> gbc_core.Booster.from_bytes(booster.to_bytes()).n_estimators_
        5
        """
        ensemble, content = _model_io.decode(data)
        return cls._from_content(ensemble, content)

    @classmethod
    def load(cls, path):
        """The model saved at ``path`` (or read from a binary file object).

        Parameters
        ----------
        path : str, os.PathLike or binary file object
            A file written by ``save``.

        Returns
        -------
        Booster

        Raises
        ------
        gbc_core.ModelFormatError
            For a corrupt, truncated or crafted file.

        <<examples>>
        >>> import io
        >>> gbc_core.Booster.load(io.BytesIO(booster.to_bytes())).n_estimators_
        5
        """
        ensemble, content = _model_io.decode(_model_io.read_model_bytes(path))
        return cls._from_content(ensemble, content)

    @classmethod
    def _from_content(cls, ensemble, content):
        record = FitRecord(content["train_score"], content["validation_score"],
                           content["oob_scores"], content["oob_improvement"],
                           content["best_iteration"])
        try:
            return cls(ensemble, content["classes"], feature_names=content["feature_names"],
                       params=content["params"], record=record,
                       max_features=content["max_features"], loss=content["loss"],
                       categories=content.get("categories"))
        except ValueError as exc:
            raise _model_io.ModelFormatError(str(exc)) from None

    def __getstate__(self):
        # Pickles (and deep copies) as the bytes of the model format: data, not code;
        # an init estimator (not data) beside them.
        state = {"gbc_core_model": self.encode(without_init_estimator=True)[0]}
        if self.init_estimator is not None:
            state["init_estimator"] = self.init_estimator
        return state

    def __setstate__(self, state):
        self.__dict__.update(Booster.from_bytes(state["gbc_core_model"]).__dict__)
        self.init_estimator = state.get("init_estimator")

    def __repr__(self):
        return (f"Booster(classes={self.classes_.tolist()!r}, loss={self.loss!r}, "
                f"n_estimators_={self.n_estimators_}, n_features_in_={self.n_features_in_})")
