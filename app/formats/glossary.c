/*
** glossary.c: glossary files and the term matcher (glossary.h).
**
** Every file is UTF-8 (a UTF-8 byte order mark EF BB BF at the start is
** skipped).  Before parsing, the whole file is checked: a NUL byte or an
** invalid UTF-8 sequence is refused with its line.
**
** TBX-Basic (ISO 30042; TBX 2008 "martif" and TBX v3 "tbx" names):
**
**   element            where                     what is read
**   martif | tbx       root                      (anything else: refused)
**   text > body        under the root            the entries' container
**   termEntry |        body                      one concept: every source
**     conceptEntry                               term x every target term
**                                                is one pair
**   langSet | langSec  termEntry                 xml:lang (or lang): the
**                                                language of its terms; the
**                                                first langSet matching
**                                                --src-lang (primary subtag:
**                                                en-US matches en) gives the
**                                                source terms, the first
**                                                matching --tgt-lang the
**                                                targets; both needed, else
**                                                the entry is skipped
**   tig | ntig>termGrp langSet                   one term (64 at most per
**                                                langSet): its <term> text
**     | termSec                                  (inner elements' text
**                                                included, white space runs
**                                                collapsed); empty: refused
**   termNote           tig/termGrp/termSec       type="administrativeStatus"
**                                                with deprecatedTerm-admn-sts,
**                                                supersededTerm-admn-sts or
**                                                notRecommended: the term is
**                                                skipped; type=
**                                                "x-caseSensitive" "yes": the
**                                                source term is case-
**                                                sensitive
**   descrip | note     termEntry, langSet, tig   the pair's note: the texts
**                                                of the entry's, the source
**                                                langSet's and the source
**                                                term's, joined with "; "
**   anything else      ignored (martifHeader, admin, xref, ...)
**
** CSV (RFC 4180):
**
**   bytes              meaning
**   , (0x2C)           field separator
**   " (0x22)           a field starting with it is quoted: up to the next
**                      lone '"', with "" standing for one '"'; commas and
**                      line breaks inside are text.  After the closing
**                      quote only ',' or the end of the record may follow;
**                      a '"' inside a field that does not start with one
**                      is text (5" screen)
**   CR LF | LF         end of record (outside quotes)
**   empty record       skipped (blank line)
**
** TSV: fields separated by TAB (0x09), records by LF (a CR before the LF is
** dropped), no quoting; a field cannot hold a tab or a line break.
**
** Fields, for both (leading and trailing blanks of each field dropped):
**
**   column   content                        required
**   1        source term                    yes, not empty
**   2        target term                    yes, not empty
**   3        note                           no ('' when absent or empty)
**   4        case sensitivity of the source: no (empty: no); yes/no, 1/0,
**            true/false, cs/ci, y/n (any case); anything else refused
**
** Every record has the same number of fields, 2 to 4 (a record with
** another count is refused).  A first record whose every field is a column
** name (case ignored; source|src|source term|term|the source language,
** target|tgt|target term|translation|the target language, note|notes|
** comment|description|definition, case|case sensitive|case-sensitive|
** case_sensitive|cs|match case) is a header: then the columns are the ones
** it names, in its order (source and target required, each name once).
*/
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "corpus_io.h"
#include "doc.h"
#include "glossary.h"
#include "metrics.h"
#include "store_glossary.h"
#include "vocab.h"
#include "xml_errors.h"

static mt_status oom(void) { return mt_seterr(MT_ERR_NOMEM, "glossary: out of memory"); }

/* ============================================================== tokens */

enum { CL_SPACE = 0, CL_WORD, CL_CJK, CL_OTHER };

static int cp_class(uint32_t c) {
    if (c < 0x80) {
        if (c == ' ' || (c >= '\t' && c <= '\r')) return CL_SPACE;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')
            return CL_WORD;
        return CL_OTHER;
    }
    if (c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
        c == 0x202F || c == 0x205F || c == 0x3000 || c == 0xFEFF || c == 0x85)
        return CL_SPACE;
    if (c <= 0xBF || c == 0xD7 || c == 0xF7 || c == 0xFFFD) return CL_OTHER;
    if (c >= 0x2000 && c <= 0x2BFF) return CL_OTHER;
    if (c >= 0x2E00 && c <= 0x2E7F) return CL_OTHER;
    if (c >= 0x3000 && c <= 0x303F) return CL_OTHER;
    if (c >= 0xFE30 && c <= 0xFE4F) return CL_OTHER;
    if (c >= 0xFF00 && c <= 0xFF0F) return CL_OTHER;
    if ((c >= 0xFF1A && c <= 0xFF20) || (c >= 0xFF3B && c <= 0xFF40) ||
        (c >= 0xFF5B && c <= 0xFF65))
        return CL_OTHER;
    if (c >= 0x1F000 && c <= 0x1FAFF) return CL_OTHER;
    if ((c >= 0x2E80 && c <= 0x9FFF) || (c >= 0xF900 && c <= 0xFAFF) ||
        (c >= 0x20000 && c <= 0x2FFFF))
        return CL_CJK;
    return CL_WORD;
}

typedef struct gtok {
    int32_t start, len;         /* bytes of the text               */
    int32_t fold_off, fold_len; /* bytes of the folded buffer      */
    uint64_t hash;              /* FNV-1a of the folded bytes      */
    bool space_before;
    bool word;
} gtok;

typedef struct gtoks {
    gtok *v;
    int32_t n, cap;
    char *fold;
    size_t fold_n, fold_cap;
} gtoks;

static void gtoks_free(gtoks *t) {
    mt_free(t->v);
    mt_free(t->fold);
    memset(t, 0, sizeof *t);
}

