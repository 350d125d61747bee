/*
 * Predefined Open MPI operation and datatype handles -> the kind codes of
 * sharm's reduction kernels (enum sharm_kernel_op / sharm_kernel_elem in
 * sharm_glue.h, mirrored by src/kernels/kinds.rs).  Pure lookups: derived or
 * duplicated datatypes and user operations map to -1 and stay with Open MPI.
 */
#include "sharm_glue_internal.h"

#include <stdbool.h>
#include <complex.h>

typedef struct { float v; int k; } sharm_float_int_t;
typedef struct { double v; int k; } sharm_double_int_t;
typedef struct { long v; int k; } sharm_long_int_t;
typedef struct { int v; int k; } sharm_2int_t;
typedef struct { short v; int k; } sharm_short_int_t;
typedef struct { long double v; int k; } sharm_long_double_int_t;
typedef struct { float v, k; } sharm_2real_t;
typedef struct { double v, k; } sharm_2double_t;
typedef struct { int32_t v, k; } sharm_2integer_t;

/* C sizeof of each kind: the element stride the kernels assume. */
static const int64_t kind_extent[SHARM_KERNEL_ELEM_COUNT] = {
    [SHARM_KERNEL_ELEM_I8] = 1,
    [SHARM_KERNEL_ELEM_U8] = 1,
    [SHARM_KERNEL_ELEM_I16] = 2,
    [SHARM_KERNEL_ELEM_U16] = 2,
    [SHARM_KERNEL_ELEM_I32] = 4,
    [SHARM_KERNEL_ELEM_U32] = 4,
    [SHARM_KERNEL_ELEM_I64] = 8,
    [SHARM_KERNEL_ELEM_U64] = 8,
    [SHARM_KERNEL_ELEM_FORTRAN_INT1] = 1,
    [SHARM_KERNEL_ELEM_FORTRAN_INT2] = 2,
    [SHARM_KERNEL_ELEM_FORTRAN_INT4] = 4,
    [SHARM_KERNEL_ELEM_FORTRAN_INT8] = 8,
    [SHARM_KERNEL_ELEM_F32] = sizeof(float),
    [SHARM_KERNEL_ELEM_F64] = sizeof(double),
    [SHARM_KERNEL_ELEM_LONG_DOUBLE] = sizeof(long double),
    [SHARM_KERNEL_ELEM_COMPLEX_F32] = sizeof(float _Complex),
    [SHARM_KERNEL_ELEM_COMPLEX_F64] = sizeof(double _Complex),
    [SHARM_KERNEL_ELEM_COMPLEX_LONG_DOUBLE] = sizeof(long double _Complex),
    [SHARM_KERNEL_ELEM_BOOL] = sizeof(bool),
    [SHARM_KERNEL_ELEM_FORTRAN_LOGICAL] = 4,
    [SHARM_KERNEL_ELEM_BYTE] = 1,
    [SHARM_KERNEL_ELEM_FLOAT_INT] = sizeof(sharm_float_int_t),
    [SHARM_KERNEL_ELEM_DOUBLE_INT] = sizeof(sharm_double_int_t),
    [SHARM_KERNEL_ELEM_LONG_INT] = sizeof(sharm_long_int_t),
    [SHARM_KERNEL_ELEM_2INT] = sizeof(sharm_2int_t),
    [SHARM_KERNEL_ELEM_SHORT_INT] = sizeof(sharm_short_int_t),
    [SHARM_KERNEL_ELEM_LONG_DOUBLE_INT] = sizeof(sharm_long_double_int_t),
    [SHARM_KERNEL_ELEM_2REAL] = sizeof(sharm_2real_t),
    [SHARM_KERNEL_ELEM_2DOUBLE_PRECISION] = sizeof(sharm_2double_t),
    [SHARM_KERNEL_ELEM_2INTEGER] = sizeof(sharm_2integer_t),
};

int sharm_glue_kernel_op_count(void) { return SHARM_KERNEL_OP_COUNT; }
int sharm_glue_kernel_elem_count(void) { return SHARM_KERNEL_ELEM_COUNT; }

int64_t sharm_glue_kernel_elem_extent(int kind)
{
    return kind >= 0 && kind < SHARM_KERNEL_ELEM_COUNT ? kind_extent[kind] : -1;
}

