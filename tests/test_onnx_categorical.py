"""ONNX export of models with categorical splits (``ai.onnx.ml`` opset 5's
``TreeEnsemble`` with set-membership nodes).

The reference is gbc-core's categorical prediction kernel: the leaves of
``categorical_leaves``, their ``learning_rate * value`` summed per output on top of
F0, and the loss's link. Trees are grown by ``TreeGrower`` on category codes (a
high-cardinality feature whose codes reach 255, low-cardinality ones, a numeric
one) and concatenated with one table of sets, each tree's categorical thresholds
shifted by its first row, as the boosting loop will; hand-written trees add the
sets growing rarely gives (empty, every code, codes 0 to 30, one lone leaf).
onnxruntime must give the same probabilities to 1e-6 and the same labels on
training rows and on rows with NaN, codes never seen, every code of each
categorical feature, and values that are no code (negative, 256 and above,
infinite) or no whole number (truncated, as gbc-core's kernel does).
"""

import json
import types

import numpy as np
import pytest

from gbc_core import Booster, Ensemble, NODE_DTYPE
from gbc_core._exact_splitter import ExactSplitFinder
from gbc_core._grower import TreeGrower
from gbc_core._predictor import categorical_leaves
from gbc_core.onnx import _categorical_to_onnx, to_onnx

from conftest import concatenate_trees, require
from test_categorical import _stats

onnx = require("onnx")
ort = require("onnxruntime")

ATOL = 1e-6
N_FEATURES = 4
#: feature 0: 5 codes; 1: 120 codes spread over 0..255; 2: numeric; 3: 12 codes
CATEGORICAL = np.array([True, True, False, True])


