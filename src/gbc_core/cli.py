"""Command line: ``gbc-core COMMAND`` (same as ``python -m gbc_core COMMAND``).

Commands: ``demo`` (the default), ``train``, ``predict``, ``evaluate``, ``inspect``.
User errors print one line ``gbc-core: error: ...`` and exit with status 1 (``--debug``
shows the traceback); argument errors exit with status 2, an interrupt with 130.
"""

import argparse
import os
import signal
import sys

DEFAULT_CHUNK_ROWS = 100_000


def _cmd_demo(args):
    from ._demo import run_demo

    run_demo(sys.stdout)
    return 0


def _cmd_train(args):
    from ._batch import run_train

    return run_train(args)


def _cmd_predict(args):
    from ._batch import run_predict

    return run_predict(args)


def _cmd_evaluate(args):
    from ._batch import run_evaluate

    return run_evaluate(args)


def _cmd_inspect(args):
    from ._batch import run_inspect

    return run_inspect(args)


# ------------------------------------------------------------ argument types
def _positive_int(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def _depth(text):
    if text.lower() in ("none", "0"):
        return None
    return _positive_int(text)


def _int_or_fraction(text):
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def _max_features(text):
    if text.lower() in ("sqrt", "log2"):
        return text.lower()
    if text.lower() == "none":
        return None
    return _int_or_fraction(text)


def _n_jobs(text):
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _common(p):
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress bar or summary on stderr/stdout")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="show the Python traceback of an error")


def _data_options(p, target_required=False):
    p.add_argument("--format", choices=["csv", "tsv", "parquet", "libsvm"],
                   help="format of DATA (default: from the extension: .csv, .tsv, "
                        ".parquet/.pq, .svm/.libsvm/.svmlight)")
    p.add_argument("--delimiter", help="CSV field delimiter (default ',' or TAB for tsv)")
    p.add_argument("--no-header", action="store_true",
                   help="CSV/TSV without a header line: columns are named col0, col1, ...")
    p.add_argument("--n-features", type=_positive_int,
                   help="LIBSVM: number of features (default: the largest index when "
                        "training, the model's at predict time)")
    p.add_argument("--drop", nargs="+", metavar="COL", default=[],
                   help="columns that are not features (ids, leaks)")


def build_parser():
    parser = argparse.ArgumentParser(
        prog="gbc-core",
        description="Exact-split gradient boosting classifier (the paper's GBC).",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("--debug", action="store_true",
                        help="show the Python traceback of an error")
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("demo", help="paper example and a real dataset (the default)")
    p.set_defaults(func=_cmd_demo)

    # train
    p = sub.add_parser(
        "train", help="fit a model on a CSV, Parquet or LIBSVM file and save it",
        description="Fit a model on DATA and save it to -o. CSV/Parquet: every column "
                    "except --target and --drop is a feature (names are recorded). "
                    "LIBSVM: the label is the target, features f0..f(n-1).")
    p.add_argument("data", metavar="DATA")
    p.add_argument("--target", "-t", metavar="COL",
                   help="label column (required for CSV/Parquet; LIBSVM uses its label)")
    p.add_argument("--output", "-o", required=True, metavar="MODEL",
                   help="model file to write (e.g. model.gbc)")
    p.add_argument("--eval", metavar="DATA2",
                   help="evaluation data: reported at the end and used by "
                        "--n-iter-no-change for early stopping")
    p.add_argument("--eval-format", choices=["csv", "tsv", "parquet", "libsvm"],
                   help="format of --eval (default: its extension, else --format)")
    _data_options(p)
    g = p.add_argument_group("hyper-parameters")
    g.add_argument("--n-estimators", type=_positive_int, default=100)
    g.add_argument("--learning-rate", type=float, default=0.1)
    g.add_argument("--max-depth", type=_depth, default=3, help="an integer or 'none'")
    g.add_argument("--min-samples-split", type=_int_or_fraction, default=2)
    g.add_argument("--min-samples-leaf", type=_int_or_fraction, default=1)
    g.add_argument("--subsample", type=float, default=1.0)
    g.add_argument("--max-features", type=_max_features, default=None,
                   help="sqrt, log2, an integer or a fraction (default: all)")
    g.add_argument("--init", choices=["zero", "prior"], default="zero")
    g.add_argument("--random-state", type=int, default=None)
    g.add_argument("--n-jobs", type=_n_jobs, default=None,
                   help="threads (default: all cores)")
    g.add_argument("--n-iter-no-change", type=_positive_int, default=None,
                   help="early stopping patience (on --eval if given, else a "
                        "--validation-fraction hold-out)")
    g.add_argument("--validation-fraction", type=float, default=0.1)
    g.add_argument("--tol", type=float, default=1e-4)
    g.add_argument("--class-weight", choices=["balanced"], default=None)
    g.add_argument("--verbose", "-v", action="count", default=0,
                   help="print one line per iteration")
    _common(p)
    p.set_defaults(func=_cmd_train)

    # predict
    p = sub.add_parser(
        "predict", help="score a file in chunks and write the scores",
        description="Score DATA in chunks of --chunk-rows rows and write one output row "
                    "per input row, in input order (Parquet or CSV by the -o extension). "
                    "The output appears only when the run succeeds.")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("data", metavar="DATA")
    p.add_argument("--output", "-o", required=True, metavar="OUT",
                   help="output file: .parquet/.pq or .csv")
    p.add_argument("--output-format", choices=["parquet", "csv", "tsv"])
    p.add_argument("--proba", action="store_true",
                   help="write 'proba', the positive-class probability (the default)")
    p.add_argument("--label", action="store_true",
                   help="write 'label', the predicted class (with --proba: both)")
    p.add_argument("--keep", nargs="+", metavar="COL", default=[],
                   help="input columns copied to the output (e.g. an id)")
    p.add_argument("--chunk-rows", type=_positive_int, default=DEFAULT_CHUNK_ROWS,
                   help=f"rows per chunk (default {DEFAULT_CHUNK_ROWS:,}); memory is "
                        "bounded by the chunk size")
    p.add_argument("--n-jobs", type=_n_jobs, default=None,
                   help="threads (default: all cores; with --dask: shared per host)")
    p.add_argument("--dask", metavar="SCHEDULER_ADDRESS",
                   help="score the chunks on a Dask cluster (e.g. tcp://host:8786)")
    _data_options(p)
    _common(p)
    p.set_defaults(func=_cmd_predict)

    # evaluate
    p = sub.add_parser(
        "evaluate", help="log-loss, ROC AUC, accuracy and confusion matrix on labelled data")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("data", metavar="DATA")
    p.add_argument("--target", "-t", metavar="COL",
                   help="label column (required for CSV/Parquet; LIBSVM uses its label)")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")
    p.add_argument("--chunk-rows", type=_positive_int, default=DEFAULT_CHUNK_ROWS)
    p.add_argument("--n-jobs", type=_n_jobs, default=None)
    _data_options(p)
    _common(p)
    p.set_defaults(func=_cmd_evaluate)

    # inspect
    p = sub.add_parser(
        "inspect", help="format version, classes, features, trees and importances of a model")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("--tree", type=int, metavar="K",
                   help="draw tree K (0-based; negative counts from the end) as text")
    p.add_argument("--top", type=_positive_int, default=10,
                   help="importances to list (default 10)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    _common(p)
    p.set_defaults(func=_cmd_inspect)
    return parser


def _error(message):
    print(f"gbc-core: error: {' '.join(str(message).split())}", file=sys.stderr)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None):
    """Entry point of the ``gbc-core`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from ._version import __version__

        print(__version__)
        return 0
    if args.command is None:
        args = parser.parse_args(["demo"])
    debug = getattr(args, "debug", False)
    previous = None
    try:  # SIGTERM unwinds like Ctrl-C, so partial outputs are removed
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    except ValueError:  # not the main thread
        pass
    try:
        return args.func(args)
    except BrokenPipeError:  # e.g. ``gbc-core inspect m.gbc | head``
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 141
    except KeyboardInterrupt:
        if debug:
            raise
        _error("interrupted")
        return 130
    except Exception as exc:  # noqa: BLE001 - one line, not a traceback
        if debug:
            raise
        from ._tabular import DataError

        if isinstance(exc, DataError):
            _error(exc)
        elif isinstance(exc, OSError):
            where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
            _error(f"{where}{exc.strerror or exc}")
        elif isinstance(exc, ImportError):
            _error(exc)
        else:
            _error(f"{type(exc).__name__}: {exc} (run with --debug for the traceback)")
        return 1
    finally:
        if previous is not None:
            try:
                signal.signal(signal.SIGTERM, previous)
            except ValueError:
                pass
