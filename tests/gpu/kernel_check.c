/*
 * kernel_check.c - see kernel_check.h.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"
#include "ringx_half.h"
#include "ringx_host_reduce.h"

#define GUARD_BYTES 64
#define GUARD_FILL  0xA5
/* Room for KC_MAX_OFFSET units of up to 8 bytes before the data. */
#define OFFSET_ROOM 32

static const kc_memory_t *mem;
static size_t max_bytes;
/* The three operands' blocks in the memory under test, and host copies:
 * the inputs, the reference result and what came back. */
static void *blk[3];
static unsigned char *in_a, *in_b, *want, *back;

/* ---- inputs ------------------------------------------------------------ */

static uint64_t rng;

/* xorshift64*: fast, and good enough to spread bits over every width. */
static uint64_t next(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1DULL;
}

/* Mostly finite values with full mantissas (products and sums round),
 * over a range where products neither overflow nor underflow; sometimes
 * a value that tests the edges. */
static double random_real(void)
{
    static const double special[] = { 0.0, -0.0, INFINITY, -INFINITY, NAN,
                                      4.9e-324, 1.4e-45, 3.4e38 };
    uint64_t r = next();

    if (r % 16 == 0)
        return special[(r >> 8) % (sizeof special / sizeof special[0])];
    return ldexp(1.0 + (double)(r >> 11) / 9007199254740992.0,
                 (int)((r >> 4) % 61) - 30) * (r & 2 ? -1 : 1);
}

static void store_real(unsigned char *p, ringx_type_t t, double v)
{
    if (t == RINGX_TYPE_FLOAT16) {
        /* 2^-38 .. 2^22: zeros, subnormals, normals and overflows alike */
        uint16_t h = ringx_float_to_half((float)ldexp(v, -8));
        memcpy(p, &h, sizeof h);
    } else if (t == RINGX_TYPE_FLOAT || t == RINGX_TYPE_CFLOAT) {
        float f = (float)v;
        memcpy(p, &f, sizeof f);
    } else {
        memcpy(p, &v, sizeof v);
    }
}

/* One element of each input.  Zeros, equal pairs and small values are
 * frequent, so that the logical ops, MIN/MAX ties and the LOC tie rule
 * are exercised, not just full-range values. */
static void random_pair(unsigned char *x, unsigned char *y, ringx_type_t t)
{
    size_t size = ringx_type_size(t);
    ringx_type_group_t g = ringx_type_group(t);
    uint64_t r = next();

    for (size_t k = 0; k < size; k += 8) {
        uint64_t bx = next(), by = next();
        memcpy(x + k, &bx, size - k < 8 ? size - k : 8);
        memcpy(y + k, &by, size - k < 8 ? size - k : 8);
    }
    if (g == RINGX_GROUP_FLOATING || g == RINGX_GROUP_COMPLEX) {
        size_t part = g == RINGX_GROUP_COMPLEX ? size / 2 : size;
        for (size_t k = 0; k < size; k += part) {
            store_real(x + k, t, random_real());
            store_real(y + k, t, random_real());
        }
    } else if (g == RINGX_GROUP_PAIR) {
        int v[2] = { (int)(next() % 9) - 4, (int)(next() % 9) - 4 };
        int i[2] = { (int)(next() % 8) - 2, (int)(next() % 8) - 2 };
        for (int k = 0; k < 2; k++) {
            unsigned char *p = k == 0 ? x : y;
            if (t == RINGX_TYPE_FLOAT_INT) {
                float f = v[k] * 0.5f;
                memcpy(p, &f, sizeof f);
            } else {
                memcpy(p, &v[k], sizeof v[k]);
            }
            memcpy(p + 4, &i[k], sizeof i[k]);
        }
    }
    switch (r % 8) {
    case 0: memset(x, 0, size); break;
    case 1: memset(y, 0, size); break;
    case 2: memcpy(y, x, size); break;
    case 3:
        if (g == RINGX_GROUP_INTEGER) {     /* -3 .. 3, sign-extended */
            int64_t s = (int64_t)((r >> 8) % 7) - 3;
            memcpy(x, &s, size);            /* little endian: low bytes */
        }
        break;
    default: break;
    }
}

/* ---- comparison ------------------------------------------------------- */

