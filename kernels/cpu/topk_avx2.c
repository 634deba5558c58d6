/*
** topk_avx2.c: AVX2 + FMA variants of the fused softmax + top-k and of the
** row argmax (contracts in kcpu.h, references in topk.c).  Compiled with
** -mavx2 -mfma; called through the dispatchers when kcpu_isa_active() is
** KCPU_ISA_AVX2 (or above it in a build without the AVX-512 variants).
**
** The algorithm of topk_avx512.c, 8 lanes wide.  Fused top-k, per row, 32
** columns per step in four independent accumulators of 8 lanes (m, d),
** each lane online over its own columns with one exp per element:
**     e = exp(-|x - m|);   x > m:  d = d e + 1, m = x;   else  d = d + e
** m starts at -FLT_MAX, not -inf, so that x = -inf gives e = 0 and no
** -inf - -inf arises; a lane that saw only -inf keeps m = -FLT_MAX, d = 0.
** The 32 (m, d) pairs are combined at the end of the row: M = max m,
** D = sum d exp(m - M); D = 0 is an all-masked row.  Selection: while the
** heap is not full every column goes to it (scalar); then a column is a
** candidate iff x > root, one vector compare per 8 columns, and candidates
** are re-checked in column order against the root as it rises, so the
** indices equal the reference's exactly.  Tails (cols not a multiple of 8)
** are read with _mm256_maskload_ps, nothing past the row.
*/
#include "kcpu_impl.h"
#include "kcpu_simd_avx2.h"

#include <float.h>
#include <immintrin.h>
#include <math.h>

typedef struct row_acc {
    __m256 m, d;
} row_acc;

/* live: the lanes that hold columns (all of them when full). */
ALWAYS_INLINE void acc_update(row_acc *a, __m256 x, __m256 live, int full) {
    __m256 diff = _mm256_sub_ps(x, a->m);
    __m256 nabs = _mm256_or_ps(diff, _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u)));
    __m256 e = exp256(nabs);
    __m256 gt = _mm256_cmp_ps(x, a->m, _CMP_GT_OQ);
    __m256 le = full ? _mm256_andnot_ps(gt, _mm256_castsi256_ps(_mm256_set1_epi32(-1)))
                     : _mm256_andnot_ps(gt, live);
    if (!full) {
        gt = _mm256_and_ps(gt, live);
    }
    a->d = _mm256_blendv_ps(a->d, _mm256_fmadd_ps(a->d, e, _mm256_set1_ps(1.0f)), gt);
    a->d = _mm256_add_ps(a->d, _mm256_and_ps(le, e));
    a->m = _mm256_blendv_ps(a->m, x, gt);
}

/* m and log d of the row from the lanes (log d = -inf: nothing finite). */
static void acc_finish(const row_acc *acc, int n_acc, float *m_out, float *logd_out) {
    __m256 mv = acc[0].m;
    for (int a = 1; a < n_acc; a++) {
        mv = _mm256_max_ps(mv, acc[a].m);
    }
    __m256 dv = _mm256_setzero_ps();
    for (int a = 0; a < n_acc; a++) {
        dv = _mm256_fmadd_ps(acc[a].d, exp256(_mm256_sub_ps(acc[a].m, mv)), dv);
    }
    float m = hmax8(mv);
    float d = hsum8(_mm256_mul_ps(dv, exp256(_mm256_sub_ps(mv, _mm256_set1_ps(m)))));
    *m_out = m;
    *logd_out = d > 0.0f ? logf(d) : -INFINITY;
}

typedef struct row_heap {
    float *val;
    int32_t *pos;
    int32_t n, cap;
} row_heap;

/* Offers the lanes of x in bits (columns c0 + lane) to the heap, in order. */
static void offer_all(row_heap *h, __m256 x, unsigned bits, int64_t c0) {
    float t[8];
    _mm256_storeu_ps(t, x);
    for (; bits; bits &= bits - 1) {
        int l = __builtin_ctz(bits);
        if (h->n < h->cap) {
            kcpu_topk_heap_push(h->n++, h->val, h->pos, t[l], (int32_t)(c0 + l));
        } else if (t[l] > h->val[0]) {
            kcpu_topk_heap_replace(h->n, h->val, h->pos, t[l], (int32_t)(c0 + l));
        }
    }
}

