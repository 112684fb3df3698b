/*
 * check_reduce.c - unit tests of ringx_host_reduce().
 *
 * Every valid (type, op) pair is checked against a deliberately naive,
 * one-element-at-a-time reference written here, so that a mistake shared
 * with the implementation's macros cannot hide itself.  float16 is checked
 * against binary16 written here by arithmetic on doubles (frexp, ldexp and
 * rint rather than ringx_half.h's bit manipulation), itself checked
 * against the compiler's _Float16 where the compiler has one (GCC 12 and
 * later on x86; GCC 11, as on Ubuntu 22.04, has none).
 * ringx_host_reduce_all is checked against exact results.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringx_host_reduce.h"

#define GUARD_BYTES 64
#define GUARD_FILL  0xA5
#define FILL_BYTE   0x5C
#define MAX_N       1000
#define MAX_ELEM    16
#define MAX_OFFSET  3

static const size_t test_counts[] = { 0, 1, 3, 17, 1000 };

/* ---- deterministic input data ---------------------------------------- */

static uint64_t lcg_state;

static void lcg_seed(uint64_t seed)
{
    lcg_state = seed;
}

static uint64_t lcg_next(void)
{
    /* Knuth's MMIX constants; the high half has the better bits. */
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return lcg_state >> 32;
}

static uint64_t lcg_next64(void)
{
    uint64_t hi = lcg_next();
    return (hi << 32) | lcg_next();
}

static int lcg_range(int lo, int hi)
{
    return lo + (int)(lcg_next() % (uint64_t)(hi - lo + 1));
}

static int is_signed_int(ringx_type_t t)
{
    return t >= RINGX_TYPE_INT8 && t <= RINGX_TYPE_INT64;
}

/* Stores the low bits of v: unsigned conversion is modular, and copying
 * the unsigned bytes into a signed slot gives the two's complement value. */
static void store_int_bits(void *p, ringx_type_t t, uint64_t v)
{
    switch (ringx_type_size(t)) {
    case 1: { uint8_t x = (uint8_t)v;   memcpy(p, &x, 1); break; }
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
}

/* Signed types are sign-extended, so int64_t comparisons order them. */
static int64_t load_int(const void *p, ringx_type_t t)
{
    switch (t) {
    case RINGX_TYPE_INT8:   { int8_t x;   memcpy(&x, p, 1); return x; }
    case RINGX_TYPE_INT16:  { int16_t x;  memcpy(&x, p, 2); return x; }
    case RINGX_TYPE_INT32:  { int32_t x;  memcpy(&x, p, 4); return x; }
    case RINGX_TYPE_INT64:  { int64_t x;  memcpy(&x, p, 8); return x; }
    case RINGX_TYPE_UINT16: { uint16_t x; memcpy(&x, p, 2); return x; }
    case RINGX_TYPE_UINT32: { uint32_t x; memcpy(&x, p, 4); return x; }
    case RINGX_TYPE_UINT64: { uint64_t x; memcpy(&x, p, 8);
                              return (int64_t)x; }
    default:                { uint8_t x;  memcpy(&x, p, 1); return x; }
    }
}

/* Mixes zeros, extremes and small values (for MIN/MAX ties and logical
 * ops) into full-range values (which overflow SUM and PROD). */
static void random_int(void *p, ringx_type_t t)
{
    unsigned bits = 8 * (unsigned)ringx_type_size(t);
    uint64_t max_unsigned = bits == 64 ? UINT64_MAX : (1ULL << bits) - 1;
    uint64_t top_bit = 1ULL << (bits - 1);

    int sig = is_signed_int(t);

    switch (lcg_next() % 8) {
    case 0: store_int_bits(p, t, 0); break;
    case 1: store_int_bits(p, t, sig ? top_bit - 1 : max_unsigned); break;
    case 2: store_int_bits(p, t, sig ? top_bit : 0); break;
    case 3: store_int_bits(p, t, (uint64_t)(int64_t)lcg_range(-3, 3)); break;
    default: store_int_bits(p, t, lcg_next64()); break;
    }
}

/* Multiples of 1/16 below 2^7: sums and products of two of them are
 * exact even in float, so the result cannot depend on evaluation order
 * or on fused multiply-adds. */
static double random_dyadic(void)
{
    return lcg_range(-2000, 2000) / 16.0;
}

static double random_real(void)
{
    switch (lcg_next() % 16) {
    case 0: return INFINITY;
    case 1: return -INFINITY;
    case 2: return NAN;
    case 3: return -0.0;
    case 4: return 0.0;
    default: return random_dyadic();
    }
}

/* ---- the binary16 reference ------------------------------------------ */

/* A double rounded to binary16, to nearest with ties to even: every step
 * below is exact in double except rint, which rounds once. */
static uint16_t ref_half_of(double x)
{
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double a = fabs(x), n;
    int e;

    if (isnan(x))
        return sign | 0x7E00;
    if (a < 0x1p-14)                    /* subnormal: units of 2^-24 (1024 is the least normal) */
        return sign | (uint16_t)rint(a * 0x1p24);
    frexp(a, &e);                       /* a = m 2^e, 1/2 <= m < 1 */
    n = rint(ldexp(a, 11 - e));         /* 11 significant bits: 1024 <= n <= 2048 */
    if (n == 2048) {
        n = 1024;
        e++;
    }
    if (isinf(a) || e - 1 > 15)
        return sign | 0x7C00;
    return sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)(n - 1024);
}

static double ref_half_value(uint16_t h)
{
    int exp = (h >> 10) & 0x1F, man = h & 0x3FF;
    double v = exp == 0    ? ldexp(man, -24)
               : exp == 31 ? (man ? NAN : INFINITY)
                           : ldexp(1024 + man, exp - 25);
    return h & 0x8000 ? -v : v;
}

/* Specials, subnormals, values that overflow when added or multiplied,
 * and dyadics whose sums are exact. */
