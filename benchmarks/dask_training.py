"""Distributed training on Dask against the single-process hist fit (and xgboost.dask).

N rows x 28 float32 features (a noisy linear model, generated on the workers block by
block, and the same blocks in this process for the single-process fit) on a local
cluster of W worker processes of one thread each. Reported per fit: the time (the
Dask fits from data persisted on the workers to the fitted model), the setup (a fit
of one iteration) and the time per tree ((T(M) - T(1)) / (M - 1)), the overhead per
tree of the Dask fit over the single-process one, the test AUC, the CPU time (of
this process and, for the Dask fits, of every worker process), and per worker the
resident memory before the fit, its peak during the fit and the bytes of its rows.
The fits are interleaved round by round (``--rounds``); the best round is reported.
Trees are of depth 3 by default; ``--max-depth none --max-leaf-nodes 31`` grows them
best first (both fits alike).

    python benchmarks/dask_training.py --rows 1000000
    python benchmarks/dask_training.py --rows 1000000 --max-depth none --max-leaf-nodes 31
    # the Dask fit alone (e.g. two builds alternated, by PYTHONPATH, on a loaded machine)
    python benchmarks/dask_training.py --rows 200000 --trees 30 --rounds 3 --dask-only \
        --max-depth none --max-leaf-nodes 31
"""

import argparse
import threading
import time

import numpy as np

BLOCK = 125_000


def make_block(i, n, d, seed):
    """Block i of the data set: X (n, d) float32, y (n,) 0/1."""
    rng = np.random.default_rng([seed, i])
    X = rng.normal(size=(n, d)).astype(np.float32)
    coef = np.random.default_rng(seed).normal(size=d)
    score = (X[:, :8] * coef[:8]).sum(axis=1)
    score += 0.5 * np.sin(3 * X[:, 8]) + rng.logistic(size=n)
    return X, (score > 0).astype(np.int64)


