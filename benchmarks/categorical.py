"""Categorical features: gbc-core's native splits against one-hot and ordinal encodings,
scikit-learn's HistGradientBoostingClassifier, LightGBM and XGBoost, in one run.

Usage::

    python benchmarks/categorical.py                       # every dataset and method
    python benchmarks/categorical.py --datasets agaricus --rounds 5
    python benchmarks/categorical.py --datasets cat250,cat1000 --rows 200000 --rounds 3
    python benchmarks/categorical.py --methods sklearn-hgb,lightgbm,xgboost --n-jobs 2

Datasets:

- ``agaricus``: the shared mushroom data (``agaricus.train`` / ``.test`` and
  ``agaricus.featmap.txt`` from ``--data-dir``, by default ``../shared/data`` beside the
  checkout; skipped with a note when absent), whose 126 one-hot LIBSVM columns are
  decoded back to the 22 categorical attributes of the UCI Mushroom data (2 to 12
  categories each; ``stalk-root=missing`` is a category of its own). Category codes
  are the positions of the values in the feature map.
- ``cat250`` and ``cat1000``: generated (seed ``--seed``), ``--rows`` rows to fit and
  ``--test-rows`` more to score: one categorical feature of 250 or 1,000 categories
  and 4 standard normal features. Category c is drawn with probability proportional
  to 1 / (rank(c) + 1) (Zipf; the ranks a random permutation of the codes, so a
  code's value says nothing), and the true log-odds are
  ``effect[c] + x0 - 0.5 x1 + 0.5 sin(2 x2)`` (x3 is noise), with ``effect`` drawn
  once from N(0, 1): the known per-category effect. The log-loss and AUC of the true
  probabilities on the test rows (the best any model can do) are printed with the
  table.

Methods (each fit on the same training rows, scored on the same test rows):

- ``gbc-core-exact``, ``gbc-core-hist``: native categorical splits
  (``categorical_features`` = the categorical columns' indices, X the category codes
  as floats). Skipped with a printed note when the installed gbc-core does not accept
  ``categorical_features`` yet. gbc-core takes at most ``max_bins`` (255) categories
  per feature: on ``cat1000`` its error is printed in the table, and the rows
  ``gbc-core-exact+top255`` / ``gbc-core-hist+top255`` give the workaround: the 254
  categories most frequent in the training rows keep their own code and all the
  others share one (scikit-learn's ``OrdinalEncoder(max_categories=255)``, fit on the
  training rows; categories unseen in training join the shared code too).
- ``gbc-core-onehot-exact``, ``gbc-core-onehot-hist``: gbc-core on one-hot columns
  (agaricus: its 126 original dense columns; generated: a scipy.sparse CSC matrix of
  the one-hot columns and the numeric ones; ``exact`` densifies X into float32, and is
  skipped with a note above ``--max-dense-mib``).
- ``gbc-core-ordinal``: gbc-core (exact) on the category codes as plain numbers.
- ``sklearn-hgb``: ``HistGradientBoostingClassifier(categorical_features=indices)``,
  which also takes at most ``max_bins`` categories per feature: its error on
  ``cat1000`` is printed, and ``sklearn-hgb+top255`` is the same workaround.
- ``lightgbm``: ``LGBMClassifier`` with ``categorical_feature=indices`` (its defaults
  for categories: ``max_cat_to_onehot=4, max_cat_threshold=32, cat_smooth=10,
  cat_l2=10, min_data_per_group=100``); ``lightgbm-nosmooth`` sets
  ``max_cat_threshold=255, cat_smooth=0, cat_l2=0, min_data_per_group=1``, the closest
  LightGBM has to the plain sorted-prefix rule of gbc-core and scikit-learn.
- ``xgboost``: ``XGBClassifier(enable_categorical=True, tree_method="hist")`` on a
  pandas DataFrame whose categorical columns have the ``category`` dtype (its defaults
  for categories: partition splits, ``max_cat_threshold=64``).

A library that is not installed is skipped with a note.

Settings shared by all: 100 trees (``--trees``), learning rate 0.1, depth 3 (8
leaves: LightGBM ``num_leaves=8, max_depth=3``, HGB ``max_depth=3,
max_leaf_nodes=None``), no L2 regularisation, at least 1 sample per leaf
(``min_samples_leaf=1``, LightGBM ``min_child_samples=1, min_child_weight=0``,
XGBoost ``min_child_weight=0``), 255 bins, no early stopping, ``--n-jobs`` threads
(default 1; HGB through threadpoolctl), the boosting started from log-odds 0 (gbc-core's
``init="zero"``, LightGBM ``boost_from_average=False``, XGBoost ``base_score=0.5``; HGB
starts from the prior log-odds and cannot be told otherwise). The other settings are each library's defaults (the
categorical ones above), as ``bench.py`` sets them.

Timing: the methods take turns in each of ``--rounds`` rounds (so that all span the
same stretches of a shared machine's load), one fit per method per round, in this
process; the table gives the medians of the fit's wall time and of its CPU time
(``time.process_time``: all threads of the process; on a loaded machine the steadier
figure), the CPU time of each round, and the ratios of the medians to the reference
method (``--reference``; otherwise the first of lightgbm, sklearn-hgb,
sklearn-hgb+top255 that ran).
Log-loss and AUC are those of the last round's fit on the test rows (every method is
deterministic for a fixed seed).
"""

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np