static uint16_t random_half(void)
{
    switch (lcg_next() % 16) {
    case 0: return ref_half_of(INFINITY);
    case 1: return ref_half_of(-INFINITY);
    case 2: return ref_half_of(NAN);
    case 3: return ref_half_of(-0.0);
    case 4: return ref_half_of(lcg_range(-1023, 1023) * 0x1p-24);    /* subnormal */
    case 5: return ref_half_of(lcg_range(-65504, 65504));
    case 6: return ref_half_of(lcg_range(-2047, 2047) * 0x1p-11);
    default: return ref_half_of(lcg_range(-2000, 2000) / 16.0);
    }
}

static void random_element(void *p, ringx_type_t t)
{
    switch (t) {
    case RINGX_TYPE_FLOAT16: {
        uint16_t x = random_half();
        memcpy(p, &x, sizeof x);
        break;
    }
    case RINGX_TYPE_FLOAT: {
        float x = (float)random_real();
        memcpy(p, &x, sizeof x);
        break;
    }
    case RINGX_TYPE_DOUBLE: {
        double x = random_real();
        memcpy(p, &x, sizeof x);
        break;
    }
    case RINGX_TYPE_CFLOAT: {
        float x[2] = { (float)random_dyadic(), (float)random_dyadic() };
        memcpy(p, x, sizeof x);
        break;
    }
    case RINGX_TYPE_CDOUBLE: {
        double x[2] = { random_dyadic(), random_dyadic() };
        memcpy(p, x, sizeof x);
        break;
    }
    case RINGX_TYPE_BOOL:
    case RINGX_TYPE_BYTE: {
        uint8_t x = lcg_next() % 3 == 0 ? 0 : (uint8_t)lcg_next();
        memcpy(p, &x, 1);
        break;
    }
    case RINGX_TYPE_FLOAT_INT: {
        /* Few distinct values and indices, so that ties are common. */
        struct { float v; int i; } x = { lcg_range(-4, 4) * 0.5f,
                                         lcg_range(-2, 5) };
        memcpy(p, &x, sizeof x);
        break;
    }
    case RINGX_TYPE_2INT: {
        struct { int v; int i; } x = { lcg_range(-4, 4), lcg_range(-2, 5) };
        memcpy(p, &x, sizeof x);
        break;
    }
    default:
        random_int(p, t);
        break;
    }
}

static void random_fill(void *buf, size_t n, ringx_type_t t)
{
    size_t size = ringx_type_size(t);
    for (size_t i = 0; i < n; i++)
        random_element((unsigned char *)buf + i * size, t);
}

/* ---- naive reference ---------------------------------------------------- */

static void ref_integer(void *d, const void *a, const void *b,
                        ringx_type_t t, ringx_op_t op)
{
    int64_t sa = load_int(a, t), sb = load_int(b, t);
    /* The low bits of the 64-bit unsigned sum and product are the wrapped
     * result at every narrower width, for signed types too. */
    uint64_t ua = (uint64_t)sa, ub = (uint64_t)sb, r = 0;
    int a_lt_b = is_signed_int(t) ? sa < sb : ua < ub;

    switch (op) {
    case RINGX_OP_SUM:  r = ua + ub; break;
    case RINGX_OP_PROD: r = ua * ub; break;
    case RINGX_OP_MIN:  r = a_lt_b ? ua : ub; break;
    case RINGX_OP_MAX:  r = a_lt_b ? ub : ua; break;
    case RINGX_OP_LAND: r = (ua != 0) && (ub != 0); break;
    case RINGX_OP_LOR:  r = (ua != 0) || (ub != 0); break;
    case RINGX_OP_LXOR: r = (ua != 0) != (ub != 0); break;
    case RINGX_OP_BAND: r = ua & ub; break;
    case RINGX_OP_BOR:  r = ua | ub; break;
    case RINGX_OP_BXOR: r = ua ^ ub; break;
    default: ck_abort_msg("no integer reference for op %d", op);
    }
    store_int_bits(d, t, r);
}

/* The real references, one per type, each computing in its own type. */
#define REF_REAL(name, T)                                               \
    static T name(T a, T b, ringx_op_t op)                              \
    {                                                                   \
        switch (op) {                                                   \
        case RINGX_OP_SUM:  return a + b;                               \
        case RINGX_OP_PROD: return a * b;                               \
        case RINGX_OP_MIN:  return a < b ? a : b;                       \
        case RINGX_OP_MAX:  return a > b ? a : b;                       \
        default: ck_abort_msg(#name ": no reference for op %d", op);    \
        }                                                               \
        return 0;                                                       \
    }                                                                   \
    static void name##_element(void *d, const void *a, const void *b,   \
                               ringx_op_t op)                           \
    {                                                                   \
        T x, y, r;                                                      \
        memcpy(&x, a, sizeof x);                                        \
        memcpy(&y, b, sizeof y);                                        \
        r = name(x, y, op);                                             \
        memcpy(d, &r, sizeof r);                                        \
    }

REF_REAL(ref_float, float)
REF_REAL(ref_double, double)

/* binary16 computed in double and rounded once: a sum or product of two
 * halves is exact in double (at most 51 significant bits), so this is the
 * correctly rounded result; min and max keep an operand's own bits. */
static void ref_half_element(void *d, const void *a, const void *b, ringx_op_t op)
{
    uint16_t x, y, r;
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    switch (op) {
    case RINGX_OP_SUM:  r = ref_half_of(ref_half_value(x) + ref_half_value(y)); break;
    case RINGX_OP_PROD: r = ref_half_of(ref_half_value(x) * ref_half_value(y)); break;
    case RINGX_OP_MIN:  r = ref_half_value(x) < ref_half_value(y) ? x : y; break;
    case RINGX_OP_MAX:  r = ref_half_value(x) > ref_half_value(y) ? x : y; break;
    default: ck_abort_msg("ref_half: no reference for op %d", op); return;
    }
    memcpy(d, &r, sizeof r);
}

