/*
** test_attn.c: the fused decoding attention (kcpu_attn_rows, kernels/cpu/
** attn*.c) against a double-precision evaluation of its definition, for
** the scalar reference and every ISA variant this machine has
** (kcpu_isa_force): head sizes around the vector widths (1 .. 96), 1 to 8
** heads, history and recent lengths from 0 to 40 (16- and 8-key blocks and
** their tails), rows picked by ids with repeats or in order, masks with
** masked-out (-1e9) positions, strided q and o.  The gaps between the
** output rows and the scratch beyond th + tr + 16 floats must stay as they
** were.  Tolerance: 2e-5 (1 + |want|) per output, with weights summing to 1
** and inputs in [-2, 2].
** The graph op mt_attn_rows against the ops it replaces in a decoding step
** (mt_bmm_gather / mt_bmm, mt_concat, mt_add of the mask picked by the ids,
** mt_softmax, the two weighted sums), and its refusals: shapes, an id out of
** range at forward, an input that wants a gradient.  mt_attn_spans (packed
** sentences) against mt_attention of each sentence alone, and its refusals:
** a span past the rows, an empty span, one longer than max_len.
** Rows at their own positions (lens, starts: top-up batching over a frozen
** history packed from the left): each row's own history length and its
** keys from starts[i] on, in every ISA against the double evaluation over
** those keys only (a start at 0, in the history, at the first recent
** position and at the last key), and the graph op mt_attn_rows_kt_spans
** against the composed ops with the other keys masked, and its refusal of a
** start past the keys.
** Half-precision histories (kh_f16, vh_f16: contexts and frozen histories with
** transposed keys in f16): the kernels against the double evaluation of
** the f16 values, the op on mt_cast inputs against the composed ops on the
** same values widened back, and the refusal of keys and values of two
** dtypes.
*/
#include "harness.h"
#include "test_util.h"
#include "kcpu_impl.h"
#include "mt.h"
#include "mt_base.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOL 2e-5
/* bfloat16 histories: each weight rounded to 8 significant bits (relative
** error <= 2^-9) moves an output by up to 2^-9 max |v| = 2^-8 */
#define TOL_BF16 6e-3
#define SENTINEL -12345.0f

static const char *isa_tag = "?";
static double worst, worst_bf16;

static float *frand(int64_t n) {
    float *p = mt_try_malloc(sizeof(float) * (size_t)(n ? n : 1));
    if (!p) exit(2);
    return test_fill_rand(p, n, -2.0f, 2.0f);
}

static int irand(int n) { return (int)((test_rng_next() >> 33) % (uint64_t)n); }

/* Element off of a history array (f16 when the job has kh_f16). */
static double hist_at(const kcpu_attn_job *j, bool values, int64_t off) {
    if (values ? j->vh_f16 != NULL : j->kh_f16 != NULL)
        return mt_f16_to_f32((values ? j->vh_f16 : j->kh_f16)[off]);
    return (values ? j->vh : j->kh)[off];
}

/* Element c of history key (values: value) t of id r, head h, of a job in
** bfloat16 pairs (kcpu.h: keys pair elements, values pair positions). */
static double pair_at(const kcpu_attn_job *j, bool values, int64_t r, int64_t h, int64_t t,
                      int64_t c) {
    uint32_t u = values ? j->vh_bf16_pairs[r * j->hist_row_stride + (t / 2) * j->hist_pos_stride +
                                           h * j->hist_head_stride + c]
                        : j->kh_bf16_pairs[r * j->kt_row_stride + h * j->kt_head_stride +
                                           (c / 2) * j->kt_elem_stride + t];
    return kcpu_bf16_val((uint16_t)((values ? t & 1 : c & 1) ? u >> 16 : u & 0xffffu));
}

/* int8 keys as kcpu.h defines them, written out here: x * (127 / max
** |x|) in float, clamped to [-127, 127], rounded half to even
** (nearbyintf in the default mode); returns the scale max / 127. */
static float spec_q8(const float *x, int64_t n, int32_t *x8) {
    float mx = 0.0f;
    for (int64_t c = 0; c < n; c++)
        mx = fabsf(x[c]) > mx ? fabsf(x[c]) : mx;
    float inv = mx > 0.0f ? 127.0f / mx : 0.0f;
    for (int64_t c = 0; c < n; c++)
        x8[c] = (int32_t)nearbyintf(fminf(fmaxf(x[c] * inv, -127.0f), 127.0f));
    return mx / 127.0f;
}

/* The score of int8 key t of row i (id r), head h, from the spec: the exact
** integer sum of the query's and the key's int8 elements, then
** (float)sum * (scale * qa), qa = alpha * the query's scale. */
static double spec_q8_score(const kcpu_attn_job *j, int64_t i, int64_t r, int64_t h, int64_t t) {
    int32_t q8[256];
    float qa = j->alpha * spec_q8(j->q + i * j->ldq + h * j->dk, j->dk, q8);
    const uint32_t *k = j->kh_q8 + r * j->kt_row_stride + h * j->kt_head_stride + t;
    int64_t sum = 0;
    for (int64_t c = 0; c < j->dk; c++)
        sum += (int64_t)q8[c] *
               ((int32_t)((k[(c / 4) * j->kt_elem_stride] >> (8 * (c % 4))) & 0xffu) - 128);
    float sc;
    memcpy(&sc, k + (j->dk / 4) * j->kt_elem_stride, sizeof sc);
    return (double)((float)sum * (sc * qa));
}

/* Double evaluation of row i, head h of job j into want[dk] (kcpu.h's
** definition; int8 keys: spec_q8_score). */
static void want_of(const kcpu_attn_job *j, int64_t i, int64_t h, double *want) {
    int64_t r = j->ids ? j->ids[i] : i, tn = j->lens ? j->lens[i] : j->th, tk = tn + j->tr;
    int64_t dk = j->dk, t0 = j->starts ? j->starts[i] : 0;
    double *s = malloc(sizeof(double) * (size_t)tk), mx = -INFINITY, sum = 0.0;
    const float *q = j->q + i * j->ldq + h * dk;
    for (int64_t t = t0; t < tk; t++) {
        if (j->kh_q8 && t < tn) {
            s[t] =
                spec_q8_score(j, i, r, h, t) + (j->mask ? j->mask[r * (j->th + j->tr) + t] : 0.0);
            mx = s[t] > mx ? s[t] : mx;
            continue;
        }
        double dot = 0.0;
        for (int64_t c = 0; c < dk; c++) {
            double k = t >= tn            ? j->kr[((i * j->heads + h) * j->tr + t - tn) * dk + c]
                       : j->kh_bf16_pairs ? pair_at(j, false, r, h, t, c)
                       : j->kt_elem_stride > 0
                           ? hist_at(j, false,
                                     r * j->kt_row_stride + h * j->kt_head_stride +
                                         c * j->kt_elem_stride + t)
                           : hist_at(j, false,
                                     r * j->hist_row_stride + h * j->hist_head_stride +
                                         t * j->hist_pos_stride + c);
            /* the query in bfloat16 against a bfloat16 history */
            double qc = j->kh_bf16_pairs && t < tn ? kcpu_bf16_val(kcpu_bf16_of(q[c])) : q[c];
            dot += qc * k;
        }
        s[t] = j->alpha * dot + (j->mask ? j->mask[r * (j->th + j->tr) + t] : 0.0);
        mx = s[t] > mx ? s[t] : mx;
    }
    for (int64_t t = t0; t < tk; t++) {
        s[t] = exp(s[t] - mx);
        sum += s[t];
    }
    for (int64_t c = 0; c < dk; c++) {
        double a = 0.0;
        for (int64_t t = t0; t < tk; t++) {
            const int64_t at = r * j->hist_row_stride + h * j->hist_head_stride +
                               t * j->hist_pos_stride + c; /* V[t] element c in the history */
            a += s[t] * (t < tn && j->kh_bf16_pairs ? pair_at(j, true, r, h, t, c)
                         : t < tn                   ? hist_at(j, true, at)
                                  : j->vr[((i * j->heads + h) * j->tr + t - tn) * dk + c]);
        }
        want[c] = a / sum;
    }
    free(s);
}

