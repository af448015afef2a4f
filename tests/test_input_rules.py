"""The input rules of the batch commands (docs/reliability.md, "Input rules").

What the user gives passes through unchanged or is an error naming what is wrong;
every valid file is read, whatever its size; an output never replaces an input.
Every file is written by the test; sizes span one CSV block (1 MiB) and several.
"""

import csv
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import ERROR_PREFIX, require, run_main

pa = require("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

import gbc_core  # noqa: E402
from gbc_core import GradientBoostingClassifier  # noqa: E402
from gbc_core._safe_output import TEMPORARY_TAG  # noqa: E402
from gbc_core._tabular import (  # noqa: E402
    CSV_BLOCK_SIZE,
    DataError,
    LibsvmData,
    TableData,
    open_data,
    parse_libsvm_lines,
)

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes and links")

#: Rows of the files: a few, some thousands (one CSV block) and enough for several
#: blocks (a value that differs from the first block's comes after the first MiB).
SIZES = [3, 2_000, 120_000]


# -------------------------------------------------------------------- helpers
def expect_error(capsys, monkeypatch, cwd, *args, words=()):
    """Run a command that must fail with one line naming ``words``; return the line."""
    rc, out, err = run_main(capsys, monkeypatch, cwd, *args)
    lines = err.strip().splitlines()
    assert rc == 1, (args, rc, err)
    assert len(lines) == 1 and lines[0].startswith(ERROR_PREFIX), err
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert not [p for p in os.listdir(cwd) if p.endswith(".tmp")]
    return lines[0]


def write_csv(path, header, rows, newline="\n"):
    """Write rows of text exactly (quoted by the csv module only where needed)."""
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator=newline)
        writer.writerow(header)
        writer.writerows(rows)


def read_csv_text(path):
    """A CSV file as {column: [text, ...]}, parsed by Python's csv module."""
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return {name: [r[j] for r in rows[1:]] for j, name in enumerate(rows[0])}


def features_frame(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)).astype(np.float32).astype(np.float64)
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=n) > 0).astype(np.int64)
    return X, y


@pytest.fixture(scope="module")
def named_model(tmp_path_factory):
    """A model with the features x0, x1, x2 (classes 0, 1), saved as model.gbc."""
    pd = require("pandas")
    X, y = features_frame(3000, 0)
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"])
    model = GradientBoostingClassifier(n_estimators=8, max_depth=3).fit(frame, y)
    path = tmp_path_factory.mktemp("model") / "model.gbc"
    model.save(path)
    return path


def proba_of(model_path, X):
    pd = require("pandas")
    model = gbc_core.load(model_path)
    frame = pd.DataFrame(np.asarray(X, dtype=np.float64), columns=list(model.feature_names_in_))
    return model.predict_proba(frame)[:, 1]


def table_rows(n, seed, ids):
    """Rows id, x0, x1, x2 (text) and the features as numbers."""
    X, _ = features_frame(n, seed)
    rows = [[ids[i]] + [repr(float(v)) for v in X[i]] for i in range(n)]
    return rows, X


def awkward_ids(n):
    """Ids that look like numbers for all rows but a last stretch of text that a type
    inference would change: leading zeros, empty, NA, spaces, quotes, commas..."""
    ids = [f"{i:06d}" for i in range(n)]
    tail = ["null", "nan", " 7 ", "1e5", "0x1F", "3.10", "-0", "+1", "TRUE", "a,b",
            'say "hi"', "2024-01-01", f"A{n}", "NA", "", "000123"]
    ids[-min(n, len(tail)):] = tail[-n:]
    return ids


# ------------------------------------------------- 1. kept columns as written
@pytest.mark.parametrize("n", SIZES)
def test_kept_csv_column_is_read_as_text(tmp_path, n):
    ids = awkward_ids(n)
    rows, X = table_rows(n, 1, ids)
    write_csv(tmp_path / "d.csv", ["id", "x0", "x1", "x2"], rows)
    data = TableData(tmp_path / "d.csv", "csv")
    chunks = list(data.iter_chunks(["x0", "x1", "x2"], ["id"], 777))
    kept = [v for c in chunks for v in c.columns["id"].to_pylist()]
    assert kept == ids
    assert all(c.columns["id"].type == pa.string() for c in chunks)
    np.testing.assert_array_equal(np.concatenate([c.X for c in chunks]), X.astype(np.float32))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("out", ["scores.csv", "scores.parquet"])
def test_predict_keeps_csv_ids_as_written(tmp_path, capsys, monkeypatch, named_model, n, out):
    ids = awkward_ids(n)
    rows, X = table_rows(n, 2, ids)
    write_csv(tmp_path / "d.csv", ["id", "x0", "x1", "x2"], rows)
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", named_model, "d.csv",
                          "-o", out, "--keep", "id", "--chunk-rows", "1000")
    assert rc == 0, err
    if out.endswith(".csv"):
        written = read_csv_text(tmp_path / out)
        assert written["id"] == ids
        proba = np.array(written["proba"], dtype=np.float64)
    else:
        table = pq.read_table(tmp_path / out)
        assert table.schema.field("id").type == pa.string()
        assert table.column("id").to_pylist() == ids
        proba = table.column("proba").to_numpy()
    np.testing.assert_array_equal(proba, proba_of(named_model, X))


@pytest.mark.parametrize("n", SIZES)
def test_kept_feature_is_a_number_for_the_model_and_text_in_the_output(
        tmp_path, capsys, monkeypatch, named_model, n):
    rng = np.random.default_rng(3)
    X, _ = features_frame(n, 3)
    spellings = [lambda v: repr(v), lambda v: f" {v:.3f} ", lambda v: f"{v:.10e}",
                 lambda v: f"{v:+.6f}", lambda v: "", lambda v: "NA"]
    x0_text = [spellings[k](float(v)) for k, v in zip(rng.integers(0, 6, size=n), X[:, 0])]
    rows = [[str(i), x0_text[i]] + [repr(float(v)) for v in X[i, 1:]] for i in range(n)]
    write_csv(tmp_path / "d.csv", ["id", "x0", "x1", "x2"], rows)
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", named_model, "d.csv",
                          "-o", "kept.parquet", "--keep", "x0", "id", "--chunk-rows", "999")
    assert rc == 0, err
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", named_model, "d.csv",
                          "-o", "plain.parquet", "--chunk-rows", "5000")
    assert rc == 0, err
    kept, plain = pq.read_table(tmp_path / "kept.parquet"), pq.read_table(tmp_path / "plain.parquet")
    assert kept.column_names == ["x0", "id", "proba"]
    assert kept.column("x0").to_pylist() == x0_text
    assert kept.column("id").to_pylist() == [str(i) for i in range(n)]
    assert kept.column("proba").equals(plain.column("proba"))
    missing = np.isin(np.array(x0_text), ["", "NA"])
    X_read = X.copy()
    X_read[missing, 0] = np.nan
    X_read[~missing, 0] = [float(t) for t, m in zip(x0_text, missing) if not m]
    np.testing.assert_array_equal(kept.column("proba").to_numpy(), proba_of(named_model, X_read))


