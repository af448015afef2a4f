"""Binary fits are the same, bit for bit, as those of the engine before the layered
core and multiclass (``tests/fixtures/make_binary_reference.py``).

The reference was generated on x86-64, where the kernels' floating-point operations
are fixed (SSE2, no fused multiply-add): there the trees, raw scores and training
losses must be identical. Elsewhere a compiler may fuse operations differently; the
models must then agree to rounding.
"""

import platform
import sys
from pathlib import Path

import numpy as np
import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
EXACT = platform.machine().lower() in ("x86_64", "amd64")

sys.path.insert(0, str(FIXTURES))
import make_binary_reference as reference  # noqa: E402


@pytest.fixture(scope="module")
def expected():
    return np.load(FIXTURES / "binary_reference.npz", allow_pickle=False)


@pytest.mark.parametrize("name", reference.NAMES)
def test_binary_fit_is_unchanged(name, expected):
    est, X, y, fit, X_eval = reference.config(name)
    est.fit(X, y, **fit)
    trees = est.trees()
    nodes = np.concatenate(trees)
    raw = est.decision_function(X_eval)
    if not EXACT:
        np.testing.assert_allclose(raw, expected[f"{name}.raw"], rtol=1e-9, atol=1e-12)
        return
    assert [t.shape[0] for t in trees] == expected[f"{name}.n_nodes"].tolist()
    for field in reference.FIELDS:
        assert nodes[field].tobytes() == expected[f"{name}.{field}"].tobytes(), field
    assert raw.tobytes() == expected[f"{name}.raw"].tobytes()
    assert est.train_score_.tobytes() == expected[f"{name}.train_score"].tobytes()
