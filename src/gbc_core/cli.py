"""Command line: ``gbc-core COMMAND`` (same as ``python -m gbc_core COMMAND``).

Commands: ``demo`` (the default), ``train``, ``predict``, ``evaluate``, ``inspect``,
``export``.
User errors print one line ``gbc-core: error: ...`` and exit with status 1 (``--debug``
shows the traceback); argument errors exit with status 2, an interrupt with 130.
"""

import os
import sys

# Nothing else is imported at the top: a Ctrl-C is answered by ``main``'s own message
# only once its ``try`` block runs, so everything before it must take no time.
# argparse, signal and the commands' modules load inside it.

DEFAULT_CHUNK_ROWS = 100_000

#: The modules each command loads, imported up front while signals wait (``_run``).
_COMMAND_MODULES = {
    "demo": ("gbc_core._demo",),
    "train": ("gbc_core._commands", "gbc_core._classifier"),
    "predict": ("gbc_core._commands", "gbc_core._booster"),
    "evaluate": ("gbc_core._commands", "gbc_core._booster", "gbc_core.metrics"),
    "inspect": ("gbc_core._commands", "gbc_core._booster"),
    "export": ("gbc_core._commands", "gbc_core._booster", "gbc_core.onnx", "onnx"),
}
#: CSV and Parquet support (optional; pyarrow loads ``pyarrow.pandas_compat`` on its
#: first conversion).
_TABLE_MODULES = ("pyarrow", "pyarrow.compute", "pyarrow.csv", "pyarrow.parquet", "pandas",
                  "pyarrow.pandas_compat")


def _cmd_demo(args):
    from ._demo import run_demo

    run_demo(sys.stdout)
    return 0


def _cmd_train(args):
    from ._commands import run_train

    return run_train(args)


def _cmd_predict(args):
    from ._commands import run_predict

    return run_predict(args)


def _cmd_evaluate(args):
    from ._commands import run_evaluate

    return run_evaluate(args)


def _cmd_inspect(args):
    from ._commands import run_inspect

    return run_inspect(args)


def _cmd_export(args):
    from ._commands import run_export

    return run_export(args)


# ------------------------------------------------------------ argument types
def _parameter_type(param):
    """An argparse type for a hyper-parameter: the text read as None ('none'), an
    integer, a number or a word, whichever its rule (``_params``) accepts, checked
    by that rule."""
    import argparse

    def parse(text):
        candidates = [text]
        if text.strip().lower() == "none":
            candidates.append(None)
        if text.lstrip().startswith("{"):  # a dict, as JSON: {"0": 1, "1": 3}
            candidates.append(_json_object(text, param.name))
        if text.lstrip().startswith("["):  # a list, as JSON: [1, 0, -1]
            candidates.append(_json_list(text, param.name))
        for convert in (int, float):  # "2" is the integer 2, never the fraction 2.0
            try:
                candidates.append(convert(text))
                break
            except ValueError:
                pass
        for value in candidates:
            if param.accepts(value):
                return value
        raise argparse.ArgumentTypeError(
            f"{param.name} must be {param.describe()}, got {text!r}")

    parse.__name__ = param.name  # argparse names the type in its errors
    return parse


def _categorical_option(text):
    """``--categorical``: "auto", "none", or a comma-separated list of column names."""
    import argparse

    word = text.strip().lower()
    if word in ("auto", "none"):
        return word
    names = text.split(",")
    if any(not name for name in names):
        raise argparse.ArgumentTypeError(
            f"--categorical takes auto, none or column names separated by commas, got "
            f"{text!r} (an empty name)")
    return names


def _json_list(text, name):
    """The JSON array ``text`` as a list (of lists, for groups)."""
    import argparse
    import json

    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"{name}: {text!r} is not a JSON array ({exc})") from None
    return value


def _json_object(text, name):
    """The JSON object ``text`` as a dict (keys are text: the labels are matched to
    the classes by value once the data is read, as ``--class`` and the evaluation
    labels are)."""
    import argparse
    import json

    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"{name}: {text!r} is not a JSON object ({exc})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{name}: {text!r} is not a JSON object")
    return value


def _metric_name(text):
    """A metric of ``train --metric`` (``_params.EVAL_METRICS``; ``auc`` is
    ``roc_auc``, as LightGBM and XGBoost name it)."""
    import argparse

    from ._params import EVAL_METRICS

    name = {"auc": "roc_auc"}.get(text, text)
    if name not in EVAL_METRICS:
        raise argparse.ArgumentTypeError(
            f"unknown metric {text!r}: one of {', '.join(EVAL_METRICS)} (or auc)")
    return name


