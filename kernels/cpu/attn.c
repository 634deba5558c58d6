/*
** attn.c: the fused attention (kcpu_attn_rows, kcpu.h): the scalar
** reference, the oracle of the AVX-512 and AVX2 variants (attn_avx512.c,
** attn_avx2.c), and the dispatcher.
*/
#include "kcpu_impl.h"

#include <math.h>
#include <string.h>

/* Element off of a history array: f32 at b32, or f16 at b16 when given. */
static float hist_el(const float *b32, const uint16_t *b16, int64_t off) {
    float v;
    if (b16 == NULL) return b32[off];
    kcpu_f16_to_f32_ref(1, b16 + off, &v);
    return v;
}

/* Element c of key (keys: kv = 0) or value (kv = 1) t of row i, head h:
** t < tn from the strided history of id r (keys transposed when kt_elem_stride > 0),
** the rest from the row's recent positions. */
static float kv_el(const kcpu_attn_job *j, int kv, int64_t i, int64_t r, int64_t h, int64_t tn,
                   int64_t t, int64_t c) {
    if (t >= tn) {
        const float *recent = kv ? j->vr : j->kr;
        return recent[((i * j->heads + h) * j->tr + (t - tn)) * j->dk + c];
    }
    if (kv == 0 && j->kt_elem_stride > 0)
        return hist_el(j->kh, j->kh_f16,
                       r * j->kt_row_stride + h * j->kt_head_stride + c * j->kt_elem_stride + t);
    return hist_el(kv ? j->vh : j->kh, kv ? j->vh_f16 : j->kh_f16,
                   r * j->hist_row_stride + h * j->hist_head_stride + t * j->hist_pos_stride + c);
}

/* Element c of key (kv = 0) or value (kv = 1) t < tn of a bfloat16-pair
** history (kcpu.h). */
static float pair_el(const kcpu_attn_job *j, int kv, int64_t r, int64_t h, int64_t t, int64_t c) {
    uint32_t u = kv ? j->vh_bf16_pairs[r * j->hist_row_stride + (t / 2) * j->hist_pos_stride +
                                       h * j->hist_head_stride + c]
                    : j->kh_bf16_pairs[r * j->kt_row_stride + h * j->kt_head_stride +
                                       (c / 2) * j->kt_elem_stride + t];
    int half = kv ? (int)(t & 1) : (int)(c & 1);
    return kcpu_bf16_val((uint16_t)(half ? u >> 16 : u & 0xffffu));
}

/* kv_el, or pair_el for the history of a bfloat16-pair job. */
static float el(const kcpu_attn_job *j, int kv, int64_t i, int64_t r, int64_t h, int64_t tn,
                int64_t t, int64_t c) {
    if (j->kh_bf16_pairs && t < tn) return pair_el(j, kv, r, h, t, c);
    return kv_el(j, kv, i, r, h, tn, t, c);
}

/* A query element or weight as the job uses it: rounded to bfloat16 for
** the history of a bfloat16-pair job. */
static float as_used(const kcpu_attn_job *j, float x, bool hist) {
    return j->kh_bf16_pairs && hist ? kcpu_bf16_val(kcpu_bf16_of(x)) : x;
}

/* The score of int8 key t of row r, head h (kcpu.h: int8 keys) for the
** query q8 (qa: its factor). */
static float q8_score(const kcpu_attn_job *j, int64_t r, int64_t h, int64_t t, const int8_t *q8,
                      float qa) {
    const uint32_t *k = j->kh_q8 + r * j->kt_row_stride + h * j->kt_head_stride + t;
    int32_t dot = 0;
    for (int64_t c = 0; c < j->dk; c++) {
        int32_t b = (int32_t)((k[(c / 4) * j->kt_elem_stride] >> (8 * (c % 4))) & 0xffu) - 128;
        dot += q8[c] * b;
    }
    float sc;
    memcpy(&sc, k + (j->dk / 4) * j->kt_elem_stride, sizeof sc);
    return (float)dot * (sc * qa);
}

void kcpu_attn_rows_ref(const kcpu_attn_job *j) {
    float *s = j->scratch;
    int8_t q8[KCPU_Q8_DK_MAX];
    for (int64_t i = 0; i < j->n; i++) {
        int64_t r = j->ids ? j->ids[i] : i, tn = j->lens ? j->lens[i] : j->th, tk = tn + j->tr;
        int64_t t0 = j->starts ? j->starts[i] : 0;
        for (int64_t h = 0; h < j->heads; h++) {
            const float *q = j->q + i * j->ldq + h * j->dk;
            float mx = -INFINITY, qa = 0.0f;
            int32_t qsum;
            if (j->kh_q8) qa = kcpu_q8_query(q, j->dk, j->alpha, q8, &qsum);
            for (int64_t t = t0; t < tk; t++) {
                float mk = j->mask ? j->mask[r * (j->th + j->tr) + t] : 0.0f;
                if (j->kh_q8 && t < tn) {
                    s[t] = q8_score(j, r, h, t, q8, qa) + mk;
                    mx = s[t] > mx ? s[t] : mx;
                    continue;
                }
                float dot = 0.0f;
                for (int64_t c = 0; c < j->dk; c++) {
                    dot += as_used(j, q[c], t < tn) * el(j, 0, i, r, h, tn, t, c);
                }
                s[t] = j->alpha * dot + mk;
                mx = s[t] > mx ? s[t] : mx;
            }
            float sum = 0.0f;
            for (int64_t t = t0; t < tk; t++) {
                s[t] = expf(s[t] - mx);
                sum += s[t];
            }
            float inv = 1.0f / sum, *o = j->o + i * j->ldo + h * j->dk;
            for (int64_t c = 0; c < j->dk; c++) {
                float acc = 0.0f;
                for (int64_t t = t0; t < tk; t++) {
                    acc += as_used(j, s[t], t < tn) * el(j, 1, i, r, h, tn, t, c);
                }
                o[c] = acc * inv;
            }
        }
    }
}

