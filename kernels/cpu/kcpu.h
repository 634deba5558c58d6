/*
** kcpu.h: CPU compute kernels on raw pointers.  Leaf layer: includes no
** project header, never allocates, never logs, never exits.
**
** Conventions: row-major; `n` counts elements; "rows x cols" means `rows`
** contiguous rows of `cols` elements.  Backward kernels ACCUMULATE into their
** gradient outputs (dx += ...), so callers zero them once per backward pass.
** Every fast path has a plain reference (suffix _ref) that is its test oracle.
*/
#ifndef KCPU_H
#define KCPU_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ ISA */

typedef enum kcpu_isa { KCPU_ISA_REF = 0, KCPU_ISA_AVX2 = 1, KCPU_ISA_AVX512 = 2 } kcpu_isa;

/* Best ISA of this CPU (cpuid + OS xsave check), capped by the environment
** variable MT_ISA=ref|avx2|avx512 when set.  Cached after the first call. */
kcpu_isa kcpu_isa_detect(void);
/* Test hook: caps the ISA used by dispatching kernels (returns the old one). */
kcpu_isa kcpu_isa_force(kcpu_isa isa);
const char *kcpu_isa_name(kcpu_isa isa);
bool kcpu_cpu_has_avx512_vnni(void);

/* Sets OPENBLAS_CORETYPE=SkylakeX (unless already set) when the CPU has
** AVX-512 but OpenBLAS 0.3.21 would not recognise it (Zen 4/5).  Must run
** before libopenblas initialises: kcpu.c also runs it from an ELF
** constructor with high priority.  Returns true if it set the variable. */
bool kcpu_blas_coretype_fixup(void);
/* Limits OpenBLAS to n threads (1 for per-worker single-threaded BLAS). */
void kcpu_blas_set_threads(int n);

/* ----------------------------------------------------------------- GEMM */

/* C[m,n] = alpha * op(A) . op(B) + beta * C.  op(A) is [m,k]: A is stored
** [m,k] with row stride lda, or [k,m] when ta.  op(B) is [k,n]: B is [k,n]
** with ldb, or [n,k] when tb.  ldc is C's row stride. */
typedef void (*kcpu_gemm_fn)(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                             const float *a, int64_t lda, const float *b, int64_t ldb,
                             float beta, float *c, int64_t ldc);
/* Dispatching entry: own AVX-512 kernel for small m (1..16) when the ISA
** allows and !ta, OpenBLAS otherwise. */
void kcpu_gemm_f32(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                   float *c, int64_t ldc);
void kcpu_gemm_f32_blas(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                        const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                        float *c, int64_t ldc);
/* Own kernel for m <= 16 (any n, k); falls back to the reference when the
** ISA is below AVX-512. */
void kcpu_gemm_f32_small(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                         float *c, int64_t ldc);
void kcpu_gemm_f32_ref(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                       const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                       float *c, int64_t ldc);
/* Strided batch of GEMMs (batch i uses a + i*sa, b + i*sb, c + i*sc). */
void kcpu_gemm_f32_batched(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                           const float *a, int64_t lda, int64_t sa, const float *b, int64_t ldb,
                           int64_t sb, float beta, float *c, int64_t ldc, int64_t sc,
                           int64_t batch);

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
void kcpu_unary_fwd_ref(kcpu_unary op, int64_t n, float alpha, const float *x, float *y);

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
void kcpu_log_softmax_bwd(int64_t rows, int64_t cols, const float *y, const float *dy,
                          float *dx);
void kcpu_softmax_fwd_ref(int64_t rows, int64_t cols, const float *x, float *y);
void kcpu_log_softmax_fwd_ref(int64_t rows, int64_t cols, const float *x, float *y);

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
void kcpu_layernorm_fwd_ref(int64_t rows, int64_t cols, const float *x, const float *gamma,
                            const float *beta, float eps, float *y, float *mean, float *rstd);
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

/* f16 <-> f32 arrays. */
void kcpu_f16_to_f32(int64_t n, const uint16_t *x, float *y);
void kcpu_f32_to_f16(int64_t n, const float *x, uint16_t *y);

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

/* ------------------------------------------- additions: ISA, BLAS, variants */

/* ISA the dispatching kernels use now: kcpu_isa_detect() capped by
** kcpu_isa_force().  */
kcpu_isa kcpu_isa_active(void);
/* True when the CPU has AVX-512, OPENBLAS_CORETYPE is unset and the loaded
** OpenBLAS runs a kernel set without AVX-512 (0.3.21 on Zen 5): the caller
** (app/main.c) should setenv("OPENBLAS_CORETYPE", "SkylakeX", 1) and re-exec
** /proc/self/exe, because OpenBLAS picks its kernels in its own ELF
** constructor, before any code of ours runs.  Cheap; call it once. */
bool kcpu_blas_needs_reexec(void);
/* Kernel set OpenBLAS chose ("SkylakeX", "Haswell", ...). */
const char *kcpu_blas_corename(void);

