/*
** elementwise_avx512.c: AVX-512 variants of the row-wise kernels: unary
** ops, broadcasting binary rows, softmax / log-softmax / cross-entropy
** backward, layer norm and Adam.  Compiled with -mavx512f etc.; called only
** through the dispatchers when kcpu_isa_active() >= KCPU_ISA_AVX512.
**
** exp512 / log512 / tail_mask come from kcpu_simd.h (shared with
** topk_avx512.c).
*/
#include "kcpu_impl.h"
#include "kcpu_simd.h"

#include <immintrin.h>
#include <math.h>

/* ------------------------------------------------------------ vector math */

ALWAYS_INLINE __m512 sigmoid512(__m512 x) {
    __m512 one = _mm512_set1_ps(1.0f);
    return _mm512_div_ps(one, _mm512_add_ps(one, exp512(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}

ALWAYS_INLINE __m512 tanh512(__m512 x) {
    __m512 ax = _mm512_abs_ps(x);
    /* |x| >= 0.625: 1 - 2 / (exp(2|x|) + 1), sign restored. */
    __m512 one = _mm512_set1_ps(1.0f);
    __m512 big = _mm512_sub_ps(
        one, _mm512_div_ps(_mm512_set1_ps(2.0f),
                           _mm512_add_ps(exp512(_mm512_add_ps(ax, ax)), one)));
    big = _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_castps_si512(big),
        _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u))));
    /* |x| < 0.625: x + x^3 P(x^2) (Cephes tanhf). */
    __m512 z = _mm512_mul_ps(x, x);
    __m512 p = _mm512_set1_ps(-5.70498872745e-3f);
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(2.06390887954e-2f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-5.37397155531e-2f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.33314422036e-1f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-3.33332819422e-1f));
    __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), x, x);
    __mmask16 is_small = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.625f), _CMP_LT_OQ);
    return _mm512_mask_mov_ps(big, is_small, small);
}

ALWAYS_INLINE __m512 hsum_add(float *dst, __m512 v) {
    *dst += _mm512_reduce_add_ps(v);
    return v;
}

/* ------------------------------------------------------------------ unary */

ALWAYS_INLINE __m512 unary_vec(const kcpu_unary op, __m512 va, __m512 x) {
    switch (op) {
    case KCPU_RELU: return _mm512_max_ps(x, _mm512_setzero_ps());
    case KCPU_SWISH: return _mm512_mul_ps(x, sigmoid512(x));
    case KCPU_GELU: return _mm512_mul_ps(x, sigmoid512(_mm512_mul_ps(_mm512_set1_ps(1.702f), x)));
    case KCPU_TANH: return tanh512(x);
    case KCPU_SIGMOID: return sigmoid512(x);
    case KCPU_EXP: return exp512(x);
    case KCPU_LOG: return log512(x);
    case KCPU_SQRT: return _mm512_sqrt_ps(x);
    case KCPU_NEG: return _mm512_sub_ps(_mm512_setzero_ps(), x);
    case KCPU_SCALE: return _mm512_mul_ps(va, x);
    case KCPU_ADD_SCALAR: return _mm512_add_ps(x, va);
    case KCPU_UNARY_COUNT: break;
    }
    return x;
}

ALWAYS_INLINE __m512 unary_grad_vec(const kcpu_unary op, __m512 va, __m512 x, __m512 y) {
    __m512 one = _mm512_set1_ps(1.0f);
    switch (op) {
    case KCPU_RELU:
        return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ), one);
    case KCPU_SWISH: {
        __m512 s = sigmoid512(x);
        return _mm512_mul_ps(s, _mm512_fmadd_ps(x, _mm512_sub_ps(one, s), one));
    }
    case KCPU_GELU: {
        __m512 kx = _mm512_mul_ps(_mm512_set1_ps(1.702f), x);
        __m512 s = sigmoid512(kx);
        return _mm512_mul_ps(s, _mm512_fmadd_ps(kx, _mm512_sub_ps(one, s), one));
    }
    case KCPU_TANH: return _mm512_fnmadd_ps(y, y, one);
    case KCPU_SIGMOID: return _mm512_mul_ps(y, _mm512_sub_ps(one, y));
    case KCPU_EXP: return y;
    case KCPU_LOG: return _mm512_div_ps(one, x);
    case KCPU_SQRT: return _mm512_div_ps(_mm512_set1_ps(0.5f), y);
    case KCPU_NEG: return _mm512_set1_ps(-1.0f);
    case KCPU_SCALE: return va;
    case KCPU_ADD_SCALAR: return one;
    case KCPU_UNARY_COUNT: break;
    }
    return one;
}

