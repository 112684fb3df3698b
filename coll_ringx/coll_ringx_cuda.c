/*
 * coll_ringx_cuda.c - the CUDA backend of coll_ringx_mem.h: device
 * scratch, pinned bounce buffers, streams and events, per call under way.
 *
 * A call on device memory takes a state from the process's pool (or a
 * new one) and gives it back when it ends; a persistent call keeps its
 * state from init to free.  So calls under way together, blocking,
 * nonblocking and persistent, on one communicator or several, never share
 * streams, scratch or bounce buffers, and a later call reuses what an
 * earlier one allocated.
 *
 * Two streams per state.  "in" carries everything that writes the
 * buffers' memory in call order (host-to-device copies, kernels, local
 * copies), so those need no events among themselves.  "out" carries the
 * device-to-host copies of sends; each first waits for what "in" has
 * enqueued so far, so it reads finished data, while later work on "in"
 * overlaps it.  An algorithm never writes a region that an unfinished send
 * still reads (the engines wait for such sends), so "in" needs no wait on
 * "out".
 *
 * ringx's CUDA runtime is linked statically; its cudaSetDevice makes the
 * device's primary context current in the driver, for the thread, which
 * the application's runtime sees too.  So the device of the buffers is
 * made current here before ringx works on them, and the mem layer gives
 * the caller's context back when ringx returns (ringx_mem_leave).
 */
#include "coll_ringx.h"

#if RINGX_HAVE_CUDA

#include <pthread.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "ringx_kernels.h"

typedef struct ringx_cuda {
    int device;
    int direct;                 /* UCX reads device memory itself */
    void *in, *out;             /* cudaStream_t */
    cudaEvent_t in_mark;
    cudaEvent_t *slot_events;
    int nslot_events;
    void *scratch[RINGX_SCRATCH_KINDS];
    size_t scratch_size[RINGX_SCRATCH_KINDS];
    void *bounce;
    size_t bounce_size;
    struct ringx_cuda *next_free;
} ringx_cuda_t;

/* The states no call holds, any device. */
static struct {
    pthread_mutex_t lock;
    ringx_cuda_t *head;
} pool = { PTHREAD_MUTEX_INITIALIZER, NULL };

static int check(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) {
        return OMPI_SUCCESS;
    }
    (void)cudaGetLastError();   /* clears a non-sticky error */
    RINGX_LOG(1, "CUDA: %s failed: %s", what, cudaGetErrorString(e));
    return OMPI_ERROR;
}

static int check_kernel(int rc, const char *what)
{
    if (rc == 0) {
        return OMPI_SUCCESS;
    }
    RINGX_LOG(1, "CUDA: %s failed (%s)", what,
              rc == RINGX_KERNEL_ENODEV ? "no usable device"
              : rc == RINGX_KERNEL_EINVAL ? "invalid arguments" : "CUDA error");
    return rc == RINGX_KERNEL_EINVAL ? OMPI_ERR_BAD_PARAM : OMPI_ERROR;
}

/* A state whose creation failed half-way has NULL streams, and NULL is the
 * legacy default stream: the application's, never to be waited for. */
static int sync_stream(void *stream)
{
    return stream == NULL ? OMPI_SUCCESS
                          : check_kernel(ringx_kernel_sync(stream), "stream synchronize");
}

static int sync_streams(ringx_cuda_t *c)
{
    int rc = sync_stream(c->in);
    int rc2 = sync_stream(c->out);
    return rc != OMPI_SUCCESS ? rc : rc2;
}

/* In direct mode UCX reads the result as soon as the algorithm posts a
 * send, outside our streams: the work must be finished first. */
static int finish_if_direct(ringx_cuda_t *c, int rc)
{
    return rc == OMPI_SUCCESS && c->direct ? check_kernel(ringx_kernel_sync(c->in), "sync")
                                           : rc;
}

static int cuda_reduce(void *ctx, void *dst, const void *a, const void *b, size_t n,
                       ringx_type_t type, ringx_op_t op)
{
    ringx_cuda_t *c = ctx;
    return finish_if_direct(c, check_kernel(ringx_kernel_reduce(dst, a, b, n, type, op, c->in),
                                            "reduction kernel"));
}

static int cuda_copy(void *ctx, void *dst, const void *src, size_t len)
{
    ringx_cuda_t *c = ctx;
    return finish_if_direct(c, check(cudaMemcpyAsync(dst, src, len, cudaMemcpyDefault, c->in),
                                     "cudaMemcpyAsync"));
}

