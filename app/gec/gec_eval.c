/*
** gec_eval.c: edits by word-level Levenshtein alignment and their
** precision, recall and F0.5 (gec_eval.h).
*/
#include "gec_eval.h"

#include <stdbool.h>
#include <string.h>

typedef struct words {
    const char **w;
    int *len;
    int n;
} words;

static bool sp(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v'; }

static mt_status split(const char *s, words *out) {
    int cap = 1;
    for (const char *p = s; *p; p++)
        cap += sp(*p);
    out->n = 0;
    out->w = mt_try_malloc(sizeof *out->w * (size_t)cap);
    out->len = mt_try_malloc(sizeof *out->len * (size_t)cap);
    if (!out->w || !out->len) return mt_seterr(MT_ERR_NOMEM, "gec eval: out of memory");
    const char *p = s;
    for (;;) {
        while (*p && sp(*p))
            p++;
        if (!*p) break;
        const char *b = p;
        while (*p && !sp(*p))
            p++;
        out->w[out->n] = b;
        out->len[out->n++] = (int)(p - b);
    }
    return MT_OK;
}

static void words_free(words *w) {
    mt_free(w->w);
    mt_free(w->len);
}

static bool weq(const words *a, int i, const words *b, int j) {
    return a->len[i] == b->len[j] && memcmp(a->w[i], b->w[j], (size_t)a->len[i]) == 0;
}

void app_gec_edits_free(app_gec_edit *e, int n) {
    for (int i = 0; e && i < n; i++)
        mt_free(e[i].rep);
    mt_free(e);
}

mt_status app_gec_edits(const char *src, const char *tgt, app_gec_edit **out, int *n_out) {
    *out = NULL;
    *n_out = 0;
    words a = {0}, b = {0};
    mt_status rc = split(src, &a);
    if (rc == MT_OK) rc = split(tgt, &b);
    int W = b.n + 1;
    int32_t *d = rc == MT_OK ? mt_try_malloc(sizeof *d * (size_t)(a.n + 1) * (size_t)W) : NULL;
    /* ops of the path, from the end: 'M' 'S' 'D' 'I' */
    char *ops = rc == MT_OK ? mt_try_malloc((size_t)(a.n + b.n + 1)) : NULL;
    app_gec_edit *e = rc == MT_OK ? mt_try_calloc((size_t)(a.n + b.n + 1), sizeof *e) : NULL;
    if (rc == MT_OK && (!d || !ops || !e)) rc = mt_seterr(MT_ERR_NOMEM, "gec eval: out of memory");
    int ne = 0;
    if (rc == MT_OK) {
        for (int i = 0; i <= a.n; i++)
            for (int j = 0; j <= b.n; j++) {
                int32_t v;
                if (i == 0)
                    v = j;
                else if (j == 0)
                    v = i;
                else {
                    v = d[(i - 1) * W + j - 1] + (weq(&a, i - 1, &b, j - 1) ? 0 : 1);
                    if (d[(i - 1) * W + j] + 1 < v) v = d[(i - 1) * W + j] + 1;
                    if (d[i * W + j - 1] + 1 < v) v = d[i * W + j - 1] + 1;
                }
                d[i * W + j] = v;
            }
        int i = a.n, j = b.n, k = 0;
        while (i > 0 || j > 0) {
            int32_t v = d[i * W + j];
            if (i > 0 && j > 0 && weq(&a, i - 1, &b, j - 1) && d[(i - 1) * W + j - 1] == v)
                ops[k++] = 'M', i--, j--;
            else if (i > 0 && j > 0 && d[(i - 1) * W + j - 1] + 1 == v)
                ops[k++] = 'S', i--, j--;
            else if (i > 0 && d[(i - 1) * W + j] + 1 == v)
                ops[k++] = 'D', i--;
            else
                ops[k++] = 'I', j--;
        }
        /* forward over the path: runs of non-matches are edits */
        int si = 0, tj = 0;
        for (int q = k - 1; q >= 0 && rc == MT_OK;) {
            if (ops[q] == 'M') {
                si++, tj++, q--;
                continue;
            }
            int s0 = si, t0 = tj;
            while (q >= 0 && ops[q] != 'M') {
                if (ops[q] != 'I') si++;
                if (ops[q] != 'D') tj++;
                q--;
            }
            size_t len = 0;
            for (int t = t0; t < tj; t++)
                len += (size_t)b.len[t] + 1;
            char *rep = mt_try_malloc(len + 1), *o = rep;
            if (!rep) {
                rc = mt_seterr(MT_ERR_NOMEM, "gec eval: out of memory");
                break;
            }
            for (int t = t0; t < tj; t++) {
                if (t > t0) *o++ = ' ';
                memcpy(o, b.w[t], (size_t)b.len[t]);
                o += b.len[t];
            }
            *o = '\0';
            e[ne++] = (app_gec_edit){s0, si, rep};
        }
    }
    mt_free(d);
    mt_free(ops);
    words_free(&a);
    words_free(&b);
    if (rc != MT_OK) {
        app_gec_edits_free(e, ne);
        return rc;
    }
    *out = e;
    *n_out = ne;
    return MT_OK;
}

static bool same_edit(const app_gec_edit *x, const app_gec_edit *y) {
    return x->start == y->start && x->end == y->end && strcmp(x->rep, y->rep) == 0;
}

/* Whitespace-insensitive equality (the same words). */
static bool same_words(const char *x, const char *y) {
    for (;;) {
        while (*x && sp(*x))
            x++;
        while (*y && sp(*y))
            y++;
        if (!*x || !*y) return !*x && !*y;
        while (*x && !sp(*x) && *x == *y)
            x++, y++;
        if ((*x && !sp(*x)) || (*y && !sp(*y))) return false;
    }
}

mt_status app_gec_count(app_gec_counts *c, const char *src, const char *hyp, const char *ref) {
    app_gec_edit *h = NULL, *r = NULL;
    int nh = 0, nr = 0;
    mt_status rc = app_gec_edits(src, hyp, &h, &nh);
    if (rc == MT_OK) rc = app_gec_edits(src, ref, &r, &nr);
    if (rc == MT_OK) {
        int64_t tp = 0;
        for (int i = 0; i < nh; i++)
            for (int j = 0; j < nr; j++)
                if (same_edit(&h[i], &r[j])) {
                    tp++;
                    break;
                }
        c->tp += tp;
        c->fp += nh - tp;
        c->fn += nr - tp;
        c->lines++;
        if (same_words(src, ref)) {
            c->clean_lines++;
            c->clean_kept += same_words(src, hyp);
        } else {
            c->noisy_lines++;
            c->noisy_fixed += same_words(hyp, ref);
        }
    }
    app_gec_edits_free(h, nh);
    app_gec_edits_free(r, nr);
    return rc;
}

app_gec_scores app_gec_score(const app_gec_counts *c) {
    app_gec_scores s;
    s.precision = c->tp + c->fp ? (double)c->tp / (double)(c->tp + c->fp) : 1.0;
    s.recall = c->tp + c->fn ? (double)c->tp / (double)(c->tp + c->fn) : 1.0;
    double den = 0.25 * s.precision + s.recall;
    s.f05 = den > 0 ? 1.25 * s.precision * s.recall / den : 0.0;
    s.clean_kept = c->clean_lines ? (double)c->clean_kept / (double)c->clean_lines : 1.0;
    return s;
}
