/*
 * coll_ringx.h - the ringx coll component: component and module structures
 * and the declarations shared by its files.
 */
#ifndef MCA_COLL_RINGX_H
#define MCA_COLL_RINGX_H

#include "ompi_config.h"

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"
#include "opal/util/output.h"

#include "coll_ringx_compat.h"
#include "ringx_ops.h"
#include "coll_ringx_decision.h"
#include "coll_ringx_ucx.h"
#include "coll_ringx_mem.h"
#include "coll_ringx_sched.h"

#define RINGX_EXPORT __attribute__((visibility("default")))

BEGIN_C_DECLS

/* ------------------------------------------------------------ component */

typedef struct mca_coll_ringx_component_t {
    mca_coll_base_component_t super;

    /* MCA variables */
    int priority;
    int verbose;
    bool enable[RINGX_COLL_COUNT];
    int algorithm[RINGX_COLL_COUNT];      /* ringx_alg_t */
    char *thresholds[RINGX_COLL_COUNT];   /* "MAX:ALG,..,ALG" for auto */
    char *rules_file;
    size_t segment_size;
    int pipeline_depth;
    int yield;                            /* -1 auto, 0 never, 1 always */
    int sleep_after_yield_us;             /* waits sleep after so long a yield; 0 never, -1 always */
    bool gpu_force_staging;               /* stage device buffers even with CUDA-aware UCX */
    int gpu_bounce_buffers;               /* send bounce buffers per staged call */
    bool stage_host_buffers;              /* testing: stage host buffers too */
    int test_outbox_delay_us;             /* testing: sleep before reading outboxes */
    int test_own_ids;                     /* testing: ids of ringx's own to choose from; 0 all */
    size_t mailbox_bytes;                 /* largest message through a mailbox; 0: none */
    int leaders_flat_ranks;               /* node leaders: flat fan-in up to this many ranks */
    size_t leaders_bytes[RINGX_COLL_COUNT];   /* through the leaders up to so much per node rank */
    size_t direct_buffer_bytes;           /* direct reads of peers' buffers from here; 0: never */
    size_t outbox_bytes;                  /* blocking calls' large outboxes; 0: none */
    bool single_copy;                     /* direct reads through UCX's cma transport */
    size_t ucx_rndv_thresh;               /* UCX rendezvous threshold without RDMA; 0: UCX's */
    char *fill;                           /* components that fill empty slots */
    bool requests;                        /* ringx's requests fit Open MPI's (open) */

    int output;                           /* opal_output stream for verbose logs */
} mca_coll_ringx_component_t;

RINGX_EXPORT extern mca_coll_ringx_component_t mca_coll_ringx_component;

/* The level is tested here so that a call's log arguments cost nothing
 * when nobody reads them. */
#define RINGX_LOG(level, ...)                                                              \
    do {                                                                                   \
        if (OPAL_UNLIKELY(mca_coll_ringx_component.verbose >= (level))) {                  \
            opal_output_verbose((level), mca_coll_ringx_component.output,                  \
                                "coll:ringx: " __VA_ARGS__);                               \
        }                                                                                  \
    } while (0)

/* The communicator's name for the log, or "communicator cid N" where it
 * has none (those from MPI_Intercomm_merge or MPI_Comm_create_group, and
 * intercommunicators while their collectives are selected).  The text
 * lasts until this thread's next call. */
const char *ringx_comm_label(struct ompi_communicator_t *comm);

/* Registers the performance variables (coll_ringx_pvar.c). */
int mca_coll_ringx_register_pvars(void);

/* Whether a waiting process should yield its core (coll_ringx_yield, or
 * Open MPI's mpi_yield_when_idle and oversubscription when "auto"). */
int mca_coll_ringx_should_yield(void);

/* The rendezvous threshold ringx's UCX context takes (0: UCX's own):
 * coll_ringx_ucx_rndv_thresh where the job spans nodes and the machine has
 * no RDMA devices, so that UCX goes between nodes over TCP; comm is the
 * communicator being served, where MPI_COMM_WORLD does not exist. */
size_t mca_coll_ringx_ucx_rndv_thresh(struct ompi_communicator_t *comm);

/* Whether coll_ringx_direct_buffer_bytes was set (not its default). */
int ringx_direct_buffer_bytes_set(void);

/* ---------------------------------------------------------- pvars */

typedef struct ringx_counters {
    unsigned long long calls[RINGX_COLL_COUNT][RINGX_ALG_COUNT];
    unsigned long long bytes_sent[RINGX_COLL_COUNT];
    unsigned long long fallbacks[RINGX_COLL_COUNT][RINGX_FALLBACK_COUNT];
    unsigned long long on_device[RINGX_COLL_COUNT];   /* calls on device memory */
    unsigned long long staged[RINGX_COLL_COUNT];      /* calls through bounce buffers */
    unsigned long long mailbox[RINGX_COLL_COUNT];     /* calls with mailbox messages */
    unsigned long long sent_ahead[RINGX_COLL_COUNT];  /* calls with a message sent ahead of its step */
    unsigned long long packed[RINGX_COLL_COUNT];      /* calls on datatypes with gaps, packed */
    unsigned long long nonblocking[RINGX_COLL_COUNT]; /* nonblocking calls served */
    unsigned long long persistent[RINGX_COLL_COUNT];  /* starts of persistent calls served */
    unsigned long long buffer_reads[RINGX_COLL_COUNT]; /* direct reads out of peers' buffers */
    unsigned long long handed_back[RINGX_COLL_COUNT];  /* calls the previous component handed back */
    unsigned long long comms_one_node;    /* communicators connected, all ranks on one node */
    unsigned long long comms_multi_node;  /* communicators connected across nodes */
    unsigned long long comms_exchanged;   /* connections that gathered worker addresses */
    unsigned long long comms_from_world;  /* connections without a message (coll_ringx_job.c) */
    unsigned long long comms_own_id;      /* served with an id of ringx's own (no common context id) */
    unsigned long long comms_hierarchical; /* across nodes, laid out for the hierarchical algorithms */
    unsigned long long comms_uneven;      /* across nodes with different rank counts per node */
    unsigned long long waits_slept;       /* waits that slept on the bell (coll_ringx_bell.c) */
    unsigned long long sleeps_timed_out;  /* of those, woken by the time limit, not a ring */
    unsigned long long rings_missed;      /* of those, with the awaited work already there */
    unsigned long long progress_slept;    /* of those, in Open MPI's progress (nonblocking) */
} ringx_counters_t;

