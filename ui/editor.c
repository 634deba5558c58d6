/*
** editor.c: the post-editor state machine, without a terminal.
**
**   UTF-8 helpers      decode/encode, character boundaries, display widths
**   ed_line            a bash-like line editor over a UTF-8 buffer: cursor
**                      moves by characters, kills append to one kill buffer
**                      when consecutive, multi-level undo by snapshots (a run
**                      of typed characters up to and including a space is
**                      one step)
**   ui_editor          segments, the edit field and its completion, n-best
**                      picks, confirmation, navigation, the ':' command line
**                      and the calls of ui_hooks.
**
** Everything here is driven by ed_key()/ed_action() and the ed_apply_*()
** results, with the time passed in, so tests/test_editor.c replays key
** sequences deterministically.  screen.c reads the struct to draw it.
*/
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include "editor.h"

/* ================================================================= UTF-8 */

size_t ui_utf8_next(const char *s, size_t n, size_t i) {
    if (i >= n) return n;
    uint32_t cp;
    return i + mt_utf8_decode(s + i, n - i, &cp);
}

size_t ui_utf8_prev(const char *s, size_t i) {
    if (i == 0) return 0;
    size_t j = i - 1;
    int k = 0;
    while (j > 0 && k < 3 && ((unsigned char)s[j] & 0xC0) == 0x80)
        j--, k++;
    uint32_t cp;
    if (mt_utf8_decode(s + j, i - j, &cp) == i - j) return j;
    return i - 1; /* s[i-1] is a stray continuation byte: one character */
}

/* East Asian wide and zero-width ranges, for when wcwidth() does not know
** a character (C locale). */
static const uint32_t wide_ranges[][2] = {
    {0x1100, 0x115F},   {0x2E80, 0x303E},   {0x3041, 0x33FF},   {0x3400, 0x4DBF},
    {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},
    {0xFE30, 0xFE4F},   {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},   {0x1F300, 0x1F64F},
    {0x1F900, 0x1F9FF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
};
static const uint32_t zero_ranges[][2] = {
    {0x0300, 0x036F}, {0x200B, 0x200F}, {0x20D0, 0x20FF}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F},
};

static bool in_ranges(uint32_t cp, const uint32_t (*r)[2], size_t n) {
    for (size_t i = 0; i < n; i++)
        if (cp >= r[i][0] && cp <= r[i][1]) return true;
    return false;
}

int ui_cp_width(uint32_t cp) {
    if (cp < 0x20 || cp == 0x7F) return 1; /* drawn as a one-column symbol */
    int w = wcwidth((wchar_t)cp);
    if (w >= 0) return w;
    if (in_ranges(cp, zero_ranges, sizeof zero_ranges / sizeof zero_ranges[0])) return 0;
    if (in_ranges(cp, wide_ranges, sizeof wide_ranges / sizeof wide_ranges[0])) return 2;
    return 1;
}

int ui_str_width(const char *s, size_t n) {
    int w = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += mt_utf8_decode(s + i, n - i, &cp);
        w += ui_cp_width(cp);
    }
    return w;
}

static bool is_space_cp(uint32_t cp) {
    return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f' ||
           cp == 0xA0 || cp == 0x3000 || (cp >= 0x2000 && cp <= 0x200A);
}

bool ui_is_word_cp(uint32_t cp) {
    if (cp < 0x80) return isalnum((int)cp) || cp == '_';
    if (is_space_cp(cp)) return false;
    if (cp == 0xAB || cp == 0xBB || cp == 0xBF || cp == 0xA1 || cp == 0xB7) return false;
    if (cp >= 0x2010 && cp <= 0x205E) return false; /* dashes, quotes, bullets, … */
    if (cp >= 0x3001 && cp <= 0x3003) return false; /* CJK comma and full stop */
    if (cp >= 0xFF01 && cp <= 0xFF0F) return false; /* full-width punctuation */
    if (cp == 0xFFFD) return false;
    return true;
}

static uint32_t cp_at(const char *s, size_t n, size_t i) {
    uint32_t cp;
    mt_utf8_decode(s + i, n - i, &cp);
    return cp;
}

static uint32_t cp_before(const char *s, size_t i) {
    size_t j = ui_utf8_prev(s, i);
    uint32_t cp;
    mt_utf8_decode(s + j, i - j, &cp);
    return cp;
}

int32_t ed_count_words(const char *s) {
    int32_t n = 0;
    bool in = false;
    size_t len = strlen(s);
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        i += mt_utf8_decode(s + i, len - i, &cp);
        bool sp = is_space_cp(cp);
        if (!sp && !in) n++;
        in = !sp;
    }
    return n;
}

/* ============================================================ line editor */

mt_status ed_line_init(ed_line *l) {
    memset(l, 0, sizeof *l);
    l->text = mt_try_malloc(32);
    if (l->text == NULL) return mt_seterr(MT_ERR_NOMEM, "edit line: cannot allocate 32 bytes");
    l->text[0] = '\0';
    l->cap = 32;
    return MT_OK;
}

void ed_line_clear_undo(ed_line *l) {
    for (int i = 0; i < l->n_undo; i++)
        mt_free(l->undo[i].text);
    l->n_undo = 0;
    l->coalesce = false;
}

void ed_line_free(ed_line *l) {
    if (l == NULL) return;
    ed_line_clear_undo(l);
    mt_free(l->text);
    mt_free(l->kill);
    memset(l, 0, sizeof *l);
}

static mt_status reserve(ed_line *l, size_t len) {
    if (len + 1 <= l->cap) return MT_OK;
    size_t cap = l->cap ? l->cap : 32;
    while (cap < len + 1)
        cap *= 2;
    char *p = mt_try_realloc(l->text, cap);
    if (p == NULL) return mt_seterr(MT_ERR_NOMEM, "edit line: cannot grow to %zu bytes", cap);
    l->text = p;
    l->cap = cap;
    return MT_OK;
}

static mt_status push_undo(ed_line *l) {
    char *copy = mt_try_malloc(l->len + 1);
    if (copy == NULL) return mt_seterr(MT_ERR_NOMEM, "undo: cannot copy %zu bytes", l->len);
    memcpy(copy, l->text, l->len + 1);
    if (l->n_undo == ED_UNDO_MAX) {
        mt_free(l->undo[0].text);
        memmove(l->undo, l->undo + 1, (ED_UNDO_MAX - 1) * sizeof l->undo[0]);
        l->n_undo--;
    }
    l->undo[l->n_undo++] = (ed_undo){copy, l->len, l->cur};
    return MT_OK;
}

/* Replaces text[a..b) by s[0..n), cursor to a + n.  Records an undo step
** unless the edit continues a run of typed characters. */
static mt_status splice(ed_line *l, size_t a, size_t b, const char *s, size_t n, bool coalesce) {
    MT_ASSERT(a <= b && b <= l->len);
    mt_status rc = reserve(l, l->len - (b - a) + n);
    if (rc != MT_OK) return rc;
    if (!(coalesce && l->coalesce)) {
        rc = push_undo(l);
        if (rc != MT_OK) return rc;
    }
    memmove(l->text + a + n, l->text + b, l->len - b + 1);
    if (n) memcpy(l->text + a, s, n);
    l->len = l->len - (b - a) + n;
    l->cur = a + n;
    return MT_OK;
}

mt_status ed_line_set(ed_line *l, const char *s, size_t n, bool undoable) {
    mt_status rc = reserve(l, n);
    if (rc != MT_OK) return rc;
    if (undoable) {
        rc = push_undo(l);
        if (rc != MT_OK) return rc;
    }
    memcpy(l->text, s, n);
    l->text[n] = '\0';
    l->len = l->cur = n;
    l->coalesce = false;
    l->last_kill = 0;
    return MT_OK;
}

mt_status ed_line_insert(ed_line *l, const char *s, size_t n) {
    if (n == 0) return ED_NOOP;
    mt_status rc = splice(l, l->cur, l->cur, s, n, false);
    l->coalesce = false;
    l->last_kill = 0;
    return rc;
}

mt_status ed_line_insert_cp(ed_line *l, uint32_t cp) {
    char buf[4];
    size_t n = mt_utf8_encode(cp, buf);
    if (n == 0) return ED_NOOP;
    /* "word " is one undo step: a space ends the run, the next typed
    ** character starts a new one */
    mt_status rc = splice(l, l->cur, l->cur, buf, n, true);
    if (rc != MT_OK) return rc;
    l->coalesce = !is_space_cp(cp);
    l->last_kill = 0;
    return MT_OK;
}

/* Kills text[a..b): dir > 0 appends to the kill buffer when the previous
** command was a kill too, dir < 0 prepends. */
static mt_status kill_range(ed_line *l, size_t a, size_t b, int dir) {
    if (a == b) {
        l->last_kill = 0;
        return ED_NOOP;
    }
    size_t n = b - a, keep = l->last_kill ? l->kill_len : 0;
    char *k = mt_try_malloc(keep + n + 1);
    if (k == NULL) return mt_seterr(MT_ERR_NOMEM, "kill: cannot copy %zu bytes", n);
    if (dir > 0) {
        if (keep) memcpy(k, l->kill, keep);
        memcpy(k + keep, l->text + a, n);
    } else {
        memcpy(k, l->text + a, n);
        if (keep) memcpy(k + n, l->kill, keep);
    }
    k[keep + n] = '\0';
    mt_status rc = splice(l, a, b, NULL, 0, false);
    if (rc != MT_OK) {
        mt_free(k);
        return rc;
    }
    mt_free(l->kill);
    l->kill = k;
    l->kill_len = keep + n;
    l->coalesce = false;
    l->last_kill = dir;
    return MT_OK;
}

