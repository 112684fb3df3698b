#!/bin/sh
# odd_ranks_staged.sh - the mixed-memory test (staged-mixed-np4.mpi).
#   odd_ranks_staged.sh PROGRAM [ARGS...]
# Runs PROGRAM on 4 ranks of which only the odd ones send their host
# buffers through the staging pipeline, as ranks with device buffers do
# next to ranks with host buffers: the two paths must work together in
# one call.  Run as the program of each rank, it turns staging on for
# itself when its rank is odd, and then asks the program to check through
# the pvars that its calls were staged (--expect-staged).
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${OMPI_COMM_WORLD_RANK:-}" ]; then
    if [ $((OMPI_COMM_WORLD_RANK % 2)) -eq 1 ]; then
        OMPI_MCA_coll_ringx_stage_host_buffers=1
        export OMPI_MCA_coll_ringx_stage_host_buffers
        exec "$@" --expect-staged
    fi
    exec "$@"
fi
exec "$here/run_mpi_test.sh" 4 "$here/odd_ranks_staged.sh" "$@"
