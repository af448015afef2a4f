"""Data files for the batch commands: CSV, Parquet and LIBSVM/svmlight text.

CSV and Parquet are read and written with pyarrow (the optional ``io`` extra
extra, imported lazily); LIBSVM text is read by a small chunked reader of our own
(NumPy, and scipy.sparse for its rows: a LIBSVM file's rows are CSR matrices, never
densified). Every reader can stream: ``iter_chunks`` yields bounded blocks of rows
in file order, so scoring a file needs memory proportional to the chunk size only.
"""

import gzip
import json
import os
import re

import numpy as np

from ._safe_output import AtomicFile, find_same_file

__all__ = [
    "DataError",
    "open_data",
    "detect_format",
    "output_format",
    "AtomicOutput",
    "parse_libsvm_lines",
]

#: Formats by file extension; ``.train``/``.test`` and other names need ``--format``.
EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".svm": "libsvm",
    ".libsvm": "libsvm",
    ".svmlight": "libsvm",
}
FORMATS = ("csv", "tsv", "parquet", "libsvm")
_FORMAT_ALIASES = {"svmlight": "libsvm", "svm": "libsvm", "pq": "parquet"}

#: Name of the label column of a LIBSVM file.
LIBSVM_LABEL = "label"


class DataError(ValueError):
    """A data or output file cannot be used; the message names the problem."""


def one_line(text):
    """Collapse a (possibly multi-line) message to one line."""
    return " ".join(str(text).split())


def require_pyarrow(what="CSV and Parquet files"):
    try:
        import pyarrow  # noqa: F401
        import pyarrow.compute  # noqa: F401
    except ImportError:
        raise DataError(
            f'{what} need pyarrow, which is not installed: pip install pyarrow '
            '(the io extra, pip install ".[io]" from a checkout)'
        ) from None
    import pyarrow as pa

    # pyarrow imports pandas (when installed) on its first conversion from or to
    # NumPy, inside code that loses a KeyboardInterrupt raised during that import:
    # a Ctrl-C or SIGTERM arriving then would be ignored and the run would go on.
    # Importing it here, before any output is opened, closes that window.
    try:
        import pandas  # noqa: F401
    except ImportError:
        pass
    return pa


# --------------------------------------------------------------------- formats
def _strip_gz(path):
    name = os.path.basename(str(path)).lower()
    return name[:-3] if name.endswith(".gz") else name


def detect_format(path, fmt=None):
    """The format of ``path``: ``fmt`` if given, else from the file extension."""
    if fmt:
        fmt = _FORMAT_ALIASES.get(fmt.lower(), fmt.lower())
        if fmt not in FORMATS:
            raise DataError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
        return fmt
    ext = os.path.splitext(_strip_gz(path))[1]
    if ext in EXTENSIONS:
        return EXTENSIONS[ext]
    hint = " (e.g. --format libsvm for LIBSVM text)" if ext in (
        ".train", ".test", ".txt", ".data") else ""
    raise DataError(
        f"cannot tell the format of {str(path)!r} from its extension {ext or '(none)'!r}; "
        f"pass --format {{{','.join(FORMATS)}}}{hint}"
    )


def output_format(path, fmt=None):
    """Format of an output file: parquet or csv (by extension or ``fmt``)."""
    if fmt:
        fmt = _FORMAT_ALIASES.get(fmt.lower(), fmt.lower())
    else:
        ext = os.path.splitext(str(path).lower())[1]
        fmt = EXTENSIONS.get(ext)
    if fmt not in ("parquet", "csv", "tsv"):
        raise DataError(
            f"cannot write scores as {fmt or os.path.splitext(str(path))[1] or 'a file without extension'}"
            f" ({str(path)!r}); use a .parquet or .csv output or --output-format parquet|csv"
        )
    return fmt


def _check_readable(path):
    path = str(path)
    if not os.path.exists(path):
        raise DataError(f"file not found: {path}")
    if os.path.isdir(path):
        raise DataError(f"{path} is a directory, not a data file")
    if not os.access(path, os.R_OK):
        raise DataError(f"cannot read {path}: permission denied")


def open_data(path, fmt=None, *, delimiter=None, header=True, n_features=None):
    """Open a data file for reading; returns a ``TableData`` or ``LibsvmData``."""
    fmt = detect_format(path, fmt)
    _check_readable(path)
    if fmt == "libsvm":
        return LibsvmData(path, n_features=n_features)
    return TableData(path, fmt, delimiter=delimiter, header=header)


# ------------------------------------------------------------------- chunks
class Chunk:
    """A block of rows: ``X`` (float32, C order; a float32 CSR matrix for LIBSVM),
    the kept columns and the labels.

    ``columns`` maps each kept column's name to its values as read (a pyarrow array,
    or a list of the label words of a LIBSVM file); ``labels`` holds the target's
    values when one was asked for, else None.
    """

    __slots__ = ("X", "columns", "labels", "n_rows")

    def __init__(self, X, columns, n_rows, labels=None):
        self.X = X
        self.columns = columns
        self.labels = labels
        self.n_rows = n_rows


def _is_temporal(arrow_type, pa):
    """Whether an Arrow type holds dates, times, durations or intervals."""
    return pa.types.is_temporal(arrow_type) or pa.types.is_interval(arrow_type)


def _temporal_feature_error(name, what, path):
    """The error for a feature column of dates, times or durations (``what``)."""
    return DataError(
        f"feature column {name!r} of {path} holds {what}, not numbers: convert it to a "
        "number first (e.g. seconds since the epoch, or a duration in seconds) or drop it "
        f"with --drop {name}"
    )