static int reals_same(const unsigned char *p, const unsigned char *q,
                      size_t width)
{
    if (memcmp(p, q, width) == 0)
        return 1;
    if (width == sizeof(uint16_t)) {
        uint16_t x, y;
        memcpy(&x, p, sizeof x);
        memcpy(&y, q, sizeof y);
        return isnan(ringx_half_to_float(x)) && isnan(ringx_half_to_float(y));
    }
    if (width == sizeof(float)) {
        float x, y;
        memcpy(&x, p, sizeof x);
        memcpy(&y, q, sizeof y);
        return isnan(x) && isnan(y);
    }
    double x, y;
    memcpy(&x, p, sizeof x);
    memcpy(&y, q, sizeof y);
    return isnan(x) && isnan(y);
}

static int element_same(const unsigned char *p, const unsigned char *q,
                        ringx_type_t t)
{
    size_t size = ringx_type_size(t);
    ringx_type_group_t g = ringx_type_group(t);

    if (g == RINGX_GROUP_FLOATING)
        return reals_same(p, q, size);
    if (g == RINGX_GROUP_COMPLEX)
        return reals_same(p, q, size / 2) &&
               reals_same(p + size / 2, q + size / 2, size / 2);
    return memcmp(p, q, size) == 0;
}

/* ---- one reduction ---------------------------------------------------- */

/* The alignment the kernels require: that of the members. */
static size_t unit_of(ringx_type_t t)
{
    switch (ringx_type_group(t)) {
    case RINGX_GROUP_COMPLEX: return ringx_type_size(t) / 2;
    case RINGX_GROUP_PAIR:    return 4;
    default:                  return ringx_type_size(t);
    }
}

void kc_begin(const kc_memory_t *m, size_t max_n)
{
    mem = m;
    max_bytes = GUARD_BYTES + OFFSET_ROOM + max_n * 16 + GUARD_BYTES;
    for (int k = 0; k < 3; k++) {
        blk[k] = mem->alloc(max_bytes);
        ck_assert_msg(blk[k] != NULL, "%s: cannot allocate %zu bytes",
                      mem->name, max_bytes);
    }
    in_a = malloc(max_bytes);
    in_b = malloc(max_bytes);
    want = malloc(max_bytes);
    back = malloc(max_bytes);
    ck_assert(in_a != NULL && in_b != NULL && want != NULL && back != NULL);
}

void kc_end(void)
{
    for (int k = 0; k < 3; k++)
        mem->release(blk[k]);
    free(in_a);
    free(in_b);
    free(want);
    free(back);
}

static const char *alias_name(kc_alias_t alias)
{
    static const char *const names[] = { "separate", "dst == a", "dst == b",
                                         "dst == a == b" };
    return names[alias];
}

/* Checks one block: guard bytes, then `bytes` equal to `expect` (element
 * by element if is_result), then guard bytes again. */
static void check_block(const void *block, size_t start, size_t bytes,
                        const unsigned char *expect, int is_result,
                        ringx_type_t t, const char *what, const char *ctx)
{
    size_t size = ringx_type_size(t), span = start + bytes + GUARD_BYTES;

    mem->get(back, block, span);
    for (size_t k = 0; k < start; k++)
        ck_assert_msg(back[k] == GUARD_FILL, "%s: %s: byte %zu before it "
                      "changed", ctx, what, start - k);
    for (size_t i = 0; i < bytes; i += size) {
        int same = is_result ? element_same(back + start + i, expect + i, t)
                             : memcmp(back + start + i, expect + i, size) == 0;
        ck_assert_msg(same, "%s: %s: element %zu %s", ctx, what, i / size,
                      is_result ? "differs from ringx_host_reduce"
                                : "changed");
    }
    for (size_t k = 0; k < GUARD_BYTES; k++)
        ck_assert_msg(back[start + bytes + k] == GUARD_FILL,
                      "%s: %s: byte %zu after it changed", ctx, what, k);
}