/* Tokens of s[0..n) (rules in glossary.h). */
static mt_status tokenize(const char *s, size_t n, gtoks *t) {
    memset(t, 0, sizeof *t);
    /* folding a code point takes at most 4 bytes, never more than 4x */
    t->fold_cap = 4 * n + 1;
    t->fold = mt_try_malloc(t->fold_cap);
    if (t->fold == NULL) return oom();
    bool space = false;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t k = mt_utf8_decode(s + i, n - i, &c);
        int cl = cp_class(c);
        if (cl == CL_SPACE) {
            space = true;
            i += k;
            continue;
        }
        if (t->n == t->cap) {
            int32_t cap = t->cap ? 2 * t->cap : 16;
            gtok *v = mt_try_realloc(t->v, (size_t)cap * sizeof *v);
            if (v == NULL) {
                gtoks_free(t);
                return oom();
            }
            t->v = v;
            t->cap = cap;
        }
        gtok *g = &t->v[t->n++];
        g->start = (int32_t)i;
        g->fold_off = (int32_t)t->fold_n;
        g->space_before = space;
        g->word = cl == CL_WORD;
        space = false;
        t->fold_n += mt_utf8_encode(mt_unicode_lower(c), t->fold + t->fold_n);
        i += k;
        if (cl == CL_WORD)
            while (i < n) {
                k = mt_utf8_decode(s + i, n - i, &c);
                if (cp_class(c) != CL_WORD) break;
                t->fold_n += mt_utf8_encode(mt_unicode_lower(c), t->fold + t->fold_n);
                i += k;
            }
        g->len = (int32_t)(i - (size_t)g->start);
        g->fold_len = (int32_t)(t->fold_n - (size_t)g->fold_off);
        g->hash = mt_fnv1a(MT_FNV1A_INIT, t->fold + g->fold_off, (size_t)g->fold_len);
    }
    return MT_OK;
}

/* How the term's last word may differ from the text's (both words). */
enum { LAST_EXACT = 0, LAST_PREFIX, LAST_PLURAL };

/* Is text word a the term word b, followed by nothing (LAST_EXACT), by
** anything (LAST_PREFIX) or by "s" / "es" (LAST_PLURAL)? */
static bool last_word_ok(const char *at, size_t an, const char *bt, size_t bn, int mode) {
    if (an < bn || memcmp(at, bt, bn) != 0) return false;
    if (an == bn || mode == LAST_PREFIX) return true;
    if (mode != LAST_PLURAL) return false;
    const char *rest = at + bn;
    size_t rn = an - bn;
    return (rn == 1 && (rest[0] == 's' || rest[0] == 'S')) ||
           (rn == 2 && (!memcmp(rest, "es", 2) || !memcmp(rest, "ES", 2)));
}

/* Does the term (tokens p of text ps) occur in text ts at token i?  mode:
** how its last word may go on in the text (LAST_*). */
static bool match_at(const gtoks *t, const char *ts, int32_t i, const gtoks *p, const char *ps,
                     bool cs, int mode) {
    if (i + p->n > t->n) return false;
    for (int32_t k = 0; k < p->n; k++) {
        const gtok *a = &t->v[i + k], *b = &p->v[k];
        if (k > 0 && a->space_before != b->space_before) return false;
        int m = k == p->n - 1 && a->word && b->word ? mode : LAST_EXACT;
        if (m == LAST_EXACT && (cs ? a->len != b->len : a->hash != b->hash)) return false;
        bool ok = cs ? last_word_ok(ts + a->start, (size_t)a->len, ps + b->start, (size_t)b->len, m)
                     : last_word_ok(t->fold + a->fold_off, (size_t)a->fold_len,
                                    p->fold + b->fold_off, (size_t)b->fold_len, m);
        if (!ok) return false;
    }
    return true;
}

static bool present(const char *text, const char *term, bool cs, bool prefix) {
    if (text == NULL || term == NULL) return false;
    gtoks t, p;
    if (tokenize(term, strlen(term), &p) != MT_OK) return false;
    if (p.n == 0 || tokenize(text, strlen(text), &t) != MT_OK) {
        gtoks_free(&p);
        return false;
    }
    bool found = false;
    for (int32_t i = 0; i + p.n <= t.n && !found; i++)
        found = match_at(&t, text, i, &p, term, cs, prefix ? LAST_PREFIX : LAST_EXACT);
    gtoks_free(&t);
    gtoks_free(&p);
    return found;
}

bool app_glossary_target_present(const char *text, const char *term, bool case_sensitive) {
    return present(text, term, case_sensitive, true);
}

bool app_glossary_term_present(const char *text, const char *term, bool case_sensitive) {
    return present(text, term, case_sensitive, false);
}

/* ============================================================= matcher */

/* Terms of one side (source or target) indexed by their first token. */
typedef struct gindex {
    gtoks *terms;         /* tokens of each entry's term (n == 0: not indexed) */
    int32_t *head, *next; /* hash chains by the first token's hash, entry order */
    uint32_t mask;
} gindex;

struct app_glossary {
    app_gloss_entry *e;
    int32_t n;
    mt_arena *text;
    gindex ix[2]; /* 0: source terms, 1: target terms */
};

static char *arena_dup(mt_arena *a, const char *s) {
    size_t n = strlen(s ? s : "") + 1;
    char *p = mt_arena_alloc(a, n, 1);
    if (p) memcpy(p, s ? s : "", n);
    return p;
}

static void gindex_free(gindex *x, int32_t n) {
    for (int32_t i = 0; x->terms && i < n; i++)
        gtoks_free(&x->terms[i]);
    mt_free(x->terms);
    mt_free(x->head);
    mt_free(x->next);
}

void app_glossary_free(app_glossary *g) {
    if (g == NULL) return;
    gindex_free(&g->ix[0], g->n);
    gindex_free(&g->ix[1], g->n);
    mt_free(g->e);
    mt_arena_free(g->text);
    mt_free(g);
}

/* Indexes side (0 source, 1 target) of g's n entries. */
static mt_status gindex_build(app_glossary *g, int side) {
    gindex *x = &g->ix[side];
    int32_t n = g->n > 0 ? g->n : 1;
    uint32_t size = 16;
    while (size < 2u * (uint32_t)n && size < (1u << 30))
        size *= 2;
    x->mask = size - 1;
    x->terms = mt_try_calloc((size_t)n, sizeof *x->terms);
    x->next = mt_try_calloc((size_t)n, sizeof *x->next);
    x->head = mt_try_malloc(size * sizeof *x->head);
    int32_t *tail = mt_try_malloc(size * sizeof *tail); /* last entry of each chain */
    if (!x->terms || !x->next || !x->head || !tail) {
        mt_free(tail);
        return oom();
    }
    for (uint32_t i = 0; i < size; i++)
        x->head[i] = -1;
    for (int32_t i = 0; i < g->n; i++) {
        const char *t = side ? g->e[i].target : g->e[i].source;
        if (tokenize(t, strlen(t), &x->terms[i]) != MT_OK) {
            mt_free(tail);
            return oom();
        }
        x->next[i] = -1;
        if (x->terms[i].n == 0) continue; /* only white space: never matches */
        uint32_t b = (uint32_t)x->terms[i].v[0].hash & x->mask;
        if (x->head[b] < 0)
            x->head[b] = i;
        else
            x->next[tail[b]] = i;
        tail[b] = i;
    }
    mt_free(tail);
    return MT_OK;
}

