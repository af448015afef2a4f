"""Input checks of the Python layer (NumPy only; scikit-learn is not required)."""

import numbers
import sys

import numpy as np


def _is_sparse(X):
    return hasattr(X, "tocsr") or hasattr(X, "toarray") and hasattr(X, "nnz")


def feature_names_of(X):
    """Column names of a DataFrame-like ``X`` if they are all strings, else None."""
    columns = getattr(X, "columns", None)
    if columns is None or not hasattr(X, "shape"):
        return None
    names = [c for c in columns]
    if len(names) and all(isinstance(c, str) for c in names):
        return np.asarray(names, dtype=object)
    return None


def align_columns(X, names, what="X"):
    """``X`` with the columns ``names`` in that order, when ``X`` is a DataFrame with
    string column names and ``names`` is not None (any order, other columns ignored);
    anything else as is.

    Raises
    ------
    ValueError
        If a name is missing from ``X`` or repeated in it.
    """
    given = feature_names_of(X)
    if names is None or given is None or np.array_equal(given, names):
        return X
    seen = set(given)
    missing = [n for n in names if n not in seen]
    if missing:
        raise ValueError(f"{what} is missing feature(s) seen at fit time: {missing[:10]!r}")
    known = set(names)
    given_list = list(given)
    repeated = sorted({n for n in given_list if n in known and given_list.count(n) > 1})
    if repeated:
        raise ValueError(f"{what} has repeated feature column(s): {repeated[:10]!r}")
    return X[list(names)]  # same columns in another order: reorder by name


def _polars_to_numpy(X, name):
    """A polars DataFrame of numeric or boolean columns as float64, null as NaN."""
    import polars as pl

    bad = [c for c, dt in X.schema.items() if not (dt.is_numeric() or dt == pl.Boolean)]
    if bad:
        raise ValueError(
            f"{name} has non-numeric columns; every feature must be numeric: {bad[:10]!r}"
        )
    return X.cast(pl.Float64).to_numpy()


def _to_numpy(X, name):
    if _is_sparse(X):
        raise TypeError(
            f"{name} is a sparse matrix; sparse input is not supported, "
            f"pass a dense array (e.g. {name}.toarray())"
        )
    if hasattr(X, "to_numpy") and hasattr(X, "columns"):
        if type(X).__module__.split(".")[0] == "polars":
            return _polars_to_numpy(X, name)
        # pandas DataFrame: avoid object arrays for numeric columns.
        try:
            return X.to_numpy(dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"{name} has non-numeric columns; every feature must be numeric: {exc}"
            ) from None
    try:
        return np.asarray(X)
    except Exception as exc:  # noqa: BLE001 - ragged lists and alike
        raise ValueError(f"{name} cannot be converted to a 2-D numeric array: {exc}") from None


def check_features(X, name="X", dtype=np.float32, order="C", allow_nan=True):
    """Return ``X`` as a 2-D finite-or-NaN array of ``dtype`` in ``order``.

    Raises
    ------
    TypeError
        For sparse or complex input.
    ValueError
        For non-numeric, empty or non-2-D input, or NaN when ``allow_nan`` is False.
    """
    arr = _to_numpy(X, name)
    if arr.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} must hold real numbers")
    if arr.dtype.kind in "OUSV":
        try:
            arr = arr.astype(np.float64)
        except TypeError as exc:
            raise TypeError(f"{name} must be numeric; {exc}") from None
        except ValueError as exc:
            raise ValueError(f"{name} must be numeric; could not convert to float: {exc}") from None
    elif arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} has unsupported dtype {arr.dtype}; expected numbers")
    if arr.ndim == 1:
        raise ValueError(
            f"{name} must be 2-D (n_samples, n_features), got a 1-D array. Reshape your "
            f"data with {name}.reshape(-1, 1) for one feature or {name}.reshape(1, -1) "
            "for one row"
        )
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got {arr.ndim}-D")
    if arr.shape[0] == 0:
        raise ValueError(
            f"{name} has 0 sample(s) (shape={arr.shape}) while a minimum of 1 is required."
        )
    if arr.shape[1] == 0:
        raise ValueError(
            f"{name} has 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required."
        )
    if arr.dtype.kind == "f" and not allow_nan and np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN")
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.asarray(arr, dtype=dtype, order=order)
    return out


