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

/* ------------------------------------------- recursive doubling/halving */

/*
 * The log(p) algorithms run on the largest power of two pof2 <= p.  The
 * first 2*rem ranks (rem = p - pof2) pair up: even rank 2i folds its data
 * into odd rank 2i+1, which takes part as newrank i and hands the result
 * back at the end; ranks from 2*rem on take part as newrank rank - rem.
 * Newrank i stands for the original ranks ringx_fold_first(i) ..
 * ringx_fold_first(i+1) - 1, which are contiguous.
 */
static inline int ringx_pof2_floor(int p)
{
    int k = 1;
    while (k <= p / 2) {
        k *= 2;
    }
    return k;
}

/* log2 of a power of two. */
static inline int ringx_log2_pof2(int pof2)
{
    int k = 0;
    while ((1 << k) < pof2) {
        k++;
    }
    return k;
}

/* The steps of a folded log(p) exchange (recursive doubling): the fold in,
 * log2 of the power-of-two part, the fold out; every rank takes them all. */
static inline int ringx_doubling_steps(int p)
{
    return 2 + ringx_log2_pof2(ringx_pof2_floor(p));
}

static inline int ringx_is_pof2(int p)
{
    return p > 0 && (p & (p - 1)) == 0;
}

/* The newrank of rank, or -1 if it folds its data into rank + 1. */
static inline int ringx_fold_newrank(int rank, int p)
{
    int rem = p - ringx_pof2_floor(p);
    if (rank < 2 * rem) {
        return rank % 2 ? rank / 2 : -1;
    }
    return rank - rem;
}

/* The rank that takes part as newrank. */
static inline int ringx_fold_rank(int newrank, int p)
{
    int rem = p - ringx_pof2_floor(p);
    return newrank < rem ? 2 * newrank + 1 : newrank + rem;
}

/* The first original rank newrank stands for (newrank == pof2: p). */
static inline int ringx_fold_first(int newrank, int p)
{
    int rem = p - ringx_pof2_floor(p);
    return newrank < rem ? 2 * newrank : newrank + rem;
}

/*
 * Recursive halving over the newranks: at the step with distance mask
 * (pof2/2, pof2/4, .., 1) a newrank keeps the half of its current window
 * of newranks [lo, lo + 2*mask) that contains it and sends the other half
 * to newrank ^ mask.  Gives the half kept and the half sent, as newrank
 * ranges.  After the last step a newrank's window is itself.
 */
static inline void ringx_halving_ranges(int newrank, int mask, int *keep_lo, int *keep_hi,
                                        int *send_lo, int *send_hi)
{
    int lo = newrank & ~(2 * mask - 1), mid = lo + mask;
    if (newrank & mask) {
        *keep_lo = mid, *keep_hi = mid + mask, *send_lo = lo, *send_hi = mid;
    } else {
        *keep_lo = lo, *keep_hi = mid, *send_lo = mid, *send_hi = mid + mask;
    }
}

/*
 * Recursive doubling of windows (the allgather half): before the step with
 * distance mask (1, 2, .., pof2/2) a newrank holds the window of mask
 * newranks starting at newrank & ~(mask-1); it sends that window to
 * newrank ^ mask and receives the partner's.
 */
static inline int ringx_doubling_window(int newrank, int mask)
{
    return newrank & ~(mask - 1);
}

/*
 * Bruck's allgather: at the step with distance d (1, 2, 4, .. < p) a rank
 * sends its first ringx_bruck_count(p, d) gathered blocks to rank - d and
 * receives as many from rank + d, appended after its first d blocks.
 */
static inline int ringx_bruck_count(int p, int d)
{
    return d < p - d ? d : p - d;
}

/*
 * Neighbour exchange (allgather, even p; Chen et al., "Performance
 * evaluation of Allgather algorithms on terascale Linux cluster with fast
 * Ethernet", 2005).  Blocks go in pairs {2k, 2k+1}, k < p/2.  At step 0
 * each rank swaps its own block with the other rank of its pair; at each
 * step i = 1 .. p/2-1 it swaps with one neighbour or the other, by turns,
 * passing on the pair it got at the step before: p/2 steps instead of the
 * ring's p-1.
 */