static int cuda_copy_out(void *ctx, void *bounce, const void *src, size_t len, int slot)
{
    ringx_cuda_t *c = ctx;
    int rc = check(cudaEventRecord(c->in_mark, c->in), "cudaEventRecord");

    if (rc == OMPI_SUCCESS) {
        rc = check(cudaStreamWaitEvent(c->out, c->in_mark, 0), "cudaStreamWaitEvent");
    }
    if (rc == OMPI_SUCCESS) {
        rc = check(cudaMemcpyAsync(bounce, src, len, cudaMemcpyDefault, c->out),
                   "cudaMemcpyAsync (device to host)");
    }
    return rc == OMPI_SUCCESS ? check(cudaEventRecord(c->slot_events[slot], c->out),
                                      "cudaEventRecord")
                              : rc;
}

static int cuda_copy_in(void *ctx, void *dst, const void *bounce, size_t len, int slot)
{
    ringx_cuda_t *c = ctx;
    int rc = check(cudaMemcpyAsync(dst, bounce, len, cudaMemcpyDefault, c->in),
                   "cudaMemcpyAsync (host to device)");
    return rc == OMPI_SUCCESS ? check(cudaEventRecord(c->slot_events[slot], c->in),
                                      "cudaEventRecord")
                              : rc;
}

static int cuda_copied(void *ctx, int slot)
{
    ringx_cuda_t *c = ctx;
    cudaError_t e = cudaEventQuery(c->slot_events[slot]);
    return e == cudaSuccess ? 1 : e == cudaErrorNotReady ? 0 : check(e, "cudaEventQuery");
}

static int cuda_sync(void *ctx)
{
    return sync_streams(ctx);
}

static void *cuda_scratch(void *ctx, ringx_scratch_kind_t kind, size_t size)
{
    ringx_cuda_t *c = ctx;

    if (size > c->scratch_size[kind]) {
        void *p = NULL;
        /* the work queued may still use the old one */
        (void)sync_streams(c);
        (void)cudaFree(c->scratch[kind]);
        c->scratch[kind] = NULL;
        c->scratch_size[kind] = 0;
        if (check(cudaMalloc(&p, size), "cudaMalloc") != OMPI_SUCCESS) {
            return NULL;
        }
        c->scratch[kind] = p;
        c->scratch_size[kind] = size;
    }
    return c->scratch[kind];
}

