"""gbc_core.plotting: figures rendered with the Agg backend, their content checked
against the model (naive NumPy twins of the importances, the tree's nodes, the
losses recomputed from the probabilities)."""

import numpy as np
import pytest

from conftest import require

matplotlib = require("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import gbc_core  # noqa: E402
from gbc_core import GradientBoostingClassifier  # noqa: E402
from gbc_core.plotting import (  # noqa: E402
    importances,
    plot_contributions,
    plot_importance,
    plot_metric,
    plot_tree,
    staged_loss,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _data(n=600, seed=0, n_classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[rng.uniform(size=n) < 0.1, 1] = np.nan
    logit = 2 * X[:, 0] - np.nan_to_num(X[:, 1]) + 0.5 * X[:, 2]
    if n_classes == 2:
        y = (logit + rng.logistic(size=n) > 0).astype(int)
    else:
        y = np.digitize(logit + rng.logistic(size=n), [-1.0, 1.0])
    return X, y


@pytest.fixture(scope="module")
def model():
    X, y = _data()
    return GradientBoostingClassifier(n_estimators=25, max_depth=3, random_state=0,
                                      subsample=0.8).fit(X, y), X, y


def _render(ax):
    """Draw the figure (Agg) and give back the axes: layout errors surface here."""
    ax.figure.canvas.draw()
    return ax


def test_split_counts_and_shap_importance_match_naive_twins(model):
    est, X, _ = model
    counts = np.zeros(X.shape[1])
    for m in range(est.n_estimators_):
        for node in est.booster_.ensemble.tree_nodes(m):
            if node["feature"] >= 0:
                counts[node["feature"]] += 1
    np.testing.assert_array_equal(importances(est, "split"), counts)
    phi = est.predict_contributions(X)
    np.testing.assert_allclose(importances(est, "shap", X),
                               [np.mean(np.abs(phi[:, j])) for j in range(X.shape[1])])
    np.testing.assert_array_equal(importances(est, "gain"), est.feature_importances_)


@pytest.mark.parametrize("kind", ["gain", "split", "shap"])
def test_plot_importance_bars_in_order(model, kind):
    est, X, _ = model
    values = importances(est, kind, X)
    ax = _render(plot_importance(est, importance_type=kind, X=X))
    used = np.flatnonzero(values > 0)
    assert len(ax.patches) == used.size  # zero-importance features left out
    # Bars from the top (largest y) down, in decreasing importance, labelled by name.
    bars = sorted(ax.patches, key=lambda b: -b.get_y())
    widths = [b.get_width() for b in bars]
    assert widths == sorted(widths, reverse=True)
    np.testing.assert_allclose(widths, np.sort(values[used])[::-1])
    labels = {round(t, 6): lab.get_text() for t, lab in zip(ax.get_yticks(),
                                                             ax.get_yticklabels())}
    names = [labels[round(b.get_y() + b.get_height() / 2, 6)] for b in bars]
    assert names == [f"f{j}" for j in used[np.argsort(-values[used], kind="stable")]]
    assert ax.get_ylabel() == "feature" and ax.get_xlabel()
    assert kind in ax.get_title()


def test_plot_importance_names_and_max_features(model):
    est, X, y = model
    import pandas as pd

    df = pd.DataFrame(X, columns=[f"col_{j}" for j in range(X.shape[1])])
    named = GradientBoostingClassifier(n_estimators=10).fit(df, y)
    ax = _render(plot_importance(named, max_num_features=2))
    assert len(ax.patches) == 2
    top = np.argsort(-named.feature_importances_, kind="stable")[:2]
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"col_{j}" for j in top]
    # The same through a loaded Booster (no estimator).
    booster = gbc_core.from_bytes(named.to_bytes())
    ax = _render(plot_importance(booster, max_num_features=2))
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"col_{j}" for j in top]
    with pytest.raises(ValueError, match="needs X"):
        plot_importance(est, importance_type="shap")
    with pytest.raises(ValueError, match="importance_type"):
        plot_importance(est, importance_type="cover")


def test_plot_tree_draws_every_node(model):
    est, _, _ = model
    for m in (0, -1):
        nodes = est.booster_.ensemble.tree_nodes(m)
        ax = _render(plot_tree(est, iteration=m))
        boxes = [t for t in ax.texts if (t.get_gid() or "").startswith("node ")]
        assert len(boxes) == len(nodes)
        for t in boxes:
            node = nodes[int(t.get_gid().split()[1])]
            text = t.get_text()
            assert f"cover {float(node['weighted_n']):,.0f}" in text
            if node["feature"] < 0:
                assert f"leaf {est.learning_rate * node['value']:+.3g}" in text
            else:
                assert f"f{node['feature']} <= {node['threshold']:.3g}" in text
        # One edge label per child: "yes"/"no", the missing side marked.
        edges = [t.get_text() for t in ax.texts if not t.get_gid()]
        splits = nodes[nodes["feature"] >= 0]
        assert len(edges) == 2 * len(splits)
        assert sum("missing" in e for e in edges) == len(splits)
        expected = ["yes + missing" if s["missing_go_left"] else "yes" for s in splits]
        assert [e for e in edges if e.startswith("yes")] == expected


def test_plot_tree_multiclass_needs_a_class():
    X, y = _data(n_classes=3)
    est = GradientBoostingClassifier(n_estimators=3, max_depth=2).fit(X, y)
    ax = _render(plot_tree(est, iteration=1, class_label=2))
    nodes = est.booster_.ensemble.tree_nodes(1, 2)
    assert sum(1 for t in ax.texts if t.get_gid()) == len(nodes)
    assert "class 2" in ax.get_title()
    with pytest.raises(ValueError, match="class_label"):
        plot_tree(est)
    with pytest.raises(ValueError, match="not a class"):
        plot_tree(est, class_label=7)
    # Labels of an object array (a pandas column of strings) are Python values.
    pd = require("pandas")
    names = pd.Series(np.array(["ant", "bee", "cat"])[y], dtype=object)
    est = GradientBoostingClassifier(n_estimators=2, max_depth=2).fit(X, names)
    assert est.classes_.dtype == object
    assert _render(plot_tree(est, class_label="bee")).get_title().endswith("class 'bee'")


def test_staged_loss_is_the_log_loss_of_the_staged_probabilities(model):
    est, X, y = model
    losses = staged_loss(est, X, y)
    assert losses.shape == (est.n_estimators_,)
    for m, proba in enumerate(est.staged_predict_proba(X)):
        p = np.clip(proba[np.arange(len(y)), y], 1e-300, 1)
        assert losses[m] == pytest.approx(-np.mean(np.log(p)), rel=1e-9)


def test_plot_metric_curves(model):
    est, X, y = model
    X_test, y_test = _data(seed=1)
    ax = _render(plot_metric(est, eval_set={"test": (X_test, y_test)}))
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines) == ["train", "out-of-bag", "test"]
    np.testing.assert_allclose(lines["train"].get_ydata(), est.train_score_ / 2)
    np.testing.assert_array_equal(lines["train"].get_xdata(),
                                  np.arange(1, est.n_estimators_ + 1))
    np.testing.assert_allclose(lines["test"].get_ydata(), staged_loss(est, X_test, y_test))
    assert ax.get_xlabel() == "iteration" and ax.get_ylabel() == "mean log-loss"

    # Early stopping: the validation curve and a line at the best iteration.
    stopped = GradientBoostingClassifier(n_estimators=300, n_iter_no_change=5,
                                         learning_rate=0.5, random_state=0).fit(X, y)
    ax = _render(plot_metric(stopped))
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert "validation" in lines
    np.testing.assert_allclose(lines["validation"].get_ydata(),
                               stopped.validation_score_ / 2)
    assert list(lines["_best iteration"].get_xdata()) == [stopped.best_iteration_] * 2


