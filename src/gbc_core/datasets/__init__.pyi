import numpy as np
from numpy.typing import NDArray

def load_higgs_sample() -> tuple[NDArray[np.float64], NDArray[np.int64],
                                 NDArray[np.float64], NDArray[np.int64]]: ...
