/*
** quantize.c: Marian's generic intgemm items, read into parameters
** (mt_params_adopt_item) and written by `mtpe convert --gemm-type`
** (mt_model_file_quantize), as marian-conv -g intgemm8|intgemm16 does
** (src/tensors/cpu/expression_graph_packable.h; shared/reference/
** marian-compat.md sections 1.4-1.6 and 8.2).
**
** Generic intgemm item of a weight W with header shape [K, N] (the .bin
** blob, little-endian; w = 1 for intgemm8 0x10001, 2 for intgemm16 0x10002):
**
**   OFFSET     SIZE      DESCRIPTION
**      0       N*K*w     Wq = quantize(W^T * qB): row n holds column n of W,
**                        K values each (int8_t or int16_t, row-major [N, K])
**   N*K*w        4       qB, float32: 127 / max|W| (int8) or 1024 (int16)
**   N*K*w+4      *       padding up to the blob's dataLength (Marian rounds
**                        blobs to 256 bytes); ignored
**
** Quantize = round half to even of the float product W * qB, saturated:
** int8 to [-127, 127] (intgemm never produces -128), int16 to [-32768,
** 32767].  Dequantizing (--gemm-type float32) gives W ~ Wq / qB.
**
** The CPU-specific items (marian-conv -g intgemm8ssse3 etc.) hold the same
** integers and multiplier, the integers in intgemm's prepared order
** (PrepareBTransposed / PrepareBQuantizedTransposed in intgemm's
** interleave.h): with R values per register (int8: SSSE3 16, AVX2 32,
** AVX512 64; int16: SSE2 8, AVX2 16, AVX512 32), blocks of 8 output
** columns, in each block the inner dimension in chunks of R, and per chunk
** one register per column:
**
**   Wq[n, k] at  ((n / 8) * (K / R) + k / R) * 8 * R + (n % 8) * R + k % R
**
** (K a multiple of R, N of 8; then the 4-byte qB).  These are read back into
** [K, N].  intgemm8avx512vnni is read with the AVX512 layout, as Marian's
** loader does (binary.cpp treats AVX512 and VNNI as one layout; note that
** marian-conv 1.12 writes -g intgemm8avx512vnni with the AVX2 one, its type
** bits passing its AVX2 test first, so such files are wrong in Marian too).
**
** The arithmetic runs through the CPU device's quantizer (kcpu), the same
** one the packer uses, so a weight quantized here and one quantized at
** load time (gemm_type int8 on a float model) get the same integers.
*/
#include <math.h>
#include <string.h>

#include "device.h"
#include "params_impl.h"

/* 127 / maxabs with kcpu_i8_mult's guards (1 for an all-zero matrix). */
static float i8_mult(float maxabs) {
    if (!(maxabs > 0.0f)) return 1.0f;
    float q = 127.0f / maxabs;
    return isfinite(q) ? q : 1.0f;
}

static bool is_generic(uint32_t t) { return t == MT_MARIAN_INTGEMM8 || t == MT_MARIAN_INTGEMM16; }

/* Values per register of a CPU-specific intgemm type; 0 for the generic
** ones, -1 for anything else. */
static int isa_regs(uint32_t t) {
    switch (t) {
    case MT_MARIAN_INTGEMM8:
    case MT_MARIAN_INTGEMM16: return 0;
    case MT_MARIAN_INTGEMM8SSSE3: return 16;
    case MT_MARIAN_INTGEMM8AVX2: return 32;
    case MT_MARIAN_INTGEMM8AVX512:
    case MT_MARIAN_INTGEMM8AVX512VNNI: return 64;
    case MT_MARIAN_INTGEMM16SSE2: return 8;
    case MT_MARIAN_INTGEMM16AVX2: return 16;
    case MT_MARIAN_INTGEMM16AVX512: return 32;
    default: return -1;
    }
}

/* Mainline Marian's intgemm items (generic or CPU-specific). */
static bool is_intgemm(uint32_t t) { return isa_regs(t) >= 0; }

/* Element index of Wq[n, k] (W's column n, row k) in an item with r values
** per register (0: generic, row-major [N, K]). */
static size_t item_index(int64_t n, int64_t k, int64_t kk, int r) {
    if (r == 0) return (size_t)(n * kk + k);
    return (size_t)((((n / 8) * (kk / r) + k / r) * 8 + n % 8) * r + k % r);
}

bool mt_marian_is_gemm_weight(const char *name) {
    const char *w = strstr(name, "_W");
    if (w == NULL) return false;
    size_t pos = (size_t)(w - name), len = strlen(name);
    return pos + 3 == len || pos + 2 == len;
}

