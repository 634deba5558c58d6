/*
** peak_avx2.c: this core's AVX2 throughput probes, the rooflines that
** benchmarks report against on CPUs without AVX-512 (peak_avx512.c and
** peak_int_avx512.c are the AVX-512 ones).
**
** fp32: vfmadd on 8 lanes, 16 flops per instruction.
** int8: AVX2 has no u8 x s8 instruction that accumulates into int32; the
** least an exact product takes is vpmaddubsw (32 u8 x s8 multiply-adds,
** pairs summed into int16) and vpmaddwd with ones (pairs widened into
** int32), then vpaddd: 64 ops per three instructions.  The int8 GEMM's sign
** trick (gemm_int_avx2.c) adds vpabsb/vpsignb on top; that overhead counts
** against the kernel, not the limit.
** int16: vpmaddwd (16 multiply-adds, 32 ops) and vpaddd.
** Twelve accumulator chains of one add each; the multiplies are off the
** chains' paths (their input v changes once per iteration, by one add), and
** each chain multiplies by its own constant, so the compiler cannot fold
** two into one.  The values wrap or saturate, which does not change the
** timing.
*/
#include <immintrin.h>

#include "kcpu_impl.h"

enum { CHAINS = 12 };

double kcpu_fma_flops_avx2(int64_t iters) {
    __m256 acc[CHAINS];
    const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
    for (int j = 0; j < CHAINS; j++)
        acc[j] = _mm256_set1_ps((float)j);
    for (int64_t i = 0; i < iters; i++) {
#pragma GCC unroll 12
        for (int j = 0; j < CHAINS; j++)
            acc[j] = _mm256_fmadd_ps(acc[j], m, a);
    }
    __m256 s = acc[0];
    for (int j = 1; j < CHAINS; j++)
        s = _mm256_add_ps(s, acc[j]);
    float lanes[8];
    _mm256_storeu_ps(lanes, s);
    volatile float sink = lanes[0];
    (void)sink;
    return (double)iters * CHAINS * 8.0 * 2.0;
}

double kcpu_int_ops_avx2(bool int16, int64_t iters) {
    __m256i acc[CHAINS], b[CHAINS];
    const __m256i ones = _mm256_set1_epi16(1);
    for (int j = 0; j < CHAINS; j++) {
        acc[j] = _mm256_setzero_si256();
        b[j] = _mm256_set1_epi8((char)(j - 6));
    }
    __m256i v = _mm256_set1_epi8(1);
    for (int64_t i = 0; i < iters; i++) {
        if (int16) {
#pragma GCC unroll 12
            for (int j = 0; j < CHAINS; j++)
                acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(v, b[j]));
        } else {
#pragma GCC unroll 12
            for (int j = 0; j < CHAINS; j++) {
                __m256i p = _mm256_maddubs_epi16(v, b[j]);
                acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(p, ones));
            }
        }
        v = _mm256_add_epi8(v, ones);
    }
    __m256i s = acc[0];
    for (int j = 1; j < CHAINS; j++)
        s = _mm256_add_epi32(s, acc[j]);
    volatile int sink = _mm256_extract_epi32(s, 0);
    (void)sink;
    return (double)iters * CHAINS * (int16 ? 32.0 : 64.0);
}
