/*
 * coll_ringx_osched.c - calls on one node through the outboxes
 * (coll_ringx_mailbox.c), as a resumable schedule: each rank copies its
 * input into its next outbox, and once every peer's is in, takes what it
 * needs from all of them at once.
 *
 *   allreduce             up to RINGX_WHOLE_BYTES every rank
 *                         reduces every input, in rank order (the same
 *                         bits on every rank); above, each rank reduces
 *                         its share, publishes it in its outbox, and
 *                         copies the peers' shares out of theirs;
 *   allgather             every rank copies every block into place;
 *   reduce_scatter_block  every rank reduces its block of every input.
 *
 * A call larger than an outbox (where calls of its size do not read the
 * peers' buffers: coll_ringx_direct_buffer_bytes) goes in pieces, one
 * outbox each, numbered one after the other: a piece is a run of elements
 * of the vector (allreduce), of a rank's block (allgather), or of every
 * block of the input, side by side (reduce_scatter_block).
 *
 * Blocking calls take the blocking outboxes, two used in turn, each piece
 * numbered as a call of its own; nonblocking and persistent calls may
 * overlap, so each of their pieces takes the next of the posted outboxes
 * and first waits until every rank has acknowledged the piece that used
 * it last.  (Without the posted ones, a small nonblocking call took the
 * message-based algorithms, whose every message through UCX costs more
 * than the copies here.)
 */
#include "coll_ringx.h"

#include <unistd.h>

#include "ringx_host_reduce.h"

enum {
    P_SLOT,                     /* the outbox's earlier piece still read somewhere */
    P_INPUTS,                   /* waiting for the peers' inputs */
    P_SHARES,                   /* allreduce by shares: waiting for the peers' shares */
    P_DONE
};

/* Runs of elements side by side in an outbox: one, or reduce_scatter_block's
 * p blocks. */
static size_t units(const ringx_call_t *c)
{
    return c->coll == RINGX_COLL_REDUCE_SCATTER_BLOCK ? (size_t)c->m->size : 1;
}

/* Elements of each run that one outbox holds: a piece. */
static size_t piece_elems(const ringx_call_t *c)
{
    return ringx_outbox_bytes(c->m, !c->blocking) / (c->elem_size * units(c));
}

/* Nonblocking and persistent calls on two ranks whose buffers may be read
 * pass through the posted outboxes up to this size: beyond it, reading
 * the one peer's buffer costs less than the copy into the outbox (np 2,
 * 2026-12-05: allreduce 192 KiB 21 us reading it, 27 through the
 * outboxes). */
#define TWO_RANKS_POSTED_BYTES (128 * 1024)

/* Only what every rank knows alike decides, not where its buffers are: a
 * rank whose data the outboxes do not hold (device memory, or staged host
 * buffers, which travel as device buffers do) declines the call in its
 * input's flag, and then every rank takes the choice without direct reads
 * (a declined call).  Two ranks whose buffers may be read: one peer's
 * buffer to read is cheaper than the copy into a posted outbox beyond
 * TWO_RANKS_POSTED_BYTES. */
int ringx_osched_fits(const ringx_call_t *c)
{
    size_t input = c->count * c->elem_size * units(c);
    int buffers_cheaper = !c->blocking && c->m->size == 2 &&
                          c->m->mailbox.buffers_from[0][c->coll] > 0 &&
                          input > TWO_RANKS_POSTED_BYTES;

    return c->count > 0 && ringx_direct_possible(c->m) && piece_elems(c) > 0 && !buffers_cheaper;
}

int ringx_osched_build(ringx_call_t *c)
{
    size_t piece = piece_elems(c);

    c->sched.engine = RINGX_ENGINE_OUTBOX;
    c->sched.u.os = (ringx_osched_t){ .call = c,
                                      .posted = !c->blocking,
                                      .piece_elems = piece,
                                      .npieces = (int)((c->count + piece - 1) / piece) };
    return OMPI_SUCCESS;
}

/* Calls start in the same order on every rank: so are their pieces
 * numbered (a blocking call's as it goes: one that fails ends there). */
