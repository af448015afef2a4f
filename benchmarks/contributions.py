"""TreeSHAP throughput: gbc-core's ``predict_contributions`` against XGBoost's
``pred_contribs=True`` and LightGBM's ``pred_contrib=True``, in one run.

Each library fits its own model with the hyper-parameters of ``bench.py`` (100
trees, depth 3, learning rate 0.1, no regularisation; XGBoost ``tree_method="hist"``)
on the same generated data (``make_classification`` of ``bench.py``, ``--rows``
training rows x 28 float32 features, fixed seed), then explains the same
``--explain-rows`` test rows with 1 and 2 threads (``--threads``). Every library
computes the exact path-dependent TreeSHAP values of its own trees; the table gives
rows/s (the median of ``--repeats`` calls, the libraries taking turns in each round),
the mean leaves per tree and the largest |row sum - raw score| of each library's
output (its additivity).

Usage::

    python benchmarks/contributions.py --rows 200000 --explain-rows 20000 --repeats 5
"""

import argparse
import statistics
import time

import numpy as np

from bench import machine_info, make_generated, make_model

LIBRARIES = ("gbc-core", "xgboost-hist", "lightgbm")


def _explainer(library, model, X):
    """(contributions(X, n_threads), raw scores of X, mean leaves per tree)."""
    if library == "gbc-core":
        booster = model.booster_
        leaves = float(np.mean([(t["feature"] < 0).sum() for t in booster.trees()]))
        return (lambda n: booster.predict_contributions(X, n_jobs=n),
                booster.decision_function(X), leaves)
    if library == "xgboost-hist":
        import xgboost

        booster = model.get_booster()
        dm = xgboost.DMatrix(X)
        trees = booster.trees_to_dataframe()
        leaves = float((trees["Feature"] == "Leaf").sum() / trees["Tree"].nunique())

        def run(n):
            booster.set_param({"nthread": n})
            return booster.predict(dm, pred_contribs=True)

        return run, booster.predict(dm, output_margin=True), leaves
    if library == "lightgbm":
        booster = model.booster_
        info = booster.dump_model()["tree_info"]
        leaves = float(np.mean([t["num_leaves"] for t in info]))
        return (lambda n: booster.predict(X, pred_contrib=True, num_threads=n),
                booster.predict(X, raw_score=True), leaves)
    raise ValueError(library)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000, help="training rows")
    parser.add_argument("--explain-rows", type=int, default=20_000,
                        help="rows explained per call")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=5, help="rounds of timed calls")
    parser.add_argument("--libraries", default=",".join(LIBRARIES))
    args = parser.parse_args(argv)
    libraries = args.libraries.split(",")

    X_train, y_train, X_test, _ = make_generated(args.rows)
    X = np.ascontiguousarray(np.resize(X_test, (args.explain_rows, X_test.shape[1])))
    explainers = {}
    for library in libraries:
        model = make_model(library, n_jobs=max(args.threads)).fit(X_train, y_train)
        explainers[library] = _explainer(library, model, X)
    times = {(lib, n): [] for lib in libraries for n in args.threads}
    additivity = {}
    for _ in range(args.repeats):
        for n in args.threads:
            for library in libraries:
                run, raw, _ = explainers[library]
                start = time.perf_counter()
                out = run(n)
                times[library, n].append(time.perf_counter() - start)
                additivity[library] = float(np.abs(
                    np.asarray(out).sum(axis=-1) - np.ravel(raw)).max())

    info = machine_info()
    print(f"{info['cpu']}, {info['cores']} cores, load average "
          f"{', '.join(f'{x:.2f}' for x in info['load_average'])}; {info['versions']}")
    print(f"\n{args.rows:,} training rows x {X_train.shape[1]} features, 100 trees of "
          f"depth 3; {args.explain_rows:,} rows explained per call, median of "
          f"{args.repeats} calls\n")
    head = "| library | leaves/tree | " + " | ".join(
        f"rows/s, {n} thread{'s' if n > 1 else ''}" for n in args.threads)
    print(head + " | max \\|sum - raw\\| |")
    print("|" + "---|" * (3 + len(args.threads)))
    for library in libraries:
        rates = [args.explain_rows / statistics.median(times[library, n])
                 for n in args.threads]
        print(f"| {library} | {explainers[library][2]:.2f} | "
              + " | ".join(f"{r:,.0f}" for r in rates)
              + f" | {additivity[library]:.1e} |")


if __name__ == "__main__":
    main()
