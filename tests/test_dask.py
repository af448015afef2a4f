"""Scoring with Dask: ``gbc_core.dask`` on the local schedulers and on a cluster, and
``gbc-core predict --dask``.

Skipped when dask/distributed are not importable (the ``test`` extra installs them),
an error instead with ``GBC_CORE_REQUIRE_TEST_DEPS=1`` (``conftest.require``).
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import require

dask = require("dask")
require("dask.dataframe")
distributed = require("distributed")
pa = require("pyarrow")
pd = require("pandas")

import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import gbc_core  # noqa: E402
from gbc_core import GradientBoostingClassifier  # noqa: E402
from gbc_core import dask as gdask  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None, worker_dashboard_address=None) as c:
        with distributed.Client(c) as client:
            yield c, client


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    n = 6000
    X = rng.normal(size=(n, 6))
    X[rng.uniform(size=n) < 0.05, 3] = np.nan
    y = np.where(X[:, 0] - X[:, 1] * X[:, 2] + rng.normal(size=n) > 0, "pos", "neg")
    df = pd.DataFrame(X, columns=[f"c{j}" for j in range(6)])
    model = GradientBoostingClassifier(n_estimators=30, max_depth=4, n_jobs=1).fit(df, y)
    # Score a frame with the columns shuffled and an id column.
    test = df.iloc[:, ::-1].copy()
    test.insert(0, "id", np.arange(n) * 3)
    return model, test


@pytest.fixture(scope="module")
def multiclass():
    """A model of three classes fitted with feature names, and rows to score."""
    rng = np.random.default_rng(1)
    n = 3000
    X = rng.normal(size=(n, 4))
    y = np.array(["ant", "bee", "cow"])[(X[:, 0] > 0.3).astype(int) + (X[:, 1] > 0)]
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    return GradientBoostingClassifier(n_estimators=10, max_depth=3, n_jobs=1).fit(df, y), df


# The tests on the local schedulers come first: the cluster fixture below starts a
# distributed client, which gbc_core.dask would use from then on.
@pytest.fixture(params=["threads", "sync"])
def local_scheduler(request):
    """Dask's local scheduler ``request.param``, with no distributed client."""
    with pytest.raises(ValueError):
        distributed.default_client()  # none: gbc_core.dask takes its local path
    with dask.config.set(scheduler=request.param):
        yield request.param


def _with_an_empty_partition(frame):
    """``frame`` as a Dask DataFrame of 4 partitions, the second one empty."""
    parts = [frame.iloc[:1000], frame.iloc[:0], frame.iloc[1000:2000], frame.iloc[2000:]]
    ddf = dd.concat([dd.from_pandas(part, npartitions=1) for part in parts])
    assert ddf.map_partitions(len).compute().tolist() == [1000, 0, 1000, len(frame) - 2000]
    return ddf


def _with_an_empty_block(X):
    """``X`` as a Dask Array whose second block of rows has 0 rows."""
    dX = da.from_array(X, chunks=((1000, 0, 1000, X.shape[0] - 2000), (X.shape[1],)))
    assert 0 in dX.chunks[0]
    return dX


def test_local_scheduler_matches_the_model_bit_for_bit(local_scheduler, fitted):
    model, test = fitted
    X = test[list(model.feature_names_in_)].to_numpy()
    booster = model.booster_
    ddf, dX = _with_an_empty_partition(test), _with_an_empty_block(X)
    for given in (model, booster, model.to_bytes()):  # an estimator, a Booster, bytes
        for data, ref, ref_X in ((ddf, model, test), (dX, booster, X)):
            proba = gdask.predict_proba(given, data).compute()
            np.testing.assert_array_equal(proba, ref.predict_proba(ref_X))
            np.testing.assert_array_equal(gdask.decision_function(given, data).compute(),
                                          ref.decision_function(ref_X))
            np.testing.assert_array_equal(gdask.predict(given, data).compute(),
                                          ref.predict(ref_X))
    assert gdask.decision_function(model, dX).compute().shape == (X.shape[0],)


def test_local_scheduler_scores_three_classes(local_scheduler, multiclass):
    model, df = multiclass
    X = df.to_numpy()
    proba = gdask.predict_proba(model, _with_an_empty_partition(df)).compute()
    raw = gdask.decision_function(model.to_bytes(), _with_an_empty_block(X)).compute()
    labels = gdask.predict(model.booster_, _with_an_empty_partition(df[["d", "c", "b", "a"]]))
    assert proba.shape == raw.shape == (3000, 3)
    np.testing.assert_array_equal(proba, model.predict_proba(df))
    np.testing.assert_array_equal(raw, model.decision_function(df))
    labels = labels.compute()
    np.testing.assert_array_equal(labels, model.predict(df))
    assert set(labels) == {"ant", "bee", "cow"}


def _sparse_blocks(X, chunks):
    """``X`` as a Dask Array whose blocks are scipy CSR matrices (zeros implicit)."""
    sparse = require("scipy.sparse")
    return da.from_array(X, chunks=chunks).map_blocks(
        sparse.csr_matrix, meta=sparse.csr_matrix((0, 0), dtype=X.dtype))


