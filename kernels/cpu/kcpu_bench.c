/*
** kcpu_bench.c: the kernel micro-benchmarks of `mtpe bench gemm|gemm-int|
** topk|attn` (kcpu_bench_run; app/cmd_bench.c reaches them through
** mt_cpu_bench).  Memory comes from the caller (kcpu_bench_io), the tables
** go to its stream.
**
** `gemm`: fp32 GEMM throughput at decoder shapes, C[M,N] = A[M,K] . B with
** B the weight stored [K,N] as Marian stores it ("B[K,N]") and the
** transposed variant used by output layers with tied embeddings
** ("B[N,K]"), OpenBLAS and the own small-M kernel side by side,
** single-threaded.  Each sample times enough back-to-back calls to last
** about 2 ms; the table shows the median sample as GFLOP/s and as a
** fraction of the assumed per-core peak.
**
** `gemm-int`: the int8 / int16 kernels against fp32 OpenBLAS at the same
** shapes (bench_gemm_int below).
**
** `topk`: the fused output layer (bias + log-softmax + top-k) against the
** unfused path (bench_topk below).
**
** `attn`: the fused attention of a decoding step against the per-row
** batched products and softmax it replaced (bench_attn below).
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kcpu_impl.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The message of a failure into io->err; returns KCPU_BENCH_NOMEM. */
static int bench_nomem(const kcpu_bench_io *io, const char *fmt, ...) {
    if (io->err != NULL && io->err_size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(io->err, io->err_size, fmt, ap);
        va_end(ap);
    }
    return KCPU_BENCH_NOMEM;
}

typedef struct gemm_case {
    bool tb;
    int64_t m, n, k;
    const float *a, *b;
    float *c;
} gemm_case;

/* Median seconds per call of run(arg) over `repeat` samples of about 2 ms
** each (after one warm-up call); the one timing loop of every benchmark. */
static double time_median(void (*run)(const void *arg), const void *arg, int repeat) {
    run(arg); /* warm */
    double t0 = now_s();
    run(arg);
    double one = now_s() - t0;
    int inner = one > 0 ? (int)(2e-3 / one) : 1000;
    inner = inner < 1 ? 1 : inner > 1000 ? 1000 : inner;
    double samples[64];
    repeat = repeat < 1 ? 1 : repeat > 64 ? 64 : repeat;
    for (int r = 0; r < repeat; r++) {
        t0 = now_s();
        for (int i = 0; i < inner; i++) {
            run(arg);
        }
        samples[r] = (now_s() - t0) / inner;
    }
    qsort(samples, (size_t)repeat, sizeof samples[0], cmp_double);
    return samples[repeat / 2];
}

typedef struct gemm_run {
    kcpu_gemm_fn fn;
    const gemm_case *g;
} gemm_run;

static void gemm_run_once(const void *arg) {
    const gemm_run *r = arg;
    const gemm_case *g = r->g;
    r->fn(false, g->tb, g->m, g->n, g->k, 1.0f, g->a, g->k, g->b, g->tb ? g->k : g->n, 0.0f, g->c,
          g->n);
}

static double time_gemm(kcpu_gemm_fn fn, const gemm_case *g, int repeat) {
    gemm_run r = {fn, g};
    return time_median(gemm_run_once, &r, repeat);
}

