"""The same fit gives the same model on every machine (docs/reliability.md, "Same
model on every machine").

Every number of a fit and of a prediction is computed by gbc-core's own code in a
fixed order: no BLAS (whose kernel, and so whose rounding, the CPU selects) and none
of NumPy's functions that pick a SIMD implementation by CPU at run time (``exp``,
``log``, ``log1p``, ... on float64 differ in the last bit between processors with
and without AVX-512). Three guards, none of which depends on the machine it runs on:

- the fit and predict paths run with NumPy's BLAS-backed and CPU-dispatched
  functions replaced by ones that raise;
- the sources hold no ``@`` operator, no ``.dot(`` and no call of those functions
  (what replacing module attributes cannot catch);
- the reference models refitted in a subprocess where NumPy's CPU-dispatched code is
  switched off (``NPY_DISABLE_CPU_FEATURES``) are the same, bit for bit, as fitted
  here.

Run as a script (``python tests/test_reproducibility.py OUT.npz``), this file fits
the reference models and writes their numbers to OUT.npz: the subprocess of the
third guard.
"""

import math
import os
import platform
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "fixtures"))
from conftest import assert_arrays_equal, assert_nodes_equal  # noqa: E402
import make_binary_reference as binary_reference  # noqa: E402

import gbc_core  # noqa: E402
from gbc_core import GradientBoostingClassifier as GBC  # noqa: E402

SOURCE = Path(gbc_core.__file__).resolve().parent

#: NumPy functions that call BLAS (or may: einsum with optimize, tensordot).
BLAS_FUNCTIONS = ("dot", "matmul", "inner", "vdot", "einsum", "tensordot")
BLAS_LINALG = ("multi_dot", "matmul", "vecdot", "tensordot", "norm")
#: NumPy ufuncs whose float64 loops NumPy 2 dispatches by CPU at run time (SVML or
#: its own AVX-512 code): their last bits depend on the processor.
DISPATCHED_MATH = ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "power",
                   "float_power", "tanh", "sinh", "cosh", "sin", "cos", "tan",
                   "arcsin", "arccos", "arctan", "arctan2", "arcsinh", "arccosh",
                   "arctanh", "cbrt")


# --------------------------------------------------------------- the models
def multiclass_config(name):
    """(estimator, X, y, fit kwargs, X_eval) of a multiclass reference fit."""
    rng = np.random.default_rng({"mc_prior": 21, "mc_zero": 22, "mc_stopping": 23}[name])
    n, d = 2400, 6
    X = rng.normal(size=(n, d))
    score = np.stack([X[:, 0], X[:, 1] - X[:, 2] * (X[:, 3] > 0), 0.5 * X[:, 4] ** 2,
                      -X[:, 0] + 0.3 * X[:, 5]], axis=1)
    y = np.argmax(score + rng.gumbel(size=score.shape), axis=1)
    X_eval = rng.normal(size=(300, d))
    fit = {}
    if name == "mc_prior":
        # Prior init, continuous weights, missing values, subsample with feature draws.
        X[rng.random(X.shape) < 0.1] = np.nan
        X_eval[rng.random(X_eval.shape) < 0.1] = np.nan
        fit["sample_weight"] = rng.uniform(0.2, 3.0, size=n)
        est = GBC(n_estimators=8, max_depth=3, init="prior", subsample=0.7,
                  max_features=4, random_state=5)
    elif name == "mc_zero":
        # Zero init, class weights with zero sample weights, unlimited depth.
        w = rng.uniform(0.5, 2.0, size=n)
        w[rng.random(n) < 0.1] = 0.0
        fit["sample_weight"] = w
        est = GBC(n_estimators=6, max_depth=None, min_samples_leaf=30,
                  class_weight="balanced")
    else:
        # Early stopping on a stratified hold-out, prior init, 3 classes.
        y = np.minimum(y, 2)
        est = GBC(n_estimators=100, max_depth=2, learning_rate=0.5, init="prior",
                  n_iter_no_change=3, validation_fraction=0.2, random_state=3)
    return est, X, y, fit, X_eval


#: Binary: prior init with class weights, weights, NaN, subsample, zero weights and
#: early stopping (tests/fixtures/make_binary_reference.py); multiclass: the above.
BINARY = ("balanced_prior", "weights", "missing", "stochastic", "ties_zero_weights",
          "early_stopping")
