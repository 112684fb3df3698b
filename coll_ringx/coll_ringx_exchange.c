/*
 * coll_ringx_exchange.c - runs a schedule of exchange steps: the engine of
 * the log(p) algorithms (recursive doubling and halving, Bruck, the folds
 * for rank counts that are not powers of two).
 *
 * A step sends one buffer to one peer and receives one buffer from one
 * peer, straight into place or into scratch slots that are then reduced.
 * Both travel in segments, so the reduction of one segment overlaps the
 * arrival of the next.  Steps run in order.  Before a buffer region is
 * written (received into or reduced into), every outstanding send that
 * reads the same bytes must have completed: the engine checks that itself,
 * so an algorithm only describes its steps.
 */
#include "coll_ringx.h"

#include <stdlib.h>
#include <string.h>

typedef struct pending_send {
    ringx_xfer_t req;
    const char *buf;
    size_t len;
} pending_send_t;

typedef struct exchange {
    ringx_xsched_t *s;
    mca_coll_ringx_module_t *m;
    ringx_mem_t *mem;
    size_t seg_bytes;
    uint32_t seq;
    int depth;
    char *slots;                /* [depth] scratch segments */
    ringx_xfer_t recv_req[RINGX_MAX_PIPELINE_DEPTH];
    pending_send_t *sends;      /* inline_sends until more are needed */
    size_t nsends, cap_sends;
    pending_send_t inline_sends[16];
    unsigned idle;
    int mailbox_used;
} exchange_t;

static uint64_t tag_of(const exchange_t *x, int step, size_t seg)
{
    return ringx_tag_data(x->m->comm_id, x->seq, (uint32_t)step, seg);
}

static int overlaps(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen && blen && a < b + blen && b < a + alen;
}

static int wait_req(exchange_t *x, ringx_xfer_t *req)
{
    int rc;
    while ((rc = ringx_xfer_test(x->mem, req)) == 0) {
        ringx_mem_progress(x->mem, &x->idle);
    }
    return rc < 0 ? rc : OMPI_SUCCESS;
}

/* Forgets completed sends and waits for those still reading [buf, +len). */
static int wait_sends_reading(exchange_t *x, const char *buf, size_t len)
{
    size_t i = 0;
    while (i < x->nsends) {
        pending_send_t *ps = &x->sends[i];
        int rc = ringx_xfer_test(x->mem, &ps->req);
        if (rc == 0 && overlaps(ps->buf, ps->len, buf, len)) {
            rc = wait_req(x, &ps->req) == OMPI_SUCCESS ? 1 : -1;
        }
        if (rc < 0) {
            return OMPI_ERROR;
        }
        if (rc == 1) {
            x->sends[i] = x->sends[--x->nsends];
        } else {
            i++;
        }
    }
    return OMPI_SUCCESS;
}

static int post_send(exchange_t *x, int step, size_t seg, int to, const char *buf, size_t len)
{
    if (x->nsends == x->cap_sends) {
        size_t cap = 2 * x->cap_sends;
        pending_send_t *grown = malloc(cap * sizeof(*grown));
        if (grown == NULL) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        memcpy(grown, x->sends, x->nsends * sizeof(*grown));
        if (x->sends != x->inline_sends) {
            free(x->sends);
        }
        x->sends = grown;
        x->cap_sends = cap;
    }
    pending_send_t *ps = &x->sends[x->nsends];
    int rc = ringx_xfer_send(x->mem, x->m->peers[to], buf, len, tag_of(x, step, seg), &ps->req);
    if (rc == OMPI_SUCCESS) {
        ps->buf = buf;
        ps->len = len;
        x->nsends += ps->req.req != NULL || ps->req.staged;
        x->s->bytes_sent += len;
    }
    return rc;
}

static size_t seg_len(const exchange_t *x, size_t total, size_t seg)
{
    size_t off = seg * x->seg_bytes;
    return total - off < x->seg_bytes ? total - off : x->seg_bytes;
}

static int post_recv(exchange_t *x, int step, const ringx_xstep_t *st, size_t seg)
{
    size_t off = seg * x->seg_bytes, len = seg_len(x, st->recv_bytes, seg);
    ringx_xfer_t *req = &x->recv_req[seg % (size_t)x->depth];
    char *dst = st->recv_buf ? st->recv_buf + off
                             : x->slots + (seg % (size_t)x->depth) * x->seg_bytes;
    int rc = st->recv_buf ? wait_sends_reading(x, dst, len) : OMPI_SUCCESS;
    return rc == OMPI_SUCCESS ? ringx_xfer_recv(x->mem, dst, len, tag_of(x, step, seg), req) : rc;
}

