"""ONNX export: agreement and throughput of onnxruntime against gbc-core, one thread.

Fits ``--trees`` trees (depth 3, learning rate 0.1, the defaults otherwise) on the
bundled HIGGS sample's 7,000 training rows, exports the model with
``gbc_core.onnx.to_onnx`` and scores the 7,500 rows of the sample (training and
test) in float32 with both: the largest |p_onnxruntime - p_gbc-core| over the rows
and classes, whether every label agrees, then rows/s of ``predict_proba``
(gbc-core's ``Booster``, ``n_jobs=1``) and of an onnxruntime session with one intra-op and one
inter-op thread, on the sample's rows tiled to ``--rows`` rows (the median of
``--repeats`` calls, the two taking turns).

Usage::

    python benchmarks/onnx_export.py --trees 100 --rows 200000 --repeats 5
"""

import argparse
import statistics
import time

import numpy as np

from gbc_core import GradientBoostingClassifier
from gbc_core.datasets import load_higgs_sample
from gbc_core.onnx import to_onnx


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import onnxruntime as ort

    X_train, y_train, X_test, _ = load_higgs_sample()
    model = GradientBoostingClassifier(n_estimators=args.trees, max_depth=3,
                                       learning_rate=0.1, random_state=0)
    model.fit(X_train, y_train)
    booster = model.booster_
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(to_onnx(model).SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])

    X = np.ascontiguousarray(np.vstack([X_train, X_test]), dtype=np.float32)
    label, proba = session.run(["label", "probabilities"], {"input": X})
    delta = np.abs(proba.astype(np.float64) - booster.predict_proba(X, n_jobs=1)).max()
    same_labels = bool(np.array_equal(label, booster.predict(X, n_jobs=1)))
    print(f"HIGGS sample, {args.trees} trees, {X.shape[0]:,} rows: max |dp| = {delta:.3g}, "
          f"labels equal: {same_labels}")

    big = np.ascontiguousarray(np.resize(X, (args.rows, X.shape[1])))
    runs = {
        "gbc-core predict_proba (n_jobs=1)": lambda: booster.predict_proba(big, n_jobs=1),
        "onnxruntime (1 thread)": lambda: session.run(["probabilities"], {"input": big}),
    }
    times = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, run in runs.items():
            t0 = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - t0)
    for name, ts in times.items():
        print(f"{name:36s} {args.rows / statistics.median(ts):>14,.0f} rows/s")


if __name__ == "__main__":
    main()
