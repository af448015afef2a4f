"""The fitted model as numbers: trees, outputs, initial scores (no labels, no
scikit-learn).

An :class:`Ensemble` holds the nodes of every tree (``NODE_DTYPE``, concatenated),
the tree offsets, the number of raw scores per row ``n_outputs`` (K: 1 for two
classes, one per class otherwise), the initial raw scores ``init_raw`` (K,), the
learning rate and the number of features. Trees come in iteration order, K per
iteration: tree ``m * K + k`` adds ``learning_rate * value`` of the leaf a row
reaches to raw score k (paper Algorithm 2):

    F_k(x) = init_raw[k] + sum_m learning_rate * T_{m,k}(x).

Every Ensemble is checked when it is built (:func:`validate_trees`: indices, tree
structure, finite values, raw scores that cannot overflow), whoever builds it: a
fit, the model-file loader or a user, so the prediction kernels can trust it.
"""

import functools

import numpy as np

from ._common import NODE_DTYPE
from ._params import effective_n_threads
from ._predictor import Predictor, categorical_leaves
from ._treeshap import TreeShap
from ._validation import (
    MAX_FEATURES,
    as_format,
    check_features,
    is_sparse_matrix,
    sparse_arrays,
)

#: An ensemble keeps abs(F_k(x)) below this for every x: abs(init_raw[k]) + the sum over
#: the trees of output k of learning_rate x their largest |leaf value| (the trainer
#: refuses to go further, the loader refuses such files), so that no raw score can
#: overflow to infinity (an inf - inf would be a NaN probability).
RAW_SCORE_LIMIT = 1e300

_INT32_MAX = 2**31 - 1


def _first(mask):
    return int(np.flatnonzero(mask)[0])


