"""End-to-end tests of ``gbc-core train | predict | evaluate | inspect`` in subprocesses.

The shared real files (agaricus LIBSVM, HIGGS sample) are used when they sit beside
the checkout (``../shared/data``); generated files of the same shape otherwise.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import ERROR_PREFIX, check_error, cli, default_sigint, ok, require, run_main

pa = require("pyarrow")
import pyarrow.csv as pacsv  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import gbc_core  # noqa: E402
from gbc_core.metrics import accuracy, confusion_matrix, log_loss_from_raw, roc_auc  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


# ------------------------------------------------------------------ data
def make_table(n, seed, label_names=("no", "yes")):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)).astype(np.float32).astype(np.float64)
    X[rng.uniform(size=n) < 0.05, 2] = np.nan  # some missing values
    logit = 1.5 * X[:, 0] - X[:, 1] ** 2 + np.nan_to_num(X[:, 2]) + 0.3
    y = rng.uniform(size=n) < 1 / (1 + np.exp(-logit))
    cols = {"id": np.arange(n, dtype=np.int64) * 7 + 3}
    cols.update({f"x{j}": X[:, j] for j in range(5)})
    cols["target"] = np.where(y, label_names[1], label_names[0])
    return pa.table(cols)


def make_libsvm_text(n, seed):
    """Agaricus-like LIBSVM: 22 one-hot groups, 126 features, separable labels."""
    rng = np.random.default_rng(seed)
    sizes = [6, 4, 10, 2, 9, 2, 2, 2, 12, 2, 5, 4, 4, 9, 9, 1, 4, 3, 5, 9, 6, 6][:22]
    starts = np.concatenate([[1], np.cumsum(sizes)[:-1] + 1])
    lines = []
    for _ in range(n):
        picks = [int(s + rng.integers(0, k)) for s, k in zip(starts, sizes)]
        label = int((picks[4] - starts[4]) in (1, 2, 5) or (picks[19] - starts[19]) == 3)
        lines.append(f"{label} " + " ".join(f"{i}:1" for i in picks))
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    train = make_table(3000, 0)
    test = make_table(1500, 1)
    pacsv.write_csv(train, d / "train.csv")
    pq.write_table(train, d / "train.parquet")
    # The test file has its columns in another order plus an extra one.
    order = ["target", "x4", "id", "x2", "x0", "extra", "x1", "x3"]
    test = test.append_column("extra", pa.array(np.ones(test.num_rows)))
    test = test.select(order)
    pq.write_table(test, d / "test.parquet", row_group_size=400)
    pacsv.write_csv(test, d / "test.csv")
    return d


@pytest.fixture(scope="module")
def trained(work):
    """A model trained through the CLI on the CSV file, with a Parquet eval set."""
    proc = ok(cli("train", "train.csv", "--target", "target", "--drop", "id",
                  "-o", "model.gbc", "--eval", "test.parquet", "--n-estimators", "40",
                  "--max-depth", "3", "--learning-rate", "0.2", "--random-state", "0",
                  cwd=work))
    assert "model written to model.gbc" in proc.stdout
    assert "eval (test.parquet, 1,500 rows)" in proc.stdout
    return work / "model.gbc"


def test_train_prints_the_training_log_loss(work):
    """The summary line gives the log-loss itself (train_score_ is scikit-learn's
    deviance for two classes, twice it), as a naive NumPy twin computes it."""
    proc = ok(cli("train", "train.csv", "--target", "target", "--drop", "id",
                  "-o", "ll.gbc", "--n-estimators", "10", "--random-state", "0", cwd=work))
    printed = [w for w in proc.stdout.split("training log-loss ")[1].split()][0]
    model = gbc_core.load(work / "ll.gbc")
    df = pacsv.read_csv(work / "train.csv").to_pandas()
    raw = model.decision_function(df[[f"x{j}" for j in range(5)]])
    y = (df["target"] == model.classes_[1]).to_numpy()
    expected = np.mean(np.logaddexp(0.0, raw) - y * raw)
    assert float(printed) == pytest.approx(expected, abs=6e-6)
    assert float(printed) == pytest.approx(model.train_score_[-1] / 2, abs=6e-6)


def _in_process_scores(model, table):
    df = table.to_pandas()
    return model.predict_proba(df[list(model.feature_names_in_)])[:, 1], model.predict(
        df[list(model.feature_names_in_)])


# ----------------------------------------------------------------- tests
def test_train_records_names_and_hyper_parameters(trained):
    model = gbc_core.load(trained)
    assert list(model.feature_names_in_) == ["x0", "x1", "x2", "x3", "x4"]
    assert model.n_estimators_ == 40 and model.learning_rate == 0.2
    assert list(model.classes_) == ["no", "yes"]
    # Same fit as in process on the same data.
    df = pacsv.read_csv(trained.parent / "train.csv").to_pandas()
    ref = gbc_core.GradientBoostingClassifier(n_estimators=40, learning_rate=0.2,
                                              random_state=0)
    ref.fit(df[[f"x{j}" for j in range(5)]], df["target"])
    X = df[[f"x{j}" for j in range(5)]]
    np.testing.assert_array_equal(model.predict_proba(X), ref.predict_proba(X))


def test_predict_parquet_streams_in_order_with_keep(trained):
    work = trained.parent
    proc = ok(cli("predict", trained, "test.parquet", "-o", "scores.parquet",
                  "--keep", "id", "--proba", "--label", "--chunk-rows", "137", cwd=work))
    assert proc.stderr == ""  # no progress bar when stderr is not a terminal
    out = pq.read_table(work / "scores.parquet")
    assert out.column_names == ["id", "proba", "label"]
    test = pq.read_table(work / "test.parquet")
    assert out.column("id").equals(test.column("id"))  # input order, ids copied
    proba, label = _in_process_scores(gbc_core.load(trained), test)
    np.testing.assert_array_equal(out.column("proba").to_numpy(), proba)
    assert out.column("label").to_pylist() == label.tolist()
    assert [p for p in os.listdir(work) if p.endswith(".tmp")] == []


def test_predict_csv_default_is_proba(trained, capsys, monkeypatch):
    work = trained.parent
    ok(cli("predict", trained, "test.csv", "-o", "scores.csv", "--chunk-rows", "100",
           cwd=work))
    out = pacsv.read_csv(work / "scores.csv")
    assert out.column_names == ["proba"]
    proba, _ = _in_process_scores(gbc_core.load(trained), pq.read_table(work / "test.parquet"))
    np.testing.assert_allclose(out.column("proba").to_numpy(), proba, rtol=1e-15, atol=0)
    assert run_main(capsys, monkeypatch, work, "predict", trained, "test.csv", "-o",
                    "labels.parquet", "--label")[0] == 0
    assert pq.read_table(work / "labels.parquet").column_names == ["label"]


def test_evaluate_text_and_json(trained, capsys, monkeypatch):
    work = trained.parent
    rc, out, _ = run_main(capsys, monkeypatch, work, "evaluate", trained, "test.parquet",
                          "--target", "target", "--json", "--chunk-rows", "500")
    assert rc == 0
    res = json.loads(out)
    model = gbc_core.load(trained)
    test = pq.read_table(work / "test.parquet").to_pandas()
    X = test[list(model.feature_names_in_)]
    raw = model.decision_function(X)
    y = test["target"].to_numpy()
    y01 = (y == "yes").astype(float)
    pred = model.predict(X)
    assert res["n_rows"] == 1500 and res["classes"] == ["no", "yes"]
    assert res["log_loss"] == pytest.approx(log_loss_from_raw(y01, raw), rel=1e-12)
    assert res["roc_auc"] == pytest.approx(roc_auc(y01, raw), rel=1e-12)
    assert res["accuracy"] == pytest.approx(accuracy(y, pred))
    assert res["confusion_matrix"] == confusion_matrix(y, pred, ["no", "yes"]).tolist()
    text = ok(cli("evaluate", trained, "test.csv", "--target", "target", cwd=work)).stdout
    assert "log-loss" in text and "ROC AUC" in text and "accuracy" in text
    assert "confusion matrix" in text


def test_inspect_and_tree_drawing(trained, capsys, monkeypatch):
    work = trained.parent
    text = ok(cli("inspect", trained, cwd=work)).stdout
    assert "format version 3" in text
    assert "loss       log_loss (p = sigma(F))" in text
    assert "['no', 'yes']" in text and "positive class: 'yes'" in text
    assert "features   5: x0, x1, x2, x3, x4" in text
    assert "trees      40" in text and "importances" in text
    info = json.loads(run_main(capsys, monkeypatch, work, "inspect", trained, "--json")[1])
    model = gbc_core.load(trained)
    assert info["n_trees"] == info["n_iterations"] == 40 and info["format_version"] == 3
    assert info["loss"] == "log_loss"
    imp = {d["feature"]: d["importance"] for d in info["importances"]}
    for j, name in enumerate(model.feature_names_in_):
        assert imp.get(name, 0.0) == pytest.approx(model.feature_importances_[j])
    tree = model.trees()[3]
    rc, out, _ = run_main(capsys, monkeypatch, work, "inspect", trained, "--tree", "3")
    assert rc == 0
    drawing = out.splitlines()
    assert drawing[0].startswith("tree 3 of 40")
    assert len(drawing) == 1 + tree.shape[0]  # one line per node
    root = tree[0]
    assert drawing[1].startswith(f"[0] {model.feature_names_in_[root['feature']]} <= ")
    assert sum("leaf value=" in ln for ln in drawing) == int((tree["feature"] < 0).sum())


@pytest.fixture(scope="module")
def libsvm_files(tmp_path_factory):
    if (SHARED / "agaricus.train").exists() and (SHARED / "agaricus.test").exists():
        return SHARED / "agaricus.train", SHARED / "agaricus.test"
    d = tmp_path_factory.mktemp("libsvm")
    (d / "agaricus.train").write_text(make_libsvm_text(2000, 0))
    (d / "agaricus.test").write_text(make_libsvm_text(600, 1))
    return d / "agaricus.train", d / "agaricus.test"


def test_libsvm_train_predict_and_feature_count(libsvm_files, tmp_path, capsys, monkeypatch):
    from gbc_core._tabular import LibsvmData

    train, test = libsvm_files
    # .train/.test need --format; --target is optional for LIBSVM.
    ok(cli("train", train, "--format", "libsvm", "-o", "ag.gbc", "--n-estimators", "10",
           "--eval", test, cwd=tmp_path))
    model = gbc_core.load(tmp_path / "ag.gbc")
    X_train, y_train = LibsvmData(train).read_all()
    assert model.n_features_in_ == X_train.shape[1]
    assert model.feature_names_in_ is None
    ok(cli("predict", "ag.gbc", test, "--format", "libsvm", "-o", "ag.parquet",
           "--keep", "label", "--chunk-rows", "250", cwd=tmp_path))
    out = pq.read_table(tmp_path / "ag.parquet")
    X_test, y_test = LibsvmData(test, n_features=model.n_features_in_).read_all()
    np.testing.assert_array_equal(out.column("proba").to_numpy(),
                                  model.predict_proba(X_test)[:, 1])
    # the kept label is passed through as written in the file, as text
    words = [ln.split()[0] for ln in Path(test).read_text().splitlines() if ln.strip()]
    assert out.column("label").to_pylist() == words
    try:  # the reader agrees with scikit-learn's
        from sklearn.datasets import load_svmlight_file
    except ImportError:
        pass
    else:
        Xs, ys = load_svmlight_file(str(test), n_features=model.n_features_in_)
        np.testing.assert_array_equal(Xs.toarray().astype(np.float32), X_test.toarray())
        np.testing.assert_array_equal(ys, y_test)

    # A file using only the first indices keeps the model's feature count ...
    short = tmp_path / "short.svm"
    short.write_text("1 1:1 3:1\n0 2:1\n")
    assert run_main(capsys, monkeypatch, tmp_path, "predict", "ag.gbc", short, "-o",
                    "short.csv")[0] == 0
    Xs = np.zeros((2, model.n_features_in_), dtype=np.float32)
    Xs[0, [0, 2]] = 1
    Xs[1, 1] = 1
    np.testing.assert_array_equal(pacsv.read_csv(tmp_path / "short.csv").column("proba")
                                  .to_numpy(), model.predict_proba(Xs)[:, 1])
    # ... a wider one is an error naming the index; --n-features reserves more.
    wide = tmp_path / "wide.svm"
    wide.write_text(f"1 1:1 {model.n_features_in_ + 5}:1\n")
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", "ag.gbc", wide, "-o",
                          "wide.csv")
    assert rc == 1 and f"index {model.n_features_in_ + 5}" in err
    assert not (tmp_path / "wide.csv").exists()
    assert run_main(capsys, monkeypatch, tmp_path, "train", train, "--format", "libsvm", "-o",
                    "wide.gbc", "--n-estimators", "2", "--n-features", "200")[0] == 0
    assert gbc_core.load(tmp_path / "wide.gbc").n_features_in_ == 200

    # The same rows as a Parquet table with columns f0..f(n-1) score identically.
    dense = X_test.toarray()
    cols = {f"f{j}": dense[:, j] for j in range(X_test.shape[1])}
    pq.write_table(pa.table({"label": y_test, **cols}), tmp_path / "ag_table.parquet")
    assert run_main(capsys, monkeypatch, tmp_path, "predict", "ag.gbc", "ag_table.parquet",
                    "-o", "ag2.parquet")[0] == 0
    np.testing.assert_array_equal(pq.read_table(tmp_path / "ag2.parquet").column("proba")
                                  .to_numpy(), out.column("proba").to_numpy())
    res = json.loads(run_main(capsys, monkeypatch, tmp_path, "evaluate", "ag.gbc", test,
                              "--format", "libsvm", "--json")[1])
    assert res["n_rows"] == X_test.shape[0] and res["accuracy"] > 0.9


def test_headerless_tsv_higgs(tmp_path, capsys, monkeypatch):
    if (SHARED / "higgs_sample.train").exists():
        train, test = SHARED / "higgs_sample.train", SHARED / "higgs_sample.test"
    else:
        from gbc_core.datasets import load_higgs_sample

        Xtr, ytr, Xte, yte = load_higgs_sample()
        train, test = tmp_path / "higgs.train", tmp_path / "higgs.test"
        for path, X, y in ((train, Xtr, ytr), (test, Xte, yte)):
            np.savetxt(path, np.column_stack([y, X]), delimiter="\t", fmt="%.6g")
    ok(cli("train", train, "--format", "tsv", "--no-header", "--target", "col0",
           "-o", "higgs.gbc", "--n-estimators", "300", "--eval", test,
           "--n-iter-no-change", "5", cwd=tmp_path))
    model = gbc_core.load(tmp_path / "higgs.gbc")
    assert model.feature_names_in_[0] == "col1" and model.n_features_in_ == 28
    assert model.best_iteration_ is not None and model.n_estimators_ < 300
    res = json.loads(run_main(capsys, monkeypatch, tmp_path, "evaluate", "higgs.gbc", test,
                              "--format", "tsv", "--no-header", "--target", "col0",
                              "--json")[1])
    assert res["roc_auc"] > 0.7


def test_train_metric_records_and_stops_on_it(work, capsys, monkeypatch):
    """``--metric auc error`` with ``--n-iter-no-change``: the AUC of each iteration
    on the --eval data (as scikit-learn computes it on the staged predictions), the
    model stopped where the rule says, the metrics in the summary and the JSON."""
    from sklearn.metrics import roc_auc_score

    rc, out, err = run_main(capsys, monkeypatch, work, "train", "train.csv", "--target",
                            "target", "--drop", "id", "-o", "metric.gbc", "--eval",
                            "test.parquet", "--metric", "auc", "error",
                            "--n-iter-no-change", "4", "--n-estimators", "300",
                            "--learning-rate", "0.6", "--random-state", "0",
                            "--evals-json", "evals.json")
    assert rc == 0, err
    doc = json.loads((work / "evals.json").read_text())
    auc = doc["evals_result"]["valid_0"]["roc_auc"]
    error = doc["evals_result"]["valid_0"]["error"]
    assert doc["watched"] == ["valid_0", "roc_auc"] and len(auc) == len(error) < 300
    model = gbc_core.load(work / "metric.gbc")
    assert model.best_iteration_ == doc["best_iteration"] == model.n_estimators_
    # The naive AUC of the kept iterations, and the rule: the best, then 4 without
    # an improvement by more than tol.
    df = pq.read_table(work / "test.parquet").to_pandas()
    X, y = df[list(model.feature_names_in_)], (df["target"] == "yes").to_numpy()
    naive = [roc_auc_score(y, f) for f in model.staged_decision_function(X)]
    assert auc[:len(naive)] == pytest.approx(naive, rel=1e-12)
    best = model.best_iteration_
    top, naive_best, since = -np.inf, 0, 0
    for i, a in enumerate(auc):
        top, naive_best, since = (a, i + 1, 0) if a > top + 1e-4 else (top, naive_best,
                                                                       since + 1)
        if since == 4:
            break
    assert (naive_best, i + 1) == (best, len(auc))
    pred_error = 1.0 - np.mean(model.predict(X) == df["target"].to_numpy())
    assert error[best - 1] == pytest.approx(pred_error, abs=1e-12)
    assert f"roc_auc on test.parquet per iteration: {auc[0]:.5f} after 1, " \
        f"{auc[best - 1]:.5f} after {best} (kept)" in out
    assert "error on test.parquet per iteration" in out


def test_train_metric_errors(work, capsys, monkeypatch):
    rc, _, err = run_main(capsys, monkeypatch, work, "train", "train.csv", "--target",
                          "target", "--drop", "id", "-o", "m2.gbc", "--metric", "auc")
    check_error(["--metric"], ["--metric needs evaluation data"], rc, err)
    rc, _, err = run_main(capsys, monkeypatch, work, "train", "train.csv", "--target",
                          "target", "--drop", "id", "-o", "m2.gbc", "--eval",
                          "test.parquet", "--evals-json", "e.json")
    check_error(["--evals-json"], ["give --metric"], rc, err)
    with pytest.raises(SystemExit):
        run_main(capsys, monkeypatch, work, "train", "train.csv", "--target", "target",
                 "-o", "m2.gbc", "--metric", "aucc")
    assert "unknown metric 'aucc'" in capsys.readouterr().err
    assert not (work / "m2.gbc").exists() and not (work / "e.json").exists()


def test_train_metric_on_the_hold_out_shows_in_the_progress(work):
    proc = ok(cli("train", "train.csv", "--target", "target", "--drop", "id", "-o",
                  "hold.gbc", "--metric", "log_loss", "--n-iter-no-change", "50",
                  "--n-estimators", "20", "--random-state", "0", cwd=work))
    assert "log_loss on the hold-out per iteration" in proc.stdout
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("training ")]
    assert lines and all("  log_loss 0." in ln for ln in lines)


def _bad_files(d):
    (d / "bad.parquet").write_bytes(b"PAR1 this is not parquet")
    (d / "bad.gbc").write_bytes(b"\x89GBC\r\n\x1a\n" + b"\0" * 40)
    (d / "nan_target.csv").write_text("x0,x1,target\n1,2,yes\n3,4,\n5,6,no\n")
    (d / "no_x3.csv").write_text("x0,x1,x2,x4,target\n1,2,3,4,yes\n")
    (d / "text.csv").write_text("x0,x1,target\n1,red,yes\n2,blue,no\n")


ERROR_CASES = [
    # (arguments, words the one-line message must contain)
    (["predict", "model.gbc", "missing.csv", "-o", "o.parquet"], ["not found", "missing.csv"]),
    (["predict", "absent.gbc", "test.csv", "-o", "o.parquet"], ["not found", "absent.gbc"]),
    (["predict", "model.gbc", "bad.parquet", "-o", "o.parquet"], ["bad.parquet", "Parquet"]),
    (["predict", "model.gbc", "test.txt", "-o", "o.parquet"], ["--format"]),
    (["train", "train.csv", "--target", "label", "-o", "m2.gbc"], ["'label'", "not found"]),
    (["train", "nan_target.csv", "--target", "target", "-o", "m2.gbc"],
     ["'target'", "missing"]),
    (["train", "text.csv", "--target", "target", "-o", "m2.gbc", "--categorical", "none"],
     ["'x1'", "not numeric"]),
    (["predict", "model.gbc", "no_x3.csv", "-o", "o.parquet"], ["'x3'", "missing"]),
    (["evaluate", "model.gbc", "test.csv", "--target", "nope"], ["'nope'"]),
    (["inspect", "bad.gbc"], ["bad.gbc", "not a valid gbc-core model"]),
    (["evaluate", "bad.gbc", "test.csv", "--target", "target"], ["not a valid"]),
    (["predict", "model.gbc", "test.csv", "-o", "no_such_dir/o.parquet"], ["cannot write"]),
    # The output's parent is a regular file: not writable, even for root.
    (["predict", "model.gbc", "test.csv", "-o", "test.txt/o.parquet"], ["cannot write"]),
    (["train", "train.csv", "--target", "target", "-o", "no_such_dir/m.gbc"],
     ["cannot write"]),
    (["predict", "model.gbc", "test.csv", "-o", "o.xlsx"], ["o.xlsx"]),
]


@pytest.mark.parametrize("args,words", ERROR_CASES, ids=[" ".join(a[:3]) for a, _ in ERROR_CASES])
def test_user_errors_are_one_line(trained, capsys, monkeypatch, args, words):
    work = trained.parent
    _bad_files(work)
    (work / "test.txt").write_text("x")
    rc, _, err = run_main(capsys, monkeypatch, work, *args)
    check_error(args, words, rc, err)
    assert not (work / "m2.gbc").exists()
    assert [p for p in os.listdir(work) if p.endswith(".tmp")] == []


def test_user_errors_in_a_subprocess(trained):
    """The exit code and the one-line message as a shell sees them."""
    work = trained.parent
    _bad_files(work)
    cases = [ERROR_CASES[i] for i in (0, 7)]
    procs = [subprocess.Popen([sys.executable, "-m", "gbc_core", *args], cwd=work,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              stdin=subprocess.DEVNULL)
             for args, _ in cases]
    for (args, words), p in zip(cases, procs):
        _, err = p.communicate(timeout=300)
        check_error(args, words, p.returncode, err)


def test_debug_raises_instead_of_the_one_line_message(trained, monkeypatch):
    from gbc_core._tabular import DataError
    from gbc_core.cli import main

    monkeypatch.chdir(trained.parent)
    with pytest.raises(DataError, match="missing.csv"):
        main(["predict", str(trained), "missing.csv", "-o", "o.parquet", "--debug"])
    with pytest.raises(DataError, match="missing.csv"):
        main(["--debug", "predict", str(trained), "missing.csv", "-o", "o.parquet"])


def test_failed_run_leaves_no_partial_output(tmp_path, trained):
    """A bad row deep in the file fails the run after chunks were written: the old
    output stays as it was and no temporary file remains."""
    lines = ["id,x0,x1,x2,x3,x4"] + [f"{i},0.1,0.2,0.3,0.4,0.5" for i in range(3000)]
    lines[2500] = "2499,0.1,oops,0.3,0.4,0.5"
    (tmp_path / "late_error.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "scores.csv").write_text("previous results\n")
    proc = cli("predict", trained, "late_error.csv", "-o", "scores.csv", "--keep", "id",
               "--chunk-rows", "100", cwd=tmp_path)
    assert proc.returncode == 1
    assert "'x1'" in proc.stderr and "oops" in proc.stderr
    assert (tmp_path / "scores.csv").read_text() == "previous results\n"
    assert sorted(os.listdir(tmp_path)) == ["late_error.csv", "scores.csv"]


def test_interrupted_run_leaves_no_partial_output(tmp_path, trained):
    n = 400_000  # 40,000 chunks of 10 rows: far more work than the wait for the signal
    rng = np.random.default_rng(0)
    table = pa.table({"id": np.arange(n)} | {f"x{j}": rng.normal(size=n) for j in range(5)})
    pq.write_table(table, tmp_path / "big.parquet", row_group_size=20_000)
    (tmp_path / "out.parquet").write_bytes(b"old")
    for sig in (signal.SIGINT, signal.SIGTERM):
        proc = subprocess.Popen(
            [sys.executable, "-m", "gbc_core", "predict", str(trained), "big.parquet", "-o",
             "out.parquet", "--keep", "id", "--chunk-rows", "10"],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=default_sigint)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            # The temporary output exists once scoring has started (a Parquet writer
            # may hold its bytes until the end, so its size says nothing).
            if any(p.endswith(".tmp") for p in os.listdir(tmp_path)):
                break
            time.sleep(0.005)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, (proc.returncode, err)
        assert err.strip() == ERROR_PREFIX + "interrupted"
        assert (tmp_path / "out.parquet").read_bytes() == b"old"
        assert sorted(os.listdir(tmp_path)) == ["big.parquet", "out.parquet"]


def test_an_interrupt_caught_after_an_eval_exits_with_130(tmp_path):
    # CPython records a KeyboardInterrupt that leaves an eval() of a string as
    # unhandled even when it is caught, and a process run as `python -m` then ends
    # killed by SIGINT after its shutdown (-2, not 130). A signal landing in an import
    # does that, since collections.namedtuple evals its class: about 1 interrupted
    # `predict` in 25 of the test above, with imports compiled from source.
    (tmp_path / "interrupted_in_eval.py").write_text(
        "from gbc_core import cli\n"
        "def stop():\n"
        "    raise KeyboardInterrupt\n"
        "def interrupted(args):\n"
        "    eval('stop()', {'stop': stop})\n"
        "cli._cmd_demo = interrupted\n"
        "cli.console_main()\n")
    proc = subprocess.run([sys.executable, "-m", "interrupted_in_eval", "demo"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert proc.stderr.strip() == ERROR_PREFIX + "interrupted"


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_progress_bar_on_a_terminal(trained):
    import pty

    master, slave = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "gbc_core", "predict", str(trained), "test.parquet", "-o",
             "tty.parquet", "--chunk-rows", "100"],
            cwd=trained.parent, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
            timeout=300)
        os.close(slave)
        slave = None
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    err = b"".join(chunks).decode()
    assert proc.returncode == 0, err
    assert "rows/s" in err and "1,500 rows" in err and "100.0%" in err


def test_progress_follows_the_terminal_and_quiet(trained, capsys, monkeypatch):
    import gbc_core._commands as batch

    monkeypatch.setattr(batch.Progress, "wanted",
                        staticmethod(lambda quiet, stream=None: not quiet))
    rc, _, err = run_main(capsys, monkeypatch, trained.parent, "predict", trained,
                          "test.parquet", "-o", "p.parquet", "--chunk-rows", "500")
    assert rc == 0 and "1,500 rows" in err and "rows/s" in err
    rc, _, err = run_main(capsys, monkeypatch, trained.parent, "predict", trained,
                          "test.parquet", "-o", "p.parquet", "--quiet")
    assert rc == 0 and err == ""


BLOCK_PYARROW = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyarrow", "dask", "distributed"):
            raise ImportError(f"No module named {name!r} (blocked)")
sys.meta_path.insert(0, _Block())
for m in [m for m in sys.modules if m.split(".")[0] in ("pyarrow", "dask", "distributed")]:
    del sys.modules[m]
from gbc_core.cli import main
codes = [main(args.split()) for args in sys.argv[1:]]
print("exit codes", codes)
"""


