"""Categorical features: which they are, their categories, and their codes.

The only place that turns category values into codes. A fit calls
:func:`categorical_mask` (which features ``categorical_features`` names, on X) and,
where some are categorical, :func:`fit_encode` (each one's categories learned from
the training rows, the rows encoded); the :class:`~gbc_core.Booster` calls
:func:`encode` on every row it scores.

The categories of a feature are the distinct non-missing values of its training
rows, sorted: numbers as numbers (booleans as the numbers 0 and 1), strings as
strings (a feature mixing the two is refused). Category code c is the c-th of them;
a categorical column holds its codes 0 .. k-1 as float32 in the matrix the trees
see. At most ``max_bins`` categories (scikit-learn's HistGradientBoosting's rule,
for both split methods, so that they agree). At predict time a known value becomes
its code; a category never seen in training and a missing value (None, NaN, pd.NA,
polars null) become NaN, the missing value, which every categorical split sends
where it sends missing values (as HistGradientBoosting does; no warning). The
numeric columns go through ``check_features`` unchanged.

NumPy only: pandas and polars are read when X is one of their DataFrames (never
imported here otherwise).
"""

import numbers
import sys

import numpy as np

from ._validation import (
    _check_unique_names,
    _dataframe_library,
    check_features,
    feature_names_of,
    is_sparse_matrix,
)

FROM_DTYPE = "from_dtype"


# ----------------------------------------------------------------- which columns
def _column_label(names, j):
    """Column ``j`` as messages name it: its name (repr) or its index."""
    return f"{j}" if names is None else f"{j} ({names[j]!r})"


def _is_text_column_pandas(column):
    import pandas as pd  # loaded: X is a pandas DataFrame

    dtype = column.dtype
    if isinstance(dtype, (pd.CategoricalDtype, pd.StringDtype)):
        return True
    if dtype == object:
        values = column.to_numpy(dtype=object)
        present = values[~column.isna().to_numpy()]
        return present.size > 0 and all(isinstance(v, str) for v in present)
    return False


def _is_text_column_polars(column):
    import polars as pl  # loaded: X is a polars DataFrame

    return isinstance(column.dtype, (pl.Categorical, pl.Enum)) or column.dtype == pl.String


def _from_dtype(X):
    """The mask of the columns "from_dtype" makes categorical, or None."""
    library = _dataframe_library(X)
    if library == "pandas":
        mask = np.array([_is_text_column_pandas(c) for _, c in X.items()], dtype=bool)
    elif library == "polars":
        mask = np.array([_is_text_column_polars(c) for c in X.get_columns()], dtype=bool)
    else:
        return None
    return mask if mask.any() else None


def categorical_mask(X, value, n_features=None):
    """The categorical features of ``X`` that ``categorical_features`` names.

    Parameters
    ----------
    X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
        The training rows.
    value : "from_dtype", None or array-like
        A checked ``categorical_features`` (``_params``): "from_dtype" (pandas
        category and string columns, object columns of strings, polars
        Categorical, Enum and String columns; none of an array), None, or feature
        indices, a boolean mask (one per feature) or feature names.
    n_features : int, optional
        The width of ``X`` (default: its ``shape[1]``).

    Returns
    -------
    bool ndarray of shape (n_features,) or None
        None where no feature is categorical.

    Raises
    ------
    ValueError
        An index out of range, a mask of another length, a name not in X (or
        names for X without feature names), or a categorical feature of a sparse X.
    """
    if value is None:
        return None
    if isinstance(value, str):  # "from_dtype"
        return _from_dtype(X)
    if n_features is None:
        shape = getattr(X, "shape", None)
        n_features = int(shape[1]) if shape is not None and len(shape) == 2 else \
            np.asarray(X, dtype=object).shape[1]
    items = np.asarray(value, dtype=object).tolist()
    mask = np.zeros(n_features, dtype=bool)
    if not items:
        return None
    if all(isinstance(v, (bool, np.bool_)) for v in items):
        if len(items) != n_features:
            raise ValueError(f"categorical_features as a boolean mask must hold one value "
                             f"per feature ({n_features}), got {len(items)}")
        mask[:] = items
    elif all(isinstance(v, str) for v in items):
        names = feature_names_of(X)
        if names is None:
            raise ValueError("categorical_features names features, but X has no feature "
                             "names (a DataFrame with string column names); pass feature "
                             "indices or a boolean mask instead")
        where = {n: j for j, n in enumerate(names)}
        unknown = [n for n in items if n not in where]
        if unknown:
            raise ValueError(f"categorical_features names feature(s) not in X: "
                             f"{unknown[:10]!r}")
        mask[[where[n] for n in items]] = True
    else:
        bad = [v for v in items if v >= n_features]
        if bad:
            raise ValueError(f"categorical_features: feature indices must be in [0, "
                             f"{n_features - 1}], got {bad[0]}")
        mask[items] = True
    if not mask.any():
        return None
    if is_sparse_matrix(X) or hasattr(X, "tocsr") and hasattr(X, "nnz"):
        raise ValueError(
            f"categorical features (columns {np.flatnonzero(mask).tolist()[:10]}) need "
            "dense X, got a sparse matrix: pass a dense array or DataFrame (e.g. "
            "X.toarray()), or categorical_features=None")
    return mask


