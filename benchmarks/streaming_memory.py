"""Peak memory of ``gbc-core predict`` on large files: bounded by the chunk size.

Generates data files of N rows (default 5,000,000; 28 float features like HIGGS plus
an int64 id), trains a small model, then scores each file with

    gbc-core predict model.gbc DATA -o scores.parquet --keep id --chunk-rows C --quiet

in a child process and reports its peak resident memory (``/usr/bin/time -v`` when
present, else ``resource.getrusage(RUSAGE_CHILDREN)``), the wall time and rows/s. The
script exits with status 1 if a peak exceeds ``--bound-mb``.

    python benchmarks/streaming_memory.py                          # 5M rows, Parquet + CSV
    python benchmarks/streaming_memory.py --rows 1000000 --formats parquet,csv,libsvm

Needs pyarrow (``pip install "gbc-core[io]"``). Files go to a temporary directory
(``--workdir`` to choose it) and are removed at the end unless ``--keep-files``.
"""

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

N_FEATURES = 28


def _rows(start, n, seed=0):
    """Rows start..start+n of a deterministic synthetic data set."""
    rng = np.random.default_rng([seed, start])
    X = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
    logit = X[:, 0] - X[:, 1] * X[:, 2] + 0.5 * X[:, 3] ** 2 - 0.5
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    return np.arange(start, start + n, dtype=np.int64), X, y


def _table(ids, X, y=None):
    import pyarrow as pa

    cols = {"id": ids}
    cols.update({f"f{j}": X[:, j] for j in range(N_FEATURES)})
    if y is not None:
        cols["y"] = y
    return pa.table(cols)


def generate(path, fmt, n_rows, block=250_000):
    """Write ``n_rows`` rows to ``path`` block by block (bounded memory)."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    writer = None
    with open(path, "wb") as raw:
        for start in range(0, n_rows, block):
            ids, X, y = _rows(start, min(block, n_rows - start))
            if fmt == "parquet":
                table = _table(ids, X)
                if writer is None:
                    writer = pq.ParquetWriter(path, table.schema)
                writer.write_table(table, row_group_size=100_000)
            elif fmt == "csv":
                table = _table(ids, X)
                if writer is None:
                    writer = pacsv.CSVWriter(raw, table.schema)
                writer.write_table(table)
            else:  # libsvm "label 1:v1 2:v2 ...", formatted by pyarrow (fast)
                import pyarrow as pa
                import pyarrow.compute as pc

                cols = {"label": pa.array(y)}
                for j in range(N_FEATURES):
                    text = pc.cast(pa.array(X[:, j]), pa.string())
                    cols[f"f{j}"] = pc.binary_join_element_wise(str(j + 1), text, ":")
                table = pa.table(cols)
                if writer is None:
                    opts = pacsv.WriteOptions(include_header=False, delimiter=" ",
                                              quoting_style="none")
                    writer = pacsv.CSVWriter(raw, table.schema, write_options=opts)
                writer.write_table(table)
    if writer is not None:
        writer.close()


def train_model(path, n_rows=20_000):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
    from gbc_core import GradientBoostingClassifier

    _, X, y = _rows(10**9, n_rows, seed=1)
    model = GradientBoostingClassifier(n_estimators=100, max_depth=4)
    model.fit(X, y)  # no feature names: DATA columns f0..f27 are matched by name
    model.save(path)
    return model


def measure(cmd, cwd):
    """(peak RSS in MiB, wall seconds, tool) of ``cmd`` run as a child process."""
    gnu_time = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time")
                                        else None)
    t0 = time.perf_counter()
    if gnu_time:
        proc = subprocess.run([gnu_time, "-v", *cmd], cwd=cwd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-2000:])
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
        if m:
            return int(m.group(1)) / 1024, wall, "/usr/bin/time -v"
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak <= before:
        print("warning: an earlier child had a larger peak; run one measurement per "
              "process for getrusage", file=sys.stderr)
    return peak / 1024, wall, "getrusage(RUSAGE_CHILDREN)"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--formats", default="parquet,csv",
                    help="comma-separated: parquet, csv, libsvm (default parquet,csv)")
    ap.add_argument("--chunk-rows", default="100000",
                    help="comma-separated chunk sizes to measure (default 100000)")
    ap.add_argument("--bound-mb", type=float, default=400.0,
                    help="fail if a peak RSS exceeds this many MiB (default 400)")
    ap.add_argument("--workdir")
    ap.add_argument("--keep-files", action="store_true")
    ap.add_argument("--json", help="also write the results to this JSON file")
    args = ap.parse_args(argv)

    work = args.workdir or tempfile.mkdtemp(prefix="gbc-streaming-")
    os.makedirs(work, exist_ok=True)
    ext = {"parquet": "parquet", "csv": "csv", "libsvm": "svm"}
    results = []
    try:
        train_model(os.path.join(work, "model.gbc"))
        base_cmd = [sys.executable, "-m", "gbc_core"]
        idle, _, tool = measure(base_cmd + ["inspect", "model.gbc", "--quiet"], work)
        print(f"peak RSS of 'gbc-core inspect' (interpreter + imports, no data): "
              f"{idle:.0f} MiB [{tool}]")
        in_memory = args.rows * N_FEATURES * 4 / 2**20
        print(f"{args.rows:,} rows x {N_FEATURES} features: the float32 matrix alone would "
              f"take {in_memory:,.0f} MiB\n")
        print(f"{'format':<8} {'file MiB':>9} {'chunk rows':>11} {'peak RSS MiB':>13} "
              f"{'wall s':>8} {'rows/s':>11}", flush=True)
        for fmt in [f.strip() for f in args.formats.split(",") if f.strip()]:
            data = os.path.join(work, f"data.{ext[fmt]}")
            t0 = time.perf_counter()
            generate(data, fmt, args.rows)
            gen_s = time.perf_counter() - t0
            size = os.path.getsize(data) / 2**20
            for chunk in [int(c) for c in args.chunk_rows.split(",")]:
                keep = ["--keep", "id"] if fmt != "libsvm" else []
                cmd = base_cmd + ["predict", "model.gbc", os.path.basename(data), "-o",
                                  "scores.parquet", "--chunk-rows", str(chunk), "--quiet",
                                  *keep]
                peak, wall, tool = measure(cmd, work)
                import pyarrow.parquet as pq

                n_out = pq.ParquetFile(os.path.join(work, "scores.parquet")).metadata.num_rows
                assert n_out == args.rows, (n_out, args.rows)
                print(f"{fmt:<8} {size:9,.0f} {chunk:11,} {peak:13,.0f} {wall:8.1f} "
                      f"{args.rows / wall:11,.0f}", flush=True)
                results.append(dict(format=fmt, rows=args.rows, file_mib=size,
                                    chunk_rows=chunk, peak_rss_mib=peak, wall_s=wall,
                                    generate_s=gen_s, tool=tool, idle_rss_mib=idle))
            if not args.keep_files:
                os.unlink(data)
    finally:
        if not args.keep_files and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
    worst = max(r["peak_rss_mib"] for r in results)
    print(f"\nlargest peak RSS {worst:,.0f} MiB; bound {args.bound_mb:,.0f} MiB: "
          f"{'OK' if worst <= args.bound_mb else 'EXCEEDED'}")
    return 0 if worst <= args.bound_mb else 1


if __name__ == "__main__":
    sys.exit(main())
