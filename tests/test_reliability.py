"""Reliability under bad input, faults and load (issue 7), CI budgets.

* API fuzzing: ``fuzz_api.py`` (hypothesis, derandomized, a fixed budget) run in a
  child interpreter, so that a crash or a hang fails one test with the child's
  output and the last case tried instead of killing the run.
* Numerical safety with warnings as errors: saturated probabilities, gamma with a
  zero denominator, a stable log-loss, weights and learning rates at the ends of
  the float64 range.
* Faults: exceptions and KeyboardInterrupt in the middle of a fit, SIGINT to a
  fitting process, allocation failures under an address-space limit.
* Leaks: fit/predict/save/load in a loop with flat RSS and traced memory.
* Threads: fits in parallel threads, the GIL released during fit, a model shared
  by 8 threads calling every predict method.
* Scale: strided and broadcast views, a view too large to materialise.

The long versions are scripts: ``benchmarks/reliability_soak.py`` (leak loop,
threads for a minute, interrupt latency, 64-bit indexing on > 2**31 entries) and
``benchmarks/fuzz_model_files.py`` (tens of thousands of corrupted model files).
Tests marked ``slow`` are left out of the debug-build run (``.ci/debug_build.sh``).
See docs/reliability.md.
"""

import gc
import hashlib
import os
import pickle
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import gbc_core
from gbc_core import GradientBoostingClassifier as GBC
from gbc_core import ModelFormatError, newton_leaf_values
from gbc_core import BinomialLoss, MultinomialLoss, _leaves

from conftest import make_continuous, other_thread_progress, require

HERE = Path(__file__).resolve().parent
FUZZ_API = HERE / "fuzz_api.py"


def _rss():
    psutil = require("psutil")
    return psutil.Process().memory_info().rss


def _live_rss():
    """RSS after glibc gives its free heap pages back (``malloc_trim``, where the C
    library has it): the memory still held, not the arenas' free pages, which
    threads on a loaded machine leave behind in varying amounts."""
    import ctypes
    import ctypes.util
    try:
        ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim(0)
    except (OSError, AttributeError, TypeError):
        pass
    return _rss()


def _child_env(**extra):
    env = dict(os.environ)
    env.update({k: str(v) for k, v in extra.items()})
    return env


# ------------------------------------------------------------- API fuzzing
def test_api_fuzz(tmp_path):
    """The hypothesis fuzz of fuzz_api.py in a child interpreter (see its docstring).

    A child, not in-process: a segfault, abort or hang in a kernel would otherwise
    take the whole test run down (or stall it) with no hint of the input. Here it
    fails this test with the child's output, faulthandler's traceback and the
    pickled case that was running.
    """
    require("hypothesis")
    last = tmp_path / "last_case.pkl"
    cmd = [sys.executable, "-X", "faulthandler", "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "-W", "ignore::DeprecationWarning", "--rootdir", str(tmp_path), str(FUZZ_API)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=400, cwd=tmp_path,
                              env=_child_env(GBC_CORE_FUZZ_LAST=last))
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the API fuzz hung (over 400 s); last case: {_last_case(last)}\n"
                    f"{(exc.stdout or b'')[-3000:]!r}")
    tail = (proc.stdout + proc.stderr)[-6000:]
    assert proc.returncode == 0, (
        f"API fuzz failed (exit code {proc.returncode}); last case: {_last_case(last)}\n{tail}")
    assert re.search(r"\b5 passed\b", proc.stdout), tail  # the five fuzz properties


def _last_case(path):
    try:
        with open(path, "rb") as fh:
            return repr(pickle.load(fh))[:3000]
    except Exception as exc:  # noqa: BLE001 - only for the failure message
        return f"<unavailable: {exc}>"


