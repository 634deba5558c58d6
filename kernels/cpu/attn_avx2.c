/*
** attn_avx2.c: AVX2 + FMA variant of the fused attention (kcpu_attn_rows,
** kcpu.h; scalar oracle in attn.c).  The layout of
** attn_avx512.c with 8-float vectors: 8 keys per transposing reduction, the
** query in registers for dk <= 32, two positions per iteration of the
** weighted sum (16 registers: no more without spills).
*/
#include "kcpu_impl.h"
#include "kcpu_simd_avx2.h"

#include <string.h>

enum { NQ_MAX = 4 }; /* query chunks kept in registers: dk <= 32 */

/* r[j] = the sum of the lanes of v[j]. */
ALWAYS_INLINE __m256 sum8(const __m256 *v) {
    __m256 w[4], x[2];
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        w[k] = _mm256_add_ps(_mm256_unpacklo_ps(v[2 * k], v[2 * k + 1]),
                             _mm256_unpackhi_ps(v[2 * k], v[2 * k + 1]));
    }
#pragma GCC unroll 2
    for (int k = 0; k < 2; k++) {
        __m256d a = _mm256_castps_pd(w[2 * k]), b = _mm256_castps_pd(w[2 * k + 1]);
        x[k] = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(a, b)),
                             _mm256_castpd_ps(_mm256_unpackhi_pd(a, b)));
    }
    return _mm256_add_ps(_mm256_permute2f128_ps(x[0], x[1], 0x20),
                         _mm256_permute2f128_ps(x[0], x[1], 0x31));
}

/* Chunk c (8 floats; the last one masked by `last` unless `full`). */
ALWAYS_INLINE __m256 chunk(const float *p, int c, int nq, __m256i last, int full) {
    return load8(p + 8 * c, last, c < nq - 1 || full);
}

/* 8 elements at element offset off of a history array: f32 (the lanes of
** mk unless full), or f16 widened (h16; the first cnt unless full; no read
** past them). */
ALWAYS_INLINE __m256 hload(const int h16, const void *p, int64_t off, __m256i mk, int full,
                           int64_t cnt) {
    if (!h16) return load8((const float *)p + off, mk, full);
    const uint16_t *x = (const uint16_t *)p + off;
    if (full) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x));
    uint16_t tmp[8] = {0};
    if (cnt > 0) memcpy(tmp, x, sizeof(uint16_t) * (size_t)(cnt < 8 ? cnt : 8));
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)tmp));
}

/* s[t] = alpha q . k[t], k[t] = kp + t st; whole vectors stored (s has 7
** floats of room past nk). */
ALWAYS_INLINE void scores(const int nq, int64_t dk, const float *q, const float *kp, int64_t st,
                          int64_t nk, float alpha, float *s) {
    int full = dk % 8 == 0;
    __m256i last = tail_mask8(dk - 8 * (int64_t)(nq - 1));
    __m256 qv[NQ_MAX];
#pragma GCC unroll 4
    for (int c = 0; c < nq && c < NQ_MAX; c++) {
        qv[c] = chunk(q, c, nq, last, full);
    }
    const __m256 va = _mm256_set1_ps(alpha);
    for (int64_t t0 = 0; t0 < nk; t0 += 8) {
        int64_t cnt = nk - t0;
        __m256 acc[8];
#pragma GCC unroll 8
        for (int u = 0; u < 8; u++) {
            acc[u] = _mm256_setzero_ps();
            if (u < cnt) {
                const float *k = kp + (t0 + u) * st;
#pragma GCC unroll 4
                for (int c = 0; c < nq; c++) {
                    __m256 qc = nq <= NQ_MAX ? qv[c] : chunk(q, c, nq, last, full);
                    acc[u] = _mm256_fmadd_ps(qc, chunk(k, c, nq, last, full), acc[u]);
                }
            }
        }
        _mm256_storeu_ps(s + t0, _mm256_mul_ps(sum8(acc), va));
    }
}