/* The complex references: (re, im) pairs of T, product written out. */
#define REF_COMPLEX(name, T)                                            \
    static void name(void *d, const void *a, const void *b, ringx_op_t op) \
    {                                                                   \
        T x[2], y[2], r[2];                                             \
        memcpy(x, a, sizeof x);                                         \
        memcpy(y, b, sizeof y);                                         \
        if (op == RINGX_OP_SUM) {                                       \
            r[0] = x[0] + y[0];                                         \
            r[1] = x[1] + y[1];                                         \
        } else {                                                        \
            r[0] = x[0] * y[0] - x[1] * y[1];                           \
            r[1] = x[0] * y[1] + x[1] * y[0];                           \
        }                                                               \
        memcpy(d, r, sizeof r);                                         \
    }
REF_COMPLEX(ref_cfloat, float)
REF_COMPLEX(ref_cdouble, double)

static void ref_bool(void *d, const void *a, const void *b, ringx_op_t op)
{
    uint8_t x, y, r;
    memcpy(&x, a, 1);
    memcpy(&y, b, 1);
    switch (op) {
    case RINGX_OP_LAND: r = x && y; break;
    case RINGX_OP_LOR:  r = x || y; break;
    default:            r = !x != !y; break;
    }
    memcpy(d, &r, 1);
}

/* Written as separate cases rather than one condition, unlike the
 * implementation; equal values keep the smaller index for both ops. */
#define REF_LOC(name, V)                                                   \
    static void name(void *d, const void *a, const void *b, ringx_op_t op)\
    {                                                                      \
        struct { V v; int i; } x, y, r;                                    \
        memcpy(&x, a, sizeof x);                                           \
        memcpy(&y, b, sizeof y);                                           \
        if (x.v == y.v) {                                                  \
            r.v = x.v;                                                     \
            r.i = x.i < y.i ? x.i : y.i;                                   \
        } else if (op == RINGX_OP_MINLOC) {                                \
            r = x.v < y.v ? x : y;                                         \
        } else {                                                           \
            r = x.v > y.v ? x : y;                                         \
        }                                                                  \
        memcpy(d, &r, sizeof r);                                           \
    }

REF_LOC(ref_float_int, float)
REF_LOC(ref_2int, int)

static void ref_element(void *d, const void *a, const void *b,
                        ringx_type_t t, ringx_op_t op)
{
    switch (t) {
    case RINGX_TYPE_FLOAT:     ref_float_element(d, a, b, op); break;
    case RINGX_TYPE_DOUBLE:    ref_double_element(d, a, b, op); break;
    case RINGX_TYPE_FLOAT16:   ref_half_element(d, a, b, op); break;
    case RINGX_TYPE_CFLOAT:    ref_cfloat(d, a, b, op); break;
    case RINGX_TYPE_CDOUBLE:   ref_cdouble(d, a, b, op); break;
    case RINGX_TYPE_BOOL:      ref_bool(d, a, b, op); break;
    case RINGX_TYPE_FLOAT_INT: ref_float_int(d, a, b, op); break;
    case RINGX_TYPE_2INT:      ref_2int(d, a, b, op); break;
    case RINGX_TYPE_BYTE:
        ref_integer(d, a, b, RINGX_TYPE_UINT8, op);
        break;
    default:                   ref_integer(d, a, b, t, op); break;
    }
}

static void ref_reduce(void *dst, const void *a, const void *b, size_t n,
                       ringx_type_t t, ringx_op_t op)
{
    size_t size = ringx_type_size(t);
    for (size_t i = 0; i < n; i++)
        ref_element((unsigned char *)dst + i * size,
                    (const unsigned char *)a + i * size,
                    (const unsigned char *)b + i * size, t, op);
}

/* ---- comparison ------------------------------------------------------- */

/* Bitwise equal, except that any two NaNs match: which NaN payload an
 * x86 add or multiply propagates depends on its operand order. */
static int float_same(float x, float y)
{
    return memcmp(&x, &y, sizeof x) == 0 || (isnan(x) && isnan(y));
}

static int double_same(double x, double y)
{
    return memcmp(&x, &y, sizeof x) == 0 || (isnan(x) && isnan(y));
}

static int half_same(const void *p, const void *q)
{
    uint16_t x, y;
    memcpy(&x, p, sizeof x);
    memcpy(&y, q, sizeof y);
    return x == y || (isnan(ref_half_value(x)) && isnan(ref_half_value(y)));
}

static int element_same(const void *p, const void *q, ringx_type_t t)
{
    switch (t) {
    case RINGX_TYPE_FLOAT16:
        return half_same(p, q);
    case RINGX_TYPE_FLOAT:
    case RINGX_TYPE_CFLOAT: {
        float x[2], y[2];
        size_t k = t == RINGX_TYPE_CFLOAT ? 2 : 1;
        memcpy(x, p, k * sizeof x[0]);
        memcpy(y, q, k * sizeof y[0]);
        for (size_t j = 0; j < k; j++)
            if (!float_same(x[j], y[j]))
                return 0;
        return 1;
    }
    case RINGX_TYPE_DOUBLE:
    case RINGX_TYPE_CDOUBLE: {
        double x[2], y[2];
        size_t k = t == RINGX_TYPE_CDOUBLE ? 2 : 1;
        memcpy(x, p, k * sizeof x[0]);
        memcpy(y, q, k * sizeof y[0]);
        for (size_t j = 0; j < k; j++)
            if (!double_same(x[j], y[j]))
                return 0;
        return 1;
    }
    default:
        return memcmp(p, q, ringx_type_size(t)) == 0;
    }
}

static void assert_same_elements(const void *got, const void *want, size_t n,
                                 ringx_type_t t, ringx_op_t op,
                                 const char *what)
{
    size_t size = ringx_type_size(t);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(element_same((const unsigned char *)got + i * size,
                                   (const unsigned char *)want + i * size, t),
                      "%s: %s %s n=%zu differs at element %zu", what,
                      ringx_type_name(t), ringx_op_name(op), n, i);
}

/* ---- guarded buffers -------------------------------------------------- */

