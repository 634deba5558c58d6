/*
** kcpu.h: CPU compute kernels on raw pointers.  Leaf layer: includes no
** project header, never allocates, never logs, never exits.
**
** Conventions: row-major; `n` counts elements; "rows x cols" means `rows`
** contiguous rows of `cols` elements.  Backward kernels ACCUMULATE into their
** gradient outputs (dx += ...), so callers zero them once per backward pass.
** Every fast path has a plain reference (suffix _ref) that is its test oracle.
**
** This header is the kernels' API, what engine/device_cpu.c uses; the
** per-ISA variants, the references and what the kernel files share among
** themselves are in kcpu_impl.h (kernels and their tests only).
*/
#ifndef KCPU_H
#define KCPU_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kcpu_attn_job.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ ISA */

typedef enum kcpu_isa { KCPU_ISA_REF = 0, KCPU_ISA_AVX2 = 1, KCPU_ISA_AVX512 = 2 } kcpu_isa;

/* Best ISA of this CPU (cpuid + OS xsave check), capped by the environment
** variable MT_ISA=ref|avx2|avx512 when set.  Cached after the first call. */
kcpu_isa kcpu_isa_detect(void);
/* ISA the dispatching kernels use now: kcpu_isa_detect() capped by
** kcpu_isa_force() (kcpu_impl.h, tests). */
kcpu_isa kcpu_isa_active(void);
const char *kcpu_isa_name(kcpu_isa isa);

/* Limits OpenBLAS to n threads (1 for per-worker single-threaded BLAS). */
void kcpu_blas_set_threads(int n);
/* The CPU device's own threads (engine/device_cpu.c: it splits bfloat16
** products and row-wise ops over them); 0 or 1: none.  Training with
** bfloat16 products gives them all the cores and runs OpenBLAS (the float32
** batched products) on one, so that OpenBLAS's waiting threads do not
** compete with them. */
void kcpu_set_own_threads(int n);
int kcpu_own_threads(void);
/* True when the CPU has AVX-512, OPENBLAS_CORETYPE is unset and the loaded
** OpenBLAS runs a kernel set without AVX-512 (0.3.21 on Zen 5): the caller
** (app/main.c) should setenv("OPENBLAS_CORETYPE", "SkylakeX", 1) and re-exec
** /proc/self/exe, because OpenBLAS picks its kernels in its own ELF
** constructor, before any code of ours runs.  Cheap; call it once. */
bool kcpu_blas_needs_reexec(void);
/* Kernel set OpenBLAS chose ("SkylakeX", "Haswell", ...). */
const char *kcpu_blas_corename(void);

/* Measured fp32 FMA throughput of one core in GFLOP/s (best of short runs
** over `seconds`) with the widest FMA this CPU has (AVX-512, else AVX2); 0
** without either.  For benchmarks. */
double kcpu_fp32_peak_gflops(double seconds);

/* Kernel micro-benchmarks (kcpu_bench.c), the tables of `mtpe bench
** gemm|gemm-int|topk|attn`, single-threaded (OpenBLAS set to one thread).
** Buffers come from io->alloc (64-byte aligned, NULL when out of memory)
** and go back through io->free (NULL: a no-op); the tables are written to
** io->out, flushed after each row.  peak: the nominal per-core peak the
** fractions use (gemm: fp32 GFLOP/s; gemm-int: int8 GOP/s; unused by the
** others).  Returns KCPU_BENCH_OK, KCPU_BENCH_UNKNOWN (no benchmark of
** that name; nothing written) or KCPU_BENCH_NOMEM (the message, e.g. "out
** of memory (packed 512x512)", in io->err). */
typedef struct kcpu_bench_io {
    FILE *out;
    void *(*alloc)(size_t bytes);
    void (*free)(void *p);
    char *err; /* err_size bytes, or NULL */
    size_t err_size;
} kcpu_bench_io;
enum { KCPU_BENCH_OK = 0, KCPU_BENCH_UNKNOWN = 1, KCPU_BENCH_NOMEM = 2 };
int kcpu_bench_run(const char *name, int repeat, double peak, const kcpu_bench_io *io);

/* ----------------------------------------------------------------- GEMM */

/* C[m,n] = alpha * op(A) . op(B) + beta * C.  op(A) is [m,k]: A is stored
** [m,k] with row stride lda, or [k,m] when ta.  op(B) is [k,n]: B is [k,n]
** with ldb, or [n,k] when tb.  ldc is C's row stride. */
typedef void (*kcpu_gemm_fn)(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                             const float *a, int64_t lda, const float *b, int64_t ldb,
                             float beta, float *c, int64_t ldc);
