/*
** align.c: fast_align-style IBM Model 2 word aligner and atools-style
** symmetrization (model, options and heuristics: see align.h).
**
** Input formats read here:
**   fast_align joined corpus   one pair per line, "src tokens ||| trg tokens";
**                              "|||" must be a token of its own
**   two line-aligned files     source and target, same number of lines
**   Pharaoh alignment line     "i-j i-j ...", i the source and j the target
**                              position, 0-based, separated by blanks
** Lines end at '\n'; one '\r' before it is dropped; a last line without '\n'
** counts.  Tokens are separated by spaces, tabs, '\v', '\f' and '\r'.  Files
** may be gzip-compressed (zlib reads plain files unchanged).
**
** Data structures: one string interner for all tokens (open addressing on a
** 64-bit FNV-1a hash), one hash map from (e, f) id pairs to dense entry
** indices holding the count and the probability of the pair, built before the
** first pass for every co-occurring pair, so that EM does no insertion and no
** quadratic scan: each pass costs one hash lookup per (source, target)
** position pair of each sentence.
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "align.h"

static bool is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* ------------------------------------------------------------- interner */

struct app_interner {
    char *pool;
    size_t pool_len, pool_cap;
    size_t *off; /* [n + 1] start of each string; off[n] = pool_len */
    uint64_t *hash;
    int32_t n, cap;
    int32_t *slots; /* [mask + 1], -1 empty */
    uint64_t mask;
};

mt_status app_interner_init(app_interner **out) {
    app_interner *in = mt_try_calloc(1, sizeof *in);
    if (in == NULL) goto nomem;
    in->cap = 1024;
    in->pool_cap = 16384;
    in->mask = 2047;
    in->pool = mt_try_malloc(in->pool_cap);
    in->off = mt_try_malloc(((size_t)in->cap + 1) * sizeof *in->off);
    in->hash = mt_try_malloc((size_t)in->cap * sizeof *in->hash);
    in->slots = mt_try_malloc((in->mask + 1) * sizeof *in->slots);
    if (!in->pool || !in->off || !in->hash || !in->slots) goto nomem;
    memset(in->slots, 0xff, (in->mask + 1) * sizeof *in->slots);
    in->off[0] = 0;
    *out = in;
    return MT_OK;
nomem:
    app_interner_free(in);
    return mt_seterr(MT_ERR_NOMEM, "no memory for a string interner");
}

void app_interner_free(app_interner *in) {
    if (in == NULL) return;
    mt_free(in->pool);
    mt_free(in->off);
    mt_free(in->hash);
    mt_free(in->slots);
    mt_free(in);
}

static int32_t interner_lookup(const app_interner *in, const char *s, size_t len, uint64_t h,
                               uint64_t *slot) {
    uint64_t k = h & in->mask;
    for (;;) {
        int32_t id = in->slots[k];
        if (id < 0) break;
        if (in->hash[id] == h && in->off[id + 1] - in->off[id] - 1 == len &&
            memcmp(in->pool + in->off[id], s, len) == 0) {
            *slot = k;
            return id;
        }
        k = (k + 1) & in->mask;
    }
    *slot = k;
    return -1;
}

int32_t app_interner_find(const app_interner *in, const char *s, size_t len) {
    uint64_t slot;
    return interner_lookup(in, s, len, mt_fnv1a(MT_FNV1A_INIT, s, len), &slot);
}

static mt_status interner_grow_slots(app_interner *in) {
    uint64_t nmask = in->mask * 2 + 1;
    int32_t *ns = mt_try_malloc((nmask + 1) * sizeof *ns);
    if (ns == NULL) return mt_seterr(MT_ERR_NOMEM, "no memory for a string interner");
    memset(ns, 0xff, (nmask + 1) * sizeof *ns);
    for (int32_t id = 0; id < in->n; id++) {
        uint64_t k = in->hash[id] & nmask;
        while (ns[k] >= 0)
            k = (k + 1) & nmask;
        ns[k] = id;
    }
    mt_free(in->slots);
    in->slots = ns;
    in->mask = nmask;
    return MT_OK;
}

mt_status app_interner_add(app_interner *in, const char *s, size_t len, int32_t *id) {
    uint64_t h = mt_fnv1a(MT_FNV1A_INIT, s, len), slot;
    int32_t found = interner_lookup(in, s, len, h, &slot);
    if (found >= 0) {
        *id = found;
        return MT_OK;
    }
    if (in->n >= INT32_MAX - 2) return mt_seterr(MT_ERR_INVALID, "too many distinct tokens");
    if (in->n == in->cap) {
        int32_t ncap = in->cap > INT32_MAX / 2 ? INT32_MAX - 1 : in->cap * 2;
        size_t *no = mt_try_realloc(in->off, ((size_t)ncap + 1) * sizeof *no);
        if (no == NULL) return mt_seterr(MT_ERR_NOMEM, "no memory for a string interner");
        in->off = no;
        uint64_t *nh = mt_try_realloc(in->hash, (size_t)ncap * sizeof *nh);
        if (nh == NULL) return mt_seterr(MT_ERR_NOMEM, "no memory for a string interner");
        in->hash = nh;
        in->cap = ncap;
    }
    if (in->pool_len + len + 1 > in->pool_cap) {
        size_t ncap = in->pool_cap * 2;
        while (ncap < in->pool_len + len + 1)
            ncap *= 2;
        char *np = mt_try_realloc(in->pool, ncap);
        if (np == NULL) return mt_seterr(MT_ERR_NOMEM, "no memory for a string interner");
        in->pool = np;
        in->pool_cap = ncap;
    }
    if ((uint64_t)(in->n + 1) * 2 > in->mask + 1) {
        mt_status rc = interner_grow_slots(in);
        if (rc != MT_OK) return rc;
        interner_lookup(in, s, len, h, &slot);
    }
    int32_t nid = in->n;
    memcpy(in->pool + in->pool_len, s, len);
    in->pool[in->pool_len + len] = '\0';
    in->pool_len += len + 1;
    in->hash[nid] = h;
    in->off[nid + 1] = in->pool_len;
    in->slots[slot] = nid;
    in->n++;
    *id = nid;
    return MT_OK;
}

const char *app_interner_str(const app_interner *in, int32_t id) {
    MT_ASSERT(id >= 0 && id < in->n);
    return in->pool + in->off[id];
}

int32_t app_interner_size(const app_interner *in) { return in->n; }

/* -------------------------------------------------------------- pairmap */

static uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

