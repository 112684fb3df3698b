#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs the packages, builds
# ringx with warnings as errors and runs `make check` (unit tests, then the
# MPI tests under mpirun at 1 to 8 ranks) against this machine's Open MPI,
# with CUDA where the toolkit is installed; then builds it without CUDA too
# and runs the unit tests of that build, and once more with the undefined
# behaviour sanitizer for the unit tests and a set of MPI tests.  Then, on
# a Debian 12 machine as root, the same again against Open MPI 5.0 in a
# Debian 13 chroot (scripts/debian13.sh), else it says why not (SKIP).
#
#   scripts/test.sh [--only host|debian13]
#
#   --only host       only against this machine's Open MPI
#   --only debian13   only in the Debian 13 chroot
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
only=all
while [ "$#" -gt 0 ]; do
    case "$1" in
    --only)
        [ "$#" -ge 2 ] || { echo "test.sh: --only needs host or debian13" >&2; exit 2; }
        only=$2
        shift 2
        ;;
    --only=*)
        only=${1#--only=}
        shift
        ;;
    *)
        echo "usage: $0 [--only host|debian13]" >&2
        exit 2
        ;;
    esac
done
case "$only" in
all | host | debian13) ;;
*) echo "test.sh: --only $only: not host or debian13" >&2; exit 2 ;;
esac

ompi_version() {
    ompi_info --version 2>/dev/null | sed -n 's/^Open MPI v\([0-9.]*\).*/\1/p'
}

run_host() {
    local logs
    "$top/scripts/install-deps.sh"
    "$top/scripts/build.sh" --enable-werror
    cd "$top/_build"
    if ! make check -j1; then
        echo "test.sh: FAILED against Open MPI $(ompi_version); logs:" >&2
        logs=$(find . -name '*.log' -newer Makefile -path './tests/*')
        for f in $logs; do
            grep -q ':test-result: \(FAIL\|ERROR\)' "${f%.log}.trs" 2>/dev/null && tail -n 40 "$f" >&2
        done
        exit 1
    fi
    echo "test.sh: all tests passed against Open MPI $(ompi_version)"
    build_without_cuda
    run_sanitized
}

# The unit tests (no MPI), which every build runs.
unit_tests=(tests/unit/check_schedule tests/unit/check_reduce tests/unit/check_memtype)

# Another build of ringx in DIR (below the top of the tree), warnings as
# errors, configure given ARGS; WHAT names it if it fails.
build_variant() { # DIR WHAT ARGS...
    local dir=$1 what=$2
    shift 2
    rm -rf "${top:?}/$dir"      # objects of another compiler or flags would stay
    mkdir -p "$top/$dir"
    RINGX_BUILD_DIR=$dir "$top/scripts/build.sh" --enable-werror "$@" > "$top/$dir/build.log" 2>&1 || {
        tail -n 40 "$top/$dir/build.log" >&2
        echo "test.sh: FAILED: the build $what" >&2
        exit 1
    }
}

# The build without CUDA (the suite above ran with it where the toolkit is
# installed): warnings as errors, and its unit tests.  It is made with clang
# where clang is installed, so that a second compiler's warnings fail too
# (clang warned where gcc did not).
build_without_cuda() {
    local cc=()
    if ! grep -q '^#define RINGX_HAVE_CUDA\|-DRINGX_HAVE_CUDA=1' "$top/_build/Makefile"; then
        echo "test.sh: the suite above ran on a build without CUDA (no CUDA toolkit here)"
        return
    fi
    if command -v clang >/dev/null 2>&1; then
        cc=(CC=clang)
    fi
    echo "test.sh: building without CUDA (_build-nocuda, ${cc[*]:-CC from configure}) and running its unit tests"
    build_variant _build-nocuda "without CUDA" --without-cuda "${cc[@]}"
    grep 'GPU support' "$top/_build-nocuda/build.log" || true
    make -C "$top/_build-nocuda" check TESTS="${unit_tests[*]}" >/dev/null || {
        tail -n 40 "$top"/_build-nocuda/tests/unit/*.log >&2
        echo "test.sh: FAILED: unit tests of the build without CUDA" >&2
        exit 1
    }
    echo "test.sh: the build without CUDA passed its unit tests against Open MPI $(ompi_version)"
}

# A build with the undefined behaviour sanitizer (every report ends the
# process: the test fails), its unit tests and MPI tests that cover the
# engines (blocking, nonblocking, persistent), direct reads, the outboxes,
# every algorithm and packed allgathers.  It found a memcpy from NULL that
# every other test passed.
run_sanitized() {
    local ubsan="-fsanitize=undefined -fno-sanitize-recover=undefined"
    local tests=("${unit_tests[@]}" tests/mpi/correctness-np3.mpi tests/mpi/nonblocking-np5.mpi
        tests/mpi/persistent_matrix-np3.mpi tests/mpi/direct_read-np3.mpi tests/mpi/outbox-np5.mpi
        tests/mpi/algorithms-np5.mpi tests/mpi/allgather_types-np3.mpi)
    echo "test.sh: building with $ubsan (_build-ubsan) and running some of the tests"
    build_variant _build-ubsan "with the sanitizer" CFLAGS="-g -O1 $ubsan" LDFLAGS="$ubsan"
    UBSAN_OPTIONS=print_stacktrace=1 make -C "$top/_build-ubsan" check TESTS="${tests[*]}" || {
        grep -h -A 12 'runtime error' "$top"/_build-ubsan/tests/*/*.log >&2 || true
        echo "test.sh: FAILED: tests with the undefined behaviour sanitizer" >&2
        exit 1
    }
    echo "test.sh: the tests with the undefined behaviour sanitizer passed against Open MPI $(ompi_version)"
}

# Whether the chroot run makes sense here: it adds Open MPI 5.0 where the
# machine has another series.
debian13_skip_reason() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "needs root for the Debian 13 chroot"
    elif ! command -v apt-get >/dev/null 2>&1; then
        echo "needs apt-get (Debian or Ubuntu) for the Debian 13 chroot"
    elif [ "$(ompi_version | cut -d. -f1)" = 5 ]; then
        echo "this machine's Open MPI is already 5.0"
    fi
}

run_debian13() {
    local why status=0
    why=$(debian13_skip_reason)
    if [ -n "$why" ]; then
        echo "SKIP: Open MPI 5.0 in Debian 13: $why"
        return
    fi
    "$top/scripts/debian13.sh" scripts/test.sh --only host || status=$?
    if [ "$status" -eq 77 ]; then
        echo "SKIP: Open MPI 5.0 in Debian 13: no chroot could be made (see above)"
    elif [ "$status" -ne 0 ]; then
        echo "test.sh: FAILED in the Debian 13 chroot (Open MPI 5.0)" >&2
        exit "$status"
    fi
}

case "$only" in
host) run_host ;;
debian13) run_debian13 ;;
all)
    (run_host)
    run_debian13
    echo "test.sh: done (this machine's Open MPI $(ompi_version), then Open MPI 5.0 in Debian 13 unless skipped above)"
    ;;
esac
