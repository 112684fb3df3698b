#!/usr/bin/env bash
# Runs a command on this tree inside a Debian 13 (trixie: Open MPI 5.0,
# UCX 1.18) chroot, for testing ringx against Open MPI 5 on a Debian 12
# machine:
#
#   scripts/debian13.sh [COMMAND...]      (default: scripts/test.sh --only host)
#
# As root.  The chroot is made once with debootstrap from the Debian mirror
# this machine's apt already uses (RINGX_DEBIAN_MIRROR overrides it) and
# kept in RINGX_CHROOT (default /var/tmp/ringx-debian13); the tree's files
# (git's tracked and not-ignored ones) are copied to /ringx inside it, fresh
# for every run, and the command runs there; the packages the command needs
# are installed by the project's own scripts inside.  /usr/local/cuda is
# mounted read-only inside when present, so the CUDA build is tested too.
# Everything mounted is unmounted at the end, also on failure.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
root=${RINGX_CHROOT:-/var/tmp/ringx-debian13}
suite=trixie

if [ "$(id -u)" -ne 0 ]; then
    echo "debian13: needs root (debootstrap, mounts, chroot)" >&2
    exit 77
fi

debian_mirror() {
    if [ -n "${RINGX_DEBIAN_MIRROR:-}" ]; then
        echo "$RINGX_DEBIAN_MIRROR"
        return
    fi
    # The repository this machine's apt takes Debian's own packages from.
    apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Identifier: Packages' 2>/dev/null |
        awk '$2 !~ /-(security|updates|backports)$/ && $1 ~ /\/debian\/?$/ { print $1; exit }'
}

make_chroot() {
    local mirror
    [ -f "$root/.ringx-ready" ] && return
    mirror=$(debian_mirror)
    if [ -z "$mirror" ]; then
        echo "debian13: this machine's apt has no Debian mirror; set RINGX_DEBIAN_MIRROR" >&2
        exit 77
    fi
    if ! command -v debootstrap >/dev/null 2>&1; then
        echo "debian13: installing debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
    fi
    echo "debian13: debootstrap $suite from $mirror into $root"
    rm -rf "$root"
    mkdir -p "$root"
    debootstrap --variant=minbase --include=ca-certificates "$suite" "$root" "$mirror" \
        > "$root.debootstrap.log" 2>&1 || {
        tail -n 20 "$root.debootstrap.log" >&2
        exit 1
    }
    touch "$root/.ringx-ready"
}

mounted=()
mount_in() {    # mount_in TARGET MOUNT-ARGS...
    local target=$root$1
    shift
    mkdir -p "$target"
    mount "$@" "$target"
    mounted=("$target" "${mounted[@]}")
}

unmount_all() {
    for m in "${mounted[@]}"; do
        umount -l "$m" 2>/dev/null || true
    done
    mounted=()
}

copy_tree() {
    rm -rf "$root/ringx"
    mkdir -p "$root/ringx"
    # (a tracked file deleted in the work tree is left out)
    (cd "$top" && git ls-files -z --cached --others --exclude-standard |
        tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -C "$root/ringx" -xf -
}

make_chroot
trap unmount_all EXIT
mount_in /proc -t proc proc
mount_in /sys --bind /sys
mount_in /dev --bind /dev
mount_in /dev/pts -t devpts devpts
# UCX's and Open MPI's shared memory: a tmpfs of the chroot's own.
mount_in /dev/shm -t tmpfs -o size=50% tmpfs
if [ -d /usr/local/cuda/bin ]; then
    mount_in /usr/local/cuda --bind -o ro "$(readlink -f /usr/local/cuda)"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
# the host name resolves inside as outside (Open MPI 4.1 waits seconds per
# launch where it does not)
cp /etc/hosts "$root/etc/hosts" 2>/dev/null || true
copy_tree

if [ "$#" -eq 0 ]; then
    set -- scripts/test.sh --only host
fi
echo "debian13: in $root (Debian $(cat "$root/etc/debian_version")): $*"
status=0
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TERM="${TERM:-dumb}" RINGX_TEST_HOSTS=0 bash -c 'cd /ringx && "$@"' debian13 "$@" || status=$?
exit "$status"