/* acc[c] += sum_t e[t] v[t], v[t] at element (t0 + t) st of vp (f16 when
** h16). */
ALWAYS_INLINE void weigh(const int nq, const int h16, int64_t dk, const float *e, const void *vp,
                         int64_t st, int64_t nv, __m256 acc[2][NQ_MAX], int64_t t0) {
    vp = h16 ? (const void *)((const uint16_t *)vp + t0 * st)
             : (const void *)((const float *)vp + t0 * st);
    int full = dk % 8 == 0;
    int64_t cl = dk - 8 * (int64_t)(nq - 1);
    __m256i last = tail_mask8(cl);
    int64_t t = 0;
    for (; t + 2 <= nv; t += 2) {
#pragma GCC unroll 2
        for (int u = 0; u < 2; u++) {
            __m256 w = _mm256_set1_ps(e[t + u]);
#pragma GCC unroll 4
            for (int c = 0; c < nq; c++) {
                __m256 v = hload(h16, vp, (t + u) * st + 8 * c, last, c < nq - 1 || full, cl);
                acc[u][c] = _mm256_fmadd_ps(w, v, acc[u][c]);
            }
        }
    }
    if (t < nv) {
        __m256 w = _mm256_set1_ps(e[t]);
#pragma GCC unroll 4
        for (int c = 0; c < nq; c++) {
            __m256 v = hload(h16, vp, t * st + 8 * c, last, c < nq - 1 || full, cl);
            acc[0][c] = _mm256_fmadd_ps(w, v, acc[0][c]);
        }
    }
}

static float softmax_row(int64_t tk, float *s, const float *mask) {
    __m256 mx = _mm256_set1_ps(-INFINITY);
    for (int64_t t = 0; t < tk; t += 8) {
        __m256i mk = tail_mask8(tk - t);
        int full = tk - t >= 8;
        __m256 v = load8(s + t, mk, full);
        if (mask) {
            v = _mm256_add_ps(v, load8(mask + t, mk, full));
            _mm256_storeu_ps(s + t, v);
        }
        mx = _mm256_blendv_ps(mx, _mm256_max_ps(v, mx), _mm256_castsi256_ps(mk));
    }
    __m256 m = _mm256_set1_ps(hmax8(mx)), sum = _mm256_setzero_ps();
    for (int64_t t = 0; t < tk; t += 8) {
        __m256i mk = tail_mask8(tk - t);
        int full = tk - t >= 8;
        __m256 e = exp256(_mm256_sub_ps(load8(s + t, mk, full), m));
        _mm256_storeu_ps(s + t, e);
        sum = _mm256_add_ps(sum, _mm256_and_ps(e, _mm256_castsi256_ps(mk)));
    }
    return 1.0f / hsum8(sum);
}

/* Per row: the scores of every head, then per head softmax and weighted
** sum (as attn_avx512.c). */
/* Transposed keys (kt_elem_stride > 0): the scores of rows i0 .. i0 + m - 1 (one id)
** at every head into scratch row (u heads + h) ld, kb blocks of 8 keys at a
** time (m kb chains, at most 8 of them with kb + 1 more registers): element
** c of the 8 keys is one vector of K^T times each row's broadcast q[c]. */
ALWAYS_INLINE void kt_scores(const int m, const int kb, const int h16, const kcpu_attn_job *j,
                             int64_t i0, int64_t ld, int64_t lo, int64_t th) {
    const int64_t r = j->ids ? j->ids[i0] : i0, dk = j->dk;
    const __m256 va = _mm256_set1_ps(j->alpha);
    for (int64_t h = 0; h < j->heads; h++) {
        const void *kt = h16 ? (const void *)j->kh_f16 : (const void *)j->kh;
        const int64_t k0 = r * j->kt_row_stride + h * j->kt_head_stride;
        const float *q[4];
        float *s[4];
#pragma GCC unroll 4
        for (int u = 0; u < m; u++) {
            q[u] = j->q + (i0 + u) * j->ldq + h * dk;
            s[u] = j->scratch + (u * j->heads + h) * ld;
        }
        for (int64_t t0 = lo; t0 < th; t0 += 8 * kb) {
            __m256i mk[4];
            int full[4];
            int64_t cnt[4];
            __m256 a[4][4];
#pragma GCC unroll 4
            for (int b = 0; b < kb; b++) {
                int64_t left = th - t0 - 8 * b;
                cnt[b] = left > 0 ? left : 0;
                mk[b] = tail_mask8(cnt[b]);
                full[b] = left >= 8;
#pragma GCC unroll 4
                for (int u = 0; u < m; u++) {
                    a[u][b] = _mm256_setzero_ps();
                }
            }
            for (int64_t c = 0; c < dk; c++) {
                __m256 kv[4];
#pragma GCC unroll 4
                for (int b = 0; b < kb; b++) {
                    kv[b] = hload(h16, kt, k0 + c * j->kt_elem_stride + t0 + 8 * b, mk[b], full[b],
                                  cnt[b]);
                }
#pragma GCC unroll 4
                for (int u = 0; u < m; u++) {
                    __m256 qc = _mm256_set1_ps(q[u][c]);
#pragma GCC unroll 4
                    for (int b = 0; b < kb; b++) {
                        a[u][b] = _mm256_fmadd_ps(qc, kv[b], a[u][b]);
                    }
                }
            }
#pragma GCC unroll 4
            for (int u = 0; u < m; u++) {
#pragma GCC unroll 4
                for (int b = 0; b < kb; b++) {
                    _mm256_storeu_ps(s[u] + t0 + 8 * b, _mm256_mul_ps(a[u][b], va));
                }
            }
        }
    }
}

