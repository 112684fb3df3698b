#!/bin/sh
# multi_host.sh - ringx across test hosts (network namespaces on this
# machine, tests/hosts/hosts.sh; root only, else SKIP).  The hosts share
# memory, so UCX could map every peer's window; ringx must still see
# several nodes (Open MPI's locality) and keep its one-node paths inside
# a node:
#   * 2 hosts x 2 ranks: the verbose log gives the layout ("4 ranks on 2
#     nodes, 2 per node") and links every rank through mailboxes to the
#     one peer on its node only, the pvar comms_multi_node counts it, and each
#     hierarchical call says which way it took (through the node leaders);
#     every rank sets UCX's rendezvous threshold (coll_ringx_ucx_rndv_thresh:
#     TCP between the hosts) unless the machine has RDMA devices, and 2
#     ranks on one host do not;
#   * the same, direct reads forced for all three collectives: every call
#     must be served by the ring instead (--expect-alg: the pvars), with
#     correct results (ringx_correctness --quick);
#   * 3 hosts with 2, 1 and 1 ranks (uneven), default choice: correct,
#     served by ringx, layout "1 to 2 per node";
#   * allgathers whose ranks describe their blocks with different datatypes,
#     some with gaps (allgather_types), at 3 x 2 (the hierarchical one
#     serving every call) and 2 + 1 + 1: correct, served, packed counted;
#   * MAX and MIN of signed zeros and NaNs, MINLOC and MAXLOC of NaNs, at
#     2 x 2 and 3 x 2, the hierarchical allreduce forced (small: through the
#     node leaders): the same bits on every rank;
#   * with coll/han below ringx (its fallback) and above it: correct; below,
#     calls han hands back to ringx counted (coll_ringx_<coll>_handed_back);
#   * every algorithm forced once at 2 hosts x 2 ranks, and the
#     hierarchical ones at 3 x 2, 2 x 3 (nonblocking), 2 x 4 (the leaders'
#     binomial trees), 2 x 2 (rings only, leaders only, persistent, staged), 2 x 1 and 3 x 1 (where
#     the ring serves instead): correct,
#     the pvars proving which algorithm served every call, and the
#     layout counted (comms_hierarchical, comms_uneven), and the small
#     blocking calls at 3 x 2 and 2 x 3 counted by the mailbox pvars, the
#     hierarchical allgathers and reduce_scatter_blocks beyond the leaders'
#     sizes and allreduces from 1 MiB at 3 x 2 (in pieces) by the sent_ahead
#     pvars (their phases overlap);
#   * the quick matrix under valgrind on 2 private hosts x 2 ranks: no
#     error or leak record with a ringx frame;
#   * 2 hosts x 37 ranks (more than the 72 steps a schedule holds itself):
#     the benchmark up to 64 KiB validates every result, the hierarchical
#     algorithms serving every call;
#   * the benchmark across 2 hosts: it prints the node layout; across 3
#     hosts with private memory and links shaped to 1 Gbit/s, three runs
#     that must end with every result right, hierarchical calls counted;
#   * MPI_Finalize at 3 x 2 (private memory) after ringx connected and
#     served no call, five times: no abort, no UCX error;
#   * beside Open MPI's pml ucx on 2 private hosts x 2 ranks: blocking
#     and nonblocking calls correct and served by ringx;
#   * faults, on 2 hosts with private memory (every byte between them over
#     the network): one host's link down for 4 s in the middle of a
#     benchmark run, and a rank killed in the middle of one; each run must
#     end within a bound with every result right or with an error, never a
#     wrong result or a hang.
#   multi_host.sh   (RINGX_TEST_BINDIR: the test programs; RINGX_BENCH: the
#                    benchmark; RINGX_COMPONENT_DIR as for run_mpi_test.sh)
set -u
here=$(cd "$(dirname "$0")" && pwd)
bindir=${RINGX_TEST_BINDIR:-.}
work=$(mktemp -d)
hosts="$here/../hosts/hosts.sh"
cleanup() {
    "$hosts" down "$work/h2" >/dev/null 2>&1
    "$hosts" down "$work/h3" >/dev/null 2>&1
    "$hosts" down "$work/hp" >/dev/null 2>&1
    "$hosts" down "$work/hs" >/dev/null 2>&1
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
"$hosts" up "$work/hp" 2 - private >"$work/upp.out" 2>&1 ||
    { echo "FAIL: could not make the test hosts"; cat "$work/upp.out"; exit 1; }
cat "$work/upp.out"
"$hosts" up "$work/hs" 3 1gbit private >"$work/ups.out" 2>&1 ||
    { echo "FAIL: could not make the test hosts"; cat "$work/ups.out"; exit 1; }
cat "$work/ups.out"

# slots per host: HOSTS_DIR SLOTS... -> the mpirun options with a hostfile
# of those slots (one file per layout: the options stay valid after later
# calls)
hostfile() {
    d=$1
    shift
    f="$d/hostfile.$(echo "$*" | tr ' ' '-')"
    for h in $(cat "$d/hostfile"); do
        echo "$h slots=$1"
        shift
    done >"$f"
    sed "s|--hostfile [^ ]*|--hostfile $f|" "$d/mpirun_args"
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

run layout 4 "$two" "--mca coll_ringx_verbose 2" "$bindir/three_collectives"
expect layout \
    "MPI_COMM_WORLD: 4 ranks on 2 nodes, 2 per node: no direct reads, mailboxes only inside a node" \
    "no node layout in the verbose log"
# UCX could map all 3 peers' windows here (shared memory); the mailboxes
# must link each rank to the one peer on its node only.
[ "$(grep -c 'MPI_COMM_WORLD: links through mailboxes .* to 1 of its peers, through UCX alone to 2' \
    "$work/layout.out")" -eq 4 ] ||
    { echo "FAIL: layout: mailboxes not exactly between the ranks of each node"; fail=1; }
[ "$(grep -c '^rank ' "$work/layout.out")" -eq 12 ] || { echo "FAIL: layout: results missing"; fail=1; }
# each call's way inside the hierarchical algorithm (the calls are small)
expect layout "hierarchical allreduce of 4000 bytes: through the node leaders (coll_ringx_allreduce_leaders_bytes" \
    "no hierarchical call through the node leaders in the verbose log"
# Between these hosts UCX goes over TCP (no RDMA device here): every rank's
# context takes coll_ringx_ucx_rndv_thresh; on one node (2 ranks filling
# the first host's 2 slots) UCX keeps its own choice.
rndv_line='UCX rendezvous threshold 262144 bytes (coll_ringx_ucx_rndv_thresh'
rndv_ranks=4
if [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
    rndv_ranks=0
fi
[ "$(grep -cF "$rndv_line" "$work/layout.out")" -eq "$rndv_ranks" ] ||
    { echo "FAIL: layout: not $rndv_ranks ranks with UCX's rendezvous threshold set"; fail=1; }
run one_node 2 "$two" "--mca coll_ringx_verbose 1" "$bindir/three_collectives"
[ "$(grep -c '^rank ' "$work/one_node.out")" -eq 6 ] && ! grep -qF "$rndv_line" "$work/one_node.out" ||
    { echo "FAIL: one_node: results missing, or UCX's rendezvous threshold set on one node"; fail=1; }

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
expect uneven "MPI_COMM_WORLD: 4 ranks on several nodes, 1 to 2 per node: no direct reads" \
    "no uneven node layout in the verbose log"

# Allgathers whose ranks describe their blocks with different datatypes of
# one signature, some leaving gaps (packed): every rank must choose and cut
# alike across nodes too, hierarchical (3 x 2) and flat (2 + 1 + 1).
run types-3x2 6 "$(hostfile "$work/h3" 2 2 2)" "" "$bindir/allgather_types" \
    --expect-alg hierarchical
expect types-3x2 "0 failures" "wrong results, or allgathers not served by the hierarchical one"
run types-uneven 4 "$three" "" "$bindir/allgather_types"
expect types-uneven "0 failures" "wrong results, or allgathers not served by ringx"

# MAX and MIN of signed zeros and NaNs, MINLOC and MAXLOC of NaNs: the
# same bits on every rank through the node leaders' recursive doubling
# (2 nodes; 3, one folded in and out).
order_run() { # NAME NP HOSTS_ARGS
    run "$1" "$2" "$3" "--mca coll_ringx_allreduce_algorithm hierarchical" "$bindir/rounding" \
        --order-only --expect-alg hierarchical
    expect "$1" "0 failures" "results differ between ranks, or allreduces not hierarchical"
}
order_run order-2x2 4 "$two"
order_run order-3x2 6 "$(hostfile "$work/h3" 2 2 2)"

# With coll/han.  Below ringx (priority 99, ringx's 100): han is ringx's
# fallback; it runs collectives of its own on its sub-communicators, and
# where one rank per node leaves it nothing to do (split_rank_mod_2) it
# calls the communicator's table again, which ringx must serve, not hand on
# (a recursion) - the pvars prove the calls were handed back.  Above ringx
# (han's 100 over ringx's 90): han passes ringx calls, some with another
# component's module; every result right, ringx serving some of them.
# (--quick: Open MPI 4.1.4's han itself crashes on in-place allreduces of
# 100 KB across these hosts, with or without ringx; open-mpi/ompi#11488.)
run han-below 4 "$two" "--mca coll_han_priority 99 --mca coll_ringx_priority 100" \
    "$bindir/ringx_correctness" --quick --expect-multi-node --expect-handed-back
expect han-below "0 failures" "wrong results with coll/han below ringx, or no call handed back"
run han-above 4 "$two" "--mca coll_han_priority 100" "$bindir/ringx_correctness" --quick \
    --results-only --expect-served-some
expect han-above "0 failures" "wrong results with coll/han above ringx, or ringx served nothing"

# Every algorithm forced once across 2 hosts x 2 ranks (powers of two and
# even counts: each runs as forced, on every sub-communicator too), the
# pvars proving it served every call; direct reads were forced above.
forced_run() { # NAME ALLREDUCE ALLGATHER REDUCE_SCATTER_BLOCK [OPTIONS...]
    name=$1 algs="" expects="" i=0
    shift
    for coll in allreduce allgather reduce_scatter_block; do
        algs="$algs --mca coll_ringx_${coll}_algorithm $1"
        expects="$expects --expect-alg $coll:$1"
        shift
    done
    # shellcheck disable=SC2086
    run "$name" "$np" "$hosts_args" "$algs $extra" "$bindir/ringx_correctness" --expect-multi-node \
        $expects "$@"
    expect "$name" "0 failures" "wrong results, or calls not served by the forced algorithms"
    checked="$checked $name"
}
checked="" extra=""
np=4 hosts_args=$two
forced_run ring ring ring ring --quick
forced_run logp recursive_doubling recursive_doubling recursive_halving --quick
forced_run rabenseifner rabenseifner bruck recursive_halving --quick
forced_run neighbor ring neighbor_exchange ring --quick

# The hierarchical algorithms, forced: 2 and 3 hosts x 1-3 ranks, the whole
# matrix where the nodes are even (the ring serves communicators whose
# nodes are not: --expect-alg), nonblocking, persistent and staged too.
# Blocking calls of up to the mailbox size: the ranks of a node exchange
# through mailboxes (--expect-node-mailbox; none for nonblocking calls).
np=6 hosts_args=$(hostfile "$work/h3" 2 2 2)
# Beyond the leaders (64 KiB per rank of a node for allgather, 32 for
# reduce_scatter_block) the node rings' messages leave ahead of their steps.
forced_run hier-3x2 hierarchical hierarchical hierarchical --expect-node-mailbox 4096 \
    --expect-sent-ahead 65536 --expect-sent-ahead allgather:131072
np=6 hosts_args=$(hostfile "$work/h2" 3 3)
forced_run hier-2x3-nb hierarchical hierarchical hierarchical --nonblocking \
    --expect-node-mailbox 4096 --expect-sent-ahead 98304 --expect-sent-ahead allgather:196608
# the leaders' binomial trees (beyond coll_ringx_leaders_flat_ranks ranks
# per node; 2 x 37 below), here at 4 ranks per node
np=8 hosts_args=$(hostfile "$work/h2" 4 4)
extra="--mca coll_ringx_leaders_flat_ranks 1"
forced_run hier-2x4-binomial hierarchical hierarchical hierarchical --quick --expect-node-mailbox 4096
extra=""
# coll_ringx_<coll>_leaders_bytes: 0, the rings at every size (their node
# ring's messages leave ahead: counted for every call); 1 GiB, the leaders
# up to the medium counts
np=4 hosts_args=$two
leaders() { for coll in allreduce allgather reduce_scatter_block; do
    printf ' --mca coll_ringx_%s_leaders_bytes %s' "$coll" "$1"; done; }
extra=$(leaders 0)
forced_run hier-2x2-rings hierarchical hierarchical hierarchical --quick --medium \
    --expect-sent-ahead 0
extra=$(leaders 1073741824)
forced_run hier-2x2-leaders hierarchical hierarchical hierarchical --quick --medium
extra=""
forced_run hier-2x2-persistent hierarchical hierarchical hierarchical --persistent --quick
extra="--mca coll_ringx_stage_host_buffers 1"
forced_run hier-2x2-staged hierarchical hierarchical hierarchical --quick --expect-staged
extra=""
np=2 hosts_args=$(hostfile "$work/h2" 1 1)
forced_run hier-2x1 hierarchical hierarchical hierarchical --quick
np=3 hosts_args=$(hostfile "$work/h3" 1 1 1)
forced_run hier-3x1 hierarchical hierarchical hierarchical --quick

bench=${RINGX_BENCH:-$bindir/../../bench/ringx_bench}

# More ranks than a schedule holds steps itself (72): 2 hosts x 37 ranks,
# the benchmark up to 64 KiB, every result validated and every call of the
# three collectives served by the hierarchical algorithms (rings of up to
# p - 1 = 73 steps; through the leaders' trees up to 64 KiB, 128 or 256 KiB).
run many 74 "$(hostfile "$work/h2" 37 37)" "" "$bench" --max-bytes 64K --rounds 1 --time 0.005
expect many "^# ringx vs stock .*np=74 (2 nodes, 37 ranks per node)" "no layout of 2 x 37 ranks"
expect many "^# all results validated" "wrong results at 2 hosts x 37 ranks"
for coll in allreduce allgather reduce_scatter_block; do
    grep "^#   $coll " "$work/many.out" | grep -q " ring=0 .*hierarchical=[1-9]" ||
        { echo "FAIL: many: $coll not served by the hierarchical algorithms at 2 x 37"; fail=1; }
done
checked="$checked many"
run bench 4 "$two" "" "$bench" --max-bytes 4K --time 0.01 --rounds 2
expect bench "^# ringx vs stock Open MPI collectives: np=4 (2 nodes, 2 ranks per node)" \
    "the benchmark does not print the node layout"
expect bench "^# all results validated" "the benchmark's results are wrong or not served by ringx"

# A fault 3 s into a benchmark run on the private hosts (ACTION: a command).
# The run must end within BOUND seconds (not by mpirun's time limit), its
# table with no wrong result; it may end with an error.
fault() { # NAME BOUND ACTION...
    name=$1 bound=$2
    shift 2
    start=$(date +%s)
    RINGX_MPIRUN_ARGS="$private" RINGX_MPI_TIMEOUT=$bound "$here/run_mpi_test.sh" 4 "$bench" \
        --max-bytes 256K --time 0.05 --rounds 2 --json "$work/$name.json" >"$work/$name.out" 2>&1 &
    job=$!
    sleep 3
    "$@" || { echo "FAIL: $name: could not make the fault"; fail=1; }
    wait "$job"
    status=$?
    took=$(($(date +%s) - start))
    if grep -q "time limit" "$work/$name.out" || [ "$took" -ge "$bound" ]; then
        echo "FAIL: $name: the run did not end within $bound s; its output's end:"
        tail -n 25 "$work/$name.out"
        fail=1
    elif grep -q "FAIL(" "$work/$name.out"; then
        echo "FAIL: $name: wrong results"
        fail=1
    else
        echo "multi_host: $name: ended in $took s, exit $status" \
            "($(grep -q '^# all results validated' "$work/$name.out" && echo 'every result right' ||
                echo 'an error'))"
    fi
}

link_down() {
    "$hosts" link "$work/hp" 2 down && sleep 4 && "$hosts" link "$work/hp" 2 up
}

kill_rank() {
    victim=
    for p in $(pgrep -f "$work/kill.json"); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = ringx_bench ] && victim=$p
    done
    [ -n "$victim" ] && kill -9 "$victim"
}

