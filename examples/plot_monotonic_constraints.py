"""
Monotonic constraints
=====================

A model whose predicted probability must move one way with a feature: here the
probability of the positive class must not fall as ``x0`` grows, nor rise as ``x1``
grows. Without constraints the fitted curves follow the noise of the sample (dips
and bumps that no one would defend); with ``monotonic_cst=[1, -1, 0]`` every tree
is monotone in both features, so the whole model is, for every row: the curves of
individual rows (thin lines) and their mean (the partial dependence, thick) never
go the wrong way. Features without a constraint are fitted as before.
"""

import matplotlib.pyplot as plt
import numpy as np

from gbc_core import GradientBoostingClassifier

rng = np.random.default_rng(0)
n = 3000
X = rng.uniform(-3, 3, size=(n, 3))
# The true effect: increasing in x0, decreasing in x1, a wave in x2.
logit = 0.8 * X[:, 0] + 0.3 * np.sin(2 * X[:, 0]) - 0.6 * X[:, 1] + np.sin(2 * X[:, 2])
y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)

params = dict(n_estimators=150, learning_rate=0.1, max_depth=4, split_method="hist")
free = GradientBoostingClassifier(**params).fit(X, y)
monotone = GradientBoostingClassifier(monotonic_cst=[1, -1, 0], **params).fit(X, y)

grid = np.linspace(-3, 3, 121)
rows = X[rng.choice(n, 25, replace=False)]
fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
for ax, feature in zip(axes, (0, 1)):
    for model, color, label in ((free, "tab:gray", "no constraint"),
                                (monotone, "tab:blue", "monotonic_cst")):
        Z = np.repeat(rows, grid.size, axis=0)
        Z[:, feature] = np.tile(grid, len(rows))
        curves = model.predict_proba(Z)[:, 1].reshape(len(rows), grid.size)
        ax.plot(grid, curves.T, color=color, alpha=0.15, linewidth=0.8)
        ax.plot(grid, curves.mean(axis=0), color=color, linewidth=2.5, label=label)
        steps = np.diff(curves, axis=1) * (1 if feature == 0 else -1)
        print(f"x{feature}, {label}: {np.count_nonzero(steps < 0)} steps against the "
              "constraint")
    ax.set_xlabel(f"x{feature} ({'increasing' if feature == 0 else 'decreasing'})")
    ax.legend()
axes[0].set_ylabel("P(y = 1)")
fig.suptitle("Individual rows (thin) and their mean (thick)")
fig.tight_layout()
plt.show()
