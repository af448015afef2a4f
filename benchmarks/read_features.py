"""Time of turning a Parquet table's feature columns into the model's float32 rows
(``TableData.features``, the command line's reader), 1M rows x 28 columns of
float64 or int64, median of 7 calls; ``--lossy`` also runs the check of values
float32 does not represent that ``train`` makes.

Usage::

    python benchmarks/read_features.py SRC [--lossy]

``SRC`` is the ``src`` directory of a build (``python setup.py build_ext
--inplace``), so that two builds are timed in turn on the same files.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", help="the src directory of a build of gbc-core")
    ap.add_argument("--lossy", action="store_true", help="with train's lossy-value check")
    ap.add_argument("--rows", type=int, default=1_000_000)
    args = ap.parse_args()
    sys.path.insert(0, args.src)
    import pyarrow as pa
    import pyarrow.parquet as pq

    from gbc_core._tabular import TableData

    names = [f"f{i}" for i in range(28)]
    rng = np.random.default_rng(0)
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("float64", "int64"):
            cols = {name: (rng.normal(size=args.rows) if kind == "float64" else
                           rng.integers(-10**6, 10**6, args.rows)) for name in names}
            cols["y"] = rng.integers(0, 2, args.rows)
            path = os.path.join(tmp, f"{kind}.parquet")
            pq.write_table(pa.table(cols), path)
            data = TableData(path, "parquet")
            table = data.read(names, "y")
            times = []
            for _ in range(7):
                t = time.perf_counter()
                if args.lossy:
                    data.features(table, names, [])
                else:  # (the call of builds before the check)
                    data.features(table, names)
                times.append(time.perf_counter() - t)
            result[kind] = statistics.median(times)
    print(f"{args.src} lossy={args.lossy}: " + ", ".join(
        f"{k} {v * 1000:.1f} ms" for k, v in result.items()))


if __name__ == "__main__":
    main()
