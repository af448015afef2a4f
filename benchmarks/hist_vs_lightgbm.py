"""Fit time and peak memory of gbc-core's histogram and exact fits and LightGBM's.

Each fit runs in its own subprocess (so that its peak resident memory is its own);
the libraries are timed in interleaved rounds, and the medians are reported, so that
all of them span the same periods of a machine whose speed drifts.

Usage::

    python benchmarks/hist_vs_lightgbm.py --rows 1000000 --n-jobs 1,2 --rounds 3
    python benchmarks/hist_vs_lightgbm.py --order C --methods hist,lightgbm   # C-order X
    python benchmarks/hist_vs_lightgbm.py --classes 5 --methods hist,lightgbm  # 5 classes
    python benchmarks/hist_vs_lightgbm.py --methods hist,lightgbm --baseline-src OLD/src

Data: scikit-learn's ``make_classification`` (28 float32 features, 14 informative,
``--classes`` classes, seed 0), the first ``--rows`` rows to fit and 100,000 more to
score (test AUC, one-vs-rest with more than two classes, and log-loss),
generated once and loaded by every subprocess from ``.npy`` files (so that the peak
memory is the fit's, not the generator's).
Model: 100 iterations of depth-3 trees, learning rate 0.1 (K trees per iteration
with K > 2 classes); LightGBM with
``num_leaves=8, max_depth=3, reg_lambda=0, min_child_samples=1,
min_child_weight=0, max_bin=255`` (its defaults otherwise: the objective
``multiclass`` with more than two classes). Peak RSS is the
process's maximum resident set after the fit; the next column subtracts the resident
set just before the fit (X, y and the imported libraries). The CPU time is
``time.process_time`` of the fit (all threads); on a shared machine it is the
steadier figure. ``--baseline-src`` times the gbc-core methods of a second source
tree (built in place) in the same rounds, as ``METHOD@baseline``.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

WORKER = r"""
import json, os, sys, time
import numpy as np
method, n_jobs, data = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
Xtr = np.load(os.path.join(data, "X_train.npy"))  # float32, Fortran order
if len(sys.argv) > 4 and sys.argv[4] == "C":
    Xtr = np.ascontiguousarray(Xtr)
ytr = np.load(os.path.join(data, "y_train.npy"))
if method == "lightgbm":
    import lightgbm
    model = lightgbm.LGBMClassifier(n_estimators=100, learning_rate=0.1, num_leaves=8,
                                    max_depth=3, reg_lambda=0.0, min_child_samples=1,
                                    min_child_weight=0.0, max_bin=255, n_jobs=n_jobs,
                                    verbose=-1)
else:
    from gbc_core import GradientBoostingClassifier
    model = GradientBoostingClassifier(n_estimators=100, learning_rate=0.1, max_depth=3,
                                       split_method=method, n_jobs=n_jobs)
base = rss_mb()
t = time.perf_counter(); c = time.process_time()
model.fit(Xtr, ytr)
fit_s, cpu_s = time.perf_counter() - t, time.process_time() - c
# VmHWM: the high-water mark of this process's memory (ru_maxrss would keep the
# parent's across exec).
with open("/proc/self/status") as f:
    peak = next(int(l.split()[1]) for l in f if l.startswith("VmHWM")) / 1024
del Xtr
Xte = np.load(os.path.join(data, "X_test.npy"))
yte = np.load(os.path.join(data, "y_test.npy"))
from sklearn.metrics import log_loss, roc_auc_score
proba = model.predict_proba(Xte)
auc = (roc_auc_score(yte, proba[:, 1]) if proba.shape[1] == 2
       else roc_auc_score(yte, proba, multi_class="ovr"))
print(json.dumps({"fit": fit_s, "cpu": cpu_s, "peak_mb": peak, "beyond_mb": peak - base,
                  "auc": auc, "log_loss": log_loss(yte, proba)}))
