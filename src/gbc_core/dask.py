"""Scoring and training on a Dask cluster (the optional ``dask`` extra).

Training: :class:`DaskGradientBoostingClassifier` (``split_method="hist"``, the rows
stay on their workers; the engine-neutral protocol is ``_data_parallel``, this
module's bottom half its Dask transport; docs/architecture.md, "One fit"). Its sums
over the workers (one step per level of a tree) travel on TCP connections from
each worker to the first, opened once per fit with a random token
(``_socket_allreduce``), not through Dask (a Dask actor call costs several
milliseconds a step); on a cluster whose connections are encrypted (TLS) they go
through a Dask actor instead, since those sockets are not encrypted (the same
model either way; "The all-reduce" below). Scoring:

The model travels to the workers as its compact model-format bytes (``to_bytes()``),
not as a pickle of Python objects; each worker rebuilds it once with ``from_bytes``
and keeps it in a small per-process cache keyed by the bytes' SHA-256. Each task scores
with ``n_jobs`` threads chosen so that the workers of a host times their threads do not
oversubscribe it: ``max(1, cpus // (workers on the host x threads per worker))``.

>>> import dask.dataframe as dd
>>> import pandas as pd
>>> from distributed import Client, LocalCluster
>>> from gbc_core import GradientBoostingClassifier
>>> from gbc_core.dask import predict_proba
>>> cluster = LocalCluster(n_workers=1, processes=False, dashboard_address=None)
>>> client = Client(cluster)
>>> X = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0], "b": [1.0, 0.0, 1.0, 0.0]})
>>> model = GradientBoostingClassifier(n_estimators=3, max_depth=1).fit(X, [0, 0, 1, 1])
>>> ddf = dd.from_pandas(X, npartitions=2)   # or dd.read_parquet("data/*.parquet")
>>> proba = predict_proba(model, ddf, client=client)  # a Dask Array (n, n_classes)
>>> bool((proba.compute() == model.predict_proba(X)).all())
True
>>> client.close()
>>> cluster.close()

Results are bit-identical to ``model.predict_proba`` in one process. The module uses
the public API only (``Booster``: ``from_bytes``, ``predict_raw``,
``proba_from_raw``, ``labels_from_raw``).
"""

import hashlib
import os
import sys
import threading
from collections import OrderedDict, deque

import numpy as np

from ._data_parallel import Part
from ._data_parallel import merged_labels as _merged_labels  # noqa: F401
from ._params import PARAMS as _PARAMS, seed_from as _seed_from
from ._socket_allreduce import LostPeer

__all__ = ["predict_proba", "predict", "decision_function", "score_chunks",
           "DaskGradientBoostingClassifier"]


