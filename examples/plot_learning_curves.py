"""
Learning curves and early stopping
==================================

Training, validation and test loss per iteration of a fit with early stopping:
training stops once the validation loss has not improved for ``n_iter_no_change``
iterations, and the model keeps its best iteration (the dotted line).
"""

import matplotlib.pyplot as plt

from gbc_core import GradientBoostingClassifier
from gbc_core.datasets import load_higgs_sample
from gbc_core.plotting import plot_metric

X_train, y_train, X_test, y_test = load_higgs_sample()
X_fit, X_val, y_fit, y_val = X_train[:6000], X_train[6000:], y_train[:6000], y_train[6000:]

model = GradientBoostingClassifier(n_estimators=1000, learning_rate=0.2, max_depth=3,
                                   subsample=0.8, n_iter_no_change=15, random_state=0)
model.fit(X_fit, y_fit, eval_set=(X_val, y_val))
print(f"kept {model.best_iteration_} of {len(model.validation_score_)} iterations run")

ax = plot_metric(model, eval_set={"test": (X_test, y_test)})
ax.figure.set_size_inches(7, 4.5)
plt.tight_layout()
plt.show()