/* Checks an intgemm item; *k, *n its logical shape, *qb its multiplier. */
static mt_status intgemm_geometry(const char *name, const mt_tensor *t, const mt_model_item *it,
                                  int64_t *k, int64_t *n, float *qb) {
    size_t w = mt_marian_type_width(it->marian_type);
    int r = isa_regs(it->marian_type);
    const mt_shape *s = &t->shape;
    if (s->ndim != 2 || s->dim[0] < 1 || s->dim[1] < 1) {
        char sb[96];
        return mt_seterr(MT_ERR_FORMAT, "item '%s': intgemm matrix of shape %s (need [K, N])", name,
                         mt_shape_str(s, sb, sizeof sb));
    }
    *k = s->dim[0];
    *n = s->dim[1];
    if (r > 0 && (*k % r != 0 || *n % 8 != 0)) {
        return mt_seterr(MT_ERR_FORMAT,
                         "item '%s': %s matrix [%lld, %lld]: the rows must be a multiple of %d "
                         "and the columns of 8",
                         name, mt_marian_type_name(it->marian_type), (long long)*k, (long long)*n,
                         r);
    }
    size_t need = (size_t)(*k) * (size_t)(*n) * w + 4;
    if (it->raw_bytes < need || t->data == NULL) {
        return mt_seterr(MT_ERR_FORMAT, "item '%s': %zu bytes for an %s [%lld, %lld] (need %zu)",
                         name, it->raw_bytes, mt_marian_type_name(it->marian_type), (long long)*k,
                         (long long)*n, need);
    }
    memcpy(qb, (const char *)t->data + need - 4, 4);
    if (!isfinite(*qb) || !(*qb > 0.0f)) {
        return mt_seterr(MT_ERR_FORMAT, "item '%s': bad quantization multiplier %g", name,
                         (double)*qb);
    }
    return MT_OK;
}

/* ---------------------------------------------------------------- loading */

mt_status mt_params_adopt_item(mt_params *p, const char *name, mt_tensor *t,
                               const mt_model_item *item) {
    if (item == NULL || !item->raw) return mt_params_adopt(p, name, t);
    if (!is_intgemm(item->marian_type)) {
        const char *tn = mt_marian_type_name(item->marian_type);
        return mt_seterr(MT_ERR_UNSUPPORTED,
                         "param '%s': Marian type %s (0x%x) is not supported; mtpe reads "
                         "mainline Marian's intgemm items (marian-conv -g intgemm8|intgemm16 and "
                         "their CPU-specific variants)",
                         name, tn ? tn : "(unknown)", (unsigned)item->marian_type);
    }
    int64_t k = 0, n = 0;
    float qb = 0.0f;
    mt_status rc = intgemm_geometry(name, t, item, &k, &n, &qb);
    if (rc != MT_OK) return rc;
    size_t w = mt_marian_type_width(item->marian_type);
    bool i8 = w == 1;
    int r = isa_regs(item->marian_type);
    mt_tensor v = {0};
    void *host = mt_try_malloc((size_t)(k * n) * w);
    if (host == NULL) return mt_seterr(MT_ERR_NOMEM, "param '%s': out of memory", name);
    rc = mt_tensor_init(params_device(p), i8 ? MT_I8 : MT_I16, mt_shape2(k, n), &v);
    if (rc != MT_OK) goto fail;
    /* W^T in the file ([N, K], or intgemm's order) -> [K, N] row-major */
    for (int64_t col = 0; col < n; col++) {
        for (int64_t row = 0; row < k; row++) {
            const char *src = (const char *)t->data + item_index(col, row, k, r) * w;
            memcpy((char *)host + (size_t)(row * n + col) * w, src, w);
        }
    }
    rc = mt_tensor_set(&v, host, (size_t)(k * n) * w);
    if (rc != MT_OK) goto fail;
    rc = mt_params_adopt(p, name, &v);
    if (rc != MT_OK) goto fail;
    params_set_qmult(p, mt_params_count(p) - 1, qb);
    mt_free(host);
    return MT_OK;
fail:
    mt_tensor_free(&v);
    mt_free(host);
    return rc;
}

/* ------------------------------------------------------------- converting */

/* Replaces item i by a new tensor (data owned, from mt_try_aligned_alloc). */
static void replace_item(mt_model_file *m, int i, mt_tensor t, const mt_model_item *info) {
    mt_tensor_free(&m->tensors[i]);
    m->tensors[i] = t;
    m->items[i] = *info;
}

