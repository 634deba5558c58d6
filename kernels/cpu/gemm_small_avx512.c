/*
** gemm_small_avx512.c: own fp32 GEMM for small m (decoder steps, m = beam
** or batch rows), C[m,n] = alpha * op(A) . op(B) + beta * C, no allocation.
**
** B not transposed (B is [k,n], Marian's weight layout): for a panel of 64
** columns (4 zmm) and up to 6 rows of A, keep 6 x 4 accumulators in
** registers; each step p loads one 64-float row slice of B and broadcasts
** A[i,p] into 4 FMAs per row.  The row chunks of one column panel run back
** to back so the panel (k x 256 bytes) is re-read from L2, not DRAM.  The
** last panel uses masked loads and stores.  op(A) may be transposed: A is
** only ever read by scalar broadcasts, so ta just swaps its strides.
**
** B transposed (B stored [n,k]: output layer with tied embeddings,
** attention scores): dot products along k, up to 4 rows of A against up to
** 8 rows of B, masked k tail, horizontal sums at the end.  ta with tb has no
** contiguous direction in either operand and goes to the reference.
*/
#include "kcpu_impl.h"

#include <immintrin.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))

enum { NV = 4, PANEL = 16 * NV, MR_MAX = 6 };
#ifndef KCPU_STREAM_M
#define KCPU_STREAM_M 4
#endif
#ifndef KCPU_STREAM_BYTES
#define KCPU_STREAM_BYTES (8.0 * 1024 * 1024)
#endif

ALWAYS_INLINE __mmask16 tail_mask(int64_t left) {
    if (left >= 16) {
        return (__mmask16)0xffff;
    }
    if (left <= 0) {
        return 0;
    }
    return (__mmask16)((1u << left) - 1u);
}

ALWAYS_INLINE __m512 c_update(__m512 acc, __m512 va, __m512 vb, float beta, const float *c,
                              __mmask16 mk, bool masked) {
    __m512 r = _mm512_mul_ps(acc, va);
    if (beta != 0.0f) {
        __m512 old = masked ? _mm512_maskz_loadu_ps(mk, c) : _mm512_loadu_ps(c);
        r = _mm512_fmadd_ps(old, vb, r);
    }
    return r;
}

/* One MR x 64 block of C (columns j0..j0+63, masked beyond n when masked). */
ALWAYS_INLINE void nn_block(const int mr, const bool masked, int64_t k, float alpha,
                            const float *a, int64_t ars, int64_t acs, const float *b, int64_t ldb,
                            float beta, float *c, int64_t ldc, const __mmask16 *mk) {
    __m512 acc[MR_MAX][NV];
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            acc[i][v] = _mm512_setzero_ps();
        }
    }
    int64_t p = 0;
    if (mr <= 2) {
        /* Too few independent FMA chains to cover the FMA latency: a second
        ** set of accumulators takes the odd steps of p. */
        __m512 acc2[2][NV];
#pragma GCC unroll 2
        for (int i = 0; i < mr; i++) {
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                acc2[i][v] = _mm512_setzero_ps();
            }
        }
        for (; p + 2 <= k; p += 2) {
            const float *bp = b + p * ldb, *ap = a + p * acs;
            __m512 b0[NV], b1[NV];
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                b0[v] = masked ? _mm512_maskz_loadu_ps(mk[v], bp + 16 * v)
                               : _mm512_loadu_ps(bp + 16 * v);
                b1[v] = masked ? _mm512_maskz_loadu_ps(mk[v], bp + ldb + 16 * v)
                               : _mm512_loadu_ps(bp + ldb + 16 * v);
            }
#pragma GCC unroll 2
            for (int i = 0; i < mr; i++) {
                __m512 a0 = _mm512_set1_ps(ap[i * ars]), a1 = _mm512_set1_ps(ap[i * ars + acs]);
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++) {
                    acc[i][v] = _mm512_fmadd_ps(a0, b0[v], acc[i][v]);
                    acc2[i][v] = _mm512_fmadd_ps(a1, b1[v], acc2[i][v]);
                }
            }
        }