extern ringx_counters_t mca_coll_ringx_counters;

static inline void ringx_count(unsigned long long *counter, unsigned long long n)
{
    __atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

/* FNV-1a: h (RINGX_HASH_START at first) with the 8 bytes of v hashed in */
#define RINGX_HASH_START UINT64_C(14695981039346656037)
static inline uint64_t ringx_hash_in(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        h = (h ^ ((v >> (8 * i)) & 0xff)) * UINT64_C(1099511628211);
    }
    return h;
}

/* A size carried in an int of an agreement (MPI_MIN over ints): clamped,
 * since every threshold beyond INT_MAX bytes means the same there. */
static inline int ringx_int_clamp(size_t bytes)
{
    return bytes > INT_MAX ? INT_MAX : (int)bytes;
}

/* ------------------------------------------------------------- module */

/* What ringx knows about its communicator once it first serves a call. */
typedef enum ringx_comm_state {
    RINGX_COMM_UNCONNECTED,   /* no call served yet: peers unknown */
    RINGX_COMM_CONNECTING,    /* learning the peers (coll_ringx_connect.c) */
    RINGX_COMM_READY,         /* peers known, every rank has UCX */
    RINGX_COMM_NO_TRANSPORT,  /* some rank has no UCX: fallback for good */
    RINGX_COMM_NO_COMMON_ID   /* no id common to the members for ringx's tags: the same */
} ringx_comm_state_t;

/* How this rank's messages reach a peer (coll_ringx_link.c). */
typedef enum ringx_via { RINGX_VIA_UCX, RINGX_VIA_MAILBOX } ringx_via_t;

/* Handshake receives a module may keep waiting for their message. */
#define RINGX_MAX_PARKED 32

typedef struct ringx_request ringx_request_t;    /* coll_ringx_request.c */

/* A grow-only scratch buffer kept between calls. */
typedef struct ringx_scratch {
    void *ptr;
    size_t size;
} ringx_scratch_t;

/* What the host backend hands out (coll_ringx_mem.c): the module's, for
 * its blocking calls, or a request's own. */
struct ringx_scratch_set {
    ringx_scratch_t segments;       /* pipeline receive slots */
    ringx_scratch_t blocks;         /* partial results, Bruck's rotation */
    ringx_scratch_t bounce;         /* staging of host buffers (testing) */
    ringx_scratch_t steps;          /* exchange steps beyond the schedule's own */
    ringx_scratch_t packed;         /* a result with gaps, packed (ringx_call_mem_start) */
};

void ringx_scratch_set_free(ringx_scratch_set_t *s);

/* Mailboxes (coll_ringx_mailbox.c): communicators with a context id below
 * RINGX_MAILBOX_COMMS, exchange steps below RINGX_MAILBOX_STEPS (twice
 * log2 of 128 ranks, plus the folds), messages up to
 * coll_ringx_mailbox_bytes (at most RINGX_MAILBOX_MAX_BYTES). */
#define RINGX_MAILBOX_COMMS 64
#define RINGX_MAILBOX_STEPS 16
#define RINGX_MAILBOX_MAX_BYTES 65536
/* Large outboxes (coll_ringx_outbox_bytes, at most RINGX_OUTBOX_MAX_BYTES)
 * for the communicators whose context ids are below
 * RINGX_LARGE_OUTBOX_COMMS, after the regions of the window: two for
 * blocking calls and RINGX_POSTED_SLOTS posted ones per communicator,
 * reserved (virtual) in every process. */
#define RINGX_LARGE_OUTBOX_COMMS 16
#define RINGX_OUTBOX_MAX_BYTES (1024 * 1024 * 1024)
/* Outboxes of nonblocking and persistent calls up to RINGX_POSTED_BYTES,
 * per rank and communicator, used in turn (coll_ringx_osched.c).  256 KiB,
 * up to where blocking calls read the peers' buffers: against reading
 * them, with ringx_bench -f nonblocking (2 cores, 2026-12-05, ringx's time
 * per call, two interleaved runs each), allreduce 96 KiB took 35-38 us
 * instead of 48-63 at np 4, 26 instead of 36 at np 3, 65-98 instead of
 * 171-255 at np 8, 13 instead of 18 at np 2; 192 KiB 48-54 us instead of
 * 68-71 at np 4, 133-141 instead of 212-227 at np 8; reduce_scatter_block
 * 96 KiB 17 us instead of 23-24 at np 4, 35-44 instead of 70-71 at np 8
 * (192 KiB: within 10% either way).  At np 2, where a rank reads a single
 * peer, the buffers stayed ahead from 192 KiB (ringx_osched_fits).  (64
 * KiB outboxes, the release before, against the buffers: allreduce 64 KiB
 * 2.2x libnbc instead of 1.6x at np 2, 2.0-2.1x instead of 1.1-1.2x at
 * np 8.)  Each communicator's region holds four: 1 MiB of each process's
 * shared window (RINGX_MAILBOX_COMMS regions, 64 MiB in all, virtual),
 * touched only where used; the first RINGX_LARGE_OUTBOX_COMMS
 * communicators use large ones instead. */
#define RINGX_POSTED_SLOTS 4
#define RINGX_POSTED_BYTES 262144
/* The largest allreduce that every rank reduces whole out of the
 * outboxes, blocking or posted (one synchronisation), rather than a share
 * each (two).  ringx_bench, 2 cores, 2026-12-05, ratios to the stock
 * collectives: shares from 2 KiB, blocking, np 3 4-32 KiB 2.2-3.3x where
 * whole reductions (up to 64 KiB / (p-1) before) gave 1.0-1.9x, np 4 4-16
 * KiB 2.6-3.5x against 1.3-2.0x, np 6 and 8 4-8 KiB 2.6-4.6x against
 * 1.7-2.2x; nonblocking against libnbc, np 8 8 KiB 1.9-2.2x against
 * 1.2-1.35x (np 2, 2 KiB: 1.8x against 1.97x whole). */
#define RINGX_WHOLE_BYTES 1024

