/*
 * coll_ringx_sched.h - resumable schedules: what one call does, kept as
 * state that a progress function advances a little at a time, never
 * waiting.
 *
 * A schedule runs one engine, the pipelined ring walk (coll_ringx_ring.c)
 * or a list of exchange steps (coll_ringx_exchange.c), and then the local
 * copies the collective still owes (ringx_sched_t).  Each engine ends with
 * the same end-of-call handshake (coll_ringx_handshake.c).  Every progress
 * function returns RINGX_DONE, RINGX_PENDING (call it again once UCX or
 * the copies have moved on) or an OMPI error code.  A blocking collective
 * starts its schedule and waits for it (ringx_sched_wait); a nonblocking
 * one starts it and leaves the rest to Open MPI's progress engine
 * (coll_ringx_request.c).
 *
 * Schedules live inside their call (on the stack of a blocking call, in
 * the request of a nonblocking one) and hold pointers into it: a schedule
 * is never copied once built.
 */
#ifndef MCA_COLL_RINGX_SCHED_H
#define MCA_COLL_RINGX_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "ringx_ops.h"
#include "coll_ringx_decision.h"
#include "coll_ringx_mem.h"

struct mca_coll_ringx_module_t;

#define RINGX_PENDING 0
#define RINGX_DONE 1

/* Receives in flight per walk: a fixed bound keeps per-call state inside
 * the call instead of the heap. */
#define RINGX_MAX_PIPELINE_DEPTH 16

/* A reduction ringx performs itself. */
typedef struct ringx_reduction {
    ringx_type_t type;
    ringx_op_t op;
} ringx_reduction_t;

/* What the schedules of a gather take: nothing is reduced. */
#define RINGX_NO_REDUCTION ((ringx_reduction_t){ RINGX_TYPE_BYTE, RINGX_OP_BOR })

/* ------------------------------------------------------------ handshake */

/*
 * The end of a call whose sends may outlive their receivers' interest: a
 * send can stay incomplete inside UCX after its receiver has all the data
 * (the last step of a rendezvous may wait for the receiver's UCX to
 * progress, and a receiver that has gone back to the application may not
 * progress ringx's worker for a long time).  So each rank says "fin" to
 * every rank it received from; a rank whose sends are still pending waits
 * for the fin of every rank it sent to instead of for UCX, and then lets
 * its sends finish inside UCX.  When every send has already completed, the
 * fins are left to arrive on their own (the module keeps the receives).
 */
#define RINGX_HANDSHAKE_MAX_PEERS 72

typedef struct ringx_handshake {
    int phase;
    int nto, nfrom;
    int to[RINGX_HANDSHAKE_MAX_PEERS];      /* ranks this one sent to */
    int from[RINGX_HANDSHAKE_MAX_PEERS];    /* ranks this one received from */
    ringx_xfer_t fin_send[RINGX_HANDSHAKE_MAX_PEERS];
    ringx_xfer_t fin_recv[RINGX_HANDSHAKE_MAX_PEERS];
} ringx_handshake_t;

/* The sends of the engine that the handshake waits for or lets go. */
typedef struct ringx_handshake_sends {
    int (*complete)(void *engine);          /* 1 all done, 0 some pending, < 0 error */
    void (*release)(void *engine);          /* leaves the pending ones to UCX */
    void *engine;
} ringx_handshake_sends_t;

/* Adds a peer to the ranks sent to (to = 1) or received from, once. */
void ringx_handshake_add(ringx_handshake_t *h, int to, int rank);
int ringx_handshake_progress(ringx_handshake_t *h, struct mca_coll_ringx_module_t *m,
                             ringx_mem_t *mem, uint32_t seq,
                             const ringx_handshake_sends_t *sends);
void ringx_handshake_abandon(ringx_handshake_t *h);

/* ------------------------------------------------------ exchange steps */

/*
 * The log(p) algorithms are lists of exchange steps (coll_ringx_exchange.c):
 * each step sends send_bytes from send_buf to send_to and receives
 * recv_bytes from recv_from, either straight into recv_buf or, when
 * recv_buf is NULL, into scratch reduced as reduce_dst = reduce_local op
 * received (received op reduce_local where received_first is set).  A
 * peer of -1 (or 0 bytes) means no send or no receive.
 */
