"""Build and run-time configuration."""

import sys

from . import _openmp
from ._version import __version__


def show_config(file=None):
    """Print the version, whether OpenMP is compiled in, and the default thread count.

    Returns
    -------
    dict
        ``{"version", "openmp", "threads", "python", "numpy"}``.
    """
    import numpy as np

    info = {
        "version": __version__,
        "openmp": _openmp.openmp_enabled(),
        "threads": _openmp.max_threads(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
    }
    out = file if file is not None else sys.stdout
    for key, value in info.items():
        print(f"{key}: {value}", file=out)
    return info
