/*
** term_list.c: the stopgap glossary reader and matcher of term_list.h.
*/
#include "term_list.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

typedef struct entry {
    char *src, *tgt;
    size_t src_len;
    int idx; /* line order: ties of the sort keep it */
} entry;

struct app_terms {
    entry *e;
    int n, cap;
};

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

static bool word_byte(unsigned char c) {
    return c >= 0x80 || (c >= '0' && c <= '9') || (lower(c) >= 'a' && lower(c) <= 'z');
}

static bool same_ci(const char *a, const char *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (lower((unsigned char)a[i]) != lower((unsigned char)b[i])) return false;
    return true;
}

/* The first occurrence of term in text at or after byte from (rules of
** term_list.h), or -1. */
static long find_from(const char *text, size_t tl, const char *term, size_t n, size_t from) {
    if (n == 0) return -1;
    for (size_t i = from; i + n <= tl; i++) {
        if (lower((unsigned char)text[i]) != lower((unsigned char)term[0])) continue;
        if (i > 0 && word_byte((unsigned char)text[i - 1]) && word_byte((unsigned char)term[0]))
            continue;
        if (i + n < tl && word_byte((unsigned char)text[i + n]) &&
            word_byte((unsigned char)term[n - 1]))
            continue;
        if (same_ci(text + i, term, n)) return (long)i;
    }
    return -1;
}

bool app_terms_occurs(const char *text, const char *term) {
    return find_from(text, strlen(text), term, strlen(term), 0) >= 0;
}

void app_terms_free(app_terms *t) {
    if (t == NULL) return;
    for (int i = 0; i < t->n; i++) {
        mt_free(t->e[i].src);
        mt_free(t->e[i].tgt);
    }
    mt_free(t->e);
    mt_free(t);
}

int app_terms_count(const app_terms *t) { return t->n; }

static int by_len_desc(const void *a, const void *b) {
    const entry *x = a, *y = b;
    if (x->src_len != y->src_len) return x->src_len < y->src_len ? 1 : -1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

mt_status app_terms_load(const char *path, app_terms **out) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL) return mt_seterr(MT_ERR_IO, "%s: %s", path, strerror(errno));
    app_terms *t = mt_try_calloc(1, sizeof *t);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int64_t no = 0;
    mt_status rc = t ? MT_OK : mt_seterr(MT_ERR_NOMEM, "glossary: out of memory");
    while (rc == MT_OK && (len = app_read_line(f, &line, &cap)) >= 0) {
        no++;
        if (len == 0 || line[0] == '#') continue;
        rc = app_check_utf8(line, (size_t)len, path, no);
        if (rc != MT_OK) break;
        char *tab = strchr(line, '\t');
        if (tab == NULL) {
            rc = mt_seterr(MT_ERR_INVALID, "%s:%lld: no TAB (lines are source<TAB>target)", path,
                           (long long)no);
            break;
        }
        *tab = '\0';
        char *tgt = tab + 1, *end = strchr(tgt, '\t');
        if (end) *end = '\0';
        if (line[0] == '\0' || tgt[0] == '\0') {
            rc = mt_seterr(MT_ERR_INVALID, "%s:%lld: empty %s term", path, (long long)no,
                           line[0] == '\0' ? "source" : "target");
            break;
        }
        size_t sl = strlen(line);
        bool dup = false;
        for (int i = 0; i < t->n && !dup; i++)
            dup = t->e[i].src_len == sl && same_ci(t->e[i].src, line, sl);
        if (dup) continue;
        if (t->n == t->cap) {
            int nc = t->cap ? 2 * t->cap : 64;
            entry *ne = mt_try_realloc(t->e, sizeof *ne * (size_t)nc);
            if (ne == NULL) {
                rc = mt_seterr(MT_ERR_NOMEM, "glossary: out of memory");
                break;
            }
            t->e = ne;
            t->cap = nc;
        }
        entry *e = &t->e[t->n];
        e->src = mt_try_strdup(line);
        e->tgt = mt_try_strdup(tgt);
        e->src_len = sl;
        e->idx = t->n;
        if (e->src == NULL || e->tgt == NULL) {
            mt_free(e->src);
            mt_free(e->tgt);
            rc = mt_seterr(MT_ERR_NOMEM, "glossary: out of memory");
            break;
        }
        t->n++;
    }
    if (rc == MT_OK && ferror(f)) rc = mt_seterr(MT_ERR_IO, "%s: read error", path);
    free(line);
    fclose(f);
    if (rc != MT_OK) {
        app_terms_free(t);
        return rc;
    }
    qsort(t->e, (size_t)t->n, sizeof *t->e, by_len_desc);
    *out = t;
    return MT_OK;
}

int app_terms_match(const app_terms *t, const char *text, const char **out, int max) {
    enum { MAXSPAN = 64 };
    size_t tl = strlen(text), a[MAXSPAN], b[MAXSPAN]; /* chosen source spans [a, b) */
    int n = 0;
    if (max > MAXSPAN) max = MAXSPAN;
    for (int i = 0; i < t->n && n < max; i++) {
        const entry *e = &t->e[i];
        for (long at = find_from(text, tl, e->src, e->src_len, 0); at >= 0;
             at = find_from(text, tl, e->src, e->src_len, (size_t)at + 1)) {
            size_t x = (size_t)at, y = x + e->src_len;
            bool overlap = false;
            for (int k = 0; k < n && !overlap; k++)
                overlap = x < b[k] && a[k] < y;
            if (overlap) continue;
            a[n] = x;
            b[n] = y;
            out[n++] = e->tgt;
            break;
        }
    }
    return n;
}
