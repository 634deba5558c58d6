/*
** gemm_bf16_avx512.c: the AVX-512 BF16 tile kernel of kcpu_gemm_bf16
** (layout in gemm_bf16.c).  12 x 32 sums in 24 zmm registers; each k pair
** loads the B panel's two lines of 16 pairs and, per row, broadcasts the A
** unit into one vdpbf16ps per line (32 multiply-adds each, the products of
** two bfloat16 exact in float32).  Rows past mr hold zeros of the packing;
** the columns past nr are not stored (masked stores).
**
** The packing of the blocks (the same units as gemm_bf16.c's scalar
** packing, bit for bit: vcvtne2ps2bf16 rounds as kcpu_bf16_of): a run of
** 32 floats along k converts to 16 units in order, 16 such runs are transposed in
** registers into the panel's rows of units (stride MR or NR); two rows of consecutive k become
*units
** by lo | hi << 16 and are stored whole.
*/
#include <string.h>

#include "kcpu_impl.h"
#include "kcpu_simd.h"

enum { MR = KCPU_BF16_MR, NR = KCPU_BF16_NR };

static inline void store_line(float *c, __m512 acc, __mmask16 mask, __m512 va, __m512 vb,
                              float beta, bool first) {
    if (!first) {
        __m512 old = _mm512_maskz_loadu_ps(mask, c);
        _mm512_mask_storeu_ps(c, mask, _mm512_fmadd_ps(va, acc, old));
    } else if (beta != 0.0f) {
        __m512 old = _mm512_maskz_loadu_ps(mask, c);
        _mm512_mask_storeu_ps(c, mask, _mm512_fmadd_ps(va, acc, _mm512_mul_ps(vb, old)));
    } else {
        _mm512_mask_storeu_ps(c, mask, _mm512_mul_ps(va, acc));
    }
}

void kcpu_bf16_tile_avx512(int64_t kp, const uint32_t *a, const uint32_t *b, float *c, int64_t ldc,
                           int mr, int nr, float alpha, float beta, bool first) {
    __m512 acc[MR][2];
    for (int r = 0; r < MR; r++)
        acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int64_t p = 0; p < kp; p++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + p * NR);
        __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + p * NR + 16);
        const uint32_t *ap = a + p * MR;
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) {
            __m512bh ar = (__m512bh)_mm512_set1_epi32((int)ap[r]);
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], ar, b0);
            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], ar, b1);
        }
    }
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    __mmask16 m0 = nr >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << nr) - 1u);
    __mmask16 m1 = nr >= 32   ? (__mmask16)0xffff
                   : nr <= 16 ? 0
                              : (__mmask16)((1u << (nr - 16)) - 1u);
    for (int r = 0; r < mr; r++) {
        store_line(c + r * ldc, acc[r][0], m0, va, vb, beta, first);
        if (m1) store_line(c + r * ldc + 16, acc[r][1], m1, va, vb, beta, first);
    }
}

/* 32 floats of one row along k (masked to the n left) as 16 units: one
** vcvtne2ps2bf16 (kcpu_bf16_of's rounding) gives the 32 bfloat16 in order. */
ALWAYS_INLINE __m512i units_along_k(const float *x, int64_t n) {
    __m512 lo = _mm512_maskz_loadu_ps(tail_mask(n), x);
    __m512 hi = _mm512_maskz_loadu_ps(n > 16 ? tail_mask(n - 16) : 0, x + 16);
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

/* In-register transpose of 16 x 16 32-bit elements. */
ALWAYS_INLINE void transpose16(__m512i r[16]) {
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd);
        r[i + 4] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0x88);
        r[i + 12] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0xdd);
    }
}

/* Up to 16 runs of kc floats along k (run l at x + l ld) into units
** out[p stride + l]: 32 floats of each run become 16 units, the 16 x 16
** block is transposed in registers and stored a pair at a time. */
static void runs_to_units(const float *x, int64_t ld, int64_t lines, int64_t kc, uint32_t *out,
                          int64_t stride) {
    const __mmask16 ml = tail_mask(lines);
    for (int64_t k = 0; k < kc; k += 32) {
        __m512i r[16];
        for (int l = 0; l < 16; l++)
            r[l] = l < lines ? units_along_k(x + l * ld + k, kc - k) : _mm512_setzero_si512();
        transpose16(r);
        int64_t pairs = (kc - k + 1) / 2 < 16 ? (kc - k + 1) / 2 : 16;
        for (int64_t j = 0; j < pairs; j++)
            _mm512_mask_storeu_epi32(out + (k / 2 + j) * stride, ml, r[j]);
    }
}

/* Units of n elements of two rows of consecutive k (hi NULL: zeros):
** vcvtne2ps2bf16 of 16 of each, then one vpermw interleaves them. */
static void rows_to_units(const float *lo, const float *hi, int64_t n, uint32_t *out) {
    static const uint16_t order[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,
                                       21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
                                       11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const __m512i inter = _mm512_loadu_si512(order);
    for (int64_t c = 0; c < n; c += 16) {
        __mmask16 mk = tail_mask(n - c);
        __m512 l = _mm512_maskz_loadu_ps(mk, lo + c);
        __m512 h = hi ? _mm512_maskz_loadu_ps(mk, hi + c) : _mm512_setzero_ps();
        __m512i u = _mm512_permutexvar_epi16(inter, (__m512i)_mm512_cvtne2ps_pbh(h, l));
        _mm512_mask_storeu_epi32(out + c, mk, u);
    }
}

const kcpu_bf16_packer kcpu_bf16_packer_avx512 = {runs_to_units, rows_to_units};
