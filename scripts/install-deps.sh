#!/usr/bin/env bash
# Installs what ringx needs to build, test and benchmark, from the
# distribution's packages (Debian 12 and 13, Ubuntu 22.04 and later).
#
# Where the installed Open MPI devel headers lack internal headers that
# ringx's build needs (Debian 13's libopenmpi-dev for Open MPI 5.0), also
# fetches the matching Open MPI source with apt-get source into
# _deps/openmpi-src, which scripts/build.sh hands to configure
# (--with-ompi-src).  Only headers are read from it; nothing there is
# built.  The deb-src entry it needs lives in a private apt directory under
# _deps: the machine's apt configuration is not changed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

packages=(build-essential autoconf automake libtool pkg-config
          libopenmpi-dev openmpi-bin libucx-dev check valgrind gnuplot-nox dpkg-dev
          iproute2)

install_packages() {
    local missing=() sudo=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$p")
    done
    if [ ${#missing[@]} -eq 0 ]; then
        echo "install-deps: all packages present"
        return
    fi
    if [ "$(id -u)" -ne 0 ]; then
        if ! command -v sudo >/dev/null 2>&1; then
            echo "install-deps: missing packages: ${missing[*]}" >&2
            echo "install-deps: installing them needs root, and there is no sudo here; as root, run:" >&2
            echo "    apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
            echo "install-deps: then run $0 again" >&2
            exit 1
        fi
        sudo=(sudo)
    fi
    echo "install-deps: installing ${missing[*]}"
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}"
}

# Whether the Open MPI headers ringx includes (scripts/ompi-headers.txt,
# which configure probes too) compile with what is installed: mpicc's
# include directories, and PMIx's for Open MPI 5.
ompi_headers_complete() {
    local flags
    flags="$(mpicc --showme:compile) $(pkg-config --cflags pmix 2>/dev/null || true)"
    # shellcheck disable=SC2086
    sed 's/.*/#include "&"/' "$top/scripts/ompi-headers.txt" |
        gcc $flags -E -x c - -o /dev/null 2>/dev/null
}

# A private apt setup with a deb-src line for every deb line of the
# machine's sources, for apt-get source.
private_apt_options() {
    local dir=$1
    mkdir -p "$dir/lists/partial" "$dir/archives/partial"
    apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' 'Identifier: Packages' |
        sort -u | awk '{ print "deb-src " $1 " " $2 " " $3 }' > "$dir/sources.list"
    printf '%s\n' -o "Dir::Etc::SourceList=$dir/sources.list" -o "Dir::Etc::SourceParts=/nonexistent" \
        -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache::Archives=$dir/archives" \
        -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache=" -o "APT::Sandbox::User=$(id -un)" \
        -o "Debug::NoLocking=1"
}

fetch_ompi_source() {
    local deps="$top/_deps" src_pkg version opts
    src_pkg=$(dpkg-query -W -f='${source:Package}' libopenmpi-dev)
    version=$(dpkg-query -W -f='${source:Version}' libopenmpi-dev)
    if [ -f "$deps/openmpi-src/.ringx-version" ] &&
        [ "$(cat "$deps/openmpi-src/.ringx-version")" = "$version" ]; then
        echo "install-deps: Open MPI $version source already in $deps/openmpi-src"
        return
    fi
    echo "install-deps: the installed Open MPI devel headers are incomplete;" \
         "fetching $src_pkg $version's source (apt-get source) for the missing ones"
    mkdir -p "$deps/apt"
    private_apt_options "$deps/apt" > "$deps/apt/options"
    mapfile -t opts < "$deps/apt/options"
    # A repository without sources (a vendor's) only costs a warning.
    apt-get "${opts[@]}" update -qq || echo "install-deps: warning: some source indexes are missing"
    rm -rf "$deps/openmpi-src" "$deps/source"
    mkdir -p "$deps/source"
    (cd "$deps/source" && apt-get "${opts[@]}" source -qq "$src_pkg=$version")
    ln -s "source/$(cd "$deps/source" && find . -mindepth 1 -maxdepth 1 -type d | head -n 1)" \
        "$deps/openmpi-src"
    echo "$version" > "$deps/openmpi-src/.ringx-version"
    echo "install-deps: Open MPI source in $deps/openmpi-src (configure --with-ompi-src)"
}

install_packages
if ! ompi_headers_complete; then
    fetch_ompi_source
fi
