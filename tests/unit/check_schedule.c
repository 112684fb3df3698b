/*
 * check_schedule.c - unit tests of the pure schedule arithmetic (blocks,
 * segments, ring walk, folds, recursive halving and doubling, Bruck, tags)
 * over p = 1..64, and of the algorithm choice and rules files.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>

#include "ringx_schedule.h"
#include "ringx_layout.h"
#include "coll_ringx_decision.h"

static const size_t counts[] = { 0, 1, 2, 3, 7, 8, 63, 64, 65, 1000, 1000003 };
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))
#define MAX_P 64

START_TEST(blocks_tile_the_buffer)
{
    for (size_t c = 0; c < NCOUNTS; c++) {
        for (int p = 1; p <= MAX_P; p++) {
            size_t next = 0, smallest = SIZE_MAX, largest = 0;
            for (int b = 0; b < p; b++) {
                size_t n = ringx_block_count(counts[c], p, b);
                ck_assert_uint_eq(ringx_block_offset(counts[c], p, b), next);
                next += n;
                smallest = n < smallest ? n : smallest;
                largest = n > largest ? n : largest;
            }
            ck_assert_uint_eq(next, counts[c]);
            ck_assert_uint_le(largest - smallest, 1);
            /* block 0 is always a largest block: buffers are sized by it */
            ck_assert_uint_eq(ringx_block_count(counts[c], p, 0), largest);
        }
    }
}
END_TEST

START_TEST(segments_tile_a_block)
{
    const size_t seg_sizes[] = { 1, 2, 3, 7, 64, 4096 };
    for (size_t c = 0; c < NCOUNTS; c++) {
        for (size_t s = 0; s < sizeof(seg_sizes) / sizeof(seg_sizes[0]); s++) {
            size_t n = counts[c], seg = seg_sizes[s], total = 0;
            size_t nsegs = ringx_segment_total(n, seg), bad = 0;
            /* Counted, not asserted, per segment: each ck_assert writes to
             * Check's pipe, and a million of them outlast the timeout. */
            for (size_t k = 0; k < nsegs; k++) {
                size_t len = ringx_segment_count(n, seg, k);
                bad += len == 0 || len > seg;
                total += len;
            }
            ck_assert_uint_eq(bad, 0);
            ck_assert_uint_eq(total, n);
            ck_assert_uint_eq(ringx_segment_count(n, seg, nsegs), 0);
        }
    }
}
END_TEST

START_TEST(segment_elems_is_at_least_one)
{
    ck_assert_uint_eq(ringx_segment_elems(65536, 4), 16384);
    ck_assert_uint_eq(ringx_segment_elems(65536, 3), 21845);
    ck_assert_uint_eq(ringx_segment_elems(8, 16), 1);
    ck_assert_uint_eq(ringx_segment_elems(0, 8), 1);
}
END_TEST

/* What rank r sends at step t is what rank r+1 receives at step t, and a
 * rank sends at step t the block it received at step t-1. */
START_TEST(ring_neighbours_agree)
{
    for (int shift = 0; shift <= 1; shift++) {
        for (int p = 2; p <= MAX_P; p++) {
            for (int r = 0; r < p; r++) {
                for (int t = 0; t < 2 * (p - 1); t++) {
                    ck_assert_int_eq(ringx_ring_send_block(r, p, t, shift),
                                     ringx_ring_recv_block((r + 1) % p, p, t, shift));
                    if (t > 0) {
                        ck_assert_int_eq(ringx_ring_send_block(r, p, t, shift),
                                         ringx_ring_recv_block(r, p, t - 1, shift));
                    }
                }
            }
        }
    }
}
END_TEST

/* Over p-1 steps a rank receives every block but one exactly once; the one
 * it never receives is where it starts (allreduce: its own block; reduce-
 * scatter-block: block rank-1). */
START_TEST(ring_reduce_scatter_completes_the_right_block)
{
    for (int shift = 0; shift <= 1; shift++) {
        for (int p = 2; p <= MAX_P; p++) {
            for (int r = 0; r < p; r++) {
                char seen[MAX_P] = { 0 };
                for (int t = 0; t < p - 1; t++) {
                    int b = ringx_ring_recv_block(r, p, t, shift);
                    ck_assert_int_eq(seen[b], 0);
                    seen[b] = 1;
                }
                ck_assert_int_eq(seen[ringx_mod(r - shift, p)], 0);
                /* the block complete after the last reducing step */
                int last = ringx_ring_recv_block(r, p, p - 2, shift);
                ck_assert_int_eq(last, shift ? r : (r + 1) % p);
            }
        }
    }
}
END_TEST

/* Allreduce's allgather half (steps p-1 .. 2p-3) delivers every block but
 * the one the rank completed itself. */
START_TEST(ring_allgather_half_fills_the_rest)
{
    for (int p = 2; p <= MAX_P; p++) {
        for (int r = 0; r < p; r++) {
            char seen[MAX_P] = { 0 };
            for (int t = p - 1; t < 2 * (p - 1); t++) {
                int b = ringx_ring_recv_block(r, p, t, 0);
                ck_assert_int_eq(seen[b], 0);
                seen[b] = 1;
            }
            ck_assert_int_eq(seen[(r + 1) % p], 0);
            ck_assert_int_eq(ringx_ring_send_block(r, p, p - 1, 0), (r + 1) % p);
        }
    }
}
END_TEST