int sharm_glue_op_kind(void *op)
{
    static const struct { MPI_Op op; int kind; } ops[] = {
        {MPI_SUM, SHARM_KERNEL_OP_SUM},       {MPI_PROD, SHARM_KERNEL_OP_PROD},
        {MPI_MIN, SHARM_KERNEL_OP_MIN},       {MPI_MAX, SHARM_KERNEL_OP_MAX},
        {MPI_LAND, SHARM_KERNEL_OP_LAND},     {MPI_LOR, SHARM_KERNEL_OP_LOR},
        {MPI_LXOR, SHARM_KERNEL_OP_LXOR},     {MPI_BAND, SHARM_KERNEL_OP_BAND},
        {MPI_BOR, SHARM_KERNEL_OP_BOR},       {MPI_BXOR, SHARM_KERNEL_OP_BXOR},
        {MPI_MINLOC, SHARM_KERNEL_OP_MINLOC}, {MPI_MAXLOC, SHARM_KERNEL_OP_MAXLOC},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if ((void *) ops[i].op == op) {
            return ops[i].kind;
        }
    }
    return -1;
}

/* Up to four candidate kinds per handle: types whose size depends on the
 * platform or on the Fortran compiler (long, MPI_AINT, INTEGER, REAL, ...)
 * list every kind they could be, and the one whose C sizeof equals the
 * datatype's extent is taken. */
