/*
** peak_int_avx512.c: measures this core's AVX-512 VNNI throughput, the
** roofline the integer GEMM benchmark reports against, beside the nominal
** figure.  vpdpbusd does 64 u8 x s8 multiply-adds (128 ops) per
** instruction, vpdpwssd 32 int16 ones (64 ops).  Twelve independent
** accumulator chains hide the latency on two pipes.  The inputs are chosen
** so that the sums stay small (wrap-around would not matter anyway).
*/
#include <immintrin.h>

#include "kcpu_impl.h"

enum { CHAINS = 12 };

double kcpu_vnni_ops_avx512(bool int16, int64_t iters) {
    __m512i acc[CHAINS];
    const __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(-1);
    for (int j = 0; j < CHAINS; j++) {
        acc[j] = _mm512_set1_epi32(j);
    }
    if (int16) {
        for (int64_t i = 0; i < iters; i++) {
            for (int j = 0; j < CHAINS; j++) {
                acc[j] = _mm512_dpwssd_epi32(acc[j], a, b);
            }
        }
    } else {
        for (int64_t i = 0; i < iters; i++) {
            for (int j = 0; j < CHAINS; j++) {
                acc[j] = _mm512_dpbusd_epi32(acc[j], a, b);
            }
        }
    }
    __m512i s = acc[0];
    for (int j = 1; j < CHAINS; j++) {
        s = _mm512_add_epi32(s, acc[j]);
    }
    volatile int sink = _mm512_reduce_add_epi32(s);
    (void)sink;
    return (double)iters * CHAINS * (int16 ? 64.0 : 128.0);
}
