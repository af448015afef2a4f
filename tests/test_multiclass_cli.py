"""``gbc-core train | predict | evaluate | inspect`` and Dask scoring with 3 or more
classes, end to end on files the tests write (CSV, Parquet, LIBSVM).

Every model trained by the command line is compared with the model fitted in this
process on the same data (read with pandas, not with gbc-core's readers) with the
same parameters, and every metric with scikit-learn's.
"""

import contextlib
import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import require, run_main

pa = require("pyarrow")
pd = require("pandas")
import pyarrow.csv as pacsv  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from sklearn import metrics as skm  # noqa: E402

import gbc_core  # noqa: E402
from gbc_core import GradientBoostingClassifier  # noqa: E402

ERROR_PREFIX = "gbc-core: error: "
FEATURES = [f"x{j}" for j in range(5)]


def ok(result):
    rc, out, err = result
    assert rc == 0, err
    return out


def one_line_error(result, *words):
    """The one-line error message of a failed command, checked for ``words``."""
    rc, _, err = result
    assert rc == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERROR_PREFIX), err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


# ------------------------------------------------------------------ data
def make_data(n, labels, seed):
    """(X (n, 5) with some NaN, labels y): a softmax model of K = len(labels) classes
    whose weights depend on K only, so that files of one K share their model."""
    k = len(labels)
    weights = np.random.default_rng(100 + k).normal(size=(k, len(FEATURES)))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, len(FEATURES))).astype(np.float32).astype(np.float64)
    logits = 1.5 * X @ weights.T + rng.gumbel(size=(n, k))
    X[rng.uniform(size=n) < 0.05, 2] = np.nan
    return X, np.asarray(labels)[logits.argmax(axis=1)]


def make_table(n, labels, seed):
    X, y = make_data(n, labels, seed)
    cols = {"id": np.arange(n, dtype=np.int64) * 7 + 3}
    cols.update({name: X[:, j] for j, name in enumerate(FEATURES)})
    cols["target"] = y
    return pa.table(cols)


def write_table(table, path):
    if path.suffix == ".csv":
        pacsv.write_csv(table, path)
    else:
        pq.write_table(table, path, row_group_size=300)


def read_frame(path):
    """A data file read with pandas (not with gbc-core's readers)."""
    return pd.read_csv(path) if path.suffix == ".csv" else pd.read_parquet(path)


def write_libsvm(path, X, y):
    """LIBSVM text of dense X (zeros left out, float32 values written exactly)."""
    lines = []
    for row, label in zip(X, y):
        pairs = " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(row) if v != 0)
        lines.append(f"{label} {pairs}")
    path.write_text("\n".join(lines) + "\n")


# Models trained through the command line, each with the in-process twin fitted with
# the same parameters. name: (labels, training file, test files, CLI options,
# estimator parameters, the --eval file or None).
CASES = {
    "3 strings, --eval, early stopping": (
        ["cat", "dog", "emu"], "s3_train.csv", ("s3_test.parquet", "s3_test.csv"),
        ["--eval", "s3_test.parquet", "--n-estimators", "200", "--learning-rate", "0.5",
         "--n-iter-no-change", "3", "--random-state", "0"],
        dict(n_estimators=200, learning_rate=0.5, n_iter_no_change=3, random_state=0),
        "s3_test.parquet"),
    "5 integers, balanced, subsample, early stopping without --eval": (
        [0, 1, 2, 3, 4], "i5_train.parquet", ("i5_test.parquet", "i5_test.csv"),
        ["--n-estimators", "100", "--learning-rate", "0.5", "--class-weight", "balanced",
         "--subsample", "0.7", "--n-iter-no-change", "3", "--random-state", "3",
         "--init", "prior"],
        dict(n_estimators=100, learning_rate=0.5, class_weight="balanced", subsample=0.7,
             n_iter_no_change=3, random_state=3, init="prior"),
        None),
    "10 integers 1..10, --eval": (
        list(range(1, 11)), "i10_train.csv", ("i10_test.csv",),
        ["--eval", "i10_test.csv", "--n-estimators", "6", "--max-depth", "2"],
        dict(n_estimators=6, max_depth=2), "i10_test.csv"),
}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("multiclass")
    for seed, (labels, train, tests, *_) in enumerate(CASES.values()):
        write_table(make_table(1200, labels, 10 * seed), d / train)
        test = make_table(400, labels, 10 * seed + 1)
        for path in tests:
            write_table(test, d / path)
    return d


