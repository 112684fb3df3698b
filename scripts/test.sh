#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs the packages, builds
# ringx with warnings as errors and runs `make check` (unit tests, then the
# MPI tests under mpirun at 1 to 8 ranks).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh"
"$top/scripts/build.sh" --enable-werror
cd "$top/_build"
if ! make check -j1; then
    echo "test.sh: FAILED; logs:" >&2
    find . -name '*.log' -newer Makefile -path './tests/*' -exec tail -n 40 {} + >&2 || true
    exit 1
fi
echo "test.sh: all tests passed"
