"""The split-method registry (``_split_methods``): the one place that knows a split
method by its name, and what a registered method is enough for."""

import re
from pathlib import Path

import numpy as np
import pytest

import gbc_core
from gbc_core import GradientBoostingClassifier
from gbc_core import _split_methods
from gbc_core._params import BY_NAME, check_params

SRC = Path(gbc_core.__file__).parent


def _data(n=400, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + rng.logistic(size=n) > 0).astype(int) + (X[:, 1] > 1)
    return X, y


@pytest.fixture
def registered():
    """Register methods for one test; the registry is as it was afterwards."""
    before = dict(_split_methods.METHODS)
    yield _split_methods.register
    _split_methods.METHODS.clear()
    _split_methods.METHODS.update(before)


def test_no_module_but_the_registry_tests_split_method_or_a_finder_type():
    """Neither the value of ``split_method`` nor a finder's class decides anything
    outside ``_split_methods.py``: a new finder needs no edit there."""
    value_test = re.compile(r"""(\bsplit_method|\[["']split_method["']\]"""
                            r"""|get\(["']split_method["'][^)]*\))\s*(==|!=|in\b|not in\b)""")
    finder_type = re.compile(r"isinstance\([^)]*(SplitFinder|Splitter)")
    finder_class = re.compile(r"\b(ExactSplitFinder|HistogramSplitFinder)\b")
    found = []
    for path in sorted(SRC.glob("*.py")):
        if path.name == "_split_methods.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if value_test.search(code) or finder_type.search(code):
                found.append(f"{path.name}:{number}: {line.strip()}")
            # The distributed fit builds its own histogram finder on bins merged over
            # the processes (the transport's business, not a choice of method).
            if finder_class.search(code) and path.name != "_distributed.py":
                found.append(f"{path.name}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_names_help_and_errors_come_from_the_registry():
    assert list(_split_methods.METHODS) == ["exact", "hist"]
    param = BY_NAME["split_method"]
    assert param.help == ("split search: 'exact' (every distinct value, the paper's) or "
                          "'hist' (the edges of at most max_bins bins per feature, "
                          "computed once per fit)")
    for bad in ["histogram", None, 1]:
        with pytest.raises(ValueError, match=re.escape(
                f"split_method must be 'exact' or 'hist', got {bad!r}")):
            check_params({"split_method": bad})
    with pytest.raises(ValueError, match="split_method='exact' is not supported by the "
                                         "distributed fit: .*split_method='hist' only"):
        _split_methods.check_distributed("exact")
    _split_methods.check_distributed("hist")


def test_a_registered_method_trains_and_is_checked_by_name(registered):
    """One ``register`` call makes a method: the parameter accepts it and names it in
    its error, the fit lays X out, builds and routes by its entry. A copy of "hist"
    that grows no trees side by side and that the distributed fit does not train
    fits the model of "hist" (dense, sparse, subsample, weights), bit for bit."""
    hist = _split_methods.METHODS["hist"]
    built = []

    def build(X, params):
        built.append(X.shape)
        return hist.make_finder(X, params)

    registered(_split_methods.SplitMethod(
        "toy", "the bins of 'hist', one tree at a time", build, partitions_on_bins=True,
        sparse_input=True, distributed=False, side_by_side=False))
    with pytest.raises(ValueError, match="'exact' or 'hist' or 'toy', got 'other'"):
        check_params({"split_method": "other"})
    with pytest.raises(ValueError, match="split_method='toy' is not supported"):
        _split_methods.check_distributed("toy")
    sp = pytest.importorskip("scipy.sparse")
    X, y = _data()
    w = np.random.default_rng(1).random(X.shape[0])
    w[:20] = 0
    for XX, kw in [(X, {}), (sp.csr_matrix(np.nan_to_num(X)), {"subsample": 0.7}),
                   (np.ascontiguousarray(X), {"n_jobs": 2}), (X, {"max_leaf_nodes": 5})]:
        fits = [GradientBoostingClassifier(split_method=m, n_estimators=5, max_bins=31,
                                           random_state=3, **kw).fit(XX, y, sample_weight=w)
                for m in ("hist", "toy")]
        assert (np.concatenate(fits[0].booster_.trees()).tobytes()
                == np.concatenate(fits[1].booster_.trees()).tobytes())
    assert built and all(shape[0] == (w > 0).sum() for shape in built)


def test_a_method_on_raw_values_gets_fortran_x_and_densified_sparse_x(registered):
    """A method that does not partition on bins nor take sparse X is handed dense
    Fortran-order X (the grower reads its raw values), densified from sparse X."""
    exact = _split_methods.METHODS["exact"]
    seen = []

    def build(X, params):
        seen.append((type(X), X.flags.f_contiguous))
        return exact.make_finder(X, params)

    registered(_split_methods.SplitMethod(
        "toy_exact", "the search of 'exact'", build, partitions_on_bins=False,
        sparse_input=False, distributed=False, side_by_side=False))
    sp = pytest.importorskip("scipy.sparse")
    X, y = _data(seed=4)
    Xs = sp.csr_matrix(np.nan_to_num(X))
    for XX in (np.ascontiguousarray(X), Xs):
        a, b = (GradientBoostingClassifier(split_method=m, n_estimators=4, random_state=0)
                .fit(XX, y) for m in ("exact", "toy_exact"))
        assert (np.concatenate(a.booster_.trees()).tobytes()
                == np.concatenate(b.booster_.trees()).tobytes())
    assert seen == [(np.ndarray, True), (np.ndarray, True)]


def test_the_training_code_loads_every_finder_module():
    """A fit imports nothing: the training code loads the finders' modules (a fit
    under a memory limit must fail with a MemoryError, not an ImportError)."""
    import sys

    import gbc_core._boosting  # noqa: F401

    for method in _split_methods.METHODS.values():
        for module in method.modules:
            assert f"gbc_core.{module}" in sys.modules, module


def test_fit_data_lays_x_out_for_the_grower():
    X = np.ascontiguousarray(_data()[0])
    hist, exact = _split_methods.METHODS["hist"], _split_methods.METHODS["exact"]
    data = hist.fit_data(X, 1.0)
    assert data.X is X and data.grower_X is None and data.columns is None  # bins only
    data = hist.fit_data(X, 0.5)  # out-of-bag rows read raw values
    assert data.X.flags.f_contiguous and data.grower_X is data.X
    data = exact.fit_data(X, 1.0)
    assert data.X.flags.f_contiguous and data.grower_X is data.X
    assert hist.fit_data(None, 1.0).X is None