mt_status app_pairmap_init(app_pairmap *m) {
    memset(m, 0, sizeof *m);
    m->mask = 1023;
    m->cap_keys = 512;
    m->slots = mt_try_malloc((m->mask + 1) * sizeof *m->slots);
    m->keys = mt_try_malloc((size_t)m->cap_keys * sizeof *m->keys);
    if (m->slots == NULL || m->keys == NULL) {
        app_pairmap_clear(m);
        return mt_seterr(MT_ERR_NOMEM, "no memory for a hash map");
    }
    memset(m->slots, 0xff, (m->mask + 1) * sizeof *m->slots);
    return MT_OK;
}

void app_pairmap_clear(app_pairmap *m) {
    mt_free(m->slots);
    mt_free(m->keys);
    memset(m, 0, sizeof *m);
}

int64_t app_pairmap_find(const app_pairmap *m, uint64_t key) {
    uint64_t k = mix64(key) & m->mask;
    for (;;) {
        int32_t idx = m->slots[k];
        if (idx < 0) return -1;
        if (m->keys[idx] == key) return idx;
        k = (k + 1) & m->mask;
    }
}

mt_status app_pairmap_add(app_pairmap *m, uint64_t key, int64_t *idx, bool *added) {
    uint64_t k = mix64(key) & m->mask;
    for (;;) {
        int32_t i = m->slots[k];
        if (i < 0) break;
        if (m->keys[i] == key) {
            *idx = i;
            if (added) *added = false;
            return MT_OK;
        }
        k = (k + 1) & m->mask;
    }
    if (m->n >= INT32_MAX - 1) return mt_seterr(MT_ERR_INVALID, "hash map full (2^31 keys)");
    if (m->n == m->cap_keys) {
        int64_t ncap = m->cap_keys * 2;
        uint64_t *nk = mt_try_realloc(m->keys, (size_t)ncap * sizeof *nk);
        if (nk == NULL)
            return mt_seterr(MT_ERR_NOMEM, "no memory for a hash map of %lld keys",
                             (long long)ncap);
        m->keys = nk;
        m->cap_keys = ncap;
    }
    if ((uint64_t)(m->n + 1) * 2 > m->mask + 1) {
        uint64_t nmask = m->mask * 2 + 1;
        int32_t *ns = mt_try_malloc((nmask + 1) * sizeof *ns);
        if (ns == NULL) return mt_seterr(MT_ERR_NOMEM, "no memory for a hash map");
        memset(ns, 0xff, (nmask + 1) * sizeof *ns);
        for (int64_t i = 0; i < m->n; i++) {
            uint64_t s = mix64(m->keys[i]) & nmask;
            while (ns[s] >= 0)
                s = (s + 1) & nmask;
            ns[s] = (int32_t)i;
        }
        mt_free(m->slots);
        m->slots = ns;
        m->mask = nmask;
        k = mix64(key) & m->mask;
        while (m->slots[k] >= 0)
            k = (k + 1) & m->mask;
    }
    m->keys[m->n] = key;
    m->slots[k] = (int32_t)m->n;
    *idx = m->n++;
    if (added) *added = true;
    return MT_OK;
}

/* ---------------------------------------------------------------- links */

mt_status app_links_parse(const char *line, size_t len, app_link **out, int64_t *n) {
    int64_t cap = 8, cnt = 0;
    app_link *v = mt_try_malloc((size_t)cap * sizeof *v);
    if (v == NULL) return mt_seterr(MT_ERR_NOMEM, "no memory for alignment links");
    size_t p = 0;
    while (p < len) {
        while (p < len && is_blank(line[p]))
            p++;
        if (p >= len) break;
        int64_t a = 0, b = 0;
        size_t st = p;
        while (p < len && line[p] >= '0' && line[p] <= '9' && a <= INT32_MAX)
            a = a * 10 + (line[p++] - '0');
        bool ok = p > st && p < len && line[p] == '-';
        size_t st2 = ++p;
        while (ok && p < len && line[p] >= '0' && line[p] <= '9' && b <= INT32_MAX)
            b = b * 10 + (line[p++] - '0');
        ok = ok && p > st2 && (p >= len || is_blank(line[p])) && a <= INT32_MAX && b <= INT32_MAX;
        if (!ok) {
            mt_free(v);
            return mt_seterr(MT_ERR_FORMAT, "bad alignment link at column %zu: '%.*s'", st + 1,
                             (int)(len - st > 20 ? 20 : len - st), line + st);
        }
        if (cnt == cap) {
            cap *= 2;
            app_link *nv = mt_try_realloc(v, (size_t)cap * sizeof *nv);
            if (nv == NULL) {
                mt_free(v);
                return mt_seterr(MT_ERR_NOMEM, "no memory for alignment links");
            }
            v = nv;
        }
        v[cnt].src = (int32_t)a;
        v[cnt].trg = (int32_t)b;
        cnt++;
    }
    *out = v;
    *n = cnt;
    return MT_OK;
}

void app_alignment_free(app_alignment *a) {
    if (a == NULL) return;
    mt_free(a->off);
    mt_free(a->links);
    mt_free(a);
}

bool app_alignment_print(const app_alignment *a, int64_t s, FILE *f) {
    MT_ASSERT(s >= 0 && s < a->n);
    for (int64_t k = a->off[s]; k < a->off[s + 1]; k++) {
        if (fprintf(f, k > a->off[s] ? " %d-%d" : "%d-%d", (int)a->links[k].src,
                    (int)a->links[k].trg) < 0)
            return false;
    }
    return true;
}

static mt_status alignment_alloc(int64_t n, int64_t n_links, app_alignment **out) {
    app_alignment *a = mt_try_calloc(1, sizeof *a);
    if (a == NULL) goto nomem;
    a->n = n;
    a->off = mt_try_calloc((size_t)n + 1, sizeof *a->off);
    a->links = mt_try_malloc((size_t)(n_links > 0 ? n_links : 1) * sizeof *a->links);
    if (a->off == NULL || a->links == NULL) goto nomem;
    *out = a;
    return MT_OK;
nomem:
    app_alignment_free(a);
    return mt_seterr(MT_ERR_NOMEM, "no memory for an alignment of %lld links", (long long)n_links);
}

/* --------------------------------------------------------------- bitext */