mt_status ed_line_backspace(ed_line *l) {
    l->last_kill = 0;
    if (l->cur == 0) return ED_NOOP;
    size_t a = ui_utf8_prev(l->text, l->cur);
    mt_status rc = splice(l, a, l->cur, NULL, 0, false);
    l->coalesce = false;
    return rc;
}

mt_status ed_line_delete(ed_line *l) {
    l->last_kill = 0;
    if (l->cur >= l->len) return ED_NOOP;
    size_t b = ui_utf8_next(l->text, l->len, l->cur);
    size_t cur = l->cur;
    mt_status rc = splice(l, cur, b, NULL, 0, false);
    l->coalesce = false;
    return rc;
}

mt_status ed_line_kill_eol(ed_line *l) { return kill_range(l, l->cur, l->len, +1); }

mt_status ed_line_kill_bol(ed_line *l) { return kill_range(l, 0, l->cur, -1); }

mt_status ed_line_kill_word_back(ed_line *l) {
    size_t i = l->cur;
    while (i > 0 && is_space_cp(cp_before(l->text, i)))
        i = ui_utf8_prev(l->text, i);
    while (i > 0 && !is_space_cp(cp_before(l->text, i)))
        i = ui_utf8_prev(l->text, i);
    return kill_range(l, i, l->cur, -1);
}

size_t ed_word_end(const char *s, size_t n, size_t i) {
    while (i < n && !ui_is_word_cp(cp_at(s, n, i)))
        i = ui_utf8_next(s, n, i);
    while (i < n && ui_is_word_cp(cp_at(s, n, i)))
        i = ui_utf8_next(s, n, i);
    return i;
}

static size_t word_start(const char *s, size_t i) {
    while (i > 0 && !ui_is_word_cp(cp_before(s, i)))
        i = ui_utf8_prev(s, i);
    while (i > 0 && ui_is_word_cp(cp_before(s, i)))
        i = ui_utf8_prev(s, i);
    return i;
}

mt_status ed_line_kill_word_fwd(ed_line *l) {
    return kill_range(l, l->cur, ed_word_end(l->text, l->len, l->cur), +1);
}

mt_status ed_line_yank(ed_line *l) {
    if (l->kill_len == 0) return ED_NOOP;
    return ed_line_insert(l, l->kill, l->kill_len);
}

mt_status ed_line_transpose(ed_line *l) {
    l->last_kill = 0;
    if (l->cur == 0 || l->len == 0) return ED_NOOP;
    size_t mid = l->cur, b;
    if (mid >= l->len) { /* at the end: swap the last two characters */
        mid = ui_utf8_prev(l->text, l->len);
        if (mid == 0) return ED_NOOP;
    }
    b = ui_utf8_next(l->text, l->len, mid);
    size_t a = ui_utf8_prev(l->text, mid);
    char tmp[8];
    size_t n1 = mid - a, n2 = b - mid;
    memcpy(tmp, l->text + mid, n2);
    memcpy(tmp + n2, l->text + a, n1);
    mt_status rc = splice(l, a, b, tmp, n1 + n2, false);
    l->coalesce = false;
    return rc;
}

mt_status ed_line_undo(ed_line *l) {
    l->last_kill = 0;
    l->coalesce = false;
    if (l->n_undo == 0) return ED_NOOP;
    ed_undo u = l->undo[--l->n_undo];
    mt_free(l->text);
    l->text = u.text;
    l->len = u.len;
    l->cap = u.len + 1;
    l->cur = u.cur <= u.len ? u.cur : u.len;
    return MT_OK;
}

static mt_status moved(ed_line *l, size_t to) {
    l->last_kill = 0;
    l->coalesce = false;
    if (to == l->cur) return ED_NOOP;
    l->cur = to;
    return MT_OK;
}

mt_status ed_line_left(ed_line *l) { return moved(l, ui_utf8_prev(l->text, l->cur)); }
mt_status ed_line_right(ed_line *l) { return moved(l, ui_utf8_next(l->text, l->len, l->cur)); }
mt_status ed_line_word_left(ed_line *l) { return moved(l, word_start(l->text, l->cur)); }
mt_status ed_line_word_right(ed_line *l) { return moved(l, ed_word_end(l->text, l->len, l->cur)); }
mt_status ed_line_home(ed_line *l) { return moved(l, 0); }
mt_status ed_line_end(ed_line *l) { return moved(l, l->len); }

/* ======================================================== MT result copies */

void ed_mt_free(ed_mt *m) {
    if (m == NULL) return;
    mt_free(m->hyp);
    for (int32_t i = 0; m->nbest && i < m->n_nbest; i++)
        mt_free(m->nbest[i]);
    mt_free(m->nbest);
    for (int32_t i = 0; m->labels && i < m->n_nbest; i++)
        mt_free(m->labels[i]);
    mt_free(m->labels);
    mt_free(m->hyp_label);
    for (int32_t i = 0; m->sources && i < m->n_nbest; i++) {
        mt_free(m->sources[i]);
        mt_free(m->src_marks[i]);
    }
    mt_free(m->sources);
    mt_free(m->src_marks);
    mt_free(m->n_src_marks);
    mt_free(m->scores);
    for (int32_t i = 0; m->src_tok && i < m->n_src; i++)
        mt_free(m->src_tok[i]);
    mt_free(m->src_tok);
    for (int32_t i = 0; m->trg_tok && i < m->n_trg; i++)
        mt_free(m->trg_tok[i]);
    mt_free(m->trg_tok);
    mt_free(m->attn);
    mt_free(m->conf);
    mt_free(m);
}

static mt_status copy_strings(const char *const *src, int32_t n, const char *what, char ***out) {
    *out = NULL;
    if (n == 0) return MT_OK;
    if (src == NULL)
        return mt_seterr(MT_ERR_INVALID, "ui_post_mt: %s is NULL with n = %d", what, n);
    char **v = mt_try_calloc((size_t)n, sizeof *v);
    if (v == NULL) return mt_seterr(MT_ERR_NOMEM, "ui_post_mt: cannot copy %d %s", n, what);
    *out = v;
    for (int32_t i = 0; i < n; i++) {
        if (src[i] == NULL) return mt_seterr(MT_ERR_INVALID, "ui_post_mt: %s[%d] is NULL", what, i);
        v[i] = mt_try_strdup(src[i]);
        if (v[i] == NULL) return mt_seterr(MT_ERR_NOMEM, "ui_post_mt: cannot copy %s[%d]", what, i);
    }
    return MT_OK;
}

static mt_status copy_floats(const float *src, size_t n, const char *what, float **out) {
    *out = NULL;
    if (src == NULL || n == 0) return MT_OK;
    *out = mt_try_malloc(n * sizeof(float));
    if (*out == NULL) return mt_seterr(MT_ERR_NOMEM, "ui_post_mt: cannot copy %zu %s", n, what);
    memcpy(*out, src, n * sizeof(float));
    return MT_OK;
}

#define ED_MAX_LIST 4096 /* bound on n-best entries and tokens we copy */

/* The TM entries' sources and their marks (ui_mt_result.nbest_sources);
** marks out of the source's bytes or out of order are dropped. */
static mt_status copy_sources(const ui_mt_result *r, ed_mt *m) {
    if (r->nbest_sources == NULL || r->n_nbest == 0) return MT_OK;
    size_t n = (size_t)r->n_nbest;
    m->sources = mt_try_calloc(n, sizeof *m->sources);
    m->src_marks = mt_try_calloc(n, sizeof *m->src_marks);
    m->n_src_marks = mt_try_calloc(n, sizeof *m->n_src_marks);
    if (!m->sources || !m->src_marks || !m->n_src_marks) goto oom;
    for (size_t i = 0; i < n; i++) {
        const char *src = r->nbest_sources[i];
        if (src == NULL) continue;
        if ((m->sources[i] = mt_try_strdup(src)) == NULL) goto oom;
        int32_t k = r->nbest_n_marks && r->nbest_source_marks && r->nbest_source_marks[i]
                        ? r->nbest_n_marks[i]
                        : 0;
        if (k <= 0 || k > ED_MAX_LIST) continue;
        if ((m->src_marks[i] = mt_try_malloc(sizeof(ui_span) * (size_t)k)) == NULL) goto oom;
        int32_t len = (int32_t)strlen(src), end = 0, kept = 0;
        for (int32_t j = 0; j < k; j++) {
            ui_span sp = r->nbest_source_marks[i][j];
            if (sp.start < end || sp.len <= 0 || sp.len > len - sp.start) continue;
            m->src_marks[i][kept++] = sp;
            end = sp.start + sp.len;
        }
        m->n_src_marks[i] = kept;
    }
    return MT_OK;
oom:
    return mt_seterr(MT_ERR_NOMEM, "ui_post_mt: cannot copy the TM sources");
}

