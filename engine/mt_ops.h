/*
** mt_ops.h: the op builders of the graph (products, elementwise,
** normalisation, softmax and loss, shapes and copies, decoding caches,
** fused attention).  Part of the engine's public API (mt.h includes it).
*/
#ifndef MT_OPS_H
#define MT_OPS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mt_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------- ops
** Builders record a sticky error on the graph and return NULL on failure;
** given a NULL input they return NULL.  All ops compute in f32 unless
** stated.  "broadcast" = NumPy rules over trailing dimensions.            */

/* op(a).op(b).  a: [..., M, K] (leading dims flattened into rows) when b is
** 2-D [K, N];  trans flags transpose the last two dims. */
mt_node *mt_matmul(mt_graph *g, mt_node *a, mt_node *b, bool trans_a, bool trans_b);
/* a . op(B)[:, cols] for a 2-D B and cols i32 [n'] (a lexical shortlist of
** an output layer): mt_matmul of the selected columns (mt_index_select), or,
** on the integer path with a fixed int8/int16 gemm_type, the columns of the
** packed B (packed once) without quantizing them again; then the result
** equals the same columns of the whole integer product exactly.  bias: NULL
** or the n' biases of those columns ([n'] or [1, n']), added in the
** product's epilogue on the integer path.  cols NULL: every column (the
** whole product, bias [N] or [1, N] in the epilogue on the integer path;
** mt_add of mt_matmul otherwise). */
mt_node *mt_matmul_cols(mt_graph *g, mt_node *a, mt_node *b, bool trans_b, mt_node *cols,
                        mt_node *bias);
/* Beam 1's output layer (WNMT 2018 sec. 2.3): each row's argmax of
** mt_matmul_cols(a, b, trans_b, cols, bias) + skip as i32 [rows] (the first
** column of the largest, -1 where none is above -inf, NaN never wins: as
** mt_node_argmax of the product), from the integer GEMM's epilogue without
** writing the logits (kcpu_gemm_int_argmax).  skip: host [n'] of 0 or -inf
** (columns left out; copied into the graph only when this path is taken),
** or NULL.  NULL without an error where the product takes no fixed
** int8/int16 GEMM (float32, auto) or the device has no such epilogue: the
** caller then takes the logits and mt_node_argmax. */
mt_node *mt_matmul_cols_argmax(mt_graph *g, mt_node *a, mt_node *b, bool trans_b, mt_node *cols,
                               mt_node *bias, const float *skip);
/* A beam step's output layer: each row's k best log-softmax values of
** mt_matmul_cols(a, b, trans_b, cols, bias) and their columns, as f32
** [rows, 2k] (row r: the k values best first, then their columns as floats,
** -1 past the row's columns): mt_node_logsoftmax_topk of the product, bit
** for bit, from the integer GEMM in pieces whose logits stay in cache
** (kcpu_gemm_int_topk).  NULL without an error where the product takes
** no fixed int8/int16 GEMM or the device has no such path: the caller then
** takes the logits and mt_node_logsoftmax_topk. */
mt_node *mt_matmul_cols_topk(mt_graph *g, mt_node *a, mt_node *b, bool trans_b, mt_node *cols,
                             mt_node *bias, int32_t k);
/* Batched: a [B..., M, K], b [B..., K, N] (same leading dims), scaled. */
mt_node *mt_bmm(mt_graph *g, mt_node *a, mt_node *b, bool trans_a, bool trans_b, float alpha);
/* mt_bmm with the leading index of b picked by ids: a [N, J..., M, K], b [N0,
** J..., K, N], ids i32 [N] -> [N, J..., M, N], product i with b[ids[i]]. */
mt_node *mt_bmm_gather(mt_graph *g, mt_node *a, mt_node *b, mt_node *ids, bool trans_a,
                       bool trans_b, float alpha);
