#!/bin/sh
# bench.sh - the benchmark's two modes on a short sweep: the side-by-side
# comparison (every result validated, exit 0; also with nonblocking and
# persistent calls, overlapped, beside a busy process), and --write-rules, whose file ringx must then read and
# follow.
#   bench.sh THREE_COLLECTIVES   (RINGX_BENCH: the ringx_bench program;
#                                 RINGX_COMPONENT_DIR as for run_mpi_test.sh)
set -u
program=$1
bench=${RINGX_BENCH:?set RINGX_BENCH to the ringx_bench program}
here=$(dirname "$0")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

"$here/run_mpi_test.sh" 3 "$bench" --max-bytes 64K --time 0.002 --rounds 1 \
    --csv "$work/b.csv" >"$work/compare.out" 2>&1 || fail=1
grep -q "^# all results validated" "$work/compare.out" || fail=1
[ "$(grep -c '^allreduce,' "$work/b.csv")" -ge 10 ] || fail=1

# the nonblocking and persistent forms: validated, and served by ringx (the pvars); with
# --overlap (the overlapped calls validated and counted too) and a busy process (--load 1)
for form in nonblocking persistent; do
    "$here/run_mpi_test.sh" 3 "$bench" --max-bytes 16K --time 0.002 --rounds 1 --form "$form" \
        --overlap --load 1 >"$work/$form.out" 2>&1 || fail=1
    grep -q "^# all results validated" "$work/$form.out" ||
        { echo "FAIL: --form $form"; cat "$work/$form.out"; fail=1; }
    grep -q "overlap: ringx" "$work/$form.out" ||
        { echo "FAIL: --form $form --overlap: no overlap reported"; fail=1; }
    grep -q "^# with 1 busy process per node" "$work/$form.out" ||
        { echo "FAIL: --load 1 not reported"; fail=1; }
done

"$here/run_mpi_test.sh" 3 "$bench" --max-bytes 4K --time 0.002 --rounds 1 \
    --write-rules "$work/rules" >"$work/tune.out" 2>&1 || fail=1
for coll in allreduce allgather reduce_scatter_block; do
    grep -q "^$coll 3 3 inf " "$work/rules" || { echo "FAIL: no catch-all rule for $coll"; fail=1; }
done

RINGX_MPIRUN_ARGS="--mca coll_ringx_rules_file $work/rules --mca coll_ringx_verbose 2" \
    "$here/run_mpi_test.sh" 3 "$program" >"$work/use.out" 2>&1 || fail=1
[ "$(grep -c '(rules file)' "$work/use.out")" -eq 9 ] ||
    { echo "FAIL: ringx did not follow the rules file"; fail=1; }

if [ "$fail" -ne 0 ]; then
    for f in compare.out tune.out rules use.out; do echo "--- $f"; cat "$work/$f"; done
    exit 1
fi
echo "PASS: comparison validated; rules written, read and followed"
