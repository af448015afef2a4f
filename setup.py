"""Build the Cython extension modules of gbc-core.

Compiler directives are set once here. Environment switches:

``GBC_CORE_DEBUG=1``
    turn bounds checks, wrap-around and initialised checks back on (debug test run).
``GBC_CORE_OPENMP=0``
    build without OpenMP (sequential kernels).
``GBC_CORE_REQUIRE_OPENMP=1``
    fail the build if OpenMP is not available (used for release wheels so none
    ships single-threaded by accident).
``GBC_CORE_TRACE=1``
    time every parallel region of a fit task by task (``_trace.h``, read by
    ``gbc_core._openmp.trace_start``/``trace_stop``; benchmarks/scaling_model.py).
    A measuring build only: without it the trace's macros are empty.
"""

import os
import shlex
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

MODULES = [
    "_common", "_openmp", "_sorting", "_split_finder", "_exact_splitter",
    "_histogram_splitter", "_partition", "_out_of_bag", "_pruning", "_grower",
    "_best_first", "_leaves", "_predictor", "_binning_kernels", "_treeshap",
]
# Cython declarations shared by modules (rebuild every module when one changes).
PXDS = ["_common", "_split_finder", "_choice", "_categorical", "_rows", "_partition",
        "_out_of_bag", "_trace",
        "_pruning", "_grower"]
# Plain C headers of a module (vector kernels written in C).
HEADERS = {
    "_predictor": ["_simd.h"],
    "_leaves": ["_log1p.h", "_exp.h"],
    "_exact_splitter": ["_scan.h", "_criterion.h"],
    "_histogram_splitter": ["_criterion.h"],
    "_split_finder": ["_criterion.h"],
    "_grower": ["_criterion.h"],
    "_openmp": ["_trace.h"],
    "_best_first": ["_criterion.h"],
}


def _flag(name, default="0"):
    return os.environ.get(name, default).strip().lower() in ("1", "true", "yes", "on")


def openmp_candidates(compiler_type, platform):
    """The (compile_args, link_args) to try for OpenMP, in order, for a distutils
    compiler of ``compiler_type`` ("unix", "mingw32", "cygwin" or "msvc") on
    ``platform`` (``sys.platform``). Each is probed before it is used."""
    if compiler_type == "msvc":
        return [(["/openmp"], [])]
    if platform == "darwin":
        # Apple's clang takes OpenMP through the preprocessor and LLVM's libomp;
        # GCC (or an LLVM clang) takes -fopenmp.
        return [(["-Xpreprocessor", "-fopenmp"], ["-lomp"]), (["-fopenmp"], ["-fopenmp"])]
    return [(["-fopenmp"], ["-fopenmp"])]


def arithmetic_args(compiler_type, debug=False):
    """The compile arguments that fix the kernels' floating-point arithmetic for a
    compiler, whatever the platform: no fused multiply-add unless the source asks
    for one. GCC and clang (also MinGW's GCC on Windows, and clang on macOS, whose
    default contracts ``a * b + c`` where the CPU has FMA: every arm64 Mac) take
    ``-ffp-contract=off``; MSVC does not contract under ``/fp:precise`` (stated, not
    assumed; distutils' MSVC compiler always runs cl.exe). The kernels' arithmetic
    is then the same everywhere (docs/reliability.md, "Same model on every
    machine")."""
    if compiler_type == "msvc":
        return ["/fp:precise"]
    args = ["-O3", "-ffp-contract=off"]
    if debug:
        args += ["-O1", "-g"]
    return args


def _compiles_and_runs(compiler, source, compile_args, link_args):
    """Whether ``source`` (a C program) compiles, links and exits 0 with the given
    arguments under the build's own compiler object (its command, CFLAGS and
    LDFLAGS included)."""
    tmp = tempfile.mkdtemp()
    try:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as fh:
            fh.write(source)
        objects = compiler.compile([src], output_dir=tmp, extra_postargs=compile_args)
        # The executable's linker (distutils' linker_exe) takes no LDFLAGS, which
        # the extensions' linker takes: where the runtime lives (macOS: libomp's -L).
        ldflags = shlex.split(os.environ.get("LDFLAGS", ""))
        if compiler.compiler_type == "msvc":
            ldflags = []
        compiler.link_executable(objects, "probe", output_dir=tmp,
                                 extra_postargs=ldflags + link_args)
        exe = os.path.join(tmp, compiler.executable_filename("probe"))
        return subprocess.run([exe], capture_output=True).returncode == 0
    except Exception:  # CompileError or LinkError of the compiler's distutils, OSError
        return False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


