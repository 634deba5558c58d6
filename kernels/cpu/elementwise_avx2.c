/*
** elementwise_avx2.c: AVX2 + FMA variants of the row-wise kernels: unary
** ops, broadcasting binary rows, softmax / log-softmax / cross-entropy
** backward, layer norm and Adam.  Compiled with -mavx2 -mfma; called
** through the dispatchers when kcpu_isa_active() is KCPU_ISA_AVX2 (or
** above it in a build without the AVX-512 variants).
**
** The same algorithms and expressions as elementwise_avx512.c, 8 lanes
** wide: full vectors in the loops, the last 1..7 elements through
** _mm256_maskload_ps / _mm256_maskstore_ps (the load8 / store8 helpers
** with full = 0), which read and write nothing past the end of a row.
** exp256 / log256 come from kcpu_simd_avx2.h.
*/
#include "kcpu_impl.h"
#include "kcpu_simd_avx2.h"

#include <immintrin.h>
#include <math.h>

/* ------------------------------------------------------------ vector math */

ALWAYS_INLINE __m256 sign_bit8(void) {
    return _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
}

ALWAYS_INLINE __m256 sigmoid256(__m256 x) {
    __m256 one = _mm256_set1_ps(1.0f);
    return _mm256_div_ps(one, _mm256_add_ps(one, exp256(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

ALWAYS_INLINE __m256 tanh256(__m256 x) {
    __m256 ax = _mm256_andnot_ps(sign_bit8(), x);
    /* |x| >= 0.625: 1 - 2 / (exp(2|x|) + 1), sign restored. */
    __m256 one = _mm256_set1_ps(1.0f);
    __m256 big =
        _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f),
                                         _mm256_add_ps(exp256(_mm256_add_ps(ax, ax)), one)));
    big = _mm256_or_ps(big, _mm256_and_ps(x, sign_bit8()));
    /* |x| < 0.625: x + x^3 P(x^2) (Cephes tanhf). */
    __m256 z = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
    __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
    __m256 is_small = _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_LT_OQ);
    return _mm256_blendv_ps(big, small, is_small);
}

/* ------------------------------------------------------------------ unary */

ALWAYS_INLINE __m256 unary_vec(const kcpu_unary op, __m256 va, __m256 x) {
    switch (op) {
    case KCPU_RELU: return _mm256_max_ps(x, _mm256_setzero_ps());
    case KCPU_SWISH: return _mm256_mul_ps(x, sigmoid256(x));
    case KCPU_GELU: return _mm256_mul_ps(x, sigmoid256(_mm256_mul_ps(_mm256_set1_ps(1.702f), x)));
    case KCPU_TANH: return tanh256(x);
    case KCPU_SIGMOID: return sigmoid256(x);
    case KCPU_EXP: return exp256(x);
    case KCPU_LOG: return log256(x);
    case KCPU_SQRT: return _mm256_sqrt_ps(x);
    case KCPU_NEG: return _mm256_sub_ps(_mm256_setzero_ps(), x);
    case KCPU_SCALE: return _mm256_mul_ps(va, x);
    case KCPU_ADD_SCALAR: return _mm256_add_ps(x, va);
    case KCPU_UNARY_COUNT: break;
    }
    return x;
}

ALWAYS_INLINE __m256 unary_grad_vec(const kcpu_unary op, __m256 va, __m256 x, __m256 y) {
    __m256 one = _mm256_set1_ps(1.0f);
    switch (op) {
    case KCPU_RELU: return _mm256_and_ps(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ), one);
    case KCPU_SWISH: {
        __m256 s = sigmoid256(x);
        return _mm256_mul_ps(s, _mm256_fmadd_ps(x, _mm256_sub_ps(one, s), one));
    }
    case KCPU_GELU: {
        __m256 kx = _mm256_mul_ps(_mm256_set1_ps(1.702f), x);
        __m256 s = sigmoid256(kx);
        return _mm256_mul_ps(s, _mm256_fmadd_ps(kx, _mm256_sub_ps(one, s), one));
    }
    case KCPU_TANH: return _mm256_fnmadd_ps(y, y, one);
    case KCPU_SIGMOID: return _mm256_mul_ps(y, _mm256_sub_ps(one, y));
    case KCPU_EXP: return y;
    case KCPU_LOG: return _mm256_div_ps(one, x);
    case KCPU_SQRT: return _mm256_div_ps(_mm256_set1_ps(0.5f), y);
    case KCPU_NEG: return _mm256_set1_ps(-1.0f);
    case KCPU_SCALE: return va;
    case KCPU_ADD_SCALAR: return one;
    case KCPU_UNARY_COUNT: break;
    }
    return one;
}

