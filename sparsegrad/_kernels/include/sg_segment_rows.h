/* Sums of contiguous rows with few branches, for the host only.
 *
 * sg_seg_sum_rows_f32(x, n) and sg_seg_sum_rows_f64(x, n) return the bits of
 * sg_segment.h's sg_seg_sum_contiguous(x, n) for n >= 1, and -0.0 for n == 0
 * (the empty sum: adding -0.0 changes no value, so it is also the start of
 * every chain below).  They read x[0 .. SG_SEG_ROW_READ(n)) whatever n is:
 * the caller guarantees those values are readable.
 *
 * Why: rows of a RaggedTensor have random lengths, and the loops of
 * sg_seg_sum_contiguous (one over blocks of eight, one over the tail, one
 * for rows shorter than eight) then end at unpredictable points.  The
 * mispredicted branches cost more than the additions (10 million float32
 * values in rows of 20 on average: 8 ms by the loops, 4 ms here, one
 * thread).  Here every row shorter than SG_SEG_ROW_MAX takes the same
 * instructions (a longer one adds a loop over its blocks from the fifth on):
 * the blocks a row lacks and the tail values past its end are replaced by
 * -0.0, the exact
 * identity of addition (x + -0.0 == x for every x, -0.0 and NaN included),
 * so the arithmetic is that of sg_seg_sum_contiguous step for step:
 *
 *   n >= 8: eight partial sums a_p = x[p] + x[8 + p] + ... over the whole
 *           blocks, combined ((a0+a1)+(a2+a3))+((a4+a5)+(a6+a7)), then
 *           the tail x[8*(n/8) ..) added in order;
 *   n < 8:  -0.0 + x[0] + ... + x[n-1] in order (-0.0 + x[0] is x[0]).
 *
 * AVX2 (the *_avx2 builds) and SSE2 (every x86-64 CPU) have the masked
 * operations; elsewhere the functions are the loops themselves (include
 * sg_segment.h first).  The CUDA kernels use sg_seg_sum_contiguous.
 */
#ifndef SG_SEGMENT_ROWS_H
#define SG_SEGMENT_ROWS_H

#include <stdint.h>

/* Rows shorter than this take no branch on their length: four blocks of
 * eight and a tail of seven cover them. */
#define SG_SEG_ROW_MAX 40
/* The values a sum of n reads from its row's start. */
#define SG_SEG_ROW_READ(n) ((n) + 8 > SG_SEG_ROW_MAX ? (n) + 8 : SG_SEG_ROW_MAX)

/* The number of whole blocks a mask compares with, at most 4 (no overflow
 * for rows past 2^31 values). */
#define SG_ROWS_BLOCKS(nb) ((int)((nb) < 4 ? (nb) : 4))

/* The tail in order, from acc: part[0 .. 7) (a value past the row is -0.0). */
#define SG_ROWS_TAIL(acc, part)                                               \
    do {                                                                      \
        acc = acc + part[0]; acc = acc + part[1]; acc = acc + part[2];        \
        acc = acc + part[3]; acc = acc + part[4]; acc = acc + part[5];        \
        acc = acc + part[6];                                                  \
    } while (0)

#if defined(__AVX2__)
#include <immintrin.h>