/* Runs j (o, scratch: fresh sentinels) and compares with want_of; the gaps
** after each output row and the scratch past heads (th + tr + 16) floats
** must keep their sentinels. */
static void check_job(kcpu_attn_job *j, int64_t d, const char *what) {
    int64_t ns = kcpu_attn_scratch_floats(j->heads, j->dk, j->th + j->tr) + 64, dk = j->dk;
    float *o = mt_try_malloc(sizeof(float) * (size_t)(j->n * j->ldo));
    float *scratch = mt_try_malloc(sizeof(float) * (size_t)ns);
    for (int64_t t = 0; t < j->n * j->ldo; t++)
        o[t] = SENTINEL;
    for (int64_t t = 0; t < ns; t++)
        scratch[t] = SENTINEL;
    j->o = o;
    j->scratch = scratch;
    kcpu_attn_rows(j);
    double *want = malloc(sizeof(double) * (size_t)dk);
    int bad = 0;
    for (int64_t i = 0; i < j->n; i++) {
        for (int64_t h = 0; h < j->heads; h++) {
            want_of(j, i, h, want);
            for (int64_t c = 0; c < dk; c++) {
                double got = o[i * j->ldo + h * dk + c],
                       e = fabs(got - want[c]) / (1 + fabs(want[c]));
                if (j->kh_bf16_pairs) { /* the weights rounded to bfloat16: TOL_BF16 */
                    worst_bf16 = e > worst_bf16 ? e : worst_bf16;
                    bad += !(e <= TOL_BF16);
                    continue;
                }
                worst = e > worst ? e : worst;
                bad += !(e <= TOL);
            }
        }
        for (int64_t c = d; c < j->ldo; c++)
            bad += o[i * j->ldo + c] != SENTINEL;
    }
    for (int64_t t = ns - 64; t < ns; t++)
        bad += scratch[t] != SENTINEL;
    CHECK(bad == 0, "[%s] %s: %d bad", isa_tag, what, bad);
    free(want);
    mt_free(o);
    mt_free(scratch);
}

/* Decoding caches [n0, heads, th, dk], rows picked by ids or in order. */
static void run_case(int64_t dk, int64_t heads, int64_t th, int64_t tr, bool use_ids, bool use_mask,
                     int64_t pad) {
    int64_t n = 1 + irand(5), n0 = use_ids ? 1 + irand(4) : n, d = heads * dk, tk = th + tr;
    int64_t ldq = d + pad;
    float *q = frand(n * ldq), *kh = frand(n0 * heads * th * dk), *vh = frand(n0 * heads * th * dk);
    float *kr = frand(n * heads * tr * dk), *vr = frand(n * heads * tr * dk);
    float *mask = frand(n0 * tk);
    int32_t ids[8];
    for (int64_t i = 0; i < n; i++)
        ids[i] = (int32_t)irand((int)n0);
    for (int64_t t = 0; t < n0 * tk; t++) /* 0 or -1e9, never all of a row */
        mask[t] = (t % tk) != 0 && irand(3) == 0 ? -1e9f : 0.0f;
    kcpu_attn_job j = {.n = n,
                       .heads = heads,
                       .dk = dk,
                       .th = th,
                       .tr = tr,
                       .alpha = 1.0f / sqrtf((float)dk),
                       .q = q,
                       .ldq = ldq,
                       .kh = kh,
                       .vh = vh,
                       .hist_row_stride = heads * th * dk,
                       .hist_head_stride = th * dk,
                       .hist_pos_stride = dk,
                       .ids = use_ids ? ids : NULL,
                       .kr = tr ? kr : NULL,
                       .vr = tr ? vr : NULL,
                       .mask = use_mask ? mask : NULL,
                       .ldo = d + pad};
    char what[160];
    snprintf(what, sizeof what, "attn dk %lld heads %lld th %lld tr %lld ids %d mask %d pad %lld",
             (long long)dk, (long long)heads, (long long)th, (long long)tr, use_ids, use_mask,
             (long long)pad);
    check_job(&j, d, what);
    mt_free(q);
    mt_free(kh);
    mt_free(vh);
    mt_free(kr);
    mt_free(vr);
    mt_free(mask);
}

/* Half of the jobs with transposed keys take their keys and values in f16
** (kh_f16, vh_f16; kh and vh NULL): the arrays converted (round to nearest
** even) into *k16, *v16, freed by the caller. */
static void maybe_f16(kcpu_attn_job *j, bool f16, int64_t nk, int64_t nv, uint16_t **k16,
                      uint16_t **v16) {
    *k16 = *v16 = NULL;
    if (!f16) return;
    *k16 = mt_try_malloc(sizeof(uint16_t) * (size_t)(nk ? nk : 1));
    *v16 = mt_try_malloc(sizeof(uint16_t) * (size_t)(nv ? nv : 1));
    if (!*k16 || !*v16) exit(2);
    for (int64_t t = 0; t < nk; t++)
        (*k16)[t] = mt_f32_to_f16(j->kh[t]);
    for (int64_t t = 0; t < nv; t++)
        (*v16)[t] = mt_f32_to_f16(j->vh[t]);
    j->kh_f16 = *k16;
    j->vh_f16 = *v16;
    j->kh = j->vh = NULL;
}

/* A cross-attention context with transposed keys [n0, heads, dk, th] and
** values [n0, th, heads dk]; rows in runs of one id (a sentence's
** hypotheses: 1 to 5 in a row, so runs of 1 to 4 and a split one). */
static void run_kt(int64_t dk, int64_t heads, int64_t th, bool use_mask, int kind) {
    int64_t n0 = 1 + irand(4), d = heads * dk, n = 0;
    int32_t ids[32], spans[64], slen[4], sst[4];
    bool f16 = kind == 1, bf16 = kind == 2, use_lens = bf16 && irand(2);
    for (int64_t r = 0; r < n0; r++) { /* each sentence's own length and first key (bf16) */
        slen[r] = use_lens && irand(2) ? 1 + irand((int)th) : (int32_t)th;
        sst[r] = use_lens && irand(2) ? irand((int)slen[r]) : 0;
    }
    for (int64_t r = 0; r < n0; r++)
        for (int64_t c = 1 + irand(5); c > 0 && n < 32; c--)
            ids[n++] = (int32_t)r;
    for (int64_t i = 0; i < n; i++) /* lens, then starts */
        spans[i] = slen[ids[i]], spans[n + i] = sst[ids[i]];
    float *q = frand(n * d), *kt = frand(n0 * heads * dk * th), *v = frand(n0 * th * d);
    float *mask = frand(n0 * th);
    for (int64_t t = 0; t < n0 * th; t++)
        /* each sentence's first key stays in: a window of masked keys only
        ** (-1e9 + score in float) has no scores left to compare */
        mask[t] = t % th != 0 && irand(3) == 0 && t % th != sst[t / th] ? -1e9f : 0.0f;
    kcpu_attn_job j = {.n = n,
                       .heads = heads,
                       .dk = dk,
                       .th = th,
                       .alpha = 1.0f / sqrtf((float)dk),
                       .q = q,
                       .ldq = d,
                       .kh = kt,
                       .vh = v,
                       .hist_row_stride = th * d,
                       .hist_head_stride = dk,
                       .hist_pos_stride = d,
                       .kt_row_stride = heads * dk * th,
                       .kt_head_stride = dk * th,
                       .kt_elem_stride = th,
                       .ids = ids,
                       .mask = use_mask ? mask : NULL,
                       .ldo = d};
    uint16_t *k16, *v16;
    maybe_f16(&j, f16, n0 * heads * dk * th, n0 * th * d, &k16, &v16);
    uint32_t *kp = NULL, *vp = NULL;
    if (bf16) { /* the f32 arrays as bfloat16 pairs (kcpu.h), the odd tail zero */
        int64_t tp = (th + 1) / 2;
        kp = calloc((size_t)(n0 * heads * (dk / 2) * th + 1), sizeof *kp);
        vp = calloc((size_t)(n0 * tp * d + 1), sizeof *vp);
        for (int64_t r = 0; r < n0; r++)
            for (int64_t h = 0; h < heads; h++)
                for (int64_t c = 0; c < dk; c++)
                    for (int64_t t = 0; t < th; t++) {
                        uint32_t kb = kcpu_bf16_of(kt[((r * heads + h) * dk + c) * th + t]);
                        uint32_t vb = kcpu_bf16_of(v[(r * th + t) * d + h * dk + c]);
                        kp[((r * heads + h) * (dk / 2) + c / 2) * th + t] |= kb << (16 * (c & 1));
                        vp[(r * tp + t / 2) * d + h * dk + c] |= vb << (16 * (t & 1));
                    }
        j.kh_bf16_pairs = kp;
        j.vh_bf16_pairs = vp;
        j.kh = j.vh = NULL;
        j.kt_head_stride = dk / 2 * th;
        j.kt_row_stride = heads * j.kt_head_stride;
        j.hist_row_stride = tp * d;
        j.lens = use_lens ? spans : NULL;
        j.starts = use_lens ? spans + n : NULL;
    }
    char what[160];
    snprintf(what, sizeof what,
             "keys transposed dk %lld heads %lld th %lld rows %lld mask %d f16 %d bf16 %d spans %d",
             (long long)dk, (long long)heads, (long long)th, (long long)n, use_mask, f16, bf16,
             use_lens);
    check_job(&j, d, what);
    free(kp);
    free(vp);
    mt_free(k16);
    mt_free(v16);
    mt_free(q);
    mt_free(kt);
    mt_free(v);
    mt_free(mask);
}

