/*
** gec.c: grammar checking of the edit field (ui.h "Grammar checking"):
** the typing-pause timer that asks hooks.gec_request, the posted
** corrections, their marks and line, and M-g / M-G.
*/
#include <stdio.h>
#include <string.h>

#include "editor.h"

#define GEC_DISMISSED_MAX 64

typedef struct ed_gec {
    char *seen; /* the field's text when it last changed (seg seen_seg) */
    int64_t seen_seg;
    int64_t seen_ms;
    bool asked;         /* seen went to hooks.gec_request                */
    ed_gec_result *res; /* the latest result for the current segment    */
    /* dismissed corrections, "old\x1fnew" */
    char *dismissed[GEC_DISMISSED_MAX];
    int n_dismissed;
} ed_gec;

void ed_gec_result_free(ed_gec_result *r) {
    if (!r) return;
    for (int32_t i = 0; i < r->n; i++)
        mt_free(r->fix[i].with);
    mt_free(r->fix);
    mt_free(r->text);
    mt_free(r);
}

mt_status ed_gec_result_copy(int64_t seg, const char *text, const ui_gec_fix *f, int32_t n,
                             ed_gec_result **out) {
    *out = NULL;
    if (text == NULL || n < 0 || (n > 0 && f == NULL))
        return mt_seterr(MT_ERR_INVALID, "ui_post_gec: NULL text or fixes");
    int32_t len = (int32_t)strlen(text), end = 0;
    for (int32_t i = 0; i < n; i++) {
        if (f[i].start < end || f[i].len < 0 || f[i].start + f[i].len > len || f[i].with == NULL)
            return mt_seterr(MT_ERR_INVALID, "ui_post_gec: fix %d out of order or outside", i);
        end = f[i].start + f[i].len;
    }
    ed_gec_result *r = mt_try_calloc(1, sizeof *r);
    if (!r) return mt_seterr(MT_ERR_NOMEM, "ui_post_gec: out of memory");
    r->seg = seg;
    r->text = mt_try_strdup(text);
    r->fix = mt_try_calloc((size_t)n + 1, sizeof *r->fix);
    bool ok = r->text && r->fix;
    for (int32_t i = 0; ok && i < n; i++) {
        r->fix[i] = (ed_gec_fix){f[i].start, f[i].len, mt_try_strdup(f[i].with)};
        ok = r->fix[i].with != NULL;
        r->n = i + 1;
    }
    if (!ok) {
        ed_gec_result_free(r);
        return mt_seterr(MT_ERR_NOMEM, "ui_post_gec: out of memory");
    }
    *out = r;
    return MT_OK;
}

static ed_gec *state(ui_editor *ed) {
    if (!ed->gec) {
        ed->gec = mt_try_calloc(1, sizeof *ed->gec);
        if (ed->gec) ed->gec->seen_seg = -1;
    }
    return ed->gec;
}

void ed_gec_free(ui_editor *ed) {
    ed_gec *g = ed->gec;
    if (!g) return;
    mt_free(g->seen);
    ed_gec_result_free(g->res);
    for (int i = 0; i < g->n_dismissed; i++)
        mt_free(g->dismissed[i]);
    mt_free(g);
    ed->gec = NULL;
}

/* "old\x1fnew" of fix f of text (mt_malloc'd). */
static char *fix_key(const char *text, const ed_gec_fix *f) {
    size_t wl = strlen(f->with);
    char *k = mt_try_malloc((size_t)f->len + wl + 2);
    if (k)
        snprintf(k, (size_t)f->len + wl + 2, "%.*s\x1f%s", (int)f->len, text + f->start, f->with);
    return k;
}

static bool is_dismissed(const ed_gec *g, const char *text, const ed_gec_fix *f) {
    char *k = fix_key(text, f);
    bool d = false;
    for (int i = 0; k && i < g->n_dismissed && !d; i++)
        d = strcmp(g->dismissed[i], k) == 0;
    mt_free(k);
    return d;
}

/* Removes fix i of r. */
static void drop_fix(ed_gec_result *r, int32_t i) {
    mt_free(r->fix[i].with);
    memmove(r->fix + i, r->fix + i + 1, sizeof *r->fix * (size_t)(r->n - i - 1));
    r->n--;
}

void ed_gec_take(ui_editor *ed, ed_gec_result *r) {
    ed_gec *g = state(ed);
    if (!g || r->seg != ed->cur) {
        ed_gec_result_free(r);
        return;
    }
    for (int32_t i = r->n - 1; i >= 0; i--)
        if (is_dismissed(g, r->text, &r->fix[i])) drop_fix(r, i);
    ed_gec_result_free(g->res);
    g->res = r;
}

void ed_gec_tick(ui_editor *ed, int64_t now_ms) {
    if (ed->hooks.gec_request == NULL || ed->cur < 0 || ed->locked) return;
    ed_gec *g = state(ed);
    if (!g) return;
    if (g->seen_seg != ed->cur || g->seen == NULL || strcmp(g->seen, ed->field.text) != 0) {
        char *t = mt_try_strdup(ed->field.text);
        if (!t) return;
        mt_free(g->seen);
        g->seen = t;
        g->seen_seg = ed->cur;
        g->seen_ms = now_ms;
        g->asked = false;
        return;
    }
    if (g->asked || now_ms - g->seen_ms < UI_GEC_PAUSE_MS || ed->field.len == 0) return;
    g->asked = true;
    ed->hooks.gec_request(ed->hooks.user, ed->cur, g->seen);
}

