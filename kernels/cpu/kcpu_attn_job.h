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
** them.  For row i and head h, with r = ids ? ids[i] : i and its key count
** tn = lens ? lens[i] : th:
**   keys    K[t] = kh + r sr + h sh + t st   (t < tn, dk floats each), then
**           kr + ((i heads + h) tr + t - tn) dk   (tn <= t < tn + tr)
**           or, with ksc > 0 (keys transposed), element c of K[t]
**           (t < th) at kh + r ksr + h ksh + c ksc + t
**   values  V[t] likewise from vh, vr (always by sr, sh, st)
**   s[t] = alpha q[i, h dk .. h dk + dk) . K[t] + (mask ? mask[r (th + tr) + t] : 0)
**   o[i, h dk .. h dk + dk) = sum_t softmax(s)[t] V[t]
** q row i at q + i ldq, o row i at o + i ldo, heads dk apart (merged).
** Decoding caches [n0, heads, th, dk]: sr = heads th dk, sh = th dk, st =
** dk.  Rows of a packed batch [T, heads dk] over their sentence's rows
** (ids = the sentence's first row, lens its length): sr = st = heads dk,
** sh = dk.  A cross-attention context with transposed keys [n0, heads, dk,
** th] and values [n0, th, heads dk]: ksr = heads dk th, ksh = dk th, ksc =
** th; sr = th heads dk, sh = dk, st = heads dk.  A frozen history with
** transposed keys and values [n0, heads, th, dk]: the same k strides, v as
** decoding caches.  kr, vr [n, heads, tr, dk]
** (unused when tr = 0).  mask: with lens NULL only.  The caller checks that
** ids, lens and strides stay inside the arrays; tn + tr >= 1 for every
** row.  scratch: kcpu_attn_scratch_floats(heads, dk, th + tr) floats (th: the
** largest tn).  No allocation; o must not alias the inputs.
** Rows run one at a time: the scores of all its heads, then their
** softmaxes (kcpu_softmax_fwd's max, exp, sum, 1/sum), then the weighted
** sums, so that the heads' independent chains overlap.  With transposed
** keys, a run of up to 4 rows with one id (a sentence's hypotheses) scores
** together: each 16 keys' row of K^T is loaded once for all of them, and
** a score is a sum of broadcast products (no horizontal sums).  Dot
** products and sums run in another order than the unfused ops: results
** agree with them to rounding.
** Half-precision history: with transposed keys (ksc > 0) and kh16 set, the
** keys and values t < tn are IEEE binary16 at kh16 and vh16 (the same
** strides, in elements; kh and vh unused), widened to f32 as they are read
** (exactly: every binary16 is a float); kr, vr, q and o stay f32.  Half the
** bytes of what a decoding step reads most (the context and the frozen
** history, from L3 at long lengths and large batches).
** starts: rows at their own positions (top-up batching) attend only to keys
** starts[i] .. tn + tr - 1, the earlier ones are another row's or padding:
** the softmax and the weighted sum skip them (as a mask of -inf would, but
** without their work); the scores of a run are still computed for all. */
typedef struct kcpu_attn_job {
    int64_t n, heads, dk, th, tr;
    float alpha;
    const float *q;
    int64_t ldq;
    const float *kh, *vh;
    int64_t sr, sh, st;
    int64_t ksr, ksh, ksc;
    const int32_t *ids, *lens;
    const float *kr, *vr;
    const float *mask;
    float *o;
    int64_t ldo;
    float *scratch;
    const uint16_t *kh16, *vh16; /* f16 history (ksc > 0), or NULL */
    const int32_t *starts;       /* or NULL: row i's keys t < starts[i] are left
                                    out (0 <= starts[i] < tn + tr)          */
    const uint32_t *khp, *vhp;   /* bfloat16 pairs (below), or NULL         */
    const uint32_t *khq;         /* int8 keys (below, with vh16), or NULL   */
} kcpu_attn_job;

/* int8 keys (khq; ksc > 0, dk % 4 == 0 up to KCPU_Q8_DK_MAX; values t < tn f16 at vh16,
** kh and kh16 unused): each key (row, head, position) is quantized on its
** own, scale = max |k_c| / 127, k8_c = k_c 127 / max rounded to nearest
** even (kcpu_q8_key).  32-bit units, [N0, H, dk / 4 + 1, Th]: unit r ksr + h
** ksh + c4 ksc + t (c4 < dk / 4) holds elements 4 c4 .. 4 c4 + 3 of key t,
** byte e = k8 + 128 (element 4 c4 + e); unit c4 = dk / 4 holds the key's
** scale (float bits); ksh = (dk / 4 + 1) ksc.  The query of each row and
** head is quantized the same way (kcpu_q8_query), and the score of key t <
** tn is (float)(sum_c q8_c k8_c) * (scale_t * qa), qa = alpha max |q| / 127:
** the integer sum is exact (a VNNI product of unsigned keys by signed
** query bytes, less 128 sum_c q8_c), so every variant gives these scores
** bit for bit.  A quarter of the key bytes of f32, half of f16, and a
** quarter of f16's instructions per key (AVX-512 VNNI).
** The largest head size of int8 keys (every variant: dk % 4 == 0 and dk <=
** KCPU_Q8_DK_MAX, the builders' check). */
enum { KCPU_Q8_DK_MAX = 256 };

/* bfloat16 pairs (khp, vhp; kh, vh, kh16 and vh16 unused; ksc > 0, dk
** even): each 32-bit unit holds two bfloat16, the even one in the low
** half, so that one AVX-512 BF16 dot product (vdpbf16ps) takes two
** multiply-adds per lane with no conversion.  Keys pair elements: unit
** r ksr + h ksh + (c / 2) ksc + t holds elements c & ~1 and c | 1 of key t
** ([N0, H, dk / 2, Th, 2]); values pair positions: unit r sr + (t / 2) st +
** h sh + c holds element c of positions t & ~1 and t | 1 ([N0, ceil(Th /
** 2), H dk, 2]: st = H dk, sh = dk), a position past the last one zero.
** The query and the softmax weights are rounded to bfloat16 (nearest
** even, as kcpu_f32_to_bf16) before their products; scores, softmax and
** sums stay f32 (the weights' sum, 1 / sum, from the unrounded weights).
** The vectorized variant (kcpu_attn_bf16_fast: AVX-512 with BF16) takes
** rows without recent keys and dk of 16, 32, 48 or 64; the reference
** takes any (its recent keys and values stay f32). */

#ifdef __cplusplus
}
#endif
#endif /* KCPU_ATTN_JOB_H */
