"""Categorical features on the command line: ``train --categorical auto|none|COLS``
on CSV and Parquet files, and ``predict``/``evaluate`` passing a categorical model's
columns as read (the Booster encodes them), against the estimator in this process.

Most tests hand the commands' model over in memory (``save`` and
``load_model_file`` replaced); ``test_through_the_model_file`` goes through the file
(model format 4).
"""

import sys

import numpy as np
import pytest

from conftest import check_error, require, run_main

pa = require("pyarrow")
pd = require("pandas")
import pyarrow.parquet as pq  # noqa: E402

import gbc_core  # noqa: E402
from gbc_core import GradientBoostingClassifier as GBC  # noqa: E402
from gbc_core import _commands  # noqa: E402

CITIES = np.array(["paris", "rome", "oslo", "lima", "kyiv", "baku", "riga"], dtype=object)


def _frame(n, seed, cities=CITIES):
    """A text column with a non-monotone effect per city (some empty: missing), a
    number and a column of small integers; labels yes/no."""
    rng = np.random.default_rng(seed)
    city = cities[rng.integers(0, len(cities), n)]
    x = rng.normal(size=n).astype(np.float32).astype(np.float64)
    zone = rng.integers(1, 5, n)
    effect = {c: e for c, e in zip(CITIES, [1.5, -1.0, 0.2, 2.0, -2.0, 0.7, -0.3])}
    logit = np.array([effect.get(c, 0.0) for c in city]) + x + 0.4 * (zone == 3)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no")
    city = city.copy()
    city[::13] = None
    return pd.DataFrame({"city": city, "x": x, "zone": zone, "target": y})


def _write_csv(frame, path):
    frame.to_csv(path, index=False, na_rep="")


def _features(frame):
    return frame.drop(columns="target")


@pytest.fixture
def caught(monkeypatch):
    """The models ``train`` saves, kept in memory; ``load_model_file`` gives them back."""
    models = {}

    def save(self, path, *args, **kwargs):
        models[str(path)] = self
        open(path, "wb").close()

    monkeypatch.setattr(GBC, "save", save)
    monkeypatch.setattr(_commands, "load_model_file",
                        lambda path: models[str(path)].booster_)
    monkeypatch.setattr(gbc_core, "read_model_header",
                        lambda path: {"format_version": None, "library_version": None})
    return models


def _same_model(a, b):
    assert a.booster_.ensemble.nodes.tobytes() == b.booster_.ensemble.nodes.tobytes()
    assert (a.booster_.ensemble.category_sets.tobytes()
            == b.booster_.ensemble.category_sets.tobytes())
    for ca, cb in zip(a.booster_.categories_, b.booster_.categories_):
        assert (ca is None) == (cb is None)
        if ca is not None:
            assert ca.tolist() == cb.tolist()


PARAMS = ["--n-estimators", "8", "--max-depth", "3", "--random-state", "0"]


def _reference(frame, **kwargs):
    return GBC(n_estimators=8, max_depth=3, random_state=0, **kwargs).fit(
        _features(frame), frame["target"].to_numpy())


def test_csv_text_column_is_a_category_by_default(tmp_path, capsys, monkeypatch, caught):
    train, test = _frame(600, 0), _frame(300, 1)
    test.loc[0, "city"] = "tokyo"  # unseen in training
    test.loc[1, "city"] = None
    _write_csv(train, tmp_path / "train.csv")
    _write_csv(test, tmp_path / "test.csv")
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "train.csv", "-t", "target",
                          "-o", "m.gbc", "--eval", "test.csv", "--quiet", *PARAMS)
    assert rc == 0, err
    model = caught[str("m.gbc")]
    ref = _reference(train)
    assert model.is_categorical_.tolist() == [True, False, False]
    assert model.booster_.categories_[0].tolist() == sorted(set(CITIES))
    assert model.feature_names_in_.tolist() == ["city", "x", "zone"]
    _same_model(model, ref)

    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "test.csv",
                          "-o", "p.parquet", "--proba", "--label", "--quiet")
    assert rc == 0, err
    out = pq.read_table(tmp_path / "p.parquet")
    expected = ref.predict_proba(_features(test))
    np.testing.assert_array_equal(out.column("proba").to_numpy(), expected[:, 1])
    assert out.column("label").to_pylist() == ref.predict(_features(test)).tolist()
    # The unseen city and the missing one are scored as missing values.
    missing = test.iloc[[1]].copy()
    missing.loc[:, "city"] = "tokyo"
    np.testing.assert_array_equal(expected[0], ref.predict_proba(_features(test.iloc[[0]]))[0])
    np.testing.assert_array_equal(expected[1], ref.predict_proba(_features(missing))[0])

    rc, out, err = run_main(capsys, monkeypatch, tmp_path, "evaluate", "m.gbc", "test.csv",
                            "-t", "target", "--json")
    assert rc == 0, err
    import json

    from gbc_core.metrics import log_loss_from_raw

    codes = (test["target"].to_numpy() == "yes").astype(int)
    assert json.loads(out)["log_loss"] == pytest.approx(
        log_loss_from_raw(codes, ref.decision_function(_features(test))), rel=1e-12)


