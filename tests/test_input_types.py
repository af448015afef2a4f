"""In-memory inputs of every type: what passes through, what is refused and how.

The rules (docs/reliability.md, "In-memory input rules"), for NumPy arrays, pandas and
polars DataFrames and anything with ``__array__``: date/time features are refused with
an error naming the columns and how to convert them, at fit, at predict and in
``eval_set``; so are text and other non-numeric columns; nulls are missing values;
values float32 does not represent give one warning per fit naming the columns;
duplicated column names are refused at fit; missing labels are refused with their rows.
"""

import datetime
import subprocess
import sys
import warnings

import numpy as np
import pytest

import gbc_core
from gbc_core import DataConversionWarning
from gbc_core import GradientBoostingClassifier as GBC

from conftest import make_continuous, require

# These tests compare arrays and DataFrames of the same values, so scikit-learn's
# feature-name warnings (a model fitted on one, scored on the other) are expected
# here; tests/test_sklearn_parity.py checks them.
pytestmark = pytest.mark.filterwarnings(
    "ignore:X has feature names, but:UserWarning",
    "ignore:X does not have valid feature names:UserWarning",
)

pd = require("pandas")
pl = require("polars")

X, Y = make_continuous(n_samples=200, n_features=4, seed=5)
X = np.ascontiguousarray(X[:, :3])
COLS = ["a", "b", "c"]
STAMPS = pd.Timestamp("2024-03-01") + pd.to_timedelta(np.arange(200) * 3600, unit="s")


def _in_unit(unit):
    """STAMPS as datetime64 of ``unit``."""
    return pd.Series(STAMPS).astype(f"datetime64[{unit}]")


class ArrayLike:
    """Anything with ``__array__``."""

    def __init__(self, a):
        self._a = a

    def __array__(self, dtype=None, copy=None):
        return self._a if dtype is None else self._a.astype(dtype)


def _frame(**extra):
    """The features as a pandas DataFrame, with ``extra`` columns appended."""
    return pd.DataFrame(X, columns=COLS).assign(**extra)


def _fit_pandas(**extra):
    return GBC(n_estimators=3).fit(_frame(**extra), Y)


def _uses(X_bad, where):
    """Pass ``X_bad`` at fit, at predict (to a model fitted without names on as many
    features) or as eval_set X (to a fit on the same columns given as floats)."""
    if where == "fit":  # (no categorical features: text is refused)
        return GBC(n_estimators=3, categorical_features=None).fit(X_bad, Y)
    n_features = np.shape(X_bad)[1] if not hasattr(X_bad, "columns") else len(X_bad.columns)
    X_train = np.resize(X, (200, n_features))
    if where == "predict":
        return GBC(n_estimators=3).fit(X_train, Y).predict_proba(X_bad)
    return GBC(n_estimators=3).fit(X_train, Y, eval_set=(X_bad, Y))


# ------------------------------------------------------------ dates and times
@pytest.mark.parametrize("where", ["fit", "predict", "eval_set"])
@pytest.mark.parametrize("column, dtype_text, conversion", [
    (_in_unit("s"), "datetime64[s]", "(df['ts'] - pd.Timestamp(0)) / pd.Timedelta(seconds=1)"),
    (_in_unit("ms"), "datetime64[ms]", "(df['ts'] - pd.Timestamp(0))"),
    (_in_unit("us"), "datetime64[us]", "(df['ts'] - pd.Timestamp(0))"),
    (_in_unit("ns"), "datetime64[ns]", "(df['ts'] - pd.Timestamp(0))"),
    (STAMPS.tz_localize("Europe/Paris"), ", Europe/Paris]",
     "(df['ts'] - pd.Timestamp(0, tz='Europe/Paris')) / pd.Timedelta(seconds=1)"),
    (STAMPS - STAMPS[0], "timedelta64[", "df['ts'] / pd.Timedelta(seconds=1)"),
    (STAMPS.to_period("D"), "period[D]", "(df['ts'].dt.start_time - pd.Timestamp(0))"),
    (pd.Series(list(STAMPS), dtype=object), "dtype object, values such as Timestamp(",
     "seconds since the epoch"),
    (pd.Series([d.date() for d in STAMPS], dtype=object),
     "dtype object, values such as datetime.date(2024", "seconds since the epoch"),
])
def test_pandas_date_time_columns_are_refused(column, dtype_text, conversion, where):
    with pytest.raises(ValueError, match=r"has date/time column\(s\) 'ts' \(") as err:
        _uses(_frame(ts=column), where)
    message = str(err.value)
    assert dtype_text in message and conversion in message
    assert message.endswith("or drop it")