/* W [K, N] f32 -> generic intgemm item of the given width. */
static mt_status to_intgemm(mt_model_file *m, int i, const float *wv, int bits) {
    const char *name = m->names[i];
    mt_device *d = mt_device_cpu();
    int64_t k = m->tensors[i].shape.dim[0], n = m->tensors[i].shape.dim[1];
    size_t w = (size_t)bits / 8, nk = (size_t)(k * n);
    size_t bytes = nk * w + 4;
    float *tr = mt_try_malloc(nk * sizeof *tr);
    void *data = mt_try_aligned_alloc(bytes);
    if (tr == NULL || data == NULL) {
        mt_free(tr);
        mt_aligned_free(data);
        return mt_seterr(MT_ERR_NOMEM, "item '%s': out of memory (quantize)", name);
    }
    for (int64_t r = 0; r < k; r++) {
        for (int64_t c = 0; c < n; c++)
            tr[c * k + r] = wv[r * n + c];
    }
    float qb = bits == 8 ? i8_mult(d->ops->maxabs_f32(d, (int64_t)nk, wv)) : 1024.0f;
    d->ops->quantize(d, bits, (int64_t)nk, tr, qb, data);
    memcpy((char *)data + nk * w, &qb, 4);
    mt_free(tr);
    mt_tensor t = {.shape = mt_shape2(k, n),
                   .dtype = bits == 8 ? MT_I8 : MT_I16,
                   .data = data,
                   .dev = NULL,
                   .owns = true};
    mt_model_item info = {.marian_type = bits == 8 ? MT_MARIAN_INTGEMM8 : MT_MARIAN_INTGEMM16,
                          .raw = true,
                          .raw_bytes = bytes,
                          .bin_bytes = 0};
    replace_item(m, i, t, &info);
    return MT_OK;
}

/* Generic intgemm item -> W [K, N] f32 in *out (caller frees; NULL on error). */
static mt_status from_intgemm(const mt_model_file *m, int i, float **out) {
    const char *name = m->names[i];
    const mt_tensor *t = &m->tensors[i];
    int64_t k = 0, n = 0;
    float qb = 0.0f;
    *out = NULL;
    mt_status rc = intgemm_geometry(name, t, &m->items[i], &k, &n, &qb);
    if (rc != MT_OK) return rc;
    float *wv = mt_try_aligned_alloc((size_t)(k * n) * sizeof *wv);
    if (wv == NULL) return mt_seterr(MT_ERR_NOMEM, "item '%s': out of memory (dequantize)", name);
    bool i8 = mt_marian_type_width(m->items[i].marian_type) == 1;
    int r = isa_regs(m->items[i].marian_type);
    for (int64_t col = 0; col < n; col++) {
        for (int64_t row = 0; row < k; row++) {
            size_t at = item_index(col, row, k, r);
            float q =
                i8 ? (float)((const int8_t *)t->data)[at] : (float)((const int16_t *)t->data)[at];
            wv[row * n + col] = q / qb;
        }
    }
    *out = wv;
    return MT_OK;
}

mt_status mt_model_file_quantize(mt_model_file *m, mt_gemm_type type, int *n_changed) {
    if (n_changed) *n_changed = 0;
    if (type != MT_GEMM_FLOAT32 && type != MT_GEMM_INT8 && type != MT_GEMM_INT16) {
        return mt_seterr(MT_ERR_UNSUPPORTED, "convert: gemm type %s cannot be stored in a file",
                         mt_gemm_type_name(type));
    }
    uint32_t want = type == MT_GEMM_INT8 ? MT_MARIAN_INTGEMM8 : MT_MARIAN_INTGEMM16;
    for (int i = 0; i < m->n; i++) {
        const char *name = m->names[i];
        const mt_model_item *it = &m->items[i];
        const mt_tensor *t = &m->tensors[i];
        if (strncmp(name, "special:", 8) == 0) continue;
        mt_status rc = MT_OK;
        float *wv = NULL;
        if (type == MT_GEMM_FLOAT32) {
            if (!it->raw || !is_intgemm(it->marian_type)) continue; /* not intgemm: keep */
            rc = from_intgemm(m, i, &wv);
            if (rc != MT_OK) return rc;
            mt_tensor nt = {
                .shape = t->shape, .dtype = MT_F32, .data = wv, .dev = NULL, .owns = true};
            mt_model_item info = {.marian_type = MT_MARIAN_FLOAT32, .raw = false};
            replace_item(m, i, nt, &info);
        } else if (!it->raw && t->dtype == MT_F32 && t->shape.ndim == 2 &&
                   mt_marian_is_gemm_weight(name)) {
            rc = to_intgemm(m, i, t->data, type == MT_GEMM_INT8 ? 8 : 16);
        } else if (it->raw && is_generic(it->marian_type) && it->marian_type != want) {
            rc = from_intgemm(m, i, &wv);
            if (rc == MT_OK) rc = to_intgemm(m, i, wv, type == MT_GEMM_INT8 ? 8 : 16);
            mt_aligned_free(wv);
        } else {
            continue;
        }
        if (rc != MT_OK) return rc;
        if (n_changed) (*n_changed)++;
    }
    return MT_OK;
}
