/*
 * coll_ringx_osched.c - nonblocking and persistent calls on one node up to
 * RINGX_POSTED_BYTES through the posted outboxes (coll_ringx_mailbox.c),
 * as a resumable schedule: each rank copies its input into its next
 * outbox, and once every peer's is in, takes what it needs from all of
 * them at once.
 *
 *   allreduce             up to RINGX_WHOLE_BYTES every rank
 *                         reduces every input, in rank order (the same
 *                         bits on every rank); above, each rank reduces
 *                         its share, publishes it in its outbox, and
 *                         copies the peers' shares out of theirs;
 *   allgather             every rank copies every block into place;
 *   reduce_scatter_block  every rank reduces its block of every input.
 *
 * Blocking calls have outboxes of their own (two calls' worth, used in
 * turn, see coll_ringx_mailbox.c); these calls may overlap, so each takes
 * the next of RINGX_POSTED_SLOTS outboxes and first waits until every peer
 * has acknowledged the call that used it last.  Without them, a small
 * nonblocking call took the message-based algorithms, whose every message
 * through UCX costs more than the copies here.
 */
#include "coll_ringx.h"

#include "ringx_host_reduce.h"

enum {
    P_SLOT,                     /* the outbox's earlier call still read somewhere */
    P_INPUTS,                   /* waiting for the peers' inputs */
    P_SHARES,                   /* allreduce by shares: waiting for the peers' shares */
    P_DONE
};

/* The bytes a rank puts in its outbox: its block (allgather) or all of
 * its input. */
static size_t input_bytes(const ringx_call_t *c)
{
    size_t bytes = c->count * c->elem_size;
    return c->coll == RINGX_COLL_REDUCE_SCATTER_BLOCK ? bytes * (size_t)c->m->size : bytes;
}

/* Only what every rank knows alike decides, not where its buffers are: a
 * rank whose data the outboxes do not hold (device memory, or staged host
 * buffers, which travel as device buffers do) declines the call in its
 * input's flag, and then every rank takes the choice without direct reads
 * (as the blocking calls' outboxes do). */
int ringx_osched_fits(const ringx_call_t *c)
{
    size_t limit = ringx_posted_bytes(c->m);
    /* two ranks: one peer's buffer to read, cheaper than the copy into the
     * outbox above half of it (see RINGX_POSTED_BYTES) */
    limit = c->m->size == 2 ? limit / 2 : limit;
    return !c->blocking && c->count > 0 && ringx_direct_possible(c->m) &&
           input_bytes(c) <= limit;
}

int ringx_osched_build(ringx_call_t *c)
{
    c->sched.engine = RINGX_ENGINE_OUTBOX;
    c->sched.u.os = (ringx_osched_t){ .call = c, .bytes = input_bytes(c) };
    return OMPI_SUCCESS;
}

/* Calls start in the same order on every rank: so are they numbered. */
int ringx_osched_start(ringx_osched_t *s)
{
    s->n = s->call->m->posted_next++;
    s->phase = P_SLOT;
    s->arrived = 0;
    s->rc = OMPI_SUCCESS;
    return OMPI_SUCCESS;
}

/* Allreduce by shares: each rank reduces its block (ringx_block_offset)
 * of every input and publishes it in its own outbox, where that block of
 * its input was, which only it reads; then copies every peer's share. */
static int by_shares(const ringx_osched_t *s)
{
    return s->call->coll == RINGX_COLL_ALLREDUCE && s->bytes > RINGX_WHOLE_BYTES;
}

/* Elements and byte offset of rank's share of an allreduce by shares. */
static size_t share_count(const ringx_call_t *c, int rank)
{
    return ringx_block_count(c->count, c->m->size, rank);
}

static size_t share_offset(const ringx_call_t *c, int rank)
{
    return ringx_block_offset(c->count, c->m->size, rank) * c->elem_size;
}

static int copy_share(ringx_osched_t *s, int rank)
{
    const ringx_call_t *c = s->call;
    size_t off = share_offset(c, rank);

    return ringx_mem_copy(&s->call->mem, c->result + off,
                          ringx_posted_data(c->m, rank, s->n) + off, share_count(c, rank) * c->elem_size);
}

/* The call's outcome so far with a peer's status added: a failure over a
 * decline over success, so that every rank ends alike whatever order it
 * saw the flags in. */
static int outcome(int rc, int status)
{
    return rc < 0 || status == OMPI_SUCCESS ? rc : status < 0 ? status : RINGX_DIRECT_DECLINED;
}

/* Every peer's part of the call in, from the next rank on: s->arrived
 * counts them. */