ALWAYS_INLINE void unary_fwd_step(const kcpu_unary op, __m256 va, const float *x, float *y,
                                  __m256i mk, int full) {
    store8(y, mk, full, unary_vec(op, va, load8(x, mk, full)));
}

ALWAYS_INLINE void unary_fwd_loop(const kcpu_unary op, int64_t n, float alpha, const float *x,
                                  float *y) {
    __m256 va = _mm256_set1_ps(alpha);
    __m256i all = _mm256_set1_epi32(-1);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        unary_fwd_step(op, va, x + i, y + i, all, 1);
    }
    if (i < n) {
        unary_fwd_step(op, va, x + i, y + i, tail_mask8(n - i), 0);
    }
}

ALWAYS_INLINE void unary_bwd_step(const kcpu_unary op, __m256 va, const float *x, const float *y,
                                  const float *dy, float *dx, __m256i mk, int full) {
    __m256 xv = load8(x, mk, full);
    __m256 yv = _mm256_setzero_ps();
    if (kcpu_unary_grad_uses_y(op)) {
        yv = y ? load8(y, mk, full) : unary_vec(op, va, xv);
    }
    __m256 g = unary_grad_vec(op, va, xv, yv);
    store8(dx, mk, full, _mm256_fmadd_ps(load8(dy, mk, full), g, load8(dx, mk, full)));
}

ALWAYS_INLINE void unary_bwd_loop(const kcpu_unary op, int64_t n, float alpha, const float *x,
                                  const float *y, const float *dy, float *dx) {
    __m256 va = _mm256_set1_ps(alpha);
    __m256i all = _mm256_set1_epi32(-1);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        unary_bwd_step(op, va, x + i, y ? y + i : NULL, dy + i, dx + i, all, 1);
    }
    if (i < n) {
        unary_bwd_step(op, va, x + i, y ? y + i : NULL, dy + i, dx + i, tail_mask8(n - i), 0);
    }
}

#define UNARY_CASES(LOOP, ...)                                                                     \
    switch (op) {                                                                                  \
    case KCPU_RELU: LOOP(KCPU_RELU, __VA_ARGS__); break;                                           \
    case KCPU_SWISH: LOOP(KCPU_SWISH, __VA_ARGS__); break;                                         \
    case KCPU_GELU: LOOP(KCPU_GELU, __VA_ARGS__); break;                                           \
    case KCPU_TANH: LOOP(KCPU_TANH, __VA_ARGS__); break;                                           \
    case KCPU_SIGMOID: LOOP(KCPU_SIGMOID, __VA_ARGS__); break;                                     \
    case KCPU_EXP: LOOP(KCPU_EXP, __VA_ARGS__); break;                                             \
    case KCPU_LOG: LOOP(KCPU_LOG, __VA_ARGS__); break;                                             \
    case KCPU_SQRT: LOOP(KCPU_SQRT, __VA_ARGS__); break;                                           \
    case KCPU_NEG: LOOP(KCPU_NEG, __VA_ARGS__); break;                                             \
    case KCPU_SCALE: LOOP(KCPU_SCALE, __VA_ARGS__); break;                                         \
    case KCPU_ADD_SCALAR: LOOP(KCPU_ADD_SCALAR, __VA_ARGS__); break;                               \
    case KCPU_UNARY_COUNT: break;                                                                  \
    }

void kcpu_unary_fwd_avx2(kcpu_unary op, int64_t n, float alpha, const float *x, float *y) {
    UNARY_CASES(unary_fwd_loop, n, alpha, x, y)
}

void kcpu_unary_bwd_avx2(kcpu_unary op, int64_t n, float alpha, const float *x, const float *y,
                         const float *dy,
                         float *dx){UNARY_CASES(unary_bwd_loop, n, alpha, x, y, dy, dx)}

/* ----------------------------------------------------------------- binary */