def test_kept_parquet_columns_keep_their_types(tmp_path, capsys, monkeypatch, named_model):
    import datetime
    import decimal

    n = 5000
    X, _ = features_frame(n, 4)
    ids = np.arange(n, dtype=np.int64) * 1_000_000_007 + 2**53  # not exact as float64
    kept = {
        "id": pa.array(ids),
        "when": pa.array([datetime.datetime(2024, 1, 1) + datetime.timedelta(minutes=i)
                          for i in range(n)], pa.timestamp("us")),
        "amount": pa.array([decimal.Decimal(i) / 100 for i in range(n)], pa.decimal128(12, 2)),
        "city": pa.array(["Oslo", "NA", ""] * (n // 3) + ["Oslo"] * (n % 3)).dictionary_encode(),
        "flag": pa.array([i % 3 == 0 if i % 7 else None for i in range(n)], pa.bool_()),
    }
    table = pa.table({**kept, **{f"x{j}": X[:, j] for j in range(3)}})
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=700)
    pq.write_table(table.slice(0, 0), tmp_path / "empty.parquet")
    for source, out in (("d.parquet", "o.parquet"), ("empty.parquet", "e.parquet")):
        rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", named_model, source,
                              "-o", out, "--keep", *kept, "--chunk-rows", "600")
        assert rc == 0, err
        written = pq.read_table(tmp_path / out)
        expected = pq.read_table(tmp_path / source, columns=list(kept))
        assert written.schema.remove_metadata().types[:5] == expected.schema.types
        assert written.select(list(kept)).to_pylist() == expected.to_pylist()


def test_libsvm_label_is_kept_as_written(tmp_path, capsys, monkeypatch):
    words = ["+1", "-1", "1.0", "1", "-1.0", "+1.000", "1e0", "-1"]
    rng = np.random.default_rng(5)
    lines = []
    for i in range(4000):
        label = words[i % len(words)]
        x = rng.normal(size=3) + (1.0 if float(label) > 0 else -1.0)
        lines.append(f"{label} 1:{x[0]:.6f} 2:{x[1]:.6f} 3:{x[2]:.6f}")
    (tmp_path / "d.svm").write_text("\n".join(lines) + "\n")
    labels = [ln.split()[0] for ln in lines]
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "d.svm", "-o", "m.gbc",
                          "--n-estimators", "5")
    assert rc == 0, err
    assert gbc_core.load(tmp_path / "m.gbc").classes_.tolist() == [-1, 1]
    for out in ("o.csv", "o.parquet"):
        rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "d.svm", "-o",
                              out, "--keep", "label", "--chunk-rows", "333")
        assert rc == 0, err
        if out.endswith(".csv"):
            written = read_csv_text(tmp_path / out)
        else:
            written = pq.read_table(tmp_path / out).to_pydict()
            assert pq.read_schema(tmp_path / out).field("label").type == pa.string()
        assert written["label"] == labels
    # evaluate reads the same labels as numbers
    rc, out, _ = run_main(capsys, monkeypatch, tmp_path, "evaluate", "m.gbc", "d.svm", "--json")
    assert rc == 0 and json.loads(out)["n_rows"] == 4000


@pytest.mark.parametrize("missing", ["", "NA", "null", "N/A"])
@pytest.mark.parametrize("n", [4, 120_000])
def test_missing_label_words_are_missing_labels(tmp_path, capsys, monkeypatch, named_model,
                                                missing, n):
    """Kept text stays text, but a text label that is a missing-value word is missing."""
    X, y = features_frame(n, 17)
    rows = [[repr(float(v)) for v in X[i]] + [("yes", "no")[y[i]]] for i in range(n)]
    rows[n - 2][3] = missing
    write_csv(tmp_path / "d.csv", ["x0", "x1", "x2", "y"], rows)
    for command in (["train", "d.csv", "--target", "y", "-o", "m.gbc"],
                    ["evaluate", named_model, "d.csv", "--target", "y"]):
        expect_error(capsys, monkeypatch, tmp_path, *command,
                     words=["target column 'y'", "missing", "every row needs a label"])
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", named_model, "d.csv",
                          "-o", "o.parquet", "--keep", "y")
    assert rc == 0, err
    assert pq.read_table(tmp_path / "o.parquet").column("y").to_pylist() == [r[3] for r in rows]


# --------------------------------------------------- 2. newlines inside quotes
def quoted_newline_rows(n, seed):
    """Rows whose kept id and dropped note hold line breaks, commas and quotes."""
    X, y = features_frame(n, seed)
    notes = ["first line\nsecond, line", 'he said "yes"\r\nthen left', "plain",
             "\n\n", "a" * 120 + "\n" + "b" * 40]
    rows = [[f"row {i}\nid {i:05d}", notes[i % len(notes)]]
            + [repr(float(v)) for v in X[i]] + [str(y[i])] for i in range(n)]
    return rows, X, y


@pytest.mark.parametrize("n", [40, 60_000])
def test_quoted_newlines_in_train_predict_evaluate(tmp_path, capsys, monkeypatch, n):
    rows, X, y = quoted_newline_rows(n, 6)
    write_csv(tmp_path / "d.csv", ["id", "note", "x0", "x1", "x2", "y"], rows)
    if n > 1000:
        assert os.path.getsize(tmp_path / "d.csv") > 6 * CSV_BLOCK_SIZE
    reference = read_csv_text(tmp_path / "d.csv")  # Python's csv module agrees
    assert reference["id"] == [r[0] for r in rows] and len(reference["note"]) == n

    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "d.csv", "--target", "y",
                          "--drop", "id", "note", "-o", "m.gbc", "--n-estimators", "6")
    assert rc == 0, err
    pd = require("pandas")
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"])
    ref = GradientBoostingClassifier(n_estimators=6).fit(frame, y)
    model = gbc_core.load(tmp_path / "m.gbc")
    np.testing.assert_array_equal(model.predict_proba(frame), ref.predict_proba(frame))

    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "d.csv", "-o",
                          "o.csv", "--keep", "id", "--drop", "note", "--chunk-rows", "7000")
    assert rc == 0, err
    written = read_csv_text(tmp_path / "o.csv")
    assert written["id"] == reference["id"]
    np.testing.assert_array_equal(np.array(written["proba"], dtype=float),
                                  ref.predict_proba(frame)[:, 1])

    rc, out, err = run_main(capsys, monkeypatch, tmp_path, "evaluate", "m.gbc", "d.csv",
                            "--target", "y", "--drop", "id", "note", "--json")
    assert rc == 0, err
    res = json.loads(out)
    assert res["n_rows"] == n
    assert res["accuracy"] == pytest.approx(float(np.mean(ref.predict(frame) == y)))