@pytest.fixture(scope="module")
def trained(work):
    """{case: (model file, stdout of train, in-process estimator)}, trained through
    ``gbc_core.cli.main`` in this process."""
    from gbc_core.cli import main

    out = {}
    cwd = os.getcwd()
    os.chdir(work)
    try:
        for i, (case, (labels, train, _, options, params, eval_file)) in enumerate(
                CASES.items()):
            model = f"m{i}.gbc"
            args = ["train", train, "--target", "target", "--drop", "id", "-o", model,
                    *options]
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                assert main(args) == 0
            df = read_frame(work / train)
            eval_set = None
            if eval_file is not None:
                ev = read_frame(work / eval_file)
                eval_set = (ev[FEATURES], ev["target"].to_numpy())
            ref = GradientBoostingClassifier(**params).fit(
                df[FEATURES], df["target"].to_numpy(), eval_set=eval_set)
            out[case] = (work / model, buf.getvalue(), ref)
    finally:
        os.chdir(cwd)
    return out


CASE_IDS = list(CASES)


# ----------------------------------------------------------------- train
@pytest.mark.parametrize("case", CASE_IDS)
def test_train_equals_the_in_process_fit(work, trained, case):
    path, stdout, ref = trained[case]
    labels, _, tests, _, _, eval_file = CASES[case]
    model = gbc_core.load(path)
    assert model.classes_.tolist() == sorted(labels)  # 1..10 in numeric order
    assert model.feature_names_in_.tolist() == FEATURES
    assert model.n_estimators_ == ref.n_estimators_
    assert model.best_iteration_ == ref.best_iteration_
    test = read_frame(work / tests[0])
    np.testing.assert_array_equal(model.predict_proba(test), ref.predict_proba(test[FEATURES]))
    np.testing.assert_array_equal(model.decision_function(test),
                                  ref.decision_function(test[FEATURES]))

    k, m = len(labels), ref.n_estimators_
    assert f"{k} classes {sorted(labels)}; {m} iterations ({m * k} trees)" in stdout
    if ref.n_iter_no_change is not None:  # early stopping stopped early
        assert m < ref.n_estimators
        assert f"early stopping kept the best iteration: {m} iterations" in stdout
    if eval_file is not None:
        ev = read_frame(work / eval_file)
        y, proba = ev["target"].to_numpy(), ref.predict_proba(ev[FEATURES])
        line = [ln for ln in stdout.splitlines() if ln.startswith("eval (")][0]
        assert line == (
            f"eval ({eval_file}, {len(ev):,} rows): "
            f"log-loss {skm.log_loss(y, proba, labels=ref.classes_):.5f}, "
            f"AUC {skm.roc_auc_score(y, proba, multi_class='ovr', labels=ref.classes_):.5f}, "
            f"accuracy {skm.accuracy_score(y, ref.classes_[proba.argmax(axis=1)]):.5f}")


@pytest.mark.parametrize("offset", [0, 1], ids=["labels 0..2", "labels 1..5"])
def test_libsvm_train_predict_evaluate(tmp_path, capsys, monkeypatch, offset):
    labels = list(range(offset, offset + (3 if offset == 0 else 5)))
    X, y = make_data(800, labels, 5)
    X = np.nan_to_num(X)
    Xt, yt = make_data(300, labels, 6)
    Xt = np.nan_to_num(Xt)
    write_libsvm(tmp_path / "train.svm", X, y)
    write_libsvm(tmp_path / "test.svm", Xt, yt)
    out = ok(run_main(capsys, monkeypatch, tmp_path, "train", "train.svm", "-o", "m.gbc",
                      "--eval", "test.svm", "--n-estimators", "50", "--n-iter-no-change",
                      "2", "--learning-rate", "0.5"))
    ref = GradientBoostingClassifier(n_estimators=50, n_iter_no_change=2,
                                     learning_rate=0.5).fit(X, y, eval_set=(Xt, yt))
    model = gbc_core.load(tmp_path / "m.gbc")
    assert model.classes_.tolist() == labels and model.n_estimators_ == ref.n_estimators_
    np.testing.assert_array_equal(model.predict_proba(Xt), ref.predict_proba(Xt))
    m = ref.n_estimators_
    assert f"{len(labels)} classes {labels}; {m} iterations ({m * len(labels)} trees)" in out

    ok(run_main(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "test.svm", "-o",
                "p.parquet", "--keep", "label", "--proba", "--chunk-rows", "64"))
    scores = pq.read_table(tmp_path / "p.parquet")
    assert scores.column_names == ["label"] + [f"proba_{c}" for c in labels]
    assert scores.column("label").to_pylist() == [str(c) for c in yt]  # as written
    proba = ref.predict_proba(Xt)
    for k, c in enumerate(labels):
        np.testing.assert_array_equal(scores.column(f"proba_{c}").to_numpy(), proba[:, k])

    res = json.loads(ok(run_main(capsys, monkeypatch, tmp_path, "evaluate", "m.gbc",
                                 "test.svm", "--json")))
    assert res["classes"] == labels
    assert res["log_loss"] == pytest.approx(skm.log_loss(yt, proba, labels=labels), rel=1e-9)
    assert res["roc_auc"] == pytest.approx(
        skm.roc_auc_score(yt, proba, multi_class="ovr", labels=labels), rel=1e-12)
    assert res["confusion_matrix"] == skm.confusion_matrix(
        yt, ref.predict(Xt), labels=labels).tolist()


