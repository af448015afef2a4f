"""Model-file fuzzing, the long version: tens of thousands of corrupted model files.

The CI part is ``tests/test_model_io.py`` (every truncation of the header, a few
hundred bit flips, ~150 hand-crafted invalid files; ``tests/test_model_io_categorical.py``
for format version 4). This script draws many more cases from several valid models
(stumps, deep trees with missing values, string labels and feature names, early
stopping, many features, categorical features: format version 4) and loads each one
in a worker process (so that a crash is caught and reported with the offending file):

  truncate     the file cut at every byte offset of its header (for as many models
               as a quarter of the cases allows) and at random offsets must be rejected
  stale-flip   1-8 random bits flipped, checksum left as it was      must be rejected
  flip         1-8 random bits flipped, checksum recomputed          may load
  overwrite    a random run of bytes overwritten, checksum fixed     may load
  json         a character of the header JSON changed, checksum fixed may load
  child        a child index set out of range (past the tree, -2 .. -2**31,
               2**31 - 1)                                            must be rejected
  cycle        a child pointed back at its node or an ancestor       must be rejected
  feature      a split feature set to n_features .. 2**31 - 1 or < -1 must be rejected
  nonfinite    a leaf value NaN/+-inf, a threshold NaN/-inf          must be rejected
  length       an array descriptor's length/offset/nbytes out of range must be rejected
  count        n_trees/n_nodes off by one, n_features 0/negative/beyond 2**24
                                                                     must be rejected
  claim        best_iteration beyond the iterations, class labels unsorted, mixing
               booleans and numbers, or wider than 2**20 characters, a loss the
               format does not know (or none), the exponential loss
               of a multiclass model                                 must be rejected
  categorical  (version-4 models) a categorical node's threshold naming no set
               (past the table, negative, fractional, +inf), n_category_sets off
               or beyond the payload or the limit, the category_sets array cut or
               gone, categorical_features out of range, repeated, unsorted or
               empty, categories unsorted, repeated, too many (257), mixing
               strings and numbers, booleans, or one list too many  must be rejected
  splice       the header of one model with the payload of another  may load

"must be rejected": loading raises ``gbc_core.ModelFormatError``. "may load": it
raises ModelFormatError, or it loads and then predicts finite probabilities in
[0, 1] (predict_proba, apply, staged predictions, importances) on rows with missing
values. Anything else is a failure: another exception, a crash of the worker (the
file is saved to --out), a case running longer than --timeout seconds (a hang), or
a must-reject file that loads.

    python benchmarks/fuzz_model_files.py                      # 20,000 cases, seed 0
    python benchmarks/fuzz_model_files.py --cases 100000 --seed 7 --out crashes/

Prints the counts per kind and exits with status 1 if anything failed.
"""

import argparse
import hashlib
import json
import os
import select
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter, defaultdict

import numpy as np

MAGIC = b"\x89GBC\r\n\x1a\n"
MUST_REJECT = {"truncate", "stale-flip", "child", "cycle", "feature", "nonfinite",
               "length", "count", "claim", "categorical"}
KINDS = ["truncate", "stale-flip", "flip", "overwrite", "json", "child", "cycle", "feature",
         "nonfinite", "length", "count", "claim", "categorical", "splice"]

WORKER = textwrap.dedent("""
    import json, sys, traceback, warnings
    import numpy as np
    import gbc_core
    warnings.simplefilter("ignore")
    path, start = sys.argv[1], int(sys.argv[2])
    ends = np.load(path + ".ends.npy")
    X = np.load(path + ".X.npy")
    with open(path, "rb") as fh:
        everything = fh.read()
    for i in range(start, ends.shape[0]):
        data = everything[(ends[i - 1] if i else 0): ends[i]]
        try:
            model = gbc_core.from_bytes(data)
        except gbc_core.ModelFormatError:
            status, msg = "rejected", ""
        except BaseException:
            status, msg = "other", traceback.format_exc()[-1500:]
        else:
            try:
                d = model.n_features_in_
                Xm = X[:, :d] if X.shape[1] >= d else np.zeros((X.shape[0], d))
                with warnings.catch_warnings():
                    warnings.simplefilter("error", RuntimeWarning)
                    P = model.predict_proba(Xm)
                    assert np.isfinite(P).all() and ((P >= 0) & (P <= 1)).all(), "probabilities"
                    model.apply(Xm)
                    for _ in model.staged_decision_function(Xm[:3]):
                        pass
                    assert np.isfinite(model.feature_importances_).all(), "importances"
                status, msg = "loaded", ""
            except BaseException:
                status, msg = "bad-model", traceback.format_exc()[-1500:]
        print(json.dumps([i, status, msg]), flush=True)
""")


