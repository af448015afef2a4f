"""Same-process fit/predict ratios of gbc-core, LightGBM and XGBoost hist at 200k x 28
(n_jobs 1 and 2): a quick check between full runs of bench.py."""
import argparse
import numpy as np, time, os
argparse.ArgumentParser(description=__doc__).parse_args()  # --help; no options
from sklearn.datasets import make_classification
from gbc_core import GradientBoostingClassifier as G
import lightgbm as lgb, xgboost as xgb
X, y = make_classification(n_samples=250000, n_features=28, n_informative=14, random_state=0)
X = X.astype(np.float32); Xtr, ytr, Xte = X[:200000], y[:200000], X[200000:]
Xp = np.ascontiguousarray(np.tile(Xte, (20, 1)))  # 1M rows
for nj in (1, 2):
    models = {
        "gbc-core": G(n_estimators=100, max_depth=3, learning_rate=0.1, n_jobs=nj),
        "lightgbm": lgb.LGBMClassifier(n_estimators=100, num_leaves=8, max_depth=3, learning_rate=0.1, reg_lambda=0, min_child_samples=1, min_child_weight=0, min_split_gain=0, n_jobs=nj, verbose=-1),
        "xgboost-hist": xgb.XGBClassifier(n_estimators=100, max_depth=3, learning_rate=0.1, reg_lambda=0, min_child_weight=0, tree_method="hist", n_jobs=nj),
    }
    fit, pred = {}, {}
    for name, m in models.items():
        t = time.perf_counter(); m.fit(Xtr, ytr); fit[name] = time.perf_counter() - t
        t = time.perf_counter(); m.predict_proba(Xp); pred[name] = len(Xp) / (time.perf_counter() - t)
    print(f"n_jobs={nj} load={os.getloadavg()[0]:.1f}: " + "; ".join(
        f"{k} fit {fit[k]:.2f}s ({fit[k]/fit['gbc-core']:.2f}x) predict {pred[k]/1e6:.2f}M rows/s" for k in models), flush=True)
