"""
SHAP summary and one row's waterfall
====================================

TreeSHAP values (``predict_contributions``): on the left, for the most important
features, each test row's contribution against the feature's value (colour); on the
right, one row's contributions from the expected value to its raw score.
"""

import matplotlib.pyplot as plt
import numpy as np

from gbc_core import GradientBoostingClassifier
from gbc_core.datasets import load_higgs_sample
from gbc_core.plotting import importances, plot_contributions

X_train, y_train, X_test, y_test = load_higgs_sample()
model = GradientBoostingClassifier(n_estimators=100, max_depth=3).fit(X_train, y_train)
phi = model.predict_contributions(X_test)[:, :-1]

top = np.argsort(-importances(model, "shap", X_test), kind="stable")[:8]
fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
rng = np.random.default_rng(0)
for rank, j in enumerate(top):
    values = X_test[:, j]
    colour = (values - np.nanmin(values)) / (np.nanmax(values) - np.nanmin(values) + 1e-12)
    jitter = rng.uniform(-0.25, 0.25, size=values.size)
    points = left.scatter(phi[:, j], len(top) - 1 - rank + jitter, c=colour, cmap="coolwarm",
                          s=6, alpha=0.7)
left.set_yticks(range(len(top)))
left.set_yticklabels([f"f{j}" for j in top[::-1]])
left.axvline(0, color="#555555", lw=1)
left.set_xlabel("SHAP value (contribution to the raw score)")
left.set_ylabel("feature")
left.set_title("SHAP summary (colour: feature value, low to high)")
fig.colorbar(points, ax=left, label="feature value (scaled)")

plot_contributions(model, X_test, row=0, max_num_features=8, ax=right)
fig.tight_layout()
plt.show()