/* GUARD_BYTES of GUARD_FILL, a data area, and GUARD_BYTES again; the data
 * area starts 64-byte aligned plus `offset` elements. */
typedef struct {
    unsigned char *block;
    unsigned char *data;
    size_t data_bytes;
} guarded_t;

static guarded_t guarded_new(size_t n, ringx_type_t t, size_t offset)
{
    size_t size = ringx_type_size(t);
    /* aligned_alloc wants a multiple of the alignment. */
    size_t total = (2 * GUARD_BYTES + (MAX_OFFSET + MAX_N) * MAX_ELEM + 63)
                   / 64 * 64;
    guarded_t g;

    ck_assert_uint_le(n, MAX_N);
    ck_assert_uint_le(offset, MAX_OFFSET);
    g.block = aligned_alloc(64, total);
    ck_assert_ptr_nonnull(g.block);
    g.data = g.block + GUARD_BYTES + offset * size;
    g.data_bytes = n * size;
    memset(g.block, GUARD_FILL, total);
    return g;
}

static void assert_guards_intact(const guarded_t *g, const char *what)
{
    for (unsigned char *p = g->data - GUARD_BYTES; p < g->data; p++)
        ck_assert_msg(*p == GUARD_FILL, "%s: write before dst[0]", what);
    for (size_t k = 0; k < GUARD_BYTES; k++)
        ck_assert_msg(g->data[g->data_bytes + k] == GUARD_FILL,
                      "%s: write past dst[n-1] (byte %zu after)", what, k);
}

static void guarded_free(guarded_t *g)
{
    free(g->block);
}

/* ---- per-pair checks -------------------------------------------------- */

static uint64_t pair_seed(ringx_type_t t, ringx_op_t op, size_t n)
{
    return 0x9E3779B97F4A7C15ULL ^ ((uint64_t)t << 40) ^
           ((uint64_t)op << 32) ^ n;
}

/* a and b at element offsets off_a and off_b, dst at off_d, all separate. */
static void check_separate(ringx_type_t t, ringx_op_t op, size_t n,
                           size_t off_a, size_t off_b, size_t off_d)
{
    guarded_t a = guarded_new(n, t, off_a), b = guarded_new(n, t, off_b);
    guarded_t d = guarded_new(n, t, off_d), want = guarded_new(n, t, 0);

    lcg_seed(pair_seed(t, op, n));
    random_fill(a.data, n, t);
    random_fill(b.data, n, t);
    ref_reduce(want.data, a.data, b.data, n, t, op);

    ringx_host_reduce(d.data, a.data, b.data, n, t, op);
    assert_same_elements(d.data, want.data, n, t, op, "separate dst");
    assert_guards_intact(&d, "separate dst");

    guarded_free(&a);
    guarded_free(&b);
    guarded_free(&d);
    guarded_free(&want);
}

static void check_aliased(ringx_type_t t, ringx_op_t op, size_t n)
{
    guarded_t a = guarded_new(n, t, 0), b = guarded_new(n, t, 1);
    guarded_t want = guarded_new(n, t, 0), x = guarded_new(n, t, 2);
    size_t bytes = n * ringx_type_size(t);

    lcg_seed(pair_seed(t, op, n) + 1);
    random_fill(a.data, n, t);
    random_fill(b.data, n, t);
    ref_reduce(want.data, a.data, b.data, n, t, op);

    memcpy(x.data, a.data, bytes);
    ringx_host_reduce(x.data, x.data, b.data, n, t, op);
    assert_same_elements(x.data, want.data, n, t, op, "dst == a");
    assert_guards_intact(&x, "dst == a");

    memcpy(x.data, b.data, bytes);
    ringx_host_reduce(x.data, a.data, x.data, n, t, op);
    assert_same_elements(x.data, want.data, n, t, op, "dst == b");
    assert_guards_intact(&x, "dst == b");

    ref_reduce(want.data, a.data, a.data, n, t, op);
    memcpy(x.data, a.data, bytes);
    ringx_host_reduce(x.data, x.data, x.data, n, t, op);
    assert_same_elements(x.data, want.data, n, t, op, "dst == a == b");
    assert_guards_intact(&x, "dst == a == b");

    guarded_free(&a);
    guarded_free(&b);
    guarded_free(&want);
    guarded_free(&x);
}

static void check_invalid(ringx_type_t t, ringx_op_t op, size_t n)
{
    guarded_t a = guarded_new(n, t, 0), b = guarded_new(n, t, 0);
    guarded_t d = guarded_new(n, t, 0);

    lcg_seed(pair_seed(t, op, n));
    random_fill(a.data, n, t);
    random_fill(b.data, n, t);
    memset(d.data, FILL_BYTE, d.data_bytes);

    ringx_host_reduce(d.data, a.data, b.data, n, t, op);
    for (size_t k = 0; k < d.data_bytes; k++)
        ck_assert_msg(d.data[k] == FILL_BYTE,
                      "invalid pair %s %s wrote dst byte %zu",
                      ringx_type_name(t), ringx_op_name(op), k);
    assert_guards_intact(&d, "invalid pair");

    guarded_free(&a);
    guarded_free(&b);
    guarded_free(&d);
}

#define FOR_EACH_PAIR(t, op)                                               \
    for (ringx_type_t t = 0; t < RINGX_TYPE_COUNT; t++)                    \
        for (ringx_op_t op = 0; op < RINGX_OP_COUNT; op++)

#define N_COUNTS (sizeof test_counts / sizeof test_counts[0])

/* ---- tests ------------------------------------------------------------ */

START_TEST(test_all_valid_pairs)
{
    size_t checked = 0;

    FOR_EACH_PAIR(t, op) {
        if (!ringx_op_valid(op, t))
            continue;
        for (size_t k = 0; k < N_COUNTS; k++)
            check_separate(t, op, test_counts[k], 0, 0, 0);
        checked++;
    }
    /* 8 integer types x 10 ops, 3 x 4 floating, 2 x 2 complex, bool x 3,
     * byte x 3, 2 x 2 pairs. */
    ck_assert_uint_eq(checked, 80 + 12 + 4 + 3 + 3 + 4);
}
END_TEST