static inline float sg_seg_sum_rows_f32(const float *x, int64_t n) {
    const __m256 nz = _mm256_set1_ps(-0.0f);
    int64_t nb = n >> 3, b;
    __m256i blocks = _mm256_set1_epi32(SG_ROWS_BLOCKS(nb));
    __m256 a = _mm256_loadu_ps(x), keep;
    __m128 lo, hi, p, q, r;
    float part[8], acc;
    /* Blocks 1..3 where they exist (block 0 starts the partial sums). */
    for (b = 1; b < SG_SEG_ROW_MAX / 8 - 1; ++b) {
        keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(blocks, _mm256_set1_epi32((int)b)));
        a = _mm256_add_ps(a, _mm256_blendv_ps(nz, _mm256_loadu_ps(x + 8 * b), keep));
    }
    for (b = SG_SEG_ROW_MAX / 8 - 1; b < nb; ++b)
        a = _mm256_add_ps(a, _mm256_loadu_ps(x + 8 * b));
    /* (a0+a1, a2+a3, a4+a5, a6+a7), then their pairs, then the total. */
    lo = _mm256_castps256_ps128(a);
    hi = _mm256_extractf128_ps(a, 1);
    p = _mm_add_ps(_mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)),
                   _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
    q = _mm_add_ps(_mm_shuffle_ps(p, p, _MM_SHUFFLE(2, 2, 2, 0)),
                   _mm_shuffle_ps(p, p, _MM_SHUFFLE(3, 3, 3, 1)));
    r = _mm_add_ss(q, _mm_shuffle_ps(q, q, _MM_SHUFFLE(1, 1, 1, 1)));
    r = _mm_blendv_ps(_mm_set1_ps(-0.0f), r,
                      _mm_castsi128_ps(_mm_set1_epi32(-(int)(nb > 0))));
    acc = _mm_cvtss_f32(r);
    /* The tail: the n & 7 values from 8 * nb. */
    keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(
        _mm256_set1_epi32((int)(n & 7)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
    _mm256_storeu_ps(part, _mm256_blendv_ps(nz, _mm256_loadu_ps(x + 8 * nb), keep));
    SG_ROWS_TAIL(acc, part);
    return acc;
}

static inline double sg_seg_sum_rows_f64(const double *x, int64_t n) {
    const __m256d nz = _mm256_set1_pd(-0.0);
    int64_t nb = n >> 3, b;
    __m256i blocks = _mm256_set1_epi64x(SG_ROWS_BLOCKS(nb)), tail;
    __m256d a03 = _mm256_loadu_pd(x), a47 = _mm256_loadu_pd(x + 4), keep, h;
    __m128d p, r;
    double part[8], acc;
    for (b = 1; b < SG_SEG_ROW_MAX / 8 - 1; ++b) {
        keep = _mm256_castsi256_pd(_mm256_cmpgt_epi64(blocks, _mm256_set1_epi64x(b)));
        a03 = _mm256_add_pd(a03, _mm256_blendv_pd(nz, _mm256_loadu_pd(x + 8 * b), keep));
        a47 = _mm256_add_pd(a47, _mm256_blendv_pd(nz, _mm256_loadu_pd(x + 8 * b + 4), keep));
    }
    for (b = SG_SEG_ROW_MAX / 8 - 1; b < nb; ++b) {
        a03 = _mm256_add_pd(a03, _mm256_loadu_pd(x + 8 * b));
        a47 = _mm256_add_pd(a47, _mm256_loadu_pd(x + 8 * b + 4));
    }
    /* (a0+a1, a4+a5, a2+a3, a6+a7), then (a0+a1)+(a2+a3) and
     * (a4+a5)+(a6+a7), then the total. */
    h = _mm256_hadd_pd(a03, a47);
    p = _mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));
    r = _mm_add_sd(p, _mm_unpackhi_pd(p, p));
    r = _mm_blendv_pd(_mm_set1_pd(-0.0), r,
                      _mm_castsi128_pd(_mm_set1_epi64x(-(int64_t)(nb > 0))));
    acc = _mm_cvtsd_f64(r);
    tail = _mm256_set1_epi64x(n & 7);
    keep = _mm256_castsi256_pd(_mm256_cmpgt_epi64(tail, _mm256_setr_epi64x(0, 1, 2, 3)));
    _mm256_storeu_pd(part, _mm256_blendv_pd(nz, _mm256_loadu_pd(x + 8 * nb), keep));
    keep = _mm256_castsi256_pd(_mm256_cmpgt_epi64(tail, _mm256_setr_epi64x(4, 5, 6, 7)));
    _mm256_storeu_pd(part + 4, _mm256_blendv_pd(nz, _mm256_loadu_pd(x + 8 * nb + 4), keep));
    SG_ROWS_TAIL(acc, part);
    return acc;
}

#elif defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#include <emmintrin.h>

/* m ? v : -0.0, lane by lane (m all ones or all zeros). */
static inline __m128 sg_rows_keep_f32(__m128 m, __m128 v) {
    return _mm_or_ps(_mm_and_ps(m, v), _mm_andnot_ps(m, _mm_set1_ps(-0.0f)));
}

