/*
** shortlist.c: Marian lexical shortlists for decoding (formats and semantics:
** shortlist.h, which holds the byte table of the binary format).
**
** Text format read here:
**   lex.s2t                  whitespace-separated triples "target source prob";
**                            prob parsed as a C float (strtof)
** Files may be gzip-compressed.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"
#include "shortlist.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the binary shortlist code assumes a little-endian host"
#endif

static bool is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '\n';
}

/* ------------------------------------------------------- text lex (read) */

mt_status mt_lex_read_text(const char *path, mt_token_map map, void *user, mt_lex_triple **out,
                           int64_t *n) {
    char *buf = NULL;
    size_t len = 0;
    mt_lex_triple *v = NULL;
    int64_t cnt = 0, cap = 1024, line = 1;
    mt_status rc = mt_text_read_all(path, &buf, &len);
    if (rc != MT_OK) return rc;
    v = mt_try_malloc((size_t)cap * sizeof *v);
    if (v == NULL) goto nomem;
    size_t p = 0;
    for (;;) {
        char *tok[3];
        int got = 0;
        int64_t tok_line = line;
        for (; got < 3; got++) {
            while (p < len && is_blank(buf[p]))
                if (buf[p++] == '\n') line++;
            if (p >= len) break;
            if (got == 0) tok_line = line;
            tok[got] = buf + p;
            while (p < len && !is_blank(buf[p]))
                p++;
            if (p < len) {
                if (buf[p] == '\n') line++;
                buf[p++] = '\0'; /* buf[len] is already NUL */
            }
        }
        if (got == 0) break;
        if (got < 3) {
            rc = mt_seterr(MT_ERR_FORMAT, "%s:%lld: incomplete entry at the end of the file", path,
                           (long long)tok_line);
            goto fail;
        }
        char *end;
        errno = 0;
        float prob = strtof(tok[2], &end);
        if (end == tok[2] || *end != '\0') {
            rc = mt_seterr(MT_ERR_FORMAT, "%s:%lld: probability '%s' is not a number", path,
                           (long long)tok_line, tok[2]);
            goto fail;
        }
        if (strcmp(tok[0], "NULL") == 0 || strcmp(tok[1], "NULL") == 0) continue;
        if (cnt == cap) {
            cap *= 2;
            mt_lex_triple *nv = mt_try_realloc(v, (size_t)cap * sizeof *nv);
            if (nv == NULL) goto nomem;
            v = nv;
        }
        v[cnt].trg = map(user, tok[0], false);
        v[cnt].src = map(user, tok[1], true);
        v[cnt].prob = prob;
        cnt++;
    }
    mt_free(buf);
    *out = v;
    *n = cnt;
    return MT_OK;
nomem:
    rc = mt_seterr(MT_ERR_NOMEM, "no memory to read '%s'", path);
fail:
    mt_free(buf);
    mt_free(v);
    return rc;
}

/* ------------------------------------------------------------- building */

void mt_shortlist_free(mt_shortlist *sl) {
    if (sl == NULL) return;
    mt_free(sl->blob);
    mt_free(sl);
}

uint64_t mt_shortlist_checksum(const void *data, size_t size) {
    uint64_t seed = 0;
    if (size < 16) return 0;
    const unsigned char *p = (const unsigned char *)data + 16;
    size_t words = (size - 16) / 8;
    for (size_t k = 0; k < words; k++) {
        uint64_t v;
        memcpy(&v, p + 8 * k, 8);
        seed ^= v + 0x9e3779b9ull + (seed << 6) + (seed >> 2);
    }
    return seed;
}

static void put_u64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

