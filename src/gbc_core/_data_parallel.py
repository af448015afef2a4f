"""The data-parallel fit, engine-neutral: the parts that hold the rows and the steps
the client takes with them.

A distributed engine (``gbc_core.dask``; ``_local_processes`` for the tests) starts
one :class:`Part` per worker, holding that worker's partitions (numbered by their
place in the data), and hands :func:`fit_parts` a *transport* (:class:`Transport`)
that calls the parts' methods; every step and every check of the fit is here:

1. ``describe``: the partitions' rows and columns, their distinct labels (checked
   together as one process checks y: kinds, missing labels, a single class), the
   ``eval_set`` partitions' missing labels, the features ``categorical_features``
   makes categorical;
2. ``prepare``: class codes, weights (class factors, one power-of-two scale), the
   rows of each class with weight and without;
3. ``split``: the early-stopping hold-out (the single-process draw, replayed by
   each part on its rows' places in the concatenated data) and a sketch of each
   partition's training rows, merged into the bin edges;
4. ``bin``: the bins and their value ranges (reduced by min / max);
5. ``fit``: :meth:`_distributed.PartTrainer.fit` on every part, each sum over rows
   (root sums, histograms, tree rules, leaf sums, losses) all-reduced in rank order
   through the engine's ``comm``; rank 0 returns the trees.

NumPy and the kernels only: no engine, no scikit-learn.
"""

import numpy as np

class Transport:
    """What an engine supplies to :func:`fit_parts` (the interface, not a base class
    to inherit): one :class:`Part` started per worker holding rows, and

    ``call(method, args, what)``
        Run ``part.method(*args[rank])`` on every rank's part; the results in rank
        order. Bounded: a clear ``RuntimeError`` naming the ranks and ``what`` when
        a worker is lost or does not answer within the engine's step timeout; a
        ``ValueError`` or ``TypeError`` of a part (bad input found where its rows
        are) is raised as it is.
    ``fit(args)``
        Run ``part.fit(comm, *args)`` on every rank's part, with the engine's
        ``comm`` of that rank: an object with ``allreduce(values, n_summed)`` that
        returns the arrays of every rank added in rank order
        (``_distributed.allreduce_local``), each call bounded by the step timeout,
        raising where a worker is lost. Rank 0's result is the fit's (the others
        may return None); the same errors as ``call``.
    """


# ------------------------------------------------------------------ checks
def check_partitioned_alike(rows, parts, numbers, name, of):
    """A clear error unless each of ``parts`` (1-D arrays) has the rows of the
    partition of ``of`` with the same number (``rows``): the rows of X and y are
    paired partition by partition, and a total that agrees is not enough."""
    for n_rows, part, number in zip(rows, parts, numbers):
        if part.shape[0] != n_rows:
            raise ValueError(
                f"partition {number} of {name} has {part.shape[0]} rows, the same "
                f"partition of {of} {n_rows}: {of} and {name} must be partitioned "
                "alike (the same rows in each partition)")


def missing_labels(given_parts, parts):
    """Per partition of labels (``given_parts`` as given, ``parts`` as 1-D arrays):
    (how many labels are missing, the first rows of them, at most as many as an error
    lists)."""
    from ._validation import _MAX_LISTED, missing_label_rows

    out = []
    for given, part in zip(given_parts, parts):
        rows = missing_label_rows(given, part)
        out.append((int(rows.size), rows[:_MAX_LISTED].tolist()))
    return out


def check_no_missing_labels(rows, missing, name):
    """The in-memory error of missing labels (their count and first rows in the
    concatenated data), where ``missing`` (per partition, as
    :func:`missing_labels` gives them) has some; ``rows``: the rows of each
    partition."""
    from ._validation import missing_labels_error

    n_missing = sum(n for n, _ in missing)
    if n_missing:
        offsets = np.cumsum(rows) - np.asarray(rows)
        first = [int(offset) + row for offset, (_, at) in zip(offsets, missing)
                 for row in at]
        raise missing_labels_error(first, n_missing, name)


