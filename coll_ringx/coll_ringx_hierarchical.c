/*
 * coll_ringx_hierarchical.c - the hierarchical algorithms, for
 * communicators across nodes with the same number of ranks L on each of
 * their N nodes (coll_ringx_nodes.c): the ranks of a node exchange among
 * themselves, over UCX's intra-node transports, and only the ranks with
 * the same place on their nodes exchange across nodes, each carrying 1/L
 * of what crosses, so that every rank's link carries a share:
 *
 *   allreduce             a ring reduce-scatter of the buffer's L blocks
 *                         inside the node, leaving place j with block j
 *                         summed over its node; a ring allreduce of block j
 *                         among the N ranks of place j; a ring allgather
 *                         of the L blocks inside the node.  A node sends
 *                         2 (N-1)/N of the buffer to the others, where a
 *                         flat ring across nodes sends 2 (p-1)/p of it out
 *                         of a node at each of its crossings.
 *   allgather             a ring among the ranks of each place across the
 *                         nodes (each gets the blocks of its place), then
 *                         a ring inside the node passing those N blocks on.
 *   reduce_scatter_block  the mirror image: a ring reduce-scatter inside
 *                         the node of the blocks of every place (place j
 *                         ends with the node's sums of the N blocks of
 *                         place j), then a ring reduce-scatter of those
 *                         among the ranks of place j across the nodes.
 *
 * Small calls (the whole buffer up to RINGX_HIER_LEADERS_REDUCE_BYTES or
 * RINGX_HIER_LEADERS_CHUNK_BYTES) go through each node's first rank instead, its leader, as coll/han's do: the
 * leader gathers (allgather) or reduces (the others) its node's data, the
 * leaders exchange among themselves (recursive doubling for allreduce,
 * rings of node chunks for the others), and each leader hands the result
 * out in its node.  Those calls wait on latency, not on the link, and the
 * rings would cross between nodes from every rank of a node at each of
 * their steps.  Allgather and reduce_scatter_block take this way only
 * where every node's ranks are consecutive (the chunks a leader passes on
 * are then contiguous), as Open MPI places them by default.
 *
 * All are lists of exchange steps (coll_ringx_exchange.c), so they are
 * resumable (nonblocking, persistent) and run on host and device memory
 * alike.  The ring's block arithmetic is ringx_schedule.h's.
 */
#include "coll_ringx.h"

/* The rank at a node's place. */
static int rank_at(const ringx_nodes_t *n, int node, int local)
{
    return n->rank_at[node * n->node_ranks + local];
}

/* Bytes from the start of count elements cut into nblocks blocks to block
 * b, and block b's bytes. */
static size_t block_at(size_t count, int nblocks, int b, size_t elem)
{
    return ringx_block_offset(count, nblocks, b) * elem;
}

static size_t block_len(size_t count, int nblocks, int b, size_t elem)
{
    return ringx_block_count(count, nblocks, b) * elem;
}

/* This rank's neighbours in a ring of its node (local: +1 or -1) and in
 * the ring of its place across the nodes (node: +1 or -1). */
static int node_neighbour(const ringx_nodes_t *n, int dir)
{
    return rank_at(n, n->node, (n->local + n->node_ranks + dir) % n->node_ranks);
}

static int place_neighbour(const ringx_nodes_t *n, int dir)
{
    return rank_at(n, (n->node + n->nnodes + dir) % n->nnodes, n->local);
}

static void start_steps(ringx_call_t *c, size_t total_bytes, ringx_reduction_t red)
{
    c->sched.engine = RINGX_ENGINE_EXCHANGE;
    ringx_xsched_init(&c->sched.u.xs, c->m, &c->mem, c->coll, red, c->elem_size, total_bytes);
    /* blocking calls only (coll_ringx_mailbox.c); the links say which
     * peers, those on this rank's node */
    c->sched.u.xs.msgs.mailboxes = c->blocking;
}

/* ------------------------------------------------------------ leaders */

/* The largest calls (the whole buffer) that go through the leaders.
 * Timed one by one (ringx_bench --write-rules, test hosts at 1 Gbit/s):
 * at 2 hosts x 2 ranks, allreduce 8 B - 4 KiB 22-29 us through the
 * leaders against 24-64 us by recursive doubling, 8 KiB 59 us (the stock
 * collectives 62); at 3 hosts x 2 ranks 30-50 us against 38-67 us up to
 * 4 KiB, but 16 KiB 259 us against the rings' 180: the leaders' recursive
 * doubling moves the whole buffer, which L ranks would share.  Allgather
 * and reduce_scatter_block at 3 hosts x 2 ranks, 12 KiB: 52 and 55 us
 * through the leaders against 83 and 84 us by the rings; at 2 hosts x 2
 * ranks, 16 KiB: 58 us either way. */