MULTICLASS = ("mc_prior", "mc_zero", "mc_stopping")


def fit_references():
    """{name: {array name: array}} of every reference fit: the model's bytes, its
    trees, initial scores and training losses, and its predictions of X_eval."""
    out = {}
    for name in BINARY + MULTICLASS:
        config = binary_reference.config if name in BINARY else multiclass_config
        est, X, y, fit, X_eval = config(name)
        est.fit(X, y, **fit)
        out[name] = {
            "model bytes": np.frombuffer(est.to_bytes(), dtype=np.uint8),
            "nodes": est.booster_.ensemble.nodes,
            "init_raw_": est.init_raw_,
            "train_score_": est.train_score_,
            "decision_function": est.decision_function(X_eval),
            "predict_proba": est.predict_proba(X_eval),
            "predict_log_proba": est.predict_log_proba(X_eval),
        }
    return out


def _cpu_dispatch():
    """(features NumPy dispatches to and this CPU has, the module that tells)."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # NumPy 1.x
        from numpy.core import _multiarray_umath as umath
    return [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)], umath


# ---------------------------------------------------------------- the guards
def _raiser(name):
    def refuse(*args, **kwargs):
        raise AssertionError(f"numpy.{name} called: BLAS or CPU-dispatched math on a "
                             "path whose numbers must not depend on the CPU")
    return refuse


def forbid_blas_and_dispatched_math(monkeypatch):
    """From now on NumPy's BLAS-backed functions and CPU-dispatched float functions
    raise (until ``monkeypatch`` is undone)."""
    for name in BLAS_FUNCTIONS + DISPATCHED_MATH:
        monkeypatch.setattr(np, name, _raiser(name))
    for name in BLAS_LINALG:
        if hasattr(np.linalg, name):
            monkeypatch.setattr(np.linalg, name, _raiser(f"linalg.{name}"))


def _data(n_classes, seed, n=900, d=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + X[:, 1] * (X[:, 2] > 0) > 0).astype(int)
    if n_classes > 2:
        y = y + (X[:, 3] > 0.5) * 2
    X[rng.random(X.shape) < 0.08] = np.nan
    w = rng.uniform(0.1, 2.0, size=n)
    return X, y, w


@pytest.mark.parametrize("n_classes", [2, 4])
@pytest.mark.parametrize("init", ["prior", "zero"])
def test_fit_and_predict_use_no_blas_and_no_cpu_dispatched_math(n_classes, init,
                                                                  monkeypatch):
    """Fit (prior and zero init, weights, NaN, subsample, early stopping with an
    eval_set and with a hold-out, a warm start), every prediction, the metrics and
    a model-file round trip, with NumPy's BLAS and CPU-dispatched functions raising."""
    from gbc_core import metrics
    from gbc_core._commands import classification_metrics

    X, y, w = _data(n_classes, seed=n_classes)
    X_val, y_val, w_val = _data(n_classes, seed=10 + n_classes, n=300)
    y_binary = (y > 0).astype(float)
    forbid_blas_and_dispatched_math(monkeypatch)
    # Everything below runs with those functions raising.
    models = [
        GBC(n_estimators=6, max_depth=3, init=init, subsample=0.8, max_features=3,
            random_state=0).fit(X, y, sample_weight=w),
        GBC(n_estimators=40, max_depth=2, init=init, learning_rate=0.5,
            n_iter_no_change=2, class_weight="balanced",
            random_state=1).fit(X, y, sample_weight=w, eval_set=(X_val, y_val, w_val)),
        GBC(n_estimators=40, max_depth=2, init=init, n_iter_no_change=2,
            validation_fraction=0.2, random_state=2).fit(X, y),
    ]
    warm = GBC(n_estimators=3, init=init, warm_start=True).fit(X, y, sample_weight=w)
    models.append(warm.set_params(n_estimators=5).fit(X, y, sample_weight=w))
    for model in models:
        raw = model.decision_function(X_val)
        proba = model.predict_proba(X_val)
        model.predict(X_val)
        model.predict_log_proba(X_val)
        model.apply(X_val)
        model.feature_importances_
        for staged in (model.staged_predict(X_val), model.staged_predict_proba(X_val),
                       model.staged_decision_function(X_val)):
            list(staged)
        booster = gbc_core.from_bytes(model.to_bytes())
        booster.predict_proba(X_val)
        booster.predict_log_proba(X_val)
        raw2 = raw.reshape(raw.shape[0], -1)
        classification_metrics(booster, np.asarray(y_val), raw2)
        metrics.log_loss_from_raw(y_val if n_classes > 2 else y_val.astype(float),
                                  raw, w_val)
        metrics.accuracy(y_val, model.predict(X_val), w_val)
        metrics.confusion_matrix(y_val, model.predict(X_val), model.classes_)
        if n_classes > 2:
            metrics.roc_auc_ovr(y_val, proba, w_val)
        else:
            metrics.log_loss(y_val, proba[:, 1], w_val)
            metrics.roc_auc(y_val, proba[:, 1], w_val)
    metrics.log_loss(y_binary, np.full(y.shape, 0.3))
    gbc_core.newton_leaf_values(y_binary - 0.5, np.full(y.shape, 0.5), y % 3, w)
    from gbc_core.paper import paper_example
    paper_model, _ = paper_example()
    paper_model.predict_proba(np.array([[1.0], [4.0]]))


