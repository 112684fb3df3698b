/*
 * check_kernels_cpu.c - what can be checked of the CUDA kernels' API and
 * code without a GPU, so that it is checked by every CUDA build:
 *
 *  - ringx_kernels_available() answers without crashing, and answers 0
 *    where the CUDA driver cannot even be loaded;
 *  - the argument checks (invalid pairs, NULL, misaligned buffers) refuse
 *    before any CUDA call, and with no device every call says ENODEV;
 *  - the kernels' own code, run on the CPU thread by thread through
 *    ringx_kernel_reduce_on_cpu(), gives ringx_host_reduce()'s results for
 *    every valid (type, op), every count and layout of check_kernels.
 */
#include <check.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"
#include "ringx_kernels.h"

/* Whether the CUDA driver library is there at all. */
static int driver_loadable(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

    if (h == NULL)
        return 0;
    dlclose(h);
    return 1;
}

START_TEST(test_available_answers)
{
    int avail = ringx_kernels_available();

    ck_assert_msg(avail == 0 || avail == 1, "returned %d", avail);
    if (!driver_loadable())
        ck_assert_msg(avail == 0, "no libcuda.so.1, yet available() = %d",
                      avail);
    /* Asking again gives the same answer (nothing was left half set up). */
    ck_assert_int_eq(ringx_kernels_available(), avail);
    /* A 0 comes with its reason, for the tests' SKIP lines. */
    if (!avail) {
        const char *why = ringx_kernels_unavailable_why();
        ck_assert_msg(why != NULL && why[0] != '\0', "no reason given for 0");
        printf("ringx_kernels_available() = 0: %s\n", why);
    }
}
END_TEST

START_TEST(test_no_device_means_enodev)
{
    int dst[4] = { 0 }, a[4] = { 1, 2, 3, 4 }, b[4] = { 5, 6, 7, 8 };
    void *stream = NULL;

    if (ringx_kernels_available())
        return;     /* check_kernels covers the device */
    ck_assert_int_eq(ringx_kernel_reduce(dst, a, b, 4, RINGX_TYPE_INT32,
                                         RINGX_OP_SUM, NULL),
                     RINGX_KERNEL_ENODEV);
    ck_assert_int_eq(ringx_kernel_stream_create(&stream),
                     RINGX_KERNEL_ENODEV);
    ck_assert_int_eq(ringx_kernel_sync(NULL), RINGX_KERNEL_ENODEV);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(dst[i], 0);
}
END_TEST

/* Both entry points must refuse before touching memory or CUDA, so host
 * buffers are safe to pass to the GPU one here. */
static void expect_einval(void *d, const void *a, const void *b, size_t n,
                          ringx_type_t t, ringx_op_t op)
{
    ck_assert_int_eq(ringx_kernel_reduce(d, a, b, n, t, op, NULL),
                     RINGX_KERNEL_EINVAL);
    ck_assert_int_eq(ringx_kernel_reduce_on_cpu(d, a, b, n, t, op),
                     RINGX_KERNEL_EINVAL);
}

START_TEST(test_invalid_arguments)
{
    _Alignas(16) unsigned char d[64], a[64], b[64];
    size_t invalid = 0;

    memset(a, 1, sizeof a);
    memset(b, 2, sizeof b);
    memset(d, 0x5C, sizeof d);
    for (ringx_type_t t = 0; t < RINGX_TYPE_COUNT; t++) {
        for (ringx_op_t op = 0; op < RINGX_OP_COUNT; op++) {
            if (ringx_op_valid(op, t))
                continue;
            expect_einval(d, a, b, 2, t, op);
            expect_einval(d, a, b, 0, t, op);
            invalid++;
        }
    }
    ck_assert_uint_eq(invalid, RINGX_TYPE_COUNT * RINGX_OP_COUNT - 106);
    expect_einval(d, a, b, 1, RINGX_TYPE_COUNT, RINGX_OP_SUM);
    expect_einval(d, a, b, 1, RINGX_TYPE_INT8, RINGX_OP_COUNT);
    expect_einval(d, a, b, 1, (ringx_type_t)-1, (ringx_op_t)-1);

    /* NULL buffers are refused unless there is nothing to do. */
    expect_einval(NULL, a, b, 1, RINGX_TYPE_INT32, RINGX_OP_SUM);
    expect_einval(d, NULL, b, 1, RINGX_TYPE_INT32, RINGX_OP_SUM);
    expect_einval(d, a, NULL, 1, RINGX_TYPE_INT32, RINGX_OP_SUM);
    ck_assert_int_eq(ringx_kernel_reduce(NULL, NULL, NULL, 0,
                                         RINGX_TYPE_INT32, RINGX_OP_SUM, NULL),
                     0);
    ck_assert_int_eq(ringx_kernel_reduce_on_cpu(NULL, NULL, NULL, 0,
                                                RINGX_TYPE_INT32, RINGX_OP_SUM),
                     0);

    /* Buffers off their members' alignment would fault on a GPU. */
    expect_einval(d + 1, a, b, 3, RINGX_TYPE_INT32, RINGX_OP_SUM);
    expect_einval(d, a + 2, b, 3, RINGX_TYPE_INT32, RINGX_OP_SUM);
    expect_einval(d, a, b + 4, 3, RINGX_TYPE_DOUBLE, RINGX_OP_MAX);
    expect_einval(d, a, b + 4, 3, RINGX_TYPE_CDOUBLE, RINGX_OP_PROD);
    expect_einval(d + 2, a, b, 3, RINGX_TYPE_FLOAT_INT, RINGX_OP_MINLOC);
    expect_einval(d, a + 1, b, 3, RINGX_TYPE_INT16, RINGX_OP_BXOR);

    for (size_t k = 0; k < sizeof d; k++)
        ck_assert_uint_eq(d[k], 0x5C);
}
END_TEST

/* ---- the kernels' code on the CPU -------------------------------------- */

static void *host_alloc(size_t bytes)
{
    return aligned_alloc(256, (bytes + 255) / 256 * 256);
}

static void host_put(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
}

static void host_set(void *dst, int byte, size_t bytes)
{
    memset(dst, byte, bytes);
}

static const kc_memory_t cpu_memory = {
    .name = "cpu",
    .alloc = host_alloc,
    .release = free,
    .put = host_put,
    .get = host_put,
    .set = host_set,
    .reduce = ringx_kernel_reduce_on_cpu,
};

static void cpu_begin(void)
{
    kc_begin(&cpu_memory, 1000);    /* the largest count below KC_LARGE_N */
}

/* Every group, without KC_LARGE_N: a GPU thread run one by one on the CPU
 * takes minutes over 2^20 elements of every (type, op) pair. */
START_TEST(test_cpu_groups)
{
    ck_assert_uint_gt(kc_check_group((kc_group_t)_i, 0), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("kernels_cpu");
    TCase *api = tcase_create("api");
    TCase *code = tcase_create("code");

    tcase_add_test(api, test_available_answers);
    tcase_add_test(api, test_no_device_means_enodev);
    tcase_add_test(api, test_invalid_arguments);
    tcase_add_checked_fixture(code, cpu_begin, kc_end);
    tcase_add_loop_test(code, test_cpu_groups, KC_ALIGNED, KC_ALIASED + 1);
    tcase_set_timeout(api, 60);
    tcase_set_timeout(code, 600);
    suite_add_tcase(s, api);
    suite_add_tcase(s, code);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
