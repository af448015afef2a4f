"""Long reliability checks (the CI versions are in tests/test_reliability.py).

    python benchmarks/reliability_soak.py leaks [--iterations 2000]
        fit/predict/save/load/pickle in a loop, and fits interrupted by exceptions
        and KeyboardInterrupt: RSS (psutil) and traced Python memory must stay flat.
    python benchmarks/reliability_soak.py threads [--seconds 60 --threads 8]
        8 threads share one model and call every predict method (and save/load) for
        a minute; every result must equal the serial one. Then several fits in
        parallel threads must equal the serial fits.
    python benchmarks/reliability_soak.py interrupt [--sizes 200000x8,1000000x20,...]
        SIGINT to a process fitting on data of each size, 1 s after its first tree:
        prints how long it takes to stop (KeyboardInterrupt).
    python benchmarks/reliability_soak.py scale [--rows N --features 8]
        64-bit index arithmetic: predict on a float32 array with more than 2**31
        entries (default 2**28 + 4099 rows x 8 = 8.6 GB), checked against predictions
        on the same rows taken in small slices; then the same through a broadcast
        view (zero memory, copied to contiguous memory by the estimator); then a
        broadcast view too large to copy must raise MemoryError. Needs ~13 GB free
        (refuses to start otherwise).
    python benchmarks/reliability_soak.py all      # leaks, threads, interrupt

Each check prints its numbers and the script exits with status 1 if one fails.
"""

import argparse
import gc
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import tracemalloc

import numpy as np

import gbc_core
from gbc_core import GradientBoostingClassifier as GBC


def _data(n, d, seed=0, nan=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] - X[:, 1] * (X[:, 2 % d] > 0) + 0.3 * rng.normal(size=n) > 0).astype(int)
    if nan:
        X[rng.uniform(size=X.shape) < nan] = np.nan
    return X, y


def _rss_mib():
    import psutil

    return psutil.Process().memory_info().rss / 2**20