# --------------------------------------------------------------- predict
@pytest.mark.parametrize("case", CASE_IDS)
@pytest.mark.parametrize("out_name", ["scores.parquet", "scores.csv"])
def test_predict_proba_and_label_columns(work, trained, capsys, monkeypatch, case, out_name):
    path, _, ref = trained[case]
    tests = CASES[case][2]
    test_file = tests[0] if out_name.endswith(".parquet") else tests[-1]
    ok(run_main(capsys, monkeypatch, work, "predict", path, test_file, "-o", out_name,
                "--keep", "id", "--proba", "--label", "--chunk-rows", "37"))
    out = (pq.read_table if out_name.endswith(".parquet") else pacsv.read_csv)(
        work / out_name)
    classes = ref.classes_
    assert out.column_names == ["id"] + [f"proba_{c}" for c in classes] + ["label"]
    test = read_frame(work / test_file)
    assert [str(v) for v in out.column("id").to_pylist()] == test["id"].astype(str).tolist()
    proba = ref.predict_proba(test[FEATURES])
    for k, c in enumerate(classes):
        np.testing.assert_array_equal(out.column(f"proba_{c}").to_numpy(), proba[:, k])
    # the label is the class of largest probability, as the labels were given
    assert out.column("label").to_pylist() == classes[proba.argmax(axis=1)].tolist()
    assert [p for p in os.listdir(work) if p.endswith(".tmp")] == []


def test_predict_proba_only_label_only_and_binary_unchanged(work, trained, capsys,
                                                            monkeypatch):
    path, _, ref = trained[CASE_IDS[0]]
    ok(run_main(capsys, monkeypatch, work, "predict", path, "s3_test.csv", "-o", "p.parquet"))
    assert pq.read_table(work / "p.parquet").column_names == ["proba_cat", "proba_dog",
                                                              "proba_emu"]
    ok(run_main(capsys, monkeypatch, work, "predict", path, "s3_test.csv", "-o", "l.parquet",
                "--label"))
    labels = pq.read_table(work / "l.parquet")
    assert labels.column_names == ["label"] and labels.schema.field("label").type == pa.string()
    # two classes: one 'proba' column, the probability of the positive class
    table = make_table(300, ["no", "yes"], 3)
    write_table(table, work / "binary.csv")
    ok(run_main(capsys, monkeypatch, work, "train", "binary.csv", "--target", "target",
                "--drop", "id", "-o", "binary.gbc", "--n-estimators", "5"))
    ok(run_main(capsys, monkeypatch, work, "predict", "binary.gbc", "binary.csv", "-o",
                "b.parquet", "--proba", "--label"))
    out = pq.read_table(work / "b.parquet")
    assert out.column_names == ["proba", "label"]
    df = read_frame(work / "binary.csv")
    ref2 = GradientBoostingClassifier(n_estimators=5).fit(df[FEATURES], df["target"])
    np.testing.assert_array_equal(out.column("proba").to_numpy(),
                                  ref2.predict_proba(df[FEATURES])[:, 1])


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_predict_empty_input_gives_the_columns(work, trained, capsys, monkeypatch, fmt):
    for case, label_type in ((CASE_IDS[0], pa.string()), (CASE_IDS[2], pa.int64())):
        path, _, ref = trained[case]
        empty = work / f"empty.{fmt}"
        write_table(make_table(10, ["a", "b"], 0).slice(0, 0), empty)
        ok(run_main(capsys, monkeypatch, work, "predict", path, empty, "-o", "e.parquet",
                    "--keep", "id", "--proba", "--label"))
        out = pq.read_table(work / "e.parquet")
        assert out.num_rows == 0
        assert out.column_names == ["id"] + [f"proba_{c}" for c in ref.classes_] + ["label"]
        assert out.schema.field("proba_" + str(ref.classes_[0])).type == pa.float64()
        assert out.schema.field("label").type == label_type


