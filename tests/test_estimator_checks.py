"""scikit-learn's estimator conventions (``parametrize_with_checks``)."""

import warnings

import pytest

from conftest import require

require("sklearn")
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from gbc_core import GradientBoostingClassifier  # noqa: E402

# Checks that cannot pass by design, with the reason.
EXPECTED_FAILED = {
    "check_sample_weight_equivalence_on_dense_data": (
        "min_samples_split/min_samples_leaf count samples, not weights, as in "
        "scikit-learn's own GradientBoostingClassifier (which fails this check too)"
    ),
    "check_sample_weight_equivalence_on_sparse_data": (
        "the same check on sparse input (now accepted): min_samples_split/"
        "min_samples_leaf count samples, not weights, as in scikit-learn's own "
        "GradientBoostingClassifier (which fails this check too)"
    ),
}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED


# gbc-core does not import scikit-learn (an optional dependency that costs seconds to
# import), so its base classes are its own; scikit-learn warns about that when it
# collects the checks, and every check then runs.
pytestmark = pytest.mark.filterwarnings("ignore:Estimator GradientBoostingClassifier does not inherit")


with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Estimator GradientBoostingClassifier does not inherit")
    _all_checks = parametrize_with_checks(
        [GradientBoostingClassifier(n_estimators=10, random_state=0)],
        expected_failed_checks=_expected_failed_checks,
    )


@_all_checks
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_clone_pipeline_and_grid_search():
    import numpy as np
    from sklearn.base import clone, is_classifier
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    est = GradientBoostingClassifier(n_estimators=7, max_depth=2, learning_rate=0.3)
    assert is_classifier(est)
    copy = clone(est)
    assert copy.get_params() == est.get_params() and copy is not est
    pipe = make_pipeline(StandardScaler(), GradientBoostingClassifier(n_estimators=5)).fit(X, y)
    assert pipe.score(X, y) > 0.9
    grid = GridSearchCV(est, {"max_depth": [1, 2], "n_estimators": [3, 6]}, cv=3).fit(X, y)
    assert grid.best_params_["max_depth"] in (1, 2)
    assert len(grid.cv_results_["params"]) == 4
