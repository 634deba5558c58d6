/*
** test_kernels_cpu.c: every fast CPU kernel against its plain reference or
** a double-precision formula, on random inputs with a fixed seed, under
** every ISA level this machine has (kcpu_isa_force).  Backward kernels are
** also checked against central finite differences of their forward.
*/
#include "harness.h"
#include "test_util.h"
#include "kcpu_impl.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---------------------------------------------------------------- helpers */

static float *falloc(int64_t n) {
    float *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    if (!p) {
        abort();
    }
    return p;
}

static float *fdup(const float *x, int64_t n) {
    float *p = falloc(n);
    memcpy(p, x, (size_t)n * sizeof *p);
    return p;
}

static const char *isa_tag = "?";

/* One CHECK per array: the worst element against |got-want| <= atol+rtol|want|. */
static void check_arr(const char *what, const float *got, const double *want, int64_t n,
                      double atol, double rtol) {
    int64_t bad = -1;
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double w = want[i], g = got[i], viol;
        if (isnan(w)) {
            viol = isnan(g) ? 0.0 : INFINITY;
        } else if (isinf(w)) {
            viol = g == w ? 0.0 : INFINITY;
        } else {
            viol = fabs(g - w) - (atol + rtol * fabs(w));
            viol = isnan(viol) ? INFINITY : viol;
        }
        if (viol > 0.0 && (bad < 0 || viol > worst)) {
            worst = viol, bad = i;
        }
    }
    CHECK(bad < 0, "[%s] %s: element %lld got %.9g want %.9g (n=%lld)", isa_tag, what,
          (long long)(bad < 0 ? 0 : bad), bad < 0 ? 0.0 : (double)got[bad],
          bad < 0 ? 0.0 : want[bad], (long long)n);
}

static void check_arrf(const char *what, const float *got, const float *want, int64_t n,
                       double atol, double rtol) {
    double *w = malloc((size_t)(n > 0 ? n : 1) * sizeof *w);
    for (int64_t i = 0; i < n; i++) {
        w[i] = want[i];
    }
    check_arr(what, got, w, n, atol, rtol);
    free(w);
}

static const int64_t sizes[] = {1, 7, 15, 16, 17, 33, 1000, 4001};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

/* ------------------------------------------------------------------- GEMM */

typedef void (*gemm_fn)(bool, bool, int64_t, int64_t, int64_t, float, const float *, int64_t,
                        const float *, int64_t, float, float *, int64_t);

static void test_gemm_one(const char *name, gemm_fn fn, bool ta, bool tb, int64_t m, int64_t n,
                          int64_t k, float alpha, float beta, bool nan_c) {
    int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 5, ldc = n + 2;
    int64_t arows = ta ? k : m, brows = tb ? n : k;
    float *a = test_fill_rand(falloc(arows * lda), arows * lda, -1, 1);
    float *b = test_fill_rand(falloc(brows * ldb), brows * ldb, -1, 1);
    float *c0 = test_fill_rand(falloc(m * ldc), m * ldc, -1, 1);
    if (nan_c) {
        for (int64_t i = 0; i < m * ldc; i++) {
            c0[i] = NAN;
        }
    }
    float *c = fdup(c0, m * ldc), *cr = fdup(c0, m * ldc);
    fn(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    kcpu_gemm_f32_ref(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, cr, ldc);
    double *want = malloc((size_t)(m * ldc) * sizeof *want);
    for (int64_t i = 0; i < m * ldc; i++) {
        want[i] = cr[i];
    }
    /* Padding columns of C must be untouched. */
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = n; j < ldc; j++) {
            want[i * ldc + j] = c0[i * ldc + j];
        }
    }
    char what[160];
    snprintf(what, sizeof what, "%s ta=%d tb=%d m=%lld n=%lld k=%lld alpha=%g beta=%g%s", name,
             ta, tb, (long long)m, (long long)n, (long long)k, alpha, beta, nan_c ? " nanC" : "");
    double atol = 2e-6 * (double)k * fabs(alpha) + 1e-6;
    check_arr(what, c, want, m * ldc, atol, 1e-5);
    free(a), free(b), free(c0), free(c), free(cr), free(want);
}

/* n floats ending right at a PROT_NONE page: a kernel reading past the end
** (a tail mask off by one) faults; ASan does not see masked vector loads. */
typedef struct guarded {
    void *base;
    size_t len;
    float *p;
} guarded;

static guarded guarded_alloc(int64_t n) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = (size_t)n * sizeof(float);
    size_t len = (bytes + page - 1) / page * page + page;
    void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED || mprotect((char *)base + len - page, page, PROT_NONE) != 0) {
        abort();
    }
    guarded g = {base, len, (float *)(void *)((char *)base + len - page - bytes)};
    return g;
}

/* fn against the reference with A, B and C each ending at a guard page
** (their last row only as long as the row), row strides pad over minimum. */
static void test_gemm_guarded(const char *name, gemm_fn fn, bool ta, bool tb, int64_t m, int64_t n,
                              int64_t k, int64_t pad, float alpha, float beta) {
    int64_t arows = ta ? k : m, acols = ta ? m : k, brows = tb ? n : k, bcols = tb ? k : n;
    int64_t lda = acols + pad, ldb = bcols + 2 * pad, ldc = n + pad;
    int64_t na = (arows - 1) * lda + acols, nb = (brows - 1) * ldb + bcols, nc = (m - 1) * ldc + n;
    guarded ga = guarded_alloc(na), gb = guarded_alloc(nb), gc = guarded_alloc(nc);
    test_fill_rand(ga.p, na, -1, 1);
    test_fill_rand(gb.p, nb, -1, 1);
    test_fill_rand(gc.p, nc, -1, 1);
    float *cr = fdup(gc.p, nc); /* the reference leaves C's row padding as it is */
    fn(ta, tb, m, n, k, alpha, ga.p, lda, gb.p, ldb, beta, gc.p, ldc);
    kcpu_gemm_f32_ref(ta, tb, m, n, k, alpha, ga.p, lda, gb.p, ldb, beta, cr, ldc);
    char what[160];
    snprintf(what, sizeof what, "%s guarded ta=%d tb=%d m=%lld n=%lld k=%lld pad=%lld a=%g b=%g",
             name, ta, tb, (long long)m, (long long)n, (long long)k, (long long)pad, alpha, beta);
    check_arrf(what, gc.p, cr, nc, 2e-6 * (double)k * fabs(alpha) + 1e-6, 1e-5);
    munmap(ga.base, ga.len), munmap(gb.base, gb.len), munmap(gc.base, gc.len);
    free(cr);
}

/* The AVX2 small kernel directly: every n of 1..70 (its ymm tails) for m
** 1..7 and 13, k cycling over the 8-lane and 64 edges, all ta / tb, alpha /
** beta and tight or padded strides; then the column (96) and k (64, 256)
** block edges of its panels and of the packed B-transposed path. */
static void test_gemm_avx2(void) {
    static const int64_t ms[] = {1, 2, 3, 4, 5, 6, 7, 13};
    static const int64_t ks[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 67};
    static const float ab[][2] = {{1.0f, 0.0f}, {0.5f, 2.0f}, {-1.5f, 0.25f}};
    gemm_fn fn = kcpu_gemm_f32_small_avx2;
    int64_t i = 0;
    for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
        for (int64_t n = 1; n <= 70; n++) {
            for (int t = 0; t < 4; t++, i++) {
                int64_t k = ks[i % (int64_t)(sizeof ks / sizeof ks[0])];
                test_gemm_guarded("avx2", fn, t & 1, t & 2, ms[mi], n, k, (i / 4) % 2 ? 3 : 0,
                                  ab[i % 3][0], ab[i % 3][1]);
            }
        }
    }
    static const int64_t big[][3] = {{7, 97, 300},  {13, 97, 257}, {13, 200, 67}, {16, 193, 129},
                                     {24, 100, 40}, {6, 191, 513}, {4, 31, 32},   {5, 70, 41}};
    for (size_t s = 0; s < sizeof big / sizeof big[0]; s++) {
        for (int t = 0; t < 4; t++) {
            test_gemm_guarded("avx2", fn, t & 1, t & 2, big[s][0], big[s][1], big[s][2], t, 0.75f,
                              t == 1 ? 0.0f : -0.5f);
        }
    }
}

static void test_gemm(void) {
    static const int64_t ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 16, 17, 33};
    static const int64_t ns[] = {1, 7, 15, 17, 33, 64, 65, 130};
    static const int64_t ks[] = {1, 7, 16, 17, 64, 100};
    static const float ab[][2] = {{1.0f, 0.0f}, {0.5f, 2.0f}, {-1.5f, 0.25f}};
    struct {
        const char *name;
        gemm_fn fn;
    } fns[] = {{"small", kcpu_gemm_f32_small}, {"dispatch", kcpu_gemm_f32}, {"blas", kcpu_gemm_f32_blas}};
    for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++) {
        for (int t = 0; t < 4; t++) {
            bool ta = t & 1, tb = t & 2;
            for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
                for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
                    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                        size_t s = (mi + ni + ki) % 3;
                        test_gemm_one(fns[f].name, fns[f].fn, ta, tb, ms[mi], ns[ni], ks[ki],
                                      ab[s][0], ab[s][1], false);
                    }
                }
            }
            /* Decoder-like sizes, beta = 0 over a NaN-filled C. */
            test_gemm_one(fns[f].name, fns[f].fn, ta, tb, 1, 1000, 512, 1.0f, 0.0f, true);
            test_gemm_one(fns[f].name, fns[f].fn, ta, tb, 16, 4001, 67, 1.0f, 0.0f, true);
            test_gemm_one(fns[f].name, fns[f].fn, ta, tb, 9, 515, 520, 0.75f, 1.0f, false);
            /* B over 8 MiB with m <= 4: the streaming path (n, k tails). */
            test_gemm_one(fns[f].name, fns[f].fn, ta, tb, 3, 2100, 1003, -0.5f, 0.5f, false);
            test_gemm_one(fns[f].name, fns[f].fn, ta, tb, 1, 2113, 1001, 1.0f, 0.0f, true);
            /* k = 0 and alpha = 0: C = beta C. */
            test_gemm_one(fns[f].name, fns[f].fn, ta, tb, 3, 20, 0, 1.0f, 0.5f, false);
            test_gemm_one(fns[f].name, fns[f].fn, ta, tb, 3, 20, 5, 0.0f, 2.0f, false);
        }
    }
    if (kcpu_isa_active() == KCPU_ISA_AVX2) {
        test_gemm_avx2();
    }
    /* Batched: strided batch against per-item reference; attention-like
    ** shapes of more than 24 rows take the own kernel below 2^18
    ** multiply-adds (the second) and OpenBLAS above (the third); with one
    ** OpenBLAS thread AVX2 keeps the third (under 2^20) but not the fourth.
    ** The second pass gives OpenBLAS two threads. */
    static const int64_t bshapes[][3] = {{2, 9, 17}, {40, 33, 32}, {70, 70, 64}, {40, 130, 220}};
    for (int r = 0; r < 32; r++) {
        kcpu_blas_set_threads(r < 16 ? 1 : 2);
        int t = r % 16;
        int64_t m = bshapes[t / 4][0], n = bshapes[t / 4][1], k = bshapes[t / 4][2], batch = 5;
        bool ta = t & 1, tb = t & 2;
        int64_t lda = ta ? m : k, ldb = tb ? k : n, sa = m * k + 3, sb = k * n + 1, sc = m * n + 2;
        float *a = test_fill_rand(falloc(sa * batch), sa * batch, -1, 1);
        float *b = test_fill_rand(falloc(sb * batch), sb * batch, -1, 1);
        float *c = test_fill_rand(falloc(sc * batch), sc * batch, -1, 1);
        float *cr = fdup(c, sc * batch);
        kcpu_gemm_f32_batched(ta, tb, m, n, k, 0.5f, a, lda, sa, b, ldb, sb, 1.0f, c, n, sc, batch);
        for (int64_t i = 0; i < batch; i++) {
            kcpu_gemm_f32_ref(ta, tb, m, n, k, 0.5f, a + i * sa, lda, b + i * sb, ldb, 1.0f,
                              cr + i * sc, n);
        }
        check_arrf("gemm batched", c, cr, sc * batch, 1e-5 + 1e-7 * (double)k, 1e-5);
        free(a), free(b), free(c), free(cr);
    }
    kcpu_blas_set_threads(1);
}