void kc_check(ringx_type_t t, ringx_op_t op, size_t n,
              const kc_layout_t *l)
{
    size_t size = ringx_type_size(t), bytes = n * size, unit = unit_of(t);
    size_t start[3] = { GUARD_BYTES + l->off_a * unit,
                        GUARD_BYTES + l->off_b * unit,
                        GUARD_BYTES + l->off_d * unit };
    size_t span_max = GUARD_BYTES + OFFSET_ROOM + bytes + GUARD_BYTES;
    unsigned char *p[3];
    char ctx[160];

    ck_assert_uint_le(span_max, max_bytes);
    snprintf(ctx, sizeof ctx, "%s: %s %s n=%zu %s (offsets %u %u %u)",
             mem->name, ringx_type_name(t), ringx_op_name(op), n,
             alias_name(l->alias), l->off_a, l->off_b, l->off_d);

    rng = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)t << 48) ^ ((uint64_t)op << 40)
          ^ ((uint64_t)l->alias << 36) ^ ((uint64_t)l->off_a << 34)
          ^ ((uint64_t)l->off_b << 32) ^ n;
    for (size_t i = 0; i < bytes; i += size)
        random_pair(in_a + i, in_b + i, t);
    if (l->alias == KC_ALL_SAME)
        memcpy(in_b, in_a, bytes);
    ringx_host_reduce(want, in_a, in_b, n, t, op);

    for (int k = 0; k < 3; k++) {
        mem->set(blk[k], GUARD_FILL, span_max);
        p[k] = (unsigned char *)blk[k] + start[k];
    }
    /* Operands that are the same buffer: the shared one is a's (or b's). */
    switch (l->alias) {
    case KC_DST_IS_A:  p[2] = p[0]; start[2] = start[0]; break;
    case KC_DST_IS_B:  p[2] = p[1]; start[2] = start[1]; break;
    case KC_ALL_SAME:
        p[1] = p[2] = p[0];
        start[1] = start[2] = start[0];
        break;
    default: break;
    }
    mem->put(p[0], in_a, bytes);
    if (l->alias != KC_ALL_SAME)
        mem->put(p[1], in_b, bytes);

    ck_assert_msg(mem->reduce(p[2], p[0], p[1], n, t, op) == 0,
                  "%s: the reduction failed", ctx);

    const void *dblk = l->alias == KC_DST_IS_B ? blk[1]
                     : l->alias == KC_SEPARATE ? blk[2] : blk[0];
    check_block(dblk, start[2], bytes, want, 1, t, "dst", ctx);
    if (l->alias == KC_SEPARATE || l->alias == KC_DST_IS_B)
        check_block(blk[0], start[0], bytes, in_a, 0, t, "input a", ctx);
    if (l->alias == KC_SEPARATE || l->alias == KC_DST_IS_A)
        check_block(blk[1], start[1], bytes, in_b, 0, t, "input b", ctx);
}

/* ---- the groups ------------------------------------------------------- */

static const kc_layout_t aligned[] = { { KC_SEPARATE, 0, 0, 0 } };

/* The first two are equally placed off the boundary (vector body after a
 * scalar head); the others are not (all scalar). */
static const kc_layout_t misaligned[] = {
    { KC_SEPARATE, 1, 1, 1 }, { KC_SEPARATE, 3, 3, 3 },
    { KC_SEPARATE, 1, 0, 3 }, { KC_SEPARATE, 0, 2, 1 },
    { KC_SEPARATE, 3, 1, 2 },
};

static const kc_layout_t aliased[] = {
    { KC_DST_IS_A, 0, 0, 0 }, { KC_DST_IS_B, 0, 0, 0 },
    { KC_ALL_SAME, 0, 0, 0 }, { KC_DST_IS_A, 1, 1, 0 },
    { KC_DST_IS_B, 2, 1, 0 }, { KC_ALL_SAME, 3, 0, 0 },
};

size_t kc_check_group(kc_group_t group, int large)
{
    static const size_t counts[] = { 0, 1, 3, 17, 1000, KC_LARGE_N };
    const kc_layout_t *layouts = group == KC_ALIGNED ? aligned
                               : group == KC_MISALIGNED ? misaligned : aliased;
    size_t nlayouts = group == KC_ALIGNED ? sizeof aligned / sizeof aligned[0]
                    : group == KC_MISALIGNED
                        ? sizeof misaligned / sizeof misaligned[0]
                        : sizeof aliased / sizeof aliased[0];
    size_t ncounts = sizeof counts / sizeof counts[0] - (large ? 0 : 1);
    size_t checked = 0, pairs = 0;

    for (ringx_type_t t = 0; t < RINGX_TYPE_COUNT; t++) {
        for (ringx_op_t op = 0; op < RINGX_OP_COUNT; op++) {
            if (!ringx_op_valid(op, t))
                continue;
            pairs++;
            for (size_t c = 0; c < ncounts; c++)
                for (size_t k = 0; k < nlayouts; k++, checked++)
                    kc_check(t, op, counts[c], &layouts[k]);
        }
    }
    ck_assert_uint_eq(pairs, 106);     /* ringx_op_valid: 80 integer, 12 floating, 14 more */
    return checked;
}