#define RINGX_HIER_LEADERS_REDUCE_BYTES (8 * 1024)
#define RINGX_HIER_LEADERS_CHUNK_BYTES (16 * 1024)

/* Whether a call of total_bytes (the whole buffer) goes through the
 * leaders; chunks: it passes node chunks on, which needs every node's
 * ranks consecutive. */
static int through_leaders(const ringx_call_t *c, size_t total_bytes, int chunks)
{
    const ringx_nodes_t *n = &c->m->nodes;
    int across = chunks ? n->nnodes - 1 : ringx_doubling_steps(n->nnodes);

    if (total_bytes > (chunks ? RINGX_HIER_LEADERS_CHUNK_BYTES : RINGX_HIER_LEADERS_REDUCE_BYTES) ||
        2 * (n->node_ranks - 1) + across > RINGX_XSCHED_MAX_STEPS) {
        return 0;
    }
    for (int r = 0; chunks && r < c->m->size; r++) {
        if (n->rank_at[r] != r) {
            return 0;
        }
    }
    return 1;
}

static int is_leader(const ringx_nodes_t *n)
{
    return n->local == 0;
}

/* Into the leader: each other rank of the node sends (reduce: the leader
 * reduces into dst, from its own input first) one step after another. */
static void to_leader(ringx_xsched_t *s, const ringx_nodes_t *n, const char *input, char *dst,
                      size_t bytes, size_t stride, int reduce)
{
    for (int t = 1; t < n->node_ranks; t++) {
        int from = rank_at(n, n->node, t);
        if (is_leader(n) && reduce) {
            ringx_xsched_reduce(s, from, dst, t == 1 ? input : dst, bytes);
        } else if (is_leader(n)) {
            ringx_xsched_recv(s, from, dst + (size_t)t * stride, bytes);
        } else if (t == n->local) {
            ringx_xsched_send(s, rank_at(n, n->node, 0), input, bytes);
        } else {
            ringx_xsched_skip(s);
        }
    }
}

/* Out of the leader: each other rank of the node gets bytes from src (+
 * its place x stride) into dst. */
static void from_leader(ringx_xsched_t *s, const ringx_nodes_t *n, const char *src, char *dst,
                        size_t bytes, size_t stride)
{
    for (int t = 1; t < n->node_ranks; t++) {
        if (is_leader(n)) {
            ringx_xsched_send(s, rank_at(n, n->node, t), src + (size_t)t * stride, bytes);
        } else if (t == n->local) {
            ringx_xsched_recv(s, rank_at(n, n->node, 0), dst, bytes);
        } else {
            ringx_xsched_skip(s);
        }
    }
}

/* The leaders' ring over the node chunks of buf (chunk bytes each, node
 * n's at n x chunk): N-1 steps, passing them on (reduce: reducing them,
 * shift 1, so that each leader ends with its own node's chunk). */
static void leaders_ring(ringx_xsched_t *s, const ringx_nodes_t *n, char *buf, size_t chunk,
                         int reduce)
{
    int N = n->nnodes;

    if (!is_leader(n)) {
        ringx_xsched_skip_steps(s, N - 1);
        return;
    }
    for (int t = 0; t < N - 1; t++) {
        int sb = ringx_ring_send_block(n->node, N, t, reduce);
        int rb = ringx_ring_recv_block(n->node, N, t, reduce);
        char *at = buf + (size_t)rb * chunk;
        if (reduce) {
            ringx_xsched_reduce(s, place_neighbour(n, -1), at, at, chunk);
        } else {
            ringx_xsched_recv(s, place_neighbour(n, -1), at, chunk);
        }
        ringx_xsched_also_send(s, place_neighbour(n, +1), buf + (size_t)sb * chunk, chunk);
    }
}

static void leaders_allreduce(ringx_xsched_t *s, const ringx_call_t *c, const ringx_nodes_t *n)
{
    size_t bytes = c->count * c->elem_size;
    int leaders[RINGX_XSCHED_MAX_STEPS];    /* nodes are laid out up to this many ranks */
    ringx_group_t g = { n->node, n->nnodes, leaders };

    for (int node = 0; node < n->nnodes; node++) {
        leaders[node] = rank_at(n, node, 0);
    }
    to_leader(s, n, c->input, c->result, bytes, 0, 1);
    if (is_leader(n)) {
        ringx_allreduce_doubling(s, &g, c->result, c->result, bytes);
    } else {
        ringx_xsched_skip_steps(s, ringx_doubling_steps(n->nnodes));
    }
    from_leader(s, n, c->result, c->result, bytes, 0);
}

