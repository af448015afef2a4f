"""Property-based fuzzing of the estimator's API (hypothesis).

Random shapes (0, 1, 2, a few rows; 1 to many features), dtypes (bool, int8..int64,
uint8..uint64, float16/32/64, object, str, bytes), layouts (C, F, strided, reversed,
broadcast views), values (NaN, +-inf, huge, subnormal, -0.0, constant columns,
duplicated rows), labels (one class, NaN, None, mixed types, ragged), weights (zero,
negative, NaN, inf, all zero, huge, tiny, wrong shape) and hyper-parameters at and
past their bounds. The property: every case either

* fits, and then predicts finite probabilities in [0, 1] (rows summing to 1), a
  finite decision function, labels among ``classes_``, finite training scores and
  importances, and the model survives ``to_bytes``/``from_bytes`` unchanged; the fit
  gives one ``DataConversionWarning`` if X holds a value float32 does not represent
  (an integer beyond 2**24 that becomes another one, a finite value that becomes
  infinite), none otherwise, and predictions give none; or
* raises ValueError or TypeError whose message names the problem (the argument or
  hyper-parameter at fault),

with RuntimeWarnings (overflow, invalid value) turned into errors: no crash, no hang,
no silent NaN.

This module is not collected by the test run itself (its name does not start with
``test_``): ``test_reliability.py::test_api_fuzz`` runs it in a child interpreter,
so that a segfault or an abort in a kernel, or a hang, fails that one test with the
child's output and the last case tried, instead of killing the whole run. Run it
directly with::

    python -m pytest tests/fuzz_api.py                       # the CI budget
    GBC_CORE_FUZZ_EXAMPLES=5000 GBC_CORE_FUZZ_RANDOM=1 python -m pytest tests/fuzz_api.py

``GBC_CORE_FUZZ_EXAMPLES`` is the number of examples per test (default 200),
``GBC_CORE_FUZZ_RANDOM=1`` draws new examples on every run (default: derandomized,
the same examples every run), and ``GBC_CORE_FUZZ_LAST=path`` makes every test
pickle the case it is about to run to ``path`` (the parent test prints it when the
child dies).
"""

import os
import pickle
import re
import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gbc_core
from gbc_core import GradientBoostingClassifier as GBC

EXAMPLES = int(os.environ.get("GBC_CORE_FUZZ_EXAMPLES", "200"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=os.environ.get("GBC_CORE_FUZZ_RANDOM", "0") != "1",
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    print_blob=True,
)
LAST_CASE = os.environ.get("GBC_CORE_FUZZ_LAST")

PARAM_NAMES = (
    "n_estimators", "learning_rate", "max_depth", "min_samples_split", "min_samples_leaf",
    "min_weight_fraction_leaf", "subsample", "max_features", "init", "random_state",
    "n_jobs", "verbose", "validation_fraction", "n_iter_no_change", "tol", "warm_start",
    "class_weight",
)

# ------------------------------------------------------------------ values
SPECIAL = [
    np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5,
    1e300, -1e300, 3.4e38, 3.5e38, -3.5e38, 1e-310, 5e-324, -5e-324, 1e-45, 1e-39,
    2.0 ** 24 + 1, 1e15 + 0.3,
]
finite_or_special = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False, width=64),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from(SPECIAL),
)

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float16", "float32", "float64"]


