"""Model persistence: the versioned format, its validation, atomic saves, pickling.

The corrupt-file tests run the loader in a subprocess, so a crash (rather than a
``ModelFormatError``) fails the test instead of the test run. The helpers below
parse and rebuild files from the specification (``docs/model_format.md``), not
through the library's writer.
"""

import copy
import hashlib
import io
import json
import os
import pickle
import struct
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_arrays_equal, assert_nodes_equal, require

import gbc_core
from gbc_core import GradientBoostingClassifier, ModelFormatError
from gbc_core import _model_io
from gbc_core._common import NODE_DTYPE
from gbc_core.paper import paper_example

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MAGIC = b"\x89GBC\r\n\x1a\n"


# ------------------------------------------------------------ spec-level helpers
def split(blob):
    """(version, header dict, payload bytes) of a well-formed file."""
    magic, version, hlen = struct.unpack_from("<8sII", blob, 0)
    assert magic == MAGIC
    header = json.loads(blob[16: 16 + hlen])
    start = (16 + hlen + 7) // 8 * 8
    return version, header, blob[start: len(blob) - 32]


def arrays_of(blob):
    _, header, payload = split(blob)
    return {d["name"]: np.frombuffer(payload, dtype=d["dtype"], count=d["length"],
                                     offset=d["offset"]).copy()
            for d in header["arrays"]}


#: The version of the numeric models these tests start from (version 4 is written
#: for models with categorical features only: tests/test_model_io_categorical.py).
NUMERIC_VERSION = 3


def assemble(header, payload, version=NUMERIC_VERSION, magic=MAGIC, checksum=True):
    text = json.dumps(header, separators=(",", ":")).encode()
    return assemble_raw(text, payload, version, magic, checksum)


def assemble_raw(text, payload, version=NUMERIC_VERSION, magic=MAGIC,
                 checksum=True):
    head = struct.pack("<8sII", magic, version, len(text)) + text
    head += b"\0" * (-len(head) % 8)
    body = head + bytes(payload)
    digest = hashlib.sha256(body).digest() if checksum else b"\0" * 32
    return body + digest


def rewrite(blob, arrays=None, edit=None, checksum=True):
    """Rebuild ``blob`` with replaced arrays (canonical layout) and an edited header.

    ``arrays`` maps names to new arrays (any length; descriptors follow, and
    ``payload_size`` too); ``edit(header)`` then changes the header in place.
    """
    version, header, _ = split(blob)
    current = arrays_of(blob)
    current.update(arrays or {})
    payload, descs = bytearray(), []
    for d in header["arrays"]:
        arr = np.ascontiguousarray(current[d["name"]], dtype=d["dtype"])
        payload += b"\0" * (-len(payload) % 8)
        descs.append(dict(d, length=int(arr.shape[0]), offset=len(payload),
                          nbytes=arr.nbytes))
        payload += arr.tobytes()
    payload += b"\0" * (-len(payload) % 8)
    header["arrays"] = descs
    header["payload_size"] = len(payload)
    if edit is not None:
        edit(header)
    return assemble(header, payload, version=version, checksum=checksum)


def with_column(blob, column, index, value):
    col = arrays_of(blob)["nodes." + column]
    col[index] = value
    return rewrite(blob, {"nodes." + column: col})


def header_edit(blob, **changes):
    def edit(h):
        h.update(changes)
    return rewrite(blob, edit=edit)


def recompute_checksum(blob):
    blob = bytes(blob)
    return blob[:-32] + hashlib.sha256(blob[:-32]).digest()


# --------------------------------------------------------------------- models
def _fit_nan_model(labels=("neg", "pos"), **params):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4))
    miss = rng.random(300) < 0.3
    y = np.where(miss | (X[:, 1] > 0.4), labels[1], labels[0])
    X[miss, 0] = np.nan
    X[rng.random(X.shape) < 0.05] = np.nan
    kw = dict(n_estimators=8, max_depth=4, random_state=0)
    kw.update(params)
    return GradientBoostingClassifier(**kw).fit(X, y), X


@pytest.fixture(scope="module")
def nan_model():
    return _fit_nan_model(n_iter_no_change=3, class_weight={"pos": 2.0},
                          max_features=3, subsample=0.9)


@pytest.fixture(scope="module")
def paper_model():
    """The appendix model (a Booster)."""
    return paper_example()[0]


@pytest.fixture
def paper_estimator(paper_model):
    """The appendix model as an estimator (its own copy)."""
    return GradientBoostingClassifier.from_bytes(paper_model.to_bytes())


def _params(model):
    return model.get_params() if hasattr(model, "get_params") else model.params


def _booster(model):
    return getattr(model, "booster_", model)


def _assert_same_model(a, b, X):
    """The same fitted model, bit for bit (estimators or boosters, in any pairing)."""
    assert type(a) is type(b) or {type(a), type(b)} == {GradientBoostingClassifier,
                                                         gbc_core.Booster}
    assert _params(a) == _params(b)
    assert a.classes_.dtype == b.classes_.dtype
    assert a.classes_.tolist() == b.classes_.tolist()
    assert a.n_features_in_ == b.n_features_in_
    a, b = _booster(a), _booster(b)
    assert a.n_estimators_ == b.n_estimators_
    np.testing.assert_array_equal(a.init_raw_, b.init_raw_)
    assert a.best_iteration_ == b.best_iteration_
    assert a.max_features_ == b.max_features_
    for name in ("train_score_", "validation_score_", "oob_scores_", "oob_improvement_"):
        assert (getattr(a, name) is None) == (getattr(b, name) is None), name
        if getattr(a, name) is not None:
            assert_arrays_equal(getattr(a, name), getattr(b, name), name,
                                index_name="iteration")
    assert (a.feature_names_in_ is None) == (b.feature_names_in_ is None)
    if a.feature_names_in_ is not None:
        assert a.feature_names_in_.tolist() == b.feature_names_in_.tolist()
    assert a.learning_rate == b.learning_rate
    np.testing.assert_array_equal(a.ensemble.tree_offsets, b.ensemble.tree_offsets)
    assert_nodes_equal(a.ensemble.nodes, b.ensemble.nodes, "trees")
    # Predictions bit for bit.
    assert_arrays_equal(a.decision_function(X), b.decision_function(X), "decision_function")
    assert_arrays_equal(a.predict_proba(X), b.predict_proba(X), "predict_proba")
    assert a.predict(X).tolist() == b.predict(X).tolist()
    np.testing.assert_array_equal(a.apply(X), b.apply(X))
    np.testing.assert_array_equal(a.feature_importances_, b.feature_importances_)


# ----------------------------------------------------------------- round trips
def test_error_class_is_exported():
    assert issubclass(gbc_core.ModelFormatError, ValueError)
    assert gbc_core.ModelFormatError is _model_io.ModelFormatError
    assert {"ModelFormatError", "load", "from_bytes", "Booster"} <= set(gbc_core.__all__)


def test_node_layout_matches_format_columns():
    assert set(NODE_DTYPE.names) == {name for name, _ in _model_io.NODE_COLUMNS}
    for name, dt in _model_io.NODE_COLUMNS:
        assert NODE_DTYPE[name].kind == np.dtype(dt).kind
        assert NODE_DTYPE[name].itemsize == np.dtype(dt).itemsize


def test_save_load_round_trip(tmp_path, nan_model, paper_model):
    model, X = nan_model
    assert np.isinf(model.booster_.ensemble.nodes["threshold"]).any()  # "missing only" splits
    assert model.best_iteration_ is not None and hasattr(model, "validation_score_")
    assert hasattr(model, "oob_scores_")
    path = tmp_path / "model.gbc"
    model.save(path)
    assert path.read_bytes()[:8] == MAGIC
    loaded = gbc_core.load(path)
    assert isinstance(loaded, gbc_core.Booster)  # no scikit-learn needed to load
    _assert_same_model(model, loaded, X)
    _assert_same_model(model, GradientBoostingClassifier.load(path), X)
    model.save(str(path))  # str paths, and overwriting
    _assert_same_model(model, gbc_core.load(str(path)), X)
    assert [p.name for p in tmp_path.iterdir()] == ["model.gbc"]  # no temp file left

    paper_model.save(path)
    grid = np.array([[0.0], [1.4], [3.5], [5.25], [9.0], [np.nan]])
    _assert_same_model(paper_model, gbc_core.load(path), grid)


