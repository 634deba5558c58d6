/*
** bin.c: Marian's binary model format (src/common/binary.cpp,
** BINARY_FILE_VERSION 1), used for packed and quantized (intgemm) models.
**
** All integers little-endian:
**
**   OFFSET        SIZE      CONTENT
**      0            8       version (must be 1)
**      8            8       N, the number of items
**     16         N * 32     per item: u64 nameLength (incl. the NUL),
**                           u64 type (Marian type code, see mt.h),
**                           u64 shapeLength (dimensions),
**                           u64 dataLength (blob bytes, incl. padding)
**      *        sum(nameLength)   the names, each NUL-terminated
**      *        sum(4*shapeLength) the shapes, int32 per dimension
**      p            8       P, the number of zero bytes that follow
**    p + 8          P       zeros: the data starts on a 256-byte boundary,
**                           P = ((p + 8) / 256 + 1) * 256 - p - 8 (1..256)
**   p + 8 + P   sum(dataLength)   the blobs, in header order
**
** Marian's allocator rounds parameter blobs up to 256 bytes (zeros after
** the data); the special:model.yml blob (int8, shape [len + 1], YAML text +
** NUL, always last) is not padded.  Item types: float32, float16, int8,
** int16, int32 become tensors; float64, int64, uint*, intgemm8/16 and their
** ISA variants (elements * width + 4 bytes: the quantization multiplier
** follows the integers), packed FBGEMM types (opaque size) and Bergamot's
** 0x4101/0x4102 are kept as raw blobs with their type.  Every blob is kept
** whole (padding included) and its dataLength remembered, so reading a .bin
** and writing it back reproduces the file byte for byte.
*/
#include <stdio.h>
#include <string.h>

#include "mt.h"

#define BIN_VERSION 1
#define BIN_ALIGN 256
#define CONFIG_NAME "special:model.yml"

static uint64_t rd64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}
static int32_t rd32s(const unsigned char *p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24);
}

/* True when [off, off+len) lies inside a buffer of size bytes. */
static bool in_bounds(uint64_t off, uint64_t len, uint64_t size) {
    return off <= size && len <= size - off;
}

/* Element count, saturated at INT64_MAX (then no blob can be big enough). */
static int64_t numel_sat(const mt_shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++) {
        if (s->dim[i] == 0) return 0;
        if (n > INT64_MAX / s->dim[i])
            n = INT64_MAX;
        else
            n *= s->dim[i];
    }
    return n;
}

static void shape_text(const mt_shape *s, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < s->ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)s->dim[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
}

/* Adds item `name` from its blob. */
static mt_status add_blob(mt_model_file *m, const char *file, const char *name, uint64_t type,
                          const mt_shape *shape, const unsigned char *blob, uint64_t len) {
    char sh[128];
    if (strcmp(name, CONFIG_NAME) == 0) {
        if ((type != MT_MARIAN_INT8 && type != MT_MARIAN_UINT8) || shape->ndim != 1)
            return mt_seterr(MT_ERR_FORMAT, "%s: item '%s' is not a 1-D int8 array of YAML text",
                             file, name);
        if (m->config_yaml != NULL)
            return mt_seterr(MT_ERR_FORMAT, "%s: item '%s' appears twice", file, name);
        const unsigned char *nul = memchr(blob, 0, (size_t)len);
        size_t n = nul ? (size_t)(nul - blob) : (size_t)len;
        char *text = mt_try_malloc(n + 1);
        if (text == NULL)
            return mt_seterr(MT_ERR_NOMEM, "%s: out of memory for the model config", file);
        memcpy(text, blob, n);
        text[n] = '\0';
        m->config_yaml = text;
        return MT_OK;
    }
    const char *tn = type <= UINT32_MAX ? mt_marian_type_name((uint32_t)type) : NULL;
    if (tn == NULL)
        return mt_seterr(MT_ERR_UNSUPPORTED, "%s: item '%s' has unknown Marian type 0x%llx", file,
                         name, (unsigned long long)type);
    int64_t numel = numel_sat(shape);
    size_t need = mt_marian_required_bytes((uint32_t)type, numel); /* 0: packed, opaque */
    if (need > len) {
        shape_text(shape, sh, sizeof sh);
        return mt_seterr(MT_ERR_FORMAT,
                         "%s: item '%s': blob of %llu bytes is too small for shape %s of %s", file,
                         name, (unsigned long long)len, sh, tn);
    }
    if (mt_model_file_index(m, name) >= 0)
        return mt_seterr(MT_ERR_FORMAT, "%s: item '%s' appears twice", file, name);
    void *buf = mt_try_aligned_alloc(len ? (size_t)len : 1);
    if (buf == NULL)
        return mt_seterr(MT_ERR_NOMEM, "%s: out of memory for item '%s' (%llu bytes)", file, name,
                         (unsigned long long)len);
    if (len) memcpy(buf, blob, (size_t)len);
    mt_tensor t = {.shape = *shape, .data = buf, .owns = true};
    mt_model_item info = {.marian_type = (uint32_t)type, .bin_bytes = (size_t)len};
    switch (type) {
    case MT_MARIAN_FLOAT32: t.dtype = MT_F32; break;
    case MT_MARIAN_FLOAT16: t.dtype = MT_F16; break;
    case MT_MARIAN_INT8: t.dtype = MT_I8; break;
    case MT_MARIAN_INT16: t.dtype = MT_I16; break;
    case MT_MARIAN_INT32: t.dtype = MT_I32; break;
    default:
        t.dtype = mt_marian_type_width((uint32_t)type) == 1 ? MT_I8 : MT_I16;
        info.raw = true;
        info.raw_bytes = need ? need : (size_t)len;
        break;
    }
    mt_status rc = mt_model_file_adopt(m, name, &t, &info);
    if (rc != MT_OK) {
        mt_aligned_free(buf);
        if (rc != MT_ERR_NOMEM) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s", mt_errmsg());
            rc = mt_seterr(rc, "%s: %s", file, msg);
        }
    }
    return rc;
}

