/*
 * ringx_bench_stats.c - median, range and the tuner's decision (see
 * ringx_bench_stats.h).
 */
#include <stdlib.h>
#include <string.h>

#include "ringx_bench_stats.h"

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

rx_spread_t rx_spread_of(const double *t, int n)
{
    double sorted[RX_MAX_ROUNDS];
    rx_spread_t s;

    n = n < 1 ? 1 : n > RX_MAX_ROUNDS ? RX_MAX_ROUNDS : n;
    memcpy(sorted, t, (size_t)n * sizeof(*t));
    qsort(sorted, (size_t)n, sizeof(*sorted), by_value);
    s.min = sorted[0];
    s.max = sorted[n - 1];
    s.median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    return s;
}

double rx_spread_relative(const rx_spread_t *s)
{
    return s->median > 0 ? (s->max - s->min) / s->median : 0;
}

int rx_clearly_faster(const rx_spread_t *a, const rx_spread_t *b, double margin)
{
    return a->median >= 0 && a->max < b->min && a->median * (1 + margin) < b->median;
}

int rx_tune_choose(const rx_spread_t *cand, int n, int builtin, double margin)
{
    int best = builtin;
    for (int i = 0; i < n; i++) {
        if (i != builtin && rx_clearly_faster(&cand[i], &cand[builtin], margin) &&
            (best == builtin || cand[i].median < cand[best].median)) {
            best = i;
        }
    }
    return best;
}
