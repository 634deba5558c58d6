/*
** topk_avx512.c: AVX-512 variants of the fused softmax + top-k and of the
** row argmax (contracts in kcpu.h, references in topk.c).  Compiled with
** -mavx512f etc.; called only through the dispatchers when
** kcpu_isa_active() >= KCPU_ISA_AVX512.
**
** Fused top-k, per row, 64 columns per step in four independent
** accumulators of 16 lanes (m, d), each lane online over its own columns
** with one exp per element:
**     e = exp(-|x - m|);   x > m:  d = d e + 1, m = x;   else  d = d + e
** (for x > m, e = exp(m - x) rescales the old sum; otherwise e = exp(x - m)
** is the new term).  m starts at -FLT_MAX, not -inf, so that x = -inf gives
** e = exp(-inf) = 0 and no -inf - -inf arises; a lane that saw only -inf
** keeps m = -FLT_MAX, d = 0.  The 64 (m, d) pairs are combined at the end of
** the row: M = max m,  D = sum d exp(m - M); D = 0 is an all-masked row.
** Selection, after the sums of a row (or of a piece of it): a column is a
** candidate iff x is at or above a lower bound of the row's k-th largest
** (row_resume), one vector compare per 16 columns, and candidates go to
** the heap in column order, so the result equals the reference's exactly.
*/
#include "kcpu_impl.h"
#include "kcpu_simd.h"

#include <float.h>
#include <immintrin.h>
#include <math.h>

typedef struct row_acc {
    __m512 m, d;
} row_acc;

ALWAYS_INLINE void acc_update(row_acc *a, __m512 x, __mmask16 live) {
    __m512 diff = _mm512_sub_ps(x, a->m);
    __m512 nabs = _mm512_castsi512_ps(
        _mm512_or_si512(_mm512_castps_si512(diff), _mm512_set1_epi32((int)0x80000000u)));
    __m512 e = exp512(nabs);
    __mmask16 gt = _mm512_mask_cmp_ps_mask(live, x, a->m, _CMP_GT_OQ);
    __mmask16 le = _kandn_mask16(gt, live);
    a->d = _mm512_mask_fmadd_ps(a->d, gt, e, _mm512_set1_ps(1.0f));
    a->d = _mm512_mask_add_ps(a->d, le, a->d, e);
    a->m = _mm512_mask_mov_ps(a->m, gt, x);
}

/* m and log d of the row from the lanes (log d = -inf: nothing finite). */
static void acc_finish(const row_acc *acc, int n_acc, float *m_out, float *logd_out) {
    __m512 mv = acc[0].m;
    for (int a = 1; a < n_acc; a++) {
        mv = _mm512_max_ps(mv, acc[a].m);
    }
    __m512 dv = _mm512_setzero_ps();
    for (int a = 0; a < n_acc; a++) {
        dv = _mm512_fmadd_ps(acc[a].d, exp512(_mm512_sub_ps(acc[a].m, mv)), dv);
    }
    float m = _mm512_reduce_max_ps(mv);
    float d = _mm512_reduce_add_ps(_mm512_mul_ps(dv, exp512(_mm512_sub_ps(mv, _mm512_set1_ps(m)))));
    *m_out = m;
    *logd_out = d > 0.0f ? logf(d) : -INFINITY;
}

typedef struct row_heap {
    float *val;
    int32_t *pos;
    int32_t n, cap;
} row_heap;

/* Row r's empty heap of min(k, cols) entries in the outputs (row r at
** out_idx + r k, out_val + r k). */
ALWAYS_INLINE row_heap heap_of(int64_t r, int32_t k, int64_t cols, int32_t *out_idx,
                               float *out_val) {
    return (row_heap){out_val + r * k, out_idx + r * k, 0, (int64_t)k < cols ? k : (int32_t)cols};
}

