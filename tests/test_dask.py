"""Scoring on a Dask cluster: ``gbc_core.dask`` and ``gbc-core predict --dask``.

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
