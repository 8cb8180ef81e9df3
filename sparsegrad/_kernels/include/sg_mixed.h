/* Mixed precision: a half-precision variable (float16 or bfloat16) updated
 * with float32 arithmetic, rounded once when it is stored.
 *
 * The optimizers' mixed-precision updates load var (and half slots) into
 * float32, run the float32 element functions of sg_training.h, and store
 * the results back, each value rounded once: to nearest (ties to even, the
 * conversions of sg_half.h) or stochastically.
 *
 * Stochastic rounding
 * -------------------
 * A value x between two neighbours of the storage type, lo (towards zero)
 * and hi (away from zero), is stored as hi when
 *     D + (r mod 2**b) >= 2**b,
 * D being the first b bits of x's magnitude below the storage type's last
 * bit (read as an integer: x = lo + D * ulp / 2**b + what lies further
 * down), r a 32-bit random word and b = 16 for bfloat16, 13 for float16.
 * So hi comes with probability D / 2**b (x's distance from lo in units of
 * ulp / 2**b), a value of the storage type is stored unchanged, and the
 * expected stored value is x up to 2**-b ulp.  For bfloat16 this is one
 * integer addition on x's bits; float16's denormals (below 2**-14) lie on
 * the grid 2**-24, where D is read from x * 2**24.  Infinities and NaNs are
 * stored as the nearest conversion stores them; a magnitude that rounds up
 * past the largest finite value becomes an infinity.
 *
 * The random word of a stored element is a function of the element alone:
 *     r = mix32(lo32(pos) ^ k0 ^ mix32(hi32(pos) ^ k1))
 * pos the element's flat position in its array, (k0, k1) the key of the
 * stream (the Python layer derives one per seed, step and array: var, or
 * slot 1..3), mix32 a bijective 32-bit integer hash.  No thread, block or
 * visiting order enters it, so the bits are the same on any thread count,
 * CPU or GPU.
 *
 * The element functions below are C++ for the host and the device; the
 * block stores at the end are the host's (the loads are
 * sg_half.h's sg_half_row_to_f32) (eight lanes at once
 * with AVX2 and F16C, the same bits as one at a time).
 */
#ifndef SG_MIXED_H
#define SG_MIXED_H
#include "sg_half.h"

/* A bijective 32-bit hash: xor-shifts and two odd multipliers (the
 * "lowbias32" constants of Chris Wellons' hash prospector). */