mt_status ed_mt_copy(const ui_mt_result *r, ed_mt **out) {
    *out = NULL;
    if (r == NULL || r->hyp == NULL) return mt_seterr(MT_ERR_INVALID, "ui_post_mt: hyp is NULL");
    if (r->n_nbest < 0 || r->n_src < 0 || r->n_trg < 0 || r->n_words < 0 ||
        r->n_nbest > ED_MAX_LIST || r->n_src > ED_MAX_LIST || r->n_trg > ED_MAX_LIST ||
        r->n_words > ED_MAX_LIST)
        return mt_seterr(MT_ERR_INVALID,
                         "ui_post_mt: counts out of range (n_nbest %d, n_src %d, n_trg %d, "
                         "n_words %d; limit %d)",
                         r->n_nbest, r->n_src, r->n_trg, r->n_words, ED_MAX_LIST);
    if (r->attention && (r->n_src == 0 || r->n_trg == 0))
        return mt_seterr(MT_ERR_INVALID, "ui_post_mt: attention given with n_src %d, n_trg %d",
                         r->n_src, r->n_trg);
    ed_mt *m = mt_try_calloc(1, sizeof *m);
    if (m == NULL) return mt_seterr(MT_ERR_NOMEM, "ui_post_mt: cannot allocate the result");
    mt_status rc = MT_ERR_NOMEM;
    m->hyp = mt_try_strdup(r->hyp);
    if (m->hyp == NULL) {
        mt_seterr(rc, "ui_post_mt: cannot copy hyp");
        goto fail;
    }
    m->n_nbest = r->n_nbest;
    rc = copy_strings(r->nbest, r->n_nbest, "nbest", &m->nbest);
    if (rc != MT_OK) goto fail;
    rc = copy_floats(r->nbest_scores, (size_t)r->n_nbest, "scores", &m->scores);
    if (rc != MT_OK) goto fail;
    if (r->nbest_labels && r->n_nbest > 0) { /* entries may be NULL */
        rc = MT_ERR_NOMEM;
        m->labels = mt_try_calloc((size_t)r->n_nbest, sizeof *m->labels);
        for (int32_t i = 0; m->labels && i < r->n_nbest; i++)
            if (r->nbest_labels[i] && (m->labels[i] = mt_try_strdup(r->nbest_labels[i])) == NULL)
                goto fail;
        if (m->labels == NULL) goto fail;
    }
    if (r->hyp_label && (m->hyp_label = mt_try_strdup(r->hyp_label)) == NULL) {
        rc = MT_ERR_NOMEM;
        goto fail;
    }
    rc = copy_sources(r, m);
    if (rc != MT_OK) goto fail;
    m->n_src = r->n_src;
    rc = copy_strings(r->src_tokens, r->n_src, "src_tokens", &m->src_tok);
    if (rc != MT_OK) goto fail;
    m->n_trg = r->n_trg;
    rc = copy_strings(r->trg_tokens, r->n_trg, "trg_tokens", &m->trg_tok);
    if (rc != MT_OK) goto fail;
    rc = copy_floats(r->attention, (size_t)r->n_src * (size_t)r->n_trg, "attention", &m->attn);
    if (rc != MT_OK) goto fail;
    rc = copy_floats(r->word_conf, (size_t)r->n_words, "word_conf", &m->conf);
    if (rc != MT_OK) goto fail;
    m->n_conf = m->conf ? r->n_words : 0;
    m->speed = r->tokens_per_sec;
    *out = m;
    return MT_OK;
fail:
    ed_mt_free(m);
    return rc;
}

/* ================================================================= editor */

static void comp_clear(ed_completion *c) {
    mt_free(c->prefix);
    mt_free(c->text);
    mt_free(c->conf);
    memset(c, 0, sizeof *c);
}

void ed_free(ui_editor *ed) {
    if (ed == NULL) return;
    ed_gec_free(ed);
    for (int64_t i = 0; ed->segs && i < ed->n_segs; i++) {
        mt_free(ed->segs[i].source);
        mt_free(ed->segs[i].label);
        mt_free(ed->segs[i].terms);
        mt_free(ed->segs[i].terms_line);
        mt_free(ed->segs[i].target);
        mt_free(ed->segs[i].suggestion);
        ed_mt_free(ed->segs[i].mt);
    }
    mt_free(ed->segs);
    mt_free(ed->title);
    mt_free(ed->src_lang);
    mt_free(ed->trg_lang);
    mt_free(ed->model);
    ed_line_free(&ed->field);
    mt_free(ed->field_initial);
    comp_clear(&ed->comp);
    ed_line_free(&ed->cmd);
    ui_hist_free(&ed->hist);
    mt_free(ed->last_find);
    mt_free(ed->spell_text);
    ed_repl_free(ed->repl);
    mt_free(ed);
}

static mt_status dup_opt(const char *s, char **out) {
    *out = NULL;
    if (s == NULL) return MT_OK;
    *out = mt_try_strdup(s);
    return *out ? MT_OK : mt_seterr(MT_ERR_NOMEM, "editor: cannot copy '%.40s'", s);
}

/* The glossary spans of d that lie inside its source, in order, without
** overlaps (the others are dropped). */
static mt_status copy_terms(const ui_segment *d, ed_seg *s) {
    if (d->terms == NULL || d->n_terms <= 0) return MT_OK;
    s->terms = mt_try_calloc((size_t)d->n_terms, sizeof *s->terms);
    if (s->terms == NULL) return MT_ERR_NOMEM;
    int64_t n = (int64_t)strlen(d->source), end = 0;
    for (int32_t k = 0; k < d->n_terms; k++) {
        ui_span t = d->terms[k];
        if (t.start < end || t.len <= 0 || (int64_t)t.start + t.len > n) continue;
        s->terms[s->n_terms++] = t;
        end = (int64_t)t.start + t.len;
    }
    return MT_OK;
}

mt_status ed_init(const ui_hooks *hooks, const ui_document *doc, ui_editor **out) {
    *out = NULL;
    if (doc == NULL || doc->segs == NULL || doc->n_segs < 1)
        return mt_seterr(MT_ERR_INVALID, "ui: the document has no segments");
    for (int64_t i = 0; i < doc->n_segs; i++) {
        if (doc->segs[i].source == NULL)
            return mt_seterr(MT_ERR_INVALID, "ui: segment %lld has no source", (long long)i + 1);
        if ((int)doc->segs[i].status < UI_SEG_NEW || doc->segs[i].status > UI_SEG_CONFIRMED)
            return mt_seterr(MT_ERR_INVALID, "ui: segment %lld has status %d", (long long)i + 1,
                             (int)doc->segs[i].status);
    }
    ui_editor *ed = mt_try_calloc(1, sizeof *ed);
    if (ed == NULL) return mt_seterr(MT_ERR_NOMEM, "ui: cannot allocate the editor");
    mt_status rc = MT_ERR_NOMEM;
    if (hooks) ed->hooks = *hooks;
    ui_hist_init(&ed->hist);
    if ((rc = ed_line_init(&ed->field)) != MT_OK) goto fail;
    if ((rc = ed_line_init(&ed->cmd)) != MT_OK) goto fail;
    if ((rc = dup_opt(doc->title, &ed->title)) != MT_OK) goto fail;
    if ((rc = dup_opt(doc->src_lang, &ed->src_lang)) != MT_OK) goto fail;
    if ((rc = dup_opt(doc->trg_lang, &ed->trg_lang)) != MT_OK) goto fail;
    if ((rc = dup_opt(doc->model_name, &ed->model)) != MT_OK) goto fail;
    ed->segs = mt_try_calloc((size_t)doc->n_segs, sizeof *ed->segs);
    if (ed->segs == NULL) {
        rc = mt_seterr(MT_ERR_NOMEM, "ui: cannot allocate %lld segments", (long long)doc->n_segs);
        goto fail;
    }
    ed->n_segs = doc->n_segs;
    for (int64_t i = 0; i < doc->n_segs; i++) {
        const ui_segment *d = &doc->segs[i];
        ed_seg *s = &ed->segs[i];
        s->source = mt_try_strdup(d->source);
        s->target = mt_try_strdup(d->target ? d->target : "");
        if (d->label) s->label = mt_try_strdup(d->label);
        if (d->terms_line) s->terms_line = mt_try_strdup(d->terms_line);
        if (s->source == NULL || s->target == NULL || (d->label && s->label == NULL) ||
            (d->terms_line && s->terms_line == NULL) || copy_terms(d, s) != MT_OK) {
            rc = mt_seterr(MT_ERR_NOMEM, "ui: cannot copy segment %lld", (long long)i + 1);
            goto fail;
        }
        s->status = d->status;
        /* no target: new, but for an empty source (an empty line of a
        ** text file), whose translation may be empty */
        if (s->status != UI_SEG_NEW && s->target[0] == '\0' &&
            !(s->status == UI_SEG_CONFIRMED && s->source[0] == '\0'))
            s->status = UI_SEG_NEW;
        s->src_words = ed_count_words(s->source);
        ed->words_total += s->src_words;
        if (s->status == UI_SEG_CONFIRMED) {
            ed->words_done += s->src_words;
            ed->n_confirmed++;
        }
    }
    ed->cur = -1;
    ed->spell_seg = -1;
    ed->lower_pane = 0;
    *out = ed;
    return MT_OK;
fail:
    ed_free(ed);
    return rc;
}

void ed_message(ui_editor *ed, mt_log_level level, int64_t now_ms, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ed->msg, sizeof ed->msg, fmt, ap);
    va_end(ap);
    for (char *p = ed->msg; *p; p++)
        if ((unsigned char)*p < 0x20) *p = ' '; /* one line */
    ed->msg_level = level;
    ed->msg_ms = now_ms;
}

static void bell(ui_editor *ed) { ed->bells++; }

/* The MT text of a segment, used as the completion of an empty prefix. */
static const char *seg_mt_text(const ed_seg *s, const float **conf, int32_t *n_conf) {
    if (conf) *conf = NULL, *n_conf = 0;
    if (s->mt) {
        if (conf) *conf = s->mt->conf, *n_conf = s->mt->n_conf;
        return s->mt->hyp;
    }
    if (s->status == UI_SEG_MT) return s->target;
    return NULL;
}

/* Does prefix + text cover the field (field starts with prefix and is a
** prefix of prefix + text)?  *off: where the rest starts in text. */
static bool covers(const ed_line *f, const char *prefix, const char *text, size_t *off) {
    size_t plen = strlen(prefix), tlen = strlen(text);
    if (f->len < plen || memcmp(f->text, prefix, plen) != 0) return false;
    size_t extra = f->len - plen;
    if (extra > tlen || memcmp(f->text + plen, text, extra) != 0) return false;
    *off = extra;
    return true;
}

typedef struct rest_info {
    const char *text; /* the full completion text (rest = text + off) */
    size_t off;
    const float *conf;
    int32_t n_conf;
} rest_info;

