/*
** replace.c: search and replace over the document (:find, :replace, :undo).
**
**   matcher    a pattern compiled once: a literal (optionally case-folded,
**              code point by code point, so "Ä" finds "ä" and byte lengths
**              may differ) or a POSIX extended regex (regcomp; multibyte
**              aware in the UTF-8 locale ui_run sets up).  -w keeps only
**              occurrences with no word character (ui_is_word_cp) either
**              side.  An occurrence never starts or ends inside a UTF-8
**              character and is never empty.
**   :find      the next segment whose source and/or target has an
**              occurrence (always case-insensitive, wraps).
**   :replace   works on the TRANSLATIONS only (sources are read-only): the
**              targets the translator has, drafts (edited) and confirmed
**              ones; machine translations nobody took are suggestions, not
**              targets, and stay as they are.  A draft in the field is
**              first stored as the segment's draft, as if the translator
**              had left it.  Segments are visited from the current one on,
**              wrapping, each once; every occurrence is shown highlighted
**              in its segment (the editor goes there) and the translator
**              answers y (replace), n (skip), a (this and all the remaining
**              ones), q / Esc (stop).  The search goes on after the text
**              just put in, so a NEW containing OLD does not loop.
**              A segment's answers reach the store when the operation
**              leaves the segment (next segment, end or stop) through
**              ui_hooks.replace, once per segment: a confirmed segment
**              stays confirmed (an edit event and a new confirmation with
**              the new text: the translator approved the change by
**              answering y), a draft stays a draft.  The summary says
**              "replaced 7 of 9 occurrences in 5 segments".
**   :undo      (or C-z right after the :replace) puts the old text back in
**              every segment the last :replace changed, through the same
**              hook and with the same status, so the undo is stored too;
**              a segment edited since is kept as it is (and counted).
*/
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <wctype.h>

#include "editor.h"

/* ================================================================= UTF-8 */

static bool at_boundary(const char *s, size_t n, size_t i) {
    return i == 0 || i >= n || ((unsigned char)s[i] & 0xC0) != 0x80;
}

/* Simple case folding: towlower (the locale's tables), with Latin-1,
** Latin Extended-A, Greek and Cyrillic capitals folded by hand for the C
** locale. */
static uint32_t fold_cp(uint32_t cp) {
    if (cp < 0x80) return (uint32_t)tolower((int)cp);
    wint_t l = towlower((wint_t)cp);
    if ((uint32_t)l != cp) return (uint32_t)l;
    if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 0x20;
    if (cp >= 0x100 && cp <= 0x137 && (cp & 1) == 0) return cp + 1;
    if (cp >= 0x14A && cp <= 0x177 && (cp & 1) == 0) return cp + 1;
    if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 0x20;
    if (cp >= 0x410 && cp <= 0x42F) return cp + 0x20;
    if (cp >= 0x400 && cp <= 0x40F) return cp + 0x50;
    if (cp == 0x1E9E) return 0xDF; /* capital sharp s */
    return cp;
}

/* ================================================================ matcher */

mt_status ui_matcher_init(ui_matcher *m, const char *pattern, int flags) {
    memset(m, 0, sizeof *m);
    m->flags = flags;
    if (pattern == NULL || pattern[0] == '\0')
        return mt_seterr(MT_ERR_INVALID, "the search text is empty");
    if (flags & UI_FIND_REGEX) {
        int rc = regcomp(&m->re, pattern, REG_EXTENDED | ((flags & UI_FIND_ICASE) ? REG_ICASE : 0));
        if (rc != 0) {
            char err[200];
            regerror(rc, &m->re, err, sizeof err);
            return mt_seterr(MT_ERR_INVALID, "bad regular expression '%.60s': %s", pattern, err);
        }
        m->have_re = true;
        return MT_OK;
    }
    m->pat = mt_try_strdup(pattern);
    if (m->pat == NULL) return mt_seterr(MT_ERR_NOMEM, "find: out of memory");
    m->pat_len = strlen(pattern);
    return MT_OK;
}

void ui_matcher_free(ui_matcher *m) {
    if (m->have_re) regfree(&m->re);
    mt_free(m->pat);
    memset(m, 0, sizeof *m);
}