/* Offers the live lanes of x (columns c0 + lane) to the heap, in order. */
static void offer_all(row_heap *h, __m512 x, __mmask16 live, int64_t c0) {
    float t[16];
    _mm512_storeu_ps(t, x);
    for (unsigned bits = live; bits; bits &= bits - 1) {
        int l = __builtin_ctz(bits);
        if (h->n < h->cap) {
            kcpu_topk_heap_push(h->n++, h->val, h->pos, t[l], (int32_t)(c0 + l));
        } else if (t[l] > h->val[0]) {
            kcpu_topk_heap_replace(h->n, h->val, h->pos, t[l], (int32_t)(c0 + l));
        }
    }
}

ALWAYS_INLINE __m512 load_x(const float *xr, const float *bias, int64_t c, __mmask16 mk) {
    __m512 x = _mm512_maskz_loadu_ps(mk, xr + c);
    return bias ? _mm512_add_ps(x, _mm512_maskz_loadu_ps(mk, bias + c)) : x;
}

/* acc_update of a whole vector in two halves.  First: the reduced argument
** of exp(-|x - m|) (clamped at -110 only: the argument is <= 0 or NaN, where
** exp512's min(110, .) returns it unchanged), the lanes where x > m, and m
** updated.  Second: the rest of the exp and d updated.  The same operations
** as acc_update with every lane live, so the same floats. */
ALWAYS_INLINE void acc_first(row_acc *a, __m512 x, __m512 *r, __m512 *n, __mmask16 *gt) {
    __m512 diff = _mm512_sub_ps(x, a->m);
    __m512 nabs = _mm512_castsi512_ps(
        _mm512_or_si512(_mm512_castps_si512(diff), _mm512_set1_epi32((int)0x80000000u)));
    exp512_reduce(_mm512_max_ps(_mm512_set1_ps(-110.0f), nabs), r, n);
    *gt = _mm512_cmp_ps_mask(x, a->m, _CMP_GT_OQ);
    a->m = _mm512_mask_mov_ps(a->m, *gt, x);
}

ALWAYS_INLINE void acc_second(row_acc *a, __m512 r, __m512 n, __mmask16 gt) {
    __m512 e = exp512_finish(r, n);
    a->d = _mm512_mask_fmadd_ps(a->d, gt, e, _mm512_set1_ps(1.0f));
    a->d = _mm512_mask_add_ps(a->d, _knot_mask16(gt), a->d, e);
}

/* The first halves of a block of 64 columns from c (acc a gets columns c +
** 16 a ..). */
ALWAYS_INLINE void block_first(const float *xr, const float *bias, int64_t c, row_acc *a, __m512 *r,
                               __m512 *n, __mmask16 *gt) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) {
        acc_first(&a[q], load_x(xr, bias, c + 16 * q, 0xffff), &r[q], &n[q], &gt[q]);
    }
}

/* The steady state: online (m, d) over the 64-column blocks from c while
** they end at or before `end`; returns the first column not counted.
** Software-pipelined: the first halves of a block's updates (up to the
** exp's reduced argument) are issued before the second halves of the block
** before (the polynomial, the sums), so the instructions the core takes in
** together have their operands ready sooner: an exp is a chain of about 14
** dependent instructions, and with each vector's chain issued whole the
** scan ran at about 12 cycles per vector of 16 columns.  Kept out of line
** and free of calls so that the accumulators and the constants of the exp
** stay in registers. */
__attribute__((noinline)) static int64_t sum_blocks(const float *xr, const float *bias, int64_t c,
                                                    int64_t end, row_acc *acc) {
    if (c + 64 > end) {
        return c;
    }
    row_acc a[4] = {acc[0], acc[1], acc[2], acc[3]};
    __m512 r[4], n[4];
    __mmask16 gt[4];
    block_first(xr, bias, c, a, r, n, gt);
    for (; c + 128 <= end; c += 64) {
        /* vector q of the next block, then of this one: 8 of the halves'
        ** vectors live at a time, not 16 (the 16 spilled) */
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) {
            __m512 r2, n2;
            __mmask16 gt2;
            acc_first(&a[q], load_x(xr, bias, c + 64 + 16 * q, 0xffff), &r2, &n2, &gt2);
            acc_second(&a[q], r[q], n[q], gt[q]);
            r[q] = r2, n[q] = n2, gt[q] = gt2;
        }
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) {
        acc_second(&a[q], r[q], n[q], gt[q]);
    }
    acc[0] = a[0], acc[1] = a[1], acc[2] = a[2], acc[3] = a[3];
    return c + 64;
}

