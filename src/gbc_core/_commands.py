"""The batch commands behind ``gbc-core train | predict | evaluate | inspect | export``.

Each ``run_*`` function takes the parsed command-line arguments and returns the exit
code; user errors are raised as :class:`~gbc_core._tabular.DataError` with a one-line
message (the command line prints it without a traceback).
"""

import json
import os
import sys
import time
import warnings

import numpy as np

from ._tabular import (
    CSV_FALSE_VALUES,
    CSV_TRUE_VALUES,
    LIBSVM_LABEL,
    AtomicOutput,
    DataError,
    csv_labels,
    detect_format,
    one_line,
    open_data,
    output_format,
    pandas_index_columns,
    require_pyarrow,
)
from ._validation import warn_lossy_columns

#: Rows of a chunk when ``--chunk-rows`` is not given, at most: fewer for models with
#: many classes or features (``default_chunk_rows``).
DEFAULT_CHUNK_ROWS = 100_000
#: Most values of a chunk's scores (rows x classes): raw scores, probabilities and
#: their output columns are arrays of this size (32 MiB of float64 each).
CHUNK_SCORE_VALUES = 1 << 22
#: Most values of a chunk's features (rows x the model's features): 256 MiB of
#: float32 (a CSV/Parquet chunk, or the contributions of a chunk, are dense at the
#: model's width; a LIBSVM chunk is sparse).
CHUNK_FEATURE_VALUES = 1 << 26