def test_the_same_dates_in_another_unit_no_longer_give_another_model():
    """The defect: a model fitted on microsecond timestamps predicted other values for
    the same dates in nanoseconds. Now both are refused, and the conversion the message
    suggests gives the same numbers, hence the same model, from either unit."""
    in_us, in_ns = _frame(ts=_in_unit("us")), _frame(ts=_in_unit("ns"))
    for df in (in_us, in_ns):
        with pytest.raises(ValueError, match="'ts'"):
            GBC(n_estimators=3).fit(df, Y)
    seconds = [df.assign(ts=(df["ts"] - pd.Timestamp(0)) / pd.Timedelta(seconds=1))
               for df in (in_us, in_ns)]
    np.testing.assert_array_equal(seconds[0].to_numpy(), seconds[1].to_numpy())
    # Seconds since the epoch (1.7e9) are integers float32 does not hold: a warning.
    with pytest.warns(DataConversionWarning, match=r"X column\(s\) 'ts' hold values"):
        model = GBC(n_estimators=3).fit(seconds[0], Y)
    np.testing.assert_array_equal(model.predict_proba(seconds[0]),
                                  model.predict_proba(seconds[1]))


@pytest.mark.parametrize("where", ["fit", "predict", "eval_set"])
@pytest.mark.parametrize("column, dtype_text, conversion", [
    (pl.Series(list(STAMPS)).cast(pl.Datetime("us")), "Datetime(time_unit='us'",
     "pl.col('ts').dt.epoch('s')"),
    (pl.Series(list(STAMPS)).cast(pl.Datetime("ns")).dt.replace_time_zone("UTC"),
     "time_zone='UTC'", "pl.col('ts').dt.epoch('s')"),
    (pl.Series([d.date() for d in STAMPS]), "Date", "pl.col('ts').dt.epoch('s')"),
    (pl.Series([d.time() for d in STAMPS]), "Time", "pl.col('ts').cast(pl.Int64) / 1e9"),
    (pl.Series([d - STAMPS[0] for d in STAMPS]), "Duration",
     "pl.col('ts').dt.total_seconds()"),
])
def test_polars_date_time_columns_are_refused(column, dtype_text, conversion, where):
    df = pl.DataFrame(X, schema=COLS).with_columns(column.alias("ts"))
    with pytest.raises(ValueError, match=r"has date/time column\(s\) 'ts' \(") as err:
        _uses(df, where)
    assert dtype_text in str(err.value) and conversion in str(err.value)


STAMP_ARRAY = np.asarray(STAMPS, dtype="datetime64[us]")


@pytest.mark.parametrize("where", ["fit", "predict", "eval_set"])
@pytest.mark.parametrize("X_bad, columns", [
    (np.column_stack([STAMP_ARRAY, STAMP_ARRAY]), "0 (datetime64[us]), 1 (datetime64[us])"),
    (np.column_stack([STAMP_ARRAY - STAMP_ARRAY[0]] * 2), "0 (timedelta64[us]), 1 ("),
    (ArrayLike(np.column_stack([STAMP_ARRAY] * 2)), "0 (datetime64[us]), 1 ("),
    # object arrays: NumPy casts np.datetime64 and np.timedelta64 objects to counts
    (np.array([[1.0, np.datetime64("2024-03-01", "D")]] * 200, dtype=object),
     "1 (dtype object, values such as np.datetime64('2024-03-01'))"),
    (np.array([[1.0, np.timedelta64(5, "s")]] * 200, dtype=object),
     "1 (dtype object, values such as np.timedelta64(5,'s'))"),
    ([[1.0, datetime.datetime(2024, 3, 1)]] * 200, "1 (dtype object, values such as "
                                                   "datetime.datetime(2024, 3, 1, 0, 0))"),
    ([[1.0, datetime.timedelta(seconds=5)]] * 200, "1 (dtype object, values such as "
                                                   "datetime.timedelta(seconds=5))"),
    ([[1.0, datetime.time(12)]] * 200, "1 (dtype object, values such as datetime.time(12, 0))"),
])
def test_date_time_arrays_are_refused_by_column_index(X_bad, columns, where):
    with pytest.raises(ValueError, match="has date/time column") as err:
        _uses(X_bad, where)
    assert f"column(s) {columns}" in str(err.value)


