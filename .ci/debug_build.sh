#!/usr/bin/env bash
# Debug build: the extension modules compiled with Cython's bounds checks,
# wrap-around and initialised-memoryview checks on (GBC_CORE_DEBUG=1, see setup.py),
# installed as a wheel into a temporary directory, and the kernel-heavy part of the
# test suite run against that installed copy from outside the source tree. An
# out-of-bounds index in a kernel then raises IndexError (or, inside a `noexcept`
# nogil function, reports it through sys.unraisablehook, which pytest turns into an
# error with -W error::pytest.PytestUnraisableExceptionWarning) instead of silently
# reading or corrupting memory. The same build has the trace of the parallel
# regions compiled in (GBC_CORE_TRACE=1, src/gbc_core/_trace.h: the measuring build
# of benchmarks/scaling_model.py), so that tests/test_trace.py's traced-build tests
# run here, with bounds checks, and the normal build's in the README's test command.
#
# It is also the build with clang and LLVM's OpenMP runtime (libomp, the runtime
# macOS wheels ship; the README's test command runs GCC's build, libgomp): GCC's
# runtime hands out the chunks of a dynamic schedule in order; libomp lets an idle
# thread steal from another's share, so a result that depends on the order in which
# a thread sees its work passes with GCC and fails here (tests/test_split_finder.py,
# the lowest of equal features). The suite below holds every test of thread counts
# and reproducibility (several run thread counts above the machine's cores: 8 and
# 16 threads on 2 cores), so one build checks both: bounds and the runtime's
# schedule. A new kernel's test file runs here unless it is listed below as left out.
#
# Usage: bash .ci/debug_build.sh [extra pytest args]   (from anywhere)
# Needs clang and libomp-dev (Debian's packages): installed here with apt-get when
# missing and this runs as root (as CI does); otherwise the script says what to
# install and fails. Uses the active Python (${PYTHON:-python}) and its installed
# test dependencies (.ci/run's virtual environment: the `test` extra); the wheel is
# built in an isolated build environment, installed with --target into the work
# directory and put first on PYTHONPATH, and the script checks that the tests import
# it and that it is linked against libomp.
#
# What runs: tests/ minus test_cli.py, test_dask.py, test_tabular.py and
# test_input_rules.py (file formats, subprocesses and a Dask cluster: Python code,
# and minutes of run time) and test_build_config.py (it reads setup.py, which a
# wheel has not), the suites of Python-level code that the README's test command runs
# (scikit-learn's estimator checks, plots, ONNX and scikit-learn export, metrics and
# scorers, the command line's subprocesses, input conversion, labels, validation,
# fitted attributes, safe outputs, packaging, scikit-learn parity and agreement,
# production threads, custom losses, Dask and local processes),
# minus the scikit-learn agreement tests on the bundled HIGGS sample (a minute of
# debug kernels; the same comparisons run on generated data) and minus the tests
# marked `slow` (timing-sensitive or long loops: a debug kernel is several times
# slower). Set GBC_CORE_KEEP_DEBUG_BUILD=1 to keep the work directory.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-python}"
. "$ROOT/.ci/snapshot.sh"
make_work_dir debug GBC_CORE_KEEP_DEBUG_BUILD
START=$SECONDS

have_toolchain() {
    command -v clang >/dev/null 2>&1 || return 1
    printf '#include <omp.h>\nint main(void){return omp_get_max_threads() > 0 ? 0 : 1;}\n' \
        >"$WORK/probe.c"
    clang -fopenmp "$WORK/probe.c" -o "$WORK/probe" >/dev/null 2>&1 && "$WORK/probe"
}
if ! have_toolchain; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo ">>> debug build: installing clang and libomp-dev (apt-get)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >"$WORK/apt.log" 2>&1 \
            && apt-get install -y -qq clang libomp-dev >>"$WORK/apt.log" 2>&1 \
            || { tail -n 30 "$WORK/apt.log"; echo "debug build: apt-get failed"; exit 1; }
    fi
    have_toolchain || {
        echo "debug build: needs clang with LLVM's OpenMP (Debian: apt-get install clang libomp-dev)"
        exit 1
    }
fi
echo ">>> debug build: $(clang --version | head -n 1)"

# A snapshot of the source tree: no stale generated C or shared objects from an
# in-place build.
copy_source_tree "$ROOT" "$WORK/src"

echo ">>> debug build: GBC_CORE_DEBUG=1 GBC_CORE_TRACE=1 CC=clang pip wheel"
# pip builds a local directory in place, so the generated C stays in $WORK/src.
# -v: the build's commands are in the log, to check that clang compiled the kernels.
CC=clang LDSHARED="clang -shared" GBC_CORE_REQUIRE_OPENMP=1 GBC_CORE_DEBUG=1 GBC_CORE_TRACE=1 \
    "$PY" -m pip wheel -v --disable-pip-version-check --progress-bar off \
    --no-deps --wheel-dir "$WORK/dist" "$WORK/src" >"$WORK/build.log" 2>&1 \
    || { tail -n 60 "$WORK/build.log"; echo "debug build: the build failed"; exit 1; }
grep -Eq '^[[:space:]]*clang .*-c .*_exact_splitter\.c' "$WORK/build.log" \
    || { echo "debug build: the log shows no clang compile of the kernels: CC was not used"
         exit 1; }
grep -q "gbc-core: OpenMP on (-fopenmp" "$WORK/build.log" \
    || { echo "debug build: the build did not find OpenMP"; exit 1; }
