"""ONNX as a model format: export a fitted model for runtimes that are not Python.

:func:`to_onnx` writes a :class:`~gbc_core.Booster` (or a fitted
``GradientBoostingClassifier``) as an ``onnx.ModelProto`` that onnxruntime, or any
runtime of the ``ai.onnx.ml`` domain, scores. It reads the public attributes of the
:class:`~gbc_core.Ensemble` (the nodes, the tree offsets, K, F0, the learning rate)
and of the Booster (the labels, the loss, the feature names), like ``_model_io``.

The graph:

- input ``input``: float32 of shape [N, n_features] (NaN is a missing value);
- the rows are cast to double (exactly) and one ``TreeEnsembleRegressor``
  (``ai.onnx.ml`` opset 3) with K targets gives the raw scores F [N, K]: its
  thresholds, leaf weights and base values are doubles (the ``*_as_tensor``
  attributes; onnxruntime compares and adds in its input's type and reads them for
  double input only), so that a float32 x is compared with each
  split's ``threshold32`` (mode ``BRANCH_LEQ``: x <= threshold32 goes to the true
  branch, gbc-core's left child; the largest float32 not above the float64
  threshold decides every float32 x as gbc-core does), a NaN follows the split's
  learned direction (``nodes_missing_value_tracks_true`` = ``missing_go_left``),
  each leaf adds ``learning_rate * value`` (the model stores gamma without the
  learning rate) and ``base_values`` are F0. The runtime adds them in double
  precision and returns F rounded to float32;
- ``probabilities`` [N, n_classes] (float32) from F by the loss's link: for two
  classes, the columns sigma(-s) and sigma(s) with s = F (``"log_loss"``) or 2F
  (``"exponential"``), as ``predict_proba``; for K >= 3 classes softmax(F);
- ``label`` [N]: the class labels as given (a constant tensor of the labels'
  own dtype, indexed by ``Gather``): ``classes[1]`` where F >= 0 for two classes,
  the largest raw score (the first on ties, ``ArgMax``) for more. The decision is
  taken on F rounded to float32, so it is gbc-core's except for rows whose raw
  scores are equal to float32 precision (one part in 1e7) and gbc-core's are not.

A model with categorical features (``Ensemble.categorical``) is written with the
``TreeEnsemble`` operator of ``ai.onnx.ml`` opset 5 instead (numeric models keep the
graph above, unchanged), which onnxruntime runs from 1.21:

- ``input`` holds the category *codes* in the categorical columns, as float32:
  the caller encodes each such column with the model's categories (code i is the
  i-th of the feature's sorted category values; NaN for a missing value or a
  category never seen in training). The graph cannot take the values themselves:
  one input tensor holds one type, and string categories would need a tensor of
  their own. The metadata name the categorical features
  (``categorical_features``: their indices) and, when the model has them, the
  category values (``categories``);
- the categorical columns are first mapped as gbc-core's predictor reads them: a
  value in [0, 256) to its code (truncated: 2.5 is code 2), anything else (NaN,
  negative, 256 and above, infinite) to NaN; the other columns pass unchanged.
  Hence the runtime only ever tests whole codes or NaN: onnxruntime's
  set-membership nodes treat a fractional or out-of-range value differently for
  small sets (members up to 30: exact equality) and large ones (a value truncated
  to an integer), and this step makes both agree with gbc-core;
- a node on a categorical feature is a ``BRANCH_MEMBER`` node whose members are the
  codes of its set (left: the true branch); NaN follows the node's learned
  direction (``nodes_missing_value_tracks_true`` = ``missing_go_left``), so a
  missing value and a value that is no code go where gbc-core sends them. A set
  with no code (no category left) is the node ``x <= -1``, which only NaN can
  take left. Numeric nodes, leaf weights and the double precision are as above;
  F0 is added after the trees' sum (the operator has no base values), and the
  link and labels follow as above.

``onnx`` is an optional dependency (the ``onnx`` extra: ``pip install ".[onnx]"`` from
a checkout, or ``pip install onnx``), imported by
:func:`to_onnx` only.
"""

import json

import numpy as np

from ._booster import Booster
from ._ensemble import check_categorical
from ._version import __version__

