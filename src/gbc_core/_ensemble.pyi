from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.sparse import sparray, spmatrix

RAW_SCORE_LIMIT: float

CATEGORY_SET_WORDS: int
MAX_CATEGORY_CODES: int

def validate_trees(nodes: Any, offsets: ArrayLike, n_features: int) -> None: ...
def check_categorical(
    nodes: Any, offsets: ArrayLike, n_features: int, categorical: ArrayLike | None, category_sets: ArrayLike | None
) -> tuple[NDArray[np.bool_] | None, NDArray[np.uint32] | None]: ...

class _SklearnTreeArrays:
    node_count: int
    capacity: int
    max_depth: int
    n_leaves: int
    n_features: int | None
    n_outputs: int
    max_n_classes: int
    n_classes: NDArray[np.intp]
    children_left: NDArray[np.intp]
    children_right: NDArray[np.intp]
    feature: NDArray[np.intp]
    threshold: NDArray[np.float64]
    value: NDArray[np.float64]
    impurity: NDArray[np.float64]
    n_node_samples: NDArray[np.intp]
    weighted_n_node_samples: NDArray[np.float64]
    missing_go_to_left: NDArray[np.uint8]

class Tree:
    nodes: NDArray[np.void]
    def __init__(
        self,
        nodes: ArrayLike,
        *,
        n_features: int | None = None,
        params: dict[str, Any] | None = None,
        categorical: ArrayLike | None = None,
    ) -> None: ...
    tree_: _SklearnTreeArrays
    max_features: Any
    max_leaf_nodes: int | None
    min_samples_split: int | float
    min_samples_leaf: int | float
    min_weight_fraction_leaf: float
    min_impurity_decrease: float
    ccp_alpha: float
    node_count: int
    feature: NDArray[np.int32]
    threshold: NDArray[np.float64]
    children_left: NDArray[np.int32]
    children_right: NDArray[np.int32]
    value: NDArray[np.float64]
    missing_go_to_left: NDArray[np.uint8]
    n_node_samples: NDArray[np.int64]
    weighted_n_node_samples: NDArray[np.float64]
    improvement: NDArray[np.float64]
    max_depth: int

class Ensemble:
    def __init__(
        self,
        nodes: ArrayLike,
        tree_offsets: ArrayLike,
        *,
        n_outputs: int,
        init_raw: ArrayLike,
        learning_rate: float,
        n_features: int,
        categorical: ArrayLike | None = None,
        category_sets: ArrayLike | None = None,
    ) -> None: ...
    @classmethod
    def from_trees(
        cls,
        trees: list[NDArray[np.void]],
        *,
        n_outputs: int,
        init_raw: ArrayLike,
        learning_rate: float,
        n_features: int,
        categorical: ArrayLike | None = None,
        category_sets: ArrayLike | None = None,
    ) -> Ensemble: ...
    nodes: NDArray[np.void]
    tree_offsets: NDArray[np.int64]
    n_outputs: int
    init_raw: NDArray[np.float64]
    learning_rate: float
    n_features: int
    categorical: NDArray[np.bool_] | None
    category_sets: NDArray[np.uint32] | None
    n_trees: int
    n_iterations: int
    def tree_nodes(self, iteration: int, output: int = 0) -> NDArray[np.void]: ...
    def tree(self, iteration: int, output: int = 0) -> Tree: ...
    def trees(self) -> list[NDArray[np.void]]: ...
    def raw_bound(self) -> NDArray[np.float64]: ...
    def predict_raw(self, X: ArrayLike | spmatrix | sparray, *, n_jobs: int | None = None, iterations: int | None = None) -> NDArray[np.float64]: ...
    def staged_predict_raw(self, X: ArrayLike | spmatrix | sparray, *, n_jobs: int | None = None) -> Iterator[NDArray[np.float64]]: ...
    def add_raw(self, X: NDArray[np.float32] | spmatrix | sparray, out: NDArray[np.float64], iteration_start: int, iteration_stop: int, n_threads: int = 1) -> None: ...
    def expected_value(self) -> NDArray[np.float64]: ...
    def predict_contributions(self, X: ArrayLike | spmatrix | sparray, *, n_jobs: int | None = None) -> NDArray[np.float64]: ...
    def apply(self, X: ArrayLike | spmatrix | sparray) -> NDArray[np.int32]: ...
    def feature_importances(self) -> NDArray[np.float64]: ...
