/*
** convert_avx512.c: f32 -> bfloat16 arrays with AVX-512 integer operations
** (any AVX-512 CPU; the same bits as kcpu_bf16_of in kcpu.h: nearest even,
** subnormal inputs to signed zero, NaN kept quiet).
*/
#include "kcpu_impl.h"
#include "kcpu_simd.h"

/* 16 floats as bfloat16, one per 32-bit lane (low half). */
ALWAYS_INLINE __m512i bf16_lanes(__m512i u) {
    const __m512i abs = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u), one = _mm512_set1_epi32(1);
    const __m512i bias = _mm512_set1_epi32(0x7fff), quiet = _mm512_set1_epi32(0x40);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs), inf);
    __mmask16 sub = _mm512_testn_epi32_mask(u, inf); /* exponent 0 */
    u = _mm512_mask_and_epi32(u, sub, u, sign);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(bias, lsb)), 16);
    return _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), quiet);
}

void kcpu_f32_to_bf16_avx512(int64_t n, const float *x, uint16_t *y) {
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 mk = tail_mask(n - i);
        _mm512_mask_cvtepi32_storeu_epi16(y + i, mk,
                                          bf16_lanes(_mm512_maskz_loadu_epi32(mk, x + i)));
    }
}

void kcpu_f32_to_bf16_pairs_avx512(int64_t rows, int64_t len, const float *x, uint32_t *y) {
    for (int64_t r = 0; r < rows; r++) {
        const float *e = x + 2 * r * len, *o = e + len;
        for (int64_t i = 0; i < len; i += 16) {
            const __mmask16 mk = tail_mask(len - i);
            __m512i lo = bf16_lanes(_mm512_maskz_loadu_epi32(mk, e + i));
            __m512i hi = bf16_lanes(_mm512_maskz_loadu_epi32(mk, o + i));
            _mm512_mask_storeu_epi32(y + r * len + i, mk,
                                     _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
        }
    }
}