/* Steps a schedule holds itself: the log(p) algorithms' (twice log2 of
 * any int rank count, plus the folds); longer ones (the hierarchical
 * rings, p - 1 steps, and the node leaders' trees on large nodes) reserve
 * room in the call's host scratch first (ringx_xsched_room). */
#define RINGX_XSCHED_INLINE_STEPS 72

typedef struct ringx_xstep {
    int send_to;
    const char *send_buf;
    size_t send_bytes;
    int recv_from;
    char *recv_buf;
    char *reduce_dst;
    const char *reduce_local;
    size_t recv_bytes;
    int received_first;         /* the received operand comes first in the reduction */
    int sent;                   /* its send has left, ahead of the step (cleared at start) */
} ringx_xstep_t;

typedef struct ringx_pending_send {
    ringx_xfer_t req;
    const char *buf;
    size_t len;
} ringx_pending_send_t;

/*
 * A call's messages (coll_ringx_link.c): what an engine sends to a peer or
 * receives from one at a numbered step, over the transport chosen for that
 * peer when the communicator connected (mca_coll_ringx_module_t.via): the
 * mailboxes, where the ranks share a node and the message fits a slot,
 * else UCX tagged messages in segments, `depth` receives posted ahead and
 * a received segment reduced while the next travels.  The engine above
 * only orders its steps: before a receive writes a region, the sends still
 * reading it finish first, here.  The call ends with the end-of-call
 * handshake (ringx_msgs_finish).
 */
typedef struct ringx_msgs {
    struct mca_coll_ringx_module_t *module;
    ringx_mem_t *mem;
    ringx_reduction_t red;
    size_t elem_size;
    int mailboxes;              /* the call may use the mailboxes (blocking calls) */
    size_t seg_bytes;
    int depth;
    char *slots;                /* [depth] scratch segments */
    uint32_t seq;               /* message tags */
    uint32_t mailbox_seq;       /* mailbox slots (mailboxes only) */
    size_t posted, done;        /* the receive under way: its segments */
    ringx_xfer_t recv_req[RINGX_MAX_PIPELINE_DEPTH];
    ringx_pending_send_t *sends;      /* inline_sends until more are needed */
    size_t nsends, cap_sends;
    ringx_pending_send_t inline_sends[16];
    ringx_pending_send_t *heap_sends;   /* kept from one start to the next */
    size_t heap_sends_count;
    int mailbox_used;
    size_t bytes_sent;
    ringx_handshake_t handshake;
} ringx_msgs_t;

void ringx_msgs_init(ringx_msgs_t *x, struct mca_coll_ringx_module_t *m, ringx_mem_t *mem,
                     ringx_reduction_t red, size_t elem_size);
/* Segment size, depth and, if some receive reduces, scratch; then how many
 * segments a send of bytes takes, and room for sends pending at once. */
int ringx_msgs_prepare(ringx_msgs_t *x, int reduces);
size_t ringx_msgs_segments(const ringx_msgs_t *x, size_t bytes);
int ringx_msgs_reserve(ringx_msgs_t *x, size_t sends);
void ringx_msgs_start(ringx_msgs_t *x, uint32_t seq);
/* Sends bytes of buf to rank `to` as step's message (to < 0: none). */
int ringx_msgs_send(ringx_msgs_t *x, int step, int to, const char *buf, size_t bytes);
/* Receives step's message from rank `from` into dst, or with local, as
 * dst = local op received (received op local if received_first);
 * RINGX_DONE once it is all there.  ringx_msgs_next_recv starts the next
 * receive. */
int ringx_msgs_recv(ringx_msgs_t *x, int step, int from, char *dst, const char *local,
                    size_t bytes, int received_first);
void ringx_msgs_next_recv(ringx_msgs_t *x);
/* The end of the call: every send complete, after the handshake where a
 * message of total_bytes (the call's whole buffer) could be left in UCX. */
int ringx_msgs_finish(ringx_msgs_t *x, size_t total_bytes);
void ringx_msgs_abandon(ringx_msgs_t *x);
void ringx_msgs_release(ringx_msgs_t *x);

/* One segment at a time, for an engine that paces segments itself (the
 * ring walk), over UCX: segment seg of step's message.  Receive n (the
 * engine's count) takes receive slot n % depth and, to be reduced, scratch
 * segment n % depth; the engine keeps at most depth of them in flight. */
