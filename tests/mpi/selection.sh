#!/bin/sh
# selection.sh - ringx is selected by default and says so at verbose 2, is
# absent under --mca coll ^ringx, and both runs give the same results.
#   selection.sh PROGRAM   (three_collectives; RINGX_COMPONENT_DIR as for run_mpi_test.sh)
set -u
program=$1
here=$(dirname "$0")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

RINGX_MPIRUN_ARGS="--mca coll_ringx_verbose 2" \
    "$here/run_mpi_test.sh" 4 "$program" >"$work/with.out" 2>&1 || fail=1
RINGX_MPIRUN_ARGS="--mca coll ^ringx --mca coll_ringx_verbose 2" \
    "$here/run_mpi_test.sh" 4 "$program" >"$work/without.out" 2>&1 || fail=1

for coll in allreduce allgather reduce_scatter_block; do
    served=$(grep -c "coll:ringx: $coll: " "$work/with.out")
    if [ "$served" -ne 4 ]; then
        echo "FAIL: expected 4 verbose lines 'coll:ringx: $coll: <algorithm>', got $served"
        fail=1
    fi
done
if grep -q "coll:ringx" "$work/without.out"; then
    echo "FAIL: ringx logged under --mca coll ^ringx"
    fail=1
fi
grep '^rank ' "$work/with.out" | sort >"$work/with.sums"
grep '^rank ' "$work/without.out" | sort >"$work/without.sums"
if [ "$(wc -l <"$work/with.sums")" -ne 12 ] || ! cmp -s "$work/with.sums" "$work/without.sums"; then
    echo "FAIL: results differ with and without ringx (or are missing)"
    diff "$work/with.sums" "$work/without.sums"
    fail=1
fi
if [ "$fail" -ne 0 ]; then
    echo "--- run with ringx"; cat "$work/with.out"
    echo "--- run without ringx"; cat "$work/without.out"
    exit 1
fi
echo "PASS: ringx served all three collectives on 4 ranks; absent with coll ^ringx; same results"