static uint64_t get_u64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Allocates an empty shortlist with a blob for W = rows + 1 offsets and s ids;
** fills the header but the checksum. */
static mt_status shortlist_alloc(uint64_t first, uint64_t best, uint64_t rows, uint64_t s,
                                 mt_shortlist **out) {
    if (rows > (SIZE_MAX - MT_SHORTLIST_HEADER) / 16 || s > SIZE_MAX / 8)
        return mt_seterr(MT_ERR_INVALID, "shortlist too large");
    size_t size = MT_SHORTLIST_HEADER + (size_t)(rows + 1) * 8 + (size_t)s * 4;
    mt_shortlist *sl = mt_try_calloc(1, sizeof *sl);
    unsigned char *blob = mt_try_calloc(size, 1);
    if (sl == NULL || blob == NULL) {
        mt_free(sl);
        mt_free(blob);
        return mt_seterr(MT_ERR_NOMEM, "no memory for a shortlist of %zu bytes", size);
    }
    put_u64(blob, MT_SHORTLIST_MAGIC);
    put_u64(blob + 16, first);
    put_u64(blob + 24, best);
    put_u64(blob + 32, rows + 1);
    put_u64(blob + 40, s);
    sl->blob = blob;
    sl->blob_size = size;
    sl->first_num = first;
    sl->best_num = best;
    sl->n_rows = rows;
    sl->offsets = (const uint64_t *)(void *)(blob + MT_SHORTLIST_HEADER);
    sl->ids = (const uint32_t *)(void *)(blob + MT_SHORTLIST_HEADER + (rows + 1) * 8);
    *out = sl;
    return MT_OK;
}

static int cmp_triple_src_trg(const void *pa, const void *pb) {
    const mt_lex_triple *a = pa, *b = pb;
    if (a->src != b->src) return a->src < b->src ? -1 : 1;
    if (a->trg != b->trg) return a->trg < b->trg ? -1 : 1;
    return 0;
}

/* Decreasing probability, then decreasing target id: std::greater on
** pair<float, WordIndex> (text prune) and priority_queue pop order (import). */
static int cmp_triple_best(const void *pa, const void *pb) {
    const mt_lex_triple *a = pa, *b = pb;
    if (a->prob != b->prob) return a->prob > b->prob ? -1 : 1;
    if (a->trg != b->trg) return (uint32_t)a->trg > (uint32_t)b->trg ? -1 : 1;
    return 0;
}

static int cmp_u32(const void *pa, const void *pb) {
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    return a < b ? -1 : a > b;
}

typedef struct keyed_triple {
    mt_lex_triple t;
    int64_t order;
} keyed_triple;

static int cmp_keyed(const void *pa, const void *pb) {
    const keyed_triple *a = pa, *b = pb;
    int c = cmp_triple_src_trg(&a->t, &b->t);
    if (c) return c;
    return a->order < b->order ? -1 : a->order > b->order;
}

