"""Scoring on a Dask cluster (optional extra ``gbc-core[dask]``).

The model travels to the workers as its compact model-format bytes (``to_bytes()``),
not as a pickle of Python objects; each worker rebuilds it once with ``from_bytes``
and keeps it in a small per-process cache keyed by the bytes' SHA-256. Each task scores
with ``n_jobs`` threads chosen so that the workers of a host times their threads do not
oversubscribe it: ``max(1, cpus // (workers on the host x threads per worker))``.

>>> import dask.dataframe as dd
>>> from gbc_core.dask import predict_proba
>>> ddf = dd.read_parquet("data/*.parquet")
>>> proba = predict_proba(model, ddf)   # dask Array (n, n_classes); columns by name

Results are bit-identical to ``model.predict_proba`` in one process. The module uses
the public API only (``Booster``: ``from_bytes``, ``predict_raw``,
``proba_from_raw``, ``labels_from_raw``).
"""

import hashlib
import os
import threading
from collections import OrderedDict, deque

import numpy as np

__all__ = ["predict_proba", "predict", "decision_function", "score_chunks"]


def _import_dask():
    try:
        import dask  # noqa: F401
        import dask.array  # noqa: F401
    except ImportError:
        raise ImportError(
            'gbc_core.dask needs dask: pip install "gbc-core[dask]"'
        ) from None
    return dask


# ------------------------------------------------------------ worker side
_CACHE_SIZE = 4
_cache = OrderedDict()
_cache_lock = threading.Lock()


def _cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _model_from_bytes(data, digest):
    """The model of ``data``, rebuilt once per process (LRU of a few models)."""
    with _cache_lock:
        model = _cache.get(digest)
        if model is not None:
            _cache.move_to_end(digest)
            return model
    from ._booster import Booster

    model = Booster.from_bytes(bytes(data))
    with _cache_lock:
        _cache[digest] = model
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return model


