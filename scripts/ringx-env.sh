#!/bin/sh
# Prints the environment that makes Open MPI's ranks load ringx from
# COMPONENT_DIR (a directory holding mca_coll_ringx.so; empty: Open MPI's
# own components only), as export lines:
#
#   eval "$(scripts/ringx-env.sh DIR)"
#
# Open MPI searches the directories of mca_base_component_path for
# components; the variable replaces the default path, so Open MPI's own
# component directory follows DIR.  Open MPI 5's mpirun (PRRTE) passes the
# OMPI_MCA_ variables to PMIx as well, which then looks for its own
# plugins in that path and warns about every file there that is not one
# ("bad prefix"); PMIX_MCA_mca_base_component_path keeps PMIx on its own
# plugin directory.
set -eu

if [ "$#" -ne 1 ]; then
    echo "usage: $0 COMPONENT_DIR" >&2
    exit 2
fi
dir=$1

path_of() {
    ompi_info --path "$1" --parsable 2>/dev/null | sed -n "s/^path:$1://p"
}

pkglibdir=$(path_of pkglibdir)
if [ -z "$pkglibdir" ]; then
    echo "$0: ompi_info does not say where Open MPI's components are (is Open MPI installed?)" >&2
    exit 1
fi
# (Open MPI 4.1 finds no component at all when a directory of the path
# does not exist)
echo "export OMPI_MCA_mca_base_component_path=\"${dir:+$dir:}$pkglibdir\""

major=$(ompi_info --version 2>/dev/null | sed -n 's/^Open MPI v\([0-9]*\).*/\1/p')
if [ "${major:-4}" -ge 5 ]; then
    # PMIx's plugins live in a pmix directory beside the libpmix that
    # libmpi uses.
    libpmix=$(ldd "$(path_of libdir)/libmpi.so" 2>/dev/null | awk '/libpmix/ { print $3; exit }')
    libpmix=$(readlink -f "${libpmix:-/nonexistent}" || true)
    if [ -n "$libpmix" ] && [ -d "$(dirname "$libpmix")/pmix" ]; then
        echo "export PMIX_MCA_mca_base_component_path=\"$(dirname "$libpmix")/pmix\""
    fi
fi