/* x = logits + bias at column c, full vector or the lanes of mk (0 elsewhere). */
ALWAYS_INLINE __m256 load_x(const float *xr, const float *bias, int64_t c, __m256i mk, int full) {
    __m256 x = load8(xr + c, mk, full);
    return bias ? _mm256_add_ps(x, load8(bias + c, mk, full)) : x;
}

/* The steady state: online (m, d) over 32-column blocks from c while at
** least 32 columns are left, until a block has a column with x > thr.
** Returns that block's start (its columns already counted in acc) with the
** per-column hit bits in *hits, or the first column not scanned with *hits
** = 0.  Kept out of line and free of calls so that the accumulators and
** the constants of exp256 stay in registers. */
__attribute__((noinline)) static int64_t scan_blocks(const float *xr, const float *bias, int64_t c,
                                                     int64_t cols, float thr, row_acc *acc,
                                                     uint32_t *hits) {
    const __m256i all = _mm256_set1_epi32(-1);
    const __m256 none = _mm256_setzero_ps();
    row_acc a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    __m256 vt = _mm256_set1_ps(thr);
    uint32_t h = 0;
    for (; c + 32 <= cols; c += 32) {
        __m256 x0 = load_x(xr, bias, c, all, 1), x1 = load_x(xr, bias, c + 8, all, 1);
        __m256 x2 = load_x(xr, bias, c + 16, all, 1), x3 = load_x(xr, bias, c + 24, all, 1);
        acc_update(&a0, x0, none, 1);
        acc_update(&a1, x1, none, 1);
        acc_update(&a2, x2, none, 1);
        acc_update(&a3, x3, none, 1);
        __m256 k0 = _mm256_cmp_ps(x0, vt, _CMP_GT_OQ), k1 = _mm256_cmp_ps(x1, vt, _CMP_GT_OQ);
        __m256 k2 = _mm256_cmp_ps(x2, vt, _CMP_GT_OQ), k3 = _mm256_cmp_ps(x3, vt, _CMP_GT_OQ);
        __m256 any = _mm256_or_ps(_mm256_or_ps(k0, k1), _mm256_or_ps(k2, k3));
        if (__builtin_expect(!_mm256_testz_ps(any, any), 0)) {
            h = (uint32_t)_mm256_movemask_ps(k0) | (uint32_t)_mm256_movemask_ps(k1) << 8 |
                (uint32_t)_mm256_movemask_ps(k2) << 16 | (uint32_t)_mm256_movemask_ps(k3) << 24;
            break;
        }
    }
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
    *hits = h;
    return c;
}

void kcpu_softmax_topk_ex_avx2(int64_t rows, int64_t cols, const float *logits, const float *bias,
                               const int32_t *cols_idx, const float *row_off, int32_t k,
                               int32_t *out_idx, float *out_val, float *out_lse) {
    const __m256i all = _mm256_set1_epi32(-1);
    int32_t cap = (int64_t)k < cols ? k : (int32_t)cols;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = logits + r * cols;
        row_heap h = {out_val + r * k, out_idx + r * k, 0, cap};
        row_acc acc[4];
        for (int a = 0; a < 4; a++) {
            acc[a].m = _mm256_set1_ps(-FLT_MAX);
            acc[a].d = _mm256_setzero_ps();
        }
        int64_t c = 0;
        /* Filling the heap: every column is offered. */
        for (; c < cols && h.n < h.cap; c += 8) {
            __m256i mk = tail_mask8(cols - c);
            __m256 x = load_x(xr, bias, c, mk, 0);
            acc_update(&acc[0], x, _mm256_castsi256_ps(mk), 0);
            offer_all(&h, x, (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(mk)), c);
        }
        /* Full heap: only columns above its root, re-checked in order. */
        while (c + 32 <= cols) {
            uint32_t hits;
            c = scan_blocks(xr, bias, c, cols, h.val[0], acc, &hits);
            if (hits == 0) {
                break;
            }
            for (int q = 0; q < 4; q++) {
                unsigned kq = (hits >> (8 * q)) & 0xffu;
                if (kq) {
                    offer_all(&h, load_x(xr, bias, c + 8 * q, all, 1), kq, c + 8 * q);
                }
            }
            c += 32;
        }
        for (; c < cols; c += 8) {
            __m256i mk = tail_mask8(cols - c);
            __m256 live = _mm256_castsi256_ps(mk);
            __m256 x = load_x(xr, bias, c, mk, 0);
            acc_update(&acc[0], x, live, 0);
            __m256 kc = _mm256_and_ps(_mm256_cmp_ps(x, _mm256_set1_ps(h.val[0]), _CMP_GT_OQ), live);
            unsigned bits = (unsigned)_mm256_movemask_ps(kc);
            if (bits) {
                offer_all(&h, x, bits, c);
            }
        }
        float m, logd;
        acc_finish(acc, 4, &m, &logd);
        kcpu_topk_row_finish(h.n, k, h.val, h.pos, m, logd, cols_idx, row_off ? row_off + r : NULL);
        if (out_lse) {
            out_lse[r] = logd == -INFINITY ? -INFINITY : m + logd;
        }
    }
}