mt_status mt_shortlist_build(const mt_lex_triple *t, int64_t n, int32_t src_vocab_size,
                             uint64_t first_num, uint64_t best_num, float threshold,
                             mt_shortlist_mode mode, mt_shortlist **out) {
    mt_status rc = MT_OK;
    keyed_triple *k = mt_try_malloc((size_t)(n > 0 ? n : 1) * sizeof *k);
    mt_lex_triple *u = mt_try_malloc((size_t)(n > 0 ? n : 1) * sizeof *u);
    mt_shortlist *sl = NULL;
    if (k == NULL || u == NULL) {
        rc = mt_seterr(MT_ERR_NOMEM, "no memory for a shortlist of %lld entries", (long long)n);
        goto done;
    }
    int64_t rows = 0;
    for (int64_t i = 0; i < n; i++) {
        if (t[i].src < 0 || t[i].trg < 0) {
            rc = mt_seterr(MT_ERR_INVALID, "shortlist entry %lld has a negative id",
                           (long long)i + 1);
            goto done;
        }
        if (mode == MT_SL_BINARY && t[i].src >= src_vocab_size) {
            rc = mt_seterr(MT_ERR_INVALID, "shortlist entry %lld: source id %d >= vocab size %d",
                           (long long)i + 1, (int)t[i].src, (int)src_vocab_size);
            goto done;
        }
        if (t[i].src + 1 > rows) rows = t[i].src + 1;
        k[i].t = t[i];
        k[i].order = i;
    }
    if (mode == MT_SL_BINARY) rows = src_vocab_size > 0 ? src_vocab_size : 0;

    /* one value per (src, trg): the last one (text) or the max with 0 (import) */
    qsort(k, (size_t)n, sizeof *k, cmp_keyed);
    int64_t nu = 0;
    for (int64_t i = 0; i < n;) {
        int64_t j = i;
        float v = mode == MT_SL_BINARY ? 0.0f : k[i].t.prob;
        for (; j < n && cmp_triple_src_trg(&k[i].t, &k[j].t) == 0; j++) {
            if (mode == MT_SL_LEXICAL)
                v = k[j].t.prob;
            else if (v < k[j].t.prob)
                v = k[j].t.prob;
        }
        u[nu] = k[i].t;
        u[nu].prob = v;
        nu++;
        i = j;
    }

    /* prune each row in place: u is grouped by src */
    int64_t kept = 0;
    for (int64_t i = 0; i < nu;) {
        int64_t j = i;
        while (j < nu && u[j].src == u[i].src)
            j++;
        qsort(u + i, (size_t)(j - i), sizeof *u, cmp_triple_best);
        uint64_t taken = 0;
        for (int64_t q = i; q < j && taken < best_num; q++) {
            bool pass = mode == MT_SL_LEXICAL ? u[q].prob > threshold
                                              : (double)(uint32_t)u[q].trg >= (double)threshold;
            if (!pass) {
                if (mode == MT_SL_LEXICAL) break; /* sorted: nothing later passes */
                continue;
            }
            u[kept++] = u[q];
            taken++;
        }
        i = j;
    }
    rc = shortlist_alloc(first_num, best_num, (uint64_t)rows, (uint64_t)kept, &sl);
    if (rc != MT_OK) goto done;
    uint64_t *off = (uint64_t *)(void *)(sl->blob + MT_SHORTLIST_HEADER);
    uint32_t *ids = (uint32_t *)(void *)(sl->blob + MT_SHORTLIST_HEADER + (rows + 1) * 8);
    int64_t q = 0;
    for (int64_t r = 0; r < rows; r++) {
        off[r] = (uint64_t)q;
        int64_t st = q;
        while (q < kept && u[q].src == r) {
            ids[q] = (uint32_t)u[q].trg;
            q++;
        }
        qsort(ids + st, (size_t)(q - st), sizeof *ids, cmp_u32);
    }
    off[rows] = (uint64_t)q;
    put_u64(sl->blob + 8, mt_shortlist_checksum(sl->blob, sl->blob_size));
    *out = sl;
done:
    mt_free(k);
    mt_free(u);
    return rc;
}

typedef struct vocab_pair {
    const mt_vocab *src, *trg;
} vocab_pair;

static int32_t map_with_vocabs(void *user, const char *token, bool is_source) {
    const vocab_pair *vp = user;
    return mt_vocab_id(is_source ? vp->src : vp->trg, token);
}

mt_status mt_shortlist_load_text(const char *path, const mt_vocab *src, const mt_vocab *trg,
                                 uint64_t first_num, uint64_t best_num, float threshold,
                                 mt_shortlist_mode mode, mt_shortlist **out) {
    vocab_pair vp = {src, trg};
    mt_lex_triple *t = NULL;
    int64_t n = 0;
    mt_status rc = mt_lex_read_text(path, map_with_vocabs, &vp, &t, &n);
    if (rc != MT_OK) return rc;
    rc = mt_shortlist_build(t, n, mt_vocab_size(src), first_num, best_num, threshold, mode, out);
    mt_free(t);
    if (rc != MT_OK) mt_errprefix(rc, "%s", path);
    return rc;
}

/* --------------------------------------------------------- binary files */

