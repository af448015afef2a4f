from typing import Any, TextIO

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._booster import Booster
from ._classifier import GradientBoostingClassifier

PAPER_X: NDArray[np.float64]
PAPER_Y: NDArray[np.int64]
PAPER_THRESHOLDS: tuple[float, ...]
PAPER_LEARNING_RATE: float

def float32_at_most(t: float) -> np.float32: ...
def stump_nodes(threshold: float, feature: int = ...) -> NDArray[np.void]: ...
def fit_fixed_stumps(x: ArrayLike, y: ArrayLike, thresholds: ArrayLike,
                     learning_rate: float = ...) -> tuple[Booster, list[dict[str, Any]]]: ...
def paper_example() -> tuple[Booster, list[dict[str, Any]]]: ...
def trace(model: GradientBoostingClassifier | Booster, X: ArrayLike, y: ArrayLike, *,
          digits: int = ..., file: TextIO | None = ...) -> None: ...
