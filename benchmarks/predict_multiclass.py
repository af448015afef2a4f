"""Multiclass prediction throughput of gbc-core, against binary and against peers.

One run fits gbc-core, XGBoost (``tree_method="hist"``) and LightGBM with 100
iterations of depth-3 trees on the same data as a K-class problem (default 5 classes:
one tree per class and iteration, K trees per iteration) and as a 2-class problem
(one tree per iteration), then times ``predict_proba`` on >= 1M rows with one thread
and with all cores. It prints, per dataset and thread count, a markdown table of:

* trees: iterations x trees per iteration, and the mean number of leaves per tree
  (as each library reports its trees);
* throughput: rows/s, the median over every timed call of every round;
* nanoseconds per (row, tree): the median call time / (rows x trees);
* ratios per (row, tree), > 1 where gbc-core is faster: each peer's ns per (row, tree)
  over gbc-core's, pooled and per round (the round-by-round range);
* the CPU time / wall time of the calls (about n_jobs when the threads ran) and the
  share of the CPUs other processes used meanwhile (0 % = the machine to itself);

a table of the cost per (row, tree) of the K-class model over the binary model of
each library (1.00: a tree costs the same in both); and, for gbc-core, the cost of
the trees alone (the raw scores of all iterations minus those of the first half,
timed back to back) apart from the per-row work (input checks, transposed blocks,
probabilities), which ``predict_proba``'s figure per (row, tree) spreads over
K times more trees in the K-class model.

Datasets: ``generated`` (``make_classification`` with a fixed seed, ``--rows`` training
rows and a quarter as many test rows x 28 float32 features, K classes; its 2-class
version labels classes 0 .. K // 2 - 1 against the others) and ``sample``
(``multiclass_sample.train`` / ``.test`` in ``--data-dir``: 5 classes, tab-separated,
label first; its 2-class version likewise; skipped when the files are absent). The
prediction set is the test set tiled to at least ``--predict-rows`` rows.

Every library runs in its own subprocesses: one fit per (problem, library), with all
cores, whose model is pickled; then ``--rounds`` rounds in which the libraries take
turns (gbc-core, XGBoost, LightGBM, then again) and each times at least ``--repeats``
calls and ``--min-seconds`` per thread count, the thread counts alternating. Every
median thus spans the same stretches of a machine whose speed drifts.

Usage::

    python benchmarks/predict_multiclass.py --rounds 3 --repeats 3 --json out.json
"""

import argparse
import datetime
import json
import math
import os
import pickle
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from bench import OtherLoad, load_tsv, machine_info, n_cores, wait_for_quiet

#: Where ``--data-dir`` looks by default: ``../shared/data`` beside the checkout.
DEFAULT_DATA_DIR = os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data"))

# Common hyper-parameters (those of bench.py).
N_ITERATIONS = 100
MAX_DEPTH = 3
LEARNING_RATE = 0.1
SEED = 0
N_FEATURES = 28

LIBRARIES = ("gbc-core", "xgboost-hist", "lightgbm")
# LightGBM's own default, used only where its fit fails with 0 (see fit_worker).
LIGHTGBM_FALLBACK_MIN_CHILD_WEIGHT = 1e-3
LABELS = {"gbc-core": "gbc-core", "xgboost-hist": "XGBoost hist", "lightgbm": "LightGBM"}
DATASETS = ("generated", "sample")
SAMPLE_FILES = ("multiclass_sample.train", "multiclass_sample.test")


