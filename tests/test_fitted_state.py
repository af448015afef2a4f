"""What a fitted model predicts is decided by its fitted state alone.

Parameters set after ``fit`` (``set_params``) are the parameters of the next fit:
they change neither the predictions in memory nor those of the model after
``save``/``load``, ``to_bytes``/``from_bytes``, pickling, a deep copy or the
conversion to the scikit-learn-free :class:`gbc_core.Booster` the command line and
Dask workers use. Checked for every hyper-parameter of ``_params.PARAMS``.
"""

import copy
import pickle

import pytest

import gbc_core
from gbc_core import GradientBoostingClassifier as GBC
from gbc_core._params import DEFAULTS, PARAMS

from conftest import assert_arrays_equal, make_continuous

#: A valid value other than the fitted one, for every parameter.
OTHER_VALUES = {
    "loss": "log_loss",  # the only value
    "learning_rate": 0.9,
    "n_estimators": 3,
    "subsample": 0.5,
    "min_samples_split": 9,
    "min_samples_leaf": 4,
    "min_weight_fraction_leaf": 0.2,
    "max_depth": 1,
    "max_leaf_nodes": 3,
    "init": "prior",
    "random_state": 123,
    "max_features": 1,
    "verbose": 1,
    "warm_start": True,
    "validation_fraction": 0.3,
    "n_iter_no_change": 2,
    "tol": 0.5,
    "n_jobs": 1,
    "class_weight": "balanced",
    "split_method": "hist",
    "max_bins": 7,
    "leaf_solver": "exact",
    "criterion": "squared_error",
    "min_impurity_decrease": 0.05,
    "ccp_alpha": 0.01,
    "scoring": "roc_auc",
    "eval_metric": ["roc_auc", "error"],
    "monotonic_cst": [1, 0, 0, 0, -1],
    "interaction_cst": [[0, 1], [2, 3, 4]],
    "categorical_features": [0, 2],
    "min_samples_category": 5,
}


def test_every_parameter_has_another_value():
    assert set(OTHER_VALUES) == set(DEFAULTS)
    for param in PARAMS:
        assert param.accepts(OTHER_VALUES[param.name]), param.name


def _data(n_classes):
    X, y = make_continuous(n_samples=400, n_features=5, seed=11)
    if n_classes > 2:
        y = y + (X[:, 1] > 0.5)
    return X, y


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", sorted(OTHER_VALUES))
def test_parameters_set_after_fit_change_no_prediction(tmp_path, n_classes, name):
    X, y = _data(n_classes)
    model = GBC(n_estimators=6, max_depth=3, learning_rate=0.2, random_state=0).fit(X, y)
    expected = model.predict_proba(X)
    raw = model.decision_function(X)
    model.set_params(**{name: OTHER_VALUES[name]})

    def same(other, what):
        assert_arrays_equal(other.predict_proba(X), expected, f"{what}: predict_proba")
        assert_arrays_equal(other.decision_function(X), raw, f"{what}: decision_function")

    same(model, "in memory")
    path = tmp_path / "m.gbc"
    model.save(path)
    same(gbc_core.load(path), "a Booster loaded from the file")
    loaded = GBC.load(path)
    same(loaded, "an estimator loaded from the file")
    assert loaded.get_params() == model.get_params()  # the parameters as set
    same(gbc_core.from_bytes(model.to_bytes()), "from_bytes")
    same(pickle.loads(pickle.dumps(model)), "pickle")
    same(copy.deepcopy(model), "deepcopy")
    same(model.booster_, "the Booster of the Dask workers and the command line")
    assert model.booster_.learning_rate == 0.2 and model.n_estimators_ == 6
