/*
** gemm_bf16_avx2.c: the AVX2 tile kernel of kcpu_gemm_bf16 (layout in
** gemm_bf16.c) for CPUs without AVX-512 BF16: each unit's two bfloat16
** widened to float32 (a shift or a mask of the 32-bit unit, exact) and
** multiplied by FMA, the odd element first as vdpbf16ps.  Per half of the
** 32-column panel and chunk of 4 rows: 4 x 16 sums in 8 ymm registers.
*/
#include "kcpu_impl.h"

#include <immintrin.h>
#include <string.h>

enum { MR = KCPU_BF16_MR, NR = KCPU_BF16_NR, RB = 4 };

void kcpu_bf16_tile_avx2(int64_t kp, const uint32_t *a, const uint32_t *b, float *c, int64_t ldc,
                         int mr, int nr, float alpha, float beta, bool first) {
    float acc[MR * NR];
    const __m256i hi_mask = _mm256_set1_epi32((int)0xffff0000u);
    for (int h = 0; h < NR; h += 16) {
        for (int r0 = 0; r0 < MR; r0 += RB) {
            __m256 s[RB][2];
            for (int r = 0; r < RB; r++)
                s[r][0] = s[r][1] = _mm256_setzero_ps();
            for (int64_t p = 0; p < kp; p++) {
                __m256i u0 = _mm256_loadu_si256((const __m256i *)(b + p * NR + h));
                __m256i u1 = _mm256_loadu_si256((const __m256i *)(b + p * NR + h + 8));
                __m256 e0 = _mm256_castsi256_ps(_mm256_slli_epi32(u0, 16));
                __m256 o0 = _mm256_castsi256_ps(_mm256_and_si256(u0, hi_mask));
                __m256 e1 = _mm256_castsi256_ps(_mm256_slli_epi32(u1, 16));
                __m256 o1 = _mm256_castsi256_ps(_mm256_and_si256(u1, hi_mask));
                const uint32_t *ap = a + p * MR + r0;
#pragma GCC unroll 4
                for (int r = 0; r < RB; r++) {
                    uint32_t ue = ap[r] << 16, uo = ap[r] & 0xffff0000u;
                    float fe, fo;
                    memcpy(&fe, &ue, sizeof fe);
                    memcpy(&fo, &uo, sizeof fo);
                    __m256 ae = _mm256_set1_ps(fe), ao = _mm256_set1_ps(fo);
                    s[r][0] = _mm256_fmadd_ps(ae, e0, _mm256_fmadd_ps(ao, o0, s[r][0]));
                    s[r][1] = _mm256_fmadd_ps(ae, e1, _mm256_fmadd_ps(ao, o1, s[r][1]));
                }
            }
            for (int r = 0; r < RB; r++) {
                _mm256_storeu_ps(acc + (r0 + r) * NR + h, s[r][0]);
                _mm256_storeu_ps(acc + (r0 + r) * NR + h + 8, s[r][1]);
            }
        }
    }
    kcpu_bf16_tile_store(acc, c, ldc, mr, nr, alpha, beta, first);
}
