#!/bin/sh
# tests/gpu/run.sh - every GPU test of ringx in one go, for a machine with
# a CUDA device:
#   1. the kernels against the host reductions, memory-type detection and
#      kernel throughput (tests/gpu/check_kernels);
#   2. the MPI correctness matrix on device buffers (tests/mpi/gpu-*.mpi);
#   3. compute-sanitizer memcheck over a 2-rank run of that matrix (--quick);
#   4. the benchmark with device memory at np 2 and 4 (ringx next to "copy
#      to host, stock collective, copy back"), and nonblocking at np 2, CSV
#      files beside the log.
#
#   tests/gpu/run.sh [--quick] [BUILD_DIR]     (default: _build)
#
# --quick: the kernels, the 2-rank matrices (blocking, nonblocking, with no
# CUDA context current), memcheck and the benchmark at np 2 up to 16 MiB:
# what fits a short lease of a GPU machine; the rest after it.
#
# Open MPI and UCX must be on PATH (see ../shared/gpu/README.md for a
# machine without them).  Writes BUILD_DIR/gpu/run.log and prints a
# summary; exits 0 if everything passed, 77 if there is no CUDA device,
# 1 otherwise (also where nvidia-smi lists a GPU that CUDA cannot use,
# e.g. a driver older than the CUDA runtime ringx was built with).
set -u
quick=0
if [ "${1:-}" = --quick ]; then
    quick=1
    shift
fi
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$top/_build}" 2>/dev/null && pwd) || {
    echo "run.sh: no build directory ${1:-$top/_build}" >&2
    exit 1
}
out=$build/gpu
log=$out/run.log
mkdir -p "$out"
: >"$log"
passed=0 failed=0 skipped=0

say() {
    echo "$*" | tee -a "$log"
}

# step NAME COMMAND...: runs it with its output in the log, counts the outcome.
step() {
    name=$1
    shift
    say "== $name: $*"
    "$@" >>"$log" 2>&1
    status=$?
    case $status in
    0) passed=$((passed + 1)); say "PASS: $name" ;;
    77) skipped=$((skipped + 1)); say "SKIP: $name" ;;
    *) failed=$((failed + 1)); say "FAIL: $name (exit $status)" ;;
    esac
    return $status
}

RINGX_COMPONENT_DIR=$build/components
RINGX_TEST_BINDIR=$build/tests/mpi
export RINGX_COMPONENT_DIR RINGX_TEST_BINDIR
unset RINGX_MPIRUN_ARGS

say "ringx GPU tests, $(date -u '+%Y-%m-%d %H:%M UTC'), build $build"
command -v nvidia-smi >/dev/null 2>&1 &&
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$log" 2>&1

step kernels "$build/tests/gpu/check_kernels"
if [ "$status" = 77 ]; then
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
        say "FAIL: nvidia-smi lists a GPU, but CUDA cannot use it: $(grep '^SKIP' "$log" | tail -n 1)"
        say "  (the driver must take the CUDA runtime ringx was built with; see the log)"
        exit 1
    fi
    say "SKIP: no CUDA device; nothing else to run"
    exit 77
fi
grep -E '^(throughput|memtype)' "$log" | sed 's/^/  /'

if [ "$quick" = 1 ]; then
    mpi_tests="gpu-np2 gpu-nonblocking-np3 gpu_context-np2 gpu_context-nonblocking-np2"
else
    mpi_tests="gpu-np2 gpu-np3 gpu-np4 gpu-nonblocking-np3 gpu-persistent-np2 gpu_context-np2
               gpu_context-nonblocking-np2"
fi
for t in $mpi_tests; do
    step "$t" sh "$top/tests/mpi/mpi_test.sh" "$top/tests/mpi/$t.mpi"
done

sanitizer=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
if [ -x "$sanitizer" ]; then
    step memcheck sh "$top/tests/mpi/run_mpi_test.sh" 2 \
        "$sanitizer" --tool memcheck --error-exitcode 9 \
        "$build/tests/mpi/ringx_correctness" --mem cuda --quick
else
    say "FAIL: memcheck (no compute-sanitizer)"
    failed=$((failed + 1))
fi

# The table also goes to its own file: bench-cuda-npN[-FORM].txt beside the CSV.
#   bench NP [FORM]   (FORM: nonblocking or persistent; blocking when absent)
largest=64M
[ "$quick" = 1 ] && largest=16M
bench() {
    name=bench-cuda-np$1${2:+-$2}
    sh "$top/tests/mpi/run_mpi_test.sh" "$1" "$build/bench/ringx_bench" --mem cuda -e "$largest" \
        ${2:+-f "$2"} --csv "$out/$name.csv" >"$out/$name.txt" 2>&1
    status=$?
    cat "$out/$name.txt"
    return $status
}
step "bench-np2" bench 2
if [ "$quick" = 0 ]; then
    step "bench-np4" bench 4
    step "bench-np2-nonblocking" bench 2 nonblocking
fi

say "summary: $passed passed, $failed failed, $skipped skipped (log: $log)"
[ "$failed" = 0 ]
