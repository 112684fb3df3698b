/*
 * coll_ringx_ucx.c - process-wide UCX state: context, worker, peer cache,
 * tagged transfers and progress.
 */
#include "ompi_config.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ucp/api/ucp.h>

#include "mpi.h"
#include "ompi/constants.h"
#include "opal/class/opal_hash_table.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "coll_ringx_bell.h"
#include "coll_ringx_cma.h"
#include "coll_ringx_ucx.h"

/* Empty progress rounds before a waiting process gives up its core: one.
 * When yielding at all (more ranks than cores), the peer this rank waits for
 * most likely needs the core; measured on 2 cores and 4-8 ranks, yielding
 * after 128 empty rounds made small collectives up to 2x slower than
 * yielding at once. */
#define RINGX_IDLE_ROUNDS_BEFORE_YIELD 1
/* Idle rounds of a wait between two rounds of Open MPI's progress engine. */
#define RINGX_IDLE_ROUNDS_PER_OPAL_PROGRESS 8

/* This thread runs inside Open MPI's progress engine (ringx's callback). */
static __thread int inside_opal_progress;

struct ringx_peer {
    uint64_t key;
    void *address;
    size_t address_len;
    ucp_ep_h ep;                /* created on first send to this peer */
    ucp_rkey_h window_rkey;     /* its window, once mapped */
    char *window;               /* where its window is mapped here; NULL if not */
    int window_tried;
    void *cma_ep;               /* single-copy reads from it; NULL if none */
    struct ringx_peer *next;    /* every peer, for teardown */
};

enum ringx_ucx_state { UCX_NOT_STARTED, UCX_READY, UCX_FAILED };

static struct {
    enum ringx_ucx_state state;
    int output;
    int yield;
    size_t rndv_thresh;         /* set in the context (0: UCX's own) */
    int released;               /* some request let go unfinished (ringx_ucx_release) */
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_address_t *address;
    size_t address_len;
    ucp_mem_h window_memh;      /* this process's window (ringx_ucx_window) */
    void *window;
    size_t window_bytes;
    void *window_desc;          /* base address, then the packed rkey */
    size_t window_desc_len;
    pthread_mutex_t lock;       /* start/stop and the peer cache */
    void *flush;                /* a flush of the worker under way (ringx_ucx_flush_behind) */
    pthread_mutex_t flush_lock;
    opal_hash_table_t peers_by_key;
    ringx_peer_t *peers;
} ucx = { .state = UCX_NOT_STARTED, .lock = PTHREAD_MUTEX_INITIALIZER,
        .flush_lock = PTHREAD_MUTEX_INITIALIZER };

static int status_to_ompi(ucs_status_t status)
{
    switch (status) {
    case UCS_OK:                return OMPI_SUCCESS;
    case UCS_ERR_NO_MEMORY:     return OMPI_ERR_OUT_OF_RESOURCE;
    case UCS_ERR_CANCELED:      return OMPI_ERR_REQUEST;
    case UCS_ERR_MESSAGE_TRUNCATED: return MPI_ERR_TRUNCATE;
    default:                    return OMPI_ERROR;
    }
}

static int fail_start(const char *what, ucs_status_t status)
{
    opal_output_verbose(1, ucx.output,
                        "coll:ringx: UCX unavailable (%s: %s); the stock collectives "
                        "will serve every communicator", what, ucs_status_string(status));
    ucx.state = UCX_FAILED;
    return status_to_ompi(status);
}

/* The rendezvous threshold asked for, unless the environment sets one. */
static void set_rndv_thresh(ucp_config_t *config)
{
    char value[32];
    ucs_status_t status;

    if (ucx.rndv_thresh == 0 || getenv("UCX_RNDV_THRESH") != NULL) {
        ucx.rndv_thresh = 0;
        return;
    }
    snprintf(value, sizeof(value), "%zu", ucx.rndv_thresh);
    status = ucp_config_modify(config, "RNDV_THRESH", value);
    opal_output_verbose(1, ucx.output, "coll:ringx: UCX rendezvous threshold %s bytes "
                        "(coll_ringx_ucx_rndv_thresh: the job spans nodes, no RDMA device)%s%s",
                        value, status == UCS_OK ? "" : ": not taken, ",
                        status == UCS_OK ? "" : ucs_status_string(status));
    if (status != UCS_OK) {
        ucx.rndv_thresh = 0;
    }
}

