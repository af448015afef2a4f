import importlib
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

#: The first words of every one-line error of the command line.
ERROR_PREFIX = "gbc-core: error: "


def require(module_name):
    """The module ``module_name``, a reference library of the tests, or a skip.

    The ``test`` extra installs every such library (scikit-learn, pandas, polars,
    pyarrow, dask, hypothesis, psutil); without one, the tests that need it are
    skipped. With ``GBC_CORE_REQUIRE_TEST_DEPS=1`` (CI and the wheel tests) a missing
    one is an error instead: a test that cannot run must not pass as skipped.
    """
    if os.environ.get("GBC_CORE_REQUIRE_TEST_DEPS") == "1":
        return importlib.import_module(module_name)
    return pytest.importorskip(module_name)


def cli(*args, cwd, timeout=300, env=None, stderr=subprocess.PIPE, preexec_fn=None):
    """Run ``python -m gbc_core ARGS`` and return the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", "gbc_core", *map(str, args)],
        cwd=cwd, capture_output=stderr is subprocess.PIPE, text=True, timeout=timeout,
        env=env, stdin=subprocess.DEVNULL, preexec_fn=preexec_fn,
    )


def default_sigint():
    """``preexec_fn`` of a child that a SIGINT interrupts.

    A shell running this suite in the background ignores SIGINT, and a child would
    inherit that: this gives the child the default disposition back.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_main(capsys, monkeypatch, cwd, *args):
    """``gbc_core.cli.main(ARGS)`` in this process: (exit code, stdout, stderr)."""
    from gbc_core.cli import main

    monkeypatch.chdir(cwd)
    capsys.readouterr()
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def ok(proc):
    """``proc`` (a CompletedProcess), checked to have succeeded without a traceback."""
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc


def check_error(args, words, rc, stderr):
    """A failed command: exit status 1 and one line ``gbc-core: error: ...`` holding
    each of ``words``."""
    assert rc == 1, (args, rc, stderr)
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERROR_PREFIX), (args, stderr)
    assert "Traceback" not in stderr
    for w in words:
        assert w in lines[0], (args, w, lines[0])