def test_named_columns_csv_numbers_are_texts(tmp_path, capsys, monkeypatch, caught):
    """``--categorical COLS``: exactly those columns; a CSV column is read as text, so
    a column of integers has the categories "1", "2", ...; the text column left out
    is an error as without categorical features."""
    train = _frame(500, 2)
    _write_csv(train, tmp_path / "train.csv")
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "train.csv", "-t", "target",
                          "-o", "m.gbc", "--quiet", "--categorical", "city,zone", *PARAMS)
    assert rc == 0, err
    model = caught["m.gbc"]
    assert model.booster_.categories_[2].tolist() == ["1", "2", "3", "4"]
    as_text = train.assign(zone=train["zone"].astype(str))
    _same_model(model, _reference(as_text, categorical_features=["city", "zone"]))
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "train.csv",
                          "-o", "p.csv", "--quiet")
    assert rc == 0, err
    proba = pd.read_csv(tmp_path / "p.csv")["proba"].to_numpy()
    np.testing.assert_allclose(proba, model.predict_proba(_features(as_text))[:, 1],
                               rtol=1e-15)

    for args, words in [
            (["--categorical", "zone"], ["'city'", "not numeric", "--categorical"]),
            (["--categorical", "none"], ["'city'", "not numeric"]),
            (["--categorical", "city,nope"], ["--categorical", "'nope'", "not found"]),
            (["--categorical", "target"], ["--categorical", "'target'", "not features"]),
            (["--categorical", "city", "--drop", "city"], ["'city'", "not features"])]:
        rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "train.csv", "-t",
                              "target", "-o", "m2.gbc", *args)
        check_error(args, words, rc, err)


def test_too_many_categories_names_the_column(tmp_path, capsys, monkeypatch, caught):
    frame = _frame(400, 3)
    frame["id"] = [f"row{i}" for i in range(len(frame))]
    _write_csv(frame, tmp_path / "train.csv")
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "train.csv", "-t", "target",
                          "-o", "m.gbc")
    check_error([], ["'id'", "categories", "max_bins"], rc, err)


def test_parquet_dictionary_and_string_columns(tmp_path, capsys, monkeypatch, caught):
    """Parquet: string and dictionary (pandas category) columns are categorical with
    auto, as the estimator's "from_dtype" makes them on the frame; a named numeric
    column keeps its numbers as categories."""
    train, test = _frame(600, 4), _frame(200, 5)
    test.loc[3, "city"] = "tokyo"
    for frame in (train, test):
        frame["city"] = frame["city"].astype("category")
        frame["kind"] = np.where(frame["zone"] % 2 == 0, "even", "odd")
    train.to_parquet(tmp_path / "train.parquet", index=False)
    test.to_parquet(tmp_path / "test.parquet", index=False)
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "train.parquet", "-t",
                          "target", "-o", "m.gbc", "--quiet", *PARAMS)
    assert rc == 0, err
    model = caught["m.gbc"]
    ref = _reference(train)
    assert model.is_categorical_.tolist() == [True, False, False, True]
    _same_model(model, ref)
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "test.parquet",
                          "-o", "p.parquet", "--quiet")
    assert rc == 0, err
    np.testing.assert_array_equal(pq.read_table(tmp_path / "p.parquet").column("proba"),
                                  ref.predict_proba(_features(test))[:, 1])

    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "train.parquet", "-t",
                          "target", "-o", "n.gbc", "--quiet", "--categorical", "zone,kind",
                          "--drop", "city", *PARAMS)
    assert rc == 0, err
    model = caught["n.gbc"]
    assert model.booster_.categories_[1].tolist() == [1.0, 2.0, 3.0, 4.0]
    ref = _reference(train.drop(columns="city"), categorical_features=["zone", "kind"])
    _same_model(model, ref)
    # Its numeric categories are read from a CSV as numbers.
    _write_csv(test.drop(columns="city"), tmp_path / "test.csv")
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", "n.gbc", "test.csv",
                          "-o", "q.csv", "--quiet")
    assert rc == 0, err
    np.testing.assert_allclose(pd.read_csv(tmp_path / "q.csv")["proba"].to_numpy(),
                               ref.predict_proba(_features(test.drop(columns="city")))[:, 1],
                               rtol=1e-15)


