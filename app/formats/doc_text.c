/*
** doc_text.c: line-based documents: plain text, Moses-style parallel text
** and TSV.
**
** File format (all three): UTF-8, one segment per line.
**
**   BYTES              MEANING
**   EF BB BF           optional byte-order mark at offset 0: skipped (TSV:
**                      written back when the file is rewritten)
**   ... 0A             a line ending in LF
**   ... 0D 0A          a line ending in CRLF (the CR is not part of the text)
**   ... <EOF>          a last line without line end
**   09 (TSV only)      separates source and target; a line without a tab
**                      is a source with an empty target; a second tab is
**                      an error
**
** An empty file has no segments; "a\nb\n" and "a\nb" have two.  Empty lines
** are segments too (with an empty source), so that line i of the source
** always pairs with line i of the target.  An empty source line is
** translated by an empty line: with an empty target it is CONFIRMED, from
** the start (issue 29: it could not be confirmed, and translators moved
** the next line's translation up into it).
**
** Writing.  text/parallel write the targets to the target file, one line
** each, with the line end of the target file when it existed (otherwise of
** the source file) and a final line end iff that file had one, or when the
** last target is empty (without it, that line would not be there: the
** file must have one line per source line).  An empty or missing target
** file means "nothing translated yet".  TSV copies
** unchanged lines byte for byte and writes changed ones as
** source TAB target + the line's own line end.
*/
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "doc.h"
#include "vocab.h"

typedef struct text_line {
    size_t beg, end, next; /* text [beg, end), next line at next      */
} text_line;

typedef struct text_doc {
    text_line *lines; /* TSV: the lines of the file, one per segment   */
    bool tsv, bom;
    const char *eol; /* line end of the file we write                 */
    bool final_eol;  /* whether that file ends with a line end        */
} text_doc;

/* Splits buf into lines; checks UTF-8 (errors name path and line). */
static mt_status split_lines(const char *path, const char *buf, size_t len, text_line **out,
                             int64_t *n_out, bool *bom, const char **eol, bool *final_eol) {
    text_line *lines = NULL;
    int64_t n = 0, cap = 0;
    size_t pos = 0;
    *bom = len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0;
    if (*bom) pos = 3;
    *eol = NULL;
    *final_eol = true;
    while (pos < len) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - buf) : len;
        size_t next = nl ? end + 1 : len;
        if (nl == NULL) *final_eol = false;
        bool cr = end > pos && buf[end - 1] == '\r';
        if (*eol == NULL && nl) *eol = cr ? "\r\n" : "\n";
        if (cr) end--;
        size_t bad;
        if (!mt_utf8_valid(buf + pos, end - pos, &bad)) {
            mt_free(lines);
            return mt_seterr(MT_ERR_FORMAT, "%s:%lld: invalid UTF-8 at column %zu", path,
                             (long long)n + 1, bad + 1);
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            text_line *nl2 = mt_try_realloc(lines, (size_t)cap * sizeof *nl2);
            if (nl2 == NULL) {
                mt_free(lines);
                return mt_seterr(MT_ERR_NOMEM, "out of memory reading '%s'", path);
            }
            lines = nl2;
        }
        lines[n++] = (text_line){pos, end, next};
        pos = next;
    }
    if (*eol == NULL) *eol = "\n";
    *out = lines;
    *n_out = n;
    return MT_OK;
}

static mt_status text_set_target(app_doc *d, int64_t i, int form, const char *text) {
    text_doc *t = d->impl;
    const char *bad = strpbrk(text, t->tsv ? "\r\n\t" : "\r\n");
    if (bad)
        return mt_seterr(MT_ERR_INVALID, "'%s' segment %lld: a %s translation cannot contain %s",
                         d->path, (long long)i, t->tsv ? "TSV" : "line-aligned",
                         *bad == '\t' ? "a tab" : "a line break");
    return MT_OK;
}

static mt_status text_save(app_doc *d, FILE *f, app_doc_save_params p) {
    text_doc *t = d->impl;
    (void)p;
    if (t->tsv) {
        bool any = false;
        for (int64_t i = 0; i < d->n_segs; i++)
            any |= d->segs[i].changed;
        if (!any) {
            fwrite(d->raw, 1, d->raw_len, f);
            return MT_OK;
        }
        if (t->bom) fwrite("\xef\xbb\xbf", 1, 3, f);
        for (int64_t i = 0; i < d->n_segs; i++) {
            const text_line *l = &t->lines[i];
            if (!d->segs[i].changed) {
                fwrite(d->raw + l->beg, 1, l->next - l->beg, f);
                continue;
            }
            fputs(d->segs[i].source, f);
            fputc('\t', f);
            fputs(d->segs[i].targets[0], f);
            fwrite(d->raw + l->end, 1, l->next - l->end, f); /* its own line end */
        }
        return MT_OK;
    }
    for (int64_t i = 0; i < d->n_segs; i++) {
        const char *tg = d->segs[i].targets[0];
        /* an empty last line needs its line end to be a line at all (as
        ** the only line it may be an empty file: that reads as empty too) */
        bool last_empty = tg[0] == '\0' && d->n_segs > 1;
        fputs(tg, f);
        if (i + 1 < d->n_segs || t->final_eol || last_empty) fputs(t->eol, f);
    }
    return MT_OK;
}