/* A lower bound of the row's k-th largest x (k = the heap's capacity) from
** what is counted so far: the heap's root once it is full (k columns at or
** above it), else, for k <= 16, the k-th largest of the 16 lane maxima over
** the four accumulators (the largest x of 16 disjoint sets of columns; a
** lane that saw no finite x says -FLT_MAX, which bounds nothing: -inf),
** else -inf. */
static float select_floor(const row_heap *h, const row_acc acc[4]) {
    if (h->n == h->cap) {
        return h->val[0];
    }
    if (h->cap > 16) {
        return -INFINITY;
    }
    __m512 v = _mm512_max_ps(_mm512_max_ps(acc[0].m, acc[1].m), _mm512_max_ps(acc[2].m, acc[3].m));
    float t = -INFINITY;
    for (int32_t i = 0; i < h->cap; i++) {
        t = _mm512_reduce_max_ps(v);
        __mmask16 eq = _mm512_cmp_ps_mask(v, _mm512_set1_ps(t), _CMP_EQ_OQ);
        v = _mm512_mask_mov_ps(v, eq & (__mmask16)-eq, _mm512_set1_ps(-INFINITY)); /* one lane */
    }
    return t > -FLT_MAX ? t : -INFINITY;
}

/* The selection of row_resume over the columns from .. to: those at or
** above floor to the heap in column order, the floor raised to the root
** once the heap is full.  64 columns per test of the masks; has_bias a
** constant. */
ALWAYS_INLINE void select_range(const int has_bias, const float *xr, const float *bias,
                                int64_t base, int64_t cols, int64_t from, int64_t to, row_heap *h,
                                float floor) {
    const float *bp = has_bias ? bias : NULL;
    __m512 vf = _mm512_set1_ps(floor);
    int64_t s = from;
    for (; s + 64 <= to; s += 64) {
        __m512 x[4];
        __mmask16 kq[4];
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) {
            x[q] = load_x(xr, bp, s - base + 16 * q, 0xffff);
            kq[q] = _mm512_cmp_ps_mask(x[q], vf, _CMP_GE_OQ);
        }
        if (_kortestz_mask16_u8(_kor_mask16(kq[0], kq[1]), _kor_mask16(kq[2], kq[3])) == 0) {
            for (int q = 0; q < 4; q++) {
                if (kq[q]) { /* the earlier vectors' offers may have raised the root */
                    offer_all(h, x[q], kq[q], s + 16 * q);
                }
            }
            if (h->n == h->cap && h->val[0] > floor) {
                floor = h->val[0];
                vf = _mm512_set1_ps(floor);
            }
        }
    }
    for (; s < to; s += 16) {
        __mmask16 mk = tail_mask(cols - s);
        __m512 x = load_x(xr, bp, s - base, mk);
        __mmask16 kq = _mm512_mask_cmp_ps_mask(mk, x, vf, _CMP_GE_OQ);
        if (kq) {
            offer_all(h, x, kq, s);
            if (h->n == h->cap && h->val[0] > floor) {
                floor = h->val[0];
                vf = _mm512_set1_ps(floor);
            }
        }
    }
}