# ----------------------------------------------------------------- column values
def _is_missing_value(v):
    if v is None:
        return True
    if isinstance(v, (float, np.floating)):
        return v != v
    return type(v).__name__ in ("NAType", "NaTType")


_missing_of = np.frompyfunc(_is_missing_value, 1, 1)


def _columns(X, mask):
    """Yields (j, values, missing) for each categorical column j of ``X``: ``values`` a
    1-D float64 array (numbers) or object array (anything), ``missing`` a bool mask
    of the missing values (None, NaN, pd.NA, polars null)."""
    library = _dataframe_library(X)
    features = np.flatnonzero(mask)
    if library == "pandas":
        for j in features:
            column = X.iloc[:, j]
            missing = column.isna().to_numpy()
            if column.dtype.kind in "biuf" and not hasattr(column.dtype, "categories"):
                values = column.to_numpy(dtype=np.float64, na_value=np.nan)
            else:
                values = column.to_numpy(dtype=object)
            yield j, values, missing
    elif library == "polars":
        columns = X.get_columns()
        for j in features:
            column = columns[j]
            missing = column.is_null().to_numpy()
            if column.dtype.is_numeric() or column.dtype == _polars().Boolean:
                values = column.cast(_polars().Float64).to_numpy()
                missing |= np.isnan(values)
            else:
                values = np.asarray(column.cast(_polars().String).to_list(), dtype=object)
            yield j, values, missing
    else:
        arr = X if isinstance(X, np.ndarray) else np.asarray(X, dtype=object) \
            if not hasattr(X, "dtype") else np.asarray(X)
        for j in features:
            values = arr[:, j]
            if values.dtype.kind in "biuf":
                values = values.astype(np.float64)
                yield j, values, np.isnan(values)
            else:
                values = values.astype(object)
                yield j, values, _missing_of(values).astype(bool)


def _polars():
    return sys.modules["polars"]


def _kinds(values):
    """(all non-missing values are str, all are real numbers or booleans)."""
    if values.dtype != object:
        return False, True
    is_str = all(isinstance(v, str) for v in values)
    is_num = not is_str and all(
        isinstance(v, (numbers.Real, np.bool_)) for v in values)
    return is_str, is_num


# ----------------------------------------------------------------------- fit
def _distinct(values, label):
    """The sorted distinct values of the non-missing ``values`` of one column (some
    of its rows): an object array of strings, a float64 array of numbers, or an
    empty float64 array where there is none."""
    if values.size == 0:
        return np.empty(0, dtype=np.float64)
    is_str, is_num = _kinds(values)
    if is_str:
        return np.array(sorted(set(values.tolist())), dtype=object)
    if is_num:
        numbers_ = values.astype(np.float64)
        if not np.isfinite(numbers_).all():
            raise ValueError(f"categorical feature {label} holds an infinite value; its "
                             "categories must be finite numbers or strings")
        distinct = np.unique(numbers_)
        distinct[distinct == 0] = 0.0  # -0.0 is the category 0.0
        return distinct
    kinds = sorted({type(v).__name__ for v in values.tolist()})
    raise ValueError(f"categorical feature {label} mixes values of types {kinds}: its "
                     "categories must be all strings or all numbers")


def merge_categories(parts, label, max_bins):
    """The categories of one column from the distinct values of its parts (each a
    :func:`_distinct` of some of its training rows): their sorted union, checked.

    Raises
    ------
    ValueError
        Naming the column: no category at all, strings in some parts and numbers in
        others, more than ``max_bins`` categories.
    """
    parts = [p for p in parts if p.size]
    if not parts:
        raise ValueError(f"categorical feature {label} has no category: every training "
                         "value is missing")
    if len({p.dtype == object for p in parts}) > 1:
        raise ValueError(f"categorical feature {label} mixes values of types ['number', "
                         "'str'] (strings in some partitions, numbers in others): its "
                         "categories must be all strings or all numbers")
    if len(parts) == 1:
        categories = parts[0]
    elif parts[0].dtype == object:
        categories = np.array(sorted(set().union(*(p.tolist() for p in parts))),
                              dtype=object)
    else:
        categories = np.unique(np.concatenate(parts))
    if categories.shape[0] > max_bins:
        raise ValueError(f"categorical feature {label} has {categories.shape[0]} "
                         f"categories, more than max_bins={max_bins}: merge rare "
                         "categories, raise max_bins (at most 255), or treat the feature "
                         "as numeric")
    return categories