def test_headerless_first_line_with_a_quoted_delimiter(tmp_path, capsys, monkeypatch):
    """--no-header names the columns col0, col1... by the parsed first line."""
    rows, X, y = quoted_newline_rows(500, 7)
    rows = [[r[0].replace("\n", ", ")] + r[2:] for r in rows]  # id, x0, x1, x2, y
    write_csv(tmp_path / "d.csv", rows[0], rows[1:])
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "d.csv", "--no-header",
                          "--target", "col4", "--drop", "col0", "-o", "m.gbc",
                          "--n-estimators", "3")
    assert rc == 0, err
    assert list(gbc_core.load(tmp_path / "m.gbc").feature_names_in_) == ["col1", "col2", "col3"]
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "d.csv",
                          "--no-header", "-o", "o.csv", "--keep", "col0")
    assert rc == 0, err
    assert read_csv_text(tmp_path / "o.csv")["col0"] == [r[0] for r in rows]


# ------------------------------------------------------------- 3. booleans
def boolean_rows(n, seed, words=("true", "false")):
    X, y = features_frame(n, seed)
    flag = X[:, 2] > 0
    missing = np.arange(n) % 11 == 5
    text = np.where(flag, words[0], words[1]).astype(object)
    text[missing] = ""
    values = np.where(missing, np.nan, flag.astype(np.float64))
    rows = [[repr(float(X[i, 0])), repr(float(X[i, 1])), text[i], str(y[i])] for i in range(n)]
    return rows, np.column_stack([X[:, :2], values]), flag, missing, y


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("words", [("true", "false"), ("True", "False"), ("TRUE", "FALSE")])
def test_csv_booleans_are_one_and_zero(tmp_path, n, words):
    rows, X, _, _, _ = boolean_rows(n, 8, words)
    write_csv(tmp_path / "d.csv", ["x0", "x1", "flag", "y"], rows)
    data = TableData(tmp_path / "d.csv", "csv")
    X_read = np.concatenate([c.X for c in data.iter_chunks(["x0", "x1", "flag"], [], 1000)])
    np.testing.assert_array_equal(X_read, X.astype(np.float32))
    table = data.read(["x0", "x1", "flag"], "y")
    np.testing.assert_array_equal(data.features(table, ["x0", "x1", "flag"]),
                                  X.astype(np.float32))


@pytest.mark.parametrize("n", [50, 120_000])
def test_csv_and_parquet_booleans_give_the_same_model(tmp_path, capsys, monkeypatch, n):
    rows, X, flag, missing, y = boolean_rows(n, 9)
    write_csv(tmp_path / "d.csv", ["x0", "x1", "flag", "y"], rows)
    pq.write_table(pa.table({"x0": X[:, 0], "x1": X[:, 1],
                             "flag": pa.array(flag, mask=missing), "y": y}),
                   tmp_path / "d.parquet", row_group_size=10_000)
    for name in ("d.csv", "d.parquet"):
        rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", name, "--target", "y",
                              "-o", name + ".gbc", "--n-estimators", "6")
        assert rc == 0, err
        rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", name + ".gbc", name,
                              "-o", name + ".parquet")
        assert rc == 0, err
    assert (tmp_path / "d.csv.gbc").read_bytes() == (tmp_path / "d.parquet.gbc").read_bytes()
    csv_scores = pq.read_table(tmp_path / "d.csv.parquet").column("proba")
    assert csv_scores.equals(pq.read_table(tmp_path / "d.parquet.parquet").column("proba"))
    pd = require("pandas")
    frame = pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1],
                          "flag": pd.array(np.where(missing, None, flag), dtype="boolean")})
    model = gbc_core.load(tmp_path / "d.csv.gbc")
    np.testing.assert_array_equal(csv_scores.to_numpy(), model.predict_proba(frame)[:, 1])


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("first,later", [("true", "1"), ("false", "0.5"), ("1", "true"),
                                         ("0.25", "FALSE")])
def test_booleans_mixed_with_numbers_are_an_error(tmp_path, capsys, monkeypatch, n, first,
                                                  later):
    rows, _, _, _, _ = boolean_rows(n, 10)
    for i, row in enumerate(rows):
        row[2] = first if i < n - 1 else later
    write_csv(tmp_path / "d.csv", ["x0", "x1", "flag", "y"], rows)
    # The value named is the first that does not fit the column's kind: its kind comes
    # from the first block (true/false if it has only those, else numbers).
    first_is_boolean = first in ("true", "false")
    named = repr(later if n > 100_000 or not first_is_boolean else first)
    with pytest.raises(DataError, match=r"'flag' .*numbers and true/false") as err:
        data = TableData(tmp_path / "d.csv", "csv")
        list(data.iter_chunks(["x0", "x1", "flag"], [], 500))
    assert named in str(err.value)
    line = expect_error(capsys, monkeypatch, tmp_path, "train", "d.csv", "--target", "y",
                        "-o", "m.gbc", words=["'flag'", "true/false", named])
    assert "d.csv" in line and not (tmp_path / "m.gbc").exists()


@pytest.mark.parametrize("later", ["true/false", "numbers", "empty", "true then 1"])
def test_kind_of_a_column_empty_in_the_first_block(tmp_path, capsys, monkeypatch, later):
    """A CSV feature column empty in the whole first block (where pyarrow infers a
    type) takes its kind from its first value further on: true/false is boolean,
    as pandas reads it; a column that then mixes kinds is the usual error."""
    n = 120_000
    half = n // 2
    flags = np.arange(n) % 3 != 0
    if later == "true/false":
        text = np.where(flags, "true", "false")
        values = flags.astype(np.float64)
    elif later == "numbers":
        text = np.array([f"{i / 4}" for i in range(n)])
        values = np.arange(n) / 4
    elif later == "empty":
        text = np.array(["NA"] * n)
        values = np.full(n, np.nan)
    else:
        text = np.where(flags, "true", "false").astype(object)
        text[n - 5] = "1"
    rows = [[f"{i / 7:.12f}", "" if i < half else text[i], str(i % 2)] for i in range(n)]
    write_csv(tmp_path / "d.csv", ["x0", "flag", "y"], rows)
    assert (tmp_path / "d.csv").stat().st_size // 2 > CSV_BLOCK_SIZE  # past block 1
    data = TableData(tmp_path / "d.csv", "csv")
    if later == "true then 1":
        with pytest.raises(DataError, match=r"'flag' .*mixes numbers and true/false: '1'"):
            list(data.iter_chunks(["x0", "flag"], [], 5000))
        return
    expected = np.where(np.arange(n) < half, np.nan, values).astype(np.float32)
    X = np.concatenate([c.X for c in data.iter_chunks(["x0", "flag"], [], 5000)])
    np.testing.assert_array_equal(X[:, 1], expected)
    table = data.read(["x0", "flag"], "y")
    np.testing.assert_array_equal(data.features(table, ["x0", "flag"])[:, 1], expected)
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "d.csv", "--target", "y",
                          "-o", "m.gbc", "--n-estimators", "2")
    assert rc == 0, err