mt_status app_bitext_init(app_bitext **out) {
    app_bitext *bt = mt_try_calloc(1, sizeof *bt);
    if (bt == NULL) goto nomem;
    bt->cap_pairs = 1024;
    bt->cap_src = bt->cap_trg = 16384;
    bt->src_off = mt_try_malloc(((size_t)bt->cap_pairs + 1) * sizeof(int64_t));
    bt->trg_off = mt_try_malloc(((size_t)bt->cap_pairs + 1) * sizeof(int64_t));
    bt->src_tok = mt_try_malloc((size_t)bt->cap_src * sizeof(int32_t));
    bt->trg_tok = mt_try_malloc((size_t)bt->cap_trg * sizeof(int32_t));
    if (!bt->src_off || !bt->trg_off || !bt->src_tok || !bt->trg_tok) goto nomem;
    bt->src_off[0] = bt->trg_off[0] = 0;
    if (app_interner_init(&bt->vocab) != MT_OK) goto nomem;
    *out = bt;
    return MT_OK;
nomem:
    app_bitext_free(bt);
    return mt_seterr(MT_ERR_NOMEM, "no memory for a parallel corpus");
}

void app_bitext_free(app_bitext *bt) {
    if (bt == NULL) return;
    mt_free(bt->src_off);
    mt_free(bt->trg_off);
    mt_free(bt->src_tok);
    mt_free(bt->trg_tok);
    app_interner_free(bt->vocab);
    mt_free(bt);
}

/* Appends the tokens of s[0..len) to *tok (growing it); returns the count or -1 on
** allocation failure (message set). */
static int64_t add_tokens(app_interner *vocab, const char *s, size_t len, int32_t **tok,
                          int64_t *cap, int64_t used) {
    int64_t start = used;
    size_t p = 0;
    while (p < len) {
        while (p < len && is_blank(s[p]))
            p++;
        if (p >= len) break;
        size_t st = p;
        while (p < len && !is_blank(s[p]))
            p++;
        if (used == *cap) {
            int64_t ncap = *cap * 2;
            int32_t *nt = mt_try_realloc(*tok, (size_t)ncap * sizeof *nt);
            if (nt == NULL) {
                mt_seterr(MT_ERR_NOMEM, "no memory for corpus tokens");
                return -1;
            }
            *tok = nt;
            *cap = ncap;
        }
        int32_t id;
        if (app_interner_add(vocab, s + st, p - st, &id) != MT_OK) return -1;
        (*tok)[used++] = id;
    }
    return used - start;
}

mt_status app_bitext_add(app_bitext *bt, const char *src, size_t src_len, const char *trg,
                         size_t trg_len, int64_t line_no) {
    if (bt->n == bt->cap_pairs) {
        int64_t ncap = bt->cap_pairs * 2;
        int64_t *a = mt_try_realloc(bt->src_off, ((size_t)ncap + 1) * sizeof *a);
        if (a == NULL) return mt_seterr(MT_ERR_NOMEM, "no memory for a parallel corpus");
        bt->src_off = a;
        int64_t *b = mt_try_realloc(bt->trg_off, ((size_t)ncap + 1) * sizeof *b);
        if (b == NULL) return mt_seterr(MT_ERR_NOMEM, "no memory for a parallel corpus");
        bt->trg_off = b;
        bt->cap_pairs = ncap;
    }
    int64_t s0 = bt->src_off[bt->n], t0 = bt->trg_off[bt->n];
    int64_t ns = add_tokens(bt->vocab, src, src_len, &bt->src_tok, &bt->cap_src, s0);
    if (ns < 0) return MT_ERR_NOMEM;
    int64_t nt = add_tokens(bt->vocab, trg, trg_len, &bt->trg_tok, &bt->cap_trg, t0);
    if (nt < 0) return MT_ERR_NOMEM;
    if (ns == 0 || nt == 0)
        return mt_seterr(MT_ERR_FORMAT, "line %lld: empty %s side", (long long)line_no,
                         ns == 0 ? "source" : "target");
    if (ns > INT32_MAX / 2 || nt > INT32_MAX / 2)
        return mt_seterr(MT_ERR_FORMAT, "line %lld: sentence too long", (long long)line_no);
    bt->src_off[bt->n + 1] = s0 + ns;
    bt->trg_off[bt->n + 1] = t0 + nt;
    bt->n++;
    return MT_OK;
}

/* Position of the token "|||" in line[0..len), or len when absent. */
static size_t find_separator(const char *line, size_t len) {
    size_t p = 0;
    while (p < len) {
        while (p < len && is_blank(line[p]))
            p++;
        size_t st = p;
        while (p < len && !is_blank(line[p]))
            p++;
        if (p - st == 3 && memcmp(line + st, "|||", 3) == 0) return st;
    }
    return len;
}

mt_status app_bitext_read_joined(const char *path, app_bitext **out) {
    char *buf = NULL;
    size_t len = 0, pos = 0;
    app_bitext *bt = NULL;
    mt_status rc = mt_text_read_all(path, &buf, &len);
    if (rc != MT_OK) return rc;
    rc = app_bitext_init(&bt);
    if (rc != MT_OK) goto fail;
    const char *line;
    size_t n;
    int64_t line_no = 0;
    while (mt_next_line(buf, len, &pos, &line, &n)) {
        line_no++;
        size_t sep = find_separator(line, n);
        size_t trg_at = sep < n ? sep + 3 : n;
        rc = app_bitext_add(bt, line, sep, line + trg_at, n - trg_at, line_no);
        if (rc != MT_OK) {
            mt_errprefix(rc, "%s", path);
            goto fail;
        }
    }
    mt_free(buf);
    *out = bt;
    return MT_OK;
fail:
    mt_free(buf);
    app_bitext_free(bt);
    return rc;
}

mt_status app_bitext_read_pair(const char *src_path, const char *trg_path, app_bitext **out) {
    char *sb = NULL, *tb = NULL;
    size_t sl = 0, tl = 0, sp = 0, tp = 0;
    app_bitext *bt = NULL;
    mt_status rc = mt_text_read_all(src_path, &sb, &sl);
    if (rc != MT_OK) goto fail;
    rc = mt_text_read_all(trg_path, &tb, &tl);
    if (rc != MT_OK) goto fail;
    rc = app_bitext_init(&bt);
    if (rc != MT_OK) goto fail;
    int64_t line_no = 0;
    for (;;) {
        const char *s, *t;
        size_t ns, nt;
        bool hs = mt_next_line(sb, sl, &sp, &s, &ns);
        bool ht = mt_next_line(tb, tl, &tp, &t, &nt);
        if (!hs && !ht) break;
        line_no++;
        if (hs != ht) {
            rc = mt_seterr(MT_ERR_FORMAT, "'%s' has %lld lines but '%s' has more",
                           hs ? trg_path : src_path, (long long)(line_no - 1),
                           hs ? src_path : trg_path);
            goto fail;
        }
        rc = app_bitext_add(bt, s, ns, t, nt, line_no);
        if (rc != MT_OK) {
            mt_errprefix(rc, "%s / %s", src_path, trg_path);
            goto fail;
        }
    }
    mt_free(sb);
    mt_free(tb);
    *out = bt;
    return MT_OK;
fail:
    mt_free(sb);
    mt_free(tb);
    app_bitext_free(bt);
    return rc;
}

