"""Saving and loading fitted models in a versioned, self-checking binary format.

The format is data, not code: a fixed prelude, a JSON header and raw little-endian
column arrays, closed by a SHA-256 checksum. It is specified in
``docs/model_format.md``; in short::

    offset 0    magic            8 bytes  b"\\x89GBC\\r\\n\\x1a\\n"
    offset 8    format version   uint32 little-endian (this module writes 1)
    offset 12   header length H  uint32 little-endian
    offset 16   header           H bytes of UTF-8 JSON (an object)
                padding          zero bytes up to the next multiple of 8 (offset P)
    offset P    payload          ``header["payload_size"]`` bytes of arrays
    last 32     SHA-256 digest of every byte before it

Loading checks everything before a kernel sees it (see :func:`validate_trees`), and
raises :class:`ModelFormatError` for any corrupt, truncated or crafted input.
"""

import hashlib
import json
import math
import numbers
import os
import re
import struct
import warnings

import numpy as np

from ._atomic import AtomicFile
from ._common import NODE_DTYPE
from ._version import __version__

MAGIC = b"\x89GBC\r\n\x1a\n"
FORMAT_NAME = "gbc-core-model"
FORMAT_VERSION = 1
ESTIMATOR_NAME = "GradientBoostingClassifier"

_PRELUDE = struct.Struct("<8sII")
_DIGEST_SIZE = 32
_ALIGN = 8
#: Largest accepted JSON header (the header holds feature names, so it can be long).
MAX_HEADER_SIZE = 64 * 1024 * 1024
#: Largest accepted width of string class labels (characters).
MAX_LABEL_WIDTH = 1 << 20
_MAX_NESTING = 32
_INT32_MAX = 2**31 - 1

#: The node columns of the file: name and little-endian dtype, in file order.
NODE_COLUMNS = (
    ("value", "<f8"),
    ("threshold", "<f8"),
    ("improvement", "<f8"),
    ("weighted_n", "<f8"),
    ("n_samples", "<i8"),
    ("feature", "<i4"),
    ("left", "<i4"),
    ("right", "<i4"),
    ("threshold32", "<f4"),
    ("missing_go_left", "|u1"),
    ("depth", "|u1"),
)
_ARRAY_DTYPES = {"tree_offsets": "<i8", "train_score": "<f8", "validation_score": "<f8"}
_ARRAY_DTYPES.update({"nodes." + name: dt for name, dt in NODE_COLUMNS})
_OPTIONAL_ARRAYS = {"validation_score"}
#: A model keeps |F0| + sum over trees of learning_rate x max |leaf value| at most
#: this (the trainer refuses to go further, the loader refuses such files), so that
#: no raw score can overflow to infinity.
RAW_SCORE_LIMIT = 1e300

# Attributes a fitted model keeps in the format (the rest of ``__dict__`` is params
# and, for pickling only, anything else a user or a later version attached).
_MODEL_ATTRS = (
    "_nodes", "_tree_offsets", "_predictor_cache", "classes_", "n_features_in_",
    "feature_names_in_", "init_raw_", "n_estimators_", "train_score_",
    "validation_score_", "best_iteration_",
)
_PICKLE_KEY = "gbc_core_model"


class ModelFormatError(ValueError):
    """A model file or byte string is not a valid gbc-core model.

    Raised for wrong magic bytes, an unsupported format version, a checksum
    mismatch, truncation, and any inconsistent content (array lengths, tree
    structure, feature ids, non-finite values, class labels, hyper-parameters).
    """


def _fail(msg):
    raise ModelFormatError(msg)