/* ------------------------------------------------------------------ argmax */

typedef struct arg_acc {
    __m256 v;
    __m256i i;
} arg_acc;

/* Keeps each lane's first maximum (strictly greater replaces). */
ALWAYS_INLINE void arg_update(arg_acc *a, __m256 x, __m256i idx, __m256 live, int full) {
    __m256 gt = _mm256_cmp_ps(x, a->v, _CMP_GT_OQ);
    if (!full) {
        gt = _mm256_and_ps(gt, live);
    }
    a->v = _mm256_blendv_ps(a->v, x, gt);
    a->i = _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(a->i), _mm256_castsi256_ps(idx), gt));
}

void kcpu_argmax_rows_avx2(int64_t rows, int64_t cols, const float *logits, const float *bias,
                           int32_t *out_idx, float *out_val) {
    const __m256i all = _mm256_set1_epi32(-1);
    const __m256 none = _mm256_setzero_ps();
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i s8 = _mm256_set1_epi32(8);
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = logits + r * cols;
        arg_acc acc[4];
        for (int a = 0; a < 4; a++) {
            acc[a].v = _mm256_set1_ps(-INFINITY);
            acc[a].i = _mm256_setzero_si256();
        }
        __m256i vi = iota;
        int64_t c = 0;
        for (; c + 32 <= cols; c += 32) {
            arg_update(&acc[0], load_x(xr, bias, c, all, 1), vi, none, 1);
            vi = _mm256_add_epi32(vi, s8);
            arg_update(&acc[1], load_x(xr, bias, c + 8, all, 1), vi, none, 1);
            vi = _mm256_add_epi32(vi, s8);
            arg_update(&acc[2], load_x(xr, bias, c + 16, all, 1), vi, none, 1);
            vi = _mm256_add_epi32(vi, s8);
            arg_update(&acc[3], load_x(xr, bias, c + 24, all, 1), vi, none, 1);
            vi = _mm256_add_epi32(vi, s8);
        }
        for (; c < cols; c += 8) {
            __m256i mk = tail_mask8(cols - c);
            arg_update(&acc[0], load_x(xr, bias, c, mk, 0), vi, _mm256_castsi256_ps(mk), 0);
            vi = _mm256_add_epi32(vi, s8);
        }
        /* Each lane holds its first maximum; take the lowest column among
        ** the lanes that reach the row's maximum. */
        __m256 mv =
            _mm256_max_ps(_mm256_max_ps(acc[0].v, acc[1].v), _mm256_max_ps(acc[2].v, acc[3].v));
        float best = hmax8(mv);
        int32_t at = 0;
        if (best > -INFINITY) {
            __m256 vb = _mm256_set1_ps(best);
            __m256i lo = _mm256_set1_epi32(INT32_MAX);
            for (int a = 0; a < 4; a++) {
                __m256 eq = _mm256_cmp_ps(acc[a].v, vb, _CMP_EQ_OQ);
                __m256i cand = _mm256_castps_si256(
                    _mm256_blendv_ps(_mm256_castsi256_ps(_mm256_set1_epi32(INT32_MAX)),
                                     _mm256_castsi256_ps(acc[a].i), eq));
                lo = _mm256_min_epi32(lo, cand);
            }
            __m128i l4 = _mm_min_epi32(_mm256_castsi256_si128(lo), _mm256_extracti128_si256(lo, 1));
            l4 = _mm_min_epi32(l4, _mm_shuffle_epi32(l4, _MM_SHUFFLE(1, 0, 3, 2)));
            l4 = _mm_min_epi32(l4, _mm_shuffle_epi32(l4, _MM_SHUFFLE(2, 3, 0, 1)));
            at = _mm_cvtsi128_si32(l4);
        }
        out_idx[r] = at;
        if (out_val) {
            out_val[r] = best;
        }
    }
}
