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

import queue
import sys
import threading
import time

import numpy as np

from ._common import NODE_DTYPE
from ._ensemble import CATEGORY_SET_WORDS, RAW_SCORE_LIMIT, Ensemble, add_raw_to
from ._grower import TreeGrower
from ._loss import loss_name
from ._predictor import Predictor
from ._record import FitRecord
from ._split_methods import load_modules, method_named
from ._validation import as_format

load_modules()  # the finders' modules, with the training code (not by a fit)


class EarlyStopping:
    """Stop once the validation loss has not improved by more than ``tol`` for
    ``patience`` iterations; the fit then keeps its best iteration.

    Parameters
    ----------
    patience : int
    tol : float
    watch : tuple (set name, metric name) or None
        Watch ``record.evals[set name][metric name]``, a score (higher is better:
        an improvement is a score above the best by more than ``tol``), instead of
        ``record.validation_score`` (a loss).
    """

    def __init__(self, patience, tol, watch=None):
        self.patience = patience
        self.tol = tol
        self.watch = watch
        self.best_loss = np.inf
        self.best_iteration = 0
        self.since_best = 0

    def _losses(self, record):
        """The watched values so far, lower is better (a score negated)."""
        if self.watch is None:
            return record.validation_score or ()
        name, metric = self.watch
        return [-v for v in ((record.evals or {}).get(name) or {}).get(metric, ())]

    def start(self, record):
        """Replay the validation losses of iterations fitted before (warm start)."""
        self.best_loss, self.best_iteration, self.since_best = np.inf, 0, 0
        for i, loss in enumerate(self._losses(record)):
            self._see(i, loss)
        self.best_iteration = self.best_iteration or len(record.train_score)
        return self.since_best >= self.patience

    def _see(self, iteration, loss):
        if loss + self.tol < self.best_loss:
            self.best_loss, self.best_iteration, self.since_best = loss, iteration + 1, 0
        else:
            self.since_best += 1

    def after_iteration(self, iteration, record, current):
        if self.watch is None:
            self._see(iteration, record.validation_score[-1])
        else:
            self._see(iteration, -record.evals[self.watch[0]][self.watch[1]][-1])
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
    watch : tuple (set name, metric name), optional
        A score of ``record.evals`` reported in one more column, ``Valid <metric>``
        (the score early stopping watches, where it is not the loss).
    """

    def __init__(self, verbose, n_estimators, subsample, stream=None, watch=None):
        self.verbose = verbose
        self.n_estimators = n_estimators
        self.subsample = subsample
        self.stream = stream if stream is not None else sys.stdout
        self.started = time.perf_counter()
        self.begin_at = 0
        self.every = 1
        self.columns = ()
        self.watch = watch

    def start(self, record):
        self.started = time.perf_counter()
        self.begin_at = len(record.train_score)  # a warm start's first new iteration
        self.every = 1
        columns = ["Iter", "Train Loss"]
        if self.subsample < 1:
            columns.append("OOB Improve")
        if record.validation_score is not None:
            columns.append("Valid Loss")
        if self.watch is not None:
            columns.append(f"Valid {self.watch[1]}")
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
        if self.watch is not None:
            values.append(f"{record.evals[self.watch[0]][self.watch[1]][-1]:16.4f}")
        values.append(f"{remaining:>16}")
        print(f"{iteration + 1:>10d} " + " ".join(values), file=self.stream, flush=True)
        if self.verbose == 1 and done // (self.every * 10) > 0:
            self.every *= 10  # scikit-learn's rate: powers of ten
        return False

    def finish(self, record):
        pass


def warm_start_from(booster, params, classes, n_features, names, categorical=None,
                    categories=None):
    """``previous`` of :func:`boost` for a warm start of the fitted ``booster`` with
    ``params`` on data of these classes, width and feature names (and categorical
    features, with their categories): (ensemble, record), or None when there is
    nothing to add.

    Raises
    ------
    ValueError
        Data of other features or classes, other categorical features or categories,
        fewer iterations than fitted, or another learning rate, loss or leaf solver
        than the fitted trees'.
    """
    _same_categories(booster, categorical, categories)
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


def _same_categories(booster, categorical, categories):
    """Refuse a warm start whose categorical features or categories differ from the
    fitted model's (the trees' sets are of its codes)."""
    old = booster.ensemble.categorical
    if (old is None) != (categorical is None) or (
            old is not None and not np.array_equal(old, categorical)):
        raise ValueError(
            "warm_start: the categorical features differ from those of the first fit "
            f"(then {None if old is None else np.flatnonzero(old).tolist()}, now "
            f"{None if categorical is None else np.flatnonzero(categorical).tolist()}); "
            "refit with warm_start=False")
    if categorical is None:
        return
    old_categories = booster.categories_
    same = old_categories is not None and all(
        (a is None and b is None) or (a is not None and b is not None
                                      and a.shape == b.shape and (a == b).all())
        for a, b in zip(old_categories, categories))
    if not same:
        changed = [int(j) for j in np.flatnonzero(categorical)
                   if old_categories is None or old_categories[j].shape != categories[j].shape
                   or not (old_categories[j] == categories[j]).all()]
        raise ValueError(
            f"warm_start: the categories of feature(s) {changed[:10]} differ from those "
            "of the first fit (their codes would change); refit with warm_start=False")


def iteration_predictor(trees, n_features, learning_rate, n_outputs):
    """A ``Predictor`` of the K trees of one iteration (node arrays ``trees``): adds
    that iteration to the raw scores of validation rows."""
    sizes = [t.shape[0] for t in trees]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return Predictor(np.concatenate(trees).astype(NODE_DTYPE), offsets, learning_rate,
                     n_features, n_outputs)


class Part:
    """One process's share of a fit, for :func:`boost`: of a data-parallel fit
    (``_distributed``), or, with ``reducer`` None, all the rows of a fit in one
    process (:func:`boost` makes it).

    Parameters
    ----------
    finder : SplitFinder
        Built on this process's rows (their bins), with its ``reducer`` set.
    reducer : callable or None
        The grower's ``reducer`` hook (the sums over every process); None in one
        process.
    n_samples : int
        The training rows of every process together (zero weights included): the
        population ``subsample`` draws from.
    rows : int64 array or None
        The position of each of this process's rows among those ``n_samples`` rows
        (the concatenated order), so that every process draws the in-bag rows the
        single-process fit draws. Rows of weight 0 are already left out. None: the
        rows are those ``n_samples`` rows.
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

    @property
    def distributed(self):
        """Whether other processes hold other rows of the fit."""
        return self.reducer is not None


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