def test_keep_column_named_like_an_output_column(work, trained, capsys, monkeypatch):
    path, _, _ = trained[CASE_IDS[0]]
    table = make_table(20, ["cat", "dog", "emu"], 0)
    write_table(table.append_column("proba_cat", pa.array(["x"] * 20)), work / "clash.csv")
    (work / "clash.parquet").write_bytes(b"previous")
    one_line_error(run_main(capsys, monkeypatch, work, "predict", path, "clash.csv", "-o",
                            "clash.parquet", "--keep", "proba_cat"),
                   "--keep column 'proba_cat'", "output column", "proba_dog")
    assert (work / "clash.parquet").read_bytes() == b"previous"
    # without --proba the probability columns are not written: no clash
    ok(run_main(capsys, monkeypatch, work, "predict", path, "clash.csv", "-o",
                "clash.parquet", "--keep", "proba_cat", "--label"))
    assert pq.read_table(work / "clash.parquet").column_names == ["proba_cat", "label"]


# -------------------------------------------------------------- evaluate
def sklearn_metrics(y, proba, classes):
    pred = classes[proba.argmax(axis=1)]
    return {
        "log_loss": skm.log_loss(y, proba, labels=classes),
        "accuracy": skm.accuracy_score(y, pred),
        "roc_auc": skm.roc_auc_score(y, proba, multi_class="ovr", average="macro",
                                     labels=classes),
        "confusion_matrix": skm.confusion_matrix(y, pred, labels=classes).tolist(),
    }


@pytest.mark.parametrize("case", CASE_IDS)
def test_evaluate_agrees_with_scikit_learn(work, trained, capsys, monkeypatch, case):
    path, _, ref = trained[case]
    for test_file in CASES[case][2]:
        test = read_frame(work / test_file)
        y = test["target"].to_numpy()
        expected = sklearn_metrics(y, ref.predict_proba(test[FEATURES]), ref.classes_)
        res = json.loads(ok(run_main(capsys, monkeypatch, work, "evaluate", path, test_file,
                                     "--target", "target", "--json", "--chunk-rows", "150")))
        assert res["n_rows"] == len(test) and res["classes"] == ref.classes_.tolist()
        assert res["log_loss"] == pytest.approx(expected["log_loss"], rel=1e-9)
        assert res["roc_auc"] == pytest.approx(expected["roc_auc"], rel=1e-12)
        assert res["accuracy"] == expected["accuracy"]
        assert res["confusion_matrix"] == expected["confusion_matrix"]
        assert None not in res["roc_auc_per_class"]

    text = ok(run_main(capsys, monkeypatch, work, "evaluate", path, test_file, "--target",
                       "target"))
    assert f"log-loss  {expected['log_loss']:.6f}" in text
    assert f"ROC AUC (macro one-vs-rest)   {expected['roc_auc']:.6f}" in text
    assert f"accuracy  {expected['accuracy']:.6f}" in text
    rows = text.split("(rows: true, columns: predicted)\n")[1].splitlines()
    assert rows[0].split() == [str(c) for c in ref.classes_]
    assert [r.split() for r in rows[1:]] == [
        [str(c)] + [str(v) for v in counts]
        for c, counts in zip(ref.classes_, expected["confusion_matrix"])]


def test_evaluate_with_a_class_absent_from_the_data(work, trained, capsys, monkeypatch):
    """The AUC averages the one-vs-rest AUCs of the classes present (scikit-learn's
    roc_auc_score cannot score such data); the confusion matrix stays K x K."""
    path, _, ref = trained[CASE_IDS[0]]
    test = read_frame(work / "s3_test.csv")
    test = test[test["target"] != "emu"]
    test.to_csv(work / "no_emu.csv", index=False)
    proba = ref.predict_proba(test[FEATURES])
    y = test["target"].to_numpy()
    aucs = [skm.roc_auc_score(y == c, proba[:, k]) for k, c in enumerate(["cat", "dog"])]
    res = json.loads(ok(run_main(capsys, monkeypatch, work, "evaluate", path, "no_emu.csv",
                                 "--target", "target", "--json")))
    assert res["roc_auc_per_class"][:2] == pytest.approx(aucs, rel=1e-12)
    assert res["roc_auc_per_class"][2] is None
    assert res["roc_auc"] == pytest.approx(np.mean(aucs), rel=1e-12)
    assert res["log_loss"] == pytest.approx(
        skm.log_loss(y, proba, labels=ref.classes_), rel=1e-9)
    assert res["confusion_matrix"] == skm.confusion_matrix(
        y, ref.predict(test[FEATURES]), labels=ref.classes_).tolist()
    assert res["confusion_matrix"][2] == [0, 0, 0]
    text = ok(run_main(capsys, monkeypatch, work, "evaluate", path, "no_emu.csv", "--target",
                       "target"))
    assert (f"ROC AUC (macro one-vs-rest over 2 of 3 classes; not in the data: 'emu')   "
            f"{np.mean(aucs):.6f}") in text
    # the rule is stated in the command's help
    with pytest.raises(SystemExit):
        run_main(capsys, monkeypatch, work, "evaluate", "--help")
    help_text = " ".join(capsys.readouterr().out.split())
    assert "one-vs-rest AUCs of the classes that occur in DATA" in help_text
    assert "absent from DATA has no AUC and is left out of the average" in help_text


