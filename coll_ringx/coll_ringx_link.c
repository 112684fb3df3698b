/*
 * coll_ringx_link.c - how this rank's messages reach each peer of a
 * communicator, and the messages of a call over them (ringx_msgs_t,
 * coll_ringx_sched.h).
 *
 * The transport to each peer is chosen once, when the communicator
 * connects (ringx_links_choose): the mailboxes to the peers whose regions
 * this rank maps (those on its node, by Open MPI's locality), else UCX.
 * Over a mailbox link a message that fits a slot is one copy into the
 * peer's slot, and a reduction reads it there; every other message is UCX
 * tagged messages in segments.  Sender and receiver decide alike: the
 * links are the same on every rank, and the rest is the step's number and
 * size.  The engines above know neither transport: they send, receive or
 * receive-and-reduce a step's message.
 */
#include "coll_ringx.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- links */

int ringx_links_choose(mca_coll_ringx_module_t *m)
{
    int shared = 0;

    m->via = malloc((size_t)m->size);
    if (m->via == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (int r = 0; r < m->size; r++) {
        m->via[r] = m->mailbox.local != NULL && m->mailbox.remote[r] != NULL ? RINGX_VIA_MAILBOX
                                                                             : RINGX_VIA_UCX;
        shared += m->via[r] == RINGX_VIA_MAILBOX;
    }
    RINGX_LOG(2, "%s: links through mailboxes (messages of up to %zu bytes, in the first %d "
                 "steps of blocking calls) and UCX to %d of its peers, through UCX alone to %d",
              ringx_comm_label(m->comm), m->mailbox.bytes, RINGX_MAILBOX_STEPS, shared,
              m->size - 1 - shared);
    return OMPI_SUCCESS;
}

void ringx_links_release(mca_coll_ringx_module_t *m)
{
    free(m->via);
    m->via = NULL;
}

/* Whether step's message of bytes to or from peer goes through the
 * mailboxes: the same answer on its sender and its receiver. */
static int via_mailbox(const ringx_msgs_t *x, int peer, int step, size_t bytes)
{
    const mca_coll_ringx_module_t *m = x->module;
    return x->mailboxes && bytes > 0 && m->via[peer] == RINGX_VIA_MAILBOX &&
           bytes <= m->mailbox.bytes && step < RINGX_MAILBOX_STEPS;
}

/* ------------------------------------------------------- pending sends */

static uint64_t tag_of(const ringx_msgs_t *x, int step, size_t seg)
{
    return ringx_tag_data(x->module->comm_id, x->seq, (uint32_t)step, seg);
}

static int overlaps(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen && blen && a < b + blen && b < a + alen;
}

int ringx_msgs_writable(ringx_msgs_t *x, const char *buf, size_t len)
{
    int clear = 1;
    size_t i = 0;

    while (i < x->nsends) {
        ringx_pending_send_t *ps = &x->sends[i];
        int rc = ringx_xfer_test(x->mem, &ps->req);
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

/* Rarely needed: prepare reserves every send segment of the call. */
static int grow_sends(ringx_msgs_t *x)
{
    size_t cap = 2 * x->cap_sends;
    ringx_pending_send_t *grown = malloc(cap * sizeof(*grown));

    if (grown == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    memcpy(grown, x->sends, x->nsends * sizeof(*grown));
    free(x->heap_sends);
    x->heap_sends = x->sends = grown;
    x->heap_sends_count = x->cap_sends = cap;
    return OMPI_SUCCESS;
}

int ringx_msgs_send_room(ringx_msgs_t *x)
{
    int rc = x->nsends < x->cap_sends ? 1 : ringx_msgs_writable(x, NULL, 0);
    return rc == 1 ? x->nsends < x->cap_sends : rc;
}

int ringx_msgs_send_segment(ringx_msgs_t *x, int step, size_t seg, int to, const char *buf,
                            size_t len)
{
    int rc = x->nsends == x->cap_sends ? grow_sends(x) : OMPI_SUCCESS;

    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    ringx_pending_send_t *ps = &x->sends[x->nsends];
    rc = ringx_xfer_send(x->mem, x->module->peers[to], buf, len, tag_of(x, step, seg), &ps->req);
    if (rc == OMPI_SUCCESS) {
        ps->buf = buf;
        ps->len = len;
        x->nsends += ps->req.req != NULL || ps->req.staged;
        x->bytes_sent += len;
    }
    return rc;
}

/* ------------------------------------------------------------ segments */

static size_t seg_len(const ringx_msgs_t *x, size_t total, size_t seg)
{
    size_t off = seg * x->seg_bytes;
    return total - off < x->seg_bytes ? total - off : x->seg_bytes;
}

size_t ringx_msgs_segments(const ringx_msgs_t *x, size_t bytes)
{
    return (bytes + x->seg_bytes - 1) / x->seg_bytes;
}

char *ringx_msgs_scratch(const ringx_msgs_t *x, size_t n)
{
    return x->slots + (n % (size_t)x->depth) * x->seg_bytes;
}

int ringx_msgs_send(ringx_msgs_t *x, int step, int to, const char *buf, size_t bytes)
{
    size_t nsend = to >= 0 ? ringx_msgs_segments(x, bytes) : 0;
    int rc = OMPI_SUCCESS;

    if (nsend > 0 && via_mailbox(x, to, step, bytes)) {
        x->mailbox_used = 1;
        x->bytes_sent += bytes;
        return ringx_mailbox_put(x->module, x->mem, to, x->mailbox_seq, step, buf, bytes);
    }
    for (size_t seg = 0; rc == OMPI_SUCCESS && seg < nsend; seg++) {
        rc = ringx_msgs_send_segment(x, step, seg, to, buf + seg * x->seg_bytes, seg_len(x, bytes, seg));
    }
    return rc;
}

/* ------------------------------------------------------------- receives */

/* dst = local op received, or received op local. */
static int reduce_received(ringx_msgs_t *x, char *dst, const char *local, const char *received,
                           size_t bytes, int received_first)
{
    return ringx_mem_reduce(x->mem, dst, received_first ? received : local,
                            received_first ? local : received, bytes / x->elem_size,
                            x->red.type, x->red.op);
}

/* The data stays in the mailbox until the call returns: a host reduction
 * reads it there; device memory gets a copy first.  RINGX_PENDING until
 * the message is there and no send reads where it goes. */
static int recv_from_mailbox(ringx_msgs_t *x, int step, char *dst, const char *local,
                             size_t bytes, int received_first)
{
    const char *data = ringx_mailbox_arrived(x->module, x->mailbox_seq, step);
    int rc = data != NULL ? ringx_msgs_writable(x, dst, bytes) : RINGX_PENDING;

    if (rc != 1) {
        return rc;
    }
    x->mailbox_used = 1;
    if (local == NULL) {
        rc = ringx_mailbox_take(x->mem, dst, data, bytes);
    } else {
        if (ringx_memtype_on_device(x->mem->type)) {
            rc = ringx_mailbox_take(x->mem, x->slots, data, bytes);
            data = x->slots;
        } else {
            rc = OMPI_SUCCESS;
        }
        rc = rc == OMPI_SUCCESS ? reduce_received(x, dst, local, data, bytes, received_first)
                                : rc;
    }
    return rc == OMPI_SUCCESS ? RINGX_DONE : rc;
}

int ringx_msgs_post_recv(ringx_msgs_t *x, int step, size_t seg, size_t n, char *dst, size_t len)
{
    return ringx_xfer_recv(x->mem, dst, len, tag_of(x, step, seg),
                           &x->recv_req[n % (size_t)x->depth]);
}

int ringx_msgs_test_recv(ringx_msgs_t *x, size_t n)
{
    return ringx_xfer_test(x->mem, &x->recv_req[n % (size_t)x->depth]);
}

/* Posts the receive of segment `posted`, if no send still reads where it
 * lands (straight into place; a reduction's lands in a scratch slot); 1
 * posted, 0 not yet, or an error. */
static int post_recv(ringx_msgs_t *x, int step, char *dst, const char *local, size_t bytes)
{
    size_t seg = x->posted, off = seg * x->seg_bytes, len = seg_len(x, bytes, seg);
    char *into = local == NULL ? dst + off : ringx_msgs_scratch(x, seg);
    int rc = local == NULL ? ringx_msgs_writable(x, into, len) : 1;

    if (rc == 1) {
        rc = ringx_msgs_post_recv(x, step, seg, seg, into, len);
        x->posted += rc == OMPI_SUCCESS;
        rc = rc == OMPI_SUCCESS ? 1 : rc;
    }
    return rc;
}

/* Finishes segment `done` once it has arrived (and, to reduce, once no
 * send reads its destination); 1 finished, 0 not yet, or an error. */
static int finish_recv(ringx_msgs_t *x, char *dst, const char *local, size_t bytes,
                       int received_first)
{
    size_t seg = x->done, off = seg * x->seg_bytes, len = seg_len(x, bytes, seg);
    int rc = ringx_msgs_test_recv(x, seg);

    if (rc == 1 && local != NULL) {
        rc = ringx_msgs_writable(x, dst + off, len);
        if (rc == 1) {
            rc = reduce_received(x, dst + off, local + off, ringx_msgs_scratch(x, seg), len,
                                 received_first);
            rc = rc == OMPI_SUCCESS ? 1 : rc;
        }
    }
    x->done += rc == 1;
    return rc;
}

/* A receive over UCX, segment by segment with `depth` in flight. */
static int recv_segments(ringx_msgs_t *x, int step, char *dst, const char *local, size_t bytes,
                         int received_first)
{
    size_t nrecv = ringx_msgs_segments(x, bytes);
    int rc = 1;

    while (x->done < nrecv) {
        while (rc == 1 && x->posted < nrecv && x->posted - x->done < (size_t)x->depth) {
            rc = post_recv(x, step, dst, local, bytes);
        }
        if (rc < 0) {
            return rc;
        }
        if (x->done == x->posted) {
            return RINGX_PENDING;       /* the next receive waits for a send to finish */
        }
        if ((rc = finish_recv(x, dst, local, bytes, received_first)) != 1) {
            return rc;
        }
    }
    return RINGX_DONE;
}

int ringx_msgs_recv(ringx_msgs_t *x, int step, int from, char *dst, const char *local,
                    size_t bytes, int received_first)
{
    if (from < 0 || bytes == 0) {
        return RINGX_DONE;
    }
    return via_mailbox(x, from, step, bytes)
               ? recv_from_mailbox(x, step, dst, local, bytes, received_first)
               : recv_segments(x, step, dst, local, bytes, received_first);
}

void ringx_msgs_next_recv(ringx_msgs_t *x)
{
    x->posted = x->done = 0;
}

/* ----------------------------------------------------------- the end */

/* Whether sends of this call may stay incomplete in UCX after their
 * receiver has all the data (see the handshake): only messages above the
 * eager range can. */
static int needs_handshake(size_t total_bytes)
{
    return total_bytes > ringx_ucx_eager_limit();
}

static int sends_complete(void *msgs)
{
    ringx_msgs_t *x = msgs;
    int rc = ringx_msgs_writable(x, NULL, 0);
    return rc < 0 ? rc : x->nsends == 0;
}

static void release_sends(void *msgs)
{
    ringx_msgs_t *x = msgs;
    for (size_t i = 0; i < x->nsends; i++) {
        ringx_xfer_release(x->mem, &x->sends[i].req);
    }
    x->nsends = 0;
}

int ringx_msgs_finish(ringx_msgs_t *x, size_t total_bytes)
{
    const ringx_handshake_sends_t sends = { sends_complete, release_sends, x };

    if (!needs_handshake(total_bytes)) {
        return sends_complete(x);       /* 1 is RINGX_DONE */
    }
    return ringx_handshake_progress(&x->handshake, x->module, x->mem, x->seq, &sends);
}

void ringx_msgs_abandon(ringx_msgs_t *x)
{
    for (int i = 0; i < x->depth; i++) {
        ringx_xfer_abandon(x->mem, &x->recv_req[i]);
    }
    for (size_t i = 0; i < x->nsends; i++) {
        ringx_xfer_abandon(x->mem, &x->sends[i].req);
    }
    x->nsends = 0;
    ringx_handshake_abandon(&x->handshake);
}

void ringx_msgs_release(ringx_msgs_t *x)
{
    free(x->heap_sends);
    x->heap_sends = NULL;
    x->heap_sends_count = 0;
    x->sends = x->inline_sends;
}

/* ------------------------------------------------------- a call's setup */

void ringx_msgs_init(ringx_msgs_t *x, mca_coll_ringx_module_t *m, ringx_mem_t *mem,
                     ringx_reduction_t red, size_t elem_size)
{
    memset(x, 0, sizeof(*x));
    x->module = m;
    x->mem = mem;
    x->red = red;
    x->elem_size = elem_size;
    x->mailboxes = 1;
}

/* Scratch for the received segments a step reduces; on a device it also
 * takes a whole mailbox message. */
static size_t slots_bytes(const ringx_msgs_t *x)
{
    size_t bytes = (size_t)x->depth * x->seg_bytes;
    if (ringx_memtype_on_device(x->mem->type) && x->module->mailbox.bytes > bytes) {
        bytes = x->module->mailbox.bytes;
    }
    return bytes;
}

int ringx_msgs_prepare(ringx_msgs_t *x, int reduces)
{
    x->seg_bytes = ringx_segment_elems(mca_coll_ringx_component.segment_size, x->elem_size) *
                   x->elem_size;
    x->depth = mca_coll_ringx_component.pipeline_depth;
    x->slots = reduces ? ringx_mem_scratch(x->mem, RINGX_SCRATCH_SEGMENTS, slots_bytes(x)) : NULL;
    return reduces && x->slots == NULL ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_SUCCESS;
}

int ringx_msgs_reserve(ringx_msgs_t *x, size_t sends)
{
    const size_t inline_cap = sizeof(x->inline_sends) / sizeof(x->inline_sends[0]);

    if (sends <= inline_cap) {
        x->sends = x->inline_sends;
        x->cap_sends = inline_cap;
        return OMPI_SUCCESS;
    }
    if (x->heap_sends_count < sends) {
        free(x->heap_sends);
        x->heap_sends = malloc(sends * sizeof(*x->heap_sends));
        x->heap_sends_count = x->heap_sends != NULL ? sends : 0;
    }
    x->sends = x->heap_sends;
    x->cap_sends = x->heap_sends_count;
    return x->sends == NULL ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_SUCCESS;
}

void ringx_msgs_start(ringx_msgs_t *x, uint32_t seq)
{
    x->seq = seq;
    x->mailbox_seq = x->mailboxes ? ringx_mailbox_next_call(x->module) : 0;
    x->posted = x->done = 0;
    x->nsends = 0;
    x->mailbox_used = 0;
    memset(x->recv_req, 0, sizeof(x->recv_req));
    memset(&x->handshake, 0, sizeof(x->handshake));
}