/* n rows over a history of n0 ids: each row's id, a history length of its
** own (th, less, or none when there are tr recent keys), then a first key at
** 0, inside the history, at the first recent one, the last one, or
** anywhere. */
static void hist_rows(int64_t n, int64_t n0, int64_t th, int64_t tr, int32_t *ids, int32_t *lens,
                      int32_t *starts) {
    for (int64_t i = 0; i < n; i++) {
        ids[i] = (int32_t)irand((int)n0);
        int64_t tn = irand(3) == 0 ? th : irand((int)th + 1);
        if (tn == 0 && tr == 0) tn = th;
        int pick = irand(5);
        int64_t s0 = pick == 0   ? 0
                     : pick == 1 ? irand((int)(tn > 0 ? tn : 1))
                     : pick == 2 ? tn
                     : pick == 3 ? tn + tr - 1
                                 : irand((int)(tn + tr));
        lens[i] = (int32_t)tn;
        starts[i] = (int32_t)(s0 < tn + tr ? s0 : tn + tr - 1);
    }
}

/* A frozen self-attention history with transposed keys [n0, heads, dk, th]
** and values [n0, heads, th, dk], rows picked by ids, then each row's tr
** recent keys and values (not transposed). */
static void run_kt_hist(int64_t dk, int64_t heads, int64_t th, int64_t tr, bool f16,
                        bool use_starts) {
    int64_t n = 1 + irand(6), n0 = 1 + irand(6), d = heads * dk;
    int32_t ids[8], starts[8], lens[8];
    hist_rows(n, n0, th, tr, ids, lens, starts);
    float *q = frand(n * d), *kt = frand(n0 * heads * dk * th), *v = frand(n0 * heads * th * dk);
    float *kr = frand(n * heads * tr * dk), *vr = frand(n * heads * tr * dk);
    kcpu_attn_job j = {.n = n,
                       .heads = heads,
                       .dk = dk,
                       .th = th,
                       .tr = tr,
                       .alpha = 1.0f / sqrtf((float)dk),
                       .q = q,
                       .ldq = d,
                       .kh = kt,
                       .vh = v,
                       .hist_row_stride = heads * th * dk,
                       .hist_head_stride = th * dk,
                       .hist_pos_stride = dk,
                       .kt_row_stride = heads * dk * th,
                       .kt_head_stride = dk * th,
                       .kt_elem_stride = th,
                       .ids = ids,
                       .kr = tr ? kr : NULL,
                       .vr = tr ? vr : NULL,
                       .ldo = d,
                       .lens = use_starts ? lens : NULL,
                       .starts = use_starts ? starts : NULL};
    uint16_t *k16, *v16;
    maybe_f16(&j, f16, n0 * heads * dk * th, n0 * heads * th * dk, &k16, &v16);
    char what[160];
    snprintf(what, sizeof what,
             "history, keys transposed: dk %lld heads %lld th %lld tr %lld f16 %d starts %d",
             (long long)dk, (long long)heads, (long long)th, (long long)tr, f16, use_starts);
    check_job(&j, d, what);
    mt_free(k16);
    mt_free(v16);
    mt_free(q);
    mt_free(kt);
    mt_free(v);
    mt_free(kr);
    mt_free(vr);
}

static double worst_q8_logit; /* int8 keys: the largest score error */

/* A frozen history with int8 keys (kcpu_attn_job.h: kh_q8 [n0, heads, dk / 4 + 1, th]
** units, built here from f32 keys by spec_q8) and f16 values, rows by ids
** at their own lengths and starts (as run_kt_hist), then tr recent keys:
** against the double evaluation of the spec's scores (TOL), and against
** the attention of the f32 keys within the bound their scores' error gives. */
static void run_kt_q8(int64_t dk, int64_t heads, int64_t th, int64_t tr, bool use_starts) {
    int64_t n = 1 + irand(6), n0 = 1 + irand(6), d = heads * dk, d4 = dk / 4;
    int32_t ids[8], starts[8], lens[8], k8[256];
    hist_rows(n, n0, th, tr, ids, lens, starts);
    /* keys [n0, heads, th, dk] (one key's elements together) */
    float *q = frand(n * d), *kf = frand(n0 * heads * th * dk), *v = frand(n0 * heads * th * dk);
    float *kr = frand(n * heads * tr * dk), *vr = frand(n * heads * tr * dk);
    for (int64_t u = 0; u < n0 * heads * th; u++) /* keys of other magnitudes */
        for (int64_t c = 0; c < dk; c++)
            kf[u * dk + c] *= (float)(1 + u % 5) * 0.5f;
    uint32_t *kq = mt_try_malloc(sizeof(uint32_t) * (size_t)(n0 * heads * (d4 + 1) * th + 1));
    float *kt = mt_try_malloc(sizeof(float) * (size_t)(n0 * heads * dk * th + 1));
    uint16_t *v16 = mt_try_malloc(sizeof(uint16_t) * (size_t)(n0 * heads * th * dk + 1));
    if (!kq || !kt || !v16) exit(2);
    int bad = 0;
    for (int64_t rh = 0; rh < n0 * heads; rh++) {
        for (int64_t t = 0; t < th; t++) {
            const float *key = kf + (rh * th + t) * dk;
            float sc = spec_q8(key, dk, k8);
            uint8_t got[256];
            bad += kcpu_q8_key(key, dk, got) != sc; /* the kernels' helper = the spec */
            for (int64_t c = 0; c < dk; c++) {
                bad += got[c] != (uint8_t)(k8[c] + 128);
                kt[(rh * dk + c) * th + t] = key[c];
            }
            for (int64_t c4 = 0; c4 < d4; c4++) {
                uint32_t u = 0;
                for (int e = 0; e < 4; e++)
                    u |= (uint32_t)(uint8_t)(k8[4 * c4 + e] + 128) << (8 * e);
                kq[(rh * (d4 + 1) + c4) * th + t] = u;
            }
            memcpy(&kq[(rh * (d4 + 1) + d4) * th + t], &sc, sizeof sc);
        }
    }
    for (int64_t t = 0; t < n0 * heads * th * dk; t++)
        v16[t] = mt_f32_to_f16(v[t]);
    kcpu_attn_job j = {.n = n,
                       .heads = heads,
                       .dk = dk,
                       .th = th,
                       .tr = tr,
                       .alpha = 1.0f / sqrtf((float)dk),
                       .q = q,
                       .ldq = d,
                       .vh_f16 = v16,
                       .hist_row_stride = heads * th * dk,
                       .hist_head_stride = th * dk,
                       .hist_pos_stride = dk,
                       .kt_row_stride = heads * (d4 + 1) * th,
                       .kt_head_stride = (d4 + 1) * th,
                       .kt_elem_stride = th,
                       .kh_q8 = kq,
                       .ids = ids,
                       .kr = tr ? kr : NULL,
                       .vr = tr ? vr : NULL,
                       .ldo = d,
                       .lens = lens,
                       .starts = use_starts ? starts : NULL};
    char what[160];
    snprintf(what, sizeof what, "int8 keys: dk %lld heads %lld th %lld tr %lld starts %d",
             (long long)dk, (long long)heads, (long long)th, (long long)tr, use_starts);
    CHECK(bad == 0, "%s: kcpu_q8_key differs from the spec in %d places", what, bad);
    check_job(&j, d, what);
    /* the same rows over the f32 keys (transposed), the same f16 values:
    ** scores off by at most E (the largest of the row and head, in double)
    ** move each weight by a factor within exp(+-2 E), so an output by at
    ** most (exp(2 E) - 1) max |v| (2: inputs in [-2, 2]), plus TOL */
    kcpu_attn_job f = j;
    f.kh_q8 = NULL;
    f.kh = kt;
    f.kt_row_stride = heads * dk * th;
    f.kt_head_stride = dk * th;
    float *o2 = mt_try_malloc(sizeof(float) * (size_t)(n * d));
    float *scr =
        mt_try_malloc(sizeof(float) * (size_t)kcpu_attn_scratch_floats(heads, dk, th + tr));
    double *want = malloc(sizeof(double) * (size_t)dk);
    j.o = o2;
    j.scratch = scr; /* check_job's is freed */
    kcpu_attn_rows(&j);
    bad = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t h = 0; h < heads; h++) {
            double e_max = 0.0;
            for (int64_t t = j.starts ? j.starts[i] : 0; t < lens[i]; t++) {
                double dot = 0.0;
                for (int64_t c = 0; c < dk; c++)
                    dot += (double)q[i * d + h * dk + c] *
                           kf[((ids[i] * heads + h) * th + t) * dk + c];
                double e = fabs(spec_q8_score(&j, i, ids[i], h, t) - j.alpha * dot);
                e_max = e > e_max ? e : e_max;
            }
            worst_q8_logit = e_max > worst_q8_logit ? e_max : worst_q8_logit;
            want_of(&f, i, h, want);
            for (int64_t c = 0; c < dk; c++) {
                double e = fabs(o2[i * d + h * dk + c] - want[c]);
                bad += !(e <= (exp(2 * e_max) - 1) * 2.0 + TOL * (1 + fabs(want[c])));
            }
        }
    CHECK(bad == 0, "%s: %d outputs off the f32 keys' by more than their scores' error allows",
          what, bad);
    free(want);
    mt_free(o2);
    mt_free(scr);
    mt_free(kq);
    mt_free(kt);
    mt_free(v16);
    mt_free(q);
    mt_free(kf);
    mt_free(v);
    mt_free(kr);
    mt_free(vr);
}

