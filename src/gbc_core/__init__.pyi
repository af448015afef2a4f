# The public names (loaded on first use by ``__init__.py``), for type checkers.
from os import PathLike
from typing import IO

from sklearn.exceptions import NotFittedError as NotFittedError

from ._booster import Booster as Booster
from ._record import FitRecord as FitRecord
from ._classifier import GradientBoostingClassifier as GradientBoostingClassifier
from ._common import NODE_DTYPE as NODE_DTYPE
from ._config import show_config as show_config
from ._ensemble import Ensemble as Ensemble
from ._ensemble import Tree as Tree
from ._loss import BinomialLoss as BinomialLoss
from ._loss import ExponentialLoss as ExponentialLoss
from ._loss import MultinomialLoss as MultinomialLoss
from ._loss import Loss as Loss
from ._loss import register_loss as register_loss
from ._link import HalfLogitLink as HalfLogitLink
from ._link import LogitLink as LogitLink
from ._link import SoftmaxLink as SoftmaxLink
from ._math import exact_leaf_values as exact_leaf_values
from ._math import newton_leaf_values as newton_leaf_values
from ._model_io import ModelFormatError as ModelFormatError
from ._model_io import read_header
from ._sklearn_io import from_sklearn as from_sklearn
from ._validation import DataConversionWarning as DataConversionWarning
from ._version import __version__ as __version__

__all__: list[str]

read_model_header = read_header

def load(path: str | PathLike[str] | IO[bytes]) -> Booster: ...
def from_bytes(data: bytes | bytearray | memoryview) -> Booster: ...