def test_parquet_integers_are_rounded_to_float32_once(tmp_path, capsys, monkeypatch):
    """Integer features of a Parquet file: each rounded to float32 once, as the
    estimator rounds an int64 array (int64 -> float64 -> float32 rounds a value
    beyond 2**53 twice, and the safe cast to float64 refused it); ``train`` warns as
    ``fit`` does, naming the column of values float32 does not represent."""
    a, b = 2**60, 2**60 + 2**37
    values = np.array([a] * 10 + [b] * 10 + [2**60 + 2**36 + 1], dtype=np.int64)
    assert np.float32(values[-1]) != np.float32(np.float64(values[-1]))  # a double rounding
    small = np.arange(21, dtype=np.int32)
    table = pa.table({"v": values, "s": pa.array(small, mask=small == 3),
                      "y": [0] * 10 + [1] * 11})
    pq.write_table(table, tmp_path / "d.parquet")
    data = TableData(tmp_path / "d.parquet", "parquet")
    X = np.concatenate([c.X for c in data.iter_chunks(["v", "s"], [], 7)])
    expected = np.column_stack([values.astype(np.float32),
                                np.where(small == 3, np.nan, small).astype(np.float32)])
    np.testing.assert_array_equal(X, expected)
    lossy = []
    np.testing.assert_array_equal(data.features(data.read(["v", "s"], "y"), ["v", "s"],
                                                lossy), expected)
    assert lossy == ["v"]
    with pytest.warns(gbc_core.DataConversionWarning, match=r"the training data d.parquet column\(s\) v hold values that float32"):
        rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "d.parquet",
                              "--target", "y", "-o", "m.gbc", "--n-estimators", "3")
    assert rc == 0, err
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "d.parquet",
                          "-o", "p.parquet")
    assert rc == 0, err
    model = gbc_core.load(tmp_path / "m.gbc")
    pd = require("pandas")
    frame = pd.DataFrame({"v": values, "s": pd.array(np.where(small == 3, None, small),
                                                     dtype="Int32")})
    np.testing.assert_array_equal(pq.read_table(tmp_path / "p.parquet").column("proba"),
                                  model.predict_proba(frame)[:, 1])


def test_a_header_without_line_break_is_read_from_arrows_memory(tmp_path):
    """The in-memory copy of a one-line file is Arrow's, not a view of a Python bytes
    object: the CSV reader's threads release slices of it, and releasing a Python
    object's view on such a thread while Python shuts down ends the process with
    std::terminate (seen as SIGABRT after the "no data rows" error)."""
    (tmp_path / "h.csv").write_bytes(b"x0,x1,x2,y")
    data = open_data(tmp_path / "h.csv")
    copy = data._single_line
    assert isinstance(copy, pa.Buffer) and copy.to_pybytes() == b"x0,x1,x2,y\n"
    assert copy.is_mutable  # a view of bytes would be read-only
    assert data.columns == ["x0", "x1", "x2", "y"]


# ------------------------------------------------------ 4. header-only files
@pytest.mark.parametrize("ending", ["", "\n", "\r\n"])
@pytest.mark.parametrize("out", ["o.csv", "o.parquet"])
def test_header_only_csv(tmp_path, capsys, monkeypatch, named_model, ending, out):
    (tmp_path / "h.csv").write_bytes(("id,x0,x1,x2,y" + ending).encode())
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", named_model, "h.csv", "-o",
                          out, "--keep", "id", "y", "--proba", "--label")
    assert rc == 0, err
    if out.endswith(".parquet"):
        table = pq.read_table(tmp_path / out)
        assert table.num_rows == 0
        assert table.schema.names == ["id", "y", "proba", "label"]
        assert table.schema.types == [pa.string(), pa.string(), pa.float64(), pa.int64()]
    else:
        assert (tmp_path / out).read_text() == '"id","y","proba","label"\n'
    expect_error(capsys, monkeypatch, tmp_path, "evaluate", named_model, "h.csv", "--target",
                 "y", words=["h.csv", "no data rows"])
    expect_error(capsys, monkeypatch, tmp_path, "train", "h.csv", "--target", "y", "-o",
                 "m.gbc", words=["h.csv", "no data rows"])


@pytest.mark.parametrize("content", [b"", b"\n", b"\n\n"])
def test_empty_csv_is_an_error(tmp_path, capsys, monkeypatch, named_model, content):
    (tmp_path / "e.csv").write_bytes(content)
    expect_error(capsys, monkeypatch, tmp_path, "predict", named_model, "e.csv", "-o", "o.csv",
                 words=["e.csv"])
    assert not (tmp_path / "o.csv").exists()


def test_one_row_without_line_break_and_no_header(tmp_path, capsys, monkeypatch, named_model):
    (tmp_path / "one.csv").write_text("0.5,-1.25,2")
    data = TableData(tmp_path / "one.csv", "csv", header=False)
    assert data.columns == ["col0", "col1", "col2"]
    [chunk] = data.iter_chunks(["col0", "col1", "col2"], ["col1"], 10)
    np.testing.assert_array_equal(chunk.X, [[0.5, -1.25, 2.0]])
    assert chunk.columns["col1"].to_pylist() == ["-1.25"]


@pytest.mark.parametrize("kind", ["parquet", "libsvm", "libsvm-comments"])
def test_predict_on_empty_parquet_and_libsvm(tmp_path, capsys, monkeypatch, named_model, kind):
    if kind == "parquet":
        X, _ = features_frame(10, 11)
        table = pa.table({"id": pa.array(np.arange(10)), **{f"x{j}": X[:, j] for j in range(3)}})
        pq.write_table(table.slice(0, 0), tmp_path / "e.parquet")
        model, data, keep, kept_type = named_model, "e.parquet", "id", pa.int64()
    else:
        text = "" if kind == "libsvm" else "# nothing here\n\n   \n"
        (tmp_path / "e.svm").write_text(text)
        rng = np.random.default_rng(0)
        Xl = rng.normal(size=(100, 3))
        GradientBoostingClassifier(n_estimators=2).fit(Xl, Xl[:, 0] > 0).save(tmp_path / "l.gbc")
        model, data, keep, kept_type = "l.gbc", "e.svm", "label", pa.string()
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", model, data, "-o",
                          "o.parquet", "--keep", keep)
    assert rc == 0, err
    out = pq.read_table(tmp_path / "o.parquet")
    assert out.num_rows == 0 and out.schema.names == [keep, "proba"]
    assert out.schema.field(keep).type == kept_type
    expect_error(capsys, monkeypatch, tmp_path, "evaluate", model, data,
                 *(["--target", "id"] if kind == "parquet" else []),
                 words=[data, "no data rows"])


