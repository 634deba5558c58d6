/*
** doc_po.c: gettext PO files (and POT templates) as documents.
**
** File format (GNU gettext manual, "The Format of PO Files"), line by line;
** leading blanks are allowed, lines end in LF or CRLF, the last line may lack
** its newline, blank lines are ignored:
**
**   LINE START        MEANING                                   HERE
**   "# "  or "#"      translator comment                        kept as is
**   "#."              extracted comment (for the translator)    segment.note
**   "#:"              references file:line ...                  segment.refs
**   "#,"              flags: fuzzy, c-format, no-c-format, ...  state, .flags
**   "#|"              previous msgctxt/msgid(_plural) (fuzzy)   kept as is
**   "#~"              obsolete entry (any keyword after it)     kept as is
**   msgctxt "..."     context                                   segment.context
**   msgid "..."       source text                               segment.source
**   msgid_plural "."  plural source                             .source_plural
**   msgstr "..."      translation                               targets[0]
**   msgstr[N] "..."   plural form N (0, 1, ... in order)        targets[N]
**   "..."             continuation: appended to the string above
**
** An entry is: comments, [msgctxt], msgid, [msgid_plural], then msgstr or
** msgstr[0..n-1].  Strings are C-like: \n \t \r \a \b \f \v \\ \" \' \?,
** octal \ooo (1-3 digits) and hex \xHH; a NUL byte is an error.  The entry
** with msgid "" and no msgctxt is the header: "Key: value\n" lines, of which
** we read Content-Type (charset: UTF-8 only; ASCII and the template
** placeholder CHARSET are taken as UTF-8), Plural-Forms (nplurals) and
** Language.  Files must be valid UTF-8 (errors give file:line).
**
** Saving.  The original bytes are copied, except for entries that changed:
**   - each modified form's msgstr lines are regenerated; unmodified forms of
**     the same entry keep their original lines;
**   - the "#," line is rewritten (or inserted before "#|"/msgctxt/msgid, or
**     deleted when it becomes empty) only when the fuzzy flag must change.
** With stamp_header, the header's PO-Revision-Date, Last-Translator and
** X-Generator are set as well (write_header; app/formats/doc.h says how).
** "#|" previous-msgid lines stay (gettext's msgattrib keeps them too unless
** asked with --clear-previous).  Regenerated strings get msgcat's layout
** (gettext's write-po.c behaviour, reimplemented): `msgstr "..."` on one
** line when the text has no newline before its end and needs no break at
** 79 columns; otherwise `msgstr ""` followed by one quoted line per
** "\n"-terminated piece, each wrapped to 79 columns at the line-break
** opportunities of Unicode UAX #14 (after spaces, after hyphens, between
** ideographs, never inside an escape or before a final \n; a piece longer
** than a line stays whole).  East Asian wide characters count two columns.
** The UAX #14 classes are those of ASCII, Latin punctuation and CJK;
** letters of other scripts count as alphabetic, so text in Thai, say, may
** wrap differently from msgcat (still a valid PO file).  Tests compare the
** result with msgcat.  Control characters other than \a\b\t\n\v\f\r
** are written as octal escapes.
*/
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "doc.h"
#include "vocab.h"

#define PO_MAX_FORMS 16
#define PO_WIDTH 79

typedef struct po_range {
    size_t beg, end; /* [beg, end): whole lines, including their line ends */
} po_range;

typedef struct po_entry {
    int64_t line;
    size_t beg;      /* first byte of the entry (its first comment line)   */
    size_t flags_at; /* where a new "#," line is inserted                  */
    size_t str_end;  /* end of the last msgstr line: extra forms go here    */
    int flag_first;  /* index of the first "#," line range in po->flags     */
    int n_flag_lines;
    int form_first; /* index of the first form in po->forms                */
    int n_forms;    /* forms present in the file                           */
    bool plural, fuzzy;
    uint32_t dirty; /* forms set since opening                             */
} po_entry;

typedef struct po_doc {
    po_entry *entries; /* one per segment                                  */
    int64_t n_entries, cap_entries;
    po_range *flags;
    int64_t n_flags, cap_flags;
    po_range *forms;
    const char **form_text; /* parallel to forms: decoded msgstr strings     */
    int64_t n_forms, cap_forms, cap_form_text;
    int nplurals;
    const char *plural_expr;            /* Plural-Forms' plural=..., NULL without one      */
    bool have_plural_forms;             /* the header has Plural-Forms                     */
    const char *examples[PO_MAX_FORMS]; /* app_doc_plural_examples, or NULL    */
    bool have_header;
    po_range header_str; /* the header's msgstr lines                        */
    const char *eol;     /* line end of the first line, for lines we insert  */
} po_doc;

/* Parser state: one entry in progress plus the pending comments. */
typedef struct po_parser {
    app_doc *d;
    po_doc *po;
    const char *buf;
    size_t len;
    int64_t lineno;
    int64_t bad_utf8_line; /* first line with invalid UTF-8, 0 if none     */
    size_t bad_utf8_col;
    /* pending comments */
    bool have_comments;
    size_t ent_beg;
    int64_t ent_line;
    size_t prev_at; /* first "#|" line, SIZE_MAX if none                */
    int flag_first, n_flag_lines;
    bool fuzzy;
    app_doc_buf note, refs, flagtxt;
    /* keywords */
    bool in_entry, has_ctxt, has_id, has_plural, has_str;
    int64_t id_line; /* the line of the entry's msgid                       */
    size_t kw_at; /* first keyword line: a new "#," line goes before it  */
    app_doc_buf ctxt, id, plural;
    app_doc_buf strs[PO_MAX_FORMS];
    po_range str_rng[PO_MAX_FORMS];
    int n_strs;
    app_doc_buf *cur;  /* where a continuation line appends               */
    po_range *cur_rng; /* range a continuation line extends (msgstr only)  */
    /* header */
    bool have_header;
    int64_t header_line;
    char charset[64];
} po_parser;

