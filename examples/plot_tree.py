"""
A tree drawn
============

The first tree of a fit on data with missing values: each split's threshold and
the side its missing values take ("+ missing"), each leaf's contribution to the raw
score (learning rate times gamma) and every node's cover (the training rows, or
their weight, that reached it).
"""

import matplotlib.pyplot as plt
import numpy as np

from gbc_core import GradientBoostingClassifier
from gbc_core.datasets import load_higgs_sample
from gbc_core.plotting import plot_tree

X_train, y_train, _, _ = load_higgs_sample()
X_train = X_train.copy()
rng = np.random.default_rng(0)
X_train[rng.uniform(size=X_train.shape) < 0.1] = np.nan  # 10% missing values

model = GradientBoostingClassifier(n_estimators=10, max_depth=3).fit(X_train, y_train)
ax = plot_tree(model, iteration=0)
plt.tight_layout()
plt.show()