def _positive_int(text):
    import argparse

    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def _help_formatter():
    """The help formatter class: it shows the default of every option that has one
    (unless its text already says what it is)."""
    import argparse

    class Formatter(argparse.HelpFormatter):
        def _get_help_string(self, action):
            text = action.help or ""
            if ("default" in text.lower() or action.required
                    or action.default in (None, False, [], argparse.SUPPRESS)):
                return text
            return text + " (default: %(default)s)"

    return Formatter


def _parser(sub, name, help, description=None):
    return sub.add_parser(name, help=help, description=description or help,
                          formatter_class=_help_formatter())


def _common(p):
    import argparse

    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress bar or summary on stderr/stdout")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="show the Python traceback of an error")


def _n_jobs_option(p, params, extra=""):
    n_jobs = params["n_jobs"]
    p.add_argument("--n-jobs", type=_parameter_type(n_jobs), default=None, metavar="N",
                   help=n_jobs.help + extra + " (default: None)")


def _data_options(p):
    p.add_argument("--format", choices=["csv", "tsv", "parquet", "libsvm"],
                   help="format of DATA (default: from the extension: .csv, .tsv, "
                        ".parquet/.pq, .svm/.libsvm/.svmlight)")
    p.add_argument("--delimiter", help="CSV field delimiter (default: ',', TAB for tsv)")
    p.add_argument("--no-header", action="store_true",
                   help="CSV/TSV without a header line: columns are named col0, col1, ...")
    p.add_argument("--n-features", type=_positive_int,
                   help="LIBSVM: number of features (default: the largest index when "
                        "training, the model's at predict time)")
    p.add_argument("--drop", nargs="+", metavar="COL", default=[],
                   help="columns that are not features (ids, leaks)")


def _chunk_rows_option(p):
    p.add_argument("--chunk-rows", type=_positive_int, default=None,
                   help="rows per chunk; memory is bounded by the chunk size (default: "
                        f"{DEFAULT_CHUNK_ROWS:,}, fewer for a model of many classes or "
                        "features)")


def _add_demo(sub):
    p = _parser(sub, "demo", "run the paper's worked example, then fit a real dataset "
                             "(the default command)")
    p.set_defaults(func=_cmd_demo)


def _hyper_parameter_options(p):
    from ._params import PARAMS

    g = p.add_argument_group("hyper-parameters (as GradientBoostingClassifier's)")
    for param in PARAMS:
        flag = "--" + param.name.replace("_", "-")
        if param.cli == "count":
            g.add_argument(flag, "-v", action="count", default=param.default,
                           help=param.help + " (repeat: -vv)")
        elif param.cli == "option":
            g.add_argument(flag, type=_parameter_type(param), default=param.default,
                           metavar="VALUE",
                           help=f"{param.help} (default: {param.default})")


def _add_train(sub):
    p = _parser(
        sub, "train", "fit a model on a CSV, Parquet or LIBSVM file and save it",
        description="Fit a model on DATA and save it to -o. CSV/Parquet: every column "
                    "except --target and --drop is a feature (names are recorded). "
                    "LIBSVM: the label is the target, features f0..f(n-1). Two classes "
                    "give one tree per iteration, more give one per class.")
    p.add_argument("data", metavar="DATA", help="training data file")
    p.add_argument("--target", "-t", metavar="COL",
                   help="label column (required for CSV/Parquet; LIBSVM uses its label)")
    p.add_argument("--output", "-o", required=True, metavar="MODEL",
                   help="model file to write (e.g. model.gbc)")
    p.add_argument("--eval", metavar="DATA2",
                   help="evaluation data: reported at the end and used by "
                        "--n-iter-no-change for early stopping")
    p.add_argument("--eval-format", choices=["csv", "tsv", "parquet", "libsvm"],
                   help="format of --eval (default: its extension, else --format)")
    p.add_argument("--metric", nargs="+", type=_metric_name, metavar="NAME",
                   help="metrics of the evaluation data (--eval, else the hold-out of "
                        "--n-iter-no-change) after each iteration: loss, log_loss, "
                        "roc_auc (or auc), accuracy, error; shown in the progress and "
                        "the summary, written by --evals-json; --n-iter-no-change stops "
                        "on the first (default: the loss)")
    p.add_argument("--evals-json", metavar="FILE",
                   help="write each --metric's value after each iteration, and the "
                        "iteration kept, as JSON")
    p.add_argument("--dask", metavar="SCHEDULER_ADDRESS",
                   help="train on a Dask cluster (e.g. tcp://host:8786) with "
                        "--split-method hist: the workers read DATA (CSV or Parquet, "
                        "a path they can all read) and keep their rows")
    p.add_argument("--categorical", type=_categorical_option, default="auto",
                   metavar="auto|none|COLS",
                   help="categorical features (splits send a set of categories left): "
                        "auto, the text columns (CSV: those of text in "
                        "the file's first block; Parquet: string and dictionary, e.g. "
                        "pandas category, columns); none, every feature a number (a "
                        "text column is an error); or the names of the categorical "
                        "columns, separated by commas (e.g. city,color). A CSV "
                        "categorical column is read as text: its categories are the "
                        "values as written; a category unseen in training and a "
                        "missing value go where each split sends missing values. At "
                        "most --max-bins categories per column (default: auto)")
    _data_options(p)
    _hyper_parameter_options(p)
    _common(p)
    p.set_defaults(func=_cmd_train)


