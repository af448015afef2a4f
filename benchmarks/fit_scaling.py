"""Fit time and peak memory at scale: gbc-core's exact and histogram split search
against LightGBM and XGBoost's histogram method (issue 16's targets).

Every (library, workload, thread count) is measured in a fresh subprocess that
loads the workload's arrays from ``.npy`` files, imports its library, then fits
``--repeats`` times. Reported per fit configuration:

* ``fit_s``: the median fit time; ``fit_times``: every fit;
* ``peak_rss_mib``: the peak resident set size of the fitting process over its
  first fit (Linux ``VmHWM``, which includes the loaded training data ``X``);
  ``fit_increase_mib``: that peak minus the resident size just before the fit
  (interpreter, library and data already loaded): what the fit itself needs;
* ``auc``: test ROC AUC (one-vs-rest macro average for more than two classes);
* ``ratio_vs_lightgbm``: fit time / LightGBM's fit time in the same run
  (< 1: faster than LightGBM).

Hyper-parameters: 100 iterations, depth 3, learning rate 0.1, no regularisation
(LightGBM ``num_leaves=8, reg_lambda=0, min_child_samples=1, min_child_weight=0``,
255 bins; XGBoost ``tree_method="hist"``, ``max_bin=256``, ``reg_lambda=0``).
Workloads: ``make_classification`` with 28 float32 features as in ``bench.py``
(the test set is a quarter of the training rows; ``5c-`` workloads have 5
classes). The libraries of one workload run in turn, ``--rounds`` times, so the
medians of every library span the same stretches of a shared machine's load.

A second build of gbc-core runs in the same run with ``--baseline-src DIR`` (its
``src`` folder, built in place): libraries named ``NAME@base`` (``gbc-hist@base``,
``gbc-exact@base``) are fitted with that build, the others with the installed one.

Usage::

    python benchmarks/fit_scaling.py --workloads 1m --threads 1,2 --rounds 3
    python benchmarks/fit_scaling.py --workloads 1m,10m,5c-1m --threads 16 --json out.json
    python benchmarks/fit_scaling.py --workloads 1m --threads 16 --baseline-src ../base/src \
        --libraries gbc-hist,gbc-hist@base,lightgbm --rounds 2
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (machine description, memory probes, data generation)

LIBRARIES = ("gbc-exact", "gbc-hist", "lightgbm", "xgboost-hist")
N_TREES, MAX_DEPTH, LEARNING_RATE, SEED = bench.N_TREES, bench.MAX_DEPTH, bench.LEARNING_RATE, bench.SEED


def parse_workload(name):
    """'1m' -> (1_000_000, 2); '5c-200k' -> (200_000, 5)."""
    n_classes = 2
    if "c-" in name:
        head, name = name.split("c-", 1)
        n_classes = int(head)
    scale = {"k": 1_000, "m": 1_000_000}[name[-1]]
    return int(float(name[:-1]) * scale), n_classes


def make_data(n_train, n_classes, seed=SEED):
    """``bench.make_generated``'s task with ``n_classes`` classes."""
    if n_classes == 2:
        return bench.make_generated(n_train, seed)
    from sklearn.datasets import make_classification

    n_test = n_train // 4
    X, y = make_classification(
        n_samples=n_train + n_test, n_features=bench.N_FEATURES, n_informative=14,
        n_redundant=6, n_repeated=0, n_classes=n_classes, n_clusters_per_class=2,
        flip_y=0.05, class_sep=1.0, shuffle=True, random_state=seed,
    )
    X = X.astype(np.float32)
    y = y.astype(np.int64)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def make_model(library, n_classes, n_jobs):
    """The estimator of ``library``, configured as the module docstring says."""
    if library in ("gbc-exact", "gbc-hist"):
        from gbc_core import GradientBoostingClassifier

        return GradientBoostingClassifier(
            n_estimators=N_TREES, learning_rate=LEARNING_RATE, max_depth=MAX_DEPTH,
            init="zero", random_state=SEED, n_jobs=n_jobs,
            split_method=library.split("-")[1],
        )
    if library in ("lightgbm", "xgboost-hist"):
        # bench.py's configuration of the peers (the same hyper-parameters).
        model = bench.make_model(library, n_jobs)
        if library == "xgboost-hist" and n_classes > 2:
            model.set_params(objective="multi:softprob", base_score=None)
        return model
    raise ValueError(f"unknown library {library!r}; choose from {', '.join(LIBRARIES)}")


