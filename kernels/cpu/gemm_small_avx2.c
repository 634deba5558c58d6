/*
** gemm_small_avx2.c: own fp32 GEMM for small m with AVX2 + FMA (CPUs
** without AVX-512), C[m,n] = alpha * op(A) . op(B) + beta * C, no heap
** allocation.  Same entry contract and cases as gemm_small_avx512.c.
**
** B not transposed (B is [k,n]): a register block of mr rows of A (up to 6)
** by NN_NV(mr) ymm of columns keeps its accumulators in the 16 ymm
** registers (12 from 3 rows up: 3 x 3, 4 x 3, 5 x 2, 6 x 2); each step p
** loads one row slice of B and broadcasts A[i,p] into NN_NV FMAs per row.
** One or two rows take 4 ymm, one row with a second set of accumulators for
** the odd steps of p to cover the FMA latency.  Row chunks run back to back
** over a block of CB columns and (from 7 rows) KCN steps of k, so that block
** of B is re-read from L1/L2, not DRAM.  Column tails: the whole ymm
** unmasked, then one masked ymm.  op(A) may be transposed: A is only ever
** read by scalar broadcasts, so ta just swaps its strides.  With at most 4
** rows and a B over 8 MiB (vocabulary projections) B is instead walked
** front to back four rows at a time, the running sums kept in C.
**
** B transposed (B stored [n,k]: output layer with tied embeddings,
** attention scores), few rows or long k: dot products along k, mr rows of A
** (up to 3) against NT_NJ(mr) rows of B, masked k tail; the nj accumulators
** of a row are summed horizontally together (a hadd tree) into one vector of
** nj results.  From 4 rows with 8 m >= k (attention scores T x T x 32/64):
** blocks of B are transposed (8 x 8 in registers) into a panel on the stack
** and multiplied as above.  ta with tb has no contiguous direction in
** either operand and goes to the reference.
**
** Choices measured on an AMD EPYC (Zen 3 class) against OpenBLAS 0.3.21,
** see blas.c for the m limits.  Checked in the assembly (objdump -d): no
** ymm spill in the k loops of the register blocks; outside them, the
** masked k tail of a 3 x 4 dot-product block spills one vector, and GCC
** swaps two accumulators through the stack in the 2-row streaming loop
** (once per 16 FMAs, in a loop bound by DRAM).
*/
#include "kcpu_impl.h"

#include <immintrin.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Blocking (overridable with -D to benchmark): CB columns of B per block
** (a multiple of every panel width: 16, 24, 32), KC steps of k per packed
** panel of B transposed, KCN steps of k per block of B [k,n] shared by
** several row chunks.  CB 48 or 192 and KCN 64 or 128 measured the same
** within noise; no k blocking was slower at m 8..16, k 2048. */
#ifndef KCPU_AVX2_CB
#define KCPU_AVX2_CB 96
#endif
#ifndef KCPU_AVX2_KC
#define KCPU_AVX2_KC 64
#endif
#ifndef KCPU_AVX2_KCN
#define KCPU_AVX2_KCN 256
#endif
/* B transposed: pack (see gemm_nt_packed) from 4 rows when 8 m >= k.  The
** dot products pay one horizontal sum per output, amortized over k; the
** packing pays one transposition of B, amortized over m (timed on Zen 3:
** at m 4..16 and k 32/64 packing is faster, at k 256/512 the dot products
** are up to m 8, at m 12..16 the two tie). */
#ifndef KCPU_AVX2_PACK
#define KCPU_AVX2_PACK(m, k) ((m) >= 4 && 8 * (m) >= (k))
#endif
enum {
    MR_MAX = 6,
    NV_MAX = 4,
    CB = KCPU_AVX2_CB,
    KC = KCPU_AVX2_KC,
    KCN = KCPU_AVX2_KCN,
    NT_MR = 3
};
/* ymm of columns per register block of MR rows: 1 x 4 (two sets), 2 x 4,
** 3 x 3, 4 x 3, 5 x 2, 6 x 2.  CB is a multiple of every panel width. */
#define NN_NV(MR) ((MR) <= 2 ? 4 : (MR) <= 4 ? 3 : 2)
/* B rows per dot-product block of MR rows of A: 1 x 8, 2 x 6, 3 x 4. */
#define NT_NJ(MR) ((MR) == 1 ? 8 : (MR) == 2 ? 6 : 4)

