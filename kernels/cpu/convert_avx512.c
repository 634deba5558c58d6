/*
** convert_avx512.c: f32 -> bfloat16 arrays with AVX-512 integer operations
** (any AVX-512 CPU; the same bits as kcpu_bf16_of in kcpu.h: nearest even,
** subnormal inputs to signed zero, NaN kept quiet).
*/
#include "kcpu.h"
#include "kcpu_simd.h"

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