/* Dispatching entry: own AVX-512 or AVX2 kernel for small m when the ISA
** allows and !ta (see blas.c for the m limits), OpenBLAS otherwise. */
void kcpu_gemm_f32(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                   float *c, int64_t ldc);
void kcpu_gemm_f32_blas(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                        const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                        float *c, int64_t ldc);
/* Own kernel for small m (any m, n, k; AVX-512 or AVX2); falls back to the
** reference when the ISA is below AVX2. */
void kcpu_gemm_f32_small(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                         float *c, int64_t ldc);
/* Where kcpu_gemm_f32 and kcpu_gemm_f32_batched take the own kernel now
** (ISA and OpenBLAS threads): m <= *max_m, and a batch's products of at
** most *max_batched multiply-adds; both 0 when there is no own kernel. */
void kcpu_gemm_f32_small_limits(bool tb, int64_t *max_m, int64_t *max_batched);
/* Strided batch of GEMMs (batch i uses a + i*sa, b + i*sb, c + i*sc). */
void kcpu_gemm_f32_batched(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                           const float *a, int64_t lda, int64_t sa, const float *b, int64_t ldb,
                           int64_t sb, float beta, float *c, int64_t ldc, int64_t sc,
                           int64_t batch);

/* bfloat16 GEMM of mixed-precision training (gemm_bf16.c):
**   C[m,n] = alpha * bf16(op(A)) . bf16(op(B)) + beta * C
** operands as kcpu_gemm_f32's, each element rounded to bfloat16
** (kcpu_bf16_of), products summed in float32 (C not read when beta is 0).
** scratch: KCPU_GEMM_BF16_SCRATCH bytes, 64-byte aligned, one per thread
** (the packed blocks of A and B).  Tile kernels: AVX-512 BF16 (vdpbf16ps),
** AVX2 (widened to float32, FMA) and scalar; kcpu_gemm_bf16 takes the best
** that kcpu_isa_detect allows.  kcpu_gemm_bf16_ref (no scratch) sums the
** rounded inputs in double: the oracle of the three. */
enum {
    KCPU_BF16_MR = 12,  /* rows of a tile                        */
    KCPU_BF16_NR = 32,  /* columns of a tile (two 16-float lines) */
    KCPU_BF16_KC = 512, /* inner dimension of a packed block     */
    KCPU_BF16_MC = 144, /* rows of a packed block of A           */
    KCPU_BF16_NC = 1024 /* columns of a packed block of B        */
};
#define KCPU_GEMM_BF16_SCRATCH                                                                     \
    ((size_t)(KCPU_BF16_MC + KCPU_BF16_NC) * (KCPU_BF16_KC / 2) * sizeof(uint32_t))
typedef enum kcpu_gemm_bf16_impl {
    KCPU_BF16_SCALAR = 0,
    KCPU_BF16_AVX2 = 1,
    KCPU_BF16_AVX512 = 2
} kcpu_gemm_bf16_impl;
kcpu_gemm_bf16_impl kcpu_gemm_bf16_best(void);
const char *kcpu_gemm_bf16_name(kcpu_gemm_bf16_impl impl);
void kcpu_gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                    int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc,
                    void *scratch);

/* ---------------------------------------------------------- elementwise */

typedef enum kcpu_unary {
    KCPU_RELU = 0,
    KCPU_SWISH,   /* x * sigmoid(x)                                        */
    KCPU_GELU,    /* x * sigmoid(1.702 x) (Marian's form)                  */
    KCPU_TANH,
    KCPU_SIGMOID,
    KCPU_EXP,
    KCPU_LOG,
    KCPU_SQRT,
    KCPU_NEG,
    KCPU_SCALE,      /* alpha * x                                          */
    KCPU_ADD_SCALAR, /* x + alpha                                          */
    KCPU_UNARY_COUNT
} kcpu_unary;

/* y[i] = f(x[i]).  alpha is used by SCALE and ADD_SCALAR.  x == y allowed. */
void kcpu_unary_fwd(kcpu_unary op, int64_t n, float alpha, const float *x, float *y);
/* dx[i] += dy[i] * f'(x[i]); y = f(x) is given too (tanh, sigmoid, exp,
** sqrt use it). */
void kcpu_unary_bwd(kcpu_unary op, int64_t n, float alpha, const float *x, const float *y,
                    const float *dy, float *dx);

typedef enum kcpu_binary { KCPU_ADD = 0, KCPU_SUB, KCPU_MUL, KCPU_DIV, KCPU_BINARY_COUNT } kcpu_binary;

/* Broadcasting binary op over ndim <= 6 dims.  shape is the output shape;
** sa/sb are element strides of a and b per output dim (0 where broadcast).
** y is contiguous with the output shape. */
void kcpu_binary_fwd(kcpu_binary op, int ndim, const int64_t *shape, const int64_t *sa,
                     const float *a, const int64_t *sb, const float *b, float *y);
/* da += d(a op b)/da * dy, db likewise, reduced over broadcast dims (either
** of da/db may be NULL to skip it). */
void kcpu_binary_bwd(kcpu_binary op, int ndim, const int64_t *shape, const int64_t *sa,
                     const float *a, const int64_t *sb, const float *b, const float *dy,
                     float *da, float *db);

/* y = a + b (same length), y += x, y = value, y = 0: small helpers. */
void kcpu_add_f32(int64_t n, const float *a, const float *b, float *y);
void kcpu_acc_f32(int64_t n, const float *x, float *y); /* y += x */
void kcpu_fill_f32(int64_t n, float value, float *y);
/* y = where(mask != 0, x, value), mask broadcast by strides as in binary. */
void kcpu_masked_fill_fwd(int ndim, const int64_t *shape, const float *x, const int64_t *sm,
                          const float *mask, float value, float *y);
