#!/bin/sh
# bench.sh - the benchmark's modes on a short sweep: the side-by-side
# comparison (every result validated, exit 0; synchronised and back to
# back; CSV, JSON and the plot; also with nonblocking and persistent calls,
# overlapped, beside a busy process), --write-rules, whose file ringx must
# then read and follow, and --check-rules on that file.
#   bench.sh THREE_COLLECTIVES   (RINGX_BENCH: the ringx_bench program;
#                                 RINGX_COMPONENT_DIR as for run_mpi_test.sh)
set -u
program=$1
bench=${RINGX_BENCH:?set RINGX_BENCH to the ringx_bench program}
here=$(dirname "$0")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

"$here/run_mpi_test.sh" 3 "$bench" --max-bytes 64K --time 0.002 --rounds 3 \
    --csv "$work/b.csv" --json "$work/b.json" >"$work/compare.out" 2>&1 || fail=1
grep -q "^# all results validated" "$work/compare.out" || fail=1
grep -q "^# timing: synchronised" "$work/compare.out" ||
    { echo "FAIL: the default timing is not the synchronised one"; fail=1; }
[ "$(grep -c '^allreduce,' "$work/b.csv")" -ge 10 ] || fail=1
head -1 "$work/b.csv" | grep -q ',ringx_us_min,ringx_us_max,stock_us_min,stock_us_max,ratio_min,ratio_max,noisy$' ||
    { echo "FAIL: CSV without the rounds' ranges"; fail=1; }
# the JSON holds a record per CSV row, and says how it was timed
[ "$(grep -c '"collective": ' "$work/b.json")" -eq "$(($(wc -l <"$work/b.csv") - 1))" ] ||
    { echo "FAIL: JSON and CSV disagree"; fail=1; }
# every side of every record lists its 3 rounds in order (--rounds 3)
[ "$(grep -c '"rounds_us": \[[0-9.]*, [0-9.]*, [0-9.]*\]' "$work/b.json")" -eq \
    "$(grep -c '"collective": ' "$work/b.json")" ] &&
    [ "$(grep -o '"rounds_us": \[[0-9.]*, [0-9.]*, [0-9.]*\]' "$work/b.json" | wc -l)" -eq \
        "$((2 * $(grep -c '"collective": ' "$work/b.json")))" ] ||
    { echo "FAIL: JSON without each side's rounds"; fail=1; }
grep -q '"timing": "sync"' "$work/b.json" && grep -q '"validated": true' "$work/b.json" ||
    { echo "FAIL: JSON header or end missing"; fail=1; }
if command -v gnuplot >/dev/null; then
    "$here/../../bench/plot.sh" "$work/b.csv" "$work/b.png" >/dev/null && [ -s "$work/b.png" ] ||
        { echo "FAIL: plot.sh"; fail=1; }
else
    echo "SKIP: plot.sh (no gnuplot)"
fi

"$here/run_mpi_test.sh" 2 "$bench" --max-bytes 4K --time 0.002 --rounds 2 --timing back-to-back \
    >"$work/b2b.out" 2>&1 || fail=1
grep -q "^# all results validated" "$work/b2b.out" && grep -q "^# timing: back to back" "$work/b2b.out" ||
    { echo "FAIL: --timing back-to-back"; cat "$work/b2b.out"; fail=1; }

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

grep -q "^# ringx_bench --write-rules, np=3, .*margin 0.05" "$work/rules" &&
    grep -q "^# np=3 allreduce 8 B: built-in [a-z_]* [0-9.]* \[[0-9.]*-[0-9.]*\]" "$work/rules" ||
    { echo "FAIL: the rules file does not record the margin and the times seen"; fail=1; }

RINGX_MPIRUN_ARGS="--mca coll_ringx_rules_file $work/rules --mca coll_ringx_verbose 2" \
    "$here/run_mpi_test.sh" 3 "$program" >"$work/use.out" 2>&1 || fail=1
[ "$(grep -c '(rules file)' "$work/use.out")" -eq 9 ] ||
    { echo "FAIL: ringx did not follow the rules file"; fail=1; }

# the check of the rules: a verdict per size and a summary (performance is
# not asserted), and a refusal while ringx itself reads the file
"$here/run_mpi_test.sh" 3 "$bench" --max-bytes 4K --time 0.002 --rounds 3 \
    --check-rules "$work/rules" >"$work/check.out" 2>&1 || fail=1
grep -q "^# check of .* at np=3 (margin 0.05, 3 rounds): helps [0-9]*, within noise [0-9]*, HURTS [0-9]*, same algorithm as built-in [0-9]*, no rule 0" \
    "$work/check.out" && grep -q "^# all results validated" "$work/check.out" ||
    { echo "FAIL: --check-rules"; fail=1; }
RINGX_MPIRUN_ARGS="--mca coll_ringx_rules_file $work/rules" \
    "$here/run_mpi_test.sh" 3 "$bench" --max-bytes 4K --time 0.002 --rounds 1 \
    --check-rules "$work/rules" >"$work/refused.out" 2>&1 &&
    { echo "FAIL: --check-rules ran while ringx read the rules file"; fail=1; }
grep -q "run it without coll_ringx_rules_file" "$work/refused.out" ||
    { echo "FAIL: --check-rules refusal not explained"; fail=1; }

if [ "$fail" -ne 0 ]; then
    for f in compare.out tune.out rules use.out check.out refused.out; do
        echo "--- $f"; cat "$work/$f"
    done
    exit 1
fi
echo "PASS: comparison validated (synchronised and back to back, CSV, JSON, plot); rules written, read, followed and checked"
