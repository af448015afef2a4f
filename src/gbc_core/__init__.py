"""gbc-core: an exact-split gradient boosting classifier with typed Cython kernels.

The model is the one of H.-H. Chen, "Understanding Gradient Boosting Classifier:
Training, Prediction, and the Role of gamma_j": F0 = 0, residuals r = y - p, a
squared-error regression tree per iteration, leaf values
gamma_j = sum r / sum p (1 - p), F += eta gamma, p = sigma(F); with three or more
classes, its multinomial form (one tree per class and iteration, p = softmax(F)).

The public names are loaded on first use: ``import gbc_core`` is instant, and
:func:`load` and the :class:`Booster` it returns never import scikit-learn (only
``GradientBoostingClassifier`` does), so batch jobs that only score start quickly.
"""

import importlib

from ._version import __version__ as __version__

#: Public name -> (module, attribute).
_PUBLIC = {
    "GradientBoostingClassifier": ("._classifier", "GradientBoostingClassifier"),
    "Booster": ("._booster", "Booster"),
    "FitRecord": ("._record", "FitRecord"),
    "Ensemble": ("._ensemble", "Ensemble"),
    "Tree": ("._ensemble", "Tree"),
    "BinomialLoss": ("._loss", "BinomialLoss"),
    "ExponentialLoss": ("._loss", "ExponentialLoss"),
    "MultinomialLoss": ("._loss", "MultinomialLoss"),
    "Loss": ("._loss", "Loss"),
    "register_loss": ("._loss", "register_loss"),
    "LogitLink": ("._link", "LogitLink"),
    "HalfLogitLink": ("._link", "HalfLogitLink"),
    "SoftmaxLink": ("._link", "SoftmaxLink"),
    "NODE_DTYPE": ("._common", "NODE_DTYPE"),
    "newton_leaf_values": ("._math", "newton_leaf_values"),
    "exact_leaf_values": ("._math", "exact_leaf_values"),
    "show_config": ("._config", "show_config"),
    "from_sklearn": ("._sklearn_io", "from_sklearn"),
    "ModelFormatError": ("._model_io", "ModelFormatError"),
    "read_model_header": ("._model_io", "read_header"),
    "DataConversionWarning": ("._validation", "DataConversionWarning"),
    "NotFittedError": ("sklearn.exceptions", "NotFittedError"),
}


def load(path):
    """The model saved at ``path`` (or read from a binary file object), as a
    :class:`Booster`; ``GradientBoostingClassifier.load`` gives an estimator.

    The file is checked before use and read no further than its header declares.

    Parameters
    ----------
    path : str, os.PathLike or binary file object
        A file written by ``save``.

    Returns
    -------
    Booster
        Predicts bit-identically to the model that wrote the file; never imports
        scikit-learn.

    Raises
    ------
    ModelFormatError
        For a corrupt, truncated or crafted file.

    Examples
    --------
    >>> import os, tempfile
    >>> import gbc_core
    >>> from gbc_core import GradientBoostingClassifier
    >>> X = [[0.0], [1.0], [2.0], [3.0]]
    >>> model = GradientBoostingClassifier(n_estimators=3).fit(X, [0, 0, 1, 1])
    >>> path = os.path.join(tempfile.mkdtemp(), "model.gbc")
    >>> model.save(path)
    >>> booster = gbc_core.load(path)
    >>> bool((booster.predict_proba(X) == model.predict_proba(X)).all())
    True
    """
    from ._booster import Booster

    return Booster.load(path)


def from_bytes(data):
    """The :class:`Booster` of model-format bytes (``to_bytes``), validated.

    Parameters
    ----------
    data : bytes-like
        A model in the gbc-core model format.

    Returns
    -------
    Booster

    Raises
    ------
    ModelFormatError
        For corrupt or invalid data.

    Examples
    --------
    >>> import gbc_core
    >>> from gbc_core import GradientBoostingClassifier
    >>> model = GradientBoostingClassifier(n_estimators=3).fit([[0.0], [1.0]], ["no", "yes"])
    >>> gbc_core.from_bytes(model.to_bytes()).classes_.tolist()
    ['no', 'yes']
    """
    from ._booster import Booster

    return Booster.from_bytes(data)


def __getattr__(name):
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _PUBLIC[name]
    value = getattr(importlib.import_module(module, __name__), attribute)
    globals()[name] = value
    return value


__all__ = sorted([*_PUBLIC, "load", "from_bytes", "__version__"])


def __dir__():
    return sorted(set(globals()) | set(__all__))
