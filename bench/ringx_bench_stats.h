/*
 * ringx_bench_stats.h - the benchmark's statistics, without MPI (unit-tested
 * by tests/unit/check_bench_stats.c): median and range of interleaved
 * rounds, the noise test, and the tuner's decision.
 */
#ifndef RINGX_BENCH_STATS_H
#define RINGX_BENCH_STATS_H

/* Rounds per measurement at most. */
#define RX_MAX_ROUNDS 64

/* The median and the range (min - max) of a measurement's rounds. */
typedef struct rx_spread {
    double median, min, max;
} rx_spread_t;

/* The spread of the n values t[0..n-1] (n >= 1; t is not changed). */
rx_spread_t rx_spread_of(const double *t, int n);

/* The range relative to the median: (max - min) / median. */
double rx_spread_relative(const rx_spread_t *s);

/*
 * Whether a is faster than b beyond what the rounds let tell apart: the
 * slowest round of a beats the fastest round of b, and a's median beats
 * b's by more than margin (a fraction).  Measurements whose ranges
 * overlap are within noise, however far apart their medians are.
 */
int rx_clearly_faster(const rx_spread_t *a, const rx_spread_t *b, double margin);

/*
 * The tuner's choice among n candidates (seconds per call): the fastest
 * median among those clearly faster than the built-in choice builtin,
 * else builtin itself.  Candidates with a negative median did not run and
 * never win.
 */
int rx_tune_choose(const rx_spread_t *cand, int n, int builtin, double margin);

#endif /* RINGX_BENCH_STATS_H */
