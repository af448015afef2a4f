"""The surface of the batch commands that the other tests leave out.

* the metrics of ``gbc-core evaluate`` (``gbc_core.metrics``) against scikit-learn's on
  data with many tied scores, and against small cases computed by hand;
* ``gbc-core demo`` itself, in process and as a shell runs it;
* ``require``, the tests' way to import their reference libraries.
"""

import csv
import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import ok, require, run_main

skm = require("sklearn.metrics")

from gbc_core import GradientBoostingClassifier  # noqa: E402
from gbc_core.cli import main  # noqa: E402
from gbc_core.metrics import (  # noqa: E402
    accuracy,
    confusion_matrix,
    log_loss,
    log_loss_from_raw,
    roc_auc,
    roc_auc_ovr,
)

COMMANDS = ["demo", "train", "predict", "evaluate", "inspect"]


def sigmoid(raw):
    """The reference probabilities of binary raw scores."""
    return 1.0 / (1.0 + np.exp(-raw))


def softmax(raw):
    """The reference probabilities of raw scores of shape (n, K)."""
    e = np.exp(raw - raw.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# ------------------------------------------------ metrics against scikit-learn
@pytest.mark.parametrize("seed", range(3))
def test_binary_metrics_agree_with_sklearn_on_tied_scores(seed):
    rng = np.random.default_rng(seed)
    n = 500
    y = rng.integers(0, 2, n)
    weight = rng.uniform(0.0, 3.0, n)
    weight[rng.uniform(size=n) < 0.1] = 0.0
    raw = rng.integers(-6, 7, n) / 2.0  # 13 distinct scores: ties within and across classes
    proba = sigmoid(raw)
    assert np.unique(raw).size == 13
    for w in (None, weight):
        assert roc_auc(y, raw, w) == pytest.approx(
            skm.roc_auc_score(y, raw, sample_weight=w), rel=1e-12, abs=0)
        assert log_loss_from_raw(y, raw, w) == pytest.approx(
            skm.log_loss(y, proba, sample_weight=w), rel=1e-12, abs=0)
        # probabilities of exactly 0 and 1 are clipped to [eps, 1 - eps], as by sklearn
        edges = np.where(raw > 2.5, 1.0, np.where(raw < -2.5, 0.0, proba))
        assert log_loss(y, edges, w) == pytest.approx(
            skm.log_loss(y, edges, sample_weight=w), rel=1e-12, abs=0)
        pred = (raw > 0).astype(int)
        assert accuracy(y, pred, w) == pytest.approx(
            skm.accuracy_score(y, pred, sample_weight=w), rel=1e-14, abs=0)


@pytest.mark.parametrize("seed", range(3))
def test_multiclass_metrics_agree_with_sklearn_on_tied_scores(seed):
    rng = np.random.default_rng(seed)
    n, k = 600, 4
    codes = rng.integers(0, k, n)
    weight = rng.uniform(0.0, 2.0, n)
    raw = rng.integers(-3, 4, size=(n, k)) / 2.0  # 7 values per column: many ties
    proba = softmax(raw)
    for w in (None, weight):
        assert roc_auc_ovr(codes, proba, w) == pytest.approx(
            skm.roc_auc_score(codes, proba, multi_class="ovr", average="macro",
                              sample_weight=w), rel=1e-12, abs=0)
        assert log_loss_from_raw(codes, raw, w) == pytest.approx(
            skm.log_loss(codes, proba, sample_weight=w, labels=range(k)), rel=1e-12, abs=0)
    labels = np.array(["cat", "dog", "emu", "yak"])
    y_true, y_pred = labels[codes], labels[raw.argmax(axis=1)]
    for order in (["cat", "dog", "emu", "yak"], ["yak", "cat", "emu", "dog"],
                  ["dog", "cat", "gnu"]):  # a subset, and a label that never occurs
        np.testing.assert_array_equal(confusion_matrix(y_true, y_pred, order),
                                      skm.confusion_matrix(y_true, y_pred, labels=order))


# ------------------------------------------------------ metrics computed by hand
def test_roc_auc_by_hand():
    # pairs (negative, positive): (1, 1) a tie: 1/2; (1, 2): 1 -> 1.5 / 2
    assert roc_auc([0, 1, 1], [1, 1, 2]) == 0.75
    # weighted pairs: pos 2 (w 2) vs neg 1 (w 1): 2, vs neg 2 (w 3): tie 3;
    # pos 3 (w 2) vs neg 1: 2, vs neg 2: 6 -> 13 / ((2 + 2) * (1 + 3))
    assert roc_auc([0, 0, 1, 1], [1, 2, 2, 3], [1, 3, 2, 2]) == 13 / 16
    assert roc_auc([0, 1, 0, 1], [5, 5, 5, 5]) == 0.5  # all tied
    assert roc_auc([1, 1, 0], [0, 1, 2]) == 0.0  # every positive below every negative
    assert roc_auc([0, 1, 1], [1, 1, 2], [1, 0, 1]) == 1.0  # the tied positive weighs 0
    with pytest.raises(ValueError, match="both classes"):
        roc_auc([1, 1], [0.2, 0.3])
    with pytest.raises(ValueError, match="both classes .* positive total weight"):
        roc_auc([0, 1, 1], [1, 1, 2], [0, 1, 1])  # the only negative weighs 0


def test_roc_auc_ovr_by_hand():
    proba = [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8], [0.4, 0.4, 0.2]]
    # class 0 (row 0) and class 1 (row 1) score above every other row: 1 and 1;
    # class 2 (rows 2, 3): 0.8 beats 0.1 and 0.3, 0.2 beats 0.1 only -> 3 / 4
    assert roc_auc_ovr([0, 1, 2, 2], proba) == pytest.approx(11 / 12, rel=1e-15)
    # class 2 never occurs: the mean of class 0 (rows 0, 2: 0.6 beats the negatives
    # 0.2 and 0.4, 0.1 neither -> 1/2) and class 1 (rows 1, 3: 0.5 and 0.4 beat 0.3
    # and 0.1 -> 1)
    assert roc_auc_ovr([0, 1, 0, 1], proba) == pytest.approx(3 / 4, rel=1e-15)
    assert roc_auc_ovr([1, 1, 1, 1], proba) is None  # no class has both outcomes