def test_plot_contributions_of_a_sparse_row(model):
    """A scipy.sparse X: the row's contributions, as predict_contributions gives them
    for sparse input (before: an IndexError from np.asarray of the matrix)."""
    sp = require("scipy.sparse")
    est, X, _ = model
    dense = _render(plot_contributions(est, X, row=3))
    sparse = _render(plot_contributions(est, sp.csr_matrix(X), row=3))
    assert [p.get_width() for p in sparse.patches] == [p.get_width() for p in dense.patches]


def test_staged_loss_and_plot_metric_refuse_what_they_cannot_draw(model):
    """Labels of another length than X's rows are an error (before: the scores were
    reshaped to the labels' count and scored against them); a model without the
    record of its fit draws the eval_set curves only, and with nothing to draw says
    why."""
    from gbc_core import Booster

    est, X, y = model
    with pytest.raises(ValueError, match=f"y has 10 labels for {X.shape[0]} rows of X"):
        staged_loss(est, X, y[:10])
    bare = Booster(est.booster_.ensemble, est.classes_)
    assert bare.train_score_ is None
    with pytest.raises(ValueError, match="no record of its fit .*eval_set"):
        plot_metric(bare)
    ax = _render(plot_metric(bare, eval_set={"test": (X, y)}))
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines) == ["test"]
    np.testing.assert_array_equal(lines["test"].get_ydata(), staged_loss(est, X, y))


