/*
** attn_avx512.c: AVX-512 variant of the fused attention (kcpu_attn_rows,
** kcpu.h; scalar oracle in attn.c).
**
** Scores: 16 keys at a time, each key's dk products in one vector (dk / 16
** FMAs against the head's query, kept in registers for dk <= 64), then one
** transposing reduction turns the 16 vectors into the 16 scores (8 + 4
** unpack-and-add pairs within 128-bit lanes, 2 + 1 across them: 45
** instructions per 16 keys instead of a horizontal sum per key).
** Softmax: mask, max, exp512 and sum over the row's scores in the scratch.
** Weighted sum: each weight broadcast against the value row, 4 positions
** per iteration in separate accumulators (4 dk / 16 FMA chains).
*/
#include "kcpu_impl.h"
#include "kcpu_simd.h"

enum { NQ_MAX = 4 }; /* query chunks kept in registers: dk <= 64 */

/* r[j] = the sum of the lanes of v[j]. */
ALWAYS_INLINE __m512 sum16(const __m512 *v) {
    __m512 w[8], x[4];
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
        w[k] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * k], v[2 * k + 1]),
                             _mm512_unpackhi_ps(v[2 * k], v[2 * k + 1]));
    }
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        __m512d a = _mm512_castps_pd(w[2 * k]), b = _mm512_castps_pd(w[2 * k + 1]);
        x[k] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)),
                             _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
    }
    __m512 y0 = _mm512_add_ps(_mm512_shuffle_f32x4(x[0], x[1], 0x88),
                              _mm512_shuffle_f32x4(x[0], x[1], 0xdd));
    __m512 y1 = _mm512_add_ps(_mm512_shuffle_f32x4(x[2], x[3], 0x88),
                              _mm512_shuffle_f32x4(x[2], x[3], 0xdd));
    return _mm512_add_ps(_mm512_shuffle_f32x4(y0, y1, 0x88), _mm512_shuffle_f32x4(y0, y1, 0xdd));
}

/* Chunk c (16 floats, the last one masked by `last`) of a dk-float row. */
ALWAYS_INLINE __m512 chunk(const float *p, int c, int nq, __mmask16 last) {
    return c == nq - 1 ? _mm512_maskz_loadu_ps(last, p + 16 * c) : _mm512_loadu_ps(p + 16 * c);
}

/* 16 elements (mk) at element offset off of a history array: f32, or f16
** widened (h16). */
ALWAYS_INLINE __m512 hload(const int h16, const void *p, int64_t off, __mmask16 mk) {
    if (h16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mk, (const uint16_t *)p + off));
    return _mm512_maskz_loadu_ps(mk, (const float *)p + off);
}

/* s[t] = alpha q . k[t] for the nk keys k[t] = kp + t st (nq = dk / 16
** rounded up; a constant <= NQ_MAX after inlining keeps q in registers).
** Whole vectors are stored: s has 15 floats of room past nk. */
ALWAYS_INLINE void scores(const int nq, int64_t dk, const float *q, const float *kp, int64_t st,
                          int64_t nk, float alpha, float *s) {
    __mmask16 last = tail_mask(dk - 16 * (int64_t)(nq - 1));
    __m512 qv[NQ_MAX];
#pragma GCC unroll 4
    for (int c = 0; c < nq && c < NQ_MAX; c++) {
        qv[c] = chunk(q, c, nq, last);
    }
    const __m512 va = _mm512_set1_ps(alpha);
    for (int64_t t0 = 0; t0 < nk; t0 += 16) {
        int64_t cnt = nk - t0;
        __m512 acc[16];
#pragma GCC unroll 16
        for (int u = 0; u < 16; u++) {
            acc[u] = _mm512_setzero_ps();
            if (u < cnt) {
                const float *k = kp + (t0 + u) * st;
#pragma GCC unroll 4
                for (int c = 0; c < nq; c++) {
                    __m512 qc = nq <= NQ_MAX ? qv[c] : chunk(q, c, nq, last);
                    acc[u] = _mm512_fmadd_ps(qc, chunk(k, c, nq, last), acc[u]);
                }
            }
        }
        _mm512_storeu_ps(s + t0, _mm512_mul_ps(sum16(acc), va)); /* lanes past nk: padding */
    }
}

/* The accumulators of weigh (4 chains of up to NQ_MAX chunks) set to 0. */
ALWAYS_INLINE void zero_chains(__m512 acc[4][NQ_MAX]) {
#pragma GCC unroll 4
    for (int w = 0; w < 4; w++) {
#pragma GCC unroll 4
        for (int c = 0; c < NQ_MAX; c++) {
            acc[w][c] = _mm512_setzero_ps();
        }
    }
}

/* acc[c] += sum_t e[t] v[t] over the nv value rows v[t] at element (t0 + t)
** st of vp (f16 when h16); four positions per iteration in acc, acc +
** NQ_MAX, ... (separate chains). */
ALWAYS_INLINE void weigh(const int nq, const int h16, int64_t dk, const float *e, const void *vp,
                         int64_t st, int64_t nv, __m512 acc[4][NQ_MAX], int64_t t0) {
    __mmask16 last = tail_mask(dk - 16 * (int64_t)(nq - 1));
    vp = h16 ? (const void *)((const uint16_t *)vp + t0 * st)
             : (const void *)((const float *)vp + t0 * st);
    int64_t t = 0;
    for (; t + 4 <= nv; t += 4) {
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            __m512 w = _mm512_set1_ps(e[t + u]);
#pragma GCC unroll 4
            for (int c = 0; c < nq; c++) {
                __m512 v = hload(h16, vp, (t + u) * st + 16 * c, c == nq - 1 ? last : 0xffff);
                acc[u][c] = _mm512_fmadd_ps(w, v, acc[u][c]);
            }
        }
    }
    for (; t < nv; t++) {
        __m512 w = _mm512_set1_ps(e[t]);
#pragma GCC unroll 4
        for (int c = 0; c < nq; c++) {
            __m512 v = hload(h16, vp, t * st + 16 * c, c == nq - 1 ? last : 0xffff);
            acc[0][c] = _mm512_fmadd_ps(w, v, acc[0][c]);
        }
    }
}

/* s[0..tk) += mask (when given), then exp(s - max); returns 1 / the sum. */
static float softmax_row(int64_t tk, float *s, const float *mask) {
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int64_t t = 0; t < tk; t += 16) {
        __mmask16 mk = tail_mask(tk - t);
        __m512 v = _mm512_maskz_loadu_ps(mk, s + t);
        if (mask) {
            v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, mask + t));
            _mm512_storeu_ps(s + t, v);
        }
        mx = _mm512_mask_max_ps(mx, mk, v, mx);
    }
    __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mx)), sum = _mm512_setzero_ps();
    for (int64_t t = 0; t < tk; t += 16) {
        __mmask16 mk = tail_mask(tk - t);
        __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, s + t), m));
        _mm512_storeu_ps(s + t, e);
        sum = _mm512_mask_add_ps(sum, mk, sum, e);
    }
    return 1.0f / _mm512_reduce_add_ps(sum);
}

/* softmax_row for the nh <= 8 heads of a row at once when tk <= 16 (each
** head's scores in one vector): the same operations per head and lane
** (mask add, max, exp, sum of the live lanes, 1 / sum), so the same
** results, but the heads' reduction and exp chains are independent and
** overlap instead of running one after another.  A decoding step's rows
** are short (sources of about a dozen tokens), where this pays (cross-
** attention over 8-12 positions in runs of 4 rows); two vectors per head,
** tk <= 32, did not.  The weights go back to s (head u at s + u ld), 1 /
** sum to inv[u]. */
ALWAYS_INLINE void softmax_heads16(int nh, int64_t tk, float *s, int64_t ld, const float *mask,
                                   float *inv) {
    const __mmask16 mk = tail_mask(tk);
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 v[8];
    float m[8];
#pragma GCC unroll 8
    for (int u = 0; u < 8; u++) {
        v[u] = ninf;
        m[u] = 0.0f;
        if (u >= nh) continue;
        v[u] = _mm512_maskz_loadu_ps(mk, s + u * ld);
        if (mask) {
            v[u] = _mm512_add_ps(v[u], _mm512_maskz_loadu_ps(mk, mask));
            _mm512_storeu_ps(s + u * ld, v[u]);
        }
        m[u] = _mm512_reduce_max_ps(_mm512_mask_max_ps(ninf, mk, v[u], ninf));
    }
#pragma GCC unroll 8
    for (int u = 0; u < 8; u++) {
        if (u >= nh) continue;
        __m512 e = exp512(_mm512_sub_ps(v[u], _mm512_set1_ps(m[u])));
        _mm512_storeu_ps(s + u * ld, e);
        inv[u] = 1.0f / _mm512_reduce_add_ps(_mm512_maskz_mov_ps(mk, e));
    }
}