ALWAYS_INLINE __m256 bin_vec(const kcpu_binary op, __m256 a, __m256 b) {
    switch (op) {
    case KCPU_ADD: return _mm256_add_ps(a, b);
    case KCPU_SUB: return _mm256_sub_ps(a, b);
    case KCPU_MUL: return _mm256_mul_ps(a, b);
    case KCPU_DIV: return _mm256_div_ps(a, b);
    case KCPU_BINARY_COUNT: break;
    }
    return a;
}

/* A row (inc 1) or a broadcast scalar (inc 0). */
ALWAYS_INLINE __m256 load_or_bcast(const float *p, int64_t inc, __m256i mk, int full) {
    return inc ? load8(p, mk, full) : _mm256_broadcast_ss(p);
}

ALWAYS_INLINE void bin_loop(const kcpu_binary op, int64_t n, const float *a, int64_t ia,
                            const float *b, int64_t ib, float *y) {
    __m256i all = _mm256_set1_epi32(-1);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 av = load_or_bcast(a + i * ia, ia, all, 1);
        __m256 bv = load_or_bcast(b + i * ib, ib, all, 1);
        _mm256_storeu_ps(y + i, bin_vec(op, av, bv));
    }
    if (i < n) {
        __m256i mk = tail_mask8(n - i);
        __m256 av = load_or_bcast(a + i * ia, ia, mk, 0);
        __m256 bv = load_or_bcast(b + i * ib, ib, mk, 0);
        /* Masked-out lanes may divide 0/0: they are never stored. */
        _mm256_maskstore_ps(y + i, mk, bin_vec(op, av, bv));
    }
}

void kcpu_binary_row_avx2(kcpu_binary op, int64_t n, const float *a, int64_t ia, const float *b,
                          int64_t ib, float *y) {
    switch (op) {
    case KCPU_ADD: bin_loop(KCPU_ADD, n, a, ia, b, ib, y); break;
    case KCPU_SUB: bin_loop(KCPU_SUB, n, a, ia, b, ib, y); break;
    case KCPU_MUL: bin_loop(KCPU_MUL, n, a, ia, b, ib, y); break;
    case KCPU_DIV: bin_loop(KCPU_DIV, n, a, ia, b, ib, y); break;
    case KCPU_BINARY_COUNT: break;
    }
}

/* Adds g into d: lane-wise when d is a row (inc 1), summed when d is
** broadcast (inc 0, partial sums kept in *acc; masked-out lanes, which may
** hold 0/0, are dropped). */
ALWAYS_INLINE void grad_out(float *d, int64_t inc, __m256i mk, int full, __m256 g, __m256 *acc) {
    if (inc) {
        store8(d, mk, full, _mm256_add_ps(load8(d, mk, full), g));
    } else {
        *acc = _mm256_add_ps(*acc, full ? g : _mm256_and_ps(g, _mm256_castsi256_ps(mk)));
    }
}

ALWAYS_INLINE void bin_bwd_step(const kcpu_binary op, const float *a, int64_t ia, const float *b,
                                int64_t ib, const float *dy, float *da, float *db, __m256i mk,
                                int full, __m256 *sa, __m256 *sb) {
    __m256 g = load8(dy, mk, full);
    __m256 ga = g, gb = g;
    if (op == KCPU_SUB) {
        gb = _mm256_sub_ps(_mm256_setzero_ps(), g);
    } else if (op == KCPU_MUL || op == KCPU_DIV) {
        __m256 av = load_or_bcast(a, ia, mk, full);
        __m256 bv = load_or_bcast(b, ib, mk, full);
        if (op == KCPU_MUL) {
            ga = _mm256_mul_ps(g, bv);
            gb = _mm256_mul_ps(g, av);
        } else {
            ga = _mm256_div_ps(g, bv);
            gb = _mm256_div_ps(_mm256_mul_ps(ga, av), _mm256_sub_ps(_mm256_setzero_ps(), bv));
        }
    }
    if (da) {
        grad_out(da, ia, mk, full, ga, sa);
    }
    if (db) {
        grad_out(db, ib, mk, full, gb, sb);
    }
}