class _Lanes:
    """The threads of the class growers side by side, kept for a whole fit: lane j
    is one Python thread that runs what is given to it (``run``), the trees of
    grower j and its part of the softmax pass. Each lane is the same OS thread
    every iteration, so its OpenMP threads are made once per fit, and no other
    OpenMP team is made or run while the lanes work (the calling thread waits): a
    team made anew each iteration, or a second team spinning after its loops,
    would take cores from the lanes.

    The lanes are daemon threads, ended by ``close`` (``boost`` calls it when the
    fit ends, also on an error): a fit interrupted while closing does not keep the
    interpreter from exiting.

    Parameters
    ----------
    threads : list of int
        The OpenMP threads of each lane (``side_by_side_threads``).
    """

    def __init__(self, threads):
        self.threads = list(threads)
        self._jobs = [queue.SimpleQueue() for _ in self.threads]
        self._workers = []
        try:
            for j, jobs in enumerate(self._jobs):
                worker = threading.Thread(target=self._serve, args=(jobs,), daemon=True,
                                          name=f"gbc-core-lane-{j}")
                worker.start()
                self._workers.append(worker)
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _serve(jobs):
        while True:
            job = jobs.get()
            if job is None:
                return
            function, out, done, stop = job
            try:
                out[0] = function()
            except BaseException as error:  # handed to the caller of run
                out[1] = error
                if stop is not None:
                    stop.set()   # the other lanes start nothing more
            finally:
                done.set()

    def run(self, functions, stop=None):
        """Run ``functions[j]()`` on lane j, all at once, and wait for them.

        Parameters
        ----------
        functions : list of callable
            One function of no arguments per lane.
        stop : threading.Event, optional
            Set as soon as a function raises, or when the wait is interrupted, for
            the functions that look at it.

        Returns
        -------
        list
            The functions' results, in lane order. An error of a lane is raised
            (the first in lane order) once every lane has finished.
        """
        if len(functions) != len(self._jobs):
            raise ValueError(f"{len(functions)} functions for {len(self._jobs)} lanes")
        outs = [[None, None] for _ in functions]
        dones = [threading.Event() for _ in functions]
        started = 0
        try:
            for jobs, function, out, done in zip(self._jobs, functions, outs, dones):
                jobs.put((function, out, done, stop))
                started += 1
            for done in dones:
                done.wait()
        except BaseException:
            if stop is not None:
                stop.set()
            for done in dones[:started]:
                done.wait()
            raise
        for _, error in outs:
            if error is not None:
                raise error
        return [result for result, _ in outs]

    def close(self):
        """End the lanes' threads (after what they are running)."""
        for jobs in self._jobs[:len(self._workers)]:
            jobs.put(None)
        for worker in self._workers:
            worker.join()