/* ------------------------------------------------------------ elementwise */

static double unary_d(kcpu_unary op, double alpha, double x) {
    switch (op) {
    case KCPU_RELU: return x > 0 ? x : 0;
    case KCPU_SWISH: return x / (1 + exp(-x));
    case KCPU_GELU: return x / (1 + exp(-(double)(1.702f * (float)x))); /* float kx */
    case KCPU_TANH: return tanh(x);
    case KCPU_SIGMOID: return 1 / (1 + exp(-x));
    case KCPU_EXP: return exp(x);
    case KCPU_LOG: return log(x);
    case KCPU_SQRT: return sqrt(x);
    case KCPU_NEG: return -x;
    case KCPU_SCALE: return alpha * x;
    case KCPU_ADD_SCALAR: return x + alpha;
    default: return 0;
    }
}

static const char *unary_names[] = {"relu", "swish", "gelu", "tanh", "sigmoid", "exp",
                                    "log",  "sqrt",  "neg",  "scale", "add_scalar"};

static void unary_domain(kcpu_unary op, float *lo, float *hi) {
    *lo = -10.0f, *hi = 10.0f;
    if (op == KCPU_LOG || op == KCPU_SQRT) {
        *lo = 0.01f, *hi = 100.0f;
    } else if (op == KCPU_EXP) {
        *lo = -80.0f, *hi = 80.0f;
    } else if (op == KCPU_TANH) {
        *lo = -3.0f, *hi = 3.0f;
    }
}

static void test_unary(void) {
    const float alpha = 0.7f;
    for (int op = 0; op < KCPU_UNARY_COUNT; op++) {
        float lo, hi;
        unary_domain((kcpu_unary)op, &lo, &hi);
        for (int s = 0; s < NSIZES; s++) {
            int64_t n = sizes[s];
            float *x = test_fill_rand(falloc(n), n, lo, hi);
            float *y = falloc(n), *yr = falloc(n);
            kcpu_unary_fwd((kcpu_unary)op, n, alpha, x, y);
            kcpu_unary_fwd_ref((kcpu_unary)op, n, alpha, x, yr);
            double *want = malloc((size_t)n * sizeof *want);
            for (int64_t i = 0; i < n; i++) {
                want[i] = unary_d((kcpu_unary)op, alpha, x[i]);
            }
            char what[96];
            snprintf(what, sizeof what, "unary fwd %s n=%lld vs ref", unary_names[op], (long long)n);
            check_arrf(what, y, yr, n, 1e-37, 3e-7);
            snprintf(what, sizeof what, "unary fwd %s n=%lld vs double", unary_names[op], (long long)n);
            check_arr(what, y, want, n, 1e-37, 4e-7);
            /* In place. */
            float *xi = fdup(x, n);
            kcpu_unary_fwd((kcpu_unary)op, n, alpha, xi, xi);
            snprintf(what, sizeof what, "unary fwd %s n=%lld in place", unary_names[op], (long long)n);
            check_arrf(what, xi, y, n, 0, 0);

            /* Backward: accumulates into random dx; fast vs ref vs derivative by FD. */
            float *dy = test_fill_rand(falloc(n), n, -1, 1);
            float *dx0 = test_fill_rand(falloc(n), n, -1, 1);
            float *dx = fdup(dx0, n), *dxr = fdup(dx0, n), *dxn = fdup(dx0, n);
            kcpu_unary_bwd((kcpu_unary)op, n, alpha, x, yr, dy, dx);
            kcpu_unary_bwd_ref((kcpu_unary)op, n, alpha, x, yr, dy, dxr);
            kcpu_unary_bwd((kcpu_unary)op, n, alpha, x, NULL, dy, dxn);
            snprintf(what, sizeof what, "unary bwd %s n=%lld vs ref", unary_names[op], (long long)n);
            check_arrf(what, dx, dxr, n, 1e-6, 1e-5);
            snprintf(what, sizeof what, "unary bwd %s n=%lld y=NULL", unary_names[op], (long long)n);
            check_arrf(what, dxn, dxr, n, 1e-6, 1e-5);
            for (int64_t i = 0; i < n; i++) {
                double xv = x[i], h = 1e-3 * (fabs(xv) > 1 ? fabs(xv) : 1);
                if (op == KCPU_RELU && fabs(xv) < 2 * h) {
                    want[i] = dxr[i]; /* kink */
                    continue;
                }
                float xp = (float)(xv + h), xm = (float)(xv - h), fp, fm;
                kcpu_unary_fwd_ref((kcpu_unary)op, 1, alpha, &xp, &fp);
                kcpu_unary_fwd_ref((kcpu_unary)op, 1, alpha, &xm, &fm);
                double d = ((double)fp - fm) / ((double)xp - xm);
                want[i] = dx0[i] + dy[i] * d;
            }
            snprintf(what, sizeof what, "unary bwd %s n=%lld vs finite differences",
                     unary_names[op], (long long)n);
            check_arr(what, dxr, want, n, 2e-3, 2e-3);
            free(x), free(y), free(yr), free(want), free(xi), free(dy), free(dx0), free(dx),
                free(dxr), free(dxn);
        }
    }
    /* exp/log/tanh/sigmoid on special and extreme values. */
    float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.7f, 88.8f, -87.3f, -100.0f, -103.9f,
                  -104.0f, 1e-30f, -1e-30f, 1e-45f, 3e-39f, 1e38f, 3.4e38f, -3.4e38f, 0.625f,
                  -0.625f, 0.62499f, 1e-4f, -1e-4f, 20.0f, -20.0f, 9.0f, 1.0f};
    int64_t nsp = sizeof sp / sizeof sp[0];
    for (int op = 0; op < KCPU_UNARY_COUNT; op++) {
        float y[64], yr[64];
        kcpu_unary_fwd((kcpu_unary)op, nsp, alpha, sp, y);
        kcpu_unary_fwd_ref((kcpu_unary)op, nsp, alpha, sp, yr);
        char what[96];
        snprintf(what, sizeof what, "unary fwd %s special values", unary_names[op]);
        check_arrf(what, y, yr, nsp, 1e-44, 1e-6);
    }
    /* exp over its whole range, subnormal results included. */
    int64_t n = 20001;
    float *x = falloc(n), *y = falloc(n), *yr = falloc(n);
    for (int64_t i = 0; i < n; i++) {
        x[i] = -104.0f + 193.0f * (float)i / (float)(n - 1);
    }
    kcpu_unary_fwd(KCPU_EXP, n, 0, x, y);
    kcpu_unary_fwd_ref(KCPU_EXP, n, 0, x, yr);
    check_arrf("exp full range", y, yr, n, 3e-45, 3e-7);
    for (int64_t i = 0; i < n; i++) {
        x[i] = ldexpf(test_urand(0.5f, 1.0f), (int)(i % 260) - 140);
    }
    kcpu_unary_fwd(KCPU_LOG, n, 0, x, y);
    kcpu_unary_fwd_ref(KCPU_LOG, n, 0, x, yr);
    check_arrf("log full range incl. subnormal inputs", y, yr, n, 1e-6, 3e-7);
    free(x), free(y), free(yr);
}

