"""The installed package: build configuration, typing files and stubs that tell the truth.

``GBC_CORE_EXPECT_OPENMP`` (set by the wheel builds and .ci/build_checks.sh) makes the
OpenMP state a hard expectation: "1" for release wheels, "0" for the sequential build.
"""

import ast
import inspect
import io
import os
from importlib import import_module, resources

import pytest

import gbc_core

STUBBED_MODULES = ["__init__", "_booster", "_boosting", "_classifier", "_config", "_ensemble",
                   "_link", "_loss", "_math", "_model_io", "_record", "_sklearn_io", "onnx", "dask",
                   "metrics", "paper", "plotting", "datasets/__init__"]
#: The public modules besides ``gbc_core`` itself: each has a stub declaring every
#: public function and class (``test_every_public_module_is_stubbed``).
PUBLIC_MODULES = ["dask", "metrics", "paper", "plotting", "onnx", "datasets"]


def _stub_tree(module):
    text = resources.files("gbc_core").joinpath(f"{module}.pyi").read_text(encoding="utf-8")
    return ast.parse(text)


def test_show_config_reports_version_openmp_and_threads():
    out = io.StringIO()
    info = gbc_core.show_config(file=out)
    assert info["version"] == gbc_core.__version__
    assert isinstance(info["openmp"], bool)
    assert isinstance(info["threads"], int) and info["threads"] >= 1
    assert info["predict_kernel"] in ("avx2", "portable")
    text = out.getvalue()
    assert f"predict_kernel: {info['predict_kernel']}" in text
    assert f"version: {gbc_core.__version__}" in text
    assert f"openmp: {info['openmp']}" in text
    if not info["openmp"]:
        assert info["threads"] == 1


@pytest.mark.skipif(os.environ.get("GBC_CORE_EXPECT_OPENMP") not in ("0", "1"),
                    reason="GBC_CORE_EXPECT_OPENMP not set")
def test_openmp_as_expected_by_the_build():
    expect = os.environ["GBC_CORE_EXPECT_OPENMP"] == "1"
    assert gbc_core.show_config(file=io.StringIO())["openmp"] is expect


def test_version_is_single_sourced():
    from gbc_core._version import __version__

    assert gbc_core.__version__ == __version__
    try:
        from importlib.metadata import PackageNotFoundError, version
        installed = version("gbc-core")
    except PackageNotFoundError:  # running from a source tree
        pytest.skip("gbc-core is not installed")
    assert installed == __version__


def test_typing_files_are_installed():
    files = resources.files("gbc_core")
    assert files.joinpath("py.typed").is_file()
    for module in STUBBED_MODULES:
        assert files.joinpath(f"{module}.pyi").is_file(), module


@pytest.mark.parametrize("module", STUBBED_MODULES)
def test_stubs_only_declare_names_that_exist(module):
    runtime = import_module("gbc_core." + module.removesuffix("/__init__").replace("/", "."))
    for node in _stub_tree(module).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
            assert hasattr(runtime, node.name), f"{module}.pyi declares missing {node.name}"
        if isinstance(node, ast.ClassDef) and hasattr(runtime, node.name):
            cls = getattr(runtime, node.name)
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and not item.name.startswith("__"):
                    assert hasattr(cls, item.name), f"{node.name}.{item.name} is stubbed but missing"


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_every_public_module_is_stubbed(module):
    """Every public function and class of a public module is declared in its stub
    (``__all__`` where the module has one, else every name without an underscore
    that the module defines)."""
    runtime = import_module(f"gbc_core.{module}")
    stub = "datasets/__init__" if module == "datasets" else module
    declared = {n.name for n in _stub_tree(stub).body
                if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    names = getattr(runtime, "__all__", None) or [
        n for n, v in vars(runtime).items() if not n.startswith("_")
        and (inspect.isfunction(v) or inspect.isclass(v))
        and v.__module__ == runtime.__name__]
    public = [n for n in names if inspect.isfunction(getattr(runtime, n))
              or inspect.isclass(getattr(runtime, n))]
    assert public, module
    missing = sorted(set(public) - declared)
    assert not missing, f"gbc_core/{stub}.pyi lacks {missing}"


@pytest.mark.parametrize("module", ["metrics", "plotting", "datasets"])
def test_star_import_gives_the_stubbed_names_only(module):
    """A public module with ``__all__`` exports its public functions and classes, those
    its stub declares, and nothing it imports for its own use (a helper of a private
    module, NumPy)."""
    runtime = import_module(f"gbc_core.{module}")
    stub = "datasets/__init__" if module == "datasets" else module
    declared = {n.name for n in _stub_tree(stub).body
                if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    namespace = {}
    exec(f"from gbc_core.{module} import *", namespace)
    del namespace["__builtins__"]
    assert hasattr(runtime, "__all__"), f"gbc_core.{module} has no __all__"
    assert set(namespace) == declared, f"gbc_core.{module}.__all__ is not {sorted(declared)}"


def test_public_names_resolve_through_stubs():
    """Every name in ``gbc_core.__all__`` imported from a stubbed module is declared there."""
    for name in gbc_core.__all__:
        obj = getattr(gbc_core, name)
        module = getattr(obj, "__module__", "")
        short = module.rsplit(".", 1)[-1]
        if module.startswith("gbc_core.") and short in STUBBED_MODULES:
            declared = {n.name for n in _stub_tree(short).body
                        if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            if "__getattr__" in declared:  # a partial stub: other names are Any
                continue
            assert obj.__name__ in declared, f"{name} ({module}) is not in {short}.pyi"


def test_constructor_stub_matches_the_runtime_signature():
    """Keep ``_classifier.pyi`` in step: a new or renamed hyper-parameter must be stubbed."""
    cls_node = next(n for n in _stub_tree("_classifier").body
                    if isinstance(n, ast.ClassDef) and n.name == "GradientBoostingClassifier")
    init = next(n for n in cls_node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    args = init.args.args[1:]
    stub = {a.arg: ast.literal_eval(d) for a, d in zip(args, init.args.defaults)}
    runtime = {
        name: p.default
        for name, p in inspect.signature(gbc_core.GradientBoostingClassifier.__init__).parameters.items()
        if name != "self"
    }
    assert list(stub) == list(runtime), "update src/gbc_core/_classifier.pyi"
    assert stub == runtime, "update the defaults in src/gbc_core/_classifier.pyi"
