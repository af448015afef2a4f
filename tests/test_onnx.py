"""ONNX export: ``gbc_core.onnx.to_onnx`` and ``gbc-core export``.

The reference is gbc-core itself: onnxruntime, scoring the exported graph on float32
rows, gives gbc-core's probabilities to 1e-5 and its labels (same values, same
type), missing values included; rows placed exactly on and next to every split's
threshold go the same way in both.
"""

import json
import sys

import numpy as np
import pytest

import gbc_core
from gbc_core import Booster, Ensemble, GradientBoostingClassifier, NODE_DTYPE
from gbc_core.onnx import to_onnx

from conftest import ERROR_PREFIX, require, run_main

onnx = require("onnx")
ort = require("onnxruntime")

ATOL = 1e-5


def _session(proto):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(proto.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def _run(proto, X):
    label, proba = _session(proto).run(["label", "probabilities"],
                                       {"input": np.asarray(X, dtype=np.float32)})
    return label, proba


def _data(n=1500, n_features=6, seed=0, missing=0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)).astype(np.float32)
    score = X[:, 0] - X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=n)
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    return X, score


def _labels(score, n_classes, labels=None):
    cuts = np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1] ** 0.8)
    y = np.digitize(score, cuts)
    return y if labels is None else np.asarray(labels)[y]


def _assert_same(model, X):
    label, proba = _run(to_onnx(model), X)
    expected = model.predict_proba(X)
    assert proba.dtype == np.float32 and proba.shape == expected.shape
    err = np.abs(proba.astype(np.float64) - expected).max()
    assert err <= ATOL, f"max |dp| {err}"
    want = model.predict(X)
    assert np.array_equal(label, want), "labels differ"
    return label, proba


