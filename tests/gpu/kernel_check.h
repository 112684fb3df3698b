/*
 * kernel_check.h - the checks of ringx's reduction kernels, shared by
 * check_kernels.c (the kernels on a GPU) and check_kernels_cpu.c (the
 * kernels' code run on the CPU, for machines without a GPU).
 *
 * The reference is ringx_host_reduce(), which check_reduce.c tests against
 * a naive implementation: the kernels must give the same bits, except that
 * any two NaNs match (which NaN an add or multiply returns differs between
 * x86 and the GPU).  The memory the kernels work on is reached through the
 * callbacks of kc_memory_t, so the same checks run on device and host
 * memory.
 */
#ifndef KERNEL_CHECK_H
#define KERNEL_CHECK_H

#include <stddef.h>

#include "ringx_ops.h"

typedef struct kc_memory {
    const char *name;                       /* for messages */
    void *(*alloc)(size_t bytes);           /* 256-byte aligned */
    void (*release)(void *p);
    void (*put)(void *dst, const void *host_src, size_t bytes);
    void (*get)(void *host_dst, const void *src, size_t bytes);
    void (*set)(void *dst, int byte, size_t bytes);
    /* The reduction under test, finished when it returns. */
    int (*reduce)(void *dst, const void *a, const void *b, size_t n,
                  ringx_type_t type, ringx_op_t op);
} kc_memory_t;

/* Where the operands lie: offsets from a 16-byte boundary in units of the
 * element type's alignment, and which operands are the same buffer. */
typedef enum { KC_SEPARATE, KC_DST_IS_A, KC_DST_IS_B, KC_ALL_SAME } kc_alias_t;

typedef struct kc_layout {
    kc_alias_t alias;
    unsigned off_a, off_b, off_d;           /* 0 .. KC_MAX_OFFSET */
} kc_layout_t;

#define KC_MAX_OFFSET 3

/* The largest count the checks use: 2^20 + 3, past any power of two. */
#define KC_LARGE_N ((1u << 20) + 3)

/* Allocates buffers for counts up to max_n; kc_end frees them. */
void kc_begin(const kc_memory_t *mem, size_t max_n);
void kc_end(void);

/* One reduction: fresh inputs, the kernel, and a comparison of the result,
 * the guard bytes around it and the inputs it must leave alone.  Fails the
 * running Check test with a message naming the case. */
void kc_check(ringx_type_t t, ringx_op_t op, size_t n,
              const kc_layout_t *layout);

/* Every valid (type, op) pair x the counts 0, 1, 3, 17, 1000 (and
 * KC_LARGE_N if `large`) x the layouts of one group.  Returns the number
 * of reductions checked. */
typedef enum {
    KC_ALIGNED,         /* all three on a 16-byte boundary */
    KC_MISALIGNED,      /* equally or differently placed off one */
    KC_ALIASED          /* dst == a, dst == b, dst == a == b */
} kc_group_t;

size_t kc_check_group(kc_group_t group, int large);

#endif /* KERNEL_CHECK_H */
