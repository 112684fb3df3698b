/*
 * coll_ringx_ring.c - the pipelined ring walk shared by all three ring
 * collectives.
 *
 * Every block travels in segments.  Receives are kept posted `depth`
 * segments ahead; as soon as segment k of step t has arrived (and been
 * reduced), segment k of step t+1 is sent on.  So the reduction of one
 * segment overlaps the transfer of the next, and successive steps overlap
 * too: the ring never waits for a whole block.
 */
#include "coll_ringx.h"

#include <stdlib.h>

typedef struct ring_cursor {
    int step;
    size_t seg;
} ring_cursor_t;

typedef struct ring_walk {
    ringx_ring_t *ring;
    mca_coll_ringx_module_t *m;
    ringx_mem_t *mem;
    ringx_peer_t *left;         /* sends to this rank */
    ringx_peer_t *right;        /* receives from this rank */
    size_t seg_elems;
    size_t seg_bytes;
    uint32_t seq;

    int depth;                  /* receive window, in segments */
    ringx_xfer_t recv_req[RINGX_MAX_PIPELINE_DEPTH];  /* by receive number % depth */
    char *slots;                /* [depth] segments of scratch, for reducing steps */
    ring_cursor_t next_post;
    ring_cursor_t next_done;
    size_t posted;
    size_t done;

    size_t max_segs;            /* segments of the largest block */
    ringx_xfer_t *send_req;     /* [2][max_segs]: the sends of two consecutive steps */
    ringx_xfer_t inline_send_req[8];  /* send_req when that is enough */
    ringx_xfer_t fin_recv;      /* the right neighbour's "all received" (never staged) */
    ringx_xfer_t fin_send;      /* ours, to the left neighbour */
    unsigned idle;
} ring_walk_t;

static size_t block_elems(const ring_walk_t *w, int block)
{
    return ringx_block_count(w->ring->count, w->m->size, block);
}

static int recv_block_of(const ring_walk_t *w, int step)
{
    return ringx_ring_recv_block(w->m->rank, w->m->size, step, w->ring->shift);
}

static size_t segs_of_step(const ring_walk_t *w, int step)
{
    return ringx_segment_total(block_elems(w, recv_block_of(w, step)), w->seg_elems);
}

/* Moves c to the next segment that exists (blocks may be empty). */
static void cursor_advance(const ring_walk_t *w, ring_cursor_t *c)
{
    c->seg++;
    while (c->step < w->ring->nsteps && c->seg >= segs_of_step(w, c->step)) {
        c->step++;
        c->seg = 0;
    }
}

static void cursor_start(const ring_walk_t *w, ring_cursor_t *c)
{
    c->step = 0;
    c->seg = (size_t)-1;
    cursor_advance(w, c);
}

static size_t seg_elems_at(const ring_walk_t *w, int block, size_t seg)
{
    return ringx_segment_count(block_elems(w, block), w->seg_elems, seg);
}

static uint64_t tag_of(const ring_walk_t *w, int step, size_t seg)
{
    return ringx_tag_data(w->m->comm_id, w->seq, (uint32_t)step, seg);
}

static ringx_xfer_t *send_slot(ring_walk_t *w, int step, size_t seg)
{
    return &w->send_req[(size_t)(step & 1) * w->max_segs + seg];
}

static int wait_xfer(ring_walk_t *w, ringx_xfer_t *x)
{
    int rc;
    while ((rc = ringx_xfer_test(w->mem, x)) == 0) {
        ringx_mem_progress(w->mem, &w->idle);
    }
    return rc < 0 ? rc : OMPI_SUCCESS;
}

/* Sends segment seg of the block that step sends. */
static int post_send(ring_walk_t *w, int step, size_t seg)
{
    ringx_ring_t *ring = w->ring;
    int block = ringx_ring_send_block(w->m->rank, w->m->size, step, ring->shift);
    size_t len = seg_elems_at(w, block, seg) * ring->elem_size;
    const char *src = ring->send_block(ring, step, block) + seg * w->seg_bytes;
    ringx_xfer_t *x = send_slot(w, step, seg);

    /* The slot last held this segment's send of step-2. */
    int rc = wait_xfer(w, x);
    if (rc == OMPI_SUCCESS) {
        rc = ringx_xfer_send(w->mem, w->right, src, len, tag_of(w, step, seg), x);
        ring->bytes_sent += len;
    }
    return rc;
}

