"""Benchmark gbc-core against scikit-learn, XGBoost and LightGBM (issue 3).

One run trains and predicts with every library on the same data and the same
hyper-parameters (100 trees, depth 3, learning rate 0.1, no regularisation, all
cores) and prints, per workload, a markdown table of:

* fit time: median over ``--repeats`` fits (scikit-learn's
  ``GradientBoostingClassifier`` does one fit on workloads above
  ``SLOW_ROWS`` training rows, and is skipped on the 1m workload with ``--skip-slow``);
* prediction throughput: ``predict_proba`` rows/s on the test set tiled to at least
  ``--predict-rows`` rows (median over ``--repeats`` calls);
* single-row latency: median time of ``--latency-calls`` ``predict_proba`` calls
  on one row;
* peak memory of fit: increase of the peak resident set size (RSS) during the first
  fit, measured in a fresh subprocess per library and workload (the float32 size of
  X_train is printed for reference);
* test ROC AUC and log-loss;
* ratios against gbc-core (> 1 means gbc-core is faster): peer fit time / gbc-core
  fit time, gbc-core throughput / peer throughput, peer latency / gbc-core latency.

Each (library, workload) pair runs in its own subprocess; the workloads are
prepared once and handed to the subprocesses as ``.npy`` files. On a shared machine,
``--wait-quiet`` waits for idle CPUs before each library, and the table reports the
share of the CPUs other processes used during the measurements.

Usage::

    python benchmarks/bench.py --workloads higgs,200k,1m --skip-slow --json out.json
"""

import argparse
import datetime
import functools
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# Common hyper-parameters.
N_TREES = 100
MAX_DEPTH = 3
LEARNING_RATE = 0.1
SEED = 0

# scikit-learn's GradientBoostingClassifier does a single fit above this many rows.
SLOW_ROWS = 50_000

LIBRARIES = (
    "gbc-core",
    "sklearn-gbc",
    "sklearn-hgb",
    "xgboost-exact",
    "xgboost-hist",
    "lightgbm",
)

# Generated workloads: training rows; the test set has a quarter as many rows.
GENERATED = {"200k": 200_000, "1m": 1_000_000}
N_FEATURES = 28


# --------------------------------------------------------------------- machine
def n_cores():
    """Number of CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def cpu_model():
    """CPU model name from /proc/cpuinfo (or the platform string)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def total_memory_gib():
    """Physical memory in GiB (None when unknown)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return None


def library_versions():
    """Versions of Python, NumPy and every benchmarked library."""
    versions = {"python": platform.python_version(), "numpy": np.__version__}
    for name, module in (("gbc-core", "gbc_core"), ("scikit-learn", "sklearn"),
                         ("xgboost", "xgboost"), ("lightgbm", "lightgbm")):
        try:
            versions[name] = __import__(module).__version__
        except ImportError:
            versions[name] = "not installed"
    return versions


def source_revision():
    """The checkout's git commit, with "+modified" when its ``src`` has local changes."""
    root = os.path.dirname(HERE)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                                capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+modified" if dirty else "")


def machine_info():
    """A description of the machine the benchmark runs on."""
    return {
        "cpu": cpu_model(),
        "cores": n_cores(),
        "memory_gib": total_memory_gib(),
        "platform": platform.platform(),
        "load_average": os.getloadavg(),
        "versions": library_versions(),
        "gbc_core_revision": source_revision(),
    }


# ------------------------------------------------------------------- workloads
def load_tsv(path):
    """A tab-separated file with the label first: (X float32, y int64)."""
    data = np.loadtxt(path, delimiter="\t", dtype=np.float64)
    return np.ascontiguousarray(data[:, 1:], dtype=np.float32), data[:, 0].astype(np.int64)