mt_status mt_shortlist_parse(const void *data, size_t size, bool check, int32_t trg_vocab_size,
                             mt_shortlist **out) {
    const unsigned char *p = data;
    if (size < MT_SHORTLIST_HEADER)
        return mt_seterr(MT_ERR_FORMAT, "binary shortlist of %zu bytes is too short for its header",
                         size);
    if (get_u64(p) != MT_SHORTLIST_MAGIC)
        return mt_seterr(MT_ERR_FORMAT, "not a binary shortlist (wrong magic)");
    uint64_t w = get_u64(p + 32), s = get_u64(p + 40);
    if (w == 0 || w > (size - MT_SHORTLIST_HEADER) / 8 ||
        s > (size - MT_SHORTLIST_HEADER - w * 8) / 4 || MT_SHORTLIST_HEADER + w * 8 + s * 4 != size)
        return mt_seterr(MT_ERR_FORMAT,
                         "binary shortlist header (%llu offsets, %llu ids) does not match the "
                         "file size %zu",
                         (unsigned long long)w, (unsigned long long)s, size);
    if (check) {
        uint64_t want = get_u64(p + 8), got = mt_shortlist_checksum(p, size);
        if (want != got)
            return mt_seterr(MT_ERR_FORMAT,
                             "binary shortlist checksum mismatch (stored %016llx, computed "
                             "%016llx): the file is corrupted",
                             (unsigned long long)want, (unsigned long long)got);
    }
    mt_shortlist *sl = NULL;
    mt_status rc = shortlist_alloc(get_u64(p + 16), get_u64(p + 24), w - 1, s, &sl);
    if (rc != MT_OK) return rc;
    memcpy(sl->blob, p, size);
    uint64_t prev = 0;
    for (uint64_t r = 0; r < w; r++) {
        uint64_t o = sl->offsets[r];
        if (o < prev || o > s || (r == w - 1 && o != s) || (r == 0 && o != 0)) {
            mt_shortlist_free(sl);
            return mt_seterr(MT_ERR_FORMAT, "binary shortlist offset %llu (row %llu) out of order",
                             (unsigned long long)o, (unsigned long long)r);
        }
        prev = o;
    }
    if (check && trg_vocab_size > 0) {
        for (uint64_t q = 0; q < s; q++)
            if (sl->ids[q] >= (uint32_t)trg_vocab_size) {
                unsigned bad = (unsigned)sl->ids[q];
                mt_shortlist_free(sl);
                return mt_seterr(MT_ERR_FORMAT,
                                 "binary shortlist target id %u >= target vocab size %d", bad,
                                 (int)trg_vocab_size);
            }
    }
    *out = sl;
    return MT_OK;
}

mt_status mt_shortlist_read(const char *path, bool check, int32_t trg_vocab_size,
                            mt_shortlist **out) {
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    mt_status rc;
    if (f == NULL) return mt_seterr(MT_ERR_IO, "cannot open '%s'", path);
    if (fseek(f, 0, SEEK_END) != 0) goto io;
    long sz = ftell(f);
    if (sz < 0 || fseek(f, 0, SEEK_SET) != 0) goto io;
    buf = mt_try_malloc((size_t)sz + 1);
    if (buf == NULL) {
        fclose(f);
        return mt_seterr(MT_ERR_NOMEM, "no memory to read '%s' (%ld bytes)", path, sz);
    }
    if (fread(buf, 1, (size_t)sz, f) != (size_t)sz) goto io;
    fclose(f);
    rc = mt_shortlist_parse(buf, (size_t)sz, check, trg_vocab_size, out);
    mt_free(buf);
    if (rc != MT_OK) mt_errprefix(rc, "%s", path);
    return rc;
io:
    mt_free(buf);
    fclose(f);
    return mt_seterr(MT_ERR_IO, "cannot read '%s'", path);
}

bool mt_shortlist_is_binary(const char *path) {
    FILE *f = fopen(path, "rb");
    unsigned char b[8];
    if (f == NULL) return false;
    bool ok = fread(b, 1, 8, f) == 8 && get_u64(b) == MT_SHORTLIST_MAGIC;
    fclose(f);
    return ok;
}

mt_status mt_shortlist_write(const mt_shortlist *sl, const char *path) {
    size_t n = strlen(path);
    char *tmp = mt_try_malloc(n + 5);
    if (tmp == NULL) return mt_seterr(MT_ERR_NOMEM, "no memory");
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmp", 5);
    mt_status rc = MT_OK;
    FILE *f = fopen(tmp, "wb");
    if (f == NULL) {
        rc = mt_seterr(MT_ERR_IO, "cannot create '%s'", tmp);
        goto done;
    }
    bool ok = fwrite(sl->blob, 1, sl->blob_size, f) == sl->blob_size;
    ok = (fclose(f) == 0) && ok;
    if (!ok) {
        remove(tmp);
        rc = mt_seterr(MT_ERR_IO, "cannot write '%s'", tmp);
        goto done;
    }
    if (rename(tmp, path) != 0) {
        remove(tmp);
        rc = mt_seterr(MT_ERR_IO, "cannot rename '%s' to '%s'", tmp, path);
    }
done:
    mt_free(tmp);
    return rc;
}