# ---------------------------------------------------------------------- helpers
def _float32_at_most(threshold):
    """Largest float32 <= each float64 threshold (vectorised ``paper.float32_at_most``)."""
    t = np.asarray(threshold, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        t32 = t.astype(np.float32)
        above = t32.astype(np.float64) > t
    t32[above] = np.nextafter(t32[above], np.float32(-np.inf))
    return t32


def _align(n):
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# ------------------------------------------------------- hyper-parameter values
class _Unrepresentable(Exception):
    pass


def _encode_value(v, depth=0):
    """A parameter value as JSON data (see "Hyper-parameter values" in the spec)."""
    if depth > _MAX_NESTING:
        raise _Unrepresentable
    if v is None or isinstance(v, str):
        return None if v is None else str(v)
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        f = float(v)
        if math.isfinite(f):
            return f
        return {"float": "nan" if f != f else ("inf" if f > 0 else "-inf")}
    if isinstance(v, list):
        return [_encode_value(x, depth + 1) for x in v]
    if isinstance(v, tuple):
        return {"tuple": [_encode_value(x, depth + 1) for x in v]}
    if isinstance(v, dict):
        return {"dict": [[_encode_value(k, depth + 1), _encode_value(x, depth + 1)]
                         for k, x in v.items()]}
    raise _Unrepresentable


_UNSET = object()


def _decode_value(j, where, depth=0):
    if depth > _MAX_NESTING:
        _fail(f"{where} is nested too deeply")
    if j is None or isinstance(j, (bool, str)) or _is_int(j):
        return j
    if isinstance(j, float):
        if not math.isfinite(j):
            _fail(f"{where} has an out-of-range number")
        return j
    if isinstance(j, list):
        return [_decode_value(x, where, depth + 1) for x in j]
    if isinstance(j, dict) and len(j) == 1:
        (tag, body), = j.items()
        if tag == "tuple" and isinstance(body, list):
            return tuple(_decode_value(x, where, depth + 1) for x in body)
        if tag == "dict" and isinstance(body, list):
            out = {}
            for item in body:
                if not isinstance(item, list) or len(item) != 2:
                    _fail(f"{where}: a dict item must be a [key, value] pair")
                key = _decode_value(item[0], where, depth + 1)
                try:
                    hash(key)
                except TypeError:
                    _fail(f"{where}: a dict key must be hashable, got {type(key).__name__}")
                out[key] = _decode_value(item[1], where, depth + 1)
            return out
        if tag == "float" and body in ("nan", "inf", "-inf"):
            return float(body)
        if tag == "unrepresentable" and isinstance(body, str):
            return _UNSET
    _fail(f"{where} is not a valid parameter value")


# ----------------------------------------------------------------- class labels
_CLASS_DTYPE = re.compile(r"^(\|b1|\|[iu]1|<[iu][248]|<f[248]|<U[0-9]{1,8}|\|S[0-9]{1,8}|\|O)$")


def _encode_classes(classes):
    c = np.asarray(classes)
    if c.ndim != 1 or c.shape[0] != 2:
        raise ValueError(f"classes_ must hold 2 labels, got shape {c.shape}")
    kind = c.dtype.kind
    if kind in "biu" or (kind == "f" and c.dtype.itemsize <= 8):
        dt = c.dtype.newbyteorder("<").str
        if kind == "f" and not np.isfinite(c).all():
            raise ValueError("classes_ must be finite")
        return {"dtype": dt, "values": c.tolist()}
    if kind == "U":
        return {"dtype": c.dtype.newbyteorder("<").str, "values": [str(v) for v in c]}
    if kind == "S":
        return {"dtype": c.dtype.str, "values": [bytes(v).decode("latin-1") for v in c]}
    if kind == "O":
        values, types = [], []
        for v in c:
            if isinstance(v, (bool, np.bool_)):
                values.append(bool(v)); types.append("bool")
            elif isinstance(v, str):
                values.append(str(v)); types.append("str")
            elif isinstance(v, numbers.Integral):
                values.append(int(v)); types.append("int")
            elif isinstance(v, numbers.Real) and math.isfinite(float(v)):
                values.append(float(v)); types.append("float")
            else:
                raise ValueError(
                    f"cannot save the class label {v!r} of type {type(v).__name__}; "
                    "labels must be str, int, float or bool"
                )
        return {"dtype": "|O", "values": values, "types": types}
    raise ValueError(f"cannot save class labels of dtype {c.dtype}")


def _decode_classes(obj):
    if not isinstance(obj, dict):
        _fail("header 'classes' must be an object")
    dt_str, values = obj.get("dtype"), obj.get("values")
    if not isinstance(dt_str, str) or not _CLASS_DTYPE.match(dt_str):
        _fail(f"unsupported class label dtype {dt_str!r}")
    if not isinstance(values, list) or len(values) != 2:
        _fail("a binary model needs exactly 2 class labels")
    dt = np.dtype(dt_str)
    kind = dt.kind
    if kind == "b":
        if not all(isinstance(v, bool) for v in values):
            _fail("class labels of dtype bool must be true/false")
        out = np.array(values, dtype=dt)
    elif kind in "iu":
        info = np.iinfo(dt)
        if not all(_is_int(v) and info.min <= v <= info.max for v in values):
            _fail(f"class labels of dtype {dt_str} must be integers in its range")
        out = np.array(values, dtype=dt)
    elif kind == "f":
        if not all(_is_number(v) for v in values):
            _fail(f"class labels of dtype {dt_str} must be numbers")
        with np.errstate(over="ignore"):
            out = np.array(values, dtype=dt)
        if not np.isfinite(out).all():
            _fail("class labels must be finite")
    elif kind in "US":
        width = dt.itemsize // (4 if kind == "U" else 1)
        if not 1 <= width <= MAX_LABEL_WIDTH:
            _fail(f"class label width {width} is out of range")
        if not all(isinstance(v, str) and len(v) <= width for v in values):
            _fail(f"class labels of dtype {dt_str} must be strings of at most {width} characters")
        if kind == "S":
            try:
                values = [v.encode("latin-1") for v in values]
            except UnicodeEncodeError:
                _fail("byte-string class labels must be latin-1 text")
        out = np.array(values, dtype=dt)
    else:  # object
        types = obj.get("types")
        if not isinstance(types, list) or len(types) != 2:
            _fail("object class labels need a 'types' list of 2 entries")
        checks = {"bool": lambda v: isinstance(v, bool), "str": lambda v: isinstance(v, str),
                  "int": _is_int, "float": _is_number}
        out = np.empty(2, dtype=object)
        for i, (v, t) in enumerate(zip(values, types)):
            if t not in checks or not checks[t](v):
                _fail(f"class label {i} does not match its type {t!r}")
            if t == "float":
                v = float(v)
                if not math.isfinite(v):
                    _fail("class labels must be finite")
            out[i] = v
    try:
        distinct = bool(out[0] != out[1])
    except Exception:  # noqa: BLE001 - incomparable objects
        distinct = False
    if not distinct:
        _fail(f"the 2 class labels must be distinct, got {out.tolist()!r}")
    return out


# ------------------------------------------------------------------ validation
def _first(mask):
    return int(np.flatnonzero(mask)[0])


def validate_trees(cols, offsets, n_features):
    """Check that node columns and tree offsets form valid trees; raise otherwise.

    Parameters
    ----------
    cols : dict of name -> 1-D array
        The node columns of ``NODE_COLUMNS`` (native byte order), all of one length.
    offsets : int64 array of shape (n_trees + 1,)
    n_features : int

    Raises
    ------
    ModelFormatError
        With the tree and (tree-relative) node of the first problem found.
    """
    n_nodes = cols["feature"].shape[0]
    offsets = np.asarray(offsets, dtype=np.int64)
    if offsets.ndim != 1 or offsets.shape[0] < 1:
        _fail("tree_offsets must have n_trees + 1 >= 1 entries")
    if offsets[0] != 0:
        _fail(f"tree_offsets must start at 0, got {offsets[0]}")
    if offsets[-1] != n_nodes:
        _fail(f"tree_offsets must end at the number of nodes {n_nodes}, got {offsets[-1]}")
    sizes = np.diff(offsets)
    if (sizes < 1).any():
        t = _first(sizes < 1)
        _fail(f"tree_offsets must be strictly increasing (tree {t} has {sizes[t]} nodes)")
    if (sizes > _INT32_MAX).any():
        _fail("a tree has more nodes than int32 child indices can address")
    n_trees = sizes.shape[0]
    tree_of = np.repeat(np.arange(n_trees, dtype=np.int64), sizes)
    start = offsets[:-1][tree_of]
    local = np.arange(n_nodes, dtype=np.int64) - start
    size = sizes[tree_of]

    def where(i):
        return f"tree {int(tree_of[i])}, node {int(local[i])}"

    feature = cols["feature"].astype(np.int64)
    left = cols["left"].astype(np.int64)
    right = cols["right"].astype(np.int64)
    leaf = feature == -1
    inner = feature >= 0
    if not (leaf | inner).all():
        i = _first(~(leaf | inner))
        _fail(f"{where(i)}: feature id {feature[i]} is invalid (-1 marks a leaf)")
    if (feature >= n_features).any():
        i = _first(feature >= n_features)
        _fail(f"{where(i)}: feature id {feature[i]} is out of range "
              f"(the model has {n_features} features)")
    bad = leaf & ((left != -1) | (right != -1))
    if bad.any():
        i = _first(bad)
        _fail(f"{where(i)}: a leaf (feature -1) must have children -1, got "
              f"{left[i]} and {right[i]}")
    for name, child in (("left", left), ("right", right)):
        bad = inner & ((child <= local) | (child >= size))
        if bad.any():
            i = _first(bad)
            _fail(f"{where(i)}: {name} child {child[i]} must point forward within the "
                  f"tree (> {local[i]} and < {size[i]})")
    bad = inner & (left == right)
    if bad.any():
        i = _first(bad)
        _fail(f"{where(i)}: left and right child are the same node {left[i]}")
    # Each non-root node is the child of exactly one node, the root of none. With
    # children after their parents this makes every tree a tree (no cycle, no
    # unreachable or shared node).
    parent = np.flatnonzero(inner)
    children = np.concatenate([start[parent] + left[parent], start[parent] + right[parent]])
    refs = np.bincount(children, minlength=n_nodes)
    expected = (local != 0).astype(np.int64)
    if (refs != expected).any():
        i = _first(refs != expected)
        _fail(f"{where(i)}: node is the child of {refs[i]} nodes (expected {expected[i]}); "
              "the nodes do not form a tree")
    depth = cols["depth"].astype(np.int64)
    if (depth[local == 0] != 0).any():
        i = _first((local == 0) & (depth != 0))
        _fail(f"{where(i)}: the root must have depth 0, got {depth[i]}")
    want = np.minimum(depth[parent] + 1, 255)
    for child in (start[parent] + left[parent], start[parent] + right[parent]):
        bad = depth[child] != want
        if bad.any():
            i = int(child[_first(bad)])
            _fail(f"{where(i)}: depth {depth[i]} is not its parent's depth + 1")
    missing = cols["missing_go_left"]
    if (missing > 1).any():
        i = _first(missing > 1)
        _fail(f"{where(i)}: missing_go_left must be 0 or 1, got {missing[i]}")
    for name in ("value", "improvement", "weighted_n"):
        bad = ~np.isfinite(cols[name])
        if bad.any():
            i = _first(bad)
            _fail(f"{where(i)}: {name} must be finite, got {cols[name][i]!r}")
    for name in ("improvement", "weighted_n"):  # sums of squares and of weights
        bad = cols[name] < 0
        if bad.any():
            i = _first(bad)
            _fail(f"{where(i)}: {name} must be >= 0, got {cols[name][i]!r}")
    threshold = cols["threshold"]
    bad = np.isnan(threshold) | (threshold == -np.inf)
    if bad.any():
        i = _first(bad)
        _fail(f"{where(i)}: threshold must be finite or +inf, got {threshold[i]!r}")
    t32 = _float32_at_most(threshold)
    bad = t32.view(np.uint32) != cols["threshold32"].astype(np.float32).view(np.uint32)
    if bad.any():
        i = _first(bad)
        _fail(f"{where(i)}: threshold32 {cols['threshold32'][i]!r} is not the largest "
              f"float32 <= threshold {threshold[i]!r} (expected {t32[i]!r})")
    if (cols["n_samples"] < 0).any():
        i = _first(cols["n_samples"] < 0)
        _fail(f"{where(i)}: n_samples must be >= 0, got {cols['n_samples'][i]}")


# --------------------------------------------------------------------- writing
def _serialize(model):
    """Return (bytes, unrepresentable params) of a fitted model."""
    model._check_fitted()
    names = set(NODE_DTYPE.names)
    if names != {name for name, _ in NODE_COLUMNS}:
        raise RuntimeError(
            "the node layout (node_t) no longer matches the model format's columns; "
            "update gbc_core._model_io.NODE_COLUMNS and the format version"
        )
    nodes = np.asarray(model._nodes)
    offsets = np.asarray(model._tree_offsets, dtype=np.int64)
    n_features = int(model.n_features_in_)
    learning_rate = float(model.learning_rate)
    init_raw = float(model.init_raw_)
    if not (math.isfinite(learning_rate) and learning_rate > 0):
        raise ValueError(f"cannot save a model with learning_rate={model.learning_rate!r}")
    if not math.isfinite(init_raw):
        raise ValueError(f"cannot save a model with init_raw_={init_raw!r}")
    if not 1 <= n_features <= _INT32_MAX:
        raise ValueError(f"cannot save a model with n_features_in_={n_features}")

    params, unrepresentable = {}, {}
    for key, value in model.get_params(deep=False).items():
        try:
            params[key] = _encode_value(value)
        except _Unrepresentable:
            params[key] = {"unrepresentable": type(value).__name__}
            unrepresentable[key] = value
    # The loader checks the decoded parameters; do the same now, so that a saved file
    # always loads (e.g. after an invalid ``set_params`` on a fitted model).
    check = type(model)()
    check.set_params(**{k: (None if v is _UNSET else v) for k, v in (
        (k, _decode_value(v, k)) for k, v in params.items())})
    try:
        _check_params(check, n_features)
    except ModelFormatError as exc:
        raise ValueError(f"cannot save the model: {exc}") from None
    feature_names = getattr(model, "feature_names_in_", None)
    if feature_names is not None:
        feature_names = list(feature_names)
        if len(feature_names) != n_features or not all(isinstance(s, str) for s in feature_names):
            raise ValueError("feature_names_in_ must hold one string per feature")
        feature_names = [str(s) for s in feature_names]
    best = getattr(model, "best_iteration_", None)

    arrays = [("tree_offsets", offsets)]
    arrays += [("nodes." + name, nodes[name]) for name, _ in NODE_COLUMNS]
    arrays.append(("train_score", np.asarray(model.train_score_, dtype=np.float64)))
    if getattr(model, "validation_score_", None) is not None:
        arrays.append(("validation_score",
                       np.asarray(model.validation_score_, dtype=np.float64)))
    # Check what we write with the loader's own rules: a saved file always loads.
    validate_trees({name: nodes[name] for name, _ in NODE_COLUMNS}, offsets, n_features)

    descriptors, chunks, pos = [], [], 0
    for name, arr in arrays:
        dt = np.dtype(_ARRAY_DTYPES[name])
        raw = np.ascontiguousarray(arr, dtype=dt).tobytes()
        pos = _align(pos)
        descriptors.append({"name": name, "dtype": dt.str, "length": int(arr.shape[0]),
                            "offset": pos, "nbytes": len(raw)})
        chunks.append((pos, raw))
        pos += len(raw)
    payload_size = _align(pos)
    payload = bytearray(payload_size)
    for at, raw in chunks:
        payload[at: at + len(raw)] = raw

    header = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "estimator": ESTIMATOR_NAME,
        "params": params,
        "n_features": n_features,
        "feature_names": feature_names,
        "classes": _encode_classes(model.classes_),
        "init_raw": init_raw,
        "learning_rate": learning_rate,
        "n_trees": int(offsets.shape[0] - 1),
        "n_nodes": int(nodes.shape[0]),
        "best_iteration": None if best is None else int(best),
        "payload_size": payload_size,
        "arrays": descriptors,
    }
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False).encode("ascii")
    if len(text) > MAX_HEADER_SIZE:
        raise ValueError(f"the model header would be {len(text)} bytes, more than the "
                         f"format's limit of {MAX_HEADER_SIZE}")
    head = _PRELUDE.pack(MAGIC, FORMAT_VERSION, len(text)) + text
    head += b"\0" * (_align(len(head)) - len(head))
    body = head + bytes(payload)
    return body + hashlib.sha256(body).digest(), unrepresentable


