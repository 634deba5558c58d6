/*
** batch.c: allocation of mt_batch (one block per array, zero-filled) and
** padded batches built from token sequences.
*/
#include "batch.h"

void mt_batch_free(mt_batch *b) {
    if (!b) return;
    for (int s = 0; s < MT_MAX_STREAMS; s++) {
        mt_free(b->src_ids[s]);
        mt_free(b->src_mask[s]);
    }
    mt_free(b->trg_ids);
    mt_free(b->trg_mask);
    mt_free(b->sent_ids);
    mt_free(b);
}

mt_status mt_batch_alloc(int n_src, int32_t size, const int32_t *src_len, int32_t trg_len,
                         mt_batch **out) {
    *out = NULL;
    if (n_src < 1 || n_src > MT_MAX_STREAMS || size < 1 || trg_len < 0)
        return mt_seterr(MT_ERR_INVALID, "batch: bad size (streams %d, sentences %d)", n_src,
                         (int)size);
    mt_batch *b = mt_try_calloc(1, sizeof *b);
    if (!b) goto nomem;
    b->n_src = n_src;
    b->size = size;
    for (int s = 0; s < n_src; s++) {
        size_t n = (size_t)size * (size_t)(src_len[s] > 0 ? src_len[s] : 1);
        b->src_len[s] = src_len[s];
        b->src_ids[s] = mt_try_calloc(n, sizeof(int32_t));
        b->src_mask[s] = mt_try_calloc(n, sizeof(float));
        if (!b->src_ids[s] || !b->src_mask[s]) goto nomem;
    }
    b->trg_len = trg_len;
    if (trg_len > 0) {
        size_t n = (size_t)size * (size_t)trg_len;
        b->trg_ids = mt_try_calloc(n, sizeof(int32_t));
        b->trg_mask = mt_try_calloc(n, sizeof(float));
        if (!b->trg_ids || !b->trg_mask) goto nomem;
    }
    b->sent_ids = mt_try_calloc((size_t)size, sizeof(int64_t));
    if (!b->sent_ids) goto nomem;
    *out = b;
    return MT_OK;
nomem:
    mt_batch_free(b);
    return mt_seterr(MT_ERR_NOMEM, "batch: out of memory (%d sentences)", (int)size);
}

mt_status mt_batch_make(int n_src, bool has_trg, int32_t size, const mt_batch_seq *seqs,
                        const int64_t *sent_ids, mt_batch **out) {
    *out = NULL;
    if (n_src < 1 || n_src > MT_MAX_STREAMS || size < 1)
        return mt_seterr(MT_ERR_INVALID, "batch: bad size (streams %d, sentences %d)", n_src,
                         (int)size);
    int per = n_src + (has_trg ? 1 : 0);
    int32_t len[MT_MAX_STREAMS + 1] = {0};
    for (int32_t i = 0; i < size; i++) {
        for (int s = 0; s < per; s++) {
            const mt_batch_seq *q = &seqs[(size_t)i * per + s];
            if (q->len < 1 || q->ids == NULL)
                return mt_seterr(MT_ERR_INVALID, "batch: sentence %d stream %d is empty", (int)i,
                                 s);
            if (q->len > len[s]) len[s] = q->len;
        }
    }
    mt_batch *b = NULL;
    mt_status rc = mt_batch_alloc(n_src, size, len, has_trg ? len[n_src] : 0, &b);
    if (rc != MT_OK) return rc;
    for (int32_t i = 0; i < size; i++) {
        for (int s = 0; s < per; s++) {
            const mt_batch_seq *q = &seqs[(size_t)i * per + s];
            int32_t *ids = s < n_src ? b->src_ids[s] : b->trg_ids;
            float *mask = s < n_src ? b->src_mask[s] : b->trg_mask;
            size_t off = (size_t)i * (size_t)len[s];
            for (int32_t t = 0; t < q->len; t++) {
                ids[off + t] = q->ids[t];
                mask[off + t] = 1.0f;
            }
            if (s == n_src) b->trg_words += q->len;
        }
        b->sent_ids[i] = sent_ids ? sent_ids[i] : i;
    }
    *out = b;
    return MT_OK;
}

void mt_batch_reverse_seq(int32_t *ids, int32_t len) {
    for (int32_t i = 0, j = len - 2; i < j; i++, j--) {
        int32_t t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
    }
}

static uint64_t fnv_ids(uint64_t h, const int32_t *ids, const float *mask, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        if (mask && mask[i] == 0) continue;
        uint32_t v = (uint32_t)ids[i];
        for (int k = 0; k < 4; k++) {
            h ^= (v >> (8 * k)) & 0xffu;
            h *= 0x100000001b3ull;
        }
    }
    return h;
}

static uint64_t fnv_sep(uint64_t h) {
    for (int k = 0; k < 4; k++) {
        h ^= 0xffu;
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t mt_pair_hash(const int32_t *src, int64_t n_src, const int32_t *trg, int64_t n_trg) {
    uint64_t h = fnv_ids(0xcbf29ce484222325ull, src, NULL, n_src);
    return fnv_ids(fnv_sep(h), trg, NULL, n_trg);
}

uint64_t mt_batch_row_hash(const mt_batch *b, int32_t r) {
    int64_t S = b->src_len[0], T = b->trg_len;
    uint64_t h = fnv_ids(0xcbf29ce484222325ull, b->src_ids[0] + r * S, b->src_mask[0] + r * S, S);
    h = fnv_sep(h);
    if (b->trg_ids) h = fnv_ids(h, b->trg_ids + r * T, b->trg_mask + r * T, T);
    return h;
}
