"""The split methods (``split_method=``), one object each, registered by name.

A :class:`SplitMethod` owns all that the rest of a fit knows of its search:

- how X is laid out for it (:attr:`SplitMethod.dense_order` and
  :meth:`SplitMethod.lay_out` at the start of a fit,
  :meth:`SplitMethod.take_rows` for a subset of the rows, :meth:`SplitMethod.fit_data`
  for the finder and the grower): dense float32 in Fortran order or as given, and
  sparse X as CSC columns or densified;
- how its finder (a ``_split_finder.SplitFinder``) is built on that X
  (:meth:`SplitMethod.make_finder`);
- which options it supports: sparse X without densifying, the distributed fit,
  growing an iteration's K trees side by side on copies of its finder that share
  the threads out;
- how the grower routes rows: in the partition by the finder's bins
  (``finder.partition_bins()``) or by the raw values of X, out of bag always by the
  raw values (dense Fortran-order X or the CSC columns). :meth:`SplitMethod.fit_data`
  hands the grower the raw X or columns that this routing reads; the readers of bins,
  of dense X and of CSC columns are loops of the Cython grower (``_grower.pyx``).

No other module tests ``split_method`` by its value or a finder by its type. A new
finder is its module (a ``SplitFinder`` subclass, in setup.py's module list when it
is compiled) and one :func:`register` call below.

``_params`` takes the names and the parameter's help from here, and the model-file
loader imports ``_params``: this module imports NumPy and ``_validation`` only; the
finders' modules (and the binning) are imported with the training code
(:func:`load_modules`, called by ``_boosting``).
"""

import importlib

import numpy as np

from ._validation import is_sparse_matrix, sparse_arrays, take_rows


class FitData:
    """X as one fit reads it (:meth:`SplitMethod.fit_data`).

    Attributes
    ----------
    X : float32 array, float32 CSC matrix, or None
        What the finder is built on and a warm start scores (None: a process of a
        distributed fit that keeps its rows' bins only).
    grower_X : float32 array in Fortran order, or None
        The raw values the grower reads: to partition rows (a finder without bins)
        and to route out-of-bag rows.
    columns : tuple (data, indices, indptr) or None
        Sparse X's CSC arrays: the grower routes out-of-bag rows on them.
    """

    def __init__(self, X, grower_X, columns):
        self.X = X
        self.grower_X = grower_X
        self.columns = columns

    @property
    def sparse(self):
        return self.columns is not None


def dense_columns(X):
    """A float32 CSC matrix (``check_features``) as a Fortran-order float32 array,
    written one column (feature) at a time from its entries: the dense X of a method
    without sparse input (n_samples x n_features x 4 bytes) and nothing more."""
    out = np.zeros(X.shape, dtype=np.float32, order="F")
    data, indices, indptr = sparse_arrays(X)
    for j in range(X.shape[1]):
        out[indices[indptr[j]:indptr[j + 1]], j] = data[indptr[j]:indptr[j + 1]]
    return out