@st.composite
def feature_matrices(draw, min_rows=0, max_rows=12, max_features=12, min_features=1):
    """(X, description): an array-like of features in a random dtype and layout."""
    n = draw(st.integers(min_rows, max_rows))
    d = draw(st.integers(min_features, max_features))
    kind = draw(st.sampled_from(["float", "float", "int", "bool", "object", "str", "bytes"]))
    if kind == "int":
        dtype = np.dtype(draw(st.sampled_from(INT_DTYPES)))
        X = draw(hnp.arrays(dtype, (n, d)))
    elif kind == "bool":
        X = draw(hnp.arrays(np.bool_, (n, d)))
    else:
        X = draw(hnp.arrays(np.float64, (n, d), elements=finite_or_special))
        if draw(st.booleans()) and d > 1:      # a constant column
            X[:, draw(st.integers(0, d - 1))] = draw(finite_or_special)
        if draw(st.booleans()) and n > 1:      # duplicated rows
            X[n // 2:] = X[: n - n // 2]
        if kind == "float":
            with np.errstate(over="ignore", invalid="ignore"):
                X = X.astype(draw(st.sampled_from(FLOAT_DTYPES)))
        elif kind == "object":
            X = X.astype(object)
            if n and draw(st.booleans()):
                X[0, 0] = None
        elif kind == "str":
            X = X.astype(str)
            if n and draw(st.booleans()):
                X[0, 0] = draw(st.sampled_from(["abc", "", "1e999", "nan", " 2 "]))
        else:
            X = X.astype(str).astype(np.bytes_)
    layout = draw(st.sampled_from(["C", "F", "strided", "reversed", "broadcast", "list"]))
    if layout == "F":
        X = np.asfortranarray(X)
    elif layout == "strided":
        big = np.repeat(np.repeat(X, 2, axis=0), 3, axis=1)
        X = big[::2, ::3]
    elif layout == "reversed":
        X = X[::-1, ::-1]
    elif layout == "broadcast" and n:
        X = np.broadcast_to(X[:1], X.shape)
    elif layout == "list":
        X = X.tolist()
    return X


def _as_float32(X):
    with warnings.catch_warnings(), np.errstate(over="ignore", invalid="ignore"):
        warnings.simplefilter("ignore")
        try:
            return np.asarray(np.asarray(X, dtype=np.float64), dtype=np.float32)
        except (TypeError, ValueError):
            return None


@st.composite
def labels(draw, n):
    """Two classes of a random type, as a list or an array."""
    kind = draw(st.sampled_from(["int", "bool", "str", "float", "int8", "uint64", "object"]))
    codes = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), dtype=int)
    if n >= 2:  # both classes present
        codes[0], codes[1] = 0, 1
    pairs = {
        "int": np.array([-3, 7]), "bool": np.array([False, True]),
        "str": np.array(["neg", "pos"]), "float": np.array([-0.0, 2.5]),
        "int8": np.array([-128, 127], dtype=np.int8),
        "uint64": np.array([0, 2**64 - 1], dtype=np.uint64),
        "object": np.array(["a", "b"], dtype=object),
    }
    y = pairs[kind][codes]
    return y.tolist() if draw(st.booleans()) else y


def _base_data(n=16, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    y[:2] = [0, 1][:n]
    return X, y


# ---------------------------------------------------------------- checking
def _record(case):
    if LAST_CASE:
        with open(LAST_CASE, "wb") as fh:
            pickle.dump(case, fh)


def _names_problem(exc, names):
    msg = str(exc)
    assert msg.strip(), f"{type(exc).__name__} without a message"
    for name in names:
        if len(name) <= 2:
            if re.search(rf"(?<![A-Za-z_]){re.escape(name)}(?![A-Za-z_])", msg):
                return
        elif name.lower() in msg.lower():
            return
    raise AssertionError(f"the message does not name any of {names}: "
                         f"{type(exc).__name__}: {msg}")


def _float32_cannot_hold(X):
    """Whether X (numbers, or text of numbers) holds a value float32 does not represent:
    an integer beyond 2**24 (of an integer dtype, or an integral float64 below 2**53)
    that becomes another number, or a finite value that becomes infinite. Decided one
    value at a time on Python numbers."""
    arr = np.asarray(X)
    if arr.dtype.kind in "OUS":
        arr = arr.astype(np.float64)
    for v in arr.ravel().tolist():
        if isinstance(v, bool):
            continue
        with np.errstate(over="ignore"):
            v32 = np.float32(v)
        if isinstance(v, int):
            if not np.isfinite(v32) or int(v32) != v:
                return True
        elif np.isfinite(v) and (not np.isfinite(v32)
                                 or abs(v) < 2.0 ** 53 and v == int(v) and float(v32) != v):
            return True
    return False


def _precision_warnings(caught):
    return [w for w in caught if issubclass(w.category, gbc_core.DataConversionWarning)
            and "does not represent" in str(w.message)]


def _fit_or_error(X, y, names, sample_weight=None, params=None, predict_X=None):
    """Fit; check the fitted model or that the error names one of ``names``."""
    params = dict(dict(n_estimators=3, max_depth=3, random_state=0), **(params or {}))
    _record(dict(X=X, y=y, sample_weight=sample_weight, params=params))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("error", RuntimeWarning)
        try:
            model = GBC(**params).fit(X, y, sample_weight=sample_weight)
        except (ValueError, TypeError) as exc:
            _names_problem(exc, names)
            return "error"
        _check_fitted(model, X if predict_X is None else predict_X)
    # One warning at fit (none from the predictions above) if X loses values in float32.
    assert len(_precision_warnings(caught)) == int(_float32_cannot_hold(X)), caught
    return "fitted"


PROBE_ROWS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e38, -1e38, 1e-45, 3.0])