int64_t ed_gec_deadline(const ui_editor *ed) {
    const ed_gec *g = ed->gec;
    if (ed->hooks.gec_request == NULL || !g || g->asked || !g->seen || g->seen[0] == '\0')
        return INT64_MAX;
    return g->seen_ms + UI_GEC_PAUSE_MS;
}

const ed_gec_fix *ed_gec_fixes(const ui_editor *ed, int *n) {
    *n = 0;
    const ed_gec *g = ed->gec;
    if (!g || !g->res || g->res->seg != ed->cur || ed->cur < 0 || g->res->n == 0 ||
        strcmp(g->res->text, ed->field.text) != 0)
        return NULL;
    *n = g->res->n;
    return g->res->fix;
}

bool ed_gec_line(const ui_editor *ed, char *buf, size_t size) {
    int n;
    const ed_gec_fix *f = ed_gec_fixes(ed, &n);
    if (!f || size == 0) return false;
    size_t o = (size_t)snprintf(buf, size, "Grammar: ");
    for (int i = 0; i < n && o < size; i++) {
        const char *t = ed->field.text;
        if (f[i].len > 0)
            o += (size_t)snprintf(buf + o, size - o, "%s%.*s \xE2\x86\x92 %s",
                                  i ? " \xC2\xB7 " : "", (int)f[i].len, t + f[i].start,
                                  f[i].with[0] ? f[i].with : "(delete)");
        else
            o += (size_t)snprintf(buf + o, size - o, "%s+ %s", i ? " \xC2\xB7 " : "", f[i].with);
    }
    if (o < size) snprintf(buf + o, size - o, "   M-g apply, M-G dismiss");
    return true;
}

/* The fix M-g / M-G act on: at the cursor, else the next one after it,
** else the first; -1 when none. */
static int pick(const ui_editor *ed, const ed_gec_fix *f, int n) {
    size_t cur = ed->field.cur;
    for (int i = 0; i < n; i++)
        if ((size_t)(f[i].start + f[i].len) >= cur) return i;
    return n > 0 ? 0 : -1;
}

static bool usable(ui_editor *ed, int64_t now_ms) {
    if (ed->hooks.gec_request == NULL) {
        ed_message(ed, MT_LOG_INFO, now_ms, "grammar checking is off (mtpe edit --gec MODEL)");
        return false;
    }
    if (ed->locked) {
        ed_message(ed, MT_LOG_INFO, now_ms, "confirmed: Enter reopens the segment for editing");
        return false;
    }
    return true;
}

/* The correction M-g / M-G act on (pick), or -1 after saying why none. */
static int target_fix(ui_editor *ed, int64_t now_ms) {
    if (!usable(ed, now_ms)) return -1;
    int n;
    const ed_gec_fix *f = ed_gec_fixes(ed, &n);
    int i = f ? pick(ed, f, n) : -1;
    if (i < 0) ed_message(ed, MT_LOG_INFO, now_ms, "no grammar correction for this text");
    return i;
}

void ed_gec_accept(ui_editor *ed, int64_t now_ms) {
    int i = target_fix(ed, now_ms);
    if (i < 0) return;
    ed_gec_result *r = ed->gec->res;
    ed_gec_fix x = r->fix[i];
    char old[256];
    snprintf(old, sizeof old, "%.*s", (int)x.len, r->text + x.start);
    char *with = mt_try_strdup(x.with);
    if (!with || ed_field_replace(ed, (size_t)x.start, (size_t)x.len, with, now_ms) != MT_OK) {
        mt_free(with);
        ed_message(ed, MT_LOG_ERROR, now_ms, "cannot apply the correction: %s", mt_errmsg());
        return;
    }
    /* the other corrections still hold for the new text: shift them */
    int32_t delta = (int32_t)strlen(with) - x.len;
    drop_fix(r, i);
    for (int32_t k = i; k < r->n; k++)
        r->fix[k].start += delta;
    char *t = mt_try_strdup(ed->field.text);
    if (t) {
        mt_free(r->text);
        r->text = t;
    }
    if (ed->gec->seen && t) { /* the new text needs no new check of its own */
        char *s = mt_try_strdup(t);
        if (s) {
            mt_free(ed->gec->seen);
            ed->gec->seen = s;
            ed->gec->asked = true;
        }
    }
    if (x.len > 0)
        ed_message(ed, MT_LOG_INFO, now_ms, "grammar: '%s' \xE2\x86\x92 '%s' (C-z undoes)", old,
                   with);
    else
        ed_message(ed, MT_LOG_INFO, now_ms, "grammar: inserted '%s' (C-z undoes)", with);
    mt_free(with);
}

void ed_gec_dismiss(ui_editor *ed, int64_t now_ms) {
    int i = target_fix(ed, now_ms);
    if (i < 0) return;
    ed_gec *g = ed->gec;
    char *k = fix_key(g->res->text, &g->res->fix[i]);
    if (k) {
        if (g->n_dismissed == GEC_DISMISSED_MAX) {
            mt_free(g->dismissed[0]);
            memmove(g->dismissed, g->dismissed + 1, sizeof(char *) * (GEC_DISMISSED_MAX - 1));
            g->n_dismissed--;
        }
        g->dismissed[g->n_dismissed++] = k;
    }
    drop_fix(g->res, i);
    ed_message(ed, MT_LOG_INFO, now_ms, "grammar correction dismissed");
}
