"""The boosting loop (paper Algorithm 1), with callbacks for what is not boosting.

For each iteration: draw the in-bag rows (``subsample``), then for each of the
loss's K outputs grow one tree on that output's residuals and let the loss set its
leaf values and update the raw scores; then record the training loss (and the
out-of-bag and validation losses when there are such rows) and ask the callbacks
whether to stop. Early stopping and the per-iteration log are callbacks
(:class:`EarlyStopping`, :class:`Log`), as in the peers' training APIs; so is the
estimator's ``fit(monitor=...)``.

The record is in scikit-learn's units: each loss times the loss's
``score_factor`` (2 for the binomial log-loss, whose deviance scikit-learn
reports; 1 otherwise).

NumPy and the kernels only: no scikit-learn.
"""

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._binning import BinMapper
from ._common import NODE_DTYPE
from ._ensemble import RAW_SCORE_LIMIT, Ensemble, add_raw_to
from ._exact_splitter import ExactSplitFinder
from ._grower import TreeGrower
from ._histogram_splitter import HistogramSplitFinder, bin_value_ranges, bin_value_ranges_csc
from ._loss import loss_name
from ._predictor import Predictor
from ._record import FitRecord
from ._validation import as_format, is_sparse_matrix, sparse_arrays, take_rows


class EarlyStopping:
    """Stop once the validation loss has not improved by more than ``tol`` for
    ``patience`` iterations; the fit then keeps its best iteration.

    Parameters
    ----------
    patience : int
    tol : float
    """

    def __init__(self, patience, tol):
        self.patience = patience
        self.tol = tol
        self.best_loss = np.inf
        self.best_iteration = 0
        self.since_best = 0

    def start(self, record):
        """Replay the validation losses of iterations fitted before (warm start)."""
        self.best_loss, self.best_iteration, self.since_best = np.inf, 0, 0
        for i, loss in enumerate(record.validation_score or ()):
            self._see(i, loss)
        self.best_iteration = self.best_iteration or len(record.train_score)
        return self.since_best >= self.patience

    def _see(self, iteration, loss):
        if loss + self.tol < self.best_loss:
            self.best_loss, self.best_iteration, self.since_best = loss, iteration + 1, 0
        else:
            self.since_best += 1

    def after_iteration(self, iteration, record, current):
        self._see(iteration, record.validation_score[-1])
        return self.since_best >= self.patience

    def finish(self, record):
        record.best_iteration = self.best_iteration


class Log:
    """scikit-learn's verbose report on ``stream``: ``Iter``, ``Train Loss``, ``OOB
    Improve`` (with ``subsample < 1``), ``Valid Loss`` (gbc-core's, with validation
    data) and ``Remaining Time`` (the iterations left to ``n_estimators`` at the mean
    time per iteration so far; early stopping may end sooner).

    ``verbose=1`` reports iterations 1-10, then every 10th to 100, every 100th to
    1,000, and so on (scikit-learn's rate); ``verbose > 1`` every iteration.

    Parameters
    ----------
    verbose : int
        The estimator's ``verbose`` (>= 1).
    n_estimators : int
        Iterations the fit runs at most (counted from the first, warm starts too).
    subsample : float
        The fit's ``subsample``: below 1 the report has the ``OOB Improve`` column.
    stream : file, optional
        Where the report goes (default: ``sys.stdout``).
    """

    def __init__(self, verbose, n_estimators, subsample, stream=None):
        self.verbose = verbose
        self.n_estimators = n_estimators
        self.subsample = subsample
        self.stream = stream if stream is not None else sys.stdout
        self.started = time.perf_counter()
        self.begin_at = 0
        self.every = 1
        self.columns = ()

    def start(self, record):
        self.started = time.perf_counter()
        self.begin_at = len(record.train_score)  # a warm start's first new iteration
        self.every = 1
        columns = ["Iter", "Train Loss"]
        if self.subsample < 1:
            columns.append("OOB Improve")
        if record.validation_score is not None:
            columns.append("Valid Loss")
        columns.append("Remaining Time")
        self.columns = tuple(columns)
        print(f"{columns[0]:>10} " + " ".join(f"{c:>16}" for c in columns[1:]),
              file=self.stream, flush=True)
        return False

    def after_iteration(self, iteration, record, current):
        done = iteration + 1 - self.begin_at  # iterations run by this fit
        if done % self.every:
            return False
        elapsed = time.perf_counter() - self.started
        remaining = (self.n_estimators - (iteration + 1)) * elapsed / done
        remaining = f"{remaining / 60:.2f}m" if remaining > 60 else f"{remaining:.2f}s"
        values = [f"{record.train_score[-1]:16.4f}"]
        if "OOB Improve" in self.columns:
            oob = record.oob_improvement[-1] if record.oob_improvement else 0.0
            values.append(f"{oob:16.4f}")
        if "Valid Loss" in self.columns:
            values.append(f"{record.validation_score[-1]:16.4f}")
        values.append(f"{remaining:>16}")
        print(f"{iteration + 1:>10d} " + " ".join(values), file=self.stream, flush=True)
        if self.verbose == 1 and done // (self.every * 10) > 0:
            self.every *= 10  # scikit-learn's rate: powers of ten
        return False

    def finish(self, record):
        pass