/* Measured fp32 FMA throughput of one core in GFLOP/s (best of short runs
** over `seconds`); 0 when the CPU or build lacks AVX-512.  For benchmarks. */
double kcpu_fp32_peak_gflops(double seconds);
double kcpu_fma_flops_avx512(int64_t iters); /* runs the probe, returns flops */

/* Per-ISA variants, exported for tests and benchmarks.  The _avx512
** functions exist only when MT_HAVE_AVX512_BUILD and may run only when
** kcpu_isa_detect() >= KCPU_ISA_AVX512; the dispatching entries check it. */
void kcpu_gemm_f32_small_avx512(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                                const float *a, int64_t lda, const float *b, int64_t ldb,
                                float beta, float *c, int64_t ldc);
void kcpu_unary_fwd_avx512(kcpu_unary op, int64_t n, float alpha, const float *x, float *y);
void kcpu_unary_bwd_avx512(kcpu_unary op, int64_t n, float alpha, const float *x,
                           const float *y, const float *dy, float *dx);
void kcpu_unary_bwd_ref(kcpu_unary op, int64_t n, float alpha, const float *x, const float *y,
                        const float *dy, float *dx);
/* Inner loops of the broadcasting binary ops (row of n, strides ia/ib in
** {0, 1}); the drivers in elementwise.c walk the outer dims. */
void kcpu_binary_row_avx512(kcpu_binary op, int64_t n, const float *a, int64_t ia,
                            const float *b, int64_t ib, float *y);
void kcpu_binary_row_bwd_avx512(kcpu_binary op, int64_t n, const float *a, int64_t ia,
                                const float *b, int64_t ib, const float *dy, float *da,
                                float *db);
void kcpu_softmax_fwd_avx512(int64_t rows, int64_t cols, const float *x, float *y);
void kcpu_log_softmax_fwd_avx512(int64_t rows, int64_t cols, const float *x, float *y);
void kcpu_softmax_bwd_avx512(int64_t rows, int64_t cols, const float *y, const float *dy,
                             float *dx);
void kcpu_log_softmax_bwd_avx512(int64_t rows, int64_t cols, const float *y, const float *dy,
                                 float *dx);
void kcpu_softmax_bwd_ref(int64_t rows, int64_t cols, const float *y, const float *dy,
                          float *dx);
void kcpu_log_softmax_bwd_ref(int64_t rows, int64_t cols, const float *y, const float *dy,
                              float *dx);
void kcpu_xent_bwd_avx512(int64_t rows, int64_t cols, const float *logp, const int32_t *labels,
                          float ls, const float *dloss, float *dx);
void kcpu_xent_bwd_ref(int64_t rows, int64_t cols, const float *logp, const int32_t *labels,
                       float ls, const float *dloss, float *dx);
void kcpu_layernorm_fwd_avx512(int64_t rows, int64_t cols, const float *x, const float *gamma,
                               const float *beta, float eps, float *y, float *mean,
                               float *rstd);
void kcpu_layernorm_bwd_avx512(int64_t rows, int64_t cols, const float *x, const float *gamma,
                               const float *mean, const float *rstd, const float *dy,
                               float *dx, float *dgamma, float *dbeta);
void kcpu_layernorm_bwd_ref(int64_t rows, int64_t cols, const float *x, const float *gamma,
                            const float *mean, const float *rstd, const float *dy, float *dx,
                            float *dgamma, float *dbeta);
void kcpu_adam_f32_avx512(int64_t n, float *w, const float *g, float *m, float *v, float lr,
                          float b1, float b2, float eps, float wd, float c1, float c2);
void kcpu_adam_f32_ref(int64_t n, float *w, const float *g, float *m, float *v, float lr,
                       float b1, float b2, float eps, float wd, float c1, float c2);
/* f16 conversion: exact scalar reference (round to nearest even, NaN kept
** quiet with its top payload bits as F16C does) and the F16C variant (AVX2
** level and above). */
void kcpu_f16_to_f32_ref(int64_t n, const uint16_t *x, float *y);
void kcpu_f32_to_f16_ref(int64_t n, const float *x, uint16_t *y);
void kcpu_f16_to_f32_avx2(int64_t n, const uint16_t *x, float *y);
void kcpu_f32_to_f16_avx2(int64_t n, const float *x, uint16_t *y);

#ifdef __cplusplus
}
#endif
#endif /* KCPU_H */