/* Length of the literal occurrence at s[i], 0 when there is none. */
static size_t literal_at(const ui_matcher *m, const char *s, size_t n, size_t i) {
    if (!(m->flags & UI_FIND_ICASE)) {
        return n - i >= m->pat_len && memcmp(s + i, m->pat, m->pat_len) == 0 ? m->pat_len : 0;
    }
    size_t j = 0, k = i;
    while (j < m->pat_len) {
        if (k >= n) return 0;
        uint32_t a, b;
        size_t la = mt_utf8_decode(m->pat + j, m->pat_len - j, &a);
        size_t lb = mt_utf8_decode(s + k, n - k, &b);
        if (fold_cp(a) != fold_cp(b)) return 0;
        j += la, k += lb;
    }
    return k - i;
}

static bool word_ok(const ui_matcher *m, const char *s, size_t n, size_t a, size_t b) {
    if (!(m->flags & UI_FIND_WORD)) return true;
    if (a > 0) {
        size_t p = ui_utf8_prev(s, a);
        uint32_t cp;
        mt_utf8_decode(s + p, a - p, &cp);
        if (ui_is_word_cp(cp)) return false;
    }
    if (b < n) {
        uint32_t cp;
        mt_utf8_decode(s + b, n - b, &cp);
        if (ui_is_word_cp(cp)) return false;
    }
    return true;
}

bool ui_matcher_next(const ui_matcher *m, const char *s, size_t n, size_t from, ui_match *out) {
    memset(out, 0, sizeof *out);
    for (int g = 0; g < UI_MATCH_GROUPS; g++)
        out->g_start[g] = out->g_end[g] = (size_t)-1;
    size_t i = from;
    while (i < n && !at_boundary(s, n, i))
        i++;
    while (i < n) {
        size_t a, b;
        if (m->have_re) {
            regmatch_t pm[UI_MATCH_GROUPS];
            if (regexec(&m->re, s + i, UI_MATCH_GROUPS, pm, i > 0 ? REG_NOTBOL : 0) != 0)
                return false;
            a = i + (size_t)pm[0].rm_so, b = i + (size_t)pm[0].rm_eo;
            if (b > a && b <= n && at_boundary(s, n, a) && at_boundary(s, n, b) &&
                word_ok(m, s, n, a, b)) {
                out->start = a, out->end = b;
                for (int g = 0; g < UI_MATCH_GROUPS; g++)
                    if (pm[g].rm_so >= 0) {
                        out->g_start[g] = i + (size_t)pm[g].rm_so;
                        out->g_end[g] = i + (size_t)pm[g].rm_eo;
                    }
                return true;
            }
            /* empty, inside a character or not a whole word: look again
            ** one character after its start */
            i = ui_utf8_next(s, n, a);
            continue;
        }
        size_t len = literal_at(m, s, n, i);
        if (len > 0 && at_boundary(s, n, i + len) && word_ok(m, s, n, i, i + len)) {
            out->start = i, out->end = i + len;
            out->g_start[0] = i, out->g_end[0] = i + len;
            return true;
        }
        i = ui_utf8_next(s, n, i);
    }
    return false;
}

/* A growing string. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = mt_try_realloc(b->p, cap);
        if (p == NULL) {
            b->oom = true;
            return;
        }
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static mt_status sb_done(sbuf *b, char **out) {
    if (!b->oom && b->p == NULL) sb_add(b, "", 0);
    if (b->oom) {
        mt_free(b->p);
        *out = NULL;
        return mt_seterr(MT_ERR_NOMEM, "replace: out of memory");
    }
    *out = b->p;
    return MT_OK;
}

mt_status ui_replacement(const ui_matcher *m, const char *s, const ui_match *mt, const char *repl,
                         char **out) {
    sbuf b = {0};
    if (!m->have_re) {
        sb_add(&b, repl, strlen(repl));
        return sb_done(&b, out);
    }
    for (const char *p = repl; *p; p++) {
        if (p[0] == '\\' && p[1] >= '0' && p[1] <= '9') {
            int g = p[1] - '0';
            if (mt->g_start[g] != (size_t)-1)
                sb_add(&b, s + mt->g_start[g], mt->g_end[g] - mt->g_start[g]);
            p++;
        } else if (p[0] == '\\' && p[1] == '\\') {
            sb_add(&b, "\\", 1);
            p++;
        } else {
            sb_add(&b, p, 1);
        }
    }
    return sb_done(&b, out);
}

mt_status ui_replace_all(const ui_matcher *m, const char *s, const char *repl, char **out,
                         int *count) {
    sbuf b = {0};
    size_t n = strlen(s), pos = 0;
    *count = 0;
    ui_match mt;
    while (pos <= n && ui_matcher_next(m, s, n, pos, &mt)) {
        char *r;
        mt_status rc = ui_replacement(m, s, &mt, repl, &r);
        if (rc != MT_OK) {
            mt_free(b.p);
            return rc;
        }
        sb_add(&b, s + pos, mt.start - pos);
        sb_add(&b, r, strlen(r));
        mt_free(r);
        pos = mt.end;
        (*count)++;
    }
    sb_add(&b, s + pos, n - pos);
    return sb_done(&b, out);
}

/* ================================================================== :find */