def warm_start_from(booster, params, classes, n_features, names):
    """``previous`` of :func:`boost` for a warm start of the fitted ``booster`` with
    ``params`` on data of these classes, width and feature names: (ensemble,
    record), or None when there is nothing to add.

    Raises
    ------
    ValueError
        Data of other features or classes, fewer iterations than fitted, or another
        learning rate, loss or leaf solver than the fitted trees'.
    """
    old_names = booster.feature_names_in_
    if (n_features != booster.n_features_in_ or not np.array_equal(classes, booster.classes_)
            or (names is not None and old_names is not None
                and not np.array_equal(names, old_names))):
        raise ValueError(
            "warm_start: X and y must have the features and classes of the first fit")
    if params["n_estimators"] < booster.n_estimators_:
        raise ValueError(
            f"warm_start: n_estimators={params['n_estimators']} must be >= the "
            f"{booster.n_estimators_} iterations already fitted")
    if float(params["learning_rate"]) != booster.learning_rate:
        raise ValueError(
            f"warm_start: learning_rate={params['learning_rate']!r} differs from the "
            f"{booster.learning_rate!r} of the fitted trees; one model has one "
            "learning rate (refit with warm_start=False)")
    if loss_name(params["loss"]) != booster.loss:
        raise ValueError(
            f"warm_start: loss={loss_name(params['loss'])!r} differs from the loss "
            f"{booster.loss!r} of the fitted trees (refit with warm_start=False)")
    fitted_solver = (booster.params or {}).get("leaf_solver", "newton")
    if params["leaf_solver"] != fitted_solver:
        raise ValueError(
            f"warm_start: leaf_solver={params['leaf_solver']!r} differs from the "
            f"leaf solver {fitted_solver!r} of the fitted trees (refit with "
            "warm_start=False)")
    if params["n_estimators"] == booster.n_estimators_:
        return None
    record = FitRecord(booster.train_score_, None, booster.oob_scores_,
                       booster.oob_improvement_)
    return booster.ensemble, record


def iteration_predictor(trees, n_features, learning_rate, n_outputs):
    """A ``Predictor`` of the K trees of one iteration (node arrays ``trees``): adds
    that iteration to the raw scores of validation rows."""
    sizes = [t.shape[0] for t in trees]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return Predictor(np.concatenate(trees).astype(NODE_DTYPE), offsets, learning_rate,
                     n_features, n_outputs)