#ifndef KCPU_STREAM_M
#define KCPU_STREAM_M 4
#endif
#ifndef KCPU_STREAM_BYTES
#define KCPU_STREAM_BYTES (8.0 * 1024 * 1024)
#endif

/* Lanes below `left` set: all for left >= 8, none for left <= 0. */
ALWAYS_INLINE __m256i lane_mask(int64_t left) {
    int l = left <= 0 ? 0 : left >= 8 ? 8 : (int)left;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(l), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

ALWAYS_INLINE __m256 load8(const bool masked, const float *p, __m256i mk) {
    return masked ? _mm256_maskload_ps(p, mk) : _mm256_loadu_ps(p);
}

/* c = alpha * acc + beta * c (c not read when beta == 0: it may be NaN). */
ALWAYS_INLINE void update8(const bool masked, float *c, __m256 acc, __m256 va, float beta,
                           __m256 vb, __m256i mk) {
    __m256 r = _mm256_mul_ps(acc, va);
    if (beta != 0.0f) {
        r = _mm256_fmadd_ps(load8(masked, c, mk), vb, r);
    }
    if (masked) {
        _mm256_maskstore_ps(c, mk, r);
    } else {
        _mm256_storeu_ps(c, r);
    }
}

/* ---------------------------------------------------------- B not transposed */

/* One mr x (8 nv) block of C; masked: columns limited by mk. */
ALWAYS_INLINE void nn_block(const int mr, const int nv, const bool masked, int64_t k,
                            const float *ab, const float *a, int64_t ars, int64_t acs,
                            const float *b, int64_t ldb, float *c, int64_t ldc, const __m256i *mk) {
    __m256 acc[MR_MAX][NV_MAX];
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            acc[i][v] = _mm256_setzero_ps();
        }
    }
    int64_t p = 0;
    if (mr == 1) {
        __m256 acc2[NV_MAX];
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            acc2[v] = _mm256_setzero_ps();
        }
        for (; p + 2 <= k; p += 2) {
            const float *bp = b + p * ldb;
            __m256 a0 = _mm256_broadcast_ss(a + p * acs),
                   a1 = _mm256_broadcast_ss(a + p * acs + acs);
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++) {
                acc[0][v] = _mm256_fmadd_ps(a0, load8(masked, bp + 8 * v, mk[v]), acc[0][v]);
                acc2[v] = _mm256_fmadd_ps(a1, load8(masked, bp + ldb + 8 * v, mk[v]), acc2[v]);
            }
        }
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            acc[0][v] = _mm256_add_ps(acc[0][v], acc2[v]);
        }
    }
    for (; p < k; p++) {
        const float *bp = b + p * ldb, *ap = a + p * acs;
        __m256 bv[NV_MAX];
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            bv[v] = load8(masked, bp + 8 * v, mk[v]);
        }
#pragma GCC unroll 6
        for (int i = 0; i < mr; i++) {
            __m256 av = _mm256_broadcast_ss(ap + i * ars);
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++) {
                acc[i][v] = _mm256_fmadd_ps(av, bv[v], acc[i][v]);
            }
        }
    }
    __m256 va = _mm256_broadcast_ss(ab), vb = _mm256_broadcast_ss(ab + 1);
    float beta = ab[1];
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            update8(masked, c + i * ldc + 8 * v, acc[i][v], va, beta, vb, mk[v]);
        }
    }
}