static float *bench_buf(const kcpu_bench_io *io, int64_t n) {
    float *p = io->alloc((size_t)((n * 4 + 63) / 64 * 64));
    if (p) {
        for (int64_t i = 0; i < n; i++) {
            p[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
        }
    }
    return p;
}

static int bench_gemm(const kcpu_bench_io *io, int repeat, double peak) {
    static const int64_t ms[] = {1, 4, 32, 128};
    static const int64_t nk[][2] = {
        {512, 512}, {2048, 512}, {512, 2048}, {2048, 2048}, {32000, 512}};
    int64_t max_m = 128, max_n = 32000, max_k = 2048, max_b = 32000 * 512;
    for (size_t i = 0; i < sizeof nk / sizeof nk[0]; i++) {
        max_b = nk[i][0] * nk[i][1] > max_b ? nk[i][0] * nk[i][1] : max_b;
    }
    float *a = bench_buf(io, max_m * max_k), *b = bench_buf(io, max_b),
          *c = bench_buf(io, max_m * max_n);
    if (!a || !b || !c) {
        io->free(a), io->free(b), io->free(c);
        return bench_nomem(io, "out of memory");
    }
    kcpu_blas_set_threads(1);
    const char *ct = getenv("OPENBLAS_CORETYPE");
    fprintf(io->out,
            "mtpe bench gemm: fp32 C[M,N] = A[M,K] . op(B), 1 thread, median of %d samples\n",
            repeat);
    fprintf(io->out,
            "cpu isa %s, OpenBLAS kernels %s (OPENBLAS_CORETYPE=%s), peak %.1f GFLOP/s per core "
            "(--peak-gflops)\n",
            kcpu_isa_name(kcpu_isa_detect()), kcpu_blas_corename(), ct ? ct : "unset", peak);
    double measured = kcpu_fp32_peak_gflops(0.3);
    if (measured > 0)
        fprintf(io->out,
                "measured FMA throughput of this core: %.1f GFLOP/s (%.0f%% of the nominal peak); "
                "'meas' columns are fractions of it\n",
                measured, 100.0 * measured / peak);
    else
        measured = peak;
    bool own_ok = kcpu_isa_detect() >= KCPU_ISA_AVX2;
    if (!own_ok) {
        fprintf(io->out,
                "(own small-M kernel needs AVX2 or AVX-512: its column shows the reference)\n");
    } else {
        fprintf(io->out, "own small-M kernel: the %s one\n", kcpu_isa_name(kcpu_isa_detect()));
    }
    fprintf(io->out, "%-7s %5s %6s %5s  %9s %6s %6s  %9s %6s %6s  %8s\n", "B", "M", "N", "K",
            "blas GF/s", "peak", "meas", "own GF/s", "peak", "meas", "own/blas");
    for (int t = 0; t < 2; t++) {
        for (size_t s = 0; s < sizeof nk / sizeof nk[0]; s++) {
            for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
                gemm_case g = {.tb = t == 1,
                               .m = ms[mi],
                               .n = nk[s][0],
                               .k = nk[s][1],
                               .a = a,
                               .b = b,
                               .c = c};
                double flop = 2.0 * (double)g.m * (double)g.n * (double)g.k;
                double tb = time_gemm(kcpu_gemm_f32_blas, &g, repeat);
                double gb = flop / tb * 1e-9;
                double to = own_ok || flop < 1e8 ? time_gemm(kcpu_gemm_f32_small, &g, repeat) : 0;
                double go = to > 0 ? flop / to * 1e-9 : 0;
                fprintf(
                    io->out,
                    "%-7s %5lld %6lld %5lld  %9.1f %5.1f%% %5.1f%%  %9.1f %5.1f%% %5.1f%%  %8.2f\n",
                    g.tb ? "[N,K]" : "[K,N]", (long long)g.m, (long long)g.n, (long long)g.k, gb,
                    100.0 * gb / peak, 100.0 * gb / measured, go, 100.0 * go / peak,
                    100.0 * go / measured, gb > 0 ? go / gb : 0.0);
                fflush(io->out);
            }
        }
    }
    io->free(a), io->free(b), io->free(c);
    return KCPU_BENCH_OK;
}

/* ------------------------------------------------------------ gemm-int */

/* `mtpe bench gemm-int`: the int8 and int16 kernels (kcpu_gemm_i8/_i16,
** the variant kcpu_igemm_active() picks; A quantized inside each call, B
** packed once before timing) against the fp32 OpenBLAS path on the same
** shapes in the same run, single-threaded.  GOP/s count 2 M N K ops;
** fractions are of the measured integer multiply-add throughput of this
** core with the active variant's instructions (kcpu_int_peak_gops: vpdpbusd /
** vpdpwssd with VNNI, vpmaddubsw + vpmaddwd / vpmaddwd with AVX2) and of the
** nominal int8 figure.
**
** A second table reads the weights from memory, as a decoding step does (a
** model's matrices do not stay in the caches between steps): each call takes
** the next of n_ring copies of B, COLD_BYTES of copies in all, more than the
** caches of this machine hold; GB/s there is the weights read per second. */
enum { COLD_BYTES = 64 << 20 };

