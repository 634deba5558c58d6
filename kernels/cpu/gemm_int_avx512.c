/*
** gemm_int_avx512.c: AVX-512 BW + VNNI variants of the int8 / int16 GEMM
** (scheme and packed layout: kcpu.h, "integer GEMM").
**
** int8: A is quantized into scratch as unsigned bytes A + 128 in [1, 255]
** (vpdpbusd multiplies unsigned bytes of its first source by signed bytes of
** its second); the accumulators start at corr[j] = -128 * colsum(Bq), so
** after the k loop they hold exactly sum_k Aq Bq (mod 2^32).  int16: plain
** vpdpwssd on the int16 activations.  Both read A as 32-bit broadcasts (4
** bytes or 2 int16 of one row = one k group) and B as 64-byte rows of the
** panel (16 columns x one k group), so one instruction is one group of one
** row against 16 columns.
**
** Register blocking: a panel of 64 columns (4 zmm) against up to 6 rows:
** 24 accumulators + 4 B vectors + 1 broadcast of A (objdump -d of the 6-row
** k loop: 4 loads, 6 vpbroadcastd, 24 vpdp*, no stack traffic; see
** zero_corr below for what it took with int16).  With 1 or 2 rows a second set of accumulators
** takes the odd groups, so at least 8 independent chains cover the
** latency.  The row chunks of one panel run back to back so the panel is
** re-read from L1/L2.
*/
#include "kcpu_impl.h"

#include <immintrin.h>
#include <string.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))

enum { NV = KCPU_IGEMM_NC / 16, MR_MAX = 6, GROUP_BYTES = 4 * KCPU_IGEMM_NC };

/* The first row chunk of a panel reads it from L3 or memory (a decoder
** step's weights, 3.6 MB for the default model, do not stay in L2), the
** others from L1/L2: that chunk prefetches the group PF_GROUPS ahead (12 KB,
** into the next panel near the end): faster with 32 and 128 rows over 40
** rotating weight matrices, the same with 4 rows (where 64 groups ahead
** lost). */
enum { PF_GROUPS = 48 };

ALWAYS_INLINE __mmask16 tail_mask(int64_t left) {
    if (left >= 16) {
        return (__mmask16)0xffff;
    }
    return left <= 0 ? 0 : (__mmask16)((1u << left) - 1u);
}

/* --------------------------------------------------------- quantize A */

/* Four running maxima (one vmaxps chain was the bound: its latency per 16
** floats). */
static float maxabs_avx512(int64_t m, int64_t k, const float *a, int64_t lda) {
    const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    __m512 mx[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                    _mm512_setzero_ps()};
    for (int64_t i = 0; i < m; i++) {
        const float *ai = a + i * lda;
        int64_t p = 0;
        for (; p + 64 <= k; p += 64) {
            /* vmaxps returns its second operand when the first is NaN */
#pragma GCC unroll 4
            for (int u = 0; u < 4; u++) {
                mx[u] = _mm512_max_ps(_mm512_and_ps(_mm512_loadu_ps(ai + p + 16 * u), absmask),
                                      mx[u]);
            }
        }
        for (; p < k; p += 16) {
            __m512 v = _mm512_maskz_loadu_ps(tail_mask(k - p), ai + p);
            mx[0] = _mm512_max_ps(_mm512_and_ps(v, absmask), mx[0]);
        }
    }
    return _mm512_reduce_max_ps(
        _mm512_max_ps(_mm512_max_ps(mx[0], mx[1]), _mm512_max_ps(mx[2], mx[3])));
}

/* 16 values of an int8 row from column p: clamp(x q) rounded half even,
** + 128 (1 .. 255) as int32 lanes; lanes outside mk give 128.  Only the
** lower clamp is an instruction (it also sends NaN to -127, as the
** reference): q = 127 / max|A| makes x q <= 127 (1 + 2^-22) for every x of
** A, which rounds to 127, and the narrowing packs saturate anything larger
** at 255 (a max|A| given smaller than the true one).  (Both clamps were a
** fifth of the quantization's vector instructions.) */
ALWAYS_INLINE __m512i quant16_u8(const float *x, int64_t p, __mmask16 mk, __m512 vq) {
    __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, x + p), vq);
    v = _mm512_max_ps(v, _mm512_set1_ps(-127.0f));
    return _mm512_add_epi32(_mm512_cvtps_epi32(v), _mm512_set1_epi32(128));
}