mt_status app_glossary_new(const app_gloss_entry *e, int32_t n, app_glossary **out) {
    *out = NULL;
    app_glossary *g = mt_try_calloc(1, sizeof *g);
    if (g == NULL) return oom();
    mt_status rc = mt_arena_init(1 << 16, &g->text);
    if (rc != MT_OK) {
        mt_free(g);
        return rc;
    }
    g->e = mt_try_calloc((size_t)(n > 0 ? n : 1), sizeof *g->e);
    if (g->e == NULL) goto nomem;
    for (int32_t i = 0; i < n; i++) {
        if (!e[i].source || !e[i].source[0] || !e[i].target || !e[i].target[0]) continue;
        app_gloss_entry *d = &g->e[g->n];
        d->source = arena_dup(g->text, e[i].source);
        d->target = arena_dup(g->text, e[i].target);
        d->note = arena_dup(g->text, e[i].note);
        d->case_sensitive = e[i].case_sensitive;
        if (!d->source || !d->target || !d->note) goto nomem;
        g->n++;
    }
    if (gindex_build(g, 0) != MT_OK || gindex_build(g, 1) != MT_OK) goto nomem;
    *out = g;
    return MT_OK;
nomem:
    app_glossary_free(g);
    return oom();
}

int32_t app_glossary_count(const app_glossary *g) { return g ? g->n : 0; }

const app_gloss_entry *app_glossary_entry(const app_glossary *g, int32_t i) {
    MT_ASSERT(g != NULL && i >= 0 && i < g->n);
    return &g->e[i];
}

typedef struct cand {
    int32_t tok, ntok; /* token range in the text */
    int32_t start, len;
    int32_t entry;
} cand;

static int cand_by_length(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->entry > y->entry) - (x->entry < y->entry);
}

static int match_by_start(const void *a, const void *b) {
    const app_gloss_match *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->entry > y->entry) - (x->entry < y->entry);
}

/* The occurrences of side's terms in text (app_glossary_match). */
static mt_status match_side(const app_glossary *g, int side, const char *text,
                            app_gloss_match **out, int32_t *n_out) {
    *out = NULL;
    *n_out = 0;
    if (g == NULL || g->n == 0 || text == NULL || text[0] == '\0') return MT_OK;
    const gindex *x = &g->ix[side];
    gtoks t;
    mt_status rc = tokenize(text, strlen(text), &t);
    if (rc != MT_OK) return rc;
    cand *c = NULL;
    int32_t nc = 0, cap = 0;
    int32_t *owner = NULL;
    app_gloss_match *m = NULL;
    int mode = side == 0 ? LAST_PLURAL : LAST_EXACT;
    for (int32_t i = 0; i < t.n; i++) {
        /* keys: the token, and for source terms of one word the token
        ** without a plural "s" / "es" (calendars: calendar) */
        const gtok *tk = &t.v[i];
        const char *f = t.fold + tk->fold_off;
        uint64_t keys[3] = {tk->hash, 0, 0};
        int nk = 1;
        if (mode == LAST_PLURAL && tk->word && tk->fold_len > 2 && f[tk->fold_len - 1] == 's') {
            keys[nk++] = mt_fnv1a(MT_FNV1A_INIT, f, (size_t)tk->fold_len - 1);
            if (f[tk->fold_len - 2] == 'e')
                keys[nk++] = mt_fnv1a(MT_FNV1A_INIT, f, (size_t)tk->fold_len - 2);
        }
        for (int q = 0; q < nk; q++) {
            uint64_t h = keys[q];
            for (int32_t k = x->head[(uint32_t)h & x->mask]; k >= 0; k = x->next[k]) {
                const gtoks *p = &x->terms[k];
                if (p->v[0].hash != h) continue;  /* another key in the bucket */
                if (q > 0 && p->n != 1) continue; /* plural: of the last word only */
                const char *term = side ? g->e[k].target : g->e[k].source;
                if (!match_at(&t, text, i, p, term, g->e[k].case_sensitive, mode)) continue;
                if (nc == cap) {
                    cap = cap ? 2 * cap : 16;
                    cand *v = mt_try_realloc(c, (size_t)cap * sizeof *v);
                    if (v == NULL) goto nomem;
                    c = v;
                }
                const gtok *last = &t.v[i + p->n - 1];
                c[nc++] = (cand){i, p->n, t.v[i].start, last->start + last->len - t.v[i].start, k};
            }
        }
    }
    if (nc == 0) goto done;
    qsort(c, (size_t)nc, sizeof *c, cand_by_length);
    owner = mt_try_malloc((size_t)t.n * sizeof *owner);
    m = mt_try_malloc((size_t)nc * sizeof *m);
    if (!owner || !m) goto nomem;
    for (int32_t i = 0; i < t.n; i++)
        owner[i] = -1;
    int32_t nm = 0;
    for (int32_t j = 0; j < nc; j++) {
        const cand *cd = &c[j];
        int32_t o = owner[cd->tok];
        if (o >= 0) { /* taken: only an alternative at the same span */
            if (c[o].tok != cd->tok || c[o].ntok != cd->ntok) continue;
            bool dup = false; /* the same other side at the same span */
            for (int32_t q = 0; q < nm && !dup; q++)
                dup = m[q].start == cd->start && m[q].len == cd->len &&
                      strcmp(side ? g->e[m[q].entry].source : g->e[m[q].entry].target,
                             side ? g->e[cd->entry].source : g->e[cd->entry].target) == 0;
            if (!dup) m[nm++] = (app_gloss_match){cd->start, cd->len, cd->entry};
            continue;
        }
        bool free_span = true;
        for (int32_t q = cd->tok; q < cd->tok + cd->ntok && free_span; q++)
            free_span = owner[q] < 0;
        if (!free_span) continue;
        for (int32_t q = cd->tok; q < cd->tok + cd->ntok; q++)
            owner[q] = j;
        m[nm++] = (app_gloss_match){cd->start, cd->len, cd->entry};
    }
    qsort(m, (size_t)nm, sizeof *m, match_by_start);
    *out = m;
    *n_out = nm;
    m = NULL;
done:
    mt_free(m);
    mt_free(owner);
    mt_free(c);
    gtoks_free(&t);
    return MT_OK;
nomem:
    mt_free(m);
    mt_free(owner);
    mt_free(c);
    gtoks_free(&t);
    return oom();
}

