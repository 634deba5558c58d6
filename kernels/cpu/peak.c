/*
** peak.c: dispatch of the FMA throughput probe (peak_avx512.c).
*/
#include <time.h>

#include "kcpu.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double kcpu_fp32_peak_gflops(double seconds) {
#ifdef MT_HAVE_AVX512_BUILD
    if (kcpu_isa_detect() < KCPU_ISA_AVX512) return 0.0;
    double best = 0.0, t_end = now_s() + seconds;
    do { /* best of short runs: the least disturbed by other processes */
        double t0 = now_s();
        double flops = kcpu_fma_flops_avx512(2000000);
        double g = flops / (now_s() - t0) * 1e-9;
        if (g > best) best = g;
    } while (now_s() < t_end);
    return best;
#else
    (void)seconds;
    return 0.0;
#endif
}