"""


def make_data(rows, directory, n_classes=2):
    from sklearn.datasets import make_classification
    import numpy as np
    X, y = make_classification(rows + 100000, 28, n_informative=14, n_classes=n_classes,
                               random_state=0)
    X = X.astype(np.float32)
    np.save(os.path.join(directory, "X_train.npy"), np.asfortranarray(X[:rows]))
    np.save(os.path.join(directory, "y_train.npy"), y[:rows])
    np.save(os.path.join(directory, "X_test.npy"), X[rows:])
    np.save(os.path.join(directory, "y_test.npy"), y[rows:])


def run(method, n_jobs, data, src, order="F"):
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (os.path.abspath(src), os.environ.get("PYTHONPATH")) if p)
    out = subprocess.run([sys.executable, "-c", WORKER, method, str(n_jobs), data, order],
                         env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--n-jobs", default="1,2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--methods", default="hist,lightgbm,exact")
    parser.add_argument("--order", default="F", choices=("F", "C"),
                        help="memory order of the float32 X given to fit")
    parser.add_argument("--src", default=os.path.join(os.path.dirname(__file__), "..", "src"),
                        help="gbc-core source tree to import (built in place)")
    parser.add_argument("--baseline-src", default=None,
                        help="a second gbc-core source tree (built in place) whose "
                             "hist/exact fits are timed in the same rounds")
    parser.add_argument("--classes", type=int, default=2,
                        help="number of classes of the generated data (2: binary)")
    args = parser.parse_args()
    if args.classes < 2:
        parser.error(f"--classes must be 2 or more, got {args.classes}")
    # (label, method, source tree) in the order each round runs them
    runs = []
    for m in args.methods.split(","):
        runs.append((m, m, args.src))
        if args.baseline_src and m != "lightgbm":
            runs.append((m + "@baseline", m, args.baseline_src))
    with tempfile.TemporaryDirectory() as data:
        make_data(args.rows, data, args.classes)
        print(f"{args.rows} rows x 28 float32 in {args.order} order "
              f"(X = {args.rows * 28 * 4 / 2**20:.0f} MiB), {args.classes} classes, "
              f"100 iterations of depth 3, {args.rounds} interleaved rounds; load average "
              "at start " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
        print("| n_jobs | method | fit s (median) | per round | fit CPU s (median) | "
              "CPU per round | / LightGBM (fit s, CPU s) | peak RSS MiB | "
              "peak - RSS before fit, MiB | test AUC | test log-loss |")
        print("| ---: | --- | ---: | --- | ---: | --- | --- | ---: | ---: | ---: | ---: |")
        for n_jobs in (int(j) for j in args.n_jobs.split(",")):
            results = {label: [] for label, _, _ in runs}
            for _ in range(args.rounds):
                for label, m, src in runs:
                    results[label].append(run(m, n_jobs, data, src, args.order))
            med = {label: (statistics.median(x["fit"] for x in r),
                           statistics.median(x["cpu"] for x in r))
                   for label, r in results.items()}
            for label, r in results.items():
                ratio = ""
                if "lightgbm" in med:
                    ratio = (f"{med[label][0] / med['lightgbm'][0]:.2f}, "
                             f"{med[label][1] / med['lightgbm'][1]:.2f}")
                print(f"| {n_jobs} | {label} | {med[label][0]:.2f} | "
                      + ", ".join(f"{x['fit']:.2f}" for x in r)
                      + f" | {med[label][1]:.2f} | "
                      + ", ".join(f"{x['cpu']:.2f}" for x in r)
                      + f" | {ratio} | {statistics.median(x['peak_mb'] for x in r):.0f} | "
                      f"{statistics.median(x['beyond_mb'] for x in r):.1f} | "
                      f"{statistics.median(x['auc'] for x in r):.4f} | "
                      f"{statistics.median(x['log_loss'] for x in r):.4f} |", flush=True)
            print("- load average now: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()),
                  flush=True)
    print("- load average at end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