int ringx_msgs_send_segment(ringx_msgs_t *x, int step, size_t seg, int to, const char *buf,
                            size_t len);
int ringx_msgs_post_recv(ringx_msgs_t *x, int step, size_t seg, size_t n, char *dst, size_t len);
/* 1 once receive n has arrived, 0 if not yet, or an error. */
int ringx_msgs_test_recv(ringx_msgs_t *x, size_t n);
char *ringx_msgs_scratch(const ringx_msgs_t *x, size_t n);
/* 1 if no pending send reads [buf, +len) (completed sends are forgotten),
 * 0 if one does, or an error. */
int ringx_msgs_writable(ringx_msgs_t *x, const char *buf, size_t len);
/* 1 if one more send fits the room reserved, 0 until some send completes,
 * or an error. */
int ringx_msgs_send_room(ringx_msgs_t *x);

/* --------------------------------------------------------------- ring */

/*
 * One ring walk (see ringx_schedule.h): nsteps steps over the p blocks of
 * count elements; the first reduce_steps steps receive into scratch slots
 * and reduce, the rest receive straight into place.  The collective says
 * where each block is read from and written to.  The walk paces segments
 * itself; its messages go through a ringx_msgs_t, segment by segment.
 */
typedef struct ringx_ring ringx_ring_t;

typedef struct ringx_ring_recv_target {
    char *direct;              /* receive straight here, or NULL to reduce: */
    char *reduce_dst;          /*   reduce_dst = reduce_local op received */
    const char *reduce_local;
} ringx_ring_recv_target_t;

typedef struct ringx_ring_cursor {
    int step;
    size_t seg;
} ringx_ring_cursor_t;

/* The walk's running state (coll_ringx_ring.c). */
typedef struct ringx_ring_walk {
    int phase;
    int right;                  /* the rank this one sends to */
    size_t seg_elems;           /* of the call's messages (ring->msgs.seg_bytes) */
    ringx_ring_cursor_t next_post;
    ringx_ring_cursor_t next_done;
    size_t posted;              /* receives posted, in the walk's order */
    size_t done;                /* receives finished */
} ringx_ring_walk_t;

struct ringx_ring {
    struct mca_coll_ringx_module_t *module;
    ringx_mem_t *mem;
    int nsteps;
    int reduce_steps;
    int shift;
    size_t count;              /* elements in all p blocks together */
    size_t elem_size;
    ringx_reduction_t red;
    void *ctx;                 /* the collective's own state */
    const char *(*send_block)(const ringx_ring_t *ring, int step, int block);
    void (*recv_block)(const ringx_ring_t *ring, int step, int block,
                       ringx_ring_recv_target_t *target);
    ringx_msgs_t msgs;         /* set up by the first prepare, kept from one start to the next */
    ringx_ring_walk_t walk;
};

/* Prepare: what the walk needs allocated (before the first start, or by
 * it); start: the walk's first transfers.  Release frees what prepare
 * allocated. */
int ringx_ring_prepare(ringx_ring_t *ring);
int ringx_ring_start(ringx_ring_t *ring, uint32_t seq);
int ringx_ring_progress(ringx_ring_t *ring);
void ringx_ring_abandon(ringx_ring_t *ring);
void ringx_ring_release(ringx_ring_t *ring);

/* The steps' running state (coll_ringx_exchange.c). */
typedef struct ringx_exchange {
    int phase;
    int step;                   /* the step under way */
} ringx_exchange_t;

typedef struct ringx_xsched {
    struct mca_coll_ringx_module_t *module;
    ringx_mem_t *mem;
    ringx_coll_t coll;
    size_t elem_size;
    size_t total_bytes;        /* the call's whole buffer: same on every rank */
    int nsteps, cap_steps;
    int overflow;               /* a step beyond cap_steps was dropped: the build is wrong */
    ringx_xstep_t *steps;       /* inline_steps, or room in the host scratch */
    ringx_xstep_t inline_steps[RINGX_XSCHED_INLINE_STEPS];
    char *copy_dst;            /* a local copy made once step 0 is under way */
    const char *copy_src;
    size_t copy_bytes;
    ringx_msgs_t msgs;
    ringx_exchange_t x;
    int sent_ahead;             /* some step's send left ahead of its step (counted) */
} ringx_xsched_t;

/* Starts an empty schedule (only the header is set: the step array is
 * large and filled step by step). */
