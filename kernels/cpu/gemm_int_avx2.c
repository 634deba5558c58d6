/*
** gemm_int_avx2.c: AVX2 variants of the int8 / int16 GEMM (scheme and
** packed layout: kcpu.h, "integer GEMM"); also the path of AVX-512 CPUs
** without VNNI.
**
** int8 without VNNI has only vpmaddubsw (u8 x s8 pairs summed into int16,
** SATURATING).  Shifted activations (A + 128 up to 255) could reach
** 2 * 255 * 127 = 64770 and saturate, so this variant keeps A signed and
** uses the sign trick instead: |a| (unsigned) x sign(b, a) (signed) equals
** a * b, and with |a|, |b| <= 127 (the quantizers never produce -128) a
** pair sums to at most 2 * 127^2 = 32258 < 32767: no saturation, exact.
** vpmaddwd with ones then widens the pairs into one int32 per column and
** k group.  int16: vpmaddwd on the broadcast pair of A directly.
**
** |a| is stored beside a once per call (the second half of the scratch),
** so the inner loop broadcasts it instead of a vpabsb per row and group:
** one vector ALU op fewer per 64 multiply-adds, on a loop bound by the
** vector ALU ports.
**
** Blocking: four rows at a time against a quarter panel (16 columns = 2
** ymm), 8 accumulators, so one B load serves four rows; the last rows half
** a panel (32 columns = 4 ymm) against 2 rows, 8 accumulators; 16 ymm
** registers leave no room for more (four rows made products of 4 to 128
** rows faster than two, `mtpe bench gemm-int`).
*/
#include "kcpu_impl.h"

#include <immintrin.h>
#include <string.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* GROUP_BYTES: one k group (4 int8 or 2 int16 values) of a panel's 64
** columns, 4 cache lines.  PF_GROUPS: how far ahead the software prefetch
** reads (below). */
enum { GROUP_BYTES = 4 * KCPU_IGEMM_NC, PF_GROUPS = 16 };

/* --------------------------------------------------------- quantize A */

static float maxabs_avx2(int64_t m, int64_t k, const float *a, int64_t lda) {
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 mx = _mm256_setzero_ps();
    float tail = 0.0f;
    for (int64_t i = 0; i < m; i++) {
        const float *ai = a + i * lda;
        int64_t p = 0;
        for (; p + 8 <= k; p += 8) {
            /* vmaxps returns its second operand when the first is NaN */
            mx = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(ai + p), absmask), mx);
        }
        if (p < k) {
            float t = kcpu_maxabs_f32(1, k - p, ai + p, k);
            tail = t > tail ? t : tail;
        }
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, mx);
    for (int l = 0; l < 8; l++) {
        tail = lanes[l] > tail ? lanes[l] : tail;
    }
    return tail;
}

ALWAYS_INLINE __m256i quant8(const float *x, __m256 q, __m256 lo, __m256 hi) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x), q);
    return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi));
}

/* One row into y (row stride sa bytes, zero padded): the same arithmetic as
** kcpu_quantize_i8/_i16, which also does the tail. */
static void quant_row_i8(int64_t k, const float *x, float q, int8_t *y, int64_t sa) {
    const __m256 vq = _mm256_set1_ps(q), lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    memset(y, 0, (size_t)sa);
    int64_t p = 0;
    for (; p + 32 <= k; p += 32) {
        __m256i v0 = quant8(x + p, vq, lo, hi), v1 = quant8(x + p + 8, vq, lo, hi);
        __m256i v2 = quant8(x + p + 16, vq, lo, hi), v3 = quant8(x + p + 24, vq, lo, hi);
        /* per 128-bit lane: packs interleave 4-element pieces; the dword
        ** permutation puts them back in order */
        __m256i w = _mm256_packs_epi16(_mm256_packs_epi32(v0, v1), _mm256_packs_epi32(v2, v3));
        _mm256_storeu_si256((__m256i *)(y + p), _mm256_permutevar8x32_epi32(w, order));
    }
    kcpu_quantize_i8(k - p, x + p, q, y + p);
}