typedef struct int_case {
    int kind; /* 0 fp32 blas, 8 int8, 16 int16 */
    int64_t m, n, k;
    const float *a, *b;
    const void *packed;
    float *c;
    void *scratch;
    const char *ring; /* n_ring > 0: B (fp32) or packed B (int) from here, */
    size_t stride;    /* copy i at ring + i * stride, in turn (*next)      */
    int n_ring, *next;
} int_case;

static void int_case_run(const int_case *g) {
    const void *packed = g->packed;
    const float *b = g->b;
    if (g->n_ring > 0) {
        const char *copy = g->ring + (size_t)(*g->next % g->n_ring) * g->stride;
        *g->next += 1;
        packed = copy;
        b = (const float *)copy;
    }
    if (g->kind == 8) {
        kcpu_gemm_i8(g->m, g->a, g->k, packed, NULL, g->c, g->n, g->scratch);
    } else if (g->kind == 16) {
        kcpu_gemm_i16(g->m, g->a, g->k, packed, NULL, g->c, g->n, g->scratch);
    } else {
        kcpu_gemm_f32_blas(false, false, g->m, g->n, g->k, 1.0f, g->a, g->k, b, g->n, 0.0f, g->c,
                           g->n);
    }
}

static void int_case_run_any(const void *arg) { int_case_run(arg); }

static double time_int_case(const int_case *g, int repeat) {
    return time_median(int_case_run_any, g, repeat);
}

/* Seconds per call of g with its B (fp32 when g->kind is 0, else packed
** `packed` of `bytes`) copied over COLD_BYTES and read in turn; 0 when out
** of memory. */
static double time_int_cold(const kcpu_bench_io *io, int_case g, const void *packed, size_t bytes,
                            int repeat) {
    int n = (int)((COLD_BYTES + bytes - 1) / bytes), next = 0;
    size_t stride = (bytes + 63) / 64 * 64;
    char *ring = io->alloc(stride * (size_t)n);
    if (ring == NULL) {
        return 0;
    }
    for (int i = 0; i < n; i++) {
        memcpy(ring + (size_t)i * stride, packed, bytes);
    }
    g.ring = ring;
    g.stride = stride;
    g.n_ring = n;
    g.next = &next;
    double t = time_int_case(&g, repeat);
    io->free(ring);
    return t;
}

/* The weights-from-memory table (see int_case): int8 against fp32 OpenBLAS
** at the first n_shapes of the shapes nk (packed as p8). */
static int bench_gemm_int_cold(const kcpu_bench_io *io, int repeat, const float *a, const float *b,
                               float *c, void *scratch, void *const *p8, const int64_t (*nk)[2],
                               int n_shapes) {
    static const int64_t ms[] = {1, 4, 8, 32};
    fprintf(io->out, "weights from memory: each call reads the next of %d MB of copies of B\n",
            COLD_BYTES >> 20);
    fprintf(io->out, "%5s %6s %5s  %8s %7s  %8s %7s %5s\n", "M", "N", "K", "f32 GF/s", "GB/s",
            "i8 GOP/s", "GB/s", "x f32");
    for (int s = 0; s < n_shapes; s++) {
        int64_t n = nk[s][0], k = nk[s][1];
        size_t b32 = (size_t)(n * k) * sizeof(float), b8 = kcpu_pack_i8_bytes(k, n);
        for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
            int_case g = {
                .kind = 0, .m = ms[mi], .n = n, .k = k, .a = a, .c = c, .scratch = scratch};
            double ops = 2.0 * (double)g.m * (double)n * (double)k;
            double t32 = time_int_cold(io, g, b, b32, repeat);
            g.kind = 8;
            double t8 = time_int_cold(io, g, p8[s], b8, repeat);
            if (t32 <= 0 || t8 <= 0) {
                return bench_nomem(io, "out of memory (%d MB of copies)", COLD_BYTES >> 20);
            }
            fprintf(io->out, "%5lld %6lld %5lld  %8.1f %7.1f  %8.1f %7.1f %5.2f\n", (long long)g.m,
                    (long long)n, (long long)k, ops / t32 * 1e-9, (double)b32 / t32 * 1e-9,
                    ops / t8 * 1e-9, (double)b8 / t8 * 1e-9, t32 / t8);
            fflush(io->out);
        }
    }
    return KCPU_BENCH_OK;
}