# ------------------------------------------------------------------ the format
def split(blob):
    _, version, hlen = struct.unpack_from("<8sII", blob, 0)
    header = json.loads(blob[16: 16 + hlen])
    start = (16 + hlen + 7) // 8 * 8
    return header, bytearray(blob[start: len(blob) - 32]), hlen


def assemble(header, payload, version=None, text=None):
    """A file of ``header`` (or the JSON ``text``) and ``payload`` with a valid
    checksum; the prelude's version is the header's (so that the mutation, not a
    version mismatch, is what a reader sees)."""
    if version is None:
        version = header.get("format_version", 1) if isinstance(header, dict) else 1
        version = version if isinstance(version, int) and 0 < version < 2**32 else 1
    text = json.dumps(header, separators=(",", ":")).encode() if text is None else text
    head = struct.pack("<8sII", MAGIC, version, len(text)) + text
    head += b"\0" * (-len(head) % 8)
    body = head + bytes(payload)
    return body + hashlib.sha256(body).digest()


def fix_checksum(blob):
    blob = bytes(blob)
    return blob[:-32] + hashlib.sha256(blob[:-32]).digest()


def column(header, payload, name):
    d = next(a for a in header["arrays"] if a["name"] == name)
    return np.frombuffer(payload, dtype=d["dtype"], count=d["length"], offset=d["offset"])


def set_value(header, payload, name, index, value):
    d = next(a for a in header["arrays"] if a["name"] == name)
    arr = np.frombuffer(payload, dtype=d["dtype"], count=d["length"], offset=d["offset"])
    dtype = np.dtype(d["dtype"])
    raw = np.array([value]).astype(dtype) if dtype.kind == "f" else np.array(
        [value], dtype=np.int64).astype(dtype)
    off = d["offset"] + index * dtype.itemsize
    payload[off: off + dtype.itemsize] = raw.tobytes()
    assert arr.shape[0] == d["length"]


# ------------------------------------------------------------------ the models
def valid_models(seed):
    """Model files of several shapes, and probe rows for the loaded models."""
    from gbc_core import GradientBoostingClassifier as GBC

    rng = np.random.default_rng(seed)
    models = []
    X = rng.normal(size=(600, 6))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    Xn = X.copy()
    Xn[rng.uniform(size=X.shape) < 0.2] = np.nan
    models.append(GBC(n_estimators=3, max_depth=1, learning_rate=0.5).fit(X[:, :1], y))
    models.append(GBC(n_estimators=6, max_depth=None, min_samples_leaf=2,
                      random_state=1).fit(Xn, y))  # deep trees, NaN directions
    models.append(GBC(n_estimators=10, max_depth=3, n_iter_no_change=3,
                      validation_fraction=0.2, random_state=2).fit(Xn, np.where(y, "pos", "neg")))
    try:
        import pandas as pd

        df = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])
        models.append(GBC(n_estimators=4, max_depth=4, subsample=0.7, max_features="sqrt",
                          random_state=3, init="prior").fit(df, y))
    except ImportError:
        pass
    Xw = rng.normal(size=(300, 40))
    models.append(GBC(n_estimators=5, max_depth=5, random_state=4).fit(
        Xw, (Xw[:, 7] > 0.3).astype(int)))
    models.append(GBC(n_estimators=1, max_depth=2).fit(X, y))
    # Multiclass (format version 2: K outputs, init_raw per class), with out-of-bag
    # scores and early stopping.
    y4 = np.digitize(X[:, 0] + 0.5 * X[:, 3], [-0.7, 0.0, 0.7])
    models.append(GBC(n_estimators=5, max_depth=3, subsample=0.8, init="prior",
                      random_state=5).fit(Xn, np.array(["a", "b", "c", "d"])[y4]))
    models.append(GBC(n_estimators=20, max_depth=2, n_iter_no_change=2,
                      random_state=6).fit(X, y4))
    # The exponential loss (format version 3: the header names the loss).
    models.append(GBC(n_estimators=8, max_depth=3, loss="exponential", init="prior",
                      subsample=0.8, random_state=7).fit(Xn, y))
    probe = np.vstack([Xn[:30], np.full((2, 6), np.nan)])
    probe = np.hstack([probe, rng.normal(size=(32, 34))])  # up to 40 features
    probe[::2, :3] = rng.integers(-1, 45, size=(16, 3))     # category codes, some unseen
    return [m.to_bytes() for m in models] + categorical_models(rng), probe