SG_FN sg_u32 sg_mix32(sg_u32 x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

/* The part of an element's random word that its position's high word
 * fixes: constant over 2**32 consecutive positions. */
SG_FN sg_u32 sg_sr_base(sg_u32 k0, sg_u32 k1, sg_u32 pos_hi) {
    return k0 ^ sg_mix32(pos_hi ^ k1);
}

/* The random word of position pos in the stream keyed (k0, k1). */
SG_FN sg_u32 sg_sr_word(sg_u32 k0, sg_u32 k1, sg_u64 pos) {
    return sg_mix32((sg_u32)pos ^ sg_sr_base(k0, k1, (sg_u32)(pos >> 32)));
}

/* x stored as bfloat16, rounded stochastically with random word r. */
SG_FN sg_u16 sg_f32_to_bf16_sr(float x, sg_u32 r) {
    sg_u32 u = sg_f32_bits(x), a = u & 0x7fffffffu;
    sg_u32 up = (u + (r & 0xffffu)) >> 16;  /* carries into the exponent */
    sg_u32 special = a > 0x7f800000u ? ((u >> 16) & 0x8000u) | 0x7fc0u : u >> 16;
    return (sg_u16)(a >= 0x7f800000u ? special : up);
}

/* x stored as float16, rounded stochastically with random word r. */
SG_FN sg_u16 sg_f32_to_f16_sr(float x, sg_u32 r) {
    sg_u32 u = sg_f32_bits(x), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    sg_u32 rr = r & 0x1fffu;
    /* at least 2**-14: add to the 13 bits float16 drops, keep the rest and
     * rebias the exponent; an overflow is an infinity */
    sg_u32 normal = ((a + rr) >> 13) - ((127u - 15u) << 10);
    normal = normal >= 0x7c00u ? 0x7c00u : normal;
    /* below: units of 2**-24 (y exact and below 1024); D from y's fraction */
    float y = (a < 0x38800000u ? sg_f32_of_bits(a) : 0.0f) * 16777216.0f;
    sg_u32 whole = (sg_u32)(int)y;
    sg_u32 d = (sg_u32)(int)((y - (float)(int)whole) * 8192.0f);
    sg_u32 tiny = whole + ((d + rr) >> 13);
    /* infinities and NaNs as sg_f32_to_f16 stores them */
    sg_u32 special = 0x7c00u | (a > 0x7f800000u ? 0x200u | ((a & 0x7fffffu) >> 13) : 0u);
    sg_u32 h = a >= 0x7f800000u ? special : (a >= 0x38800000u ? normal : tiny);
    return (sg_u16)(sign | h);
}

/* One element stored: to nearest, or stochastically with word r. */
SG_FN sg_u16 sg_mixed_round(float x, int bf16, int stochastic, sg_u32 r) {
    if (stochastic)
        return bf16 ? sg_f32_to_bf16_sr(x, r) : sg_f32_to_f16_sr(x, r);
    return bf16 ? sg_f32_to_bf16(x) : sg_f32_to_f16(x);
}

/* How the half arrays of one update are stored: the type, the rounding,
 * and the key of each stream (0: var; 1..3: the slots). */
typedef struct {
    int bf16;
    int stochastic;
    sg_u32 k0[4];
    sg_u32 k1[4];
} sg_mixed_mode;

#if defined(__cplusplus) && !defined(__CUDACC__)
/* ---- the host's blocks ------------------------------------------------- */

/* Stochastic stores of n (< 2**32) floats whose positions pos0 .. pos0 +
 * n - 1 share their high word: r = mix32((lo32(pos0) + j) ^ base).  (A
 * 32-bit counter: the vectorised loop then needs no 64-bit lanes.) */
static inline __attribute__((always_inline)) void sg_mixed_store_sr(
        const float* src, sg_u16* dst, sg_u32 n, int bf16, sg_u32 base,
        sg_u32 lo) {
    if (bf16)
        for (sg_u32 j = 0; j < n; ++j)
            dst[j] = sg_f32_to_bf16_sr(src[j], sg_mix32((lo + j) ^ base));
    else
        for (sg_u32 j = 0; j < n; ++j)
            dst[j] = sg_f32_to_f16_sr(src[j], sg_mix32((lo + j) ^ base));
}

/* dst[j] = src[j] stored in the mode's type and rounding, j < n; dst[0] is
 * position pos0 of stream `stream`. */
static inline __attribute__((always_inline)) void sg_mixed_store(
        const float* src, sg_u16* dst, sg_i64 n, const sg_mixed_mode* mode,
        int stream, sg_u64 pos0) {
    int bf16 = mode->bf16;
    sg_i64 j = 0;
    if (mode->stochastic) {
        sg_u32 k0 = mode->k0[stream], k1 = mode->k1[stream];
        while (j < n) {
            /* runs of positions with one high word (all of them, but for a
             * block that crosses a multiple of 2**32) */
            sg_u64 pos = pos0 + (sg_u64)j;
            sg_u64 room = 4294967296ull - (pos & 0xffffffffull);
            sg_u64 m = (sg_u64)(n - j) < room ? (sg_u64)(n - j) : room;
            if (m > 0x80000000ull) m = 0x80000000ull;    /* fits the counter */
            sg_mixed_store_sr(src + j, dst + j, (sg_u32)m, bf16,
                              sg_sr_base(k0, k1, (sg_u32)(pos >> 32)), (sg_u32)pos);
            j += (sg_i64)m;
        }
        return;
    }
    sg_half_row_from_f32(src, dst, n, bf16);
}
#endif /* host C++ */

#endif /* SG_MIXED_H */