static int bench_gemm_int(const kcpu_bench_io *io, int repeat, double nominal) {
    static const int64_t ms[] = {1, 4, 32, 128};
    static const int64_t nk[][2] = {
        {512, 512}, {2048, 512}, {512, 2048}, {2048, 2048}, {32000, 512}};
    enum { N_SHAPES = sizeof nk / sizeof nk[0] };
    const int64_t max_m = 128, max_k = 2048, max_n = 32000;
    int64_t max_b = 0;
    for (int s = 0; s < N_SHAPES; s++) {
        max_b = nk[s][0] * nk[s][1] > max_b ? nk[s][0] * nk[s][1] : max_b;
    }
    int rc = KCPU_BENCH_NOMEM;
    float *a = io->alloc((size_t)(max_m * max_k) * sizeof(float));
    float *b = io->alloc((size_t)max_b * sizeof(float));
    float *c = io->alloc((size_t)(max_m * max_n) * sizeof(float));
    size_t sb = kcpu_gemm_i16_scratch_bytes(max_m, max_k);
    if (kcpu_gemm_i8_scratch_bytes(max_m, max_k) > sb) {
        sb = kcpu_gemm_i8_scratch_bytes(max_m, max_k);
    }
    void *scratch = io->alloc(sb);
    void *p8[N_SHAPES] = {0}, *p16[N_SHAPES] = {0};
    if (!a || !b || !c || !scratch) {
        rc = bench_nomem(io, "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < max_m * max_k; i++) {
        a[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    }
    for (int64_t i = 0; i < max_b; i++) {
        b[i] = (float)((i * 104729) % 2001) * 1e-4f - 0.1f;
    }
    for (int s = 0; s < N_SHAPES; s++) { /* pack once, as at model load */
        int64_t n = nk[s][0], k = nk[s][1];
        p8[s] = io->alloc(kcpu_pack_i8_bytes(k, n));
        p16[s] = io->alloc(kcpu_pack_i16_bytes(k, n));
        if (!p8[s] || !p16[s]) {
            rc = bench_nomem(io, "out of memory (packed %lldx%lld)", (long long)k, (long long)n);
            goto done;
        }
        kcpu_pack_i8(k, n, b, n, p8[s]);
        kcpu_pack_i16(k, n, b, n, p16[s]);
    }
    kcpu_blas_set_threads(1);
    double pk8 = kcpu_int_peak_gops(false, 0.3), pk16 = kcpu_int_peak_gops(true, 0.3);
    double fp32 = kcpu_fp32_peak_gflops(0.2);
    fprintf(io->out,
            "mtpe bench gemm-int: C[M,N] = A[M,K] . B[K,N], int8 / int16 (A quantized per call, "
            "B packed once) vs fp32 OpenBLAS, 1 thread, median of %d samples\n",
            repeat);
    fprintf(io->out, "cpu isa %s, int kernels %s, OpenBLAS kernels %s\n",
            kcpu_isa_name(kcpu_isa_detect()), kcpu_igemm_name(kcpu_igemm_active()),
            kcpu_blas_corename());
    if (pk8 > 0) {
        fprintf(io->out,
                "measured int8 throughput (%s): %.1f GOP/s (%.0f%% of the nominal %.0f GOP/s), "
                "int16 (%s) %.1f GOP/s, fp32 FMA %.1f GFLOP/s\n",
                kcpu_int_peak_what(false), pk8, 100.0 * pk8 / nominal, nominal,
                kcpu_int_peak_what(true), pk16, fp32);
    } else {
        fprintf(io->out,
                "no SIMD integer kernel: measured-peak columns use the nominal %.0f GOP/s\n",
                nominal);
        pk8 = nominal;
        pk16 = nominal / 2;
    }
    fprintf(io->out, "'meas' = fraction of the measured int8 / int16 peak above, "
                     "'nom' = of the nominal int8 peak\n");
    fprintf(io->out, "%5s %6s %5s  %8s  %8s %6s %6s %5s  %8s %6s %6s %5s\n", "M", "N", "K",
            "f32 GF/s", "i8 GOP/s", "meas", "nom", "x f32", "i16 GOP/s", "meas", "nom", "x f32");
    for (int s = 0; s < N_SHAPES; s++) {
        for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
            int_case g = {.kind = 0,
                          .m = ms[mi],
                          .n = nk[s][0],
                          .k = nk[s][1],
                          .a = a,
                          .b = b,
                          .c = c,
                          .scratch = scratch};
            double ops = 2.0 * (double)g.m * (double)g.n * (double)g.k;
            double gf = ops / time_int_case(&g, repeat) * 1e-9;
            g.kind = 8;
            g.packed = p8[s];
            double g8 = ops / time_int_case(&g, repeat) * 1e-9;
            g.kind = 16;
            g.packed = p16[s];
            double g16 = ops / time_int_case(&g, repeat) * 1e-9;
            fprintf(io->out,
                    "%5lld %6lld %5lld  %8.1f  %8.1f %5.1f%% %5.1f%% %5.2f  %8.1f %5.1f%% %5.1f%% "
                    "%5.2f\n",
                    (long long)g.m, (long long)g.n, (long long)g.k, gf, g8, 100.0 * g8 / pk8,
                    100.0 * g8 / nominal, g8 / gf, g16, 100.0 * g16 / pk16, 100.0 * g16 / nominal,
                    g16 / gf);
            fflush(io->out);
        }
    }
    /* from memory: the decoder's K = 512 projections (N = 512 and 2048) */
    rc = bench_gemm_int_cold(io, repeat, a, b, c, scratch, p8, nk, 2);
done:
    for (int s = 0; s < N_SHAPES; s++) {
        io->free(p8[s]);
        io->free(p16[s]);
    }
    io->free(a);
    io->free(b);
    io->free(c);
    io->free(scratch);
    return rc;
}

/* ---------------------------------------------------------------- topk */

/* `mtpe bench topk`: the output layer after its GEMM at rows = 32 (beam 4 x
** batch 8), V = 32000, and a 1000-entry shortlist: the fused bias +
** log-softmax + top-k (kcpu_softmax_topk, dispatched, and its scalar
** reference), the argmax of beam 1, and the unfused path it replaces: bias
** add, kcpu_log_softmax_fwd, then a selection pass (insertion top-k) or a
** full sort of each row (qsort).  GB/s count the logits and the bias read
** once; ns/row is per row of the batch. */
typedef struct topk_case {
    int kind; /* 0 fused, 1 fused ref, 2 argmax, 3 argmax ref, 4 unfused+select, 5 +sort */
    int64_t rows, cols;
    int32_t k;
    const float *logits, *bias;
    float *tmp, *val;
    int32_t *idx;
} topk_case;

static const float *topk_sort_row; /* qsort has no context argument */

static int topk_cmp_desc(const void *a, const void *b) {
    float x = topk_sort_row[*(const int32_t *)a], y = topk_sort_row[*(const int32_t *)b];
    return (x < y) - (x > y);
}

static void topk_case_run(const topk_case *t) {
    int64_t rows = t->rows, cols = t->cols;
    int32_t k = t->k;
    switch (t->kind) {
    case 0: kcpu_softmax_topk(rows, cols, t->logits, t->bias, k, t->idx, t->val, NULL); return;
    case 1:
        kcpu_softmax_topk_ex_ref(rows, cols, t->logits, t->bias, NULL, NULL, k, t->idx, t->val,
                                 NULL);
        return;
    case 2: kcpu_argmax_rows(rows, cols, t->logits, t->bias, t->idx, t->val); return;
    case 3: kcpu_argmax_rows_ref(rows, cols, t->logits, t->bias, t->idx, t->val); return;
    default: break;
    }
    for (int64_t r = 0; r < rows; r++) {
        kcpu_add_f32(cols, t->logits + r * cols, t->bias, t->tmp + r * cols);
    }
    kcpu_log_softmax_fwd(rows, cols, t->tmp, t->tmp);
    for (int64_t r = 0; r < rows; r++) {
        const float *y = t->tmp + r * cols;
        int32_t *ix = t->idx + r * (t->kind == 5 ? cols : k);
        float *v = t->val + r * k;
        if (t->kind == 5) {
            for (int64_t c = 0; c < cols; c++) {
                ix[c] = (int32_t)c;
            }
            topk_sort_row = y;
            qsort(ix, (size_t)cols, sizeof *ix, topk_cmp_desc);
            for (int32_t j = 0; j < k; j++) {
                v[j] = y[ix[j]];
            }
            continue;
        }
        int32_t n = 0; /* insertion into v[0..n), best first */
        for (int64_t c = 0; c < cols; c++) {
            if (n == k && !(y[c] > v[k - 1])) {
                continue;
            }
            int32_t j = n < k ? n++ : k - 1;
            for (; j > 0 && v[j - 1] < y[c]; j--) {
                v[j] = v[j - 1];
                ix[j] = ix[j - 1];
            }
            v[j] = y[c];
            ix[j] = (int32_t)c;
        }
    }
}

static void topk_case_run_any(const void *arg) { topk_case_run(arg); }

static double time_topk_case(const topk_case *t, int repeat) {
    return time_median(topk_case_run_any, t, repeat);
}

static int bench_topk(const kcpu_bench_io *io, int repeat) {
    const int64_t rows = 32, max_cols = 32000;
    int rc = KCPU_BENCH_NOMEM;
    float *logits = io->alloc((size_t)(rows * max_cols) * sizeof(float));
    float *bias = io->alloc((size_t)max_cols * sizeof(float));
    float *tmp = io->alloc((size_t)(rows * max_cols) * sizeof(float));
    float *val = io->alloc((size_t)(rows * 16) * sizeof(float));
    int32_t *idx = io->alloc((size_t)(rows * max_cols) * sizeof(int32_t));
    if (!logits || !bias || !tmp || !val || !idx) {
        rc = bench_nomem(io, "out of memory");
        goto done;
    }
    uint64_t st = 0x9e3779b97f4a7c15ull;
    for (int64_t i = 0; i < rows * max_cols; i++) { /* roughly N(0, 2): xorshift sums */
        float s = 0.0f;
        for (int u = 0; u < 4; u++) {
            st ^= st << 13, st ^= st >> 7, st ^= st << 17;
            s += (float)(st >> 40) * (1.0f / 16777216.0f) - 0.5f;
        }
        logits[i] = 3.5f * s;
    }
    for (int64_t i = 0; i < max_cols; i++) {
        bias[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    }
    static const char *names[] = {"fused",        "fused (ref)",        "argmax",
                                  "argmax (ref)", "unfused + select k", "unfused + qsort"};
    fprintf(io->out,
            "mtpe bench topk: bias + log-softmax + top-k over rows of logits, rows = %lld, "
            "1 thread, median of %d samples, isa %s\n",
            (long long)rows, repeat, kcpu_isa_name(kcpu_isa_active()));
    fprintf(io->out, "%6s %3s  %-20s %10s %8s %8s\n", "cols", "k", "kernel", "ns/row", "GB/s",
            "x fused");
    static const int64_t colss[] = {32000, 1000};
    static const int32_t ks[] = {4, 8};
    for (size_t ci = 0; ci < sizeof colss / sizeof colss[0]; ci++) {
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            double fused = 0.0;
            for (int kind = 0; kind < 6; kind++) {
                if ((kind == 2 || kind == 3) && ki > 0) {
                    continue; /* argmax does not depend on k */
                }
                topk_case t = {kind, rows, colss[ci], ks[ki], logits, bias, tmp, val, idx};
                double sec = time_topk_case(&t, repeat);
                fused = kind == 0 ? sec : fused;
                double bytes = (double)(rows * colss[ci] + colss[ci]) * sizeof(float);
                fprintf(io->out, "%6lld %3d  %-20s %10.0f %8.2f %8.2f\n", (long long)colss[ci],
                        kind == 2 || kind == 3 ? 1 : ks[ki], names[kind], sec / rows * 1e9,
                        bytes / sec * 1e-9, sec / fused);
                fflush(io->out);
            }
        }
    }
    rc = KCPU_BENCH_OK;
done:
    io->free(logits);
    io->free(bias);
    io->free(tmp);
    io->free(val);
    io->free(idx);
    return rc;
}

/* ---------------------------------------------------------------- attn */

/* `mtpe bench attn`: one decoding step's attention at the default model's
** shapes (8 heads of 32) for 128 rows (beam 4 x batch 32), T keys per row:
**   self    each row over its own history of T positions [N, H, T, dk]
**           (keys as stored, or transposed [N, H, dk, T] as a fold keeps
**           them) plus 8 recent positions
**   cross   rows in runs of 4 (a sentence's hypotheses) over their
**           sentence's context of T positions, keys [B, T, D] or
**           transposed [B, H, dk, T], values [B, T, D]
** kernels: fused (kcpu_attn_rows, dispatched), fused with transposed keys,
** and the unfused ops it replaced: per row (self) or run (cross) a batched
** product over the heads for the scores, the row softmax, a batched product
** for the weighted values (kcpu_gemm_f32_batched, kcpu_softmax_fwd; mask
** and concat left out, so the unfused figure is a lower bound).  ns per row
** and head; GFLOP/s count 4 T dk per row and head.  Back-to-back calls:
** the caches hold what fits (a history of 112 positions is 29 MB). */
typedef struct attn_case {
    int kind; /* 0 fused, 1 fused keys transposed, 2 unfused */
    bool cross;
    int64_t n, heads, dk, t, tr;
    const float *q, *k, *kt, *v, *kr, *vr;
    float *o, *s, *scratch;
    const int32_t *ids;
} attn_case;

static void attn_case_run(const void *arg) {
    const attn_case *c = arg;
    int64_t h = c->heads, dk = c->dk, d = h * dk, t = c->t, tr = c->tr;
    float alpha = 1.0f / sqrtf((float)dk);
    if (c->kind < 2) {
        kcpu_attn_job j = {.n = c->n,
                           .heads = h,
                           .dk = dk,
                           .th = t,
                           .tr = tr,
                           .alpha = alpha,
                           .q = c->q,
                           .ldq = d,
                           .kh = c->kind ? c->kt : c->k,
                           .vh = c->v,
                           .ids = c->ids,
                           .kr = tr ? c->kr : NULL,
                           .vr = tr ? c->vr : NULL,
                           .o = c->o,
                           .ldo = d,
                           .scratch = c->scratch};
        if (c->cross) { /* values [B, T, D]; keys [B, T, D] or [B, H, dk, T] */
            j.hist_row_stride = t * d, j.hist_head_stride = dk, j.hist_pos_stride = d;
        } else {
            j.hist_row_stride = h * t * dk, j.hist_head_stride = t * dk, j.hist_pos_stride = dk;
        }
        if (c->kind) j.kt_row_stride = h * dk * t, j.kt_head_stride = dk * t, j.kt_elem_stride = t;
        kcpu_attn_rows(&j);
        return;
    }
    int64_t run = c->cross ? 4 : 1; /* rows sharing keys: one product of `run` rows */
    for (int64_t i = 0; i < c->n; i += run) {
        int64_t r = c->ids[i], m = i + run <= c->n ? run : c->n - i, tk = t + tr;
        const float *k = c->k + r * h * t * dk, *v = c->v + r * h * t * dk;
        if (c->cross) { /* heads dk apart in rows of D */
            kcpu_gemm_f32_batched(false, true, m, t, dk, alpha, c->q + i * d, d, dk,
                                  c->k + r * t * d, d, dk, 0.0f, c->s, h * tk, tk, h);
            kcpu_softmax_fwd(m * h, tk, c->s, c->s);
            kcpu_gemm_f32_batched(false, false, m, dk, t, 1.0f, c->s, h * tk, tk, c->v + r * t * d,
                                  d, dk, 0.0f, c->o + i * d, d, dk, h);
            continue;
        }
        kcpu_gemm_f32_batched(false, true, 1, t, dk, alpha, c->q + i * d, dk, dk, k, dk, t * dk,
                              0.0f, c->s, tk, tk, h);
        kcpu_gemm_f32_batched(false, true, 1, tr, dk, alpha, c->q + i * d, dk, dk,
                              c->kr + i * h * tr * dk, dk, tr * dk, 0.0f, c->s + t, tk, tk, h);
        kcpu_softmax_fwd(h, tk, c->s, c->s);
        kcpu_gemm_f32_batched(false, false, 1, dk, t, 1.0f, c->s, tk, tk, v, dk, t * dk, 0.0f,
                              c->o + i * d, dk, dk, h);
        kcpu_gemm_f32_batched(false, false, 1, dk, tr, 1.0f, c->s + t, tk, tk,
                              c->vr + i * h * tr * dk, dk, tr * dk, 1.0f, c->o + i * d, dk, dk, h);
    }
}

static int bench_attn(const kcpu_bench_io *io, int repeat) {
    const int64_t n = 128, h = 8, dk = 32, tr = 8, tmax = 112;
    const int64_t kv = n * h * tmax * dk; /* floats of one history (or context) array */
    int rc = KCPU_BENCH_NOMEM;
    float *buf[8] = {0};
    for (int b = 0; b < 7; b++) {
        buf[b] = io->alloc((size_t)kv * sizeof(float));
    }
    size_t scr = sizeof(float) * (size_t)kcpu_attn_scratch_floats(h, dk, tmax + tr);
    float *scratch = io->alloc(scr), *s = io->alloc(scr);
    int32_t *ids_self = io->alloc(sizeof(int32_t) * (size_t)n);
    int32_t *ids_cross = io->alloc(sizeof(int32_t) * (size_t)n);
    bool ok = scratch && s && ids_self && ids_cross;
    for (int b = 0; b < 7; b++) {
        ok = ok && buf[b];
    }
    if (!ok) {
        rc = bench_nomem(io, "out of memory");
        goto done;
    }
    uint64_t st = 0x2545f4914f6cdd1dull;
    for (int b = 0; b < 7; b++) {
        for (int64_t i = 0; i < kv; i++) {
            st ^= st << 13, st ^= st >> 7, st ^= st << 17;
            buf[b][i] = (float)(st >> 40) * (2.0f / 16777216.0f) - 1.0f;
        }
    }
    for (int64_t i = 0; i < n; i++) {
        ids_self[i] = (int32_t)i;
        ids_cross[i] = (int32_t)(i / 4);
    }
    fprintf(io->out,
            "mtpe bench attn: one decoding step's attention, %lld rows, %lld heads of %lld, "
            "1 thread, median of %d samples, isa %s\n",
            (long long)n, (long long)h, (long long)dk, repeat, kcpu_isa_name(kcpu_isa_active()));
    fprintf(io->out, "%-6s %5s  %-22s %10s %8s %8s\n", "attn", "keys", "kernel", "ns/row-head",
            "GFLOP/s", "x fused");
    static const char *names[] = {"fused", "fused, keys transposed", "unfused (products)"};
    static const int64_t ts[] = {16, 48, 112};
    for (int cross = 0; cross <= 1; cross++) {
        for (size_t ti = 0; ti < sizeof ts / sizeof ts[0]; ti++) {
            int64_t t = ts[ti];
            double fused = 0.0;
            for (int kind = 0; kind < 3; kind++) {
                /* keys: buf[1] as stored; transposed: buf[2] (the same values need not
                ** match: only the time is measured) */
                attn_case c = {kind,
                               cross,
                               n,
                               h,
                               dk,
                               t,
                               cross ? 0 : tr,
                               buf[0],
                               buf[1],
                               buf[2],
                               buf[3],
                               buf[4],
                               buf[5],
                               buf[6],
                               s,
                               scratch,
                               cross ? ids_cross : ids_self};
                double sec = time_median(attn_case_run, &c, repeat);
                fused = kind == 0 ? sec : fused;
                double flops = 4.0 * (double)(n * h * (t + c.tr) * dk);
                fprintf(io->out, "%-6s %5lld  %-22s %10.1f %8.1f %8.2f\n", cross ? "cross" : "self",
                        (long long)(t + c.tr), names[kind], sec / (double)(n * h) * 1e9,
                        flops / sec * 1e-9, sec / fused);
                fflush(io->out);
            }
        }
    }
    rc = KCPU_BENCH_OK;
done:
    for (int b = 0; b < 7; b++) {
        io->free(buf[b]);
    }
    io->free(scratch);
    io->free(s);
    io->free(ids_self);
    io->free(ids_cross);
    return rc;
}

int kcpu_bench_run(const char *name, int repeat, double peak, const kcpu_bench_io *io) {
    if (strcmp(name, "gemm") == 0) return bench_gemm(io, repeat, peak);
    if (strcmp(name, "gemm-int") == 0) return bench_gemm_int(io, repeat, peak);
    if (strcmp(name, "topk") == 0) return bench_topk(io, repeat);
    if (strcmp(name, "attn") == 0) return bench_attn(io, repeat);
    return KCPU_BENCH_UNKNOWN;
}