ALWAYS_INLINE void bin_bwd_loop(const kcpu_binary op, int64_t n, const float *a, int64_t ia,
                                const float *b, int64_t ib, const float *dy, float *da, float *db) {
    __m256 sa = _mm256_setzero_ps(), sb = _mm256_setzero_ps();
    __m256i all = _mm256_set1_epi32(-1);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        bin_bwd_step(op, a + i * ia, ia, b + i * ib, ib, dy + i, da ? da + i * ia : NULL,
                     db ? db + i * ib : NULL, all, 1, &sa, &sb);
    }
    if (i < n) {
        bin_bwd_step(op, a + i * ia, ia, b + i * ib, ib, dy + i, da ? da + i * ia : NULL,
                     db ? db + i * ib : NULL, tail_mask8(n - i), 0, &sa, &sb);
    }
    if (da && !ia) {
        *da += hsum8(sa);
    }
    if (db && !ib) {
        *db += hsum8(sb);
    }
}

void kcpu_binary_row_bwd_avx2(kcpu_binary op, int64_t n, const float *a, int64_t ia, const float *b,
                              int64_t ib, const float *dy, float *da, float *db) {
    switch (op) {
    case KCPU_ADD: bin_bwd_loop(KCPU_ADD, n, a, ia, b, ib, dy, da, db); break;
    case KCPU_SUB: bin_bwd_loop(KCPU_SUB, n, a, ia, b, ib, dy, da, db); break;
    case KCPU_MUL: bin_bwd_loop(KCPU_MUL, n, a, ia, b, ib, dy, da, db); break;
    case KCPU_DIV: bin_bwd_loop(KCPU_DIV, n, a, ia, b, ib, dy, da, db); break;
    case KCPU_BINARY_COUNT: break;
    }
}

/* ---------------------------------------------------------------- softmax */

static float row_max(int64_t n, const float *x) {
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
        m1 = _mm256_max_ps(m1, _mm256_loadu_ps(x + i + 8));
    }
    for (; i < n; i += 8) {
        __m256i mk = tail_mask8(n - i);
        /* Masked-out lanes load 0: put -inf there. */
        __m256 v = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), _mm256_maskload_ps(x + i, mk),
                                    _mm256_castsi256_ps(mk));
        m0 = _mm256_max_ps(m0, v);
    }
    return hmax8(_mm256_max_ps(m0, m1));
}

/* y = exp(x - mx) (when y != NULL), returns the sum. */
static float row_exp_sum(int64_t n, const float *x, float mx, float *y) {
    __m256 vm = _mm256_set1_ps(mx), s = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        s = _mm256_add_ps(s, e);
        if (y) {
            _mm256_storeu_ps(y + i, e);
        }
    }
    if (i < n) {
        __m256i mk = tail_mask8(n - i);
        __m256 e = exp256(_mm256_sub_ps(_mm256_maskload_ps(x + i, mk), vm));
        s = _mm256_add_ps(s, _mm256_and_ps(e, _mm256_castsi256_ps(mk)));
        if (y) {
            _mm256_maskstore_ps(y + i, mk, e);
        }
    }
    return hsum8(s);
}

static float row_dot(int64_t n, const float *a, const float *b) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    for (; i < n; i += 8) {
        __m256i mk = tail_mask8(n - i);
        s0 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, mk), _mm256_maskload_ps(b + i, mk), s0);
    }
    return hsum8(_mm256_add_ps(s0, s1));
}

static float row_sum(int64_t n, const float *a) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_add_ps(s0, _mm256_loadu_ps(a + i));
        s1 = _mm256_add_ps(s1, _mm256_loadu_ps(a + i + 8));
    }
    for (; i < n; i += 8) {
        s0 = _mm256_add_ps(s0, _mm256_maskload_ps(a + i, tail_mask8(n - i)));
    }
    return hsum8(_mm256_add_ps(s0, s1));
}

/* y[i] = y[i] * s over a row. */
static void row_scale(int64_t n, float *y, float s) {
    __m256 vs = _mm256_set1_ps(s);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), vs));
    }
    if (i < n) {
        __m256i mk = tail_mask8(n - i);
        _mm256_maskstore_ps(y + i, mk, _mm256_mul_ps(_mm256_maskload_ps(y + i, mk), vs));
    }
}

void kcpu_softmax_fwd_avx2(int64_t rows, int64_t cols, const float *x, float *y) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mx = row_max(cols, xr);
        float sum = row_exp_sum(cols, xr, mx, yr);
        row_scale(cols, yr, 1.0f / sum);
    }
}

