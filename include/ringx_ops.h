/*
 * ringx_ops.h - the element types and reduction operations ringx serves.
 *
 * One table shared by the host reduction code, the CUDA kernels and the
 * tests, so that "which (type, op) pairs does ringx reduce itself" is
 * answered in exactly one place.  Plain C, no MPI, usable from nvcc.
 */
#ifndef RINGX_OPS_H
#define RINGX_OPS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Fixed-width element types.  MPI datatypes are mapped onto these by
 * size and kind (e.g. MPI_LONG -> RINGX_TYPE_INT64 on LP64). */
typedef enum ringx_type {
    RINGX_TYPE_INT8,
    RINGX_TYPE_INT16,
    RINGX_TYPE_INT32,
    RINGX_TYPE_INT64,
    RINGX_TYPE_UINT8,
    RINGX_TYPE_UINT16,
    RINGX_TYPE_UINT32,
    RINGX_TYPE_UINT64,
    RINGX_TYPE_FLOAT,
    RINGX_TYPE_DOUBLE,
    RINGX_TYPE_CFLOAT,      /* two floats: real, imaginary */
    RINGX_TYPE_CDOUBLE,     /* two doubles: real, imaginary */
    RINGX_TYPE_BOOL,        /* one byte, C _Bool semantics (logical ops) */
    RINGX_TYPE_BYTE,        /* one byte, bitwise ops only */
    RINGX_TYPE_FLOAT_INT,   /* struct { float v; int i; }, MPI_FLOAT_INT */
    RINGX_TYPE_2INT,        /* struct { int v; int i; },   MPI_2INT */
    RINGX_TYPE_FLOAT16,     /* IEEE binary16 (MPIX_C_FLOAT16), reduced in float: ringx_half.h */
    RINGX_TYPE_COUNT
} ringx_type_t;

typedef enum ringx_op {
    RINGX_OP_SUM,
    RINGX_OP_PROD,
    RINGX_OP_MIN,
    RINGX_OP_MAX,
    RINGX_OP_LAND,
    RINGX_OP_LOR,
    RINGX_OP_LXOR,
    RINGX_OP_BAND,
    RINGX_OP_BOR,
    RINGX_OP_BXOR,
    RINGX_OP_MINLOC,
    RINGX_OP_MAXLOC,
    RINGX_OP_COUNT
} ringx_op_t;

/* The groups of the MPI standard's reduction table (MPI-4.0 section 6.9.2). */
typedef enum ringx_type_group {
    RINGX_GROUP_INTEGER,
    RINGX_GROUP_FLOATING,
    RINGX_GROUP_COMPLEX,
    RINGX_GROUP_LOGICAL,
    RINGX_GROUP_BYTE,
    RINGX_GROUP_PAIR
} ringx_type_group_t;

static inline ringx_type_group_t ringx_type_group(ringx_type_t t)
{
    switch (t) {
    case RINGX_TYPE_FLOAT:
    case RINGX_TYPE_DOUBLE:
    case RINGX_TYPE_FLOAT16:   return RINGX_GROUP_FLOATING;
    case RINGX_TYPE_CFLOAT:
    case RINGX_TYPE_CDOUBLE:   return RINGX_GROUP_COMPLEX;
    case RINGX_TYPE_BOOL:      return RINGX_GROUP_LOGICAL;
    case RINGX_TYPE_BYTE:      return RINGX_GROUP_BYTE;
    case RINGX_TYPE_FLOAT_INT:
    case RINGX_TYPE_2INT:      return RINGX_GROUP_PAIR;
    default:                   return RINGX_GROUP_INTEGER;
    }
}

static inline size_t ringx_type_size(ringx_type_t t)
{
    static const unsigned char sizes[RINGX_TYPE_COUNT] = {
        1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 8, 16, 1, 1, 8, 8, 2
    };
    return (unsigned)t < RINGX_TYPE_COUNT ? sizes[t] : 0;
}

/* The alignment the type's members need: a device buffer off it cannot be
 * read by the CUDA kernels (misaligned accesses fault on a GPU). */
static inline size_t ringx_type_align(ringx_type_t t)
{
    static const unsigned char aligns[RINGX_TYPE_COUNT] = {
        1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 4, 8, 1, 1, 4, 4, 2
    };
    return (unsigned)t < RINGX_TYPE_COUNT ? aligns[t] : 1;
}

/* Whether MPI defines op on this type group; ringx reduces exactly these
 * pairs itself and hands every other pair to the fallback component. */
static inline int ringx_op_valid(ringx_op_t op, ringx_type_t t)
{
    ringx_type_group_t g = ringx_type_group(t);
    switch (op) {
    case RINGX_OP_SUM:
    case RINGX_OP_PROD:
        return g == RINGX_GROUP_INTEGER || g == RINGX_GROUP_FLOATING ||
               g == RINGX_GROUP_COMPLEX;
    case RINGX_OP_MIN:
    case RINGX_OP_MAX:
        return g == RINGX_GROUP_INTEGER || g == RINGX_GROUP_FLOATING;
    case RINGX_OP_LAND:
    case RINGX_OP_LOR:
    case RINGX_OP_LXOR:
        return g == RINGX_GROUP_INTEGER || g == RINGX_GROUP_LOGICAL;
    case RINGX_OP_BAND:
    case RINGX_OP_BOR:
    case RINGX_OP_BXOR:
        return g == RINGX_GROUP_INTEGER || g == RINGX_GROUP_BYTE;
    case RINGX_OP_MINLOC:
    case RINGX_OP_MAXLOC:
        return g == RINGX_GROUP_PAIR;
    default:
        return 0;
    }
}

static inline const char *ringx_type_name(ringx_type_t t)
{
    static const char *const names[RINGX_TYPE_COUNT] = {
        "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
        "uint64", "float", "double", "cfloat", "cdouble", "bool", "byte",
        "float_int", "2int", "float16"
    };
    return (unsigned)t < RINGX_TYPE_COUNT ? names[t] : "?";
}

static inline const char *ringx_op_name(ringx_op_t op)
{
    static const char *const names[RINGX_OP_COUNT] = {
        "sum", "prod", "min", "max", "land", "lor", "lxor", "band", "bor",
        "bxor", "minloc", "maxloc"
    };
    return (unsigned)op < RINGX_OP_COUNT ? names[op] : "?";
}

#ifdef __cplusplus
}
#endif

#endif /* RINGX_OPS_H */