/* 64 columns of an int8 row from p: four vectors of int32 narrowed by two
** unsigned-saturating packs (no saturation happens: 1 .. 255) and one dword
** permute back into column order; full: all 64 are columns of x, else the
** columns past k are zeroed.  (The narrowing stores vpmovdb were a
** visible share of the GEMM's time on the decoder's small products, in
** perf.) */
ALWAYS_INLINE void quant64_u8(const int full, int64_t k, const float *x, int64_t p, __m512 vq,
                              uint8_t *y) {
    /* after the packs, 128-bit lane l holds columns 4l.. of each of the 4
    ** vectors in turn: dword l of vector v is at dword 4 l + v */
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    __m512i v[4];
#pragma GCC unroll 4
    for (int u = 0; u < 4; u++) {
        v[u] = quant16_u8(x, p + 16 * u, full ? (__mmask16)0xffff : tail_mask(k - p - 16 * u), vq);
    }
    __m512i r =
        _mm512_packus_epi16(_mm512_packus_epi32(v[0], v[1]), _mm512_packus_epi32(v[2], v[3]));
    r = _mm512_permutexvar_epi32(order, r);
    if (!full) {
        int64_t left = k - p;
        r = _mm512_maskz_mov_epi8(left <= 0 ? 0 : ((__mmask64)1 << left) - 1, r);
    }
    _mm512_storeu_si512(y + p, r);
}

/* One int8 row, 64 columns per store, the whole blocks of 64 columns of x
** without masks (a mask per vector was a fifth of the quantization's
** samples), then the rest up to the row stride sa (a multiple of 64). */
ALWAYS_INLINE void quant_row_u8(int64_t k, const float *x, float q, uint8_t *y, int64_t sa) {
    const __m512 vq = _mm512_set1_ps(q);
    int64_t p = 0;
    for (; p + 64 <= k; p += 64) {
        quant64_u8(1, k, x, p, vq, y);
    }
    for (; p < sa; p += 64) {
        quant64_u8(0, k, x, p, vq, y);
    }
}

/* One int16 row: clamp(x * q) in float, rounded half even; zero padding up
** to the row stride `sa` bytes.  (int8 rows: quant_row_u8.) */
ALWAYS_INLINE void quant_row_i16(int64_t k, const float *x, float q, int16_t *y, int64_t sa) {
    const __m512 vq = _mm512_set1_ps(q);
    const __m512 lo = _mm512_set1_ps(-32768.0f), hi = _mm512_set1_ps(32767.0f);
    memset(y, 0, (size_t)sa);
    for (int64_t p = 0; p < k; p += 16) {
        __mmask16 mk = tail_mask(k - p);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, x + p), vq);
        v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
        _mm512_mask_cvtepi32_storeu_epi16(y + p, mk, _mm512_cvtps_epi32(v));
    }
}

/* ------------------------------------------------------------- kernel */

typedef struct out_ctx {
    int64_t n;
    const float *bias;
    float *c;
    int64_t ldc;
    int32_t *acc;
    int64_t ldacc;
    float unq;
    bool relu;
    float *am_val; /* argmax mode (kcpu_igemm_job) */
    int32_t *am_idx;
    const float *skip;
    const float *res;
    int64_t ldr;
    float *cmax; /* [16]: the running max |C| per lane, or NULL */
} out_ctx;

ALWAYS_INLINE __m512i vdot(const int bits, __m512i acc, __m512i a, __m512i b) {
    return bits == 8 ? _mm512_dpbusd_epi32(acc, a, b) : _mm512_dpwssd_epi32(acc, a, b);
}

