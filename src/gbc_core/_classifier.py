"""The scikit-learn-compatible estimator: validation, parameters and orchestration.

The numbers are computed by the Cython kernels: ``_sorting`` (sort each feature once
per fit), ``_splitter`` (exact split search, level-wise growth), ``_leaves`` (leaf
values of paper eq. 1 and the fused update of F, p and r) and ``_predictor`` (batch
traversal of paper Algorithm 2).
"""

import numbers
import sys
import time
import warnings

import numpy as np

from . import _leaves, _model_io, _openmp
from ._common import NODE_DTYPE, ROW_STAT_DTYPE
from ._predictor import Predictor
from ._sorting import presort_features
from ._splitter import TreeGrower
from ._validation import (
    check_features,
    check_sample_weight,
    check_target,
    feature_names_of,
    scale_weights,
)

# scikit-learn is not imported here (it is optional, and importing it costs seconds
# at every start of a batch job): the base classes follow its conventions, and the
# scikit-learn tags are built only when scikit-learn asks for them.
from ._base import BaseEstimator as _Base
from ._base import ClassifierMixin as _Mixin


class NotFittedError(ValueError, AttributeError):
    """The estimator is used before ``fit``."""


_not_fitted_for_sklearn = None


def _not_fitted_error_class():
    """``NotFittedError``, also a scikit-learn ``NotFittedError`` when scikit-learn is
    loaded (so that its callers catch it); scikit-learn is never imported for this."""
    global _not_fitted_for_sklearn
    sk = sys.modules.get("sklearn.exceptions")
    if sk is None:
        return NotFittedError
    if _not_fitted_for_sklearn is None:
        _not_fitted_for_sklearn = type("NotFittedError", (NotFittedError, sk.NotFittedError),
                                       {"__module__": __name__})
    return _not_fitted_for_sklearn


