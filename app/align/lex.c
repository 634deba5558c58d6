/*
** lex.c: the lexical table of an aligned corpus, as extract_lex builds it
** (semantics and output format: lex.h).
**
** Text formats read here:
**   source / target corpus   one sentence per line, tokens separated by blanks
**   alignment                Pharaoh "i-j ..." per line (align.h)
** Files may be gzip-compressed.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "align.h"
#include "corpus.h"
#include "lex.h"

static bool is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '\n';
}

/* ---------------------------------------------------------- lexical table */

struct app_lex {
    app_interner *words;
    int32_t null_id;
    app_pairmap pairs; /* key (s, t) */
    double *count;     /* [pairs.n] */
    int64_t cap_count;
    double *given_s, *given_t; /* marginals by word id */
    int32_t cap_words;
    int64_t skipped;
    /* per-sentence scratch */
    int32_t *src_ids, *trg_ids;
    unsigned char *src_al, *trg_al;
    int64_t cap_sent;
};

mt_status app_lex_init(app_lex **out) {
    app_lex *lx = mt_try_calloc(1, sizeof *lx);
    mt_status rc = MT_ERR_NOMEM;
    if (lx == NULL) goto nomem;
    rc = app_interner_init(&lx->words);
    if (rc != MT_OK) goto fail;
    rc = app_pairmap_init(&lx->pairs);
    if (rc != MT_OK) goto fail;
    rc = app_interner_add(lx->words, "NULL", 4, &lx->null_id);
    if (rc != MT_OK) goto fail;
    lx->cap_count = 1024;
    lx->cap_words = 1024;
    lx->cap_sent = 256;
    lx->count = mt_try_malloc((size_t)lx->cap_count * sizeof *lx->count);
    lx->given_s = mt_try_calloc((size_t)lx->cap_words, sizeof *lx->given_s);
    lx->given_t = mt_try_calloc((size_t)lx->cap_words, sizeof *lx->given_t);
    lx->src_ids = mt_try_malloc((size_t)lx->cap_sent * sizeof *lx->src_ids);
    lx->trg_ids = mt_try_malloc((size_t)lx->cap_sent * sizeof *lx->trg_ids);
    lx->src_al = mt_try_malloc((size_t)lx->cap_sent);
    lx->trg_al = mt_try_malloc((size_t)lx->cap_sent);
    if (!lx->count || !lx->given_s || !lx->given_t || !lx->src_ids || !lx->trg_ids || !lx->src_al ||
        !lx->trg_al)
        goto nomem;
    *out = lx;
    return MT_OK;
nomem:
    rc = mt_seterr(MT_ERR_NOMEM, "no memory for a lexical table");
fail:
    app_lex_free(lx);
    return rc;
}

void app_lex_free(app_lex *lx) {
    if (lx == NULL) return;
    app_interner_free(lx->words);
    app_pairmap_clear(&lx->pairs);
    mt_free(lx->count);
    mt_free(lx->given_s);
    mt_free(lx->given_t);
    mt_free(lx->src_ids);
    mt_free(lx->trg_ids);
    mt_free(lx->src_al);
    mt_free(lx->trg_al);
    mt_free(lx);
}

int64_t app_lex_skipped_links(const app_lex *lx) { return lx->skipped; }

/* Interns the tokens of s[0..len) into ids (growing the sentence scratch). */
static mt_status lex_tokens(app_lex *lx, const char *s, size_t len, bool src, int64_t *n) {
    int64_t cnt = 0;
    size_t p = 0;
    while (p < len) {
        while (p < len && is_blank(s[p]))
            p++;
        if (p >= len) break;
        size_t st = p;
        while (p < len && !is_blank(s[p]))
            p++;
        if (cnt == lx->cap_sent) {
            int64_t ncap = lx->cap_sent * 2;
            int32_t *a = mt_try_realloc(lx->src_ids, (size_t)ncap * sizeof *a);
            if (a == NULL) goto nomem;
            lx->src_ids = a;
            int32_t *b = mt_try_realloc(lx->trg_ids, (size_t)ncap * sizeof *b);
            if (b == NULL) goto nomem;
            lx->trg_ids = b;
            unsigned char *c = mt_try_realloc(lx->src_al, (size_t)ncap);
            if (c == NULL) goto nomem;
            lx->src_al = c;
            unsigned char *d = mt_try_realloc(lx->trg_al, (size_t)ncap);
            if (d == NULL) goto nomem;
            lx->trg_al = d;
            lx->cap_sent = ncap;
        }
        int32_t id;
        mt_status rc = app_interner_add(lx->words, s + st, p - st, &id);
        if (rc != MT_OK) return rc;
        (src ? lx->src_ids : lx->trg_ids)[cnt++] = id;
    }
    *n = cnt;
    return MT_OK;
nomem:
    return mt_seterr(MT_ERR_NOMEM, "no memory for a lexical table");
}