START_TEST(tags_round_trip)
{
    const uint32_t ids[] = { 0, 1, 12345, RINGX_TAG_ID_MAX };
    const uint32_t seqs[] = { 0, 1, 65535 };
    const uint32_t steps[] = { 0, 1, 13, 4095 };
    const uint64_t segs[] = { 0, 1, 4095 };
    for (size_t a = 0; a < 4; a++)
        for (size_t b = 0; b < 3; b++)
            for (size_t c = 0; c < 4; c++)
                for (size_t d = 0; d < 3; d++) {
                    uint64_t tag = ringx_tag_make(ids[a], seqs[b], steps[c], segs[d]);
                    ck_assert_uint_eq(ringx_tag_comm_id(tag), ids[a]);
                    ck_assert_uint_eq(ringx_tag_seq(tag), seqs[b]);
                    ck_assert_uint_eq(ringx_tag_step(tag), steps[c]);
                    ck_assert_uint_eq(ringx_tag_seg(tag), segs[d]);
                }
}
END_TEST

START_TEST(tags_differ_in_every_field)
{
    uint64_t base = ringx_tag_make(7, 9, 3, 5);
    ck_assert_uint_ne(base, ringx_tag_make(8, 9, 3, 5));
    ck_assert_uint_ne(base, ringx_tag_make(7, 10, 3, 5));
    ck_assert_uint_ne(base, ringx_tag_make(7, 9, 4, 5));
    ck_assert_uint_ne(base, ringx_tag_make(7, 9, 3, 6));
    /* fields wrap instead of spilling into their neighbours */
    ck_assert_uint_eq(ringx_tag_make(7, 9, 3, 5 + 4096), base);
    ck_assert_uint_eq(ringx_tag_comm_id(ringx_tag_make(7, 9 + 65536, 3, 5)), 7);
}
END_TEST

/* The end-of-call handshake has a step value no data step ever takes. */
START_TEST(fin_tags_never_collide_with_data)
{
    for (uint32_t step = 0; step < 3 * RINGX_TAG_DATA_STEPS; step += 7) {
        for (uint64_t seg = 0; seg < 8192; seg += 4095) {
            ck_assert_uint_ne(ringx_tag_data(3, 5, step, seg), ringx_tag_fin(3, 5));
        }
    }
    ck_assert_uint_eq(ringx_tag_step(ringx_tag_fin(3, 5)), RINGX_TAG_FIN_STEP);
    ck_assert_uint_ne(ringx_tag_fin(3, 5), ringx_tag_fin(3, 6));
    ck_assert_uint_ne(ringx_tag_fin(3, 5), ringx_tag_fin(4, 5));
}
END_TEST

/* -------------------------------------------------- folds and halving */

START_TEST(doubling_takes_the_folds_and_log2_steps)
{
    /* fold in, log2 of the power-of-two part, fold out: on every rank */
    static const int want[] = { 0, 2, 3, 3, 4, 4, 4, 4, 5, 5 };
    for (int p = 1; p < (int)(sizeof(want) / sizeof(want[0])); p++) {
        ck_assert_int_eq(ringx_doubling_steps(p), want[p]);
    }
    ck_assert_int_eq(ringx_log2_pof2(1), 0);
    ck_assert_int_eq(ringx_log2_pof2(64), 6);
}
END_TEST

START_TEST(fold_maps_ranks_onto_a_power_of_two)
{
    for (int p = 1; p <= MAX_P; p++) {
        int pof2 = ringx_pof2_floor(p), folded = 0;
        ck_assert(ringx_is_pof2(pof2) && pof2 <= p && 2 * pof2 > p);
        for (int r = 0; r < p; r++) {
            int nr = ringx_fold_newrank(r, p);
            if (nr < 0) {
                folded++;
                /* a folded rank hands its data to the next, which takes part */
                ck_assert_int_eq(ringx_fold_newrank(r + 1, p) >= 0, 1);
                continue;
            }
            ck_assert_int_lt(nr, pof2);
            ck_assert_int_eq(ringx_fold_rank(nr, p), r);
        }
        ck_assert_int_eq(folded, p - pof2);
        /* newranks stand for consecutive runs of one or two ranks tiling 0..p-1 */
        ck_assert_int_eq(ringx_fold_first(0, p), 0);
        ck_assert_int_eq(ringx_fold_first(pof2, p), p);
        for (int nr = 0; nr < pof2; nr++) {
            int span = ringx_fold_first(nr + 1, p) - ringx_fold_first(nr, p);
            ck_assert(span == 1 || span == 2);
            ck_assert_int_le(ringx_fold_first(nr, p), ringx_fold_rank(nr, p));
            ck_assert_int_lt(ringx_fold_rank(nr, p), ringx_fold_first(nr + 1, p));
        }
    }
}
END_TEST

