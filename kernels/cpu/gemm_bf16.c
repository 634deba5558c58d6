/*
** gemm_bf16.c: the mixed-precision GEMM of bfloat16 training,
**   C[m,n] = alpha * bf16(op(A)) . bf16(op(B)) + beta * C,
** every element of A and B rounded to bfloat16 (kcpu_bf16_of: nearest even,
** subnormals to zero) and the products summed in float32.  No allocation:
** the caller hands in KCPU_GEMM_BF16_SCRATCH bytes.
**
** Blocking (GotoBLAS order): columns in blocks of NC, the inner dimension in
** blocks of KC, rows in blocks of MC.  Each KC x NC block of op(B) is packed
** once into panels of NR = 32 columns, each MC x KC block of op(A) into
** micro-panels of MR = 12 rows; a tile kernel then multiplies one
** micro-panel by one panel into a 12 x 32 block of C.  Packed layout, in
** 32-bit units that hold two bfloat16 of consecutive k (the even k in the low
** half, as AVX-512 BF16's vdpbf16ps pairs them):
**   A micro-panel  [KC/2][MR]   unit (p, r) = bf16(A[r, 2p]) | bf16(A[r, 2p+1]) << 16
**   B panel        [KC/2][NR]   unit (p, c) = bf16(B[2p, c]) | bf16(B[2p+1, c]) << 16
** An odd k ends with a zero half; rows and columns past the edge are zero
** (their results are not stored).  The tile kernel of the first k block
** writes alpha acc + beta C (C not read when beta is 0), later ones add
** alpha acc.  Tile kernels: AVX-512 BF16 (gemm_bf16_avx512.c, vdpbf16ps),
** AVX2 (gemm_bf16_avx2.c: widened to float32, FMA), and the scalar one
** below; the AVX-512 one packs with AVX-512 too.  kcpu_gemm_bf16_ref (double sums of the rounded
*inputs) is the
** oracle of all three.
*/
#include <string.h>

#include "kcpu_impl.h"

enum {
    MR = KCPU_BF16_MR,
    NR = KCPU_BF16_NR,
    KC = KCPU_BF16_KC,
    MC = KCPU_BF16_MC,
    NC = KCPU_BF16_NC,
};

static inline float at(const float *x, int64_t ld, bool t, int64_t r, int64_t c) {
    return t ? x[c * ld + r] : x[r * ld + c];
}

static inline uint32_t pair(float lo, float hi) {
    return (uint32_t)kcpu_bf16_of(lo) | (uint32_t)kcpu_bf16_of(hi) << 16;
}

void kcpu_gemm_bf16_ref(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                        const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                        float *c, int64_t ldc) {
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++) {
                s += (double)kcpu_bf16_val(kcpu_bf16_of(at(a, lda, ta, i, p))) *
                     (double)kcpu_bf16_val(kcpu_bf16_of(at(b, ldb, tb, p, j)));
            }
            float *cij = &c[i * ldc + j];
            *cij = (float)(alpha * s + (beta != 0.0f ? (double)beta * *cij : 0.0));
        }
    }
}

/* Scalar packing primitives: up to 16 runs of kc floats along k (run l at
** x + l ld) into units out[p * stride + l]; n units of two rows of consecutive k (hi NULL: zeros).
 */
static void along_k(const float *x, int64_t ld, int64_t lines, int64_t kc, uint32_t *out,
                    int64_t stride) {
    for (int64_t l = 0; l < lines; l++) {
        const float *xl = x + l * ld;
        for (int64_t p = 0; p < kc / 2; p++)
            out[p * stride + l] = pair(xl[2 * p], xl[2 * p + 1]);
        if (kc & 1) out[(kc / 2) * stride + l] = pair(xl[kc - 1], 0.0f);
    }
}

static void across_k(const float *lo, const float *hi, int64_t n, uint32_t *out) {
    for (int64_t c = 0; c < n; c++)
        out[c] = pair(lo[c], hi ? hi[c] : 0.0f);
}

const kcpu_bf16_packer kcpu_bf16_packer_scalar = {along_k, across_k};

/* Lines l0..l0+nl (rows of op(A), columns of op(B)) by k p0..p0+kc of x
** into panels of w lines ([kc/2][w] units each).  Element (line l, k) is
** x[l ld + k] when it runs along k (A not transposed, B transposed), else
** x[k ld + l]. */
static void pack_panels(const kcpu_bf16_packer *pk, bool runs_along_k, const float *x, int64_t ld,
                        int64_t l0, int64_t nl, int64_t p0, int64_t kc, int64_t w, uint32_t *out) {
    int64_t kp = (kc + 1) / 2;
    for (int64_t q = 0; q < nl; q += w) {
        uint32_t *o = out + q * kp;
        int64_t lines = nl - q < w ? nl - q : w;
        if (lines < w) memset(o, 0, (size_t)(kp * w) * sizeof *o);
        if (runs_along_k) {
            for (int64_t l = 0; l < lines; l += 16)
                pk->along_k(x + (l0 + q + l) * ld + p0, ld, lines - l < 16 ? lines - l : 16, kc,
                            o + l, w);
        }
    }
    if (runs_along_k) return;
    /* across k: each pair of rows converted for all nl lines at once, then
    ** dealt out to the panels (w units each) */
    uint32_t tmp[KCPU_BF16_MC > KCPU_BF16_NC ? KCPU_BF16_MC : KCPU_BF16_NC];
    for (int64_t p = 0; p < kp; p++) {
        const float *lo = x + (p0 + 2 * p) * ld + l0;
        pk->across_k(lo, 2 * p + 1 < kc ? lo + ld : NULL, nl, tmp);
        for (int64_t q = 0; q < nl; q += w) {
            int64_t lines = nl - q < w ? nl - q : w;
            memcpy(out + q * kp + p * w, tmp + q, (size_t)lines * sizeof *tmp);
        }
    }
}