static mt_status lex_count(app_lex *lx, int32_t s, int32_t t) {
    int32_t nw = app_interner_size(lx->words);
    if (nw > lx->cap_words) {
        int32_t ncap = lx->cap_words;
        while (ncap < nw)
            ncap *= 2;
        double *a = mt_try_realloc(lx->given_s, (size_t)ncap * sizeof *a);
        if (a == NULL) goto nomem;
        lx->given_s = a;
        double *b = mt_try_realloc(lx->given_t, (size_t)ncap * sizeof *b);
        if (b == NULL) goto nomem;
        lx->given_t = b;
        memset(lx->given_s + lx->cap_words, 0, (size_t)(ncap - lx->cap_words) * sizeof *a);
        memset(lx->given_t + lx->cap_words, 0, (size_t)(ncap - lx->cap_words) * sizeof *b);
        lx->cap_words = ncap;
    }
    int64_t idx;
    bool added;
    mt_status rc = app_pairmap_add(&lx->pairs, app_pair_key(s, t), &idx, &added);
    if (rc != MT_OK) return rc;
    if (added) {
        if (idx >= lx->cap_count) {
            int64_t ncap = lx->cap_count * 2;
            double *c = mt_try_realloc(lx->count, (size_t)ncap * sizeof *c);
            if (c == NULL) goto nomem;
            lx->count = c;
            lx->cap_count = ncap;
        }
        lx->count[idx] = 0.0;
    }
    lx->count[idx] += 1.0;
    lx->given_s[s] += 1.0;
    lx->given_t[t] += 1.0;
    return MT_OK;
nomem:
    return mt_seterr(MT_ERR_NOMEM, "no memory for a lexical table");
}

mt_status app_lex_add(app_lex *lx, const char *src, size_t src_len, const char *trg, size_t trg_len,
                      const char *align, size_t align_len, int64_t line_no) {
    int64_t ns, nt, nl;
    app_link *links = NULL;
    mt_status rc = lex_tokens(lx, src, src_len, true, &ns);
    if (rc != MT_OK) return rc;
    rc = lex_tokens(lx, trg, trg_len, false, &nt);
    if (rc != MT_OK) return rc;
    rc = app_links_parse(align, align_len, &links, &nl);
    if (rc != MT_OK) return mt_errprefix(rc, "line %lld", (long long)line_no);
    memset(lx->src_al, 0, (size_t)ns);
    memset(lx->trg_al, 0, (size_t)nt);
    for (int64_t k = 0; k < nl; k++) {
        int32_t i = links[k].src, j = links[k].trg;
        if (i >= ns || j >= nt) {
            if (lx->skipped++ < 10)
                mt_log(MT_LOG_WARN, "line %lld: alignment %d-%d outside a %lldx%lld sentence",
                       (long long)line_no, (int)i, (int)j, (long long)ns, (long long)nt);
            continue;
        }
        lx->src_al[i] = lx->trg_al[j] = 1;
        rc = lex_count(lx, lx->src_ids[i], lx->trg_ids[j]);
        if (rc != MT_OK) goto done;
    }
    for (int64_t i = 0; i < ns; i++)
        if (!lx->src_al[i] && (rc = lex_count(lx, lx->src_ids[i], lx->null_id)) != MT_OK) goto done;
    for (int64_t j = 0; j < nt; j++)
        if (!lx->trg_al[j] && (rc = lex_count(lx, lx->null_id, lx->trg_ids[j])) != MT_OK) goto done;
done:
    mt_free(links);
    return rc;
}

typedef struct lex_sort_item {
    const char *given, *word;
    int64_t idx;
} lex_sort_item;

static int cmp_lex_item(const void *pa, const void *pb) {
    const lex_sort_item *a = pa, *b = pb;
    int c = strcmp(a->given, b->given);
    return c ? c : strcmp(a->word, b->word);
}