static int finish_recv(exchange_t *x, const ringx_xstep_t *st, size_t seg)
{
    size_t off = seg * x->seg_bytes, len = seg_len(x, st->recv_bytes, seg);
    int rc = wait_req(x, &x->recv_req[seg % (size_t)x->depth]);

    if (rc == OMPI_SUCCESS && st->recv_buf == NULL) {
        rc = wait_sends_reading(x, st->reduce_dst + off, len);
        if (rc == OMPI_SUCCESS) {
            rc = ringx_mem_reduce(x->mem, st->reduce_dst + off, st->reduce_local + off,
                                  x->slots + (seg % (size_t)x->depth) * x->seg_bytes,
                                  len / x->s->elem_size, x->s->red.type, x->s->red.op);
        }
    }
    return rc;
}

static size_t nsegs(const exchange_t *x, size_t bytes)
{
    return (bytes + x->seg_bytes - 1) / x->seg_bytes;
}

/* Whether the message of this step goes through the mailboxes: the sender
 * and the receiver of a step agree on its number and size. */
static int mailbox_step(const exchange_t *x, int step, size_t bytes)
{
    return bytes > 0 && ringx_mailbox_carries(x->m, step, bytes);
}

static int send_step(exchange_t *x, int step, const ringx_xstep_t *st)
{
    size_t nsend = st->send_to >= 0 ? nsegs(x, st->send_bytes) : 0;
    int rc = OMPI_SUCCESS;

    if (nsend > 0 && mailbox_step(x, step, st->send_bytes)) {
        x->mailbox_used = 1;
        x->s->bytes_sent += st->send_bytes;
        return ringx_mailbox_put(x->m, x->mem, st->send_to, x->seq, step, st->send_buf,
                                 st->send_bytes);
    }
    for (size_t seg = 0; rc == OMPI_SUCCESS && seg < nsend; seg++) {
        rc = post_send(x, step, seg, st->send_to, st->send_buf + seg * x->seg_bytes,
                       seg_len(x, st->send_bytes, seg));
    }
    return rc;
}

/* The data stays in the mailbox until the call returns: a host reduction
 * reads it there; device memory gets a copy first. */
static int recv_from_mailbox(exchange_t *x, int step, const ringx_xstep_t *st)
{
    const char *data = ringx_mailbox_wait(x->m, x->mem, x->seq, step, &x->idle);
    char *dst = st->recv_buf ? st->recv_buf : st->reduce_dst;
    int rc = wait_sends_reading(x, dst, st->recv_bytes);

    x->mailbox_used = 1;
    if (rc != OMPI_SUCCESS || st->recv_buf != NULL) {
        return rc == OMPI_SUCCESS ? ringx_mailbox_take(x->mem, dst, data, st->recv_bytes) : rc;
    }
    if (ringx_memtype_on_device(x->mem->type)) {
        rc = ringx_mailbox_take(x->mem, x->slots, data, st->recv_bytes);
        data = x->slots;
    }
    return rc == OMPI_SUCCESS ? ringx_mem_reduce(x->mem, st->reduce_dst, st->reduce_local, data,
                                                 st->recv_bytes / x->s->elem_size,
                                                 x->s->red.type, x->s->red.op)
                              : rc;
}

static int recv_segments(exchange_t *x, int step, const ringx_xstep_t *st)
{
    size_t nrecv = nsegs(x, st->recv_bytes), posted = 0;
    int rc = OMPI_SUCCESS;

    for (size_t done = 0; rc == OMPI_SUCCESS && done < nrecv; done++) {
        while (rc == OMPI_SUCCESS && posted < nrecv && posted - done < (size_t)x->depth) {
            rc = post_recv(x, step, st, posted++);
        }
        if (rc == OMPI_SUCCESS) {
            rc = finish_recv(x, st, done);
        }
    }
    return rc;
}

/* After step 0's sends are out: the peers can take this rank's data while
 * it copies.  No send of step 0 reads the destination (in place, where the
 * own block is sent, there is nothing to copy), and nothing waits here: a
 * wait for a send before this rank's receives are posted could deadlock. */
static int local_copy(exchange_t *x)
{
    const ringx_xsched_t *s = x->s;
    return ringx_mem_copy(x->mem, s->copy_dst, s->copy_src, s->copy_bytes);
}