static int create_context(void)
{
    ucp_config_t *config;
    ucs_status_t status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        return fail_start("ucp_config_read", status);
    }
    set_rndv_thresh(config);
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
        .features = UCP_FEATURE_TAG | UCP_FEATURE_RMA,
        .mt_workers_shared = 0,
    };
    status = ucp_init(&params, config, &ucx.context);
    ucp_config_release(config);
    return status == UCS_OK ? OMPI_SUCCESS : fail_start("ucp_init", status);
}

static int create_worker(int thread_multiple)
{
    ucp_worker_params_t params = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = thread_multiple ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SINGLE,
    };
    ucs_status_t status = ucp_worker_create(ucx.context, &params, &ucx.worker);
    if (status != UCS_OK) {
        ucp_cleanup(ucx.context);
        return fail_start("ucp_worker_create", status);
    }
    status = ucp_worker_get_address(ucx.worker, &ucx.address, &ucx.address_len);
    if (status != UCS_OK) {
        ucp_worker_destroy(ucx.worker);
        ucp_cleanup(ucx.context);
        return fail_start("ucp_worker_get_address", status);
    }
    return OMPI_SUCCESS;
}

/* The window is memory UCX allocates where its shared-memory transports
 * can map it (ucp_mem_map with UCP_MEM_MAP_ALLOCATE): memory ringx
 * allocated itself could be reached only through copies by the kernel.
 * Without a window, ringx works as before, through tagged messages. */
static void create_window(size_t bytes)
{
    ucp_mem_map_params_t params = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                      UCP_MEM_MAP_PARAM_FIELD_FLAGS,
        .address = NULL,
        .length = bytes + RINGX_BELL_BYTES,     /* the bell's page first */
        .flags = UCP_MEM_MAP_ALLOCATE,
    };
    ucp_mem_attr_t attr = { .field_mask = UCP_MEM_ATTR_FIELD_ADDRESS };
    void *rkey = NULL;
    size_t rkey_len = 0;
    ucs_status_t status;

    if (bytes == 0) {
        return;
    }
    status = ucp_mem_map(ucx.context, &params, &ucx.window_memh);
    if (status == UCS_OK && (status = ucp_mem_query(ucx.window_memh, &attr)) == UCS_OK) {
        status = ucp_rkey_pack(ucx.context, ucx.window_memh, &rkey, &rkey_len);
    }
    size_t cma_len;
    const void *cma_address = ringx_cma_address(&cma_len);
    if (status == UCS_OK &&
        (ucx.window_desc = malloc(2 * sizeof(uint64_t) + rkey_len + cma_len)) != NULL) {
        /* the window's base, its key's length, the key, then the address
         * for single-copy reads (if any) */
        uint64_t head[2] = { (uint64_t)(uintptr_t)attr.address, rkey_len };
        memcpy(ucx.window_desc, head, sizeof(head));
        memcpy((char *)ucx.window_desc + sizeof(head), rkey, rkey_len);
        if (cma_len) {
            memcpy((char *)ucx.window_desc + sizeof(head) + rkey_len, cma_address, cma_len);
        }
        ucx.window_desc_len = sizeof(head) + rkey_len + cma_len;
        ucx.window = (char *)attr.address + RINGX_BELL_BYTES;
        ringx_bell_open(ringx_bell_of_window(ucx.window));
        /* Not cleared here: every communicator clears its own region
         * before its peers may write there (ringx_mailbox_agree_local), so
         * a region's pages become resident only once a communicator uses
         * it, not all RINGX_MAILBOX_COMMS at the start. */
        ucx.window_bytes = bytes;
    }
    if (rkey != NULL) {
        ucp_rkey_buffer_release(rkey);
    }
    if (ucx.window == NULL) {
        opal_output_verbose(1, ucx.output, "coll:ringx: no shared window (%s); small messages "
                            "go as tagged messages", status == UCS_OK ? "out of memory"
                                                                      : ucs_status_string(status));
        ringx_bell_open(NULL);
        if (ucx.window_memh != NULL) {
            ucp_mem_unmap(ucx.context, ucx.window_memh);
            ucx.window_memh = NULL;
        }
    }
}