mt_status app_lex_entries(const app_lex *lx, bool s2t, app_lex_entry **out, int64_t *n) {
    int64_t np = lx->pairs.n;
    lex_sort_item *items = mt_try_malloc((size_t)(np > 0 ? np : 1) * sizeof *items);
    app_lex_entry *e = mt_try_malloc((size_t)(np > 0 ? np : 1) * sizeof *e);
    if (items == NULL || e == NULL) {
        mt_free(items);
        mt_free(e);
        return mt_seterr(MT_ERR_NOMEM, "no memory for %lld lexical entries", (long long)np);
    }
    for (int64_t k = 0; k < np; k++) {
        int32_t s = (int32_t)(lx->pairs.keys[k] >> 32), t = (int32_t)(uint32_t)lx->pairs.keys[k];
        items[k].given = app_interner_str(lx->words, s2t ? s : t);
        items[k].word = app_interner_str(lx->words, s2t ? t : s);
        items[k].idx = k;
    }
    qsort(items, (size_t)np, sizeof *items, cmp_lex_item);
    for (int64_t k = 0; k < np; k++) {
        int64_t i = items[k].idx;
        int32_t s = (int32_t)(lx->pairs.keys[i] >> 32), t = (int32_t)(uint32_t)lx->pairs.keys[i];
        e[k].given = items[k].given;
        e[k].word = items[k].word;
        /* float / float, as extract_lex divides its float counts */
        e[k].prob = (float)lx->count[i] / (float)(s2t ? lx->given_s[s] : lx->given_t[t]);
    }
    mt_free(items);
    *out = e;
    *n = np;
    return MT_OK;
}

mt_status app_lex_write(const app_lex *lx, bool s2t, const char *path) {
    app_lex_entry *e = NULL;
    int64_t n = 0;
    mt_status rc = app_lex_entries(lx, s2t, &e, &n);
    if (rc != MT_OK) return rc;
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        mt_free(e);
        return mt_seterr(MT_ERR_IO, "cannot create '%s'", path);
    }
    for (int64_t k = 0; k < n && rc == MT_OK; k++)
        if (fprintf(f, "%s %s %.7f\n", e[k].word, e[k].given, (double)e[k].prob) < 0)
            rc = mt_seterr(MT_ERR_IO, "cannot write '%s'", path);
    if (fclose(f) != 0 && rc == MT_OK) rc = mt_seterr(MT_ERR_IO, "cannot write '%s'", path);
    mt_free(e);
    return rc;
}

mt_status app_lex_from_files(const char *src_path, const char *trg_path, const char *align_path,
                             app_lex **out) {
    const char *paths[3] = {src_path, trg_path, align_path};
    char *buf[3] = {NULL, NULL, NULL};
    size_t len[3] = {0, 0, 0}, pos[3] = {0, 0, 0};
    app_lex *lx = NULL;
    mt_status rc = MT_OK;
    for (int k = 0; k < 3; k++) {
        rc = mt_text_read_all(paths[k], &buf[k], &len[k]);
        if (rc != MT_OK) goto fail;
    }
    rc = app_lex_init(&lx);
    if (rc != MT_OK) goto fail;
    for (int64_t line_no = 1;; line_no++) {
        const char *l[3];
        size_t n[3];
        bool have[3];
        for (int k = 0; k < 3; k++)
            have[k] = mt_next_line(buf[k], len[k], &pos[k], &l[k], &n[k]);
        if (!have[0] && !have[1] && !have[2]) break;
        if (!have[0] || !have[1] || !have[2]) {
            int k = !have[0] ? 0 : !have[1] ? 1 : 2;
            rc = mt_seterr(MT_ERR_FORMAT, "'%s' ends after %lld lines; the other files go on",
                           paths[k], (long long)line_no - 1);
            goto fail;
        }
        rc = app_lex_add(lx, l[0], n[0], l[1], n[1], l[2], n[2], line_no);
        if (rc != MT_OK) {
            mt_errprefix(rc, "%s", align_path);
            goto fail;
        }
    }
    for (int k = 0; k < 3; k++)
        mt_free(buf[k]);
    *out = lx;
    return MT_OK;
fail:
    for (int k = 0; k < 3; k++)
        mt_free(buf[k]);
    app_lex_free(lx);
    return rc;
}
