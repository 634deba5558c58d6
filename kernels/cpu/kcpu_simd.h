/*
** kcpu_simd.h: AVX-512 helpers shared by the *_avx512.c kernel files
** (internal; include only from files compiled with the AVX-512 flags).
**
** exp and log are Cephes-style: exp reduces x = n ln2 + r (two-part ln2),
** a degree-5 polynomial in r and 2^n by vscalefps (exact over/underflow,
** subnormal results included); log splits x = 2^e m with vgetexpps and
** vgetmantps, m in [sqrt(1/2), sqrt(2)), and a degree-8 polynomial in m-1.
** Both stay within about 2 ulp of the libm result on the tested ranges.
** exp512 clamps its argument to [-110, 110] (so exp512(-inf) = 0 and
** exp512(+inf) is finite) and propagates NaN.
*/
#ifndef KCPU_SIMD_H
#define KCPU_SIMD_H
#ifndef __AVX512F__
#error "kcpu_simd.h is for files compiled with -mavx512f (the *_avx512.c files)"
#endif
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))

ALWAYS_INLINE __mmask16 tail_mask(int64_t left) {
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
}

/* exp512's two halves, for loops that overlap the second half of one
** vector with the first half of the next: x (already clamped) = n ln2 + r,
** then 2^n p(r). */
ALWAYS_INLINE void exp512_reduce(__m512 x, __m512 *r_out, __m512 *n_out) {
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    *r_out = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    *n_out = n;
}

ALWAYS_INLINE __m512 exp512_finish(__m512 r, __m512 n) {
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    __m512 y = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
    y = _mm512_add_ps(y, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(y, n);
}

ALWAYS_INLINE __m512 exp512(__m512 x) {
    /* min/max return their second operand when one is NaN: keep x second. */
    x = _mm512_min_ps(_mm512_set1_ps(110.0f), x);
    x = _mm512_max_ps(_mm512_set1_ps(-110.0f), x);
    __m512 r, n;
    exp512_reduce(x, &r, &n);
    return exp512_finish(r, n);
}

ALWAYS_INLINE __m512 log512(__m512 x) {
    __m512 e = _mm512_getexp_ps(x);
    __m512 m = _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_nan);
    __mmask16 big = _mm512_cmp_ps_mask(m, _mm512_set1_ps(1.41421356237f), _CMP_GT_OQ);
    m = _mm512_mask_mul_ps(m, big, m, _mm512_set1_ps(0.5f));
    e = _mm512_mask_add_ps(e, big, e, _mm512_set1_ps(1.0f));
    __m512 f = _mm512_sub_ps(m, _mm512_set1_ps(1.0f));
    __m512 z = _mm512_mul_ps(f, f);
    __m512 p = _mm512_set1_ps(7.0376836292e-2f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(-1.1514610310e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.1676998740e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(-1.2420140846e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.4249322787e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(-1.6668057665e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.0000714765e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(-2.4999993993e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(3.3333331174e-1f));
    __m512 y = _mm512_mul_ps(_mm512_mul_ps(p, f), z);
    y = _mm512_fmadd_ps(e, _mm512_set1_ps(-2.12194440e-4f), y);
    y = _mm512_fnmadd_ps(z, _mm512_set1_ps(0.5f), y);
    y = _mm512_add_ps(_mm512_add_ps(f, y), _mm512_mul_ps(e, _mm512_set1_ps(0.693359375f)));
    /* log(+-0) = -inf (getmant of -0 would say NaN), log(+inf) = +inf. */
    __mmask16 zero = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ);
    __mmask16 inf = _mm512_cmp_ps_mask(x, _mm512_set1_ps(INFINITY), _CMP_EQ_OQ);
    y = _mm512_mask_mov_ps(y, zero, _mm512_set1_ps(-INFINITY));
    return _mm512_mask_mov_ps(y, inf, x);
}

#endif /* KCPU_SIMD_H */
