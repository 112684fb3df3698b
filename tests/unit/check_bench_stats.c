/*
 * check_bench_stats.c - unit tests of the benchmark's statistics and of
 * the tuner's decision (bench/ringx_bench_stats.c): medians and ranges of
 * rounds, and that noisy timings never replace the built-in choice while a
 * clearly faster candidate does.  Noise is injected by a fixed-seed
 * generator, so every run sees the same timings.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "ringx_bench_stats.h"

#define MARGIN 0.05

/* A fixed-seed generator (xorshift64*), uniform in [0, 1). */
static uint64_t rng_state;

static double uniform(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * UINT64_C(2685821657736338717)) >> 11) / 9007199254740992.0;
}

/* Rounds of a call taking truth seconds on a machine whose noise can make
 * a round up to factor times slower (10x on the loaded 2-core machine). */
static rx_spread_t noisy_rounds(double truth, double factor, int rounds)
{
    double t[RX_MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        t[r] = truth * exp(log(factor) * uniform() * uniform());
    }
    return rx_spread_of(t, rounds);
}

START_TEST(test_median_and_range)
{
    double odd[] = { 5, 1, 4, 2, 3 }, even[] = { 8, 2, 6, 4 }, one[] = { 7 };
    rx_spread_t s = rx_spread_of(odd, 5);
    ck_assert(s.median == 3 && s.min == 1 && s.max == 5);
    ck_assert(odd[0] == 5 && odd[4] == 3);      /* the input keeps its order */
    s = rx_spread_of(even, 4);
    ck_assert(s.median == 5 && s.min == 2 && s.max == 8);
    s = rx_spread_of(one, 1);
    ck_assert(s.median == 7 && s.min == 7 && s.max == 7);
    ck_assert(rx_spread_relative(&s) == 0);
    s = rx_spread_of(even, 4);
    ck_assert(fabs(rx_spread_relative(&s) - 6.0 / 5.0) < 1e-12);
}
END_TEST

START_TEST(test_overlapping_ranges_keep_builtin)
{
    /* The candidate's median is 25% lower, but one slow round of it is
     * slower than the built-in's fastest: within noise. */
    double builtin[] = { 10, 30, 12, 100, 11 }, cand[] = { 8, 9, 40, 9, 8.5 };
    rx_spread_t c[2] = { rx_spread_of(builtin, 5), rx_spread_of(cand, 5) };
    ck_assert(!rx_clearly_faster(&c[1], &c[0], MARGIN));
    ck_assert_int_eq(rx_tune_choose(c, 2, 0, MARGIN), 0);
}
END_TEST

START_TEST(test_margin_needed)
{
    /* Ranges apart, medians 2% apart: below the margin. */
    double builtin[] = { 10.2, 10.3, 10.25 }, cand[] = { 10.0, 10.05, 10.1 };
    rx_spread_t c[2] = { rx_spread_of(builtin, 3), rx_spread_of(cand, 3) };
    ck_assert_int_eq(rx_tune_choose(c, 2, 0, MARGIN), 0);
    ck_assert_int_eq(rx_tune_choose(c, 2, 0, 0.01), 1);
}
END_TEST

START_TEST(test_clearly_faster_wins_fastest_first)
{
    double builtin[] = { 10, 10.2, 10.1 }, slow[] = { 20, 21, 22 }, fast[] = { 5, 5.1, 5.2 },
           faster[] = { 3, 3.1, 3.05 };
    rx_spread_t c[4] = { rx_spread_of(slow, 3), rx_spread_of(builtin, 3), rx_spread_of(fast, 3),
                         rx_spread_of(faster, 3) };
    ck_assert_int_eq(rx_tune_choose(c, 4, 1, MARGIN), 3);
    ck_assert_int_eq(rx_tune_choose(c, 3, 1, MARGIN), 2);
}
END_TEST