/* int8 keys (kcpu.h): the scores of rows i0 .. i0 + m - 1 (one id) over
** keys [lo, hi) into the scratch as kt_scores, kb blocks of 8 keys per pass.
** Per unit line (4 elements of 8 keys): the bytes k8 + 128 back to signed
** (xor 0x80), |k8| by q8 with k8's sign (vpsignb) in vpmaddubsw (pairs of
** at most 2 127^2: no saturation), then vpmaddwd by ones: the exact sums of
** k8 q8, so the same scores as the VNNI variant and the reference. */
ALWAYS_INLINE void q8_scores(const int m, const int kb, const kcpu_attn_job *j, int64_t i0,
                             int64_t ld, int64_t lo, int64_t hi) {
    const int64_t r = j->ids ? j->ids[i0] : i0, ksc = j->kt_elem_stride, d4 = j->dk / 4,
                  hn = j->heads;
    const __m256i flip = _mm256_set1_epi8((char)0x80), ones = _mm256_set1_epi16(1);
    for (int64_t h = 0; h < hn; h++) {
        int32_t qq[4][KCPU_Q8_DK_MAX / 4];
        float qa[4];
#pragma GCC unroll 4
        for (int u = 0; u < m; u++) {
            int32_t sum;
            qa[u] = kcpu_q8_query(j->q + (i0 + u) * j->ldq + h * j->dk, j->dk, j->alpha,
                                  (int8_t *)qq[u], &sum);
        }
        const uint32_t *kp = j->kh_q8 + r * j->kt_row_stride + h * j->kt_head_stride;
        for (int64_t t0 = lo; t0 < hi; t0 += 8 * kb) {
            __m256i mk[4], a[4][4];
#pragma GCC unroll 4
            for (int b = 0; b < kb; b++) {
                mk[b] = tail_mask8(hi - t0 - 8 * b > 0 ? hi - t0 - 8 * b : 0);
#pragma GCC unroll 4
                for (int u = 0; u < m; u++) {
                    a[u][b] = _mm256_setzero_si256();
                }
            }
            for (int64_t c4 = 0; c4 < d4; c4++) {
                __m256i ks[4], ak[4];
#pragma GCC unroll 4
                for (int b = 0; b < kb; b++) {
                    const int *p = (const int *)(kp + c4 * ksc + t0 + 8 * b);
                    ks[b] = _mm256_xor_si256(_mm256_maskload_epi32(p, mk[b]), flip);
                    ak[b] = _mm256_abs_epi8(ks[b]);
                }
#pragma GCC unroll 4
                for (int u = 0; u < m; u++) {
                    const __m256i qb = _mm256_set1_epi32(qq[u][c4]);
#pragma GCC unroll 4
                    for (int b = 0; b < kb; b++) {
                        __m256i p = _mm256_maddubs_epi16(ak[b], _mm256_sign_epi8(qb, ks[b]));
                        a[u][b] = _mm256_add_epi32(a[u][b], _mm256_madd_epi16(p, ones));
                    }
                }
            }
#pragma GCC unroll 4
            for (int b = 0; b < kb; b++) {
                const __m256 sc =
                    _mm256_maskload_ps((const float *)(kp + d4 * ksc + t0 + 8 * b), mk[b]);
#pragma GCC unroll 4
                for (int u = 0; u < m; u++) {
                    __m256 d = _mm256_cvtepi32_ps(a[u][b]);
                    _mm256_storeu_ps(j->scratch + (u * hn + h) * ld + t0 + 8 * b,
                                     _mm256_mul_ps(d, _mm256_mul_ps(sc, _mm256_set1_ps(qa[u]))));
                }
            }
        }
    }
}