CASES = {
    "binary-prior": (2, None, {}),
    "binary-zero": (2, None, {"init": "zero"}),
    "binary-strings": (2, ["no", "yes"], {}),
    "multiclass-prior": (4, None, {}),
    "multiclass-zero-strings": (3, ["cat", "dog", "emu"], {"init": "zero"}),
    "exponential-prior": (2, None, {"loss": "exponential"}),
    "exponential-zero": (2, [-1, 1], {"loss": "exponential", "init": "zero"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_onnxruntime_gives_our_probabilities_and_labels(case):
    n_classes, labels, params = CASES[case]
    X, score = _data()
    y = _labels(score, n_classes, labels)
    model = GradientBoostingClassifier(n_estimators=40, max_depth=4, learning_rate=0.3,
                                       random_state=0, **params).fit(X, y)
    # Every split learned a direction for NaN from the training data's missing values.
    nodes = model.booster_.ensemble.nodes
    inner = nodes["feature"] >= 0
    assert set(nodes["missing_go_left"][inner].tolist()) == {0, 1}
    X_new, _ = _data(n=3000, seed=1, missing=0.2)
    X_new[:50] = np.nan  # rows with no known feature
    label, _ = _assert_same(model, X_new)
    assert label.dtype == model.classes_.dtype or label.dtype == object


def test_rows_on_the_thresholds_route_as_gbc_core():
    """x == threshold32 goes left, the next float32 up goes right: the graph stores
    each split's threshold32 (a float64 threshold rounded to the nearest float32
    would send some of these rows the other way)."""
    X, score = _data(missing=0)
    model = GradientBoostingClassifier(n_estimators=30, max_depth=5, learning_rate=0.5,
                                       random_state=0).fit(X, _labels(score, 2))
    nodes = model.booster_.ensemble.nodes
    inner = nodes[nodes["feature"] >= 0]
    # Thresholds whose float32 rounding is above them (threshold32 is one step down).
    rounded = inner["threshold"].astype(np.float32)
    assert (rounded.astype(np.float64) > inner["threshold"]).any()
    rng = np.random.default_rng(3)
    rows = []
    for f, t32 in zip(inner["feature"], inner["threshold32"]):
        for value in (t32, np.nextafter(t32, np.float32(np.inf))):
            row = rng.normal(size=X.shape[1]).astype(np.float32)
            row[f] = value
            rows.append(row)
    _assert_same(model, np.array(rows, dtype=np.float32))


def test_probabilities_are_the_booster_s_on_the_higgs_sample():
    from gbc_core.datasets import load_higgs_sample

    X, y = load_higgs_sample()[:2]
    X = np.asarray(X, dtype=np.float32)
    model = GradientBoostingClassifier(n_estimators=60, max_depth=3,
                                       random_state=0).fit(X[:4000], y[:4000])
    booster = gbc_core.from_bytes(model.to_bytes())
    _assert_same(booster, X[4000:])


def test_a_booster_and_its_metadata():
    import pandas as pd

    X, score = _data(n=500)
    frame = pd.DataFrame(X, columns=[f"f_{i}" for i in range(X.shape[1])])
    model = GradientBoostingClassifier(n_estimators=5, random_state=0).fit(
        frame, _labels(score, 3, ["a", "b", "c"]))
    booster = gbc_core.from_bytes(model.to_bytes())
    proto = to_onnx(booster)
    meta = {p.key: p.value for p in proto.metadata_props}
    assert json.loads(meta["feature_names"]) == list(frame.columns)
    assert meta["loss"] == "log_loss"
    assert json.loads(meta["classes"]) == ["a", "b", "c"]
    graph = proto.graph
    assert [i.name for i in graph.input] == ["input"]
    assert [o.name for o in graph.output] == ["label", "probabilities"]
    shape = graph.input[0].type.tensor_type.shape.dim
    assert shape[1].dim_value == X.shape[1]
    assert {o.domain for o in proto.opset_import} == {"", "ai.onnx.ml"}
    _assert_same(booster, X)


@pytest.mark.parametrize("labels", [
    np.array([False, True]),
    np.array([3, 250], dtype=np.uint8),
    np.array([-2**40, 2**40], dtype=np.int64),
    np.array([0.5, 2.25]),
    np.array([1, 7], dtype=object),
], ids=["bool", "uint8", "int64", "float", "object-int"])
def test_labels_keep_their_values_and_type(labels):
    X, score = _data(n=400)
    y = labels[_labels(score, 2)]
    model = GradientBoostingClassifier(n_estimators=5, random_state=0).fit(X, y)
    label, _ = _assert_same(model, X)
    expected = model.predict(X)
    assert label.dtype == (np.int64 if expected.dtype == object else expected.dtype)


def test_a_model_without_trees_predicts_its_initial_scores():
    # Two largest raw scores tie: the first of them is the label, as gbc-core's.
    ensemble = Ensemble.from_trees([], n_outputs=3, init_raw=[-1.0, 2.0, 2.0],
                                   learning_rate=0.1, n_features=2)
    booster = Booster(ensemble, np.array([10, 20, 30]))
    X = np.array([[0.0, 1.0], [np.nan, 3.0]], dtype=np.float32)
    label, _ = _assert_same(booster, X)
    assert label.tolist() == [20, 20]


@pytest.mark.parametrize("loss", ["log_loss", "exponential"])
def test_single_leaf_trees_and_a_raw_score_of_zero(loss):
    """F = -0.25 + 0.5 x 0.25 + 0.5 x 0.25 = 0 exactly: the positive class (F >= 0)."""
    leaf = np.zeros(1, dtype=NODE_DTYPE)
    leaf["feature"] = leaf["left"] = leaf["right"] = -1
    leaf["value"] = 0.25
    ensemble = Ensemble.from_trees([leaf, leaf], n_outputs=1, init_raw=[-0.25],
                                   learning_rate=0.5, n_features=1)
    booster = Booster(ensemble, np.array(["a", "b"]), loss=loss)
    label, proba = _assert_same(booster, np.array([[0.0], [np.nan]], dtype=np.float32))
    assert label.tolist() == ["b", "b"] and proba.tolist() == [[0.5, 0.5]] * 2


def test_unexportable_models_are_refused():
    sklearn_linear = require("sklearn.linear_model")
    X, score = _data(n=300, missing=0)
    y = _labels(score, 2)
    model = GradientBoostingClassifier(n_estimators=3,
                                       init=sklearn_linear.LogisticRegression()).fit(X, y)
    with pytest.raises(ValueError, match="init estimator .*LogisticRegression"):
        to_onnx(model)
    with pytest.raises(ValueError, match="not fitted"):
        to_onnx(GradientBoostingClassifier())
    with pytest.raises(TypeError, match="got str"):
        to_onnx("model.gbc")
    fitted = GradientBoostingClassifier(n_estimators=2).fit(X, y)
    for bad in (12, 10**6):
        with pytest.raises(ValueError, match="target_opset"):
            to_onnx(fitted, target_opset=bad)
    with pytest.raises(TypeError, match="target_opset"):
        to_onnx(fitted, target_opset="17")


@pytest.mark.parametrize("labels, message", [
    (np.array([b"no", b"yes"]), "byte strings"),
    (np.array([1, 2.5], dtype=object), "several types"),
], ids=["bytes", "mixed-objects"])
def test_labels_onnx_cannot_hold_are_refused(labels, message):
    X, score = _data(n=300, missing=0)
    model = GradientBoostingClassifier(n_estimators=2).fit(X, labels[_labels(score, 2)])
    with pytest.raises(ValueError, match=message):
        to_onnx(model)


def test_an_older_opset_scores_alike():
    X, score = _data(n=800)
    model = GradientBoostingClassifier(n_estimators=10, random_state=0).fit(
        X, _labels(score, 3))
    proto = to_onnx(model, target_opset=13)
    assert {o.domain or "": o.version for o in proto.opset_import}[""] == 13
    label, proba = _run(proto, X)
    assert np.abs(proba - model.predict_proba(X)).max() <= ATOL
    assert np.array_equal(label, model.predict(X))


# ----------------------------------------------------------------- command line
def test_cli_export_writes_the_graph(tmp_path, capsys, monkeypatch):
    X, score = _data(n=800)
    model = GradientBoostingClassifier(n_estimators=15, random_state=0).fit(
        X, _labels(score, 3, ["x", "y", "z"]))
    model.save(tmp_path / "m.gbc")
    rc, out, err = run_main(capsys, monkeypatch, tmp_path, "export", "m.gbc", "-o",
                            "m.onnx")
    assert rc == 0, err
    assert "m.onnx" in out
    proto = onnx.load(str(tmp_path / "m.onnx"))
    label, proba = _run(proto, X)
    assert np.abs(proba - model.predict_proba(X)).max() <= ATOL
    assert np.array_equal(label, model.predict(X))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporaries


def test_cli_export_refuses_its_input_as_output(tmp_path, capsys, monkeypatch):
    X, score = _data(n=300)
    GradientBoostingClassifier(n_estimators=2).fit(X, _labels(score, 2)).save(
        tmp_path / "m.gbc")
    before = (tmp_path / "m.gbc").read_bytes()
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "export", "m.gbc", "-o", "m.gbc")
    assert rc == 1
    assert err.startswith(ERROR_PREFIX) and "same file as the input" in err
    assert (tmp_path / "m.gbc").read_bytes() == before


def test_cli_export_errors_are_one_line(tmp_path, capsys, monkeypatch):
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "export", "absent.gbc", "-o",
                          "m.onnx")
    assert rc == 1 and err.startswith(ERROR_PREFIX) and "not found" in err
    X, score = _data(n=300)
    GradientBoostingClassifier(n_estimators=2).fit(X, _labels(score, 2)).save(
        tmp_path / "m.gbc")
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "export", "m.gbc", "-o", "m.onnx",
                          "--opset", "5")
    assert rc == 1 and err.startswith(ERROR_PREFIX) and "target_opset" in err
    assert not (tmp_path / "m.onnx").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_without_onnx_the_error_says_what_to_install(tmp_path, capsys, monkeypatch):
    X, score = _data(n=300)
    model = GradientBoostingClassifier(n_estimators=2).fit(X, _labels(score, 2))
    model.save(tmp_path / "m.gbc")
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError
    with pytest.raises(ImportError, match=r"pip install onnx \(the onnx extra"):
        to_onnx(model)
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "export", "m.gbc", "-o", "m.onnx")
    assert rc == 1 and err.startswith(ERROR_PREFIX) and "pip install onnx (the onnx extra" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.gbc"]