mt_status app_glossary_match(const app_glossary *g, const char *text, app_gloss_match **out,
                             int32_t *n) {
    return match_side(g, 0, text, out, n);
}

mt_status app_glossary_match_targets(const app_glossary *g, const char *text, app_gloss_match **out,
                                     int32_t *n) {
    return match_side(g, 1, text, out, n);
}

int app_glossary_constraints(const app_glossary *g, const char *text, const char **out, int max) {
    app_gloss_match *m = NULL;
    int32_t n = 0;
    if (g == NULL || max <= 0) return 0;
    if (app_glossary_match(g, text, &m, &n) != MT_OK) return -1;
    /* the first alternative of each span, its target not seen before */
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        if (i > 0 && m[i].start == m[i - 1].start && m[i].len == m[i - 1].len) continue;
        const char *t = g->e[m[i].entry].target;
        bool seen = false;
        for (int32_t j = 0; j < k && !seen; j++)
            seen = strcmp(g->e[m[j].entry].target, t) == 0;
        if (!seen) m[k++] = m[i];
    }
    /* over the limit: drop the shortest spans (the latest of equal ones) */
    while (k > max) {
        int32_t drop = 0;
        for (int32_t j = 1; j < k; j++)
            if (m[j].len <= m[drop].len) drop = j;
        memmove(&m[drop], &m[drop + 1], (size_t)(k - drop - 1) * sizeof *m);
        k--;
    }
    for (int32_t j = 0; j < k; j++)
        out[j] = g->e[m[j].entry].target;
    mt_free(m);
    return (int)k;
}

/* ----------------------------------------------------------- from store */

typedef struct load_ctx {
    app_gloss_entry *v;
    int32_t n, cap;
    mt_arena *text;
    mt_status rc;
} load_ctx;

static int load_row(void *user, const store_gloss_entry *e) {
    load_ctx *c = user;
    if (c->n == c->cap) {
        int32_t cap = c->cap ? 2 * c->cap : 64;
        app_gloss_entry *v = mt_try_realloc(c->v, (size_t)cap * sizeof *v);
        if (v == NULL) {
            c->rc = oom();
            return 1;
        }
        c->v = v;
        c->cap = cap;
    }
    app_gloss_entry *d = &c->v[c->n];
    d->source = arena_dup(c->text, e->source);
    d->target = arena_dup(c->text, e->target);
    d->note = arena_dup(c->text, e->note);
    d->case_sensitive = e->case_sensitive;
    if (!d->source || !d->target || !d->note) {
        c->rc = oom();
        return 1;
    }
    c->n++;
    return 0;
}

mt_status app_glossary_load_file(const char *path, const char *src_lang, const char *tgt_lang,
                                 app_glossary **out) {
    *out = NULL;
    app_gloss_list l = {0};
    mt_status rc = app_glossary_read(path, APP_GLOSS_AUTO, src_lang, tgt_lang, &l, NULL);
    if (rc == MT_OK) rc = app_glossary_new(l.v, l.n, out);
    app_gloss_list_free(&l);
    return rc;
}

mt_status app_glossary_load(store *s, const char *project, const char *src_lang,
                            const char *tgt_lang, app_glossary **out) {
    *out = NULL;
    load_ctx c = {0};
    mt_status rc = mt_arena_init(1 << 16, &c.text);
    if (rc != MT_OK) return rc;
    store_gloss_filter f = {project ? project : "", true, src_lang, tgt_lang};
    rc = store_glossary_list(s, &f, load_row, &c);
    if (rc == MT_ABORTED) rc = c.rc;
    if (rc == MT_OK) rc = app_glossary_new(c.v, c.n, out);
    mt_free(c.v);
    mt_arena_free(c.text);
    return rc;
}

/* ================================================================ files */

static const char *const format_names[] = {"auto", "tbx", "csv", "tsv"};

const char *app_gloss_format_name(app_gloss_format f) {
    return (unsigned)f < 4 ? format_names[f] : "?";
}

int app_gloss_format_from_name(const char *name) {
    for (int i = 0; i < 4; i++)
        if (name && strcasecmp(name, format_names[i]) == 0) return i;
    return -1;
}

void app_gloss_list_free(app_gloss_list *l) {
    if (l == NULL) return;
    mt_free(l->v);
    mt_arena_free(l->text);
    memset(l, 0, sizeof *l);
}

static mt_status list_push(app_gloss_list *l, const char *src, size_t sn, const char *tgt,
                           size_t tn, const char *note, size_t nn, bool cs) {
    if (l->n == l->cap) {
        int32_t cap = l->cap ? 2 * l->cap : 64;
        app_gloss_entry *v = mt_try_realloc(l->v, (size_t)cap * sizeof *v);
        if (v == NULL) return oom();
        l->v = v;
        l->cap = cap;
    }
    char *s = mt_arena_alloc(l->text, sn + tn + nn + 3, 1);
    if (s == NULL) return oom();
    memcpy(s, src, sn);
    s[sn] = '\0';
    char *t = s + sn + 1;
    memcpy(t, tgt, tn);
    t[tn] = '\0';
    char *o = t + tn + 1;
    if (nn) memcpy(o, note, nn);
    o[nn] = '\0';
    l->v[l->n++] = (app_gloss_entry){s, t, o, cs};
    return MT_OK;
}

static int line_of(const char *data, size_t off) {
    int line = 1;
    for (size_t i = 0; i < off; i++)
        line += data[i] == '\n';
    return line;
}

static bool has_suffix(const char *path, const char *suf) {
    size_t n = strlen(path), m = strlen(suf);
    return n >= m && strcasecmp(path + n - m, suf) == 0;
}

/* ------------------------------------------------------------ CSV, TSV */

#define MAX_FIELDS 16

typedef struct field {
    const char *p; /* into the data, or into the unquoting buffer */
    size_t n;
} field;