ALWAYS_INLINE void log_softmax_step(const float *x, float *y, __m256 vm, __m256 vl, __m256i mk,
                                    int full) {
    store8(y, mk, full, _mm256_sub_ps(_mm256_sub_ps(load8(x, mk, full), vm), vl));
}

void kcpu_log_softmax_fwd_avx2(int64_t rows, int64_t cols, const float *x, float *y) {
    __m256i all = _mm256_set1_epi32(-1);
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mx = row_max(cols, xr);
        float lse = logf(row_exp_sum(cols, xr, mx, NULL));
        __m256 vm = _mm256_set1_ps(mx), vl = _mm256_set1_ps(lse);
        int64_t i = 0;
        for (; i + 8 <= cols; i += 8) {
            log_softmax_step(xr + i, yr + i, vm, vl, all, 1);
        }
        if (i < cols) {
            log_softmax_step(xr + i, yr + i, vm, vl, tail_mask8(cols - i), 0);
        }
    }
}

ALWAYS_INLINE void softmax_bwd_step(const float *y, const float *dy, float *dx, __m256 dot,
                                    __m256i mk, int full) {
    __m256 g = _mm256_sub_ps(load8(dy, mk, full), dot);
    store8(dx, mk, full, _mm256_fmadd_ps(load8(y, mk, full), g, load8(dx, mk, full)));
}

void kcpu_softmax_bwd_avx2(int64_t rows, int64_t cols, const float *y, const float *dy, float *dx) {
    __m256i all = _mm256_set1_epi32(-1);
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * cols, *dyr = dy + r * cols;
        float *dxr = dx + r * cols;
        __m256 dot = _mm256_set1_ps(row_dot(cols, yr, dyr));
        int64_t i = 0;
        for (; i + 8 <= cols; i += 8) {
            softmax_bwd_step(yr + i, dyr + i, dxr + i, dot, all, 1);
        }
        if (i < cols) {
            softmax_bwd_step(yr + i, dyr + i, dxr + i, dot, tail_mask8(cols - i), 0);
        }
    }
}

ALWAYS_INLINE void log_softmax_bwd_step(const float *y, const float *dy, float *dx, __m256 sum,
                                        __m256i mk, int full) {
    __m256 d = _mm256_add_ps(load8(dx, mk, full), load8(dy, mk, full));
    d = _mm256_fnmadd_ps(exp256(load8(y, mk, full)), sum, d);
    store8(dx, mk, full, d);
}

void kcpu_log_softmax_bwd_avx2(int64_t rows, int64_t cols, const float *y, const float *dy,
                               float *dx) {
    __m256i all = _mm256_set1_epi32(-1);
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * cols, *dyr = dy + r * cols;
        float *dxr = dx + r * cols;
        __m256 sum = _mm256_set1_ps(row_sum(cols, dyr));
        int64_t i = 0;
        for (; i + 8 <= cols; i += 8) {
            log_softmax_bwd_step(yr + i, dyr + i, dxr + i, sum, all, 1);
        }
        if (i < cols) {
            log_softmax_bwd_step(yr + i, dyr + i, dxr + i, sum, tail_mask8(cols - i), 0);
        }
    }
}

ALWAYS_INLINE void xent_bwd_step(const float *lp, float *dx, __m256 vdl, __m256 vu, __m256i mk,
                                 int full) {
    __m256 g = _mm256_sub_ps(exp256(load8(lp, mk, full)), vu);
    store8(dx, mk, full, _mm256_fmadd_ps(g, vdl, load8(dx, mk, full)));
}

void kcpu_xent_bwd_avx2(int64_t rows, int64_t cols, const float *logp, const int32_t *labels,
                        float ls, const float *dloss, float *dx) {
    __m256i all = _mm256_set1_epi32(-1);
    for (int64_t r = 0; r < rows; r++) {
        const float *lr = logp + r * cols;
        float *dxr = dx + r * cols;
        float dl = dloss[r];
        __m256 vdl = _mm256_set1_ps(dl), vu = _mm256_set1_ps(ls / (float)cols);
        int64_t i = 0;
        for (; i + 8 <= cols; i += 8) {
            xent_bwd_step(lr + i, dxr + i, vdl, vu, all, 1);
        }
        if (i < cols) {
            xent_bwd_step(lr + i, dxr + i, vdl, vu, tail_mask8(cols - i), 0);
        }
        dxr[labels[r]] -= dl * (1.0f - ls);
    }
}