static int run_step(exchange_t *x, int step, const ringx_xstep_t *st)
{
    int rc = send_step(x, step, st);

    if (rc == OMPI_SUCCESS && step == 0 && x->s->copy_bytes) {
        rc = local_copy(x);
    }

    if (rc != OMPI_SUCCESS || st->recv_from < 0 || st->recv_bytes == 0) {
        return rc;
    }
    return mailbox_step(x, step, st->recv_bytes) ? recv_from_mailbox(x, step, st)
                                                 : recv_segments(x, step, st);
}

/* Whether sends of this call may stay incomplete in UCX after their
 * receiver has all the data (see the ring's handshake): only messages
 * above the eager range can. */
static int needs_handshake(const ringx_xsched_t *s)
{
    return s->total_bytes > ringx_ucx_eager_limit();
}

static int distinct_peers(const ringx_xsched_t *s, int sending, int *peers)
{
    int n = 0;
    for (int i = 0; i < s->nsteps; i++) {
        int p = sending ? s->steps[i].send_to : s->steps[i].recv_from;
        int seen = p < 0;
        for (int j = 0; j < n && !seen; j++) {
            seen = peers[j] == p;
        }
        if (!seen) {
            peers[n++] = p;
        }
    }
    return n;
}

/* The end-of-call handshake, as in the ring, with every peer: a "fin" to
 * each rank this one received from; a rank with sends still incomplete
 * waits for the fin of each rank it sent to, then lets the sends go. */
static int handshake(exchange_t *x)
{
    int to[RINGX_XSCHED_MAX_STEPS], from[RINGX_XSCHED_MAX_STEPS];
    ringx_xfer_t fin_sends[RINGX_XSCHED_MAX_STEPS] = { 0 }, fin_recvs[RINGX_XSCHED_MAX_STEPS] = { 0 };
    int nto = distinct_peers(x->s, 1, to), nfrom = distinct_peers(x->s, 0, from);
    uint64_t fin = ringx_tag_fin(x->m->comm_id, x->seq);
    int rc = OMPI_SUCCESS;

    for (int i = 0; rc == OMPI_SUCCESS && i < nfrom; i++) {
        rc = ringx_ucx_isend(x->m->peers[from[i]], NULL, 0, fin, &fin_sends[i].req);
    }
    for (int i = 0; rc == OMPI_SUCCESS && i < nto; i++) {
        rc = ringx_ucx_irecv(NULL, 0, fin, &fin_recvs[i].req);
    }
    if (rc == OMPI_SUCCESS) {
        rc = wait_sends_reading(x, NULL, 0);    /* forgets the completed ones */
    }
    if (rc == OMPI_SUCCESS && x->nsends) {
        for (int i = 0; rc == OMPI_SUCCESS && i < nto; i++) {
            rc = wait_req(x, &fin_recvs[i]);
        }
        for (size_t i = 0; i < x->nsends; i++) {
            ringx_xfer_release(x->mem, &x->sends[i].req);
        }
        x->nsends = 0;
    }
    for (int i = 0; i < nto; i++) {
        ringx_module_park(x->m, &fin_recvs[i].req);
    }
    for (int i = 0; i < nfrom; i++) {
        int r = rc == OMPI_SUCCESS ? wait_req(x, &fin_sends[i]) : rc;
        ringx_ucx_abandon(&fin_sends[i].req);
        rc = r;
    }
    return rc;
}

static int wait_all_sends(exchange_t *x)
{
    for (size_t i = 0; i < x->nsends; i++) {
        int rc = wait_req(x, &x->sends[i].req);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
    }
    x->nsends = 0;
    return OMPI_SUCCESS;
}

static void abandon_all(exchange_t *x)
{
    for (int i = 0; i < x->depth; i++) {
        ringx_xfer_abandon(x->mem, &x->recv_req[i]);
    }
    for (size_t i = 0; i < x->nsends; i++) {
        ringx_xfer_abandon(x->mem, &x->sends[i].req);
    }
}

/* Scratch for the received segments a step reduces; on a device it also
 * takes a whole mailbox message. */
static size_t slots_bytes(const exchange_t *x)
{
    size_t bytes = (size_t)x->depth * x->seg_bytes;
    if (ringx_memtype_on_device(x->mem->type) && x->m->mailbox.bytes > bytes) {
        bytes = x->m->mailbox.bytes;
    }
    return bytes;
}