def dense_columns(X):
    """A float32 CSC matrix (``check_features``) as a Fortran-order float32 array,
    written one column (feature) at a time from its entries: the dense X of
    ``split_method="exact"`` (n_samples x n_features x 4 bytes) and nothing more."""
    out = np.zeros(X.shape, dtype=np.float32, order="F")
    data, indices, indptr = sparse_arrays(X)
    for j in range(X.shape[1]):
        out[indices[indptr[j]:indptr[j + 1]], j] = data[indptr[j]:indptr[j + 1]]
    return out


def make_split_finder(X, params):
    """The split finder ``params["split_method"]`` names, built on ``X``.

    ``"hist"`` bins X here, once per fit (``BinMapper``, ``params["max_bins"]``
    bins, seeded: the same data gives the same edges, so a warm start on the same
    data continues with the first fit's bins); the trees store the bin edges as
    real thresholds (between the values of two bins), so nothing after the fit sees
    bins. A sparse X (float32 CSC) is binned column by column from its entries
    (implicit zeros in the bin of 0.0), never densified; the exact finder takes
    dense X only.
    """
    n_threads = params["n_threads"]
    if params["split_method"] == "exact":
        return ExactSplitFinder(np.asfortranarray(X), n_threads)
    mapper = BinMapper(max_bins=params["max_bins"]).fit(X, n_threads)
    bins = mapper.transform(X, n_threads)
    if is_sparse_matrix(X):
        zero_bin = mapper.transform(np.zeros((1, X.shape[1]), dtype=np.float32))[0]
        lo, hi = bin_value_ranges_csc(*sparse_arrays(X), bins, np.ascontiguousarray(zero_bin),
                                      mapper.missing_bin, n_threads)
    else:
        lo, hi = bin_value_ranges(X, bins, mapper.missing_bin, n_threads)
    return HistogramSplitFinder(bins, np.asarray(mapper.n_bins_non_missing, dtype=np.int32),
                                lo, hi, mapper.missing_bin, n_threads)


class Part:
    """One process's share of a data-parallel fit (``_distributed``), for
    :func:`boost`.

    Parameters
    ----------
    finder : SplitFinder
        Built on this process's rows (their bins), with its ``reducer`` set.
    reducer : callable
        The grower's ``reducer`` hook (the sums over every process).
    n_samples : int
        The training rows of every process together (zero weights included): the
        population ``subsample`` draws from.
    rows : int64 array
        The position of each of this process's rows among those ``n_samples`` rows
        (the concatenated order), so that every process draws the in-bag rows the
        single-process fit draws. Rows of weight 0 are already left out.
    previous_raw : float64 array (n_rows, n_outputs) or None
        With ``previous`` and no raw X: the raw scores of the model to continue on
        this process's rows (computed before the raw values were let go).
    """

    def __init__(self, finder, reducer, n_samples, rows, previous_raw=None):
        self.finder = finder
        self.reducer = reducer
        self.n_samples = int(n_samples)
        self.rows = rows
        self.previous_raw = previous_raw