/* Full panels unmasked; the rest of the block as its whole ymm (one narrower
** unmasked block) and a last masked block of one ymm, so that no masked
** block needs more than one mask register. */
#define NN_PART(MR, T)                                                                             \
    case T:                                                                                        \
        nn_block(MR, (T) < NN_NV(MR) ? (T) : 1, false, k, ab, a, ars, acs, b + j, ldb, c + j, ldc, \
                 full);                                                                            \
        break;

#define NN_CASE(MR)                                                                                \
    case MR: {                                                                                     \
        int64_t j = 0;                                                                             \
        for (; j + 8 * NN_NV(MR) <= nb; j += 8 * NN_NV(MR)) {                                      \
            nn_block(MR, NN_NV(MR), false, k, ab, a, ars, acs, b + j, ldb, c + j, ldc, full);      \
        }                                                                                          \
        switch ((nb - j) / 8) {                                                                    \
            NN_PART(MR, 1)                                                                         \
            NN_PART(MR, 2)                                                                         \
            NN_PART(MR, 3)                                                                         \
        default: break;                                                                            \
        }                                                                                          \
        j += (nb - j) / 8 * 8;                                                                     \
        if (j < nb) {                                                                              \
            __m256i mk = lane_mask(nb - j);                                                        \
            nn_block(MR, 1, true, k, ab, a, ars, acs, b + j, ldb, c + j, ldc, &mk);                \
        }                                                                                          \
        break;                                                                                     \
    }

/* mr rows of C over nb columns. */
__attribute__((noinline)) static void nn_rows(int mr, int64_t nb, int64_t k, const float *ab,
                                              const float *a, int64_t ars, int64_t acs,
                                              const float *b, int64_t ldb, float *c, int64_t ldc) {
    const __m256i ones = _mm256_set1_epi32(-1);
    const __m256i full[NV_MAX] = {ones, ones, ones, ones};
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
static int chunk_rows(int64_t m_left, int64_t mr_max) {
    int64_t chunks = (m_left + mr_max - 1) / mr_max;
    return (int)((m_left + chunks - 1) / chunks);
}

static void gemm_nn(int64_t m, int64_t n, int64_t k, const float *ab, const float *a, int64_t ars,
                    int64_t acs, const float *b, int64_t ldb, float *c, int64_t ldc) {
    /* With more than one row chunk, k is cut in blocks of KCN so that the
    ** CB x KCN block of B the chunks share stays in L1/L2; later k blocks
    ** accumulate into C (beta 1). */
    int64_t kcn = m > MR_MAX ? KCN : k;
    const float ab1[2] = {ab[0], 1.0f};
    for (int64_t j0 = 0; j0 < n; j0 += CB) {
        int64_t nb = n - j0 < CB ? n - j0 : CB;
        for (int64_t p0 = 0; p0 < k; p0 += kcn) {
            int64_t kc = k - p0 < kcn ? k - p0 : kcn;
            for (int64_t i0 = 0; i0 < m;) {
                int mr = chunk_rows(m - i0, MR_MAX);
                nn_rows(mr, nb, kc, p0 == 0 ? ab : ab1, a + i0 * ars + p0 * acs, ars, acs,
                        b + p0 * ldb + j0, ldb, c + i0 * ldc + j0, ldc);
                i0 += mr;
            }
        }
    }
}

/* Streaming variant for at most 4 rows and a B too large for the caches:
** KB rows of B at a time, front to back, the running sums in C.  The KB
** values alpha * A[i, p..p+KB) of a row sit in both halves of one ymm and
** are broadcast by an in-register shuffle, not reloaded from memory. */
enum { KB = 4, SV = 2 };

/* Lane q of each 128-bit half of x, in all lanes. */
ALWAYS_INLINE __m256 lane_bcast(__m256 x, const int q) {
    switch (q) {
    case 0: return _mm256_permute_ps(x, 0x00);
    case 1: return _mm256_permute_ps(x, 0x55);
    case 2: return _mm256_permute_ps(x, 0xaa);
    default: return _mm256_permute_ps(x, 0xff);
    }
}

ALWAYS_INLINE void stream_block(const int mr, const int nv, const bool masked, const int kb,
                                const __m256 *arow, const float *b, int64_t ldb, float *c,
                                int64_t ldc, __m256i mk) {
    __m256 acc[4][SV];
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++) {
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) {
            acc[i][v] = load8(masked, c + i * ldc + 8 * v, mk);
        }
    }