static int setup(exchange_t *x, ringx_xsched_t *s)
{
    mca_coll_ringx_module_t *m = s->module;
    int reduces = 0;

    for (int i = 0; i < s->nsteps; i++) {
        reduces |= s->steps[i].recv_from >= 0 && s->steps[i].recv_buf == NULL;
    }
    x->s = s;
    x->m = m;
    x->mem = s->mem;
    x->sends = x->inline_sends;
    x->cap_sends = sizeof(x->inline_sends) / sizeof(x->inline_sends[0]);
    x->nsends = 0;
    x->idle = 0;
    x->mailbox_used = 0;
    x->seg_bytes = ringx_segment_elems(mca_coll_ringx_component.segment_size, s->elem_size) *
                   s->elem_size;
    x->seq = m->seq++;
    x->depth = mca_coll_ringx_component.pipeline_depth;
    memset(x->recv_req, 0, (size_t)x->depth * sizeof(x->recv_req[0]));
    x->slots = reduces ? ringx_mem_scratch(x->mem, RINGX_SCRATCH_SEGMENTS, slots_bytes(x)) : NULL;
    return reduces && x->slots == NULL ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_SUCCESS;
}

/* ----------------------------------------------------- building steps */

void ringx_xsched_init(ringx_xsched_t *s, mca_coll_ringx_module_t *m, ringx_mem_t *mem,
                       ringx_coll_t coll, ringx_reduction_t red, size_t elem_size,
                       size_t total_bytes)
{
    s->module = m;
    s->mem = mem;
    s->coll = coll;
    s->red = red;
    s->elem_size = elem_size;
    s->total_bytes = total_bytes;
    s->nsteps = 0;
    s->bytes_sent = 0;
    s->copy_bytes = 0;
}

void ringx_xsched_local_copy(ringx_xsched_t *s, char *dst, const char *src, size_t bytes)
{
    s->copy_dst = dst;
    s->copy_src = src;
    s->copy_bytes = bytes;
}

static ringx_xstep_t *new_step(ringx_xsched_t *s)
{
    /* log2 of any int rank count, twice, plus the folds, stays below the bound */
    ringx_xstep_t *st = &s->steps[s->nsteps++];
    *st = (ringx_xstep_t){ .send_to = -1, .recv_from = -1 };
    return st;
}

void ringx_xsched_skip(ringx_xsched_t *s)
{
    (void)new_step(s);
}

void ringx_xsched_also_send(ringx_xsched_t *s, int to, const char *buf, size_t bytes)
{
    ringx_xstep_t *st = &s->steps[s->nsteps - 1];
    st->send_to = to;
    st->send_buf = buf;
    st->send_bytes = bytes;
}

void ringx_xsched_send(ringx_xsched_t *s, int to, const char *buf, size_t bytes)
{
    (void)new_step(s);
    ringx_xsched_also_send(s, to, buf, bytes);
}

void ringx_xsched_recv(ringx_xsched_t *s, int from, char *buf, size_t bytes)
{
    ringx_xstep_t *st = new_step(s);
    st->recv_from = from;
    st->recv_buf = buf;
    st->recv_bytes = bytes;
}

void ringx_xsched_reduce(ringx_xsched_t *s, int from, char *dst, const char *local,
                         size_t bytes)
{
    ringx_xstep_t *st = new_step(s);
    st->recv_from = from;
    st->reduce_dst = dst;
    st->reduce_local = local;
    st->recv_bytes = bytes;
}

/* ------------------------------------------------------------ running */

int ringx_xsched_run(ringx_xsched_t *s)
{
    exchange_t x;
    int rc = setup(&x, s);

    for (int i = 0; rc == OMPI_SUCCESS && i < s->nsteps; i++) {
        rc = run_step(&x, i, &s->steps[i]);
    }
    if (rc == OMPI_SUCCESS && s->nsteps == 0 && s->copy_bytes) {
        rc = local_copy(&x);
    }
    if (rc == OMPI_SUCCESS) {
        rc = needs_handshake(s) ? handshake(&x) : wait_all_sends(&x);
    }
    if (rc != OMPI_SUCCESS) {
        RINGX_LOG(1, "exchange schedule failed (%d); outstanding transfers dropped", rc);
        abandon_all(&x);
    }
    if (x.sends != x.inline_sends) {
        free(x.sends);
    }
    if (x.mailbox_used) {
        ringx_count(&mca_coll_ringx_counters.mailbox[s->coll], 1);
    }
    return rc;
}