def _grow_side_by_side(grow, n_trees, growers, grower, lanes):
    """The trees of one iteration: ``grow(k, g)`` grows tree k with grower g and
    returns its nodes. With T = ``len(growers)`` growers, trees 0 .. n - 1 (n the
    largest multiple of T at most ``n_trees``) are grown T at a time, grower j on
    lane j of ``lanes`` (a ``_Lanes``: its kernels release the GIL and run on the
    lane's OpenMP threads); the rest one after another by ``grower`` (every
    thread). Returns the nodes of the trees in order."""
    n_side = n_trees - n_trees % len(growers)
    out = [None] * n_trees
    stop = threading.Event()

    def run(j):
        for k in range(j, n_side, len(growers)):
            if stop.is_set():
                return
            out[k] = grow(k, growers[j])

    lanes.run([lambda j=j: run(j) for j in range(len(growers))], stop)
    for k in range(n_side, n_trees):
        out[k] = grow(k, grower)
    return out


class _Trees:
    """The trees of a fit so far (K per iteration), with the bound of the raw scores
    they can add to F0 (the Ensemble's rule), and, with categorical features, the
    category sets of their categorical splits: one table for all the trees, each
    tree's rows after those of the trees before it (a categorical node's threshold
    is its row)."""

    def __init__(self, trees, init_raw, bound, learning_rate, n_outputs, n_features,
                 categorical=None, category_sets=None):
        self.trees = trees
        self.init_raw = init_raw
        self.bound = bound
        self.learning_rate = learning_rate
        self.n_outputs = n_outputs
        self.n_features = n_features
        self.categorical = categorical
        self.sets = [] if category_sets is None else [category_sets]
        self.n_sets = 0 if category_sets is None else category_sets.shape[0]

    @property
    def n_iterations(self):
        return len(self.trees) // self.n_outputs

    def check(self, k, nodes, iteration):
        """Add tree ``k``'s largest leaf value to the bound of output k; refuse a
        learning rate whose raw scores could overflow."""
        lr = self.learning_rate
        self.bound[k] += lr * float(np.abs(nodes["value"]).max())
        if not self.bound[k] <= RAW_SCORE_LIMIT:
            raise ValueError(
                f"learning_rate={lr!r} is too large for this data: after {iteration + 1} "
                f"iteration(s) the raw scores F(x) could exceed {RAW_SCORE_LIMIT:.0e} "
                "and overflow; use a smaller learning_rate")

    def add(self, new_trees, new_sets):
        """Append one iteration's trees (their categorical nodes numbering the rows of
        their own ``new_sets`` from 0, as :func:`compact_sets` leaves them): those
        nodes' thresholds shifted past the table's rows so far, their sets appended."""
        if self.categorical is not None:
            for nodes, sets in zip(new_trees, new_sets):
                if sets.shape[0]:
                    on = _on_categorical(nodes, self.categorical)
                    nodes["threshold"][on] += self.n_sets
                    nodes["threshold32"][on] += self.n_sets
                    self.sets.append(sets)
                    self.n_sets += sets.shape[0]
        self.trees.extend(new_trees)

    def table(self, trees=None):
        """The category sets the ``trees`` (default: all) use: the table's rows up to
        the last one they name (None without categorical features)."""
        if self.categorical is None:
            return None
        table = (np.concatenate(self.sets) if self.sets
                 else np.zeros((0, CATEGORY_SET_WORDS), dtype=np.uint32))
        if trees is not None:
            used = [t["threshold"][_on_categorical(t, self.categorical)] for t in trees]
            used = np.concatenate(used) if used else np.zeros(0)
            table = table[:int(used.max()) + 1 if used.size else 0]
        return table

    def ensemble(self, n_iterations=None):
        """The Ensemble of the first ``n_iterations`` (default: all)."""
        n = self.n_iterations if n_iterations is None else n_iterations
        trees = self.trees[: n * self.n_outputs]
        return Ensemble.from_trees(trees, n_outputs=self.n_outputs, init_raw=self.init_raw,
                                   learning_rate=self.learning_rate,
                                   n_features=self.n_features, categorical=self.categorical,
                                   category_sets=self.table(
                                       None if n == self.n_iterations else trees))


