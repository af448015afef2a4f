"""Model format version 4: models with categorical features.

A model with categorical features is written as version 4: the header lists the
categorical features (``categorical_features``), the number of category sets
(``n_category_sets``) and each categorical feature's categories (``categories``),
and the payload holds the sets (``category_sets``, uint32). A model without them is
still written as version 3, byte for byte. The models here are assembled from trees
grown with categorical features (the grower of ``tests/test_categorical.py``) and
from hand-made stumps: the estimator does not fit categorical features here. Corrupt
files are loaded in a subprocess, as in ``tests/test_model_io.py``.
"""

import copy
import io
import json
import pickle
import struct

import numpy as np
import pytest

import gbc_core
from gbc_core import Booster, Ensemble, ModelFormatError
from gbc_core import _model_io
from gbc_core._common import NODE_DTYPE
from gbc_core.paper import paper_example

from test_categorical import _finders, _grow, _tree_data
from test_model_io import (MAGIC, _bit_flips, _probe_X, _truncations, arrays_of,
                           header_edit, recompute_checksum, rewrite, run_loader, split)

CATEGORICAL = np.array([True, True, False])
CATEGORIES = {
    "numbers": [[-2.0, 0.5, 1.0, 3.0, 1e300], [float(v) for v in range(100, 112)], None],
    "strings": [["a", "b", "c", "d", "e"],
                sorted(["", " ", "L", "M", "S", "XL", "s", "\u00e9t\u00e9", "\u6625",
                        "\U0001f600", "\ud800", "x" * 300]), None],  # by code point
    "both": [[0.0, 1.0, 2.0, 3.0, 4.0], [f"c{i:02d}" for i in range(12)], None],
    "codes": None,
}


def _grown_trees(n_trees, seed=0):
    """Trees grown on categorical data by both finders, thresholds renumbered into one
    table of the sets their categorical nodes name: (trees, table)."""
    trees, tables, shift = [], [], 0
    for t in range(n_trees):
        X, r, w = _tree_data(seed + t, n=800)
        nodes, bits, _ = _grow(_finders(X)[t % 2], X, r, w, None, CATEGORICAL,
                               max_depth=2 + t % 3)
        split_on = (nodes["feature"] >= 0) & CATEGORICAL[np.maximum(nodes["feature"], 0)]
        rows = nodes["threshold"][split_on].astype(np.int64)
        nodes["threshold"][split_on] = shift + np.arange(rows.shape[0])
        nodes["threshold32"][split_on] = shift + np.arange(rows.shape[0])
        trees.append(nodes)
        tables.append(bits[rows])
        shift += rows.shape[0]
    return trees, np.concatenate(tables)


def categorical_booster(n_classes=2, categories="both", n_iterations=3, **kwargs):
    K = 1 if n_classes == 2 else n_classes
    trees, table = _grown_trees(n_iterations * K, seed=10 * n_classes)
    ensemble = Ensemble.from_trees(trees, n_outputs=K, init_raw=np.linspace(-0.3, 0.2, K),
                                   learning_rate=0.2, n_features=3, categorical=CATEGORICAL,
                                   category_sets=table)
    classes = np.arange(n_classes) * 3 if n_classes > 2 else np.array(["no", "yes"])
    return Booster(ensemble, classes, categories=CATEGORIES[categories], **kwargs)


def _rows():
    """Category codes (with codes never seen, out of range, and NaN) and numbers."""
    X, _, _ = _tree_data(99, n=300)
    X[:20, 0], X[20:40, 1], X[40:50, 1] = 7, 300, -1
    return X


def _same_categories(a, b):
    if a is None or b is None:
        assert a is None and b is None
        return
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if x is None or y is None:
            assert x is None and y is None
            continue
        assert x.dtype == y.dtype and x.tolist() == y.tolist()
        assert [type(v) for v in x.tolist()] == [type(v) for v in y.tolist()]


