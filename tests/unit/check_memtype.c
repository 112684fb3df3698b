/*
 * check_memtype.c - memory-type detection where no CUDA driver is
 * installed or none is initialised: every pointer is host memory, and the
 * check costs little (printed, not asserted: timings are the benchmark's).
 * The device kinds are checked on a GPU by tests/gpu/check_kernels.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ringx_memtype.h"

START_TEST(test_host_pointers)
{
    int on_stack = 0, device = 7;
    void *heap = calloc(1, 32);

    ck_assert_int_eq(ringx_memtype_of(heap, &device), RINGX_MEMTYPE_HOST);
    ck_assert_int_eq(device, -1);
    ck_assert_int_eq(ringx_memtype_of(&on_stack, &device), RINGX_MEMTYPE_HOST);
    ck_assert_int_eq(ringx_memtype_of(NULL, &device), RINGX_MEMTYPE_HOST);
    ck_assert(!ringx_memtype_on_device(RINGX_MEMTYPE_HOST));
    ck_assert(!ringx_memtype_on_device(RINGX_MEMTYPE_PINNED));
    ck_assert(ringx_memtype_on_device(RINGX_MEMTYPE_DEVICE));
    ck_assert(ringx_memtype_on_device(RINGX_MEMTYPE_MANAGED));
    ck_assert_str_eq(ringx_memtype_name(RINGX_MEMTYPE_MANAGED), "managed");
    free(heap);
}
END_TEST

START_TEST(test_cost_without_driver)
{
    const int reps = 1000000;
    void *heap = calloc(1, 32);
    struct timespec t0, t1;
    int device, hosts = 0;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < reps; i++) {
        hosts += ringx_memtype_of(heap, &device) == RINGX_MEMTYPE_HOST;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_int_eq(hosts, reps);
    printf("memtype detection without a CUDA driver: %.1f ns per buffer\n",
           ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / reps);
    free(heap);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("memtype");
    TCase *tc = tcase_create("host");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, test_host_pointers);
    tcase_add_test(tc, test_cost_without_driver);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_VERBOSE);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