/* The softmaxes of nh <= 8 heads of a row over tk keys (head g at s + g
** ld), 1 / sum to inv[g]: in one pass of independent chains when a head's
** scores fit one vector, else one head after another. */
ALWAYS_INLINE void softmax_heads(int nh, int64_t tk, float *s, int64_t ld, const float *mask,
                                 float *inv) {
    if (tk <= 16) {
        softmax_heads16(nh, tk, s, ld, mask, inv);
        return;
    }
    for (int g = 0; g < nh; g++) {
        inv[g] = softmax_row(tk, s + g * ld, mask);
    }
}

/* Element c of kb blocks of 16 keys (row c of K^T at element off, f16 when
** h16) times each of the m rows' q[c], into a[u][b]; full: every block but
** the last has 16 keys (mk applies to the last one only). */
ALWAYS_INLINE void kt_elem(const int m, const int kb, const int h16, const int full,
                           const void *kt, int64_t off, const __mmask16 *mk, const float *const *q,
                           int64_t c, __m512 a[4][4]) {
    __m512 kv[4];
#pragma GCC unroll 4
    for (int b = 0; b < kb; b++) {
        kv[b] = hload(h16, kt, off + 16 * b, full && b < kb - 1 ? (__mmask16)0xffff : mk[b]);
    }
#pragma GCC unroll 4
    for (int u = 0; u < m; u++) {
        __m512 qc = _mm512_set1_ps(q[u][c]);
#pragma GCC unroll 4
        for (int b = 0; b < kb; b++) {
            a[u][b] = _mm512_fmadd_ps(qc, kv[b], a[u][b]);
        }
    }
}

/* The keys and values that row i (the next run's first) reads when that is
** another row of kh / vh than r (an f16 history or context, f32 caches or
** contexts; not the sentences of a packed batch); a share of them is
** prefetched per head while the current run or row is scored.  A step
** reads each context and cache once, from L3 or memory, and the hardware
** prefetchers do not run ahead across rows.  (Prefetching the next rows'
** recent keys, which the step has just written, into L2, or two runs ahead
** gained nothing; neither did prefetching in the AVX2 variant, whose
** products are slower.)  At most PF_ROW_BYTES of the keys and as many of
** the values: a long output's history is many times L1 (the test set's
** longest sentences loop to 400 positions, 200 KB of f16 keys per row and
** layer): prefetching all of it evicted the prefetched lines, and the
** current row's, before their use.  8, 12 and 24 KB were not
** distinguishable from 16.  Ordinary sentences' rows are below it. */
enum { PF_ROW_BYTES = 16 << 10 };

typedef struct attn_next {
    const char *k, *v; /* NULL: nothing to prefetch */
    int64_t kbytes, vbytes;
} attn_next;

ALWAYS_INLINE attn_next next_keys(const kcpu_attn_job *j, int64_t i, int64_t r) {
    attn_next nx = {NULL, NULL, 0, 0};
    const int64_t rn = i < j->n ? (j->ids ? j->ids[i] : i) : r;
    if (rn == r) return nx;
    if (j->kh_bf16_pairs) { /* bfloat16 pairs: 32-bit units */
        nx.k = (const char *)(j->kh_bf16_pairs + rn * j->kt_row_stride);
        nx.v = (const char *)(j->vh_bf16_pairs + rn * j->hist_row_stride);
        nx.kbytes = 4 * j->heads * j->kt_head_stride;
        nx.vbytes = 4 * j->hist_row_stride;
    } else if (j->kh_q8) { /* int8 keys: 32-bit units; f16 values hist_row_stride per row */
        nx.k = (const char *)(j->kh_q8 + rn * j->kt_row_stride);
        nx.v = (const char *)(j->vh_f16 + rn * j->hist_row_stride);
        nx.kbytes = 4 * j->heads * j->kt_head_stride;
        nx.vbytes = 2 * j->hist_row_stride;
    } else if (j->kh_f16) { /* keys [N0, H, dk, th] (transposed), values hist_row_stride per row */
        nx.k = (const char *)(j->kh_f16 + rn * j->kt_row_stride);
        nx.v = (const char *)(j->vh_f16 + rn * j->hist_row_stride);
        nx.kbytes = 2 * j->heads * j->kt_head_stride;
        nx.vbytes = 2 * j->hist_row_stride;
    } else if (j->kh && !j->lens) { /* f32: not a packed batch's sentence (span_rows) */
        nx.k = (const char *)(j->kh +
                              rn * (j->kt_elem_stride > 0 ? j->kt_row_stride : j->hist_row_stride));
        nx.v = (const char *)(j->vh + rn * j->hist_row_stride);
        nx.kbytes = 4 * (j->kt_elem_stride > 0 ? j->heads * j->kt_head_stride : j->hist_row_stride);
        nx.vbytes = 4 * j->hist_row_stride;
    }
    nx.kbytes = nx.kbytes < PF_ROW_BYTES ? nx.kbytes : PF_ROW_BYTES;
    nx.vbytes = nx.vbytes < PF_ROW_BYTES ? nx.vbytes : PF_ROW_BYTES;
    return nx;
}

/* Part h of `parts` of nx's bytes into L1. */
ALWAYS_INLINE void prefetch_part(const attn_next *nx, int64_t h, int64_t parts) {
    if (nx->k == NULL) return;
    for (int64_t b = nx->kbytes * h / parts; b < nx->kbytes * (h + 1) / parts; b += 64) {
        _mm_prefetch(nx->k + b, _MM_HINT_T0);
    }
    for (int64_t b = nx->vbytes * h / parts; b < nx->vbytes * (h + 1) / parts; b += 64) {
        _mm_prefetch(nx->v + b, _MM_HINT_T0);
    }
}

/* One pass of kt_scores: the dk elements of kb blocks of 16 keys from
** element off of each K^T row (stride ksc), in cs chains per block (c and
** c + dk / 2); full as kt_elem's.  (With a mask per block, GCC reloaded
** some of them into mask registers at every element.) */
ALWAYS_INLINE void kt_pass(const int m, const int kb, const int cs, const int h16, const int full,
                           const void *kt, int64_t off, int64_t ksc, int64_t dk,
                           const __mmask16 *mk, const float *const *q, __m512 a[2][4][4]) {
    const int64_t half = cs == 2 ? dk / 2 : dk; /* elements c and c + half */
    /* not unrolled: fully unrolled (dk a constant), the single-block passes
    ** kept their pointers in vector registers and the stack, and ran slower */
#pragma GCC unroll 1
    for (int64_t c = 0; c < half; c++) {
#pragma GCC unroll 2
        for (int z = 0; z < cs; z++) {
            kt_elem(m, kb, h16, full, kt, off + (c + z * half) * ksc, mk, q, c + z * half, a[z]);
        }
    }
    for (int64_t c = cs * half; cs == 2 && c < dk; c++) { /* odd dk: the last one */
        kt_elem(m, kb, h16, full, kt, off + c * ksc, mk, q, c, a[1]);
    }
}