def model_to_bytes(model):
    """The model in the gbc-core model format (see ``docs/model_format.md``)."""
    data, unrepresentable = _serialize(model)
    if unrepresentable:
        warnings.warn(
            "hyper-parameter(s) "
            + ", ".join(f"{k}={type(v).__name__}" for k, v in unrepresentable.items())
            + " cannot be stored in the model format and load as None",
            UserWarning, stacklevel=3,
        )
    return data


#: ``os.write``, looked up at call time (a test seam to make a save fail half-way).
_os_write = os.write


def _atomic_write(path, data):
    """Write ``data`` to ``path`` atomically: temporary file, fsync, ``os.replace``
    (the rules are those of ``_atomic.AtomicFile``)."""
    output = AtomicFile(path)
    try:
        view = memoryview(data)
        while view:
            written = _os_write(output.fd, view[: 1 << 20])
            view = view[written:]
        output.commit()
    except BaseException:
        output.discard()
        raise


def save_model(model, path):
    """Write ``model`` to ``path`` atomically, or to a binary file object."""
    data = model_to_bytes(model)
    if hasattr(path, "write"):
        path.write(data)
        return
    _atomic_write(path, data)


# --------------------------------------------------------------------- reading
def _no_constants(name):
    _fail(f"the header contains the non-JSON number {name}")