ALWAYS_INLINE void unary_fwd_loop(const kcpu_unary op, int64_t n, float alpha, const float *x,
                                  float *y) {
    __m512 va = _mm512_set1_ps(alpha);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(y + i, unary_vec(op, va, _mm512_loadu_ps(x + i)));
    }
    if (i < n) {
        __mmask16 mk = tail_mask(n - i);
        __m512 v = unary_vec(op, va, _mm512_maskz_loadu_ps(mk, x + i));
        _mm512_mask_storeu_ps(y + i, mk, v);
    }
}

ALWAYS_INLINE void unary_bwd_loop(const kcpu_unary op, int64_t n, float alpha, const float *x,
                                  const float *y, const float *dy, float *dx) {
    __m512 va = _mm512_set1_ps(alpha);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 mk = tail_mask(n - i);
        __m512 xv = _mm512_maskz_loadu_ps(mk, x + i);
        __m512 yv = _mm512_setzero_ps();
        if (kcpu_unary_grad_uses_y(op)) {
            yv = y ? _mm512_maskz_loadu_ps(mk, y + i) : unary_vec(op, va, xv);
        }
        __m512 g = unary_grad_vec(op, va, xv, yv);
        __m512 d = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, dy + i), g,
                                   _mm512_maskz_loadu_ps(mk, dx + i));
        _mm512_mask_storeu_ps(dx + i, mk, d);
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

void kcpu_unary_fwd_avx512(kcpu_unary op, int64_t n, float alpha, const float *x, float *y) {
    UNARY_CASES(unary_fwd_loop, n, alpha, x, y)
}

void kcpu_unary_bwd_avx512(kcpu_unary op, int64_t n, float alpha, const float *x,
                           const float *y, const float *dy, float *dx) {
    UNARY_CASES(unary_bwd_loop, n, alpha, x, y, dy, dx)
}

/* ----------------------------------------------------------------- binary */

ALWAYS_INLINE __m512 bin_vec(const kcpu_binary op, __m512 a, __m512 b) {
    switch (op) {
    case KCPU_ADD: return _mm512_add_ps(a, b);
    case KCPU_SUB: return _mm512_sub_ps(a, b);
    case KCPU_MUL: return _mm512_mul_ps(a, b);
    case KCPU_DIV: return _mm512_div_ps(a, b);
    case KCPU_BINARY_COUNT: break;
    }
    return a;
}

ALWAYS_INLINE __m512 load_or_bcast(const float *p, int64_t inc, __mmask16 mk) {
    return inc ? _mm512_maskz_loadu_ps(mk, p) : _mm512_set1_ps(*p);
}

ALWAYS_INLINE void bin_loop(const kcpu_binary op, int64_t n, const float *a, int64_t ia,
                            const float *b, int64_t ib, float *y) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 av = ia ? _mm512_loadu_ps(a + i) : _mm512_set1_ps(*a);
        __m512 bv = ib ? _mm512_loadu_ps(b + i) : _mm512_set1_ps(*b);
        _mm512_storeu_ps(y + i, bin_vec(op, av, bv));
    }
    if (i < n) {
        __mmask16 mk = tail_mask(n - i);
        __m512 av = load_or_bcast(a + i * ia, ia, mk), bv = load_or_bcast(b + i * ib, ib, mk);
        /* Masked-out lanes may divide 0/0: they are never stored. */
        _mm512_mask_storeu_ps(y + i, mk, bin_vec(op, av, bv));
    }
}