void ed_find(ui_editor *ed, const char *text, int flags, int64_t now_ms) {
    if (text[0]) {
        char *t = mt_try_strdup(text);
        if (t == NULL) {
            ed_message(ed, MT_LOG_ERROR, now_ms, "out of memory");
            return;
        }
        mt_free(ed->last_find);
        ed->last_find = t;
        ed->find_flags = flags;
    } else if (flags) {
        ed->find_flags = flags;
    }
    if (ed->last_find == NULL) {
        ed_message(ed, MT_LOG_INFO, now_ms, "nothing to find: use :find TEXT");
        return;
    }
    int fl = ed->find_flags;
    bool src = !(fl & UI_FIND_TARGET) || (fl & UI_FIND_SOURCE);
    bool trg = !(fl & UI_FIND_SOURCE) || (fl & UI_FIND_TARGET);
    ui_matcher m;
    mt_clearerr();
    if (ui_matcher_init(&m, ed->last_find, fl | UI_FIND_ICASE) != MT_OK) {
        ed->bells++;
        ed_message(ed, MT_LOG_WARN, now_ms, "%s", mt_errmsg());
        ui_matcher_free(&m);
        return;
    }
    const char *where = src && !trg ? " (sources)" : trg && !src ? " (translations)" : "";
    for (int64_t k = 1; k <= ed->n_segs; k++) {
        int64_t i = (ed->cur + k) % ed->n_segs;
        const ed_seg *s = &ed->segs[i];
        const char *t = (i == ed->cur) ? ed->field.text : s->target;
        ui_match mt;
        if ((src && ui_matcher_next(&m, s->source, strlen(s->source), 0, &mt)) ||
            (trg && ui_matcher_next(&m, t, strlen(t), 0, &mt))) {
            bool wrapped = i <= ed->cur;
            ed_goto(ed, i, now_ms);
            ed_message(ed, MT_LOG_INFO, now_ms, "'%s' found in segment %lld%s%s", ed->last_find,
                       (long long)i + 1, where, wrapped ? " (search wrapped)" : "");
            ui_matcher_free(&m);
            return;
        }
    }
    ui_matcher_free(&m);
    ed->bells++;
    ed_message(ed, MT_LOG_INFO, now_ms, "not found: '%s'%s", ed->last_find, where);
}

/* =============================================================== :replace */

typedef struct repl_change {
    int64_t seg;
    char *old_text, *new_text;
    ui_seg_status status;
} repl_change;

struct ed_repl {
    bool active; /* asking (ED_MODE_REPLACE) or running through 'a' */
    ui_matcher m;
    char *with, *what; /* NEW, and OLD for the messages */
    int64_t first, k;  /* segments first, first + 1, ... (wrapping); k visited */
    int64_t seg;       /* the segment being worked on, -1 none */
    char *orig, *work; /* its text before, and with the answers so far */
    size_t pos;        /* where the search goes on in work */
    ui_match cur;      /* the occurrence asked about */
    int total, replaced, seg_replaced, segs_changed;
    bool all;
    repl_change *log; /* this operation's changes; after it: the undo log */
    int n_log, cap_log;
    bool undo_ready; /* C-z undoes the :replace (nothing happened since) */
};

static void log_clear(ed_repl *r) {
    for (int i = 0; i < r->n_log; i++) {
        mt_free(r->log[i].old_text);
        mt_free(r->log[i].new_text);
    }
    r->n_log = 0;
    r->undo_ready = false;
}

static void op_clear(ed_repl *r) {
    ui_matcher_free(&r->m);
    mt_free(r->with), mt_free(r->what), mt_free(r->orig), mt_free(r->work);
    r->with = r->what = r->orig = r->work = NULL;
    r->active = false;
    r->seg = -1;
}

void ed_repl_free(ed_repl *r) {
    if (r == NULL) return;
    op_clear(r);
    log_clear(r);
    mt_free(r->log);
    mt_free(r);
}