def _add_predict(sub, params):
    p = _parser(
        sub, "predict", "score a file in chunks and write the scores",
        description="Score DATA in chunks of --chunk-rows rows and write one output row "
                    "per input row, in input order (Parquet or CSV by the -o extension). "
                    "The output appears only when the run succeeds.")
    p.add_argument("model", metavar="MODEL", help="model file (from train or save)")
    p.add_argument("data", metavar="DATA", help="data file to score")
    p.add_argument("--output", "-o", required=True, metavar="OUT",
                   help="output file: .parquet/.pq or .csv")
    p.add_argument("--output-format", choices=["parquet", "csv", "tsv"],
                   help="format of OUT (default: from its extension)")
    p.add_argument("--proba", action="store_true",
                   help="write the probabilities (the default): 'proba' (the positive "
                        "class) for two classes, 'proba_<label>' per class otherwise")
    p.add_argument("--label", action="store_true",
                   help="write 'label', the predicted class (with --proba: both)")
    p.add_argument("--contributions", action="store_true",
                   help="write each feature's contribution to the raw score (TreeSHAP): "
                        "'contrib_<feature>' per feature and 'contrib_expected_value' "
                        "(their sum is the raw score); 'contrib_<label>_<feature>' per "
                        "class for 3 or more classes (with --proba or --label: both)")
    p.add_argument("--keep", nargs="+", metavar="COL", default=[],
                   help="input columns copied to the output (e.g. an id)")
    _chunk_rows_option(p)
    _n_jobs_option(p, params, "; with --dask: per task, default: the host's CPUs "
                              "shared by its workers")
    p.add_argument("--dask", metavar="SCHEDULER_ADDRESS",
                   help="score the chunks on a Dask cluster (e.g. tcp://host:8786)")
    _data_options(p)
    _common(p)
    p.set_defaults(func=_cmd_predict)


def _add_evaluate(sub, params):
    p = _parser(
        sub, "evaluate", "log-loss, ROC AUC, accuracy and confusion matrix on labelled "
                         "data (AUC: macro one-vs-rest for 3 or more classes)",
        description="Log-loss, ROC AUC, accuracy and the confusion matrix (rows: true "
                    "class, columns: predicted class, in the model's class order) of "
                    "MODEL on the labelled DATA. For 3 or more classes the log-loss is "
                    "the multinomial one and the ROC AUC is the macro average of the "
                    "one-vs-rest AUCs of the classes that occur in DATA: a class of the "
                    "model absent from DATA has no AUC and is left out of the average "
                    "(--json lists each class's AUC, null for such a class). A label "
                    "that is not a class of the model is an error.")
    p.add_argument("model", metavar="MODEL", help="model file (from train or save)")
    p.add_argument("data", metavar="DATA", help="labelled data file")
    p.add_argument("--target", "-t", metavar="COL",
                   help="label column (required for CSV/Parquet; LIBSVM uses its label)")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")
    _chunk_rows_option(p)
    _n_jobs_option(p, params)
    _data_options(p)
    _common(p)
    p.set_defaults(func=_cmd_evaluate)


def _add_inspect(sub):
    p = _parser(
        sub, "inspect", "format version, classes, features, trees and importances of a "
                        "model")
    p.add_argument("model", metavar="MODEL", help="model file")
    p.add_argument("--tree", type=int, metavar="M",
                   help="draw the tree(s) of iteration M as text (0-based; negative "
                        "counts from the end; one tree per class for 3 or more classes)")
    p.add_argument("--class", dest="class_label", metavar="LABEL",
                   help="with --tree: only the tree of this class (models of 3 or more "
                        "classes)")
    p.add_argument("--top", type=_positive_int, default=10, help="importances to list")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    _common(p)
    p.set_defaults(func=_cmd_inspect)


def _add_export(sub):
    p = _parser(
        sub, "export", "write a model as an ONNX graph (needs the onnx package)",
        description="Write MODEL as an ONNX graph for onnxruntime and other ONNX "
                    "runtimes: input 'input' (float32 rows, NaN for a missing value), "
                    "outputs 'label' and 'probabilities' (one column per class). The "
                    "output appears only when the run succeeds.")
    p.add_argument("model", metavar="MODEL", help="model file (from train or save)")
    p.add_argument("--output", "-o", required=True, metavar="OUT",
                   help="ONNX file to write (e.g. model.onnx)")
    p.add_argument("--opset", type=_positive_int, default=None,
                   help="opset of the main ONNX domain (default: 17; the tree ensemble "
                        "is ai.onnx.ml opset 3)")
    _common(p)
    p.set_defaults(func=_cmd_export)