def _on_categorical(nodes, categorical):
    """Which ``nodes`` split a categorical feature."""
    feature = nodes["feature"]
    return (feature >= 0) & categorical[np.maximum(feature, 0)]


def compact_sets(nodes, grower_sets, categorical):
    """The category sets of one grown tree that its categorical nodes use, in node
    order (uint32 (n, 8)), those nodes' ``threshold`` and ``threshold32`` renumbered
    0, 1, ... accordingly (in place). ``grower_sets``: ``TreeGrower.cat_bitsets()``,
    indexed by the node's index at its split (pruning leaves rows unused)."""
    on = _on_categorical(nodes, categorical)
    if not on.any():
        return np.zeros((0, CATEGORY_SET_WORDS), dtype=np.uint32)
    rows = nodes["threshold"][on].astype(np.int64)
    nodes["threshold"][on] = np.arange(rows.size)
    nodes["threshold32"][on] = np.arange(rows.size)
    return np.ascontiguousarray(grower_sets[rows])


class _Validation:
    """The raw scores of the rows of each evaluation set, the validation loss of
    the watched set (the last) after each iteration (``record.validation_score``),
    and the ``evaluate`` hook's metrics of every set (``record.evals``)."""

    def __init__(self, eval_sets, loss, trees, val_scores, previous, record, n_threads,
                 evaluate=None):
        self.sets = eval_sets
        self.loss = loss
        self.trees = trees
        self.n_threads = n_threads
        self.evaluate = evaluate
        self.raws = []
        for i, (X, _, _) in enumerate(eval_sets):
            raw = np.empty((X.shape[0], loss.n_outputs))
            raw[:] = trees.init_raw if val_scores is None else val_scores[i]
            self.raws.append(raw)
        record.validation_score = []
        if evaluate is not None:
            record.evals = {}
        for m in range(trees.n_iterations):
            # The validation loss of each iteration already fitted, on these rows (the
            # same additions as in a single fit): early stopping resumes its state.
            for (X, _, _), raw in zip(eval_sets, self.raws):
                if X.shape[0]:
                    previous.add_raw(X, raw, m, m + 1, n_threads)
            self._record(record, lambda n=m + 1: trees.ensemble(n))

    def _record(self, record, current):
        _, y, w = self.sets[-1]
        record.validation_score.append(
            self.loss.score_factor * self.loss.loss(y, self.raws[-1], w))
        if self.evaluate is not None:
            self.evaluate(record, self.raws, current)

    def add(self, new_trees, record):
        """Add one iteration's trees to the scores; record the loss (and metrics)."""
        t = self.trees
        predictor = None
        for (X, _, _), raw in zip(self.sets, self.raws):
            if X.shape[0]:
                if t.categorical is not None:
                    # Through the categorical kernel, as the model scores these rows.
                    if predictor is None:
                        predictor = Ensemble.from_trees(
                            new_trees, n_outputs=t.n_outputs,
                            init_raw=np.zeros(t.n_outputs), learning_rate=t.learning_rate,
                            n_features=t.n_features, categorical=t.categorical,
                            category_sets=t.table(new_trees))
                    predictor.add_raw(X, raw, 0, 1, self.n_threads)
                    continue
                if predictor is None:
                    predictor = iteration_predictor(new_trees, t.n_features,
                                                    t.learning_rate, t.n_outputs)
                add_raw_to(predictor, X, raw, 0, 1, self.n_threads)
        self._record(record, t.ensemble)


