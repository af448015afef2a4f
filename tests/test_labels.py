"""Labels keep their value or get a clear error: one rule for arrays, pandas, polars and
every file format (CSV, TSV, Parquet, LIBSVM), for ``train``, ``evaluate``, ``predict
--label`` and ``inspect --class``.

The reference for in-memory labels is scikit-learn (``type_of_target`` and
``GradientBoostingClassifier.fit``); for files, the labels as the file writes them.
"""

import json

import numpy as np
import pytest

from conftest import require, run_main

pa = require("pyarrow")
pd = require("pandas")
import pyarrow.parquet as pq  # noqa: E402
from sklearn import metrics as skm  # noqa: E402
from sklearn.ensemble import GradientBoostingClassifier as SkGBC  # noqa: E402

import gbc_core  # noqa: E402
from gbc_core import GradientBoostingClassifier  # noqa: E402

ERROR_PREFIX = "gbc-core: error: "


def ok(result):
    rc, out, err = result
    assert rc == 0, err
    return out


def one_line_error(result, *words):
    rc, _, err = result
    assert rc == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERROR_PREFIX), err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def write_csv(path, labels, seed=0, delimiter=","):
    """A CSV (or TSV) of two features and the target ``y`` written as the ``labels``
    texts; the features separate the labels (so that every class is predicted)."""
    rng = np.random.default_rng(seed)
    distinct = sorted(set(labels))
    lines = [delimiter.join(["a", "b", "y"])]
    for label in labels:
        k = distinct.index(label)
        lines.append(delimiter.join([repr(float(k + 0.1 * rng.normal())),
                                     repr(float(rng.normal())), label]))
    path.write_text("\n".join(lines) + "\n")


def read_text_column(path, name):
    """A column of a CSV output as its texts (never type-inferred)."""
    import pyarrow.csv as pacsv

    table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(
        column_types={name: pa.string()}, strings_can_be_null=False))
    return table.column(name).to_pylist()


# ------------------------------------------------------- CSV target labels
@pytest.mark.parametrize("texts, classes", [
    # beyond int64: uint64 (was cast to int64 without a range check: -2**63)
    (["18446744073709551615", "1"], [1, 18446744073709551615]),
    # 1e20 does not write itself back (Python writes 1e+20): text (was int64 garbage)
    (["1e20", "1"], ["1", "1e20"]),
    (["1e+20", "2.5"], [2.5, 1e20]),
    # a number would not give these texts back: text, four classes (was 7, 1: two)
    (["007", "1", "01", "7"], ["007", "01", "1", "7"]),
    (["+1", "-1"], ["+1", "-1"]),
    # two texts of one number: text (one class each)
    (["1", "1.0"], ["1", "1.0"]),
    # numbers that write themselves back stay numbers
    (["3", "-2", "10"], [-2, 3, 10]),
    (["0.5", "2"], [0.5, 2.0]),
    (["true", "false"], [False, True]),
    # beyond 64 bits: text
    (["36893488147419103232", "1"], ["1", "36893488147419103232"]),
])
@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_csv_target_labels_keep_their_value(tmp_path, capsys, monkeypatch, texts, classes,
                                            fmt):
    labels = texts * 40
    write_csv(tmp_path / f"d.{fmt}", labels, delimiter="," if fmt == "csv" else "\t")
    ok(run_main(capsys, monkeypatch, tmp_path, "train", f"d.{fmt}", "--target", "y", "-o",
                "m.gbc", "--n-estimators", "5"))
    model = gbc_core.load(tmp_path / "m.gbc")
    assert model.classes_.tolist() == classes
    assert [type(c) for c in model.classes_.tolist()] == [type(c) for c in classes]
    # evaluate matches the file's labels with the classes (every row, no error)
    res = json.loads(ok(run_main(capsys, monkeypatch, tmp_path, "evaluate", "m.gbc",
                                 f"d.{fmt}", "--target", "y", "--json")))
    assert res["n_rows"] == len(labels)
    assert np.asarray(res["confusion_matrix"]).sum() == len(labels)
    # predict --label writes each class as the file wrote it (numbers: their text)
    ok(run_main(capsys, monkeypatch, tmp_path, "predict", "m.gbc", f"d.{fmt}", "-o",
                "o.csv", "--label"))
    written = set(read_text_column(tmp_path / "o.csv", "label"))
    given = {str(c).lower() if isinstance(c, bool) else
             repr(c) if isinstance(c, float) and not c.is_integer() else str(c)
             for c in classes}
    assert written <= given | {str(int(c)) for c in classes
                               if isinstance(c, float) and c.is_integer()}