def build_parser():
    import argparse

    from ._params import BY_NAME

    parser = argparse.ArgumentParser(
        prog="gbc-core",
        description="Exact-split gradient boosting classifier (the paper's GBC).",
        formatter_class=_help_formatter(),
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("--debug", action="store_true",
                        help="show the Python traceback of an error")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND",
                                help="what to do (default: demo)")
    _add_demo(sub)
    _add_train(sub)
    _add_predict(sub, BY_NAME)
    _add_evaluate(sub, BY_NAME)
    _add_inspect(sub)
    _add_export(sub)
    return parser


def _error(message):
    print(f"gbc-core: error: {' '.join(str(message).split())}", file=sys.stderr)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


#: The exit status of an interrupted run (Ctrl-C or SIGTERM).
INTERRUPTED = 130


def main(argv=None):
    """Run the command line ``argv`` (default: ``sys.argv[1:]``) in this process and
    return its exit code (:func:`console_main` ends the process with it)."""
    debug = "--debug" in (sys.argv[1:] if argv is None else argv)
    try:
        return _run(argv)
    except KeyboardInterrupt:  # also while the parser or the modules are loading
        if debug:
            raise
        _error("interrupted")
        return INTERRUPTED


def console_main():
    """Entry point of the ``gbc-core`` console script and of ``python -m gbc_core``:
    :func:`main`, then the end of the process with its exit code.

    An interrupted run ends here with status 130 at once, after the ``atexit``
    functions and a flush of the standard streams, instead of through the
    interpreter's shutdown. CPython (3.11 at least) records a KeyboardInterrupt that
    leaves an ``eval`` or ``exec`` of a string (``collections.namedtuple`` and
    ``dataclasses`` run one at import, so any import the signal lands in) as
    unhandled even when it is caught; a process run as ``python -m`` then kills
    itself with SIGINT at the end of its shutdown instead of exiting with 130.
    """
    code = main()
    if code == INTERRUPTED:
        import atexit

        run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)  # CPython's and PyPy's
        if run_exitfuncs is not None:
            run_exitfuncs()
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError, AttributeError):  # closed, broken or None
                    pass
            os._exit(INTERRUPTED)
    sys.exit(code)


class _HeldSignals:
    """SIGINT and SIGTERM recorded while modules load, then raised as one interrupt.

    A KeyboardInterrupt raised inside an import can be lost: raised in a weakref
    callback of the import machinery, or in Python code that an extension module's
    initialisation calls and whose error it drops, it is printed or ignored and the run
    goes on to write its output. NumPy turns it into an ImportError with a traceback.
    Inside this block the signals are only recorded; on leaving it, one that arrived
    raises KeyboardInterrupt. A signal this process ignores stays ignored.
    """

    def __enter__(self):
        import signal

        self.received = []
        self.previous = {}
        for signum in (signal.SIGINT, signal.SIGTERM):
            handler = signal.getsignal(signum)
            if handler is None or handler == signal.SIG_IGN:
                continue  # ignored, or not set from Python (nothing to restore)
            try:
                signal.signal(signum, self._record)
            except ValueError:  # not the main thread: the handlers are not ours to set
                break
            self.previous[signum] = handler
        return self

    def _record(self, signum, frame):
        self.received.append(signum)

    def __exit__(self, exc_type, exc, traceback):
        import signal

        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        if self.received and exc_type is None:
            raise KeyboardInterrupt


def _modules_of(args):
    """The modules the command of ``args`` loads: its own, the CSV and Parquet support
    when it reads or writes such files, and distributed for ``--dask``."""
    from ._tabular import DataError, detect_format

    names = list(_COMMAND_MODULES[args.command])
    tables = args.command == "predict"  # scores are written as CSV or Parquet
    if args.command in ("train", "evaluate"):
        try:
            tables = detect_format(args.data, args.format) != "libsvm"
        except DataError:  # the command reports it
            pass
    if tables:
        names += _TABLE_MODULES
    if getattr(args, "dask", None):
        names += ["gbc_core.dask", "distributed"]
        if args.command == "train":
            names += ["dask.dataframe"]
    return names


def _load_modules(names):
    """Import the modules ``names`` ahead of their use by a command."""
    import importlib

    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - optional (pyarrow), or broken: the
            pass  # command's own import raises the error again, where it is reported


def _run(argv):
    with _HeldSignals():
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.version:
            from ._version import __version__

            print(__version__)
            return 0
        if args.command is None:
            args = parser.parse_args(["demo"])
        _load_modules(_modules_of(args))
    import signal

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
        raise
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