void ringx_xsched_init(ringx_xsched_t *s, struct mca_coll_ringx_module_t *m, ringx_mem_t *mem,
                       ringx_coll_t coll, ringx_reduction_t red, size_t elem_size,
                       size_t total_bytes);

/* Room for nsteps steps (the schedule holds RINGX_XSCHED_INLINE_STEPS
 * itself), from the call's host scratch set; an error if out of memory. */
int ringx_xsched_room(ringx_xsched_t *s, ringx_scratch_set_t *set, int nsteps);

/* Appends a step that only sends, only receives, or both. */
void ringx_xsched_send(ringx_xsched_t *s, int to, const char *buf, size_t bytes);
void ringx_xsched_recv(ringx_xsched_t *s, int from, char *buf, size_t bytes);
void ringx_xsched_reduce(ringx_xsched_t *s, int from, char *dst, const char *local,
                         size_t bytes);
/* Appends an empty step.  Steps are numbered alike on every rank (the
 * number is part of the message tags), so a rank with nothing to do at a
 * step still takes it. */
void ringx_xsched_skip(ringx_xsched_t *s);
void ringx_xsched_skip_steps(ringx_xsched_t *s, int nsteps);
/* Adds a send to the last step (the two halves of one exchange). */
void ringx_xsched_also_send(ringx_xsched_t *s, int to, const char *buf, size_t bytes);
/* The last step's reduction takes the received operand first. */
void ringx_xsched_received_first(ringx_xsched_t *s);

/* A copy within this rank's memory that no transfer of step 0 touches (an
 * allgather's own block): made while step 0's messages travel, instead of
 * before them. */
void ringx_xsched_local_copy(ringx_xsched_t *s, char *dst, const char *src, size_t bytes);

int ringx_xsched_prepare(ringx_xsched_t *s);
int ringx_xsched_start(ringx_xsched_t *s, uint32_t seq);
int ringx_xsched_progress(ringx_xsched_t *s);
void ringx_xsched_abandon(ringx_xsched_t *s);
void ringx_xsched_release(ringx_xsched_t *s);

/* -------------------------------------------------------- direct reads */

/* One call's direct reads (coll_ringx_direct.c; its steps: coll_ringx.h). */
typedef struct ringx_direct {
    struct mca_coll_ringx_module_t *m;
    ringx_mem_t *mem;
    uint32_t seq;               /* among the direct calls of the communicator */
    int open;                   /* reads allowed; finish_reads and end pending */
    int two;                    /* a second buffer exposed */
    int keep;                   /* a persistent call's: exposure and keys kept between starts */
    int exposed;                /* kept: the buffers exposed (readable says whether it worked) */
    int readable;
    unsigned idle;
    ringx_exposed_t own, own2;
    void **rkeys, **rkeys2;     /* by rank: its keys, unpacked here */
    uint64_t *remote, *remote2; /* by rank: its exposed buffers */
    ringx_req_t *reqs;          /* by rank: the read from it */
} ringx_direct_t;

/* A collective as direct reads out of the peers' buffers
 * (coll_ringx_dsched.c). */
typedef struct ringx_dsched {
    struct mca_coll_ringx_module_t *module;
    ringx_mem_t *mem;
    ringx_coll_t coll;
    ringx_reduction_t red;
    const char *input;          /* allreduce, reduce_scatter_block: all of it; allgather: own block */
    char *result;
    int in_place;
    int persistent;             /* prepared once, started again and again */
    size_t count;               /* allreduce: elements; the others: per rank */
    size_t elem_size;
    int phase;
    int rc;                     /* the first error; the call still ends with its peers */
    int declined;               /* some rank could not expose: no reads, then chosen again */
    int gathered;               /* allreduce: peers' shares read so far */
    char *acc;                  /* reduce_scatter_block in place: the result, copied last */
    char *segment;
    size_t seg;
    size_t bytes_sent;
    ringx_direct_t d;
} ringx_dsched_t;

/* What direct reads answer, on every rank alike, when some rank cannot
 * take part (their records, the outboxes' flags); the call then chooses
 * again without them.  Also a progress function's answer, so it differs
 * from RINGX_PENDING and RINGX_DONE. */
#define RINGX_DIRECT_DECLINED 2