def _arrow_numbers(col, name, path, pa, pc):
    """(values, missing) of a numeric/boolean pyarrow column: its numbers as NumPy,
    integers as integers (so that the caller rounds each to float32 once, as the
    estimator converts an integer array: through float64, one beyond 2**53 would be
    rounded twice), and a mask of its nulls (None without).

    Booleans are 1.0/0.0; dates, times, durations and any other type are an error
    naming the column.
    """
    t = col.type
    if _is_temporal(t, pa):
        raise _temporal_feature_error(name, f"dates, times or durations (type {t})", path)
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_null(t) or pa.types.is_decimal(t)):
        raise DataError(
            f"feature column {name!r} of {path} is not numeric (type {t}); every feature "
            f"must be a number (drop it with --drop {name})"
        )
    missing = None
    if pa.types.is_integer(t):
        if col.null_count:
            missing = pc.is_null(col).to_numpy(zero_copy_only=False)
            col = pc.fill_null(col, 0)
        return col.to_numpy(zero_copy_only=False), missing
    if not (pa.types.is_float64(t) or pa.types.is_float32(t)):
        col = pc.cast(col, pa.float64())
    if col.null_count:
        col = pc.fill_null(col, float("nan"))
    # float32 stays float32 (exact); float64 is rounded to float32 by the caller, as
    # the estimator does for in-memory arrays.
    return col.to_numpy(zero_copy_only=False), missing


def _features_from_arrow(batch, names, path, pa, pc, lossy=None, skip=()):
    """The feature columns ``names`` of ``batch`` as a float32 (n, len(names)) array;
    the names of the columns holding a value float32 does not represent (the rule of
    the estimator's warning, ``_validation.lossy_values``) are appended to
    ``lossy`` when it is a list. The columns ``skip`` (categorical ones, read by
    :func:`categorical_values`) are NaN."""
    from ._validation import lossy_values, may_lose

    # Fill feature-major, then one transposing copy: much faster than strided
    # column writes into a row-major array.
    cols = np.empty((len(names), batch.num_rows), dtype=np.float32)
    for j, name in enumerate(names):
        if name in skip:
            cols[j] = np.nan
            continue
        values, missing = _arrow_numbers(batch.column(name), name, path, pa, pc)
        with np.errstate(over="ignore", invalid="ignore"):
            cols[j] = values
        if missing is not None:
            cols[j][missing] = np.nan
        if (lossy is not None and may_lose(values.dtype, cols.dtype)
                and lossy_values(values, cols[j]).any()):
            lossy.append(name)
    return np.ascontiguousarray(cols.T)


def is_text_type(arrow_type, pa):
    """Whether a column of this Arrow type is categorical for ``--categorical auto``:
    text (string, large string) or dictionary-encoded (a pandas category column
    written to Parquet, whatever its values)."""
    return (pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
            or pa.types.is_dictionary(arrow_type)
            or getattr(pa.types, "is_string_view", lambda t: False)(arrow_type))