/* Output shape [2, 3, 1 or more, n]; a and b broadcast per pattern bits. */
static void test_binary(void) {
    static const char *names[] = {"add", "sub", "mul", "div"};
    const int64_t inners[] = {1, 7, 17, 33};
    for (int op = 0; op < KCPU_BINARY_COUNT; op++) {
        for (size_t ii = 0; ii < sizeof inners / sizeof inners[0]; ii++) {
            for (int pat = 0; pat < 16; pat++) {
                int64_t shape[4] = {2, 3, 5, inners[ii]};
                int64_t sa[4], sb[4], na = 1, nb = 1;
                /* Dim d of a is broadcast when bit d of pat (a) / bit (d+1)%4 (b). */
                for (int d = 3; d >= 0; d--) {
                    bool ba = (pat >> d) & 1, bb = (pat >> ((d + 1) % 4)) & 1;
                    sa[d] = ba ? 0 : na;
                    na *= ba ? 1 : shape[d];
                    sb[d] = bb ? 0 : nb;
                    nb *= bb ? 1 : shape[d];
                }
                int64_t ny = 2 * 3 * 5 * inners[ii];
                float *a = test_fill_rand(falloc(na), na, 0.5f, 2.0f);
                float *b = test_fill_rand(falloc(nb), nb, 0.5f, 2.0f);
                for (int64_t i = 0; i < na; i += 2) {
                    a[i] = -a[i];
                }
                float *y = falloc(ny);
                double *want = calloc((size_t)ny, sizeof *want);
                double *wa = calloc((size_t)na, sizeof *wa), *wb = calloc((size_t)nb, sizeof *wb);
                float *dy = test_fill_rand(falloc(ny), ny, -1, 1);
                float *da = test_fill_rand(falloc(na), na, -1, 1);
                float *db = test_fill_rand(falloc(nb), nb, -1, 1);
                for (int64_t i = 0; i < na; i++) {
                    wa[i] = da[i];
                }
                for (int64_t i = 0; i < nb; i++) {
                    wb[i] = db[i];
                }
                int64_t o = 0;
                for (int64_t i0 = 0; i0 < shape[0]; i0++) {
                    for (int64_t i1 = 0; i1 < shape[1]; i1++) {
                        for (int64_t i2 = 0; i2 < shape[2]; i2++) {
                            for (int64_t i3 = 0; i3 < shape[3]; i3++, o++) {
                                int64_t ia = i0 * sa[0] + i1 * sa[1] + i2 * sa[2] + i3 * sa[3];
                                int64_t ib = i0 * sb[0] + i1 * sb[1] + i2 * sb[2] + i3 * sb[3];
                                double av = a[ia], bv = b[ib], g = dy[o];
                                switch (op) {
                                case KCPU_ADD: want[o] = av + bv, wa[ia] += g, wb[ib] += g; break;
                                case KCPU_SUB: want[o] = av - bv, wa[ia] += g, wb[ib] -= g; break;
                                case KCPU_MUL:
                                    want[o] = av * bv, wa[ia] += g * bv, wb[ib] += g * av;
                                    break;
                                default:
                                    want[o] = av / bv, wa[ia] += g / bv;
                                    wb[ib] -= g * av / (bv * bv);
                                    break;
                                }
                            }
                        }
                    }
                }
                kcpu_binary_fwd((kcpu_binary)op, 4, shape, sa, a, sb, b, y);
                char what[96];
                snprintf(what, sizeof what, "binary fwd %s inner=%lld pat=%d", names[op],
                         (long long)inners[ii], pat);
                check_arr(what, y, want, ny, 1e-7, 3e-7);
                kcpu_binary_bwd((kcpu_binary)op, 4, shape, sa, a, sb, b, dy, da, db);
                snprintf(what, sizeof what, "binary bwd da %s inner=%lld pat=%d", names[op],
                         (long long)inners[ii], pat);
                check_arr(what, da, wa, na, 1e-5, 1e-5);
                snprintf(what, sizeof what, "binary bwd db %s inner=%lld pat=%d", names[op],
                         (long long)inners[ii], pat);
                check_arr(what, db, wb, nb, 1e-5, 1e-5);
                /* NULL gradient outputs are skipped. */
                kcpu_binary_bwd((kcpu_binary)op, 4, shape, sa, a, sb, b, dy, NULL, NULL);
                free(a), free(b), free(y), free(want), free(wa), free(wb), free(dy), free(da),
                    free(db);
            }
        }
    }
    /* Non-unit inner stride (a read transposed) and ndim = 0. */
    int64_t shape[2] = {5, 19}, sa[2] = {1, 5}, sb[2] = {19, 1};
    float *a = test_fill_rand(falloc(95), 95, -1, 1), *b = test_fill_rand(falloc(95), 95, -1, 1);
    float *y = falloc(95);
    double want[95];
    kcpu_binary_fwd(KCPU_MUL, 2, shape, sa, a, sb, b, y);
    for (int64_t i = 0; i < 5; i++) {
        for (int64_t j = 0; j < 19; j++) {
            want[i * 19 + j] = (double)a[j * 5 + i] * b[i * 19 + j];
        }
    }
    check_arr("binary fwd strided", y, want, 95, 1e-7, 1e-6);
    float s0 = 3.0f, s1 = 4.0f, s2 = 0.0f;
    kcpu_binary_fwd(KCPU_SUB, 0, NULL, NULL, &s0, NULL, &s1, &s2);
    CHECK(s2 == -1.0f, "[%s] binary fwd ndim 0: %g", isa_tag, s2);
    free(a), free(b), free(y);
}

static void test_helpers(void) {
    for (int s = 0; s < NSIZES; s++) {
        int64_t n = sizes[s];
        float *a = test_fill_rand(falloc(n), n, -1, 1), *b = test_fill_rand(falloc(n), n, -1, 1);
        float *y = falloc(n);
        double *w = malloc((size_t)n * sizeof *w);
        kcpu_add_f32(n, a, b, y);
        for (int64_t i = 0; i < n; i++) {
            w[i] = (double)a[i] + b[i];
        }
        check_arr("add_f32", y, w, n, 1e-7, 1e-7);
        kcpu_acc_f32(n, a, y);
        for (int64_t i = 0; i < n; i++) {
            w[i] += a[i];
        }
        check_arr("acc_f32", y, w, n, 1e-6, 1e-6);
        kcpu_fill_f32(n, 2.5f, y);
        for (int64_t i = 0; i < n; i++) {
            w[i] = 2.5;
        }
        check_arr("fill_f32", y, w, n, 0, 0);
        kcpu_fill_f32(n, 0.0f, y);
        for (int64_t i = 0; i < n; i++) {
            w[i] = 0;
        }
        check_arr("fill_f32 zero", y, w, n, 0, 0);
        free(a), free(b), free(y), free(w);
    }
    /* masked fill: x [4, 33], mask [4, 1] and [1, 33]. */
    int64_t shape[2] = {4, 33};
    float *x = test_fill_rand(falloc(132), 132, -1, 1), *y = falloc(132), *m = falloc(132);
    float *dy = test_fill_rand(falloc(132), 132, -1, 1);
    float *dx = test_fill_rand(falloc(132), 132, -1, 1);
    double w[132], wd[132];
    for (int pat = 0; pat < 2; pat++) {
        int64_t sm[2] = {pat ? 0 : 1, pat ? 1 : 0};
        for (int i = 0; i < 132; i++) {
            m[i] = (i % 3) ? 1.0f : 0.0f;
        }
        for (int64_t i = 0; i < 132; i++) {
            int64_t r = i / 33, c = i % 33;
            bool keep = m[r * sm[0] + c * sm[1]] != 0.0f;
            w[i] = keep ? x[i] : -1e9;
            wd[i] = dx[i] + (keep ? dy[i] : 0.0f);
        }
        kcpu_masked_fill_fwd(2, shape, x, sm, m, -1e9f, y);
        check_arr("masked_fill fwd", y, w, 132, 0, 0);
        kcpu_masked_fill_bwd(2, shape, sm, m, dy, dx);
        check_arr("masked_fill bwd", dx, wd, 132, 1e-7, 1e-7);
    }
    free(x), free(y), free(m), free(dy), free(dx);
}

/* ------------------------------------------------------- softmax / xent */

static void softmax_d(int64_t cols, const float *x, double *y, bool lg) {
    double mx = -INFINITY, s = 0;
    for (int64_t i = 0; i < cols; i++) {
        mx = x[i] > mx ? x[i] : mx;
    }
    for (int64_t i = 0; i < cols; i++) {
        s += exp(x[i] - mx);
    }
    for (int64_t i = 0; i < cols; i++) {
        y[i] = lg ? (x[i] - mx) - log(s) : exp(x[i] - mx) / s;
    }
}

static void test_softmax(void) {
    const int64_t rows = 3;
    for (int s = 0; s < NSIZES; s++) {
        int64_t cols = sizes[s], n = rows * cols;
        for (int scale = 0; scale < 2; scale++) {
            float *x = test_fill_rand(falloc(n), n, scale ? -60.0f : -3.0f, scale ? 60.0f : 3.0f);
            float *y = falloc(n), *ly = falloc(n), *yr = falloc(n);
            double *w = malloc((size_t)n * sizeof *w), *lw = malloc((size_t)n * sizeof *w);
            for (int64_t r = 0; r < rows; r++) {
                softmax_d(cols, x + r * cols, w + r * cols, false);
                softmax_d(cols, x + r * cols, lw + r * cols, true);
            }
            char what[96];
            kcpu_softmax_fwd(rows, cols, x, y);
            snprintf(what, sizeof what, "softmax fwd cols=%lld scale=%d", (long long)cols, scale);
            check_arr(what, y, w, n, 1e-9, 2e-6);
            kcpu_softmax_fwd_ref(rows, cols, x, yr);
            check_arr("softmax fwd ref", yr, w, n, 1e-9, 2e-6);
            kcpu_log_softmax_fwd(rows, cols, x, ly);
            snprintf(what, sizeof what, "log_softmax fwd cols=%lld scale=%d", (long long)cols,
                     scale);
            check_arr(what, ly, lw, n, 2e-6, 2e-6);
            kcpu_log_softmax_fwd_ref(rows, cols, x, yr);
            check_arr("log_softmax fwd ref", yr, lw, n, 2e-6, 2e-6);
            float *xi = fdup(x, n);
            kcpu_softmax_fwd(rows, cols, xi, xi);
            check_arrf("softmax in place", xi, y, n, 0, 0);
            memcpy(xi, x, (size_t)n * sizeof *xi);
            kcpu_log_softmax_fwd(rows, cols, xi, xi);
            check_arrf("log_softmax in place", xi, ly, n, 0, 0);

            /* Backward vs the double formulas. */
            float *dy = test_fill_rand(falloc(n), n, -1, 1);
            float *dx0 = test_fill_rand(falloc(n), n, -1, 1);
            float *dx = fdup(dx0, n), *dxl = fdup(dx0, n);
            double *wd = malloc((size_t)n * sizeof *wd), *wl = malloc((size_t)n * sizeof *wl);
            for (int64_t r = 0; r < rows; r++) {
                double dot = 0, sum = 0;
                for (int64_t i = r * cols; i < (r + 1) * cols; i++) {
                    dot += (double)y[i] * dy[i];
                    sum += dy[i];
                }
                for (int64_t i = r * cols; i < (r + 1) * cols; i++) {
                    wd[i] = dx0[i] + (double)y[i] * (dy[i] - dot);
                    wl[i] = dx0[i] + dy[i] - exp((double)ly[i]) * sum;
                }
            }
            kcpu_softmax_bwd(rows, cols, y, dy, dx);
            snprintf(what, sizeof what, "softmax bwd cols=%lld", (long long)cols);
            check_arr(what, dx, wd, n, 1e-5, 1e-5);
            kcpu_log_softmax_bwd(rows, cols, ly, dy, dxl);
            snprintf(what, sizeof what, "log_softmax bwd cols=%lld", (long long)cols);
            check_arr(what, dxl, wl, n, 1e-4, 1e-5);
            memcpy(dx, dx0, (size_t)n * sizeof *dx);
            kcpu_softmax_bwd_ref(rows, cols, y, dy, dx);
            check_arr("softmax bwd ref", dx, wd, n, 1e-5, 1e-5);
            memcpy(dxl, dx0, (size_t)n * sizeof *dx);
            kcpu_log_softmax_bwd_ref(rows, cols, ly, dy, dxl);
            check_arr("log_softmax bwd ref", dxl, wl, n, 1e-4, 1e-5);
            free(x), free(y), free(ly), free(yr), free(w), free(lw), free(xi), free(dy),
                free(dx0), free(dx), free(dxl), free(wd), free(wl);
        }
    }
}

