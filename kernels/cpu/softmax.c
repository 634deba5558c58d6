/*
** softmax.c: row-wise softmax, log-softmax and label-smoothed cross-entropy
** with their backward passes.  Scalar references here; AVX-512 and AVX2
** variants in elementwise_avx512.c / elementwise_avx2.c.
*/
#include "kcpu_impl.h"

#include <math.h>

/* The variant the dispatchers run: AVX-512 (when built), else AVX2. */
static kcpu_isa simd_level(void) {
    kcpu_isa isa = kcpu_isa_active();
#ifndef MT_HAVE_AVX512_BUILD
    isa = isa > KCPU_ISA_AVX2 ? KCPU_ISA_AVX2 : isa;
#endif
    return isa;
}

static float row_max_ref(int64_t n, const float *x) {
    float m = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        m = x[i] > m ? x[i] : m;
    }
    return m;
}

void kcpu_softmax_fwd_ref(int64_t rows, int64_t cols, const float *x, float *y) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mx = row_max_ref(cols, xr), sum = 0.0f;
        for (int64_t i = 0; i < cols; i++) {
            yr[i] = expf(xr[i] - mx);
            sum += yr[i];
        }
        float inv = 1.0f / sum;
        for (int64_t i = 0; i < cols; i++) {
            yr[i] *= inv;
        }
    }
}

void kcpu_log_softmax_fwd_ref(int64_t rows, int64_t cols, const float *x, float *y) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mx = row_max_ref(cols, xr), sum = 0.0f;
        for (int64_t i = 0; i < cols; i++) {
            sum += expf(xr[i] - mx);
        }
        float lse = logf(sum);
        for (int64_t i = 0; i < cols; i++) {
            yr[i] = (xr[i] - mx) - lse;
        }
    }
}

void kcpu_softmax_bwd_ref(int64_t rows, int64_t cols, const float *y, const float *dy,
                          float *dx) {
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * cols, *dyr = dy + r * cols;
        float *dxr = dx + r * cols;
        float dot = 0.0f;
        for (int64_t i = 0; i < cols; i++) {
            dot += yr[i] * dyr[i];
        }
        for (int64_t i = 0; i < cols; i++) {
            dxr[i] += yr[i] * (dyr[i] - dot);
        }
    }
}

void kcpu_log_softmax_bwd_ref(int64_t rows, int64_t cols, const float *y, const float *dy,
                              float *dx) {
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * cols, *dyr = dy + r * cols;
        float *dxr = dx + r * cols;
        float sum = 0.0f;
        for (int64_t i = 0; i < cols; i++) {
            sum += dyr[i];
        }
        for (int64_t i = 0; i < cols; i++) {
            dxr[i] += dyr[i] - expf(yr[i]) * sum;
        }
    }
}

void kcpu_softmax_fwd(int64_t rows, int64_t cols, const float *x, float *y) {
    kcpu_isa isa = simd_level();
#ifdef MT_HAVE_AVX512_BUILD
    if (isa >= KCPU_ISA_AVX512) {
        kcpu_softmax_fwd_avx512(rows, cols, x, y);
        return;
    }
#endif
    if (isa >= KCPU_ISA_AVX2) {
        kcpu_softmax_fwd_avx2(rows, cols, x, y);
        return;
    }
    kcpu_softmax_fwd_ref(rows, cols, x, y);
}

void kcpu_log_softmax_fwd(int64_t rows, int64_t cols, const float *x, float *y) {
    kcpu_isa isa = simd_level();
#ifdef MT_HAVE_AVX512_BUILD
    if (isa >= KCPU_ISA_AVX512) {
        kcpu_log_softmax_fwd_avx512(rows, cols, x, y);
        return;
    }
#endif
    if (isa >= KCPU_ISA_AVX2) {
        kcpu_log_softmax_fwd_avx2(rows, cols, x, y);
        return;
    }
    kcpu_log_softmax_fwd_ref(rows, cols, x, y);
}

void kcpu_softmax_bwd(int64_t rows, int64_t cols, const float *y, const float *dy, float *dx) {
    kcpu_isa isa = simd_level();
#ifdef MT_HAVE_AVX512_BUILD
    if (isa >= KCPU_ISA_AVX512) {
        kcpu_softmax_bwd_avx512(rows, cols, y, dy, dx);
        return;
    }
#endif
    if (isa >= KCPU_ISA_AVX2) {
        kcpu_softmax_bwd_avx2(rows, cols, y, dy, dx);
        return;
    }
    kcpu_softmax_bwd_ref(rows, cols, y, dy, dx);
}

void kcpu_log_softmax_bwd(int64_t rows, int64_t cols, const float *y, const float *dy,
                          float *dx) {
    kcpu_isa isa = simd_level();
#ifdef MT_HAVE_AVX512_BUILD
    if (isa >= KCPU_ISA_AVX512) {
        kcpu_log_softmax_bwd_avx512(rows, cols, y, dy, dx);
        return;
    }
#endif
    if (isa >= KCPU_ISA_AVX2) {
        kcpu_log_softmax_bwd_avx2(rows, cols, y, dy, dx);
        return;
    }
    kcpu_log_softmax_bwd_ref(rows, cols, y, dy, dx);
}

void kcpu_xent_fwd(int64_t rows, int64_t cols, const float *x, const int32_t *labels, float ls,
                   float *logp, float *loss) {
    kcpu_log_softmax_fwd(rows, cols, x, logp);
    for (int64_t r = 0; r < rows; r++) {
        const float *lr = logp + r * cols;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        int64_t i = 0;
        for (; i + 4 <= cols; i += 4) {
            s0 += lr[i], s1 += lr[i + 1], s2 += lr[i + 2], s3 += lr[i + 3];
        }
        for (; i < cols; i++) {
            s0 += lr[i];
        }
        double sum = (s0 + s1) + (s2 + s3);
        loss[r] = (float)(-(1.0 - ls) * lr[labels[r]] - (double)ls / (double)cols * sum);
    }
}

void kcpu_xent_bwd_ref(int64_t rows, int64_t cols, const float *logp, const int32_t *labels,
                       float ls, const float *dloss, float *dx) {
    float u = ls / (float)cols;
    for (int64_t r = 0; r < rows; r++) {
        const float *lr = logp + r * cols;
        float *dxr = dx + r * cols;
        for (int64_t i = 0; i < cols; i++) {
            float t = expf(lr[i]) - u - (i == labels[r] ? 1.0f - ls : 0.0f);
            dxr[i] += dloss[r] * t;
        }
    }
}

void kcpu_xent_bwd(int64_t rows, int64_t cols, const float *logp, const int32_t *labels,
                   float ls, const float *dloss, float *dx) {
    kcpu_isa isa = simd_level();
#ifdef MT_HAVE_AVX512_BUILD
    if (isa >= KCPU_ISA_AVX512) {
        kcpu_xent_bwd_avx512(rows, cols, logp, labels, ls, dloss, dx);
        return;
    }
#endif
    if (isa >= KCPU_ISA_AVX2) {
        kcpu_xent_bwd_avx2(rows, cols, logp, labels, ls, dloss, dx);
        return;
    }
    kcpu_xent_bwd_ref(rows, cols, logp, labels, ls, dloss, dx);
}
