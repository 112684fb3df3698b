#!/bin/sh
# pml_ucx.sh - runs PROGRAM ARGS on 4 ranks with Open MPI's point-to-point
# messages over UCX (pml ucx), as on clusters with InfiniBand, where Open
# MPI picks it by default: ringx's own UCX worker then lives beside the pml's
# in every process, and Open MPI's progress loop drives both.
#   pml_ucx.sh PROGRAM [ARGS...]
# pml ucx turns itself down where UCX finds only shared memory and TCP
# (its default transports and devices are InfiniBand's); "any" lets it run
# here.  --mca pml ucx makes MPI_Init fail rather than quietly take ob1.
# SKIP where this Open MPI has no pml ucx.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if ! ompi_info 2>/dev/null | grep -q "MCA pml: ucx"; then
    echo "SKIP: this Open MPI has no pml ucx"
    exit 77
fi
RINGX_MPIRUN_ARGS="${RINGX_MPIRUN_ARGS:-} --mca pml ucx --mca opal_common_ucx_tls any --mca opal_common_ucx_devices any"
export RINGX_MPIRUN_ARGS
exec "$here/run_mpi_test.sh" 4 "$@"