def _import_dask():
    try:
        import dask  # noqa: F401
        import dask.array  # noqa: F401
    except ImportError:
        raise ImportError(
            'gbc_core.dask needs dask: pip install "dask[distributed]" '
            '(the dask extra, pip install ".[dask]" from a checkout)'
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


def _is_sparse_block(X):
    """Whether a block is a scipy.sparse matrix (scored row by row, never densified)."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(X)


def _raw_block(X, model_bytes, digest, n_jobs, workers_per_host):
    """Raw scores F(x), shape (n, n_outputs), of one block (runs on a worker)."""
    model = _model_from_bytes(model_bytes, digest)
    if not hasattr(X, "columns") and not _is_sparse_block(X):
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
    """``{host: number of workers}`` of a distributed client's cluster.

    Parameters
    ----------
    client : distributed.Client or None
        The client (None: no cluster, an empty dict).

    Returns
    -------
    dict of str to int

    Examples
    --------
    >>> from gbc_core.dask import workers_per_host
    >>> workers_per_host(None)
    {}
    """
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


#: The starts of the docstrings' examples, each written out where a docstring has a
#: line ``{name}``: a model fitted in memory, scored on a local cluster of one worker
#: (``scored_example``); a model fitted on a local cluster of two workers
#: (``fitted_example``).
_EXAMPLES = {
    "scored_example": (
        ">>> import dask.dataframe as dd",
        ">>> import pandas as pd",
        ">>> from distributed import Client, LocalCluster",
        ">>> from gbc_core import GradientBoostingClassifier",
        ">>> cluster = LocalCluster(n_workers=1, processes=False, dashboard_address=None)",
        ">>> client = Client(cluster)",
        '>>> X = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0], "b": [1.0, 0.0, 1.0, 0.0]})',
        '>>> model = GradientBoostingClassifier(n_estimators=3, max_depth=1).fit('
        'X, ["n", "n", "y", "y"])',
        ">>> ddf = dd.from_pandas(X, npartitions=2)",
    ),
    "fitted_example": (
        ">>> import dask.dataframe as dd",
        ">>> import numpy as np",
        ">>> import pandas as pd",
        ">>> from distributed import Client, LocalCluster",
        ">>> from gbc_core.dask import DaskGradientBoostingClassifier",
        ">>> cluster = LocalCluster(n_workers=2, processes=False, dashboard_address=None)",
        ">>> client = Client(cluster)",
        '>>> X = pd.DataFrame({"a": np.arange(40.0), "b": np.arange(40.0) % 3})',
        ">>> y = pd.Series((np.arange(40) >= 20).astype(int))",
        ">>> ddf, dy = dd.from_pandas(X, npartitions=2), dd.from_pandas(y, npartitions=2)",
        ">>> model = DaskGradientBoostingClassifier(n_estimators=5, max_depth=2, client=client)",
        ">>> model = model.fit(ddf, dy)",
    ),
}


def _with_examples(doc):
    """``doc`` with each of its ``{name}`` lines of :data:`_EXAMPLES` written out
    (with that line's indent); None (``python -OO``) stays None."""
    if doc is None:
        return None
    lines = []
    for line in doc.split("\n"):
        name = line.strip()[1:-1]
        if line.strip() == "{" + name + "}" and name in _EXAMPLES:
            indent = line[:len(line) - len(line.lstrip())]
            lines += [indent + example for example in _EXAMPLES[name]]
        else:
            lines.append(line)
    return "\n".join(lines)


_SCORING_DOC = """{summary}

    Parameters
    ----------
    model : GradientBoostingClassifier, Booster or bytes
        A fitted model, or its ``to_bytes()``.
    X : dask.dataframe.DataFrame or dask.array.Array of shape (n, n_features)
        A DataFrame's columns are selected by the model's feature names (any order,
        other columns ignored); an Array's columns are the model's features in order.
    n_jobs : int, optional
        Threads per task; default: the host's CPUs divided among its workers' threads
        (so the workers of a host do not oversubscribe it).
    client : distributed.Client, optional
        Default: the current client, if any.

    Returns
    -------
    {returns}

    Examples
    --------
    {{scored_example}}
    >>> from gbc_core.dask import {name}
    {example}
    >>> client.close()
    >>> cluster.close()
    """


def _scoring(name, block, kind, summary, returns, example):
    """The module's scoring function ``name``: ``_apply`` of ``block`` (one block's
    scores on a worker), with its docstring from :data:`_SCORING_DOC`."""

    def score(model, X, *, n_jobs=None, client=None):
        return _apply(model, X, block, n_jobs, client, kind)

    score.__name__ = score.__qualname__ = name
    score.__doc__ = _with_examples(_SCORING_DOC.format(
        summary=summary, returns=returns, name=name, example=example))
    return score


predict_proba = _scoring(
    "predict_proba", _proba_block, "proba",
    "Class probabilities of a Dask DataFrame or Array, scored on the workers.",
    "dask.array.Array of shape (n, n_classes), float64\n"
    "        Lazy; call ``.compute()``. Bit-identical to ``model.predict_proba``.",
    ">>> proba = predict_proba(model, ddf, client=client).compute()\n"
    "    >>> bool((proba == model.predict_proba(X)).all())\n    True")
predict = _scoring(
    "predict", _label_block, "label",
    "Predicted labels (the class of largest probability), scored on the workers.",
    "dask.array.Array of shape (n,)\n        Lazy; the labels of ``model.classes_``.",
    ">>> predict(model, ddf, client=client).compute().tolist()\n"
    "    ['n', 'n', 'y', 'y']")
decision_function = _scoring(
    "decision_function", _decision_block, "raw", "Raw scores F(x), scored on the workers.",
    "dask.array.Array of shape (n,) for two classes, (n, n_classes) otherwise\n"
    "        Lazy; bit-identical to ``model.decision_function``.",
    ">>> raw = decision_function(model, ddf, client=client).compute()\n"
    "    >>> bool((raw == model.decision_function(X)).all())\n    True")


def score_chunks(client, model, chunks, *, n_jobs=None, window=None):
    """Score an iterator of chunks (objects with an ``X`` array) on a cluster, in order.

    At most ``window`` chunks are in flight (default: two per worker thread), so
    memory stays bounded by the chunk size. Used by ``gbc-core predict --dask ADDRESS``.

    Parameters
    ----------
    client : distributed.Client or str
        A client, or a scheduler address (a client is opened and closed here).
    model : GradientBoostingClassifier, Booster or bytes
        A fitted model, or its ``to_bytes()``.
    chunks : iterable
        Objects with an ``X`` attribute: a float32 array (rows, the model's features).
    n_jobs : int, optional
        Threads per task (default: the host's CPUs divided among its workers' threads).
    window : int, optional
        Most chunks scored at once (default: two per worker thread).

    Yields
    ------
    chunk : object
        Each chunk, in the order of ``chunks``.
    raw : ndarray of shape (n_rows, n_outputs)
        Its raw scores.

    Examples
    --------
    {scored_example}
    >>> import types
    >>> from gbc_core.dask import score_chunks
    >>> chunks = [types.SimpleNamespace(X=X.to_numpy("float32")[i:i + 2]) for i in (0, 2)]
    >>> [raw.shape for _, raw in score_chunks(client, model, chunks)]
    [(2, 1), (2, 1)]
    >>> client.close()
    >>> cluster.close()
    """
    try:
        from distributed import Client
    except ImportError:
        raise ImportError('--dask needs dask.distributed: pip install "dask[distributed]" '
                          '(the dask extra, pip install ".[dask]" from a checkout)') from None
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


score_chunks.__doc__ = _with_examples(score_chunks.__doc__)


# ================================================================ training
# Data-parallel training of split_method="hist" (the model of LightGBM's
# data-parallel tree learner). The steps and checks of the fit are engine-neutral
# (``_data_parallel``: ``Part``, ``fit_parts``); this is their Dask transport
# (``_DaskTransport``). One actor per worker holding training partitions
# (``_PartActor``, a ``Part``) keeps that worker's rows, bins, raw scores and
# residuals for the whole fit and runs the boosting loop of
# ``_distributed.PartTrainer``; every sum over rows goes through the fit's
# all-reduce, which adds the ranks' arrays in rank order; every wait of the client
# goes through ``_wait_all`` (a lost worker named at once). The client sends
# parameters and receives the partitions' sketches, shapes and labels, and the
# trees: never X.
#
# The all-reduce. Where the cluster's connections are plain TCP (``tcp://``, or
# in-process), the socket all-reduce of ``_socket_allreduce``: before the fit, rank
# 0's actor listens on its worker's host (an ephemeral port) and every other rank's
# actor connects to it once with a random token of the fit (sent by the client
# through those two calls; a connection without it is closed); then each step is one
# round trip on that connection, rank to rank 0, without Dask's actors, scheduler
# or event loop (a Dask actor call costs several ms a step). Where the cluster's
# connections are encrypted (TLS, ``Security(require_encryption=True)``) or of
# another protocol, the ``_Coordinator`` actor on rank 0's worker does it, over
# Dask's own connections: the socket all-reduce sends the histograms unencrypted,
# so it is not used where the cluster encrypts; the coordinator also takes over
# where a rank cannot connect to rank 0's port (a firewall between the workers).
# Both add in rank order with ``_distributed.add_rank`` (as ``allreduce_local``):
# the same model, bit for bit.

#: Seconds a rank waits for the others at one step of a fit, by default.
DEFAULT_STEP_TIMEOUT = 120.0

#: Seconds a rank waits for the sum of a step between two looks at whether the
#: client has ended the fit (released the rank's actor).
_ENDED_POLL = 0.2

#: Seconds the client waits for the coordinator to take the abort of a fit that
#: ends in error (then it releases the actors all the same).
_ABORT_TIMEOUT = 5.0

#: Whether a fit on plain TCP connections reduces through the socket all-reduce
#: (``_socket_allreduce``); False: always through the ``_Coordinator`` actor.
_SOCKET_ALLREDUCE = True

#: Seconds the client waits, after a rank reports a lost connection, for the
#: scheduler to name the lost worker or for another rank's own error.
_LOST_WAIT = 3.0


class _Coordinator:
    """The all-reduce of a fit: waits for the array of every rank at a step and
    returns their sum (``_distributed.allreduce_local``, rank order) to each.

    Its methods are coroutines: they run on the worker's event loop, so waiting for
    the other ranks blocks no thread."""

    def __init__(self, n_ranks, timeout):
        self.n_ranks = n_ranks
        self.timeout = timeout
        self.steps = {}
        self.error = None

    def _entry(self, step):
        import asyncio

        entry = self.steps.get(step)
        if entry is None:
            entry = self.steps[step] = {"parts": [None] * self.n_ranks, "arrived": 0,
                                        "taken": 0, "result": None,
                                        "event": asyncio.Event()}
        return entry

    async def allreduce(self, step, rank, values, n_summed):
        import asyncio

        from ._distributed import allreduce_local

        if self.error is not None:
            raise RuntimeError(self.error)
        entry = self._entry(step)
        entry["parts"][rank] = values
        entry["arrived"] += 1
        if entry["arrived"] == self.n_ranks:
            try:
                entry["result"] = allreduce_local(entry["parts"], n_summed)
            except Exception as exc:  # noqa: BLE001 - every rank gets the error
                entry["result"] = exc
            entry["parts"] = None
            entry["event"].set()
        else:
            try:
                await asyncio.wait_for(entry["event"].wait(), self.timeout)
            except asyncio.TimeoutError:
                missing = [r for r, p in enumerate(entry["parts"] or []) if p is None]
                self.error = (f"distributed fit: rank(s) {missing} did not reach step "
                              f"{step} within {self.timeout:g} s (a worker lost or "
                              "stalled)")
                self._wake_all()
                raise RuntimeError(self.error) from None
        if self.error is not None:
            raise RuntimeError(self.error)
        entry["taken"] += 1
        if entry["taken"] == self.n_ranks:
            del self.steps[step]
        if isinstance(entry["result"], Exception):
            raise entry["result"]
        return entry["result"]

    def _wake_all(self):
        for entry in self.steps.values():
            entry["event"].set()

    async def abort(self, reason):
        """End the fit: every waiting and later step raises ``reason``."""
        if self.error is None:
            self.error = reason
        self._wake_all()
        return True


class _ActorComm:
    """``allreduce`` of one rank, through the coordinator actor (each call one step;
    every rank makes the same calls in the same order): where the socket
    all-reduce is not used.

    ``ended()`` is true once the client has ended the fit (it released the rank's
    actor: the fit failed, was interrupted, or the client left). The rank then
    stops at its next step, and while it waits for a step's sum it looks every
    ``_ENDED_POLL`` s: a rank whose coordinator was lost with its worker, or
    released before the rank's call reached it, gets no answer, and would hold its
    worker's actor thread (one per worker, shared by every actor there: the next
    fit's actors wait behind it) for ``step_timeout + 10`` s."""

    def __init__(self, coordinator, rank, timeout, ended):
        self.coordinator = coordinator
        self.rank = rank
        self.timeout = timeout
        self.ended = ended
        self.step = 0

    def _stop_if_ended(self):
        if self.ended():
            raise RuntimeError("distributed fit: ended by the client (the fit failed "
                               "elsewhere or was interrupted)")

    def allreduce(self, values, n_summed):
        import asyncio
        import concurrent.futures
        import inspect
        import time

        self._stop_if_ended()
        self.step += 1
        pending = self.coordinator.allreduce(self.step, self.rank,
                                             np.ascontiguousarray(values), n_summed)
        if inspect.iscoroutine(pending):
            # The coordinator lives on this worker: run its coroutine on the loop.
            from distributed import get_worker

            loop = get_worker().loop.asyncio_loop
            pending = asyncio.run_coroutine_threadsafe(pending, loop)
        deadline = time.monotonic() + self.timeout + 10
        while True:
            left = deadline - time.monotonic()
            try:
                return pending.result(timeout=max(0.0, min(_ENDED_POLL, left)))
            except (TimeoutError, asyncio.TimeoutError, concurrent.futures.TimeoutError):
                if left <= _ENDED_POLL:
                    raise
            if self.ended():
                if isinstance(pending, concurrent.futures.Future):
                    pending.cancel()  # the coordinator's wait, on this worker's loop
                self._stop_if_ended()


class _PartActor(Part):
    """The training rows of one worker for one fit: ``_data_parallel.Part`` as a
    Dask actor, whose ``fit`` reduces through the socket all-reduce of the fit
    (``listen`` on rank 0, ``connect`` on the others, before it) or, where that is
    not used, the fit's ``_Coordinator``."""

    _allreduce = None  # rank 0: its Listener; another rank: its connection to rank 0

    def _released(self):
        """Whether this actor's worker no longer holds it: the client released it (it
        cancels the actors when a fit ends, in error too, and the scheduler releases
        a client's keys when the client leaves)."""
        from distributed import get_worker

        return not any(actor is self for actor in list(get_worker().state.actors.values()))

    def _close_allreduce(self):
        held, self._allreduce = self._allreduce, None
        if held is not None:
            held.close()

    def listen(self, n_ranks, token):
        """Rank 0: open the fit's socket all-reduce on this worker's host (an
        ephemeral port); its (host, port), or None where it cannot listen there."""
        from distributed import get_worker
        from distributed.comm import get_address_host

        from ._socket_allreduce import Listener

        self._close_allreduce()
        address = get_worker().address
        # (An in-process cluster's ranks are this process: the loopback only, no
        # port open to the network.)
        host = "127.0.0.1" if address.startswith("inproc://") else get_address_host(address)
        try:
            self._allreduce = Listener(host, n_ranks, token)
        except (OSError, ValueError):
            return None
        return self._allreduce.address

    def connect(self, address, token, rank, n_ranks, timeout):
        """Another rank: connect to rank 0's all-reduce; None, or why it could not."""
        from ._socket_allreduce import connect

        self._close_allreduce()
        try:
            self._allreduce = connect(address, token, rank, n_ranks, timeout)
        except OSError as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    def close_allreduce(self):
        """Close this rank's side of the socket all-reduce (a fit that falls back
        to the coordinator)."""
        self._close_allreduce()

    def fit(self, coordinator, rank, timeout, n_classes, params, seed, lo, hi, previous):
        """This rank's part of the fit (``coordinator``: the ``_Coordinator``'s
        handle, or None for the socket all-reduce opened before); rank 0 returns
        (trees, init_raw, record)."""
        params = dict(params)
        wph = params.pop("_workers_per_host", {})
        n_ranks = params.pop("_n_ranks", 1)
        params["n_threads"] = _threads_of_worker(params.get("n_jobs"), wph)
        if coordinator is not None:
            comm = _ActorComm(coordinator, rank, timeout, self._released)
        else:
            comm = self._socket_comm(rank, n_ranks, timeout)
        try:
            result = super().fit(comm, n_classes, params, seed, lo, hi, previous)
        finally:
            if coordinator is None:
                comm.close()
            self._close_allreduce()
        return result if rank == 0 else None

    def _socket_comm(self, rank, n_ranks, timeout):
        from ._socket_allreduce import SocketComm

        held, self._allreduce = self._allreduce, None
        if rank == 0:
            sockets = [None] if held is None else held.accept(timeout, self._released,
                                                              _ENDED_POLL)
        else:
            if held is None:
                raise RuntimeError("distributed fit: this rank has no connection to "
                                   "rank 0's all-reduce")
            sockets = [held]
        if rank == 0 and len(sockets) != n_ranks:
            for sock in sockets:
                if sock is not None:
                    sock.close()
            raise RuntimeError(f"distributed fit: {len(sockets)} ranks connected, "
                               f"{n_ranks} expected")
        return SocketComm(rank, sockets, timeout, self._released, _ENDED_POLL)


def _threads_of_worker(n_jobs, workers_per_host):
    """The threads of this worker's part of a fit: ``n_jobs`` resolved here, so that
    a negative one counts this worker's CPUs, not the client's; None shares the
    host's CPUs among its workers (``_n_jobs_for_task``)."""
    from ._params import effective_n_threads

    if n_jobs is None:
        return _n_jobs_for_task(None, workers_per_host)
    return effective_n_threads(n_jobs)


def _parts_of(client, collections):
    """Per collection of ``collections`` ((Dask Array with its columns in one chunk,
    DataFrame or Series, name) pairs, or None for none): (futures of its row
    partitions in order, holder of each), or None. Computed where the cluster puts
    them (nothing is gathered), all in one request: one future per partition, from
    the collection's own ``to_delayed`` list, so that the order and the partitions
    are the collection's whatever its graph (``read_parquet``, ``from_pandas``, an
    array's chunks)."""
    from distributed import wait

    lists = []
    for named in collections:
        if named is None:
            lists.append([])
            continue
        collection = named[0]
        parts = collection.to_delayed()
        if isinstance(parts, np.ndarray):  # an array: one delayed per (row, column) chunk
            parts = parts.ravel().tolist()
        elif len(parts) != collection.npartitions:
            # The optimiser may merge partitions of a column selection (read_parquet's
            # small reads): X and y would no longer pair. The graph as written keeps
            # them.
            parts = collection.to_delayed(optimize_graph=False)
        lists.append(list(parts))
    futures = client.compute([p for parts in lists for p in parts])
    wait(futures)
    who = client.who_has(futures)
    out, start = [], 0
    for named, parts in zip(collections, lists):
        if named is None:
            out.append(None)
            continue
        mine = futures[start:start + len(parts)]
        start += len(parts)
        holders = []
        for f in mine:
            where = sorted(who.get(f.key, ()) or ())
            if not where:
                raise RuntimeError(f"{named[1]}: a partition is held by no worker")
            holders.append(where[0])
        out.append((mine, holders))
    return out


def _alive(client):
    """The workers of the cluster now (asked of the scheduler), or None when the
    scheduler does not answer."""
    try:
        try:
            info = client.sync(client.scheduler.identity, n_workers=-1)
        except TypeError:  # older distributed
            info = client.sync(client.scheduler.identity)
    except Exception:  # noqa: BLE001 - unknown: no conclusion drawn
        return None
    return set(info.get("workers", ()))


def _check_lost(client, ranks, what, cause=None):
    """A RuntimeError naming the workers of ``ranks`` that left the cluster during
    ``what``, if any did."""
    alive = _alive(client)
    lost = [] if alive is None else sorted(set(ranks) - alive)
    if lost:
        raise RuntimeError(
            f"distributed fit: worker(s) {lost} left the cluster during {what}; the "
            "fit cannot go on without their rows"
            + ("" if cause is None else f" ({type(cause).__name__}: {cause})"))


def _wait_all(client, futures, ranks, what, timeout=None):
    """The results of ``futures`` (actor calls or the actors themselves, one per
    rank in ``ranks``); a clear error, never a hang, when a rank fails or its worker
    leaves the cluster, or (``timeout`` seconds) does not answer. (The fit itself
    has no overall bound: each of its steps has one, in the coordinator.)"""
    import time

    deadline = None if timeout is None else time.monotonic() + timeout

    def check_lost(cause=None):
        _check_lost(client, ranks, what, cause)

    checked = 0.0
    while True:
        done = [f.done() for f in futures]
        for f, d in zip(futures, done):
            if d:
                try:
                    f.result()
                except (ValueError, TypeError):
                    raise  # bad input, found where its rows are: the in-memory error
                except Exception as exc:
                    if isinstance(exc, (OSError, LostPeer)):
                        # The actor's worker is gone, or a rank's peer: name the lost
                        # worker once the scheduler knows, else another rank's own
                        # error (a rank that failed closes its connections).
                        exc = _cause_of_lost(client, futures, ranks, what, exc)
                    raise RuntimeError(f"distributed fit: {what} failed on a worker: "
                                       f"{type(exc).__name__}: {exc}") from exc
        if all(done):
            return [f.result() for f in futures]
        now = time.monotonic()
        if now - checked > 0.5:
            checked = now
            check_lost()
        if deadline is not None and now > deadline:
            slow = [r for r, d in zip(ranks, done) if not d]
            raise RuntimeError(f"distributed fit: worker(s) {slow} did not finish "
                               f"{what} within {timeout:g} s (step_timeout)")
        # Wait for the first rank still running, until the next look at the
        # workers or the deadline (no polling: the client's process stays idle
        # through a fit); its result or error is taken on the next pass.
        wait = 0.5 - (now - checked)
        if deadline is not None:
            wait = min(wait, deadline - now)
        try:
            next(f for f, d in zip(futures, done) if not d).result(
                timeout=max(0.01, wait))
        except Exception:  # noqa: BLE001 - timed out, or done in error: seen above
            pass


def _cause_of_lost(client, futures, ranks, what, exc):
    """After ``exc`` (a rank's OSError or ``LostPeer``): the error of the workers
    that left the cluster (raised) once the scheduler names them, within
    ``_LOST_WAIT`` s; else the first error of a rank that is not such an error
    (a ValueError or TypeError raised as is); else ``exc``."""
    import time

    end = time.monotonic() + _LOST_WAIT
    while True:
        _check_lost(client, ranks, what, exc)
        for f in futures:
            if not f.done():
                continue
            try:
                f.result()
            except (ValueError, TypeError):
                raise
            except (OSError, LostPeer):
                pass
            except Exception as other:  # noqa: BLE001 - the rank's own error
                return other
        if time.monotonic() > end:
            return exc
        time.sleep(0.25)


def _as_dask(obj, name, row_chunks):
    """``obj`` as a Dask collection partitioned like X (NumPy/pandas are wrapped)."""
    import dask.array as da

    if obj is None or hasattr(obj, "__dask_graph__"):
        return obj
    arr = np.asarray(obj)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if row_chunks is None:
        raise TypeError(f"{name} must be a Dask Series or Array when X is a Dask "
                        "DataFrame")
    if arr.shape[0] != sum(row_chunks):
        raise ValueError(f"{name} has {arr.shape[0]} rows, X has {sum(row_chunks)}")
    return da.from_array(arr, chunks=(row_chunks,))


def _dask_X(X, name):
    """(X with its columns in one chunk, its row chunks or None, feature names)."""
    import dask.array as da

    from ._validation import feature_names_of

    if isinstance(X, da.Array):
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got {X.ndim}-D")
        if X.numblocks[1] != 1:
            X = X.rechunk({1: -1})
        if any(np.isnan(c) for c in X.chunks[0]):
            X = X.compute_chunk_sizes()
        return X, X.chunks[0], None
    if hasattr(X, "to_delayed") and hasattr(X, "npartitions") and hasattr(X, "_meta"):
        return X, None, feature_names_of(X._meta)
    raise TypeError(f"{name} must be a Dask Array or DataFrame, got {type(X).__name__}")


def _align_names(X, names):
    """``X`` (pandas or Dask DataFrame) with the columns ``names`` in that order
    (other columns ignored); anything else as is."""
    from ._validation import align_columns, feature_names_of

    if hasattr(X, "__dask_graph__") and hasattr(X, "_meta"):
        given = feature_names_of(X._meta)
        if given is None or np.array_equal(given, names):
            return X
        align_columns(X._meta, names, "eval_set X")  # the errors of a missing name
        return X[list(names)]
    return align_columns(X, names, "eval_set X")


def _align_y(y, X, row_chunks, name):
    import dask.array as da

    y = _as_dask(y, name, row_chunks)
    if y is None:
        return None
    if isinstance(y, da.Array) and row_chunks is not None:
        if y.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got {y.ndim}-D")
        if any(np.isnan(c) for c in y.chunks[0]):  # e.g. a DataFrame column's values
            y = y.compute_chunk_sizes()
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"{name} has {y.shape[0]} rows, X has {X.shape[0]}")
        if y.chunks[0] != row_chunks:
            y = y.rechunk((row_chunks,))
    elif getattr(y, "npartitions", None) != getattr(X, "npartitions", None) and (
            not isinstance(y, da.Array) or len(y.chunks[0]) != X.npartitions):
        raise ValueError(f"{name} must have the partitions of X ({X.npartitions}), got "
                         f"{getattr(y, 'npartitions', None) or len(y.chunks[0])}")
    return y


def _eval_collections(eval_set, names):
    """``eval_set`` as Dask collections (X_val, y_val, w_val or None), or None."""
    if eval_set is None:
        return None
    if isinstance(eval_set, list) and eval_set and all(
            isinstance(s, tuple) for s in eval_set):
        raise ValueError(
            "eval_set: the distributed fit takes one evaluation set, a tuple (X_val, "
            "y_val) or (X_val, y_val, w_val), not a list of them (several named "
            "evaluation sets, eval_metric and scoring other than 'loss' are trained "
            "in memory only)")
    if not isinstance(eval_set, (tuple, list)) or len(eval_set) not in (2, 3):
        raise ValueError("eval_set must be a tuple (X_val, y_val) or "
                         "(X_val, y_val, w_val)")
    Xv = eval_set[0]
    if names is not None:
        Xv = _align_names(Xv, names)  # by name, as in memory
    if not hasattr(Xv, "__dask_graph__"):
        import dask.array as da

        from ._validation import _dataframe_library, check_features

        if _dataframe_library(Xv) == "pandas":
            # One partition, converted by a part as X's are (categorical columns
            # encoded with the fit's categories).
            import dask.dataframe as dd

            Xv = dd.from_pandas(Xv, npartitions=1)
            eval_set = [eval_set[0]] + [
                v if v is None or hasattr(v, "__dask_graph__")
                else da.from_array(np.asarray(v), chunks=-1) for v in eval_set[1:]]
        else:
            Xv = da.from_array(check_features(Xv, "eval_set X", dtype=np.float32))
    Xv, v_chunks, _ = _dask_X(Xv, "eval_set X")
    yv = _align_y(eval_set[1], Xv, v_chunks, "eval_set y")
    wv = (_align_y(eval_set[2], Xv, v_chunks, "eval_set sample_weight")
          if len(eval_set) == 3 else None)
    return Xv, yv, wv


def _placed_parts(client, X, y, w, evals):
    """(the workers holding X's partitions, in rank order; each one's arguments of
    ``_PartActor``: the futures of its partitions of X, y, w, its share of the
    ``eval_set`` partitions, its partitions' numbers)."""
    Xv, yv, wv = (None, None, None) if evals is None else evals
    found = _parts_of(client, [
        (X, "X"), (y, "y"), None if w is None else (w, "sample_weight"),
        None if evals is None else (Xv, "eval_set X"),
        None if evals is None else (yv, "eval_set y"),
        None if wv is None else (wv, "eval_set sample_weight")])
    (xf, holders), (yf, _) = found[:2]
    wf = found[2][0] if w is not None else None
    if len(yf) != len(xf) or (wf is not None and len(wf) != len(xf)):
        raise ValueError("X, y and sample_weight must have the same partitions")
    ranks = sorted(set(holders))
    eval_for = {r: None for r in ranks}
    if evals is not None:
        # Each validation partition to the rank holding it, else one in turn.
        (vf, vholders), (vyf, _) = found[3:5]
        vwf = found[5][0] if wv is not None else None
        eval_for = {r: ([], [], [] if vwf is not None else None, []) for r in ranks}
        for i, holder in enumerate(vholders):
            r = holder if holder in eval_for else ranks[i % len(ranks)]
            eval_for[r][0].append(vf[i])
            eval_for[r][1].append(vyf[i])
            if vwf is not None:
                eval_for[r][2].append(vwf[i])
            eval_for[r][3].append(i)
    mine = [[i for i, h in enumerate(holders) if h == addr] for addr in ranks]
    return ranks, [([xf[i] for i in m], [yf[i] for i in m],
                    None if wf is None else [wf[i] for i in m], eval_for[addr], m)
                   for addr, m in zip(ranks, mine)]


class _DaskTransport:
    """The transport of ``_data_parallel.fit_parts`` on Dask: one ``_PartActor``
    per worker holding partitions (pinned there); every wait through
    :func:`_wait_all` (bounded by ``timeout``, a lost worker named at once), the
    fit's through each step's bound in its all-reduce: the socket all-reduce
    (``_socket_allreduce``: rank 0 listens on its worker's host, the others connect
    to it with the fit's token, once, before the fit) where the cluster's
    connections are plain TCP, else (TLS or another protocol, or where the ranks
    cannot reach rank 0's port) the ``_Coordinator`` actor on the first rank."""

    def __init__(self, client, ranks, timeout):
        self.client = client
        self.ranks = ranks
        self.timeout = timeout
        self.futures = []
        self.handles = []
        self.coordinator = None

    def start(self, parts):
        """One actor per rank (``parts``: each one's arguments)."""
        for addr, args in zip(self.ranks, parts):
            self.futures.append(self.client.submit(
                _PartActor, *args, workers=[addr], allow_other_workers=False, actor=True,
                pure=False))
        # (A worker lost before its actor starts ends the fit here, at once.)
        self.handles = _wait_all(self.client, self.futures, self.ranks,
                                 "the start of the fit's actors", self.timeout)

    def _start_coordinator(self):
        future = self.client.submit(_Coordinator, len(self.ranks), self.timeout,
                                    workers=[self.ranks[0]], actor=True, pure=False)
        self.futures.append(future)
        [self.coordinator] = _wait_all(self.client, [future], self.ranks[:1],
                                       "the start of the fit's coordinator", self.timeout)

    def _open_sockets(self):
        """Open the socket all-reduce of the fit (rank 0 listens, the others connect
        with a new token); False where it is not used (then nothing stays open)."""
        from ._socket_allreduce import new_token

        if not (_SOCKET_ALLREDUCE and _plain_tcp(self.client, self.ranks)):
            return False
        n = len(self.ranks)
        if n == 1:
            return True
        token = new_token()
        what = "the start of the fit's all-reduce"
        try:
            [address] = _wait_all(self.client, [self.handles[0].listen(n, token)],
                                  self.ranks[:1], what, self.timeout)
            if address is not None:
                refused = _wait_all(self.client, [
                    h.connect(address, token, r, n, self.timeout)
                    for r, h in enumerate(self.handles) if r > 0], self.ranks[1:], what,
                    self.timeout)
                if all(why is None for why in refused):
                    return True
        except BaseException:
            # (A worker lost while the ranks connect: the others' sockets closed
            # now, not when their actors are collected.)
            for handle in self.handles:
                try:
                    handle.close_allreduce()
                except Exception:  # noqa: BLE001 - that worker is gone
                    pass
            raise
        self.call("close_allreduce", [()] * n, what)
        return False

    def call(self, method, args, what):
        try:
            futures = [getattr(h, method)(*a) for h, a in zip(self.handles, args)]
        except Exception as exc:  # noqa: BLE001 - an actor whose worker is already gone
            import time

            time.sleep(0.5)  # the scheduler notices a lost worker
            _check_lost(self.client, self.ranks, what, exc)
            raise RuntimeError(f"distributed fit: {what} failed on a worker: "
                               f"{type(exc).__name__}: {exc}") from exc
        return _wait_all(self.client, futures, self.ranks, what, self.timeout)

    def fit(self, args):
        n_classes, params, *rest = args
        params = dict(params, _workers_per_host=workers_per_host(self.client),
                      _n_ranks=len(self.ranks))
        if self.coordinator is None and not self._open_sockets():
            self._start_coordinator()
        return _wait_all(self.client, [
            h.fit(self.coordinator, r, self.timeout, n_classes, params, *rest)
            for r, h in enumerate(self.handles)], self.ranks, "the fit")

    def abort(self, reason):
        """End every rank's waits (a fit that ends in error or is interrupted): the
        coordinator's at once; the socket all-reduce's ranks see their actors
        released (``close``) within ``_ENDED_POLL``."""
        if self.coordinator is not None:
            try:
                self.coordinator.abort(reason).result(timeout=_ABORT_TIMEOUT)
            except Exception:  # noqa: BLE001 - its worker may be gone
                pass

    def close(self):
        """Release the actors (a rank still running sees it and stops, closing its
        sockets)."""
        self.handles = self.coordinator = None
        self.client.cancel(self.futures, force=True)


def _plain_tcp(client, ranks):
    """Whether the cluster's connections are unencrypted TCP (or in-process), so
    that the socket all-reduce, plain TCP, sends nothing the cluster would have
    encrypted."""
    security = getattr(client, "security", None)
    if security is not None and getattr(security, "require_encryption", False):
        return False
    return all(str(addr).split("://", 1)[0] in ("tcp", "inproc") for addr in ranks)


_SCORED_METHOD_DOC = """{summary}

    Parameters
    ----------
    X : array-like, dask.dataframe.DataFrame or dask.array.Array of shape (n, n_features)
        Rows to score: Dask input is scored on the workers, anything else in this
        process.

    Returns
    -------
    {returns}

    Examples
    --------
    {{fitted_example}}
    {example}
    >>> client.close()
    >>> cluster.close()
    """


def _scored_method(name, summary, returns, example):
    """The estimator's method ``name``: Dask input scored on the workers (this
    module's function of that name), anything else by the in-memory model."""

    def method(self, X):
        if hasattr(X, "__dask_graph__"):
            return globals()[name](self._booster(), X, n_jobs=self.n_jobs,
                                   client=self.client)
        return getattr(self._local(), name)(X)

    method.__name__ = name
    method.__qualname__ = f"DaskGradientBoostingClassifier.{name}"
    method.__doc__ = _with_examples(_SCORED_METHOD_DOC.format(
        summary=summary, returns=returns, example=example))
    return method


class DaskGradientBoostingClassifier:
    """Gradient boosting trained on a Dask cluster (``split_method="hist"``).

    The parameters of :class:`gbc_core.GradientBoostingClassifier` (taken from the
    one parameter table, ``_params.PARAMS``; the split method defaults to
    ``"hist"``, the only one trained here) plus ``client`` and ``step_timeout``.
    ``fit`` takes Dask Arrays or DataFrames partitioned across the workers: the rows
    stay where they are, each worker holding its partitions binned and their
    residual state for the whole fit in an actor; per level the workers'
    histograms are summed in worker order, so every worker chooses the same splits.
    Where every feature has at most ``max_bins`` distinct values, the model is the
    single-process hist fit of the concatenated rows (up to the rounding of sums
    formed per worker), for any partitioning, with ``subsample`` (each worker draws
    the in-memory fit's in-bag rows over every row and keeps its own: it pays that
    draw, up to 17 bytes per training row of the whole data, and keeps its rows'
    float32 values for the fit), early stopping with ``eval_set`` or the
    ``validation_fraction`` hold-out (the in-memory hold-out, drawn by the rows'
    places in the concatenated data), ``warm_start`` (with the data of the first
    fit), both losses, both leaf solvers (``leaf_solver="exact"``: every Newton
    iteration of the leaves reduces its sums), ``init="zero"`` or ``"prior"``,
    sample and class weights.

    Not supported (a clear error naming the parameter): ``split_method="exact"`` and
    an ``init`` estimator (scikit-learn fits it on the training rows, which never
    leave their workers); any parameter of the table the distributed fit has not
    been taught, away from its default. ``n_jobs`` is the threads of each worker's
    part, resolved on that worker (a negative value counts its CPUs; None, the
    default, shares its host's CPUs among the host's workers). ``verbose``
    prints nothing (the loop runs on the workers); ``train_score_``,
    ``validation_score_`` and ``oob_scores_`` hold the losses.

    Parameters
    ----------
    {table_parameters}
        As :class:`gbc_core.GradientBoostingClassifier`'s, with the defaults of
        its parameter table (``split_method`` must be ``"hist"``; what the
        distributed fit does not support is refused by ``fit``).
    client : distributed.Client, optional
        Default: the current client. The fit runs on this client even where it is
        not the process's default one. ``sklearn.base.clone`` shares it; pickle
        leaves it out (None once unpickled: the current client).
    step_timeout : float, default=120
        Seconds a worker waits for the others at one step of the fit before the fit
        ends with an error (a worker that left the cluster ends it at once).

    Attributes
    ----------
    booster_ : Booster
        The fitted model; the fitted attributes of the in-memory estimator are read
        through :meth:`to_local`.

    Examples
    --------
    {fitted_example}
    >>> local = model.to_local()          # a GradientBoostingClassifier: save, load, ...
    >>> local.n_estimators_
    5
    >>> client.close()
    >>> cluster.close()
    """

    # __init__ (below the class) takes every parameter of ``_params.PARAMS``, with
    # its default (``split_method``: "hist"), and ``client`` and ``step_timeout``.

    _OWN = ("client", "step_timeout")

    def get_params(self, deep=True):
        """The parameters (scikit-learn's convention).

        Parameters
        ----------
        deep : bool, default=True
            Unused (no sub-estimators); scikit-learn's signature.

        Returns
        -------
        dict
            Every hyper-parameter, ``client`` and ``step_timeout``.

        Examples
        --------
        >>> from gbc_core.dask import DaskGradientBoostingClassifier
        >>> DaskGradientBoostingClassifier(max_bins=64).get_params()["max_bins"]
        64
        """
        import inspect

        names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
        return {name: getattr(self, name) for name in names}

    def __sklearn_clone__(self):
        """scikit-learn's ``clone``: a new estimator with the parameters copied and
        the same ``client`` (a live connection, shared, not copied).

        Examples
        --------
        >>> from sklearn.base import clone
        >>> from gbc_core.dask import DaskGradientBoostingClassifier
        >>> clone(DaskGradientBoostingClassifier(max_bins=64)).max_bins
        64
        """
        from sklearn.base import clone

        return type(self)(**{name: value if name == "client" else clone(value, safe=False)
                             for name, value in self.get_params().items()})

    def __getstate__(self):
        """What pickle keeps: everything but the ``client`` (a live connection), which
        an unpickled estimator leaves as None (the current client), as LightGBM's
        Dask estimators do."""
        return dict(self.__dict__, client=None)

    def set_params(self, **params):
        """Set parameters (scikit-learn's convention).

        Parameters
        ----------
        **params : dict
            Parameter names and values; an unknown name is a ValueError.

        Returns
        -------
        self

        Examples
        --------
        >>> from gbc_core.dask import DaskGradientBoostingClassifier
        >>> DaskGradientBoostingClassifier().set_params(n_estimators=20).n_estimators
        20
        """
        valid = self.get_params()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"invalid parameter {key!r} for {type(self).__name__}")
            setattr(self, key, value)
        return self

    def _model_params(self):
        return {k: v for k, v in self.get_params().items() if k not in self._OWN}

    # --------------------------------------------------------------------- fit
    def fit(self, X, y, sample_weight=None, eval_set=None):
        """Fit on the workers holding ``X``'s partitions.

        Parameters
        ----------
        X : dask.array.Array or dask.dataframe.DataFrame of shape (n, n_features)
        y : dask Array or Series partitioned like X (or a NumPy array with X an Array)
        sample_weight : like y, optional
        eval_set : tuple (X_val, y_val) or (X_val, y_val, w_val), optional
            Validation rows (Dask or NumPy/pandas); their loss is summed on the
            workers after each iteration (``validation_score_``, early stopping
            with ``n_iter_no_change``).

        Returns
        -------
        self
            The fitted estimator (``booster_``).

        Examples
        --------
        {fitted_example}
        >>> model.booster_.n_estimators_
        5
        >>> client.close()
        >>> cluster.close()
        """
        _import_dask()
        from ._distributed import check_supported
        from ._params import check_params

        params = check_params(self._model_params())
        check_supported(params)
        timeout = float(self.step_timeout)
        if not timeout > 0:
            raise ValueError(f"step_timeout must be > 0, got {self.step_timeout!r}")
        client = _get_client(self.client)
        if client is None:
            raise ValueError("DaskGradientBoostingClassifier needs a distributed Client "
                             "(client=..., or a current one)")
        # Every Dask call of the fit (``wait``, chunk sizes, the actors' handles) goes
        # to this client, also where it is not the process's default one (the command
        # line's, ``Client(address, set_as_default=False)``).
        with client.as_current():
            return self._fit_on(client, params, timeout, X, y, sample_weight, eval_set)

    def _fit_on(self, client, params, timeout, X, y, sample_weight, eval_set):
        """``fit`` once the parameters are checked, with ``client`` current: the
        partitions placed, one actor started per worker holding some, then the
        steps of ``_data_parallel.fit_parts``."""
        from ._data_parallel import fit_parts

        warm, seed = self._seed_of_fit(params)
        X, row_chunks, names = _dask_X(X, "X")
        y = _align_y(y, X, row_chunks, "y")
        w = _align_y(sample_weight, X, row_chunks, "sample_weight")
        evals = _eval_collections(eval_set, names)
        ranks, parts = _placed_parts(client, X, y, w, evals)
        del X, y, w, evals
        transport = _DaskTransport(client, ranks, timeout)
        try:
            transport.start(parts)
            del parts  # (the actors hold the partitions now)
            booster = fit_parts(transport, params, seed, has_eval_set=eval_set is not None,
                                names=names, warm=self.booster_ if warm else None,
                                model_params=self._model_params())
        except BaseException:
            transport.abort("distributed fit: interrupted by the client")
            raise
        finally:
            transport.close()
        if booster is not None:
            self.booster_ = booster
            self.__dict__.pop("_local_model", None)
        return self

    def _seed_of_fit(self, params):
        """(whether the fit continues the fitted model, the fit's seed). One seed per
        model, as in memory: a warm start goes on with the seed of the first fit;
        an integer random_state is the seed, any other is drawn from once."""
        warm = params["warm_start"] and "booster_" in self.__dict__
        if not warm:
            self.__dict__.pop("booster_", None)
            self.__dict__.pop("_seed", None)
            self.__dict__.pop("_local_model", None)
        seed = self.__dict__.get("_seed")
        if seed is None:
            seed = _seed_from(params["random_state"])
            if not isinstance(params["random_state"], (int, np.integer)):
                self._seed = seed
        return warm, seed

    # ----------------------------------------------------------------- predict
    def _booster(self):
        if "booster_" not in self.__dict__:
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. "
                                 "Call 'fit' with appropriate arguments before using this "
                                 "estimator.")
        return self.booster_

    def to_local(self):
        """The fitted model as a plain :class:`gbc_core.GradientBoostingClassifier`
        (save, load, the command line, everything).

        Returns
        -------
        GradientBoostingClassifier
            Fitted, with this estimator's parameters.

        Examples
        --------
        {fitted_example}
        >>> local = model.to_local()
        >>> local.n_estimators_, bool((local.predict_proba(X) == model.predict_proba(X)).all())
        (5, True)
        >>> client.close()
        >>> cluster.close()
        """
        from ._classifier import GradientBoostingClassifier

        return GradientBoostingClassifier.from_bytes(
            self._booster().to_bytes(params=self._model_params()))

    def trees(self):
        """The fitted trees (see ``GradientBoostingClassifier.trees``).

        Returns
        -------
        list of ndarray
            One node array (``gbc_core.NODE_DTYPE``) per tree, in iteration order.

        Examples
        --------
        {fitted_example}
        >>> len(model.trees())
        5
        >>> client.close()
        >>> cluster.close()
        """
        return self._local().trees()

    def _local(self):
        local = self.__dict__.get("_local_model")
        if local is None:
            local = self.__dict__["_local_model"] = self.to_local()
        return local

    predict_proba = _scored_method(
        "predict_proba", "Class probabilities: a NumPy array for NumPy/pandas input, a "
        "lazy Dask Array\n    for Dask input (scored on the workers).",
        "ndarray or dask.array.Array of shape (n, n_classes)",
        ">>> proba = model.predict_proba(ddf).compute()\n"
        "    >>> bool((proba == model.predict_proba(X)).all())\n    True")
    predict = _scored_method(
        "predict", "Predicted labels (NumPy, or Dask for Dask input).",
        "ndarray or dask.array.Array of shape (n,)",
        ">>> model.predict(X.iloc[[0, 39]]).tolist()\n    [0, 1]")
    decision_function = _scored_method(
        "decision_function", "Raw scores F(x) (NumPy, or Dask for Dask input).",
        "ndarray or dask.array.Array of shape (n,) for two classes, (n, n_classes) "
        "otherwise",
        ">>> model.decision_function(ddf).compute().shape\n    (40,)")

    def __getattr__(self, name):
        # The fitted attributes of the in-memory estimator (classes_, n_estimators_,
        # train_score_, ...).
        if name.endswith("_") and not name.startswith("_") and "booster_" in self.__dict__:
            return getattr(self._local(), name)
        raise AttributeError(name)