# ------------------------------------------------------------------- workloads
def make_generated(n_train, n_classes, seed=SEED):
    """A synthetic task of ``n_classes`` classes: ``n_train`` training rows and
    n_train / 4 test rows x 28 float32 features.

    ``make_classification`` with 14 informative features, 6 redundant linear
    combinations, 8 noise features, 2 clusters per class and 5 % flipped labels.
    """
    from sklearn.datasets import make_classification

    n_test = n_train // 4
    X, y = make_classification(
        n_samples=n_train + n_test, n_features=N_FEATURES, n_informative=14,
        n_redundant=6, n_repeated=0, n_classes=n_classes, n_clusters_per_class=2,
        flip_y=0.05, class_sep=1.0, shuffle=True, random_state=seed,
    )
    X = X.astype(np.float32)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def binary_labels(y, n_classes):
    """The 2-class version of class codes ``y``: classes 0 .. n_classes // 2 - 1
    against the others."""
    return (y >= n_classes // 2).astype(np.int64)


def prepare_dataset(name, args, out_dir):
    """Write a dataset's arrays to ``out_dir`` as .npy files and describe it.

    Returns None when the dataset's files are absent (``sample``).
    """
    if name == "generated":
        X_train, y_train, X_test, y_test = make_generated(args.rows, args.classes)
        source = f"make_classification(seed={SEED}), {args.classes} classes"
    elif name == "sample":
        paths = [os.path.join(args.data_dir, f) for f in SAMPLE_FILES]
        if not all(os.path.exists(p) for p in paths):
            return None
        (X_train, y_train), (X_test, y_test) = (load_tsv(p) for p in paths)
        source = "multiclass_sample.train / .test"
    else:
        raise ValueError(f"unknown dataset {name!r}; choose from {', '.join(DATASETS)}")
    n_classes = int(max(y_train.max(), y_test.max())) + 1
    tiles = max(1, math.ceil(args.predict_rows / X_test.shape[0]))
    os.makedirs(out_dir, exist_ok=True)
    arrays = {
        "X_train": X_train, "X_test": X_test,
        "X_predict": np.tile(X_test, (tiles, 1)),
        f"y_train_{n_classes}": y_train, f"y_test_{n_classes}": y_test,
        "y_train_2": binary_labels(y_train, n_classes),
        "y_test_2": binary_labels(y_test, n_classes),
    }
    for key, arr in arrays.items():
        np.save(os.path.join(out_dir, key + ".npy"), np.ascontiguousarray(arr))
    return {
        "name": name,
        "source": source,
        "n_train": int(X_train.shape[0]),
        "n_test": int(X_test.shape[0]),
        "n_features": int(X_train.shape[1]),
        "n_predict": int(tiles * X_test.shape[0]),
        "class_counts": [n_classes, 2],
        "dir": out_dir,
    }


# ---------------------------------------------------------------------- models
def make_model(library, n_classes, n_jobs, min_child_weight=0.0):
    """The estimator of ``library``: 100 iterations of depth-3 trees, learning rate
    0.1, no regularisation, no minimum gain, no subsampling, and no minimum child
    weight (``min_child_weight``: the peers' minimum sum of hessians in a child)."""
    if library == "gbc-core":
        from gbc_core import GradientBoostingClassifier

        return GradientBoostingClassifier(
            n_estimators=N_ITERATIONS, learning_rate=LEARNING_RATE, max_depth=MAX_DEPTH,
            min_samples_split=2, min_samples_leaf=1, subsample=1.0, init="zero",
            random_state=SEED, n_jobs=n_jobs,
        )
    if library == "xgboost-hist":
        from xgboost import XGBClassifier

        return XGBClassifier(
            n_estimators=N_ITERATIONS, learning_rate=LEARNING_RATE, max_depth=MAX_DEPTH,
            tree_method="hist", grow_policy="depthwise", reg_lambda=0.0, reg_alpha=0.0,
            gamma=0.0, min_child_weight=min_child_weight, subsample=1.0, colsample_bytree=1.0,
            max_bin=256, objective="multi:softprob" if n_classes > 2 else "binary:logistic",
            n_jobs=n_jobs, random_state=SEED,
        )
    if library == "lightgbm":
        from lightgbm import LGBMClassifier

        return LGBMClassifier(
            n_estimators=N_ITERATIONS, learning_rate=LEARNING_RATE, max_depth=MAX_DEPTH,
            num_leaves=2**MAX_DEPTH, reg_lambda=0.0, reg_alpha=0.0, min_child_samples=1,
            min_child_weight=min_child_weight, min_split_gain=0.0, subsample=1.0,
            colsample_bytree=1.0,
            max_bin=255, n_jobs=n_jobs, random_state=SEED, verbose=-1,
        )
    raise ValueError(f"unknown library {library!r}")


def leaves_per_tree(library, model):
    """The number of leaves of each tree of a fitted model, in the library's order."""
    if library == "gbc-core":
        return [int(np.sum(tree["feature"] < 0)) for tree in model.booster_.trees()]
    if library == "xgboost-hist":
        return [dump.count("leaf=") for dump in model.get_booster().get_dump()]
    return [tree["num_leaves"] for tree in model.booster_.dump_model()["tree_info"]]


# ---------------------------------------------------------------- subprocesses
def _cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def fit_worker(library, dataset_dir, n_classes, n_jobs, model_path):
    """Fit one model, pickle it to ``model_path`` and describe it."""
    from sklearn.metrics import accuracy_score, log_loss

    X_train = np.load(os.path.join(dataset_dir, "X_train.npy"))
    y_train = np.load(os.path.join(dataset_dir, f"y_train_{n_classes}.npy"))
    X_test = np.load(os.path.join(dataset_dir, "X_test.npy"))
    y_test = np.load(os.path.join(dataset_dir, f"y_test_{n_classes}.npy"))
    model = make_model(library, n_classes, n_jobs)
    note = None
    start = time.perf_counter()
    try:
        model.fit(X_train, y_train)
    except Exception as exc:
        if library != "lightgbm":
            raise
        # LightGBM derives child counts from sums of hessians; with no minimum child
        # weight its split search can pick an empty child and stop the fit ("Check
        # failed: (best_split_info.left_count) > (0)", its issue 4739).
        note = (f"min_child_weight={LIGHTGBM_FALLBACK_MIN_CHILD_WEIGHT:g}: with 0 the "
                f"fit failed ({str(exc).split(' at ')[0]})")
        model = make_model(library, n_classes, n_jobs, LIGHTGBM_FALLBACK_MIN_CHILD_WEIGHT)
        start = time.perf_counter()
        model.fit(X_train, y_train)
    fit_s = time.perf_counter() - start
    proba = model.predict_proba(X_test)
    leaves = leaves_per_tree(library, model)
    with open(model_path, "wb") as fh:
        pickle.dump(model, fh, protocol=pickle.HIGHEST_PROTOCOL)
    return {
        "fit_s": fit_s,
        "trees": len(leaves),
        "trees_per_iteration": len(leaves) / N_ITERATIONS,
        "leaves_per_tree": float(np.mean(leaves)),
        "test_log_loss": float(log_loss(y_test, np.clip(proba, 1e-15, 1 - 1e-15),
                                        labels=np.arange(n_classes))),
        "test_accuracy": float(accuracy_score(y_test, np.argmax(proba, axis=1))),
        "note": note,
    }


def _timed(call):
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def predict_worker(library, dataset_dir, model_path, n_jobs_list, repeats, min_seconds):
    """Time ``predict_proba`` of a pickled model on the prediction set, the thread
    counts alternating: at least ``repeats`` calls per thread count, and more while
    the calls have taken less than ``min_seconds`` per thread count.

    For gbc-core, each round of calls also times the raw scores of all iterations
    and of the first half (``Ensemble.predict_raw``): their difference is the cost
    of the trees alone, without the per-row work (input checks, transposing the
    blocks, the probabilities).
    """
    X = np.load(os.path.join(dataset_dir, "X_predict.npy"))
    with open(model_path, "rb") as fh:
        model = pickle.load(fh)
    timings = {str(n_jobs): {"times": [], "cpu": [], "others": [], "raw_times": [],
                             "raw_half_times": []} for n_jobs in n_jobs_list}
    for n_jobs in n_jobs_list:  # warm-up
        model.set_params(n_jobs=n_jobs)
        model.predict_proba(X[:1000])
    started = time.perf_counter()
    calls = 0
    while calls < repeats or time.perf_counter() - started < min_seconds * len(n_jobs_list):
        for n_jobs in n_jobs_list:
            model.set_params(n_jobs=n_jobs)
            entry = timings[str(n_jobs)]
            cpu = _cpu_seconds()
            with OtherLoad() as others:
                entry["times"].append(_timed(lambda: model.predict_proba(X)))
            entry["cpu"].append(_cpu_seconds() - cpu)
            entry["others"].append(others.value)
            if library == "gbc-core":
                ensemble = model.booster_.ensemble
                for key, iterations in (("raw_times", N_ITERATIONS),
                                        ("raw_half_times", N_ITERATIONS // 2)):
                    entry[key].append(_timed(lambda: ensemble.predict_raw(
                        X, n_jobs=n_jobs, iterations=iterations)))
        calls += 1
    return {"rows": int(X.shape[0]), "timings": timings}


def run_worker(args):
    """Run one ``--worker`` command-line invocation; returns its JSON-able result."""
    cmd = [sys.executable, os.path.abspath(__file__)] + args
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
        return {"error": tail[0] if tail else f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------- report
def summarize(fit, rounds, rows, n_jobs):
    """Pooled and per-round figures of one (problem, library, n_jobs)."""
    entries = [r["timings"][str(n_jobs)] for r in rounds]
    times = [t for e in entries for t in e["times"]]
    median = statistics.median(times)
    others = [v for e in entries for v in e["others"] if v is not None]
    summary = {
        "median_s": median,
        "rows_per_s": rows / median,
        "ns_per_row_tree": 1e9 * median / (rows * fit["trees"]),
        "round_ns_per_row_tree": [1e9 * statistics.median(e["times"]) / (rows * fit["trees"])
                                  for e in entries],
        "cpu_per_wall": sum(c for e in entries for c in e["cpu"]) / sum(times),
        "others_cpu": statistics.mean(others) if others else None,
        "times": times,
    }
    if entries[0]["raw_times"]:
        # The second half of the iterations alone is the cost of the trees: the
        # difference of the raw scores of all iterations and of the first half, call
        # by call (each pair ran back to back), then the median.
        def tree_cost(pairs):
            return 1e9 * statistics.median(f - h for f, h in pairs) / (rows * half_trees)

        half_trees = fit["trees"] - fit["trees"] // 2
        pairs = [(f, h) for e in entries for f, h in zip(e["raw_times"], e["raw_half_times"])]
        full = statistics.median(f for f, _ in pairs)
        summary.update(
            raw_s=full,
            raw_half_s=statistics.median(h for _, h in pairs),
            tree_ns_per_row_tree=tree_cost(pairs),
            round_tree_ns_per_row_tree=[tree_cost(zip(e["raw_times"], e["raw_half_times"]))
                                        for e in entries],
            # Per-row work of the raw scores (input checks, blocks, transposes): the
            # first half's time beyond its trees; then the probabilities.
            rest_ns_per_row=1e9 * statistics.median(2 * h - f for f, h in pairs) / rows,
            proba_ns_per_row=1e9 * (median - full) / rows,
        )
    return summary


def _range(values):
    low, high = min(values), max(values)
    return f"{low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}-{high:.2f}"


def _pct(value):
    return "-" if value is None else f"{100 * value:.0f}%"


def throughput_table(dataset, results, libraries, n_jobs):
    """The markdown table of one dataset and thread count."""
    lines = [
        f"#### {dataset['name']}: {dataset['source']}; {dataset['n_train']:,} train rows, "
        f"predict_proba on {dataset['n_predict']:,} rows x {dataset['n_features']}, "
        f"n_jobs = {n_jobs}",
        "",
        "| classes | library | trees | leaves / tree | test log-loss | rows/s | "
        "ns per (row, tree) | peer / gbc-core per (row, tree) | per round | CPU / wall | "
        "others' CPU |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for n_classes in dataset["class_counts"]:
        ref = results.get((n_classes, "gbc-core"))
        for library in libraries:
            r = results.get((n_classes, library))
            if r is None or "error" in r:
                error = "not run" if r is None else r["error"]
                lines.append(f"| {n_classes} | {LABELS[library]} | error: {error} "
                             "| | | | | | | | |")
                continue
            fit, s = r["fit"], r["n_jobs"][n_jobs]
            ratio = per_round = "-"
            if ref is not None and "error" not in ref:
                g = ref["n_jobs"][n_jobs]
                ratio = f"{s['ns_per_row_tree'] / g['ns_per_row_tree']:.2f}"
                per_round = _range([p / q for p, q in zip(s["round_ns_per_row_tree"],
                                                          g["round_ns_per_row_tree"])])
            lines.append(
                f"| {n_classes} | {LABELS[library]} | {N_ITERATIONS} x "
                f"{fit['trees_per_iteration']:g} | {fit['leaves_per_tree']:.2f} | "
                f"{fit['test_log_loss']:.4f} | {s['rows_per_s']:,.0f} | "
                f"{s['ns_per_row_tree']:.3f} | {ratio} | {per_round} | "
                f"{s['cpu_per_wall']:.2f} | {_pct(s['others_cpu'])} |")
    return "\n".join(lines)


def gbc_core_cost_table(dataset, results, n_jobs_list):
    """gbc-core's predict_proba split into the trees and the per-row work."""
    n_classes = dataset["class_counts"][0]
    lines = [
        f"#### {dataset['name']}: gbc-core, the trees alone (raw scores of iterations "
        f"{N_ITERATIONS // 2 + 1}-{N_ITERATIONS}) and the per-row work",
        "",
        "| classes | n_jobs | predict_proba ms | raw scores ms | half the iterations ms | "
        "trees: ns per (row, tree) | per round | other raw-score work ns per row | "
        "probabilities ns per row |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for k in dataset["class_counts"]:
        r = results.get((k, "gbc-core"))
        if r is None or "error" in r:
            continue
        for n_jobs in n_jobs_list:
            s = r["n_jobs"][n_jobs]
            lines.append(
                f"| {k} | {n_jobs} | {1e3 * s['median_s']:.1f} | {1e3 * s['raw_s']:.1f} | "
                f"{1e3 * s['raw_half_s']:.1f} | {s['tree_ns_per_row_tree']:.3f} | "
                f"{_range(s['round_tree_ns_per_row_tree'])} | {s['rest_ns_per_row']:.1f} | "
                f"{s['proba_ns_per_row']:.1f} |")
    multi, binary = results.get((n_classes, "gbc-core")), results.get((2, "gbc-core"))
    if multi and binary and "error" not in multi and "error" not in binary:
        lines.append("")
        for n_jobs in n_jobs_list:
            m, b = multi["n_jobs"][n_jobs], binary["n_jobs"][n_jobs]
            per_round = _range([p / q for p, q in zip(m["round_tree_ns_per_row_tree"],
                                                      b["round_tree_ns_per_row_tree"])])
            lines.append(
                f"- n_jobs = {n_jobs}: the trees cost {m['tree_ns_per_row_tree']:.3f} ns per "
                f"(row, tree) with {n_classes} classes and {b['tree_ns_per_row_tree']:.3f} "
                f"with 2, ratio {m['tree_ns_per_row_tree'] / b['tree_ns_per_row_tree']:.2f} "
                f"(per round {per_round})")
    return "\n".join(lines)


def class_table(dataset, results, libraries, n_jobs_list):
    """K-class over binary cost per (row, tree) of each library and thread count."""
    n_classes = dataset["class_counts"][0]
    lines = [
        f"#### {dataset['name']}: {n_classes}-class over 2-class ns per (row, tree)",
        "",
        "| library | n_jobs | 2-class ns | "
        f"{n_classes}-class ns | ratio | per round |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for library in libraries:
        multi, binary = results.get((n_classes, library)), results.get((2, library))
        if multi is None or binary is None or "error" in multi or "error" in binary:
            continue
        for n_jobs in n_jobs_list:
            m, b = multi["n_jobs"][n_jobs], binary["n_jobs"][n_jobs]
            per_round = _range([p / q for p, q in zip(m["round_ns_per_row_tree"],
                                                      b["round_ns_per_row_tree"])])
            lines.append(
                f"| {LABELS[library]} | {n_jobs} | {b['ns_per_row_tree']:.3f} | "
                f"{m['ns_per_row_tree']:.3f} | "
                f"{m['ns_per_row_tree'] / b['ns_per_row_tree']:.2f} | {per_round} |")
    return "\n".join(lines)


# ------------------------------------------------------------------------ main
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=",".join(DATASETS),
                        help="comma-separated: generated, sample (default: both; sample "
                             "is skipped when its files are absent)")
    parser.add_argument("--libraries", default=",".join(LIBRARIES),
                        help=f"comma-separated subset of {', '.join(LIBRARIES)}")
    parser.add_argument("--rows", type=int, default=200_000,
                        help="training rows of the generated dataset (default: 200000)")
    parser.add_argument("--classes", type=int, default=5,
                        help="classes of the generated dataset (default: 5)")
    parser.add_argument("--n-jobs", default=f"1,{n_cores()}",
                        help="comma-separated thread counts of the predictions "
                             "(default: 1 and all cores); the fits use all cores")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds in which the libraries take turns (default: 3)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="least predict_proba calls per thread count and round "
                             "(default: 3)")
    parser.add_argument("--min-seconds", type=float, default=2.0,
                        help="more calls while a round's calls of a library have taken "
                             "less than this per thread count (default: 2)")
    parser.add_argument("--predict-rows", type=int, default=1_000_000,
                        help="minimum rows of the tiled prediction set")
    parser.add_argument("--data-dir", default=DEFAULT_DATA_DIR,
                        help="directory of multiclass_sample.train/.test "
                             "(default: ../shared/data beside the checkout)")
    parser.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                        help="before each subprocess, wait up to SECONDS for the CPUs to be "
                             "at most 25%% busy (shared machines; default: do not wait)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    # Internal: one fit or one round of predictions in a fresh process.
    parser.add_argument("--worker", choices=("fit", "predict"), help=argparse.SUPPRESS)
    parser.add_argument("--library", help=argparse.SUPPRESS)
    parser.add_argument("--dataset-dir", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--fit-classes", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.repeats < 1 or args.min_seconds < 0:
        parser.error("--rounds and --repeats must be >= 1, --min-seconds >= 0")
    if args.classes < 3:
        parser.error("--classes must be >= 3 (the 2-class problem is always run)")
    args.n_jobs_list = list(dict.fromkeys(int(j) for j in args.n_jobs.split(",")))
    return args


def worker_args(kind, library, dataset, n_classes, model_path, args):
    """The command-line arguments of one worker subprocess."""
    return ["--worker", kind, "--library", library, "--dataset-dir", dataset["dir"],
            "--fit-classes", str(n_classes), "--model", model_path,
            "--n-jobs", ",".join(map(str, args.n_jobs_list)), "--repeats", str(args.repeats),
            "--min-seconds", str(args.min_seconds)]


def main(argv=None):
    args = parse_args(argv)
    if args.worker == "fit":
        result = fit_worker(args.library, args.dataset_dir, args.fit_classes, n_cores(),
                            args.model)
        print(json.dumps(result))
        return 0
    if args.worker == "predict":
        print(json.dumps(predict_worker(args.library, args.dataset_dir, args.model,
                                        args.n_jobs_list, args.repeats, args.min_seconds)))
        return 0

    libraries = [name.strip() for name in args.libraries.split(",") if name.strip()]
    unknown = sorted(set(libraries) - set(LIBRARIES))
    if unknown:
        raise SystemExit(f"unknown libraries: {unknown}")
    libraries = [name for name in LIBRARIES if name in libraries]  # gbc-core first

    info = machine_info()
    started = datetime.datetime.now().astimezone()
    print(f"# gbc-core multiclass prediction benchmark, {started:%Y-%m-%d %H:%M %Z}\n")
    print(f"- machine: {info['cpu']}, {info['cores']} cores; {info['platform']}")
    print("- versions: " + ", ".join(f"{k} {v}" for k, v in info["versions"].items())
          + f" (gbc-core source at {info['gbc_core_revision']})")
    print(f"- load average at start: {', '.join(f'{x:.2f}' for x in info['load_average'])}")
    print(f"- {N_ITERATIONS} iterations of depth {MAX_DEPTH}, fitted once with all cores; "
          f"predict_proba: median of every call, >= {args.repeats} calls and "
          f">= {args.min_seconds:g} s per thread count in each of {args.rounds} rounds "
          "(libraries in turn, pooled)")
    print("- peer / gbc-core: the peer's ns per (row, tree) over gbc-core's "
          "(> 1: gbc-core is faster); per round: the range of that ratio over the rounds\n",
          flush=True)

    report = {"started": started.isoformat(), "machine": info,
              "args": {k: v for k, v in vars(args).items()
                       if k not in ("worker", "library", "dataset_dir", "model",
                                    "fit_classes")},
              "datasets": []}
    with tempfile.TemporaryDirectory(prefix="gbc-multiclass-") as tmp:
        datasets = []
        for name in (d.strip() for d in args.datasets.split(",") if d.strip()):
            dataset = prepare_dataset(name, args, os.path.join(tmp, name))
            if dataset is None:
                print(f"- {name}: skipped ({' / '.join(SAMPLE_FILES)} not found in "
                      "--data-dir)\n", flush=True)
                continue
            datasets.append(dataset)
        problems = [(d, k, lib) for d in datasets for k in d["class_counts"]
                    for lib in libraries]
        fits, model_paths, rounds = {}, {}, {}
        for dataset, n_classes, library in problems:
            key = (dataset["name"], n_classes, library)
            model_paths[key] = os.path.join(
                tmp, f"{dataset['name']}-{n_classes}-{library}.pkl")
            print(f"  fitting {library} on {dataset['name']}, {n_classes} classes ...",
                  file=sys.stderr, flush=True)
            wait_for_quiet(args.wait_quiet)
            fits[key] = run_worker(worker_args("fit", library, dataset, n_classes,
                                               model_paths[key], args))
            rounds[key] = []
        for round_ in range(args.rounds):
            for dataset, n_classes, library in problems:
                key = (dataset["name"], n_classes, library)
                if "error" in fits[key]:
                    continue
                print(f"  predicting with {library} on {dataset['name']}, {n_classes} "
                      f"classes (round {round_ + 1} of {args.rounds}) ...",
                      file=sys.stderr, flush=True)
                wait_for_quiet(args.wait_quiet)
                rounds[key].append(run_worker(worker_args(
                    "predict", library, dataset, n_classes, model_paths[key], args)))
        for dataset in datasets:
            results = {}
            for n_classes in dataset["class_counts"]:
                for library in libraries:
                    key = (dataset["name"], n_classes, library)
                    failed = [r for r in [fits[key]] + rounds[key] if "error" in r]
                    if failed:
                        results[(n_classes, library)] = {"error": failed[0]["error"]}
                        continue
                    results[(n_classes, library)] = {
                        "fit": fits[key],
                        "n_jobs": {n_jobs: summarize(fits[key], rounds[key],
                                                     rounds[key][0]["rows"], n_jobs)
                                   for n_jobs in args.n_jobs_list},
                    }
            for n_jobs in args.n_jobs_list:
                print(throughput_table(dataset, results, libraries, n_jobs) + "\n")
            print(class_table(dataset, results, libraries, args.n_jobs_list) + "\n")
            if "gbc-core" in libraries:
                print(gbc_core_cost_table(dataset, results, args.n_jobs_list) + "\n")
            notes = [f"- {LABELS[lib]}, {k} classes: {r['fit']['note']}"
                     for (k, lib), r in results.items()
                     if "fit" in r and r["fit"].get("note")]
            if notes:
                print("\n".join(notes) + "\n")
            sys.stdout.flush()
            report["datasets"].append({
                "dataset": {k: v for k, v in dataset.items() if k != "dir"},
                "results": [{"classes": k, "library": lib, **r}
                            for (k, lib), r in results.items()],
            })

    report["finished"] = datetime.datetime.now().astimezone().isoformat()
    report["load_average_end"] = os.getloadavg()
    print("- load average at end: "
          + ", ".join(f"{x:.2f}" for x in report["load_average_end"]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2, default=str)
        print(f"- results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