N_FEATURES_NUMERIC = 4
DEFAULT_DATA = os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data"))
METHODS = ("gbc-core-exact", "gbc-core-hist", "gbc-core-exact+top255",
           "gbc-core-hist+top255", "gbc-core-onehot-exact", "gbc-core-onehot-hist",
           "gbc-core-ordinal", "sklearn-hgb", "sklearn-hgb+top255", "lightgbm",
           "lightgbm-nosmooth", "xgboost")
#: Methods that run only where a feature has more categories than max_bins.
WORKAROUNDS = {"gbc-core-exact+top255", "gbc-core-hist+top255", "sklearn-hgb+top255"}


class Dataset:
    """Category codes (``X``: floats, categorical columns ``cat``), one-hot form and
    test rows of one dataset."""

    def __init__(self, name, X, y, Xt, yt, cat, n_categories, onehot, onehot_t,
                 names, oracle=None):
        self.name, self.X, self.y, self.Xt, self.yt = name, X, y, Xt, yt
        self.cat = list(cat)
        self.n_categories = list(n_categories)
        self.onehot, self.onehot_t = onehot, onehot_t
        self.names = list(names)
        self.oracle = oracle  # true probabilities of the test rows, or None

    def describe(self):
        k = self.n_categories
        k = f"{min(k)} to {max(k)}" if min(k) < max(k) else f"{k[0]:,}"
        return (f"{self.name}: {len(self.y):,} training rows, {len(self.yt):,} test rows, "
                f"{self.X.shape[1]} features of which {len(self.cat)} categorical "
                f"({k} categories; {self.onehot.shape[1]:,} one-hot columns with the "
                "numeric ones)")


# ---------------------------------------------------------------------- datasets
def load_agaricus(data_dir):
    """agaricus decoded back to its 22 categorical attributes, or None if absent."""
    from sklearn.datasets import load_svmlight_file

    featmap = os.path.join(data_dir, "agaricus.featmap.txt")
    if not all(os.path.exists(os.path.join(data_dir, f))
               for f in ("agaricus.train", "agaricus.test", "agaricus.featmap.txt")):
        return None
    # Line j of the feature map: "j<TAB>attribute=value<TAB>type"; LIBSVM index i is
    # line i - 1 (zero_based=False below makes it column i - 1). The last two lines
    # name the same category (only the first is used).
    attributes = {}  # attribute -> [values in feature-map order]
    column = []  # featmap line -> (attribute, code)
    with open(featmap, encoding="utf-8") as f:
        for line in f:
            _, name, _ = line.rstrip("\n").split("\t")
            attribute, value = name.split("=", 1)
            values = attributes.setdefault(attribute, [])
            if value not in values:
                values.append(value)
            column.append((attribute, values.index(value)))
    names = list(attributes)

    def read(file):
        X1, y = load_svmlight_file(os.path.join(data_dir, file), n_features=len(column),
                                   zero_based=False)
        X1 = X1.toarray()
        codes = np.full((X1.shape[0], len(names)), np.nan)
        seen = np.zeros((X1.shape[0], len(names)), dtype=np.int64)
        for j, (attribute, code) in enumerate(column):
            active = X1[:, j] != 0
            a = names.index(attribute)
            codes[active, a] = code
            seen[active, a] += 1
        if not (seen == 1).all():
            raise ValueError(f"{file}: a row has not exactly one active column per "
                             "attribute; is agaricus.featmap.txt the right one?")
        used = sorted({j for j in range(len(column)) if column.index(column[j]) == j})
        return codes, y.astype(np.int64), X1[:, used]

    X, y, oh = read("agaricus.train")
    Xt, yt, oht = read("agaricus.test")
    return Dataset("agaricus", X, y, Xt, yt, range(len(names)),
                   [len(attributes[a]) for a in names], oh, oht, names)


