"""Same-run times of the binomial update kernel (``_leaves.boosting_update``) of two
builds of gbc-core (before/after a change).

The update runs once per tree on every row: F += eta * gamma[leaf], p = sigma(F),
r = y - p, the training loss and the next tree's grid maxima (paper eqs. 1-3).
Each build is a source tree whose extensions were built in place (as for
``compare_builds.py``); the two are timed in alternating subprocesses, ``--rounds``
times each, on the same generated rows as a fit passes them (the class codes as
int32, unit weights: no row statistics, every row in the bag), so that both
medians span the same periods of a machine whose speed drifts.

Usage::

    python benchmarks/update_kernel.py BEFORE_DIR AFTER_DIR --rows 1000000 --n-jobs 1,2

prints, per thread count, the median milliseconds of one update for each build
(the median of ``--calls`` calls per round), the ratio after / before and the
range of the per-round ratios.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

WORKER = r"""
import json, statistics, sys, time
import numpy as np
from gbc_core import _leaves
from gbc_core._common import NODE_DTYPE
rows, n_jobs, calls = (int(a) for a in sys.argv[1:4])
rng = np.random.default_rng(0)
n_leaves = 8  # a depth-3 tree: 7 inner nodes, then its 8 leaves
nodes = np.zeros(2 * n_leaves - 1, dtype=NODE_DTYPE)
nodes["feature"][n_leaves - 1:] = -1
leaf = rng.integers(n_leaves - 1, 2 * n_leaves - 1, rows).astype(np.int32)
y = rng.integers(0, 2, rows).astype(np.int32)
raw = rng.normal(0.0, 2.0, rows)
prob, residual = np.empty(rows), np.empty(rows)
_leaves.init_state(y, None, raw, prob, residual, None)
maxima = np.empty(2)
times = []
for _ in range(calls):
    t = time.perf_counter()
    _leaves.boosting_update(nodes, leaf, None, y, None, 0.1, raw, prob, residual, None,
                            n_jobs, grid_maxima=maxima)
    times.append(time.perf_counter() - t)
print(json.dumps([statistics.median(times) * 1e3, _leaves.__file__]))
"""


def _time(build, rows, n_jobs, calls):
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(build), "src"))
    out = subprocess.run([sys.executable, "-c", WORKER, str(rows), str(n_jobs), str(calls)],
                         env=env, capture_output=True, text=True, check=True)
    ms, module = json.loads(out.stdout)
    if not os.path.abspath(module).startswith(os.path.abspath(build) + os.sep):
        raise SystemExit(f"{build}: the worker imported {module}, not this build's")
    return ms


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", help="source tree of the build before the change")
    parser.add_argument("after", help="source tree of the build after the change")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--n-jobs", default="1,2", help="thread counts, e.g. 1,2")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=30, help="updates timed per round")
    args = parser.parse_args(argv)
    print(f"boosting_update of {args.rows:,} rows (8 leaves, unit weights), median of "
          f"{args.calls} calls per round, {args.rounds} alternating rounds; load average "
          f"at start {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| n_jobs | ms before | ms after | ratio | per round |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for n_jobs in (int(j) for j in args.n_jobs.split(",")):
        before, after = [], []
        for _ in range(args.rounds):
            before.append(_time(args.before, args.rows, n_jobs, args.calls))
            after.append(_time(args.after, args.rows, n_jobs, args.calls))
        ratios = [a / b for a, b in zip(after, before)]
        b, a = statistics.median(before), statistics.median(after)
        print(f"| {n_jobs} | {b:.2f} | {a:.2f} | {a / b:.3f} | "
              f"{min(ratios):.2f}-{max(ratios):.2f} |")


if __name__ == "__main__":
    main()
