"""The role of gamma_j: leaf_solver="newton" (eq. 1) against "exact", per iteration.

For each dataset and each solver, one fit with the same trees' hyper-parameters
(depth 3, learning rate 0.1 and 0.5, 300 iterations, F0 = 0, n_jobs=1): the mean
log-loss of the training rows and of the test rows after every iteration (computed
here from ``staged_decision_function``, the same formula for both solvers), and the
fit time (median of ``--repeats`` fits). Writes a PNG plot and a markdown table
(``docs/leaf_solver.md`` shows both and reads them).

Datasets (read from ``../shared/data`` relative to the repository, never copied into
the project; their README gives formats and licences):

- the HIGGS sample shipped with gbc-core (``gbc_core.datasets.load_higgs_sample``),
  7,000 / 500 rows, 28 features, binary;
- agaricus (UCI Mushroom, one-hot, LIBSVM format), 6,513 / 1,611 rows, 126
  features, binary and nearly separable: many pure leaves;
- the 5-class sample (LightGBM's example data), 7,000 / 500 rows, 28 features.

Usage::

    python benchmarks/leaf_solver_study.py --out docs/leaf_solver
"""

import argparse
import time
from pathlib import Path

import numpy as np
from scipy.special import log_softmax, log_expit

from gbc_core import GradientBoostingClassifier
from gbc_core.datasets import load_higgs_sample

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def _tsv(name):
    data = np.loadtxt(DATA / name, delimiter="\t")
    return data[:, 1:], data[:, 0].astype(np.int64)


def _libsvm(name, n_features):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(DATA / name), n_features=n_features)
    return X.toarray(), y.astype(np.int64)


def datasets():
    X, y, Xt, yt = load_higgs_sample()
    yield "HIGGS sample (2 classes)", X, y, Xt, yt
    X, y = _libsvm("agaricus.train", 126)
    Xt, yt = _libsvm("agaricus.test", 126)
    yield "agaricus (2 classes)", X, y, Xt, yt
    X, y = _tsv("multiclass_sample.train")
    Xt, yt = _tsv("multiclass_sample.test")
    yield "multiclass sample (5 classes)", X, y, Xt, yt


def mean_log_loss(raw, y):
    """Mean -log p_y of raw scores (n,) (binary) or (n, K), computed stably."""
    raw = np.asarray(raw, dtype=np.float64)
    if raw.ndim == 1:
        return float(-np.mean(np.where(y == 1, log_expit(raw), log_expit(-raw))))
    return float(-np.mean(log_softmax(raw, axis=1)[np.arange(len(y)), y]))


def study(name, X, y, Xt, yt, learning_rate, n_estimators, repeats):
    out = {}
    for solver in ("newton", "exact"):
        times = []
        for _ in range(repeats):
            model = GradientBoostingClassifier(
                n_estimators=n_estimators, learning_rate=learning_rate, max_depth=3,
                leaf_solver=solver, random_state=0, n_jobs=1)
            start = time.perf_counter()
            model.fit(X, y)
            times.append(time.perf_counter() - start)
        train = [mean_log_loss(raw, y) for raw in model.staged_decision_function(X)]
        test = [mean_log_loss(raw, yt) for raw in model.staged_decision_function(Xt)]
        leaves = [t.value[t.feature < 0] for t in model.estimators_.ravel()]
        capped = sum(int((np.abs(v) >= 30).sum()) for v in leaves)
        out[solver] = dict(train=np.array(train), test=np.array(test),
                           time=float(np.median(times)), capped=capped,
                           n_leaves=sum(len(v) for v in leaves))
        print(f"{name} eta={learning_rate} {solver}: fit {out[solver]['time']:.2f}s, "
              f"test loss best {min(test):.4g} at {int(np.argmin(test)) + 1}, "
              f"last {test[-1]:.4g}", flush=True)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/leaf_solver",
                        help="path prefix of the PNG (PREFIX.png) and the markdown table "
                             "(PREFIX_table.md)")
    parser.add_argument("--n-estimators", type=int, default=300)
    parser.add_argument("--learning-rates", default="0.1,0.5")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rates = [float(v) for v in args.learning_rates.split(",")]

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = []
    for name, X, y, Xt, yt in datasets():
        for lr in rates:
            results.append((name, lr, study(name, X, y, Xt, yt, lr, args.n_estimators,
                                            args.repeats)))

    fig, axes = plt.subplots(len(rates), 3, figsize=(13, 3.6 * len(rates)), squeeze=False)
    for idx, (name, lr, res) in enumerate(results):
        ax = axes[rates.index(lr), idx // len(rates)]
        it = np.arange(1, args.n_estimators + 1)
        for solver, colour in (("newton", "tab:blue"), ("exact", "tab:red")):
            ax.plot(it, res[solver]["train"], color=colour, ls="--", lw=1,
                    label=f"{solver} train")
            ax.plot(it, res[solver]["test"], color=colour, lw=1.5, label=f"{solver} test")
        ax.set_yscale("log")
        ax.set_title(f"{name}, eta = {lr:g}", fontsize=9)
        ax.set_xlabel("iteration")
        ax.set_ylabel("mean log-loss")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    png = Path(args.out + ".png")
    fig.savefig(png, dpi=55)

    lines = ["| dataset | eta | solver | fit time (s) | train loss (last) | "
             "test loss (last) | test loss (best, iteration) | leaves with abs(gamma) >= 30 |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, lr, res in results:
        for solver in ("newton", "exact"):
            r = res[solver]
            best = int(np.argmin(r["test"]))
            lines.append(
                f"| {name} | {lr:g} | {solver} | {r['time']:.2f} | {r['train'][-1]:.4g} | "
                f"{r['test'][-1]:.4g} | {r['test'][best]:.4g} ({best + 1}) | "
                f"{r['capped']} of {r['n_leaves']} |")
    table = "\n".join(lines) + "\n"
    Path(args.out + "_table.md").write_text(table)
    print(table)
    print(f"wrote {png} and {args.out}_table.md")


if __name__ == "__main__":
    main()