/* dx += dy where mask != 0. */
void kcpu_masked_fill_bwd(int ndim, const int64_t *shape, const int64_t *sm, const float *mask,
                          const float *dy, float *dx);

/* ------------------------------------------------------ softmax / norms */

/* Row-wise over cols.  y may equal x.  */
void kcpu_softmax_fwd(int64_t rows, int64_t cols, const float *x, float *y);
void kcpu_softmax_bwd(int64_t rows, int64_t cols, const float *y, const float *dy, float *dx);
void kcpu_log_softmax_fwd(int64_t rows, int64_t cols, const float *x, float *y);
void kcpu_log_softmax_bwd(int64_t rows, int64_t cols, const float *y, const float *dy, float *dx);

/* Cross-entropy with label smoothing ls per row:
**   loss[r] = -(1-ls) * logp[r, y_r] - ls/cols * sum_v logp[r, v]
** logp (rows x cols) receives log-softmax(x) and is kept for backward.
** Labels outside [0, cols) are a programmer error (caller validates). */
void kcpu_xent_fwd(int64_t rows, int64_t cols, const float *x, const int32_t *labels, float ls,
                   float *logp, float *loss);
/* dx[r, v] += dloss[r] * (softmax[r, v] - (1-ls) [v == y_r] - ls/cols). */
void kcpu_xent_bwd(int64_t rows, int64_t cols, const float *logp, const int32_t *labels,
                   float ls, const float *dloss, float *dx);

/* Layer norm per row: y = gamma * (x - mean) * rstd + beta,
** rstd = 1/sqrt(var + eps), population variance.  gamma/beta may be NULL.
** mean and rstd (rows each) are written for backward (may be NULL). */
void kcpu_layernorm_fwd(int64_t rows, int64_t cols, const float *x, const float *gamma,
                        const float *beta, float eps, float *y, float *mean, float *rstd);
/* kcpu_layernorm_fwd of x + res (a residual connection and the norm after
** it, as Marian's post-processing "an"): the sum of a block of rows is
** written to y and normalized there while it is in L1, the same floats as
** the sum (x[i] + res[i]) and the norm one after the other.  y may not
** alias x or res. */
void kcpu_add_layernorm_fwd(int64_t rows, int64_t cols, const float *x, const float *res,
                            const float *gamma, const float *beta, float eps, float *y, float *mean,
                            float *rstd);
/* Accumulates dx, dgamma, dbeta (any may be NULL). */
void kcpu_layernorm_bwd(int64_t rows, int64_t cols, const float *x, const float *gamma,
                        const float *mean, const float *rstd, const float *dy, float *dx,
                        float *dgamma, float *dbeta);

/* ------------------------------------------------------- reductions */

typedef enum kcpu_reduce { KCPU_SUM = 0, KCPU_MEAN, KCPU_MAX } kcpu_reduce;
/* x viewed as [outer, n, inner]; y is [outer, inner]. */
void kcpu_reduce_fwd(kcpu_reduce op, int64_t outer, int64_t n, int64_t inner, const float *x,
                     float *y);
/* dx += broadcast dy (SUM), dy/n (MEAN), dy at the first argmax (MAX). */
void kcpu_reduce_bwd(kcpu_reduce op, int64_t outer, int64_t n, int64_t inner, const float *x,
                     const float *y, const float *dy, float *dx);

/* ------------------------------------------------------ data movement */

/* out[i, :] = table[ids[i], :] for i < n_ids; rows of dim floats. */
void kcpu_gather_rows(int64_t n_ids, const int32_t *ids, int64_t dim, const float *table,
                      float *out);
/* dtable[ids[i], :] += dout[i, :] (sequential: repeated ids accumulate). */
void kcpu_scatter_add_rows(int64_t n_ids, const int32_t *ids, int64_t dim, const float *dout,
                           float *dtable);
/* General permute: y[perm-ordered index] = x.  shape/perm of length ndim;
** y's shape is shape[perm[0]], ..., shape[perm[ndim-1]]. */
void kcpu_permute(int ndim, const int64_t *shape, const int *perm, const float *x, float *y);
/* Copies a 2-D strided block: rows x cols from src (stride ss) to dst (sd);
** accumulate adds instead of copying.  Used by concat and slice. */
void kcpu_copy2d(int64_t rows, int64_t cols, const float *src, int64_t ss, float *dst,
                 int64_t sd, bool accumulate);
/* The same moves for values of any element size (f16 caches): rows of
** `bytes` bytes, strides in bytes; out[i] = table row ids[i]. */
void kcpu_copy2d_bytes(int64_t rows, size_t bytes, const void *src, size_t ss, void *dst,
                       size_t sd);
void kcpu_gather_bytes(int64_t n_ids, const int32_t *ids, size_t bytes, const void *table,
                       void *out);