/* Recursive halving: partners keep complementary halves, the window halves
 * each step, and ends as the newrank itself. */
START_TEST(halving_ends_with_own_newrank)
{
    for (int pof2 = 2; pof2 <= MAX_P; pof2 *= 2) {
        for (int nr = 0; nr < pof2; nr++) {
            int lo = 0, hi = pof2;
            for (int mask = pof2 / 2; mask >= 1; mask /= 2) {
                int klo, khi, slo, shi, pklo, pkhi, pslo, pshi;
                ringx_halving_ranges(nr, mask, &klo, &khi, &slo, &shi);
                ringx_halving_ranges(nr ^ mask, mask, &pklo, &pkhi, &pslo, &pshi);
                ck_assert_int_eq(khi - klo, mask);
                ck_assert(klo <= nr && nr < khi);
                ck_assert(lo <= klo && khi <= hi && lo <= slo && shi <= hi);
                ck_assert_int_eq(pklo, slo);
                ck_assert_int_eq(pkhi, shi);
                ck_assert_int_eq(pslo, klo);
                lo = klo;
                hi = khi;
            }
            ck_assert_int_eq(lo, nr);
            ck_assert_int_eq(hi, nr + 1);
        }
    }
}
END_TEST

/* Recursive doubling of windows: a newrank and its partner hold disjoint
 * windows whose union is the next, larger window, until everything. */
START_TEST(doubling_windows_grow_to_everything)
{
    for (int pof2 = 2; pof2 <= MAX_P; pof2 *= 2) {
        for (int nr = 0; nr < pof2; nr++) {
            int size = 1;
            for (int mask = 1; mask < pof2; mask <<= 1) {
                int mine = ringx_doubling_window(nr, mask);
                int theirs = ringx_doubling_window(nr ^ mask, mask);
                ck_assert(mine <= nr && nr < mine + mask);
                ck_assert(mine + mask == theirs || theirs + mask == mine);
                ck_assert_int_eq(ringx_doubling_window(nr, 2 * mask),
                                 mine < theirs ? mine : theirs);
                size += mask;
            }
            ck_assert_int_eq(size, pof2);
        }
    }
}
END_TEST

/* Bruck: the blocks of ranks rank, rank+1, .. arrive once each, in order. */
START_TEST(bruck_gathers_every_block_once)
{
    for (int p = 1; p <= MAX_P; p++) {
        int have = 1;
        for (int d = 1; d < p; d *= 2) {
            /* receives blocks d .. d+count-1 from rank+d, which holds its own
             * first count blocks: rank+d .. rank+d+count-1 */
            ck_assert_int_eq(have, d);
            have += ringx_bruck_count(p, d);
        }
        ck_assert_int_eq(have, p);
    }
}
END_TEST

/* Neighbour exchange: partners agree, each step's pair is the one its
 * partner sends, and every pair arrives exactly once. */
START_TEST(neighbor_exchange_gathers_every_pair_once)
{
    for (int p = 2; p <= MAX_P; p += 2) {
        for (int r = 0; r < p; r++) {
            int seen[MAX_P / 2] = { 0 };
            int q0 = ringx_neighbor_partner(r, p, 0);
            ck_assert_int_eq(ringx_neighbor_partner(q0, p, 0), r);
            ck_assert_int_eq(q0 / 2, r / 2);        /* step 0 stays inside the pair */
            seen[r / 2]++;
            for (int step = 1; step < p / 2; step++) {
                int q = ringx_neighbor_partner(r, p, step);
                ck_assert_int_eq(ringx_neighbor_partner(q, p, step), r);
                ck_assert_int_eq(ringx_neighbor_recv_pair(r, p, step),
                                 ringx_neighbor_send_pair(q, p, step));
                seen[ringx_neighbor_recv_pair(r, p, step)]++;
            }
            for (int k = 0; k < p / 2; k++) {
                ck_assert_msg(seen[k] == 1, "p=%d rank %d: pair %d arrives %d times", p, r, k,
                              seen[k]);
            }
        }
    }
}
END_TEST

/* ----------------------------------------------------------- decisions */

START_TEST(decision_defaults_follow_size)
{
    ck_assert_int_eq(ringx_defaults_set(RINGX_COLL_ALLREDUCE, ringx_defaults_builtin(RINGX_COLL_ALLREDUCE)), 0);
    ck_assert_int_eq(ringx_defaults_set(RINGX_COLL_ALLREDUCE, "1K:recursive_doubling,1M:rabenseifner,ring"), 0);
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLREDUCE, RINGX_ALG_AUTO, 8, 4, 0).alg, RINGX_ALG_RECURSIVE_DOUBLING);
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLREDUCE, RINGX_ALG_AUTO, 1024, 4, 0).alg, RINGX_ALG_RECURSIVE_DOUBLING);
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLREDUCE, RINGX_ALG_AUTO, 1025, 4, 0).alg, RINGX_ALG_RABENSEIFNER);
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLREDUCE, RINGX_ALG_AUTO, 2u << 20, 4, 0).alg, RINGX_ALG_RING);
    ck_assert_int_eq(ringx_defaults_set(RINGX_COLL_ALLREDUCE, ringx_defaults_builtin(RINGX_COLL_ALLREDUCE)), 0);
}
END_TEST

