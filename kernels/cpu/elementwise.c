/*
** elementwise.c: unary and broadcasting binary ops, small helpers and
** masked fill.  Scalar references here; the contiguous inner loops have
** AVX-512 and AVX2 variants in elementwise_avx512.c / elementwise_avx2.c,
** chosen at run time.
*/
#include "kcpu_impl.h"

#include <math.h>
#include <string.h>

/* The variant the dispatchers run: AVX-512 (when built), else AVX2. */
static kcpu_isa simd_level(void) {
    kcpu_isa isa = kcpu_isa_active();
#ifndef MT_HAVE_AVX512_BUILD
    isa = isa > KCPU_ISA_AVX2 ? KCPU_ISA_AVX2 : isa;
#endif
    return isa;
}

/* ------------------------------------------------------------------ unary */

static float sigmoidf(float x) {
    return 1.0f / (1.0f + expf(-x));
}

static float unary_one(kcpu_unary op, float alpha, float x) {
    switch (op) {
    case KCPU_RELU: return x > 0.0f ? x : 0.0f;
    case KCPU_SWISH: return x * sigmoidf(x);
    case KCPU_GELU: return x * sigmoidf(1.702f * x);
    case KCPU_TANH: return tanhf(x);
    case KCPU_SIGMOID: return sigmoidf(x);
    case KCPU_EXP: return expf(x);
    case KCPU_LOG: return logf(x);
    case KCPU_SQRT: return sqrtf(x);
    case KCPU_NEG: return -x;
    case KCPU_SCALE: return alpha * x;
    case KCPU_ADD_SCALAR: return x + alpha;
    case KCPU_UNARY_COUNT: break;
    }
    return x;
}

/* f'(x), with y = f(x). */
static float unary_grad(kcpu_unary op, float alpha, float x, float y) {
    switch (op) {
    case KCPU_RELU: return x > 0.0f ? 1.0f : 0.0f;
    case KCPU_SWISH: {
        float s = sigmoidf(x);
        return s * (1.0f + x * (1.0f - s));
    }
    case KCPU_GELU: {
        float s = sigmoidf(1.702f * x);
        return s * (1.0f + 1.702f * x * (1.0f - s));
    }
    case KCPU_TANH: return 1.0f - y * y;
    case KCPU_SIGMOID: return y * (1.0f - y);
    case KCPU_EXP: return y;
    case KCPU_LOG: return 1.0f / x;
    case KCPU_SQRT: return 0.5f / y;
    case KCPU_NEG: return -1.0f;
    case KCPU_SCALE: return alpha;
    case KCPU_ADD_SCALAR: return 1.0f;
    case KCPU_UNARY_COUNT: break;
    }
    return 0.0f;
}

void kcpu_unary_fwd_ref(kcpu_unary op, int64_t n, float alpha, const float *x, float *y) {
    for (int64_t i = 0; i < n; i++) {
        y[i] = unary_one(op, alpha, x[i]);
    }
}

void kcpu_unary_bwd_ref(kcpu_unary op, int64_t n, float alpha, const float *x, const float *y,
                        const float *dy, float *dx) {
    for (int64_t i = 0; i < n; i++) {
        float yi = y ? y[i] : unary_one(op, alpha, x[i]);
        dx[i] += dy[i] * unary_grad(op, alpha, x[i], yi);
    }
}

void kcpu_unary_fwd(kcpu_unary op, int64_t n, float alpha, const float *x, float *y) {
    kcpu_isa isa = simd_level();
#ifdef MT_HAVE_AVX512_BUILD
    if (isa >= KCPU_ISA_AVX512) {
        kcpu_unary_fwd_avx512(op, n, alpha, x, y);
        return;
    }
#endif
    if (isa >= KCPU_ISA_AVX2) {
        kcpu_unary_fwd_avx2(op, n, alpha, x, y);
        return;
    }
    kcpu_unary_fwd_ref(op, n, alpha, x, y);
}

void kcpu_unary_bwd(kcpu_unary op, int64_t n, float alpha, const float *x, const float *y,
                    const float *dy, float *dx) {
    kcpu_isa isa = simd_level();
#ifdef MT_HAVE_AVX512_BUILD
    if (isa >= KCPU_ISA_AVX512) {
        kcpu_unary_bwd_avx512(op, n, alpha, x, y, dy, dx);
        return;
    }
#endif
    if (isa >= KCPU_ISA_AVX2) {
        kcpu_unary_bwd_avx2(op, n, alpha, x, y, dy, dx);
        return;
    }
    kcpu_unary_bwd_ref(op, n, alpha, x, y, dy, dx);
}