int ringx_ucx_start(int thread_multiple, int verbose_output, size_t window_bytes,
                    int single_copy)
{
    int rc = OMPI_SUCCESS;

    pthread_mutex_lock(&ucx.lock);
    if (ucx.state == UCX_NOT_STARTED) {
        ucx.output = verbose_output;
        rc = create_context();
        if (rc == OMPI_SUCCESS) {
            rc = create_worker(thread_multiple);
        }
        if (rc == OMPI_SUCCESS) {
            if (single_copy) {
                (void)ringx_cma_open(ucx.output);     /* optional: logged if unavailable */
            }
            create_window(window_bytes);
            OBJ_CONSTRUCT(&ucx.peers_by_key, opal_hash_table_t);
            opal_hash_table_init(&ucx.peers_by_key, 64);
            ucx.state = UCX_READY;
            opal_output_verbose(1, ucx.output,
                                "coll:ringx: UCX %s started (worker address %zu bytes)",
                                ucp_get_version_string(), ucx.address_len);
        }
    } else if (ucx.state == UCX_FAILED) {
        rc = OMPI_ERR_NOT_AVAILABLE;
    }
    pthread_mutex_unlock(&ucx.lock);
    return rc;
}

int ringx_ucx_ready(void)
{
    return ucx.state == UCX_READY;
}

/*
 * At MPI_Finalize ringx progresses its worker as little as it can: the
 * connection makes an endpoint to every peer, and one that ringx never
 * used may still be connecting then; progress handles the connection, and
 * where the peer has already left, UCX 1.13 aborts the process (an
 * assertion in its wireup: MPICH's coll13, which calls no collective
 * ringx serves, at 3 test hosts x 2 ranks, 7 runs in 10).
 */
static void close_endpoint(ucp_ep_h ep)
{
    /* Forced: peers may already be gone, and a flushing close would wait
     * for them; its request completes, if at all, in the worker's
     * destruction. */
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
        .flags = UCP_EP_CLOSE_FLAG_FORCE,
    };
    ucs_status_ptr_t req = ucp_ep_close_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(req)) {
        ucp_request_free(req);
    }
}

/* Receives released by ringx_ucx_release() complete when their message is
 * processed.  Peers sent those messages before finalizing, so they have
 * arrived or are about to: a short drain lets UCX return the requests to
 * its pool instead of warning about them at worker destruction.  Only
 * where some request was released: ringx has then exchanged messages, and
 * the endpoints it used are connected. */
static void drain_worker(void)
{
    const double limit = 0.1;     /* seconds */
    struct timespec start, now;
    unsigned idle = 0;

    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        idle = ucp_worker_progress(ucx.worker) ? 0 : idle + 1;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (idle < 1000 &&
             (double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec) <
                 limit);
}

void ringx_ucx_stop(void)
{
    pthread_mutex_lock(&ucx.lock);
    if (ucx.state == UCX_READY) {
        if (__atomic_load_n(&ucx.released, __ATOMIC_RELAXED)) {
            drain_worker();
        }
        if (ucx.flush != NULL) {
            ucp_request_free(ucx.flush);    /* a peer that is gone never answers it */
            ucx.flush = NULL;
        }
        while (ucx.peers) {
            ringx_peer_t *peer = ucx.peers;
            ucx.peers = peer->next;
            if (peer->window_rkey) {
                ucp_rkey_destroy(peer->window_rkey);
            }
            ringx_cma_disconnect(peer->cma_ep);
            if (peer->ep) {
                close_endpoint(peer->ep);
            }
            free(peer->address);
            free(peer);
        }
        OBJ_DESTRUCT(&ucx.peers_by_key);
        ringx_bell_open(NULL);
        if (ucx.window_memh != NULL) {
            ucp_mem_unmap(ucx.context, ucx.window_memh);
        }
        free(ucx.window_desc);
        ucx.window = ucx.window_desc = NULL;
        ucx.window_memh = NULL;
        ucx.window_bytes = ucx.window_desc_len = 0;
        ucp_worker_release_address(ucx.worker, ucx.address);
        ucp_worker_destroy(ucx.worker);
        ucp_cleanup(ucx.context);
        ringx_cma_close();
    }
    ucx.state = UCX_NOT_STARTED;
    ucx.released = 0;
    pthread_mutex_unlock(&ucx.lock);
}