static mt_status grow(void **p, int64_t *cap, int64_t need, size_t elem) {
    if (need <= *cap) return MT_OK;
    int64_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = mt_try_realloc(*p, (size_t)n * elem);
    if (q == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory reading a PO file");
    *p = q;
    *cap = n;
    return MT_OK;
}

static mt_status perr(po_parser *ps, int64_t line, const char *what) {
    return mt_seterr(MT_ERR_FORMAT, "%s:%lld: %s", ps->d->path, (long long)line, what);
}

static mt_status nomem(po_parser *ps) {
    return mt_seterr(MT_ERR_NOMEM, "out of memory reading '%s'", ps->d->path);
}

/* Decodes the quoted string at *pp (which points at '"') into out; *pp ends
** after the closing quote. */
static mt_status parse_string(po_parser *ps, const char **pp, const char *end, app_doc_buf *out) {
    const char *p = *pp + 1;
    for (;;) {
        if (p >= end) return perr(ps, ps->lineno, "unterminated string (missing \")");
        char c = *p++;
        if (c == '"') break;
        if (c != '\\') {
            app_doc_buf_putc(out, c);
            continue;
        }
        if (p >= end) return perr(ps, ps->lineno, "backslash at the end of a line");
        c = *p++;
        int v = -1;
        switch (c) {
        case 'n': v = '\n'; break;
        case 't': v = '\t'; break;
        case 'r': v = '\r'; break;
        case 'a': v = '\a'; break;
        case 'b': v = '\b'; break;
        case 'f': v = '\f'; break;
        case 'v': v = '\v'; break;
        case '\\':
        case '"':
        case '\'':
        case '?': v = c; break;
        case 'x': {
            int digits = 0;
            v = 0;
            while (p < end && digits < 2 && strchr("0123456789abcdefABCDEF", *p) && *p) {
                char h = *p++;
                v = v * 16 + (h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
                digits++;
            }
            if (digits == 0) return perr(ps, ps->lineno, "\\x without hex digits");
            break;
        }
        default:
            if (c >= '0' && c <= '7') {
                v = c - '0';
                for (int k = 0; k < 2 && p < end && *p >= '0' && *p <= '7'; k++)
                    v = v * 8 + (*p++ - '0');
                if (v > 255) return perr(ps, ps->lineno, "octal escape above \\377");
            } else {
                char msg[64];
                snprintf(msg, sizeof msg, "unknown escape sequence \\%c", c);
                return perr(ps, ps->lineno, msg);
            }
        }
        if (v == 0) return perr(ps, ps->lineno, "NUL character (\\0) in a string");
        app_doc_buf_putc(out, (char)v);
    }
    *pp = p;
    return out->failed ? nomem(ps) : MT_OK;
}

static void reset_comments(po_parser *ps) {
    ps->have_comments = false;
    ps->prev_at = SIZE_MAX;
    ps->n_flag_lines = 0;
    ps->fuzzy = false;
    ps->note.len = ps->refs.len = ps->flagtxt.len = 0;
}

static void reset_entry(po_parser *ps) {
    reset_comments(ps);
    ps->in_entry = ps->has_ctxt = ps->has_id = ps->has_plural = ps->has_str = false;
    ps->ctxt.len = ps->id.len = ps->plural.len = 0;
    for (int k = 0; k < ps->n_strs; k++)
        ps->strs[k].len = 0;
    ps->n_strs = 0;
    ps->cur = NULL;
    ps->cur_rng = NULL;
}

static const char *buf_str(app_doc_buf *b) { return b->data && b->len ? b->data : ""; }

/* Case-insensitive search for key at the start of a header line; returns
** the value (up to the end of the line) in val. */
static bool header_field(const char *hdr, const char *key, char *val, size_t cap) {
    size_t kn = strlen(key);
    for (const char *l = hdr; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        if (strncasecmp(l, key, kn) == 0 && l[kn] == ':') {
            const char *v = l + kn + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            size_t n = strcspn(v, "\n");
            if (n >= cap) n = cap - 1;
            memcpy(val, v, n);
            val[n] = '\0';
            return true;
        }
    }
    return false;
}

static mt_status read_header(po_parser *ps, const char *hdr, int64_t line) {
    char val[256];
    ps->have_header = true;
    ps->header_line = line;
    if (header_field(hdr, "Content-Type", val, sizeof val)) {
        const char *cs = strcasestr(val, "charset=");
        if (cs) {
            cs += 8;
            size_t n = strcspn(cs, " ;\t");
            if (n >= sizeof ps->charset) n = sizeof ps->charset - 1;
            memcpy(ps->charset, cs, n);
            ps->charset[n] = '\0';
        }
    }
    if (header_field(hdr, "Plural-Forms", val, sizeof val)) {
        const char *np = strstr(val, "nplurals");
        int n = 0;
        if (np) {
            np += 8;
            while (*np == ' ')
                np++;
            if (*np == '=') {
                np++;
                while (*np == ' ')
                    np++;
                while (*np >= '0' && *np <= '9' && n < 1000)
                    n = n * 10 + (*np++ - '0');
            }
        }
        if (n < 1 || n > PO_MAX_FORMS) {
            char msg[320];
            snprintf(msg, sizeof msg, "bad Plural-Forms in the header: '%s' (nplurals 1..%d)", val,
                     PO_MAX_FORMS);
            return perr(ps, line, msg);
        }
        ps->po->nplurals = n;
        ps->po->have_plural_forms = true;
        /* the expression after "plural=" (not the "plurals=" of nplurals),
        ** up to ';'; read again, as it may be longer than val */
        char pf[1024];
        header_field(hdr, "Plural-Forms", pf, sizeof pf);
        for (const char *q = strstr(pf, "plural"); q; q = strstr(q + 1, "plural")) {
            const char *e = q + 6;
            while (*e == ' ')
                e++;
            if ((q > pf && (q[-1] == 'n' || q[-1] == '_')) || *e != '=') continue;
            e++;
            ps->po->plural_expr = app_doc_strdup(ps->d, e, strcspn(e, ";"));
            if (ps->po->plural_expr == NULL) return nomem(ps);
            break;
        }
    }
    if (header_field(hdr, "Language", val, sizeof val) && val[0] != '\0') {
        ps->d->trg_lang = mt_try_strdup(val);
        if (ps->d->trg_lang == NULL) return nomem(ps);
    }
    return MT_OK;
}

static char *arena_buf(po_parser *ps, app_doc_buf *b) {
    return app_doc_strdup(ps->d, buf_str(b), b->len);
}

/* Called when a new entry, a comment after msgstr, or the end of the file
** closes the entry in progress. */
static mt_status finish_entry(po_parser *ps) {
    if (!ps->in_entry) return MT_OK;
    if (!ps->has_id) return perr(ps, ps->ent_line, "msgctxt without msgid");
    if (!ps->has_str) return perr(ps, ps->ent_line, "entry without msgstr");
    if (ps->has_plural && ps->n_strs == 0)
        return perr(ps, ps->ent_line, "plural entry without msgstr[0]");
    po_doc *po = ps->po;
    if (!ps->has_ctxt && ps->id.len == 0) {
        if (ps->have_header) return perr(ps, ps->ent_line, "second header entry (msgid \"\")");
        po->have_header = true;
        po->header_str = ps->str_rng[0];
        mt_status rc = read_header(ps, buf_str(&ps->strs[0]), ps->ent_line);
        reset_entry(ps);
        return rc;
    }
    mt_status rc =
        grow((void **)&po->entries, &po->cap_entries, po->n_entries + 1, sizeof *po->entries);
    if (rc == MT_OK)
        rc = grow((void **)&po->forms, &po->cap_forms, po->n_forms + ps->n_strs, sizeof *po->forms);
    if (rc == MT_OK)
        rc = grow((void **)&po->form_text, &po->cap_form_text, po->n_forms + ps->n_strs,
                  sizeof *po->form_text);
    if (rc != MT_OK) return rc;
    po_entry *e = &po->entries[po->n_entries];
    memset(e, 0, sizeof *e);
    e->line = ps->ent_line;
    e->beg = ps->ent_beg;
    e->flags_at = ps->prev_at != SIZE_MAX ? ps->prev_at : ps->kw_at;
    e->str_end = ps->str_rng[ps->n_strs - 1].end;
    e->flag_first = ps->flag_first;
    e->n_flag_lines = ps->n_flag_lines;
    e->form_first = (int)po->n_forms;
    e->n_forms = ps->n_strs;
    e->plural = ps->has_plural;
    e->fuzzy = ps->fuzzy;
    for (int k = 0; k < ps->n_strs; k++) {
        po->forms[po->n_forms + k] = ps->str_rng[k];
        po->form_text[po->n_forms + k] = arena_buf(ps, &ps->strs[k]);
        if (po->form_text[po->n_forms + k] == NULL) return nomem(ps);
    }
    po->n_forms += ps->n_strs;
    po->n_entries++;

    /* the segment; n_targets is fixed after the header is known (po_open) */
    app_doc_segment *s;
    rc = app_doc_add_segment(ps->d, 1, &s);
    if (rc != MT_OK) return rc;
    s->line = ps->ent_line;
    s->source = arena_buf(ps, &ps->id);
    s->source_plural = ps->has_plural ? arena_buf(ps, &ps->plural) : NULL;
    s->context = ps->has_ctxt ? arena_buf(ps, &ps->ctxt) : NULL;
    s->note = ps->note.len ? arena_buf(ps, &ps->note) : NULL;
    s->refs = ps->refs.len ? arena_buf(ps, &ps->refs) : NULL;
    s->flags = ps->flagtxt.len ? arena_buf(ps, &ps->flagtxt) : NULL;
    if (s->source == NULL || (ps->has_plural && !s->source_plural) ||
        (ps->has_ctxt && !s->context) || (ps->note.len && !s->note) || (ps->refs.len && !s->refs) ||
        (ps->flagtxt.len && !s->flags))
        return nomem(ps);
    reset_entry(ps);
    return MT_OK;
}

/* Splits the flags of a "#," line (text after the "#,") into tokens. */
typedef struct flag_tok {
    const char *p;
    size_t n;
} flag_tok;

static int split_flags(const char *p, const char *end, flag_tok *toks, int max) {
    int n = 0;
    while (p < end) {
        const char *q = p;
        while (q < end && *q != ',')
            q++;
        const char *a = p, *b = q;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r'))
            b--;
        if (b > a && n < max) toks[n++] = (flag_tok){a, (size_t)(b - a)};
        p = q < end ? q + 1 : q;
    }
    return n;
}

static bool tok_is(flag_tok t, const char *s) { return t.n == strlen(s) && !memcmp(t.p, s, t.n); }

static mt_status comment_line(po_parser *ps, const char *ls, const char *p, const char *le,
                              size_t next) {
    if (ps->in_entry) {
        if (!ps->has_str) return perr(ps, ps->lineno, "comment inside an entry, before its msgstr");
        mt_status rc = finish_entry(ps);
        if (rc != MT_OK) return rc;
    }
    ps->cur = NULL;
    ps->cur_rng = NULL;
    if (p[1] == '~') { /* obsolete entry: its comments go with it */
        reset_comments(ps);
        return MT_OK;
    }
    if (!ps->have_comments) {
        ps->have_comments = true;
        ps->ent_beg = (size_t)(ls - ps->buf);
        ps->ent_line = ps->lineno;
        ps->flag_first = (int)ps->po->n_flags;
    }
    const char *t = p + 2;
    if (t > le) t = le;
    if (t < le && *t == ' ') t++;
    switch (p[1]) {
    case ',': {
        po_doc *po = ps->po;
        mt_status rc =
            grow((void **)&po->flags, &po->cap_flags, po->n_flags + 1, sizeof *po->flags);
        if (rc != MT_OK) return rc;
        po->flags[po->n_flags++] = (po_range){(size_t)(ls - ps->buf), next};
        ps->n_flag_lines++;
        flag_tok toks[32];
        int n = split_flags(p + 2, le, toks, 32);
        for (int k = 0; k < n; k++) {
            if (tok_is(toks[k], "fuzzy")) {
                ps->fuzzy = true;
                continue;
            }
            if (ps->flagtxt.len) app_doc_buf_puts(&ps->flagtxt, ", ");
            app_doc_buf_put(&ps->flagtxt, toks[k].p, toks[k].n);
        }
        break;
    }
    case '.':
        if (ps->note.len) app_doc_buf_putc(&ps->note, '\n');
        app_doc_buf_put(&ps->note, t, (size_t)(le - t));
        break;
    case ':':
        if (ps->refs.len) app_doc_buf_putc(&ps->refs, ' ');
        app_doc_buf_put(&ps->refs, t, (size_t)(le - t));
        break;
    case '|':
        if (ps->prev_at == SIZE_MAX) ps->prev_at = (size_t)(ls - ps->buf);
        break;
    default: break;
    }
    return ps->note.failed || ps->refs.failed || ps->flagtxt.failed ? nomem(ps) : MT_OK;
}

static mt_status keyword_line(po_parser *ps, const char *ls, const char *p, const char *le,
                              size_t next) {
    const char *k = p;
    while (p < le && ((*p >= 'a' && *p <= 'z') || *p == '_'))
        p++;
    size_t kn = (size_t)(p - k);
    int index = -1;
    if (p < le && *p == '[') {
        p++;
        index = 0;
        if (p >= le || *p < '0' || *p > '9') return perr(ps, ps->lineno, "bad msgstr[] index");
        while (p < le && *p >= '0' && *p <= '9' && index < 1000)
            index = index * 10 + (*p++ - '0');
        if (p >= le || *p != ']') return perr(ps, ps->lineno, "bad msgstr[] index");
        p++;
    }
#define KW(s) (kn == sizeof(s) - 1 && memcmp(k, s, kn) == 0)
    mt_status rc = MT_OK;
    if ((KW("msgctxt") || KW("msgid")) && index < 0) {
        if (ps->in_entry && ps->has_str) {
            rc = finish_entry(ps);
            if (rc != MT_OK) return rc;
        }
        if (ps->in_entry && ps->has_id) { /* and no msgstr: the next entry started */
            char msg[96];
            snprintf(msg, sizeof msg, "missing msgstr for the msgid at line %lld",
                     (long long)ps->id_line);
            return perr(ps, ps->lineno, msg);
        }
        if (KW("msgctxt") && ps->in_entry)
            return perr(ps, ps->lineno, "msgctxt must come before msgid, once per entry");
        if (!ps->in_entry) {
            ps->in_entry = true;
            ps->kw_at = (size_t)(ls - ps->buf);
            if (!ps->have_comments) {
                ps->ent_beg = ps->kw_at;
                ps->ent_line = ps->lineno;
                ps->flag_first = (int)ps->po->n_flags;
            }
        }
        if (KW("msgctxt")) {
            ps->has_ctxt = true;
            ps->cur = &ps->ctxt;
        } else {
            ps->has_id = true;
            ps->id_line = ps->lineno;
            ps->cur = &ps->id;
        }
        ps->cur_rng = NULL;
    } else if (KW("msgid_plural") && index < 0) {
        if (!ps->has_id || ps->has_plural || ps->has_str)
            return perr(ps, ps->lineno, "msgid_plural must follow msgid");
        ps->has_plural = true;
        ps->cur = &ps->plural;
        ps->cur_rng = NULL;
    } else if (KW("msgstr")) {
        if (!ps->has_id) return perr(ps, ps->lineno, "msgstr without msgid");
        if (index < 0) {
            if (ps->has_plural)
                return perr(ps, ps->lineno, "plural entry needs msgstr[0], msgstr[1], ...");
            if (ps->has_str) return perr(ps, ps->lineno, "msgstr twice in one entry");
            index = 0;
        } else {
            if (!ps->has_plural) return perr(ps, ps->lineno, "msgstr[N] without msgid_plural");
            if (index != ps->n_strs) {
                char msg[64];
                snprintf(msg, sizeof msg, "expected msgstr[%d], found msgstr[%d]", ps->n_strs,
                         index);
                return perr(ps, ps->lineno, msg);
            }
            if (index >= PO_MAX_FORMS) return perr(ps, ps->lineno, "too many plural forms");
        }
        ps->has_str = true;
        ps->n_strs = index + 1;
        ps->strs[index].len = 0;
        ps->str_rng[index] = (po_range){(size_t)(ls - ps->buf), next};
        ps->cur = &ps->strs[index];
        ps->cur_rng = &ps->str_rng[index];
    } else {
        return perr(ps, ps->lineno,
                    "unknown keyword (expected msgctxt, msgid, msgid_plural or msgstr)");
    }
#undef KW
    while (p < le && (*p == ' ' || *p == '\t'))
        p++;
    if (p >= le || *p != '"')
        return perr(ps, ps->lineno, "expected a quoted string after the keyword");
    rc = parse_string(ps, &p, le, ps->cur);
    if (rc != MT_OK) return rc;
    while (p < le && (*p == ' ' || *p == '\t'))
        p++;
    if (p < le) return perr(ps, ps->lineno, "unexpected text after the string");
    return MT_OK;
}

static mt_status parse_line(po_parser *ps, const char *ls, const char *le, size_t next) {
    const char *p = ls;
    if (ps->lineno == 1 && le - p >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) p += 3;
    while (p < le && (*p == ' ' || *p == '\t'))
        p++;
    if (p == le) return MT_OK;
    if (*p == '#') return comment_line(ps, ls, p, le, next);
    if (*p == '"') {
        if (ps->cur == NULL) return perr(ps, ps->lineno, "string without a keyword before it");
        mt_status rc = parse_string(ps, &p, le, ps->cur);
        if (rc != MT_OK) return rc;
        while (p < le && (*p == ' ' || *p == '\t'))
            p++;
        if (p < le) return perr(ps, ps->lineno, "unexpected text after the string");
        if (ps->cur_rng) ps->cur_rng->end = next;
        return MT_OK;
    }
    return keyword_line(ps, ls, p, le, next);
}

static void parser_free(po_parser *ps) {
    app_doc_buf_free(&ps->note);
    app_doc_buf_free(&ps->refs);
    app_doc_buf_free(&ps->flagtxt);
    app_doc_buf_free(&ps->ctxt);
    app_doc_buf_free(&ps->id);
    app_doc_buf_free(&ps->plural);
    for (int k = 0; k < PO_MAX_FORMS; k++)
        app_doc_buf_free(&ps->strs[k]);
}

static mt_status po_parse(po_parser *ps) {
    mt_status rc = MT_OK;
    size_t pos = 0;
    while (pos < ps->len) {
        ps->lineno++;
        const char *ls = ps->buf + pos;
        const char *nl = memchr(ls, '\n', ps->len - pos);
        size_t next = nl ? (size_t)(nl - ps->buf) + 1 : ps->len;
        const char *le = nl ? nl : ps->buf + ps->len;
        if (le > ls && le[-1] == '\r') le--;
        size_t bad;
        if (ps->bad_utf8_line == 0 && !mt_utf8_valid(ls, (size_t)(le - ls), &bad)) {
            ps->bad_utf8_line = ps->lineno;
            ps->bad_utf8_col = bad + 1;
        }
        rc = parse_line(ps, ls, le, next);
        if (rc != MT_OK) return rc;
        pos = next;
    }
    if (ps->in_entry) {
        if (!ps->has_str)
            return perr(ps, ps->ent_line, "entry without msgstr at the end of the file");
        rc = finish_entry(ps);
    }
    return rc;
}

/* ------------------------------------------------------------- writing */

/* East Asian wide characters (two columns). */
static bool is_wide(unsigned cp) {
    return (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf) ||
           (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) ||
           (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
           (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x20000 && cp <= 0x3fffd);
}

/* Line breaking classes of Unicode UAX #14 (the subset that matters for
** UI text: everything not listed is AL, a letter). */
enum lb_class {
    LB_AL,
    LB_SP,
    LB_BA,
    LB_HY,
    LB_BB,
    LB_B2,
    LB_CL,
    LB_CP,
    LB_EX,
    LB_IS,
    LB_SY,
    LB_OP,
    LB_QU,
    LB_NU,
    LB_PR,
    LB_PO,
    LB_ID,
    LB_NS,
    LB_IN,
    LB_GL,
    LB_CM,
    LB_ZW,
};

static bool in_list(unsigned cp, const char *list) {
    const unsigned char *p = (const unsigned char *)list;
    while (*p) {
        uint32_t c; /* the list is NUL-terminated: 4 never reads past it */
        size_t n = mt_utf8_decode((const char *)p, 4, &c);
        if (c == cp) return true;
        p += n;
    }
    return false;
}

static enum lb_class lb_class_of(unsigned cp) {
    if (cp < 0x80) { /* classes of ASCII from LineBreak.txt */
        switch (cp) {
        case ' ': return LB_SP;
        case '!':
        case '?': return LB_EX;
        case '"':
        case '\'': return LB_QU;
        case '$':
        case '+':
        case '\\': return LB_PR;
        case '%': return LB_PO;
        case '(':
        case '[':
        case '{': return LB_OP;
        case ')':
        case ']': return LB_CP;
        case '}': return LB_CL;
        case ',':
        case '.':
        case ':':
        case ';': return LB_IS;
        case '-': return LB_HY;
        case '/': return LB_SY;
        case '|':
        case '\t': return LB_BA;
        default: return cp >= '0' && cp <= '9' ? LB_NU : LB_AL;
        }
    }
    if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x1ab0 && cp <= 0x1aff) ||
        (cp >= 0x1dc0 && cp <= 0x1dff) || (cp >= 0x20d0 && cp <= 0x20ff) ||
        (cp >= 0xfe20 && cp <= 0xfe2f))
        return LB_CM;
    switch (cp) {
    case 0xa0:
    case 0x202f:
    case 0x2060:
    case 0x2007:
    case 0x2011: return LB_GL;
    case 0xab:
    case 0xbb:
    case 0x2018:
    case 0x2019:
    case 0x201b:
    case 0x201c:
    case 0x201d:
    case 0x201f:
    case 0x2039:
    case 0x203a: return LB_QU;
    case 0xa1:
    case 0xbf:
    case 0x201a:
    case 0x201e: return LB_OP;
    case 0xad:
    case 0x2010:
    case 0x2012:
    case 0x2013: return LB_BA;
    case 0xb4: return LB_BB;
    case 0x2014: return LB_B2;
    case 0x2024:
    case 0x2025:
    case 0x2026: return LB_IN;
    case 0x200b: return LB_ZW;
    case 0xa2:
    case 0xb0:
    case 0x2030:
    case 0x2031:
    case 0x2032:
    case 0x2033: return LB_PO;
    case 0xa3:
    case 0xa4:
    case 0xa5:
    case 0xb1:
    case 0x20ac:
    case 0x2116: return LB_PR;
    default: break;
    }
    if (!is_wide(cp)) return LB_AL;
    if (in_list(cp, "、。，．｡､")) return LB_CL;
    if (in_list(cp, "」』）］｝〉》】〕〗〙〛")) return LB_CL;
    if (in_list(cp, "「『（［｛〈《【〔〖〘〚")) return LB_OP;
    if (in_list(cp, "！？")) return LB_EX;
    if (in_list(cp, "：；")) return LB_NS;
    if (in_list(cp, "ぁぃぅぇぉっゃゅょゎゕゖァィゥェォッャュョヮヵヶ"
                    "ーゝゞヽヾ々〻・〜゠"))
        return LB_NS;
    return LB_ID;
}

/* Whether a line may break before class b.  a: class of the character
** before it, x: the class before the spaces when a is SP.  Rules LB7-LB31
** of UAX #14 for the classes above (LB9 and LB10 are handled by the caller),
** as far as msgcat's libunistring follows them (tests compare with msgcat). */
static bool lb_can_break(enum lb_class a, enum lb_class x, enum lb_class b) {
    /* LB7, LB9: never before a space or a combining mark; LB8: after ZW */
    if (b == LB_SP || b == LB_CM) return false;
    if (a == LB_ZW) return true;
    /* LB12, LB12a: glue */
    if (a == LB_GL) return false;
    if (b == LB_GL && a != LB_SP && a != LB_BA && a != LB_HY) return false;
    /* LB13: not before closing punctuation, "!", "?", ",", ".", "/" */
    if (b == LB_CL || b == LB_CP || b == LB_EX || b == LB_IS || b == LB_SY) return false;
    /* LB14-LB17, which look through spaces */
    if (x == LB_OP) return false;
    if (x == LB_QU && b == LB_OP) return false;
    if ((x == LB_CL || x == LB_CP) && b == LB_NS) return false;
    if (x == LB_B2 && b == LB_B2) return false;
    /* LB18: after spaces */
    if (a == LB_SP) return true;
    /* LB19: quotes; LB21: hyphens and friends; LB22: ellipsis */
    if (a == LB_QU || b == LB_QU) return false;
    if (b == LB_BA || b == LB_HY || b == LB_NS || a == LB_BB) return false;
    if (b == LB_IN) return false;
    /* LB23-LB25: numbers with letters, prefixes and postfixes */
    if ((a == LB_AL && b == LB_NU) || (a == LB_NU && b == LB_AL)) return false;
    if ((a == LB_PR && b == LB_ID) || (a == LB_ID && b == LB_PO)) return false;
    if ((a == LB_PR || a == LB_PO) && b == LB_AL) return false;
    if (a == LB_AL && (b == LB_PR || b == LB_PO)) return false;
    if ((a == LB_CL || a == LB_CP || a == LB_NU) && (b == LB_PO || b == LB_PR)) return false;
    if ((a == LB_PO || a == LB_PR) && (b == LB_OP || b == LB_NU)) return false;
    if ((a == LB_HY || a == LB_IS || a == LB_NU || a == LB_SY) && b == LB_NU) return false;
    /* LB28: letters stay together.  No LB29 (IS x AL): libunistring, which
    ** msgcat uses, lets a line break after "." or ":" before a letter. */
    if (a == LB_AL && b == LB_AL) return false;
    /* LB30: parentheses next to letters and numbers */
    if ((a == LB_AL || a == LB_NU) && b == LB_OP) return false;
    if (a == LB_CP && (b == LB_AL || b == LB_NU)) return false;
    /* LB31: everywhere else */
    return true;
}

/* One character of a string as written in a PO file. */
typedef struct po_char {
    size_t off;    /* byte offset in the unescaped string  */
    uint8_t bytes; /* its length there                      */
    uint8_t cols;  /* columns of its escaped form           */
    bool brk;      /* a line may break before it            */
} po_char;

/* Escaped form of the character at s (of length bytes) appended to out;
** returns its columns and the UAX #14 classes of its first and last
** written character. */
static int put_escaped(app_doc_buf *out, const unsigned char *s, int *bytes, enum lb_class *first,
                       enum lb_class *last) {
    static const char esc[] = "\a\b\t\n\v\f\r\"\\";
    static const char let[] = "abtnvfr\"\\";
    unsigned c = s[0];
    const char *e = c ? strchr(esc, (int)c) : NULL;
    if (e) {
        char two[2] = {'\\', let[e - esc]};
        if (out) app_doc_buf_put(out, two, 2);
        *bytes = 1;
        *first = LB_PR; /* the backslash */
        *last = lb_class_of((unsigned char)two[1]);
        return 2;
    }
    if (c < 0x20 || c == 0x7f) {
        char oct[5];
        snprintf(oct, sizeof oct, "\\%03o", c);
        if (out) app_doc_buf_put(out, oct, 4);
        *bytes = 1;
        *first = LB_PR;
        *last = LB_NU;
        return 4;
    }
    uint32_t cp; /* s is NUL-terminated: decoding stops at the NUL */
    *bytes = (int)mt_utf8_decode((const char *)s, 4, &cp);
    if (out) app_doc_buf_put(out, s, (size_t)*bytes);
    *first = *last = lb_class_of(cp);
    return is_wide(cp) ? 2 : 1;
}

/* Characters of s[0..n) with their widths and break opportunities. */
static po_char *analyse(const char *s, size_t n, size_t *count) {
    po_char *ch = mt_try_malloc((n + 1) * sizeof *ch);
    if (ch == NULL) return NULL;
    const unsigned char *u = (const unsigned char *)s;
    enum lb_class a = LB_AL, x = LB_AL;
    size_t k = 0;
    for (size_t j = 0; j < n; k++) {
        int bytes;
        enum lb_class first, last;
        int cols = put_escaped(NULL, u + j, &bytes, &first, &last);
        ch[k].off = j;
        ch[k].bytes = (uint8_t)bytes;
        ch[k].cols = (uint8_t)cols;
        ch[k].brk = k > 0 && lb_can_break(a, x, first);
        if (j + (size_t)bytes == n && u[j] == '\n') ch[k].brk = false; /* not before a final \n */
        j += (size_t)bytes;
        if (first == LB_CM) {
            if (k == 0 || a == LB_SP) a = LB_AL; /* LB10; otherwise LB9: X CM* is X */
            continue;
        }
        if (last == LB_SP && a != LB_SP) x = a;
        a = last;
        if (a != LB_SP) x = a;
    }
    *count = k;
    return ch;
}

/* Chooses line breaks the way gettext does (libunistring's width-based
** breaking): the text between two opportunities is a piece; when a piece
** does not fit on the current line, the line breaks before it.  The first
** line starts at column col0, later ones at 0; width is the room for text.
** Marks chosen breaks in cut[] (cut before that character); returns their
** number. */
static int choose_cuts(const po_char *ch, size_t n, int col0, int width, bool *cut) {
    int cuts = 0, col = col0, piece = 0;
    size_t last = SIZE_MAX; /* opportunity where the current piece starts */
    for (size_t k = 0; k < n; k++) {
        cut[k] = false;
        if (ch[k].brk) {
            if (last != SIZE_MAX && col + piece > width) {
                cut[last] = true;
                cuts++;
                col = 0;
            }
            last = k;
            col += piece;
            piece = 0;
        }
        piece += ch[k].cols;
    }
    if (last != SIZE_MAX && col + piece > width) {
        cut[last] = true;
        cuts++;
    }
    return cuts;
}

/* Writes `keyword "value"` in msgcat's layout; lines separated by eol, no
** eol after the last one. */
static void put_po_string(app_doc_buf *out, const char *kw, const char *v, const char *eol) {
    size_t n = strlen(v);
    const char *nl = memchr(v, '\n', n);
    bool inner_nl = nl != NULL && (size_t)(nl - v) + 1 < n;
    bool first = true;
    for (size_t i = 0; i < n || (i == 0 && n == 0);) {
        const char *q = memchr(v + i, '\n', n - i);
        size_t end = q ? (size_t)(q - v) + 1 : n;
        size_t count = 0;
        po_char *ch = analyse(v + i, end - i, &count);
        bool *cut = mt_try_malloc(count + 1);
        if (ch == NULL || cut == NULL) {
            mt_free(ch);
            mt_free(cut);
            out->failed = true;
            return;
        }
        if (first) {
            /* one line if nothing follows and no break is needed there */
            int col0 = (int)strlen(kw) + 1; /* after `msgstr "` */
            if (inner_nl || choose_cuts(ch, count, col0, PO_WIDTH - 2, cut) > 0) {
                app_doc_buf_puts(out, kw);
                app_doc_buf_puts(out, " \"\"");
                app_doc_buf_puts(out, eol);
                choose_cuts(ch, count, 0, PO_WIDTH - 2, cut);
            } else {
                app_doc_buf_puts(out, kw);
                app_doc_buf_putc(out, ' ');
            }
            first = false;
        } else {
            app_doc_buf_puts(out, eol);
            choose_cuts(ch, count, 0, PO_WIDTH - 2, cut);
        }
        app_doc_buf_putc(out, '"');
        for (size_t k = 0; k < count; k++) {
            if (cut[k]) {
                app_doc_buf_putc(out, '"');
                app_doc_buf_puts(out, eol);
                app_doc_buf_putc(out, '"');
            }
            int bytes;
            enum lb_class f, l;
            put_escaped(out, (const unsigned char *)v + i + ch[k].off, &bytes, &f, &l);
        }
        app_doc_buf_putc(out, '"');
        mt_free(ch);
        mt_free(cut);
        if (n == 0) break;
        i = end;
    }
}

static const char *eol_at(const char *buf, size_t len, size_t pos) {
    const char *nl = memchr(buf + pos, '\n', len - pos);
    if (nl == NULL) return NULL;
    return nl > buf + pos && nl[-1] == '\r' ? "\r\n" : "\n";
}

typedef struct po_writer {
    FILE *f;
    const char *buf;
    size_t pos; /* bytes of the original copied so far */
} po_writer;

static void copy_to(po_writer *w, size_t to) {
    MT_ASSERT(to >= w->pos);
    fwrite(w->buf + w->pos, 1, to - w->pos, w->f);
    w->pos = to;
}

/* Rewritten "#," line: the given line's flags with fuzzy added or removed. */
static void put_flags_line(app_doc_buf *out, const char *ls, const char *le, bool fuzzy,
                           const char *eol) {
    const char *p = ls;
    while (*p != '#')
        p++;
    flag_tok toks[32];
    int n = split_flags(p + 2, le, toks, 32);
    int written = 0;
    if (fuzzy) {
        app_doc_buf_puts(out, "#, fuzzy");
        written++;
    }
    for (int k = 0; k < n; k++) {
        if (tok_is(toks[k], "fuzzy")) continue;
        app_doc_buf_puts(out, written ? ", " : "#, ");
        app_doc_buf_put(out, toks[k].p, toks[k].n);
        written++;
    }
    if (written && eol) app_doc_buf_puts(out, eol);
}

/* Writes the bytes of out in place of the original's [w->pos, end). */
static void replace_to(po_writer *w, app_doc_buf *out, size_t end) {
    if (out->len) fwrite(out->data, 1, out->len, w->f);
    out->len = 0;
    w->pos = end;
}

static const char *last_eol(const char *buf, po_range r) {
    if (r.end == r.beg || buf[r.end - 1] != '\n') return NULL;
    return r.end - r.beg >= 2 && buf[r.end - 2] == '\r' ? "\r\n" : "\n";
}

/* Flags of a changed entry: "#, fuzzy" inserted, added to the first "#,"
** line, or removed from every "#," line that has it. */
static void write_flags(const app_doc *d, const po_doc *po, const po_entry *e, bool want_fuzzy,
                        po_writer *w, app_doc_buf *out) {
    if (want_fuzzy && e->n_flag_lines == 0) {
        const char *eol = eol_at(w->buf, d->raw_len, e->flags_at);
        copy_to(w, e->flags_at);
        app_doc_buf_puts(out, "#, fuzzy");
        app_doc_buf_puts(out, eol ? eol : po->eol);
        replace_to(w, out, e->flags_at);
        return;
    }
    for (int k = 0; k < e->n_flag_lines; k++) {
        po_range r = po->flags[e->flag_first + k];
        const char *ls = w->buf + r.beg, *le = w->buf + r.end;
        const char *eol = last_eol(w->buf, r);
        if (eol) le -= strlen(eol);
        const char *h = ls;
        while (*h != '#')
            h++;
        flag_tok toks[32];
        int n = split_flags(h + 2, le, toks, 32);
        bool has = false;
        for (int t = 0; t < n; t++)
            has |= tok_is(toks[t], "fuzzy");
        if (want_fuzzy ? k != 0 : !has) continue;
        copy_to(w, r.beg);
        put_flags_line(out, ls, le, want_fuzzy, eol);
        replace_to(w, out, r.end);
    }
}

static mt_status write_entry(app_doc *d, po_doc *po, int64_t i, po_writer *w,
                             app_doc_save_params p) {
    const po_entry *e = &po->entries[i];
    const app_doc_segment *s = &d->segs[i];
    app_doc_buf out = {0};
    bool want_fuzzy = s->state == APP_DOC_STATE_DRAFT && p.draft_as_fuzzy;
    if (want_fuzzy != e->fuzzy) write_flags(d, po, e, want_fuzzy, w, &out);
    for (int k = 0; k < s->n_targets && !out.failed; k++) {
        if (k < e->n_forms && !(e->dirty & (1u << k))) continue;
        char kw[32];
        if (e->plural)
            snprintf(kw, sizeof kw, "msgstr[%d]", k);
        else
            snprintf(kw, sizeof kw, "msgstr");
        if (k < e->n_forms) {
            po_range r = po->forms[e->form_first + k];
            const char *first = eol_at(w->buf, d->raw_len, r.beg);
            const char *last = last_eol(w->buf, r);
            copy_to(w, r.beg);
            put_po_string(&out, kw, s->targets[k], first ? first : po->eol);
            if (last) app_doc_buf_puts(&out, last);
            replace_to(w, &out, r.end);
        } else {
            /* a form the file lacks (nplurals above the file's count) goes
            ** after the last msgstr line; when that line ends the file
            ** without a newline, each added form starts with one instead */
            bool ends_nl = e->str_end > 0 && w->buf[e->str_end - 1] == '\n';
            copy_to(w, e->str_end);
            if (!ends_nl) app_doc_buf_puts(&out, po->eol);
            put_po_string(&out, kw, s->targets[k], po->eol);
            if (ends_nl) app_doc_buf_puts(&out, po->eol);
            replace_to(w, &out, e->str_end);
        }
    }
    bool failed = out.failed;
    app_doc_buf_free(&out);
    if (failed) return mt_seterr(MT_ERR_NOMEM, "out of memory writing '%s'", d->path);
    return MT_OK;
}

/* ------------------------------------------------------ header stamp */

#ifndef MT_VERSION
#define MT_VERSION "0"
#endif

/* Seconds since the epoch that stamps use; 0: the real clock. */
static int64_t stamp_clock;

void app_doc_po_set_clock_for_tests(int64_t t) { stamp_clock = t; }

/* One "Key: value" field a save stamps into the header. */
typedef struct po_stamp {
    const char *key;
    char value[512]; /* "" : left as it is                          */
    bool found;      /* the header has it (replaced, not added)     */
} po_stamp;

/* A value fit for one header line: UTF-8 without control characters (a
** line break would start another field), short enough for value[]. */
static bool header_value_ok(const char *v, size_t cap) {
    size_t n = v ? strlen(v) : 0, bad;
    if (n == 0 || n >= cap || !mt_utf8_valid(v, n, &bad)) return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f) return false;
    return true;
}