static void text_free(app_doc *d) {
    text_doc *t = d->impl;
    if (t == NULL) return;
    mt_free(t->lines);
    mt_free(t);
    d->impl = NULL;
}

static const app_doc_ops text_ops = {text_set_target, text_save, text_free};

static char *dup_n(const char *s, size_t n) {
    char *c = mt_try_malloc(n + 1);
    if (c) {
        memcpy(c, s, n);
        c[n] = '\0';
    }
    return c;
}

static mt_status set_initial_target(app_doc_segment *seg, const char *s, size_t n) {
    if (n == 0) return MT_OK;
    char *c = dup_n(s, n);
    if (c == NULL) return MT_ERR_NOMEM;
    mt_free(seg->targets[0]);
    seg->targets[0] = c;
    seg->state = APP_DOC_STATE_CONFIRMED;
    return MT_OK;
}

/* Parallel text: reads the target file when it exists, line-aligned. */
static mt_status read_targets(app_doc *d, text_doc *t, const char *tgt_path) {
    mt_status rc;
    char *buf = NULL;
    size_t len = 0;
    text_line *lines = NULL;
    int64_t n = 0;
    bool bom;
    d->target_path = mt_try_strdup(tgt_path);
    if (d->target_path == NULL)
        return mt_seterr(MT_ERR_NOMEM, "out of memory reading '%s'", tgt_path);
    struct stat st;
    if (stat(tgt_path, &st) != 0 && errno == ENOENT) return MT_OK; /* not translated yet */
    rc = app_doc_read_file(tgt_path, &buf, &len);
    if (rc != MT_OK || len == 0) goto fail; /* an empty file: not translated yet */
    const char *src_eol = t->eol;
    rc = split_lines(tgt_path, buf, len, &lines, &n, &bom, &t->eol, &t->final_eol);
    if (rc != MT_OK) goto fail;
    if (memchr(buf, '\n', len) == NULL) t->eol = src_eol; /* no line end to copy */
    if (n != d->n_segs) {
        rc = mt_seterr(MT_ERR_FORMAT, "'%s' has %lld lines but '%s' has %lld: not line-aligned",
                       d->path, (long long)d->n_segs, tgt_path, (long long)n);
        goto fail;
    }
    for (int64_t i = 0; i < n; i++) {
        rc = set_initial_target(&d->segs[i], buf + lines[i].beg, lines[i].end - lines[i].beg);
        if (rc != MT_OK) {
            rc = mt_seterr(rc, "out of memory reading '%s'", tgt_path);
            goto fail;
        }
    }
fail:
    mt_free(lines);
    mt_free(buf);
    return rc;
}

mt_status app_doc_text_open(app_doc *d, const char *tgt_path, bool tsv) {
    mt_status rc;
    text_doc *t = mt_try_calloc(1, sizeof *t);
    if (t == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory reading '%s'", d->path);
    d->ops = &text_ops;
    d->impl = t;
    t->tsv = tsv;
    int64_t n = 0;
    rc = split_lines(d->path, d->raw, d->raw_len, &t->lines, &n, &t->bom, &t->eol, &t->final_eol);
    if (rc != MT_OK) return rc;
    for (int64_t i = 0; i < n; i++) {
        const text_line *l = &t->lines[i];
        const char *s = d->raw + l->beg;
        size_t len = l->end - l->beg;
        const char *tab = tsv ? memchr(s, '\t', len) : NULL;
        size_t src_len = tab ? (size_t)(tab - s) : len;
        if (tab && memchr(tab + 1, '\t', len - src_len - 1))
            return mt_seterr(MT_ERR_FORMAT,
                             "%s:%lld: more than one tab (expected source<TAB>target)", d->path,
                             (long long)i + 1);
        app_doc_segment *seg;
        rc = app_doc_add_segment(d, 1, &seg);
        if (rc != MT_OK) return rc;
        seg->line = i + 1;
        seg->source = app_doc_strdup(d, s, src_len);
        if (seg->source == NULL ||
            (tab && set_initial_target(seg, tab + 1, len - src_len - 1) != MT_OK))
            return mt_seterr(MT_ERR_NOMEM, "out of memory reading '%s'", d->path);
        if (src_len == 0) seg->state = APP_DOC_STATE_CONFIRMED; /* nothing to translate */
    }
    if (tgt_path) return read_targets(d, t, tgt_path);
    return MT_OK;
}