typedef struct rec_reader {
    const char *path, *d;
    size_t n, i;
    bool tsv;
    char *buf; /* unquoted text of the current record's quoted fields */
    size_t buf_n, buf_cap;
    size_t line_off; /* line numbers, counted on as the reader advances */
    int line_no;
} rec_reader;

/* The line of byte off (>= the last one asked for: linear over the file). */
static int line_at(rec_reader *r, size_t off) {
    if (off < r->line_off) r->line_off = 0, r->line_no = 1;
    for (; r->line_off < off; r->line_off++)
        r->line_no += r->d[r->line_off] == '\n';
    return r->line_no;
}

static void trim(field *f) {
    while (f->n && strchr(" \t\r\n", f->p[0]))
        f->p++, f->n--;
    while (f->n && strchr(" \t\r\n", f->p[f->n - 1]))
        f->n--;
}

/* Reads the next record into f (up to MAX_FIELDS + 1 fields counted in
** *nf); *line its first line; false at the end of the data. */
static mt_status next_record(rec_reader *r, field *f, int *nf, int *line, bool *got) {
    *got = false;
    *nf = 0;
    r->buf_n = 0;
    /* skip blank lines */
    while (r->i < r->n) {
        size_t j = r->i;
        while (j < r->n && (r->d[j] == ' ' || r->d[j] == '\t' || r->d[j] == '\r'))
            j++;
        if (j < r->n && r->d[j] == '\n') {
            r->i = j + 1;
            continue;
        }
        if (j == r->n) r->i = j;
        break;
    }
    if (r->i >= r->n) return MT_OK;
    *got = true;
    *line = line_at(r, r->i);
    /* the unquoting buffer never needs more than the rest of the data */
    if (r->buf_cap < r->n - r->i + 1) {
        char *b = mt_try_realloc(r->buf, r->n - r->i + 1);
        if (b == NULL) return oom();
        r->buf = b;
        r->buf_cap = r->n - r->i + 1;
    }
    char sep = r->tsv ? '\t' : ',';
    for (;;) {
        field cur = {r->d + r->i, 0};
        if (!r->tsv && r->i < r->n && r->d[r->i] == '"') {
            size_t start = r->buf_n, j = r->i + 1;
            for (;;) {
                if (j >= r->n)
                    return mt_seterr(MT_ERR_FORMAT, "%s:%d: quoted field not closed", r->path,
                                     *line);
                if (r->d[j] == '"') {
                    if (j + 1 < r->n && r->d[j + 1] == '"') {
                        r->buf[r->buf_n++] = '"';
                        j += 2;
                        continue;
                    }
                    j++;
                    break;
                }
                r->buf[r->buf_n++] = r->d[j++];
            }
            cur.p = r->buf + start;
            cur.n = r->buf_n - start;
            if (j < r->n && r->d[j] == '\r' && j + 1 < r->n && r->d[j + 1] == '\n') j++;
            if (j < r->n && r->d[j] != sep && r->d[j] != '\n')
                return mt_seterr(MT_ERR_FORMAT,
                                 "%s:%d: text after the closing quote of field %d (a '\"' inside "
                                 "a quoted field is written \"\")",
                                 r->path, line_at(r, j), *nf + 1);
            r->i = j;
        } else {
            size_t j = r->i;
            while (j < r->n && r->d[j] != sep && r->d[j] != '\n')
                j++;
            cur.n = j - r->i;
            if (cur.n && cur.p[cur.n - 1] == '\r') cur.n--;
            r->i = j;
        }
        if (*nf <= MAX_FIELDS) f[*nf] = cur;
        (*nf)++;
        if (r->i >= r->n) break;
        if (r->d[r->i] == '\n') {
            r->i++;
            break;
        }
        r->i++;             /* the separator */
        if (r->i >= r->n) { /* a trailing separator: one more, empty field */
            if (*nf <= MAX_FIELDS) f[*nf] = (field){r->d + r->i, 0};
            (*nf)++;
            break;
        }
    }
    return MT_OK;
}

enum { COL_SOURCE = 0, COL_TARGET, COL_NOTE, COL_CASE, COL_NONE };

static bool field_is(const field *f, const char *name) {
    return f->n == strlen(name) && strncasecmp(f->p, name, f->n) == 0;
}

static int header_col(const field *f, const char *src_lang, const char *tgt_lang) {
    static const char *const names[4][7] = {
        {"source", "src", "source term", "source_term", "term", NULL},
        {"target", "tgt", "target term", "target_term", "translation", NULL},
        {"note", "notes", "comment", "description", "definition", NULL},
        {"case", "case sensitive", "case-sensitive", "case_sensitive", "cs", "match case", NULL},
    };
    for (int c = 0; c < 4; c++)
        for (int k = 0; names[c][k]; k++)
            if (field_is(f, names[c][k])) return c;
    char lang[32];
    if (f->n > 0 && f->n < sizeof lang) {
        memcpy(lang, f->p, f->n);
        lang[f->n] = '\0';
        bool letter = (lang[0] | 32) >= 'a' && (lang[0] | 32) <= 'z';
        if (letter && src_lang && src_lang[0] && strlen(lang) <= 12 &&
            app_corpus_lang_match(src_lang, lang))
            return COL_SOURCE;
        if (letter && tgt_lang && tgt_lang[0] && strlen(lang) <= 12 &&
            app_corpus_lang_match(tgt_lang, lang))
            return COL_TARGET;
    }
    return COL_NONE;
}

static mt_status parse_case(const char *path, int line, const field *f, bool *cs) {
    static const char *const yes[] = {"yes", "y", "1", "true", "cs", "case-sensitive"};
    static const char *const no[] = {"no", "n", "0", "false", "ci", "case-insensitive"};
    if (f->n == 0) {
        *cs = false;
        return MT_OK;
    }
    for (size_t k = 0; k < sizeof yes / sizeof yes[0]; k++)
        if (field_is(f, yes[k])) {
            *cs = true;
            return MT_OK;
        }
    for (size_t k = 0; k < sizeof no / sizeof no[0]; k++)
        if (field_is(f, no[k])) {
            *cs = false;
            return MT_OK;
        }
    return mt_seterr(MT_ERR_FORMAT,
                     "%s:%d: case column holds '%.*s' (yes/no, 1/0, true/false, cs/ci)", path, line,
                     (int)(f->n < 40 ? f->n : 40), f->p);
}

