/*
 * coll_ringx_connect.c - how a module gets ready to serve: the members
 * agree that every one has UCX, learn each other's worker addresses, map
 * each other's windows and agree on the mailboxes.  Collectives of the
 * previous component, nonblocking ones, so that the connection can start
 * inside a nonblocking call and advance in Open MPI's progress engine: a
 * nonblocking call may run inside that engine (MPI_Comm_dup's context-id
 * agreement is an MPI_Iallreduce started from a progress callback), where
 * a blocking collective would never return.
 *
 *   agree     MAX over (no UCX here, address length, window description
 *             length, some member not yet known here, the node layout's
 *             hash and its negation: all the same?, the messages' id and
 *             its negation, its claim refused here (coll_ringx_comm_id.c),
 *             the mailbox settings negated: their MIN)
 *   gather    only when some member met a process it did not know: every
 *             member's record (its key, worker address and window
 *             description)
 *   mailbox   after a gather: MIN over the mailbox settings, now that
 *             every rank knows every peer's window (coll_ringx_mailbox.c),
 *             and over whether every rank connected, and, on
 *             MPI_COMM_WORLD, whether the job's facts hold everywhere
 *
 * Peers are known process-wide (coll_ringx_ucx.c): once a communicator
 * has connected, every later communicator of the same processes costs one
 * small allreduce, not three collectives.  MPI_COMM_WORLD connects in
 * MPI_Init, and a communicator of its processes then connects with no
 * message at all, from what MPI_COMM_WORLD's connection learnt
 * (coll_ringx_job.c).
 */
#include "coll_ringx.h"

#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "opal/runtime/opal_progress.h"

enum { C_AGREE, C_GATHER, C_MAILBOX, C_DONE };

/* The mailbox agreement's integers (MIN), then the connection's own. */
enum {
    M_CONNECTED = RINGX_MAILBOX_AGREE_INTS, /* this rank learnt every peer */
    M_JOB,                      /* MPI_COMM_WORLD: the job's records hold here */
    M_SINGLE_COPY,              /* ... and single copies to every process of the node */
    M_DIRECT_SETTING,           /* coll_ringx_direct_buffer_bytes where set, else -1 */
    M_DIRECT_SETTING_NEG,       /* ... negated: their MAX */
    M_INTS
};

/* The agreement's integers, all agreed by MAX. */
enum {
    A_NO_UCX,
    A_ADDRESS_LEN,
    A_DESC_LEN,
    A_UNKNOWN_PEER,
    A_LAYOUT,                   /* the node layout's hash, and negated: their MIN */
    A_LAYOUT_NEG,
    A_ID,                       /* the messages' id, and negated: all the same? */
    A_ID_NEG,
    A_ID_REFUSED,               /* an id of ringx's own that another communicator holds here */
    A_MAILBOX,                  /* RINGX_MAILBOX_AGREE_INTS settings, negated */
    A_INTS = A_MAILBOX + RINGX_MAILBOX_AGREE_INTS
};

typedef struct connect_header {
    uint64_t key;
    uint64_t address_len;
    uint64_t window_desc_len;
    ringx_job_record_t job;         /* read on MPI_COMM_WORLD only */
} connect_header_t;

struct ringx_connect {
    int phase;
    int rc;                         /* the first error; the rank still takes part */
    struct ompi_communicator_t *comm;
    ompi_request_t *req;            /* the previous component's collective under way */
    int agreed;                     /* through the agreement, not the job's facts */
    int agree_local[A_INTS], agree_global[A_INTS];
    size_t address_bytes, desc_bytes, record;
    char *mine, *all;
    char **windows;                 /* by rank: its window mapped here, or NULL */
    int mailbox_local[M_INTS], mailbox_global[M_INTS];
};

static void pack_record(const ringx_connect_t *c)
{
    connect_header_t *h = (connect_header_t *)c->mine;
    size_t address_len, desc_len;
    const void *address = ringx_ucx_local_address(&address_len);
    const void *desc = ringx_ucx_window_desc(&desc_len);

    h->key = ringx_ucx_local_key();
    h->address_len = address_len;
    h->window_desc_len = desc_len;
    ringx_job_record_mine(c->comm, &h->job);
    memcpy(c->mine + sizeof(*h), address, address_len);
    if (desc_len) {
        memcpy(c->mine + sizeof(*h) + c->address_bytes, desc, desc_len);
    }
}