START_TEST(test_candidates_that_did_not_run_never_win)
{
    rx_spread_t c[2] = { { 10, 9, 11 }, { -1, -1, -1 } };
    ck_assert_int_eq(rx_tune_choose(c, 2, 0, MARGIN), 0);
}
END_TEST

/* The tuner's whole decision with candidates of the given true times:
 * rx_tune_choose on one set of rounds, then, when it left the built-in
 * choice, a confirmation on fresh rounds of the two (as
 * ringx_bench_tune.c does).  Returns the index chosen. */
static int decide(const double *truth, int n, int builtin, double noise, int rounds)
{
    rx_spread_t c[8];
    int best;
    for (int i = 0; i < n; i++) {
        c[i] = noisy_rounds(truth[i], noise, rounds);
    }
    best = rx_tune_choose(c, n, builtin, MARGIN);
    if (best != builtin) {
        rx_spread_t again = noisy_rounds(truth[best], noise, rounds);
        rx_spread_t builtin_again = noisy_rounds(truth[builtin], noise, rounds);
        best = rx_clearly_faster(&again, &builtin_again, MARGIN) ? best : builtin;
    }
    return best;
}

/* Four candidates as fast as the built-in choice, 10x noise, 5 rounds.
 * One set of rounds alone leaves the built-in choice in about 2% of the
 * decisions (all five rounds of one candidate beat all five of the
 * built-in by chance: 1 in 252 per candidate); with the confirmation,
 * none of 1000 decisions may. */
START_TEST(test_equal_candidates_under_noise_keep_builtin)
{
    const double truth[5] = { 1e-3, 1e-3, 1e-3, 1e-3, 1e-3 };
    int switched = 0;
    rng_state = UINT64_C(0x9E3779B97F4A7C15);
    for (int trial = 0; trial < 1000; trial++) {
        switched += decide(truth, 5, 2, 10, 5) != 2;
    }
    ck_assert_msg(switched == 0, "%d of 1000 noisy decisions left the built-in choice", switched);
}
END_TEST

/* A candidate 3x faster, 20% noise, 5 rounds: every decision switches to it. */
START_TEST(test_clearly_faster_candidate_wins_under_noise)
{
    const double truth[3] = { 1e-3, 1e-3 / 3, 1.1e-3 };
    rng_state = UINT64_C(0xD1B54A32D192ED03);
    for (int trial = 0; trial < 1000; trial++) {
        ck_assert_int_eq(decide(truth, 3, 0, 1.2, 5), 1);
    }
}
END_TEST

/* A candidate 20% faster on a machine with 10x noise cannot be told apart:
 * the built-in choice stays (in all but a few decisions at most). */
START_TEST(test_small_gain_under_heavy_noise_keeps_builtin)
{
    const double truth[2] = { 1e-3, 0.8e-3 };
    int switched = 0;
    rng_state = UINT64_C(0x2545F4914F6CDD1D);
    for (int trial = 0; trial < 1000; trial++) {
        switched += decide(truth, 2, 0, 10, 5) != 0;
    }
    ck_assert_msg(switched <= 5, "%d of 1000 decisions switched on a 20%% gain within 10x noise",
                  switched);
}
END_TEST

static Suite *bench_stats_suite(void)
{
    Suite *s = suite_create("bench_stats");
    TCase *stats = tcase_create("stats"), *decision = tcase_create("decision");

    tcase_add_test(stats, test_median_and_range);
    tcase_add_test(decision, test_overlapping_ranges_keep_builtin);
    tcase_add_test(decision, test_margin_needed);
    tcase_add_test(decision, test_clearly_faster_wins_fastest_first);
    tcase_add_test(decision, test_candidates_that_did_not_run_never_win);
    tcase_add_test(decision, test_equal_candidates_under_noise_keep_builtin);
    tcase_add_test(decision, test_clearly_faster_candidate_wins_under_noise);
    tcase_add_test(decision, test_small_gain_under_heavy_noise_keeps_builtin);
    suite_add_tcase(s, stats);
    suite_add_tcase(s, decision);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(bench_stats_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
