#!/usr/bin/env bash
# The main job on a fresh machine: installs the packages, builds ringx,
# installs it into ./_install and runs the ringx-vs-stock benchmark on
# NP local ranks (default 4) with host memory.  Extra arguments go to
# ringx_bench (e.g. --max-bytes 16M, --coll allreduce, --dtype double).
# Writes results/bench-npN.{txt,csv,json,png}.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
np=${NP:-4}
prefix="$top/_install"

"$top/scripts/install-deps.sh"
"$top/scripts/build.sh" --prefix="$prefix"
make -C "$top/_build" install >/dev/null

env_lines=$("$top/scripts/ringx-env.sh" "$prefix/lib/openmpi")
eval "$env_lines"
# The flags mpirun needs here: as root, and with more ranks than cores
# (Open MPI gives each core one slot).
cores=$(lscpu -p=Core,Socket 2>/dev/null | grep -v '^#' | sort -u | wc -l)
run_flags=()
if [ "$(id -u)" -eq 0 ]; then
    run_flags+=(--allow-run-as-root)
fi
if [ "$np" -gt "${cores:-1}" ]; then
    run_flags+=(--oversubscribe)
fi

mkdir -p "$top/results"
out="$top/results/bench-np$np"
echo "main.sh: ringx installed in $prefix/lib/openmpi; benchmarking on $np ranks"
mpirun "${run_flags[@]}" -np "$np" "$prefix/bin/ringx_bench" --csv "$out.csv" --json "$out.json" "$@" | tee "$out.txt"
"$top/bench/plot.sh" "$out.csv" "$out.png"
cat <<EOT

main.sh: done.
  table: $out.txt
  data:  $out.csv, $out.json
  plot:  $out.png
To use ringx in your own runs (check it with --mca coll_ringx_verbose 1):
$(echo "$env_lines" | sed "s/^/  /")
  mpirun ${run_flags[*]:+${run_flags[*]} }-np $np ./your_program
EOT