def test_bytes_round_trip(nan_model):
    model, X = nan_model
    data = model.to_bytes()
    assert isinstance(data, bytes)
    _assert_same_model(model, gbc_core.from_bytes(data), X)
    _assert_same_model(model, GradientBoostingClassifier.from_bytes(bytearray(data)), X)
    _assert_same_model(model, gbc_core.from_bytes(memoryview(data)), X)
    assert gbc_core.from_bytes(data).to_bytes() == data  # deterministic


def test_file_objects(nan_model, tmp_path):
    model, X = nan_model
    buf = io.BytesIO()
    model.save(buf)
    buf.seek(0)
    _assert_same_model(model, gbc_core.load(buf), X)
    with pytest.raises(TypeError, match="binary"):
        gbc_core.load(io.StringIO("text"))
    # A model file opened in text mode: the same TypeError, not a UnicodeDecodeError
    # from decoding its bytes.
    model.save(tmp_path / "m.gbc")
    with open(tmp_path / "m.gbc") as text_file, pytest.raises(TypeError, match="binary"):
        gbc_core.load(text_file)
    # A file object is read no further than the model: what follows stays unread.
    buf = io.BytesIO(model.to_bytes() + b"next record")
    _assert_same_model(model, gbc_core.load(buf), X)
    assert buf.read() == b"next record"


def test_subclass_from_bytes(paper_model):
    class MyGBC(GradientBoostingClassifier):
        pass

    class MyBooster(gbc_core.Booster):
        pass

    assert type(MyBooster.from_bytes(paper_model.to_bytes())) is MyBooster
    loaded = MyGBC.from_bytes(paper_model.to_bytes())
    assert type(loaded) is MyGBC
    assert loaded.predict([[2.0]]).tolist() == paper_model.predict([[2.0]]).tolist()


def test_feature_names_and_string_labels_round_trip():
    pd = require("pandas")
    rng = np.random.default_rng(2)
    df = pd.DataFrame(rng.normal(size=(120, 3)), columns=["a", "b", "é ünïcode"])
    y = np.where(df["a"] + df["é ünïcode"] > 0, "yes", "no")
    model = GradientBoostingClassifier(n_estimators=5, random_state=1).fit(df, y)
    loaded = gbc_core.from_bytes(model.to_bytes())
    _assert_same_model(model, loaded, df)
    # Columns given in another order are matched by name, as for the original.
    shuffled = df[["é ünïcode", "a", "b"]]
    assert loaded.predict(shuffled).tolist() == model.predict(df).tolist()


@pytest.mark.parametrize("classes", [
    np.array([0, 1]),
    np.array([-3, 7], dtype=np.int8),
    np.array([0, 2**64 - 1], dtype=np.uint64),
    np.array([-0.5, 2.25], dtype=np.float32),
    np.array([0.1, 1e300]),
    np.array([False, True]),
    np.array(["", "longer label"]),
    np.array([b"n", b"\xffy"]),
    np.array(["ham", "spam"], dtype=object),
    np.array([1, 2.5], dtype=object),
    np.array([False, True], dtype=object),
], ids=lambda c: f"{c.dtype}-{c.tolist()!r}")
def test_class_labels_round_trip(paper_model, classes):
    model = copy.copy(paper_model)
    model.classes_ = classes
    loaded = gbc_core.from_bytes(model.to_bytes())
    assert loaded.classes_.dtype == classes.dtype
    assert [type(v) for v in loaded.classes_.tolist()] == [type(v) for v in classes.tolist()]
    assert loaded.classes_.tolist() == classes.tolist()


def test_unsupported_labels_refuse_to_save(paper_model):
    model = copy.copy(paper_model)
    model.classes_ = np.array(["2020-01-01", "2021-01-01"], dtype="datetime64[D]")
    with pytest.raises(ValueError, match="dtype"):
        model.to_bytes()


@pytest.mark.parametrize("labels", [
    np.array(["2020-01-01", "2021-01-01"] * 20, dtype="datetime64[D]"),
    np.array([1, 2] * 20, dtype="timedelta64[s]"),
    np.array([__import__("decimal").Decimal("1.5"), __import__("decimal").Decimal(2)] * 20,
             dtype=object),
], ids=["datetime64", "timedelta64", "Decimal"])
def test_labels_the_format_cannot_store_are_refused_at_fit(labels):
    X = np.arange(80, dtype=float).reshape(40, 2)
    with pytest.raises(ValueError, match="cannot be stored in a model file"):
        GradientBoostingClassifier(n_estimators=2).fit(X, labels)


def test_params_round_trip(paper_estimator):
    model = paper_estimator
    model.set_params(class_weight={0: 1.0, 1: 2.5}, max_features=0.5, min_samples_leaf=0.1,
                     random_state=12, n_jobs=-1, warm_start=True, max_depth=None)
    loaded = GradientBoostingClassifier.from_bytes(model.to_bytes())
    assert loaded.get_params() == model.get_params()
    assert type(loaded.class_weight) is dict and list(loaded.class_weight) == [0, 1]
    assert gbc_core.from_bytes(model.to_bytes()).params == model.get_params()


def test_unrepresentable_param_warns_and_loads_as_none(paper_estimator):
    model = paper_estimator
    model.set_params(random_state=np.random.RandomState(0))
    with pytest.warns(UserWarning, match="random_state"):
        data = model.to_bytes()
    assert GradientBoostingClassifier.from_bytes(data).random_state is None


def test_invalid_params_refuse_to_save(paper_estimator):
    model = paper_estimator
    model.set_params(subsample=5.0)
    with pytest.raises(ValueError, match="subsample"):
        model.to_bytes()


def test_unfitted_model_cannot_be_saved(tmp_path):
    with pytest.raises(gbc_core.NotFittedError):
        GradientBoostingClassifier().save(tmp_path / "m.gbc")
    assert list(tmp_path.iterdir()) == []


def test_forward_compatible_additions(paper_model):
    """Unknown header keys and arrays are ignored; unknown params warn."""
    blob = paper_model.to_bytes()
    _, header, payload = split(blob)
    payload = bytearray(payload) + np.arange(3, dtype="<f8").tobytes()
    header["arrays"].append({"name": "future.thing", "dtype": "<f8", "length": 3,
                             "offset": header["payload_size"], "nbytes": 24})
    header["payload_size"] = len(payload)
    header["future_key"] = {"anything": [1, 2]}
    header["params"]["future_param"] = 3
    with pytest.warns(UserWarning, match="future_param"):
        loaded = gbc_core.from_bytes(assemble(header, payload))
    assert loaded.decision_function([[4.0]]).tolist() == \
        paper_model.decision_function([[4.0]]).tolist()
    # Parameters missing from a file take their defaults.
    del header["params"]["max_depth"]
    with pytest.warns(UserWarning):
        estimator = GradientBoostingClassifier.from_bytes(assemble(header, payload))
    assert estimator.max_depth == 3


# ---------------------------------------------------------- pickle and copies
def test_pickle_and_deepcopy_use_the_format(nan_model):
    model, X = nan_model
    state = model.__getstate__()
    assert state["gbc_core_model"][:8] == MAGIC
    # evals_result_ (not part of the file) pickles beside the model's bytes.
    assert state["params"] == {} and list(state["attributes"]) == ["evals_result_"]
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        _assert_same_model(model, pickle.loads(pickle.dumps(model, protocol)), X)
    _assert_same_model(model, copy.deepcopy(model), X)
    _assert_same_model(model, copy.copy(model), X)


def test_joblib(tmp_path, nan_model):
    joblib = require("joblib")
    model, X = nan_model
    joblib.dump(model, tmp_path / "m.joblib")
    _assert_same_model(model, joblib.load(tmp_path / "m.joblib"), X)


