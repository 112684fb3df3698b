/*
 * coll_ringx_mem.c - the memory of a call: classification, the choice of
 * backend (host, direct device, staged), the host backend, and the
 * primitives the algorithms use.
 */
#include "coll_ringx.h"
#include "coll_ringx_bell.h"

#include <stdlib.h>
#include <string.h>

#include "ringx_host_reduce.h"

/* --------------------------------------------------------- host backend */

static int host_reduce(void *ctx, void *dst, const void *a, const void *b, size_t n,
                       ringx_type_t type, ringx_op_t op)
{
    (void)ctx;
    ringx_host_reduce(dst, a, b, n, type, op);
    return OMPI_SUCCESS;
}

static int host_copy(void *ctx, void *dst, const void *src, size_t len)
{
    (void)ctx;
    memcpy(dst, src, len);
    return OMPI_SUCCESS;
}

/* A staging copy on host memory: done at once. */
static int host_copy_slot(void *ctx, void *dst, const void *src, size_t len, int slot)
{
    (void)slot;
    return host_copy(ctx, dst, src, len);
}

static int host_copied(void *ctx, int slot)
{
    (void)ctx;
    (void)slot;
    return 1;
}

static int host_sync(void *ctx)
{
    (void)ctx;
    return OMPI_SUCCESS;
}

static void *host_scratch(void *ctx, ringx_scratch_kind_t kind, size_t size)
{
    ringx_scratch_set_t *s = ctx;
    return ringx_scratch_get(kind == RINGX_SCRATCH_SEGMENTS ? &s->segments : &s->blocks, size);
}

static void *host_bounce(void *ctx, size_t size, int slots)
{
    ringx_scratch_set_t *s = ctx;
    return ringx_scratch_get(&s->bounce, size * (size_t)slots);
}

static void host_forget_bounce(void *ctx)
{
    ringx_scratch_set_t *s = ctx;
    /* Leaked on purpose: an abandoned transfer may still use it. */
    memset(&s->bounce, 0, sizeof(s->bounce));
}

static const ringx_mem_ops_t host_ops = {
    .reduce = host_reduce,
    .copy = host_copy,
    .copy_out = host_copy_slot,
    .copy_in = host_copy_slot,
    .copied = host_copied,
    .sync = host_sync,
    .scratch = host_scratch,
    .bounce = host_bounce,
    .forget_bounce = host_forget_bounce,
};

/* ------------------------------------------------------ classification */

static int is_buffer(const void *p)
{
    return p != NULL && p != MPI_IN_PLACE;
}

static int misaligned(const void *p, size_t align)
{
    return is_buffer(p) && (uintptr_t)p % align != 0;
}

int ringx_mem_classify(ringx_mem_t *mem, const void *a, const void *b, size_t align)
{
    int dev_a = -1, dev_b = -1;
    ringx_memtype_t ta = is_buffer(a) ? ringx_memtype_of(a, &dev_a) : RINGX_MEMTYPE_HOST;
    ringx_memtype_t tb = is_buffer(b) ? ringx_memtype_of(b, &dev_b) : ta;

    if (!is_buffer(a)) {
        ta = tb;
        dev_a = dev_b;
    }
    mem->type = ringx_memtype_on_device(ta) ? ta : RINGX_MEMTYPE_HOST;
    mem->device = dev_a;
    if (ta == RINGX_MEMTYPE_UNKNOWN || tb == RINGX_MEMTYPE_UNKNOWN) {
        RINGX_LOG(1, "the CUDA driver could not say where the buffers are: not served");
        return RINGX_FALLBACK_MEMORY;
    }
    if (ringx_memtype_on_device(ta) != ringx_memtype_on_device(tb) || dev_a != dev_b) {
        RINGX_LOG(1, "buffers in %s and %s memory (devices %d, %d): not served",
                  ringx_memtype_name(ta), ringx_memtype_name(tb), dev_a, dev_b);
        return RINGX_FALLBACK_MEMORY;
    }
#if !RINGX_HAVE_CUDA
    if (ringx_memtype_on_device(ta)) {
        RINGX_LOG(1, "%s memory, but this ringx was built without CUDA", ringx_memtype_name(ta));
        return RINGX_FALLBACK_MEMORY;
    }
#endif
    if (ringx_memtype_on_device(ta) && (misaligned(a, align) || misaligned(b, align))) {
        RINGX_LOG(1, "device buffers not aligned to %zu bytes: not served", align);
        return RINGX_FALLBACK_MEMORY;
    }
#if RINGX_HAVE_CUDA
    if (ringx_memtype_on_device(ta) && !ringx_cuda_usable(dev_a)) {
        return RINGX_FALLBACK_MEMORY;
    }
#endif
    return RINGX_SERVE;
}

