/*
 * coll_ringx_datatype.c - which datatypes and ops ringx handles itself.
 *
 * Predefined datatypes are recognised by handle and mapped onto ringx's
 * fixed-width element types by kind and size; ops by handle.  Open MPI's
 * op.h is not used: Debian's devel headers cannot compile it, and ringx
 * reduces with its own code (ringx_host_reduce.h explains why).  Buffers
 * whose datatype leaves gaps are packed and unpacked with Open MPI's
 * convertor (allgather, which moves bytes).
 */
#include "coll_ringx.h"

#include "ompi/datatype/ompi_datatype.h"
#include "mpi-ext.h"    /* MPIX_C_FLOAT16 (Open MPI 5's shortfloat extension) */
#include "opal/datatype/opal_convertor.h"

typedef enum element_kind {
    KIND_SIGNED,
    KIND_UNSIGNED,
    KIND_FLOATING,
    KIND_COMPLEX,       /* size is that of the whole (re, im) pair */
    KIND_BOOL,
    KIND_BYTE,
    KIND_FLOAT_INT,
    KIND_2INT
} element_kind_t;

typedef struct known_datatype {
    MPI_Datatype handle;
    element_kind_t kind;
} known_datatype_t;

/* The most used types first: the table is searched linearly per call. */
static const known_datatype_t known_datatypes[] = {
    { MPI_FLOAT, KIND_FLOATING },
    { MPI_DOUBLE, KIND_FLOATING },
    { MPI_INT, KIND_SIGNED },
    { MPI_LONG, KIND_SIGNED },
    { MPI_UNSIGNED_LONG, KIND_UNSIGNED },
    { MPI_LONG_LONG, KIND_SIGNED },
    { MPI_UNSIGNED_LONG_LONG, KIND_UNSIGNED },
    { MPI_UNSIGNED, KIND_UNSIGNED },
    { MPI_BYTE, KIND_BYTE },
    { MPI_SHORT, KIND_SIGNED },
    { MPI_UNSIGNED_SHORT, KIND_UNSIGNED },
    { MPI_SIGNED_CHAR, KIND_SIGNED },
    { MPI_UNSIGNED_CHAR, KIND_UNSIGNED },
    { MPI_INT8_T, KIND_SIGNED },
    { MPI_INT16_T, KIND_SIGNED },
    { MPI_INT32_T, KIND_SIGNED },
    { MPI_INT64_T, KIND_SIGNED },
    { MPI_UINT8_T, KIND_UNSIGNED },
    { MPI_UINT16_T, KIND_UNSIGNED },
    { MPI_UINT32_T, KIND_UNSIGNED },
    { MPI_UINT64_T, KIND_UNSIGNED },
    { MPI_AINT, KIND_SIGNED },
    { MPI_OFFSET, KIND_SIGNED },
    { MPI_COUNT, KIND_SIGNED },
    { MPI_C_BOOL, KIND_BOOL },
    { MPI_C_FLOAT_COMPLEX, KIND_COMPLEX },
    { MPI_C_DOUBLE_COMPLEX, KIND_COMPLEX },
    { MPI_CXX_FLOAT_COMPLEX, KIND_COMPLEX },
    { MPI_CXX_DOUBLE_COMPLEX, KIND_COMPLEX },
    { MPI_2INT, KIND_2INT },
    { MPI_FLOAT_INT, KIND_FLOAT_INT },
    /* Fortran types: their sizes come from the Fortran compiler Open MPI
     * was built with, so they are mapped by size at run time. */
    { MPI_INTEGER, KIND_SIGNED },
    { MPI_REAL, KIND_FLOATING },
    { MPI_DOUBLE_PRECISION, KIND_FLOATING },
    { MPI_COMPLEX, KIND_COMPLEX },
    { MPI_DOUBLE_COMPLEX, KIND_COMPLEX },
#ifdef MPI_INTEGER1
    { MPI_INTEGER1, KIND_SIGNED },
#endif
#ifdef MPI_INTEGER2
    { MPI_INTEGER2, KIND_SIGNED },
#endif
#ifdef MPI_INTEGER4
    { MPI_INTEGER4, KIND_SIGNED },
#endif
#ifdef MPI_INTEGER8
    { MPI_INTEGER8, KIND_SIGNED },
#endif
#ifdef MPI_REAL4
    { MPI_REAL4, KIND_FLOATING },
#endif
#ifdef MPI_REAL8
    { MPI_REAL8, KIND_FLOATING },
#endif
#ifdef MPI_COMPLEX8
    { MPI_COMPLEX8, KIND_COMPLEX },
#endif
#ifdef MPI_COMPLEX16
    { MPI_COMPLEX16, KIND_COMPLEX },
#endif
    /* IEEE binary16; MPIX_SHORT_FLOAT is the same type where short float
     * is _Float16 (Open MPI 5 on x86-64 and aarch64) */
#ifdef MPIX_C_FLOAT16
    { MPIX_C_FLOAT16, KIND_FLOATING },
#endif
};

typedef struct known_op {
    MPI_Op handle;
    ringx_op_t op;
} known_op_t;