static bool eligible(const ed_seg *s) {
    return (s->status == UI_SEG_EDITED || s->status == UI_SEG_CONFIRMED) && s->target[0];
}

/* Sets seg's target (status kept) through hooks.replace, then the ui's copy
** and, when seg is current, the field.  Everything that can fail is done
** before the hook, so the store and the ui never disagree. */
static mt_status set_seg_text(ui_editor *ed, int64_t seg, const char *text, bool undo) {
    ed_seg *s = &ed->segs[seg];
    bool cur = seg == ed->cur;
    char *t = mt_try_strdup(text), *fi = NULL;
    if (t == NULL || (cur && (fi = mt_try_strdup(text)) == NULL) ||
        (cur && ed_line_set(&ed->field, text, strlen(text), false) != MT_OK)) {
        mt_free(t), mt_free(fi);
        return mt_seterr(MT_ERR_NOMEM, "out of memory");
    }
    if (ed->hooks.replace) {
        mt_clearerr();
        mt_status rc = ed->hooks.replace(ed->hooks.user, seg, text, s->status, undo);
        if (rc != MT_OK) {
            /* the field held s->target before: its buffer is large enough */
            if (cur) ed_line_set(&ed->field, s->target, strlen(s->target), false);
            mt_free(t), mt_free(fi);
            if (mt_errmsg()[0] == '\0') mt_seterr(rc, "%s", mt_status_str(rc));
            return rc;
        }
    }
    mt_free(s->target);
    s->target = t;
    if (cur) {
        ed_line_clear_undo(&ed->field);
        mt_free(ed->field_initial);
        ed->field_initial = fi;
        ed->field.cur = 0;
    }
    ed->dirty = true;
    return MT_OK;
}

static bool log_add(ed_repl *r, int64_t seg, const char *old_text, const char *new_text,
                    ui_seg_status st) {
    if (r->n_log == r->cap_log) {
        int cap = r->cap_log ? r->cap_log * 2 : 16;
        repl_change *p = mt_try_realloc(r->log, (size_t)cap * sizeof *p);
        if (p == NULL) return false;
        r->log = p, r->cap_log = cap;
    }
    repl_change *c = &r->log[r->n_log];
    c->old_text = mt_try_strdup(old_text);
    c->new_text = mt_try_strdup(new_text);
    if (c->old_text == NULL || c->new_text == NULL) {
        mt_free(c->old_text), mt_free(c->new_text);
        return false;
    }
    c->seg = seg, c->status = st;
    r->n_log++;
    return true;
}

/* The answers for the segment worked on go to the store.  false: failed
** (message set; the segment keeps its text). */
static bool flush_seg(ui_editor *ed, int64_t now_ms) {
    ed_repl *r = ed->repl;
    if (r->seg < 0) return true;
    int64_t seg = r->seg;
    bool ok = true;
    if (strcmp(r->orig, r->work) != 0) {
        mt_status rc = set_seg_text(ed, seg, r->work, false);
        if (rc != MT_OK) {
            r->replaced -= r->seg_replaced;
            ed->bells++;
            ed_message(ed, MT_LOG_ERROR, now_ms, "segment %lld not changed: %s", (long long)seg + 1,
                       mt_errmsg());
            ok = false;
        } else {
            r->segs_changed++;
            if (!log_add(r, seg, r->orig, r->work, ed->segs[seg].status))
                ed_message(ed, MT_LOG_WARN, now_ms, "out of memory: :undo will miss segment %lld",
                           (long long)seg + 1);
        }
    }
    mt_free(r->orig), mt_free(r->work);
    r->orig = r->work = NULL;
    r->seg = -1;
    r->seg_replaced = 0;
    return ok;
}

static void finish(ui_editor *ed, bool stopped, bool failed, int64_t now_ms) {
    ed_repl *r = ed->repl;
    if (!failed && !flush_seg(ed, now_ms)) failed = true;
    ed->mode = ED_MODE_EDIT;
    if (!failed)
        ed_message(ed, MT_LOG_INFO, now_ms, "replaced %d of %d occurrence%s in %d segment%s%s",
                   r->replaced, r->total, r->total == 1 ? "" : "s", r->segs_changed,
                   r->segs_changed == 1 ? "" : "s",
                   r->n_log ? (stopped ? " (stopped; :undo reverts)" : " (:undo reverts)")
                            : (stopped ? " (stopped)" : ""));
    op_clear(r);
    r->undo_ready = r->n_log > 0;
}