ALWAYS_INLINE __m512i bcast32(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* Accumulator start for int16 (no shift correction).  The accumulators are
** loaded from memory even when they start at zero: with a constant-zero
** start GCC 12 allocated the int16 blocks badly (a register copy and a stack
** store per vpdpwssd, seen with objdump -d); with a load both blocks compile
** to 4 B loads, mr broadcasts and 4 mr vpdp* per group, no stack traffic. */
static const int32_t zero_corr[KCPU_IGEMM_NC];

/* Rows i0..i0+mr-1 against the panel starting at column j0: ng groups of
** 4 bytes of A per row (row stride sa) and 256 bytes of B per group; pf:
** prefetch B ahead (the panel's first chunk). */
ALWAYS_INLINE void block(const int bits, const int mr, const bool pf, int64_t ng, const uint8_t *a,
                         int64_t sa, const uint8_t *b, const int32_t *corr, const out_ctx *o,
                         int64_t i0, int64_t j0) {
    __m512i acc[MR_MAX][NV];
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            acc[i][v] = _mm512_loadu_si512(corr + 16 * v);
        }
    }
    int64_t g = 0;
    if (mr <= 2) {
        __m512i acc2[2][NV];
#pragma GCC unroll 2
        for (int i = 0; i < mr; i++) {
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                acc2[i][v] = _mm512_setzero_si512();
            }
        }
        for (; g + 2 <= ng; g += 2) {
            const uint8_t *bg = b + g * GROUP_BYTES;
            if (pf) {
#pragma GCC unroll 8
                for (int v = 0; v < 2 * NV; v++) {
                    _mm_prefetch((const char *)bg + PF_GROUPS * GROUP_BYTES + 64 * v, _MM_HINT_T0);
                }
            }
            __m512i b0[NV], b1[NV];
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                b0[v] = _mm512_loadu_si512(bg + 64 * v);
                b1[v] = _mm512_loadu_si512(bg + GROUP_BYTES + 64 * v);
            }
#pragma GCC unroll 2
            for (int i = 0; i < mr; i++) {
                __m512i a0 = bcast32(a + i * sa + 4 * g), a1 = bcast32(a + i * sa + 4 * g + 4);
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++) {
                    acc[i][v] = vdot(bits, acc[i][v], a0, b0[v]);
                    acc2[i][v] = vdot(bits, acc2[i][v], a1, b1[v]);
                }
            }
        }
#pragma GCC unroll 2
        for (int i = 0; i < mr; i++) {
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                acc[i][v] = _mm512_add_epi32(acc[i][v], acc2[i][v]);
            }
        }
    }
    for (; g < ng; g++) {
        const uint8_t *bg = b + g * GROUP_BYTES;
        if (pf) {
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                _mm_prefetch((const char *)bg + PF_GROUPS * GROUP_BYTES + 64 * v, _MM_HINT_T0);
            }
        }
        __m512i bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            bv[v] = _mm512_loadu_si512(bg + 64 * v);
        }