# ---------------------------------------------------------------------- leaks
def leaks(iterations):
    X, y = _data(800, 6, seed=1, nan=0.05)
    w = np.random.default_rng(1).uniform(0.5, 2, size=800)
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "m.gbc")

    def round_trip(i):
        model = GBC(n_estimators=10, max_depth=4, subsample=0.8, max_features=0.7,
                    random_state=i % 5, n_jobs=None if i % 2 else 1)
        model.fit(X, y, sample_weight=w)
        model.predict_proba(X)
        model.apply(X[:50])
        list(model.staged_predict(X[:20]))
        model.save(path)
        again = gbc_core.load(path)
        pickle.loads(pickle.dumps(again)).decision_function(X)

    from gbc_core import _leaves

    real = _leaves.boosting_update

    def failing_fit(i):
        calls = [0]

        def fail(*args):
            calls[0] += 1
            if calls[0] == 1 + i % 5:
                raise MemoryError("injected")
            return real(*args)

        _leaves.boosting_update = fail
        try:
            GBC(n_estimators=10, max_depth=4).fit(X, y)
        except MemoryError:
            pass
        finally:
            _leaves.boosting_update = real

    def handler(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGALRM, handler)
    rng = np.random.default_rng(2)

    def interrupted_fit(i):
        signal.setitimer(signal.ITIMER_REAL, float(rng.uniform(0, 0.02)))
        try:
            GBC(n_estimators=40, max_depth=4).fit(X, y)
        except KeyboardInterrupt:
            pass
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    ok = True
    for name, fn, n in [("fit/predict/save/load/pickle", round_trip, iterations),
                        ("fit failing mid-way (MemoryError)", failing_fit, iterations // 2),
                        ("fit interrupted (KeyboardInterrupt)", interrupted_fit, iterations // 2)]:
        for i in range(max(20, n // 20)):
            fn(i)
        gc.collect()
        rss0 = _rss_mib()
        tracemalloc.start()
        snap = tracemalloc.take_snapshot()
        t0 = time.perf_counter()
        marks = []
        for i in range(n):
            fn(i)
            if (i + 1) % max(1, n // 5) == 0:
                gc.collect()
                marks.append(round(_rss_mib() - rss0, 2))
        gc.collect()
        traced = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(snap, "filename"))
        tracemalloc.stop()
        growth = _rss_mib() - rss0
        good = growth < 16 and traced < 1 << 20
        ok &= good
        print(f"leaks: {name}: {n} iterations in {time.perf_counter() - t0:.0f} s, "
              f"RSS growth {growth:+.2f} MiB (along the way {marks}), traced Python memory "
              f"{traced / 1024:+.1f} KiB -> {'ok' if good else 'FAIL'}")
    return ok


# -------------------------------------------------------------------- threads
def threads(seconds, n_threads):
    X, y = _data(4000, 8, seed=3, nan=0.03)
    model = GBC(n_estimators=60, max_depth=6, random_state=0).fit(X, y)
    rng = np.random.default_rng(3)
    X_test = rng.normal(size=(50000, 8))
    X_test[rng.uniform(size=X_test.shape) < 0.05] = np.nan
    ops = {
        "predict_proba": lambda: model.predict_proba(X_test),
        "decision_function": lambda: model.decision_function(X_test[::2]),
        "predict": lambda: model.predict(X_test.astype(np.float32)),
        "apply": lambda: model.apply(X_test[:5000]),
        "staged": lambda: list(model.staged_decision_function(X_test[:300]))[-1],
        "bytes": lambda: gbc_core.from_bytes(model.to_bytes()).decision_function(X_test[:1000]),
        "importances": lambda: model.feature_importances_,
    }
    expected = {name: op() for name, op in ops.items()}
    names = list(ops)
    deadline = time.perf_counter() + seconds
    errors, counts = [], [0] * n_threads

    def worker(k):
        n = 0
        while time.perf_counter() < deadline:
            name = names[(k + n) % len(names)]
            if not np.array_equal(ops[name](), expected[name]):
                errors.append(name)
            n += 1
        counts[k] = n

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(n_threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    ok = not errors
    print(f"threads: {n_threads} threads x {seconds:.0f} s on one model: {sum(counts)} calls "
          f"(per thread {min(counts)}..{max(counts)}), {len(errors)} mismatches -> "
          f"{'ok' if ok else 'FAIL ' + str(sorted(set(errors)))}")

    jobs = [(_data(5000 + 1000 * k, 6 + k, seed=10 + k, nan=0.02),
             dict(n_estimators=20, max_depth=4, subsample=0.8, random_state=k)) for k in range(6)]
    serial = [GBC(**p).fit(X, y).to_bytes() for (X, y), p in jobs]
    from concurrent.futures import ThreadPoolExecutor

    t0 = time.perf_counter()
    rounds = 0
    same = True
    with ThreadPoolExecutor(max_workers=n_threads) as ex:
        while time.perf_counter() - t0 < max(5.0, seconds / 4):
            got = list(ex.map(lambda job: GBC(**job[1]).fit(*job[0]).to_bytes(), jobs))
            same &= got == serial
            rounds += 1
    print(f"threads: {rounds} rounds of {len(jobs)} fits in parallel threads, "
          f"{'all equal to the serial fits' if same else 'DIFFERENT from the serial fits'}")
    return ok and same


# ------------------------------------------------------------------ interrupt
_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    from gbc_core import GradientBoostingClassifier
    n, d = int(sys.argv[1]), int(sys.argv[2])
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(np.int8)
    GradientBoostingClassifier(n_estimators=10**6, max_depth=int(sys.argv[3]), verbose=1).fit(X, y)
""")


def interrupt(sizes, max_depth, limit):
    ok = True
    for size in sizes:
        n, d = (int(v) for v in size.split("x"))
        proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(n), str(d), str(max_depth)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        t_start = time.perf_counter()
        proc.stdout.readline()
        proc.stdout.readline()  # the first tree
        first = time.perf_counter() - t_start
        time.sleep(1.0)
        sent = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=600)
        latency = time.perf_counter() - sent
        good = "KeyboardInterrupt" in err and latency < limit
        ok &= good
        print(f"interrupt: {n} x {d}, depth {max_depth}: first tree after {first:.1f} s, "
              f"stopped {latency:.2f} s after SIGINT (exit code {proc.returncode}) -> "
              f"{'ok' if good else 'SLOW/FAIL'}")
    return ok


# ---------------------------------------------------------------------- scale
def scale(rows, d):
    import psutil

    need = rows * d * 4 + rows * 8 * 2 + (1 << 30)
    avail = psutil.virtual_memory().available
    if avail < need:
        print(f"scale: needs {need / 2**30:.1f} GiB free, {avail / 2**30:.1f} GiB available; "
              "not run")
        return False
    entries = rows * d
    print(f"scale: {rows} x {d} = {entries} entries (2**31 = {2**31}), "
          f"{rows * d * 4 / 2**30:.1f} GiB of float32")
    Xs, ys = _data(20000, d, seed=5, nan=0.02)
    model = GBC(n_estimators=5, max_depth=12, random_state=0).fit(Xs, ys)  # deep: both layouts
    rng = np.random.default_rng(5)
    t0 = time.perf_counter()
    X = np.empty((rows, d), dtype=np.float32)
    block = 1 << 22
    base = rng.normal(size=(block, d)).astype(np.float32)
    base[rng.uniform(size=base.shape) < 0.02] = np.nan
    for start in range(0, rows, block):
        stop = min(rows, start + block)
        X[start:stop] = np.roll(base, start // block, axis=0)[: stop - start]
    print(f"scale: filled in {time.perf_counter() - t0:.0f} s")
    t0 = time.perf_counter()
    raw = model.decision_function(X)  # float32, C order: no copy
    print(f"scale: decision_function on all rows in {time.perf_counter() - t0:.0f} s")
    # Rows past 2**31 / d (whose flat index exceeds 2**31) against small slices.
    checks = np.r_[0, rows - 1, 2**31 // d - 1, 2**31 // d, 2**31 // d + 1,
                   rng.integers(2**31 // d, rows, size=2000)]
    ok = True
    for i in checks:
        ok &= bool(model.decision_function(X[i: i + 1])[0] == raw[i])
    print(f"scale: {len(checks)} rows beyond flat index 2**31 checked against single-row "
          f"predictions -> {'ok' if ok else 'FAIL'}")
    del X, raw
    gc.collect()
    row = base[:1]
    view = np.broadcast_to(row, (rows, d))
    t0 = time.perf_counter()
    raw = model.decision_function(view)
    same = bool((raw == model.decision_function(row)[0]).all())
    print(f"scale: broadcast view of {rows} x {d} (copied to contiguous memory by the "
          f"estimator) in {time.perf_counter() - t0:.0f} s -> {'ok' if same else 'FAIL'}")
    del raw
    gc.collect()
    try:
        model.decision_function(np.broadcast_to(row, (2**40, d)))
        mem_ok = False
        print("scale: a 2**40-row view did not fail?!")
    except MemoryError as exc:
        mem_ok = "allocate" in str(exc)
        print(f"scale: 2**40-row view -> MemoryError: {exc}")
    return ok and same and mem_ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("check", choices=["leaks", "threads", "interrupt", "scale", "all"])
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--sizes", default="200000x8,1000000x8,1000000x20,4000000x20")
    ap.add_argument("--max-depth", type=int, default=3)
    ap.add_argument("--latency", type=float, default=2.0,
                    help="seconds within which a fit must stop after SIGINT")
    ap.add_argument("--rows", type=int, default=2**28 + 4099)
    ap.add_argument("--features", type=int, default=8)
    args = ap.parse_args(argv)
    ok = True
    if args.check in ("leaks", "all"):
        ok &= leaks(args.iterations)
    if args.check in ("threads", "all"):
        ok &= threads(args.seconds, args.threads)
    if args.check in ("interrupt", "all"):
        ok &= interrupt(args.sizes.split(","), args.max_depth, args.latency)
    if args.check == "scale":
        ok &= scale(args.rows, args.features)
    print("all passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