# --------------------------------------------- 5. LIBSVM repeated feature index
@pytest.mark.parametrize("line,index", [("1 1:0.5 1:5.0", 1), ("0 2:1 1:0.5 2:3", 2),
                                        ("1 3:1 7:2 3:1", 3), ("-1 4:0 04:0", 4)])
def test_libsvm_repeated_index_is_an_error(line, index):
    with pytest.raises(DataError) as err:
        parse_libsvm_lines(["1 1:1 2:2\n", "# comment\n", line + "\n"], path="f.svm")
    assert str(err.value).startswith(f"f.svm: line 3: feature index {index} is given twice")
    # unsorted indices without a repeat are fine
    labels, row, col, value = parse_libsvm_lines(["1 3:1 1:2 2:3\n"])
    assert col.tolist() == [2, 0, 1] and value.tolist() == [1, 2, 3]


@pytest.mark.parametrize("n", [5, 10_000, 50_000])
def test_libsvm_repeated_index_in_a_file(tmp_path, capsys, monkeypatch, n):
    lines = [f"{i % 2} 1:{i} 2:0.5 3:1" for i in range(n)]
    bad = n - 2
    lines[bad] = "1 1:0.5 3:2 1:5.0"
    (tmp_path / "d.svm").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=f"line {bad + 1}: feature index 1 is given twice"):
        LibsvmData(tmp_path / "d.svm").read_all(chunk_rows=4096)
    for args in (["train", "d.svm", "-o", "m.gbc"],
                 ["evaluate", "m.gbc", "d.svm"]):
        if args[0] == "evaluate":
            rng = np.random.default_rng(0)
            Xl = rng.normal(size=(50, 3))
            GradientBoostingClassifier(n_estimators=2).fit(Xl, Xl[:, 0] > 0).save(
                tmp_path / "m.gbc")
        expect_error(capsys, monkeypatch, tmp_path, *args,
                     words=["d.svm", f"line {bad + 1}", "feature index 1", "twice"])
    expect_error(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "d.svm", "-o", "o.csv",
                 "--chunk-rows", "1000", words=[f"line {bad + 1}", "index 1"])
    assert not (tmp_path / "o.csv").exists()


# ------------------------------------ 5b. LIBSVM lines are read one by one
def test_libsvm_lines_do_not_make_up_for_each_other(tmp_path, capsys, monkeypatch):
    # A stray number on one line and a missing value on the next: the block has the
    # right count of numbers, but each line alone is malformed; so is the file, as
    # scikit-learn's reader says.
    lines = [f"{i % 2} 1:{i} 2:0.5" for i in range(40)]
    lines[20:22] = ["0 1:0.5 1", "1 3:"]
    (tmp_path / "d.svm").write_text("\n".join(lines) + "\n")
    sk = require("sklearn.datasets")
    with pytest.raises(ValueError):
        sk.load_svmlight_file(str(tmp_path / "d.svm"))
    for line in lines[20:22]:
        with pytest.raises(DataError, match="line 1:"):
            parse_libsvm_lines([line + "\n"])
    expect_error(capsys, monkeypatch, tmp_path, "train", "d.svm", "-o", "m.gbc",
                 words=["d.svm", "line 21", "'1'", "index:value"])
    assert not (tmp_path / "m.gbc").exists()


def _naive_libsvm(lines):
    """LIBSVM lines parsed one at a time (the reference): (labels, row, col, value),
    or the 1-based number of the first line that alone is an error."""
    labels, rows, cols, values = [], [], [], []
    for k, line in enumerate(lines):
        try:
            lab, _, col, value = parse_libsvm_lines([line])
        except DataError:
            return k + 1
        labels.extend(lab)
        rows.extend([len(labels) - 1] * len(col))
        cols.extend(col)
        values.extend(value)
    return labels, rows, cols, values


@pytest.mark.parametrize("seed", range(20))
def test_libsvm_block_reads_as_its_lines_one_by_one(seed):
    # Faults by how many numbers they add to a line beyond what its colons say: a
    # block of the old reader only held its count, so two faults of opposite
    # counts made up for each other.
    more = {1: [lambda t: t + " 7"],                          # a stray number
            2: [lambda t: t.replace(":", " ", 1)]}            # a colon left out
    fewer = {1: [lambda t: t + " 9:",                         # an index without value
                 lambda t: t + " :4",                         # a value without index
                 lambda t: t + ":3",                          # a second colon
                 lambda t: t.replace(" ", ":1 ", 1)],         # a colon in the label
             2: [lambda t: t.replace(":", "::", 1)]}
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(60):
        # (whole numbers: a number read in another's place is still a valid one)
        idx = np.sort(rng.choice(8, size=rng.integers(1, 4), replace=False)) + 1
        lines.append(f"{rng.integers(1, 9)} "
                     + " ".join(f"{j}:{rng.integers(1, 9)}" for j in idx))
    if seed % 4:  # two faults that make up for each other, on consecutive lines
        size = int(rng.integers(1, 3))
        first = int(rng.integers(len(lines) - 1))
        first, second = rng.permutation([first, first + 1])
        lines[first] = more[size][rng.integers(len(more[size]))](lines[first])
        lines[second] = fewer[size][rng.integers(len(fewer[size]))](lines[second])
    lines = [line + ("  # note" if rng.random() < 0.1 else "") + "\n" for line in lines]
    expected = _naive_libsvm(lines)
    assert isinstance(expected, int) == bool(seed % 4)
    if isinstance(expected, int):
        with pytest.raises(DataError, match=f"^<data>: line {expected}:"):
            parse_libsvm_lines(lines)
    else:
        for got, want in zip(parse_libsvm_lines(lines), expected, strict=True):
            np.testing.assert_array_equal(got, want)