def make_generated(n_categories, rows, test_rows, seed):
    """One Zipf-distributed categorical feature with a known effect, 4 numeric."""
    import scipy.sparse as sp
    from scipy.special import expit

    rng = np.random.default_rng([seed, n_categories])
    effect = rng.normal(0.0, 1.0, size=n_categories)
    rank = rng.permutation(n_categories)
    p = 1.0 / (rank + 1.0)
    p /= p.sum()
    n = rows + test_rows
    cats = rng.choice(n_categories, size=n, p=p)
    num = rng.normal(size=(n, N_FEATURES_NUMERIC))
    logit = effect[cats] + num[:, 0] - 0.5 * num[:, 1] + 0.5 * np.sin(2.0 * num[:, 2])
    prob = expit(logit)
    y = (rng.random(n) < prob).astype(np.int64)
    X = np.column_stack([cats.astype(np.float64), num])
    onehot = sp.hstack([sp.csc_matrix((np.ones(n), (np.arange(n), cats)),
                                      shape=(n, n_categories)),
                        sp.csc_matrix(num)], format="csc")
    tr, te = slice(0, rows), slice(rows, n)
    names = ["category"] + [f"x{i}" for i in range(N_FEATURES_NUMERIC)]
    return Dataset(f"cat{n_categories}", X[tr], y[tr], X[te], y[te], [0], [n_categories],
                   onehot[tr], onehot[te], names, oracle=prob[te])


def top_categories(d, max_categories=255):
    """(X, Xt) with each categorical column of more than ``max_categories`` categories
    re-encoded as scikit-learn's ``OrdinalEncoder(max_categories=...)`` does: the
    ``max_categories - 1`` categories most frequent in the training rows (ties: the
    lower code) keep a code of their own (0, 1, ... in the order of their old codes),
    every other category, and any unseen at predict time, shares the last code."""
    X, Xt = d.X.copy(), d.Xt.copy()
    for j, k in zip(d.cat, d.n_categories):
        if k <= max_categories:
            continue
        counts = np.bincount(d.X[:, j].astype(np.int64), minlength=k)
        keep = np.sort(np.argsort(-counts, kind="stable")[:max_categories - 1])
        new = np.full(k, max_categories - 1, dtype=np.float64)
        new[keep] = np.arange(keep.size)
        X[:, j] = new[d.X[:, j].astype(np.int64)]
        Xt[:, j] = new[d.Xt[:, j].astype(np.int64)]
    return X, Xt


# ---------------------------------------------------------------------- estimators
class Skip(Exception):
    """The method cannot run here (the reason is its message)."""


class Refused(Exception):
    """The library refused the data (its error message is shown in the table)."""


def _dataframe(d, X):
    import pandas as pd

    df = pd.DataFrame(X, columns=d.names)
    for j, k in zip(d.cat, d.n_categories):
        df[d.names[j]] = pd.Categorical.from_codes(X[:, j].astype(np.int64),
                                                   categories=list(range(k)))
    return df