def _check_fitted(model, X):
    k = model.classes_.shape[0]
    assert k >= 2 and model.classes_.shape == (k,)
    d = model.n_features_in_
    X32 = _as_float32(X)
    probes = np.tile(PROBE_ROWS[:, None], (1, d))
    for Z in ([X] if X32 is not None else []) + [probes]:
        P = model.predict_proba(Z)
        n = P.shape[0]
        assert P.shape == (n, k)
        assert np.isfinite(P).all(), P
        assert ((P >= 0) & (P <= 1)).all(), P
        np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-12)
        raw = model.decision_function(Z)
        assert raw.shape == ((n,) if k == 2 else (n, k))
        assert not np.isnan(raw).any(), raw
        assert np.isin(model.predict(Z), model.classes_).all()
        assert model.apply(Z).shape == (n, model.n_estimators_, 1 if k == 2 else k)
        *_, last = model.staged_decision_function(Z)
        np.testing.assert_array_equal(last, raw)
    assert np.isfinite(model.train_score_).all(), model.train_score_
    fi = model.feature_importances_
    assert np.isfinite(fi).all() and (fi >= 0).all()
    assert fi.sum() == 0 or abs(fi.sum() - 1) < 1e-9
    # Save and load (X with infinities included: -inf splits have a finite threshold).
    if X32 is not None:
        again = gbc_core.from_bytes(model.to_bytes())  # a fitted model always saves
        np.testing.assert_array_equal(again.decision_function(probes),
                                      model.decision_function(probes))
        np.testing.assert_array_equal(again.classes_, model.classes_)


# ------------------------------------------------------------------ tests
@FUZZ
@given(X=feature_matrices(), data=st.data())
def test_features(X, data):
    """Any X with matching two-class labels: a fitted model or an error naming X."""
    n = len(X)
    y = data.draw(labels(n), label="y")
    # with fewer than 2 rows, y cannot hold two classes
    _fit_or_error(X, y, ["X", "sample", "feature"] + (["y", "class"] if n < 2 else []))