#pragma GCC unroll 4
    for (int q = 0; q < kb; q++) {
        __m256 bv[SV];
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) {
            bv[v] = load8(masked, b + q * ldb + 8 * v, mk);
        }
#pragma GCC unroll 4
        for (int i = 0; i < mr; i++) {
            __m256 av = lane_bcast(arow[i], q);
#pragma GCC unroll 2
            for (int v = 0; v < nv; v++) {
                acc[i][v] = _mm256_fmadd_ps(av, bv[v], acc[i][v]);
            }
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++) {
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) {
            if (masked) {
                _mm256_maskstore_ps(c + i * ldc + 8 * v, mk, acc[i][v]);
            } else {
                _mm256_storeu_ps(c + i * ldc + 8 * v, acc[i][v]);
            }
        }
    }
}

/* kb rows of B times the mr x kb values of arow, added into C. */
ALWAYS_INLINE void stream_cols(const int mr, const int kb, int64_t n, const __m256 *arow,
                               const float *b, int64_t ldb, float *c, int64_t ldc) {
    const __m256i ones = _mm256_set1_epi32(-1);
    int64_t nfull = n / (8 * SV) * (8 * SV), n8 = n / 8 * 8;
    for (int64_t j = 0; j < nfull; j += 8 * SV) {
        stream_block(mr, SV, false, kb, arow, b + j, ldb, c + j, ldc, ones);
    }
    for (int64_t j = nfull; j < n8; j += 8) {
        stream_block(mr, 1, false, kb, arow, b + j, ldb, c + j, ldc, ones);
    }
    if (n8 < n) {
        stream_block(mr, 1, true, kb, arow, b + n8, ldb, c + n8, ldc, lane_mask(n - n8));
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
    int64_t p = 0;
    for (; p + KB <= k; p += KB) {
        __m256 arow[4];
        for (int i = 0; i < mr; i++) {
            const float *ai = a + i * ars + p * acs;
            __m128 x = _mm_mul_ps(_mm_set1_ps(alpha),
                                  _mm_setr_ps(ai[0], ai[acs], ai[2 * acs], ai[3 * acs]));
            arow[i] = _mm256_set_m128(x, x);
        }
        stream_cols(mr, KB, n, arow, b + p * ldb, ldb, c, ldc);
    }
    for (; p < k; p++) { /* the last k % KB rows one at a time */
        __m256 arow[4];
        for (int i = 0; i < mr; i++) {
            arow[i] = _mm256_set1_ps(alpha * a[i * ars + p * acs]);
        }
        stream_cols(mr, 1, n, arow, b + p * ldb, ldb, c, ldc);
    }
}

/* One function per row count: inlined into one, the four bodies exhaust
** GCC's register allocator (B vectors spilled in the inner loop). */
#define STREAM_ROWS(MR)                                                                            \
    __attribute__((noinline)) static void stream_rows##MR(                                         \
        int64_t n, int64_t k, float alpha, const float *a, int64_t ars, int64_t acs,               \
        const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {                          \
        stream_rows(MR, n, k, alpha, a, ars, acs, b, ldb, beta, c, ldc);                           \
    }
STREAM_ROWS(1)
STREAM_ROWS(2)
STREAM_ROWS(3)
STREAM_ROWS(4)

static void gemm_nn_stream(int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                           int64_t ars, int64_t acs, const float *b, int64_t ldb, float beta,
                           float *c, int64_t ldc) {
    for (int64_t i0 = 0; i0 < m; i0 += 4) {
        const float *ai = a + i0 * ars;
        float *ci = c + i0 * ldc;
        switch (m - i0 < 4 ? m - i0 : 4) {
        case 1: stream_rows1(n, k, alpha, ai, ars, acs, b, ldb, beta, ci, ldc); break;
        case 2: stream_rows2(n, k, alpha, ai, ars, acs, b, ldb, beta, ci, ldc); break;
        case 3: stream_rows3(n, k, alpha, ai, ars, acs, b, ldb, beta, ci, ldc); break;
        default: stream_rows4(n, k, alpha, ai, ars, acs, b, ldb, beta, ci, ldc); break;
        }
    }
}

/* -------------------------------------------------------------- B transposed */

/* Lane j of the result: the sum of the 8 lanes of x[j], for j < nj (the
** other lanes are 0). */
ALWAYS_INLINE __m256 hsum8(const int nj, const __m256 *x) {
    __m256 z = _mm256_setzero_ps();
    __m256 h01 = _mm256_hadd_ps(x[0], nj > 1 ? x[1] : z);
    __m256 h23 = nj > 2 ? _mm256_hadd_ps(x[2], nj > 3 ? x[3] : z) : z;
    __m256 h45 = nj > 4 ? _mm256_hadd_ps(x[4], nj > 5 ? x[5] : z) : z;
    __m256 h67 = nj > 6 ? _mm256_hadd_ps(x[6], nj > 7 ? x[7] : z) : z;
    __m256 q0 = _mm256_hadd_ps(h01, h23); /* x0..x3 over lanes 0-3 | 4-7 */
    __m256 q1 = nj > 4 ? _mm256_hadd_ps(h45, h67) : z;
    return _mm256_add_ps(_mm256_permute2f128_ps(q0, q1, 0x20),
                         _mm256_permute2f128_ps(q0, q1, 0x31));
}

/* The same for nj <= 4, in 128 bits. */
ALWAYS_INLINE __m128 hsum4(const int nj, const __m256 *x) {
    __m256 z = _mm256_setzero_ps();
    __m256 h01 = _mm256_hadd_ps(x[0], nj > 1 ? x[1] : z);
    __m256 h23 = nj > 2 ? _mm256_hadd_ps(x[2], nj > 3 ? x[3] : z) : z;
    __m256 q0 = _mm256_hadd_ps(h01, h23);
    return _mm_add_ps(_mm256_castps256_ps128(q0), _mm256_extractf128_ps(q0, 1));
}

/* C[i, 0..nj) = alpha * sums + beta * C for one row. */
ALWAYS_INLINE void nt_store(const int nj, const __m256 *acc, const float *ab, float *c) {
    float alpha = ab[0], beta = ab[1];
    if (nj == 1) {
        __m128 r = hsum4(1, acc);
        float s = alpha * _mm_cvtss_f32(r);
        *c = beta == 0.0f ? s : s + beta * *c;
    } else if (nj <= 4) {
        __m128 r = _mm_mul_ps(hsum4(nj, acc), _mm_set1_ps(alpha));
        __m128i mk = _mm_cmpgt_epi32(_mm_set1_epi32(nj), _mm_setr_epi32(0, 1, 2, 3));
        if (beta != 0.0f) {
            __m128 old = nj == 4 ? _mm_loadu_ps(c) : _mm_maskload_ps(c, mk);
            r = _mm_fmadd_ps(old, _mm_set1_ps(beta), r);
        }
        if (nj == 4) {
            _mm_storeu_ps(c, r);
        } else {
            _mm_maskstore_ps(c, mk, r);
        }
    } else {
        update8(nj < 8, c, hsum8(nj, acc), _mm256_set1_ps(alpha), beta, _mm256_set1_ps(beta),
                lane_mask(nj));
    }
}

/* mr rows of A against nj rows of B: mr x nj dot products of length k. */
ALWAYS_INLINE void nt_block(const int mr, const int nj, int64_t k, const float *ab, const float *a,
                            int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc) {
    __m256 acc[NT_MR][8];
#pragma GCC unroll 3
    for (int i = 0; i < mr; i++) {
#pragma GCC unroll 8
        for (int j = 0; j < nj; j++) {
            acc[i][j] = _mm256_setzero_ps();
        }
    }
    int64_t p = 0;
    for (; p + 8 <= k; p += 8) {
        __m256 av[NT_MR];
#pragma GCC unroll 3
        for (int i = 0; i < mr; i++) {
            av[i] = _mm256_loadu_ps(a + i * lda + p);
        }
#pragma GCC unroll 8
        for (int j = 0; j < nj; j++) {
            __m256 bv = _mm256_loadu_ps(b + j * ldb + p);
#pragma GCC unroll 3
            for (int i = 0; i < mr; i++) {
                acc[i][j] = _mm256_fmadd_ps(av[i], bv, acc[i][j]);
            }
        }
    }
    if (p < k) {
        __m256i mk = lane_mask(k - p);
        __m256 av[NT_MR];
#pragma GCC unroll 3
        for (int i = 0; i < mr; i++) {
            av[i] = _mm256_maskload_ps(a + i * lda + p, mk);
        }
#pragma GCC unroll 8
        for (int j = 0; j < nj; j++) {
            __m256 bv = _mm256_maskload_ps(b + j * ldb + p, mk);
#pragma GCC unroll 3
            for (int i = 0; i < mr; i++) {
                acc[i][j] = _mm256_fmadd_ps(av[i], bv, acc[i][j]);
            }
        }
    }
#pragma GCC unroll 3
    for (int i = 0; i < mr; i++) {
        nt_store(nj, acc[i], ab, c + i * ldc);
    }
}

#define NT_TAIL(MR, T)                                                                             \
    case T:                                                                                        \
        nt_block(MR, (T) < NT_NJ(MR) ? (T) : 1, k, ab, a, lda, b + j * ldb, ldb, c + j, ldc);      \
        break;

#define NT_CASE(MR)                                                                                \
    case MR: {                                                                                     \
        int64_t j = 0;                                                                             \
        for (; j + NT_NJ(MR) <= n; j += NT_NJ(MR)) {                                               \
            nt_block(MR, NT_NJ(MR), k, ab, a, lda, b + j * ldb, ldb, c + j, ldc);                  \
        }                                                                                          \
        switch (n - j) {                                                                           \
            NT_TAIL(MR, 1)                                                                         \
            NT_TAIL(MR, 2)                                                                         \
            NT_TAIL(MR, 3)                                                                         \
            NT_TAIL(MR, 4)                                                                         \
            NT_TAIL(MR, 5)                                                                         \
            NT_TAIL(MR, 6)                                                                         \
            NT_TAIL(MR, 7)                                                                         \
        default: break;                                                                            \
        }                                                                                          \
        break;                                                                                     \
    }

__attribute__((noinline)) static void nt_rows(int mr, int64_t n, int64_t k, const float *ab,
                                              const float *a, int64_t lda, const float *b,
                                              int64_t ldb, float *c, int64_t ldc) {
    switch (mr) {
        NT_CASE(1)
        NT_CASE(2)
        NT_CASE(3)
    default: break;
    }
}

static void gemm_nt(int64_t m, int64_t n, int64_t k, const float *ab, const float *a, int64_t lda,
                    const float *b, int64_t ldb, float *c, int64_t ldc) {
    /* Blocks of 256 B rows keep that slice of B in L1/L2 across row chunks. */
    for (int64_t j0 = 0; j0 < n; j0 += 256) {
        int64_t nb = n - j0 < 256 ? n - j0 : 256;
        for (int64_t i0 = 0; i0 < m;) {
            int mr = chunk_rows(m - i0, NT_MR);
            nt_rows(mr, nb, k, ab, a + i0 * lda, lda, b + j0 * ldb, ldb, c + i0 * ldc + j0, ldc);
            i0 += mr;
        }
    }
}

/* B transposed when KCPU_AVX2_PACK(m, k): blocks of CB rows x KC columns
** of B are transposed (8 x 8 in registers) into a [KC, CB] panel on the
** stack (24 KiB) and multiplied as in gemm_nn; later k blocks accumulate
** into C. */
ALWAYS_INLINE void transpose8x8(const float *src, int64_t lds, float *dst, int64_t ldd) {
    __m256 r[8], t[8], u[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        r[i] = _mm256_loadu_ps(src + i * lds);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
#pragma GCC unroll 2
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        _mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
        _mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
    }
}

/* bt[p * CB + j] = b[j * ldb + p] for j < nb, p < kc. */
static void pack_bt(int64_t nb, int64_t kc, const float *b, int64_t ldb, float *bt) {
    int64_t nb8 = nb / 8 * 8, kc8 = kc / 8 * 8;
    for (int64_t j = 0; j < nb8; j += 8) {
        for (int64_t p = 0; p < kc8; p += 8) {
            transpose8x8(b + j * ldb + p, ldb, bt + p * CB + j, CB);
        }
        for (int64_t p = kc8; p < kc; p++) {
            for (int64_t jj = j; jj < j + 8; jj++) {
                bt[p * CB + jj] = b[jj * ldb + p];
            }
        }
    }
    for (int64_t j = nb8; j < nb; j++) {
        for (int64_t p = 0; p < kc; p++) {
            bt[p * CB + j] = b[j * ldb + p];
        }
    }
}

static void gemm_nt_packed(int64_t m, int64_t n, int64_t k, const float *ab, const float *a,
                           int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc) {
    _Alignas(32) float bt[KC * CB];
    const float ab1[2] = {ab[0], 1.0f};
    for (int64_t j0 = 0; j0 < n; j0 += CB) {
        int64_t nb = n - j0 < CB ? n - j0 : CB;
        for (int64_t p0 = 0; p0 < k; p0 += KC) {
            int64_t kc = k - p0 < KC ? k - p0 : KC;
            pack_bt(nb, kc, b + j0 * ldb + p0, ldb, bt);
            for (int64_t i0 = 0; i0 < m;) {
                int mr = chunk_rows(m - i0, MR_MAX);
                nn_rows(mr, nb, kc, p0 == 0 ? ab : ab1, a + i0 * lda + p0, lda, 1, bt, CB,
                        c + i0 * ldc + j0, ldc);
                i0 += mr;
            }
        }
    }
}

void kcpu_gemm_f32_small_avx2(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                              const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                              float *c, int64_t ldc) {
    if (m <= 0 || n <= 0) {
        return;
    }
    if (k <= 0 || alpha == 0.0f || (ta && tb)) {
        kcpu_gemm_f32_ref(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    /* alpha and beta stay in memory: read after each block's k loop, they
    ** take no register from the accumulators (as values, GCC kept them live
    ** across the loops and spilled accumulators instead). */
    const float ab[2] = {alpha, beta};
    if (tb && KCPU_AVX2_PACK(m, k)) {
        gemm_nt_packed(m, n, k, ab, a, lda, b, ldb, c, ldc);
    } else if (tb) {
        gemm_nt(m, n, k, ab, a, lda, b, ldb, c, ldc);
    } else if (m <= KCPU_STREAM_M && (double)n * (double)k * 4.0 >= KCPU_STREAM_BYTES) {
        gemm_nn_stream(m, n, k, alpha, a, ta ? 1 : lda, ta ? lda : 1, b, ldb, beta, c, ldc);
    } else {
        gemm_nn(m, n, k, ab, a, ta ? 1 : lda, ta ? lda : 1, b, ldb, c, ldc);
    }
}
