"""``gbc-core predict --contributions``: the TreeSHAP columns, streamed chunk by chunk.

The reference is the in-process ``predict_contributions`` of the same model on the
same rows (bit for bit: the command reads the file in chunks, each row's
contributions do not depend on its chunk).
"""

import numpy as np
import pytest

from conftest import check_error, require, run_main

pa = require("pyarrow")
pd = require("pandas")
import pyarrow.parquet as pq  # noqa: E402

from gbc_core import Booster, GradientBoostingClassifier  # noqa: E402


def _table(n, labels, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32).astype(np.float64)
    X[rng.uniform(size=n) < 0.1, 1] = np.nan
    score = X[:, 0] - np.nan_to_num(X[:, 1]) * X[:, 2] + 0.2 * rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, len(labels) + 1)[1:-1]))
    cols = {"id": np.arange(n) * 3 + 1}
    cols.update({name: X[:, j] for j, name in enumerate(["b", "a", "d", "c"])})
    cols["target"] = np.asarray(labels)[y]
    return pa.table(cols)


@pytest.fixture(scope="module", params=[("no", "yes"), ("cat", "dog", "emu")],
                ids=["binary", "multiclass"])
def case(request, tmp_path_factory):
    work = tmp_path_factory.mktemp("contrib")
    labels = request.param
    train = _table(800, labels, 0).to_pandas()
    model = GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0)
    model.fit(train[["b", "a", "d", "c"]], train["target"])
    model.save(work / "model.gbc")
    test = _table(500, labels, 1).select(["c", "id", "target", "a", "d", "b"])
    pq.write_table(test, work / "test.parquet", row_group_size=120)
    return work, Booster.load(work / "model.gbc"), test.to_pandas(), labels


def test_contribution_columns_equal_predict_contributions(case, capsys, monkeypatch):
    work, model, test, labels = case
    rc, _, err = run_main(capsys, monkeypatch, work, "predict", "model.gbc", "test.parquet",
                          "-o", "c.parquet", "--contributions", "--keep", "id",
                          "--chunk-rows", "97")
    assert rc == 0, err
    out = pq.read_table(work / "c.parquet")
    features = ["b", "a", "d", "c", "expected_value"]
    if len(labels) == 2:
        names = [f"contrib_{f}" for f in features]
    else:
        names = [f"contrib_{label}_{f}" for label in labels for f in features]
    assert out.column_names == ["id"] + names
    assert out.column("id").to_pylist() == test["id"].tolist()
    phi = model.predict_contributions(test)
    got = np.column_stack([out.column(n).to_numpy() for n in names])
    np.testing.assert_array_equal(got, phi.reshape(phi.shape[0], -1))
    # Per class, the columns add up to the raw scores.
    raw = model.decision_function(test).reshape(len(test), -1)
    np.testing.assert_allclose(got.reshape(len(test), -1, 5).sum(axis=2), raw, atol=1e-9,
                               rtol=0)


def test_contributions_with_proba_and_label(case, capsys, monkeypatch):
    work, model, test, labels = case
    rc, _, err = run_main(capsys, monkeypatch, work, "predict", "model.gbc", "test.parquet",
                          "-o", "all.csv", "--contributions", "--proba", "--label")
    assert rc == 0, err
    out = pd.read_csv(work / "all.csv")
    proba = ["proba"] if len(labels) == 2 else [f"proba_{label}" for label in labels]
    assert list(out.columns[: len(proba) + 1]) == proba + ["label"]
    assert out.columns[-1].endswith("expected_value")
    assert out["label"].tolist() == model.predict(test).tolist()


def test_contributions_of_an_empty_file(case, capsys, monkeypatch):
    work, model, test, labels = case
    pq.write_table(pa.Table.from_pandas(test.iloc[:0], preserve_index=False),
                   work / "empty.parquet")
    rc, _, err = run_main(capsys, monkeypatch, work, "predict", "model.gbc", "empty.parquet",
                          "-o", "e.parquet", "--contributions")
    assert rc == 0, err
    out = pq.read_table(work / "e.parquet")
    assert out.num_rows == 0
    assert len(out.column_names) == 5 * (1 if len(labels) == 2 else len(labels))
    assert all(t == pa.float64() for t in out.schema.types)


def test_contributions_errors(case, capsys, monkeypatch):
    work, model, test, labels = case
    args = ("predict", "model.gbc", "test.parquet", "-o", "x.parquet", "--contributions",
            "--dask", "tcp://127.0.0.1:1")
    rc, _, err = run_main(capsys, monkeypatch, work, *args)
    check_error(args, ["--contributions", "--dask"], rc, err)
    clash = "contrib_b" if len(labels) == 2 else f"contrib_{labels[0]}_b"
    renamed = pa.Table.from_pandas(test.rename(columns={"id": clash}), preserve_index=False)
    pq.write_table(renamed, work / "clash.parquet")
    args = ("predict", "model.gbc", "clash.parquet", "-o", "x.parquet", "--contributions",
            "--keep", clash)
    rc, _, err = run_main(capsys, monkeypatch, work, *args)
    check_error(args, [clash, "output column"], rc, err)
    assert not (work / "x.parquet").exists()


def test_repeated_contribution_names_are_an_error(tmp_path, capsys, monkeypatch):
    # Labels "a" and "a_b" with features "b_c" and "c": "contrib_a_b_c" twice.
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"b_c": rng.normal(size=300), "c": rng.normal(size=300)})
    y = np.array(["a", "a_b", "z"])[rng.integers(0, 3, 300)]
    GradientBoostingClassifier(n_estimators=2).fit(df, y).save(tmp_path / "m.gbc")
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "d.parquet")
    args = ("predict", "m.gbc", "d.parquet", "-o", "x.parquet", "--contributions")
    rc, _, err = run_main(capsys, monkeypatch, tmp_path, *args)
    check_error(args, ["'contrib_a_b_c'", "twice"], rc, err)
