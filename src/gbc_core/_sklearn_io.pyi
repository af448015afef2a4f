from typing import Any

from ._booster import Booster
from ._classifier import GradientBoostingClassifier

def from_sklearn(est: Any) -> GradientBoostingClassifier: ...
def to_sklearn(booster: Booster) -> Any: ...