START_TEST(decision_rejects_malformed_defaults)
{
    ck_assert_int_eq(ringx_defaults_set(RINGX_COLL_ALLGATHER, "4K:recursive_doubling,ring"), 0);
    ck_assert_int_eq(ringx_defaults_set(RINGX_COLL_ALLGATHER, "4K:rabenseifner,ring"), -1);
    ck_assert_int_eq(ringx_defaults_set(RINGX_COLL_ALLGATHER, "4K:bruck"), -1);  /* no catch-all */
    ck_assert_int_eq(ringx_defaults_set(RINGX_COLL_ALLGATHER, "4K:bruck,1K:ring,ring"), -1);
    ck_assert_int_eq(ringx_defaults_set(RINGX_COLL_ALLGATHER, "x:bruck,ring"), -1);
    /* the previous valid list stays */
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLGATHER, RINGX_ALG_AUTO, 64, 4, 0).alg, RINGX_ALG_RECURSIVE_DOUBLING);
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLGATHER, RINGX_ALG_AUTO, 1 << 20, 4, 0).alg, RINGX_ALG_RING);
}
END_TEST

START_TEST(decision_alternatives_follow_the_rank_count)
{
    ck_assert_int_eq(ringx_defaults_set(RINGX_COLL_ALLGATHER,
                                        "1K:bruck,recursive_doubling|neighbor_exchange|ring"), 0);
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLGATHER, RINGX_ALG_AUTO, 64, 6, 0).alg, RINGX_ALG_BRUCK);
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLGATHER, RINGX_ALG_AUTO, 4096, 8, 0).alg,
                     RINGX_ALG_RECURSIVE_DOUBLING);
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLGATHER, RINGX_ALG_AUTO, 4096, 6, 0).alg,
                     RINGX_ALG_NEIGHBOR_EXCHANGE);
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLGATHER, RINGX_ALG_AUTO, 4096, 7, 0).alg, RINGX_ALG_RING);
    /* the last alternative is taken, and substituted, where none fits */
    ck_assert_int_eq(ringx_defaults_set(RINGX_COLL_ALLGATHER, "ring|neighbor_exchange"), 0);
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLGATHER, RINGX_ALG_AUTO, 64, 7, 0).alg, RINGX_ALG_RING);
    ck_assert_int_eq(ringx_defaults_set(RINGX_COLL_REDUCE_SCATTER_BLOCK,
                                        "recursive_halving|ring"), 0);
    ck_assert_int_eq(ringx_decide(RINGX_COLL_REDUCE_SCATTER_BLOCK, RINGX_ALG_AUTO, 64, 4, 0).alg,
                     RINGX_ALG_RECURSIVE_HALVING);
    ck_assert_int_eq(ringx_decide(RINGX_COLL_REDUCE_SCATTER_BLOCK, RINGX_ALG_AUTO, 64, 5, 0).alg,
                     RINGX_ALG_RING);
    ck_assert_int_eq(ringx_defaults_set(RINGX_COLL_ALLGATHER, "1K:bruck|,ring"), -1);
    ck_assert_int_eq(ringx_defaults_set(RINGX_COLL_ALLGATHER, "1K:bruck|rabenseifner,ring"), -1);
    ck_assert_int_eq(ringx_defaults_set(RINGX_COLL_ALLGATHER, "ring|ring|ring|ring|ring"), -1);
    for (int coll = 0; coll < RINGX_COLL_COUNT; coll++) {
        ck_assert_int_eq(ringx_defaults_set((ringx_coll_t)coll,
                                            ringx_defaults_builtin((ringx_coll_t)coll)), 0);
    }
}
END_TEST

START_TEST(decision_fits_without_folding)
{
    for (int p = 1; p <= MAX_P; p++) {
        int pof2 = (p & (p - 1)) == 0;
        ck_assert_int_eq(ringx_alg_fits(RINGX_COLL_ALLREDUCE, RINGX_ALG_RABENSEIFNER, p, 0), pof2);
        ck_assert_int_eq(ringx_alg_fits(RINGX_COLL_REDUCE_SCATTER_BLOCK,
                                        RINGX_ALG_RECURSIVE_HALVING, p, 0), pof2);
        ck_assert_int_eq(ringx_alg_fits(RINGX_COLL_ALLGATHER, RINGX_ALG_NEIGHBOR_EXCHANGE, p, 0),
                         p % 2 == 0);
        ck_assert(ringx_alg_fits(RINGX_COLL_ALLGATHER, RINGX_ALG_RING, p, 0));
        ck_assert(ringx_alg_fits(RINGX_COLL_ALLGATHER, RINGX_ALG_BRUCK, p, 0));
    }
}
END_TEST