/* Transposed keys (kt_elem_stride > 0): the scores of rows i0 .. i0 + m - 1 (one id)
** at every head into scratch row (u heads + h) ld, kb blocks of 16 keys at
** a time (m kb independent chains); element c of the 16 keys is one vector
** of K^T (f16 when h16), multiplied by each row's broadcast q[c]. */
ALWAYS_INLINE void kt_scores(const int m, const int kb, const int cs, const int h16,
                             const kcpu_attn_job *j, int64_t dk, int64_t i0, int64_t ld,
                             int64_t lo, int64_t th) {
    /* the job's fields in locals: the stores to the scratch could alias
    ** them, and the compiler reloaded ksc from the job in the inner loop */
    const int64_t r = j->ids ? j->ids[i0] : i0, ksc = j->kt_elem_stride;
    const __m512 va = _mm512_set1_ps(j->alpha);
    const attn_next nx = next_keys(j, i0 + m, r); /* prefetched */
    for (int64_t h = 0; h < j->heads; h++) {
        prefetch_part(&nx, h, j->heads);
        const void *kt = h16 ? (const void *)j->kh_f16 : (const void *)j->kh;
        const int64_t k0 = r * j->kt_row_stride + h * j->kt_head_stride;
        const float *q[4];
        float *s[4];
#pragma GCC unroll 4
        for (int u = 0; u < m; u++) {
            q[u] = j->q + (i0 + u) * j->ldq + h * dk;
            s[u] = j->scratch + (u * j->heads + h) * ld;
        }
        for (int64_t t0 = lo; t0 < th; t0 += 16 * kb) {
            __mmask16 mk[4];
            __m512 a[2][4][4];
#pragma GCC unroll 4
            for (int b = 0; b < kb; b++) {
                int64_t left = th - t0 - 16 * b;
                mk[b] = left > 0 ? tail_mask(left) : 0;
#pragma GCC unroll 2
                for (int z = 0; z < cs; z++) {
#pragma GCC unroll 4
                    for (int u = 0; u < m; u++) {
                        a[z][u][b] = _mm512_setzero_ps();
                    }
                }
            }
            if (kb == 1 || th - t0 > 16 * (kb - 1)) {
                kt_pass(m, kb, cs, h16, 1, kt, k0 + t0, ksc, dk, mk, q, a);
            } else { /* a pass past the keys' end with an empty block */
                kt_pass(m, kb, cs, h16, 0, kt, k0 + t0, ksc, dk, mk, q, a);
            }
#pragma GCC unroll 4
            for (int u = 0; u < m; u++) {
#pragma GCC unroll 4
                for (int b = 0; b < kb; b++) {
                    __m512 sum = cs == 2 ? _mm512_add_ps(a[0][u][b], a[1][u][b]) : a[0][u][b];
                    _mm512_storeu_ps(s[u] + t0 + 16 * b, _mm512_mul_ps(sum, va));
                }
            }
        }
    }
}

/* The m rows of a run (one id) read the same history keys: the same
** length (lens) and first key (starts). */
static bool same_keys(const kcpu_attn_job *j, int64_t i0, int64_t m) {
    for (int64_t u = 1; u < m; u++) {
        if ((j->lens && j->lens[i0 + u] != j->lens[i0]) ||
            (j->starts && j->starts[i0 + u] != j->starts[i0])) {
            return false;
        }
    }
    return true;
}

/* acc[u][w] += sum_t e[u][t] v[t] for the value rows t0 <= t < t1 at
** element t st of vp (f16 when h16), for the m rows of a run at once: each
** value vector is loaded (and widened) once for all of them; keys of even
** and odd offset go to separate chains (w). */
ALWAYS_INLINE void weigh_run(const int nq, const int h16, const int m, int64_t dk,
                             const float *const *e, const void *vp, int64_t st, int64_t t0,
                             int64_t t1, __m512 acc[4][2][NQ_MAX]) {
    const __mmask16 last = tail_mask(dk - 16 * (int64_t)(nq - 1));
    for (int64_t t = t0; t < t1; t += 2) {
#pragma GCC unroll 2
        for (int w = 0; w < 2; w++) {
            if (w == 1 && t + 1 >= t1) {
                break;
            }
            __m512 v[NQ_MAX];
#pragma GCC unroll 4
            for (int c = 0; c < nq; c++) {
                v[c] = hload(h16, vp, (t + w) * st + 16 * c, c == nq - 1 ? last : 0xffff);
            }
#pragma GCC unroll 4
            for (int u = 0; u < m; u++) {
                const __m512 wt = _mm512_set1_ps(e[u][t + w]);
#pragma GCC unroll 4
                for (int c = 0; c < nq; c++) {
                    acc[u][w][c] = _mm512_fmadd_ps(wt, v[c], acc[u][w][c]);
                }
            }
        }
    }
}

/* The scores of a run of m rows over nb blocks of keys: kt_scores with the
** block count per pass and chains for m and nb (see attn_rows). */
ALWAYS_INLINE void kt_switch(const int h16, const kcpu_attn_job *j, int64_t m, int64_t nb,
                             int64_t dk, int64_t i0, int64_t ld, int64_t lo, int64_t hi) {
    switch (m * 8 + (nb < 4 ? nb : 4)) {
    case 8 + 1: kt_scores(1, 1, 2, h16, j, dk, i0, ld, lo, hi); break;
    case 8 + 2: kt_scores(1, 2, 2, h16, j, dk, i0, ld, lo, hi); break;
    case 8 + 3: kt_scores(1, 3, 2, h16, j, dk, i0, ld, lo, hi); break;
    case 8 + 4: kt_scores(1, 4, 1, h16, j, dk, i0, ld, lo, hi); break;
    case 16 + 1: kt_scores(2, 1, 2, h16, j, dk, i0, ld, lo, hi); break;
    case 16 + 2: kt_scores(2, 2, 1, h16, j, dk, i0, ld, lo, hi); break;
    case 16 + 3: kt_scores(2, 3, 1, h16, j, dk, i0, ld, lo, hi); break;
    case 16 + 4: kt_scores(2, 4, 1, h16, j, dk, i0, ld, lo, hi); break;
    case 24 + 1: kt_scores(3, 1, 2, h16, j, dk, i0, ld, lo, hi); break;
    case 24 + 2: kt_scores(3, 2, 1, h16, j, dk, i0, ld, lo, hi); break;
    case 24 + 3: kt_scores(3, 3, 1, h16, j, dk, i0, ld, lo, hi); break;
    case 24 + 4: /* 4 blocks: 2 passes of 2, not of 3 */
        if (nb == 4) {
            kt_scores(3, 2, 1, h16, j, dk, i0, ld, lo, hi);
        } else {
            kt_scores(3, 3, 1, h16, j, dk, i0, ld, lo, hi);
        }
        break;
    case 32 + 1: kt_scores(4, 1, 2, h16, j, dk, i0, ld, lo, hi); break;
    case 32 + 3: /* 3 blocks: one pass of 3, not 2 passes of 2 */
        kt_scores(4, 3, 1, h16, j, dk, i0, ld, lo, hi);
        break;
    default: kt_scores(4, 2, 1, h16, j, dk, i0, ld, lo, hi); break;
    }
}

/* kt_switch out of line, one function per history dtype and constant head
** size (dk = 16 nq; nq 0: the job's dk).  Inlined into attn_rows, the
** passes' loops kept their stride and pointers on the stack and in vector
** registers (the register allocation of the whole of attn_rows); here they
** get the registers of a small function.  One call per run of rows. */
#define KT_FN(H16, NQ)                                                                             \
    static __attribute__((noinline)) void kt_##H16##_##NQ(const kcpu_attn_job *j, int64_t m,     \
                                                          int64_t nb, int64_t dk, int64_t i0,     \
                                                          int64_t ld, int64_t lo, int64_t hi) {   \
        kt_switch(H16, j, m, nb, NQ ? 16 * NQ : dk, i0, ld, lo, hi);                               \
    }
KT_FN(0, 0)
KT_FN(0, 1)
KT_FN(0, 2)
KT_FN(0, 3)
KT_FN(0, 4)
KT_FN(1, 0)
KT_FN(1, 1)
KT_FN(1, 2)
KT_FN(1, 3)
KT_FN(1, 4)

/* ------------------------------------------------------------ int8 keys */

/* tail_mask for any count: none below 1. */
ALWAYS_INLINE __mmask16 any_mask(int64_t left) { return left > 0 ? tail_mask(left) : 0; }

/* Row i's query at head h as int8 (kcpu_q8_query, vectorized for dk a
** multiple of 16: the same max, multiplier, clamp and rounding) into qq
** (dk / 4 units of 4 bytes); returns qa, the query's sum times 128 to
** *corr (the VNNI product of the unsigned keys k8 + 128 adds it). */
ALWAYS_INLINE float q8_query(const kcpu_attn_job *j, int64_t i, int64_t h, int32_t *qq,
                             int32_t *corr) {
    const int64_t dk = j->dk;
    const float *q = j->q + i * j->ldq + h * dk;
    int32_t sum;
    if (dk % 16 != 0) {
        float qa = kcpu_q8_query(q, dk, j->alpha, (int8_t *)qq, &sum);
        *corr = 128 * sum;
        return qa;
    }
    __m512 mx = _mm512_setzero_ps();
    for (int64_t c = 0; c < dk; c += 16) {
        mx = _mm512_max_ps(mx, _mm512_abs_ps(_mm512_loadu_ps(q + c)));
    }
    const float m = _mm512_reduce_max_ps(mx), inv = m > 0.0f ? 127.0f / m : 0.0f;
    const __m512 vi = _mm512_set1_ps(inv), lo = _mm512_set1_ps(-127.0f),
                 hi = _mm512_set1_ps(127.0f);
    __m512i acc = _mm512_setzero_si512();
    for (int64_t c = 0; c < dk; c += 16) {
        __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_loadu_ps(q + c), vi), lo), hi);
        __m512i x = _mm512_cvtps_epi32(v);
        acc = _mm512_add_epi32(acc, x);
        _mm_storeu_si128((__m128i *)((int8_t *)qq + c), _mm512_cvtepi32_epi8(x));
    }
    *corr = 128 * _mm512_reduce_add_epi32(acc);
    return j->alpha * kcpu_q8_scale_of(m);
}

