"""Same-run fit and predict times of two builds of gbc-core (before/after a change).

Each build is a source tree whose extensions were built in place
(``python setup.py build_ext --inplace``); the two are timed in alternating
subprocesses, ``--rounds`` times each, on the same generated data, so that both
medians span the same periods of a machine whose speed drifts.

Usage::

    python benchmarks/compare_builds.py BEFORE_DIR AFTER_DIR --rows 200000 --n-jobs 1,2

prints, per workload and thread count, the median fit and predict seconds of each
build (one fit per round, wall and CPU time of the process: ``time.process_time``,
every thread's;  predict: the median of 5 calls on 1M rows per round, dense or
``--sparse``) and
the median single-row ``predict_proba`` latency (of 1000 calls per round), the ratio
after / before of the medians (< 1: the change is faster) and the range of the
ratios within the rounds (each round runs the two builds back to back), then the
times of every round.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

WORKER = r"""
import json, sys, time
import numpy as np
import gbc_core
from gbc_core import GradientBoostingClassifier
rows, n_jobs, classes, depth, trees = (int(a) for a in sys.argv[1:6])
split_method = sys.argv[6]
missing = float(sys.argv[7])
weighted = sys.argv[8] == "1"
sparse = sys.argv[9] == "1"
loss = sys.argv[10]
leaf_solver = sys.argv[11]
PREDICT_CALLS = 5
LATENCY_CALLS = 1000
rng = np.random.default_rng(0)
X = rng.normal(size=(rows + 50000, 28)).astype(np.float32)
logits = np.stack([X[:, 3 * k] - X[:, 3 * k + 1] * (X[:, 3 * k + 2] > 0) for k in range(classes)])
if classes == 2:
    y = (rng.uniform(size=X.shape[0]) < 1 / (1 + np.exp(-(logits[0] - logits[1])))).astype(int)
else:
    y = np.argmax(logits + rng.gumbel(size=logits.shape), axis=0)
if missing > 0:
    X[np.random.default_rng(1).uniform(size=X.shape) < missing] = np.nan
Xtr, ytr = X[:rows], y[:rows]
Xte = np.ascontiguousarray(np.tile(X[rows:], (20, 1)))  # 1M rows
if sparse:  # CSR rows, the values below 0.8 in magnitude (about 58%) implicit zeros
    import scipy.sparse
    Xte = scipy.sparse.csr_matrix(np.where(np.abs(Xte) < 0.8, 0, Xte))
model = GradientBoostingClassifier(n_estimators=trees, max_depth=depth, n_jobs=n_jobs,
                                   split_method=split_method, loss=loss,
                                   leaf_solver=leaf_solver)
w = np.random.default_rng(2).uniform(0.5, 2.0, size=rows) if weighted else None
c = time.process_time(); t = time.perf_counter(); model.fit(Xtr, ytr, sample_weight=w)
fit_s = time.perf_counter() - t; fit_cpu_s = time.process_time() - c
model.predict_proba(Xte[:1000])
predict_times = []
for _ in range(PREDICT_CALLS):
    t = time.perf_counter(); model.predict_proba(Xte); predict_times.append(time.perf_counter() - t)