def categorical_values(column, name, path, pa, pc):
    """The values of the categorical feature column ``name`` as the estimator takes
    them: text (string or a dictionary of strings) as an object array of str, None
    where missing; numbers and booleans as float64 (1.0/0.0), NaN where missing.

    A CSV column comes here read as text, its missing-value words (``""``, ``NA``,
    ...) already nulls (``TableData._label_column``), so its categories are the
    texts as written.
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    t = column.type
    if pa.types.is_dictionary(t):
        column = column.dictionary_decode()
        t = column.type
    if is_text_type(t, pa):
        return column.to_numpy(zero_copy_only=False).astype(object, copy=False)
    values, missing = _arrow_numbers(column, name, path, pa, pc)
    values = values.astype(np.float64)
    if missing is not None:
        values[missing] = np.nan
    return values


def mixed_rows(X, values, names, frame):
    """Rows of numeric and categorical features in one object: ``X`` (float32, the
    numeric columns) with the categorical columns ``values`` ({index: values of
    :func:`categorical_values`}) in their places.

    ``frame`` true: a pandas DataFrame with the columns ``names`` (the numeric ones
    float32, as ``X`` holds them) where pandas is installed, else an object array
    (then the caller records the names); false: an object array.
    """
    if frame:
        try:
            import pandas as pd
        except ImportError:
            pass
        else:
            return pd.DataFrame({name: pd.Series(values[j], dtype=values[j].dtype)
                                 if j in values else X[:, j]
                                 for j, name in enumerate(names)}, copy=False)
    out = np.empty(X.shape, dtype=object)
    numeric = [j for j in range(X.shape[1]) if j not in values]
    out[:, numeric] = X[:, numeric]
    for j, column in values.items():
        out[:, j] = column
    return out


_CSV_COLUMN_RE = re.compile(r"In CSV column #(\d+)")
_CSV_INVALID_VALUE_RE = re.compile(r"invalid value '(.*)'$")
#: An ISO-8601 date, date and time, or time of day (as pyarrow's CSV reader infers).
_ISO_DATETIME_RE = re.compile(r"\s*(\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}.*)?"
                              r"|\d{1,2}:\d{2}(:\d{2}(\.\d*)?)?)\s*")

#: Bytes per block of the streaming CSV reader (which reads up to 32 blocks ahead);
#: the kind of each feature column (numbers or true/false) is read from the first.
CSV_BLOCK_SIZE = 1 << 20

#: The words of a CSV boolean (pyarrow's defaults without "1" and "0": a column of
#: 1/0 is numeric, and mixing 1/0 with true/false in one column is an error).
CSV_TRUE_VALUES = ("true", "True", "TRUE")
CSV_FALSE_VALUES = ("false", "False", "FALSE")


def _number_of_text(text):
    """The number a CSV label ``text`` writes, when that number writes ``text`` back
    exactly (``"7"``, ``"-2"``, ``"0.5"``, ``"1e-05"``; not ``"007"``, ``"+1"``,
    ``" 7"``, ``"1.50"`` or ``"inf"``): an int, a finite float, or None."""
    try:
        number = int(text)
    except ValueError:
        pass
    else:
        return number if str(number) == text else None
    try:
        number = float(text)
    except ValueError:
        return None
    return number if repr(number) == text and number - number == 0 else None


def csv_labels(column):
    """The labels of a CSV target column read as text (a pyarrow string array without
    nulls), typed so that every label keeps its value.

    The column is booleans when every label is a boolean word (``true``/``false``, at
    most one word for each), numbers when every label is the text of its number (see
    ``_number_of_text``): int64 (uint64 beyond int64 when none is negative) when all
    are integers, else float64 (integers then within 2**53, exact in float64); in
    both cases only when no two texts become the same value (``1`` beside ``1.0``).
    Otherwise, or when the integers do not fit 64 bits, the labels are the texts as
    written (``007`` beside ``7`` are two classes).

    Returns
    -------
    ndarray of shape (n_rows,)
        bool, int64, uint64, float64, or object (str).
    """
    if hasattr(column, "combine_chunks"):
        column = column.combine_chunks()
    encoded = column.dictionary_encode()
    texts = encoded.dictionary.to_pylist()
    indices = encoded.indices.to_numpy(zero_copy_only=False)

    def typed(values, dtype):
        return np.asarray(values, dtype=dtype)[indices]

    words = {**dict.fromkeys(CSV_TRUE_VALUES, True), **dict.fromkeys(CSV_FALSE_VALUES, False)}
    if texts and all(t in words for t in texts):
        booleans = [words[t] for t in texts]
        if len(set(booleans)) == len(texts):
            return typed(booleans, np.bool_)
    numbers = [_number_of_text(t) for t in texts]
    if texts and all(v is not None for v in numbers) and len(set(numbers)) == len(texts):
        if all(isinstance(v, int) for v in numbers):
            low, high = min(numbers), max(numbers)
            if -2**63 <= low and high < 2**63:
                return typed(numbers, np.int64)
            if 0 <= low and high < 2**64:
                return typed(numbers, np.uint64)
        elif all(isinstance(v, float) or abs(v) <= 2**53 for v in numbers):
            return typed(numbers, np.float64)
    return typed(texts, object)


def _rebatch(batches, chunk_rows, pa):
    """Tables of exactly ``chunk_rows`` rows (the last may be shorter), in order."""
    pending, n = [], 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        n += batch.num_rows
        while n >= chunk_rows:
            table = pa.Table.from_batches(pending)
            yield table.slice(0, chunk_rows)
            rest = table.slice(chunk_rows)
            pending = [b for b in rest.to_batches() if b.num_rows]
            n = rest.num_rows
    if n:
        yield pa.Table.from_batches(pending)


def _unique(names):
    return list(dict.fromkeys(names))


def pandas_index_columns(schema):
    """The columns of a Parquet file that hold the index of the pandas DataFrame it was
    written from (``DataFrame.to_parquet`` stores an index other than 0, 1, 2, ...,
    such as a sampled or filtered frame's, as ``__index_level_0__``; a named index
    under its name), read from the pandas metadata pyarrow keeps in the schema; []
    when the file has none."""
    metadata = (schema.metadata or {}).get(b"pandas")
    if not metadata:
        return []
    try:
        index = json.loads(metadata).get("index_columns", [])
    except (ValueError, AttributeError):  # not pandas' JSON: no index to leave out
        return []
    # (a RangeIndex is described by a dict and not stored as a column)
    return [name for name in index if isinstance(name, str) and name in schema.names]


class TableData:
    """CSV or Parquet file read through pyarrow.

    Kept columns (``--keep``) are read as written: CSV columns as text (never
    type-inferred), Parquet columns with their Parquet type. CSV feature columns are
    read as numbers, or as booleans (1.0/0.0) when the first block of the file holds
    only true/false in them; every field may contain the delimiter, quotes and line
    breaks when quoted (RFC 4180).

    ``columns`` names the file's columns in file order, ``index_columns`` those of
    them that hold a pandas index (``pandas_index_columns``; CSV: none).
    """

    kind = "table"

    def __init__(self, path, fmt, delimiter=None, header=True):
        self.pa = require_pyarrow()
        import pyarrow.compute as pc

        self.pc = pc
        self.path = str(path)
        self.fmt = fmt
        self.header = header
        self.delimiter = delimiter or ("\t" if fmt == "tsv" else ",")
        self.num_rows = None
        self.columns = None
        self._parquet = None
        self._single_line = None
        try:
            if fmt == "parquet":
                import pyarrow.parquet as pq

                # pre_buffer=False: with pre-buffering, iter_batches keeps the column
                # chunks already read, so memory would grow with the file size.
                self._parquet = pq.ParquetFile(self.path, pre_buffer=False)
                schema = self._parquet.schema_arrow
                self.num_rows = self._parquet.metadata.num_rows
            else:
                schema = self._probe_csv()
        except DataError:
            raise
        except (self.pa.ArrowException, OSError, ValueError) as exc:
            raise DataError(f"cannot read {self.path} as {fmt.upper()}: {one_line(exc)}") from None
        self.columns = list(schema.names)
        #: The categorical feature columns: {name: "text" or "number"}, how a CSV
        #: file reads them (Parquet columns keep their type); see ``categorical_values``.
        self.categorical = {}
        self.index_columns = pandas_index_columns(schema) if fmt == "parquet" else []
        # Parquet: the file's types; CSV: the types inferred from the first block.
        self._types = {field.name: field.type for field in schema}
        if len(set(self.columns)) != len(self.columns):
            dup = sorted({c for c in self.columns if self.columns.count(c) > 1})
            raise DataError(f"{self.path} has duplicate column names: {dup[:5]}")

    # -- CSV helpers
    def _csv_source(self):
        """The CSV file, or the in-memory copy of a file made of one unterminated line."""
        if self._single_line is not None:
            return self.pa.BufferReader(self._single_line)
        return self.path

    def _open_csv(self, include, column_types):
        """A streaming reader of the columns ``include`` (all when None)."""
        import pyarrow.csv as pacsv

        return pacsv.open_csv(self._csv_source(), **self._csv_options(include, column_types))

    def _csv_options(self, include, column_types):
        """The options of pyarrow's CSV readers for the columns ``include`` (all when
        None), as keyword arguments."""
        import pyarrow.csv as pacsv

        ropts = pacsv.ReadOptions(block_size=CSV_BLOCK_SIZE)
        if not self.header:
            if self.columns is None:  # probing the file
                ropts.autogenerate_column_names = True
            else:
                ropts.column_names = self.columns
        # Text stays text (strings_can_be_null=False: "" and "NA" of a kept column are
        # kept); the missing-value words make nulls in number and boolean columns.
        copts = pacsv.ConvertOptions(
            strings_can_be_null=False, column_types=column_types,
            true_values=list(CSV_TRUE_VALUES), false_values=list(CSV_FALSE_VALUES))
        if include is not None:
            copts.include_columns = list(include)
        # newlines_in_values: a quoted field may hold line breaks (RFC 4180); without
        # it the reader loses track once such a field straddles a block boundary.
        popts = pacsv.ParseOptions(delimiter=self.delimiter, newlines_in_values=True)
        return dict(read_options=ropts, parse_options=popts, convert_options=copts)

    def _probe_csv(self):
        """The schema of the CSV file, with the types inferred from its first block.

        A file of one line without a line break (a header without data rows) is read
        from memory with the line break added: pyarrow cannot read it otherwise.
        """
        try:
            reader = self._open_csv(None, None)
        except self.pa.ArrowInvalid as exc:
            if "Empty CSV file" not in str(exc):
                raise
            self._single_line = self._unterminated_line()
            reader = self._open_csv(None, None)
        schema = reader.schema
        reader.close()
        if not self.header:
            schema = self.pa.schema([field.with_name(f"col{i}")
                                     for i, field in enumerate(schema)])
        return schema

    def _unterminated_line(self):
        """The content of a file of one line without a line break, plus a line break,
        as a buffer that Arrow allocated."""
        content = []
        with self.pa.input_stream(self.path, compression="detect") as stream:
            while True:
                block = stream.read(CSV_BLOCK_SIZE)
                if not block:
                    break
                if b"\n" in block or b"\r" in block:
                    raise DataError(f"cannot read {self.path} as CSV: its first line is "
                                    f"longer than {CSV_BLOCK_SIZE:,} bytes")
                content.append(block)
        if not b"".join(content).strip():
            raise DataError(f"{self.path} is empty (no header line)")
        # A copy in Arrow's own memory, not a view of a Python bytes object: the
        # reader's background threads hold slices of it, and the last one released
        # on such a thread while Python shuts down would take the GIL there (to
        # release the bytes object), which ends the process with std::terminate.
        copy = self.pa.BufferOutputStream()
        for block in content:
            copy.write(block)
        copy.write(b"\n")
        return copy.getvalue()

    def _csv_feature_types(self, features):
        """The type each CSV feature column is read as: bool or float64."""
        pa = self.pa
        types = {}
        for name in features:
            if self.categorical.get(name) == "text":  # its categories: the texts
                types[name] = pa.string()
                continue
            inferred = self._types[name]
            if _is_temporal(inferred, pa):
                raise _temporal_feature_error(
                    name, f"dates or times (e.g. ISO-8601 text, read as {inferred})", self.path)
            types[name] = pa.bool_() if pa.types.is_boolean(inferred) else pa.float64()
        empty = [name for name in features if pa.types.is_null(self._types[name])
                 and self.categorical.get(name) != "text"]
        if empty:
            types.update(self._kinds_past_the_first_block(empty))
        return types

    def _kinds_past_the_first_block(self, names):
        """The types of the CSV feature columns ``names``, empty in the whole first
        block (where pyarrow infers a type): bool when the first value further on is
        a true/false word, else float64 (also for a column empty throughout). Reads
        these columns as text until each has a value: past the first block only for
        such columns."""
        pa, pc = self.pa, self.pc
        kinds = {}
        undecided = list(names)
        reader = self._open_csv(undecided, {name: pa.string() for name in undecided})
        try:
            for batch in reader:
                for name in list(undecided):
                    # (the missing-value words as nulls, as in a number column)
                    column = self._label_column(batch.column(name))
                    if column.null_count < len(column):
                        first = pc.drop_null(column)[0].as_py()
                        boolean = first in CSV_TRUE_VALUES + CSV_FALSE_VALUES
                        kinds[name] = pa.bool_() if boolean else pa.float64()
                        undecided.remove(name)
                if not undecided:
                    break
        finally:
            reader.close()
        return {name: kinds.get(name, pa.float64()) for name in names}

    def _label_column(self, column):
        """A CSV text label column with the missing-value words (``""``, ``NA``, ...) as
        nulls, as they are in number columns; other columns unchanged."""
        pa, pc = self.pa, self.pc
        if self.fmt == "parquet" or not pa.types.is_string(column.type):
            return column
        import pyarrow.csv as pacsv

        missing_words = pa.array(pacsv.ConvertOptions().null_values, pa.string())
        missing = pc.is_in(column, value_set=missing_words)
        return pc.if_else(missing, pa.scalar(None, column.type), column)

    def _translate(self, exc, feature_types):
        """A pyarrow CSV error as a DataError naming the column and what to do."""
        msg = one_line(exc)
        m = _CSV_COLUMN_RE.search(msg)
        if not m or not 0 <= int(m.group(1)) < len(self.columns):
            return DataError(f"cannot read {self.path} as {self.fmt.upper()}: {msg}")
        col = self.columns[int(m.group(1))]
        if col not in feature_types:
            return DataError(f"cannot read column {col!r} of {self.path}: {msg}")
        value = _CSV_INVALID_VALUE_RE.search(msg)
        value = value.group(1) if value else None
        boolean = value in CSV_TRUE_VALUES + CSV_FALSE_VALUES
        if value is not None and (self.pa.types.is_boolean(feature_types[col]) or boolean):
            expected = "numbers" if boolean else "true/false"
            return DataError(
                f"feature column {col!r} of {self.path} mixes numbers and true/false: "
                f"{value!r} where {expected} were expected; a column holds numbers or "
                "true/false (and empty values), not both: write it as 1/0 or as true/false "
                "throughout"
            )
        if value is not None and _ISO_DATETIME_RE.fullmatch(value):
            return _temporal_feature_error(col, f"dates or times (e.g. {value!r})", self.path)
        return DataError(
            f"feature column {col!r} of {self.path} is not numeric: {msg} "
            f"(drop it with --drop {col}, or train with it as a category: --categorical "
            "naming it)"
        )

    def check_columns(self, names, role):
        missing = [n for n in names if n not in self.columns]
        if missing:
            shown = ", ".join(repr(m) for m in missing[:5])
            more = f" (and {len(missing) - 5} more)" if len(missing) > 5 else ""
            raise DataError(f"{role} {shown}{more} not found in {self.path}")

    def text_columns(self, names):
        """The columns of ``names`` that ``--categorical auto`` makes categorical:
        text columns (``is_text_type``; Parquet's dictionary-encoded ones too); in a
        CSV file, those whose first block holds a value that is neither a number,
        true/false nor a date or time (a column mixing those only is text to
        pyarrow, and the usual error of such a column)."""
        text = [name for name in names if is_text_type(self._types[name], self.pa)]
        if self.fmt == "parquet" or not text:
            return text
        pa, pc = self.pa, self.pc
        reader = self._open_csv(text, {name: pa.string() for name in text})
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            return text
        finally:
            reader.close()
        words = pa.array(CSV_TRUE_VALUES + CSV_FALSE_VALUES, pa.string())
        out = []
        for name in text:
            column = pc.drop_null(self._label_column(batch.column(name)))
            column = column.filter(pc.invert(pc.is_in(column, value_set=words)))
            column = column.filter(pc.invert(pc.match_substring_regex(
                column, pattern=f"^(?:{_ISO_DATETIME_RE.pattern})$")))
            try:
                pc.cast(column, pa.float64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                out.append(name)
        return out

    def kept_types(self, names):
        """The Arrow types of the kept columns ``names`` in the output."""
        if self.fmt == "parquet":
            return [self._types[name] for name in names]
        return [self.pa.string() for _ in names]

    # -- reading
    def read(self, features, target):
        """The whole file, columns ``features`` and ``target``, as a pyarrow Table."""
        columns = _unique(list(features) + [target])
        self.check_columns(columns, "column")
        feature_types = {}
        try:
            if self.fmt == "parquet":
                return self._parquet.read(columns=columns)
            import pyarrow.csv as pacsv

            feature_types = self._csv_feature_types(features)
            # The target is read as text, then typed by ``csv_labels``.
            table = pacsv.read_csv(self._csv_source(), **self._csv_options(
                columns, {target: self.pa.string(), **feature_types}))
            index = table.schema.get_field_index(target)
            return table.set_column(index, target, self._label_column(table.column(target)))
        except DataError:
            raise
        except (self.pa.ArrowException, OSError, ValueError) as exc:
            raise self._translate(exc, feature_types) from None

    def features(self, table, names, lossy=None, frame=False):
        """The feature columns ``names`` of ``table``: a float32 array, or with
        categorical columns (``categorical``) the rows of ``mixed_rows``."""
        skip = {name for name in names if name in self.categorical}
        X = _features_from_arrow(table, names, self.path, self.pa, self.pc, lossy, skip)
        if not skip:
            return X
        values = {j: categorical_values(self._label_column(table.column(name)), name,
                                        self.path, self.pa, self.pc)
                  for j, name in enumerate(names) if name in skip}
        return mixed_rows(X, values, names, frame)

    def _csv_tables(self, feature_types, keep, target, chunk_rows):
        """CSV tables of ``chunk_rows`` rows: features typed, kept columns and the
        target as text.

        A kept column that is also a feature is read twice, by two readers that go
        through the file side by side: as a number for the model, as text for the
        output. Returns an iterator of ``(table, text table or None)``.
        """
        pa = self.pa
        text = {name: pa.string() for name in keep}
        kept_features = [name for name in keep if name in feature_types]
        # The target is read as text: a type inferred from the first block would fail
        # on a later label of another kind (1, 2, ... then "x"); the labels are
        # matched with the model's classes by value (``_commands.label_codes``).
        label_type = {target: pa.string()} if target else {}
        columns = _unique(list(feature_types) + list(keep) + ([target] if target else []))
        main = _rebatch(self._open_csv(columns, {**text, **label_type, **feature_types}),
                        chunk_rows, pa)
        if not kept_features:
            return ((table, None) for table in main)
        texts = _rebatch(self._open_csv(kept_features, text), chunk_rows, pa)
        return zip(main, texts, strict=True)

    def iter_chunks(self, feature_names, keep, chunk_rows, target=None):
        """Yield ``Chunk`` objects of about ``chunk_rows`` rows, in file order.

        ``keep``: columns passed through as read (CSV: text); ``target``: the label
        column (``Chunk.labels``; CSV: text, Parquet: its type).
        """
        self.check_columns(list(feature_names) + list(keep) + ([target] if target else []),
                           "column")
        feature_types = {}
        try:
            if self.fmt == "parquet":
                columns = _unique(list(feature_names) + list(keep) + ([target] if target else []))
                tables = ((batch, None) for batch in self._parquet.iter_batches(
                    batch_size=chunk_rows, columns=columns, use_threads=True))
            else:
                feature_types = self._csv_feature_types(feature_names)
                tables = self._csv_tables(feature_types, keep, target, chunk_rows)
            for table, texts in tables:
                if table.num_rows == 0:
                    continue
                X = self.features(table, feature_names)
                cols = {k: (texts if texts is not None and k in texts.column_names
                            else table).column(k) for k in keep}
                labels = self._label_column(table.column(target)) if target else None
                yield Chunk(X, cols, table.num_rows, labels)
        except DataError:
            raise
        except (self.pa.ArrowException, OSError, ValueError) as exc:
            raise self._translate(exc, feature_types) from None


# ------------------------------------------------------------------- LIBSVM
def _floats(text):
    """All whitespace-separated numbers of ``text`` (str or bytes) as float64; a word
    that is not one number is a ValueError."""
    import warnings

    try:
        with warnings.catch_warnings():
            # (numpy < 2.3 stops at a bad word with a DeprecationWarning)
            warnings.simplefilter("error", DeprecationWarning)
            return np.fromstring(text, sep=" ")  # C speed; raises on a bad word
    except (AttributeError, ValueError, DeprecationWarning):
        return np.array([float(t) for t in text.split()], dtype=np.float64)


def _libsvm_pairs_per_line(block, n_lines):
    """The number of ``index:value`` words of each of the ``n_lines`` lines of
    ``block``, or None when some line is not a label followed by such words.

    ``block`` is the lines as bytes, comments removed, none blank, each but the last
    ended by a line break (the last may be too). A line is a word without a colon,
    then words with one colon inside (not at either end): so each line's numbers,
    read for the whole block at once, are its own (a stray number on one line cannot
    make up for a value missing on another). Whitespace here is every byte up to
    the space; a control character is then refused when the words are read as
    numbers.
    """
    a = np.frombuffer(block, dtype=np.uint8)
    gap = np.ones(a.shape[0] + 2, dtype=bool)
    gap[1:-1] = a <= 32
    edges = np.flatnonzero(gap[1:] != gap[:-1])  # start, end, start, end, ... of words
    starts, ends = edges[0::2], edges[1::2]
    line_starts = np.flatnonzero(a[:-1] == 10) + 1
    if line_starts.shape[0] + 1 != n_lines:
        return None
    first_words = np.searchsorted(starts, np.concatenate(([0], line_starts)))
    words_per_line = np.diff(np.append(first_words, starts.shape[0]))
    if (words_per_line < 1).any():
        return None
    pair_word = np.ones(starts.shape[0], dtype=bool)
    pair_word[first_words] = False
    colons = np.flatnonzero(a == 58)
    # The k-th colon lies inside the k-th pair word: one colon in each, none in labels.
    if colons.shape[0] != int(pair_word.sum()):
        return None
    if not ((starts[pair_word] < colons) & (colons < ends[pair_word] - 1)).all():
        return None
    return words_per_line - 1


def _is_one_libsvm_line(line):
    """Whether the text ``line`` (without its comment) alone reads as LIBSVM."""
    block = line.rstrip("\r\n")
    counts = _libsvm_pairs_per_line(block.encode("utf-8", "replace"), 1)
    if counts is None:
        return False
    try:
        return _floats(block.replace(":", " ")).shape[0] == 1 + 2 * int(counts[0])
    except ValueError:
        return False


def _libsvm_line_error(lines, first_line_no, path, n_features):
    """Find the first malformed line and return a DataError naming it."""
    for k, line in enumerate(lines):
        line = line.split("#", 1)[0]
        toks = line.split()
        if not toks:
            continue
        where = f"{path}: line {first_line_no + k}"
        seen = set()
        try:
            label = float(toks[0])
        except ValueError:
            return DataError(f"{where}: the label {toks[0]!r} is not a number (LIBSVM: "
                             "'label index:value ...')")
        if not np.isfinite(label):
            return DataError(f"{where}: the label {toks[0]!r} is not a finite number")
        for tok in toks[1:]:
            idx, sep, val = tok.partition(":")
            if not sep:
                return DataError(f"{where}: token {tok!r} is not 'index:value'")
            if idx == "qid":
                return DataError(f"{where}: 'qid:' ranking groups are not supported")
            try:
                i = int(idx)
                float(val)
            except ValueError:
                return DataError(f"{where}: token {tok!r} is not 'index:value' with an "
                                 "integer index and a numeric value")
            if i < 1:
                return DataError(f"{where}: feature index {i} < 1 (LIBSVM indices are 1-based)")
            if n_features is not None and i > n_features:
                return DataError(
                    f"{where}: feature index {i} is beyond the model's {n_features} features"
                    " (train with --n-features to reserve more)")
            if i in seen:
                return DataError(f"{where}: feature index {i} is given twice (each index "
                                 "may appear once per line)")
            seen.add(i)
        if not _is_one_libsvm_line(line):
            return DataError(f"{where}: {line.strip()!r} is not valid LIBSVM ('label "
                             "index:value ...', words separated by spaces or tabs)")
    return DataError(f"{path}: lines {first_line_no}-{first_line_no + len(lines) - 1} "
                     "are not valid LIBSVM ('label index:value ...')")


def _repeats_an_index(row, col):
    """Whether some line gives a feature index twice (``row`` is non-decreasing)."""
    if col.size < 2:
        return False
    same_line = row[1:] == row[:-1]
    if (col[1:] > col[:-1])[same_line].all():  # ascending indices: the usual case
        return False
    order = np.lexsort((col, row))
    row, col = row[order], col[order]
    return bool(((row[1:] == row[:-1]) & (col[1:] == col[:-1])).any())


def _check_exact_labels(labels, data_lines, text_lines, first_line_no, path):
    """DataError for the first label (float64 ``labels`` of ``data_lines``) beyond
    2**53 that float64 does not hold exactly (``18446744073709551615`` would become
    18446744073709551616): a LIBSVM label is a number, read as float64, and keeps its
    value or is refused."""
    big = np.flatnonzero(np.abs(labels) >= 2.0 ** 53)
    if not big.size:
        return
    import decimal

    for i in big:
        word = data_lines[i].split(None, 1)[0]
        if decimal.Decimal(word) != decimal.Decimal(float(labels[i])):
            line = first_line_no + next(k for k, ln in enumerate(text_lines)
                                        if ln is data_lines[i])
            raise DataError(
                f"{path}: line {line}: the label {word} is beyond 2**53 and float64 does "
                f"not hold it exactly (it would become {float(labels[i]):.17g}); LIBSVM "
                "labels are numbers: write labels that float64 holds, or use CSV or "
                "Parquet for such labels")


def _parse_libsvm_block(lines, n_features, path, first_line_no, label_words,
                        exact_labels=True):
    """``parse_libsvm_lines`` plus the label of each line as written (a list of str)
    when ``label_words`` is true, else None. ``exact_labels``: the labels are used
    (training, evaluating), so one that float64 does not hold is an error."""
    text_lines = [ln.decode("utf-8", "replace") if isinstance(ln, bytes) else ln
                  for ln in lines]
    if any("#" in ln for ln in text_lines):
        text_lines = [ln.split("#", 1)[0] for ln in text_lines]
    data_lines = [ln for ln in text_lines if ln.strip()]
    words = [ln.split(None, 1)[0] for ln in data_lines] if label_words else None
    if not data_lines:
        empty = np.empty(0, dtype=np.float64)
        return empty, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), empty, words
    block = "".join(data_lines)
    if block.count("\n") != len(data_lines) - (not block.endswith("\n")):
        # (some line without its line break: comments removed, or lines not read
        # from a file)
        block = "\n".join(ln.rstrip("\r\n") for ln in data_lines)
    counts = _libsvm_pairs_per_line(block.encode("utf-8", "replace"), len(data_lines))
    if counts is None:
        raise _libsvm_line_error(text_lines, first_line_no, path, n_features)
    expected = len(data_lines) + 2 * int(counts.sum())
    try:
        vals = _floats(block.replace(":", " "))
    except ValueError:
        vals = None
    if vals is None or vals.shape[0] != expected:
        raise _libsvm_line_error(text_lines, first_line_no, path, n_features)
    per_line = 1 + 2 * counts
    starts = np.zeros(len(data_lines), dtype=np.int64)
    np.cumsum(per_line[:-1], out=starts[1:])
    labels = vals[starts]
    is_pair = np.ones(expected, dtype=bool)
    is_pair[starts] = False
    pairs = vals[is_pair].reshape(-1, 2)
    idx = pairs[:, 0]
    col = idx.astype(np.int64)
    bad = (col != idx) | (col < 1)
    if n_features is not None:
        bad |= col > n_features
    row = np.repeat(np.arange(len(data_lines), dtype=np.int64), counts)
    if bad.any() or not np.isfinite(labels).all() or _repeats_an_index(row, col):
        raise _libsvm_line_error(text_lines, first_line_no, path, n_features)
    if exact_labels:
        _check_exact_labels(labels, data_lines, text_lines, first_line_no, path)
    return labels, row, col - 1, pairs[:, 1], words


def parse_libsvm_lines(lines, n_features=None, *, path="<data>", first_line_no=1):
    """Parse LIBSVM text lines.

    Returns ``(labels, row, col, value)``: float64 labels of the non-empty lines and
    the sparse entries (0-based column indices). Empty lines and ``#`` comments are
    skipped. ``n_features`` (when given) bounds the 1-based indices. A malformed line,
    or one giving a feature index twice, is a DataError naming the line.
    """
    return _parse_libsvm_block(lines, n_features, path, first_line_no, False)[:4]


def sparse_rows(counts, col, value, n_features):
    """The entries of consecutive rows (``counts[i]`` entries for row i: 0-based
    columns ``col``, float32 ``value``, row after row) as a float32 CSR matrix of
    len(counts) x ``n_features``: the rows as read, never densified (a row's other
    features are 0.0, as in the file)."""
    import scipy.sparse as sp

    indptr = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return sp.csr_matrix((np.asarray(value, dtype=np.float32), col, indptr),
                         shape=(counts.shape[0], n_features), dtype=np.float32)


def _compact(col, value, n_features):
    """Columns as int32 (int64 only where an index needs it) and values as float32:
    the entries a chunk keeps (8 bytes each instead of the parser's 24)."""
    wide = n_features is None or n_features > np.iinfo(np.int32).max
    return (col.astype(np.int64 if wide and col.size and col.max() > np.iinfo(np.int32).max
                       else np.int32), value.astype(np.float32))


def libsvm_labels(labels):
    """LIBSVM labels as int64 when they are all integers, else float64."""
    if labels.size and np.all(labels == np.round(labels)) and np.abs(labels).max() < 2**53:
        return labels.astype(np.int64)
    return labels


#: Lines parsed at a time by the LIBSVM reader.
LIBSVM_SUB_BLOCK = 8192


class LibsvmData:
    """LIBSVM/svmlight text (``label index:value ...``, 1-based indices)."""

    kind = "libsvm"
    fmt = "libsvm"

    def __init__(self, path, n_features=None):
        self.path = str(path)
        self.n_features = n_features
        self.columns = None
        self.num_rows = None

    def _open(self):
        if self.path.lower().endswith(".gz"):
            return gzip.open(self.path, "rb")
        return open(self.path, "rb")

    def kept_types(self, names):
        """The Arrow types of the kept columns ``names`` (the label) in the output."""
        import pyarrow as pa

        return [pa.string() for _ in names]

    def iter_parsed(self, chunk_rows, n_features, label_words=False, exact_labels=True):
        """Yield ``(labels, row, col, value, n_rows, words)`` per block of lines;
        ``words``: the labels as written when ``label_words`` is true, else None;
        ``exact_labels``: see ``_parse_libsvm_block``."""
        import itertools

        line_no = 1
        try:
            with self._open() as fh:
                while True:
                    lines = list(itertools.islice(fh, chunk_rows))
                    if not lines:
                        break
                    labels, row, col, value, words = _parse_libsvm_block(
                        lines, n_features, self.path, line_no, label_words, exact_labels)
                    line_no += len(lines)
                    if labels.shape[0]:
                        yield labels, row, col, value, labels.shape[0], words
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise DataError(f"cannot read {self.path}: {one_line(exc)}") from None

    def read_all(self, chunk_rows=100_000):
        """The whole file: ``(X, labels)``, X a float32 CSR matrix (scipy.sparse) of
        width ``n_features`` or the max index."""
        labels, counts, cols, vals = [], [], [], []
        for lab, row, col, value, k, _ in self.iter_parsed(chunk_rows, self.n_features):
            labels.append(lab)
            counts.append(np.bincount(row, minlength=k))
            col, value = _compact(col, value, self.n_features)
            cols.append(col)
            vals.append(value)
        if not labels:
            raise DataError(f"{self.path} has no data rows")
        col = np.concatenate(cols)
        n_features = self.n_features
        if n_features is None:
            n_features = int(col.max()) + 1 if col.size else 1
        X = sparse_rows(np.concatenate(counts), col, np.concatenate(vals), n_features)
        return X, libsvm_labels(np.concatenate(labels))

    def iter_chunks(self, n_features, keep, chunk_rows, target=None):
        """Chunks of ``chunk_rows`` rows whose X is a float32 CSR matrix (the entries
        as read: a wide file is never densified, not even a chunk of it); lines
        are parsed in small sub-blocks, so memory stays near the chunk's entries.

        ``keep`` (``["label"]`` or empty): the label passed through as written, as
        text (``+1`` stays ``+1``); ``target`` (``"label"`` or None): the label as a
        number in ``Chunk.labels``.
        """
        pieces, labels, words = [], [], []
        filled = 0

        def emit():
            counts = np.concatenate([n for n, _, _ in pieces])
            col = np.concatenate([c for _, c, _ in pieces])
            value = np.concatenate([v for _, _, v in pieces])
            return Chunk(sparse_rows(counts, col, value, n_features),
                         {name: list(words) for name in keep}, filled,
                         libsvm_labels(np.concatenate(labels)) if target else None)

        for lab, row, col, value, k, lab_words in self.iter_parsed(
                min(chunk_rows, LIBSVM_SUB_BLOCK), n_features, label_words=bool(keep),
                exact_labels=bool(target)):
            counts = np.bincount(row, minlength=k)
            col, value = _compact(col, value, n_features)
            pos = 0
            while pos < k:
                take = min(k - pos, chunk_rows - filled)
                lo, hi = np.searchsorted(row, [pos, pos + take])
                # Copies: the parser's arrays of this sub-block are not kept.
                pieces.append((counts[pos: pos + take], col[lo:hi].copy(),
                               value[lo:hi].copy()))
                labels.append(lab[pos: pos + take].copy())
                if keep:
                    words.extend(lab_words[pos: pos + take])
                filled += take
                pos += take
                if filled == chunk_rows:
                    yield emit()
                    pieces, labels, words = [], [], []
                    filled = 0
        if filled:
            yield emit()


# ------------------------------------------------------------------- output
class AtomicOutput:
    """Write a file through a temporary file in the same directory, renamed at the end.

    A failed or interrupted run removes the temporary file, leaving any existing file
    at ``path`` untouched. The rules of ``_safe_output.AtomicFile`` apply (permission bits
    kept, read-only files not replaced, stale temporary files removed), and ``path``
    must not be the same file as any of ``inputs``.

    Parameters
    ----------
    path : str or os.PathLike
        The output file.
    fmt : {"parquet", "csv", "tsv"} or None
        Format of the tables written by :meth:`write_table`.
    inputs : sequence of str, os.PathLike or None
        The input files of the command (None entries are ignored).
    """

    def __init__(self, path, fmt=None, inputs=()):
        self.path = str(path)
        self.fmt = fmt
        same = find_same_file(self.path, inputs)
        if same is not None:
            raise DataError(f"the output {self.path} is the same file as the input {same}; "
                            "an output never replaces an input: choose another output")
        try:
            self._file = AtomicFile(self.path)
        except OSError as exc:
            raise DataError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        self.tmp = self._file.tmp
        self._writer = None
        self._sink = None
        self.closed = False

    # raw bytes (model files)
    def write_bytes(self, data):
        with open(self.tmp, "wb") as fh:
            fh.write(data)

    # tables
    def write_table(self, table):
        pa = require_pyarrow("Writing scores")
        if self._writer is None:
            self._schema = table.schema
            if self.fmt == "parquet":
                import pyarrow.parquet as pq

                self._writer = pq.ParquetWriter(self.tmp, table.schema)
            else:
                import pyarrow.csv as pacsv

                self._sink = pa.OSFile(self.tmp, "wb")
                opts = pacsv.WriteOptions(delimiter="\t" if self.fmt == "tsv" else ",")
                self._writer = pacsv.CSVWriter(self._sink, table.schema, write_options=opts)
        elif not table.schema.equals(self._schema):
            # Never cast (an int64 id would lose digits as float64): an error instead.
            raise DataError(f"the output columns changed type between chunks: "
                            f"{one_line(self._schema)} then {one_line(table.schema)}")
        self._writer.write_table(table)

    def _close_writer(self):
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._sink is not None:
            self._sink.close()
            self._sink = None

    def commit(self, empty_schema=None):
        """Finish: close the writer and rename the temporary file to ``path``."""
        if self._writer is None and empty_schema is not None:
            self.write_table(empty_schema.empty_table())
        self._close_writer()
        self._file.commit()
        self.closed = True

    def abort(self):
        if self.closed:
            return
        try:
            self._close_writer()
        except Exception:  # noqa: BLE001 - the run already failed
            pass
        self._file.discard()
        self.closed = True