/* ------------------------------------------------------------- layer norm */

/* sum (x - mu)^2 over a row. */
static float row_sq_dev(int64_t n, const float *x, float mu) {
    __m256 vmu = _mm256_set1_ps(mu), s0 = _mm256_setzero_ps(), s1 = s0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), vmu);
        __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vmu);
        s0 = _mm256_fmadd_ps(d0, d0, s0);
        s1 = _mm256_fmadd_ps(d1, d1, s1);
    }
    for (; i < n; i += 8) {
        __m256i mk = tail_mask8(n - i);
        __m256 d = _mm256_and_ps(_mm256_sub_ps(_mm256_maskload_ps(x + i, mk), vmu),
                                 _mm256_castsi256_ps(mk));
        s0 = _mm256_fmadd_ps(d, d, s0);
    }
    return hsum8(_mm256_add_ps(s0, s1));
}

ALWAYS_INLINE void ln_fwd_step(const float *x, const float *gamma, const float *beta, float *y,
                               __m256 vmu, __m256 vrs, __m256i mk, int full) {
    __m256 v = _mm256_mul_ps(_mm256_sub_ps(load8(x, mk, full), vmu), vrs);
    if (gamma) {
        v = _mm256_mul_ps(v, load8(gamma, mk, full));
    }
    if (beta) {
        v = _mm256_add_ps(v, load8(beta, mk, full));
    }
    store8(y, mk, full, v);
}

void kcpu_layernorm_fwd_avx2(int64_t rows, int64_t cols, const float *x, const float *gamma,
                             const float *beta, float eps, float *y, float *mean, float *rstd) {
    __m256i all = _mm256_set1_epi32(-1);
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mu = row_sum(cols, xr) / (float)cols;
        float rs = 1.0f / sqrtf(row_sq_dev(cols, xr, mu) / (float)cols + eps);
        __m256 vmu = _mm256_set1_ps(mu), vrs = _mm256_set1_ps(rs);
        int64_t i = 0;
        for (; i + 8 <= cols; i += 8) {
            ln_fwd_step(xr + i, gamma ? gamma + i : NULL, beta ? beta + i : NULL, yr + i, vmu, vrs,
                        all, 1);
        }
        if (i < cols) {
            ln_fwd_step(xr + i, gamma ? gamma + i : NULL, beta ? beta + i : NULL, yr + i, vmu, vrs,
                        tail_mask8(cols - i), 0);
        }
        if (mean) {
            mean[r] = mu;
        }
        if (rstd) {
            rstd[r] = rs;
        }
    }
}

/* First pass of the backward over 8 columns: sums of g and g xhat, and the
** dgamma / dbeta updates (masked-out lanes load 0 and add 0). */
ALWAYS_INLINE void ln_bwd_sums(const float *x, const float *gamma, const float *dy, float *dgamma,
                               float *dbeta, __m256 vmu, __m256 vrs, __m256i mk, int full,
                               __m256 *sg, __m256 *sgx) {
    __m256 xh = _mm256_mul_ps(_mm256_sub_ps(load8(x, mk, full), vmu), vrs);
    if (!full) {
        xh = _mm256_and_ps(xh, _mm256_castsi256_ps(mk));
    }
    __m256 g0 = load8(dy, mk, full);
    __m256 g = gamma ? _mm256_mul_ps(g0, load8(gamma, mk, full)) : g0;
    *sg = _mm256_add_ps(*sg, g);
    *sgx = _mm256_fmadd_ps(g, xh, *sgx);
    if (dgamma) {
        store8(dgamma, mk, full, _mm256_fmadd_ps(g0, xh, load8(dgamma, mk, full)));
    }
    if (dbeta) {
        store8(dbeta, mk, full, _mm256_add_ps(g0, load8(dbeta, mk, full)));
    }
}

ALWAYS_INLINE void ln_bwd_dx(const float *x, const float *gamma, const float *dy, float *dx,
                             __m256 vmu, __m256 vrs, __m256 mg, __m256 mgx, __m256i mk, int full) {
    __m256 xh = _mm256_mul_ps(_mm256_sub_ps(load8(x, mk, full), vmu), vrs);
    __m256 g0 = load8(dy, mk, full);
    __m256 g = gamma ? _mm256_mul_ps(g0, load8(gamma, mk, full)) : g0;
    __m256 t = _mm256_fnmadd_ps(xh, mgx, _mm256_sub_ps(g, mg));
    store8(dx, mk, full, _mm256_fmadd_ps(t, vrs, load8(dx, mk, full)));
}

