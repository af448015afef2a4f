"""Saving and loading fitted models in a versioned, self-checking binary format.

The format is data, not code: a fixed prelude, a JSON header and raw little-endian
column arrays, closed by a SHA-256 checksum. It is specified in
``docs/model_format.md``; in short::

    offset 0    magic            8 bytes  b"\\x89GBC\\r\\n\\x1a\\n"
    offset 8    format version   uint32 little-endian (this module writes 3, or 4 for a
                                 model with categorical features; reads 1 to 4)
    offset 12   header length H  uint32 little-endian
    offset 16   header           H bytes of UTF-8 JSON (an object)
                padding          zero bytes up to the next multiple of 8 (offset P)
    offset P    payload          ``header["payload_size"]`` bytes of arrays
    last 32     SHA-256 digest of every byte before it

The file serializes an :class:`~gbc_core.Ensemble` (the trees, the number of outputs,
the initial raw scores, the learning rate, the number of features) and what a
classifier adds to it (the loss, which maps raw scores to probabilities, class
labels, feature names, hyper-parameters, the record of the fit) and, in version 4,
the categorical features, their category sets and categories. Loading checks
everything before a kernel sees it (the ensemble validates its trees and sets) and
raises :class:`ModelFormatError` for any corrupt, truncated or crafted input; a file
is read no further than its header declares.

This module knows the format only: ``Booster`` (``_booster.py``) turns its content
into a model.
"""

import hashlib
import io
import json
import math
import numbers
import os
import re
import struct
import warnings

import numpy as np

from ._safe_output import AtomicFile
from ._common import NODE_DTYPE
from ._ensemble import CATEGORY_SET_WORDS, MAX_CATEGORY_CODES, Ensemble
from ._loss import lookup_loss, loss_for, loss_names
from ._validation import MAX_FEATURES
from ._params import BY_NAME as PARAM_RULES
from ._version import __version__

MAGIC = b"\x89GBC\r\n\x1a\n"
FORMAT_NAME = "gbc-core-model"
#: The newest version this module writes (a model with categorical features); it
#: reads every version up to it.
FORMAT_VERSION = 4
#: The version of a model without categorical features: version 3, the same bytes
#: as before version 4 existed (every gbc-core that reads version 3 reads it).
NUMERIC_FORMAT_VERSION = 3
#: The first version with categorical features (``categorical_features``,
#: ``n_category_sets``, ``categories`` and the ``category_sets`` array).
CATEGORICAL_FORMAT_VERSION = 4
ESTIMATOR_NAME = "GradientBoostingClassifier"

_PRELUDE = struct.Struct("<8sII")
_DIGEST_SIZE = 32
_ALIGN = 8
#: Largest accepted JSON header (the header holds feature names, so it can be long).
MAX_HEADER_SIZE = 64 * 1024 * 1024
#: Largest accepted width of string class labels (characters).
MAX_LABEL_WIDTH = 1 << 20
#: Most class labels a model may have.
MAX_CLASSES = 1 << 16
#: Most bytes the class labels of fixed-width dtypes (``<U``, ``|S``) may take as an
#: array (n_classes x width x bytes per character): the dtype a header declares is
#: allocated, so it is bounded before that.
MAX_LABEL_BYTES = 1 << 28
#: Most category sets (rows of ``category_sets``, 32 bytes each) a model may have:
#: a limit far beyond any model (a set per categorical split), checked before the
#: table is read.
MAX_CATEGORY_SETS = 1 << 26
#: Bytes read at a time from a file (a crafted header cannot make us allocate more
#: than the file holds).
_READ_CHUNK = 16 << 20
_MAX_NESTING = 32
_INT32_MAX = 2**31 - 1
_INT64_MIN, _INT64_MAX = -2**63, 2**63 - 1

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
#: Per-iteration records of the fit, stored as arrays.
RECORD_ARRAYS = ("train_score", "validation_score", "oob_scores", "oob_improvement")
_ARRAY_DTYPES = {"tree_offsets": "<i8"}
_ARRAY_DTYPES.update({name: "<f8" for name in RECORD_ARRAYS})
_ARRAY_DTYPES.update({"nodes." + name: dt for name, dt in NODE_COLUMNS})
#: Version 4: the category sets, row after row (``n_category_sets`` x 8 words).
_ARRAY_DTYPES["category_sets"] = "<u4"
#: Arrays a file may leave out: records a model may not have (a model built from
#: given trees has no training record).
OPTIONAL_ARRAYS = set(RECORD_ARRAYS)
#: Arrays of version 4 only (required there, refused in older versions).
CATEGORICAL_ARRAYS = {"category_sets"}
#: Header keys of version 4 only (refused in older versions).
CATEGORICAL_KEYS = ("categorical_features", "n_category_sets", "categories")
#: The header's ``record_units``: the record arrays are in scikit-learn's units (the
#: loss times the loss's ``score_factor``: twice the mean log-loss for two classes
#: and the log-loss). Files without the key (written before it) hold the loss
#: itself; the reader converts them.
RECORD_UNITS = "scikit-learn"