/* The quantized queries of a run, in the scratch past the scores (its
** second part, kcpu_attn_scratch_floats: heads dk 16 floats at least):
** each row and head's dk / 4 units, then its qa and correction. */
typedef struct q8_queries {
    int32_t *qq;  /* [m heads][dk / 4] */
    float *qa;    /* [m heads] */
    int32_t *cor; /* [m heads] */
} q8_queries;

/* The scores of a run of m rows (one id) over int8 keys [lo, hi), kb
** blocks of 16 keys per pass: the queries of every head quantized first
** (independent chains), then per head each unit line (4 elements of 16
** keys) one vpdpbusd by each row's broadcast query unit (m kb chains), then
** (float)(sum - corr) * (scale_t * qa) into the scratch as kt_scores. */
ALWAYS_INLINE void q8_scores(const int m, const int kb, const kcpu_attn_job *j, int64_t i0,
                             int64_t ld, int64_t lo, int64_t hi) {
    const int64_t r = j->ids ? j->ids[i0] : i0, ksc = j->kt_elem_stride, d4 = j->dk / 4,
                  hn = j->heads;
    const attn_next nx = next_keys(j, i0 + m, r); /* prefetched */
    q8_queries qs;
    qs.qq = (int32_t *)(j->scratch + 4 * hn * ld);
    qs.qa = (float *)(qs.qq + 4 * hn * d4);
    qs.cor = (int32_t *)(qs.qa + 4 * hn);
    for (int64_t uh = 0; uh < m * hn; uh++) {
        qs.qa[uh] = q8_query(j, i0 + uh / hn, uh % hn, qs.qq + uh * d4, qs.cor + uh);
    }
    for (int64_t h = 0; h < hn; h++) {
        prefetch_part(&nx, h, hn);
        const int32_t *qq[4];
        int32_t corr[4];
        float qa[4];
#pragma GCC unroll 4
        for (int u = 0; u < m; u++) {
            qq[u] = qs.qq + (u * hn + h) * d4;
            qa[u] = qs.qa[u * hn + h];
            corr[u] = qs.cor[u * hn + h];
        }
        const uint32_t *kp = j->kh_q8 + r * j->kt_row_stride + h * j->kt_head_stride;
        for (int64_t t0 = lo; t0 < hi; t0 += 16 * kb) {
            __mmask16 mk[4];
            __m512i a[4][4];
#pragma GCC unroll 4
            for (int b = 0; b < kb; b++) {
                mk[b] = any_mask(hi - t0 - 16 * b);
#pragma GCC unroll 4
                for (int u = 0; u < m; u++) {
                    a[u][b] = _mm512_setzero_si512();
                }
            }
            for (int64_t c4 = 0; c4 < d4; c4++) {
                __m512i kv[4];
#pragma GCC unroll 4
                for (int b = 0; b < kb; b++) {
                    kv[b] = _mm512_maskz_loadu_epi32(mk[b], kp + c4 * ksc + t0 + 16 * b);
                }
#pragma GCC unroll 4
                for (int u = 0; u < m; u++) {
                    const __m512i qb = _mm512_set1_epi32(qq[u][c4]);
#pragma GCC unroll 4
                    for (int b = 0; b < kb; b++) {
                        a[u][b] = _mm512_dpbusd_epi32(a[u][b], kv[b], qb);
                    }
                }
            }
#pragma GCC unroll 4
            for (int b = 0; b < kb; b++) {
                const __m512 ks =
                    _mm512_maskz_loadu_ps(mk[b], (const float *)(kp + d4 * ksc + t0 + 16 * b));
#pragma GCC unroll 4
                for (int u = 0; u < m; u++) {
                    __m512 d =
                        _mm512_cvtepi32_ps(_mm512_sub_epi32(a[u][b], _mm512_set1_epi32(corr[u])));
                    _mm512_storeu_ps(j->scratch + (u * hn + h) * ld + t0 + 16 * b,
                                     _mm512_mul_ps(d, _mm512_mul_ps(ks, _mm512_set1_ps(qa[u]))));
                }
            }
        }
    }
}

/* q8_scores with m and the blocks per pass constants (at most 4 blocks, no
** more than the keys have; 2 with 4 rows: at most 8 accumulators). */
static __attribute__((noinline)) void q8_run(const kcpu_attn_job *j, int64_t m, int64_t nb,
                                             int64_t i0, int64_t ld, int64_t lo, int64_t hi) {
    const int64_t kb = nb < 4 ? nb : 4;
    switch (m * 8 + kb) {
    case 8 + 1: q8_scores(1, 1, j, i0, ld, lo, hi); break;
    case 8 + 2: q8_scores(1, 2, j, i0, ld, lo, hi); break;
    case 8 + 3: q8_scores(1, 3, j, i0, ld, lo, hi); break;
    case 8 + 4: q8_scores(1, 4, j, i0, ld, lo, hi); break;
    case 16 + 1: q8_scores(2, 1, j, i0, ld, lo, hi); break;
    case 16 + 2: q8_scores(2, 2, j, i0, ld, lo, hi); break;
    case 16 + 3: q8_scores(2, 3, j, i0, ld, lo, hi); break;
    case 16 + 4: q8_scores(2, 4, j, i0, ld, lo, hi); break;
    case 24 + 1: q8_scores(3, 1, j, i0, ld, lo, hi); break;
    case 24 + 2: q8_scores(3, 2, j, i0, ld, lo, hi); break;
    case 24 + 3: q8_scores(3, 3, j, i0, ld, lo, hi); break;
    case 24 + 4: q8_scores(3, 2, j, i0, ld, lo, hi); break;
    case 32 + 1: q8_scores(4, 1, j, i0, ld, lo, hi); break;
    default: q8_scores(4, 2, j, i0, ld, lo, hi); break;
    }
}

ALWAYS_INLINE void kt_run(const int nq, const int h16, const int share, const kcpu_attn_job *j,
                          int64_t m, int64_t nb, int64_t dk, int64_t i0, int64_t ld, int64_t lo,
                          int64_t hi) {
    void (*const fn[2][5])(const kcpu_attn_job *, int64_t, int64_t, int64_t, int64_t, int64_t,
                           int64_t, int64_t) = {{kt_0_0, kt_0_1, kt_0_2, kt_0_3, kt_0_4},
                                                {kt_1_0, kt_1_1, kt_1_2, kt_1_3, kt_1_4}};
    if (j->kh_q8) { /* int8 keys (f16 values: h16) */
        q8_run(j, m, nb, i0, ld, lo, hi);
        return;
    }
    fn[h16][share ? nq : 0](j, m, nb, dk, i0, ld, lo, hi);
}