typedef struct ringx_mailbox {
    char *local;                /* this rank's region; NULL: none (no mailboxes, no direct reads) */
    char **remote;              /* by rank: its region, mapped here; NULL: this rank, or a rank
                                 * on another node (a communicator across nodes has mailboxes
                                 * among the ranks of each node, and no direct reads) */
    unsigned char *stamped;     /* by rank: its region seen with stamp */
    struct ringx_bell **bells;  /* by rank: its process's doorbell; NULL: this rank or none */
    uint64_t stamp;             /* this communicator's, on its region (coll_ringx_mailbox.c) */
    size_t bytes;               /* data bytes per slot */
    size_t stride;              /* bytes per slot */
    size_t outbox_at[2];        /* [posted]: where a region's outboxes of that kind start
                                 * (relative to the region: the large ones lie beyond) */
    size_t outbox_bytes[2];     /* [posted]: data bytes of an outbox of that kind */
    size_t outbox_stride[2];    /* [posted]: bytes from one outbox of that kind to the next */
    size_t buffers_from[2][RINGX_COLL_COUNT]; /* [blocking][coll]: calls this large read the
                                               * peers' buffers (agreed; 0: never) */
    int single_copy;            /* this rank reads every peer with single copies */
} ringx_mailbox_t;

/* The nodes of a communicator laid out for the hierarchical algorithms
 * (coll_ringx_nodes.c): nnodes nodes (Open MPI's locality and hostnames)
 * of node_ranks ranks each, the same view on every rank (agreed at
 * connect).  nnodes 0: no such layout (one node, uneven nodes, one rank
 * per node, too many ranks for the schedules, or no agreement). */
typedef struct ringx_nodes {
    int nnodes;
    int node_ranks;
    int node, local;            /* this rank's node and its place there */
    int *rank_at;               /* [node * node_ranks + local]: the rank there */
    int *leaders;               /* [node]: its first rank (rank_at[node * node_ranks]) */
    int consecutive;            /* every node's ranks consecutive (rank_at[r] == r) */
} ringx_nodes_t;

/* The most ranks laid out for the hierarchical algorithms: their rings
 * take up to p - 1 exchange steps, which the message tags number without
 * wrapping up to here (beyond, they would wrap, safely, but the layout's
 * hostname comparisons grow as p^2). */
#define RINGX_HIER_MAX_RANKS 4096

typedef struct mca_coll_ringx_module_t {
    mca_coll_base_module_t super;

    /* false: ringx serves none of its collectives on this communicator and
     * only fills the slots the other components left empty */
    bool serves;

    /* the previous component's functions, for fallback */
    mca_coll_base_module_allreduce_fn_t prev_allreduce;
    mca_coll_base_module_t *prev_allreduce_module;
    mca_coll_base_module_allgather_fn_t prev_allgather;
    mca_coll_base_module_t *prev_allgather_module;
    mca_coll_base_module_reduce_scatter_block_fn_t prev_reduce_scatter_block;
    mca_coll_base_module_t *prev_reduce_scatter_block_module;
    mca_coll_base_module_iallreduce_fn_t prev_iallreduce;
    mca_coll_base_module_t *prev_iallreduce_module;
    mca_coll_base_module_iallgather_fn_t prev_iallgather;
    mca_coll_base_module_t *prev_iallgather_module;
    mca_coll_base_module_ireduce_scatter_block_fn_t prev_ireduce_scatter_block;
    mca_coll_base_module_t *prev_ireduce_scatter_block_module;
    mca_coll_base_module_allreduce_init_fn_t prev_allreduce_init;
    mca_coll_base_module_t *prev_allreduce_init_module;
    mca_coll_base_module_allgather_init_fn_t prev_allgather_init;
    mca_coll_base_module_t *prev_allgather_init_module;
    mca_coll_base_module_reduce_scatter_block_init_fn_t prev_reduce_scatter_block_init;
    mca_coll_base_module_t *prev_reduce_scatter_block_init_module;

    /* per-communicator transport state */
    struct ompi_communicator_t *comm;     /* the module's communicator (not retained) */
    ringx_comm_state_t state;
    int rank;
    int size;
    uint32_t comm_id;                     /* tags the messages: same on all members */
    bool comm_id_common;                  /* Open MPI's context id (coll_ringx_comm_id.c) */
    bool comm_id_claimed;                 /* else one of ringx's own, claimed here */
    uint32_t seq;                         /* ringx calls served so far (message tags) */
    uint32_t mailbox_seq;                 /* of them, calls numbered for the mailboxes */
    uint64_t posted_next;                 /* number of the next call through the posted outboxes */
    ringx_peer_t **peers;                 /* by rank; NULL for self */
    unsigned char *via;                   /* by rank: ringx_via_t (coll_ringx_link.c) */
    ringx_mailbox_t mailbox;              /* small messages on this node */
    int node_ranks_min, node_ranks_max;   /* ranks per node over the communicator's nodes
                                           * (Open MPI's locality), agreed at connect */
    ringx_nodes_t nodes;                  /* for the hierarchical algorithms */
    uint64_t direct_calls;                /* calls that read peers' buffers directly */
    uint32_t direct_next;                 /* number of the next call with direct reads */
    uint32_t direct_done;                 /* calls with direct reads over here */
    ringx_req_t parked[RINGX_MAX_PARKED]; /* handshake receives not yet matched */
    int nparked;
    pthread_mutex_t parked_lock;          /* blocking calls and request progress park */
    struct ringx_connect *connect;        /* while CONNECTING */
    pthread_mutex_t connect_lock;         /* whoever advances the connection */
    struct mca_coll_ringx_module_t *next_connecting;   /* coll_ringx_request.c */
    ringx_request_t *deferred_head, *deferred_tail;    /* calls waiting for the connection */
    pthread_mutex_t begin_lock;           /* nonblocking and persistent calls begin in call order */

    ringx_scratch_set_t scratch;          /* of the blocking calls */
} mca_coll_ringx_module_t;

OBJ_CLASS_DECLARATION(mca_coll_ringx_module_t);

mca_coll_base_module_t *mca_coll_ringx_comm_query(struct ompi_communicator_t *comm,
                                                  int *priority);

/* Makes the module ready to serve (first call: learns the peers through
 * the previous component's nonblocking collectives; coll_ringx_connect.c).
 * ringx_module_connect waits: OMPI_SUCCESS with m->state READY,
 * NO_TRANSPORT or NO_COMMON_ID, or an error.  A nonblocking call starts
 * the connection and leaves it to progress (RINGX_DONE, RINGX_PENDING or
 * an error). */
typedef struct ringx_connect ringx_connect_t;
int ringx_module_connect(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm);
int ringx_connect_start(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm);
int ringx_connect_progress(mca_coll_ringx_module_t *m);

