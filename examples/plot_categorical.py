"""
Categorical features: native splits, one-hot and ordinal codes
==============================================================

Three categorical features (10, 30 and 100 categories, each category with an effect
of its own on the log-odds, the rarer categories seen in fewer rows) and two numeric
ones, fitted three ways with the same trees (100 of depth 3):

- **native**: the columns have pandas' ``category`` dtype, so
  ``categorical_features="from_dtype"`` (the default) makes them categorical: a split
  sends a set of categories left (the categories sorted by their mean residual in
  the node, the best prefix of that order), with both split methods;
- **one-hot**: one 0/1 column per category (140 columns, 142 with the numeric ones):
  a split isolates one category from all the others, so a depth-3 tree uses at most
  three categories of a feature. Fitted with ``split_method="hist"``: the exact search
  over that many columns takes several times longer, for the same accuracy
  (``benchmarks/categorical.py`` in a checkout times both);
- **ordinal codes**: the category codes as plain numbers: a split cuts the codes at
  a threshold, an order that means nothing here.

Left: the log-loss on held-out rows; right: the time of the fit.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.metrics import log_loss
from sklearn.preprocessing import OneHotEncoder

from gbc_core import GradientBoostingClassifier

rng = np.random.default_rng(0)
n_train, n_test = 4000, 8000
n = n_train + n_test
sizes = (10, 30, 100)
logit = np.zeros(n)
columns = {}
for i, k in enumerate(sizes):
    p = 1.0 / np.arange(1, k + 1)            # Zipf: a few frequent, many rare
    codes = rng.choice(k, size=n, p=p / p.sum())
    logit += rng.normal(0.0, 1.0, size=k)[codes]  # the category's own effect
    columns[f"c{i}"] = codes
numeric = rng.normal(size=(n, 2))
logit += numeric[:, 0] - 0.5 * numeric[:, 1]
y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)

codes = np.column_stack(list(columns.values())).astype(np.float64)
frame = pd.DataFrame({name: pd.Categorical(c, categories=range(k))
                      for (name, c), k in zip(columns.items(), sizes)})
frame[["x0", "x1"]] = numeric
onehot = np.hstack([OneHotEncoder(sparse_output=False, categories=[range(k) for k in sizes])
                    .fit_transform(codes), numeric])
ordinal = np.hstack([codes, numeric])

train, test = slice(0, n_train), slice(n_train, n)
params = dict(n_estimators=100, learning_rate=0.1, max_depth=3)
fits = {
    "native (exact)": (dict(split_method="exact"), frame),
    "native (hist)": (dict(split_method="hist"), frame),
    "one-hot (hist)": (dict(split_method="hist"), onehot),
    "ordinal codes": (dict(split_method="exact"), ordinal),
}
losses, seconds = {}, {}
for name, (extra, X) in fits.items():
    X_train, X_test = (X.iloc[train], X.iloc[test]) if hasattr(X, "iloc") else (X[train], X[test])
    model = GradientBoostingClassifier(**params, **extra)
    start = time.perf_counter()
    model.fit(X_train, y[train])
    seconds[name] = time.perf_counter() - start
    losses[name] = log_loss(y[test], model.predict_proba(X_test)[:, 1])
    print(f"{name:>16}: {X_train.shape[1]:3d} columns, test log-loss "
          f"{losses[name]:.4f}, fit {seconds[name]:.2f} s")

names = list(fits)
colors = ["tab:blue", "tab:cyan", "tab:orange", "tab:gray"]
fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
axes[0].barh(names, [losses[k] for k in names], color=colors)
axes[0].set_xlim(min(losses.values()) * 0.95, max(losses.values()) * 1.02)
axes[0].set_xlabel("held-out log-loss (lower is better)")
axes[1].barh(names, [seconds[k] for k in names], color=colors)
axes[1].set_xlabel("fit time, s")
axes[0].invert_yaxis()  # the first method on top (the axes share it)
fig.suptitle(f"{n_train:,} training rows, 3 categorical features "
             f"({', '.join(map(str, sizes))} categories) and 2 numeric")
fig.tight_layout()
plt.show()
