"""The hyper-parameters of gbc-core, declared once.

``PARAMS`` lists every parameter with its default, the rule its value follows and a
one-line description. The estimator takes its ``__init__`` defaults from it and
validates with :func:`check_params` at fit; the model-file loader validates the
parameters a file stores with the same function; the command line builds its
options (type, default, help) from it. No other module holds a parameter rule.

NumPy only (no scikit-learn): the loader and the command line import it.
"""

import math
import numbers

import numpy as np

from . import _openmp, _split_methods


# ------------------------------------------------------------------------ rules
class Rule:
    """A set of allowed values: ``accepts(value)`` and a phrase for error messages."""

    def accepts(self, value):
        raise NotImplementedError

    def describe(self):
        raise NotImplementedError


def _is_integer(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _is_real(value):
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


class Integer(Rule):
    """An integer (not a bool) in ``[low, high]`` (``high=None``: no upper bound)."""

    def __init__(self, low, high=None):
        self.low, self.high = low, high

    def accepts(self, value):
        return (_is_integer(value) and value >= self.low
                and (self.high is None or value <= self.high))

    def describe(self):
        if self.high is None:
            return f"an integer >= {self.low}"
        return f"an integer in [{self.low}, {self.high}]"


class Real(Rule):
    """A finite real number (not a bool) in an interval; integers are accepted."""

    def __init__(self, low, high=math.inf, low_open=False, high_open=False):
        self.low, self.high = low, high
        self.low_open, self.high_open = low_open, high_open

    def accepts(self, value):
        if not _is_real(value) or not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return above and below

    def describe(self):
        if self.high == math.inf:
            return f"a number {'>' if self.low_open else '>='} {self.low:g}"
        return (f"a number in {'(' if self.low_open else '['}{self.low:g}, "
                f"{self.high:g}{')' if self.high_open else ']'}")


class Fraction(Real):
    """A float (not an integer) in an interval: the fractional form of a count."""

    def accepts(self, value):
        return not _is_integer(value) and super().accepts(value)

    def describe(self):
        return "a float " + super().describe()[len("a number "):]


class Options(Rule):
    """One of a few strings."""

    def __init__(self, *values):
        self.values = values

    def accepts(self, value):
        return isinstance(value, str) and value in self.values

    def describe(self):
        return " or ".join(repr(v) for v in self.values)


class Registered(Rule):
    """One of the names of a registry (a dict), read at each check: a name
    registered after import is accepted too."""

    def __init__(self, registry):
        self.registry = registry

    def accepts(self, value):
        return isinstance(value, str) and value in self.registry

    def describe(self):
        return " or ".join(repr(v) for v in self.registry)


class NoneValue(Rule):
    def accepts(self, value):
        return value is None

    def describe(self):
        return "None"


class Boolean(Rule):
    def accepts(self, value):
        return isinstance(value, (bool, np.bool_))

    def describe(self):
        return "True or False"


class Generator(Rule):
    """A NumPy ``RandomState`` or ``Generator`` (drawn from once per model)."""

    def accepts(self, value):
        return isinstance(value, (np.random.RandomState, np.random.Generator))

    def describe(self):
        return "a numpy RandomState or Generator"


class ThreadCount(Rule):
    """A non-zero integer whose magnitude a process can start as threads."""

    @staticmethod
    def limit():
        # Thousands of OpenMP threads exhaust the process/thread limits and crash the
        # runtime (a segfault, not an exception).
        return max(1024, _openmp.cpu_count())

    def accepts(self, value):
        return _is_integer(value) and value != 0 and abs(value) <= self.limit()

    def describe(self):
        return f"a non-zero integer with |n_jobs| <= {self.limit()}"


class ClassWeights(Rule):
    """A mapping of class label -> finite weight >= 0."""

    def accepts(self, value):
        return isinstance(value, dict) and all(
            _is_real(v) and math.isfinite(v) and v >= 0 for v in value.values())

    def describe(self):
        return "a dict of class label -> finite weight >= 0"


class Estimator(Rule):
    """An object (not a string) with ``fit`` and ``predict_proba`` methods: an
    ``init`` estimator, scikit-learn's contract (``HasMethods``)."""

    def accepts(self, value):
        return (not isinstance(value, str) and callable(getattr(value, "fit", None))
                and callable(getattr(value, "predict_proba", None)))

    def describe(self):
        return "an estimator with fit and predict_proba"


class LossObject(Rule):
    """A loss: the name of a registered custom loss (``register_loss``), or an
    instance of a ``gbc_core.Loss`` subclass (checked in full at fit)."""

    def accepts(self, value):
        from ._loss import Loss, loss_names

        return isinstance(value, Loss) or (isinstance(value, str) and value in loss_names())

    def describe(self):
        return "a registered loss's name or a gbc_core.Loss instance"


class Scoring(Rule):
    """What early stopping watches: 'loss', None (the estimator's score, accuracy),
    a scikit-learn scorer's name (checked against scikit-learn's list at fit: this
    module imports no scikit-learn) or a callable ``scorer(estimator, X, y)``."""

    def accepts(self, value):
        return (isinstance(value, str) and value != "") or value is None or callable(value)

    def describe(self):
        return ("'loss', None (accuracy), a scikit-learn scorer's name or a callable "
                "scorer(estimator, X, y)")


#: The metrics ``eval_metric`` names (``_scoring.METRICS`` computes them).
EVAL_METRICS = ("loss", "log_loss", "roc_auc", "accuracy", "error")


class EvalMetrics(Rule):
    """None, one of :data:`EVAL_METRICS` or a list (tuple) of distinct ones."""

    def accepts(self, value):
        names = [value] if isinstance(value, str) else value
        return value is None or (isinstance(names, (list, tuple)) and len(names) > 0
                                 and all(isinstance(n, str) and n in EVAL_METRICS
                                         for n in names)
                                 and len(set(names)) == len(names))

    def describe(self):
        return ("None or one or a list of distinct names among "
                + ", ".join(repr(n) for n in EVAL_METRICS))


class MonotonicConstraints(Rule):
    """Monotonic constraints, as scikit-learn's HistGradientBoosting takes them: a
    sequence of -1, 0 or +1 (one per feature, checked at fit) or a dict of feature
    name -> -1, 0 or +1."""

    @staticmethod
    def _value(v):
        return _is_integer(v) and v in (-1, 0, 1)

    def accepts(self, value):
        if isinstance(value, dict):
            return all(isinstance(k, str) and self._value(v) for k, v in value.items())
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
            return False
        try:
            return np.ndim(value) == 1 and all(self._value(v) for v in np.asarray(value).tolist())
        except (TypeError, ValueError):
            return False

    def describe(self):
        return ("a sequence of -1, 0 or 1 (one per feature) or a dict of feature "
                "name -> -1, 0 or 1")


class InteractionConstraints(Rule):
    """Interaction constraints, as scikit-learn's HistGradientBoosting takes them:
    'pairwise', 'no_interactions' or a sequence of groups (sequences or sets) of
    feature indices (their range checked at fit)."""

    def accepts(self, value):
        if isinstance(value, str):
            return value in ("pairwise", "no_interactions")
        # Sized collections only: an iterator would be used up by this check.
        if isinstance(value, (bytes, dict)) or not hasattr(value, "__len__"):
            return False
        try:
            groups = list(value)
            return all(not isinstance(g, (str, bytes, dict)) and hasattr(g, "__len__")
                       and all(_is_integer(f) and f >= 0 for f in g) for g in groups)
        except TypeError:
            return False

    def describe(self):
        return ("'pairwise', 'no_interactions' or a sequence of groups (lists) of "
                "feature indices")


class CategoricalFeatures(Rule):
    """Which features are categorical, as scikit-learn's HistGradientBoosting takes
    them: ``"from_dtype"``, None, or a sequence of feature indices, of booleans (a
    mask, one per feature) or of feature names (each checked against X at fit,
    ``_categories.categorical_mask``)."""

    def accepts(self, value):
        if value is None or isinstance(value, str):
            return value is None or value == "from_dtype"
        if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__len__"):
            return False
        try:
            items = np.asarray(value, dtype=object).tolist() if np.ndim(value) == 1 else None
        except (TypeError, ValueError):
            return False
        if items is None:
            return False
        return (all(isinstance(v, (bool, np.bool_)) for v in items)
                or all(_is_integer(v) and v >= 0 for v in items)
                or all(isinstance(v, str) for v in items))

    def describe(self):
        return ("'from_dtype', None, or an array-like of feature indices, of booleans "
                "(one per feature) or of feature names")


NONE = NoneValue()


class Param:
    """One hyper-parameter: name, default, allowed values and a description.

    ``cli`` says how the command line's ``train`` offers it: ``"option"`` as
    ``--name-with-dashes VALUE``, ``"count"`` as a repeatable flag, None not at all.
    """

    def __init__(self, name, default, rules, help, cli="option"):
        self.name = name
        self.default = default
        self.rules = tuple(rules)
        self.help = help
        self.cli = cli

    def accepts(self, value):
        return any(rule.accepts(value) for rule in self.rules)

    def describe(self):
        return " or ".join(rule.describe() for rule in self.rules)

    def check(self, value):
        """Return ``value`` if allowed, else raise a ValueError naming the parameter."""
        if not self.accepts(value):
            raise ValueError(f"{self.name} must be {self.describe()}, got {value!r}")
        return value


class SklearnWordedParam(Param):
    """A hyper-parameter whose error is scikit-learn's sentence ("The 'init' parameter
    of GradientBoostingClassifier must be ... Got ... instead."), which scikit-learn's
    own tests match, with ``expected`` naming what is allowed."""

    def __init__(self, name, default, rules, help, expected, cli="option"):
        super().__init__(name, default, rules, help, cli=cli)
        self.expected = expected

    def check(self, value):
        if not self.accepts(value):
            raise ValueError(f"The {self.name!r} parameter of GradientBoostingClassifier "
                             f"must be {self.expected}. Got {value!r} instead.")
        return value


PARAMS = (
    Param("loss", "log_loss", [Options("log_loss", "exponential"), LossObject()],
          "loss minimised: 'log_loss' (binomial for 2 classes, multinomial for more) "
          "or 'exponential' (2 classes: AdaBoost's loss, p = sigma(2F)); in Python, "
          "also a custom loss (a gbc_core.Loss) or a registered one's name"),
    Param("learning_rate", 0.1, [Real(0, low_open=True)],
          "shrinkage eta of every tree's leaf values (F += eta * gamma)"),
    Param("n_estimators", 100, [Integer(1)],
          "boosting iterations; one tree per iteration, or one per class and "
          "iteration for 3 or more classes"),
    Param("subsample", 1.0, [Real(0, 1, low_open=True)],
          "fraction of the rows drawn, without replacement, for each iteration"),
    Param("min_samples_split", 2, [Integer(2), Fraction(0, 1, low_open=True)],
          "fewest samples a node needs to be split (a float: a fraction of the rows)"),
    Param("min_samples_leaf", 1, [Integer(1), Fraction(0, 1, low_open=True, high_open=True)],
          "fewest samples of a leaf (a float: a fraction of the rows)"),
    Param("min_weight_fraction_leaf", 0.0, [Real(0, 0.5)],
          "smallest fraction of the total sample weight in a leaf"),
    Param("max_depth", 3, [Integer(1, 64), NONE],
          "deepest level of a tree (None: until leaves are pure or too small)"),
    Param("max_leaf_nodes", None, [NONE, Integer(2)],
          "grow each tree best first (the split of largest improvement next) up to "
          "this many leaves, max_depth still a bound (None: level by level)"),
    SklearnWordedParam(
        "init", "zero", [Options("zero", "prior"), NONE, Estimator()],
        "initial raw scores: 'zero' (the paper's F0 = 0), 'prior' or None (the "
        "loss's link of the weighted class frequencies), or, in Python, an "
        "estimator with fit and predict_proba (fitted on the training data)",
        expected="a str among {'zero'}, None or an object implementing 'fit' and "
                 "'predict_proba', or 'prior' (the same as None)"),
    Param("random_state", None, [NONE, Integer(0), Generator()],
          "seed of the row subsampling, feature draws and early-stopping split"),
    Param("max_features", None, [NONE, Options("sqrt", "log2"), Integer(1),
                                 Fraction(0, 1, low_open=True)],
          "features drawn for each node: 'sqrt', 'log2', a count or a fraction "
          "(None: all)"),
    Param("verbose", 0, [Integer(0)], "print scikit-learn's progress report (iteration, training loss, out-of-bag "
          "improvement, validation loss, time left): 1 at iterations 1-10, 20, ..., 100, "
          "200, ...; 2 or more every iteration",
          cli="count"),
    Param("warm_start", False, [Boolean()],
          "fit adds trees to the fitted model up to n_estimators", cli=None),
    Param("validation_fraction", 0.1, [Real(0, 1, low_open=True, high_open=True)],
          "fraction of the rows held out (stratified) for early stopping when no "
          "evaluation data is given"),
    Param("n_iter_no_change", None, [NONE, Integer(1)],
          "stop when the validation loss has not improved by tol for this many "
          "iterations and keep the best iteration (None: no early stopping)"),
    Param("tol", 1e-4, [Real(0)], "smallest improvement of the validation loss (or "
          "score) that counts"),
    Param("scoring", "loss", [Scoring()],
          "what early stopping watches on the validation data: 'loss', a "
          "scikit-learn scorer (higher is better) or None (accuracy)", cli=None),
    Param("eval_metric", None, [EvalMetrics()],
          "metrics recorded per iteration on every evaluation set (evals_result_; "
          "None: the loss)", cli=None),
    Param("n_jobs", None, [NONE, ThreadCount()],
          "threads (None: all cores or OMP_NUM_THREADS; negative: counted back from "
          "the number of CPUs); results are identical for any value"),
    Param("split_method", "exact", [Registered(_split_methods.METHODS)],
          _split_methods.help_text()),
    Param("criterion", "friedman_mse", [Options("friedman_mse", "squared_error")],
          "proxy the splits of a node are ranked by: 'friedman_mse' (Friedman's "
          "improvement) or 'squared_error' (scikit-learn's MSE proxy); equal rankings "
          "but for rounding"),
    Param("min_impurity_decrease", 0.0, [Real(0)],
          "a node splits only if its weighted impurity decrease (scikit-learn's: "
          "N_t / N * (impurity - N_t_R / N_t * right_impurity - N_t_L / N_t * "
          "left_impurity), weighted) is at least this"),
    Param("ccp_alpha", 0.0, [Real(0)],
          "complexity parameter of the minimal cost-complexity pruning of each tree, "
          "before its leaf values are set (0: no pruning)"),
    Param("max_bins", 255, [Integer(2, 255)],
          "bins per feature of split_method='hist' (missing values get one more)"),
    Param("class_weight", None, [NONE, Options("balanced"), ClassWeights()],
          "weights of the classes, multiplied with the sample weights: 'balanced' "
          "or a dict of label -> weight (command line: a JSON object such as "
          "'{\"0\": 1, \"1\": 3}', labels matched to the target's by value)"),
    Param("leaf_solver", "newton", [Options("newton", "exact")],
          "leaf values: 'newton' (one Newton step, the paper's eq. 1) or 'exact' (each "
          "leaf's gamma minimises the leaf's loss exactly; pure leaves capped)"),
    Param("monotonic_cst", None, [NONE, MonotonicConstraints()],
          "monotonic constraint of each feature: -1 (decreasing), 0 (none) or 1 "
          "(increasing), a sequence with one value per feature or a dict by feature "
          "name (two classes only; command line: a JSON array such as '[1, 0, -1]' or "
          "object such as '{\"age\": 1}')"),
    Param("interaction_cst", None, [NONE, InteractionConstraints()],
          "groups of features allowed to interact (a tree path uses the features of "
          "one group), 'pairwise' or 'no_interactions'; features in no group form "
          "one more group (command line: a JSON array such as '[[0, 1], [2, 3]]')"),
    Param("categorical_features", "from_dtype", [CategoricalFeatures()],
          "the categorical features (splits send a set of categories left): "
          "'from_dtype' (pandas category and string columns, polars Categorical, Enum "
          "and String columns; none of an array), None (none), or feature indices, a "
          "boolean mask or feature names", cli=None),
    Param("min_samples_category", 1, [Integer(1)],
          "in a node, a category of a categorical feature with fewer rows than this "
          "is never sent left: it goes right with the categories of no row in the "
          "node (1: every category with a row is sorted by its mean residual)"),
)

#: Parameters by name.
BY_NAME = {p.name: p for p in PARAMS}
#: The default of every parameter.
DEFAULTS = {p.name: p.default for p in PARAMS}


def check_params(params):
    """Check every value of ``params`` (a dict name -> value) against its rule.

    Raises
    ------
    ValueError
        Naming the first parameter whose value is not allowed (or unknown).
    """
    for name, value in params.items():
        if name not in BY_NAME:
            raise ValueError(f"unknown parameter {name!r}; known: {', '.join(sorted(BY_NAME))}")
        BY_NAME[name].check(value)
    return params


def seed_from(random_state):
    """A 64-bit seed from a checked ``random_state`` (None: fresh entropy; a
    RandomState or Generator: one draw; an integer: itself)."""
    if random_state is None:
        return int(np.random.SeedSequence().entropy % (2**63))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    return int(random_state)


def effective_n_threads(n_jobs):
    """The thread count of ``n_jobs`` (checked by its rule).

    None uses every core (or ``OMP_NUM_THREADS``); a positive value is used as
    given; a negative value counts back from the number of CPUs as in joblib (-1:
    all CPUs). Without OpenMP the result is always 1.
    """
    if n_jobs is None:
        return _openmp.max_threads()
    BY_NAME["n_jobs"].check(n_jobs)
    if not _openmp.openmp_enabled():
        return 1
    if n_jobs < 0:
        return max(1, _openmp.cpu_count() + 1 + int(n_jobs))
    return int(n_jobs)


def monotonic_constraints(value, n_features, feature_names=None):
    """The int8 array of a checked ``monotonic_cst`` for ``n_features`` features
    (a dict by name: ``feature_names`` needed), or None where no feature is
    constrained (None, or every value 0: the same model as without)."""
    if value is None:
        return None
    if isinstance(value, dict):
        if feature_names is None:
            raise ValueError("monotonic_cst is a dict of feature names but X has no "
                             "feature names; pass one value per feature instead")
        names = [str(n) for n in feature_names]
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise ValueError(f"monotonic_cst names {len(unknown)} feature(s) not in X: "
                             f"{unknown[:5]}")
        cst = np.array([value.get(n, 0) for n in names], dtype=np.int8)
    else:
        cst = np.asarray(value).astype(np.int8)
        if cst.shape != (n_features,):
            raise ValueError(f"monotonic_cst must have one value per feature ({n_features}), "
                             f"got {cst.shape[0]}")
    return cst if cst.any() else None


def interaction_constraints(value, n_features):
    """The groups (sorted tuples of feature indices) of a checked
    ``interaction_cst`` for ``n_features`` features, scikit-learn's
    HistGradientBoosting's rule: 'no_interactions' is one group per feature,
    'pairwise' one per pair, and the features listed in no group form one more
    group. None where there is no constraint (None, or a group of every feature:
    the same model as without)."""
    if value is None:
        return None
    if value == "no_interactions":
        groups = [(f,) for f in range(n_features)]
    elif value == "pairwise":
        groups = [(i, j) for i in range(n_features) for j in range(i + 1, n_features)]
    else:
        groups = [tuple(sorted(set(int(f) for f in group))) for group in value]
        bad = [g for g in groups if g and g[-1] >= n_features]
        if bad:
            raise ValueError(f"interaction_cst: feature indices must be in [0, "
                             f"{n_features - 1}], got the group {list(bad[0])}")
    listed = set().union(*groups) if groups else set()
    rest = tuple(f for f in range(n_features) if f not in listed)
    if rest:
        groups.append(rest)
    if any(len(g) == n_features for g in groups):
        return None
    return groups


def resolve(params, n_samples, n_features, total_weight, feature_names=None):
    """The values a fit uses: counts from fractions, ``max_features`` as a count.

    Parameters
    ----------
    params : dict
        Checked parameters (every name of ``PARAMS``).
    n_samples, n_features : int
        Shape of the training data.
    total_weight : float
        Sum of the sample weights (``n_samples`` without weights).

    Returns
    -------
    dict
        The parameters with ``min_samples_split``, ``min_samples_leaf`` and
        ``max_features`` as integers, ``min_weight_leaf`` (the weight a leaf needs),
        ``n_threads``, and the constraints as the trees take them
        (``monotonic_cst``: :func:`monotonic_constraints`, by ``feature_names``
        for a dict; ``interaction_cst``: :func:`interaction_constraints`).
    """
    out = dict(params)
    mss = params["min_samples_split"]
    if not _is_integer(mss):
        mss = max(2, int(math.ceil(mss * n_samples)))
    msl = params["min_samples_leaf"]
    if not _is_integer(msl):
        msl = max(1, int(math.ceil(msl * n_samples)))
    mf = params["max_features"]
    if mf is None:
        mf = n_features
    elif mf == "sqrt":
        # In integers (scikit-learn's int(np.sqrt(n)) and int(np.log2(n)), exactly):
        # NumPy's float log2 is chosen by CPU and a power of two must not round down.
        mf = max(1, math.isqrt(n_features))
    elif mf == "log2":
        mf = max(1, int(n_features).bit_length() - 1)
    elif _is_integer(mf):
        mf = min(int(mf), n_features)
    else:
        mf = max(1, int(mf * n_features))
    out.update(min_samples_split=int(mss), min_samples_leaf=int(msl), max_features=mf,
               min_weight_leaf=params["min_weight_fraction_leaf"] * total_weight,
               n_threads=effective_n_threads(params["n_jobs"]),
               monotonic_cst=monotonic_constraints(params.get("monotonic_cst"), n_features,
                                                   feature_names),
               interaction_cst=interaction_constraints(params.get("interaction_cst"),
                                                       n_features))
    return out
