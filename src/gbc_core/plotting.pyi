from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._booster import Booster
from ._classifier import GradientBoostingClassifier

_Model = GradientBoostingClassifier | Booster
_Importance = Literal["gain", "split", "shap"]

IMPORTANCE_TYPES: tuple[str, ...]

def importances(model: _Model, importance_type: _Importance = ...,
                X: ArrayLike | None = ...) -> NDArray[np.float64]: ...
def plot_importance(model: _Model, *, importance_type: _Importance = ...,
                    X: ArrayLike | None = ..., max_num_features: int | None = ...,
                    feature_names: Sequence[str] | None = ..., ax: Any | None = ...,
                    title: str | None = ..., show_values: bool = ...) -> Any: ...
def plot_tree(model: _Model, iteration: int = ..., *, class_label: Any = ...,
              feature_names: Sequence[str] | None = ..., ax: Any | None = ...,
              precision: int = ..., fontsize: int = ...) -> Any: ...
def staged_loss(model: _Model, X: ArrayLike, y: ArrayLike) -> NDArray[np.float64]: ...
def plot_metric(model: _Model, *, metric: str | None = ..., eval_set: dict[str, tuple[ArrayLike, ArrayLike]] | None = ...,
                ax: Any | None = ..., title: str | None = ...) -> Any: ...
def plot_contributions(model: _Model, X: ArrayLike, *, row: int = ..., class_label: Any = ...,
                       max_num_features: int = ..., feature_names: Sequence[str] | None = ...,
                       ax: Any | None = ..., title: str | None = ...) -> Any: ...
