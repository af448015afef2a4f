"""The paper's math, exposed: leaf values computed by the trainer's own kernel."""

import numpy as np

from . import _leaves


def newton_leaf_values(residual, prob, leaf, sample_weight=None):
    """Leaf values gamma_j = sum w r / sum w p (1 - p) (paper eq. 1).

    Computed by the same Cython kernel the trainer uses. A leaf whose denominator is
    zero (below 1e-150 in magnitude) gets gamma = 0.

    Parameters
    ----------
    residual : array-like of shape (n_samples,)
        r = y - p of each sample.
    prob : array-like of shape (n_samples,)
        p of the previous iteration, in [0, 1].
    leaf : array-like of int of shape (n_samples,)
        Leaf id of each sample, in ``0 .. n_leaves - 1``.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.

    Returns
    -------
    gamma : ndarray of shape (leaf.max() + 1,)
        gamma of each leaf id; a leaf id with no sample gets 0.

    Examples
    --------
    >>> import numpy as np
    >>> from gbc_core import newton_leaf_values
    >>> r = np.array([0.5, -0.5, 0.5, -0.5, 0.5, -0.5])
    >>> p = np.full(6, 0.5)
    >>> newton_leaf_values(r, p, [0, 0, 0, 1, 1, 1])
    array([ 0.66666667, -0.66666667])
    """
    r = np.ascontiguousarray(residual, dtype=np.float64)
    p = np.ascontiguousarray(prob, dtype=np.float64)
    leaf_in = np.asarray(leaf)
    if r.ndim != 1 or p.shape != r.shape or leaf_in.shape != r.shape:
        raise ValueError(
            "residual, prob and leaf must be 1-D arrays of the same length, got shapes "
            f"{r.shape}, {p.shape} and {leaf_in.shape}"
        )
    if r.shape[0] == 0:
        raise ValueError("residual is empty; at least one sample is required")
    if leaf_in.dtype.kind not in "iu" and not (
        leaf_in.dtype.kind == "f" and np.all(np.isfinite(leaf_in)) and np.all(leaf_in == np.round(leaf_in))
    ):
        raise ValueError(f"leaf must hold integer leaf ids, got dtype {leaf_in.dtype}")
    if (leaf_in < 0).any():
        raise ValueError("leaf ids must be >= 0")
    if leaf_in.max() >= 2**31 - 1:
        raise ValueError("leaf ids must be < 2**31 - 1")
    leaf_ids = np.ascontiguousarray(leaf_in, dtype=np.int32)
    if not (np.isfinite(r).all() and np.isfinite(p).all()):
        raise ValueError("residual and prob must be finite")
    if ((p < 0) | (p > 1)).any():
        raise ValueError("prob must be in [0, 1]")
    w = None
    if sample_weight is not None:
        w = np.ascontiguousarray(sample_weight, dtype=np.float64)
        if w.shape != r.shape:
            raise ValueError(f"sample_weight must have shape {r.shape}, got {w.shape}")
        if not np.isfinite(w).all() or (w < 0).any():
            raise ValueError("sample_weight must be finite and >= 0")
    return _leaves.newton_leaf_values_kernel(r, p, leaf_ids, w, int(leaf_ids.max()) + 1)
