/*
 * coll_ringx_request.c - nonblocking calls: Open MPI requests whose
 * schedules advance in Open MPI's progress engine.
 *
 * A started request joins the process's list of requests under way.
 * ringx's progress callback (registered with opal_progress once the first
 * request starts) and ringx's own waits advance every request on the list
 * a step at a time; a request whose schedule is done leaves the list and
 * is completed, after the list's lock is released (completion may run a
 * callback that starts another call).  With several threads, whoever
 * holds the lock advances everything; the others go on.
 *
 * A call on a communicator that is still connecting (the first calls
 * there: coll_ringx_connect.c) is numbered at once, in call order, and
 * waits in its module's queue; once the connection is over the queue is
 * started in order, or, if ringx cannot serve the communicator after all
 * (the same outcome on every rank), handed to the previous component in
 * order.  A blocking call, for comparison, waits for the connection.
 *
 * A request holds its communicator and module until it is freed, so that
 * neither goes away under a call still in flight.  A call on device
 * memory holds a CUDA state of its own (coll_ringx_cuda.c) while under
 * way, a persistent one from init to free.
 */
#include "coll_ringx.h"
#include "coll_ringx_bell.h"

#include <pthread.h>
#include <string.h>

#include "ompi/communicator/communicator.h"
#include "ompi/errhandler/errcode-internal.h"
#include "opal/runtime/opal_progress.h"

volatile int ringx_requests_active = 0;

static struct {
    pthread_mutex_t lock;
    ringx_request_t *head;
    mca_coll_ringx_module_t *connecting;    /* modules whose connection is under way */
    int registered;
} under_way = { PTHREAD_MUTEX_INITIALIZER, NULL, NULL, 0 };

static void request_construct(ringx_request_t *req)
{
    memset(&req->scratch, 0, sizeof(req->scratch));
    req->module = NULL;
    req->comm = NULL;
    req->next = req->next_deferred = NULL;
    req->status = OMPI_SUCCESS;
    req->mpi_error = MPI_SUCCESS;
    req->retained = 0;
    req->prev = NULL;
}

/* Holds (or lets go of) the call's datatypes and op: a call that waits for
 * the connection, and every start of a persistent call, may need them
 * after the caller has freed its own.  In place, the send datatype is
 * not the call's (MPI ignores it). */
static void hold_args(ringx_request_t *req, int hold)
{
    opal_object_t *objs[3] = {
        (opal_object_t *)(req->args.sbuf == MPI_IN_PLACE ? NULL : req->args.sdtype),
        (opal_object_t *)req->args.rdtype, (opal_object_t *)req->args.op
    };

    for (int i = 0; i < 3; i++) {
        if (objs[i] != NULL && hold) {
            OBJ_RETAIN(objs[i]);
        } else if (objs[i] != NULL) {
            OBJ_RELEASE(objs[i]);
        }
    }
    req->retained = hold;
}

static void request_destruct(ringx_request_t *req)
{
    if (req->retained) {
        hold_args(req, 0);
    }
    ringx_scratch_set_free(&req->scratch);
}

OBJ_CLASS_INSTANCE(ringx_request_t, ringx_nbc_request_head_t, request_construct,
                   request_destruct);

/* MPI_Request_free or the end of MPI_Wait/MPI_Test: only ever on a
 * completed request (freeing an active nonblocking collective request is
 * erroneous in MPI). */
static int request_free(ompi_request_t **request)
{
    ringx_request_t *req = (ringx_request_t *)*request;
    mca_coll_ringx_module_t *m = req->module;
    struct ompi_communicator_t *comm = req->comm;

    if (req->call.sched.persistent) {
        ringx_sched_release(&req->call.sched);
        (void)ringx_mem_resume(&req->call.mem);
        (void)ringx_mem_finish(&req->call.mem, OMPI_SUCCESS);
        ringx_mem_leave(&req->call.mem);
    }
    OMPI_REQUEST_FINI(&req->super.super);
    OBJ_RELEASE(req);
    *request = MPI_REQUEST_NULL;
    if (m != NULL) {
        OBJ_RELEASE(m);
    }
    if (comm != NULL) {
        OBJ_RELEASE(comm);
    }
    return OMPI_SUCCESS;
}

/* Collectives cannot be cancelled (MPI-3.1 section 5.12): nothing to do. */
static int request_cancel(ompi_request_t *request, int complete)
{
    (void)request;
    (void)complete;
    return OMPI_SUCCESS;
}

