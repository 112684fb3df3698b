/*
 * ringx_correctness.c - MPI integration test of the ringx coll component.
 *
 * Runs MPI_Allreduce, MPI_Reduce_scatter_block and MPI_Allgather over the
 * datatype x op matrix ringx serves, several counts, with and without
 * MPI_IN_PLACE, on several kinds of communicators, and checks for every
 * call:
 *   - the result, against a reference each rank computes by regenerating
 *     the deterministic inputs of all ranks (exact for integers, bytes,
 *     booleans and pairs; bounded rounding error for floating point);
 *   - who served it, through the coll_ringx_* MPI_T pvars (ringx for
 *     communicators of size >= 2, nobody's counters on size 1, a specific
 *     fallback reason for the cases ringx must hand on);
 *   - that bytes around the receive region and the send buffer are left
 *     untouched.
 *
 * Options:
 *   --quick                        small counts only (valgrind runs)
 *   --medium                       with --quick: the medium counts too
 *                                  (about 20 KB and 98 KB in all)
 *   --expect-fallback COLL:REASON  every call of COLL must be handed to the
 *                                  stock component with that reason (run
 *                                  with --mca coll_ringx_COLL_enable 0);
 *                                  COLL "all": every collective (with
 *                                  reason transport: UCX made unusable)
 *   --expect-alg COLL:ALG          every served call of COLL must be counted
 *                                  by coll_ringx_COLL_ALG_calls (run with
 *                                  --mca coll_ringx_COLL_algorithm ALG);
 *                                  ALG hierarchical: on communicators whose
 *                                  nodes (MPI_COMM_TYPE_SHARED) are not
 *                                  several with as many ranks (>= 2) on
 *                                  each, by the ring (what runs instead)
 *   --expect-staged                every served call must be counted by
 *                                  coll_ringx_COLL_staged (run with
 *                                  --mca coll_ringx_stage_host_buffers 1)
 *   --expect-mailbox BYTES         every served call of at most BYTES in all
 *                                  (the default algorithms, ranks on one
 *                                  node) must be counted by
 *                                  coll_ringx_COLL_mailbox; 0: no call may
 *                                  be (run with coll_ringx_mailbox_bytes 0)
 *   --expect-node-mailbox BYTES    on communicators across nodes with the
 *                                  same rank count (>= 2) on each, every
 *                                  served blocking call of at most BYTES in
 *                                  all must be counted by
 *                                  coll_ringx_COLL_mailbox (the ranks of a
 *                                  node exchange through mailboxes), every
 *                                  nonblocking or persistent one must not
 *   --expect-sent-ahead [COLL:]BYTES
 *                                  on communicators across nodes with the
 *                                  same rank count (>= 2) on each, every
 *                                  served allgather and
 *                                  reduce_scatter_block (or COLL) of more
 *                                  than BYTES in all (beyond the leaders),
 *                                  and allreduce of 1 MiB or more,
 *                                  must be counted by
 *                                  coll_ringx_COLL_sent_ahead (the
 *                                  hierarchical rings: the node ring's
 *                                  messages leave together; allreduce in
 *                                  pieces)
 *   --expect-buffers-from [COLL:]BYTES
 *                                  every served call (of COLL) of at least BYTES in
 *                                  all must be counted by
 *                                  coll_ringx_COLL_direct_buffers and not
 *                                  by the mailbox counter, every smaller one
 *                                  not by direct_buffers (run with direct
 *                                  reads and coll_ringx_direct_buffer_bytes
 *                                  BYTES)
 *   --expect-slept                 waits of this rank slept on its bell
 *                                  and no ring was lost
 *                                  (coll_ringx_waits_slept grew,
 *                                  coll_ringx_rings_missed stayed
 *                                  within a quarter of the sleeps that
 *                                  timed out, plus 2; with
 *                                  --nonblocking or --persistent, waits
 *                                  in Open MPI's progress too:
 *                                  coll_ringx_progress_waits_slept; run
 *                                  with coll_ringx_yield 1 and
 *                                  coll_ringx_sleep_after_yield_us -1)
 *   --mem cuda                     the buffers of every call ringx must
 *                                  serve are in device memory (copies of
 *                                  the host buffers, fetched back for the
 *                                  checks); each must be counted by
 *                                  coll_ringx_COLL_on_device.  Exits 77
 *                                  ("SKIP: no CUDA device") without one
 *   --no-current-context           with --mem cuda: the MPI calls run with
 *                                  no CUDA context current, and after each
 *                                  one none may be (ringx makes the
 *                                  buffers' device current while it works
 *                                  and must give the caller's context back)
 *   --persistent                   every call is MPI_Allreduce_init and
 *                                  the like (MPIX_..._init on Open MPI
 *                                  4.1), MPI_Start, MPI_Wait and
 *                                  MPI_Request_free; each served start
 *                                  must be counted by
 *                                  coll_ringx_COLL_persistent
 *   --nonblocking                  every call is MPI_Iallreduce,
 *                                  MPI_Iallgather or
 *                                  MPI_Ireduce_scatter_block and MPI_Wait;
 *                                  each served call must be counted by
 *                                  coll_ringx_COLL_nonblocking
 *   --watchdog SECONDS             abort, naming the case, when one case
 *                                  takes longer (default 120; 0: never)
 *   --nested-fallback              the previous component (coll/han)
 *                                  runs collectives of its own on its
 *                                  sub-communicators, where ringx serves
 *                                  or hands on too: a call handed on must
 *                                  count its fallback at least once (not
 *                                  exactly once), and may grow the served
 *                                  and bytes counters; calls ringx serves
 *                                  are checked exactly as always
 *   --expect-handed-back           with --nested-fallback: the calls that
 *                                  must be handed on run on every test
 *                                  communicator, and the previous
 *                                  component must hand some back to ringx
 *                                  (coll_ringx_<coll>_handed_back; coll/han
 *                                  4.1 does where one rank per node leaves
 *                                  it nothing to do)
 *   --expect-served-some           with --results-only (another component
 *                                  above ringx, e.g. coll/han, serves the
 *                                  calls and passes ringx some): ringx must
 *                                  have served calls of every collective
 *   --results-only                 check results only, ignore the pvars,
 *                                  and assume the stock component reduces
 *                                  (validates the test on stock Open MPI)
 */
#include "ringx_test_device.h"
#include "ringx_pvars.h"
#include "ringx_test_util.h"

#include <mpi-ext.h>    /* MPIX_C_FLOAT16 (Open MPI 5) */

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM_NAME "ringx_correctness"

/* Byte patterns: guards around receive buffers, the receive region before
 * the call, and bytes of send elements that are outside the type map. */
#define GUARD_BYTES 64
#define GUARD_BYTE 0xA5
#define POISON_BYTE 0xCB
#define SEND_GAP_BYTE 0x5A

/* Large counts: an odd count over a million elements, and about 3 MiB. */
#define LARGE_COUNT 1000003
#define LARGE_BYTES (3u << 20)
/* Medium calls: about 20 KiB, 98 KiB and 195 KiB in all (one node: the
 * outboxes, the posted outboxes but at np 2 the peers' buffers from 128
 * KiB, the peers' buffers from 256 KiB). */
static const size_t medium_bytes[] = { 20011, 100003, 200003 };

/* Counts of the explicit fallback cases (count 0 is left out: whether an
 * empty call of an unsupported type is "served" is not specified). */
static const size_t fallback_counts[] = { 1, 7, 1001 };

/* ------------------------------------------------------------------ */
/* Collectives                                                         */
/* ------------------------------------------------------------------ */

enum coll_id {
    COLL_ALLREDUCE,
    COLL_ALLGATHER,
    COLL_REDUCE_SCATTER_BLOCK,
    NUM_COLLS
};

static const char *const coll_names[NUM_COLLS] = {
    "allreduce", "allgather", "reduce_scatter_block"
};

#define COLL_BIT(c) (1u << (c))
#define REDUCTIONS (COLL_BIT(COLL_ALLREDUCE) | COLL_BIT(COLL_REDUCE_SCATTER_BLOCK))

/* ------------------------------------------------------------------ */
/* Datatypes                                                           */
/* ------------------------------------------------------------------ */

/* How one scalar is stored and reduced. */
enum scalar_kind {
    SK_SINT,        /* two's complement integer of `width` bytes */
    SK_UINT,        /* unsigned integer of `width` bytes */
    SK_REAL,        /* float16, float, double or long double (by width) */
    SK_COMPLEX,     /* two reals of `width` bytes each */
    SK_BOOL,        /* C _Bool */
    SK_BYTE,        /* MPI_BYTE: an unsigned byte */
    SK_PAIR_REAL,   /* { float|double value; int loc; } */
    SK_PAIR_INT     /* { int value; int loc; } */
};

/* The groups of the MPI standard's reduction table: which predefined ops
 * MPI defines on a type.  Fortran and multi-language integers have no
 * logical ops (Open MPI rejects MPI_LAND on MPI_INTEGER). */
enum type_group {
    TG_C_INT,
    TG_F_INT,
    TG_MULTI_LANG,
    TG_FLOATING,
    TG_COMPLEX,
    TG_LOGICAL,
    TG_BYTE,
    TG_PAIR,
    TG_DERIVED
};

typedef struct type_desc {
    const char *name;
    MPI_Datatype dtype;
    enum scalar_kind kind;
    unsigned width;         /* value bytes (complex: per component; pair:
                               the value field); 0: MPI_Type_size decides */
    enum type_group group;
    unsigned scalars;       /* scalars per element; 0 means 1 */
    size_t stride;          /* bytes between the scalars of an element */
    size_t extent;          /* element extent, set by init_type() */
    bool available;         /* set by init_type() */
} type_desc_t;

