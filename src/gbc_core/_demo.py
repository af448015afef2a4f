"""``gbc-core demo``: the paper's worked example, then a real dataset."""

import time

import numpy as np

from ._classifier import GradientBoostingClassifier
from .datasets import load_higgs_sample
from .metrics import log_loss_from_raw, roc_auc
from .paper import PAPER_X, PAPER_Y, paper_example


def run_paper_example(out):
    model, history = paper_example()
    print("== The paper's worked example (appendix): 6 samples, 3 stumps, eta = 0.1 ==",
          file=out)
    print("thresholds are the appendix's assumed splits; every number below is computed",
          file=out)
    print("by the trainer's own kernels (eq. 1: gamma_j = sum r / sum p(1-p)).", file=out)
    for m, h in enumerate(history, start=1):
        print(f"\n-- iteration {m}: split x <= {h['threshold']} --", file=out)
        print(f"{'i':>2} {'x':>5} {'y':>2} {'p_prev':>8} {'r':>8} {'leaf':>5} "
              f"{'F':>8} {'p':>8}", file=out)
        for i in range(PAPER_X.shape[0]):
            print(f"{i + 1:>2} {PAPER_X[i]:5.1f} {PAPER_Y[i]:>2} {h['prob_before'][i]:8.4f} "
                  f"{h['residual'][i]:8.4f} {h['leaf'][i]:>5} {h['raw'][i]:8.4f} "
                  f"{h['prob'][i]:8.4f}", file=out)
        print(f"gamma_1 = {h['gamma'][1]:.5f}   gamma_2 = {h['gamma'][2]:.5f}", file=out)
    p7 = model.predict_proba(np.array([[7.0]]))[0, 1]
    f7 = model.decision_function(np.array([[7.0]]))[0]
    print(f"\nprediction for x = 7: F = {f7:.4f}, p = sigma(F) = {p7:.4f} "
          f"(paper: -0.0570, 0.4858) -> class {model.predict(np.array([[7.0]]))[0]}",
          file=out)


def run_real_dataset(out, n_estimators=100, max_depth=3):
    X_train, y_train, X_test, y_test = load_higgs_sample()
    print(f"\n== HIGGS sample (shipped): {X_train.shape[0]} train / {X_test.shape[0]} test rows, "
          f"{X_train.shape[1]} features ==", file=out)
    print(f"n_estimators={n_estimators}, max_depth={max_depth}, learning_rate=0.1", file=out)
    rows = []
    model = GradientBoostingClassifier(n_estimators=n_estimators, max_depth=max_depth)
    t0 = time.perf_counter()
    model.fit(X_train, y_train)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    raw = model.decision_function(X_test)
    pred_s = time.perf_counter() - t0
    rows.append(("gbc-core", fit_s, pred_s, roc_auc(y_test, raw), log_loss_from_raw(y_test, raw)))
    try:
        from sklearn.ensemble import GradientBoostingClassifier as SkGBC
    except ImportError:
        SkGBC = None
    if SkGBC is not None:
        sk = SkGBC(init="zero", n_estimators=n_estimators, max_depth=max_depth, random_state=0)
        t0 = time.perf_counter()
        sk.fit(X_train, y_train)
        sk_fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        sk_raw = sk.decision_function(X_test)
        sk_pred = time.perf_counter() - t0
        rows.append(("scikit-learn GBC", sk_fit, sk_pred, roc_auc(y_test, sk_raw),
                     log_loss_from_raw(y_test, sk_raw)))
    print(f"{'model':<18} {'fit s':>8} {'predict s':>10} {'test AUC':>9} {'log-loss':>9}", file=out)
    for name, fs, ps, auc, ll in rows:
        print(f"{name:<18} {fs:8.3f} {ps:10.4f} {auc:9.4f} {ll:9.4f}", file=out)
    if len(rows) == 2:
        dp = np.abs(model.predict_proba(X_train)[:, 1] - sk.predict_proba(X_train)[:, 1]).max()
        print(f"fit speed-up vs scikit-learn: {rows[1][1] / rows[0][1]:.1f}x; "
              f"max |p(gbc-core) - p(scikit-learn)| on the training rows = {dp:.1e}", file=out)
        print("(splits of exactly equal gain are broken by the lowest feature index here and "
              "by a random feature order in scikit-learn, so unseen rows may differ)", file=out)
    else:
        print("(install scikit-learn to see the same model trained by scikit-learn)", file=out)
    top = np.argsort(model.feature_importances_)[::-1][:5]
    print("top features by importance: " + ", ".join(
        f"f{j} ({model.feature_importances_[j]:.3f})" for j in top), file=out)
    return model


def run_demo(out):
    run_paper_example(out)
    run_real_dataset(out)
