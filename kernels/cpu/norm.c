/*
** norm.c: layer normalisation, forward and backward.
**   y = gamma * xhat + beta, xhat = (x - mean) * rstd, rstd = 1/sqrt(var+eps)
**   dx += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma
**   dgamma += sum_rows dy * xhat, dbeta += sum_rows dy
*/
#include "kcpu_impl.h"

#include <math.h>

/* The variant the dispatchers run: AVX-512 (when built), else AVX2
** (elementwise_avx512.c / elementwise_avx2.c). */
static kcpu_isa simd_level(void) {
    kcpu_isa isa = kcpu_isa_active();
#ifndef MT_HAVE_AVX512_BUILD
    isa = isa > KCPU_ISA_AVX2 ? KCPU_ISA_AVX2 : isa;
#endif
    return isa;
}

void kcpu_layernorm_fwd_ref(int64_t rows, int64_t cols, const float *x, const float *gamma,
                            const float *beta, float eps, float *y, float *mean, float *rstd) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        double s = 0.0;
        for (int64_t i = 0; i < cols; i++) {
            s += xr[i];
        }
        float mu = (float)(s / (double)cols);
        double v = 0.0;
        for (int64_t i = 0; i < cols; i++) {
            double d = (double)xr[i] - mu;
            v += d * d;
        }
        float rs = (float)(1.0 / sqrt(v / (double)cols + eps));
        for (int64_t i = 0; i < cols; i++) {
            float t = (xr[i] - mu) * rs;
            t = gamma ? t * gamma[i] : t;
            yr[i] = beta ? t + beta[i] : t;
        }
        if (mean) {
            mean[r] = mu;
        }
        if (rstd) {
            rstd[r] = rs;
        }
    }
}

void kcpu_layernorm_bwd_ref(int64_t rows, int64_t cols, const float *x, const float *gamma,
                            const float *mean, const float *rstd, const float *dy, float *dx,
                            float *dgamma, float *dbeta) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols, *dyr = dy + r * cols;
        float mu = mean[r], rs = rstd[r];
        double sg = 0.0, sgx = 0.0;
        for (int64_t i = 0; i < cols; i++) {
            float xh = (xr[i] - mu) * rs;
            float g = gamma ? dyr[i] * gamma[i] : dyr[i];
            sg += g;
            sgx += (double)g * xh;
            if (dgamma) {
                dgamma[i] += dyr[i] * xh;
            }
            if (dbeta) {
                dbeta[i] += dyr[i];
            }
        }
        if (!dx) {
            continue;
        }
        float mg = (float)(sg / (double)cols), mgx = (float)(sgx / (double)cols);
        float *dxr = dx + r * cols;
        for (int64_t i = 0; i < cols; i++) {
            float xh = (xr[i] - mu) * rs;
            float g = gamma ? dyr[i] * gamma[i] : dyr[i];
            dxr[i] += rs * (g - mg - xh * mgx);
        }
    }
}

void kcpu_layernorm_fwd(int64_t rows, int64_t cols, const float *x, const float *gamma,
                        const float *beta, float eps, float *y, float *mean, float *rstd) {
    kcpu_isa isa = simd_level();
#ifdef MT_HAVE_AVX512_BUILD
    if (isa >= KCPU_ISA_AVX512) {
        kcpu_layernorm_fwd_avx512(rows, cols, x, gamma, beta, eps, y, mean, rstd);
        return;
    }
#endif
    if (isa >= KCPU_ISA_AVX2) {
        kcpu_layernorm_fwd_avx2(rows, cols, x, gamma, beta, eps, y, mean, rstd);
        return;
    }
    kcpu_layernorm_fwd_ref(rows, cols, x, gamma, beta, eps, y, mean, rstd);
}

void kcpu_add_layernorm_fwd(int64_t rows, int64_t cols, const float *x, const float *res,
                            const float *gamma, const float *beta, float eps, float *y, float *mean,
                            float *rstd) {
    if (rows <= 0 || cols <= 0) {
        return;
    }
    int64_t blk = cols < 4096 ? 4096 / cols : 1; /* 16 KB of sums */
    for (int64_t r0 = 0; r0 < rows; r0 += blk) {
        int64_t n = rows - r0 < blk ? rows - r0 : blk, off = r0 * cols;
        int64_t shape[1] = {n * cols}, unit[1] = {1};
        kcpu_binary_fwd(KCPU_ADD, 1, shape, unit, x + off, unit, res + off, y + off);
        kcpu_layernorm_fwd(n, cols, y + off, gamma, beta, eps, y + off, mean ? mean + r0 : NULL,
                           rstd ? rstd + r0 : NULL);
    }
}

void kcpu_layernorm_bwd(int64_t rows, int64_t cols, const float *x, const float *gamma,
                        const float *mean, const float *rstd, const float *dy, float *dx,
                        float *dgamma, float *dbeta) {
    kcpu_isa isa = simd_level();
#ifdef MT_HAVE_AVX512_BUILD
    if (isa >= KCPU_ISA_AVX512) {
        kcpu_layernorm_bwd_avx512(rows, cols, x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
        return;
    }
#endif
    if (isa >= KCPU_ISA_AVX2) {
        kcpu_layernorm_bwd_avx2(rows, cols, x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
        return;
    }
    kcpu_layernorm_bwd_ref(rows, cols, x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
}
