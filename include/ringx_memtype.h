/*
 * ringx_memtype.h - which kind of memory a buffer is, asked per call.
 *
 * Plain C with no CUDA header: it works, and answers "host", in builds
 * without CUDA too, so that no build of ringx ever touches device memory
 * it cannot handle.  The answer comes from the CUDA driver (libcuda.so.1),
 * which ringx loads but never initialises: until the application has
 * started CUDA every buffer is host memory, and ringx starts no CUDA of
 * its own for a host-only program.
 */
#ifndef RINGX_MEMTYPE_H
#define RINGX_MEMTYPE_H

typedef enum ringx_memtype {
    RINGX_MEMTYPE_HOST,         /* ordinary (pageable) host memory */
    RINGX_MEMTYPE_PINNED,       /* page-locked host memory known to CUDA */
    RINGX_MEMTYPE_DEVICE,       /* cudaMalloc'd device memory */
    RINGX_MEMTYPE_MANAGED,      /* cudaMallocManaged memory */
    RINGX_MEMTYPE_UNKNOWN,      /* the driver failed to answer: never touched */
    RINGX_MEMTYPE_COUNT
} ringx_memtype_t;

/* What ptr points at; for device and managed memory *device is the CUDA
 * ordinal of the device that owns it (else -1). */
ringx_memtype_t ringx_memtype_of(const void *ptr, int *device);

/* Whether the memory type is reduced on a GPU (device or managed). */
static inline int ringx_memtype_on_device(ringx_memtype_t t)
{
    return t == RINGX_MEMTYPE_DEVICE || t == RINGX_MEMTYPE_MANAGED;
}

const char *ringx_memtype_name(ringx_memtype_t t);

/* The CUDA context that was current in the thread when ringx took over.
 * Work on device memory makes the buffers' device current in ringx's own
 * CUDA runtime, which sets the driver's per-thread current context that
 * the application's runtime uses too; so ringx keeps the caller's context
 * before and gives it back after.  A zeroed one keeps nothing. */
typedef struct ringx_cuda_caller {
    void *context;              /* a CUcontext; NULL: none was current */
    int kept;                   /* context is to be given back */
} ringx_cuda_caller_t;

/* Keeps the thread's current context in caller, unless it already keeps
 * one (nothing where there is no driver). */
void ringx_memtype_keep_caller(ringx_cuda_caller_t *caller);

/* Makes the kept context current again, if it is not, and keeps none. */
void ringx_memtype_give_back(ringx_cuda_caller_t *caller);

#endif /* RINGX_MEMTYPE_H */