static int request_start(size_t count, ompi_request_t **requests);

ringx_request_t *ringx_request_new(mca_coll_ringx_module_t *m, int persistent)
{
    ringx_request_t *req = m == NULL ? NULL : OBJ_NEW(ringx_request_t);

    if (req == NULL) {
        return NULL;
    }
    OMPI_REQUEST_INIT(&req->super.super, persistent != 0);
    req->super.super.req_type = OMPI_REQUEST_COLL;
    req->super.super.req_free = request_free;
    req->super.super.req_cancel = request_cancel;
    req->super.super.req_start = persistent ? request_start : NULL;
    req->super.super.req_mpi_object.comm = NULL;
    (void)m;
    return req;
}

static int admit(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm,
                 ringx_coll_t coll, int buffers, ringx_request_t *req, int persistent, int *rc)
{
    /* A persistent call's init waits for the connection, as a blocking call
     * does: its starts then allocate nothing and never wait for it. */
    int reason = ringx_admit(m, comm, coll, buffers, persistent, rc);

    if (reason != RINGX_SERVE && req != NULL) {
        OMPI_REQUEST_FINI(&req->super.super);
        OBJ_RELEASE(req);
    } else if (req != NULL) {
        req->comm = comm;
    }
    return reason;
}

/* ------------------------------------------------------------ progress */

/* The outcome of a finished call, in the request. */
static void finish_call(ringx_request_t *req, int rc)
{
    ringx_call_t *c = &req->call;

    if (rc != RINGX_DONE) {
        ringx_sched_abandon(&c->sched);
    }
    ringx_sched_cleanup(&c->sched);
    rc = rc == RINGX_DONE ? OMPI_SUCCESS : rc;
    /* a persistent call keeps its memory started until it is freed */
    req->status = c->sched.persistent ? rc : ringx_mem_finish(&c->mem, rc);
    req->mpi_error =
        req->status == OMPI_SUCCESS ? MPI_SUCCESS : ompi_errcode_get_mpi_code(req->status);
}

static void complete(ringx_request_t *req)
{
    req->super.super.req_status.MPI_ERROR = req->mpi_error;
    ompi_request_complete(&req->super.super, true);
}

/* A call handed to the previous component: over when its request is. */
static int advance_handed_on(ringx_request_t *req)
{
    if (!REQUEST_COMPLETE(req->prev)) {
        return 0;
    }
    req->mpi_error = req->prev->req_status.MPI_ERROR;
    ompi_request_free(&req->prev);
    return 1;
}

/* A call is counted under its algorithm when it starts, except direct
 * reads: only once they have served it, since they may decline it and
 * another algorithm serve it (counted then). */
static void count_at_start(const ringx_call_t *c)
{
    if (c->choice.alg != RINGX_ALG_DIRECT_READ) {
        ringx_call_count(c);
    }
}

/* Direct reads declined the call: the choice without them, started
 * (every rank does the same, in the order its calls decline, which is
 * their call order: direct calls end one after the other). */
static int declined(ringx_call_t *c)
{
    int rc;

    ringx_sched_cleanup(&c->sched);
    /* a persistent call's too: it has chosen again for good */
    ringx_sched_release(&c->sched);
    rc = ringx_call_build_declined(c);
    if (rc == OMPI_SUCCESS && c->sched.persistent) {
        rc = ringx_sched_prepare(&c->sched);
    }
    if (rc == OMPI_SUCCESS) {
        ringx_call_count(c);
        rc = ringx_sched_start(&c->sched);
    }
    return rc == OMPI_SUCCESS ? ringx_sched_progress(&c->sched) : rc;
}

/* One step of req's call, its device current; 1 when the call is over
 * (finished or failed). */
static int step(ringx_request_t *req)
{
    int rc = ringx_mem_resume(&req->call.mem);

    if (rc != OMPI_SUCCESS) {
        finish_call(req, rc);
        return 1;
    }
    if (req->call.mem.stage != NULL) {
        ringx_stage_progress(&req->call.mem);
    }
    rc = ringx_sched_progress(&req->call.sched);
    if (rc == RINGX_DIRECT_DECLINED) {
        rc = declined(&req->call);
    }
    if (rc == RINGX_PENDING) {
        return 0;
    }
    if (rc == RINGX_DONE && req->call.choice.alg == RINGX_ALG_DIRECT_READ) {
        ringx_call_count(&req->call);   /* see count_at_start */
    }
    finish_call(req, rc);
    return 1;
}