/* relu(x.W + b): on the integer path (mt_gemm_type) the relu is the
** GEMM's epilogue, no second pass over the output; otherwise mt_relu of
** mt_affine.  The same values either way. */
mt_node *mt_affine_relu(mt_graph *g, mt_node *x, mt_node *w, mt_node *b);
/* A hint before several products read x (a block's queries, keys and
** values): with gemm_type int8 or int16, x is quantized once, by a node of
** its own, for every integer product of x built next (the same values as
** each product quantizing it); otherwise nothing.  Returns x. */
mt_node *mt_gemm_share_input(mt_graph *g, mt_node *x);
/* (x.W + b) + res, res of the product's shape (a residual connection): on
** the integer path the sum is the GEMM's epilogue, no pass of its own;
** otherwise mt_add of mt_affine.  The same values either way. */
mt_node *mt_affine_add(mt_graph *g, mt_node *x, mt_node *w, mt_node *b, mt_node *res);
/* x.W + b with b broadcast over rows (Marian's affine). */
mt_node *mt_affine(mt_graph *g, mt_node *x, mt_node *w, mt_node *b);

mt_node *mt_add(mt_graph *g, mt_node *a, mt_node *b); /* broadcast */
mt_node *mt_sub(mt_graph *g, mt_node *a, mt_node *b);
mt_node *mt_mul(mt_graph *g, mt_node *a, mt_node *b);
mt_node *mt_div(mt_graph *g, mt_node *a, mt_node *b);
mt_node *mt_scale(mt_graph *g, mt_node *x, float s);      /* x * s */
mt_node *mt_add_scalar(mt_graph *g, mt_node *x, float s); /* x + s */
mt_node *mt_neg(mt_graph *g, mt_node *x);

mt_node *mt_relu(mt_graph *g, mt_node *x);
mt_node *mt_swish(mt_graph *g, mt_node *x); /* x * sigmoid(x)                */
mt_node *mt_gelu(mt_graph *g, mt_node *x);  /* Marian: x * sigmoid(1.702 x)  */
mt_node *mt_tanh(mt_graph *g, mt_node *x);
mt_node *mt_sigmoid(mt_graph *g, mt_node *x);
mt_node *mt_exp(mt_graph *g, mt_node *x);
mt_node *mt_ln(mt_graph *g, mt_node *x); /* natural log (mt_log is the logger) */
mt_node *mt_sqrt(mt_graph *g, mt_node *x);

mt_node *mt_softmax(mt_graph *g, mt_node *x);     /* over the last dim */
mt_node *mt_log_softmax(mt_graph *g, mt_node *x); /* over the last dim */
/* Per-row cross-entropy of logits [..., V] against labels (i32 node of the
** leading shape), with label smoothing ls: loss = -(1-ls) logp[y] - ls
** mean_v logp[v].  Result has the leading shape; multiply by a mask and sum
** for the batch cost. */
mt_node *mt_cross_entropy(mt_graph *g, mt_node *logits, mt_node *labels, float label_smoothing);
/* Layer norm over the last dim: gamma * (x - mean) / sqrt(var + eps) + beta,
** population variance, eps inside the sqrt (Marian).  gamma/beta [D] or
** [1, D]; either may be NULL. */
mt_node *mt_layer_norm(mt_graph *g, mt_node *x, mt_node *gamma, mt_node *beta, float eps);
/* mt_layer_norm(x + res): one node reading both (inference; where a gradient
** is wanted or the device lacks it, the two nodes).  Same shapes. */
mt_node *mt_add_layer_norm(mt_graph *g, mt_node *x, mt_node *res, mt_node *gamma, mt_node *beta,
                           float eps);
/* Inverted dropout with probability p (identity when not training or p=0). */
mt_node *mt_dropout(mt_graph *g, mt_node *x, float p);
/* y = x where mask != 0, value where mask == 0 (mask broadcast to x). */
mt_node *mt_masked_fill(mt_graph *g, mt_node *x, mt_node *mask, float value);
/* Marian's highway: sigmoid(t) * y + (1 - sigmoid(t)) * x. */
mt_node *mt_highway(mt_graph *g, mt_node *y, mt_node *x, mt_node *t);

