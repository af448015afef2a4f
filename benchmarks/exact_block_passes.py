"""One-thread time of the exact finder's passes for blocked root features, against
the root's scan (issue 33).

On 4 threads or more the exact finder may scan a root's features in blocks of
sorted positions; a pass over the rows first makes each block's sum of w*r (the
root) and each child's rows and w*r per block (the root's children). This script
times those passes over every feature on one thread through the finder's test
hooks (``_block_sums_from_bytes``, ``_child_block_sums``: the code the fit runs),
and the root's scan of the same features, in a build given by ``--src`` (a source
tree built in place), so that two builds can be timed in alternating processes::

    for i in 1 2 3 4 5; do
        python benchmarks/exact_block_passes.py --src BEFORE/src --rows 1000000
        python benchmarks/exact_block_passes.py --src AFTER/src --rows 1000000
    done

Prints one line per row count: the minimum of ``--calls`` calls of each.
"""

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", required=True, help="the build's src folder")
    parser.add_argument("--rows", default="1000000", help="row counts, comma separated")
    parser.add_argument("--calls", type=int, default=15)
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.src))
    sys.path.insert(0, HERE)
    import fit_scaling
    from bench import time_calls
    from gbc_core._common import ROW_STAT_DTYPE
    from gbc_core._exact_splitter import ExactSplitFinder

    for n in (int(r) for r in args.rows.split(",")):
        X = np.asfortranarray(np.asarray(fit_scaling.make_data(n, 2)[0])[:n],
                              dtype=np.float32)
        rng = np.random.default_rng(0)
        r = np.round(rng.normal(size=n) * 2 ** 20) / 2 ** 20  # on a grid: exact sums
        first = (rng.uniform(size=n) < 0.45).astype(np.uint8)
        # A finder whose rule blocks a root feature holds the bytes of all of them.
        blocked = next((f for f in (ExactSplitFinder(X, t) for t in (16, 8))
                        if f._block_bytes() is not None), None)
        if blocked is None:
            print(f"{n} rows: the rule blocks no feature on 8 or 16 threads")
            continue
        one = ExactSplitFinder(X, 1)
        stats = np.empty(n, dtype=ROW_STAT_DTYPE)
        stats["wr"], stats["w"] = r, 1.0
        slot = np.zeros(n, dtype=np.int32)
        # The hooks took no thread count before the row chunks (2026-12-01).
        chunked = "n_threads" in (blocked._block_sums_from_bytes.__doc__ or "")
        extra = (1,) if chunked else ()
        scan = min(time_calls(lambda: one.level_splits(
            stats, slot, None, 1, 0.0, unit_weights=True, grid=(2.0 ** -40, 1.0)),
            args.calls))
        sums = min(time_calls(lambda: blocked._block_sums_from_bytes(r, *extra),
                              args.calls))
        both = min(time_calls(lambda: blocked._child_block_sums(r, first, *extra),
                              args.calls))
        print(f"{'chunks' if chunked else 'per feature'} {n} rows x {X.shape[1]}: "
              f"root scan {scan * 1e3:.1f} ms, block sums {sums * 1e3:.2f} ms "
              f"({sums / scan:.3f} of the scan), block sums + children's counts "
              f"{both * 1e3:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
