/*
 * coll_ringx_memtype.c - memory-type detection through the CUDA driver API.
 *
 * The driver library is opened once, on the first question, without being
 * initialised (that is the application's business); where it is not
 * installed every later answer is "host" at the cost of a load and a
 * branch.  Where it is, each buffer costs one cuPointerGetAttributes(),
 * which answers "not initialised" (host) until the application has
 * started CUDA.  Nothing is cached per pointer: a freed buffer's address
 * can come back as another kind of memory.
 *
 * The same library gives the thread's current context, which ringx's work
 * on device memory changes (coll_ringx_cuda.c) and gives back.
 */
#include "ringx_memtype.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* The few driver API values used here (cuda.h, CUDA 11 and later).  Our
 * own copies, so that a build without CUDA detects device memory too; a
 * CUDA build checks them against the header. */
enum {
    DRV_ATTR_MEMORY_TYPE = 2,
    DRV_ATTR_IS_MANAGED = 8,
    DRV_ATTR_DEVICE_ORDINAL = 9,
    DRV_MEMORYTYPE_HOST = 1,
    DRV_MEMORYTYPE_DEVICE = 2,
    DRV_MEMORYTYPE_UNIFIED = 4,
    DRV_ERROR_NOT_INITIALIZED = 3,
    DRV_ERROR_DEINITIALIZED = 4,
};

#if RINGX_HAVE_CUDA
#include <cuda.h>
_Static_assert((int)DRV_ATTR_MEMORY_TYPE == (int)CU_POINTER_ATTRIBUTE_MEMORY_TYPE, "cuda.h");
_Static_assert((int)DRV_ATTR_IS_MANAGED == (int)CU_POINTER_ATTRIBUTE_IS_MANAGED, "cuda.h");
_Static_assert((int)DRV_ATTR_DEVICE_ORDINAL == (int)CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, "cuda.h");
_Static_assert((int)DRV_MEMORYTYPE_HOST == (int)CU_MEMORYTYPE_HOST, "cuda.h");
_Static_assert((int)DRV_MEMORYTYPE_DEVICE == (int)CU_MEMORYTYPE_DEVICE, "cuda.h");
_Static_assert((int)DRV_MEMORYTYPE_UNIFIED == (int)CU_MEMORYTYPE_UNIFIED, "cuda.h");
_Static_assert((int)DRV_ERROR_NOT_INITIALIZED == (int)CUDA_ERROR_NOT_INITIALIZED, "cuda.h");
_Static_assert((int)DRV_ERROR_DEINITIALIZED == (int)CUDA_ERROR_DEINITIALIZED, "cuda.h");
#endif

typedef int (*get_attributes_fn)(unsigned int n, int *attributes, void **data,
                                 unsigned long long ptr);

typedef int (*context_get_fn)(void **context);
typedef int (*context_set_fn)(void *context);

static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static get_attributes_fn get_attributes;    /* NULL: no driver on this machine */
static context_get_fn context_get;
static context_set_fn context_set;
/* Set once the driver has been looked for: every host call then costs a
 * load and a branch, not a pthread_once. */
static int driver_known;

static void open_driver(void)
{
    /* Kept open for good: the entry point must stay valid. */
    void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (lib != NULL) {
        context_get = (context_get_fn)dlsym(lib, "cuCtxGetCurrent");
        context_set = (context_set_fn)dlsym(lib, "cuCtxSetCurrent");
        get_attributes = (get_attributes_fn)dlsym(lib, "cuPointerGetAttributes");
    }
    __atomic_store_n(&driver_known, 1, __ATOMIC_RELEASE);
}

static void know_driver(void)
{
    if (!__atomic_load_n(&driver_known, __ATOMIC_ACQUIRE)) {
        (void)pthread_once(&driver_once, open_driver);
    }
}

/* What the driver says of ptr. */
static ringx_memtype_t ask_driver(get_attributes_fn get, const void *ptr, int *device)
{
    int attributes[3] = { DRV_ATTR_MEMORY_TYPE, DRV_ATTR_IS_MANAGED, DRV_ATTR_DEVICE_ORDINAL };
    unsigned int type = 0, managed = 0;
    int ordinal = -1;
    void *data[3] = { &type, &managed, &ordinal };

    /* Unknown pointers succeed with type 0 (the driver's documented
     * default).  A driver not (or no longer) initialised has no device
     * memory; any other failure leaves the pointer unknown: reading it as
     * host memory could fault. */
    int rc = get(3, attributes, data, (unsigned long long)(uintptr_t)ptr);
    if (rc == DRV_ERROR_NOT_INITIALIZED || rc == DRV_ERROR_DEINITIALIZED) {
        return RINGX_MEMTYPE_HOST;
    }
    if (rc != 0) {
        return RINGX_MEMTYPE_UNKNOWN;
    }
    if (managed) {
        *device = ordinal;
        return RINGX_MEMTYPE_MANAGED;
    }
    if (type == DRV_MEMORYTYPE_DEVICE) {
        *device = ordinal;
        return RINGX_MEMTYPE_DEVICE;
    }
    return type == DRV_MEMORYTYPE_HOST ? RINGX_MEMTYPE_PINNED : RINGX_MEMTYPE_HOST;
}

ringx_memtype_t ringx_memtype_of(const void *ptr, int *device)
{
    *device = -1;
    know_driver();
    return get_attributes == NULL || ptr == NULL ? RINGX_MEMTYPE_HOST
                                                 : ask_driver(get_attributes, ptr, device);
}

const char *ringx_memtype_name(ringx_memtype_t t)
{
    static const char *const names[RINGX_MEMTYPE_COUNT] = { "host", "pinned host", "device",
                                                            "managed", "unknown" };
    return t < RINGX_MEMTYPE_COUNT ? names[t] : "unknown";
}

void ringx_memtype_keep_caller(ringx_cuda_caller_t *caller)
{
    if (!caller->kept) {
        know_driver();
        caller->kept = context_get != NULL && context_set != NULL &&
                       context_get(&caller->context) == 0;
    }
}

void ringx_memtype_give_back(ringx_cuda_caller_t *caller)
{
    void *now = NULL;

    if (caller->kept && (context_get(&now) != 0 || now != caller->context)) {
        (void)context_set(caller->context);
    }
    caller->kept = 0;
}
