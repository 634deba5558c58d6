/*
** kcpu_attn_job.h: the job of the fused attention (kcpu_attn_rows), plain
** data that the engine's device layer fills (engine/device.h includes this
** header and no other of kernels/) and the kernels read.
*/
#ifndef KCPU_ATTN_JOB_H
#define KCPU_ATTN_JOB_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Attention of n query rows, each over keys and values of its own: scores,
** additive mask, softmax and the weighted sum of the values in one kernel,
** instead of batched products per row and head with a softmax between
** them.  For row i and head h, with r = ids ? ids[i] : i (its row of the
** history) and its key count tn = lens ? lens[i] : th:
**   keys    K[t] = kh + r hist_row_stride + h hist_head_stride
**                     + t hist_pos_stride   (t < tn, dk floats each), then
**           kr + ((i heads + h) tr + t - tn) dk   (tn <= t < tn + tr)
**           or, keys transposed (kt_elem_stride > 0), element c of K[t]
**           (t < th) at kh + r kt_row_stride + h kt_head_stride
**                           + c kt_elem_stride + t
**   values  V[t] likewise from vh, vr (always by the hist_ strides)
**   s[t] = alpha q[i, h dk .. h dk + dk) . K[t] + (mask ? mask[r (th + tr) + t] : 0)
**   o[i, h dk .. h dk + dk) = sum_t softmax(s)[t] V[t]
** q row i at q + i ldq, o row i at o + i ldo, heads dk apart (merged).
** Strides (in elements) of the usual layouts:
**   decoding caches [n0, heads, th, dk]: hist_row_stride = heads th dk,
**     hist_head_stride = th dk, hist_pos_stride = dk;
**   rows of a packed batch [T, heads dk] over their sentence's rows (ids =
**     the sentence's first row, lens its length): hist_row_stride =
**     hist_pos_stride = heads dk, hist_head_stride = dk;
**   a cross-attention context with transposed keys [n0, heads, dk, th] and
**     values [n0, th, heads dk]: kt_row_stride = heads dk th,
**     kt_head_stride = dk th, kt_elem_stride = th; hist_row_stride = th
**     heads dk, hist_head_stride = dk, hist_pos_stride = heads dk;
**   a frozen history with transposed keys and values [n0, heads, th, dk]:
**     the same kt_ strides, the values as decoding caches.
** kr, vr [n, heads, tr, dk] (unused when tr = 0).  mask: with lens NULL
** only.  The caller checks that ids, lens and strides stay inside the
** arrays; tn + tr >= 1 for every row.  scratch:
** kcpu_attn_scratch_floats(heads, dk, th + tr) floats (th: the largest
** tn).  No allocation; o must not alias the inputs.
** Rows run one at a time: the scores of all its heads, then their
** softmaxes (kcpu_softmax_fwd's max, exp, sum, 1/sum), then the weighted
** sums, so that the heads' independent chains overlap.  With transposed
** keys, a run of up to 4 rows with one id (a sentence's hypotheses) scores
** together: each 16 keys' row of K^T is loaded once for all of them, and
** a score is a sum of broadcast products (no horizontal sums).  Dot
** products and sums run in another order than the unfused ops: results
** agree with them to rounding.
** Half-precision history: with transposed keys and kh_f16 set, the keys
** and values t < tn are IEEE binary16 at kh_f16 and vh_f16 (the same
** strides, in elements; kh and vh unused), widened to f32 as they are read
** (exactly: every binary16 is a float); kr, vr, q and o stay f32.  Half the
** bytes of what a decoding step reads most (the context and the frozen
** history).
** starts: rows at their own positions (top-up batching) attend only to keys
** starts[i] .. tn + tr - 1, the earlier ones are another row's or padding:
** the softmax and the weighted sum skip them (as a mask of -inf would, but
** without their work); the scores of a run are still computed for all. */
typedef struct kcpu_attn_job {
    /* n query rows of heads heads, dk elements each (dk apart in q and o);
    ** th history positions (with lens: the most any row has), tr recent
    ** positions of every row (kr, vr; 0: none); scores scaled by alpha */
    int64_t n, heads, dk, th, tr;
    float alpha;
    /* the queries, row i at q + i ldq */
    const float *q;
    int64_t ldq;
    /* the history's keys and values, f32 (or one of the typed forms below) */
    const float *kh, *vh;
    /* element strides of the history from row r to r + 1, head h to h + 1
    ** and position t to t + 1 (the values, and the keys unless transposed) */
    int64_t hist_row_stride, hist_head_stride, hist_pos_stride;
    /* keys transposed per head when kt_elem_stride > 0: element c of key t
    ** at r kt_row_stride + h kt_head_stride + c kt_elem_stride + t */
    int64_t kt_row_stride, kt_head_stride, kt_elem_stride;
    /* [n] the history row of query row i (NULL: row i) and its positions
    ** (NULL: th) */
    const int32_t *ids, *lens;
    /* recent keys and values [n, heads, tr, dk] */
    const float *kr, *vr;
    /* additive mask [., th + tr] by history row, or NULL (lens NULL only) */
    const float *mask;
    /* the outputs, row i at o + i ldo */
    float *o;
    int64_t ldo;
    /* kcpu_attn_scratch_floats(heads, dk, th + tr) floats */
    float *scratch;
    /* f16 history (keys transposed), or NULL */
    const uint16_t *kh_f16, *vh_f16;
    /* or NULL: row i's keys t < starts[i] are left out (0 <= starts[i] <
    ** tn + tr) */
    const int32_t *starts;
    /* bfloat16 pairs (below), or NULL */
    const uint32_t *kh_bf16_pairs, *vh_bf16_pairs;
    /* int8 keys (below; the values f16 at vh_f16), or NULL */
    const uint32_t *kh_q8;
} kcpu_attn_job;

/* int8 keys (kh_q8; keys transposed, dk % 4 == 0 up to KCPU_Q8_DK_MAX;
** values t < tn f16 at vh_f16, kh and kh_f16 unused): each key (row, head,
** position) is quantized on its own, scale = max |k_c| / 127, k8_c = k_c
** 127 / max rounded to nearest even (kcpu_q8_key).  32-bit units, [N0, H,
** dk / 4 + 1, Th]: unit r kt_row_stride + h kt_head_stride + c4
** kt_elem_stride + t (c4 < dk / 4) holds elements 4 c4 .. 4 c4 + 3 of key
** t, byte e = k8 + 128 (element 4 c4 + e); unit c4 = dk / 4 holds the
** key's scale (float bits); kt_head_stride = (dk / 4 + 1) kt_elem_stride.
** The query of each row and head is quantized the same way
** (kcpu_q8_query), and the score of key t < tn is (float)(sum_c q8_c k8_c)
** * (scale_t * qa), qa = alpha max |q| / 127: the integer sum is exact (a
** VNNI product of unsigned keys by signed query bytes, less 128 sum_c
** q8_c), so every variant gives these scores bit for bit.  A quarter of
** the key bytes of f32, half of f16, and a quarter of f16's instructions
** per key (AVX-512 VNNI).
** The largest head size of int8 keys (every variant: dk % 4 == 0 and dk <=
** KCPU_Q8_DK_MAX, the builders' check). */
enum { KCPU_Q8_DK_MAX = 256 };

/* bfloat16 pairs (kh_bf16_pairs, vh_bf16_pairs; kh, vh, kh_f16 and vh_f16
** unused; keys transposed, dk even): each 32-bit unit holds two bfloat16,
** the even one in the low half, so that one AVX-512 BF16 dot product
** (vdpbf16ps) takes two multiply-adds per lane with no conversion.  Keys
** pair elements: unit r kt_row_stride + h kt_head_stride + (c / 2)
** kt_elem_stride + t holds elements c & ~1 and c | 1 of key t ([N0, H, dk
** / 2, Th, 2]); values pair positions: unit r hist_row_stride + (t / 2)
** hist_pos_stride + h hist_head_stride + c holds element c of positions t
** & ~1 and t | 1 ([N0, ceil(Th / 2), H dk, 2]: hist_pos_stride = H dk,
** hist_head_stride = dk), a position past the last one zero.  The query
** and the softmax weights are rounded to bfloat16 (nearest even, as
** kcpu_f32_to_bf16) before their products; scores, softmax and sums stay
** f32 (the weights' sum, 1 / sum, from the unrounded weights).  The
** vectorized variant (kcpu_attn_bf16_fast: AVX-512 with BF16) takes rows
** without recent keys and dk of 16, 32, 48 or 64; the reference takes any
** (its recent keys and values stay f32). */

#ifdef __cplusplus
}
#endif
#endif /* KCPU_ATTN_JOB_H */