/* Last-Translator: $MTPE_TRANSLATOR ("Name <email>") if set, else the
** login name ($USER); "" when neither is usable. */
static void translator_value(char *out, size_t cap) {
    const char *t = getenv("MTPE_TRANSLATOR");
    out[0] = '\0';
    if (t && t[0]) {
        if (header_value_ok(t, cap)) {
            snprintf(out, cap, "%s", t);
            return;
        }
        mt_log(MT_LOG_WARN, "MTPE_TRANSLATOR is not one line of UTF-8 text: "
                            "Last-Translator is taken from $USER");
    }
    const char *u = getenv("USER");
    if (header_value_ok(u, cap)) snprintf(out, cap, "%s", u);
}

/* A quoted string of the header's msgstr: where it is in the file and
** where its decoded text is in the whole header text. */
typedef struct hdr_piece {
    size_t open, close; /* offsets of its opening and closing quotes   */
    size_t at, len;     /* its decoded bytes in the header text        */
} hdr_piece;

/* s escaped as inside a PO string, without quotes. */
static void put_escaped_text(app_doc_buf *out, const char *s) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; u[i];) {
        int bytes;
        enum lb_class first, last;
        put_escaped(out, u + i, &bytes, &first, &last);
        i += (size_t)bytes;
    }
}