static bool find_rest(const ui_editor *ed, rest_info *ri) {
    if (ed->cur < 0) return false;
    const ed_completion *c = &ed->comp;
    if (c->have && covers(&ed->field, c->prefix, c->text, &ri->off)) {
        ri->text = c->text, ri->conf = c->conf, ri->n_conf = c->n_conf;
        return true;
    }
    const float *conf;
    int32_t n_conf;
    const char *mt = seg_mt_text(&ed->segs[ed->cur], &conf, &n_conf);
    if (mt && covers(&ed->field, "", mt, &ri->off)) {
        ri->text = mt, ri->conf = conf, ri->n_conf = n_conf;
        return true;
    }
    return false;
}

const char *ed_completion_rest(const ui_editor *ed, size_t *len) {
    rest_info ri;
    if (!find_rest(ed, &ri)) {
        *len = 0;
        return NULL;
    }
    *len = strlen(ri.text) - ri.off;
    return ri.text + ri.off;
}

float ed_completion_conf(const ui_editor *ed, size_t off) {
    rest_info ri;
    if (!find_rest(ed, &ri) || ri.conf == NULL) return -1.0f;
    size_t n = strlen(ri.text), pos = ri.off + off;
    if (pos >= n) return -1.0f;
    int32_t word = -1;
    bool in = false;
    for (size_t i = 0; i <= pos;) {
        uint32_t cp;
        size_t k = mt_utf8_decode(ri.text + i, n - i, &cp);
        bool sp = is_space_cp(cp);
        if (!sp && !in) word++;
        in = !sp;
        i += k;
    }
    if (is_space_cp(cp_at(ri.text, n, pos))) return -1.0f;
    return word >= 0 && word < ri.n_conf ? ri.conf[word] : -1.0f;
}

char *ed_field_text_with_completion(const ui_editor *ed) {
    size_t rl;
    const char *rest = ed_completion_rest(ed, &rl);
    char *t = mt_try_malloc(ed->field.len + rl + 1);
    if (t == NULL) return NULL;
    memcpy(t, ed->field.text, ed->field.len);
    if (rl) memcpy(t + ed->field.len, rest, rl);
    t[ed->field.len + rl] = '\0';
    return t;
}

int64_t ed_next_untranslated(const ui_editor *ed, int64_t from) {
    for (int64_t k = 1; k <= ed->n_segs; k++) {
        int64_t i = (from + k) % ed->n_segs;
        if (ed->segs[i].status != UI_SEG_CONFIRMED) return i;
    }
    return -1;
}

static bool field_edited(const ui_editor *ed) {
    return ed->cur >= 0 && ed->field_initial && strcmp(ed->field.text, ed->field_initial) != 0;
}

/* After every change of the field: schedule a completion request unless a
** displayed completion still covers the field (or the field is empty: the
** MT answers that). */
/* Reports the field's text to hooks.edited as kind. */
static void send_edit(ui_editor *ed, ui_edit_kind kind) {
    ed->edit_pending = false;
    if (ed->hooks.edited && ed->cur >= 0)
        ed->hooks.edited(ed->hooks.user, ed->cur, ed->field.text, kind,
                         ed->segs[ed->cur].keystrokes);
}

/* Typed text not yet reported goes out now (before another kind of edit,
** a confirmation or leaving the segment). */
static void flush_typed(ui_editor *ed) {
    if (ed->edit_pending) send_edit(ed, UI_EDIT_TYPED);
}

/* The field was typed in: reported at most ED_PERSIST_MS later. */
static void typed(ui_editor *ed, int64_t now_ms) {
    if (ed->edit_pending) return;
    ed->edit_pending = true;
    ed->edit_due_ms = now_ms + ED_PERSIST_MS;
}

static void field_changed(ui_editor *ed, int64_t now_ms) {
    size_t rl;
    if (ed->field.len == 0 || ed_completion_rest(ed, &rl) != NULL) {
        ed->comp_pending = false;
        return;
    }
    ed->comp_pending = true;
    ed->comp_due_ms = now_ms + ED_COMPLETION_DEBOUNCE_MS;
}

/* Opens segment seg in the field. */
static void open_field(ui_editor *ed, int64_t seg, int64_t now_ms) {
    ed_seg *s = &ed->segs[seg];
    if (seg != ed->cur) ed->heat_scroll = 0; /* another segment, another map */
    ed->cur = seg;
    ed->entered_ms = now_ms;
    comp_clear(&ed->comp);
    ed->comp_pending = false;
    ed->edit_pending = false;
    ed->quoted = false;
    const char *init = (s->status == UI_SEG_NEW || s->status == UI_SEG_MT) ? "" : s->target;
    mt_free(ed->field_initial);
    ed->field_initial = mt_try_strdup(init);
    if (ed_line_set(&ed->field, init, strlen(init), false) != MT_OK || !ed->field_initial) {
        ed_line_set(&ed->field, "", 0, false); /* cannot fail: capacity >= 1 */
        ed_message(ed, MT_LOG_ERROR, now_ms, "out of memory opening segment %lld",
                   (long long)seg + 1);
    }
    ed_line_clear_undo(&ed->field);
    ed->field.last_kill = 0;
    ed->locked = s->status == UI_SEG_CONFIRMED;
    if (!ed->locked) field_changed(ed, now_ms);
}

/* Whether act, in the edit field, would change its text (moves at the end
** of the field accept completion text). */
static bool edits_field(const ui_editor *ed, ui_action act) {
    bool at_end = ed->field.cur == ed->field.len;
    switch (act) {
    case UI_ACT_SELF_INSERT:
    case UI_ACT_ACCEPT_WORD:
    case UI_ACT_QUOTED_INSERT:
    case UI_ACT_NBEST:
    case UI_ACT_DELETE:
    case UI_ACT_BACKSPACE:
    case UI_ACT_KILL_EOL:
    case UI_ACT_KILL_BOL:
    case UI_ACT_KILL_WORD_BACK:
    case UI_ACT_KILL_WORD_FWD:
    case UI_ACT_YANK:
    case UI_ACT_TRANSPOSE:
    case UI_ACT_SPELL:
    case UI_ACT_UNDO: return true;
    case UI_ACT_EOL:
    case UI_ACT_RIGHT:
    case UI_ACT_WORD_RIGHT: return at_end;
    default: return false;
    }
}

/* Leaves the current segment for `to` (-1: the editor closes).  committed:
** the field was just confirmed, so there is no draft. */
static void leave_segment(ui_editor *ed, int64_t to, bool committed, int64_t now_ms) {
    flush_typed(ed);
    int64_t from = ed->cur;
    const char *draft = NULL;
    if (from >= 0) {
        ed_seg *s = &ed->segs[from];
        s->spent_ms += now_ms - ed->entered_ms;
        if (!committed && field_edited(ed)) {
            char *t = mt_try_strdup(ed->field.text);
            if (t) {
                mt_free(s->target);
                s->target = t;
                if (s->status == UI_SEG_CONFIRMED) {
                    ed->words_done -= s->src_words;
                    ed->n_confirmed--;
                }
                s->status = t[0] ? UI_SEG_EDITED : UI_SEG_NEW;
                ed->dirty = true;
                draft = s->target;
            } else {
                ed_message(ed, MT_LOG_ERROR, now_ms, "out of memory: draft of segment %lld lost",
                           (long long)from + 1);
            }
        }
    }
    if (ed->hooks.segment_changed) ed->hooks.segment_changed(ed->hooks.user, from, draft, to);
    if (to >= 0) {
        open_field(ed, to, now_ms);
    } else {
        ed->cur = -1;
        comp_clear(&ed->comp);
        ed->comp_pending = false;
    }
}

void ed_open(ui_editor *ed, int64_t start, int64_t now_ms) {
    if (start < 0) start = 0;
    if (start >= ed->n_segs) start = ed->n_segs - 1;
    MT_ASSERT(ed->cur < 0);
    leave_segment(ed, start, false, now_ms);
}

void ed_close(ui_editor *ed, int64_t now_ms) {
    if (ed->cur >= 0) leave_segment(ed, -1, false, now_ms);
}

static void go_to(ui_editor *ed, int64_t seg, int64_t now_ms) {
    if (seg == ed->cur) return;
    leave_segment(ed, seg, false, now_ms);
}

void ed_goto(ui_editor *ed, int64_t seg, int64_t now_ms) {
    if (seg >= 0 && seg < ed->n_segs) go_to(ed, seg, now_ms);
}

void ed_store_field(ui_editor *ed, int64_t now_ms) {
    if (ed->cur >= 0 && field_edited(ed)) leave_segment(ed, ed->cur, false, now_ms);
}

static void quit(ui_editor *ed, int64_t now_ms) {
    ed_close(ed, now_ms);
    ed->quit = true;
    ed->mode = ED_MODE_EDIT;
}

/* Appends n bytes of the displayed completion to the field. */
/* Takes n bytes of the completion; kind: how hooks.edited hears of it
** (UI_EDIT_TYPED: as part of a typed burst). */
static mt_status accept_rest(ui_editor *ed, size_t n, ui_edit_kind kind, int64_t now_ms) {
    size_t rl;
    const char *rest = ed_completion_rest(ed, &rl);
    if (rest == NULL || rl == 0 || n == 0) return ED_NOOP;
    if (n > rl) n = rl;
    if (kind != UI_EDIT_TYPED) flush_typed(ed);
    ed->field.cur = ed->field.len;
    mt_status rc = ed_line_insert(&ed->field, rest, n);
    if (rc != MT_OK) return rc;
    ed->segs[ed->cur].completions_used++;
    field_changed(ed, now_ms);
    if (kind == UI_EDIT_TYPED)
        typed(ed, now_ms);
    else
        send_edit(ed, kind);
    return MT_OK;
}