mt_status mt_bin_read_mem(const void *data, size_t size, const char *name, mt_model_file **out) {
    MT_ASSERT(out != NULL && (data != NULL || size == 0));
    const unsigned char *b = data;
    const char *file = name ? name : "<memory>";
    if (size < 16)
        return mt_seterr(MT_ERR_FORMAT, "%s: too short for a Marian .bin model (%zu bytes)", file,
                         size);
    uint64_t version = rd64(b), n = rd64(b + 8);
    if (version != BIN_VERSION)
        return mt_seterr(MT_ERR_FORMAT,
                         "%s: not a Marian .bin model (version field %llu, expected %d)", file,
                         (unsigned long long)version, BIN_VERSION);
    if (n > (size - 16) / 32)
        return mt_seterr(MT_ERR_FORMAT,
                         "%s: header claims %llu items, more than a file of %zu bytes can hold",
                         file, (unsigned long long)n, size);
    /* pass 1: names and shapes must lie inside the file */
    const unsigned char *hdr = b + 16;
    uint64_t pos = 16 + 32 * n, names_at = pos;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t nlen = rd64(hdr + 32 * i);
        if (nlen == 0 || !in_bounds(pos, nlen, size))
            return mt_seterr(MT_ERR_FORMAT,
                             "%s: name of item %llu (%llu bytes at offset %llu) extends past "
                             "end of file (file size %zu)",
                             file, (unsigned long long)i, (unsigned long long)nlen,
                             (unsigned long long)pos, size);
        if (memchr(b + pos, 0, (size_t)nlen) != b + pos + nlen - 1)
            return mt_seterr(MT_ERR_FORMAT, "%s: name of item %llu is not NUL-terminated", file,
                             (unsigned long long)i);
        pos += nlen;
    }
    uint64_t shapes_at = pos;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t slen = rd64(hdr + 32 * i + 16);
        if (slen > MT_MAX_DIMS)
            return mt_seterr(slen > 64 ? MT_ERR_FORMAT : MT_ERR_UNSUPPORTED,
                             "%s: item %llu has %llu dimensions (at most %d supported)", file,
                             (unsigned long long)i, (unsigned long long)slen, MT_MAX_DIMS);
        if (!in_bounds(pos, 4 * slen, size))
            return mt_seterr(MT_ERR_FORMAT,
                             "%s: shape of item %llu extends past end of file (offset %llu, "
                             "file size %zu)",
                             file, (unsigned long long)i, (unsigned long long)pos, size);
        pos += 4 * slen;
    }
    if (!in_bounds(pos, 8, size))
        return mt_seterr(MT_ERR_FORMAT, "%s: truncated before the data section (offset %llu)", file,
                         (unsigned long long)pos);
    uint64_t pad = rd64(b + pos);
    pos += 8;
    if (!in_bounds(pos, pad, size))
        return mt_seterr(MT_ERR_FORMAT,
                         "%s: data padding of %llu bytes extends past end of file (offset %llu, "
                         "file size %zu)",
                         file, (unsigned long long)pad, (unsigned long long)pos, size);
    pos += pad;
    uint64_t data_at = pos;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t dlen = rd64(hdr + 32 * i + 24);
        if (!in_bounds(pos, dlen, size)) {
            const char *nm = (const char *)b + names_at;
            for (uint64_t k = 0; k < i; k++)
                nm += rd64(hdr + 32 * k);
            return mt_seterr(MT_ERR_FORMAT,
                             "%s: item '%s' data extends past end of file (offset %llu, size "
                             "%llu, file size %zu)",
                             file, nm, (unsigned long long)pos, (unsigned long long)dlen, size);
        }
        pos += dlen;
    }
    if (pos != size)
        return mt_seterr(MT_ERR_FORMAT, "%s: %llu unexpected bytes after the last item", file,
                         (unsigned long long)(size - pos));

    /* pass 2: everything is in bounds; build the items */
    mt_model_file *m = mt_model_file_new();
    if (m == NULL) return mt_seterr(MT_ERR_NOMEM, "%s: out of memory", file);
    mt_status rc = MT_OK;
    const char *nm = (const char *)b + names_at;
    const unsigned char *sp = b + shapes_at, *blob = b + data_at;
    for (uint64_t i = 0; i < n && rc == MT_OK; i++) {
        const unsigned char *h = hdr + 32 * i;
        mt_shape shape = {.ndim = (int)rd64(h + 16)};
        for (int d = 0; d < shape.ndim; d++) {
            int32_t v = rd32s(sp + 4 * d);
            if (v < 0) {
                rc = mt_seterr(MT_ERR_FORMAT, "%s: item '%s' has a negative dimension %d", file, nm,
                               (int)v);
                break;
            }
            shape.dim[d] = v;
        }
        if (rc == MT_OK) rc = add_blob(m, file, nm, rd64(h + 8), &shape, blob, rd64(h + 24));
        nm += rd64(h);
        sp += 4 * (uint64_t)shape.ndim;
        blob += rd64(h + 24);
    }
    if (rc != MT_OK) {
        mt_model_file_free(m);
        return rc;
    }
    *out = m;
    return MT_OK;
}