static inline __m128d sg_rows_keep_f64(__m128d m, __m128d v) {
    return _mm_or_pd(_mm_and_pd(m, v), _mm_andnot_pd(m, _mm_set1_pd(-0.0)));
}

static inline float sg_seg_sum_rows_f32(const float *x, int64_t n) {
    int64_t nb = n >> 3, b;
    __m128i blocks = _mm_set1_epi32(SG_ROWS_BLOCKS(nb)), tail;
    __m128 lo = _mm_loadu_ps(x), hi = _mm_loadu_ps(x + 4), keep, p, q, r;
    float part[8], acc;
    for (b = 1; b < SG_SEG_ROW_MAX / 8 - 1; ++b) {
        keep = _mm_castsi128_ps(_mm_cmpgt_epi32(blocks, _mm_set1_epi32((int)b)));
        lo = _mm_add_ps(lo, sg_rows_keep_f32(keep, _mm_loadu_ps(x + 8 * b)));
        hi = _mm_add_ps(hi, sg_rows_keep_f32(keep, _mm_loadu_ps(x + 8 * b + 4)));
    }
    for (b = SG_SEG_ROW_MAX / 8 - 1; b < nb; ++b) {
        lo = _mm_add_ps(lo, _mm_loadu_ps(x + 8 * b));
        hi = _mm_add_ps(hi, _mm_loadu_ps(x + 8 * b + 4));
    }
    p = _mm_add_ps(_mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)),
                   _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
    q = _mm_add_ps(_mm_shuffle_ps(p, p, _MM_SHUFFLE(2, 2, 2, 0)),
                   _mm_shuffle_ps(p, p, _MM_SHUFFLE(3, 3, 3, 1)));
    r = _mm_add_ss(q, _mm_shuffle_ps(q, q, _MM_SHUFFLE(1, 1, 1, 1)));
    acc = _mm_cvtss_f32(sg_rows_keep_f32(
        _mm_castsi128_ps(_mm_set1_epi32(-(int)(nb > 0))), r));
    tail = _mm_set1_epi32((int)(n & 7));
    keep = _mm_castsi128_ps(_mm_cmpgt_epi32(tail, _mm_setr_epi32(0, 1, 2, 3)));
    _mm_storeu_ps(part, sg_rows_keep_f32(keep, _mm_loadu_ps(x + 8 * nb)));
    keep = _mm_castsi128_ps(_mm_cmpgt_epi32(tail, _mm_setr_epi32(4, 5, 6, 7)));
    _mm_storeu_ps(part + 4, sg_rows_keep_f32(keep, _mm_loadu_ps(x + 8 * nb + 4)));
    SG_ROWS_TAIL(acc, part);
    return acc;
}

/* Lanes (j, j + 1) below n, as a double mask. */
static inline __m128d sg_rows_below_f64(int j, int n) {
    return _mm_castsi128_pd(_mm_set_epi64x(-(int64_t)(j + 1 < n),
                                           -(int64_t)(j < n)));
}