/* Length of the next word of the completion, with the spaces before it. */
static size_t rest_word_len(const char *rest, size_t rl) {
    size_t i = 0;
    while (i < rl && is_space_cp(cp_at(rest, rl, i)))
        i = ui_utf8_next(rest, rl, i);
    while (i < rl && !is_space_cp(cp_at(rest, rl, i)))
        i = ui_utf8_next(rest, rl, i);
    return i;
}

static mt_status accept_word(ui_editor *ed, int64_t now_ms) {
    size_t rl;
    const char *rest = ed_completion_rest(ed, &rl);
    if (rest == NULL) return ED_NOOP;
    return accept_rest(ed, rest_word_len(rest, rl), UI_EDIT_ACCEPT_WORD, now_ms);
}

static mt_status accept_char(ui_editor *ed, int64_t now_ms) {
    size_t rl;
    const char *rest = ed_completion_rest(ed, &rl);
    if (rest == NULL || rl == 0) return ED_NOOP;
    return accept_rest(ed, ui_utf8_next(rest, rl, 0), UI_EDIT_TYPED, now_ms);
}

static void pick_nbest(ui_editor *ed, int i, int64_t now_ms) {
    ed_seg *s = &ed->segs[ed->cur];
    if (s->mt == NULL || i < 1 || i > s->mt->n_nbest) {
        bell(ed);
        ed_message(ed, MT_LOG_INFO, now_ms, "no alternative %d for this segment", i);
        return;
    }
    flush_typed(ed);
    const char *alt = s->mt->nbest[i - 1];
    char *sugg = mt_try_strdup(alt);
    if (sugg == NULL || ed_line_set(&ed->field, alt, strlen(alt), true) != MT_OK) {
        mt_free(sugg);
        ed_message(ed, MT_LOG_ERROR, now_ms, "out of memory inserting alternative %d", i);
        return;
    }
    mt_free(s->suggestion);
    s->suggestion = sugg;
    s->origin = UI_ORIGIN_NBEST;
    s->nbest_rank = i;
    /* an alternative is a whole translation (the MT's n-best, a TM match,
    ** the APE post-edit): nothing is completed after it until it is edited,
    ** so Enter confirms exactly it */
    comp_clear(&ed->comp);
    ed->comp.prefix = mt_try_strdup(alt);
    ed->comp.text = mt_try_strdup("");
    ed->comp.have = ed->comp.prefix && ed->comp.text;
    if (!ed->comp.have) comp_clear(&ed->comp);
    field_changed(ed, now_ms);
    send_edit(ed, UI_EDIT_NBEST);
}

/* Fills the statistics of a commit; suggestion points into ed's memory. */
static void commit_stats(ui_editor *ed, const char *text, int64_t now_ms, ui_edit_stats *st) {
    ed_seg *s = &ed->segs[ed->cur];
    memset(st, 0, sizeof *st);
    st->seconds = (double)(s->spent_ms + (now_ms - ed->entered_ms)) / 1000.0;
    st->keystrokes = s->keystrokes;
    st->completions_used = s->completions_used;
    if (s->origin == UI_ORIGIN_NBEST) {
        st->origin = UI_ORIGIN_NBEST;
        st->nbest_rank = s->nbest_rank;
        st->suggestion = s->suggestion;
    } else if (ed->field_initial && ed->field_initial[0]) {
        st->origin = UI_ORIGIN_DRAFT;
        st->suggestion = ed->field_initial;
    } else if (seg_mt_text(s, NULL, NULL)) {
        st->origin = UI_ORIGIN_MT;
        st->suggestion = seg_mt_text(s, NULL, NULL);
    }
    st->edited = st->suggestion == NULL || strcmp(st->suggestion, text) != 0;
}

static void confirm(ui_editor *ed, int64_t now_ms) {
    flush_typed(ed);
    ed_seg *s = &ed->segs[ed->cur];
    char *text = ed_field_text_with_completion(ed);
    if (text == NULL) {
        ed_message(ed, MT_LOG_ERROR, now_ms, "out of memory confirming the segment");
        return;
    }
    if (text[0] == '\0') {
        mt_free(text);
        bell(ed);
        ed_message(ed, MT_LOG_INFO, now_ms, "nothing to confirm: the translation is empty");
        return;
    }
    ui_edit_stats st;
    commit_stats(ed, text, now_ms, &st);
    if (ed->hooks.commit) {
        mt_clearerr();
        mt_status rc = ed->hooks.commit(ed->hooks.user, ed->cur, text, &st);
        if (rc != MT_OK) {
            ed_message(ed, MT_LOG_ERROR, now_ms, "segment %lld not confirmed: %s",
                       (long long)ed->cur + 1, mt_errmsg()[0] ? mt_errmsg() : mt_status_str(rc));
            mt_free(text);
            return;
        }
    }
    mt_free(s->target);
    s->target = text;
    /* the statistics of the next edit of this segment start afresh */
    s->spent_ms = 0;
    ed->entered_ms = now_ms;
    s->keystrokes = s->completions_used = 0;
    s->origin = UI_ORIGIN_NONE;
    s->nbest_rank = 0;
    mt_free(s->suggestion);
    s->suggestion = NULL;
    if (s->status != UI_SEG_CONFIRMED) {
        ed->words_done += s->src_words;
        ed->n_confirmed++;
    }
    s->status = UI_SEG_CONFIRMED;
    ed->dirty = true;
    int64_t next = ed_next_untranslated(ed, ed->cur);
    if (next >= 0) {
        leave_segment(ed, next, true, now_ms);
    } else {
        /* stay: reopen the field on the confirmed text */
        open_field(ed, ed->cur, now_ms);
        ed_message(ed, MT_LOG_INFO, now_ms, "all %lld segments are confirmed",
                   (long long)ed->n_segs);
    }
}

/* --------------------------------------------------------- command line */

static bool hook_ok(ui_editor *ed, mt_status rc, const char *what, int64_t now_ms) {
    if (rc == MT_OK) return true;
    ed_message(ed, MT_LOG_ERROR, now_ms, "%s failed: %s", what,
               mt_errmsg()[0] ? mt_errmsg() : mt_status_str(rc));
    return false;
}

static bool save(ui_editor *ed, bool force, int64_t now_ms) {
    if (ed->hooks.save == NULL) {
        ed_message(ed, MT_LOG_WARN, now_ms, "saving is not available");
        return false;
    }
    mt_clearerr();
    if (!hook_ok(ed, ed->hooks.save(ed->hooks.user, force), "save", now_ms)) return false;
    ed->dirty = false;
    ed_message(ed, MT_LOG_INFO, now_ms, "saved");
    return true;
}

static bool unsaved(const ui_editor *ed) { return ed->dirty || field_edited(ed); }

/* ------------------------------------------------------------ spelling */

static void spell_forget(ui_editor *ed) {
    mt_free(ed->spell_text);
    ed->spell_text = NULL;
    ed->n_spell = 0;
}

const ui_span *ed_spell_spans(ui_editor *ed, int *n) {
    *n = 0;
    if (ed->hooks.spell == NULL || ed->spell_off || ed->spell_unavail || ed->cur < 0)
        return ed->spell;
    if (ed->spell_text && ed->spell_seg == ed->cur && strcmp(ed->spell_text, ed->field.text) == 0) {
        *n = ed->n_spell;
        return ed->spell;
    }
    spell_forget(ed);
    mt_clearerr();
    int k = ed->hooks.spell(ed->hooks.user, ed->cur, ed->field.text, ed->spell, ED_SPELL_MAX);
    if (k < 0) {
        ed->spell_unavail = true;
        snprintf(ed->spell_why, sizeof ed->spell_why, "%s",
                 mt_errmsg()[0] ? mt_errmsg() : "spell checking is not available");
        return ed->spell;
    }
    if (k > ED_SPELL_MAX) k = ED_SPELL_MAX;
    int m = 0; /* keep the spans that are in order and inside the text */
    int32_t end = 0;
    for (int i = 0; i < k; i++) {
        ui_span sp = ed->spell[i];
        if (sp.start < end || sp.len <= 0 || (size_t)sp.start + (size_t)sp.len > ed->field.len)
            continue;
        ed->spell[m++] = sp;
        end = sp.start + sp.len;
    }
    ed->n_spell = m;
    ed->spell_text = mt_try_strdup(ed->field.text); /* NULL: checked again next time */
    ed->spell_seg = ed->cur;
    *n = m;
    return ed->spell;
}

/* Whether spell checking can be used; else says why. */
static bool spell_usable(ui_editor *ed, int64_t now_ms) {
    if (ed->hooks.spell == NULL || ed->spell_unavail) {
        ed_message(ed, MT_LOG_INFO, now_ms, "%s",
                   ed->spell_unavail ? ed->spell_why : "spell checking is not available");
        return false;
    }
    return true;
}

/* F7: the suggestions for the misspelled word at or before the cursor
** (else the first one after it). */
static void spell_open(ui_editor *ed, int64_t now_ms) {
    if (!spell_usable(ed, now_ms)) return;
    if (ed->spell_off) {
        ed_message(ed, MT_LOG_INFO, now_ms, "spell checking is off (:spell turns it on)");
        return;
    }
    int n;
    const ui_span *sp = ed_spell_spans(ed, &n);
    if (!spell_usable(ed, now_ms)) return;
    if (n == 0) {
        ed_message(ed, MT_LOG_INFO, now_ms, "no misspelled word in the translation");
        return;
    }
    int pick = 0;
    for (int i = 0; i < n; i++)
        if ((size_t)sp[i].start <= ed->field.cur) pick = i;
    ed->sug_at = (size_t)sp[pick].start;
    ed->sug_len = (size_t)sp[pick].len;
    char word[256];
    if (ed->sug_len >= sizeof word) {
        ed_message(ed, MT_LOG_INFO, now_ms, "the word is too long for suggestions");
        return;
    }
    memcpy(word, ed->field.text + ed->sug_at, ed->sug_len);
    word[ed->sug_len] = '\0';
    ed->n_sug = 0;
    ed->sug_buf[0] = '\0';
    if (ed->hooks.spell_suggest) {
        mt_clearerr();
        int k = ed->hooks.spell_suggest(ed->hooks.user, word, ed->sug_buf, sizeof ed->sug_buf);
        ed->sug_buf[sizeof ed->sug_buf - 1] = '\0';
        char *p = ed->sug_buf;
        for (int i = 0; i < k && i < 9 && *p; i++) {
            char *nl = strchr(p, '\n');
            if (nl == NULL) break;
            *nl = '\0';
            ed->sug[ed->n_sug++] = p;
            p = nl + 1;
        }
    }
    ed->mode = ED_MODE_SPELL;
    ed->msg[0] = '\0';
}

