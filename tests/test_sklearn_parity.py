"""gbc-core's classifier where scikit-learn's machinery uses it, against scikit-learn.

Two kinds of tests: the incompatibilities that running scikit-learn's own
GradientBoostingClassifier tests found (``benchmarks/sklearn_gbc_suite.py``), each
checked against what scikit-learn itself does; and the scikit-learn features a user
relies on (metadata routing, the HTML repr, the feature-name warnings, ``clone``,
``get_params``/``set_params``, ``is_classifier``, scorers in ``cross_val_score``,
``CalibratedClassifierCV``, ``Pipeline``), compared with scikit-learn's own
``GradientBoostingClassifier(init="zero")``, the same model, where they give numbers.
The data are continuous (no exactly equal split gains, where scikit-learn breaks ties
at random), so both libraries grow the same trees.
"""

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_classification
from sklearn.ensemble import GradientBoostingClassifier as SklearnGBC
from sklearn.exceptions import DataConversionWarning, NotFittedError
from sklearn.metrics import get_scorer
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from gbc_core import GradientBoostingClassifier

from conftest import make_continuous, require

# The toy data of scikit-learn's test_gradient_boosting.py.
TOY_X = [[-2, -1], [-1, -1], [-1, -2], [1, 1], [1, 2], [2, 1]]
TOY_Y = [-1, -1, -1, 1, 1, 1]

#: Every parameter gbc-core offers.
PARAMETERS = {
    "n_estimators", "learning_rate", "max_depth", "max_leaf_nodes", "min_samples_split",
    "min_samples_leaf", "min_weight_fraction_leaf", "subsample", "max_features", "init",
    "random_state", "n_jobs", "verbose", "validation_fraction", "n_iter_no_change", "tol",
    "warm_start", "class_weight", "loss", "split_method", "max_bins",
    "leaf_solver", "criterion", "min_impurity_decrease", "ccp_alpha", "scoring",
    "eval_metric", "monotonic_cst", "interaction_cst", "categorical_features",
    "min_samples_category",
}


def _binary(n_samples=300):
    return make_continuous(n_samples=n_samples, n_features=5, seed=3)


def _multiclass(n_samples=300):
    X, y = make_classification(n_samples=n_samples, n_features=6, n_informative=4,
                               n_redundant=0, n_classes=3, random_state=0)
    return X.astype(np.float32).astype(np.float64), y


def _sklearn_model(**params):
    return SklearnGBC(init="zero", random_state=0, **params)


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
    # scikit-learn's estimator stratifies on its internal class codes (floats): its
    # message names them; ours goes on with the labels.
    X = [[1, 2], [2, 3], [3, 4], [4, 5]]
    y = ["a", "a", "a", "b"]
    with pytest.raises(ValueError) as theirs:
        SklearnGBC(n_iter_no_change=5).fit(X, y)
    with pytest.raises(ValueError) as ours:
        GradientBoostingClassifier(n_iter_no_change=5).fit(X, y)
    assert str(theirs.value).endswith("are: [1.0]")
    assert str(ours.value).startswith(str(theirs.value) + " (")
    assert "['b']" in str(ours.value)


def test_init_without_predict_proba_error_is_sklearns():
    # scikit-learn's sentence, with the choice it lacks ("prior") after its own.
    from sklearn.ensemble import GradientBoostingRegressor

    for bad in [GradientBoostingRegressor, "ones"]:
        with pytest.raises(ValueError) as theirs:
            SklearnGBC(init=bad).fit(TOY_X, TOY_Y)
        with pytest.raises(ValueError) as ours:
            GradientBoostingClassifier(init=bad).fit(TOY_X, TOY_Y)
        allowed, got = str(theirs.value).split(". Got ")
        assert str(ours.value) == f"{allowed}, or 'prior' (the same as None). Got {got}"