def build(method, d, args):
    """(estimator, X, Xt, fit keyword arguments) of ``method`` on dataset ``d``."""
    common = dict(n_estimators=args.trees, learning_rate=args.learning_rate,
                  max_depth=args.max_depth)
    if method.startswith("gbc-core"):
        try:
            from gbc_core import GradientBoostingClassifier
        except ImportError as exc:
            raise Skip(f"gbc-core not importable ({exc})")
        kw = dict(common, min_samples_leaf=1, max_bins=255, n_jobs=args.n_jobs,
                  random_state=args.seed)
        if method.startswith("gbc-core-onehot"):
            X, Xt = d.onehot, d.onehot_t
            split = method.rsplit("-", 1)[1]
            if split == "exact" and X.shape[0] * X.shape[1] * 4 / 2**20 > args.max_dense_mib:
                raise Skip(f"the exact fit densifies X into float32 "
                           f"({X.shape[0] * X.shape[1] * 4 / 2**20:,.0f} MiB > "
                           f"--max-dense-mib {args.max_dense_mib})")
            return GradientBoostingClassifier(split_method=split, **kw), X, Xt, {}
        if method == "gbc-core-ordinal":
            return GradientBoostingClassifier(split_method="exact", **kw), d.X, d.Xt, {}
        X, Xt = top_categories(d) if method.endswith("+top255") else (d.X, d.Xt)
        split = method.split("-")[2].split("+")[0]
        try:
            model = GradientBoostingClassifier(split_method=split,
                                               categorical_features=d.cat, **kw)
        except TypeError as exc:
            raise Skip(f"this gbc-core does not accept categorical_features yet ({exc})")
        return model, X, Xt, {}
    if method.startswith("sklearn-hgb"):
        from sklearn.ensemble import HistGradientBoostingClassifier

        X, Xt = top_categories(d) if method.endswith("+top255") else (d.X, d.Xt)
        model = HistGradientBoostingClassifier(
            max_iter=args.trees, learning_rate=args.learning_rate,
            max_depth=args.max_depth, max_leaf_nodes=None, min_samples_leaf=1,
            l2_regularization=0.0, max_bins=255, early_stopping=False,
            categorical_features=d.cat, random_state=args.seed)
        return model, X, Xt, {}
    if method.startswith("lightgbm"):
        try:
            from lightgbm import LGBMClassifier
        except ImportError:
            raise Skip("LightGBM is not installed")
        extra = {}
        if method == "lightgbm-nosmooth":
            extra = dict(max_cat_threshold=255, cat_smooth=0.0, cat_l2=0.0,
                         min_data_per_group=1)
        model = LGBMClassifier(
            n_estimators=args.trees, learning_rate=args.learning_rate,
            max_depth=args.max_depth, num_leaves=2**args.max_depth, reg_lambda=0.0,
            reg_alpha=0.0, min_child_samples=1, min_child_weight=0.0, min_split_gain=0.0,
            subsample=1.0, colsample_bytree=1.0, max_bin=255, n_jobs=args.n_jobs,
            boost_from_average=False, random_state=args.seed, verbose=-1, **extra)
        return model, d.X, d.Xt, {"categorical_feature": d.cat}
    if method == "xgboost":
        try:
            from xgboost import XGBClassifier
        except ImportError:
            raise Skip("XGBoost is not installed")
        model = XGBClassifier(
            n_estimators=args.trees, learning_rate=args.learning_rate,
            max_depth=args.max_depth, tree_method="hist", grow_policy="depthwise",
            enable_categorical=True, reg_lambda=0.0, reg_alpha=0.0, gamma=0.0,
            min_child_weight=0.0, subsample=1.0, colsample_bytree=1.0, max_bin=256,
            base_score=0.5, objective="binary:logistic", n_jobs=args.n_jobs, random_state=args.seed)
        return model, _dataframe(d, d.X), _dataframe(d, d.Xt), {}
    raise ValueError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")


def fit_once(method, model, X, y, fit_kw, n_jobs):
    """(wall s, CPU s) of one fit; Refused if the library refuses the data."""
    from contextlib import nullcontext

    limits = nullcontext()
    if method.startswith("sklearn-hgb"):
        from threadpoolctl import threadpool_limits

        limits = threadpool_limits(limits=n_jobs, user_api="openmp")
    with limits, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, c = time.perf_counter(), time.process_time()
        try:
            model.fit(X, y, **fit_kw)
        except (ValueError, TypeError) as exc:
            raise Refused(str(exc).splitlines()[0]) from exc
        return time.perf_counter() - t, time.process_time() - c


def score(model, Xt, yt):
    from sklearn.metrics import log_loss, roc_auc_score

    p = model.predict_proba(Xt)[:, 1]
    return log_loss(yt, p, labels=[0, 1]), roc_auc_score(yt, p)