def test_csv_target_read_as_text_throughout_the_file(tmp_path, capsys, monkeypatch):
    """The type of the target is decided by every row, not by the first block."""
    labels = ["1", "2"] * 40_000 + ["02"]  # the last row, far past the first block
    write_csv(tmp_path / "d.csv", labels)
    ok(run_main(capsys, monkeypatch, tmp_path, "train", "d.csv", "--target", "y", "-o",
                "m.gbc", "--n-estimators", "2", "--max-depth", "1"))
    assert gbc_core.load(tmp_path / "m.gbc").classes_.tolist() == ["02", "1", "2"]


# ----------------------------------------------------------- LIBSVM labels
def test_libsvm_label_beyond_float64_is_an_error(tmp_path, capsys, monkeypatch):
    lines = [f"{1 if i % 2 else 0} 1:{i % 7}" for i in range(50)]
    lines[31] = "18446744073709551615 1:3"
    (tmp_path / "d.svm").write_text("\n".join(lines) + "\n")
    one_line_error(run_main(capsys, monkeypatch, tmp_path, "train", "d.svm", "-o", "m.gbc"),
                   "line 32", "18446744073709551615", "float64")
    ok_lines = lines[:31] + lines[32:]
    (tmp_path / "ok.svm").write_text("\n".join(ok_lines) + "\n")
    ok(run_main(capsys, monkeypatch, tmp_path, "train", "ok.svm", "-o", "m.gbc",
                "--n-estimators", "2"))
    one_line_error(run_main(capsys, monkeypatch, tmp_path, "evaluate", "m.gbc", "d.svm"),
                   "line 32", "18446744073709551615")
    # predict does not use the labels: --keep label passes the text through
    ok(run_main(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "d.svm", "-o", "o.csv",
                "--keep", "label"))
    assert read_text_column(tmp_path / "o.csv", "label")[31] == "18446744073709551615"
    # float64 holds 1e20 and 2**60 exactly: they are labels
    lines[31] = "1e20 1:3"
    lines[32] = "1152921504606846976 1:3"
    (tmp_path / "d.svm").write_text("\n".join(lines) + "\n")
    ok(run_main(capsys, monkeypatch, tmp_path, "train", "d.svm", "-o", "m.gbc",
                "--n-estimators", "2"))
    assert gbc_core.load(tmp_path / "m.gbc").classes_.tolist() == [0.0, 1.0, 2.0**60, 1e20]


# -------------------------------------------------------- in-memory labels
X6 = np.arange(12.0).reshape(-1, 2)


@pytest.mark.parametrize("y", [
    np.array([1, True, 2] * 2, dtype=object),
    np.array([True, 2, 3] * 2, dtype=object),
    np.array([np.True_, 1, 0] * 2, dtype=object),
    np.array([1.5, False, 2.5] * 2, dtype=object),
])
def test_booleans_mixed_with_numbers_are_refused_as_scikit_learn(y):
    with pytest.raises(ValueError, match="Unknown label type"):
        SkGBC(n_estimators=1).fit(X6, y)
    with pytest.raises(ValueError, match="Unknown label type: y mixes booleans and numbers"):
        GradientBoostingClassifier(n_estimators=1).fit(X6, y)
    with pytest.raises(ValueError, match="Unknown label type"):
        GradientBoostingClassifier(n_estimators=1).fit(X6, pd.Series(y))


@pytest.mark.parametrize("y", [
    [1, True, 2] * 2,                      # NumPy makes it int: [1, 1, 2]
    np.array([True, False] * 3, dtype=object),
    np.array([1, 2, 3] * 2, dtype=object),
])
def test_labels_of_one_kind_are_accepted(y):
    model = GradientBoostingClassifier(n_estimators=2).fit(X6, y)
    assert model.classes_.tolist() == np.unique(np.asarray(y)).tolist()


