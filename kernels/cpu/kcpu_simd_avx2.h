/*
** kcpu_simd_avx2.h: AVX2 + FMA helpers shared by the *_avx2.c kernel files
** (internal; include only from files compiled with -mavx2 -mfma).
**
** exp256 and log256 are the AVX2 forms of exp512 / log512 (kcpu_simd.h),
** with the same polynomials, clamping and special values, and the same
** results lane for lane:
**   exp256: x clamped to [-110, 110] (NaN kept), x = n ln2 + r, degree-5
**     polynomial in r; 2^n without vscalefps is two normal powers of two
**     2^h 2^(n-h), h = n >> 1 (|n| <= 159, so |h|, |n-h| <= 80), built in
**     the exponent field: y 2^h is exact, the second product rounds once,
**     to a subnormal or 0 at the low end (exp(-inf) = 0) and to inf at the
**     high end, as vscalefps does.
**   log256: x = 2^e m from the bits (subnormal x scaled by 2^23 first, for
**     vgetexpps / vgetmantps), m in [sqrt(1/2), sqrt(2)), degree-8
**     polynomial in m-1; log(+-0) = -inf, log(+inf) = +inf, log(x < 0) and
**     log(NaN) = NaN.
** Tails: tail_mask8 gives the lanes for _mm256_maskload_ps /
** _mm256_maskstore_ps, which touch no memory in masked-out lanes.
*/
#ifndef KCPU_SIMD_AVX2_H
#define KCPU_SIMD_AVX2_H
#if !defined(__AVX2__) || !defined(__FMA__)
#error "kcpu_simd_avx2.h is for files compiled with -mavx2 -mfma (the *_avx2.c files)"
#endif
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#ifndef ALWAYS_INLINE
#define ALWAYS_INLINE static inline __attribute__((always_inline))
#endif

/* All-ones in lanes 0 .. left-1 (left >= 8: every lane). */
ALWAYS_INLINE __m256i tail_mask8(int64_t left) {
    int l = left >= 8 ? 8 : (int)left;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(l), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Loads and stores of a full vector (full) or of the lanes of mk. */
ALWAYS_INLINE __m256 load8(const float *p, __m256i mk, int full) {
    return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mk);
}

ALWAYS_INLINE void store8(float *p, __m256i mk, int full, __m256 v) {
    if (full) {
        _mm256_storeu_ps(p, v);
    } else {
        _mm256_maskstore_ps(p, mk, v);
    }
}

ALWAYS_INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

ALWAYS_INLINE float hmax8(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

ALWAYS_INLINE __m256 exp256(__m256 x) {
    /* min/max return their second operand when one is NaN: keep x second. */
    x = _mm256_min_ps(_mm256_set1_ps(110.0f), x);
    x = _mm256_max_ps(_mm256_set1_ps(-110.0f), x);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    __m256 y = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
    y = _mm256_add_ps(y, _mm256_set1_ps(1.0f));
    /* 2^n = 2^h 2^(n-h).  NaN: n converts to INT_MIN, both factors to 1. */
    __m256i ni = _mm256_cvtps_epi32(n);
    __m256i h = _mm256_srai_epi32(ni, 1);
    __m256i l = _mm256_sub_epi32(ni, h);
    __m256i bias = _mm256_set1_epi32(127);
    __m256 ph = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, bias), 23));
    __m256 pl = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(l, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(y, ph), pl);
}

ALWAYS_INLINE __m256 log256(__m256 x) {
    /* Subnormal x (and 0, and negatives, fixed below): scaled by 2^23. */
    __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(0x1p-126f), _CMP_LT_OQ);
    __m256 xs = _mm256_blendv_ps(x, _mm256_mul_ps(x, _mm256_set1_ps(0x1p23f)), tiny);
    __m256i bits = _mm256_castps_si256(xs);
    __m256i ei = _mm256_and_si256(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(0xff));
    __m256 e = _mm256_cvtepi32_ps(_mm256_sub_epi32(ei, _mm256_set1_epi32(127)));
    e = _mm256_sub_ps(e, _mm256_and_ps(tiny, _mm256_set1_ps(23.0f)));
    __m256 m = _mm256_castsi256_ps(_mm256_or_si256(
        _mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f800000)));
    __m256 big = _mm256_cmp_ps(m, _mm256_set1_ps(1.41421356237f), _CMP_GT_OQ);
    m = _mm256_blendv_ps(m, _mm256_mul_ps(m, _mm256_set1_ps(0.5f)), big);
    e = _mm256_add_ps(e, _mm256_and_ps(big, _mm256_set1_ps(1.0f)));
    __m256 f = _mm256_sub_ps(m, _mm256_set1_ps(1.0f));
    __m256 z = _mm256_mul_ps(f, f);
    __m256 p = _mm256_set1_ps(7.0376836292e-2f);
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(-1.1514610310e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.1676998740e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(-1.2420140846e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.4249322787e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(-1.6668057665e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.0000714765e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(-2.4999993993e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(3.3333331174e-1f));
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, f), z);
    y = _mm256_fmadd_ps(e, _mm256_set1_ps(-2.12194440e-4f), y);
    y = _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), y);
    y = _mm256_add_ps(_mm256_add_ps(f, y), _mm256_mul_ps(e, _mm256_set1_ps(0.693359375f)));
    /* log(+-0) = -inf, log(+inf) = +inf, log(x < 0 or NaN) = NaN. */
    __m256 zero = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ);
    __m256 inf = _mm256_cmp_ps(x, _mm256_set1_ps(INFINITY), _CMP_EQ_OQ);
    __m256 bad = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_NGE_UQ);
    y = _mm256_blendv_ps(y, _mm256_set1_ps(-INFINITY), zero);
    y = _mm256_blendv_ps(y, x, inf);
    return _mm256_blendv_ps(y, _mm256_set1_ps(NAN), bad);
}

#endif /* KCPU_SIMD_AVX2_H */
