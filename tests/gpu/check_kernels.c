/*
 * check_kernels.c - ringx's CUDA reduction kernels on a GPU, against
 * ringx_host_reduce(): every valid (type, op), counts 0, 1, 3, 17, 1000 and
 * 2^20 + 3, aligned and misaligned operands, dst == a, dst == b and
 * dst == a == b, with guard bytes around dst (see kernel_check.c).
 *
 * Without a usable CUDA device it prints "SKIP: no CUDA device" and exits
 * 77, which automake counts as skipped, never as passed.
 *
 * The tests run in this process (CK_NOFORK): the CUDA driver is
 * initialised here to decide whether to skip, and a child forked after
 * that cannot use CUDA.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "kernel_check.h"
#include "ringx_kernels.h"
#include "ringx_memtype.h"

static void *stream;

#define CUDA_OK(call)                                                      \
    do {                                                                   \
        cudaError_t e_ = (call);                                           \
        ck_assert_msg(e_ == cudaSuccess, "%s: %s", #call,                  \
                      cudaGetErrorString(e_));                             \
    } while (0)

/* ---- device memory for kernel_check.c ----------------------------------- */

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;

    /* cudaMalloc returns 256-byte aligned memory. */
    return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
}

static void dev_release(void *p)
{
    CUDA_OK(cudaFree(p));
}

static void dev_put(void *dst, const void *src, size_t bytes)
{
    CUDA_OK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

static void dev_get(void *dst, const void *src, size_t bytes)
{
    CUDA_OK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

static void dev_set(void *dst, int byte, size_t bytes)
{
    CUDA_OK(cudaMemset(dst, byte, bytes));
}

/* On ringx's own kind of stream, which does not synchronise with the
 * legacy default stream that cudaMemcpy uses: the sync is what makes the
 * result visible, as it will be in the component. */
static int dev_reduce(void *dst, const void *a, const void *b, size_t n,
                      ringx_type_t t, ringx_op_t op)
{
    int rc = ringx_kernel_reduce(dst, a, b, n, t, op, stream);

    return rc != 0 ? rc : ringx_kernel_sync(stream);
}

/* The legacy default stream (stream argument NULL). */
static int dev_reduce_default_stream(void *dst, const void *a, const void *b,
                                     size_t n, ringx_type_t t, ringx_op_t op)
{
    int rc = ringx_kernel_reduce(dst, a, b, n, t, op, NULL);

    return rc != 0 ? rc : ringx_kernel_sync(NULL);
}

static const kc_memory_t device_memory = {
    .name = "gpu",
    .alloc = dev_alloc,
    .release = dev_release,
    .put = dev_put,
    .get = dev_get,
    .set = dev_set,
    .reduce = dev_reduce,
};

static void dev_begin(void)
{
    ck_assert_int_eq(ringx_kernel_stream_create(&stream), 0);
    kc_begin(&device_memory, KC_LARGE_N);
}

static void dev_end(void)
{
    kc_end();
    ck_assert_int_eq(ringx_kernel_stream_destroy(stream), 0);
}

/* ---- tests ------------------------------------------------------------- */

START_TEST(test_aligned)
{
    ck_assert_uint_gt(kc_check_group(KC_ALIGNED, 1), 0);
}
END_TEST

START_TEST(test_misaligned)
{
    ck_assert_uint_gt(kc_check_group(KC_MISALIGNED, 1), 0);
}
END_TEST

START_TEST(test_aliased)
{
    ck_assert_uint_gt(kc_check_group(KC_ALIASED, 1), 0);
}
END_TEST

START_TEST(test_default_stream)
{
    static const kc_layout_t layout = { KC_SEPARATE, 0, 0, 0 };
    static kc_memory_t m;       /* kernel_check.c keeps a pointer to it */

    m = device_memory;

    m.name = "gpu, default stream";
    m.reduce = dev_reduce_default_stream;
    kc_end();
    kc_begin(&m, KC_LARGE_N);
    kc_check(RINGX_TYPE_FLOAT, RINGX_OP_SUM, KC_LARGE_N, &layout);
    kc_check(RINGX_TYPE_INT8, RINGX_OP_PROD, 1000, &layout);
}
END_TEST

/* A refused call must leave the device usable: a misaligned access, had
 * it been launched, would have ended the CUDA context. */
START_TEST(test_refusal_leaves_device_usable)
{
    static const kc_layout_t layout = { KC_SEPARATE, 1, 1, 1 };
    char *p = NULL;

    CUDA_OK(cudaMalloc((void **)&p, 256));
    ck_assert_int_eq(ringx_kernel_reduce(p + 1, p + 64, p + 128, 4,
                                         RINGX_TYPE_INT32, RINGX_OP_SUM,
                                         stream),
                     RINGX_KERNEL_EINVAL);
    ck_assert_int_eq(ringx_kernel_reduce(p, p + 64, p + 128, 4,
                                         RINGX_TYPE_FLOAT, RINGX_OP_BAND,
                                         stream),
                     RINGX_KERNEL_EINVAL);
    CUDA_OK(cudaFree(p));
    kc_check(RINGX_TYPE_DOUBLE, RINGX_OP_MIN, 1000, &layout);
}
END_TEST

/* ringx's per-call memory-type detection on every kind of memory, and
 * its cost per buffer (printed, not asserted). */
START_TEST(test_memtype)
{
    void *dev = NULL, *pinned = NULL, *managed = NULL, *host = malloc(64);
    int cur = 0, owner = -2;
    struct timespec t0, t1;
    const int reps = 100000;

    CUDA_OK(cudaGetDevice(&cur));
    CUDA_OK(cudaMalloc(&dev, 64));
    CUDA_OK(cudaMallocHost(&pinned, 64));
    CUDA_OK(cudaMallocManaged(&managed, 64, cudaMemAttachGlobal));
    ck_assert_int_eq(ringx_memtype_of(dev, &owner), RINGX_MEMTYPE_DEVICE);
    ck_assert_int_eq(owner, cur);
    ck_assert_int_eq(ringx_memtype_of((char *)dev + 17, &owner), RINGX_MEMTYPE_DEVICE);
    ck_assert_int_eq(ringx_memtype_of(pinned, &owner), RINGX_MEMTYPE_PINNED);
    ck_assert_int_eq(ringx_memtype_of(managed, &owner), RINGX_MEMTYPE_MANAGED);
    ck_assert_int_eq(owner, cur);
    ck_assert_int_eq(ringx_memtype_of(host, &owner), RINGX_MEMTYPE_HOST);
    ck_assert_int_eq(owner, -1);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < reps; i++)
        (void)ringx_memtype_of(dev, &owner);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("memtype detection with the driver loaded: %.0f ns per buffer\n",
           ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / reps);
    CUDA_OK(cudaFree(dev));
    CUDA_OK(cudaFreeHost(pinned));
    CUDA_OK(cudaFree(managed));
    free(host);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("kernels_gpu");
    TCase *tc = tcase_create("gpu");

    tcase_add_checked_fixture(tc, dev_begin, dev_end);
    tcase_add_test(tc, test_aligned);
    tcase_add_test(tc, test_misaligned);
    tcase_add_test(tc, test_aliased);
    tcase_add_test(tc, test_default_stream);
    tcase_add_test(tc, test_refusal_leaves_device_usable);
    tcase_add_test(tc, test_memtype);
    suite_add_tcase(s, tc);
    return s;
}

static void print_device(void)
{
    struct cudaDeviceProp prop;
    int dev = 0, runtime = 0, driver = 0;

    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaGetDeviceProperties(&prop, dev) != cudaSuccess)
        return;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    printf("device %d: %s, sm_%d%d, %d multiprocessors; CUDA runtime %d, "
           "driver %d\n", dev, prop.name, prop.major, prop.minor,
           prop.multiProcessorCount, runtime, driver);
}