def _auto_n_jobs(workers_on_host):
    """Threads per task: the host's CPUs shared by its workers and their threads."""
    threads = 1
    try:
        from distributed import get_worker

        worker = get_worker()
        threads = max(1, int(getattr(worker, "nthreads", None) or worker.state.nthreads))
    except Exception:  # noqa: BLE001 - not on a distributed worker
        threads = max(1, threads)
    return max(1, _cpu_count() // (max(1, workers_on_host) * threads))


def _n_jobs_for_task(n_jobs, workers_per_host):
    if n_jobs is not None:
        return n_jobs
    if not workers_per_host:
        return 1  # local threaded/process scheduler: one task per core already
    host = None
    try:
        from distributed import get_worker

        host = get_worker().address.rsplit(":", 1)[0].split("://")[-1]
    except Exception:  # noqa: BLE001
        pass
    return _auto_n_jobs(workers_per_host.get(host, max(workers_per_host.values())))


def _raw_block(X, model_bytes, digest, n_jobs, workers_per_host):
    """Raw scores F(x), shape (n, n_outputs), of one block (runs on a worker)."""
    model = _model_from_bytes(model_bytes, digest)
    if not hasattr(X, "columns"):
        X = np.asarray(X)
    if X.shape[0] == 0:
        return np.empty((0, model.ensemble.n_outputs), dtype=np.float64)
    return model.predict_raw(X, n_jobs=_n_jobs_for_task(n_jobs, workers_per_host))


def _decision_block(X, model_bytes, digest, n_jobs, workers_per_host):
    raw = _raw_block(X, model_bytes, digest, n_jobs, workers_per_host)
    return raw[:, 0] if raw.shape[1] == 1 else raw


def _proba_block(X, model_bytes, digest, n_jobs, workers_per_host):
    model = _model_from_bytes(model_bytes, digest)
    return model.proba_from_raw(_raw_block(X, model_bytes, digest, n_jobs, workers_per_host))


def _label_block(X, model_bytes, digest, n_jobs, workers_per_host):
    model = _model_from_bytes(model_bytes, digest)
    return model.labels_from_raw(_raw_block(X, model_bytes, digest, n_jobs, workers_per_host))


# ------------------------------------------------------------ client side
def _model_bytes(model):
    """(model-format bytes, Booster) of a fitted estimator, a Booster or bytes."""
    from ._booster import Booster

    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
        return data, Booster.from_bytes(data)
    booster = getattr(model, "booster_", model)
    if not isinstance(booster, Booster):
        raise TypeError(f"model must be a fitted GradientBoostingClassifier, a Booster or "
                        f"model-format bytes, got {type(model).__name__}")
    return booster.to_bytes(), booster


def _get_client(client=None):
    if client is not None:
        return client
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def workers_per_host(client):
    """``{host: number of workers}`` of a distributed client's cluster."""
    if client is None:
        return {}
    try:
        info = client.scheduler_info(n_workers=-1)  # all workers (newer distributed)
    except TypeError:
        info = client.scheduler_info()
    counts = {}
    for addr in info["workers"]:
        host = addr.rsplit(":", 1)[0].split("://")[-1]
        counts[host] = counts.get(host, 0) + 1
    return counts


def _apply(model, X, func, n_jobs, client, kind):
    _import_dask()
    import dask
    import dask.array as da

    data, model = _model_bytes(model)
    digest = hashlib.sha256(data).hexdigest()
    client = _get_client(client)
    wph = workers_per_host(client)
    model_arg = dask.delayed(data, pure=True)  # one key in the graph, sent once
    classes = model.classes_
    n_outputs = model.ensemble.n_outputs
    if kind == "proba":
        meta = np.empty((0, classes.shape[0]), dtype=np.float64)
    elif kind == "label":
        meta = np.empty(0, dtype=classes.dtype)
    else:
        meta = np.empty((0, n_outputs) if n_outputs > 1 else 0, dtype=np.float64)

    if isinstance(X, da.Array):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got {X.ndim}-D")
        if X.numblocks[1] != 1:
            X = X.rechunk({1: -1})
        if meta.ndim == 2:
            return X.map_blocks(func, model_arg, digest, n_jobs, wph, dtype=np.float64,
                                chunks=(X.chunks[0], (meta.shape[1],)), meta=meta)
        return X.map_blocks(func, model_arg, digest, n_jobs, wph, drop_axis=1,
                            dtype=meta.dtype, chunks=(X.chunks[0],), meta=meta)
    if hasattr(X, "map_partitions") and hasattr(X, "npartitions"):
        # A Dask DataFrame: each partition becomes one block of the result array.
        parts = X.to_delayed()
        blocks = []
        ncols = meta.shape[1:]
        for part in parts:
            res = dask.delayed(func, pure=True)(part, model_arg, digest, n_jobs, wph)
            blocks.append(da.from_delayed(res, shape=(np.nan,) + ncols, dtype=meta.dtype,
                                          meta=meta))
        return da.concatenate(blocks, axis=0) if blocks else da.from_array(meta)
    raise TypeError(f"X must be a Dask DataFrame or Array, got {type(X).__name__}")


def predict_proba(model, X, *, n_jobs=None, client=None):
    """Class probabilities of a Dask DataFrame or Array, scored on the workers.

    Parameters
    ----------
    model : GradientBoostingClassifier, Booster or bytes
        A fitted model, or its ``to_bytes()``.
    X : dask.dataframe.DataFrame or dask.array.Array of shape (n, n_features)
        A DataFrame's columns are selected by the model's feature names (any order,
        extra columns ignored) when it was fitted with names.
    n_jobs : int, optional
        Threads per task; default: the host's CPUs divided among its workers' threads
        on a distributed cluster, 1 with the local schedulers.
    client : distributed.Client, optional
        Default: the current client, if any.

    Returns
    -------
    dask.array.Array of shape (n, n_classes), float64 (lazy; call ``.compute()``).
    """
    return _apply(model, X, _proba_block, n_jobs, client, "proba")


def predict(model, X, *, n_jobs=None, client=None):
    """Predicted labels (the class of largest probability), as a lazy Dask Array."""
    return _apply(model, X, _label_block, n_jobs, client, "label")


def decision_function(model, X, *, n_jobs=None, client=None):
    """Raw scores F(x), as a lazy Dask Array: shape (n,) for two classes, (n,
    n_classes) otherwise."""
    return _apply(model, X, _decision_block, n_jobs, client, "raw")


def score_chunks(client, model, chunks, *, n_jobs=None, window=None):
    """Score an iterator of chunks (objects with an ``X`` array) on a cluster, in order.

    Yields ``(chunk, raw scores (n, n_outputs))`` in the order of ``chunks`` while at most ``window``
    chunks are in flight (default: two per worker thread), so memory stays bounded
    by the chunk size. ``client`` is a ``distributed.Client`` or a scheduler address.
    Used by ``gbc-core predict --dask ADDRESS``.
    """
    try:
        from distributed import Client
    except ImportError:
        raise ImportError('--dask needs dask.distributed: pip install "gbc-core[dask]"') from None
    own = False
    if isinstance(client, str):
        client = Client(client, set_as_default=False)
        own = True
    try:
        data, model = _model_bytes(model)
        digest = hashlib.sha256(data).hexdigest()
        wph = workers_per_host(client)
        nthreads = sum(client.nthreads().values()) or 1
        window = window or max(2, 2 * nthreads)
        [model_future] = client.scatter([data], broadcast=True, hash=False)
        pending = deque()
        for chunk in chunks:
            fut = client.submit(_raw_block, chunk.X, model_future, digest, n_jobs, wph,
                                pure=False)
            pending.append((chunk, fut))
            if len(pending) >= window:
                c, f = pending.popleft()
                yield c, f.result()
        while pending:
            c, f = pending.popleft()
            yield c, f.result()
    finally:
        if own:
            client.close()