class SplitMethod:
    """One value of ``split_method``.

    Parameters
    ----------
    name : str
        The value of ``split_method``.
    help : str
        What it searches, for the parameter's help (``_params``).
    build : callable
        ``build(X, params) -> SplitFinder`` on X as :meth:`fit_data` leaves it
        (``params``: ``n_threads`` and the method's own parameters).
    modules : tuple of str
        The modules of this package that ``build`` imports (its finder's), loaded
        with the training code (:func:`load_modules`), never by a fit itself.
    partitions_on_bins : bool
        Its finder returns bins from ``partition_bins()``: the grower moves rows on
        them and needs raw X only for out-of-bag rows (``subsample < 1``). False:
        the grower moves rows on the raw values (dense, Fortran order).
    sparse_input : bool
        It is built on a sparse X's CSC columns (and the grower routes out-of-bag
        rows on them). False: sparse X is densified first (:func:`dense_columns`).
    distributed : bool
        The distributed fit trains it (it sums histograms over the processes).
    side_by_side : bool
        Its finder has ``with_threads(t)``: copies on t threads each grow the K
        trees of an iteration side by side, every thread at work (one process,
        unit weights).
    uneven_lanes : bool, default=True
        Side by side also where some growers would have one thread and others two
        (K < threads < 2K): worth it for a tree whose time falls little with more
        threads (hist); not for one whose time falls nearly in proportion (exact),
        where a one-thread grower's tree would take the iteration's time. False:
        the K trees grow one after another on those thread counts.
    """

    def __init__(self, name, help, build, modules=(), *, partitions_on_bins, sparse_input,
                 distributed, side_by_side, uneven_lanes=True):
        self.name = name
        self.help = help
        self.build = build
        self.modules = tuple(modules)
        self.partitions_on_bins = partitions_on_bins
        self.sparse_input = sparse_input
        self.distributed = distributed
        self.side_by_side = side_by_side
        self.uneven_lanes = uneven_lanes

    def grows_side_by_side(self, n_threads, n_outputs):
        """Whether the K = ``n_outputs`` trees of an iteration grow side by side on
        ``n_threads`` threads (one process, outputs independent): this method has
        finder copies, and the growers' threads are not one for some and two for
        others where it takes no uneven lanes (``uneven_lanes``)."""
        return (self.side_by_side and n_outputs > 1 and n_threads > 1
                and (self.uneven_lanes or not n_outputs < n_threads < 2 * n_outputs))

    def __repr__(self):
        return f"SplitMethod({self.name!r})"

    @property
    def dense_order(self):
        """The order dense training X is checked in: "F" for a search on raw values
        (sorted columns), "K" (as given, no copy) for one on bins."""
        return "K" if self.partitions_on_bins else "F"

    def lay_out(self, X):
        """Training X as ``check_features(X, dtype=np.float32, order=dense_order,
        sparse="csc", training=True)`` gives it (the estimator calls it, so that its
        warnings point at the caller of fit), laid out for this method: a dense
        array in neither C nor Fortran order in Fortran order, else X itself."""
        if not is_sparse_matrix(X) and not (X.flags.f_contiguous or X.flags.c_contiguous):
            return np.asfortranarray(X)
        return X

    def take_rows(self, X, rows):
        """The rows ``rows`` of X laid out by :meth:`lay_out` (a hold-out, the rows of
        weight): a CSC matrix of a sparse X, else a Fortran-order array."""
        if is_sparse_matrix(X):
            return take_rows(X, rows, "csc")
        return np.asfortranarray(X[rows])

    def fit_data(self, X, subsample):
        """The :class:`FitData` of ``X`` (laid out by :meth:`lay_out`, or None) for a
        fit with ``subsample``: sparse X densified unless :attr:`sparse_input`; dense X
        in Fortran order where the grower reads raw values (a search on raw values,
        or out-of-bag rows); the CSC columns of sparse X for the out-of-bag rows."""
        if X is None:
            return FitData(None, None, None)
        if is_sparse_matrix(X):
            if self.sparse_input:
                return FitData(X, None, sparse_arrays(X))
            X = dense_columns(X)
        if not self.partitions_on_bins or subsample < 1.0:
            X = np.asfortranarray(X)
        return FitData(X, X if X.flags.f_contiguous else None, None)

    def make_finder(self, X, params):
        """Its split finder built on ``X`` (:attr:`FitData.X`)."""
        return self.build(X, params)


#: The split methods by name, in the order of the parameter's help.
METHODS = {}


def register(method):
    """Add ``method`` (a :class:`SplitMethod`) under its name; returns it."""
    if method.name in METHODS:
        raise ValueError(f"split_method {method.name!r} is registered already")
    METHODS[method.name] = method
    return method


def method_named(name):
    """The registered :class:`SplitMethod` of ``name`` (a checked parameter)."""
    try:
        return METHODS[name]
    except (KeyError, TypeError):
        raise ValueError(f"split_method must be {names_phrase()}, got {name!r}") from None