# --------------------------------------------------------- 6. predict --drop
def test_drop_of_a_missing_column_is_an_error(tmp_path, capsys, monkeypatch, named_model):
    rows, _ = table_rows(20, 12, [str(i) for i in range(20)])
    write_csv(tmp_path / "d.csv", ["id", "x0", "x1", "x2"], rows)
    for command in (["predict", named_model, "d.csv", "-o", "o.csv"],
                    ["evaluate", named_model, "d.csv", "--target", "id"],
                    ["train", "d.csv", "--target", "id", "-o", "m.gbc"]):
        expect_error(capsys, monkeypatch, tmp_path, *command, "--drop", "x0", "no_such",
                     words=["--drop", "'no_such'", "d.csv"])
    assert sorted(os.listdir(tmp_path)) == ["d.csv"]
    (tmp_path / "d.svm").write_text("1 1:1\n")
    expect_error(capsys, monkeypatch, tmp_path, "predict", named_model, "d.svm", "-o", "o.csv",
                 "--drop", "x0", words=["--drop", "LIBSVM"])


# ------------------------------------------- 7. an output never replaces an input
@pytest.fixture
def inputs(tmp_path, named_model):
    rows, _ = table_rows(300, 13, [str(i) for i in range(300)])
    rows = [r + [str(i % 2)] for i, r in enumerate(rows)]
    write_csv(tmp_path / "d.csv", ["id", "x0", "x1", "x2", "y"], rows)
    write_csv(tmp_path / "e.csv", ["id", "x0", "x1", "x2", "y"], rows[:100])
    (tmp_path / "m.gbc").write_bytes(named_model.read_bytes())
    return {name: (tmp_path / name).read_bytes() for name in ("d.csv", "e.csv", "m.gbc")}


def _unchanged(tmp_path, inputs, extra=()):
    for name, content in inputs.items():
        assert (tmp_path / name).read_bytes() == content
    assert sorted(os.listdir(tmp_path)) == sorted(list(inputs) + list(extra))


@posix_only
@pytest.mark.parametrize("alias", ["same", "symlink", "hardlink", "dotted"])
def test_output_that_is_an_input_is_refused(tmp_path, capsys, monkeypatch, inputs, alias):
    cases = [  # (command, the input the output names)
        (["train", "d.csv", "--target", "y", "-o", "{}"], "d.csv"),
        (["train", "d.csv", "--target", "y", "--eval", "e.csv", "-o", "{}"], "e.csv"),
        (["predict", "m.gbc", "d.csv", "--output-format", "csv", "-o", "{}"], "m.gbc"),
        (["predict", "m.gbc", "d.csv", "-o", "{}"], "d.csv"),
        (["predict", "m.gbc", "d.csv", "--output-format", "parquet", "-o", "{}"], "d.csv"),
    ]
    extra = []
    for command, target in cases:
        if alias == "same":
            output = target
        elif alias == "dotted":
            output = os.path.join(".", "sub", "..", target)
            (tmp_path / "sub").mkdir(exist_ok=True)
            extra = ["sub"]
        else:
            output = f"{alias}-{target}"
            if not (tmp_path / output).exists():
                if alias == "symlink":
                    (tmp_path / output).symlink_to(tmp_path / target)
                else:
                    os.link(tmp_path / target, tmp_path / output)
                extra.append(output)
        args = [a.format(output) if a == "{}" else a for a in command]
        line = expect_error(capsys, monkeypatch, tmp_path, *args,
                            words=["same file", output, target])
        assert line.count(target) >= 1 and "choose another output" in line
        _unchanged(tmp_path, inputs, extra)


def test_output_beside_the_input_is_fine(tmp_path, capsys, monkeypatch, inputs):
    """A copy of an input (another file with the same bytes) may be replaced."""
    (tmp_path / "copy.csv").write_bytes(inputs["d.csv"])
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "d.csv", "-o",
                          "copy.csv")
    assert rc == 0, err
    assert read_csv_text(tmp_path / "copy.csv").keys() == {"proba"}


# ---------------------------------------------- 8. permissions and temporaries
@posix_only
@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664])
def test_predict_and_train_keep_the_output_mode(tmp_path, capsys, monkeypatch, inputs, mode):
    for command, output in ((["predict", "m.gbc", "d.csv", "-o"], "o.csv"),
                            (["train", "d.csv", "--target", "y", "--n-estimators", "2",
                              "-o"], "new.gbc")):
        (tmp_path / output).write_bytes(b"old")
        os.chmod(tmp_path / output, mode)
        rc, _, err = run_main(capsys, monkeypatch, tmp_path, *command, output)
        assert rc == 0, err
        assert stat.S_IMODE((tmp_path / output).stat().st_mode) == mode
        assert (tmp_path / output).read_bytes() != b"old"


@posix_only
@pytest.mark.parametrize("mode", [0o444, 0o400, 0o040])
def test_read_only_output_is_not_replaced(tmp_path, capsys, monkeypatch, inputs, mode):
    for command, output in ((["predict", "m.gbc", "d.csv", "-o"], "o.csv"),
                            (["train", "d.csv", "--target", "y", "-o"], "new.gbc")):
        (tmp_path / output).write_bytes(b"old")
        os.chmod(tmp_path / output, mode)
        expect_error(capsys, monkeypatch, tmp_path, *command, output,
                     words=["cannot write", output, "read-only"])
        os.chmod(tmp_path / output, 0o600)
        assert (tmp_path / output).read_bytes() == b"old"
    _unchanged(tmp_path, inputs, ["o.csv", "new.gbc"])


def test_killed_run_leaves_a_temporary_file_the_next_run_removes(tmp_path, named_model):
    n = 400_000
    X, _ = features_frame(n, 14)
    pq.write_table(pa.table({"id": np.arange(n)} | {f"x{j}": X[:, j] for j in range(3)}),
                   tmp_path / "big.parquet", row_group_size=20_000)
    (tmp_path / "out.parquet").write_bytes(b"old")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gbc_core", "predict", str(named_model), "big.parquet", "-o",
         "out.parquet", "--keep", "id", "--chunk-rows", "10"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pattern = re.compile(rf"\.out\.parquet{re.escape(TEMPORARY_TAG)}{proc.pid}-[0-9a-f]+\.tmp")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if any(pattern.fullmatch(p) for p in os.listdir(tmp_path)):
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    left = [p for p in os.listdir(tmp_path) if pattern.fullmatch(p)]
    assert len(left) == 1  # the killed run's, recognisable by name
    assert (tmp_path / "out.parquet").read_bytes() == b"old"
    proc = subprocess.run(
        [sys.executable, "-m", "gbc_core", "predict", str(named_model), "big.parquet", "-o",
         "out.parquet", "--keep", "id"], cwd=tmp_path, capture_output=True, text=True,
        timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(tmp_path)) == ["big.parquet", "out.parquet"]
    assert pq.read_table(tmp_path / "out.parquet").num_rows == n