static inline int ringx_neighbor_partner(int rank, int p, int step)
{
    /* even ranks start upwards, odd ranks downwards, then they alternate */
    int up = (rank % 2 == 0) == (step % 2 == 0);
    return up ? (rank + 1) % p : (rank + p - 1) % p;
}

/* The pair a rank receives at step >= 1: its own pair's index plus -1, +1,
 * -2, +2, .. (mirrored for odd ranks), modulo p/2. */
static inline int ringx_neighbor_recv_pair(int rank, int p, int step)
{
    int n = p / 2, d = step % 2 ? -(step + 1) / 2 : step / 2;
    d = rank % 2 ? -d : d;
    return ((rank / 2 + d) % n + n) % n;
}

/* The pair a rank sends at step >= 1: the one it holds since step 0 first,
 * then the one it received at the step before. */
static inline int ringx_neighbor_send_pair(int rank, int p, int step)
{
    return step <= 1 ? rank / 2 : ringx_neighbor_recv_pair(rank, p, step - 1);
}

/* ------------------------------------------------------ k-nomial tree */

/*
 * A k-nomial tree over n members rooted at member 0, for the node leaders'
 * gathers, reductions, broadcasts and scatters.  Radix k >= n is the flat
 * fan-in (every member sends to member 0, one step each: n - 1 steps);
 * radix 2 the binomial tree (ceil(log2 n) steps).  In general there are
 * ceil(log_k n) rounds of k - 1 steps, one partner per member and step:
 * at fan-in step s of round r = s / (k - 1), with d = k^r and
 * j = s mod (k - 1) + 1, member i with i mod kd = jd sends everything it
 * holds to i - jd, and member i with i mod kd = 0 receives from i + jd
 * where that exists.  Before round r member i (i mod d = 0) holds the
 * data of members i .. i + span - 1 (ringx_tree_span).  Fan-out takes the
 * steps backwards, each pair exchanging the other way.  Every member takes
 * every step.
 */
static inline int ringx_tree_radix(int n, int k)
{
    return k < n ? k : n < 2 ? 2 : n;
}

static inline int ringx_tree_steps(int n, int k)
{
    int rounds = 0;

    k = ringx_tree_radix(n, k);
    for (long long d = 1; d < n; d *= k) {
        rounds++;
    }
    return rounds * (k - 1);
}

/* d = k^r of fan-in step s. */
static inline int ringx_tree_distance(int n, int k, int s)
{
    int d = 1;

    k = ringx_tree_radix(n, k);
    for (int r = s / (k - 1); r > 0; r--) {
        d *= k;
    }
    return d;
}

/* Member i's partner at fan-in step s, or -1; *sends: i sends to it (else
 * receives from it).  At fan-out step s the same pair exchanges the other
 * way. */
static inline int ringx_tree_peer(int i, int n, int k, int s, int *sends)
{
    int d = ringx_tree_distance(n, k, s);
    int jd = (s % (ringx_tree_radix(n, k) - 1) + 1) * d;
    int kd = ringx_tree_radix(n, k) * d;

    *sends = i % kd == jd;
    if (*sends) {
        return i - jd;
    }
    return i % kd == 0 && i + jd < n ? i + jd : -1;
}

/* How many members' data member i holds when it sends at fan-in step s
 * (members i .. i + span - 1), or what it receives from partner p at s
 * (ringx_tree_span(p, n, k, s)). */
static inline int ringx_tree_span(int i, int n, int k, int s)
{
    int d = ringx_tree_distance(n, k, s);
    return n - i < d ? n - i : d;
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
/* Ids from here up are ringx's own, for communicators whose members share
 * no context id it can use; Open MPI's ids serve below. */
#define RINGX_TAG_OWN_ID_BASE (1u << (RINGX_TAG_ID_BITS - 1))
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