def _leaf_mean_values(tree_):
    """Naive twin of an inner node's value in gbc-core's ``tree_``: the mean of the
    values of the leaves under it, weighted by their weighted_n_node_samples."""
    def leaves(j):
        if tree_.children_left[j] == -1:
            return [j]
        return leaves(tree_.children_left[j]) + leaves(tree_.children_right[j])

    out = np.empty(tree_.node_count)
    for j in range(tree_.node_count):
        under = leaves(j)
        w = tree_.weighted_n_node_samples[under]
        out[j] = np.sum(w * tree_.value[under, 0, 0]) / np.sum(w)
    return out


def _weighted_decreases(tree_):
    """Each node's weighted impurity less its children's (0 at a leaf)."""
    inner = np.flatnonzero(tree_.children_left != -1)
    wi = tree_.weighted_n_node_samples * tree_.impurity
    out = np.zeros(tree_.node_count)
    out[inner] = wi[inner] - wi[tree_.children_left[inner]] - wi[tree_.children_right[inner]]
    return out


def _same_nodes(tree_, reference):
    """Pairs (node of ``tree_``, node of ``reference``) of two trees of the same
    shape, walking both from the root (scikit-learn numbers a level-by-level tree
    depth first, gbc-core level by level)."""
    pairs = [(0, 0)]
    for i, j in pairs:
        assert (tree_.children_left[i] == -1) == (reference.children_left[j] == -1)
        if reference.children_left[j] != -1:
            pairs += [(tree_.children_left[i], reference.children_left[j]),
                      (tree_.children_right[i], reference.children_right[j])]
    assert len(pairs) == tree_.node_count == reference.node_count
    ours, theirs = np.array(pairs).T
    # Children after their parent in both (what scikit-learn's code relies on).
    inner = np.flatnonzero(tree_.children_left != -1)
    assert (tree_.children_left[inner] > inner).all()
    assert (tree_.children_right[inner] > inner).all()
    return ours, theirs


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("shape", [dict(max_depth=4), dict(max_depth=None, max_leaf_nodes=7),
                                   dict(max_depth=None, max_leaf_nodes=9, ccp_alpha=2e-3)])
def test_estimators_tree_is_sklearns(n_classes, shape):
    # scikit-learn's tests read estimators_[i, k].tree_ and the trees' parameters.
    X, y = _binary(400) if n_classes == 2 else _multiclass(400)
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=y.shape[0])
    params = dict(n_estimators=4, min_samples_leaf=8, min_impurity_decrease=1e-4, **shape)
    ours = GradientBoostingClassifier(**params).fit(X, y, sample_weight=w)
    theirs = _sklearn_model(**params).fit(X, y, sample_weight=w)
    assert ours.estimators_.shape == theirs.estimators_.shape
    our_leaves, their_leaves = ours.apply(X), theirs.apply(X).astype(np.intp)
    for (m, k), tree in np.ndenumerate(ours.estimators_):
        reference = theirs.estimators_[m, k]
        for name in ["min_samples_split", "min_samples_leaf", "min_weight_fraction_leaf",
                     "min_impurity_decrease", "max_features", "max_leaf_nodes", "ccp_alpha"]:
            assert getattr(tree, name) == getattr(reference, name), name
        assert tree.max_depth == reference.tree_.max_depth  # (the tree's depth)
        t, r = tree.tree_, reference.tree_
        for name in ["node_count", "capacity", "max_depth", "n_leaves", "n_features",
                     "n_outputs", "max_n_classes"]:
            assert getattr(t, name) == getattr(r, name), name
        assert_array_equal(t.n_classes, r.n_classes)
        i, j = _same_nodes(t, r)
        for name in ["children_left", "children_right", "feature", "threshold",
                     "n_node_samples", "weighted_n_node_samples", "value", "impurity",
                     "missing_go_to_left"]:
            assert getattr(t, name).dtype == getattr(r, name).dtype, name
            assert getattr(t, name).shape == getattr(r, name).shape, name
            assert not getattr(t, name).flags.writeable, name
        for name in ["feature", "threshold", "n_node_samples"]:
            assert_array_equal(getattr(t, name)[i], getattr(r, name)[j], err_msg=name)
        assert_allclose(t.weighted_n_node_samples[i], r.weighted_n_node_samples[j],
                        rtol=1e-12)
        # A leaf's value is its gamma, as scikit-learn's, and apply's leaf numbers
        # index tree_; an inner node's value is the mean of its leaves'; the weighted
        # impurity decreases are scikit-learn's.
        assert_allclose(t.value[our_leaves[:, m, k]], r.value[their_leaves[:, m, k]],
                        rtol=1e-12, atol=1e-14)
        assert_allclose(t.value[i, 0, 0], _leaf_mean_values(r)[j], rtol=1e-12, atol=1e-14)
        inner = t.children_left[i] != -1
        assert_allclose(_weighted_decreases(t)[i], _weighted_decreases(r)[j], rtol=1e-9,
                        atol=1e-12 * r.weighted_n_node_samples[0])
        assert (t.impurity[i[~inner]] == 0).all()
        # Where a missing value goes: gbc-core's direction (the data have none, and
        # each library has its own rule then).
        assert_array_equal(t.missing_go_to_left[i[inner]], tree.missing_go_to_left[i[inner]])
        assert (t.missing_go_to_left[i[~inner]] == 0).all()