_OPENMP_PROBE = (
    "#include <omp.h>\n#include <stdio.h>\n"
    "int main(void){int n=0;\n#pragma omp parallel reduction(+:n)\nn+=1;\n"
    "printf(\"%d\", omp_get_max_threads()); return n > 0 ? 0 : 1;}\n"
)


def openmp_args(compiler, platform, probe=_compiles_and_runs):
    """The first of ``openmp_candidates`` with which ``compiler`` builds and runs an
    OpenMP program (``probe``), or None: OpenMP is never assumed, MSVC's included."""
    for compile_args, link_args in openmp_candidates(compiler.compiler_type, platform):
        if probe(compiler, _OPENMP_PROBE, compile_args, link_args):
            return compile_args, link_args
    return None


class BuildExt(build_ext):
    """``build_ext`` that chooses the compile and link arguments for the compiler it
    builds with (not for the platform): OpenMP's, probed by compiling and running a
    program (MSVC's ``/openmp`` too), and the arithmetic's (``arithmetic_args``)."""

    def finalize_options(self):
        super().finalize_options()
        # The modules compile side by side on every core (pip and python -m build
        # pass no -j): the same objects, in a fraction of the time.
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def build_extensions(self):
        compiler_type = self.compiler.compiler_type
        openmp = None
        if os.environ.get("GBC_CORE_OPENMP", "1").strip() != "0":
            openmp = openmp_args(self.compiler, sys.platform)
        if openmp is None and _flag("GBC_CORE_REQUIRE_OPENMP"):
            raise RuntimeError(
                "GBC_CORE_REQUIRE_OPENMP=1 but the compiler cannot build and run an "
                "OpenMP program; install an OpenMP runtime (libgomp / libomp) or unset "
                "the variable."
            )
        compile_args, link_args = openmp if openmp is not None else ([], [])
        print("gbc-core: OpenMP "
              + (f"on ({' '.join(compile_args + link_args)})" if openmp
                 else "off: sequential kernels"),
              file=sys.stderr)
        compile_args = compile_args + arithmetic_args(compiler_type, _flag("GBC_CORE_DEBUG"))
        for ext in self.extensions:
            ext.extra_compile_args = list(ext.extra_compile_args or []) + compile_args
            ext.extra_link_args = list(ext.extra_link_args or []) + link_args
        super().build_extensions()


def build_extensions():
    import numpy as np
    from Cython.Build import cythonize

    debug = _flag("GBC_CORE_DEBUG")
    macros = [
        ("NPY_NO_DEPRECATED_API", "NPY_1_9_API_VERSION"),
        # Oldest numpy C-API the wheels target; matches `dependencies` in pyproject.
        ("NPY_TARGET_VERSION", "NPY_1_23_API_VERSION"),
    ]
    if _flag("GBC_CORE_TRACE"):
        macros.append(("GBC_CORE_TRACE", "1"))
    extensions = [
        Extension(
            f"gbc_core.{name}",
            [f"src/gbc_core/{name}.pyx"],
            include_dirs=[np.get_include(), "src/gbc_core"],
            # C headers included by the module (rebuild when they change).
            depends=[f"src/gbc_core/{h}" for h in HEADERS.get(name, [])]
            + [f"src/gbc_core/{p}.pxd" for p in PXDS] + ["src/gbc_core/_trace.h"],
            define_macros=macros,
        )
        for name in MODULES
    ]
    directives = {
        "language_level": 3,
        "boundscheck": debug,
        "wraparound": debug,
        "initializedcheck": debug,
        "cdivision": True,
        "nonecheck": False,
        "embedsignature": True,
    }
    return cythonize(
        extensions,
        compiler_directives=directives,
        annotate=_flag("GBC_CORE_ANNOTATE"),
        # The modules are translated side by side on Linux (a process per core, as
        # the compile below): the same C in half the time on two cores. Elsewhere one
        # by one: worker processes there are spawned, re-importing the build's main.
        nthreads=(os.cpu_count() or 1) if sys.platform.startswith("linux") else 0,
    )


if __name__ == "__main__":
    setup(ext_modules=build_extensions(), cmdclass={"build_ext": BuildExt})