/* Whether every peer of the communicator is known here already; fills
 * m->peers and c->windows from what is known. */
static int peers_known(mca_coll_ringx_module_t *m, ringx_connect_t *c)
{
    for (int r = 0; r < m->size; r++) {
        const opal_process_name_t *name;
        if (r == m->rank) {
            continue;
        }
        name = &ompi_comm_peer_lookup(c->comm, r)->super.proc_name;
        m->peers[r] = ringx_ucx_known_peer(ringx_ucx_key(name->jobid, name->vpid));
        if (m->peers[r] == NULL) {
            return 0;
        }
        c->windows[r] = ringx_ucx_mapped_window(m->peers[r]);
    }
    return 1;
}

static int post_agree(mca_coll_ringx_module_t *m, ringx_connect_t *c)
{
    size_t address_len = 0, desc_len = 0;
    int *local = c->agree_local;

    c->agreed = 1;
    /* before the mailboxes' settings: an own id has no region */
    local[A_ID_REFUSED] = !m->comm_id_common && !ringx_comm_id_claim(m, c->comm);
    local[A_ID] = (int)m->comm_id;
    local[A_ID_NEG] = -local[A_ID];
    (void)ringx_ucx_local_address(&address_len);
    (void)ringx_ucx_window_desc(&desc_len);
    local[A_NO_UCX] = !ringx_ucx_ready();
    local[A_ADDRESS_LEN] = (int)address_len;
    local[A_DESC_LEN] = (int)desc_len;
    local[A_UNKNOWN_PEER] = !local[A_NO_UCX] && !peers_known(m, c);
    local[A_LAYOUT] = ringx_nodes_observe(m, c->comm);
    local[A_LAYOUT_NEG] = -local[A_LAYOUT];
    if (!local[A_NO_UCX] && !local[A_UNKNOWN_PEER]) {
        ringx_mailbox_agree_local(m, c->windows, mca_coll_ringx_should_yield(), c->mailbox_local);
    }
    for (int i = 0; i < RINGX_MAILBOX_AGREE_INTS; i++) {
        /* a rank that cannot tell yet does not sway the MIN; its
         * agreement is redone after the gather anyway */
        local[A_MAILBOX + i] = local[A_NO_UCX] || local[A_UNKNOWN_PEER] ? INT_MIN
                                                                       : -c->mailbox_local[i];
    }
    return m->prev_iallreduce(local, c->agree_global, A_INTS, MPI_INT, MPI_MAX, c->comm,
                              &c->req, m->prev_iallreduce_module);
}

/* Whether every member tags the messages with the same id, which no
 * other live communicator of theirs uses. */
static int id_agreed(const mca_coll_ringx_module_t *m, const ringx_connect_t *c)
{
    const int *g = c->agree_global;

    return c->agreed ? !g[A_ID_REFUSED] && g[A_ID] == -g[A_ID_NEG] : m->comm_id_common;
}

/* Whether ringx can serve here at all, once it is known whether some rank
 * is without UCX. */
static int usable(mca_coll_ringx_module_t *m, const ringx_connect_t *c, int without_ucx)
{
    if (!without_ucx && id_agreed(m, c)) {
        return 1;
    }
    m->state = without_ucx ? RINGX_COMM_NO_TRANSPORT : RINGX_COMM_NO_COMMON_ID;
    RINGX_LOG(1, "%s: %s; the previous component serves this communicator", ringx_comm_label(c->comm),
              without_ucx ? "UCX is unavailable on some rank"
                          : "its members share no context id, and the id ringx derived for its "
                            "messages (from Open MPI's extended context id) is held by another "
                            "communicator on some member");
    return 0;
}