static int ensure_events(ringx_cuda_t *c, int n)
{
    if (n <= c->nslot_events) {
        return OMPI_SUCCESS;
    }
    cudaEvent_t *grown = realloc(c->slot_events, (size_t)n * sizeof(*grown));
    if (grown == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    c->slot_events = grown;
    for (; c->nslot_events < n; c->nslot_events++) {
        int rc = check(cudaEventCreateWithFlags(&grown[c->nslot_events], cudaEventDisableTiming),
                       "cudaEventCreate");
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

static void *cuda_bounce(void *ctx, size_t size, int slots)
{
    ringx_cuda_t *c = ctx;
    size_t total = size * (size_t)slots;

    if (ensure_events(c, slots) != OMPI_SUCCESS) {
        return NULL;
    }
    if (total > c->bounce_size) {
        void *p = NULL;
        (void)sync_streams(c);
        (void)cudaFreeHost(c->bounce);
        c->bounce = NULL;
        c->bounce_size = 0;
        if (check(cudaHostAlloc(&p, total, cudaHostAllocPortable), "cudaHostAlloc") !=
            OMPI_SUCCESS) {
            return NULL;
        }
        c->bounce = p;
        c->bounce_size = total;
    }
    return c->bounce;
}

static void cuda_forget_bounce(void *ctx)
{
    ringx_cuda_t *c = ctx;
    c->bounce = NULL;       /* leaked on purpose: UCX may still use it */
    c->bounce_size = 0;
}

const ringx_mem_ops_t ringx_cuda_ops = {
    .reduce = cuda_reduce,
    .copy = cuda_copy,
    .copy_out = cuda_copy_out,
    .copy_in = cuda_copy_in,
    .copied = cuda_copied,
    .sync = cuda_sync,
    .scratch = cuda_scratch,
    .bounce = cuda_bounce,
    .forget_bounce = cuda_forget_bounce,
};

static void release(ringx_cuda_t *c)
{
    if (cudaSetDevice(c->device) == cudaSuccess) {
        (void)sync_streams(c);
        for (int i = 0; i < c->nslot_events; i++) {
            (void)cudaEventDestroy(c->slot_events[i]);
        }
        if (c->in_mark) {
            (void)cudaEventDestroy(c->in_mark);
        }
        for (int k = 0; k < RINGX_SCRATCH_KINDS; k++) {
            (void)cudaFree(c->scratch[k]);
        }
        (void)cudaFreeHost(c->bounce);
        if (c->in != NULL) {
            (void)ringx_kernel_stream_destroy(c->in);
        }
        if (c->out != NULL) {
            (void)ringx_kernel_stream_destroy(c->out);
        }
    }
    free(c->slot_events);
    free(c);
}

static ringx_cuda_t *create(int device)
{
    ringx_cuda_t *c = calloc(1, sizeof(*c));

    if (c == NULL) {
        return NULL;
    }
    c->device = device;
    if (check(cudaSetDevice(device), "cudaSetDevice") != OMPI_SUCCESS ||
        check_kernel(ringx_kernel_stream_create(&c->in), "stream create") != OMPI_SUCCESS ||
        check_kernel(ringx_kernel_stream_create(&c->out), "stream create") != OMPI_SUCCESS ||
        check(cudaEventCreateWithFlags(&c->in_mark, cudaEventDisableTiming),
              "cudaEventCreate") != OMPI_SUCCESS) {
        release(c);
        return NULL;
    }
    RINGX_LOG(2, "CUDA: device %d: a new state for calls (two streams, bounce buffers on "
                 "first staged call)", device);
    return c;
}

/* A free state of device's, out of the pool; NULL if none. */
static ringx_cuda_t *pool_take(int device)
{
    ringx_cuda_t *c, **link = &pool.head;

    pthread_mutex_lock(&pool.lock);
    while ((c = *link) != NULL && c->device != device) {
        link = &c->next_free;
    }
    if (c != NULL) {
        *link = c->next_free;
        c->next_free = NULL;
    }
    pthread_mutex_unlock(&pool.lock);
    return c;
}

void *ringx_cuda_take(int device, int direct)
{
    ringx_cuda_t *c = pool_take(device);

    if (c == NULL) {
        c = create(device);
    } else if (check(cudaSetDevice(device), "cudaSetDevice") != OMPI_SUCCESS) {
        ringx_cuda_give(c);
        return NULL;
    }
    if (c != NULL) {
        c->direct = direct;
    }
    return c;
}

int ringx_cuda_resume(void *state)
{
    const ringx_cuda_t *c = state;
    return check(cudaSetDevice(c->device), "cudaSetDevice");
}

void ringx_cuda_give(void *state)
{
    ringx_cuda_t *c = state;

    pthread_mutex_lock(&pool.lock);
    c->next_free = pool.head;
    pool.head = c;
    pthread_mutex_unlock(&pool.lock);
}

/* Tries a state and the kernels on device: 1 if both work. */
static int try_device(int device)
{
    ringx_cuda_caller_t caller = { NULL, 0 };
    ringx_cuda_t *c;
    int usable;

    ringx_memtype_keep_caller(&caller);
    c = ringx_cuda_take(device, 0);
    usable = c != NULL &&
             check_kernel(ringx_kernels_usable(), "loading the kernels") == OMPI_SUCCESS;
    if (c != NULL) {
        ringx_cuda_give(c);
    }
    ringx_memtype_give_back(&caller);
    if (!usable) {
        RINGX_LOG(1, "CUDA: device %d cannot be used by ringx (built with CUDA %d.%d; see the "
                     "messages above): its buffers go to the previous component (reason memory)",
                  device, CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
    }
    return usable;
}

int ringx_cuda_usable(int device)
{
    enum { KNOWN_DEVICES = 64, UNKNOWN = 0, USABLE = 1, UNUSABLE = 2 };
    static int known[KNOWN_DEVICES];
    int answer;

    if (device < 0 || device >= KNOWN_DEVICES) {
        return try_device(device);
    }
    answer = __atomic_load_n(&known[device], __ATOMIC_RELAXED);
    if (answer == UNKNOWN) {
        answer = try_device(device) ? USABLE : UNUSABLE;
        __atomic_store_n(&known[device], answer, __ATOMIC_RELAXED);
    }
    return answer == USABLE;
}

void ringx_cuda_close(void)
{
    ringx_cuda_caller_t caller = { NULL, 0 };

    if (__atomic_load_n(&pool.head, __ATOMIC_RELAXED) == NULL) {
        return;     /* no device work ever: the driver stays untouched */
    }
    ringx_memtype_keep_caller(&caller);     /* release makes each state's device current */
    pthread_mutex_lock(&pool.lock);
    while (pool.head != NULL) {
        ringx_cuda_t *c = pool.head;
        pool.head = c->next_free;
        release(c);
    }
    pthread_mutex_unlock(&pool.lock);
    ringx_memtype_give_back(&caller);
}

#endif /* RINGX_HAVE_CUDA */