def test_tree_without_the_fits_parameters_says_so():
    X, y = _binary(100)
    tree = GradientBoostingClassifier(n_estimators=2).fit(X, y).booster_.ensemble.tree(0)
    assert tree.tree_.node_count == tree.node_count
    with pytest.raises(AttributeError, match="min_impurity_decrease: this Tree was made "
                                             "without the parameters of its fit"):
        tree.min_impurity_decrease


# ----------------------------------- what scikit-learn's tests check, made exact
@pytest.mark.parametrize("n_classes", [2, 4])
def test_init_prior_is_sklearns_default_model(n_classes):
    # scikit-learn's test_{binomial,multinomial}_error_exact_backward_compat data: its
    # default (init = the prior) is gbc-core's init="prior"; its binary train_score_
    # is the deviance, twice gbc-core's log-loss.
    y = np.arange(10) % n_classes
    X = np.c_[np.minimum(y, 5), np.minimum(-y, -5)]
    theirs = SklearnGBC(n_estimators=100).fit(X, y)
    ours = GradientBoostingClassifier(n_estimators=100, init="prior").fit(X, y)
    assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=1e-8)
    # train_score_ in scikit-learn's units (for two classes, its binomial deviance).
    assert_allclose(ours.train_score_, theirs.train_score_, rtol=1e-8)


@pytest.mark.parametrize("name", ["oob_improvement_", "oob_scores_", "oob_score_"])
def test_oob_attributes_only_with_subsample(name):
    X, y = _binary(100)
    for subsample, present in [(1.0, False), (0.5, True)]:
        ours = GradientBoostingClassifier(n_estimators=5, subsample=subsample,
                                          random_state=1).fit(X, y)
        theirs = _sklearn_model(n_estimators=5, subsample=subsample).fit(X, y)
        assert hasattr(ours, name) is hasattr(theirs, name) is present


def test_zero_sample_weights_ignore_rows():
    # The log_loss half of scikit-learn's test_non_uniform_weights_toy_edge_case_clf.
    X = [[1, 0], [1, 0], [1, 0], [0, 1]]
    y = [0, 0, 1, 0]
    model = GradientBoostingClassifier(n_estimators=5).fit(X, y, sample_weight=[0, 0, 1, 1])
    assert_array_equal(model.predict([[1, 0]]), [1])


# ------------------------------------------------------ scikit-learn's machinery
@pytest.fixture
def metadata_routing():
    before = sklearn.get_config()["enable_metadata_routing"]
    sklearn.set_config(enable_metadata_routing=True)
    yield
    sklearn.set_config(enable_metadata_routing=before)