/* f16 <-> f32 arrays. */
void kcpu_f16_to_f32(int64_t n, const uint16_t *x, float *y);
void kcpu_f32_to_f16(int64_t n, const float *x, uint16_t *y);
/* bfloat16 (the upper half of a float32) <-> f32 arrays, as the AVX-512
** BF16 conversion (vcvtne2ps2bf16): rounded to nearest even, subnormal
** inputs to signed zero, NaN kept quiet; widening is exact. */
void kcpu_bf16_to_f32(int64_t n, const uint16_t *x, float *y);
void kcpu_f32_to_bf16(int64_t n, const float *x, uint16_t *y);
/* Row pairs to bfloat16 pairs: for each of rows pairs of f32 rows (x + 2 r
** len: the even row, then the odd one), y[r len + i] holds element i of
** the even row in its low half and of the odd one in its high half
** (kcpu_bf16_of each): [R, 2, L] -> [R, L, 2]. */
void kcpu_f32_to_bf16_pairs(int64_t rows, int64_t len, const float *x, uint32_t *y);

/* ---------------------------------------------------------- optimizer */

/* Adam / AdamW over a flat buffer, bias-corrected:
**   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
**   w -= lr * ( (m/c1) / (sqrt(v/c2) + eps) + wd * w )
** c1 = 1 - b1^t, c2 = 1 - b2^t.  g is pre-scaled by the caller (clipping). */
void kcpu_adam_f32(int64_t n, float *w, const float *g, float *m, float *v, float lr, float b1,
                   float b2, float eps, float wd, float c1, float c2);
/* s = s + (1 - s) ... exponential smoothing: s = beta * s + (1 - beta) * w. */
void kcpu_smooth_f32(int64_t n, const float *w, float *s, float beta);
/* Sum of squares (for global norms), accumulated in double. */
double kcpu_sumsq_f32(int64_t n, const float *x);

/* --------------------------------------------------------- integer GEMM */

/*
** Quantized C[m,n] = A[m,k] . B[k,n] (+ bias[n]) for CPU inference, in the
** two schemes Marian has used (reference/marian-compat.md §8):
**
**   int8  (intgemm): B is quantized ONCE with qb = 127 / max|B| over the
**         whole matrix, A per call with qa = 127 / max|A| over the whole
**         [m,k] block (all rows of the batch x beam).
**   int16 (Marian <= 1.9 --optimize, Devlin 2017): fixed qa = qb = 2^10.
**
** Quantize: q = clamp(round_half_even(x * mult), lo, hi), the product x*mult
** rounded to float first, the clamp applied in float before the rounding
** (as _mm*_cvtps_epi32 after a min/max does).  int8: [lo, hi] = [-127, 127]
** (-128 is never produced, as in intgemm; it keeps |a*b| <= 127^2 and lets
** the AVX2 sign trick negate safely).  int16: [-32768, 32767] (the
** saturating pack of _mm_packs_epi32 in the old Marian/intgemm code), so
** |x| >= 32767.5/1024 ~ 32.0 clips.  A multiplier of max 0 is taken as 1
** (an all-zero matrix quantizes to zeros; nothing divides by zero); so is a
** max so small that 127/max overflows.  Inputs must be finite: NaN/Inf give
** unspecified (but memory-safe, and the same in every variant) results.
**
** Accumulate: acc[i,j] = sum_k Aq[i,k] * Bq[k,j] in int32 arithmetic modulo
** 2^32 (wrap-around, the behaviour of vpaddd/vpmaddwd/vpdpwssd).  The sum is
** exact whenever it fits in int32: always for int8 when k <= 133144
** (2^31 / 127^2); for int16 when |sum| < 2^31 (Devlin's clipping, weights in
** [-1, 1] and activations in [-10, 10], bounds it by k * 10 * 2^20).  Every
** variant returns bit-identical accumulators (tests/test_gemm_int.c).
**
** Dequantize: C[i,j] = (float)acc[i,j] * unq + bias[j], unq = 1.0f / (qa *
** qb) in float arithmetic, the product rounded to float first, as Marian's
** intgemm path computes it (kcpu_igemm_unquant), one multiply and one add
** in float (no FMA), identical in every variant.
**
** Error bound.  With ea = max|A| (1/254 + 2^-22) for int8 (half a
** quantization step plus the float rounding of x * qa; 2^-11 for int16,
** where x * 2^10 is exact, while no element clips) and eb likewise for B,
**   a b - a~ b~ = a (b - b~) + (a - a~) b~,  |a - a~| <= ea,  |b~| <= |b| + eb
** gives, per output element,
**   |C - (A.B + bias)| <= sum_k (|A[i,k]| eb + ea |B[k,j]| + ea eb)
**                        + 2^-22 (sum_k (|A[i,k]| + ea)(|B[k,j]| + eb) + |bias[j]|)
**                     <= k (max|A| eb + max|B| ea + ea eb) + (same rounding term),
** the last term covering the float dequantization (int -> float, unq, the
** multiply and the bias add, 2^-24 each).
**
** Variants: portable C (REF), AVX2 (int8: abs(a) x sign(b, a) through
** vpmaddubsw + vpmaddwd, which cannot saturate since |a|, |b| <= 127; int16:
** vpmaddwd), AVX-512 VNNI (int8: vpdpbusd on the shifted activations
** A + 128 in [1, 255], the excess 128 * colsum(Bq) removed by starting the
** accumulators at corr[j] = -128 * sum_k Bq[k,j], precomputed by the packer
** (Bergamot's "shift" with an exact integer correction); int16: vpdpwssd).
** The dispatching entries pick VNNI when kcpu_isa_active() >= AVX512 and
** the CPU has AVX512_VNNI, else AVX2 when >= AVX2, else REF (so MT_ISA and
** kcpu_isa_force() apply); SAT16 (kcpu_impl.h) when intgemm's saturating
** int8 paths are emulated.  Kernels are single-threaded and allocate nothing.
**
** Packed B (caller-provided memory, 64-byte aligned, kcpu_pack_i*_bytes()):
**
**   OFFSET      SIZE            DESCRIPTION
**      0          4             magic: "KQ08" (int8) or "KQ16" (int16)
**      4          4             element bits (8 or 16), uint32
**      8          8             k, int64
**     16          8             n, int64
**     24          8             kp: k rounded up to 4 (int8) or 2 (int16)
**     32          8             np: n rounded up to KCPU_IGEMM_NC (64)
**     40          4             qb, float32
**     44         20             zero
**     64       4*np             int8 only: corr[j] = -128 * sum_k Bq[k,j], int32
**                               (0 in padding columns); absent for int16
**      *   kp*np*bits/8         np/64 column panels, one after another; panel
**                               p holds columns 64p..64p+63 as groups of
**                               G = 32 / bits consecutive k (4 int8 or 2
**                               int16): index [k/G][j%64][k%G], so each group
**                               is 256 bytes = one zmm per 16 columns.
**                               Padding (k >= K or j >= N) is zero.
** Host byte order (little-endian x86); an in-memory format, not a file one.
*/

