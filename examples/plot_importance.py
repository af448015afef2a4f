"""
Feature importances: gain, split count and SHAP
===============================================

Three views of which features matter: the normalised squared-error decrease of each
feature's splits (``feature_importances_``), the number of splits on each feature,
and the mean absolute TreeSHAP value over test rows (the effect on the raw score).
"""

import matplotlib.pyplot as plt

from gbc_core import GradientBoostingClassifier
from gbc_core.datasets import load_higgs_sample
from gbc_core.plotting import plot_importance

X_train, y_train, X_test, y_test = load_higgs_sample()
model = GradientBoostingClassifier(n_estimators=100, max_depth=3).fit(X_train, y_train)

fig, axes = plt.subplots(1, 3, figsize=(14, 4.5))
for ax, kind in zip(axes, ["gain", "split", "shap"]):
    plot_importance(model, importance_type=kind, X=X_test, max_num_features=10, ax=ax)
fig.tight_layout()
plt.show()
