/*
** blas.c: fp32 GEMM glue over OpenBLAS (cblas, row-major), the dispatching
** entry kcpu_gemm_f32 (own AVX-512 kernel for small m), and strided batches.
*/
#include "kcpu.h"

#include <cblas.h>

/* OpenBLAS extension (cblas.h of openblas declares it too). */
void openblas_set_num_threads(int num_threads);

void kcpu_blas_set_threads(int n) {
    openblas_set_num_threads(n < 1 ? 1 : n);
}

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

void kcpu_gemm_f32(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                   float *c, int64_t ldc) {
#ifdef MT_HAVE_AVX512_BUILD
    if (!ta && m <= KCPU_SMALL_M && kcpu_isa_active() >= KCPU_ISA_AVX512) {
        kcpu_gemm_f32_small_avx512(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
#endif
    kcpu_gemm_f32_blas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void kcpu_gemm_f32_small(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                         float *c, int64_t ldc) {
#ifdef MT_HAVE_AVX512_BUILD
    if (kcpu_isa_active() >= KCPU_ISA_AVX512) {
        kcpu_gemm_f32_small_avx512(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
#endif
    kcpu_gemm_f32_ref(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void kcpu_gemm_f32_batched(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                           const float *a, int64_t lda, int64_t sa, const float *b, int64_t ldb,
                           int64_t sb, float beta, float *c, int64_t ldc, int64_t sc,
                           int64_t batch) {
#ifdef MT_HAVE_AVX512_BUILD
    /* Many small products (attention per sentence and head: T x d/h x T):
    ** OpenBLAS's per-call cost outweighs the product, the own kernel has none. */
    if (!ta && m * n * k <= KCPU_BATCHED_SMALL && kcpu_isa_active() >= KCPU_ISA_AVX512) {
        for (int64_t i = 0; i < batch; i++)
            kcpu_gemm_f32_small_avx512(ta, tb, m, n, k, alpha, a + i * sa, lda, b + i * sb, ldb,
                                       beta, c + i * sc, ldc);
        return;
    }
#endif
    for (int64_t i = 0; i < batch; i++) {
        kcpu_gemm_f32(ta, tb, m, n, k, alpha, a + i * sa, lda, b + i * sb, ldb, beta, c + i * sc,
                      ldc);
    }
}