# ---------------------------------------------------------------------- main
def run_dataset(d, methods, args):
    print(f"\n### {d.describe()}\n")
    if d.oracle is not None:
        from sklearn.metrics import log_loss, roc_auc_score

        print(f"- true probabilities on the test rows: log-loss "
              f"{log_loss(d.yt, d.oracle):.4f}, AUC {roc_auc_score(d.yt, d.oracle):.4f}")
    too_many = max(d.n_categories) > 255
    runs, notes = {}, []
    for m in methods:
        if m in WORKAROUNDS and not too_many:
            continue  # the workaround only where it is needed
        try:
            runs[m] = build(m, d, args)
        except Skip as exc:
            notes.append(f"- {m}: skipped: {exc}")
    times = {m: [] for m in runs}
    results, refused = {}, {}
    for _ in range(args.rounds):
        for m, (model, X, Xt, fit_kw) in list(runs.items()):
            if m in refused:
                continue
            try:
                times[m].append(fit_once(m, model, X, d.y, fit_kw, args.n_jobs))
            except Refused as exc:
                refused[m] = str(exc)
                continue
            results[m] = score(model, Xt, d.yt)
    for note in notes:
        print(note)
    med = {m: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t))
           for m, t in times.items() if t}
    ref = args.reference if args.reference in med else next(
        (m for m in ("lightgbm", "sklearn-hgb", "sklearn-hgb+top255") if m in med), None)
    print(f"- load average now: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    print()
    print(f"| method | test log-loss | test AUC | fit wall s (median) | fit CPU s (median) | "
          f"CPU s per round | / {ref} (wall, CPU) |")
    print("| --- | ---: | ---: | ---: | ---: | --- | --- |")
    for m in runs:
        if m in refused:
            print(f"| {m} | refused: {refused[m]} | | | | | |")
            continue
        w, c = med[m]
        ratio = f"{w / med[ref][0]:.2f}, {c / med[ref][1]:.2f}" if ref else ""
        ll, auc = results[m]
        print(f"| {m} | {ll:.4f} | {auc:.4f} | {w:.2f} | {c:.2f} | "
              + ", ".join(f"{c_:.2f}" for _, c_ in times[m]) + f" | {ratio} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="agaricus,cat250,cat1000",
                        help="comma-separated: agaricus, catK (K generated categories)")
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated, of: " + ", ".join(METHODS))
    parser.add_argument("--rows", type=int, default=200_000,
                        help="training rows of the generated datasets")
    parser.add_argument("--test-rows", type=int, default=50_000,
                        help="test rows of the generated datasets")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--max-depth", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, default=1,
                        help="threads of every library (1: the steadiest CPU times on a "
                             "loaded machine)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reference", default="lightgbm",
                        help="method the ratios divide by (if it ran)")
    parser.add_argument("--max-dense-mib", type=float, default=512.0,
                        help="largest float32 copy the one-hot exact fit may make")
    parser.add_argument("--data-dir", default=DEFAULT_DATA,
                        help="where agaricus.train/.test and agaricus.featmap.txt are "
                             "(default: ../shared/data beside the checkout)")
    args = parser.parse_args()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for m in methods:
        if m not in METHODS:
            parser.error(f"unknown method {m!r}; expected some of {', '.join(METHODS)}")
    print("$ python " + " ".join([os.path.relpath(__file__)] + sys.argv[1:]))
    versions = []
    for lib in ("gbc_core", "sklearn", "lightgbm", "xgboost", "numpy"):
        try:
            versions.append(f"{lib} {__import__(lib).__version__}")
        except ImportError:
            versions.append(f"{lib} absent")
    print(f"- {', '.join(versions)}; Python {sys.version.split()[0]}; "
          f"{os.cpu_count()} CPUs; load average at start "
          + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"- {args.trees} trees, learning rate {args.learning_rate}, depth "
          f"{args.max_depth} ({2**args.max_depth} leaves), n_jobs {args.n_jobs}, "
          f"{args.rounds} interleaved rounds")
    for name in (s.strip() for s in args.datasets.split(",") if s.strip()):
        if name == "agaricus":
            d = load_agaricus(args.data_dir)
            if d is None:
                print(f"\n### agaricus: skipped (no agaricus files in {args.data_dir})")
                continue
        elif name.startswith("cat") and name[3:].isdigit() and int(name[3:]) >= 2:
            d = make_generated(int(name[3:]), args.rows, args.test_rows, args.seed)
        else:
            parser.error(f"unknown dataset {name!r}; expected agaricus or catK (K >= 2)")
        run_dataset(d, methods, args)
    print("\n- load average at end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