/* The m rows of a run with the same keys (same_keys; transposed keys,
** scored by kt_scores): their recent scores, softmaxes, then per head the
** weighted sum of the shared history values for all of them at once
** (weigh_run) and of each row's own recent values. */
ALWAYS_INLINE void run_rows(const int nq, const int h16, const int m, const kcpu_attn_job *j,
                            int64_t i0, int64_t ld) {
    const int64_t dk = 16 * nq, tr = j->tr, h_n = j->heads; /* dk = 16 nq (share) */
    const __mmask16 last = tail_mask(dk - 16 * (int64_t)(nq - 1));
    const int64_t r = j->ids[i0], tn = j->lens ? j->lens[i0] : j->th, tk = tn + tr;
    /* keys from s0 on: the history's from hs, the recent ones' from rs */
    const int64_t s0 = j->starts ? j->starts[i0] : 0, hs = s0 < tn ? s0 : tn, rs = s0 - hs;
    const void *vh = h16 ? (const void *)(j->vh_f16 + r * j->hist_row_stride)
                         : (const void *)(j->vh + r * j->hist_row_stride);
    const float *mrow = j->mask ? j->mask + r * (j->th + tr) + s0 : NULL;
    for (int u = 0; u < m && tr; u++) {
        const int64_t i = i0 + u;
        for (int64_t h = 0; h < h_n; h++) {
            scores(nq, dk, j->q + i * j->ldq + h * dk, j->kr + (i * h_n + h) * tr * dk, dk, tr,
                   j->alpha, j->scratch + (u * h_n + h) * ld + tn);
        }
    }
    for (int64_t h8 = 0; h8 < h_n; h8 += 8) {
        const int nh = h_n - h8 < 8 ? (int)(h_n - h8) : 8;
        float inv[4][8];
#pragma GCC unroll 4
        for (int u = 0; u < m; u++) {
            softmax_heads(nh, tk - s0, j->scratch + (u * h_n + h8) * ld + s0, ld, mrow, inv[u]);
        }
        for (int64_t h = h8; h < h8 + nh; h++) {
            __m512 acc[4][2][NQ_MAX];
            const float *e[4];
#pragma GCC unroll 4
            for (int u = 0; u < m; u++) {
                e[u] = j->scratch + (u * h_n + h) * ld;
#pragma GCC unroll 2
                for (int w = 0; w < 2; w++) {
#pragma GCC unroll 4
                    for (int c = 0; c < NQ_MAX; c++) {
                        acc[u][w][c] = _mm512_setzero_ps();
                    }
                }
            }
            const int64_t vho = h * j->hist_head_stride; /* head h of vh, in elements */
            const void *vhh = h16 ? (const void *)((const uint16_t *)vh + vho)
                                  : (const void *)((const float *)vh + vho);
            weigh_run(nq, h16, m, dk, e, vhh, j->hist_pos_stride, hs, tn, acc);
#pragma GCC unroll 4
            for (int u = 0; u < m; u++) {
                const int64_t i = i0 + u;
                __m512 ra[4][NQ_MAX];
                zero_chains(ra);
                if (tr) {
                    weigh(nq, 0, dk, e[u] + tn + rs, j->vr + (i * h_n + h) * tr * dk, dk, tr - rs,
                          ra, rs);
                }
                const __m512 vi = _mm512_set1_ps(inv[u][h - h8]);
                float *o = j->o + i * j->ldo + h * dk;
#pragma GCC unroll 4
                for (int c = 0; c < nq && c < NQ_MAX; c++) {
                    __m512 a = _mm512_add_ps(_mm512_add_ps(acc[u][0][c], acc[u][1][c]),
                                             _mm512_add_ps(_mm512_add_ps(ra[0][c], ra[1][c]),
                                                           _mm512_add_ps(ra[2][c], ra[3][c])));
                    _mm512_mask_storeu_ps(o + 16 * c, c == nq - 1 ? last : 0xffff,
                                          _mm512_mul_ps(a, vi));
                }
            }
        }
    }
}

/* Rows of one dk class: nq = dk / 16 rounded up (constant when inlined);
** share: dk = 16 nq with nq <= NQ_MAX a constant (no masked loads of query
** and value chunks: with a mask from the job's dk, GCC moved it into a mask
** register before every load of the weighted sums), and runs of rows with
** the same keys share the weighted sums of their values (run_rows).  Other
** head sizes take the general loops (nq a variable).
** Per row (or run of rows with transposed keys): the scores of every head
** (scratch row u heads + h at (u heads + h) ld), then per row and head its
** softmax and weighted sum. */
ALWAYS_INLINE void attn_rows(const int nq, const int h16, const int share, const kcpu_attn_job *j) {
    const int64_t dk = share ? 16 * nq : j->dk, tr = j->tr, h_n = j->heads, ld = j->th + tr + 64;
    const __mmask16 last = tail_mask(dk - 16 * (int64_t)(nq - 1));
    for (int64_t i0 = 0; i0 < j->n;) {
        int64_t m = 1, lo = 0, hi = 0;
        if (j->kt_elem_stride > 0) {
            while (m < 4 && i0 + m < j->n && j->ids && j->ids[i0 + m] == j->ids[i0]) {
                m++;
            }
            kcpu_attn_run_keys(j, i0, m, &lo, &hi);
            /* blocks of 16 keys per pass: no more than th has (a context of
            ** a dozen positions is one block), at most what the registers
            ** hold, and no pass of blocks past the keys where another count
            ** avoids it (beam 4 over 33-48 keys); cs = 2 where m kb chains
            ** would be too few (the same cs
            ** for the same m and blocks: the same sums) */
            int64_t nb = (hi - lo + 15) / 16;
            kt_run(nq, h16, share, j, m, nb < 1 ? 1 : nb, dk, i0, ld, lo, hi);
        }
        if (share && m > 1 && same_keys(j, i0, m)) {
            switch (m) {
            case 2: run_rows(nq, h16, 2, j, i0, ld); break;
            case 3: run_rows(nq, h16, 3, j, i0, ld); break;
            default: run_rows(nq, h16, 4, j, i0, ld); break;
            }
            i0 += m;
            continue;
        }
        for (int64_t u = 0; u < m; u++) {
            int64_t i = i0 + u;
            int64_t r = j->ids ? j->ids[i] : i, tn = j->lens ? j->lens[i] : j->th, tk = tn + tr;
            /* keys from s0 on: the history's from hs, the recent ones' from rs */
            const int64_t s0 = j->starts ? j->starts[i] : 0, hs = s0 < tn ? s0 : tn, rs = s0 - hs;
            const float *kh = h16 ? NULL : j->kh + r * j->hist_row_stride;
            const void *vh = h16 ? (const void *)(j->vh_f16 + r * j->hist_row_stride)
                                 : (const void *)(j->vh + r * j->hist_row_stride);
            const float *kr = tr ? j->kr + i * h_n * tr * dk : NULL;
            const float *vr = tr ? j->vr + i * h_n * tr * dk : NULL;
            const float *q = j->q + i * j->ldq;
            float *su = j->scratch + u * h_n * ld;
            const attn_next nx =
                j->kt_elem_stride == 0 ? next_keys(j, i + 1, r) : (attn_next){NULL, NULL, 0, 0};
            for (int64_t h = 0; h < h_n; h++) {
                prefetch_part(&nx, h, h_n);
                float *s = su + h * ld;
                if (j->kt_elem_stride == 0) {
                    scores(nq, dk, q + h * dk, kh + h * j->hist_head_stride, j->hist_pos_stride, tn,
                           j->alpha, s);
                }
                if (tr) {
                    scores(nq, dk, q + h * dk, kr + h * tr * dk, dk, tr, j->alpha, s + tn);
                }
            }
            const float *mrow = j->mask ? j->mask + r * (j->th + tr) + s0 : NULL;
            float inv8[8];
            for (int64_t h = 0; h < h_n; h++) {
                float *s = su + h * ld;
                if (h % 8 == 0) { /* the softmaxes of 8 heads, then their weighted sums */
                    int nh = h_n - h < 8 ? (int)(h_n - h) : 8;
                    softmax_heads(nh, tk - s0, s + s0, ld, mrow, inv8);
                }
                float inv = inv8[h % 8];
                float *o = j->o + i * j->ldo + h * dk;
                const int64_t vho = h * j->hist_head_stride; /* head h of vh, in elements */
                const float *vrh = tr ? vr + h * tr * dk : NULL;
                if (nq <= NQ_MAX) {
                    __m512 acc[4][NQ_MAX];
                    zero_chains(acc);
                    const void *vhh = h16 ? (const void *)((const uint16_t *)vh + vho)
                                          : (const void *)((const float *)vh + vho);
                    weigh(nq, h16, dk, s + hs, vhh, j->hist_pos_stride, tn - hs, acc, hs);
                    if (tr) {
                        weigh(nq, 0, dk, s + tn + rs, vrh, dk, tr - rs, acc, rs);
                    }
                    __m512 vi = _mm512_set1_ps(inv);
#pragma GCC unroll 4
                    for (int c = 0; c < nq && c < NQ_MAX; c++) {
                        __m512 a = _mm512_add_ps(_mm512_add_ps(acc[0][c], acc[1][c]),
                                                 _mm512_add_ps(acc[2][c], acc[3][c]));
                        _mm512_mask_storeu_ps(o + 16 * c, c == nq - 1 ? last : 0xffff,
                                              _mm512_mul_ps(a, vi));
                    }
                } else { /* dk > 64: one 16-float chunk of o at a time */
                    for (int64_t c0 = 0; c0 < dk; c0 += 16) {
                        __mmask16 mk = tail_mask(dk - c0);
                        __m512 a = _mm512_setzero_ps();
                        for (int64_t t = s0; t < tk; t++) {
                            __m512 v = t < tn
                                           ? hload(h16, vh, vho + t * j->hist_pos_stride + c0, mk)
                                           : _mm512_maskz_loadu_ps(mk, vrh + (t - tn) * dk + c0);
                            a = _mm512_fmadd_ps(_mm512_set1_ps(s[t]), v, a);
                        }
                        _mm512_mask_storeu_ps(o + c0, mk, _mm512_mul_ps(a, _mm512_set1_ps(inv)));
                    }
                }
            }
        }
        i0 += m;
    }
}