def test_every_date_time_column_is_named_then_and_n_more():
    stamps = {f"t{i:02d}": STAMPS for i in range(13)}
    with pytest.raises(ValueError) as err:
        _fit_pandas(**stamps)
    message = str(err.value)
    assert all(f"'t{i:02d}'" in message for i in range(10))
    assert "'t10'" not in message and "and 3 more" in message


# ------------------------------------------------------------ float32 precision
def _precision_warnings(fit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fit()
    found = [w for w in caught if issubclass(w.category, DataConversionWarning)]
    return result, found


@pytest.mark.parametrize("values, lossy", [
    (np.array([16777216, 16777217] * 100, dtype=np.int64), True),   # ids become equal
    (np.array([16777216, 16777218] * 100, dtype=np.int64), False),  # representable
    (np.array([2**62, -2**63] * 100, dtype=np.int64), False),       # powers of two
    (np.array([2**63 - 1, 0] * 100, dtype=np.int64), True),
    (np.array([2**64 - 1, 0] * 100, dtype=np.uint64), True),
    (np.array([2**31 - 1, 0] * 100, dtype=np.int32), True),
    (np.array([2**31 - 1, 0] * 100, dtype=np.uint32), True),
    (np.array([-2**15, 2**15 - 1] * 100, dtype=np.int16), False),
    (np.array([16777217.0, 1.0] * 100), True),                       # an integral float
    (np.array([-16777217.0, 1.0] * 100), True),
    (np.array([16777217.5, 1.0] * 100), False),                      # a fraction rounds
    (np.array([0.1, 1e15 + 0.3] * 100), False),
    (np.array([1.2345e20, 1e-45] * 100), False),                     # ordinary rounding
    (np.array([3.5e38, 0.0] * 100), True),                           # becomes inf
    (np.array([-1e300, 0.0] * 100), True),
    (np.array([3.4e38, np.inf, -np.inf, np.nan] * 50), False),      # held, or not finite
    (np.array([16777217, 1.0] * 100, dtype=np.float32), False),      # already float32
    (np.array([True, False] * 100), False),
])
def test_values_float32_does_not_represent_warn_once_at_fit(values, lossy):
    small = (np.arange(200) % 7).astype(values.dtype)
    X_in = np.column_stack([small, small, small, values])  # all of the dtype of values
    assert X_in.dtype == values.dtype
    model, found = _precision_warnings(lambda: GBC(n_estimators=3).fit(X_in, Y))
    assert len(found) == int(lossy)
    if lossy:
        message = str(found[0].message)
        assert "X column(s) 3 hold values that float32 does not represent" in message
        assert "16777217 and 16777216 become equal" in message
    # Scoring converts the same way, silently; the eval_set too.
    _, found = _precision_warnings(lambda: model.predict_proba(X_in))
    assert found == []
    _, found = _precision_warnings(
        lambda: GBC(n_estimators=3).fit(X, Y, eval_set=(X_in[:, 1:], Y)))
    assert found == []


def test_precision_warning_names_dataframe_columns_and_lists_at_most_ten():
    ids = np.arange(200, dtype=np.int64) + 2**40 + 1
    wide = {f"id{i:02d}": ids for i in range(12)}
    _, found = _precision_warnings(lambda: _fit_pandas(**wide, small=np.arange(200)))
    assert len(found) == 1
    message = str(found[0].message)
    assert "X column(s) 'id00', 'id01'" in message and "'id09' and 2 more" in message
    assert "'small'" not in message and "'a'" not in message


@pytest.mark.parametrize("kind", ["Int64", "int64[pyarrow]", "polars"])
def test_integers_with_nulls_are_checked_exactly(kind):
    """2**53 + 1 with a null: a float64 on the way to float32 must not hide the loss
    (as float64 it is 2**53, which float32 holds)."""
    if kind == "int64[pyarrow]":
        require("pyarrow")

    def make(ids):
        if kind == "polars":
            return pl.DataFrame(X, schema=COLS).with_columns(pl.Series("id", ids))
        return _frame(id=pd.array(ids, dtype=kind))

    ids = [2**53 + 1] * 199 + [None]
    model, found = _precision_warnings(lambda: GBC(n_estimators=3).fit(make(ids), Y))
    assert len(found) == 1 and "'id'" in str(found[0].message)
    assert model.n_features_in_ == 4
    # The null is a missing value; exact integers (and a null) give no warning.
    ids = list(range(199)) + [None]
    _, found = _precision_warnings(lambda: GBC(n_estimators=3).fit(make(ids), Y))
    assert found == []


def test_precision_warning_is_a_user_warning_of_gbc_core():
    assert issubclass(gbc_core.DataConversionWarning, UserWarning)
    X_in = np.column_stack([X, np.full(200, 2.0**30 + 1)])
    with pytest.warns(gbc_core.DataConversionWarning, match=r"X column\(s\) 3 ") as record:
        GBC(n_estimators=3).fit(X_in, Y)
    assert record[0].filename == __file__  # points at the caller of fit


# ------------------------------------------------------------ duplicated names
@pytest.mark.parametrize("columns, shown", [
    (["a", "b", "a"], "'a'"),
    (["a", "b", "a", "b"], "'a', 'b'"),
    ([0, 1, 0], "0"),
])
def test_duplicated_column_names_are_refused_at_fit(columns, shown):
    df = pd.DataFrame(np.resize(X, (200, len(columns))), columns=columns)
    with pytest.raises(ValueError, match=rf"X has duplicated column name\(s\) {shown};"):
        GBC(n_estimators=3).fit(df, Y)


def test_duplicated_columns_at_predict():
    model = _fit_pandas()
    expected = model.predict_proba(X)
    # A model feature given twice: refused (which one would it be?).
    with pytest.raises(ValueError, match=r"repeated feature column\(s\): \['a'\]"):
        model.predict_proba(pd.concat([_frame(), _frame()[["a"]]], axis=1))
    # Repeated columns the model does not use are ignored, as any extra column.
    z = pd.DataFrame({"z": np.zeros(200)})
    np.testing.assert_array_equal(model.predict_proba(pd.concat([_frame(), z, z], axis=1)),
                                  expected)


# ------------------------------------------------------------ nulls
def test_nullable_pandas_columns_take_pd_na_as_missing():
    X_nan = X.copy()
    X_nan[::7, 0] = np.nan
    X_nan[::5, 1] = np.nan
    X_nan[::3, 2] = np.nan
    X_nan = np.column_stack([X_nan, (np.arange(200) % 3 == 0).astype(float)])
    X_nan[::11, 3] = np.nan
    ref = GBC(n_estimators=5, max_depth=3).fit(X_nan, Y)
    as_int = np.round(X_nan[:, 0] * 1000)  # integers, exact in float32
    ref_int = GBC(n_estimators=5, max_depth=3).fit(np.column_stack([as_int, X_nan[:, 1:]]), Y)
    def na(values, dtype, cast=float):
        return pd.array([None if np.isnan(v) else cast(v) for v in values], dtype=dtype)

    frames = {
        "nullable": pd.DataFrame({"a": na(X_nan[:, 0], "Float64"),
                                  "b": na(X_nan[:, 1], "Float32"),
                                  "c": na(X_nan[:, 2], "Float64"),
                                  "d": na(X_nan[:, 3], "boolean", bool)}),
        "object with None and pd.NA": pd.DataFrame(
            {c: np.array([pd.NA if i % 2 and np.isnan(v) else None if np.isnan(v) else v
                          for i, v in enumerate(X_nan[:, j])], dtype=object)
             for j, c in enumerate("abcd")}),
        "pyarrow": pd.DataFrame({"a": na(X_nan[:, 0], "double[pyarrow]"),
                                 "b": na(X_nan[:, 1], "double[pyarrow]"),
                                 "c": na(X_nan[:, 2], "float[pyarrow]"),
                                 "d": na(X_nan[:, 3], "bool[pyarrow]", bool)}),
    }
    for what, df in frames.items():
        if what == "pyarrow":
            require("pyarrow")
        model = GBC(n_estimators=5, max_depth=3).fit(df, Y)
        np.testing.assert_array_equal(model.booster_.ensemble.nodes, ref.booster_.ensemble.nodes, err_msg=what)
        np.testing.assert_array_equal(model.predict_proba(df), ref.predict_proba(X_nan))
        np.testing.assert_array_equal(
            GBC(n_estimators=5, max_depth=3).fit(X_nan, Y, eval_set=(df, Y)).validation_score_,
            GBC(n_estimators=5, max_depth=3).fit(X_nan, Y, eval_set=(X_nan, Y)).validation_score_)
    # Integer columns with pd.NA.
    df = pd.DataFrame({"a": na(as_int, "Int64", int), "b": na(X_nan[:, 1], "Float64"),
                       "c": na(X_nan[:, 2], "Float64"), "d": na(X_nan[:, 3], "Int8", int)})
    model = GBC(n_estimators=5, max_depth=3).fit(df, Y)
    np.testing.assert_array_equal(model.booster_.ensemble.nodes, ref_int.booster_.ensemble.nodes)


def test_polars_nulls_are_missing_values():
    X_nan = X.copy()
    X_nan[::4, 1] = np.nan
    flags = (np.arange(200) % 3 == 0).astype(float)
    flags[::9] = np.nan
    counts = np.round(X[:, 2] * 100)
    counts[::6] = np.nan
    expected = np.column_stack([X_nan, flags, counts, np.full(200, np.nan)])
    ref = GBC(n_estimators=5).fit(expected, Y)
    df = pl.DataFrame({
        "a": X_nan[:, 0], "b": pl.Series(X_nan[:, 1]).fill_nan(None), "c": X_nan[:, 2],
        "flag": [None if np.isnan(v) else v == 1 for v in flags],
        "count": pl.Series([None if np.isnan(v) else int(v) for v in counts], dtype=pl.Int16),
        "empty": [None] * 200,
    })
    assert df.schema["empty"] == pl.Null and df["count"].null_count() > 0
    model = GBC(n_estimators=5).fit(df, Y)
    np.testing.assert_array_equal(model.booster_.ensemble.nodes, ref.booster_.ensemble.nodes)
    np.testing.assert_array_equal(model.predict_proba(df), ref.predict_proba(expected))


# ------------------------------------------------------------ text and other types
@pytest.mark.parametrize("where", ["fit", "predict", "eval_set"])
@pytest.mark.parametrize("column, described", [
    (pd.Series(["x", "z"] * 100, dtype=object), r"'city' \(dtype object, values such as 'x'\)"),
    (pd.array(["x", "z"] * 100, dtype="string"), r"'city' \(dtype string, values such as 'x'\)"),
    (pd.Categorical(["x", "z"] * 100), r"'city' \(dtype category, values such as 'x'\)"),
    # numbers with one text value among them, None and pd.NA
    (pd.Series([1.5, None, pd.NA, "z"] * 50, dtype=object),
     r"'city' \(dtype object, values such as 'z'\)"),
])
def test_pandas_text_columns_are_named(column, described, where):
    with pytest.raises(ValueError, match=rf"X has non-numeric column\(s\) {described}; "
                                         r"every feature must be numeric \(numbers or "
                                         r"booleans.*encode them as numbers or drop them "
                                         r"\(or, for categories at fit, name them in "
                                         r"categorical_features\)"):
        _uses(_frame(city=column), where)


def test_every_bad_column_is_named_at_once():
    df = _frame(city=["x"] * 200, n=np.arange(200),
                tier=pd.Categorical(["low", "high"] * 100))
    with pytest.raises(ValueError, match=r"'city' \(dtype .*'x'\), 'tier' \(dtype category"):
        GBC(n_estimators=3, categorical_features=None).fit(df, Y)
    # Date/time columns are reported first (they need another fix).
    with pytest.raises(ValueError, match=r"date/time column\(s\) 'ts'"):
        GBC(n_estimators=3, categorical_features=None).fit(df.assign(ts=STAMPS), Y)
    with pytest.raises(ValueError, match=r"date/time column\(s\) 'ts'"):
        GBC(n_estimators=3).fit(df.assign(ts=STAMPS), Y)


def test_numeric_text_and_numeric_categories_are_their_numbers():
    """Without categorical features (categorical_features=None) text of numbers and
    categories of numbers are their numbers; by default ("from_dtype") such columns
    are categorical."""
    ref = GBC(n_estimators=3).fit(np.column_stack([X, np.arange(200) % 4]), Y)
    for column in (pd.array([str(v) for v in np.arange(200) % 4], dtype="string"),
                   pd.Categorical(np.arange(200) % 4),
                   np.array([str(v) for v in np.arange(200) % 4], dtype=object)):
        model = GBC(n_estimators=3, categorical_features=None).fit(_frame(d=column), Y)
        np.testing.assert_array_equal(model.booster_.ensemble.nodes, ref.booster_.ensemble.nodes)
        default = GBC(n_estimators=3).fit(_frame(d=column), Y)
        assert default.is_categorical_.tolist() == [False] * X.shape[1] + [True]


@pytest.mark.parametrize("where", ["fit", "predict", "eval_set"])
@pytest.mark.parametrize("column, dtype_text", [
    (pl.Series(["x", "z"] * 100), "String"),
    (pl.Series(["x", "z"] * 100, dtype=pl.Categorical), "Categorical"),
    (pl.Series(["x", "z"] * 100, dtype=pl.Enum(["x", "z"])), "Enum"),
    (pl.Series([[1, 2]] * 200), "List"),
    (pl.Series([{"k": 1}] * 200), "Struct"),
    (pl.Series([b"x"] * 200), "Binary"),
])
def test_polars_non_numeric_columns_are_named(column, dtype_text, where):
    df = pl.DataFrame(X, schema=COLS).with_columns(column.alias("city"))
    with pytest.raises(ValueError, match=rf"X has non-numeric column\(s\) 'city' "
                                         rf"\({dtype_text}.*encode them as numbers"):
        _uses(df, where)


@pytest.mark.parametrize("where", ["fit", "predict", "eval_set"])
def test_objects_that_are_not_text_are_a_type_error(where):
    """Intervals, dicts, ...: a TypeError, as NumPy's own, still naming the column."""
    with pytest.raises(TypeError, match=r"X has non-numeric column\(s\) 'city' \(dtype "
                                        r"interval.*float\(\) argument must be"):
        _uses(_frame(city=pd.arrays.IntervalArray.from_breaks(np.arange(201))), where)
    X_bad = X.astype(object)
    X_bad[7, 2] = {"k": 1}
    with pytest.raises(TypeError, match=r"column\(s\) 2 .*\{'k': 1\}: float\(\) argument"):
        _uses(X_bad, where)
    X_bad = X.astype(object)
    X_bad[9, 1] = [1.0, 2.0]
    with pytest.raises(ValueError,  # NumPy's "setting an array element with a sequence"
                       match=r"non-numeric column\(s\) 1 .*values such as \[1.0, 2.0\]"):
        _uses(X_bad, where)


@pytest.mark.parametrize("where", ["fit", "predict", "eval_set"])
def test_text_in_arrays_is_named_by_column_index(where):
    X_bad = X.astype(object)
    X_bad[7, 2] = "z"
    with pytest.raises(ValueError, match=r"X has non-numeric column\(s\) 2 \(dtype object, "
                                         r"values such as 'z'\)"):
        _uses(X_bad, where)
    X_str = X.astype(str)
    X_str[3, 0] = "abc"
    with pytest.raises(ValueError, match=r"column\(s\) 0 \(dtype <U\d+, values such as 'abc'"):
        _uses(X_str, where)


def test_object_arrays_take_none_and_pd_na_as_missing():
    X_nan = X.copy()
    X_nan[::5, 1] = np.nan
    X_obj = X.astype(object)
    X_obj[::10, 1] = None
    X_obj[5::10, 1] = pd.NA
    ref = GBC(n_estimators=3).fit(X_nan, Y)
    model = GBC(n_estimators=3).fit(X_obj, Y)
    np.testing.assert_array_equal(model.booster_.ensemble.nodes, ref.booster_.ensemble.nodes)
    np.testing.assert_array_equal(model.predict_proba(X_obj), ref.predict_proba(X_nan))


def test_complex_pandas_column_is_named():
    with pytest.raises(ValueError, match="Complex data not supported: X column 'z'"):
        _fit_pandas(z=np.full(200, 1 + 1j))


# ------------------------------------------------------------ labels
@pytest.mark.parametrize("y, n_missing, rows", [
    (pd.Series(np.where(np.arange(200) % 50 == 3, None, Y), dtype="Int64"), 4,
     "3, 53, 103, 153"),
    (pd.Series(np.where(np.arange(200) == 7, None, Y.astype(bool)), dtype="boolean"), 1, "7"),
    (pd.Series(np.where(np.arange(200) < 12, None, np.array(["n", "y"])[Y]), dtype="string"),
     12, "0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 2 more"),
    (pd.Series(np.where(np.arange(200) == 9, None, np.array(["n", "y"])[Y]), dtype="str"),
     1, "9"),
    (pd.DataFrame({"y": pd.Series(np.where(np.arange(200) == 2, None, Y), dtype="Int64")}),
     1, "2"),
    (np.where(np.arange(200) == 4, pd.NA, np.array(["n", "y"], dtype=object)[Y]), 1, "4"),
    (list(np.where(np.arange(200) == 5, None, np.array(["n", "y"], dtype=object)[Y])), 1, "5"),
])
@pytest.mark.filterwarnings("ignore:A column-vector y was passed")
def test_missing_labels_are_refused_with_their_rows(y, n_missing, rows):
    with pytest.raises(ValueError, match=rf"y has {n_missing} missing label\(s\) .* at rows "
                                         rf"\[{rows}\]; every sample needs a label"):
        GBC(n_estimators=3).fit(X, y)


@pytest.mark.parametrize("dtype, labels", [("string", np.array(["n", "y"], dtype=object)),
                                           ("boolean", np.array([False, True])),
                                           ("Int64", np.array([0, 1])),
                                           (object, np.array(["n", "y"], dtype=object))])
def test_missing_eval_set_labels_are_refused_as_missing_y_labels(dtype, labels):
    """Labels with NA in eval_set: the error of the same labels as y (rows and count),
    naming eval_set y."""
    y = pd.Series(labels[Y], dtype=dtype)
    missing = y.copy()
    missing[[3, 60, 61]] = pd.NA if dtype != object else None
    with pytest.raises(ValueError) as as_y:
        GBC(n_estimators=3).fit(X, missing)
    assert "y has 3 missing label(s)" in str(as_y.value)
    with pytest.raises(ValueError) as as_eval_set:
        GBC(n_estimators=3).fit(X, y, eval_set=(X, missing))
    assert str(as_eval_set.value) == f"eval_set {as_y.value}"


@pytest.mark.parametrize("bad", [np.nan, np.inf, "mixed"])
def test_eval_set_labels_no_class_can_be_made_of_get_the_errors_of_y(bad):
    """NaN, infinity or labels of two kinds in eval_set's labels: the error the same
    labels get as y, naming eval_set y (not "labels not seen in y")."""
    y = Y.astype(np.float64)
    if bad == "mixed":
        y = Y.astype(object)
        bad_labels = y.copy()
        bad_labels[5] = "x"
    else:
        bad_labels = y.copy()
        bad_labels[5] = bad
    with pytest.raises((ValueError, TypeError)) as as_y:
        GBC(n_estimators=3).fit(X, bad_labels)
    with pytest.raises(type(as_y.value)) as as_eval_set:
        GBC(n_estimators=3).fit(X, y, eval_set=(X, bad_labels))
    assert str(as_eval_set.value) == str(as_y.value).replace("y ", "eval_set y ", 1)
    assert str(as_eval_set.value).startswith("eval_set y ")


def test_nullable_labels_without_missing_values_fit():
    ref = GBC(n_estimators=3).fit(X, Y)
    for y in (pd.Series(Y, dtype="Int64"), pd.Series(Y.astype(bool), dtype="boolean"),
              pd.Series(np.array(["n", "y"])[Y], dtype="string")):
        model = GBC(n_estimators=3).fit(X, y)
        np.testing.assert_array_equal(model.predict_proba(X), ref.predict_proba(X))


# ------------------------------------------------------------ imports
def test_import_loads_no_dataframe_library():
    code = ("import sys, gbc_core; "
            "print(sorted(m for m in ('pandas', 'polars', 'sklearn', 'pyarrow') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
