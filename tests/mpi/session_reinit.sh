#!/bin/sh
# session_reinit.sh - two MPI Sessions one after the other (comm_from_group
# --session-reinit, 4 ranks): the first, whose communicator runs no
# collective ringx serves, must not start ringx's UCX, the second, whose
# calls ringx serves (the program checks results and pvars), must: one
# "UCX ... started" line per process at coll_ringx_verbose 1.  Starting UCX
# with every communicator made the next MPI_Session_init fail in 7 of 12
# runs of MPICH's session_re_init under Open MPI 5.0.7.  SKIP (77) where the
# program does (Open MPI 4.1: no sessions).
#   session_reinit.sh PROGRAM   (RINGX_COMPONENT_DIR as for run_mpi_test.sh)
set -u
program=$1
here=$(dirname "$0")
out=$(mktemp)
trap 'rm -f "$out"' EXIT

RINGX_MPIRUN_ARGS="--mca coll_ringx_verbose 1" "$here/run_mpi_test.sh" 4 "$program" \
    --session-reinit >"$out" 2>&1
status=$?
cat "$out"
[ "$status" -eq 77 ] && exit 77
[ "$status" -eq 0 ] || { echo "FAIL: the program failed ($status)"; exit 1; }
started=$(grep -c 'coll:ringx: UCX .* started' "$out")
if [ "$started" -ne 4 ]; then
    echo "FAIL: ringx started UCX $started times, want 4 (once per process, in the second session)"
    exit 1
fi
echo "PASS: UCX started once per process, in the session whose calls ringx served"
