/*
 * coll_ringx_job.c - what MPI_COMM_WORLD's connection learnt of every
 * process of the job, so that a later communicator of those processes
 * connects without a message.
 *
 * A connection agrees because each rank knows only its own side: whether
 * it has UCX, which peers it has met, which windows it mapped, how it sees
 * the nodes.  MPI_COMM_WORLD connects inside MPI_Init (module enable), so
 * when any later communicator connects, every process of the job holds
 * the same facts about every other: a worker address (the endpoint),
 * whether its window is mapped by every process of its node, its node (the
 * lowest rank of MPI_COMM_WORLD there) and whether it yields while
 * waiting; and whether every process reads every other of its node with
 * single copies.  Each rank of a communicator whose
 * members are all processes of MPI_COMM_WORLD then works out alone what
 * the agreement would have said, and all get the same answer.  Had
 * MPI_COMM_WORLD connected at its first call instead, one process could
 * still be connecting it while another connected a later communicator (the
 * two communicators' calls need not be in the same order on every rank),
 * and the two would decide differently.
 *
 * The facts are kept only if every process found them true of itself
 * (agreed with MPI_COMM_WORLD's mailbox settings): windows mapped between
 * all processes of each node, and its view of the nodes by Open MPI's
 * locality the same as the table's.
 */
#include "coll_ringx.h"

#include <limits.h>
#include <stdlib.h>

static struct {
    int size;                           /* processes; 0: nothing known */
    uint32_t jobid;
    int single_copy;                    /* between every two processes of a node */
    ringx_job_record_t *records;        /* by rank of MPI_COMM_WORLD */
} job;

int ringx_job_is_world(const struct ompi_communicator_t *comm)
{
    return comm == &ompi_mpi_comm_world.comm;
}

static const opal_process_name_t *name_of(struct ompi_communicator_t *comm, int rank)
{
    return &ompi_comm_peer_lookup(comm, rank)->super.proc_name;
}

void ringx_job_record_mine(struct ompi_communicator_t *comm, ringx_job_record_t *mine)
{
    int leader = ompi_comm_rank(comm);

    for (int r = 0; r < leader; r++) {
        if (ringx_nodes_on_my_node(comm, r)) {
            leader = r;
            break;
        }
    }
    mine->node_leader = (uint32_t)leader;
    mine->crowded = (uint32_t)mca_coll_ringx_should_yield();
}

int ringx_job_holds_here(const mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm,
                         char *const *windows, const ringx_job_record_t *records)
{
    const opal_process_name_t *me = name_of(comm, m->rank);
    size_t window_bytes;
    int ok = ringx_job_is_world(comm) && ringx_ucx_window(&window_bytes) != NULL;

    for (int r = 0; ok && r < m->size; r++) {
        const opal_process_name_t *name = name_of(comm, r);
        int node = ringx_nodes_on_my_node(comm, r);

        ok = name->jobid == me->jobid && name->vpid == (uint32_t)r &&
             node == (records[r].node_leader == records[m->rank].node_leader);
        ok = ok && (!node || r == m->rank || windows[r] != NULL);
    }
    return ok;
}

int ringx_job_single_copy_here(const mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm)
{
    for (int r = 0; r < m->size; r++) {
        if (r != m->rank && ringx_nodes_on_my_node(comm, r) &&
            !ringx_ucx_single_copy(m->peers[r])) {
            return 0;
        }
    }
    return 1;
}

void ringx_job_keep(struct ompi_communicator_t *comm, ringx_job_record_t *records,
                    int single_copy)
{
    ringx_job_release();
    job.size = ompi_comm_size(comm);
    job.jobid = name_of(comm, ompi_comm_rank(comm))->jobid;
    job.single_copy = single_copy;
    job.records = records;
}

void ringx_job_release(void)
{
    free(job.records);
    job.records = NULL;
    job.size = 0;
}

/* The fewest and the most members of comm on one node. */
static int node_extremes(int p, const int *node_key, ringx_job_view_t *v)
{
    int *count = calloc((size_t)job.size, sizeof(*count));

    if (count == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (int r = 0; r < p; r++) {
        count[node_key[r]]++;
    }
    v->node_ranks_min = INT_MAX;
    v->node_ranks_max = 0;
    for (int r = 0; r < p; r++) {
        int n = count[node_key[r]];
        v->node_ranks_min = n < v->node_ranks_min ? n : v->node_ranks_min;
        v->node_ranks_max = n > v->node_ranks_max ? n : v->node_ranks_max;
    }
    free(count);
    return OMPI_SUCCESS;
}

int ringx_job_covers(struct ompi_communicator_t *comm)
{
    for (int r = 0; job.size > 0 && r < ompi_comm_size(comm); r++) {
        const opal_process_name_t *name = name_of(comm, r);
        if (name->jobid != job.jobid || name->vpid >= (uint32_t)job.size) {
            return 0;
        }
    }
    return job.size > 0;
}

int ringx_job_view(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm,
                   char **windows, int *node_key, ringx_job_view_t *v)
{
    v->crowded = 1;
    v->single_copy = job.single_copy;
    for (int r = 0; r < m->size; r++) {
        uint32_t world = name_of(comm, r)->vpid;
        const ringx_job_record_t *rec = &job.records[world];

        if (r != m->rank) {
            /* MPI_COMM_WORLD's connection met every process, on every process */
            m->peers[r] = ringx_ucx_known_peer(ringx_ucx_key(job.jobid, world));
            if (m->peers[r] == NULL) {
                return OMPI_ERR_NOT_FOUND;
            }
            windows[r] = ringx_ucx_mapped_window(m->peers[r]);
        }
        v->crowded = v->crowded && rec->crowded;
        node_key[r] = (int)rec->node_leader;
    }
    return node_extremes(m->size, node_key, v);
}
