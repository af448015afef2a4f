"""Build the Cython extension modules of gbc-core.

Compiler directives are set once here. Environment switches:

``GBC_CORE_DEBUG=1``
    turn bounds checks, wrap-around and initialised checks back on (debug test run).
``GBC_CORE_OPENMP=0``
    build without OpenMP (sequential kernels).
``GBC_CORE_REQUIRE_OPENMP=1``
    fail the build if OpenMP is not available (used for release wheels so none
    ships single-threaded by accident).
"""

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

MODULES = [
    "_common", "_openmp", "_sorting", "_split_finder", "_exact_splitter",
    "_histogram_splitter", "_grower", "_leaves", "_predictor", "_binning_kernels",
]
# Cython declarations shared by modules (rebuild every module when one changes).
PXDS = ["_common", "_split_finder", "_choice"]
# Plain C headers of a module (vector kernels written in C).
HEADERS = {
    "_predictor": ["_simd.h"],
    "_exact_splitter": ["_scan.h", "_criterion.h"],
    "_histogram_splitter": ["_criterion.h"],
    "_split_finder": ["_criterion.h"],
    "_grower": ["_criterion.h"],
}


def _flag(name, default="0"):
    return os.environ.get(name, default).strip().lower() in ("1", "true", "yes", "on")


def _openmp_flags():
    """Return (compile_args, link_args) for OpenMP, probed by compiling a test program."""
    if os.environ.get("GBC_CORE_OPENMP", "1").strip() == "0":
        return None
    if sys.platform == "win32":
        candidates = [(["/openmp"], [])]
    elif sys.platform == "darwin":
        candidates = [(["-Xpreprocessor", "-fopenmp"], ["-lomp"]), (["-fopenmp"], ["-fopenmp"])]
    else:
        candidates = [(["-fopenmp"], ["-fopenmp"])]
    cc = sysconfig.get_config_var("CC") or "cc"
    cc = shlex.split(os.environ.get("CC", cc))
    extra_c = shlex.split(os.environ.get("CFLAGS", "")) + shlex.split(os.environ.get("CPPFLAGS", ""))
    extra_l = shlex.split(os.environ.get("LDFLAGS", ""))
    source = (
        "#include <omp.h>\n#include <stdio.h>\n"
        "int main(void){int n=0;\n#pragma omp parallel reduction(+:n)\nn+=1;\n"
        "printf(\"%d\", omp_get_max_threads()); return n > 0 ? 0 : 1;}\n"
    )
    if sys.platform == "win32":
        # MSVC always ships OpenMP 2.0 with /openmp.
        return candidates[0]
    for compile_args, link_args in candidates:
        tmp = tempfile.mkdtemp()
        try:
            src = os.path.join(tmp, "probe.c")
            with open(src, "w") as fh:
                fh.write(source)
            exe = os.path.join(tmp, "probe")
            cmd = cc + extra_c + compile_args + [src, "-o", exe] + extra_l + link_args
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode == 0 and subprocess.run([exe], capture_output=True).returncode == 0:
                return compile_args, link_args
        except OSError:
            pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return None


def build_extensions():
    debug = _flag("GBC_CORE_DEBUG")
    openmp = _openmp_flags()
    if openmp is None and _flag("GBC_CORE_REQUIRE_OPENMP"):
        raise RuntimeError(
            "GBC_CORE_REQUIRE_OPENMP=1 but the compiler cannot build and run an OpenMP "
            "program; install an OpenMP runtime (libgomp / libomp) or unset the variable."
        )
    compile_args, link_args = openmp if openmp is not None else ([], [])
    print("gbc-core: OpenMP "
          + (f"on ({' '.join(compile_args + link_args)})" if openmp else "off: sequential kernels"),
          file=sys.stderr)
    if sys.platform != "win32":
        compile_args = compile_args + ["-O3"]
        if debug:
            compile_args = compile_args + ["-O1", "-g"]
    macros = [
        ("NPY_NO_DEPRECATED_API", "NPY_1_9_API_VERSION"),
        # Oldest numpy C-API the wheels target; matches `dependencies` in pyproject.
        ("NPY_TARGET_VERSION", "NPY_1_23_API_VERSION"),
    ]
    extensions = [
        Extension(
            f"gbc_core.{name}",
            [f"src/gbc_core/{name}.pyx"],
            include_dirs=[np.get_include(), "src/gbc_core"],
            # C headers included by the module (rebuild when they change).
            depends=[f"src/gbc_core/{h}" for h in HEADERS.get(name, [])]
            + [f"src/gbc_core/{p}.pxd" for p in PXDS],
            define_macros=macros,
            extra_compile_args=compile_args,
            extra_link_args=link_args,
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
    )


setup(ext_modules=build_extensions())