enum { KCPU_IGEMM_NC = 64 }; /* columns per packed panel */

typedef enum kcpu_igemm_impl {
    KCPU_IGEMM_REF = 0,   /* portable C                                  */
    KCPU_IGEMM_AVX2 = 1,  /* AVX2 (also used on AVX-512 without VNNI)    */
    KCPU_IGEMM_VNNI = 2,  /* AVX-512 BW + VNNI                           */
    KCPU_IGEMM_SAT16 = 3, /* portable C emulating intgemm's saturation  */
    KCPU_IGEMM_COUNT
} kcpu_igemm_impl;

/* The variant the dispatching entries use now (see above): SAT16 whenever
** kcpu_intgemm_emulated() (kcpu_impl.h) is nonzero. */
kcpu_igemm_impl kcpu_igemm_active(void);
const char *kcpu_igemm_name(kcpu_igemm_impl impl);

/* max |x| over rows x cols (row stride ld); NaN elements are skipped. */
float kcpu_maxabs_f32(int64_t rows, int64_t cols, const float *x, int64_t ld);
/* Reference quantizers (the rules above): y[i] = q(x[i] * mult). */
void kcpu_quantize_i8(int64_t n, const float *x, float mult, int8_t *y);
void kcpu_quantize_i16(int64_t n, const float *x, float mult, int16_t *y);

/* Bytes of the packed B for k x n (k >= 0, n >= 1). */
size_t kcpu_pack_i8_bytes(int64_t k, int64_t n);
size_t kcpu_pack_i16_bytes(int64_t k, int64_t n);
/* Quantizes the fp32 weight B [k,n] (row stride ldb; Marian's layout,
** y = x . B) and packs it into `packed` (kcpu_pack_i*_bytes, 64-byte
** aligned).  int8: qb = 127 / max|B|; int16: qb = 2^10.  Run once per weight
** (model load or `mtpe convert`); slow-ish plain C. */
void kcpu_pack_i8(int64_t k, int64_t n, const float *b, int64_t ldb, void *packed);
void kcpu_pack_i16(int64_t k, int64_t n, const float *b, int64_t ldb, void *packed);
/* The same for op(B) [k,n]: B is [k,n] (row stride ldb), or stored [n,k]
** when trans (y = x . B^T: an output layer tied to the embeddings [V, D]).
** The int8 multiplier is 127 / max|B| over the whole matrix either way, so
** the packed bytes equal those of packing the explicit transpose. */
void kcpu_pack_i8_ex(int64_t k, int64_t n, const float *b, int64_t ldb, bool trans, void *packed);
void kcpu_pack_i16_ex(int64_t k, int64_t n, const float *b, int64_t ldb, bool trans,
                      void *packed);
/* Packs already-quantized weights with their multiplier qb: bq is [k,n] with
** row stride ldb, or [n,k] when trans (intgemm's file layout: Bq transposed).
** int8 values of -128 are stored as -127; returns how many were. */
int64_t kcpu_pack_i8_q(int64_t k, int64_t n, const int8_t *bq, int64_t ldb, bool trans,
                       float qb, void *packed);
void kcpu_pack_i16_q(int64_t k, int64_t n, const int16_t *bq, int64_t ldb, bool trans,
                     float qb, void *packed);

/* The columns cols[0..n_sel) (each in [0, n)) of a packed B as a packed B
** of n_sel columns, same k and multiplier (`out`: kcpu_pack_i*_bytes(k,
** n_sel)).  A product with it equals the same columns of the product with
** the whole B, bit for bit: a lexical shortlist of an integer output layer
** (Marian: intgemm's SelectColumnsB on the prepared matrix). */
void kcpu_pack_select(const void *packed, int64_t n_sel, const int32_t *cols, void *out);

