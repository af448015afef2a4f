"""The data-parallel fit over local processes: the second transport of
``_data_parallel`` (not public API; the tests prove the seam with it).

Each rank is a process of its own (``multiprocessing``, spawned) holding a
``_data_parallel.Part``; the client talks to it over one pipe: it sends a step and
takes the answer, and during the fit it is the all-reduce, taking each rank's array
of a step and sending back their sum in rank order (``_distributed.allreduce_local``).
Every wait is bounded by ``step_timeout`` (a clear error naming the ranks that did not
answer); a process that dies is named at once; the processes end with the fit,
whichever way it ends.
"""

import multiprocessing
import time
from multiprocessing.connection import wait

import numpy as np

from ._data_parallel import Part, fit_parts
from ._distributed import allreduce_local


class _PipeComm:
    """A rank's ``comm``: each ``allreduce`` is sent to the client, its sum awaited."""

    def __init__(self, conn, timeout):
        self.conn = conn
        self.timeout = timeout

    def allreduce(self, values, n_summed):
        self.conn.send(("reduce", np.ascontiguousarray(values, dtype=np.float64), n_summed))
        if not self.conn.poll(self.timeout):
            raise RuntimeError(f"local fit: no sum within {self.timeout:g} s (step_timeout)")
        kind, total = self.conn.recv()
        if kind != "sum":
            raise RuntimeError("local fit: ended by the client")
        return total


def _serve(conn, timeout):
    """A rank's process: the client's calls on its part, until told to stop (or
    ``timeout`` s without one)."""
    from ._params import effective_n_threads

    part = None
    while conn.poll(timeout):
        method, args = conn.recv()
        try:
            if method == "stop":
                return
            if method == "start":
                part, result = Part(*args), None
            elif method == "fit":
                n_classes, params, *rest = args
                n_jobs = params.get("n_jobs")
                params = dict(params, n_threads=1 if n_jobs is None
                              else effective_n_threads(n_jobs))
                result = part.fit(_PipeComm(conn, timeout), n_classes, params, *rest)
            else:
                result = getattr(part, method)(*args)
            conn.send(("done", result))
        except Exception as exc:  # noqa: BLE001 - the client raises it
            try:
                conn.send(("error", exc))
            except Exception:  # noqa: BLE001 - an exception that does not pickle
                conn.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))


class LocalProcesses:
    """The transport (``_data_parallel.Transport``) of ``n`` local processes."""

    def __init__(self, n, timeout):
        context = multiprocessing.get_context("spawn")
        self.timeout = timeout
        self.ranks = list(range(n))
        self.conns, self.procs = [], []
        for _ in self.ranks:
            ours, theirs = context.Pipe()
            proc = context.Process(target=_serve, args=(theirs, timeout), daemon=True)
            proc.start()
            theirs.close()
            self.conns.append(ours)
            self.procs.append(proc)

    def start(self, parts):
        self.call("start", parts, "the start of the parts")

    def call(self, method, args, what):
        for rank, (conn, a) in enumerate(zip(self.conns, args)):
            self._send(rank, (method, a), what)
        return self._answers(what)

    def fit(self, args):
        return self.call("fit", [args] * len(self.ranks), "the fit")

    def _send(self, rank, message, what):
        try:
            self.conns[rank].send(message)
        except OSError:
            self._lost(rank, what)

    def _lost(self, rank, what):
        self.procs[rank].join(1.0)
        raise RuntimeError(f"local fit: process {rank} was lost during {what} (exit code "
                           f"{self.procs[rank].exitcode}); the fit cannot go on without "
                           "its rows")

    def _reduce(self, arrays, n_summed):
        return allreduce_local(arrays, n_summed)

    def _answers(self, what):
        """Every rank's answer to a call, serving their all-reduces meanwhile."""
        n = len(self.ranks)
        results, done, sent = [None] * n, [False] * n, {}
        deadline = time.monotonic() + self.timeout
        while not all(done):
            ready = wait(self.conns + [p.sentinel for p in self.procs],
                         max(0.0, deadline - time.monotonic()))
            if not ready:
                slow = [r for r in self.ranks if not done[r] and r not in sent]
                raise RuntimeError(f"local fit: process(es) {slow} did not finish {what} "
                                   f"within {self.timeout:g} s (step_timeout)")
            for rank, conn in enumerate(self.conns):
                if conn not in ready:
                    continue
                try:
                    kind, *value = conn.recv()
                except (EOFError, OSError):
                    self._lost(rank, what)
                deadline = time.monotonic() + self.timeout  # (a step taken)
                if kind == "error":
                    exc = value[0]
                    if isinstance(exc, (ValueError, TypeError)):
                        raise exc  # bad input, found where its rows are
                    raise RuntimeError(f"local fit: {what} failed in process {rank}: "
                                       f"{type(exc).__name__}: {exc}") from exc
                if kind == "done":
                    results[rank], done[rank] = value[0], True
                    continue
                sent[rank] = value
                if len(sent) == n:
                    total = self._reduce([sent[r][0] for r in self.ranks], sent[0][1])
                    sent = {}
                    for r in self.ranks:
                        self._send(r, ("sum", total), what)
            for rank, proc in enumerate(self.procs):
                if proc.sentinel in ready:
                    self._lost(rank, what)
        return results

    def close(self, failed=False):
        """End the processes: asked to stop, killed where the fit failed or they
        do not stop in time."""
        for conn in self.conns:
            try:
                conn.send(("stop", None))
            except OSError:
                pass
        for proc in self.procs:
            proc.join(0.0 if failed else 5.0)
            if proc.is_alive():
                proc.kill()
                proc.join(5.0)
        for conn in self.conns:
            conn.close()