#pragma GCC unroll 2
        for (int i = 0; i < mr; i++) {
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                acc[i][v] = _mm512_add_ps(acc[i][v], acc2[i][v]);
            }
        }
    }
    for (; p < k; p++) {
        const float *bp = b + p * ldb;
        __m512 bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            bv[v] = masked ? _mm512_maskz_loadu_ps(mk[v], bp + 16 * v)
                           : _mm512_loadu_ps(bp + 16 * v);
        }
        const float *ap = a + p * acs;
#pragma GCC unroll 6
        for (int i = 0; i < mr; i++) {
            __m512 av = _mm512_set1_ps(ap[i * ars]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
            }
        }
    }
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
        float *ci = c + i * ldc;
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            __m512 r = c_update(acc[i][v], va, vb, beta, ci + 16 * v, mk[v], masked);
            if (masked) {
                _mm512_mask_storeu_ps(ci + 16 * v, mk[v], r);
            } else {
                _mm512_storeu_ps(ci + 16 * v, r);
            }
        }
    }
}

#define NN_CASE(MR)                                                                                \
    case MR:                                                                                       \
        if (masked) {                                                                              \
            nn_block(MR, true, k, alpha, a, ars, acs, b, ldb, beta, c, ldc, mk);                   \
        } else {                                                                                   \
            nn_block(MR, false, k, alpha, a, ars, acs, b, ldb, beta, c, ldc, mk);                  \
        }                                                                                          \
        break;

static void nn_rows(int mr, bool masked, int64_t k, float alpha, const float *a, int64_t ars,
                   int64_t acs, const float *b, int64_t ldb, float beta, float *c, int64_t ldc,
                   const __mmask16 *mk) {
    switch (mr) {
        NN_CASE(1)
        NN_CASE(2)
        NN_CASE(3)
        NN_CASE(4)
        NN_CASE(5)
        NN_CASE(6)
    default: break;
    }
}

/* Splits m rows into chunks of at most MR_MAX, as even as possible. */
static int chunk_rows(int64_t m_left) {
    int64_t chunks = (m_left + MR_MAX - 1) / MR_MAX;
    return (int)((m_left + chunks - 1) / chunks);
}

static void gemm_nn(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t ars,
                    int64_t acs, const float *b, int64_t ldb, float beta, float *c,
                    int64_t ldc) {
    __mmask16 full[NV] = {0xffff, 0xffff, 0xffff, 0xffff};
    for (int64_t j0 = 0; j0 < n; j0 += PANEL) {
        bool masked = n - j0 < PANEL;
        __mmask16 tail[NV];
        for (int v = 0; v < NV; v++) {
            tail[v] = tail_mask(n - j0 - 16 * v);
        }
        const __mmask16 *mk = masked ? tail : full;
        for (int64_t i0 = 0; i0 < m;) {
            int mr = chunk_rows(m - i0);
            nn_rows(mr, masked, k, alpha, a + i0 * ars, ars, acs, b + j0, ldb, beta,
                    c + i0 * ldc + j0, ldc, mk);
            i0 += mr;
        }
    }
}

/* Streaming variant for very few rows and a B too large for the caches
** (vocabulary projections): walks B four rows at a time front to back, so
** DRAM sees four sequential streams instead of one 256-byte block per row,
** and keeps the running sums in C (n floats per row, cache resident). */
enum { KB = 4 };