static double xent_loss_d(int64_t cols, const double *x, int32_t label, double ls) {
    double mx = -INFINITY, s = 0, sum = 0;
    for (int64_t i = 0; i < cols; i++) {
        mx = x[i] > mx ? x[i] : mx;
    }
    for (int64_t i = 0; i < cols; i++) {
        s += exp(x[i] - mx);
    }
    double lse = mx + log(s);
    for (int64_t i = 0; i < cols; i++) {
        sum += x[i] - lse;
    }
    return -(1 - ls) * (x[label] - lse) - ls / (double)cols * sum;
}

static void test_xent(void) {
    const int64_t rows = 4;
    const float ls = 0.1f;
    for (int s = 0; s < NSIZES; s++) {
        int64_t cols = sizes[s], n = rows * cols;
        float *x = test_fill_rand(falloc(n), n, -5, 5), *logp = falloc(n), loss[4];
        int32_t labels[4];
        for (int r = 0; r < rows; r++) {
            labels[r] = (int32_t)((test_rng_next() >> 33) % (uint64_t)cols);
        }
        kcpu_xent_fwd(rows, cols, x, labels, ls, logp, loss);
        double wl[4], *xd = malloc((size_t)cols * sizeof *xd);
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t i = 0; i < cols; i++) {
                xd[i] = x[r * cols + i];
            }
            wl[r] = xent_loss_d(cols, xd, labels[r], ls);
        }
        char what[96];
        snprintf(what, sizeof what, "xent fwd loss cols=%lld", (long long)cols);
        check_arr(what, loss, wl, rows, 1e-5, 1e-5);
        float dloss[4] = {1.0f, -0.5f, 2.0f, 0.25f};
        float *dx0 = test_fill_rand(falloc(n), n, -1, 1), *dx = fdup(dx0, n), *dxr = fdup(dx0, n);
        double *wd = malloc((size_t)n * sizeof *wd);
        for (int64_t r = 0; r < rows; r++) {
            double p[1];
            (void)p;
            for (int64_t i = 0; i < cols; i++) {
                double sm = exp((double)logp[r * cols + i]);
                wd[r * cols + i] = dx0[r * cols + i] +
                                   dloss[r] * (sm - (i == labels[r] ? 1 - ls : 0) - ls / (double)cols);
            }
        }
        kcpu_xent_bwd(rows, cols, logp, labels, ls, dloss, dx);
        snprintf(what, sizeof what, "xent bwd cols=%lld", (long long)cols);
        check_arr(what, dx, wd, n, 1e-5, 1e-5);
        kcpu_xent_bwd_ref(rows, cols, logp, labels, ls, dloss, dxr);
        check_arr("xent bwd ref", dxr, wd, n, 1e-5, 1e-5);
        /* Finite differences of the double loss on a few coordinates. */
        if (cols <= 33) {
            for (int64_t r = 0; r < rows; r++) {
                for (int64_t i = 0; i < cols; i++) {
                    xd[i] = x[r * cols + i];
                }
                for (int64_t i = 0; i < cols; i++) {
                    double keep = xd[i], h = 1e-5;
                    xd[i] = keep + h;
                    double lp = xent_loss_d(cols, xd, labels[r], ls);
                    xd[i] = keep - h;
                    double lm = xent_loss_d(cols, xd, labels[r], ls);
                    xd[i] = keep;
                    wd[r * cols + i] = dx0[r * cols + i] + dloss[r] * (lp - lm) / (2 * h);
                }
            }
            check_arr("xent bwd vs finite differences", dx, wd, n, 1e-4, 1e-4);
        }
        free(x), free(logp), free(xd), free(dx0), free(dx), free(dxr), free(wd);
    }
}

/* ------------------------------------------------------------ layer norm */

static void layernorm_d(int64_t cols, const double *x, const float *g, const float *b, double eps,
                        double *y) {
    double mu = 0, v = 0;
    for (int64_t i = 0; i < cols; i++) {
        mu += x[i];
    }
    mu /= (double)cols;
    for (int64_t i = 0; i < cols; i++) {
        v += (x[i] - mu) * (x[i] - mu);
    }
    double rs = 1 / sqrt(v / (double)cols + eps);
    for (int64_t i = 0; i < cols; i++) {
        y[i] = (x[i] - mu) * rs * (g ? g[i] : 1) + (b ? b[i] : 0);
    }
}

/* kcpu_add_layernorm_fwd: the same floats as the sum and then the norm, for
** row counts that span several of its blocks, with and without gamma/beta
** and statistics. */
static void test_add_layernorm(void) {
    static const int64_t row_counts[] = {1, 7, 40};
    for (int s = 0; s < NSIZES; s++) {
        for (int rc = 0; rc < 3; rc++) {
            int64_t cols = sizes[s], rows = row_counts[rc], n = rows * cols;
            int affine = (s + rc) % 2;
            float *x = test_fill_rand(falloc(n), n, -2, 3),
                  *res = test_fill_rand(falloc(n), n, -3, 2);
            float *g = affine ? test_fill_rand(falloc(cols), cols, 0.5f, 1.5f) : NULL;
            float *b = affine ? test_fill_rand(falloc(cols), cols, -1, 1) : NULL;
            float *sum = falloc(n), *want = falloc(n), *y = falloc(n);
            float *mw = falloc(rows), *rw = falloc(rows), *m = falloc(rows), *r = falloc(rows);
            for (int64_t i = 0; i < n; i++) {
                sum[i] = x[i] + res[i];
            }
            kcpu_layernorm_fwd(rows, cols, sum, g, b, 1e-6f, want, mw, rw);
            kcpu_add_layernorm_fwd(rows, cols, x, res, g, b, 1e-6f, y, m, r);
            char what[96];
            snprintf(what, sizeof what, "add_layernorm rows=%lld cols=%lld", (long long)rows,
                     (long long)cols);
            check_arrf(what, y, want, n, 0, 0);
            check_arrf("add_layernorm mean", m, mw, rows, 0, 0);
            check_arrf("add_layernorm rstd", r, rw, rows, 0, 0);
            kcpu_add_layernorm_fwd(rows, cols, x, res, g, b, 1e-6f, y, NULL, NULL);
            check_arrf("add_layernorm without stats", y, want, n, 0, 0);
            free(x), free(res), free(g), free(b), free(sum), free(want), free(y);
            free(mw), free(rw), free(m), free(r);
        }
    }
}

static void test_layernorm(void) {
    const int64_t rows = 7; /* the AVX-512 kernel's groups of 4 rows and the rest */
    const float eps = 1e-5f;
    for (int s = 0; s < NSIZES; s++) {
        int64_t cols = sizes[s], n = rows * cols;
        if (cols == 1) {
            continue; /* variance 0: y = beta, covered below */
        }
        for (int affine = 0; affine < 2; affine++) {
            float *x = test_fill_rand(falloc(n), n, -2, 3);
            float *g = affine ? test_fill_rand(falloc(cols), cols, 0.5f, 1.5f) : NULL;
            float *b = affine ? test_fill_rand(falloc(cols), cols, -1, 1) : NULL;
            float *y = falloc(n), *yr = falloc(n), mean[7], rstd[7], meanr[7], rstdr[7];
            double *w = malloc((size_t)n * sizeof *w), *xd = malloc((size_t)cols * sizeof *xd);
            for (int64_t r = 0; r < rows; r++) {
                for (int64_t i = 0; i < cols; i++) {
                    xd[i] = x[r * cols + i];
                }
                layernorm_d(cols, xd, g, b, eps, w + r * cols);
            }
            char what[96];
            kcpu_layernorm_fwd(rows, cols, x, g, b, eps, y, mean, rstd);
            snprintf(what, sizeof what, "layernorm fwd cols=%lld affine=%d", (long long)cols, affine);
            check_arr(what, y, w, n, 2e-5, 2e-5);
            kcpu_layernorm_fwd_ref(rows, cols, x, g, b, eps, yr, meanr, rstdr);
            check_arr("layernorm fwd ref", yr, w, n, 2e-5, 2e-5);
            check_arrf("layernorm mean", mean, meanr, rows, 1e-6, 1e-5);
            check_arrf("layernorm rstd", rstd, rstdr, rows, 1e-6, 1e-5);
            kcpu_layernorm_fwd(rows, cols, x, g, b, eps, yr, NULL, NULL);
            check_arrf("layernorm fwd without stats", yr, y, n, 0, 0);
            for (int64_t r = 0; r < rows; r++) /* row by row: the same floats */
                kcpu_layernorm_fwd(1, cols, x + r * cols, g, b, eps, yr + r * cols, NULL, NULL);
            check_arrf("layernorm fwd one row at a time", yr, y, n, 0, 0);

            /* Backward vs central differences of L = sum(dy * y(x)) in double. */
            float *dy = test_fill_rand(falloc(n), n, -1, 1);
            float *dx0 = test_fill_rand(falloc(n), n, -1, 1);
            float *dx = fdup(dx0, n), *dxr = fdup(dx0, n);
            float *dg0 = test_fill_rand(falloc(cols), cols, -1, 1), *dg = fdup(dg0, cols),
                  *dgr = fdup(dg0, cols), *db = fdup(dg0, cols), *dbr = fdup(dg0, cols);
            kcpu_layernorm_bwd(rows, cols, x, g, mean, rstd, dy, dx, dg, db);
            kcpu_layernorm_bwd_ref(rows, cols, x, g, meanr, rstdr, dy, dxr, dgr, dbr);
            snprintf(what, sizeof what, "layernorm bwd dx cols=%lld affine=%d", (long long)cols,
                     affine);
            check_arrf(what, dx, dxr, n, 1e-4, 1e-4);
            check_arrf("layernorm bwd dgamma vs ref", dg, dgr, cols, 1e-5, 1e-5);
            check_arrf("layernorm bwd dbeta vs ref", db, dbr, cols, 1e-5, 1e-5);
            double *wd = malloc((size_t)n * sizeof *wd), *wg = malloc((size_t)cols * sizeof *wg),
                   *wb = malloc((size_t)cols * sizeof *wb), *yp = malloc((size_t)cols * sizeof *yp);
            for (int64_t i = 0; i < cols; i++) {
                wg[i] = dg0[i], wb[i] = dg0[i];
            }
            for (int64_t r = 0; r < rows; r++) {
                double mu = 0, v = 0;
                for (int64_t i = 0; i < cols; i++) {
                    xd[i] = x[r * cols + i];
                    mu += xd[i];
                }
                mu /= (double)cols;
                for (int64_t i = 0; i < cols; i++) {
                    v += (xd[i] - mu) * (xd[i] - mu);
                }
                double rs = 1 / sqrt(v / (double)cols + eps);
                for (int64_t i = 0; i < cols; i++) {
                    wg[i] += dy[r * cols + i] * (xd[i] - mu) * rs;
                    wb[i] += dy[r * cols + i];
                }
                bool fd = cols <= 33;
                for (int64_t i = 0; i < cols && fd; i++) {
                    double keep = xd[i], h = 1e-6, lp = 0, lm = 0;
                    xd[i] = keep + h;
                    layernorm_d(cols, xd, g, b, eps, yp);
                    for (int64_t j = 0; j < cols; j++) {
                        lp += dy[r * cols + j] * yp[j];
                    }
                    xd[i] = keep - h;
                    layernorm_d(cols, xd, g, b, eps, yp);
                    for (int64_t j = 0; j < cols; j++) {
                        lm += dy[r * cols + j] * yp[j];
                    }
                    xd[i] = keep;
                    wd[r * cols + i] = dx0[r * cols + i] + (lp - lm) / (2 * h);
                }
            }
            if (cols <= 33) {
                check_arr("layernorm bwd dx vs finite differences", dx, wd, n, 1e-4, 1e-3);
            }
            check_arr("layernorm bwd dgamma", dg, wg, cols, 1e-4, 1e-4);
            check_arr("layernorm bwd dbeta", db, wb, cols, 1e-4, 1e-4);
            /* NULL outputs skipped. */
            kcpu_layernorm_bwd(rows, cols, x, g, mean, rstd, dy, NULL, NULL, NULL);
            free(x), free(g), free(b), free(y), free(yr), free(w), free(xd), free(dy), free(dx0),
                free(dx), free(dxr), free(dg0), free(dg), free(dgr), free(db), free(dbr), free(wd),
                free(wg), free(wb), free(yp);
        }
    }
    /* Constant row: y = beta exactly, finite. */
    float x[5] = {2, 2, 2, 2, 2}, b[5] = {1, 2, 3, 4, 5}, y[5];
    kcpu_layernorm_fwd(1, 5, x, NULL, b, 1e-5f, y, NULL, NULL);
    float bw[5] = {1, 2, 3, 4, 5};
    check_arrf("layernorm constant row", y, bw, 5, 0, 0);
}