def test_pickle_keeps_what_the_format_cannot(paper_estimator):
    model = paper_estimator
    model.set_params(random_state=np.random.RandomState(5))
    model.user_note = {"trained_by": "ci"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pickling does not warn
        again = pickle.loads(pickle.dumps(model))
    assert isinstance(again.random_state, np.random.RandomState)
    assert again.random_state.randint(1000) == np.random.RandomState(5).randint(1000)
    assert again.user_note == {"trained_by": "ci"}


def test_pickle_unfitted_state():
    est = GradientBoostingClassifier(n_estimators=7, class_weight="balanced")
    again = pickle.loads(pickle.dumps(est))
    assert again.get_params() == est.get_params()
    assert not hasattr(again, "booster_") and not hasattr(again, "classes_")


def test_booster_pickles_as_the_format(paper_model):
    assert paper_model.__getstate__()["gbc_core_model"] == paper_model.to_bytes()
    again = pickle.loads(pickle.dumps(paper_model))
    _assert_same_model(paper_model, again, np.array([[0.0], [4.0], [np.nan]]))


def test_pickle_of_a_corrupt_state_raises(paper_estimator):
    state = paper_estimator.__getstate__()
    data = bytearray(state["gbc_core_model"])
    data[100] ^= 1
    fresh = GradientBoostingClassifier.__new__(GradientBoostingClassifier)
    with pytest.raises(ModelFormatError, match="checksum"):
        fresh.__setstate__(dict(state, gbc_core_model=bytes(data)))


# ----------------------------------------------------------------- atomic save
def _boom(*args, **kwargs):
    raise OSError("disk full (simulated)")


@pytest.mark.parametrize("where", ["write", "fsync", "replace", "serialize"])
def test_failed_save_leaves_old_file_intact(tmp_path, monkeypatch, paper_model, nan_model,
                                            where):
    path = tmp_path / "model.gbc"
    paper_model.save(path)
    old = path.read_bytes()
    model = nan_model[0]
    if where == "write":
        real_write, calls = os.write, []

        def half_then_fail(fd, data):  # write a first part, then fail
            if calls:
                raise OSError("disk full (simulated)")
            calls.append(1)
            return real_write(fd, data[: len(data) // 2])

        monkeypatch.setattr(_model_io, "_os_write", half_then_fail)
    elif where == "fsync":
        monkeypatch.setattr(_model_io.os, "fsync", _boom)
    elif where == "replace":
        monkeypatch.setattr(_model_io.os, "replace", _boom)
    else:
        model = copy.copy(model.booster_)
        model.classes_ = np.array([0, 1], dtype="timedelta64[s]")
    with pytest.raises((OSError, ValueError)):
        model.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == old
    assert [p.name for p in tmp_path.iterdir()] == ["model.gbc"]
    assert gbc_core.load(path).n_estimators_ == 3


def test_failed_save_creates_no_file(tmp_path, monkeypatch, paper_model):
    monkeypatch.setattr(_model_io.os, "fsync", _boom)
    with pytest.raises(OSError):
        paper_model.save(tmp_path / "new.gbc")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_save_keeps_file_mode(tmp_path, paper_model):
    path = tmp_path / "m.gbc"
    paper_model.save(path)
    assert path.stat().st_mode & 0o077 != 0o077  # not world-writable by default
    os.chmod(path, 0o640)
    paper_model.save(path)
    assert path.stat().st_mode & 0o777 == 0o640


# ------------------------------------------------------- backward compatibility
@pytest.mark.parametrize("name, predictions", [
    ("paper", "expected_predictions.npz"),            # format version 1
    ("strings_names", "expected_predictions.npz"),
    ("missing", "expected_predictions.npz"),
    ("multiclass", "expected_predictions_v2.npz"),    # format version 2
    ("exponential", "expected_predictions_v3.npz"),   # format version 3
])
def test_committed_fixtures_predict_exactly(name, predictions):
    expected = np.load(FIXTURES / predictions, allow_pickle=False)
    model = gbc_core.load(FIXTURES / f"{name}.gbc")
    X = expected[f"{name}.X"]
    if getattr(model, "feature_names_in_", None) is not None:
        pd = require("pandas")
        X = pd.DataFrame(X, columns=list(model.feature_names_in_))
    raw = model.decision_function(X)
    assert_arrays_equal(raw, expected[f"{name}.raw"], f"{name}.gbc: raw scores")
    # Probabilities: gbc-core's own exp (``_exp.h``), the same bits on every machine
    # (docs/reliability.md, "Same model on every machine").
    assert_arrays_equal(model.predict_proba(X), expected[f"{name}.proba"],
                        f"{name}.gbc: probabilities")
    assert model.predict(X).tolist() == expected[f"{name}.labels"].tolist()


def test_committed_version_4_fixture_predicts_exactly():
    """Format version 4 (categorical features, ``make_fixtures.py``): the committed
    file's categorical fields, and its ensemble's raw scores of category codes (codes
    never seen and NaN among them) bit for bit; saved again, the same header (but the
    library version) and payload."""
    expected = np.load(FIXTURES / "expected_predictions_v4.npz", allow_pickle=False)
    path = FIXTURES / "categorical.gbc"
    blob = path.read_bytes()
    assert split(blob)[0] == 4
    model = gbc_core.load(path)
    ensemble = model.ensemble
    assert ensemble.categorical.tolist() == [True, True, False]
    assert ensemble.category_sets.shape == (split(blob)[1]["n_category_sets"], 8)
    assert model.categories_[0].tolist() == [-1.5, 0.0, 2.0, 7.25, 1e6]
    assert model.categories_[1].tolist() == ["L", "M", "S", "XL", "XS", "XXL", "b", "lg",
                                             "md", "sm", "\u00e9t\u00e9", "\u6625"]
    assert model.categories_[2] is None
    assert model.classes_.tolist() == ["ant", "bee", "cat"]
    assert model.feature_names_in_.tolist() == ["colour", "size", "x"]
    X = expected["categorical.X"]
    raw = ensemble.predict_raw(X)
    assert_arrays_equal(raw, expected["categorical.raw"], "categorical.gbc: raw scores")
    assert_arrays_equal(model.proba_from_raw(raw), expected["categorical.proba"],
                        "categorical.gbc: probabilities")
    assert model.labels_from_raw(raw).tolist() == expected["categorical.labels"].tolist()
    _, header, payload = split(blob)
    _, again, payload_again = split(model.to_bytes())
    header.pop("library_version"), again.pop("library_version")
    assert again == header and payload_again == payload


def test_fixtures_cover_the_interesting_cases():
    paper = gbc_core.load(FIXTURES / "paper.gbc")
    assert paper.classes_.tolist() == [0, 1]
    named = gbc_core.load(FIXTURES / "strings_names.gbc")
    assert named.classes_.dtype.kind == "U" and named.feature_names_in_ is not None
    assert named.best_iteration_ is not None and named.validation_score_.size > 0
    missing = gbc_core.load(FIXTURES / "missing.gbc")
    nodes = missing.ensemble.nodes
    inner = nodes["feature"] >= 0
    assert np.isinf(nodes["threshold"][inner]).any()
    assert set(nodes["missing_go_left"][inner].tolist()) == {0, 1}
    assert nodes["depth"].max() > 10  # beyond the predictor's complete-tree layout


# ------------------------------------------------- corrupt and malicious files
_RUNNER = textwrap.dedent("""
    import json, sys, traceback, warnings
    import numpy as np
    import gbc_core
    warnings.simplefilter("ignore")  # e.g. a flipped bit renaming a parameter
    directory = sys.argv[1]
    X = np.load(directory + "/X.npy")
    ends = np.load(directory + "/ends.npy")
    with open(directory + "/blobs.bin", "rb") as fh:
        everything = fh.read()
    for i in range(ends.shape[0]):
        data = everything[(ends[i - 1] if i else 0): ends[i]]
        try:
            model = gbc_core.from_bytes(data)
        except gbc_core.ModelFormatError as exc:
            out = {"status": "error", "msg": str(exc)}
        except BaseException as exc:
            out = {"status": "other", "msg": traceback.format_exc()}
        else:
            try:  # a model that loads must also predict without trouble
                d = model.n_features_in_
                Xm = X[:, :d] if X.shape[1] >= d else np.zeros((X.shape[0], d))
                if model.categories_ is not None:
                    # Rows as category values: the codes' values where there are
                    # categories (code i -> categories[i], out-of-range codes as
                    # NaN: unseen), the numbers elsewhere.
                    Xo = Xm.astype(object)
                    for j, values in enumerate(model.categories_):
                        if values is not None:
                            c = np.nan_to_num(Xm[:, j], nan=-1).astype(np.int64) % (len(values) + 1)
                            Xo[:, j] = [values[k] if k < len(values) else np.nan for k in c]
                    Xm = Xo
                    model.ensemble.predict_raw(X[:, :d] if X.shape[1] >= d else np.zeros((X.shape[0], d)))
                model.decision_function(Xm)
                model.predict_proba(Xm)
                model.apply(Xm)
                for _ in model.staged_decision_function(Xm[:5]):
                    pass
                model.feature_importances_
                out = {"status": "loaded", "msg": ""}
            except BaseException:
                out = {"status": "other", "msg": traceback.format_exc()}
        print(json.dumps(out), flush=True)
""")


def run_loader(directory, blobs, X):
    """Load every blob in a fresh interpreter; return one result dict per blob."""
    np.save(directory / "X.npy", np.ascontiguousarray(X, dtype=np.float64))
    np.save(directory / "ends.npy", np.cumsum([len(b) for b in blobs], dtype=np.int64))
    (directory / "blobs.bin").write_bytes(b"".join(bytes(b) for b in blobs))
    proc = subprocess.run([sys.executable, "-c", _RUNNER, str(directory)],
                          capture_output=True, text=True, timeout=300)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, (
        f"the loader crashed (exit code {proc.returncode}) on blob {len(lines)}:\n"
        f"{proc.stderr[-3000:]}"
    )
    results = [json.loads(line) for line in lines]
    assert len(results) == len(blobs)
    others = [(i, r["msg"]) for i, r in enumerate(results) if r["status"] == "other"]
    assert not others, f"unexpected exceptions: {others[:3]}"
    return results


def _probe_X():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 6)) * 3
    X[rng.random(X.shape) < 0.25] = np.nan
    return X


def _truncations(blob, rng, n_payload=150):
    """Every prefix up to the end of the header, and random longer ones."""
    hlen = struct.unpack_from("<I", blob, 12)[0]
    header_end = (16 + hlen + 7) // 8 * 8
    cuts = list(range(header_end + 1))
    cuts += sorted(rng.choice(np.arange(header_end + 1, len(blob)), n_payload, replace=False))
    return [blob[:c] for c in cuts]


def _bit_flips(blob, rng, n=400, n_header=200):
    """(stale, fixed): random single-bit flips, with the checksum kept / recomputed."""
    stale, fixed = [], []
    for bit in rng.integers(0, len(blob) * 8, size=n):
        data = bytearray(blob)
        data[bit // 8] ^= 1 << (bit % 8)
        stale.append(bytes(data))
        if bit // 8 < len(blob) - 32:
            fixed.append(recompute_checksum(data))
    # More valid-checksum flips in the header, where most break something.
    hlen = struct.unpack_from("<I", blob, 12)[0]
    for bit in rng.integers(16 * 8, (16 + hlen) * 8, size=n_header):
        data = bytearray(blob)
        data[bit // 8] ^= 1 << (bit % 8)
        fixed.append(recompute_checksum(data))
    return stale, fixed


@pytest.fixture(scope="module")
def corrupt_results(tmp_path_factory, paper_model, nan_model):
    """All corrupted inputs, loaded in one subprocess: {group: [(blob info, result)]}."""
    rng = np.random.default_rng(0)
    paper_blob, nan_blob = paper_model.to_bytes(), nan_model[0].to_bytes()
    groups = {"truncated": _truncations(paper_blob, rng) + _truncations(nan_blob, rng)}
    groups["stale"], groups["fixed"] = _bit_flips(nan_blob, rng)
    crafted = _crafted_cases(paper_blob, nan_blob)
    groups["crafted"] = [blob for _, blob, _ in crafted]
    blobs = [b for group in groups.values() for b in group]
    results = iter(run_loader(tmp_path_factory.mktemp("corrupt"), blobs, _probe_X()))
    out = {name: [next(results) for _ in group] for name, group in groups.items()}
    out["crafted_cases"] = crafted
    return out


def test_truncated_files_are_rejected(corrupt_results):
    results = corrupt_results["truncated"]
    assert len(results) > 1000
    assert all(r["status"] == "error" for r in results)


def test_random_bit_flips(corrupt_results):
    assert all(r["status"] == "error" for r in corrupt_results["stale"])
    fixed = corrupt_results["fixed"]
    n_errors = sum(r["status"] == "error" for r in fixed)
    # Validation beyond the checksum rejects many of them (the rest change a value
    # into another valid one: a leaf value, a score, a label character ...), and
    # those that load also predict (checked in the subprocess).
    assert n_errors > len(fixed) // 4
    assert not any("checksum" in r["msg"] for r in fixed)


def _crafted_cases(paper_blob, nan_blob):
    """(name, blob, expected message fragment) for hand-made invalid files."""
    cases = []

    def add(name, blob, fragment):
        cases.append((name, bytes(blob), fragment))

    version, header, payload = split(paper_blob)
    body = paper_blob[:-32]
    # Envelope.
    add("empty", b"", "truncated")
    add("magic only", MAGIC, "truncated")
    add("wrong magic", b"PK\x03\x04" + paper_blob[4:], "magic")
    add("text-mode mangled magic", paper_blob.replace(b"\r\n", b"\n", 1), "magic")
    add("future version", recompute_checksum(paper_blob[:8] + struct.pack(
        "<I", _model_io.FORMAT_VERSION + 1)
                                             + paper_blob[12:]), "newer")
    add("future version, stale checksum", paper_blob[:8] + struct.pack("<I", 99)
        + paper_blob[12:], "newer")
    add("version 0", recompute_checksum(paper_blob[:8] + struct.pack("<I", 0)
                                        + paper_blob[12:]), "version")
    add("huge header length", paper_blob[:12] + struct.pack("<I", 0xFFFFFFFF)
        + paper_blob[16:], "header length")
    add("header length past the end", paper_blob[:12] + struct.pack("<I", len(paper_blob))
        + paper_blob[16:], "truncated")
    add("stale checksum", body[:-1] + bytes([body[-1] ^ 1]) + paper_blob[-32:], "checksum")
    add("zeroed checksum", body + b"\0" * 32, "checksum")
    add("extra trailing bytes", recompute_checksum(paper_blob + b"\0" * 8), "payload_size")
    # Header syntax.
    add("header not JSON", assemble_raw(b"{not json", payload), "JSON")
    add("header not UTF-8", assemble_raw(b'{"a":"\xff"}', payload), "JSON")
    add("header is a list", assemble_raw(b"[1,2]", payload), "object")
    add("deeply nested header", assemble_raw(b"[" * 100000 + b"]" * 100000, payload), "JSON")
    add("NaN literal", assemble_raw(json.dumps(dict(header, init_raw=float("nan")))
                                    .encode(), payload), "NaN")
    compact = json.dumps(header, separators=(",", ":")).encode()
    assert b'"init_raw":[0.0]' in compact
    add("overflowing number", assemble_raw(compact.replace(b'"init_raw":[0.0]',
                                                           b'"init_raw":[1e999]'), payload),
        "init_raw")
    add("repeated key", assemble_raw(b'{"format":"gbc-core-model",' + json.dumps(header)
                                     .encode()[1:], payload), "repeats")
    add("wrong format name", header_edit(paper_blob, format="other"), "format")
    add("format_version mismatch", header_edit(paper_blob, format_version=1), "format_version")
    add("wrong estimator", header_edit(paper_blob, estimator="os.system"), "estimator")
    add("payload_size lies", header_edit(paper_blob, payload_size=10**12), "payload_size")
    # Scalars.
    for key, value, frag in [
        ("n_features", 0, "n_features"), ("n_features", -1, "n_features"),
        ("n_features", 2**40, "n_features"), ("n_features", "1", "n_features"),
        ("n_features", True, "n_features"), ("n_trees", 2, "tree_offsets"),
        ("n_trees", -1, "n_trees"), ("n_nodes", 8, "n_nodes"), ("n_nodes", 2**62, "n_nodes"),
        ("init_raw", 1e999, "Infinity"), ("init_raw", "0", "init_raw"),
        ("init_raw", None, "init_raw"), ("init_raw", 0.0, "init_raw"),
        ("init_raw", [0.0, 0.0], "init_raw"), ("init_raw", ["0"], "init_raw"),
        ("learning_rate", 0, "learning_rate"), ("learning_rate", -0.1, "learning_rate"),
        ("n_outputs", 0, "n_outputs"), ("n_outputs", 2, "n_outputs"),
        ("n_outputs", True, "n_outputs"), ("n_outputs", None, "n_outputs"),
        ("n_outputs", 3, "init_raw"), ("max_features", 0, "max_features"),
        ("max_features", 2, "max_features"), ("max_features", 1.0, "max_features"),
        ("best_iteration", -1, "best_iteration"), ("best_iteration", 1.5, "best_iteration"),
        ("feature_names", ["a", "b"], "feature_names"), ("feature_names", [3], "feature_names"),
        ("feature_names", "x", "feature_names"), ("library_version", 1, "library_version"),
        ("arrays", {}, "arrays"), ("params", [], "params"),
    ]:
        add(f"{key}={value!r}", header_edit(paper_blob, **{key: value}), frag)
    # A fit refuses repeated column names: one DataFrame column would feed two features.
    add("repeated feature name", header_edit(nan_blob, feature_names=["a", "b", "a", "c"]),
        "repeats a name")
    # Classes.
    for classes, frag in [
        ({"dtype": "<i8", "values": [0, 1, 2]}, "2 class labels"),
        ({"dtype": "<i8", "values": [1, 1]}, "distinct"),
        ({"dtype": "<f8", "values": [0, -0.0]}, "distinct"),
        ({"dtype": "<i8", "values": [0]}, "2 class labels"),
        ({"dtype": "<M8[ns]", "values": [0, 1]}, "dtype"),
        ({"dtype": ">i8", "values": [0, 1]}, "dtype"),
        ({"dtype": "|i1", "values": [0, 300]}, "range"),
        ({"dtype": "<i8", "values": [0, 1.5]}, "integers"),
        ({"dtype": "|b1", "values": [0, 1]}, "bool"),
        ({"dtype": "<U99999999", "values": ["a", "b"]}, "width"),
        ({"dtype": "<U2", "values": ["a", "bcd"]}, "at most 2"),
        ({"dtype": "|O", "values": ["a", 1]}, "types"),
        ({"dtype": "|O", "values": ["a", "1"], "types": ["str", "float"]}, "type"),
        ({"dtype": "|O", "values": ["a", 1.5], "types": ["str", "int"]}, "type"),
        ({"dtype": "|O", "values": ["a", 1], "types": ["str", "code"]}, "type"),
        ({"dtype": "|O", "values": ["a", "a"], "types": ["str", "str"]}, "distinct"),
        ([0, 1], "object"),
    ]:
        add(f"classes={classes!r}", header_edit(paper_blob, classes=classes), frag)
    # Parameters.
    for name, value, frag in [
        ("n_jobs", 10**7, "n_jobs"), ("n_jobs", 0, "n_jobs"), ("max_depth", "deep", "max_depth"),
        ("subsample", {"float": "nan"}, "subsample"), ("learning_rate", -0.5, "learning_rate"),
        ("loss", "deviance", "loss"), ("warm_start", 1, "warm_start"),
        ("random_state", -4, "random_state"), ("random_state", {"code": "x"}, "parameter"),
        ("class_weight", {"dict": [[[1], 2.0]]}, "hashable"), ("tol", {"float": "bad"}, "tol"),
        ("init", "x" * 10, "init"),
    ]:
        def edit(h, name=name, value=value):
            h["params"][name] = value
        add(f"param {name}={value!r}", rewrite(paper_blob, edit=edit), frag)

    # Array descriptors.
    def edit_desc(index, **changes):
        def edit(h):
            h["arrays"][index].update(changes)
        return rewrite(paper_blob, edit=edit)

    add("array length huge", edit_desc(1, length=2**40), "within")
    add("array length huge, nbytes matching", edit_desc(1, length=2**40, nbytes=2**43),
        "within")
    add("array nbytes mismatch", edit_desc(1, nbytes=16), "nbytes")
    add("array offset past payload", edit_desc(2, offset=10**6), "within")
    add("array ends past payload", edit_desc(12, offset=header["payload_size"] - 8), "past")
    add("array negative offset", edit_desc(2, offset=-8), "within")
    add("arrays overlap", edit_desc(2, offset=0), "overlap")
    add("big-endian dtype", edit_desc(1, dtype=">f8"), "dtype")
    add("object dtype", edit_desc(1, dtype="|O"), "dtype")
    add("float length", edit_desc(1, length=3.0), "integers")
    add("array described twice", rewrite(paper_blob, edit=lambda h: h["arrays"].append(
        dict(h["arrays"][0]))), "twice")
    add("missing array", rewrite(paper_blob, edit=lambda h: h["arrays"].pop(6)), "lacks")
    add("short node column", rewrite(paper_blob, {"nodes.left": np.array([1, -1], "<i4")}),
        "n_nodes")
    add("train_score of another length", rewrite(paper_blob, {"train_score": np.zeros(5)}),
        "train_score")
    add("no train_score (control)", rewrite(paper_blob, edit=lambda h: h["arrays"].pop(12)),
        None)
    nan_header = split(nan_blob)[1]
    names = [d["name"] for d in nan_header["arrays"]]
    assert "oob_scores" in names and "oob_improvement" in names
    add("oob_scores without oob_improvement", rewrite(
        nan_blob, edit=lambda h: h["arrays"].pop(names.index("oob_improvement"))),
        "come together")
    add("oob_scores of another length", rewrite(nan_blob, {"oob_scores": np.zeros(1)}),
        "oob_scores")
    # Version 1 files (the committed fixtures are version 1): header and parameters
    # hold the learning rate twice, and the two must agree.
    v1_blob = (FIXTURES / "paper.gbc").read_bytes()
    assert split(v1_blob)[0] == 1
    add("version 1 (control)", v1_blob, None)
    add("version 1, learning rates disagree", header_edit(v1_blob, learning_rate=0.2),
        "learning_rate")
    add("version 1, init_raw list", header_edit(v1_blob, init_raw=[0.0]), "init_raw")

    # Tree structure (paper: 3 stumps of 3 nodes; n_features = 1).
    def tweak(column, index, value):
        return with_column(paper_blob, column, index, value)

    add("offsets not monotone", rewrite(paper_blob, {"tree_offsets": np.array([0, 6, 3, 9])}),
        "increasing")
    add("empty tree", rewrite(paper_blob, {"tree_offsets": np.array([0, 3, 3, 9])}),
        "increasing")
    add("offsets start at 1", rewrite(paper_blob, {"tree_offsets": np.array([1, 3, 6, 9])}),
        "start at 0")
    add("offsets end early", rewrite(paper_blob, {"tree_offsets": np.array([0, 3, 6, 8])}),
        "end at")
    add("offsets end late", rewrite(paper_blob, {"tree_offsets": np.array([0, 3, 6, 2**40])}),
        "end at")
    add("left child == tree size", tweak("left", 0, 3), "forward")
    add("left child huge", tweak("left", 0, 2**31 - 1), "forward")
    add("left child negative", tweak("left", 0, -5), "forward")
    add("right child -1 on inner node", tweak("right", 3, -1), "forward")
    add("self loop", tweak("left", 0, 0), "forward")
    add("leaf with a child", tweak("left", 1, 2), "leaf")
    add("left == right", tweak("right", 0, 1), "same node")
    add("feature == n_features", tweak("feature", 0, 1), "out of range")
    add("feature huge", tweak("feature", 3, 2**31 - 1), "out of range")
    add("feature -2", tweak("feature", 0, -2), "invalid")
    add("inner node without children", tweak("feature", 1, 0), "forward")
    add("NaN threshold", tweak("threshold", 0, np.nan), "threshold")
    add("-inf threshold", tweak("threshold", 3, -np.inf), "threshold")
    add("+inf threshold, stale threshold32", tweak("threshold", 0, np.inf), "threshold32")
    add("threshold32 too large", tweak("threshold32", 0, np.nextafter(np.float32(3.5),
                                                                       np.float32(9))),
        "threshold32")
    add("threshold32 NaN", tweak("threshold32", 6, np.nan), "threshold32")
    add("NaN leaf value", tweak("value", 1, np.nan), "value")
    add("inf leaf value", tweak("value", 8, np.inf), "value")
    add("NaN improvement", tweak("improvement", 0, np.nan), "improvement")
    add("-inf weighted_n", tweak("weighted_n", 2, -np.inf), "weighted_n")
    # Node statistics are sums of squares and of weights: never negative (the
    # model-file fuzzer's find, docs/reliability.md: improvement -7.9e254).
    add("negative improvement", tweak("improvement", 3, -1.0), "improvement must be >= 0")
    add("improvement -7.9e254", tweak("improvement", 0, -7.9e254), "improvement must be >= 0")
    add("negative leaf weighted_n", tweak("weighted_n", 2, -1.0), "weighted_n must be >= 0")
    add("negative root weighted_n", tweak("weighted_n", 6, -0.5), "weighted_n must be >= 0")
    add("improvement -0.0 (control)", tweak("improvement", 0, -0.0), None)
    add("negative n_samples", tweak("n_samples", 2, -1), "n_samples")
    add("missing_go_left 2", tweak("missing_go_left", 0, 2), "missing_go_left")
    add("root depth 1", tweak("depth", 0, 1), "depth")
    add("leaf depth 2", tweak("depth", 5, 2), "depth")
    add("leaf depth 0", tweak("depth", 7, 0), "depth")
    # Crafted 5-node trees (one tree, feature 0 everywhere) with a wrong shape.
    five = dict(value=np.zeros(5), threshold=np.full(5, 1.0), improvement=np.zeros(5),
                weighted_n=np.zeros(5), n_samples=np.zeros(5, "<i8"),
                threshold32=np.full(5, 1.0, "<f4"), missing_go_left=np.zeros(5, "u1"))

    def tree5(feature, left, right, depth):
        return rewrite(paper_blob, dict(
            {"nodes." + k: v for k, v in five.items()},
            **{"nodes.feature": np.array(feature), "nodes.left": np.array(left),
               "nodes.right": np.array(right), "nodes.depth": np.array(depth),
               "tree_offsets": np.array([0, 5]), "train_score": np.zeros(1)}),
            edit=lambda h: h.update(n_trees=1, n_nodes=5))

    add("valid 5-node tree (control)", tree5([0, 0, -1, -1, -1], [1, 3, -1, -1, -1],
                                             [2, 4, -1, -1, -1], [0, 1, 1, 2, 2]), None)
    add("cycle back to the root", tree5([0, 0, -1, -1, -1], [1, 3, -1, -1, -1],
                                        [2, 0, -1, -1, -1], [0, 1, 1, 2, 2]), "forward")
    add("cycle between siblings", tree5([0, 0, 0, -1, -1], [1, 2, 1, -1, -1],
                                        [3, 4, 4, -1, -1], [0, 1, 2, 1, 2]), "forward")
    add("shared child (DAG)", tree5([0, 0, 0, -1, -1], [1, 3, 3, -1, -1],
                                    [2, 4, 4, -1, -1], [0, 1, 1, 2, 2]), "child of 2")
    add("unreachable nodes", tree5([0, -1, -1, -1, -1], [1, -1, -1, -1, -1],
                                   [2, -1, -1, -1, -1], [0, 1, 1, 1, 1]), "child of 0")
    add("shallow depth claim (complete layout)", tree5(
        [0, 0, -1, -1, -1], [1, 3, -1, -1, -1], [2, 4, -1, -1, -1], [0, 1, 1, 1, 1]),
        "depth")

    # The NaN-model: deep trees and +inf thresholds; tamper inside a deep tree.
    deep = arrays_of(nan_blob)
    inner = np.flatnonzero(deep["nodes.feature"] >= 0)
    last_inner = int(inner[-1])
    t = int(np.searchsorted(deep["tree_offsets"], last_inner, side="right") - 1)
    root = int(deep["tree_offsets"][t])
    left = deep["nodes.left"].copy()
    left[last_inner] = last_inner - root  # points to itself
    add("deep self loop", rewrite(nan_blob, {"nodes.left": left}), "forward")
    right = deep["nodes.right"].copy()
    right[last_inner] = 0  # back to the root of its tree
    add("deep cycle to root", rewrite(nan_blob, {"nodes.right": right}), "forward")
    feat = deep["nodes.feature"].copy()
    feat[last_inner] = 4
    add("deep feature out of range", rewrite(nan_blob, {"nodes.feature": feat}),
        "out of range")
    return cases


def test_crafted_invalid_files(corrupt_results):
    problems = []
    for (name, _, fragment), result in zip(corrupt_results["crafted_cases"],
                                           corrupt_results["crafted"]):
        if fragment is None:
            if result["status"] != "loaded":
                problems.append(f"{name}: should load, got {result['msg']}")
        elif result["status"] != "error":
            problems.append(f"{name}: loaded, should raise ModelFormatError")
        elif fragment.lower() not in result["msg"].lower():
            problems.append(f"{name}: message {result['msg']!r} lacks {fragment!r}")
    assert not problems, "\n".join(problems)


def test_errors_in_process(paper_model):
    blob = paper_model.to_bytes()
    with pytest.raises(ModelFormatError, match="newer"):
        gbc_core.from_bytes(blob[:8] + struct.pack("<I", 7) + blob[12:])
    with pytest.raises(ModelFormatError, match="checksum"):
        gbc_core.from_bytes(blob[:-1] + bytes([blob[-1] ^ 0x80]))
    with pytest.raises(ValueError):  # ModelFormatError is a ValueError
        gbc_core.from_bytes(blob[:100])
    with pytest.raises(TypeError):
        gbc_core.from_bytes("not bytes")


def test_huge_claims_do_not_allocate(paper_model):
    """Lengths are checked against the actual data before anything is allocated."""
    import tracemalloc

    blob = paper_model.to_bytes()

    def edit(h):
        h["arrays"][1].update(length=2**33, nbytes=2**36)
        h["n_nodes"] = 2**33
    bad = rewrite(blob, edit=edit)
    tracemalloc.start()
    try:
        with pytest.raises(ModelFormatError):
            gbc_core.from_bytes(bad)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * 2**20


# ------------------------------------------------------ reading what is declared
def test_a_big_file_that_is_not_a_model_is_rejected_from_its_first_bytes(tmp_path):
    """The prelude is checked first: a large CSV is not read to its end."""
    path = tmp_path / "data.csv"
    path.write_bytes(b"a,b,c\n" + b"1,2,3\n" * 2_000_000)  # 12 MB
    reads = []

    class CountingFile(io.FileIO):
        def read(self, n=-1):
            data = super().read(n)
            reads.append(len(data))
            return data

    with CountingFile(path, "rb") as fh, pytest.raises(ModelFormatError, match="magic"):
        gbc_core.load(fh)
    assert sum(reads) <= 16
    with pytest.raises(ModelFormatError, match="magic"):
        gbc_core.load(path)
    with pytest.raises(ModelFormatError, match="magic"):
        gbc_core.read_model_header(path)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="a POSIX character device")
def test_an_endless_device_is_rejected_at_once():
    with pytest.raises(ModelFormatError, match="magic"):
        gbc_core.load("/dev/zero")


def test_a_file_longer_or_shorter_than_its_header_declares(tmp_path, paper_model):
    blob = paper_model.to_bytes()
    path = tmp_path / "m.gbc"
    path.write_bytes(blob + b"\0" * 8)
    with pytest.raises(ModelFormatError, match="declares"):
        gbc_core.load(path)
    path.write_bytes(blob[:-5])
    with pytest.raises(ModelFormatError, match="declares"):
        gbc_core.load(path)
    # A header that claims a huge payload: nothing that large is read or allocated.
    version, header, payload = split(blob)
    header["payload_size"] = 2**50
    path.write_bytes(assemble(header, payload))
    with pytest.raises(ModelFormatError, match="declares"):
        gbc_core.load(path)
    with pytest.raises(ModelFormatError, match="truncated|declares"):
        gbc_core.load(io.BytesIO(assemble(header, payload)))


def test_read_model_header_reads_the_header_only(tmp_path, nan_model):
    model, _ = nan_model
    path = tmp_path / "m.gbc"
    model.save(path)
    header = gbc_core.read_model_header(path)
    assert header["format_version"] == 3 and header["n_outputs"] == 1
    assert header["loss"] == "log_loss"
    assert header["classes"]["values"] == ["neg", "pos"]
    # A damaged payload does not matter to it (the loader rejects the file).
    data = bytearray(path.read_bytes())
    data[-40] ^= 0xFF
    path.write_bytes(bytes(data))
    assert gbc_core.read_model_header(path) == header
    with pytest.raises(ModelFormatError, match="checksum"):
        gbc_core.load(path)


# ----------------------------------------------------------------------- the loss
def test_header_names_the_loss_and_the_reader_checks_it(paper_model):
    """Format 3 stores the loss; an unknown name, a missing one, or the exponential
    loss (two classes) with K outputs is a ModelFormatError naming 'loss'."""
    blob = paper_model.to_bytes()
    version, header, _ = split(blob)
    assert version == 3 and header["loss"] == "log_loss"
    assert gbc_core.from_bytes(blob).loss == "log_loss"
    # Binary: the exponential loss is a valid claim, and changes the probabilities.
    exp = gbc_core.from_bytes(header_edit(blob, loss="exponential"))
    X = np.array([[1.0], [4.0], [7.0]])
    assert exp.loss == "exponential"
    raw = exp.decision_function(X)
    np.testing.assert_allclose(exp.predict_proba(X)[:, 1], 1 / (1 + np.exp(-2 * raw)),
                               rtol=1e-15, atol=0)
    for value in ["deviance", "Exponential", "", None, 1, ["log_loss"]]:
        with pytest.raises(ModelFormatError, match="'loss' must be one of"):
            gbc_core.from_bytes(header_edit(blob, loss=value))
    missing = rewrite(blob, edit=lambda h: h.pop("loss"))
    with pytest.raises(ModelFormatError, match="'loss' must be one of"):
        gbc_core.from_bytes(missing)
    rng = np.random.default_rng(0)
    X3 = rng.normal(size=(60, 2))
    multi = GradientBoostingClassifier(n_estimators=2).fit(X3, np.arange(60) % 3).to_bytes()
    assert split(multi)[1]["loss"] == "log_loss"
    with pytest.raises(ModelFormatError, match="'exponential' is a loss of two classes"):
        gbc_core.from_bytes(header_edit(multi, loss="exponential"))


def test_older_files_get_the_loss_their_class_count_implied():
    for name in ("paper", "strings_names", "missing", "multiclass"):
        model = gbc_core.load(FIXTURES / f"{name}.gbc")
        assert model.loss == "log_loss", name
    assert gbc_core.load(FIXTURES / "exponential.gbc").loss == "exponential"


def test_booster_refuses_a_loss_that_does_not_fit(paper_model):
    ens = paper_model.ensemble
    with pytest.raises(ValueError, match="unknown loss 'hinge'"):
        gbc_core.Booster(ens, [0, 1], loss="hinge")
    ens3 = gbc_core.Ensemble.from_trees([_leaf()] * 3, n_outputs=3, init_raw=[0.0] * 3,
                                        learning_rate=0.1, n_features=1)
    with pytest.raises(ValueError, match="only suitable for a binary classification"):
        gbc_core.Booster(ens3, [0, 1, 2], loss="exponential")
    content = {"loss": "exponential", "classes": np.arange(3), "feature_names": None,
               "params": {}, "best_iteration": None, "max_features": None,
               **{name: None for name in _model_io.RECORD_ARRAYS}}
    with pytest.raises(ValueError, match="cannot save the model: .*two classes"):
        _model_io.encode(ens3, content)


# ------------------------------------------------------------------ multiclass
def test_multiclass_round_trip(tmp_path):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(400, 5))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.array(["cat", "dog", "emu", "fox"])[np.argmax(X[:, :4] + rng.normal(size=(400, 4)),
                                                        axis=1)]
    model = GradientBoostingClassifier(n_estimators=6, max_depth=3, subsample=0.8,
                                       init="prior", random_state=0).fit(X, y)
    path = tmp_path / "m.gbc"
    model.save(path)
    header = gbc_core.read_model_header(path)
    assert header["n_outputs"] == 4 and len(header["init_raw"]) == 4
    assert header["n_trees"] == 24
    loaded = gbc_core.load(path)
    _assert_same_model(model, loaded, X)
    assert loaded.decision_function(X).shape == (400, 4)
    again = GradientBoostingClassifier.load(path)
    np.testing.assert_array_equal(again.predict_proba(X), model.predict_proba(X))
    # A file whose classes do not match its outputs is refused.
    bad = header_edit(path.read_bytes(), classes={"dtype": "<U3", "values": ["cat", "dog"]})
    with pytest.raises(ModelFormatError, match="4 class labels"):
        gbc_core.from_bytes(bad)


# ------------------------------------------ declared sizes bounded by the file's content
def _peak_mib(work):
    """(result or exception, peak traced MiB) of ``work()``."""
    import tracemalloc

    tracemalloc.start()
    try:
        try:
            result = work()
        except Exception as exc:  # noqa: BLE001 - returned to the test
            result = exc
        return result, tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("n_features", [2**31 - 1, 2**24 + 1])
def test_declared_feature_count_beyond_the_limit_is_refused(paper_model, n_features):
    """A 2.5 KB file with a valid checksum claiming 2**31 - 1 features loaded, then
    inspect allocated 16 GiB: the count is refused before anything is allocated."""
    from gbc_core._validation import MAX_FEATURES

    blob = header_edit(paper_model.to_bytes(), n_features=n_features)
    assert len(blob) < 4096
    error, peak = _peak_mib(lambda: gbc_core.from_bytes(blob))
    assert isinstance(error, ModelFormatError) and "n_features" in str(error)
    assert peak < 10
    assert MAX_FEATURES == 2**24
    # the limit is the Ensemble's rule, whoever builds one (a fit, a user)
    with pytest.raises(ValueError, match="n_features"):
        gbc_core.Ensemble(paper_model.ensemble.nodes, paper_model.ensemble.tree_offsets,
                          n_outputs=1, init_raw=[0.0], learning_rate=1.0,
                          n_features=n_features)


def test_fit_refuses_more_features_than_a_model_holds():
    """The limit holds for what a fit makes too (checked before any conversion: a
    broadcast view costs no memory)."""
    X = np.broadcast_to(np.float32(0.5), (4, 2**24 + 1))
    with pytest.raises(ValueError, match="at most 2\\*\\*24"):
        GradientBoostingClassifier(n_estimators=1).fit(X, [0, 1, 0, 1])


def test_many_declared_features_cost_no_work_per_feature_in_predict(tmp_path, capsys,
                                                                     monkeypatch, nan_model):
    """A model may have features no tree uses (up to the limit): it loads, inspect
    lists the features used, and predict on a file without those columns fails at once
    without building a name per declared feature."""
    from conftest import run_main

    from gbc_core._validation import MAX_FEATURES

    model = nan_model[0]
    (tmp_path / "m.gbc").write_bytes(header_edit(model.to_bytes(), n_features=MAX_FEATURES))
    (tmp_path / "d.csv").write_text("f0,f1\n1,2\n")
    (rc, _, err), peak = _peak_mib(lambda: run_main(
        capsys, monkeypatch, tmp_path, "predict", "m.gbc", "d.csv", "-o", "o.csv"))
    assert rc == 1 and f"expects {MAX_FEATURES} features" in err
    assert peak < 20
    (rc, out, err), peak = _peak_mib(lambda: run_main(
        capsys, monkeypatch, tmp_path, "inspect", "m.gbc", "--json"))
    assert rc == 0, err
    info = json.loads(out)
    assert info["n_features"] == MAX_FEATURES
    used = np.flatnonzero(model.feature_importances_)
    assert sorted(d["index"] for d in info["importances"]) == used.tolist()
    np.testing.assert_allclose([d["importance"] for d in info["importances"]],
                               -np.sort(-model.feature_importances_[used]), rtol=1e-12)
    assert peak < 200  # one float64 importance per feature: 128 MiB at the limit


def test_class_label_bytes_are_bounded_before_allocation(paper_model):
    """65536 classes of dtype <U1048576 would be a 256 GiB array: refused first."""
    n = 65536
    blob = paper_model.to_bytes()
    empty = {"tree_offsets": np.zeros(1, np.int64), "train_score": np.zeros(0)}
    empty.update({"nodes." + name: np.zeros(0, dt) for name, dt in
                  gbc_core._model_io.NODE_COLUMNS})

    def edit(h):
        h.update(n_outputs=n, init_raw=[0.0] * n, n_trees=0, n_nodes=0,
                 classes={"dtype": "<U1048576", "values": [f"{i:05d}" for i in range(n)]})
    bad = rewrite(blob, empty, edit)
    error, peak = _peak_mib(lambda: gbc_core.from_bytes(bad))
    assert isinstance(error, ModelFormatError) and "bytes" in str(error), error
    assert peak < 100
    # the same classes of the width they need load
    good = rewrite(blob, empty, lambda h: (edit(h), h["classes"].update(dtype="<U5")))
    assert gbc_core.from_bytes(good).n_classes_ == n


@pytest.mark.parametrize("classes, fragment", [
    ({"dtype": "<i8", "values": [1, 0]}, "sorted"),
    ({"dtype": "<U3", "values": ["yes", "no"]}, "sorted"),
    ({"dtype": "|O", "values": ["b", "a"], "types": ["str", "str"]}, "sorted"),
    ({"dtype": "|O", "values": [True, 2], "types": ["bool", "int"]}, "all numbers"),
    ({"dtype": "|O", "values": [1, "one"], "types": ["int", "str"]}, "all numbers"),
    ({"dtype": "|O", "values": [0, 2**63], "types": ["int", "int"]}, "int64"),
])
def test_unsorted_or_mixed_stored_classes_are_refused(paper_model, classes, fragment):
    blob = header_edit(paper_model.to_bytes(), classes=classes)
    with pytest.raises(ModelFormatError, match=fragment):
        gbc_core.from_bytes(blob)
    model = copy.copy(paper_model)  # and a writer refuses to write them
    model.classes_ = np.array(classes["values"], dtype=classes["dtype"])
    with pytest.raises(ValueError):
        model.to_bytes()


def test_best_iteration_beyond_the_iterations_is_refused(paper_model):
    blob = paper_model.to_bytes()
    n = paper_model.n_estimators_
    assert gbc_core.from_bytes(header_edit(blob, best_iteration=n)).best_iteration_ == n
    with pytest.raises(ModelFormatError, match="best_iteration"):
        gbc_core.from_bytes(header_edit(blob, best_iteration=n + 1))
    with pytest.raises(ModelFormatError, match="best_iteration"):
        gbc_core.from_bytes(header_edit(blob, best_iteration=2**31 - 1))


# ---------------------------------------------- Ensemble rules and version-1 files
def _leaf(depth=0, value=0.5):
    nodes = np.zeros(1, dtype=NODE_DTYPE)
    nodes["feature"] = nodes["left"] = nodes["right"] = -1
    nodes["threshold"] = nodes["threshold32"] = np.inf
    nodes["value"], nodes["depth"], nodes["weighted_n"], nodes["n_samples"] = value, depth, 1, 1
    return nodes


def test_ensemble_refuses_a_one_leaf_tree_whose_root_has_depth_1():
    ok_ = gbc_core.Ensemble.from_trees([_leaf(0)], n_outputs=1, init_raw=[0.0],
                                       learning_rate=0.1, n_features=1)
    assert ok_.n_trees == 1
    with pytest.raises(ValueError, match="root must have depth 0"):
        gbc_core.Ensemble.from_trees([_leaf(1)], n_outputs=1, init_raw=[0.0],
                                     learning_rate=0.1, n_features=1)


@pytest.mark.parametrize("n_trees, n_outputs", [(2, 3), (4, 3), (1, 5)])
def test_ensemble_refuses_trees_that_are_not_whole_iterations(n_trees, n_outputs):
    with pytest.raises(ValueError, match="not whole iterations"):
        gbc_core.Ensemble.from_trees([_leaf()] * n_trees, n_outputs=n_outputs,
                                     init_raw=[0.0] * n_outputs, learning_rate=0.1,
                                     n_features=1)
    whole = gbc_core.Ensemble.from_trees([_leaf()] * (2 * n_outputs), n_outputs=n_outputs,
                                         init_raw=[0.0] * n_outputs, learning_rate=0.1,
                                         n_features=1)
    assert whole.n_iterations == 2


@pytest.mark.parametrize("n_classes, n_outputs", [(3, 1), (2, 3), (4, 3)])
def test_encode_refuses_classes_that_do_not_match_the_outputs(n_classes, n_outputs):
    from gbc_core import _model_io

    ensemble = gbc_core.Ensemble.from_trees([_leaf()] * n_outputs, n_outputs=n_outputs,
                                            init_raw=[0.0] * n_outputs, learning_rate=0.1,
                                            n_features=1)
    content = {"loss": "log_loss", "classes": np.arange(n_classes), "feature_names": None,
               "params": {},
               "best_iteration": None, "max_features": None,
               **{name: None for name in _model_io.RECORD_ARRAYS}}
    with pytest.raises(ValueError, match=f"{n_classes} classes do not match {n_outputs}"):
        _model_io.encode(ensemble, content)
    good = dict(content, classes=np.arange(2 if n_outputs == 1 else n_outputs))
    assert gbc_core.from_bytes(_model_io.encode(ensemble, good)[0]).n_classes_ == max(
        2, n_outputs)


def _naive_raw_v1(model, X):
    """F(x) of a binary model by walking each tree in Python: F0 + sum of
    learning_rate x leaf value, the float32 comparison of the format."""
    ens = model.ensemble
    out = np.full(X.shape[0], ens.init_raw[0])
    for i, x in enumerate(X.astype(np.float32)):
        for tree in ens.trees():
            j = 0
            while tree["feature"][j] >= 0:
                v = x[tree["feature"][j]]
                right = (not tree["missing_go_left"][j]) if np.isnan(v) else \
                    v > tree["threshold32"][j]
                j = tree["right"][j] if right else tree["left"][j]
            out[i] += ens.learning_rate * tree["value"][j]
    return out


@pytest.mark.parametrize("name", ["paper", "missing"])
def test_version_1_stored_initial_score_is_used(name):
    """Every committed version-1 fixture has F0 = 0: a version-1 file with another
    F0 must predict with it."""
    blob = (FIXTURES / f"{name}.gbc").read_bytes()
    version, header, _ = split(blob)
    assert version == 1 and header["init_raw"] == 0.0
    crafted = header_edit(blob, init_raw=-0.8125)
    assert split(crafted)[0] == 1
    model = gbc_core.from_bytes(crafted)
    plain = gbc_core.from_bytes(blob)
    X = np.load(FIXTURES / "expected_predictions.npz")[f"{name}.X"]
    raw = model.decision_function(X)
    np.testing.assert_array_equal(raw, _naive_raw_v1(model, X))
    assert model.init_raw_ == -0.8125
    np.testing.assert_allclose(raw, plain.decision_function(X) - 0.8125, rtol=0, atol=1e-12)
    p = model.predict_proba(X)[:, 1]
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-raw)), rtol=1e-15)