static mt_status parse_delimited(const char *path, const char *d, size_t n, bool tsv,
                                 const char *src_lang, const char *tgt_lang, app_gloss_list *l) {
    rec_reader r = {.path = path, .d = d, .n = n, .tsv = tsv, .line_no = 1};
    field f[MAX_FIELDS + 1];
    int nf = 0, line = 0, width = 0;
    int col[MAX_FIELDS];
    bool got = false, first = true;
    mt_status rc = MT_OK;
    const char *what = tsv ? "TSV" : "CSV";
    while ((rc = next_record(&r, f, &nf, &line, &got)) == MT_OK && got) {
        if (first) {
            first = false;
            bool header = nf <= MAX_FIELDS;
            int seen[COL_NONE + 1] = {0};
            for (int k = 0; k < nf && header; k++) {
                field h = f[k];
                trim(&h);
                col[k] = header_col(&h, src_lang, tgt_lang);
                header = col[k] != COL_NONE;
                if (header && seen[col[k]]++)
                    return mt_seterr(MT_ERR_FORMAT, "%s:%d: header names column '%.*s' twice", path,
                                     line, (int)h.n, h.p);
            }
            if (header) {
                if (!seen[COL_SOURCE] || !seen[COL_TARGET])
                    rc = mt_seterr(MT_ERR_FORMAT,
                                   "%s:%d: header row lacks a source or a target column", path,
                                   line);
                width = nf;
                if (rc != MT_OK) break;
                continue;
            }
            if (nf < 2 || nf > 4) {
                rc = mt_seterr(MT_ERR_FORMAT,
                               "%s:%d: %d %s field%s; a glossary row has 2 to 4: source, "
                               "target, note, case",
                               path, line, nf, what, nf == 1 ? "" : "s");
                break;
            }
            width = nf;
            for (int k = 0; k < nf; k++)
                col[k] = k;
        }
        if (nf != width) {
            rc = mt_seterr(MT_ERR_FORMAT, "%s:%d: %d field%s, the first row has %d", path, line, nf,
                           nf == 1 ? "" : "s", width);
            break;
        }
        field fs[4] = {{"", 0}, {"", 0}, {"", 0}, {"", 0}};
        for (int k = 0; k < nf; k++) {
            field x = f[k];
            trim(&x);
            fs[col[k]] = x;
        }
        if (fs[COL_SOURCE].n == 0 || fs[COL_TARGET].n == 0) {
            rc = mt_seterr(MT_ERR_FORMAT, "%s:%d: empty %s term", path, line,
                           fs[COL_SOURCE].n == 0 ? "source" : "target");
            break;
        }
        bool cs = false;
        rc = parse_case(path, line, &fs[COL_CASE], &cs);
        if (rc == MT_OK)
            rc = list_push(l, fs[0].p, fs[0].n, fs[1].p, fs[1].n, fs[2].p, fs[2].n, cs);
        if (rc != MT_OK) break;
    }
    mt_free(r.buf);
    if (rc == MT_OK && l->n == 0)
        rc = mt_seterr(MT_ERR_FORMAT, "%s:%d: no glossary entries", path, line_at(&r, n));
    return rc;
}

/* ------------------------------------------------------------------ TBX */

static bool is_el(xmlNodePtr n, const char *a, const char *b, const char *c) {
    if (n == NULL || n->type != XML_ELEMENT_NODE) return false;
    return xmlStrEqual(n->name, BAD_CAST a) || (b && xmlStrEqual(n->name, BAD_CAST b)) ||
           (c && xmlStrEqual(n->name, BAD_CAST c));
}

/* The text of n (with its descendants'), white space runs as one space,
** trimmed; caller xmlFree()s.  NULL when out of memory. */
static char *node_text(xmlNodePtr n) {
    xmlChar *t = xmlNodeGetContent(n);
    if (t == NULL) return NULL;
    char *s = (char *)t;
    size_t w = 0;
    bool sp = false;
    for (size_t i = 0; s[i]; i++) {
        bool blank = s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r';
        if (blank) {
            sp = w > 0;
            continue;
        }
        if (sp) s[w++] = ' ';
        sp = false;
        s[w++] = s[i];
    }
    s[w] = '\0';
    return s;
}

typedef struct tbx_term {
    xmlNodePtr term; /* the <term> element */
    bool skip;       /* deprecated */
    bool cs;
    xmlNodePtr holder; /* tig / ntig / termSec: its notes */
} tbx_term;

typedef struct tbx_buf {
    char *s;
    size_t n, cap;
    bool failed;
} tbx_buf;

