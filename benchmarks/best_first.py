"""Fit time and test AUC of best-first trees: gbc-core (exact, hist) and LightGBM.

Each fit runs in its own subprocess; the methods are timed in interleaved rounds and
the medians are reported, so that all of them span the same periods of a machine
whose speed drifts.

Usage::

    python benchmarks/best_first.py --rows 200000 --leaves 8,31 --n-jobs 1,2 --rounds 3

Data: as ``hist_vs_lightgbm.py`` (scikit-learn's ``make_classification``, 28 float32
features, 14 informative, seed 0; ``--rows`` rows to fit, 100,000 more for the test
AUC).

Model: 100 iterations, learning rate 0.1, trees of at most L leaves grown best
first with no depth bound:

- gbc-core: ``max_leaf_nodes=L, max_depth=None`` (min_samples_leaf=1: the
  smallest leaf scikit-learn allows), ``split_method`` exact or hist (255 bins);
- LightGBM: ``num_leaves=L, max_depth=-1, min_child_samples=1, reg_lambda=0,
  min_split_gain=0, max_bin=255`` (its defaults otherwise), so that neither library
  stops a leaf earlier than the other, except for LightGBM's default
  ``min_child_weight=1e-3`` (a leaf's sum of p(1 - p)): with 0, LightGBM 4.7.0 stops
  with "Check failed: (best_split_info.left_count) > (0)" at 31 leaves on this data.

The trees are not the same: gbc-core ranks splits (and the frontier) by the
squared-error decrease of the residuals, as scikit-learn's GradientBoostingClassifier
does, and sets the leaf values by a Newton step afterwards; LightGBM ranks by the
Newton gain G^2/H. Both grow the leaf of largest gain next until L leaves.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hist_vs_lightgbm import make_data  # noqa: E402

WORKER = r"""
import json, os, sys, time
import numpy as np
method, leaves, n_jobs, data = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
Xtr = np.load(os.path.join(data, "X_train.npy"))  # float32, Fortran order
ytr = np.load(os.path.join(data, "y_train.npy"))
if method == "lightgbm":
    import lightgbm
    model = lightgbm.LGBMClassifier(n_estimators=100, learning_rate=0.1, num_leaves=leaves,
                                    max_depth=-1, reg_lambda=0.0, min_child_samples=1,
                                    min_split_gain=0.0, max_bin=255,
                                    n_jobs=n_jobs, verbose=-1)
else:
    from gbc_core import GradientBoostingClassifier
    model = GradientBoostingClassifier(n_estimators=100, learning_rate=0.1,
                                       max_leaf_nodes=leaves, max_depth=None,
                                       split_method=method, n_jobs=n_jobs)
t = time.perf_counter(); c = time.process_time()
model.fit(Xtr, ytr)
fit_s, cpu_s = time.perf_counter() - t, time.process_time() - c
Xte = np.load(os.path.join(data, "X_test.npy"))
yte = np.load(os.path.join(data, "y_test.npy"))
from sklearn.metrics import roc_auc_score
auc = roc_auc_score(yte, model.predict_proba(Xte)[:, 1])
print(json.dumps({"fit": fit_s, "cpu": cpu_s, "auc": auc}))
"""


def run(method, leaves, n_jobs, data, src):
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (os.path.abspath(src), os.environ.get("PYTHONPATH")) if p)
    out = subprocess.run([sys.executable, "-c", WORKER, method, str(leaves), str(n_jobs),
                          data], env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--leaves", default="8,31")
    parser.add_argument("--n-jobs", default="1,2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--methods", default="exact,hist,lightgbm")
    parser.add_argument("--src", default=os.path.join(os.path.dirname(__file__), "..", "src"),
                        help="gbc-core source tree to import (built in place)")
    args = parser.parse_args()
    methods = args.methods.split(",")
    leaves = [int(k) for k in args.leaves.split(",")]
    with tempfile.TemporaryDirectory() as data:
        make_data(args.rows, data)
        print(f"{args.rows} rows x 28 float32, 100 iterations of best-first trees, "
              f"{args.rounds} interleaved rounds; load average at start "
              + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
        print("| n_jobs | leaves | method | fit s (median) | per round | fit CPU s "
              "(all threads) | test AUC |")
        print("| ---: | ---: | --- | ---: | --- | ---: | ---: |")
        for n_jobs in (int(j) for j in args.n_jobs.split(",")):
            results = {(k, m): [] for k in leaves for m in methods}
            for _ in range(args.rounds):
                for k in leaves:
                    for m in methods:
                        results[k, m].append(run(m, k, n_jobs, data, args.src))
            for k in leaves:
                for m in methods:
                    r = results[k, m]
                    print(f"| {n_jobs} | {k} | {m} | "
                          f"{statistics.median(x['fit'] for x in r):.2f} | "
                          + ", ".join(f"{x['fit']:.2f}" for x in r)
                          + f" | {statistics.median(x['cpu'] for x in r):.2f} | "
                          f"{statistics.median(x['auc'] for x in r):.4f} |", flush=True)
    print("- load average at end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
