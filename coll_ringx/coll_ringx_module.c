/*
 * coll_ringx_module.c - one module per communicator: selection, the saved
 * previous component for fallback, and the per-communicator transport
 * state (agreed id, call sequence, peers).  Filling the slots no selected
 * component fills is coll_ringx_fill.c's.
 */
#include "coll_ringx.h"
#include "coll_ringx_bell.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ompi/runtime/mpiruntime.h"

/* Where ringx serves none of its collectives (MPI_COMM_SELF,
 * intercommunicators, negative priority) its module only fills empty
 * slots.  It asks for the highest priority Open MPI accepts so that it is
 * enabled after every other component and sees what they all filled. */
#define RINGX_FILL_ONLY_PRIORITY 100

const char *ringx_comm_label(struct ompi_communicator_t *comm)
{
    static _Thread_local char label[64];

    if (comm->c_name[0] != '\0') {
        return comm->c_name;
    }
    snprintf(label, sizeof(label), "%s cid %u",
             OMPI_COMM_IS_INTER(comm) ? "intercommunicator" : "communicator",
             (unsigned)ringx_comm_local_id(comm));
    return label;
}

/* Recursive: a call begun under it may advance Open MPI's progress, which
 * may begin other calls. */
static void init_recursive_mutex(pthread_mutex_t *lock)
{
    pthread_mutexattr_t attr;

    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(lock, &attr);
    pthread_mutexattr_destroy(&attr);
}

static void module_construct(mca_coll_ringx_module_t *m)
{
    m->serves = false;
    m->prev_allreduce = NULL;
    m->prev_allreduce_module = NULL;
    m->prev_allgather = NULL;
    m->prev_allgather_module = NULL;
    m->prev_reduce_scatter_block = NULL;
    m->prev_reduce_scatter_block_module = NULL;
    m->prev_iallreduce = NULL;
    m->prev_iallreduce_module = NULL;
    m->prev_iallgather = NULL;
    m->prev_iallgather_module = NULL;
    m->prev_ireduce_scatter_block = NULL;
    m->prev_ireduce_scatter_block_module = NULL;
    m->prev_allreduce_init = NULL;
    m->prev_allreduce_init_module = NULL;
    m->prev_allgather_init = NULL;
    m->prev_allgather_init_module = NULL;
    m->prev_reduce_scatter_block_init = NULL;
    m->prev_reduce_scatter_block_init_module = NULL;
    m->state = RINGX_COMM_UNCONNECTED;
    m->comm = NULL;
    m->rank = m->size = 0;
    m->comm_id = m->seq = m->mailbox_seq = 0;
    m->posted_next = 0;
    m->comm_id_common = m->comm_id_claimed = false;
    m->peers = NULL;
    m->via = NULL;
    memset(&m->mailbox, 0, sizeof(m->mailbox));
    m->node_ranks_min = m->node_ranks_max = 0;
    memset(&m->nodes, 0, sizeof(m->nodes));
    m->direct_calls = 0;
    m->direct_next = m->direct_done = 0;
    m->nparked = 0;
    pthread_mutex_init(&m->parked_lock, NULL);
    pthread_mutex_init(&m->connect_lock, NULL);
    m->connect = NULL;
    m->next_connecting = NULL;
    m->deferred_head = m->deferred_tail = NULL;
    init_recursive_mutex(&m->begin_lock);
    memset(&m->scratch, 0, sizeof(m->scratch));
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
    RELEASE_PREV(m, iallreduce);
    RELEASE_PREV(m, iallgather);
    RELEASE_PREV(m, ireduce_scatter_block);
    RELEASE_PREV(m, allreduce_init);
    RELEASE_PREV(m, allgather_init);
    RELEASE_PREV(m, reduce_scatter_block_init);
    free(m->peers);
    m->peers = NULL;
    ringx_links_release(m);
    ringx_mailbox_disconnect(m);
    ringx_nodes_release(m);
    ringx_scratch_set_free(&m->scratch);
    ringx_comm_id_release(m);
    m->state = RINGX_COMM_UNCONNECTED;
}

