"""
Partial dependence
==================

How the predicted probability moves with one feature (and with two at once),
averaged over the other features: scikit-learn's ``PartialDependenceDisplay`` on a
gbc-core model (``method="brute"``: the model predicts on copies of the rows with
the feature set to each grid value).
"""

import matplotlib.pyplot as plt
from sklearn.inspection import PartialDependenceDisplay

from gbc_core import GradientBoostingClassifier
from gbc_core.datasets import load_higgs_sample

X_train, y_train, X_test, y_test = load_higgs_sample()
model = GradientBoostingClassifier(n_estimators=100, max_depth=3).fit(X_train, y_train)

fig, ax = plt.subplots(1, 3, figsize=(13, 4))
PartialDependenceDisplay.from_estimator(
    model, X_test, features=[25, 27, (25, 27)], method="brute", response_method="predict_proba",
    grid_resolution=25, ax=ax)
fig.suptitle("Partial dependence of the probability of the positive class")
fig.tight_layout()
plt.show()