def _unique_keys(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            _fail(f"the header repeats the key {key!r}")
        out[key] = value
    return out


def _parse(data):
    """Check the envelope of ``data``; return (header dict, payload memoryview)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected bytes, got {type(data).__name__}")
    data = memoryview(data).cast("B")
    n = len(data)
    if bytes(data[: len(MAGIC)]) != MAGIC[:n]:
        _fail("not a gbc-core model file (wrong magic bytes)")
    if n < _PRELUDE.size:
        _fail(f"truncated model file ({n} bytes)")
    _, version, header_len = _PRELUDE.unpack_from(data, 0)
    if version != FORMAT_VERSION:
        if version > FORMAT_VERSION:
            _fail(f"the model file has format version {version}, newer than the "
                  f"version {FORMAT_VERSION} this gbc-core {__version__} reads; "
                  "upgrade gbc-core")
        _fail(f"invalid model format version {version}")
    if header_len > MAX_HEADER_SIZE:
        _fail(f"the header length {header_len} exceeds the limit of {MAX_HEADER_SIZE} bytes")
    payload_start = _align(_PRELUDE.size + header_len)
    if n < payload_start + _DIGEST_SIZE:
        _fail(f"truncated model file ({n} bytes, the header alone needs "
              f"{payload_start + _DIGEST_SIZE})")
    body_end = n - _DIGEST_SIZE
    if hashlib.sha256(data[:body_end]).digest() != bytes(data[body_end:]):
        _fail("checksum mismatch: the model file is corrupt or truncated")
    try:
        text = bytes(data[_PRELUDE.size: _PRELUDE.size + header_len]).decode("utf-8")
        header = json.loads(text, parse_constant=_no_constants,
                            object_pairs_hook=_unique_keys)
    except ModelFormatError:
        raise
    except (ValueError, RecursionError) as exc:
        _fail(f"the header is not valid JSON: {exc}")
    if not isinstance(header, dict):
        _fail("the header must be a JSON object")
    if header.get("format") != FORMAT_NAME:
        _fail(f"header 'format' must be {FORMAT_NAME!r}, got {header.get('format')!r}")
    if header.get("format_version") != version or isinstance(header.get("format_version"), bool):
        _fail("header 'format_version' does not match the file's format version")
    payload_size = header.get("payload_size")
    if not _is_int(payload_size) or payload_size != body_end - payload_start:
        _fail(f"header 'payload_size' {payload_size!r} does not match the file "
              f"({body_end - payload_start} payload bytes)")
    return header, data[payload_start:body_end]


def _int_field(header, key, low, high, allow_none=False):
    v = header.get(key)
    if v is None and allow_none:
        return None
    if not _is_int(v) or not low <= v <= high:
        _fail(f"header {key!r} must be an integer in [{low}, {high}], got {v!r}")
    return v


def _float_field(header, key):
    v = header.get(key)
    if not _is_number(v) or not math.isfinite(float(v)):
        _fail(f"header {key!r} must be a finite number, got {v!r}")
    return float(v)


def _read_arrays(header, payload):
    descriptors = header.get("arrays")
    if not isinstance(descriptors, list):
        _fail("header 'arrays' must be a list")
    size = len(payload)
    arrays, spans = {}, []
    for d in descriptors:
        if not isinstance(d, dict):
            _fail("each array descriptor must be an object")
        name = d.get("name")
        if not isinstance(name, str):
            _fail("an array descriptor has no name")
        if name in arrays:
            _fail(f"array {name!r} is described twice")
        length, offset, nbytes = d.get("length"), d.get("offset"), d.get("nbytes")
        if not all(_is_int(v) and 0 <= v <= size for v in (length, offset, nbytes)):
            _fail(f"array {name!r}: length, offset and nbytes must be integers within "
                  f"the {size}-byte payload, got {length!r}, {offset!r}, {nbytes!r}")
        if offset + nbytes > size:
            _fail(f"array {name!r} ends at byte {offset + nbytes}, past the "
                  f"{size}-byte payload")
        spans.append((offset, offset + nbytes, name))
        if name not in _ARRAY_DTYPES:
            continue  # written by a later minor revision: ignored
        dt = np.dtype(_ARRAY_DTYPES[name])
        if d.get("dtype") != dt.str:
            _fail(f"array {name!r} must have dtype {dt.str!r}, got {d.get('dtype')!r}")
        if nbytes != length * dt.itemsize:
            _fail(f"array {name!r}: nbytes {nbytes} is not length {length} x "
                  f"{dt.itemsize} bytes")
        arrays[name] = np.frombuffer(payload, dtype=dt, count=length, offset=offset) \
            .astype(dt.newbyteorder("="))
    spans.sort()
    for (s0, e0, n0), (s1, e1, n1) in zip(spans, spans[1:]):
        if s1 < e0:
            _fail(f"arrays {n0!r} and {n1!r} overlap")
    missing = [k for k in _ARRAY_DTYPES if k not in arrays and k not in _OPTIONAL_ARRAYS]
    if missing:
        _fail(f"the model file lacks the array(s) {missing}")
    return arrays


def _decode_params(header, cls):
    raw = header.get("params")
    if not isinstance(raw, dict):
        _fail("header 'params' must be an object")
    known = set(cls._get_param_names())
    params, unknown = {}, []
    for key, value in raw.items():
        if key not in known:
            unknown.append(key)
            continue
        value = _decode_value(value, f"parameter {key!r}")
        params[key] = None if value is _UNSET else value
    if unknown:
        warnings.warn(
            f"the model file has parameter(s) {sorted(unknown)} unknown to gbc-core "
            f"{__version__}; they are ignored", UserWarning, stacklevel=4,
        )
    return params


def _check_params(model, n_features):
    rs = model.random_state
    if rs is not None and not (_is_int(rs) and rs >= 0):
        _fail(f"invalid hyper-parameter: random_state={rs!r}")
    nj = model.n_jobs
    limit = max(1024, os.cpu_count() or 1)
    if nj is not None and _is_int(nj) and abs(nj) > limit:
        _fail(f"invalid hyper-parameter: n_jobs={nj} (|n_jobs| must "
              f"be <= {limit})")
    try:
        model._validate_params(2, n_features)
    except (ValueError, TypeError) as exc:
        _fail(f"invalid hyper-parameter: {exc}")


def model_from_bytes(data, cls=None):
    """Rebuild a model from the bytes of :func:`model_to_bytes`, validating everything."""
    if cls is None:
        from ._classifier import GradientBoostingClassifier as cls
    header, payload = _parse(data)
    if header.get("estimator") != ESTIMATOR_NAME:
        _fail(f"header 'estimator' must be {ESTIMATOR_NAME!r}, got {header.get('estimator')!r}")
    n_features = _int_field(header, "n_features", 1, _INT32_MAX)
    n_trees = _int_field(header, "n_trees", 0, len(payload))
    n_nodes = _int_field(header, "n_nodes", 0, len(payload))
    best = _int_field(header, "best_iteration", 0, _INT32_MAX, allow_none=True)
    init_raw = _float_field(header, "init_raw")
    learning_rate = _float_field(header, "learning_rate")
    if learning_rate <= 0:
        _fail(f"header 'learning_rate' must be > 0, got {learning_rate!r}")
    if not isinstance(header.get("library_version", ""), str):
        _fail("header 'library_version' must be a string")
    classes = _decode_classes(header.get("classes"))
    names = header.get("feature_names")
    if names is not None:
        if not isinstance(names, list) or len(names) != n_features or not all(
                isinstance(s, str) for s in names):
            _fail(f"header 'feature_names' must be null or {n_features} strings")
        names = np.asarray(names, dtype=object)
    params = _decode_params(header, cls)

    arrays = _read_arrays(header, payload)
    offsets = arrays["tree_offsets"]
    if offsets.shape[0] != n_trees + 1:
        _fail(f"tree_offsets has {offsets.shape[0]} entries, expected n_trees + 1 = "
              f"{n_trees + 1}")
    cols = {}
    for name, _ in NODE_COLUMNS:
        col = arrays["nodes." + name]
        if col.shape[0] != n_nodes:
            _fail(f"array 'nodes.{name}' has {col.shape[0]} entries, expected n_nodes = "
                  f"{n_nodes}")
        cols[name] = col
    validate_trees(cols, offsets, n_features)
    if n_trees:
        # The bound of |F(x)| over every x the trainer keeps (an overflowing raw
        # score would make inf - inf = NaN probabilities).
        with np.errstate(over="ignore"):
            per_tree = np.maximum.reduceat(np.abs(cols["value"]), offsets[:-1])
            bound = abs(init_raw) + learning_rate * float(np.sum(per_tree))
        if not bound <= RAW_SCORE_LIMIT:
            _fail(f"the raw scores can overflow: |init_raw| + learning_rate x the largest "
                  f"|leaf value| of each tree is {bound!r} > {RAW_SCORE_LIMIT:.0e}")

    model = cls()
    try:
        model.set_params(**params)
    except (ValueError, TypeError) as exc:
        _fail(f"invalid hyper-parameters in the model file: {exc}")
    if "learning_rate" in params and (not _is_number(params["learning_rate"])
                                      or float(params["learning_rate"]) != learning_rate):
        _fail("parameter 'learning_rate' does not match the header's learning_rate")
    model.learning_rate = params.get("learning_rate", learning_rate)
    _check_params(model, n_features)

    nodes = np.zeros(n_nodes, dtype=NODE_DTYPE)
    for name, _ in NODE_COLUMNS:
        nodes[name] = cols[name]
    model.classes_ = classes
    model.n_features_in_ = n_features
    if names is not None:
        model.feature_names_in_ = names
    model.init_raw_ = init_raw
    model._set_trees([nodes[offsets[t]: offsets[t + 1]] for t in range(n_trees)])
    model.train_score_ = arrays["train_score"]
    if "validation_score" in arrays:
        model.validation_score_ = arrays["validation_score"]
    model.best_iteration_ = best
    return model


def load_model(path, cls=None):
    """Read a model saved by ``save`` from a path or a binary file object."""
    if hasattr(path, "read"):
        data = path.read()
    else:
        with open(path, "rb") as fh:
            data = fh.read()
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError("the file object must be opened in binary mode")
    return model_from_bytes(data, cls)


# -------------------------------------------------------------------- pickling
def get_state(model):
    """Pickle state: the format's bytes for a fitted model, else the plain __dict__.

    Hyper-parameters the format cannot hold (e.g. a ``RandomState``) and attributes
    outside the format are carried alongside, so a pickle round trip is exact.
    """
    plain = model.__dict__.copy()
    plain.pop("_predictor_cache", None)
    if not model._is_fitted():
        return plain
    try:
        data, unrepresentable = _serialize(model)
    except ValueError:
        # Content the format cannot hold (e.g. datetime class labels): pickle as is.
        return plain
    params = set(model.get_params(deep=False))
    extra = {k: v for k, v in model.__dict__.items()
             if k not in _MODEL_ATTRS and k not in params}
    return {_PICKLE_KEY: data, "params": unrepresentable, "attributes": extra}


def set_state(model, state):
    """Inverse of :func:`get_state` (also accepts a plain ``__dict__`` state)."""
    if isinstance(state, dict) and _PICKLE_KEY in state:
        loaded = model_from_bytes(state[_PICKLE_KEY], type(model))
        model.__dict__.update(loaded.__dict__)
        model.__dict__.update(state.get("params") or {})
        model.__dict__.update(state.get("attributes") or {})
        return
    state = dict(state)
    state.pop("_sklearn_version", None)
    state.pop("_predictor_cache", None)
    model.__dict__.update(state)