static void module_destruct(mca_coll_ringx_module_t *m)
{
    release_state(m);
    pthread_mutex_destroy(&m->parked_lock);
    pthread_mutex_destroy(&m->connect_lock);
    pthread_mutex_destroy(&m->begin_lock);
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
    SAVE_PREV(m, comm, iallreduce);
    SAVE_PREV(m, comm, iallgather);
    SAVE_PREV(m, comm, ireduce_scatter_block);
    SAVE_PREV(m, comm, allreduce_init);
    SAVE_PREV(m, comm, allgather_init);
    SAVE_PREV(m, comm, reduce_scatter_block_init);
    if (m->prev_allreduce == NULL || m->prev_allgather == NULL ||
        m->prev_reduce_scatter_block == NULL || m->prev_iallreduce == NULL ||
        m->prev_iallgather == NULL || m->prev_ireduce_scatter_block == NULL ||
        m->prev_allreduce_init == NULL || m->prev_allgather_init == NULL ||
        m->prev_reduce_scatter_block_init == NULL) {
        RINGX_LOG(1, "no other component (selected or from coll_ringx_fill) serves allreduce, "
                     "allgather and reduce_scatter_block and their nonblocking and persistent "
                     "forms on %s: ringx stays off there", ringx_comm_label(comm));
        release_state(m);
        return OMPI_ERROR;
    }
    m->comm = comm;
    m->rank = ompi_comm_rank(comm);
    m->size = ompi_comm_size(comm);
    ringx_comm_id_take(m, comm);
    RINGX_LOG(2, "enabled on %s (%d ranks)", ringx_comm_label(comm), m->size);
    if (ringx_job_is_world(comm)) {
        /* now, in MPI_Init, so that every process knows every other before
         * any later communicator connects (coll_ringx_job.c); a failure
         * leaves the communicator to the previous component */
        (void)ringx_module_connect(m, comm);
    }
    return OMPI_SUCCESS;
}

static bool serves_on(const mca_coll_base_module_t *module, const struct ompi_communicator_t *comm)
{
    const mca_coll_ringx_module_t *m = (const mca_coll_ringx_module_t *)module;

    return module != NULL && module->coll_module_enable == module_enable && m->serves &&
           m->comm == comm;
}

mca_coll_ringx_module_t *ringx_module_of(mca_coll_base_module_t *module,
                                         struct ompi_communicator_t *comm)
{
    const mca_coll_base_comm_coll_t *t = comm->c_coll;
    mca_coll_base_module_t *table[] = {
        t->coll_allreduce_module,      t->coll_allgather_module,
        t->coll_reduce_scatter_block_module, t->coll_iallreduce_module,
        t->coll_iallgather_module,     t->coll_ireduce_scatter_block_module,
        t->coll_allreduce_init_module, t->coll_allgather_init_module,
        t->coll_reduce_scatter_block_init_module,
    };

    if (serves_on(module, comm)) {
        return (mca_coll_ringx_module_t *)module;
    }
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (serves_on(table[i], comm)) {
            return (mca_coll_ringx_module_t *)table[i];
        }
    }
    return NULL;
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
        RINGX_LOG(3, "declines %s: %s", ringx_comm_label(comm), why);
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
                     "leave empty", ringx_comm_label(comm), why);
        *priority = RINGX_FILL_ONLY_PRIORITY;
        return &m->super;
    }
    /* UCX starts with the first connection (ringx_connect_start), so that
     * communicators ringx never serves a call on cost it nothing; a local
     * UCX failure does not decline either: declining is a local choice, and
     * ranks that chose differently would run different collectives.  The
     * connection agrees on the transport collectively. */
    m->serves = true;
    *priority = mca_coll_ringx_component.priority;
    m->super.coll_allreduce = mca_coll_ringx_allreduce;
    m->super.coll_allgather = mca_coll_ringx_allgather;
    m->super.coll_reduce_scatter_block = mca_coll_ringx_reduce_scatter_block;
    if (mca_coll_ringx_component.requests) {
        m->super.coll_iallreduce = mca_coll_ringx_iallreduce;
        m->super.coll_iallgather = mca_coll_ringx_iallgather;
        m->super.coll_ireduce_scatter_block = mca_coll_ringx_ireduce_scatter_block;
        m->super.coll_allreduce_init = mca_coll_ringx_allreduce_init;
        m->super.coll_allgather_init = mca_coll_ringx_allgather_init;
        m->super.coll_reduce_scatter_block_init = mca_coll_ringx_reduce_scatter_block_init;
    }
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

