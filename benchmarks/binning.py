"""Time the binning layer: ``BinMapper.fit`` and ``transform`` of generated data.

For X of ``--rows`` x 28 float32 features (``make_classification``, fixed seed), in
Fortran order (how the estimator holds training data) and C order, with each number
of threads of ``--threads``: the best of ``--repeats`` fits and transforms, and the
peak memory a fit + transform adds to a fresh process that holds X (the bins: one
byte per value). scikit-learn's ``_BinMapper`` (its histogram boosting's binning, 255 bins,
the same subsample) is timed in the same run for reference.

Usage::

    python benchmarks/binning.py --rows 1000000 --threads 1,2
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from sklearn.datasets import make_classification

from gbc_core._binning import BinMapper


def memory_of_first_fit(X):
    """Peak memory (MB) that fit + transform add to a fresh process holding X
    (Linux: the peak RSS is reset once X is loaded)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "X.npy")
        np.save(path, X)
        code = (
            "import numpy as np\n"
            "from gbc_core._binning import BinMapper\n"
            "def status(key):\n"
            "    with open('/proc/self/status') as fh:\n"
            "        return next(int(l.split()[1]) for l in fh if l.startswith(key)) / 1024\n"
            f"X = np.load({path!r})\n"
            "with open('/proc/self/clear_refs', 'w') as fh:\n"
            "    fh.write('5')\n"
            "before = status('VmRSS:')\n"
            "bins = BinMapper().fit(X).transform(X)\n"
            "print(status('VmHWM:') - before)\n"
        )
        out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                             text=True)
        return float(out.stdout.split()[-1])


def best_of(repeats, fn):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=28)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    X, _ = make_classification(n_samples=args.rows, n_features=args.features,
                               n_informative=args.features // 2, random_state=0)
    X = np.asfortranarray(X, dtype=np.float32)
    print(f"X: {args.rows} x {args.features} float32 ({X.nbytes / 1e6:.0f} MB)")
    print(f"peak memory added by fit + transform in a fresh process: "
          f"{memory_of_first_fit(X):.0f} MiB (the bins: {X.size / 2**20:.0f} MiB, "
          f"one byte per value)")
    print("| order | threads | fit (s) | transform (s) |")
    print("| --- | --- | --- | --- |")
    for order in ("F", "C"):
        Xo = np.asarray(X, order=order)
        for n_threads in (int(t) for t in args.threads.split(",")):
            t_fit, mapper = best_of(args.repeats, lambda: BinMapper().fit(Xo, n_threads))
            t_tr, _ = best_of(args.repeats, lambda: mapper.transform(Xo, n_threads))
            print(f"| {order} | {n_threads} | {t_fit:.3f} | {t_tr:.3f} |")
    try:
        from sklearn.ensemble._hist_gradient_boosting.binning import _BinMapper
    except ImportError:
        return
    for n_threads in (int(t) for t in args.threads.split(",")):
        t_fit, sk = best_of(args.repeats,
                            lambda: _BinMapper(n_bins=256, n_threads=n_threads,
                                               random_state=0).fit(X))
        t_tr, _ = best_of(args.repeats, lambda: sk.transform(X))
        print(f"| scikit-learn _BinMapper, F | {n_threads} | {t_fit:.3f} | {t_tr:.3f} |")


if __name__ == "__main__":
    main()
