#!/bin/sh
# readme_params.sh - the table under "## MCA parameters" in README.md names
# exactly the MCA parameters the built component registers: the
# coll_ringx_* parameters that `ompi_info --param coll ringx --level 9
# --parsable` lists when the build's components/ directory is on the
# component path (RINGX_COMPONENT_DIR, as for run_mpi_test.sh).  Fails,
# listing the differences, when a parameter is missing from either side or
# a row is there twice, and when ompi_info lists no ringx parameter at all
# (the component did not load).  No mpirun.
#   readme_params.sh [README]   (default: the README.md of this source tree)
set -u
here=$(cd "$(dirname "$0")" && pwd)
readme=${1:-$here/../../README.md}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The suite may run with OMPI_MCA_coll set (e.g. OMPI_MCA_coll=ringx); a
# list that leaves ringx out would keep ompi_info from opening it.
unset OMPI_MCA_coll
LC_ALL=C
export LC_ALL

if [ ! -r "$readme" ]; then
    echo "FAIL: cannot read $readme"
    exit 1
fi
if [ -z "${RINGX_COMPONENT_DIR:-}" ]; then
    echo "$0: warning: RINGX_COMPONENT_DIR is not set; using installed components only" >&2
fi
# The component path (and, on Open MPI 5, PMIx's own): scripts/ringx-env.sh.
env_lines=$("$here/../../scripts/ringx-env.sh" "${RINGX_COMPONENT_DIR:-}") || exit 2
eval "$env_lines"
echo "readme_params: component_path=${OMPI_MCA_mca_base_component_path:-}"
echo "readme_params: README: $readme"

if ! ompi_info --param coll ringx --level 9 --parsable >"$work/ompi_info.out" 2>&1; then
    echo "FAIL: ompi_info --param coll ringx --level 9 --parsable failed:"
    cat "$work/ompi_info.out"
    exit 1
fi
# mca:coll:ringx:param:coll_ringx_NAME:FIELD:VALUE, several lines per parameter
sed -n 's/^mca:coll:ringx:param:\(coll_ringx_[A-Za-z0-9_]*\):.*/\1/p' "$work/ompi_info.out" |
    sort -u >"$work/registered"
# The rows of the table in the "## MCA parameters" section (up to the next
# "## " heading) whose first cell is one parameter name in backquotes.
# shellcheck disable=SC2016
awk '/^## / { in_section = ($0 ~ /^## MCA parameters[ \t]*$/); next } in_section' "$readme" |
    sed -n 's/^| *`\(coll_ringx_[A-Za-z0-9_]*\)` *|.*/\1/p' | sort >"$work/documented.all"
uniq -d "$work/documented.all" >"$work/twice"
uniq "$work/documented.all" >"$work/documented"

fail=0
if [ ! -s "$work/registered" ]; then
    echo "FAIL: ompi_info lists no coll_ringx_* parameter: ringx was not loaded" \
        "(is mca_coll_ringx.so in RINGX_COMPONENT_DIR=${RINGX_COMPONENT_DIR:-}?); its output:"
    if [ -s "$work/ompi_info.out" ]; then cat "$work/ompi_info.out"; else echo "    (none)"; fi
    fail=1
fi
if [ ! -s "$work/documented" ]; then
    echo "FAIL: no parameter rows (| \`coll_ringx_...\` | ...) under \"## MCA parameters\" in $readme"
    fail=1
fi
comm -23 "$work/registered" "$work/documented" >"$work/undocumented"
comm -13 "$work/registered" "$work/documented" >"$work/unknown"
if [ -s "$work/registered" ] && [ -s "$work/undocumented" ]; then
    echo "FAIL: registered by ringx (ompi_info) but missing from the README's MCA parameters table:"
    sed 's/^/    /' "$work/undocumented"
    fail=1
fi
if [ -s "$work/registered" ] && [ -s "$work/unknown" ]; then
    echo "FAIL: in the README's MCA parameters table but not registered by ringx (ompi_info):"
    sed 's/^/    /' "$work/unknown"
    fail=1
fi
if [ -s "$work/twice" ]; then
    echo "FAIL: more than one row in the README's MCA parameters table for:"
    sed 's/^/    /' "$work/twice"
    fail=1
fi
if [ "$fail" -ne 0 ]; then
    exit 1
fi
echo "PASS: the README's MCA parameters table lists the $(wc -l <"$work/registered" | tr -d ' ')" \
    "parameters ompi_info shows for ringx, and no other"
