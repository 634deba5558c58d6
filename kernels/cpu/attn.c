/*
** attn.c: the fused attention (kcpu_attn_rows, kcpu.h): the scalar
** reference, the oracle of the AVX-512 and AVX2 variants (attn_avx512.c,
** attn_avx2.c), and the dispatcher.
*/
#include "kcpu.h"

#include <math.h>

/* Key (or value, from base hist / recent) t of row i, head h: t < tn from
** the strided history of id r, the rest from the row's recent positions. */
static const float *kv_at(const kcpu_attn_job *j, const float *hist, const float *recent, int64_t i,
                          int64_t r, int64_t h, int64_t tn, int64_t t) {
    if (t < tn) {
        return hist + r * j->sr + h * j->sh + t * j->st;
    }
    return recent + ((i * j->heads + h) * j->tr + (t - tn)) * j->dk;
}

void kcpu_attn_rows_ref(const kcpu_attn_job *j) {
    float *s = j->scratch;
    for (int64_t i = 0; i < j->n; i++) {
        int64_t r = j->ids ? j->ids[i] : i, tn = j->lens ? j->lens[i] : j->th, tk = tn + j->tr;
        for (int64_t h = 0; h < j->heads; h++) {
            const float *q = j->q + i * j->ldq + h * j->dk;
            float mx = -INFINITY;
            for (int64_t t = 0; t < tk; t++) {
                float dot = 0.0f;
                if (j->ksc > 0 && t < tn) { /* transposed keys */
                    const float *k = j->kh + r * j->ksr + h * j->ksh + t;
                    for (int64_t c = 0; c < j->dk; c++) {
                        dot += q[c] * k[c * j->ksc];
                    }
                } else {
                    const float *k = kv_at(j, j->kh, j->kr, i, r, h, tn, t);
                    for (int64_t c = 0; c < j->dk; c++) {
                        dot += q[c] * k[c];
                    }
                }
                s[t] = j->alpha * dot + (j->mask ? j->mask[r * (j->th + j->tr) + t] : 0.0f);
                mx = s[t] > mx ? s[t] : mx;
            }
            float sum = 0.0f;
            for (int64_t t = 0; t < tk; t++) {
                s[t] = expf(s[t] - mx);
                sum += s[t];
            }
            float inv = 1.0f / sum, *o = j->o + i * j->ldo + h * j->dk;
            for (int64_t c = 0; c < j->dk; c++) {
                float acc = 0.0f;
                for (int64_t t = 0; t < tk; t++) {
                    acc += s[t] * kv_at(j, j->vh, j->vr, i, r, h, tn, t)[c];
                }
                o[c] = acc * inv;
            }
        }
    }
}

void kcpu_attn_rows(const kcpu_attn_job *j) {
    kcpu_isa isa = kcpu_isa_active();
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