/* ------------------------------------------------------------ reductions */

static void test_reduce(void) {
    static const int64_t dims[][3] = {{1, 1, 1}, {3, 7, 1}, {2, 1000, 1}, {2, 17, 5},
                                      {3, 4, 33}, {1, 33, 16}, {4, 1, 7}};
    static const char *names[] = {"sum", "mean", "max"};
    for (size_t t = 0; t < sizeof dims / sizeof dims[0]; t++) {
        int64_t o = dims[t][0], n = dims[t][1], in = dims[t][2], nx = o * n * in, ny = o * in;
        float *x = test_fill_rand(falloc(nx), nx, -1, 1);
        /* Integer values so that ties for max occur. */
        for (int64_t i = 0; i < nx; i += 3) {
            x[i] = (float)((int)(x[i] * 3));
        }
        for (int op = 0; op < 3; op++) {
            float *y = falloc(ny), *dy = test_fill_rand(falloc(ny), ny, -1, 1);
            float *dx = test_fill_rand(falloc(nx), nx, -1, 1);
            double *w = malloc((size_t)ny * sizeof *w), *wd = malloc((size_t)nx * sizeof *wd);
            for (int64_t i = 0; i < nx; i++) {
                wd[i] = dx[i];
            }
            for (int64_t a = 0; a < o; a++) {
                for (int64_t c = 0; c < in; c++) {
                    double s = 0, mx = -INFINITY;
                    int64_t arg = 0;
                    for (int64_t j = 0; j < n; j++) {
                        double v = x[(a * n + j) * in + c];
                        s += v;
                        if (v > mx) {
                            mx = v, arg = j;
                        }
                    }
                    double g = dy[a * in + c];
                    w[a * in + c] = op == 0 ? s : op == 1 ? s / (double)n : mx;
                    for (int64_t j = 0; j < n; j++) {
                        double d = op == 0 ? g : op == 1 ? g / (double)n : (j == arg ? g : 0);
                        wd[(a * n + j) * in + c] += d;
                    }
                }
            }
            kcpu_reduce_fwd((kcpu_reduce)op, o, n, in, x, y);
            char what[96];
            snprintf(what, sizeof what, "reduce fwd %s [%lld,%lld,%lld]", names[op],
                     (long long)o, (long long)n, (long long)in);
            check_arr(what, y, w, ny, 1e-5, 1e-5);
            kcpu_reduce_bwd((kcpu_reduce)op, o, n, in, x, y, dy, dx);
            snprintf(what, sizeof what, "reduce bwd %s [%lld,%lld,%lld]", names[op],
                     (long long)o, (long long)n, (long long)in);
            check_arr(what, dx, wd, nx, 1e-6, 1e-6);
            free(y), free(dy), free(dx), free(w), free(wd);
        }
        free(x);
    }
}

/* ---------------------------------------------------------- data movement */

static void test_movement(void) {
    /* gather / scatter with repeated ids. */
    const int64_t vocab = 11, dim = 33, nid = 9;
    int32_t ids[9] = {3, 0, 10, 3, 7, 3, 0, 1, 10};
    float *table = test_fill_rand(falloc(vocab * dim), vocab * dim, -1, 1);
    float *out = falloc(nid * dim), *dt = test_fill_rand(falloc(vocab * dim), vocab * dim, -1, 1);
    float *dout = test_fill_rand(falloc(nid * dim), nid * dim, -1, 1);
    double *w = malloc((size_t)(vocab * dim) * sizeof *w);
    kcpu_gather_rows(nid, ids, dim, table, out);
    bool ok = true;
    for (int64_t i = 0; i < nid; i++) {
        ok = ok && memcmp(out + i * dim, table + ids[i] * dim, (size_t)dim * sizeof *out) == 0;
    }
    CHECK(ok, "[%s] gather_rows", isa_tag);
    /* dim 1 (a column selection, its own loop): each id's single value */
    float col[9] = {0};
    kcpu_gather_rows(nid, ids, 1, table, col);
    ok = true;
    for (int64_t i = 0; i < nid; i++) {
        ok = ok && col[i] == table[ids[i]];
    }
    CHECK(ok, "[%s] gather_rows of dim 1", isa_tag);
    for (int64_t i = 0; i < vocab * dim; i++) {
        w[i] = dt[i];
    }
    for (int64_t i = 0; i < nid; i++) {
        for (int64_t j = 0; j < dim; j++) {
            w[ids[i] * dim + j] += dout[i * dim + j];
        }
    }
    kcpu_scatter_add_rows(nid, ids, dim, dout, dt);
    check_arr("scatter_add_rows", dt, w, vocab * dim, 1e-6, 1e-6);
    free(table), free(out), free(dt), free(dout), free(w);

    /* permute: 4-D shape, all 24 permutations. */
    int64_t shape[4] = {2, 3, 5, 7};
    int64_t nx = 2 * 3 * 5 * 7;
    float *x = test_fill_rand(falloc(nx), nx, -1, 1), *y = falloc(nx);
    double *wy = malloc((size_t)nx * sizeof *wy);
    int perms = 0;
    for (int p0 = 0; p0 < 4; p0++) {
        for (int p1 = 0; p1 < 4; p1++) {
            for (int p2 = 0; p2 < 4; p2++) {
                int p3 = 6 - p0 - p1 - p2;
                if (p0 == p1 || p0 == p2 || p1 == p2 || p3 < 0 || p3 > 3 || p3 == p0 ||
                    p3 == p1 || p3 == p2) {
                    continue;
                }
                int perm[4] = {p0, p1, p2, p3};
                int64_t xs[4] = {3 * 5 * 7, 5 * 7, 7, 1}, ys[4];
                for (int d = 0; d < 4; d++) {
                    ys[d] = shape[perm[d]];
                }
                int64_t o = 0;
                for (int64_t i0 = 0; i0 < ys[0]; i0++) {
                    for (int64_t i1 = 0; i1 < ys[1]; i1++) {
                        for (int64_t i2 = 0; i2 < ys[2]; i2++) {
                            for (int64_t i3 = 0; i3 < ys[3]; i3++) {
                                wy[o++] = x[i0 * xs[p0] + i1 * xs[p1] + i2 * xs[p2] + i3 * xs[p3]];
                            }
                        }
                    }
                }
                kcpu_permute(4, shape, perm, x, y);
                char what[64];
                snprintf(what, sizeof what, "permute %d%d%d%d", p0, p1, p2, p3);
                check_arr(what, y, wy, nx, 0, 0);
                perms++;
            }
        }
    }
    CHECK(perms == 24, "[%s] permutations tried: %d", isa_tag, perms);
    free(x), free(y), free(wy);

    /* copy2d: a 5 x 13 block between strided buffers, copy then accumulate. */
    float *src = test_fill_rand(falloc(5 * 20), 100, -1, 1);
    float *dst = test_fill_rand(falloc(5 * 17), 85, -1, 1);
    double wc[85];
    for (int i = 0; i < 85; i++) {
        wc[i] = dst[i];
    }
    for (int r = 0; r < 5; r++) {
        for (int c = 0; c < 13; c++) {
            wc[r * 17 + c] = src[r * 20 + c];
        }
    }
    kcpu_copy2d(5, 13, src, 20, dst, 17, false);
    check_arr("copy2d", dst, wc, 85, 0, 0);
    for (int r = 0; r < 5; r++) {
        for (int c = 0; c < 13; c++) {
            wc[r * 17 + c] += src[r * 20 + c];
        }
    }
    kcpu_copy2d(5, 13, src, 20, dst, 17, true);
    check_arr("copy2d accumulate", dst, wc, 85, 1e-7, 1e-7);
    free(src), free(dst);
}