def make_generated(n_train, seed=SEED):
    """A synthetic binary task of ``n_train`` training rows and n_train / 4 test rows.

    ``make_classification`` with 28 features (14 informative, 6 redundant linear
    combinations, 8 noise), 4 clusters per class and 5 % flipped labels; every value
    is a continuous float, so the exact splitters see (nearly) all-distinct values.
    """
    from sklearn.datasets import make_classification

    n_test = n_train // 4
    X, y = make_classification(
        n_samples=n_train + n_test, n_features=N_FEATURES, n_informative=14,
        n_redundant=6, n_repeated=0, n_clusters_per_class=4, flip_y=0.05,
        class_sep=1.0, shuffle=True, random_state=seed,
    )
    X = X.astype(np.float32)
    y = y.astype(np.int64)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def prepare_workload(name, data_dir, out_dir):
    """Write the workload's arrays to ``out_dir`` as .npy files and describe it."""
    if name == "higgs" and data_dir is None:  # the sample the package ships
        from gbc_core.datasets import load_higgs_sample

        X_train, y_train, X_test, y_test = load_higgs_sample()
        X_train = np.ascontiguousarray(X_train, dtype=np.float32)
        X_test = np.ascontiguousarray(X_test, dtype=np.float32)
        source = "HIGGS sample (gbc_core.datasets.load_higgs_sample)"
    elif name == "higgs":
        X_train, y_train = load_tsv(os.path.join(data_dir, "higgs_sample.train"))
        X_test, y_test = load_tsv(os.path.join(data_dir, "higgs_sample.test"))
        source = f"HIGGS sample ({data_dir}/higgs_sample.train/.test)"
    elif name in GENERATED:
        X_train, y_train, X_test, y_test = make_generated(GENERATED[name])
        source = f"make_classification(seed={SEED})"
    else:
        raise ValueError(f"unknown workload {name!r}; choose from higgs, "
                         f"{', '.join(GENERATED)}")
    os.makedirs(out_dir, exist_ok=True)
    for key, arr in (("X_train", X_train), ("y_train", y_train),
                     ("X_test", X_test), ("y_test", y_test)):
        np.save(os.path.join(out_dir, key + ".npy"), np.ascontiguousarray(arr))
    return {
        "name": name,
        "source": source,
        "n_train": int(X_train.shape[0]),
        "n_test": int(X_test.shape[0]),
        "n_features": int(X_train.shape[1]),
        "X_train_mb": X_train.astype(np.float32).nbytes / 2**20,
        "positive_rate": float(np.mean(y_train)),
        "dir": out_dir,
    }


# ---------------------------------------------------------------------- models
def make_model(library, n_jobs):
    """The estimator of ``library`` configured as closely as possible to gbc-core.

    Common: 100 trees, depth 3 (at most 8 leaves), learning rate 0.1, no L1/L2
    regularisation, no minimum gain, no row or column subsampling, and F0 = 0
    (raw score 0, p = 0.5) wherever the library allows it.
    """
    if library == "gbc-core":
        from gbc_core import GradientBoostingClassifier

        return GradientBoostingClassifier(
            n_estimators=N_TREES, learning_rate=LEARNING_RATE, max_depth=MAX_DEPTH,
            min_samples_split=2, min_samples_leaf=1, subsample=1.0, init="zero",
            random_state=SEED, n_jobs=n_jobs,
        )
    if library == "sklearn-gbc":
        from sklearn.ensemble import GradientBoostingClassifier

        # Single-threaded: scikit-learn's GBC has no n_jobs.
        return GradientBoostingClassifier(
            n_estimators=N_TREES, learning_rate=LEARNING_RATE, max_depth=MAX_DEPTH,
            min_samples_split=2, min_samples_leaf=1, min_impurity_decrease=0.0,
            subsample=1.0, max_features=None, init="zero", random_state=SEED,
        )
    if library == "sklearn-hgb":
        from sklearn.ensemble import HistGradientBoostingClassifier

        # Uses all cores through OpenMP by default (no n_jobs); the baseline F0 is the
        # prior log-odds and cannot be set to zero.
        return HistGradientBoostingClassifier(
            max_iter=N_TREES, learning_rate=LEARNING_RATE, max_depth=MAX_DEPTH,
            max_leaf_nodes=None, min_samples_leaf=1, l2_regularization=0.0,
            max_bins=255, early_stopping=False, random_state=SEED,
        )
    if library in ("xgboost-exact", "xgboost-hist"):
        from xgboost import XGBClassifier

        return XGBClassifier(
            n_estimators=N_TREES, learning_rate=LEARNING_RATE, max_depth=MAX_DEPTH,
            tree_method=library.split("-")[1], grow_policy="depthwise",
            reg_lambda=0.0, reg_alpha=0.0, gamma=0.0, min_child_weight=0.0,
            subsample=1.0, colsample_bytree=1.0, max_bin=256, base_score=0.5,
            objective="binary:logistic", n_jobs=n_jobs, random_state=SEED,
        )
    if library == "lightgbm":
        from lightgbm import LGBMClassifier

        return LGBMClassifier(
            n_estimators=N_TREES, learning_rate=LEARNING_RATE, max_depth=MAX_DEPTH,
            num_leaves=2**MAX_DEPTH, reg_lambda=0.0, reg_alpha=0.0,
            min_child_samples=1, min_child_weight=0.0, min_split_gain=0.0,
            subsample=1.0, colsample_bytree=1.0, max_bin=255, boost_from_average=False,
            n_jobs=n_jobs, random_state=SEED, verbose=-1,
        )
    raise ValueError(f"unknown library {library!r}")