# The benchmark on 3 hosts x 2 ranks with links shaped to 1 Gbit/s (every
# byte between hosts over TCP), three times: the stock collectives and
# ringx's (hierarchical at these sizes) take turns, and a rank waiting in
# one must still move the other's bytes (MPI's progress rule; without it
# about one run in five hung here).
shaped=$(hostfile "$work/hs" 2 2 2)
for i in 1 2 3; do
    RINGX_MPI_TIMEOUT=120 run "shaped$i" 6 "$shaped" "" "$bench" --min-bytes 64K \
        --max-bytes 1M --rounds 3 --time 0.05
    expect "shaped$i" "^# all results validated" "the benchmark across shaped links failed"
    expect "shaped$i" "hierarchical=[1-9]" "the hierarchical algorithms did not serve"
    checked="$checked shaped$i"
done

# MPI_Finalize after ringx connected MPI_COMM_WORLD and served no call,
# 3 x 2 with every byte between hosts over TCP, five times: each must end
# cleanly, without a UCX error (endpoints made at the connection and never
# used were still connecting at MPI_Finalize, where ringx's progress made
# UCX 1.13 connect them to peers that had already left: 3 runs in 5
# aborted, all 5 printed connection errors).
for i in 1 2 3 4 5; do
    run "idle$i" 6 "$shaped" "--mca coll_ringx_verbose 1" "$bindir/three_collectives" --idle
    [ "$(grep -c '^rank [0-9]* idle$' "$work/idle$i.out")" -eq 6 ] &&
        [ "$(grep -c 'MPI_COMM_WORLD: 6 ranks on 3 nodes' "$work/idle$i.out")" -eq 6 ] &&
        ! grep -q 'UCX  ERROR\|Assertion' "$work/idle$i.out" ||
        { echo "FAIL: idle$i: MPI_Finalize after no ringx call did not end cleanly"; fail=1; }
    checked="$checked idle$i"
