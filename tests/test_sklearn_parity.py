"""gbc-core's classifier where scikit-learn's machinery uses it, against scikit-learn.

The incompatibilities that running scikit-learn's own GradientBoostingClassifier
tests found (``benchmarks/sklearn_gbc_suite.py``), each checked against what
scikit-learn itself does.
"""

import warnings

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingClassifier as SklearnGBC
from sklearn.exceptions import DataConversionWarning
from sklearn.model_selection import train_test_split

from gbc_core import GradientBoostingClassifier

# The toy data of scikit-learn's test_gradient_boosting.py.
TOY_X = [[-2, -1], [-1, -1], [-1, -2], [1, 1], [1, 2], [2, 1]]
TOY_Y = [-1, -1, -1, 1, 1, 1]


# ------------------------------------------------- found by scikit-learn's tests
def test_column_vector_y_warning_is_sklearns():
    y = np.asarray(TOY_Y)[:, np.newaxis]
    messages = []
    for model in (GradientBoostingClassifier(n_estimators=2), SklearnGBC(n_estimators=2)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(TOY_X, y)
        messages.append([str(w.message) for w in caught
                         if issubclass(w.category, DataConversionWarning)])
    ours, theirs = messages
    assert len(theirs) == 1
    assert ours == theirs


def test_too_few_members_for_early_stopping_error_is_sklearns():
    # scikit-learn's estimator stratifies on its internal class codes; its message
    # is that of a stratified split of y, which names the labels.
    X = [[1, 2], [2, 3], [3, 4], [4, 5]]
    y = ["a", "a", "a", "b"]
    with pytest.raises(ValueError) as theirs:
        train_test_split(X, y, test_size=0.1, stratify=y, random_state=0)
    with pytest.raises(ValueError) as ours:
        GradientBoostingClassifier(n_iter_no_change=5).fit(X, y)
    assert "['b']" in str(theirs.value)
    assert str(ours.value).startswith(str(theirs.value))