START_TEST(decision_substitutes_what_cannot_run)
{
    ringx_decision_t d = ringx_decide(RINGX_COLL_ALLGATHER, RINGX_ALG_RECURSIVE_DOUBLING, 64, 6, 0);
    ck_assert_int_eq(d.alg, RINGX_ALG_BRUCK);
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLGATHER, RINGX_ALG_RECURSIVE_DOUBLING, 64, 8, 0).alg,
                     RINGX_ALG_RECURSIVE_DOUBLING);
    for (int p = 2; p <= MAX_P; p++) {
        for (int coll = 0; coll < RINGX_COLL_COUNT; coll++) {
            for (size_t bytes = 1; bytes < (1u << 28); bytes *= 4) {
                for (int shared = 0; shared <= 1; shared++) {
                    ringx_decision_t a = ringx_decide((ringx_coll_t)coll, RINGX_ALG_AUTO, bytes,
                                                      p, shared);
                    ck_assert(ringx_alg_runs_on((ringx_coll_t)coll, a.alg, p, shared));
                }
            }
        }
    }
}
END_TEST

START_TEST(decision_direct_reads_need_shared_memory)
{
    static const size_t sizes[] = { 8, 4096, 1 << 20, (size_t)64 << 20 };
    for (int p = 2; p <= MAX_P; p++) {
        int pof2 = (p & (p - 1)) == 0;
        for (int coll = 0; coll < RINGX_COLL_COUNT; coll++) {
            ck_assert(ringx_alg_valid((ringx_coll_t)coll, RINGX_ALG_DIRECT_READ));
            ck_assert(!ringx_alg_runs_on((ringx_coll_t)coll, RINGX_ALG_DIRECT_READ, p, 0));
            ck_assert(ringx_alg_fits((ringx_coll_t)coll, RINGX_ALG_DIRECT_READ, p, 1));
            /* the built-in defaults: direct reads at every size on one node */
            for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                ck_assert_int_eq(
                    ringx_decide((ringx_coll_t)coll, RINGX_ALG_AUTO, sizes[i], p, 1).alg,
                    RINGX_ALG_DIRECT_READ);
            }
        }
        /* and the message-based algorithms elsewhere */
        ck_assert_int_eq(
            ringx_decide(RINGX_COLL_REDUCE_SCATTER_BLOCK, RINGX_ALG_AUTO, 1 << 20, p, 0).alg,
            pof2 ? RINGX_ALG_RECURSIVE_HALVING : RINGX_ALG_RING);
        ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLGATHER, RINGX_ALG_AUTO, 1 << 20, p, 0).alg,
                         pof2 ? RINGX_ALG_RECURSIVE_DOUBLING
                              : p % 2 == 0 ? RINGX_ALG_NEIGHBOR_EXCHANGE : RINGX_ALG_RING);
        ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLGATHER, RINGX_ALG_AUTO, 4096, p, 0).alg,
                         pof2 ? RINGX_ALG_RECURSIVE_DOUBLING : RINGX_ALG_BRUCK);
        ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLREDUCE, RINGX_ALG_AUTO, 4096, p, 0).alg,
                         RINGX_ALG_RECURSIVE_DOUBLING);
    }
    /* forced where it cannot run: the ring */
    ringx_decision_t d = ringx_decide(RINGX_COLL_ALLGATHER, RINGX_ALG_DIRECT_READ, 64, 4, 0);
    ck_assert_int_eq(d.alg, RINGX_ALG_RING);
    ck_assert_str_eq(d.why, "forced algorithm cannot run on this communicator");
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLGATHER, RINGX_ALG_DIRECT_READ, 64, 3, 1).alg,
                     RINGX_ALG_DIRECT_READ);
}
END_TEST

START_TEST(decision_honours_a_forced_algorithm)
{
    for (int coll = 0; coll < RINGX_COLL_COUNT; coll++) {
        ringx_decision_t d = ringx_decide((ringx_coll_t)coll, RINGX_ALG_RING, 8, 4, 0);
        ck_assert_int_eq(d.alg, RINGX_ALG_RING);
        ck_assert_str_eq(d.why, "forced by MCA variable");
        ck_assert(ringx_alg_valid((ringx_coll_t)coll, RINGX_ALG_AUTO));
        ck_assert(!ringx_alg_valid((ringx_coll_t)coll, RINGX_ALG_COUNT));
    }
    ck_assert(!ringx_alg_valid(RINGX_COLL_ALLGATHER, RINGX_ALG_RABENSEIFNER));
    ck_assert(!ringx_alg_valid(RINGX_COLL_ALLREDUCE, RINGX_ALG_BRUCK));
    ck_assert(!ringx_alg_valid(RINGX_COLL_REDUCE_SCATTER_BLOCK, RINGX_ALG_RECURSIVE_DOUBLING));
    ck_assert(!ringx_alg_valid(RINGX_COLL_COUNT, RINGX_ALG_RING));
}
END_TEST