@FUZZ
@given(data=st.data())
def test_labels(data):
    n = data.draw(st.integers(0, 10), label="n")
    X = _base_data(max(n, 1))[0][:n]
    y = data.draw(st.one_of(
        labels(n),
        st.lists(st.sampled_from([0, 1, 2, 0.5, -1, np.nan, np.inf, None, "a", "b", True,
                                  b"x", 1 + 2j, (1,)]), min_size=0, max_size=n + 1),
        hnp.arrays(st.sampled_from([np.float64, np.float32, np.int64, np.bool_, np.uint8,
                                    "U3", "S2", "M8[s]", "m8[s]", np.complex128]),
                   st.sampled_from([(n,), (n, 1), (n, 2), (max(n - 1, 0),), (1, n)])),
        st.just(None),
        st.just([[0], [1, 1]] * max(n // 2, 1)),
    ), label="y")
    _fit_or_error(X, y, ["y", "label", "class", "sample"])


@FUZZ
@given(data=st.data())
def test_sample_weights(data):
    n = data.draw(st.integers(2, 12), label="n")
    X, y = _base_data(n, seed=1)
    w = data.draw(st.one_of(
        st.none(),
        hnp.arrays(np.float64, (n,), elements=st.one_of(
            st.floats(0, 10), st.sampled_from([0.0, -0.0, -1.0, np.nan, np.inf, 1e300,
                                               1e-300, 5e-324, 1e308, 2.0 ** 64, 2.0 ** -70]))),
        hnp.arrays(st.sampled_from([np.int64, np.uint8, np.bool_, np.float32, np.float16]),
                   (n,)),
        st.sampled_from([0, -1, 2.5, np.nan, 1e308, "1", [1.0]]),
        hnp.arrays(np.float64, st.sampled_from([(n - 1,), (n, 1), (0,), (n + 1,)]),
                   elements=st.floats(0, 2)),
        st.just(np.zeros(n)), st.just(np.array(["a"] * n)),
    ), label="sample_weight")
    cw = data.draw(st.sampled_from([None, "balanced", {0: 1e308, 1: 1e308}, {0: 0.0},
                                    {0: -1.0}, {0: np.nan}, {5: 1.0}, {1: 1e-320}]),
                   label="class_weight")
    _fit_or_error(X, y, ["sample_weight", "class_weight", "weight"], sample_weight=w,
                  params=dict(class_weight=cw))


def _param_values(name):
    common = [None, -1, 0, 1, 2, 0.5, 1.0, 1.5, np.nan, np.inf, True, "x", [1]]
    specific = {
        "n_estimators": [1, 2, 3, 5, np.int64(4), 10**20, -5],
        "learning_rate": [1e-320, 1e-6, 0.1, 1.0, 10.0, 1e6, 1e200, 1e300, 1e308, -0.1],
        "max_depth": [1, 2, 3, 10, 64, 65, 1000, np.int32(2)],
        "min_samples_split": [2, 3, 100, 1e-9, 0.999, 2.0],
        "min_samples_leaf": [1, 2, 7, 100, 1e-9, 0.4999, 0.9999],
        "min_weight_fraction_leaf": [0.0, 0.1, 0.49, 0.5, 0.51, -0.0],
        "subsample": [1e-9, 0.1, 0.5, 0.999, 1.0, 1.0001],
        "max_features": ["sqrt", "log2", "auto", 1, 2, 3, 100, 1e-9, 0.999],
        "init": ["zero", "prior", "ZERO", ""],
        "random_state": [0, 1, 2**32, 2**63 - 1, 2**64, np.random.RandomState(0),
                         np.random.default_rng(0)],
        "n_jobs": [1, 2, 4, -1, -2, -1000, 1024, 1025, 10**6],
        "verbose": [0, False],
        "validation_fraction": [1e-9, 0.1, 0.5, 0.999, 1.0],
        "n_iter_no_change": [1, 2, 5],
        "tol": [0.0, 1e-4, 1e300, -1e-4],
        "warm_start": [False, True],
        "class_weight": ["balanced", {0: 2.0}, {1: 0.0}, {"a": 1.0}, "unbalanced"],
    }
    return st.sampled_from(specific[name] + common)


@FUZZ
@given(data=st.data())
def test_hyper_parameters(data):
    """Hyper-parameters at and past their bounds, a few at a time."""
    n = data.draw(st.sampled_from([2, 3, 5, 12, 40]), label="n")
    X, y = _base_data(n, d=data.draw(st.integers(1, 5), label="d"), seed=2)
    chosen = data.draw(st.lists(st.sampled_from(PARAM_NAMES), min_size=1, max_size=4,
                                unique=True), label="names")
    params = {}
    for name in chosen:
        params[name] = data.draw(_param_values(name), label=name)
    ne = params.get("n_estimators")
    if isinstance(ne, (int, np.integer)) and not isinstance(ne, bool) and ne > 5:
        params["n_estimators"] = 5  # a valid but huge count would only take long
    _fit_or_error(X, y, list(PARAM_NAMES) + ["validation", "warm_start"], params=params)


@FUZZ
@given(X=feature_matrices(min_rows=0, max_rows=10, max_features=6))
def test_predict_inputs(X):
    """A fitted model on any X: finite probabilities or an error naming X."""
    model = _fitted_model()
    _record(dict(X=X, predict=True))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("error", RuntimeWarning)
        try:
            P = model.predict_proba(X)
        except (ValueError, TypeError) as exc:
            _names_problem(exc, ["X", "feature", "sample"])
            return
    assert not _precision_warnings(caught)  # values are converted as at fit, silently
    assert np.asarray(X).shape[1] == model.n_features_in_
    assert np.isfinite(P).all() and ((P >= 0) & (P <= 1)).all()


_MODEL = []


def _fitted_model():
    if not _MODEL:
        X, y = _base_data(60, d=3, seed=3)
        X[::7, 1] = np.nan
        _MODEL.append(GBC(n_estimators=8, max_depth=3, random_state=0).fit(X, y))
    return _MODEL[0]
