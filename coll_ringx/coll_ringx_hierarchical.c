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
 *                         of the L blocks inside the node (from 1 MiB on 3
 *                         nodes or more, on each of up to 16 pieces: one
 *                         piece's rings overlap another's).  A node sends
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
 * Small calls (coll_ringx_<coll>_leaders_bytes per rank of a node: by
 * default 32 KiB, allgather 64 KiB) go through each node's first rank
 * instead, its leader, as coll/han's do: the leader gathers (allgather) or
 * reduces (the others) its node's data along a tree (flat: every rank to
 * the leader, up to 8 ranks per node; binomial beyond), the leaders
 * exchange among themselves (recursive doubling for allreduce, rings of
 * node chunks for the others), and each leader hands the result out in
 * its node along the tree again.  Those calls wait on latency, not on the
 * link, and the rings would cross between nodes from every rank of a node
 * at each of their steps.  Allgather and reduce_scatter_block take this way only
 * where every node's ranks are consecutive (the chunks a leader passes on
 * are then contiguous), as Open MPI places them by default.
 *
 * All are lists of exchange steps (coll_ringx_exchange.c), so they are
 * resumable (nonblocking, persistent) and run on host and device memory
 * alike.  The ring's block arithmetic is ringx_schedule.h's.
 */
#include "coll_ringx.h"

#include "ringx_layout.h"

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

/* An empty schedule with room for nsteps steps. */
static int start_steps(ringx_call_t *c, size_t total_bytes, ringx_reduction_t red, int nsteps)
{
    c->sched.engine = RINGX_ENGINE_EXCHANGE;
    ringx_xsched_init(&c->sched.u.xs, c->m, &c->mem, c->coll, red, c->elem_size, total_bytes);
    /* blocking calls only (coll_ringx_mailbox.c); the links say which
     * peers, those on this rank's node */
    c->sched.u.xs.msgs.mailboxes = c->blocking;
    return ringx_xsched_room(&c->sched.u.xs, ringx_mem_host_scratch(&c->mem, c->m), nsteps);
}

/* ------------------------------------------------------------ leaders */

/* The largest calls that go through the leaders, in bytes of the whole
 * buffer per rank of a node, counted up to RINGX_HIER_LEADERS_RANKS_COUNTED
 * ranks per node (the most measured).
 *
 * Allreduce: first timed one by one (ringx_bench --write-rules, test hosts
 * at 1 Gbit/s): at 2 hosts x 2 ranks, 8 B - 4 KiB 22-29 us through the
 * leaders against 24-64 us by recursive doubling, 8 KiB 59 us (the stock
 * collectives 62).  Then on 2026-12-06 (private memory, 3 launches each
 * way, the rings against the leaders up to 1 MiB): at 10 Gbit/s the
 * leaders were ahead up to 128 KiB at 3 x 2 (32-128 KiB 163-433 us against
 * 378-570), 2 x 2 (78-183 against 125-218) and 2 x 4 (183-473 against
 * 359-541; the rings at 32-64 KiB 0.66-0.81x coll/han's speed); at 1
 * Gbit/s, 3 x 2, the rings from 32 KiB (32-64 KiB 310-670 us against
 * 398-862; the leaders' recursive doubling moves the whole buffer across,
 * which the L ranks of a node share in the rings), the leaders still
 * 1.67-1.77x han's speed there.
 *
 * Allgather and reduce_scatter_block, the same day and way (up to 256 KiB
 * - 2 MiB): at 10 Gbit/s, 3 x 2 allgather 32-128 KiB 199-230 us through
 * the leaders against 242-340 by the rings, 256 KiB 412 against 346;
 * reduce_scatter_block 32-64 KiB 213-276 against 297-315, 128 KiB 393
 * against 297; 2 x 2 alike (allgather 256 KiB 214 against 223); 2 x 4
 * allgather and reduce_scatter_block ahead through the leaders up to 256
 * KiB (allgather 121-320 us against 190-438, reduce_scatter_block 78-330
 * against 127-476).  At 1 Gbit/s, 3 x 2: allgather 32-64 KiB 184-261
 * against 323-328, 128 KiB alike; reduce_scatter_block 32-64 KiB 160-258
 * against 231-307, 128 KiB 603 against 461. */
