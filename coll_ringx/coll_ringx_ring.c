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
#include <string.h>

enum { RING_RUN, RING_SENDS, RING_HANDSHAKE, RING_DONE };

typedef ringx_ring_cursor_t ring_cursor_t;

static size_t block_elems(const ringx_ring_t *ring, int block)
{
    return ringx_block_count(ring->count, ring->module->size, block);
}

static int recv_block_of(const ringx_ring_t *ring, int step)
{
    return ringx_ring_recv_block(ring->module->rank, ring->module->size, step, ring->shift);
}

static size_t segs_of_step(const ringx_ring_t *ring, int step)
{
    return ringx_segment_total(block_elems(ring, recv_block_of(ring, step)), ring->walk.seg_elems);
}

/* Moves c to the next segment that exists (blocks may be empty). */
static void cursor_advance(const ringx_ring_t *ring, ring_cursor_t *c)
{
    c->seg++;
    while (c->step < ring->nsteps && c->seg >= segs_of_step(ring, c->step)) {
        c->step++;
        c->seg = 0;
    }
}

static void cursor_start(const ringx_ring_t *ring, ring_cursor_t *c)
{
    c->step = 0;
    c->seg = (size_t)-1;
    cursor_advance(ring, c);
}

static size_t seg_elems_at(const ringx_ring_t *ring, int block, size_t seg)
{
    return ringx_segment_count(block_elems(ring, block), ring->walk.seg_elems, seg);
}

static uint64_t tag_of(const ringx_ring_t *ring, int step, size_t seg)
{
    return ringx_tag_data(ring->module->comm_id, ring->walk.seq, (uint32_t)step, seg);
}

static ringx_xfer_t *send_slot(ringx_ring_t *ring, int step, size_t seg)
{
    return &ring->walk.send_req[(size_t)(step & 1) * ring->walk.max_segs + seg];
}

/* Sends segment seg of the block that step sends; its slot is free (the
 * caller saw the send of step-2 complete). */
static int post_send(ringx_ring_t *ring, int step, size_t seg)
{
    ringx_ring_walk_t *w = &ring->walk;
    int block = ringx_ring_send_block(ring->module->rank, ring->module->size, step, ring->shift);
    size_t len = seg_elems_at(ring, block, seg) * ring->elem_size;
    const char *src = ring->send_block(ring, step, block) + seg * w->seg_bytes;
    int rc = ringx_xfer_send(ring->mem, w->right, src, len, tag_of(ring, step, seg),
                             send_slot(ring, step, seg));

    ring->bytes_sent += rc == OMPI_SUCCESS ? len : 0;
    return rc;
}

static int post_recv(ringx_ring_t *ring)
{
    ringx_ring_walk_t *w = &ring->walk;
    ring_cursor_t c = w->next_post;
    int block = recv_block_of(ring, c.step);
    size_t len = seg_elems_at(ring, block, c.seg) * ring->elem_size;
    size_t slot = w->posted % (size_t)w->depth;
    ringx_ring_recv_target_t target;
    char *dst;

    ring->recv_block(ring, c.step, block, &target);
    dst = target.direct ? target.direct + c.seg * w->seg_bytes : w->slots + slot * w->seg_bytes;
    cursor_advance(ring, &w->next_post);
    w->posted++;
    return ringx_xfer_recv(ring->mem, dst, len, tag_of(ring, c.step, c.seg), &w->recv_req[slot]);
}

/*
 * Whether the next segment to finish can be finished now: it has arrived,
 * and the send of the same segment two steps back, whose slot its onward
 * send takes and whose source its reduction may overwrite, has completed.
 * 1, 0 or an error.
 */
static int ready_to_finish(ringx_ring_t *ring, const ringx_ring_recv_target_t *target)
{
    ringx_ring_walk_t *w = &ring->walk;
    ring_cursor_t c = w->next_done;
    int rc = ringx_xfer_test(ring->mem, &w->recv_req[w->done % (size_t)w->depth]);
    int needs_slot = c.step + 1 < ring->nsteps ||
                     (target->direct == NULL && target->dst_read_by_prev_send);

    if (rc == 1 && needs_slot && c.step > 0) {
        rc = ringx_xfer_test(ring->mem, send_slot(ring, c.step - 1, c.seg));
    }
    return rc;
}