/* ----------------------------------------------------------------- binary */

static float binary_one(kcpu_binary op, float a, float b) {
    switch (op) {
    case KCPU_ADD: return a + b;
    case KCPU_SUB: return a - b;
    case KCPU_MUL: return a * b;
    case KCPU_DIV: return a / b;
    case KCPU_BINARY_COUNT: break;
    }
    return 0.0f;
}

static void binary_row_ref(kcpu_binary op, int64_t n, const float *a, int64_t ia, const float *b,
                           int64_t ib, float *y) {
    for (int64_t i = 0; i < n; i++) {
        y[i] = binary_one(op, a[i * ia], b[i * ib]);
    }
}

static void binary_row_bwd_ref(kcpu_binary op, int64_t n, const float *a, int64_t ia,
                               const float *b, int64_t ib, const float *dy, float *da,
                               float *db) {
    for (int64_t i = 0; i < n; i++) {
        float g = dy[i], av = a[i * ia], bv = b[i * ib];
        float ga, gb;
        switch (op) {
        case KCPU_ADD: ga = g, gb = g; break;
        case KCPU_SUB: ga = g, gb = -g; break;
        case KCPU_MUL: ga = g * bv, gb = g * av; break;
        default: ga = g / bv, gb = -g * av / (bv * bv); break;
        }
        if (da) {
            da[i * ia] += ga;
        }
        if (db) {
            db[i * ib] += gb;
        }
    }
}

/* Walks all but the last output dim; calls row(off_a, off_b, off_y, n). */
typedef struct bcast_iter {
    int nd;
    int64_t idx[8];
    int64_t oa, ob, oy;
} bcast_iter;

static int64_t outer_count(int ndim, const int64_t *shape) {
    int64_t rows = 1;
    for (int d = 0; d + 1 < ndim; d++) {
        rows *= shape[d];
    }
    return rows;
}

static void bcast_next(bcast_iter *it, const int64_t *shape, const int64_t *sa,
                       const int64_t *sb, int64_t row_len) {
    it->oy += row_len;
    for (int d = it->nd - 2; d >= 0; d--) {
        it->idx[d]++;
        it->oa += sa[d];
        it->ob += sb ? sb[d] : 0;
        if (it->idx[d] < shape[d]) {
            return;
        }
        it->oa -= sa[d] * shape[d];
        it->ob -= (sb ? sb[d] : 0) * shape[d];
        it->idx[d] = 0;
    }
}

static bool unit_or_zero(int64_t s) {
    return s == 0 || s == 1;
}

typedef void (*binary_row_fn)(kcpu_binary op, int64_t n, const float *a, int64_t ia, const float *b,
                              int64_t ib, float *y);
typedef void (*binary_row_bwd_fn)(kcpu_binary op, int64_t n, const float *a, int64_t ia,
                                  const float *b, int64_t ib, const float *dy, float *da,
                                  float *db);

/* The row kernels for inner strides ia, ib: a SIMD variant when both are 0
** or 1 and the ISA allows, the reference otherwise. */
static binary_row_fn pick_row(int64_t ia, int64_t ib) {
    kcpu_isa isa = unit_or_zero(ia) && unit_or_zero(ib) ? simd_level() : KCPU_ISA_REF;
#ifdef MT_HAVE_AVX512_BUILD
    if (isa >= KCPU_ISA_AVX512) {
        return kcpu_binary_row_avx512;
    }
#endif
    return isa >= KCPU_ISA_AVX2 ? kcpu_binary_row_avx2 : binary_row_ref;
}

static binary_row_bwd_fn pick_row_bwd(int64_t ia, int64_t ib) {
    kcpu_isa isa = unit_or_zero(ia) && unit_or_zero(ib) ? simd_level() : KCPU_ISA_REF;
#ifdef MT_HAVE_AVX512_BUILD
    if (isa >= KCPU_ISA_AVX512) {
        return kcpu_binary_row_bwd_avx512;
    }
#endif
    return isa >= KCPU_ISA_AVX2 ? kcpu_binary_row_bwd_avx2 : binary_row_bwd_ref;
}