/* kcpu_fold_keys into int8 keys: each row's lens[r] positions of its
** history row (every unit line, the scales' too) copied, then its recent
** keys from starts[r] on quantized per key as the spec says. */
static void test_fold_q8(void) {
    const int64_t heads = 3, dk = 20, d4 = dk / 4, la = 11, lb = 6, n = 5, na = 3;
    const int64_t l = la + lb;
    int32_t ids[5], lens[5], starts[5], rec_ids[5], k8[256];
    uint32_t *hist = mt_try_malloc(sizeof(uint32_t) * (size_t)(na * heads * (d4 + 1) * la));
    uint32_t *out = mt_try_malloc(sizeof(uint32_t) * (size_t)(n * heads * (d4 + 1) * l));
    float *rec = frand(n * heads * lb * dk);
    if (!hist || !out) exit(2);
    for (int64_t t = 0; t < na * heads * (d4 + 1) * la; t++)
        hist[t] = (uint32_t)(test_rng_next() >> 32);
    for (int64_t r = 0; r < n; r++) {
        ids[r] = (int32_t)irand((int)na);
        lens[r] = r == 0 ? 0 : (int32_t)irand((int)la + 1);
        starts[r] = (int32_t)irand((int)lb + 1);
        rec_ids[r] = (int32_t)(n - 1 - r);
    }
    memset(out, 0xab, sizeof(uint32_t) * (size_t)(n * heads * (d4 + 1) * l));
    kcpu_fold_job fj = {.n = n,
                        .heads = heads,
                        .dk = dk,
                        .la = la,
                        .ids = ids,
                        .lens = lens,
                        .rec = rec,
                        .rec_ids = rec_ids,
                        .lb = lb,
                        .starts = starts,
                        .l = l,
                        .histq = hist,
                        .outq = out};
    kcpu_fold_keys(&fj);
    int bad = 0;
    for (int64_t r = 0; r < n; r++)
        for (int64_t h = 0; h < heads; h++) {
            const uint32_t *y = out + (r * heads + h) * (d4 + 1) * l;
            for (int64_t c4 = 0; c4 <= d4; c4++)
                for (int64_t t = 0; t < lens[r]; t++)
                    bad += y[c4 * l + t] != hist[((ids[r] * heads + h) * (d4 + 1) + c4) * la + t];
            for (int64_t t = starts[r]; t < lb; t++) {
                const float *key = rec + ((rec_ids[r] * heads + h) * lb + t) * dk;
                float sc = spec_q8(key, dk, k8), got;
                int64_t p = lens[r] + t - starts[r];
                memcpy(&got, &y[d4 * l + p], sizeof got);
                bad += got != sc;
                for (int64_t c = 0; c < dk; c++)
                    bad += (int32_t)((y[(c / 4) * l + p] >> (8 * (c % 4))) & 0xffu) - 128 != k8[c];
            }
            /* past the row's positions: untouched */
            int64_t end = lens[r] + lb - starts[r];
            for (int64_t c4 = 0; c4 <= d4; c4++)
                for (int64_t t = end; t < l; t++)
                    bad += y[c4 * l + t] != 0xababababu;
        }
    CHECK(bad == 0, "fold into int8 keys: %d units differ from the spec", bad);
    mt_free(hist);
    mt_free(out);
    mt_free(rec);
}

/* Packed sentences [T0, heads dk]: each row over its sentence's rows
** (ids = the first row, lens = the length), keys heads dk apart. */
static void run_spans(int64_t dk, int64_t heads, int64_t n_sent) {
    int64_t d = heads * dk, t0 = 0, maxl = 0;
    int32_t first[8], len[8];
    for (int64_t s = 0; s < n_sent; s++) {
        len[s] = 1 + irand(s == 0 ? 40 : 20);
        first[s] = (int32_t)t0;
        t0 += len[s];
        maxl = len[s] > maxl ? len[s] : maxl;
    }
    float *q = frand(t0 * d), *k = frand(t0 * d), *v = frand(t0 * d);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)t0),
            *lens = malloc(sizeof(int32_t) * (size_t)t0);
    for (int64_t s = 0, i = 0; s < n_sent; s++)
        for (int32_t p = 0; p < len[s]; p++, i++)
            ids[i] = first[s], lens[i] = len[s];
    kcpu_attn_job j = {.n = t0,
                       .heads = heads,
                       .dk = dk,
                       .th = maxl,
                       .alpha = 1.0f / sqrtf((float)dk),
                       .q = q,
                       .ldq = d,
                       .kh = k,
                       .vh = v,
                       .hist_row_stride = d,
                       .hist_head_stride = dk,
                       .hist_pos_stride = d,
                       .ids = ids,
                       .lens = lens,
                       .ldo = d};
    char what[160];
    snprintf(what, sizeof what, "spans dk %lld heads %lld sentences %lld (longest %lld)",
             (long long)dk, (long long)heads, (long long)n_sent, (long long)maxl);
    check_job(&j, d, what);
    mt_free(q);
    mt_free(k);
    mt_free(v);
    free(ids);
    free(lens);
}

static void test_shapes(void) {
    static const int64_t dks[] = {1, 5, 8, 15, 16, 17, 24, 32, 33, 40, 48, 64, 72, 96};
    static const int64_t ths[] = {0, 1, 3, 8, 15, 16, 17, 31, 33, 40, 50, 64};
    static const int64_t trs[] = {0, 1, 2, 7, 16};
    for (size_t a = 0; a < sizeof dks / sizeof dks[0]; a++)
        for (size_t b = 0; b < sizeof ths / sizeof ths[0]; b++)
            for (size_t c = 0; c < sizeof trs / sizeof trs[0]; c++) {
                if (ths[b] + trs[c] == 0) continue;
                int64_t heads = 1 + irand(8);
                run_case(dks[a], heads, ths[b], trs[c], irand(2), irand(2), irand(2) ? 0 : 3);
            }
    for (size_t a = 0; a < sizeof dks / sizeof dks[0]; a++) {
        run_spans(dks[a], 1 + irand(8), 1 + irand(8));
        for (size_t b = 1; b < sizeof ths / sizeof ths[0]; b++) {
            if (dks[a] % 2 == 0) /* bfloat16 pairs: dk even */
                run_kt(dks[a], 1 + irand(8), ths[b] + (b == 9 ? 40 : 0), irand(2), 2);
            if (dks[a] % 4 == 0) /* int8 keys: dk a multiple of 4 */
                for (int st = 0; st < 2; st++)
                    run_kt_q8(dks[a], 1 + irand(8), ths[b] + (b == 9 ? 40 : 0), trs[irand(5)], st);
            for (int f16 = 0; f16 < 2; f16++) {
                run_kt(dks[a], 1 + irand(8), ths[b] + (b == 9 ? 40 : 0), irand(2), f16);
                for (int st = 0; st < 2; st++)
                    run_kt_hist(dks[a], 1 + irand(8), ths[b] + (b == 9 ? 40 : 0), trs[irand(5)],
                                f16, st);
            }
        }
    }
}

/* One masked-in position: its value comes out exactly (weight 1). */
static void test_one_position(void) {
    int64_t dk = 32, heads = 2, th = 20, tk = th;
    float *q = frand(heads * dk), *kh = frand(heads * th * dk), *vh = frand(heads * th * dk);
    float mask[20], o[64], scratch[4 * 2 * (20 + 64)];
    for (int t = 0; t < 20; t++)
        mask[t] = t == 7 ? 0.0f : -1e9f;
    kcpu_attn_job j = {.n = 1,
                       .heads = heads,
                       .dk = dk,
                       .th = th,
                       .alpha = 0.3f,
                       .q = q,
                       .ldq = heads * dk,
                       .kh = kh,
                       .vh = vh,
                       .hist_row_stride = heads * th * dk,
                       .hist_head_stride = th * dk,
                       .hist_pos_stride = dk,
                       .mask = mask,
                       .o = o,
                       .ldo = heads * dk,
                       .scratch = scratch};
    kcpu_attn_rows(&j);
    int bad = 0;
    for (int64_t h = 0; h < heads; h++)
        for (int64_t c = 0; c < dk; c++)
            bad += o[h * dk + c] != vh[(h * th + 7) * dk + c];
    CHECK(bad == 0, "[%s] attn: the only unmasked position's value, exactly (%d differ)", isa_tag,
          bad);
    (void)tk;
    mt_free(q);
    mt_free(kh);
    mt_free(vh);
}

