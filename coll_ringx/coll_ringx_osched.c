/*
 * coll_ringx_osched.c - small nonblocking and persistent calls on one node
 * through the posted outboxes (coll_ringx_mailbox.c), as a resumable
 * schedule: each rank copies its input into its next outbox, and once
 * every peer's is in, takes what it needs from all of them at once.
 *
 *   allreduce             every rank reduces every input, in rank order
 *                         (the same bits on every rank);
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
    P_DONE
};

/* The bytes a rank puts in its outbox: its block (allgather) or all of
 * its input. */
static size_t input_bytes(const ringx_call_t *c)
{
    size_t bytes = c->count * c->elem_size;
    return c->coll == RINGX_COLL_REDUCE_SCATTER_BLOCK ? bytes * (size_t)c->m->size : bytes;
}

/*
 * The most a rank puts in its outbox.  reduce_scatter_block fills the
 * outboxes (RINGX_POSTED_BYTES), the others up to coll_ringx_mailbox_bytes:
 * measured with ringx_bench -f nonblocking (2 cores, 2026-12-05, ratios to
 * libnbc, 16 KiB outboxes against 4 KiB), reduce_scatter_block of 8-16 KiB
 * went 2.5-2.8x instead of 1.5-1.8x at np 4 and 2.0-2.1x instead of
 * 1.2x at np 8, but allreduce 16 KiB, every rank reducing every input, went
 * 1.14x instead of 1.34x at np 4 (np 2: 1.70x instead of 1.93x).
 */
static size_t fits_bytes(const ringx_call_t *c)
{
    return c->coll == RINGX_COLL_REDUCE_SCATTER_BLOCK
               ? ringx_posted_bytes(c->m)
               : (ringx_posted_bytes(c->m) > 0 ? c->m->mailbox.bytes : 0);
}

/* Only what every rank knows alike decides: a rank whose host buffers are
 * staged (coll_ringx_stage_host_buffers, for tests) goes this way as well,
 * copying with its backend; device memory never reaches a nonblocking or
 * persistent call (ringx hands it on). */
int ringx_osched_fits(const ringx_call_t *c)
{
    return !c->blocking && c->count > 0 && !ringx_memtype_on_device(c->mem.type) &&
           ringx_direct_possible(c->m) && input_bytes(c) <= fits_bytes(c);
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

/* Every peer's input in, from the next rank on. */
static int inputs_in(ringx_osched_t *s)
{
    mca_coll_ringx_module_t *m = s->call->m;
    int in;

    while (s->arrived < m->size - 1 &&
           (in = ringx_posted_arrived(m, (m->rank + 1 + s->arrived) % m->size, s->n)) != 0) {
        s->rc = s->rc == OMPI_SUCCESS && in < 0 ? in : s->rc;
        s->arrived++;
    }
    return s->arrived == m->size - 1;
}

/* Reduces each rank's input at offset, count elements, into the result. */
static void reduce_all(ringx_osched_t *s, size_t offset, size_t count)
{
    enum { ON_STACK = 64 };
    mca_coll_ringx_module_t *m = s->call->m;
    const void *stack[ON_STACK];
    const void **in = m->size <= ON_STACK
                          ? stack
                          : ringx_mem_scratch(&s->call->mem, RINGX_SCRATCH_BLOCKS,
                                              sizeof(*in) * (size_t)m->size);

    for (int r = 0; in != NULL && r < m->size; r++) {
        in[r] = ringx_posted_data(m, r, s->n) + offset;
    }
    if (in != NULL) {
        ringx_host_reduce_all(s->call->result, in, m->size, count, s->call->red.type,
                              s->call->red.op);
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

/* With every input in: this rank's result, and the call acknowledged. */
static void take(ringx_osched_t *s)
{
    const ringx_call_t *c = s->call;
    mca_coll_ringx_module_t *m = c->m;

    if (s->rc != OMPI_SUCCESS) {
        /* some rank's input did not go in: the call fails on every rank */
    } else if (c->coll == RINGX_COLL_ALLGATHER) {
        gather(s);
    } else if (c->coll == RINGX_COLL_ALLREDUCE) {
        reduce_all(s, 0, c->count);
    } else {
        reduce_all(s, (size_t)m->rank * c->count * c->elem_size, c->count);
    }
    ringx_posted_done(m, s->n);
    if (s->rc == OMPI_SUCCESS) {
        ringx_count(&mca_coll_ringx_counters.mailbox[c->coll], 1);
        s->bytes_sent += s->bytes * (size_t)(m->size - 1);     /* what the peers took */
    }
}

int ringx_osched_progress(ringx_osched_t *s)
{
    mca_coll_ringx_module_t *m = s->call->m;

    if (s->phase == P_SLOT) {
        if (!ringx_posted_free(m, s->n)) {
            return RINGX_PENDING;
        }
        s->rc = ringx_mem_copy(&s->call->mem, ringx_posted_data(m, m->rank, s->n), s->call->input,
                               s->bytes);
        /* published in any case: the peers must not wait for ever */
        ringx_posted_publish(m, s->n, s->rc);
        s->phase = P_INPUTS;
    }
    if (s->phase == P_INPUTS) {
        if (!inputs_in(s)) {
            return RINGX_PENDING;
        }
        take(s);
        s->phase = P_DONE;
    }
    return s->rc == OMPI_SUCCESS ? RINGX_DONE : s->rc;
}
