"""
Newton step against the exact leaf solve
========================================

The paper's leaf value is one Newton step (eq. 1); ``leaf_solver="exact"`` sets
each leaf to the exact minimiser of its own loss. Training and test log-loss per
iteration of both, on the same trees' structure rules.
"""

import matplotlib.pyplot as plt

from gbc_core import GradientBoostingClassifier
from gbc_core.datasets import load_higgs_sample
from gbc_core.plotting import staged_loss

X_train, y_train, X_test, y_test = load_higgs_sample()
fig, ax = plt.subplots(figsize=(7, 4.5))
for solver, colour in (("newton", "#3b75af"), ("exact", "#d08a2e")):
    model = GradientBoostingClassifier(n_estimators=150, learning_rate=0.3, max_depth=3,
                                       leaf_solver=solver).fit(X_train, y_train)
    ax.plot(staged_loss(model, X_train, y_train), color=colour, ls="--",
            label=f"{solver}: train")
    ax.plot(staged_loss(model, X_test, y_test), color=colour, label=f"{solver}: test")
ax.set_xlabel("iteration")
ax.set_ylabel("mean log-loss")
ax.set_title("Leaf values: Newton step (eq. 1) and exact minimiser")
ax.legend()
plt.tight_layout()
plt.show()
