#!/bin/sh
# selection.sh - ringx is selected by default and says so at verbose 2, is
# absent under --mca coll ^ringx, runs alone under --mca coll ringx (and then
# logs which components it loaded for the other collectives, while under the
# default selection it loads and fills nothing), and the three runs give the
# same results.
#   selection.sh PROGRAM   (three_collectives; RINGX_COMPONENT_DIR as for run_mpi_test.sh)
set -u
program=$1
here=$(dirname "$0")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
# This test chooses the selections itself (also when the suite runs with
# OMPI_MCA_coll=ringx).
unset OMPI_MCA_coll

run() { # NAME MPIRUN_ARGS
    RINGX_MPIRUN_ARGS="$2 --mca coll_ringx_verbose 2" \
        "$here/run_mpi_test.sh" 4 "$program" >"$work/$1.out" 2>&1 || fail=1
    grep '^rank ' "$work/$1.out" | sort >"$work/$1.sums"
}

expect_lines() { # RUN PATTERN COUNT WHAT
    n=$(grep -c "$2" "$work/$1.out")
    if [ "$n" -ne "$3" ]; then
        echo "FAIL ($1 run): expected $3 lines '$2' ($4), got $n"
        fail=1
    fi
}

run with ""
run without "--mca coll ^ringx"
run alone "--mca coll ringx"

for coll in allreduce allgather reduce_scatter_block; do
    expect_lines with "coll:ringx: $coll: " 4 "ringx serves $coll"
    expect_lines alone "coll:ringx: $coll: " 4 "ringx serves $coll"
done
expect_lines without "coll:ringx" 0 "ringx is not loaded"
expect_lines with "loaded by ringx\|no selected component" 0 \
    "under the default selection ringx loads and fills nothing"
# (Open MPI 5 adds ftagree, the agreement of its fault tolerance)
expect_lines alone "to serve the collective slots no selected component fills, loaded: self inter tuned basic libnbc\( ftagree\)\?$" 4 \
    "each rank loads the stock components once"
expect_lines alone "MPI_COMM_WORLD: tuned (priority 30, loaded by ringx) serves .*; and is ringx's fallback for allgather allreduce reduce_scatter_block$" 4 \
    "tuned serves the other blocking collectives and is ringx's fallback"
expect_lines alone "MPI_COMM_WORLD: libnbc (priority 10, loaded by ringx) serves iallgatherv allgatherv_init .*; and is ringx's fallback for iallgather allgather_init iallreduce allreduce_init ireduce_scatter_block reduce_scatter_block_init$" 4 \
    "libnbc serves the other nonblocking and persistent collectives, and is ringx's fallback for its own"
expect_lines alone "MPI_COMM_SELF: self (priority 75, loaded by ringx) serves" 4 \
    "self serves MPI_COMM_SELF"

if [ "$(wc -l <"$work/with.sums")" -ne 12 ] || ! cmp -s "$work/with.sums" "$work/without.sums" ||
    ! cmp -s "$work/with.sums" "$work/alone.sums"; then
    echo "FAIL: results differ with, without and with only ringx (or are missing)"
    diff "$work/with.sums" "$work/without.sums"
    diff "$work/with.sums" "$work/alone.sums"
    fail=1
fi
if [ "$fail" -ne 0 ]; then
    for name in with without alone; do
        echo "--- run $name ringx"; cat "$work/$name.out"
    done
    exit 1
fi
echo "PASS: ringx served all three collectives on 4 ranks, by default and alone (where it filled" \
    "the other slots from the stock components); absent with coll ^ringx; same results"
