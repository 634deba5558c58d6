/*
** topk.c: the fused output layer (bias + log-softmax + top-k in one pass),
** the argmax of beam 1, the merge of per-row top-k lists and the beam-search
** step built from both.  Scalar references and the dispatch here; AVX-512
** and AVX2 variants in topk_avx512.c / topk_avx2.c.  Contracts in kcpu.h
** ("fused softmax / top-k").
**
** Selection keeps, per row, a binary heap of the best raw x seen so far in
** the caller's output arrays, worst at the root.  Columns are scanned in
** increasing order, so a new column is later than every kept one and enters
** a full heap iff x > root strictly: equal x keep the lower column.  The
** merge scans its lists in (list, position) order and keeps the flat
** position as the heap's tie key, with the same rule.
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

/* ------------------------------------------------------------------ heap */

static inline bool worse(float va, int32_t pa, float vb, int32_t pb) {
    return va < vb || (va == vb && pa > pb);
}

void kcpu_topk_heap_push(int32_t n, float *val, int32_t *pos, float v, int32_t p) {
    int32_t i = n;
    while (i > 0) {
        int32_t up = (i - 1) / 2;
        if (!worse(v, p, val[up], pos[up])) {
            break;
        }
        val[i] = val[up];
        pos[i] = pos[up];
        i = up;
    }
    val[i] = v;
    pos[i] = p;
}

void kcpu_topk_heap_replace(int32_t n, float *val, int32_t *pos, float v, int32_t p) {
    int32_t i = 0;
    for (;;) {
        int64_t c = 2 * (int64_t)i + 1;
        if (c >= n) {
            break;
        }
        if (c + 1 < n && worse(val[c + 1], pos[c + 1], val[c], pos[c])) {
            c++;
        }
        if (!worse(val[c], pos[c], v, p)) {
            break;
        }
        val[i] = val[c];
        pos[i] = pos[c];
        i = (int32_t)c;
    }
    val[i] = v;
    pos[i] = p;
}

/* Heap sort: the worst goes last, then the next worst, ... best first. */
static void heap_sort(int32_t n, float *val, int32_t *pos) {
    for (int32_t end = n - 1; end > 0; end--) {
        float v = val[end];
        int32_t p = pos[end];
        val[end] = val[0];
        pos[end] = pos[0];
        kcpu_topk_heap_replace(end, val, pos, v, p);
    }
}

void kcpu_topk_row_finish(int32_t n, int32_t k, float *val, int32_t *pos, float m, float logd,
                          const int32_t *cols_idx, const float *row_off) {
    heap_sort(n, val, pos);
    bool masked = logd == -INFINITY;
    for (int32_t j = 0; j < n; j++) {
        float lp = masked ? -INFINITY : (val[j] - m) - logd;
        val[j] = row_off ? *row_off + lp : lp;
        pos[j] = cols_idx ? cols_idx[pos[j]] : pos[j];
    }
    for (int32_t j = n; j < k; j++) {
        val[j] = -INFINITY;
        pos[j] = -1;
    }
}

/* ------------------------------------------------------- fused top-k (ref) */

void kcpu_softmax_topk_ex_ref(int64_t rows, int64_t cols, const float *logits, const float *bias,
                              const int32_t *cols_idx, const float *row_off, int32_t k,
                              int32_t *out_idx, float *out_val, float *out_lse) {
    int32_t cap = (int64_t)k < cols ? k : (int32_t)cols;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = logits + r * cols;
        float *hv = out_val + r * k;
        int32_t *hp = out_idx + r * k;
        int32_t n = 0;
        float m = -INFINITY;
        double d = 0.0;
        for (int64_t c = 0; c < cols; c++) {
            float x = bias ? xr[c] + bias[c] : xr[c];
            if (x > m) {
                d = d * exp((double)m - (double)x) + 1.0; /* m = -inf: d is 0 */
                m = x;
            } else if (x > -INFINITY) {
                d += exp((double)x - (double)m);
            }
            if (n < cap) {
                kcpu_topk_heap_push(n++, hv, hp, x, (int32_t)c);
            } else if (x > hv[0]) {
                kcpu_topk_heap_replace(n, hv, hp, x, (int32_t)c);
            }
        }
        float logd = d > 0.0 ? (float)log(d) : -INFINITY;
        kcpu_topk_row_finish(n, k, hv, hp, m, logd, cols_idx, row_off ? row_off + r : NULL);
        if (out_lse) {
            out_lse[r] = logd == -INFINITY ? -INFINITY : m + logd;
        }
    }
}