def categorical_models(rng):
    """Format version 4: Boosters of trees grown with categorical features by the
    exact finder (the sets their categorical nodes name, in one table), with
    categories as strings, as numbers, or none (the rows hold the codes)."""
    from gbc_core import Booster, Ensemble
    from gbc_core._common import ROW_STAT_DTYPE
    from gbc_core._exact_splitter import ExactSplitFinder
    from gbc_core._grower import TreeGrower

    n = 600
    X = np.column_stack([rng.integers(0, 6, n), rng.integers(0, 40, n),
                         rng.normal(size=n)]).astype(np.float64)
    X[rng.uniform(size=X.shape) < 0.1] = np.nan
    categorical = np.array([True, True, False])
    X32 = np.asfortranarray(X, dtype=np.float32)
    codes = np.nan_to_num(X[:, :2], nan=0).astype(int)
    categories = [[["a", "b", "c", "d", "e", "f"], [f"v{i:02d}" for i in range(40)], None],
                  [[0.5 * i for i in range(6)], [float(i) for i in range(40)], None], None]
    out = []
    for K, cats, classes in ((1, categories[0], ["no", "yes"]), (3, categories[1], [1, 2, 3]),
                             (1, categories[2], [0, 1])):
        trees, tables, shift = [], [], 0
        for t in range(4 * K):
            effect = rng.normal(size=(2, 40))
            r = effect[0, codes[:, 0]] + effect[1, codes[:, 1]] + 0.3 * rng.normal(size=n)
            stats = np.zeros(n, dtype=ROW_STAT_DTYPE)
            stats["wr"], stats["w"] = r, 1.0
            grower = TreeGrower(X32, ExactSplitFinder(X32, 1), 2 + t % 3, 2, 1, 0.0, 3, 1,
                                categorical=categorical)
            grower.grow(stats, r, None, 5)
            nodes, bits = grower.nodes_array(), grower.cat_bitsets()
            on_cat = (nodes["feature"] >= 0) & categorical[np.maximum(nodes["feature"], 0)]
            rows = nodes["threshold"][on_cat].astype(np.int64)
            nodes["threshold"][on_cat] = shift + np.arange(rows.shape[0])
            nodes["threshold32"][on_cat] = shift + np.arange(rows.shape[0])
            trees.append(nodes)
            tables.append(bits[rows])
            shift += rows.shape[0]
        ensemble = Ensemble.from_trees(trees, n_outputs=K, init_raw=[0.1] * K,
                                       learning_rate=0.3, n_features=3,
                                       categorical=categorical,
                                       category_sets=np.concatenate(tables))
        out.append(Booster(ensemble, classes, categories=cats).to_bytes())
    return out