class ModelFormatError(ValueError):
    """A model file or byte string is not a valid gbc-core model.

    Raised for wrong magic bytes, an unsupported format version, a checksum
    mismatch, truncation, and any inconsistent content (array lengths, tree
    structure, feature ids, non-finite values, class labels, hyper-parameters).

    Examples
    --------
    >>> import gbc_core
    >>> try:
    ...     gbc_core.from_bytes(b"not a model")
    ... except gbc_core.ModelFormatError as exc:
    ...     print(type(exc).__name__, isinstance(exc, ValueError))
    ModelFormatError True
    """


def _fail(msg):
    raise ModelFormatError(msg)


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
    if isinstance(v, np.ndarray) and v.ndim == 1 and v.dtype.kind in "biuf":
        # A 1-D array of numbers (e.g. monotonic_cst=np.array([1, 0, -1])): a list.
        return [_encode_value(x, depth + 1) for x in v.tolist()]
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


def _check_sorted(values):
    """ValueError unless the labels ``values`` (Python scalars) strictly increase."""
    if any(not a < b for a, b in zip(values, values[1:])):
        raise ValueError(f"the class labels must be distinct and sorted in increasing "
                         f"order (as a fit sorts them), got {values[:10]!r}")


def _encode_classes(classes):
    c = np.asarray(classes)
    if c.ndim != 1 or not 2 <= c.shape[0] <= MAX_CLASSES:
        raise ValueError(f"classes_ must hold 2 to {MAX_CLASSES} labels, got shape {c.shape}")
    kind = c.dtype.kind
    if kind in "biuUS" or kind == "f" and c.dtype.itemsize <= 8:
        _check_sorted(c.tolist())
    if kind in "biu" or (kind == "f" and c.dtype.itemsize <= 8):
        dt = c.dtype.newbyteorder("<").str
        if kind == "f" and not np.isfinite(c).all():
            raise ValueError("classes_ must be finite")
        return {"dtype": dt, "values": c.tolist()}
    if kind in "US" and c.dtype.itemsize // (4 if kind == "U" else 1) > MAX_LABEL_WIDTH:
        raise ValueError(f"class labels longer than {MAX_LABEL_WIDTH} characters cannot be "
                         "stored in a model file")
    if kind in "US" and c.nbytes > MAX_LABEL_BYTES:
        raise ValueError(f"the class labels take {c.nbytes:,} bytes as an array of dtype "
                         f"{c.dtype} (at most {MAX_LABEL_BYTES:,} can be stored): convert y "
                         "to a narrower dtype (e.g. y.astype(str) keeps the longest label's "
                         "width) or to objects")
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
                if not _INT64_MIN <= int(v) <= _INT64_MAX:
                    raise ValueError(
                        f"the class label {v!r} is beyond 64-bit integers; an integer "
                        "label must fit int64 (a file, a column of scores, NumPy hold "
                        "it): convert y, e.g. with y.astype(str)")
                values.append(int(v)); types.append("int")
            elif isinstance(v, numbers.Real) and math.isfinite(float(v)):
                values.append(float(v)); types.append("float")
            else:
                raise ValueError(
                    f"the class label {v!r} of type {type(v).__name__} cannot be stored in "
                    "a model file; labels must be str, int, float or bool (convert y, "
                    "e.g. with y.astype(str))"
                )
        kinds = {"number" if t in ("int", "float") else t for t in types}
        if len(kinds) > 1:
            raise ValueError(
                f"class labels mixing {' and '.join(sorted(kinds))} values cannot be "
                "stored in a model file (True would equal 1, and such labels do not "
                "sort): labels must be all strings, all booleans or all numbers")
        _check_sorted(values)
        return {"dtype": "|O", "values": values, "types": types}
    raise ValueError(f"class labels of dtype {c.dtype} cannot be stored in a model file; "
                     "labels must be str, int, float or bool (convert y, e.g. with "
                     "y.astype(str))")


def check_labels(classes):
    """Raise a ValueError naming the problem if the format cannot store these class
    labels (a fit checks its labels so that its model can always be saved)."""
    _encode_classes(classes)


