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
};

#if RINGX_HAVE_CUDA
#include <cuda.h>
_Static_assert((int)DRV_ATTR_MEMORY_TYPE == (int)CU_POINTER_ATTRIBUTE_MEMORY_TYPE, "cuda.h");
_Static_assert((int)DRV_ATTR_IS_MANAGED == (int)CU_POINTER_ATTRIBUTE_IS_MANAGED, "cuda.h");
_Static_assert((int)DRV_ATTR_DEVICE_ORDINAL == (int)CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, "cuda.h");
_Static_assert((int)DRV_MEMORYTYPE_HOST == (int)CU_MEMORYTYPE_HOST, "cuda.h");
_Static_assert((int)DRV_MEMORYTYPE_DEVICE == (int)CU_MEMORYTYPE_DEVICE, "cuda.h");
_Static_assert((int)DRV_MEMORYTYPE_UNIFIED == (int)CU_MEMORYTYPE_UNIFIED, "cuda.h");
#endif

typedef int (*get_attributes_fn)(unsigned int n, int *attributes, void **data,
                                 unsigned long long ptr);

static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static get_attributes_fn get_attributes;    /* NULL: no driver on this machine */
/* Set once the driver has been looked for: every host call then costs a
 * load and a branch, not a pthread_once. */
static int driver_known;

static void open_driver(void)
{
    /* Kept open for good: the entry point must stay valid. */
    void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    get_attributes = lib ? (get_attributes_fn)dlsym(lib, "cuPointerGetAttributes") : NULL;
    __atomic_store_n(&driver_known, 1, __ATOMIC_RELEASE);
}

/* What the driver says of ptr. */
static ringx_memtype_t ask_driver(get_attributes_fn get, const void *ptr, int *device)
{
    int attributes[3] = { DRV_ATTR_MEMORY_TYPE, DRV_ATTR_IS_MANAGED, DRV_ATTR_DEVICE_ORDINAL };
    unsigned int type = 0, managed = 0;
    int ordinal = -1;
    void *data[3] = { &type, &managed, &ordinal };

    /* Unknown pointers succeed with type 0 (the driver's documented
     * default); a failure (driver not initialised) means no device memory. */
    if (get(3, attributes, data, (unsigned long long)(uintptr_t)ptr) != 0) {
        return RINGX_MEMTYPE_HOST;
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
    if (!__atomic_load_n(&driver_known, __ATOMIC_ACQUIRE)) {
        (void)pthread_once(&driver_once, open_driver);
    }
    return get_attributes == NULL || ptr == NULL ? RINGX_MEMTYPE_HOST
                                                 : ask_driver(get_attributes, ptr, device);
}

const char *ringx_memtype_name(ringx_memtype_t t)
{
    static const char *const names[RINGX_MEMTYPE_COUNT] = { "host", "pinned host", "device",
                                                            "managed" };
    return t < RINGX_MEMTYPE_COUNT ? names[t] : "unknown";
}