def test_metadata_routing_sends_sample_weight_to_fit(metadata_routing):
    X, y = _binary()
    w = np.random.default_rng(4).uniform(0.1, 5.0, size=y.shape[0])
    grid = {"max_depth": [1, 3], "learning_rate": [0.1, 0.5]}

    def search(request):
        model = GradientBoostingClassifier(n_estimators=10).set_fit_request(
            sample_weight=request)
        scorer = get_scorer("neg_log_loss").set_score_request(sample_weight=True)
        return GridSearchCV(model, grid, cv=3, scoring=scorer).fit(X, y, sample_weight=w)

    weighted = search(True)
    best = weighted.best_params_
    manual = GradientBoostingClassifier(n_estimators=10, **best).fit(X, y, sample_weight=w)
    unweighted = GradientBoostingClassifier(n_estimators=10, **best).fit(X, y)
    assert_array_equal(weighted.best_estimator_.predict_proba(X), manual.predict_proba(X))
    assert not np.allclose(manual.predict_proba(X), unweighted.predict_proba(X))
    # Requested not to take them, the estimator is fitted without the weights.
    ignored = search(False)
    refit = GradientBoostingClassifier(n_estimators=10, **ignored.best_params_).fit(X, y)
    assert_array_equal(ignored.best_estimator_.predict_proba(X), refit.predict_proba(X))


def test_html_repr_names_the_class_and_changed_parameters():
    default = GradientBoostingClassifier()._repr_html_()
    changed = GradientBoostingClassifier(max_depth=5, init="prior")._repr_html_()
    assert "<pre>GradientBoostingClassifier()</pre>" in default
    assert "<pre>GradientBoostingClassifier(init=&#x27;prior&#x27;, max_depth=5)</pre>" in changed


def test_feature_name_warnings_are_sklearns():
    X, y = _binary(100)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])

    def warning_messages(model, fit_X, predict_X):
        model.fit(fit_X, y)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.predict(predict_X)
        return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]

    for fit_X, predict_X, expected in [
        (frame, X, "X does not have valid feature names, but GradientBoostingClassifier "
                   "was fitted with feature names"),
        (X, frame, "X has feature names, but GradientBoostingClassifier was fitted "
                   "without feature names"),
    ]:
        ours = warning_messages(GradientBoostingClassifier(n_estimators=3), fit_X, predict_X)
        theirs = warning_messages(SklearnGBC(n_estimators=3), fit_X, predict_X)
        assert ours == theirs == [expected]


def test_clone_copies_parameters_not_the_fit():
    X, y = _binary(100)
    model = GradientBoostingClassifier(n_estimators=7, max_depth=2, subsample=0.8,
                                       class_weight={0: 2.0}, random_state=3).fit(X, y)
    copy = clone(model)
    assert copy is not model
    assert copy.get_params() == model.get_params()
    assert copy.class_weight is not model.class_weight
    with pytest.raises(NotFittedError):
        copy.predict(X)
    assert_array_equal(copy.fit(X, y).predict_proba(X), model.predict_proba(X))


def test_get_params_set_params_round_trip():
    params = dict(n_estimators=17, learning_rate=0.3, max_depth=None, max_leaf_nodes=9,
                  min_samples_split=0.1,
                  min_samples_leaf=3, min_weight_fraction_leaf=0.01, subsample=0.7,
                  max_features="sqrt", init="prior", random_state=5, n_jobs=1, verbose=0,
                  validation_fraction=0.2, n_iter_no_change=4, tol=1e-3, warm_start=True,
                  class_weight="balanced", loss="log_loss", split_method="hist",
                  max_bins=31, leaf_solver="exact", criterion="squared_error",
                  min_impurity_decrease=0.01, ccp_alpha=0.001, scoring="roc_auc",
                  eval_metric=["roc_auc", "log_loss"],
                  monotonic_cst=[1, 0, -1, 0, 0], interaction_cst=[[0, 1], [2, 3]],
                  categorical_features=[3, 4], min_samples_category=4)
    assert set(params) == PARAMETERS
    assert set(GradientBoostingClassifier().get_params()) == PARAMETERS
    assert GradientBoostingClassifier(**params).get_params() == params
    model = GradientBoostingClassifier()
    assert model.set_params(**params) is model
    assert model.get_params() == params
    assert GradientBoostingClassifier(**model.get_params()).get_params() == params
    with pytest.raises(ValueError, match="Invalid parameter 'alpha'"):
        model.set_params(alpha=0.9)  # the regressor's quantile, not a classifier's


def test_is_classifier():
    assert is_classifier(GradientBoostingClassifier())
    assert not is_regressor(GradientBoostingClassifier())