static void buf_add(tbx_buf *b, const char *t) {
    if (t == NULL || t[0] == '\0' || b->failed) return;
    size_t k = strlen(t);
    /* the same note twice is kept once (whole notes compared) */
    size_t tl = strlen(t);
    for (const char *p = b->s; p && *p;) {
        const char *e = strstr(p, "; ");
        size_t pl = e ? (size_t)(e - p) : strlen(p);
        if (pl == tl && memcmp(p, t, tl) == 0) return;
        p = e ? e + 2 : p + pl;
    }
    if (b->n + k + 3 > b->cap) {
        size_t cap = (b->n + k + 3) * 2;
        char *s = mt_try_realloc(b->s, cap);
        if (s == NULL) {
            b->failed = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    if (b->n) {
        memcpy(b->s + b->n, "; ", 2);
        b->n += 2;
    }
    memcpy(b->s + b->n, t, k);
    b->n += k;
    b->s[b->n] = '\0';
}

/* The notes (descrip, note) that are direct children of n. */
static bool add_notes(tbx_buf *b, xmlNodePtr n) {
    for (xmlNodePtr c = n ? n->children : NULL; c; c = c->next) {
        if (!is_el(c, "descrip", "note", "descripGrp")) continue;
        if (is_el(c, "descripGrp", NULL, NULL)) {
            if (!add_notes(b, c)) return false;
            continue;
        }
        char *t = node_text(c);
        if (t == NULL) return false;
        buf_add(b, t);
        xmlFree(t);
    }
    return !b->failed;
}

static xmlChar *lang_of(xmlNodePtr n) {
    xmlChar *l = xmlGetNsProp(n, BAD_CAST "lang", XML_XML_NAMESPACE);
    return l ? l : xmlGetProp(n, BAD_CAST "lang");
}

/* Reads a termNote of a term holder. */
static void term_notes(xmlNodePtr holder, tbx_term *t) {
    for (xmlNodePtr c = holder->children; c; c = c->next) {
        if (is_el(c, "termGrp", NULL, NULL)) {
            term_notes(c, t);
            continue;
        }
        if (!is_el(c, "termNote", NULL, NULL)) continue;
        xmlChar *type = xmlGetProp(c, BAD_CAST "type");
        xmlChar *v = xmlNodeGetContent(c);
        if (type && v) {
            const char *ty = (const char *)type, *val = (const char *)v;
            if (!strcmp(ty, "administrativeStatus") &&
                (strstr(val, "deprecated") || strstr(val, "superseded") ||
                 strstr(val, "notRecommended")))
                t->skip = true;
            if (!strcmp(ty, "x-caseSensitive") &&
                (!strcasecmp(val, "yes") || !strcasecmp(val, "true") || !strcmp(val, "1")))
                t->cs = true;
        }
        xmlFree(type);
        xmlFree(v);
    }
}

/* The terms of a langSet, at most cap. */
static int langset_terms(xmlNodePtr ls, tbx_term *out, int cap) {
    int n = 0;
    for (xmlNodePtr h = ls->children; h && n < cap; h = h->next) {
        if (!is_el(h, "tig", "ntig", "termSec")) continue;
        xmlNodePtr term = NULL;
        for (xmlNodePtr c = h->children; c && !term; c = c->next) {
            if (is_el(c, "term", NULL, NULL)) term = c;
            if (is_el(c, "termGrp", NULL, NULL))
                for (xmlNodePtr d = c->children; d && !term; d = d->next)
                    if (is_el(d, "term", NULL, NULL)) term = d;
        }
        if (term == NULL) continue;
        out[n] = (tbx_term){term, false, false, h};
        term_notes(h, &out[n]);
        n++;
    }
    return n;
}

#define TBX_MAX_TERMS 64

static mt_status tbx_entry(const char *path, xmlNodePtr te, const char *src_lang,
                           const char *tgt_lang, app_gloss_list *l) {
    xmlNodePtr sls = NULL, tls = NULL;
    for (xmlNodePtr c = te->children; c; c = c->next) {
        if (!is_el(c, "langSet", "langSec", NULL)) continue;
        xmlChar *lang = lang_of(c);
        if (lang == NULL)
            return mt_seterr(MT_ERR_FORMAT, "%s:%ld: <%s> without xml:lang", path, xmlGetLineNo(c),
                             (const char *)c->name);
        if (!sls && app_corpus_lang_match(src_lang, (const char *)lang))
            sls = c;
        else if (!tls && app_corpus_lang_match(tgt_lang, (const char *)lang))
            tls = c;
        xmlFree(lang);
    }
    if (!sls || !tls) {
        l->skipped++;
        return MT_OK;
    }
    tbx_term st[TBX_MAX_TERMS], tt[TBX_MAX_TERMS];
    int ns = langset_terms(sls, st, TBX_MAX_TERMS), nt = langset_terms(tls, tt, TBX_MAX_TERMS);
    tbx_buf base = {0};
    mt_status rc = MT_OK;
    if (!add_notes(&base, te) || !add_notes(&base, sls)) rc = oom();
    for (int i = 0; i < ns && rc == MT_OK; i++) {
        char *s = node_text(st[i].term);
        if (s == NULL) {
            rc = oom();
            break;
        }
        if (s[0] == '\0')
            rc = mt_seterr(MT_ERR_FORMAT, "%s:%ld: empty <term>", path, xmlGetLineNo(st[i].term));
        tbx_buf note = {0};
        if (rc == MT_OK && !st[i].skip) {
            buf_add(&note, base.s);
            if (!add_notes(&note, st[i].holder)) rc = oom();
        }
        for (int j = 0; j < nt && rc == MT_OK && !st[i].skip; j++) {
            char *t = node_text(tt[j].term);
            if (t == NULL) {
                rc = oom();
                break;
            }
            if (t[0] == '\0')
                rc = mt_seterr(MT_ERR_FORMAT, "%s:%ld: empty <term>", path,
                               xmlGetLineNo(tt[j].term));
            else if (tt[j].skip)
                l->skipped++;
            else
                rc = list_push(l, s, strlen(s), t, strlen(t), note.s ? note.s : "",
                               note.s ? note.n : 0, st[i].cs);
            xmlFree(t);
        }
        if (st[i].skip) l->skipped++;
        mt_free(note.s);
        xmlFree(s);
    }
    mt_free(base.s);
    return rc;
}

static mt_status parse_tbx(const char *path, const char *d, size_t n, const char *src_lang,
                           const char *tgt_lang, app_gloss_list *l) {
    xmlDocPtr doc = NULL;
    mt_status xrc = app_xml_parse(path, d, n, "UTF-8", "malformed XML: ", &doc);
    if (xrc != MT_OK) return xrc;
    mt_status rc = MT_OK;
    xmlNodePtr root = xmlDocGetRootElement(doc);
    if (!is_el(root, "martif", "tbx", NULL)) {
        rc = mt_seterr(MT_ERR_FORMAT, "%s:%ld: root element is <%s>, not TBX's <martif> or <tbx>",
                       path, root ? xmlGetLineNo(root) : 1L, root ? (const char *)root->name : "");
        goto done;
    }
    int64_t entries = 0;
    for (xmlNodePtr text = root->children; text && rc == MT_OK; text = text->next) {
        if (!is_el(text, "text", NULL, NULL)) continue;
        for (xmlNodePtr body = text->children; body && rc == MT_OK; body = body->next) {
            if (!is_el(body, "body", NULL, NULL)) continue;
            for (xmlNodePtr te = body->children; te && rc == MT_OK; te = te->next) {
                if (!is_el(te, "termEntry", "conceptEntry", NULL)) continue;
                entries++;
                rc = tbx_entry(path, te, src_lang, tgt_lang, l);
            }
        }
    }
    if (rc == MT_OK && l->n == 0)
        rc = mt_seterr(MT_ERR_FORMAT,
                       "%s: no term pair for %s -> %s (%lld entries; other languages? give "
                       "--src-lang and --trg-lang)",
                       path, src_lang, tgt_lang, (long long)entries);
done:
    xmlFreeDoc(doc);
    return rc;
}

/* ---------------------------------------------------------------- reading */

static app_gloss_format detect(const char *path, const char *d, size_t n) {
    if (has_suffix(path, ".tbx") || has_suffix(path, ".xml")) return APP_GLOSS_TBX;
    if (has_suffix(path, ".csv")) return APP_GLOSS_CSV;
    if (has_suffix(path, ".tsv") || has_suffix(path, ".tab") || has_suffix(path, ".txt"))
        return APP_GLOSS_TSV;
    size_t i = 0;
    while (i < n && strchr(" \t\r\n", d[i]))
        i++;
    if (i < n && d[i] == '<') return APP_GLOSS_TBX;
    for (; i < n && d[i] != '\n'; i++)
        if (d[i] == '\t') return APP_GLOSS_TSV;
    return APP_GLOSS_CSV;
}

mt_status app_glossary_parse(const char *path, const char *data, size_t len, app_gloss_format fmt,
                             const char *src_lang, const char *tgt_lang, app_gloss_list *out,
                             app_gloss_format *used_fmt) {
    memset(out, 0, sizeof *out);
    if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) data += 3, len -= 3;
    const char *nul = memchr(data, '\0', len);
    if (nul) return mt_seterr(MT_ERR_FORMAT, "%s:%d: NUL byte", path, line_of(data, nul - data));
    size_t bad = 0;
    if (!mt_utf8_valid(data, len, &bad))
        return mt_seterr(MT_ERR_FORMAT, "%s:%d: invalid UTF-8 (byte %zu)", path, line_of(data, bad),
                         bad + 1);
    if (fmt == APP_GLOSS_AUTO) fmt = detect(path, data, len);
    if (used_fmt) *used_fmt = fmt;
    mt_status rc = mt_arena_init(1 << 16, &out->text);
    if (rc != MT_OK) return rc;
    src_lang = src_lang && src_lang[0] ? src_lang : "en";
    tgt_lang = tgt_lang && tgt_lang[0] ? tgt_lang : "de";
    switch (fmt) {
    case APP_GLOSS_TBX: rc = parse_tbx(path, data, len, src_lang, tgt_lang, out); break;
    case APP_GLOSS_CSV:
        rc = parse_delimited(path, data, len, false, src_lang, tgt_lang, out);
        break;
    default: rc = parse_delimited(path, data, len, true, src_lang, tgt_lang, out); break;
    }
    if (rc != MT_OK) app_gloss_list_free(out);
    return rc;
}

mt_status app_glossary_read(const char *path, app_gloss_format fmt, const char *src_lang,
                            const char *tgt_lang, app_gloss_list *out, app_gloss_format *used_fmt) {
    memset(out, 0, sizeof *out);
    char *raw = NULL;
    size_t len = 0;
    mt_status rc = app_doc_read_file(path, &raw, &len);
    if (rc != MT_OK) return rc;
    rc = app_glossary_parse(path, raw, len, fmt, src_lang, tgt_lang, out, used_fmt);
    mt_free(raw);
    return rc;
}

/* ---------------------------------------------------------------- writing */

static void put_flat(FILE *f, const char *s) {
    for (; *s; s++)
        fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, f);
}

