#!/usr/bin/env bash
# Issue 33's many-core figures in one bounded run, most wanted first.
#
#     bash benchmarks/many_cores.sh OUT_DIR [SECONDS] [THREADS]
#
# Run from the repository root on the many-core machine, with Python, a C
# compiler, Cython, numpy, scikit-learn and LightGBM importable.  It builds
# gbc-core in place (and a second, traced build in a copy, for
# benchmarks/scaling_model.py), then runs fit_scaling.py's comparisons on THREADS
# threads (default: every core) and records traces, each step given only the time
# left of SECONDS (default 480): a step that would start with under 20 s left is
# skipped, and one that runs out is stopped, so the run ends in time.  OUT_DIR
# receives log.txt (every step's output, with times), results.tar.gz (the --json
# of each step that finished: a stopped step's finished lines are in log.txt only)
# and traces.tar (the .npz traces).  It stops if a build fails.
#
# The workloads can be shrunk for a rehearsal: W1 (1m), W5 (5c-1m), W5S (5c-200k),
# W10 (10m), WX (200k, the one-thread exact trace) and WR (the steps' rounds, 2).
# TRACED_SRC names an existing traced build's src folder instead of building one.
set -u
out=${1:?usage: many_cores.sh OUT_DIR [SECONDS] [THREADS]}
budget=${2:-480}
python=${PYTHON:-python3}
threads=${3:-$("$python" -c "import os; print(len(os.sched_getaffinity(0)))")}
W1=${W1:-1m} W5=${W5:-5c-1m} W5S=${W5S:-5c-200k} W10=${W10:-10m} WX=${WX:-200k} WR=${WR:-2}
mkdir -p "$out/json" "$out/traces"
exec > >(tee -a "$out/log.txt") 2>&1
start=$SECONDS
export PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"

step() {  # step NAME COMMAND...: run COMMAND with the time left; its status
    local name=$1 left=$((budget - (SECONDS - start))) rc
    shift
    if [ "$left" -lt 20 ]; then
        echo "## $name: skipped, $left s left"
        return 1
    fi
    echo "## $name: start at $((SECONDS - start)) s ($(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg))"
    timeout "$left" "$@"
    rc=$?
    echo "## $name: rc $rc at $((SECONDS - start)) s"
    return $rc
}

fits() {  # fits NAME ARGS...: fit_scaling.py, its --json kept
    local name=$1
    shift
    step "$name" "$python" benchmarks/fit_scaling.py --json "$out/json/$name.json" "$@"
}

record() {  # record METHOD WORKLOAD THREADS
    step "trace $1 $2 t$3" "$python" benchmarks/scaling_model.py record --src "$traced" \
        --method "$1" --workload "$2" --n-jobs "$3" --out "$out/traces/$1-$2-t$3.npz"
}

echo "## machine: $(nproc) cores on this process, $threads threads; $(grep -m1 'model name' /proc/cpuinfo)"
lscpu | grep -E 'Model|Thread|Core|Socket|NUMA|L1d|L2|L3|MHz' || true
"$python" -c "import sys, numpy, sklearn, Cython; print(sys.version.split()[0], 'numpy', numpy.__version__, 'scikit-learn', sklearn.__version__, 'Cython', Cython.__version__)"
"$python" -c "import lightgbm; print('lightgbm', lightgbm.__version__)"

# The two builds side by side: the measured one in place, the traced one in a copy.
traced=${TRACED_SRC:-}
if [ -z "$traced" ]; then
    copy=$(mktemp -d)
    trap 'rm -rf "$copy"' EXIT
    cp -a setup.py pyproject.toml README.md LICENSE src "$copy/"
    find "$copy/src" -name '*.so' -delete  # a build already here is not traced
    (cd "$copy" && GBC_CORE_TRACE=1 timeout "$budget" "$python" setup.py build_ext --inplace \
        -j "$threads" >"$out/build-traced.log" 2>&1) &
    traced_build=$!
    traced=$copy/src
fi
step build "$python" setup.py build_ext --inplace -j "$threads" >"$out/build.log" 2>&1 \
    || { tail -20 "$out/build.log"; exit 1; }
echo "## build: done at $((SECONDS - start)) s"
if [ -n "${traced_build:-}" ]; then  # before any measurement: nothing builds beside it
    wait "$traced_build" || { echo "## traced build failed"; tail -20 "$out/build-traced.log"; exit 1; }
    echo "## traced build: done at $((SECONDS - start)) s"
fi

# Issue 33's 16-thread targets: hist against LightGBM (binary 1M, 5 classes 1M),
# exact 1M against LightGBM and on one thread (its scaling), exact 5 classes 200k,
# hist 10M against LightGBM.
fits hist-1m --workloads "$W1" --threads "$threads" --libraries gbc-hist,gbc-exact,lightgbm \
    --repeats 2 --rounds "$WR"
fits hist-5c-1m --workloads "$W5" --threads "$threads" --libraries gbc-hist,lightgbm --rounds "$WR"
fits exact-5c-200k --workloads "$W5S" --threads "$threads" --libraries gbc-exact,lightgbm \
    --rounds "$WR"
fits exact-1m-scaling --workloads "$W1" --threads "$threads,1" --libraries gbc-exact,gbc-hist
fits hist-10m --workloads "$W10" --threads "$threads" --libraries gbc-hist,lightgbm

# Traces on this machine for the scaling model: the many-thread fits as they ran,
# and one-thread fits to check the model's factor between machines.
record hist "$W1" "$threads"
record exact "$W1" "$threads"
record hist "$W5S" "$threads"
record hist "$W1" 1
record exact "$WX" 1

# The curve between, if time is left.
fits between-1m --workloads "$W1" --threads 2,4,8 --libraries gbc-exact,gbc-hist,lightgbm
fits exact-10m --workloads "$W10" --threads "$threads" --libraries gbc-exact

tar -czf "$out/results.tar.gz" -C "$out" json && rm -r "$out/json"
tar -cf "$out/traces.tar" -C "$out" traces && rm -r "$out/traces"
echo "## done at $((SECONDS - start)) s"
