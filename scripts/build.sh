#!/usr/bin/env bash
# Configures and builds ringx out of tree in _build, or RINGX_BUILD_DIR
# (relative to the top of the tree; extra arguments go to configure).  Used
# by test.sh and main.sh.  Where install-deps.sh fetched
# the Open MPI source for headers the installed ones lack, configure gets
# it as --with-ompi-src.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -x configure ] || ./autogen.sh
if [ -f config.status ]; then
    # autoconf refuses an out-of-tree build beside an in-tree one.
    echo "build.sh: removing the in-tree configuration (make distclean) to build in _build"
    make distclean >/dev/null
fi
extra=()
if [ -d "$top/_deps/openmpi-src" ]; then
    extra+=(--with-ompi-src="$top/_deps/openmpi-src")
fi
build=${RINGX_BUILD_DIR:-_build}
mkdir -p "$build"
cd "$build"
"$top/configure" "${extra[@]}" "$@"
make -j"$(nproc)"