def run_worker(library, workload_dir, n_classes, n_jobs, repeats):
    """Fit ``repeats`` times in this (fresh) process; print one JSON line."""
    from sklearn.metrics import roc_auc_score

    X = np.load(os.path.join(workload_dir, "X_train.npy"))
    y = np.load(os.path.join(workload_dir, "y_train.npy"))
    make_model(library, n_classes, n_jobs)  # the library's imports before measuring
    times = []
    peak_mib = increase_mib = None
    for i in range(repeats):
        model = make_model(library, n_classes, n_jobs)
        if i == 0 and bench._reset_peak_rss() and bench._status_kib("VmHWM"):
            before = bench._status_kib("VmRSS")
            start = time.perf_counter()
            model.fit(X, y)
            times.append(time.perf_counter() - start)
            peak_mib = bench._status_kib("VmHWM") / 1024
            increase_mib = peak_mib - before / 1024
        else:
            start = time.perf_counter()
            model.fit(X, y)
            times.append(time.perf_counter() - start)
        if i < repeats - 1:
            del model
    X_test = np.load(os.path.join(workload_dir, "X_test.npy"))
    y_test = np.load(os.path.join(workload_dir, "y_test.npy"))
    proba = model.predict_proba(X_test)
    auc = (roc_auc_score(y_test, proba[:, 1]) if n_classes == 2
           else roc_auc_score(y_test, proba, multi_class="ovr"))
    print(json.dumps({
        "fit_times": times, "fit_s": statistics.median(times), "auc": float(auc),
        "peak_rss_mib": peak_mib, "fit_increase_mib": increase_mib,
        "X_mib": X.nbytes / 2**20,
    }))


def run_one(library, workload, n_jobs, args):
    env = None
    if library.endswith("@base"):
        if not args.baseline_src:
            return {"error": f"{library} needs --baseline-src"}
        library = library[:-len("@base")]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in (os.path.abspath(args.baseline_src), os.environ.get("PYTHONPATH"))
            if p))
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", library,
           "--workload-dir", workload["dir"], "--n-classes", str(workload["n_classes"]),
           "--n-jobs", str(n_jobs), "--repeats", str(args.repeats)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
        return {"error": " | ".join(tail) or f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table(results):
    lines = ["| workload | threads | library | fit s (median) | / LightGBM | peak RSS MiB "
             "| fit increase MiB | X MiB | test AUC |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['workload']} | {r['threads']} | {r['library']} | "
                         f"error: {r['error'][:80]} | | | | | |")
            continue
        ratio = r.get("ratio_vs_lightgbm")
        mem = [f"{r[k]:.0f}" if r.get(k) is not None else "" for k in
               ("peak_rss_mib", "fit_increase_mib", "X_mib")]
        lines.append(
            f"| {r['workload']} | {r['threads']} | {r['library']} | {r['fit_s']:.2f} | "
            f"{'' if ratio is None else f'{ratio:.2f}'} | {mem[0]} | {mem[1]} | {mem[2]} | "
            f"{r['auc']:.4f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="1m",
                        help="comma-separated: 200k, 1m, 10m, 5c-200k, 5c-1m, ...")
    parser.add_argument("--libraries", default=",".join(LIBRARIES))
    parser.add_argument("--threads", default=str(bench.n_cores()),
                        help="comma-separated thread counts")
    parser.add_argument("--repeats", type=int, default=1, help="fits per subprocess")
    parser.add_argument("--rounds", type=int, default=1,
                        help="libraries run in turn this many times (times pooled)")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--baseline-src", metavar="DIR",
                        help="src folder of a second build: libraries NAME@base run on it")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--workload-dir", help=argparse.SUPPRESS)
    parser.add_argument("--n-classes", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--n-jobs", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        run_worker(args.worker, args.workload_dir, args.n_classes, args.n_jobs,
                   args.repeats)
        return
    print(json.dumps(bench.machine_info()), flush=True)
    libraries = args.libraries.split(",")
    threads = [int(t) for t in args.threads.split(",")]
    results = []
    with tempfile.TemporaryDirectory(prefix="gbc-fit-scaling-") as tmp:
        for name in args.workloads.split(","):
            n_train, n_classes = parse_workload(name)
            start = time.perf_counter()
            X, y, X_test, y_test = make_data(n_train, n_classes)
            workload = {"dir": os.path.join(tmp, name), "n_classes": n_classes}
            os.makedirs(workload["dir"])
            for key, arr in (("X_train", X), ("y_train", y), ("X_test", X_test),
                             ("y_test", y_test)):
                np.save(os.path.join(workload["dir"], key + ".npy"),
                        np.ascontiguousarray(arr))
            del X, y, X_test, y_test
            print(f"# {name}: data in {time.perf_counter() - start:.1f} s", flush=True)
            for n_jobs in threads:
                rounds = {lib: [] for lib in libraries}
                for _ in range(args.rounds):
                    for lib in libraries:
                        rounds[lib].append(run_one(lib, workload, n_jobs, args))
                batch = []
                for lib in libraries:
                    ok = [r for r in rounds[lib] if "error" not in r]
                    r = dict(ok[0]) if ok else dict(rounds[lib][0])
                    if ok:
                        r["fit_times"] = [t for x in ok for t in x["fit_times"]]
                        r["fit_s"] = statistics.median(r["fit_times"])
                    r.update(workload=name, threads=n_jobs, library=lib)
                    batch.append(r)
                ref = next((r for r in batch if r["library"] == "lightgbm"
                            and "fit_s" in r), None)
                for r in batch:
                    if ref is not None and "fit_s" in r:
                        r["ratio_vs_lightgbm"] = r["fit_s"] / ref["fit_s"]
                    print(json.dumps(r), flush=True)
                results.extend(batch)
    print(table(results))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": bench.machine_info(), "command": sys.argv,
                       "results": results}, fh, indent=1)


if __name__ == "__main__":
    main()