/* One step of req, the caller's CUDA context kept; 1 when its call is
 * over.  Never after the request is completed: another thread may free
 * it then. */
static int advance(ringx_request_t *req)
{
    int over;

    if (req->prev != NULL) {
        return advance_handed_on(req);
    }
    over = step(req);
    ringx_mem_leave(&req->call.mem);
    return over;
}

static void enqueue(ringx_request_t *req);

/* Chooses, builds and starts the call on a connected module, or hands it
 * on; then it is under way (or over at once). */
static void begin(ringx_request_t *req)
{
    ringx_call_t *c = &req->call;
    mca_coll_ringx_module_t *m = c->m;
    int rc;

    if (m->state != RINGX_COMM_READY) {
        ringx_count_fallback(m, c->coll, ringx_module_fallback_reason(m), 0);
        rc = req->args.hand_on(&req->args, m, req->comm, 0, NULL, &req->prev);
        req->mpi_error = rc == OMPI_SUCCESS ? MPI_SUCCESS : ompi_errcode_get_mpi_code(rc);
        if (rc != OMPI_SUCCESS) {
            req->prev = NULL;
            complete(req);
            return;
        }
    } else {
        c->mem.scratch = &req->scratch;
        rc = ringx_call_mem_start(c);
        rc = rc == OMPI_SUCCESS ? ringx_call_build(c) : rc;
        if (rc == OMPI_SUCCESS) {
            ringx_mem_count(&c->mem, c->coll);
            count_at_start(c);
            rc = ringx_sched_start(&c->sched);
        }
        if (rc != OMPI_SUCCESS) {
            finish_call(req, rc);
            ringx_mem_leave(&c->mem);
            complete(req);
            return;
        }
        ringx_count(&mca_coll_ringx_counters.nonblocking[c->coll], 1);
    }
    if (advance(req)) {
        complete(req);          /* small calls may be over at once */
    } else {
        enqueue(req);
    }
}

/* The calls that waited for m's connection begun, in call order; the
 * caller holds m->begin_lock.  Calls begin one thread at a time, older
 * ones first: a call that another thread begins while these do must not
 * take its posted outboxes' or direct reads' number ahead of them. */
static void begin_deferred_locked(mca_coll_ringx_module_t *m)
{
    ringx_request_t *req;

    pthread_mutex_lock(&m->parked_lock);
    req = m->deferred_head;
    m->deferred_head = m->deferred_tail = NULL;
    pthread_mutex_unlock(&m->parked_lock);
    while (req != NULL) {
        ringx_request_t *next = req->next_deferred;
        req->next_deferred = NULL;
        begin(req);
        req = next;
    }
}

static void begin_deferred(mca_coll_ringx_module_t *m)
{
    pthread_mutex_lock(&m->begin_lock);
    begin_deferred_locked(m);
    pthread_mutex_unlock(&m->begin_lock);
}

/* The connections under way; the modules whose connection is over are
 * returned, for their waiting calls to begin and their reference to go
 * (after the lock: the last reference may destroy a module). */
static mca_coll_ringx_module_t *advance_connections(void)
{
    mca_coll_ringx_module_t *over = NULL, **link = &under_way.connecting;

    while (*link != NULL) {
        mca_coll_ringx_module_t *m = *link;
        if (ringx_connect_progress(m) != RINGX_PENDING) {
            *link = m->next_connecting;
            m->next_connecting = over;
            over = m;
            __atomic_fetch_sub(&ringx_requests_active, 1, __ATOMIC_RELAXED);
        } else {
            link = &m->next_connecting;
        }
    }
    return over;
}

/* Whether a wait for req may sleep on the bell (ringx_sched_may_sleep). */
static int may_sleep(const ringx_request_t *req)
{
    return req->prev == NULL && req->call.mem.stage == NULL &&
           ringx_sched_may_sleep(&req->call.sched);
}

/* Advances everything under way; *may_rest: something is, and every
 * wait for it may sleep. */