def _learn(values, label, max_bins):
    """The sorted categories of the non-missing ``values`` of one column."""
    return merge_categories([_distinct(values, label)], label, max_bins)


def distinct_values(X, mask):
    """Per categorical feature of ``mask``, the sorted distinct values of X's rows
    (:func:`_distinct`): what one part of a distributed fit reports, merged by
    :func:`merge_categories` over the parts.

    Returns
    -------
    dict
        Feature index -> object (strings) or float64 (numbers) array, possibly empty.
    """
    labels = _labels(X, int(X.shape[1]))
    return {int(j): _distinct(values[~missing], labels[j])
            for j, values, missing in _columns(X, mask)}


def column_labels(X, n_features):
    """Each column of ``X`` as messages name it: its index, and its name (repr)."""
    return _labels(X, n_features)


def _codes(values, missing, categories, label):
    """float32 codes of ``values`` (NaN: missing or unseen)."""
    out = np.full(values.shape[0], np.nan, dtype=np.float32)
    present = ~missing
    given = values[present]
    if given.size == 0:
        return out
    if categories.dtype == object:  # strings
        is_str, _ = _kinds(given)
        if not is_str:
            other = next(v for v in given.tolist() if not isinstance(v, str))
            raise ValueError(f"categorical feature {label} has string categories, got "
                             f"the value {other!r} ({type(other).__name__})")
        given = given.astype(object)
    else:
        _, is_num = _kinds(given)
        if not is_num:
            other = next(v for v in given.tolist()
                         if not isinstance(v, (numbers.Real, np.bool_)))
            raise ValueError(f"categorical feature {label} has numeric categories, got "
                             f"the value {other!r} ({type(other).__name__})")
        given = given.astype(np.float64)
    position = np.searchsorted(categories, given)
    inside = position < categories.shape[0]
    known = np.zeros(given.shape[0], dtype=bool)
    known[inside] = categories[position[inside]] == given[inside]
    codes = np.full(given.shape[0], np.nan, dtype=np.float32)
    codes[known] = position[known]
    out[present] = codes
    return out


def _numeric_part(X, mask, name, training):
    """The float32 Fortran-order matrix of X's numeric columns (``check_features``,
    column for column as without categorical features), its categorical columns
    NaN (filled by the caller)."""
    library = _dataframe_library(X)
    numeric = np.flatnonzero(~mask)
    shape = X.shape if hasattr(X, "shape") and library is not None else None
    if library is not None:
        out = np.full(shape, np.nan, dtype=np.float32, order="F")
        if numeric.size:
            if library == "pandas":
                part = X.iloc[:, numeric]
            else:
                part = X.select([X.columns[j] for j in numeric])
            out[:, numeric] = check_features(part, name, dtype=np.float32, order="F",
                                             training=training)
        return out
    arr = X if isinstance(X, np.ndarray) else np.asarray(X, dtype=object)
    if arr.ndim != 2:
        return check_features(X, name, dtype=np.float32, order="F", training=training)
    if arr.dtype.kind not in "biuf":
        arr = arr.astype(object)  # (a copy) the categorical columns read as missing
        arr[:, mask] = np.nan
    out = check_features(arr, name, dtype=np.float32, order="F", training=training)
    out = np.asfortranarray(out)
    out[:, mask] = np.nan
    return out


def _labels(X, n_features):
    names = feature_names_of(X)
    return [_column_label(names, j) for j in range(n_features)]


def fit_encode(X, mask, max_bins, name="X"):
    """Learn the categories of the categorical features of the training rows and
    encode them.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n_samples, n_features)
        The training rows (dense).
    mask : bool ndarray of shape (n_features,)
        :func:`categorical_mask`.
    max_bins : int
        The most categories a feature may have.
    name : str, default="X"
        How messages call ``X``.

    Returns
    -------
    Xa : float32 ndarray of shape (n_samples, n_features), Fortran order
        The numeric columns as ``check_features`` gives them, each categorical one
        its codes (NaN missing).
    categories : list
        Per feature None (numeric) or its sorted categories (float64 or object
        array).

    Raises
    ------
    ValueError
        Naming the column: more than ``max_bins`` categories, strings mixed with
        numbers, infinite numbers, no category at all; and the errors of
        ``check_features`` for the numeric columns.
    """
    if hasattr(X, "columns") and hasattr(X, "shape"):
        _check_unique_names(list(X.columns), name)
    out = _numeric_part(X, mask, name, training=True)
    labels = _labels(X, out.shape[1])
    categories = [None] * out.shape[1]
    for j, values, missing in _columns(X, mask):
        categories[j] = _learn(values[~missing], labels[j], max_bins)
        out[:, j] = _codes(values, missing, categories[j], labels[j])
    return out, categories