/* The piece holding byte `at` of the header text (pieces are in order;
** empty ones hold nothing). */
static int piece_of(const hdr_piece *pc, int n, size_t at) {
    for (int k = 0; k < n; k++)
        if (at >= pc[k].at && at < pc[k].at + pc[k].len) return k;
    return -1;
}

/* Stamps the header as a translator's revision (PO-Revision-Date,
** Last-Translator, X-Generator).  A field whose text is whole quoted
** strings (the usual one line per field) gets its value replaced in place:
** the bytes before its opening quote and after its closing quote stay, so
** the layout and line ends do too.  Missing fields become new lines after
** the last one.  A header laid out otherwise (fields sharing or splitting
** strings mid-way, no final \n) is regenerated in msgcat's layout. */
static mt_status write_header(app_doc *d, po_doc *po, po_writer *w) {
    mt_status rc = MT_OK;
    po_stamp st[3] = {
        {.key = "PO-Revision-Date"}, {.key = "Last-Translator"}, {.key = "X-Generator"}};
    time_t now = stamp_clock ? (time_t)stamp_clock : time(NULL);
    struct tm tmv;
    if (localtime_r(&now, &tmv) == NULL ||
        strftime(st[0].value, sizeof st[0].value, "%Y-%m-%d %H:%M%z", &tmv) == 0)
        st[0].value[0] = '\0';
    translator_value(st[1].value, sizeof st[1].value);
    snprintf(st[2].value, sizeof st[2].value, "mtpe %s", MT_VERSION);

    /* the quoted strings of the msgstr lines, decoded */
    po_range r = po->header_str;
    int n = 0;
    for (size_t pos = r.beg; pos < r.end; n++) {
        const char *nl = memchr(w->buf + pos, '\n', r.end - pos);
        pos = nl ? (size_t)(nl - w->buf) + 1 : r.end;
    }
    hdr_piece *pc = mt_try_calloc((size_t)n + 1, sizeof *pc);
    app_doc_buf text = {0}, out = {0};
    po_parser ps; /* for parse_string; the file parsed, so it cannot fail */
    memset(&ps, 0, sizeof ps);
    ps.d = d;
    int np = 0;
    for (size_t pos = r.beg; pc && pos < r.end && rc == MT_OK;) {
        const char *nl = memchr(w->buf + pos, '\n', r.end - pos);
        size_t next = nl ? (size_t)(nl - w->buf) + 1 : r.end;
        const char *q = memchr(w->buf + pos, '"', next - pos), *p = q;
        if (q) {
            size_t at = text.len;
            rc = parse_string(&ps, &p, w->buf + next, &text);
            pc[np++] =
                (hdr_piece){(size_t)(q - w->buf), (size_t)(p - 1 - w->buf), at, text.len - at};
        }
        pos = next;
    }
    if (pc == NULL || text.failed)
        rc = mt_seterr(MT_ERR_NOMEM, "out of memory writing '%s'", d->path);
    if (rc != MT_OK) goto done;

    /* which fields are replaced, and can it be done string by string? */
    const char *t = buf_str(&text);
    bool regenerate = false;
    for (size_t fs = 0; fs < text.len;) {
        const char *nl = memchr(t + fs, '\n', text.len - fs);
        size_t fe = nl ? (size_t)(nl - t) + 1 : text.len;
        for (int k = 0; k < 3; k++) {
            size_t kn = strlen(st[k].key);
            if (!st[k].value[0] || fe - fs <= kn || strncasecmp(t + fs, st[k].key, kn) != 0 ||
                t[fs + kn] != ':')
                continue;
            st[k].found = true;
            int a = piece_of(pc, np, fs), b = piece_of(pc, np, fe - 1);
            if (a < 0 || b < 0 || pc[a].at != fs || pc[b].at + pc[b].len != fe) regenerate = true;
        }
        fs = fe;
    }
    /* a field added after a last one without its \n would join it */
    for (int k = 0; k < 3; k++)
        if (st[k].value[0] && !st[k].found && text.len > 0 && t[text.len - 1] != '\n')
            regenerate = true;

    /* the new header text: replaced fields, then the missing ones */
    app_doc_buf nt = {0};
    for (size_t fs = 0; fs < text.len;) {
        const char *nl = memchr(t + fs, '\n', text.len - fs);
        size_t fe = nl ? (size_t)(nl - t) + 1 : text.len;
        int hit = -1;
        for (int k = 0; k < 3; k++) {
            size_t kn = strlen(st[k].key);
            if (st[k].value[0] && fe - fs > kn && strncasecmp(t + fs, st[k].key, kn) == 0 &&
                t[fs + kn] == ':')
                hit = k;
        }
        if (hit < 0) {
            app_doc_buf_put(&nt, t + fs, fe - fs);
        } else {
            char field[640];
            snprintf(field, sizeof field, "%s: %s\n", st[hit].key, st[hit].value);
            if (!regenerate) {
                /* in place: from after the first string's opening quote to
                ** the last one's closing quote */
                int a = piece_of(pc, np, fs), b = piece_of(pc, np, fe - 1);
                copy_to(w, pc[a].open + 1);
                put_escaped_text(&out, field);
                replace_to(w, &out, pc[b].close);
            }
            app_doc_buf_puts(&nt, field);
        }
        fs = fe;
    }
    if (nt.len && nt.data[nt.len - 1] != '\n') app_doc_buf_putc(&nt, '\n');
    bool ends_nl = r.end > r.beg && w->buf[r.end - 1] == '\n';
    const char *eol = eol_at(w->buf, d->raw_len, r.beg);
    if (eol == NULL) eol = po->eol;
    if (!regenerate) copy_to(w, r.end);
    for (int k = 0; k < 3; k++) {
        if (!st[k].value[0] || st[k].found) continue;
        char field[640];
        snprintf(field, sizeof field, "%s: %s\n", st[k].key, st[k].value);
        app_doc_buf_puts(&nt, field);
        if (regenerate) continue;
        if (!ends_nl) app_doc_buf_puts(&out, eol);
        app_doc_buf_putc(&out, '"');
        put_escaped_text(&out, field);
        app_doc_buf_putc(&out, '"');
        if (ends_nl) app_doc_buf_puts(&out, eol);
    }
    if (regenerate) {
        copy_to(w, r.beg);
        put_po_string(&out, "msgstr", buf_str(&nt), eol);
        const char *last = last_eol(w->buf, r);
        if (last) app_doc_buf_puts(&out, last);
        replace_to(w, &out, r.end);
    } else {
        replace_to(w, &out, r.end);
    }
    if (nt.failed || out.failed)
        rc = mt_seterr(MT_ERR_NOMEM, "out of memory writing '%s'", d->path);
    app_doc_buf_free(&nt);
done:
    app_doc_buf_free(&text);
    app_doc_buf_free(&out);
    mt_free(pc);
    return rc;
}