/* ------------------------------------------------------------ graph op */

static mt_graph *new_graph(bool training) {
    mt_graph_params gp = mt_graph_default_params();
    gp.training = training;
    gp.workspace_bytes = 1 << 20;
    mt_graph *g = NULL;
    CHECK(mt_graph_init(NULL, gp, &g) == MT_OK, "mt_graph_init: %s", mt_errmsg());
    return g;
}

/* The decoding step's attention as separate ops (models/transformer.c
** attention_gather, with the mask rows picked as cross_block does). */
static mt_node *composed(mt_graph *g, mt_node *q, mt_node *kh, mt_node *vh, mt_node *ids,
                         mt_node *kr, mt_node *vr, mt_node *mask, int64_t h, float alpha) {
    static const int perm[4] = {0, 2, 1, 3};
    int64_t n = mt_node_shape(q).dim[0], d = mt_node_shape(q).dim[2], th = mt_node_shape(kh).dim[2];
    mt_node *qh = mt_permute(g, mt_reshape(g, q, mt_shape4(n, 1, h, d / h)), perm);
    mt_node *s = ids ? mt_bmm_gather(g, qh, kh, ids, false, true, alpha)
                     : mt_bmm(g, qh, kh, false, true, alpha);
    int64_t tr = kr ? mt_node_shape(kr).dim[2] : 0;
    if (kr) {
        mt_node *parts[2] = {s, mt_bmm(g, qh, kr, false, true, alpha)};
        s = mt_concat(g, parts, 2, 3);
    }
    if (mask) s = mt_add(g, s, ids ? mt_index_select(g, mask, 0, ids) : mask);
    mt_node *w = mt_softmax(g, s), *wh = kr ? mt_slice(g, w, 3, 0, th) : w;
    mt_node *o = ids ? mt_bmm_gather(g, wh, vh, ids, false, false, 1.0f)
                     : mt_bmm(g, wh, vh, false, false, 1.0f);
    if (kr) o = mt_add(g, o, mt_bmm(g, mt_slice(g, w, 3, th, tr), vr, false, false, 1.0f));
    return mt_reshape(g, mt_permute(g, o, perm), mt_shape3(n, 1, d));
}

static void op_case(int64_t n, int64_t n0, int64_t h, int64_t dk, int64_t th, int64_t tr,
                    bool use_ids, bool use_mask) {
    int64_t d = h * dk, tk = th + tr;
    float *q = frand(n * d), *kh = frand(n0 * h * th * dk), *vh = frand(n0 * h * th * dk);
    float *kr = frand(n * h * tr * dk), *vr = frand(n * h * tr * dk), *mask = frand(n0 * tk);
    for (int64_t t = 0; t < n0 * tk; t++)
        mask[t] = t % tk != 1 && irand(4) == 0 ? -1e9f : 0.0f;
    int32_t ids[16];
    for (int64_t i = 0; i < n; i++)
        ids[i] = (int32_t)irand((int)n0);
    float *got = mt_try_malloc(sizeof(float) * (size_t)(n * d)),
          *want = mt_try_malloc(sizeof(float) * (size_t)(n * d)),
          *got3 = mt_try_malloc(sizeof(float) * (size_t)(n * d));
    /* the same keys and values unsplit: [n0, th, h dk]; keys transposed
    ** per head: [n0, h, dk, th] */
    float *kh3 = frand(n0 * h * th * dk), *vh3 = frand(n0 * h * th * dk);
    float *kt = frand(n0 * h * th * dk), *gotk = mt_try_malloc(sizeof(float) * (size_t)(n * d));
    /* pass 4: keys (transposed) and values in f16; pass 5: the composed ops
    ** on the same values widened back to f32 */
    float *got16 = mt_try_malloc(sizeof(float) * (size_t)(n * d)),
          *want16 = mt_try_malloc(sizeof(float) * (size_t)(n * d));
    /* pass 6 (dk even): keys and values as bfloat16 pairs (mt_cast_pairs of
    ** the transposed keys and of the values, an odd last position paired
    ** with zeros); pass 7: the composed ops on the same values and queries
    ** widened back (the op also rounds the weights: TOL_BF16) */
    float *gotb = mt_try_malloc(sizeof(float) * (size_t)(n * d)),
          *wantb = mt_try_malloc(sizeof(float) * (size_t)(n * d));
    for (int64_t r = 0; r < n0; r++)
        for (int64_t hh = 0; hh < h; hh++)
            for (int64_t t = 0; t < th; t++)
                for (int64_t c = 0; c < dk; c++) {
                    kh3[(r * th + t) * d + hh * dk + c] = kh[((r * h + hh) * th + t) * dk + c];
                    vh3[(r * th + t) * d + hh * dk + c] = vh[((r * h + hh) * th + t) * dk + c];
                    kt[((r * h + hh) * dk + c) * th + t] = kh[((r * h + hh) * th + t) * dk + c];
                }
    for (int pass = 0; pass < (dk % 2 ? 6 : 8); pass++) {
        mt_graph *g = new_graph(false);
        mt_node *nq = mt_input(g, mt_shape3(n, 1, d), q);
        mt_node *nkh = pass == 3 || pass == 4 ? mt_input(g, mt_shape4(n0, h, dk, th), kt)
                       : pass == 2 ? mt_input(g, mt_shape3(n0, th, d), kh3)
                                   : mt_input(g, mt_shape4(n0, h, th, dk), kh);
        /* pass 3: values split when there are recent ones (a history), else not (a context) */
        mt_node *nvh = pass == 2 || (pass == 3 && !tr) ? mt_input(g, mt_shape3(n0, th, d), vh3)
                                                       : mt_input(g, mt_shape4(n0, h, th, dk), vh);
        mt_node *nid = use_ids ? mt_input_i32(g, mt_shape1(n), ids) : NULL;
        mt_node *nkr = tr ? mt_input(g, mt_shape4(n, h, tr, dk), kr) : NULL;
        mt_node *nvr = tr ? mt_input(g, mt_shape4(n, h, tr, dk), vr) : NULL;
        mt_node *nm = use_mask ? mt_input(g, mt_shape4(n0, 1, 1, tk), mask) : NULL;
        float alpha = 1.0f / sqrtf((float)dk);
        if (pass >= 6) { /* kcpu.h's pairs: keys [n0, h, dk/2, th, 2], values [n0, th2, d, 2] */
            mt_shape sk = mt_shape4(n0, h, dk / 2, 2);
            sk.dim[sk.ndim++] = th;
            nkh = mt_cast_pairs(g, mt_reshape(g, mt_input(g, mt_shape4(n0, h, dk, th), kt), sk));
            nvh = mt_input(g, mt_shape3(n0, th, d), vh3);
            if (th % 2) {
                mt_node *parts[2] = {nvh, mt_constant(g, mt_shape3(n0, 1, d), 0.0f)};
                nvh = mt_concat(g, parts, 2, 1);
            }
            nvh = mt_cast_pairs(g, mt_reshape(g, nvh, mt_shape4(n0, (th + 1) / 2, 2, d)));
        }
        if (pass == 7) { /* the same bfloat16 values (and queries) for the composed ops */
            nq = mt_cast(g, mt_cast(g, nq, MT_BF16), MT_F32);
            nkh =
                mt_cast(g, mt_cast(g, mt_input(g, mt_shape4(n0, h, th, dk), kh), MT_BF16), MT_F32);
            nvh =
                mt_cast(g, mt_cast(g, mt_input(g, mt_shape4(n0, h, th, dk), vh), MT_BF16), MT_F32);
        }
        if (pass == 4) {
            nkh = mt_cast(g, nkh, MT_F16);
            nvh = mt_cast(g, nvh, MT_F16);
        } else if (pass == 5) {
            nkh = mt_cast(g, mt_cast(g, nkh, MT_F16), MT_F32);
            nvh = mt_cast(g, mt_cast(g, nvh, MT_F16), MT_F32);
        }
        mt_node *y = pass == 3 || pass == 4 || pass == 6
                         ? mt_attn_rows_kt(g, nq, nkh, nvh, nid, nkr, nvr, nm, (int)h, alpha)
                     : pass == 5 || pass == 0 || pass == 7
                         ? composed(g, nq, nkh, nvh, nid, nkr, nvr, nm, h, alpha)
                         : mt_attn_rows(g, nq, nkh, nvh, nid, nkr, nvr, nm, (int)h, alpha);
        mt_status rc = mt_graph_forward(g);
        CHECK(rc == MT_OK && y != NULL, "attn_rows op pass %d: %s", pass, mt_errmsg());
        if (rc == MT_OK && y != NULL) {
            CHECK(mt_node_shape(y).ndim == 3 && mt_node_shape(y).dim[0] == n,
                  "attn_rows op: shape of q");
            float *dst[8] = {want, got, got3, gotk, got16, want16, gotb, wantb};
            CHECK_STATUS(mt_node_get(y, dst[pass], n * d));
        }
        mt_graph_free(g);
    }
    int bad = 0;
    for (int64_t t = 0; t < n * d; t++)
        bad += !(fabsf(got[t] - want[t]) <= 1e-5f * (1.0f + fabsf(want[t])));
    CHECK(bad == 0,
          "[%s] mt_attn_rows vs composed ops: n %lld n0 %lld heads %lld dk %lld th %lld tr %lld "
          "ids %d mask %d: %d differ",
          isa_tag, (long long)n, (long long)n0, (long long)h, (long long)dk, (long long)th,
          (long long)tr, use_ids, use_mask, bad);
    CHECK(memcmp(got, got3, sizeof(float) * (size_t)(n * d)) == 0,
          "[%s] mt_attn_rows: heads split or not read in place give other values", isa_tag);
    for (int64_t t = 0; t < n * d; t++)
        bad += !(fabsf(gotk[t] - want[t]) <= 1e-5f * (1.0f + fabsf(want[t])));
    CHECK(bad == 0, "[%s] mt_attn_rows with keys transposed vs composed ops: %d differ", isa_tag,
          bad);
    for (int64_t t = 0; t < n * d; t++)
        bad += !(fabsf(got16[t] - want16[t]) <= 1e-5f * (1.0f + fabsf(want16[t])));
    CHECK(bad == 0, "[%s] mt_attn_rows_kt on f16 keys and values vs composed ops: %d differ",
          isa_tag, bad);
    for (int64_t t = 0; dk % 2 == 0 && t < n * d; t++)
        bad += !(fabsf(gotb[t] - wantb[t]) <= TOL_BF16 * (1.0f + fabsf(wantb[t])));
    CHECK(bad == 0,
          "[%s] mt_attn_rows_kt on bfloat16 pairs vs composed ops (dk %lld th %lld tr %lld): %d "
          "differ",
          isa_tag, (long long)dk, (long long)th, (long long)tr, bad);
    mt_free(gotb);
    mt_free(wantb);
    mt_free(got16);
    mt_free(want16);
    mt_free(kt);
    mt_free(gotk);
    mt_free(kh3);
    mt_free(vh3);
    mt_free(got3);
    mt_free(q);
    mt_free(kh);
    mt_free(vh);
    mt_free(kr);
    mt_free(vr);
    mt_free(mask);
    mt_free(got);
    mt_free(want);
}