def test_accuracy_and_confusion_matrix_by_hand():
    y_true = ["a", "b", "c", "a"]
    y_pred = ["a", "c", "c", "b"]
    assert accuracy(y_true, y_pred) == 0.5
    assert accuracy(y_true, y_pred, [1, 2, 3, 4]) == pytest.approx(0.4)  # (1 + 3) / 10
    np.testing.assert_array_equal(confusion_matrix(y_true, y_pred, ["a", "b", "c"]),
                                  [[1, 1, 0], [0, 0, 1], [0, 0, 1]])
    np.testing.assert_array_equal(confusion_matrix(y_true, y_pred, ["c", "a"]),
                                  [[1, 0], [0, 1]])


def test_log_losses_by_hand():
    ln = math.log
    assert log_loss([1, 0], [0.5, 0.5]) == pytest.approx(ln(2), rel=1e-15)
    assert log_loss([0, 1], [0.25, 0.25], [1, 3]) == pytest.approx(
        (ln(4 / 3) + 3 * ln(4)) / 4, rel=1e-15)
    # p = 0 for a positive is clipped to the float64 epsilon 2**-52
    assert log_loss([1], [0.0]) == pytest.approx(52 * ln(2), rel=1e-15)
    # binary raw scores: F = ln 3 is p = 3/4
    assert log_loss_from_raw([1, 0], [0.0, 0.0]) == pytest.approx(ln(2), rel=1e-15)
    assert log_loss_from_raw([1, 0], [ln(3), ln(3)], [3, 1]) == pytest.approx(
        (3 * ln(4 / 3) + ln(4)) / 4, rel=1e-14)
    # far past the range of exp: log(1 + e^F) - yF exactly, never inf
    assert log_loss_from_raw([0, 1], [1000.0, -1000.0]) == 1000.0
    assert log_loss_from_raw([1, 0], [1000.0, -1000.0]) == 0.0
    # multiclass raw scores (softmax): F = (0, ln 2, ln 5) is p = (1/8, 2/8, 5/8)
    raw = np.array([[0.0, ln(2), ln(5)]] * 2)
    assert log_loss_from_raw([2, 0], raw) == pytest.approx((ln(8 / 5) + ln(8)) / 2, rel=1e-14)
    assert log_loss_from_raw([2, 0], raw, [3, 1]) == pytest.approx(
        (3 * ln(8 / 5) + ln(8)) / 4, rel=1e-14)
    assert log_loss_from_raw([0, 1, 2], np.zeros((3, 3))) == pytest.approx(ln(3), rel=1e-15)
    assert log_loss_from_raw([0, 2], [[0.0, 0.0, 1000.0]] * 2) == pytest.approx(500.0,
                                                                                 rel=1e-15)