mt_status app_glossary_write_tsv(FILE *f, const app_gloss_entry *e, int32_t n) {
    fputs("source\ttarget\tnote\tcase\n", f);
    for (int32_t i = 0; i < n; i++) {
        put_flat(f, e[i].source);
        fputc('\t', f);
        put_flat(f, e[i].target);
        fputc('\t', f);
        put_flat(f, e[i].note ? e[i].note : "");
        fputs(e[i].case_sensitive ? "\tyes\n" : "\tno\n", f);
    }
    return ferror(f) ? mt_seterr(MT_ERR_IO, "glossary: write error") : MT_OK;
}

static void put_xml(FILE *f, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\r': fputs("&#13;", f); break;
        default: fputc(*s, f);
        }
    }
}

mt_status app_glossary_write_tbx(FILE *f, const app_gloss_entry *e, int32_t n, const char *src_lang,
                                 const char *tgt_lang) {
    for (int32_t i = 0; i < n; i++) {
        const char *fields[3] = {e[i].source, e[i].target, e[i].note ? e[i].note : ""};
        for (int k = 0; k < 3; k++)
            for (const char *p = fields[k]; *p; p++)
                if (((unsigned char)*p < 0x20 && !strchr("\t\n\r", *p)) || *p == 0x7f)
                    return mt_seterr(MT_ERR_INVALID,
                                     "glossary entry %d: control character U+%04X, which XML "
                                     "cannot hold",
                                     (int)i + 1, (unsigned char)*p);
    }
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    fputs("<martif type=\"TBX-Basic\" xml:lang=\"", f);
    put_xml(f, src_lang);
    fputs("\">\n  <martifHeader>\n    <fileDesc><sourceDesc><p>mtpe glossary "
          "export</p></sourceDesc></fileDesc>\n    <encodingDesc><p "
          "type=\"XCSURI\">TBXBasicXCSV02.xcs</p></encodingDesc>\n  </martifHeader>\n  <text>\n    "
          "<body>\n",
          f);
    for (int32_t i = 0; i < n; i++) {
        fprintf(f, "      <termEntry id=\"e%d\">\n        <langSet xml:lang=\"", (int)i + 1);
        put_xml(f, src_lang);
        fputs("\">\n          <tig>\n            <term>", f);
        put_xml(f, e[i].source);
        fputs("</term>\n", f);
        if (e[i].case_sensitive)
            fputs("            <termNote type=\"x-caseSensitive\">yes</termNote>\n", f);
        if (e[i].note && e[i].note[0]) {
            fputs("            <note>", f);
            put_xml(f, e[i].note);
            fputs("</note>\n", f);
        }
        fputs("          </tig>\n        </langSet>\n        <langSet xml:lang=\"", f);
        put_xml(f, tgt_lang);
        fputs("\">\n          <tig>\n            <term>", f);
        put_xml(f, e[i].target);
        fputs("</term>\n          </tig>\n        </langSet>\n      </termEntry>\n", f);
    }
    fputs("    </body>\n  </text>\n</martif>\n", f);
    return ferror(f) ? mt_seterr(MT_ERR_IO, "glossary: write error") : MT_OK;
}