def _by_row(init_scores):
    """(training rows, validation rows) of :func:`boost`'s ``init_scores`` that vary
    by row; (None, None) for a constant F0 or none."""
    if init_scores is not None and not isinstance(init_scores, np.ndarray):
        return init_scores
    return None, None


def _one_process(X, y, sample_weight, init_scores, method, params):
    """The :class:`Part` of a fit in one process, X as its grower reads it
    (``FitData``), and the rows of positive weight of y, the weights and
    ``init_scores``.

    Rows of zero weight take no part in a fit (scikit-learn's trees leave them out):
    no threshold is chosen from them, no sample count (min_samples_leaf,
    min_samples_split, n_node_samples) counts them, and they add nothing to a leaf
    value or a loss. The fit runs on the other rows alone; only the in-bag draw of
    ``subsample`` is made among all rows, as scikit-learn's (and the fractions of
    min_samples_* were resolved on all rows, as there). Without such rows (unit
    weights included) nothing is copied."""
    n_samples = X.shape[0]
    kept = None
    if sample_weight is not None and not (sample_weight > 0).all():
        kept = np.flatnonzero(sample_weight > 0)
        X = method.take_rows(X, kept)
        y = y[kept]
        sample_weight = np.ascontiguousarray(sample_weight[kept])
        row_scores, val_scores = _by_row(init_scores)
        if row_scores is not None:
            init_scores = (row_scores[kept], val_scores)
    data = method.fit_data(X, params["subsample"])
    part = Part(method.make_finder(data.X, params), None, n_samples, kept)
    return part, data, y, sample_weight, init_scores


def side_by_side_threads(n_threads, n_growers):
    """The threads of each of ``n_growers`` growers working side by side on
    ``n_threads`` threads: all of them, as evenly as they divide (the first
    ``n_threads mod n_growers`` growers one more).

    Parameters
    ----------
    n_threads : int
        Threads of the fit (at least ``n_growers``).
    n_growers : int
        Growers at work at the same time (at least 1).

    Returns
    -------
    list of int
        Each grower's thread count, in grower order; they sum to ``n_threads``.
    """
    share, extra = divmod(n_threads, n_growers)
    return [share + (j < extra) for j in range(n_growers)]