# ------------------------------------------------- evaluate --json vs sklearn
def write_tied_csv(path, n, labels, seed):
    """Rows x0..x3, target whose features take three values each (so the model's
    scores tie often); returns (X, y)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(n, 4)).astype(np.float64)
    weights = rng.normal(size=(4, len(labels)))
    y = np.asarray(labels)[np.argmax(X @ weights + rng.gumbel(size=(n, len(labels))), axis=1)]
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["x0", "x1", "x2", "x3", "target"])
        writer.writerows([*map(int, row), label] for row, label in zip(X, y))
    return X, y


@pytest.mark.parametrize("labels", [("no", "yes"), ("ant", "bee", "cow")])
def test_evaluate_json_agrees_with_sklearn(tmp_path, capsys, monkeypatch, labels):
    require("pyarrow")
    pd = require("pandas")
    X, y = write_tied_csv(tmp_path / "data.csv", 800, labels, seed=len(labels))
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2", "x3"])
    model = GradientBoostingClassifier(n_estimators=8, max_depth=2).fit(frame, y)
    model.save(tmp_path / "m.gbc")
    rc, out, _ = run_main(capsys, monkeypatch, tmp_path, "evaluate", "m.gbc", "data.csv",
                          "--target", "target", "--json", "--chunk-rows", "300")
    assert rc == 0
    res = json.loads(out)
    proba, pred = model.predict_proba(frame), model.predict(frame)
    classes = list(model.classes_)
    assert np.unique(proba[:, 0]).size < 100  # many tied scores among the 800 rows
    assert res["classes"] == sorted(labels) and res["n_rows"] == 800
    if len(labels) == 2:
        auc = skm.roc_auc_score(y == classes[1], proba[:, 1])
    else:
        auc = skm.roc_auc_score(y, proba, multi_class="ovr", average="macro", labels=classes)
    assert res["roc_auc"] == pytest.approx(auc, rel=1e-12, abs=0)
    assert res["log_loss"] == pytest.approx(skm.log_loss(y, proba, labels=classes),
                                            rel=1e-12, abs=0)
    assert res["accuracy"] == pytest.approx(skm.accuracy_score(y, pred), rel=1e-14, abs=0)
    assert res["confusion_matrix"] == skm.confusion_matrix(y, pred, labels=classes).tolist()


# ------------------------------------------------------------------------- demo
def _demo_numbers(text):
    """(F, p and class printed for x = 7; the parameters and the AUC and log-loss of
    the gbc-core row of the HIGGS part)."""
    paper = re.search(r"prediction for x = 7: F = (\S+), p = sigma\(F\) = (\S+) "
                      r"\(paper: [^)]*\) -> class (\S+)", text)
    params = re.search(r"n_estimators=(\d+), max_depth=(\d+), learning_rate=(\S+)", text)
    row = re.search(r"^gbc-core +\S+ +\S+ +(\S+) +(\S+)$", text, re.MULTILINE)
    assert paper and params and row, text
    return paper.groups(), params.groups(), tuple(map(float, row.groups()))


def test_demo_paper_example_and_higgs_auc(capsys, tmp_path):
    """``gbc-core demo`` prints the paper's numbers for x = 7 (its appendix: F = -0.0570,
    p = 0.4858) and fits the HIGGS sample, reporting the AUC and log-loss that
    scikit-learn's metrics give for the same model."""
    from gbc_core.datasets import load_higgs_sample

    shell = subprocess.Popen([sys.executable, "-m", "gbc_core", "demo"], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             stdin=subprocess.DEVNULL)
    try:
        capsys.readouterr()
        assert main(["demo"]) == 0
        in_process, errors = capsys.readouterr()
    finally:
        shell_out, shell_err = shell.communicate(timeout=600)
    assert errors == ""
    ok(subprocess.CompletedProcess(shell.args, shell.returncode, shell_out, shell_err))
    paper, params, scores = _demo_numbers(in_process)
    assert paper == ("-0.0570", "0.4858", "0")  # p < 0.5: class 0
    assert _demo_numbers(shell_out) == (paper, params, scores)
    n_estimators, max_depth, learning_rate = params
    X_train, y_train, X_test, y_test = load_higgs_sample()
    model = GradientBoostingClassifier(n_estimators=int(n_estimators), max_depth=int(max_depth),
                                       learning_rate=float(learning_rate))
    proba = model.fit(X_train, y_train).predict_proba(X_test)[:, 1]
    auc, loss = scores
    assert auc == pytest.approx(skm.roc_auc_score(y_test, proba), abs=5e-5)  # 4 decimals
    assert loss == pytest.approx(skm.log_loss(y_test, proba), abs=5e-5)
    assert auc > 0.75


# ------------------------------------------- the tests' reference libraries
def test_require_skips_a_missing_module_or_fails_when_told_to(monkeypatch):
    missing = "gbc_core_tests_no_such_module"
    monkeypatch.delenv("GBC_CORE_REQUIRE_TEST_DEPS", raising=False)
    with pytest.raises(pytest.skip.Exception, match=missing):
        require(missing)
    assert require("json") is json
    monkeypatch.setenv("GBC_CORE_REQUIRE_TEST_DEPS", "1")
    with pytest.raises(ModuleNotFoundError, match=missing):
        require(missing)
    assert require("json") is json