/* ---------------------------------------------------------------- model */

app_align_params app_align_default_params(void) {
    app_align_params p;
    memset(&p, 0, sizeof p);
    p.iterations = 5;
    p.p0 = 0.08;
    p.tension = 4.0;
    p.alpha = 0.01;
    return p;
}

/* One entry per co-occurring (e, f) pair: probability and expected count side by
** side, so that a pass touches one cache line per (i, j). */
typedef struct lex_cell {
    double prob;  /* t(f|e) */
    double count; /* expected count of the current pass */
} lex_cell;

struct app_align_model {
    app_pairmap map; /* key (e + 1, f), e = -1 for NULL */
    lex_cell *cell;  /* [map.n] */
    double t0;       /* uniform value before the first normalisation */
    bool normalized;
    int32_t n_e; /* e + 1 < n_e */
    double tension;
};

void app_align_model_free(app_align_model *m) {
    if (m == NULL) return;
    app_pairmap_clear(&m->map);
    mt_free(m->cell);
    mt_free(m);
}

double app_align_model_prob(const app_align_model *m, int32_t e, int32_t f) {
    int64_t idx = app_pairmap_find(&m->map, app_pair_key(e + 1, f));
    if (idx < 0) return 0.0;
    return m->normalized ? m->cell[idx].prob : m->t0;
}

mt_status app_align_model_write(const app_align_model *m, const app_bitext *bt, const char *path) {
    mt_status rc = MT_OK;
    int64_t *order = NULL;
    FILE *f = fopen(path, "w");
    if (f == NULL) return mt_seterr(MT_ERR_IO, "cannot create '%s'", path);
    /* counting sort of the entries by e, keeping insertion order within e */
    int64_t *start = mt_try_calloc((size_t)m->n_e + 1, sizeof *start);
    order = mt_try_malloc((size_t)(m->map.n > 0 ? m->map.n : 1) * sizeof *order);
    if (start == NULL || order == NULL) {
        rc = mt_seterr(MT_ERR_NOMEM, "no memory to write '%s'", path);
        goto done;
    }
    for (int64_t i = 0; i < m->map.n; i++)
        start[(m->map.keys[i] >> 32) + 1]++;
    for (int32_t e = 0; e < m->n_e; e++)
        start[e + 1] += start[e];
    for (int64_t i = 0; i < m->map.n; i++)
        order[start[m->map.keys[i] >> 32]++] = i;
    for (int64_t k = 0; k < m->map.n; k++) {
        int64_t i = order[k];
        int32_t e = (int32_t)(m->map.keys[i] >> 32) - 1;
        int32_t fid = (int32_t)(uint32_t)m->map.keys[i];
        double p = m->normalized ? m->cell[i].prob : m->t0;
        if (fprintf(f, "%s\t%s\t%.9g\n", e < 0 ? "<eps>" : app_interner_str(bt->vocab, e),
                    app_interner_str(bt->vocab, fid), log(p)) < 0) {
            rc = mt_seterr(MT_ERR_IO, "cannot write '%s'", path);
            goto done;
        }
    }
done:
    mt_free(start);
    mt_free(order);
    if (fclose(f) != 0 && rc == MT_OK) rc = mt_seterr(MT_ERR_IO, "cannot write '%s'", path);
    return rc;
}

/* Digamma psi(x) for x > 0: recurrence up to x >= 6, then the asymptotic series
** psi(x) = ln x - 1/(2x) - sum_k B_2k / (2k x^2k). */
static double digamma(double x) {
    double r = 0.0;
    while (x < 6.0) {
        r -= 1.0 / x;
        x += 1.0;
    }
    double f = 1.0 / (x * x);
    double t =
        f * (-1.0 / 12 + f * (1.0 / 120 + f * (-1.0 / 252 + f * (1.0 / 240 + f * (-1.0 / 132)))));
    return r + log(x) - 0.5 / x + t;
}

/* Distinct (m, n) = (generated length, conditioning length) pairs: the tension
** step needs, per pair and generated position j, the posterior mass that went
** to non-NULL positions. */
typedef struct size_table {
    app_pairmap map;  /* key (m, n) */
    int64_t *w_off;   /* [map.n + 1] into w */
    double *w;        /* non-NULL posterior mass per (pair, j) */
    int32_t *of_sent; /* [sentences] pair index */
} size_table;

static void size_table_free(size_table *st) {
    app_pairmap_clear(&st->map);
    mt_free(st->w_off);
    mt_free(st->w);
    mt_free(st->of_sent);
}

/* h(i, j, m, n) = -|i/n - j/m| with 1-based i (of n) and j (of m). */
static inline double diag_feature(int32_t i, int32_t j, int32_t m, int32_t n) {
    return -fabs((double)i / n - (double)j / m);
}

/* w[i] = exp(lambda h(i, j, m, n)) for i = 1..n; returns their sum.  h is linear in
** i on each side of i = j n / m, so two exp() calls and a running product suffice:
** moving one step away from the diagonal multiplies by r = exp(-lambda / n). */
static double diag_weights(int32_t j, int32_t m, int32_t n, double lambda, double *w) {
    double split = (double)j * n / m;
    int32_t lo = (int32_t)split; /* i <= lo lie below the diagonal point */
    if (lo > n) lo = n;
    double r = exp(-lambda / n), z = 0.0;
    if (lo >= 1) {
        double x = exp(lambda * diag_feature(lo, j, m, n));
        for (int32_t i = lo; i >= 1; i--) {
            w[i] = x;
            z += x;
            x *= r;
        }
    }
    if (lo < n) {
        double x = exp(lambda * diag_feature(lo + 1, j, m, n));
        for (int32_t i = lo + 1; i <= n; i++) {
            w[i] = x;
            z += x;
            x *= r;
        }
    }
    return z;
}