mt_node *mt_reshape(mt_graph *g, mt_node *x, mt_shape shape);   /* one dim may be -1 */
mt_node *mt_transpose(mt_graph *g, mt_node *x, int d0, int d1); /* swap two axes */
mt_node *mt_permute(mt_graph *g, mt_node *x, const int *perm);  /* perm[ndim] */
/* Concatenation and slicing: f32, f16, bfloat16, or int8 keys (bytes as they are). */
mt_node *mt_concat(mt_graph *g, mt_node *const *xs, int n, int axis);
mt_node *mt_slice(mt_graph *g, mt_node *x, int axis, int64_t start, int64_t len);
/* Embedding lookup: rows of table [V, D] at ids (i32, any shape S) -> [S..., D].
** Backward scatter-adds into the table's gradient. */
mt_node *mt_gather_rows(mt_graph *g, mt_node *table, mt_node *ids);
/* Selects entries along axis by ids (i32 1-D): beam reordering.  f32, or
** f16, bfloat16 and int8 keys (no gradient). */
mt_node *mt_index_select(mt_graph *g, mt_node *x, int axis, mt_node *ids);
/* x converted to float16 (round to nearest even, +-inf beyond the range)
** or bfloat16 (nearest even, subnormals to zero), or from either to
** float32 (exact); the same dtype: x itself.  Inference only (an input that
** wants a gradient is refused).  Storage of decoding caches
** (mt_decode_params.caches); no other op computes on f16 or
** bfloat16 values except mt_attn_rows_kt, which reads its keys and values
** so. */
mt_node *mt_cast(mt_graph *g, mt_node *x, mt_dtype dtype);
/* x [..., 2, L] float32 as bfloat16 pairs [..., L, 2]: y[..., i, z] =
** x[..., z, i] rounded as mt_cast does (the layout of the fused attention's
** bfloat16 keys and values, kcpu_attn_job.h).  Inference only. */
mt_node *mt_cast_pairs(mt_graph *g, mt_node *x);
/* A decoding cache extended by one position in one copy: cache [N0, A, T, B],
** ids i32 [N] (NULL: N = N0, row i is row i), 0 <= off <= T, cur [N, A, 1, B]
** -> [N, A, T - off + 1, B] = concat(slice(index_select(cache, 0, ids), 2, off,
** T - off), cur, 2): beam reordering, dropping positions that are padding
** for every row, and appending this step's keys or values at once. */
mt_node *mt_cache_append(mt_graph *g, mt_node *cache, mt_node *ids, int64_t off, mt_node *cur);
/* Rows of variable length packed from the left (decoding caches of rows at
** their own positions, top-up batching): along axis (> 0) of b [N, ...,
** Lb, ...], row r of the result [N, ..., out_len, ...] is the first len[r]
** positions of row ids[r] of a [Na, ..., La, ...] (a NULL: none, and ids
** and len are not read), then positions start[r] .. Lb - 1 of row b_ids[r]
** of b (b_ids NULL: row r, N = b's rows), then zeros.  ids, len, start,
** b_ids i32 [N] (checked at forward: len[r] <= La, start[r] <= Lb, the
** row's total <= out_len, the ids inside a and b); len NULL: every row
** takes all La positions, start NULL: 0 (with both NULL and out_len = La +
** Lb, concat(index_select(a, 0, ids), index_select(b, 0, b_ids), axis) in
** one copy).  f32 or f16 (a and b alike); inference only. */
mt_node *mt_pack_rows(mt_graph *g, mt_node *a, mt_node *ids, mt_node *len, mt_node *b,
                      mt_node *b_ids, mt_node *start, int axis, int64_t out_len);
/* mt_pack_rows(a, ids, len, keys, b_ids, start, 3, out_len) where keys is b f32
** [N, H, Lb, dk] with its last two axes swapped and converted to f16, a
** f16 [Na, H, dk, La] (a decoder's self-attention history, keys transposed
** per head): the same bytes in one op (kcpu_fold_keys).  Inference only;
** mt_pack_rows_kt_supported: the device has it vectorized (else the three
** ops are as fast). */
mt_node *mt_pack_rows_kt(mt_graph *g, mt_node *a, mt_node *ids, mt_node *len, mt_node *b,
                         mt_node *b_ids, mt_node *start, int64_t out_len);
bool mt_pack_rows_kt_supported(const mt_graph *g);
/* mt_pack_rows_kt into int8 keys (kcpu_attn_job.h: kh_q8), a int8 [Na,
** H, dk/4 + 1, La, 4] or NULL, y int8 [N, H, dk/4 + 1, out_len, 4]: the
** history's units as they are, b's keys quantized per key.  Supported where
** the device has the fold and dk is a multiple of 4 up to 256. */
mt_node *mt_pack_rows_kq(mt_graph *g, mt_node *a, mt_node *ids, mt_node *len, mt_node *b,
                         mt_node *b_ids, mt_node *start, int64_t out_len);