/* The word of the list replaced with `with`: one undo step, reported as typing. */
static void spell_replace(ui_editor *ed, const char *with, int64_t now_ms) {
    ed_line *f = &ed->field;
    size_t wl = strlen(with), at = ed->sug_at, len = ed->sug_len;
    if (at + len > f->len) return; /* cannot happen: the list closes when the field changes */
    size_t n = f->len - len + wl;
    char *t = mt_try_malloc(n + 1);
    if (t == NULL) {
        ed_message(ed, MT_LOG_ERROR, now_ms, "out of memory replacing the word");
        return;
    }
    memcpy(t, f->text, at);
    memcpy(t + at, with, wl);
    memcpy(t + at + wl, f->text + at + len, f->len - at - len);
    t[n] = '\0';
    char old[256];
    snprintf(old, sizeof old, "%.*s", (int)len, f->text + at);
    flush_typed(ed);
    mt_status rc = ed_line_set(f, t, n, true);
    mt_free(t);
    if (rc != MT_OK) {
        ed_message(ed, MT_LOG_ERROR, now_ms, "%s", mt_errmsg());
        return;
    }
    f->cur = at + wl;
    ed->segs[ed->cur].keystrokes++;
    field_changed(ed, now_ms);
    send_edit(ed, UI_EDIT_TYPED);
    ed_message(ed, MT_LOG_INFO, now_ms, "'%s' replaced with '%s' (C-z undoes)", old, with);
}