def _check_int(name, value, low, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(
            f"{name} must be an integer >= {low}{' or None' if allow_none else ''}, "
            f"got {value!r}"
        )
    return int(value)


def _check_real(name, value, low, high, low_open=False, high_open=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    bad_low = value <= low if low_open else value < low
    bad_high = value >= high if high_open else value > high
    if bad_low or bad_high:
        lo = "(" if low_open else "["
        hi = ")" if high_open else "]"
        raise ValueError(f"{name} must be in {lo}{low}, {high}{hi}, got {value!r}")
    return float(value)


def _seed_from(random_state):
    """A 64-bit seed from ``random_state`` (None, int, RandomState or Generator)."""
    if random_state is None:
        return int(np.random.SeedSequence().entropy % (2**63))
    if isinstance(random_state, (np.random.RandomState,)):
        return int(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be >= 0, got {random_state}")
        return int(random_state)
    raise ValueError(
        "random_state must be None, an integer, a numpy RandomState or Generator, "
        f"got {random_state!r}"
    )


class GradientBoostingClassifier(_Mixin, _Base):
    """Gradient boosting for binary classification with exact splits.

    The model of H.-H. Chen, "Understanding Gradient Boosting Classifier: Training,
    Prediction, and the Role of gamma_j" (Algorithms 1 and 2): starting from F0, each
    iteration fits a squared-error regression tree to the residuals r = y - p, sets
    each leaf to gamma_j = sum r / sum p(1 - p) (eq. 1) and updates F += eta * gamma,
    p = sigma(F). It is the model scikit-learn's
    ``GradientBoostingClassifier(init="zero")`` trains.

    Parameters
    ----------
    n_estimators : int, default=100
        Number of boosting iterations (trees), M in the paper.
    learning_rate : float, default=0.1
        Shrinkage eta applied to each tree's leaf values; must be > 0.
    max_depth : int or None, default=3
        Maximum depth of each tree (None: grow until the leaves are pure or too small).
    min_samples_split : int or float, default=2
        Minimum samples a node needs to be split (a float is a fraction of n_samples).
    min_samples_leaf : int or float, default=1
        Minimum samples in each leaf (a float is a fraction of n_samples).
    min_weight_fraction_leaf : float, default=0.0
        Minimum fraction of the total sample weight in each leaf, in [0, 0.5].
    subsample : float, default=1.0
        Fraction of rows drawn without replacement for each tree (stochastic gradient
        boosting); leaf values and the training loss use the in-bag rows.
    max_features : int, float, {"sqrt", "log2"} or None, default=None
        Features drawn at random for each node (None: all).
    init : {"zero", "prior"}, default="zero"
        F0 = 0 as in the paper, or the log-odds of the weighted class frequencies.
    random_state : int, RandomState, Generator or None, default=None
        Seeds subsampling, feature draws and the early-stopping split.
    n_jobs : int or None, default=None
        Threads for fit and predict: None uses all cores (honouring
        ``OMP_NUM_THREADS``); negative values count back from the number of CPUs.
        Results are bit-identical for any value.
    verbose : int, default=0
        Print one line per iteration when > 0.
    validation_fraction : float, default=0.1
        Fraction of the training data held out for early stopping when
        ``n_iter_no_change`` is set (stratified).
    n_iter_no_change : int or None, default=None
        Stop when the validation loss has not improved by ``tol`` for this many
        iterations; the model keeps its best iteration.
    tol : float, default=1e-4
        Minimum improvement of the validation loss for early stopping.
    warm_start : bool, default=False
        Add trees to the fitted model instead of starting again when ``fit`` is
        called with a larger ``n_estimators``. On the same data, fitting 50 trees and
        warm-starting to 100 gives bit-identical trees to fitting 100 at once, also
        with ``subsample < 1``, ``max_features`` and early stopping: iteration m draws
        from a stream seeded by (seed, m), and the seed of the first fit is kept
        (with ``random_state=None`` too; a model loaded from a file derives it from
        ``random_state`` again).
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, multiplied with ``sample_weight``.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Sorted class labels; ``classes_[1]`` is the positive class.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Present when fitted on a DataFrame with string column names.
    n_estimators_ : int
        Number of trees kept.
    train_score_ : ndarray of shape (n_estimators_,)
        Weighted training log-loss (in-bag rows) after each iteration.
    validation_score_ : ndarray of shape (n_iterations,)
        Weighted validation log-loss after each iteration run (when there is
        validation data: ``eval_set`` or ``n_iter_no_change``), including the
        iterations after ``best_iteration_`` that early stopping discarded.
    best_iteration_ : int or None
        With early stopping, the number of trees kept: the iteration of the last
        improvement of the validation loss by more than ``tol``. Else None.
    init_raw_ : float
        F0.
    feature_importances_ : ndarray of shape (n_features_in_,)
        Normalised total squared-error decrease per feature.
    """

    def __init__(
        self,
        n_estimators=100,
        learning_rate=0.1,
        max_depth=3,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        subsample=1.0,
        max_features=None,
        init="zero",
        random_state=None,
        n_jobs=None,
        verbose=0,
        validation_fraction=0.1,
        n_iter_no_change=None,
        tol=1e-4,
        warm_start=False,
        class_weight=None,
    ):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
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
        self.warm_start = warm_start
        self.class_weight = class_weight

    # ------------------------------------------------------------------ params
    def _validate_params(self, n_samples, n_features):
        n_estimators = _check_int("n_estimators", self.n_estimators, 1)
        learning_rate = _check_real("learning_rate", self.learning_rate, 0.0, np.inf,
                                    low_open=True, high_open=True)
        max_depth = _check_int("max_depth", self.max_depth, 1, allow_none=True)
        if max_depth is not None and max_depth > 64:
            raise ValueError(f"max_depth must be <= 64, got {max_depth}")
        mss = self.min_samples_split
        if isinstance(mss, numbers.Integral) and not isinstance(mss, bool):
            min_samples_split = _check_int("min_samples_split", mss, 2)
        elif isinstance(mss, numbers.Real) and not isinstance(mss, bool):
            frac = _check_real("min_samples_split", mss, 0.0, 1.0, low_open=True)
            min_samples_split = max(2, int(np.ceil(frac * n_samples)))
        else:
            raise ValueError(f"min_samples_split must be an int >= 2 or a float in (0, 1], got {mss!r}")
        msl = self.min_samples_leaf
        if isinstance(msl, numbers.Integral) and not isinstance(msl, bool):
            min_samples_leaf = _check_int("min_samples_leaf", msl, 1)
        elif isinstance(msl, numbers.Real) and not isinstance(msl, bool):
            frac = _check_real("min_samples_leaf", msl, 0.0, 1.0, low_open=True, high_open=True)
            min_samples_leaf = max(1, int(np.ceil(frac * n_samples)))
        else:
            raise ValueError(f"min_samples_leaf must be an int >= 1 or a float in (0, 1), got {msl!r}")
        subsample = _check_real("subsample", self.subsample, 0.0, 1.0, low_open=True)
        min_weight_fraction_leaf = _check_real(
            "min_weight_fraction_leaf", self.min_weight_fraction_leaf, 0.0, 0.5)
        mf = self.max_features
        if mf is None:
            max_features = n_features
        elif mf == "sqrt":
            max_features = max(1, int(np.sqrt(n_features)))
        elif mf == "log2":
            max_features = max(1, int(np.log2(n_features)))
        elif isinstance(mf, numbers.Integral) and not isinstance(mf, bool):
            max_features = _check_int("max_features", mf, 1)
            max_features = min(max_features, n_features)
        elif isinstance(mf, numbers.Real) and not isinstance(mf, bool):
            frac = _check_real("max_features", mf, 0.0, 1.0, low_open=True)
            max_features = max(1, int(frac * n_features))
        else:
            raise ValueError(
                f"max_features must be None, 'sqrt', 'log2', an int >= 1 or a float in (0, 1], got {mf!r}"
            )
        if self.init not in ("zero", "prior"):
            raise ValueError(f"init must be 'zero' or 'prior', got {self.init!r}")
        verbose = _check_int("verbose", self.verbose, 0)
        n_iter_no_change = _check_int("n_iter_no_change", self.n_iter_no_change, 1, allow_none=True)
        validation_fraction = _check_real("validation_fraction", self.validation_fraction,
                                          0.0, 1.0, low_open=True, high_open=True)
        tol = _check_real("tol", self.tol, 0.0, np.inf, high_open=True)
        n_threads = _openmp.effective_n_threads(self.n_jobs)
        if self.class_weight is not None and self.class_weight != "balanced" and not isinstance(
            self.class_weight, dict
        ):
            raise ValueError(
                f"class_weight must be None, 'balanced' or a dict, got {self.class_weight!r}"
            )
        return dict(
            n_estimators=n_estimators, learning_rate=learning_rate, max_depth=max_depth,
            min_samples_split=min_samples_split, min_samples_leaf=min_samples_leaf,
            subsample=subsample, max_features=max_features, verbose=verbose,
            min_weight_fraction_leaf=min_weight_fraction_leaf,
            n_iter_no_change=n_iter_no_change, validation_fraction=validation_fraction,
            tol=tol, n_threads=n_threads,
        )

    # --------------------------------------------------------------------- fit
    def fit(self, X, y, sample_weight=None, eval_set=None):
        """Fit the ensemble (paper Algorithm 1).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric features; NaN marks a missing value.
        y : array-like of shape (n_samples,)
            Two distinct labels (numbers, strings or bools).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative finite weights, not all zero.
        eval_set : tuple (X_val, y_val) or (X_val, y_val, w_val), default=None
            Validation data for early stopping and ``validation_score_``; replaces the
            internal ``validation_fraction`` split. ``class_weight`` applies to these
            rows too.

        Returns
        -------
        self
        """
        names = feature_names_of(X)
        Xa = check_features(X, "X", dtype=np.float32, order="F", training=True)
        n_samples, n_features = Xa.shape
        classes, y01 = check_target(y, n_samples)
        w = check_sample_weight(sample_weight, n_samples)
        p = self._validate_params(n_samples, n_features)
        w, class_factors = self._apply_class_weight(classes, y01, w)

        if self.warm_start and self._is_fitted():
            old_names = getattr(self, "feature_names_in_", None)
            if (n_features != self.n_features_in_ or not np.array_equal(classes, self.classes_)
                    or (names is not None and old_names is not None
                        and not np.array_equal(names, old_names))):
                raise ValueError(
                    "warm_start: X and y must have the features and classes of the first fit"
                )
            if p["n_estimators"] < self.n_estimators_:
                raise ValueError(
                    f"warm_start: n_estimators={p['n_estimators']} must be >= the "
                    f"{self.n_estimators_} trees already fitted"
                )
            if p["n_estimators"] == self.n_estimators_:
                return self
        else:
            self._reset_model()
        self.classes_ = classes
        self.n_features_in_ = n_features
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

        # One seed per model: a warm start goes on with the seed of the first fit, and
        # each iteration draws from its own stream (seed, iteration), so adding trees
        # later gives the trees a single fit would have grown. An integer random_state
        # is the seed; any other is drawn from once and the seed kept.
        rng_seed = getattr(self, "_rng_seed", None)
        if rng_seed is None:
            rng_seed = _seed_from(self.random_state)
            if not isinstance(self.random_state, numbers.Integral):
                self._rng_seed = rng_seed
        rng = np.random.default_rng(rng_seed)

        # Early-stopping data: an explicit eval_set, or a stratified hold-out.
        X_val = y_val = w_val = None
        if eval_set is not None:
            X_val, y_val, w_val = self._check_eval_set(eval_set, n_features, class_factors)
        elif p["n_iter_no_change"] is not None:
            train_idx, val_idx = _stratified_split(y01, p["validation_fraction"], rng)
            X_val = np.ascontiguousarray(Xa[val_idx])
            y_val = y01[val_idx]
            w_val = None if w is None else w[val_idx]
            Xa = np.asfortranarray(Xa[train_idx])
            y01 = y01[train_idx]
            w = None if w is None else np.ascontiguousarray(w[train_idx])
            n_samples = Xa.shape[0]
            if w is not None and not (w > 0).any():
                raise ValueError("the training part after the validation split has zero weight")

        self._fit_boosting(Xa, y01, w, p, rng_seed, X_val, y_val, w_val)
        return self

    def _apply_class_weight(self, classes, y01, w):
        """(w x class weight of each row, per-class factors or None)."""
        cw = self.class_weight
        if cw is None:
            return w, None
        base = np.ones_like(y01) if w is None else w
        if cw == "balanced":
            counts = np.bincount(y01.astype(np.intp), minlength=2).astype(np.float64)
            per_class = y01.shape[0] / (2.0 * counts)
        else:
            unknown = [k for k in cw if not np.any(classes == k)]
            if unknown:
                raise ValueError(f"class_weight has labels not in y: {unknown!r}")
            per_class = np.array([float(cw.get(c, 1.0)) for c in classes.tolist()])
            if not np.isfinite(per_class).all() or (per_class < 0).any():
                raise ValueError("class_weight values must be finite and >= 0")
        # Powers of two (exact: the model does not depend on the scale of the weights)
        # keep the product finite for any finite weights.
        base, per_class = scale_weights(base), scale_weights(per_class)
        out = base * per_class[y01.astype(np.intp)]
        if not (out > 0).any():
            raise ValueError("sample_weight x class_weight is zero for every sample")
        return np.ascontiguousarray(out), per_class

    def _check_eval_set(self, eval_set, n_features, class_factors=None):
        if not isinstance(eval_set, (tuple, list)) or len(eval_set) not in (2, 3):
            raise ValueError("eval_set must be a tuple (X_val, y_val) or (X_val, y_val, w_val)")
        Xv = check_features(self._align_columns(eval_set[0], "eval_set X"), "eval_set X",
                            dtype=np.float32, order="C")
        if Xv.shape[1] != n_features:
            raise ValueError(
                f"eval_set X has {Xv.shape[1]} features, but X has {n_features}"
            )
        yv = np.asarray(eval_set[1])
        if yv.ndim != 1 or yv.shape[0] != Xv.shape[0]:
            raise ValueError("eval_set y must be 1-D with one label per row of eval_set X")
        known = np.isin(yv, self.classes_)
        if not known.all():
            raise ValueError(f"eval_set y has labels not seen in y: {np.unique(yv[~known])!r}")
        yv01 = (yv == self.classes_[1]).astype(np.float64)
        wv = None
        if len(eval_set) == 3 and eval_set[2] is not None:
            wv = check_sample_weight(eval_set[2], Xv.shape[0])
        if class_factors is not None:
            # The class weights apply to the validation rows too (as to the hold-out of
            # validation_fraction): the validation loss is the loss being minimised.
            wv = (1.0 if wv is None else scale_weights(wv)) * class_factors[yv01.astype(np.intp)]
            if not (wv > 0).any():
                raise ValueError("eval_set: sample_weight x class_weight is zero for every sample")
            wv = np.ascontiguousarray(wv, dtype=np.float64)
        return Xv, yv01, wv

    def _reset_model(self):
        for attr in ("_nodes", "_tree_offsets", "_predictor_cache", "train_score_",
                     "validation_score_", "best_iteration_", "init_raw_", "n_estimators_",
                     "_fit_state", "_rng_seed"):
            if hasattr(self, attr):
                delattr(self, attr)

    def _is_fitted(self):
        return hasattr(self, "_nodes")

    def _initial_raw(self, y01, w):
        if self.init == "zero":
            return 0.0  # paper: F0 = 0, p0 = 0.5
        ww = np.ones_like(y01) if w is None else w
        pos = float(np.dot(ww, y01))
        neg = float(ww.sum()) - pos
        if pos <= 0 or neg <= 0:
            return 0.0
        return float(np.log(pos / neg))

    def _fit_boosting(self, X, y, w, p, rng_seed, X_val, y_val, w_val):
        n_samples, n_features = X.shape
        n_threads = p["n_threads"]
        w, w_val = scale_weights(w), scale_weights(w_val)
        order = np.empty((n_features, n_samples), dtype=np.int32)
        sorted_values = np.empty((n_features, n_samples), dtype=np.float32)
        n_nonmissing = np.empty(n_features, dtype=np.int64)
        presort_features(X, order, sorted_values, n_nonmissing, n_threads)
        grower = TreeGrower(
            X, order, sorted_values, n_nonmissing,
            -1 if p["max_depth"] is None else p["max_depth"],
            p["min_samples_split"], p["min_samples_leaf"],
            p["min_weight_fraction_leaf"] * (float(n_samples) if w is None else float(w.sum())),
            p["max_features"], n_threads,
            w is None or bool((w > 0).all() and (w.astype(np.float32) == w).all()),
        )

        warm = self._is_fitted()
        if warm:
            init_raw = self.init_raw_
            raw = self._raw_scores(np.ascontiguousarray(X), n_threads)
            trees = _split_trees(self._nodes, self._tree_offsets)
            train_score = list(self.train_score_)
        else:
            init_raw = self._initial_raw(y, w)
            raw = np.full(n_samples, init_raw, dtype=np.float64)
            trees, train_score = [], []
        self.init_raw_ = init_raw
        prob = np.empty(n_samples, dtype=np.float64)
        residual = np.empty(n_samples, dtype=np.float64)
        row_stats = np.empty(n_samples, dtype=ROW_STAT_DTYPE)
        _leaves.init_state(y, w, raw, prob, residual, row_stats)

        raw_val = None
        val_score = []
        if X_val is not None:
            raw_val = np.full(X_val.shape[0], init_raw, dtype=np.float64)
            if warm:
                # The validation loss of each tree already fitted, on this validation
                # set (the same additions as in a single fit), so that validation_score_
                # stays aligned with the trees and early stopping resumes its state.
                pred = self._predictor()
                for t in range(len(trees)):
                    pred.predict_raw(X_val, raw_val, t, t + 1, n_threads)
                    val_score.append(_leaves.weighted_log_loss(y_val, raw_val, w_val))
        best_loss, best_n, since_best = np.inf, len(trees), 0
        for i, vloss in enumerate(val_score):
            if vloss + p["tol"] < best_loss:
                best_loss, best_n, since_best = vloss, i + 1, 0
            else:
                since_best += 1
        lr = p["learning_rate"]
        # |F(x)| <= |F0| + the sum over the trees of eta x the tree's largest |leaf
        # value|, for any x. Kept under RAW_SCORE_LIMIT, no raw score can overflow (an
        # inf - inf would be a NaN probability).
        raw_bound = abs(init_raw) + sum(lr * float(np.abs(t["value"]).max()) for t in trees)
        n_inbag = max(1, int(p["subsample"] * n_samples))
        start = time.perf_counter()
        if p["verbose"]:
            print(f"{'Iter':>6} {'Train Loss':>12} {'Valid Loss':>12} {'Elapsed':>10}")
        for m in range(len(trees), p["n_estimators"]):
            if (p["n_iter_no_change"] is not None and raw_val is not None
                    and since_best >= p["n_iter_no_change"]):
                break
            # Iteration m draws from its own stream: the same whether the model is
            # fitted at once or grown by warm starts.
            rng = np.random.default_rng([rng_seed, m])
            mask = None
            if p["subsample"] < 1.0:
                mask = np.zeros(n_samples, dtype=np.uint8)
                mask[rng.choice(n_samples, n_inbag, replace=False)] = 1
            seed = int(rng.integers(0, 2**63 - 1)) if p["max_features"] < n_features else 0
            grower.grow(row_stats, residual, mask, seed)
            nodes = grower.nodes_array()
            loss = _leaves.boosting_update(
                nodes, grower.node_of_row, mask, y, w, lr, raw, prob, residual,
                row_stats, n_threads,
            )
            raw_bound += lr * float(np.abs(nodes["value"]).max())
            if not raw_bound <= _model_io.RAW_SCORE_LIMIT:
                raise ValueError(
                    f"learning_rate={lr!r} is too large for this data: after {m + 1} "
                    f"tree(s) the raw scores F(x) could exceed {_model_io.RAW_SCORE_LIMIT:.0e} "
                    "and overflow; use a smaller learning_rate"
                )
            trees.append(nodes)
            train_score.append(loss)
            msg_val = ""
            if raw_val is not None:
                Predictor(nodes, np.array([0, nodes.shape[0]]), lr, n_features).predict_raw(
                    X_val, raw_val, 0, 1, n_threads)
                vloss = _leaves.weighted_log_loss(y_val, raw_val, w_val)
                val_score.append(vloss)
                msg_val = f"{vloss:12.4f}"
                if vloss + p["tol"] < best_loss:
                    best_loss, best_n, since_best = vloss, m + 1, 0
                else:
                    since_best += 1
            if p["verbose"]:
                print(f"{m + 1:>6} {loss:12.4f} {msg_val or '':>12} "
                      f"{time.perf_counter() - start:9.2f}s", flush=True)
        if raw_val is not None and p["n_iter_no_change"] is not None:
            # Keep the best iteration.
            trees = trees[:best_n]
            self.best_iteration_ = best_n
        else:
            self.best_iteration_ = None
        self._set_trees(trees)
        self.train_score_ = np.asarray(train_score[: len(trees)])
        if raw_val is not None:
            self.validation_score_ = np.asarray(val_score)

    def _set_trees(self, trees):
        sizes = [t.shape[0] for t in trees]
        self._tree_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        nodes = np.empty(int(self._tree_offsets[-1]), dtype=NODE_DTYPE)
        for tree, start in zip(trees, self._tree_offsets[:-1]):
            nodes[start: start + tree.shape[0]] = tree
        self._nodes = nodes
        self.n_estimators_ = len(trees)
        self._predictor_cache = Predictor(self._nodes, self._tree_offsets,
                                          float(self.learning_rate), self.n_features_in_)

    # ----------------------------------------------------------------- predict
    def _predictor(self):
        pred = getattr(self, "_predictor_cache", None)
        if pred is None:
            pred = Predictor(self._nodes, self._tree_offsets, float(self.learning_rate),
                             self.n_features_in_)
            self._predictor_cache = pred
        return pred

    def _check_fitted(self):
        if not self._is_fitted():
            raise _not_fitted_error_class()(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' "
                "with appropriate arguments before using this estimator."
            )

    def _align_columns(self, X, what="X"):
        """A DataFrame of a model fitted with feature names: its columns selected by
        name (any order, other columns ignored); a missing or repeated feature name is
        a ValueError. Anything else as is."""
        names = getattr(self, "feature_names_in_", None)
        given = feature_names_of(X)
        if names is None or given is None or np.array_equal(given, names):
            return X
        seen = set(given)
        missing = [n for n in names if n not in seen]
        if missing:
            raise ValueError(f"{what} is missing feature(s) seen at fit time: {missing[:10]!r}")
        known = set(names)
        repeated = sorted({n for n in given if n in known and list(given).count(n) > 1})
        if repeated:
            raise ValueError(f"{what} has repeated feature column(s): {repeated[:10]!r}")
        return X[list(names)]  # same columns in another order: reorder by name

    def _check_predict_X(self, X):
        self._check_fitted()
        X = self._align_columns(X)
        Xa = check_features(X, "X", dtype=np.float32, order="C")
        if Xa.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {Xa.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input"
            )
        return Xa

    def _raw_scores(self, Xa, n_threads):
        out = np.full(Xa.shape[0], self.init_raw_, dtype=np.float64)
        self._predictor().predict_raw(Xa, out, 0, -1, n_threads)
        return out

    def decision_function(self, X):
        """Raw score F(x) = F0 + sum_m eta T_m(x) (paper Algorithm 2, before sigma).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        Xa = self._check_predict_X(X)
        return self._raw_scores(Xa, _openmp.effective_n_threads(self.n_jobs))

    def predict_proba(self, X):
        """Class probabilities; column 1 is p = sigma(F(x)) for ``classes_[1]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, 2)
        """
        Xa = self._check_predict_X(X)
        n_threads = _openmp.effective_n_threads(self.n_jobs)
        return _proba_from_raw(self._raw_scores(Xa, n_threads), n_threads)

    def predict(self, X):
        """Predicted labels: ``classes_[1]`` where p > 0.5, else ``classes_[0]``."""
        raw = self.decision_function(X)
        return self.classes_[(raw > 0).astype(np.intp)]

    def staged_decision_function(self, X):
        """Yield the raw scores after each tree (1, 2, ..., n_estimators_ trees)."""
        Xa = self._check_predict_X(X)
        n_threads = _openmp.effective_n_threads(self.n_jobs)
        out = np.full(Xa.shape[0], self.init_raw_, dtype=np.float64)
        pred = self._predictor()
        for m in range(self.n_estimators_):
            pred.predict_raw(Xa, out, m, m + 1, n_threads)
            yield out.copy()

    def staged_predict_proba(self, X):
        """Yield the class probabilities after each tree."""
        for raw in self.staged_decision_function(X):
            yield _proba_from_raw(raw)

    def staged_predict(self, X):
        """Yield the predicted labels after each tree."""
        for raw in self.staged_decision_function(X):
            yield self.classes_[(raw > 0).astype(np.intp)]

    def apply(self, X):
        """Leaf (tree-relative node index) of each row in each tree, shape (n, n_trees)."""
        Xa = self._check_predict_X(X)
        return self._predictor().apply(Xa)

    # ------------------------------------------------------------- inspection
    @property
    def feature_importances_(self):
        """Normalised total squared-error decrease of the splits on each feature."""
        self._check_fitted()
        total = np.zeros(self.n_features_in_, dtype=np.float64)
        n_relevant = 0
        for tree in _split_trees(self._nodes, self._tree_offsets):
            inner = tree[tree["feature"] >= 0]
            if inner.shape[0] == 0:
                continue
            per_tree = np.zeros(self.n_features_in_, dtype=np.float64)
            np.add.at(per_tree, inner["feature"], inner["improvement"])
            root_w = tree["weighted_n"][0]
            with np.errstate(over="ignore"):
                total += per_tree / root_w if root_w > 0 else per_tree
            n_relevant += 1
        if not np.isfinite(total).all():  # absurd statistics (a hand-edited model file)
            total = np.isinf(total).astype(np.float64)
        if n_relevant == 0 or total.sum() <= 0:
            return np.zeros(self.n_features_in_, dtype=np.float64)
        return total / total.sum()

    def trees(self):
        """The fitted trees, each a structured array of nodes (see ``NODE_DTYPE``)."""
        self._check_fitted()
        return [t.copy() for t in _split_trees(self._nodes, self._tree_offsets)]

    # ------------------------------------------------------------ persistence
    def save(self, path):
        """Save the fitted model to ``path`` (atomically) in the gbc-core model format.

        The format is versioned data, not code (see ``docs/model_format.md``); read
        it back with :func:`gbc_core.load`. ``path`` may also be a binary file object.
        """
        _model_io.save_model(self, path)

    def to_bytes(self):
        """The fitted model as ``bytes`` in the gbc-core model format."""
        return _model_io.model_to_bytes(self)

    @classmethod
    def from_bytes(cls, data):
        """Rebuild a model from :meth:`to_bytes` output, validating every field.

        Raises :class:`gbc_core.ModelFormatError` for corrupt or invalid data.
        """
        return _model_io.model_from_bytes(data, cls)

    def __getstate__(self):
        # A fitted model pickles (and deep-copies) as the bytes of the model format.
        return _model_io.get_state(self)

    def __setstate__(self, state):
        _model_io.set_state(self, state)

    def __sklearn_tags__(self):
        # Called by scikit-learn (>= 1.6) only, so it is importable here.
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags

        return Tags(
            estimator_type="classifier",
            target_tags=TargetTags(required=True),
            classifier_tags=ClassifierTags(multi_class=False),
            input_tags=InputTags(allow_nan=True),
        )

    def _more_tags(self):  # scikit-learn < 1.6
        return {"allow_nan": True, "binary_only": True}


def _split_trees(nodes, offsets):
    return [nodes[offsets[i]: offsets[i + 1]] for i in range(len(offsets) - 1)]


def _proba_from_raw(raw, n_threads=1):
    proba = np.empty((raw.shape[0], 2), dtype=np.float64)
    _leaves.proba_from_raw(np.ascontiguousarray(raw, dtype=np.float64), proba, n_threads)
    return proba


def _stratified_split(y01, fraction, rng):
    """Indices (train, validation) with ``fraction`` of each class held out."""
    val = []
    for cls in (0.0, 1.0):
        idx = np.flatnonzero(y01 == cls)
        n_val = int(round(fraction * idx.size))
        if idx.size >= 2:
            n_val = min(max(n_val, 1), idx.size - 1)
        else:
            n_val = 0
        val.append(rng.permutation(idx)[:n_val])
    val_idx = np.sort(np.concatenate(val))
    mask = np.ones(y01.shape[0], dtype=bool)
    mask[val_idx] = False
    train_idx = np.flatnonzero(mask)
    if val_idx.size == 0:
        raise ValueError(
            "validation_fraction leaves no validation sample; use more data or a larger fraction"
        )
    return train_idx, val_idx