/* The 16 x 16 block in r transposed in place (unpacks within 128-bit
** lanes, then two rounds of 128-bit lane shuffles). */
ALWAYS_INLINE void transpose16(__m512 r[16]) {
    __m512 t[16], u[16];
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
        t[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    /* u[4k + e], 128-bit lane l: element 4l + e of rows 4k .. 4k + 3 */
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        u[4 * k] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], 0x44);
        u[4 * k + 1] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], 0xee);
        u[4 * k + 2] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
        u[4 * k + 3] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xee);
    }
#pragma GCC unroll 4
    for (int e = 0; e < 4; e++) {
        __m512 a = _mm512_shuffle_f32x4(u[e], u[4 + e], 0x88); /* lanes 0, 2 */
        __m512 b = _mm512_shuffle_f32x4(u[e], u[4 + e], 0xdd); /* lanes 1, 3 */
        __m512 c = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0x88);
        __m512 d = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0xdd);
        r[e] = _mm512_shuffle_f32x4(a, c, 0x88);
        r[8 + e] = _mm512_shuffle_f32x4(a, c, 0xdd);
        r[4 + e] = _mm512_shuffle_f32x4(b, d, 0x88);
        r[12 + e] = _mm512_shuffle_f32x4(b, d, 0xdd);
    }
}

/* Keys k[t * st + c] (t < tn, c < dk) -> kt[c * tp + t], tp a multiple of
** 16; the columns t in [tn, tp) get zeros. */
static void transpose_keys(const float *k, int64_t st, int64_t tn, int64_t dk, float *kt,
                           int64_t tp) {
    for (int64_t t0 = 0; t0 < tp; t0 += 16) {
        for (int64_t c0 = 0; c0 < dk; c0 += 16) {
            const __mmask16 mk = tail_mask(dk - c0);
            __m512 r[16];
#pragma GCC unroll 16
            for (int u = 0; u < 16; u++) {
                r[u] = t0 + u < tn ? _mm512_maskz_loadu_ps(mk, k + (t0 + u) * st + c0)
                                   : _mm512_setzero_ps();
            }
            transpose16(r);
            const int64_t cn = dk - c0 < 16 ? dk - c0 : 16;
            for (int64_t u = 0; u < cn; u++) {
                _mm512_storeu_ps(kt + (c0 + u) * tp + t0, r[u]);
            }
        }
    }
}

/* Rows of a packed batch (lens, f32 keys not transposed, no recent keys,
** mask or starts): the rows of one sentence, one after another, share its
** keys, so these are transposed per head once, into the scratch past the
** scores ([heads, dk, tn rounded up to 16]), and the rows run over them as over a context
** with transposed keys (kt_scores: 16 keys per vector, no horizontal sums
** per key, a run of 4 rows loading each vector once).  The encoder's self-
** attention. */
static void rows_f32(const kcpu_attn_job *j);

static void span_rows(const kcpu_attn_job *j) {
    const int64_t dk = j->dk, hn = j->heads;
    float *kt = j->scratch + 4 * hn * (j->th + 64);
    for (int64_t i0 = 0; i0 < j->n;) {
        int64_t i1 = i0 + 1;
        while (i1 < j->n && j->ids[i1] == j->ids[i0] && j->lens[i1] == j->lens[i0]) {
            i1++;
        }
        const int64_t r = j->ids[i0], tn = j->lens[i0], tp = (tn + 15) / 16 * 16;
        for (int64_t h = 0; h < hn; h++) {
            transpose_keys(j->kh + r * j->hist_row_stride + h * j->hist_head_stride,
                           j->hist_pos_stride, tn, dk, kt + h * dk * tp, tp);
        }
        kcpu_attn_job s = *j;
        s.n = i1 - i0;
        s.q = j->q + i0 * j->ldq;
        s.o = j->o + i0 * j->ldo;
        s.ids = j->ids + i0;
        s.lens = j->lens + i0;
        s.kh = kt; /* every row's keys at kt: kt_row_stride = 0 */
        s.kt_row_stride = 0;
        s.kt_head_stride = dk * tp;
        s.kt_elem_stride = tp;
        rows_f32(&s);
        i0 = i1;
    }
}

/* nq a constant for each instantiation where dk = 16 nq <= 64 (h16: the
** history in f16); other head sizes take the general loops. */
ALWAYS_INLINE void attn_rows_nq(const int h16, const kcpu_attn_job *j) {
    switch (j->dk % 16 ? 0 : j->dk / 16) {
    case 1: attn_rows(1, h16, 1, j); break;
    case 2: attn_rows(2, h16, 1, j); break;
    case 3: attn_rows(3, h16, 1, j); break;
    case 4: attn_rows(4, h16, 1, j); break;
    default: attn_rows((int)((j->dk + 15) / 16), h16, 0, j); break;
    }
}

/* One instance per history dtype (span_rows runs its sentences through
** rows_f32 rather than inlining another copy). */
static void rows_f32(const kcpu_attn_job *j) { attn_rows_nq(0, j); }

static void rows_f16(const kcpu_attn_job *j) { attn_rows_nq(1, j); }

void kcpu_attn_rows_avx512(const kcpu_attn_job *j) {
    if ((j->kh_f16 || j->kh_q8) && j->kt_elem_stride > 0) { /* f16 values */
        rows_f16(j);
    } else if (j->lens && j->ids && j->kt_elem_stride == 0 && j->tr == 0 && !j->mask &&
               !j->starts && j->dk <= 16 * NQ_MAX) {
        span_rows(j);
    } else {
        rows_f32(j);
    }
}

/* --------------------------------------------- bfloat16 pairs (contexts) */

/* Scratch of the bfloat16 path past the scores (kcpu_attn_scratch_floats'
** second part, heads dk (th rounded up to 16) floats): each row's query in
** bfloat16 pairs (a head's written as whole vectors of 16 pairs, the next
** head's written after it), then one head's weights in pairs per row. */
typedef struct bp_scratch {
    uint32_t *qp; /* [4][heads][dk / 2] */
    uint32_t *ep; /* [4][np]: np = (th + 1) / 2 rounded up to 16 */
    int64_t np;
} bp_scratch;

/* Floats lo <= i < n of p as bfloat16 pairs (unit u: floats 2u, 2u + 1)
** to units from lo / 2 on, the floats outside [lo, n) as zeros; whole
** vectors of 16 units stored (from lo / 2 rounded down to 16). */
ALWAYS_INLINE void bf16_pairs(int64_t lo, int64_t n, const float *p, uint32_t *y) {
    for (int64_t c = lo / 32 * 16; 2 * c < n; c += 16) {
        const int64_t e = 2 * c;
        const __mmask16 m0 = any_mask(n - e) & (__mmask16)~any_mask(lo - e);
        const __mmask16 m1 = any_mask(n - e - 16) & (__mmask16)~any_mask(lo - e - 16);
        const __m512 a = _mm512_maskz_loadu_ps(m0, p + e),
                     b = _mm512_maskz_loadu_ps(m1, p + e + 16);
        _mm512_storeu_si512(y + c, (__m512i)_mm512_cvtne2ps_pbh(b, a));
    }
}

