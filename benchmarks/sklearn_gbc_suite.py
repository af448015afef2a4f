"""Run scikit-learn's own GradientBoostingClassifier tests against gbc-core.

Not a CI test: the tests are those of the installed scikit-learn, so the result
depends on its version. The script copies scikit-learn's
``sklearn/ensemble/tests/test_gradient_boosting.py`` into a temporary directory,
adds ``from gbc_core import GradientBoostingClassifier`` right after the module's
``from sklearn.ensemble import ...`` line (so every use of the name, including the
module-level lists of estimators, is gbc-core's; ``GradientBoostingRegressor`` stays
scikit-learn's), runs the applicable tests with pytest and prints one row per test
case: test, outcome and, for a failure, the first line of the error, then the counts.

Which tests apply
-----------------
A collected test case applies when it fits gbc-core's classifier with what gbc-core
offers. It is excluded, with the first reason that matches, when

1. one of its parameters is ``GradientBoostingRegressor`` (the regressor's case of
   a test run for both estimators);
2. its body does not name ``GradientBoostingClassifier`` and no parameter is the
   classifier (regressor-only tests and tests of scikit-learn's helpers);
3. its body (docstring and comments left out) uses something gbc-core does not
   offer. Every parameter of scikit-learn's classifier is offered
   (``max_leaf_nodes``, ``criterion``, ``min_impurity_decrease``, ``ccp_alpha``, the
   exponential loss, init estimators) and so are sparse containers and the trees'
   ``tree_`` arrays: what is left is scikit-learn's internals: a private attribute
   (``._loss``, ``._raw_predict``), ``init_`` or a function imported from a private
   module of ``sklearn.ensemble`` or ``sklearn.tree`` at the module's top
   (``predict_stages``, ``_safe_divide``).

A test that also uses scikit-learn's ``GradientBoostingRegressor`` next to the
classifier (e.g. ``test_max_features``) applies: the regressor's lines run with
scikit-learn's estimator and the classifier's with gbc-core's.

``global_random_seed`` is 42, scikit-learn's default, or the integer in the
environment variable ``SKLEARN_TESTS_GLOBAL_RANDOM_SEED``.

Usage::

    python benchmarks/sklearn_gbc_suite.py

The exit status is 0 when the suite ran (whatever its outcomes), 2 when scikit-learn's
test file could not be found, adapted or collected.
"""

import ast
import importlib.util
import os
import re
import sys
import tempfile
import textwrap

import pytest
import sklearn
from sklearn.ensemble import GradientBoostingRegressor

import gbc_core

TEST_MODULE = "sklearn.ensemble.tests.test_gradient_boosting"
INJECTED_IMPORT = "from gbc_core import GradientBoostingClassifier"

# Uses in a test's body of scikit-learn's internals, which gbc-core does not offer:
# (pattern, reason).
NOT_OFFERED = [
    (r"\.init_\b", "scikit-learn's init_ estimator"),
    (r"\._[A-Za-z]\w*", "a private attribute of scikit-learn's estimator"),
]

CONFTEST = '''\
import os

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "thread_unsafe: scikit-learn's marker")


@pytest.fixture
def global_random_seed():
    return int(os.environ.get("SKLEARN_TESTS_GLOBAL_RANDOM_SEED", "42"))
'''