void kcpu_binary_row_avx512(kcpu_binary op, int64_t n, const float *a, int64_t ia,
                            const float *b, int64_t ib, float *y) {
    switch (op) {
    case KCPU_ADD: bin_loop(KCPU_ADD, n, a, ia, b, ib, y); break;
    case KCPU_SUB: bin_loop(KCPU_SUB, n, a, ia, b, ib, y); break;
    case KCPU_MUL: bin_loop(KCPU_MUL, n, a, ia, b, ib, y); break;
    case KCPU_DIV: bin_loop(KCPU_DIV, n, a, ia, b, ib, y); break;
    case KCPU_BINARY_COUNT: break;
    }
}

/* Adds g into d: lane-wise when d is a row (inc 1), summed when d is
** broadcast (inc 0, partial sums kept in *acc). */
ALWAYS_INLINE void grad_out(float *d, int64_t inc, __mmask16 mk, __m512 g, __m512 *acc) {
    if (inc) {
        _mm512_mask_storeu_ps(d, mk, _mm512_add_ps(_mm512_maskz_loadu_ps(mk, d), g));
    } else {
        *acc = _mm512_add_ps(*acc, _mm512_maskz_mov_ps(mk, g));
    }
}

ALWAYS_INLINE void bin_bwd_loop(const kcpu_binary op, int64_t n, const float *a, int64_t ia,
                                const float *b, int64_t ib, const float *dy, float *da,
                                float *db) {
    __m512 sa = _mm512_setzero_ps(), sb = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 mk = tail_mask(n - i);
        __m512 g = _mm512_maskz_loadu_ps(mk, dy + i);
        __m512 ga = g, gb = g;
        if (op == KCPU_SUB) {
            gb = _mm512_sub_ps(_mm512_setzero_ps(), g);
        } else if (op == KCPU_MUL || op == KCPU_DIV) {
            __m512 av = load_or_bcast(a + i * ia, ia, mk);
            __m512 bv = load_or_bcast(b + i * ib, ib, mk);
            if (op == KCPU_MUL) {
                ga = _mm512_mul_ps(g, bv);
                gb = _mm512_mul_ps(g, av);
            } else {
                /* Masked lanes: g = 0 but b may be 0, so zero them below. */
                ga = _mm512_maskz_div_ps(mk, g, bv);
                gb = _mm512_maskz_div_ps(mk, _mm512_mul_ps(ga, av), _mm512_sub_ps(
                                                                       _mm512_setzero_ps(), bv));
            }
        }
        if (da) {
            grad_out(da + i * ia, ia, mk, ga, &sa);
        }
        if (db) {
            grad_out(db + i * ib, ib, mk, gb, &sb);
        }
    }
    if (da && !ia) {
        hsum_add(da, sa);
    }
    if (db && !ib) {
        hsum_add(db, sb);
    }
}

void kcpu_binary_row_bwd_avx512(kcpu_binary op, int64_t n, const float *a, int64_t ia,
                                const float *b, int64_t ib, const float *dy, float *da,
                                float *db) {
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
    __m512 m = _mm512_set1_ps(-INFINITY);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 mk = tail_mask(n - i);
        m = _mm512_mask_max_ps(m, mk, m, _mm512_maskz_loadu_ps(mk, x + i));
    }
    return _mm512_reduce_max_ps(m);
}

/* y = exp(x - mx) (when y != NULL), returns the sum. */
static float row_exp_sum(int64_t n, const float *x, float mx, float *y) {
    __m512 vm = _mm512_set1_ps(mx), s = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 mk = tail_mask(n - i);
        __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, x + i), vm));
        s = _mm512_mask_add_ps(s, mk, s, e);
        if (y) {
            _mm512_mask_storeu_ps(y + i, mk, e);
        }
    }
    return _mm512_reduce_add_ps(s);
}

static float row_dot(int64_t n, const float *a, const float *b) {
    __m512 s = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 mk = tail_mask(n - i);
        s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, a + i), _mm512_maskz_loadu_ps(mk, b + i), s);
    }
    return _mm512_reduce_add_ps(s);
}

static float row_sum(int64_t n, const float *a) {
    __m512 s = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
        s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(tail_mask(n - i), a + i));
    }
    return _mm512_reduce_add_ps(s);
}