def _decode_classes(obj, n_classes):
    """The ``n_classes`` labels of the header's ``classes`` object, checked."""
    if not isinstance(obj, dict):
        _fail("header 'classes' must be an object")
    dt_str, values = obj.get("dtype"), obj.get("values")
    if not isinstance(dt_str, str) or not _CLASS_DTYPE.match(dt_str):
        _fail(f"unsupported class label dtype {dt_str!r}")
    if not isinstance(values, list) or len(values) != n_classes:
        _fail(f"the model needs {n_classes} class labels, the header has "
              f"{len(values) if isinstance(values, list) else 'none'}")
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
        if n_classes * dt.itemsize > MAX_LABEL_BYTES:
            _fail(f"{n_classes} class labels of dtype {dt_str} would take "
                  f"{n_classes * dt.itemsize:,} bytes (at most {MAX_LABEL_BYTES:,})")
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
        if not isinstance(types, list) or len(types) != n_classes:
            _fail(f"object class labels need a 'types' list of {n_classes} entries")
        checks = {"bool": lambda v: isinstance(v, bool), "str": lambda v: isinstance(v, str),
                  "int": _is_int, "float": _is_number}
        out = np.empty(n_classes, dtype=object)
        for i, (v, t) in enumerate(zip(values, types)):
            if t not in checks or not checks[t](v):
                _fail(f"class label {i} does not match its type {t!r}")
            if t == "float":
                v = float(v)
                if not math.isfinite(v):
                    _fail("class labels must be finite")
            out[i] = v
        kinds = {"number" if t in ("int", "float") else t for t in types}
        if len(kinds) > 1:
            _fail(f"object class labels must be all strings, all booleans or all numbers "
                  f"(a fit never mixes them), got the types {sorted(set(types))}")
        if "int" in types and not all(_INT64_MIN <= v <= _INT64_MAX for v in values
                                      if _is_int(v)):
            _fail("object integer class labels must fit int64")
    try:
        distinct = len({v.item() if hasattr(v, "item") else v for v in out}) == n_classes
    except TypeError:  # unhashable objects
        distinct = False
    if not distinct:
        _fail(f"the {n_classes} class labels must be distinct, got {out.tolist()[:10]!r}")
    listed = out.tolist()
    if any(not a < b for a, b in zip(listed, listed[1:])):
        _fail(f"the class labels must be sorted in increasing order (as a fit sorts "
              f"them), got {listed[:10]!r}")
    return out


# ---------------------------------------------------- categorical features (v4)
def _decode_categories(obj, features):
    """The header's ``categories`` (null, or per categorical feature in ``features``
    its categories: all strings or all finite numbers, sorted and distinct), checked:
    {feature: its categories (str, or float for numbers)}, or None."""
    if obj is None:
        return None
    if not isinstance(obj, list) or len(obj) != len(features):
        _fail(f"header 'categories' must be null or a list of {len(features)} lists, one "
              f"per categorical feature, got "
              f"{len(obj) if isinstance(obj, list) else type(obj).__name__}")
    out = {}
    for j, values in zip(features, obj):
        if not isinstance(values, list) or not 1 <= len(values) <= MAX_CATEGORY_CODES:
            _fail(f"header 'categories': categorical feature {j} must have a list of 1 to "
                  f"{MAX_CATEGORY_CODES} categories, got "
                  f"{len(values) if isinstance(values, list) else type(values).__name__}")
        if all(isinstance(v, str) for v in values):
            if any(len(v) > MAX_LABEL_WIDTH for v in values):
                _fail(f"header 'categories': feature {j} has a category longer than "
                      f"{MAX_LABEL_WIDTH} characters")
        elif all(_is_number(v) for v in values):
            try:
                values = [float(v) for v in values]
            except OverflowError:
                values = [math.inf]
            if not all(math.isfinite(v) for v in values):
                _fail(f"header 'categories': feature {j}'s categories must be finite numbers")
        else:
            _fail(f"header 'categories': feature {j}'s categories must be all strings or "
                  f"all numbers, got {sorted({type(v).__name__ for v in values})}")
        if any(not a < b for a, b in zip(values, values[1:])):
            _fail(f"header 'categories': feature {j}'s categories must be sorted and "
                  f"distinct (as a fit sorts them), got {values[:10]!r}")
        out[j] = values
    return out


