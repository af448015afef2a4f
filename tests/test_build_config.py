"""The build's choice of compile arguments (setup.py), by compiler, not by platform.

These tests read the source tree's setup.py (the scripts that run the suite against
an installed wheel leave this file out: a wheel has no setup.py).
"""

import importlib.util
from pathlib import Path

import pytest

SETUP = Path(__file__).resolve().parents[1] / "setup.py"


@pytest.fixture(scope="module")
def setup_py():
    spec = importlib.util.spec_from_file_location("gbc_core_setup", SETUP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines the helpers; builds nothing
    return module


@pytest.mark.parametrize("compiler_type, name", [
    ("unix", "gcc"), ("unix", "clang"), ("unix", "cc"),
    ("mingw32", "gcc"),      # GCC on Windows: it contracts on an FMA target too
    ("cygwin", "gcc"),
])
def test_gcc_and_clang_never_contract_whatever_the_platform(setup_py, compiler_type, name):
    """GCC and clang get -ffp-contract=off on every platform (MinGW's GCC on Windows
    included); clang's own default contracts a * b + c on CPUs with FMA (arm64)."""
    args = setup_py.arithmetic_args(compiler_type, name)
    assert "-ffp-contract=off" in args
    assert args[-1] == "-ffp-contract=off" or "-ffp-contract=on" not in args


def test_msvc_states_precise_arithmetic_and_clang_cl_passes_clangs_flag(setup_py):
    assert setup_py.arithmetic_args("msvc", "cl.exe") == ["/fp:precise"]
    args = setup_py.arithmetic_args("msvc", r"C:\LLVM\bin\clang-cl.exe")
    assert args == ["/fp:precise", "/clang:-ffp-contract=off"]
    # MSVC never receives GCC's spelling (it would warn and ignore it).
    assert not any(a.startswith("-f") for a in setup_py.arithmetic_args("msvc", "cl.exe"))


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


def test_the_probe_runs_the_real_compiler(setup_py):
    """The probe compiles, links and runs with the build's own compiler object: an
    OpenMP program builds with this platform's candidate (CI's GCC has OpenMP), and
    a flag no compiler knows fails the probe instead of the build."""
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler

    compiler = new_compiler()
    customize_compiler(compiler)
    hello = "int main(void){return 0;}\n"
    assert setup_py._compiles_and_runs(compiler, hello, [], [])
    assert not setup_py._compiles_and_runs(compiler, hello, ["-fno-such-flag-gbc"], [])
    assert not setup_py._compiles_and_runs(compiler, "int main(void){return 1;}\n", [], [])
    import sys
    assert setup_py.openmp_args(compiler, sys.platform) is not None


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


def test_the_probe_links_with_ldflags(setup_py, monkeypatch):
    """The probe's executable is linked with LDFLAGS, as the extensions are (macOS
    wheels find libomp through LDFLAGS' -L): a library that exists only where
    LDFLAGS points must be found."""
    import os
    import tempfile

    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler

    compiler = new_compiler()
    customize_compiler(compiler)
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