/* Whether saving rewrites any line of entry i (what write_entry does). */
static bool entry_rewritten(const app_doc *d, const po_doc *po, int64_t i, app_doc_save_params p) {
    const app_doc_segment *s = &d->segs[i];
    const po_entry *e = &po->entries[i];
    bool want_fuzzy = s->state == APP_DOC_STATE_DRAFT && p.draft_as_fuzzy;
    return s->changed && (want_fuzzy != e->fuzzy || e->dirty != 0 || s->n_targets > e->n_forms);
}

static mt_status po_save(app_doc *d, FILE *f, app_doc_save_params p) {
    po_doc *po = d->impl;
    po_writer w = {f, d->raw, 0};
    mt_status rc = MT_OK;
    /* the header is stamped when an entry's lines change */
    bool stamp = false;
    for (int64_t i = 0; p.stamp_header && po->have_header && !stamp && i < d->n_segs; i++)
        stamp = entry_rewritten(d, po, i, p);
    for (int64_t i = 0; i < d->n_segs && rc == MT_OK; i++) {
        if (stamp && po->header_str.beg < po->entries[i].beg) {
            rc = write_header(d, po, &w);
            stamp = false;
        }
        if (rc == MT_OK && d->segs[i].changed) rc = write_entry(d, po, i, &w, p);
    }
    if (rc == MT_OK && stamp) rc = write_header(d, po, &w);
    if (rc != MT_OK) return rc;
    copy_to(&w, d->raw_len);
    return MT_OK;
}