def holdout_sizes(group_sizes, classes, fraction):
    """How many rows of each group the early-stopping hold-out takes.

    Parameters
    ----------
    group_sizes : int array of shape (n_classes,) or (n_classes, 2)
        The rows of each class, or, where some rows have weight 0, the rows of each
        class with weight (column 0) and without (column 1).
    classes : array
        The labels (for the error messages).
    fraction : float
        ``validation_fraction``.

    Returns
    -------
    int array of the shape of ``group_sizes``

    Raises
    ------
    ValueError
        A class with a single row (scikit-learn's message, then the labels), a
        fraction that holds out every (weighted) row of a class, or a hold-out
        without any weight.
    """
    sizes = np.asarray(group_sizes, dtype=np.int64)
    counts = sizes if sizes.ndim == 1 else sizes.sum(axis=1)
    too_few = (counts > 0) & (counts < 2)
    if too_few.any():
        # scikit-learn's message: its estimator stratifies on the class codes (the
        # positions in the sorted labels, as floats), then the labels themselves.
        codes = np.flatnonzero(too_few).astype(np.float64).tolist()
        raise ValueError(
            "The least populated classes in y have only 1 member, which is too few. "
            "The minimum number of groups for any class cannot be less than 2. Classes "
            f"with too few members are: {codes} (class codes; the labels "
            f"{classes[too_few].tolist()}). Early stopping holds out "
            "validation_fraction of each class: pass eval_set or more samples")

    def n_held_out(cls, size):
        n_val = int(round(fraction * size))
        if size >= 2 and n_val >= size:
            # scikit-learn's error: the init estimator and the class codes would
            # miss this class.
            raise ValueError(
                "The training data after the early stopping split is missing some "
                f"classes: validation_fraction={fraction!r} holds out all {size} rows "
                f"of class {classes[cls:cls + 1].tolist()[0]!r}. Use a smaller "
                "validation_fraction, or pass eval_set.")
        return max(0, min(max(n_val, 1), size - 1))

    if sizes.ndim == 1:
        return np.array([n_held_out(c, int(sizes[c])) for c in range(sizes.shape[0])],
                        dtype=np.int64)
    out = np.zeros(sizes.shape, dtype=np.int64)
    for c in range(sizes.shape[0]):
        out[c, 0] = n_held_out(c, int(sizes[c, 0]))
        out[c, 1] = int(round(fraction * int(sizes[c, 1])))
    if not (out[:, 0] > 0).any():
        raise ValueError(
            "early stopping holds out validation_fraction of each class's rows of "
            f"positive weight, but only {int(sizes[:, 0].sum())} row(s) have "
            "weight and no class has two: the validation rows would have no weight "
            "and a loss of 0 at every iteration. Pass eval_set, or give more rows "
            "weight")
    return out


def holdout_draw(group_sizes, n_held_out, rng):
    """The positions held out in each group (row order within the group), groups in
    the order of ``group_sizes.ravel()``: for each group, the first
    ``n_held_out`` of a permutation of its positions, drawn from ``rng`` group by
    group. It depends on the group sizes only, so processes that each hold a part of
    the rows draw the same hold-out as one process holding them all."""
    sizes = np.asarray(group_sizes, dtype=np.int64).ravel()
    n_val = np.asarray(n_held_out, dtype=np.int64).ravel()
    return [rng.permutation(int(size))[:int(k)] for size, k in zip(sizes, n_val)]


def _grow_side_by_side(grow, n_trees, growers, grower):
    """The trees of one iteration: ``grow(k, g)`` grows tree k with grower g and
    returns its nodes. With T = ``len(growers)`` one-thread growers, trees 0 .. n - 1
    (n the largest multiple of T at most ``n_trees``) are grown T at a time, each
    grower on a thread of its own (its kernels release the GIL); the rest one after
    another by ``grower`` (every thread). Returns the nodes of the trees in order."""
    n_side = n_trees - n_trees % len(growers)
    out = [None] * n_trees
    stop = threading.Event()

    def run(j):
        for k in range(j, n_side, len(growers)):
            if stop.is_set():
                return
            out[k] = grow(k, growers[j])

    with ThreadPoolExecutor(max_workers=len(growers)) as pool:
        futures = [pool.submit(run, j) for j in range(len(growers))]
        try:
            for future in futures:
                future.result()
        except BaseException:
            # An error or an interrupt: no thread starts another tree (leaving the
            # pool waits for the trees being grown).
            stop.set()
            raise
    for k in range(n_side, n_trees):
        out[k] = grow(k, grower)
    return out