/* --------------------------------------------------------------- f16 */

static uint32_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bitsf(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* bfloat16: the dispatching conversion (AVX-512 integer variant where
** active) against the scalar definition (kcpu_bf16_of) on special values
** and random bit patterns, the definition against exact values (ties to
** even, subnormal inputs to signed zero, NaN quiet with its sign), and the
** pair layout of kcpu_f32_to_bf16_pairs. */
static void test_bf16(void) {
    static const struct {
        uint32_t f;
        uint16_t h;
    } cases[] = {
        {0x3f800000u, 0x3f80}, /* 1 */
        {0x3f808000u, 0x3f80}, /* 1 + 2^-8: a tie, to even */
        {0x3f818000u, 0x3f82}, /* 1 + 3 2^-8: a tie, to even (up) */
        {0x3f808001u, 0x3f81}, /* just above the tie */
        {0x00400000u, 0x0000}, /* a subnormal: +0 */
        {0x80400000u, 0x8000}, /* a negative subnormal: -0 */
        {0x7f800000u, 0x7f80}, /* +inf */
        {0x7f7fffffu, 0x7f80}, /* the largest float rounds to inf */
        {0x7f800001u, 0x7fc0}, /* a signalling NaN, quieted */
        {0xffc12345u, 0xffc1}, /* a negative quiet NaN keeps its top payload */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        float x = bitsf(cases[i].f);
        uint16_t h = 0;
        kcpu_f32_to_bf16(1, &x, &h);
        CHECK(h == cases[i].h && kcpu_bf16_of(x) == cases[i].h,
              "[%s] f32_to_bf16(0x%08x) = 0x%04x, definition 0x%04x, want 0x%04x", isa_tag,
              cases[i].f, h, kcpu_bf16_of(x), cases[i].h);
    }
    int64_t n = (1 << 16) + 7;
    float *x = falloc(2 * n), *back = falloc(n);
    for (int64_t i = 0; i < 2 * n; i++)
        x[i] = bitsf((uint32_t)(test_rng_next() >> 32));
    uint16_t *y = malloc((size_t)n * sizeof *y);
    uint32_t *p = malloc((size_t)n * sizeof *p);
    kcpu_f32_to_bf16(n, x, y);
    kcpu_bf16_to_f32(n, y, back);
    int bad = 0, bad_near = 0;
    for (int64_t i = 0; i < n; i++) {
        bad += y[i] != kcpu_bf16_of(x[i]);
        if (!isfinite(x[i]) || fabsf(x[i]) < 1.1754944e-38f || fabsf(x[i]) > 3.38e38f) continue;
        /* nearest: within half a unit of the last place (2^-8 of the exponent) */
        int e;
        frexpf(x[i], &e);
        bad_near += fabs((double)back[i] - (double)x[i]) > ldexp(1.0, e - 9);
    }
    CHECK(bad == 0, "[%s] f32_to_bf16 vs kcpu_bf16_of: %d differ", isa_tag, bad);
    CHECK(bad_near == 0, "[%s] bfloat16 farther than half a unit: %d", isa_tag, bad_near);
    /* pairs: 3 row pairs of (n / 3) */
    int64_t len = n / 3;
    kcpu_f32_to_bf16_pairs(3, len, x, p);
    bad = 0;
    for (int64_t r = 0; r < 3; r++)
        for (int64_t i = 0; i < len; i++) {
            uint32_t want = kcpu_bf16_of(x[2 * r * len + i]) |
                            (uint32_t)kcpu_bf16_of(x[(2 * r + 1) * len + i]) << 16;
            bad += p[r * len + i] != want;
        }
    CHECK(bad == 0, "[%s] f32_to_bf16_pairs: %d differ", isa_tag, bad);
    free(x);
    free(back);
    free(y);
    free(p);
}

static void test_f16(void) {
    /* Hand-picked values: rounding to nearest even, overflow, subnormals. */
    struct {
        float f;
        uint16_t h;
    } cases[] = {
        {0.0f, 0x0000},
        {-0.0f, 0x8000},
        {1.0f, 0x3c00},
        {-2.0f, 0xc000},
        {65504.0f, 0x7bff},
        {65519.0f, 0x7bff},
        {65520.0f, 0x7c00}, /* rounds up to infinity */
        {1e10f, 0x7c00},
        {-1e10f, 0xfc00},
        {INFINITY, 0x7c00},
        {-INFINITY, 0xfc00},
        {1.0f + 0x1p-11f, 0x3c00},             /* tie -> even (down) */
        {1.0f + 3 * 0x1p-11f, 0x3c02},         /* tie -> even (up) */
        {1.0f + 0x1p-11f + 0x1p-20f, 0x3c01},  /* above tie */
        {0x1p-14f, 0x0400},                    /* smallest normal */
        {0x1p-24f, 0x0001},                    /* smallest subnormal */
        {0x1p-25f, 0x0000},                    /* tie -> even (0) */
        {0x1p-25f + 0x1p-40f, 0x0001},
        {3 * 0x1p-25f, 0x0002},                /* tie -> even (2) */
        {5 * 0x1p-25f, 0x0002},                /* tie -> even (2) */
        {0x1p-14f - 0x1p-25f, 0x0400},         /* rounds up into the normals */
        {1023 * 0x1p-24f, 0x03ff},
        {-1023 * 0x1p-24f, 0x83ff},
        {1e-10f, 0x0000},
        {0.1f, 0x2e66},
        {3.14159265f, 0x4248},
    };
    int nc = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < nc; i++) {
        uint16_t h;
        kcpu_f32_to_f16(1, &cases[i].f, &h);
        CHECK(h == cases[i].h, "[%s] f32_to_f16(%a) = 0x%04x want 0x%04x", isa_tag, cases[i].f, h,
              cases[i].h);
        kcpu_f32_to_f16_ref(1, &cases[i].f, &h);
        CHECK(h == cases[i].h, "[%s] f32_to_f16_ref(%a) = 0x%04x want 0x%04x", isa_tag,
              cases[i].f, h, cases[i].h);
    }
    /* All 65536 halfs: to f32 (exact) and back (identity except NaN stays NaN). */
    uint16_t *h = malloc(65536 * sizeof *h), *h2 = malloc(65536 * sizeof *h2);
    float *f = falloc(65536), *fr = falloc(65536);
    for (int i = 0; i < 65536; i++) {
        h[i] = (uint16_t)i;
    }
    kcpu_f16_to_f32(65536, h, f);
    kcpu_f16_to_f32_ref(65536, h, fr);
    int bad = 0, bad_rt = 0, bad_val = 0;
    for (int i = 0; i < 65536; i++) {
        bad += fbits(f[i]) != fbits(fr[i]);
        int e = (i >> 10) & 31, m = i & 1023;
        double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
        v = (i & 0x8000) ? -v : v;
        bad_val += isnan(v) ? !isnan(fr[i]) : (double)fr[i] != v || !signbit(fr[i]) != !signbit(v);
    }
    CHECK(bad == 0, "[%s] f16_to_f32 fast vs ref: %d differ", isa_tag, bad);
    CHECK(bad_val == 0, "[%s] f16_to_f32_ref vs formula: %d differ", isa_tag, bad_val);
    kcpu_f32_to_f16(65536, f, h2);
    for (int i = 0; i < 65536; i++) {
        bool nan = ((i >> 10) & 31) == 31 && (i & 1023);
        bad_rt += nan ? !(((h2[i] >> 10) & 31) == 31 && (h2[i] & 1023)) : h2[i] != h[i];
    }
    CHECK(bad_rt == 0, "[%s] f16 -> f32 -> f16 roundtrip: %d differ", isa_tag, bad_rt);
    /* Random f32 bit patterns (NaN payloads included): fast == ref bit for bit,
    ** and ref is the nearest half with ties to even (checked in double). */
    int64_t n = 1 << 20;
    float *x = falloc(n);
    for (int64_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)(test_rng_next() >> 32);
        if (i % 2) {
            /* Concentrate on the binary16 range. */
            u = (u & 0x80000000u) | (0x33000000u + (u & 0x0fffffffu) % 0x15000000u);
        }
        x[i] = bitsf(u);
    }
    uint16_t *y = malloc((size_t)n * sizeof *y), *yr = malloc((size_t)n * sizeof *yr);
    kcpu_f32_to_f16(n, x, y);
    kcpu_f32_to_f16_ref(n, x, yr);
    bad = 0, bad_val = 0;
    for (int64_t i = 0; i < n; i++) {
        bad += y[i] != yr[i];
        if (isnan(x[i]) || fabsf(x[i]) >= 65520.0f) {
            continue;
        }
        float back;
        kcpu_f16_to_f32_ref(1, &yr[i], &back);
        /* Neighbours of the result must not be strictly closer; ties -> even. */
        double d0 = fabs((double)back - x[i]);
        for (int s = -1; s <= 1; s += 2) {
            uint16_t hn = (uint16_t)(yr[i] + s);
            if ((yr[i] & 0x7fff) == 0 && s < 0) {
                continue;
            }
            float nb;
            kcpu_f16_to_f32_ref(1, &hn, &nb);
            double d1 = fabs((double)nb - x[i]);
            if (d1 < d0 || (d1 == d0 && (yr[i] & 1))) {
                bad_val++;
            }
        }
    }
    CHECK(bad == 0, "[%s] f32_to_f16 fast vs ref on random bits: %d differ", isa_tag, bad);
    CHECK(bad_val == 0, "[%s] f32_to_f16_ref not nearest-even: %d", isa_tag, bad_val);
    for (int s = 0; s < NSIZES; s++) {
        int64_t m = sizes[s];
        kcpu_f32_to_f16(m, x, y);
        kcpu_f32_to_f16_ref(m, x, yr);
        CHECK(memcmp(y, yr, (size_t)m * 2) == 0, "[%s] f32_to_f16 n=%lld", isa_tag, (long long)m);
        kcpu_f16_to_f32(m, yr, f);
        kcpu_f16_to_f32_ref(m, yr, fr);
        CHECK(memcmp(f, fr, (size_t)m * 4) == 0, "[%s] f16_to_f32 n=%lld", isa_tag, (long long)m);
    }
    free(h), free(h2), free(f), free(fr), free(x), free(y), free(yr);
}

/* -------------------------------------------------------------- optimizer */