# -------------------------------------------------- 10. dates, times, durations
@pytest.mark.parametrize("where,n", [("first", 3), ("first", 2_000), ("last", 3),
                                     ("last", 2_000), ("last", 120_000)])
@pytest.mark.parametrize("value", ["2024-03-01", "2024-03-01T12:30:00", "2024-03-01 12:30:00Z",
                                   "12:30:00", "2024-03-01T12:30:00.250+02:00"])
def test_csv_dates_as_features_are_an_error(tmp_path, capsys, monkeypatch, n, value, where):
    """In the first rows (pyarrow infers a date type) or after them (a number was
    expected): the same error, naming the column and what to do."""
    pd = require("pandas")
    X, y = features_frame(n, 15)
    rows = [[repr(float(X[i, 0])), repr(float(X[i, 1])), str(y[i])] for i in range(n)]
    for i in range(n) if where == "first" else [n - 1]:
        rows[i][1] = value
    write_csv(tmp_path / "d.csv", ["x0", "when", "y"], rows)
    # a model that has "when" as a (numeric) feature, and one that has not
    GradientBoostingClassifier(n_estimators=2).fit(
        pd.DataFrame({"x0": X[:, 0], "when": X[:, 1]}), y).save(tmp_path / "m2.gbc")
    GradientBoostingClassifier(n_estimators=2).fit(
        pd.DataFrame({"x0": X[:, 0]}), y).save(tmp_path / "m1.gbc")
    expected = ["'when'", "d.csv", "dates or times", "seconds since the epoch",
                "--drop when"]
    for command in (["train", "d.csv", "--target", "y", "-o", "m.gbc"],
                    ["predict", "m2.gbc", "d.csv", "-o", "o.csv", "--chunk-rows", "1000"],
                    ["evaluate", "m2.gbc", "d.csv", "--target", "y"]):
        expect_error(capsys, monkeypatch, tmp_path, *command, words=expected)
    assert sorted(os.listdir(tmp_path)) == ["d.csv", "m1.gbc", "m2.gbc"]
    with pytest.raises(DataError, match="'when' .*dates or times"):
        list(TableData(tmp_path / "d.csv", "csv").iter_chunks(["x0", "when"], [], 1000))
    # kept (not a feature), the same column passes through as written
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", "m1.gbc", "d.csv", "-o",
                          "o.csv", "--keep", "when")
    assert rc == 0, err
    assert read_csv_text(tmp_path / "o.csv")["when"] == [r[1] for r in rows]


TEMPORAL_ARRAYS = [
    (pa.timestamp("s"), [0, 86_400, None]),
    (pa.timestamp("ns", tz="UTC"), [0, 10**18, 5]),
    (pa.date32(), [0, 19_000, 1]),
    (pa.date64(), [0, 86_400_000, None]),
    (pa.time32("s"), [0, 3600, 60]),
    (pa.time64("us"), [0, 10**6, 5]),
    (pa.duration("ms"), [0, 1000, None]),
    (pa.month_day_nano_interval(), [(1, 2, 3), None, (0, 0, 1)]),
]


@pytest.mark.parametrize("arrow_type,values", TEMPORAL_ARRAYS)
def test_arrow_temporal_features_are_an_error(arrow_type, values):
    from gbc_core._tabular import _features_from_arrow

    import pyarrow.compute as pc

    table = pa.table({"x0": [1.0, 2.0, 3.0], "when": pa.array(values, arrow_type)})
    with pytest.raises(DataError) as err:
        _features_from_arrow(table, ["x0", "when"], "t.arrow", pa, pc)
    for word in ("'when'", "t.arrow", str(arrow_type), "not numbers", "seconds",
                 "--drop when"):
        assert word in str(err.value)


@pytest.mark.parametrize("arrow_type,values", TEMPORAL_ARRAYS[:-1])  # Parquet has no interval
def test_parquet_temporal_features_are_an_error(tmp_path, capsys, monkeypatch, named_model,
                                                arrow_type, values):
    n = 3 * 700
    X, y = features_frame(n, 16)
    when = pa.array(values * (n // 3), arrow_type)
    pq.write_table(pa.table({"x0": X[:, 0], "x1": X[:, 1], "x2": when, "y": y}),
                   tmp_path / "d.parquet", row_group_size=500)
    stored = pq.read_schema(tmp_path / "d.parquet").field("x2").type  # e.g. date64 -> date32
    expected = ["'x2'", "d.parquet", "not numbers", "--drop x2", str(stored)]
    expect_error(capsys, monkeypatch, tmp_path, "train", "d.parquet", "--target", "y", "-o",
                 "m.gbc", words=expected)
    expect_error(capsys, monkeypatch, tmp_path, "predict", named_model, "d.parquet", "-o",
                 "o.csv", words=expected)
    expect_error(capsys, monkeypatch, tmp_path, "evaluate", named_model, "d.parquet",
                 "--target", "y", words=expected)
    assert sorted(os.listdir(tmp_path)) == ["d.parquet"]


# ------------------------------------------- 11. a pandas index is not a feature
def sampled_frame(n=400, seed=0):
    """A DataFrame of features a, b and label y, sampled: its index is not 0..n-1."""
    pd = require("pandas")
    X, y = features_frame(2 * n, seed)
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "y": y})
    return frame.sample(n, random_state=seed)


@pytest.mark.parametrize("index_name", [None, "id"])
def test_parquet_pandas_index_is_left_out(tmp_path, capsys, monkeypatch, index_name):
    frame = sampled_frame()
    frame.index.name = index_name
    frame.to_parquet(tmp_path / "d.parquet")
    stored = pq.read_schema(tmp_path / "d.parquet").names[-1]
    assert stored == (index_name or "__index_level_0__")  # pandas stores the index
    frame.to_csv(tmp_path / "d.csv", index=False)
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "d.parquet", "--target",
                          "y", "-o", "m.gbc", "--n-estimators", "5")
    assert rc == 0, err
    assert f"'{stored}'" in err and "pandas index" in err and "left out" in err
    model = gbc_core.load(tmp_path / "m.gbc")
    # the model of the frame's own columns, as the estimator fits it
    reference = GradientBoostingClassifier(n_estimators=5).fit(frame[["a", "b"]], frame["y"])
    assert list(model.feature_names_in_) == list(reference.feature_names_in_)
    np.testing.assert_array_equal(model.predict_proba(frame[["a", "b"]]),
                                  reference.predict_proba(frame[["a", "b"]]))
    # a CSV written without the index is scored; contributions name the features only
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "d.csv", "-o",
                          "c.csv", "--contributions")
    assert rc == 0, err
    header = read_csv_text(tmp_path / "c.csv")
    assert list(header) == ["contrib_a", "contrib_b", "contrib_expected_value"]