START_TEST(test_n_zero_writes_nothing)
{
    FOR_EACH_PAIR(t, op) {
        if (ringx_op_valid(op, t))
            check_separate(t, op, 0, 1, 2, 1);
    }
}
END_TEST

START_TEST(test_misaligned_starts)
{
    static const size_t offsets[][3] = {
        { 1, 1, 1 }, { 1, 0, 3 }, { 0, 2, 1 }, { 3, 1, 2 },
    };

    FOR_EACH_PAIR(t, op) {
        if (!ringx_op_valid(op, t))
            continue;
        for (size_t k = 0; k < sizeof offsets / sizeof offsets[0]; k++) {
            check_separate(t, op, 17, offsets[k][0], offsets[k][1],
                           offsets[k][2]);
            check_separate(t, op, 1000, offsets[k][0], offsets[k][1],
                           offsets[k][2]);
        }
    }
}
END_TEST

START_TEST(test_aliasing)
{
    FOR_EACH_PAIR(t, op) {
        if (!ringx_op_valid(op, t))
            continue;
        for (size_t k = 0; k < N_COUNTS; k++)
            check_aliased(t, op, test_counts[k]);
    }
}
END_TEST

START_TEST(test_invalid_pairs_leave_dst)
{
    size_t checked = 0;

    FOR_EACH_PAIR(t, op) {
        if (ringx_op_valid(op, t))
            continue;
        check_invalid(t, op, 17);
        checked++;
    }
    ck_assert_uint_eq(checked, RINGX_TYPE_COUNT * RINGX_OP_COUNT - 106);
    check_invalid(RINGX_TYPE_BOOL, RINGX_OP_SUM, 1000);
    check_invalid(RINGX_TYPE_FLOAT, RINGX_OP_BAND, 1000);
}
END_TEST

START_TEST(test_out_of_range_enums_ignored)
{
    unsigned char d[16], a[16] = { 1 }, b[16] = { 2 };

    memset(d, FILL_BYTE, sizeof d);
    ringx_host_reduce(d, a, b, 1, RINGX_TYPE_COUNT, RINGX_OP_SUM);
    ringx_host_reduce(d, a, b, 1, RINGX_TYPE_INT8, RINGX_OP_COUNT);
    ringx_host_reduce(d, a, b, 1, (ringx_type_t)-1, (ringx_op_t)-1);
    for (size_t k = 0; k < sizeof d; k++)
        ck_assert_uint_eq(d[k], FILL_BYTE);
}
END_TEST

/* Known answers, independent of both the reference and the LCG. */
START_TEST(test_integer_wraparound)
{
    int8_t i8a[] = { 100, -128, -128, 127 }, i8b[] = { 100, -1, -1, 1 };
    int8_t i8d[4];
    uint8_t u8a[] = { 200, 16 }, u8b[] = { 100, 16 }, u8d[2];
    int16_t i16a[] = { 300 }, i16b[] = { 300 }, i16d[1];
    uint16_t u16a[] = { 65535 }, u16b[] = { 65535 }, u16d[1];
    int32_t i32a[] = { INT32_MIN, INT32_MAX }, i32b[] = { -1, 1 }, i32d[2];
    uint32_t u32a[] = { UINT32_MAX }, u32b[] = { 2 }, u32d[1];
    int64_t i64a[] = { INT64_MAX, INT64_MIN }, i64b[] = { 1, -1 }, i64d[2];
    uint64_t u64a[] = { UINT64_MAX }, u64b[] = { UINT64_MAX }, u64d[1];

    ringx_host_reduce(i8d, i8a, i8b, 4, RINGX_TYPE_INT8, RINGX_OP_SUM);
    ck_assert_int_eq(i8d[0], -56);
    ck_assert_int_eq(i8d[1], 127);
    ck_assert_int_eq(i8d[3], -128);
    ringx_host_reduce(i8d, i8a, i8b, 4, RINGX_TYPE_INT8, RINGX_OP_PROD);
    ck_assert_int_eq(i8d[0], 16);           /* 10000 mod 256 */
    ck_assert_int_eq(i8d[1], -128);         /* -128 * -1 */

    ringx_host_reduce(u8d, u8a, u8b, 2, RINGX_TYPE_UINT8, RINGX_OP_SUM);
    ck_assert_uint_eq(u8d[0], 44);
    ringx_host_reduce(u8d, u8a, u8b, 2, RINGX_TYPE_UINT8, RINGX_OP_PROD);
    ck_assert_uint_eq(u8d[1], 0);           /* 256 */

    ringx_host_reduce(i16d, i16a, i16b, 1, RINGX_TYPE_INT16, RINGX_OP_PROD);
    ck_assert_int_eq(i16d[0], 24464);       /* 90000 - 65536 */
    ringx_host_reduce(u16d, u16a, u16b, 1, RINGX_TYPE_UINT16, RINGX_OP_PROD);
    ck_assert_uint_eq(u16d[0], 1);          /* overflows int if promoted */
    ringx_host_reduce(u16d, u16a, u16b, 1, RINGX_TYPE_UINT16, RINGX_OP_SUM);
    ck_assert_uint_eq(u16d[0], 65534);

    ringx_host_reduce(i32d, i32a, i32b, 2, RINGX_TYPE_INT32, RINGX_OP_PROD);
    ck_assert_int_eq(i32d[0], INT32_MIN);
    ringx_host_reduce(i32d, i32a, i32b, 2, RINGX_TYPE_INT32, RINGX_OP_SUM);
    ck_assert_int_eq(i32d[0], INT32_MAX);
    ck_assert_int_eq(i32d[1], INT32_MIN);
    ringx_host_reduce(u32d, u32a, u32b, 1, RINGX_TYPE_UINT32, RINGX_OP_PROD);
    ck_assert_uint_eq(u32d[0], UINT32_MAX - 1);

    ringx_host_reduce(i64d, i64a, i64b, 2, RINGX_TYPE_INT64, RINGX_OP_SUM);
    ck_assert(i64d[0] == INT64_MIN);
    ck_assert(i64d[1] == INT64_MAX);
    ringx_host_reduce(u64d, u64a, u64b, 1, RINGX_TYPE_UINT64, RINGX_OP_PROD);
    ck_assert(u64d[0] == 1);
}
END_TEST