static int post_recv(ring_walk_t *w)
{
    ringx_ring_t *ring = w->ring;
    ring_cursor_t c = w->next_post;
    int block = recv_block_of(w, c.step);
    size_t len = seg_elems_at(w, block, c.seg) * ring->elem_size;
    size_t slot = w->posted % (size_t)w->depth;
    ringx_ring_recv_target_t target;
    char *dst;

    ring->recv_block(ring, c.step, block, &target);
    dst = target.direct ? target.direct + c.seg * w->seg_bytes : w->slots + slot * w->seg_bytes;
    cursor_advance(w, &w->next_post);
    w->posted++;
    return ringx_xfer_recv(w->mem, dst, len, tag_of(w, c.step, c.seg), &w->recv_req[slot]);
}

/* Reduces the segment that has arrived, then passes it on. */
static int finish_recv(ring_walk_t *w)
{
    ringx_ring_t *ring = w->ring;
    ring_cursor_t c = w->next_done;
    int block = recv_block_of(w, c.step);
    size_t slot = w->done % (size_t)w->depth;
    ringx_ring_recv_target_t target;
    int rc = OMPI_SUCCESS;

    ring->recv_block(ring, c.step, block, &target);
    if (target.direct == NULL) {
        size_t off = c.seg * w->seg_bytes;
        if (target.dst_read_by_prev_send && c.step > 0) {
            rc = wait_xfer(w, send_slot(w, c.step - 1, c.seg));
        }
        if (rc == OMPI_SUCCESS) {
            rc = ringx_mem_reduce(w->mem, target.reduce_dst + off, target.reduce_local + off,
                                  w->slots + slot * w->seg_bytes, seg_elems_at(w, block, c.seg),
                                  ring->red.type, ring->red.op);
        }
    }
    cursor_advance(w, &w->next_done);
    w->done++;
    if (rc == OMPI_SUCCESS && c.step + 1 < ring->nsteps) {
        rc = post_send(w, c.step + 1, c.seg);
    }
    return rc;
}

static int post_first_sends(ring_walk_t *w)
{
    int block = ringx_ring_send_block(w->m->rank, w->m->size, 0, w->ring->shift);
    size_t nsegs = ringx_segment_total(block_elems(w, block), w->seg_elems);
    int rc = OMPI_SUCCESS;

    for (size_t seg = 0; seg < nsegs && rc == OMPI_SUCCESS; seg++) {
        rc = post_send(w, 0, seg);
    }
    return rc;
}

/* 1 if every send has completed, 0 if some are pending, or an error. */
static int sends_complete(ring_walk_t *w)
{
    int all = 1;
    for (size_t i = 0; i < 2 * w->max_segs; i++) {
        int rc = ringx_xfer_test(w->mem, &w->send_req[i]);
        if (rc < 0) {
            return rc;
        }
        all &= rc;
    }
    return all;
}

/*
 * The end-of-call handshake.  A send can stay incomplete inside UCX after
 * its receiver has all the data: the last step of a rendezvous may wait
 * for the receiver's UCX to progress, and a receiver that has returned to
 * the application (or to another component's collective) may not progress
 * ringx's worker for a long time.  So each rank, once all its data has
 * arrived, says so to its left neighbour; a rank whose sends are still
 * pending waits for that word from its right neighbour instead of for UCX,
 * and then lets the sends finish inside UCX.  When every send has already
 * completed, the word is left to arrive on its own.
 */
static int finish(ring_walk_t *w)
{
    if (w->ring->count * w->ring->elem_size <= ringx_ucx_eager_limit()) {
        /* Eager sends only: each completes once its bytes are out, which
         * needs no more than its receiver to keep receiving. */
        int rc = OMPI_SUCCESS;
        for (size_t i = 0; rc == OMPI_SUCCESS && i < 2 * w->max_segs; i++) {
            rc = wait_xfer(w, &w->send_req[i]);
        }
        return rc;
    }
    int rc = ringx_ucx_isend(w->left, NULL, 0, ringx_tag_fin(w->m->comm_id, w->seq),
                             &w->fin_send.req);
    int complete = rc == OMPI_SUCCESS ? sends_complete(w) : rc;

    if (complete == 1) {
        ringx_module_park(w->m, &w->fin_recv.req);
    } else if (complete == 0) {
        rc = wait_xfer(w, &w->fin_recv);
        for (size_t i = 0; i < 2 * w->max_segs; i++) {
            ringx_xfer_release(w->mem, &w->send_req[i]);
        }
    } else {
        rc = complete;
    }
    return rc == OMPI_SUCCESS ? wait_xfer(w, &w->fin_send) : rc;
}