@pytest.mark.parametrize("index_name", [None, "id"])
def test_dask_training_reads_the_index_as_the_file_reader_does(tmp_path, capsys, index_name):
    """``train --dask`` (the lazy frame the workers read) takes the columns the file
    reader takes: the pandas index left out with the same note, and a named index
    usable as the target, as without --dask (dask itself would make it the frame's
    index, out of reach)."""
    require("dask.dataframe")
    from types import SimpleNamespace

    from gbc_core._commands import _dask_frame

    frame = sampled_frame()
    frame.index.name = index_name
    frame.to_parquet(tmp_path / "d.parquet")
    stored = index_name or "__index_level_0__"
    args = SimpleNamespace(target="y", drop=None, delimiter=None, no_header=False)
    X, y, features = _dask_frame(args, str(tmp_path / "d.parquet"), "parquet")
    assert features == ["a", "b"]
    assert f"'{stored}'" in capsys.readouterr().err
    np.testing.assert_array_equal(X.compute().to_numpy(), frame[["a", "b"]].to_numpy())
    np.testing.assert_array_equal(y.compute().to_numpy(), frame["y"].to_numpy())
    if index_name:  # the named index as the target, as the file reader allows
        args.target = index_name
        X, y, features = _dask_frame(args, str(tmp_path / "d.parquet"), "parquet")
        assert features == ["a", "b", "y"]
        np.testing.assert_array_equal(y.compute().to_numpy(), frame.index.to_numpy())


def test_unnamed_csv_column_is_refused_or_dropped(tmp_path, capsys, monkeypatch):
    frame = sampled_frame()
    frame.to_csv(tmp_path / "d.csv")  # with its index, under an empty name
    assert read_csv_text(tmp_path / "d.csv").keys() == {"", "a", "b", "y"}
    for extra in ([], ["--dask", "tcp://127.0.0.1:9", "--split-method", "hist"]):
        if extra:  # (refused before connecting to the scheduler)
            require("dask.dataframe")
        expect_error(capsys, monkeypatch, tmp_path, "train", "d.csv", "--target", "y", "-o",
                     "m.gbc", *extra,
                     words=["column 1 of d.csv has no name", "index=False", "--drop ''"])
    assert not (tmp_path / "m.gbc").exists()
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "d.csv", "--target", "y",
                          "-o", "m.gbc", "--n-estimators", "5", "--drop", "")
    assert rc == 0, err
    assert list(gbc_core.load(tmp_path / "m.gbc").feature_names_in_) == ["a", "b"]


def test_scoring_leaves_the_index_out_too(tmp_path, capsys, monkeypatch):
    # A model without feature names takes every column but --drop/--keep/--target:
    # the index of a Parquet file is not one of them; an unnamed CSV column is refused.
    frame = sampled_frame()
    frame.to_parquet(tmp_path / "d.parquet")
    frame.to_csv(tmp_path / "d.csv")
    X = frame[["a", "b"]].to_numpy()
    GradientBoostingClassifier(n_estimators=5).fit(X, frame["y"].to_numpy()).save(
        tmp_path / "m.gbc")
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "d.parquet",
                          "--drop", "y", "-o", "p.csv", "--proba")
    assert rc == 0, err
    assert "'__index_level_0__'" in err and "left out" in err
    got = np.array(read_csv_text(tmp_path / "p.csv")["proba"], dtype=np.float64)
    np.testing.assert_allclose(got, gbc_core.load(tmp_path / "m.gbc").predict_proba(X)[:, 1],
                               rtol=1e-15)
    expect_error(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "d.csv", "--drop", "y",
                 "-o", "p2.csv", words=["column 1 of d.csv has no name", "index=False"])
    expect_error(capsys, monkeypatch, tmp_path, "evaluate", "m.gbc", "d.csv", "--target", "y",
                 words=["column 1 of d.csv has no name"])


# ------------------------------------------------- gaps: option errors, inspect
def test_keep_and_chunk_rows_errors(tmp_path, capsys, monkeypatch, inputs):
    expect_error(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "d.csv", "-o", "o.csv",
                 "--keep", "id", "nope", words=["--keep", "'nope'", "d.csv"])
    expect_error(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "d.csv", "-o", "o.csv",
                 "--keep", "proba", words=["--keep", "'proba'", "output column"])
    expect_error(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "d.csv", "-o", "o.csv",
                 "--keep", "label", "--label", words=["'label'", "output column"])
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "d.csv", "-o",
                          "o.csv", "--keep", "label", "--proba")  # no label column written
    assert rc == 1 and "'label'" in err and "not found" in err
    for command in (["predict", "m.gbc", "d.csv", "-o", "o.csv"],
                    ["evaluate", "m.gbc", "d.csv", "--target", "y"]):
        for bad in ("0", "-5", "ten"):
            with pytest.raises(SystemExit) as exit_info:
                run_main(capsys, monkeypatch, tmp_path, *command, "--chunk-rows", bad)
            assert exit_info.value.code == 2
            err = capsys.readouterr().err
            assert "--chunk-rows" in err and (">= 1" in err or "integer" in err)
    _unchanged(tmp_path, inputs)


def test_inspect_tree_out_of_range(tmp_path, capsys, monkeypatch, named_model):
    n = gbc_core.load(named_model).n_estimators_
    for k in (n, n + 1, -n - 1, 10**9):
        expect_error(capsys, monkeypatch, tmp_path, "inspect", named_model, "--tree", str(k),
                     words=[f"--tree {k}", "out of range", f"{n} iterations"])
    for k in (0, n - 1, -n):
        rc, out, _ = run_main(capsys, monkeypatch, tmp_path, "inspect", named_model, "--tree",
                              str(k))
        assert rc == 0 and out.startswith(f"tree {k % n} of {n}")


def test_errors_in_a_subprocess(tmp_path, named_model):
    """Exit codes and one-line messages as a shell sees them."""
    (tmp_path / "d.svm").write_text("1 1:0.5 1:5.0\n")
    (tmp_path / "h.csv").write_text("x0,x1,x2,y")
    cases = [(["train", "d.svm", "-o", "m.gbc"], 1, "feature index 1 is given twice"),
             (["evaluate", str(named_model), "h.csv", "--target", "y"], 1, "no data rows"),
             (["predict", str(named_model), "h.csv", "-o", "h.csv"], 1, "same file"),
             (["predict", str(named_model), "h.csv", "-o", "o.csv", "--chunk-rows", "0"], 2,
              "--chunk-rows")]
    for args, code, words in cases:
        proc = subprocess.run([sys.executable, "-m", "gbc_core", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == code, proc.stderr
        assert words in proc.stderr and "Traceback" not in proc.stderr
    assert sorted(os.listdir(tmp_path)) == ["d.svm", "h.csv"]
