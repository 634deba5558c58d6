/*
** peak_avx512.c: measures this core's fp32 FMA throughput, the roofline
** that benchmarks report against (a measured baseline in the same run,
** beside the nominal figure).  Twelve independent accumulator chains hide
** the FMA latency (4 cycles) on two pipes.
*/
#include <immintrin.h>

#include "kcpu_impl.h"

double kcpu_fma_flops_avx512(int64_t iters) {
    __m512 acc[12];
    const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
    for (int j = 0; j < 12; j++) acc[j] = _mm512_set1_ps((float)j);
    for (int64_t i = 0; i < iters; i++) {
        for (int j = 0; j < 12; j++) acc[j] = _mm512_fmadd_ps(acc[j], m, a);
    }
    __m512 s = acc[0];
    for (int j = 1; j < 12; j++) s = _mm512_add_ps(s, acc[j]);
    volatile float sink = _mm512_reduce_add_ps(s);
    (void)sink;
    return (double)iters * 12.0 * 16.0 * 2.0;
}