def assert_same_categorical_model(a, b):
    ea, eb = a.ensemble, b.ensemble
    assert ea.categorical.dtype == eb.categorical.dtype == np.bool_
    assert ea.categorical.tolist() == eb.categorical.tolist()
    assert eb.category_sets.dtype == np.uint32
    assert ea.category_sets.shape == eb.category_sets.shape
    assert ea.category_sets.tobytes() == eb.category_sets.tobytes()
    _same_categories(a.categories_, b.categories_)
    assert ea.nodes.tobytes() == eb.nodes.tobytes()
    assert ea.tree_offsets.tolist() == eb.tree_offsets.tolist()
    assert a.classes_.tolist() == b.classes_.tolist() and a.loss == b.loss
    assert a.params == b.params
    X = _rows()
    assert ea.predict_raw(X).tobytes() == eb.predict_raw(X).tobytes()
    np.testing.assert_array_equal(ea.apply(X), eb.apply(X))
    assert a.to_bytes() == b.to_bytes()


# ----------------------------------------------------------------- round trips
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("categories", list(CATEGORIES))
def test_round_trip_of_every_field(tmp_path, n_classes, categories):
    booster = categorical_booster(n_classes, categories,
                                  feature_names=["colour", "size", "x"],
                                  params={"max_depth": 4, "learning_rate": 0.2})
    data = booster.to_bytes()
    version, header, _ = split(data)
    assert version == header["format_version"] == 4
    assert header["categorical_features"] == [0, 1]
    assert header["n_category_sets"] == booster.ensemble.category_sets.shape[0] > 0
    words = arrays_of(data)["category_sets"]
    assert words.dtype == np.dtype("<u4")
    assert words.tobytes() == booster.ensemble.category_sets.astype("<u4").tobytes()
    if CATEGORIES[categories] is None:
        assert header["categories"] is None
    else:
        assert header["categories"] == [list(c) for c in CATEGORIES[categories][:2]]
    assert_same_categorical_model(booster, gbc_core.from_bytes(data))
    booster.save(tmp_path / "m.gbc")
    assert (tmp_path / "m.gbc").read_bytes() == data
    assert_same_categorical_model(booster, gbc_core.load(tmp_path / "m.gbc"))
    assert_same_categorical_model(booster, Booster.load(io.BytesIO(data)))
    loaded = gbc_core.from_bytes(data)
    if categories == "numbers":
        assert loaded.categories_[0].dtype == np.float64
        assert loaded.categories_[0][-1] == 1e300
    if categories == "strings":
        assert loaded.categories_[1].dtype == object
        assert loaded.categories_[1].tolist()[-3:] == ["\u6625", "\ud800", "\U0001f600"]


def test_read_model_header_lists_the_categorical_features():
    booster = categorical_booster(3, "strings")
    header = gbc_core.read_model_header(io.BytesIO(booster.to_bytes()))
    assert header["format_version"] == 4
    assert header["categorical_features"] == [0, 1]
    assert header["categories"][0] == ["a", "b", "c", "d", "e"]
    assert header["n_category_sets"] == booster.ensemble.category_sets.shape[0]


def test_categorical_features_without_a_categorical_split():
    """Categorical features no tree splits on: version 4 with an empty table."""
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes["feature"] = [2, -1, -1]
    nodes["left"], nodes["right"] = [1, -1, -1], [2, -1, -1]
    nodes["depth"] = [0, 1, 1]
    nodes["threshold"], nodes["threshold32"] = 0.25, 0.25
    nodes["value"] = [0.0, -1.0, 1.0]
    ensemble = Ensemble(nodes, [0, 3], n_outputs=1, init_raw=[0.0], learning_rate=0.5,
                        n_features=3, categorical=CATEGORICAL)
    booster = Booster(ensemble, [0, 1], categories=CATEGORIES["both"])
    data = booster.to_bytes()
    _, header, _ = split(data)
    assert header["format_version"] == 4 and header["n_category_sets"] == 0
    assert arrays_of(data)["category_sets"].shape == (0,)
    loaded = gbc_core.from_bytes(data)
    assert loaded.ensemble.category_sets.shape == (0, 8)
    assert_same_categorical_model(booster, loaded)


