/*
** blas.c: fp32 GEMM glue over OpenBLAS (cblas, row-major), the dispatching
** entry kcpu_gemm_f32 (own AVX-512 or AVX2 kernel for small m), and strided
** batches.
*/
#include "kcpu_impl.h"

#include <cblas.h>
#include <stdatomic.h>

/* OpenBLAS extensions (cblas.h of openblas declares them too). */
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);

void kcpu_blas_set_threads(int n) {
    openblas_set_num_threads(n < 1 ? 1 : n);
}

int kcpu_blas_threads(void) {
    int n = openblas_get_num_threads();
    return n < 1 ? 1 : n;
}

static _Atomic int own_threads;

void kcpu_set_own_threads(int n) { own_threads = n < 0 ? 0 : n; }
int kcpu_own_threads(void) { return own_threads; }

static void scale_c(int64_t m, int64_t n, float beta, float *c, int64_t ldc) {
    for (int64_t i = 0; i < m; i++) {
        float *ci = c + i * ldc;
        for (int64_t j = 0; j < n; j++) {
            ci[j] = beta == 0.0f ? 0.0f : beta * ci[j];
        }
    }
}

static int64_t max1(int64_t v) {
    return v < 1 ? 1 : v;
}

void kcpu_gemm_f32_blas(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                        const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                        float *c, int64_t ldc) {
    if (m <= 0 || n <= 0) {
        return;
    }
    if (k <= 0) {
        scale_c(m, n, beta, c, ldc);
        return;
    }
    /* cblas rejects leading dimensions below the row length even where the
    ** stride is never used (a single row); raise them to the minimum. */
    int64_t min_lda = ta ? m : k, min_ldb = tb ? k : n;
    if ((ta ? k : m) == 1 && lda < min_lda) {
        lda = min_lda;
    }
    if ((tb ? n : k) == 1 && ldb < min_ldb) {
        ldb = min_ldb;
    }
    if (m == 1 && ldc < n) {
        ldc = n;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (blasint)m, (blasint)n, (blasint)k, alpha, a, (blasint)max1(lda), b,
                (blasint)max1(ldb), beta, c, (blasint)max1(ldc));
}

/* Own kernel for small m, where it beats OpenBLAS (see `mtpe bench gemm`). */
#define KCPU_SMALL_M 16
/* multiply-adds up to which a product of a batch takes the own kernel */
#define KCPU_BATCHED_SMALL ((int64_t)1 << 18)

/* The AVX2 kernel's limits, timed on an AMD EPYC (Zen 3 class, no
** AVX-512) against OpenBLAS 0.3.21 (Zen kernels), 1 thread, at n x k =
** 512x512, 2048x512, 512x2048, 1024x256, 32000x512: the most rows at which
** the own kernel was still at least as fast on average (B [k,n]: 16; B
** [n,k]: 24).  Batches: every product shape tried up to 2^21 multiply-adds
** (m, n, k from 8 to 512, both B layouts, and attention shapes T x T x
** 32/64, T x 32/64 x T up to T 200) ran faster own.  Above 2^18 OpenBLAS
** splits a product over its threads (interface/gemm.c), so the higher
** AVX2 limit applies only while it has a single thread. */
#define KCPU_SMALL_M_AVX2 16
#define KCPU_SMALL_M_AVX2_TB 24
#define KCPU_BATCHED_SMALL_AVX2 ((int64_t)1 << 18)
#define KCPU_BATCHED_SMALL_AVX2_1T ((int64_t)1 << 20)

/* The own small kernel of the active ISA, or NULL below AVX2. */
static kcpu_gemm_fn small_kernel(void) {
    kcpu_isa isa = kcpu_isa_active();
#ifdef MT_HAVE_AVX512_BUILD
    if (isa >= KCPU_ISA_AVX512) {
        return kcpu_gemm_f32_small_avx512;
    }
#endif
    return isa >= KCPU_ISA_AVX2 ? kcpu_gemm_f32_small_avx2 : NULL;
}

/* The limits of the own kernel `own` (NULL: 0, it takes nothing). */
static void limits_of(kcpu_gemm_fn own, bool tb, int64_t *max_m, int64_t *max_batched) {
    *max_m = *max_batched = 0;
    if (own == NULL) return;
    *max_m = KCPU_SMALL_M;
    *max_batched = KCPU_BATCHED_SMALL;
    if (own == kcpu_gemm_f32_small_avx2) {
        *max_m = tb ? KCPU_SMALL_M_AVX2_TB : KCPU_SMALL_M_AVX2;
        *max_batched =
            openblas_get_num_threads() == 1 ? KCPU_BATCHED_SMALL_AVX2_1T : KCPU_BATCHED_SMALL_AVX2;
    }
}

void kcpu_gemm_f32_small_limits(bool tb, int64_t *max_m, int64_t *max_batched) {
    limits_of(small_kernel(), tb, max_m, max_batched);
}

void kcpu_gemm_f32(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                   float *c, int64_t ldc) {
    kcpu_gemm_fn own = small_kernel();
    int64_t max_m, max_batched;
    limits_of(own, tb, &max_m, &max_batched);
    if (!ta && m <= max_m) {
        own(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    kcpu_gemm_f32_blas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void kcpu_gemm_f32_small(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                         float *c, int64_t ldc) {
    kcpu_gemm_fn own = small_kernel();
    (own ? own : kcpu_gemm_f32_ref)(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void kcpu_gemm_f32_batched(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                           const float *a, int64_t lda, int64_t sa, const float *b, int64_t ldb,
                           int64_t sb, float beta, float *c, int64_t ldc, int64_t sc,
                           int64_t batch) {
    /* Many small products (attention per sentence and head: T x d/h x T):
    ** OpenBLAS's per-call cost outweighs the product, the own kernel has none. */
    kcpu_gemm_fn own = small_kernel();
    int64_t max_m, max_batched;
    limits_of(own, tb, &max_m, &max_batched);
    if (!ta && m * n * k <= max_batched) {
        for (int64_t i = 0; i < batch; i++) {
            own(ta, tb, m, n, k, alpha, a + i * sa, lda, b + i * sb, ldb, beta, c + i * sc, ldc);
        }
        return;
    }
    for (int64_t i = 0; i < batch; i++) {
        kcpu_gemm_f32(ta, tb, m, n, k, alpha, a + i * sa, lda, b + i * sb, ldb, beta, c + i * sc,
                      ldc);
    }
}