def _encode_categorical(ensemble, categories):
    """The header entries and the ``category_sets`` array of a model with categorical
    features, checked by the reader's rules (a saved file always loads)."""
    mask, sets = ensemble.categorical, ensemble.category_sets
    features = [int(j) for j in np.flatnonzero(mask)]
    if sets.shape[0] > MAX_CATEGORY_SETS:
        raise ValueError(f"the model has {sets.shape[0]:,} category sets, more than the "
                         f"format's limit of {MAX_CATEGORY_SETS:,}")
    encoded = None
    if categories is not None:
        encoded = []
        for j in features:
            values = categories[j]
            if values is None:
                raise ValueError(f"cannot save the model: categorical feature {j} has no "
                                 "categories")
            values = list(values)
            if all(isinstance(v, str) for v in values):
                encoded.append([str(v) for v in values])
            else:
                encoded.append([float(v) for v in values])
        try:
            _decode_categories(encoded, features)
        except ModelFormatError as exc:
            raise ValueError(f"cannot save the model: {exc}") from None
    header = {"categorical_features": features, "n_category_sets": int(sets.shape[0]),
              "categories": encoded}
    return header, np.ascontiguousarray(sets, dtype=np.uint32).reshape(-1)


def _check_categorical_header(header, version, n_features, payload_size):
    """(categorical features, number of sets) of a version-4 header, checked before
    any array is read (the sets bounded by the format's limit and by the payload, 32
    bytes a set); (None, None) for older versions, which must not carry version 4's
    keys."""
    if version < CATEGORICAL_FORMAT_VERSION:
        present = [k for k in CATEGORICAL_KEYS if k in header]
        if present:
            _fail(f"the header has {', '.join(map(repr, present))}, field(s) of format "
                  f"version {CATEGORICAL_FORMAT_VERSION} (categorical features), but the "
                  f"file is of version {version}")
        return None, None
    features = header.get("categorical_features")
    if not isinstance(features, list) or not features or not all(
            _is_int(j) and 0 <= j < n_features for j in features):
        shown = features[:10] if isinstance(features, list) else features
        _fail(f"header 'categorical_features' must be a non-empty list of feature indices "
              f"in [0, {n_features}) (format version {CATEGORICAL_FORMAT_VERSION} holds "
              f"models with categorical features), got {shown!r}")
    if any(not a < b for a, b in zip(features, features[1:])):
        _fail(f"header 'categorical_features' must list distinct features in increasing "
              f"order, got {features[:10]!r}")
    n_sets = header.get("n_category_sets")
    if not _is_int(n_sets) or not 0 <= n_sets <= MAX_CATEGORY_SETS:
        _fail(f"header 'n_category_sets' must be an integer in [0, {MAX_CATEGORY_SETS}], "
              f"got {n_sets!r}")
    if n_sets * CATEGORY_SET_WORDS * 4 > payload_size:
        _fail(f"header 'n_category_sets' {n_sets} needs {n_sets * CATEGORY_SET_WORDS * 4:,} "
              f"bytes of sets, more than the {payload_size:,}-byte payload")
    return features, n_sets


def _decode_categorical(header, arrays, version, n_features, features, n_sets):
    """(categorical mask, category sets, categories per feature) of a version-4 file
    whose header ``_check_categorical_header`` checked; (None, None, None) for older
    versions, which must not carry the ``category_sets`` array."""
    if version < CATEGORICAL_FORMAT_VERSION:
        present = [name for name in sorted(CATEGORICAL_ARRAYS) if name in arrays]
        if present:
            _fail(f"the file has the array(s) {present} of format version "
                  f"{CATEGORICAL_FORMAT_VERSION} (categorical features), but is of "
                  f"version {version}")
        return None, None, None
    words = arrays["category_sets"]
    if words.shape[0] != n_sets * CATEGORY_SET_WORDS:
        _fail(f"array 'category_sets' has {words.shape[0]} words, expected n_category_sets "
              f"x {CATEGORY_SET_WORDS} = {n_sets * CATEGORY_SET_WORDS}")
    categories = _decode_categories(header.get("categories"), features)
    mask = np.zeros(n_features, dtype=bool)
    mask[features] = True
    if categories is not None:  # Booster's form: per feature, None if not categorical
        by_feature = [None] * n_features
        for j, values in categories.items():
            by_feature[j] = values
        categories = by_feature
    return mask, words.reshape(n_sets, CATEGORY_SET_WORDS), categories


