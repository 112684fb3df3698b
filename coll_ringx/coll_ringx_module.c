/*
 * coll_ringx_module.c - one module per communicator: selection, the saved
 * previous component for fallback, and the per-communicator transport
 * state (agreed id, call sequence, peers).  Filling the slots no selected
 * component fills is coll_ringx_fill.c's.
 */
#include "coll_ringx.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ompi/runtime/mpiruntime.h"

/* Where ringx serves none of its collectives (MPI_COMM_SELF,
 * intercommunicators, negative priority) its module only fills empty
 * slots.  It asks for the highest priority Open MPI accepts so that it is
 * enabled after every other component and sees what they all filled. */
#define RINGX_FILL_ONLY_PRIORITY 100

static void module_construct(mca_coll_ringx_module_t *m)
{
    m->serves = false;
    m->prev_allreduce = NULL;
    m->prev_allreduce_module = NULL;
    m->prev_allgather = NULL;
    m->prev_allgather_module = NULL;
    m->prev_reduce_scatter_block = NULL;
    m->prev_reduce_scatter_block_module = NULL;
    m->state = RINGX_COMM_UNCONNECTED;
    m->rank = m->size = 0;
    m->comm_id = m->seq = 0;
    m->comm_id_common = false;
    m->peers = NULL;
    memset(&m->mailbox, 0, sizeof(m->mailbox));
    m->direct_calls = 0;
    m->nparked = 0;
    memset(&m->segments, 0, sizeof(m->segments));
    memset(&m->blocks, 0, sizeof(m->blocks));
    memset(&m->bounce, 0, sizeof(m->bounce));
    memset(&m->inputs, 0, sizeof(m->inputs));
    m->gpu = NULL;
}