def _code_tokens(path):
    """(line, token text) of the operators and names of a Python file (comments and
    strings left out); decorators' ``@`` are not operators."""
    tokens = []
    line_start = True
    with open(path, "rb") as fh:
        for tok in tokenize.tokenize(fh.readline):
            if tok.type in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                            tokenize.DEDENT, tokenize.ENCODING):
                line_start = line_start or tok.type in (tokenize.NEWLINE, tokenize.NL)
                continue
            if tok.type == tokenize.COMMENT:
                continue
            if not (tok.type == tokenize.OP and tok.string == "@" and line_start):
                tokens.append((tok.start[0], tok.string, tok.type))
            line_start = False
    return tokens


def _cython_code(path):
    """(line number, text) of a Cython file's lines, comments and docstring-like
    strings blanked (a crude scan: the kernels are C-like code)."""
    text = Path(path).read_text()
    text = re.sub(r'"""(.|\n)*?"""', lambda m: "\n" * m.group(0).count("\n"), text)
    return [(i, line.split("#", 1)[0]) for i, line in enumerate(text.splitlines(), 1)]


#: Attributes that are BLAS whatever object they are taken from (``ndarray.dot``).
BLAS_NAMES = set(BLAS_FUNCTIONS) | {"linalg"}
FORBIDDEN_NAMES = BLAS_NAMES | set(DISPATCHED_MATH)


def _forbidden_uses(tokens):
    """Indices into ``tokens`` of the forbidden uses: ``.dot`` and the like after
    anything, ``np.log`` and the like after ``np.``/``numpy.``, and the names of
    either imported ``from numpy``."""
    found = []
    from_numpy = False
    for i, (line, text, kind) in enumerate(tokens):
        before = tokens[i - 1][1] if i > 0 else ""
        if text == "from" and i + 1 < len(tokens):
            from_numpy = tokens[i + 1][1] == "numpy"
        elif kind == tokenize.NAME and text in FORBIDDEN_NAMES:
            if before == "." and (text in BLAS_NAMES
                                  or (i > 1 and tokens[i - 2][1] in ("np", "numpy"))):
                found.append(i)
            elif from_numpy and before in ("import", ",", "("):
                found.append(i)
        if kind == tokenize.NAME and text in ("def", "class") or text == ";":
            from_numpy = False
    return found