def test_object_integer_labels_beyond_int64_are_refused():
    y = np.array([2**70, 1, 2**70, 1, 2**70, 1], dtype=object)
    with pytest.raises(ValueError, match="64-bit"):
        GradientBoostingClassifier(n_estimators=1).fit(X6, y)


# ----------------------------------------- categorical targets (unused categories)
def categorical_files(tmp_path):
    rng = np.random.default_rng(3)
    n = 300
    X = rng.normal(size=(n, 2))
    y = np.array(["ant", "bee", "cat"])[(X[:, 0] > -0.4).astype(int) + (X[:, 0] > 0.4)]
    pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1], "y": pd.Categorical(
        y, categories=["ant", "unused", "bee", "cat"])}).to_parquet(tmp_path / "pandas.parquet")
    pl = require("polars")
    pl.DataFrame({"x0": X[:, 0], "x1": X[:, 1], "y": pl.Series(y).cast(
        pl.Enum(["unused", "cat", "bee", "ant", "zzz"]))}).write_parquet(tmp_path / "polars.parquet")
    return X, y


@pytest.mark.parametrize("source", ["pandas", "polars"])
def test_categorical_target_with_unused_categories(tmp_path, capsys, monkeypatch, source):
    X, y = categorical_files(tmp_path)
    path = f"{source}.parquet"
    assert pa.types.is_dictionary(pq.read_schema(tmp_path / path).field("y").type)
    ok(run_main(capsys, monkeypatch, tmp_path, "train", path, "--target", "y", "-o", "m.gbc",
                "--n-estimators", "5"))
    model = gbc_core.load(tmp_path / "m.gbc")
    assert model.classes_.tolist() == ["ant", "bee", "cat"]
    res = json.loads(ok(run_main(capsys, monkeypatch, tmp_path, "evaluate", "m.gbc", path,
                                 "--target", "y", "--json", "--chunk-rows", "70")))
    pred = model.predict(X.astype(np.float32))
    assert res["confusion_matrix"] == skm.confusion_matrix(
        y, pred, labels=["ant", "bee", "cat"]).tolist()
    # in memory: the values the rows hold, as scikit-learn
    frame = pd.read_parquet(tmp_path / path)
    mem = GradientBoostingClassifier(n_estimators=5).fit(frame[["x0", "x1"]], frame["y"])
    assert mem.classes_.tolist() == ["ant", "bee", "cat"]
    pl = require("polars")
    frame = pl.read_parquet(tmp_path / path)
    mem = GradientBoostingClassifier(n_estimators=5).fit(frame.select("x0", "x1"), frame["y"])
    assert mem.classes_.tolist() == ["ant", "bee", "cat"]


# ------------------------------------------------------------- inspect --class
def test_inspect_class_matches_labels_by_value_as_evaluate(tmp_path, capsys, monkeypatch):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(240, 2))
    y = np.array([-1, 1, 7])[(X[:, 0] > -0.4).astype(int) + (X[:, 0] > 0.4)]
    GradientBoostingClassifier(n_estimators=3).fit(X, y).save(tmp_path / "m.gbc")
    model = gbc_core.load(tmp_path / "m.gbc")
    for given, code in (("+1", 1), ("1", 1), ("7.0", 2), ("-1", 0), ("-1.0", 0)):
        shown = json.loads(ok(run_main(capsys, monkeypatch, tmp_path, "inspect", "m.gbc",
                                       "--tree", "2", "--class", given, "--json")))
        assert [s["class"] for s in shown] == [int(model.classes_[code])]
        assert shown[0]["nodes"]["value"] == model.ensemble.tree_nodes(2, code)["value"].tolist()
        # evaluate takes the same text as the same class
        (tmp_path / "e.csv").write_text(f"x0,x1,y\n0.9,0,{given}\n")
        res = json.loads(ok(run_main(capsys, monkeypatch, tmp_path, "evaluate", "m.gbc",
                                     "e.csv", "--target", "y", "--json")))
        assert np.asarray(res["confusion_matrix"])[code].sum() == 1
    for given in ("2", "1.5", "+", "x"):
        one_line_error(run_main(capsys, monkeypatch, tmp_path, "inspect", "m.gbc", "--tree",
                                "0", "--class", given), "is not a class")