def make_continuous(n_samples=2000, n_features=8, seed=0):
    """Generated continuous binary data (float32-representable, no ties by design)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, n_features)).astype(np.float32).astype(np.float64)
    logits = X[:, 0] - 2 * X[:, 1] * (X[:, 2] > 0) + 0.5 * X[:, 3] ** 2 - 0.5
    y = (rng.uniform(size=n_samples) < 1 / (1 + np.exp(-logits))).astype(np.int64)
    return X, y


@pytest.fixture
def continuous_data():
    return make_continuous()


def other_thread_progress(work):
    """Run ``work()`` while a second Python thread counts in a loop.

    Returns (count, seconds, longest gap): how far that thread counted during the
    call, how long the call took, and the longest stretch of it in which the thread
    made no progress. A call that holds the GIL stops the counter for its whole
    length (gap = seconds).
    """
    running, stop, stamps = threading.Event(), threading.Event(), []

    def spin():
        running.set()
        n = 0
        while not stop.is_set():
            n += 1
            if n % 1000 == 0:
                stamps.append(time.perf_counter())

    t = threading.Thread(target=spin)
    t.start()
    running.wait()
    time.sleep(0.01)
    start = time.perf_counter()
    work()
    end = time.perf_counter()
    stop.set()
    t.join()
    inside = [s for s in stamps if start <= s <= end]
    gaps = np.diff([start] + inside + [end])
    return 1000 * len(inside), end - start, gaps.max()


def _differing(actual, expected):
    """Boolean array: where ``actual`` and ``expected`` (same shape) differ, floats
    compared bit for bit (so -0.0 differs from 0.0, and NaN equals NaN of the same
    bits)."""
    if actual.dtype.kind == "f" and actual.dtype == expected.dtype:
        bits = np.dtype(f"u{actual.dtype.itemsize}")
        return actual.view(bits) != expected.view(bits)
    return actual != expected


def array_mismatch(actual, expected, what, *, rtol=0.0, atol=0.0, index_name="row"):
    """Why ``actual`` is not ``expected``, in words a user can act on, or None.

    With ``rtol = atol = 0`` the arrays must be equal bit for bit; else floats may
    differ by ``atol + rtol * |expected|`` (NaN where the other has NaN). The message
    names the array (``what``), its shape or dtype if they differ, else how many
    entries differ, the first few indices along the first axis (``index_name``: node,
    row, iteration) and the largest difference with the two values there; no byte
    dumps.
    """
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape:
        return f"{what}: shape {actual.shape}, expected {expected.shape}"
    if actual.dtype != expected.dtype and not (actual.dtype.kind in "iub"
                                               and expected.dtype.kind in "iub"):
        return f"{what}: dtype {actual.dtype}, expected {expected.dtype}"
    if rtol == 0 and atol == 0:
        bad = _differing(actual, expected)
    else:
        with np.errstate(invalid="ignore"):
            tolerance = atol + rtol * np.abs(expected)
            bad = ~((np.abs(actual - expected) <= tolerance)
                    | (np.isnan(actual) & np.isnan(expected)))
    if not bad.any():
        return None
    where = np.argwhere(bad.reshape(actual.shape[0], -1) if actual.ndim else bad[None])
    rows = np.unique(where[:, 0])
    shown = ", ".join(str(r) for r in rows[:10]) + (", ..." if rows.size > 10 else "")
    message = (f"{what}: {int(bad.sum())} of {bad.size} entries differ, in "
               f"{rows.size} {index_name}(s) [{shown}]")
    if actual.dtype.kind in "fiub":
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
        diff = np.where(bad, np.nan_to_num(diff, nan=np.inf), -1.0)
        at = np.unravel_index(int(np.argmax(diff)), actual.shape) if actual.ndim else ()
        message += (f"; largest difference {float(diff[at]):.3g} at index "
                    f"{tuple(int(i) for i in at)}: {actual[at].item()!r}, expected "
                    f"{expected[at].item()!r}")
        if rtol or atol:
            message += f" (tolerance {atol:g} + {rtol:g} * |expected|)"
    return message


def assert_arrays_equal(actual, expected, what, **tolerance):
    """Assert that ``actual`` is ``expected`` (bit for bit, or within ``rtol``/``atol``);
    the failure names the array, the differing indices and the largest difference
    (see :func:`array_mismatch`)."""
    message = array_mismatch(actual, expected, what, **tolerance)
    if message is not None:
        raise AssertionError(message)


def assert_nodes_equal(actual, expected, what, fields=None):
    """Trees (node arrays of the node dtype, or dicts of its fields) equal bit for bit,
    field by field; a failure lists every differing field with its nodes."""
    fields = fields or actual.dtype.names
    problems = [array_mismatch(actual[f], expected[f], f"{what} field {f!r}",
                               index_name="node") for f in fields]
    problems = [p for p in problems if p]
    if problems:
        raise AssertionError("\n".join(problems))


def concatenate_trees(trees, tables, categorical):
    """Trees grown one by one, each with its own table of category sets (the rows its
    categorical thresholds index), as one model: the nodes concatenated (each tree's
    categorical thresholds shifted by the table rows of the trees before it), the
    trees' offsets and the one table. ``trees`` are not modified.

    Returns
    -------
    nodes, tree_offsets, category_sets, shifted_trees
    """
    categorical = None if categorical is None else np.asarray(categorical, dtype=bool)
    shifted, shift = [], 0
    for nodes, bits in zip(trees, tables):
        nodes = nodes.copy()
        if categorical is not None:
            on_cat = (nodes["feature"] >= 0) & categorical[np.maximum(nodes["feature"], 0)]
            nodes["threshold"][on_cat] += shift
            nodes["threshold32"][on_cat] += shift
        shifted.append(nodes)
        shift += bits.shape[0]
    offsets = np.concatenate([[0], np.cumsum([t.shape[0] for t in shifted])]).astype(np.int64)
    table = np.concatenate([np.asarray(b, np.uint32).reshape(-1, 8) for b in tables])
    return np.concatenate(shifted), offsets, table, shifted


def traced_peak(work):
    """Call ``work()`` with tracemalloc on; return its result and the peak of the
    memory NumPy and Python allocated meanwhile, in bytes."""
    import tracemalloc

    tracemalloc.start()
    try:
        result = work()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