def test_local_scheduler_scores_sparse_blocks(local_scheduler, multiclass):
    model, df = multiclass
    X = df.to_numpy().copy()
    X[np.abs(X) < 0.8] = 0.0  # mostly zeros
    X[::50, 1] = np.nan  # stored: missing values
    dX = _sparse_blocks(X, (700, 4))
    booster = model.booster_  # (rows without names: taken in the order of the fit)
    proba = gdask.predict_proba(model, dX).compute()
    np.testing.assert_array_equal(proba, booster.predict_proba(X))
    np.testing.assert_array_equal(gdask.decision_function(model.to_bytes(), dX).compute(),
                                  booster.decision_function(X))
    np.testing.assert_array_equal(gdask.predict(booster, dX).compute(), booster.predict(X))


def test_empty_input(local_scheduler, fitted):
    model, test = fitted
    empty = dd.from_pandas(test.iloc[:0], npartitions=1)
    assert gdask.predict_proba(model, empty).compute().shape == (0, 2)
    assert gdask.predict(model, empty).compute().shape == (0,)
    X = np.empty((0, model.n_features_in_))
    assert gdask.decision_function(model, da.from_array(X)).compute().shape == (0,)


def test_bad_input_is_a_clear_error(local_scheduler, fitted):
    model, test = fitted
    functions = (gdask.predict_proba, gdask.predict, gdask.decision_function)
    lacking = dd.from_pandas(test.drop(columns=["c2"]), npartitions=3)
    X = test[list(model.feature_names_in_)].to_numpy()
    for function in functions:
        with pytest.raises(ValueError, match=r"missing feature.*'c2'"):
            function(model, lacking).compute()
        with pytest.raises(ValueError, match="2-D"):  # a Dask Array of shape (n,)
            function(model, da.from_array(X[:, 0], chunks=1000))
        with pytest.raises(ValueError, match="2-D"):  # a Dask Series
            function(model, dd.from_pandas(test["c0"], npartitions=2)).compute()
        for wrong in (X, X.tolist(), test):
            with pytest.raises(TypeError, match="X must be a Dask DataFrame or Array, got "
                                                + type(wrong).__name__):
                function(model, wrong)
        with pytest.raises(TypeError, match="a fitted GradientBoostingClassifier, a Booster"):
            function(GradientBoostingClassifier(), da.from_array(X))


def test_dataframe_and_array_match_single_process(cluster, fitted):
    _, client = cluster
    model, test = fitted
    ref_proba = model.predict_proba(test)
    ref_label = model.predict(test)
    ddf = dd.from_pandas(test, npartitions=5)
    proba = gdask.predict_proba(model, ddf, client=client).compute()
    np.testing.assert_array_equal(proba, ref_proba)  # exactly equal
    np.testing.assert_array_equal(gdask.predict(model, ddf).compute(), ref_label)
    X = test[list(model.feature_names_in_)].to_numpy()
    dX = da.from_array(X, chunks=(1234, 6))
    np.testing.assert_array_equal(gdask.predict_proba(model.to_bytes(), dX).compute(),
                                  ref_proba)
    np.testing.assert_array_equal(gdask.decision_function(model, dX).compute(),
                                  model.booster_.decision_function(X))
    # Each worker process rebuilt the model once from its bytes and cached it.
    cached = client.run(lambda: list(__import__("gbc_core.dask", fromlist=["_"])._cache))
    assert len(cached) == 2
    assert all(len(v) == 1 for v in cached.values())


def test_sparse_blocks_on_the_cluster(cluster, fitted):
    _, client = cluster
    model, test = fitted
    X = test[list(model.feature_names_in_)].to_numpy().copy()
    X[np.abs(X) < 1.0] = 0.0
    dX = _sparse_blocks(X, (1500, 3))  # column blocks too: joined on the workers
    np.testing.assert_array_equal(gdask.predict_proba(model, dX, client=client).compute(),
                                  model.booster_.predict_proba(X))


def test_threads_per_task_do_not_oversubscribe(cluster):
    _, client = cluster
    wph = gdask.workers_per_host(client)
    assert sum(wph.values()) == 2
    n_jobs = client.submit(gdask._n_jobs_for_task, None, wph, pure=False).result()
    expected = max(1, gdask._cpu_count() // 2)
    assert n_jobs == expected
    assert client.submit(gdask._n_jobs_for_task, 3, wph, pure=False).result() == 3


def test_cli_predict_on_the_cluster(cluster, fitted, tmp_path):
    c, _ = cluster
    model, test = fitted
    model.save(tmp_path / "m.gbc")
    pq.write_table(pa.Table.from_pandas(test, preserve_index=False), tmp_path / "t.parquet",
                   row_group_size=1000)
    proc = subprocess.run(
        [sys.executable, "-m", "gbc_core", "predict", "m.gbc", "t.parquet", "-o", "s.parquet",
         "--keep", "id", "--proba", "--label", "--chunk-rows", "700",
         "--dask", c.scheduler_address],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = pq.read_table(tmp_path / "s.parquet")
    assert out.column("id").to_pylist() == test["id"].tolist()
    loaded = gbc_core.load(tmp_path / "m.gbc")
    np.testing.assert_array_equal(out.column("proba").to_numpy(),
                                  loaded.predict_proba(test)[:, 1])
    assert out.column("label").to_pylist() == loaded.predict(test).tolist()
    assert [p for p in os.listdir(tmp_path) if p.endswith(".tmp")] == []