ALWAYS_INLINE void stream_block(const int mr, const bool masked, int kb, const float *a,
                                int64_t ars, int64_t acs, float alpha, const float *b,
                                int64_t ldb, float *c, int64_t ldc, const __mmask16 *mk) {
    __m512 acc[4][NV], av[4][KB];
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++) {
        for (int q = 0; q < kb; q++) {
            av[i][q] = _mm512_set1_ps(alpha * a[i * ars + q * acs]);
        }
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            acc[i][v] = masked ? _mm512_maskz_loadu_ps(mk[v], c + i * ldc + 16 * v)
                               : _mm512_loadu_ps(c + i * ldc + 16 * v);
        }
    }
    for (int q = 0; q < kb; q++) {
        __m512 bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            bv[v] = masked ? _mm512_maskz_loadu_ps(mk[v], b + q * ldb + 16 * v)
                           : _mm512_loadu_ps(b + q * ldb + 16 * v);
        }
#pragma GCC unroll 4
        for (int i = 0; i < mr; i++) {
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                acc[i][v] = _mm512_fmadd_ps(av[i][q], bv[v], acc[i][v]);
            }
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            if (masked) {
                _mm512_mask_storeu_ps(c + i * ldc + 16 * v, mk[v], acc[i][v]);
            } else {
                _mm512_storeu_ps(c + i * ldc + 16 * v, acc[i][v]);
            }
        }
    }
}

ALWAYS_INLINE void stream_rows(const int mr, int64_t n, int64_t k, float alpha, const float *a,
                               int64_t ars, int64_t acs, const float *b, int64_t ldb, float beta,
                               float *c, int64_t ldc) {
    for (int i = 0; i < mr; i++) {
        float *ci = c + i * ldc;
        for (int64_t j = 0; j < n; j++) {
            ci[j] = beta == 0.0f ? 0.0f : beta * ci[j];
        }
    }
    __mmask16 full[NV] = {0xffff, 0xffff, 0xffff, 0xffff}, tail[NV];
    int64_t nfull = n / PANEL * PANEL;
    for (int v = 0; v < NV; v++) {
        tail[v] = tail_mask(n - nfull - 16 * v);
    }
    for (int64_t p = 0; p < k; p += KB) {
        int kb = k - p < KB ? (int)(k - p) : KB;
        const float *ap = a + p * acs, *bp = b + p * ldb;
        for (int64_t j = 0; j < nfull; j += PANEL) {
            stream_block(mr, false, kb, ap, ars, acs, alpha, bp + j, ldb, c + j, ldc, full);
        }
        if (nfull < n) {
            stream_block(mr, true, kb, ap, ars, acs, alpha, bp + nfull, ldb, c + nfull, ldc, tail);
        }
    }
}

static void gemm_nn_stream(int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                           int64_t ars, int64_t acs, const float *b, int64_t ldb, float beta,
                           float *c, int64_t ldc) {
    for (int64_t i0 = 0; i0 < m; i0 += 4) {
        const float *ai = a + i0 * ars;
        float *ci = c + i0 * ldc;
        switch (m - i0 < 4 ? m - i0 : 4) {
        case 1: stream_rows(1, n, k, alpha, ai, ars, acs, b, ldb, beta, ci, ldc); break;
        case 2: stream_rows(2, n, k, alpha, ai, ars, acs, b, ldb, beta, ci, ldc); break;
        case 3: stream_rows(3, n, k, alpha, ai, ars, acs, b, ldb, beta, ci, ldc); break;
        default: stream_rows(4, n, k, alpha, ai, ars, acs, b, ldb, beta, ci, ldc); break;
        }
    }
}

/* ------------------------------------------------------------ B transposed */