START_TEST(test_signedness_and_logic)
{
    int8_t sa[] = { -1, 5 }, sb[] = { 1, 0 }, sd[2];
    uint8_t ua[] = { 255, 2, 0 }, ub[] = { 1, 4, 0 }, ud[3];
    uint8_t la[] = { 2, 0x80, 0, 7 }, lb[] = { 1, 0, 0, 0xff }, ld[4];

    ringx_host_reduce(sd, sa, sb, 2, RINGX_TYPE_INT8, RINGX_OP_MIN);
    ck_assert_int_eq(sd[0], -1);
    ringx_host_reduce(sd, sa, sb, 2, RINGX_TYPE_INT8, RINGX_OP_MAX);
    ck_assert_int_eq(sd[0], 1);
    ringx_host_reduce(ud, ua, ub, 3, RINGX_TYPE_UINT8, RINGX_OP_MIN);
    ck_assert_uint_eq(ud[0], 1);
    ringx_host_reduce(ud, ua, ub, 3, RINGX_TYPE_UINT8, RINGX_OP_LAND);
    ck_assert(ud[0] == 1 && ud[1] == 1 && ud[2] == 0);

    ringx_host_reduce(ld, la, lb, 4, RINGX_TYPE_BOOL, RINGX_OP_LAND);
    ck_assert(ld[0] == 1 && ld[1] == 0 && ld[2] == 0 && ld[3] == 1);
    ringx_host_reduce(ld, la, lb, 4, RINGX_TYPE_BOOL, RINGX_OP_LOR);
    ck_assert(ld[0] == 1 && ld[1] == 1 && ld[2] == 0 && ld[3] == 1);
    ringx_host_reduce(ld, la, lb, 4, RINGX_TYPE_BOOL, RINGX_OP_LXOR);
    ck_assert(ld[0] == 0 && ld[1] == 1 && ld[2] == 0 && ld[3] == 0);
    ringx_host_reduce(ld, la, lb, 4, RINGX_TYPE_BYTE, RINGX_OP_BXOR);
    ck_assert(ld[0] == 3 && ld[1] == 0x80 && ld[2] == 0 && ld[3] == 0xf8);
}
END_TEST

START_TEST(test_loc_ties_keep_smaller_index)
{
    typedef struct { float v; int i; } fi_t;
    fi_t fa[] = { { 1.0f, 7 }, { 1.0f, 2 }, { 3.0f, 9 } };
    fi_t fb[] = { { 1.0f, 3 }, { 1.0f, 5 }, { 2.0f, 0 } };
    fi_t fd[3];
    struct { int v; int i; } ia[] = { { -4, 1 }, { 6, 8 } };
    struct { int v; int i; } ib[] = { { -4, 0 }, { 6, 2 } };
    struct { int v; int i; } id[2];

    ringx_host_reduce(fd, fa, fb, 3, RINGX_TYPE_FLOAT_INT, RINGX_OP_MINLOC);
    ck_assert_int_eq(fd[0].i, 3);
    ck_assert_int_eq(fd[1].i, 2);
    ck_assert(fd[2].v == 2.0f && fd[2].i == 0);
    ringx_host_reduce(fd, fa, fb, 3, RINGX_TYPE_FLOAT_INT, RINGX_OP_MAXLOC);
    ck_assert_int_eq(fd[0].i, 3);
    ck_assert_int_eq(fd[1].i, 2);
    ck_assert(fd[2].v == 3.0f && fd[2].i == 9);

    ringx_host_reduce(id, ia, ib, 2, RINGX_TYPE_2INT, RINGX_OP_MINLOC);
    ck_assert(id[0].v == -4 && id[0].i == 0 && id[1].i == 2);
    ringx_host_reduce(id, ia, ib, 2, RINGX_TYPE_2INT, RINGX_OP_MAXLOC);
    ck_assert(id[0].v == -4 && id[0].i == 0 && id[1].i == 2);
}
END_TEST

/* ---- many inputs: ringx_host_reduce_all ------------------------------- */

#define MAX_INPUTS 8

/* Types and ops that do not accumulate wide: the chain of pairwise
 * reductions, left to right, bit for bit. */
START_TEST(test_reduce_all_matches_the_pairwise_chain)
{
    static unsigned char in[MAX_INPUTS][MAX_N * MAX_ELEM], got[MAX_N * MAX_ELEM],
        want[MAX_N * MAX_ELEM];
    const void *ptrs[MAX_INPUTS];

    FOR_EACH_PAIR(t, op) {
        int wide = (op == RINGX_OP_SUM || op == RINGX_OP_PROD) &&
                   (t == RINGX_TYPE_FLOAT || t == RINGX_TYPE_CFLOAT || t == RINGX_TYPE_FLOAT16);
        if (!ringx_op_valid(op, t) || wide)
            continue;
        for (int k = 1; k <= MAX_INPUTS; k++) {
            lcg_seed(pair_seed(t, op, (size_t)k));
            for (int j = 0; j < k; j++) {
                random_fill(in[j], 300, t);
                ptrs[j] = in[j];
            }
            memcpy(want, in[0], 300 * ringx_type_size(t));
            for (int j = 1; j < k; j++)
                ref_reduce(want, want, in[j], 300, t, op);
            ringx_host_reduce_all(got, ptrs, k, 300, t, op);
            assert_same_elements(got, want, 300, t, op, "reduce_all");
        }
    }
}
END_TEST

/* The correctly rounded product i^k of k inputs i: exact in uint64_t,
 * rounded once by the conversion. */