def _growers(data, part, method, params, n_outputs, parallel_outputs):
    """The tree grower of a fit, and the growers that grow the K trees of an
    iteration side by side (none where they do not).

    K classes on several threads: the K trees of an iteration are independent (tree
    k fits the residuals of class k at the start of the iteration and changes only
    the raw scores of class k), so T = min(``n_threads``, K) growers grow whole
    trees, side by side, and share the threads out: grower j has
    ``side_by_side_threads(n_threads, T)[j]`` of them (every thread at work: 16
    threads and 5 classes are growers of 4, 3, 3, 3 and 3 threads); the trees left
    over (K mod T, when there are more classes than threads) are grown one after
    another on every thread. A tree is the same on any number of threads, so the
    model is too. Where the loss's fit state says its outputs are independent
    (``parallel_outputs``: it shares no buffer between them, as the weighted
    multinomial state's row statistics are shared), for methods whose finder has
    copies of its own thread count (``with_threads``) and takes these thread counts
    (``SplitMethod.grows_side_by_side``: exact not where some growers would have one
    thread and others two), in one process only (a distributed fit reduces its
    steps in one order on every process)."""
    n_threads = params["n_threads"]

    def new_grower(finder, n_threads, shares_rows_with=None):
        grower = TreeGrower(
            data.grower_X, finder, -1 if params["max_depth"] is None else params["max_depth"],
            params["min_samples_split"], params["min_samples_leaf"],
            params["min_weight_leaf"], params["max_features"], n_threads,
            columns=data.columns, criterion=params["criterion"],
            min_impurity_decrease=params["min_impurity_decrease"],
            ccp_alpha=params["ccp_alpha"],
            max_leaf_nodes=0 if params["max_leaf_nodes"] is None else params["max_leaf_nodes"],
            monotonic_cst=params.get("monotonic_cst"),
            interaction_cst=params.get("interaction_cst"),
            categorical=params.get("categorical"),
            min_samples_category=params.get("min_samples_category", 1),
            shares_rows_with=shares_rows_with,
        )
        if part.reducer is not None:
            grower.reducer = part.reducer
        return grower

    side_by_side = (not part.distributed and parallel_outputs
                    and method.grows_side_by_side(n_threads, n_outputs))
    # The grower of every thread grows the trees left over after those grown side
    # by side, never at the same time as them: its per-row buffers are the first
    # class grower's (20 bytes per row fewer), and so are its finder's where the
    # finder shares them (hist: the gathered row statistics, 16 bytes per row; an
    # exact finder's copies share the sorted order only, each with 13 bytes per row
    # and, within a bound, node segments of its own: ExactSplitFinder.with_threads).
    class_growers = ([new_grower(part.finder.with_threads(t, shares_rows=j == 0), t)
                      for j, t in enumerate(
                          side_by_side_threads(n_threads, min(n_threads, n_outputs)))]
                     if side_by_side else [])
    return (new_grower(part.finder, n_threads,
                       class_growers[0] if class_growers else None), class_growers)


def _start(loss, y, sample_weight, params, previous, part, data, init_scores):
    """(trees, record, raw): the trees to add to (a warm start's, or none from F0),
    the fit's record, and the raw scores of the training rows (F0, or the previous
    model's). ``init_scores`` as :func:`boost`'s (with the training rows' scores of
    positive weight)."""
    n_rows, n_outputs = part.finder.n_samples, loss.n_outputs
    row_scores = _by_row(init_scores)[0]
    lr, n_features = params["learning_rate"], part.finder.n_features
    if previous is not None:
        ensemble, old = previous
        raw = np.empty((n_rows, n_outputs))
        if part.previous_raw is not None:
            raw[:] = part.previous_raw
        else:
            raw[:] = ensemble.init_raw if row_scores is None else row_scores
            ensemble.add_raw(as_format(data.X, "csr") if data.sparse
                             else np.ascontiguousarray(data.X),
                             raw, 0, ensemble.n_iterations, params["n_threads"])
        # (A model read from a file without its training record: NaN, unknown.)
        train_score = ([np.nan] * ensemble.n_iterations if old.train_score is None
                       else old.train_score)
        record = FitRecord(train_score, None, old.oob_scores, old.oob_improvement)
        trees = _Trees(ensemble.trees(), ensemble.init_raw, ensemble.raw_bound(), lr,
                       n_outputs, n_features, ensemble.categorical, ensemble.category_sets)
        return trees, record, raw
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
    # The raw-score bound of the trees (the Ensemble's rule), from F0.
    categorical = params.get("categorical")
    trees = _Trees([], init_raw, np.abs(init_raw), lr, n_outputs, n_features,
                   None if categorical is None else np.asarray(categorical, dtype=bool),
                   None if categorical is None else
                   np.zeros((0, CATEGORY_SET_WORDS), dtype=np.uint32))
    return trees, FitRecord(), raw


def _draw(seed, m, params, part, n_features, n_outputs):
    """Iteration m's in-bag mask of this process's rows (None without ``subsample``)
    and the feature-draw seed of each of its K trees, from the stream (seed, m)."""
    n_samples = part.n_samples
    # (Nothing to draw without subsampling and feature draws: no stream.)
    draws = params["subsample"] < 1.0 or params["max_features"] < n_features
    rng = np.random.default_rng([seed, m]) if draws else None
    mask = None
    if params["subsample"] < 1.0:
        n_inbag = max(1, int(params["subsample"] * n_samples))
        mask = np.zeros(n_samples, dtype=np.uint8)
        mask[rng.choice(n_samples, n_inbag, replace=False)] = 1
        if part.rows is not None:
            mask = np.ascontiguousarray(mask[part.rows])
    tree_seeds = [int(rng.integers(0, 2**63 - 1)) if params["max_features"] < n_features
                  else 0 for _ in range(n_outputs)]
    return mask, tree_seeds