/* mt_attn_rows_kt_spans (rows at their own positions) vs the composed ops
** with the keys past each row's history length and before its start
** masked; a start past the keys fails at forward. */
static void op_starts_case(int64_t n, int64_t h, int64_t dk, int64_t th, int64_t tr, bool f16) {
    int64_t d = h * dk, tk = th + tr;
    float *q = frand(n * d), *kh = frand(n * h * th * dk), *vh = frand(n * h * th * dk);
    float *kt = frand(n * h * th * dk), *kr = frand(n * h * tr * dk), *vr = frand(n * h * tr * dk);
    float *mask = frand(n * tk), *got = frand(n * d), *want = frand(n * d);
    int32_t spans[32]; /* [2, n]: history lengths, first keys (of the row's own) */
    for (int64_t i = 0; i < n; i++) {
        int64_t tn = tr > 0 ? irand((int)th + 1) : th, s0 = irand((int)(tn + tr));
        spans[i] = (int32_t)tn;
        spans[n + i] = (int32_t)s0;
        /* the composed ops see all th + tr slots: the row's keys are its
        ** first tn history slots and the recent ones, from its key s0 on */
        for (int64_t t = 0; t < tk; t++) {
            int64_t own = t < tn ? t : t >= th ? tn + t - th : -1;
            mask[i * tk + t] = own >= s0 ? 0.0f : -1e9f;
        }
    }
    for (int64_t r = 0; r < n; r++)
        for (int64_t hh = 0; hh < h; hh++)
            for (int64_t t = 0; t < th; t++)
                for (int64_t c = 0; c < dk; c++)
                    kt[((r * h + hh) * dk + c) * th + t] = kh[((r * h + hh) * th + t) * dk + c];
    float alpha = 1.0f / sqrtf((float)dk);
    for (int pass = 0; pass < 3; pass++) {
        mt_graph *g = new_graph(false);
        mt_node *nq = mt_input(g, mt_shape3(n, 1, d), q);
        mt_node *nkr = tr ? mt_input(g, mt_shape4(n, h, tr, dk), kr) : NULL;
        mt_node *nvr = tr ? mt_input(g, mt_shape4(n, h, tr, dk), vr) : NULL;
        mt_node *nvh = mt_input(g, mt_shape4(n, h, th, dk), vh), *y;
        if (f16) nvh = mt_cast(g, nvh, MT_F16);
        if (pass == 0) { /* the composed ops over the same (rounded) values */
            mt_node *nkh = mt_input(g, mt_shape4(n, h, th, dk), kh);
            if (f16) {
                nkh = mt_cast(g, mt_cast(g, nkh, MT_F16), MT_F32);
                nvh = mt_cast(g, nvh, MT_F32);
            }
            y = composed(g, nq, nkh, nvh, NULL, nkr, nvr, mt_input(g, mt_shape4(n, 1, 1, tk), mask),
                         h, alpha);
        } else {
            mt_node *nkt = mt_input(g, mt_shape4(n, h, dk, th), kt);
            if (f16) nkt = mt_cast(g, nkt, MT_F16);
            int32_t bad[32];
            memcpy(bad, spans, sizeof bad);
            bad[2 * n - 1] = bad[n - 1] + (int32_t)tr; /* one past the row's keys */
            y = mt_attn_rows_kt_spans(g, nq, nkt, nvh, NULL, nkr, nvr,
                                      mt_input_i32(g, mt_shape2(2, n), pass == 1 ? spans : bad),
                                      (int)h, alpha);
        }
        mt_status rc = mt_graph_forward(g);
        if (pass == 2) {
            CHECK(rc == MT_ERR_INVALID && strstr(mt_errmsg(), "first key") != NULL,
                  "[%s] a first key past a row's keys: %s", isa_tag,
                  rc == MT_OK ? "accepted" : mt_errmsg());
        } else if (CHECK(rc == MT_OK && y != NULL, "starts op pass %d: %s", pass, mt_errmsg())) {
            CHECK_STATUS(mt_node_get(y, pass == 0 ? want : got, n * d));
        }
        mt_graph_free(g);
    }
    int bad = 0;
    for (int64_t t = 0; t < n * d; t++)
        bad += !(fabsf(got[t] - want[t]) <= 1e-5f * (1.0f + fabsf(want[t])));
    CHECK(bad == 0,
          "[%s] mt_attn_rows_kt_spans vs composed ops with a mask: n %lld heads %lld dk %lld th "
          "%lld tr %lld f16 %d: %d differ",
          isa_tag, (long long)n, (long long)h, (long long)dk, (long long)th, (long long)tr, f16,
          bad);
    float *bufs[] = {q, kh, vh, kt, kr, vr, mask, got, want};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        mt_free(bufs[i]);
}

static void test_op(void) {
    for (int rep = 0; rep < 24; rep++) {
        bool use_ids = rep % 2, use_mask = (rep / 2) % 2;
        int64_t n = 1 + irand(9), n0 = use_ids ? 1 + irand(5) : n;
        op_case(n, n0, 1 + irand(8), 8 * (1 + irand(8)), 1 + irand(40), rep % 3 ? irand(5) : 0,
                use_ids, use_mask);
    }
    for (int rep = 0; rep < 12; rep++)
        op_starts_case(1 + irand(9), 1 + irand(8), 8 * (1 + irand(8)), 1 + irand(40),
                       rep % 3 ? 1 + irand(5) : 0, rep % 2);
}