static int progress(int *may_rest)
{
    ringx_request_t *done = NULL, **link;
    mca_coll_ringx_module_t *connected;
    int n = 0;

    *may_rest = 0;
    if ((!ringx_requests_active && !ringx_ucx_flush_pending()) ||
        pthread_mutex_trylock(&under_way.lock) != 0) {
        return 0;
    }
    (void)ringx_ucx_progress_worker();
    connected = advance_connections();
    *may_rest = under_way.connecting == NULL;
    link = &under_way.head;
    while (*link != NULL) {
        ringx_request_t *req = *link;
        if (advance(req)) {
            *link = req->next;
            req->next = done;
            done = req;
            __atomic_fetch_sub(&ringx_requests_active, 1, __ATOMIC_RELAXED);
        } else {
            *may_rest = *may_rest && may_sleep(req);
            link = &req->next;
        }
    }
    *may_rest = *may_rest && under_way.head != NULL && !ringx_ucx_flush_pending();
    pthread_mutex_unlock(&under_way.lock);
    while (connected != NULL) {
        mca_coll_ringx_module_t *m = connected;
        connected = m->next_connecting;
        begin_deferred(m);
        OBJ_RELEASE(m);
    }
    while (done != NULL) {
        ringx_request_t *req = done;
        done = req->next;
        complete(req);
        n++;
    }
    return n;
}

int ringx_requests_progress(void)
{
    int may_rest;

    return progress(&may_rest);
}

/* Open MPI's progress: a turn that did nothing may sleep on the bell
 * (ringx_bell_rest), except inside ringx's own waits, which sleep in their
 * own way.  Work done counts as an event: Open MPI yields the core after a
 * turn without any, and a yield to a busy process loses it for a slice. */
static int progress_callback(void)
{
    int was = ringx_ucx_inside_progress(1);
    unsigned work = ringx_bell_work;
    int may_rest, n;

    if (!was) {
        ringx_bell_turn_begins();
    }
    n = progress(&may_rest);
    if (!was) {
        if (n == 0 && work == ringx_bell_work && may_rest) {
            n = ringx_bell_rest(ringx_requests_progress);
        }
        ringx_bell_turn_ends(n == 0 && work == ringx_bell_work);
    }
    (void)ringx_ucx_inside_progress(was);
    return n > 0 ? n : work != ringx_bell_work;
}

/* Under the lock. */
static void register_callback(void)
{
    if (!under_way.registered) {
        under_way.registered = opal_progress_register(progress_callback) == OPAL_SUCCESS;
    }
}

static void enqueue(ringx_request_t *req)
{
    pthread_mutex_lock(&under_way.lock);
    register_callback();
    req->next = under_way.head;
    under_way.head = req;
    __atomic_fetch_add(&ringx_requests_active, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&under_way.lock);
}

void ringx_requests_flush_behind(void)
{
    if (ringx_ucx_flush_behind() && !__atomic_load_n(&under_way.registered, __ATOMIC_RELAXED)) {
        pthread_mutex_lock(&under_way.lock);
        register_callback();
        pthread_mutex_unlock(&under_way.lock);
    }
}

void ringx_requests_watch(mca_coll_ringx_module_t *m)
{
    OBJ_RETAIN(m);
    pthread_mutex_lock(&under_way.lock);
    register_callback();
    m->next_connecting = under_way.connecting;
    under_way.connecting = m;
    __atomic_fetch_add(&ringx_requests_active, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&under_way.lock);
}

void ringx_requests_close(void)
{
    pthread_mutex_lock(&under_way.lock);
    if (under_way.registered) {
        (void)opal_progress_unregister(progress_callback);
        under_way.registered = 0;
    }
    pthread_mutex_unlock(&under_way.lock);
}

/* -------------------------------------------------------------- start */

void ringx_requests_connected(mca_coll_ringx_module_t *m)
{
    begin_deferred(m);
}

/* Queues the call until the connection is over. */
static void defer(ringx_request_t *req)
{
    mca_coll_ringx_module_t *m = req->call.m;

    hold_args(req, 1);
    pthread_mutex_lock(&m->parked_lock);
    if (m->deferred_tail != NULL) {
        m->deferred_tail->next_deferred = req;
    } else {
        m->deferred_head = req;
    }
    m->deferred_tail = req;
    pthread_mutex_unlock(&m->parked_lock);
}