/* The id of m's messages (coll_ringx_comm_id.c): ringx_comm_id_take when
 * the module is enabled takes Open MPI's context id where it serves;
 * otherwise ringx_comm_id_claim, when the connection starts, derives one
 * of ringx's own and claims it on this process (0: another live
 * communicator holds it here), ringx_comm_id_release lets it go. */
void ringx_comm_id_take(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm);
int ringx_comm_id_claim(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm);
void ringx_comm_id_release(mca_coll_ringx_module_t *m);

void *ringx_scratch_get(ringx_scratch_t *s, size_t size);

/*
 * Keeps a handshake receive that is no longer needed but not yet matched.
 * It must not outlive the communicator: Open MPI gives a later
 * communicator the same context id, and a stale receive would take that
 * one's messages.  So the module keeps it, reaps it once it completes,
 * and waits for what is left when the communicator goes away.
 */
void ringx_module_park(mca_coll_ringx_module_t *m, ringx_req_t *req);

/* ---------------------------------------------------------------- fill */

/* Whether coll_ringx_fill names any component. */
bool ringx_fill_enabled(void);

/*
 * Serves the collective slots of comm that no selected component filled,
 * with the stock components of coll_ringx_fill that the selection left out
 * (coll_ringx_fill.c); ringx_module's own slots get one too, which becomes
 * its fallback.  Called from ringx's module enable, which Open MPI runs after
 * the lower-priority components have filled the table.  Returns how many
 * slots it filled.
 */
int ringx_fill_empty_slots(mca_coll_base_module_t *ringx_module, struct ompi_communicator_t *comm);

/* Closes the components ringx loaded (at component close, after every
 * communicator is gone). */
void ringx_fill_close(void);

/* ----------------------------------------------------------- admission */

/* What the classifiers and ringx_admit() answer when ringx serves a call;
 * otherwise they answer a ringx_fallback_t reason. */
#define RINGX_SERVE (-1)

/* Maps (dtype, op) to a reduction ringx performs itself: RINGX_SERVE, or
 * the fallback reason (datatype or op) when it cannot. */
int ringx_classify_reduction(struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             ringx_reduction_t *red);

/* 1 if count elements of dtype form one run of bytes that ringx can move
 * as is, and where the run starts relative to the buffer pointer; 0 if
 * the datatype leaves gaps (packed then, ringx_datatype_pack). */
int ringx_datatype_plain(struct ompi_datatype_t *dtype, int count, ptrdiff_t *true_lb);

/* Copies count elements of dtype at user (a layout with gaps) into or out
 * of bytes packed bytes: at most that many, as MPI's matching rule says
 * both sides hold.  OMPI_SUCCESS or an error. */
int ringx_datatype_pack(char *packed, size_t bytes, const void *user, size_t count,
                        struct ompi_datatype_t *dtype);
int ringx_datatype_unpack(void *user, size_t count, struct ompi_datatype_t *dtype,
                          const char *packed, size_t bytes);

/*
 * The common prologue of every collective.  buffers is RINGX_SERVE when the
 * datatypes, op and memory qualify, else the reason they do not.  Returns
 * RINGX_SERVE, or the fallback reason (already counted and logged).  Connects
 * the module on its first served call; if that fails *rc holds the error
 * the call must return.
 */
int ringx_admit(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm,
                ringx_coll_t coll, int buffers, int blocking, int *rc);

/* The served ringx module behind a call: the module Open MPI passed, or,
 * when a component below calls the communicator's table with another
 * component's module (coll/han 4.1 does), ringx's module in that table;
 * NULL if there is none. */
mca_coll_ringx_module_t *ringx_module_of(mca_coll_base_module_t *module,
                                         struct ompi_communicator_t *comm);

/*
 * Calls the previous component hands back (coll_ringx_handback.c).  A
 * blocking call handed on is marked (begin/end, nested); a call of the
 * same collective on the same module while marked was handed back: it is
 * counted and logged by ringx_handed_back, and served by Open MPI's
 * point-to-point base algorithms (ringx_handback_*).
 */
typedef struct ringx_hand_on {
    const struct mca_coll_ringx_module_t *m;
    ringx_coll_t coll;
} ringx_hand_on_t;

ringx_hand_on_t ringx_hand_on_begin(const mca_coll_ringx_module_t *m, ringx_coll_t coll);
void ringx_hand_on_end(ringx_hand_on_t outer);
int ringx_handed_back(const mca_coll_ringx_module_t *m, ringx_coll_t coll);
int ringx_handback_allreduce(const void *sbuf, void *rbuf, int count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             struct ompi_communicator_t *comm, mca_coll_ringx_module_t *m);
int ringx_handback_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, mca_coll_ringx_module_t *m);
int ringx_handback_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        mca_coll_ringx_module_t *m);

/* Hands a blocking call (the expression call) to the previous component,
 * marked for ringx_handed_back; its return code. */
#define RINGX_HAND_ON(m, coll, call)                                 \
    __extension__({                                                  \
        ringx_hand_on_t outer_ = ringx_hand_on_begin((m), (coll));   \
        int rc_ = (call);                                            \
        ringx_hand_on_end(outer_);                                   \
        rc_;                                                         \
    })

/* Why m serves no call once its connection is over; counts and logs a
 * call handed on for reason. */
int ringx_module_fallback_reason(const mca_coll_ringx_module_t *m);
void ringx_count_fallback(mca_coll_ringx_module_t *m, ringx_coll_t coll, int reason,
                          int blocking);

/* ---------------------------------------------------------------- calls */

/*
 * One call of a collective that ringx serves: its buffers as ringx sees
 * them, its memory and its schedule.  On the stack of a blocking call, in
 * the request of a nonblocking one (coll_ringx_request.c).
 *
 *   allreduce             input: sbuf (rbuf in place), count elements;
 *   allgather             input: this rank's block, count elements per rank;
 *   reduce_scatter_block  input: all p blocks (rbuf in place), count per rank.
 */
typedef struct ringx_call {
    mca_coll_ringx_module_t *m;
    ringx_coll_t coll;
    ringx_mem_t mem;
    const char *input;
    char *result;
    int in_place;
    size_t count;
    size_t elem_size;
    ringx_reduction_t red;
    int blocking;               /* mailboxes and outboxes allowed */
    ringx_decision_t choice;    /* of a nonblocking or persistent call */
    ringx_sched_t sched;
} ringx_call_t;