typedef struct kcpu_packed_info {
    int bits;         /* 8 or 16                    */
    int64_t k, n;     /* logical shape of B         */
    int64_t kp, np;   /* padded shape               */
    float qb;         /* quantization multiplier    */
    size_t bytes;     /* kcpu_pack_i*_bytes(k, n)   */
} kcpu_packed_info;
/* Reads the header of a packed B; false if it is not one. */
bool kcpu_packed_get_info(const void *packed, kcpu_packed_info *info);
/* Unpacks the quantized values into bq [k,n] (row-major, ld n): the
** inverse of the packer, for tests and `mtpe convert`. */
void kcpu_unpack_i8(const void *packed, int8_t *bq);
void kcpu_unpack_i16(const void *packed, int16_t *bq);

/* Scratch bytes for one call on an [m,k] activation block (the quantized A,
** rows padded to 64 bytes, for int8 also its absolute values, plus
** alignment slack); any alignment. */
size_t kcpu_gemm_i8_scratch_bytes(int64_t m, int64_t k);
size_t kcpu_gemm_i16_scratch_bytes(int64_t m, int64_t k);

/* C[m, n] (row stride ldc) = dequant(quant(A) . Bq) + bias, A [m,k] fp32
** with row stride lda (k, n from the packed header), bias [n] or NULL.
** packed_b must come from kcpu_pack_i8* (resp. _i16*): the kernels do not
** check (kcpu_packed_get_info does, for callers at a trust boundary).
** Dispatching entries (kcpu_impl.h: the same with an explicit variant). */
void kcpu_gemm_i8(int64_t m, const float *a, int64_t lda, const void *packed_b,
                  const float *bias, float *c, int64_t ldc, void *scratch);
void kcpu_gemm_i16(int64_t m, const float *a, int64_t lda, const void *packed_b, const float *bias,
                   float *c, int64_t ldc, void *scratch);
/* Any of them (bits 8 or 16) with the activation fused into the output:
** relu stores max(A.B (+ bias), 0) (a feed-forward layer's first product:
** no second pass over its output). */
void kcpu_gemm_int_ex(int bits, kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                      const void *packed_b, const float *bias, bool relu, float *c, int64_t ldc,
                      void *scratch);
/* kcpu_gemm_int_ex (no relu) with a residual connection in the epilogue:
** C[i,j] = (dequant + bias[j]) + res[i * ldr + j], the floats of the
** product followed by the sum (a transformer block's output projection and
** the skip connection around it).  res may be C itself (same ld). */
void kcpu_gemm_int_res(int bits, kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                       const void *packed_b, const float *bias, const float *res, int64_t ldr,
                       float *c, int64_t ldc, void *scratch);
/* kcpu_gemm_int_ex in two halves, for products that share an activation
** (a block's queries, keys and values): kcpu_gemm_int_quant quantizes A
** [m, k] into the scratch (kcpu_gemm_i8/i16_scratch_bytes(m, k), any
** alignment) as variant impl lays it out and returns qa; then
** kcpu_gemm_int_prepared multiplies that scratch (same bits, impl, m, k)
** with any packed B of inner size k: the product of kcpu_gemm_int_ex (or
** kcpu_gemm_int_res with res) bit for bit.  The scratch is only read. */
float kcpu_gemm_int_quant(int bits, kcpu_igemm_impl impl, int64_t m, int64_t k, const float *a,
                          int64_t lda, void *scratch);
void kcpu_gemm_int_prepared(int bits, kcpu_igemm_impl impl, int64_t m, void *scratch, float qa,
                            const void *packed_b, const float *bias, bool relu, const float *res,
                            int64_t ldr, float *c, int64_t ldc);
/* kcpu_gemm_int_ex (res NULL) or kcpu_gemm_int_res (res with row stride
** ldc) with the maximum absolute value of A known (a_maxabs >= 0, as
** kcpu_maxabs_f32 of A gives it: the producer of A measured it; < 0:
** measured here), and with that of C measured for its consumer (c_maxabs,
** or NULL).  The same C as those. */
void kcpu_gemm_int_max(int bits, kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                       const void *packed_b, const float *bias, bool relu, const float *res,
                       float a_maxabs, float *c_maxabs, float *c, int64_t ldc, void *scratch);
/* Beam 1's output layer without its logits (WNMT 2018 sec. 2.3):
** out_idx[r] = the first column c of the largest (A.B dequantized + bias[c])
** + skip[c] of row r (bias, skip [n] or NULL; skip holds 0 or -inf),
** out_val[r] that value; nothing above -inf gives column 0 and -inf: the
** floats and ties of kcpu_argmax_rows over kcpu_gemm_int_ex's C.  The VNNI
** variant keeps each row's maximum per lane in its epilogue instead of
** storing C; the others write C into the scratch and scan it.  scratch:
** kcpu_gemm_int_argmax_scratch_bytes (any alignment). */
size_t kcpu_gemm_int_argmax_scratch_bytes(int bits, kcpu_igemm_impl impl, int64_t m, int64_t k,
                                          int64_t n);
void kcpu_gemm_int_argmax(int bits, kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                          const void *packed_b, const float *bias, const float *skip,
                          int32_t *out_idx, float *out_val, void *scratch);