/* Row r's columns from c (its first not yet counted) up to avail: x and
** bias (NULL: none) hold the columns from base on (xr[0] is column base);
** cols is the row's whole width.  Two passes over them.  First (m, d), as
** one pass over the row would count them whatever avail is (a multiple of
** 64 past base, or cols): the first ceil(cap / 16) vectors into acc[0]
** (where one pass fills the heap), then 64-column blocks while they lie
** below avail, and only at avail == cols the columns left after the last
** block (acc[0], masked).  Then the selection: the columns at or above a
** floor of the k-th largest x (select_floor; raised to the root as the
** heap fills) go to the heap in column order, which keeps the k best by
** (x descending, column ascending) of what it is offered: every column of
** the row's k best is offered, so the heap ends as one pass's, and a
** column that beats the root no longer stops the exp's pipeline.  Returns
** the first column not counted: below avail by less than 64 until avail ==
** cols. */
static int64_t row_resume(const float *xr, const float *bias, int64_t base, int64_t cols,
                          int64_t avail, int64_t c, row_heap *h, row_acc acc[4]) {
    const bool last = avail == cols;
    const int64_t from = c, fill_end = 16 * (((int64_t)h->cap + 15) / 16);
    for (; c < fill_end && c < cols && (last || c + 16 <= avail); c += 16) {
        __mmask16 mk = tail_mask(cols - c);
        acc_update(&acc[0], load_x(xr, bias, c - base, mk), mk);
    }
    if (c >= fill_end) {
        c = base + sum_blocks(xr, bias, c - base, avail - base, acc);
        for (; last && c < cols; c += 16) {
            __mmask16 mk = tail_mask(cols - c);
            acc_update(&acc[0], load_x(xr, bias, c - base, mk), mk);
        }
    }
    c = c < cols ? c : cols;
    if (bias) {
        select_range(1, xr, bias, base, cols, from, c, h, select_floor(h, acc));
    } else {
        select_range(0, xr, NULL, base, cols, from, c, h, select_floor(h, acc));
    }
    return c;
}

ALWAYS_INLINE void acc_start(row_acc acc[4]) {
    for (int a = 0; a < 4; a++) {
        acc[a].m = _mm512_set1_ps(-FLT_MAX);
        acc[a].d = _mm512_setzero_ps();
    }
}

/* Row r's outputs from its heap and (m, d) lanes (kcpu_softmax_topk_ex). */
static void row_finish(const row_heap *h, const row_acc acc[4], int32_t k, const int32_t *cols_idx,
                       const float *row_off, float *out_lse) {
    float m, logd;
    acc_finish(acc, 4, &m, &logd);
    kcpu_topk_row_finish(h->n, k, h->val, h->pos, m, logd, cols_idx, row_off);
    if (out_lse) {
        *out_lse = logd == -INFINITY ? -INFINITY : m + logd;
    }
}

void kcpu_softmax_topk_ex_avx512(int64_t rows, int64_t cols, const float *logits, const float *bias,
                                 const int32_t *cols_idx, const float *row_off, int32_t k,
                                 int32_t *out_idx, float *out_val, float *out_lse) {
    for (int64_t r = 0; r < rows; r++) {
        row_heap h = heap_of(r, k, cols, out_idx, out_val);
        row_acc acc[4];
        acc_start(acc);
        row_resume(logits + r * cols, bias, 0, cols, cols, 0, &h, acc);
        row_finish(&h, acc, k, cols_idx, row_off ? row_off + r : NULL,
                   out_lse ? out_lse + r : NULL);
    }
}

/* The resumable form (kcpu.h, kcpu_topk_piece): each row's lanes and heap
** count between pieces in its kcpu_topk_row. */
static void load_row(const kcpu_topk_row *s, row_acc acc[4], row_heap *h) {
    for (int a = 0; a < 4; a++) {
        acc[a].m = _mm512_loadu_ps(s->m + 16 * a);
        acc[a].d = _mm512_loadu_ps(s->d + 16 * a);
    }
    h->n = s->n;
}

static void store_row(kcpu_topk_row *s, const row_acc acc[4], const row_heap *h) {
    for (int a = 0; a < 4; a++) {
        _mm512_storeu_ps(s->m + 16 * a, acc[a].m);
        _mm512_storeu_ps(s->d + 16 * a, acc[a].d);
    }
    s->n = h->n;
}

void kcpu_topk_start_avx512(int64_t rows, kcpu_topk_row *st) {
    for (int64_t r = 0; r < rows; r++) {
        row_acc acc[4];
        acc_start(acc);
        row_heap h = {NULL, NULL, 0, 0};
        store_row(st + r, acc, &h);
    }
}