START_TEST(rules_parse_and_format_round_trip)
{
    ringx_rule_t r, back;
    char line[128];
    ck_assert_int_eq(ringx_rule_parse("allreduce 2 8 4096 recursive_doubling", &r), 1);
    ck_assert_int_eq(r.coll, RINGX_COLL_ALLREDUCE);
    ck_assert_int_eq(r.np_min, 2);
    ck_assert_int_eq(r.np_max, 8);
    ck_assert_uint_eq(r.max_bytes, 4096);
    ck_assert_int_eq(r.alg, RINGX_ALG_RECURSIVE_DOUBLING);
    ringx_rule_format(&r, line, sizeof(line));
    ck_assert_int_eq(ringx_rule_parse(line, &back), 1);
    ck_assert(r.coll == back.coll && r.np_min == back.np_min && r.np_max == back.np_max &&
              r.max_bytes == back.max_bytes && r.alg == back.alg);
    ck_assert_int_eq(ringx_rule_parse("reduce_scatter_block 3 3 inf ring # measured", &r), 1);
    ck_assert_uint_eq(r.max_bytes, SIZE_MAX);
    ck_assert_int_eq(ringx_rule_parse("   # comment", &r), 0);
    ck_assert_int_eq(ringx_rule_parse("", &r), 0);
    ck_assert_int_eq(ringx_rule_parse("allgather 2 8 64K rabenseifner", &r), -1);
    ck_assert_int_eq(ringx_rule_parse("allgather 8 2 64K ring", &r), -1);
    ck_assert_int_eq(ringx_rule_parse("allgather 2 8 64K ring extra", &r), -1);
    ck_assert_int_eq(ringx_rule_parse("bcast 2 8 64K ring", &r), -1);
}
END_TEST

START_TEST(rules_file_takes_precedence)
{
    char path[] = "/tmp/ringx_rules_XXXXXX", err[256];
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fputs("# written by a test\n"
          "allreduce 4 4 100 ring\n"
          "allreduce 4 4 inf recursive_doubling\n"
          "allgather 2 64 inf bruck\n", f);
    fclose(f);
    ck_assert_int_eq(ringx_rules_load(path, err, sizeof(err)), 3);
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLREDUCE, RINGX_ALG_AUTO, 64, 4, 0).alg, RINGX_ALG_RING);
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLREDUCE, RINGX_ALG_AUTO, 1 << 20, 4, 0).alg,
                     RINGX_ALG_RECURSIVE_DOUBLING);
    ck_assert_str_eq(ringx_decide(RINGX_COLL_ALLREDUCE, RINGX_ALG_AUTO, 64, 4, 0).why, "rules file");
    /* other rank counts keep the defaults */
    ck_assert_str_ne(ringx_decide(RINGX_COLL_ALLREDUCE, RINGX_ALG_AUTO, 64, 5, 0).why, "rules file");
    /* forced wins over the file */
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLGATHER, RINGX_ALG_RING, 64, 4, 0).alg, RINGX_ALG_RING);
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLGATHER, RINGX_ALG_AUTO, 64, 4, 0).alg, RINGX_ALG_BRUCK);
    /* a malformed file changes nothing */
    f = fopen(path, "w");
    fputs("allreduce 4 4 oops ring\n", f);
    fclose(f);
    ck_assert_int_eq(ringx_rules_load(path, err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, ":1:"));
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLGATHER, RINGX_ALG_AUTO, 64, 4, 0).alg, RINGX_ALG_BRUCK);
    /* a comment longer than any line buffer is still one comment (the
     * tuner's headers are long) */
    f = fopen(path, "w");
    fputs("# ", f);
    for (int i = 0; i < 200; i++) {
        fputs("long comment ", f);
    }
    fputs("\nallgather 2 64 inf ring\n", f);
    fclose(f);
    ck_assert_int_eq(ringx_rules_load(path, err, sizeof(err)), 1);
    ck_assert_int_eq(ringx_decide(RINGX_COLL_ALLGATHER, RINGX_ALG_AUTO, 64, 4, 0).alg, RINGX_ALG_RING);
    ringx_rules_clear();
    ck_assert_str_ne(ringx_decide(RINGX_COLL_ALLGATHER, RINGX_ALG_AUTO, 64, 4, 0).why, "rules file");
    unlink(path);
}
END_TEST

START_TEST(names_are_the_pvar_and_mca_spellings)
{
    ck_assert_str_eq(ringx_coll_name(RINGX_COLL_ALLREDUCE), "allreduce");
    ck_assert_str_eq(ringx_coll_name(RINGX_COLL_ALLGATHER), "allgather");
    ck_assert_str_eq(ringx_coll_name(RINGX_COLL_REDUCE_SCATTER_BLOCK), "reduce_scatter_block");
    for (int a = 0; a < RINGX_ALG_COUNT; a++) {
        ck_assert_int_eq(ringx_alg_by_name(ringx_alg_name((ringx_alg_t)a)), a);
    }
    ck_assert_str_eq(ringx_alg_name(RINGX_ALG_RECURSIVE_HALVING), "recursive_halving");
    ck_assert_str_eq(ringx_fallback_name(RINGX_FALLBACK_DATATYPE), "datatype");
    ck_assert_str_eq(ringx_fallback_name(RINGX_FALLBACK_TRANSPORT), "transport");
    ck_assert_str_eq(ringx_fallback_name(RINGX_FALLBACK_COMMUNICATOR), "communicator");
    ck_assert_str_eq(ringx_coll_name(RINGX_COLL_COUNT), "?");
    ck_assert_int_eq(ringx_coll_by_name("bcast"), RINGX_COLL_COUNT);
}
END_TEST