/* The int8-key ops: mt_pack_rows_kq of keys alone and into a history (rows
** by ids, their own lengths and starts), read back by mt_keys_q8_f32 against
** the spec's k8 * scale (exactly), and mt_attn_rows_kt on int8 keys and f16
** values against kcpu_attn_rows on the spec's units (the same kernel: bit
** for bit); a history of another dtype refused. */
static void q8_ops_case(int64_t n0, int64_t n, int64_t heads, int64_t dk, int64_t th, int64_t lb) {
    const int64_t d = heads * dk, d4 = dk / 4, l = th + lb;
    float *kf = frand(n0 * heads * th * dk), *kb = frand(n * heads * lb * dk);
    float *v = frand(n0 * heads * th * dk), *q = frand(n * d);
    int32_t ids[8], lens[8], starts[8], k8[256];
    for (int64_t i = 0; i < n; i++) {
        ids[i] = (int32_t)irand((int)n0);
        lens[i] = (int32_t)irand((int)th + 1);
        starts[i] = (int32_t)irand((int)lb + 1);
    }
    mt_graph *g = new_graph(false);
    mt_node *keys = mt_input(g, mt_shape4(n0, heads, th, dk), kf);
    mt_node *hist = mt_pack_rows_kq(g, NULL, NULL, NULL, keys, NULL, NULL, th);
    mt_node *hf = mt_keys_q8_f32(g, hist);
    mt_node *nids = mt_input_i32(g, mt_shape1(n), ids);
    mt_node *fold = mt_pack_rows_kq(g, hist, nids, mt_input_i32(g, mt_shape1(n), lens),
                                    mt_input(g, mt_shape4(n, heads, lb, dk), kb), NULL,
                                    mt_input_i32(g, mt_shape1(n), starts), l);
    mt_node *ff = mt_keys_q8_f32(g, fold);
    mt_node *v16 = mt_cast(g, mt_input(g, mt_shape4(n0, heads, th, dk), v), MT_F16);
    float alpha = 1.0f / sqrtf((float)dk);
    mt_node *o = mt_attn_rows_kt(g, mt_input(g, mt_shape3(n, 1, d), q), hist, v16, nids, NULL, NULL,
                                 NULL, (int)heads, alpha);
    mt_graph_keep(g, hist);
    mt_graph_keep(g, v16);
    mt_status rc = mt_graph_forward(g);
    CHECK(rc == MT_OK && o != NULL, "int8-key ops: %s", mt_errmsg());
    if (rc != MT_OK || o == NULL) {
        mt_graph_free(g);
        return;
    }
    float *got_h = malloc(sizeof(float) * (size_t)(n0 * heads * dk * th));
    float *got_f = malloc(sizeof(float) * (size_t)(n * heads * dk * l));
    float *got_o = malloc(sizeof(float) * (size_t)(n * d));
    CHECK_STATUS(mt_node_get(hf, got_h, n0 * heads * dk * th));
    CHECK_STATUS(mt_node_get(ff, got_f, n * heads * dk * l));
    CHECK_STATUS(mt_node_get(o, got_o, n * d));
    /* the spec's units and dequantized keys of the history */
    uint32_t *units = calloc((size_t)(n0 * heads * (d4 + 1) * th + 1), sizeof *units);
    float *want_h = malloc(sizeof(float) * (size_t)(n0 * heads * dk * th));
    int bad = 0;
    for (int64_t rh = 0; rh < n0 * heads; rh++)
        for (int64_t t = 0; t < th; t++) {
            float sc = spec_q8(kf + (rh * th + t) * dk, dk, k8);
            for (int64_t c = 0; c < dk; c++) {
                want_h[(rh * dk + c) * th + t] = (float)k8[c] * sc;
                units[(rh * (d4 + 1) + c / 4) * th + t] |= (uint32_t)(uint8_t)(k8[c] + 128)
                                                           << (8 * (c % 4));
            }
            memcpy(&units[(rh * (d4 + 1) + d4) * th + t], &sc, sizeof sc);
        }
    for (int64_t t = 0; t < n0 * heads * dk * th; t++)
        bad += got_h[t] != want_h[t];
    CHECK(bad == 0, "mt_keys_q8_f32(mt_pack_rows_kq(keys)): %d of %lld differ from the spec", bad,
          (long long)(n0 * heads * dk * th));
    bad = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t h = 0; h < heads; h++)
            for (int64_t c = 0; c < dk; c++) {
                const float *y = got_f + ((i * heads + h) * dk + c) * l;
                for (int64_t t = 0; t < lens[i]; t++)
                    bad += y[t] != want_h[((ids[i] * heads + h) * dk + c) * th + t];
            }
    for (int64_t i = 0; i < n; i++)
        for (int64_t h = 0; h < heads; h++)
            for (int64_t t = starts[i]; t < lb; t++) {
                float sc = spec_q8(kb + ((i * heads + h) * lb + t) * dk, dk, k8);
                for (int64_t c = 0; c < dk; c++)
                    bad += got_f[((i * heads + h) * dk + c) * l + lens[i] + t - starts[i]] !=
                           (float)k8[c] * sc;
            }
    CHECK(bad == 0, "mt_pack_rows_kq into a history: %d keys differ from the spec", bad);
    /* the op against the kernel on the spec's units and the same f16 values */
    uint16_t *v16h = malloc(sizeof(uint16_t) * (size_t)(n0 * heads * th * dk));
    for (int64_t t = 0; t < n0 * heads * th * dk; t++)
        v16h[t] = mt_f32_to_f16(v[t]);
    float *want_o = malloc(sizeof(float) * (size_t)(n * d));
    float *scratch = malloc(sizeof(float) * (size_t)(kcpu_attn_scratch_floats(heads, dk, th) + 64));
    kcpu_attn_job j = {.n = n,
                       .heads = heads,
                       .dk = dk,
                       .th = th,
                       .alpha = alpha,
                       .q = q,
                       .ldq = d,
                       .vh_f16 = v16h,
                       .hist_row_stride = heads * th * dk,
                       .hist_head_stride = th * dk,
                       .hist_pos_stride = dk,
                       .kt_row_stride = heads * (d4 + 1) * th,
                       .kt_head_stride = (d4 + 1) * th,
                       .kt_elem_stride = th,
                       .kh_q8 = units,
                       .ids = ids,
                       .o = want_o,
                       .ldo = d,
                       .scratch = scratch};
    kcpu_attn_rows(&j);
    CHECK(memcmp(got_o, want_o, sizeof(float) * (size_t)(n * d)) == 0,
          "[%s] mt_attn_rows_kt on int8 keys differs from kcpu_attn_rows on the spec's units "
          "(n %lld heads %lld dk %lld th %lld)",
          isa_tag, (long long)n, (long long)heads, (long long)dk, (long long)th);
    /* int8 keys with f32 values: refused */
    mt_node *bad_v = mt_attn_rows_kt(g, mt_input(g, mt_shape3(n, 1, d), q), hist,
                                     mt_input(g, mt_shape4(n0, heads, th, dk), v), nids, NULL, NULL,
                                     NULL, (int)heads, alpha);
    CHECK(bad_v == NULL && mt_graph_status(g) == MT_ERR_INVALID,
          "mt_attn_rows_kt: int8 keys with float32 values not refused");
    mt_graph_free(g);
    free(got_h), free(got_f), free(got_o), free(units), free(want_h), free(v16h), free(want_o),
        free(scratch);
    mt_free(kf), mt_free(kb), mt_free(v), mt_free(q);
}

static void test_q8_ops(void) {
    for (int rep = 0; rep < 8; rep++)
        q8_ops_case(1 + irand(4), 1 + irand(8), 1 + irand(8), 4 * (1 + irand(16)), 1 + irand(40),
                    1 + irand(8));
}

static void expect_fail(mt_graph *g, mt_node *y, mt_status want, const char *what) {
    mt_status rc = y ? mt_graph_forward(g) : mt_graph_status(g);
    CHECK(rc == want && strstr(mt_errmsg(), "mt_attn_rows") != NULL, "%s: %s (%s)", what,
          mt_status_str(rc), mt_errmsg());
    mt_graph_free(g);
}