done

private=$(hostfile "$work/hp" 2 2)

# Under valgrind on the private hosts (TCP between them): the hierarchical
# algorithms (the default choice at 2 x 2), the mailboxes inside a host,
# the connection of communicators across hosts; no error or leak record
# with a ringx frame.
if command -v valgrind >/dev/null 2>&1; then
    RINGX_MPIRUN_ARGS="$private" "$here/valgrind.sh" "$bindir/ringx_correctness" --quick \
        --watchdog 0 --expect-multi-node >"$work/valgrind.out" 2>&1 ||
        { echo "FAIL: valgrind across hosts"; fail=1; }
    expect valgrind "0 failures" "wrong results under valgrind across hosts"
    checked="$checked valgrind"
fi

# Beside Open MPI's pml ucx (as on clusters, see pml_ucx.sh) on the
# private hosts: ringx's UCX worker and the pml's in every process, both
# over TCP between the hosts; blocking and nonblocking calls.
for program in ringx_correctness nonblocking; do
    args=""
    if [ "$program" = ringx_correctness ]; then
        args="--quick --expect-multi-node"
    fi
    # shellcheck disable=SC2086
    RINGX_MPIRUN_ARGS="$private" "$here/pml_ucx.sh" "$bindir/$program" $args \
        >"$work/pml_ucx-$program.out" 2>&1
    status=$?
    [ "$status" -eq 77 ] && continue
    [ "$status" -eq 0 ] || { echo "FAIL: pml_ucx-$program (mpirun)"; fail=1; }
    expect "pml_ucx-$program" " 0 failures" "wrong results, or calls not served by ringx beside pml ucx"
    checked="$checked pml_ucx-$program"
done

fault link 180 link_down
expect link "^# all results validated" "a link down for 4 s: the run did not recover"
fault kill 90 kill_rank
grep -q "^# all results validated" "$work/kill.out" &&
    { echo "FAIL: kill: the run went on as if no rank had been killed"; fail=1; }

if [ "$fail" -ne 0 ]; then
    for f in layout forced uneven $checked bench link kill; do
        echo "--- $f"
        tail -40 "$work/$f.out"
    done
    exit 1
fi
echo "PASS: across 2 and 3 test hosts (uneven too): node layout from Open MPI's locality," \
    "no direct reads across hosts even when forced, mailboxes only inside a host," \
    "results correct and served by ringx;" \
    "every algorithm forced once, the hierarchical ones at 1-3 ranks per host;" \
    "the benchmark's layout; valgrind clean across hosts; beside pml ucx;" \
    "a link down and a killed rank: no hang, no wrong result"