def check_target(y, n_samples):
    """Validate class labels; return (classes, class codes).

    Returns
    -------
    classes : ndarray of shape (n_classes,)
        The sorted distinct labels (at least 2).
    codes : int array of shape (n_samples,)
        ``classes[codes]`` is ``y``.
    """
    if y is None:
        raise ValueError(
            "GradientBoostingClassifier requires y to be passed, but the target y is None"
        )
    if _is_sparse(y):
        raise TypeError("y is a sparse matrix; pass a 1-D array of labels")
    try:
        y = np.asarray(y)
    except (TypeError, ValueError) as exc:  # ragged lists and alike
        raise ValueError(f"y cannot be converted to a 1-D array of labels: {exc}") from None
    if y.ndim == 2 and y.shape[1] == 1:
        import warnings

        warnings.warn(
            "A column-vector y was passed when a 1d array was expected; using y.ravel().",
            _conversion_warning_class(),
            stacklevel=3,
        )
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (n_samples,), got shape {y.shape}")
    if y.shape[0] != n_samples:
        raise ValueError(
            f"X and y have inconsistent numbers of samples: X has {n_samples}, "
            f"y has {y.shape[0]}"
        )
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError("y contains NaN or infinity; every label must be a finite value")
    if y.dtype.kind in "mM" and np.isnat(y).any():
        raise ValueError("y contains NaT (a missing label); every sample needs a label")
    if y.dtype.kind == "c":
        raise ValueError("y has complex values; labels must be numbers, strings or bools")
    if y.dtype.kind == "O":
        kinds = {type(v) for v in y}
        if any(v is None for v in y):
            raise ValueError("y contains None; every sample needs a label")
        floats = [v for v in y if isinstance(v, float)]
        if floats and not np.isfinite(np.asarray(floats)).all():
            raise ValueError("y contains NaN or infinity; every label must be a finite value")
        if len({str in k.__mro__ for k in kinds}) > 1:
            raise TypeError(
                "y mixes strings and numbers; labels must all be of one type "
                f"(got {sorted(k.__name__ for k in kinds)})"
            )
    try:
        classes, encoded = np.unique(y, return_inverse=True)
    except TypeError as exc:
        raise TypeError(f"y has labels that cannot be compared: {exc}") from None
    if y.dtype.kind == "f" and classes.size > 2 and np.any(classes != np.round(classes)):
        raise ValueError(
            "Unknown label type: y looks continuous (regression target); "
            "GradientBoostingClassifier needs class labels"
        )
    if classes.size < 2:
        raise ValueError(
            f"y has only one class ({classes[0]!r}); classification needs at least two"
        )
    return classes, encoded.astype(np.intp).ravel()


def check_sample_weight(sample_weight, n_samples):
    """Validate weights: 1-D, finite, non-negative, not all zero; return float64 or None."""
    if sample_weight is None:
        return None
    if isinstance(sample_weight, numbers.Number):
        sample_weight = np.full(n_samples, float(sample_weight))
    w = np.asarray(sample_weight)
    if w.dtype.kind not in "biuf":
        raise ValueError(f"sample_weight must be numeric, got dtype {w.dtype}")
    w = np.ascontiguousarray(w, dtype=np.float64)
    if w.ndim != 1 or w.shape[0] != n_samples:
        raise ValueError(
            f"sample_weight must have shape ({n_samples},), got {w.shape}"
        )
    if not np.isfinite(w).all():
        raise ValueError("sample_weight contains NaN or infinity")
    if (w < 0).any():
        raise ValueError("sample_weight contains negative values; weights must be >= 0")
    if not (w > 0).any():
        raise ValueError("sample_weight is zero for every sample; at least one must be > 0")
    return w


#: Weights whose largest value lies outside [2**-64, 2**64] are rescaled (see below).
WEIGHT_RANGE = (2.0 ** -64, 2.0 ** 64)


def scale_weights(w):
    """``w`` times the power of two that brings its largest value into [0.5, 1), when
    that value lies outside ``WEIGHT_RANGE``; else ``w`` itself (None: None).

    The kernels add weights and multiply sums of weights (the split gain is of the
    order of the total weight to the fourth power): huge weights overflow to inf/NaN
    gains and leaf values, tiny ones put every Newton denominator under its 1e-150
    guard so that no tree learns anything. Scaling by a power of two is exact, so the
    model is the one of the unscaled weights (leaf values, splits and scores are
    invariant to the scale of the weights); only the ``weighted_n`` and
    ``improvement`` node statistics carry the factor.
    """
    if w is None:
        return None
    top = float(np.max(w))
    if WEIGHT_RANGE[0] <= top <= WEIGHT_RANGE[1] or not np.isfinite(top) or top <= 0:
        return w
    exponent = np.frexp(top)[1]
    return np.ascontiguousarray(np.ldexp(w, -exponent))


class DataConversionWarning(UserWarning):
    """A conversion of the input changed its shape or type."""


def _conversion_warning_class():
    """scikit-learn's DataConversionWarning when scikit-learn is already loaded (so its
    checks recognise it), else ours; scikit-learn is never imported for this."""
    sk = sys.modules.get("sklearn.exceptions")
    return getattr(sk, "DataConversionWarning", DataConversionWarning)