/* |y| of n quantized bytes (zero padding stays zero) */
static void abs_row_i8(int64_t n, const int8_t *y, uint8_t *u) {
    int64_t p = 0;
    for (; p + 32 <= n; p += 32)
        _mm256_storeu_si256((__m256i *)(u + p),
                            _mm256_abs_epi8(_mm256_loadu_si256((const __m256i *)(y + p))));
    for (; p < n; p++)
        u[p] = (uint8_t)(y[p] < 0 ? -y[p] : y[p]);
}

static void quant_row_i16(int64_t k, const float *x, float q, int16_t *y, int64_t sa) {
    const __m256 vq = _mm256_set1_ps(q), lo = _mm256_set1_ps(-32768.0f);
    const __m256 hi = _mm256_set1_ps(32767.0f);
    memset(y, 0, (size_t)sa);
    int64_t p = 0;
    for (; p + 16 <= k; p += 16) {
        __m256i v0 = quant8(x + p, vq, lo, hi), v1 = quant8(x + p + 8, vq, lo, hi);
        __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(v0, v1), 0xd8);
        _mm256_storeu_si256((__m256i *)(y + p), w);
    }
    kcpu_quantize_i16(k - p, x + p, q, y + p);
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
    const float *res;
    int64_t ldr;
} out_ctx;

ALWAYS_INLINE __m256i bcast32(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* Stores 8 columns starting at col (fewer at the right edge). */
ALWAYS_INLINE void store8(const out_ctx *o, int64_t row, int64_t col, __m256i acc) {
    int64_t left = o->n - col;
    if (o->c) {
        __m256 bias;
        float tmp[8] = {0};
        if (!o->bias) {
            bias = _mm256_setzero_ps();
        } else if (left >= 8) {
            bias = _mm256_loadu_ps(o->bias + col);
        } else {
            memcpy(tmp, o->bias + col, (size_t)left * sizeof(float));
            bias = _mm256_loadu_ps(tmp);
        }
        __m256 r = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), _mm256_set1_ps(o->unq));
        if (o->bias) {
            r = _mm256_add_ps(r, bias);
        }
        if (o->res) {
            const float *rs = o->res + row * o->ldr + col;
            if (left >= 8) {
                r = _mm256_add_ps(r, _mm256_loadu_ps(rs));
            } else {
                float rt[8] = {0};
                memcpy(rt, rs, (size_t)left * sizeof(float));
                r = _mm256_add_ps(r, _mm256_loadu_ps(rt));
            }
        }
        if (o->relu) { /* NaN -> 0, as the reference's !(r > 0) */
            r = _mm256_and_ps(r, _mm256_cmp_ps(r, _mm256_setzero_ps(), _CMP_GT_OQ));
        }
        float *dst = o->c + row * o->ldc + col;
        if (left >= 8) {
            _mm256_storeu_ps(dst, r);
        } else {
            _mm256_storeu_ps(tmp, r);
            memcpy(dst, tmp, (size_t)left * sizeof(float));
        }
    } else {
        int32_t *dst = o->acc + row * o->ldacc + col;
        if (left >= 8) {
            _mm256_storeu_si256((__m256i *)dst, acc);
        } else {
            int32_t tmp[8];
            _mm256_storeu_si256((__m256i *)tmp, acc);
            memcpy(dst, tmp, (size_t)left * sizeof(int32_t));
        }
    }
}

/* Prefetches `lines` cache lines from PF_GROUPS groups after p.  The
** address is computed as an integer: past the last panel it points outside
** the packed matrix, where pointer arithmetic would be undefined (the
** prefetch itself reads nothing there and does not fault). */
ALWAYS_INLINE void prefetch_ahead(const uint8_t *p, int lines) {
    uintptr_t at = (uintptr_t)p + (uintptr_t)PF_GROUPS * GROUP_BYTES;
    for (int l = 0; l < lines; l++) {
        _mm_prefetch((const char *)(at + 64 * (uintptr_t)l), _MM_HINT_T0);
    }
}