def test_a_hand_made_categorical_stump():
    """A stump on categorical feature 0 sending codes {1, 3, 40} left (one set),
    missing values right: read back, it routes rows as the set says."""
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes["feature"] = [0, -1, -1]
    nodes["left"], nodes["right"] = [1, -1, -1], [2, -1, -1]
    nodes["depth"] = [0, 1, 1]
    nodes["value"] = [0.0, -1.0, 1.0]
    table = np.zeros((1, 8), dtype=np.uint32)
    table[0, 0] = (1 << 1) | (1 << 3)
    table[0, 1] = 1 << 8
    ensemble = Ensemble(nodes, [0, 3], n_outputs=1, init_raw=[0.0], learning_rate=1.0,
                        n_features=1, categorical=[True], category_sets=table)
    booster = gbc_core.from_bytes(Booster(ensemble, [0, 1]).to_bytes())
    raw = booster.ensemble.predict_raw([[1.0], [3.0], [40.0], [0.0], [2.0], [np.nan]])
    assert raw.ravel().tolist() == [-1.0, -1.0, -1.0, 1.0, 1.0, 1.0]
    assert booster.categories_ is None


# ------------------------------------------------------------------- pickling
def test_pickle_and_deepcopy_of_a_categorical_booster():
    booster = categorical_booster(3, "strings")
    assert set(booster.__getstate__()) == {"gbc_core_model"}  # the model's bytes
    assert booster.__getstate__()["gbc_core_model"] == booster.to_bytes()
    for again in (pickle.loads(pickle.dumps(booster)), copy.deepcopy(booster)):
        assert_same_categorical_model(booster, again)


def test_pickle_of_an_ensemble_with_categorical_features():
    ensemble = categorical_booster(2, "codes").ensemble
    again = pickle.loads(pickle.dumps(ensemble))
    assert again.categorical.tolist() == ensemble.categorical.tolist()
    assert again.category_sets.tobytes() == ensemble.category_sets.tobytes()
    assert again.predict_raw(_rows()).tobytes() == ensemble.predict_raw(_rows()).tobytes()


# --------------------------------------------------------- numeric models: v3
def test_numeric_models_are_still_written_as_version_3():
    """A model without categorical features: version 3, none of version 4's keys or
    arrays; a version-3 file saved again is the same bytes (the bytes of gbc-core
    before version 4)."""
    paper = paper_example()[0]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    multi = gbc_core.GradientBoostingClassifier(n_estimators=3, max_depth=2).fit(
        X, np.digitize(X[:, 0], [-0.5, 0.5])).booster_
    for booster in (paper, multi):
        data = booster.to_bytes()
        version, header, _ = split(data)
        assert version == header["format_version"] == 3
        assert not set(_model_io.CATEGORICAL_KEYS) & set(header)
        assert "category_sets" not in arrays_of(data)
        assert gbc_core.from_bytes(data).to_bytes() == data
    # An ensemble whose mask has no categorical feature has none.
    ensemble = paper.ensemble
    plain = Ensemble(ensemble.nodes, ensemble.tree_offsets, n_outputs=1,
                     init_raw=ensemble.init_raw, learning_rate=ensemble.learning_rate,
                     n_features=1, categorical=[False])
    assert plain.categorical is None
    assert Booster(plain, paper.classes_, params=paper.params,
                   record=None).to_bytes()[8:12] == struct.pack("<I", 3)