const void *ringx_ucx_local_address(size_t *len)
{
    *len = ucx.address_len;
    return ucx.address;
}

uint64_t ringx_ucx_key(uint32_t jobid, uint32_t vpid)
{
    return ((uint64_t)jobid << 32) | vpid;
}

uint64_t ringx_ucx_local_key(void)
{
    opal_process_name_t name = opal_proc_local_get()->proc_name;
    return ringx_ucx_key(name.jobid, name.vpid);
}

/* The cached peer for key or NULL; with ucx.lock held. */
static ringx_peer_t *cached_peer(uint64_t key)
{
    void *found = NULL;

    if (opal_hash_table_get_value_uint64(&ucx.peers_by_key, key, &found) != OPAL_SUCCESS) {
        return NULL;
    }
    return found;
}

ringx_peer_t *ringx_ucx_known_peer(uint64_t key)
{
    ringx_peer_t *peer;

    pthread_mutex_lock(&ucx.lock);
    peer = cached_peer(key);
    pthread_mutex_unlock(&ucx.lock);
    return peer;
}

char *ringx_ucx_mapped_window(const ringx_peer_t *peer)
{
    return peer->window;
}

ringx_peer_t *ringx_ucx_peer(uint64_t key, const void *address, size_t len)
{
    ringx_peer_t *peer;

    pthread_mutex_lock(&ucx.lock);
    if ((peer = cached_peer(key)) != NULL) {
        /* learnt through an earlier communicator */
    } else if ((peer = calloc(1, sizeof(*peer))) != NULL &&
               (peer->address = malloc(len)) != NULL) {
        memcpy(peer->address, address, len);
        peer->key = key;
        peer->address_len = len;
        peer->next = ucx.peers;
        ucx.peers = peer;
        opal_hash_table_set_value_uint64(&ucx.peers_by_key, key, peer);
    } else {
        free(peer);
        peer = NULL;
    }
    pthread_mutex_unlock(&ucx.lock);
    return peer;
}

static int peer_endpoint(ringx_peer_t *peer, ucp_ep_h *ep)
{
    int rc = OMPI_SUCCESS;

    pthread_mutex_lock(&ucx.lock);
    if (peer->ep == NULL) {
        ucp_ep_params_t params = {
            .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
            .address = peer->address,
        };
        ucs_status_t status = ucp_ep_create(ucx.worker, &params, &peer->ep);
        if (status != UCS_OK) {
            opal_output_verbose(1, ucx.output, "coll:ringx: ucp_ep_create failed: %s",
                                ucs_status_string(status));
            peer->ep = NULL;
            rc = status_to_ompi(status);
        }
    }
    *ep = peer->ep;
    pthread_mutex_unlock(&ucx.lock);
    return rc;
}

void *ringx_ucx_window(size_t *bytes)
{
    *bytes = ucx.window_bytes;
    return ucx.window;
}

const void *ringx_ucx_window_desc(size_t *len)
{
    *len = ucx.window_desc_len;
    return ucx.window_desc;
}

/* ucp_rkey_ptr gives an address only where the window can be reached with
 * loads and stores (a shared-memory transport to a peer on this node).
 * desc: see create_window(). */