def merged_labels(labels):
    """The distinct labels of every worker (arrays) as one array: numbers of several
    numeric dtypes (not booleans) in their common dtype, as one array of the
    concatenated labels would hold them in one process; where the workers' arrays
    differ in kind otherwise (numbers and strings, numbers and booleans), an object
    array of their values as they are, not converted to one kind
    (``np.concatenate`` would write the numbers as strings, or 1 as True)."""
    labels = [a for a in labels if a.size] or labels
    kinds = {a.dtype.kind for a in labels}
    if len(kinds) > 1:
        if kinds <= set("iuf"):
            return np.concatenate(labels).astype(np.result_type(*labels))
        labels = [a.astype(object) for a in labels]
    return np.concatenate(labels)


def as_float32_part(part, name, categories=None):
    """A partition of X as a float32 C-order array (a clear error for a sparse one);
    with ``categories`` (per feature None or the categories the client merged), its
    categorical columns as their codes (``_categories.encode``, as every part
    encodes them)."""
    from ._categories import encode
    from ._validation import check_features, is_sparse_matrix

    if is_sparse_matrix(part):
        raise TypeError(f"{name}: a partition is a sparse matrix of type "
                        f"{type(part).__name__}; a distributed fit trains on dense "
                        "partitions (sparse blocks are scored, not trained on)")
    shape = getattr(part, "shape", None)
    if shape is not None and len(shape) == 2 and shape[0] == 0:
        return np.empty((0, shape[1]), dtype=np.float32)  # an empty partition
    if categories is not None:
        return encode(part, categories, name)
    return check_features(part, name, dtype=np.float32, order="C")