static const known_op_t known_ops[] = {
    { MPI_SUM, RINGX_OP_SUM },   { MPI_MAX, RINGX_OP_MAX },   { MPI_MIN, RINGX_OP_MIN },
    { MPI_PROD, RINGX_OP_PROD }, { MPI_BAND, RINGX_OP_BAND }, { MPI_BOR, RINGX_OP_BOR },
    { MPI_BXOR, RINGX_OP_BXOR }, { MPI_LAND, RINGX_OP_LAND }, { MPI_LOR, RINGX_OP_LOR },
    { MPI_LXOR, RINGX_OP_LXOR }, { MPI_MINLOC, RINGX_OP_MINLOC },
    { MPI_MAXLOC, RINGX_OP_MAXLOC },
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The ringx element type of kind and size, or RINGX_TYPE_COUNT if none. */
static ringx_type_t type_of(element_kind_t kind, size_t size)
{
    static const ringx_type_t by_width[2][4] = {
        { RINGX_TYPE_INT8, RINGX_TYPE_INT16, RINGX_TYPE_INT32, RINGX_TYPE_INT64 },
        { RINGX_TYPE_UINT8, RINGX_TYPE_UINT16, RINGX_TYPE_UINT32, RINGX_TYPE_UINT64 },
    };
    int width = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : size == 8 ? 3 : -1;
    ringx_type_t t = RINGX_TYPE_COUNT;

    switch (kind) {
    case KIND_SIGNED:
    case KIND_UNSIGNED:
        t = width < 0 ? RINGX_TYPE_COUNT : by_width[kind == KIND_UNSIGNED][width];
        break;
    case KIND_FLOATING:
        t = size == 4   ? RINGX_TYPE_FLOAT
            : size == 8 ? RINGX_TYPE_DOUBLE
            : size == 2 ? RINGX_TYPE_FLOAT16
                        : RINGX_TYPE_COUNT;
        break;
    case KIND_COMPLEX:
        t = size == 8 ? RINGX_TYPE_CFLOAT : size == 16 ? RINGX_TYPE_CDOUBLE : RINGX_TYPE_COUNT;
        break;
    case KIND_BOOL:      t = size == 1 ? RINGX_TYPE_BOOL : RINGX_TYPE_COUNT; break;
    case KIND_BYTE:      t = RINGX_TYPE_BYTE; break;
    case KIND_FLOAT_INT: t = RINGX_TYPE_FLOAT_INT; break;
    case KIND_2INT:      t = RINGX_TYPE_2INT; break;
    }
    /* Pair types with padding (none of the two listed on common ABIs) would
     * not travel as packed elements. */
    return t != RINGX_TYPE_COUNT && ringx_type_size(t) == size ? t : RINGX_TYPE_COUNT;
}

static ringx_type_t lookup_type(struct ompi_datatype_t *dtype)
{
    for (size_t i = 0; i < ARRAY_LEN(known_datatypes); i++) {
        if (known_datatypes[i].handle == dtype) {
            size_t size;
            ompi_datatype_type_size(dtype, &size);
            return type_of(known_datatypes[i].kind, size);
        }
    }
    return RINGX_TYPE_COUNT;
}

static int lookup_op(struct ompi_op_t *op, ringx_op_t *out)
{
    for (size_t i = 0; i < ARRAY_LEN(known_ops); i++) {
        if (known_ops[i].handle == op) {
            *out = known_ops[i].op;
            return 1;
        }
    }
    return 0;     /* user-defined (commutative or not), MPI_REPLACE, MPI_NO_OP */
}

int ringx_classify_reduction(struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             ringx_reduction_t *red)
{
    red->type = lookup_type(dtype);
    if (red->type == RINGX_TYPE_COUNT) {
        return RINGX_FALLBACK_DATATYPE;
    }
    if (!lookup_op(op, &red->op) || !ringx_op_valid(red->op, red->type)) {
        return RINGX_FALLBACK_OP;
    }
    return RINGX_SERVE;
}

int ringx_datatype_plain(struct ompi_datatype_t *dtype, int count, ptrdiff_t *true_lb)
{
    ptrdiff_t lb, extent, true_extent;

    /* Gaps between or inside elements would make byte ranges carry bytes
     * that are not the user's data. */
    *true_lb = 0;
    if (!ompi_datatype_is_contiguous_memory_layout(dtype, count > 1 ? count : 2)) {
        return 0;
    }
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, true_lb, &true_extent);
    return extent > 0 && true_extent == extent;
}

/* ------------------------------------------------------------- packing */

/* Open MPI's convertor over count elements of dtype at user: packs them
 * into, or unpacks them from, bytes packed bytes, until the bytes end or
 * the elements do (a pass may stop short of both: it goes on). */
static int convert(int unpack, void *user, size_t count, struct ompi_datatype_t *dtype,
                   char *packed, size_t bytes)
{
    opal_convertor_t conv;
    size_t moved = 1;
    int rc;

    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    rc = unpack ? opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor,
                                                           &dtype->super, count, user, 0, &conv)
                : opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor,
                                                           &dtype->super, count, user, 0, &conv);
    for (size_t done = 0; rc == 0 && done < bytes && moved > 0; done += moved) {
        struct iovec iov = { packed + done, bytes - done };
        uint32_t iov_count = 1;

        moved = bytes - done;
        rc = unpack ? opal_convertor_unpack(&conv, &iov, &iov_count, &moved)
                    : opal_convertor_pack(&conv, &iov, &iov_count, &moved);
    }
    OBJ_DESTRUCT(&conv);
    return rc < 0 ? OMPI_ERROR : OMPI_SUCCESS;
}

int ringx_datatype_pack(char *packed, size_t bytes, const void *user, size_t count,
                        struct ompi_datatype_t *dtype)
{
    /* the convertor only reads what it packs from */
    return convert(0, (void *)(uintptr_t)user, count, dtype, packed, bytes);
}

int ringx_datatype_unpack(void *user, size_t count, struct ompi_datatype_t *dtype,
                          const char *packed, size_t bytes)
{
    return convert(1, user, count, dtype, (char *)(uintptr_t)packed, bytes);
}