def adapt_test_module(source):
    """The source of scikit-learn's test module with gbc-core's classifier.

    Parameters
    ----------
    source : str
        Text of ``test_gradient_boosting.py``.

    Returns
    -------
    adapted : str
        ``source`` with ``INJECTED_IMPORT`` after the statement that imports
        ``GradientBoostingClassifier`` from ``sklearn.ensemble``.
    private_names : set of str
        Names the module imports from private modules of ``sklearn.ensemble`` and
        ``sklearn.tree``.
    bodies : dict of str to str
        The body of each test function (no docstring, no comments), by name.

    Raises
    ------
    RuntimeError
        When the module does not import ``GradientBoostingClassifier`` from
        ``sklearn.ensemble``.
    """
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    import_end = None
    private_names = set()
    bodies = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            names = {alias.asname or alias.name for alias in node.names}
            if node.module == "sklearn.ensemble" and "GradientBoostingClassifier" in names:
                import_end = node.end_lineno
            if re.match(r"sklearn\.(ensemble|tree)\._", node.module):
                private_names |= names
        elif isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            body = node.body
            if (body and isinstance(body[0], ast.Expr)
                    and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                body = body[1:]
            bodies[node.name] = "\n".join(ast.unparse(stmt) for stmt in body)
    if import_end is None:
        raise RuntimeError(f"{TEST_MODULE} does not import GradientBoostingClassifier "
                           "from sklearn.ensemble: the script needs updating")
    adapted = "".join(lines[:import_end] + [INJECTED_IMPORT + "\n"] + lines[import_end:])
    return adapted, private_names, bodies


def exclusion_reason(params, body, private_names):
    """Why a collected test case does not apply to gbc-core (None: it applies).

    Parameters
    ----------
    params : dict
        The case's parameters (``item.callspec.params``; empty if not parametrized).
    body : str
        The test function's body.
    private_names : set of str
        Names imported from scikit-learn's private modules.

    Returns
    -------
    str or None
    """
    for value in params.values():
        if value is GradientBoostingRegressor:
            return "the GradientBoostingRegressor case"
    uses_classifier = "GradientBoostingClassifier" in body or any(
        value is gbc_core.GradientBoostingClassifier for value in params.values())
    if not uses_classifier:
        return "does not use GradientBoostingClassifier"
    for pattern, reason in NOT_OFFERED:
        if re.search(pattern, body):
            return reason
    for name in sorted(private_names):
        if re.search(rf"\b{re.escape(name)}\b", body):
            return f"scikit-learn's internal {name}"
    return None


def first_line(report):
    """The first line of a failed or skipped report's message (the exception's name
    joined to the next line when it stands alone, as in ``AssertionError:``)."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # a skip: (path, line, reason)
        message = longrepr[2]
    elif getattr(longrepr, "reprcrash", None) is not None:
        message = longrepr.reprcrash.message
    else:
        message = str(longrepr)
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if len(lines) > 1 and re.fullmatch(r"\w+:", lines[0]):
        return f"{lines[0]} {lines[1]}"
    return lines[0] if lines else ""


class SuitePlugin:
    """Selects the applicable test cases and records their outcomes."""

    def __init__(self, bodies, private_names):
        self.bodies = bodies
        self.private_names = private_names
        self.excluded = []  # (test name, reason)
        self.outcomes = {}  # test name -> (outcome, message), in run order

    def pytest_collection_modifyitems(self, config, items):
        kept, dropped = [], []
        for item in items:
            function_name = item.originalname or item.name
            params = getattr(getattr(item, "callspec", None), "params", {})
            reason = exclusion_reason(params, self.bodies.get(function_name, ""),
                                      self.private_names)
            if reason is None:
                kept.append(item)
            else:
                dropped.append(item)
                self.excluded.append((item.name, reason))
        items[:] = kept
        if dropped:
            config.hook.pytest_deselected(items=dropped)

    def pytest_runtest_logreport(self, report):
        name = report.nodeid.split("::")[-1]
        previous = self.outcomes.get(name)
        if previous is not None and previous[0] != "passed":
            return  # keep the first failure (or skip) of a test
        if report.failed:
            phase = "" if report.when == "call" else f" (in {report.when})"
            self.outcomes[name] = ("failed", first_line(report) + phase)
        elif report.skipped:
            self.outcomes[name] = ("skipped", first_line(report))
        elif report.when == "call":
            self.outcomes[name] = ("passed", "")


def print_table(rows, headers):
    """Print ``rows`` (tuples of str) as a Markdown table."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |")
    print("| " + " | ".join("-" * w for w in widths) + " |")
    for row in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |")


def main():
    spec = importlib.util.find_spec(TEST_MODULE)
    if spec is None or spec.origin is None:
        print(f"scikit-learn {sklearn.__version__} has no {TEST_MODULE} (installed "
              "without its tests?)", file=sys.stderr)
        return 2
    with open(spec.origin, encoding="utf-8") as f:
        source = f.read()
    try:
        adapted, private_names, bodies = adapt_test_module(source)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 2

    plugin = SuitePlugin(bodies, private_names)
    with tempfile.TemporaryDirectory(prefix="sklearn_gbc_suite_") as tmp:
        test_path = os.path.join(tmp, "test_gradient_boosting.py")
        with open(test_path, "w", encoding="utf-8") as f:
            f.write(adapted)
        with open(os.path.join(tmp, "conftest.py"), "w", encoding="utf-8") as f:
            f.write(CONFTEST)
        ini_path = os.path.join(tmp, "pytest.ini")
        with open(ini_path, "w", encoding="utf-8") as f:
            f.write("[pytest]\n")
        status = pytest.main([test_path, "-c", ini_path, "--rootdir", tmp, "-q",
                              "-p", "no:cacheprovider", "--no-header", "--tb=no", "-rN"],
                             plugins=[plugin])
    if status not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        print(f"pytest could not run the adapted tests ({status!r})", file=sys.stderr)
        return 2

    print()
    print(f"scikit-learn {sklearn.__version__}, gbc-core {gbc_core.__version__}, "
          f"Python {sys.version.split()[0]}")
    print()
    print("Excluded test cases:")
    print()
    print_table(sorted(plugin.excluded), ["test", "reason"])
    print()
    print("Applicable test cases:")
    print()
    print_table([(name, outcome, message)
                 for name, (outcome, message) in plugin.outcomes.items()],
                ["test", "outcome", "first line of the error"])
    counts = {k: sum(o == k for o, _ in plugin.outcomes.values())
              for k in ("passed", "failed", "skipped")}
    print()
    print(textwrap.dedent(f"""\
        collected: {len(plugin.excluded) + len(plugin.outcomes)}
        excluded: {len(plugin.excluded)}
        applicable: {len(plugin.outcomes)}
        passed: {counts['passed']}
        failed: {counts['failed']}
        skipped: {counts['skipped']}"""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