char *ringx_ucx_peer_window(ringx_peer_t *peer, const void *desc, size_t len)
{
    ucp_ep_h ep = peer->ep;
    uint64_t head[2];

    if (len <= sizeof(head) || (ep == NULL && peer_endpoint(peer, &ep) != OMPI_SUCCESS)) {
        return NULL;
    }
    memcpy(head, desc, sizeof(head));
    if (head[1] == 0 || head[1] > len - sizeof(head)) {
        return NULL;
    }
    const char *rkey = (const char *)desc + sizeof(head);
    pthread_mutex_lock(&ucx.lock);
    if (!peer->window_tried) {
        void *mapped = NULL;
        peer->window_tried = 1;
        if (ucp_ep_rkey_unpack(ep, rkey, &peer->window_rkey) != UCS_OK) {
            peer->window_rkey = NULL;
        } else if (ucp_rkey_ptr(peer->window_rkey, head[0], &mapped) != UCS_OK) {
            ucp_rkey_destroy(peer->window_rkey);
            peer->window_rkey = NULL;
        } else {
            peer->window = (char *)mapped + RINGX_BELL_BYTES;
            peer->cma_ep = ringx_cma_connect(rkey + head[1], len - sizeof(head) - head[1]);
        }
    }
    pthread_mutex_unlock(&ucx.lock);
    return peer->window;
}

static int posted(ucs_status_ptr_t sp, ringx_req_t *req)
{
    if (UCS_PTR_IS_ERR(sp)) {
        *req = NULL;
        opal_output_verbose(1, ucx.output, "coll:ringx: UCX transfer failed to start: %s",
                            ucs_status_string(UCS_PTR_STATUS(sp)));
        return status_to_ompi(UCS_PTR_STATUS(sp));
    }
    *req = sp;      /* NULL when already complete */
    return OMPI_SUCCESS;
}

/* The buffers' memory type goes to UCX only for device and managed memory
 * (host memory needs no attribute): UCX trusts a type it is given, and
 * moves managed memory otherwise than device memory. */
#define TRANSFER_PARAM(memtype)                                                        \
    {                                                                                  \
        .op_attr_mask = ringx_memtype_on_device(memtype) ? UCP_OP_ATTR_FIELD_MEMORY_TYPE \
                                                         : 0,                          \
        .memory_type = (memtype) == RINGX_MEMTYPE_MANAGED ? UCS_MEMORY_TYPE_CUDA_MANAGED  \
                       : (memtype) == RINGX_MEMTYPE_DEVICE ? UCS_MEMORY_TYPE_CUDA          \
                                                           : UCS_MEMORY_TYPE_HOST          \
    }

int ringx_ucx_isend_mem(ringx_peer_t *peer, const void *buf, size_t len, uint64_t tag,
                        ringx_memtype_t memtype, ringx_req_t *req)
{
    ucp_ep_h ep = peer->ep;
    if (ep == NULL) {
        int rc = peer_endpoint(peer, &ep);
        if (rc != OMPI_SUCCESS) {
            *req = NULL;
            return rc;
        }
    }
    ucp_request_param_t param = TRANSFER_PARAM(memtype);
    return posted(ucp_tag_send_nbx(ep, buf, len, tag, &param), req);
}

int ringx_ucx_irecv_mem(void *buf, size_t len, uint64_t tag, ringx_memtype_t memtype,
                        ringx_req_t *req)
{
    ucp_request_param_t param = TRANSFER_PARAM(memtype);
    return posted(ucp_tag_recv_nbx(ucx.worker, buf, len, tag, UINT64_MAX, &param), req);
}

int ringx_ucx_isend(ringx_peer_t *peer, const void *buf, size_t len, uint64_t tag,
                    ringx_req_t *req)
{
    return ringx_ucx_isend_mem(peer, buf, len, tag, RINGX_MEMTYPE_HOST, req);
}

int ringx_ucx_irecv(void *buf, size_t len, uint64_t tag, ringx_req_t *req)
{
    return ringx_ucx_irecv_mem(buf, len, tag, RINGX_MEMTYPE_HOST, req);
}

int ringx_ucx_single_copy(const ringx_peer_t *peer)
{
    return peer->cma_ep != NULL;
}