static void test_adam(void) {
    for (int s = 0; s < NSIZES; s++) {
        int64_t n = sizes[s];
        float *w = test_fill_rand(falloc(n), n, -1, 1), *g = test_fill_rand(falloc(n), n, -1, 1);
        float *m = test_fill_rand(falloc(n), n, -0.1f, 0.1f);
        float *v = test_fill_rand(falloc(n), n, 0, 0.01f);
        double *ww = malloc((size_t)n * sizeof *ww), *wm = malloc((size_t)n * sizeof *wm),
               *wv = malloc((size_t)n * sizeof *wv);
        const float lr = 1e-3f, b1 = 0.9f, b2 = 0.98f, eps = 1e-9f, wd = 0.01f;
        const int t = 7;
        float c1 = 1.0f - powf(b1, t), c2 = 1.0f - powf(b2, t);
        for (int64_t i = 0; i < n; i++) {
            double mi = (double)b1 * m[i] + (1.0 - b1) * g[i];
            double vi = (double)b2 * v[i] + (1.0 - b2) * (double)g[i] * g[i];
            wm[i] = mi, wv[i] = vi;
            ww[i] = w[i] - lr * ((mi / c1) / (sqrt(vi / c2) + eps) + wd * w[i]);
        }
        float *wr = fdup(w, n), *mr = fdup(m, n), *vr = fdup(v, n);
        kcpu_adam_f32(n, w, g, m, v, lr, b1, b2, eps, wd, c1, c2);
        kcpu_adam_f32_ref(n, wr, g, mr, vr, lr, b1, b2, eps, wd, c1, c2);
        check_arr("adam w", w, ww, n, 1e-8, 1e-6);
        check_arr("adam m", m, wm, n, 1e-8, 1e-6);
        check_arr("adam v", v, wv, n, 1e-10, 1e-5);
        check_arr("adam_ref w", wr, ww, n, 1e-8, 1e-6);
        check_arr("adam_ref m", mr, wm, n, 1e-8, 1e-6);
        check_arr("adam_ref v", vr, wv, n, 1e-10, 1e-5);
        /* smooth and sumsq. */
        float *sm = test_fill_rand(falloc(n), n, -1, 1);
        double *ws = malloc((size_t)n * sizeof *ws), ssq = 0;
        for (int64_t i = 0; i < n; i++) {
            ws[i] = 0.9 * sm[i] + 0.1 * (double)w[i];
            ssq += (double)g[i] * g[i];
        }
        kcpu_smooth_f32(n, w, sm, 0.9f);
        check_arr("smooth", sm, ws, n, 1e-7, 1e-6);
        double got = kcpu_sumsq_f32(n, g);
        CHECK(fabs(got - ssq) <= 1e-12 * ssq, "[%s] sumsq n=%lld: %.17g want %.17g", isa_tag,
              (long long)n, got, ssq);
        free(w), free(g), free(m), free(v), free(ww), free(wm), free(wv), free(wr), free(mr),
            free(vr), free(sm), free(ws);
    }
}

/* ------------------------------------------------- tails, masked rows */

/* Every length 1..40 (each tail of the 8- and 16-lane variants, with zero to
** two full vectors before it) through the dispatched row kernels against
** their references.  Inputs are allocated to their exact size (ASan sees a
** read past the end); outputs carry GUARD elements after the last row that
** must stay untouched. */
enum { GUARD = 8 };
#define GUARD_VAL -12345.5f

static float *galloc(int64_t n) {
    float *p = falloc(n + GUARD);
    for (int64_t i = n; i < n + GUARD; i++) {
        p[i] = GUARD_VAL;
    }
    return p;
}

static void check_guard(const char *what, const float *p, int64_t n) {
    int bad = 0;
    for (int64_t i = n; i < n + GUARD; i++) {
        bad += p[i] != GUARD_VAL;
    }
    CHECK(bad == 0, "[%s] %s: %d guard elements after %lld overwritten", isa_tag, what, bad,
          (long long)n);
}

/* check_arrf of an output that has guard elements after it, and check_guard. */
static void check_guarded(const char *what, const float *got, const float *want, int64_t n,
                          double atol, double rtol) {
    check_arrf(what, got, want, n, atol, rtol);
    check_guard(what, got, n);
}

static float *grand(int64_t n, float lo, float hi) { return test_fill_rand(galloc(n), n, lo, hi); }

static float *gdup(const float *x, int64_t n) {
    float *p = galloc(n);
    memcpy(p, x, (size_t)n * sizeof *p);
    return p;
}

static void tails_unary(int64_t n) {
    const float alpha = -1.3f;
    char what[96];
    for (int op = 0; op < KCPU_UNARY_COUNT; op++) {
        float lo, hi;
        unary_domain((kcpu_unary)op, &lo, &hi);
        float *x = test_fill_rand(falloc(n), n, lo, hi), *yr = falloc(n), *y = galloc(n);
        kcpu_unary_fwd((kcpu_unary)op, n, alpha, x, y);
        kcpu_unary_fwd_ref((kcpu_unary)op, n, alpha, x, yr);
        snprintf(what, sizeof what, "tail unary fwd %s n=%lld", unary_names[op], (long long)n);
        check_guarded(what, y, yr, n, 1e-37, 3e-7);
        float *dy = test_fill_rand(falloc(n), n, -1, 1), *dx = grand(n, -1, 1);
        float *dxr = gdup(dx, n), *dxn = gdup(dx, n);
        kcpu_unary_bwd((kcpu_unary)op, n, alpha, x, yr, dy, dx);
        kcpu_unary_bwd((kcpu_unary)op, n, alpha, x, NULL, dy, dxn);
        kcpu_unary_bwd_ref((kcpu_unary)op, n, alpha, x, yr, dy, dxr);
        snprintf(what, sizeof what, "tail unary bwd %s n=%lld", unary_names[op], (long long)n);
        check_guarded(what, dx, dxr, n, 1e-6, 1e-5);
        check_guarded(what, dxn, dxr, n, 1e-6, 1e-5);
        free(x), free(yr), free(y), free(dy), free(dx), free(dxr), free(dxn);
    }
}

/* One row of n: a and b contiguous or broadcast (inner stride 0). */
static void tails_binary(int64_t n) {
    char what[96];
    for (int op = 0; op < KCPU_BINARY_COUNT; op++) {
        for (int pat = 0; pat < 3; pat++) {
            int64_t ia = pat == 1 ? 0 : 1, ib = pat == 2 ? 0 : 1;
            int64_t na = ia ? n : 1, nb = ib ? n : 1, shape[1] = {n};
            float *a = test_fill_rand(falloc(na), na, -2, 2);
            float *b = test_fill_rand(falloc(nb), nb, 0.5f, 2);
            float *y = galloc(n), *dy = test_fill_rand(falloc(n), n, -1, 1);
            float *da = grand(na, -1, 1), *db = grand(nb, -1, 1);
            double *w = malloc((size_t)n * sizeof *w), *wa = malloc((size_t)na * sizeof *wa),
                   *wb = malloc((size_t)nb * sizeof *wb);
            for (int64_t i = 0; i < na; i++) {
                wa[i] = da[i];
            }
            for (int64_t i = 0; i < nb; i++) {
                wb[i] = db[i];
            }
            for (int64_t i = 0; i < n; i++) {
                double av = a[i * ia], bv = b[i * ib], g = dy[i];
                switch (op) {
                case KCPU_ADD: w[i] = av + bv, wa[i * ia] += g, wb[i * ib] += g; break;
                case KCPU_SUB: w[i] = av - bv, wa[i * ia] += g, wb[i * ib] -= g; break;
                case KCPU_MUL: w[i] = av * bv, wa[i * ia] += g * bv, wb[i * ib] += g * av; break;
                default:
                    w[i] = av / bv, wa[i * ia] += g / bv, wb[i * ib] -= g * av / (bv * bv);
                    break;
                }
            }
            int64_t sa[1] = {ia}, sb[1] = {ib};
            kcpu_binary_fwd((kcpu_binary)op, 1, shape, sa, a, sb, b, y);
            snprintf(what, sizeof what, "tail binary fwd op=%d n=%lld pat=%d", op, (long long)n,
                     pat);
            check_arr(what, y, w, n, 1e-7, 3e-7);
            check_guard(what, y, n);
            kcpu_binary_bwd((kcpu_binary)op, 1, shape, sa, a, sb, b, dy, da, db);
            snprintf(what, sizeof what, "tail binary bwd da op=%d n=%lld pat=%d", op, (long long)n,
                     pat);
            check_arr(what, da, wa, na, 1e-5, 1e-5);
            check_guard(what, da, na);
            snprintf(what, sizeof what, "tail binary bwd db op=%d n=%lld pat=%d", op, (long long)n,
                     pat);
            check_arr(what, db, wb, nb, 1e-5, 1e-5);
            check_guard(what, db, nb);
            free(a), free(b), free(y), free(dy), free(da), free(db), free(w), free(wa), free(wb);
        }
    }
}

static void tails_softmax(int64_t cols) {
    const int64_t rows = 2;
    int64_t n = rows * cols;
    char what[96];
    float *x = test_fill_rand(falloc(n), n, -5, 5), *yr = falloc(n), *lyr = falloc(n);
    float *y = galloc(n), *ly = galloc(n);
    kcpu_softmax_fwd(rows, cols, x, y);
    kcpu_softmax_fwd_ref(rows, cols, x, yr);
    snprintf(what, sizeof what, "tail softmax fwd cols=%lld", (long long)cols);
    check_guarded(what, y, yr, n, 1e-9, 2e-6);
    kcpu_log_softmax_fwd(rows, cols, x, ly);
    kcpu_log_softmax_fwd_ref(rows, cols, x, lyr);
    snprintf(what, sizeof what, "tail log_softmax fwd cols=%lld", (long long)cols);
    check_guarded(what, ly, lyr, n, 2e-6, 2e-6);
    float *dy = test_fill_rand(falloc(n), n, -1, 1), *dx = grand(n, -1, 1), *dxr = gdup(dx, n);
    float *dxl = gdup(dx, n), *dxlr = gdup(dx, n), *dxx = gdup(dx, n), *dxxr = gdup(dx, n);
    kcpu_softmax_bwd(rows, cols, yr, dy, dx);
    kcpu_softmax_bwd_ref(rows, cols, yr, dy, dxr);
    snprintf(what, sizeof what, "tail softmax bwd cols=%lld", (long long)cols);
    check_guarded(what, dx, dxr, n, 1e-5, 1e-5);
    kcpu_log_softmax_bwd(rows, cols, lyr, dy, dxl);
    kcpu_log_softmax_bwd_ref(rows, cols, lyr, dy, dxlr);
    snprintf(what, sizeof what, "tail log_softmax bwd cols=%lld", (long long)cols);
    check_guarded(what, dxl, dxlr, n, 1e-5, 1e-5);
    int32_t labels[2] = {(int32_t)(cols - 1), 0};
    float dloss[2] = {0.75f, -1.5f};
    kcpu_xent_bwd(rows, cols, lyr, labels, 0.1f, dloss, dxx);
    kcpu_xent_bwd_ref(rows, cols, lyr, labels, 0.1f, dloss, dxxr);
    snprintf(what, sizeof what, "tail xent bwd cols=%lld", (long long)cols);
    check_guarded(what, dxx, dxxr, n, 1e-5, 1e-5);
    free(x), free(yr), free(lyr), free(y), free(ly), free(dy), free(dx), free(dxr), free(dxl),
        free(dxlr), free(dxx), free(dxxr);
}