static inline double sg_seg_sum_rows_f64(const double *x, int64_t n) {
    int64_t nb = n >> 3, b;
    int j;
    __m128d a01 = _mm_loadu_pd(x), a23 = _mm_loadu_pd(x + 2);
    __m128d a45 = _mm_loadu_pd(x + 4), a67 = _mm_loadu_pd(x + 6);
    __m128d keep, p, q;
    double part[8], acc;
    for (b = 1; b < SG_SEG_ROW_MAX / 8 - 1; ++b) {
        keep = _mm_castsi128_pd(_mm_set1_epi64x(-(int64_t)(b < nb)));
        a01 = _mm_add_pd(a01, sg_rows_keep_f64(keep, _mm_loadu_pd(x + 8 * b)));
        a23 = _mm_add_pd(a23, sg_rows_keep_f64(keep, _mm_loadu_pd(x + 8 * b + 2)));
        a45 = _mm_add_pd(a45, sg_rows_keep_f64(keep, _mm_loadu_pd(x + 8 * b + 4)));
        a67 = _mm_add_pd(a67, sg_rows_keep_f64(keep, _mm_loadu_pd(x + 8 * b + 6)));
    }
    for (b = SG_SEG_ROW_MAX / 8 - 1; b < nb; ++b) {
        a01 = _mm_add_pd(a01, _mm_loadu_pd(x + 8 * b));
        a23 = _mm_add_pd(a23, _mm_loadu_pd(x + 8 * b + 2));
        a45 = _mm_add_pd(a45, _mm_loadu_pd(x + 8 * b + 4));
        a67 = _mm_add_pd(a67, _mm_loadu_pd(x + 8 * b + 6));
    }
    /* (a0+a1, a2+a3) and (a4+a5, a6+a7), their pairs, the total. */
    p = _mm_add_pd(_mm_unpacklo_pd(a01, a23), _mm_unpackhi_pd(a01, a23));
    q = _mm_add_pd(_mm_unpacklo_pd(a45, a67), _mm_unpackhi_pd(a45, a67));
    p = _mm_add_sd(p, _mm_unpackhi_pd(p, p));
    q = _mm_add_sd(q, _mm_unpackhi_pd(q, q));
    acc = _mm_cvtsd_f64(sg_rows_keep_f64(
        _mm_castsi128_pd(_mm_set1_epi64x(-(int64_t)(nb > 0))), _mm_add_sd(p, q)));
    for (j = 0; j < 8; j += 2)
        _mm_storeu_pd(part + j, sg_rows_keep_f64(sg_rows_below_f64(j, (int)(n & 7)),
                                                 _mm_loadu_pd(x + 8 * nb + j)));
    SG_ROWS_TAIL(acc, part);
    return acc;
}

#else /* neither: the loops */

static inline float sg_seg_sum_rows_f32(const float *x, int64_t n) {
    return n > 0 ? sg_seg_sum_contiguous_f32(x, n) : -0.0f;
}

static inline double sg_seg_sum_rows_f64(const double *x, int64_t n) {
    return n > 0 ? sg_seg_sum_contiguous_f64(x, n) : -0.0;
}

#endif
/* o[k] = o[k] + x[k] for k in [0, n): one row of a ragged segment sum added
 * into its output row.  With AVX2 a row shorter than SG_SEG_ROW_MAX takes
 * five masked blocks of eight (no branch on its length: random lengths
 * would mispredict the loop's exit); only lanes below n are read or
 * written, so nothing past either row is touched.  The same additions,
 * value by value, as the loop. */
static inline void sg_seg_add_row_f32(float *o, const float *x, int64_t n) {
    int64_t k;
#if defined(__AVX2__)
    if (n < SG_SEG_ROW_MAX) {
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        int b;
        for (b = 0; b < SG_SEG_ROW_MAX / 8; ++b) {
            __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n - 8 * b), lane);
            __m256 sum = _mm256_add_ps(_mm256_maskload_ps(o + 8 * b, keep),
                                       _mm256_maskload_ps(x + 8 * b, keep));
            _mm256_maskstore_ps(o + 8 * b, keep, sum);
        }
        return;
    }
#endif
    for (k = 0; k < n; ++k) o[k] = o[k] + x[k];
}

/* The float64 twin: rows shorter than 20 take five masked blocks of four. */
static inline void sg_seg_add_row_f64(double *o, const double *x, int64_t n) {
    int64_t k;
#if defined(__AVX2__)
    if (n < SG_SEG_ROW_MAX / 2) {
        const __m256i lane = _mm256_setr_epi64x(0, 1, 2, 3);
        int b;
        for (b = 0; b < SG_SEG_ROW_MAX / 8; ++b) {
            __m256i keep = _mm256_cmpgt_epi64(_mm256_set1_epi64x(n - 4 * b), lane);
            __m256d sum = _mm256_add_pd(_mm256_maskload_pd(o + 4 * b, keep),
                                        _mm256_maskload_pd(x + 4 * b, keep));
            _mm256_maskstore_pd(o + 4 * b, keep, sum);
        }
        return;
    }
#endif
    for (k = 0; k < n; ++k) o[k] = o[k] + x[k];
}

/* Row r's split, of int64 (wide) or int32 splits. */
static inline int64_t sg_rows_split(const void *splits, int wide, int64_t r) {
    return wide ? ((const int64_t *)splits)[r] : (int64_t)((const int32_t *)splits)[r];
}