def encode(X, categories, name="X"):
    """Rows to score, their categorical columns as codes.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n_samples, n_features)
        Rows with the model's columns (aligned by name).
    categories : list
        ``Booster.categories_``: per feature None or its categories.
    name : str, default="X"
        How messages call ``X``.

    Returns
    -------
    float32 ndarray of shape (n_samples, n_features), C order
        Known categories as their codes; unseen categories and missing values NaN.

    Raises
    ------
    ValueError
        For sparse X, X of another width, or a value of another kind than the
        feature's categories (a number where they are strings, or the reverse).
    """
    mask = np.array([c is not None for c in categories], dtype=bool)
    if is_sparse_matrix(X) or hasattr(X, "tocsr") and hasattr(X, "nnz"):
        raise ValueError(
            f"a model with categorical features (columns "
            f"{np.flatnonzero(mask).tolist()[:10]}) scores dense X only, got a sparse "
            "matrix (convert it with .toarray())")
    if _dataframe_library(X) is None and not isinstance(X, np.ndarray):
        X = np.asarray(X) if hasattr(X, "dtype") else np.asarray(X, dtype=object)
    shape = X.shape
    if len(shape) == 2 and shape[1] != mask.shape[0]:
        raise ValueError(f"{name} has {shape[1]} features, but the model expects "
                         f"{mask.shape[0]}")
    out = _numeric_part(X, mask, name, training=False)
    labels = _labels(X, out.shape[1])
    for j, values, missing in _columns(X, mask):
        out[:, j] = _codes(values, missing, categories[j], labels[j])
    return np.ascontiguousarray(out)


# ------------------------------------------------------------------ display
#: The most categories a split's description lists (then "... and N more").
SHOWN_CATEGORIES = 8


def set_codes(bits):
    """The category codes of a category set (a row of ``Ensemble.category_sets``: bit
    c of word c // 32), ascending."""
    bits = np.asarray(bits, dtype=np.uint32)
    codes = np.arange(32 * bits.shape[0])
    return codes[((bits[codes // 32] >> (codes % 32).astype(np.uint32)) & 1) == 1]


def describe_split(ensemble, node, categories=None, limit=SHOWN_CATEGORIES):
    """The text of a categorical split, ``{cat_a, cat_b, ...}``: the categories the
    node sends left (its "yes" side).

    Parameters
    ----------
    ensemble : Ensemble
        The model's trees (``category_sets``).
    node : numpy.void
        A node of ``ensemble`` on a categorical feature (its ``threshold`` names its
        row of ``category_sets``).
    categories : list, optional
        ``Booster.categories_``; without, the codes are shown.
    limit : int, default=SHOWN_CATEGORIES
        The most categories listed; more are counted ("... and N more").

    Returns
    -------
    str
        Strings as written, numbers as ``%g``.
    """
    codes = set_codes(ensemble.category_sets[int(node["threshold"])])
    values = None if categories is None else categories[int(node["feature"])]
    if values is not None:
        codes = codes[codes < len(values)]

    def text(c):
        if values is None:
            return str(int(c))
        v = values[c]
        return v if isinstance(v, str) else f"{float(v):g}"

    shown = [text(c) for c in codes[:limit]]
    if codes.shape[0] > limit:
        shown.append(f"... and {codes.shape[0] - limit} more")
    return "{" + ", ".join(shown) + "}"


# ------------------------------------------------------------------ the fit's params
def n_categories(categories):
    """Per feature 0 (numeric) or its number of categories (``BinMapper``'s
    ``n_categories``)."""
    return np.array([0 if c is None else c.shape[0] for c in categories], dtype=np.int64)


def categorical_params(resolved, mask, categories, names):
    """Add the categorical features to resolved parameters (``_params.resolve``), in
    place: ``categorical`` (the mask the growers and the loop take) and
    ``n_categories`` (the binning's), for the fit in one process and the
    distributed one alike; nothing where ``mask`` is None.

    Raises
    ------
    ValueError
        A categorical feature with a monotonic constraint.
    """
    if mask is None:
        return resolved
    cst = resolved["monotonic_cst"]
    if cst is not None and (cst[mask] != 0).any():
        both = np.flatnonzero(mask & (cst != 0))
        raise ValueError(
            "categorical features cannot have monotonic constraints (their "
            "categories have no order): feature(s) "
            f"{[names[j] if names is not None else int(j) for j in both][:10]} "
            "are both")
    resolved.update(categorical=mask, n_categories=n_categories(categories))
    return resolved