static void test_op_errors(void) {
    float z[4096] = {0};
    int32_t bad_ids[2] = {0, 2};
    mt_graph *g = new_graph(false); /* D = 8 is not 3 heads of 4 */
    expect_fail(
        g,
        mt_attn_rows(g, mt_input(g, mt_shape3(2, 1, 8), z), mt_input(g, mt_shape4(2, 3, 5, 4), z),
                     mt_input(g, mt_shape4(2, 3, 5, 4), z), NULL, NULL, NULL, NULL, 3, 1.0f),
        MT_ERR_INVALID, "heads x dk != D");
    g = new_graph(false); /* a mask of the wrong length */
    expect_fail(g,
                mt_attn_rows(g, mt_input(g, mt_shape3(2, 1, 8), z),
                             mt_input(g, mt_shape4(2, 2, 5, 4), z),
                             mt_input(g, mt_shape4(2, 2, 5, 4), z), NULL, NULL, NULL,
                             mt_input(g, mt_shape4(2, 1, 1, 6), z), 2, 1.0f),
                MT_ERR_INVALID, "mask of 6 for 5 keys");
    g = new_graph(false); /* recent keys of another head size */
    expect_fail(g,
                mt_attn_rows(g, mt_input(g, mt_shape3(2, 1, 8), z),
                             mt_input(g, mt_shape4(2, 2, 5, 4), z),
                             mt_input(g, mt_shape4(2, 2, 5, 4), z), NULL,
                             mt_input(g, mt_shape4(2, 2, 1, 3), z),
                             mt_input(g, mt_shape4(2, 2, 1, 3), z), NULL, 2, 1.0f),
                MT_ERR_INVALID, "recent keys [2, 2, 1, 3]");
    g = new_graph(false); /* transposed keys [N0, H, Th, dk] instead of [N0, H, dk, Th] */
    expect_fail(g,
                mt_attn_rows_kt(
                    g, mt_input(g, mt_shape3(2, 1, 8), z), mt_input(g, mt_shape4(2, 2, 5, 4), z),
                    mt_input(g, mt_shape3(2, 5, 8), z), NULL, NULL, NULL, NULL, 2, 1.0f),
                MT_ERR_INVALID, "keys not transposed");
    g = new_graph(false); /* keys in f16, values in f32 */
    expect_fail(g,
                mt_attn_rows_kt(g, mt_input(g, mt_shape3(2, 1, 8), z),
                                mt_cast(g, mt_input(g, mt_shape4(2, 2, 4, 5), z), MT_F16),
                                mt_input(g, mt_shape3(2, 5, 8), z), NULL, NULL, NULL, NULL, 2,
                                1.0f),
                MT_ERR_INVALID, "keys f16, values f32");
    g = new_graph(false); /* f16 keys without the transposed layout */
    expect_fail(g,
                mt_attn_rows(g, mt_input(g, mt_shape3(2, 1, 8), z),
                             mt_cast(g, mt_input(g, mt_shape4(2, 2, 5, 4), z), MT_F16),
                             mt_cast(g, mt_input(g, mt_shape4(2, 2, 5, 4), z), MT_F16), NULL,
                             NULL, NULL, NULL, 2, 1.0f),
                MT_ERR_INVALID, "f16 keys and values to mt_attn_rows");
    g = new_graph(false); /* id 2 of 2 rows: found at forward */
    expect_fail(g,
                mt_attn_rows(g, mt_input(g, mt_shape3(2, 1, 8), z),
                             mt_input(g, mt_shape4(2, 2, 5, 4), z),
                             mt_input(g, mt_shape4(2, 2, 5, 4), z),
                             mt_input_i32(g, mt_shape1(2), bad_ids), NULL, NULL, NULL, 2, 1.0f),
                MT_ERR_INVALID, "id 2 of 2");
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 1, &p));
    g = new_graph(true); /* training: a parameter wants a gradient */
    mt_node *w = mt_param(g, p, "q", mt_shape3(2, 1, 8), (mt_init){.kind = MT_INIT_ONES});
    expect_fail(g,
                mt_attn_rows(g, w, mt_input(g, mt_shape4(2, 2, 5, 4), z),
                             mt_input(g, mt_shape4(2, 2, 5, 4), z), NULL, NULL, NULL, NULL, 2,
                             1.0f),
                MT_ERR_INVALID, "a query that wants a gradient");
    mt_params_free(p);
}

/* Packed sentences: mt_attn_spans over all rows = mt_attention of each
** sentence alone ([1, L, D], no mask). */
static void test_spans_op(void) {
    for (int rep = 0; rep < 6; rep++) {
        int64_t h = 1 + irand(8), dk = 8 * (1 + irand(6)), d = h * dk, n_sent = 1 + irand(6);
        int32_t first[8], len[8];
        int64_t t0 = 0, maxl = 0;
        for (int64_t s = 0; s < n_sent; s++) {
            len[s] = 1 + irand(30);
            first[s] = (int32_t)t0;
            t0 += len[s];
            maxl = len[s] > maxl ? len[s] : maxl;
        }
        float *q = frand(t0 * d), *k = frand(t0 * d), *v = frand(t0 * d);
        float *got = mt_try_malloc(sizeof(float) * (size_t)(t0 * d));
        float *want = mt_try_malloc(sizeof(float) * (size_t)(t0 * d));
        int32_t *st = malloc(sizeof(int32_t) * (size_t)t0),
                *ln = malloc(sizeof(int32_t) * (size_t)t0);
        for (int64_t s = 0, i = 0; s < n_sent; s++)
            for (int32_t p = 0; p < len[s]; p++, i++)
                st[i] = first[s], ln[i] = len[s];
        mt_graph *g = new_graph(false);
        mt_node *y = mt_attn_spans(
            g, mt_input(g, mt_shape2(t0, d), q), mt_input(g, mt_shape2(t0, d), k),
            mt_input(g, mt_shape2(t0, d), v), mt_input_i32(g, mt_shape1(t0), st),
            mt_input_i32(g, mt_shape1(t0), ln), maxl, (int)h, 1.0f / sqrtf((float)dk));
        CHECK_STATUS(mt_graph_forward(g));
        if (y) CHECK_STATUS(mt_node_get(y, got, t0 * d));
        mt_graph_free(g);
        for (int64_t s = 0; s < n_sent; s++) {
            g = new_graph(false);
            int64_t off = first[s] * d;
            mt_shape sh = mt_shape3(1, len[s], d);
            mt_node *ys = mt_attention(g, mt_input(g, sh, q + off), mt_input(g, sh, k + off),
                                       mt_input(g, sh, v + off), NULL, (int)h, NULL);
            CHECK_STATUS(mt_graph_forward(g));
            if (ys) CHECK_STATUS(mt_node_get(ys, want + off, len[s] * d));
            mt_graph_free(g);
        }
        int bad = 0;
        for (int64_t t = 0; t < t0 * d; t++)
            bad += !(fabsf(got[t] - want[t]) <= 1e-5f * (1.0f + fabsf(want[t])));
        CHECK(bad == 0,
              "[%s] mt_attn_spans vs mt_attention per sentence: %lld sentences, heads %lld, dk "
              "%lld: %d differ",
              isa_tag, (long long)n_sent, (long long)h, (long long)dk, bad);
        mt_free(q);
        mt_free(k);
        mt_free(v);
        mt_free(got);
        mt_free(want);
        free(st);
        free(ln);
    }
}

static void spans_fail(const int32_t *start, const int32_t *len, int64_t max_len,
                       const char *what) {
    float z[64] = {0};
    mt_graph *g = new_graph(false);
    mt_node *y =
        mt_attn_spans(g, mt_input(g, mt_shape2(2, 8), z), mt_input(g, mt_shape2(3, 8), z),
                      mt_input(g, mt_shape2(3, 8), z), mt_input_i32(g, mt_shape1(2), start),
                      mt_input_i32(g, mt_shape1(2), len), max_len, 2, 1.0f);
    mt_status rc = y ? mt_graph_forward(g) : mt_graph_status(g);
    CHECK(rc == MT_ERR_INVALID && strstr(mt_errmsg(), "mt_attn_spans") != NULL, "%s: %s (%s)", what,
          mt_status_str(rc), mt_errmsg());
    mt_graph_free(g);
}

static void test_spans_errors(void) {
    spans_fail((const int32_t[]){0, 2}, (const int32_t[]){2, 2}, 2, "span 2 + 2 of 3 rows");
    spans_fail((const int32_t[]){0, 1}, (const int32_t[]){1, 0}, 2, "an empty span");
    spans_fail((const int32_t[]){0, 0}, (const int32_t[]){3, 3}, 2, "3 keys, max_len 2");
    spans_fail((const int32_t[]){0, 0}, (const int32_t[]){1, 1}, 0, "max_len 0");
}

int main(void) {
    test_rng_seed(0x5eed0a77e27ull);
    kcpu_isa best = kcpu_isa_detect();
    for (int lvl = KCPU_ISA_REF; lvl <= (int)best; lvl++) {
        kcpu_isa_force((kcpu_isa)lvl);
        isa_tag = kcpu_isa_name((kcpu_isa)lvl);
        worst = worst_bf16 = worst_q8_logit = 0.0;
        test_shapes();
        test_fold_q8();
        test_one_position();
        test_op();
        test_spans_op();
        test_q8_ops();
        fprintf(stderr,
                "[%s] worst scaled error vs double: %.3g (tolerance %g); bfloat16 pairs "
                "%.3g (%g, %s)\n",
                isa_tag, worst, TOL, worst_bf16, TOL_BF16,
                kcpu_attn_bf16_fast() ? "vdpbf16ps" : "reference");
        fprintf(stderr, "[%s] int8 keys: scores off the f32 keys' by at most %.3g\n", isa_tag,
                worst_q8_logit);
    }
    kcpu_isa_force(best);
    test_op_errors();
    test_spans_errors();
    TEST_MAIN_END();
}