/* Scores of the m rows of a run (one id) over keys [0, hi): for each head,
** kb blocks of 16 keys per pass, each pair of elements one vdpbf16ps of a
** key vector (16 keys x 2 elements) by the row's broadcast query pair. */
ALWAYS_INLINE void bp_scores(const int m, const int kb, const kcpu_attn_job *j, int64_t i0,
                             int64_t ld, int64_t hi, const uint32_t *qp, const attn_next *nx) {
    const int64_t r = j->ids ? j->ids[i0] : i0, ksc = j->kt_elem_stride, d2 = j->dk / 2,
                  hn = j->heads;
    const __m512 va = _mm512_set1_ps(j->alpha);
    for (int64_t h = 0; h < hn; h++) {
        prefetch_part(nx, h, hn);
        const uint32_t *kp = j->kh_bf16_pairs + r * j->kt_row_stride + h * j->kt_head_stride;
        for (int64_t t0 = 0; t0 < hi; t0 += 16 * kb) {
            __mmask16 mk[4];
            __m512 a[4][4];
#pragma GCC unroll 4
            for (int b = 0; b < kb; b++) {
                mk[b] = any_mask(hi - t0 - 16 * b);
#pragma GCC unroll 4
                for (int u = 0; u < m; u++) {
                    a[u][b] = _mm512_setzero_ps();
                }
            }
            for (int64_t c2 = 0; c2 < d2; c2++) {
                __m512i kv[4];
#pragma GCC unroll 4
                for (int b = 0; b < kb; b++) {
                    kv[b] = _mm512_maskz_loadu_epi32(mk[b], kp + c2 * ksc + t0 + 16 * b);
                }
#pragma GCC unroll 4
                for (int u = 0; u < m; u++) {
                    const __m512i qb = _mm512_set1_epi32((int)qp[(u * hn + h) * d2 + c2]);
#pragma GCC unroll 4
                    for (int b = 0; b < kb; b++) {
                        a[u][b] = _mm512_dpbf16_ps(a[u][b], (__m512bh)kv[b], (__m512bh)qb);
                    }
                }
            }
#pragma GCC unroll 4
            for (int u = 0; u < m; u++) {
#pragma GCC unroll 4
                for (int b = 0; b < kb; b++) {
                    _mm512_storeu_ps(j->scratch + (u * hn + h) * ld + t0 + 16 * b,
                                     _mm512_mul_ps(a[u][b], va));
                }
            }
        }
    }
}

/* bp_scores with m and the blocks per pass constants: at most 16
** accumulators, and no more blocks than the keys have. */
static __attribute__((noinline)) void bp_scores_run(const kcpu_attn_job *j, int64_t m, int64_t i0,
                                                    int64_t ld, int64_t hi, const uint32_t *qp,
                                                    const attn_next *nx) {
    const int64_t nb = (hi + 15) / 16;
    const int64_t kb = nb < (m >= 3 ? 3 : 4) ? (nb < 1 ? 1 : nb) : (m >= 3 ? 3 : 4);
    switch (m * 8 + kb) {
    case 8 + 1: bp_scores(1, 1, j, i0, ld, hi, qp, nx); break;
    case 8 + 2: bp_scores(1, 2, j, i0, ld, hi, qp, nx); break;
    case 8 + 3: bp_scores(1, 3, j, i0, ld, hi, qp, nx); break;
    case 8 + 4: bp_scores(1, 4, j, i0, ld, hi, qp, nx); break;
    case 16 + 1: bp_scores(2, 1, j, i0, ld, hi, qp, nx); break;
    case 16 + 2: bp_scores(2, 2, j, i0, ld, hi, qp, nx); break;
    case 16 + 3: bp_scores(2, 3, j, i0, ld, hi, qp, nx); break;
    case 16 + 4: bp_scores(2, 4, j, i0, ld, hi, qp, nx); break;
    case 24 + 1: bp_scores(3, 1, j, i0, ld, hi, qp, nx); break;
    case 24 + 2: bp_scores(3, 2, j, i0, ld, hi, qp, nx); break;
    case 24 + 3: bp_scores(3, 3, j, i0, ld, hi, qp, nx); break;
    case 32 + 1: bp_scores(4, 1, j, i0, ld, hi, qp, nx); break;
    case 32 + 2: bp_scores(4, 2, j, i0, ld, hi, qp, nx); break;
    default: bp_scores(4, 3, j, i0, ld, hi, qp, nx); break;
    }
}

/* The weighted sums of head h for the m rows of a run: each pair of
** positions one vdpbf16ps of a value vector (16 elements x 2 positions) by
** the row's broadcast weight pair; nx = dk / 16 vectors per pair of
** positions, chains by the pair's parity where the registers allow. */
ALWAYS_INLINE void bp_weigh(const int m, const int nx, const kcpu_attn_job *j, int64_t r, int64_t h,
                            int64_t p0, int64_t tn, const uint32_t *ep, int64_t np,
                            const float *inv, float *const *o) {
    enum { W = 2 };
    const int w2 = m * nx <= 8 ? 2 : 1;
    const uint32_t *vp = j->vh_bf16_pairs + r * j->hist_row_stride + h * j->hist_head_stride;
    __m512 a[W][4][4];
#pragma GCC unroll 2
    for (int w = 0; w < W; w++) {
#pragma GCC unroll 4
        for (int u = 0; u < m; u++) {
#pragma GCC unroll 4
            for (int x = 0; x < nx; x++) {
                a[w][u][x] = _mm512_setzero_ps();
            }
        }
    }
    const int64_t p_n = (tn + 1) / 2;
    for (int64_t p = p0; p < p_n; p += w2) {
#pragma GCC unroll 2
        for (int w = 0; w < w2; w++) {
            if (w == 1 && p + 1 >= p_n) {
                break;
            }
            __m512i v[4];
#pragma GCC unroll 4
            for (int x = 0; x < nx; x++) {
                v[x] = _mm512_loadu_si512(vp + (p + w) * j->hist_pos_stride + 16 * x);
            }
#pragma GCC unroll 4
            for (int u = 0; u < m; u++) {
                const __m512i wb = _mm512_set1_epi32((int)ep[u * np + p + w]);
#pragma GCC unroll 4
                for (int x = 0; x < nx; x++) {
                    a[w][u][x] = _mm512_dpbf16_ps(a[w][u][x], (__m512bh)v[x], (__m512bh)wb);
                }
            }
        }
    }
#pragma GCC unroll 4
    for (int u = 0; u < m; u++) {
        const __m512 vi = _mm512_set1_ps(inv[u]);
#pragma GCC unroll 4
        for (int x = 0; x < nx; x++) {
            __m512 s = w2 == 2 ? _mm512_add_ps(a[0][u][x], a[1][u][x]) : a[0][u][x];
            _mm512_storeu_ps(o[u] + 16 * x, _mm512_mul_ps(s, vi));
        }
    }
}

static __attribute__((noinline)) void bp_weigh_run(const kcpu_attn_job *j, int64_t m, int64_t r,
                                                   int64_t h, int64_t p0, int64_t tn,
                                                   const uint32_t *ep, int64_t np, const float *inv,
                                                   float *const *o) {
    switch (m * 8 + j->dk / 16) {
    case 8 + 1: bp_weigh(1, 1, j, r, h, p0, tn, ep, np, inv, o); break;
    case 8 + 2: bp_weigh(1, 2, j, r, h, p0, tn, ep, np, inv, o); break;
    case 8 + 3: bp_weigh(1, 3, j, r, h, p0, tn, ep, np, inv, o); break;
    case 8 + 4: bp_weigh(1, 4, j, r, h, p0, tn, ep, np, inv, o); break;
    case 16 + 1: bp_weigh(2, 1, j, r, h, p0, tn, ep, np, inv, o); break;
    case 16 + 2: bp_weigh(2, 2, j, r, h, p0, tn, ep, np, inv, o); break;
    case 16 + 3: bp_weigh(2, 3, j, r, h, p0, tn, ep, np, inv, o); break;
    case 16 + 4: bp_weigh(2, 4, j, r, h, p0, tn, ep, np, inv, o); break;
    case 24 + 1: bp_weigh(3, 1, j, r, h, p0, tn, ep, np, inv, o); break;
    case 24 + 2: bp_weigh(3, 2, j, r, h, p0, tn, ep, np, inv, o); break;
    case 24 + 3: bp_weigh(3, 3, j, r, h, p0, tn, ep, np, inv, o); break;
    case 24 + 4: bp_weigh(3, 4, j, r, h, p0, tn, ep, np, inv, o); break;
    case 32 + 1: bp_weigh(4, 1, j, r, h, p0, tn, ep, np, inv, o); break;
    case 32 + 2: bp_weigh(4, 2, j, r, h, p0, tn, ep, np, inv, o); break;
    case 32 + 3: bp_weigh(4, 3, j, r, h, p0, tn, ep, np, inv, o); break;
    default: bp_weigh(4, 4, j, r, h, p0, tn, ep, np, inv, o); break;
    }
}

