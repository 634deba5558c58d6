/*
** convert_avx2.c: binary16 <-> binary32 with the F16C instructions (exact,
** round to nearest even); tails go through the scalar reference.
*/
#include "kcpu_impl.h"

#include <immintrin.h>

void kcpu_f16_to_f32_avx2(int64_t n, const uint16_t *x, float *y) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(x + i));
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
    }
    kcpu_f16_to_f32_ref(n - i, x + i, y + i);
}

void kcpu_f32_to_f16_avx2(int64_t n, const float *x, uint16_t *y) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(void *)(y + i), h);
    }
    kcpu_f32_to_f16_ref(n - i, x + i, y + i);
}