#define RELEASE_PREV(m, coll)                              \
    do {                                                   \
        if ((m)->prev_##coll##_module != NULL) {           \
            OBJ_RELEASE((m)->prev_##coll##_module);        \
            (m)->prev_##coll##_module = NULL;              \
            (m)->prev_##coll = NULL;                       \
        }                                                  \
    } while (0)

static void drain_parked(mca_coll_ringx_module_t *m);

static void release_state(mca_coll_ringx_module_t *m)
{
    drain_parked(m);
    RELEASE_PREV(m, allreduce);
    RELEASE_PREV(m, allgather);
    RELEASE_PREV(m, reduce_scatter_block);
    free(m->peers);
    m->peers = NULL;
    ringx_mailbox_disconnect(m);
    free(m->segments.ptr);
    free(m->blocks.ptr);
    free(m->bounce.ptr);
    free(m->inputs.ptr);
    memset(&m->segments, 0, sizeof(m->segments));
    memset(&m->blocks, 0, sizeof(m->blocks));
    memset(&m->bounce, 0, sizeof(m->bounce));
    memset(&m->inputs, 0, sizeof(m->inputs));
#if RINGX_HAVE_CUDA
    ringx_cuda_release(m->gpu);
#endif
    m->gpu = NULL;
    m->state = RINGX_COMM_UNCONNECTED;
}

static void module_destruct(mca_coll_ringx_module_t *m)
{
    release_state(m);
}

OBJ_CLASS_INSTANCE(mca_coll_ringx_module_t, mca_coll_base_module_t, module_construct,
                   module_destruct);

#define SAVE_PREV(m, comm, coll)                                      \
    do {                                                              \
        (m)->prev_##coll = (comm)->c_coll->coll_##coll;               \
        (m)->prev_##coll##_module = (comm)->c_coll->coll_##coll##_module; \
        if ((m)->prev_##coll##_module != NULL) {                      \
            OBJ_RETAIN((m)->prev_##coll##_module);                    \
        }                                                             \
    } while (0)

/* Open MPI enables modules in increasing priority, so the table already
 * holds what the lower-priority components chose: that is the fallback,
 * once the slots they left empty are filled. */
static int module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_ringx_module_t *m = (mca_coll_ringx_module_t *)module;
    int filled = ringx_fill_empty_slots(module, comm);

    if (!m->serves) {
        /* Nothing filled (always so under the default selection): stay out
         * of the communicator's module list. */
        return filled > 0 ? OMPI_SUCCESS : OMPI_ERROR;
    }
    SAVE_PREV(m, comm, allreduce);
    SAVE_PREV(m, comm, allgather);
    SAVE_PREV(m, comm, reduce_scatter_block);
    if (m->prev_allreduce == NULL || m->prev_allgather == NULL ||
        m->prev_reduce_scatter_block == NULL) {
        RINGX_LOG(1, "no other component (selected or from coll_ringx_fill) serves allreduce, "
                     "allgather and reduce_scatter_block on %s: ringx stays off there",
                  comm->c_name);
        release_state(m);
        return OMPI_ERROR;
    }
    m->rank = ompi_comm_rank(comm);
    m->size = ompi_comm_size(comm);
    m->comm_id_common = ringx_comm_common_id(comm, &m->comm_id);
    RINGX_LOG(2, "enabled on %s (%d ranks)", comm->c_name, m->size);
    return OMPI_SUCCESS;
}

/* Open MPI 4.1 calls this once for every slot the module fills. */
static int module_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    release_state((mca_coll_ringx_module_t *)module);
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_ringx_comm_query(struct ompi_communicator_t *comm,
                                                  int *priority)
{
    mca_coll_ringx_module_t *m;

    const char *why = OMPI_COMM_IS_INTER(comm)           ? "intercommunicator"
                      : ompi_comm_size(comm) < 2             ? "fewer than 2 ranks"
                      : mca_coll_ringx_component.priority < 0 ? "negative priority"
                                                              : NULL;
    if (why != NULL && !ringx_fill_enabled()) {
        RINGX_LOG(3, "declines %s: %s", comm->c_name, why);
        return NULL;
    }
    m = OBJ_NEW(mca_coll_ringx_module_t);
    if (m == NULL) {
        return NULL;
    }
    m->super.coll_module_enable = module_enable;
    m->super.coll_module_disable = module_disable;
    if (why != NULL) {
        RINGX_LOG(3, "serves no collective on %s (%s): fills only the slots other components "
                     "leave empty", comm->c_name, why);
        *priority = RINGX_FILL_ONLY_PRIORITY;
        return &m->super;
    }
    /* A local UCX failure does not decline: declining is a local choice,
     * and ranks that chose differently would run different collectives.
     * The first served call agrees on the transport collectively. */
    (void)ringx_ucx_start(ompi_mpi_thread_multiple, mca_coll_ringx_component.output,
                         ringx_mailbox_window_bytes(), mca_coll_ringx_component.single_copy);

    m->serves = true;
    *priority = mca_coll_ringx_component.priority;
    m->super.coll_allreduce = mca_coll_ringx_allreduce;
    m->super.coll_allgather = mca_coll_ringx_allgather;
    m->super.coll_reduce_scatter_block = mca_coll_ringx_reduce_scatter_block;
    return &m->super;
}

void *ringx_scratch_get(ringx_scratch_t *s, size_t size)
{
    if (size > s->size) {
        void *p = NULL;
        if (posix_memalign(&p, 64, size) != 0) {
            return NULL;
        }
        free(s->ptr);
        s->ptr = p;
        s->size = size;
    }
    return s->ptr;
}

/* ------------------------------------------------------------- connect */

typedef struct connect_header {
    uint64_t key;
    uint64_t address_len;
    uint64_t window_desc_len;
} connect_header_t;

typedef struct connect_sizes {
    size_t address;             /* the longest worker address */
    size_t window_desc;         /* the longest window description */
} connect_sizes_t;

/* Whether every member has UCX, and the longest address and window
 * description to exchange. */
static int agree(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm,
                 int *any_without_ucx, connect_sizes_t *sizes)
{
    size_t address_len = 0, desc_len = 0;
    int local[3], global[3], rc;

    (void)ringx_ucx_local_address(&address_len);
    (void)ringx_ucx_window_desc(&desc_len);
    local[0] = !ringx_ucx_ready();
    local[1] = (int)address_len;
    local[2] = (int)desc_len;
    rc = m->prev_allreduce(local, global, 3, MPI_INT, MPI_MAX, comm, m->prev_allreduce_module);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    *any_without_ucx = global[0];
    sizes->address = (size_t)global[1];
    sizes->window_desc = (size_t)global[2];
    return OMPI_SUCCESS;
}

static void pack_record(char *record, const connect_sizes_t *sizes)
{
    connect_header_t *h = (connect_header_t *)record;
    size_t address_len, desc_len;
    const void *address = ringx_ucx_local_address(&address_len);
    const void *desc = ringx_ucx_window_desc(&desc_len);

    h->key = ringx_ucx_local_key();
    h->address_len = address_len;
    h->window_desc_len = desc_len;
    memcpy(record + sizeof(*h), address, address_len);
    if (desc_len) {
        memcpy(record + sizeof(*h) + sizes->address, desc, desc_len);
    }
}

/* Learns every peer's worker address and maps its window (windows[r], NULL
 * where it cannot be mapped). */
static int learn_peers(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm,
                       const connect_sizes_t *sizes, char **windows)
{
    size_t record = (sizeof(connect_header_t) + sizes->address + sizes->window_desc + 7) &
                    ~(size_t)7;
    char *mine = calloc(1, record);
    char *all = malloc(record * (size_t)m->size);
    int rc = OMPI_ERR_OUT_OF_RESOURCE;

    m->peers = calloc((size_t)m->size, sizeof(*m->peers));
    if (mine && all && m->peers) {
        pack_record(mine, sizes);
        rc = m->prev_allgather(mine, (int)record, MPI_BYTE, all, (int)record, MPI_BYTE, comm,
                               m->prev_allgather_module);
    }
    for (int r = 0; rc == OMPI_SUCCESS && r < m->size; r++) {
        const char *rec = all + (size_t)r * record;
        const connect_header_t *h = (const connect_header_t *)rec;
        if (r == m->rank) {
            continue;
        }
        m->peers[r] = ringx_ucx_peer(h->key, rec + sizeof(*h), (size_t)h->address_len);
        if (m->peers[r] == NULL) {
            rc = OMPI_ERR_OUT_OF_RESOURCE;
        } else if (h->window_desc_len) {
            windows[r] = ringx_ucx_peer_window(m->peers[r], rec + sizeof(*h) + sizes->address,
                                               (size_t)h->window_desc_len);
        }
    }
    free(mine);
    free(all);
    return rc;
}

int ringx_module_connect(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm)
{
    int any_without_ucx, rc;
    connect_sizes_t sizes;
    char **windows;

    rc = agree(m, comm, &any_without_ucx, &sizes);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    if (any_without_ucx || !m->comm_id_common || m->comm_id > RINGX_TAG_ID_MAX) {
        m->state = any_without_ucx ? RINGX_COMM_NO_TRANSPORT : RINGX_COMM_NO_COMMON_ID;
        RINGX_LOG(1, "%s: %s; the previous component serves this communicator", comm->c_name,
                  any_without_ucx      ? "UCX is unavailable on some rank"
                  : !m->comm_id_common ? "its members share no context id (a communicator "
                                         "made from a group or a session)"
                                       : "its context id does not fit ringx's message tags");
        return OMPI_SUCCESS;
    }
    windows = calloc((size_t)m->size, sizeof(*windows));
    rc = windows != NULL ? learn_peers(m, comm, &sizes, windows) : OMPI_ERR_OUT_OF_RESOURCE;
    /* Collective: every rank takes part, a rank that failed without mailboxes. */
    int mailbox_rc = ringx_mailbox_connect(m, comm, rc == OMPI_SUCCESS ? windows : NULL);
    rc = rc == OMPI_SUCCESS ? mailbox_rc : rc;
    free(windows);
    if (rc != OMPI_SUCCESS) {
        free(m->peers);
        m->peers = NULL;
        return rc;
    }
    m->state = RINGX_COMM_READY;
    /* Read here, not at open: Open MPI sets mpi_yield_when_idle after it
     * has selected the collectives of MPI_COMM_WORLD. */
    ringx_ucx_set_yield(mca_coll_ringx_should_yield());
    RINGX_LOG(2, "%s connected: id %u, %d ranks", comm->c_name, (unsigned)m->comm_id, m->size);
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------ parked receives */

void ringx_module_park(mca_coll_ringx_module_t *m, ringx_req_t *req)
{
    int kept = 0;

    if (*req == NULL) {
        return;
    }
    for (int i = 0; i < m->nparked; i++) {
        if (ringx_ucx_test(&m->parked[i]) == 0) {
            m->parked[kept++] = m->parked[i];
        }
    }
    m->nparked = kept;
    if (m->nparked == RINGX_MAX_PARKED) {
        (void)ringx_ucx_wait(&m->parked[0]);
        memmove(m->parked, m->parked + 1, sizeof(m->parked[0]) * (size_t)--m->nparked);
    }
    m->parked[m->nparked++] = *req;
    *req = NULL;
}

/* Their messages were sent before the peers left the calls that owed
 * them, so they arrive promptly; the time bound only keeps a vanished
 * peer from hanging MPI_Comm_free. */
static void drain_parked(mca_coll_ringx_module_t *m)
{
    struct timespec start, now;
    unsigned idle = 0;
    int pending = m->nparked;

    clock_gettime(CLOCK_MONOTONIC, &start);
    while (pending) {
        pending = 0;
        for (int i = 0; i < m->nparked; i++) {
            pending += ringx_ucx_test(&m->parked[i]) == 0;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (pending && now.tv_sec - start.tv_sec > 1) {
            break;
        }
        ringx_ucx_progress(&idle);
    }
    for (int i = 0; i < m->nparked; i++) {
        ringx_ucx_release(&m->parked[i]);
    }
    m->nparked = 0;
}

/* ------------------------------------------------------------ admission */

int ringx_admit(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm,
                ringx_coll_t coll, int buffers, int *rc)
{
    int reason = buffers;

    *rc = OMPI_SUCCESS;
    if (!mca_coll_ringx_component.enable[coll]) {
        reason = RINGX_FALLBACK_DISABLED;
    }
    if (reason == RINGX_SERVE && m->state == RINGX_COMM_UNCONNECTED) {
        *rc = ringx_module_connect(m, comm);
        if (*rc != OMPI_SUCCESS) {
            return RINGX_FALLBACK_TRANSPORT;
        }
    }
    if (reason == RINGX_SERVE && m->state == RINGX_COMM_NO_TRANSPORT) {
        reason = RINGX_FALLBACK_TRANSPORT;
    }
    if (reason == RINGX_SERVE && m->state == RINGX_COMM_NO_COMMON_ID) {
        reason = RINGX_FALLBACK_COMMUNICATOR;
    }
    if (reason != RINGX_SERVE) {
        ringx_count(&mca_coll_ringx_counters.fallbacks[coll][reason], 1);
        RINGX_LOG(1, "%s on %s: fallback (%s)", ringx_coll_name(coll), comm->c_name,
                  ringx_fallback_name((ringx_fallback_t)reason));
    }
    return reason;
}

static ringx_decision_t decision(const mca_coll_ringx_module_t *m, ringx_coll_t coll,
                                 size_t bytes, int shared_memory)
{
    return ringx_decide(coll, mca_coll_ringx_component.algorithm[coll], bytes, m->size,
                        shared_memory);
}

static void record_choice(const mca_coll_ringx_module_t *m, ringx_coll_t coll, size_t bytes,
                          ringx_decision_t d)
{
    ringx_count(&mca_coll_ringx_counters.calls[coll][d.alg], 1);
    RINGX_LOG(2, "%s: %s, %zu bytes, %d ranks, comm id %u (%s)", ringx_coll_name(coll),
              ringx_alg_name(d.alg), bytes, m->size, (unsigned)m->comm_id, d.why);
}

/* A declined call is counted only under the algorithm that then serves it. */
int ringx_run_choice(mca_coll_ringx_module_t *m, ringx_coll_t coll, size_t bytes,
                     int (*run)(void *call, ringx_alg_t alg), void *call)
{
    ringx_decision_t d = decision(m, coll, bytes, ringx_direct_possible(m));
    int rc = RINGX_DIRECT_DECLINED;

    if (bytes == 0) {
        /* (zero-size datatypes) Nothing moves, so no call number is taken:
         * the mailboxes need every numbered call to wait for every rank. */
        record_choice(m, coll, bytes, d);
        return OMPI_SUCCESS;
    }
    if (d.alg == RINGX_ALG_DIRECT_READ && (rc = run(call, d.alg)) == RINGX_DIRECT_DECLINED) {
        d = decision(m, coll, bytes, 0);
        d.why = "direct reads declined (some rank's buffers are on a device, staged or "
                "unreadable, or no outboxes)";
    }
    record_choice(m, coll, bytes, d);
    return rc == RINGX_DIRECT_DECLINED ? run(call, d.alg) : rc;
}
