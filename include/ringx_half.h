/*
 * ringx_half.h - IEEE 754 binary16 (MPIX_C_FLOAT16) to and from float.
 *
 * Half-precision reductions are done in float and rounded back once per
 * operation: float's 24-bit significand is at least 2 x 11 + 2 bits, so
 * rounding the float result of one +, * (or min, max) to half gives the
 * correctly rounded half result (no harm from the double rounding).  The
 * same code serves the host loops and the CUDA kernels, which therefore
 * agree bit for bit.  Plain C, branch-light so that the host loops
 * vectorise.
 */
#ifndef RINGX_HALF_H
#define RINGX_HALF_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define RINGX_HALF_FN static __host__ __device__ __forceinline__
#else
#define RINGX_HALF_FN static inline
#endif

RINGX_HALF_FN float ringx_bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

RINGX_HALF_FN uint32_t ringx_float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Exact.  Normal halves: exponent and significand move into float's
 * fields, rebiased by 112 (127 - 15); infinities and NaNs rebiased once
 * more reach float's all-ones exponent.  Subnormals and zero (exponent 0)
 * are their significand times 2^-24, an exact float product that never
 * involves a float subnormal, so flush-to-zero modes cannot change it. */
RINGX_HALF_FN float ringx_half_to_float(uint16_t h)
{
    const uint32_t exponent = h & 0x7c00u, significand = h & 0x03ffu;
    uint32_t u = ((uint32_t)(h & 0x7fffu) << 13) + 0x38000000u;
    float f;

    if (exponent == 0x7c00u) {
        u += 0x38000000u;
    }
    f = exponent == 0 ? (float)significand * 0x1p-24f : ringx_bits_float(u);
    return ringx_bits_float(ringx_float_bits(f) | (uint32_t)(h & 0x8000u) << 16);
}

/* Round to nearest, ties to even; overflow gives infinity, every NaN the
 * quiet NaN of its sign. */
RINGX_HALF_FN uint16_t ringx_float_to_half(float f)
{
    const uint32_t u = ringx_float_bits(f);
    const uint32_t sign = (u >> 16) & 0x8000u;
    const uint32_t a = u & 0x7fffffffu;
    uint32_t h;

    if (a >= 0x47800000u) {               /* >= 2^16, infinity or NaN */
        h = a > 0x7f800000u ? 0x7e00u : 0x7c00u;
    } else if (a < 0x38800000u) {         /* below 2^-14: a half subnormal or zero */
        /* Adding 0.5 puts the half's significand in the low bits of the
         * float, rounded by the addition itself. */
        h = ringx_float_bits(ringx_bits_float(a) + 0.5f) - 0x3f000000u;
    } else {
        /* Rebias the exponent, then round on the 13 bits dropped: add
         * just under half of the last kept bit, plus that bit (ties to
         * even).  A carry out of the significand bumps the exponent, as
         * it should, up to infinity. */
        const uint32_t odd = (a >> 13) & 1u;
        h = (a - 0x38000000u + 0x0fffu + odd) >> 13;
    }
    return (uint16_t)(h | sign);
}

#undef RINGX_HALF_FN

#endif /* RINGX_HALF_H */