WHEEL="$(ls "$WORK"/dist/*.whl)"

# 1. The generated C has Cython's bounds checks: each kernel module that indexes
#    memoryviews calls __Pyx_RaiseBufferIndexError (a release build has none).
for mod in _exact_splitter _histogram_splitter _grower _leaves _predictor; do
    c="$WORK/src/src/gbc_core/$mod.c"
    [ -f "$c" ] || { echo "debug build: $mod.c was not generated in place"; exit 1; }
    n="$(grep -c '__Pyx_RaiseBufferIndexError' "$c" || true)"
    if [ "$n" -eq 0 ]; then
        echo "debug build: $mod.c has no bounds checks: GBC_CORE_DEBUG=1 had no effect"
        exit 1
    fi
    echo "    $mod.c: $n bounds-check sites"
done

"$PY" -m pip install --disable-pip-version-check --no-deps --target "$WORK/site" "$WHEEL" \
    >"$WORK/install.log" 2>&1 || { tail -n 40 "$WORK/install.log"; exit 1; }
# ldd's whole output is read before it is searched: `ldd | grep -q` under pipefail
# fails when grep exits at the first match and ldd, still writing, gets SIGPIPE.
for so in "$WORK"/site/gbc_core/_exact_splitter*.so "$WORK"/site/gbc_core/_grower*.so; do
    command -v ldd >/dev/null 2>&1 || break
    linked="$(ldd "$so" 2>&1)" || { echo "debug build: ldd failed on $so:"; echo "$linked"; exit 1; }
    if ! grep -q "libomp" <<<"$linked"; then
        echo "debug build: $(basename "$so") is not linked against LLVM's libomp:"
        echo "$linked"
        exit 1
    fi
done
export PYTHONPATH="$WORK/site${PYTHONPATH:+:$PYTHONPATH}"

# 2. The installed debug copy is the one imported, and its checks fire: trees whose
#    split feature index is past the end of X (which an Ensemble would refuse) make
#    the predictor index X out of bounds.
mkdir -p "$WORK/run"
cd "$WORK/run"
"$PY" - "$WORK/site" <<'EOF'
import os, sys
import numpy as np
import gbc_core
site = os.path.realpath(sys.argv[1])
where = os.path.realpath(gbc_core.__file__)
assert where.startswith(site + os.sep), f"imported {where}, not the debug build in {site}"
from gbc_core import _openmp
assert _openmp.trace_compiled(), "GBC_CORE_TRACE=1 had no effect: test_trace.py would skip"
X = np.linspace(-1, 1, 40)[:, None]
y = (X[:, 0] > 0).astype(int)
model = gbc_core.GradientBoostingClassifier(n_estimators=2, max_depth=1).fit(X, y)
from gbc_core._predictor import Predictor  # the kernel, without the Ensemble's checks
nodes = np.array(model.booster_.ensemble.nodes)
nodes["feature"][nodes["feature"] >= 0] = 7   # X has 1 column
predictor = Predictor(nodes, model.booster_.ensemble.tree_offsets, 0.1, 1, 1)
reported = []
sys.unraisablehook = lambda u: reported.append(u.exc_value)
X32 = np.ascontiguousarray(X, dtype=np.float32)
X32[0, 0] = np.nan  # rows with a missing value take the memoryview-indexed paths
try:
    predictor.predict_raw(X32, np.zeros((40, 1)), 0, -1, 1)
except IndexError as exc:
    reported.append(exc)
assert any(isinstance(e, IndexError) and "Out of bounds" in str(e) for e in reported), (
    f"no bounds-check error for an out-of-range feature index: {reported!r}")
print(f"    {where.replace(site, '<debug site>')}: out-of-range index -> "
      f"{type(reported[0]).__name__}: {reported[0]}")
EOF

# 3. The tests, from a copy outside the source tree, against the installed copy.
cp -R "$WORK/src/tests" "$WORK/run/tests"
cp "$WORK/src/pyproject.toml" "$WORK/run/"   # the pytest configuration (markers)
echo ">>> debug build: pytest (bounds checks on, clang and LLVM's OpenMP)"
"$PY" -m pytest -q -p no:cacheprovider -m "not slow" -k "not higgs" \
    -W error::pytest.PytestUnraisableExceptionWarning \
    --ignore=tests/test_cli.py --ignore=tests/test_dask.py --ignore=tests/test_tabular.py \
    --ignore=tests/test_input_rules.py --ignore=tests/test_build_config.py \
    --ignore=tests/test_estimator_checks.py --ignore=tests/test_plotting.py \
    --ignore=tests/test_onnx.py --ignore=tests/test_onnx_categorical.py \
    --ignore=tests/test_sklearn_io.py --ignore=tests/test_scoring.py \
    --ignore=tests/test_multiclass_cli.py --ignore=tests/test_contributions_cli.py \
    --ignore=tests/test_batch_surface.py --ignore=tests/test_input_types.py \
    --ignore=tests/test_dask_training.py --ignore=tests/test_local_processes.py \
    --ignore=tests/test_fitted_state.py --ignore=tests/test_validation.py \
    --ignore=tests/test_labels.py --ignore=tests/test_safe_output.py \
    --ignore=tests/test_packaging.py --ignore=tests/test_sklearn_parity.py \
    --ignore=tests/test_sklearn_differences.py --ignore=tests/test_production.py \
    --ignore=tests/test_sklearn_agreement.py --ignore=tests/test_custom_loss.py "$@" tests
echo "debug build: passed ($((SECONDS - START)) s)"