ALWAYS_INLINE void attn_rows(const int nq, const int h16, const kcpu_attn_job *j) {
    const int64_t dk = j->dk, tr = j->tr, h_n = j->heads, ld = j->th + tr + 64;
    const int full = dk % 8 == 0;
    const __m256i last = tail_mask8(dk - 8 * (int64_t)(nq - 1));
    for (int64_t i0 = 0; i0 < j->n;) {
        int64_t m = 1, lo = 0, hi = 0;
        if (j->kt_elem_stride > 0) { /* a run of rows with one id scores together */
            while (m < 4 && i0 + m < j->n && j->ids && j->ids[i0 + m] == j->ids[i0]) {
                m++;
            }
            kcpu_attn_run_keys(j, i0, m, &lo, &hi);
            if (j->kh_q8) { /* int8 keys (f16 values: h16) */
                switch (m) {
                case 1: q8_scores(1, 4, j, i0, ld, lo, hi); break;
                case 2: q8_scores(2, 3, j, i0, ld, lo, hi); break;
                case 3: q8_scores(3, 2, j, i0, ld, lo, hi); break;
                default: q8_scores(4, 2, j, i0, ld, lo, hi); break;
                }
            } else
                switch (m) {
                case 1: kt_scores(1, 4, h16, j, i0, ld, lo, hi); break;
                case 2: kt_scores(2, 3, h16, j, i0, ld, lo, hi); break;
                case 3: kt_scores(3, 2, h16, j, i0, ld, lo, hi); break;
                default: kt_scores(4, 2, h16, j, i0, ld, lo, hi); break;
                }
        }
        for (int64_t i = i0; i < i0 + m; i++) {
            int64_t r = j->ids ? j->ids[i] : i, tn = j->lens ? j->lens[i] : j->th, tk = tn + tr;
            /* keys from s0 on: the history's from hs, the recent ones' from rs */
            const int64_t s0 = j->starts ? j->starts[i] : 0, hs = s0 < tn ? s0 : tn, rs = s0 - hs;
            const float *kh = h16 ? NULL : j->kh + r * j->hist_row_stride;
            const void *vh = h16 ? (const void *)(j->vh_f16 + r * j->hist_row_stride)
                                 : (const void *)(j->vh + r * j->hist_row_stride);
            const float *kr = tr ? j->kr + i * h_n * tr * dk : NULL;
            const float *vr = tr ? j->vr + i * h_n * tr * dk : NULL;
            const float *q = j->q + i * j->ldq;
            float *su = j->scratch + (i - i0) * h_n * ld;
            for (int64_t h = 0; h < h_n; h++) {
                float *s = su + h * ld;
                if (j->kt_elem_stride == 0) {
                    scores(nq, dk, q + h * dk, kh + h * j->hist_head_stride, j->hist_pos_stride, tn,
                           j->alpha, s);
                }
                if (tr) {
                    scores(nq, dk, q + h * dk, kr + h * tr * dk, dk, tr, j->alpha, s + tn);
                }
            }
            for (int64_t h = 0; h < h_n; h++) {
                float *s = su + h * ld;
                float inv =
                    softmax_row(tk - s0, s + s0, j->mask ? j->mask + r * (j->th + tr) + s0 : NULL);
                float *o = j->o + i * j->ldo + h * dk;
                const int64_t vho = h * j->hist_head_stride; /* head h of vh, in elements */
                const float *vrh = tr ? vr + h * tr * dk : NULL;
                __m256 vi = _mm256_set1_ps(inv);
                if (nq <= NQ_MAX) {
                    __m256 acc[2][NQ_MAX];
#pragma GCC unroll 2
                    for (int u = 0; u < 2; u++) {
#pragma GCC unroll 4
                        for (int c = 0; c < NQ_MAX; c++) {
                            acc[u][c] = _mm256_setzero_ps();
                        }
                    }
                    const void *vhh = h16 ? (const void *)((const uint16_t *)vh + vho)
                                          : (const void *)((const float *)vh + vho);
                    weigh(nq, h16, dk, s + hs, vhh, j->hist_pos_stride, tn - hs, acc, hs);
                    if (tr) {
                        weigh(nq, 0, dk, s + tn + rs, vrh, dk, tr - rs, acc, rs);
                    }
#pragma GCC unroll 4
                    for (int c = 0; c < nq && c < NQ_MAX; c++) {
                        __m256 a = _mm256_mul_ps(_mm256_add_ps(acc[0][c], acc[1][c]), vi);
                        store8(o + 8 * c, last, c < nq - 1 || full, a);
                    }
                } else { /* dk > 32: one 8-float chunk of o at a time */
                    for (int64_t c0 = 0; c0 < dk; c0 += 8) {
                        __m256i mk = tail_mask8(dk - c0);
                        int fc = dk - c0 >= 8;
                        __m256 a = _mm256_setzero_ps();
                        for (int64_t t = s0; t < tk; t++) {
                            __m256 v = t < tn ? hload(h16, vh, vho + t * j->hist_pos_stride + c0,
                                                      mk, fc, dk - c0)
                                              : load8(vrh + (t - tn) * dk + c0, mk, fc);
                            a = _mm256_fmadd_ps(_mm256_set1_ps(s[t]), v, a);
                        }
                        store8(o + c0, mk, fc, _mm256_mul_ps(a, vi));
                    }
                }
            }
        }
        i0 += m;
    }
}