def _session(proto):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(proto.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def _data(seed, n=2500):
    rng = np.random.default_rng(seed)
    wide = np.sort(rng.choice(256, size=120, replace=False))  # codes seen in training
    X = np.column_stack([rng.integers(0, 5, n), wide[rng.integers(0, 120, n)],
                         rng.normal(size=n), rng.integers(0, 12, n)]).astype(np.float32)
    X[rng.random(X.shape) < 0.06] = np.nan
    return X, wide


def _residuals(X, rng):
    """A per-category effect on every categorical feature, a numeric one, noise."""
    codes = np.nan_to_num(X, nan=0).astype(int)
    effect = [rng.normal(size=256) for _ in range(N_FEATURES)]
    r = (effect[0][codes[:, 0]] + effect[1][codes[:, 1]] + 0.5 * effect[3][codes[:, 3]]
         + 0.3 * np.nan_to_num(X[:, 2]) + 0.8 * np.isnan(X[:, 1])
         + rng.normal(scale=0.4, size=X.shape[0]))
    return r


def _grow(X, r, seed, max_depth, **options):
    """One tree (nodes, sets) grown by the exact finder on the codes of X."""
    X32 = np.asfortranarray(X, dtype=np.float32)
    w = np.ones(X.shape[0])
    grower = TreeGrower(X32, ExactSplitFinder(X32, 1), max_depth, 2, 1, 0.0, N_FEATURES, 1,
                        categorical=CATEGORICAL, **options)
    grower.grow(_stats(r * w, w), r, None, 5)
    return grower.nodes_array(), grower.cat_bitsets()


def _bits(codes):
    """A row of the table: bit c of word c // 32 is code c."""
    row = np.zeros(8, dtype=np.uint32)
    for c in codes:
        row[c // 32] |= np.uint32(1) << np.uint32(c % 32)
    return row


def _node(feature=-1, threshold=0.0, left=-1, right=-1, missing_left=0, value=0.0):
    node = np.zeros(1, dtype=NODE_DTYPE)
    node["feature"], node["left"], node["right"] = feature, left, right
    node["threshold"] = threshold
    node["threshold32"] = np.float32(threshold)
    node["missing_go_left"] = missing_left
    node["value"] = value
    return node


def _handmade_trees(rng):
    """Trees of sets grown trees rarely hold, each with its own table rows: a chain
    of categorical nodes on sets {} (missing left), {0..30} (31 members), every
    code, {255} and {0}; and a tree that is a single leaf."""
    sets = [[], list(range(31)), list(range(256)), [255], [0]]
    features = [1, 0, 3, 1, 1]
    nodes = []
    for k, (f, miss) in enumerate(zip(features, [1, 0, 1, 0, 1])):
        # node 2k splits; its left child is leaf 2k+1, its right the next split
        nodes.append(_node(f, k, 2 * k + 1, 2 * k + 2, miss))
        nodes.append(_node(value=rng.normal()))
    nodes.append(_node(value=rng.normal()))
    chain = np.concatenate(nodes)
    lone = _node(value=rng.normal())
    return [(chain, np.array([_bits(s) for s in sets])), (lone, np.zeros((0, 8), np.uint32))]


def _model(seed, n_outputs, iterations=6):
    """Trees for ``n_outputs`` outputs (tree t adds to output t % n_outputs), their
    concatenated nodes, offsets and table, F0 and the learning rate."""
    rng = np.random.default_rng(seed)
    X, _ = _data(seed)
    grown = []
    for i in range(iterations):
        for k in range(n_outputs):
            options = ({"max_leaf_nodes": 12, "max_depth": -1} if (i + k) % 3 == 2
                       else {"max_depth": 3 + (i + k) % 4})
            max_depth = options.pop("max_depth")
            grown.append(_grow(X, _residuals(X, rng), seed, max_depth, **options))
    hand = _handmade_trees(rng)
    grown[n_outputs:n_outputs] = hand[:1]              # iteration 1's first output
    grown[2 * n_outputs:2 * n_outputs] = hand[1:]      # iteration 2's first output
    while len(grown) % n_outputs:                      # whole iterations
        grown.append((_node(value=rng.normal()), np.zeros((0, 8), np.uint32)))
    nodes, offsets, table, _ = concatenate_trees(*zip(*grown), CATEGORICAL)
    return {"nodes": nodes, "tree_offsets": offsets,
            "categorical": CATEGORICAL.copy(),
            "category_sets": table,
            "n_outputs": n_outputs, "init_raw": rng.normal(size=n_outputs),
            "learning_rate": 0.3, "n_features": N_FEATURES}


def naive_raw(model, X):
    """F of every row: F0 plus each tree's ``learning_rate * value`` at the leaf
    ``categorical_leaves`` gives, per output."""
    leaves = categorical_leaves(model["nodes"], model["tree_offsets"],
                                model["category_sets"], model["categorical"], X)
    K = model["n_outputs"]
    F = np.tile(np.asarray(model["init_raw"], dtype=np.float64), (X.shape[0], 1))
    offsets = model["tree_offsets"]
    for t in range(offsets.shape[0] - 1):
        values = model["nodes"]["value"][offsets[t]:offsets[t + 1]]
        F[:, t % K] += model["learning_rate"] * values[leaves[:, t]]
    return F


def naive_proba(F, scale=1.0):
    if F.shape[1] == 1:
        p = 1.0 / (1.0 + np.exp(-scale * F[:, 0]))
        return np.column_stack([1.0 - p, p])
    e = np.exp(F - F.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _rows(seed, wide):
    """Rows to score: random ones (NaN, codes never seen), every code 0..255 in each
    categorical column, values that are no code and fractional values."""
    rng = np.random.default_rng(seed + 100)
    X, _ = _data(seed + 1, n=600)
    X[:100, 1] = rng.choice(np.setdiff1d(np.arange(256), wide), 100)  # never seen
    X[100:150, 0] = rng.integers(5, 256, 50)                          # never seen
    blocks = [X]
    for f in np.flatnonzero(CATEGORICAL):
        every = _data(seed + 2 + f, n=256)[0]
        every[:, f] = np.arange(256)
        blocks.append(every)
    odd = np.array([-1, -0.5, -0.0, 0.5, 2.5, 4.99, 11.5, 254.9, 255.5, 256, 300, 1e9,
                    np.inf, -np.inf, np.nan], dtype=np.float32)
    for f in np.flatnonzero(CATEGORICAL):
        rows = _data(seed + 10 + f, n=odd.shape[0])[0]
        rows[:, f] = odd
        blocks.append(rows)
    return np.concatenate(blocks).astype(np.float32)


def _check(model, classes, loss="log_loss", scale=1.0, **options):
    proto = _categorical_to_onnx(**model, classes=np.asarray(classes), loss=loss, **options)
    X = _rows(0, _data(0)[1])
    label, proba = _session(proto).run(["label", "probabilities"], {"input": X})
    F = naive_raw(model, X)
    expected = naive_proba(F, scale)
    assert proba.dtype == np.float32 and proba.shape == expected.shape
    err = np.abs(proba.astype(np.float64) - expected).max()
    assert err <= ATOL, f"max |dp| {err}"
    if F.shape[1] == 1:
        code, margin = (F[:, 0] >= 0).astype(int), np.abs(F[:, 0])
    else:
        top = np.sort(F, axis=1)
        code, margin = F.argmax(axis=1), top[:, -1] - top[:, -2]
    sure = margin > 1e-5  # rows whose decision float32 rounding cannot change
    assert sure.mean() > 0.99
    np.testing.assert_array_equal(label[sure], np.asarray(classes)[code[sure]])
    return proto, X, proba


def _member_sets(model):
    """The code sets of the model's nodes on categorical features, with their
    ``missing_go_left``."""
    nodes = model["nodes"]
    on_cat = (nodes["feature"] >= 0) & CATEGORICAL[np.maximum(nodes["feature"], 0)]
    table = model["category_sets"]
    codes = np.arange(256)
    out = []
    for node in nodes[on_cat]:
        bits = table[int(node["threshold"])]
        members = codes[(bits[codes // 32] >> (codes % 32).astype(np.uint32)) & 1 == 1]
        out.append((members, int(node["missing_go_left"])))
    return out


def test_the_trees_hold_every_kind_of_node():
    """The model the tests export has what onnxruntime treats apart: sets of at most
    30 members all below 31 (unrolled into equality tests), larger sets and sets
    with a code above 30 (looked up), an empty set, NaN sent either way by
    categorical and numeric nodes, and single-leaf trees."""
    model = _model(0, 1)
    sets = _member_sets(model)
    small = [m for m, _ in sets if 0 < m.size < 31 and m.max() <= 30]
    large = [m for m, _ in sets if m.size >= 31 or (m.size and m.max() > 30)]
    assert len(small) >= 5 and len(large) >= 5
    assert any(m.size == 0 for m, _ in sets) and any(m.size == 256 for m, _ in sets)
    assert {miss for _, miss in sets} == {0, 1}
    nodes = model["nodes"]
    numeric = nodes[nodes["feature"] == 2]
    assert set(numeric["missing_go_left"].tolist()) == {0, 1}
    sizes = np.diff(model["tree_offsets"])
    assert (sizes == 1).any()


@pytest.mark.parametrize("loss, scale", [("log_loss", 1.0), ("exponential", 2.0)])
def test_binary_probabilities_and_labels(loss, scale):
    _check(_model(0, 1), np.array(["no", "yes"]), loss, scale)


def test_multiclass_probabilities_and_labels():
    _check(_model(1, 3), np.array([3, 7, 11]))


def test_rows_whose_codes_differ_only_where_gbc_core_reads_no_code_score_alike():
    """A value that is no code scores as NaN, a fractional one as its truncation."""
    model = _model(2, 3)
    proto, X, proba = _check(model, np.array(["a", "b", "c"]))
    session = _session(proto)
    for f in np.flatnonzero(CATEGORICAL):
        Z = X.copy()
        Z[:, f] = np.nan
        noise = X.copy()
        noise[:, f] = np.float32(-3.0)
        np.testing.assert_array_equal(session.run(["probabilities"], {"input": Z})[0],
                                      session.run(["probabilities"], {"input": noise})[0])
        whole = X.copy()
        in_range = (X[:, f] >= 0) & (X[:, f] < 256)  # -0.5 is no code, as -1
        whole[:, f] = np.where(in_range, np.trunc(X[:, f]), X[:, f])
        np.testing.assert_array_equal(session.run(["probabilities"], {"input": whole})[0],
                                      proba)


def test_a_model_without_trees_and_an_older_opset():
    model = _model(3, 3)
    model.update(nodes=model["nodes"][:0], tree_offsets=np.zeros(1, np.int64),
                 category_sets=np.zeros((0, 8), np.uint32))
    proto = _categorical_to_onnx(**model, classes=np.array([0, 1, 2]), target_opset=13)
    assert {o.domain or "": o.version for o in proto.opset_import} == {"": 13,
                                                                       "ai.onnx.ml": 5}
    X = _rows(3, _data(3)[1])
    proba = _session(proto).run(["probabilities"], {"input": X})[0]
    np.testing.assert_allclose(proba, naive_proba(naive_raw(model, X)), atol=ATOL, rtol=0)


def test_the_graph_and_its_metadata():
    model = _model(4, 1, iterations=2)
    names = [f"f{i}" for i in range(N_FEATURES)]
    categories = [["a", "b", "c", "d", "e"], list(range(256)), None, list(range(12))]
    proto = _categorical_to_onnx(**model, classes=np.array([0, 1]), feature_names=names,
                                 categories=categories, n_iterations=2)
    meta = {p.key: p.value for p in proto.metadata_props}
    assert json.loads(meta["categorical_features"]) == [0, 1, 3]
    assert json.loads(meta["categories"]) == categories
    assert json.loads(meta["feature_names"]) == names
    ops = {(n.domain, n.op_type) for n in proto.graph.node}
    assert ("ai.onnx.ml", "TreeEnsemble") in ops
    assert ("ai.onnx.ml", "TreeEnsembleRegressor") not in ops
    tree = next(n for n in proto.graph.node if n.op_type == "TreeEnsemble")
    attrs = {a.name: a for a in tree.attribute}
    modes = onnx.numpy_helper.to_array(attrs["nodes_modes"].t)
    members = onnx.numpy_helper.to_array(attrs["membership_values"].t)
    # one NaN ends each member node's codes
    assert (modes == 6).sum() == np.isnan(members).sum() > 0
    assert [i.name for i in proto.graph.input] == ["input"]
    assert [o.name for o in proto.graph.output] == ["label", "probabilities"]


def _booster_with(model, classes, loss="log_loss"):
    """A Booster whose ensemble stands for one with categorical features (the
    attributes ``to_onnx`` reads)."""
    leaf = _node()
    booster = Booster(Ensemble.from_trees([leaf] * model["n_outputs"],
                                          n_outputs=model["n_outputs"],
                                          init_raw=model["init_raw"], learning_rate=0.1,
                                          n_features=N_FEATURES), classes, loss=loss)
    n_trees = model["tree_offsets"].shape[0] - 1
    booster.ensemble = types.SimpleNamespace(
        **model, n_trees=n_trees, n_iterations=n_trees // model["n_outputs"])
    return booster


def test_to_onnx_writes_a_categorical_ensemble_with_member_nodes():
    model = _model(5, 3, iterations=3)
    classes = np.array(["x", "y", "z"])
    proto = to_onnx(_booster_with(model, classes))
    assert {o.domain or "": o.version for o in proto.opset_import}["ai.onnx.ml"] == 5
    X = _rows(5, _data(5)[1])
    label, proba = _session(proto).run(["label", "probabilities"], {"input": X})
    np.testing.assert_allclose(proba, naive_proba(naive_raw(model, X)), atol=ATOL, rtol=0)
    meta = {p.key: p.value for p in proto.metadata_props}
    assert json.loads(meta["categorical_features"]) == [0, 1, 3]


def test_without_categorical_features_the_numeric_graph_is_written():
    """``categorical`` all False (or absent): the ai.onnx.ml opset 3 graph, as for
    every numeric model."""
    model = _model(6, 1, iterations=1)
    booster = _booster_with(model, np.array([0, 1]))
    numeric = booster.ensemble
    ensemble = Ensemble.from_trees([_node(value=0.5)], n_outputs=1, init_raw=[0.1],
                                   learning_rate=0.1, n_features=N_FEATURES)
    booster.ensemble = ensemble
    plain = to_onnx(booster)
    assert {o.domain or "": o.version for o in plain.opset_import}["ai.onnx.ml"] == 3
    numeric.categorical = np.zeros(N_FEATURES, dtype=bool)
    for name in ("nodes", "tree_offsets", "n_outputs", "init_raw", "learning_rate",
                 "n_features", "n_trees", "n_iterations"):
        setattr(numeric, name, getattr(ensemble, name))
    booster.ensemble = numeric
    assert to_onnx(booster).SerializeToString() == plain.SerializeToString()


def test_bad_arrays_are_refused():
    model = _model(7, 1, iterations=1)
    classes = np.array([0, 1])
    with pytest.raises(ValueError, match="categorical must be a boolean mask of the 4"):
        _categorical_to_onnx(**dict(model, categorical=[True]), classes=classes)
    with pytest.raises(ValueError, match=r"category_sets must be a uint32 array of shape"):
        _categorical_to_onnx(**dict(model, category_sets=model["category_sets"][:, :4]),
                             classes=classes)
    with pytest.raises(ValueError, match="must name a row of the 1 category sets"):
        _categorical_to_onnx(**dict(model, category_sets=model["category_sets"][:1]),
                             classes=classes)
    with pytest.raises(ValueError, match="init_raw must hold 1 raw score"):
        _categorical_to_onnx(**dict(model, init_raw=[0.0, 1.0]), classes=classes)
    with pytest.raises(ValueError, match="tree_offsets must rise from 0"):
        _categorical_to_onnx(**dict(model, tree_offsets=model["tree_offsets"][:-1]),
                             classes=classes)


def test_an_onnx_without_opset_5_is_refused(monkeypatch):
    def no_schema(*args, **kwargs):
        raise onnx.defs.SchemaError("no such schema")

    monkeypatch.setattr(onnx.defs, "get_schema", no_schema)
    with pytest.raises(ImportError, match=r"ai.onnx.ml opset 5.*onnx>=1.16"):
        _categorical_to_onnx(**_model(8, 1, iterations=1), classes=np.array([0, 1]))
