#!/bin/sh
# run_mpi_test.sh - launch an MPI test program for `make check`.
#
#   run_mpi_test.sh NP PROGRAM [ARGS...]
#
# Runs PROGRAM on NP processes of this machine (oversubscribed: the test
# machines have fewer cores than the largest NP).  NP "singleton" runs it
# without mpirun, as users often start a one-process program (`./a.out`:
# MPI's singleton initialisation; RINGX_MPIRUN_ARGS does not apply).  Open
# MPI finds the component under test through RINGX_COMPONENT_DIR (the
# build's components/ directory), searched before Open MPI's own component
# directory.
# Extra mpirun options can be given in RINGX_MPIRUN_ARGS (split on blanks),
# e.g. "--mca coll_ringx_allreduce_enable 0".
#
# A hung job is aborted after RINGX_MPI_TIMEOUT seconds (default 300; 0:
# never), so that a deadlock fails the test instead of stalling the suite;
# mpirun then exits non-zero (124 where it had to be killed 60 s later).
#
# Exits with mpirun's status (a singleton's own).

set -u

if [ "$#" -lt 2 ]; then
    echo "usage: $0 NP PROGRAM [ARGS...]" >&2
    exit 2
fi
np=$1
program=$2
shift 2

here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${RINGX_COMPONENT_DIR:-}" ]; then
    echo "$0: warning: RINGX_COMPONENT_DIR is not set; using installed components only" >&2
fi
# The component path (and, on Open MPI 5, PMIx's own): scripts/ringx-env.sh.
env_lines=$("$here/../../scripts/ringx-env.sh" "${RINGX_COMPONENT_DIR:-}") || exit 2
eval "$env_lines"
OMPI_MCA_rmaps_base_oversubscribe=1
# Quiet unless a test asks otherwise (--mca on the command line wins).
OMPI_MCA_coll_ringx_verbose=${OMPI_MCA_coll_ringx_verbose:-0}
export OMPI_MCA_rmaps_base_oversubscribe OMPI_MCA_coll_ringx_verbose

timeout_s=${RINGX_MPI_TIMEOUT:-300}
timeout_args=
outer=
if [ "$timeout_s" != 0 ]; then
    timeout_args="--timeout $timeout_s"
    # mpirun's own timeout did not end a job whose spawned processes hung
    # (Open MPI 5.0.7): coreutils' ends mpirun a minute later.  It runs
    # mpirun in a process group of its own, so mpirun reads no terminal
    # (stdin /dev/null below: a read there would stop it).
    outer="timeout -k 10 $((timeout_s + 60))"
fi

echo "run_mpi_test: np=$np component_path=$OMPI_MCA_mca_base_component_path"
echo "run_mpi_test: $program $*"

launcher=
if [ "$np" != singleton ]; then
    launcher="mpirun --oversubscribe --allow-run-as-root -np $np $timeout_args ${RINGX_MPIRUN_ARGS:-}"
fi
# outer and launcher are split into words on purpose.
# shellcheck disable=SC2086
$outer $launcher "$program" "$@" </dev/null
status=$?
echo "run_mpi_test: exit status $status"
exit "$status"