def names_phrase(methods=None):
    """The names of ``methods`` (default: every registered one) for a message:
    ``'exact' or 'hist'``."""
    return " or ".join(repr(m.name) for m in (METHODS.values() if methods is None
                                              else methods))


def help_text():
    """The help of the ``split_method`` parameter: each name with what it searches."""
    return "split search: " + " or ".join(f"{m.name!r} ({m.help})"
                                          for m in METHODS.values())


def distributed_methods():
    """The methods the distributed fit trains."""
    return [m for m in METHODS.values() if m.distributed]


def is_distributed(name):
    """Whether ``name`` (any value) is a method the distributed fit trains."""
    method = METHODS.get(name) if isinstance(name, str) else None
    return method is not None and method.distributed


def check_distributed(name):
    """Refuse a ``split_method`` that the distributed fit does not train (a
    ValueError naming it, and what it trains)."""
    if not method_named(name).distributed:
        raise ValueError(
            f"split_method={name!r} is not supported by the distributed fit: the "
            "distributed fit reduces histograms: it trains split_method="
            f"{names_phrase(distributed_methods())} only")


def load_modules():
    """Import the finders' modules of every registered method. The training code
    calls it at its own import, so that a fit imports nothing (a fit under a memory
    limit fails with a MemoryError, never an ImportError of a module it maps)."""
    for method in METHODS.values():
        for module in method.modules:
            importlib.import_module(f".{module}", __package__)


def make_split_finder(X, params):
    """The split finder ``params["split_method"]`` names, built on ``X``."""
    return method_named(params["split_method"]).make_finder(X, params)


# ----------------------------------------------------------------- the methods
def _exact_finder(X, params):
    """Every distinct value of each feature, from the columns sorted once per fit."""
    from ._exact_splitter import ExactSplitFinder

    return ExactSplitFinder(np.asfortranarray(X), params["n_threads"])


def _histogram_finder(X, params):
    """Bins X here, once per fit (``BinMapper``, ``params["max_bins"]`` bins, seeded:
    the same data gives the same edges, so a warm start on the same data continues
    with the first fit's bins); the trees store the bin edges as real thresholds
    (between the values of two bins), so nothing after the fit sees bins. A sparse X
    (float32 CSC) is binned column by column from its entries (implicit zeros in the
    bin of 0.0), never densified. A categorical feature (``params["n_categories"]``,
    its count of categories; 0 for a numeric one) has its codes as bins: code c in
    bin c."""
    from ._binning import BinMapper
    from ._histogram_splitter import (HistogramSplitFinder, bin_value_ranges,
                                      bin_value_ranges_csc)

    n_threads = params["n_threads"]
    mapper = BinMapper(max_bins=params["max_bins"]).fit(
        X, n_threads, n_categories=params.get("n_categories"))
    bins = mapper.transform(X, n_threads)
    if is_sparse_matrix(X):
        zero_bin = mapper.transform(np.zeros((1, X.shape[1]), dtype=np.float32))[0]
        lo, hi = bin_value_ranges_csc(*sparse_arrays(X), bins, np.ascontiguousarray(zero_bin),
                                      mapper.missing_bin, n_threads)
    else:
        lo, hi = bin_value_ranges(X, bins, mapper.missing_bin, n_threads)
    return HistogramSplitFinder(bins, np.asarray(mapper.n_bins_non_missing, dtype=np.int32),
                                lo, hi, mapper.missing_bin, n_threads)


register(SplitMethod(
    "exact", "every distinct value, the paper's", _exact_finder, ("_exact_splitter",),
    partitions_on_bins=False, sparse_input=False, distributed=False, side_by_side=True,
    uneven_lanes=False))
register(SplitMethod(
    "hist", "the edges of at most max_bins bins per feature, computed once per fit",
    _histogram_finder, ("_binning", "_histogram_splitter"),
    partitions_on_bins=True, sparse_input=True, distributed=True, side_by_side=True))