def test_without_pyarrow_libsvm_works_and_csv_says_what_to_install(tmp_path):
    """The core install is NumPy-only: LIBSVM works, CSV/Parquet name the extra."""
    (tmp_path / "block.py").write_text(BLOCK_PYARROW)
    (tmp_path / "d.svm").write_text(make_libsvm_text(200, 0))
    (tmp_path / "d.csv").write_text("a,b,y\n1,2,0\n3,4,1\n")

    proc = subprocess.run(
        [sys.executable, "block.py", "train d.svm -o m.gbc --n-estimators 3 --quiet",
         "evaluate m.gbc d.svm", "train d.csv --target y -o m2.gbc"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "exit codes [0, 0, 1]" in proc.stdout, proc.stderr
    assert "accuracy" in proc.stdout
    assert proc.stderr.strip() == (ERROR_PREFIX + "CSV and Parquet files need pyarrow, which "
                                   'is not installed: pip install pyarrow (the io extra, '
                                   'pip install ".[io]" from a checkout)')
    assert (tmp_path / "m.gbc").exists() and not (tmp_path / "m2.gbc").exists()


def test_no_arguments_runs_the_demo_parser():
    from gbc_core.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["demo"]).func.__name__ == "_cmd_demo"
    for cmd in ("train", "predict", "evaluate", "inspect"):
        assert cmd in parser.format_help()


def test_train_class_weight_dict_as_json(work, tmp_path, capsys, monkeypatch):
    """``--class-weight '{"yes": 3}'`` (the help offers a dict) trains the fit of
    ``class_weight={"yes": 3}`` in Python; labels match by value, as evaluate's do
    (a CSV target of 0/1 is the integers 0 and 1, which the JSON key "1" names)."""
    args = ("train", work / "train.csv", "--target", "target", "--drop", "id",
            "--n-estimators", "15", "--random-state", "0")
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, *args, "-o", "w.gbc",
                          "--class-weight", '{"yes": 3, "no": 0.5}', "--quiet")
    assert rc == 0, err
    df = pacsv.read_csv(work / "train.csv").to_pandas()
    X = df[[f"x{j}" for j in range(5)]]
    ref = gbc_core.GradientBoostingClassifier(
        n_estimators=15, random_state=0, class_weight={"yes": 3, "no": 0.5}).fit(X, df["target"])
    np.testing.assert_array_equal(gbc_core.load(tmp_path / "w.gbc").predict_proba(X),
                                  ref.predict_proba(X))

    # Integer labels: the JSON keys (text) name the integer classes by value.
    ints = pa.table({"a": np.arange(40.0), "y": np.arange(40) % 2})
    pacsv.write_csv(ints, tmp_path / "ints.csv")
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "ints.csv", "-t", "y",
                          "-o", "i.gbc", "--n-estimators", "3",
                          "--class-weight", '{"+1": 4}', "--quiet")
    assert rc == 0, err
    ref = gbc_core.GradientBoostingClassifier(n_estimators=3, class_weight={1: 4}).fit(
        ints.to_pandas()[["a"]], ints.to_pandas()["y"])
    np.testing.assert_array_equal(gbc_core.load(tmp_path / "i.gbc").predict_proba(
        ints.to_pandas()[["a"]]), ref.predict_proba(ints.to_pandas()[["a"]]))

    # A label that is not in the data, or text that is not a JSON object: clear errors.
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, *args, "-o", "x.gbc",
                          "--class-weight", '{"maybe": 2}')
    check_error(args, ["--class-weight", "'maybe'", "not a label"], rc, err)
    with pytest.raises(SystemExit) as exc:
        run_main(capsys, monkeypatch, tmp_path, *args, "-o", "x.gbc",
                 "--class-weight", "{yes: 2}")
    assert exc.value.code == 2
    assert "class_weight" in capsys.readouterr().err


