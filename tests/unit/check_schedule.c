/*
 * check_schedule.c - unit tests of the pure schedule arithmetic (blocks,
 * segments, ring walk, tags) and of the algorithm choice.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ringx_schedule.h"
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
            size_t nsegs = ringx_segment_total(n, seg);
            for (size_t k = 0; k < nsegs; k++) {
                size_t len = ringx_segment_count(n, seg, k);
                ck_assert_uint_gt(len, 0);
                ck_assert_uint_le(len, seg);
                total += len;
            }
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

START_TEST(decision_defaults_to_ring)
{
    for (int coll = 0; coll < RINGX_COLL_COUNT; coll++) {
        for (int p = 2; p <= MAX_P; p++) {
            ringx_decision_t d = ringx_decide((ringx_coll_t)coll, RINGX_ALG_AUTO, 8u << p % 27, p);
            ck_assert_int_eq(d.alg, RINGX_ALG_RING);
            ck_assert_ptr_nonnull(d.why);
        }
    }
}
END_TEST

START_TEST(decision_honours_a_valid_forced_algorithm)
{
    for (int coll = 0; coll < RINGX_COLL_COUNT; coll++) {
        ringx_decision_t d = ringx_decide((ringx_coll_t)coll, RINGX_ALG_RING, 1 << 20, 4);
        ck_assert_int_eq(d.alg, RINGX_ALG_RING);
        ck_assert_str_eq(d.why, "forced by MCA variable");
        ck_assert(ringx_alg_valid((ringx_coll_t)coll, RINGX_ALG_AUTO));
        ck_assert(!ringx_alg_valid((ringx_coll_t)coll, RINGX_ALG_COUNT));
    }
    ck_assert(!ringx_alg_valid(RINGX_COLL_COUNT, RINGX_ALG_RING));
}
END_TEST

START_TEST(names_are_the_pvar_and_mca_spellings)
{
    ck_assert_str_eq(ringx_coll_name(RINGX_COLL_ALLREDUCE), "allreduce");
    ck_assert_str_eq(ringx_coll_name(RINGX_COLL_ALLGATHER), "allgather");
    ck_assert_str_eq(ringx_coll_name(RINGX_COLL_REDUCE_SCATTER_BLOCK), "reduce_scatter_block");
    ck_assert_str_eq(ringx_alg_name(RINGX_ALG_RING), "ring");
    ck_assert_str_eq(ringx_fallback_name(RINGX_FALLBACK_DATATYPE), "datatype");
    ck_assert_str_eq(ringx_fallback_name(RINGX_FALLBACK_TRANSPORT), "transport");
    ck_assert_str_eq(ringx_coll_name(RINGX_COLL_COUNT), "?");
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
    tcase_add_test(decision, decision_defaults_to_ring);
    tcase_add_test(decision, decision_honours_a_valid_forced_algorithm);
    tcase_add_test(decision, names_are_the_pvar_and_mca_spellings);
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
