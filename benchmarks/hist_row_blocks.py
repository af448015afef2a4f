"""The histogram build with and without row blocks, its tasks list-scheduled on P threads.

Needs a traced build (``GBC_CORE_TRACE=1 python setup.py build_ext --inplace``). Fits
the same hist model twice on ``--n-jobs`` threads (default 16, so that the tasks are
those of a 16-thread fit, whatever the cores of this machine): once with the row
blocks of ``HistogramSplitFinder.collect`` out of reach (a block size larger than
any node) and once as a fit takes them. For each, the histogram build regions'
tasks (the gather, the (node, feature group) builds, the (node, row block, feature
group) builds and the blocks' additions), timed by each task's thread CPU time, are
list-scheduled on P threads in their loop's schedule (dynamic: in task order, each to
the first thread free; static: equal runs of consecutive tasks), the loops of a
region one after the other. The sums are the build's task time on P threads: no
synchronisation, no memory-bandwidth bound, no serial code (a lower bound of the
regions' time; ``scaling_model.py`` models the whole fit). The two models must be
the same bit for bit.

Usage::

    PYTHONPATH=TRACE/src python benchmarks/hist_row_blocks.py --rows 1000000 --trees 5
"""

import argparse

import numpy as np

from gbc_core import GradientBoostingClassifier, _openmp
from gbc_core import _histogram_splitter as hs

# _trace.h: the region, and the phases of its loops with their schedules.
HIST_BUILD = 5
LOOPS = ((15, "static"), (5, "dynamic"), (29, "dynamic"), (30, "static"))


def traced_fit(X, y, trees, n_jobs, block_rows):
    previous = hs._set_row_blocks(block_rows, False)
    try:
        model = GradientBoostingClassifier(split_method="hist", n_estimators=trees,
                                           max_depth=3, n_jobs=n_jobs)
        _openmp.trace_start(capacity=4_000_000)
        model.fit(X, y)
        events, dropped = _openmp.trace_stop()
    finally:
        hs._set_row_blocks(*previous)
    if dropped:
        raise RuntimeError(f"{dropped} trace events dropped: fewer trees")
    return events, np.concatenate(model.booster_.trees()).tobytes()


def makespan(costs, p, schedule):
    if len(costs) == 0:
        return 0.0
    if schedule == "static":
        return max(run.sum() for run in np.array_split(costs, p))
    free = np.zeros(p)
    for c in costs:
        free[np.argmin(free)] += c
    return float(free.max())


def build_times(events, threads):
    regions = events[(events["kind"] == 1) & (events["id"] == HIST_BUILD)]
    tasks = events[events["kind"] == 0]
    out = dict.fromkeys(threads, 0.0)
    counts = {phase: 0 for phase, _ in LOOPS}
    for region in regions:
        inside = tasks[(tasks["t0"] >= region["t0"]) & (tasks["t1"] <= region["t1"])]
        for phase, schedule in LOOPS:
            loop = inside[inside["id"] == phase]
            loop = loop[np.argsort(loop["index"], kind="stable")]
            costs = (loop["c1"] - loop["c0"]) / 1e9
            counts[phase] += len(loop)
            for p in threads:
                out[p] += makespan(costs, p, schedule)
    return len(regions), counts, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--trees", type=int, default=5)
    parser.add_argument("--n-jobs", type=int, default=16)
    parser.add_argument("--threads", default="1,2,4,8,16,32")
    args = parser.parse_args()
    if not _openmp.trace_compiled():
        raise SystemExit("needs a build with GBC_CORE_TRACE=1")
    threads = [int(p) for p in args.threads.split(",")]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.rows, 28)).astype(np.float32)
    logit = X[:, 0] - X[:, 1] * (X[:, 2] > 0)
    y = (rng.uniform(size=args.rows) < 1 / (1 + np.exp(-logit))).astype(int)
    print(f"{args.rows} rows x 28, {args.trees} trees of depth 3, traced on "
          f"{args.n_jobs} threads; histogram build regions, task CPU seconds on P threads")
    print("| row blocks | regions | gather / build / block / add tasks | task CPU s | "
          + " | ".join(f"P = {p}" for p in threads) + " |")
    print("| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in threads) + " |")
    models = []
    for name, block_rows in (("off", 1 << 40), ("on", hs.ROW_BLOCK_ROWS)):
        events, model = traced_fit(X, y, args.trees, args.n_jobs, block_rows)
        models.append(model)
        n_regions, counts, out = build_times(events, threads)
        print(f"| {name} | {n_regions} | " + " / ".join(str(c) for c in counts.values())
              + f" | {out[1]:.3f} | " + " | ".join(f"{out[p]:.3f}" for p in threads) + " |")
    print("same model, bit for bit:", models[0] == models[1])


if __name__ == "__main__":
    main()