bool mt_pack_rows_kq_supported(const mt_graph *g, int64_t dk);
/* int8 keys x [..., dk/4 + 1, L, 4] -> f32 [..., dk, L]: each key's
** elements times its scale (what the fused attention's scores use), for
** the composed ops.  Inference only. */
mt_node *mt_keys_q8_f32(mt_graph *g, mt_node *x);
/* Reductions over one axis (negative counts from the end), keeping it as 1. */
mt_node *mt_sum(mt_graph *g, mt_node *x, int axis);
mt_node *mt_mean(mt_graph *g, mt_node *x, int axis);
mt_node *mt_max(mt_graph *g, mt_node *x, int axis);
mt_node *mt_sum_all(mt_graph *g, mt_node *x); /* scalar [1] */

/* Fused multi-head attention convenience builder (no projections):
** q [B, Tq, D], k and v [B, Tk, D], optional additive mask broadcastable to
** [B, heads, Tq, Tk] (0 keep, -99999999 drop, Marian's transposedLogMask).
** Heads are contiguous blocks of D/heads.  Returns [B, Tq, D]; when
** weights_out is not NULL it receives the softmax weights [B, H, Tq, Tk]. */
mt_node *mt_attention(mt_graph *g, mt_node *q, mt_node *k, mt_node *v, mt_node *mask, int heads,
                      mt_node **weights_out);
/* Fused attention of one query position per row (decoding steps; inference
** only, no backward): q [N, 1, D] or [N, D] (heads merged, D = H dk); keys
** and values kh, vh [N0, H, Th, dk] (or [N0, Th, D]: heads not split, read
** in place), row ids[i] for query row i (ids i32 [N], NULL: row i, N0 = N),
** followed by the row's own kr, vr [N, H, Tr, dk] (both NULL: none);
** additive mask [N0, 1, 1, Th + Tr] going with the rows of kh (NULL:
** none).  Returns softmax(alpha q K^T + mask) V per head, the
** shape of q.  The same values as mt_bmm_gather / mt_bmm, mt_add, mt_softmax
** and the weighted sums, to rounding, without their intermediate tensors.
** Fails with MT_ERR_UNSUPPORTED where the device has no such kernel:
** mt_attn_rows_supported says so beforehand. */
mt_node *mt_attn_rows(mt_graph *g, mt_node *q, mt_node *kh, mt_node *vh, mt_node *ids, mt_node *kr,
                      mt_node *vr, mt_node *mask, int heads, float alpha);
/* The same fused attention for rows of a packed batch (sentences' real
** positions one after another, no padding): q [T, D] (heads merged), row i
** over rows start[i] .. start[i] + len[i] - 1 of k, v [T0, D] (its
** sentence); start, len i32 [T], 1 <= len[i] <= max_len.  No mask. */
mt_node *mt_attn_spans(mt_graph *g, mt_node *q, mt_node *k, mt_node *v, mt_node *start,
                       mt_node *len, int64_t max_len, int heads, float alpha);
/* mt_attn_rows with the keys transposed per head, kt [N0, H, dk, Th] (a
** context or history kept so: the kernel scores 16 positions per vector,
** and a run of rows with one id together), values [N0, H, Th, dk] or [N0,
** Th, D]; the recent kr, vr and the mask as in mt_attn_rows.  kt and vh may
** both be f16 (mt_cast; widened as they are read), or kt int8 keys [N0, H,
** dk/4 + 1, Th, 4] (mt_pack_rows_kq; dk a multiple of 4 up to 256) with
** vh f16. */
mt_node *mt_attn_rows_kt(mt_graph *g, mt_node *q, mt_node *kt, mt_node *vh, mt_node *ids,
                         mt_node *kr, mt_node *vr, mt_node *mask, int heads, float alpha);
/* mt_attn_rows_kt for rows at their own positions (top-up batching), no
** mask: spans i32 [2, N]; row i reads the first spans[0][i] <= Th positions
** of its history row, then its Tr recent ones, and of those keys only
** spans[1][i] .. spans[0][i] + Tr - 1 (the earlier ones are padding: left
** out as if masked, without their work).  Checked at forward. */
mt_node *mt_attn_rows_kt_spans(mt_graph *g, mt_node *q, mt_node *kt, mt_node *vh, mt_node *ids,
                               mt_node *kr, mt_node *vr, mt_node *spans, int heads, float alpha);
bool mt_attn_rows_supported(const mt_graph *g);

#ifdef __cplusplus
}
#endif
#endif /* MT_OPS_H */