def _fortran(X):
    """A float32 partition copied to Fortran order, the same values (bits): from C
    order by the tiled kernel of the training cast (``cast_float32``; NumPy's copy
    to another order, a column at a time over every row, takes three times as
    long), else by NumPy (no copy where it is in Fortran order already)."""
    from ._binning_kernels import BLOCK_ROWS, cast_float32

    if X.dtype != np.float32 or not X.flags.c_contiguous or X.flags.f_contiguous \
            or X.size == 0:
        return np.asfortranarray(X)
    out = np.empty(X.shape, dtype=np.float32, order="F")
    extremes = np.empty((-(-X.shape[0] // BLOCK_ROWS), X.shape[1]), dtype=np.float32)
    cast_float32(X, out, extremes, np.empty_like(extremes), 1)
    return out


def class_factors(class_weight, classes, label_counts):
    """The factor of each class of ``class_weight`` (scaled as in memory), or None."""
    if class_weight is None:
        return None
    if class_weight == "balanced":
        with np.errstate(divide="ignore"):
            per_class = label_counts.sum() / (classes.size * label_counts)
    else:
        unknown = [k for k in class_weight if not np.any(classes == k)]
        if unknown:
            raise ValueError(f"class_weight has labels not in y: {unknown!r}")
        per_class = np.array([float(class_weight.get(c, 1.0)) for c in classes.tolist()])
    from ._validation import scale_weights

    return scale_weights(per_class)


# ------------------------------------------------------------------ a part
class Part:
    """The training rows of one worker for one fit.

    The client calls, in order: ``describe`` (shapes, labels, the categorical
    features), ``prepare`` (class codes and weights), ``split`` (the early-stopping
    hold-out, the sketches of the training rows), ``bin`` (the bins) and ``fit``.
    Partitions are numbered by their place in the data (``part_numbers``); the
    client sends each part the offsets of its partitions, so that a row's position
    in the concatenated data is known where it lives.

    Parameters
    ----------
    X_parts, y_parts : lists of this worker's partitions (as given: arrays, frames)
    w_parts : list or None
    eval_parts : tuple (X parts, y parts, w parts or None, their numbers) or None
        The ``eval_set`` partitions given to this worker.
    part_numbers : list of int
    """

    def __init__(self, X_parts, y_parts, w_parts, eval_parts, part_numbers):
        # The partitions as they are (no copy): converted to float32 one at a time
        # when sketched and binned, and let go once binned.
        self.X_parts = list(X_parts)
        widths = {p.shape[1] for p in self.X_parts if len(getattr(p, "shape", ())) == 2}
        if len(widths) > 1:
            raise ValueError(f"the partitions of X have different numbers of columns: "
                             f"{sorted(widths)}")
        self.part_numbers = list(part_numbers)
        self.part_rows = [int(p.shape[0]) for p in self.X_parts]
        self.n_rows = sum(self.part_rows)
        self.n_features = widths.pop() if widths else 0
        given = list(y_parts)
        y_parts = [np.asarray(p).ravel() for p in given]
        check_partitioned_alike(self.part_rows, y_parts, part_numbers, "y", "X")
        self.missing = missing_labels(given, y_parts)
        self.y = np.concatenate(y_parts) if y_parts else np.empty(0)
        self.w = None
        if w_parts is not None:
            from ._validation import check_sample_weight

            w_parts = [np.asarray(p, dtype=np.float64).ravel() for p in w_parts]
            check_partitioned_alike(self.part_rows, w_parts, part_numbers,
                                    "sample_weight", "X")
            w = np.concatenate(w_parts + [np.empty(0)])
            self.w = check_sample_weight(w, self.n_rows) if w.size else w
        self.eval_parts = eval_parts
        self.eval_missing = None
        if eval_parts is not None:
            given = list(eval_parts[1])
            self.eval_missing = missing_labels(given, [np.asarray(p).ravel()
                                                       for p in given])
        self.categories = None  # per feature None or its categories (use_categories)
        self.codes = None
        self.train = None       # per row: a training row (not held out)
        self.eval_part = None
        self.trainer = None

    def _float_parts(self):
        for part in self.X_parts:
            yield as_float32_part(part, "X", self.categories)

    def categorical_mask(self, value):
        """The features ``categorical_features`` (``value``) makes categorical in any
        of this worker's partitions (``_categories.categorical_mask``), or None."""
        from ._categories import categorical_mask

        masks = [categorical_mask(p, value, self.n_features) for p in self.X_parts]
        masks = [m for m in masks if m is not None]
        return np.logical_or.reduce(masks) if masks else None

    def category_values(self, mask, max_bins):
        """Per partition, the distinct values of each categorical feature of ``mask``
        (``_categories.distinct_values``); more than ``max_bins`` in one partition is
        the error of too many categories already."""
        from ._categories import column_labels, distinct_values, merge_categories

        found = []
        for part in self.X_parts:
            values = distinct_values(part, mask)
            for j, v in values.items():
                if v.shape[0] > max_bins:
                    merge_categories([v], column_labels(part, self.n_features)[j],
                                     max_bins)
            found.append(values)
        return found

    def use_categories(self, categories):
        """The categories of every categorical feature, merged by the client: each
        partition (and ``eval_set`` partition) is encoded with them."""
        self.categories = categories

    def _part_slices(self):
        start = 0
        for n in self.part_rows:
            yield slice(start, start + n)
            start += n

    def describe(self, categorical_features=None):
        """(rows of each partition, columns, distinct labels and their counts, largest
        weight, missing labels of each partition, the numbers, label rows and missing
        labels of the ``eval_set`` partitions here or None, the partitions'
        numbers, the features ``categorical_features`` makes categorical): the
        missing labels of a partition are (how many, the first rows of them in the
        partition), and the labels are not read where some are missing; the
        categorical features are :meth:`categorical_mask`'s, or its error (raised by
        the client after the checks of the labels, as one process raises them)."""
        from ._validation import label_counts

        top = 0.0 if self.w is None or self.w.size == 0 else float(self.w.max())
        if any(n for n, _ in self.missing):
            labels, counts = self.y[:0], np.zeros(0, dtype=np.int64)
        else:
            labels, counts = label_counts(self.y)
        evaluated = None
        if self.eval_parts is not None:
            evaluated = (self.eval_parts[3], [len(p) for p in self.eval_parts[1]],
                         self.eval_missing)
        try:
            categorical = (None if categorical_features is None
                           else self.categorical_mask(categorical_features))
        except Exception as exc:  # noqa: BLE001 - raised by the client, after the labels'
            categorical = exc
        return (self.part_rows, self.n_features, labels, counts, top, self.missing,
                evaluated, self.part_numbers, categorical)

    def prepare(self, classes, exponent, class_factors):
        """Class codes and weights (times the class factors, scaled by
        2**-exponent), the validation rows of ``eval_set``; returns for each
        partition and class the rows with weight and without, shape (n_parts,
        n_classes, 2)."""
        codes = np.searchsorted(classes, self.y).astype(np.int32)
        w = self.w
        if class_factors is not None:
            w = (np.ones(codes.shape[0]) if w is None else w) * class_factors[codes]
        if w is not None and exponent:
            w = np.ldexp(w, -exponent)
        self.w = None if w is None else np.ascontiguousarray(w, dtype=np.float64)
        self.codes = codes
        self.y = None
        if self.eval_parts is not None:
            self.eval_part = self._eval_rows(classes, class_factors)
            self.eval_parts = None
        K = classes.size
        counts = np.zeros((len(self.part_rows), K, 2), dtype=np.int64)
        for p, sl in enumerate(self._part_slices()):
            c = codes[sl]
            weighted = np.ones(c.shape[0], bool) if self.w is None else self.w[sl] > 0
            counts[p, :, 0] = np.bincount(c[weighted], minlength=K)
            counts[p, :, 1] = np.bincount(c[~weighted], minlength=K)
        return counts

    def _eval_rows(self, classes, class_factors):
        from ._validation import check_label_values

        Xv, yv, wv, numbers = self.eval_parts
        # (A worker may hold no validation partition: then no validation row.)
        Xv = [as_float32_part(p, "eval_set X", self.categories) for p in Xv]
        rows = [p.shape[0] for p in Xv]
        yv = [np.asarray(p).ravel() for p in yv]
        check_partitioned_alike(rows, yv, numbers, "eval_set y", "eval_set X")
        if wv is not None:
            wv = [np.asarray(p, dtype=np.float64).ravel() for p in wv]
            check_partitioned_alike(rows, wv, numbers, "eval_set sample_weight",
                                    "eval_set X")
            wv = np.concatenate(wv + [np.empty(0)])
        Xv = np.ascontiguousarray(np.concatenate(
            Xv + [np.empty((0, self.n_features), np.float32)], axis=0))
        yv = np.concatenate(yv + [np.empty(0, classes.dtype)])
        check_label_values(yv, name="eval_set y")
        known = np.isin(yv, classes)
        if not known.all():
            raise ValueError(f"eval_set y has labels not seen in y: "
                             f"{np.unique(yv[~known]).tolist()!r}")
        cv = np.searchsorted(classes, yv).astype(np.int32)
        if class_factors is not None:
            wv = (np.ones(cv.shape[0]) if wv is None else wv) * class_factors[cv]
        return (Xv, cv, wv)

    def _hold_out(self, holdout):
        """``self.train``: False for the rows of the early-stopping hold-out (the
        draw of the single-process fit, ``_boosting.holdout_draw``, replayed on
        this part's rows by their ranks in their groups)."""
        from ._boosting import holdout_draw

        self.train = np.ones(self.codes.shape[0], dtype=bool)
        if holdout is None:
            return
        seed, sizes, n_val, offsets = holdout
        drawn = holdout_draw(sizes, n_val, np.random.default_rng(seed))
        two = np.asarray(sizes).ndim == 2
        for p, sl in enumerate(self._part_slices()):
            group = self.codes[sl].astype(np.int64)
            if two:
                group = 2 * group + (0 if self.w is None else (self.w[sl] <= 0))
            for g in np.unique(group):
                at = np.flatnonzero(group == g)
                rank = offsets[p][g] + np.arange(at.size)
                self.train[sl.start + at[np.isin(rank, drawn[g])]] = False

    def hold_out_and_sketch(self, holdout, max_bins):
        """Hold out the early-stopping validation rows (``holdout``: None, or (seed,
        group sizes, held-out counts, the offsets of this worker's partitions in each
        group, shape (n_parts, n_groups))); returns the training rows of each
        partition and a ``BinSketch`` of each partition's training rows of positive
        weight."""
        from ._binning import BinMapper

        self._hold_out(holdout)
        mapper = BinMapper(max_bins=max_bins)
        sketches, held = [], []
        kept = self._kept()
        for sl, X in zip(self._part_slices(), self._float_parts()):
            if holdout is not None:
                held.append(X[~self.train[sl]])
            # (In Fortran order: the sketch reads the values feature by feature; the
            # kept rows gathered column by column, one copy.)
            rows = kept[sl]
            sketches.append(mapper.sketch(_fortran(X) if rows.all()
                                          else np.asfortranarray(X.T[:, rows].T)))
        if holdout is not None:
            wv = None if self.w is None else self.w[~self.train]
            self.eval_part = (np.ascontiguousarray(np.concatenate(
                held + [np.empty((0, self.n_features), np.float32)])),
                self.codes[~self.train], wv)
        train_rows = [int(np.count_nonzero(self.train[sl])) for sl in self._part_slices()]
        return train_rows, sketches

    def _kept(self):
        """Per row: a training row of positive weight (the rows a fit uses)."""
        return self.train if self.w is None else self.train & (self.w > 0)

    def bin(self, mapper, train_offsets, n_samples, n_jobs, keep_X, previous):
        """Bin the training rows of positive weight (keeping their float32 values when
        ``keep_X``: ``subsample`` routes out-of-bag rows on them) and, for a warm
        start, take the scores of the ``previous`` ensemble on them; returns (their
        weight, the bins' value ranges)."""
        from ._distributed import PartTrainer, bin_parts
        from ._params import effective_n_threads

        # (n_jobs resolved here: a negative one counts this worker's CPUs.)
        n_threads = 1 if n_jobs is None else effective_n_threads(n_jobs)
        kept = self._kept()
        rows, kept_X, raw = [], [], []
        for p, sl in enumerate(self._part_slices()):
            position = np.cumsum(self.train[sl]) - 1   # among the training rows
            rows.append(train_offsets[p] + position[kept[sl]])

        def parts():
            for sl, X in zip(self._part_slices(), self._float_parts()):
                # (A partition whose rows are all kept is binned as it is, no copy.)
                X = np.ascontiguousarray(X if kept[sl].all() else X[kept[sl]])
                if previous is not None:
                    r = np.empty((X.shape[0], previous.n_outputs))
                    r[:] = previous.init_raw
                    if X.shape[0]:
                        previous.add_raw(X, r, 0, previous.n_iterations, n_threads)
                    raw.append(r)
                if keep_X:
                    kept_X.append(X)
                yield X

        bins, lo, hi = bin_parts(
            parts() if self.X_parts else [np.empty((0, self.n_features), np.float32)],
            mapper, n_threads)
        self.X_parts = None  # the raw rows are no longer needed: bins only
        X = None
        if keep_X:
            X = np.asfortranarray(np.concatenate(
                kept_X + [np.empty((0, self.n_features), np.float32)]))
        previous_raw = None
        if previous is not None:
            previous_raw = np.concatenate(raw + [np.empty((0, previous.n_outputs))])
        codes = self.codes[kept]
        w = None if self.w is None else np.ascontiguousarray(self.w[kept])
        self.trainer = PartTrainer(bins, mapper.n_bins_non_missing, mapper.missing_bin,
                                   codes, w, np.concatenate(rows + [np.empty(0, np.int64)]),
                                   n_samples, self.eval_part, X, previous_raw)
        self.codes = self.w = self.train = self.eval_part = None
        total_w = float(codes.shape[0] if w is None else w.sum())
        return total_w, lo, hi

    def fit(self, comm, n_classes, params, seed, lo, hi, previous):
        """This part's share of the fit (``params`` with this worker's
        ``n_threads``): (trees, init_raw, record, category sets or None)."""
        ensemble, record = self.trainer.fit(comm, n_classes, params, seed, lo, hi,
                                            previous)
        return ensemble.trees(), ensemble.init_raw, record, ensemble.category_sets


# ------------------------------------------------------------------ the client
def _by_partition(described, index, n):
    """``described[rank][index]`` (one entry per partition of that rank) laid out
    by partition number, ``n`` partitions."""
    out = [None] * n
    for d in described:
        for number, value in zip(d[7], d[index]):
            out[number] = value
    return out


def _classes(described, has_eval_set):
    """(n_features, rows of each partition, the classes) from the parts'
    descriptions, with the checks of X and y in one process."""
    from ._model_io import check_labels
    from ._validation import check_target

    widths = {d[1] for d in described}
    if len(widths) != 1:
        raise ValueError(f"the workers' partitions of X have different numbers "
                         f"of columns: {sorted(widths)}")
    n_parts = sum(len(d[7]) for d in described)
    part_rows = np.array(_by_partition(described, 0, n_parts), dtype=np.int64)
    if part_rows.sum() == 0:
        raise ValueError("X has no rows")
    check_no_missing_labels(part_rows, _by_partition(described, 5, n_parts), "y")
    # The checks of y in memory, on the distinct labels of every worker (each
    # worker has checked its own: these find labels of different kinds on
    # different workers, and a single class).
    merged = merged_labels([d[2] for d in described])
    classes, _ = check_target(merged, merged.shape[0])
    check_labels(classes)
    if has_eval_set:
        evaluated = [d[6] for d in described]
        n_eval = sum(len(e[0]) for e in evaluated)
        rows, missing = np.zeros(n_eval, dtype=np.int64), [None] * n_eval
        for numbers, n_rows, miss in evaluated:
            rows[numbers] = n_rows
            for i, m in zip(numbers, miss):
                missing[i] = m
        check_no_missing_labels(rows, missing, "eval_set y")
    return widths.pop(), part_rows, classes


def _weights(transport, described, classes, params):
    """``prepare`` on every part: (rows of each partition and class, with weight
    and without, shape (n_parts, n_classes, 2))."""
    from ._validation import WEIGHT_RANGE

    label_counts = np.zeros(classes.size)
    for d in described:
        label_counts[np.searchsorted(classes, d[2])] += d[3]
    top = max(d[4] for d in described)
    exponent = 0
    if top > 0 and not WEIGHT_RANGE[0] <= top <= WEIGHT_RANGE[1]:
        exponent = int(np.frexp(top)[1])
    factors = class_factors(params["class_weight"], classes, label_counts)
    counts = transport.call("prepare", [(classes, exponent, factors)] * len(described),
                            "reading the labels")
    n_parts = sum(len(d[7]) for d in described)
    groups = np.zeros((n_parts, classes.size, 2), dtype=np.int64)
    for d, c in zip(described, counts):
        groups[d[7]] = c
    weighted_classes = int(np.count_nonzero(groups[:, :, 0].sum(axis=0)))
    if weighted_classes < 2:
        raise ValueError(f"y contains {weighted_classes} class with positive "
                         "weight (sample_weight x class_weight), while a minimum "
                         "of 2 classes are required")
    return groups


def _holdouts(described, groups, classes, params, seed, has_eval_set):
    """Each rank's ``holdout`` argument of ``split``: the single-process hold-out
    (stratified by class, and by weight > 0 where some rows have none); the draw
    depends on the group sizes only, each part replays it and keeps its rows'
    share."""
    from ._boosting import holdout_sizes

    if params["n_iter_no_change"] is None or has_eval_set:
        return [None] * len(described)
    if groups[:, :, 1].sum():
        flat = groups.reshape(groups.shape[0], -1)
        sizes = groups.sum(axis=0)
    else:
        flat = groups[:, :, 0]
        sizes = flat.sum(axis=0)
    n_val = holdout_sizes(sizes, classes, params["validation_fraction"])
    offsets = np.cumsum(flat, axis=0) - flat
    return [(seed, sizes, n_val, offsets[d[7]]) for d in described]


def _categories(transport, described, params, n_features, names):
    """The categorical features and their categories, agreed by every part before
    the fit: (mask, categories) or (None, None).

    Each part has reported (``describe``, in ``described``) the features
    ``categorical_features`` makes categorical in its partitions (a column of
    category or string dtype in some partition, e.g. not in one where it holds only
    missing values, is categorical), then the distinct values of those in each
    partition; the categories of a feature are their sorted
    union (``_categories.merge_categories``: the categories of the rows of every
    part together, as in one process, with its checks: at most ``max_bins``, one
    kind of value), and every part encodes its rows with them."""
    from ._categories import _column_label, merge_categories

    masks = [d[8] for d in described]
    for mask in masks:
        if isinstance(mask, (ValueError, TypeError)):
            raise mask  # as one process raises it
        if isinstance(mask, Exception):
            raise RuntimeError(f"distributed fit: finding the categorical features failed "
                               f"on a worker: {type(mask).__name__}: {mask}") from mask
    masks = [m for m in masks if m is not None]
    if not masks:
        return None, None
    mask = np.logical_or.reduce(masks)
    n_ranks = len(described)
    found = transport.call("category_values", [(mask, params["max_bins"])] * n_ranks,
                           "reading the categories")
    categories = [None] * n_features
    for j in np.flatnonzero(mask):
        parts = [values[j] for per_rank in found for values in per_rank]
        categories[j] = merge_categories(parts, _column_label(names, j),
                                         params["max_bins"])
    transport.call("use_categories", [(categories,)] * n_ranks, "sharing the categories")
    return mask, categories


def _binned(transport, described, holdouts, params, previous, categories=None):
    """``hold_out_and_sketch`` and ``bin`` on every part: (training rows, lo, hi,
    total weight)."""
    from ._binning import BinMapper

    sketched = transport.call("hold_out_and_sketch",
                              [(h, params["max_bins"]) for h in holdouts],
                              "sketching the partitions")
    n_parts = sum(len(d[7]) for d in described)
    train_rows = np.zeros(n_parts, dtype=np.int64)
    for d, (rows_of, _) in zip(described, sketched):
        train_rows[d[7]] = rows_of
    train_offsets = np.cumsum(train_rows) - train_rows
    n_train = int(train_rows.sum())
    from ._categories import n_categories

    mapper = BinMapper.from_sketches([sk for _, sks in sketched for sk in sks],
                                     params["max_bins"],
                                     None if categories is None else n_categories(categories))
    ensemble = None if previous is None else previous[0]
    binned = transport.call(
        "bin", [(mapper, train_offsets[d[7]], n_train, params["n_jobs"],
                 params["subsample"] < 1.0, ensemble) for d in described], "binning")
    total_w = sum(b[0] for b in binned)
    if not total_w > 0:
        raise ValueError("sample_weight is zero for every sample")
    lo = np.minimum.reduce([b[1] for b in binned])
    hi = np.maximum.reduce([b[2] for b in binned])
    return n_train, lo, hi, total_w


def fit_parts(transport, params, seed, *, has_eval_set, names=None, warm=None,
              model_params=None):
    """The data-parallel fit of the parts behind ``transport``.

    Parameters
    ----------
    transport : Transport
    params : dict
        Checked parameters (``_params.check_params``, ``check_supported``).
    seed : int
    has_eval_set : bool
        Whether the parts were given ``eval_set`` partitions.
    names : array of str or None
        The feature names.
    warm : Booster or None
        The fitted model to continue (``warm_start``).
    model_params : dict or None
        The parameters the Booster records.

    Returns
    -------
    Booster, or None where a warm start has nothing to add
    """
    from ._booster import Booster
    from ._boosting import warm_start_from
    from ._categories import categorical_params
    from ._ensemble import Ensemble
    from ._params import resolve

    n_ranks = len(transport.ranks)
    described = transport.call("describe", [(params["categorical_features"],)] * n_ranks,
                               "reading the partitions")
    n_features, _, classes = _classes(described, has_eval_set)
    mask, categories = _categories(transport, described, params, n_features, names)
    previous = None
    if warm is not None:
        previous = warm_start_from(warm, params, classes, n_features, names,
                                   categorical=mask, categories=categories)
        if previous is None:
            return None
    groups = _weights(transport, described, classes, params)
    holdouts = _holdouts(described, groups, classes, params, seed, has_eval_set)
    n_train, lo, hi, total_w = _binned(transport, described, holdouts, params, previous,
                                       categories)
    resolved = resolve(params, n_train, n_features, total_w, feature_names=names)
    categorical_params(resolved, mask, categories, names)
    trees, init_raw, record, sets = transport.fit(
        (classes.size, resolved, seed, lo, hi, previous))[0]
    ensemble = Ensemble.from_trees(trees, n_outputs=init_raw.shape[0], init_raw=init_raw,
                                   learning_rate=params["learning_rate"],
                                   n_features=n_features, categorical=mask,
                                   category_sets=sets)
    return Booster(ensemble, classes, feature_names=names, params=model_params,
                   record=record, max_features=resolved["max_features"],
                   loss=params["loss"], categories=categories)
