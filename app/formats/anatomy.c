/*
** anatomy.c: segment anatomy for MT (see anatomy.h).
*/
#include "anatomy.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ buffers */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 64;
        while (c < b->n + n + 1)
            c *= 2;
        char *q = mt_try_realloc(b->p, c);
        if (q == NULL) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = c;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_puts(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

/* the contents (never NULL unless out of memory); b is reset */
static char *sb_take(sbuf *b) {
    if (!b->oom && b->p == NULL) sb_put(b, "", 0);
    char *s = b->oom ? NULL : b->p;
    if (b->oom) mt_free(b->p);
    memset(b, 0, sizeof *b);
    return s;
}

/* ------------------------------------------------------- placeholders */

static bool is_alpha(unsigned char c) { return (c | 32) >= 'a' && (c | 32) <= 'z'; }
static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static bool is_alnum(unsigned char c) { return is_alpha(c) || is_digit(c); }
static bool is_blank(unsigned char c) { return c == ' ' || c == '\t'; }
/* a letter: ASCII letters and every non-ASCII lead byte (scripts, accents) */
static bool is_letter(unsigned char c) { return is_alpha(c) || c >= 0xC0; }

/* a printf width or precision: digits, or '*' with an optional n$ */
static const char *skip_count(const char *p) {
    if (*p != '*') {
        while (is_digit((unsigned char)*p))
            p++;
        return p;
    }
    const char *q = ++p;
    while (is_digit((unsigned char)*q))
        q++;
    return q > p && *q == '$' ? q + 1 : p;
}

/* printf: % [n$] [flags] [width|*[n$]] [.prec|.*[n$]] [length] conv.  The
** blank flag is left out on purpose: "100% sure" is text, not "% s". */
static size_t match_printf(const char *s, size_t at) {
    const char *p = s + at + 1;
    if (*p == '%') return 2;
    const char *q = p;
    while (is_digit((unsigned char)*q))
        q++;
    if (q > p && *q == '$') p = q + 1;
    while (*p && strchr("-+#0'I", *p))
        p++;
    p = skip_count(p);                    /* width */
    if (*p == '.') p = skip_count(p + 1); /* precision */
    static const char *const lengths[] = {"hh", "ll", "h", "l", "L", "q", "j", "z", "Z", "t"};
    for (size_t k = 0; k < sizeof lengths / sizeof *lengths; k++) {
        size_t n = strlen(lengths[k]);
        if (strncmp(p, lengths[k], n) == 0) {
            p += n;
            break;
        }
    }
    if (*p == '<') { /* ISO C 99 <inttypes.h> macros: %<PRId64> */
        const char *e = strchr(p, '>');
        if (e && e - p > 4 && strncmp(p + 1, "PRI", 3) == 0) return (size_t)(e + 1 - (s + at));
        return 0;
    }
    if (*p && strchr("diouxXeEfFgGaAcspnCSm", *p)) return (size_t)(p + 1 - (s + at));
    return 0;
}

static size_t match_python(const char *s, size_t at) {
    const char *p = s + at + 1;
    if (*p != '(') return 0;
    const char *e = strchr(p, ')');
    if (e == NULL || e == p + 1 || e - p > 64) return 0;
    for (const char *q = p + 1; q < e; q++)
        if (!is_alnum((unsigned char)*q) && *q != '_' && *q != '-' && *q != '.') return 0;
    p = e + 1;
    while (*p && strchr("-+ #0", *p))
        p++;
    while (is_digit((unsigned char)*p))
        p++;
    if (*p == '.') {
        p++;
        while (is_digit((unsigned char)*p))
            p++;
    }
    if (*p && strchr("diouxXeEfFgGcrsa", *p)) return (size_t)(p + 1 - (s + at));
    return 0;
}

static size_t match_brace(const char *s, size_t at) {
    const char *p = s + at + 1;
    if (*p == '{') return 0; /* "{{" is a literal brace */
    const char *e = p;
    while (*e && *e != '}' && *e != '{' && *e != ' ' && e - p <= 64)
        e++;
    if (*e != '}') return 0;
    /* {} {0} {name} {0:.2f} {name!r}: starts with a digit, letter, '_' or is empty */
    if (e > p && !is_alnum((unsigned char)*p) && *p != '_' && *p != ':') return 0;
    return (size_t)(e + 1 - (s + at));
}

static size_t match_tag(const char *s, size_t at) {
    const char *p = s + at + 1;
    if (*p == '/') p++;
    if (!is_alpha((unsigned char)*p)) return 0;
    while (is_alnum((unsigned char)*p) || *p == ':' || *p == '-' || *p == '_')
        p++;
    if (*p != '>' && *p != ' ' && *p != '/') return 0;
    const char *e = p;
    while (*e && *e != '>' && *e != '<' && *e != '\n')
        e++;
    if (*e != '>') return 0;
    return (size_t)(e + 1 - (s + at));
}

static size_t match_entity(const char *s, size_t at) {
    const char *p = s + at + 1;
    if (*p == '#') {
        p++;
        if (*p == 'x' || *p == 'X') p++;
        const char *d = p;
        while (is_alnum((unsigned char)*p))
            p++;
        if (p == d) return 0;
    } else {
        const char *d = p;
        while (is_alnum((unsigned char)*p))
            p++;
        if (p == d || !is_alpha((unsigned char)*d)) return 0;
    }
    return *p == ';' ? (size_t)(p + 1 - (s + at)) : 0;
}

/* --name, --name=VALUE, --name[=VALUE], -x: after a blank, the start or an
** opening quote or bracket, and followed by a boundary */
static size_t match_option(const char *s, size_t at) {
    if (at > 0 && !strchr(" \t\n([{'\"`,/|", s[at - 1])) return 0;
    const char *p = s + at + 1;
    if (*p == '-') {
        p++;
        if (!is_alnum((unsigned char)*p)) return 0;
        while (is_alnum((unsigned char)*p) || *p == '-' || *p == '_')
            p++;
        if (p[-1] == '-') return 0;
        const char *v = p;
        bool bracket = *v == '[';
        if (bracket) v++;
        if (*v == '=') {
            v++;
            const char *w = v;
            while ((*v >= 'A' && *v <= 'Z') || *v == '_' || is_digit((unsigned char)*v))
                v++;
            if (v > w && (!bracket || *v == ']')) p = bracket ? v + 1 : v;
        }
    } else {
        if (!is_alnum((unsigned char)*p)) return 0;
        p++;
    }
    if (*p && !strchr(" \t\n,.;:)]}'\"`|/=", *p)) return 0;
    return (size_t)(p - (s + at));
}

static size_t match_var(const char *s, size_t at) {
    const char *p = s + at + 1;
    if (*p == '{') {
        const char *e = strchr(p, '}');
        if (e == NULL || e == p + 1 || e - p > 64) return 0;
        for (const char *q = p + 1; q < e; q++)
            if (!is_alnum((unsigned char)*q) && *q != '_') return 0;
        return (size_t)(e + 1 - (s + at));
    }
    if (is_digit((unsigned char)*p)) return 2;
    if (!((*p >= 'A' && *p <= 'Z') || *p == '_')) return 0; /* shell variables: upper case */
    while ((*p >= 'A' && *p <= 'Z') || *p == '_' || is_digit((unsigned char)*p))
        p++;
    if (is_alpha((unsigned char)*p)) return 0; /* "$Id" words, prices "$Ab" */
    return (size_t)(p - (s + at));
}

static size_t match_url(const char *s, size_t at) {
    static const char *const schemes[] = {"http://", "https://", "ftp://", "file://", "mailto:"};
    for (size_t k = 0; k < sizeof schemes / sizeof *schemes; k++) {
        size_t n = strlen(schemes[k]);
        if (strncmp(s + at, schemes[k], n) == 0) {
            const char *p = s + at + n;
            while (*p && !strchr(" \t\n<>\"'`)]", *p))
                p++;
            while (p > s + at + n && strchr(".,;:!?", p[-1])) /* sentence punctuation */
                p--;
            return p > s + at + n ? (size_t)(p - (s + at)) : 0;
        }
    }
    return 0;
}

#define LBK "\xe2\x9f\xa6" /* U+27E6, XLIFF placeholders (app/formats/doc.h) */
#define RBK "\xe2\x9f\xa7" /* U+27E7 */

/* ⟦N⟧ ⟦/N⟧ ⟦N/⟧ (not a doubled, literal ⟦⟦) */
static size_t match_xliff(const char *s, size_t at) {
    const char *p = s + at;
    if (strncmp(p, LBK, 3) != 0 || strncmp(p + 3, LBK, 3) == 0) return 0;
    p += 3;
    bool closing = *p == '/';
    if (closing) p++;
    const char *d = p;
    while (is_digit((unsigned char)*p))
        p++;
    if (p == d) return 0;
    if (*p == '/' && !closing) p++;
    return strncmp(p, RBK, 3) == 0 ? (size_t)(p + 3 - (s + at)) : 0;
}

size_t app_ph_match(const char *s, size_t at, app_ph_kind *kind) {
    size_t n = 0;
    app_ph_kind k = 0;
    switch (s[at]) {
    case '\xe2': n = match_xliff(s, at), k = APP_PH_XLIFF; break;
    case '%':
        if ((n = match_python(s, at)))
            k = APP_PH_PYTHON;
        else if ((n = match_printf(s, at)))
            k = APP_PH_PRINTF;
        else if (s[at + 1] >= '1' && s[at + 1] <= '9') /* KDE, Qt: %1..%99 */
            n = is_digit((unsigned char)s[at + 2]) ? 3 : 2, k = APP_PH_KDE;
        break;
    case '{': n = match_brace(s, at), k = APP_PH_BRACE; break;
    case '<': n = match_tag(s, at), k = APP_PH_TAG; break;
    case '&': n = match_entity(s, at), k = APP_PH_ENTITY; break;
    case '-': n = match_option(s, at), k = APP_PH_OPTION; break;
    case '$': n = match_var(s, at), k = APP_PH_VAR; break;
    case 'h':
    case 'f':
    case 'm': n = match_url(s, at), k = APP_PH_URL; break;
    default: break;
    }
    if (n && kind) *kind = k;
    return n;
}

mt_status app_ph_scan(const char *s, app_ph **out, int *n) {
    *out = NULL;
    *n = 0;
    int cap = 0;
    for (size_t i = 0; s[i];) {
        app_ph_kind k;
        /* URLs only at a word start; the other kinds check their own context */
        size_t len =
            (s[i] == 'h' || s[i] == 'f' || s[i] == 'm') && i > 0 && !strchr(" \t\n(<[\"'", s[i - 1])
                ? 0
                : app_ph_match(s, i, &k);
        if (len == 0) {
            i++;
            continue;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            app_ph *q = mt_try_realloc(*out, sizeof *q * (size_t)cap);
            if (q == NULL) {
                mt_free(*out);
                *out = NULL;
                *n = 0;
                return mt_seterr(MT_ERR_NOMEM, "out of memory (placeholders)");
            }
            *out = q;
        }
        (*out)[(*n)++] = (app_ph){k, i, len};
        i += len;
    }
    return MT_OK;
}

/* ------------------------------------------------------------- parsing */

typedef struct piece {
    char *text;    /* MT input: without XLIFF placeholders, ⟦⟦ undoubled */
    char *tagged;  /* the source text with them; NULL when it has none */
    char *indent;  /* paragraph: indentation of its continuation lines */
    int width;     /* paragraph: wrap the translation to this width; 0: no wrap */
    int first_col; /* column where the piece starts (its first line's indent) */
} piece;

struct app_anatomy {
    piece *p;
    int n;
    char **glue; /* n + 1 */
    char accel;  /* '_' or '&' when the source has one accelerator, else 0 */
    char accel_letter[8];
};

void app_anat_free(app_anatomy *a) {
    if (a == NULL) return;
    for (int i = 0; i < a->n; i++) {
        mt_free(a->p[i].text);
        mt_free(a->p[i].tagged);
        mt_free(a->p[i].indent);
    }
    for (int i = 0; a->glue && i <= a->n; i++)
        mt_free(a->glue[i]);
    mt_free(a->glue);
    mt_free(a->p);
    mt_free(a);
}

int app_anat_pieces(const app_anatomy *a) { return a->n; }
const char *app_anat_piece(const app_anatomy *a, int i) { return a->p[i].text; }
const char *app_anat_glue(const app_anatomy *a, int i) { return a->glue[i]; }

static int utf8_len(const char *s, size_t n) {
    int w = 0;
    for (size_t i = 0; i < n; i++)
        w += ((unsigned char)s[i] & 0xC0) != 0x80;
    return w;
}

/* true when s[0..n) has a letter outside placeholders */
static bool has_words(const char *s, size_t n) {
    char *t = mt_try_malloc(n + 1);
    if (t == NULL) return true;
    memcpy(t, s, n);
    t[n] = '\0';
    bool any = false;
    for (size_t i = 0; i < n && !any;) {
        size_t len = app_ph_match(t, i, NULL);
        if (len) {
            i += len;
            continue;
        }
        any = is_letter((unsigned char)t[i]);
        i++;
    }
    mt_free(t);
    return any;
}

/* The one accelerator of s: index of its marker, or -1. */
static long find_accel(const char *s) {
    long at = -1;
    int n = 0, under = 0;
    for (size_t i = 0; s[i]; i++) {
        if (s[i] == '_') under++;
        if ((s[i] != '_' && s[i] != '&') || !is_letter((unsigned char)s[i + 1])) continue;
        if (i > 0 && !strchr(" \t\n(\"'", s[i - 1])) continue;
        if (s[i] == '&' && match_entity(s, i)) continue;
        at = (long)i;
        n++;
    }
    /* identifiers (FOO_BAR) and several markers: leave the text alone */
    if (n != 1 || under > 1 || (s[at] == '&' && strchr(s, '_'))) return -1;
    return at;
}

typedef struct line {
    const char *s;           /* the line, without its '\n' */
    size_t len, lead, trail; /* leading/trailing blanks */
} line;

/* the length of the run of blanks at s that separates columns (two or more
** blanks, or a tab), else 0 */
static size_t gap_at(const char *s, size_t n) {
    size_t k = 0;
    bool tab = false;
    while (k < n && is_blank((unsigned char)s[k])) {
        tab = tab || s[k] == '\t';
        k++;
    }
    return k >= 2 || tab ? k : 0;
}

static bool has_gap(const line *l) {
    for (size_t i = l->lead; i < l->len - l->trail; i++)
        if (gap_at(l->s + i, l->len - l->trail - i)) return true;
    return false;
}

/* A line that continues the paragraph of the line before: same
** indentation, neither has columns, the previous one does not end a
** sentence or introduce something, this one does not start a list item. */
static bool continues(const line *prev, const line *l) {
    size_t pn = prev->len - prev->trail, n = l->len - l->trail;
    if (pn <= prev->lead || n <= l->lead || prev->lead != l->lead) return false;
    if (memcmp(prev->s, l->s, l->lead) != 0) return false;
    if (has_gap(prev) || has_gap(l)) return false;
    char last = prev->s[pn - 1];
    if (strchr(".:!?;", last)) return false;
    char first = l->s[l->lead];
    if (strchr("-*+#|", first) || is_digit((unsigned char)first)) return false;
    return has_words(prev->s + prev->lead, pn - prev->lead) &&
           has_words(l->s + l->lead, n - l->lead);
}

/* s without XLIFF placeholders, doubled brackets undoubled (mt_free) */
static char *untag(const char *s) {
    sbuf b;
    memset(&b, 0, sizeof b);
    for (size_t i = 0; s[i];) {
        size_t n = match_xliff(s, i);
        if (n) {
            /* an empty tag (a line break, an image) between two words
            ** separates them: "%1⟦2/⟧Could" is "%1 Could" for the MT */
            bool empty = !strncmp(s + i + n - 4, "/" RBK, 4);
            if (empty && b.n > 0 && b.p[b.n - 1] != ' ' && s[i + n] && s[i + n] != ' ')
                sb_put(&b, " ", 1);
            i += n;
            continue;
        }
        if (!strncmp(s + i, LBK LBK, 6) || !strncmp(s + i, RBK RBK, 6)) {
            sb_put(&b, s + i, 3);
            i += 6;
            continue;
        }
        sb_put(&b, s + i, 1);
        i++;
    }
    /* blanks doubled where a placeholder stood between them */
    char *t = sb_take(&b);
    if (t) {
        size_t w = 0;
        for (size_t r = 0; t[r]; r++)
            if (!(t[r] == ' ' && w > 0 && t[w - 1] == ' ')) t[w++] = t[r];
        t[w] = '\0';
    }
    return t;
}

/* literal brackets of a translation doubled again (XLIFF segment text) */
static char *redouble(const char *s) {
    sbuf b;
    memset(&b, 0, sizeof b);
    for (size_t i = 0; s[i]; i++) {
        if (!strncmp(s + i, LBK, 3) || !strncmp(s + i, RBK, 3)) {
            sb_put(&b, s + i, 3);
            sb_put(&b, s + i, 3);
            i += 2;
            continue;
        }
        sb_put(&b, s + i, 1);
    }
    return sb_take(&b);
}

typedef struct builder {
    app_anatomy *a;
    int cap;
    sbuf glue;
    mt_status rc;
} builder;

static void add_piece(builder *b, const char *s, size_t n, const char *indent, size_t n_indent,
                      int width, int col) {
    if (b->rc != MT_OK) return;
    app_anatomy *a = b->a;
    if (a->n == b->cap) {
        int c = b->cap ? 2 * b->cap : 4;
        piece *q = mt_try_realloc(a->p, sizeof *q * (size_t)c);
        char **g = q ? mt_try_realloc(a->glue, sizeof *g * (size_t)(c + 1)) : NULL;
        if (q) a->p = q;
        if (g) a->glue = g;
        if (q == NULL || g == NULL) {
            b->rc = mt_seterr(MT_ERR_NOMEM, "out of memory (segment anatomy)");
            return;
        }
        b->cap = c;
    }
    piece *p = &a->p[a->n];
    memset(p, 0, sizeof *p);
    p->text = mt_try_malloc(n + 1);
    p->indent = mt_try_malloc(n_indent + 1);
    a->glue[a->n] = sb_take(&b->glue);
    a->n++;
    if (p->text == NULL || p->indent == NULL || a->glue[a->n - 1] == NULL) {
        b->rc = mt_seterr(MT_ERR_NOMEM, "out of memory (segment anatomy)");
        return;
    }
    memcpy(p->text, s, n);
    p->text[n] = '\0';
    if (strstr(p->text, LBK) || strstr(p->text, RBK)) { /* XLIFF: the MT sees plain text */
        p->tagged = p->text;
        p->text = untag(p->tagged);
        if (p->text == NULL) {
            p->text = p->tagged;
            p->tagged = NULL;
            b->rc = mt_seterr(MT_ERR_NOMEM, "out of memory (segment anatomy)");
            return;
        }
    }
    memcpy(p->indent, indent, n_indent);
    p->indent[n_indent] = '\0';
    p->width = width;
    p->first_col = col;
}

/* the cells of one line: verbatim gaps and cells without words */
static void add_cells(builder *b, const line *l) {
    size_t end = l->len - l->trail, i = l->lead, start = l->lead;
    while (i <= end) {
        size_t g = i < end ? gap_at(l->s + i, end - i) : 0;
        if (i == end || g) {
            if (i > start && has_words(l->s + start, i - start))
                add_piece(b, l->s + start, i - start, "", 0, 0, utf8_len(l->s, start));
            else
                sb_put(&b->glue, l->s + start, i - start);
            if (i == end) break;
            sb_put(&b->glue, l->s + i, g);
            i += g;
            start = i;
        } else {
            app_ph_kind k;
            size_t ph = app_ph_match(l->s, i, &k);
            i += ph ? ph : 1;
            if (i > end) i = end;
        }
    }
}

mt_status app_anat_parse(const char *source, app_anatomy **out) {
    *out = NULL;
    builder b;
    memset(&b, 0, sizeof b);
    b.a = mt_try_calloc(1, sizeof *b.a);
    char *src = mt_try_strdup(source);
    if (b.a == NULL || src == NULL) {
        mt_free(b.a);
        mt_free(src);
        return mt_seterr(MT_ERR_NOMEM, "out of memory (segment anatomy)");
    }
    long acc = find_accel(src);
    if (acc >= 0) {
        b.a->accel = src[acc];
        size_t k = 1;
        while (k < sizeof b.a->accel_letter - 1 &&
               ((unsigned char)src[acc + 1 + (long)k] & 0xC0) == 0x80)
            k++;
        memcpy(b.a->accel_letter, src + acc + 1, k);
        memmove(src + acc, src + acc + 1, strlen(src + acc + 1) + 1);
    }
    /* lines */
    int n_lines = 1;
    for (const char *p = src; *p; p++)
        n_lines += *p == '\n';
    line *ls = mt_try_calloc((size_t)n_lines, sizeof *ls);
    if (ls == NULL) b.rc = mt_seterr(MT_ERR_NOMEM, "out of memory (segment anatomy)");
    for (int i = 0, at = 0; ls && i < n_lines; i++) {
        const char *s = src + at;
        const char *nl = strchr(s, '\n');
        size_t len = nl ? (size_t)(nl - s) : strlen(s);
        line *l = &ls[i];
        l->s = s;
        l->len = len;
        while (l->lead < len && is_blank((unsigned char)s[l->lead]))
            l->lead++;
        while (l->trail < len - l->lead && is_blank((unsigned char)s[len - 1 - l->trail]))
            l->trail++;
        at += (int)len + 1;
    }
    for (int i = 0; ls && i < n_lines && b.rc == MT_OK;) {
        const line *l = &ls[i];
        if (i > 0) sb_put(&b.glue, "\n", 1);
        sb_put(&b.glue, l->s, l->lead);
        int j = i + 1;
        while (j < n_lines && continues(&ls[j - 1], &ls[j]))
            j++;
        if (j == i + 1) {
            add_cells(&b, l);
        } else { /* a paragraph: lines i..j-1 joined by one space */
            sbuf t;
            memset(&t, 0, sizeof t);
            int width = 0;
            for (int k = i; k < j; k++) {
                const line *m = &ls[k];
                if (k > i) sb_put(&t, " ", 1);
                sb_put(&t, m->s + m->lead, m->len - m->trail - m->lead);
                int w = utf8_len(m->s, m->len - m->trail);
                if (w > width) width = w;
            }
            if (t.oom)
                b.rc = mt_seterr(MT_ERR_NOMEM, "out of memory (segment anatomy)");
            else
                add_piece(&b, t.p, t.n, l->s, l->lead, width, utf8_len(l->s, l->lead));
            mt_free(t.p);
        }
        const line *last = &ls[j - 1];
        sb_put(&b.glue, last->s + last->len - last->trail, last->trail);
        i = j;
    }
    if (b.rc == MT_OK && b.a->glue == NULL) {
        b.a->glue = mt_try_calloc(1, sizeof *b.a->glue);
        if (b.a->glue == NULL) b.rc = mt_seterr(MT_ERR_NOMEM, "out of memory (segment anatomy)");
    }
    if (b.rc == MT_OK) {
        b.a->glue[b.a->n] = sb_take(&b.glue);
        if (b.a->glue[b.a->n] == NULL) b.rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    }
    mt_free(b.glue.p);
    mt_free(ls);
    mt_free(src);
    if (b.rc != MT_OK) {
        /* glue[n] may be unset: free what is there */
        if (b.a->glue) {
            for (int i = 0; i < b.a->n; i++)
                mt_free(b.a->glue[i]);
            mt_free(b.a->glue);
            b.a->glue = NULL;
        }
        for (int i = 0; i < b.a->n; i++) {
            mt_free(b.a->p[i].text);
            mt_free(b.a->p[i].tagged);
            mt_free(b.a->p[i].indent);
        }
        mt_free(b.a->p);
        mt_free(b.a);
        return b.rc;
    }
    *out = b.a;
    return MT_OK;
}

/* ------------------------------------------------------ checking output */

static bool ph_equal(const char *a, const app_ph *x, const char *b, const app_ph *y) {
    return x->len == y->len && memcmp(a + x->at, b + y->at, x->len) == 0;
}

/* placeholders whose order must stay: printf directives that take
** arguments in order (no n$, not %%), XLIFF tags */
static bool sequential(const char *s, const app_ph *x) {
    if (x->kind == APP_PH_XLIFF) return true; /* tags keep their order: nesting */
    if (x->kind != APP_PH_PRINTF || s[x->at + 1] == '%') return false;
    return strchr(s + x->at, '$') == NULL || strchr(s + x->at, '$') >= s + x->at + x->len;
}

/* '%' characters that start no placeholder */
static int stray_percents(const char *s, const app_ph *ph, int n) {
    int k = 0, c = 0;
    for (size_t i = 0; s[i]; i++) {
        while (k < n && ph[k].at + ph[k].len <= i)
            k++;
        if (s[i] == '%' && !(k < n && ph[k].at <= i)) c++;
    }
    return c;
}

bool app_anat_accepts(const app_anatomy *a, int i, const char *mt) {
    if (mt == NULL) return false;
    const char *src = a->p[i].text;
    if (!has_words(mt, strlen(mt))) return false;
    app_ph *x = NULL, *y = NULL;
    int nx = 0, ny = 0;
    if (app_ph_scan(src, &x, &nx) != MT_OK || app_ph_scan(mt, &y, &ny) != MT_OK) {
        mt_free(x);
        return false;
    }
    bool ok = nx == ny && stray_percents(mt, y, ny) <= stray_percents(src, x, nx);
    /* the same multiset */
    char *used = ok && ny ? mt_try_calloc((size_t)ny, 1) : NULL;
    if (ok && ny && used == NULL) ok = false;
    for (int k = 0; ok && k < nx; k++) {
        int m = 0;
        while (m < ny && (used[m] || !ph_equal(src, &x[k], mt, &y[m])))
            m++;
        if (m == ny)
            ok = false;
        else
            used[m] = 1;
    }
    /* sequential printf directives in the same order */
    for (int k = 0, m = 0; ok; k++, m++) {
        while (k < nx && !sequential(src, &x[k]))
            k++;
        while (m < ny && !sequential(mt, &y[m]))
            m++;
        if (k == nx || m == ny) {
            ok = k == nx && m == ny;
            break;
        }
        ok = ph_equal(src, &x[k], mt, &y[m]);
    }
    mt_free(used);
    mt_free(x);
    mt_free(y);
    return ok;
}

/* ---------------------------------------------------------- assembling */

/* Inserts ph (n bytes) into *s at pos, with a blank on a side where the
** source has one and the text has none. */
static void insert_at(char **s, size_t pos, const char *ph, size_t n, bool blank_before,
                      bool blank_after) {
    const char *t = *s;
    size_t len = strlen(t);
    sbuf u;
    memset(&u, 0, sizeof u);
    sb_put(&u, t, pos);
    if (blank_before && pos > 0 && t[pos - 1] != ' ' && t[pos - 1] != '\n') sb_put(&u, " ", 1);
    sb_put(&u, ph, n);
    if (blank_after && pos < len && t[pos] != ' ') sb_put(&u, " ", 1);
    sb_puts(&u, t + pos);
    char *r = sb_take(&u);
    mt_free(*s);
    *s = r;
}

/* Repairs a translation of piece i whose placeholders differ: drops what
** the source lacks (and stray '%' with the directive-like characters after
** it), then puts each missing placeholder, in source order, where the
** translation had a dropped one, else near its relative position in the
** source (before the final punctuation when only punctuation follows it
** there). */
static char *repair(const char *src, const char *mt) {
    app_ph *x = NULL, *y = NULL;
    int nx = 0, ny = 0;
    if (app_ph_scan(src, &x, &nx) != MT_OK || app_ph_scan(mt, &y, &ny) != MT_OK) {
        mt_free(x);
        return NULL;
    }
    int src_stray = stray_percents(src, x, nx);
    bool *have = mt_try_calloc((size_t)nx + 1, sizeof *have);
    bool *keep = mt_try_calloc((size_t)ny + 1, sizeof *keep);
    size_t *slot = mt_try_calloc((size_t)ny + strlen(mt) + 1, sizeof *slot);
    int n_slots = 0;
    sbuf t;
    memset(&t, 0, sizeof t);
    if (have == NULL || keep == NULL || slot == NULL) t.oom = true;
    /* keep a placeholder the source has too; sequential printf directives
    ** all go and come back in the source's order */
    bool seq_src = false;
    for (int k = 0; k < nx; k++)
        seq_src = seq_src || sequential(src, &x[k]);
    for (int m = 0; !t.oom && m < ny; m++) {
        if (seq_src && sequential(mt, &y[m])) continue;
        for (int k = 0; k < nx; k++)
            if (!have[k] && !(seq_src && sequential(src, &x[k])) &&
                ph_equal(src, &x[k], mt, &y[m])) {
                have[k] = keep[m] = true;
                break;
            }
    }
    int m = 0;
    for (size_t j = 0; mt[j] && !t.oom;) {
        if (m < ny && y[m].at == j) {
            if (keep[m])
                sb_put(&t, mt + j, y[m].len);
            else
                slot[n_slots++] = t.n;
            j += y[m].len;
            m++;
            continue;
        }
        if (mt[j] == '%' && src_stray == 0) {
            slot[n_slots++] = t.n;
            j++;
            while (mt[j] && strchr("0123456789.$#+-'*lhzjtL", mt[j]))
                j++;
            continue;
        }
        sb_put(&t, mt + j, 1);
        j++;
    }
    char *s = sb_take(&t);
    /* missing placeholders, in source order: slots first (back to front,
    ** so earlier offsets stay valid), then by position */
    int n_missing = 0;
    for (int k = 0; s && k < nx; k++)
        n_missing += !have[k];
    /* slots are in text order: used only when there is one for every
    ** missing placeholder, so the source's order is kept */
    int use = n_missing <= n_slots ? n_missing : 0;
    for (int k = nx - 1, left = n_missing; s && k >= 0; k--) {
        if (have[k]) continue;
        left--;
        if (left < use) {
            insert_at(&s, slot[left], src + x[k].at, x[k].len, false, false);
            have[k] = true;
        }
    }
    size_t src_len = strlen(src), floor = 0; /* insertions keep the source's order */
    for (int k = 0; s && k < nx; k++) {
        if (have[k]) continue;
        size_t len = strlen(s), after = x[k].at + x[k].len, pos;
        bool tail = true, glued = false;
        for (size_t r = after; r < src_len && tail; r++)
            tail = !is_letter((unsigned char)src[r]) && !is_digit((unsigned char)src[r]);
        if (tail) {
            pos = len;
            if (after < src_len)
                while (pos > 0 && strchr(".!?:;", s[pos - 1]))
                    pos--;
        } else if (x[k].at == 0) {
            /* "%s: text": the punctuation stuck to it comes along */
            size_t e = after;
            while (e < src_len && !is_blank((unsigned char)src[e]) &&
                   !is_letter((unsigned char)src[e]) && !is_digit((unsigned char)src[e]))
                e++;
            glued = e > after && strncmp(s, src + after, e - after) != 0;
            if (glued) {
                insert_at(&s, 0, src + after, e - after, false, e < src_len);
                if (s == NULL) break;
            }
            pos = 0;
        } else {
            size_t want = (size_t)((double)x[k].at / (double)src_len * (double)len);
            size_t lo = want, hi = want;
            while (lo > 0 && s[lo] != ' ')
                lo--;
            while (hi < len && s[hi] != ' ')
                hi++;
            pos = want - lo <= hi - want ? lo : hi;
        }
        /* an opening or empty tag goes after the blank, a closing one before */
        if (x[k].kind == APP_PH_XLIFF && pos < len && s[pos] == ' ' && src[x[k].at + 3] != '/')
            pos++;
        if (pos < floor) pos = floor;
        bool before = x[k].at > 0 && src[x[k].at - 1] == ' ';
        bool after_blank = after < src_len && src[after] == ' ';
        bool blank_before = before || (pos > 0 && !tail);
        if (x[k].kind == APP_PH_XLIFF) /* tags sit where the source has them: no blanks added */
            blank_before = before && pos > 0 && s[pos - 1] != ' ';
        size_t old_len = strlen(s);
        insert_at(&s, pos, src + x[k].at, x[k].len, blank_before,
                  x[k].kind != APP_PH_XLIFF && !glued && (after_blank || pos == 0));
        if (s) floor = pos + (strlen(s) - old_len);
    }
    /* blanks doubled where something was dropped */
    if (s) {
        size_t w = 0;
        for (size_t r = 0; s[r]; r++)
            if (!(s[r] == ' ' && (w == 0 || s[w - 1] == ' '))) s[w++] = s[r];
        while (w > 0 && s[w - 1] == ' ')
            w--;
        s[w] = '\0';
    }
    mt_free(have);
    mt_free(keep);
    mt_free(slot);
    mt_free(x);
    mt_free(y);
    return s;
}

/* greedy word wrap: first line starts at column col, lines up to width,
** continuation lines start with indent */
static void wrap(sbuf *o, const char *s, int col, int width, const char *indent) {
    int at = col, ind = utf8_len(indent, strlen(indent));
    bool first = true;
    for (const char *p = s; *p;) {
        while (*p == ' ')
            p++;
        if (!*p) break;
        const char *e = p;
        while (*e && *e != ' ')
            e++;
        int w = utf8_len(p, (size_t)(e - p));
        if (!first && at + 1 + w > width) {
            sb_put(o, "\n", 1);
            sb_puts(o, indent);
            at = ind;
        } else if (!first) {
            sb_put(o, " ", 1);
            at++;
        }
        sb_put(o, p, (size_t)(e - p));
        at += w;
        first = false;
        p = e;
    }
}

static void put_accel(const app_anatomy *a, char **s) {
    if (!a->accel || *s == NULL) return;
    char *t = *s;
    size_t n = strlen(a->accel_letter), at = SIZE_MAX;
    /* a word starting with the same letter (either case, ASCII), else the first letter */
    for (size_t i = 0; t[i] && at == SIZE_MAX; i++) {
        if (i > 0 && !strchr(" \t\n(\"'", t[i - 1])) continue;
        if (strncmp(t + i, a->accel_letter, n) == 0 ||
            (n == 1 && is_alpha((unsigned char)t[i]) && (t[i] | 32) == (a->accel_letter[0] | 32)))
            at = i;
    }
    for (size_t i = 0; t[i] && at == SIZE_MAX; i++) {
        size_t ph = app_ph_match(t, i, NULL);
        if (ph) {
            i += ph - 1;
            continue;
        }
        if (is_letter((unsigned char)t[i])) at = i;
    }
    if (at == SIZE_MAX) return;
    sbuf u;
    memset(&u, 0, sizeof u);
    sb_put(&u, t, at);
    sb_put(&u, &a->accel, 1);
    sb_puts(&u, t + at);
    char *r = sb_take(&u);
    if (r) {
        mt_free(t);
        *s = r;
    }
}

mt_status app_anat_assemble(const app_anatomy *a, const char *const *mt, char **out) {
    *out = NULL;
    sbuf o;
    memset(&o, 0, sizeof o);
    for (int i = 0; i < a->n; i++) {
        sb_puts(&o, a->glue[i]);
        const char *t = mt ? mt[i] : NULL;
        if (t == NULL || t[0] == '\0') continue;
        char *fixed = NULL, *tagged = NULL;
        if (!app_anat_accepts(a, i, t)) {
            fixed = repair(a->p[i].text, t);
            if (fixed == NULL) o.oom = true;
            t = fixed;
        }
        if (t && a->p[i].tagged) { /* XLIFF: the tags come back, in order */
            char *d = redouble(t);
            tagged = d ? repair(a->p[i].tagged, d) : NULL;
            mt_free(d);
            if (tagged == NULL) o.oom = true;
            t = tagged;
        }
        if (t && a->p[i].width > 0)
            wrap(&o, t, a->p[i].first_col, a->p[i].width, a->p[i].indent);
        else if (t)
            sb_puts(&o, t);
        mt_free(fixed);
        mt_free(tagged);
    }
    sb_puts(&o, a->glue[a->n]);
    char *s = sb_take(&o);
    if (s == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory (segment anatomy)");
    put_accel(a, &s);
    *out = s;
    return MT_OK;
}
