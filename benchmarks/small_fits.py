"""Small fits (hyper-parameter searches, cross-validation): gbc-core's exact and
histogram fits against LightGBM, and scikit-learn's GradientBoostingClassifier once.

Usage::

    python benchmarks/small_fits.py --rows 7000,30000 --n-jobs 1,2 --rounds 7
    python benchmarks/small_fits.py --src /path/to/other/src ...   # another build

Data: ``make_classification`` (28 features, 14 informative, seed 0) as float32, the
first ``--rows`` rows. Model: 100 iterations of depth-3 trees, learning rate 0.1;
LightGBM ``num_leaves=8, max_depth=3, reg_lambda=0, min_child_samples=1,
min_child_weight=0`` (255 bins); scikit-learn ``GradientBoostingClassifier(init="zero")``
(the same model as the exact fit) at the largest size, once per round with
``--sklearn``.

Every fit runs in this process; the configurations take turns round by round (so
that each spans the same stretches of a shared machine's load) after one warm-up
fit each. Reported per configuration: the median wall time and the median CPU time
(``time.process_time``, every thread of the process), and their ratios to LightGBM's
with the same ``n_jobs`` in the same run.
"""

import argparse
import os
import statistics
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="7000,30000")
    parser.add_argument("--n-jobs", default="1,2")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--methods", default="exact,hist,lightgbm")
    parser.add_argument("--sklearn", action="store_true",
                        help="also time scikit-learn's GBC at the largest size")
    parser.add_argument("--src", default=os.path.join(os.path.dirname(__file__), "..", "src"),
                        help="gbc-core source tree to import (built in place)")
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.src))

    import numpy as np
    from sklearn.datasets import make_classification

    import gbc_core
    from gbc_core import GradientBoostingClassifier

    sizes = [int(r) for r in args.rows.split(",")]
    n_jobs_list = [int(j) for j in args.n_jobs.split(",")]
    methods = args.methods.split(",")
    X, y = make_classification(max(sizes), 28, n_informative=14, random_state=0)
    X = X.astype(np.float32)

    def model(method, n_jobs):
        if method == "lightgbm":
            import lightgbm
            return lightgbm.LGBMClassifier(
                n_estimators=100, learning_rate=0.1, num_leaves=8, max_depth=3,
                reg_lambda=0.0, min_child_samples=1, min_child_weight=0.0, n_jobs=n_jobs,
                verbose=-1)
        if method == "sklearn":
            from sklearn.ensemble import GradientBoostingClassifier as SkGBC
            return SkGBC(n_estimators=100, learning_rate=0.1, max_depth=3, init="zero",
                         random_state=0)
        return GradientBoostingClassifier(n_estimators=100, learning_rate=0.1, max_depth=3,
                                          split_method=method, n_jobs=n_jobs)

    configs = [(n, j, m) for n in sizes for j in n_jobs_list for m in methods]
    if args.sklearn:
        configs.append((max(sizes), 1, "sklearn"))
    models = {c: model(c[2], c[1]) for c in configs}
    data = {n: (X[:n], y[:n]) for n in sizes}
    for c in configs:  # warm-up: imports, OpenMP thread pools, first-touch pages
        models[c].fit(*data[c[0]])
    times = {c: [] for c in configs}
    load = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for c in configs:
            t, p = time.perf_counter(), time.process_time()
            models[c].fit(*data[c[0]])
            times[c].append((time.perf_counter() - t, time.process_time() - p))
        load.append(os.getloadavg()[0])

    print(f"gbc-core {gbc_core.__version__} from {os.path.abspath(args.src)}; "
          f"{args.rounds} interleaved rounds; 1-minute load average "
          f"{min(load):.2f}-{max(load):.2f} on {os.cpu_count()} CPUs")
    print("| rows | n_jobs | method | fit s (median) | fit CPU s (median) | "
          "wall / LightGBM | CPU / LightGBM |")
    print("| ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    med = {c: (statistics.median(w for w, _ in times[c]),
               statistics.median(p for _, p in times[c])) for c in configs}
    for c in configs:
        n, j, m = c
        ref = med.get((n, j, "lightgbm"))
        ratio = (f"{med[c][0] / ref[0]:.2f} | {med[c][1] / ref[1]:.2f}" if ref
                 else " | ")
        print(f"| {n} | {j if m != 'sklearn' else '-'} | {m} | {med[c][0]:.3f} | "
              f"{med[c][1]:.3f} | {ratio} |")
    if args.sklearn and "exact" in methods:
        sk = med[(max(sizes), 1, "sklearn")]
        for j in n_jobs_list:
            ex = med[(max(sizes), j, "exact")]
            print(f"- scikit-learn GBC / gbc-core exact at {max(sizes)} rows, n_jobs={j}: "
                  f"wall {sk[0] / ex[0]:.1f}x, CPU {sk[1] / ex[1]:.1f}x")


if __name__ == "__main__":
    main()
