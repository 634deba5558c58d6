/*
** device.h: engine-private vtable of device primitives, the only seam
** between the engine and kernels.  device_cpu.c fills it with kcpu_*;
** device_cuda.c (MT_CUDA builds) will fill it with kcuda_*.  No other
** engine file includes a kernel header; this one includes the one plain
** data header the kernels and the engine share, the fused attention's job
** (kernels/cpu/kcpu_attn_job.h).  Entries mirror kernels/cpu/kcpu.h (same
** argument meaning; enum values are the kcpu ones cast to int).  Pointers
** are device pointers.  A NULL entry means "not supported": the engine
** then takes another path where the entry says so.
*/
#ifndef MT_DEVICE_H
#define MT_DEVICE_H
#include "kcpu_attn_job.h"
#include "mt.h"

typedef struct mt_device_ops {
    const char *name;

    /* ---- memory.  dir: 0 host->device, 1 device->host, 2 device->device */
    void *(*alloc)(mt_device *d, size_t bytes); /* NULL on failure, 64-aligned */
    void (*free)(mt_device *d, void *p);
    mt_status (*copy)(mt_device *d, void *dst, const void *src, size_t n, int dir);
    mt_status (*memset0)(mt_device *d, void *p, size_t n);

    /* ---- data movement and conversions */
    void (*gather_rows)(mt_device *d, int64_t n_ids, const int32_t *ids, int64_t dim,
                        const float *table, float *out);
    void (*scatter_add_rows)(mt_device *d, int64_t n_ids, const int32_t *ids, int64_t dim,
                             const float *dout, float *dtable);
    void (*permute)(mt_device *d, int ndim, const int64_t *shape, const int *perm, const float *x,
                    float *y);
    void (*copy2d)(mt_device *d, int64_t rows, int64_t cols, const float *src, int64_t ss,
                   float *dst, int64_t sd, bool accumulate);
    /* copy2d and gather_rows for any element size: rows of `bytes` bytes,
    ** strides in bytes */
    void (*copy2d_bytes)(mt_device *d, int64_t rows, size_t bytes, const void *src, size_t ss,
                         void *dst, size_t sd);
    void (*gather_bytes)(mt_device *d, int64_t n_ids, const int32_t *ids, size_t bytes,
                         const void *table, void *out);
    void (*f16_to_f32)(mt_device *d, int64_t n, const uint16_t *x, float *y);
    void (*f32_to_f16)(mt_device *d, int64_t n, const float *x, uint16_t *y);
    void (*bf16_to_f32)(mt_device *d, int64_t n, const uint16_t *x, float *y);
    void (*f32_to_bf16)(mt_device *d, int64_t n, const float *x, uint16_t *y);
    /* kcpu_f32_to_bf16_pairs (the bfloat16 pairs of mt_cast_pairs) */
    void (*f32_to_bf16_pairs)(mt_device *d, int64_t rows, int64_t len, const float *x, uint32_t *y);

    /* ---- elementwise (op: MT_UN_*, MT_BIN_* below) */
    void (*unary_fwd)(mt_device *d, int op, int64_t n, float alpha, const float *x, float *y);
    void (*unary_bwd)(mt_device *d, int op, int64_t n, float alpha, const float *x,
                      const float *y, const float *dy, float *dx);
    void (*binary_fwd)(mt_device *d, int op, int ndim, const int64_t *shape, const int64_t *sa,
                       const float *a, const int64_t *sb, const float *b, float *y);
    void (*binary_bwd)(mt_device *d, int op, int ndim, const int64_t *shape, const int64_t *sa,
                       const float *a, const int64_t *sb, const float *b, const float *dy,
                       float *da, float *db);
    void (*acc_f32)(mt_device *d, int64_t n, const float *x, float *y);
    void (*fill_f32)(mt_device *d, int64_t n, float value, float *y);
    void (*masked_fill_fwd)(mt_device *d, int ndim, const int64_t *shape, const float *x,
                            const int64_t *sm, const float *mask, float value, float *y);
    void (*masked_fill_bwd)(mt_device *d, int ndim, const int64_t *shape, const int64_t *sm,
                            const float *mask, const float *dy, float *dx);

    /* ---- reductions (op: MT_RED_* below) */
    void (*reduce_fwd)(mt_device *d, int op, int64_t outer, int64_t n, int64_t inner,
                       const float *x, float *y);
    void (*reduce_bwd)(mt_device *d, int op, int64_t outer, int64_t n, int64_t inner,
                       const float *x, const float *y, const float *dy, float *dx);

    /* ---- float linear algebra */
    void (*gemm_f32)(mt_device *d, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                     const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                     int64_t ldc);
    void (*gemm_f32_batched)(mt_device *d, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                             float alpha, const float *a, int64_t lda, int64_t sa, const float *b,
                             int64_t ldb, int64_t sb, float beta, float *c, int64_t ldc, int64_t sc,
                             int64_t batch);
    /* The fp32 GEMM variants the auto-tuner times: gemm_f32 by a given
    ** variant (MT_GEMM_BLAS or MT_GEMM_SMALL), which must be available
    ** (gemm_f32_has).  NULL: not supported. */
    void (*gemm_f32_impl)(mt_device *d, int variant, bool ta, bool tb, int64_t m, int64_t n,
                          int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                          int64_t ldb, float beta, float *c, int64_t ldc);
    bool (*gemm_f32_has)(mt_device *d, int variant, int64_t m, bool ta);
    /* The bfloat16 GEMM of mixed-precision training (kcpu_gemm_bf16:
    ** operands rounded to bfloat16, float32 sums), split over the device's
    ** own threads (kcpu_own_threads); MT_ERR_NOMEM when its packing
    ** scratch cannot be had.  NULL: not supported. */
    mt_status (*gemm_bf16)(mt_device *d, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                           float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                           float beta, float *c, int64_t ldc);

    /* ---- normalisation */
    void (*layernorm_fwd)(mt_device *d, int64_t rows, int64_t cols, const float *x,
                          const float *gamma, const float *beta, float eps, float *y,
                          float *mean, float *rstd);
    /* layernorm_fwd of x + res (kcpu_add_layernorm_fwd); NULL: none (the
    ** builder adds and normalizes in two nodes) */
    void (*add_layernorm_fwd)(mt_device *d, int64_t rows, int64_t cols, const float *x,
                              const float *res, const float *gamma, const float *beta, float eps,
                              float *y, float *mean, float *rstd);
    void (*layernorm_bwd)(mt_device *d, int64_t rows, int64_t cols, const float *x,
                          const float *gamma, const float *mean, const float *rstd, const float *dy,
                          float *dx, float *dgamma, float *dbeta);

    /* ---- softmax, cross-entropy, top-k */
    void (*softmax_fwd)(mt_device *d, int64_t rows, int64_t cols, const float *x, float *y);
    void (*softmax_bwd)(mt_device *d, int64_t rows, int64_t cols, const float *y, const float *dy,
                        float *dx);
    void (*log_softmax_fwd)(mt_device *d, int64_t rows, int64_t cols, const float *x, float *y);
    void (*log_softmax_bwd)(mt_device *d, int64_t rows, int64_t cols, const float *y,
                            const float *dy, float *dx);
    void (*xent_fwd)(mt_device *d, int64_t rows, int64_t cols, const float *x,
                     const int32_t *labels, float ls, float *logp, float *loss);
    void (*xent_bwd)(mt_device *d, int64_t rows, int64_t cols, const float *logp,
                     const int32_t *labels, float ls, const float *dloss, float *dx);
    /* Fused log-softmax + top-k of each row (kcpu_softmax_topk); idx and
    ** logp are host memory [rows * k].  NULL: not supported. */
    void (*softmax_topk)(mt_device *d, int64_t rows, int64_t cols, const float *x, int32_t k,
                         int32_t *idx, float *logp);
    /* idx[r] = the first column of the largest x[r,c] + bias[c] (bias
    ** [cols] or NULL), val[r] that value (kcpu_argmax_rows); idx and val
    ** are host memory [rows].  NULL: not supported. */
    void (*argmax_rows)(mt_device *d, int64_t rows, int64_t cols, const float *x, const float *bias,
                        int32_t *idx, float *val);

    /* ---- attention.  NULL entries: not supported (the builders then
    ** compose the unfused ops) */
    /* The fused attention of a job (kcpu_attn_rows; device pointers). */
    void (*attn_rows)(mt_device *d, const kcpu_attn_job *job);
    /* Scratch bytes of attn_rows for rows of up to `keys` keys. */
    size_t (*attn_scratch_bytes)(mt_device *d, int64_t heads, int64_t dk, int64_t keys);
    /* Whether attn_rows multiplies bfloat16 pairs (kcpu_attn_job
    ** kh_bf16_pairs, vh_bf16_pairs) of heads of dk without widening them
    ** (kcpu_attn_bf16_fast, _dk); NULL: no. */
    bool (*attn_bf16)(mt_device *d, int64_t dk);
    /* The fold of transposed self-attention keys into the f16 history in
    ** one pass (kcpu_fold_keys; mt_pack_rows_kt), and whether it is fast
    ** here (false: builders keep the permute, cast and pack). */
    void (*fold_keys)(mt_device *d, int64_t n, int64_t heads, int64_t dk, const void *hist,
                      int64_t la, const int32_t *ids, const int32_t *lens, const float *rec,
                      const int32_t *rec_ids, int64_t lb, const int32_t *starts, uint16_t *out,
                      int64_t l);
    bool (*fold_keys_fast)(mt_device *d);
    /* The same fold into int8 keys (kcpu_fold_job histq, outq: units [.,
    ** heads, dk / 4 + 1, len]; mt_pack_rows_kq). */
    void (*fold_keys_q8)(mt_device *d, int64_t n, int64_t heads, int64_t dk, const uint32_t *hist,
                         int64_t la, const int32_t *ids, const int32_t *lens, const float *rec,
                         const int32_t *rec_ids, int64_t lb, const int32_t *starts, uint32_t *out,
                         int64_t l);
    /* int8 keys back to f32 (kcpu_keys_q8_f32; mt_keys_q8_f32). */
    void (*keys_q8_f32)(mt_device *d, int64_t rows, int64_t d4, int64_t len, const uint32_t *x,
                        float *y);

    /* ---- quantized: integer GEMM (kcpu.h "integer GEMM"; bits is 8 or
    ** 16).  NULL entries: not supported (products stay fp32) */
    float (*maxabs_f32)(mt_device *d, int64_t n, const float *x); /* NaN skipped */
    /* y[i] = quantize(x[i] * mult): int8 in [-127, 127], int16 saturated. */
    void (*quantize)(mt_device *d, int bits, int64_t n, const float *x, float mult, void *y);
    size_t (*pack_bytes)(mt_device *d, int bits, int64_t k, int64_t n);
    /* Packs op(B) [k,n], B [k,n] (row stride ldb) or [n,k] when tb: from fp32
    ** (quantized with 127/max|B| or 2^10), or from quantized values bq
    ** (int8_t or int16_t) with their multiplier qb.  pack_q returns the number
    ** of int8 -128 values stored as -127. */
    void (*pack_f32)(mt_device *d, int bits, int64_t k, int64_t n, const float *b, int64_t ldb,
                     bool tb, void *packed);
    int64_t (*pack_q)(mt_device *d, int bits, int64_t k, int64_t n, const void *bq, int64_t ldb,
                      bool tb, float qb, void *packed);
    /* Columns cols[0..n_sel) of a packed B as a packed B (kcpu_pack_select);
    ** NULL: not available (shortlists then select fp32 columns). */
    void (*pack_select)(mt_device *d, const void *packed, int64_t n_sel, const int32_t *cols,
                        void *out);
    size_t (*igemm_scratch_bytes)(mt_device *d, int bits, int64_t m, int64_t k);
    /* C[m,n] (ldc) = dequant(quant(A) . packed) + bias (+ res [m, n] with
    ** row stride ldc, or NULL); A [m,k] (lda).  relu: max(., 0) after the
    ** bias (not with res).  a_maxabs: max|A| when known (>= 0; int8), else
    ** < 0; c_maxabs: where to put max|C| (int8), or NULL
    ** (kcpu_gemm_int_max). */
    void (*igemm)(mt_device *d, int bits, int64_t m, const float *a, int64_t lda,
                  const void *packed, const float *bias, bool relu, const float *res, float *c,
                  int64_t ldc, void *scratch, float a_maxabs, float *c_maxabs);
    /* igemm in two halves (kcpu_gemm_int_quant, _prepared): A quantized
    ** into a scratch of igemm_scratch_bytes (returns qa), then any number of
    ** products with it.  NULL: not supported. */
    float (*igemm_quant)(mt_device *d, int bits, int64_t m, int64_t k, const float *a, int64_t lda,
                         void *scratch);
    void (*igemm_prepared)(mt_device *d, int bits, int64_t m, void *scratch, float qa,
                           const void *packed, const float *bias, bool relu, const float *res,
                           float *c, int64_t ldc);
    /* Each row's argmax of igemm's C + skip (kcpu_gemm_int_argmax: idx, val
    ** [m]; skip [n] or NULL) without writing C; NULL: not supported (beam 1
    ** then reads the logits). */
    size_t (*igemm_argmax_scratch_bytes)(mt_device *d, int bits, int64_t m, int64_t k, int64_t n);
    void (*igemm_argmax)(mt_device *d, int bits, int64_t m, const float *a, int64_t lda,
                         const void *packed, const float *bias, const float *skip, int32_t *idx,
                         float *val, void *scratch);
    /* A beam step's output layer, the k best log-probabilities of each row
    ** of C = A.B + bias and their columns, without C in memory
    ** (kcpu_gemm_int_topk); NULL: not supported. */
    size_t (*igemm_topk_scratch_bytes)(mt_device *d, int bits, int64_t m, int64_t k, int64_t n);
    void (*igemm_topk)(mt_device *d, int bits, int64_t m, const float *a, int64_t lda,
                       const void *packed, const float *bias, int32_t top, int32_t *idx,
                       float *logp, void *scratch);

    /* ---- optimizer */
    void (*adam_f32)(mt_device *d, int64_t n, float *w, const float *g, float *m, float *v,
                     float lr, float b1, float b2, float eps, float wd, float c1, float c2);
    void (*smooth_f32)(mt_device *d, int64_t n, const float *w, float *s, float beta);
    double (*sumsq_f32)(mt_device *d, int64_t n, const float *x);
} mt_device_ops;

/* Mirrors of the kcpu enums, so that engine code need not include kcpu.h. */
enum { MT_UN_RELU = 0, MT_UN_SWISH, MT_UN_GELU, MT_UN_TANH, MT_UN_SIGMOID, MT_UN_EXP, MT_UN_LOG,
       MT_UN_SQRT, MT_UN_NEG, MT_UN_SCALE, MT_UN_ADD_SCALAR };
enum { MT_BIN_ADD = 0, MT_BIN_SUB, MT_BIN_MUL, MT_BIN_DIV };
enum { MT_RED_SUM = 0, MT_RED_MEAN, MT_RED_MAX };

struct mt_device {
    const mt_device_ops *ops;
    int kind; /* 0 CPU, 1 CUDA */
    int ordinal;
    void *impl; /* backend state (cuBLAS handle, stream) */
};

#endif /* MT_DEVICE_H */
