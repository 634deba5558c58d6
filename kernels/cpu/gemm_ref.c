/*
** gemm_ref.c: plain reference fp32 GEMM (the test oracle for the own
** small-M kernel and for the OpenBLAS glue).  Accumulates in double.
*/
#include "kcpu_impl.h"

/* Scales C by beta; beta == 0 overwrites (C may hold NaN or garbage). */
static void scale_c(int64_t m, int64_t n, float beta, float *c, int64_t ldc) {
    for (int64_t i = 0; i < m; i++) {
        float *ci = c + i * ldc;
        for (int64_t j = 0; j < n; j++) {
            ci[j] = beta == 0.0f ? 0.0f : beta * ci[j];
        }
    }
}

void kcpu_gemm_f32_ref(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                       const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                       float *c, int64_t ldc) {
    if (m <= 0 || n <= 0) {
        return;
    }
    if (k <= 0 || alpha == 0.0f) {
        scale_c(m, n, beta, c, ldc);
        return;
    }
    /* Element (i, p) of op(A) is a[i * ars + p * acs]; (p, j) of op(B) is
    ** b[p * brs + j * bcs]. */
    int64_t ars = ta ? 1 : lda, acs = ta ? lda : 1;
    int64_t brs = tb ? 1 : ldb, bcs = tb ? ldb : 1;
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0;
            for (int64_t p = 0; p < k; p++) {
                s += (double)a[i * ars + p * acs] * (double)b[p * brs + j * bcs];
            }
            float *cij = c + i * ldc + j;
            float r = alpha * (float)s;
            *cij = beta == 0.0f ? r : r + beta * *cij;
        }
    }
}