/* nq a constant for each instantiation (h16: the history in f16). */
ALWAYS_INLINE void attn_rows_nq(const int h16, const kcpu_attn_job *j) {
    switch ((j->dk + 7) / 8) {
    case 1: attn_rows(1, h16, j); break;
    case 2: attn_rows(2, h16, j); break;
    case 3: attn_rows(3, h16, j); break;
    case 4: attn_rows(4, h16, j); break;
    default: attn_rows((int)((j->dk + 7) / 8), h16, j); break;
    }
}

void kcpu_attn_rows_avx2(const kcpu_attn_job *j) {
    if ((j->kh_f16 || j->kh_q8) && j->kt_elem_stride > 0) { /* f16 values */
        attn_rows_nq(1, j);
    } else {
        attn_rows_nq(0, j);
    }
}

/* kcpu_q8_key, AVX2: the same max, multiplier, clamp and rounding
** (vcvtps2dq), 8 elements per vector, packed to bytes with saturation that
** never applies; whole 8-byte stores. */
static float q8_key_avx2(const float *k, int64_t dk, uint8_t *out) {
    const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f),
                 sign = _mm256_set1_ps(-0.0f);
    __m256 mx = _mm256_setzero_ps();
    for (int64_t c = 0; c < dk; c += 8) {
        mx = _mm256_max_ps(mx,
                           _mm256_andnot_ps(sign, _mm256_maskload_ps(k + c, tail_mask8(dk - c))));
    }
    const float m = hmax8(mx), inv = m > 0.0f ? 127.0f / m : 0.0f;
    const __m256 vi = _mm256_set1_ps(inv);
    for (int64_t c = 0; c < dk; c += 8) {
        __m256 v = _mm256_mul_ps(_mm256_maskload_ps(k + c, tail_mask8(dk - c)), vi);
        __m256i q = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi));
        __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        __m128i b = _mm_xor_si128(_mm_packs_epi16(w, w), _mm_set1_epi8((char)0x80));
        _mm_storel_epi64((__m128i *)(out + c), b);
    }
    return kcpu_q8_scale_of(m);
}

/* kcpu_fold_keys into int8 keys (outq), AVX2 (kcpu_fold_q8_rows with
** q8_key_avx2).  (With the scalar quantizer the fold cost more than the
** int8 keys saved.) */
void kcpu_fold_keys_q8_avx2(const kcpu_fold_job *j) { kcpu_fold_q8_rows(j, q8_key_avx2); }