void kcpu_softmax_fwd_avx512(int64_t rows, int64_t cols, const float *x, float *y) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mx = row_max(cols, xr);
        float sum = row_exp_sum(cols, xr, mx, yr);
        __m512 inv = _mm512_set1_ps(1.0f / sum);
        for (int64_t i = 0; i < cols; i += 16) {
            __mmask16 mk = tail_mask(cols - i);
            _mm512_mask_storeu_ps(yr + i, mk, _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, yr + i), inv));
        }
    }
}

void kcpu_log_softmax_fwd_avx512(int64_t rows, int64_t cols, const float *x, float *y) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mx = row_max(cols, xr);
        float lse = logf(row_exp_sum(cols, xr, mx, NULL));
        __m512 vm = _mm512_set1_ps(mx), vl = _mm512_set1_ps(lse);
        for (int64_t i = 0; i < cols; i += 16) {
            __mmask16 mk = tail_mask(cols - i);
            __m512 v = _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, xr + i), vm), vl);
            _mm512_mask_storeu_ps(yr + i, mk, v);
        }
    }
}

void kcpu_softmax_bwd_avx512(int64_t rows, int64_t cols, const float *y, const float *dy,
                             float *dx) {
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * cols, *dyr = dy + r * cols;
        float *dxr = dx + r * cols;
        __m512 dot = _mm512_set1_ps(row_dot(cols, yr, dyr));
        for (int64_t i = 0; i < cols; i += 16) {
            __mmask16 mk = tail_mask(cols - i);
            __m512 g = _mm512_sub_ps(_mm512_maskz_loadu_ps(mk, dyr + i), dot);
            __m512 d = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, yr + i), g,
                                       _mm512_maskz_loadu_ps(mk, dxr + i));
            _mm512_mask_storeu_ps(dxr + i, mk, d);
        }
    }
}

void kcpu_log_softmax_bwd_avx512(int64_t rows, int64_t cols, const float *y, const float *dy,
                                 float *dx) {
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * cols, *dyr = dy + r * cols;
        float *dxr = dx + r * cols;
        __m512 sum = _mm512_set1_ps(row_sum(cols, dyr));
        for (int64_t i = 0; i < cols; i += 16) {
            __mmask16 mk = tail_mask(cols - i);
            __m512 d = _mm512_add_ps(_mm512_maskz_loadu_ps(mk, dxr + i),
                                     _mm512_maskz_loadu_ps(mk, dyr + i));
            d = _mm512_fnmadd_ps(exp512(_mm512_maskz_loadu_ps(mk, yr + i)), sum, d);
            _mm512_mask_storeu_ps(dxr + i, mk, d);
        }
    }
}

void kcpu_xent_bwd_avx512(int64_t rows, int64_t cols, const float *logp, const int32_t *labels,
                          float ls, const float *dloss, float *dx) {
    for (int64_t r = 0; r < rows; r++) {
        const float *lr = logp + r * cols;
        float *dxr = dx + r * cols;
        float dl = dloss[r];
        __m512 vdl = _mm512_set1_ps(dl), vu = _mm512_set1_ps(ls / (float)cols);
        for (int64_t i = 0; i < cols; i += 16) {
            __mmask16 mk = tail_mask(cols - i);
            __m512 g = _mm512_sub_ps(exp512(_mm512_maskz_loadu_ps(mk, lr + i)), vu);
            _mm512_mask_storeu_ps(dxr + i, mk,
                                  _mm512_fmadd_ps(g, vdl, _mm512_maskz_loadu_ps(mk, dxr + i)));
        }
        dxr[labels[r]] -= dl * (1.0f - ls);
    }
}

/* ------------------------------------------------------------- layer norm */