def _stderr_on_a_terminal(args, cwd):
    """(exit code, what the command wrote to stderr, a pseudo-terminal)."""
    import pty

    master, slave = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "gbc_core", *map(str, args)],
                              cwd=cwd, stdout=subprocess.PIPE, stderr=slave,
                              stdin=subprocess.DEVNULL, timeout=300)
        os.close(slave)
        slave = None
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    return proc.returncode, b"".join(chunks).decode()


TRAIN_ARGS = ("train", "train.csv", "--target", "target", "--drop", "id",
              "--n-estimators", "40", "--max-depth", "2")


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_train_progress_bar_on_a_terminal(work):
    rc, err = _stderr_on_a_terminal([*TRAIN_ARGS, "-o", "bar.gbc"], work)
    assert rc == 0, err
    assert "\rtraining [" in err and "40/40 iterations 100.0%" in err and "left " in err
    assert "[" + "#" * 24 + "]" in err  # the full bar at the end


def test_train_progress_lines_off_a_terminal_and_quiet(work):
    proc = ok(cli(*TRAIN_ARGS, "-o", "lines.gbc", cwd=work))
    lines = proc.stderr.splitlines()
    # One plain line per tenth of the iterations, no carriage returns.
    assert [line.split()[1] for line in lines] == [f"{4 * k}/40" for k in range(1, 11)]
    assert all(line.startswith("training ") and " left " in line for line in lines)
    assert "\r" not in proc.stderr and lines[-1].split()[3] == "100.0%"
    assert "model written to lines.gbc" in proc.stdout
    # --quiet: nothing at all; -v: the verbose report instead of the progress.
    proc = ok(cli(*TRAIN_ARGS, "-o", "quiet.gbc", "--quiet", cwd=work))
    assert proc.stderr == "" and proc.stdout == ""
    proc = ok(cli(*TRAIN_ARGS, "-o", "verbose.gbc", "-v", cwd=work))
    assert proc.stderr == "" and "Remaining Time" in proc.stdout
    # The progress does not change the model.
    assert (gbc_core.load(work / "lines.gbc").to_bytes()
            == gbc_core.load(work / "quiet.gbc").to_bytes())