int64_t kcpu_topk_piece_avx512(int64_t rows, int64_t cols, const float *x, int64_t ldx,
                               int64_t base, int64_t avail, int32_t k, kcpu_topk_row *st,
                               int32_t *out_idx, float *out_val) {
    int64_t c = base;
    for (int64_t r = 0; r < rows; r++) {
        row_heap h = heap_of(r, k, cols, out_idx, out_val);
        row_acc acc[4];
        load_row(st + r, acc, &h);
        c = row_resume(x + r * ldx, NULL, base, cols, avail, base, &h, acc);
        store_row(st + r, acc, &h);
    }
    return c;
}

void kcpu_topk_end_avx512(int64_t rows, int64_t cols, int32_t k, const kcpu_topk_row *st,
                          int32_t *out_idx, float *out_val) {
    for (int64_t r = 0; r < rows; r++) {
        row_heap h = heap_of(r, k, cols, out_idx, out_val);
        row_acc acc[4];
        load_row(st + r, acc, &h);
        row_finish(&h, acc, k, NULL, NULL, NULL);
    }
}

/* ------------------------------------------------------------------ argmax */

typedef struct arg_acc {
    __m512 v;
    __m512i i;
} arg_acc;

ALWAYS_INLINE void arg_update(arg_acc *a, __m512 x, __m512i idx, __mmask16 live) {
    __mmask16 gt = _mm512_mask_cmp_ps_mask(live, x, a->v, _CMP_GT_OQ);
    a->v = _mm512_mask_mov_ps(a->v, gt, x);
    a->i = _mm512_mask_mov_epi32(a->i, gt, idx);
}

void kcpu_argmax_rows_avx512(int64_t rows, int64_t cols, const float *logits, const float *bias,
                             int32_t *out_idx, float *out_val) {
    const __mmask16 all = 0xffff;
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i s16 = _mm512_set1_epi32(16);
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = logits + r * cols;
        arg_acc acc[4];
        for (int a = 0; a < 4; a++) {
            acc[a].v = _mm512_set1_ps(-INFINITY);
            acc[a].i = _mm512_setzero_si512();
        }
        __m512i vi = iota;
        int64_t c = 0;
        for (; c + 64 <= cols; c += 64) {
            arg_update(&acc[0], load_x(xr, bias, c, all), vi, all);
            vi = _mm512_add_epi32(vi, s16);
            arg_update(&acc[1], load_x(xr, bias, c + 16, all), vi, all);
            vi = _mm512_add_epi32(vi, s16);
            arg_update(&acc[2], load_x(xr, bias, c + 32, all), vi, all);
            vi = _mm512_add_epi32(vi, s16);
            arg_update(&acc[3], load_x(xr, bias, c + 48, all), vi, all);
            vi = _mm512_add_epi32(vi, s16);
        }
        for (; c < cols; c += 16) {
            __mmask16 mk = tail_mask(cols - c);
            arg_update(&acc[0], load_x(xr, bias, c, mk), vi, mk);
            vi = _mm512_add_epi32(vi, s16);
        }
        /* Each lane holds its first maximum; take the lowest column among
        ** the lanes that reach the row's maximum. */
        __m512 mv =
            _mm512_max_ps(_mm512_max_ps(acc[0].v, acc[1].v), _mm512_max_ps(acc[2].v, acc[3].v));
        float best = _mm512_reduce_max_ps(mv);
        int32_t at = 0;
        if (best > -INFINITY) {
            __m512 vb = _mm512_set1_ps(best);
            at = INT32_MAX;
            for (int a = 0; a < 4; a++) {
                __mmask16 eq = _mm512_cmp_ps_mask(acc[a].v, vb, _CMP_EQ_OQ);
                if (eq) {
                    int32_t lo = _mm512_mask_reduce_min_epi32(eq, acc[a].i);
                    at = lo < at ? lo : at;
                }
            }
        }
        out_idx[r] = at;
        if (out_val) {
            out_val[r] = best;
        }
    }
}
