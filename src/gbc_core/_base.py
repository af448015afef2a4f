"""Minimal estimator base classes used when scikit-learn is not installed.

They follow scikit-learn's conventions (parameters are the ``__init__`` arguments,
stored unchanged; ``get_params``/``set_params``; ``score`` is the accuracy), so the
estimator behaves the same with or without scikit-learn.
"""

import inspect

import numpy as np


class BaseEstimator:
    """``get_params``/``set_params`` from the ``__init__`` signature."""

    @classmethod
    def _get_param_names(cls):
        sig = inspect.signature(cls.__init__)
        return sorted(p.name for p in sig.parameters.values()
                      if p.name != "self" and p.kind != p.VAR_KEYWORD)

    def get_params(self, deep=True):
        """Parameters of the estimator, as a dict."""
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params):
        """Set parameters; unknown names raise ValueError."""
        valid = self._get_param_names()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for {type(self).__name__}")
            setattr(self, key, value)
        return self

    def __repr__(self):
        sig = inspect.signature(type(self).__init__)
        changed = [
            f"{name}={getattr(self, name)!r}"
            for name, p in sig.parameters.items()
            if name != "self" and getattr(self, name) is not p.default
            and getattr(self, name) != p.default
        ]
        return f"{type(self).__name__}({', '.join(changed)})"


class ClassifierMixin:
    """``score`` as the mean accuracy."""

    _estimator_type = "classifier"

    def score(self, X, y, sample_weight=None):
        """Mean accuracy of ``predict(X)`` against ``y``."""
        y = np.asarray(y)
        correct = (self.predict(X) == y).astype(np.float64)
        return float(np.average(correct, weights=sample_weight))