def test_plot_contributions_waterfall_sums_to_the_raw_score(model):
    est, X, _ = model
    ax = _render(plot_contributions(est, X, row=4, max_num_features=3))
    phi = est.predict_contributions(X[4:5])[0]
    bars = sorted(ax.patches, key=lambda b: -b.get_y())
    assert len(bars) == 4  # 3 features and the rest
    widths = [b.get_width() for b in bars]
    order = np.argsort(-np.abs(phi[:-1]), kind="stable")
    np.testing.assert_allclose(widths[:3], phi[order[:3]])
    np.testing.assert_allclose(widths[3], phi[order[3:]].sum())
    # Each bar starts where the previous one ended; the last ends at F(x).
    assert bars[0].get_x() == pytest.approx(phi[-1])
    end = bars[-1].get_x() + bars[-1].get_width()
    assert end == pytest.approx(est.decision_function(X[4:5])[0], abs=1e-9)
    assert [t.get_text() for t in ax.get_yticklabels()][-1] == "3 other features"


def test_not_a_model_is_refused():
    with pytest.raises(TypeError, match="gbc-core model"):
        plot_importance(object())
    with pytest.raises(gbc_core.NotFittedError):
        plot_importance(GradientBoostingClassifier())


@pytest.mark.parametrize("n_classes", [2, 3])
def test_plot_metric_draws_evals_result(n_classes):
    """plot_metric(metric=...) draws evals_result_'s values for that metric, one curve
    per set, and an eval_set's metric computed from the staged scores equals what the
    fit recorded for the same rows."""
    from sklearn.datasets import make_classification
    from sklearn.metrics import roc_auc_score

    X, y = make_classification(n_samples=400, n_features=6, n_informative=4,
                               n_classes=n_classes, random_state=0)
    X_train, y_train, X_test, y_test = X[:300], y[:300], X[300:], y[300:]
    est = GradientBoostingClassifier(n_estimators=15, eval_metric=["roc_auc", "error"],
                                     random_state=0)
    est.fit(X_train, y_train, eval_set=[(X_train, y_train), (X_test, y_test)],
            eval_names=["training", "test"])
    ax = _render(plot_metric(est, metric="roc_auc", eval_set={"again": (X_test, y_test)}))
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines) == ["training", "test", "again"]
    assert lines["test"].get_ydata().tolist() == est.evals_result_["test"]["roc_auc"]
    np.testing.assert_allclose(lines["again"].get_ydata(), est.evals_result_["test"]["roc_auc"],
                               rtol=1e-12)
    last = est.predict_proba(X_test)
    want = roc_auc_score(y_test, last[:, 1] if n_classes == 2 else last, multi_class="ovr")
    assert lines["test"].get_ydata()[-1] == pytest.approx(want, rel=1e-9)
    assert ax.get_ylabel() == "roc_auc"
    error = _render(plot_metric(est, metric="error"))
    assert error.get_lines()[1].get_ydata()[-1] == pytest.approx(
        np.mean(est.predict(X_test) != y_test))
    with pytest.raises(ValueError, match="metric must be one of"):
        plot_metric(est, metric="auc")
    with pytest.raises(ValueError, match="recorded no 'log_loss'"):
        plot_metric(est, metric="log_loss")


def _naive_left(booster, node):
    """The categories a categorical node sends left: its set's bits read one by one."""
    row = booster.ensemble.category_sets[int(node["threshold"])]
    values = booster.categories_[int(node["feature"])]
    return [values[c] for c in range(len(values)) if (int(row[c // 32]) >> (c % 32)) & 1]


def test_plot_tree_categorical_split_lists_its_categories():
    pd = require("pandas")
    rng = np.random.default_rng(3)
    n = 1500
    letters = np.array([f"k{i:02d}" for i in range(20)], dtype=object)
    a = rng.integers(0, 20, n)
    x = rng.normal(size=n)
    effect = rng.normal(size=20) * 2
    y = (effect[a] + x + rng.normal(size=n) > 0).astype(int)
    X = pd.DataFrame({"letter": pd.Categorical(letters[a]), "x": x})
    X.loc[::11, "letter"] = np.nan
    est = GradientBoostingClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X, y)
    booster = est.booster_
    seen = 0
    for m in range(3):
        nodes = booster.ensemble.tree_nodes(m)
        ax = _render(plot_tree(est, iteration=m))
        boxes = {int(t.get_gid().split()[1]): t.get_text() for t in ax.texts
                 if (t.get_gid() or "").startswith("node ")}
        for i, node in enumerate(nodes):
            if node["feature"] != 0:
                if node["feature"] == 1:
                    assert f"x <= {node['threshold']:.3g}" in boxes[i]
                continue
            seen += 1
            left = _naive_left(booster, node)
            shown = left[:8] + ([f"... and {len(left) - 8} more"] if len(left) > 8 else [])
            assert boxes[i].startswith("letter in {" + ", ".join(shown) + "}\n"), boxes[i]
        edges = [t.get_text() for t in ax.texts if not t.get_gid()]
        splits = nodes[nodes["feature"] >= 0]
        assert [e for e in edges if e.startswith("yes")] == [
            "yes + missing" if s["missing_go_left"] else "yes" for s in splits]
    assert seen >= 3