def test_without_pandas_the_rows_are_an_object_array(tmp_path, capsys, monkeypatch, caught):
    train = _frame(400, 6)
    _write_csv(train, tmp_path / "train.csv")
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "train.csv", "-t", "target",
                          "-o", "a.gbc", "--quiet", *PARAMS)
    assert rc == 0, err
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas: ImportError
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "train.csv", "-t", "target",
                          "-o", "b.gbc", "--quiet", *PARAMS)
    assert rc == 0, err
    _same_model(caught["a.gbc"], caught["b.gbc"])
    assert caught["b.gbc"].feature_names_in_.tolist() == ["city", "x", "zone"]


def test_libsvm_refuses_named_columns_and_categorical_models(tmp_path, capsys, monkeypatch,
                                                             caught):
    (tmp_path / "d.svm").write_text("1 1:0.5 2:1\n0 1:1.5\n1 2:3\n0 1:2 2:1\n")
    args = ["train", "d.svm", "-o", "m.gbc", "--categorical", "f0"]
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, *args)
    check_error(args, ["--categorical", "LIBSVM"], rc, err)
    _write_csv(_frame(300, 7), tmp_path / "train.csv")
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "train.csv", "-t", "target",
                          "-o", "c.gbc", "--quiet", "--n-estimators", "2")
    assert rc == 0, err
    args = ["predict", "c.gbc", "d.svm", "-o", "p.csv"]
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, *args)
    check_error(args, ["categorical", "LIBSVM"], rc, err)


def test_inspect_tree_shows_the_categories_of_each_split(tmp_path, capsys, monkeypatch,
                                                          caught):
    """``inspect --tree``: "city in {...}" lists the categories going to the first
    child; a row of each category goes there exactly when it is listed (stumps: the
    raw score is the left or the right leaf's)."""
    import json

    train = _frame(800, 10)[["city", "target"]]
    _write_csv(train, tmp_path / "train.csv")
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "train.csv", "-t", "target",
                          "-o", "m.gbc", "--quiet", "--n-estimators", "2", "--max-depth", "1")
    assert rc == 0, err
    booster = caught["m.gbc"].booster_
    rc, out, err = run_main(capsys, monkeypatch, tmp_path, "inspect", "m.gbc", "--tree", "1")
    assert rc == 0, err
    root = out.splitlines()[1]
    assert root.startswith("[0] city in {") and "(missing -> " in root
    listed = root[len("[0] city in {"): root.index("}")].split(", ")
    nodes = booster.ensemble.tree_nodes(1)
    left, right = nodes[nodes[0]["left"]]["value"], nodes[nodes[0]["right"]]["value"]
    assert left != right
    for city in sorted(set(CITIES)) + ["tokyo", None]:
        raw = booster.predict_raw(pd.DataFrame({"city": [city]}))[0, 0]
        before = booster.ensemble.predict_raw(
            booster._rows(pd.DataFrame({"city": [city]})), iterations=1)[0, 0]
        value = (raw - before) / booster.learning_rate
        goes_left = city in listed if city in CITIES else bool(nodes[0]["missing_go_left"])
        assert value == pytest.approx(left if goes_left else right, rel=1e-9), city
    rc, out, err = run_main(capsys, monkeypatch, tmp_path, "inspect", "m.gbc", "--tree", "1",
                            "--json")
    assert rc == 0, err
    assert json.loads(out)["left_categories"] == [listed, None, None]
    # Without the model's categories, the codes.
    text = _commands.draw_tree(nodes, ["city"], None, booster.ensemble).splitlines()[0]
    codes = [str(booster.categories_[0].tolist().index(c)) for c in listed]
    assert text.startswith("[0] city in {" + ", ".join(codes) + "}")


def test_through_the_model_file(tmp_path, capsys, monkeypatch):
    train, test = _frame(500, 8), _frame(200, 9)
    test.loc[0, "city"] = "tokyo"
    _write_csv(train, tmp_path / "train.csv")
    _write_csv(test, tmp_path / "test.csv")
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "train", "train.csv", "-t", "target",
                          "-o", "m.gbc", "--quiet", *PARAMS)
    assert rc == 0, err
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, "predict", "m.gbc", "test.csv",
                          "-o", "p.parquet", "--quiet")
    assert rc == 0, err
    np.testing.assert_array_equal(pq.read_table(tmp_path / "p.parquet").column("proba"),
                                  _reference(train).predict_proba(_features(test))[:, 1])


def test_auto_finds_the_text_columns_of_a_csv(tmp_path):
    """auto: a column of text; not one of numbers, true/false, numbers mixed with
    true/false or with a date (their usual errors), nor an empty one."""
    from gbc_core._tabular import TableData

    rows = ["t,n,f,nb,nd,e,y"]
    for i in range(50):
        rows.append(f"{'ab'[i % 2] if i % 7 else ''},{i / 4},{'true' if i % 2 else 'false'},"
                    f"{'true' if i == 3 else i},{'2024-03-01' if i == 5 else i},,{i % 2}")
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    data = TableData(tmp_path / "d.csv", "csv")
    assert data.text_columns(["t", "n", "f", "nb", "nd", "e"]) == ["t"]