static void leaders_allgather(ringx_xsched_t *s, const ringx_call_t *c, const ringx_nodes_t *n)
{
    size_t bb = c->count * c->elem_size, chunk = bb * (size_t)n->node_ranks;
    char *mine = c->result + (size_t)c->m->rank * bb;

    if (is_leader(n) && c->input != mine) {
        ringx_xsched_local_copy(s, mine, c->input, bb);
    }
    to_leader(s, n, c->input, mine, bb, bb, 0);
    leaders_ring(s, n, c->result, chunk, 0);
    from_leader(s, n, c->result, c->result, bb * (size_t)c->m->size, 0);
}

/* The whole vector reduced into the leader's acc, the node chunks reduced
 * among the leaders (each leader's own ends at its node's place in acc),
 * each rank's block handed out. */
static void leaders_reduce_scatter_block(ringx_xsched_t *s, ringx_call_t *c,
                                         const ringx_nodes_t *n, char *acc)
{
    size_t bb = c->count * c->elem_size, chunk = bb * (size_t)n->node_ranks;
    char *own = acc + (size_t)n->node * chunk;

    to_leader(s, n, c->input, acc, bb * (size_t)c->m->size, 0, 1);
    leaders_ring(s, n, acc, chunk, 1);
    from_leader(s, n, own, c->result, bb, bb);
    if (is_leader(n)) {
        ringx_sched_copy_after(&c->sched, c->result, own, bb);
    }
}

/* ---------------------------------------------------------- allreduce */

static void node_reduce_scatter(ringx_xsched_t *s, const ringx_call_t *c, const ringx_nodes_t *n)
{
    int L = n->node_ranks;
    size_t e = c->elem_size;

    for (int t = 0; t < L - 1; t++) {
        int sb = ringx_ring_send_block(n->local, L, t, 1);
        int rb = ringx_ring_recv_block(n->local, L, t, 1);
        size_t r_at = block_at(c->count, L, rb, e);
        /* step 0 sends untouched input, later steps the partial sums received */
        ringx_xsched_reduce(s, node_neighbour(n, -1), c->result + r_at, c->input + r_at,
                            block_len(c->count, L, rb, e));
        ringx_xsched_also_send(s, node_neighbour(n, +1),
                               (t == 0 ? c->input : c->result) + block_at(c->count, L, sb, e),
                               block_len(c->count, L, sb, e));
    }
}

/* The ring allreduce of this place's block among the nodes: N-1 reducing
 * steps, then N-1 passing the sums on (the walk of ringx_schedule.h). */
static void place_allreduce(ringx_xsched_t *s, const ringx_call_t *c, const ringx_nodes_t *n)
{
    int L = n->node_ranks, N = n->nnodes;
    size_t e = c->elem_size, count = ringx_block_count(c->count, L, n->local);
    char *block = c->result + block_at(c->count, L, n->local, e);

    for (int t = 0; t < 2 * (N - 1); t++) {
        int sb = ringx_ring_send_block(n->node, N, t, 0);
        int rb = ringx_ring_recv_block(n->node, N, t, 0);
        char *dst = block + block_at(count, N, rb, e);
        if (t < N - 1) {
            ringx_xsched_reduce(s, place_neighbour(n, -1), dst, dst, block_len(count, N, rb, e));
        } else {
            ringx_xsched_recv(s, place_neighbour(n, -1), dst, block_len(count, N, rb, e));
        }
        ringx_xsched_also_send(s, place_neighbour(n, +1), block + block_at(count, N, sb, e),
                               block_len(count, N, sb, e));
    }
}

static void node_allgather_blocks(ringx_xsched_t *s, const ringx_call_t *c,
                                  const ringx_nodes_t *n)
{
    int L = n->node_ranks;
    size_t e = c->elem_size;

    for (int t = 0; t < L - 1; t++) {
        int sb = ringx_ring_send_block(n->local, L, t, 0);
        int rb = ringx_ring_recv_block(n->local, L, t, 0);
        ringx_xsched_recv(s, node_neighbour(n, -1), c->result + block_at(c->count, L, rb, e),
                          block_len(c->count, L, rb, e));
        ringx_xsched_also_send(s, node_neighbour(n, +1),
                               c->result + block_at(c->count, L, sb, e),
                               block_len(c->count, L, sb, e));
    }
}

int ringx_hier_build_allreduce(ringx_call_t *c, ringx_alg_t alg)
{
    ringx_xsched_t *s = &c->sched.u.xs;
    const ringx_nodes_t *n = &c->m->nodes;

    (void)alg;
    start_steps(c, c->count * c->elem_size, c->red);
    if (through_leaders(c, c->count * c->elem_size, 0)) {
        leaders_allreduce(s, c, n);
        return OMPI_SUCCESS;
    }
    node_reduce_scatter(s, c, n);
    place_allreduce(s, c, n);
    node_allgather_blocks(s, c, n);
    return OMPI_SUCCESS;
}

/* ---------------------------------------------------------- allgather */