/* A beam step's output layer: out_idx / out_logp [m, k] = kcpu_softmax_topk
** (bias NULL) of C = kcpu_gemm_int_ex's A.B + bias, bit for bit, without a
** whole C in memory.  Where the top-k is resumable (kcpu_topk_resumable):
** C a few panels of columns at a time, their top-k while they are in cache
** (the weights read once per step; faster end to end than the blocks of
** rows below).  Elsewhere: all rows at
** once where C is at most 1.5 MB, else blocks of rows whose C (at most 1 MB)
** is still in cache for their top-k.  int8: max|A| of all m rows first
** where there are several blocks, so that each quantizes as the whole
** product.
** scratch: kcpu_gemm_int_topk_scratch_bytes (any alignment). */
size_t kcpu_gemm_int_topk_scratch_bytes(int bits, int64_t m, int64_t k, int64_t n);
void kcpu_gemm_int_topk(int bits, kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                        const void *packed_b, const float *bias, int32_t k, int32_t *out_idx,
                        float *out_logp, void *scratch);

/* Measured integer multiply-add throughput of one core, GOP/s, best of
** short runs over `seconds`, with the instructions of the active integer
** GEMM variant (kcpu_int_peak_what): VNNI vpdpbusd (int8, 64 multiply-adds
** = 128 ops per instruction) and vpdpwssd (int16, 64 ops); AVX2 the
** vpmaddubsw + vpmaddwd + vpaddd sequence (int8, 64 ops) and vpmaddwd +
** vpaddd (int16, 32 ops); 0 for the reference.  For benchmarks. */
double kcpu_int_peak_gops(bool int16, double seconds);
const char *kcpu_int_peak_what(bool int16);

/* ------------------------------------------------ fused softmax / top-k */

/*
** The output layer of a decoding step after its GEMM, in one pass over each
** row (Marian's fused softmax + top-k, reference/papers
** fused-softmax-topup-batching §3.1).  Per row r of `cols` logits:
**
**   x[c]  = logits[r,c] + bias[c]       one float add (bias NULL: x = logits)
**   m     = max_c x[c],  d = sum_c exp(x[c] - m),  lse = m + log d
**   logp  = (x[c] - m) - log d          (kcpu_log_softmax_fwd_ref's expression)
**
** m and d are kept online (d = d e^(m_old - m_new) + e^(x - m_new)) next to
** a binary heap of the k best raw x; only the k winners are normalised.
**
** Order: x descending; equal x by lower column first (for a shortlist: by
** lower target id, the same thing).  Selection compares the same float x in
** every ISA variant, so indices are identical across variants; log-probs
** differ only through the rounding of d (the reference sums in double; the
** AVX-512 variant in float over 64 lanes, the AVX2 one over 32): |delta| <=
** 1e-5 (1 + |logp|).
** Masked tokens (x = -inf) rank last, by column, with logp -inf; a row whose
** x are all -inf has lse = -inf and every logp -inf.  NaN/+inf logits give
** unspecified (memory-safe) results.
**
** k: any k >= 1, no upper bound.  The heap lives in the caller's outputs
** (row r at out_idx + r*k, out_logp + r*k), so nothing is allocated and
** nothing of size k is on the stack.  When k > cols, entries c >= cols get
** idx -1 and logp -inf.  Cost: one pass over the row plus O(log k) per heap
** insertion (about k ln(cols/k) of them for random rows) and a k log k sort.
** 1 <= cols < 2^31.  Single-threaded; rows are independent.
*/

/* out_idx[r*k + j], out_logp[r*k + j] (j < k): the k best of row r, best
** first.  out_lse [rows] receives lse per row (NULL: not wanted). */
void kcpu_softmax_topk(int64_t rows, int64_t cols, const float *logits, const float *bias,
                       int32_t k, int32_t *out_idx, float *out_logp, float *out_lse);
/* Shortlist: logits [rows, n_short] were computed only for the target ids
** cols_idx[0..n_short) (strictly increasing), i.e. the GEMM ran over those
** columns of the output matrix.  bias (NULL ok) has n_short entries aligned
** with the logits (slice it once per batch, like the matrix).  out_idx gets
** vocabulary ids cols_idx[c]; the normaliser runs over the shortlist only
** (as Marian renormalises over the shortlist). */
void kcpu_softmax_topk_short(int64_t rows, int64_t n_short, const float *logits,
                             const float *bias, const int32_t *cols_idx, int32_t k,
                             int32_t *out_idx, float *out_logp, float *out_lse);
/* General entry: cols_idx NULL = the identity (full vocabulary); row_off
** [rows] NULL = none, else out_val = row_off[r] + logp (one float add; e.g.
** a hypothesis' path score; the order within a row is still by x). */
void kcpu_softmax_topk_ex(int64_t rows, int64_t cols, const float *logits, const float *bias,
                          const int32_t *cols_idx, const float *row_off, int32_t k,
                          int32_t *out_idx, float *out_val, float *out_lse);

/* Merges n_lists lists of k_in entries (list l at val + l*k_in, idx +
** l*k_in), each sorted best first as kcpu_softmax_topk_ex writes them, into
** the k_out best: out_list[j] (the list), out_idx[j] (its idx), out_val[j],
** ordered by val descending, then list ascending, then position in the list.
** Entries with idx < 0 end a list (padding).  Missing entries (fewer than
** k_out in all) get list -1, idx -1, val -inf.  out_* must not alias the
** inputs.  n_lists * k_in < 2^31. */
void kcpu_topk_merge(int32_t n_lists, int32_t k_in, const float *val, const int32_t *idx,
                     int32_t k_out, int32_t *out_list, int32_t *out_idx, float *out_val);

