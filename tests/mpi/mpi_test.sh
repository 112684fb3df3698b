#!/bin/sh
# mpi_test.sh - the automake test driver for tests/mpi/*.mpi files.
#   mpi_test.sh FILE.mpi
# A .mpi file is a few shell assignments describing one MPI test run:
#   np=N                 ranks
#   program=NAME         test program, built in tests/mpi ($RINGX_TEST_BINDIR)
#   args="..."           its arguments
#   mpirun_args="..."    extra mpirun options (e.g. --mca coll_ringx_allreduce_enable 0)
#   script=NAME.sh       run tests/mpi/NAME.sh PROGRAM ARGS instead of mpirun directly
#                        (without program=, tests/mpi/NAME.sh ARGS)
set -u
here=$(cd "$(dirname "$0")" && pwd)
np=4
program=
args=
mpirun_args=
script=
# shellcheck disable=SC1090
. "$1"
bindir=${RINGX_TEST_BINDIR:-$here}
RINGX_MPIRUN_ARGS=$mpirun_args
export RINGX_MPIRUN_ARGS
if [ -n "$script" ]; then
    # shellcheck disable=SC2086
    exec "$here/$script" ${program:+"$bindir/$program"} $args
fi
# shellcheck disable=SC2086
exec "$here/run_mpi_test.sh" "$np" "$bindir/$program" $args
