/*
** qa.c: quality checks of translations (see qa.h).
**
** The C and Python format parsers follow the rules msgfmt applies
** (gettext's documentation of c-format and python-format, checked against
** msgfmt itself by tests/test_qa.c): a directive is '%' [N '$'] flags
** [width] ['.' precision] [size] conversion; '*' width or precision takes
** an int argument; numbered and unnumbered directives cannot be mixed; a
** numbered string may not skip an argument; an argument used twice must
** have one type.  Types compare conversion class and size (%d, %ld and %s
** are three types; %d and %i one).
*/
#include "qa.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "anatomy.h"
#include "glossary.h"

#define MAX_ARGS 64

typedef struct fmt_args {
    int n;                   /* highest argument number used            */
    char type[MAX_ARGS][12]; /* type of argument i+1; "" when unused */
    bool named;              /* python: %(name)s directives             */
    int n_names;
    char names[MAX_ARGS][40];
    char name_type[MAX_ARGS][4];
} fmt_args;

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* records argument k (1-based) with type t; false when it clashes */
static bool use_arg(fmt_args *a, int k, const char *t, const char **err) {
    if (k < 1 || k > MAX_ARGS) {
        *err = "an argument number is out of range";
        return false;
    }
    if (a->type[k - 1][0] && strcmp(a->type[k - 1], t) != 0) {
        *err = "the string refers to an argument in incompatible ways";
        return false;
    }
    snprintf(a->type[k - 1], sizeof a->type[k - 1], "%s", t);
    if (k > a->n) a->n = k;
    return true;
}

/* C format string; NULL when valid, else why not */
static const char *parse_c(const char *s, fmt_args *a) {
    memset(a, 0, sizeof *a);
    int next = 0, numbered = -1; /* -1: not known yet, 0: unnumbered, 1: numbered */
    const char *err = NULL;
    for (const char *p = s; *p; p++) {
        if (*p != '%') continue;
        p++;
        if (*p == '%') continue;
        if (*p == '\0') return "the string ends in the middle of a directive";
        int num = 0;
        const char *q = p;
        while (is_digit(*q))
            q++;
        if (q > p && *q == '$') {
            num = atoi(p);
            if (num == 0) return "argument number 0 is not allowed";
            p = q + 1;
        }
        if (numbered >= 0 && numbered != (num > 0))
            return "numbered and unnumbered directives are mixed";
        numbered = num > 0;
        while (*p && strchr("-+ #0'I", *p))
            p++;
        for (int part = 0; part < 2; part++) { /* width, then precision */
            if (part == 1) {
                if (*p != '.') break;
                p++;
            }
            if (*p == '*') {
                p++;
                int wn = 0;
                q = p;
                while (is_digit(*q))
                    q++;
                if (q > p && *q == '$') {
                    wn = atoi(p);
                    p = q + 1;
                }
                if (numbered && wn == 0) return "numbered and unnumbered directives are mixed";
                if (!numbered && wn) return "numbered and unnumbered directives are mixed";
                if (!use_arg(a, numbered ? wn : ++next, "i", &err)) return err;
            } else {
                while (is_digit(*p))
                    p++;
            }
        }
        char size[10] = "";
        static const char *const sizes[] = {"hh", "ll", "h", "l", "L", "q", "j", "z", "Z", "t"};
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
            if (strncmp(p, sizes[k], strlen(sizes[k])) == 0) {
                snprintf(size, sizeof size, "%s", sizes[k]);
                p += strlen(sizes[k]);
                break;
            }
        if (!strcmp(size, "q")) snprintf(size, sizeof size, "ll");
        if (!strcmp(size, "Z")) snprintf(size, sizeof size, "z");
        char cls;
        char type[12];
        if (*p == '<') { /* <inttypes.h> macro: %<PRId64> */
            const char *e = strchr(p, '>');
            if (e == NULL || e - p < 5 || strncmp(p + 1, "PRI", 3) != 0)
                return "an invalid <inttypes.h> macro";
            char c = e[-1];
            cls = strchr("di", c) ? 'i' : strchr("ouxX", c) ? 'u' : 0;
            if (!cls) return "an invalid <inttypes.h> macro";
            snprintf(type, sizeof type, "%c%.*s", cls, (int)(e - p - 5), p + 4);
            p = e;
        } else {
            if (*p == '\0') return "the string ends in the middle of a directive";
            switch (*p) {
            case 'd':
            case 'i': cls = 'i'; break;
            case 'o':
            case 'u':
            case 'x':
            case 'X': cls = 'u'; break;
            case 'e':
            case 'E':
            case 'f':
            case 'F':
            case 'g':
            case 'G':
            case 'a':
            case 'A':
                cls = 'f';
                if (strcmp(size, "L") != 0) size[0] = '\0';
                break;
            case 'c': cls = 'c'; break;
            case 's': cls = 's'; break;
            case 'C': cls = 'c', snprintf(size, sizeof size, "l"); break;
            case 'S': cls = 's', snprintf(size, sizeof size, "l"); break;
            case 'p': cls = 'p'; break;
            case 'n': cls = 'n'; break;
            case 'm': cls = 0; break; /* glibc: strerror(errno), no argument */
            case '%': cls = 0; break; /* "%-2%": a literal '%', as msgfmt accepts */
            default: return "a directive has an invalid conversion character";
            }
            if (cls == 0) continue;
            snprintf(type, sizeof type, "%c%s", cls, size);
        }
        if (!use_arg(a, numbered ? num : ++next, type, &err)) return err;
    }
    for (int k = 0; k < a->n; k++)
        if (a->type[k][0] == '\0') return "the string skips an argument number";
    return NULL;
}