def boost(X, y, sample_weight, loss, params, seed, *, eval_set=None, previous=None,
          callbacks=(), init_scores=None, part=None):
    """Fit trees to ``X`` and the class codes ``y`` (paper Algorithm 1).

    Parameters
    ----------
    X : float32 array (n_samples, n_features), a float32 CSC matrix, or None
        Fortran order, or C order with ``params["split_method"] == "hist"`` (binned
        as it is; the exact search and out-of-bag routing take a Fortran copy).
        Sparse X (``check_features(..., sparse="csc")``): ``split_method="hist"``
        bins its columns without densifying them (and routes out-of-bag rows on
        them); ``"exact"`` densifies it first (``dense_columns``: n_samples x
        n_features float32, one column at a time). The model is the one of the
        same data dense, bit for bit. None: a process of a distributed fit without
        ``subsample`` (``part``), which keeps its rows' bins only.
    y : int array of shape (n_samples,)
        Class codes 0 .. n_classes - 1.
    sample_weight : float64 array or None
        Rows of weight 0 take no part in the fit (see below).
    loss : Loss
    params : dict
        Resolved hyper-parameters (``_params.resolve``).
    seed : int
        Iteration m draws its rows and feature seeds from a stream seeded by
        (seed, m): the same trees whether a model is fitted at once or grown by
        warm starts.
    eval_set : tuple (X_val float32 C order or CSR, y_val codes, w_val or None), optional
        Validation rows: their loss is recorded after each iteration.
    previous : tuple (Ensemble, FitRecord), optional
        A model fitted on the same data to continue (warm start).
    callbacks : sequence
        Objects with ``start(record) -> stop``, ``after_iteration(iteration,
        record, current) -> stop`` and ``finish(record)``; ``current()`` builds the
        Ensemble of the iterations fitted so far (on demand: it copies the trees).
    init_scores : optional
        The initial raw scores, instead of the loss's of ``params["init"]``: an
        array (n_outputs,) (a constant F0), or a pair (training rows (n_samples,
        n_outputs), validation rows (n_val, n_outputs) or None) of scores that vary
        by row (an init estimator's; the ensemble's F0 is then 0, and with
        ``previous`` the trees are added to them).

    Returns
    -------
    ensemble : Ensemble
    record : FitRecord
    """
    if part is None:
        n_samples, n_features = X.shape
    else:
        n_samples, n_features = part.n_samples, part.finder.n_features
    # Rows of zero weight take no part in a fit (scikit-learn's trees leave them out):
    # no threshold is chosen from them, no sample count (min_samples_leaf,
    # min_samples_split, n_node_samples) counts them, and they add nothing to a leaf
    # value or a loss. The fit runs on the other rows alone; only the in-bag draw of
    # ``subsample`` is made among all rows, as scikit-learn's (and the fractions of
    # min_samples_* were resolved on all rows, as there). Without such rows (unit
    # weights included) nothing is copied.
    n_outputs = loss.n_outputs
    factor = loss.score_factor
    row_scores = val_scores = None
    if init_scores is not None and not isinstance(init_scores, np.ndarray):
        row_scores, val_scores = init_scores
    sparse = is_sparse_matrix(X)
    if sparse and params["split_method"] == "exact":
        X, sparse = dense_columns(X), False
    kept = None if part is None else part.rows
    if part is None and sample_weight is not None and not (sample_weight > 0).all():
        kept = np.flatnonzero(sample_weight > 0)
        X = take_rows(X, kept, "csc") if sparse else np.asfortranarray(X[kept])
        y = y[kept]
        sample_weight = np.ascontiguousarray(sample_weight[kept])
        if row_scores is not None:
            row_scores = row_scores[kept]
    n_threads = params["n_threads"]
    lr = params["learning_rate"]
    # The grower partitions on raw X (Fortran order) for the exact search, on the
    # bins for the histogram search, which needs X only to route out-of-bag rows.
    # A sparse X (hist only) routes out-of-bag rows on its CSC columns.
    dense = X is not None and not sparse
    grower_X = X if dense else None
    if dense and (params["split_method"] == "exact" or params["subsample"] < 1.0):
        grower_X = X = np.asfortranarray(X)
    elif dense and not X.flags.f_contiguous:
        grower_X = None
    finder = make_split_finder(X, params) if part is None else part.finder
    n_rows = finder.n_samples

    def new_grower(finder, n_threads):
        return TreeGrower(
            grower_X, finder, -1 if params["max_depth"] is None else params["max_depth"],
            params["min_samples_split"], params["min_samples_leaf"],
            params["min_weight_leaf"], params["max_features"], n_threads,
            columns=sparse_arrays(X) if sparse else None, criterion=params["criterion"],
            min_impurity_decrease=params["min_impurity_decrease"],
            ccp_alpha=params["ccp_alpha"],
            max_leaf_nodes=0 if params["max_leaf_nodes"] is None else params["max_leaf_nodes"],
        )

    grower = new_grower(finder, n_threads)
    if part is not None:
        grower.reducer = part.reducer
    if previous is not None:
        ensemble, old = previous
        init_raw = ensemble.init_raw
        raw = np.empty((n_rows, n_outputs))
        if part is not None and part.previous_raw is not None:
            raw[:] = part.previous_raw
        else:
            raw[:] = init_raw if row_scores is None else row_scores
            ensemble.add_raw(as_format(X, "csr") if sparse else np.ascontiguousarray(X),
                             raw, 0, ensemble.n_iterations, n_threads)
        trees = ensemble.trees()
        bound = ensemble.raw_bound()
        # (A model read from a file without its training record: NaN, unknown.)
        train_score = ([np.nan] * ensemble.n_iterations if old.train_score is None
                       else old.train_score)
        record = FitRecord(train_score, None, old.oob_scores, old.oob_improvement)
    else:
        ensemble = None
        if row_scores is not None:
            init_raw = np.zeros(n_outputs)
        elif init_scores is not None:
            init_raw = np.array(init_scores, dtype=np.float64)
        else:
            init_raw = loss.initial_raw(y, sample_weight, params["init"])
        if row_scores is None:
            # F0 of every row, without an array of them: the state makes its own.
            raw = np.broadcast_to(init_raw, (n_rows, n_outputs))
        else:
            raw = np.empty((n_rows, n_outputs))
            raw[:] = row_scores
        trees = []
        # The raw-score bound of the trees (the Ensemble's rule), from F0.
        bound = np.abs(init_raw)
        record = FitRecord()
    state = loss.start(y, sample_weight, raw, n_threads)
    del raw  # the state holds its own copy
    # Several outputs on several threads, where the loss's state says the trees of an
    # iteration are independent (``parallel_outputs``: each fits its output's
    # residuals of the start of the iteration, changes only its output's raw scores
    # and shares no buffer with the others): each of ``n_threads`` one-thread growers
    # grows whole trees, side by side; the trees left over (K mod n_threads) are
    # grown one after another on every thread. A tree is the same on any number of
    # threads, so the model is too. Hist fits in one process only (a distributed fit
    # reduces its steps in one order on every process).
    class_growers = []
    if (part is None and n_outputs > 1 and n_threads > 1
            and getattr(state, "parallel_outputs", False)
            and isinstance(finder, HistogramSplitFinder)):
        class_growers = [new_grower(finder.with_threads(1), 1)
                         for _ in range(min(n_threads, n_outputs))]
    n_done = len(trees) // n_outputs

    raw_val = None
    if eval_set is not None:
        X_val, y_val, w_val = eval_set
        raw_val = np.empty((X_val.shape[0], n_outputs))
        raw_val[:] = init_raw if val_scores is None else val_scores
        record.validation_score = []
        for m in range(n_done):
            # The validation loss of each iteration already fitted, on these rows (the
            # same additions as in a single fit): early stopping resumes its state.
            if X_val.shape[0]:
                ensemble.add_raw(X_val, raw_val, m, m + 1, n_threads)
            record.validation_score.append(factor * loss.loss(y_val, raw_val, w_val))

    def current():
        return Ensemble.from_trees(trees, n_outputs=n_outputs, init_raw=init_raw,
                                   learning_rate=lr, n_features=n_features)

    stop = False
    for callback in callbacks:
        stop = callback.start(record) or stop
    n_inbag = max(1, int(params["subsample"] * n_samples))
    for m in range(n_done, params["n_estimators"]):
        if stop:
            break
        # (Nothing to draw without subsampling and feature draws: no stream.)
        draws = params["subsample"] < 1.0 or params["max_features"] < n_features
        rng = np.random.default_rng([seed, m]) if draws else None
        mask = None
        if params["subsample"] < 1.0:
            mask = np.zeros(n_samples, dtype=np.uint8)
            mask[rng.choice(n_samples, n_inbag, replace=False)] = 1
            if kept is not None:
                mask = np.ascontiguousarray(mask[kept])
        tree_seeds = [int(rng.integers(0, 2**63 - 1)) if params["max_features"] < n_features
                      else 0 for _ in range(n_outputs)]
        oob_before = None
        if mask is not None and not (record.oob_scores and m > 0):
            oob_before = factor * state.held_out_loss(mask == 0)
        def grow(k, tree_grower):
            row_stats, residual = state.tree_target(k)
            tree_grower.grow(row_stats, residual, mask, tree_seeds[k])
            nodes = tree_grower.nodes_array()
            # The update runs on the grower's threads (one for a tree grown side by
            # side with other classes' trees: its state is not shared then).
            state.update(k, nodes, tree_grower.node_of_row, mask, lr,
                         tree_grower.n_threads)
            return nodes

        new_trees = []
        if class_growers:
            new_trees = _grow_side_by_side(grow, n_outputs, class_growers, grower)
        for k in range(n_outputs):
            if class_growers:
                nodes = new_trees[k]
            else:
                nodes = grow(k, grower)
                new_trees.append(nodes)
            bound[k] += lr * float(np.abs(nodes["value"]).max())
            if not bound[k] <= RAW_SCORE_LIMIT:
                raise ValueError(
                    f"learning_rate={lr!r} is too large for this data: after {m + 1} "
                    f"iteration(s) the raw scores F(x) could exceed {RAW_SCORE_LIMIT:.0e} "
                    "and overflow; use a smaller learning_rate")
        trees.extend(new_trees)
        record.train_score.append(factor * state.finish_iteration(mask))
        if mask is not None:
            if record.oob_scores is None:
                # The iterations fitted without subsampling (a warm start switched it
                # on): 0, as scikit-learn writes.
                record.oob_scores = [0.0] * m
                record.oob_improvement = [0.0] * m
            oob = factor * state.held_out_loss(mask == 0)
            before = record.oob_scores[-1] if oob_before is None else oob_before
            record.oob_scores.append(oob)
            record.oob_improvement.append(before - oob)
        if raw_val is not None:
            if X_val.shape[0]:
                add_raw_to(iteration_predictor(new_trees, n_features, lr, n_outputs),
                           X_val, raw_val, 0, 1, n_threads)
            record.validation_score.append(factor * loss.loss(y_val, raw_val, w_val))
        for callback in callbacks:
            stop = callback.after_iteration(m, record, current) or stop
    for callback in callbacks:
        callback.finish(record)
    n_kept = len(trees) // n_outputs
    if record.best_iteration is not None:
        n_kept = record.best_iteration
    record.train_score = record.train_score[:n_kept]
    if record.oob_scores is not None:
        record.oob_scores = record.oob_scores[:n_kept]
        record.oob_improvement = record.oob_improvement[:n_kept]
    ensemble = Ensemble.from_trees(trees[: n_kept * n_outputs], n_outputs=n_outputs,
                                   init_raw=init_raw, learning_rate=lr,
                                   n_features=n_features)
    return ensemble, record