static int expose_single_copy(const void *buf, size_t len, ringx_exposed_t *e)
{
    e->packed_rkey_len = ringx_cma_key_bytes();
    e->packed_rkey = malloc(e->packed_rkey_len ? e->packed_rkey_len : 1);
    if (e->packed_rkey == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    return ringx_cma_register(buf, len, &e->memh, e->packed_rkey);
}

int ringx_ucx_expose(const void *buf, size_t len, int single_copy, ringx_exposed_t *e)
{
    ucp_mem_map_params_t params = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
        .address = (void *)buf,
        .length = len,
    };
    ucs_status_t status;

    memset(e, 0, sizeof(*e));
    e->single_copy = single_copy;
    if (single_copy) {
        int rc = expose_single_copy(buf, len, e);
        if (rc != OMPI_SUCCESS) {
            ringx_ucx_unexpose(e);
        }
        return rc;
    }
    status = ucp_mem_map(ucx.context, &params, (ucp_mem_h *)&e->memh);
    if (status == UCS_OK) {
        status = ucp_rkey_pack(ucx.context, e->memh, &e->packed_rkey, &e->packed_rkey_len);
    }
    if (status != UCS_OK) {
        opal_output_verbose(1, ucx.output, "coll:ringx: cannot expose %zu bytes for reads: %s",
                            len, ucs_status_string(status));
        ringx_ucx_unexpose(e);
        return status_to_ompi(status);
    }
    return OMPI_SUCCESS;
}

void ringx_ucx_unexpose(ringx_exposed_t *e)
{
    if (e->single_copy) {
        ringx_cma_deregister(e->memh);
        free(e->packed_rkey);
    } else {
        if (e->packed_rkey != NULL) {
            ucp_rkey_buffer_release(e->packed_rkey);
        }
        if (e->memh != NULL) {
            ucp_mem_unmap(ucx.context, e->memh);
        }
    }
    memset(e, 0, sizeof(*e));
}

void *ringx_ucx_rkey(ringx_peer_t *peer, const void *packed_rkey, int single_copy)
{
    ucp_ep_h ep = peer->ep;
    ucp_rkey_h rkey = NULL;

    if (single_copy) {
        return ringx_cma_key_unpack(packed_rkey);
    }
    if (ep == NULL && peer_endpoint(peer, &ep) != OMPI_SUCCESS) {
        return NULL;
    }
    return ucp_ep_rkey_unpack(ep, packed_rkey, &rkey) == UCS_OK ? rkey : NULL;
}

void ringx_ucx_rkey_release(void *rkey, int single_copy)
{
    if (single_copy) {
        ringx_cma_key_release(rkey);
    } else if (rkey != NULL) {
        ucp_rkey_destroy(rkey);
    }
}

int ringx_ucx_iget(ringx_peer_t *peer, void *buf, size_t len, uint64_t remote, void *rkey,
                   int single_copy, ringx_req_t *req)
{
    ucp_request_param_t param = { .op_attr_mask = 0 };

    ringx_bell_note_work();
    if (single_copy) {
        *req = NULL;
        return ringx_cma_get(peer->cma_ep, buf, len, remote, rkey);
    }
    return posted(ucp_get_nbx(peer->ep, buf, len, remote, rkey, &param), req);
}

