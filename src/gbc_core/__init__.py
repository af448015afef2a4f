"""gbc-core: an exact-split gradient boosting classifier with typed Cython kernels.

The model is the one of H.-H. Chen, "Understanding Gradient Boosting Classifier:
Training, Prediction, and the Role of gamma_j": F0 = 0, residuals r = y - p, a
squared-error regression tree per iteration, leaf values
gamma_j = sum r / sum p (1 - p), F += eta gamma, p = sigma(F).
"""

from ._version import __version__
from ._classifier import GradientBoostingClassifier, NotFittedError
from ._math import newton_leaf_values
from ._config import show_config
from ._model_io import ModelFormatError
from ._model_io import load_model as load
from ._model_io import model_from_bytes as from_bytes
from ._validation import DataConversionWarning

__all__ = [
    "GradientBoostingClassifier",
    "NotFittedError",
    "newton_leaf_values",
    "show_config",
    "ModelFormatError",
    "load",
    "from_bytes",
    "DataConversionWarning",
    "__version__",
]