/* The ragged segment sums of 1-D values for the segments [lo, hi): output
 * row s (out[out_splits[s] ..  out_splits[s + 1])) is fill plus, value by
 * value in the rows' order, the rows seg[s] .. seg[s + 1] - 1 (row r:
 * x[splits[r] ..  splits[r + 1])).  With AVX2 the output row is summed in
 * registers, SG_SEG_ROW_MAX columns at a time (five blocks of eight floats,
 * or of four doubles for half as many columns): for each chunk of columns
 * every row of the segment adds its values in that chunk, its blocks masked
 * to its length and the lanes past it adding -0.0, the exact identity.  No
 * branch on a row's length (random lengths would mispredict a loop's exit)
 * and no output value read back from memory.  A chunk that lies inside x
 * (nx values) is read with plain loads, its lanes past the row blended out;
 * near x's end masked loads read only the row.  The same additions in the same order as
 * the loop below, so the same bits. */
static inline void sg_seg_ragged_sum_f32(const float *x, int64_t nx, const void *splits, int wide,
                                         const int64_t *seg, const int64_t *out_splits,
                                         int64_t lo, int64_t hi, float fill, float *out) {
    int64_t s, r, k, start, n;
    for (s = lo; s < hi; ++s) {
        float *o = out + out_splits[s];
        const int64_t m = out_splits[s + 1] - out_splits[s];
#if defined(__AVX2__)
        const __m256i l0 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i l1 = _mm256_add_epi32(l0, _mm256_set1_epi32(8));
        const __m256i l2 = _mm256_add_epi32(l0, _mm256_set1_epi32(16));
        const __m256i l3 = _mm256_add_epi32(l0, _mm256_set1_epi32(24));
        const __m256i l4 = _mm256_add_epi32(l0, _mm256_set1_epi32(32));
        const __m256 nz = _mm256_set1_ps(-0.0f);
        int64_t c;
        for (c = 0; c < m; c += SG_SEG_ROW_MAX) {
            __m256 a0 = _mm256_set1_ps(fill), a1 = a0, a2 = a0, a3 = a0, a4 = a0;
            __m256i nv;
            int plain;
            const float *xr;
            for (r = seg[s]; r < seg[s + 1]; ++r) {
                start = sg_rows_split(splits, wide, r);
                /* the row's values in this chunk, 0 to SG_SEG_ROW_MAX */
                n = sg_rows_split(splits, wide, r + 1) - start - c;
                n = n < 0 ? 0 : n;
                n = n > SG_SEG_ROW_MAX ? SG_SEG_ROW_MAX : n;
                nv = _mm256_set1_epi32((int)n);
                xr = x + start + c;
                /* a whole chunk inside x: plain loads (masked ones are slow
                 * on some CPUs), the lanes past the row then blended out */
                plain = start + c + SG_SEG_ROW_MAX <= nx;
#define SG_ROWS_ADD8(a, l, b)                                                   \
    do {                                                                        \
        __m256i kk = _mm256_cmpgt_epi32(nv, l);                                 \
        __m256 v = plain ? _mm256_loadu_ps(xr + 8 * b) : _mm256_maskload_ps(xr + 8 * b, kk); \
        a = _mm256_add_ps(a, _mm256_blendv_ps(nz, v, _mm256_castsi256_ps(kk)));  \
    } while (0)
                SG_ROWS_ADD8(a0, l0, 0);
                SG_ROWS_ADD8(a1, l1, 1);
                SG_ROWS_ADD8(a2, l2, 2);
                SG_ROWS_ADD8(a3, l3, 3);
                SG_ROWS_ADD8(a4, l4, 4);
#undef SG_ROWS_ADD8
            }
            n = m - c < SG_SEG_ROW_MAX ? m - c : SG_SEG_ROW_MAX;
            nv = _mm256_set1_epi32((int)n);
            _mm256_maskstore_ps(o + c, _mm256_cmpgt_epi32(nv, l0), a0);
            _mm256_maskstore_ps(o + c + 8, _mm256_cmpgt_epi32(nv, l1), a1);
            _mm256_maskstore_ps(o + c + 16, _mm256_cmpgt_epi32(nv, l2), a2);
            _mm256_maskstore_ps(o + c + 24, _mm256_cmpgt_epi32(nv, l3), a3);
            _mm256_maskstore_ps(o + c + 32, _mm256_cmpgt_epi32(nv, l4), a4);
        }
        continue;
#endif
        for (k = 0; k < m; ++k) o[k] = fill;
        for (r = seg[s]; r < seg[s + 1]; ++r) {
            start = sg_rows_split(splits, wide, r);
            n = sg_rows_split(splits, wide, r + 1) - start;
            sg_seg_add_row_f32(o, x + start, n);
        }
    }
}