/* Replaces the occurrence r->cur of r->work. */
static bool apply(ui_editor *ed, int64_t now_ms) {
    ed_repl *r = ed->repl;
    char *rep = NULL;
    if (ui_replacement(&r->m, r->work, &r->cur, r->with, &rep) != MT_OK) {
        ed_message(ed, MT_LOG_ERROR, now_ms, "%s", mt_errmsg());
        return false;
    }
    size_t wl = strlen(r->work), rl = strlen(rep);
    size_t nl = r->cur.start + rl + (wl - r->cur.end);
    char *t = mt_try_malloc(nl + 1);
    if (t == NULL) {
        mt_free(rep);
        ed_message(ed, MT_LOG_ERROR, now_ms, "replace: out of memory");
        return false;
    }
    memcpy(t, r->work, r->cur.start);
    memcpy(t + r->cur.start, rep, rl);
    memcpy(t + r->cur.start + rl, r->work + r->cur.end, wl - r->cur.end);
    t[nl] = '\0';
    mt_free(rep);
    if (!mt_utf8_valid(t, nl, NULL) && mt_utf8_valid(r->work, wl, NULL)) { /* never: skip it */
        mt_free(t);
        r->pos = r->cur.end;
        return true;
    }
    mt_free(r->work);
    r->work = t;
    r->pos = r->cur.start + rl;
    r->replaced++;
    r->seg_replaced++;
    return true;
}

/* Finds the next occurrence and asks about it, or applies it (after 'a');
** at the end, the summary. */
static void advance(ui_editor *ed, int64_t now_ms) {
    ed_repl *r = ed->repl;
    for (;;) {
        if (r->seg >= 0) {
            size_t wl = strlen(r->work);
            if (r->pos <= wl && ui_matcher_next(&r->m, r->work, wl, r->pos, &r->cur)) {
                if (r->all) {
                    if (!apply(ed, now_ms)) {
                        finish(ed, true, false, now_ms);
                        return;
                    }
                    continue;
                }
                if (ed->cur != r->seg) ed_goto(ed, r->seg, now_ms);
                ed->mode = ED_MODE_REPLACE;
                ed_message(ed, MT_LOG_INFO, now_ms, "replace with '%s'? y/n/a/q (%d of %d)",
                           r->with, r->replaced + 1, r->total);
                return;
            }
            if (!flush_seg(ed, now_ms)) {
                finish(ed, true, true, now_ms);
                return;
            }
        }
        if (r->k >= ed->n_segs) {
            finish(ed, false, false, now_ms);
            return;
        }
        int64_t i = (r->first + r->k) % ed->n_segs;
        r->k++;
        if (!eligible(&ed->segs[i])) continue;
        r->orig = mt_try_strdup(ed->segs[i].target);
        r->work = mt_try_strdup(ed->segs[i].target);
        if (r->orig == NULL || r->work == NULL) {
            ed_message(ed, MT_LOG_ERROR, now_ms, "replace: out of memory");
            mt_free(r->orig), mt_free(r->work);
            r->orig = r->work = NULL;
            {
                finish(ed, true, true, now_ms);
                return;
            }
        }
        r->seg = i;
        r->pos = 0;
        r->seg_replaced = 0;
    }
}

void ed_replace_start(ui_editor *ed, const ui_cmd *c, int64_t now_ms) {
    if (ed->repl == NULL) {
        ed->repl = mt_try_calloc(1, sizeof *ed->repl);
        if (ed->repl == NULL) {
            ed_message(ed, MT_LOG_ERROR, now_ms, "replace: out of memory");
            return;
        }
        ed->repl->seg = -1;
    }
    ed_repl *r = ed->repl;
    r->undo_ready = false;
    mt_clearerr();
    if (ui_matcher_init(&r->m, c->arg, c->flags) != MT_OK) {
        ed->bells++;
        ed_message(ed, MT_LOG_WARN, now_ms, ":replace: %s", mt_errmsg());
        ui_matcher_free(&r->m);
        return;
    }
    /* the draft in the field becomes the segment's draft, so it is searched
    ** (and stored) like every other target */
    ed_store_field(ed, now_ms);
    int total = 0;
    for (int64_t i = 0; i < ed->n_segs; i++) {
        const ed_seg *s = &ed->segs[i];
        if (!eligible(s)) continue;
        size_t n = strlen(s->target), pos = 0;
        ui_match mt;
        while (pos <= n && ui_matcher_next(&r->m, s->target, n, pos, &mt))
            total++, pos = mt.end;
    }
    if (total == 0) {
        ed->bells++;
        ed_message(ed, MT_LOG_INFO, now_ms, "not found in the translations: '%s'", c->arg);
        ui_matcher_free(&r->m);
        return;
    }
    r->with = mt_try_strdup(c->arg2);
    r->what = mt_try_strdup(c->arg);
    if (r->with == NULL || r->what == NULL) {
        op_clear(r);
        ed_message(ed, MT_LOG_ERROR, now_ms, "replace: out of memory");
        return;
    }
    log_clear(r); /* a new operation: the undo log is its own */
    r->active = true;
    r->first = ed->cur;
    r->k = 0;
    r->seg = -1;
    r->total = total;
    r->replaced = r->segs_changed = r->seg_replaced = 0;
    r->all = false;
    advance(ed, now_ms);
}