/* Four rows at a time: each row's sums are the one-row loop's, in the same
** order (so the same floats), but the four dependency chains of the sums
** run side by side instead of one after another (the latency of the
** adds and FMAs of one chain was the bound: about 145 cycles a row of 256).
** full: cols is a multiple of 16, the loads and stores need no masks (a
** mask per vector was a sizeable share of the samples). */
ALWAYS_INLINE void layernorm_rows4(const int full, int64_t cols, const float *x,
                                   const float *gamma, const float *beta, float eps, float *y,
                                   float *mean, float *rstd) {
    enum { R = 4 };
    __m512 s[R], vmu[R], vrs[R];
    float mu[R], rs[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        s[r] = _mm512_setzero_ps();
    }
    for (int64_t i = 0; i < cols; i += 16) {
        __mmask16 mk = full ? (__mmask16)0xffff : tail_mask(cols - i);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            s[r] = _mm512_add_ps(s[r], _mm512_maskz_loadu_ps(mk, x + r * cols + i));
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        mu[r] = _mm512_reduce_add_ps(s[r]) / (float)cols;
        vmu[r] = _mm512_set1_ps(mu[r]);
        s[r] = _mm512_setzero_ps();
    }
    for (int64_t i = 0; i < cols; i += 16) {
        __mmask16 mk = full ? (__mmask16)0xffff : tail_mask(cols - i);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m512 d = _mm512_maskz_sub_ps(mk, _mm512_maskz_loadu_ps(mk, x + r * cols + i), vmu[r]);
            s[r] = _mm512_fmadd_ps(d, d, s[r]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        rs[r] = 1.0f / sqrtf(_mm512_reduce_add_ps(s[r]) / (float)cols + eps);
        vrs[r] = _mm512_set1_ps(rs[r]);
    }
    for (int64_t i = 0; i < cols; i += 16) {
        __mmask16 mk = full ? (__mmask16)0xffff : tail_mask(cols - i);
        __m512 g = gamma ? _mm512_maskz_loadu_ps(mk, gamma + i) : _mm512_setzero_ps();
        __m512 b = beta ? _mm512_maskz_loadu_ps(mk, beta + i) : _mm512_setzero_ps();
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m512 v = _mm512_mul_ps(
                _mm512_sub_ps(_mm512_maskz_loadu_ps(mk, x + r * cols + i), vmu[r]), vrs[r]);
            if (gamma) {
                v = _mm512_mul_ps(v, g);
            }
            if (beta) {
                v = _mm512_add_ps(v, b);
            }
            _mm512_mask_storeu_ps(y + r * cols + i, mk, v);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        if (mean) {
            mean[r] = mu[r];
        }
        if (rstd) {
            rstd[r] = rs[r];
        }
    }
}

void kcpu_layernorm_fwd_avx512(int64_t rows, int64_t cols, const float *x, const float *gamma,
                               const float *beta, float eps, float *y, float *mean,
                               float *rstd) {
    int64_t r0 = 0;
    for (; r0 + 4 <= rows; r0 += 4) {
        if (cols % 16 == 0) {
            layernorm_rows4(1, cols, x + r0 * cols, gamma, beta, eps, y + r0 * cols,
                            mean ? mean + r0 : NULL, rstd ? rstd + r0 : NULL);
        } else {
            layernorm_rows4(0, cols, x + r0 * cols, gamma, beta, eps, y + r0 * cols,
                            mean ? mean + r0 : NULL, rstd ? rstd + r0 : NULL);
        }
    }
    for (int64_t r = r0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mu = row_sum(cols, xr) / (float)cols;
        __m512 vmu = _mm512_set1_ps(mu), s = _mm512_setzero_ps();
        for (int64_t i = 0; i < cols; i += 16) {
            __mmask16 mk = tail_mask(cols - i);
            __m512 d = _mm512_maskz_sub_ps(mk, _mm512_maskz_loadu_ps(mk, xr + i), vmu);
            s = _mm512_fmadd_ps(d, d, s);
        }
        float rs = 1.0f / sqrtf(_mm512_reduce_add_ps(s) / (float)cols + eps);
        __m512 vrs = _mm512_set1_ps(rs);
        for (int64_t i = 0; i < cols; i += 16) {
            __mmask16 mk = tail_mask(cols - i);
            __m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, xr + i), vmu), vrs);
            if (gamma) {
                v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(mk, gamma + i));
            }
            if (beta) {
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, beta + i));
            }
            _mm512_mask_storeu_ps(yr + i, mk, v);
        }
        if (mean) {
            mean[r] = mu;
        }
        if (rstd) {
            rstd[r] = rs;
        }
    }
}