predict_s = sorted(predict_times)[PREDICT_CALLS // 2]
latencies = []
for i in range(LATENCY_CALLS):
    row = Xte[i:i + 1]
    t = time.perf_counter(); model.predict_proba(row); latencies.append(time.perf_counter() - t)
latency_s = sorted(latencies)[LATENCY_CALLS // 2]
print(json.dumps({"fit": fit_s, "fit_cpu": fit_cpu_s, "predict": predict_s, "latency": latency_s,
                  "version": gbc_core.__version__}))
"""


def run(build, rows, n_jobs, classes, depth, trees, split_method, missing, weighted, sparse,
        loss="log_loss", leaf_solver="newton"):
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(build), "src"))
    out = subprocess.run([sys.executable, "-c", WORKER, str(rows), str(n_jobs), str(classes),
                          str(depth), str(trees), split_method, str(missing),
                          str(int(weighted)), str(int(sparse)), loss, leaf_solver],
                         env=env,
                         check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--n-jobs", default="1,2")
    parser.add_argument("--classes", type=int, default=2)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--split-method", default="exact", choices=("exact", "hist"))
    parser.add_argument("--missing", type=float, default=0.0,
                        help="fraction of the values set to NaN (every feature): the "
                             "exact search's general scan instead of its lean ones")
    parser.add_argument("--sample-weight", action="store_true",
                        help="fit with sample weights drawn from U(0.5, 2) (float64: "
                             "the exact search's general scan)")
    parser.add_argument("--loss", default="log_loss", choices=("log_loss", "exponential"),
                        help="the loss of the fits (exponential: two classes only)")
    parser.add_argument("--leaf-solver", default="newton", choices=("newton", "exact"),
                        help="the leaf values of the fits (exact: each leaf's loss "
                             "minimised; with more classes, the log-odds of every "
                             "class after each iteration)")
    parser.add_argument("--sparse", action="store_true",
                        help="predict from CSR rows (scipy.sparse; the values below 0.8 "
                             "in magnitude implicit zeros) instead of dense rows")
    args = parser.parse_args()
    print(f"{args.rows} rows x 28, {args.classes} classes, {args.trees} iterations of "
          f"depth {args.depth}, split_method={args.split_method!r}, loss={args.loss!r}, "
          f"leaf_solver={args.leaf_solver!r}, "
          f"missing values {args.missing:g}, sample weights {args.sample_weight}; predict: 1M "
          f"{'CSR' if args.sparse else 'dense'} rows, median of 5 calls; {args.rounds} "
          "alternating rounds; load average at start "
          + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    print("| n_jobs | fit s before | fit s after | ratio | per round | fit CPU s before | "
          "fit CPU s after | ratio | per round | predict s before | "
          "predict s after | ratio | per round | 1-row ms before | 1-row ms after | ratio |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
          "| ---: | ---: | ---: | ---: |")
    per_round_lines = []
    for n_jobs in (int(j) for j in args.n_jobs.split(",")):
        times = {"before": [], "after": []}
        for _ in range(args.rounds):
            for key in ("before", "after"):
                times[key].append(run(getattr(args, key), args.rows, n_jobs, args.classes,
                                      args.depth, args.trees, args.split_method,
                                      args.missing, args.sample_weight, args.sparse,
                                      args.loss, args.leaf_solver))
        med = {k: {m: statistics.median(t[m] for t in v)
                   for m in ("fit", "fit_cpu", "predict", "latency")}
               for k, v in times.items()}
        per_round = {m: [a[m] / b[m] for a, b in zip(times["after"], times["before"])]
                     for m in ("fit", "fit_cpu", "predict")}
        print(f"| {n_jobs} | {med['before']['fit']:.3f} | {med['after']['fit']:.3f} | "
              f"{med['after']['fit'] / med['before']['fit']:.3f} | "
              f"{min(per_round['fit']):.2f}-{max(per_round['fit']):.2f} | "
              f"{med['before']['fit_cpu']:.3f} | {med['after']['fit_cpu']:.3f} | "
              f"{med['after']['fit_cpu'] / med['before']['fit_cpu']:.3f} | "
              f"{min(per_round['fit_cpu']):.2f}-{max(per_round['fit_cpu']):.2f} | "
              f"{med['before']['predict']:.3f} | {med['after']['predict']:.3f} | "
              f"{med['after']['predict'] / med['before']['predict']:.3f} | "
              f"{min(per_round['predict']):.2f}-{max(per_round['predict']):.2f} | "
              f"{1e3 * med['before']['latency']:.4f} | {1e3 * med['after']['latency']:.4f} | "
              f"{med['after']['latency'] / med['before']['latency']:.2f} |", flush=True)
        for m in ("fit", "fit_cpu", "predict"):
            per_round_lines.append(
                f"- n_jobs = {n_jobs}, {m} s per round, before / after: " + ", ".join(
                    f"{b[m]:.3f} / {a[m]:.3f}"
                    for b, a in zip(times["before"], times["after"])))
    print("\n" + "\n".join(per_round_lines))
    print("- load average at end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