/* ------------------------------------------------------------- a call */

void ringx_mem_leave(ringx_mem_t *mem)
{
    if (mem->caller.kept) {
        ringx_memtype_give_back(&mem->caller);
    }
}

static int start_device(ringx_mem_t *mem)
{
#if RINGX_HAVE_CUDA
    int direct = !mca_coll_ringx_component.gpu_force_staging && ringx_ucx_cuda_memory();
    void *ctx;

    ringx_memtype_keep_caller(&mem->caller);     /* before the device becomes current */
    ctx = ringx_cuda_take(mem->device, direct);

    if (ctx == NULL) {
        return OMPI_ERR_NOT_AVAILABLE;
    }
    mem->ctx = ctx;
    mem->ops = &ringx_cuda_ops;
    mem->staged = !direct;
    return OMPI_SUCCESS;
#else
    (void)mem;
    return OMPI_ERR_NOT_SUPPORTED;     /* classification keeps device memory away */
#endif
}

ringx_scratch_set_t *ringx_mem_host_scratch(ringx_mem_t *mem, mca_coll_ringx_module_t *m)
{
    return mem->scratch != NULL ? mem->scratch : &m->scratch;
}

int ringx_mem_start(ringx_mem_t *mem, mca_coll_ringx_module_t *m, int coll)
{
    const mca_coll_ringx_component_t *c = &mca_coll_ringx_component;
    int rc = OMPI_SUCCESS;

    mem->ops = &host_ops;
    mem->ctx = ringx_mem_host_scratch(mem, m);
    mem->staged = c->stage_host_buffers;
    mem->stage = NULL;
    if (ringx_memtype_on_device(mem->type)) {
        rc = start_device(mem);
    }
    if (rc == OMPI_SUCCESS && mem->staged) {
        mem->stage = ringx_stage_create(mem, c->gpu_bounce_buffers, c->pipeline_depth);
        rc = mem->stage != NULL ? OMPI_SUCCESS : OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (mem->ops != &host_ops || mem->staged) {
        RINGX_LOG(2, "%s: %s memory (device %d), transfers %s", ringx_coll_name((ringx_coll_t)coll),
                  ringx_memtype_name(mem->type), mem->device,
                  mem->staged ? "staged through host bounce buffers" : "straight to UCX");
    }
    return rc;
}

void ringx_mem_count(const ringx_mem_t *mem, int coll)
{
    if (ringx_memtype_on_device(mem->type)) {
        ringx_count(&mca_coll_ringx_counters.on_device[coll], 1);
    }
    if (mem->stage != NULL) {
        ringx_count(&mca_coll_ringx_counters.staged[coll], 1);
    }
}

int ringx_mem_finish(ringx_mem_t *mem, int rc)
{
    if (mem->stage != NULL) {
        ringx_stage_destroy(mem);
    }
    if (mem->ops != NULL) {
        int synced = mem->ops->sync(mem->ctx);
        rc = rc == OMPI_SUCCESS ? synced : rc;
    }
#if RINGX_HAVE_CUDA
    if (mem->ops == &ringx_cuda_ops) {
        ringx_cuda_give(mem->ctx);
        mem->ops = NULL;
        mem->ctx = NULL;
    }
#endif
    return rc;
}

int ringx_mem_resume(ringx_mem_t *mem)
{
#if RINGX_HAVE_CUDA
    if (mem->ops == &ringx_cuda_ops) {
        ringx_memtype_keep_caller(&mem->caller);
        return ringx_cuda_resume(mem->ctx);
    }
#endif
    (void)mem;
    return OMPI_SUCCESS;
}

void ringx_scratch_set_free(ringx_scratch_set_t *s)
{
    free(s->segments.ptr);
    free(s->blocks.ptr);
    free(s->bounce.ptr);
    free(s->steps.ptr);
    free(s->packed.ptr);
    memset(s, 0, sizeof(*s));
}

int ringx_mem_reduce(ringx_mem_t *mem, void *dst, const void *a, const void *b, size_t n,
                     ringx_type_t type, ringx_op_t op)
{
    ringx_bell_note_work();
    return mem->ops->reduce(mem->ctx, dst, a, b, n, type, op);
}

int ringx_mem_copy(ringx_mem_t *mem, void *dst, const void *src, size_t len)
{
    ringx_bell_note_work();
    return len == 0 || dst == src ? OMPI_SUCCESS : mem->ops->copy(mem->ctx, dst, src, len);
}

void *ringx_mem_scratch(ringx_mem_t *mem, ringx_scratch_kind_t kind, size_t size)
{
    return mem->ops->scratch(mem->ctx, kind, size);
}

