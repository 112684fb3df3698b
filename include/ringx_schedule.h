/*
 * ringx_schedule.h - the pure arithmetic of ringx's schedules: how a
 * buffer is cut into per-rank blocks and pipeline segments, which block a
 * rank sends and receives at each ring step, and how a message tag is
 * built.  No MPI, no UCX: unit-tested on its own.
 */
#ifndef RINGX_SCHEDULE_H
#define RINGX_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------ blocks */

/* count elements are cut into nblocks blocks whose sizes differ by at most
 * one element; the first (count % nblocks) blocks are the larger ones. */
static inline size_t ringx_block_count(size_t count, int nblocks, int block)
{
    size_t base = count / (size_t)nblocks;
    return base + ((size_t)block < count % (size_t)nblocks ? 1 : 0);
}

static inline size_t ringx_block_offset(size_t count, int nblocks, int block)
{
    size_t base = count / (size_t)nblocks;
    size_t extra = count % (size_t)nblocks;
    size_t b = (size_t)block;
    return b * base + (b < extra ? b : extra);
}

/* ---------------------------------------------------------- segments */

/* A block of n elements travels as ceil(n / seg_elems) segments. */
static inline size_t ringx_segment_total(size_t n, size_t seg_elems)
{
    return (n + seg_elems - 1) / seg_elems;
}

static inline size_t ringx_segment_count(size_t n, size_t seg_elems, size_t seg)
{
    size_t first = seg * seg_elems;
    if (first >= n) {
        return 0;
    }
    return n - first < seg_elems ? n - first : seg_elems;
}

/* Elements per segment for a segment size in bytes: at least one element,
 * so that elements larger than the segment size still travel. */
static inline size_t ringx_segment_elems(size_t segment_bytes, size_t elem_size)
{
    size_t n = elem_size ? segment_bytes / elem_size : 0;
    return n ? n : 1;
}

/* -------------------------------------------------------------- ring */

static inline int ringx_mod(long long a, int p)
{
    long long m = a % p;
    return (int)(m < 0 ? m + p : m);
}

/*
 * Every ring collective of ringx is the same walk: at step t a rank receives
 * block ringx_ring_recv_block() from its left neighbour and sends to its
 * right neighbour the block it received at step t-1.  shift selects where
 * the walk starts:
 *   shift 0: step 0 sends the rank's own block (allgather; allreduce, whose
 *            reduce-scatter half leaves block rank+1 complete on each rank
 *            and whose allgather half continues the same walk);
 *   shift 1: step 0 sends block rank-1, so that after p-1 reducing steps
 *            rank r holds the complete block r (reduce_scatter_block).
 */
static inline int ringx_ring_recv_block(int rank, int p, int step, int shift)
{
    return ringx_mod((long long)rank - step - 1 - shift, p);
}

static inline int ringx_ring_send_block(int rank, int p, int step, int shift)
{
    return ringx_mod((long long)rank - step - shift, p);
}

/* --------------------------------------------------------------- tags */

/*
 * A 64-bit UCX tag: | comm id : 24 | call seq : 16 | step : 12 | segment : 12 |
 * The communicator id is agreed by the members when ringx first serves a
 * call on it, the sequence number counts ringx calls on the communicator,
 * step and segment locate the message inside the call.  Each step receives
 * from one peer only, so step and segment wrapping around in very long
 * calls stays safe: UCX matches messages from one sender in order.
 */
#define RINGX_TAG_ID_BITS   24
#define RINGX_TAG_SEQ_BITS  16
#define RINGX_TAG_STEP_BITS 12
#define RINGX_TAG_SEG_BITS  12
#define RINGX_TAG_ID_MAX    ((1u << RINGX_TAG_ID_BITS) - 1)
#define RINGX_TAG_MASK_ALL  UINT64_MAX

static inline uint64_t ringx_tag_make(uint32_t comm_id, uint32_t seq, uint32_t step,
                                      uint64_t seg)
{
    uint64_t t = comm_id & ((1u << RINGX_TAG_ID_BITS) - 1);
    t = (t << RINGX_TAG_SEQ_BITS) | (seq & ((1u << RINGX_TAG_SEQ_BITS) - 1));
    t = (t << RINGX_TAG_STEP_BITS) | (step & ((1u << RINGX_TAG_STEP_BITS) - 1));
    t = (t << RINGX_TAG_SEG_BITS) | (seg & ((1u << RINGX_TAG_SEG_BITS) - 1));
    return t;
}

/* Step values below RINGX_TAG_DATA_STEPS carry data (long walks wrap);
 * the last value marks the end-of-call handshake. */
#define RINGX_TAG_DATA_STEPS ((1u << RINGX_TAG_STEP_BITS) - 1)
#define RINGX_TAG_FIN_STEP RINGX_TAG_DATA_STEPS

static inline uint64_t ringx_tag_data(uint32_t comm_id, uint32_t seq, uint32_t step,
                                      uint64_t seg)
{
    return ringx_tag_make(comm_id, seq, step % RINGX_TAG_DATA_STEPS, seg);
}

static inline uint64_t ringx_tag_fin(uint32_t comm_id, uint32_t seq)
{
    return ringx_tag_make(comm_id, seq, RINGX_TAG_FIN_STEP, 0);
}

static inline uint32_t ringx_tag_comm_id(uint64_t tag)
{
    return (uint32_t)(tag >> (RINGX_TAG_SEQ_BITS + RINGX_TAG_STEP_BITS + RINGX_TAG_SEG_BITS));
}

static inline uint32_t ringx_tag_seq(uint64_t tag)
{
    return (uint32_t)(tag >> (RINGX_TAG_STEP_BITS + RINGX_TAG_SEG_BITS)) &
           ((1u << RINGX_TAG_SEQ_BITS) - 1);
}

static inline uint32_t ringx_tag_step(uint64_t tag)
{
    return (uint32_t)(tag >> RINGX_TAG_SEG_BITS) & ((1u << RINGX_TAG_STEP_BITS) - 1);
}

static inline uint32_t ringx_tag_seg(uint64_t tag)
{
    return (uint32_t)tag & ((1u << RINGX_TAG_SEG_BITS) - 1);
}

#endif /* RINGX_SCHEDULE_H */