# ---------------------------------------------------------------- machine load
def cpu_ticks():
    """(total, idle) clock ticks of all CPUs since boot, from /proc/stat."""
    with open("/proc/stat") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields), idle


def cpu_busy_fraction(interval=1.0):
    """Fraction of all CPUs busy over ``interval`` seconds, or None when unknown."""
    try:
        total0, idle0 = cpu_ticks()
        time.sleep(interval)
        total1, idle1 = cpu_ticks()
    except (OSError, ValueError, IndexError):
        return None
    total = total1 - total0
    return None if total <= 0 else 1.0 - (idle1 - idle0) / total


def wait_for_quiet(max_wait, threshold=0.25, poll=5.0):
    """Wait up to ``max_wait`` seconds for the CPUs to be at most ``threshold`` busy.

    Returns the busy fraction seen last (None when /proc/stat is unavailable), so a
    run on a shared machine can record how loaded the machine was when it started.
    """
    deadline = time.monotonic() + max_wait
    busy = cpu_busy_fraction()
    while busy is not None and busy > threshold and time.monotonic() < deadline:
        time.sleep(poll)
        busy = cpu_busy_fraction()
    return busy


# ---------------------------------------------------------------- measurement
def _status_kib(field):
    """A ``/proc/self/status`` field (``VmRSS``, ``VmHWM``) in KiB, or None."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak_rss():
    """Reset the kernel's RSS high-water mark to the current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


class RssSampler:
    """Peak RSS of this process sampled every ``interval`` seconds by a thread (psutil)."""

    def __init__(self, interval=0.005):
        import psutil

        self._process = psutil.Process()
        self._interval = interval
        self.peak = self._process.memory_info().rss
        self._stop = False

    def _run(self):
        while not self._stop:
            self.peak = max(self.peak, self._process.memory_info().rss)
            time.sleep(self._interval)

    def __enter__(self):
        import threading

        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop = True
        self._thread.join()
        self.peak = max(self.peak, self._process.memory_info().rss)
        return False


def measure_fit_memory(model, X, y):
    """Fit once and return (seconds, peak RSS increase in MiB, method).

    Linux: the kernel's high-water mark ``VmHWM`` is reset to the current RSS just
    before the fit (``/proc/self/clear_refs``), so ``VmHWM`` afterwards is the exact
    peak during the fit. (``ru_maxrss`` is not used: it also carries the peak of the
    parent process across fork/exec.) Elsewhere a psutil thread samples the RSS every
    5 ms, which may miss very short spikes.
    """
    import gc

    gc.collect()
    if _reset_peak_rss() and _status_kib("VmHWM") is not None:
        before_kib = _status_kib("VmRSS")
        start = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - start
        increase_kib = _status_kib("VmHWM") - before_kib
        method = "VmHWM after reset"
    else:
        with RssSampler() as sampler:
            before = sampler.peak
            start = time.perf_counter()
            model.fit(X, y)
            seconds = time.perf_counter() - start
        increase_kib = (sampler.peak - before) / 1024.0
        method = "psutil sampling (5 ms)"
    return seconds, max(0.0, increase_kib) / 1024.0, method


class OtherLoad:
    """CPU share used by *other* processes while the block runs (0 = machine to itself).

    Machine-wide busy CPU time (from /proc/stat) minus this process's own CPU time,
    divided by wall time x cores; on a shared machine it tells how much the
    measurement competed with teammates' jobs.
    """

    def __enter__(self):
        self.value = None
        try:
            self._ticks = cpu_ticks()
        except (OSError, ValueError, IndexError):
            self._ticks = None
        self._own = self._own_cpu()
        self._start = time.perf_counter()
        return self

    @staticmethod
    def _own_cpu():
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    def __exit__(self, *exc):
        if self._ticks is None:
            return False
        wall = time.perf_counter() - self._start
        total, idle = cpu_ticks()
        busy_s = ((total - self._ticks[0]) - (idle - self._ticks[1])) / os.sysconf("SC_CLK_TCK")
        if wall > 0:
            others = busy_s - (self._own_cpu() - self._own)
            self.value = max(0.0, others / (wall * n_cores()))
        return False


