"""The build's choice of compile arguments (setup.py), by compiler, not by platform.

These tests read the source tree's setup.py and sources: the runs of the suite
against an installed wheel (.ci/build_checks.sh, .ci/debug_build.sh and
cibuildwheel's test command in pyproject.toml) leave this file out, since a wheel
has neither.
"""

import importlib.util
import os
import sys
from pathlib import Path

import pytest

SETUP = Path(__file__).resolve().parents[1] / "setup.py"


@pytest.fixture(scope="module")
def setup_py():
    spec = importlib.util.spec_from_file_location("gbc_core_setup", SETUP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines the helpers; builds nothing
    return module


@pytest.mark.parametrize("compiler_type", [
    "unix",       # GCC or clang (macOS's clang contracts by default on arm64)
    "mingw32",    # GCC on Windows: it contracts on an FMA target too
    "cygwin",
])
@pytest.mark.parametrize("debug", [False, True])
def test_gcc_and_clang_never_contract_whatever_the_platform(setup_py, compiler_type, debug):
    """GCC and clang get -ffp-contract=off on every platform (MinGW's GCC on Windows
    included), in release and debug builds."""
    assert "-ffp-contract=off" in setup_py.arithmetic_args(compiler_type, debug)


def test_msvc_states_precise_arithmetic(setup_py):
    """MSVC is told /fp:precise (it does not contract under it) and never receives
    GCC's spelling (it would warn and ignore it)."""
    for debug in (False, True):
        assert setup_py.arithmetic_args("msvc", debug) == ["/fp:precise"]


@pytest.mark.parametrize("platform", ["win32", "linux", "darwin"])
def test_openmp_is_probed_never_assumed(setup_py, platform):
    """Every candidate, MSVC's /openmp included, is used only if the probe builds
    and runs an OpenMP program with it; when none does, the build has no OpenMP."""
    class Compiler:
        compiler_type = "msvc" if platform == "win32" else "unix"

    tried = []

    def refusing_probe(compiler, source, compile_args, link_args):
        tried.append((compile_args, link_args))
        assert "#pragma omp parallel" in source
        return False

    assert setup_py.openmp_args(Compiler(), platform, refusing_probe) is None
    assert tried == setup_py.openmp_candidates(Compiler.compiler_type, platform)
    if platform == "win32":
        assert tried == [(["/openmp"], [])]

    def accepting_last(compiler, source, compile_args, link_args):
        return (compile_args, link_args) == tried[-1]

    assert setup_py.openmp_args(Compiler(), platform, accepting_last) == tried[-1]


def _real_compiler():
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler

    compiler = new_compiler()
    customize_compiler(compiler)
    return compiler


# The probe's behaviour on a compiler the build really uses: GCC's and clang's
# command line (MSVC warns about an unknown flag instead of failing, and takes no -l).
gcc_like = pytest.mark.skipif(os.name == "nt", reason="GCC/clang command lines")


@gcc_like
def test_the_probe_runs_the_real_compiler(setup_py):
    """The probe compiles, links and runs with the build's own compiler object: an
    OpenMP program builds with this platform's candidate (CI's GCC has OpenMP), and
    a flag no compiler knows fails the probe instead of the build."""
    compiler = _real_compiler()
    hello = "int main(void){return 0;}\n"
    assert setup_py._compiles_and_runs(compiler, hello, [], [])
    assert not setup_py._compiles_and_runs(compiler, hello, ["-fno-such-flag-gbc"], [])
    assert not setup_py._compiles_and_runs(compiler, "int main(void){return 1;}\n", [], [])
    # With OpenMP expected of this machine's build (CI: GCC with libgomp), the probe
    # finds it; a compiler without it (Apple's clang without libomp) builds
    # sequential kernels instead.
    found = setup_py.openmp_args(compiler, sys.platform)
    if os.environ.get("GBC_CORE_EXPECT_OPENMP") == "1":
        assert found is not None
    assert found is None or found in setup_py.openmp_candidates(compiler.compiler_type,
                                                                 sys.platform)


def test_x86_intrinsics_are_included_for_x86_targets_only():
    """An x86 header (xmmintrin.h, immintrin.h, ...) included for a compiler alone
    (``_MSC_VER``) breaks Windows on ARM64: every such include of the kernels'
    sources sits under a condition that names an x86 target."""
    import re

    sources = sorted((SETUP.parent / "src" / "gbc_core").glob("*.[ph]*"))
    assert any(p.suffix == ".pyx" for p in sources) and any(p.suffix == ".h" for p in sources)
    x86 = re.compile(r"_M_X64|_M_IX86|_M_AMD64|__x86_64__|__i386__|__SSE2?__|__AVX2?__")
    found = 0
    for path in sources:
        if path.suffix not in (".pyx", ".pxd", ".h"):
            continue
        conditions = []
        for number, line in enumerate(path.read_text().splitlines(), 1):
            text = line.strip()
            if re.match(r"#\s*if", text):
                conditions.append(text)
            elif re.match(r"#\s*elif", text) and conditions:
                conditions[-1] = text
            elif re.match(r"#\s*else", text) and conditions:
                conditions[-1] = "#else of " + conditions[-1]
            elif re.match(r"#\s*endif", text) and conditions:
                conditions.pop()
            elif re.match(r"#\s*include\s*<\w*intrin\.h>", text) and "intrin.h>" in text:
                if re.search(r"<(x|e|p|t|s|n|w|i|imm|emm|pmm|tmm|smm|nmm|wmm)?mmintrin\.h>"
                             r"|<immintrin\.h>", text):
                    found += 1
                    assert conditions and x86.search(conditions[-1]) \
                        and not conditions[-1].startswith("#else"), (
                        f"{path.name}:{number}: {text} under {conditions[-1:]}: "
                        "name an x86 target")
    assert found >= 2  # the exact finder's prefetch and the scans' vector code


@gcc_like
def test_the_probe_links_with_ldflags(setup_py, monkeypatch):
    """The probe's executable is linked with LDFLAGS, as the extensions are (macOS
    wheels find libomp through LDFLAGS' -L): a library that exists only where
    LDFLAGS points must be found."""
    import tempfile

    compiler = _real_compiler()
    with tempfile.TemporaryDirectory() as lib_dir:
        src = os.path.join(lib_dir, "gbcprobe.c")
        with open(src, "w") as fh:
            fh.write("int gbc_probe_answer(void){return 0;}\n")
        objects = compiler.compile([src], output_dir=lib_dir)
        compiler.create_static_lib(objects, "gbcprobe", output_dir=lib_dir)
        program = "int gbc_probe_answer(void);\nint main(void){return gbc_probe_answer();}\n"
        monkeypatch.delenv("LDFLAGS", raising=False)
        assert not setup_py._compiles_and_runs(compiler, program, [], ["-lgbcprobe"])
        monkeypatch.setenv("LDFLAGS", f"-L{lib_dir}")
        assert setup_py._compiles_and_runs(compiler, program, [], ["-lgbcprobe"])