START_TEST(layout_numbers_nodes_by_their_first_rank)
{
    static const int key[6] = { 5, 5, 9, 9, 5, 2 };
    static const int want_node[6] = { 0, 0, 1, 1, 0, 2 }, want_local[6] = { 0, 1, 0, 1, 2, 0 };
    int node_of[6], local_of[6], node_size[6];

    ck_assert_int_eq(ringx_layout_number(6, key, node_of, local_of, node_size), 3);
    for (int r = 0; r < 6; r++) {
        ck_assert_int_eq(node_of[r], want_node[r]);
        ck_assert_int_eq(local_of[r], want_local[r]);
    }
    ck_assert_int_eq(node_size[0], 3);
    ck_assert_int_eq(node_size[1], 2);
    ck_assert_int_eq(node_size[2], 1);
    ck_assert_int_eq(ringx_layout_even(3, node_size), 0);
}
END_TEST

START_TEST(layout_even_nodes_and_their_hash)
{
    /* ranks dealt round robin over 2 nodes, and in blocks */
    static const int by_node[4] = { 7, 3, 7, 3 }, by_slot[4] = { 1, 1, 0, 0 };
    int node_of[4], local_of[4], node_size[4], other[4];

    ck_assert_int_eq(ringx_layout_number(4, by_node, node_of, local_of, node_size), 2);
    ck_assert_int_eq(ringx_layout_even(2, node_size), 2);
    ck_assert_int_eq(local_of[2], 1);
    memcpy(other, node_of, sizeof(other));
    ck_assert_int_eq(ringx_layout_number(4, by_slot, node_of, local_of, node_size), 2);
    ck_assert_int_eq(ringx_layout_even(2, node_size), 2);
    ck_assert_int_ne(ringx_layout_hash(4, node_of), ringx_layout_hash(4, other));
    ck_assert_int_eq(ringx_layout_hash(4, other), ringx_layout_hash(4, other));
    ck_assert_int_ge(ringx_layout_hash(4, node_of), 0);
    ck_assert_int_lt(ringx_layout_hash(4, node_of), 1 << 30);
    /* the step lists of the hierarchical allgather and reduce_scatter_block */
    for (int n = 2; n <= 8; n++) {
        for (int l = 2; l <= 8; l++) {
            ck_assert_int_eq(ringx_layout_steps_gather(n, l), n * l - 1);
            ck_assert_int_le(ringx_layout_steps_allreduce(n, l), n * l);
        }
    }
}
END_TEST

/* Simulates the fan-in for radixes 2..9: every member's data reaches
 * member 0 exactly once, each step a member talks to one partner at most
 * (who agrees), a sender sends all it holds, and nobody sends twice or
 * receives after it sent; radix >= n is the flat fan-in of n - 1 steps. */
START_TEST(tree_fan_in_reaches_the_root_once)
{
    for (int k = 2; k <= 9; k++) {
        for (int n = 1; n <= 70; n++) {
            int held[70], done[70] = { 0 }, steps = ringx_tree_steps(n, k);

            for (int i = 0; i < n; i++) {
                held[i] = 1;
            }
            if (k >= n) {
                ck_assert_int_eq(steps, n > 1 ? n - 1 : 0);
            }
            for (int st = 0; st < steps; st++) {
                for (int i = 0; i < n; i++) {
                    int sends, peer = ringx_tree_peer(i, n, k, st, &sends), back;
                    if (peer < 0 || !sends) {
                        continue;
                    }
                    ck_assert(!done[i] && !done[peer]);
                    ck_assert_int_eq(ringx_tree_peer(peer, n, k, st, &back), i);
                    ck_assert(!back);
                    ck_assert_int_eq(held[i], ringx_tree_span(i, n, k, st));
                    held[peer] += held[i];
                    done[i] = 1;
                }
            }
            ck_assert_int_eq(held[0], n);
            for (int i = 1; i < n; i++) {
                ck_assert(done[i]);
            }
        }
    }
}
END_TEST

