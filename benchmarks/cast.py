"""The cast of a training X to float32 (``check_features(..., training=True)``):
NumPy's ``asarray`` plus the column extremes of the lossy-value check (the path before
``_binning_kernels.cast_float32``) against the kernel, in the same run, interleaved.

N x D float64 in C order (a user's usual array) to Fortran order (the exact split
method's layout) and to C order (hist: "K"), on 1 and 2 threads; the median wall and
CPU time of ``--rounds`` rounds, each a fresh output (page faults included, as in a
fit). Both paths give the same array and the same warnings (tests/test_cast.py).

    python benchmarks/cast.py --rows 1000000 --features 28 --rounds 7
"""

import argparse
import os
import time

import numpy as np

from gbc_core import _validation
from gbc_core._validation import check_features


def _time(X, order, n_threads, kernel):
    _validation._PARALLEL_CAST_FROM = 0 if kernel else 1 << 62
    wall, cpu = time.perf_counter(), time.process_time()
    out = check_features(X, "X", dtype=np.float32, order=order, training=True,
                         sparse="csc", n_threads=n_threads)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    del out
    return wall, cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=28)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", default="1,2")
    args = parser.parse_args()
    X = np.random.default_rng(0).normal(size=(args.rows, args.features))
    default = _validation._PARALLEL_CAST_FROM
    print(f"{args.rows} x {args.features} float64, C order; median of {args.rounds} "
          f"interleaved rounds; load average at start {os.getloadavg()}")
    print("| to order | threads | NumPy wall s | kernel wall s | ratio | NumPy CPU s "
          "| kernel CPU s | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    try:
        for order in ("F", "K"):
            for n_threads in map(int, args.threads.split(",")):
                got = {False: [], True: []}
                for _ in range(args.rounds):
                    for kernel in (False, True):
                        got[kernel].append(_time(X, order, n_threads, kernel))
                med = {k: np.median(np.array(v), axis=0) for k, v in got.items()}
                print(f"| {order} | {n_threads} | {med[False][0]:.3f} | {med[True][0]:.3f} "
                      f"| {med[True][0] / med[False][0]:.2f} | {med[False][1]:.3f} "
                      f"| {med[True][1]:.3f} | {med[True][1] / med[False][1]:.2f} |")
    finally:
        _validation._PARALLEL_CAST_FROM = default
    print(f"load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