int ringx_ucx_cuda_memory(void)
{
    static int answer = -1;     /* known once UCX is ready: its context's for good */
    int known = __atomic_load_n(&answer, __ATOMIC_RELAXED);

    if (known < 0) {
        ucp_context_attr_t attr = { .field_mask = UCP_ATTR_FIELD_MEMORY_TYPES };
        if (ucx.state != UCX_READY) {
            return 0;
        }
        known = ucp_context_query(ucx.context, &attr) == UCS_OK &&
                (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
        __atomic_store_n(&answer, known, __ATOMIC_RELAXED);
    }
    return known;
}

int ringx_ucx_test(ringx_req_t *req)
{
    if (*req == NULL) {
        return 1;
    }
    ucs_status_t status = ucp_request_check_status(*req);
    if (status == UCS_INPROGRESS) {
        return 0;
    }
    ucp_request_free(*req);
    *req = NULL;
    if (status != UCS_OK) {
        opal_output_verbose(1, ucx.output, "coll:ringx: UCX transfer failed: %s",
                            ucs_status_string(status));
        return status_to_ompi(status);
    }
    return 1;
}

void ringx_ucx_abandon(ringx_req_t *req)
{
    if (*req != NULL) {
        ucp_request_cancel(ucx.worker, *req);
        ucp_request_free(*req);
        *req = NULL;
    }
}

void ringx_ucx_set_rndv_thresh(size_t bytes)
{
    if (ucx.state == UCX_NOT_STARTED) {
        ucx.rndv_thresh = bytes;
    }
}

void ringx_ucx_set_yield(int yield)
{
    ucx.yield = yield;
}

int ringx_ucx_flush_behind(void)
{
    ucp_request_param_t param = { .op_attr_mask = 0 };
    int under_way;

    if (ucx.state != UCX_READY) {
        return 0;
    }
    pthread_mutex_lock(&ucx.flush_lock);
    if (ucx.flush == NULL) {
        ucs_status_ptr_t req = ucp_worker_flush_nbx(ucx.worker, &param);
        ucx.flush = UCS_PTR_IS_PTR(req) ? req : NULL;
    }
    under_way = ucx.flush != NULL;
    pthread_mutex_unlock(&ucx.flush_lock);
    return under_way;
}

int ringx_ucx_flush_pending(void)
{
    int under_way;

    if (__atomic_load_n(&ucx.flush, __ATOMIC_RELAXED) == NULL) {
        return 0;
    }
    pthread_mutex_lock(&ucx.flush_lock);
    if (ucx.flush != NULL && ucp_request_check_status(ucx.flush) != UCS_INPROGRESS) {
        ucp_request_free(ucx.flush);
        ucx.flush = NULL;
    }
    under_way = ucx.flush != NULL;
    pthread_mutex_unlock(&ucx.flush_lock);
    return under_way;
}

unsigned ringx_ucx_progress_worker(void)
{
    return ucx.worker != NULL ? ucp_worker_progress(ucx.worker) : 0;
}

int ringx_ucx_inside_progress(int inside)
{
    int was = inside_opal_progress;
    inside_opal_progress = inside;
    return was;
}

void ringx_ucx_progress(unsigned *idle)
{
    if (ucp_worker_progress(ucx.worker) != 0) {
        *idle = 0;
        return;
    }
    /* MPI's progress rule: a rank waiting in ringx still moves the other
     * components' traffic.  A peer may have left the stock collective
     * before this rank and entered ringx, with bytes for this rank's stock
     * call still in Open MPI's TCP transport, which only Open MPI's progress
     * pushes out: without this, the peer waits in ringx for this rank, and
     * this rank in the stock call for the peer (seen at 3 hosts x 2 ranks
     * over 1 Gbit/s links). */
    if (++*idle % RINGX_IDLE_ROUNDS_PER_OPAL_PROGRESS == 0 && !inside_opal_progress) {
        inside_opal_progress = 1;
        opal_progress();
        inside_opal_progress = 0;
    }
    if (*idle >= RINGX_IDLE_ROUNDS_BEFORE_YIELD && ucx.yield) {
        ringx_bell_idle();
    }
}

int ringx_ucx_wait(ringx_req_t *req)
{
    unsigned idle = 0;
    int done;

    while ((done = ringx_ucx_test(req)) == 0) {
        ringx_ucx_progress(&idle);
    }
    return done < 0 ? done : OMPI_SUCCESS;
}

void ringx_ucx_release(ringx_req_t *req)
{
    if (*req != NULL) {
        ucp_request_free(*req);
        *req = NULL;
        __atomic_store_n(&ucx.released, 1, __ATOMIC_RELAXED);
    }
}

size_t ringx_ucx_eager_limit(void)
{
    /* UCX's automatic rendezvous thresholds are several KiB on every
     * transport; 1 KiB stays below them. */
    static size_t limit = 0;
    if (limit == 0) {
        const char *env = getenv("UCX_RNDV_THRESH");
        char *end = NULL;
        unsigned long long v = env ? strtoull(env, &end, 10) : 0;
        limit = 1024;
        if (env && end != env && v < limit) {
            limit = v ? (size_t)v : 1;    /* 0 would mean "never eager": hand shake always */
        }
        if (ucx.rndv_thresh > 0 && ucx.rndv_thresh < limit) {
            limit = ucx.rndv_thresh;
        }
    }
    return limit;
}