/* The float64 twin (chunks of SG_SEG_ROW_MAX / 2 columns). */
static inline void sg_seg_ragged_sum_f64(const double *x, int64_t nx, const void *splits, int wide,
                                         const int64_t *seg, const int64_t *out_splits,
                                         int64_t lo, int64_t hi, double fill, double *out) {
    int64_t s, r, k, start, n;
    for (s = lo; s < hi; ++s) {
        double *o = out + out_splits[s];
        const int64_t m = out_splits[s + 1] - out_splits[s];
#if defined(__AVX2__)
        const int64_t width = SG_SEG_ROW_MAX / 2;
        const __m256i l0 = _mm256_setr_epi64x(0, 1, 2, 3);
        const __m256i l1 = _mm256_add_epi64(l0, _mm256_set1_epi64x(4));
        const __m256i l2 = _mm256_add_epi64(l0, _mm256_set1_epi64x(8));
        const __m256i l3 = _mm256_add_epi64(l0, _mm256_set1_epi64x(12));
        const __m256i l4 = _mm256_add_epi64(l0, _mm256_set1_epi64x(16));
        const __m256d nz = _mm256_set1_pd(-0.0);
        int64_t c;
        for (c = 0; c < m; c += width) {
            __m256d a0 = _mm256_set1_pd(fill), a1 = a0, a2 = a0, a3 = a0, a4 = a0;
            __m256i nv;
            int plain;
            const double *xr;
            for (r = seg[s]; r < seg[s + 1]; ++r) {
                start = sg_rows_split(splits, wide, r);
                n = sg_rows_split(splits, wide, r + 1) - start - c;
                n = n < 0 ? 0 : n;
                n = n > width ? width : n;
                nv = _mm256_set1_epi64x(n);
                xr = x + start + c;
                plain = start + c + width <= nx;
#define SG_ROWS_ADD4(a, l, b)                                                   \
    do {                                                                        \
        __m256i kk = _mm256_cmpgt_epi64(nv, l);                                 \
        __m256d v = plain ? _mm256_loadu_pd(xr + 4 * b) : _mm256_maskload_pd(xr + 4 * b, kk); \
        a = _mm256_add_pd(a, _mm256_blendv_pd(nz, v, _mm256_castsi256_pd(kk)));  \
    } while (0)
                SG_ROWS_ADD4(a0, l0, 0);
                SG_ROWS_ADD4(a1, l1, 1);
                SG_ROWS_ADD4(a2, l2, 2);
                SG_ROWS_ADD4(a3, l3, 3);
                SG_ROWS_ADD4(a4, l4, 4);
#undef SG_ROWS_ADD4
            }
            n = m - c < width ? m - c : width;
            nv = _mm256_set1_epi64x(n);
            _mm256_maskstore_pd(o + c, _mm256_cmpgt_epi64(nv, l0), a0);
            _mm256_maskstore_pd(o + c + 4, _mm256_cmpgt_epi64(nv, l1), a1);
            _mm256_maskstore_pd(o + c + 8, _mm256_cmpgt_epi64(nv, l2), a2);
            _mm256_maskstore_pd(o + c + 12, _mm256_cmpgt_epi64(nv, l3), a3);
            _mm256_maskstore_pd(o + c + 16, _mm256_cmpgt_epi64(nv, l4), a4);
        }
        continue;
#endif
        for (k = 0; k < m; ++k) o[k] = fill;
        for (r = seg[s]; r < seg[s + 1]; ++r) {
            start = sg_rows_split(splits, wide, r);
            n = sg_rows_split(splits, wide, r + 1) - start;
            sg_seg_add_row_f64(o, x + start, n);
        }
    }
}

#endif /* SG_SEGMENT_ROWS_H */
