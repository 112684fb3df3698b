#!/usr/bin/env bash
# The main job on a fresh machine: installs the packages, builds ringx,
# installs it into ./_install and runs the ringx-vs-stock benchmark on
# NP local ranks (default 4) with host memory.  Extra arguments go to
# ringx_bench (e.g. --max-bytes 16M, --coll allreduce, --dtype double).
# Writes results/bench-npN.{txt,csv,png}.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
np=${NP:-4}
prefix="$top/_install"

"$top/scripts/install-deps.sh"
"$top/scripts/build.sh" --prefix="$prefix"
make -C "$top/_build" install >/dev/null

ompi_dir=$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')
export OMPI_MCA_mca_base_component_path="$ompi_dir:$prefix/lib/openmpi"
root_flags=()
if [ "$(id -u)" -eq 0 ]; then
    root_flags=(--allow-run-as-root)
fi

mkdir -p "$top/results"
out="$top/results/bench-np$np"
echo "main.sh: ringx installed in $prefix/lib/openmpi; benchmarking on $np ranks"
mpirun "${root_flags[@]}" --oversubscribe -np "$np" \
    "$prefix/bin/ringx_bench" --csv "$out.csv" "$@" | tee "$out.txt"
"$top/bench/plot.sh" "$out.csv" "$out.png"
cat <<EOT

main.sh: done.
  table: $out.txt
  data:  $out.csv
  plot:  $out.png
To use ringx in your own runs:
  export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path"
EOT