#define PREDEF(handle, kind, width, group) \
    { #handle, handle, kind, width, group, 0, 0, 0, false }

/* Every predefined type ringx reduces (and gathers). */
static type_desc_t served_types[] = {
    PREDEF(MPI_SIGNED_CHAR, SK_SINT, sizeof(signed char), TG_C_INT),
    PREDEF(MPI_UNSIGNED_CHAR, SK_UINT, sizeof(unsigned char), TG_C_INT),
    PREDEF(MPI_SHORT, SK_SINT, sizeof(short), TG_C_INT),
    PREDEF(MPI_UNSIGNED_SHORT, SK_UINT, sizeof(unsigned short), TG_C_INT),
    PREDEF(MPI_INT, SK_SINT, sizeof(int), TG_C_INT),
    PREDEF(MPI_UNSIGNED, SK_UINT, sizeof(unsigned), TG_C_INT),
    PREDEF(MPI_LONG, SK_SINT, sizeof(long), TG_C_INT),
    PREDEF(MPI_UNSIGNED_LONG, SK_UINT, sizeof(unsigned long), TG_C_INT),
    PREDEF(MPI_LONG_LONG, SK_SINT, sizeof(long long), TG_C_INT),
    PREDEF(MPI_UNSIGNED_LONG_LONG, SK_UINT, sizeof(unsigned long long),
           TG_C_INT),
    PREDEF(MPI_INT8_T, SK_SINT, 1, TG_C_INT),
    PREDEF(MPI_INT16_T, SK_SINT, 2, TG_C_INT),
    PREDEF(MPI_INT32_T, SK_SINT, 4, TG_C_INT),
    PREDEF(MPI_INT64_T, SK_SINT, 8, TG_C_INT),
    PREDEF(MPI_UINT8_T, SK_UINT, 1, TG_C_INT),
    PREDEF(MPI_UINT16_T, SK_UINT, 2, TG_C_INT),
    PREDEF(MPI_UINT32_T, SK_UINT, 4, TG_C_INT),
    PREDEF(MPI_UINT64_T, SK_UINT, 8, TG_C_INT),
    PREDEF(MPI_AINT, SK_SINT, sizeof(MPI_Aint), TG_MULTI_LANG),
    PREDEF(MPI_OFFSET, SK_SINT, sizeof(MPI_Offset), TG_MULTI_LANG),
    PREDEF(MPI_COUNT, SK_SINT, sizeof(MPI_Count), TG_MULTI_LANG),
    PREDEF(MPI_INTEGER, SK_SINT, 0, TG_F_INT),
    PREDEF(MPI_INTEGER1, SK_SINT, 1, TG_F_INT),
    PREDEF(MPI_INTEGER2, SK_SINT, 2, TG_F_INT),
    PREDEF(MPI_INTEGER4, SK_SINT, 4, TG_F_INT),
    PREDEF(MPI_INTEGER8, SK_SINT, 8, TG_F_INT),
    PREDEF(MPI_FLOAT, SK_REAL, sizeof(float), TG_FLOATING),
    PREDEF(MPI_DOUBLE, SK_REAL, sizeof(double), TG_FLOATING),
    PREDEF(MPI_REAL, SK_REAL, 0, TG_FLOATING),
    PREDEF(MPI_DOUBLE_PRECISION, SK_REAL, 0, TG_FLOATING),
    PREDEF(MPI_REAL4, SK_REAL, 4, TG_FLOATING),
    PREDEF(MPI_REAL8, SK_REAL, 8, TG_FLOATING),
#if defined(MPIX_C_FLOAT16) && defined(__FLT16_MAX__)
    /* stored and reduced in the reference through the compiler's _Float16 */
    PREDEF(MPIX_C_FLOAT16, SK_REAL, 2, TG_FLOATING),
#define HAVE_FLOAT16_TYPE 1
#endif
    PREDEF(MPI_C_FLOAT_COMPLEX, SK_COMPLEX, sizeof(float), TG_COMPLEX),
    PREDEF(MPI_C_DOUBLE_COMPLEX, SK_COMPLEX, sizeof(double), TG_COMPLEX),
    PREDEF(MPI_C_BOOL, SK_BOOL, sizeof(_Bool), TG_LOGICAL),
    PREDEF(MPI_BYTE, SK_BYTE, 1, TG_BYTE),
    PREDEF(MPI_2INT, SK_PAIR_INT, sizeof(int), TG_PAIR),
    PREDEF(MPI_FLOAT_INT, SK_PAIR_REAL, sizeof(float), TG_PAIR),
};
#define NUM_SERVED_TYPES (sizeof served_types / sizeof served_types[0])

/* Types ringx must hand to the stock component. */
static type_desc_t type_double_int =
    PREDEF(MPI_DOUBLE_INT, SK_PAIR_REAL, sizeof(double), TG_PAIR);
static type_desc_t type_long_double =
    PREDEF(MPI_LONG_DOUBLE, SK_REAL, sizeof(long double), TG_FLOATING);

/* Derived types, created by init_types(), served by Allgather: the
 * contiguous one as it is, the vector (one int, one-int hole, one int)
 * packed (allgather_types.c tests packing further). */
static type_desc_t type_contig3_int = {
    "contiguous(3,MPI_INT)", MPI_DATATYPE_NULL, SK_SINT, sizeof(int),
    TG_DERIVED, 3, sizeof(int), 0, false
};
static type_desc_t type_vector_int = {
    "vector(2,1,2,MPI_INT)", MPI_DATATYPE_NULL, SK_SINT, sizeof(int),
    TG_DERIVED, 2, 2 * sizeof(int), 0, false
};

/* Bytes of one scalar's value (pairs: value and loc, without padding). */
static size_t scalar_size(const type_desc_t *t)
{
    switch (t->kind) {
    case SK_COMPLEX:   return 2u * t->width;
    case SK_PAIR_REAL:
    case SK_PAIR_INT:  return t->width + sizeof(int);
    default:           return t->width;
    }
}

#ifdef HAVE_FLOAT16_TYPE
#define HALF_WIDTH_OK 1
#else
#define HALF_WIDTH_OK 0
#endif

static bool width_supported(const type_desc_t *t)
{
    switch (t->kind) {
    case SK_REAL:
        return 4 == t->width || 8 == t->width ||
               sizeof(long double) == t->width || (HALF_WIDTH_OK && 2 == t->width);
    case SK_COMPLEX:
    case SK_PAIR_REAL:
        return 4 == t->width || 8 == t->width;
    case SK_PAIR_INT:
        return sizeof(int) == t->width;
    default:
        return 1 == t->width || 2 == t->width || 4 == t->width ||
               8 == t->width;
    }
}

/* Fill in what MPI knows (Fortran sizes, extents) and skip types this MPI
 * library does not provide. */
static void init_type(type_desc_t *t)
{
    int size = 0;
    MPI_Aint lb, extent = 0;

    if (0 == t->scalars) {
        t->scalars = 1;
    }
    if (MPI_DATATYPE_NULL == t->dtype ||
        MPI_SUCCESS != MPI_Type_size(t->dtype, &size) || size <= 0) {
        t->available = false;
        return;
    }
    if (0 == t->width) {
        t->width = (unsigned)size / t->scalars;
    }
    MPI_Type_get_extent(t->dtype, &lb, &extent);
    t->extent = (size_t)extent;
    t->available = width_supported(t) &&
                   (size_t)size == scalar_size(t) * t->scalars;
}

/* Coverage gaps must be visible: say which types this library lacks. */
static void report_unavailable(const type_desc_t *t)
{
    int rank;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (!t->available && 0 == rank) {
        printf("note: %s is not available in this MPI library; skipped\n",
               t->name);
    }
}

static MPI_Datatype commit(MPI_Datatype t)
{
    MPI_Type_commit(&t);
    return t;
}

static void init_types(void)
{
    MPI_Datatype contig, vector;

    MPI_Type_contiguous(3, MPI_INT, &contig);
    MPI_Type_vector(2, 1, 2, MPI_INT, &vector);
    type_contig3_int.dtype = commit(contig);
    type_vector_int.dtype = commit(vector);
    for (size_t i = 0; i < NUM_SERVED_TYPES; i++) {
        init_type(&served_types[i]);
        report_unavailable(&served_types[i]);
    }
#ifndef HAVE_FLOAT16_TYPE
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (0 == rank) {
        printf("note: MPIX_C_FLOAT16 is not provided by this MPI library (or _Float16 by the "
               "compiler); skipped\n");
    }
#endif
    init_type(&type_double_int);
    init_type(&type_long_double);
    init_type(&type_contig3_int);
    init_type(&type_vector_int);
}

static void free_types(void)
{
    MPI_Type_free(&type_contig3_int.dtype);
    MPI_Type_free(&type_vector_int.dtype);
}

static type_desc_t *find_type(MPI_Datatype dtype)
{
    for (size_t i = 0; i < NUM_SERVED_TYPES; i++) {
        if (served_types[i].dtype == dtype) {
            return &served_types[i];
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Reduction operations                                                */
/* ------------------------------------------------------------------ */

enum op_kind {
    OPK_NONE,          /* Allgather */
    OPK_SUM, OPK_PROD, OPK_MIN, OPK_MAX,
    OPK_LAND, OPK_LOR, OPK_LXOR,
    OPK_BAND, OPK_BOR, OPK_BXOR,
    OPK_MINLOC, OPK_MAXLOC,
    OPK_USER_SUM,      /* user-defined, commutative: wrapping int sum */
    OPK_USER_AFFINE    /* user-defined, non-commutative: affine maps */
};

typedef struct op_desc {
    const char *name;
    MPI_Op op;
    enum op_kind kind;
    unsigned groups;   /* bit set of the type groups MPI defines it on */
} op_desc_t;

#define TG_BIT(g) (1u << (g))
#define INTEGER_GROUPS (TG_BIT(TG_C_INT) | TG_BIT(TG_F_INT) | TG_BIT(TG_MULTI_LANG))
#define ARITH_GROUPS (INTEGER_GROUPS | TG_BIT(TG_FLOATING))

static const op_desc_t predefined_ops[] = {
    { "MPI_SUM", MPI_SUM, OPK_SUM, ARITH_GROUPS | TG_BIT(TG_COMPLEX) },
    { "MPI_PROD", MPI_PROD, OPK_PROD, ARITH_GROUPS | TG_BIT(TG_COMPLEX) },
    { "MPI_MIN", MPI_MIN, OPK_MIN, ARITH_GROUPS },
    { "MPI_MAX", MPI_MAX, OPK_MAX, ARITH_GROUPS },
    { "MPI_LAND", MPI_LAND, OPK_LAND, TG_BIT(TG_C_INT) | TG_BIT(TG_LOGICAL) },
    { "MPI_LOR", MPI_LOR, OPK_LOR, TG_BIT(TG_C_INT) | TG_BIT(TG_LOGICAL) },
    { "MPI_LXOR", MPI_LXOR, OPK_LXOR, TG_BIT(TG_C_INT) | TG_BIT(TG_LOGICAL) },
    { "MPI_BAND", MPI_BAND, OPK_BAND, INTEGER_GROUPS | TG_BIT(TG_BYTE) },
    { "MPI_BOR", MPI_BOR, OPK_BOR, INTEGER_GROUPS | TG_BIT(TG_BYTE) },
    { "MPI_BXOR", MPI_BXOR, OPK_BXOR, INTEGER_GROUPS | TG_BIT(TG_BYTE) },
    { "MPI_MINLOC", MPI_MINLOC, OPK_MINLOC, TG_BIT(TG_PAIR) },
    { "MPI_MAXLOC", MPI_MAXLOC, OPK_MAXLOC, TG_BIT(TG_PAIR) },
};
#define NUM_PREDEFINED_OPS (sizeof predefined_ops / sizeof predefined_ops[0])

static const op_desc_t no_op = { "-", MPI_OP_NULL, OPK_NONE, 0 };
static op_desc_t op_user_sum = {
    "user_wrap_sum(commutative)", MPI_OP_NULL, OPK_USER_SUM, 0
};
static op_desc_t op_user_affine = {
    "user_affine(non-commutative)", MPI_OP_NULL, OPK_USER_AFFINE, 0
};

static bool op_defined_on(const op_desc_t *op, const type_desc_t *t)
{
    return 0 != (op->groups & TG_BIT(t->group));
}

static bool is_user_op(const op_desc_t *op)
{
    return OPK_USER_SUM == op->kind || OPK_USER_AFFINE == op->kind;
}

static const op_desc_t *find_op(MPI_Op op)
{
    for (size_t i = 0; i < NUM_PREDEFINED_OPS; i++) {
        if (predefined_ops[i].op == op) {
            return &predefined_ops[i];
        }
    }
    return NULL;
}

/* Wrapping 32-bit sum over MPI_INT or any contiguous type of ints. */
static void user_wrap_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const uint32_t *a = in;
    uint32_t *b = inout;
    int size;

    MPI_Type_size(*dt, &size);
    for (size_t i = 0; i < (size_t)*len * ((size_t)size / sizeof(int)); i++) {
        b[i] += a[i];
    }
}

/* Composition of affine maps x -> m*x + c (mod 2^32) stored as MPI_2INT
 * {m, c}: associative but not commutative, so it checks rank order.
 * MPI computes inout = in op inout with `in` from the lower ranks. */
static void user_affine(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const uint32_t *a = in;
    uint32_t *b = inout;

    (void)dt;
    for (size_t i = 0; i < 2 * (size_t)*len; i += 2) {
        uint32_t m = a[i] * b[i];
        uint32_t c = b[i] * a[i + 1] + b[i + 1];
        b[i] = m;
        b[i + 1] = c;
    }
}

static void init_ops(void)
{
    MPI_Op_create(user_wrap_sum, 1, &op_user_sum.op);
    MPI_Op_create(user_affine, 0, &op_user_affine.op);
}

static void free_ops(void)
{
    MPI_Op_free(&op_user_sum.op);
    MPI_Op_free(&op_user_affine.op);
}

/* ------------------------------------------------------------------ */
/* Scalars: generation, storage, reference arithmetic                  */
/* ------------------------------------------------------------------ */

/* One scalar in a form the reference arithmetic works on. */
typedef struct scalar {
    uint64_t bits;   /* integer kinds: value sign/zero-extended */
    double re, im;   /* real, complex and pair values */
    int32_t loc;     /* pair index */
    double mag;      /* sum (SUM) or product (PROD) of |inputs|: the
                        scale of the reference's rounding error */
} scalar_t;

/* What the inputs of one call look like. */
typedef struct gen_spec {
    const type_desc_t *type;
    enum op_kind op;
    int nranks;
    /* Whether Open MPI's own predefined ops reduce (a fallback call).
     * Open MPI 4.1.4 gets some inputs wrong that ringx must get right:
     * op/avx saturates 8- and 16-bit sums on AVX-512 (open-mpi/ompi#8045),
     * MIN/MAX compare MPI_UNSIGNED_LONG as signed (ompi#10525) and
     * MPI_OFFSET as unsigned.  Such calls get inputs that avoid those
     * ranges; only calls reduced by ringx or our own ops overflow. */
    bool stock_reduces;
} gen_spec_t;

/* Reduce bits to the type's width: sign-extend or zero-extend. */
static inline uint64_t int_canon(const type_desc_t *t, uint64_t bits)
{
    unsigned nbits = 8u * t->width;
    uint64_t sign;

    if (SK_BOOL == t->kind) {
        return bits;   /* loaded bytes as they are: 2 must stay wrong */
    }
    if (nbits >= 64) {
        return bits;
    }
    sign = 1ULL << (nbits - 1);
    bits &= (sign << 1) - 1;
    return SK_SINT == t->kind ? (bits ^ sign) - sign : bits;
}

static inline uint64_t int_max(const type_desc_t *t)
{
    uint64_t all = 8u * t->width >= 64 ? ~0ULL : (1ULL << (8u * t->width)) - 1;
    return SK_SINT == t->kind ? all >> 1 : all;
}

/* Zero, one, a value whose low byte is zero, or anything: logical ops
 * must look at the whole value, not at its lowest byte or bit. */
static inline uint64_t logical_operand(const type_desc_t *t, uint64_t r)
{
    switch (r & 3) {
    case 0:  return 0;
    case 1:  return 1;
    case 2:  return 1ULL << (8u * t->width - 1);
    default: return r >> 2;
    }
}

static inline uint64_t gen_int_sum(const gen_spec_t *g, uint64_t r, uint64_t index)
{
    const type_desc_t *t = g->type;
    uint64_t limit;

    if (!g->stock_reduces) {
        /* every other element near the maximum: its sums must wrap */
        return (index & 1) ? r : int_max(t) - (r & 7);
    }
    limit = int_max(t) / (uint64_t)g->nranks;
    limit = limit > 1000 ? 1000 : limit;
    return SK_SINT == t->kind ? (r % (2 * limit + 1)) - limit
                              : r % (limit + 1);
}

static inline uint64_t gen_int_prod(const gen_spec_t *g, uint64_t r, uint64_t index)
{
    if (!g->stock_reduces) {
        return r | (index & 1);   /* half odd, so products rarely vanish */
    }
    return (SK_SINT == g->type->kind && (r & 1)) ? ~0ULL : 1;   /* +-1 */
}

static inline scalar_t gen_integer(const gen_spec_t *g, uint64_t r, uint64_t index)
{
    scalar_t v = { 0 };

    switch (g->op) {
    case OPK_SUM:
    case OPK_USER_SUM:
        v.bits = gen_int_sum(g, r, index);
        break;
    case OPK_PROD:
        v.bits = gen_int_prod(g, r, index);
        break;
    case OPK_MIN:
    case OPK_MAX:   /* stock: values with the sign bit clear compare alike
                       as signed and as unsigned */
        v.bits = g->stock_reduces ? r & (int_max(g->type) >> 1) : r;
        break;
    case OPK_LAND:
    case OPK_LOR:
    case OPK_LXOR:
        v.bits = logical_operand(g->type, r);
        break;
    default:
        v.bits = r;
        break;
    }
    return v;
}

static inline scalar_t gen_real(enum op_kind op, uint64_t r)
{
    scalar_t v = { 0 };
    double u = rx_unit(r);

    switch (op) {
    case OPK_PROD:   /* near 1: the product of all ranks stays near 1 */
        v.re = (1.0 + (u - 0.5) / 4.0) * ((r & 1) ? -1.0 : 1.0);
        break;
    case OPK_MIN:
    case OPK_MAX:
        v.re = (2.0 * u - 1.0) * 1000.0;
        break;
    default:
        v.re = 2.0 * u - 1.0;
        break;
    }
    return v;
}

static inline scalar_t gen_complex(enum op_kind op, uint64_t r)
{
    scalar_t v = { 0 };
    double u1 = rx_unit(r), u2 = rx_unit(rx_random(r, 0));

    if (OPK_PROD == op) {
        v.re = 1.0 + (u1 - 0.5) / 4.0;
        v.im = (u2 - 0.5) / 4.0;
    } else {
        v.re = 2.0 * u1 - 1.0;
        v.im = 2.0 * u2 - 1.0;
    }
    return v;
}

static inline scalar_t gen_pair(const gen_spec_t *g, uint64_t r)
{
    scalar_t v = { 0 };

    switch (g->op) {
    case OPK_MINLOC:
    case OPK_MAXLOC:   /* four values only: ties test the lower-loc rule */
        v.re = (double)((int)(r % 4) - 1);
        v.loc = (int32_t)((r >> 8) % 1000);
        break;
    case OPK_USER_AFFINE:
        v.re = (double)(int32_t)(uint32_t)r;
        v.loc = (int32_t)(uint32_t)(r >> 32);
        break;
    default:
        v.re = SK_PAIR_REAL == g->type->kind ? 2.0 * rx_unit(r) - 1.0
                                             : (double)(int32_t)(uint32_t)r;
        v.loc = (int32_t)(uint32_t)(r >> 32);
        break;
    }
    return v;
}

/* Scalar `index` of the input stream `seed`, before rounding to the type. */
static inline scalar_t gen_raw(const gen_spec_t *g, uint64_t seed, uint64_t index)
{
    uint64_t r = rx_random(seed, index);
    scalar_t v = { 0 };

    switch (g->type->kind) {
    case SK_REAL:
        return gen_real(g->op, r);
    case SK_COMPLEX:
        return gen_complex(g->op, r);
    case SK_BOOL:   /* P(true) cycles through 1/8, 3/8, 5/8, 7/8 */
        v.bits = (r & 7) < 1 + 2 * (index % 4);
        return v;
    case SK_PAIR_REAL:
    case SK_PAIR_INT:
        return gen_pair(g, r);
    default:
        return gen_integer(g, r, index);
    }
}

static inline void store_uint(void *dst, uint64_t bits, unsigned width)
{
    uint8_t b8 = (uint8_t)bits;
    uint16_t b16 = (uint16_t)bits;
    uint32_t b32 = (uint32_t)bits;

    switch (width) {
    case 1:  memcpy(dst, &b8, 1); break;
    case 2:  memcpy(dst, &b16, 2); break;
    case 4:  memcpy(dst, &b32, 4); break;
    default: memcpy(dst, &bits, 8); break;
    }
}

static inline uint64_t load_uint(const void *src, unsigned width)
{
    uint8_t b8;
    uint16_t b16;
    uint32_t b32;
    uint64_t b64;

    switch (width) {
    case 1:  memcpy(&b8, src, 1); return b8;
    case 2:  memcpy(&b16, src, 2); return b16;
    case 4:  memcpy(&b32, src, 4); return b32;
    default: memcpy(&b64, src, 8); return b64;
    }
}

/* binary16 through the compiler's _Float16, independent of ringx's own
 * conversions (only used where the type is available). */
#ifdef HAVE_FLOAT16_TYPE
static inline void store_half(void *dst, double x)
{
    _Float16 h = (_Float16)x;
    memcpy(dst, &h, sizeof h);
}

static inline double load_half(const void *src)
{
    _Float16 h;
    memcpy(&h, src, sizeof h);
    return (double)h;
}

static inline double round_half(double x)
{
    return (double)(_Float16)x;
}
#else
static inline void store_half(void *dst, double x) { (void)dst; (void)x; }
static inline double load_half(const void *src) { (void)src; return 0; }
static inline double round_half(double x) { return x; }
#endif

/* Bytes of a long double that hold its value: x87's 80-bit format is
 * padded to 16 bytes, and the padding must keep the buffer's fill pattern
 * for buffers to compare bytewise (and for valgrind). */
#if 64 == LDBL_MANT_DIG
#define LDOUBLE_VALUE_BYTES 10
#else
#define LDOUBLE_VALUE_BYTES sizeof(long double)
#endif

static inline void store_real(void *dst, double x, unsigned width)
{
    float f = (float)x;
    long double ld = x;

    if (2 == width) {
        store_half(dst, x);
    } else if (4 == width) {
        memcpy(dst, &f, sizeof f);
    } else if (8 == width) {
        memcpy(dst, &x, sizeof x);
    } else {
        memcpy(dst, &ld, LDOUBLE_VALUE_BYTES);
    }
}

static inline double load_real(const void *src, unsigned width)
{
    float f;
    double d;
    long double ld;

    if (2 == width) {
        return load_half(src);
    }
    if (4 == width) {
        memcpy(&f, src, sizeof f);
        return f;
    }
    if (8 == width) {
        memcpy(&d, src, sizeof d);
        return d;
    }
    memcpy(&ld, src, sizeof ld);
    return (double)ld;
}

static inline void store_scalar(const type_desc_t *t, unsigned char *dst,
                         const scalar_t *v)
{
    int32_t value;

    switch (t->kind) {
    case SK_REAL:
        store_real(dst, v->re, t->width);
        break;
    case SK_COMPLEX:
        store_real(dst, v->re, t->width);
        store_real(dst + t->width, v->im, t->width);
        break;
    case SK_BOOL:
        store_uint(dst, 0 != v->bits, 1);
        break;
    case SK_PAIR_REAL:
    case SK_PAIR_INT:
        if (SK_PAIR_REAL == t->kind) {
            store_real(dst, v->re, t->width);
        } else {
            value = (int32_t)v->re;
            memcpy(dst, &value, sizeof value);
        }
        memcpy(dst + t->width, &v->loc, sizeof v->loc);
        break;
    default:
        store_uint(dst, v->bits, t->width);
        break;
    }
}

static inline scalar_t load_scalar(const type_desc_t *t, const unsigned char *src)
{
    scalar_t v = { 0 };
    int32_t value;

    switch (t->kind) {
    case SK_REAL:
        v.re = load_real(src, t->width);
        v.mag = fabs(v.re);
        break;
    case SK_COMPLEX:
        v.re = load_real(src, t->width);
        v.im = load_real(src + t->width, t->width);
        v.mag = fabs(v.re) + fabs(v.im);
        break;
    case SK_PAIR_REAL:
    case SK_PAIR_INT:
        memcpy(&value, src, sizeof value);
        v.re = SK_PAIR_REAL == t->kind ? load_real(src, t->width) : value;
        memcpy(&v.loc, src + t->width, sizeof v.loc);
        break;
    default:
        v.bits = int_canon(t, load_uint(src, t->width));
        break;
    }
    return v;
}

static inline double round_real(double x, unsigned width)
{
    return 2 == width ? round_half(x) : 4 == width ? (double)(float)x
                                                   : x;   /* long double holds x */
}

/* The input scalar exactly as the receiving side sees it: what
 * load_scalar() returns for what store_scalar() wrote, computed directly
 * because the reference regenerates every rank's input (the hot loop). */
static inline scalar_t gen_scalar(const gen_spec_t *g, uint64_t seed, uint64_t index)
{
    const type_desc_t *t = g->type;
    scalar_t v = gen_raw(g, seed, index);

    switch (t->kind) {
    case SK_REAL:
        v.re = round_real(v.re, t->width);
        v.mag = fabs(v.re);
        break;
    case SK_COMPLEX:
        v.re = round_real(v.re, t->width);
        v.im = round_real(v.im, t->width);
        v.mag = fabs(v.re) + fabs(v.im);
        break;
    case SK_PAIR_REAL:
        v.re = round_real(v.re, t->width);
        break;
    case SK_PAIR_INT:
        break;
    case SK_BOOL:
        v.bits = 0 != v.bits;
        break;
    default:
        v.bits = int_canon(t, v.bits);
        break;
    }
    return v;
}

static inline bool int_less(const type_desc_t *t, uint64_t a, uint64_t b)
{
    return SK_SINT == t->kind ? (int64_t)a < (int64_t)b : a < b;
}

static inline void apply_integer(const type_desc_t *t, enum op_kind op, scalar_t *acc,
                          const scalar_t *x)
{
    uint64_t a = acc->bits, b = x->bits, r;

    switch (op) {
    case OPK_SUM:
    case OPK_USER_SUM: r = a + b; break;
    case OPK_PROD:     r = a * b; break;
    case OPK_MIN:      r = int_less(t, b, a) ? b : a; break;
    case OPK_MAX:      r = int_less(t, a, b) ? b : a; break;
    case OPK_LAND:     r = (0 != a) && (0 != b); break;
    case OPK_LOR:      r = (0 != a) || (0 != b); break;
    case OPK_LXOR:     r = (0 != a) != (0 != b); break;
    case OPK_BAND:     r = a & b; break;
    case OPK_BOR:      r = a | b; break;
    case OPK_BXOR:     r = a ^ b; break;
    default:           r = a; break;
    }
    acc->bits = int_canon(t, r);
}

static inline void apply_real(enum op_kind op, scalar_t *acc, const scalar_t *x)
{
    switch (op) {
    case OPK_SUM:
        acc->re += x->re;
        acc->mag += x->mag;
        break;
    case OPK_PROD:
        acc->re *= x->re;
        acc->mag *= x->mag;
        break;
    case OPK_MIN:
        acc->re = x->re < acc->re ? x->re : acc->re;
        break;
    case OPK_MAX:
        acc->re = x->re > acc->re ? x->re : acc->re;
        break;
    default:
        break;
    }
}

static inline void apply_complex(enum op_kind op, scalar_t *acc, const scalar_t *x)
{
    double re;

    if (OPK_SUM == op) {
        acc->re += x->re;
        acc->im += x->im;
        acc->mag += x->mag;
    } else if (OPK_PROD == op) {
        re = acc->re * x->re - acc->im * x->im;
        acc->im = acc->re * x->im + acc->im * x->re;
        acc->re = re;
        acc->mag *= x->mag;
    }
}

static inline void apply_pair(enum op_kind op, scalar_t *acc, const scalar_t *x)
{
    uint32_t m1 = (uint32_t)(int32_t)acc->re, c1 = (uint32_t)acc->loc;
    uint32_t m2 = (uint32_t)(int32_t)x->re, c2 = (uint32_t)x->loc;
    bool take = false;

    switch (op) {
    case OPK_MINLOC:
        take = x->re < acc->re || (x->re == acc->re && x->loc < acc->loc);
        break;
    case OPK_MAXLOC:
        take = x->re > acc->re || (x->re == acc->re && x->loc < acc->loc);
        break;
    case OPK_USER_AFFINE:   /* acc (lower ranks) first, then x */
        acc->re = (double)(int32_t)(m1 * m2);
        acc->loc = (int32_t)(m2 * c1 + c2);
        break;
    default:
        break;
    }
    if (take) {
        acc->re = x->re;
        acc->loc = x->loc;
    }
}

/* acc = acc op x, with acc holding the lower ranks' contribution. */
static inline void apply_op(const gen_spec_t *g, scalar_t *acc, const scalar_t *x)
{
    switch (g->type->kind) {
    case SK_REAL:      apply_real(g->op, acc, x); break;
    case SK_COMPLEX:   apply_complex(g->op, acc, x); break;
    case SK_PAIR_REAL:
    case SK_PAIR_INT:  apply_pair(g->op, acc, x); break;
    default:           apply_integer(g->type, g->op, acc, x); break;
    }
}

/* The expected value of scalar `index` of the reduction over all ranks. */
static inline scalar_t reduce_reference(const gen_spec_t *g, const uint64_t *seeds,
                                 uint64_t index)
{
    scalar_t acc = gen_scalar(g, seeds[0], index), x;

    for (int r = 1; r < g->nranks; r++) {
        x = gen_scalar(g, seeds[r], index);
        apply_op(g, &acc, &x);
    }
    return acc;
}

/* Rounding error bound: every partial result of SUM/PROD may round once,
 * in the implementation and in the reference; MIN/MAX must be exact. */
static inline bool reals_close(const gen_spec_t *g, double got, double ref, double mag)
{
    unsigned w = g->type->width;
    double eps = 2 == w ? 0x1p-10 : 4 == w ? FLT_EPSILON : DBL_EPSILON;
    double tiny = 2 == w ? 0x1p-14 : 4 == w ? FLT_MIN : DBL_MIN;
    double tol = 0.0;

    if (OPK_SUM == g->op || OPK_PROD == g->op) {
        tol = 2.0 * g->nranks * eps * mag + tiny;
    }
    return fabs(got - ref) <= tol;
}

static inline bool scalars_match(const gen_spec_t *g, const scalar_t *got,
                          const scalar_t *ref)
{
    switch (g->type->kind) {
    case SK_REAL:
        return reals_close(g, got->re, ref->re, ref->mag);
    case SK_COMPLEX:
        return reals_close(g, got->re, ref->re, ref->mag) &&
               reals_close(g, got->im, ref->im, ref->mag);
    case SK_PAIR_REAL:
    case SK_PAIR_INT:
        return got->re == ref->re && got->loc == ref->loc;
    default:
        return got->bits == ref->bits;
    }
}

static void format_scalar(const type_desc_t *t, const scalar_t *v, char *buf,
                          size_t len)
{
    switch (t->kind) {
    case SK_SINT:
        snprintf(buf, len, "%lld (0x%llx)", (long long)v->bits,
                 (unsigned long long)v->bits);
        break;
    case SK_REAL:
        snprintf(buf, len, "%.17g", v->re);
        break;
    case SK_COMPLEX:
        snprintf(buf, len, "(%.17g, %.17g)", v->re, v->im);
        break;
    case SK_PAIR_REAL:
    case SK_PAIR_INT:
        snprintf(buf, len, "{value %.17g, loc %d}", v->re, (int)v->loc);
        break;
    default:
        snprintf(buf, len, "%llu (0x%llx)", (unsigned long long)v->bits,
                 (unsigned long long)v->bits);
        break;
    }
}

/* ------------------------------------------------------------------ */
/* Buffers                                                             */
/* ------------------------------------------------------------------ */

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);

    if (!p) {
        fprintf(stderr, "out of memory allocating %zu bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* A receive region with guard bytes on both sides. */
typedef struct guarded {
    unsigned char *base;
    unsigned char *data;
    size_t bytes;
} guarded_t;

static guarded_t guarded_alloc(size_t bytes)
{
    guarded_t g;

    g.base = xmalloc(bytes + 2 * GUARD_BYTES);
    g.data = g.base + GUARD_BYTES;
    g.bytes = bytes;
    memset(g.base, GUARD_BYTE, GUARD_BYTES);
    memset(g.data, POISON_BYTE, bytes);
    memset(g.data + bytes, GUARD_BYTE, GUARD_BYTES);
    return g;
}

/* Whether both guards are intact; if not, *where is the offset from the
 * region's start of the first modified guard byte (negative: before). */
static bool guards_intact(const guarded_t *g, long *where)
{
    for (long i = 0; i < GUARD_BYTES; i++) {
        if (GUARD_BYTE != g->base[i]) {
            *where = i - GUARD_BYTES;
            return false;
        }
        if (GUARD_BYTE != g->data[g->bytes + (size_t)i]) {
            *where = (long)g->bytes + i;
            return false;
        }
    }
    return true;
}

/* The first n elements of the input stream `seed` into buf; bytes outside
 * the type map get gap_byte. */
static void fill_elements(const gen_spec_t *g, uint64_t seed, size_t n,
                          unsigned char *buf, unsigned char gap_byte)
{
    const type_desc_t *t = g->type;

    memset(buf, gap_byte, n * t->extent);
    for (size_t e = 0; e < n; e++) {
        for (unsigned s = 0; s < t->scalars; s++) {
            scalar_t v = gen_raw(g, seed, e * t->scalars + s);
            store_scalar(t, buf + e * t->extent + s * t->stride, &v);
        }
    }
}

static size_t first_difference(const unsigned char *a, const unsigned char *b,
                               size_t n)
{
    size_t i = 0;

    while (i < n && a[i] == b[i]) {
        i++;
    }
    return i;
}

static void format_hex(const unsigned char *p, size_t n, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < n && used + 3 < len; i++) {
        used += (size_t)snprintf(buf + used, len - used, "%02x", p[i]);
    }
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

enum { FALLBACK_ALL = -2 };

typedef struct options {
    bool quick;
    bool medium;                /* with quick: the medium counts too */
    bool results_only;
    int fallback_coll;          /* -1: none, FALLBACK_ALL: every collective */
    const char *fallback_reason;
    const char *expect_alg[NUM_COLLS]; /* per collective: the algorithm that must serve */
    bool expect_staged;
    long expect_mailbox;        /* -1: not checked */
    long expect_node_mailbox;   /* -1: not checked */
    long expect_sent_ahead[NUM_COLLS];   /* -1: not checked */
    long expect_buffers_from[NUM_COLLS]; /* -1: not checked */
    bool device;                /* --mem cuda */
    bool no_context;            /* --no-current-context */
    bool nonblocking;           /* MPI_I... and MPI_Wait */
    bool persistent;            /* ..._init, MPI_Start, MPI_Wait, MPI_Request_free */
    unsigned watchdog_seconds;  /* per case; 0: none */
    bool expect_multi_node;     /* ringx saw MPI_COMM_WORLD span several nodes */
    bool expect_slept;          /* waits slept on the bell, woken by peers */
    bool nested_fallback;       /* the previous component calls collectives of its own */
    bool expect_handed_back;    /* and hands some calls back to ringx */
    bool expect_served_some;    /* ringx served calls of every collective */
} options_t;

static options_t opts = { .fallback_coll = -1, .expect_mailbox = -1, .expect_node_mailbox = -1,
                          .expect_sent_ahead = { -1, -1, -1 },
                          .expect_buffers_from = { -1, -1, -1 }, .watchdog_seconds = 120 };

/* ------------------------------------------------------------------ */
/* One call                                                            */
/* ------------------------------------------------------------------ */

typedef struct case_ctx {
    enum coll_id coll;
    gen_spec_t gen;
    const op_desc_t *op;
    size_t count;
    bool in_place;
    MPI_Comm comm;
    int rank;
    const char *expect_reason;   /* NULL: ringx must serve it */
    const char *expect_alg;      /* the algorithm that must serve it, or NULL */
    int even_nodes;              /* comm spans so many nodes of as many ranks (>= 2) each; 0: not */
    uint64_t *seeds;             /* input seed of every rank of comm */
    rx_call_t call;
} case_ctx_t;

/* The whole buffer of a call: reduced, gathered, or reduce_scatter_block's
 * input. */
static size_t total_bytes(const case_ctx_t *c)
{
    return c->count * c->gen.type->extent *
           (COLL_ALLREDUCE == c->coll ? 1 : (size_t)c->gen.nranks);
}

static bool from_buffers(const case_ctx_t *c)
{
    long from = opts.expect_buffers_from[c->coll];
    return from > 0 && total_bytes(c) >= (size_t)from;
}

static void check_buffers(const case_ctx_t *c, unsigned long long counted)
{
    bool want = from_buffers(c);
    rx_check(&c->call, counted == (want ? 1u : 0u),
             "coll_ringx_%s_direct_buffers grew by %llu for a %zu-byte call; expected %d",
             coll_names[c->coll], counted, total_bytes(c), want);
}

/* Every message of a call is part of its whole buffer, so a buffer that
 * fits a mailbox slot travels through mailboxes only; one large enough
 * to read the peers' buffers directly uses none. */
static void check_mailbox(const case_ctx_t *c, unsigned long long counted)
{
    size_t total = total_bytes(c);
    /* an empty call (nonblocking: it reaches ringx) moves nothing */
    bool want = opts.expect_mailbox > 0 && !from_buffers(c) && total > 0;

    if (0 == opts.expect_mailbox || total <= (size_t)opts.expect_mailbox || from_buffers(c)) {
        rx_check(&c->call, counted == (want ? 1u : 0u),
                 "coll_ringx_%s_mailbox grew by %llu for a %zu-byte call; expected %d",
                 coll_names[c->coll], counted, total, want);
    }
}

/* Across even nodes every rank exchanges with the ranks of its node in
 * every call; a blocking call's messages, parts of its whole buffer, then
 * fit the mailboxes. */
static void check_node_mailbox(const case_ctx_t *c, unsigned long long counted)
{
    size_t total = total_bytes(c);
    bool want = total > 0 && !opts.nonblocking && !opts.persistent;

    if (c->even_nodes && total <= (size_t)opts.expect_node_mailbox) {
        rx_check(&c->call, counted == (want ? 1u : 0u),
                 "coll_ringx_%s_mailbox grew by %llu for a %zu-byte call across nodes; "
                 "expected %d", coll_names[c->coll], counted, total, want);
    }
}

/* The hierarchical allgather and reduce_scatter_block beyond the leaders'
 * sizes: the node ring's sends read blocks no receive under way writes
 * (the ones from the other nodes, all there; reduce_scatter_block's
 * input), so they leave ahead of their steps.  Allreduce from
 * HIER_PIECES_FROM bytes on 3 nodes or more runs in pieces, the first
 * messages of every piece's ring inside the node reading the input. */
#define HIER_PIECES_FROM (1u << 20)

static void check_sent_ahead(const case_ctx_t *c, unsigned long long counted)
{
    size_t total = total_bytes(c);
    bool pieces = c->even_nodes >= 3 && total >= HIER_PIECES_FROM;

    if (c->even_nodes && (COLL_ALLREDUCE == c->coll
                              ? pieces
                              : total > (size_t)opts.expect_sent_ahead[c->coll])) {
        rx_check(&c->call, 1 == counted,
                 "coll_ringx_%s_sent_ahead grew by %llu for a %zu-byte call across nodes; "
                 "expected 1", coll_names[c->coll], counted, total);
    }
}

static void check_counters(const case_ctx_t *c, const rx_counters_t *before,
                           const rx_counters_t *after)
{
    /* Open MPI's bindings return before any coll component for count 0
     * (some nonblocking and persistent ones do not: MPI_Iallgather reaches
     * ringx, which then serves an empty call, or hands it on as it would
     * any other); ringx declines communicators of one process. */
    bool declined = c->gen.nranks < 2 || 0 == c->count;
    bool may_reach = (opts.nonblocking || opts.persistent) && 0 == c->count && c->gen.nranks >= 2;
    int reason = c->expect_reason ? rx_fallback_reason_index(c->expect_reason)
                                  : -1;
    unsigned long long served = after->served - before->served;
    unsigned long long bytes = after->bytes_sent - before->bytes_sent;
    bool ok = served == (unsigned long long)(!declined && reason < 0);
    bool reached = served == (unsigned long long)(reason < 0);     /* as a nonzero count */
    char deltas[256], wanted[64];
    size_t used = 0;

    if (opts.results_only) {
        return;
    }
    for (int i = 0; i < RX_NUM_FALLBACK_REASONS; i++) {
        unsigned long long d = after->fallback[i] - before->fallback[i];
        ok = ok && d == (unsigned long long)(!declined && i == reason);
        reached = reached && d == (unsigned long long)(i == reason);
        used += (size_t)snprintf(deltas + used, sizeof deltas - used, " %s=%llu",
                                 rx_fallback_reasons[i], d);
    }
    ok = ok || (may_reach && reached);
    if (opts.nested_fallback && reason >= 0 && !declined) {
        ok = after->fallback[reason] > before->fallback[reason];
    }
    if (declined) {
        snprintf(wanted, sizeof wanted, "no change (count 0 or size 1)");
    } else if (reason < 0) {
        snprintf(wanted, sizeof wanted, "served=1, no fallback");
    } else {
        snprintf(wanted, sizeof wanted, "served=0, %s=1", c->expect_reason);
    }
    rx_check(&c->call, ok, "pvar deltas: served=%llu fallback:%s; expected %s",
             served, deltas, wanted);
    if (declined) {
        served = 0;         /* an empty call served is no call to check further */
    }
    if (c->expect_alg && served == 1) {
        rx_check(&c->call, after->alg_calls - before->alg_calls == 1,
                 "served, but not by the forced algorithm %s (or what runs instead here)",
                 c->expect_alg);
    }
    if (opts.expect_staged && served == 1) {
        rx_check(&c->call, after->staged - before->staged == 1,
                 "served, but coll_ringx_%s_staged did not count it", coll_names[c->coll]);
    }
    if (opts.expect_mailbox >= 0 && served == 1) {
        check_mailbox(c, after->mailbox - before->mailbox);
    }
    if (opts.expect_node_mailbox >= 0 && served == 1) {
        check_node_mailbox(c, after->mailbox - before->mailbox);
    }
    if (opts.expect_sent_ahead[c->coll] >= 0 && served == 1) {
        check_sent_ahead(c, after->sent_ahead - before->sent_ahead);
    }
    if (opts.expect_buffers_from[c->coll] >= 0 && served == 1) {
        check_buffers(c, after->direct_buffers - before->direct_buffers);
    }
    if (served == 1) {
        rx_check(&c->call, after->persistent - before->persistent == (opts.persistent ? 1u : 0u),
                 "coll_ringx_%s_persistent grew by %llu; expected %d", coll_names[c->coll],
                 after->persistent - before->persistent, opts.persistent);
        rx_check(&c->call, after->nonblocking - before->nonblocking == (opts.nonblocking ? 1u : 0u),
                 "coll_ringx_%s_nonblocking grew by %llu; expected %d", coll_names[c->coll],
                 after->nonblocking - before->nonblocking, opts.nonblocking);
    }
    if (served == 1) {
        rx_check(&c->call, after->on_device - before->on_device == (opts.device ? 1u : 0u),
                 "coll_ringx_%s_on_device grew by %llu; expected %d", coll_names[c->coll],
                 after->on_device - before->on_device, opts.device);
    }
    if (declined || (reason >= 0 && !opts.nested_fallback)) {
        rx_check(&c->call, 0 == bytes,
                 "coll_ringx_%s_bytes_sent grew by %llu on a call ringx "
                 "did not serve", coll_names[c->coll], bytes);
    }
}

static void check_guards(const case_ctx_t *c, const guarded_t *g)
{
    long where = 0;

    rx_check(&c->call, guards_intact(g, &where),
             "receive buffer modified outside its %zu-byte region, at byte "
             "offset %ld", g->bytes, where);
}

/* The send buffer is input only: it must come back as it was. */
static void check_send_unchanged(const case_ctx_t *c, const unsigned char *sendbuf,
                                 const unsigned char *copy, size_t bytes)
{
    size_t at = first_difference(copy, sendbuf, bytes);

    rx_check(&c->call, at == bytes, "send buffer modified at byte %zu", at);
}

static unsigned char *copy_of(const unsigned char *buf, size_t bytes)
{
    return memcpy(xmalloc(bytes), buf, bytes);
}

/* With --mem cuda, the buffers given to MPI for a call ringx must serve
 * are device copies of the test's host buffers, fetched back after it. */
typedef struct mirror {
    unsigned char *host;
    unsigned char *dev;         /* NULL: the call uses host */
    size_t bytes;
} mirror_t;

static bool on_device(const case_ctx_t *c)
{
    return opts.device && NULL == c->expect_reason;
}

static unsigned char *mirror(mirror_t *m, const case_ctx_t *c, unsigned char *host,
                             size_t bytes)
{
    m->host = host;
    m->bytes = bytes;
    m->dev = on_device(c) ? rx_device_copy_of(host, bytes) : NULL;
    return m->dev ? m->dev : host;
}

static void unmirror(mirror_t *m)
{
    if (m->dev) {
        rx_check(NULL, rx_device_context_kept(),
                 "after an MPI call on device buffers the thread's CUDA context is not the "
                 "caller's (%s)", opts.no_context ? "none was current" : "its device's");
        rx_device_get(m->host, m->dev, m->bytes);
        rx_device_free(m->dev);
        m->dev = NULL;
    }
}

static void check_reduction_result(const case_ctx_t *c, const unsigned char *result)
{
    const type_desc_t *t = c->gen.type;
    size_t nscalars = c->count * t->scalars, mismatches = 0, first_bad = 0;
    uint64_t first = COLL_REDUCE_SCATTER_BLOCK == c->coll
                         ? (uint64_t)c->rank * nscalars : 0;
    scalar_t bad_ref = { 0 }, bad_got = { 0 };
    char want[128], got[128];

    for (size_t k = 0; k < nscalars; k++) {
        scalar_t ref = reduce_reference(&c->gen, c->seeds, first + k);
        scalar_t res = load_scalar(t, result + (k / t->scalars) * t->extent +
                                          (k % t->scalars) * t->stride);
        if (!scalars_match(&c->gen, &res, &ref) && 0 == mismatches++) {
            first_bad = k;
            bad_ref = ref;
            bad_got = res;
        }
    }
    want[0] = got[0] = '\0';
    if (mismatches) {
        format_scalar(t, &bad_ref, want, sizeof want);
        format_scalar(t, &bad_got, got, sizeof got);
    }
    rx_check(&c->call, 0 == mismatches,
             "%zu of %zu result scalars wrong; first at index %zu: expected "
             "%s, got %s", mismatches, nscalars, first_bad, want, got);
}

/* MPI 4.0's persistent collectives: Open MPI 4.1's pcollreq extension,
 * the standard names in Open MPI 5. */
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define PERSISTENT(name) MPIX_##name##_init
#elif OMPI_MAJOR_VERSION >= 5
#define PERSISTENT(name) MPI_##name##_init
#endif

/* A request made by an init call: started once, waited for, freed. */
static void run_persistent(MPI_Request *req)
{
    MPI_Start(req);
    MPI_Wait(req, MPI_STATUS_IGNORE);
    MPI_Request_free(req);
}

static void invoke_reduction(const case_ctx_t *c, const void *sendbuf,
                             void *recvbuf)
{
    const void *src = c->in_place ? MPI_IN_PLACE : sendbuf;
    MPI_Request req;

#ifdef PERSISTENT
    if (opts.persistent) {
        if (COLL_ALLREDUCE == c->coll) {
            PERSISTENT(Allreduce)(src, recvbuf, (int)c->count, c->gen.type->dtype, c->op->op,
                                  c->comm, MPI_INFO_NULL, &req);
        } else {
            PERSISTENT(Reduce_scatter_block)(src, recvbuf, (int)c->count, c->gen.type->dtype,
                                             c->op->op, c->comm, MPI_INFO_NULL, &req);
        }
        run_persistent(&req);
        return;
    }
#endif
    if (COLL_ALLREDUCE == c->coll && opts.nonblocking) {
        MPI_Iallreduce(src, recvbuf, (int)c->count, c->gen.type->dtype, c->op->op, c->comm,
                       &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else if (COLL_ALLREDUCE == c->coll) {
        MPI_Allreduce(src, recvbuf, (int)c->count, c->gen.type->dtype,
                      c->op->op, c->comm);
    } else if (opts.nonblocking) {
        MPI_Ireduce_scatter_block(src, recvbuf, (int)c->count, c->gen.type->dtype, c->op->op,
                                  c->comm, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Reduce_scatter_block(src, recvbuf, (int)c->count,
                                 c->gen.type->dtype, c->op->op, c->comm);
    }
}

static void invoke_allgather(const case_ctx_t *c, const void *own, void *recvbuf)
{
    const void *src = c->in_place ? MPI_IN_PLACE : own;
    int scount = c->in_place ? 0 : (int)c->count;
    MPI_Datatype stype = c->in_place ? MPI_DATATYPE_NULL : c->gen.type->dtype;
    MPI_Request req;

#ifdef PERSISTENT
    if (opts.persistent) {
        PERSISTENT(Allgather)(src, scount, stype, recvbuf, (int)c->count, c->gen.type->dtype,
                              c->comm, MPI_INFO_NULL, &req);
        run_persistent(&req);
        return;
    }
#endif
    if (opts.nonblocking) {
        MPI_Iallgather(src, scount, stype, recvbuf, (int)c->count, c->gen.type->dtype, c->comm,
                       &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Allgather(src, scount, stype, recvbuf, (int)c->count, c->gen.type->dtype, c->comm);
    }
}

/* Allreduce: count in, count out.  Reduce_scatter_block: count per rank
 * in, count out; in place the input fills the receive buffer and only its
 * first count elements are defined afterwards. */
static void run_reduction(const case_ctx_t *c)
{
    size_t n_in = c->count * (COLL_REDUCE_SCATTER_BLOCK == c->coll
                                  ? (size_t)c->gen.nranks : 1);
    size_t in_bytes = n_in * c->gen.type->extent;
    guarded_t recv = guarded_alloc(c->in_place ? in_bytes
                                               : c->count * c->gen.type->extent);
    unsigned char *sendbuf = c->in_place ? recv.data : xmalloc(in_bytes);
    unsigned char *send_copy = NULL;
    rx_counters_t before, after;

    fill_elements(&c->gen, c->seeds[c->rank], n_in, sendbuf, SEND_GAP_BYTE);
    if (!c->in_place) {
        send_copy = copy_of(sendbuf, in_bytes);
    }
    mirror_t mrecv, msend = { NULL, NULL, 0 };
    unsigned char *call_recv = mirror(&mrecv, c, recv.base, recv.bytes + 2 * GUARD_BYTES) +
                               GUARD_BYTES;
    unsigned char *call_send = c->in_place ? call_recv : mirror(&msend, c, sendbuf, in_bytes);

    rx_counters_read(coll_names[c->coll], c->expect_alg, &before);
    invoke_reduction(c, call_send, call_recv);
    rx_counters_read(coll_names[c->coll], c->expect_alg, &after);
    unmirror(&mrecv);
    unmirror(&msend);

    check_counters(c, &before, &after);
    check_guards(c, &recv);
    check_reduction_result(c, recv.data);
    if (!c->in_place) {
        check_send_unchanged(c, sendbuf, send_copy, in_bytes);
        free(send_copy);
        free(sendbuf);
    }
    free(recv.base);
}

static void check_allgather_result(const case_ctx_t *c, const unsigned char *result)
{
    size_t extent = c->gen.type->extent, block = c->count * extent;
    size_t total = block * (size_t)c->gen.nranks, at, elem;
    unsigned char *expected = xmalloc(total);
    char want[64], got[64];

    for (int r = 0; r < c->gen.nranks; r++) {
        bool own_in_place = c->in_place && r == c->rank;
        fill_elements(&c->gen, c->seeds[r], c->count, expected + r * block,
                      own_in_place ? SEND_GAP_BYTE : POISON_BYTE);
    }
    at = first_difference(expected, result, total);
    elem = at / extent;
    want[0] = got[0] = '\0';
    if (at < total) {
        format_hex(expected + elem * extent, extent, want, sizeof want);
        format_hex(result + elem * extent, extent, got, sizeof got);
    }
    rx_check(&c->call, at == total,
             "received element %zu (from rank %zu) differs at byte %zu: "
             "expected bytes %s, got %s", elem,
             c->count ? elem / c->count : 0, at - elem * extent, want, got);
    free(expected);
}

static void run_allgather(const case_ctx_t *c)
{
    size_t block = c->count * c->gen.type->extent;
    guarded_t recv = guarded_alloc(block * (size_t)c->gen.nranks);
    unsigned char *own = c->in_place ? recv.data + (size_t)c->rank * block
                                     : xmalloc(block);
    unsigned char *send_copy = NULL;
    rx_counters_t before, after;

    fill_elements(&c->gen, c->seeds[c->rank], c->count, own, SEND_GAP_BYTE);
    if (!c->in_place) {
        send_copy = copy_of(own, block);
    }
    mirror_t mrecv, msend = { NULL, NULL, 0 };
    unsigned char *call_recv = mirror(&mrecv, c, recv.base, recv.bytes + 2 * GUARD_BYTES) +
                               GUARD_BYTES;
    unsigned char *call_own = c->in_place ? NULL : mirror(&msend, c, own, block);

    rx_counters_read(coll_names[c->coll], c->expect_alg, &before);
    invoke_allgather(c, call_own, call_recv);
    rx_counters_read(coll_names[c->coll], c->expect_alg, &after);
    unmirror(&mrecv);
    unmirror(&msend);

    check_counters(c, &before, &after);
    check_guards(c, &recv);
    check_allgather_result(c, recv.data);
    if (!c->in_place) {
        check_send_unchanged(c, own, send_copy, block);
        free(send_copy);
        free(own);
    }
    free(recv.base);
}

/* ------------------------------------------------------------------ */
/* Communicators                                                       */
/* ------------------------------------------------------------------ */

/* A communicator under test; `alternating` ones cycle through two dups
 * call by call.  All members run the same sequence of cases on it, so
 * (id, seq) identifies a case consistently across them. */
typedef struct test_comm {
    uint64_t id;
    MPI_Comm comms[2];
    int ncomms;
    int even_nodes;             /* several nodes, the same rank count (>= 2) on each: how many */
    unsigned next;
    uint64_t seq;
} test_comm_t;

enum { TC_WORLD, TC_SPLIT, TC_DUP, TC_REVERSED, TC_ALTERNATING, NUM_TEST_COMMS };

static MPI_Comm named(MPI_Comm comm, const char *name)
{
    MPI_Comm_set_name(comm, name);
    return comm;
}

static MPI_Comm split_world(int color, int key, const char *name)
{
    MPI_Comm comm;

    MPI_Comm_split(MPI_COMM_WORLD, color, key, &comm);
    return named(comm, name);
}

static MPI_Comm dup_world(const char *name)
{
    MPI_Comm comm;

    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    return named(comm, name);
}

/* Whether comm spans several nodes (MPI_COMM_TYPE_SHARED) with the same
 * number of ranks, 2 or more, on each: where ringx's hierarchical
 * algorithms run.  Worked out here independently of ringx.  Returns how
 * many nodes comm spans where they do, else 0. */
static int even_nodes(MPI_Comm comm)
{
    MPI_Comm node;
    int size, node_size, range[2];

    MPI_Comm_size(comm, &size);
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    range[0] = node_size;
    range[1] = -node_size;
    MPI_Allreduce(MPI_IN_PLACE, range, 2, MPI_INT, MPI_MIN, comm);
    return range[0] == -range[1] && range[0] >= 2 && range[0] < size ? size / range[0] : 0;
}

static void create_test_comms(test_comm_t *tcs)
{
    int rank, size;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    memset(tcs, 0, NUM_TEST_COMMS * sizeof *tcs);
    for (int i = 0; i < NUM_TEST_COMMS; i++) {
        tcs[i].id = (uint64_t)i + 1;
        tcs[i].ncomms = 1;
    }
    tcs[TC_WORLD].comms[0] = MPI_COMM_WORLD;
    tcs[TC_SPLIT].comms[0] = split_world(rank % 2, rank, "split_rank_mod_2");
    tcs[TC_DUP].comms[0] = dup_world("dup_of_world");
    /* key = size - rank reverses the rank order */
    tcs[TC_REVERSED].comms[0] = split_world(0, size - rank, "reversed_world");
    tcs[TC_ALTERNATING].comms[0] = dup_world("alternating_dup_a");
    tcs[TC_ALTERNATING].comms[1] = dup_world("alternating_dup_b");
    tcs[TC_ALTERNATING].ncomms = 2;
    for (int i = 0; i < NUM_TEST_COMMS; i++) {
        tcs[i].even_nodes = even_nodes(tcs[i].comms[0]);
    }
}

static void free_test_comms(test_comm_t *tcs)
{
    for (int i = TC_WORLD + 1; i < NUM_TEST_COMMS; i++) {
        for (int k = 0; k < tcs[i].ncomms; k++) {
            MPI_Comm_free(&tcs[i].comms[k]);
        }
    }
}

static int comm_size(const test_comm_t *tc)
{
    int size;

    MPI_Comm_size(tc->comms[0], &size);
    return size;
}

/* The reason a call must fall back for, or NULL when ringx must serve it:
 * --expect-fallback overrides everything for its collective. */
static const char *expected_reason(enum coll_id coll, const char *natural)
{
    if ((int)coll != opts.fallback_coll && opts.fallback_coll != FALLBACK_ALL) {
        return natural;
    }
    /* ringx rejects unsuitable buffers before it looks at the transport;
     * only a collective switched off overrides that. */
    if (natural && 0 == strcmp(opts.fallback_reason, "transport")) {
        return natural;
    }
    return opts.fallback_reason;
}

/* --expect-alg's algorithm for a call on tc: a forced hierarchical
 * algorithm runs only where the nodes are even, the ring elsewhere. */
static const char *expected_alg(const test_comm_t *tc, enum coll_id coll)
{
    const char *alg = opts.expect_alg[coll];
    return alg && 0 == strcmp(alg, "hierarchical") && !tc->even_nodes ? "ring" : alg;
}

static void run_case(test_comm_t *tc, enum coll_id coll, const type_desc_t *t,
                     const op_desc_t *op, size_t count, bool in_place,
                     const char *natural_reason)
{
    case_ctx_t c;
    uint64_t key = rx_mix(tc->id, tc->seq++);

    if (!t->available) {
        return;
    }
    c.coll = coll;
    c.op = op;
    c.count = count;
    c.in_place = in_place;
    c.comm = tc->comms[tc->next++ % (unsigned)tc->ncomms];
    c.expect_reason = expected_reason(coll, natural_reason);
    c.expect_alg = expected_alg(tc, coll);
    c.even_nodes = tc->even_nodes;
    MPI_Comm_rank(c.comm, &c.rank);
    MPI_Comm_size(c.comm, &c.gen.nranks);
    c.gen.type = t;
    c.gen.op = op->kind;
    c.gen.stock_reduces = (NULL != c.expect_reason || opts.results_only) &&
                          !is_user_op(op);
    c.seeds = xmalloc((size_t)c.gen.nranks * sizeof *c.seeds);
    for (int r = 0; r < c.gen.nranks; r++) {
        c.seeds[r] = rx_case_seed(key, r);
    }
    c.call = (rx_call_t){ coll_names[coll], t->name, op->name, count, in_place,
                          c.comm };
    rx_watchdog_arm(&c.call, opts.watchdog_seconds);
    if (COLL_ALLGATHER == coll) {
        run_allgather(&c);
    } else {
        run_reduction(&c);
    }
    rx_watchdog_disarm();
    free(c.seeds);
}

/* ------------------------------------------------------------------ */
/* Test matrices                                                       */
/* ------------------------------------------------------------------ */

/* {0, 1, 2, size-1, 7} without repetitions. */
static int small_counts(int size, size_t *counts)
{
    const size_t wanted[] = { 0, 1, 2, (size_t)size - 1, 7 };
    int n = 0;

    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
        bool seen = false;
        for (int k = 0; k < n; k++) {
            seen = seen || counts[k] == wanted[i];
        }
        if (!seen) {
            counts[n++] = wanted[i];
        }
    }
    return n;
}

static void run_both_reductions(test_comm_t *tc, const type_desc_t *t,
                                const op_desc_t *op, size_t count,
                                bool in_place, const char *natural_reason)
{
    run_case(tc, COLL_ALLREDUCE, t, op, count, in_place, natural_reason);
    run_case(tc, COLL_REDUCE_SCATTER_BLOCK, t, op, count, in_place,
             natural_reason);
}

/* Every served type x every op MPI defines on it, every collective. */
static void run_full_matrix(test_comm_t *tc, size_t count, bool in_place)
{
    for (size_t i = 0; i < NUM_SERVED_TYPES; i++) {
        for (size_t k = 0; k < NUM_PREDEFINED_OPS; k++) {
            if (op_defined_on(&predefined_ops[k], &served_types[i])) {
                run_both_reductions(tc, &served_types[i], &predefined_ops[k],
                                    count, in_place, NULL);
            }
        }
        run_case(tc, COLL_ALLGATHER, &served_types[i], &no_op, count, in_place,
                 NULL);
    }
    run_case(tc, COLL_ALLGATHER, &type_contig3_int, &no_op, count, in_place,
             NULL);
    run_case(tc, COLL_ALLGATHER, &type_vector_int, &no_op, count, in_place,
             NULL);
}

static void run_small_counts(test_comm_t *tc)
{
    size_t counts[5];
    int n = small_counts(comm_size(tc), counts);

    for (int i = 0; i < n; i++) {
        for (int in_place = 0; in_place <= 1; in_place++) {
            run_full_matrix(tc, counts[i], in_place);
        }
    }
}

/* Representative pairs for the large counts: every integer width with
 * wrapping sums, floating point, bitwise, pairs and booleans. */
static const struct { MPI_Datatype dtype; MPI_Op op; } large_reductions[] = {
    { MPI_INT8_T, MPI_SUM },   { MPI_UINT16_T, MPI_SUM },
    { MPI_INT32_T, MPI_SUM },  { MPI_INT64_T, MPI_SUM },
    { MPI_FLOAT, MPI_SUM },    { MPI_DOUBLE, MPI_SUM },
    { MPI_DOUBLE, MPI_MAX },   { MPI_UINT64_T, MPI_BXOR },
    { MPI_FLOAT_INT, MPI_MINLOC }, { MPI_C_BOOL, MPI_LOR },
};

static const MPI_Datatype large_allgather_types[] = {
    MPI_UINT8_T, MPI_DOUBLE, MPI_C_DOUBLE_COMPLEX
};

/* The large cases are split between the two communicators: the first
 * runs every pair with LARGE_COUNT, the second with about LARGE_BYTES, and
 * consecutive pairs alternate between in place and not (shifted by one on
 * the second communicator).  So every pair meets both counts and both
 * buffer modes, and every communicator both modes, while the reference
 * (each rank regenerates all ranks' inputs: the bulk of the runtime) is
 * paid only twice per pair. */
static size_t large_count(const type_desc_t *t, enum coll_id coll, int size, int which)
{
    (void)coll;
    (void)size;
    return which ? LARGE_BYTES / t->extent + 1 : LARGE_COUNT;
}

/* Medium calls: medium_bytes[which] in all (the buffer reduced or
 * gathered, reduce_scatter_block's input), around where calls on one node
 * turn from the outboxes to the peers' buffers. */
static size_t medium_count(const type_desc_t *t, enum coll_id coll, int size, int which)
{
    return medium_bytes[which] / (t->extent * (COLL_ALLREDUCE == coll ? 1 : (size_t)size)) + 1;
}

/* A large call ringx serves, then a small one it hands to the stock
 * component: whoever leaves a ringx call first must not leave its peers
 * depending on ringx's progress, which stock collectives do not drive. */
static void run_large_case(test_comm_t *tc, enum coll_id coll,
                           const type_desc_t *t, const op_desc_t *op,
                           size_t count, bool in_place)
{
    run_case(tc, coll, t, op, count, in_place, NULL);
    run_case(tc, COLL_ALLREDUCE, find_type(MPI_INT), &op_user_sum,
             fallback_counts[2], false, "op");
}

typedef size_t (*count_fn)(const type_desc_t *t, enum coll_id coll, int size, int which);

/* The representative pairs and allgather types with count's counts. */
static void run_sized_counts(test_comm_t *tc, int which, count_fn count)
{
    size_t nred = sizeof large_reductions / sizeof large_reductions[0];
    size_t ngat = sizeof large_allgather_types / sizeof large_allgather_types[0];
    int size = comm_size(tc);

    for (size_t i = 0; i < nred; i++) {
        const type_desc_t *t = find_type(large_reductions[i].dtype);
        const op_desc_t *op = find_op(large_reductions[i].op);
        bool in_place = (i + (size_t)which) % 2;
        run_large_case(tc, COLL_ALLREDUCE, t, op, count(t, COLL_ALLREDUCE, size, which),
                       in_place);
        run_large_case(tc, COLL_REDUCE_SCATTER_BLOCK, t, op,
                       count(t, COLL_REDUCE_SCATTER_BLOCK, size, which), in_place);
    }
    for (size_t i = 0; i < ngat; i++) {
        const type_desc_t *t = find_type(large_allgather_types[i]);
        run_large_case(tc, COLL_ALLGATHER, t, &no_op, count(t, COLL_ALLGATHER, size, which),
                       (i + (size_t)which) % 2);
    }
}

/* Calls ringx must hand to the stock component, with the reason. */
typedef struct fallback_case {
    unsigned colls;
    const type_desc_t *type;
    const op_desc_t *op;
    const char *reason;
} fallback_case_t;

static void run_fallback_cases(test_comm_t *tc)
{
    /* Open MPI rejects predefined ops on derived types, so the contiguous
     * derived type is reduced with a user op: ringx must report the
     * datatype, the first reason it meets. */
    const fallback_case_t cases[] = {
        { REDUCTIONS, &type_contig3_int, &op_user_sum, "datatype" },
        { REDUCTIONS, &type_double_int, find_op(MPI_MINLOC), "datatype" },
        { REDUCTIONS, &type_double_int, find_op(MPI_MAXLOC), "datatype" },
        { REDUCTIONS, &type_long_double, find_op(MPI_SUM), "datatype" },
        { REDUCTIONS, find_type(MPI_INT), &op_user_sum, "op" },
        { REDUCTIONS, find_type(MPI_2INT), &op_user_affine, "op" },
        /* Open MPI accepts MPI_SUM on MPI_BYTE; MPI does not define it */
        { REDUCTIONS, find_type(MPI_BYTE), find_op(MPI_SUM), "op" },
    };
    size_t ncounts = sizeof fallback_counts / sizeof fallback_counts[0];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (size_t k = 0; k < ncounts; k++) {
            for (int in_place = 0; in_place <= 1; in_place++) {
                for (int coll = 0; coll < NUM_COLLS; coll++) {
                    if (cases[i].colls & COLL_BIT(coll)) {
                        run_case(tc, (enum coll_id)coll, cases[i].type,
                                 cases[i].op, fallback_counts[k], in_place,
                                 cases[i].reason);
                    }
                }
            }
        }
    }
}

static void run_all(void)
{
    test_comm_t tcs[NUM_TEST_COMMS];

    create_test_comms(tcs);
    for (int i = 0; i < NUM_TEST_COMMS; i++) {
        run_small_counts(&tcs[i]);
    }
    for (int i = 0; i < NUM_TEST_COMMS; i++) {
        if (i == TC_WORLD || i == TC_REVERSED || opts.expect_handed_back) {
            run_fallback_cases(&tcs[i]);
        }
    }
    if (!opts.quick || opts.medium) {
        run_sized_counts(&tcs[TC_WORLD], 0, medium_count);
        run_sized_counts(&tcs[TC_REVERSED], 1, medium_count);
        run_sized_counts(&tcs[TC_WORLD], 2, medium_count);
    }
    if (!opts.quick) {
        run_sized_counts(&tcs[TC_WORLD], 0, large_count);
        run_sized_counts(&tcs[TC_REVERSED], 1, large_count);
    }
    free_test_comms(tcs);
}

/* ------------------------------------------------------------------ */
/* Main                                                                */
/* ------------------------------------------------------------------ */

/* The collective named before the colon of "COLL:..."; -1 if none. */
static int coll_before(const char *arg, const char *colon)
{
    for (int c = 0; colon && c < NUM_COLLS; c++) {
        if (strlen(coll_names[c]) == (size_t)(colon - arg) &&
            0 == strncmp(arg, coll_names[c], (size_t)(colon - arg))) {
            return c;
        }
    }
    return -1;
}

static bool parse_expect_fallback(const char *arg)
{
    const char *colon = strchr(arg, ':');
    int c = coll_before(arg, colon);

    if (!colon || rx_fallback_reason_index(colon + 1) < 0) {
        return false;
    }
    if (colon - arg == 3 && 0 == strncmp(arg, "all", 3)) {
        c = FALLBACK_ALL;
    }
    opts.fallback_coll = c;
    opts.fallback_reason = colon + 1;
    return c != -1;
}

/* --expect-alg COLL:ALG: every call of COLL that ringx serves must be
 * counted by coll_ringx_COLL_ALG_calls (run with the algorithm forced). */
static bool parse_expect_alg(const char *arg)
{
    const char *colon = strchr(arg, ':');
    int c = coll_before(arg, colon);

    if (c >= 0) {
        opts.expect_alg[c] = colon + 1;
    }
    return c >= 0;
}

/* BYTES (every collective) or COLL:BYTES, into per_coll. */
static bool parse_coll_bytes(const char *arg, long *per_coll)
{
    const char *colon = strchr(arg, ':');
    int c = coll_before(arg, colon);
    long bytes = strtol(colon != NULL ? colon + 1 : arg, NULL, 10);

    if (bytes < 0 || (colon != NULL && c < 0)) {
        return false;
    }
    for (int k = 0; k < NUM_COLLS; k++) {
        if (c < 0 || k == c) {
            per_coll[k] = bytes;
        }
    }
    return true;
}

/* --expect-multi-node: ringx connected communicators that span several
 * nodes (by Open MPI's locality), MPI_COMM_WORLD among them, and counted
 * MPI_COMM_WORLD's layout: laid out for the hierarchical algorithms where
 * its nodes are even, uneven where they are. */
static void check_multi_node(void)
{
    unsigned long long multi = 0, hier = 0, uneven = 0;
    bool ok = ringx_pvar_read("coll_ringx_comms_multi_node", &multi) == 0 && multi > 0;
    bool even = even_nodes(MPI_COMM_WORLD);

    rx_check(NULL, ok, "no communicator across nodes counted by coll_ringx_comms_multi_node");
    ok = ringx_pvar_read("coll_ringx_comms_hierarchical", &hier) == 0 &&
         ringx_pvar_read("coll_ringx_comms_uneven", &uneven) == 0;
    rx_check(NULL, ok && (even ? hier > 0 : uneven > 0 || hier == 0),
             "MPI_COMM_WORLD's nodes are %s, but coll_ringx_comms_hierarchical is %llu and "
             "coll_ringx_comms_uneven %llu", even ? "even" : "not even", hier, uneven);
}

/* --expect-slept: waits for the ranks of this node slept until a peer
 * rang (every result was checked as always).  A peer rings after every
 * flag it stores, so a sleep that ends at the time limit with what it
 * waited for already there (coll_ringx_rings_missed) takes a peer
 * descheduled between its store and its ring.  Only a sleep that timed
 * out can miss a ring: with no ring at all 75-97% of them did, correct
 * rings up to 8% (docs/internals.md), more the busier the machine, where
 * the time limit itself ends most sleeps when other processes hold the
 * cores for long (so that count is only reported). */
static void check_slept(void)
{
    unsigned long long slept = 0, timed_out = 0, missed = 0;
    int rank;
    bool ok = ringx_pvar_read("coll_ringx_waits_slept", &slept) == 0 &&
              ringx_pvar_read("coll_ringx_sleeps_timed_out", &timed_out) == 0 &&
              ringx_pvar_read("coll_ringx_rings_missed", &missed) == 0;

    rx_check(NULL, ok && slept > 0, "no wait counted by coll_ringx_waits_slept");
    if (opts.nonblocking || opts.persistent) {
        unsigned long long in_progress = 0;
        rx_check(NULL,
                 ringx_pvar_read("coll_ringx_progress_waits_slept", &in_progress) == 0 &&
                     in_progress > 0,
                 "no wait for a nonblocking or persistent call counted by "
                 "coll_ringx_progress_waits_slept");
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("rank %d: %llu waits slept, %llu timed out, %llu of those with a ring missed\n",
           rank, slept, timed_out, missed);
    rx_check(NULL, ok && missed <= 2 + timed_out / 4,
             "%llu of %llu sleeps ended at the time limit with what they waited for there "
             "(coll_ringx_rings_missed): the peers' rings did not wake them", missed, slept);
}

/* --expect-served-some: another component above ringx passed it calls of
 * every collective (their results were checked as every other call's). */
static void check_served_some(void)
{
    rx_counters_t k;

    for (int c = 0; c < NUM_COLLS; c++) {
        rx_counters_read(coll_names[c], NULL, &k);
        rx_check(NULL, k.served > 0, "ringx served no %s call", coll_names[c]);
    }
}

/* --expect-handed-back: the previous component handed calls back to
 * ringx, which served them with Open MPI's base algorithms (their results
 * were checked as every other call's). */
static void check_handed_back(void)
{
    unsigned long long handed_back = 0;
    rx_counters_t k;

    for (int c = 0; c < NUM_COLLS; c++) {
        rx_counters_read(coll_names[c], NULL, &k);
        handed_back += k.handed_back;
    }
    rx_check(NULL, handed_back > 0,
             "the previous component handed no call back to ringx "
             "(coll_ringx_<coll>_handed_back are 0)");
}

static bool parse_options(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--quick")) {
            opts.quick = true;
        } else if (0 == strcmp(argv[i], "--medium")) {
            opts.medium = true;
        } else if (0 == strcmp(argv[i], "--results-only")) {
            opts.results_only = true;
        } else if (0 == strcmp(argv[i], "--expect-served-some")) {
            opts.expect_served_some = true;
        } else if (0 == strcmp(argv[i], "--nested-fallback")) {
            opts.nested_fallback = true;
        } else if (0 == strcmp(argv[i], "--expect-handed-back")) {
            opts.nested_fallback = opts.expect_handed_back = true;
        } else if (0 == strcmp(argv[i], "--expect-fallback") && i + 1 < argc) {
            if (!parse_expect_fallback(argv[++i])) {
                return false;
            }
        } else if (0 == strcmp(argv[i], "--expect-alg") && i + 1 < argc) {
            if (!parse_expect_alg(argv[++i])) {
                return false;
            }
        } else if (0 == strcmp(argv[i], "--nonblocking")) {
            opts.nonblocking = true;
        } else if (0 == strcmp(argv[i], "--persistent")) {
            opts.persistent = true;
        } else if (0 == strcmp(argv[i], "--expect-staged")) {
            opts.expect_staged = true;
        } else if (0 == strcmp(argv[i], "--expect-node-mailbox") && i + 1 < argc) {
            if ((opts.expect_node_mailbox = strtol(argv[++i], NULL, 10)) < 0) {
                return false;
            }
        } else if (0 == strcmp(argv[i], "--expect-sent-ahead") && i + 1 < argc) {
            if (!parse_coll_bytes(argv[++i], opts.expect_sent_ahead)) {
                return false;
            }
        } else if (0 == strcmp(argv[i], "--expect-mailbox") && i + 1 < argc) {
            if ((opts.expect_mailbox = strtol(argv[++i], NULL, 10)) < 0) {
                return false;
            }
        } else if (0 == strcmp(argv[i], "--expect-buffers-from") && i + 1 < argc) {
            if (!parse_coll_bytes(argv[++i], opts.expect_buffers_from)) {
                return false;
            }
        } else if (0 == strcmp(argv[i], "--mem") && i + 1 < argc) {
            const char *mem = argv[++i];
            if (0 != strcmp(mem, "cuda") && 0 != strcmp(mem, "host")) {
                return false;
            }
            opts.device = 0 == strcmp(mem, "cuda");
        } else if (0 == strcmp(argv[i], "--no-current-context")) {
            opts.no_context = true;
        } else if (0 == strcmp(argv[i], "--expect-multi-node")) {
            opts.expect_multi_node = true;
        } else if (0 == strcmp(argv[i], "--expect-slept")) {
            opts.expect_slept = true;
        } else if (0 == strcmp(argv[i], "--watchdog") && i + 1 < argc) {
            opts.watchdog_seconds = (unsigned)strtoul(argv[++i], NULL, 10);
        } else {
            return false;
        }
    }
    return true;
}

/* Every rank opens its device; the test is skipped unless all can. */
static bool device_available(void)
{
    MPI_Comm node;
    int local_rank, rank, mine, all;
    const char *why = "";

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);
    mine = rx_device_open(local_rank, &why);
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all && 0 == rank) {
        printf("SKIP: %s\n", mine ? "no CUDA device on some rank" : why);
    }
    return all != 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: " PROGRAM_NAME " [--quick [--medium]] [--results-only] "
            "[--expect-fallback COLL:REASON] [--expect-alg COLL:ALG] [--expect-staged] [--nonblocking] [--persistent]\n"
            "       [--expect-mailbox BYTES] [--expect-node-mailbox BYTES] [--expect-sent-ahead BYTES]\n"
            "       [--expect-buffers-from [COLL:]BYTES] [--expect-multi-node] [--expect-slept]\n"
            "       [--nested-fallback] [--expect-handed-back] [--expect-served-some]\n"
            "       [--mem host|cuda [--no-current-context]] [--watchdog SECONDS]\n"
            "  COLL: allreduce | allgather | reduce_scatter_block\n"
            "  REASON: disabled | datatype | op | memory | transport\n");
}

int main(int argc, char **argv)
{
    int rank, status;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (!parse_options(argc, argv)) {
        if (0 == rank) {
            usage();
        }
        MPI_Finalize();
        return 2;
    }
    if (opts.device && !device_available()) {
        MPI_Finalize();
        return 77;      /* automake's "skipped" */
    }
    if (opts.device && opts.no_context) {
        rx_device_without_context();
    }
#ifndef PERSISTENT
    if (opts.persistent) {
        if (0 == rank) {
            printf("SKIP: this MPI has no persistent collectives\n");
        }
        MPI_Finalize();
        return 77;
    }
#endif
    rx_pvar_init();
    init_types();
    init_ops();
    if (!opts.results_only && !rx_component_loaded()) {
        if (0 == rank) {
            printf("FAIL: ringx component not loaded (no coll_ringx_* pvars)\n");
        }
        rx_check(NULL, false, "no coll_ringx_* pvars");
    } else {
        if (!opts.results_only) {
            rx_check_pvar_contract(coll_names, NUM_COLLS);
        }
        run_all();
        if (opts.expect_multi_node) {
            check_multi_node();
        }
        if (opts.expect_slept) {
            check_slept();
        }
        if (opts.expect_handed_back) {
            check_handed_back();
        }
        if (opts.expect_served_some) {
            check_served_some();
        }
    }
    status = rx_finish(PROGRAM_NAME);
    free_ops();
    free_types();
    rx_pvar_finalize();
    MPI_Finalize();
    return status;
}