#pragma GCC unroll 6
        for (int i = 0; i < mr; i++) {
            __m512i av = bcast32(a + i * sa + 4 * g);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                acc[i][v] = vdot(bits, acc[i][v], av, bv[v]);
            }
        }
    }
    if (o->am_val) {
        /* argmax: each row's values (+ bias: the floats of C) + skip against
        ** its running maximum per lane; a strictly greater value takes the
        ** lane (columns reach a lane in increasing order, so each lane keeps
        ** its first maximum; NaN never wins).  (Written out here as the
        ** stores below: in a helper taking acc, GCC 12 kept acc in memory
        ** through the k loop.) */
        const __m512 vu = _mm512_set1_ps(o->unq);
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            int64_t col = j0 + 16 * v;
            __mmask16 mk = tail_mask(o->n - col);
            if (mk) {
                __m512 bias =
                    o->bias ? _mm512_maskz_loadu_ps(mk, o->bias + col) : _mm512_setzero_ps();
                __m512 skip =
                    o->skip ? _mm512_maskz_loadu_ps(mk, o->skip + col) : _mm512_setzero_ps();
                __m512i cols = _mm512_add_epi32(
                    _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                    _mm512_set1_epi32((int32_t)col));
#pragma GCC unroll 6
                for (int i = 0; i < mr; i++) {
                    __m512 r = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[i][v]), vu);
                    if (o->bias) {
                        r = _mm512_add_ps(r, bias);
                    }
                    if (o->skip) {
                        r = _mm512_add_ps(r, skip);
                    }
                    float *bv = o->am_val + 16 * (i0 + i);
                    __mmask16 gt = _mm512_mask_cmp_ps_mask(mk, r, _mm512_loadu_ps(bv), _CMP_GT_OQ);
                    _mm512_mask_storeu_ps(bv, gt, r);
                    _mm512_mask_storeu_epi32(o->am_idx + 16 * (i0 + i), gt, cols);
                }
            }
        }
        return;
    }
    /* epilogue: columns j0 + 16 v + lane < n.  The context in locals: the
    ** stores to C could alias it, and the fields would be reloaded after
    ** each store. */
    const int64_t n = o->n, ldc = o->ldc, ldr = o->ldr, ldacc = o->ldacc;
    const float *const bias_p = o->bias, *const res = o->res;
    float *const c = o->c, *const cmax = o->cmax;
    int32_t *const accp = o->acc;
    const bool relu = o->relu;
    const __m512 vu = _mm512_set1_ps(o->unq);
    __m512 cm = _mm512_setzero_ps();
    if (c && !res && !cmax) { /* the common case without the per-vector tests */
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            int64_t col = j0 + 16 * v;
            __mmask16 mk = tail_mask(n - col);
            if (mk) {
                __m512 bias =
                    bias_p ? _mm512_maskz_loadu_ps(mk, bias_p + col) : _mm512_setzero_ps();
#pragma GCC unroll 6
                for (int i = 0; i < mr; i++) {
                    __m512 r = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[i][v]), vu);
                    if (bias_p) {
                        r = _mm512_add_ps(r, bias);
                    }
                    if (relu) { /* NaN -> 0, as the reference's !(r > 0) */
                        r = _mm512_maskz_mov_ps(
                            _mm512_cmp_ps_mask(r, _mm512_setzero_ps(), _CMP_GT_OQ), r);
                    }
                    _mm512_mask_storeu_ps(c + (i0 + i) * ldc + col, mk, r);
                }
            }
        }
        return;
    }
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
        int64_t col = j0 + 16 * v;
        __mmask16 mk = tail_mask(n - col); /* 0: the whole vector is padding */
        if (mk && c) {
            __m512 bias = bias_p ? _mm512_maskz_loadu_ps(mk, bias_p + col) : _mm512_setzero_ps();
#pragma GCC unroll 6
            for (int i = 0; i < mr; i++) {
                __m512 r = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[i][v]), vu);
                if (bias_p) {
                    r = _mm512_add_ps(r, bias);
                }
                if (res) {
                    r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mk, res + (i0 + i) * ldr + col));
                }
                if (relu) { /* NaN -> 0, as the reference's !(r > 0) */
                    r = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(r, _mm512_setzero_ps(), _CMP_GT_OQ),
                                            r);
                }
                _mm512_mask_storeu_ps(c + (i0 + i) * ldc + col, mk, r);
                if (cmax) { /* vmaxps keeps its second operand where r is NaN */
                    cm = _mm512_max_ps(_mm512_maskz_mov_ps(mk, _mm512_abs_ps(r)), cm);
                }
            }
        } else if (mk) {
#pragma GCC unroll 6
            for (int i = 0; i < mr; i++) {
                _mm512_mask_storeu_epi32(accp + (i0 + i) * ldacc + col, mk, acc[i][v]);
            }
        }
    }
    if (cmax) {
        _mm512_storeu_ps(cmax, _mm512_max_ps(cm, _mm512_loadu_ps(cmax)));
    }
}

#define ROWS_CASE(BITS, LABEL, MR, PF)                                                             \
    case LABEL: block(BITS, MR, PF, ng, a, sa, b, corr, o, i0, j0); break;

/* Both kinds of chunk per row count: case 2 mr + first. */
#define ROWS_CASE_I8(MR)                                                                           \
    ROWS_CASE(8, 2 * MR, MR, false)                                                                \
    ROWS_CASE(8, 2 * MR + 1, MR, true)