/* A job over bfloat16 pairs (kcpu_attn_bf16_shape: transposed keys, no
** recent keys, dk 16, 32, 48 or 64): runs of up to 4 rows with the same id, length
** and first key (a sentence's hypotheses over its context) share each key
** and value vector.  Per run: the queries to pairs, the scores of every
** head, the softmaxes (as the other histories'), then per head the
** weights to pairs (those before the first key zero) and the weighted
** sums from the first key's pair on. */
void kcpu_attn_rows_bf16_avx512(const kcpu_attn_job *j) {
    const int64_t hn = j->heads, dk = j->dk, d2 = dk / 2, ld = j->th + 64;
    bp_scratch bs;
    bs.qp = (uint32_t *)(j->scratch + 4 * hn * (j->th + 64));
    bs.np = ((j->th + 1) / 2 + 15) / 16 * 16;
    bs.ep = bs.qp + 4 * hn * d2;
    for (int64_t i0 = 0; i0 < j->n;) {
        int64_t m = 1;
        while (m < 4 && i0 + m < j->n && j->ids && j->ids[i0 + m] == j->ids[i0] &&
               (!j->lens || j->lens[i0 + m] == j->lens[i0]) &&
               (!j->starts || j->starts[i0 + m] == j->starts[i0])) {
            m++;
        }
        const int64_t r = j->ids ? j->ids[i0] : i0, tn = j->lens ? j->lens[i0] : j->th;
        const int64_t s0 = j->starts ? j->starts[i0] : 0;
        for (int64_t u = 0; u < m; u++) {
            for (int64_t h = 0; h < hn; h++) {
                bf16_pairs(0, dk, j->q + (i0 + u) * j->ldq + h * dk, bs.qp + (u * hn + h) * d2);
            }
        }
        const attn_next nx = next_keys(j, i0 + m, r); /* the next run's, prefetched */
        bp_scores_run(j, m, i0, ld, tn, bs.qp, &nx);
        const float *mrow = j->mask ? j->mask + r * j->th + s0 : NULL;
        float inv[4][8];
        for (int64_t h8 = 0; h8 < hn; h8 += 8) {
            const int nh = hn - h8 < 8 ? (int)(hn - h8) : 8;
            for (int64_t u = 0; u < m; u++) {
                softmax_heads(nh, tn - s0, j->scratch + (u * hn + h8) * ld + s0, ld, mrow, inv[u]);
            }
            for (int64_t h = h8; h < h8 + nh; h++) {
                float iv[4], *o[4];
                for (int64_t u = 0; u < m; u++) {
                    bf16_pairs(s0, tn, j->scratch + (u * hn + h) * ld, bs.ep + u * bs.np);
                    iv[u] = inv[u][h - h8];
                    o[u] = j->o + (i0 + u) * j->ldo + h * dk;
                }
                bp_weigh_run(j, m, r, h, s0 / 2, tn, bs.ep, bs.np, iv, o);
            }
        }
        i0 += m;
    }
}

/* ------------------------------------------------------------ fold keys */

/* The history's lines of one head: bl f16 of each of dk lines (pitch la)
** to lines of pitch l.  Whole vectors only, the last one of a line ending
** at its last element (overlapping the one before) as memmove does for
** short copies: masked stores of the tails were most of this kernel's
** samples.  Lines under 16 elements (the first folds): masked. */
ALWAYS_INLINE void fold_hist_lines(const uint16_t *x, int64_t la, int64_t bl, int64_t dk,
                                   uint16_t *y, int64_t l) {
    if (bl >= 32) {
        for (int64_t c = 0; c < dk; c++) {
            const uint16_t *xs = x + c * la;
            uint16_t *yd = y + c * l;
            int64_t p = 0;
            for (; p + 32 < bl; p += 32) {
                _mm512_storeu_si512(yd + p, _mm512_loadu_si512(xs + p));
            }
            _mm512_storeu_si512(yd + bl - 32, _mm512_loadu_si512(xs + bl - 32));
        }
    } else if (bl >= 16) {
        for (int64_t c = 0; c < dk; c++) {
            _mm256_storeu_si256((__m256i *)(y + c * l),
                                _mm256_loadu_si256((const __m256i *)(x + c * la)));
            _mm256_storeu_si256((__m256i *)(y + c * l + bl - 16),
                                _mm256_loadu_si256((const __m256i *)(x + c * la + bl - 16)));
        }
    } else { /* the first folds only */
        const __mmask16 mk = tail_mask(bl);
        for (int64_t c = 0; c < dk; c++) {
            _mm256_mask_storeu_epi16(y + c * l, mk, _mm256_maskz_loadu_epi16(mk, x + c * la));
        }
    }
}

/* Per row: each head's history lines copied 32 f16 at a time; the recent
** keys transposed in registers (transpose16), rounded to f16 (vcvtps2ph,
** nearest even as F16C in kcpu_f32_to_f16) and stored after the history's
** positions in each line: with at most 8 recent positions (a fold every 8)
** two heads share one 16 x 16 transpose (rows 0-7 one head's positions,
** 8-15 the next's), else 16 positions of one head per transpose.  Replaces
** a permute of the keys, a cast pass and a copy per line of the pack. */
void kcpu_fold_keys_avx512(const kcpu_fold_job *j) {
    const int64_t hn = j->heads, dk = j->dk, l = j->l, lb = j->lb;
    for (int64_t r = 0; r < j->n; r++) {
        const int64_t bl = j->lens[r], bs = j->starts[r], nt = lb - bs;
        for (int64_t h = 0; h < hn; h++) {
            if (bl > 0) {
                fold_hist_lines(j->hist + ((int64_t)j->ids[r] * hn + h) * dk * j->la, j->la, bl, dk,
                                j->out + (r * hn + h) * dk * l, l);
            }
        }
        const int pair = nt <= 8; /* two heads per transpose */
        for (int64_t h = 0; h < hn; h += pair ? 2 : 1) {
            const int64_t h2 = pair && h + 1 < hn ? h + 1 : -1;
            const float *rec = j->rec + ((j->rec_ids ? j->rec_ids[r] : r) * hn + h) * lb * dk;
            uint16_t *y = j->out + (r * hn + h) * dk * l;
            for (int64_t t0 = 0; t0 < nt; t0 += 16) {
                const int64_t cnt = nt - t0 < 16 ? nt - t0 : 16;
                for (int64_t c0 = 0; c0 < dk; c0 += 16) {
                    const __mmask16 cm = tail_mask(dk - c0);
                    __m512 v[16];
#pragma GCC unroll 16
                    for (int u = 0; u < 16; u++) {
                        int64_t t = pair ? (u & 7) : u; /* pair: row u of head h + u / 8 */
                        const float *src = pair && u >= 8 ? rec + lb * dk : rec;
                        bool live = t < cnt && (!pair || u < 8 || h2 >= 0);
                        v[u] = live ? _mm512_maskz_loadu_ps(cm, src + (bs + t0 + t) * dk + c0)
                                    : _mm512_setzero_ps();
                    }
                    transpose16(v); /* v[c]: the positions of line c0 + c */
                    const int64_t cn = dk - c0 < 16 ? dk - c0 : 16;
                    for (int64_t c = 0; c < cn; c++) {
                        __m256i hv =
                            _mm512_cvtps_ph(v[c], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                        uint16_t *line = y + (c0 + c) * l + bl + t0;
                        if (!pair) {
                            _mm256_mask_storeu_epi16(line, tail_mask(cnt), hv);
                            continue;
                        }
                        const __mmask8 tm = (__mmask8)((1u << cnt) - 1u);
                        _mm_mask_storeu_epi16(line, tm, _mm256_castsi256_si128(hv));
                        if (h2 >= 0) {
                            _mm_mask_storeu_epi16(line + dk * l, tm,
                                                  _mm256_extracti128_si256(hv, 1));
                        }
                    }
                }
            }
        }
    }
}

/* ------------------------------------------------------ fold int8 keys */

/* kcpu_q8_key, AVX-512: the same max, multiplier, clamp and rounding
** (vcvtps2dq); whole 16-byte stores. */
static float q8_key_avx512(const float *k, int64_t dk, uint8_t *out) {
    const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
    __m512 mx = _mm512_setzero_ps();
    for (int64_t c = 0; c < dk; c += 16) {
        mx = _mm512_max_ps(mx, _mm512_abs_ps(_mm512_maskz_loadu_ps(tail_mask(dk - c), k + c)));
    }
    const float m = _mm512_reduce_max_ps(mx), inv = m > 0.0f ? 127.0f / m : 0.0f;
    const __m512 vi = _mm512_set1_ps(inv);
    for (int64_t c = 0; c < dk; c += 16) {
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(tail_mask(dk - c), k + c), vi);
        __m128i b =
            _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(v, lo), hi)));
        _mm_storeu_si128((__m128i *)(out + c), _mm_xor_si128(b, _mm_set1_epi8((char)0x80)));
    }
    return kcpu_q8_scale_of(m);
}

/* kcpu_fold_keys into int8 keys (outq), AVX-512 (kcpu_fold_q8_rows with
** q8_key_avx512). */
void kcpu_fold_keys_q8_avx512(const kcpu_fold_job *j) { kcpu_fold_q8_rows(j, q8_key_avx512); }
