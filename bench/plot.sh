#!/usr/bin/env bash
# Plots a ringx_bench CSV, one column per collective: above, bus bandwidth
# against size on log scales (every size readable, 8 B to 64 MiB), ringx
# next to the stock collectives, bars from the slowest to the fastest
# round; below, the ratio ringx / stock (stock time / ringx time, log scale)
# with the min-max of the rounds' ratios, 1.0 marked.  Usage: plot.sh CSV PNG
set -euo pipefail
csv=$1
png=$2
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot not installed (apt-get install gnuplot-nox)" >&2; exit 1; }
head -1 "$csv" | grep -q ',ratio_max,' ||
    { echo "plot.sh: $csv has no ranges (written by an older ringx_bench)" >&2; exit 1; }
# Columns: see the header line ringx_bench writes (bench/ringx_bench_report.c).
np=$(awk -F, 'NR == 2 { print $4 }' "$csv")
what=$(awk -F, 'NR == 2 { printf "%s %s, %s memory, %s calls, %s timing, median of %s rounds%s",
                          $5, $6, $7, $18, $22, $23, ($19 > 0 ? ", load " $19 : "") }' "$csv")
day=$(date -r "$csv" +%F)
colls=$(awk -F, 'NR > 1 { print $1 }' "$csv" | uniq | tr '\n' ' ')
ncolls=$(echo "$colls" | wc -w)
{
    echo "set terminal pngcairo size $((520 * ncolls)),820 font ',10'"
    echo "set output '$png'"
    echo "set datafile separator ','"
    echo "set termoption noenhanced"
    echo "set logscale x 2"
    echo "set format x '%.0b%B'"
    echo "set xtics 8"
    echo "set grid"
    echo "set multiplot layout 2,$ncolls title 'ringx vs stock Open MPI, np=$np, $what, $day'"
    echo "set logscale y 10"
    echo "set format y '%g'"
    echo "set ylabel 'bus bandwidth (GB/s)'"
    echo "set key top left"
    for c in $colls; do
        echo "set title '$c'"
        echo "plot '$csv' using (strcol(1) eq '$c' ? \$2 : 1/0):11:(\$11*\$9/\$25):(\$11*\$9/\$24) with yerrorlines pt 7 ps 0.6 title 'ringx', \\"
        echo "     '$csv' using (strcol(1) eq '$c' ? \$2 : 1/0):15:(\$15*\$13/\$27):(\$15*\$13/\$26) with yerrorlines pt 5 ps 0.6 title 'stock'"
    done
    # ratios on a log scale too: 2x faster and 2x slower lie as far from 1.0
    echo "set logscale y 2"
    echo "set ytics (0.25, 0.5, 1, 1.5, 2, 4, 8, 16, 32, 64)"
    echo "set format y '%g'"
    echo "set xlabel 'buffer size S (bytes)'"
    echo "set ylabel 'ratio ringx / stock (higher: ringx faster)'"
    echo "set key top right"
    for c in $colls; do
        echo "set title '$c: ratio, min-max of the rounds'"
        echo "plot '$csv' using (strcol(1) eq '$c' ? \$2 : 1/0):16:28:29 with yerrorlines pt 7 ps 0.6 lc rgb '#1f77b4' title 'ringx / stock', \\"
        echo "     1 with lines dt 2 lw 1.5 lc rgb 'black' title '1.0'"
    done
    echo "unset multiplot"
} | gnuplot
echo "plot.sh: wrote $png"