void kcpu_softmax_topk_ex(int64_t rows, int64_t cols, const float *logits, const float *bias,
                          const int32_t *cols_idx, const float *row_off, int32_t k,
                          int32_t *out_idx, float *out_val, float *out_lse) {
    kcpu_isa isa = simd_level();
#ifdef MT_HAVE_AVX512_BUILD
    if (isa >= KCPU_ISA_AVX512) {
        kcpu_softmax_topk_ex_avx512(rows, cols, logits, bias, cols_idx, row_off, k, out_idx,
                                    out_val, out_lse);
        return;
    }
#endif
    if (isa >= KCPU_ISA_AVX2) {
        kcpu_softmax_topk_ex_avx2(rows, cols, logits, bias, cols_idx, row_off, k, out_idx, out_val,
                                  out_lse);
        return;
    }
    kcpu_softmax_topk_ex_ref(rows, cols, logits, bias, cols_idx, row_off, k, out_idx, out_val,
                             out_lse);
}

bool kcpu_topk_resumable(void) { return simd_level() >= KCPU_ISA_AVX512; }

/* The resumable entries: only the AVX-512 variant (callers check
** kcpu_topk_resumable first; elsewhere they do nothing). */
void kcpu_topk_start(int64_t rows, kcpu_topk_row *st) {
#ifdef MT_HAVE_AVX512_BUILD
    if (kcpu_topk_resumable()) kcpu_topk_start_avx512(rows, st);
#else
    (void)rows, (void)st;
#endif
}

int64_t kcpu_topk_piece(int64_t rows, int64_t cols, const float *x, int64_t ldx, int64_t base,
                        int64_t avail, int32_t k, kcpu_topk_row *st, int32_t *out_idx,
                        float *out_val) {
#ifdef MT_HAVE_AVX512_BUILD
    if (kcpu_topk_resumable())
        return kcpu_topk_piece_avx512(rows, cols, x, ldx, base, avail, k, st, out_idx, out_val);
#else
    (void)rows, (void)cols, (void)x, (void)ldx, (void)avail, (void)k, (void)st, (void)out_idx,
        (void)out_val;
#endif
    return base;
}

void kcpu_topk_end(int64_t rows, int64_t cols, int32_t k, const kcpu_topk_row *st, int32_t *out_idx,
                   float *out_val) {
#ifdef MT_HAVE_AVX512_BUILD
    if (kcpu_topk_resumable()) kcpu_topk_end_avx512(rows, cols, k, st, out_idx, out_val);
#else
    (void)rows, (void)cols, (void)k, (void)st, (void)out_idx, (void)out_val;
#endif
}

void kcpu_softmax_topk(int64_t rows, int64_t cols, const float *logits, const float *bias,
                       int32_t k, int32_t *out_idx, float *out_logp, float *out_lse) {
    kcpu_softmax_topk_ex(rows, cols, logits, bias, NULL, NULL, k, out_idx, out_logp, out_lse);
}

void kcpu_softmax_topk_short(int64_t rows, int64_t n_short, const float *logits, const float *bias,
                             const int32_t *cols_idx, int32_t k, int32_t *out_idx, float *out_logp,
                             float *out_lse) {
    kcpu_softmax_topk_ex(rows, n_short, logits, bias, cols_idx, NULL, k, out_idx, out_logp,
                         out_lse);
}