#: The ``ai.onnx.ml`` opset of the tree ensemble: opset 3 has the double-precision
#: ``*_as_tensor`` attributes.
ML_OPSET = 3
#: The default opset of the main ONNX domain (``Softmax`` over one axis needs 13).
DEFAULT_OPSET = 17
MIN_OPSET = 13
#: The ``ai.onnx.ml`` opset of a model with categorical splits: opset 5's
#: ``TreeEnsemble`` has set-membership nodes (``BRANCH_MEMBER``); onnxruntime runs it
#: from 1.21.
CATEGORICAL_ML_OPSET = 5
#: ``nodes_modes`` of a set-membership node.
_BRANCH_MEMBER = 6
#: Category codes are 0 .. _MAX_CATEGORIES - 1 (256 bits per set).
_MAX_CATEGORIES = 256

_INT_KINDS = "iu"


def _require_onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("the ONNX export needs the onnx package: pip install onnx "
                          "(the onnx extra, pip install \".[onnx]\" from a checkout)") from None
    return onnx


def _booster_of(model):
    """The Booster of a Booster or of a fitted estimator (its ``booster_``)."""
    if isinstance(model, Booster):
        return model
    booster = getattr(model, "booster_", None)
    if isinstance(booster, Booster):
        return booster
    if hasattr(model, "get_params") and hasattr(model, "fit"):
        raise ValueError(f"to_onnx: this {type(model).__name__} is not fitted; call fit "
                         "(or load a model) first")
    raise TypeError("to_onnx expects a fitted gbc_core.GradientBoostingClassifier or a "
                    f"gbc_core.Booster, got {type(model).__name__}")


def _label_tensor(onnx, classes):
    """The class labels as an ONNX constant tensor of their own type.

    Every label an ONNX tensor holds exactly and gives back as it was: booleans,
    integers and floats of any width (NumPy dtypes, or Python ints within int64,
    floats, bools of an object array), and text. Byte strings (ONNX string
    tensors give text back) and object arrays mixing ints and floats (no ONNX
    tensor holds both) are refused.
    """
    classes = np.asarray(classes)
    kind = classes.dtype.kind
    values = classes
    if kind == "O":
        types = {type(v) for v in classes.tolist()}
        if types <= {str}:
            kind = "U"
        elif types <= {bool}:
            values = classes.astype(np.bool_)
        elif types <= {int}:
            if not all(-2**63 <= v < 2**63 for v in classes.tolist()):
                raise ValueError("to_onnx: integer class labels beyond int64 cannot be "
                                 "written to an ONNX tensor")
            values = classes.astype(np.int64)
        elif types <= {float}:
            values = classes.astype(np.float64)
        else:
            names = ", ".join(sorted(t.__name__ for t in types))
            raise ValueError(
                f"to_onnx: the class labels are Python objects of several types "
                f"({names}); an ONNX tensor holds labels of one type. Fit with labels "
                "of one type (e.g. all int or all str)")
    if kind == "S":
        raise ValueError(
            "to_onnx: the class labels are byte strings; ONNX string tensors hold text "
            "and a runtime would give str labels back. Fit with str labels (decode "
            "them) to export the model")
    if kind == "U":
        return onnx.helper.make_tensor("classes", onnx.TensorProto.STRING,
                                       [classes.shape[0]],
                                       [str(v).encode("utf-8") for v in classes.tolist()])
    if values.dtype.kind not in "biuf":
        raise ValueError(f"to_onnx: class labels of dtype {classes.dtype} cannot be written "
                         "to an ONNX tensor")
    return onnx.numpy_helper.from_array(np.ascontiguousarray(values), name="classes")