/* ------------------------------------------------------------ writing */

static void wr64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static mt_status emit(mt_write_fn fn, void *user, const void *p, uint64_t n) {
    const unsigned char *b = p;
    const uint64_t chunk = (uint64_t)1 << 30;
    while (n > 0) {
        size_t k = (size_t)(n > chunk ? chunk : n);
        mt_status rc = fn(user, b, k);
        if (rc != MT_OK) return rc;
        b += k;
        n -= k;
    }
    return MT_OK;
}

static mt_status emit_zeros(mt_write_fn fn, void *user, uint64_t n) {
    static const unsigned char zeros[BIN_ALIGN];
    while (n > 0) {
        uint64_t k = n > BIN_ALIGN ? BIN_ALIGN : n;
        mt_status rc = fn(user, zeros, (size_t)k);
        if (rc != MT_OK) return rc;
        n -= k;
    }
    return MT_OK;
}

/* Item details; a model file filled in by hand (items NULL) is all typed. */
static const mt_model_item *item_of(const mt_model_file *m, int i) {
    static const mt_model_item typed = {0};
    return m->items ? &m->items[i] : &typed;
}

/* The bytes of item i (data, before padding), and its Marian type. */
static mt_status item_layout(const mt_model_file *m, int i, const char *file, uint32_t *type,
                             uint64_t *bytes, uint64_t *blob) {
    const mt_tensor *t = &m->tensors[i];
    const mt_model_item *it = item_of(m, i);
    *type = it->raw ? it->marian_type : mt_marian_type_of(t->dtype);
    if (mt_marian_type_name(*type) == NULL)
        return mt_seterr(MT_ERR_INVALID, "%s: item '%s' has unknown Marian type 0x%x", file,
                         m->names[i], (unsigned)*type);
    if (t->shape.ndim < 0 || t->shape.ndim > MT_MAX_DIMS)
        return mt_seterr(MT_ERR_INVALID, "%s: item '%s' has %d dimensions", file, m->names[i],
                         t->shape.ndim);
    for (int d = 0; d < t->shape.ndim; d++)
        if (t->shape.dim[d] < 0 || t->shape.dim[d] > INT32_MAX)
            return mt_seterr(MT_ERR_INVALID,
                             "%s: item '%s' has dimension %lld (.bin holds int32 dimensions)", file,
                             m->names[i], (long long)t->shape.dim[d]);
    *bytes = it->raw ? it->raw_bytes : mt_marian_required_bytes(*type, numel_sat(&t->shape));
    if (*bytes == SIZE_MAX)
        return mt_seterr(MT_ERR_INVALID, "%s: item '%s' is too large", file, m->names[i]);
    /* keep the blob size the item was read with, else pad like Marian */
    if (it->bin_bytes >= *bytes && it->bin_bytes > 0)
        *blob = it->bin_bytes;
    else
        *blob = (*bytes + BIN_ALIGN - 1) / BIN_ALIGN * BIN_ALIGN;
    return MT_OK;
}