/* An algorithm of a collective: how it builds its resumable schedule (run
 * to its end by a blocking call: RINGX_DIRECT_DECLINED when some rank
 * declines direct reads). */
typedef struct ringx_alg_impl {
    ringx_alg_t alg;
    int (*build)(ringx_call_t *c, ringx_alg_t alg);
} ringx_alg_impl_t;

/* Prepares c for a call of coll on m: no buffers, no schedule yet. */
void ringx_call_init(ringx_call_t *c, mca_coll_ringx_module_t *m, ringx_coll_t coll,
                     int blocking);

/* Classifies a reduction's call (allreduce, reduce_scatter_block; count
 * per rank for the latter) and fills c; RINGX_SERVE or the fallback
 * reason. */
int ringx_call_prepare_reduction(ringx_call_t *c, mca_coll_ringx_module_t *m, ringx_coll_t coll,
                                 const void *sbuf, void *rbuf, int count,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 int blocking);

/* The algorithms of each collective (one table per collective file). */
extern const ringx_alg_impl_t ringx_allreduce_algs[];
extern const ringx_alg_impl_t ringx_allgather_algs[];
extern const ringx_alg_impl_t ringx_reduce_scatter_block_algs[];

/* Whether every algorithm coll_ringx_decision.c names has an
 * implementation; logs the missing ones (component open). */
int ringx_algs_complete(void);

/* The whole buffer of a call, as the choice sees it: the result of an
 * allgather, the input of the reductions. */
size_t ringx_call_bytes(const ringx_call_t *c);

/* Starts the call's memory (ringx_mem_start) and places what it packs
 * (an allgather's buffers whose datatypes leave gaps): before the
 * schedule is built. */
int ringx_call_mem_start(ringx_call_t *c);

/*
 * Serves a blocking call: chooses the algorithm (honouring the
 * collective's algorithm variable), builds and runs its schedule (or runs
 * it), counts the call under the algorithm that ran and logs the choice.
 * If the choice is direct reads and they decline the call (some rank's
 * buffer cannot be read; for allreduce: no outboxes), chooses again
 * without them, the same way on every rank, and runs that.
 */
int ringx_call_serve(ringx_call_t *c);

/* The choice of a nonblocking or persistent call and its schedule built:
 * message-based algorithms, or on one node direct reads of the peers'
 * buffers for large nonblocking calls; build_declined: again without
 * direct reads, when they declined the call (RINGX_DIRECT_DECLINED from its
 * schedule; the same on every rank).  ringx_call_count counts and logs
 * the choice (a persistent call: at every start; direct reads: once they
 * have served the call). */
int ringx_call_build(ringx_call_t *c);
int ringx_call_build_declined(ringx_call_t *c);
void ringx_call_count(const ringx_call_t *c);

/* ------------------------------------------------------------- requests */

/*
 * A nonblocking call (coll_ringx_request.c): an Open MPI request that
 * carries its call, with scratch of its own, so that several calls can be
 * under way on one communicator.  Started requests are advanced by Open
 * MPI's progress engine (and by ringx's own waits) until they complete.
 */
/* The call's own arguments, for the previous component: at once, when
 * ringx does not serve the call, or should the communicator's connection
 * (which the call waited for) fail. */
typedef struct ringx_request_args ringx_request_args_t;
struct ringx_request_args {
    const void *sbuf;
    void *rbuf;
    int scount, rcount;
    struct ompi_datatype_t *sdtype, *rdtype;
    struct ompi_op_t *op;
    /* the previous component's nonblocking form, or its persistent one */
    int (*hand_on)(const ringx_request_args_t *a, mca_coll_ringx_module_t *m,
                   struct ompi_communicator_t *comm, int persistent, struct ompi_info_t *info,
                   ompi_request_t **request);
};

struct ringx_request {
    /* Open MPI's bindings take every nonblocking collective's request for
     * one of these, and keep derived datatypes and user ops in it until
     * the call completes (ompi_coll_base_retain_datatypes). */
    ringx_nbc_request_head_t super;
    mca_coll_ringx_module_t *module;
    struct ompi_communicator_t *comm;
    ringx_scratch_set_t scratch;
    struct ringx_request *next;     /* in the list of requests under way */
    struct ringx_request *next_deferred;   /* waiting for the connection, in call order */
    int status;                     /* the call's outcome, once complete */
    int mpi_error;
    ringx_request_args_t args;
    int retained;                   /* args' datatypes and op retained */
    ompi_request_t *prev;           /* the previous component's request, if handed on */
    ringx_call_t call;
};

OBJ_CLASS_DECLARATION(ringx_request_t);

/* A fresh request for a call on m (a persistent one: MPI_..._init), or
 * NULL (also when m is NULL). */
ringx_request_t *ringx_request_new(mca_coll_ringx_module_t *m, int persistent);

/*
 * A nonblocking or persistent call (persistent: its init), whose buffers
 * were classified into req (buffers: RINGX_SERVE or the fallback reason;
 * req NULL: out of memory): admitted, then started (nonblocking) or made
 * ready to start (persistent: the choice, schedule and scratch made once),
 * or handed on through args.  Sets *request.  m NULL (no ringx module on
 * comm, ringx_module_of): OMPI_ERR_NOT_FOUND.
 */
int ringx_request_serve(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm,
                        ringx_coll_t coll, int buffers, ringx_request_t *req, int persistent,
                        const ringx_request_args_t *args, struct ompi_info_t *info,
                        ompi_request_t **request);


/* Has ringx's progress advance m's connection until it is over; begins
 * the calls that waited for it once it is over. */
void ringx_requests_watch(mca_coll_ringx_module_t *m);
void ringx_requests_connected(mca_coll_ringx_module_t *m);

/* After a call whose messages may still be inside UCX (coll_ringx_ucx.h,
 * ringx_ucx_flush_behind): has Open MPI's progress engine drive the worker
 * until they have left. */
void ringx_requests_flush_behind(void);

/* Drops ringx's progress callback (component close). */
void ringx_requests_close(void);

/* ---------------------------------------------------------------- nodes */

/* Which node each rank of m is on, as this rank sees it (before the
 * connection's agreement; returns a hash of it, 0 where nothing was laid
 * out: one node), then the layout kept or dropped once every rank's hash
 * is known (agreed: all the same), logged and counted; release frees it
 * (module destruction). */
int ringx_nodes_observe(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm);

