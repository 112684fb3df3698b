#!/bin/sh
# hosts.sh - test hosts on one machine, made as network namespaces (root).
#
#   hosts.sh up DIR N [RATE [shared|private]]
#                         N hosts (1..8): namespaces rx<id>h1..hN joined by a
#                         bridge, each host with its own hostname; writes
#                         DIR/hostfile (no slots: pass them with --host or
#                         -np), DIR/agent (the launcher's plm_rsh_agent),
#                         DIR/mpirun_args (the mpirun options that use them),
#                         and DIR/state (what to remove); with RATE (tc's
#                         units, e.g. 1gbit, 10gbit) every host's link is
#                         shaped to it by tbf (this kernel has no netem), "-"
#                         for none; "private" gives each host its own
#                         /dev/shm and System V IPC, so that UCX cannot pass
#                         messages between hosts through shared memory
#                         either (for benchmarks over the shaped links;
#                         default "shared": what namespaces alone give)
#   hosts.sh down DIR     removes what "up" made (also after a failed "up")
#   hosts.sh link DIR I up|down
#                         takes host I's link (1..N) down or up again, as a
#                         pulled cable would
#   RINGX_TEST_HOSTS=0    "up" only says SKIP (the Debian 13 chroot's suite)
#
# Only the namespaces, veth pairs and bridge made here are touched; their
# addresses are in a /24 of 10.0.0.0/8 chosen from the process id.  The
# hosts share the machine's memory, so UCX's shared-memory transports still
# connect their processes; what makes them separate nodes for Open MPI is
# the hostname each daemon gets (unshare --uts), and that is what ringx
# must use to tell who shares a node.  Exits 77 (SKIP) without root or ip.
set -u
cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
    echo "usage: $0 up DIR N | down DIR | link DIR I up|down" >&2
    exit 2
fi

down() {
    [ -r "$dir/state" ] || return 0
    # state: the namespaces and the bridge, one per line
    while read -r kind name; do
        case $kind in
        netns) ip netns del "$name" 2>/dev/null ;;
        bridge) ip link del "$name" 2>/dev/null ;;
        esac
    done <"$dir/state"
    rm -f "$dir/state"
}

if [ "$cmd" = down ]; then
    down
    exit 0
fi
if [ "$cmd" = link ]; then
    host=$(sed -n "${3:-0}p" "$dir/hostfile" 2>/dev/null)
    case ${4:-} in up | down) ;; *) host= ;; esac
    [ -n "$host" ] || { echo "usage: $0 link DIR I up|down (I: a host of DIR)" >&2; exit 2; }
    # the bridge's end of the host's veth pair (named in "up")
    exec ip link set "rxv${host#rx}" "$4"
fi
[ "$cmd" = up ] || { echo "$0: unknown command $cmd" >&2; exit 2; }
n=${3:-2}
rate=${4:-}
[ "$rate" = - ] && rate=
memory=${5:-shared}
case $memory in shared | private) ;; *) echo "$0: shared or private, not $memory" >&2; exit 2 ;; esac
if [ "${RINGX_TEST_HOSTS:-1}" = 0 ]; then
    # scripts/debian13.sh: the multi-host set runs in the machine's own suite
    echo "SKIP: test hosts turned off (RINGX_TEST_HOSTS=0)"
    exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: needs root for network namespaces"
    exit 77
fi
if ! command -v ip >/dev/null 2>&1 || ! command -v unshare >/dev/null 2>&1; then
    echo "SKIP: needs ip (iproute2) and unshare (util-linux) for network namespaces"
    exit 77
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)     # the files written name each other by absolute paths
id=$(($$ % 100000))
net="10.$((100 + $$ % 100)).$(($$ / 100 % 250 + 1))"
bridge="rxb$id"
: >"$dir/state"
fail() {
    echo "hosts.sh: $1" >&2
    down
    exit 1
}
ip link add "$bridge" type bridge 2>/dev/null || fail "cannot create bridge $bridge"
echo "bridge $bridge" >>"$dir/state"
ip addr add "$net.1/24" dev "$bridge" && ip link set "$bridge" up || fail "cannot configure $bridge"
: >"$dir/hostfile"
i=1
while [ "$i" -le "$n" ]; do
    host="rx${id}h$i"
    ip netns add "$host" 2>/dev/null || fail "cannot create namespace $host"
    echo "netns $host" >>"$dir/state"
    ip link add "rxv${id}h$i" type veth peer name eth0 netns "$host" &&
        ip link set "rxv${id}h$i" master "$bridge" up &&
        ip -n "$host" addr add "$net.$((i + 1))/24" dev eth0 &&
        ip -n "$host" link set eth0 up &&
        ip -n "$host" link set lo up || fail "cannot connect $host"
    if [ -n "$rate" ]; then
        # burst: at least rate x 1 ms (tbf needs a burst of a timer tick)
        ip netns exec "$host" tc qdisc add dev eth0 root tbf rate "$rate" burst 4mbit \
            latency 50ms || fail "cannot shape $host's link to $rate (tc tbf)"
    fi
    echo "$host" >>"$dir/hostfile"
    i=$((i + 1))
done
# The agent runs the launcher's command (an Open MPI daemon) inside the
# host's namespace, with the host's name as its hostname.
if [ "$memory" = shared ]; then
    cat >"$dir/agent" <<'AGENT'
#!/bin/sh
host=$1
shift
exec ip netns exec "$host" unshare --uts sh -c 'hostname "$0" && exec sh -c "$*"' "$host" "$@"
AGENT
else
    cat >"$dir/agent" <<'AGENT'
#!/bin/sh
host=$1
shift
exec ip netns exec "$host" unshare --uts --ipc --mount sh -c \
    'mount -t tmpfs -o size=50% tmpfs /dev/shm && hostname "$0" && exec sh -c "$*"' "$host" "$@"
AGENT
fi
chmod +x "$dir/agent"
# Every host believes it has all of the machine's cores, but they share
# them: without mpi_yield_when_idle each rank spins while the peer it waits
# for is descheduled (measured here, 4 ranks on 2 hosts of a 2-core
# machine: an 8 B allreduce took 12 ms spinning, 0.2 ms yielding).
echo "--hostfile $dir/hostfile --mca plm_rsh_agent $dir/agent --mca oob_tcp_if_include $net.0/24" \
    "--mca btl_tcp_if_include $net.0/24 --mca mpi_yield_when_idle 1" >"$dir/mpirun_args"
echo "hosts.sh: $n hosts on $net.0/24${rate:+, links shaped to $rate}, $memory memory:" \
    "$(tr '\n' ' ' <"$dir/hostfile")"