static void rows_i8(bool first, int mr, int64_t ng, const uint8_t *a, int64_t sa, const uint8_t *b,
                    const int32_t *corr, const out_ctx *o, int64_t i0, int64_t j0) {
    switch (2 * mr + first) {
        ROWS_CASE_I8(1)
        ROWS_CASE_I8(2)
        ROWS_CASE_I8(3)
        ROWS_CASE_I8(4)
        ROWS_CASE_I8(5)
        ROWS_CASE_I8(6)
    default: break;
    }
}

static void rows_i16(int mr, int64_t ng, const uint8_t *a, int64_t sa, const uint8_t *b,
                     const int32_t *corr, const out_ctx *o, int64_t i0, int64_t j0) {
    switch (mr) {
        ROWS_CASE(16, 1, 1, false)
        ROWS_CASE(16, 2, 2, false)
        ROWS_CASE(16, 3, 3, false)
        ROWS_CASE(16, 4, 4, false)
        ROWS_CASE(16, 5, 5, false)
        ROWS_CASE(16, 6, 6, false)
    default: break;
    }
}

/* Splits m rows into chunks of at most MR_MAX, as even as possible. */
static int chunk_rows(int64_t m_left) {
    int64_t chunks = (m_left + MR_MAX - 1) / MR_MAX;
    return (int)((m_left + chunks - 1) / chunks);
}

/* The residual that the epilogue of the chunk after this one adds (rows
** from i, columns j0 .., or the first rows of the next panel), into L1
** while this chunk's k loop runs.  Residuals are a layer's input, written
** several products before (the encoder's 410 x 256 ones no longer in L2):
** the epilogue's loads missed with the sums waiting on them (faster with
** cold residuals, unchanged with hot ones).  (Prefetching in the k
** loop instead took registers: GCC spilled the pointers.  Spreading the next
** panel's weights over a panel's chunks, into L2, gained nothing.)  Inline:
** GCC took a function of prefetches only for one without effects and
** dropped its calls. */
ALWAYS_INLINE void prefetch_res(int64_t m, const out_ctx *o, int64_t i, int64_t j0) {
    if (o->res == NULL) {
        return;
    }
    if (i >= m) {
        i = 0;
        j0 += KCPU_IGEMM_NC;
    }
    if (j0 >= o->n) {
        return;
    }
    for (int64_t r = 0, mr = chunk_rows(m - i); r < mr; r++) {
        const char *p = (const char *)(o->res + (i + r) * o->ldr + j0);
        for (int l = 0; l < 4; l++) { /* 64 columns */
            _mm_prefetch(p + 64 * l, _MM_HINT_T0);
        }
    }
}

static void gemm(int bits, kcpu_igemm_job *j) {
    const uint8_t *a = j->scratch;
    out_ctx o = {.n = j->n,
                 .bias = j->bias,
                 .c = j->c,
                 .ldc = j->ldc,
                 .acc = j->acc,
                 .ldacc = j->ldacc,
                 .unq = kcpu_igemm_unquant(j->qa, j->qb),
                 .relu = j->relu,
                 .am_val = j->am_val,
                 .am_idx = j->am_idx,
                 .skip = j->skip,
                 .res = j->res,
                 .ldr = j->ldr,
                 .cmax = NULL};
    float cmax[16] = {0};
    if (j->c_maxabs && j->c) {
        o.cmax = cmax;
    }
    int64_t ng = j->kp / (bits == 8 ? 4 : 2);
    int64_t panel_bytes = j->kp * KCPU_IGEMM_NC * (bits / 8);
    for (int64_t j0 = 0; j0 < j->np; j0 += KCPU_IGEMM_NC) {
        const uint8_t *b = (const uint8_t *)j->panels + (j0 / KCPU_IGEMM_NC) * panel_bytes;
        const int32_t *corr = j->corr ? j->corr + j0 : zero_corr;
        for (int64_t i0 = 0; i0 < j->m;) {
            int mr = chunk_rows(j->m - i0);
            const uint8_t *ai = a + i0 * j->sa;
            prefetch_res(j->m, &o, i0 + mr, j0);
            if (bits == 8) {
                rows_i8(i0 == 0, mr, ng, ai, j->sa, b, corr, &o, i0, j0);
            } else {
                rows_i16(mr, ng, ai, j->sa, b, corr, &o, i0, j0);
            }
            i0 += mr;
        }
    }
    if (o.cmax) {
        *j->c_maxabs = _mm512_reduce_max_ps(_mm512_loadu_ps(cmax));
    }
}