ALWAYS_INLINE void nt_block(const int mr, const int nj, int64_t k, float alpha, const float *a,
                            int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                            int64_t ldc) {
    __m512 acc[4][8];
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++) {
#pragma GCC unroll 8
        for (int j = 0; j < nj; j++) {
            acc[i][j] = _mm512_setzero_ps();
        }
    }
    int64_t p = 0;
    for (; p + 16 <= k; p += 16) {
        __m512 av[4];
#pragma GCC unroll 4
        for (int i = 0; i < mr; i++) {
            av[i] = _mm512_loadu_ps(a + i * lda + p);
        }
#pragma GCC unroll 8
        for (int j = 0; j < nj; j++) {
            __m512 bv = _mm512_loadu_ps(b + j * ldb + p);
#pragma GCC unroll 4
            for (int i = 0; i < mr; i++) {
                acc[i][j] = _mm512_fmadd_ps(av[i], bv, acc[i][j]);
            }
        }
    }
    if (p < k) {
        __mmask16 mk = tail_mask(k - p);
        __m512 av[4];
#pragma GCC unroll 4
        for (int i = 0; i < mr; i++) {
            av[i] = _mm512_maskz_loadu_ps(mk, a + i * lda + p);
        }
#pragma GCC unroll 8
        for (int j = 0; j < nj; j++) {
            __m512 bv = _mm512_maskz_loadu_ps(mk, b + j * ldb + p);
#pragma GCC unroll 4
            for (int i = 0; i < mr; i++) {
                acc[i][j] = _mm512_fmadd_ps(av[i], bv, acc[i][j]);
            }
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++) {
#pragma GCC unroll 8
        for (int j = 0; j < nj; j++) {
            float r = alpha * _mm512_reduce_add_ps(acc[i][j]);
            float *cij = c + i * ldc + j;
            *cij = beta == 0.0f ? r : r + beta * *cij;
        }
    }
}

/* Columns per block for mr rows: 4 x 4, 3 x 5, 2 x 8, 1 x 8 accumulators. */
#define NT_WIDE(MR) ((MR) >= 4 ? 4 : (MR) == 3 ? 5 : 8)

#define NT_CASE(MR)                                                                                \
    case MR: {                                                                                     \
        int64_t j = 0;                                                                             \
        for (; j + NT_WIDE(MR) <= n; j += NT_WIDE(MR)) {                                           \
            nt_block(MR, NT_WIDE(MR), k, alpha, a, lda, b + j * ldb, ldb, beta, c + j, ldc);       \
        }                                                                                          \
        for (; j < n; j++) {                                                                       \
            nt_block(MR, 1, k, alpha, a, lda, b + j * ldb, ldb, beta, c + j, ldc);                 \
        }                                                                                          \
        break;                                                                                     \
    }

static void nt_rows(int mr, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                    const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    switch (mr) {
        NT_CASE(1)
        NT_CASE(2)
        NT_CASE(3)
        NT_CASE(4)
    default: break;
    }
}

static void gemm_nt(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                    const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    /* Blocks of 256 B rows keep that slice of B in L1/L2 across row chunks. */
    for (int64_t j0 = 0; j0 < n; j0 += 256) {
        int64_t nb = n - j0 < 256 ? n - j0 : 256;
        for (int64_t i0 = 0; i0 < m;) {
            int64_t left = m - i0, chunks = (left + 3) / 4;
            int mr = (int)((left + chunks - 1) / chunks);
            nt_rows(mr, nb, k, alpha, a + i0 * lda, lda, b + j0 * ldb, ldb, beta,
                    c + i0 * ldc + j0, ldc);
            i0 += mr;
        }
    }
}

void kcpu_gemm_f32_small_avx512(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                                const float *a, int64_t lda, const float *b, int64_t ldb,
                                float beta, float *c, int64_t ldc) {
    if (m <= 0 || n <= 0) {
        return;
    }
    if (k <= 0 || alpha == 0.0f || (ta && tb)) {
        kcpu_gemm_f32_ref(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    if (tb) {
        gemm_nt(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    } else if (m <= KCPU_STREAM_M && (double)n * (double)k * 4.0 >= KCPU_STREAM_BYTES) {
        gemm_nn_stream(m, n, k, alpha, a, ta ? 1 : lda, ta ? lda : 1, b, ldb, beta, c, ldc);
    } else {
        gemm_nn(m, n, k, alpha, a, ta ? 1 : lda, ta ? lda : 1, b, ldb, beta, c, ldc);
    }
}