#define RINGX_HIER_LEADERS_RANKS_COUNTED 4

size_t ringx_hier_leaders_default(ringx_coll_t coll)
{
    return coll == RINGX_COLL_ALLGATHER ? 64 * 1024 : 32 * 1024;
}

/* Whether a call of total_bytes (the whole buffer) goes through the
 * leaders.  Allgather and reduce_scatter_block pass node chunks on, which
 * needs every node's ranks consecutive. */
static int through_leaders(const ringx_call_t *c, size_t total_bytes)
{
    const ringx_nodes_t *n = &c->m->nodes;
    size_t ranks = (size_t)(n->node_ranks < RINGX_HIER_LEADERS_RANKS_COUNTED
                                ? n->node_ranks
                                : RINGX_HIER_LEADERS_RANKS_COUNTED);
    size_t per_rank = (total_bytes + ranks - 1) / ranks;    /* no overflow near SIZE_MAX */

    size_t limit = mca_coll_ringx_component.leaders_bytes[c->coll];
    int leaders = (c->coll == RINGX_COLL_ALLREDUCE || n->consecutive) && limit > 0 &&
                  per_rank <= limit;

    RINGX_LOG(2, "hierarchical %s of %zu bytes: %s (coll_ringx_%s_leaders_bytes %zu per rank "
                 "of a node, %zu counted%s)",
              ringx_coll_name(c->coll), total_bytes,
              leaders ? "through the node leaders" : "rings among all ranks",
              ringx_coll_name(c->coll), limit, ranks,
              c->coll == RINGX_COLL_ALLREDUCE || n->consecutive ? ""
                                                               : "; nodes' ranks not consecutive");
    return leaders;
}

/* The radix of the node's tree (ringx_schedule.h): flat, every rank to the
 * leader, up to coll_ringx_leaders_flat_ranks ranks per node, binomial
 * beyond. */
static int node_radix(const ringx_nodes_t *n)
{
    return n->node_ranks <= mca_coll_ringx_component.leaders_flat_ranks ? n->node_ranks : 2;
}

static int node_tree_steps(const ringx_nodes_t *n)
{
    return ringx_tree_steps(n->node_ranks, node_radix(n));
}

/* The steps of a call through the leaders: into the leader and out again
 * along the node's tree, and across the nodes (chunks: a ring of the node
 * chunks, else recursive doubling). */
static int leaders_steps(const ringx_nodes_t *n, int chunks)
{
    return 2 * node_tree_steps(n) + (chunks ? n->nnodes - 1 : ringx_doubling_steps(n->nnodes));
}

static int is_leader(const ringx_nodes_t *n)
{
    return n->local == 0;
}

/* This rank's partner in its node's tree at fan-in step k (a rank, or
 * -1), and where: place (in the node). */
static int tree_partner(const ringx_nodes_t *n, int k, int *sends, int *place)
{
    *place = ringx_tree_peer(n->local, n->node_ranks, node_radix(n), k, sends);
    return *place < 0 ? -1 : rank_at(n, n->node, *place);
}

/* How many places' blocks the one at place holds at fan-in step k. */
static int tree_span(const ringx_nodes_t *n, int place, int k)
{
    return ringx_tree_span(place, n->node_ranks, node_radix(n), k);
}

/* The node's inputs of bytes reduced into the leader's acc: each rank
 * reduces what its subtree sends into its own acc (from its input at
 * first) and sends that on. */
static void reduce_in(ringx_xsched_t *s, const ringx_nodes_t *n, const char *input, char *acc,
                      size_t bytes)
{
    int held = 0;   /* acc holds a reduction */

    for (int k = 0; k < node_tree_steps(n); k++) {
        int sends, place, peer = tree_partner(n, k, &sends, &place);
        if (peer < 0) {
            ringx_xsched_skip(s);
        } else if (sends) {
            ringx_xsched_send(s, peer, held ? acc : input, bytes);
        } else {
            ringx_xsched_reduce(s, peer, acc, held ? acc : input, bytes);
            held = 1;
        }
    }
}