def test_sources_hold_no_blas_and_no_cpu_dispatched_math():
    """What replacing NumPy's functions cannot catch: the ``@`` operator (a matmul
    that calls BLAS), ``ndarray.dot``, and calls through another name. Every module of
    gbc_core: no ``@``/``@=`` operator, no ``.dot``/``.einsum``... attribute, no
    ``np.log``-like call (NumPy's CPU-dispatched functions). The kernels take C's
    ``exp``/``log``/``log1p`` from ``libc.math``."""
    found = []
    modules = sorted(SOURCE.rglob("*.py"))
    assert len(modules) > 10
    for path in modules:
        tokens = _code_tokens(path)
        for line, text, kind in tokens:
            if kind == tokenize.OP and text in ("@", "@="):
                found.append(f"{path.relative_to(SOURCE)}:{line}: the {text} operator")
        for i in _forbidden_uses(tokens):
            found.append(f"{path.relative_to(SOURCE)}:{tokens[i][0]}: {tokens[i][1]}")
    for path in sorted(SOURCE.glob("*.pyx")):
        for line, text in _cython_code(path):
            where = f"{path.relative_to(SOURCE)}:{line}"
            if re.search(r"\s@=?\s", text):
                found.append(f"{where}: the @ operator")
            for name in re.findall(r"\.\s*([A-Za-z_]\w*)\s*\(", text):
                if name in BLAS_NAMES:
                    found.append(f"{where}: .{name}(")
            for name in re.findall(r"\b(?:np|numpy)\s*\.\s*([A-Za-z_]\w*)", text):
                if name in FORBIDDEN_NAMES:
                    found.append(f"{where}: np.{name}")
    assert not found, "BLAS or CPU-dispatched NumPy math in gbc_core:\n" + "\n".join(found)


def test_source_scan_finds_what_it_looks_for(tmp_path):
    """The scan of the test above catches each form it is meant to catch."""
    bad = tmp_path / "bad.py"
    bad.write_text("import math\nimport numpy as np\nfrom numpy import (exp,\n  tanh)\n"
                   "@decorator\ndef f(a, b):\n"
                   "    c = a @ b\n    c @= b\n    d = a.dot(b)\n"
                   "    e = math.log(2.0) + np.maximum(a, b).sum()  # C's log: allowed\n"
                   "    return np.log(c) + np.linalg.norm(d)  # np.exp in a comment\n")
    tokens = _code_tokens(bad)
    ops = [(line, t) for line, t, kind in tokens if kind == tokenize.OP and t in ("@", "@=")]
    assert ops == [(7, "@"), (8, "@=")]
    assert [(tokens[i][0], tokens[i][1]) for i in _forbidden_uses(tokens)] == [
        (3, "exp"), (4, "tanh"), (9, "dot"), (11, "log"), (11, "linalg")]


def test_prior_is_the_row_order_sum_and_c_log():
    """F0 of init="prior" is the naive twin's: class weights added one row after the
    other, then C's log (Python's math.log), not a BLAS dot or NumPy's dispatched log."""
    rng = np.random.default_rng(7)
    n = 5001
    w = rng.uniform(0.1, 3.0, size=n)
    for n_classes in (2, 5):
        y = rng.integers(0, n_classes, size=n)
        model = GBC(n_estimators=1, max_depth=1, init="prior").fit(
            rng.normal(size=(n, 2)), y, sample_weight=w)
        sums, total = [0.0] * n_classes, 0.0
        for code, weight in zip(y.tolist(), w.tolist()):
            sums[code] += weight
            total += weight
        if n_classes == 2:
            expected = [math.log(sums[1] / sums[0])]
        else:
            eps = np.finfo(np.float64).eps
            logs = [math.log(min(max(s / total, eps), 1 - eps)) for s in sums]
            mean = 0.0
            for v in logs:
                mean += v
            mean /= n_classes
            expected = [v - mean for v in logs]
        assert_arrays_equal(np.atleast_1d(model.init_raw_), np.array(expected),
                            f"init_raw_ of {n_classes} classes", index_name="output")