def fit_local(X, y, sample_weight=None, eval_set=None, *, n_processes=2, cuts=None,
              step_timeout=60.0, transport=LocalProcesses, **params):
    """``GradientBoostingClassifier(split_method="hist", **params)`` fitted over
    ``n_processes`` local processes: the rows cut into partitions at ``cuts``
    (default: one per process), partition i held by rank i % n_processes, the
    ``eval_set`` rows by rank 0. Returns the fitted GradientBoostingClassifier."""
    from ._classifier import GradientBoostingClassifier

    booster, model_params = fit_local_booster(
        X, y, sample_weight, eval_set, n_processes=n_processes, cuts=cuts,
        step_timeout=step_timeout, transport=transport, **params)
    return GradientBoostingClassifier.from_bytes(booster.to_bytes(params=model_params))


def fit_local_booster(X, y, sample_weight=None, eval_set=None, *, n_processes=2, cuts=None,
                      step_timeout=60.0, transport=LocalProcesses, **params):
    """:func:`fit_local`'s fit: (the Booster, the parameters it records)."""
    from ._classifier import GradientBoostingClassifier
    from ._distributed import check_supported
    from ._params import check_params, seed_from as _seed_from
    from ._validation import feature_names_of

    model_params = GradientBoostingClassifier(split_method="hist", **params).get_params()
    checked = check_params(model_params)
    check_supported(checked)
    y = np.asarray(y)
    if cuts is None:
        cuts = np.linspace(0, y.shape[0], n_processes + 1).astype(int)
    slices = [slice(a, b) for a, b in zip(cuts[:-1], cuts[1:])]
    parts = []
    for rank in range(n_processes):
        numbers = list(range(rank, len(slices), n_processes))
        evals = None
        if eval_set is not None:
            given = [[v] if rank == 0 else [] for v in eval_set]
            evals = (*given[:2], given[2] if len(eval_set) == 3 else None,
                     [0] if rank == 0 else [])
        parts.append(([X[slices[i]] for i in numbers], [y[slices[i]] for i in numbers],
                      None if sample_weight is None
                      else [sample_weight[slices[i]] for i in numbers], evals, numbers))
    engine = transport(n_processes, step_timeout)
    try:
        engine.start(parts)
        booster = fit_parts(engine, checked, _seed_from(checked["random_state"]),
                            has_eval_set=eval_set is not None, names=feature_names_of(X),
                            model_params=model_params)
    except BaseException:
        engine.close(failed=True)
        raise
    engine.close()
    return booster, model_params