int ringx_hier_build_allgather(ringx_call_t *c, ringx_alg_t alg)
{
    ringx_xsched_t *s = &c->sched.u.xs;
    const ringx_nodes_t *n = &c->m->nodes;
    int L = n->node_ranks, N = n->nnodes;
    size_t bb = c->count * c->elem_size;

    (void)alg;
    start_steps(c, bb * (size_t)c->m->size, RINGX_NO_REDUCTION);
    if (through_leaders(c, bb * (size_t)c->m->size, 1)) {
        leaders_allgather(s, c, n);
        return OMPI_SUCCESS;
    }
    /* while step 0 sends the own block from the send buffer */
    ringx_xsched_local_copy(s, c->result + (size_t)c->m->rank * bb, c->input, bb);
    for (int t = 0; t < N - 1; t++) {
        int sr = rank_at(n, ringx_ring_send_block(n->node, N, t, 0), n->local);
        int rr = rank_at(n, ringx_ring_recv_block(n->node, N, t, 0), n->local);
        ringx_xsched_recv(s, place_neighbour(n, -1), c->result + (size_t)rr * bb, bb);
        ringx_xsched_also_send(s, place_neighbour(n, +1),
                               t == 0 ? c->input : c->result + (size_t)sr * bb, bb);
    }
    /* a ring of the node's places, each step the N blocks of one place */
    for (int t = 0; t < L - 1; t++) {
        int sp = ringx_ring_send_block(n->local, L, t, 0);
        int rp = ringx_ring_recv_block(n->local, L, t, 0);
        for (int node = 0; node < N; node++) {
            ringx_xsched_recv(s, node_neighbour(n, -1),
                              c->result + (size_t)rank_at(n, node, rp) * bb, bb);
            ringx_xsched_also_send(s, node_neighbour(n, +1),
                                   c->result + (size_t)rank_at(n, node, sp) * bb, bb);
        }
    }
    return OMPI_SUCCESS;
}

/* ----------------------------------------------- reduce_scatter_block */

/* A ring reduce-scatter of the node's places (shift 1: place j ends with
 * its own), each step the N blocks of one place, partial sums in acc. */
static void node_reduce_scatter_places(ringx_xsched_t *s, const ringx_call_t *c,
                                       const ringx_nodes_t *n, char *acc, size_t bb)
{
    int L = n->node_ranks, N = n->nnodes;

    for (int t = 0; t < L - 1; t++) {
        int sp = ringx_ring_send_block(n->local, L, t, 1);
        int rp = ringx_ring_recv_block(n->local, L, t, 1);
        for (int node = 0; node < N; node++) {
            size_t r_at = (size_t)rank_at(n, node, rp) * bb;
            size_t s_at = (size_t)rank_at(n, node, sp) * bb;
            ringx_xsched_reduce(s, node_neighbour(n, -1), acc + r_at, c->input + r_at, bb);
            ringx_xsched_also_send(s, node_neighbour(n, +1), (t == 0 ? c->input : acc) + s_at,
                                   bb);
        }
    }
}

/* The ring reduce-scatter of this place's node sums among the nodes; the
 * last step reduces straight into the result (in place too: the input
 * blocks there were all read inside the node, and the engine lets no
 * write overtake a send still reading). */
static void place_reduce_scatter(ringx_xsched_t *s, const ringx_call_t *c,
                                 const ringx_nodes_t *n, char *acc, size_t bb)
{
    int N = n->nnodes;

    for (int t = 0; t < N - 1; t++) {
        size_t s_at = (size_t)rank_at(n, ringx_ring_send_block(n->node, N, t, 1), n->local) * bb;
        size_t r_at = (size_t)rank_at(n, ringx_ring_recv_block(n->node, N, t, 1), n->local) * bb;
        ringx_xsched_reduce(s, place_neighbour(n, -1), t == N - 2 ? c->result : acc + r_at,
                            acc + r_at, bb);
        ringx_xsched_also_send(s, place_neighbour(n, +1), acc + s_at, bb);
    }
}

int ringx_hier_build_reduce_scatter_block(ringx_call_t *c, ringx_alg_t alg)
{
    ringx_xsched_t *s = &c->sched.u.xs;
    const ringx_nodes_t *n = &c->m->nodes;
    size_t bb = c->count * c->elem_size, total = bb * (size_t)c->m->size;
    char *acc = ringx_mem_scratch(&c->mem, RINGX_SCRATCH_BLOCKS, total + 1);

    (void)alg;
    if (acc == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    start_steps(c, total, c->red);
    if (through_leaders(c, total, 1)) {
        leaders_reduce_scatter_block(s, c, n, acc);
        return OMPI_SUCCESS;
    }
    node_reduce_scatter_places(s, c, n, acc, bb);
    place_reduce_scatter(s, c, n, acc, bb);
    return OMPI_SUCCESS;
}
