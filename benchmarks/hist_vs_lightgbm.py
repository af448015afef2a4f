"""Fit time and peak memory of gbc-core's histogram and exact fits and LightGBM's.

Each fit runs in its own subprocess (so that its peak resident memory is its own);
the libraries are timed in interleaved rounds, and the medians are reported, so that
all of them span the same periods of a machine whose speed drifts.

Usage::

    python benchmarks/hist_vs_lightgbm.py --rows 1000000 --n-jobs 1,2 --rounds 3

Data: scikit-learn's ``make_classification`` (28 float32 features, 14 informative,
seed 0), the first ``--rows`` rows to fit and 100,000 more to score (test AUC).
Model: 100 iterations of depth-3 trees, learning rate 0.1; LightGBM with
``num_leaves=8, max_depth=3, reg_lambda=0, min_child_samples=1,
min_child_weight=0, max_bin=255`` (its defaults otherwise). Peak RSS is the
process's maximum resident set after the fit; "beyond data" subtracts the resident
set measured once the data is generated.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

WORKER = r"""
import json, resource, sys, time
import numpy as np
from sklearn.datasets import make_classification
from sklearn.metrics import roc_auc_score
method, rows, n_jobs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
X, y = make_classification(rows + 100000, 28, n_informative=14, random_state=0)
X = X.astype(np.float32)
Xtr, ytr, Xte, yte = np.asfortranarray(X[:rows]), y[:rows], X[rows:], y[rows:]
del X
def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
import os
base = rss_mb()
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
t = time.perf_counter(); model.fit(Xtr, ytr); fit_s = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
auc = roc_auc_score(yte, model.predict_proba(Xte)[:, 1])
print(json.dumps({"fit": fit_s, "peak_mb": peak, "beyond_mb": peak - base, "auc": auc}))
"""


def run(method, rows, n_jobs, src):
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (os.path.abspath(src), os.environ.get("PYTHONPATH")) if p)
    out = subprocess.run([sys.executable, "-c", WORKER, method, str(rows), str(n_jobs)],
                         env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--n-jobs", default="1,2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--methods", default="hist,lightgbm,exact")
    parser.add_argument("--src", default=os.path.join(os.path.dirname(__file__), "..", "src"),
                        help="gbc-core source tree to import (built in place)")
    args = parser.parse_args()
    methods = args.methods.split(",")
    print(f"{args.rows} rows x 28 float32, 100 iterations of depth 3, {args.rounds} "
          "interleaved rounds; load average at start "
          + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    print("| n_jobs | method | fit s (median) | per round | peak RSS MB | beyond data MB "
          "| test AUC |")
    print("| ---: | --- | ---: | --- | ---: | ---: | ---: |")
    for n_jobs in (int(j) for j in args.n_jobs.split(",")):
        results = {m: [] for m in methods}
        for _ in range(args.rounds):
            for m in methods:
                results[m].append(run(m, args.rows, n_jobs, args.src))
        for m in methods:
            r = results[m]
            print(f"| {n_jobs} | {m} | {statistics.median(x['fit'] for x in r):.2f} | "
                  + ", ".join(f"{x['fit']:.2f}" for x in r)
                  + f" | {statistics.median(x['peak_mb'] for x in r):.0f} | "
                  f"{statistics.median(x['beyond_mb'] for x in r):.0f} | "
                  f"{statistics.median(x['auc'] for x in r):.4f} |", flush=True)
    print("- load average at end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
