#!/usr/bin/env bash
# Configures and builds ringx out of tree in _build (extra arguments go to
# configure).  Used by test.sh and main.sh.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -x configure ] || ./autogen.sh
mkdir -p _build
cd _build
../configure "$@"
make -j"$(nproc)"