static float rounded_power(unsigned i, int k)
{
    uint64_t p = 1;
    for (int j = 0; j < k; j++)
        p *= i;
    return (float)p;
}

/* Every rank's input i at index i: PROD over 5 and 8 ranks rounds once. */
START_TEST(test_reduce_all_float_prod_rounds_once)
{
    enum { N = 100 };
    static float in[MAX_INPUTS][N], got[N];
    const void *ptrs[MAX_INPUTS];
    static const int ks[] = { 5, 8 };

    for (int j = 0; j < MAX_INPUTS; j++) {
        for (int i = 0; i < N; i++)
            in[j][i] = (float)(i + 1);
        ptrs[j] = in[j];
    }
    for (size_t c = 0; c < sizeof ks / sizeof ks[0]; c++) {
        int k = ks[c], chain_differs = 0;
        ringx_host_reduce_all(got, ptrs, k, N, RINGX_TYPE_FLOAT, RINGX_OP_PROD);
        for (int i = 0; i < N; i++) {
            float chain = in[0][i];
            for (int j = 1; j < k; j++)
                chain *= in[j][i];
            chain_differs += chain != rounded_power((unsigned)i + 1, k);
            ck_assert_msg(got[i] == rounded_power((unsigned)i + 1, k),
                          "k=%d: %u^%d = %.9g, want %.9g", k, i + 1, k, got[i],
                          rounded_power((unsigned)i + 1, k));
        }
        /* The left-to-right product rounds at every step and misses some:
         * the case is one where the accumulation matters. */
        ck_assert_int_gt(chain_differs, 0);
    }
}
END_TEST

/* Sums of k values whose exact sum a double holds: the result is that sum
 * rounded once (complex: each part). */
START_TEST(test_reduce_all_float_and_complex_sums_round_once)
{
    enum { N = 999 };
    static float in[MAX_INPUTS][2 * N], got[2 * N];
    const void *ptrs[MAX_INPUTS];

    for (int k = 2; k <= MAX_INPUTS; k++) {
        lcg_seed(0xF1047 + (uint64_t)k);
        for (int j = 0; j < k; j++) {
            for (int i = 0; i < 2 * N; i++)      /* bits 2^-30 .. 2^12: sums exact in double */
                in[j][i] = (float)ldexp((double)lcg_range(-(1 << 23), 1 << 23), lcg_range(-30, -11));
            ptrs[j] = in[j];
        }
        ringx_host_reduce_all(got, ptrs, k, N, RINGX_TYPE_FLOAT, RINGX_OP_SUM);
        for (int i = 0; i < N; i++) {
            double exact = 0;
            for (int j = 0; j < k; j++)
                exact += in[j][i];
            ck_assert_msg(got[i] == (float)exact, "float sum k=%d i=%d", k, i);
        }
        ringx_host_reduce_all(got, ptrs, k, N, RINGX_TYPE_CFLOAT, RINGX_OP_SUM);
        for (int i = 0; i < 2 * N; i++) {
            double exact = 0;
            for (int j = 0; j < k; j++)
                exact += in[j][i];
            ck_assert_msg(got[i] == (float)exact, "cfloat sum k=%d part %d", k, i);
        }
    }
}
END_TEST

/* Complex products of Gaussian integers: exact in double, rounded once. */
START_TEST(test_reduce_all_complex_prod_rounds_once)
{
    enum { N = 200, K = 5 };
    static float in[K][2 * N], got[2 * N];
    const void *ptrs[K];

    lcg_seed(0xC0FFEE);
    for (int j = 0; j < K; j++) {
        for (int i = 0; i < 2 * N; i++)
            in[j][i] = (float)lcg_range(-900, 900);
        ptrs[j] = in[j];
    }
    ringx_host_reduce_all(got, ptrs, K, N, RINGX_TYPE_CFLOAT, RINGX_OP_PROD);
    for (int i = 0; i < N; i++) {
        int64_t re = (int64_t)in[0][2 * i], im = (int64_t)in[0][2 * i + 1];
        for (int j = 1; j < K; j++) {
            int64_t xr = (int64_t)in[j][2 * i], xi = (int64_t)in[j][2 * i + 1];
            int64_t r = re * xr - im * xi;
            im = re * xi + im * xr;
            re = r;
        }
        ck_assert_msg(got[2 * i] == (float)re && got[2 * i + 1] == (float)im,
                      "cfloat prod %d: (%g, %g) want (%g, %g)", i, got[2 * i], got[2 * i + 1],
                      (float)re, (float)im);
    }
}
END_TEST

/* float16 sums and products of up to 4 halves (exact in double), rounded
 * once to binary16; and a sum whose rounding through float to half would
 * land on a tie and go wrong. */
START_TEST(test_reduce_all_half_rounds_once)
{
    enum { N = 1000 };
    static uint16_t in[4][N], got[N];
    const void *ptrs[4];
    static const ringx_op_t ops[] = { RINGX_OP_SUM, RINGX_OP_PROD };

    for (int k = 2; k <= 4; k++) {
        for (size_t o = 0; o < 2; o++) {
            lcg_seed(0x4A1F + (uint64_t)k * 2 + o);
            for (int j = 0; j < k; j++) {
                for (int i = 0; i < N; i++)
                    in[j][i] = ref_half_of(ldexp(lcg_range(-2047, 2047), lcg_range(-14, -6)));
                ptrs[j] = in[j];
            }
            ringx_host_reduce_all(got, ptrs, k, N, RINGX_TYPE_FLOAT16, ops[o]);
            for (int i = 0; i < N; i++) {
                double exact = ref_half_value(in[0][i]);
                for (int j = 1; j < k; j++)
                    exact = ops[o] == RINGX_OP_SUM ? exact + ref_half_value(in[j][i])
                                                   : exact * ref_half_value(in[j][i]);
                uint16_t want = ref_half_of(exact);
                ck_assert_msg(half_same(&got[i], &want), "float16 %s k=%d i=%d: %g want %g",
                              ringx_op_name(ops[o]), k, i, ref_half_value(got[i]),
                              ref_half_value(want));
            }
        }
    }

    /* 1 + 2^-11 is the tie between 1 and 1 + 2^-10; 2^-24 more rounds up.
     * In float the sum is itself a tie that goes to 1 + 2^-11. */
    uint16_t a = ref_half_of(1), b = ref_half_of(0x1p-11), c = ref_half_of(0x1p-24), r;
    const void *abc[3] = { &a, &b, &c };
    ringx_host_reduce_all(&r, abc, 3, 1, RINGX_TYPE_FLOAT16, RINGX_OP_SUM);
    ck_assert_msg(ref_half_value(r) == 1 + 0x1p-10, "1 + 2^-11 + 2^-24 gave %a",
                  ref_half_value(r));
}
END_TEST

