from typing import Any

from ._booster import Booster
from ._classifier import GradientBoostingClassifier

ML_OPSET: int
DEFAULT_OPSET: int
MIN_OPSET: int
CATEGORICAL_ML_OPSET: int

def to_onnx(model: GradientBoostingClassifier | Booster, *, target_opset: int | None = ...,
            name: str = ...) -> Any: ...
