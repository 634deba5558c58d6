/*
** kcpu_impl.h: what the kernel files and the kernel tests share beyond the
** kernels' API (kcpu.h): the per-ISA variants (_avx2, _avx512, _vnni),
** the plain references that are their test oracles (_ref), test hooks,
** and the internal jobs, tiles, probes and inline helpers the separately
** compiled ISA files have in common.  Nothing outside kernels/ and tests/
** includes it.
**
** The _avx512 functions exist only when MT_HAVE_AVX512_BUILD and may run
** only when kcpu_isa_detect() >= KCPU_ISA_AVX512; the _avx2 ones are always
** built and may run when kcpu_isa_detect() >= KCPU_ISA_AVX2.  The
** dispatching entries of kcpu.h check it.
*/
#ifndef KCPU_IMPL_H
#define KCPU_IMPL_H
#include "kcpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------- ISA, BLAS and the throughput probes */

/* Test hook: caps the ISA used by dispatching kernels (returns the old one). */
kcpu_isa kcpu_isa_force(kcpu_isa isa);
bool kcpu_cpu_has_avx512_vnni(void);
bool kcpu_cpu_has_avx512_bf16(void); /* AVX-512 with the BF16 instructions */
/* Sets OPENBLAS_CORETYPE=SkylakeX (unless already set) when the CPU has
** AVX-512 but OpenBLAS 0.3.21 would not recognise it (Zen 4/5).  Must run
** before libopenblas initialises: kcpu.c also runs it from an ELF
** constructor with high priority.  Returns true if it set the variable. */
bool kcpu_blas_coretype_fixup(void);
/* The threads OpenBLAS uses (what kcpu_blas_set_threads set). */
int kcpu_blas_threads(void);
double kcpu_fma_flops_avx512(int64_t iters); /* runs the probe, returns flops */
double kcpu_fma_flops_avx2(int64_t iters);

/* --------------------------------------------------------- fp32 GEMM */

void kcpu_gemm_f32_ref(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                       const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                       float *c, int64_t ldc);

/* ----------------------------------------------------- bfloat16 GEMM */

bool kcpu_gemm_bf16_available(kcpu_gemm_bf16_impl impl);
void kcpu_gemm_bf16_impl_run(kcpu_gemm_bf16_impl impl, bool ta, bool tb, int64_t m, int64_t n,
                             int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                             int64_t ldb, float beta, float *c, int64_t ldc, void *scratch);
void kcpu_gemm_bf16_ref(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                        const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                        float *c, int64_t ldc);
/* Internal (gemm_bf16*.c): one tile, kp packed k pairs of an A micro-panel
** [kp][MR] and a B panel [kp][NR] into C's rows < mr, columns < nr
** (first: alpha acc + beta C, else C + alpha acc); the scalar store. */
typedef void (*kcpu_bf16_tile_fn)(int64_t kp, const uint32_t *a, const uint32_t *b, float *c,
                                  int64_t ldc, int mr, int nr, float alpha, float beta, bool first);
void kcpu_bf16_tile_avx512(int64_t kp, const uint32_t *a, const uint32_t *b, float *c, int64_t ldc,
                           int mr, int nr, float alpha, float beta, bool first);
void kcpu_bf16_tile_avx2(int64_t kp, const uint32_t *a, const uint32_t *b, float *c, int64_t ldc,
                         int mr, int nr, float alpha, float beta, bool first);
void kcpu_bf16_tile_store(const float *acc, float *c, int64_t ldc, int mr, int nr, float alpha,
                          float beta, bool first);
/* Internal: the packing primitives (gemm_bf16.c's layout): along_k, up to
** 16 runs of kc floats along k (run l at x + l ld) into units
** out[p * stride + l]; across_k, n units of two
** rows of consecutive k (hi NULL: zeros).  The AVX-512 pair (AVX-512 BF16
** CPUs only) gives the scalar pair's units bit for bit. */
typedef struct kcpu_bf16_packer {
    void (*along_k)(const float *x, int64_t ld, int64_t lines, int64_t kc, uint32_t *out,
                    int64_t stride);
    void (*across_k)(const float *lo, const float *hi, int64_t n, uint32_t *out);
} kcpu_bf16_packer;
extern const kcpu_bf16_packer kcpu_bf16_packer_scalar, kcpu_bf16_packer_avx512;