def test_categories_the_format_cannot_hold_refuse_to_save():
    booster = categorical_booster(2, "codes")
    long = [["a" * (_model_io.MAX_LABEL_WIDTH + 1)], ["b"], None]
    too_long = Booster(booster.ensemble, booster.classes_, categories=long)
    with pytest.raises(ValueError, match="longer than"):
        too_long.to_bytes()


# ---------------------------------------------------- corrupt version-4 files
def _set_nodes(blob, index, **columns):
    arrays = arrays_of(blob)
    for name, value in columns.items():
        arrays["nodes." + name][index] = value
    return rewrite(blob, {"nodes." + name: arrays["nodes." + name] for name in columns})


def _with_version(blob, version):
    """``blob`` with the prelude's version changed (header edited separately)."""
    return recompute_checksum(blob[:8] + struct.pack("<I", version) + blob[12:])


def _raw_header_edit(blob, old, new):
    _, hlen = struct.unpack_from("<II", blob, 8)
    text = blob[16: 16 + hlen]
    assert text.count(old) == 1
    text = text.replace(old, new)
    _, _, payload = split(blob)
    head = struct.pack("<8sII", MAGIC, 4, len(text)) + text
    head += b"\0" * (-len(head) % 8)
    return recompute_checksum(head + payload + b"\0" * 32)


