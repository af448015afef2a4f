"""
Calibration curve
=================

Mean predicted probability against the observed frequency of the positive class,
in ten bins of test rows (scikit-learn's ``calibration_curve``): boosting with the
log-loss is close to the diagonal; with ``loss="exponential"``, p = sigma(2F).
"""

import matplotlib.pyplot as plt
from sklearn.calibration import calibration_curve

from gbc_core import GradientBoostingClassifier
from gbc_core.datasets import load_higgs_sample

X_train, y_train, X_test, y_test = load_higgs_sample()
fig, ax = plt.subplots(figsize=(5.5, 5))
ax.plot([0, 1], [0, 1], color="#888888", ls=":", label="perfectly calibrated")
for loss in ("log_loss", "exponential"):
    model = GradientBoostingClassifier(n_estimators=100, loss=loss).fit(X_train, y_train)
    observed, predicted = calibration_curve(y_test, model.predict_proba(X_test)[:, 1],
                                            n_bins=10, strategy="quantile")
    ax.plot(predicted, observed, marker="o", label=f'loss="{loss}"')
ax.set_xlabel("mean predicted probability")
ax.set_ylabel("fraction of positives")
ax.set_title("Calibration on the test rows")
ax.legend()
plt.tight_layout()
plt.show()