# ------------------------------------------------------------- labels
def test_numeric_looking_and_string_labels(work, trained, capsys, monkeypatch):
    """A CSV target of 1..10 gives integer classes; the same labels written as text in
    Parquet, or as numbers in a CSV whose first block has numbers only and a later
    row a word, are matched by value."""
    path, _, ref = trained[CASE_IDS[2]]
    test = read_frame(work / "i10_test.csv")
    expected = sklearn_metrics(test["target"].to_numpy(), ref.predict_proba(test[FEATURES]),
                               ref.classes_)
    as_text = pa.Table.from_pandas(test.astype({"target": str}), preserve_index=False)
    target_type = as_text.schema.field("target").type
    assert pa.types.is_string(target_type) or pa.types.is_large_string(target_type)
    pq.write_table(as_text, work / "i10_text.parquet")
    res = json.loads(ok(run_main(capsys, monkeypatch, work, "evaluate", path,
                                 "i10_text.parquet", "--target", "target", "--json")))
    assert res["classes"] == list(range(1, 11)) and res["accuracy"] == expected["accuracy"]
    assert res["confusion_matrix"] == expected["confusion_matrix"]

    # String classes, one of which is a word: a model trained on such a CSV evaluates
    # on the same file although its first block holds numbers only.
    import gbc_core._tabular as tabular

    X, y = make_data(3000, ["1", "2", "x"], 7)
    y[y == "x"] = "2"
    y[-1] = "x"  # the one word is on the last line
    frame = pd.DataFrame(X, columns=FEATURES).assign(target=y)
    frame.to_csv(work / "late_word.csv", index=False)
    monkeypatch.setattr(tabular, "CSV_BLOCK_SIZE", 4096)
    ok(run_main(capsys, monkeypatch, work, "train", "late_word.csv", "--target", "target",
                "-o", "late.gbc", "--n-estimators", "3"))
    model_ref = GradientBoostingClassifier(n_estimators=3).fit(frame[FEATURES], y)
    assert gbc_core.load(work / "late.gbc").classes_.tolist() == ["1", "2", "x"]
    res = json.loads(ok(run_main(capsys, monkeypatch, work, "evaluate", "late.gbc",
                                 "late_word.csv", "--target", "target", "--json")))
    proba = model_ref.predict_proba(frame[FEATURES])
    assert res["log_loss"] == pytest.approx(
        skm.log_loss(y, proba, labels=model_ref.classes_), rel=1e-9)
    assert res["confusion_matrix"] == skm.confusion_matrix(
        y, model_ref.predict(frame[FEATURES]), labels=model_ref.classes_).tolist()


def test_a_label_only_in_the_evaluation_data_is_an_error(work, trained, capsys, monkeypatch):
    path, _, _ = trained[CASE_IDS[0]]
    test = read_frame(work / "s3_test.csv")
    test.loc[[4, 9], "target"] = "fox"
    test.to_csv(work / "fox.csv", index=False)
    one_line_error(run_main(capsys, monkeypatch, work, "evaluate", path, "fox.csv",
                            "--target", "target"),
                   "target column 'target' of fox.csv", "['fox']", "not classes of the model",
                   "['cat', 'dog', 'emu']")
    one_line_error(run_main(capsys, monkeypatch, work, "train", "s3_train.csv", "--target",
                            "target", "--drop", "id", "-o", "fox.gbc", "--eval", "fox.csv"),
                   "target column 'target' of fox.csv", "['fox']",
                   "not classes of the training data s3_train.csv")
    assert not (work / "fox.gbc").exists()
    # integer classes: the unknown label as written
    test = read_frame(work / "i10_test.csv")
    test.loc[3, "target"] = 11
    test.to_csv(work / "eleven.csv", index=False)
    one_line_error(run_main(capsys, monkeypatch, work, "evaluate", trained[CASE_IDS[2]][0],
                            "eleven.csv", "--target", "target"), "['11']")
    # a NaN label (a float column; NaN, not null) is a missing label
    table = make_table(50, list(range(1, 11)), 3)
    target = table.column("target").to_numpy().astype(np.float64)
    target[5] = np.nan
    pq.write_table(table.set_column(6, "target", pa.array(target)), work / "nan_label.parquet")
    one_line_error(run_main(capsys, monkeypatch, work, "evaluate", trained[CASE_IDS[2]][0],
                            "nan_label.parquet", "--target", "target"),
                   "target column 'target' of nan_label.parquet", "NaN", "needs a label")
    # --eval with the training labels written as text trains as with the numbers
    test = read_frame(work / "i10_test.csv")
    pq.write_table(pa.Table.from_pandas(test.astype({"target": str}), preserve_index=False),
                   work / "i10_eval_text.parquet")
    ok(run_main(capsys, monkeypatch, work, "train", "i10_train.csv", "--target", "target",
                "--drop", "id", "-o", "text_eval.gbc", "--eval", "i10_eval_text.parquet",
                "--n-estimators", "6", "--max-depth", "2"))
    np.testing.assert_array_equal(
        gbc_core.load(work / "text_eval.gbc").predict_proba(test[FEATURES]),
        trained[CASE_IDS[2]][2].predict_proba(test[FEATURES]))


