#!/usr/bin/env bash
# Plots a ringx_bench CSV: bus bandwidth against size, ringx next to the
# stock collectives, one panel per collective.  Usage: plot.sh CSV PNG
set -euo pipefail
csv=$1
png=$2
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot not installed (apt-get install gnuplot-nox)" >&2; exit 1; }
np=$(awk -F, 'NR == 2 { print $4 }' "$csv")
what=$(awk -F, 'NR == 2 { print $5 " " $6 ", " $7 " memory" }' "$csv")
colls=$(awk -F, 'NR > 1 { print $1 }' "$csv" | uniq | tr '\n' ' ')
ncolls=$(echo "$colls" | wc -w)
{
    echo "set terminal pngcairo size $((520 * ncolls)),440 font ',10'"
    echo "set output '$png'"
    echo "set datafile separator ','"
    echo "set termoption noenhanced"
    echo "set logscale x 2"
    echo "set format x '%.0b%B'"
    echo "set xlabel 'buffer size S (bytes)'"
    echo "set ylabel 'bus bandwidth (GB/s)'"
    echo "set key top left"
    echo "set grid"
    echo "set multiplot layout 1,$ncolls title 'ringx vs stock Open MPI, np=$np, $what'"
    for c in $colls; do
        echo "set title '$c'"
        echo "plot '$csv' using (strcol(1) eq '$c' ? \$2 : 1/0):11 with linespoints title 'ringx', \\"
        echo "     '$csv' using (strcol(1) eq '$c' ? \$2 : 1/0):15 with linespoints title 'stock'"
    done
    echo "unset multiplot"
} | gnuplot
echo "plot.sh: wrote $png"