def default_chunk_rows(model, sparse=False):
    """Rows per chunk for ``model`` when ``--chunk-rows`` is not given: at most
    ``DEFAULT_CHUNK_ROWS``, and few enough that rows x classes stays within
    ``CHUNK_SCORE_VALUES`` and, unless the chunks are ``sparse`` (LIBSVM rows
    scored without contributions: memory follows their entries), rows x features
    within ``CHUNK_FEATURE_VALUES`` (so that memory does not grow with the number
    of classes or features); at least 1."""
    rows = min(DEFAULT_CHUNK_ROWS, CHUNK_SCORE_VALUES // int(model.n_classes_))
    if not sparse:
        rows = min(rows, CHUNK_FEATURE_VALUES // int(model.n_features_in_))
    return max(1, rows)


def _chunk_rows(args, model, sparse=False):
    """``--chunk-rows`` as given (>= 1), else ``default_chunk_rows(model, sparse)``."""
    if args.chunk_rows is None:
        return default_chunk_rows(model, sparse)
    if args.chunk_rows < 1:
        raise DataError("--chunk-rows must be >= 1")
    return args.chunk_rows


# ------------------------------------------------------------------- helpers
class Progress:
    """Rows done and rows/s on stderr, redrawn in place; silent when disabled."""

    def __init__(self, enabled, total=None, label="scored", stream=None, interval=0.25):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.total = total
        self.label = label
        self.interval = interval
        self.done = 0
        self.start = time.perf_counter()
        self._last = 0.0

    @staticmethod
    def wanted(quiet, stream=None):
        stream = stream or sys.stderr
        if quiet:
            return False
        try:
            return stream.isatty()
        except (AttributeError, ValueError):
            return False

    def _draw(self, final=False):
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        rate = self.done / elapsed
        pct = ""
        if self.total:
            pct = f" {100.0 * self.done / self.total:5.1f}% of {self.total:,}"
        line = f"\r{self.label} {self.done:,} rows{pct}  {rate:,.0f} rows/s  {elapsed:6.1f}s"
        self.stream.write(line + ("\n" if final else ""))
        self.stream.flush()

    def update(self, n):
        self.done += n
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last >= self.interval:
            self._last = now
            self._draw()

    def close(self):
        if self.enabled:
            self._draw(final=True)


def _duration(seconds):
    """``12.3s``, ``4m05s`` or ``2h03m``."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class TrainProgress:
    """The progress of ``train``'s fit, as a ``fit(monitor=...)`` callable.

    On a terminal (``tty=True``) one line redrawn in place at most every
    ``interval`` seconds: a bar, the iterations done out of ``n_estimators``, the
    time so far and the time left (the iterations left at the mean time per
    iteration so far; early stopping may end sooner). Elsewhere plain lines, one
    per tenth of ``n_estimators``. With ``metric`` (set name, metric name), each
    line ends with that metric's latest value, read from the fit's record
    (``evals_result_``). It never looks at the model (so it costs nothing per
    iteration) and never stops the fit.
    """

    WIDTH = 24

    def __init__(self, n_estimators, tty, stream=None, interval=0.25, first=0,
                 metric=None):
        self.total = int(n_estimators)
        self.metric = metric  # (set name, metric name) of record.evals, or None
        self.tty = tty
        self.stream = stream or sys.stderr
        self.interval = interval
        self.first = int(first)  # iterations fitted before (a warm start)
        self.start = time.perf_counter()
        self._last = -np.inf
        self._next_tenth = 1
        self._drawn = False

    def _line(self, done, score=""):
        elapsed = time.perf_counter() - self.start
        run = done - self.first
        left = (self.total - done) * elapsed / run if run > 0 else 0.0
        pct = 100.0 * done / self.total
        text = (f"{done:,}/{self.total:,} iterations {pct:5.1f}%  elapsed "
                f"{_duration(elapsed)}  left {_duration(left)}{score}")
        if not self.tty:
            return "training " + text
        filled = int(self.WIDTH * done / self.total)
        return f"\rtraining [{'#' * filled}{'.' * (self.WIDTH - filled)}] {text}"

    def _score(self, values):
        """The watched metric's latest value, as the line's end ("" without one)."""
        record = values.get("record") if self.metric is not None else None
        evals = getattr(record, "evals", None) or {}
        series = evals.get(self.metric[0], {}).get(self.metric[1]) if evals else None
        return f"  {self.metric[1]} {series[-1]:.5f}" if series else ""

    def __call__(self, i, estimator, values):
        done = i + 1
        if self.tty:
            now = time.perf_counter()
            if now - self._last >= self.interval or done == self.total:
                self._last = now
                self.stream.write(self._line(done, self._score(values)))
                self.stream.flush()
                self._drawn = True
        elif done * 10 >= self._next_tenth * self.total:
            while done * 10 >= self._next_tenth * self.total:
                self._next_tenth += 1
            self.stream.write(self._line(done, self._score(values)) + "\n")
            self.stream.flush()
        return False

    def close(self):
        """End the redrawn line (on a terminal)."""
        if self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()


def load_model_file(path):
    """Load a model file as a :class:`~gbc_core.Booster` (no scikit-learn); every
    failure is a one-line DataError."""
    from . import ModelFormatError, load

    path = str(path)
    if not os.path.exists(path):
        raise DataError(f"model file not found: {path}")
    if os.path.isdir(path):
        raise DataError(f"{path} is a directory, not a model file")
    try:
        return load(path)
    except ModelFormatError as exc:
        raise DataError(f"{path} is not a valid gbc-core model: {one_line(exc)}") from None
    except OSError as exc:
        raise DataError(f"cannot read model file {path}: {exc.strerror or exc}") from None


class _NamedFrame:
    """Just enough of a DataFrame for ``fit`` to record the feature names."""

    def __init__(self, X, names):
        self._X = X
        self.columns = list(names)
        self.shape = X.shape

    def to_numpy(self, dtype=None):
        return self._X if dtype is None else np.asarray(self._X, dtype=dtype)

    def __array__(self, dtype=None, copy=None):
        # (rows with categorical columns: an object array, read by _categories)
        return self._X if dtype is None else np.asarray(self._X, dtype=dtype)


def _fmt_for(path, explicit, fallback=None):
    """Format of ``path``: ``explicit``, else its extension, else ``fallback``."""
    if explicit:
        return detect_format(path, explicit)
    try:
        return detect_format(path)
    except DataError:
        if fallback:
            return fallback
        raise


def _open(args, path, fmt, n_features=None):
    return open_data(path, fmt, delimiter=getattr(args, "delimiter", None),
                     header=not getattr(args, "no_header", False), n_features=n_features)


def _labels_from_column(table, name, data):
    """Target labels of a pyarrow column, each keeping its value: no nulls/NaN; a CSV
    column's text typed by ``csv_labels``, a Parquet column's values as its type holds
    them (a categorical column: the values its rows hold)."""
    col = table.column(name)
    if col.null_count:
        raise DataError(f"target column {name!r} of {data.path} has {col.null_count} "
                        "missing value(s); every row needs a label")
    if data.fmt != "parquet":
        return csv_labels(col)
    y = col.to_numpy(zero_copy_only=False)
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise DataError(f"target column {name!r} of {data.path} has NaN or infinite "
                        "values; every row needs a label")
    return y


def _categorical_columns(args, data, features):
    """The categorical feature columns of the training file ``data`` (``--categorical``:
    "auto", its text columns; "none", none; else the columns it names)."""
    spec = getattr(args, "categorical", "auto")
    if spec == "auto":
        return data.text_columns(features)
    if spec == "none":
        return []
    unknown = [c for c in spec if c not in data.columns]
    if unknown:
        raise DataError(f"--categorical column(s) {unknown[:5]} not found in {data.path}")
    other = [c for c in spec if c not in features]
    if other:
        raise DataError(f"--categorical column(s) {other[:5]} of {data.path} are not "
                        "features (the target, --drop or a pandas index)")
    return list(dict.fromkeys(spec))


def _read_training_table(args, path, fmt, features=None, categorical=None):
    """(X, y, feature names, categorical feature names) from a CSV/Parquet file: X
    float32, or with categorical features the rows of ``_tabular.mixed_rows`` (a
    pandas DataFrame, else an object array). ``categorical``: those of the training
    data (reading evaluation data), else ``--categorical`` on this file."""
    data = _open(args, path, fmt)
    target = args.target
    if not target:
        raise DataError(f"--target COL is required for {fmt.upper()} data ({path}); "
                        f"columns: {', '.join(data.columns[:10])}"
                        f"{' ...' if len(data.columns) > 10 else ''}")
    if target not in data.columns:
        raise DataError(f"target column {target!r} not found in {path}; columns: "
                        f"{', '.join(data.columns[:10])}{' ...' if len(data.columns) > 10 else ''}")
    if features is None:
        drop = list(args.drop or [])
        _check_drop(data, drop)
        features = _other_columns(path, data.columns, data.index_columns, {target, *drop})
        if not features:
            raise DataError(f"{path} has no feature columns besides the target {target!r}")
    else:
        missing = [c for c in features if c not in data.columns]
        if missing:
            raise DataError(f"feature column {missing[0]!r} (used in training) is missing "
                            f"from {path}")
    if categorical is None:
        categorical = _categorical_columns(args, data, features)
    # CSV: a categorical column is read as text, its categories the texts as written.
    data.categorical = {name: "text" for name in categorical}
    table = data.read(features, target)
    if table.num_rows == 0:
        raise DataError(f"{path} has no data rows")
    y = _labels_from_column(table, target, data)
    lossy = []
    X = data.features(table, features, lossy, frame=True)
    if lossy:  # the estimator's warning on the values the file held
        warn_lossy_columns(lossy, f"the training data {path}", np.float32, stacklevel=2)
    return X, y, features, categorical


def _other_columns(path, columns, index_columns, excluded):
    """The ``columns`` of the CSV/Parquet file ``path`` that are features when every
    column not ``excluded`` (the target, ``--drop``, ``--keep``) is one: without the
    ``index_columns`` that hold a pandas index (said on stderr), and an error for a
    column without a name."""
    index = [c for c in index_columns if c not in excluded]
    if index:
        print(f"gbc-core: note: {path}: the column(s) {', '.join(map(repr, index))} "
              "hold the pandas index of the DataFrame the file was written from "
              "(DataFrame.to_parquet), not a feature: left out", file=sys.stderr)
    features = [c for c in columns if c not in excluded and c not in index]
    if "" in features:
        raise DataError(
            f"column {columns.index('') + 1} of {path} has no name (an empty header "
            "field), so it cannot be a feature: it is most likely the row index that "
            "pandas writes with DataFrame.to_csv(); write the file with "
            "to_csv(index=False), or leave the column out with --drop ''")
    return features


def _check_drop(data, drop):
    """``--drop`` names columns of a CSV/Parquet file (LIBSVM has none)."""
    if not drop:
        return
    if data.kind == "libsvm":
        raise DataError("--drop applies to CSV/Parquet data (LIBSVM columns are indices)")
    unknown = [c for c in drop if c not in data.columns]
    if unknown:
        raise DataError(f"--drop column(s) {unknown} not found in {data.path}")


def _read_training_libsvm(args, path, n_features):
    data = _open(args, path, "libsvm", n_features=n_features)
    X, y = data.read_all()
    return X, y


def _class_code(value, index, kind):
    """The code of the class that the label ``value`` (a Python scalar) is, or None.

    ``index`` maps each class to its code and ``kind`` is the NumPy kind of the
    classes. A label matches a class by value, however the file wrote it: text (a
    CSV target) is the number or the true/false it writes, and a number is the
    string class that writes it.
    """
    if value in index:
        return index[value]
    if isinstance(value, str):
        if kind == "O" and index:  # Python values of one type: booleans, numbers, text
            first = next(iter(index))
            kind = ("b" if isinstance(first, (bool, np.bool_)) else
                    "f" if isinstance(first, (int, float, np.number)) else kind)
        if kind == "b":
            word = (True if value in CSV_TRUE_VALUES
                    else False if value in CSV_FALSE_VALUES else None)
            return None if word is None else index.get(word)
        if kind in "iuf":
            for convert in (int, float):  # int first: exact beyond 2**53
                try:
                    return index.get(convert(value))
                except ValueError:
                    pass
        return None
    if kind in "OUS":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return index.get(str(value))
    return None


def _distinct_labels(y):
    """(the distinct labels of ``y`` as Python scalars, the index of each row's label
    among them); a pyarrow array is hashed (sorting a NumPy array of strings takes
    many times longer)."""
    if hasattr(y, "dictionary_encode"):
        import pyarrow as pa

        if isinstance(y.type, pa.DictionaryType):
            # A categorical column: its rows' values, not its categories (a category
            # no row holds is no label).
            y = y.cast(y.type.value_type)
        if hasattr(y, "combine_chunks"):
            y = y.combine_chunks()
        encoded = y.dictionary_encode()
        return encoded.dictionary.to_pylist(), encoded.indices.to_numpy(zero_copy_only=False)
    values, inverse = np.unique(y, return_inverse=True)
    return values.tolist(), inverse.reshape(-1)


def label_codes(y, classes, where, known_as):
    """Class codes (indices into ``classes``) of the labels ``y``.

    Labels match the classes by value (see ``_class_code``): the labels of a CSV
    target, read as text, match the numbers or the true/false the model was trained
    on; the numbers of a Parquet or LIBSVM file match string classes that write them.

    Parameters
    ----------
    y : ndarray or pyarrow array of shape (n_samples,), without nulls
        The labels, of one type (as one column of a file holds them).
    classes : ndarray of shape (n_classes,)
        The sorted class labels.
    where : str
        What holds the labels, for the error (e.g. "target column 'y' of test.csv"
        or, for LIBSVM labels, the file).
    known_as : str
        Whose classes they are, for the error (e.g. "the model").

    Returns
    -------
    ndarray of intp, shape (n_samples,)

    Raises
    ------
    DataError
        When a label is NaN, or is no class (naming the first five such labels as
        given).
    """
    values, inverse = _distinct_labels(y)
    if any(v != v for v in values):  # NaN
        raise DataError(f"{where} has NaN values; every row needs a label")
    index = {c: k for k, c in enumerate(classes.tolist())}
    codes = [_class_code(v, index, classes.dtype.kind) for v in values]
    unknown = [v for v, code in zip(values, codes) if code is None]
    if unknown:
        more = f" (and {len(unknown) - 5} more)" if len(unknown) > 5 else ""
        raise DataError(f"{where}: labels {unknown[:5]}{more} are not classes of "
                        f"{known_as} (its classes: {classes.tolist()})")
    return np.asarray(codes, dtype=np.intp)[inverse]


def _labels_where(path, target=None):
    """How an error names the labels of ``path``: its target column, or the file
    itself for LIBSVM labels (``target`` None)."""
    return str(path) if target is None else f"target column {target!r} of {path}"


# -------------------------------------------------------------------- train
def _estimator_params(args):
    """The hyper-parameters the command line offers (``_params.PARAMS``), as parsed."""
    from ._params import PARAMS

    return {p.name: getattr(args, p.name) for p in PARAMS if p.cli is not None}


def _class_weight_for(params, classes, where):
    """``params`` with a ``class_weight`` dict read from the command line (JSON: its
    keys are text) keyed by the classes ``classes`` it names, matched by value as
    ``label_codes`` matches labels (``"1"`` and ``"+1"`` are the class 1)."""
    weights = params.get("class_weight")
    if not isinstance(weights, dict):
        return params
    index = {c: k for k, c in enumerate(classes.tolist())}
    out = {}
    for key, value in weights.items():
        code = _class_code(key, index, classes.dtype.kind)
        if code is None:
            raise DataError(f"--class-weight: {key!r} is not a label of {where} (its "
                            f"labels: {classes.tolist()[:10]}"
                            f"{' ...' if len(classes) > 10 else ''})")
        label = classes.tolist()[code]
        if label in out:
            raise DataError(f"--class-weight names the label {label!r} twice")
        out[label] = value
    return {**params, "class_weight": out}


def _label(value):
    """A class label as a plain Python value (for JSON and messages)."""
    return value.item() if hasattr(value, "item") else value


def describe_classes(classes):
    """``classes [...]`` and, for two classes, which one is positive."""
    labels = classes.tolist()
    if len(labels) == 2:
        return f"classes {labels} (positive: {labels[1]!r})"
    return f"{len(labels)} classes {labels[:10]}{' ...' if len(labels) > 10 else ''}"


def describe_fit(model):
    """The summary line of a fitted estimator: its classes, iterations and trees,
    and its training loss itself (``train_score_`` is in scikit-learn's units: for
    two classes and the log-loss the deviance, twice the log-loss)."""
    loss_function = model.booster_.loss_function
    return (f"{describe_classes(model.classes_)}; {model.n_estimators_} iterations "
            f"({model.n_estimators_ * model.n_trees_per_iteration_} trees); training "
            f"{loss_function.label} "
            f"{model.train_score_[-1] / loss_function.score_factor:.5f}")


def _summary_printer(args):
    """``print``, or nothing with --quiet."""
    return print if not args.quiet else (lambda *a, **k: None)


#: The scikit-learn scorer that ``train --metric NAME --n-iter-no-change`` stops on:
#: the one ranking iterations as the metric does (higher is better).
_SCORING_OF_METRIC = {"loss": "loss", "log_loss": "neg_log_loss", "roc_auc": "roc_auc",
                      "accuracy": "accuracy", "error": "accuracy"}


def _scoring_of(metric, n_classes):
    """The estimator's ``scoring`` for early stopping on ``metric`` (one-vs-rest
    AUC for more than two classes, as the metric ``roc_auc`` is then)."""
    if metric == "roc_auc" and n_classes > 2:
        return "roc_auc_ovr"
    return _SCORING_OF_METRIC[metric]


def _say_metrics(say, model, name, metrics, where):
    """One line per ``--metric``: its value at the first iteration, at the
    iteration kept and at the last one run."""
    values = model.evals_result_[name]
    kept = model.n_estimators_ if model.best_iteration_ is None else model.best_iteration_
    for metric in metrics:
        series = values[metric]
        say(f"{metric} on {where} per iteration: {series[0]:.5f} after 1, "
            f"{series[kept - 1]:.5f} after {kept} (kept), {series[-1]:.5f} after "
            f"{len(series)} (last run)")


def _write_evals_json(path, model, watched, inputs):
    """``--evals-json``: the metrics of every iteration run, the iteration kept."""
    import json

    # (An undefined value, as the AUC of a set of one class, is null.)
    evals = {name: {metric: [v if v == v else None for v in series]
                    for metric, series in metrics.items()}
             for name, metrics in model.evals_result_.items()}
    doc = {"evals_result": evals, "watched": list(watched),
           "best_iteration": model.best_iteration_, "n_estimators": model.n_estimators_}
    text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
    out = AtomicOutput(path, inputs=inputs)
    try:
        out.write_bytes(text.encode("utf-8"))
        out.commit()
    except BaseException:
        out.abort()
        raise


def _say_fit(say, model):
    """The fit's summary line and, with early stopping, the iterations it kept."""
    say(describe_fit(model))
    if model.best_iteration_ is not None:
        say(f"early stopping kept the best iteration: {model.best_iteration_} iterations")


def classification_metrics(booster, codes, raw):
    """Log-loss, ROC AUC and accuracy of the raw scores ``raw`` (n, n_outputs) against
    the class codes ``codes`` (see :func:`label_codes`).

    For two classes the AUC is that of the positive class (None when ``codes`` holds
    one class); for more, the macro average of the one-vs-rest AUCs of the classes
    that occur in ``codes`` (None when fewer than two do), and ``roc_auc_per_class``
    holds each class's AUC (None for a class that does not occur).

    Returns
    -------
    dict
        ``log_loss``, ``roc_auc``, ``roc_auc_per_class`` (None for two classes),
        ``accuracy``, ``y`` (the labels of ``codes``), ``pred`` (the predicted
        labels) and ``pred_codes`` (their class codes).
    """
    from .metrics import accuracy, log_loss_from_raw, roc_auc, roc_auc_ovr

    y = booster.classes_[codes]
    pred_codes = booster.codes_from_raw(raw)
    pred = booster.classes_[pred_codes]
    per_class = None
    if booster.n_classes_ == 2:
        y01 = codes.astype(np.float64)
        auc = roc_auc(y01, raw[:, 0]) if 0 < y01.sum() < y01.size else None
        # The log-loss of the model's probabilities, whatever its loss: log_odds is
        # F for the log-loss, 2F for the exponential loss.
        loss = log_loss_from_raw(y01, booster.loss_function.log_odds(raw)[:, 0])
    else:
        auc, aucs = roc_auc_ovr(codes, booster.proba_from_raw(raw), return_per_class=True)
        per_class = [None if np.isnan(a) else float(a) for a in aucs]
        loss = log_loss_from_raw(codes, raw)
    return {"log_loss": loss, "roc_auc": auc, "roc_auc_per_class": per_class,
            "accuracy": accuracy(y, pred), "y": y, "pred": pred, "pred_codes": pred_codes}


def _dask_frame(args, path, fmt, features=None):
    """(X, y, feature names) of ``path`` as a lazy Dask DataFrame: the workers read
    its partitions (Parquet row groups, CSV blocks) themselves."""
    import dask.dataframe as dd

    if fmt == "libsvm":
        raise DataError("--dask trains on CSV/TSV or Parquet files (LIBSVM: without --dask)")
    index_columns = []
    if fmt == "parquet":
        # The pandas index as columns (index=False), as the file reader without
        # --dask has them: a named index may be the target, and is otherwise left out
        # with a note (dask drops an unnamed one, __index_level_0__, itself).
        with warnings.catch_warnings():
            # dask's own reset_index(inplace=True) under pandas 3.1 (not ours to fix)
            warnings.filterwarnings("ignore", message="The inplace keyword")
            ddf = dd.read_parquet(path, index=False)
        index_columns = _parquet_index_columns(path)
    else:
        sep = args.delimiter or ("\t" if fmt == "tsv" else ",")
        ddf = dd.read_csv(path, sep=sep, header=None if args.no_header else "infer",
                          blocksize="64MB")
        if args.no_header:
            ddf.columns = [f"col{i}" for i in range(len(ddf.columns))]
        else:  # pandas names a column without a name "Unnamed: POSITION"
            ddf.columns = ["" if c == f"Unnamed: {i}" else c
                           for i, c in enumerate(ddf.columns)]
    columns = [str(c) for c in ddf.columns]
    target = args.target
    if not target:
        raise DataError(f"--target COL is required for {fmt.upper()} data ({path})")
    if target not in columns:
        raise DataError(f"target column {target!r} not found in {path}; columns: "
                        f"{', '.join(columns[:10])}{' ...' if len(columns) > 10 else ''}")
    if features is None:
        drop = list(args.drop or [])
        unknown = [c for c in drop if c not in columns]
        if unknown:
            raise DataError(f"--drop column(s) {unknown} not found in {path}")
        features = _other_columns(path, columns, index_columns, {target, *drop})
        if not features:
            raise DataError(f"{path} has no feature columns besides the target {target!r}")
    else:
        missing = [c for c in features if c not in columns]
        if missing:
            raise DataError(f"feature column {missing[0]!r} (used in training) is missing "
                            f"from {path}")
    return ddf[features], ddf[target], features


def _parquet_index_columns(path):
    """The columns of the Parquet file, folder or glob pattern ``path`` (what
    ``dask.dataframe.read_parquet`` reads) that hold a pandas index
    (``pandas_index_columns`` of its schema)."""
    import glob

    import pyarrow.dataset as ds

    source = sorted(glob.glob(path)) if glob.has_magic(path) else path
    return pandas_index_columns(ds.dataset(source, format="parquet").schema)


def _run_train_dask(args, fmt, out):
    """``train --dask SCHEDULER``: the workers read DATA and train
    (``DaskGradientBoostingClassifier``); the client never reads the rows."""
    try:
        from distributed import Client
    except ImportError:
        raise ImportError('--dask needs dask.distributed: pip install "dask[distributed]" '
                          '(the dask extra, pip install ".[dask]" from a checkout)') from None
    from ._split_methods import distributed_methods, is_distributed
    from .dask import DaskGradientBoostingClassifier

    params = _estimator_params(args)
    if not is_distributed(params["split_method"]):
        raise DataError("--dask trains with --split-method "
                        f"{' or '.join(m.name for m in distributed_methods())} (the "
                        "distributed fit sums histograms over the workers)")
    if args.n_features is not None:
        raise DataError("--n-features applies to LIBSVM data only")
    spec = getattr(args, "categorical", "auto")
    if spec != "auto":  # auto: "from_dtype", the text columns of the workers' frames
        params["categorical_features"] = None if spec == "none" else list(spec)
    X, y, names = _dask_frame(args, args.data, fmt)
    eval_set = None
    if args.eval:
        efmt = _fmt_for(args.eval, args.eval_format, fallback=args.format)
        Xv, yv, _ = _dask_frame(args, args.eval, efmt, features=names)
        eval_set = (Xv, yv)
    t0 = time.perf_counter()
    client = Client(args.dask, set_as_default=False)
    try:
        if isinstance(params["class_weight"], dict):  # the labels, read by the workers
            classes = np.unique(np.asarray(client.compute(y.drop_duplicates()).result()))
            params = _class_weight_for(params, classes,
                                       _labels_where(args.data, args.target))
        model = DaskGradientBoostingClassifier(**params, client=client)
        try:
            model.fit(X, y, eval_set=eval_set)
        except (ValueError, TypeError) as exc:
            raise DataError(f"cannot train on {args.data}: {one_line(exc)}") from None
    finally:
        client.close()
    fit_s = time.perf_counter() - t0
    local = model.to_local()
    local.save(out)
    say = _summary_printer(args)
    say(f"trained on the Dask cluster {args.dask}: {len(names)} features of {args.data} "
        f"(read and fit {fit_s:.2f}s)")
    _say_fit(say, local)
    say(f"model written to {out}")
    return 0


def run_train(args):
    from ._classifier import GradientBoostingClassifier

    out = str(args.output)
    fmt = _fmt_for(args.data, args.format)
    # Fail on an unwritable output, or one that is an input, before the (long) fit.
    AtomicOutput(out, inputs=[args.data, args.eval]).abort()
    metrics = getattr(args, "metric", None)
    evals_json = getattr(args, "evals_json", None)
    if evals_json:
        if not metrics:
            raise DataError("--evals-json writes the values of --metric: give --metric")
        AtomicOutput(evals_json, inputs=[args.data, args.eval, out]).abort()
    if getattr(args, "dask", None):
        if metrics:
            raise DataError("--metric is not supported with --dask (the distributed fit "
                            "records and stops on the validation loss only)")
        return _run_train_dask(args, fmt, out)
    t0 = time.perf_counter()
    if fmt == "libsvm":
        if args.target and args.target != LIBSVM_LABEL:
            raise DataError(f"LIBSVM data has no column {args.target!r}: the target is the "
                            f"label (omit --target or pass --target {LIBSVM_LABEL})")
        _check_drop(_open(args, args.data, "libsvm"), args.drop)
        if getattr(args, "categorical", "auto") not in ("auto", "none"):
            raise DataError("--categorical names columns of CSV/Parquet data (LIBSVM "
                            "features are numbers)")
        X, y = _read_training_libsvm(args, args.data, args.n_features)
        names = None
        categorical = []
    else:
        if args.n_features is not None:
            raise DataError("--n-features applies to LIBSVM data only")
        X, y, names, categorical = _read_training_table(args, args.data, fmt)
    read_s = time.perf_counter() - t0

    eval_set = None
    if args.eval:
        efmt = _fmt_for(args.eval, args.eval_format, fallback=args.format)
        if (efmt == "libsvm") != (fmt == "libsvm"):
            raise DataError("--eval data must be LIBSVM exactly when the training data is")
        if efmt == "libsvm":
            Xv, yv = _read_training_libsvm(args, args.eval, X.shape[1])
        else:
            Xv, yv, _, _ = _read_training_table(args, args.eval, efmt, features=names,
                                                categorical=categorical)
        classes = np.unique(y)  # the classes of the fit
        where = _labels_where(args.eval, None if names is None else args.target)
        eval_codes = label_codes(yv, classes, where, f"the training data {args.data}")
        eval_set = (Xv, classes[eval_codes])

    params = _class_weight_for(_estimator_params(args), np.unique(y),
                               _labels_where(args.data, None if names is None else args.target))
    if categorical:
        params["categorical_features"] = list(categorical)
    watched = None
    if metrics:
        if eval_set is None and params["n_iter_no_change"] is None:
            raise DataError("--metric needs evaluation data: --eval DATA2, or "
                            "--n-iter-no-change N (a hold-out of --validation-fraction)")
        metrics = list(dict.fromkeys(metrics))
        params.update(eval_metric=metrics,
                      scoring=_scoring_of(metrics[0], np.unique(y).size))
        watched = ("valid_0" if eval_set is not None else "validation", metrics[0])
    model = GradientBoostingClassifier(**params)
    # Progress on stderr: a bar on a terminal, plain lines elsewhere, nothing with
    # --quiet or with -v (the verbose report has the time left).
    progress = None
    if not args.quiet and not params["verbose"]:
        progress = TrainProgress(params["n_estimators"],
                                 tty=Progress.wanted(False, sys.stderr), metric=watched)
    t0 = time.perf_counter()
    try:
        model.fit(X if names is None or hasattr(X, "iloc") else _NamedFrame(X, names), y,
                  eval_set=eval_set, monitor=progress)
    except (ValueError, TypeError) as exc:
        raise DataError(f"cannot train on {args.data}: {one_line(exc)}") from None
    finally:
        if progress is not None:
            progress.close()
    fit_s = time.perf_counter() - t0
    model.save(out)
    if evals_json:
        _write_evals_json(evals_json, model, watched, [args.data, args.eval, out])

    say = _summary_printer(args)
    say(f"trained on {X.shape[0]:,} rows x {X.shape[1]} features of {args.data} "
        f"(read {read_s:.2f}s, fit {fit_s:.2f}s)")
    _say_fit(say, model)
    if watched is not None:
        _say_metrics(say, model, watched[0], metrics,
                     args.eval if eval_set is not None else "the hold-out")
    if eval_set is not None:
        Xv = eval_set[0]
        booster = model.booster_
        res = classification_metrics(booster, eval_codes,
                                     booster.predict_raw(Xv, n_jobs=args.n_jobs))
        parts = [f"log-loss {res['log_loss']:.5f}"]
        if res["roc_auc"] is not None:
            parts.append(f"AUC {res['roc_auc']:.5f}")
        parts.append(f"accuracy {res['accuracy']:.5f}")
        say(f"eval ({args.eval}, {Xv.shape[0]:,} rows): " + ", ".join(parts))
    say(f"model written to {out}")
    return 0


# ------------------------------------------------------------------ predict
def resolve_features(model, data, keep=(), drop=(), target=None):
    """Column names of the model's features in a CSV/Parquet file, in model order."""
    names = getattr(model, "feature_names_in_", None)
    n = model.n_features_in_
    if names is not None:
        names = [str(s) for s in names]
        missing = [c for c in names if c not in data.columns]
        if missing:
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise DataError(f"feature {missing[0]!r} required by the model is missing from "
                            f"{data.path}{more}")
        return names
    columns = set(data.columns)
    if n <= len(columns) and all(f"f{j}" in columns for j in range(n)):
        return [f"f{j}" for j in range(n)]
    candidates = _other_columns(data.path, data.columns, data.index_columns,
                                {*keep, *drop, *([target] if target else [])})
    if len(candidates) != n:
        raise DataError(
            f"the model has no feature names and expects {n} features (columns f0..f{n - 1} "
            f"or exactly {n} columns besides --keep/--drop/--target); {data.path} has "
            f"{len(candidates)} such columns")
    return candidates


def _iter_chunks(model, data, keep, chunk_rows, drop=(), target=None, n_features=None):
    """Chunks of ``data``: the model's features as X, the ``keep`` columns as read and
    the ``target`` column's labels."""
    _check_drop(data, drop)
    if data.kind == "libsvm":
        nf = model.n_features_in_
        if n_features is not None and n_features != nf:
            raise DataError(f"--n-features {n_features} differs from the model's {nf} features")
        bad = [k for k in keep if k != LIBSVM_LABEL]
        if bad:
            raise DataError(f"LIBSVM data has no column {bad[0]!r} (only {LIBSVM_LABEL!r})")
        if getattr(model, "categories_", None) is not None:
            raise DataError(f"the model has categorical features: it scores CSV or Parquet "
                            f"data, not LIBSVM ({data.path})")
        return data.iter_chunks(nf, list(keep), chunk_rows, target=target)
    missing = [k for k in keep if k not in data.columns]
    if missing:
        raise DataError(f"--keep column {missing[0]!r} not found in {data.path}")
    features = resolve_features(model, data, keep, drop, target)
    categories = getattr(model, "categories_", None)
    if categories is not None:
        # Categorical columns go to the model as read (it encodes them): text where
        # its categories are strings, else numbers.
        data.categorical = {features[j]: "text" if c.dtype == object else "number"
                            for j, c in enumerate(categories) if c is not None}
    return data.iter_chunks(features, list(keep), chunk_rows, target=target)


def _local_scores(model, chunks, n_jobs=None):
    for chunk in chunks:
        yield chunk, model.predict_raw(chunk.X, n_jobs=n_jobs)


def _arrow(pa, values):
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    return pa.array(values)


def proba_columns(classes):
    """The probability columns of ``predict --proba``: ``[(name, class code)]``,
    ``proba`` (the positive class) for two classes, ``proba_<label>`` per class in
    ``classes`` order otherwise."""
    labels = classes.tolist()
    if len(labels) == 2:
        return [("proba", 1)]
    return [(f"proba_{label}", k) for k, label in enumerate(labels)]


def contribution_columns(classes, feature_names, n_features):
    """The columns of ``predict --contributions``: ``[(name, class code or None,
    feature index or None)]``: ``contrib_<feature>`` per feature and
    ``contrib_expected_value`` for two classes (code None), ``contrib_<label>_<feature>``
    and ``contrib_<label>_expected_value`` per class otherwise. Features are named
    ``f<j>`` for a model without feature names."""
    features = [(_feature_label(j, feature_names), j) for j in range(n_features)]
    features.append(("expected_value", None))
    labels = classes.tolist()
    if len(labels) == 2:
        return [(f"contrib_{name}", None, j) for name, j in features]
    return [(f"contrib_{label}_{name}", k, j)
            for k, label in enumerate(labels) for name, j in features]


def run_predict(args):
    model = load_model_file(args.model)
    fmt = _fmt_for(args.data, args.format)
    data = _open(args, args.data, fmt)
    out_fmt = output_format(args.output, args.output_format)
    pa = require_pyarrow("Writing scores (Parquet or CSV)")
    keep = list(dict.fromkeys(args.keep or []))
    want_label = bool(args.label)
    want_contributions = bool(getattr(args, "contributions", False))
    want_proba = bool(args.proba) or not (want_label or want_contributions)
    if want_contributions and args.dask:
        raise DataError("--contributions are computed here, not on a Dask cluster: "
                        "leave out --dask")
    probas = proba_columns(model.classes_) if want_proba else []
    contribs = (contribution_columns(model.classes_, model.feature_names_in_,
                                     model.n_features_in_) if want_contributions else [])
    out_names = ([name for name, _ in probas] + (["label"] if want_label else [])
                 + [name for name, _, _ in contribs])
    repeated = sorted({n for n in out_names if out_names.count(n) > 1})
    if repeated:
        raise DataError(f"the output would have the column {repeated[0]!r} twice (class "
                        "labels and feature names make the names of --contributions)")
    clash = [k for k in keep if k in out_names]
    if clash:
        raise DataError(f"--keep column {clash[0]!r} has the name of an output column "
                        f"(the output columns: {', '.join(out_names)})")
    chunk_rows = _chunk_rows(args, model, sparse=data.kind == "libsvm" and not contribs)
    chunks = _iter_chunks(model, data, keep, chunk_rows, drop=args.drop or [],
                          n_features=args.n_features)
    progress = Progress(Progress.wanted(args.quiet), total=data.num_rows)
    out = AtomicOutput(args.output, out_fmt, inputs=[args.model, args.data])
    try:
        if args.dask:
            from .dask import score_chunks

            scored = score_chunks(args.dask, model, chunks, n_jobs=args.n_jobs)
        else:
            scored = _local_scores(model, chunks, args.n_jobs)
        classes = model.classes_
        n_rows = 0
        for chunk, raw in scored:
            arrays, names = [], []
            for k in keep:
                arrays.append(_arrow(pa, chunk.columns[k]))
                names.append(k)
            if probas:
                proba = model.proba_from_raw(raw, n_jobs=args.n_jobs)
                arrays += [pa.array(proba[:, code]) for _, code in probas]
                names += [name for name, _ in probas]
            if want_label:
                arrays.append(pa.array(model.labels_from_raw(raw)))
                names.append("label")
            if contribs:
                X = chunk.X
                if model.categories_ is not None:  # the codes the trees split on
                    X = model._rows(X)
                try:
                    phi = model.ensemble.predict_contributions(X, n_jobs=args.n_jobs)
                except ValueError as exc:
                    raise DataError(f"--contributions: {one_line(exc)}") from None
                arrays += [pa.array(phi[:, 0 if k is None else k, -1 if j is None else j])
                           for _, k, j in contribs]
                names += [name for name, _, _ in contribs]
            out.write_table(pa.Table.from_arrays(arrays, names=names))
            n_rows += chunk.n_rows
            progress.update(chunk.n_rows)
        schema = None
        if n_rows == 0:
            fields = [pa.field(k, t) for k, t in zip(keep, data.kept_types(keep))]
            fields += [pa.field(name, pa.float64()) for name, _ in probas]
            if want_label:
                fields.append(pa.field("label", pa.array(classes).type))
            fields += [pa.field(name, pa.float64()) for name, _, _ in contribs]
            schema = pa.schema(fields)
        out.commit(empty_schema=schema)
    except BaseException:
        out.abort()
        raise
    progress.close()
    if not args.quiet and progress.enabled:
        print(f"wrote {n_rows:,} rows to {args.output}", file=sys.stderr)
    return 0


# ----------------------------------------------------------------- evaluate
def evaluate_model(model, data, target, chunk_rows, drop=(), quiet=True, n_features=None,
                   n_jobs=None):
    """Metrics of ``model`` (a Booster) on ``data`` (streamed); returns a dict."""
    from .metrics import confusion_from_codes

    if data.kind == "libsvm":
        if target and target != LIBSVM_LABEL:
            raise DataError(f"LIBSVM data has no column {target!r}: the target is the label")
        target = LIBSVM_LABEL
    elif not target:
        raise DataError(f"--target COL is required for {data.fmt.upper()} data")
    elif target not in data.columns:
        raise DataError(f"target column {target!r} not found in {data.path}")
    chunks = _iter_chunks(model, data, [], chunk_rows, drop=drop, target=target,
                          n_features=n_features)
    progress = Progress(Progress.wanted(quiet), total=data.num_rows, label="evaluated")
    classes = model.classes_
    where = _labels_where(data.path, None if data.kind == "libsvm" else target)
    raws, labels = [], []
    for chunk, raw in _local_scores(model, chunks, n_jobs):
        if getattr(chunk.labels, "null_count", 0):
            raise DataError(f"{where} has missing values; every row needs a label")
        raws.append(raw)
        labels.append(chunk.labels)
        progress.update(chunk.n_rows)
    progress.close()
    if not raws:
        raise DataError(f"{data.path} has no data rows")
    raw = np.concatenate(raws)
    if isinstance(labels[0], np.ndarray):  # LIBSVM
        labels = np.concatenate(labels)
    else:
        import pyarrow as pa

        labels = pa.chunked_array([part for column in labels  # Arrays or ChunkedArrays
                                   for part in getattr(column, "chunks", [column])])
    codes = label_codes(labels, classes, where, "the model")
    res = classification_metrics(model, codes, raw)
    out = {
        "data": str(data.path),
        "n_rows": int(codes.shape[0]),
        "classes": [_label(c) for c in classes],
        "log_loss": res["log_loss"],
        "roc_auc": res["roc_auc"],
    }
    if res["roc_auc_per_class"] is not None:
        out["roc_auc_per_class"] = res["roc_auc_per_class"]
    out["accuracy"] = res["accuracy"]
    out["confusion_matrix"] = confusion_from_codes(codes, res["pred_codes"],
                                                   classes.shape[0]).tolist()
    return out


def _auc_kind(res):
    """What the ROC AUC of ``evaluate_model``'s result ``res`` averages, for the text
    report: nothing for two classes; the classes without an AUC for more."""
    per_class = res.get("roc_auc_per_class")
    if per_class is None:
        return ""
    absent = [repr(c) for c, a in zip(res["classes"], per_class) if a is None]
    if not absent or len(absent) >= len(per_class) - 1:
        return " (macro one-vs-rest)"
    return (f" (macro one-vs-rest over {len(per_class) - len(absent)} of {len(per_class)} "
            f"classes; not in the data: {', '.join(absent)})")


def run_evaluate(args):
    model = load_model_file(args.model)
    fmt = _fmt_for(args.data, args.format)
    data = _open(args, args.data, fmt)
    res = evaluate_model(model, data, args.target,
                         _chunk_rows(args, model, sparse=data.kind == "libsvm"),
                         drop=args.drop or [],
                         quiet=args.quiet or args.json, n_features=args.n_features,
                         n_jobs=args.n_jobs)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(f"{res['data']}: {res['n_rows']:,} rows")
    print(f"log-loss  {res['log_loss']:.6f}")
    auc = res["roc_auc"]
    print(f"ROC AUC{_auc_kind(res)}   {'n/a (one class only)' if auc is None else f'{auc:.6f}'}")
    print(f"accuracy  {res['accuracy']:.6f}")
    labels = [str(c) for c in res["classes"]]
    w = max(8, *(len(s) for s in labels)) + 2
    print("confusion matrix (rows: true, columns: predicted)")
    print(" " * w + "".join(f"{s:>{w}}" for s in labels))
    for s, row in zip(labels, res["confusion_matrix"]):
        print(f"{s:>{w}}" + "".join(f"{v:>{w}}" for v in row))
    return 0


# ------------------------------------------------------------------ inspect
def _feature_label(j, names):
    return names[j] if names is not None else f"f{j}"


def draw_tree(tree, names=None, learning_rate=None, ensemble=None, categories=None):
    """A tree (structured node array) drawn as indented text, one node per line.

    With the ``ensemble`` of a model with categorical features, a split on one reads
    ``feature in {cat_a, cat_b, ...}`` (the categories it sends to the first child:
    ``categories``, the model's ``categories_``, else their codes)."""
    from ._categories import describe_split

    lines = []
    categorical = None if ensemble is None else ensemble.categorical

    def node_text(i):
        nd = tree[i]
        if nd["feature"] < 0:
            extra = ""
            if learning_rate is not None:
                extra = f" (adds {learning_rate * nd['value']:+.6g} to F)"
            return f"[{i}] leaf value={nd['value']:.6g}{extra}  n={int(nd['n_samples'])}"
        miss = "left" if nd["missing_go_left"] else "right"
        if categorical is not None and categorical[int(nd["feature"])]:
            test = "in " + describe_split(ensemble, nd, categories)
        else:
            test = f"<= {nd['threshold']:.6g}"
        return (f"[{i}] {_feature_label(int(nd['feature']), names)} {test}  "
                f"n={int(nd['n_samples'])}  (missing -> {miss})")

    stack = [(0, "", "", True)]
    while stack:
        i, prefix, tag, root = stack.pop()
        connector = "" if root else tag
        lines.append(prefix + connector + node_text(i))
        nd = tree[i]
        if nd["feature"] >= 0:
            child_prefix = prefix if root else prefix + ("|   " if tag == "|-- " else "    ")
            # left (condition true) first, then right
            stack.append((int(nd["right"]), child_prefix, "`-- ", False))
            stack.append((int(nd["left"]), child_prefix, "|-- ", False))
    return "\n".join(lines)


def _categorical_summary(model, names):
    """Per categorical feature (format version 4) its label, index and number of
    categories (None: the model takes the codes); None for a model without them."""
    mask = model.ensemble.categorical
    if mask is None:
        return None
    categories = model.categories_
    return [{"feature": _feature_label(int(j), names), "index": int(j),
             "n_categories": None if categories is None else int(len(categories[j]))}
            for j in np.flatnonzero(mask)]


def inspect_model(path, top=10):
    """(Booster, summary dict) of the model file at ``path``."""
    from . import read_model_header

    model = load_model_file(path)
    header = read_model_header(path)
    ensemble = model.ensemble
    trees = model.trees()
    names = model.feature_names_in_
    names = None if names is None else [str(s) for s in names]
    imp = model.feature_importances_
    used = np.flatnonzero(imp > 0)  # sorted: not an array per declared feature
    order = used[np.argsort(-imp[used], kind="stable")]
    classes = [_label(c) for c in model.classes_]
    return model, {
        "path": str(path),
        "size_bytes": os.path.getsize(path),
        "format_version": header.get("format_version"),
        "library_version": header.get("library_version"),
        "loss": model.loss,
        "link": model.loss_function.link.formula,
        "classes": classes,
        "positive_class": classes[1] if len(classes) == 2 else None,
        "n_features": int(model.n_features_in_),
        "feature_names": names,
        "categorical_features": _categorical_summary(model, names),
        "n_iterations": int(ensemble.n_iterations),
        "trees_per_iteration": int(ensemble.n_outputs),
        "n_trees": int(ensemble.n_trees),
        "n_nodes": int(sum(t.shape[0] for t in trees)),
        "n_leaves": int(sum(int((t["feature"] < 0).sum()) for t in trees)),
        "max_depth_seen": max((int(t["depth"].max()) for t in trees), default=0),
        "learning_rate": float(model.learning_rate),
        "init_raw": [float(v) for v in ensemble.init_raw],
        "best_iteration": model.best_iteration_,
        "params": {k: v for k, v in model.params.items()
                   if v is None or isinstance(v, (int, float, str, bool))},
        "importances": [
            {"feature": _feature_label(int(j), names), "index": int(j),
             "importance": float(imp[j])}
            for j in order[: (len(order) if top is None else top)]
        ],
    }


def _left_categories(model, node):
    """The categories (as JSON values) a categorical split sends left."""
    from ._categories import set_codes

    codes = set_codes(model.ensemble.category_sets[int(node["threshold"])])
    values = None if model.categories_ is None else model.categories_[int(node["feature"])]
    if values is None:
        return codes.tolist()
    return [values[c] if isinstance(values[c], str) else float(values[c])
            for c in codes if c < len(values)]


def _trees_to_show(model, info, iteration, label):
    """[(class label or None, tree nodes)] of ``--tree`` (and ``--class``)."""
    n = info["n_iterations"]
    if not -n <= iteration < n:
        raise DataError(f"--tree {iteration} is out of range: the model has {n} "
                        f"iterations (0..{n - 1})")
    classes = info["classes"]
    if info["trees_per_iteration"] == 1:
        if label is not None:
            raise DataError("--class applies to models of 3 or more classes (this one has "
                            "one tree per iteration)")
        return [(None, model.ensemble.tree_nodes(iteration, 0))]
    outputs = range(len(classes))
    if label is not None:
        # The rule of evaluate's labels (``label_codes``): by value, "+1" is 1.
        code = _class_code(label, {c: k for k, c in enumerate(classes)},
                           model.classes_.dtype.kind)
        if code is None:
            raise DataError(f"--class {label!r} is not a class of the model; its classes "
                            f"are {classes}")
        outputs = [code]
    return [(classes[k], model.ensemble.tree_nodes(iteration, k)) for k in outputs]


def run_inspect(args):
    if args.class_label is not None and args.tree is None:
        raise DataError(f"--class {args.class_label} selects a tree of --tree M: pass "
                        "--tree M too (the summary covers every class)")
    model, info = inspect_model(args.model, top=None if args.json else args.top)
    if args.tree is not None:
        shown = _trees_to_show(model, info, args.tree, args.class_label)
        if args.json:
            def nodes(tree):
                out = {name: tree[name].tolist() for name in tree.dtype.names}
                categorical = model.ensemble.categorical
                if categorical is not None:
                    # The categories (codes, without a model's categories) each
                    # categorical split sends left; None for the other nodes.
                    out["left_categories"] = [
                        _left_categories(model, nd) if nd["feature"] >= 0
                        and categorical[int(nd["feature"])] else None for nd in tree]
                return out

            if info["trees_per_iteration"] == 1:  # one tree: its node arrays
                print(json.dumps(nodes(shown[0][1])))
            else:
                print(json.dumps([{"class": label, "nodes": nodes(tree)}
                                  for label, tree in shown], default=str))
            return 0
        n = info["n_iterations"]
        for label, tree in shown:
            which = (f"tree {args.tree % n} of {n}" if label is None
                     else f"iteration {args.tree % n} of {n}, tree of class {label!r}")
            rule = "x <= threshold goes to the first (|--) child"
            if model.ensemble.categorical is not None:
                rule = ("x <= threshold, or x in the set, goes to the first (|--) child; "
                        "a category unseen in training goes with missing values")
            print(f"{which}: {tree.shape[0]} nodes, {int((tree['feature'] < 0).sum())} "
                  f"leaves; {rule}")
            print(draw_tree(tree, info["feature_names"], info["learning_rate"],
                            model.ensemble, model.categories_))
        return 0
    if args.json:
        print(json.dumps(info, indent=2, default=str))
        return 0
    print(f"model      {info['path']} ({info['size_bytes']:,} bytes, format version "
          f"{info['format_version']}, written by gbc-core {info['library_version']})")
    print(f"loss       {info['loss']} ({info['link']})")
    if info["positive_class"] is not None:
        print(f"classes    {info['classes']} (positive class: {info['positive_class']!r})")
    else:
        print(f"classes    {len(info['classes'])}: {info['classes']}")
    names = info["feature_names"]
    if names is None:
        print(f"features   {info['n_features']} (no names: f0..f{info['n_features'] - 1}, "
              "by position)")
    else:
        shown = ", ".join(names[:12]) + (" ..." if len(names) > 12 else "")
        print(f"features   {info['n_features']}: {shown}")
    categorical = info["categorical_features"]
    if categorical:
        shown = ", ".join(d["feature"] + ("" if d["n_categories"] is None else
                                          f" ({d['n_categories']} categories)")
                          for d in categorical[:12])
        print(f"categorical {len(categorical)}: {shown}{' ...' if len(categorical) > 12 else ''}")
    per = info["trees_per_iteration"]
    trees = (f"trees      {info['n_trees']}"
             + (f" ({info['n_iterations']} iterations x {per}, one per class)" if per > 1
                else "")
             + f": {info['n_nodes']:,} nodes, {info['n_leaves']:,} leaves, depth <= "
             f"{info['max_depth_seen']}; learning rate {info['learning_rate']:g}")
    if per == 1:
        print(f"{trees}, F0 = {info['init_raw'][0]:g}")
    else:
        print(trees)
        print("F0         " + ", ".join(f"{label!r}: {v:g}" for label, v in
                                        zip(info["classes"], info["init_raw"])))
    if info["best_iteration"] is not None:
        print(f"early stopping: best iteration {info['best_iteration']}")
    if info["importances"]:
        print(f"importances (top {len(info['importances'])}):")
        w = max(len(d["feature"]) for d in info["importances"])
        for d in info["importances"]:
            bar = "#" * int(round(40 * d["importance"]))
            print(f"  {d['feature']:<{w}}  {d['importance']:.4f}  {bar}")
    else:
        print("importances: all zero (no splits)")
    return 0


# ------------------------------------------------------------------- export
def run_export(args):
    from .onnx import to_onnx

    model = load_model_file(args.model)
    # An output that is the input, or not writable, fails before the export.
    out = AtomicOutput(args.output, inputs=[args.model])
    try:
        try:
            proto = to_onnx(model, target_opset=args.opset)
        except ValueError as exc:
            raise DataError(f"cannot export {args.model}: {one_line(exc)}") from None
        out.write_bytes(proto.SerializeToString())
        out.commit()
    except BaseException:
        out.abort()
        raise
    if not args.quiet:
        print(f"ONNX model ({model.n_classes_} classes, {model.n_estimators_} iterations, "
              f"opset {proto.opset_import[0].version}) written to {args.output}")
    return 0
