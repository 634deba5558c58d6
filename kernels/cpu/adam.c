/*
** adam.c: Adam/AdamW update, exponential smoothing of parameters, and the
** sum of squares for global gradient norms.
*/
#include "kcpu_impl.h"

#include <math.h>

void kcpu_adam_f32_ref(int64_t n, float *w, const float *g, float *m, float *v, float lr,
                       float b1, float b2, float eps, float wd, float c1, float c2) {
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i];
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        w[i] -= lr * ((mi / c1) / (sqrtf(vi / c2) + eps) + wd * w[i]);
    }
}

void kcpu_adam_f32(int64_t n, float *w, const float *g, float *m, float *v, float lr, float b1,
                   float b2, float eps, float wd, float c1, float c2) {
#ifdef MT_HAVE_AVX512_BUILD
    if (kcpu_isa_active() >= KCPU_ISA_AVX512) {
        kcpu_adam_f32_avx512(n, w, g, m, v, lr, b1, b2, eps, wd, c1, c2);
        return;
    }
#endif
    if (kcpu_isa_active() >= KCPU_ISA_AVX2) {
        kcpu_adam_f32_avx2(n, w, g, m, v, lr, b1, b2, eps, wd, c1, c2);
        return;
    }
    kcpu_adam_f32_ref(n, w, g, m, v, lr, b1, b2, eps, wd, c1, c2);
}

void kcpu_smooth_f32(int64_t n, const float *w, float *s, float beta) {
    float c = 1.0f - beta;
    for (int64_t i = 0; i < n; i++) {
        s[i] = beta * s[i] + c * w[i];
    }
}

double kcpu_sumsq_f32(int64_t n, const float *x) {
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        for (int u = 0; u < 4; u++) {
            acc[u] += (double)x[i + u] * x[i + u];
        }
    }
    for (; i < n; i++) {
        acc[0] += (double)x[i] * x[i];
    }
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}