/* The node's blocks of bb gathered into the leader, block j of the node at
 * base + j x bb on every rank (the node's ranks consecutive): each rank
 * gathers its subtree's and sends them on. */
static void gather_in(ringx_xsched_t *s, const ringx_nodes_t *n, const char *input, char *base,
                      size_t bb)
{
    int j = n->local;

    if (input != base + (size_t)j * bb) {
        /* while step 0's sends travel; a rank that sends at step 0 sends
         * its own block alone, from the input */
        ringx_xsched_local_copy(s, base + (size_t)j * bb, input, bb);
    }
    for (int k = 0; k < node_tree_steps(n); k++) {
        int sends, place, peer = tree_partner(n, k, &sends, &place);
        if (peer < 0) {
            ringx_xsched_skip(s);
        } else if (sends) {
            int span = tree_span(n, j, k);
            ringx_xsched_send(s, peer, span == 1 ? input : base + (size_t)j * bb,
                              (size_t)span * bb);
        } else {
            ringx_xsched_recv(s, peer, base + (size_t)place * bb,
                              (size_t)tree_span(n, place, k) * bb);
        }
    }
}

/* The leader's buf of bytes handed to every rank of the node. */
static void bcast_out(ringx_xsched_t *s, const ringx_nodes_t *n, char *buf, size_t bytes)
{
    for (int k = node_tree_steps(n) - 1; k >= 0; k--) {
        int sends, place, peer = tree_partner(n, k, &sends, &place);
        if (peer < 0) {
            ringx_xsched_skip(s);
        } else if (sends) {
            ringx_xsched_recv(s, peer, buf, bytes);
        } else {
            ringx_xsched_send(s, peer, buf, bytes);
        }
    }
}

/* The leader's L blocks of bb at base (block j for place j) handed out:
 * each rank ends with its block at base + local x bb. */