/* ------------------------------------------------------- elementwise */

/* The ops whose gradient the SIMD variants compute from y = f(x). */
static inline bool kcpu_unary_grad_uses_y(kcpu_unary op) {
    return op == KCPU_TANH || op == KCPU_SIGMOID || op == KCPU_EXP || op == KCPU_SQRT;
}
void kcpu_unary_fwd_ref(kcpu_unary op, int64_t n, float alpha, const float *x, float *y);

/* --------------------------------------------------- softmax / norms */

void kcpu_softmax_fwd_ref(int64_t rows, int64_t cols, const float *x, float *y);
void kcpu_log_softmax_fwd_ref(int64_t rows, int64_t cols, const float *x, float *y);
void kcpu_layernorm_fwd_ref(int64_t rows, int64_t cols, const float *x, const float *gamma,
                            const float *beta, float eps, float *y, float *mean, float *rstd);

/* ------------------------------------------------------- conversions */

void kcpu_f32_to_bf16_ref(int64_t n, const float *x, uint16_t *y);
void kcpu_f32_to_bf16_avx512(int64_t n, const float *x, uint16_t *y);
void kcpu_f32_to_bf16_pairs_avx512(int64_t rows, int64_t len, const float *x, uint32_t *y);
static inline uint16_t kcpu_bf16_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* NaN */
    if ((u & 0x7f800000u) == 0) u &= 0x80000000u; /* subnormal: signed zero */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static inline float kcpu_bf16_val(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ------------------------------------- per-ISA variants of kcpu.h's ops */

void kcpu_gemm_f32_small_avx512(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                                const float *a, int64_t lda, const float *b, int64_t ldb,
                                float beta, float *c, int64_t ldc);
/* The same for AVX2 + FMA (always built; may run when kcpu_isa_detect() >=
** KCPU_ISA_AVX2). */
void kcpu_gemm_f32_small_avx2(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                              const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                              float *c, int64_t ldc);
void kcpu_unary_fwd_avx512(kcpu_unary op, int64_t n, float alpha, const float *x, float *y);
void kcpu_unary_bwd_avx512(kcpu_unary op, int64_t n, float alpha, const float *x, const float *y,
                           const float *dy, float *dx);
void kcpu_unary_bwd_ref(kcpu_unary op, int64_t n, float alpha, const float *x, const float *y,
                        const float *dy, float *dx);
/* Inner loops of the broadcasting binary ops (row of n, strides ia/ib in
** {0, 1}); the drivers in elementwise.c walk the outer dims. */
void kcpu_binary_row_avx512(kcpu_binary op, int64_t n, const float *a, int64_t ia, const float *b,
                            int64_t ib, float *y);
void kcpu_binary_row_bwd_avx512(kcpu_binary op, int64_t n, const float *a, int64_t ia,
                                const float *b, int64_t ib, const float *dy, float *da, float *db);
void kcpu_softmax_fwd_avx512(int64_t rows, int64_t cols, const float *x, float *y);
void kcpu_log_softmax_fwd_avx512(int64_t rows, int64_t cols, const float *x, float *y);
void kcpu_softmax_bwd_avx512(int64_t rows, int64_t cols, const float *y, const float *dy,
                             float *dx);
void kcpu_log_softmax_bwd_avx512(int64_t rows, int64_t cols, const float *y, const float *dy,
                                 float *dx);
void kcpu_softmax_bwd_ref(int64_t rows, int64_t cols, const float *y, const float *dy, float *dx);
void kcpu_log_softmax_bwd_ref(int64_t rows, int64_t cols, const float *y, const float *dy,
                              float *dx);
void kcpu_xent_bwd_avx512(int64_t rows, int64_t cols, const float *logp, const int32_t *labels,
                          float ls, const float *dloss, float *dx);
void kcpu_xent_bwd_ref(int64_t rows, int64_t cols, const float *logp, const int32_t *labels,
                       float ls, const float *dloss, float *dx);
void kcpu_layernorm_fwd_avx512(int64_t rows, int64_t cols, const float *x, const float *gamma,
                               const float *beta, float eps, float *y, float *mean, float *rstd);
void kcpu_layernorm_bwd_avx512(int64_t rows, int64_t cols, const float *x, const float *gamma,
                               const float *mean, const float *rstd, const float *dy, float *dx,
                               float *dgamma, float *dbeta);
void kcpu_layernorm_bwd_ref(int64_t rows, int64_t cols, const float *x, const float *gamma,
                            const float *mean, const float *rstd, const float *dy, float *dx,
                            float *dgamma, float *dbeta);
void kcpu_adam_f32_avx512(int64_t n, float *w, const float *g, float *m, float *v, float lr,
                          float b1, float b2, float eps, float wd, float c1, float c2);
void kcpu_adam_f32_ref(int64_t n, float *w, const float *g, float *m, float *v, float lr, float b1,
                       float b2, float eps, float wd, float c1, float c2);
/* AVX2 + FMA variants of the same kernels (elementwise_avx2.c; always
** compiled, run only when kcpu_isa_detect() >= KCPU_ISA_AVX2).  The
** dispatchers use them when kcpu_isa_active() is KCPU_ISA_AVX2, or above it
** in a build without the AVX-512 variants. */
void kcpu_unary_fwd_avx2(kcpu_unary op, int64_t n, float alpha, const float *x, float *y);
void kcpu_unary_bwd_avx2(kcpu_unary op, int64_t n, float alpha, const float *x, const float *y,
                         const float *dy, float *dx);
void kcpu_binary_row_avx2(kcpu_binary op, int64_t n, const float *a, int64_t ia, const float *b,
                          int64_t ib, float *y);
void kcpu_binary_row_bwd_avx2(kcpu_binary op, int64_t n, const float *a, int64_t ia, const float *b,
                              int64_t ib, const float *dy, float *da, float *db);
void kcpu_softmax_fwd_avx2(int64_t rows, int64_t cols, const float *x, float *y);
void kcpu_log_softmax_fwd_avx2(int64_t rows, int64_t cols, const float *x, float *y);
void kcpu_softmax_bwd_avx2(int64_t rows, int64_t cols, const float *y, const float *dy, float *dx);
void kcpu_log_softmax_bwd_avx2(int64_t rows, int64_t cols, const float *y, const float *dy,
                               float *dx);
void kcpu_xent_bwd_avx2(int64_t rows, int64_t cols, const float *logp, const int32_t *labels,
                        float ls, const float *dloss, float *dx);
void kcpu_layernorm_fwd_avx2(int64_t rows, int64_t cols, const float *x, const float *gamma,
                             const float *beta, float eps, float *y, float *mean, float *rstd);
void kcpu_layernorm_bwd_avx2(int64_t rows, int64_t cols, const float *x, const float *gamma,
                             const float *mean, const float *rstd, const float *dy, float *dx,
                             float *dgamma, float *dbeta);
void kcpu_adam_f32_avx2(int64_t n, float *w, const float *g, float *m, float *v, float lr, float b1,
                        float b2, float eps, float wd, float c1, float c2);
/* f16 conversion: exact scalar reference (round to nearest even, NaN kept
** quiet with its top payload bits as F16C does) and the F16C variant (AVX2
** level and above). */
void kcpu_f16_to_f32_ref(int64_t n, const uint16_t *x, float *y);
void kcpu_f32_to_f16_ref(int64_t n, const float *x, uint16_t *y);
void kcpu_f16_to_f32_avx2(int64_t n, const uint16_t *x, float *y);
void kcpu_f32_to_f16_avx2(int64_t n, const float *x, uint16_t *y);

/* ------------------------------------------------------ integer GEMM */

#define KCPU_I16_MULT 1024.0f /* int16 multiplier 2^10 */
/* True when impl was compiled in and this CPU can run it (REF, SAT16:
** always). */
bool kcpu_igemm_available(kcpu_igemm_impl impl);

/*
** Emulation of intgemm's int8 code paths other than AVX512VNNI (the ones
** Marian runs when the CPU or INTGEMM_CPUID=SSSE3|AVX2|AVX512BW says so;
** intgemm multiply.h INTGEMM_MULTIPLY8, avx512_gemm.h Kernels8::Multiply).
** There, for a register of R bytes (SSSE3 16, AVX2 32, AVX512BW 64), each
** 16-bit lane l < R/2 accumulates over the chunks c of R consecutive inner
** positions the pair |a| sign(b, a) at k = cR + 2l and cR + 2l + 1 (vpmaddubsw:
** exactly a b for |a|, |b| <= 127, at most 2 * 127^2 = 32258) with a
** SATURATING 16-bit add (vpaddsw) per chunk; only then are the R/2 lanes
** widened to int32 and summed.  So an int8 accumulator is
**   acc = sum over l of sat16-fold over c of (a[cR+2l] b[cR+2l] + a[cR+2l+1] b[cR+2l+1])
** and differs from the exact sum (VNNI's vpdpbusds, and every other variant
** here) where a lane passes +-32767 on the way; which lanes group which
** products depends on R, so the three paths can differ from one another.
** KCPU_IGEMM_SAT16 computes exactly that (int16 products: the exact REF,
** as intgemm's int16 path wraps in int32 like REF), with quantization,
** dequantization and epilogues as REF.  It is the one int8 variant whose
** accumulators differ from the others', and the error bound of kcpu.h does
** not hold for it where a lane saturates.
**
** R is 0 (no emulation: the native kernels) unless the environment variable
** INTGEMM_CPUID, read at the first call, is SSSE3, AVX2 or AVX512BW (Marian's
** own variable, case-insensitive); AVX512VNNI and other values leave it 0.
** kcpu_intgemm_emulate sets it (0, 16, 32 or 64; returns the old value).
** SAT16 called explicitly while R is 0 emulates AVX512BW (R = 64).
*/
int kcpu_intgemm_emulated(void);
int kcpu_intgemm_emulate(int reg_bytes);
/* 127 / maxabs, or 1 when maxabs is 0 or 127 / maxabs is not finite. */
float kcpu_i8_mult(float maxabs);
/* 1.0f / (qa * qb) in float (the product rounded first), as Marian. */
float kcpu_igemm_unquant(float qa, float qb);
/* Column by column, any ISA (the oracle of the AVX-512 path, which serves
** ascending columns). */
void kcpu_pack_select_ref(const void *packed, int64_t n_sel, const int32_t *cols, void *out);
/* Internal (gemm_int.c): the 4-byte units of the strictly ascending columns
** cols of the panels at src (panel bytes each, `units` per column) into the
** panels at dst, column jo at jo's place; nothing else of dst is written. */
void kcpu_select_units_avx512(const char *src, char *dst, size_t panel, int64_t units,
                              int64_t n_sel, const int32_t *cols);
void kcpu_gemm_i8_impl(kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                       const void *packed_b, const float *bias, float *c, int64_t ldc,
                       void *scratch);
void kcpu_gemm_i16_impl(kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                        const void *packed_b, const float *bias, float *c, int64_t ldc,
                        void *scratch);
/* The raw int32 accumulators acc[m, n] (row stride ldacc) instead of C;
** returns qa (int8: 127/max|A|; int16: 2^10).  For tests. */
float kcpu_gemm_i8_acc(kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                       const void *packed_b, int32_t *acc, int64_t ldacc, void *scratch);
float kcpu_gemm_i16_acc(kcpu_igemm_impl impl, int64_t m, const float *a, int64_t lda,
                        const void *packed_b, int32_t *acc, int64_t ldacc, void *scratch);
double kcpu_int_ops_avx2(bool int16, int64_t iters); /* the AVX2 probe: returns ops */
/* Internal: one call as gemm_int.c hands it to a variant (separately
** compiled ISA files).  The variant computes and quantizes A itself. */
typedef struct kcpu_igemm_job {
    int64_t m, k, n, kp, np;
    const float *a; /* [m,k], row stride lda           */
    int64_t lda;
    const void *panels;  /* packed B panels                 */
    const int32_t *corr; /* int8: [np] shift correction     */
    float qb;
    void *scratch;     /* 64-byte aligned; int8: m rows of A
                          quantized, then m rows of |A| (AVX2) */
    int64_t sa;        /* scratch row stride, bytes       */
    const float *bias; /* float output: [n] or NULL       */
    float *c;          /* float output, or NULL for acc   */
    int64_t ldc;
    int32_t *acc; /* int32 output when c == NULL     */
    int64_t ldacc;
    float qa;  /* out: the activation multiplier  */
    bool relu; /* float output: max(., 0) after the bias */
    /* VNNI, c and acc NULL: each row's running maximum per lane of C +
    ** skip (kcpu_gemm_int_argmax), am_val [m, 16] (start -inf) and the
    ** column of each, am_idx [m, 16] */
    float *am_val;
    int32_t *am_idx;
    const float *skip;
    const float *res; /* float output: + res[i * ldr + j] after the bias (or NULL) */
    int64_t ldr;
    int phase;        /* KCPU_IGEMM_BOTH, or only QUANT (A into the scratch, qa out),
                         or only the PRODUCT (the scratch holds A, qa given) */
    bool a_max_known; /* int8: max|A| is a_maxabs (not measured again)     */
    float a_maxabs;
    float *c_maxabs; /* float output: max |C| over the stored values (NaN
                        skipped, as kcpu_maxabs_f32), or NULL                */
} kcpu_igemm_job;
enum { KCPU_IGEMM_BOTH = 0, KCPU_IGEMM_QUANT = 1, KCPU_IGEMM_PRODUCT = 2 };
void kcpu_igemm_i8_avx2(kcpu_igemm_job *job);
void kcpu_igemm_i16_avx2(kcpu_igemm_job *job);
void kcpu_igemm_i8_vnni(kcpu_igemm_job *job);
void kcpu_igemm_i16_vnni(kcpu_igemm_job *job);
double kcpu_vnni_ops_avx512(bool int16, int64_t iters); /* the probe: returns ops */

/* --------------------------------------------- fused softmax / top-k */

void kcpu_softmax_topk_ex_ref(int64_t rows, int64_t cols, const float *logits, const float *bias,
                              const int32_t *cols_idx, const float *row_off, int32_t k,
                              int32_t *out_idx, float *out_val, float *out_lse);
void kcpu_softmax_topk_ex_avx512(int64_t rows, int64_t cols, const float *logits, const float *bias,
                                 const int32_t *cols_idx, const float *row_off, int32_t k,
                                 int32_t *out_idx, float *out_val, float *out_lse);
void kcpu_softmax_topk_ex_avx2(int64_t rows, int64_t cols, const float *logits, const float *bias,
                               const int32_t *cols_idx, const float *row_off, int32_t k,
                               int32_t *out_idx, float *out_val, float *out_lse);
/* The same, resumable: the columns of each row arrive in pieces (the output
** layer's GEMM writes a few panels of C at a time, whose top-k is taken
** while they are in cache: kcpu_gemm_int_topk).  Per row a kcpu_topk_row
** keeps its online (m, d) lanes and heap count between pieces; the heap
** lives in the outputs as above.  kcpu_topk_start: rows begin empty.
** kcpu_topk_piece: base is the first column not yet counted (0, then what
** the previous piece returned, the same for every row); x [rows] (row
** stride ldx) holds the columns base .. avail of the rows (avail a
** multiple of 64 past base, or cols for the last piece); returns the first
** column not counted (below avail by less than 64, whose columns the next
** piece must hold again from its base; cols after the last).  kcpu_topk_end
** writes the outputs (no lse, cols_idx or row_off).  The results are
** kcpu_softmax_topk_ex's of the whole rows (bias NULL), bit for bit,
** however the columns are cut.  Only where kcpu_topk_resumable() (the
** AVX-512 variant is the one that dispatches). */
typedef struct kcpu_topk_row {
    float m[64], d[64];
    int32_t n;
    int32_t pad[15];
} kcpu_topk_row;
bool kcpu_topk_resumable(void);
void kcpu_topk_start(int64_t rows, kcpu_topk_row *st);
int64_t kcpu_topk_piece(int64_t rows, int64_t cols, const float *x, int64_t ldx, int64_t base,
                        int64_t avail, int32_t k, kcpu_topk_row *st, int32_t *out_idx,
                        float *out_val);
void kcpu_topk_end(int64_t rows, int64_t cols, int32_t k, const kcpu_topk_row *st, int32_t *out_idx,
                   float *out_val);
void kcpu_topk_start_avx512(int64_t rows, kcpu_topk_row *st);
int64_t kcpu_topk_piece_avx512(int64_t rows, int64_t cols, const float *x, int64_t ldx,
                               int64_t base, int64_t avail, int32_t k, kcpu_topk_row *st,
                               int32_t *out_idx, float *out_val);
void kcpu_topk_end_avx512(int64_t rows, int64_t cols, int32_t k, const kcpu_topk_row *st,
                          int32_t *out_idx, float *out_val);
void kcpu_argmax_rows_ref(int64_t rows, int64_t cols, const float *logits, const float *bias,
                          int32_t *out_idx, float *out_val);
void kcpu_argmax_rows_avx512(int64_t rows, int64_t cols, const float *logits, const float *bias,
                             int32_t *out_idx, float *out_val);
void kcpu_argmax_rows_avx2(int64_t rows, int64_t cols, const float *logits, const float *bias,
                           int32_t *out_idx, float *out_val);
/* Internal (topk.c, shared with topk_avx512.c): a heap of n entries (val,
** pos) with the worst at the root, worst = lower val, or equal val and
** higher pos.  push adds (v, p) to a heap of n; replace puts (v, p) at the
** root of a heap of n and sifts it down; finish turns a row's heap of n
** raw x into its sorted output (see kcpu_softmax_topk_ex), m and logd as
** above (logd = -inf: all-masked row). */
void kcpu_topk_heap_push(int32_t n, float *val, int32_t *pos, float v, int32_t p);
void kcpu_topk_heap_replace(int32_t n, float *val, int32_t *pos, float v, int32_t p);
void kcpu_topk_row_finish(int32_t n, int32_t k, float *val, int32_t *pos, float m, float logd,
                          const int32_t *cols_idx, const float *row_off);

/* --------------------------------------------------- fused attention */

/* The quantizer of int8 keys and queries (kcpu_attn_job.h): scale = max
** |x_c| / 127, x8_c = x_c 127 / max rounded half to even. */
static inline float kcpu_q8_scale_of(float amax) { return amax / 127.0f; }
/* x clamped to [-127, 127] in float, then rounded half to even (as
** vcvtps2dq in the default mode; 1.5 * 2^23 added and subtracted). */
static inline int32_t kcpu_round_even(float x) {
    x = x >= -127.0f ? x : -127.0f;
    x = x <= 127.0f ? x : 127.0f;
    return (int32_t)((x + 12582912.0f) - 12582912.0f);
}
/* max |x_c| of n floats to *amax; returns the multiplier 127 / max (0 for
** a max of 0). */
static inline float kcpu_q8_mult(const float *x, int64_t n, float *amax) {
    float mx = 0.0f;
    for (int64_t c = 0; c < n; c++) {
        float a = x[c] < 0.0f ? -x[c] : x[c];
        mx = a > mx ? a : mx;
    }
    *amax = mx;
    return mx > 0.0f ? 127.0f / mx : 0.0f;
}
/* The dk elements of k as bytes k8 + 128 (out[c]); returns the scale. */
static inline float kcpu_q8_key(const float *k, int64_t dk, uint8_t *out) {
    float mx;
    const float inv = kcpu_q8_mult(k, dk, &mx);
    for (int64_t c = 0; c < dk; c++) {
        out[c] = (uint8_t)(kcpu_round_even(k[c] * inv) + 128);
    }
    return kcpu_q8_scale_of(mx);
}
/* The dk elements of q as int8 (q8[c]), their sum to *sum; returns qa =
** alpha max |q| / 127 (0 when q is 0).  Inputs must be finite. */
static inline float kcpu_q8_query(const float *q, int64_t dk, float alpha, int8_t *q8,
                                  int32_t *sum) {
    float mx;
    const float inv = kcpu_q8_mult(q, dk, &mx);
    int32_t s = 0;
    for (int64_t c = 0; c < dk; c++) {
        q8[c] = (int8_t)kcpu_round_even(q[c] * inv);
        s += q8[c];
    }
    *sum = s;
    return alpha * kcpu_q8_scale_of(mx);
}
void kcpu_attn_rows_bf16_avx512(const kcpu_attn_job *j);
/* Whether kcpu_attn_rows_bf16_avx512 takes the job (else the reference
** runs it). */
static inline bool kcpu_attn_bf16_shape(const kcpu_attn_job *j) {
    return j->kt_elem_stride > 0 && j->tr == 0 && kcpu_attn_bf16_dk(j->dk);
}
void kcpu_attn_rows_ref(const kcpu_attn_job *j);
/* Internal (attn_avx2.c, attn_avx512.c): the history keys [*lo, *hi) that
** rows i0 .. i0 + m - 1 (a run scored together) need (starts, lens): the
** scores outside are not computed. */
static inline void kcpu_attn_run_keys(const kcpu_attn_job *j, int64_t i0, int64_t m, int64_t *lo,
                                      int64_t *hi) {
    *lo = j->starts ? j->th : 0;
    *hi = j->lens ? 0 : j->th;
    for (int64_t u = 0; u < m; u++) {
        if (j->starts && j->starts[i0 + u] < *lo) *lo = j->starts[i0 + u];
        if (j->lens && j->lens[i0 + u] > *hi) *hi = j->lens[i0 + u];
    }
}
void kcpu_attn_rows_avx512(const kcpu_attn_job *j);
void kcpu_fold_keys_ref(const kcpu_fold_job *j);
void kcpu_fold_keys_avx512(const kcpu_fold_job *j);
void kcpu_fold_keys_q8_avx512(const kcpu_fold_job *j); /* outq set */
void kcpu_fold_keys_q8_avx2(const kcpu_fold_job *j);   /* outq set */
/* Internal: the fold into int8 keys (outq) of every variant, with its ISA's
** quantizer of one key (kcpu_q8_key, or a vectorized twin giving the same
** bytes; it may write whole vectors, up to 16 bytes past dk): each head's
** unit lines of the history copied, then each recent key quantized and its
** units stored down the lines, its scale in line dk / 4.  The units take
** the quantizer's bytes in memory order (x86: byte e at bits 8e, as the
** layout says).  Inlined with a constant quantizer, which inlines too. */
static inline __attribute__((always_inline)) void
kcpu_fold_q8_rows(const kcpu_fold_job *j, float (*quant)(const float *, int64_t, uint8_t *)) {
    const int64_t hn = j->heads, dk = j->dk, d4 = dk / 4, l = j->l, lb = j->lb;
    uint32_t units[KCPU_Q8_DK_MAX / 4 + 4];
    for (int64_t r = 0; r < j->n; r++) {
        const int64_t bl = j->lens[r], bs = j->starts[r];
        const int64_t rr = j->rec_ids ? j->rec_ids[r] : r;
        for (int64_t h = 0; h < hn; h++) {
            uint32_t *y = j->outq + (r * hn + h) * (d4 + 1) * l;
            if (bl > 0) {
                const uint32_t *x = j->histq + ((int64_t)j->ids[r] * hn + h) * (d4 + 1) * j->la;
                for (int64_t c4 = 0; c4 <= d4; c4++) {
                    memcpy(y + c4 * l, x + c4 * j->la, sizeof(uint32_t) * (size_t)bl);
                }
            }
            const float *rec = j->rec + (rr * hn + h) * lb * dk;
            for (int64_t t = bs; t < lb; t++) {
                const float sc = quant(rec + t * dk, dk, (uint8_t *)units);
                uint32_t *col = y + bl + t - bs;
                for (int64_t c4 = 0; c4 < d4; c4++) {
                    col[c4 * l] = units[c4];
                }
                memcpy(col + d4 * l, &sc, sizeof sc);
            }
        }
    }
}
void kcpu_attn_rows_avx2(const kcpu_attn_job *j);

#ifdef __cplusplus
}
#endif
#endif /* KCPU_IMPL_H */