def _tree_attributes(ensemble):
    """The attributes of the TreeEnsembleRegressor of ``ensemble``'s trees."""
    nodes = ensemble.nodes
    offsets = ensemble.tree_offsets
    K = ensemble.n_outputs
    n_trees = ensemble.n_trees
    if n_trees == 0:
        # No trees: one leaf adding 0 to each output (F0 + 0.0 is F0).
        tree_ids = np.arange(K, dtype=np.int64)
        node_ids = np.zeros(K, dtype=np.int64)
        feature = np.full(K, -1, dtype=np.int64)
        left = right = np.zeros(K, dtype=np.int64)
        missing_left = np.zeros(K, dtype=np.int64)
        threshold32 = np.zeros(K, dtype=np.float32)
        weights = np.zeros(K, dtype=np.float64)
    else:
        sizes = np.diff(offsets)
        tree_ids = np.repeat(np.arange(n_trees, dtype=np.int64), sizes)
        node_ids = np.arange(nodes.shape[0], dtype=np.int64) - offsets[:-1][tree_ids]
        feature = nodes["feature"].astype(np.int64)
        left = nodes["left"].astype(np.int64)
        right = nodes["right"].astype(np.int64)
        missing_left = nodes["missing_go_left"].astype(np.int64)
        threshold32 = nodes["threshold32"]
        # eta * gamma_j, the same float64 product as gbc-core's predictor.
        weights = ensemble.learning_rate * nodes["value"]
    leaf = feature < 0
    inner = ~leaf
    return {
        "n_targets": K,
        "aggregate_function": "SUM",
        "post_transform": "NONE",
        "nodes_treeids": tree_ids.tolist(),
        "nodes_nodeids": node_ids.tolist(),
        "nodes_featureids": np.where(inner, feature, 0).tolist(),
        "nodes_modes": ["BRANCH_LEQ" if s else "LEAF" for s in inner.tolist()],
        "nodes_truenodeids": np.where(inner, left, 0).tolist(),
        "nodes_falsenodeids": np.where(inner, right, 0).tolist(),
        "nodes_missing_value_tracks_true": np.where(inner, missing_left, 0).tolist(),
        # threshold32 exactly (a float32 is a double): x <= threshold32.
        "nodes_values_as_tensor": np.where(inner, threshold32.astype(np.float64), 0.0),
        "target_treeids": tree_ids[leaf].tolist(),
        "target_nodeids": node_ids[leaf].tolist(),
        "target_ids": (tree_ids[leaf] % K).tolist(),
        "target_weights_as_tensor": weights[leaf],
        "base_values_as_tensor": np.asarray(ensemble.init_raw, dtype=np.float64),
    }


def _check_opset(target_opset, onnx):
    if target_opset is None:
        return min(DEFAULT_OPSET, onnx.defs.onnx_opset_version())
    if isinstance(target_opset, bool) or not isinstance(target_opset, (int, np.integer)):
        raise TypeError(f"target_opset must be an int or None, got {target_opset!r}")
    newest = onnx.defs.onnx_opset_version()
    if not MIN_OPSET <= target_opset <= newest:
        raise ValueError(f"target_opset must be in [{MIN_OPSET}, {newest}] (the opsets of "
                         f"the installed onnx {onnx.__version__} from {MIN_OPSET}), got "
                         f"{target_opset}")
    return int(target_opset)


def _check_exportable(booster):
    """Refuse what the graph cannot hold: a row-dependent init estimator."""
    if booster.init_estimator is not None:
        raise ValueError(
            f"to_onnx: the init estimator ({type(booster.init_estimator).__name__}) gives "
            "initial raw scores that vary by row; it is a Python estimator, not data, and "
            "the ONNX graph cannot hold it. Fit with init='prior' (or 'zero', or a "
            "DummyClassifier, whose constant raw scores are exported)")


def _tree_nodes(onnx, ensemble):
    """input -> raw: the rows cast to double, then the tree ensemble (raw scores F)."""
    from onnx import TensorProto, helper

    attrs = _tree_attributes(ensemble)
    tensors = {key: attrs.pop(key) for key in list(attrs) if key.endswith("_as_tensor")}
    # The rows as doubles (exact): onnxruntime's tree ensemble compares and adds in
    # the type of its input, and double keeps threshold32, eta * gamma and the sums.
    cast = helper.make_node("Cast", ["input"], ["input_double"], to=TensorProto.DOUBLE,
                            name="as_double")
    tree = helper.make_node("TreeEnsembleRegressor", ["input_double"], ["raw"],
                            domain="ai.onnx.ml", name="trees", **attrs)
    for key, values in tensors.items():
        tree.attribute.append(helper.make_attribute(
            key, onnx.numpy_helper.from_array(np.ascontiguousarray(values, np.float64),
                                              name=key)))
    return [cast, tree]