START_TEST(decision_hierarchical_needs_even_nodes)
{
    for (int coll = 0; coll < RINGX_COLL_COUNT; coll++) {
        ringx_coll_t c = (ringx_coll_t)coll;
        ck_assert(ringx_alg_valid(c, RINGX_ALG_HIERARCHICAL));
        ck_assert(ringx_alg_runs_on(c, RINGX_ALG_HIERARCHICAL, 4, RINGX_LAYOUT_NODES));
        ck_assert(!ringx_alg_runs_on(c, RINGX_ALG_HIERARCHICAL, 4, RINGX_LAYOUT_FLAT));
        ck_assert(!ringx_alg_runs_on(c, RINGX_ALG_HIERARCHICAL, 4, RINGX_LAYOUT_ONE_NODE));
        ck_assert(!ringx_alg_runs_on(c, RINGX_ALG_DIRECT_READ, 4, RINGX_LAYOUT_NODES));
        /* forced where it cannot run: the ring */
        ck_assert_int_eq(ringx_decide(c, RINGX_ALG_HIERARCHICAL, 1 << 20, 4, RINGX_LAYOUT_FLAT).alg,
                         RINGX_ALG_RING);
        ck_assert_int_eq(ringx_decide(c, RINGX_ALG_HIERARCHICAL, 8, 6, RINGX_LAYOUT_NODES).alg,
                         RINGX_ALG_HIERARCHICAL);
        /* the defaults: above the latency-bound sizes across even nodes */
        for (int p = 4; p <= 8; p += 2) {
            ck_assert_int_eq(ringx_decide(c, RINGX_ALG_AUTO, 1 << 20, p, RINGX_LAYOUT_NODES).alg,
                             RINGX_ALG_HIERARCHICAL);
            ck_assert_int_eq(ringx_decide(c, RINGX_ALG_AUTO, 64 << 20, p, RINGX_LAYOUT_NODES).alg,
                             RINGX_ALG_HIERARCHICAL);
            ck_assert_int_eq(ringx_decide(c, RINGX_ALG_AUTO, 1024, p, RINGX_LAYOUT_NODES).alg,
                             RINGX_ALG_HIERARCHICAL);
            ck_assert_int_ne(ringx_decide(c, RINGX_ALG_AUTO, 1 << 20, p, RINGX_LAYOUT_FLAT).alg,
                             RINGX_ALG_HIERARCHICAL);
        }
    }
    for (int coll = 0; coll < RINGX_COLL_COUNT; coll++) {
        ringx_coll_t c = (ringx_coll_t)coll;
        ringx_alg_t flat = c == RINGX_COLL_REDUCE_SCATTER_BLOCK ? RINGX_ALG_RECURSIVE_HALVING
                                                                : RINGX_ALG_RECURSIVE_DOUBLING;
        /* every size across even nodes; elsewhere the flat choice below 8-16 KiB */
        ck_assert_int_eq(ringx_decide(c, RINGX_ALG_AUTO, 8, 4, RINGX_LAYOUT_NODES).alg,
                         RINGX_ALG_HIERARCHICAL);
        ck_assert_int_eq(ringx_decide(c, RINGX_ALG_AUTO, 4096, 4, RINGX_LAYOUT_FLAT).alg, flat);
        ck_assert_int_eq(ringx_decide(c, RINGX_ALG_AUTO, 8192, 4, RINGX_LAYOUT_FLAT).alg, flat);
    }
}
END_TEST

static Suite *schedule_suite(void)
{
    Suite *s = suite_create("schedule");
    TCase *blocks = tcase_create("blocks");
    TCase *ring = tcase_create("ring");
    TCase *tags = tcase_create("tags");
    TCase *decision = tcase_create("decision");

    tcase_add_test(blocks, blocks_tile_the_buffer);
    tcase_add_test(blocks, segments_tile_a_block);
    tcase_add_test(blocks, segment_elems_is_at_least_one);
    tcase_add_test(ring, ring_neighbours_agree);
    tcase_add_test(ring, ring_reduce_scatter_completes_the_right_block);
    tcase_add_test(ring, ring_allgather_half_fills_the_rest);
    tcase_add_test(tags, tags_round_trip);
    tcase_add_test(tags, tags_differ_in_every_field);
    tcase_add_test(tags, fin_tags_never_collide_with_data);
    tcase_add_test(ring, fold_maps_ranks_onto_a_power_of_two);
    tcase_add_test(ring, doubling_takes_the_folds_and_log2_steps);
    tcase_add_test(ring, halving_ends_with_own_newrank);
    tcase_add_test(ring, doubling_windows_grow_to_everything);
    tcase_add_test(ring, bruck_gathers_every_block_once);
    tcase_add_test(ring, neighbor_exchange_gathers_every_pair_once);
    tcase_add_test(decision, decision_defaults_follow_size);
    tcase_add_test(decision, decision_rejects_malformed_defaults);
    tcase_add_test(decision, decision_alternatives_follow_the_rank_count);
    tcase_add_test(decision, decision_fits_without_folding);
    tcase_add_test(decision, decision_substitutes_what_cannot_run);
    tcase_add_test(decision, decision_direct_reads_need_shared_memory);
    tcase_add_test(decision, decision_honours_a_forced_algorithm);
    tcase_add_test(decision, rules_parse_and_format_round_trip);
    tcase_add_test(decision, rules_file_takes_precedence);
    tcase_add_test(decision, names_are_the_pvar_and_mca_spellings);
    tcase_add_test(decision, decision_hierarchical_needs_even_nodes);
    tcase_add_test(blocks, layout_numbers_nodes_by_their_first_rank);
    tcase_add_test(blocks, layout_even_nodes_and_their_hash);
    tcase_add_test(blocks, tree_fan_in_reaches_the_root_once);
    suite_add_tcase(s, blocks);
    suite_add_tcase(s, ring);
    suite_add_tcase(s, tags);
    suite_add_tcase(s, decision);
    return s;
}

int main(void)
{
    SRunner *runner = srunner_create(schedule_suite());
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