static int post_gather(mca_coll_ringx_module_t *m, ringx_connect_t *c)
{
    c->address_bytes = (size_t)c->agree_global[A_ADDRESS_LEN];
    c->desc_bytes = (size_t)c->agree_global[A_DESC_LEN];
    c->record = (sizeof(connect_header_t) + c->address_bytes + c->desc_bytes + 7) & ~(size_t)7;
    c->mine = calloc(1, c->record);
    c->all = malloc(c->record * (size_t)m->size);
    if (c->mine == NULL || c->all == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    pack_record(c);
    return m->prev_iallgather(c->mine, (int)c->record, MPI_BYTE, c->all, (int)c->record,
                              MPI_BYTE, c->comm, &c->req, m->prev_iallgather_module);
}

/* Without a gather: the mailbox settings came with the agreement. */
static void take_agreed_mailbox(ringx_connect_t *c)
{
    for (int i = 0; i < RINGX_MAILBOX_AGREE_INTS; i++) {
        c->mailbox_global[i] = -c->agree_global[A_MAILBOX + i];
    }
}

/* Every peer's endpoint, and its window mapped where it can be. */
static int learn_peers(mca_coll_ringx_module_t *m, ringx_connect_t *c)
{
    for (int r = 0; r < m->size; r++) {
        const char *rec = c->all + (size_t)r * c->record;
        const connect_header_t *h = (const connect_header_t *)rec;
        if (r == m->rank) {
            continue;
        }
        m->peers[r] = ringx_ucx_peer(h->key, rec + sizeof(*h), (size_t)h->address_len);
        if (m->peers[r] == NULL) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        if (h->window_desc_len) {
            c->windows[r] = ringx_ucx_peer_window(m->peers[r], rec + sizeof(*h) + c->address_bytes,
                                                  (size_t)h->window_desc_len);
        }
    }
    return OMPI_SUCCESS;
}

/* The job's records out of the gathered ones (MPI_COMM_WORLD). */
static ringx_job_record_t *job_records(const ringx_connect_t *c, int p)
{
    ringx_job_record_t *records = malloc(sizeof(*records) * (size_t)p);

    for (int r = 0; records != NULL && r < p; r++) {
        records[r] = ((const connect_header_t *)(c->all + (size_t)r * c->record))->job;
    }
    return records;
}

/* coll_ringx_direct_buffer_bytes as a connection without agreement
 * needs it the same on every rank: its value where set, else -1 (the
 * built-in choice, which depends only on what every rank knows). */
static int direct_setting(void)
{
    size_t bytes = mca_coll_ringx_component.direct_buffer_bytes;
    return !ringx_direct_buffer_bytes_set() ? -1 : ringx_int_clamp(bytes);
}

/* Collective: every rank takes part, a rank that failed without mailboxes. */
static int post_mailbox(mca_coll_ringx_module_t *m, ringx_connect_t *c)
{
    int ok = c->rc == OMPI_SUCCESS, *local = c->mailbox_local;
    ringx_job_record_t *records = ok && ringx_job_is_world(c->comm) ? job_records(c, m->size)
                                                                    : NULL;

    ringx_mailbox_agree_local(m, ok ? c->windows : NULL, mca_coll_ringx_should_yield(), local);
    local[M_CONNECTED] = ok;
    local[M_JOB] = records != NULL && ringx_job_holds_here(m, c->comm, c->windows, records);
    local[M_SINGLE_COPY] = local[M_JOB] && ringx_job_single_copy_here(m, c->comm);
    local[M_DIRECT_SETTING] = direct_setting();
    local[M_DIRECT_SETTING_NEG] = -local[M_DIRECT_SETTING];
    free(records);
    return m->prev_iallreduce(local, c->mailbox_global, M_INTS, MPI_INT, MPI_MIN, c->comm,
                              &c->req, m->prev_iallreduce_module);
}

/* After the mailbox agreement on MPI_COMM_WORLD: the job's records kept
 * where they hold on every rank and every rank has the same settings that
 * a connection without agreement takes from its own. */
static void keep_job(mca_coll_ringx_module_t *m, const ringx_connect_t *c)
{
    const int *g = c->mailbox_global;
    ringx_job_record_t *records;

    if (!g[M_JOB] || g[M_DIRECT_SETTING] != -g[M_DIRECT_SETTING_NEG] ||
        !ringx_mailbox_settings_agree(g) ||
        (records = job_records(c, m->size)) == NULL) {
        RINGX_LOG(1, "%s: later communicators connect with an agreement (%s)", ringx_comm_label(c->comm),
                  !g[M_JOB] ? "some process has not mapped the windows of its node or sees the "
                              "nodes differently"
                            : "the ranks' coll_ringx_mailbox_bytes, "
                              "coll_ringx_outbox_bytes or coll_ringx_direct_buffer_bytes "
                              "differ");
        return;
    }
    ringx_job_keep(c->comm, records, g[M_SINGLE_COPY]);
}

/* layout_agreed: every rank sees the same nodes. */
static void finish(mca_coll_ringx_module_t *m, ringx_connect_t *c, int layout_agreed)
{
    if (c->rc == OMPI_SUCCESS) {
        c->rc = ringx_mailbox_connect(m, c->comm, c->windows, c->mailbox_global);
    }
    if (c->rc == OMPI_SUCCESS) {
        c->rc = ringx_links_choose(m);
    }
    if (c->rc != OMPI_SUCCESS) {
        m->state = RINGX_COMM_NO_TRANSPORT;
        RINGX_LOG(1, "%s: connecting failed (%d); the previous component serves this "
                     "communicator", ringx_comm_label(c->comm), c->rc);
        return;
    }
    ringx_nodes_agreed(m, c->comm, layout_agreed);
    if (!m->comm_id_common) {
        ringx_count(&mca_coll_ringx_counters.comms_own_id, 1);
    }
    m->state = RINGX_COMM_READY;
    RINGX_LOG(2, "%s connected: id %u%s, %d ranks (%s)", ringx_comm_label(c->comm),
              (unsigned)m->comm_id, m->comm_id_common ? "" : " (ringx's own)",
              m->size, c->all != NULL   ? "worker addresses exchanged"
                       : c->agreed     ? "every peer met before"
                                       : "from MPI_COMM_WORLD's connection, no message");
}

static int layout_agreed(const ringx_connect_t *c)
{
    return c->agree_global[A_LAYOUT] == -c->agree_global[A_LAYOUT_NEG];
}

/* The connection is over: what it needed goes, and the peers too unless
 * the module serves. */
static void release(mca_coll_ringx_module_t *m)
{
    ringx_connect_t *c = m->connect;

    if (m->state != RINGX_COMM_READY) {
        free(m->peers);
        m->peers = NULL;
        ringx_links_release(m);
        ringx_nodes_release(m);
        ringx_comm_id_release(m);
    }
    free(c->mine);
    free(c->all);
    free(c->windows);
    OBJ_RELEASE(c->comm);
    free(c);
    m->connect = NULL;
}

/* The previous component's collective under way: 1 done (and freed), 0
 * not yet. */
static int collective_done(ringx_connect_t *c)
{
    if (!REQUEST_COMPLETE(c->req)) {
        return 0;
    }
    if (c->req->req_status.MPI_ERROR != MPI_SUCCESS && c->rc == OMPI_SUCCESS) {
        c->rc = OMPI_ERROR;
    }
    ompi_request_free(&c->req);
    return 1;
}

/* A communicator of processes of MPI_COMM_WORLD connects from what that
 * one's connection learnt, the same on every rank: no message
 * (coll_ringx_job.c).  Returns 0 where the job's facts do not cover it. */
static int connect_alone(mca_coll_ringx_module_t *m, ringx_connect_t *c)
{
    int *g = c->mailbox_global, *node_key;
    ringx_job_view_t v;

    if (!m->comm_id_common || !ringx_job_covers(c->comm)) {
        return 0;           /* an id of ringx's own needs the agreement */
    }
    node_key = malloc(sizeof(*node_key) * (size_t)m->size);
    c->rc = node_key == NULL ? OMPI_ERR_OUT_OF_RESOURCE
                             : ringx_job_view(m, c->comm, c->windows, node_key, &v);
    if (c->rc == OMPI_SUCCESS && usable(m, c, 0)) {
        ringx_nodes_from_keys(m, node_key);
        ringx_mailbox_agree_local(m, c->windows, v.crowded, g);
        g[RINGX_MB_SINGLE_COPY] = g[RINGX_MB_USABLE] && v.single_copy;
        g[RINGX_MB_NODE_MIN] = v.node_ranks_min;
        g[RINGX_MB_NODE_MAX_NEG] = -v.node_ranks_max;
        ringx_count(&mca_coll_ringx_counters.comms_from_world, 1);
        finish(m, c, 1);
    } else if (c->rc != OMPI_SUCCESS) {
        m->state = RINGX_COMM_NO_TRANSPORT;
    }
    free(node_key);
    return 1;
}

/* Once per process: a failure leaves UCX unavailable here, which the
 * agreement tells every member. */
static void start_ucx(struct ompi_communicator_t *comm)
{
    if (!ringx_ucx_ready()) {     /* once: it reads a directory */
        ringx_ucx_set_rndv_thresh(mca_coll_ringx_ucx_rndv_thresh(comm));
    }
    (void)ringx_ucx_start(ompi_mpi_thread_multiple, mca_coll_ringx_component.output,
                         ringx_mailbox_window_bytes(), mca_coll_ringx_component.single_copy);
}

int ringx_connect_start(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm)
{
    ringx_connect_t *c = calloc(1, sizeof(*c));
    int rc;

    if (c == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    start_ucx(comm);
    c->comm = comm;
    OBJ_RETAIN(comm);           /* the collectives below must not outlive it */
    m->connect = c;
    m->state = RINGX_COMM_CONNECTING;
    c->windows = calloc((size_t)m->size, sizeof(*c->windows));
    m->peers = calloc((size_t)m->size, sizeof(*m->peers));
    if (c->windows == NULL || m->peers == NULL) {
        rc = OMPI_ERR_OUT_OF_RESOURCE;
    } else if (connect_alone(m, c)) {
        rc = c->rc;
        release(m);
        return rc;
    } else {
        rc = post_agree(m, c);
    }
    if (rc != OMPI_SUCCESS) {
        m->state = RINGX_COMM_NO_TRANSPORT;
        release(m);
    }
    return rc;
}

int ringx_connect_progress(mca_coll_ringx_module_t *m)
{
    ringx_connect_t *c = m->connect;
    int rc = OMPI_SUCCESS;

    if (m->state != RINGX_COMM_CONNECTING) {
        return RINGX_DONE;
    }
    if (pthread_mutex_trylock(&m->connect_lock) != 0) {
        return RINGX_PENDING;          /* another thread is advancing it */
    }
    while (rc == OMPI_SUCCESS && c->phase != C_DONE && collective_done(c)) {
        switch (c->phase) {
        case C_AGREE:
            if (c->rc != OMPI_SUCCESS || !usable(m, c, c->agree_global[A_NO_UCX])) {
                c->phase = C_DONE;
            } else if (c->agree_global[A_UNKNOWN_PEER]) {
                ringx_count(&mca_coll_ringx_counters.comms_exchanged, 1);
                rc = post_gather(m, c);
                c->phase = C_GATHER;
            } else {
                take_agreed_mailbox(c);
                finish(m, c, layout_agreed(c));
                c->phase = C_DONE;
            }
            break;
        case C_GATHER:
            c->rc = c->rc == OMPI_SUCCESS ? learn_peers(m, c) : c->rc;
            rc = post_mailbox(m, c);
            c->phase = C_MAILBOX;
            break;
        default:
            if (c->rc == OMPI_SUCCESS && !c->mailbox_global[M_CONNECTED]) {
                c->rc = OMPI_ERROR;     /* some rank failed: none serves */
            }
            if (c->rc == OMPI_SUCCESS && ringx_job_is_world(c->comm)) {
                keep_job(m, c);
            }
            finish(m, c, layout_agreed(c));
            c->phase = C_DONE;
            break;
        }
    }
    if (rc != OMPI_SUCCESS || c->phase == C_DONE) {
        if (rc != OMPI_SUCCESS) {
            m->state = RINGX_COMM_NO_TRANSPORT;
        } else if (m->state == RINGX_COMM_CONNECTING) {
            m->state = RINGX_COMM_NO_TRANSPORT;      /* the agreement itself failed */
            rc = c->rc;
        }
        release(m);
    }
    pthread_mutex_unlock(&m->connect_lock);
    return rc != OMPI_SUCCESS ? rc : m->state == RINGX_COMM_CONNECTING ? RINGX_PENDING : RINGX_DONE;
}

int ringx_module_connect(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm)
{
    int rc = m->state == RINGX_COMM_UNCONNECTED ? ringx_connect_start(m, comm) : OMPI_SUCCESS;
    int yield = -1;

    while (rc == OMPI_SUCCESS && (rc = ringx_connect_progress(m)) == RINGX_PENDING) {
        opal_progress();
        /* Inside MPI_Init (MPI_COMM_WORLD), Open MPI's progress does not
         * yield yet even where the node has more ranks than cores: ranks
         * spinning here took 20-30 ms to connect 4 ranks on 2 cores. */
        yield = yield < 0 ? mca_coll_ringx_should_yield() : yield;
        if (yield) {
            sched_yield();
        }
    }
    /* nonblocking calls before this one may wait for the connection */
    ringx_requests_connected(m);
    return rc == RINGX_DONE ? OMPI_SUCCESS : rc;
}