def _crafted_v4_cases():
    """(name, blob, expected message fragment; None: it loads)."""
    cases = []

    def add(name, blob, fragment):
        cases.append((name, bytes(blob), fragment))

    booster = categorical_booster(2, "strings")
    blob = booster.to_bytes()
    numbers = categorical_booster(2, "numbers").to_bytes()
    codes = categorical_booster(2, "codes").to_bytes()
    _, header, payload = split(blob)
    n_sets = header["n_category_sets"]
    nodes = booster.ensemble.nodes
    on_cat = np.flatnonzero((nodes["feature"] >= 0) & (nodes["feature"] <= 1))
    node = int(on_cat[0])
    add("v4 (control)", blob, None)
    add("v4, numbers (control)", numbers, None)
    add("v4, codes (control)", codes, None)
    # A categorical node's threshold names a row of the table.
    for value, name in [(n_sets, "past the table"), (2.0**40, "far past the table"),
                        (0.5, "between rows"), (-1.0, "negative"), (np.inf, "+inf")]:
        t32 = np.float32(value) if np.isfinite(value) else np.float32(np.inf)
        add(f"threshold {name}", _set_nodes(blob, node, threshold=value, threshold32=t32),
            "must name a row")
    add("threshold32 not the threshold's", _set_nodes(blob, node, threshold32=0.5),
        "threshold32")
    # The table: its declared size, its array.
    words = arrays_of(blob)["category_sets"]
    add("table one row short", rewrite(blob, {"category_sets": words[:-8]},
                                       edit=lambda h: h.update(n_category_sets=n_sets - 1)),
        "must name a row")
    for value, frag in [(n_sets + 1, "category_sets"), (n_sets - 1, "category_sets"),
                        (2**40, "n_category_sets"), (-1, "n_category_sets"),
                        ("3", "n_category_sets"), (True, "n_category_sets"),
                        (None, "n_category_sets"), (float(n_sets), "n_category_sets"),
                        (len(payload) // 32 + 1, "more than the")]:
        add(f"n_category_sets={value!r}", header_edit(blob, n_category_sets=value), frag)
    add("no n_category_sets", rewrite(blob, edit=lambda h: h.pop("n_category_sets")),
        "n_category_sets")
    add("words not whole sets", rewrite(blob, {"category_sets": words[:-1]}), "words")
    add("no category_sets array", rewrite(blob, edit=lambda h: h.update(arrays=[
        d for d in h["arrays"] if d["name"] != "category_sets"])), "lacks")

    def edit_sets(**changes):
        def edit(h):
            next(d for d in h["arrays"] if d["name"] == "category_sets").update(changes)
        return rewrite(blob, edit=edit)

    add("category_sets big-endian", edit_sets(dtype=">u4"), "dtype")
    add("category_sets uint64", edit_sets(dtype="<u8"), "dtype")
    add("category_sets nbytes lie", edit_sets(nbytes=4), "nbytes")
    add("category_sets length huge", edit_sets(length=2**40, nbytes=2**42), "within")
    # The mask: feature indices.
    for value, frag in [([], "categorical_features"), ([0, 0], "increasing"),
                        ([1, 0], "increasing"), ([0, 1, 3], "categorical_features"),
                        ([-1, 0, 1], "categorical_features"),
                        (["0", 1], "categorical_features"),
                        ([True, 1], "categorical_features"),
                        ([0.0, 1], "categorical_features"),
                        ({"0": 1}, "categorical_features"), (None, "categorical_features"),
                        ([0, 1, 2], "categories")]:
        add(f"categorical_features={value!r}", header_edit(blob, categorical_features=value),
            frag)
    add("no categorical_features", rewrite(blob, edit=lambda h: h.pop("categorical_features")),
        "categorical_features")
    # A numeric feature made categorical: its thresholds name no set.
    add("numeric feature marked categorical",
        header_edit(codes, categorical_features=[0, 1, 2]), "must name a row")
    # The categories.
    cats = header["categories"]
    for value, frag in [
        ("a", "categories"), ({"0": ["a"]}, "categories"), ([cats[0]], "categories"),
        ([cats[0], cats[1], ["z"]], "categories"), ([cats[0], []], "1 to 256"),
        ([cats[0], {"a": 1}], "1 to 256"), ([cats[0], None], "1 to 256"),
        ([cats[0], [f"{i:03d}" for i in range(257)]], "1 to 256"),
        ([cats[0], ["b", "a"]], "sorted"), ([cats[0], ["a", "a"]], "distinct"),
        ([cats[0], ["a", 1]], "all strings or all numbers"),
        ([cats[0], [True, False]], "all strings or all numbers"),
        ([cats[0], [[1]]], "all strings or all numbers"),
        ([cats[0], [None]], "all strings or all numbers"),
        ([cats[0], [10**400]], "finite"), ([[-0.0, 0.0], cats[1]], "distinct"),
        ([[2.0, 1.0], cats[1]], "sorted"), ([cats[0], ["x" * (2**20 + 1)]], "longer than"),
    ]:
        add(f"categories={str(value)[:40]}", header_edit(blob, categories=value), frag)
    add("categories 1e999", _raw_header_edit(
        numbers, b'"categories":[[-2.0,', b'"categories":[[-1e999,'), "finite")
    # Versions: the keys and the array belong to version 4; version 4 needs them.
    paper_blob = paper_example()[0].to_bytes()
    add("version 3 with categorical_features",
        header_edit(paper_blob, categorical_features=[0]), "field(s) of format version 4")
    add("version 3 with categories", header_edit(paper_blob, categories=None),
        "field(s) of format version 4")
    no_keys = rewrite(blob, edit=lambda h: [h.pop(k) for k in _model_io.CATEGORICAL_KEYS]
                      + [h.update(format_version=3)])
    add("version 3 with a category_sets array", _with_version(no_keys, 3),
        "array(s) ['category_sets'] of format version 4")
    add("version 4 without categorical fields",
        _with_version(header_edit(paper_blob, format_version=4), 4),
        "holds models with categorical features")
    add("version 5", _with_version(blob, 5), "newer")
    return cases


@pytest.fixture(scope="module")
def corrupt_v4_results(tmp_path_factory):
    rng = np.random.default_rng(4)
    blob = categorical_booster(3, "both").to_bytes()
    groups = {"truncated": _truncations(blob, rng, n_payload=100)}
    groups["stale"], groups["fixed"] = _bit_flips(blob, rng, n=300, n_header=200)
    crafted = _crafted_v4_cases()
    groups["crafted"] = [b for _, b, _ in crafted]
    blobs = [b for group in groups.values() for b in group]
    results = iter(run_loader(tmp_path_factory.mktemp("corrupt_v4"), blobs, _probe_X()))
    out = {name: [next(results) for _ in group] for name, group in groups.items()}
    out["crafted_cases"] = crafted
    return out


def test_crafted_invalid_v4_files(corrupt_v4_results):
    problems = []
    for (name, _, fragment), result in zip(corrupt_v4_results["crafted_cases"],
                                           corrupt_v4_results["crafted"]):
        if fragment is None:
            if result["status"] != "loaded":
                problems.append(f"{name}: should load, got {result['msg']}")
        elif result["status"] != "error":
            problems.append(f"{name}: loaded, should raise ModelFormatError")
        elif fragment.lower() not in result["msg"].lower():
            problems.append(f"{name}: message {result['msg']!r} lacks {fragment!r}")
    assert not problems, "\n".join(problems)


def test_truncated_and_flipped_v4_files(corrupt_v4_results):
    assert all(r["status"] == "error" for r in corrupt_v4_results["truncated"])
    assert all(r["status"] == "error" for r in corrupt_v4_results["stale"])
    fixed = corrupt_v4_results["fixed"]
    # Those that load also predict (checked in the subprocess): a flipped bit of a
    # set is another set.
    assert sum(r["status"] == "error" for r in fixed) > len(fixed) // 4
    assert not any("checksum" in r["msg"] for r in fixed)


def test_errors_in_process():
    blob = categorical_booster(2, "strings").to_bytes()
    with pytest.raises(ModelFormatError, match="must name a row of the 0 category sets"):
        gbc_core.from_bytes(rewrite(blob, {"category_sets": np.zeros(0, "<u4")},
                                    edit=lambda h: h.update(n_category_sets=0)))
    with pytest.raises(ModelFormatError, match="categories must be sorted and distinct"):
        gbc_core.from_bytes(header_edit(blob, categories=[["b", "a"], ["c"]]))
    with pytest.raises(ModelFormatError, match=r"feature 1 must have a list of 1 to 256"):
        gbc_core.from_bytes(header_edit(blob, categories=[["a"], [str(i) for i in range(300)]]))


def test_a_huge_set_count_is_refused_before_allocation():
    import tracemalloc

    blob = categorical_booster(2, "codes").to_bytes()
    crafted = rewrite(blob, edit=lambda h: (h.update(n_category_sets=2**26), next(
        d for d in h["arrays"] if d["name"] == "category_sets").update(
            length=2**29, nbytes=2**31)))
    tracemalloc.start()
    try:
        with pytest.raises(ModelFormatError, match="n_category_sets"):
            gbc_core.from_bytes(crafted)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * len(crafted) + (1 << 20)


def test_inspect_shows_the_categorical_features(tmp_path, capsys):
    from gbc_core.cli import main

    booster = categorical_booster(3, "strings", feature_names=["colour", "size", "x"])
    booster.save(tmp_path / "m.gbc")
    assert main(["inspect", str(tmp_path / "m.gbc")]) == 0
    text = capsys.readouterr().out
    assert "format version 4" in text
    assert "categorical 2: colour (5 categories), size (12 categories)" in text
    assert main(["inspect", str(tmp_path / "m.gbc"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["categorical_features"] == [
        {"feature": "colour", "index": 0, "n_categories": 5},
        {"feature": "size", "index": 1, "n_categories": 12}]
    categorical_booster(2, "codes").save(tmp_path / "codes.gbc")
    paper_example()[0].save(tmp_path / "paper.gbc")
    assert main(["inspect", str(tmp_path / "codes.gbc")]) == 0
    assert "categorical 2: f0, f1\n" in capsys.readouterr().out
    assert main(["inspect", str(tmp_path / "paper.gbc"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["categorical_features"] is None