/* Reduces the segment that has arrived, then passes it on. */
static int finish_recv(ringx_ring_t *ring, const ringx_ring_recv_target_t *target)
{
    ringx_ring_walk_t *w = &ring->walk;
    ring_cursor_t c = w->next_done;
    int block = recv_block_of(ring, c.step);
    size_t slot = w->done % (size_t)w->depth;
    int rc = OMPI_SUCCESS;

    if (target->direct == NULL) {
        size_t off = c.seg * w->seg_bytes;
        rc = ringx_mem_reduce(ring->mem, target->reduce_dst + off, target->reduce_local + off,
                              w->slots + slot * w->seg_bytes, seg_elems_at(ring, block, c.seg),
                              ring->red.type, ring->red.op);
    }
    cursor_advance(ring, &w->next_done);
    w->done++;
    if (rc == OMPI_SUCCESS && c.step + 1 < ring->nsteps) {
        rc = post_send(ring, c.step + 1, c.seg);
    }
    return rc;
}

static int post_first_sends(ringx_ring_t *ring)
{
    int block = ringx_ring_send_block(ring->module->rank, ring->module->size, 0, ring->shift);
    size_t nsegs = ringx_segment_total(block_elems(ring, block), ring->walk.seg_elems);
    int rc = OMPI_SUCCESS;

    for (size_t seg = 0; seg < nsegs && rc == OMPI_SUCCESS; seg++) {
        rc = post_send(ring, 0, seg);
    }
    return rc;
}

/* 1 if every send has completed, 0 if some are pending, or an error. */
static int sends_complete(void *engine)
{
    ringx_ring_t *ring = engine;
    int all = 1;
    for (size_t i = 0; i < 2 * ring->walk.max_segs; i++) {
        int rc = ringx_xfer_test(ring->mem, &ring->walk.send_req[i]);
        if (rc < 0) {
            return rc;
        }
        all &= rc;
    }
    return all;
}

static void release_sends(void *engine)
{
    ringx_ring_t *ring = engine;
    for (size_t i = 0; i < 2 * ring->walk.max_segs; i++) {
        ringx_xfer_release(ring->mem, &ring->walk.send_req[i]);
    }
}

/* Receives kept posted ahead, and every segment that can be finished. */
static int walk(ringx_ring_t *ring)
{
    ringx_ring_walk_t *w = &ring->walk;
    int rc = OMPI_SUCCESS;

    while (w->next_done.step < ring->nsteps) {
        ringx_ring_recv_target_t target;
        while (w->next_post.step < ring->nsteps && w->posted - w->done < (size_t)w->depth) {
            if ((rc = post_recv(ring)) != OMPI_SUCCESS) {
                return rc;
            }
        }
        ring->recv_block(ring, w->next_done.step, recv_block_of(ring, w->next_done.step),
                         &target);
        if ((rc = ready_to_finish(ring, &target)) != 1) {
            return rc;
        }
        if ((rc = finish_recv(ring, &target)) != OMPI_SUCCESS) {
            return rc;
        }
    }
    return RINGX_DONE;
}

/* Calls whose whole buffer UCX sends eagerly need no handshake: each send
 * completes once its bytes are out, which needs no more than its receiver
 * to keep receiving. */
static int eager_only(const ringx_ring_t *ring)
{
    return ring->count * ring->elem_size <= ringx_ucx_eager_limit();
}