/* ---- throughput (reported, never asserted) ------------------------------ */

/* Seconds per call of fn over reps calls, timed with events on stream. */
static double time_on_stream(void (*fn)(void *), void *arg, int reps)
{
    cudaEvent_t start, stop;
    float ms = 0;

    fn(arg);        /* warm-up */
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaEventRecord(start, stream);
    for (int i = 0; i < reps; i++)
        fn(arg);
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    cudaEventElapsedTime(&ms, start, stop);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return ms / 1e3 / reps;
}

typedef struct tp_args {
    char *d, *a, *b;
    size_t bytes;
    ringx_type_t type;
} tp_args_t;

static void tp_reduce(void *arg)
{
    tp_args_t *t = arg;
    (void)ringx_kernel_reduce(t->d, t->a, t->b, t->bytes / ringx_type_size(t->type), t->type,
                              RINGX_OP_SUM, stream);
}

static void tp_copy(void *arg)
{
    tp_args_t *t = arg;
    (void)cudaMemcpyAsync(t->d, t->a, t->bytes, cudaMemcpyDeviceToDevice, stream);
}

/*
 * The kernels' memory throughput (two reads and a write per element) as a
 * fraction of the device's peak (2 x memory clock x bus width, from its
 * attributes) and of what a device-to-device copy reaches.
 */
static void report_throughput(void)
{
    const size_t bytes = (size_t)256 << 20;
    const ringx_type_t types[] = { RINGX_TYPE_FLOAT, RINGX_TYPE_DOUBLE, RINGX_TYPE_INT8 };
    int dev = 0, clock_khz = 0, bus_bits = 0;
    tp_args_t t = { NULL, NULL, NULL, bytes, RINGX_TYPE_FLOAT };
    double peak, copy;

    if (ringx_kernel_stream_create(&stream) != 0 || cudaMalloc((void **)&t.d, bytes) ||
        cudaMalloc((void **)&t.a, bytes) || cudaMalloc((void **)&t.b, bytes)) {
        printf("throughput: not measured (no memory)\n");
        return;
    }
    cudaMemset(t.a, 1, bytes);
    cudaMemset(t.b, 2, bytes);
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, dev);
    cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev);
    peak = 2.0 * clock_khz * 1e3 * bus_bits / 8 / 1e9;
    copy = 2.0 * bytes / time_on_stream(tp_copy, &t, 20) / 1e9;
    printf("throughput: device peak %.0f GB/s (attributes), device-to-device copy %.0f GB/s "
           "(%.0f%% of peak)\n", peak, copy, peak > 0 ? 100 * copy / peak : 0);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        t.type = types[i];
        double gbs = 3.0 * bytes / time_on_stream(tp_reduce, &t, 20) / 1e9;
        printf("throughput: reduce %s SUM, 256 MiB operands: %.0f GB/s = %.0f%% of peak, "
               "%.0f%% of copy\n", ringx_type_name(t.type), gbs, peak > 0 ? 100 * gbs / peak : 0,
               100 * gbs / copy);
    }
    cudaFree(t.d);
    cudaFree(t.a);
    cudaFree(t.b);
    ringx_kernel_stream_destroy(stream);
    stream = NULL;
}

int main(void)
{
    SRunner *sr;
    int failed;

    if (!ringx_kernels_available()) {
        printf("SKIP: no CUDA device (%s)\n", ringx_kernels_unavailable_why());
        return 77;
    }
    print_device();
    sr = srunner_create(suite());
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_VERBOSE);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (failed == 0)
        report_throughput();
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