def _run_references(out, env):
    proc = subprocess.run([sys.executable, __file__, str(out)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_reference_fits_do_not_depend_on_numpy_cpu_features(tmp_path):
    """The binary and multiclass reference models (prior and zero init, weights, NaN,
    subsample, early stopping) refitted in a subprocess with every CPU feature NumPy
    dispatches to switched off (``NPY_DISABLE_CPU_FEATURES``: its SIMD exp, log, ...
    fall back to their baseline code, which on x86-64 with AVX-512 gives other last
    bits) are the models fitted here, bit for bit: model bytes, trees, initial
    scores, training losses and predictions."""
    features, umath = _cpu_dispatch()
    if not features:
        pytest.skip(f"NumPy dispatches to none of this CPU's features "
                    f"({list(umath.__cpu_dispatch__)}): nothing to switch off")
    env = {k: v for k, v in os.environ.items() if k != "NPY_ENABLE_CPU_FEATURES"}
    env["NPY_DISABLE_CPU_FEATURES"] = " ".join(features)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(SOURCE.parent)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    out = tmp_path / "references.npz"
    proc = _run_references(out, env)
    # The child really ran without them (NumPy refuses unknown or baseline names).
    assert f"disabled: {' '.join(features)}" in proc.stdout, proc.stdout
    assert "still enabled: \n" in proc.stdout, proc.stdout
    child = np.load(out, allow_pickle=False)
    here = fit_references()
    for name, arrays in here.items():
        for what, value in arrays.items():
            if what == "nodes":
                assert_nodes_equal(child_nodes(child, name, value.dtype), value,
                                   f"{name}: trees (without NumPy's {' '.join(features)})")
            elif what != "model bytes":
                assert_arrays_equal(child[f"{name}/{what}"], value,
                                    f"{name}: {what} (without NumPy's "
                                    f"{' '.join(features)})")
        assert_arrays_equal(child[f"{name}/model bytes"], arrays["model bytes"],
                            f"{name}: model file bytes", index_name="byte")


def _libm_probe():
    """A digest of C's exp, log and log1p (Python's math module calls them) on fixed
    arguments: tells which implementation of them a process uses."""
    import hashlib
    import struct
    values = [f(0.37 + 0.0173 * i) for i in range(4000) for f in (math.exp, math.log1p)]
    values += [math.log(1.0 + 0.0137 * i) for i in range(4000)]
    return hashlib.sha1(struct.pack(f"{len(values)}d", *values)).hexdigest()


def test_reference_fits_do_not_depend_on_the_c_librarys_exp_and_log(tmp_path):
    """The kernels take no exp, log or log1p from the C library (``_exp.h``,
    ``_log1p.h``): the references refitted in a subprocess where glibc is told the
    CPU has neither FMA nor AVX2 (``GLIBC_TUNABLES``: its exp, log and log1p then
    take their plain variants, which round some arguments otherwise) are the models
    fitted here, bit for bit: model bytes, trees, initial scores, training losses and
    predictions. (With C's exp and log the numbers moved by up to 2.7e-15 relative.)"""
    if not (sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")):
        pytest.skip("glibc's FMA variants of exp/log are an x86-64 Linux matter")
    env = dict(os.environ)
    env["GLIBC_TUNABLES"] = "glibc.cpu.hwcaps=-AVX2,-FMA"
    env["PYTHONPATH"] = os.pathsep.join(
        [str(SOURCE.parent)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    out = tmp_path / "references.npz"
    proc = _run_references(out, env)
    if f"libm: {_libm_probe()}" in proc.stdout:
        pytest.skip("the C library's exp/log are the same without FMA here (not glibc, "
                    "or a CPU without FMA): nothing to compare")
    child = np.load(out, allow_pickle=False)
    for name, arrays in fit_references().items():
        for what, value in arrays.items():
            label = f"{name}: {what} (C library without FMA)"
            if what == "nodes":
                assert_nodes_equal(child_nodes(child, name, value.dtype), value, label)
            else:
                assert_arrays_equal(child[f"{name}/{what}"], value, label,
                                    **({"index_name": "byte"} if what == "model bytes"
                                       else {}))


def child_nodes(child, name, dtype):
    nodes = np.empty(child[f"{name}/nodes.value"].shape[0], dtype=dtype)
    for field in dtype.names:
        nodes[field] = child[f"{name}/nodes.{field}"]
    return nodes


def _main(out):
    features, umath = _cpu_dispatch()
    disabled = os.environ.get("NPY_DISABLE_CPU_FEATURES", "").split()
    print("disabled:", " ".join(disabled))
    print("still enabled:", " ".join(f for f in disabled if umath.__cpu_features__.get(f)))
    print("libm:", _libm_probe())
    arrays = {}
    for name, values in fit_references().items():
        for what, value in values.items():
            if what == "nodes":
                for field in value.dtype.names:
                    arrays[f"{name}/nodes.{field}"] = value[field]
            else:
                arrays[f"{name}/{what}"] = value
    with open(out, "wb") as fh:
        np.savez(fh, **arrays)


if __name__ == "__main__":
    _main(sys.argv[1])
