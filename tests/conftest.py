import numpy as np
import pytest


def make_continuous(n_samples=2000, n_features=8, seed=0):
    """Generated continuous binary data (float32-representable, no ties by design)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, n_features)).astype(np.float32).astype(np.float64)
    logits = X[:, 0] - 2 * X[:, 1] * (X[:, 2] > 0) + 0.5 * X[:, 3] ** 2 - 0.5
    y = (rng.uniform(size=n_samples) < 1 / (1 + np.exp(-logits))).astype(np.int64)
    return X, y


@pytest.fixture
def continuous_data():
    return make_continuous()
