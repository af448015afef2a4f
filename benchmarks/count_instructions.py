"""Instructions per tree of a fit by two builds of gbc-core, function by function.

Timings on a shared machine drift by more than the few per cent a change may cost;
instruction counts do not. This script runs the same single-threaded fit under
valgrind's callgrind for each build (a source tree whose extensions were built in
place, as for ``compare_builds.py``) with two numbers of trees, and subtracts the
smaller fit from the larger one: what remains is the cost of the extra trees alone,
without the interpreter's start-up, the imports, the data generation and the
pre-sort. It prints the instructions per tree of each build and of the functions
that differ most.

Usage::

    python benchmarks/count_instructions.py BEFORE_DIR AFTER_DIR --rows 50000 --trees 5,25
    python benchmarks/count_instructions.py BEFORE_DIR AFTER_DIR --split-method hist
    python benchmarks/count_instructions.py BEFORE_DIR AFTER_DIR --loss exponential
    python benchmarks/count_instructions.py BEFORE_DIR AFTER_DIR --classes 5

Needs ``valgrind`` and ``callgrind_annotate`` on the PATH; a fit of 50,000 rows and
25 trees takes a few minutes under callgrind.
"""

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

# The data of compare_builds.py's worker (binary task, 28 float32 features).
WORKER = r"""
import sys
import numpy as np
from gbc_core import GradientBoostingClassifier
rows, trees = (int(a) for a in sys.argv[1:3])
split_method, loss = sys.argv[3:5]
classes = int(sys.argv[5])
rng = np.random.default_rng(0)
X = rng.normal(size=(rows, 28)).astype(np.float32)
if classes == 2:
    logit = X[:, 0] - X[:, 1] * (X[:, 2] > 0)
    y = (rng.uniform(size=rows) < 1 / (1 + np.exp(-logit))).astype(int)
else:  # compare_builds.py's classes
    logits = np.stack([X[:, 3 * k] - X[:, 3 * k + 1] * (X[:, 3 * k + 2] > 0)
                       for k in range(classes)])
    y = np.argmax(logits + rng.gumbel(size=logits.shape), axis=0)
GradientBoostingClassifier(n_estimators=trees, max_depth=3, n_jobs=1,
                           split_method=split_method, loss=loss).fit(X, y)
"""

LINE = re.compile(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S.*)$")


def demangle(name):
    """A readable name for a Cython function (``module.Class.method``), else ``name``."""
    match = re.match(r"__pyx_[a-z]+_(.*)", name)
    if match is None:
        return name
    rest, parts = match.group(1), []
    while True:  # length-prefixed names: 8gbc_core, 9_splitter, 10TreeGrower, ...
        digits = re.match(r"\d+", rest)
        if digits is None:
            break
        length, start = int(digits.group()), len(digits.group())
        if len(rest) < start + length or not rest[start + length:].startswith("_"):
            break
        parts.append(rest[start:start + length])
        rest = rest[start + length + 1:]
    parts.append(re.sub(r"^\d+", "", rest))  # a def method carries an index: 11grow
    return ".".join(p for p in parts if p != "gbc_core")


def count(build, label, rows, trees, out_dir, split_method="exact", loss="log_loss",
          classes=2):
    """Instructions by function (exclusive counts) of one fit under callgrind."""
    out_file = os.path.join(out_dir, f"callgrind.{label}.{trees}")
    # A fixed hash seed: the interpreter's own work is then the same in every run.
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(build), "src"),
               OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}",
                    sys.executable, "-c", WORKER, str(rows), str(trees), split_method, loss,
                    str(classes)],
                   env=env, check=True, capture_output=True)
    report = subprocess.run(["callgrind_annotate", "--auto=no", "--inclusive=no",
                             "--threshold=100", out_file],
                            check=True, capture_output=True, text=True).stdout
    counts = collections.Counter()
    for line in report.splitlines():
        match = LINE.match(line)
        if match is None or "PROGRAM TOTALS" in line:
            continue
        location = match.group(2).split(" [")[0]
        function = location.split(":", 1)[1] if ":" in location else location
        function = demangle(re.sub(r"'\d+$", "", function))  # 'N: a recursion level
        counts[function] += int(match.group(1).replace(",", ""))
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--trees", default="5,25",
                        help="the two numbers of trees, smaller first (default: 5,25)")
    parser.add_argument("--split-method", default="exact", choices=("exact", "hist"))
    parser.add_argument("--loss", default="log_loss", choices=("log_loss", "exponential"))
    parser.add_argument("--classes", type=int, default=2,
                        help="classes of the task (default: 2); with more, the counts "
                             "are per iteration (one tree per class)")
    parser.add_argument("--top", type=int, default=15,
                        help="functions listed, by the larger per-tree count (default: 15)")
    args = parser.parse_args()
    low, high = (int(t) for t in args.trees.split(","))
    if not 0 < low < high:
        parser.error("--trees needs two numbers of trees, the smaller first")
    missing = [tool for tool in ("valgrind", "callgrind_annotate") if not shutil.which(tool)]
    if missing:
        raise SystemExit(f"not found on the PATH: {', '.join(missing)}")
    per_tree = {}
    with tempfile.TemporaryDirectory(prefix="gbc-callgrind-") as tmp:
        for key in ("before", "after"):
            build = getattr(args, key)
            small, large = (count(build, key, args.rows, t, tmp, args.split_method,
                                  args.loss, args.classes)
                            for t in (low, high))
            per_tree[key] = {f: (large[f] - small[f]) / (high - low)
                             for f in set(small) | set(large)}
    totals = {k: sum(v.values()) for k, v in per_tree.items()}
    per = "tree" if args.classes == 2 else "iteration"
    print(f"{args.rows} rows x 28, {args.classes} classes, depth 3, n_jobs = 1, "
          f"split_method={args.split_method!r}, loss={args.loss!r}: instructions per {per} "
          f"(fit of {high} trees minus fit of {low})\n")
    print("| function | before | after | after - before |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| all | {totals['before']:,.0f} | {totals['after']:,.0f} | "
          f"{totals['after'] - totals['before']:+,.0f} "
          f"({totals['after'] / totals['before'] - 1:+.2%}) |")
    functions = sorted(set(per_tree["before"]) | set(per_tree["after"]),
                       key=lambda f: -max(abs(per_tree["before"].get(f, 0.0)),
                                          abs(per_tree["after"].get(f, 0.0))))
    for function in functions[:args.top]:
        before = per_tree["before"].get(function, 0.0)
        after = per_tree["after"].get(function, 0.0)
        print(f"| {function} | {before:,.0f} | {after:,.0f} | {after - before:+,.0f} |")


if __name__ == "__main__":
    main()