#define K(x) SHARM_KERNEL_ELEM_##x
#define NONE (-1)
static const struct { MPI_Datatype dt; int kinds[4]; } dtypes[] = {
    /* C integers */
    {MPI_SIGNED_CHAR, {K(I8), NONE, NONE, NONE}},
    {MPI_UNSIGNED_CHAR, {K(U8), NONE, NONE, NONE}},
    {MPI_SHORT, {K(I16), K(I32), NONE, NONE}},
    {MPI_UNSIGNED_SHORT, {K(U16), K(U32), NONE, NONE}},
    {MPI_INT, {K(I32), K(I64), K(I16), NONE}},
    {MPI_UNSIGNED, {K(U32), K(U64), K(U16), NONE}},
    {MPI_LONG, {K(I64), K(I32), NONE, NONE}},
    {MPI_UNSIGNED_LONG, {K(U64), K(U32), NONE, NONE}},
    {MPI_LONG_LONG_INT, {K(I64), NONE, NONE, NONE}},
    {MPI_UNSIGNED_LONG_LONG, {K(U64), NONE, NONE, NONE}},
    {MPI_INT8_T, {K(I8), NONE, NONE, NONE}},
    {MPI_UINT8_T, {K(U8), NONE, NONE, NONE}},
    {MPI_INT16_T, {K(I16), NONE, NONE, NONE}},
    {MPI_UINT16_T, {K(U16), NONE, NONE, NONE}},
    {MPI_INT32_T, {K(I32), NONE, NONE, NONE}},
    {MPI_UINT32_T, {K(U32), NONE, NONE, NONE}},
    {MPI_INT64_T, {K(I64), NONE, NONE, NONE}},
    {MPI_UINT64_T, {K(U64), NONE, NONE, NONE}},
    {MPI_AINT, {K(I64), K(I32), NONE, NONE}},
    {MPI_OFFSET, {K(I64), K(I32), NONE, NONE}},
    {MPI_COUNT, {K(I64), K(I32), NONE, NONE}},
    /* Fortran integers */
    {MPI_INTEGER, {K(FORTRAN_INT4), K(FORTRAN_INT8), K(FORTRAN_INT2), K(FORTRAN_INT1)}},
    {MPI_INTEGER1, {K(FORTRAN_INT1), NONE, NONE, NONE}},
    {MPI_INTEGER2, {K(FORTRAN_INT2), NONE, NONE, NONE}},
    {MPI_INTEGER4, {K(FORTRAN_INT4), NONE, NONE, NONE}},
    {MPI_INTEGER8, {K(FORTRAN_INT8), NONE, NONE, NONE}},
    /* Floating point (REAL*16 / REAL*2 are not C types here: left to Open MPI) */
    {MPI_FLOAT, {K(F32), NONE, NONE, NONE}},
    {MPI_DOUBLE, {K(F64), NONE, NONE, NONE}},
    {MPI_LONG_DOUBLE, {K(LONG_DOUBLE), NONE, NONE, NONE}},
    {MPI_REAL, {K(F32), K(F64), NONE, NONE}},
    {MPI_DOUBLE_PRECISION, {K(F64), NONE, NONE, NONE}},
    {MPI_REAL4, {K(F32), NONE, NONE, NONE}},
    {MPI_REAL8, {K(F64), NONE, NONE, NONE}},
    /* Complex */
    {MPI_C_FLOAT_COMPLEX, {K(COMPLEX_F32), NONE, NONE, NONE}},
    {MPI_C_DOUBLE_COMPLEX, {K(COMPLEX_F64), NONE, NONE, NONE}},
    {MPI_C_LONG_DOUBLE_COMPLEX, {K(COMPLEX_LONG_DOUBLE), NONE, NONE, NONE}},
    {MPI_CXX_FLOAT_COMPLEX, {K(COMPLEX_F32), NONE, NONE, NONE}},
    {MPI_CXX_DOUBLE_COMPLEX, {K(COMPLEX_F64), NONE, NONE, NONE}},
    {MPI_CXX_LONG_DOUBLE_COMPLEX, {K(COMPLEX_LONG_DOUBLE), NONE, NONE, NONE}},
    {MPI_COMPLEX, {K(COMPLEX_F32), K(COMPLEX_F64), NONE, NONE}},
    {MPI_DOUBLE_COMPLEX, {K(COMPLEX_F64), NONE, NONE, NONE}},
    {MPI_COMPLEX8, {K(COMPLEX_F32), NONE, NONE, NONE}},
    {MPI_COMPLEX16, {K(COMPLEX_F64), NONE, NONE, NONE}},
    /* Logical and byte.  MPI_LOGICAL is Fortran's, an int-sized value (not a
     * C bool); MPI_LOGICAL1..8 have no reduction functions in Open MPI 4.1. */
    {MPI_C_BOOL, {K(BOOL), NONE, NONE, NONE}},
    {MPI_CXX_BOOL, {K(BOOL), NONE, NONE, NONE}},
    {MPI_LOGICAL, {K(FORTRAN_LOGICAL), NONE, NONE, NONE}},
    {MPI_BYTE, {K(BYTE), NONE, NONE, NONE}},
    /* MINLOC/MAXLOC pairs */
    {MPI_FLOAT_INT, {K(FLOAT_INT), NONE, NONE, NONE}},
    {MPI_DOUBLE_INT, {K(DOUBLE_INT), NONE, NONE, NONE}},
    {MPI_LONG_INT, {K(LONG_INT), NONE, NONE, NONE}},
    {MPI_2INT, {K(2INT), NONE, NONE, NONE}},
    {MPI_SHORT_INT, {K(SHORT_INT), NONE, NONE, NONE}},
    {MPI_LONG_DOUBLE_INT, {K(LONG_DOUBLE_INT), NONE, NONE, NONE}},
    {MPI_2REAL, {K(2REAL), NONE, NONE, NONE}},
    {MPI_2DOUBLE_PRECISION, {K(2DOUBLE_PRECISION), NONE, NONE, NONE}},
    {MPI_2INTEGER, {K(2INTEGER), NONE, NONE, NONE}},
};
#undef K

int sharm_glue_dtype_kind(void *dtype)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        if ((void *) dtypes[i].dt != dtype) {
            continue;
        }
        ptrdiff_t lb, extent;
        ompi_datatype_get_extent(dtype, &lb, &extent);
        for (int c = 0; c < 4 && dtypes[i].kinds[c] != NONE; c++) {
            if (kind_extent[dtypes[i].kinds[c]] == (int64_t) extent) {
                return dtypes[i].kinds[c];
            }
        }
        return -1;
    }
    return -1;
}
#undef NONE

/* Open MPI's own three-buffer reduction, target = source1 op source2
 * (ompi_3buff_op_reduce, op/avx's fused kernels on this machine).  sharm
 * never calls it; examples/kernel_bench.rs compares sharm's fused kernels
 * with it, the like-for-like fused pass on Open MPI's side. */
void sharm_glue_3buff_reduce(void *op, const void *source1, const void *source2,
                             void *target, int count, void *dtype)
{
    ompi_3buff_op_reduce((ompi_op_t *) op, (void *) source1, (void *) source2, target,
                         count, (ompi_datatype_t *) dtype);
}