static mt_status po_set_target(app_doc *d, int64_t i, int form, const char *text) {
    po_doc *po = d->impl;
    /* the same text again keeps the original lines (and their wrapping) */
    if (strcmp(d->segs[i].targets[form], text) != 0) po->entries[i].dirty |= 1u << form;
    return MT_OK;
}

static void po_free(app_doc *d) {
    po_doc *po = d->impl;
    if (po == NULL) return;
    mt_free(po->entries);
    mt_free(po->flags);
    mt_free(po->forms);
    mt_free(po->form_text);
    mt_free(po);
    d->impl = NULL;
}

static const app_doc_ops po_ops = {po_set_target, po_save, po_free};

/* ------------------------------------------------------- plural forms */

/* Plural-Forms expressions (gettext's grammar: C's ?: || && == != < > <=
** >= + - * / % ! and parentheses over n and decimal numbers), evaluated
** in unsigned long as gettext does.  `bad`: a syntax error, a division by
** zero or nesting deeper than 64. */
typedef struct plural_eval {
    const char *p;
    unsigned long n;
    bool bad;
    int depth;
} plural_eval;

static unsigned long pe_cond(plural_eval *e);

static bool pe_eat(plural_eval *e, const char *op) {
    while (*e->p == ' ' || *e->p == '\t')
        e->p++;
    size_t k = strlen(op);
    if (strncmp(e->p, op, k) != 0) return false;
    e->p += k;
    return true;
}