/* Writes one tile's sums: the first k block alpha acc + beta C, later ones
** C + alpha acc; rows < mr, columns < nr. */
void kcpu_bf16_tile_store(const float *acc, float *c, int64_t ldc, int mr, int nr, float alpha,
                          float beta, bool first) {
    for (int r = 0; r < mr; r++) {
        float *cr = c + r * ldc;
        const float *ar = acc + r * NR;
        for (int j = 0; j < nr; j++) {
            if (!first)
                cr[j] += alpha * ar[j];
            else
                cr[j] = beta != 0.0f ? alpha * ar[j] + beta * cr[j] : alpha * ar[j];
        }
    }
}

/* Scalar tile kernel: the pairs summed in the order vdpbf16ps documents
** (odd element, then even, into the running sum). */
static void tile_scalar(int64_t kp, const uint32_t *a, const uint32_t *b, float *c, int64_t ldc,
                        int mr, int nr, float alpha, float beta, bool first) {
    float acc[MR * NR];
    memset(acc, 0, sizeof acc);
    for (int64_t p = 0; p < kp; p++) {
        for (int r = 0; r < MR; r++) {
            uint32_t u = a[p * MR + r];
            float alo = kcpu_bf16_val((uint16_t)u), ahi = kcpu_bf16_val((uint16_t)(u >> 16));
            for (int j = 0; j < NR; j++) {
                uint32_t v = b[p * NR + j];
                float s = acc[r * NR + j];
                s += ahi * kcpu_bf16_val((uint16_t)(v >> 16));
                s += alo * kcpu_bf16_val((uint16_t)v);
                acc[r * NR + j] = s;
            }
        }
    }
    kcpu_bf16_tile_store(acc, c, ldc, mr, nr, alpha, beta, first);
}

static kcpu_bf16_tile_fn tile_of(kcpu_gemm_bf16_impl impl) {
    switch (impl) {
#if MT_HAVE_AVX512_BUILD
    case KCPU_BF16_AVX512: return kcpu_bf16_tile_avx512;
#endif
    case KCPU_BF16_AVX2: return kcpu_bf16_tile_avx2;
    default: return tile_scalar;
    }
}

bool kcpu_gemm_bf16_available(kcpu_gemm_bf16_impl impl) {
    kcpu_isa isa = kcpu_isa_detect();
    switch (impl) {
    case KCPU_BF16_SCALAR: return true;
    case KCPU_BF16_AVX2: return isa >= KCPU_ISA_AVX2;
    case KCPU_BF16_AVX512:
#if MT_HAVE_AVX512_BUILD
        return isa >= KCPU_ISA_AVX512 && kcpu_cpu_has_avx512_bf16();
#else
        return false;
#endif
    }
    return false;
}

kcpu_gemm_bf16_impl kcpu_gemm_bf16_best(void) {
    if (kcpu_gemm_bf16_available(KCPU_BF16_AVX512)) return KCPU_BF16_AVX512;
    if (kcpu_gemm_bf16_available(KCPU_BF16_AVX2)) return KCPU_BF16_AVX2;
    return KCPU_BF16_SCALAR;
}

const char *kcpu_gemm_bf16_name(kcpu_gemm_bf16_impl impl) {
    return impl == KCPU_BF16_AVX512 ? "avx512-bf16" : impl == KCPU_BF16_AVX2 ? "avx2" : "scalar";
}

void kcpu_gemm_bf16_impl_run(kcpu_gemm_bf16_impl impl, bool ta, bool tb, int64_t m, int64_t n,
                             int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                             int64_t ldb, float beta, float *c, int64_t ldc, void *scratch) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                c[i * ldc + j] = beta != 0.0f ? beta * c[i * ldc + j] : 0.0f;
        return;
    }
    kcpu_bf16_tile_fn tile = tile_of(impl);
    kcpu_bf16_packer pk = kcpu_bf16_packer_scalar;
#if MT_HAVE_AVX512_BUILD
    if (impl == KCPU_BF16_AVX512) pk = kcpu_bf16_packer_avx512;
#endif
    uint32_t *pa = scratch, *pb = pa + (size_t)MC * (KC / 2);
    for (int64_t j0 = 0; j0 < n; j0 += NC) {
        int64_t nc = n - j0 < NC ? n - j0 : NC;
        for (int64_t p0 = 0; p0 < k; p0 += KC) {
            int64_t kc = k - p0 < KC ? k - p0 : KC, kp = (kc + 1) / 2;
            pack_panels(&pk, tb, b, ldb, j0, nc, p0, kc, NR, pb);
            for (int64_t i0 = 0; i0 < m; i0 += MC) {
                int64_t mc = m - i0 < MC ? m - i0 : MC;
                pack_panels(&pk, !ta, a, lda, i0, mc, p0, kc, MR, pa);
                for (int64_t jr = 0; jr < nc; jr += NR) {
                    int nr = nc - jr < NR ? (int)(nc - jr) : NR;
                    for (int64_t ir = 0; ir < mc; ir += MR) {
                        int mr = mc - ir < MR ? (int)(mc - ir) : MR;
                        tile(kp, pa + ir * kp, pb + jr * kp, c + (i0 + ir) * ldc + j0 + jr, ldc, mr,
                             nr, alpha, beta, p0 == 0);
                    }
                }
            }
        }
    }
}

void kcpu_gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                    int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc,
                    void *scratch) {
    kcpu_gemm_bf16_impl_run(kcpu_gemm_bf16_best(), ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
                            ldc, scratch);
}