static void tails_layernorm(int64_t cols) {
    const int64_t rows = 2;
    int64_t n = rows * cols;
    char what[96];
    float *x = test_fill_rand(falloc(n), n, -2, 3);
    float *g = test_fill_rand(falloc(cols), cols, 0.5f, 1.5f);
    float *b = test_fill_rand(falloc(cols), cols, -1, 1);
    float *y = galloc(n), *yr = falloc(n), mean[2], rstd[2], meanr[2], rstdr[2];
    kcpu_layernorm_fwd(rows, cols, x, g, b, 1e-5f, y, mean, rstd);
    kcpu_layernorm_fwd_ref(rows, cols, x, g, b, 1e-5f, yr, meanr, rstdr);
    snprintf(what, sizeof what, "tail layernorm fwd cols=%lld", (long long)cols);
    check_guarded(what, y, yr, n, 2e-5, 2e-5);
    check_arrf("tail layernorm mean", mean, meanr, rows, 1e-6, 1e-5);
    check_arrf("tail layernorm rstd", rstd, rstdr, rows, 1e-6, 1e-5);
    float *dy = test_fill_rand(falloc(n), n, -1, 1), *dx = grand(n, -1, 1), *dxr = gdup(dx, n);
    float *dg = grand(cols, -1, 1), *dgr = gdup(dg, cols), *db = gdup(dg, cols),
          *dbr = gdup(dg, cols);
    kcpu_layernorm_bwd(rows, cols, x, g, meanr, rstdr, dy, dx, dg, db);
    kcpu_layernorm_bwd_ref(rows, cols, x, g, meanr, rstdr, dy, dxr, dgr, dbr);
    snprintf(what, sizeof what, "tail layernorm bwd dx cols=%lld", (long long)cols);
    check_guarded(what, dx, dxr, n, 1e-4, 1e-4);
    snprintf(what, sizeof what, "tail layernorm bwd dgamma cols=%lld", (long long)cols);
    check_guarded(what, dg, dgr, cols, 1e-5, 1e-5);
    snprintf(what, sizeof what, "tail layernorm bwd dbeta cols=%lld", (long long)cols);
    check_guarded(what, db, dbr, cols, 1e-5, 1e-5);
    free(x), free(g), free(b), free(y), free(yr), free(dy), free(dx), free(dxr), free(dg),
        free(dgr), free(db), free(dbr);
}

/* Rows with masked (-inf) entries, an all -inf row and a row with a NaN:
** the dispatched kernels give what the references give (softmax 0 and
** log-softmax -inf where masked; NaN for the whole row when every entry is
** -inf or one is NaN). */
static void test_softmax_masked(void) {
    const int64_t rows = 4, cols = 21, n = rows * cols;
    float *x = test_fill_rand(falloc(n), n, -4, 4);
    for (int64_t i = 0; i < cols; i += 3) {
        x[i] = -INFINITY; /* row 0: columns 0, 3, ..., 18 */
    }
    x[cols - 1] = -INFINITY;
    for (int64_t i = cols; i < 2 * cols; i++) {
        x[i] = -INFINITY; /* row 1 */
    }
    x[2 * cols + 17] = NAN; /* row 2; row 3 stays finite */
    float *y = galloc(n), *yr = falloc(n), *ly = galloc(n), *lyr = falloc(n);
    kcpu_softmax_fwd(rows, cols, x, y);
    kcpu_softmax_fwd_ref(rows, cols, x, yr);
    check_arrf("softmax fwd masked rows", y, yr, n, 1e-9, 2e-6);
    check_guard("softmax fwd masked rows", y, n);
    kcpu_log_softmax_fwd(rows, cols, x, ly);
    kcpu_log_softmax_fwd_ref(rows, cols, x, lyr);
    check_arrf("log_softmax fwd masked rows", ly, lyr, n, 2e-6, 2e-6);
    check_guard("log_softmax fwd masked rows", ly, n);
    int zeros = 0;
    for (int64_t i = 0; i < cols; i++) {
        zeros += isinf(x[i]) ? y[i] == 0.0f && ly[i] == -INFINITY : 0;
    }
    CHECK(zeros == 8, "[%s] masked entries: %d of 8 give softmax 0, log-softmax -inf", isa_tag,
          zeros);
    /* Backward over the finite rows 0 and 3 (log-probs -inf where masked). */
    float *dy = test_fill_rand(falloc(n), n, -1, 1), *dx = grand(n, -1, 1), *dxr = gdup(dx, n);
    float *dxx = gdup(dx, n), *dxxr = gdup(dx, n);
    float *lr = falloc(2 * cols), *dy2 = falloc(2 * cols);
    memcpy(lr, lyr, (size_t)cols * sizeof *lr);
    memcpy(lr + cols, lyr + 3 * cols, (size_t)cols * sizeof *lr);
    memcpy(dy2, dy, (size_t)(2 * cols) * sizeof *dy2);
    kcpu_log_softmax_bwd(2, cols, lr, dy2, dx);
    kcpu_log_softmax_bwd_ref(2, cols, lr, dy2, dxr);
    check_arrf("log_softmax bwd masked rows", dx, dxr, 2 * cols, 1e-5, 1e-5);
    check_guard("log_softmax bwd masked rows", dx, n);
    int32_t labels[2] = {1, 19};
    float dloss[2] = {1.0f, 0.5f};
    kcpu_xent_bwd(2, cols, lr, labels, 0.1f, dloss, dxx);
    kcpu_xent_bwd_ref(2, cols, lr, labels, 0.1f, dloss, dxxr);
    check_arrf("xent bwd masked rows", dxx, dxxr, 2 * cols, 1e-5, 1e-5);
    free(x), free(y), free(yr), free(ly), free(lyr), free(dy), free(dx), free(dxr), free(dxx),
        free(dxxr), free(lr), free(dy2);
}

static void test_tails(void) {
    for (int64_t n = 1; n <= 40; n++) {
        tails_unary(n);
        tails_binary(n);
        tails_softmax(n);
        if (n >= 2) {
            tails_layernorm(n);
        }
    }
    test_softmax_masked();
}

/* Kernels whose AVX2 variant no dispatcher of these files calls (Adam:
** adam.c), run directly when the CPU has AVX2. */
static void test_avx2_direct(void) {
    if (kcpu_isa_detect() < KCPU_ISA_AVX2) {
        return;
    }
    isa_tag = "avx2 direct";
    for (int64_t n = 1; n <= 4001; n = n < 40 ? n + 1 : n * 5) {
        float *w = grand(n, -1, 1), *g = test_fill_rand(falloc(n), n, -1, 1);
        float *m = grand(n, -0.1f, 0.1f), *v = grand(n, 0, 0.01f);
        float *wr = gdup(w, n), *mr = gdup(m, n), *vr = gdup(v, n);
        const float c1 = 1.0f - powf(0.9f, 7), c2 = 1.0f - powf(0.98f, 7);
        kcpu_adam_f32_avx2(n, w, g, m, v, 1e-3f, 0.9f, 0.98f, 1e-9f, 0.01f, c1, c2);
        kcpu_adam_f32_ref(n, wr, g, mr, vr, 1e-3f, 0.9f, 0.98f, 1e-9f, 0.01f, c1, c2);
        char what[64];
        snprintf(what, sizeof what, "adam_avx2 w n=%lld", (long long)n);
        check_guarded(what, w, wr, n, 1e-8, 1e-6);
        snprintf(what, sizeof what, "adam_avx2 m n=%lld", (long long)n);
        check_guarded(what, m, mr, n, 1e-8, 1e-6);
        snprintf(what, sizeof what, "adam_avx2 v n=%lld", (long long)n);
        check_guarded(what, v, vr, n, 1e-10, 1e-5);
        free(w), free(g), free(m), free(v), free(wr), free(mr), free(vr);
    }
}

/* ---------------------------------------------------------- ISA plumbing */

static void test_isa(void) {
    kcpu_isa best = kcpu_isa_detect();
    CHECK(best >= KCPU_ISA_REF && best <= KCPU_ISA_AVX512, "isa %d", (int)best);
    CHECK(strcmp(kcpu_isa_name(KCPU_ISA_AVX2), "avx2") == 0, "isa name");
    kcpu_isa old = kcpu_isa_force(KCPU_ISA_REF);
    CHECK(kcpu_isa_active() == KCPU_ISA_REF, "force ref -> active %d", (int)kcpu_isa_active());
    CHECK(kcpu_isa_detect() == best, "detect unaffected by force");
    kcpu_isa_force(old);
    CHECK(kcpu_isa_active() == best, "restore -> active %d", (int)kcpu_isa_active());
    fprintf(stderr, "isa: %s, vnni: %d, OpenBLAS core: %s, needs re-exec: %d\n",
            kcpu_isa_name(best), kcpu_cpu_has_avx512_vnni(), kcpu_blas_corename(),
            kcpu_blas_needs_reexec());
}

int main(void) {
    kcpu_blas_set_threads(1);
    test_isa();
    kcpu_isa best = kcpu_isa_detect();
    for (int lvl = KCPU_ISA_REF; lvl <= (int)best; lvl++) {
        kcpu_isa_force((kcpu_isa)lvl);
        isa_tag = kcpu_isa_name((kcpu_isa)lvl);
        int before = th_failures;
        test_rng_seed(TEST_RNG_DEFAULT_SEED);
        test_gemm();
        test_unary();
        test_binary();
        test_helpers();
        test_softmax();
        test_xent();
        test_layernorm();
        test_reduce();
        test_movement();
        test_f16();
        test_bf16();
        test_adam();
        test_tails();
        test_add_layernorm(); /* last: the others keep their random draws */
        fprintf(stderr, "isa %s: %d failures\n", isa_tag, th_failures - before);
    }
    test_avx2_direct();
    kcpu_isa_force(KCPU_ISA_AVX512);
    TEST_MAIN_END();
}