static int peers_in(ringx_osched_t *s, ringx_outbox_part_t part)
{
    mca_coll_ringx_module_t *m = s->call->m;
    int in;

    for (int peer = (m->rank + 1 + s->arrived) % m->size;
         s->arrived < m->size - 1 &&
         (in = ringx_posted_arrived(m, peer, s->n, part)) != RINGX_PENDING;
         peer = (peer + 1) % m->size) {
        s->rc = outcome(s->rc, in == RINGX_DONE ? OMPI_SUCCESS : in);
        if (part == RINGX_OUTBOX_RESULT && s->rc == OMPI_SUCCESS) {
            s->rc = copy_share(s, peer);
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
        in[r] = ringx_posted_data(m, r, s->n);
    }
    if (in != NULL) {
        ringx_host_reduce_all(c->result, in, m->size, c->count, c->red.type, c->red.op);
    }
    s->rc = in != NULL ? OMPI_SUCCESS : OMPI_ERR_OUT_OF_RESOURCE;
}

static void gather(ringx_osched_t *s)
{
    mca_coll_ringx_module_t *m = s->call->m;
    size_t block = s->bytes;

    for (int r = 0; r < m->size && s->rc == OMPI_SUCCESS; r++) {
        char *dst = s->call->result + (size_t)r * block;
        const char *src = r == m->rank ? s->call->input : ringx_posted_data(m, r, s->n);
        s->rc = dst == src ? OMPI_SUCCESS : ringx_mem_copy(&s->call->mem, dst, src, block);
    }
}

/* Reduces each rank's input at offset, count elements, into dst, two
 * operands at a time in rank order, as the blocking calls' outboxes reduce
 * a block that one rank reduces for all (reduce_whole's exact float sums,
 * which keep the ranks' whole reductions alike, cost more). */
static void reduce_pairwise(ringx_osched_t *s, char *dst, size_t offset, size_t count)
{
    const ringx_call_t *c = s->call;
    mca_coll_ringx_module_t *m = c->m;

    for (int r = 1; r < m->size; r++) {
        ringx_host_reduce(dst, r == 1 ? ringx_posted_data(m, 0, s->n) + offset : dst,
                          ringx_posted_data(m, r, s->n) + offset, count, c->red.type, c->red.op);
    }
}

/* This rank's share of an allreduce by shares, reduced into its result and
 * put where its outbox held that block of its input. */
static void reduce_share(ringx_osched_t *s)
{
    const ringx_call_t *c = s->call;
    mca_coll_ringx_module_t *m = c->m;
    size_t off = share_offset(c, m->rank), count = share_count(c, m->rank);

    reduce_pairwise(s, c->result + off, off, count);
    s->rc = ringx_mem_copy(&s->call->mem, ringx_posted_data(m, m->rank, s->n) + off,
                           c->result + off, count * c->elem_size);
}

/* With every input in (s->rc: all went in): what this rank makes of them. */
static void take(ringx_osched_t *s)
{
    const ringx_call_t *c = s->call;

    if (s->rc != OMPI_SUCCESS) {
        /* some rank's input did not go in: the call fails on every rank */
    } else if (c->coll == RINGX_COLL_ALLGATHER) {
        gather(s);
    } else if (by_shares(s)) {
        reduce_share(s);
    } else if (c->coll == RINGX_COLL_ALLREDUCE) {
        reduce_whole(s);
    } else {
        reduce_pairwise(s, c->result, (size_t)c->m->rank * c->count * c->elem_size, c->count);
    }
}

/* The call acknowledged (this rank reads no peer's outbox any more), and
 * counted. */
static void finish(ringx_osched_t *s)
{
    const ringx_call_t *c = s->call;
    mca_coll_ringx_module_t *m = c->m;
    size_t share = by_shares(s) ? share_count(c, m->rank) * c->elem_size : 0;

    ringx_posted_done(m, s->n);
    if (s->rc == OMPI_SUCCESS) {
        ringx_count(&mca_coll_ringx_counters.mailbox[c->coll], 1);
        /* what the peers took: all of the outbox, or their blocks of the
         * input and this rank's share */
        s->bytes_sent += by_shares(s) ? s->bytes - share + share * (size_t)(m->size - 1)
                                      : s->bytes * (size_t)(m->size - 1);
    }
}

int ringx_osched_progress(ringx_osched_t *s)
{
    mca_coll_ringx_module_t *m = s->call->m;

    if (s->phase == P_DONE) {
        return s->rc == OMPI_SUCCESS ? RINGX_DONE : s->rc;    /* finished before */
    }
    if (s->phase == P_SLOT) {
        if (!ringx_posted_free(m, s->n)) {
            return RINGX_PENDING;
        }
        s->rc = ringx_outbox_holds(&s->call->mem)
                    ? ringx_mem_copy(&s->call->mem, ringx_posted_data(m, m->rank, s->n),
                                     s->call->input, s->bytes)
                    : RINGX_DIRECT_DECLINED;
        /* published in any case: the peers must not wait for ever */
        ringx_posted_publish(m, s->n, RINGX_OUTBOX_INPUT, s->rc);
        s->phase = P_INPUTS;
    }
    if (s->phase == P_INPUTS) {
        if (!peers_in(s, RINGX_OUTBOX_INPUT)) {
            return RINGX_PENDING;
        }
        /* whether every input went in, every rank knows alike: only then
         * do the peers wait for this rank's share */
        s->phase = s->rc == OMPI_SUCCESS && by_shares(s) ? P_SHARES : P_DONE;
        take(s);
        if (s->phase == P_SHARES) {
            ringx_posted_publish(m, s->n, RINGX_OUTBOX_RESULT, s->rc);
            s->arrived = 0;
        }
    }
    if (s->phase == P_SHARES) {
        if (!peers_in(s, RINGX_OUTBOX_RESULT)) {
            return RINGX_PENDING;
        }
        s->phase = P_DONE;
    }
    finish(s);
    return s->rc == OMPI_SUCCESS ? RINGX_DONE : s->rc;
}
