#!/bin/sh
# singleton.sh - runs PROGRAM ARGS without mpirun, as users often start a
# one-process MPI program (`./a.out`: MPI's singleton initialisation), with
# ringx loaded from RINGX_COMPONENT_DIR (as for run_mpi_test.sh); the
# program itself checks its results and that ringx served them.  Exits
# with the program's status (124 or 137 if it hung past RINGX_MPI_TIMEOUT
# seconds, default 300).
#   singleton.sh PROGRAM [ARGS...]
set -u
here=$(cd "$(dirname "$0")" && pwd)
env_lines=$("$here/../../scripts/ringx-env.sh" "${RINGX_COMPONENT_DIR:-}") || exit 2
eval "$env_lines"
# a spawning singleton starts processes beyond this machine's cores
OMPI_MCA_rmaps_base_oversubscribe=1
OMPI_MCA_coll_ringx_verbose=${OMPI_MCA_coll_ringx_verbose:-0}
export OMPI_MCA_rmaps_base_oversubscribe OMPI_MCA_coll_ringx_verbose
echo "singleton: $*"
timeout -k 10 "${RINGX_MPI_TIMEOUT:-300}" "$@" </dev/null
status=$?
echo "singleton: exit status $status"
exit "$status"
