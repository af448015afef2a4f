"""The paper's math, exposed: leaf values computed by the trainer's own kernels
(eq. 1's Newton step and the exact leaf solve)."""

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
    leaf_ids = _leaf_ids(leaf_in)
    if not (np.isfinite(r).all() and np.isfinite(p).all()):
        raise ValueError("residual and prob must be finite")
    if ((p < 0) | (p > 1)).any():
        raise ValueError("prob must be in [0, 1]")
    w = _checked_weights(sample_weight, r.shape)
    return _leaves.newton_leaf_values_kernel(r, p, leaf_ids, w, int(leaf_ids.max()) + 1)


def exact_leaf_values(y, raw, leaf, sample_weight=None):
    """Leaf values that minimise each leaf's log-loss exactly (``leaf_solver="exact"``).

    For each leaf j, gamma_j is the root of sum w (y - sigma(F + gamma)) = 0 over
    its samples (the paper's eq. 7, solved instead of approximated), found by the
    trainer's own kernel (a safeguarded Newton iteration in a bracket). A pure leaf
    (one class only) has no root: its gamma is capped at the smallest value that
    puts every sample's log-odds at least -log(machine epsilon) ~ 36.04 on its
    label's side (0 if they already are there).

    Parameters
    ----------
    y : array-like of {0, 1} of shape (n_samples,)
        Labels.
    raw : array-like of shape (n_samples,)
        F of the previous iteration (finite).
    leaf : array-like of int of shape (n_samples,)
        Leaf id of each sample, in ``0 .. n_leaves - 1``.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.

    Returns
    -------
    gamma : ndarray of shape (leaf.max() + 1,)
        gamma of each leaf id; a leaf id with no sample (or no weight) gets 0.

    Examples
    --------
    >>> import numpy as np
    >>> from gbc_core import exact_leaf_values
    >>> exact_leaf_values([1, 0, 1, 0, 1, 0], np.zeros(6), [0, 0, 0, 1, 1, 1])
    array([ 0.69314718, -0.69314718])
    """
    f = np.ascontiguousarray(raw, dtype=np.float64)
    y_in = np.asarray(y)
    leaf_in = np.asarray(leaf)
    if f.ndim != 1 or y_in.shape != f.shape or leaf_in.shape != f.shape:
        raise ValueError(
            "y, raw and leaf must be 1-D arrays of the same length, got shapes "
            f"{y_in.shape}, {f.shape} and {leaf_in.shape}")
    if f.shape[0] == 0:
        raise ValueError("raw is empty; at least one sample is required")
    if not np.isin(y_in, (0, 1)).all():
        raise ValueError("y must hold the labels 0 and 1 only")
    if not np.isfinite(f).all():
        raise ValueError("raw must be finite")
    leaf_ids = _leaf_ids(leaf_in)
    w = _checked_weights(sample_weight, f.shape)
    return _leaves.exact_leaf_values_kernel(
        np.ascontiguousarray(y_in, dtype=np.int32), 1, f, leaf_ids, w,
        int(leaf_ids.max()) + 1, 0)


def _leaf_ids(leaf_in):
    if leaf_in.dtype.kind not in "iu" and not (
        leaf_in.dtype.kind == "f" and np.all(np.isfinite(leaf_in)) and np.all(leaf_in == np.round(leaf_in))
    ):
        raise ValueError(f"leaf must hold integer leaf ids, got dtype {leaf_in.dtype}")
    if (leaf_in < 0).any():
        raise ValueError("leaf ids must be >= 0")
    if leaf_in.max() >= 2**31 - 1:
        raise ValueError("leaf ids must be < 2**31 - 1")
    return np.ascontiguousarray(leaf_in, dtype=np.int32)


def _checked_weights(sample_weight, shape):
    if sample_weight is None:
        return None
    w = np.ascontiguousarray(sample_weight, dtype=np.float64)
    if w.shape != shape:
        raise ValueError(f"sample_weight must have shape {shape}, got {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("sample_weight must be finite and >= 0")
    return w