# ------------------------------------------------------- models with categorical splits
def _category_codes(category_sets):
    """The codes of each set, ascending: bit c of word c // 32 of a row is code c."""
    sets = np.asarray(category_sets, dtype=np.uint32)
    codes = np.arange(_MAX_CATEGORIES)
    bits = (sets[:, codes // 32] >> (codes % 32).astype(np.uint32)) & np.uint32(1)
    return [np.flatnonzero(row) for row in bits]


def _check_categorical_arrays(nodes, tree_offsets, categorical, category_sets, n_outputs,
                              init_raw, n_features):
    """The arrays as the graph reads them, checked: what is wrong raises ValueError."""
    from ._common import NODE_DTYPE

    nodes = np.ascontiguousarray(nodes).astype(NODE_DTYPE, copy=False)
    offsets = np.asarray(tree_offsets, dtype=np.int64)
    categorical = np.asarray(categorical)
    if categorical.dtype != np.bool_ or categorical.shape != (n_features,):
        raise ValueError(f"to_onnx: categorical must be a boolean mask of the {n_features} "
                         f"features, got dtype {categorical.dtype} and shape "
                         f"{categorical.shape}")
    sets = np.asarray(category_sets)
    if (sets.ndim != 2 or sets.shape[1] != 8 or sets.dtype.kind != "u"
            or sets.dtype.itemsize != 4):
        raise ValueError("to_onnx: category_sets must be a uint32 array of shape (n_sets, 8) "
                         f"(256 bits per set), got dtype {sets.dtype} and shape {sets.shape}")
    sets = sets.astype(np.uint32, copy=False)
    if (offsets.ndim != 1 or offsets.shape[0] < 1 or offsets[0] != 0
            or offsets[-1] != nodes.shape[0] or np.any(np.diff(offsets) < 1)):
        raise ValueError(f"to_onnx: tree_offsets must rise from 0 to the {nodes.shape[0]} "
                         "nodes, at least one node per tree")
    init_raw = np.asarray(init_raw, dtype=np.float64).reshape(-1)
    if init_raw.shape != (n_outputs,):
        raise ValueError(f"to_onnx: init_raw must hold {n_outputs} raw score(s), got "
                         f"{init_raw.shape[0]}")
    feature = nodes["feature"]
    if feature.max(initial=-1) >= n_features:
        raise ValueError(f"to_onnx: a node splits on feature {feature.max()}, the model has "
                         f"{n_features}")
    try:  # every categorical node's set a row of the table: the Ensemble's rule
        check_categorical(nodes, offsets, n_features, categorical, sets)
    except ValueError as exc:
        raise ValueError(f"to_onnx: {exc}") from None
    return nodes, offsets, categorical, sets, init_raw


def _categorical_ensemble_attributes(nodes, offsets, categorical, sets, n_outputs,
                                     learning_rate):
    """The attributes of the ``TreeEnsemble`` (``ai.onnx.ml`` opset 5) of the trees.

    Interior nodes are ``nodes_*`` entries, leaves ``leaf_*`` entries, in the order of
    ``nodes``. A node on a categorical feature is a ``BRANCH_MEMBER`` node whose
    members are its set's codes (an empty set: ``BRANCH_LEQ`` -1, which no code
    satisfies); a numeric node is ``BRANCH_LEQ`` threshold32; the true branch is
    gbc-core's left child and NaN follows ``missing_go_left``. A tree that is one
    leaf gets an interior entry whose branches both reach that leaf; a model
    without trees one tree of one leaf adding 0.
    """
    K = n_outputs
    n_trees = offsets.shape[0] - 1
    sizes = np.diff(offsets)
    tree_of = np.repeat(np.arange(n_trees, dtype=np.int64), sizes)
    base = offsets[:-1][tree_of]
    feature = nodes["feature"].astype(np.int64)
    inner = feature >= 0
    leaf = ~inner
    inner_pos = np.cumsum(inner) - 1  # an interior node's nodes_* entry
    leaf_pos = np.cumsum(leaf) - 1    # a leaf's leaf_* entry

    def child(which):
        g = nodes[which].astype(np.int64)[inner] + base[inner]  # global node index
        return np.where(leaf[g], leaf_pos[g], inner_pos[g]), leaf[g].astype(np.int64)

    true_ids, true_leafs = child("left")
    false_ids, false_leafs = child("right")
    f_in = feature[inner]
    on_cat = categorical[f_in]
    codes = _category_codes(sets)
    set_of = nodes["threshold"][inner]
    modes = np.zeros(f_in.shape[0], dtype=np.uint8)  # BRANCH_LEQ
    splits = nodes["threshold32"][inner].astype(np.float64)
    members = []
    for j in np.flatnonzero(on_cat):
        values = codes[int(set_of[j])]
        if values.size:
            modes[j] = _BRANCH_MEMBER
            splits[j] = 0.0
            members.append(values.astype(np.float64))
            members.append([np.nan])  # ends the node's members
        else:  # no code goes left: only NaN, when missing values go left
            splits[j] = -1.0
    missing = nodes["missing_go_left"][inner].astype(np.int64)
    leaf_weights = learning_rate * nodes["value"][leaf]  # eta * gamma, as gbc-core's
    leaf_targets = tree_of[leaf] % K
    roots = np.where(inner[offsets[:-1]], inner_pos[offsets[:-1]], -1)
    if n_trees == 0:
        roots = np.array([-1], dtype=np.int64)
        leaf_weights = np.zeros(1)
        leaf_targets = np.zeros(1, dtype=np.int64)
        root_leaf = np.zeros(1, dtype=np.int64)
    else:
        root_leaf = leaf_pos[offsets[:-1]]
    # A tree that is a leaf: one interior entry whose branches both reach it.
    lone = np.flatnonzero(roots < 0)
    if lone.size:
        roots[lone] = f_in.shape[0] + np.arange(lone.size)
        f_in = np.concatenate([f_in, np.zeros(lone.size, np.int64)])
        modes = np.concatenate([modes, np.zeros(lone.size, np.uint8)])
        splits = np.concatenate([splits, np.zeros(lone.size)])
        missing = np.concatenate([missing, np.zeros(lone.size, np.int64)])
        true_ids = np.concatenate([true_ids, root_leaf[lone]])
        false_ids = np.concatenate([false_ids, root_leaf[lone]])
        true_leafs = np.concatenate([true_leafs, np.ones(lone.size, np.int64)])
        false_leafs = np.concatenate([false_leafs, np.ones(lone.size, np.int64)])
    ints = {
        "n_targets": K,
        "aggregate_function": 1,  # SUM
        "post_transform": 0,      # NONE
        "tree_roots": roots.tolist(),
        "nodes_featureids": f_in.tolist(),
        "nodes_truenodeids": true_ids.tolist(),
        "nodes_trueleafs": true_leafs.tolist(),
        "nodes_falsenodeids": false_ids.tolist(),
        "nodes_falseleafs": false_leafs.tolist(),
        "nodes_missing_value_tracks_true": missing.tolist(),
        "leaf_targetids": leaf_targets.tolist(),
    }
    tensors = {
        "nodes_modes": modes,
        "nodes_splits": splits,
        "leaf_weights": np.asarray(leaf_weights, dtype=np.float64),
    }
    if members:
        tensors["membership_values"] = np.concatenate(members)
    return ints, tensors


def _categorical_input_nodes(onnx, categorical, initializers):
    """input -> input_double: the categorical columns as codes (a value in [0, 256)
    truncated to its code, anything else NaN), the others as they are, in double."""
    from onnx import TensorProto, helper

    def const(name, array):
        initializers.append(onnx.numpy_helper.from_array(np.asarray(array), name=name))
        return name

    return [
        helper.make_node("GreaterOrEqual", ["input", const("code_min", np.float32(0.0))],
                         ["code_above_min"]),
        helper.make_node("Less", ["input", const("code_limit", np.float32(_MAX_CATEGORIES))],
                         ["code_below_limit"]),
        helper.make_node("And", ["code_above_min", "code_below_limit"], ["is_code"]),
        helper.make_node("Floor", ["input"], ["input_floor"]),
        helper.make_node("Where", ["is_code", "input_floor",
                                   const("not_a_code", np.float32(np.nan))], ["codes"]),
        helper.make_node("Where", [const("categorical", np.asarray(categorical, np.bool_)),
                                   "codes", "input"], ["rows"], name="categories_as_codes"),
        helper.make_node("Cast", ["rows"], ["input_double"], to=TensorProto.DOUBLE,
                         name="as_double"),
    ]


def _categorical_to_onnx(nodes, tree_offsets, categorical, category_sets, *, n_outputs,
                         init_raw, learning_rate, n_features, classes, loss="log_loss",
                         feature_names=None, categories=None, n_iterations=None,
                         target_opset=None, name="gbc_core"):
    """The ONNX graph of a model with categorical splits, from its arrays.

    ``to_onnx`` calls it for an ensemble with ``categorical`` features; the tests
    call it with arrays of grown trees.

    Parameters
    ----------
    nodes : NODE_DTYPE array
        The trees' nodes, concatenated (children tree-relative); a node on a
        categorical feature sends left the codes of row ``threshold`` of
        ``category_sets``.
    tree_offsets : int64 array of shape (n_trees + 1,)
    categorical : bool array of shape (n_features,)
    category_sets : uint32 array of shape (n_sets, 8)
        Bit c of word c // 32 of a row: code c is in the set.
    n_outputs, init_raw, learning_rate, n_features
        As the ``Ensemble``'s: tree t adds ``learning_rate * value`` of its leaf to
        output ``t % n_outputs``, on top of ``init_raw``.
    classes : array
        The class labels, in class-code order.
    loss : str, default="log_loss"
        The loss whose link gives the probabilities.
    feature_names, categories : optional
        Written to the metadata (``categories``: per feature None or its sorted
        category values, the values codes index).
    n_iterations : int, optional
        For the doc string.
    target_opset : int, optional
        As ``to_onnx``'s.
    name : str, default="gbc_core"

    Returns
    -------
    onnx.ModelProto
        As ``to_onnx`` describes for a model with categorical features.
    """
    from ._loss import loss_for

    onnx = _require_onnx()
    _require_tree_ensemble_5(onnx)
    opset = _check_opset(target_opset, onnx)
    classes = np.asarray(classes)
    link = loss_for(classes.shape[0], loss).link
    nodes, offsets, categorical, sets, init_raw = _check_categorical_arrays(
        nodes, tree_offsets, categorical, category_sets, n_outputs, init_raw, n_features)
    from onnx import TensorProto, helper

    ints, tensors = _categorical_ensemble_attributes(nodes, offsets, categorical, sets,
                                                     n_outputs, learning_rate)
    label_tensor = _label_tensor(onnx, classes)
    initializers = [label_tensor]
    graph_nodes = _categorical_input_nodes(onnx, categorical, initializers)
    tree = helper.make_node("TreeEnsemble", ["input_double"], ["tree_sums"],
                            domain="ai.onnx.ml", name="trees", **ints)
    for key, values in tensors.items():
        tree.attribute.append(helper.make_attribute(
            key, onnx.numpy_helper.from_array(np.ascontiguousarray(values), name=key)))
    initializers.append(onnx.numpy_helper.from_array(init_raw, name="init_raw"))
    graph_nodes += [
        tree,
        # F0 added after the trees' sum, in double (as the older operator's base values).
        helper.make_node("Add", ["tree_sums", "init_raw"], ["raw_double"]),
        helper.make_node("Cast", ["raw_double"], ["raw"], to=TensorProto.FLOAT),
    ]
    graph_nodes += _link_nodes(onnx, link, loss, n_outputs, initializers)
    graph = _graph(onnx, graph_nodes, initializers, label_tensor, n_features,
                   classes.shape[0], name)
    meta = {
        "feature_names": json.dumps(None if feature_names is None
                                    else [str(s) for s in feature_names]),
        "loss": str(loss),
        "classes": json.dumps(classes.tolist(), default=str),
        "gbc_core_version": __version__,
        "categorical_features": json.dumps(np.flatnonzero(categorical).tolist()),
    }
    if categories is not None:
        meta["categories"] = json.dumps(
            [None if c is None else np.asarray(c).tolist() for c in categories], default=str)
    doc = (f"gbc-core gradient boosting classifier: {classes.shape[0]} classes, "
           f"{'' if n_iterations is None else f'{n_iterations} iterations, '}loss {loss}, "
           f"categorical features {np.flatnonzero(categorical).tolist()} as codes")
    return _model_proto(onnx, graph, opset, CATEGORICAL_ML_OPSET, meta, doc)


def _require_tree_ensemble_5(onnx):
    """The installed onnx knows ``ai.onnx.ml`` opset 5's ``TreeEnsemble`` (onnx 1.16+)."""
    try:
        onnx.defs.get_schema("TreeEnsemble", CATEGORICAL_ML_OPSET, "ai.onnx.ml")
    except Exception:  # onnx.defs.SchemaError
        raise ImportError(
            "to_onnx: a model with categorical features is written with the TreeEnsemble "
            "operator of ai.onnx.ml opset 5, which the installed onnx "
            f"{onnx.__version__} does not know: pip install \"onnx>=1.16\"") from None


def _link_nodes(onnx, link, loss, K, initializers):
    """raw -> probabilities and the class code, by the loss's ``link`` (``loss``:
    its name, for the error).

    The constants the nodes read are appended to ``initializers``.
    """
    from onnx import TensorProto, helper

    def const(name, array):
        initializers.append(onnx.numpy_helper.from_array(np.asarray(array), name=name))
        return name

    if link.name not in ("logit", "half_logit", "softmax"):
        raise ValueError(f"to_onnx: the loss {loss!r} has the link {link.name!r}, "
                         "which has no ONNX nodes here (the links written are logit, "
                         "half_logit and softmax)")
    if K > 1:
        return [
            helper.make_node("Softmax", ["raw"], ["probabilities"], axis=1),
            helper.make_node("ArgMax", ["raw"], ["code"], axis=1, keepdims=0,
                             select_last_index=0),
        ]
    # The loss's link: p = sigma(scale * F).
    scale = link.scale
    if scale == 1.0:
        nodes = [helper.make_node("Identity", ["raw"], ["score"], name="logit")]
    else:
        nodes = [helper.make_node("Mul", ["raw", const("scale", np.float32(scale))],
                                  ["score"], name="scaled_logit")]
    return nodes + [
        helper.make_node("Neg", ["score"], ["neg_score"]),
        helper.make_node("Concat", ["neg_score", "score"], ["scores"], axis=1),
        helper.make_node("Sigmoid", ["scores"], ["probabilities"]),
        helper.make_node("GreaterOrEqual", ["raw", const("zero", np.float32(0.0))],
                         ["positive"]),
        helper.make_node("Cast", ["positive"], ["code_2d"], to=TensorProto.INT64),
        helper.make_node("Squeeze", ["code_2d", const("axis1", np.array([1], np.int64))],
                         ["code"]),
    ]


def _metadata(booster):
    """The ``metadata_props`` and doc string of ``booster``'s graph."""
    names = booster.feature_names_in_
    meta = {
        "feature_names": json.dumps(None if names is None else [str(s) for s in names]),
        "loss": booster.loss,
        "classes": json.dumps(booster.classes_.tolist(), default=str),
        "gbc_core_version": __version__,
    }
    doc = (f"gbc-core gradient boosting classifier: {booster.n_classes_} "
           f"classes, {booster.ensemble.n_iterations} iterations, loss "
           f"{booster.loss}")
    return meta, doc


def _model_proto(onnx, graph, opset, ml_opset, meta, doc):
    """The checked model of ``graph``: its opsets, producer and metadata."""
    from onnx import helper

    opsets = [helper.make_opsetid("", opset), helper.make_opsetid("ai.onnx.ml", ml_opset)]
    proto = helper.make_model(graph, opset_imports=opsets, producer_name="gbc-core",
                              producer_version=__version__)
    proto.ir_version = helper.find_min_ir_version_for(opsets)
    helper.set_model_props(proto, meta)
    proto.doc_string = doc
    onnx.checker.check_model(proto, full_check=True)
    return proto


def _graph(onnx, nodes, initializers, classes, n_features, n_classes, name):
    """The graph: input ``input`` float32 [N, n_features], outputs ``label`` [N] (the
    ``classes`` tensor gathered at ``code``) and ``probabilities``."""
    from onnx import TensorProto, helper

    nodes = nodes + [helper.make_node("Gather", ["classes", "code"], ["label"], axis=0)]
    return helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", n_features])],
        [helper.make_tensor_value_info("label", classes.data_type, ["N"]),
         helper.make_tensor_value_info("probabilities", TensorProto.FLOAT,
                                       ["N", n_classes])],
        initializer=initializers)


def to_onnx(model, *, target_opset=None, name="gbc_core"):
    """The model as an ONNX graph (``ai.onnx.ml`` tree ensemble).

    Parameters
    ----------
    model : GradientBoostingClassifier or Booster
        Fitted, without an ``init`` estimator whose raw scores vary by row.
    target_opset : int, optional
        The opset of the main ONNX domain (13 to the installed onnx's newest;
        default 17). The tree ensemble is ``ai.onnx.ml`` opset 3 (opset 5 for a
        model with categorical features).
    name : str, default="gbc_core"
        The graph's name.

    Returns
    -------
    onnx.ModelProto
        Input ``input``: float32 [N, n_features], NaN for a missing value.
        Outputs ``label`` [N] (the class labels, in their own type: int64,
        string, bool, a float ...) and ``probabilities`` float32 [N, n_classes]
        (column i is ``classes_[i]``; both columns for two classes, as
        ``predict_proba``). Its ``metadata_props`` hold ``feature_names`` (a JSON
        list, or null), ``loss``, ``classes`` (JSON) and the gbc-core version.
        A model with categorical features: ``input`` holds their category codes
        (the caller encodes them with the model's categories; NaN for missing or
        unknown), the tree ensemble is ``ai.onnx.ml`` opset 5's ``TreeEnsemble``
        (onnxruntime 1.21 or later), and the metadata add
        ``categorical_features`` (JSON indices) and ``categories`` (when known);
        see the module's notes.

    Raises
    ------
    ImportError
        When onnx is not installed (or, for a model with categorical features, is
        older than 1.16, which knows no ``ai.onnx.ml`` opset 5).
    ValueError
        For a model with an ``init`` estimator (raw scores that vary by row, a
        Python object the graph cannot hold), or class labels no ONNX tensor
        holds as they are (byte strings, Python objects of mixed types).
    TypeError
        For anything but a gbc-core model.

    Examples
    --------
    >>> import numpy as np
    >>> import onnxruntime as ort
    >>> from gbc_core import GradientBoostingClassifier
    >>> from gbc_core.onnx import to_onnx
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]], dtype=np.float32)
    >>> model = GradientBoostingClassifier(n_estimators=3).fit(X, ["a", "a", "b", "b"])
    >>> session = ort.InferenceSession(to_onnx(model).SerializeToString())
    >>> label, proba = session.run(["label", "probabilities"], {"input": X})
    >>> label.tolist(), bool(np.allclose(proba, model.predict_proba(X), atol=1e-6))
    (['a', 'a', 'b', 'b'], True)
    """
    onnx = _require_onnx()
    booster = _booster_of(model)
    opset = _check_opset(target_opset, onnx)
    _check_exportable(booster)
    ensemble = booster.ensemble
    categorical = getattr(ensemble, "categorical", None)
    if categorical is not None and np.any(categorical):
        return _categorical_to_onnx(
            ensemble.nodes, ensemble.tree_offsets, categorical,
            ensemble.category_sets, n_outputs=ensemble.n_outputs,
            init_raw=ensemble.init_raw, learning_rate=ensemble.learning_rate,
            n_features=ensemble.n_features, classes=booster.classes_, loss=booster.loss,
            feature_names=booster.feature_names_in_,
            categories=booster.categories_,
            n_iterations=ensemble.n_iterations, target_opset=opset, name=name)
    classes = _label_tensor(onnx, booster.classes_)
    initializers = [classes]
    nodes = _tree_nodes(onnx, ensemble)
    nodes += _link_nodes(onnx, booster.loss_function.link, booster.loss, ensemble.n_outputs,
                         initializers)
    graph = _graph(onnx, nodes, initializers, classes, ensemble.n_features,
                   booster.n_classes_, name)
    return _model_proto(onnx, graph, opset, ML_OPSET, *_metadata(booster))
