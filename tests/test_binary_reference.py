"""Binary fits are the same, bit for bit, as those of the engine before the layered
core and multiclass (``tests/fixtures/make_binary_reference.py``).

The reference was generated on x86-64, where the kernels' floating-point operations
are fixed (SSE2, no fused multiply-add) and no number of a fit depends on NumPy's
CPU-dispatched code or on BLAS (tests/test_reproducibility.py): there the trees, raw
scores and training losses must be identical, on any x86-64 CPU whose C library
gives the generating machine's exp, log and log1p (glibc's variants for CPUs with
FMA and AVX2; tests/test_reproducibility.py bounds what the others change).
Elsewhere the C library's functions round otherwise; the raw scores must then agree
to rtol 1e-9. A mismatch names the
configuration, the array, the nodes or rows that differ and the largest difference.
"""

import platform
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_arrays_equal, assert_nodes_equal

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
        assert_arrays_equal(raw, expected[f"{name}.raw"], f"{name}: raw scores of X_eval",
                            rtol=1e-9, atol=1e-12)
        return
    assert_arrays_equal(np.array([t.shape[0] for t in trees]), expected[f"{name}.n_nodes"],
                        f"{name}: number of nodes of each tree", index_name="tree")
    assert_nodes_equal(nodes, {f: expected[f"{name}.{f}"] for f in reference.FIELDS},
                       f"{name}: trees (nodes of all trees, concatenated)",
                       fields=reference.FIELDS)
    assert_arrays_equal(raw, expected[f"{name}.raw"], f"{name}: raw scores of X_eval")
    # The reference holds the mean log-loss; train_score_ is scikit-learn's binomial
    # deviance, twice it (exact in floating point).
    assert_arrays_equal(est.train_score_, 2 * expected[f"{name}.train_score"],
                        f"{name}: train_score_", index_name="iteration")