/* Whether a rank of comm is on this rank's node, by Open MPI's locality. */
int ringx_nodes_on_my_node(struct ompi_communicator_t *comm, int rank);
void ringx_nodes_agreed(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm, int agreed);
void ringx_nodes_release(mca_coll_ringx_module_t *m);

/* The same from the nodes of m's ranks as the job's facts give them
 * (coll_ringx_job.c: node_key[r], the same number for ranks on the same
 * node), which every rank holds alike: no agreement. */
void ringx_nodes_from_keys(mca_coll_ringx_module_t *m, const int *node_key);

/* ------------------------------------------------------------------ job */

/* What each process tells MPI_COMM_WORLD's connection of itself, for the
 * communicators that connect later without a message (coll_ringx_job.c). */
typedef struct ringx_job_record {
    uint32_t node_leader;       /* the lowest rank of MPI_COMM_WORLD on its node */
    uint32_t crowded;           /* it yields while waiting */
} ringx_job_record_t;

/* What the job's facts say of a communicator's members. */
typedef struct ringx_job_view {
    int crowded;                /* every member yields while waiting */
    int single_copy;            /* single copies between every two processes of a node */
    int node_ranks_min, node_ranks_max;
} ringx_job_view_t;

int ringx_job_is_world(const struct ompi_communicator_t *comm);
void ringx_job_record_mine(struct ompi_communicator_t *comm, ringx_job_record_t *mine);

/* On MPI_COMM_WORLD, once its peers are learnt (windows by rank: mapped
 * here or NULL; records by rank): whether the records hold here (windows
 * of this node mapped, the same nodes by Open MPI's locality), and whether
 * this process reads every other of its node with single copies.  The
 * records are kept (taken over: malloc'd) only if they hold everywhere. */
int ringx_job_holds_here(const mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm,
                         char *const *windows, const ringx_job_record_t *records);
int ringx_job_single_copy_here(const mca_coll_ringx_module_t *m,
                               struct ompi_communicator_t *comm);
void ringx_job_keep(struct ompi_communicator_t *comm, ringx_job_record_t *records,
                    int single_copy);
void ringx_job_release(void);

/* Whether the job's facts cover every member of comm; then ringx_job_view
 * fills m->peers, windows and node_key (by rank) from them, and *v with
 * the rest. */
int ringx_job_covers(struct ompi_communicator_t *comm);
int ringx_job_view(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm,
                   char **windows, int *node_key, ringx_job_view_t *v);

/* Where m's ranks are, for the choice of algorithm: direct reads where
 * they may serve the call (direct_ok and one node), the hierarchical
 * algorithms where the nodes are laid out for them. */
int ringx_layout_of(const mca_coll_ringx_module_t *m, int direct_ok);

/* Some of the communicator's ranks running a log(p) schedule among
 * themselves: this rank is member `rank` of `size`, and member i is
 * communicator rank ranks[i] (ranks NULL: i itself). */
typedef struct ringx_group {
    int rank, size;
    const int *ranks;
} ringx_group_t;

/* Recursive doubling of bytes among the group, folded where its size is
 * not a power of two: ringx_doubling_steps(size) steps (coll_ringx_allreduce.c). */
void ringx_allreduce_doubling(ringx_xsched_t *s, const ringx_group_t *g, const char *input,
                              char *result, size_t bytes);

/* The hierarchical algorithms' builders (coll_ringx_hierarchical.c). */
/* Hierarchical calls up to this many bytes (the whole buffer) per rank of
 * a node go through the node leaders, by default (coll_ringx_<coll>_leaders_bytes). */
size_t ringx_hier_leaders_default(ringx_coll_t coll);
int ringx_hier_build_allreduce(ringx_call_t *c, ringx_alg_t alg);
int ringx_hier_build_allgather(ringx_call_t *c, ringx_alg_t alg);
int ringx_hier_build_reduce_scatter_block(ringx_call_t *c, ringx_alg_t alg);

/* ------------------------------------------------------------ mailboxes */

/* The window each process needs for coll_ringx_mailbox_bytes (0: none). */
size_t ringx_mailbox_window_bytes(void);

/* The mailboxes are agreed in one MIN reduction over this many ints:
 * this rank's part (from the peers' windows mapped here, by rank; NULL
 * where not mapped; windows NULL: none), then, with the reduced values,
 * m's mailboxes set up or left off (coll_ringx_connect.c).  The same
 * reduction agrees on the node layout (m->node_ranks_min/max): direct
 * reads need every rank on one node by Open MPI's locality, whatever UCX
 * can map (network namespaces on one machine share memory), and mailboxes
 * link only ranks on one node. */
enum ringx_mailbox_agree {
    RINGX_MB_USABLE,            /* this rank can use mailboxes on m */
    RINGX_MB_BYTES,             /* coll_ringx_mailbox_bytes, and negated: their MAX */
    RINGX_MB_BYTES_NEG,
    RINGX_MB_SINGLE_COPY,       /* single copies to every peer */
    RINGX_MB_DIRECT,            /* by collective: where its nonblocking calls read the buffers */
    RINGX_MB_DIRECT_END = RINGX_MB_DIRECT + RINGX_COLL_COUNT - 1,
    RINGX_MB_BLOCKING_DIRECT,   /* ... and its blocking ones */
    RINGX_MB_BLOCKING_DIRECT_END = RINGX_MB_BLOCKING_DIRECT + RINGX_COLL_COUNT - 1,
    RINGX_MB_NODE_MIN,          /* the ranks on this rank's node, and negated: their MAX */
    RINGX_MB_NODE_MAX_NEG,
    RINGX_MB_OUTBOX,            /* coll_ringx_outbox_bytes as laid out, and negated: their MAX */
    RINGX_MB_OUTBOX_NEG,
    RINGX_MAILBOX_AGREE_INTS
};
/* Whether the ranks' settings that lay out the regions are the same. */
int ringx_mailbox_settings_agree(const int global[RINGX_MAILBOX_AGREE_INTS]);
void ringx_mailbox_agree_local(mca_coll_ringx_module_t *m, char *const *windows, int crowded,
                               int local[RINGX_MAILBOX_AGREE_INTS]);
int ringx_mailbox_connect(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm,
                          char *const *windows, const int global[RINGX_MAILBOX_AGREE_INTS]);
void ringx_mailbox_disconnect(mca_coll_ringx_module_t *m);

/* The transport of the messages to each peer (m->via), chosen once the
 * mailboxes are connected or not; released with the module's state. */