void kcpu_binary_fwd(kcpu_binary op, int ndim, const int64_t *shape, const int64_t *sa,
                     const float *a, const int64_t *sb, const float *b, float *y) {
    if (ndim <= 0) {
        y[0] = binary_one(op, a[0], b[0]);
        return;
    }
    int64_t n = shape[ndim - 1], ia = sa[ndim - 1], ib = sb[ndim - 1];
    int64_t rows = outer_count(ndim, shape);
    if (n <= 0 || rows <= 0) {
        return;
    }
    binary_row_fn row = pick_row(ia, ib);
    bcast_iter it = {.nd = ndim};
    for (int64_t r = 0; r < rows; r++) {
        row(op, n, a + it.oa, ia, b + it.ob, ib, y + it.oy);
        bcast_next(&it, shape, sa, sb, n);
    }
}

void kcpu_binary_bwd(kcpu_binary op, int ndim, const int64_t *shape, const int64_t *sa,
                     const float *a, const int64_t *sb, const float *b, const float *dy,
                     float *da, float *db) {
    if (!da && !db) {
        return;
    }
    if (ndim <= 0) {
        binary_row_bwd_ref(op, 1, a, 0, b, 0, dy, da, db);
        return;
    }
    int64_t n = shape[ndim - 1], ia = sa[ndim - 1], ib = sb[ndim - 1];
    int64_t rows = outer_count(ndim, shape);
    if (n <= 0 || rows <= 0) {
        return;
    }
    binary_row_bwd_fn row = pick_row_bwd(ia, ib);
    bcast_iter it = {.nd = ndim};
    for (int64_t r = 0; r < rows; r++) {
        float *dar = da ? da + it.oa : NULL, *dbr = db ? db + it.ob : NULL;
        row(op, n, a + it.oa, ia, b + it.ob, ib, dy + it.oy, dar, dbr);
        bcast_next(&it, shape, sa, sb, n);
    }
}

/* ---------------------------------------------------------------- helpers */

void kcpu_add_f32(int64_t n, const float *a, const float *b, float *y) {
    for (int64_t i = 0; i < n; i++) {
        y[i] = a[i] + b[i];
    }
}

void kcpu_acc_f32(int64_t n, const float *x, float *y) {
    for (int64_t i = 0; i < n; i++) {
        y[i] += x[i];
    }
}

void kcpu_fill_f32(int64_t n, float value, float *y) {
    if (value == 0.0f && !signbit(value)) {
        if (n > 0) {
            memset(y, 0, (size_t)n * sizeof *y);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        y[i] = value;
    }
}

void kcpu_masked_fill_fwd(int ndim, const int64_t *shape, const float *x, const int64_t *sm,
                          const float *mask, float value, float *y) {
    if (ndim <= 0) {
        y[0] = mask[0] != 0.0f ? x[0] : value;
        return;
    }
    int64_t n = shape[ndim - 1], im = sm[ndim - 1], rows = outer_count(ndim, shape);
    if (n <= 0 || rows <= 0) {
        return;
    }
    bcast_iter it = {.nd = ndim};
    for (int64_t r = 0; r < rows; r++) {
        const float *mr = mask + it.oa, *xr = x + it.oy;
        float *yr = y + it.oy;
        for (int64_t i = 0; i < n; i++) {
            yr[i] = mr[i * im] != 0.0f ? xr[i] : value;
        }
        bcast_next(&it, shape, sm, NULL, n);
    }
}

void kcpu_masked_fill_bwd(int ndim, const int64_t *shape, const int64_t *sm, const float *mask,
                          const float *dy, float *dx) {
    if (ndim <= 0) {
        dx[0] += mask[0] != 0.0f ? dy[0] : 0.0f;
        return;
    }
    int64_t n = shape[ndim - 1], im = sm[ndim - 1], rows = outer_count(ndim, shape);
    if (n <= 0 || rows <= 0) {
        return;
    }
    bcast_iter it = {.nd = ndim};
    for (int64_t r = 0; r < rows; r++) {
        const float *mr = mask + it.oa, *dyr = dy + it.oy;
        float *dxr = dx + it.oy;
        for (int64_t i = 0; i < n; i++) {
            if (mr[i * im] != 0.0f) {
                dxr[i] += dyr[i];
            }
        }
        bcast_next(&it, shape, sm, NULL, n);
    }
}