def _record_oob(record, state, mask, m, oob_before, factor):
    """The out-of-bag loss of iteration m and its improvement."""
    if record.oob_scores is None:
        # The iterations fitted without subsampling (a warm start switched it on):
        # 0, as scikit-learn writes.
        record.oob_scores = [0.0] * m
        record.oob_improvement = [0.0] * m
    oob = factor * state.held_out_loss(mask == 0)
    before = record.oob_scores[-1] if oob_before is None else oob_before
    record.oob_scores.append(oob)
    record.oob_improvement.append(before - oob)


def _iteration(m, state, growers, trees, record, mask, tree_seeds, factor, lanes=None):
    """Grow iteration m's K trees (``growers``: the grower and the side-by-side
    ones, these on ``lanes``), update the scores by them, and record the training
    and out-of-bag losses. Returns the trees' nodes."""
    grower, class_growers = growers
    categorical = trees.categorical
    new_sets = [None] * trees.n_outputs
    oob_before = None
    if mask is not None and not (record.oob_scores and m > 0):
        oob_before = factor * state.held_out_loss(mask == 0)

    borrows = getattr(state, "borrows", ())

    def grow(k, tree_grower):
        # The state writes the tree's residuals into the grower's buffer where it
        # borrows it (no residuals of every output kept).
        if "residual" in borrows:
            row_stats, residual = state.tree_target(k, tree_grower.residual_buffer(),
                                                    tree_grower.n_threads)
        else:
            row_stats, residual = state.tree_target(k)
        # The grid's maxima, where the state took them as it wrote the tree's rows
        # (data-parallel: reduced with its last step); None: the grower takes them.
        take = getattr(state, "take_grid_maxima", None)
        tree_grower.grid_maxima = None if take is None else take(k)
        tree_grower.grow(row_stats, residual, mask, tree_seeds[k])
        nodes = tree_grower.nodes_array()
        # The update runs on the grower's threads (those of a tree grown side by
        # side with other classes' trees: its state is not shared then).
        state.update(k, nodes, tree_grower.node_of_row, mask, trees.learning_rate,
                     tree_grower.n_threads)
        if categorical is not None:
            new_sets[k] = compact_sets(nodes, tree_grower.cat_bitsets(), categorical)
        return nodes

    if class_growers:
        new_trees = _grow_side_by_side(grow, trees.n_outputs, class_growers, grower,
                                       lanes)
        for k, nodes in enumerate(new_trees):
            trees.check(k, nodes, m)
    else:
        new_trees = []
        for k in range(trees.n_outputs):
            new_trees.append(grow(k, grower))
            trees.check(k, new_trees[k], m)
    trees.add(new_trees, new_sets)
    # The pass that ends the iteration on the lanes too, where every tree was grown
    # on them (a state whose outputs are grown side by side takes them); after a
    # tree left over, on the threads that grew it (no second team spinning).
    on_lanes = lanes is not None and trees.n_outputs % len(class_growers) == 0
    record.train_score.append(factor * (state.finish_iteration(mask, lanes) if on_lanes
                                        else state.finish_iteration(mask)))
    if mask is not None:
        _record_oob(record, state, mask, m, oob_before, factor)
    return new_trees


def _kept(trees, record):
    """The Ensemble and record of the iterations kept: all, or up to the best
    (early stopping)."""
    n_kept = trees.n_iterations
    if record.best_iteration is not None:
        n_kept = record.best_iteration
    record.train_score = record.train_score[:n_kept]
    if record.oob_scores is not None:
        record.oob_scores = record.oob_scores[:n_kept]
        record.oob_improvement = record.oob_improvement[:n_kept]
    return trees.ensemble(n_kept), record