mt_status ed_field_replace(ui_editor *ed, size_t at, size_t len, const char *with, int64_t now_ms) {
    ed_line *f = &ed->field;
    size_t wl = strlen(with);
    if (ed->cur < 0 || at + len > f->len) return mt_seterr(MT_ERR_INVALID, "outside the field");
    size_t n = f->len - len + wl;
    char *t = mt_try_malloc(n + 1);
    if (t == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
    memcpy(t, f->text, at);
    memcpy(t + at, with, wl);
    memcpy(t + at + wl, f->text + at + len, f->len - at - len);
    t[n] = '\0';
    flush_typed(ed);
    mt_status rc = ed_line_set(f, t, n, true);
    mt_free(t);
    if (rc != MT_OK) return rc;
    f->cur = at + wl;
    ed->segs[ed->cur].keystrokes++;
    field_changed(ed, now_ms);
    send_edit(ed, UI_EDIT_TYPED);
    return MT_OK;
}

static void spell_add_word(ui_editor *ed, const char *word, int64_t now_ms) {
    if (!spell_usable(ed, now_ms)) return;
    if (ed->hooks.spell_add == NULL) {
        ed_message(ed, MT_LOG_INFO, now_ms, "no personal dictionary");
        return;
    }
    mt_clearerr();
    if (hook_ok(ed, ed->hooks.spell_add(ed->hooks.user, word), "spell", now_ms))
        ed_message(ed, MT_LOG_INFO, now_ms, "'%s' added to the personal dictionary", word);
    spell_forget(ed); /* check the field again */
}

/* Keys while the suggestions are listed. */
static void spell_action(ui_editor *ed, ui_action act, int arg, int32_t key, int64_t now_ms) {
    switch (act) {
    case UI_ACT_SPELL_PICK:
        if (arg < 1 || arg > ed->n_sug) {
            bell(ed);
            return;
        }
        ed->mode = ED_MODE_EDIT;
        spell_replace(ed, ed->sug[arg - 1], now_ms);
        return;
    case UI_ACT_SPELL_ADD: {
        char word[256];
        snprintf(word, sizeof word, "%.*s", (int)ed->sug_len, ed->field.text + ed->sug_at);
        ed->mode = ED_MODE_EDIT;
        spell_add_word(ed, word, now_ms);
        return;
    }
    case UI_ACT_CANCEL: ed->mode = ED_MODE_EDIT; return;
    default: /* any other key closes the list and does what it does */
        ed->mode = ED_MODE_EDIT;
        if (key != 0) ed_key(ed, key, now_ms);
        return;
    }
}

/* :spell [on|off|add WORD] */
static void spell_cmd(ui_editor *ed, const char *arg, int64_t now_ms) {
    if (strncmp(arg, "add ", 4) == 0) {
        spell_add_word(ed, arg + 4, now_ms);
        return;
    }
    if (!spell_usable(ed, now_ms)) return;
    ed->spell_off = arg[0] == '\0' ? !ed->spell_off : strcmp(arg, "off") == 0;
    spell_forget(ed);
    ed_message(ed, MT_LOG_INFO, now_ms, "spell checking %s", ed->spell_off ? "off" : "on");
}

static void exec_cmd(ui_editor *ed, const ui_cmd *c, int64_t now_ms) {
    switch (c->kind) {
    case UI_CMD_NONE: break;
    case UI_CMD_WRITE: save(ed, false, now_ms); break;
    case UI_CMD_WRITE_FORCE: save(ed, true, now_ms); break;
    case UI_CMD_QA: {
        char msg[1024];
        int64_t seg = ed->hooks.qa ? ed->hooks.qa(ed->hooks.user, ed->cur, msg, sizeof msg) : -1;
        if (ed->hooks.qa == NULL) snprintf(msg, sizeof msg, "QA is not available");
        if (seg >= 0 && seg < ed->n_segs && seg != ed->cur) go_to(ed, seg, now_ms);
        ed_message(ed, seg >= 0 ? MT_LOG_WARN : MT_LOG_INFO, now_ms, "%s", msg);
        break;
    }
    case UI_CMD_QUIT:
        if (unsaved(ed)) {
            ed->mode = ED_MODE_ASK_QUIT;
            ed_message(ed, MT_LOG_WARN, now_ms,
                       "unsaved changes: save before quitting? (y)es (n)o, any other key: stay");
        } else {
            quit(ed, now_ms);
        }
        break;
    case UI_CMD_WRITE_QUIT:
        if (save(ed, false, now_ms)) quit(ed, now_ms);
        break;
    case UI_CMD_QUIT_FORCE: quit(ed, now_ms); break;
    case UI_CMD_GOTO:
        if (c->n < 1 || c->n > ed->n_segs) {
            bell(ed);
            ed_message(ed, MT_LOG_WARN, now_ms, "no segment %lld (1..%lld)", (long long)c->n,
                       (long long)ed->n_segs);
        } else {
            go_to(ed, c->n - 1, now_ms);
        }
        break;
    case UI_CMD_FIND: ed_find(ed, c->arg, c->flags, now_ms); break;
    case UI_CMD_REPLACE: ed_replace_start(ed, c, now_ms); break;
    case UI_CMD_UNDO: ed_replace_undo(ed, now_ms); break;
    case UI_CMD_MODEL:
        if (c->arg[0] == '\0') {
            char msg[ED_MSG_MAX];
            mt_clearerr();
            if (ed->hooks.models == NULL)
                ed_message(ed, MT_LOG_INFO, now_ms, "model: %s", ed->model ? ed->model : "none");
            else if (hook_ok(ed, ed->hooks.models(ed->hooks.user, msg, sizeof msg), "model",
                             now_ms))
                ed_message(ed, MT_LOG_INFO, now_ms, "%s", msg);
        } else if (ed->hooks.load_model == NULL) {
            ed_message(ed, MT_LOG_WARN, now_ms, "switching models is not available");
        } else {
            mt_clearerr();
            if (hook_ok(ed, ed->hooks.load_model(ed->hooks.user, c->arg), "model", now_ms))
                ed_message(ed, MT_LOG_INFO, now_ms, "loading model %s", c->arg);
        }
        break;
    case UI_CMD_EXPORT:
        if (ed->hooks.export_doc == NULL) {
            ed_message(ed, MT_LOG_WARN, now_ms, "export is not available");
        } else {
            mt_clearerr();
            if (hook_ok(ed, ed->hooks.export_doc(ed->hooks.user, c->format, c->arg), "export",
                        now_ms))
                ed_message(ed, MT_LOG_INFO, now_ms, "exported %s to %s", c->format, c->arg);
        }
        break;
    case UI_CMD_TUNE:
        if (ed->hooks.tune == NULL) {
            ed_message(ed, MT_LOG_WARN, now_ms, "tuning is not available");
        } else {
            char msg[ED_MSG_MAX] = "";
            mt_clearerr();
            mt_status rc = ed->hooks.tune(ed->hooks.user, c->arg, msg, sizeof msg);
            if (rc != MT_OK) bell(ed);
            ed_message(ed, rc == MT_OK ? MT_LOG_INFO : MT_LOG_WARN, now_ms, "%s",
                       msg[0] ? msg : mt_errmsg());
        }
        break;
    case UI_CMD_STATS:
        if (ed->hooks.stats == NULL) {
            ed_message(ed, MT_LOG_INFO, now_ms, "stats: %lld/%lld confirmed",
                       (long long)ed->n_confirmed, (long long)ed->n_segs);
        } else {
            char msg[ED_MSG_MAX];
            mt_clearerr();
            if (hook_ok(ed, ed->hooks.stats(ed->hooks.user, msg, sizeof msg), "stats", now_ms))
                ed_message(ed, MT_LOG_INFO, now_ms, "%s", msg);
        }
        break;
    case UI_CMD_HELP:
        ed->mode = ED_MODE_HELP;
        ed->help_scroll = 0;
        break;
    case UI_CMD_SPELL: spell_cmd(ed, c->arg, now_ms); break;
    }
}

static void execute(ui_editor *ed, int64_t now_ms) {
    static ui_cmd c; /* 4 KiB: kept off the stack; the ui is single-threaded */
    ed->mode = ED_MODE_EDIT;
    if (ed->cmd.len) ui_hist_add(&ed->hist, ed->cmd.text); /* OOM: not remembered */
    ui_hist_reset(&ed->hist);
    mt_clearerr();
    if (ui_cmd_parse(ed->cmd.text, &c) != MT_OK) {
        bell(ed);
        ed_message(ed, MT_LOG_WARN, now_ms, "%s", mt_errmsg());
        return;
    }
    ed->msg[0] = '\0';
    ed_replace_disarm(ed); /* C-z undoes a :replace only right after it */
    exec_cmd(ed, &c, now_ms);
}

static void open_cmdline(ui_editor *ed) {
    ed->mode = ED_MODE_CMDLINE;
    ed_line_set(&ed->cmd, "", 0, false);
    ed_line_clear_undo(&ed->cmd);
    ui_hist_reset(&ed->hist);
}

/* ------------------------------------------------------------- dispatch */

/* Applies a line-editing action to l; *handled = false if act is not one. */
static mt_status line_action(ed_line *l, ui_action act, bool *handled) {
    *handled = true;
    switch (act) {
    case UI_ACT_BOL: return ed_line_home(l);
    case UI_ACT_EOL: return ed_line_end(l);
    case UI_ACT_LEFT: return ed_line_left(l);
    case UI_ACT_RIGHT: return ed_line_right(l);
    case UI_ACT_WORD_LEFT: return ed_line_word_left(l);
    case UI_ACT_WORD_RIGHT: return ed_line_word_right(l);
    case UI_ACT_DELETE: return ed_line_delete(l);
    case UI_ACT_BACKSPACE: return ed_line_backspace(l);
    case UI_ACT_KILL_EOL: return ed_line_kill_eol(l);
    case UI_ACT_KILL_BOL: return ed_line_kill_bol(l);
    case UI_ACT_KILL_WORD_BACK: return ed_line_kill_word_back(l);
    case UI_ACT_KILL_WORD_FWD: return ed_line_kill_word_fwd(l);
    case UI_ACT_YANK: return ed_line_yank(l);
    case UI_ACT_TRANSPOSE: return ed_line_transpose(l);
    case UI_ACT_UNDO: return ed_line_undo(l);
    default: *handled = false; return ED_NOOP;
    }
}

static bool changes_text(ui_action act) {
    return act != UI_ACT_BOL && act != UI_ACT_EOL && act != UI_ACT_LEFT && act != UI_ACT_RIGHT &&
           act != UI_ACT_WORD_LEFT && act != UI_ACT_WORD_RIGHT;
}

static void report(ui_editor *ed, mt_status rc, int64_t now_ms) {
    if (rc == ED_NOOP)
        bell(ed);
    else if (rc != MT_OK)
        ed_message(ed, MT_LOG_ERROR, now_ms, "%s", mt_errmsg());
}

static void edit_action(ui_editor *ed, ui_action act, int arg, int32_t key, int64_t now_ms) {
    ed_line *f = &ed->field;
    ed_seg *s = &ed->segs[ed->cur];
    mt_status rc = MT_OK;
    bool at_end = f->cur == f->len, handled;

    if (act == UI_ACT_UNDO && ed_replace_undo_ready(ed)) { /* C-z right after :replace */
        ed_replace_undo(ed, now_ms);
        return;
    }
    if (act != UI_ACT_CANCEL && act != UI_ACT_REDRAW && act != UI_ACT_NONE) ed_replace_disarm(ed);

    if (ed->locked) { /* a confirmed segment: Enter reopens it, ':' is the command line */
        if (act == UI_ACT_CONFIRM) {
            ed->locked = false;
            field_changed(ed, now_ms);
            ed_message(ed, MT_LOG_INFO, now_ms,
                       "editing confirmed segment %lld: Enter confirms the change",
                       (long long)ed->cur + 1);
            return;
        }
        if (act == UI_ACT_COLON) {
            open_cmdline(ed);
            return;
        }
        if (edits_field(ed, act)) {
            bell(ed);
            ed_message(ed, MT_LOG_INFO, now_ms,
                       "segment %lld is confirmed: Enter reopens it for editing",
                       (long long)ed->cur + 1);
            return;
        }
    }

    switch (act) { /* keys that edit or move inside the field count as keystrokes */
    case UI_ACT_NEXT_SEG:
    case UI_ACT_PREV_SEG:
    case UI_ACT_FIRST_SEG:
    case UI_ACT_LAST_SEG:
    case UI_ACT_NEXT_OPEN:
    case UI_ACT_CONFIRM:
    case UI_ACT_CMDLINE:
    case UI_ACT_HELP:
    case UI_ACT_TOGGLE_PANE:
    case UI_ACT_FULL_LIST:
    case UI_ACT_HEAT_LEFT:
    case UI_ACT_HEAT_RIGHT:
    case UI_ACT_REDRAW:
    case UI_ACT_CANCEL:
    case UI_ACT_QUIT_HINT:
    case UI_ACT_NONE: break;
    case UI_ACT_COLON:
        if (f->cur != 0) s->keystrokes++;
        break;
    default: s->keystrokes++;
    }

    switch (act) {
    case UI_ACT_SELF_INSERT:
        rc = ed_line_insert_cp(f, (uint32_t)key);
        if (rc == MT_OK) field_changed(ed, now_ms), typed(ed, now_ms);
        break;
    case UI_ACT_EOL:
        rc = at_end ? accept_rest(ed, SIZE_MAX, UI_EDIT_ACCEPT_ALL, now_ms) : ed_line_end(f);
        break;
    case UI_ACT_RIGHT: rc = at_end ? accept_char(ed, now_ms) : ed_line_right(f); break;
    case UI_ACT_WORD_RIGHT: rc = at_end ? accept_word(ed, now_ms) : ed_line_word_right(f); break;
    case UI_ACT_ACCEPT_WORD: rc = accept_word(ed, now_ms); break;
    case UI_ACT_QUOTED_INSERT: ed->quoted = true; break;
    case UI_ACT_CONFIRM: confirm(ed, now_ms); break;
    case UI_ACT_NBEST: pick_nbest(ed, arg, now_ms); break;
    case UI_ACT_NEXT_SEG:
        if (ed->cur + 1 < ed->n_segs)
            go_to(ed, ed->cur + 1, now_ms);
        else
            bell(ed);
        break;
    case UI_ACT_PREV_SEG:
        if (ed->cur > 0)
            go_to(ed, ed->cur - 1, now_ms);
        else
            bell(ed);
        break;
    case UI_ACT_NEXT_OPEN: {
        int64_t next = ed_next_untranslated(ed, ed->cur);
        if (next >= 0 && next != ed->cur)
            go_to(ed, next, now_ms);
        else
            bell(ed);
        break;
    }
    case UI_ACT_FIRST_SEG: go_to(ed, 0, now_ms); break;
    case UI_ACT_LAST_SEG: go_to(ed, ed->n_segs - 1, now_ms); break;
    case UI_ACT_COLON:
        if (f->cur == 0) {
            open_cmdline(ed);
        } else {
            rc = ed_line_insert_cp(f, ':');
            if (rc == MT_OK) field_changed(ed, now_ms), typed(ed, now_ms);
        }
        break;
    case UI_ACT_CMDLINE: open_cmdline(ed); break;
    case UI_ACT_HELP:
        ed->mode = ED_MODE_HELP;
        ed->help_scroll = 0;
        break;
    case UI_ACT_TOGGLE_PANE: ed->lower_pane ^= 1; break;
    case UI_ACT_SPELL: spell_open(ed, now_ms); break;
    case UI_ACT_GEC_ACCEPT: ed_gec_accept(ed, now_ms); break;
    case UI_ACT_GEC_DISMISS: ed_gec_dismiss(ed, now_ms); break;
    case UI_ACT_FULL_LIST:
        ed->mode = ED_MODE_LIST;
        ed->list_scroll = 0;
        break;
    case UI_ACT_HEAT_LEFT:
    case UI_ACT_HEAT_RIGHT: {
        /* by columns; screen.c clamps to what the pane can show */
        int n = s->mt ? s->mt->n_src : 0;
        int to = ed->heat_scroll + (act == UI_ACT_HEAT_LEFT ? -3 : 3);
        if (to > n - 1) to = n - 1;
        if (to < 0) to = 0;
        if (to == ed->heat_scroll) bell(ed);
        ed->heat_scroll = to;
        break;
    }
    case UI_ACT_REDRAW: ed->redraw = true; break;
    case UI_ACT_CANCEL: ed->msg[0] = '\0'; break;
    case UI_ACT_QUIT_HINT:
        ed_message(ed, MT_LOG_INFO, now_ms, "type :q Enter to quit, :wq Enter to save and quit");
        break;
    case UI_ACT_NONE: bell(ed); break;
    default:
        rc = line_action(f, act, &handled);
        if (!handled)
            bell(ed);
        else if (rc == MT_OK && changes_text(act))
            field_changed(ed, now_ms), typed(ed, now_ms);
        break;
    }
    report(ed, rc, now_ms);
}

static void cmdline_action(ui_editor *ed, ui_action act, int32_t key, int64_t now_ms) {
    ed_line *l = &ed->cmd;
    mt_status rc = MT_OK;
    bool handled;
    char list[ED_MSG_MAX];
    switch (act) {
    case UI_ACT_SELF_INSERT: rc = ed_line_insert_cp(l, (uint32_t)key); break;
    case UI_ACT_EXECUTE: execute(ed, now_ms); return;
    case UI_ACT_CANCEL: ed->mode = ED_MODE_EDIT; return;
    case UI_ACT_HIST_PREV: rc = ui_hist_move(&ed->hist, l, -1); break;
    case UI_ACT_HIST_NEXT: rc = ui_hist_move(&ed->hist, l, +1); break;
    case UI_ACT_COMPLETE:
        rc = ui_cmd_complete(l, list, sizeof list);
        if (list[0]) ed_message(ed, MT_LOG_INFO, now_ms, "%s", list);
        break;
    case UI_ACT_HELP:
        ed->mode = ED_MODE_HELP;
        ed->help_scroll = 0;
        return;
    case UI_ACT_QUOTED_INSERT: ed->quoted = true; return;
    case UI_ACT_BACKSPACE:
        if (l->len == 0) { /* as in vi: backspace on an empty line closes it */
            ed->mode = ED_MODE_EDIT;
            return;
        }
        rc = ed_line_backspace(l);
        break;
    default:
        rc = line_action(l, act, &handled);
        if (!handled) rc = ED_NOOP;
        break;
    }
    report(ed, rc, now_ms);
}

void ed_action(ui_editor *ed, ui_action act, int arg, int32_t key, int64_t now_ms) {
    if (ed->cur < 0 || ed->quit) return;
    switch (ed->mode) {
    case ED_MODE_EDIT: edit_action(ed, act, arg, key, now_ms); break;
    case ED_MODE_CMDLINE: cmdline_action(ed, act, key, now_ms); break;
    case ED_MODE_HELP:
        if (act == UI_ACT_SCROLL_UP) {
            if (ed->help_scroll > 0) ed->help_scroll -= arg > 0 ? arg : 1;
            if (ed->help_scroll < 0) ed->help_scroll = 0;
        } else if (act == UI_ACT_SCROLL_DOWN) {
            ed->help_scroll += arg > 0 ? arg : 1;
            int max = ui_help_count() - 1;
            if (ed->help_scroll > max) ed->help_scroll = max;
        } else {
            ed->mode = ED_MODE_EDIT;
        }
        break;
    case ED_MODE_SPELL: spell_action(ed, act, arg, key, now_ms); break;
    case ED_MODE_REPLACE: ed_replace_key(ed, key, now_ms); break;
    case ED_MODE_LIST:
        if (act == UI_ACT_SCROLL_UP) {
            ed->list_scroll -= arg > 0 ? arg : 1;
            if (ed->list_scroll < 0) ed->list_scroll = 0;
        } else if (act == UI_ACT_SCROLL_DOWN) {
            ed->list_scroll += arg > 0 ? arg : 1; /* screen.c clamps it */
        } else {
            ed->mode = ED_MODE_EDIT;
        }
        break;
    case ED_MODE_ASK_QUIT:
        ed->mode = ED_MODE_EDIT;
        if (key == 'y' || key == 'Y') {
            if (save(ed, false, now_ms)) quit(ed, now_ms);
        } else if (key == 'n' || key == 'N') {
            quit(ed, now_ms);
        } else {
            ed->msg[0] = '\0';
        }
        break;
    }
}

void ed_key(ui_editor *ed, int32_t key, int64_t now_ms) {
    if (ed->cur < 0 || ed->quit) return;
    if (key == UI_KEY_RESIZE) {
        ed->redraw = true;
        return;
    }
    if (ed->quoted && (ed->mode == ED_MODE_EDIT || ed->mode == ED_MODE_CMDLINE)) {
        ed->quoted = false;
        uint32_t cp = key == UI_KEY_ENTER ? '\n' : key == UI_KEY_BACKSPACE ? 0x7F : (uint32_t)key;
        if (cp == 0 || cp >= UI_KEY_SPECIAL) { /* special keys have no character */
            bell(ed);
            return;
        }
        if (ed->mode == ED_MODE_EDIT && ed->locked) { /* C-v before it was unlocked */
            bell(ed);
            return;
        }
        ed_line *l = ed->mode == ED_MODE_EDIT ? &ed->field : &ed->cmd;
        mt_status rc = ed_line_insert_cp(l, cp);
        if (ed->mode == ED_MODE_EDIT) {
            ed->segs[ed->cur].keystrokes++;
            if (rc == MT_OK) field_changed(ed, now_ms), typed(ed, now_ms);
        }
        report(ed, rc, now_ms);
        return;
    }
    ui_keymode km = ed->mode == ED_MODE_EDIT      ? UI_KEYMODE_EDIT
                    : ed->mode == ED_MODE_CMDLINE ? UI_KEYMODE_CMDLINE
                    : ed->mode == ED_MODE_SPELL   ? UI_KEYMODE_SPELL
                                                  : UI_KEYMODE_HELP;
    int arg = 0;
    ui_action act = ui_keymap_lookup(km, key, &arg);
    ed_action(ed, act, arg, key, now_ms);
}

#define ED_MSG_EXPIRE_MS 10000 /* info messages fade; warnings stay */

void ed_tick(ui_editor *ed, int64_t now_ms) {
    if (ed->comp_pending && now_ms >= ed->comp_due_ms && ed->cur >= 0) {
        ed->comp_pending = false;
        if (ed->hooks.request_completion)
            ed->hooks.request_completion(ed->hooks.user, ed->cur, ed->field.text);
    }
    if (ed->edit_pending && now_ms >= ed->edit_due_ms) flush_typed(ed);
    ed_gec_tick(ed, now_ms);
    if (ed->spell_unavail && !ed->spell_told && ed->msg[0] == '\0') { /* once */
        ed->spell_told = true;
        ed_message(ed, MT_LOG_INFO, now_ms, "%s", ed->spell_why);
    }
    if (ed->msg[0] && ed->msg_level < MT_LOG_WARN && ed->mode != ED_MODE_ASK_QUIT &&
        now_ms - ed->msg_ms >= ED_MSG_EXPIRE_MS)
        ed->msg[0] = '\0';
}

int64_t ed_deadline(const ui_editor *ed) {
    int64_t t = INT64_MAX;
    if (ed->comp_pending) t = ed->comp_due_ms;
    if (ed->edit_pending && ed->edit_due_ms < t) t = ed->edit_due_ms;
    if (ed_gec_deadline(ed) < t) t = ed_gec_deadline(ed);
    if (ed->spell_unavail && !ed->spell_told && ed->msg[0] == '\0') t = 0;
    if (ed->msg[0] && ed->msg_level < MT_LOG_WARN && ed->mode != ED_MODE_ASK_QUIT &&
        ed->msg_ms + ED_MSG_EXPIRE_MS < t)
        t = ed->msg_ms + ED_MSG_EXPIRE_MS;
    return t;
}

/* ------------------------------------------------------------- results */

void ed_take_mt(ui_editor *ed, int64_t seg, ed_mt *m) {
    if (seg < 0 || seg >= ed->n_segs) {
        ed_mt_free(m);
        return;
    }
    ed_seg *s = &ed->segs[seg];
    ed_mt_free(s->mt);
    s->mt = m;
    if (m->speed > 0) ed->speed = m->speed;
    if (s->status == UI_SEG_NEW) s->status = UI_SEG_MT;
    if (seg == ed->cur) {
        size_t rl;
        if (ed_completion_rest(ed, &rl) != NULL) ed->comp_pending = false;
    }
}

mt_status ed_apply_mt(ui_editor *ed, int64_t seg, const ui_mt_result *r) {
    if (seg < 0 || seg >= ed->n_segs)
        return mt_seterr(MT_ERR_INVALID, "ui_post_mt: no segment %lld", (long long)seg);
    ed_mt *m;
    mt_status rc = ed_mt_copy(r, &m);
    if (rc != MT_OK) return rc;
    ed_take_mt(ed, seg, m);
    return MT_OK;
}

mt_status ed_apply_completion(ui_editor *ed, int64_t seg, const char *prefix, const char *text,
                              const float *conf, int32_t n_conf) {
    size_t off;
    if (seg != ed->cur || prefix == NULL || text == NULL || !covers(&ed->field, prefix, text, &off))
        return ED_NOOP;
    ed_completion c = {.have = true};
    c.prefix = mt_try_strdup(prefix);
    c.text = mt_try_strdup(text);
    if (conf && n_conf > 0) {
        c.conf = mt_try_malloc((size_t)n_conf * sizeof(float));
        if (c.conf) memcpy(c.conf, conf, (size_t)n_conf * sizeof(float));
        c.n_conf = n_conf;
    }
    if (c.prefix == NULL || c.text == NULL || (conf && n_conf > 0 && c.conf == NULL)) {
        comp_clear(&c);
        return mt_seterr(MT_ERR_NOMEM, "ui_post_completion: cannot copy the completion");
    }
    comp_clear(&ed->comp);
    ed->comp = c;
    ed->comp_pending = false;
    return MT_OK;
}

void ed_set_progress(ui_editor *ed, const char *task, int64_t done, int64_t total) {
    if (total <= 0 || task == NULL) {
        ed->progress[0] = '\0';
        return;
    }
    snprintf(ed->progress, sizeof ed->progress, "%s %lld/%lld", task, (long long)done,
             (long long)total);
}

mt_status ed_set_model(ui_editor *ed, const char *name) {
    char *m = mt_try_strdup(name ? name : "");
    if (m == NULL) return mt_seterr(MT_ERR_NOMEM, "ui: cannot copy the model name");
    mt_free(ed->model);
    ed->model = m;
    return MT_OK;
}