# ------------------------------------------------------ the record's units
@pytest.mark.parametrize("n_classes", [2, 3])
def test_record_units_of_older_and_newer_files(n_classes):
    """A file carries record_units "scikit-learn" and loads its record unchanged; the
    same file without the key (as written before it) holds the loss itself: the
    reader doubles a binary log-loss record and turns out-of-bag NaN into 0; any
    other value of the key is refused."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int) + (n_classes == 3) * (X[:, 1] > 0.5)
    model = GradientBoostingClassifier(n_estimators=4, warm_start=True).fit(X, y)
    model.set_params(n_estimators=6, subsample=0.7, random_state=0).fit(
        X, y, eval_set=(X[:50], y[:50]))
    blob = model.to_bytes()
    assert split(blob)[1]["record_units"] == "scikit-learn"
    same = gbc_core.from_bytes(blob)
    for name in ("train_score_", "validation_score_", "oob_scores_", "oob_improvement_"):
        np.testing.assert_array_equal(getattr(same, name), getattr(model, name))
    factor = 2.0 if n_classes == 2 else 1.0
    arrays = arrays_of(blob)
    old = {name: arrays[name] / factor for name in
           ("train_score", "validation_score", "oob_scores", "oob_improvement")}
    old["oob_scores"][:4] = old["oob_improvement"][:4] = np.nan
    older = gbc_core.from_bytes(rewrite(blob, old, edit=lambda h: h.pop("record_units")))
    for name in ("train_score_", "validation_score_", "oob_scores_", "oob_improvement_"):
        np.testing.assert_array_equal(getattr(older, name), getattr(model, name))
    assert (older.oob_scores_[:4] == 0).all()
    with pytest.raises(gbc_core.ModelFormatError, match="record_units"):
        gbc_core.from_bytes(header_edit(blob, record_units="loss"))


def test_a_parameter_given_as_a_numpy_array_round_trips_as_a_list():
    """monotonic_cst (or any parameter) given as a 1-D NumPy array of numbers is
    stored as the list of its values (before: "unrepresentable", loaded as None)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] - X[:, 2] > 0).astype(int)
    model = GradientBoostingClassifier(n_estimators=3, monotonic_cst=np.array([1, 0, -1]))
    model.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing unrepresentable: no warning
        data = model.to_bytes()
    loaded = GradientBoostingClassifier.from_bytes(data)
    assert loaded.monotonic_cst == [1, 0, -1]
    assert loaded.predict_proba(X).tobytes() == model.predict_proba(X).tobytes()
