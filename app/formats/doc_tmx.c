/*
** doc_tmx.c: TMX 1.4 export of confirmed segments (translation memory
** exchange, LISA/GALA TMX 1.4b).  Written, not read, by this module; the
** layout it writes:
**
**   <?xml version="1.0" encoding="UTF-8"?>
**   <tmx version="1.4">
**     <header creationtool="mtpe" creationtoolversion="0.1.0"
**             segtype="sentence" o-tmf="mtpe" adminlang="en"
**             srclang="en" datatype="plaintext"/>
**     <body>
**       <tu creationdate="20240131T235959Z">      (omitted when time <= 0)
**         <tuv xml:lang="en"><seg>source</seg></tuv>
**         <tuv xml:lang="de"><seg>target</seg></tuv>
**       </tu>
**     </body>
**   </tmx>
**
** Escaping: & < > everywhere, " in attributes, CR as &#13; (an XML parser
** would turn a literal CR into LF).  Other C0 controls cannot appear in XML
** 1.0 at all, so a row holding one is refused rather than silently changed.
*/
#include <string.h>
#include <time.h>

#include "doc.h"
#include "vocab.h"

#ifndef MT_VERSION
#define MT_VERSION "0"
#endif

typedef struct tmx_ctx {
    const app_doc_tmx_row *rows;
    int64_t n;
    const char *srclang;
} tmx_ctx;

static void put_escaped(FILE *f, const char *s, bool attr) {
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '\r': fputs("&#13;", f); break;
        case '"':
            if (attr)
                fputs("&quot;", f);
            else
                fputc('"', f);
            break;
        case '\n':
        case '\t':
            /* in attributes a parser normalises them to spaces */
            if (attr)
                fprintf(f, "&#%d;", *s);
            else
                fputc(*s, f);
            break;
        default: fputc(*s, f);
        }
    }
}

static mt_status check_text(int64_t row, const char *what, const char *s) {
    if (s == NULL)
        return mt_seterr(MT_ERR_INVALID, "TMX row %lld: %s is NULL", (long long)row, what);
    size_t n = strlen(s), bad;
    if (!mt_utf8_valid(s, n, &bad))
        return mt_seterr(MT_ERR_INVALID, "TMX row %lld: %s has invalid UTF-8 at byte %zu",
                         (long long)row, what, bad);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
            return mt_seterr(MT_ERR_INVALID,
                             "TMX row %lld: %s has control character U+%04X, which XML cannot hold",
                             (long long)row, what, c);
    }
    return MT_OK;
}

static mt_status tmx_writer(FILE *f, void *user) {
    const tmx_ctx *c = user;
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<tmx version=\"1.4\">\n", f);
    fputs("  <header creationtool=\"mtpe\" creationtoolversion=\"", f);
    put_escaped(f, MT_VERSION, true);
    fputs("\" segtype=\"sentence\" o-tmf=\"mtpe\" adminlang=\"en\" srclang=\"", f);
    put_escaped(f, c->srclang, true);
    fputs("\" datatype=\"plaintext\"/>\n  <body>\n", f);
    for (int64_t i = 0; i < c->n; i++) {
        const app_doc_tmx_row *r = &c->rows[i];
        fputs("    <tu", f);
        if (r->time > 0) {
            time_t t = (time_t)r->time;
            struct tm tm;
            char date[32];
            if (gmtime_r(&t, &tm) == NULL ||
                strftime(date, sizeof date, "%Y%m%dT%H%M%SZ", &tm) == 0)
                return mt_seterr(MT_ERR_INVALID, "TMX row %lld: time %lld out of range",
                                 (long long)i, (long long)r->time);
            fprintf(f, " creationdate=\"%s\"", date);
        }
        fputs(">\n      <tuv xml:lang=\"", f);
        put_escaped(f, r->src_lang, true);
        fputs("\"><seg>", f);
        put_escaped(f, r->source, false);
        fputs("</seg></tuv>\n      <tuv xml:lang=\"", f);
        put_escaped(f, r->trg_lang, true);
        fputs("\"><seg>", f);
        put_escaped(f, r->target, false);
        fputs("</seg></tuv>\n    </tu>\n", f);
    }
    fputs("  </body>\n</tmx>\n", f);
    return MT_OK;
}

/* Checks the rows and finds the header's srclang. */
static mt_status check_rows(const app_doc_tmx_row *rows, int64_t n_rows, const char **out) {
    const char *srclang = n_rows > 0 ? rows[0].src_lang : "*all*";
    for (int64_t i = 0; i < n_rows; i++) {
        const app_doc_tmx_row *r = &rows[i];
        mt_status rc = check_text(i, "source", r->source);
        if (rc == MT_OK) rc = check_text(i, "target", r->target);
        if (rc == MT_OK) rc = check_text(i, "source language", r->src_lang);
        if (rc == MT_OK) rc = check_text(i, "target language", r->trg_lang);
        if (rc != MT_OK) return rc;
        if (r->src_lang[0] == '\0' || r->trg_lang[0] == '\0')
            return mt_seterr(MT_ERR_INVALID, "TMX row %lld: empty language code", (long long)i);
        if (strcmp(r->src_lang, srclang) != 0) srclang = "*all*";
    }
    *out = srclang;
    return MT_OK;
}

mt_status app_doc_tmx_write(const char *path, const app_doc_tmx_row *rows, int64_t n_rows) {
    if (path == NULL || n_rows < 0 || (n_rows > 0 && rows == NULL))
        return mt_seterr(MT_ERR_INVALID, "app_doc_tmx_write: bad arguments");
    const char *srclang = NULL;
    mt_status rc = check_rows(rows, n_rows, &srclang);
    if (rc != MT_OK) return rc;
    tmx_ctx c = {rows, n_rows, srclang};
    return app_doc_atomic_write(path, tmx_writer, &c);
}

mt_status app_doc_tmx_fwrite(FILE *f, const app_doc_tmx_row *rows, int64_t n_rows) {
    if (f == NULL || n_rows < 0 || (n_rows > 0 && rows == NULL))
        return mt_seterr(MT_ERR_INVALID, "app_doc_tmx_fwrite: bad arguments");
    const char *srclang = NULL;
    mt_status rc = check_rows(rows, n_rows, &srclang);
    if (rc != MT_OK) return rc;
    tmx_ctx c = {rows, n_rows, srclang};
    return tmx_writer(f, &c);
}