static void scatter_out(ringx_xsched_t *s, const ringx_nodes_t *n, char *base, size_t bb)
{
    int j = n->local;

    for (int k = node_tree_steps(n) - 1; k >= 0; k--) {
        int sends, place, peer = tree_partner(n, k, &sends, &place);
        if (peer < 0) {
            ringx_xsched_skip(s);
        } else if (sends) {
            ringx_xsched_recv(s, peer, base + (size_t)j * bb, (size_t)tree_span(n, j, k) * bb);
        } else {
            ringx_xsched_send(s, peer, base + (size_t)place * bb,
                              (size_t)tree_span(n, place, k) * bb);
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
    ringx_group_t g = { n->node, n->nnodes, n->leaders };

    reduce_in(s, n, c->input, c->result, bytes);
    if (is_leader(n)) {
        ringx_allreduce_doubling(s, &g, c->result, c->result, bytes);
    } else {
        ringx_xsched_skip_steps(s, ringx_doubling_steps(n->nnodes));
    }
    bcast_out(s, n, c->result, bytes);
}

static void leaders_allgather(ringx_xsched_t *s, const ringx_call_t *c, const ringx_nodes_t *n)
{
    size_t bb = c->count * c->elem_size, chunk = bb * (size_t)n->node_ranks;

    gather_in(s, n, c->input, c->result + (size_t)n->node * chunk, bb);
    leaders_ring(s, n, c->result, chunk, 0);
    bcast_out(s, n, c->result, bb * (size_t)c->m->size);
}

/* The whole vector reduced into the leader's acc, the node chunks reduced
 * among the leaders (each leader's own ends at its node's place in acc),
 * each rank's block handed out there and copied into its result. */
static void leaders_reduce_scatter_block(ringx_xsched_t *s, ringx_call_t *c,
                                         const ringx_nodes_t *n, char *acc)
{
    size_t bb = c->count * c->elem_size, chunk = bb * (size_t)n->node_ranks;
    char *own = acc + (size_t)n->node * chunk;

    reduce_in(s, n, c->input, acc, bb * (size_t)c->m->size);
    leaders_ring(s, n, acc, chunk, 1);
    scatter_out(s, n, own, bb);
    ringx_sched_copy_after(&c->sched, c->result, own + (size_t)n->local * bb, bb);
}

/* ---------------------------------------------------------- allreduce */

/* A piece of the allreduce's buffer: large calls run the three rings on
 * each of a few pieces, so that the rings inside the node of one piece
 * overlap the ring across the nodes of another (the steps' sends leave
 * ahead, coll_ringx_exchange.c). */
typedef struct {
    const char *input;
    char *result;
    size_t count;
} piece_t;

/* Cut from RINGX_HIER_PIECES_FROM bytes, into pieces of at least
 * RINGX_HIER_PIECE_BYTES, at most RINGX_HIER_MAX_PIECES, on 3 nodes or
 * more.  Against one piece (test hosts with private memory, 10 Gbit/s
 * links, 2026-12-06, ringx_bench -c allreduce -r 3, 4 interleaved runs,
 * medians): at 3 hosts x 2 ranks 4 pieces took 0.79-0.89x the time at 1-8
 * MiB (16 MiB 0.96x), 8 pieces against 4 0.80-0.96x at 2-16 MiB, 16
 * against 8 0.81x at 4 MiB, 0.88x at 8 MiB, 0.96x at 16 MiB (1-2 MiB, the
 * same pieces: 0.96-1.05x); at 2 x 2, where the ring across the nodes has
 * 2 steps to overlap, 4 pieces took 0.97-1.02x at 1, 4 and 8 MiB but 1.11x
 * at 2 MiB in two sets of runs. */
#define RINGX_HIER_PIECES_FROM (1024 * 1024)
#define RINGX_HIER_PIECE_BYTES (256 * 1024)
#define RINGX_HIER_MAX_PIECES 16

static int allreduce_pieces(const ringx_call_t *c, const ringx_nodes_t *n)
{
    size_t bytes = c->count * c->elem_size, k = bytes / RINGX_HIER_PIECE_BYTES;
    int steps = ringx_layout_steps_allreduce(n->nnodes, n->node_ranks);

    if (n->nnodes < 3 || bytes < RINGX_HIER_PIECES_FROM ||
        c->count < (size_t)RINGX_HIER_MAX_PIECES * c->m->size) {
        return 1;
    }
    k = k < RINGX_HIER_MAX_PIECES ? k : RINGX_HIER_MAX_PIECES;
    /* every step's message has a number of its own (RINGX_TAG_STEP_BITS) */
    return (size_t)steps * k < RINGX_TAG_DATA_STEPS ? (int)k : 1;
}

static piece_t piece_of(const ringx_call_t *c, int pieces, int i)
{
    size_t at = block_at(c->count, pieces, i, c->elem_size);
    return (piece_t){ c->input + at, c->result + at, ringx_block_count(c->count, pieces, i) };
}

static void node_reduce_scatter(ringx_xsched_t *s, const ringx_call_t *c, const ringx_nodes_t *n,
                                piece_t pc)
{
    int L = n->node_ranks;
    size_t e = c->elem_size;

    for (int t = 0; t < L - 1; t++) {
        int sb = ringx_ring_send_block(n->local, L, t, 1);
        int rb = ringx_ring_recv_block(n->local, L, t, 1);
        size_t r_at = block_at(pc.count, L, rb, e);
        /* step 0 sends untouched input, later steps the partial sums received */
        ringx_xsched_reduce(s, node_neighbour(n, -1), pc.result + r_at, pc.input + r_at,
                            block_len(pc.count, L, rb, e));
        ringx_xsched_also_send(s, node_neighbour(n, +1),
                               (t == 0 ? pc.input : pc.result) + block_at(pc.count, L, sb, e),
                               block_len(pc.count, L, sb, e));
    }
}

/* The ring allreduce of this place's block among the nodes: N-1 reducing
 * steps, then N-1 passing the sums on (the walk of ringx_schedule.h). */
static void place_allreduce(ringx_xsched_t *s, const ringx_call_t *c, const ringx_nodes_t *n,
                            piece_t pc)
{
    int L = n->node_ranks, N = n->nnodes;
    size_t e = c->elem_size, count = ringx_block_count(pc.count, L, n->local);
    char *block = pc.result + block_at(pc.count, L, n->local, e);

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
                                  const ringx_nodes_t *n, piece_t pc)
{
    int L = n->node_ranks;
    size_t e = c->elem_size;

    for (int t = 0; t < L - 1; t++) {
        int sb = ringx_ring_send_block(n->local, L, t, 0);
        int rb = ringx_ring_recv_block(n->local, L, t, 0);
        ringx_xsched_recv(s, node_neighbour(n, -1), pc.result + block_at(pc.count, L, rb, e),
                          block_len(pc.count, L, rb, e));
        ringx_xsched_also_send(s, node_neighbour(n, +1),
                               pc.result + block_at(pc.count, L, sb, e),
                               block_len(pc.count, L, sb, e));
    }
}

/* The rings in an order where each waits least: every piece's reduction
 * inside the node (their first messages read the input: they all leave at
 * once), then the ring across the nodes of piece i followed by the
 * allgather inside the node of piece i - 1, whose messages leave as soon
 * as piece i - 1 has crossed. */
static void rings_allreduce(ringx_xsched_t *s, const ringx_call_t *c, const ringx_nodes_t *n,
                            int pieces)
{
    for (int i = 0; i < pieces; i++) {
        node_reduce_scatter(s, c, n, piece_of(c, pieces, i));
    }
    for (int i = 0; i < pieces; i++) {
        place_allreduce(s, c, n, piece_of(c, pieces, i));
        if (i > 0) {
            node_allgather_blocks(s, c, n, piece_of(c, pieces, i - 1));
        }
    }
    node_allgather_blocks(s, c, n, piece_of(c, pieces, pieces - 1));
}

int ringx_hier_build_allreduce(ringx_call_t *c, ringx_alg_t alg)
{
    ringx_xsched_t *s = &c->sched.u.xs;
    const ringx_nodes_t *n = &c->m->nodes;
    int leaders = through_leaders(c, c->count * c->elem_size);
    int pieces = leaders ? 1 : allreduce_pieces(c, n);
    int rc = start_steps(c, c->count * c->elem_size, c->red,
                         leaders ? leaders_steps(n, 0)
                                 : pieces * ringx_layout_steps_allreduce(n->nnodes, n->node_ranks));

    (void)alg;
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    if (leaders) {
        leaders_allreduce(s, c, n);
        return OMPI_SUCCESS;
    }
    rings_allreduce(s, c, n, pieces);
    return OMPI_SUCCESS;
}

/* ---------------------------------------------------------- allgather */

int ringx_hier_build_allgather(ringx_call_t *c, ringx_alg_t alg)
{
    ringx_xsched_t *s = &c->sched.u.xs;
    const ringx_nodes_t *n = &c->m->nodes;
    int L = n->node_ranks, N = n->nnodes;
    size_t bb = c->count * c->elem_size;
    int leaders = through_leaders(c, bb * (size_t)c->m->size);
    int rc = start_steps(c, bb * (size_t)c->m->size, RINGX_NO_REDUCTION,
                         leaders ? leaders_steps(n, 1) : ringx_layout_steps_gather(N, L));

    (void)alg;
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    if (leaders) {
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
    int leaders = through_leaders(c, total);
    int steps = leaders ? leaders_steps(n, 1) : ringx_layout_steps_gather(n->nnodes, n->node_ranks);
    int rc = acc == NULL ? OMPI_ERR_OUT_OF_RESOURCE : start_steps(c, total, c->red, steps);

    (void)alg;
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    if (leaders) {
        leaders_reduce_scatter_block(s, c, n, acc);
        return OMPI_SUCCESS;
    }
    node_reduce_scatter_places(s, c, n, acc, bb);
    place_reduce_scatter(s, c, n, acc, bb);
    return OMPI_SUCCESS;
}
