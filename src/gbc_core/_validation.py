"""Input checks of the Python layer (NumPy only; scikit-learn is not required)."""

import collections
import datetime
import numbers
import sys
import warnings

import numpy as np


def _is_sparse(X):
    return hasattr(X, "tocsr") or hasattr(X, "toarray") and hasattr(X, "nnz")


def _is_scipy_sparse(X):
    """Whether ``X`` is a scipy.sparse matrix or array (scipy is never imported here)."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(X)


#: The sparse formats taken as they are; scipy's other formats are converted.
SPARSE_FORMATS = ("csr", "csc")


def sparse_arrays(X):
    """(data float32, indices int32, indptr int64) of a checked CSR or CSC matrix
    (``check_features``' output), converted only where the dtypes differ."""
    return (np.ascontiguousarray(X.data, dtype=np.float32),
            np.ascontiguousarray(X.indices, dtype=np.int32),
            np.ascontiguousarray(X.indptr, dtype=np.int64))


def take_rows(X, rows, fmt):
    """The rows ``rows`` (indices) of a checked sparse matrix, as a checked matrix of
    format ``fmt`` ("csr" or "csc")."""
    out = X.tocsr()[rows].asformat(fmt)
    if not out.has_sorted_indices:
        out = out.sorted_indices()
    return out


def as_format(X, fmt):
    """A checked sparse matrix in the format ``fmt`` (itself if it is)."""
    return X if X.format == fmt else take_rows(X, slice(None), fmt)


def is_sparse_matrix(X):
    """Whether ``X`` is a sparse matrix of ``check_features`` (a scipy CSR/CSC)."""
    return not isinstance(X, np.ndarray) and _is_scipy_sparse(X)


def _check_sparse(X, name, dtype, fmt, allow_nan, training):
    """A scipy.sparse ``X`` as a CSR or CSC (``fmt``) matrix of ``dtype``, in
    canonical form (indices sorted and distinct within each row or column,
    duplicates summed as ``toarray`` sums them). An implicit zero is the value 0.0;
    NaN stored in ``data`` is a missing value. See ``check_features``."""
    _check_shape(X.shape, name)
    if training and X.shape[1] > MAX_FEATURES:
        raise ValueError(f"{name} has {X.shape[1]:,} features; a model holds at most "
                         f"2**24 = {MAX_FEATURES:,} features")
    kind = X.dtype.kind
    if kind == "c":
        raise ValueError(f"Complex data not supported: {name} must hold real numbers")
    if kind not in "biuf":
        raise TypeError(f"{name} is a sparse matrix of unsupported dtype {X.dtype}; "
                        "expected numbers")
    if X.format != fmt:
        # scikit-learn converts the other formats (coo, lil, dok, bsr, dia) too.
        X = X.asformat(fmt)
    try:
        X.check_format(full_check=True)
    except ValueError as exc:
        raise ValueError(f"{name} is not a valid sparse {fmt.upper()} matrix: {exc}") from None
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()  # as toarray() adds them
    data = X.data
    with np.errstate(over="ignore", invalid="ignore"):
        held = np.asarray(data, dtype=dtype)
    if not allow_nan and np.isnan(held).any():
        raise ValueError(f"{name} contains NaN")
    if training and may_lose(data.dtype, held.dtype):
        lost = lossy_values(data, held)
        if lost.any():
            if fmt == "csr":
                columns = np.unique(X.indices[lost])
            else:
                columns = np.unique(np.repeat(np.arange(X.shape[1]), np.diff(X.indptr))[lost])
            warn_lossy_columns([str(j) for j in columns], name, dtype, stacklevel=5)
    cls = type(X)
    out = cls((held, X.indices, X.indptr), shape=X.shape, dtype=dtype)
    out.has_sorted_indices = True
    out.has_canonical_format = True
    return out


def feature_names_of(X):
    """Column names of a DataFrame-like ``X`` if they are all strings, else None.

    Raises
    ------
    TypeError
        For names that mix strings and other types (as scikit-learn).
    """
    columns = getattr(X, "columns", None)
    if columns is None or not hasattr(X, "shape"):
        return None
    names = [c for c in columns]
    kinds = {isinstance(c, str) for c in names}
    if kinds == {True, False}:
        types = sorted({type(c).__name__ for c in names})
        raise TypeError(
            "Feature names are only supported if all input features have string names, "
            f"but your input has {types} as feature name / column name types. Convert "
            "them all to strings (e.g. X.columns = X.columns.astype(str)) or all to "
            "another type")
    if names and kinds == {True}:
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


#: Most features a model may have: every row of a fit or a prediction is that many
#: float32 values (2**24 features are 64 MiB a row). A model file declaring more is
#: refused before anything is allocated for its features.
MAX_FEATURES = 1 << 24

#: How many columns a message lists before "and N more".
_MAX_LISTED = 10

#: Python and NumPy scalars of dates, times and durations (pandas' Timestamp and
#: Timedelta derive from datetime and timedelta; its Period is added when loaded).
_TEMPORAL_SCALARS = (datetime.date, datetime.time, datetime.timedelta,
                     np.datetime64, np.timedelta64)

#: How to turn a date/time column into numbers, when nothing more specific is known.
_TO_SECONDS = "seconds since the epoch (durations: seconds)"


def _listing(items, n_items=None):
    """``items`` joined by commas, the first ``_MAX_LISTED`` of them then "and N more"
    (``n_items``: how many there are in all, where ``items`` holds the first ones
    only)."""
    items = list(items)
    n_items = len(items) if n_items is None else n_items
    text = ", ".join(items[:_MAX_LISTED])
    if n_items > _MAX_LISTED:
        text += f" and {n_items - _MAX_LISTED} more"
    return text


def _label(labels, j):
    """Column ``j`` as messages name it: its name (repr) in a DataFrame, else its index."""
    return str(j) if labels is None else repr(labels[j])


class _ColumnProblems:
    """The columns of one input that are not numbers, gathered so that one error names
    them all: date/time columns (with how to convert them) and other non-numeric ones."""

    def __init__(self, name):
        self.name = name
        self.temporal = []      # "label (dtype)"
        self.conversions = []   # how to convert each temporal column to numbers
        self.non_numeric = []   # "label (dtype, values such as ...)"
        # Values that are not even text (dicts, lists, ...): a TypeError, as NumPy's.
        self.wrong_type = False

    def add_temporal(self, column, conversion):
        self.temporal.append(column)
        self.conversions.append(conversion)

    def raise_if_any(self):
        """Raise the ValueError for the date/time columns if any, else the ValueError
        (TypeError for values that are not text) for the non-numeric columns if any."""
        if self.temporal:
            raise ValueError(
                f"{self.name} has date/time column(s) {_listing(self.temporal)}: their "
                "values are counts of a unit of their own (the same dates in another unit "
                "are other numbers), so they are not accepted as features. Convert each to "
                f"a number first, e.g. {self.conversions[0]} (the model works in float32: "
                "from an origin near the data, times keep a finer resolution), or drop it"
            )
        if self.non_numeric:
            raise (TypeError if self.wrong_type else ValueError)(
                f"{self.name} has non-numeric column(s) {_listing(self.non_numeric)}; "
                "every feature must be numeric (numbers or booleans; missing values as NaN "
                "or null): encode them as numbers or drop them (or, for categories at "
                "fit, name them in categorical_features)"
            )


def _dataframe_library(X):
    """"pandas" or "polars" for a DataFrame of that library (never imported here), else
    None."""
    for library in ("pandas", "polars"):
        module = sys.modules.get(library)
        if module is not None and isinstance(X, module.DataFrame):
            return library
    return None


def _check_shape(shape, name):
    """ValueError unless ``shape`` is 2-D with at least one row and one column."""
    if len(shape) == 1:
        raise ValueError(
            f"{name} must be 2-D (n_samples, n_features), got a 1-D array. Reshape your "
            f"data with {name}.reshape(-1, 1) for one feature or {name}.reshape(1, -1) "
            "for one row"
        )
    if len(shape) != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got {len(shape)}-D")
    if shape[0] == 0:
        raise ValueError(
            f"{name} has 0 sample(s) (shape={shape}) while a minimum of 1 is required."
        )
    if shape[1] == 0:
        raise ValueError(
            f"{name} has 0 feature(s) (shape={shape}) while a minimum of 1 is required."
        )


def _check_unique_names(columns, name):
    """ValueError naming the column names that occur more than once."""
    repeated = [c for c, k in collections.Counter(columns).items() if k > 1]
    if repeated:
        raise ValueError(
            f"{name} has duplicated column name(s) {_listing(map(repr, repeated))}; each "
            "feature needs a name of its own: rename or drop the copies"
        )


def _parse_numbers(arr, labels, problems, dtype=None):
    """A 2-D object, str or bytes array as float64: numbers, booleans and numeric
    strings as their values, None, pd.NA and pd.NaT as NaN. Columns holding date/time
    values or anything else are added to ``problems`` (with ``dtype``, by default the
    array's, as the type of the column); None is returned then."""
    dtype = arr.dtype if dtype is None else dtype
    if arr.dtype.kind == "O":
        pd = sys.modules.get("pandas")
        missing_types = set() if pd is None else {type(pd.NA), type(pd.NaT)}
        temporal_types = _TEMPORAL_SCALARS + (() if pd is None else (pd.Period,))
        types = set(map(type, arr.ravel(order="K")))
        if any(issubclass(t, temporal_types) for t in types - missing_types):
            for j in range(arr.shape[1]):
                found = next((v for v in arr[:, j] if type(v) not in missing_types
                              and isinstance(v, temporal_types)), None)
                if found is not None:
                    problems.add_temporal(
                        f"{_label(labels, j)} (dtype {dtype}, values such as {found!r})",
                        _TO_SECONDS)
            return None
        if types & missing_types:
            is_missing = np.frompyfunc(lambda v: type(v) in missing_types, 1, 1)(arr)
            arr = np.where(is_missing.astype(bool), None, arr)
    try:
        return arr.astype(np.float64)
    except (TypeError, ValueError):
        pass
    cell = np.empty(1, dtype=arr.dtype)  # one value at a time, converted as above
    for j in range(arr.shape[1]):
        for value in arr[:, j]:
            cell[0] = value
            try:
                cell.astype(np.float64)
            except (TypeError, ValueError) as exc:
                if isinstance(value, np.generic):  # np.str_('a') shown as 'a'
                    value = value.item()
                reason = f": {exc}" if isinstance(exc, TypeError) else ""
                problems.wrong_type |= isinstance(exc, TypeError)
                problems.non_numeric.append(
                    f"{_label(labels, j)} (dtype {dtype}, values such as {value!r}{reason})")
                break
    return None


def _numeric_array(X, name, labels):
    """``X`` (an array-like, or a DataFrame-like other than pandas' and polars' with
    column ``labels``) as a 2-D array of booleans or numbers."""
    try:
        arr = np.asarray(X.to_numpy() if labels is not None else X)
    except Exception as exc:  # noqa: BLE001 - ragged lists and alike
        raise ValueError(f"{name} cannot be converted to a 2-D numeric array: {exc}") from None
    _check_shape(arr.shape, name)
    kind = arr.dtype.kind
    if kind == "c":
        raise ValueError(f"Complex data not supported: {name} must hold real numbers")
    problems = _ColumnProblems(name)
    if kind in "mM":
        unit = np.datetime_data(arr.dtype)[0]
        conversion = (f"seconds since the epoch: ({name}[:, 0] - np.datetime64(0, {unit!r})) "
                      "/ np.timedelta64(1, 's')" if kind == "M" else
                      f"seconds: {name}[:, 0] / np.timedelta64(1, 's')")
        for j in range(arr.shape[1]):
            problems.add_temporal(f"{_label(labels, j)} ({arr.dtype})", conversion)
    elif kind in "OUS":
        arr = _parse_numbers(arr, labels, problems)
    elif kind not in "biuf":
        raise TypeError(f"{name} has unsupported dtype {arr.dtype}; expected numbers")
    problems.raise_if_any()
    return arr


def _pandas_columns(X, name):
    """The columns of a pandas DataFrame as (values, missing) pairs: ``values`` a 1-D
    array of booleans or numbers (integers exactly as given), ``missing`` None or the
    mask of the rows whose value is missing (pd.NA of an integer column)."""
    import pandas as pd  # loaded: X is a pandas DataFrame

    columns, problems = [], _ColumnProblems(name)
    for label, column in X.items():
        dtype = column.dtype
        kind = getattr(dtype, "kind", "O")
        if kind in "mM" or isinstance(dtype, pd.PeriodDtype):
            start = f"df[{label!r}].dt.start_time" if kind == "O" else f"df[{label!r}]"
            tz = getattr(dtype, "tz", None)
            problems.add_temporal(
                f"{label!r} ({dtype})",
                f"seconds: df[{label!r}] / pd.Timedelta(seconds=1)" if kind == "m" else
                f"seconds since the epoch: ({start} - pd.Timestamp(0"
                f"{'' if tz is None else f', tz={str(tz)!r}'})) / pd.Timedelta(seconds=1)")
        elif kind == "c":
            raise ValueError(f"Complex data not supported: {name} column {label!r} holds "
                             "complex numbers; features must be real numbers")
        elif isinstance(dtype, np.dtype) and kind in "biuf":
            columns.append((column.to_numpy(), None))
        elif kind in "iu":  # nullable and pyarrow integers: the integers, pd.NA masked
            missing = column.isna().to_numpy()
            columns.append((column.to_numpy(dtype=getattr(dtype, "numpy_dtype", None),
                                            na_value=0), missing if missing.any() else None))
        elif kind in "bf":  # nullable and pyarrow booleans and floats: pd.NA as NaN
            columns.append((column.to_numpy(dtype=np.float64, na_value=np.nan), None))
        else:  # object, string, categorical, ...: the values decide
            parsed = _parse_numbers(column.to_numpy(dtype=object)[:, None], [label],
                                    problems, dtype)
            if parsed is not None:
                columns.append((parsed[:, 0], None))
    problems.raise_if_any()
    return columns


def _polars_columns(X, name):
    """The columns of a polars DataFrame as (values, missing) pairs, as
    ``_pandas_columns``: integer columns exactly as given with nulls masked, other
    numeric and boolean columns as float64 with nulls as NaN."""
    import polars as pl  # loaded: X is a polars DataFrame

    conversions = {  # how to turn a temporal column into numbers, by dtype
        pl.Duration: "seconds: pl.col({!r}).dt.total_seconds()",
        pl.Time: "seconds since midnight: pl.col({!r}).cast(pl.Int64) / 1e9",
    }
    numpy_integers = (pl.Int8, pl.Int16, pl.Int32, pl.Int64,
                      pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64)
    columns, problems = [], _ColumnProblems(name)
    for column in X.get_columns():
        dtype = column.dtype
        if dtype.is_temporal():
            problems.add_temporal(
                f"{column.name!r} ({dtype})",
                conversions.get(type(dtype), "seconds since the epoch: "
                                "pl.col({!r}).dt.epoch('s')").format(column.name))
        elif dtype in numpy_integers:
            missing = column.is_null().to_numpy() if column.null_count() else None
            columns.append((column.fill_null(0).to_numpy(), missing))
        elif dtype.is_numeric() or dtype in (pl.Boolean, pl.Null):
            columns.append((column.cast(pl.Float64).to_numpy(), None))
        else:
            problems.non_numeric.append(f"{column.name!r} ({dtype})")
    problems.raise_if_any()
    return columns


#: Values below which a training X is cast by NumPy (one thread) rather than by
#: ``_binning_kernels.cast_float32``.
_PARALLEL_CAST_FROM = 1 << 16


def _cast_float32(arr, dtype, order, n_threads):
    """``arr`` (a training array of numbers) as float32 in ``order`` by
    ``_binning_kernels.cast_float32``, with (per-column largest, smallest) values for
    ``_lossy_columns``; None where that kernel does not apply (another dtype, an
    array NumPy needs not copy, a small or non-C-order one)."""
    if (np.dtype(dtype) != np.float32 or arr.dtype not in (np.float32, np.float64)
            or not arr.flags.c_contiguous or arr.size < _PARALLEL_CAST_FROM
            or order not in ("C", "F", "K")):
        return None
    fortran = order == "F"
    if arr.dtype == np.float32 and (not fortran or arr.flags.f_contiguous):
        return None  # NumPy returns arr itself, no copy
    from ._binning_kernels import BLOCK_ROWS, cast_float32

    n_blocks = -(-arr.shape[0] // BLOCK_ROWS)
    out = np.empty(arr.shape, dtype=np.float32, order="F" if fortran else "C")
    block_max = np.empty((n_blocks, arr.shape[1]), dtype=np.float32)
    block_min = np.empty_like(block_max)
    cast_float32(arr, out, block_max, block_min, n_threads)
    return out, (np.fmax.reduce(block_max, axis=0), np.fmin.reduce(block_min, axis=0))


def _lossy_columns(original, converted, extremes=None):
    """Which columns of ``original`` (2-D, booleans or numbers) hold a value that
    ``converted`` (the same values in a float dtype) does not represent: an integer
    beyond 2**(nmant + 1) that the float dtype rounds to another number (of an integer
    dtype, or an integral float where the float dtype of ``original`` still has
    fractions, e.g. below 2**53 in float64), or a finite value that overflows to
    +-inf. Ordinary rounding (0.1, 1.2345e20) is not a loss here.

    Vectorised: one pass over ``converted`` (its per-column largest and smallest
    values, or ``extremes``: those two arrays, taken by the cast) finds the columns
    with a value of magnitude 2**(nmant + 1) or more (none in most data); only those
    are looked at again.
    """
    kind, n_columns = original.dtype.kind, original.shape[1]
    if not may_lose(original.dtype, converted.dtype):
        return np.zeros(n_columns, dtype=bool)
    exact_limit = 2.0 ** (np.finfo(converted.dtype).nmant + 1)
    if extremes is None:
        extremes = np.fmax.reduce(converted, axis=0), np.fmin.reduce(converted, axis=0)
    high = extremes[0] >= exact_limit
    low = extremes[1] <= -exact_limit
    lossy = np.zeros(n_columns, dtype=bool)
    for j in np.flatnonzero(high | low):
        lossy[j] = lossy_values(original[:, j], converted[:, j]).any()
    return lossy


def may_lose(original, converted):
    """Whether some value of dtype ``original`` may be lost in the float dtype
    ``converted`` (see ``_lossy_columns``)."""
    exact_bits = np.finfo(converted).nmant + 1
    kind = original.kind
    return not (kind == "b" or kind == "f" and original.itemsize <= converted.itemsize
                or kind in "iu" and np.iinfo(original).bits <= exact_bits)


def lossy_values(given, held):
    """Per value of the 1-D ``given``, whether ``held`` (its float conversion) loses
    it (the rule of ``_lossy_columns``)."""
    exact_limit = 2.0 ** (np.finfo(held.dtype).nmant + 1)
    lost = np.zeros(given.shape[0], dtype=bool)
    big = np.abs(held) >= exact_limit
    given, held = given[big], held[big]
    kind = given.dtype.kind
    if kind == "f":
        fractions_below = 2.0 ** (np.finfo(given.dtype).nmant + 1)
        lost[big] = np.isfinite(given) & (np.isinf(held) | (
            (np.abs(given) < fractions_below) & (given == np.floor(given)) & (held != given)))
    else:  # held is an integer here: compare as integers, inside the integer range
        bound = 2.0 ** (np.iinfo(given.dtype).bits - (kind == "i"))
        with np.errstate(invalid="ignore"):
            lost[big] = ~((held < bound) & (held >= -bound)
                          & (held.astype(given.dtype) == given))
    return lost


def warn_lossy_columns(columns, name, dtype, stacklevel=4):
    """One DataConversionWarning naming the ``columns`` whose values ``dtype`` changes."""
    info = np.finfo(dtype)
    exact = 2 ** (info.nmant + 1)
    warnings.warn(
        f"{name} column(s) {_listing(columns)} hold values that {info.dtype} does not "
        f"represent: integers beyond 2**{info.nmant + 1} = {exact:,} that become other "
        f"integers (e.g. {exact + 1} and {exact} become equal), or finite values beyond "
        f"{info.max:.3g} that become infinite. The model sees the {info.dtype} values "
        "(data to score is converted the same way); if the difference matters, re-encode "
        "these columns (e.g. ids as categories, timestamps from a recent origin)",
        DataConversionWarning,
        stacklevel=stacklevel,  # the caller of fit
    )


def check_features(X, name="X", dtype=np.float32, order="C", allow_nan=True, training=False,
                   sparse=None, n_threads=1):
    """Return ``X`` as a 2-D array of ``dtype`` in ``order`` (or a sparse matrix).

    Numbers and booleans are taken as they are; NaN, and the nulls of DataFrames
    (pd.NA, None, polars null), are missing values. Date/time columns, text and other
    non-numeric columns are refused with an error naming them (by name in a
    DataFrame, by index otherwise).

    Parameters
    ----------
    X : array-like, pandas or polars DataFrame of shape (n_samples, n_features)
        The features.
    name : str, default="X"
        How messages call ``X``.
    dtype : float dtype, default=np.float32
        The dtype returned.
    order : {"C", "F", "K"}, default="C"
        The memory layout returned.
    allow_nan : bool, default=True
        Whether NaN (a missing value) is accepted.
    training : bool, default=False
        ``X`` is the training data of a fit: its column names must be unique (they
        become the feature names), and one ``DataConversionWarning`` names the columns
        holding values that ``dtype`` does not represent (see ``_lossy_columns``). Data
        scored later is converted the same way, without a warning.
    sparse : {"csr", "csc"} or None, default=None
        For a scipy.sparse ``X`` (matrix or array class, any format): the format
        returned (a CSR or CSC of ``dtype`` in canonical form: sorted, distinct
        indices, duplicates summed; an implicit zero is the value 0.0, a stored NaN
        a missing value; the same dtype, shape, NaN and conversion rules as dense
        input). None: sparse input is refused.
    n_threads : int, default=1
        Threads of the copy of a training array of float64 (or of C-order float32
        into Fortran order) to float32 (``_binning_kernels.cast_float32``: blocks of
        rows, the same values as NumPy's cast on any number of threads).

    Returns
    -------
    ndarray of shape (n_samples, n_features), or a scipy.sparse CSR/CSC matrix

    Raises
    ------
    TypeError
        For sparse input without ``sparse`` (or not scipy's), or an array of a dtype
        that is not numbers (e.g. structured).
    ValueError
        For date/time, non-numeric or complex columns, empty or non-2-D input,
        duplicated column names in training, NaN when ``allow_nan`` is False.
    """
    if (not training and type(X) is np.ndarray and X.ndim == 2 and X.size
            and X.dtype.kind in "biuf"):
        # The common case of scoring, kept cheap (a row is scored in microseconds):
        # an array of numbers needs only its conversion.
        with np.errstate(over="ignore", invalid="ignore"):
            out = np.asarray(X, dtype=dtype, order=order)
        if not allow_nan and np.isnan(out).any():
            raise ValueError(f"{name} contains NaN")
        return out
    if _is_scipy_sparse(X) and sparse is not None:
        return _check_sparse(X, name, dtype, sparse, allow_nan, training)
    if _is_sparse(X):
        if sparse is None:
            raise TypeError(
                f"{name} is a sparse matrix of type {type(X).__name__}; sparse input is "
                f"not supported here: pass a dense array (e.g. {name}.toarray())")
        raise TypeError(
            f"{name} is a sparse matrix of type {type(X).__name__}; sparse input is "
            "accepted as scipy.sparse CSR or CSC matrices or arrays (csr_matrix, "
            "csr_array, csc_matrix, csc_array; scipy's other formats are converted): "
            f"convert it (e.g. scipy.sparse.csr_matrix({name})) or pass a dense array "
            f"(e.g. {name}.toarray())"
        )
    library = _dataframe_library(X)
    labels = list(X.columns) if hasattr(X, "columns") and hasattr(X, "to_numpy") else None
    shape = getattr(X, "shape", None)
    if training and shape is not None and len(shape) == 2 and shape[1] > MAX_FEATURES:
        raise ValueError(f"{name} has {shape[1]:,} features; a model holds at most "
                         f"2**24 = {MAX_FEATURES:,} features")
    if training and labels is not None:
        _check_unique_names(labels, name)
    if library is None:
        arr = _numeric_array(X, name, labels)
        cast = _cast_float32(arr, dtype, order, n_threads) if training else None
        if cast is None:
            with np.errstate(over="ignore", invalid="ignore"):
                out = np.asarray(arr, dtype=dtype, order=order)
            lossy = _lossy_columns(arr, out) if training else ()
        else:
            out, extremes = cast
            lossy = _lossy_columns(arr, out, extremes)
    else:
        _check_shape(X.shape, name)
        columns = (_pandas_columns if library == "pandas" else _polars_columns)(X, name)
        out = np.empty(X.shape, dtype=dtype, order="F")
        lossy = np.zeros(X.shape[1], dtype=bool)
        for j, (values, missing) in enumerate(columns):
            with np.errstate(over="ignore", invalid="ignore"):
                out[:, j] = values
            if missing is not None:
                out[missing, j] = np.nan
            if training:
                lossy[j] = _lossy_columns(values[:, None], out[:, j:j + 1])[0]
        out = np.asarray(out, order=order)
    if not allow_nan and np.isnan(out).any():
        raise ValueError(f"{name} contains NaN")
    if np.any(lossy):
        warn_lossy_columns([_label(labels, j) for j in np.flatnonzero(lossy)], name, dtype)
    return out


def missing_label_rows(given, y):
    """The rows of the labels ``given`` (``y`` as an array) that are missing: the NA
    of a pandas extension array (nullable Int64, boolean, string, ...), None or pd.NA
    in an object array."""
    isna = getattr(given, "isna", None)
    if isna is not None and not isinstance(getattr(given, "dtype", None), np.dtype):
        return np.flatnonzero(np.asarray(isna()))
    if y.dtype.kind == "O":
        na = getattr(sys.modules.get("pandas"), "NA", None)
        return np.flatnonzero([v is None or v is na for v in y])
    return np.empty(0, dtype=np.intp)


def missing_labels_error(rows, n_missing=None, name="y"):
    """The error of labels missing at ``rows`` (ascending; the first ones only where
    ``n_missing`` says how many are missing in all), for the labels ``name``."""
    n_missing = len(rows) if n_missing is None else n_missing
    return ValueError(
        f"{name} has {n_missing} missing label(s) (None, NaN or pd.NA) at rows "
        f"[{_listing(map(str, rows), n_missing)}]; every sample needs a label"
    )


def check_label_values(y, name="y"):
    """Refuse labels ``y`` (a 1-D array without missing labels) that no class can
    be made of: NaN, infinity, NaT, complex numbers, strings mixed with numbers,
    booleans mixed with numbers. The checks look at the values and their types, not
    at their rows or counts: the distinct labels of y pass exactly when y does (the
    labels of each part of y may pass where y, their union, does not). ``name``
    names the labels in the errors (``"eval_set y"``: a validation set's)."""
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError(f"{name} contains NaN or infinity; every label must be a finite value")
    if y.dtype.kind in "mM" and np.isnat(y).any():
        raise ValueError(f"{name} contains NaT (a missing label); every sample needs a label")
    if y.dtype.kind == "c":
        raise ValueError(f"{name} has complex values; labels must be numbers, strings or bools")
    if y.dtype.kind == "O":
        kinds = {type(v) for v in y}
        floats = [v for v in y if isinstance(v, float)]
        if floats and not np.isfinite(np.asarray(floats)).all():
            raise ValueError(f"{name} contains NaN or infinity; every label must be a finite value")
        if len({str in k.__mro__ for k in kinds}) > 1:
            raise TypeError(
                f"{name} mixes strings and numbers; labels must all be of one type "
                f"(got {sorted(k.__name__ for k in kinds)})"
            )
        booleans = {k for k in kinds if issubclass(k, (bool, np.bool_))}
        if booleans and booleans != kinds:
            # True == 1 in Python and NumPy: mixed, they would merge into one class.
            # scikit-learn refuses such a y too ("Unknown label type").
            raise ValueError(
                f"Unknown label type: {name} mixes booleans and numbers "
                f"({sorted(k.__name__ for k in kinds)}); True would be the class 1 and "
                f"False the class 0. Labels must all be of one type: convert {name} "
                "(e.g. .astype(str), or booleans to 0/1)"
            )


def label_counts(y):
    """The distinct labels of ``y`` (a 1-D array without missing labels; checked by
    :func:`check_label_values`), sorted, and how many rows hold each."""
    check_label_values(y)
    try:
        return np.unique(y, return_counts=True)
    except TypeError as exc:
        raise _uncomparable_labels_error(exc) from None


def _uncomparable_labels_error(exc):
    return TypeError(f"y has labels that cannot be compared: {exc}")


def check_target(y, n_samples):
    """Validate class labels; return (classes, class codes).

    Returns
    -------
    classes : ndarray of shape (n_classes,)
        The sorted distinct labels (at least 2).
    codes : int32 array of shape (n_samples,)
        ``classes[codes]`` is ``y``.
    """
    if y is None:
        raise ValueError(
            "GradientBoostingClassifier requires y to be passed, but the target y is None"
        )
    if _is_sparse(y):
        raise TypeError("y is a sparse matrix; pass a 1-D array of labels")
    given = y
    try:
        y = np.asarray(y)
    except (TypeError, ValueError) as exc:  # ragged lists and alike
        raise ValueError(f"y cannot be converted to a 1-D array of labels: {exc}") from None
    if y.ndim == 2 and y.shape[1] == 1:
        import warnings

        warnings.warn(
            # scikit-learn's wording (column_or_1d), which its users' filters match.
            "A column-vector y was passed when a 1d array was expected. Please change "
            "the shape of y to (n_samples, ), for example using ravel().",
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
    missing = missing_label_rows(given, y)
    if missing.size:
        raise missing_labels_error(missing)
    check_label_values(y)
    classes, encoded = _encode_labels(y)
    if classes is None:
        try:
            classes, encoded = np.unique(y, return_inverse=True)
        except TypeError as exc:
            raise _uncomparable_labels_error(exc) from None
        encoded = encoded.astype(np.int32).ravel()
    if y.dtype.kind == "f" and classes.size > 2 and np.any(classes != np.round(classes)):
        raise ValueError(
            "Unknown label type: y looks continuous (regression target); "
            "GradientBoostingClassifier needs class labels"
        )
    if classes.size < 2:
        raise ValueError(
            f"y has only one class ({classes[:1].tolist()[0]!r}); classification needs "
            "at least two"
        )
    return classes, encoded


#: ``_encode_labels`` handles at most this many distinct labels (else ``np.unique``).
_MAX_ENCODED_CLASSES = 1024


def _encode_labels(y):
    """(classes, int32 codes) of numeric or boolean labels ``y`` (1-D, finite), as
    ``np.unique(y, return_inverse=True)`` gives them, by a kernel that allocates
    nothing of ``y``'s size but the codes (np.unique sorts a copy of ``y`` and holds
    about 40 bytes per row at once); (None, None) where it does not apply (other
    dtypes, more than ``_MAX_ENCODED_CLASSES`` labels, both -0.0 and 0.0)."""
    from ._sorting import encode_labels

    kind = y.dtype.kind
    if kind not in "biuf" or not y.dtype.isnative or y.dtype.itemsize not in (1, 2, 4, 8) \
            or (kind == "f" and y.dtype.itemsize < 4):
        return None, None
    values = np.ascontiguousarray(y)
    if kind == "b":
        values = values.view(np.uint8)
    classes = np.empty(min(_MAX_ENCODED_CLASSES, values.shape[0]), dtype=values.dtype)
    codes = np.empty(values.shape[0], dtype=np.int32)
    k = encode_labels(values, classes, codes)
    if k < 0:
        return None, None
    return classes[:k].astype(y.dtype), codes


def check_sample_weight(sample_weight, n_samples, name="sample_weight"):
    """Validate weights: 1-D, finite, non-negative, not all zero; return float64 or None.

    ``name`` names the weights in the error messages."""
    if sample_weight is None:
        return None
    if isinstance(sample_weight, numbers.Number):
        sample_weight = np.full(n_samples, float(sample_weight))
    w = np.asarray(sample_weight)
    if w.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got dtype {w.dtype}")
    w = np.ascontiguousarray(w, dtype=np.float64)
    if w.ndim != 1 or w.shape[0] != n_samples:
        raise ValueError(
            f"{name} must have shape ({n_samples},), got {w.shape}"
        )
    if not np.isfinite(w).all():
        raise ValueError(f"{name} contains NaN or infinity")
    if (w < 0).any():
        raise ValueError(f"{name} contains negative values; weights must be >= 0")
    if not (w > 0).any():
        raise ValueError(f"{name} is zero for every sample; at least one must be > 0")
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
    """A conversion of the input changed its shape, type or values (e.g. integers
    beyond 2**24 that float32 does not represent).

    When scikit-learn is loaded, the warning raised is scikit-learn's own
    ``DataConversionWarning`` (so its checks recognise it); ``gbc_core.DataConversionWarning``
    names the class in use.

    Examples
    --------
    >>> import warnings
    >>> import gbc_core
    >>> X = [[2.0**25 + 1], [1.0], [2.0], [3.0]]
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = gbc_core.GradientBoostingClassifier(n_estimators=1).fit(X, [0, 1, 0, 1])
    >>> any(issubclass(w.category, gbc_core.DataConversionWarning) for w in caught)
    True
    """


def _conversion_warning_class():
    """scikit-learn's DataConversionWarning when scikit-learn is already loaded (so its
    checks recognise it), else ours; scikit-learn is never imported for this."""
    sk = sys.modules.get("sklearn.exceptions")
    return getattr(sk, "DataConversionWarning", DataConversionWarning)