/* The next panel, read into L2 a few lines per k group over all the blocks
** of the current one (see block). */
typedef struct next_panel {
    uintptr_t at, end; /* next line to prefetch, end of the panel */
    int lines;         /* lines per k group of a block */
} next_panel;

ALWAYS_INLINE void prefetch_next(next_panel *np) {
    for (int l = 0; l < np->lines && np->at < np->end; l++, np->at += 64) {
        _mm_prefetch((const char *)np->at, _MM_HINT_T1);
    }
}

/* Rows i0..i0+mr-1 (mr <= 4) against the 8 nv columns from col0 (nv <= 4):
** mr x nv accumulators; b points at those columns inside the first group
** (groups are GROUP_BYTES apart).
**
** Prefetch: a block reads one or two of the 4 lines of each group, 256
** bytes apart, a stride the hardware prefetchers follow poorly, and with few
** rows (the decoder's steps: 1 to 8 hypotheses) the weights come from L3 or
** DRAM on every call (a model's matrices do not stay in L2).  So the first
** block over a panel (`whole`: the panel's first group) prefetches all 4
** lines of the group PF_GROUPS ahead, which brings the panel (and the first
** groups of the next one, panels are contiguous) into the caches for the
** panel's other blocks; the other blocks prefetch their own lines (faster
** at every row count of `mtpe bench gemm-int`'s weights from memory).
**
** That still leaves each panel's first block waiting on L3 or DRAM: it
** prefetches only 16 groups (4 KB) ahead, while it needs a whole 16 KB panel
** (K = 256) in about as many cycles as the L3 delivers 4 KB.  So every block
** also reads the next panel into L2 (`next`), spread evenly over all the
** blocks of the current panel (gemm sets next->lines): a panel's worth of
** compute ahead, and for a few rows the panel's first block then finds it in
** L2 (faster at decoder shapes with the weights from memory; no change
** with hot caches). */
ALWAYS_INLINE void block(const int bits, const int mr, const int nv, int64_t ng, const uint8_t *a,
                         int64_t sa, const uint8_t *b, const out_ctx *o, int64_t i0, int64_t col0,
                         int64_t abs_off, const uint8_t *whole, next_panel *next) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[4][4];
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++) {
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            acc[i][v] = _mm256_setzero_si256();
        }
    }
    for (int64_t g = 0; g < ng; g++) {
        const uint8_t *bg = b + g * GROUP_BYTES;
        if (whole) {
            prefetch_ahead(whole + g * GROUP_BYTES, GROUP_BYTES / 64);
        } else {
            prefetch_ahead(bg, (nv + 1) / 2);
        }
        prefetch_next(next);
        __m256i bv[4];
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            bv[v] = _mm256_loadu_si256((const __m256i *)(bg + 32 * v));
        }
#pragma GCC unroll 4
        for (int i = 0; i < mr; i++) {
            __m256i av = bcast32(a + i * sa + 4 * g);
            if (bits == 8) {
                __m256i aa = bcast32(a + abs_off + i * sa + 4 * g);
#pragma GCC unroll 4
                for (int v = 0; v < nv; v++) {
                    __m256i p = _mm256_maddubs_epi16(aa, _mm256_sign_epi8(bv[v], av));
                    acc[i][v] = _mm256_add_epi32(acc[i][v], _mm256_madd_epi16(p, ones));
                }
            } else {
#pragma GCC unroll 4
                for (int v = 0; v < nv; v++) {
                    acc[i][v] = _mm256_add_epi32(acc[i][v], _mm256_madd_epi16(av, bv[v]));
                }
            }
        }
    }
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++) {
        if (col0 + 8 * v >= o->n) {
            break;
        }
#pragma GCC unroll 4
        for (int i = 0; i < mr; i++) {
            store8(o, i0 + i, col0 + 8 * v, acc[i][v]);
        }
    }
}

