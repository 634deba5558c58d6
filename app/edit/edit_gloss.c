/*
** edit_gloss.c: the glossary spans and terms line of a segment
** (edit_gloss.h).
*/
#include <stdio.h>
#include <string.h>

#include "edit_gloss.h"

static void append(char *buf, size_t cap, size_t *at, const char *s) {
    size_t n = strlen(s);
    if (*at + n >= cap) n = *at < cap ? cap - 1 - *at : 0;
    memcpy(buf + *at, s, n);
    *at += n;
    buf[*at] = '\0';
}

mt_status app_edit_gloss_terms(const app_glossary *g, const char *source, ui_span **spans,
                               int32_t *n, char **line) {
    *spans = NULL;
    *n = 0;
    *line = NULL;
    app_gloss_match *m = NULL;
    int32_t nm = 0;
    mt_status rc = app_glossary_match(g, source, &m, &nm);
    if (rc != MT_OK || nm == 0) return rc;
    ui_span *sp = mt_try_calloc((size_t)nm, sizeof *sp);
    char *buf = mt_try_malloc(APP_EDIT_GLOSS_LINE_MAX + 8);
    if (sp == NULL || buf == NULL) {
        mt_free(sp);
        mt_free(buf);
        mt_free(m);
        return mt_seterr(MT_ERR_NOMEM, "edit: out of memory");
    }
    int32_t ns = 0;
    size_t at = 0;
    const size_t cap = APP_EDIT_GLOSS_LINE_MAX;
    buf[0] = '\0';
    append(buf, cap, &at, "Terms: ");
    bool any = false, cut = false;
    for (int32_t i = 0; i < nm; i++) {
        if (ns == 0 || sp[ns - 1].start != m[i].start || sp[ns - 1].len != m[i].len)
            sp[ns++] = (ui_span){m[i].start, m[i].len};
        const app_gloss_entry *e = app_glossary_entry(g, m[i].entry);
        bool seen = false; /* the same pair listed already */
        for (int32_t k = 0; k < i && !seen; k++) {
            const app_gloss_entry *f = app_glossary_entry(g, m[k].entry);
            seen = strcmp(f->source, e->source) == 0 && strcmp(f->target, e->target) == 0;
        }
        if (seen || cut) continue;
        size_t before = at;
        if (any) append(buf, cap, &at, " \xc2\xb7 ");
        append(buf, cap, &at, e->source);
        append(buf, cap, &at, " \xe2\x86\x92 ");
        append(buf, cap, &at, e->target);
        if (e->note && e->note[0]) {
            append(buf, cap, &at, " (");
            append(buf, cap, &at, e->note);
            append(buf, cap, &at, ")");
        }
        if (at >= cap - 1) { /* full: end at the last whole pair */
            at = before;
            buf[at] = '\0';
            append(buf, cap + 8, &at, " \xe2\x80\xa6");
            cut = true;
        }
        any = true;
    }
    /* tabs and line breaks of notes would break the line */
    for (char *p = buf; *p; p++)
        if (*p == '\t' || *p == '\n' || *p == '\r') *p = ' ';
    mt_free(m);
    *spans = sp;
    *n = ns;
    *line = buf;
    return MT_OK;
}