int ringx_links_choose(mca_coll_ringx_module_t *m);
void ringx_links_release(mca_coll_ringx_module_t *m);

/*
 * A region is cleared by its owner when its communicator connects, and
 * then stamped (its last word) with a number that every member computes
 * alike for that communicator and that no earlier user of the region had:
 * a hash of the context id and the members, and how many communicators of
 * that id and those members this process connected before.  A peer
 * neither reads nor writes a region before it has seen the stamp, so no
 * rank takes a flag that a freed communicator left there, or writes to a
 * region its owner then clears.  No agreement orders the clearing before
 * the peers' first access, so a communicator can connect without a
 * message (coll_ringx_job.c).  ringx_mailbox_connect stamps the region;
 * ringx_mailbox_close frees the counts (component close).
 */
void ringx_mailbox_close(void);

/* Whether rank's region carries this communicator's stamp yet. */
int ringx_mailbox_stamped(mca_coll_ringx_module_t *m, int rank);

/* The last word of a region's head: its stamp; the word before it, how
 * many of the communicator's numbered calls its owner has finished. */
#define RINGX_REGION_STAMP_OFFSET (RINGX_DIRECT_RECORD_BYTES - sizeof(uint64_t))
#define RINGX_REGION_CALLS_OFFSET (RINGX_REGION_STAMP_OFFSET - sizeof(uint64_t))

/* After every blocking call: tells the peers how many numbered calls this
 * rank has finished, so that a peer freeing the communicator knows when
 * this rank no longer reads its region (ringx_mailbox_disconnect). */
void ringx_mailbox_calls_over(mca_coll_ringx_module_t *m);

/* Writes len bytes of buf into rank to's slot for (seq, step). */
int ringx_mailbox_put(mca_coll_ringx_module_t *m, ringx_mem_t *mem, int to, uint32_t seq,
                      int step, const void *buf, size_t len);

/* The number of the next call that uses mailboxes or outboxes (the slots'
 * parity and flags): blocking calls only, in the same order on every rank. */
uint32_t ringx_mailbox_next_call(mca_coll_ringx_module_t *m);

/* The data of (seq, step) in this rank's slot once it is there (host
 * memory, valid until the call returns), else NULL. */
const char *ringx_mailbox_arrived(mca_coll_ringx_module_t *m, uint32_t seq, int step);

/* Copies received data into dst, in the call's memory. */
int ringx_mailbox_take(ringx_mem_t *mem, void *dst, const char *data, size_t len);


/*
 * Outboxes: a host buffer in a rank's own region that the rank fills and
 * every peer copies from, with a flag per part (the input, then
 * allreduce's share of the result), for the calls on one node that pass
 * through them (coll_ringx_osched.c).  Two kinds (posted: 0 or 1):
 *
 *   blocking  two, one per call parity, as large as the mailbox slots of
 *             a parity together (ringx_outbox_bytes), numbered by
 *             ringx_mailbox_next_call: rewritten only two calls later,
 *             when every rank has read it, as the mailbox slots are;
 *   posted    for nonblocking and persistent calls, which may still be
 *             under way when later ones start: RINGX_POSTED_SLOTS per
 *             communicator (RINGX_POSTED_BYTES each), taken in turn by
 *             the calls that go through them, numbered alike on every
 *             rank (MPI starts a communicator's collectives in the same
 *             order on every rank); after reading every peer's, a rank
 *             acknowledges the call in its own region, and an owner
 *             refills a slot only once every rank has acknowledged the
 *             call that used it before.
 *
 * Outboxes hold host data: a rank whose buffers are in device memory (or
 * staged) declines, without copying, and every rank sees it in that
 * rank's flag and takes the call to another algorithm before writing
 * anything the caller sees: the device path keeps its kernels.  A failed
 * copy is published too, so that no peer waits for ever.  Nothing here
 * waits: each answers at once.
 */
typedef enum ringx_outbox_part {
    RINGX_OUTBOX_INPUT,         /* the owner's input, copied in */
    RINGX_OUTBOX_RESULT,        /* the owner's share of the result */
    RINGX_OUTBOX_PARTS
} ringx_outbox_part_t;

/* The data bytes of an outbox (0: none). */
size_t ringx_outbox_bytes(const mca_coll_ringx_module_t *m, int posted);
/* Whether this rank's data of a call can go through its outbox. */
int ringx_outbox_holds(const ringx_mem_t *mem);
/* The data of rank's outbox for call n. */
char *ringx_outbox_data(const mca_coll_ringx_module_t *m, int posted, int rank, uint64_t n);
/* Whether this rank may fill its outbox for call n. */
int ringx_outbox_free(mca_coll_ringx_module_t *m, int posted, uint64_t n);
/* After this rank stored a flag its peers may wait for: wakes those of
 * them that sleep (coll_ringx_bell.c).  Every flag store in the regions
 * is followed by this. */
void ringx_mailbox_ring(const mca_coll_ringx_module_t *m);

/* Publishes a part of this rank's outbox for call n; status: OMPI_SUCCESS
 * where it went in, RINGX_DIRECT_DECLINED where this rank's memory does
 * not go through outboxes (ringx_outbox_holds), an error where it failed. */
void ringx_outbox_publish(mca_coll_ringx_module_t *m, int posted, uint64_t n,
                          ringx_outbox_part_t part, int status);
/* Whether that part of rank's outbox for call n is in: RINGX_DONE,
 * RINGX_PENDING (not yet), or what its owner published instead
 * (RINGX_DIRECT_DECLINED, OMPI_ERROR). */
int ringx_outbox_arrived(mca_coll_ringx_module_t *m, int posted, int rank, uint64_t n,
                         ringx_outbox_part_t part);
/* This rank has read every peer's outbox of call n. */
void ringx_outbox_done(mca_coll_ringx_module_t *m, int posted, uint64_t n);

/* ------------------------------------------------------- direct reads */

/* Each communicator's region starts with its owner's exposure record
 * (coll_ringx_direct.c); the mailbox slots follow. */
#define RINGX_DIRECT_RECORD_BYTES 384

/* Whether all ranks of m share one node (as the connection agreed). */
static inline int ringx_one_node(const mca_coll_ringx_module_t *m)
{
    return m->node_ranks_min == m->size;
}

/* Whether the ranks of m can read each other's buffers directly: they all
 * mapped each other's windows (one node). */