/* Rows i0..i0+mr-1 against the panel of columns j0..j0+NC-1, in blocks;
** the panel's first block (i0 == 0) prefetches the whole panel. */
ALWAYS_INLINE void panel_rows(const int bits, const int mr, const int nv, int64_t ng,
                              const uint8_t *ai, int64_t sa, const uint8_t *panel, const out_ctx *o,
                              int64_t i0, int64_t j0, int64_t abs_off, next_panel *next) {
    for (int q = 0; q < KCPU_IGEMM_NC / (8 * nv) && j0 + 8 * nv * q < o->n; q++) {
        block(bits, mr, nv, ng, ai, sa, panel + 32 * nv * q, o, i0, j0 + 8 * nv * q, abs_off,
              i0 == 0 && q == 0 ? panel : NULL, next);
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
                 .res = j->res,
                 .ldr = j->ldr};
    int64_t ng = j->kp / (bits == 8 ? 4 : 2), sa = j->sa, abs_off = j->m * sa;
    int64_t panel_bytes = j->kp * KCPU_IGEMM_NC * (bits / 8);
    /* blocks per panel (4-row ones over 4 quarters, 2- and 1-row ones over 2
    ** halves) x groups: the iterations that share the next panel's lines
    ** (none when k is 0: empty panels) */
    int64_t iters = ((j->m / 4) * 4 + (j->m % 4 / 2) * 2 + (j->m % 2) * 2) * ng;
    int lines = iters > 0 ? (int)((panel_bytes / 64 + iters - 1) / iters) : 0;
    for (int64_t j0 = 0; j0 < j->np; j0 += KCPU_IGEMM_NC) {
        const uint8_t *panel = (const uint8_t *)j->panels + (j0 / KCPU_IGEMM_NC) * panel_bytes;
        uintptr_t after = (uintptr_t)panel + (uintptr_t)panel_bytes;
        next_panel next = {
            after, j0 + KCPU_IGEMM_NC < j->np ? after + (uintptr_t)panel_bytes : after, lines};
        int64_t i0 = 0;
        for (; j->m - i0 >= 4; i0 += 4) { /* 4 rows x 16 columns */
            if (bits == 8)
                panel_rows(8, 4, 2, ng, a + i0 * sa, sa, panel, &o, i0, j0, abs_off, &next);
            else
                panel_rows(16, 4, 2, ng, a + i0 * sa, sa, panel, &o, i0, j0, abs_off, &next);
        }
        for (; j->m - i0 >= 2; i0 += 2) { /* 2 rows x 32 columns */
            if (bits == 8)
                panel_rows(8, 2, 4, ng, a + i0 * sa, sa, panel, &o, i0, j0, abs_off, &next);
            else
                panel_rows(16, 2, 4, ng, a + i0 * sa, sa, panel, &o, i0, j0, abs_off, &next);
        }
        if (i0 < j->m) {
            if (bits == 8)
                panel_rows(8, 1, 4, ng, a + i0 * sa, sa, panel, &o, i0, j0, abs_off, &next);
            else
                panel_rows(16, 1, 4, ng, a + i0 * sa, sa, panel, &o, i0, j0, abs_off, &next);
        }
    }
}

void kcpu_igemm_i8_avx2(kcpu_igemm_job *j) {
    if (j->phase != KCPU_IGEMM_PRODUCT) {
        j->qa = kcpu_i8_mult(j->a_max_known ? j->a_maxabs : maxabs_avx2(j->m, j->k, j->a, j->lda));
        for (int64_t i = 0; i < j->m; i++) {
            int8_t *y = (int8_t *)j->scratch + i * j->sa;
            quant_row_i8(j->k, j->a + i * j->lda, j->qa, y, j->sa);
            abs_row_i8(j->sa, y, (uint8_t *)j->scratch + (j->m + i) * j->sa);
        }
    }
    if (j->phase != KCPU_IGEMM_QUANT) {
        gemm(8, j);
    }
}

void kcpu_igemm_i16_avx2(kcpu_igemm_job *j) {
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