@pytest.mark.parametrize("data, scoring", [
    (_binary, "roc_auc"), (_binary, "neg_log_loss"),
    # scikit-learn's "roc_auc" is binary only: one-vs-rest for 3 classes.
    (_multiclass, "roc_auc_ovr"), (_multiclass, "neg_log_loss"),
])
def test_cross_val_score_equals_sklearns(data, scoring):
    X, y = data()
    cv = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)
    # Two leaves of one row: the commonest exact tie (a row at the end of several
    # features isolates the same way on each), which gbc-core gives to the lowest
    # feature and scikit-learn to the first of its random feature order.
    params = dict(n_estimators=15, max_depth=2, min_samples_leaf=2)
    ours = cross_val_score(GradientBoostingClassifier(**params), X, y, cv=cv, scoring=scoring)
    theirs = cross_val_score(_sklearn_model(**params), X, y, cv=cv, scoring=scoring)
    assert np.isfinite(ours).all()
    assert_allclose(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize("data", [_binary, _multiclass])
def test_calibrated_classifier_equals_sklearns(data):
    X, y = data()
    params = dict(n_estimators=10, max_depth=2)
    ours = CalibratedClassifierCV(GradientBoostingClassifier(**params), cv=3).fit(X, y)
    theirs = CalibratedClassifierCV(_sklearn_model(**params), cv=3).fit(X, y)
    assert_array_equal(ours.classes_, theirs.classes_)
    assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=1e-5, atol=1e-7)


def test_pipeline_passes_data_and_sample_weight():
    X, y = _binary()
    w = np.random.default_rng(5).uniform(0.1, 5.0, size=y.shape[0])
    params = dict(n_estimators=10, max_depth=2)
    ours = make_pipeline(StandardScaler(), GradientBoostingClassifier(**params))
    ours.fit(X, y, gradientboostingclassifier__sample_weight=w)
    theirs = make_pipeline(StandardScaler(), _sklearn_model(**params))
    theirs.fit(X, y, gradientboostingclassifier__sample_weight=w)
    assert is_classifier(ours)
    assert_array_equal(ours.classes_, [0, 1])
    assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=1e-6)
    assert ours.score(X, y) == theirs.score(X, y)


# ------------------------------------------------- scoring without scikit-learn
def test_scoring_paths_do_not_import_sklearn(tmp_path):
    """``import gbc_core``, ``gbc_core.load`` and a Booster's predictions, and the
    command line's ``predict`` and ``inspect`` never import scikit-learn (seconds at
    the start of a batch job); only the estimator does. Nor do they import the
    training code: the model knows nothing of the fit (docs/architecture.md)."""
    require("pyarrow")
    X, y = make_continuous(n_samples=300, n_features=4, seed=2)
    GradientBoostingClassifier(n_estimators=5).fit(X, y).save(tmp_path / "m.gbc")
    np.savetxt(tmp_path / "data.csv", X, delimiter=",", header="f0,f1,f2,f3", comments="")
    code = (
        "import sys, numpy as np, gbc_core\n"
        "booster = gbc_core.load('m.gbc')\n"
        "booster.predict_proba(np.zeros((3, 4))); booster.predict(np.zeros((3, 4)))\n"
        "booster.predict_contributions(np.zeros((3, 4)))\n"
        "from gbc_core.cli import main\n"
        "assert main(['predict', 'm.gbc', 'data.csv', '-o', 'out.csv', '--label']) == 0\n"
        "assert main(['predict', 'm.gbc', 'data.csv', '-o', 'c.csv', '--contributions']) == 0\n"
        "assert main(['inspect', 'm.gbc']) == 0\n"
        "training = ('_boosting', '_grower', '_exact_splitter', '_histogram_splitter',\n"
        "            '_binning', '_sorting', '_distributed')\n"
        "print(sorted(m for m in training if 'gbc_core.' + m in sys.modules) or 'none')\n"
        "print('sklearn' in sys.modules)\n"
        "gbc_core.GradientBoostingClassifier\n"
        "print('sklearn' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, check=True)
    assert out.stdout.split()[-3:] == ["none", "False", "True"]