static int walk(ring_walk_t *w)
{
    int nsteps = w->ring->nsteps;
    int rc;

    if (w->ring->count == 0) {
        return OMPI_SUCCESS;            /* nothing moves, on any rank */
    }
    if (w->ring->count * w->ring->elem_size > ringx_ucx_eager_limit()) {
        rc = ringx_ucx_irecv(NULL, 0, ringx_tag_fin(w->m->comm_id, w->seq), &w->fin_recv.req);
    } else {
        rc = OMPI_SUCCESS;
    }
    if (rc == OMPI_SUCCESS) {
        rc = post_first_sends(w);
    }
    while (rc == OMPI_SUCCESS && w->next_done.step < nsteps) {
        while (rc == OMPI_SUCCESS && w->next_post.step < nsteps &&
               w->posted - w->done < (size_t)w->depth) {
            rc = post_recv(w);
        }
        if (rc != OMPI_SUCCESS) {
            break;
        }
        rc = ringx_xfer_test(w->mem, &w->recv_req[w->done % (size_t)w->depth]);
        if (rc == 1) {
            rc = finish_recv(w);
        } else if (rc == 0) {
            ringx_mem_progress(w->mem, &w->idle);
        }
    }
    return rc == OMPI_SUCCESS ? finish(w) : rc;
}

/* On an error nothing may hang: outstanding receives are cancelled and
 * sends are left to UCX. */
static void abandon_all(ring_walk_t *w)
{
    for (int i = 0; i < w->depth; i++) {
        ringx_xfer_abandon(w->mem, &w->recv_req[i]);
    }
    for (size_t i = 0; i < 2 * w->max_segs; i++) {
        ringx_xfer_abandon(w->mem, &w->send_req[i]);
    }
    ringx_ucx_abandon(&w->fin_recv.req);
    ringx_ucx_abandon(&w->fin_send.req);
}

static int walk_setup(ring_walk_t *w, ringx_ring_t *ring)
{
    mca_coll_ringx_module_t *m = ring->module;
    size_t largest_block = ringx_block_count(ring->count, m->size, 0);

    w->ring = ring;
    w->m = m;
    w->mem = ring->mem;
    w->left = m->peers[(m->rank + m->size - 1) % m->size];
    w->right = m->peers[(m->rank + 1) % m->size];
    w->seg_elems = ringx_segment_elems(mca_coll_ringx_component.segment_size, ring->elem_size);
    w->seg_bytes = w->seg_elems * ring->elem_size;
    w->seq = m->seq++;
    w->depth = mca_coll_ringx_component.pipeline_depth;
    w->max_segs = ringx_segment_total(largest_block, w->seg_elems);
    w->send_req = 2 * w->max_segs <= sizeof(w->inline_send_req) / sizeof(ringx_xfer_t)
                      ? w->inline_send_req
                      : calloc(2 * w->max_segs, sizeof(ringx_xfer_t));
    w->slots = NULL;
    if (ring->reduce_steps > 0) {
        w->slots = ringx_mem_scratch(w->mem, RINGX_SCRATCH_SEGMENTS,
                                     (size_t)w->depth * w->seg_bytes);
    }
    if (w->send_req == NULL ||
        (ring->reduce_steps > 0 && w->slots == NULL)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    cursor_start(w, &w->next_post);
    cursor_start(w, &w->next_done);
    w->posted = w->done = 0;
    w->idle = 0;
    return OMPI_SUCCESS;
}

int ringx_ring_run(ringx_ring_t *ring)
{
    ring_walk_t w = { 0 };
    int rc = walk_setup(&w, ring);

    if (rc == OMPI_SUCCESS) {
        rc = walk(&w);
    }
    if (rc != OMPI_SUCCESS) {
        RINGX_LOG(1, "ring walk failed (%d); outstanding transfers dropped", rc);
        if (w.send_req) {
            abandon_all(&w);
        }
    }
    if (w.send_req != w.inline_send_req) {
        free(w.send_req);
    }
    return rc;
}