def _sizes(rows):
    """Rows of each block: at most BLOCK, and at least 8 blocks (every worker gets
    some)."""
    n_blocks = max(8, -(-rows // BLOCK))
    return [len(b) for b in np.array_split(np.arange(rows), n_blocks)]


def _dask_data(client, rows, d, seed, offset=0):
    import dask
    import dask.array as da

    Xs, ys = [], []
    for i, n in enumerate(_sizes(rows)):
        block = dask.delayed(make_block, pure=True)(offset + i, n, d, seed)
        Xs.append(da.from_delayed(block[0], shape=(n, d), dtype=np.float32))
        ys.append(da.from_delayed(block[1], shape=(n,), dtype=np.int64))
    # Block i on worker i mod W (the data spread evenly, as on a real cluster).
    workers = sorted(client.scheduler_info()["workers"])
    X, y = da.concatenate(Xs), da.concatenate(ys)
    with dask.annotate(workers=lambda key: [workers[key[1] % len(workers)]],
                       allow_other_workers=False):
        X, y = X.map_blocks(np.asarray), y.map_blocks(np.asarray)
    X, y = client.persist([X, y], optimize_graph=False)
    from distributed import wait

    wait([X, y])
    return X, y


def _local_data(rows, d, seed, offset=0):
    blocks = [make_block(offset + i, n, d, seed) for i, n in enumerate(_sizes(rows))]
    return (np.asfortranarray(np.concatenate([b[0] for b in blocks])),
            np.concatenate([b[1] for b in blocks]))


# Per-worker resident memory, sampled every 20 ms during a fit.
def _start_sampler(dask_worker):
    import psutil

    state = {"peak": 0, "run": True}
    proc = psutil.Process()

    def loop():
        while state["run"]:
            state["peak"] = max(state["peak"], proc.memory_info().rss)
            time.sleep(0.02)

    threading.Thread(target=loop, daemon=True).start()
    dask_worker._bench_sampler = state
    return proc.memory_info().rss


def _stop_sampler(dask_worker):
    state = dask_worker._bench_sampler
    state["run"] = False
    return state["peak"]


def _auc(y, p):
    from gbc_core.metrics import roc_auc

    return roc_auc(y.astype(np.float64), p)


def _worker_cpu(dask_worker):
    import psutil

    t = psutil.Process().cpu_times()
    return t.user + t.system


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=1,
                    help="rounds of every fit, interleaved (the best round is reported)")
    ap.add_argument("--subsample", type=float, default=1.0)
    ap.add_argument("--max-depth", type=lambda s: None if s.lower() == "none" else int(s),
                    default=3, help="an integer, or none")
    ap.add_argument("--max-leaf-nodes", type=int, default=None,
                    help="grow the trees best first up to this many leaves")
    ap.add_argument("--no-xgboost", action="store_true")
    ap.add_argument("--dask-only", action="store_true",
                    help="the Dask fit only (no single-process fit, no xgboost)")
    args = ap.parse_args()
    if args.trees < 2:
        ap.error("--trees must be at least 2: the time per tree is (T(M) - T(1)) / (M - 1)")

    from distributed import Client, LocalCluster

    from gbc_core import GradientBoostingClassifier
    from gbc_core.dask import DaskGradientBoostingClassifier

    n, d, M = args.rows, args.features, args.trees
    params = dict(max_depth=args.max_depth, max_leaf_nodes=args.max_leaf_nodes,
                  learning_rate=0.1, random_state=0, subsample=args.subsample)
    Xt, yt = _local_data(100_000, d, args.seed, offset=10_000)
    # name -> (threads, {m: (wall, cpu)}, auc, memory), the best round of each fit.
    results = {}

    def keep(name, threads, times, auc, memory=None):
        # (Each fit as it ends, in case the run is cut short.)
        print(f"{name}: {threads} thread(s), wall (CPU) s by trees "
              f"{ {m: (round(w, 2), round(c, 2)) for m, (w, c) in times.items()} }, "
              f"AUC {auc:.4f}, memory {memory}", flush=True)
        old = results.get(name)
        if old is None or times[M][0] < old[1][M][0]:
            results[name] = (threads, times, auc, memory)

    try:
        import xgboost as xgb
        import xgboost.dask  # noqa: F401
    except ImportError:
        xgb = None
    if args.no_xgboost or args.dask_only:
        xgb = None

    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        Xd, yd = _dask_data(client, n, d, args.seed)
        X, y = _local_data(n, d, args.seed)
        # A first fit imports the modules on the workers (not timed).
        DaskGradientBoostingClassifier(n_estimators=1, **params).fit(Xd, yd)
        for _ in range(args.rounds):
            for threads in [] if args.dask_only else sorted({1, args.workers}):
                times = {}
                for m in (1, M):
                    t0, c0 = time.perf_counter(), time.process_time()
                    ref = GradientBoostingClassifier(split_method="hist", n_estimators=m,
                                                     n_jobs=threads, **params).fit(X, y)
                    times[m] = (time.perf_counter() - t0, time.process_time() - c0)
                keep(f"gbc-core hist, 1 process ({threads} thread{'s' * (threads > 1)})",
                     threads, times, _auc(yt, ref.predict_proba(Xt)[:, 1]))
            times = {}
            memory = None
            for m in (1, M):
                before = client.run(_start_sampler)
                cpu0 = sum(client.run(_worker_cpu).values()) + time.process_time()
                t0 = time.perf_counter()
                model = DaskGradientBoostingClassifier(n_estimators=m, **params).fit(Xd, yd)
                wall = time.perf_counter() - t0
                cpu = sum(client.run(_worker_cpu).values()) + time.process_time() - cpu0
                times[m] = (wall, cpu)
                peak = client.run(_stop_sampler)
                memory = {w: (before[w], peak[w]) for w in before}
            keep("gbc-core hist, Dask (`DaskGradientBoostingClassifier`)", args.workers,
                 times, _auc(yt, model.predict_proba(Xt)[:, 1]), memory)
            if xgb is not None and args.max_depth is not None and args.max_leaf_nodes is None:
                times = {}
                for m in (1, 1, M):  # the first, untimed, warms it up
                    cpu0 = sum(client.run(_worker_cpu).values()) + time.process_time()
                    t0 = time.perf_counter()
                    xm = xgb.dask.DaskXGBClassifier(
                        n_estimators=m, max_depth=args.max_depth, learning_rate=0.1, tree_method="hist",
                        max_bin=255, reg_lambda=0.0, min_child_weight=0.0, n_jobs=1,
                        subsample=args.subsample)
                    xm.client = client
                    xm.fit(Xd, yd)
                    wall = time.perf_counter() - t0
                    cpu = sum(client.run(_worker_cpu).values()) + time.process_time() - cpu0
                    times[m] = (wall, cpu)
                keep(f"xgboost.dask {xgb.__version__} hist", args.workers, times,
                     _auc(yt, xm.get_booster().inplace_predict(Xt)))
        del X, y

    # The per-tree overhead is against the fastest single-process fit.
    single_per_tree = min([(t[M][0] - t[1][0]) / (M - 1) for name, (_, t, _, _)
                           in results.items() if "1 process" in name] or [np.nan])
    part_bytes = n // args.workers * d * 4
    shape = (f"depth {args.max_depth}" if args.max_leaf_nodes is None else
             f"{args.max_leaf_nodes} leaves (best first, max_depth {args.max_depth})")
    print(f"{n:,} rows x {d} features, {M} trees of {shape}, subsample {args.subsample}, "
          f"{args.workers} workers (1 thread each) / 1 process with 1 and "
          f"{args.workers} threads; best of {args.rounds} interleaved round(s)")
    print("| fit | threads | fit time (CPU) | setup (1 tree) | per tree (CPU) | per-tree "
          "overhead vs the fastest 1-process fit | test AUC |")
    print("|---|---|---|---|---|---|---|")
    for name, (threads, t, auc, _) in results.items():
        per_tree = (t[M][0] - t[1][0]) / (M - 1)
        cpu_per_tree = (t[M][1] - t[1][1]) / (M - 1)
        print(f"| {name} | {threads} | {t[M][0]:.2f} s ({t[M][1]:.2f} s) | {t[1][0]:.2f} s "
              f"| {per_tree * 1e3:.1f} ms ({cpu_per_tree * 1e3:.1f} ms) "
              f"| {(per_tree - single_per_tree) * 1e3:+.1f} ms | {auc:.4f} |")
    for name, (_, _, _, mem) in results.items():
        if mem:
            print(f"\n{name}: resident memory per worker (its rows: ~{part_bytes / 2**20:.0f} "
                  f"MiB of float32 X, {n // args.workers * d / 2**20:.0f} MiB of bins)")
            for w, (before, peak) in sorted(mem.items()):
                print(f"  {w}: {before / 2**20:.0f} MiB before the fit, peak "
                      f"{peak / 2**20:.0f} MiB during it (+{(peak - before) / 2**20:.0f} MiB)")


if __name__ == "__main__":
    main()
