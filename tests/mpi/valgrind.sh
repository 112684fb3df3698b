#!/bin/sh
# valgrind.sh - runs an MPI test on 4 ranks under valgrind memcheck and
# fails if any error or leak record involves ringx's code.
#   valgrind.sh PROGRAM [ARGS...]   (RINGX_COMPONENT_DIR and RINGX_MPIRUN_ARGS
#                                    as for run_mpi_test.sh)
# Open MPI and UCX report errors and leaks of their own; only records with
# a ringx frame count, less those valgrind-ompi.supp names (Open MPI's
# errors under ringx's calls of its progress engine).  Components stay loaded at exit so that their
# frames keep their names.
set -u
here=$(dirname "$0")
if ! command -v valgrind >/dev/null 2>&1; then
    echo "SKIP: valgrind not installed"
    exit 77
fi
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

RINGX_MPI_TIMEOUT=${RINGX_MPI_TIMEOUT:-900} \
    RINGX_MPIRUN_ARGS="${RINGX_MPIRUN_ARGS:-} --mca mca_base_component_disable_dlclose 1" \
    "$here/run_mpi_test.sh" 4 valgrind -q --leak-check=full \
    --show-leak-kinds=definite,indirect,possible --num-callers=40 \
    --suppressions="$here/valgrind-ompi.supp" \
    --log-file="$logs/vg.%p.log" "$@"
status=$?

records=$(cat "$logs"/vg.*.log | grep -c "coll_ringx")
if [ "$records" -ne 0 ]; then
    echo "FAIL: valgrind reports involving ringx:"
    grep -l "coll_ringx" "$logs"/vg.*.log | head -n 1 | xargs cat
    exit 1
fi
if [ "$status" -ne 0 ]; then
    echo "FAIL: the test failed under valgrind (exit $status)"
    exit 1
fi
echo "PASS: no valgrind error or leak in ringx's code"
