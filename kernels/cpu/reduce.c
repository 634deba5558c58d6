/*
** reduce.c: sum / mean / max over the middle axis of x viewed as
** [outer, n, inner], and their backward passes.  Plain C: the inner loops
** are contiguous and auto-vectorise.
*/
#include "kcpu_impl.h"

#include <math.h>

void kcpu_reduce_fwd(kcpu_reduce op, int64_t outer, int64_t n, int64_t inner, const float *x,
                     float *y) {
    for (int64_t o = 0; o < outer; o++) {
        const float *xo = x + o * n * inner;
        float *yo = y + o * inner;
        if (inner == 1) {
            /* Row reduction: several partial accumulators. */
            float s[8] = {0}, m = -INFINITY;
            int64_t j = 0;
            if (op == KCPU_MAX) {
                for (; j < n; j++) {
                    m = xo[j] > m ? xo[j] : m;
                }
                yo[0] = m;
                continue;
            }
            for (; j + 8 <= n; j += 8) {
                for (int u = 0; u < 8; u++) {
                    s[u] += xo[j + u];
                }
            }
            for (; j < n; j++) {
                s[0] += xo[j];
            }
            float t = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
            yo[0] = op == KCPU_MEAN && n > 0 ? t / (float)n : t;
            continue;
        }
        for (int64_t i = 0; i < inner; i++) {
            yo[i] = op == KCPU_MAX ? -INFINITY : 0.0f;
        }
        for (int64_t j = 0; j < n; j++) {
            const float *xr = xo + j * inner;
            if (op == KCPU_MAX) {
                for (int64_t i = 0; i < inner; i++) {
                    yo[i] = xr[i] > yo[i] ? xr[i] : yo[i];
                }
            } else {
                for (int64_t i = 0; i < inner; i++) {
                    yo[i] += xr[i];
                }
            }
        }
        if (op == KCPU_MEAN && n > 0) {
            float inv = 1.0f / (float)n;
            for (int64_t i = 0; i < inner; i++) {
                yo[i] *= inv;
            }
        }
    }
}

void kcpu_reduce_bwd(kcpu_reduce op, int64_t outer, int64_t n, int64_t inner, const float *x,
                     const float *y, const float *dy, float *dx) {
    for (int64_t o = 0; o < outer; o++) {
        const float *xo = x + o * n * inner, *yo = y + o * inner, *dyo = dy + o * inner;
        float *dxo = dx + o * n * inner;
        if (op == KCPU_MAX) {
            for (int64_t i = 0; i < inner; i++) {
                for (int64_t j = 0; j < n; j++) {
                    if (xo[j * inner + i] == yo[i]) {
                        dxo[j * inner + i] += dyo[i];
                        break;
                    }
                }
            }
            continue;
        }
        float scale = op == KCPU_MEAN ? 1.0f / (float)n : 1.0f;
        for (int64_t j = 0; j < n; j++) {
            float *dxr = dxo + j * inner;
            for (int64_t i = 0; i < inner; i++) {
                dxr[i] += dyo[i] * scale;
            }
        }
    }
}
