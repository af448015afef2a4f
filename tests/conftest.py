import threading
import time

import numpy as np
import pytest


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
