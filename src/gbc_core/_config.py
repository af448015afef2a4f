"""Build and run-time configuration."""

import sys

from . import _openmp, _predictor
from ._version import __version__


def show_config(file=None):
    """Print the version, whether OpenMP is compiled in, the default thread count and
    the vectorised prediction kernel in use.

    Parameters
    ----------
    file : file object, optional
        Where to print (default: ``sys.stdout``).

    Returns
    -------
    dict
        ``{"version", "openmp", "threads", "predict_kernel", "python", "numpy"}``;
        ``predict_kernel`` is ``"avx2"`` on a CPU with AVX2 (x86-64, GCC or Clang
        build), else ``"portable"``: both give the same predictions.

    Examples
    --------
    >>> import io
    >>> import gbc_core
    >>> info = gbc_core.show_config(file=io.StringIO())
    >>> sorted(info)
    ['numpy', 'openmp', 'predict_kernel', 'python', 'threads', 'version']
    """
    import numpy as np

    info = {
        "version": __version__,
        "openmp": _openmp.openmp_enabled(),
        "threads": _openmp.max_threads(),
        "predict_kernel": _predictor.simd_kernel(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
    }
    out = file if file is not None else sys.stdout
    for key, value in info.items():
        print(f"{key}: {value}", file=out)
    return info