# ------------------------------------------------------------------- mutations
def mutate(kind, blob, others, rng):
    """One corrupted file of ``kind`` from ``blob``."""
    header, payload, hlen = split(blob)
    n = len(blob)
    if kind == "truncate":
        return blob[: int(rng.integers(0, n))]
    if kind in ("stale-flip", "flip"):
        data = bytearray(blob)
        for bit in rng.integers(0, n * 8, size=int(rng.integers(1, 9))):
            data[bit // 8] ^= 1 << (bit % 8)
        return bytes(data) if kind == "stale-flip" else fix_checksum(data)
    if kind == "overwrite":
        data = bytearray(blob)
        start = int(rng.integers(0, n - 32))
        length = int(min(rng.integers(1, 64), n - 32 - start))
        data[start: start + length] = rng.integers(0, 256, size=length, dtype=np.uint8).tobytes()
        return fix_checksum(data)
    if kind == "json":
        text = bytearray(blob[16: 16 + hlen])
        pos = int(rng.integers(0, len(text)))
        text[pos] = int(rng.choice(list(b'{}[]",:0123456789-.eE ntfrxa\\')))
        return assemble(None, payload, version=struct.unpack_from("<I", blob, 8)[0],
                        text=bytes(text))
    if kind == "splice":
        h2, p2, _ = split(others[int(rng.integers(0, len(others)))])
        return assemble(header, p2) if rng.uniform() < 0.5 else assemble(h2, payload)

    offsets = column(header, payload, "tree_offsets").astype(np.int64)
    feature = column(header, payload, "nodes.feature")
    inner = np.flatnonzero(feature >= 0)
    if kind == "count":
        key = str(rng.choice(["n_trees", "n_nodes", "n_features"]))
        if key == "n_features":
            header[key] = rng.choice([0, -1, -2**31, 2**24 + 1, 2**31 - 1, 2**40, 1.5, "2",
                                      None, True])
            header[key] = header[key].item() if hasattr(header[key], "item") else header[key]
        else:
            header[key] = int(header[key]) + int(rng.choice([-1, 1, 2**31]))
        return assemble(header, payload)
    if kind == "claim":
        what = str(rng.choice(["best_iteration", "unsorted", "mixed", "width", "loss"]))
        classes = header["classes"]
        if what == "best_iteration":
            n_iterations = header["n_trees"] // header.get("n_outputs", 1)
            header["best_iteration"] = n_iterations + int(rng.choice([1, 2, 2**31 - 2]))
        elif what == "unsorted":
            order = rng.permutation(len(classes["values"]))
            if (order == np.arange(order.shape[0])).all():
                order = order[::-1]
            classes["values"] = [classes["values"][i] for i in order]
            if "types" in classes:
                classes["types"] = [classes["types"][i] for i in order]
        elif what == "mixed":
            k = len(classes["values"])
            classes.update(dtype="|O", values=[True] + list(range(2, k + 1)),
                           types=["bool"] + ["int"] * (k - 1))
        elif what == "loss":
            bad = ["deviance", "Exponential", "log-loss", "", 0, None, ["log_loss"], "hinge"]
            if header.get("n_outputs", 1) > 1 and rng.uniform() < 0.5:
                header["loss"] = "exponential"  # a loss of two classes
            elif rng.uniform() < 0.2:
                header.pop("loss", None)
            else:
                header["loss"] = bad[int(rng.integers(0, len(bad)))]
        else:  # wider than the format's limit on label width
            k = len(classes["values"])
            classes.update(dtype=f"<U{2**20 + int(rng.integers(1, 2**26))}",
                           values=[f"{i:06d}" for i in range(k)])
            classes.pop("types", None)
        return assemble(header, payload)
    if kind == "categorical":
        return mutate_categorical(header, payload, rng)
    if kind == "length":
        d = header["arrays"][int(rng.integers(0, len(header["arrays"])))]
        field = str(rng.choice(["length", "offset", "nbytes"]))
        choices = {"length": [d["length"] + 1, 2**40, -1, d["length"] * 2 + 8],
                   "offset": [header["payload_size"], -8, 2**62, header["payload_size"] - 8 + 1],
                   "nbytes": [d["nbytes"] + 8, d["nbytes"] - 1, -8, 2**50]}[field]
        new = int(rng.choice(choices))
        if new == d[field]:
            new = -1
        d[field] = new
        return assemble(header, payload)
    if kind == "nonfinite" or inner.size == 0:
        leaf = np.flatnonzero(feature < 0)
        if inner.size and rng.uniform() < 0.5:
            set_value(header, payload, "nodes.threshold", int(rng.choice(inner)),
                      float(rng.choice([np.nan, -np.inf])))
        else:
            set_value(header, payload, "nodes.value", int(rng.choice(leaf)),
                      float(rng.choice([np.nan, np.inf, -np.inf])))
        return assemble(header, payload)
    node = int(rng.choice(inner))
    t = int(np.searchsorted(offsets, node, side="right") - 1)
    root, size = int(offsets[t]), int(offsets[t + 1] - offsets[t])
    local = node - root
    side = "nodes.left" if rng.uniform() < 0.5 else "nodes.right"
    if kind == "child":
        value = int(rng.choice([size, size + int(rng.integers(0, 1000)), 2**31 - 1, -2,
                                -int(rng.integers(2, 2**31))]))
        set_value(header, payload, side, node, value)
    elif kind == "cycle":
        # the node itself or an ancestor: a loop on the path from the root
        left = column(header, payload, "nodes.left")
        right = column(header, payload, "nodes.right")
        parent = {}
        for k in range(size):
            if left[root + k] >= 0:
                parent[int(left[root + k])] = k
                parent[int(right[root + k])] = k
        path, j = [local], local
        while j in parent and len(path) <= size:
            j = parent[j]
            path.append(j)
        set_value(header, payload, side, node, int(rng.choice(path)))
    elif kind == "feature":
        n_features = int(header["n_features"])
        value = int(rng.choice([n_features, n_features + int(rng.integers(1, 1000)), 2**31 - 1,
                                -2, -int(rng.integers(2, 2**31))]))
        set_value(header, payload, "nodes.feature", node, value)
    return assemble(header, payload)


def mutate_categorical(header, payload, rng):
    """A version-4 file made invalid in one of its categorical fields."""
    features = header["categorical_features"]
    n_sets, n_features = header["n_category_sets"], header["n_features"]
    what = str(rng.choice(["threshold", "n_sets", "array", "features", "categories"]))
    on_cat = np.flatnonzero(np.isin(column(header, payload, "nodes.feature"), features))
    if what == "threshold" and on_cat.size == 0:
        what = "n_sets"
    if what == "threshold":
        value = float(rng.choice([n_sets, n_sets + int(rng.integers(1, 1000)), 2.0**31, -1.0,
                                  0.5, n_sets - 0.5, np.inf]))
        node = int(rng.choice(on_cat))
        set_value(header, payload, "nodes.threshold", node, value)
        set_value(header, payload, "nodes.threshold32", node, value)  # float32 of it
    elif what == "n_sets":
        header["n_category_sets"] = int(rng.choice([n_sets - 1, n_sets + 1, 2**26 + 1, -1,
                                                    2**40, header["payload_size"] // 32 + 1]))
    elif what == "array":
        d = next(a for a in header["arrays"] if a["name"] == "category_sets")
        if rng.uniform() < 0.3:
            header["arrays"].remove(d)
        else:
            cut = int(rng.integers(1, min(d["length"], 64) + 1)) if d["length"] else 0
            if cut % 8 == 0 and n_sets == cut // 8:
                cut += 1  # (an empty table named by no node would be valid)
            d["length"] -= cut
            d["nbytes"] = d["length"] * 4
    elif what == "features":
        options = [features + [n_features], [-1] + features, features + [features[-1]],
                   features[::-1] if len(features) > 1 else features + [features[0]], [],
                   [n_features + int(rng.integers(0, 2**31))]]
        header["categorical_features"] = options[int(rng.integers(0, len(options)))]
    else:
        cats = header["categories"]
        if cats is None:
            header["categories"] = [["a"]] * (len(features) + 1)
        else:
            i = int(rng.integers(0, len(cats)))
            values = list(cats[i])
            number = not isinstance(values[0], str)
            how = str(rng.choice(["unsorted", "repeated", "too many", "mixed", "bool",
                                  "empty", "count"]))
            if how == "unsorted" and len(values) > 1:
                values = values[::-1]
            elif how == "repeated" or how == "unsorted":
                values = values + [values[-1]]
            elif how == "too many":
                values = [float(v) for v in range(257)] if number else [
                    f"{v:03d}" for v in range(257)]
            elif how == "mixed":
                values[int(rng.integers(0, len(values)))] = "x" if number else 1.0
                if len(values) == 1:
                    values.append("y" if number else 2.0)
            elif how == "bool":
                values = [False, True]
            elif how == "empty":
                values = []
            if how == "count":
                cats.append(list(values))
            else:
                cats[i] = values
    return assemble(header, payload)


def cases(n_cases, seed):
    rng = np.random.default_rng(seed)
    blobs, probe = valid_models(seed)
    out = []
    for blob in blobs:  # every truncation of each header, up to a quarter of the cases
        hlen = struct.unpack_from("<I", blob, 12)[0]
        out += [("truncate", blob[:c]) for c in range((16 + hlen + 7) // 8 * 8 + 1)]
    out = out[: n_cases // 4]
    categorical = [b for b in blobs if split(b)[0].get("format_version") == 4]
    while len(out) < n_cases:
        kind = KINDS[int(rng.integers(0, len(KINDS)))]
        pool = categorical if kind == "categorical" else blobs
        blob = pool[int(rng.integers(0, len(pool)))]
        out.append((kind, mutate(kind, blob, blobs, rng)))
    return out, probe


# ---------------------------------------------------------------------- running
def run(all_cases, probe, timeout, out_dir, batch=5000):
    results = [None] * len(all_cases)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for b0 in range(0, len(all_cases), batch):
            chunk = all_cases[b0: b0 + batch]
            path = os.path.join(tmp, "batch.bin")
            with open(path, "wb") as fh:
                fh.write(b"".join(blob for _, blob in chunk))
            np.save(path + ".ends.npy", np.cumsum([len(b) for _, b in chunk], dtype=np.int64))
            np.save(path + ".X.npy", probe)
            start = 0
            while start < len(chunk):
                start = _run_worker(path, start, chunk, b0, results, failures, timeout, out_dir)
            done = b0 + len(chunk)
            print(f"  {done}/{len(all_cases)} cases", file=sys.stderr, flush=True)
    return results, failures


def _run_worker(path, start, chunk, b0, results, failures, timeout, out_dir):
    proc = subprocess.Popen([sys.executable, "-c", WORKER, path, str(start)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    i = start
    buf = b""
    deadline = time.monotonic() + timeout + 30  # start-up
    while i < len(chunk):
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            proc.kill()
            proc.communicate()
            _failure(failures, results, b0 + i, chunk[i], "hang", f"over {timeout} s", out_dir)
            return i + 1
        data = os.read(proc.stdout.fileno(), 1 << 16)
        if not data:  # the worker died
            _, err = proc.communicate()
            _failure(failures, results, b0 + i, chunk[i], "crash",
                     f"exit code {proc.returncode}: {err.decode(errors='replace')[-1500:]}",
                     out_dir)
            return i + 1
        buf += data
        *lines, buf = buf.split(b"\n")
        for line in lines:
            idx, status, msg = json.loads(line)
            kind = chunk[idx][0]
            results[b0 + idx] = (kind, status)
            if status in ("other", "bad-model") or (status == "loaded" and kind in MUST_REJECT):
                _failure(failures, results, b0 + idx, chunk[idx],
                         "loaded" if status == "loaded" else status, msg, out_dir)
            i = idx + 1
        deadline = time.monotonic() + timeout
    proc.wait()
    return i


def _failure(failures, results, index, case, status, msg, out_dir):
    kind, blob = case
    results[index] = (kind, status)
    name = None
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        name = os.path.join(out_dir, f"case{index}-{kind}-{status}.gbc")
        with open(name, "wb") as fh:
            fh.write(blob)
    failures.append((index, kind, status, msg, name))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=20.0,
                    help="seconds one case may take before it counts as a hang")
    ap.add_argument("--out", default=None, help="directory for the files that failed")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    all_cases, probe = cases(args.cases, args.seed)
    print(f"{len(all_cases)} cases (seed {args.seed}) generated in "
          f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
    results, failures = run(all_cases, probe, args.timeout, args.out)
    table = defaultdict(Counter)
    for kind, status in results:
        table[kind][status] += 1
    statuses = ["rejected", "loaded", "other", "bad-model", "crash", "hang"]
    print(f"{'kind':<11} {'cases':>7} " + " ".join(f"{s:>9}" for s in statuses)
          + "   (must be rejected)")
    for kind in KINDS:
        c = table[kind]
        print(f"{kind:<11} {sum(c.values()):>7} " + " ".join(f"{c[s]:>9}" for s in statuses)
              + ("   yes" if kind in MUST_REJECT else ""))
    total = Counter()
    for c in table.values():
        total.update(c)
    print(f"{'total':<11} {sum(total.values()):>7} " + " ".join(f"{total[s]:>9}" for s in statuses))
    print(f"{len(failures)} failure(s) in {time.perf_counter() - t0:.0f} s")
    for index, kind, status, msg, name in failures[:20]:
        print(f"  case {index} ({kind}): {status} {name or ''}\n    "
              + msg.strip().replace("\n", "\n    ")[-800:])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