# --------------------------------------------------------------------- writing
def encode(ensemble, content):
    """The model format's bytes of ``ensemble`` and a classifier's ``content``.

    Parameters
    ----------
    ensemble : Ensemble
    content : dict
        ``loss`` (a loss's name: built-in or registered), ``classes`` (labels),
        ``feature_names`` (None or strings), ``params``
        (dict), ``train_score``, ``validation_score``, ``oob_scores``,
        ``oob_improvement`` (arrays or None), ``best_iteration`` and
        ``max_features`` (int or None), and optionally ``categories`` (None, or per
        feature None or the categories of a categorical one: ``Booster.categories_``).

    Returns
    -------
    data : bytes
        Format version 3 for a model without categorical features (the bytes
        gbc-core wrote before version 4), version 4 for one with.
    unrepresentable : dict
        Parameters whose value the format cannot hold (stored as such; they load
        as None).
    """
    if set(NODE_DTYPE.names) != {name for name, _ in NODE_COLUMNS}:
        raise RuntimeError(
            "the node layout (node_t) no longer matches the model format's columns; "
            "update gbc_core._model_io.NODE_COLUMNS and the format version"
        )
    nodes = ensemble.nodes
    offsets = ensemble.tree_offsets
    classes = _encode_classes(content["classes"])
    n_classes = len(classes["values"])
    if ensemble.n_outputs != (1 if n_classes == 2 else n_classes):
        raise ValueError(f"{n_classes} classes do not match {ensemble.n_outputs} outputs")
    loss = content["loss"]
    try:
        _check_loss(loss, ensemble.n_outputs)
    except ModelFormatError as exc:
        raise ValueError(f"cannot save the model: {exc}") from None
    params, unrepresentable = {}, {}
    for key, value in (content["params"] or {}).items():
        if key == "loss":
            value = loss  # a file names its loss by a string only, a custom one too
        try:
            params[key] = _encode_value(value)
        except _Unrepresentable:
            params[key] = {"unrepresentable": type(value).__name__}
            unrepresentable[key] = value
    # Check what we write with the loader's own rules: a saved file always loads.
    try:
        _decode_params(params, warn=False)
    except ModelFormatError as exc:
        raise ValueError(f"cannot save the model: {exc}") from None
    feature_names = content["feature_names"]
    if feature_names is not None:
        feature_names = [str(s) for s in feature_names]
    categories = content.get("categories")
    if ensemble.categorical is None:
        # A numeric model: version 3, byte for byte as before version 4.
        if categories is not None and any(c is not None for c in categories):
            raise ValueError("categories were given for a model without categorical features")
        version, categorical_header, category_words = NUMERIC_FORMAT_VERSION, {}, None
    else:
        version = CATEGORICAL_FORMAT_VERSION
        categorical_header, category_words = _encode_categorical(ensemble, categories)

    arrays = [("tree_offsets", offsets)]
    arrays += [("nodes." + name, nodes[name]) for name, _ in NODE_COLUMNS]
    for name in RECORD_ARRAYS:
        if content[name] is not None:
            arrays.append((name, np.asarray(content[name], dtype=np.float64)))
    if category_words is not None:
        arrays.append(("category_sets", category_words))
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

    best = content["best_iteration"]
    max_features = content["max_features"]
    header = {
        "format": FORMAT_NAME,
        "format_version": version,
        "library_version": __version__,
        "estimator": ESTIMATOR_NAME,
        "loss": loss,
        "params": params,
        "n_features": int(ensemble.n_features),
        "feature_names": feature_names,
        "classes": classes,
        "n_outputs": int(ensemble.n_outputs),
        "init_raw": [float(v) for v in ensemble.init_raw],
        "learning_rate": float(ensemble.learning_rate),
        "n_trees": int(ensemble.n_trees),
        "n_nodes": int(nodes.shape[0]),
        "best_iteration": None if best is None else int(best),
        "max_features": None if max_features is None else int(max_features),
        "record_units": RECORD_UNITS,
        "payload_size": payload_size,
        "arrays": descriptors,
    }
    header.update(categorical_header)
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False).encode("ascii")
    if len(text) > MAX_HEADER_SIZE:
        raise ValueError(f"the model header would be {len(text)} bytes, more than the "
                         f"format's limit of {MAX_HEADER_SIZE}")
    head = _PRELUDE.pack(MAGIC, version, len(text)) + text
    head += b"\0" * (_align(len(head)) - len(head))
    body = head + bytes(payload)
    return body + hashlib.sha256(body).digest(), unrepresentable


def warn_unrepresentable(unrepresentable):
    """Warn that these parameter values are not stored (they load as None)."""
    if unrepresentable:
        warnings.warn(
            "hyper-parameter(s) "
            + ", ".join(f"{k}={type(v).__name__}" for k, v in unrepresentable.items())
            + " cannot be stored in the model format and load as None",
            UserWarning, stacklevel=3,
        )


#: ``os.write``, looked up at call time (a test seam to make a save fail half-way).
_os_write = os.write


def _atomic_write(path, data):
    """Write ``data`` to ``path`` atomically: temporary file, fsync, ``os.replace``
    (the rules are those of ``_safe_output.AtomicFile``)."""
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


def save_bytes(data, path):
    """Write model bytes to ``path`` atomically, or to a binary file object."""
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


