#!/usr/bin/env bash
# The package built a second time, with clang and LLVM's OpenMP runtime (libomp, the
# runtime macOS wheels ship), and the tests of thread counts and reproducibility run
# against that build. GCC's runtime (libgomp) hands out the chunks of a dynamic
# schedule in order; libomp lets an idle thread steal from another's share, so a
# result that depends on the order in which a thread sees its work passes with GCC
# and fails here (tests/test_split_finder.py, the lowest of equal features). The
# tests run thread counts above the machine's cores (8 and 16 threads on 2 cores).
#
# Usage: bash .ci/clang_build.sh [extra pytest args]   (from anywhere)
# Needs clang and libomp-dev (Debian's packages): installed here with apt-get when
# missing and this runs as root (as CI does); otherwise the script says what to
# install and fails. Uses the active Python and its installed test dependencies
# (.ci/run's virtual environment); the wheel is built in an isolated build
# environment, installed with --target into a work directory and put first on
# PYTHONPATH, and the script checks that the tests import it and that it is linked
# against libomp. Set GBC_CORE_KEEP_CLANG_BUILD=1 to keep the work directory.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-python}"
. "$ROOT/.ci/snapshot.sh"
make_work_dir clang GBC_CORE_KEEP_CLANG_BUILD
START=$SECONDS

have_toolchain() {
    command -v clang >/dev/null 2>&1 || return 1
    printf '#include <omp.h>\nint main(void){return omp_get_max_threads() > 0 ? 0 : 1;}\n' \
        >"$WORK/probe.c"
    clang -fopenmp "$WORK/probe.c" -o "$WORK/probe" >/dev/null 2>&1 && "$WORK/probe"
}
if ! have_toolchain; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo ">>> clang build: installing clang and libomp-dev (apt-get)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >"$WORK/apt.log" 2>&1 \
            && apt-get install -y -qq clang libomp-dev >>"$WORK/apt.log" 2>&1 \
            || { tail -n 30 "$WORK/apt.log"; echo "clang build: apt-get failed"; exit 1; }
    fi
    have_toolchain || {
        echo "clang build: needs clang with LLVM's OpenMP (Debian: apt-get install clang libomp-dev)"
        exit 1
    }
fi
echo ">>> clang build: $(clang --version | head -n 1)"

copy_source_tree "$ROOT" "$WORK/src"
# -v: the build's commands are in the log, to check that clang compiled the kernels.
CC=clang LDSHARED="clang -shared" GBC_CORE_REQUIRE_OPENMP=1 \
    "$PY" -m pip wheel -v --disable-pip-version-check --progress-bar off \
    --no-deps --wheel-dir "$WORK/dist" "$WORK/src" >"$WORK/build.log" 2>&1 \
    || { tail -n 60 "$WORK/build.log"; echo "clang build: the build failed"; exit 1; }
grep -Eq '^[[:space:]]*clang .*-c .*_exact_splitter\.c' "$WORK/build.log" \
    || { echo "clang build: the log shows no clang compile of the kernels: CC was not used"
         exit 1; }
grep -q "gbc-core: OpenMP on (-fopenmp" "$WORK/build.log" \
    || { echo "clang build: the build did not find OpenMP"; exit 1; }
"$PY" -m pip install --disable-pip-version-check --no-deps --target "$WORK/site" \
    "$WORK"/dist/*.whl >"$WORK/install.log" 2>&1 || { tail -n 40 "$WORK/install.log"; exit 1; }
for so in "$WORK"/site/gbc_core/_exact_splitter*.so "$WORK"/site/gbc_core/_grower*.so; do
    if command -v ldd >/dev/null 2>&1 && ! ldd "$so" | grep -q "libomp"; then
        echo "clang build: $(basename "$so") is not linked against LLVM's libomp:"
        ldd "$so"
        exit 1
    fi
done
export PYTHONPATH="$WORK/site${PYTHONPATH:+:$PYTHONPATH}"

mkdir -p "$WORK/run"
cp -R "$WORK/src/tests" "$WORK/run/tests"
cp "$WORK/src/pyproject.toml" "$WORK/run/"
cd "$WORK/run"
"$PY" -c "
import os, sys, gbc_core
site = os.path.realpath(sys.argv[1])
where = os.path.realpath(gbc_core.__file__)
assert where.startswith(site + os.sep), f'imported {where}, not the clang build in {site}'
" "$WORK/site"
echo ">>> clang build: pytest (thread counts and reproducibility, LLVM's OpenMP)"
# The split finders against their brute force (the thread tests among them), the
# exact finder's blocks and pair tasks against its whole-feature scan, the tie rule
# and hist = exact (tests/test_tie_rule.py), the reproducibility rules, then every
# test of thread counts elsewhere.
"$PY" -m pytest -q -p no:cacheprovider \
    tests/test_split_finder.py tests/test_exact_blocks.py tests/test_tie_rule.py \
    tests/test_reproducibility.py "$@"
"$PY" -m pytest -q -p no:cacheprovider tests/test_kernels.py tests/test_histogram.py \
    tests/test_best_first.py tests/test_multiclass.py tests/test_weights_and_rules.py \
    -k "thread or n_jobs or parallel" "$@"
# Constraints: the finders' ordered choice against its brute force, hist = exact, and
# the same constrained model on every thread count.
"$PY" -m pytest -q -p no:cacheprovider tests/test_constraints.py \
    -k "finders_choose or hist_is_exact or thread" "$@"
# Categorical splits: both finders against the brute force over every partition, the
# grown trees, the prediction kernel on two threads; the estimator's categorical fit
# and TreeSHAP of such models on every thread count.
"$PY" -m pytest -q -p no:cacheprovider tests/test_categorical.py "$@"
"$PY" -m pytest -q -p no:cacheprovider tests/test_categorical_estimator.py \
    tests/test_treeshap_categorical.py -k "thread" "$@"
echo "clang build: passed ($((SECONDS - START)) s)"