int ringx_ring_progress(ringx_ring_t *ring)
{
    ringx_ring_walk_t *w = &ring->walk;
    const ringx_handshake_sends_t sends = { sends_complete, release_sends, ring };
    int rc;

    switch (w->phase) {
    case RING_RUN:
        if ((rc = walk(ring)) != RINGX_DONE) {
            return rc;
        }
        w->phase = eager_only(ring) ? RING_SENDS : RING_HANDSHAKE;
        return ringx_ring_progress(ring);
    case RING_SENDS:
        if ((rc = sends_complete(ring)) != 1) {
            return rc;
        }
        w->phase = RING_DONE;
        return RINGX_DONE;
    case RING_HANDSHAKE:
        rc = ringx_handshake_progress(&w->handshake, ring->module, ring->mem, w->seq, &sends);
        w->phase = rc == RINGX_DONE ? RING_DONE : w->phase;
        return rc;
    default:
        return RINGX_DONE;
    }
}

/* On an error nothing may hang: outstanding receives are cancelled and
 * sends are left to UCX. */
void ringx_ring_abandon(ringx_ring_t *ring)
{
    ringx_ring_walk_t *w = &ring->walk;

    RINGX_LOG(1, "ring walk failed; outstanding transfers dropped");
    for (int i = 0; i < w->depth; i++) {
        ringx_xfer_abandon(ring->mem, &w->recv_req[i]);
    }
    for (size_t i = 0; w->send_req != NULL && i < 2 * w->max_segs; i++) {
        ringx_xfer_abandon(ring->mem, &w->send_req[i]);
    }
    ringx_handshake_abandon(&w->handshake);
}

void ringx_ring_release(ringx_ring_t *ring)
{
    free(ring->heap_send_req);
    ring->heap_send_req = NULL;
    ring->heap_send_req_count = 0;
    ring->walk.send_req = NULL;
}

/* The walk's sizes, and its send slots: inline, or kept on the heap. */
int ringx_ring_prepare(ringx_ring_t *ring)
{
    ringx_ring_walk_t *w = &ring->walk;
    size_t largest_block = ringx_block_count(ring->count, ring->module->size, 0);
    size_t slots;

    w->seg_elems = ringx_segment_elems(mca_coll_ringx_component.segment_size, ring->elem_size);
    w->seg_bytes = w->seg_elems * ring->elem_size;
    w->depth = mca_coll_ringx_component.pipeline_depth;
    w->max_segs = ringx_segment_total(largest_block, w->seg_elems);
    slots = 2 * w->max_segs;
    if (slots <= sizeof(w->inline_send_req) / sizeof(ringx_xfer_t)) {
        w->send_req = w->inline_send_req;
    } else {
        if (ring->heap_send_req_count < slots) {
            free(ring->heap_send_req);
            ring->heap_send_req = malloc(slots * sizeof(ringx_xfer_t));
            ring->heap_send_req_count = ring->heap_send_req != NULL ? slots : 0;
        }
        w->send_req = ring->heap_send_req;
    }
    w->slots = NULL;
    if (ring->reduce_steps > 0) {
        w->slots = ringx_mem_scratch(ring->mem, RINGX_SCRATCH_SEGMENTS,
                                     (size_t)w->depth * w->seg_bytes);
    }
    return w->send_req == NULL || (ring->reduce_steps > 0 && w->slots == NULL)
               ? OMPI_ERR_OUT_OF_RESOURCE
               : OMPI_SUCCESS;
}

int ringx_ring_start(ringx_ring_t *ring, uint32_t seq)
{
    mca_coll_ringx_module_t *m = ring->module;
    ringx_ring_walk_t *w = &ring->walk;
    int left = (m->rank + m->size - 1) % m->size, right = (m->rank + 1) % m->size;
    int rc;

    memset(w, 0, sizeof(*w));
    if ((rc = ringx_ring_prepare(ring)) != OMPI_SUCCESS) {
        return rc;
    }
    memset(w->send_req, 0, 2 * w->max_segs * sizeof(ringx_xfer_t));
    w->left = m->peers[left];
    w->right = m->peers[right];
    ringx_handshake_add(&w->handshake, 1, right);
    ringx_handshake_add(&w->handshake, 0, left);
    w->seq = seq;
    if (ring->count == 0) {
        w->phase = RING_DONE;           /* nothing moves, on any rank */
        return OMPI_SUCCESS;
    }
    cursor_start(ring, &w->next_post);
    cursor_start(ring, &w->next_done);
    return post_first_sends(ring);
}