def time_calls(fn, repeats):
    """Seconds of each of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def run_worker(library, workload_dir, repeats, fit_repeats, predict_rows,
               latency_calls, n_jobs):
    """Measure one library on one workload (runs in a fresh subprocess)."""
    from sklearn.metrics import log_loss, roc_auc_score

    X_train = np.load(os.path.join(workload_dir, "X_train.npy"))
    y_train = np.load(os.path.join(workload_dir, "y_train.npy"))
    X_test = np.load(os.path.join(workload_dir, "X_test.npy"))
    y_test = np.load(os.path.join(workload_dir, "y_test.npy"))
    make_model(library, n_jobs)  # import the library before measuring memory

    # Fit: the first fit also measures memory (fresh process), then the rest.
    with OtherLoad() as fit_load:
        model = make_model(library, n_jobs)
        first, mem_mb, mem_method = measure_fit_memory(model, X_train, y_train)
        fit_times = [first]
        for _ in range(fit_repeats - 1):
            del model
            model = make_model(library, n_jobs)
            fit_times += time_calls(functools.partial(model.fit, X_train, y_train), 1)

    # Quality on the test set.
    proba = model.predict_proba(X_test)[:, 1]
    auc = roc_auc_score(y_test, proba)
    loss = log_loss(y_test, np.clip(proba, 1e-15, 1 - 1e-15))

    # Batch throughput on the test set tiled to >= predict_rows rows.
    tiles = max(1, math.ceil(predict_rows / X_test.shape[0]))
    X_big = np.ascontiguousarray(np.tile(X_test, (tiles, 1)))
    model.predict_proba(X_big[:1000])  # warm-up
    with OtherLoad() as predict_load:
        predict_times = time_calls(functools.partial(model.predict_proba, X_big), repeats)
    throughput = X_big.shape[0] / statistics.median(predict_times)
    del X_big

    # Single-row latency over distinct rows.
    rows = [X_test[i % X_test.shape[0]: i % X_test.shape[0] + 1]
            for i in range(latency_calls)]
    for row in rows[:10]:  # warm-up
        model.predict_proba(row)
    latencies = []
    for row in rows:
        start = time.perf_counter()
        model.predict_proba(row)
        latencies.append(time.perf_counter() - start)

    return {
        "library": library,
        "fit_times": fit_times,
        "fit_s": statistics.median(fit_times),
        "fit_peak_rss_increase_mb": mem_mb,
        "memory_method": mem_method,
        "predict_rows": int(tiles * X_test.shape[0]),
        "predict_times": predict_times,
        "predict_rows_per_s": throughput,
        "latency_ms": 1e3 * statistics.median(latencies),
        "auc": float(auc),
        "log_loss": float(loss),
        "other_cpu_during_fit": fit_load.value,
        "other_cpu_during_predict": predict_load.value,
    }


def run_in_subprocess(library, workload, args):
    """Run ``run_worker`` in a fresh Python process and return its result dict."""
    fit_repeats = args.repeats
    if library == "sklearn-gbc" and workload["n_train"] > SLOW_ROWS:
        fit_repeats = 1
    cmd = [
        sys.executable, os.path.abspath(__file__), "--worker", library,
        "--workload-dir", workload["dir"], "--repeats", str(args.repeats),
        "--fit-repeats", str(fit_repeats), "--predict-rows", str(args.predict_rows),
        "--latency-calls", str(args.latency_calls), "--n-jobs", str(args.n_jobs),
    ]
    busy_before = wait_for_quiet(args.wait_quiet)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        return {"library": library, "error": " | ".join(tail) or f"exit {proc.returncode}",
                "wall_s": wall, "cpu_busy_before": busy_before}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall_s"] = wall
    result["cpu_busy_before"] = busy_before
    if proc.stderr.strip():
        result["stderr"] = proc.stderr.strip()[-2000:]
    return result


# --------------------------------------------------------------------- report
def pool_rounds(rounds):
    """One library's results of several rounds as one result: fit and predict times
    pooled (medians over all of them), latency the median of the rounds' medians,
    memory and quality from the first round (a fresh process each round, the same
    data and model)."""
    ok = [r for r in rounds if "fit_times" in r]
    if len(ok) < len(rounds):
        return next(r for r in rounds if "fit_times" not in r)
    pooled = dict(ok[0])
    pooled["rounds"] = len(ok)
    pooled["fit_times"] = [t for r in ok for t in r["fit_times"]]
    pooled["fit_s"] = statistics.median(pooled["fit_times"])
    pooled["predict_times"] = [t for r in ok for t in r["predict_times"]]
    pooled["predict_rows_per_s"] = pooled["predict_rows"] / statistics.median(
        pooled["predict_times"])
    pooled["latency_ms"] = statistics.median(r["latency_ms"] for r in ok)
    for key in ("other_cpu_during_fit", "other_cpu_during_predict"):
        values = [r[key] for r in ok if r.get(key) is not None]
        pooled[key] = statistics.mean(values) if values else None
    pooled["wall_s"] = sum(r.get("wall_s", 0.0) for r in ok)
    return pooled


def add_ratios(results):
    """Ratios against gbc-core; > 1 means gbc-core is faster."""
    ref = next((r for r in results if r["library"] == "gbc-core" and "fit_s" in r), None)
    for r in results:
        if ref is None or "fit_s" not in r:
            continue
        r["fit_ratio"] = r["fit_s"] / ref["fit_s"]
        r["predict_ratio"] = ref["predict_rows_per_s"] / r["predict_rows_per_s"]
        r["latency_ratio"] = r["latency_ms"] / ref["latency_ms"]


def _fmt(value, spec):
    return "-" if value is None else format(value, spec)


def _pct(value):
    return "-" if value is None else f"{100 * value:.0f}%"


def markdown_table(workload, results):
    """The markdown table of one workload."""
    lines = [
        f"### {workload['name']}: {workload['n_train']:,} train / "
        f"{workload['n_test']:,} test rows x {workload['n_features']} features "
        f"(X_train float32 = {workload['X_train_mb']:.1f} MiB)",
        "",
        "| library | fit s | fit ratio | predict rows/s | predict ratio | "
        "1-row latency ms | latency ratio | fit peak RSS +MiB | test AUC | test log-loss | "
        "others' CPU fit / predict |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    notes = []
    for r in results:
        name = r["library"]
        if "skipped" in r:
            lines.append(f"| {name} | skipped | | | | | | | | | |")
            notes.append(f"{name}: {r['skipped']}")
            continue
        if "error" in r:
            lines.append(f"| {name} | error | | | | | | | | | |")
            notes.append(f"{name} failed: {r['error']}")
            continue
        runs = len(r["fit_times"])
        fit = f"{r['fit_s']:.3f}" + (" (1 run)" if runs == 1 else "")
        lines.append(
            f"| {name} | {fit} | {_fmt(r.get('fit_ratio'), '.2f')} | "
            f"{r['predict_rows_per_s']:,.0f} | {_fmt(r.get('predict_ratio'), '.2f')} | "
            f"{r['latency_ms']:.3f} | {_fmt(r.get('latency_ratio'), '.2f')} | "
            f"{r['fit_peak_rss_increase_mb']:.1f} | {r['auc']:.4f} | {r['log_loss']:.4f} | "
            f"{_pct(r.get('other_cpu_during_fit'))} / {_pct(r.get('other_cpu_during_predict'))} |"
        )
    if notes:
        lines.append("")
        lines.extend(f"- {note}" for note in notes)
    return "\n".join(lines)


# ------------------------------------------------------------------------ main
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default="higgs,200k,1m",
                        help="comma-separated: higgs, 200k, 1m (default: all)")
    parser.add_argument("--libraries", default=",".join(LIBRARIES),
                        help=f"comma-separated subset of {', '.join(LIBRARIES)}")
    parser.add_argument("--repeats", type=int, default=3,
                        help="fits and batch predictions per library (median reported)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every library this many times, in turn (gbc-core, then "
                             "each peer, then again), and pool the measurements: on a "
                             "machine whose speed drifts, every library's median then "
                             "spans the same periods (default: 1)")
    parser.add_argument("--skip-slow", action="store_true",
                        help="skip scikit-learn's GradientBoostingClassifier on 1m")
    parser.add_argument("--predict-rows", type=int, default=1_000_000,
                        help="minimum rows of the tiled prediction set")
    parser.add_argument("--latency-calls", type=int, default=200,
                        help="single-row predict_proba calls for the latency")
    parser.add_argument("--n-jobs", type=int, default=n_cores(),
                        help="threads for every library (default: all cores)")
    parser.add_argument("--data-dir", default=None,
                        help="directory of higgs_sample.train/.test (default: the same "
                             "sample as shipped with the package, "
                             "gbc_core.datasets.load_higgs_sample)")
    parser.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                        help="before each library, wait up to SECONDS for the CPUs to be "
                             "at most 25%% busy (shared machines; default: do not wait)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    # Internal: one measurement in a fresh process.
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--workload-dir", help=argparse.SUPPRESS)
    parser.add_argument("--fit-repeats", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        result = run_worker(args.worker, args.workload_dir, args.repeats,
                            args.fit_repeats or args.repeats, args.predict_rows,
                            args.latency_calls, args.n_jobs)
        print(json.dumps(result))
        return 0

    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    libraries = [name.strip() for name in args.libraries.split(",") if name.strip()]
    unknown = sorted(set(libraries) - set(LIBRARIES))
    if unknown:
        raise SystemExit(f"unknown libraries: {unknown}")
    if "gbc-core" in libraries:  # reference first
        libraries.remove("gbc-core")
        libraries.insert(0, "gbc-core")

    info = machine_info()
    started = datetime.datetime.now().astimezone()
    v = info["versions"]
    print(f"# gbc-core benchmark, {started:%Y-%m-%d %H:%M %Z}\n")
    print(f"- machine: {info['cpu']}, {info['cores']} cores, "
          f"{_fmt(info['memory_gib'], '.1f')} GiB RAM; {info['platform']}")
    print("- versions: " + ", ".join(f"{k} {val}" for k, val in v.items())
          + f" (gbc-core source at {info['gbc_core_revision']})")
    print(f"- load average at start: {', '.join(f'{x:.2f}' for x in info['load_average'])}")
    print(f"- n_jobs = {args.n_jobs} for every library (scikit-learn GBC is single-threaded; "
          "HistGradientBoosting uses all cores by default)")
    rounds = (f" in each of {args.rounds} rounds (libraries in turn, pooled; "
              "scikit-learn GBC: first round only)" if args.rounds > 1 else "")
    print(f"- fit: median of {args.repeats} fits{rounds} (scikit-learn GBC: 1 fit above "
          f"{SLOW_ROWS:,} training rows); predict: median of {args.repeats} predict_proba "
          f"calls on >= {args.predict_rows:,} rows; latency: median of "
          f"{args.latency_calls} single-row predict_proba calls")
    print("- ratios: fit = peer / gbc-core time, predict = gbc-core / peer throughput, "
          "latency = peer / gbc-core latency (> 1: gbc-core is faster); "
          "memory = peak RSS increase during the first fit in a fresh process; "
          "others' CPU = share of all cores used by other processes during the fits / "
          "the batch predictions (0% = the machine to itself)\n",
          flush=True)

    report = {"started": started.isoformat(), "machine": info, "args": {
        k: val for k, val in vars(args).items()
        if k not in ("worker", "workload_dir", "fit_repeats")}, "workloads": []}
    with tempfile.TemporaryDirectory(prefix="gbc-bench-") as tmp:
        for name in workloads:
            workload = prepare_workload(name, args.data_dir, os.path.join(tmp, name))
            runs = {library: [] for library in libraries}
            for round_ in range(args.rounds):
                for library in libraries:
                    if library == "sklearn-gbc" and name == "1m" and args.skip_slow:
                        continue
                    if library == "sklearn-gbc" and round_ > 0:
                        continue  # minutes per fit: one round is enough to rank it
                    print(f"  running {library} on {name}"
                          + (f" (round {round_ + 1} of {args.rounds})" if args.rounds > 1
                             else "") + " ...", file=sys.stderr, flush=True)
                    runs[library].append(run_in_subprocess(library, workload, args))
            results = []
            for library in libraries:
                if not runs[library]:
                    results.append({"library": library,
                                    "skipped": "skipped on 1m (--skip-slow)"})
                else:
                    results.append(pool_rounds(runs[library]))
            add_ratios(results)
            print(markdown_table(workload, results) + "\n", flush=True)
            workload = {k: val for k, val in workload.items() if k != "dir"}
            report["workloads"].append({"workload": workload, "results": results})

    report["finished"] = datetime.datetime.now().astimezone().isoformat()
    report["load_average_end"] = os.getloadavg()
    print(f"- load average at end: "
          f"{', '.join(f'{x:.2f}' for x in report['load_average_end'])}")
    if any(r.get("memory_method", "").startswith("psutil")
           for w in report["workloads"] for r in w["results"]):
        print("- memory: the high-water mark could not be reset; the RSS was sampled "
              "every 5 ms (short spikes may be missed)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
        print(f"- results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