/* Beam-search step: sentence s owns rows_per_sent[s] consecutive rows of
** logits (its hypotheses; 0 allowed), path[rows] their path scores.  Returns
** per sentence the k best of its rows x cols candidates by score = path[r] +
** logp[r,c] (one float add), ties by lower row, then by the row's own order:
** the order of the concatenated beam x V scores.  Each row's top-k (with the
** offset) goes to scratch_idx/scratch_val [rows*k]; since the k best of the
** concatenation lie in the union of the rows' top-k, kcpu_topk_merge of
** those lists is exact.  out_row[s*k + j] is the row of logits (0..rows-1),
** out_idx the target id (through cols_idx when not NULL, as in _ex),
** out_score the score; padding as in the merge.  out_lse [rows] or NULL. */
void kcpu_softmax_topk_beam(int64_t n_sent, const int32_t *rows_per_sent, int64_t cols,
                            const float *logits, const float *bias, const int32_t *cols_idx,
                            const float *path, int32_t k, int32_t *scratch_idx,
                            float *scratch_val, int32_t *out_row, int32_t *out_idx,
                            float *out_score, float *out_lse);

/* Beam 1 without a softmax (Marian WNMT 2018 §2.3): out_idx[r] = the first
** column of the largest logits[r,c] + bias[c]; out_val[r] (NULL ok) that
** value.  A row of -inf gives column 0 and -inf.  With a shortlist the id
** is cols_idx[out_idx[r]].  1 <= cols < 2^31. */
void kcpu_argmax_rows(int64_t rows, int64_t cols, const float *logits, const float *bias,
                      int32_t *out_idx, float *out_val);

/* ----------------------------------------------------- fused attention */

/* The fused attention of a job (kcpu_attn_job.h: what it computes, the
** layouts of its keys and values). */
void kcpu_attn_rows(const kcpu_attn_job *j);
/* Whether the vectorized variant of bfloat16 pairs (AVX-512 with BF16)
** runs here, and the head sizes it takes (kcpu_attn_job.h). */
bool kcpu_attn_bf16_fast(void);
static inline bool kcpu_attn_bf16_dk(int64_t dk) { return dk % 16 == 0 && dk <= 64; }
/* Scratch floats of kcpu_attn_rows for rows of up to `keys` keys: the
** scores of a run of up to 4 rows, every head, with 64 floats of room;
** then a sentence's keys transposed per head, heads x dk x (keys rounded
** up to 16) (rows of a packed batch, AVX-512). */
static inline int64_t kcpu_attn_scratch_floats(int64_t heads, int64_t dk, int64_t keys) {
    return 4 * heads * (keys + 64) + heads * dk * ((keys + 15) / 16 * 16);
}
/* A fold of the decoder's self-attention keys into the frozen history,
** transposed per head (the layout kcpu_attn_rows reads with kt_elem_stride > 0), in
** one pass: for each row r < n and head h, line c < dk of the output
** (out + ((r heads + h) dk + c) l, f16) gets lens[r] positions of line c
** of history row ids[r] (hist [na, heads, dk, la] f16; lens[r] = 0: none,
** hist may then be NULL), then the keys of positions starts[r] .. lb - 1
** of row rec_ids[r] of rec (f32 [., heads, lb, dk], untransposed; rec_ids
** NULL: row r) rounded to f16 (nearest even, as kcpu_f32_to_f16).
** Positions past them are not written.  The
** values of mt_pack_rows over the transposed, converted keys, bit for bit;
** the caller checks lens[r] <= la, starts[r] <= lb, lens[r] + lb -
** starts[r] <= l and the ids.  kcpu_fold_keys_fast: whether the dispatch
** has the vectorized variant (the reference converts element by
** element). */
typedef struct kcpu_fold_job {
    int64_t n, heads, dk;
    const uint16_t *hist;
    int64_t la;
    const int32_t *ids, *lens;
    const float *rec;
    const int32_t *rec_ids;
    int64_t lb;
    const int32_t *starts;
    uint16_t *out;
    int64_t l;
    /* int8 keys (kcpu_attn_job.h, kcpu_attn_job.kh_q8) instead of f16 when outq is
    ** set (hist, out unused): unit lines c4 <= dk / 4 of the history
    ** [na, heads, dk / 4 + 1, la] and the output [n, heads, dk / 4 + 1, l],
    ** the recent keys quantized per key (kcpu_q8_key) */
    const uint32_t *histq;
    uint32_t *outq;
} kcpu_fold_job;
void kcpu_fold_keys(const kcpu_fold_job *j);
bool kcpu_fold_keys_fast(void);
/* rows of int8 keys [dk / 4 + 1, len] units (kcpu_attn_job.kh_q8) -> f32 [dk,
** len]: y[c len + t] = k8_c(t) scale(t). */
void kcpu_keys_q8_f32(int64_t rows, int64_t d4, int64_t len, const uint32_t *x, float *y);

#ifdef __cplusplus
}
#endif
#endif /* KCPU_H */