const char *app_qa_c_format_error(const char *s) {
    fmt_args a;
    return parse_c(s, &a);
}

/* Python %-format; NULL when valid */
static const char *parse_python(const char *s, fmt_args *a) {
    memset(a, 0, sizeof *a);
    int unnamed = 0;
    for (const char *p = s; *p; p++) {
        if (*p != '%') continue;
        p++;
        if (*p == '%') continue;
        char name[40] = "";
        if (*p == '(') {
            const char *e = strchr(p, ')');
            if (e == NULL) return "a directive's name is not closed";
            snprintf(name, sizeof name, "%.*s", (int)(e - p - 1), p + 1);
            p = e + 1;
        }
        while (*p && strchr("-+ #0", *p))
            p++;
        for (int part = 0; part < 2; part++) { /* width, then precision */
            if (part == 1) {
                if (*p != '.') break;
                p++;
            }
            if (*p == '*') {
                if (name[0]) return "a named directive takes '*'";
                p++, unnamed++;
            } else {
                while (is_digit(*p))
                    p++;
            }
        }
        while (*p && strchr("hlL", *p))
            p++;
        if (*p == '\0') return "the string ends in the middle of a directive";
        char cls = strchr("diouxX", *p)   ? 'i'
                   : strchr("eEfFgG", *p) ? 'f'
                   : *p == 'c'            ? 'c'
                   : strchr("sra", *p)    ? 's'
                                          : 0;
        if (!cls) return "a directive has an invalid conversion character";
        if (name[0]) {
            if (unnamed) return "named and unnamed directives are mixed";
            a->named = true;
            int k = 0;
            while (k < a->n_names && strcmp(a->names[k], name) != 0)
                k++;
            if (k == MAX_ARGS) return "too many directives";
            if (k == a->n_names) {
                snprintf(a->names[k], sizeof a->names[k], "%s", name);
                a->name_type[k][0] = cls;
                a->n_names++;
            }
        } else {
            if (a->named) return "named and unnamed directives are mixed";
            if (++unnamed > MAX_ARGS) return "too many directives";
            a->type[unnamed - 1][0] = cls;
            a->n = unnamed;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------ issues */

typedef struct issues {
    app_qa_issue *v;
    int n;
} issues;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void
add(issues *is, app_qa_level level, const char *fmt, ...) {
    if (is->n == APP_QA_MAX) return;
    app_qa_issue *x = &is->v[is->n++];
    x->level = level;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->msg, sizeof x->msg, fmt, ap);
    va_end(ap);
}

static bool has_flag(const char *flags, const char *f) {
    if (flags == NULL) return false;
    size_t n = strlen(f);
    for (const char *p = flags; (p = strstr(p, f)) != NULL; p += n) {
        bool start = p == flags || p[-1] == ' ' || p[-1] == ',';
        bool end = p[n] == '\0' || p[n] == ',' || p[n] == ' ';
        bool negated = p - flags >= 3 && strncmp(p - 3, "no-", 3) == 0;
        if (start && end && !negated) return true;
    }
    return false;
}

static void check_c(issues *is, const char *src, const char *text, bool strict) {
    fmt_args a, b;
    if (parse_c(src, &a) != NULL) return; /* msgfmt: the msgid decides */
    const char *why = parse_c(text, &b);
    if (why) {
        add(is, APP_QA_ERROR, "not a valid C format string, unlike the source: %s", why);
        return;
    }
    int n = a.n > b.n ? a.n : b.n;
    for (int k = 0; k < n; k++) {
        const char *x = k < a.n ? a.type[k] : "", *y = k < b.n ? b.type[k] : "";
        if (!x[0] && y[0]) {
            add(is, APP_QA_ERROR, "argument %d of the translation is not in the source", k + 1);
            return;
        }
        if (x[0] && !y[0] && strict) {
            add(is, APP_QA_ERROR, "the translation lacks the format directive for argument %d",
                k + 1);
            return;
        }
        if (x[0] && y[0] && strcmp(x, y) != 0) {
            add(is, APP_QA_ERROR, "argument %d has another type than in the source (%%%s vs %%%s)",
                k + 1, y, x);
            return;
        }
    }
}

static void check_python(issues *is, const char *src, const char *text, bool strict) {
    fmt_args a, b;
    if (parse_python(src, &a) != NULL) return;
    const char *why = parse_python(text, &b);
    if (why) {
        add(is, APP_QA_ERROR, "not a valid Python format string, unlike the source: %s", why);
        return;
    }
    if (a.named != b.named && (a.n || a.n_names) && (b.n || b.n_names)) {
        add(is, APP_QA_ERROR, "the source has %s directives, the translation %s",
            a.named ? "named" : "unnamed", b.named ? "named" : "unnamed");
        return;
    }
    for (int k = 0; k < b.n_names; k++) {
        int m = 0;
        while (m < a.n_names && strcmp(a.names[m], b.names[k]) != 0)
            m++;
        if (m == a.n_names) {
            add(is, APP_QA_ERROR, "%%(%s) of the translation is not in the source", b.names[k]);
            return;
        }
        if (a.name_type[m][0] != b.name_type[k][0] && a.name_type[m][0] != 's' &&
            b.name_type[k][0] != 's') {
            add(is, APP_QA_ERROR, "%%(%s) has another type than in the source", b.names[k]);
            return;
        }
    }
    for (int m = 0; strict && m < a.n_names; m++) {
        int k = 0;
        while (k < b.n_names && strcmp(a.names[m], b.names[k]) != 0)
            k++;
        if (k == b.n_names) {
            add(is, APP_QA_ERROR, "the translation lacks %%(%s)", a.names[m]);
            return;
        }
    }
    if (!a.named && !b.named && (b.n > a.n || (strict && b.n != a.n))) {
        add(is, APP_QA_ERROR, "the source has %d format directives, the translation %d", a.n, b.n);
        return;
    }
}

/* KDE's %1..%99: the set of numbers; false when s has a malformed one */
static void kde_numbers(const char *s, bool used[100]) {
    memset(used, 0, 100 * sizeof *used);
    for (const char *p = s; (p = strchr(p, '%')) != NULL; p++)
        if (p[1] >= '1' && p[1] <= '9') {
            int n = p[1] - '0';
            if (is_digit(p[2])) n = n * 10 + (p[2] - '0');
            used[n] = true;
        }
}

/* kde-format: the translation uses only the source's arguments, all of
** them (a plural form's msgstr[0] may leave one out) */
static void check_kde(issues *is, const char *src, const char *text, bool strict) {
    bool a[100], b[100];
    kde_numbers(src, a);
    kde_numbers(text, b);
    int missing = 0, first_missing = 0;
    for (int k = 1; k < 100; k++) {
        if (b[k] && !a[k]) {
            add(is, APP_QA_ERROR, "%%%d of the translation is not in the source", k);
            return;
        }
        if (a[k] && !b[k] && missing++ == 0) first_missing = k;
    }
    if (missing > (strict ? 0 : 1))
        add(is, APP_QA_ERROR, "the translation lacks %%%d", first_missing);
}

/* placeholders of src missing from text, and the other way round */
static void check_placeholders(issues *is, const char *src, const char *text, bool formats) {
    app_ph *x = NULL, *y = NULL;
    int nx = 0, ny = 0;
    if (app_ph_scan(src, &x, &nx) != MT_OK || app_ph_scan(text, &y, &ny) != MT_OK) {
        mt_free(x);
        return;
    }
    char used[256] = {0};
    for (int k = 0; k < nx; k++) {
        if (formats && (x[k].kind == APP_PH_PRINTF || x[k].kind == APP_PH_PYTHON)) continue;
        int m = 0;
        while (m < ny && m < 256 &&
               (used[m] || y[m].len != x[k].len || memcmp(src + x[k].at, text + y[m].at, x[k].len)))
            m++;
        if (m < ny && m < 256) {
            used[m] = 1;
            continue;
        }
        add(is, APP_QA_WARNING, "'%.*s' of the source is missing", (int)x[k].len, src + x[k].at);
    }
    for (int m = 0; m < ny && m < 256; m++) {
        if (used[m] || (formats && (y[m].kind == APP_PH_PRINTF || y[m].kind == APP_PH_PYTHON)))
            continue;
        bool in_src = false;
        for (int k = 0; k < nx && !in_src; k++)
            in_src = y[m].len == x[k].len && !memcmp(src + x[k].at, text + y[m].at, x[k].len);
        if (!in_src)
            add(is, APP_QA_WARNING, "'%.*s' is not in the source", (int)y[m].len, text + y[m].at);
    }
    mt_free(x);
    mt_free(y);
}

static size_t lead_blanks(const char *s) {
    size_t n = 0;
    while (s[n] == ' ' || s[n] == '\t')
        n++;
    return n;
}

static size_t trail_blanks(const char *s) {
    size_t n = strlen(s), k = 0;
    while (k < n && (s[n - 1 - k] == ' ' || s[n - 1 - k] == '\t'))
        k++;
    return k;
}

/* numbers (runs of digits outside placeholders) of src missing from text */
static void check_numbers(issues *is, const char *src, const char *text) {
    for (size_t i = 0; src[i];) {
        size_t ph = app_ph_match(src, i, NULL);
        if (ph) {
            i += ph;
            continue;
        }
        if (!is_digit(src[i]) || (i > 0 && (is_digit(src[i - 1]) || src[i - 1] == '$'))) {
            i++;
            continue;
        }
        size_t e = i;
        while (is_digit(src[e]))
            e++;
        char num[32];
        snprintf(num, sizeof num, "%.*s", (int)(e - i < 31 ? e - i : 31), src + i);
        if (strstr(text, num) == NULL)
            add(is, APP_QA_WARNING, "the number %s of the source is missing", num);
        i = e;
    }
}

static void check_doubled(issues *is, const char *text) {
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        const char *a = p;
        while (*p && *p != ' ' && *p != '\n')
            p++;
        size_t la = (size_t)(p - a);
        if (*p != ' ' || la < 2) {
            if (*p) p++;
            continue;
        }
        const char *b = p + 1;
        const char *e = b;
        while (*e && *e != ' ' && *e != '\n')
            e++;
        bool letters = true;
        for (size_t k = 0; k < la && letters; k++)
            letters = ((a[k] | 32) >= 'a' && (a[k] | 32) <= 'z') || (unsigned char)a[k] >= 0x80;
        if (letters && (size_t)(e - b) == la && strncasecmp(a, b, la) == 0) {
            add(is, APP_QA_WARNING, "'%.*s' is written twice in a row", (int)la, a);
            return;
        }
    }
}

/* accelerator markers: '_' or '&' before a letter; at_start: only at the
** start of a word (the source: "file_name" is no accelerator) */
static int count_accel(const char *s, bool at_start) {
    int n = 0;
    for (size_t i = 0; s[i]; i++) {
        if ((s[i] != '_' && s[i] != '&') || s[i + 1] == '\0') continue;
        if (at_start && i > 0 && s[i - 1] != ' ' && s[i - 1] != '(') continue;
        if (s[i] == '&' && app_ph_match(s, i, NULL)) continue;
        unsigned char c = (unsigned char)s[i + 1];
        if (((c | 32) >= 'a' && (c | 32) <= 'z') || c >= 0xC0) n++;
    }
    return n;
}

/* glossary terms of src whose target (none of the targets given for the
** same span) is in text; each source term once */
static void check_terms(issues *is, const app_glossary *g, const char *src, const char *text) {
    app_gloss_match *m = NULL;
    int32_t n = 0;
    if (app_glossary_match(g, src, &m, &n) != MT_OK) return; /* out of memory: no check */
    for (int32_t i = 0; i < n;) {
        int32_t j = i;
        bool found = false;
        for (; j < n && m[j].start == m[i].start && m[j].len == m[i].len; j++) {
            const app_gloss_entry *e = app_glossary_entry(g, m[j].entry);
            found = found || app_glossary_target_present(text, e->target, e->case_sensitive);
        }
        const app_gloss_entry *e = app_glossary_entry(g, m[i].entry);
        bool seen = false; /* the same term earlier in the source */
        for (int32_t k = 0; k < i && !seen; k++)
            seen = strcmp(app_glossary_entry(g, m[k].entry)->source, e->source) == 0;
        if (!found && !seen)
            add(is, APP_QA_WARNING, "glossary: '%.60s' -> '%.60s'%s is not in the translation",
                e->source, e->target, j - i > 1 ? " (or another of its targets)" : "");
        i = j;
    }
    mt_free(m);
}

int app_qa_check(const app_qa_input *in, int form, const char *text, app_qa_issue *out) {
    issues is = {out, 0};
    if (text == NULL || text[0] == '\0') return 0;
    const char *src = form > 0 && in->source_plural ? in->source_plural : in->source;
    bool plural = in->source_plural != NULL;
    if (in->po) {
        /* msgfmt compares every msgstr with the msgid */
        const char *id = in->source;
        size_t il = strlen(id), tl = strlen(text);
        if ((id[0] == '\n') != (text[0] == '\n'))
            add(&is, APP_QA_ERROR, "the source %s with a line break and the translation %s",
                id[0] == '\n' ? "begins" : "does not begin", text[0] == '\n' ? "does" : "does not");
        if ((il && id[il - 1] == '\n') != (tl && text[tl - 1] == '\n'))
            add(&is, APP_QA_ERROR, "the source %s with a line break and the translation %s",
                il && id[il - 1] == '\n' ? "ends" : "does not end",
                tl && text[tl - 1] == '\n' ? "does" : "does not");
        bool strict = !(plural && form == 0);
        if (has_flag(in->flags, "c-format")) check_c(&is, src, text, strict);
        if (has_flag(in->flags, "python-format")) check_python(&is, src, text, strict);
        if (has_flag(in->flags, "kde-format")) check_kde(&is, src, text, strict);
    }
    bool formats =
        in->po && (has_flag(in->flags, "c-format") || has_flag(in->flags, "python-format"));
    check_placeholders(&is, src, text, formats);
    if (!(plural && form == 0)) check_numbers(&is, src, text);
    size_t sl = lead_blanks(src), tl = lead_blanks(text);
    if (sl != tl)
        add(&is, APP_QA_WARNING, "the source begins with %zu blanks, the translation with %zu", sl,
            tl);
    sl = trail_blanks(src), tl = trail_blanks(text);
    if (sl != tl)
        add(&is, APP_QA_WARNING, "the source ends with %zu blanks, the translation with %zu", sl,
            tl);
    check_doubled(&is, text);
    int ca = count_accel(src, true), cb = count_accel(text, false);
    if (ca == 1 && cb != 1)
        add(&is, APP_QA_WARNING, "the source has an accelerator ('%c'), the translation %d",
            strchr(src, '_') ? '_' : '&', cb);
    if (in->glossary) check_terms(&is, in->glossary, src, text);
    return is.n;
}
