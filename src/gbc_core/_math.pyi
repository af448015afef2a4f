import numpy as np
from numpy.typing import ArrayLike, NDArray

def newton_leaf_values(
    residual: ArrayLike,
    prob: ArrayLike,
    leaf: ArrayLike,
    sample_weight: ArrayLike | None = None,
) -> NDArray[np.float64]: ...
def exact_leaf_values(
    y: ArrayLike,
    raw: ArrayLike,
    leaf: ArrayLike,
    sample_weight: ArrayLike | None = None,
) -> NDArray[np.float64]: ...