mt_status mt_bin_write_to(const mt_model_file *m, const char *name, mt_write_fn fn, void *user) {
    MT_ASSERT(m != NULL && fn != NULL);
    const char *file = name ? name : "<memory>";
    uint64_t n = (uint64_t)m->n + (m->config_yaml ? 1 : 0);
    uint64_t cfg_len = m->config_yaml ? strlen(m->config_yaml) + 1 : 0;
    if (cfg_len > INT32_MAX) return mt_seterr(MT_ERR_INVALID, "%s: config too long", file);
    unsigned char w[32];
    uint32_t type;
    uint64_t bytes, blob, pos = 16 + 32 * n;
    mt_status rc;

    /* validate everything before the first byte goes out */
    for (int i = 0; i < m->n; i++) {
        rc = item_layout(m, i, file, &type, &bytes, &blob);
        if (rc != MT_OK) return rc;
    }
    wr64(w, BIN_VERSION);
    wr64(w + 8, n);
    rc = emit(fn, user, w, 16);
    for (int i = 0; i < m->n && rc == MT_OK; i++) {
        item_layout(m, i, file, &type, &bytes, &blob);
        wr64(w, strlen(m->names[i]) + 1);
        wr64(w + 8, type);
        wr64(w + 16, (uint64_t)m->tensors[i].shape.ndim);
        wr64(w + 24, blob);
        rc = emit(fn, user, w, 32);
        pos += strlen(m->names[i]) + 1 + 4 * (uint64_t)m->tensors[i].shape.ndim;
    }
    if (m->config_yaml && rc == MT_OK) {
        wr64(w, sizeof CONFIG_NAME);
        wr64(w + 8, MT_MARIAN_INT8);
        wr64(w + 16, 1);
        wr64(w + 24, cfg_len);
        rc = emit(fn, user, w, 32);
        pos += sizeof CONFIG_NAME + 4;
    }
    for (int i = 0; i < m->n && rc == MT_OK; i++)
        rc = emit(fn, user, m->names[i], strlen(m->names[i]) + 1);
    if (m->config_yaml && rc == MT_OK) rc = emit(fn, user, CONFIG_NAME, sizeof CONFIG_NAME);
    for (int i = 0; i < m->n && rc == MT_OK; i++) {
        const mt_shape *s = &m->tensors[i].shape;
        for (int d = 0; d < s->ndim && rc == MT_OK; d++) {
            uint32_t v = (uint32_t)s->dim[d];
            unsigned char b4[4] = {(unsigned char)v, (unsigned char)(v >> 8),
                                   (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
            rc = emit(fn, user, b4, 4);
        }
    }
    if (m->config_yaml && rc == MT_OK) {
        unsigned char b4[4] = {(unsigned char)cfg_len, (unsigned char)(cfg_len >> 8),
                               (unsigned char)(cfg_len >> 16), (unsigned char)(cfg_len >> 24)};
        rc = emit(fn, user, b4, 4);
    }
    /* padding: the data starts on the next 256-byte boundary after pos + 8 */
    uint64_t next = ((pos + 8) / BIN_ALIGN + 1) * BIN_ALIGN, pad = next - pos - 8;
    wr64(w, pad);
    if (rc == MT_OK) rc = emit(fn, user, w, 8);
    if (rc == MT_OK) rc = emit_zeros(fn, user, pad);
    for (int i = 0; i < m->n && rc == MT_OK; i++) {
        item_layout(m, i, file, &type, &bytes, &blob);
        rc = emit(fn, user, m->tensors[i].data, bytes);
        if (rc != MT_OK) break;
        if (blob == item_of(m, i)->bin_bytes) /* the buffer holds the original padding */
            rc = emit(fn, user, (const unsigned char *)m->tensors[i].data + bytes, blob - bytes);
        else
            rc = emit_zeros(fn, user, blob - bytes);
    }
    if (m->config_yaml && rc == MT_OK) rc = emit(fn, user, m->config_yaml, cfg_len);
    return rc;
}
