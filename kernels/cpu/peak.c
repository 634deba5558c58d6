/*
** peak.c: dispatch of the throughput probes (peak_avx512.c,
** peak_int_avx512.c, peak_avx2.c): the widest this CPU runs, or for the
** integer peak the instructions of the integer GEMM variant in use.
*/
#include <time.h>

#include "kcpu_impl.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Best rate in G per second of probe(arg, iters) over short runs for
** `seconds`: the run least disturbed by other processes. */
static double best_rate(double (*probe)(bool, int64_t), bool arg, int64_t iters, double seconds) {
    double best = 0.0, t_end = now_s() + seconds;
    do {
        double t0 = now_s();
        double ops = probe(arg, iters);
        double g = ops / (now_s() - t0) * 1e-9;
        if (g > best) best = g;
    } while (now_s() < t_end);
    return best;
}

#ifdef MT_HAVE_AVX512_BUILD
static double fma512(bool unused, int64_t iters) {
    (void)unused;
    return kcpu_fma_flops_avx512(iters);
}
#endif

static double fma256(bool unused, int64_t iters) {
    (void)unused;
    return kcpu_fma_flops_avx2(iters);
}

double kcpu_fp32_peak_gflops(double seconds) {
#ifdef MT_HAVE_AVX512_BUILD
    if (kcpu_isa_detect() >= KCPU_ISA_AVX512) return best_rate(fma512, false, 2000000, seconds);
#endif
    if (kcpu_isa_detect() >= KCPU_ISA_AVX2) return best_rate(fma256, false, 2000000, seconds);
    return 0.0;
}

double kcpu_int_peak_gops(bool int16, double seconds) {
#ifdef MT_HAVE_AVX512_BUILD
    if (kcpu_igemm_active() == KCPU_IGEMM_VNNI)
        return best_rate(kcpu_vnni_ops_avx512, int16, 1000000, seconds);
#endif
    if (kcpu_igemm_active() == KCPU_IGEMM_AVX2)
        return best_rate(kcpu_int_ops_avx2, int16, 1000000, seconds);
    return 0.0;
}

const char *kcpu_int_peak_what(bool int16) {
    switch (kcpu_igemm_active()) {
    case KCPU_IGEMM_VNNI: return int16 ? "vpdpwssd" : "vpdpbusd";
    case KCPU_IGEMM_AVX2: return int16 ? "vpmaddwd + vpaddd" : "vpmaddubsw + vpmaddwd + vpaddd";
    default: return "none (no SIMD integer kernel)";
    }
}
