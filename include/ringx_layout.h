/*
 * ringx_layout.h - the pure arithmetic of a communicator's node layout:
 * nodes numbered from their ranks' node keys, each rank's place on its
 * node, and whether the hierarchical algorithms can run on it.  No MPI:
 * unit-tested on its own.
 */
#ifndef RINGX_LAYOUT_H
#define RINGX_LAYOUT_H

#include <stdint.h>

/*
 * Numbers the nodes of p ranks: key[r] is the same for ranks on the same
 * node and differs otherwise (any value).  Nodes are numbered in the order
 * of their lowest rank, and the ranks of a node in rank order:
 * node_of[r], local_of[r].  node_size[n] (room for p) gets the rank count
 * of node n.  Returns the number of nodes.  O(p^2): for the small
 * communicators the hierarchical algorithms serve.
 */
static inline int ringx_layout_number(int p, const int *key, int *node_of, int *local_of,
                                      int *node_size)
{
    int nnodes = 0;

    for (int r = 0; r < p; r++) {
        node_of[r] = -1;
        for (int q = 0; q < r; q++) {
            if (key[q] == key[r]) {
                node_of[r] = node_of[q];
                break;
            }
        }
        if (node_of[r] < 0) {
            node_of[r] = nnodes;
            node_size[nnodes++] = 0;
        }
        local_of[r] = node_size[node_of[r]]++;
    }
    return nnodes;
}

/* The ranks per node if every one of nnodes nodes has as many, else 0. */
static inline int ringx_layout_even(int nnodes, const int *node_size)
{
    for (int n = 1; n < nnodes; n++) {
        if (node_size[n] != node_size[0]) {
            return 0;
        }
    }
    return nnodes > 0 ? node_size[0] : 0;
}

/* A hash of the numbering, so that the ranks can check in one agreement
 * that they all see the same layout: non-negative, below 2^30. */
static inline int ringx_layout_hash(int p, const int *node_of)
{
    uint32_t h = 2166136261u;
    for (int r = 0; r < p; r++) {
        h = (h ^ (uint32_t)node_of[r]) * 16777619u;
    }
    return (int)(h & 0x3fffffffu);
}

/*
 * The exchange steps each hierarchical algorithm takes on nnodes nodes of
 * node_ranks ranks (every rank the same number):
 *   allreduce             a ring reduce-scatter and a ring allgather inside
 *                         the node, a ring allreduce between nodes:
 *                         2 (L - 1) + 2 (N - 1);
 *   allgather             a ring between nodes, then inside the node a ring
 *                         passing on N blocks a step, one at a time:
 *                         (N - 1) + N (L - 1);
 *   reduce_scatter_block  the mirror image: N (L - 1) + (N - 1).
 * The latter two are p - 1 at most.
 */
static inline int ringx_layout_steps_allreduce(int nnodes, int node_ranks)
{
    return 2 * (node_ranks - 1) + 2 * (nnodes - 1);
}

static inline int ringx_layout_steps_gather(int nnodes, int node_ranks)
{
    return (nnodes - 1) + nnodes * (node_ranks - 1);
}

#endif /* RINGX_LAYOUT_H */