# --------------------------------------------------------------- inspect
def test_inspect_summary_per_class(work, trained, capsys, monkeypatch):
    path, _, ref = trained[CASE_IDS[1]]  # 5 classes, init="prior": F0 differs per class
    m, k = ref.n_estimators_, 5
    text = ok(run_main(capsys, monkeypatch, work, "inspect", path))
    assert "classes    5: [0, 1, 2, 3, 4]" in text
    assert f"trees      {m * k} ({m} iterations x {k}, one per class)" in text
    f0 = ", ".join(f"{c}: {v:g}" for c, v in zip(ref.classes_, ref.init_raw_))
    assert f"F0         {f0}\n" in text
    info = json.loads(ok(run_main(capsys, monkeypatch, work, "inspect", path, "--json")))
    assert info["classes"] == [0, 1, 2, 3, 4] and info["n_iterations"] == m
    assert info["trees_per_iteration"] == k and info["n_trees"] == m * k
    assert info["init_raw"] == ref.init_raw_.tolist()
    assert info["best_iteration"] == ref.best_iteration_


def test_inspect_trees_of_an_iteration(work, trained, capsys, monkeypatch):
    path, _, ref = trained[CASE_IDS[0]]
    last = ref.n_estimators_ - 1
    text = ok(run_main(capsys, monkeypatch, work, "inspect", path, "--tree", "-1"))
    headers = [ln for ln in text.splitlines() if ln.startswith("iteration ")]
    assert [h.split(":")[0] for h in headers] == [
        f"iteration {last} of {ref.n_estimators_}, tree of class '{c}'"
        for c in ref.classes_]
    drawings = text.split("iteration ")[1:]
    for c, drawing, tree in zip(ref.classes_, drawings, ref.estimators_[last]):
        lines = drawing.strip().splitlines()
        assert len(lines) == 1 + tree.node_count
        assert lines[1].startswith(f"[0] {FEATURES[tree.feature[0]]} <= ")
        assert sum("leaf value=" in ln for ln in lines) == int((tree.feature < 0).sum())

    one = ok(run_main(capsys, monkeypatch, work, "inspect", path, "--tree", "1", "--class",
                      "dog"))
    assert one.startswith(f"iteration 1 of {ref.n_estimators_}, tree of class 'dog'")
    assert "class 'cat'" not in one and "class 'emu'" not in one
    assert len(one.strip().splitlines()) == 1 + ref.estimators_[1, 1].node_count

    trees = json.loads(ok(run_main(capsys, monkeypatch, work, "inspect", path, "--tree", "1",
                                   "--json")))
    assert [t["class"] for t in trees] == ["cat", "dog", "emu"]
    for t, tree in zip(trees, ref.estimators_[1]):
        assert t["nodes"]["feature"] == tree.feature.tolist()
        assert t["nodes"]["threshold"] == tree.threshold.tolist()
        assert t["nodes"]["value"] == tree.value.tolist()
    [emu] = json.loads(ok(run_main(capsys, monkeypatch, work, "inspect", path, "--tree", "1",
                                   "--class", "emu", "--json")))
    assert emu["class"] == "emu"
    assert emu["nodes"]["left"] == ref.estimators_[1, 2].children_left.tolist()
    # integer classes are named as written
    path10, _, ref10 = trained[CASE_IDS[2]]
    [ten] = json.loads(ok(run_main(capsys, monkeypatch, work, "inspect", path10, "--tree", "0",
                                   "--class", "10", "--json")))
    assert ten["class"] == 10
    assert ten["nodes"]["value"] == ref10.estimators_[0, 9].value.tolist()