static unsigned long pe_unary(plural_eval *e) {
    if (e->bad || ++e->depth > 64) {
        e->bad = true;
        return 0;
    }
    unsigned long v = 0;
    if (pe_eat(e, "!")) {
        v = !pe_unary(e);
    } else if (pe_eat(e, "(")) {
        v = pe_cond(e);
        if (!pe_eat(e, ")")) e->bad = true;
    } else if (pe_eat(e, "n")) {
        v = e->n;
    } else if (*e->p >= '0' && *e->p <= '9') {
        while (*e->p >= '0' && *e->p <= '9' && v < 100000000ul)
            v = v * 10 + (unsigned long)(*e->p++ - '0');
    } else {
        e->bad = true;
    }
    e->depth--;
    return v;
}

static unsigned long pe_mul(plural_eval *e) {
    unsigned long v = pe_unary(e);
    for (;;) {
        int op = pe_eat(e, "*") ? '*' : pe_eat(e, "/") ? '/' : pe_eat(e, "%") ? '%' : 0;
        if (op == 0 || e->bad) return v;
        unsigned long w = pe_unary(e);
        if (op != '*' && w == 0) {
            e->bad = true;
            return 0;
        }
        v = op == '*' ? v * w : op == '/' ? v / w : v % w;
    }
}

static unsigned long pe_add(plural_eval *e) {
    unsigned long v = pe_mul(e);
    for (;;) {
        if (pe_eat(e, "+"))
            v += pe_mul(e);
        else if (pe_eat(e, "-"))
            v -= pe_mul(e);
        else
            return v;
    }
}

static unsigned long pe_rel(plural_eval *e) {
    unsigned long v = pe_add(e);
    for (;;) {
        if (pe_eat(e, "<="))
            v = v <= pe_add(e);
        else if (pe_eat(e, ">="))
            v = v >= pe_add(e);
        else if (pe_eat(e, "<"))
            v = v < pe_add(e);
        else if (pe_eat(e, ">"))
            v = v > pe_add(e);
        else
            return v;
    }
}

static unsigned long pe_eq(plural_eval *e) {
    unsigned long v = pe_rel(e);
    for (;;) {
        if (pe_eat(e, "=="))
            v = v == pe_rel(e);
        else if (pe_eat(e, "!="))
            v = v != pe_rel(e);
        else
            return v;
    }
}

static unsigned long pe_and(plural_eval *e) {
    unsigned long v = pe_eq(e);
    while (pe_eat(e, "&&")) {
        unsigned long w = pe_eq(e); /* no side effects: both sides evaluated */
        v = v && w;
    }
    return v;
}

