# Type stubs for the public estimator. Kept small on purpose: the constructor
# matches the runtime signature (a test checks this), the main methods are typed,
# and anything not listed here resolves to ``Any`` through ``__getattr__``.
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from os import PathLike
from typing import IO, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.sparse import sparray, spmatrix
from typing_extensions import Self

from ._loss import Loss

from ._booster import Booster

_EvalSet = tuple[ArrayLike | spmatrix | sparray, ArrayLike] | tuple[ArrayLike | spmatrix | sparray, ArrayLike, ArrayLike]

class GradientBoostingClassifier:
    n_estimators: int
    learning_rate: float
    max_depth: int | None
    max_leaf_nodes: int | None
    min_samples_split: int | float
    min_samples_leaf: int | float
    min_weight_fraction_leaf: float
    subsample: float
    max_features: int | float | Literal["sqrt", "log2"] | None
    init: Literal["zero", "prior"]
    random_state: int | np.random.RandomState | np.random.Generator | None
    n_jobs: int | None
    verbose: int
    validation_fraction: float
    n_iter_no_change: int | None
    tol: float
    scoring: str | Callable[..., float] | None
    eval_metric: str | Sequence[str] | None
    warm_start: bool
    class_weight: Mapping[Any, float] | Literal["balanced"] | None
    loss: Literal["log_loss", "exponential"] | str | Loss
    split_method: Literal["exact", "hist"]
    max_bins: int
    leaf_solver: Literal["newton", "exact"]
    criterion: Literal["friedman_mse", "squared_error"]
    min_impurity_decrease: float
    ccp_alpha: float
    monotonic_cst: Sequence[int] | NDArray[Any] | Mapping[str, int] | None
    interaction_cst: Literal["pairwise", "no_interactions"] | Sequence[Iterable[int]] | None
    categorical_features: Literal["from_dtype"] | Sequence[int] | Sequence[bool] | Sequence[str] | NDArray[Any] | None
    min_samples_category: int

    booster_: Booster
    classes_: NDArray[Any]
    n_classes_: int
    n_features_in_: int
    feature_names_in_: NDArray[np.object_]
    n_estimators_: int
    n_trees_per_iteration_: int
    estimators_: NDArray[np.object_]
    train_score_: NDArray[np.float64]
    validation_score_: NDArray[np.float64]
    evals_result_: dict[str, dict[str, list[float]]]
    best_iteration_: int | None
    oob_scores_: NDArray[np.float64]
    oob_improvement_: NDArray[np.float64]
    oob_score_: float
    max_features_: int
    init_raw_: float | NDArray[np.float64]

    def __init__(
        self,
        n_estimators: int = 100,
        learning_rate: float = 0.1,
        max_depth: int | None = 3,
        max_leaf_nodes: int | None = None,
        min_samples_split: int | float = 2,
        min_samples_leaf: int | float = 1,
        min_weight_fraction_leaf: float = 0.0,
        subsample: float = 1.0,
        max_features: int | float | Literal["sqrt", "log2"] | None = None,
        init: Literal["zero", "prior"] = "zero",
        random_state: int | np.random.RandomState | np.random.Generator | None = None,
        n_jobs: int | None = None,
        verbose: int = 0,
        validation_fraction: float = 0.1,
        n_iter_no_change: int | None = None,
        tol: float = 1e-4,
        scoring: str | Callable[..., float] | None = "loss",
        eval_metric: str | Sequence[str] | None = None,
        warm_start: bool = False,
        class_weight: Mapping[Any, float] | Literal["balanced"] | None = None,
        loss: Literal["log_loss", "exponential"] | str | Loss = "log_loss",
        split_method: Literal["exact", "hist"] = "exact",
        max_bins: int = 255,
        leaf_solver: Literal["newton", "exact"] = "newton",
        criterion: Literal["friedman_mse", "squared_error"] = "friedman_mse",
        min_impurity_decrease: float = 0.0,
        ccp_alpha: float = 0.0,
        monotonic_cst: Sequence[int] | NDArray[Any] | Mapping[str, int] | None = None,
        interaction_cst: Literal["pairwise", "no_interactions"] | Sequence[Iterable[int]] | None = None,
        categorical_features: Literal["from_dtype"]
        | Sequence[int]
        | Sequence[bool]
        | Sequence[str]
        | NDArray[Any]
        | None = "from_dtype",
        min_samples_category: int = 1,
    ) -> None: ...
    def fit(
        self,
        X: ArrayLike | spmatrix | sparray,
        y: ArrayLike,
        sample_weight: ArrayLike | None = None,
        eval_set: _EvalSet | list[_EvalSet] | None = None,
        monitor: Callable[[int, Any, dict[str, Any]], Any] | None = None,
        eval_names: Sequence[str] | None = None,
    ) -> Self: ...
    def decision_function(self, X: ArrayLike | spmatrix | sparray) -> NDArray[np.float64]: ...
    def predict_proba(self, X: ArrayLike | spmatrix | sparray) -> NDArray[np.float64]: ...
    def predict_log_proba(self, X: ArrayLike | spmatrix | sparray) -> NDArray[np.float64]: ...
    def predict(self, X: ArrayLike | spmatrix | sparray) -> NDArray[Any]: ...
    def staged_decision_function(self, X: ArrayLike | spmatrix | sparray) -> Iterator[NDArray[np.float64]]: ...
    def staged_predict_proba(self, X: ArrayLike | spmatrix | sparray) -> Iterator[NDArray[np.float64]]: ...
    def staged_predict(self, X: ArrayLike | spmatrix | sparray) -> Iterator[NDArray[Any]]: ...
    def predict_contributions(self, X: ArrayLike | spmatrix | sparray) -> NDArray[np.float64]: ...
    def apply(self, X: ArrayLike | spmatrix | sparray) -> NDArray[np.int32]: ...
    @property
    def feature_importances_(self) -> NDArray[np.float64]: ...
    @property
    def is_categorical_(self) -> NDArray[np.bool_] | None: ...
    def trees(self) -> list[NDArray[np.void]]: ...
    def to_sklearn(self) -> Any: ...
    def save(self, path: str | PathLike[str] | IO[bytes]) -> None: ...
    def to_bytes(self) -> bytes: ...
    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> Self: ...
    @classmethod
    def load(cls, path: str | PathLike[str] | IO[bytes]) -> Self: ...
    def score(self, X: ArrayLike | spmatrix | sparray, y: ArrayLike, sample_weight: ArrayLike | None = None) -> float: ...
    def get_params(self, deep: bool = True) -> dict[str, Any]: ...
    def set_params(self, **params: Any) -> Self: ...
    def __getattr__(self, name: str) -> Any: ...