@pytest.mark.parametrize("labels", [[-3, -1, 10], [0.5, 1.5, 2.5], ["-1", "x", "10"]])
def test_inspect_class_of_object_labels(work, capsys, monkeypatch, labels):
    """Labels given as an object array (Python ints, floats, strings): --class names
    each as written on the command line, as for typed arrays (before: an object
    array of numbers matched no number)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = np.array(labels, dtype=object)[np.arange(60) % len(labels)]
    model = GradientBoostingClassifier(n_estimators=2, max_depth=1).fit(X, y)
    assert model.classes_.dtype == object
    model.save(work / "objects.gbc")
    for k, label in enumerate(model.classes_.tolist()):
        [tree] = json.loads(ok(run_main(capsys, monkeypatch, work, "inspect", "objects.gbc",
                                        "--tree", "0", "--class", str(label), "--json")))
        assert tree["class"] == label
        assert tree["nodes"]["value"] == model.booster_.ensemble.tree_nodes(0, k)[
            "value"].tolist()


def test_inspect_class_errors(work, trained, capsys, monkeypatch):
    path, _, _ = trained[CASE_IDS[0]]
    one_line_error(run_main(capsys, monkeypatch, work, "inspect", path, "--tree", "0",
                            "--class", "fox"),
                   "--class 'fox'", "not a class", "['cat', 'dog', 'emu']")
    one_line_error(run_main(capsys, monkeypatch, work, "inspect", path, "--class", "cat"),
                   "--class", "--tree")
    write_table(make_table(200, ["no", "yes"], 1), work / "bin.csv")
    ok(run_main(capsys, monkeypatch, work, "train", "bin.csv", "--target", "target", "-o",
                "bin.gbc", "--n-estimators", "2"))
    one_line_error(run_main(capsys, monkeypatch, work, "inspect", "bin.gbc", "--tree", "0",
                            "--class", "yes"), "--class", "3 or more classes")


# ------------------------------------------------------------------ Dask
@pytest.fixture(scope="module")
def cluster():
    distributed = require("distributed")
    require("dask.dataframe")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None, worker_dashboard_address=None) as c:
        with distributed.Client(c) as client:
            yield c, client


def test_dask_scoring(cluster, work, trained):
    import dask.array as da
    import dask.dataframe as dd

    from gbc_core import dask as gdask

    c, client = cluster
    path, _, ref = trained[CASE_IDS[1]]
    test = read_frame(work / "i5_test.parquet")
    model = gbc_core.load(path)
    ddf = dd.from_pandas(test, npartitions=3)
    X = test[FEATURES].to_numpy()
    dX = da.from_array(X, chunks=(150, 5))
    proba, raw = ref.predict_proba(test[FEATURES]), ref.decision_function(test[FEATURES])
    for data in (ddf, dX):
        p = gdask.predict_proba(model, data, client=client).compute()
        assert p.shape == (len(test), 5)
        np.testing.assert_array_equal(p, proba)
        d = gdask.decision_function(model, data, client=client).compute()
        assert d.shape == (len(test), 5)
        np.testing.assert_array_equal(d, raw)
        np.testing.assert_array_equal(gdask.predict(model, data, client=client).compute(),
                                      ref.classes_[proba.argmax(axis=1)])
    lazy = gdask.predict_proba(model, dX, client=client)
    assert lazy.shape == (len(test), 5)

    proc = subprocess.run(
        [sys.executable, "-m", "gbc_core", "predict", path.name, "i5_test.parquet", "-o",
         "dask_scores.parquet", "--keep", "id", "--proba", "--label", "--chunk-rows", "70",
         "--dask", c.scheduler_address],
        cwd=work, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = pq.read_table(work / "dask_scores.parquet")
    assert out.column_names == ["id"] + [f"proba_{k}" for k in range(5)] + ["label"]
    assert out.column("id").to_pylist() == test["id"].tolist()
    for k in range(5):
        np.testing.assert_array_equal(out.column(f"proba_{k}").to_numpy(), proba[:, k])
    assert out.column("label").to_pylist() == ref.classes_[proba.argmax(axis=1)].tolist()


# ------------------------------------------------ many classes: evaluate and chunks
def many_class_model(n_classes, n_features=2):
    """A Booster of ``n_classes`` classes, one iteration of stumps: output k splits
    feature 0 at k and adds 1 on the right, so that the predicted class of a row is
    the largest k < x0 (rows spread over every class)."""
    from gbc_core import Booster, Ensemble
    from gbc_core._common import NODE_DTYPE

    trees = []
    for k in range(n_classes):
        nodes = np.zeros(3, dtype=NODE_DTYPE)
        nodes["feature"] = [0, -1, -1]
        nodes["left"] = [1, -1, -1]
        nodes["right"] = [2, -1, -1]
        nodes["threshold"] = [k + 0.5 - n_classes, np.inf, np.inf]  # exact in float32
        nodes["threshold32"] = nodes["threshold"]
        nodes["value"] = [0.0, 0.0, 1.0 + k * 1e-3]
        nodes["depth"] = [0, 1, 1]
        nodes["weighted_n"] = [2.0, 1.0, 1.0]
        nodes["n_samples"] = [2, 1, 1]
        trees.append(nodes)
    ensemble = Ensemble.from_trees(trees, n_outputs=n_classes, init_raw=np.zeros(n_classes),
                                   learning_rate=1.0, n_features=n_features)
    return Booster(ensemble, np.arange(n_classes) * 3)


def test_evaluate_confusion_matrix_of_many_classes(tmp_path, capsys, monkeypatch):
    """1000 classes on 3000 rows: the counts of scikit-learn's confusion_matrix (the
    matrix is counted in one pass over the rows, not one per pair of classes)."""
    from gbc_core.metrics import confusion_matrix

    k, n = 1000, 3000
    model = many_class_model(k)
    model.save(tmp_path / "m.gbc")
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(-k, 0, n), rng.normal(size=n)])
    y = rng.integers(0, k, n) * 3
    y[: n // 2] = model.predict(X[: n // 2].astype(np.float32))  # half right
    pq.write_table(pa.table({"f0": X[:, 0], "f1": X[:, 1], "y": y}), tmp_path / "d.parquet")
    res = json.loads(ok(run_main(capsys, monkeypatch, tmp_path, "evaluate", "m.gbc",
                                 "d.parquet", "--target", "y", "--json")))
    pred = model.predict(X.astype(np.float32))
    assert len(np.unique(pred)) > k // 2
    expected = skm.confusion_matrix(y, pred, labels=model.classes_)
    assert res["confusion_matrix"] == expected.tolist()
    assert res["accuracy"] == skm.accuracy_score(y, pred)
    # the public function: labels in any order, labels outside them not counted
    order = model.classes_[::-1][: k - 7]
    np.testing.assert_array_equal(confusion_matrix(y, pred, order),
                                  skm.confusion_matrix(y, pred, labels=order))
    np.testing.assert_array_equal(confusion_matrix(y.astype(str), pred.astype(str),
                                                   order.astype(str)),
                                  skm.confusion_matrix(y.astype(str), pred.astype(str),
                                                       labels=order.astype(str)))


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_default_chunk_is_bounded_by_the_number_of_classes(tmp_path, capsys, monkeypatch,
                                                           command):
    """The default chunk holds at most CHUNK_SCORE_VALUES scores (rows x classes)
    however many classes; an explicit --chunk-rows is honoured."""
    from gbc_core import _commands

    k, n = 1000, 10_000
    many_class_model(k).save(tmp_path / "m.gbc")
    rng = np.random.default_rng(1)
    pq.write_table(pa.table({"f0": rng.uniform(-k, 0, n), "f1": rng.normal(size=n),
                             "y": rng.integers(0, k, n) * 3}), tmp_path / "d.parquet")
    seen = []
    local_scores = _commands._local_scores

    def recording(model, chunks, n_jobs=None):
        for chunk, raw in local_scores(model, chunks, n_jobs):
            seen.append(raw.shape)
            yield chunk, raw

    monkeypatch.setattr(_commands, "_local_scores", recording)
    args = (["-o", "o.parquet"] if command == "predict" else ["--target", "y"])
    for given, most in ((None, _commands.CHUNK_SCORE_VALUES // k), ("9000", 9000)):
        seen.clear()
        extra = [] if given is None else ["--chunk-rows", given]
        ok(run_main(capsys, monkeypatch, tmp_path, command, "m.gbc", "d.parquet", *args,
                    *extra))
        assert sum(rows for rows, _ in seen) == n
        assert max(rows for rows, _ in seen) == most
        assert all(cols == k for _, cols in seen)
    assert _commands.CHUNK_SCORE_VALUES // k < _commands.DEFAULT_CHUNK_ROWS
    assert _commands.default_chunk_rows(many_class_model(3)) == _commands.DEFAULT_CHUNK_ROWS