static inline int ringx_direct_possible(const mca_coll_ringx_module_t *m)
{
    return m->mailbox.local != NULL && ringx_one_node(m);
}

/* Whether this rank can read every peer of m with single copies (UCX's
 * cma transport); every rank must read the same way, which each call's
 * records check. */
int ringx_direct_single_copy(const mca_coll_ringx_module_t *m);

/* Whether direct reads of a blocking (or else nonblocking) call of bytes
 * (the whole buffer: reduced, gathered, or reduce_scatter_block's input)
 * read the peers' buffers rather than pass through the outboxes; the same
 * answer on every rank. */
static inline int ringx_direct_from_buffers(const mca_coll_ringx_module_t *m, ringx_coll_t coll,
                                            size_t bytes, int blocking)
{
    size_t from = m->mailbox.buffers_from[blocking != 0][coll];
    return from > 0 && bytes >= from;
}

/* A call's direct reads (ringx_direct_t, coll_ringx_sched.h), one at a
 * time per communicator, in call order: each takes a number when it
 * begins and publishes its record only when every earlier one is over
 * here (its turn), since the record of a call is rewritten by the next.
 * Nothing here waits: a call polls until the step is possible.
 *
 *   prepare      what the calls need allocated; keep: a persistent
 *                call's, whose exposure and keys serve every start
 *   begin        takes the call's number
 *   my_turn      1 once every earlier direct call of m is over here
 *   publish      lets the peers read len bytes at buf (and len2 at buf2,
 *                single copies only), if this rank can; writes the record
 *   records_in   1 once every peer's record of the call is there
 *   open         learns the peers' buffers: OMPI_SUCCESS, or
 *                RINGX_DIRECT_DECLINED when some rank could not expose
 *                (the same answer on every rank), or an error; in every
 *                case finish_reads, drained and end are still due: a
 *                declined call reads nothing, but a rank that ended it at
 *                once could rewrite its record for its next direct call
 *                before a peer had seen this one's (many nonblocking calls
 *                outstanding), and that peer would wait for ever
 *   read         a read of len bytes at offset in rank's (first or
 *                second) buffer into dst; wait for it (single copies are
 *                done at once)
 *   signal       tells every peer something within the call (allreduce:
 *                "my share is ready"), with a status; signal_in: 1 once
 *                rank's is there, 0 before, OMPI_ERROR for a failed one
 *   finish_reads waits for this rank's reads and tells every peer
 *   drained      1 once every peer has finished reading this rank's
 *                buffers, which must stay untouched until then
 *   end          releases the call's registrations and keys (unless
 *                kept); the next call's turn
 *   release      releases what prepare and kept calls hold
 */
void ringx_direct_prepare(ringx_direct_t *d, mca_coll_ringx_module_t *m, ringx_mem_t *mem,
                          int keep);
void ringx_direct_begin(ringx_direct_t *d);
void ringx_direct_release(ringx_direct_t *d);
int ringx_direct_my_turn(const ringx_direct_t *d);
void ringx_direct_publish(ringx_direct_t *d, const void *buf, size_t len, const void *buf2,
                          size_t len2);
int ringx_direct_records_in(const ringx_direct_t *d);
int ringx_direct_open(ringx_direct_t *d);
int ringx_direct_read(ringx_direct_t *d, int rank, void *dst, size_t offset, size_t len);
int ringx_direct_read_second(ringx_direct_t *d, int rank, void *dst, size_t offset, size_t len);
int ringx_direct_wait(ringx_direct_t *d, int rank);
void ringx_direct_signal(ringx_direct_t *d, int rc);
int ringx_direct_signal_in(const ringx_direct_t *d, int rank);
int ringx_direct_finish_reads(ringx_direct_t *d, int rc);
int ringx_direct_drained(const ringx_direct_t *d);
void ringx_direct_end(ringx_direct_t *d);

/* Reads bytes at offset of every peer's buffer and reduces them with own
 * into acc (may be own), a segment (seg bytes, in scratch at segment) at
 * a time so that the partial result stays in cache. */
int ringx_direct_read_reduce(ringx_direct_t *d, size_t offset, const char *own, char *acc,
                             char *segment, size_t seg, size_t bytes, ringx_reduction_t red);

/* Direct reads out of the peers' buffers as a schedule (engine
 * RINGX_ENGINE_DIRECT, coll_ringx_dsched.c) for c: its buffers and
 * collective (the builder of algorithm direct_read). */
int ringx_dsched_build(ringx_call_t *c, ringx_alg_t alg);

/* Whether c, a call on one node, fits the outboxes (the blocking ones, or
 * the posted ones for a nonblocking or persistent call); if so, their
 * schedule for it (engine RINGX_ENGINE_OUTBOX, coll_ringx_osched.c). */
int ringx_osched_fits(const ringx_call_t *c);
int ringx_osched_build(ringx_call_t *c);

/* The builder of algorithm direct_read: the outboxes where the call fits
 * them and does not read the peers' buffers, else direct reads out of the
 * buffers (coll_ringx_call.c). */
int ringx_direct_build(ringx_call_t *c, ringx_alg_t alg);

/* ------------------------------------------------------- collectives */

int mca_coll_ringx_allreduce(const void *sbuf, void *rbuf, int count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module);

int mca_coll_ringx_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module);

int mca_coll_ringx_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                        struct ompi_datatype_t *dtype,
                                        struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        mca_coll_base_module_t *module);

int mca_coll_ringx_iallreduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module);

int mca_coll_ringx_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                              void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module);

int mca_coll_ringx_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm,
                                         ompi_request_t **request,
                                         mca_coll_base_module_t *module);

int mca_coll_ringx_allreduce_init(const void *sbuf, void *rbuf, int count,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                  ompi_request_t **request, mca_coll_base_module_t *module);

int mca_coll_ringx_allgather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                  void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                  struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                  ompi_request_t **request, mca_coll_base_module_t *module);

int mca_coll_ringx_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount,
                                             struct ompi_datatype_t *dtype,
                                             struct ompi_op_t *op,
                                             struct ompi_communicator_t *comm,
                                             struct ompi_info_t *info, ompi_request_t **request,
                                             mca_coll_base_module_t *module);

END_C_DECLS

#include "ringx_schedule.h"

static inline size_t ringx_block_bytes_offset(const ringx_ring_t *ring, int block)
{
    return ringx_block_offset(ring->count, ring->module->size, block) * ring->elem_size;
}

#endif /* MCA_COLL_RINGX_H */