mt_status mt_shortlist_load(const char *path, const mt_vocab *src, const mt_vocab *trg,
                            uint64_t first_num, uint64_t best_num, float threshold, bool check,
                            mt_shortlist **out) {
    if (mt_shortlist_is_binary(path))
        return mt_shortlist_read(path, check, mt_vocab_size(trg), out);
    return mt_shortlist_load_text(path, src, trg, first_num, best_num, threshold, MT_SL_LEXICAL,
                                  out);
}

/* ---------------------------------------------------------- generation */

struct mt_shortlist_gen {
    const mt_shortlist *sl;
    int32_t src_v, trg_v;
    bool shared;
    unsigned char *src_seen; /* [src_v] */
    unsigned char *trg_sel;  /* [trg_v] */
};

mt_status mt_shortlist_gen_init(const mt_shortlist *sl, int32_t src_vocab_size,
                                int32_t trg_vocab_size, bool shared, mt_shortlist_gen **out) {
    if (src_vocab_size <= 0 || trg_vocab_size <= 0)
        return mt_seterr(MT_ERR_INVALID, "shortlist generator: vocab sizes %d, %d",
                         (int)src_vocab_size, (int)trg_vocab_size);
    mt_shortlist_gen *g = mt_try_calloc(1, sizeof *g);
    if (g == NULL) goto nomem;
    g->sl = sl;
    g->src_v = src_vocab_size;
    g->trg_v = trg_vocab_size;
    g->shared = shared;
    g->src_seen = mt_try_calloc((size_t)src_vocab_size, 1);
    g->trg_sel = mt_try_calloc((size_t)trg_vocab_size, 1);
    if (g->src_seen == NULL || g->trg_sel == NULL) goto nomem;
    *out = g;
    return MT_OK;
nomem:
    mt_shortlist_gen_free(g);
    return mt_seterr(MT_ERR_NOMEM, "no memory for a shortlist generator");
}

void mt_shortlist_gen_free(mt_shortlist_gen *g) {
    if (g == NULL) return;
    mt_free(g->src_seen);
    mt_free(g->trg_sel);
    mt_free(g);
}

int32_t mt_shortlist_gen_run(mt_shortlist_gen *g, const int32_t *src, int64_t n, int32_t *out) {
    const mt_shortlist *sl = g->sl;
    int32_t v = g->trg_v;
    /* the arrays in locals: a byte store may alias the struct fields, which
    ** were reloaded per id */
    const uint32_t *ids = sl->ids;
    unsigned char *sel = g->trg_sel;
    memset(sel, 0, (size_t)v); /* src_seen is all zero between calls */
    int64_t count = 0;
    for (uint64_t i = 0; i < sl->first_num && i < (uint64_t)v; i++) {
        sel[i] = 1;
        count++;
    }
    for (int64_t k = 0; k < n; k++) {
        int32_t s = src[k];
        if (s < 0 || s >= g->src_v) continue;
        if (g->shared && s < v && !sel[s]) {
            sel[s] = 1;
            count++;
        }
        if (g->src_seen[s]) continue;
        g->src_seen[s] = 1;
        if ((uint64_t)s >= sl->n_rows) continue;
        /* without a branch on whether t was selected before (about half the
        ** time, unpredictably): this loop and the one gathering the columns
        ** run for every batch of a decoding with the shortlist */
        for (uint64_t q = sl->offsets[s], q1 = sl->offsets[s + 1]; q < q1; q++) {
            uint32_t t = ids[q];
            if (t < (uint32_t)v) {
                count += !sel[t];
                sel[t] = 1;
            }
        }
    }
    for (uint64_t i = sl->first_num; i < (uint64_t)v && count % 8 != 0; i++) {
        if (!sel[i]) {
            sel[i] = 1;
            count++;
        }
    }
    int32_t m = 0; /* out has room for v: every i is written, kept if selected */
    for (int32_t i = 0; i < v; i++) {
        out[m] = i;
        m += sel[i];
    }
    /* leave src_seen clean for the next call */
    for (int64_t i = 0; i < n; i++)
        if (src[i] >= 0 && src[i] < g->src_v) g->src_seen[src[i]] = 0;
    return m;
}