bool kcpu_attn_bf16_fast(void) {
#ifdef MT_HAVE_AVX512_BUILD
    return kcpu_isa_active() >= KCPU_ISA_AVX512 && kcpu_cpu_has_avx512_bf16();
#else
    return false;
#endif
}

void kcpu_attn_rows(const kcpu_attn_job *j) {
    kcpu_isa isa = kcpu_isa_active();
    if (j->kh_bf16_pairs) {
#ifdef MT_HAVE_AVX512_BUILD
        if (kcpu_attn_bf16_fast() && kcpu_attn_bf16_shape(j)) {
            kcpu_attn_rows_bf16_avx512(j);
            return;
        }
#endif
        kcpu_attn_rows_ref(j);
        return;
    }
#ifdef MT_HAVE_AVX512_BUILD
    if (isa >= KCPU_ISA_AVX512) {
        kcpu_attn_rows_avx512(j);
        return;
    }
#endif
    if (isa >= KCPU_ISA_AVX2) {
        kcpu_attn_rows_avx2(j);
        return;
    }
    kcpu_attn_rows_ref(j);
}

/* ------------------------------------------------------------ fold keys */

static void fold_keys_q8(const kcpu_fold_job *j);

void kcpu_fold_keys_ref(const kcpu_fold_job *j) {
    if (j->outq) {
        fold_keys_q8(j);
        return;
    }
    for (int64_t r = 0; r < j->n; r++) {
        const int64_t bl = j->lens[r], bs = j->starts[r], rr = j->rec_ids ? j->rec_ids[r] : r;
        for (int64_t h = 0; h < j->heads; h++) {
            for (int64_t c = 0; c < j->dk; c++) {
                uint16_t *y = j->out + ((r * j->heads + h) * j->dk + c) * j->l;
                if (bl > 0) {
                    memcpy(y, j->hist + (((int64_t)j->ids[r] * j->heads + h) * j->dk + c) * j->la,
                           sizeof(uint16_t) * (size_t)bl);
                }
                for (int64_t t = bs; t < j->lb; t++) {
                    kcpu_f32_to_f16_ref(1, j->rec + ((rr * j->heads + h) * j->lb + t) * j->dk + c,
                                        y + bl + t - bs);
                }
            }
        }
    }
}

/* kcpu_fold_keys into int8 keys (outq), the reference (the oracle of
** kcpu_fold_keys_q8_avx512 and _avx2): the recent keys quantized by
** kcpu_q8_key. */
static void fold_keys_q8(const kcpu_fold_job *j) { kcpu_fold_q8_rows(j, kcpu_q8_key); }

void kcpu_keys_q8_f32(int64_t rows, int64_t d4, int64_t len, const uint32_t *x, float *y) {
    for (int64_t r = 0; r < rows; r++) {
        const uint32_t *u = x + r * (d4 + 1) * len;
        float *o = y + r * 4 * d4 * len;
        for (int64_t t = 0; t < len; t++) {
            float sc;
            memcpy(&sc, u + d4 * len + t, sizeof sc);
            for (int64_t c = 0; c < 4 * d4; c++) {
                int32_t b = (int32_t)((u[(c / 4) * len + t] >> (8 * (c % 4))) & 0xffu) - 128;
                o[c * len + t] = (float)b * sc;
            }
        }
    }
}

bool kcpu_fold_keys_fast(void) {
#ifdef MT_HAVE_AVX512_BUILD
    return kcpu_isa_active() >= KCPU_ISA_AVX512;
#else
    return false;
#endif
}

void kcpu_fold_keys(const kcpu_fold_job *j) {
#ifdef MT_HAVE_AVX512_BUILD
    if (j->outq && kcpu_isa_active() >= KCPU_ISA_AVX512) {
        kcpu_fold_keys_q8_avx512(j);
        return;
    }
#endif
    if (j->outq && kcpu_isa_active() >= KCPU_ISA_AVX2) {
        kcpu_fold_keys_q8_avx2(j);
        return;
    }
    if (j->outq) {
        fold_keys_q8(j);
        return;
    }
#ifdef MT_HAVE_AVX512_BUILD
    if (kcpu_isa_active() >= KCPU_ISA_AVX512) {
        kcpu_fold_keys_avx512(j);
        return;
    }
#endif
    kcpu_fold_keys_ref(j);
}