void kcpu_igemm_i8_vnni(kcpu_igemm_job *j) {
    if (j->phase != KCPU_IGEMM_PRODUCT) {
        j->qa =
            kcpu_i8_mult(j->a_max_known ? j->a_maxabs : maxabs_avx512(j->m, j->k, j->a, j->lda));
        for (int64_t i = 0; i < j->m; i++) {
            quant_row_u8(j->k, j->a + i * j->lda, j->qa, (uint8_t *)j->scratch + i * j->sa, j->sa);
        }
    }
    if (j->phase != KCPU_IGEMM_QUANT) {
        gemm(8, j);
    }
}

void kcpu_igemm_i16_vnni(kcpu_igemm_job *j) {
    if (j->phase != KCPU_IGEMM_PRODUCT) {
        j->qa = KCPU_I16_MULT;
        for (int64_t i = 0; i < j->m; i++) {
            quant_row_i16(j->k, j->a + i * j->lda, j->qa,
                          (int16_t *)((uint8_t *)j->scratch + i * j->sa), j->sa);
        }
    }
    if (j->phase != KCPU_IGEMM_QUANT) {
        gemm(16, j);
    }
}

/* ------------------------------------------------------- column selection */

/* Per source panel: the lane mask of its selected columns (ascending, so
** they are the next run of output columns, jo ..); per k group the panel's
** 64 units are four vectors, each compressed to its selected lanes and
** stored at the run's place (a run that crosses an output panel goes
** through a buffer, in two parts). */
void kcpu_select_units_avx512(const char *src, char *dst, size_t panel, int64_t units,
                              int64_t n_sel, const int32_t *cols) {
    const size_t row = (size_t)KCPU_IGEMM_NC * 4; /* one k group of a panel */
    for (int64_t jo = 0; jo < n_sel;) {
        const int64_t p = cols[jo] / KCPU_IGEMM_NC;
        uint64_t mask = 0;
        int64_t end = jo;
        for (; end < n_sel && cols[end] / KCPU_IGEMM_NC == p; end++) {
            mask |= (uint64_t)1 << (cols[end] % KCPU_IGEMM_NC);
        }
        const char *sp = src + (size_t)p * panel;
        int64_t at[NV]; /* output column of each vector's first selected lane */
        __mmask16 mk[NV];
        int cnt[NV];
        for (int v = 0, o = 0; v < NV; v++) {
            mk[v] = (__mmask16)(mask >> (16 * v));
            cnt[v] = __builtin_popcount(mk[v]);
            at[v] = jo + o;
            o += cnt[v];
        }
        for (int64_t u = 0; u < units; u++) {
            for (int v = 0; v < NV; v++) {
                if (cnt[v] == 0) {
                    continue;
                }
                __m512i x = _mm512_loadu_si512(sp + (size_t)u * row + 64 * (size_t)v);
                __m512i y = _mm512_maskz_compress_epi32(mk[v], x);
                const int64_t c = at[v], lane = c % KCPU_IGEMM_NC;
                char *dp = dst + (size_t)(c / KCPU_IGEMM_NC) * panel + (size_t)u * row;
                if (lane + cnt[v] <= KCPU_IGEMM_NC) {
                    _mm512_mask_storeu_epi32(dp + 4 * lane, (__mmask16)((1u << cnt[v]) - 1u), y);
                } else { /* the run goes on in the next output panel */
                    int32_t buf[16];
                    const int first = (int)(KCPU_IGEMM_NC - lane);
                    _mm512_storeu_si512(buf, y);
                    memcpy(dp + 4 * lane, buf, 4 * (size_t)first);
                    memcpy(dp + panel, buf + first, 4 * (size_t)(cnt[v] - first));
                }
            }
        }
        jo = end;
    }
}