def _float32_at_most(threshold):
    """Largest float32 <= each float64 threshold (a node's ``threshold32``)."""
    t = np.asarray(threshold, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        t32 = t.astype(np.float32)
        above = t32.astype(np.float64) > t
    t32[above] = np.nextafter(t32[above], np.float32(-np.inf))
    return t32


def validate_trees(nodes, offsets, n_features):
    """Check that nodes and tree offsets form valid trees; raise ValueError otherwise.

    Parameters
    ----------
    nodes : NODE_DTYPE array, or a dict of its field name -> 1-D array
    offsets : int64 array of shape (n_trees + 1,)
    n_features : int

    Raises
    ------
    ValueError
        Naming the tree and (tree-relative) node of the first problem found.
    """
    def fail(msg):
        raise ValueError(msg)

    n_nodes = nodes["feature"].shape[0]
    offsets = np.asarray(offsets, dtype=np.int64)
    if offsets.ndim != 1 or offsets.shape[0] < 1:
        fail("tree_offsets must have n_trees + 1 >= 1 entries")
    if offsets[0] != 0:
        fail(f"tree_offsets must start at 0, got {offsets[0]}")
    if offsets[-1] != n_nodes:
        fail(f"tree_offsets must end at the number of nodes {n_nodes}, got {offsets[-1]}")
    sizes = np.diff(offsets)
    if (sizes < 1).any():
        t = _first(sizes < 1)
        fail(f"tree_offsets must be strictly increasing (tree {t} has {sizes[t]} nodes)")
    if (sizes > _INT32_MAX).any():
        fail("a tree has more nodes than int32 child indices can address")
    n_trees = sizes.shape[0]
    tree_of = np.repeat(np.arange(n_trees, dtype=np.int64), sizes)
    start = offsets[:-1][tree_of]
    local = np.arange(n_nodes, dtype=np.int64) - start
    size = sizes[tree_of]

    def where(i):
        return f"tree {int(tree_of[i])}, node {int(local[i])}"

    feature = nodes["feature"].astype(np.int64)
    left = nodes["left"].astype(np.int64)
    right = nodes["right"].astype(np.int64)
    leaf = feature == -1
    inner = feature >= 0
    if not (leaf | inner).all():
        i = _first(~(leaf | inner))
        fail(f"{where(i)}: feature id {feature[i]} is invalid (-1 marks a leaf)")
    if (feature >= n_features).any():
        i = _first(feature >= n_features)
        fail(f"{where(i)}: feature id {feature[i]} is out of range "
             f"(the model has {n_features} features)")
    bad = leaf & ((left != -1) | (right != -1))
    if bad.any():
        i = _first(bad)
        fail(f"{where(i)}: a leaf (feature -1) must have children -1, got "
             f"{left[i]} and {right[i]}")
    for name, child in (("left", left), ("right", right)):
        bad = inner & ((child <= local) | (child >= size))
        if bad.any():
            i = _first(bad)
            fail(f"{where(i)}: {name} child {child[i]} must point forward within the "
                 f"tree (> {local[i]} and < {size[i]})")
    bad = inner & (left == right)
    if bad.any():
        i = _first(bad)
        fail(f"{where(i)}: left and right child are the same node {left[i]}")
    # Each non-root node is the child of exactly one node, the root of none. With
    # children after their parents this makes every tree a tree (no cycle, no
    # unreachable or shared node).
    parent = np.flatnonzero(inner)
    children = np.concatenate([start[parent] + left[parent], start[parent] + right[parent]])
    refs = np.bincount(children, minlength=n_nodes)
    expected = (local != 0).astype(np.int64)
    if (refs != expected).any():
        i = _first(refs != expected)
        fail(f"{where(i)}: node is the child of {refs[i]} nodes (expected {expected[i]}); "
             "the nodes do not form a tree")
    depth = nodes["depth"].astype(np.int64)
    if (depth[local == 0] != 0).any():
        i = _first((local == 0) & (depth != 0))
        fail(f"{where(i)}: the root must have depth 0, got {depth[i]}")
    want = np.minimum(depth[parent] + 1, 255)
    for child in (start[parent] + left[parent], start[parent] + right[parent]):
        bad = depth[child] != want
        if bad.any():
            i = int(child[_first(bad)])
            fail(f"{where(i)}: depth {depth[i]} is not its parent's depth + 1")
    missing = nodes["missing_go_left"]
    if (missing > 1).any():
        i = _first(missing > 1)
        fail(f"{where(i)}: missing_go_left must be 0 or 1, got {missing[i]}")
    for name in ("value", "improvement", "weighted_n"):
        bad = ~np.isfinite(nodes[name])
        if bad.any():
            i = _first(bad)
            fail(f"{where(i)}: {name} must be finite, got {nodes[name][i]!r}")
    for name in ("improvement", "weighted_n"):  # sums of squares and of weights
        bad = nodes[name] < 0
        if bad.any():
            i = _first(bad)
            fail(f"{where(i)}: {name} must be >= 0, got {nodes[name][i]!r}")
    threshold = nodes["threshold"]
    bad = np.isnan(threshold) | (threshold == -np.inf)
    if bad.any():
        i = _first(bad)
        fail(f"{where(i)}: threshold must be finite or +inf, got {threshold[i]!r}")
    t32 = _float32_at_most(threshold)
    bad = t32.view(np.uint32) != np.asarray(nodes["threshold32"], np.float32).view(np.uint32)
    if bad.any():
        i = _first(bad)
        fail(f"{where(i)}: threshold32 {nodes['threshold32'][i]!r} is not the largest "
             f"float32 <= threshold {threshold[i]!r} (expected {t32[i]!r})")
    if (nodes["n_samples"] < 0).any():
        i = _first(nodes["n_samples"] < 0)
        fail(f"{where(i)}: n_samples must be >= 0, got {nodes['n_samples'][i]}")


def _node_array(nodes):
    """A zero-filled NODE_DTYPE copy of ``nodes`` (a structured array or a dict of
    its fields): deterministic bytes, padding included."""
    n = nodes["feature"].shape[0]
    out = np.zeros(n, dtype=NODE_DTYPE)
    for name in NODE_DTYPE.names:
        out[name] = nodes[name]
    return out


#: Words of a category set: 256 codes, bit c of word c // 32 (``_categorical.pxd``).
CATEGORY_SET_WORDS = 8
#: Most category codes of a categorical feature (0 .. 255).
MAX_CATEGORY_CODES = 32 * CATEGORY_SET_WORDS


def check_categorical(nodes, offsets, n_features, categorical, category_sets):
    """The categorical features and category sets of an ensemble, checked.

    Parameters
    ----------
    nodes : NODE_DTYPE array (valid trees, ``validate_trees``)
    offsets : int64 array of shape (n_trees + 1,)
    n_features : int
    categorical : array-like of bool of shape (n_features,), or None
        The features whose splits send a set of category codes left.
    category_sets : array-like of uint32 of shape (n_sets, 8), or None
        The sets: a node on a categorical feature sends left the codes c whose bit
        (bit c % 32 of word c // 32) is set in row ``threshold`` of this table.

    Returns
    -------
    (categorical, category_sets) : (bool ndarray, uint32 ndarray) or (None, None)
        Read-only copies; (None, None) for a model without categorical features.

    Raises
    ------
    ValueError
        Naming the first problem: a mask of the wrong shape, sets without a mask, a
        categorical node whose threshold is not a row of the table.
    """
    if categorical is None:
        if category_sets is not None and np.asarray(category_sets).size:
            raise ValueError("category_sets were given without categorical features")
        return None, None
    mask = np.asarray(categorical)
    if mask.dtype != np.bool_ and not (mask.dtype.kind in "iu" and np.isin(mask, (0, 1)).all()):
        raise ValueError(f"categorical must be booleans, one per feature, got dtype {mask.dtype}")
    mask = np.array(mask, dtype=bool).reshape(-1) if mask.ndim <= 1 else mask
    if mask.shape != (n_features,):
        raise ValueError(f"categorical must hold one boolean per feature ({n_features}), "
                         f"got shape {np.shape(categorical)}")
    if not mask.any():
        if category_sets is not None and np.asarray(category_sets).size:
            raise ValueError("category_sets were given, but no feature is categorical")
        return None, None
    sets = np.zeros((0, CATEGORY_SET_WORDS), np.uint32) if category_sets is None else \
        np.asarray(category_sets)
    if sets.ndim != 2 or sets.shape[1] != CATEGORY_SET_WORDS or not (
            sets.dtype == np.uint32 or (sets.dtype.kind in "iu" and sets.size == 0)):
        raise ValueError(f"category_sets must be a uint32 array of shape (n_sets, "
                         f"{CATEGORY_SET_WORDS}), got {sets.dtype} of shape {sets.shape}")
    sets = np.array(sets, dtype=np.uint32)
    feature = nodes["feature"].astype(np.int64)
    on_category = (feature >= 0) & mask[np.maximum(feature, 0)]
    row = nodes["threshold"][on_category]
    bad = ~((row >= 0) & (row < sets.shape[0]) & (row == np.floor(row)))
    if bad.any():
        i = int(np.flatnonzero(on_category)[_first(bad)])
        t = int(np.searchsorted(offsets, i, side="right")) - 1
        raise ValueError(
            f"tree {t}, node {i - int(offsets[t])}: a split on categorical feature "
            f"{int(feature[i])} must name a row of the {sets.shape[0]} category sets by "
            f"its threshold, got {float(nodes['threshold'][i])!r}")
    mask.flags.writeable = False
    sets.flags.writeable = False
    return mask, sets


def raw_score_bound(nodes, offsets, n_outputs, init_raw, learning_rate):
    """The largest abs(F_k(x)) over every x, per output: abs(init_raw[k]) + the sum over
    the trees of output k of learning_rate x their largest |leaf value|."""
    bound = np.abs(np.asarray(init_raw, dtype=np.float64)).copy()
    n_trees = len(offsets) - 1
    if n_trees:
        with np.errstate(over="ignore"):
            per_tree = np.maximum.reduceat(np.abs(nodes["value"]), offsets[:-1])
            bound += learning_rate * per_tree.reshape(-1, n_outputs).sum(axis=0)
    return bound


def add_raw_to(predictor, X, out, iteration_start, iteration_stop, n_threads):
    """``predictor.predict_raw`` of checked rows ``X``: a float32 C-order array, or a
    float32 CSR matrix of ``check_features`` (scored row by row in the kernel, never
    densified: ``Predictor.predict_raw_csr``); the same scores either way."""
    if is_sparse_matrix(X):
        if X.shape[1] != predictor.n_features:  # (the kernel scatters by column index)
            raise ValueError(f"X has {X.shape[1]} features, but the model expects "
                             f"{predictor.n_features}")
        data, indices, indptr = sparse_arrays(as_format(X, "csr"))
        predictor.predict_raw_csr(data, indices, indptr, out, iteration_start,
                                  iteration_stop, n_threads)
    else:
        predictor.predict_raw(X, out, iteration_start, iteration_stop, n_threads)


#: The hyper-parameters of a fit that scikit-learn's GradientBoostingClassifier passes
#: to each of its ``DecisionTreeRegressor`` s, which a :class:`Tree` offers under the
#: same names (but max_depth: a Tree's is its depth, which a warm start with another
#: max_depth changes from tree to tree).
_TREE_PARAMS = ("min_samples_split", "min_samples_leaf", "min_weight_fraction_leaf",
                "min_impurity_decrease", "max_features", "max_leaf_nodes", "ccp_alpha")

# scikit-learn's markers in its tree arrays (sklearn.tree._tree.TREE_LEAF and
# TREE_UNDEFINED): the children of a leaf, and a leaf's feature and threshold.
_TREE_LEAF = -1
_TREE_UNDEFINED = -2


class _SklearnTreeArrays:
    """A tree's nodes in the form of scikit-learn's ``tree_`` of a gradient boosting
    stage (``sklearn.tree._tree.Tree``), read-only.

    The nodes keep gbc-core's numbers (those ``apply`` gives; children after their
    parent, as in every scikit-learn tree, though scikit-learn's builder numbers a
    level-by-level tree depth first); a leaf's children are -1 and its feature and
    threshold -2; ``value`` has the shape (node_count, 1, 1). At a leaf ``value`` is
    the leaf's gamma, as scikit-learn's (without the learning rate). An inner node's
    ``value`` and every ``impurity`` come from what gbc-core keeps of a tree
    (scikit-learn's are the weighted mean and variance of the residuals that reached
    the node, which it does not keep): an inner node's value is the weighted mean of
    its leaves' values (weights ``weighted_n_node_samples``), the leaves' impurity
    is 0 and an inner node's is such that ``weighted_n_node_samples * impurity`` of
    a node less that of its two children is the split's squared-error decrease,
    scikit-learn's: the feature importances computed from it are scikit-learn's.
    """

    def __init__(self, nodes, n_features):
        n = nodes.shape[0]
        leaf = nodes["feature"] < 0
        inner = np.flatnonzero(~leaf)
        left = np.where(leaf, _TREE_LEAF, nodes["left"]).astype(np.intp)
        right = np.where(leaf, _TREE_LEAF, nodes["right"]).astype(np.intp)
        w = nodes["weighted_n"].astype(np.float64)
        value = np.where(leaf, nodes["value"], 0.0)
        impurity = np.zeros(n, dtype=np.float64)
        depth = np.zeros(n, dtype=np.intp)
        for j in inner[::-1]:  # children come after their parents
            l, r = left[j], right[j]
            if w[j] > 0:
                value[j] = (w[l] * value[l] + w[r] * value[r]) / w[j]
                impurity[j] = (nodes["improvement"][j] + w[l] * impurity[l]
                               + w[r] * impurity[r]) / w[j]
        for j in inner:
            depth[left[j]] = depth[right[j]] = depth[j] + 1
        self.node_count = self.capacity = n
        self.max_depth = int(depth.max())
        self.n_leaves = int(leaf.sum())
        self.n_features = n_features
        self.n_outputs = self.max_n_classes = 1
        self.n_classes = np.ones(1, dtype=np.intp)
        self.children_left = left
        self.children_right = right
        self.feature = np.where(leaf, _TREE_UNDEFINED, nodes["feature"]).astype(np.intp)
        self.threshold = np.where(leaf, float(_TREE_UNDEFINED), nodes["threshold"])
        self.value = value.reshape(n, 1, 1)
        self.impurity = impurity
        self.n_node_samples = nodes["n_samples"].astype(np.intp)
        self.weighted_n_node_samples = w
        self.missing_go_to_left = np.where(leaf, 0, nodes["missing_go_left"]).astype(np.uint8)
        for array in vars(self).values():
            if isinstance(array, np.ndarray):
                array.flags.writeable = False

    def __repr__(self):
        return f"<tree_ of {self.node_count} nodes, max_depth={self.max_depth}>"


def _tree_param(name):
    def get(self):
        if name not in self._params:
            raise AttributeError(f"{name}: this Tree was made without the parameters of "
                                 "its fit (pass params=)")
        return self._params[name]

    return property(get, doc=f"{name} of the fit (as scikit-learn's trees' {name})")


class Tree:
    """One regression tree of an ensemble, with the node arrays named as in
    scikit-learn's ``tree_``, and as a scikit-learn ``DecisionTreeRegressor`` of a
    gradient boosting stage: ``tree_`` and the parameters of the fit.

    Nodes are numbered from the root (0) level by level (a best-first tree: in the
    order they were split); a leaf has ``feature == -1`` and children -1;
    ``x[feature] <= threshold`` goes to ``children_left`` (missing values:
    ``missing_go_to_left``); ``value`` is the leaf's gamma (0 for an inner node): the
    tree adds ``learning_rate * value`` to its output's raw score.

    Parameters
    ----------
    nodes : ndarray of ``NODE_DTYPE``
        The tree's nodes (copied, read-only).
    n_features : int, optional
        Features of a row (``tree_.n_features``).
    params : dict, optional
        The hyper-parameters of the fit (``Booster.params``): the tree offers those
        scikit-learn's trees hold (see below) as attributes.
    categorical : array-like of bool of shape (n_features,), optional
        The model's categorical features: a split on one sends a set of category
        codes left (its threshold names the set, see :class:`Ensemble`), which
        scikit-learn's ``tree_`` cannot express.

    Attributes
    ----------
    tree_ : object
        The tree as scikit-learn's ``tree_`` (read-only arrays ``children_left``,
        ``children_right``, ``feature``, ``threshold``, ``value`` of shape
        (node_count, 1, 1), ``impurity``, ``n_node_samples``,
        ``weighted_n_node_samples``, ``missing_go_to_left``; ``node_count``,
        ``max_depth``, ``n_leaves``, ``n_features``...), the nodes numbered as the
        Tree's (``apply`` gives these numbers; scikit-learn's builder would number
        a level-by-level tree depth first), leaves marked with feature and
        threshold -2, as scikit-learn's. A leaf's value is
        its gamma, as scikit-learn's; an inner node's value and the impurities are
        derived from the tree (scikit-learn's are its residuals' weighted mean and
        variance, which gbc-core does not keep): the cover-weighted mean of its
        leaves' values, and impurities whose weighted decreases are the splits'
        improvements (0 at the leaves).
    min_samples_split, min_samples_leaf, min_weight_fraction_leaf, \
    min_impurity_decrease, max_features, max_leaf_nodes, ccp_alpha
        The parameters of the model's fit, as scikit-learn's trees hold them (those
        of its last fit: trees of an earlier fit that a warm start went on from
        were grown with that fit's values).
    max_depth : int
        The tree's depth (scikit-learn's trees hold the ``max_depth`` parameter,
        which a warm start may change from tree to tree: the depth is what a tree
        shows of it).

    Examples
    --------
    >>> from gbc_core import GradientBoostingClassifier
    >>> model = GradientBoostingClassifier(n_estimators=2, max_depth=1).fit([[0.0], [1.0]], [0, 1])
    >>> tree = model.estimators_[0, 0]
    >>> tree.node_count, tree.feature.tolist(), tree.children_left.tolist()
    (3, [0, -1, -1], [1, -1, -1])
    >>> tree.tree_.feature.tolist(), tree.tree_.max_depth, tree.min_samples_leaf
    ([0, -2, -2], 1, 1)
    """

    def __init__(self, nodes, *, n_features=None, params=None, categorical=None):
        self.nodes = _node_array(nodes)
        self.nodes.flags.writeable = False
        self._n_features = n_features
        self._categorical = None if categorical is None else np.asarray(categorical, bool)
        self._params = {name: params[name] for name in _TREE_PARAMS
                        if params is not None and name in params}

    node_count = property(lambda self: self.nodes.shape[0], doc="number of nodes")
    feature = property(lambda self: self.nodes["feature"], doc="split feature, -1: leaf")
    threshold = property(lambda self: self.nodes["threshold"], doc="x <= threshold goes left")
    children_left = property(lambda self: self.nodes["left"], doc="left child, -1: leaf")
    children_right = property(lambda self: self.nodes["right"], doc="right child, -1: leaf")
    value = property(lambda self: self.nodes["value"], doc="leaf value gamma (0: inner)")
    missing_go_to_left = property(lambda self: self.nodes["missing_go_left"],
                                  doc="1 if missing values go left")
    n_node_samples = property(lambda self: self.nodes["n_samples"],
                              doc="in-bag samples of the node")
    weighted_n_node_samples = property(lambda self: self.nodes["weighted_n"],
                                       doc="weight of the node's in-bag samples")
    improvement = property(lambda self: self.nodes["improvement"],
                           doc="weighted squared-error decrease of the split")

    @functools.cached_property
    def tree_(self):
        """The tree as scikit-learn's ``tree_`` (see the class's Attributes)."""
        if self._categorical is not None:
            feature = self.nodes["feature"]
            on_category = (feature >= 0) & self._categorical[np.maximum(feature, 0)]
            if on_category.any():
                raise ValueError(
                    f"node {_first(on_category)} splits categorical feature "
                    f"{int(feature[_first(on_category)])} by a set of categories, which "
                    "scikit-learn's tree_ cannot express")
        return _SklearnTreeArrays(self.nodes, self._n_features)

    max_depth = property(lambda self: int(self.nodes["depth"].max()), doc="depth")
    min_samples_split = _tree_param("min_samples_split")
    min_samples_leaf = _tree_param("min_samples_leaf")
    min_weight_fraction_leaf = _tree_param("min_weight_fraction_leaf")
    min_impurity_decrease = _tree_param("min_impurity_decrease")
    max_features = _tree_param("max_features")
    max_leaf_nodes = _tree_param("max_leaf_nodes")
    ccp_alpha = _tree_param("ccp_alpha")

    def __repr__(self):
        return f"Tree(node_count={self.node_count}, max_depth={self.max_depth})"


class Ensemble:
    """The trees of a fitted model and the raw scores they add up to.

    Parameters
    ----------
    nodes : NODE_DTYPE array
        The nodes of every tree, concatenated, tree-relative child indices.
    tree_offsets : int array of shape (n_trees + 1,)
        Tree t is ``nodes[tree_offsets[t]:tree_offsets[t + 1]]``.
    n_outputs : int
        Raw scores per row, K; ``n_trees`` is a multiple of it.
    init_raw : array-like of shape (n_outputs,)
        F0 of each output.
    learning_rate : float
        eta > 0.
    n_features : int
        Features of a row, 1 to 2**24 (``MAX_FEATURES``); the trees may use fewer.
    categorical : array-like of bool of shape (n_features,), optional
        The categorical features: their values are category codes (0, 1, ...; NaN
        missing), and a split on one sends a set of codes left.
    category_sets : uint32 array of shape (n_sets, 8), optional
        The sets of the categorical splits: a node on a categorical feature sends
        left the codes c with bit c % 32 of word c // 32 set in row ``threshold``
        of this table; NaN, and a value that is no code in [0, 256), goes where
        the node sends missing values.

    Raises
    ------
    ValueError
        For trees that are not valid (see :func:`validate_trees`), raw scores
        that could overflow, or categorical splits whose sets are not in the table.

    Examples
    --------
    >>> from gbc_core import Ensemble
    >>> from gbc_core.paper import stump_nodes
    >>> nodes = stump_nodes(2.5)
    >>> nodes["value"][1:] = [-1.0, 1.0]            # the leaves' gamma
    >>> ensemble = Ensemble(nodes, [0, 3], n_outputs=1, init_raw=[0.0], learning_rate=0.5,
    ...                     n_features=1)
    >>> ensemble.predict_raw([[1.0], [4.0]]).ravel().tolist()
    [-0.5, 0.5]
    """

    def __init__(self, nodes, tree_offsets, *, n_outputs, init_raw, learning_rate,
                 n_features, categorical=None, category_sets=None):
        nodes = _node_array(nodes)  # a copy of its own
        offsets = np.array(tree_offsets, dtype=np.int64)
        init_raw = np.array(init_raw, dtype=np.float64).reshape(-1)
        n_outputs, n_features = int(n_outputs), int(n_features)
        learning_rate = float(learning_rate)
        if n_outputs < 1 or init_raw.shape != (n_outputs,):
            raise ValueError(f"init_raw must hold one value per output (n_outputs="
                             f"{n_outputs}), got shape {init_raw.shape}")
        if not np.isfinite(init_raw).all():
            raise ValueError("init_raw must be finite")
        if not (np.isfinite(learning_rate) and learning_rate > 0):
            raise ValueError(f"learning_rate must be a finite number > 0, got {learning_rate!r}")
        if not 1 <= n_features <= MAX_FEATURES:
            raise ValueError(f"n_features must be in [1, 2**24 = {MAX_FEATURES}], got "
                             f"{n_features}")
        validate_trees(nodes, offsets, n_features)
        if (offsets.shape[0] - 1) % n_outputs:
            raise ValueError(f"{offsets.shape[0] - 1} trees are not whole iterations of "
                             f"{n_outputs} outputs")
        categorical, category_sets = check_categorical(nodes, offsets, n_features,
                                                       categorical, category_sets)
        bound = raw_score_bound(nodes, offsets, n_outputs, init_raw, learning_rate)
        if not (bound <= RAW_SCORE_LIMIT).all():
            raise ValueError(
                f"the raw scores can overflow: |init_raw| + learning_rate x the largest "
                f"|leaf value| of each tree is {float(bound.max())!r} > {RAW_SCORE_LIMIT:.0e}")
        nodes.flags.writeable = False
        offsets.flags.writeable = False
        init_raw.flags.writeable = False
        self._nodes = nodes
        self._offsets = offsets
        self._n_outputs = n_outputs
        self._init_raw = init_raw
        self._learning_rate = learning_rate
        self._n_features = n_features
        self._categorical = categorical
        self._category_sets = category_sets
        self._predictor = Predictor(nodes, offsets, learning_rate, n_features, n_outputs)

    @classmethod
    def from_trees(cls, trees, *, n_outputs, init_raw, learning_rate, n_features,
                   categorical=None, category_sets=None):
        """An ensemble of a list of trees (node arrays) in iteration order.

        Parameters
        ----------
        trees : list of ndarray
            Node arrays (``NODE_DTYPE``), K per iteration.
        n_outputs : int
            Raw scores per row, K.
        init_raw : array-like of shape (n_outputs,)
            F0 of each output.
        learning_rate : float
            eta > 0.
        n_features : int
            Features of a row.
        categorical, category_sets : optional
            As for :class:`Ensemble` (the sets' rows as the trees' thresholds name
            them).

        Returns
        -------
        Ensemble

        Raises
        ------
        ValueError
            For invalid trees or raw scores that could overflow.

        Examples
        --------
        >>> from gbc_core import GradientBoostingClassifier
        >>> X = [[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]]
        >>> fitted = GradientBoostingClassifier(n_estimators=5, max_depth=1).fit(X, [0, 0, 0, 1, 1, 1])
        >>> ensemble = fitted.booster_.ensemble
        >>> from gbc_core import Ensemble
        >>> again = Ensemble.from_trees(ensemble.trees(), n_outputs=1, init_raw=[0.0],
        ...                             learning_rate=0.1, n_features=1)
        >>> bool((again.predict_raw(X) == ensemble.predict_raw(X)).all())
        True
        """
        sizes = [t.shape[0] for t in trees]
        offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
        # Field by field (a concatenation of structured arrays promotes their dtypes
        # pair by pair: milliseconds for a hundred trees), into zeros: deterministic
        # bytes, padding included.
        nodes = np.zeros(int(offsets[-1]), dtype=NODE_DTYPE)
        if trees:
            for name in NODE_DTYPE.names:
                nodes[name] = np.concatenate([t[name] for t in trees])
        return cls(nodes, offsets, n_outputs=n_outputs, init_raw=init_raw,
                   learning_rate=learning_rate, n_features=n_features,
                   categorical=categorical, category_sets=category_sets)

    # -------------------------------------------------------------- structure
    nodes = property(lambda self: self._nodes,
                     doc="every tree's nodes (NODE_DTYPE, read-only), concatenated")
    tree_offsets = property(lambda self: self._offsets, doc="tree t starts at tree_offsets[t]")
    n_outputs = property(lambda self: self._n_outputs, doc="raw scores per row (K)")
    init_raw = property(lambda self: self._init_raw, doc="F0 of each output (read-only)")
    learning_rate = property(lambda self: self._learning_rate, doc="eta")
    n_features = property(lambda self: self._n_features, doc="features of a row")
    categorical = property(
        lambda self: self._categorical,
        doc="bool array: the categorical features (read-only); None when there are none")
    category_sets = property(
        lambda self: self._category_sets,
        doc="uint32 array (n_sets, 8): the categorical splits' sets (read-only), or None")
    n_trees = property(lambda self: self._offsets.shape[0] - 1, doc="number of trees")
    n_iterations = property(lambda self: (self._offsets.shape[0] - 1) // self._n_outputs,
                            doc="boosting iterations (trees per output)")

    def tree_nodes(self, iteration, output=0):
        """The nodes of the tree of ``iteration`` for ``output`` (a read-only view).

        Parameters
        ----------
        iteration : int
            0-based; negative counts from the end.
        output : int, default=0
            The output (class) of the tree: 0 for two classes.

        Returns
        -------
        ndarray of ``NODE_DTYPE``

        Examples
        --------
        >>> from gbc_core import GradientBoostingClassifier
        >>> X = [[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]]
        >>> fitted = GradientBoostingClassifier(n_estimators=5, max_depth=1).fit(X, [0, 0, 0, 1, 1, 1])
        >>> ensemble = fitted.booster_.ensemble
        >>> ensemble.tree_nodes(0)["feature"].tolist()
        [0, -1, -1]
        """
        t = self._tree_index(iteration, output)
        return self._nodes[self._offsets[t]: self._offsets[t + 1]]

    def tree(self, iteration, output=0):
        """The tree of ``iteration`` for ``output`` as a :class:`Tree`.

        Parameters
        ----------
        iteration : int
            0-based; negative counts from the end.
        output : int, default=0
            The output (class) of the tree: 0 for two classes.

        Returns
        -------
        Tree

        Examples
        --------
        >>> from gbc_core import GradientBoostingClassifier
        >>> X = [[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]]
        >>> fitted = GradientBoostingClassifier(n_estimators=5, max_depth=1).fit(X, [0, 0, 0, 1, 1, 1])
        >>> ensemble = fitted.booster_.ensemble
        >>> ensemble.tree(-1).node_count
        3
        """
        return Tree(self.tree_nodes(iteration, output), n_features=self._n_features,
                    categorical=self._categorical)

    def trees(self):
        """Every tree's nodes (copies), in iteration order (K per iteration).

        Returns
        -------
        list of ndarray

        Examples
        --------
        >>> from gbc_core import GradientBoostingClassifier
        >>> X = [[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]]
        >>> fitted = GradientBoostingClassifier(n_estimators=5, max_depth=1).fit(X, [0, 0, 0, 1, 1, 1])
        >>> ensemble = fitted.booster_.ensemble
        >>> len(ensemble.trees())
        5
        """
        return [self._nodes[self._offsets[t]: self._offsets[t + 1]].copy()
                for t in range(self.n_trees)]

    def _tree_index(self, iteration, output):
        if not (0 <= output < self._n_outputs and -self.n_iterations <= iteration
                < self.n_iterations):
            raise IndexError(f"no tree for iteration {iteration}, output {output}: the "
                             f"ensemble has {self.n_iterations} iterations of "
                             f"{self._n_outputs} output(s)")
        return (iteration % self.n_iterations) * self._n_outputs + output

    def raw_bound(self):
        """Per output, the largest abs(F_k(x)) any x can reach.

        Returns
        -------
        ndarray of shape (n_outputs,)
            abs(F0) plus, per tree, learning_rate x its largest absolute leaf value.

        Examples
        --------
        >>> from gbc_core import GradientBoostingClassifier
        >>> X = [[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]]
        >>> fitted = GradientBoostingClassifier(n_estimators=5, max_depth=1).fit(X, [0, 0, 0, 1, 1, 1])
        >>> ensemble = fitted.booster_.ensemble
        >>> ensemble.raw_bound().round(4)      # reached here: every tree's largest leaf
        array([0.8571])
        """
        return raw_score_bound(self._nodes, self._offsets, self._n_outputs, self._init_raw,
                               self._learning_rate)

    # ------------------------------------------------------------- prediction
    def _check_X(self, X):
        Xa = check_features(X, "X", dtype=np.float32, order="C", sparse="csr")
        if Xa.shape[1] != self._n_features:
            raise ValueError(f"X has {Xa.shape[1]} features, but the model expects "
                             f"{self._n_features}")
        if self._categorical is not None and is_sparse_matrix(Xa):
            raise ValueError(
                "a model with categorical features (columns "
                f"{np.flatnonzero(self._categorical).tolist()}) scores dense X only; got a "
                "sparse matrix (convert it with .toarray())")
        return Xa

    def _categorical_leaves(self, Xa, tree_start, tree_stop, n_threads):
        """The leaf of every row in trees ``tree_start .. tree_stop-1`` of a model
        with categorical splits (``_predictor.categorical_leaves``), (n_samples,
        tree_stop - tree_start) tree-relative node indices."""
        first, last = self._offsets[tree_start], self._offsets[tree_stop]
        return categorical_leaves(self._nodes[first:last],
                                  self._offsets[tree_start:tree_stop + 1] - first,
                                  self._category_sets, self._categorical, Xa, n_threads)

    def _add_raw(self, Xa, out, iteration_start, iteration_stop, n_threads):
        """Add iterations ``iteration_start .. iteration_stop-1`` to ``out``: each
        tree's ``learning_rate * value`` of the row's leaf in tree order, as a fit
        adds them (the numeric models' kernel, or the categorical one)."""
        if self._categorical is None:
            add_raw_to(self._predictor, Xa, out, iteration_start, iteration_stop, n_threads)
            return
        if is_sparse_matrix(Xa):
            raise ValueError("a model with categorical features scores dense X only")
        k = self._n_outputs
        start, stop = iteration_start * k, iteration_stop * k
        if stop <= start or Xa.shape[0] == 0:
            return
        leaves = self._categorical_leaves(Xa, start, stop, n_threads)
        values = self._nodes["value"]
        for t in range(start, stop):
            out[:, t % k] += self._learning_rate * values[self._offsets[t] + leaves[:, t - start]]

    def predict_raw(self, X, *, n_jobs=None, iterations=None):
        """Raw scores F(x) (paper Algorithm 2, before sigma / softmax).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            Sparse input (CSR or CSC, matrix or array classes; other formats are
            converted to CSR): an implicit zero is the value 0.0, a stored NaN a
            missing value; the rows are scored one at a time, never densified, with
            the scores of the same data dense.
        n_jobs : int, optional
            Threads (None: all cores); the result does not depend on it.
        iterations : int, optional
            Use the first ``iterations`` iterations only, 0 to ``n_iterations``
            (default: all; 0: the initial scores alone).

        Returns
        -------
        ndarray of shape (n_samples, n_outputs)

        Examples
        --------
        >>> from gbc_core import GradientBoostingClassifier
        >>> X = [[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]]
        >>> fitted = GradientBoostingClassifier(n_estimators=5, max_depth=1).fit(X, [0, 0, 0, 1, 1, 1])
        >>> ensemble = fitted.booster_.ensemble
        >>> ensemble.predict_raw([[5.0]], iterations=1).round(3)
        array([[0.2]])
        """
        Xa = self._check_X(X)
        out = np.empty((Xa.shape[0], self._n_outputs), dtype=np.float64)
        out[:] = self._init_raw
        stop = self.n_iterations
        if iterations is not None:
            if (isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer))
                    or not 0 <= iterations <= self.n_iterations):
                raise ValueError(f"iterations must be an integer from 0 to "
                                 f"{self.n_iterations} (the model's), got {iterations!r}")
            stop = int(iterations)
        self._add_raw(Xa, out, 0, stop, effective_n_threads(n_jobs))
        return out

    def staged_predict_raw(self, X, *, n_jobs=None):
        """The raw scores after each iteration (1, 2, ... iterations).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows (float32 after checking); NaN is a missing value.
        n_jobs : int, optional
            Threads (None: all cores); the result does not depend on it.

        Yields
        ------
        ndarray of shape (n_samples, n_outputs)

        Examples
        --------
        >>> from gbc_core import GradientBoostingClassifier
        >>> X = [[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]]
        >>> fitted = GradientBoostingClassifier(n_estimators=5, max_depth=1).fit(X, [0, 0, 0, 1, 1, 1])
        >>> ensemble = fitted.booster_.ensemble
        >>> [round(float(f[0, 0]), 3) for f in ensemble.staged_predict_raw([[5.0]])][:2]
        [0.2, 0.382]
        """
        Xa = self._check_X(X)
        n_threads = effective_n_threads(n_jobs)
        out = np.empty((Xa.shape[0], self._n_outputs), dtype=np.float64)
        out[:] = self._init_raw
        for m in range(self.n_iterations):
            self._add_raw(Xa, out, m, m + 1, n_threads)
            yield out.copy()

    def add_raw(self, X, out, iteration_start, iteration_stop, n_threads=1):
        """Add the trees of iterations ``iteration_start .. iteration_stop-1`` to the raw
        scores ``out``: the additions of a fit, in the same order.

        Parameters
        ----------
        X : ndarray of float32 (C order) or float32 CSR matrix
            Rows already checked (``check_features``).
        out : ndarray of float64, shape (n_samples, n_outputs)
            Raw scores, updated in place.
        iteration_start, iteration_stop : int
            The iterations added.
        n_threads : int, default=1
            Threads.

        Returns
        -------
        None

        Examples
        --------
        >>> from gbc_core import GradientBoostingClassifier
        >>> X = [[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]]
        >>> fitted = GradientBoostingClassifier(n_estimators=5, max_depth=1).fit(X, [0, 0, 0, 1, 1, 1])
        >>> ensemble = fitted.booster_.ensemble
        >>> import numpy as np
        >>> out = np.zeros((1, 1))
        >>> ensemble.add_raw(np.array([[5.0]], dtype=np.float32), out, 0, 1)
        >>> out.round(3)
        array([[0.2]])
        """
        self._add_raw(X, out, iteration_start, iteration_stop, n_threads)

    def _tree_shap(self):
        """The TreeSHAP form of the trees (built on first use)."""
        shap = self.__dict__.get("_shap")
        if shap is None:
            inner = self._nodes["feature"] >= 0
            bad = inner & ~(self._nodes["weighted_n"] > 0)
            if bad.any():
                i = _first(bad)
                t = int(np.searchsorted(self._offsets, i, side="right")) - 1
                raise ValueError(
                    f"tree {t}, node {i - int(self._offsets[t])}: an inner node with "
                    "weighted_n 0 has no cover to split; TreeSHAP needs the sample "
                    "weight each node saw in the fit (weighted_n > 0 at every split)")
            # eta * gamma_j, the same float64 product as the predictor's.
            scaled = self._learning_rate * self._nodes["value"]
            shap = TreeShap(self._nodes, self._offsets, scaled, self._n_features,
                            self._n_outputs, categorical=self._categorical,
                            category_sets=self._category_sets)
            self._shap = shap
        return shap

    def expected_value(self):
        """The raw scores with no feature known, per output: F0 plus, for each tree, the
        mean of what its leaves add weighted by their covers (``weighted_n``, the in-bag
        sample weight each node saw in the fit): the last column of
        :meth:`predict_contributions`.

        Returns
        -------
        ndarray of shape (n_outputs,)

        Examples
        --------
        >>> from gbc_core import GradientBoostingClassifier
        >>> X = [[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]]
        >>> fitted = GradientBoostingClassifier(n_estimators=5, max_depth=1).fit(X, [0, 0, 0, 1, 1, 1])
        >>> ensemble = fitted.booster_.ensemble
        >>> ensemble.expected_value().round(6)
        array([0.])
        """
        return self._tree_shap().expected_values(self._init_raw)

    def predict_contributions(self, X, *, n_jobs=None):
        """Feature contributions to the raw scores (exact path-dependent TreeSHAP).

        Lundberg, Erion and Lee 2018, Algorithm 2: the expectation over the features left
        out follows each node's cover ``weighted_n``; a missing value follows the split's
        learned direction, as in prediction. Each row's contributions add up to its raw
        score.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            Sparse rows are read one at a time (see :meth:`predict_raw`); the
            result itself is dense.
        n_jobs : int, optional
            Threads (None: all cores); the result does not depend on it.

        Returns
        -------
        ndarray of shape (n_samples, n_outputs, n_features + 1)
            ``out[i, k, f]`` is the SHAP value of feature f for row i and raw score k;
            the last column is :meth:`expected_value`.

        Examples
        --------
        >>> from gbc_core import GradientBoostingClassifier
        >>> X = [[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]]
        >>> fitted = GradientBoostingClassifier(n_estimators=5, max_depth=1).fit(X, [0, 0, 0, 1, 1, 1])
        >>> ensemble = fitted.booster_.ensemble
        >>> phi = ensemble.predict_contributions([[5.0]])
        >>> bool(abs(phi.sum() - ensemble.predict_raw([[5.0]])[0, 0]) < 1e-12)
        True
        """
        Xa = self._check_X(X)
        shap = self._tree_shap()
        out = np.zeros((Xa.shape[0], self._n_outputs, self._n_features + 1),
                       dtype=np.float64)
        out[:, :, -1] = shap.expected_values(self._init_raw)
        if is_sparse_matrix(Xa):
            shap.contributions_csr(*sparse_arrays(Xa), out, effective_n_threads(n_jobs))
        else:
            shap.contributions(Xa, out, effective_n_threads(n_jobs))
        return out

    def apply(self, X):
        """Leaf (tree-relative node index) of every row in every tree.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows (float32 after checking); NaN is a missing value.

        Returns
        -------
        ndarray of int32, shape (n_samples, n_iterations, n_outputs)

        Examples
        --------
        >>> from gbc_core import GradientBoostingClassifier
        >>> X = [[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]]
        >>> fitted = GradientBoostingClassifier(n_estimators=5, max_depth=1).fit(X, [0, 0, 0, 1, 1, 1])
        >>> ensemble = fitted.booster_.ensemble
        >>> ensemble.apply([[0.0], [5.0]])[:, 0, 0].tolist()
        [1, 2]
        """
        Xa = self._check_X(X)
        if self._categorical is not None:
            leaves = self._categorical_leaves(Xa, 0, self.n_trees, effective_n_threads(None))
            return leaves.reshape(Xa.shape[0], self.n_iterations, self._n_outputs)
        if is_sparse_matrix(Xa):
            return self._predictor.apply_csr(*sparse_arrays(Xa))
        return self._predictor.apply(Xa)

    def feature_importances(self):
        """Normalised total squared-error decrease of the splits on each feature.

        Each tree's decreases are divided by its root weight, then summed over the trees
        and normalised to sum to 1 (as scikit-learn's gradient boosting).

        Returns
        -------
        ndarray of shape (n_features,)
            Sums to 1 (zeros when no tree has a split).

        Examples
        --------
        >>> from gbc_core import GradientBoostingClassifier
        >>> X = [[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]]
        >>> fitted = GradientBoostingClassifier(n_estimators=5, max_depth=1).fit(X, [0, 0, 0, 1, 1, 1])
        >>> ensemble = fitted.booster_.ensemble
        >>> ensemble.feature_importances()
        array([1.])
        """
        total = np.zeros(self._n_features, dtype=np.float64)
        for t in range(self.n_trees):
            tree = self._nodes[self._offsets[t]: self._offsets[t + 1]]
            inner = tree[tree["feature"] >= 0]
            if inner.shape[0] == 0:
                continue
            # The sums of the features the tree splits on (not an array of every
            # feature per tree), added in node order as before.
            used, which = np.unique(inner["feature"], return_inverse=True)
            per_tree = np.zeros(used.shape[0], dtype=np.float64)
            np.add.at(per_tree, which.reshape(-1), inner["improvement"])
            root_w = tree["weighted_n"][0]
            with np.errstate(over="ignore"):
                total[used] += per_tree / root_w if root_w > 0 else per_tree
        if not np.isfinite(total).all():  # absurd statistics (a hand-edited model file)
            total = np.isinf(total).astype(np.float64)
        sum_ = total.sum()
        if sum_ <= 0:
            total.fill(0.0)
        else:
            total /= sum_
        return total

    # --------------------------------------------------------------- pickling
    def __getstate__(self):
        state = {"nodes": self._nodes, "tree_offsets": self._offsets,
                 "n_outputs": self._n_outputs, "init_raw": self._init_raw,
                 "learning_rate": self._learning_rate, "n_features": self._n_features}
        if self._categorical is not None:
            state.update(categorical=self._categorical, category_sets=self._category_sets)
        return state

    def __setstate__(self, state):
        state = dict(state)
        self.__init__(state.pop("nodes"), state.pop("tree_offsets"), **state)

    def __repr__(self):
        return (f"Ensemble(n_iterations={self.n_iterations}, n_outputs={self._n_outputs}, "
                f"n_features={self._n_features}, learning_rate={self._learning_rate!r})")