/* ------------------------------------------------------------ merge, beam */

void kcpu_topk_merge(int32_t n_lists, int32_t k_in, const float *val, const int32_t *idx,
                     int32_t k_out, int32_t *out_list, int32_t *out_idx, float *out_val) {
    /* Heap of (val, flat position l*k_in + j) in out_val / out_idx. */
    int32_t n = 0;
    for (int32_t l = 0; l < n_lists; l++) {
        for (int32_t j = 0; j < k_in; j++) {
            int32_t f = l * k_in + j;
            if (idx[f] < 0) {
                break;
            }
            if (n < k_out) {
                kcpu_topk_heap_push(n++, out_val, out_idx, val[f], f);
            } else if (val[f] > out_val[0]) {
                kcpu_topk_heap_replace(n, out_val, out_idx, val[f], f);
            } else {
                break; /* the rest of a sorted list is no better */
            }
        }
    }
    heap_sort(n, out_val, out_idx);
    for (int32_t j = 0; j < n; j++) {
        int32_t f = out_idx[j];
        out_list[j] = f / k_in;
        out_idx[j] = idx[f];
    }
    for (int32_t j = n; j < k_out; j++) {
        out_list[j] = -1;
        out_idx[j] = -1;
        out_val[j] = -INFINITY;
    }
}

void kcpu_softmax_topk_beam(int64_t n_sent, const int32_t *rows_per_sent, int64_t cols,
                            const float *logits, const float *bias, const int32_t *cols_idx,
                            const float *path, int32_t k, int32_t *scratch_idx, float *scratch_val,
                            int32_t *out_row, int32_t *out_idx, float *out_score, float *out_lse) {
    int64_t rows = 0;
    for (int64_t s = 0; s < n_sent; s++) {
        rows += rows_per_sent[s];
    }
    kcpu_softmax_topk_ex(rows, cols, logits, bias, cols_idx, path, k, scratch_idx, scratch_val,
                         out_lse);
    int64_t r0 = 0;
    for (int64_t s = 0; s < n_sent; s++) {
        int32_t nr = rows_per_sent[s];
        int32_t *orow = out_row + s * k;
        kcpu_topk_merge(nr, k, scratch_val + r0 * k, scratch_idx + r0 * k, k, orow, out_idx + s * k,
                        out_score + s * k);
        for (int32_t j = 0; j < k && orow[j] >= 0; j++) {
            orow[j] += (int32_t)r0;
        }
        r0 += nr;
    }
}

/* ------------------------------------------------------------------ argmax */

void kcpu_argmax_rows_ref(int64_t rows, int64_t cols, const float *logits, const float *bias,
                          int32_t *out_idx, float *out_val) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = logits + r * cols;
        float best = -INFINITY;
        int32_t at = 0;
        for (int64_t c = 0; c < cols; c++) {
            float x = bias ? xr[c] + bias[c] : xr[c];
            if (x > best) {
                best = x;
                at = (int32_t)c;
            }
        }
        out_idx[r] = at;
        if (out_val) {
            out_val[r] = best;
        }
    }
}

void kcpu_argmax_rows(int64_t rows, int64_t cols, const float *logits, const float *bias,
                      int32_t *out_idx, float *out_val) {
    kcpu_isa isa = simd_level();
#ifdef MT_HAVE_AVX512_BUILD
    if (isa >= KCPU_ISA_AVX512) {
        kcpu_argmax_rows_avx512(rows, cols, logits, bias, out_idx, out_val);
        return;
    }
#endif
    if (isa >= KCPU_ISA_AVX2) {
        kcpu_argmax_rows_avx2(rows, cols, logits, bias, out_idx, out_val);
        return;
    }
    kcpu_argmax_rows_ref(rows, cols, logits, bias, out_idx, out_val);
}