static unsigned long pe_or(plural_eval *e) {
    unsigned long v = pe_and(e);
    while (pe_eat(e, "||")) {
        unsigned long w = pe_and(e);
        v = v || w;
    }
    return v;
}

static unsigned long pe_cond(plural_eval *e) {
    if (e->bad || ++e->depth > 64) {
        e->bad = true;
        return 0;
    }
    unsigned long v = pe_or(e);
    if (pe_eat(e, "?")) {
        unsigned long a = pe_cond(e);
        if (!pe_eat(e, ":")) e->bad = true;
        unsigned long b = pe_cond(e);
        v = v ? a : b;
    }
    e->depth--;
    return v;
}

/* Examples of n for each plural form: the first three n in 0..1000 the
** expression maps to it, then ", …" when there are more ("1, 21, 31, …").
** Without Plural-Forms gettext's default, n != 1, applies.  An expression
** that does not evaluate (or maps an n outside the forms) gives none. */
static mt_status plural_examples(app_doc *d, po_doc *po) {
    const char *expr = po->plural_expr ? po->plural_expr : po->have_plural_forms ? NULL : "n != 1";
    if (expr == NULL) return MT_OK;
    char text[PO_MAX_FORMS][64];
    int count[PO_MAX_FORMS] = {0};
    for (unsigned long n = 0; n <= 1000; n++) {
        plural_eval e = {expr, n, false, 0};
        unsigned long k = pe_cond(&e);
        while (*e.p == ' ' || *e.p == '\t')
            e.p++;
        if (*e.p != '\0' || e.bad || k >= (unsigned long)po->nplurals)
            return MT_OK; /* unusable: no examples at all */
        int *c = &count[k];
        size_t len = *c ? strlen(text[k]) : 0;
        if (*c < 3)
            snprintf(text[k] + len, sizeof text[k] - len, "%s%lu", *c ? ", " : "", n);
        else if (*c == 3)
            snprintf(text[k] + len, sizeof text[k] - len, ", \xe2\x80\xa6"); /* … */
        (*c)++;
    }
    for (int k = 0; k < po->nplurals; k++) {
        if (count[k] == 0) continue;
        po->examples[k] = app_doc_strdup(d, text[k], strlen(text[k]));
        if (po->examples[k] == NULL)
            return mt_seterr(MT_ERR_NOMEM, "out of memory reading '%s'", d->path);
    }
    return MT_OK;
}

const char *app_doc_plural_examples(const app_doc *d, int form) {
    if (d->format != APP_DOC_FORMAT_PO || form < 0 || form >= PO_MAX_FORMS) return NULL;
    const po_doc *po = d->impl;
    return po->examples[form];
}

/* Duplicate entries: gettext keys a message by msgctxt (absent differs
** from "") and msgid, and msgfmt refuses a file that defines one twice
** ("duplicate message definition"), so such a file is refused here too,
** naming both lines: a translation saved into either copy would still make
** a catalog that does not compile. */
static int seg_key_cmp(const void *pa, const void *pb) {
    const app_doc_segment *a = *(const app_doc_segment *const *)pa;
    const app_doc_segment *b = *(const app_doc_segment *const *)pb;
    if ((a->context == NULL) != (b->context == NULL)) return a->context == NULL ? -1 : 1;
    int c = a->context ? strcmp(a->context, b->context) : 0;
    if (c == 0) c = strcmp(a->source, b->source);
    if (c == 0) c = (a->line > b->line) - (a->line < b->line);
    return c;
}

static mt_status check_duplicates(app_doc *d) {
    if (d->n_segs < 2) return MT_OK;
    const app_doc_segment **v = mt_try_malloc((size_t)d->n_segs * sizeof *v);
    if (v == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory reading '%s'", d->path);
    for (int64_t i = 0; i < d->n_segs; i++)
        v[i] = &d->segs[i];
    qsort(v, (size_t)d->n_segs, sizeof *v, seg_key_cmp);
    const app_doc_segment *dup = NULL, *first = NULL;
    for (int64_t i = 1; i < d->n_segs; i++) {
        const app_doc_segment *a = v[i - 1], *b = v[i];
        bool same = (a->context == NULL) == (b->context == NULL) &&
                    (a->context == NULL || strcmp(a->context, b->context) == 0) &&
                    strcmp(a->source, b->source) == 0;
        if (!same || (dup != NULL && dup->line <= b->line)) continue;
        dup = b;
        first = a; /* equal keys sort by line: a is the earlier copy */
    }
    mt_status rc = MT_OK;
    if (dup != NULL)
        rc = mt_seterr(MT_ERR_FORMAT,
                       "%s:%lld: duplicate message definition (msgid \"%.40s\"%s%.40s%s), first "
                       "defined at line %lld; remove one of them (msguniq finds them)",
                       d->path, (long long)dup->line, dup->source,
                       dup->context ? ", msgctxt \"" : "", dup->context ? dup->context : "",
                       dup->context ? "\"" : "", (long long)first->line);
    mt_free(v);
    return rc;
}

mt_status app_doc_po_open(app_doc *d) {
    mt_status rc;
    po_parser ps;
    memset(&ps, 0, sizeof ps);
    d->ops = &po_ops;
    po_doc *po = mt_try_calloc(1, sizeof *po);
    if (po == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory reading '%s'", d->path);
    d->impl = po;
    po->nplurals = 2; /* gettext's default without a Plural-Forms header */
    const char *nl = memchr(d->raw, '\n', d->raw_len);
    po->eol = nl && nl > d->raw && nl[-1] == '\r' ? "\r\n" : "\n";
    ps.d = d;
    ps.po = po;
    ps.buf = d->raw;
    ps.len = d->raw_len;
    ps.prev_at = SIZE_MAX;
    rc = po_parse(&ps);
    if (rc == MT_OK) rc = check_duplicates(d);
    if (rc == MT_OK) rc = plural_examples(d, po);
    if (rc != MT_OK) goto fail;
    const char *cs = ps.charset;
    if (cs[0] != '\0' && strcasecmp(cs, "UTF-8") != 0 && strcasecmp(cs, "UTF8") != 0 &&
        strcasecmp(cs, "CHARSET") != 0 && strcasecmp(cs, "ASCII") != 0 &&
        strcasecmp(cs, "US-ASCII") != 0) {
        rc = mt_seterr(MT_ERR_UNSUPPORTED,
                       "%s:%lld: charset %s is not supported, only UTF-8 "
                       "(convert with: msgconv --to-code=UTF-8)",
                       d->path, (long long)ps.header_line, cs);
        goto fail;
    }
    if (ps.bad_utf8_line) {
        rc = mt_seterr(MT_ERR_FORMAT, "%s:%lld: invalid UTF-8 at column %zu", d->path,
                       (long long)ps.bad_utf8_line, ps.bad_utf8_col);
        goto fail;
    }
    /* targets: one per form the file has, or nplurals for plural entries */
    for (int64_t i = 0; i < d->n_segs; i++) {
        po_entry *e = &po->entries[i];
        app_doc_segment *s = &d->segs[i];
        int n = e->plural ? (e->n_forms > po->nplurals ? e->n_forms : po->nplurals) : 1;
        if (n > s->n_targets) {
            char **t = mt_try_realloc(s->targets, (size_t)n * sizeof *t);
            if (t == NULL) goto nomem;
            s->targets = t;
            for (int k = s->n_targets; k < n; k++)
                t[k] = NULL;
            s->n_targets = n;
        }
        bool any = false;
        for (int k = 0; k < n; k++) {
            const char *v = k < e->n_forms ? po->form_text[e->form_first + k] : "";
            mt_free(s->targets[k]);
            s->targets[k] = mt_try_strdup(v);
            if (s->targets[k] == NULL) goto nomem;
            any |= v[0] != '\0';
        }
        s->state = !any       ? APP_DOC_STATE_EMPTY
                   : e->fuzzy ? APP_DOC_STATE_DRAFT
                              : APP_DOC_STATE_CONFIRMED;
    }
    parser_free(&ps);
    return MT_OK;
nomem:
    rc = mt_seterr(MT_ERR_NOMEM, "out of memory reading '%s'", d->path);
fail:
    parser_free(&ps);
    return rc;
}
