#!/usr/bin/env bash
# Configures and builds ringx out of tree in _build (extra arguments go to
# configure).  Used by test.sh and main.sh.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -x configure ] || ./autogen.sh
if [ -f config.status ]; then
    # autoconf refuses an out-of-tree build beside an in-tree one.
    echo "build.sh: removing the in-tree configuration (make distclean) to build in _build"
    make distclean >/dev/null
fi
mkdir -p _build
cd _build
../configure "$@"
make -j"$(nproc)"