def _estimator_init():
    """``DaskGradientBoostingClassifier.__init__`` from the parameter table: every
    parameter of ``_params.PARAMS`` (a parameter added there reaches this estimator
    without a second list; ``_distributed.check_supported`` refuses at fit the
    values the distributed fit does not train), then ``client`` and
    ``step_timeout``."""
    import inspect

    from ._params import PARAMS

    defaults = {p.name: p.default for p in PARAMS}
    defaults["split_method"] = "hist"
    defaults.update(client=None, step_timeout=DEFAULT_STEP_TIMEOUT)
    names = tuple(defaults)

    def __init__(self, *args, **kwargs):
        if args:
            raise TypeError(f"{type(self).__name__} takes keyword arguments only")
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise TypeError(f"{type(self).__name__} got unexpected keyword argument(s) "
                            f"{', '.join(unknown)}")
        for name in names:
            setattr(self, name, kwargs.get(name, defaults[name]))

    __init__.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=defaults[name])
           for name in names])
    __init__.__qualname__ = "DaskGradientBoostingClassifier.__init__"
    return __init__


DaskGradientBoostingClassifier.__init__ = _estimator_init()
# The docstring's parameter list from the same table (numpydoc's check reads it).
DaskGradientBoostingClassifier.__doc__ = _with_examples(
    DaskGradientBoostingClassifier.__doc__).replace(
    "{table_parameters}", ", ".join(p.name for p in _PARAMS))
for _method in (DaskGradientBoostingClassifier.fit, DaskGradientBoostingClassifier.to_local,
                DaskGradientBoostingClassifier.trees):
    _method.__doc__ = _with_examples(_method.__doc__)
del _method