static int start_nonblocking(ringx_request_t *req, const ringx_request_args_t *args,
                             ompi_request_t **request)
{
    ringx_call_t *c = &req->call;
    mca_coll_ringx_module_t *m = c->m;

    req->args = *args;
    c->sched.seq = m->seq++;        /* in call order, whenever the call begins */
    OBJ_RETAIN(m);
    OBJ_RETAIN(req->comm);
    req->module = m;
    req->super.super.req_state = OMPI_REQUEST_ACTIVE;
    req->super.super.req_complete = REQUEST_PENDING;
    req->super.super.req_status.MPI_ERROR = MPI_SUCCESS;
    *request = &req->super.super;
    if (m->state == RINGX_COMM_CONNECTING) {
        defer(req);
        /* the connection may have ended before the call was queued */
        if (m->state != RINGX_COMM_CONNECTING) {
            begin_deferred(m);
        }
    } else {
        pthread_mutex_lock(&m->begin_lock);
        begin_deferred_locked(m);
        begin(req);
        pthread_mutex_unlock(&m->begin_lock);
    }
    return OMPI_SUCCESS;
}

/* ---------------------------------------------------------- persistent */

static int init_persistent(ringx_request_t *req, const ringx_request_args_t *args,
                           ompi_request_t **request)
{
    ringx_call_t *c = &req->call;
    mca_coll_ringx_module_t *m = c->m;
    int rc;

    c->sched.persistent = 1;
    c->mem.scratch = &req->scratch;
    rc = ringx_call_mem_start(c);
    rc = rc == OMPI_SUCCESS ? ringx_call_build(c) : rc;
    rc = rc == OMPI_SUCCESS ? ringx_sched_prepare(&c->sched) : rc;
    if (rc != OMPI_SUCCESS) {
        ringx_sched_release(&c->sched);
        (void)ringx_mem_finish(&c->mem, rc);
    }
    ringx_mem_leave(&c->mem);
    if (rc != OMPI_SUCCESS) {
        OMPI_REQUEST_FINI(&req->super.super);
        OBJ_RELEASE(req);
        return rc;
    }
    OBJ_RETAIN(m);
    OBJ_RETAIN(req->comm);
    req->module = m;
    /* Open MPI 4.1's bindings keep the datatypes of a request only while
     * it is active, and a persistent one is not yet (an allgather whose
     * datatypes have gaps packs and unpacks with them at every start). */
    req->args = *args;
    hold_args(req, 1);
    *request = &req->super.super;
    return OMPI_SUCCESS;
}

/* MPI_Start, MPI_Startall: numbered in call order, like any call; the
 * schedule, its scratch and the choice are the init's. */
static int request_start(size_t count, ompi_request_t **requests)
{
    for (size_t i = 0; i < count; i++) {
        ringx_request_t *req = (ringx_request_t *)requests[i];
        ringx_call_t *c = &req->call;
        int rc;

        pthread_mutex_lock(&c->m->begin_lock);
        begin_deferred_locked(c->m);
        c->sched.seq = c->m->seq++;
        req->super.super.req_state = OMPI_REQUEST_ACTIVE;
        req->super.super.req_complete = REQUEST_PENDING;
        req->super.super.req_status.MPI_ERROR = MPI_SUCCESS;
        req->mpi_error = MPI_SUCCESS;
        ringx_mem_count(&c->mem, c->coll);
        count_at_start(c);
        ringx_count(&mca_coll_ringx_counters.persistent[c->coll], 1);
        rc = ringx_mem_resume(&c->mem);     /* the start may enqueue work on the device */
        rc = rc == OMPI_SUCCESS ? ringx_sched_start(&c->sched) : rc;
        if (rc != OMPI_SUCCESS) {
            finish_call(req, rc);
            ringx_mem_leave(&c->mem);
            complete(req);
        } else if (advance(req)) {
            complete(req);
        } else {
            enqueue(req);
        }
        pthread_mutex_unlock(&c->m->begin_lock);
    }
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------- serve */

int ringx_request_serve(mca_coll_ringx_module_t *m, struct ompi_communicator_t *comm,
                        ringx_coll_t coll, int buffers, ringx_request_t *req, int persistent,
                        const ringx_request_args_t *args, struct ompi_info_t *info,
                        ompi_request_t **request)
{
    int rc;

    if (m == NULL) {
        return OMPI_ERR_NOT_FOUND; /* no ringx module on comm (ringx_module_of) */
    }
    if (admit(m, comm, coll, buffers, req, persistent, &rc) != RINGX_SERVE) {
        return rc != OMPI_SUCCESS ? rc : args->hand_on(args, m, comm, persistent, info, request);
    }
    return persistent ? init_persistent(req, args, request) : start_nonblocking(req, args, request);
}