/* Prior of the non-NULL positions, pr[i] = (1 - p0) exp(lambda h(i)) / Z for
** i = 1..n, with one exp() per position so that positions at the same distance
** from the diagonal get exactly the same value (Viterbi ties break as in
** fast_align: the smaller i wins). */
static void diag_prior(int32_t j, int32_t m, int32_t n, double lambda, double p0, double *pr) {
    double z = 0.0;
    for (int32_t i = 1; i <= n; i++) {
        pr[i] = exp(lambda * diag_feature(i, j, m, n));
        z += pr[i];
    }
    for (int32_t i = 1; i <= n; i++)
        pr[i] = (1.0 - p0) * pr[i] / z;
}

typedef struct pass_stats {
    double loglik, c0, emp_feat, toks;
} pass_stats;

/* Sides of sentence s as (conditioning e, generated f). */
static void sides(const app_bitext *bt, int64_t s, bool reverse, const int32_t **e, int32_t *n,
                  const int32_t **f, int32_t *m) {
    const int32_t *src = bt->src_tok + bt->src_off[s], *trg = bt->trg_tok + bt->trg_off[s];
    int32_t ns = (int32_t)(bt->src_off[s + 1] - bt->src_off[s]);
    int32_t nt = (int32_t)(bt->trg_off[s + 1] - bt->trg_off[s]);
    if (reverse) {
        *e = trg, *n = nt, *f = src, *m = ns;
    } else {
        *e = src, *n = ns, *f = trg, *m = nt;
    }
}

/* Entry indices of every (i, j) of the corpus are computed once when they fit in
** this many entries (4 bytes each); otherwise each pass looks them up again.  The
** diagonal prior of every (length pair, j, i) is tabulated once per tension value
** when the table has at most PRIOR_TABLE_MAX entries (8 bytes each).  Both limits
** scale with app_align_params.cache_bytes. */
#define IDX_CACHE_MAX ((int64_t)64 << 20)
#define PRIOR_TABLE_MAX ((int64_t)16 << 20)

static int64_t idx_cache_max(const app_align_params *p) {
    if (p->cache_bytes < 0) return -1;
    return p->cache_bytes == 0 ? IDX_CACHE_MAX : p->cache_bytes / 3 * 2 / 4;
}

static int64_t prior_table_max(const app_align_params *p) {
    if (p->cache_bytes < 0) return -1;
    return p->cache_bytes == 0 ? PRIOR_TABLE_MAX : p->cache_bytes / 3 / 8;
}

typedef struct em_state {
    const app_bitext *bt;
    const app_align_params *p;
    app_align_model *md;
    size_table st;
    int32_t *cache;     /* [cache_off[N]] entry of (i, j): row j, n + 1 columns, or NULL */
    int64_t *cache_off; /* [N + 1] */
    int64_t *idx;       /* scratch [max n + 1] when there is no cache */
    double *probs;      /* scratch [max n + 1] */
    double *tot;        /* [n_e] */
    double *prior;      /* [prior_off[pairs]]: pair k, row j: n values, or NULL */
    int64_t *prior_off; /* [pairs + 1] */
    double prior_lambda;
} em_state;

static void em_state_free(em_state *es) {
    size_table_free(&es->st);
    mt_free(es->cache);
    mt_free(es->cache_off);
    mt_free(es->idx);
    mt_free(es->probs);
    mt_free(es->tot);
    mt_free(es->prior);
    mt_free(es->prior_off);
}

/* Fills the prior table for lambda (when there is one). */
static void fill_prior(em_state *es, double lambda) {
    const size_table *st = &es->st;
    double p0 = es->p->no_null ? 0.0 : es->p->p0;
    if (es->prior == NULL || es->prior_lambda == lambda) return;
    for (int64_t k = 0; k < st->map.n; k++) {
        int32_t m = (int32_t)(st->map.keys[k] >> 32), n = (int32_t)(uint32_t)st->map.keys[k];
        for (int32_t j = 0; j < m; j++)
            diag_prior(j + 1, m, n, lambda, p0, es->prior + es->prior_off[k] + (int64_t)j * n - 1);
    }
    es->prior_lambda = lambda;
}

/* Builds the (e, f) entries of every co-occurring pair, the size table and, when
** it fits, the index cache. */
static mt_status prepare(em_state *es) {
    const app_bitext *bt = es->bt;
    const app_align_params *p = es->p;
    app_align_model *md = es->md;
    size_table *st = &es->st;
    bool use_null = !p->no_null;
    int32_t nv = app_interner_size(bt->vocab);
    unsigned char *seen_f = mt_try_calloc((size_t)nv + 1, 1);
    int64_t n_ftypes = 0, total_w = 0, cells = 0, max_n = 1;
    mt_status rc = MT_OK;
    if (seen_f == NULL) goto nomem;
    st->of_sent = mt_try_malloc((size_t)(bt->n > 0 ? bt->n : 1) * sizeof *st->of_sent);
    es->cache_off = mt_try_malloc(((size_t)bt->n + 1) * sizeof *es->cache_off);
    if (st->of_sent == NULL || es->cache_off == NULL) goto nomem;
    for (int64_t s = 0; s < bt->n; s++) {
        const int32_t *e, *f;
        int32_t n, m;
        sides(bt, s, p->reverse, &e, &n, &f, &m);
        es->cache_off[s] = cells;
        cells += (int64_t)m * (n + 1);
        if (n > max_n) max_n = n;
    }
    es->cache_off[bt->n] = cells;
    bool use_cache = cells <= idx_cache_max(p);
    if (use_cache) es->cache = mt_try_malloc((size_t)(cells > 0 ? cells : 1) * 4);
    es->idx = mt_try_malloc((size_t)(max_n + 1) * sizeof *es->idx);
    es->probs = mt_try_malloc((size_t)(max_n + 1) * sizeof *es->probs);
    if ((use_cache && es->cache == NULL) || !es->idx || !es->probs) goto nomem;

    for (int64_t s = 0; s < bt->n; s++) {
        const int32_t *e, *f;
        int32_t n, m;
        sides(bt, s, p->reverse, &e, &n, &f, &m);
        int32_t *row = es->cache ? es->cache + es->cache_off[s] : NULL;
        for (int32_t j = 0; j < m; j++, row = row ? row + n + 1 : NULL) {
            if (!seen_f[f[j]]) seen_f[f[j]] = 1, n_ftypes++;
            int64_t idx;
            for (int32_t i = use_null ? 0 : 1; i <= n; i++) {
                rc = app_pairmap_add(&md->map, app_pair_key(i == 0 ? 0 : e[i - 1] + 1, f[j]), &idx,
                                     NULL);
                if (rc != MT_OK) goto done;
                if (idx > INT32_MAX) {
                    rc = mt_seterr(MT_ERR_INVALID, "align: more than 2^31 word pairs");
                    goto done;
                }
                if (row) row[i] = (int32_t)idx;
            }
        }
        int64_t si;
        bool added;
        rc = app_pairmap_add(&st->map, app_pair_key(m, n), &si, &added);
        if (rc != MT_OK) goto done;
        if (added) total_w += m;
        st->of_sent[s] = (int32_t)si;
    }
    md->cell = mt_try_calloc((size_t)(md->map.n > 0 ? md->map.n : 1), sizeof *md->cell);
    st->w_off = mt_try_calloc((size_t)st->map.n + 1, sizeof *st->w_off);
    st->w = mt_try_calloc((size_t)(total_w > 0 ? total_w : 1), sizeof *st->w);
    md->n_e = nv + 1;
    es->tot = mt_try_malloc((size_t)md->n_e * sizeof *es->tot);
    if (!md->cell || !st->w_off || !st->w || !es->tot) goto nomem;
    for (int64_t k = 0; k < st->map.n; k++)
        st->w_off[k + 1] = st->w_off[k] + (int64_t)(st->map.keys[k] >> 32);
    if (p->favor_diagonal) {
        es->prior_off = mt_try_malloc(((size_t)st->map.n + 1) * sizeof *es->prior_off);
        if (es->prior_off == NULL) goto nomem;
        es->prior_off[0] = 0;
        for (int64_t k = 0; k < st->map.n; k++)
            es->prior_off[k + 1] =
                es->prior_off[k] + (st->map.keys[k] >> 32) * (int64_t)(uint32_t)st->map.keys[k];
        if (es->prior_off[st->map.n] <= prior_table_max(p)) {
            es->prior = mt_try_malloc((size_t)(es->prior_off[st->map.n] + 1) * sizeof *es->prior);
            if (es->prior == NULL) goto nomem;
            es->prior_lambda = -1.0; /* not filled yet */
        }
    }
    md->t0 = n_ftypes > 0 ? 1.0 / (double)n_ftypes : 1.0;
    mt_log(MT_LOG_DEBUG, "align: %lld word pairs, %lld length pairs, index cache %s",
           (long long)md->map.n, (long long)st->map.n, es->cache ? "on" : "off");
done:
    mt_free(seen_f);
    return rc;
nomem:
    mt_free(seen_f);
    return mt_seterr(MT_ERR_NOMEM, "no memory for the aligner (%lld word pairs)",
                     (long long)md->map.n);
}