void kcpu_layernorm_bwd_avx512(int64_t rows, int64_t cols, const float *x, const float *gamma,
                               const float *mean, const float *rstd, const float *dy,
                               float *dx, float *dgamma, float *dbeta) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols, *dyr = dy + r * cols;
        __m512 vmu = _mm512_set1_ps(mean[r]), vrs = _mm512_set1_ps(rstd[r]);
        __m512 sg = _mm512_setzero_ps(), sgx = _mm512_setzero_ps();
        for (int64_t i = 0; i < cols; i += 16) {
            __mmask16 mk = tail_mask(cols - i);
            __m512 xh = _mm512_maskz_mul_ps(
                mk, _mm512_sub_ps(_mm512_maskz_loadu_ps(mk, xr + i), vmu), vrs);
            __m512 g0 = _mm512_maskz_loadu_ps(mk, dyr + i);
            __m512 g = gamma ? _mm512_mul_ps(g0, _mm512_maskz_loadu_ps(mk, gamma + i)) : g0;
            sg = _mm512_add_ps(sg, g);
            sgx = _mm512_fmadd_ps(g, xh, sgx);
            if (dgamma) {
                _mm512_mask_storeu_ps(dgamma + i, mk,
                                      _mm512_fmadd_ps(g0, xh, _mm512_maskz_loadu_ps(mk, dgamma + i)));
            }
            if (dbeta) {
                _mm512_mask_storeu_ps(dbeta + i, mk,
                                      _mm512_add_ps(g0, _mm512_maskz_loadu_ps(mk, dbeta + i)));
            }
        }
        if (!dx) {
            continue;
        }
        float *dxr = dx + r * cols;
        __m512 mg = _mm512_set1_ps(_mm512_reduce_add_ps(sg) / (float)cols);
        __m512 mgx = _mm512_set1_ps(_mm512_reduce_add_ps(sgx) / (float)cols);
        for (int64_t i = 0; i < cols; i += 16) {
            __mmask16 mk = tail_mask(cols - i);
            __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, xr + i), vmu), vrs);
            __m512 g0 = _mm512_maskz_loadu_ps(mk, dyr + i);
            __m512 g = gamma ? _mm512_mul_ps(g0, _mm512_maskz_loadu_ps(mk, gamma + i)) : g0;
            __m512 t = _mm512_fnmadd_ps(xh, mgx, _mm512_sub_ps(g, mg));
            _mm512_mask_storeu_ps(dxr + i, mk,
                                  _mm512_fmadd_ps(t, vrs, _mm512_maskz_loadu_ps(mk, dxr + i)));
        }
    }
}

/* ------------------------------------------------------------------- adam */

void kcpu_adam_f32_avx512(int64_t n, float *w, const float *g, float *m, float *v, float lr,
                          float b1, float b2, float eps, float wd, float c1, float c2) {
    __m512 vb1 = _mm512_set1_ps(b1), vb2 = _mm512_set1_ps(b2);
    __m512 vb1c = _mm512_set1_ps(1.0f - b1), vb2c = _mm512_set1_ps(1.0f - b2);
    __m512 ic1 = _mm512_set1_ps(1.0f / c1), ic2 = _mm512_set1_ps(1.0f / c2);
    __m512 veps = _mm512_set1_ps(eps), vwd = _mm512_set1_ps(wd), vlr = _mm512_set1_ps(lr);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 mk = tail_mask(n - i);
        __m512 gv = _mm512_maskz_loadu_ps(mk, g + i), wv = _mm512_maskz_loadu_ps(mk, w + i);
        __m512 mv = _mm512_fmadd_ps(vb1, _mm512_maskz_loadu_ps(mk, m + i), _mm512_mul_ps(vb1c, gv));
        __m512 vv = _mm512_fmadd_ps(vb2, _mm512_maskz_loadu_ps(mk, v + i),
                                    _mm512_mul_ps(vb2c, _mm512_mul_ps(gv, gv)));
        __m512 den = _mm512_add_ps(_mm512_sqrt_ps(_mm512_mul_ps(vv, ic2)), veps);
        __m512 upd = _mm512_fmadd_ps(vwd, wv, _mm512_maskz_div_ps(mk, _mm512_mul_ps(mv, ic1), den));
        _mm512_mask_storeu_ps(w + i, mk, _mm512_fnmadd_ps(vlr, upd, wv));
        _mm512_mask_storeu_ps(m + i, mk, mv);
        _mm512_mask_storeu_ps(v + i, mk, vv);
    }
}
