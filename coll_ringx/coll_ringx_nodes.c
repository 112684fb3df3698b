/*
 * coll_ringx_nodes.c - which node each rank of a communicator is on, for
 * the hierarchical algorithms.  This rank's own node from Open MPI's
 * locality (as for the mailboxes), the other nodes from the hostnames Open
 * MPI knows for their processes.  Every rank works the layout out alone,
 * with no message; the connection's agreement then checks that all saw the
 * same one (a hash of it), since a hierarchical schedule needs every rank
 * to pair the same partners.
 */
#include "coll_ringx.h"

#include <stdlib.h>
#include <string.h>

#include "opal/util/proc.h"
#include "ringx_layout.h"

int ringx_nodes_on_my_node(struct ompi_communicator_t *comm, int rank)
{
    const ompi_proc_t *proc = ompi_comm_peer_lookup(comm, rank);
    return rank == ompi_comm_rank(comm) || OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags);
}

/* Node keys: -1 for this rank's node, else the lowest rank with the same
 * hostname among the others. */
static void node_keys(struct ompi_communicator_t *comm, int p, int *key, const char **host)
{
    for (int r = 0; r < p; r++) {
        key[r] = -1;
        host[r] = NULL;
        if (ringx_nodes_on_my_node(comm, r)) {
            continue;
        }
        host[r] = opal_get_proc_hostname(&ompi_comm_peer_lookup(comm, r)->super);
        key[r] = r;
        for (int q = 0; q < r; q++) {
            if (host[q] != NULL && strcmp(host[q], host[r]) == 0) {
                key[r] = q;
                break;
            }
        }
    }
}

/* The ranks at each (node, local) place of an even layout, each node's
 * leader (one array), and whether each node's ranks are consecutive. */
static int place_ranks(ringx_nodes_t *n, int p, const int *node_of, const int *local_of)
{
    n->rank_at = malloc(sizeof(*n->rank_at) * (size_t)(p + n->nnodes));
    if (n->rank_at == NULL) {
        return 0;
    }
    for (int r = 0; r < p; r++) {
        n->rank_at[node_of[r] * n->node_ranks + local_of[r]] = r;
    }
    n->consecutive = 1;
    for (int r = 0; r < p; r++) {
        n->consecutive = n->consecutive && n->rank_at[r] == r;
    }
    n->leaders = n->rank_at + p;
    for (int node = 0; node < n->nnodes; node++) {
        n->leaders[node] = n->rank_at[node * n->node_ranks];
    }
    return 1;
}

/* Lays m's ranks out from their node keys; returns a hash of the layout
 * (0: nothing laid out). */
static int lay_out(mca_coll_ringx_module_t *m, const int *key)
{
    ringx_nodes_t *n = &m->nodes;
    int p = m->size, hash;
    int *ints = calloc(3 * (size_t)p, sizeof(*ints));

    if (ints == NULL) {
        return 0;
    }
    int *node_of = ints, *local_of = ints + p, *node_size = ints + 2 * p;
    n->nnodes = ringx_layout_number(p, key, node_of, local_of, node_size);
    n->node_ranks = ringx_layout_even(n->nnodes, node_size);
    n->node = node_of[m->rank];
    n->local = local_of[m->rank];
    hash = ringx_layout_hash(p, node_of) + 1;       /* 0: nothing laid out */
    if (n->node_ranks == 0 || !place_ranks(n, p, node_of, local_of)) {
        n->node_ranks = 0;
    }
    free(ints);
    return hash;
}

/* Whether m's ranks may be laid out: on more than one node, and not too
 * many. */
static int worth_laying_out(const mca_coll_ringx_module_t *m, int one_node)
{
    return !one_node && m->size <= RINGX_HIER_MAX_RANKS;
}

int ringx_nodes_observe(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm)
{
    int p = m->size, hash = 0;
    int *key = NULL;
    const char **host = NULL;

    ringx_nodes_release(m);
    if (worth_laying_out(m, ompi_group_count_local_peers(comm->c_local_group) == p) &&
        (key = malloc(sizeof(*key) * (size_t)p)) != NULL &&
        (host = malloc(sizeof(*host) * (size_t)p)) != NULL) {
        node_keys(comm, p, key, host);
        hash = lay_out(m, key);
    }
    free(host);
    free(key);
    return hash;
}

void ringx_nodes_from_keys(mca_coll_ringx_module_t *m, const int *node_key)
{
    int one_node = 1;

    ringx_nodes_release(m);
    for (int r = 1; r < m->size; r++) {
        one_node = one_node && node_key[r] == node_key[0];
    }
    if (worth_laying_out(m, one_node)) {
        (void)lay_out(m, node_key);
    }
}

static const char *unused_why(const ringx_nodes_t *n, int agreed)
{
    return !agreed            ? "the ranks do not see the same nodes"
           : n->node_ranks == 0 ? "the nodes have different rank counts"
                                : "one rank per node";
}

void ringx_nodes_agreed(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm, int agreed)
{
    ringx_nodes_t *n = &m->nodes;

    if (n->nnodes == 0) {
        return;             /* one node */
    }
    if (agreed && n->nnodes >= 2 && n->node_ranks >= 2) {
        ringx_count(&mca_coll_ringx_counters.comms_hierarchical, 1);
        RINGX_LOG(2, "%s: laid out for the hierarchical algorithms: %d nodes of %d ranks, this "
                  "rank node %d, place %d", ringx_comm_label(comm), n->nnodes, n->node_ranks, n->node,
                  n->local);
        return;
    }
    if (agreed && n->node_ranks == 0) {
        ringx_count(&mca_coll_ringx_counters.comms_uneven, 1);
    }
    RINGX_LOG(1, "%s: no hierarchical algorithms (%s): the flat ones serve", ringx_comm_label(comm),
              unused_why(n, agreed));
    ringx_nodes_release(m);
}

void ringx_nodes_release(mca_coll_ringx_module_t *m)
{
    free(m->nodes.rank_at);
    memset(&m->nodes, 0, sizeof(m->nodes));
}

int ringx_layout_of(const mca_coll_ringx_module_t *m, int direct_ok)
{
    if (ringx_direct_possible(m)) {
        return direct_ok ? RINGX_LAYOUT_ONE_NODE : RINGX_LAYOUT_FLAT;
    }
    return m->nodes.nnodes > 0 ? RINGX_LAYOUT_NODES : RINGX_LAYOUT_FLAT;
}
