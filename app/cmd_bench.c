/*
** cmd_bench.c: `mtpe bench gemm [--repeat N] [--peak-gflops X]`.
**
** fp32 GEMM throughput at decoder shapes, C[M,N] = A[M,K] . B with B the
** weight stored [K,N] as Marian stores it ("B[K,N]") and the transposed
** variant used by output layers with tied embeddings ("B[N,K]"), OpenBLAS
** and the own small-M kernel side by side, single-threaded.  Each sample
** times enough back-to-back calls to last about 2 ms; the table shows the
** median sample as GFLOP/s and as a fraction of the assumed per-core peak.
*/
#include "app.h"
#include "kcpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct gemm_case {
    bool tb;
    int64_t m, n, k;
    const float *a, *b;
    float *c;
} gemm_case;

/* Median seconds per call over `repeat` samples. */
static double time_gemm(kcpu_gemm_fn fn, const gemm_case *g, int repeat) {
    int64_t ldb = g->tb ? g->k : g->n;
    fn(false, g->tb, g->m, g->n, g->k, 1.0f, g->a, g->k, g->b, ldb, 0.0f, g->c, g->n); /* warm */
    double t0 = bench_now();
    fn(false, g->tb, g->m, g->n, g->k, 1.0f, g->a, g->k, g->b, ldb, 0.0f, g->c, g->n);
    double one = bench_now() - t0;
    int inner = one > 0 ? (int)(2e-3 / one) : 1000;
    inner = inner < 1 ? 1 : inner > 1000 ? 1000 : inner;
    double samples[64];
    repeat = repeat < 1 ? 1 : repeat > 64 ? 64 : repeat;
    for (int r = 0; r < repeat; r++) {
        t0 = bench_now();
        for (int i = 0; i < inner; i++) {
            fn(false, g->tb, g->m, g->n, g->k, 1.0f, g->a, g->k, g->b, ldb, 0.0f, g->c, g->n);
        }
        samples[r] = (bench_now() - t0) / inner;
    }
    qsort(samples, (size_t)repeat, sizeof samples[0], cmp_double);
    return samples[repeat / 2];
}

static float *bench_buf(int64_t n) {
    float *p = aligned_alloc(64, (size_t)((n * 4 + 63) / 64 * 64));
    if (p) {
        for (int64_t i = 0; i < n; i++) {
            p[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
        }
    }
    return p;
}

static int bench_gemm(int repeat, double peak) {
    static const int64_t ms[] = {1, 4, 32, 128};
    static const int64_t nk[][2] = {{512, 512}, {2048, 512}, {512, 2048}, {2048, 2048},
                                    {32000, 512}};
    int64_t max_m = 128, max_n = 32000, max_k = 2048, max_b = 32000 * 512;
    for (size_t i = 0; i < sizeof nk / sizeof nk[0]; i++) {
        max_b = nk[i][0] * nk[i][1] > max_b ? nk[i][0] * nk[i][1] : max_b;
    }
    float *a = bench_buf(max_m * max_k), *b = bench_buf(max_b), *c = bench_buf(max_m * max_n);
    if (!a || !b || !c) {
        fprintf(stderr, "mtpe bench gemm: out of memory\n");
        free(a), free(b), free(c);
        return 1;
    }
    kcpu_blas_set_threads(1);
    const char *ct = getenv("OPENBLAS_CORETYPE");
    printf("mtpe bench gemm: fp32 C[M,N] = A[M,K] . op(B), 1 thread, median of %d samples\n",
           repeat);
    printf("cpu isa %s, OpenBLAS kernels %s (OPENBLAS_CORETYPE=%s), peak %.1f GFLOP/s per core "
           "(--peak-gflops)\n",
           kcpu_isa_name(kcpu_isa_detect()), kcpu_blas_corename(), ct ? ct : "unset", peak);
    double measured = kcpu_fp32_peak_gflops(0.3);
    if (measured > 0)
        printf("measured FMA throughput of this core: %.1f GFLOP/s (%.0f%% of the nominal peak); "
               "'meas' columns are fractions of it\n",
               measured, 100.0 * measured / peak);
    else
        measured = peak;
    bool own_ok = kcpu_isa_detect() >= KCPU_ISA_AVX512;
    if (!own_ok) {
        printf("(own small-M kernel needs AVX-512: its column shows the reference)\n");
    }
    printf("%-7s %5s %6s %5s  %9s %6s %6s  %9s %6s %6s  %8s\n", "B", "M", "N", "K", "blas GF/s",
           "peak", "meas", "own GF/s", "peak", "meas", "own/blas");
    for (int t = 0; t < 2; t++) {
        for (size_t s = 0; s < sizeof nk / sizeof nk[0]; s++) {
            for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
                gemm_case g = {.tb = t == 1, .m = ms[mi], .n = nk[s][0], .k = nk[s][1],
                               .a = a, .b = b, .c = c};
                double flop = 2.0 * (double)g.m * (double)g.n * (double)g.k;
                double tb = time_gemm(kcpu_gemm_f32_blas, &g, repeat);
                double gb = flop / tb * 1e-9;
                double to = own_ok || flop < 1e8 ? time_gemm(kcpu_gemm_f32_small, &g, repeat) : 0;
                double go = to > 0 ? flop / to * 1e-9 : 0;
                printf("%-7s %5lld %6lld %5lld  %9.1f %5.1f%% %5.1f%%  %9.1f %5.1f%% %5.1f%%  %8.2f\n",
                       g.tb ? "[N,K]" : "[K,N]", (long long)g.m, (long long)g.n, (long long)g.k,
                       gb, 100.0 * gb / peak, 100.0 * gb / measured, go, 100.0 * go / peak,
                       100.0 * go / measured, gb > 0 ? go / gb : 0.0);
                fflush(stdout);
            }
        }
    }
    free(a), free(b), free(c);
    return 0;
}

static void bench_usage(FILE *f) {
    fprintf(f, "usage: mtpe bench gemm [--repeat N] [--peak-gflops X]\n"
               "  gemm   fp32 GEMM GFLOP/s at decoder shapes, OpenBLAS vs own kernel\n");
}

int app_bench_main(int argc, char **argv) {
    const char *what = NULL;
    int repeat = 7;
    double peak = 228.0; /* AMD Zen 5: 2 x 512-bit FMA per cycle per core */
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        if (i == 0 && strcmp(s, "bench") == 0) {
            continue;
        }
        if (strcmp(s, "--repeat") == 0 && i + 1 < argc) {
            repeat = atoi(argv[++i]);
        } else if (strcmp(s, "--peak-gflops") == 0 && i + 1 < argc) {
            peak = atof(argv[++i]);
        } else if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
            bench_usage(stdout);
            return 0;
        } else if (s[0] != '-' && !what) {
            what = s;
        } else {
            bench_usage(stderr);
            return 2;
        }
    }
    if (!what || repeat < 1 || !(peak > 0)) {
        bench_usage(stderr);
        return 2;
    }
    if (strcmp(what, "gemm") == 0) {
        return bench_gemm(repeat, peak);
    }
    fprintf(stderr, "mtpe bench: unknown benchmark '%s'\n", what);
    bench_usage(stderr);
    return 2;
}