/* One pass over the corpus.  Collects expected counts (unless final) or the Viterbi
** links (final). */
static void em_pass(em_state *es, double lambda, bool final, app_alignment *al, pass_stats *ps) {
    const app_bitext *bt = es->bt;
    const app_align_params *p = es->p;
    app_align_model *md = es->md;
    size_table *st = &es->st;
    lex_cell *cell = md->cell;
    double *probs = es->probs;
    bool use_null = !p->no_null, diag = p->favor_diagonal;
    double p0 = use_null ? p->p0 : 0.0;
    int32_t i0 = use_null ? 0 : 1;
    int64_t nl = 0;
    memset(ps, 0, sizeof *ps);
    if (!final) {
        for (int64_t k = 0; k < md->map.n; k++)
            cell[k].count = 0.0;
        memset(st->w, 0, (size_t)st->w_off[st->map.n] * sizeof *st->w);
    }
    for (int64_t s = 0; s < bt->n; s++) {
        const int32_t *e, *f;
        int32_t n, m;
        sides(bt, s, p->reverse, &e, &n, &f, &m);
        double *w = st->w + st->w_off[st->of_sent[s]];
        const int32_t *row = es->cache ? es->cache + es->cache_off[s] : NULL;
        if (final) al->off[s] = nl;
        ps->toks += m;
        double uniform = 1.0 / (n + (use_null ? 1 : 0));
        for (int32_t j = 0; j < m; j++, row = row ? row + n + 1 : NULL) {
            if (row == NULL) {
                for (int32_t i = i0; i <= n; i++)
                    es->idx[i] =
                        app_pairmap_find(&md->map, app_pair_key(i == 0 ? 0 : e[i - 1] + 1, f[j]));
            }
#define CELL(i) (row ? (int64_t)row[i] : es->idx[i])
            double sum = 0.0;
            if (diag) {
                const double *pr = probs;
                if (es->prior)
                    pr = es->prior + es->prior_off[st->of_sent[s]] + (int64_t)j * n - 1;
                else
                    diag_prior(j + 1, m, n, lambda, p0, probs);
                if (use_null) {
                    probs[0] = p0 * (md->normalized ? cell[CELL(0)].prob : md->t0);
                    sum += probs[0];
                }
                for (int32_t i = 1; i <= n; i++) {
                    double t = md->normalized ? cell[CELL(i)].prob : md->t0;
                    probs[i] = pr[i] * t;
                    sum += probs[i];
                }
            } else {
                for (int32_t i = i0; i <= n; i++) {
                    double t = md->normalized ? cell[CELL(i)].prob : md->t0;
                    probs[i] = t * uniform;
                    sum += probs[i];
                }
            }
            if (!(sum > 0.0) || !isfinite(sum)) {
                /* every candidate underflowed: no evidence from this token */
                ps->loglik += log(1e-300);
                continue;
            }
            ps->loglik += log(sum);
            double post0 = use_null ? probs[0] / sum : 0.0;
            ps->c0 += post0;
            if (final) {
                int32_t best = i0;
                for (int32_t i = best + 1; i <= n; i++)
                    if (probs[i] > probs[best]) best = i;
                if (best > 0) {
                    app_link lk;
                    lk.src = p->reverse ? j : best - 1;
                    lk.trg = p->reverse ? best - 1 : j;
                    al->links[nl++] = lk;
                }
                continue;
            }
            double inv = 1.0 / sum;
            if (use_null) cell[CELL(0)].count += post0;
            double jm = (double)(j + 1) / m, emp = 0.0;
            for (int32_t i = 1; i <= n; i++) {
                double post = probs[i] * inv;
                cell[CELL(i)].count += post;
                emp -= post * fabs((double)i / n - jm);
            }
#undef CELL
            ps->emp_feat += emp;
            w[j] += 1.0 - post0;
        }
    }
    if (final) al->off[bt->n] = nl;
}

