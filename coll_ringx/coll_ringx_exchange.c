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

enum { X_SEND, X_RECV, X_FINISH, X_DONE };

typedef ringx_xsched_t xs_t;

static uint64_t tag_of(const xs_t *s, int step, size_t seg)
{
    return ringx_tag_data(s->module->comm_id, s->x.seq, (uint32_t)step, seg);
}

static int overlaps(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen && blen && a < b + blen && b < a + alen;
}

/* Forgets completed sends; 1 if none still reads [buf, +len), 0 if some
 * does, or an error. */
static int sends_done_reading(xs_t *s, const char *buf, size_t len)
{
    ringx_exchange_t *x = &s->x;
    int clear = 1;
    size_t i = 0;

    while (i < x->nsends) {
        ringx_pending_send_t *ps = &x->sends[i];
        int rc = ringx_xfer_test(s->mem, &ps->req);
        if (rc < 0) {
            return rc;
        }
        if (rc == 1) {
            x->sends[i] = x->sends[--x->nsends];
            continue;
        }
        clear &= !overlaps(ps->buf, ps->len, buf, len);
        i++;
    }
    return clear;
}

/* Rarely needed: prepare allocates for every send segment of the steps. */
static int grow_sends(xs_t *s)
{
    ringx_exchange_t *x = &s->x;
    size_t cap = 2 * x->cap_sends;
    ringx_pending_send_t *grown = malloc(cap * sizeof(*grown));

    if (grown == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    memcpy(grown, x->sends, x->nsends * sizeof(*grown));
    free(s->heap_sends);
    s->heap_sends = x->sends = grown;
    s->heap_sends_count = x->cap_sends = cap;
    return OMPI_SUCCESS;
}

static int post_send(xs_t *s, int step, size_t seg, int to, const char *buf, size_t len)
{
    ringx_exchange_t *x = &s->x;
    int rc = x->nsends == x->cap_sends ? grow_sends(s) : OMPI_SUCCESS;

    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    ringx_pending_send_t *ps = &x->sends[x->nsends];
    rc = ringx_xfer_send(s->mem, s->module->peers[to], buf, len, tag_of(s, step, seg), &ps->req);
    if (rc == OMPI_SUCCESS) {
        ps->buf = buf;
        ps->len = len;
        x->nsends += ps->req.req != NULL || ps->req.staged;
        s->bytes_sent += len;
    }
    return rc;
}

static size_t seg_len(const xs_t *s, size_t total, size_t seg)
{
    size_t off = seg * s->x.seg_bytes;
    return total - off < s->x.seg_bytes ? total - off : s->x.seg_bytes;
}

static size_t nsegs(const xs_t *s, size_t bytes)
{
    return (bytes + s->x.seg_bytes - 1) / s->x.seg_bytes;
}

static char *slot_of(const xs_t *s, size_t seg)
{
    return s->x.slots + (seg % (size_t)s->x.depth) * s->x.seg_bytes;
}

/* Whether the message of this step goes through the mailboxes: the sender
 * and the receiver of a step agree on its number and size. */
static int mailbox_step(const xs_t *s, int step, size_t bytes)
{
    return s->mailboxes && bytes > 0 && ringx_mailbox_carries(s->module, step, bytes);
}

static int send_step(xs_t *s, int step, const ringx_xstep_t *st)
{
    size_t nsend = st->send_to >= 0 ? nsegs(s, st->send_bytes) : 0;
    int rc = OMPI_SUCCESS;

    if (nsend > 0 && mailbox_step(s, step, st->send_bytes)) {
        s->x.mailbox_used = 1;
        s->bytes_sent += st->send_bytes;
        return ringx_mailbox_put(s->module, s->mem, st->send_to, s->x.mailbox_seq, step,
                                 st->send_buf, st->send_bytes);
    }
    for (size_t seg = 0; rc == OMPI_SUCCESS && seg < nsend; seg++) {
        rc = post_send(s, step, seg, st->send_to, st->send_buf + seg * s->x.seg_bytes,
                       seg_len(s, st->send_bytes, seg));
    }
    return rc;
}

/* The data stays in the mailbox until the call returns: a host reduction
 * reads it there; device memory gets a copy first.  RINGX_PENDING until
 * the message is there and no send reads where it goes. */
static int recv_from_mailbox(xs_t *s, int step, const ringx_xstep_t *st)
{
    const char *data = ringx_mailbox_arrived(s->module, s->x.mailbox_seq, step);
    char *dst = st->recv_buf ? st->recv_buf : st->reduce_dst;
    int rc = data != NULL ? sends_done_reading(s, dst, st->recv_bytes) : RINGX_PENDING;

    if (rc != 1) {
        return rc;
    }
    s->x.mailbox_used = 1;
    if (st->recv_buf != NULL) {
        rc = ringx_mailbox_take(s->mem, dst, data, st->recv_bytes);
    } else {
        if (ringx_memtype_on_device(s->mem->type)) {
            rc = ringx_mailbox_take(s->mem, s->x.slots, data, st->recv_bytes);
            data = s->x.slots;
        } else {
            rc = OMPI_SUCCESS;
        }
        rc = rc == OMPI_SUCCESS ? ringx_mem_reduce(s->mem, st->reduce_dst, st->reduce_local, data,
                                                   st->recv_bytes / s->elem_size, s->red.type,
                                                   s->red.op)
                                : rc;
    }
    return rc == OMPI_SUCCESS ? RINGX_DONE : rc;
}

/* Posts the receive of segment `posted`, if no send still reads where it
 * lands; 1 posted, 0 not yet, or an error. */
static int post_recv(xs_t *s, int step, const ringx_xstep_t *st)
{
    ringx_exchange_t *x = &s->x;
    size_t seg = x->posted, off = seg * x->seg_bytes, len = seg_len(s, st->recv_bytes, seg);
    char *dst = st->recv_buf ? st->recv_buf + off : slot_of(s, seg);
    int rc = st->recv_buf ? sends_done_reading(s, dst, len) : 1;

    if (rc == 1) {
        rc = ringx_xfer_recv(s->mem, dst, len, tag_of(s, step, seg),
                             &x->recv_req[seg % (size_t)x->depth]);
        x->posted += rc == OMPI_SUCCESS;
        rc = rc == OMPI_SUCCESS ? 1 : rc;
    }
    return rc;
}

/* Finishes segment `done` once it has arrived (and, to reduce, once no
 * send reads its destination); 1 finished, 0 not yet, or an error. */
static int finish_recv(xs_t *s, const ringx_xstep_t *st)
{
    ringx_exchange_t *x = &s->x;
    size_t seg = x->done, off = seg * x->seg_bytes, len = seg_len(s, st->recv_bytes, seg);
    int rc = ringx_xfer_test(s->mem, &x->recv_req[seg % (size_t)x->depth]);

    if (rc == 1 && st->recv_buf == NULL) {
        rc = sends_done_reading(s, st->reduce_dst + off, len);
        if (rc == 1) {
            rc = ringx_mem_reduce(s->mem, st->reduce_dst + off, st->reduce_local + off,
                                  slot_of(s, seg), len / s->elem_size, s->red.type, s->red.op);
            rc = rc == OMPI_SUCCESS ? 1 : rc;
        }
    }
    x->done += rc == 1;
    return rc;
}

/* The receive of a step, segment by segment with `depth` in flight. */
static int recv_segments(xs_t *s, int step, const ringx_xstep_t *st)
{
    ringx_exchange_t *x = &s->x;
    size_t nrecv = nsegs(s, st->recv_bytes);
    int rc = 1;

    while (x->done < nrecv) {
        while (rc == 1 && x->posted < nrecv && x->posted - x->done < (size_t)x->depth) {
            rc = post_recv(s, step, st);
        }
        if (rc < 0) {
            return rc;
        }
        if (x->done == x->posted) {
            return RINGX_PENDING;       /* the next receive waits for a send to finish */
        }
        if ((rc = finish_recv(s, st)) != 1) {
            return rc;
        }
    }
    return RINGX_DONE;
}

static int recv_step(xs_t *s, int step, const ringx_xstep_t *st)
{
    if (st->recv_from < 0 || st->recv_bytes == 0) {
        return RINGX_DONE;
    }
    return mailbox_step(s, step, st->recv_bytes) ? recv_from_mailbox(s, step, st)
                                                 : recv_segments(s, step, st);
}

/* After step 0's sends are out: the peers can take this rank's data while
 * it copies.  No send of step 0 reads the destination (in place, where the
 * own block is sent, there is nothing to copy). */
static int local_copy(xs_t *s)
{
    return ringx_mem_copy(s->mem, s->copy_dst, s->copy_src, s->copy_bytes);
}

/* Whether sends of this call may stay incomplete in UCX after their
 * receiver has all the data (see the handshake): only messages above the
 * eager range can. */
static int needs_handshake(const xs_t *s)
{
    return s->total_bytes > ringx_ucx_eager_limit();
}

static int sends_complete(void *engine)
{
    xs_t *s = engine;
    int rc = sends_done_reading(s, NULL, 0);
    return rc < 0 ? rc : s->x.nsends == 0;
}

static void release_sends(void *engine)
{
    xs_t *s = engine;
    for (size_t i = 0; i < s->x.nsends; i++) {
        ringx_xfer_release(s->mem, &s->x.sends[i].req);
    }
    s->x.nsends = 0;
}

static int finish(xs_t *s)
{
    const ringx_handshake_sends_t sends = { sends_complete, release_sends, s };

    if (!needs_handshake(s)) {
        return sends_complete(s);       /* 1 is RINGX_DONE */
    }
    return ringx_handshake_progress(&s->x.handshake, s->module, s->mem, s->x.seq, &sends);
}

int ringx_xsched_progress(ringx_xsched_t *s)
{
    ringx_exchange_t *x = &s->x;
    int rc = OMPI_SUCCESS;

    while (x->phase != X_DONE) {
        const ringx_xstep_t *st = &s->steps[x->step];
        switch (x->phase) {
        case X_SEND:
            rc = send_step(s, x->step, st);
            if (rc == OMPI_SUCCESS && x->step == 0 && s->copy_bytes) {
                rc = local_copy(s);
            }
            x->phase = X_RECV;
            x->posted = x->done = 0;
            break;
        case X_RECV:
            if ((rc = recv_step(s, x->step, st)) != RINGX_DONE) {
                return rc;
            }
            x->phase = ++x->step < s->nsteps ? X_SEND : X_FINISH;
            rc = OMPI_SUCCESS;
            break;
        default:
            if ((rc = finish(s)) != RINGX_DONE) {
                return rc;
            }
            x->phase = X_DONE;
            if (x->mailbox_used) {
                ringx_count(&mca_coll_ringx_counters.mailbox[s->coll], 1);
            }
            break;
        }
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
    }
    return RINGX_DONE;
}

void ringx_xsched_abandon(ringx_xsched_t *s)
{
    ringx_exchange_t *x = &s->x;

    RINGX_LOG(1, "exchange schedule failed; outstanding transfers dropped");
    for (int i = 0; i < x->depth; i++) {
        ringx_xfer_abandon(s->mem, &x->recv_req[i]);
    }
    for (size_t i = 0; i < x->nsends; i++) {
        ringx_xfer_abandon(s->mem, &x->sends[i].req);
    }
    x->nsends = 0;
    ringx_handshake_abandon(&x->handshake);
}

void ringx_xsched_release(ringx_xsched_t *s)
{
    free(s->heap_sends);
    s->heap_sends = NULL;
    s->heap_sends_count = 0;
    s->x.sends = s->x.inline_sends;
}

/* Scratch for the received segments a step reduces; on a device it also
 * takes a whole mailbox message. */
static size_t slots_bytes(const xs_t *s)
{
    size_t bytes = (size_t)s->x.depth * s->x.seg_bytes;
    if (ringx_memtype_on_device(s->mem->type) && s->module->mailbox.bytes > bytes) {
        bytes = s->module->mailbox.bytes;
    }
    return bytes;
}

/* Every send segment of the steps (the most that can be pending). */
static size_t send_segments(const xs_t *s)
{
    size_t n = 0;
    for (int i = 0; i < s->nsteps; i++) {
        n += s->steps[i].send_to >= 0 ? nsegs(s, s->steps[i].send_bytes) : 0;
    }
    return n;
}

int ringx_xsched_prepare(ringx_xsched_t *s)
{
    ringx_exchange_t *x = &s->x;
    size_t sends;
    int reduces = 0;

    for (int i = 0; i < s->nsteps; i++) {
        reduces |= s->steps[i].recv_from >= 0 && s->steps[i].recv_buf == NULL;
    }
    x->seg_bytes = ringx_segment_elems(mca_coll_ringx_component.segment_size, s->elem_size) *
                   s->elem_size;
    x->depth = mca_coll_ringx_component.pipeline_depth;
    sends = send_segments(s);
    if (sends <= sizeof(x->inline_sends) / sizeof(x->inline_sends[0])) {
        x->sends = x->inline_sends;
        x->cap_sends = sizeof(x->inline_sends) / sizeof(x->inline_sends[0]);
    } else {
        if (s->heap_sends_count < sends) {
            free(s->heap_sends);
            s->heap_sends = malloc(sends * sizeof(*s->heap_sends));
            s->heap_sends_count = s->heap_sends != NULL ? sends : 0;
        }
        x->sends = s->heap_sends;
        x->cap_sends = s->heap_sends_count;
    }
    x->slots = reduces ? ringx_mem_scratch(s->mem, RINGX_SCRATCH_SEGMENTS, slots_bytes(s)) : NULL;
    return x->sends == NULL || (reduces && x->slots == NULL) ? OMPI_ERR_OUT_OF_RESOURCE
                                                              : OMPI_SUCCESS;
}

int ringx_xsched_start(ringx_xsched_t *s, uint32_t seq)
{
    mca_coll_ringx_module_t *m = s->module;
    ringx_exchange_t *x = &s->x;
    int rc;

    memset(x, 0, sizeof(*x));
    if ((rc = ringx_xsched_prepare(s)) != OMPI_SUCCESS) {
        return rc;
    }
    for (int i = 0; i < s->nsteps; i++) {
        ringx_handshake_add(&x->handshake, 1, s->steps[i].send_to);
        ringx_handshake_add(&x->handshake, 0, s->steps[i].recv_from);
    }
    x->seq = seq;
    x->mailbox_seq = s->mailboxes ? ringx_mailbox_next_call(m) : 0;
    x->phase = s->nsteps > 0 ? X_SEND : X_FINISH;
    /* a schedule without steps still makes its copy */
    return s->nsteps == 0 && s->copy_bytes ? local_copy(s) : OMPI_SUCCESS;
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
    s->mailboxes = 1;
    s->nsteps = 0;
    s->bytes_sent = 0;
    s->copy_bytes = 0;
    s->heap_sends = NULL;
    s->heap_sends_count = 0;
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

void ringx_xsched_skip_steps(ringx_xsched_t *s, int nsteps)
{
    for (int i = 0; i < nsteps; i++) {
        ringx_xsched_skip(s);
    }
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