def boost(X, y, sample_weight, loss, params, seed, *, eval_set=None, previous=None,
          callbacks=(), init_scores=None, part=None, evaluate=None):
    """Fit trees to ``X`` and the class codes ``y`` (paper Algorithm 1).

    Parameters
    ----------
    X : float32 array (n_samples, n_features), a float32 CSC matrix, or None
        Laid out by the split method's ``lay_out`` (``_split_methods``), which also
        lays it out for the finder and the grower (``fit_data``). Sparse X: a method
        with sparse input bins its columns without densifying them (and routes
        out-of-bag rows on them); another densifies it first (n_samples x
        n_features float32, one column at a time). The model is the one of the
        same data dense, bit for bit. None: a process of a distributed fit without
        ``subsample`` (``part``), which keeps its rows' bins only.
    y : int array of shape (n_samples,)
        Class codes 0 .. n_classes - 1.
    sample_weight : float64 array or None
        Rows of weight 0 take no part in the fit (:func:`_one_process`).
    loss : Loss
    params : dict
        Resolved hyper-parameters (``_params.resolve``).
    seed : int
        Iteration m draws its rows and feature seeds from a stream seeded by
        (seed, m): the same trees whether a model is fitted at once or grown by
        warm starts.
    eval_set : tuple (X_val, y_val, w_val) or a list of such tuples, optional
        Validation rows (X_val float32 in C order or CSR, y_val class codes, w_val
        weights or None): the loss of the (last) set's rows is recorded after each
        iteration (``record.validation_score``); the raw scores of every set are
        kept up to date for ``evaluate``.
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
        ``previous`` the trees are added to them); with a list of evaluation sets,
        the validation rows' part is a list of arrays, one per set.
    part : Part, optional
        This process's share of a distributed fit (its finder, rows and reducer);
        None: a fit in one process.
    evaluate : callable, optional
        With ``eval_set``: called after each iteration (and for each iteration of
        ``previous``) as ``evaluate(record, raws, current)``, ``raws`` the raw
        scores (n_rows, n_outputs) of each evaluation set (not to be modified) and
        ``current()`` the Ensemble of the iterations so far; it appends its
        metrics to ``record.evals`` (before the callbacks run).

    Returns
    -------
    ensemble : Ensemble
    record : FitRecord
    """
    method = method_named(params["split_method"])
    if part is None:
        part, data, y, sample_weight, init_scores = _one_process(
            X, y, sample_weight, init_scores, method, params)
    else:
        data = method.fit_data(X, params["subsample"])
    trees, record, raw = _start(loss, y, sample_weight, params, previous, part, data,
                                init_scores)
    state = loss.start(y, sample_weight, raw, params["n_threads"])
    if params.get("monotonic_cst") is not None:
        if loss.n_outputs != 1:
            raise ValueError("monotonic_cst is not supported for multiclass "
                             "classification (one tree per class); it needs two classes")
        state.monotonic = params["monotonic_cst"]
    del raw  # the state holds its own copy
    growers = _growers(data, part, method, params, loss.n_outputs,
                       getattr(state, "parallel_outputs", False))
    validation = None
    if eval_set is not None:
        eval_sets = [eval_set] if isinstance(eval_set, tuple) else list(eval_set)
        val_scores = _by_row(init_scores)[1]
        if val_scores is not None and isinstance(eval_set, tuple):
            val_scores = [val_scores]
        validation = _Validation(eval_sets, loss, trees, val_scores,
                                 None if previous is None else previous[0], record,
                                 params["n_threads"], evaluate)
    stop = False
    for callback in callbacks:
        stop = callback.start(record) or stop
    lanes = _Lanes([g.n_threads for g in growers[1]]) if growers[1] else None
    try:
        for m in range(trees.n_iterations, params["n_estimators"]):
            if stop:
                break
            mask, tree_seeds = _draw(seed, m, params, part, trees.n_features,
                                     loss.n_outputs)
            new_trees = _iteration(m, state, growers, trees, record, mask, tree_seeds,
                                   loss.score_factor, lanes)
            if validation is not None:
                validation.add(new_trees, record)
            for callback in callbacks:
                stop = callback.after_iteration(m, record, trees.ensemble) or stop
    finally:
        if lanes is not None:
            lanes.close()
    for callback in callbacks:
        callback.finish(record)
    return _kept(trees, record)