# -------------------------------------------------------- numerical safety
@pytest.fixture
def warnings_as_errors():
    """Warnings are errors, and so are NumPy overflows, invalid values and divisions
    by zero (underflow to 0 is the expected saturation)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
            yield


def _sigmoid_ref(f):
    f = np.asarray(f, dtype=np.float64)
    with np.errstate(over="ignore"):
        return np.where(f >= 0, 1 / (1 + np.exp(-np.abs(f))), np.exp(-np.abs(f)) / (1 + np.exp(-np.abs(f))))


def test_probabilities_saturate_cleanly(warnings_as_errors):
    raw = np.array([-np.inf, -1e308, -1e300, -1000.0, -745.2, -710.0, -700.0, -36.0, -0.0,
                    0.0, 36.0, 700.0, 710.0, 745.2, 1000.0, 1e300, 1e308, np.inf])
    proba = BinomialLoss().proba(raw[:, None])
    assert np.isfinite(proba).all()
    assert ((proba >= 0) & (proba <= 1)).all()
    np.testing.assert_array_equal(proba.sum(axis=1), 1.0)
    assert proba[0, 1] == 0.0 and proba[-1, 1] == 1.0
    np.testing.assert_array_equal(proba[raw <= -745.2, 1], 0.0)
    np.testing.assert_array_equal(proba[raw >= 710.0, 1], 1.0)
    assert proba[8, 1] == proba[9, 1] == 0.5
    np.testing.assert_allclose(proba[:, 1], _sigmoid_ref(raw), rtol=1e-15, atol=0)
    # Softmax: the same extremes as raw scores of three classes.
    finite = raw[np.isfinite(raw)]
    scores = np.stack([finite, -finite, np.zeros_like(finite)], axis=1)
    proba = MultinomialLoss(3).proba(scores)
    assert np.isfinite(proba).all() and ((proba >= 0) & (proba <= 1)).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    with np.errstate(over="ignore"):
        shifted = scores - scores.max(axis=1, keepdims=True)
    expected = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(proba, expected, rtol=1e-14, atol=1e-300)


def test_scores_beyond_700_end_to_end(warnings_as_errors):
    """A separable problem with a large learning rate drives |F| far past 700: the
    fit, the training scores and predictions stay finite and warning-free."""
    X = np.linspace(-1, 1, 200)[:, None]
    y = (X[:, 0] > 0).astype(int)
    model = GBC(n_estimators=30, max_depth=1, learning_rate=1e4).fit(X, y)
    raw = model.decision_function(X)
    assert np.abs(raw).max() > 700
    assert np.isfinite(model.train_score_).all()
    proba = model.predict_proba(X)[:, 1]
    np.testing.assert_array_equal(proba, (raw > 0).astype(float))
    # The loss is computed stably (log1p/exp form): no inf for saturated rows.
    again = gbc_core.from_bytes(model.to_bytes())
    np.testing.assert_array_equal(again.decision_function(X), raw)


def test_log_loss_is_stable(warnings_as_errors):
    raw = np.array([-1e300, -1000.0, -40.0, 0.0, 40.0, 1000.0, 1e300] * 2)
    y = np.repeat([0.0, 1.0], 7)
    per_row = []
    for yi, f in zip(y, raw):
        got = _leaves.weighted_log_loss(np.array([yi]), np.array([f]), None)
        # log(1 + e^f) - y f, written so that it cannot overflow
        ref = max(f, 0.0) + np.log1p(np.exp(-abs(f))) - yi * f
        assert np.isfinite(got) and got >= 0
        assert got == pytest.approx(ref, rel=1e-15, abs=1e-300)
        per_row.append(got)
    w = np.linspace(0.5, 2.0, raw.size)
    total = _leaves.weighted_log_loss(y, raw, w)
    assert total == pytest.approx(np.dot(w, per_row) / w.sum(), rel=1e-14)
    assert _leaves.weighted_log_loss(y, raw, np.zeros_like(w)) == 0.0


def test_gamma_with_a_zero_denominator_is_zero(warnings_as_errors):
    r = np.array([0.0, 0.0, 1.0, -1.0, 0.5, 0.5, 1e-300])
    p = np.array([0.0, 1.0, 0.0, 1.0, 1e-160, 1 - 2**-53, 5e-324])
    leaf = np.arange(r.size)
    gamma = newton_leaf_values(r, p, leaf)
    # p (1 - p) == 0 or under 1e-150: gamma = 0, never inf or NaN
    np.testing.assert_array_equal(gamma[[0, 1, 2, 3, 4, 6]], 0.0)
    assert gamma[5] == pytest.approx(0.5 / (2**-53 * (1 - 2**-53)))
    assert newton_leaf_values(r, p, leaf, sample_weight=np.zeros(r.size)).tolist() == [0.0] * 7
    # A leaf id with no sample at all
    assert newton_leaf_values([0.5], [0.5], [3]).tolist() == [0.0, 0.0, 0.0, 2.0]


@pytest.mark.parametrize("scale", [2.0**1020, 2.0**200, 2.0**-200, 2.0**-1000,
                                   1e308, 1e300, 1e100, 3 * 2.0**64, 1e-300, 1e-320])
def test_weights_at_the_ends_of_the_float64_range(scale, warnings_as_errors):
    """The model does not depend on the scale of the weights, even at the ends of
    the float64 range (they used to give inf gains, NaN importances, unloadable
    models and NaN probabilities, or a model that learned nothing). A power of two
    gives exactly the same model; another factor rounds each weight, so the model
    is the same up to rounding."""
    X, y = make_continuous(n_samples=300, n_features=4, seed=11)
    w = np.random.default_rng(11).uniform(0.25, 1.0, size=300)
    ref = GBC(n_estimators=10, max_depth=3, random_state=0).fit(X, y, sample_weight=w)
    scaled = GBC(n_estimators=10, max_depth=3, random_state=0).fit(
        X, y, sample_weight=w * scale)
    if scale * w.min() < 2.0**-1022:  # subnormal weights: precision lost
        rtol = 1e-2
    elif np.frexp(scale)[0] == 0.5:  # a power of two
        rtol = 0
    else:
        rtol = 1e-10
    np.testing.assert_allclose(scaled.decision_function(X), ref.decision_function(X),
                               rtol=rtol, atol=rtol)
    np.testing.assert_allclose(scaled.train_score_, ref.train_score_, rtol=rtol)
    np.testing.assert_allclose(scaled.feature_importances_, ref.feature_importances_,
                               rtol=rtol, atol=rtol)
    proba = scaled.predict_proba(X)
    assert np.isfinite(proba).all() and scaled.score(X, y) > 0.7
    again = gbc_core.from_bytes(scaled.to_bytes())
    np.testing.assert_array_equal(again.predict_proba(X), proba)


def test_class_weights_at_the_float64_maximum(warnings_as_errors):
    X, y = make_continuous(n_samples=300, n_features=4, seed=12)
    ref = GBC(n_estimators=8, random_state=0).fit(X, y)
    big = GBC(n_estimators=8, random_state=0, class_weight={0: 1.7e308, 1: 1.7e308}).fit(
        X, y, sample_weight=np.full(300, 1e308), eval_set=(X[:50], y[:50], np.full(50, 1e308)))
    np.testing.assert_allclose(big.decision_function(X), ref.decision_function(X),
                               rtol=1e-10, atol=1e-12)
    assert np.isfinite(big.validation_score_).all()


def test_a_learning_rate_whose_scores_would_overflow_is_refused(warnings_as_errors):
    X, y = make_continuous(n_samples=200, n_features=4, seed=13)
    with pytest.raises(ValueError, match="learning_rate=1e\\+308 is too large"):
        GBC(n_estimators=3, learning_rate=1e308).fit(X, y)
    # Large but safe: fits, with saturated probabilities.
    model = GBC(n_estimators=3, learning_rate=1e200).fit(X, y)
    assert np.isfinite(model.predict_proba(X)).all()
    # A model file whose scores could overflow is refused by the loader (a crafted
    # learning rate, the checksum recomputed).
    data = model.to_bytes()
    assert data.count(b'"learning_rate":1e+200') == 2  # the fitted one and the parameter
    body = data[:-32].replace(b'"learning_rate":1e+200', b'"learning_rate":1e+306')
    with pytest.raises(ModelFormatError, match="raw scores can overflow"):
        gbc_core.from_bytes(body + hashlib.sha256(body).digest())
    # Parameters set after fit do not change the fitted model or its file.
    model.learning_rate = 1e306
    assert gbc_core.from_bytes(model.to_bytes()).learning_rate == 1e200


@pytest.mark.parametrize("n_jobs", [10**6, 1025, -10**6, float("inf"), float("nan"), "2"])
def test_absurd_n_jobs_is_a_value_error(n_jobs):
    """n_jobs=100000 used to start that many OpenMP threads and segfault."""
    X, y = make_continuous(n_samples=100, n_features=4, seed=14)
    with pytest.raises(ValueError, match="n_jobs"):
        GBC(n_estimators=2, n_jobs=n_jobs).fit(X, y)
    model = GBC(n_estimators=2).fit(X, y)
    model.set_params(n_jobs=n_jobs)
    with pytest.raises(ValueError, match="n_jobs"):
        model.predict(X)


# -------------------------------------------------------------------- faults
def test_exception_in_the_middle_of_a_fit_frees_everything(monkeypatch):
    """A kernel failing at iteration k: the error propagates, nothing leaks, the
    estimator is not left half-fitted, and the next fit is exactly a clean one."""
    X, y = make_continuous(n_samples=1000, n_features=5, seed=15)
    ref = GBC(n_estimators=6, max_depth=4, random_state=0).fit(X, y)
    real = _leaves.boosting_update
    calls = {"n": 0}

    def failing(*args):
        calls["n"] += 1
        if calls["n"] % 4 == 3:
            raise MemoryError("injected failure")
        return real(*args)

    monkeypatch.setattr(_leaves, "boosting_update", failing)

    def one():
        model = GBC(n_estimators=6, max_depth=4, random_state=0)
        with pytest.raises(MemoryError, match="injected"):
            model.fit(X, y)
        with pytest.raises(gbc_core.NotFittedError):
            model.predict(X)

    for _ in range(20):
        one()
    gc.collect()
    rss0 = _rss()
    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    for _ in range(60):
        one()
    gc.collect()
    grown = _traced_growth(snap0)
    tracemalloc.stop()
    rss_growth = _rss() - rss0
    monkeypatch.setattr(_leaves, "boosting_update", real)
    assert grown < 256 * 1024, f"traced memory grew by {grown} bytes"
    assert rss_growth < 16 * 2**20, f"RSS grew by {rss_growth / 2**20:.1f} MiB"
    again = GBC(n_estimators=6, max_depth=4, random_state=0).fit(X, y)
    np.testing.assert_array_equal(again.decision_function(X), ref.decision_function(X))


def _traced_growth(snapshot):
    diff = tracemalloc.take_snapshot().compare_to(snapshot, "filename")
    return sum(d.size_diff for d in diff)


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs SIGALRM timers")
def test_keyboard_interrupt_during_fit_frees_everything():
    """KeyboardInterrupt raised by a timer at random points of fits (between and
    around the kernel calls): RSS stays flat, a warm-started model keeps its trees,
    and a fit afterwards is exactly a clean one."""
    X, y = make_continuous(n_samples=3000, n_features=5, seed=16)
    params = dict(n_estimators=12, max_depth=4, random_state=0)
    ref = GBC(**params).fit(X, y)
    # The timers are drawn within the quickest of three fits (less a margin): on a
    # machine whose load changes, a fit timed once in a busy moment made most later
    # timers fire after their fit had returned (5 of 25 fits interrupted).
    fit_times = []
    for _ in range(3):
        t0 = time.perf_counter()
        GBC(**params).fit(X, y)
        fit_times.append(time.perf_counter() - t0)
    fit_time = 0.9 * min(fit_times)
    warm = GBC(**dict(params, n_estimators=6, warm_start=True)).fit(X, y)
    warm_raw = warm.decision_function(X)

    def handler(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, handler)
    rng = np.random.default_rng(16)
    interrupted = 0

    def one(model):
        nonlocal interrupted
        # The one-shot timer may also fire once fit has returned, before it is
        # disarmed: the outer handler counts that too, so the test never races.
        try:
            try:
                signal.setitimer(signal.ITIMER_REAL, float(rng.uniform(0.0, fit_time)))
                model.fit(X, y)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except KeyboardInterrupt:
            interrupted += 1

    try:
        for _ in range(5):
            one(GBC(**params))
        gc.collect()
        rss0 = _rss()
        for i in range(20):
            one(GBC(**params))
            if i % 4 == 0:
                warm.set_params(n_estimators=12)
                n_before = warm.n_estimators_
                one(warm)
                if warm.n_estimators_ == n_before:  # interrupted: the old model stands
                    np.testing.assert_array_equal(warm.decision_function(X), warm_raw)
                warm = GBC(**dict(params, n_estimators=6, warm_start=True)).fit(X, y)
        gc.collect()
        rss_growth = _rss() - rss0
    finally:
        signal.signal(signal.SIGALRM, old)
    assert interrupted >= 10, interrupted
    assert rss_growth < 24 * 2**20, f"RSS grew by {rss_growth / 2**20:.1f} MiB"
    np.testing.assert_array_equal(GBC(**params).fit(X, y).decision_function(X),
                                  ref.decision_function(X))


_SIGINT_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    from gbc_core import GradientBoostingClassifier
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200000, 8)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=200000) > 0).astype(np.int8)
    GradientBoostingClassifier(n_estimators=10**6, max_depth=3, verbose=1).fit(X, y)
""")


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_sigint_stops_a_fit_promptly():
    """Ctrl-C on a long fit (200 000 x 8, a million trees, hours of work): once the
    fit is under way, SIGINT ends the process with KeyboardInterrupt within 10 s
    (a fraction of a second on a quiet machine; the bound leaves room for a loaded
    one, whose processes wait for a time slice). Signals are handled between kernel
    calls: each tree, each presort is one call."""
    proc = subprocess.Popen([sys.executable, "-c", _SIGINT_CHILD], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        header = proc.stdout.readline()
        first = proc.stdout.readline()  # the first tree is done
        assert "Iter" in header and first.split()[0] == "1", (header, first)
        time.sleep(1.0)
        sent = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        latency = time.perf_counter() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "KeyboardInterrupt" in err, err[-2000:]
    assert proc.returncode in (-signal.SIGINT, 130, 1), proc.returncode
    assert latency < 10.0, f"the fit took {latency:.2f} s to stop"


_MEMORY_LIMIT_CHILD = textwrap.dedent("""
    import gc, json, resource, sys, traceback
    import numpy as np
    from gbc_core import GradientBoostingClassifier
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60000, 10))
    X[::13, 3] = np.nan
    y = (X[:, 0] > 0).astype(int)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    for extra_mib in [float(a) for a in sys.argv[1:]]:
        gc.collect()
        vm = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (vm + int(extra_mib * 2**20), hard))
        try:
            model = GradientBoostingClassifier(n_estimators=3, max_depth=8, n_jobs=1)
            model.fit(X, y)
            model.predict_proba(X)
            model.apply(X)
            model.to_bytes()
            out = {"extra": extra_mib, "result": "OK"}
        except MemoryError as exc:
            where = traceback.extract_tb(exc.__traceback__)[-1]
            out = {"extra": extra_mib, "result": "MemoryError", "msg": str(exc),
                   "where": where.name}
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        print(json.dumps(out), flush=True)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS semantics")
def test_allocation_failures_raise_memory_error():
    """Fit, predict and save under address-space limits from 1 MiB to 64 MiB above
    the process's size, so that allocations fail at different points (the float32
    copy of X, the labels, the presort arrays and buffers, the tree buffers, the
    predictor): each ends with a result or a MemoryError saying what could not be
    allocated, never a crash. (One child process, the limit lowered and restored.)"""
    extras = [1, 3, 5, 7, 8, 8.25, 8.5, 8.75, 9, 9.5, 10, 11, 12, 14, 16, 64]
    proc = subprocess.run([sys.executable, "-c", _MEMORY_LIMIT_CHILD] + [str(e) for e in extras],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exit code {proc.returncode}\n{proc.stdout}\n{proc.stderr[-3000:]}"
    import json

    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["extra"] for r in results] == extras
    failed = [r for r in results if r["result"] == "MemoryError"]
    for r in failed:
        assert len(r["msg"]) > 10 and ("allocate" in r["msg"] or "memory" in r["msg"].lower()), r
    # The limits reach the numpy copies and the kernels' own allocations, and the
    # largest one leaves room for the whole fit.
    assert len({r["where"] for r in failed}) >= 3, failed
    assert results[-1]["result"] == "OK", results


# --------------------------------------------------------------------- leaks
@pytest.mark.slow
def test_fit_predict_save_load_loop_does_not_leak(tmp_path):
    """300 rounds of fit, predict, save and load on small data: RSS (native
    memory: the kernels' malloc'd buffers) and traced Python memory stay flat.
    RSS is read over rounds run without tracemalloc, whose own tables (a record
    per live allocation, freed at its stop but not always given back to the
    system) counted in RSS and took a loaded machine's run over the bound; the
    traced growth over 300 more rounds. RSS is read after ``malloc_trim`` (free
    heap pages given back), so that it counts what is still held."""
    X, y = make_continuous(n_samples=400, n_features=6, seed=17)
    X[::9, 2] = np.nan
    w = np.random.default_rng(17).uniform(0.5, 2, size=400)
    path = tmp_path / "m.gbc"

    def one(i):
        # every 8th fit with the default threads (OpenMP regions), the rest with one
        model = GBC(n_estimators=5, max_depth=4, subsample=0.8, max_features=0.7,
                    random_state=i % 3, n_jobs=None if i % 8 == 0 else 1)
        model.fit(X, y, sample_weight=w)
        model.predict_proba(X)
        model.apply(X[:50])
        if i % 10 == 0:  # through a file (atomic write, fsync) now and then
            model.save(path)
            again = gbc_core.load(path)
        else:
            again = gbc_core.from_bytes(model.to_bytes())
        again.decision_function(X)

    for i in range(30):  # warm-up: caches, arenas, lazily imported modules
        one(i)
    gc.collect()
    rss0 = _live_rss()
    for i in range(300):
        one(i)
    gc.collect()
    rss_growth = _live_rss() - rss0
    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    for i in range(300):
        one(i)
    gc.collect()
    grown = _traced_growth(snap0)
    tracemalloc.stop()
    assert grown < 256 * 1024, f"traced memory grew by {grown} bytes over 300 rounds"
    assert rss_growth < 8 * 2**20, f"RSS grew by {rss_growth / 2**20:.2f} MiB over 300 rounds"


# ------------------------------------------------------------------- threads
def test_fits_in_parallel_threads_equal_serial_fits():
    """Four models fitted at once in four threads (OpenMP inside each) give exactly
    the models fitted one after the other."""
    jobs = []
    for k in range(4):
        X, y = make_continuous(n_samples=3000 + 500 * k, n_features=5 + k, seed=20 + k)
        X[::11, k] = np.nan
        params = dict(n_estimators=15, max_depth=3 + k % 2, subsample=0.9, random_state=k,
                      n_jobs=2)
        jobs.append((X, y, params))
    serial = [GBC(**p).fit(X, y).to_bytes() for X, y, p in jobs]
    with ThreadPoolExecutor(max_workers=4) as ex:
        for _ in range(2):
            parallel = list(ex.map(lambda job: GBC(**job[2]).fit(job[0], job[1]).to_bytes(),
                                   jobs))
            assert parallel == serial


def test_fit_releases_the_gil():
    """During a fit (presort, split search, leaf update: all GIL-free), another
    Python thread keeps running. (The same for predict is in test_production.py.)"""
    X, y = make_continuous(n_samples=60000, n_features=10, seed=27)
    X32 = np.asfortranarray(X, dtype=np.float32)
    n, seconds, gap = other_thread_progress(
        lambda: GBC(n_estimators=60, max_depth=6, n_jobs=1).fit(X32, y))
    assert seconds > 0.2, seconds  # long enough for the measurement to mean something
    # The other thread ran throughout: at least every 50 ms, or 20% of the fit.
    assert gap < max(0.05, 0.2 * seconds), (n, seconds, gap)


def test_eight_threads_share_one_model():
    """Eight threads call every read-only method of one model for 2 s, mixed with
    saves and loads: each result equals the serial one."""
    X, y = make_continuous(n_samples=2000, n_features=6, seed=28)
    model = GBC(n_estimators=30, max_depth=5, random_state=0).fit(X, y)
    rng = np.random.default_rng(28)
    X_test = rng.normal(size=(30000, 6))
    X_test[rng.uniform(size=X_test.shape) < 0.05] = np.nan
    X_test32 = X_test.astype(np.float32)
    expected = {
        "proba": model.predict_proba(X_test),
        "raw": model.decision_function(X_test),
        "apply": model.apply(X_test[:3000]),
        "staged": list(model.staged_decision_function(X_test[:500]))[-1],
        "label": model.predict(X_test32),
        "bytes": model.to_bytes(),
    }
    ops = {
        "proba": lambda: model.predict_proba(X_test),
        "raw": lambda: model.decision_function(X_test),
        "apply": lambda: model.apply(X_test[:3000]),
        "staged": lambda: list(model.staged_decision_function(X_test[:500]))[-1],
        "label": lambda: model.predict(X_test32),
        "bytes": lambda: gbc_core.from_bytes(model.to_bytes()).to_bytes(),
    }
    names = list(ops)
    deadline = time.perf_counter() + 2.0
    errors, counts = [], []

    def worker(k):
        n = 0
        while time.perf_counter() < deadline:
            name = names[(k + n) % len(names)]
            got = ops[name]()
            ok = got == expected[name] if name == "bytes" else np.array_equal(got, expected[name])
            if not ok:
                errors.append(name)
            n += 1
        counts.append(n)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(counts) == 8 and min(counts) >= 1


# --------------------------------------------------------------------- scale
def test_strided_and_broadcast_views_predict_like_copies():
    X, y = make_continuous(n_samples=2000, n_features=5, seed=29)
    model = GBC(n_estimators=20, max_depth=4, random_state=0).fit(X, y)
    big = np.repeat(np.repeat(X, 3, axis=0), 2, axis=1)
    views = {
        "strided": big[::3, ::2],
        "fortran": np.asfortranarray(X),
        "reversed": X[::-1][::-1],
        "float32 strided": big.astype(np.float32)[::3, ::2],
        "negative strides": X[::-1, ::-1][::-1, ::-1],
    }
    ref = model.decision_function(X)
    for name, view in views.items():
        np.testing.assert_array_equal(model.decision_function(view), ref, err_msg=name)
    row = np.broadcast_to(X[7], (100000, 5))
    np.testing.assert_array_equal(model.decision_function(row),
                                  np.full(100000, ref[7]))
    # fit on views: the same model as on the copy
    np.testing.assert_array_equal(
        GBC(n_estimators=5, random_state=0).fit(big[::3, ::2], y).decision_function(X),
        GBC(n_estimators=5, random_state=0).fit(X, y).decision_function(X))


def test_a_view_too_large_to_materialise_is_a_memory_error():
    """A broadcast view of 2**40 x 8 entries holds no memory, but the kernels need a
    contiguous float32 copy (32 TiB): predict and fit raise MemoryError saying how
    much they could not allocate, promptly and without touching the memory."""
    X, y = make_continuous(n_samples=300, n_features=8, seed=30)
    model = GBC(n_estimators=3).fit(X, y)
    huge = np.broadcast_to(X[:1].astype(np.float32), (2**40, 8))
    t0 = time.perf_counter()
    with pytest.raises(MemoryError, match="allocate"):
        model.predict_proba(huge)
    with pytest.raises(MemoryError, match="allocate"):
        GBC(n_estimators=1).fit(huge, np.broadcast_to(np.array([0]), (2**40,)))
    assert time.perf_counter() - t0 < 5