def _check_prelude(prelude):
    """(version, header length) of the first 16 bytes of a model; raise if they
    cannot start a model this gbc-core reads."""
    n = len(prelude)
    if bytes(prelude[: len(MAGIC)]) != MAGIC[:n]:
        _fail("not a gbc-core model file (wrong magic bytes)")
    if n < _PRELUDE.size:
        _fail(f"truncated model file ({n} bytes)")
    _, version, header_len = _PRELUDE.unpack_from(prelude, 0)
    if version > FORMAT_VERSION:
        _fail(f"the model file has format version {version}, newer than the "
              f"version {FORMAT_VERSION} this gbc-core {__version__} reads; upgrade gbc-core")
    if version < 1:
        _fail(f"invalid model format version {version}")
    if header_len > MAX_HEADER_SIZE:
        _fail(f"the header length {header_len} exceeds the limit of {MAX_HEADER_SIZE} bytes")
    return version, header_len


def _parse_header(version, text):
    """The header object of ``text`` (bytes), with its envelope keys checked."""
    try:
        header = json.loads(bytes(text).decode("utf-8"), parse_constant=_no_constants,
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
    if not _is_int(header.get("payload_size")) or header["payload_size"] < 0:
        _fail(f"header 'payload_size' must be an integer >= 0, got "
              f"{header.get('payload_size')!r}")
    return header


def _parse(data):
    """Check the envelope of ``data``; return (header dict, payload memoryview)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected bytes, got {type(data).__name__}")
    data = memoryview(data).cast("B")
    n = len(data)
    version, header_len = _check_prelude(data[: _PRELUDE.size])
    payload_start = _align(_PRELUDE.size + header_len)
    if n < payload_start + _DIGEST_SIZE:
        _fail(f"truncated model file ({n} bytes, the header alone needs "
              f"{payload_start + _DIGEST_SIZE})")
    body_end = n - _DIGEST_SIZE
    if hashlib.sha256(data[:body_end]).digest() != bytes(data[body_end:]):
        _fail("checksum mismatch: the model file is corrupt or truncated")
    header = _parse_header(version, data[_PRELUDE.size: _PRELUDE.size + header_len])
    if header["payload_size"] != body_end - payload_start:
        _fail(f"header 'payload_size' {header['payload_size']!r} does not match the file "
              f"({body_end - payload_start} payload bytes)")
    return header, data[payload_start:body_end]


def _read_up_to(fh, n):
    """Up to ``n`` bytes of ``fh`` (fewer at its end), read in bounded chunks."""
    parts, remaining = [], n
    while remaining > 0:
        part = fh.read(min(remaining, _READ_CHUNK))
        if part is None:
            raise OSError("the file object returned no data (non-blocking?)")
        if not isinstance(part, (bytes, bytearray)):
            raise TypeError("the file object must be opened in binary mode")
        if not part:
            break
        parts.append(part)
        remaining -= len(part)
    return b"".join(parts)


def _read_envelope(fh):
    """(prelude + header bytes, header dict) of the model at ``fh``'s position."""
    prelude = _read_up_to(fh, _PRELUDE.size)
    version, header_len = _check_prelude(prelude)
    head = prelude + _read_up_to(fh, _align(_PRELUDE.size + header_len) - _PRELUDE.size)
    if len(head) < _align(_PRELUDE.size + header_len):
        _fail(f"truncated model file ({len(head)} bytes, the header alone needs "
              f"{_align(_PRELUDE.size + header_len) + _DIGEST_SIZE})")
    return head, _parse_header(version, head[_PRELUDE.size: _PRELUDE.size + header_len])


def _open_source(source):
    if hasattr(source, "read"):
        if isinstance(source, io.TextIOBase):
            raise TypeError("a model is read from a file opened in binary mode "
                            "(open(path, 'rb')), not from a text file")
        return source, False
    return open(source, "rb"), True


def read_model_bytes(source):
    """The bytes of the model at ``source`` (a path or a binary file object).

    The prelude is checked first and nothing is read past the end the header
    declares (a file object is left just after the model). A path with more bytes
    than that is corrupt.
    """
    fh, own = _open_source(source)
    try:
        head, header = _read_envelope(fh)
        size = len(head) + header["payload_size"] + _DIGEST_SIZE
        if own:
            actual = os.fstat(fh.fileno()).st_size
            if actual != size:
                _fail(f"the model file has {actual} bytes, its header declares {size}")
        data = head + _read_up_to(fh, size - len(head))
        if len(data) < size:
            _fail(f"truncated model file ({len(data)} bytes, its header declares {size})")
        return data
    finally:
        if own:
            fh.close()


def read_header(source):
    """The JSON header of a model file: format and library versions, classes,
    parameters, array layout.

    Only the prelude and the header are read and checked (not the payload or the
    checksum): use it to look at a file before loading it. Public as
    ``gbc_core.read_model_header``.

    Parameters
    ----------
    source : str, os.PathLike or binary file object
        The model file.

    Returns
    -------
    dict
        The header's keys (``docs/model_format.md``), e.g. ``format_version``,
        ``library_version``, ``classes``, ``params``, ``n_trees``; a model with
        categorical features (format version 4) adds ``categorical_features`` (their
        indices), ``n_category_sets`` and ``categories`` (per categorical feature its
        categories, or null).

    Raises
    ------
    gbc_core.ModelFormatError
        When the prelude or the header is invalid.

    Examples
    --------
    >>> import io
    >>> import gbc_core
    >>> from gbc_core import GradientBoostingClassifier
    >>> data = GradientBoostingClassifier(n_estimators=3).fit([[0.0], [1.0]], [0, 1]).to_bytes()
    >>> header = gbc_core.read_model_header(io.BytesIO(data))
    >>> header["format_version"], header["n_trees"]
    (3, 3)
    """
    fh, own = _open_source(source)
    try:
        return _read_envelope(fh)[1]
    finally:
        if own:
            fh.close()


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


def _read_arrays(header, payload, version):
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
    required = [k for k in _ARRAY_DTYPES if k not in OPTIONAL_ARRAYS and (
        k not in CATEGORICAL_ARRAYS or version >= CATEGORICAL_FORMAT_VERSION)]
    missing = [k for k in required if k not in arrays]
    if missing:
        _fail(f"the model file lacks the array(s) {missing}")
    return arrays


def _decode_params(raw, warn=True):
    """The hyper-parameters of the header's ``params`` object, each checked by its
    rule (``_params``); unknown names are ignored with a warning."""
    if not isinstance(raw, dict):
        _fail("header 'params' must be an object")
    params, unknown = {}, []
    for key, value in raw.items():
        if key not in PARAM_RULES:
            unknown.append(key)
            continue
        value = _decode_value(value, f"parameter {key!r}")
        value = None if value is _UNSET else value
        if not PARAM_RULES[key].accepts(value):
            _fail(f"invalid hyper-parameter: {key} must be {PARAM_RULES[key].describe()}, "
                  f"got {value!r}")
        params[key] = value
    if unknown and warn:
        warnings.warn(
            f"the model file has parameter(s) {sorted(unknown)} unknown to gbc-core "
            f"{__version__}; they are ignored", UserWarning, stacklevel=5,
        )
    return params


def _check_loss(loss, n_outputs):
    """The loss object of the name ``loss`` for ``n_outputs`` outputs, or
    ModelFormatError: a file names its loss by a string, a built-in loss or one
    registered in this process (``register_loss``), whose link takes the file's
    number of classes."""
    known = ", ".join(map(repr, loss_names()))
    if not isinstance(loss, str):
        _fail(f"header 'loss' must be one of {known} (a loss's name), got {loss!r}")
    try:
        cls = lookup_loss(loss)
    except ValueError as exc:
        _fail(f"header 'loss' must be one of {known} (a newer gbc-core may know more), "
              f"got {loss!r}: {exc}")
    n_classes = 2 if n_outputs == 1 else n_outputs
    try:
        function = loss_for(n_classes, cls())
    except (TypeError, ValueError):
        function = None
    if function is None or function.n_outputs != n_outputs:
        _fail(f"header 'loss' {loss!r} is a loss of {cls.link.classes}, the file has "
              f"n_outputs {n_outputs}")
    return function


def _older_record(arrays, loss):
    """The record arrays of a file without ``record_units`` (written before it), in
    scikit-learn's units, in place: such a file holds the loss itself, so it is
    multiplied by the loss's ``score_factor`` (the binomial log-loss doubled, exact
    in floating point); the out-of-bag arrays'
    NaN, which marked the iterations of a fit without subsampling before a warm
    start switched it on, become scikit-learn's 0."""
    for name in RECORD_ARRAYS:
        if name not in arrays:
            continue
        if loss.score_factor != 1.0:
            arrays[name] = arrays[name] * loss.score_factor
        if name in ("oob_scores", "oob_improvement"):
            arrays[name] = np.where(np.isnan(arrays[name]), 0.0, arrays[name])


def decode(data):
    """The ensemble and classifier content of model bytes, every field validated.

    Returns
    -------
    ensemble : Ensemble
    content : dict
        As :func:`encode` takes it.
    """
    header, payload = _parse(data)
    version = header["format_version"]
    if header.get("estimator") != ESTIMATOR_NAME:
        _fail(f"header 'estimator' must be {ESTIMATOR_NAME!r}, got {header.get('estimator')!r}")
    n_features = _int_field(header, "n_features", 1, MAX_FEATURES)
    n_trees = _int_field(header, "n_trees", 0, len(payload))
    n_nodes = _int_field(header, "n_nodes", 0, len(payload))
    best = _int_field(header, "best_iteration", 0, _INT32_MAX, allow_none=True)
    learning_rate = _float_field(header, "learning_rate")
    if learning_rate <= 0:
        _fail(f"header 'learning_rate' must be > 0, got {learning_rate!r}")
    if not isinstance(header.get("library_version", ""), str):
        _fail("header 'library_version' must be a string")
    if version == 1:  # binary models: one output, a scalar F0
        n_outputs, n_classes = 1, 2
        init_raw = [_float_field(header, "init_raw")]
        max_features = None
    else:
        n_outputs = _int_field(header, "n_outputs", 1, MAX_CLASSES)
        if n_outputs == 2:
            _fail("header 'n_outputs' must be 1 (two classes) or the number of classes (3 or more)")
        n_classes = 2 if n_outputs == 1 else n_outputs
        init_raw = header.get("init_raw")
        if not isinstance(init_raw, list) or len(init_raw) != n_outputs or not all(
                _is_number(v) and math.isfinite(v) for v in init_raw):
            _fail(f"header 'init_raw' must be a list of {n_outputs} finite numbers")
        max_features = _int_field(header, "max_features", 1, n_features, allow_none=True)
    if version < 3:  # the loss the number of classes implied: the log-loss
        loss = "log_loss"
    else:
        loss = header.get("loss")
        _check_loss(loss, n_outputs)
    classes = _decode_classes(header.get("classes"), n_classes)
    names = header.get("feature_names")
    if names is not None:
        if not isinstance(names, list) or len(names) != n_features or not all(
                isinstance(s, str) for s in names):
            _fail(f"header 'feature_names' must be null or {n_features} strings")
        if len(set(names)) != len(names):
            _fail("header 'feature_names' repeats a name (a fit refuses repeated "
                  "column names)")
        names = np.asarray(names, dtype=object)
    params = _decode_params(header.get("params"))
    if version == 1 and "learning_rate" in params and float(params["learning_rate"]) != learning_rate:
        # Version 1 wrote the same value twice.
        _fail("parameter 'learning_rate' does not match the header's learning_rate")

    features, n_sets = _check_categorical_header(header, version, n_features, len(payload))
    arrays = _read_arrays(header, payload, version)
    categorical, category_sets, categories = _decode_categorical(
        header, arrays, version, n_features, features, n_sets)
    offsets = arrays["tree_offsets"]
    if offsets.shape[0] != n_trees + 1:
        _fail(f"tree_offsets has {offsets.shape[0]} entries, expected n_trees + 1 = "
              f"{n_trees + 1}")
    for name, _ in NODE_COLUMNS:  # checked before the nodes are allocated
        col = arrays["nodes." + name]
        if col.shape[0] != n_nodes:
            _fail(f"array 'nodes.{name}' has {col.shape[0]} entries, expected n_nodes = "
                  f"{n_nodes}")
    nodes = np.zeros(n_nodes, dtype=NODE_DTYPE)
    for name, _ in NODE_COLUMNS:
        nodes[name] = arrays["nodes." + name]
    try:
        ensemble = Ensemble(nodes, offsets, n_outputs=n_outputs, init_raw=init_raw,
                            learning_rate=learning_rate, n_features=n_features,
                            categorical=categorical, category_sets=category_sets)
    except ValueError as exc:
        _fail(str(exc))
    n_iterations = ensemble.n_iterations
    if best is not None and best > n_iterations:
        _fail(f"header 'best_iteration' {best} is beyond the model's {n_iterations} "
              "iterations (early stopping keeps the iterations up to the best one)")
    for name in RECORD_ARRAYS:
        if name in arrays and name != "validation_score" and arrays[name].shape[0] != n_iterations:
            _fail(f"array {name!r} has {arrays[name].shape[0]} entries, expected one per "
                  f"iteration ({n_iterations})")
    if ("oob_scores" in arrays) != ("oob_improvement" in arrays):
        _fail("arrays 'oob_scores' and 'oob_improvement' come together")
    units = header.get("record_units")
    if units is None:
        _older_record(arrays, loss_for(2 if n_outputs == 1 else n_outputs, loss))
    elif units != RECORD_UNITS:
        _fail(f"header 'record_units' must be {RECORD_UNITS!r} (a newer gbc-core may "
              f"know more), got {units!r}")
    content = {name: arrays.get(name) for name in RECORD_ARRAYS}
    content.update(loss=loss, classes=classes, feature_names=names, params=params,
                   best_iteration=best, max_features=max_features, categories=categories)
    return ensemble, content