int ringx_osched_start(ringx_osched_t *s)
{
    if (s->posted) {
        s->n = s->call->m->posted_next;
        s->call->m->posted_next += (uint64_t)s->npieces;
    }
    s->piece = 0;
    s->phase = P_SLOT;
    s->arrived = 0;
    s->rc = OMPI_SUCCESS;
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------- the piece */

static uint64_t number(const ringx_osched_t *s)
{
    return s->posted ? s->n + (uint64_t)s->piece : s->n;
}

/* The piece's first element of each run, and how many it takes. */
static size_t first(const ringx_osched_t *s)
{
    return (size_t)s->piece * s->piece_elems;
}

static size_t elems(const ringx_osched_t *s)
{
    size_t left = s->call->count - first(s);
    return left < s->piece_elems ? left : s->piece_elems;
}

/* What this rank puts in its outbox for the piece. */
static size_t piece_bytes(const ringx_osched_t *s)
{
    return elems(s) * s->call->elem_size * units(s->call);
}

static char *outbox_of(const ringx_osched_t *s, int rank)
{
    return ringx_outbox_data(s->call->m, s->posted, rank, number(s));
}

/* The piece's part of the result: where its first element goes. */
static char *result_at(const ringx_osched_t *s)
{
    return s->call->result + first(s) * s->call->elem_size;
}

/* Where the piece of rank's block of an allgather's result goes. */
static char *block_at(const ringx_osched_t *s, int rank)
{
    return result_at(s) + (size_t)rank * s->call->count * s->call->elem_size;
}

static int fill(ringx_osched_t *s)
{
    ringx_call_t *c = s->call;
    size_t run = elems(s) * c->elem_size;
    char *out = outbox_of(s, c->m->rank);
    int rc = ringx_outbox_holds(&c->mem) ? OMPI_SUCCESS : RINGX_DIRECT_DECLINED;

    for (size_t u = 0; rc == OMPI_SUCCESS && u < units(c); u++) {
        rc = ringx_mem_copy(&c->mem, out + u * run,
                            c->input + (u * c->count + first(s)) * c->elem_size, run);
    }
    return rc;
}

/* An allgather's own block put in place while the peers fill their
 * outboxes (out of place: what a declined call's algorithm writes there
 * too). */
static int own_block(ringx_osched_t *s)
{
    const ringx_call_t *c = s->call;
    char *dst = block_at(s, c->m->rank);
    const char *src = c->input + first(s) * c->elem_size;

    return c->coll != RINGX_COLL_ALLGATHER || dst == src
               ? OMPI_SUCCESS
               : ringx_mem_copy(&s->call->mem, dst, src, elems(s) * c->elem_size);
}

/* Allreduce by shares: each rank reduces its block (ringx_block_offset)
 * of every input and publishes it in its own outbox, where that block of
 * its input was, which only it reads; then copies every peer's share. */
static int by_shares(const ringx_osched_t *s)
{
    return s->call->coll == RINGX_COLL_ALLREDUCE && piece_bytes(s) > RINGX_WHOLE_BYTES;
}

/* Elements and byte offset (in the piece) of rank's share. */
static size_t share_count(const ringx_osched_t *s, int rank)
{
    return ringx_block_count(elems(s), s->call->m->size, rank);
}

static size_t share_offset(const ringx_osched_t *s, int rank)
{
    return ringx_block_offset(elems(s), s->call->m->size, rank) * s->call->elem_size;
}

static int copy_share(ringx_osched_t *s, int rank)
{
    size_t off = share_offset(s, rank);
    return ringx_mem_copy(&s->call->mem, result_at(s) + off, outbox_of(s, rank) + off,
                          share_count(s, rank) * s->call->elem_size);
}

/* The call's outcome so far with a peer's status added: a failure over a
 * decline over success, so that every rank ends alike whatever order it
 * saw the flags in. */
static int outcome(int rc, int status)
{
    return rc < 0 || status == OMPI_SUCCESS ? rc : status < 0 ? status : RINGX_DIRECT_DECLINED;
}

/* A peer's block of an allgather's piece, copied out of its outbox as
 * soon as it is there, while the rank waits for the others (nonblocking,
 * np 8 beside two busy processes, 2026-12-07: 1-16 MiB 1.17-1.43x libnbc
 * against 0.88-1.22x copying them all once every one was in). */
static int copy_block(ringx_osched_t *s, int rank)
{
    return ringx_mem_copy(&s->call->mem, block_at(s, rank), outbox_of(s, rank),
                          elems(s) * s->call->elem_size);
}

/* Every peer's part of the piece in, from the next rank on: s->arrived
 * counts them.  What a rank takes of each peer alone (a share of the
 * result, a block of an allgather) it takes on arrival. */
static int peers_in(ringx_osched_t *s, ringx_outbox_part_t part)
{
    mca_coll_ringx_module_t *m = s->call->m;
    int in;

    for (int peer = (m->rank + 1 + s->arrived) % m->size;
         s->arrived < m->size - 1 &&
         (in = ringx_outbox_arrived(m, s->posted, peer, number(s), part)) != RINGX_PENDING;
         peer = (peer + 1) % m->size) {
        s->rc = outcome(s->rc, in == RINGX_DONE ? OMPI_SUCCESS : in);
        if (part == RINGX_OUTBOX_RESULT && s->rc == OMPI_SUCCESS) {
            s->rc = copy_share(s, peer);
        } else if (s->call->coll == RINGX_COLL_ALLGATHER && s->rc == OMPI_SUCCESS) {
            s->rc = copy_block(s, peer);
        }
        s->arrived++;
    }
    return s->arrived == m->size - 1;
}

/* A whole allreduce: every rank's input reduced into the result, in rank
 * order, float sums exact (the same bits on every rank). */
static void reduce_whole(ringx_osched_t *s)
{
    enum { ON_STACK = 64 };
    const ringx_call_t *c = s->call;
    mca_coll_ringx_module_t *m = c->m;
    const void *stack[ON_STACK];
    const void **in = m->size <= ON_STACK
                          ? stack
                          : ringx_mem_scratch(&s->call->mem, RINGX_SCRATCH_BLOCKS,
                                              sizeof(*in) * (size_t)m->size);

    for (int r = 0; in != NULL && r < m->size; r++) {
        in[r] = outbox_of(s, r);
    }
    if (in != NULL) {
        ringx_host_reduce_all(result_at(s), in, m->size, elems(s), c->red.type, c->red.op);
    }
    s->rc = in != NULL ? OMPI_SUCCESS : OMPI_ERR_OUT_OF_RESOURCE;
}

/* reduce_scatter_block: this rank's block of the piece reduced straight
 * into its result, two operands at a time in rank order (reduce_whole's
 * exact float sums, which keep the ranks' whole reductions alike, are not
 * needed where one rank reduces for all, and cost more). */
static void reduce_block(ringx_osched_t *s)
{
    const ringx_call_t *c = s->call;
    size_t offset = (size_t)c->m->rank * elems(s) * c->elem_size;

    for (int r = 1; r < c->m->size; r++) {
        ringx_host_reduce(result_at(s), r == 1 ? outbox_of(s, 0) + offset : result_at(s),
                          outbox_of(s, r) + offset, elems(s), c->red.type, c->red.op);
    }
}

/* This rank's share of an allreduce by shares, reduced where its outbox
 * holds that block of its input, which no peer reads: computed once, on
 * one rank, its order of operands is every rank's. */
static void reduce_share(ringx_osched_t *s)
{
    const ringx_call_t *c = s->call;
    mca_coll_ringx_module_t *m = c->m;
    size_t off = share_offset(s, m->rank), count = share_count(s, m->rank);
    char *mine = outbox_of(s, m->rank) + off;

    for (int k = 1; k < m->size; k++) {
        ringx_host_reduce(mine, mine, outbox_of(s, (m->rank + k) % m->size) + off, count,
                          c->red.type, c->red.op);
    }
}

/* With every input in (s->rc: all went in): what this rank makes of them. */
static void take(ringx_osched_t *s)
{
    const ringx_call_t *c = s->call;

    if (s->rc != OMPI_SUCCESS || c->coll == RINGX_COLL_ALLGATHER) {
        /* some rank's input did not go in (the call fails on every rank),
         * or the blocks are in (peers_in) */
    } else if (by_shares(s)) {
        reduce_share(s);
    } else if (c->coll == RINGX_COLL_ALLREDUCE) {
        reduce_whole(s);
    } else {
        reduce_block(s);
    }
}

/* The piece acknowledged (this rank reads no peer's outbox for it any
 * more); then the next, or the call counted. */
static void next_piece(ringx_osched_t *s)
{
    const ringx_call_t *c = s->call;
    mca_coll_ringx_module_t *m = c->m;
    size_t bytes = piece_bytes(s), share = by_shares(s) ? share_count(s, m->rank) * c->elem_size
                                                        : 0;

    ringx_outbox_done(m, s->posted, number(s));
    if (s->rc == OMPI_SUCCESS) {
        /* what the peers took: all of the outbox, or their blocks of the
         * input and this rank's share */
        s->bytes_sent += by_shares(s) ? bytes - share + share * (size_t)(m->size - 1)
                                      : bytes * (size_t)(m->size - 1);
    }
    s->arrived = 0;
    /* a blocking call's later pieces take no numbers once one failed on
     * every rank (each saw every input's flag) */
    s->phase = ++s->piece < s->npieces && (s->posted || s->rc == OMPI_SUCCESS) ? P_SLOT : P_DONE;
    if (s->phase == P_DONE && s->rc == OMPI_SUCCESS) {
        ringx_count(&mca_coll_ringx_counters.mailbox[c->coll], 1);
    }
}

/* Testing (coll_ringx_test_outbox_delay_us): a rank slow to read its
 * peers' outboxes, which may meanwhile free the communicator. */
static void test_delay(void)
{
    if (mca_coll_ringx_component.test_outbox_delay_us > 0) {
        usleep((useconds_t)mca_coll_ringx_component.test_outbox_delay_us);
    }
}

/* One step of the piece under way; RINGX_DONE once it is over. */
static int piece_progress(ringx_osched_t *s)
{
    mca_coll_ringx_module_t *m = s->call->m;

    if (s->phase == P_SLOT) {
        if (!s->posted) {
            s->n = ringx_mailbox_next_call(m);
        } else if (!ringx_outbox_free(m, 1, number(s))) {
            return RINGX_PENDING;
        }
        /* after an earlier piece failed or declined the piece is skipped:
         * its flag says so to a peer that may not know (a failure of this
         * rank's own, after every input was in) */
        s->rc = s->rc == OMPI_SUCCESS ? fill(s) : s->rc;
        /* published in any case: the peers must not wait for ever */
        ringx_outbox_publish(m, s->posted, number(s), RINGX_OUTBOX_INPUT, s->rc);
        if (s->piece > 0 && s->rc != OMPI_SUCCESS) {
            return RINGX_DONE;
        }
        s->rc = s->rc == OMPI_SUCCESS ? own_block(s) : s->rc;
        test_delay();
        s->phase = P_INPUTS;
    }
    if (s->phase == P_INPUTS) {
        if (!peers_in(s, RINGX_OUTBOX_INPUT)) {
            return RINGX_PENDING;
        }
        /* whether every input went in, every rank knows alike: only then
         * do the peers wait for this rank's share */
        take(s);
        if (s->rc != OMPI_SUCCESS || !by_shares(s)) {
            return RINGX_DONE;
        }
        ringx_outbox_publish(m, s->posted, number(s), RINGX_OUTBOX_RESULT, s->rc);
        /* while the peers reduce theirs */
        s->rc = copy_share(s, m->rank);
        s->arrived = 0;
        s->phase = P_SHARES;
    }
    return peers_in(s, RINGX_OUTBOX_RESULT) ? RINGX_DONE : RINGX_PENDING;
}

int ringx_osched_progress(ringx_osched_t *s)
{
    while (s->phase != P_DONE) {
        if (piece_progress(s) == RINGX_PENDING) {
            return RINGX_PENDING;
        }
        next_piece(s);
    }
    return s->rc == OMPI_SUCCESS ? RINGX_DONE : s->rc;
}