/* ------------------------------------------------------ parked receives */

void ringx_module_park(mca_coll_ringx_module_t *m, ringx_req_t *req)
{
    int kept = 0;

    if (*req == NULL) {
        return;
    }
    pthread_mutex_lock(&m->parked_lock);
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
    pthread_mutex_unlock(&m->parked_lock);
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

/* Whether m serves; connects it first.  A blocking call waits for the
 * connection; a nonblocking one starts it, and its call waits for it
 * (coll_ringx_request.c). */
static int connected(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm, int blocking,
                     int *rc)
{
    if (blocking && (m->state == RINGX_COMM_UNCONNECTED || m->state == RINGX_COMM_CONNECTING)) {
        *rc = ringx_module_connect(m, comm);
    } else if (m->state == RINGX_COMM_UNCONNECTED) {
        *rc = ringx_connect_start(m, comm);
        if (*rc == OMPI_SUCCESS && m->state == RINGX_COMM_CONNECTING) {
            ringx_requests_watch(m);
        }
    }
    if (*rc != OMPI_SUCCESS) {
        return RINGX_FALLBACK_TRANSPORT;
    }
    switch (m->state) {
    case RINGX_COMM_READY:
    case RINGX_COMM_CONNECTING:
        return RINGX_SERVE;
    case RINGX_COMM_NO_COMMON_ID:
        return RINGX_FALLBACK_COMMUNICATOR;
    default:
        return RINGX_FALLBACK_TRANSPORT;
    }
}

/* Why m serves no call once its connection is over (the same answer on
 * every rank). */
int ringx_module_fallback_reason(const mca_coll_ringx_module_t *m)
{
    return m->state == RINGX_COMM_NO_COMMON_ID ? RINGX_FALLBACK_COMMUNICATOR
                                               : RINGX_FALLBACK_TRANSPORT;
}

void ringx_count_fallback(mca_coll_ringx_module_t *m, ringx_coll_t coll, int reason,
                          int blocking)
{
    ringx_count(&mca_coll_ringx_counters.fallbacks[coll][reason], 1);
    RINGX_LOG(1, "%s%s on %s: fallback (%s)", blocking ? "" : "i", ringx_coll_name(coll),
              ringx_comm_label(m->comm), ringx_fallback_name((ringx_fallback_t)reason));
}

/* Whether ringx's waits yield the core, decided at the first call ringx
 * is asked to serve: Open MPI sets mpi_yield_when_idle in MPI_Init after
 * it has selected the collectives of MPI_COMM_WORLD. */
static void decide_yield_once(void)
{
    static int decided;

    if (!__atomic_load_n(&decided, __ATOMIC_RELAXED)) {
        int yield = mca_coll_ringx_should_yield();
        ringx_ucx_set_yield(yield);
        ringx_bell_peers_sleep(yield && mca_coll_ringx_component.sleep_after_yield_us != 0);
        __atomic_store_n(&decided, 1, __ATOMIC_RELAXED);
    }
}

int ringx_admit(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm,
                ringx_coll_t coll, int buffers, int blocking, int *rc)
{
    int reason = buffers;

    *rc = OMPI_SUCCESS;
    decide_yield_once();
    if (!mca_coll_ringx_component.enable[coll]) {
        reason = RINGX_FALLBACK_DISABLED;
    }
    if (reason == RINGX_SERVE) {
        reason = connected(m, comm, blocking, rc);
        if (*rc != OMPI_SUCCESS) {
            return reason;
        }
    }
    if (reason != RINGX_SERVE) {
        ringx_count_fallback(m, coll, reason, blocking);
    }
    return reason;
}