void kcpu_layernorm_bwd_avx2(int64_t rows, int64_t cols, const float *x, const float *gamma,
                             const float *mean, const float *rstd, const float *dy, float *dx,
                             float *dgamma, float *dbeta) {
    __m256i all = _mm256_set1_epi32(-1);
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols, *dyr = dy + r * cols;
        __m256 vmu = _mm256_set1_ps(mean[r]), vrs = _mm256_set1_ps(rstd[r]);
        __m256 sg = _mm256_setzero_ps(), sgx = _mm256_setzero_ps();
        int64_t i = 0;
        for (; i + 8 <= cols; i += 8) {
            ln_bwd_sums(xr + i, gamma ? gamma + i : NULL, dyr + i, dgamma ? dgamma + i : NULL,
                        dbeta ? dbeta + i : NULL, vmu, vrs, all, 1, &sg, &sgx);
        }
        if (i < cols) {
            ln_bwd_sums(xr + i, gamma ? gamma + i : NULL, dyr + i, dgamma ? dgamma + i : NULL,
                        dbeta ? dbeta + i : NULL, vmu, vrs, tail_mask8(cols - i), 0, &sg, &sgx);
        }
        if (!dx) {
            continue;
        }
        float *dxr = dx + r * cols;
        __m256 mg = _mm256_set1_ps(hsum8(sg) / (float)cols);
        __m256 mgx = _mm256_set1_ps(hsum8(sgx) / (float)cols);
        for (i = 0; i + 8 <= cols; i += 8) {
            ln_bwd_dx(xr + i, gamma ? gamma + i : NULL, dyr + i, dxr + i, vmu, vrs, mg, mgx, all,
                      1);
        }
        if (i < cols) {
            ln_bwd_dx(xr + i, gamma ? gamma + i : NULL, dyr + i, dxr + i, vmu, vrs, mg, mgx,
                      tail_mask8(cols - i), 0);
        }
    }
}

/* ------------------------------------------------------------------- adam */

typedef struct adam_consts {
    __m256 b1, b2, b1c, b2c, ic1, ic2, eps, wd, lr;
} adam_consts;

ALWAYS_INLINE void adam_step(const adam_consts *k, float *w, const float *g, float *m, float *v,
                             __m256i mk, int full) {
    __m256 gv = load8(g, mk, full), wv = load8(w, mk, full);
    __m256 mv = _mm256_fmadd_ps(k->b1, load8(m, mk, full), _mm256_mul_ps(k->b1c, gv));
    __m256 vv =
        _mm256_fmadd_ps(k->b2, load8(v, mk, full), _mm256_mul_ps(k->b2c, _mm256_mul_ps(gv, gv)));
    __m256 den = _mm256_add_ps(_mm256_sqrt_ps(_mm256_mul_ps(vv, k->ic2)), k->eps);
    __m256 upd = _mm256_fmadd_ps(k->wd, wv, _mm256_div_ps(_mm256_mul_ps(mv, k->ic1), den));
    store8(w, mk, full, _mm256_fnmadd_ps(k->lr, upd, wv));
    store8(m, mk, full, mv);
    store8(v, mk, full, vv);
}

void kcpu_adam_f32_avx2(int64_t n, float *w, const float *g, float *m, float *v, float lr, float b1,
                        float b2, float eps, float wd, float c1, float c2) {
    adam_consts k = {
        _mm256_set1_ps(b1),        _mm256_set1_ps(b2),        _mm256_set1_ps(1.0f - b1),
        _mm256_set1_ps(1.0f - b2), _mm256_set1_ps(1.0f / c1), _mm256_set1_ps(1.0f / c2),
        _mm256_set1_ps(eps),       _mm256_set1_ps(wd),        _mm256_set1_ps(lr)};
    __m256i all = _mm256_set1_epi32(-1);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        adam_step(&k, w + i, g + i, m + i, v + i, all, 1);
    }
    if (i < n) {
        adam_step(&k, w + i, g + i, m + i, v + i, tail_mask8(n - i), 0);
    }
}