int ringx_dsched_prepare(ringx_dsched_t *s);
int ringx_dsched_start(ringx_dsched_t *s);
int ringx_dsched_progress(ringx_dsched_t *s);
void ringx_dsched_release(ringx_dsched_t *s);

/* ------------------------------------------------------------ outboxes */

/* A call on one node through the outboxes, in pieces of one outbox
 * (coll_ringx_osched.c). */
typedef struct ringx_osched {
    struct ringx_call *call;    /* the call it is part of: buffers, memory, reduction */
    int posted;                 /* the posted outboxes (else the blocking ones) */
    size_t piece_elems;         /* elements of each run that a piece takes */
    int npieces;
    int piece;                  /* the piece under way */
    uint64_t n;                 /* posted: the first piece's number; else the piece's */
    int phase;
    int arrived;                /* peers whose part is in, from the next rank on */
    int rc;
    size_t bytes_sent;
} ringx_osched_t;

int ringx_osched_start(ringx_osched_t *s);
int ringx_osched_progress(ringx_osched_t *s);

/* ----------------------------------------------------------- schedule */

/* A local copy the collective owes after its engine (a rotation, a block
 * kept aside while in place). */
typedef struct ringx_copy {
    char *dst;
    const char *src;
    size_t len;
} ringx_copy_t;

/* A conversion between a buffer whose datatype leaves gaps (count
 * elements of dtype at user) and its bytes, packed (allgather): packed
 * when the schedule starts, unpacked when it has finished.  dtype NULL:
 * none. */
typedef struct ringx_convert {
    void *user;
    size_t count;
    struct ompi_datatype_t *dtype;
    char *packed;
    size_t bytes;
} ringx_convert_t;

typedef enum ringx_engine {
    RINGX_ENGINE_NONE,          /* only the copies */
    RINGX_ENGINE_RING,
    RINGX_ENGINE_EXCHANGE,
    RINGX_ENGINE_DIRECT,
    RINGX_ENGINE_OUTBOX
} ringx_engine_t;

/* The buffers the ring's block functions read (ringx_ring_t.ctx). */
typedef struct ringx_ring_bufs {
    const char *input;          /* the caller's data */
    char *result;
    char *partial[2];           /* reduce_scatter_block's partial sums */
} ringx_ring_bufs_t;

#define RINGX_SCHED_MAX_COPIES 2

typedef struct ringx_sched {
    ringx_engine_t engine;
    int started;
    int persistent;             /* started again and again: keeps what it allocates */
    ringx_coll_t coll;
    uint32_t seq;               /* the call's number in the message tags */
    ringx_ring_bufs_t bufs;
    ringx_copy_t before;        /* made when the schedule starts */
    int ncopies;
    ringx_copy_t copies[RINGX_SCHED_MAX_COPIES];
    ringx_convert_t pack, unpack;   /* before `before`, after the copies */
    union {
        ringx_ring_t ring;
        ringx_xsched_t xs;
        ringx_dsched_t ds;
        ringx_osched_t os;
    } u;
} ringx_sched_t;

/* A copy made when the schedule starts, before its engine's first
 * transfer; copies made once the engine has finished, in order. */
void ringx_sched_copy_before(ringx_sched_t *s, char *dst, const char *src, size_t len);
void ringx_sched_copy_after(ringx_sched_t *s, char *dst, const char *src, size_t len);

/* Allocates what the engine needs (a persistent call: at its init, so
 * that a start allocates nothing; otherwise start does it). */
int ringx_sched_prepare(ringx_sched_t *s);
int ringx_sched_start(ringx_sched_t *s);
int ringx_sched_progress(ringx_sched_t *s);
/* After an error: outstanding receives cancelled, sends left to UCX. */
void ringx_sched_abandon(ringx_sched_t *s);
/* The end of a run: counts the bytes it sent and, unless persistent,
 * frees what the engine allocated; release frees it in any case. */
void ringx_sched_cleanup(ringx_sched_t *s);
void ringx_sched_release(ringx_sched_t *s);

/* Whether a wait for s may sleep on the process's bell: everything it
 * waits for is stored by ranks of this node, which ring. */
int ringx_sched_may_sleep(const ringx_sched_t *s);

/* Start, then progress until done (blocking collectives). */
int ringx_sched_run(ringx_sched_t *s, ringx_mem_t *mem);

#endif /* MCA_COLL_RINGX_SCHED_H */