/* Eight gradient steps on lambda (see align.h). */
static double optimize_tension(const size_table *st, double lambda, double emp_feat, double toks,
                               double *scratch) {
    for (int step = 0; step < 8; step++) {
        double mod = 0.0;
        for (int64_t k = 0; k < st->map.n; k++) {
            int32_t m = (int32_t)(st->map.keys[k] >> 32), n = (int32_t)(uint32_t)st->map.keys[k];
            const double *w = st->w + st->w_off[k];
            for (int32_t j = 1; j <= m; j++) {
                if (!(w[j - 1] > 0.0)) continue;
                /* E[h] under p(i) proportional to exp(lambda h) */
                double z = diag_weights(j, m, n, lambda, scratch), sh = 0.0;
                for (int32_t i = 1; i <= n; i++)
                    sh += scratch[i] * diag_feature(i, j, m, n);
                mod += w[j - 1] * sh / z;
            }
        }
        lambda += (emp_feat - mod) / toks * 20.0;
        if (lambda < 0.1) lambda = 0.1;
        if (lambda > 14.0) lambda = 14.0;
    }
    return lambda;
}

static void normalize(app_align_model *md, const app_align_params *p, double *tot) {
    lex_cell *cell = md->cell;
    memset(tot, 0, (size_t)md->n_e * sizeof *tot);
    double a = p->variational_bayes ? p->alpha : 0.0;
    for (int64_t k = 0; k < md->map.n; k++)
        tot[md->map.keys[k] >> 32] += cell[k].count + a;
    if (p->variational_bayes) {
        for (int32_t e = 0; e < md->n_e; e++)
            tot[e] = digamma(tot[e] > 0.0 ? tot[e] : 1.0);
        for (int64_t k = 0; k < md->map.n; k++)
            cell[k].prob = exp(digamma(cell[k].count + a) - tot[md->map.keys[k] >> 32]);
    } else {
        for (int64_t k = 0; k < md->map.n; k++) {
            double t = tot[md->map.keys[k] >> 32];
            cell[k].prob = cell[k].count / (t > 0.0 ? t : 1.0);
        }
    }
    md->normalized = true;
}

mt_status app_align_run(const app_bitext *bt, const app_align_params *p, app_alignment **out,
                        app_align_model **model_out, app_align_report *rep) {
    mt_status rc = MT_OK;
    app_alignment *al = NULL;
    em_state es;
    memset(&es, 0, sizeof es);
    es.bt = bt;
    es.p = p;
    if (p->iterations < 1) return mt_seterr(MT_ERR_INVALID, "align: iterations must be >= 1");
    if (p->variational_bayes && !(p->alpha > 0.0))
        return mt_seterr(MT_ERR_INVALID, "align: alpha must be > 0 with variational Bayes");
    if (p->favor_diagonal && !p->no_null && !(p->p0 >= 0.0 && p->p0 < 1.0))
        return mt_seterr(MT_ERR_INVALID, "align: p0 must be in [0, 1)");
    if (p->favor_diagonal && !(p->tension > 0.0))
        return mt_seterr(MT_ERR_INVALID, "align: diagonal tension must be > 0");

    es.md = mt_try_calloc(1, sizeof *es.md);
    if (es.md == NULL) {
        rc = mt_seterr(MT_ERR_NOMEM, "no memory for the aligner");
        goto fail;
    }
    rc = app_pairmap_init(&es.md->map);
    if (rc != MT_OK) goto fail;
    rc = app_pairmap_init(&es.st.map);
    if (rc != MT_OK) goto fail;
    rc = prepare(&es);
    if (rc != MT_OK) goto fail;

    int64_t n_links = 0;
    for (int64_t s = 0; s < bt->n; s++)
        n_links +=
            p->reverse ? bt->src_off[s + 1] - bt->src_off[s] : bt->trg_off[s + 1] - bt->trg_off[s];
    rc = alignment_alloc(bt->n, n_links, &al);
    if (rc != MT_OK) goto fail;

    double lambda = p->tension, post_p0 = 0.0;
    for (int it = 0; it < p->iterations; it++) {
        bool final = it == p->iterations - 1;
        pass_stats ps;
        if (p->favor_diagonal) fill_prior(&es, lambda);
        em_pass(&es, lambda, final, al, &ps);
        if (rep && rep->loglik) rep->loglik[it] = ps.loglik;
        double toks = ps.toks > 0 ? ps.toks : 1.0;
        mt_log(MT_LOG_INFO,
               "align pass %d%s: log-likelihood %.6g, cross entropy %.4f bits, posterior p0 "
               "%.4f, tension %.4f",
               it + 1, final ? " (final)" : "", ps.loglik, -ps.loglik / log(2.0) / toks,
               ps.c0 / toks, lambda);
        if (final) break;
        post_p0 = ps.c0 / toks;
        if (p->favor_diagonal && p->optimize_tension && it > 0)
            lambda = optimize_tension(&es.st, lambda, ps.emp_feat, toks, es.probs);
        normalize(es.md, p, es.tot);
    }
    es.md->tension = lambda;
    if (rep) {
        rep->tension = lambda;
        rep->posterior_p0 = post_p0;
    }
    em_state_free(&es);
    if (model_out)
        *model_out = es.md;
    else
        app_align_model_free(es.md);
    *out = al;
    return MT_OK;
fail:
    em_state_free(&es);
    app_align_model_free(es.md);
    app_alignment_free(al);
    return rc;
}

/* -------------------------------------------------------- symmetrization */

mt_status app_sym_parse(const char *name, app_sym *out) {
    static const struct {
        const char *name;
        app_sym sym;
    } tab[] = {
        {"intersect", APP_SYM_INTERSECT},
        {"union", APP_SYM_UNION},
        {"grow-diag", APP_SYM_GROW_DIAG},
        {"grow-diag-final", APP_SYM_GROW_DIAG_FINAL},
        {"grow-diag-final-and", APP_SYM_GROW_DIAG_FINAL_AND},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        if (strcmp(name, tab[i].name) == 0) {
            *out = tab[i].sym;
            return MT_OK;
        }
    }
    return mt_seterr(MT_ERR_INVALID,
                     "unknown symmetrization '%s' (intersect, union, grow-diag, "
                     "grow-diag-final, grow-diag-final-and)",
                     name);
}

typedef struct sym_state {
    int32_t ns, nt;
    unsigned char *a, *b, *res; /* [ns * nt] grids */
    unsigned char *src_al, *trg_al;
} sym_state;

static inline void sym_take(sym_state *g, int32_t i, int32_t j) {
    g->res[(int64_t)i * g->nt + j] = 1;
    g->src_al[i] = 1;
    g->trg_al[j] = 1;
}

