#!/bin/sh
# multi_host.sh - ringx across test hosts (network namespaces on this
# machine, tests/hosts/hosts.sh; root only, else SKIP).  The hosts share
# memory, so UCX could map every peer's window; ringx must still see
# several nodes (Open MPI's locality) and keep its one-node paths inside
# a node:
#   * 2 hosts x 2 ranks: the verbose log gives the layout ("4 ranks on 2
#     nodes, 2 per node"), the pvar comms_multi_node counts it;
#   * the same, direct reads forced for all three collectives: every call
#     must be served by the ring instead (--expect-alg: the pvars), with
#     correct results (ringx_correctness --quick);
#   * 3 hosts with 2, 1 and 1 ranks (uneven), default choice: correct,
#     served by ringx, layout "1 to 2 per node".
#   multi_host.sh   (RINGX_TEST_BINDIR: the test programs; RINGX_COMPONENT_DIR
#                    as for run_mpi_test.sh)
set -u
here=$(cd "$(dirname "$0")" && pwd)
bindir=${RINGX_TEST_BINDIR:-.}
work=$(mktemp -d)
hosts="$here/../hosts/hosts.sh"
cleanup() {
    "$hosts" down "$work/h2" >/dev/null 2>&1
    "$hosts" down "$work/h3" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
unset OMPI_MCA_coll
fail=0

"$hosts" up "$work/h2" 2 >"$work/up2.out" 2>&1
status=$?
if [ "$status" -eq 77 ]; then
    cat "$work/up2.out"
    exit 77
fi
[ "$status" -eq 0 ] || { echo "FAIL: could not make the test hosts"; cat "$work/up2.out"; exit 1; }
"$hosts" up "$work/h3" 3 >"$work/up3.out" 2>&1 ||
    { echo "FAIL: could not make the test hosts"; cat "$work/up3.out"; exit 1; }
cat "$work/up2.out" "$work/up3.out"

# slots per host: HOSTS_DIR SLOTS... -> a hostfile
hostfile() {
    d=$1
    shift
    for h in $(cat "$d/hostfile"); do
        echo "$h slots=$1"
        shift
    done >"$d/hostfile.slots"
    sed "s|--hostfile [^ ]*|--hostfile $d/hostfile.slots|" "$d/mpirun_args"
}

run() { # NAME NP HOSTS_ARGS EXTRA_MPIRUN_ARGS PROGRAM ARGS...
    name=$1 np=$2 args="$3 $4"
    shift 4
    RINGX_MPIRUN_ARGS="$args" RINGX_MPI_TIMEOUT=${RINGX_MPI_TIMEOUT:-600} \
        "$here/run_mpi_test.sh" "$np" "$@" >"$work/$name.out" 2>&1 ||
        { echo "FAIL: $name (mpirun)"; fail=1; }
}

expect() { # NAME PATTERN WHAT
    grep -q "$2" "$work/$1.out" || { echo "FAIL: $1: $3"; fail=1; }
}

two=$(hostfile "$work/h2" 2 2)
three=$(hostfile "$work/h3" 2 1 1)

run layout 4 "$two" "--mca coll_ringx_verbose 1" "$bindir/three_collectives"
expect layout "MPI_COMM_WORLD: 4 ranks on 2 nodes, 2 per node: no one-node paths" \
    "no node layout in the verbose log"
[ "$(grep -c '^rank ' "$work/layout.out")" -eq 12 ] || { echo "FAIL: layout: results missing"; fail=1; }

forced=""
expect_ring=""
for coll in allreduce allgather reduce_scatter_block; do
    forced="$forced --mca coll_ringx_${coll}_algorithm direct_read"
    expect_ring="$expect_ring --expect-alg $coll:ring"
done
# shellcheck disable=SC2086
run forced 4 "$two" "$forced" "$bindir/ringx_correctness" --quick --expect-multi-node $expect_ring
expect forced "0 failures" "wrong results or calls not served by the ring"

run uneven 4 "$three" "--mca coll_ringx_verbose 1" "$bindir/ringx_correctness" --quick \
    --expect-multi-node
expect uneven "0 failures" "wrong results or calls not served by ringx"
expect uneven "MPI_COMM_WORLD: 4 ranks on several nodes, 1 to 2 per node" \
    "no uneven node layout in the verbose log"

if [ "$fail" -ne 0 ]; then
    for f in layout forced uneven; do
        echo "--- $f"
        tail -40 "$work/$f.out"
    done
    exit 1
fi
echo "PASS: across 2 and 3 test hosts (uneven too): node layout from Open MPI's locality," \
    "no direct reads across hosts even when forced, results correct and served by ringx"