void ed_replace_key(ui_editor *ed, int32_t key, int64_t now_ms) {
    ed_repl *r = ed->repl;
    if (r == NULL || !r->active) {
        ed->mode = ED_MODE_EDIT;
        return;
    }
    switch (key) {
    case 'y':
    case 'Y':
        if (!apply(ed, now_ms)) {
            finish(ed, true, false, now_ms);
            return;
        }
        {
            advance(ed, now_ms);
            return;
        }
    case 'n':
    case 'N':
        r->pos = r->cur.end;
        {
            advance(ed, now_ms);
            return;
        }
    case 'a':
    case 'A':
        r->all = true;
        if (!apply(ed, now_ms)) {
            finish(ed, true, false, now_ms);
            return;
        }
        {
            advance(ed, now_ms);
            return;
        }
    case 'q':
    case 'Q':
    case UI_KEY_ESC:
    case UI_CTRL('g'):
    case UI_CTRL('c'): {
        finish(ed, true, false, now_ms);
        return;
    }
    default:
        ed->bells++;
        ed_message(ed, MT_LOG_INFO, now_ms, "replace with '%s'? y/n/a/q (%d of %d)", r->with,
                   r->replaced + 1, r->total);
        return;
    }
}

bool ed_replace_highlight(const ui_editor *ed, size_t *start, size_t *end) {
    const ed_repl *r = ed->repl;
    if (ed->mode != ED_MODE_REPLACE || r == NULL || !r->active || r->seg != ed->cur) return false;
    *start = r->cur.start, *end = r->cur.end;
    return true;
}

const char *ed_replace_view(const ui_editor *ed, size_t *start, size_t *end) {
    if (!ed_replace_highlight(ed, start, end)) return NULL;
    return ed->repl->work;
}

bool ed_replace_undo_ready(const ui_editor *ed) { return ed->repl && ed->repl->undo_ready; }

void ed_replace_disarm(ui_editor *ed) {
    if (ed->repl) ed->repl->undo_ready = false;
}

void ed_replace_undo(ui_editor *ed, int64_t now_ms) {
    ed_repl *r = ed->repl;
    if (r == NULL || r->n_log == 0) {
        ed->bells++;
        ed_message(ed, MT_LOG_INFO, now_ms,
                   "nothing to undo: :undo reverts the last :replace (C-z undoes typing)");
        return;
    }
    ed_store_field(ed, now_ms);
    int undone = 0, kept = 0;
    bool failed = false;
    for (int i = r->n_log - 1; i >= 0; i--) {
        const repl_change *c = &r->log[i];
        ed_seg *s = &ed->segs[c->seg];
        if (strcmp(s->target, c->new_text) != 0 || s->status != c->status) {
            kept++;
            continue;
        }
        if (set_seg_text(ed, c->seg, c->old_text, true) != MT_OK) {
            ed->bells++;
            ed_message(ed, MT_LOG_ERROR, now_ms, "undo stopped at segment %lld: %s",
                       (long long)c->seg + 1, mt_errmsg());
            failed = true;
            break;
        }
        undone++;
    }
    if (!failed) {
        char more[96] = "";
        if (kept)
            snprintf(more, sizeof more, "; %d segment%s edited since kept as %s", kept,
                     kept == 1 ? "" : "s", kept == 1 ? "it is" : "they are");
        ed_message(ed, MT_LOG_INFO, now_ms, "undid the :replace in %d segment%s%s", undone,
                   undone == 1 ? "" : "s", more);
    }
    log_clear(r);
}