static bool neighbour_taken(const sym_state *g, int32_t i, int32_t j) {
    /* atools' order: the 4 direct neighbours, then the diagonals */
    static const int d[8][2] = {{1, 0}, {-1, 0}, {0, 1},  {0, -1},
                                {1, 1}, {-1, 1}, {1, -1}, {-1, -1}};
    for (int k = 0; k < 8; k++) {
        int32_t x = i + d[k][0], y = j + d[k][1];
        if (x >= 0 && y >= 0 && x < g->ns && y < g->nt && g->res[(int64_t)x * g->nt + y])
            return true;
    }
    return false;
}

static void grow_diag(sym_state *g) {
    bool again = true;
    while (again) {
        again = false;
        for (int32_t i = 0; i < g->ns; i++) {
            for (int32_t j = 0; j < g->nt; j++) {
                int64_t k = (int64_t)i * g->nt + j;
                if (g->res[k] || !(g->a[k] || g->b[k])) continue;
                if ((!g->src_al[i] || !g->trg_al[j]) && neighbour_taken(g, i, j)) {
                    sym_take(g, i, j);
                    again = true;
                }
            }
        }
    }
}

static void grow_final(sym_state *g, const unsigned char *from, bool both_unaligned) {
    for (int32_t i = 0; i < g->ns; i++) {
        for (int32_t j = 0; j < g->nt; j++) {
            int64_t k = (int64_t)i * g->nt + j;
            if (!from[k] || g->res[k]) continue;
            bool ok = both_unaligned ? (!g->src_al[i] && !g->trg_al[j])
                                     : (!g->src_al[i] || !g->trg_al[j]);
            if (ok) sym_take(g, i, j);
        }
    }
}

mt_status app_symmetrize(int32_t n_src, int32_t n_trg, const app_link *a, int64_t na,
                         const app_link *b, int64_t nb, app_sym method, app_link *out,
                         int64_t *n_out) {
    if (n_src < 0 || n_trg < 0) return mt_seterr(MT_ERR_INVALID, "symmetrize: negative length");
    for (int64_t k = 0; k < na + nb; k++) {
        const app_link *l = k < na ? &a[k] : &b[k - na];
        if (l->src < 0 || l->trg < 0 || l->src >= n_src || l->trg >= n_trg)
            return mt_seterr(MT_ERR_INVALID, "symmetrize: link %d-%d outside a %dx%d sentence",
                             (int)l->src, (int)l->trg, (int)n_src, (int)n_trg);
    }
    size_t cells = (size_t)n_src * (size_t)n_trg;
    unsigned char *mem = mt_try_calloc(cells * 3 + (size_t)n_src + (size_t)n_trg + 1, 1);
    if (mem == NULL) return mt_seterr(MT_ERR_NOMEM, "no memory to symmetrize");
    sym_state g = {
        n_src, n_trg, mem, mem + cells, mem + 2 * cells, mem + 3 * cells, mem + 3 * cells + n_src};
    for (int64_t k = 0; k < na; k++)
        g.a[(int64_t)a[k].src * n_trg + a[k].trg] = 1;
    for (int64_t k = 0; k < nb; k++)
        g.b[(int64_t)b[k].src * n_trg + b[k].trg] = 1;
    for (int32_t i = 0; i < n_src; i++)
        for (int32_t j = 0; j < n_trg; j++) {
            int64_t k = (int64_t)i * n_trg + j;
            if (method == APP_SYM_UNION ? (g.a[k] || g.b[k]) : (g.a[k] && g.b[k]))
                sym_take(&g, i, j);
        }
    if (method >= APP_SYM_GROW_DIAG) grow_diag(&g);
    if (method == APP_SYM_GROW_DIAG_FINAL || method == APP_SYM_GROW_DIAG_FINAL_AND) {
        bool both = method == APP_SYM_GROW_DIAG_FINAL_AND;
        grow_final(&g, g.a, both);
        grow_final(&g, g.b, both);
    }
    int64_t n = 0;
    for (int32_t i = 0; i < n_src; i++)
        for (int32_t j = 0; j < n_trg; j++)
            if (g.res[(int64_t)i * n_trg + j]) {
                out[n].src = i;
                out[n].trg = j;
                n++;
            }
    mt_free(mem);
    *n_out = n;
    return MT_OK;
}

mt_status app_alignment_symmetrize(const app_bitext *bt, const app_alignment *a,
                                   const app_alignment *b, app_sym method, app_alignment **out) {
    mt_status rc;
    app_alignment *r = NULL;
    app_link *buf = NULL;
    if (a->n != bt->n || b->n != bt->n)
        return mt_seterr(MT_ERR_INVALID, "symmetrize: %lld and %lld alignments for %lld pairs",
                         (long long)a->n, (long long)b->n, (long long)bt->n);
    int64_t total = 0, max_cells = 1;
    for (int64_t s = 0; s < bt->n; s++) {
        int64_t c = (bt->src_off[s + 1] - bt->src_off[s]) * (bt->trg_off[s + 1] - bt->trg_off[s]);
        if (c > max_cells) max_cells = c;
        /* the result never has more links than the union */
        total += (a->off[s + 1] - a->off[s]) + (b->off[s + 1] - b->off[s]);
    }
    rc = alignment_alloc(bt->n, total, &r);
    if (rc != MT_OK) return rc;
    buf = mt_try_malloc((size_t)max_cells * sizeof *buf);
    if (buf == NULL) {
        rc = mt_seterr(MT_ERR_NOMEM, "no memory to symmetrize");
        goto fail;
    }
    int64_t nl = 0;
    for (int64_t s = 0; s < bt->n; s++) {
        int64_t n;
        rc = app_symmetrize((int32_t)(bt->src_off[s + 1] - bt->src_off[s]),
                            (int32_t)(bt->trg_off[s + 1] - bt->trg_off[s]), a->links + a->off[s],
                            a->off[s + 1] - a->off[s], b->links + b->off[s],
                            b->off[s + 1] - b->off[s], method, buf, &n);
        if (rc != MT_OK) {
            mt_errprefix(rc, "sentence %lld", (long long)s + 1);
            goto fail;
        }
        r->off[s] = nl;
        memcpy(r->links + nl, buf, (size_t)n * sizeof *buf);
        nl += n;
    }
    r->off[bt->n] = nl;
    mt_free(buf);
    *out = r;
    return MT_OK;
fail:
    mt_free(buf);
    app_alignment_free(r);
    return rc;
}