/* The reference itself: every binary16 value decodes to what its bits
 * mean and encodes back to them; rounding at the edges (ties to even,
 * subnormals, overflow); and, where the compiler has _Float16, the same
 * conversions as the compiler's for every half and many doubles. */
START_TEST(test_half_reference)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        double v = ref_half_value((uint16_t)h);
        ck_assert_msg(isnan(v) ? (h & 0x7C00) == 0x7C00 && (h & 0x3FF) : ref_half_of(v) == h,
                      "half 0x%04x: %a encodes to 0x%04x", h, v, ref_half_of(v));
    }
    ck_assert_uint_eq(ref_half_of(65504), 0x7BFF);
    ck_assert_uint_eq(ref_half_of(65519.99), 0x7BFF);
    ck_assert_uint_eq(ref_half_of(65520), 0x7C00);          /* the tie goes to even: infinity */
    ck_assert_uint_eq(ref_half_of(-1e300), 0xFC00);
    ck_assert_uint_eq(ref_half_of(1 + 0x1p-11), 0x3C00);    /* tie to even: 1 */
    ck_assert_uint_eq(ref_half_of(1 + 3 * 0x1p-11), 0x3C02);
    ck_assert_uint_eq(ref_half_of(0x1p-25), 0x0000);        /* half the least subnormal: tie to 0 */
    ck_assert_uint_eq(ref_half_of(3 * 0x1p-26), 0x0001);
    ck_assert_uint_eq(ref_half_of(0x1p-14 - 0x1p-26), 0x0400); /* rounds up to the least normal */
    ck_assert_uint_eq(ref_half_of(-0.0), 0x8000);
#ifdef __FLT16_MAX__
    for (uint32_t h = 0; h < 0x10000; h++) {
        _Float16 f;
        uint16_t bits = (uint16_t)h;
        memcpy(&f, &bits, sizeof f);
        double v = ref_half_value(bits);
        ck_assert_msg((isnan(v) && isnan((double)f)) || v == (double)f,
                      "half 0x%04x: %a, the compiler %a", h, v, (double)f);
    }
    lcg_seed(0x16F);
    for (int i = 0; i < 200000; i++) {
        double x = ldexp((double)lcg_range(-(1 << 20), 1 << 20), lcg_range(-45, 6));
        _Float16 f = (_Float16)x;
        uint16_t bits;
        memcpy(&bits, &f, sizeof bits);
        ck_assert_msg(ref_half_of(x) == bits, "%a: 0x%04x, the compiler 0x%04x", x,
                      ref_half_of(x), bits);
    }
#else
    printf("check_reduce: no _Float16 in this compiler; the binary16 reference is checked "
           "against its own edge cases only\n");
#endif
}
END_TEST

/* dst may be the first input; n = 0 writes nothing. */
START_TEST(test_reduce_all_in_place_and_empty)
{
    float x[300], y[300], want[300];
    const void *ptrs[2] = { x, y };

    for (int i = 0; i < 300; i++) {
        x[i] = (float)i / 8;
        y[i] = (float)(300 - i) * 3;
        want[i] = x[i] + y[i];
    }
    ringx_host_reduce_all(x, ptrs, 2, 300, RINGX_TYPE_FLOAT, RINGX_OP_SUM);
    ck_assert(memcmp(x, want, sizeof x) == 0);
    ringx_host_reduce_all(NULL, ptrs, 2, 0, RINGX_TYPE_FLOAT, RINGX_OP_SUM);
    ringx_host_reduce_all(NULL, ptrs, 2, 0, RINGX_TYPE_INT32, RINGX_OP_SUM);
}
END_TEST

static Suite *host_reduce_suite(void)
{
    Suite *s = suite_create("host_reduce");
    TCase *values = tcase_create("values");
    TCase *memory = tcase_create("memory");
    TCase *invalid = tcase_create("invalid");

    tcase_add_test(values, test_all_valid_pairs);
    tcase_add_test(values, test_integer_wraparound);
    tcase_add_test(values, test_signedness_and_logic);
    tcase_add_test(values, test_loc_ties_keep_smaller_index);
    tcase_add_test(values, test_reduce_all_matches_the_pairwise_chain);
    tcase_add_test(values, test_reduce_all_float_prod_rounds_once);
    tcase_add_test(values, test_reduce_all_float_and_complex_sums_round_once);
    tcase_add_test(values, test_reduce_all_complex_prod_rounds_once);
    tcase_add_test(values, test_reduce_all_half_rounds_once);
    tcase_add_test(values, test_half_reference);
    tcase_add_test(memory, test_reduce_all_in_place_and_empty);
    tcase_add_test(memory, test_n_zero_writes_nothing);
    tcase_add_test(memory, test_misaligned_starts);
    tcase_add_test(memory, test_aliasing);
    tcase_add_test(invalid, test_invalid_pairs_leave_dst);
    tcase_add_test(invalid, test_out_of_range_enums_ignored);
    /* Generous, so the suite also passes under valgrind. */
    tcase_set_timeout(values, 120);
    tcase_set_timeout(memory, 120);
    tcase_set_timeout(invalid, 120);
    suite_add_tcase(s, values);
    suite_add_tcase(s, memory);
    suite_add_tcase(s, invalid);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(host_reduce_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
