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

``onnx`` is an optional dependency (the ``onnx`` extra: ``pip install ".[onnx]"`` from
a checkout, or ``pip install onnx``), imported by
:func:`to_onnx` only.
"""

import json

import numpy as np

from ._booster import Booster
from ._version import __version__

#: The ``ai.onnx.ml`` opset of the tree ensemble: opset 3 has the double-precision
#: ``*_as_tensor`` attributes.
ML_OPSET = 3
#: The default opset of the main ONNX domain (``Softmax`` over one axis needs 13).
DEFAULT_OPSET = 17
MIN_OPSET = 13

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


def _link_nodes(onnx, booster, K, initializers):
    """raw -> probabilities and the class code, by the loss's link.

    The constants the nodes read are appended to ``initializers``.
    """
    from onnx import TensorProto, helper

    def const(name, array):
        initializers.append(onnx.numpy_helper.from_array(np.asarray(array), name=name))
        return name

    link = booster.loss_function.link
    if link.name not in ("logit", "half_logit", "softmax"):
        raise ValueError(f"to_onnx: the loss {booster.loss!r} has the link {link.name!r}, "
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


def _model_proto(onnx, booster, graph, opset):
    """The checked model of ``graph``: its opsets, producer and metadata."""
    from onnx import helper

    opsets = [helper.make_opsetid("", opset), helper.make_opsetid("ai.onnx.ml", ML_OPSET)]
    proto = helper.make_model(graph, opset_imports=opsets, producer_name="gbc-core",
                              producer_version=__version__)
    proto.ir_version = helper.find_min_ir_version_for(opsets)
    names = booster.feature_names_in_
    meta = {
        "feature_names": json.dumps(None if names is None else [str(s) for s in names]),
        "loss": booster.loss,
        "classes": json.dumps(booster.classes_.tolist(), default=str),
        "gbc_core_version": __version__,
    }
    helper.set_model_props(proto, meta)
    proto.doc_string = (f"gbc-core gradient boosting classifier: {booster.n_classes_} "
                        f"classes, {booster.ensemble.n_iterations} iterations, loss "
                        f"{booster.loss}")
    onnx.checker.check_model(proto, full_check=True)
    return proto


def to_onnx(model, *, target_opset=None, name="gbc_core"):
    """The model as an ONNX graph (``ai.onnx.ml`` tree ensemble).

    Parameters
    ----------
    model : GradientBoostingClassifier or Booster
        Fitted, without an ``init`` estimator whose raw scores vary by row.
    target_opset : int, optional
        The opset of the main ONNX domain (13 to the installed onnx's newest;
        default 17). The tree ensemble is ``ai.onnx.ml`` opset 3.
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

    Raises
    ------
    ImportError
        When onnx is not installed.
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
    from onnx import TensorProto, helper

    booster = _booster_of(model)
    opset = _check_opset(target_opset, onnx)
    _check_exportable(booster)
    ensemble = booster.ensemble
    classes = _label_tensor(onnx, booster.classes_)
    initializers = [classes]
    nodes = _tree_nodes(onnx, ensemble)
    nodes += _link_nodes(onnx, booster, ensemble.n_outputs, initializers)
    nodes.append(helper.make_node("Gather", ["classes", "code"], ["label"], axis=0))
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["N", ensemble.n_features])],
        [helper.make_tensor_value_info("label", classes.data_type, ["N"]),
         helper.make_tensor_value_info("probabilities", TensorProto.FLOAT,
                                       ["N", booster.n_classes_])],
        initializer=initializers)
    return _model_proto(onnx, booster, graph, opset)
