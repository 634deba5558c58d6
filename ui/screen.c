/*
** screen.c: ncursesw drawing of the editor state (ui_editor), nothing else:
** no state of its own but the terminal, the colour set-up and the bell count.
**
** Layout (rows x cols; below 40x10 only a "terminal too small" line):
**
**   narrow (< 120 cols)                 wide (>= 120 cols, >= 19 rows)
**   +-------------------------------+   +------------+---------------------+
**   | header                        |   | header                           |
**   | segment list (2..8 rows)      |   | segment    | Source              |
**   |-- Source ---------------------|   | list       | Translation (field) |
**   |-- Translation ----------------|   |            | Alternatives        |
**   |-- Alternatives | Attention ---|   |            | Attention heat map  |
**   | status line                   |   | status line                      |
**   | command line / key hints      |   | command line / key hints         |
**   +-------------------------------+   +------------+---------------------+
**
** Text is word-wrapped by display width (wcwidth: CJK takes two columns);
** '\n' shows as ↵ and '\t' as →.  Colours: has_colors() picks 8 or 256
** colours (pair number = ui_role); without colours, roles map to reverse,
** bold, dim and underline.  The heat map uses a 10-step 256-colour ramp, or
** the shades ░▒▓█ (ASCII .:+# outside UTF-8 locales) on other terminals.
*/
#define _XOPEN_SOURCE_EXTENDED 1
#define NCURSES_WIDECHAR 1
#include <langinfo.h>
#include <ncurses.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include "editor.h"

struct ui_screen {
    SCREEN *scr;
    int colors; /* 0, 8 or 256 */
    bool utf8;
    int last_bells;
    int cur_y, cur_x; /* where the cursor was left; -1 when hidden */
};

static SCREEN *active_screen; /* for the abort hook */

#define MIN_ROWS 10
#define MIN_COLS 40

/* ============================================================== styles */

static const short heat_256[UI_HEAT_LEVELS] = {234, 52, 88, 124, 160, 196, 202, 208, 214, 226};

static void init_colors(ui_screen *s) {
    s->colors = 0;
    if (!has_colors() || start_color() != OK) return;
    short bg = use_default_colors() == OK ? -1 : COLOR_BLACK;
    bool c256 = COLORS >= 256 && COLOR_PAIRS > UI_ROLE_COUNT;
    if (COLOR_PAIRS <= UI_ROLE_MSG_ERR) return; /* too few pairs: stay monochrome */
    s->colors = c256 ? 256 : 8;
    init_pair(UI_ROLE_HEADER, COLOR_BLACK, COLOR_CYAN);
    init_pair(UI_ROLE_STATUS, COLOR_WHITE, COLOR_BLUE);
    init_pair(UI_ROLE_HEADING, COLOR_CYAN, bg);
    init_pair(UI_ROLE_GREY, c256 ? 244 : COLOR_WHITE, bg);
    init_pair(UI_ROLE_CONF_LOW, c256 ? 167 : COLOR_RED, bg);
    init_pair(UI_ROLE_CONF_MID, c256 ? 179 : COLOR_YELLOW, bg);
    init_pair(UI_ROLE_MARK_MT, COLOR_YELLOW, bg);
    init_pair(UI_ROLE_MARK_EDITED, COLOR_CYAN, bg);
    init_pair(UI_ROLE_MARK_DONE, COLOR_GREEN, bg);
    init_pair(UI_ROLE_MSG_WARN, COLOR_YELLOW, COLOR_BLUE);
    init_pair(UI_ROLE_MSG_ERR, COLOR_WHITE, COLOR_RED);
    if (c256)
        for (int i = 0; i < UI_HEAT_LEVELS; i++)
            init_pair((short)(UI_ROLE_HEAT0 + i), COLOR_WHITE, heat_256[i]);
}

/* Sets the drawing attributes of a role (plus extra attributes). */
static void use_role(const ui_screen *s, int role, attr_t extra) {
    attr_t a = extra;
    short pair = 0;
    if (s->colors) {
        if (role != UI_ROLE_NORMAL && (role < UI_ROLE_HEAT0 || s->colors == 256))
            pair = (short)role;
        if (role == UI_ROLE_HEADING || role == UI_ROLE_MSG_WARN || role == UI_ROLE_MSG_ERR)
            a |= A_BOLD;
        if (role == UI_ROLE_GREY && s->colors == 8) a |= A_DIM;
    } else {
        switch (role) {
        case UI_ROLE_HEADER:
        case UI_ROLE_STATUS: a |= A_REVERSE; break;
        case UI_ROLE_HEADING:
        case UI_ROLE_MARK_DONE: a |= A_BOLD; break;
        case UI_ROLE_GREY:
        case UI_ROLE_CONF_MID: a |= A_DIM; break;
        case UI_ROLE_CONF_LOW: a |= A_DIM | A_UNDERLINE; break;
        case UI_ROLE_MSG_WARN:
        case UI_ROLE_MSG_ERR: a |= A_REVERSE | A_BOLD; break;
        default: break;
        }
    }
    attr_set(a, pair, NULL);
}

int ui_conf_role(float conf) {
    if (conf < 0.0f) return UI_ROLE_GREY;
    if (conf < 0.4f) return UI_ROLE_CONF_LOW;
    if (conf < 0.7f) return UI_ROLE_CONF_MID;
    return UI_ROLE_GREY;
}

/* =============================================================== glyphs */

/* What is drawn for cp: the glyph (as wide characters) and its width.
** special: a stand-in symbol (drawn dim). */
static int glyph(const ui_screen *s, uint32_t cp, wchar_t g[2], bool *special) {
    *special = false;
    g[1] = 0;
    if (cp < 0x20 || cp == 0x7F) {
        *special = true;
        g[0] = cp == '\n'   ? (s->utf8 ? 0x21B5 : '|')
               : cp == '\t' ? (s->utf8 ? 0x2192 : '>')
                            : (s->utf8 ? 0xB7 : '.');
        return 1;
    }
    if (!s->utf8 && cp >= 0x80) {
        g[0] = '?';
        return 1;
    }
    int w = wcwidth((wchar_t)cp);
    if (w < 0) {
        *special = true;
        g[0] = s->utf8 ? 0xFFFD : '?';
        return 1;
    }
    g[0] = (wchar_t)cp;
    return w;
}

static void put_glyph(int y, int x, const wchar_t g[2]) { mvaddnwstr(y, x, g, 1); }

/* One line of text at (y, x), clipped to maxw columns; returns the columns
** used.  Control characters become symbols. */
static int put_text(const ui_screen *s, int y, int x, int maxw, const char *t, size_t n, int role,
                    attr_t extra) {
    int col = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += mt_utf8_decode(t + i, n - i, &cp);
        wchar_t g[2];
        bool special;
        int w = glyph(s, cp, g, &special);
        if (col + w > maxw) break;
        use_role(s, role, extra | (special ? A_DIM : 0));
        put_glyph(y, x + col, g);
        col += w;
    }
    use_role(s, UI_ROLE_NORMAL, 0);
    return col;
}

static int put_str(const ui_screen *s, int y, int x, int maxw, const char *t, int role,
                   attr_t extra) {
    return put_text(s, y, x, maxw, t, strlen(t), role, extra);
}

static void fill_row(const ui_screen *s, int y, int x, int w, int role, attr_t extra) {
    use_role(s, role, extra);
    mvhline(y, x, ' ', w);
    use_role(s, UI_ROLE_NORMAL, 0);
}

/* A horizontal or vertical line in the current attributes: box-drawing
** characters in UTF-8 locales (the terminal's alternate character set is
** not honoured everywhere, e.g. by tmux in UTF-8 mode), else ACS. */
static void rule(const ui_screen *s, int y, int x, int n, bool horizontal) {
    if (!s->utf8) {
        if (horizontal)
            mvhline(y, x, ACS_HLINE, n);
        else
            mvvline(y, x, ACS_VLINE, n);
        return;
    }
    attr_t a;
    short pair;
    cchar_t cc;
    wchar_t w[2] = {horizontal ? 0x2500 : 0x2502, 0};
    attr_get(&a, &pair, NULL);
    setcchar(&cc, w, a, pair, NULL);
    if (horizontal)
        mvhline_set(y, x, &cc, n);
    else
        mvvline_set(y, x, &cc, n);
}

static bool is_space_ascii(uint32_t cp) { return cp == ' ' || cp == '\t' || cp == '\n'; }

/* ============================================================ word wrap */

typedef struct wrap {
    const ui_screen *s;
    const char *t;
    size_t n;
    int width;
    size_t i;
    int row, col;
    bool prev_space;
} wrap;

typedef struct wcell {
    size_t off;
    int row, col, w;
    wchar_t g[2];
    bool special;
} wcell;

static void wrap_init(wrap *w, const ui_screen *s, const char *t, size_t n, int width) {
    *w = (wrap){.s = s, .t = t, .n = n, .width = width > 0 ? width : 1, .prev_space = true};
}

static int word_width(const wrap *w, size_t i) {
    int total = 0;
    while (i < w->n && total <= w->width) {
        uint32_t cp;
        i += mt_utf8_decode(w->t + i, w->n - i, &cp);
        if (is_space_ascii(cp)) break;
        wchar_t g[2];
        bool sp;
        total += glyph(w->s, cp, g, &sp);
    }
    return total;
}

/* Places the next character: word wrap, long words broken anywhere. */
static bool wrap_next(wrap *w, wcell *c) {
    if (w->i >= w->n) return false;
    uint32_t cp;
    size_t k = mt_utf8_decode(w->t + w->i, w->n - w->i, &cp);
    int gw = glyph(w->s, cp, c->g, &c->special);
    bool sp = is_space_ascii(cp);
    if (!sp && w->prev_space && w->col > 0) {
        int ww = word_width(w, w->i);
        if (w->col + ww > w->width && ww <= w->width) w->row++, w->col = 0;
    }
    if (w->col > 0 && w->col + gw > w->width) w->row++, w->col = 0;
    c->off = w->i;
    c->row = w->row;
    c->col = w->col;
    c->w = gw;
    w->col += gw;
    w->i += k;
    w->prev_space = sp;
    if (cp == '\n') w->row++, w->col = 0;
    return true;
}

/* Where a cursor after the last character goes. */
static void wrap_end(const wrap *w, int *row, int *col) {
    if (w->col >= w->width) {
        *row = w->row + 1;
        *col = 0;
    } else {
        *row = w->row;
        *col = w->col;
    }
}

static int wrapped_rows(const ui_screen *s, const char *t, size_t n, int width) {
    wrap w;
    wcell c;
    wrap_init(&w, s, t, n, width);
    while (wrap_next(&w, &c)) {
    }
    int r, col;
    wrap_end(&w, &r, &col);
    return r + 1;
}

/* ================================================================ panes */

typedef struct rect {
    int y, x, h, w;
} rect;

static const char *status_name(ui_seg_status st) {
    switch (st) {
    case UI_SEG_NEW: return "new";
    case UI_SEG_MT: return "MT";
    case UI_SEG_EDITED: return "edited";
    case UI_SEG_CONFIRMED: return "confirmed";
    }
    return "?";
}

static void heading(const ui_screen *s, int y, int x, int w, const char *title) {
    use_role(s, UI_ROLE_HEADING, 0);
    rule(s, y, x, w, true);
    if (w > 6) {
        mvaddch(y, x + 1, ' ');
        int used = put_str(s, y, x + 2, w - 4, title, UI_ROLE_HEADING, 0);
        use_role(s, UI_ROLE_HEADING, 0);
        mvaddch(y, x + 2 + used, ' ');
    }
    use_role(s, UI_ROLE_NORMAL, 0);
}

static void draw_header(const ui_screen *s, const ui_editor *ed, int cols) {
    char left[256], right[128];
    fill_row(s, 0, 0, cols, UI_ROLE_HEADER, 0);
    snprintf(left, sizeof left, " mtpe edit  %s%s%s%s%s", ed->title ? ed->title : "",
             ed->src_lang || ed->trg_lang ? "  " : "", ed->src_lang ? ed->src_lang : "?",
             ed->src_lang || ed->trg_lang ? (s->utf8 ? "\xe2\x86\x92" : "->") : "",
             ed->src_lang || ed->trg_lang ? (ed->trg_lang ? ed->trg_lang : "?") : "");
    int pct = (int)(ed->n_segs ? ed->n_confirmed * 100 / ed->n_segs : 0);
    int bar = cols >= 100 ? 20 : 10;
    char b[32];
    int full = (int)(ed->n_segs ? ed->n_confirmed * bar / ed->n_segs : 0);
    for (int i = 0; i < bar; i++)
        b[i] = i < full ? '#' : '.';
    b[bar] = '\0';
    snprintf(right, sizeof right, "[%s] %3d%%  %lld/%lld confirmed ", b, pct,
             (long long)ed->n_confirmed, (long long)ed->n_segs);
    int rw = (int)strlen(right);
    int lw = put_str(s, 0, 0, cols, left, UI_ROLE_HEADER, A_BOLD);
    if (lw + rw + 2 <= cols) put_str(s, 0, cols - rw, rw, right, UI_ROLE_HEADER, 0);
}

static int digits_of(int64_t n) {
    int d = 1;
    while (n >= 10)
        n /= 10, d++;
    return d;
}

static void draw_list(const ui_screen *s, const ui_editor *ed, rect r) {
    int64_t n = ed->n_segs, top = ed->cur - r.h / 2;
    if (top > n - r.h) top = n - r.h;
    if (top < 0) top = 0;
    int dg = digits_of(n);
    static const char marks[] = {' ', 'm', 'e', '*'};
    static const int mark_roles[] = {UI_ROLE_NORMAL, UI_ROLE_MARK_MT, UI_ROLE_MARK_EDITED,
                                     UI_ROLE_MARK_DONE};
    for (int row = 0; row < r.h && top + row < n; row++) {
        int64_t i = top + row;
        const ed_seg *sg = &ed->segs[i];
        int y = r.y + row;
        attr_t sel = i == ed->cur ? A_REVERSE : 0;
        if (sel) fill_row(s, y, r.x, r.w, UI_ROLE_NORMAL, sel);
        char num[32], mark[2] = {marks[sg->status], 0};
        int nd = snprintf(num, sizeof num, "%lld ", (long long)i + 1) - 1;
        int x = r.x + (dg > nd ? dg - nd : 0); /* right-aligned numbers */
        x += put_str(s, y, x, r.x + r.w - x, num, UI_ROLE_NORMAL, sel);
        x += put_str(s, y, x, r.x + r.w - x, mark, mark_roles[sg->status], sel | A_BOLD);
        x += put_str(s, y, x, r.x + r.w - x, " ", UI_ROLE_NORMAL, sel);
        put_str(s, y, x, r.x + r.w - x, sg->source, UI_ROLE_NORMAL, sel);
    }
}

/* Word-wrapped text in role; the bytes inside marks (n_marks spans in
** order) are drawn underlined in the glossary colour. */
static void draw_wrapped_marked(const ui_screen *s, const char *t, const ui_span *marks,
                                int32_t n_marks, int role, rect r) {
    wrap w;
    wcell c;
    size_t n = strlen(t);
    int32_t mk = 0;
    wrap_init(&w, s, t, n, r.w);
    while (wrap_next(&w, &c)) {
        while (mk < n_marks && (size_t)marks[mk].start + (size_t)marks[mk].len <= c.off)
            mk++;
        bool marked = mk < n_marks && (size_t)marks[mk].start <= c.off;
        if (c.row >= r.h) { /* more than fits: mark the cut */
            wchar_t g[2] = {s->utf8 ? 0x2026 : '>', 0};
            use_role(s, UI_ROLE_HEADING, 0);
            put_glyph(r.y + r.h - 1, r.x + r.w - 1, g);
            use_role(s, UI_ROLE_NORMAL, 0);
            break;
        }
        if (marked)
            use_role(s, UI_ROLE_MARK_EDITED, A_UNDERLINE | (c.special ? A_DIM : 0));
        else
            use_role(s, role, c.special ? A_DIM : 0);
        put_glyph(r.y + c.row, r.x + c.col, c.g);
    }
    use_role(s, UI_ROLE_NORMAL, 0);
}

/* The field text followed by the displayed completion (malloc'd; on OOM
** the completion is left out and *fl == *n). */
static char *field_with_rest(const ui_editor *ed, size_t *n) {
    size_t hs, he;
    const char *view = ed_replace_view(ed, &hs, &he); /* :replace asking: its text */
    char *t = view ? mt_try_strdup(view) : ed_field_text_with_completion(ed);
    if (t == NULL) {
        *n = ed->field.len;
        return NULL;
    }
    *n = strlen(t);
    return t;
}

static int field_rows(const ui_screen *s, const ui_editor *ed, int width) {
    size_t n;
    char *t = field_with_rest(ed, &n);
    int rows = wrapped_rows(s, t ? t : ed->field.text, n, width);
    mt_free(t);
    return rows;
}

static void draw_field(const ui_screen *s, const ui_editor *ed, rect r, int *cy, int *cx) {
    size_t n, fl = ed->field.len, cur = ed->field.cur, hs = 0, he = 0;
    char *owned = field_with_rest(ed, &n);
    const char *t = owned ? owned : ed->field.text;
    bool hl = owned && ed_replace_view(ed, &hs, &he) != NULL;
    if (hl) fl = n, cur = hs; /* the occurrence :replace asks about, reversed */
    wrap w;
    wcell c;
    int crow = -1, ccol = 0;
    wrap_init(&w, s, t, n, r.w);
    while (wrap_next(&w, &c))
        if (c.off == cur) crow = c.row, ccol = c.col;
    if (crow < 0) wrap_end(&w, &crow, &ccol);
    int top = crow >= r.h ? crow - r.h + 1 : 0;
    /* misspelled words: underlined, red where there are colours */
    int n_bad = ed->n_spell, bi = 0; /* ui_screen_draw brought them up to date */
    const ui_span *bad = ed->spell;
    int n_gec = 0, gi = 0; /* grammar corrections: underlined, yellow */
    const ed_gec_fix *gec = hl ? NULL : ed_gec_fixes(ed, &n_gec);
    wrap_init(&w, s, t, n, r.w);
    while (wrap_next(&w, &c)) {
        if (c.row < top) continue;
        if (c.row >= top + r.h) break;
        int role = UI_ROLE_NORMAL;
        attr_t extra = c.special ? A_DIM : 0;
        while (bi < n_bad && (size_t)(bad[bi].start + bad[bi].len) <= c.off)
            bi++;
        if (c.off < fl && bi < n_bad && (size_t)bad[bi].start <= c.off) {
            extra |= A_UNDERLINE;
            if (s->colors) role = UI_ROLE_CONF_LOW;
        }
        /* an insertion (len 0) marks the character after it */
        while (gi < n_gec &&
               (size_t)gec[gi].start + (size_t)(gec[gi].len ? gec[gi].len : 1) <= c.off)
            gi++;
        if (c.off < fl && gi < n_gec && (size_t)gec[gi].start <= c.off) {
            extra |= A_UNDERLINE;
            if (s->colors) role = UI_ROLE_CONF_MID;
        }
        if (c.off >= fl) role = ui_conf_role(ed_completion_conf(ed, c.off - fl));
        if (hl && c.off >= hs && c.off < he) role = UI_ROLE_MSG_WARN, extra |= A_REVERSE;
        use_role(s, role, extra);
        put_glyph(r.y + c.row - top, r.x + c.col, c.g);
    }
    use_role(s, UI_ROLE_NORMAL, 0);
    const ed_seg *sg = &ed->segs[ed->cur];
    if (n == 0 && sg->mt == NULL && sg->status == UI_SEG_NEW)
        put_str(s, r.y, r.x + 1, r.w - 1, "(waiting for the machine translation)", UI_ROLE_GREY, 0);
    *cy = r.y + crow - top;
    *cx = r.x + (ccol < r.w ? ccol : r.w - 1);
    mt_free(owned);
}

/* Draws t wrapped into w columns from row y (at most max_rows rows, the
** first row starting at column x0 of the area, continuation rows at x);
** MT words coloured by conf when given.  Returns the rows t needs (even
** those not drawn); *cut: not all of it was drawn (an ellipsis marks it). */
static int draw_entry_text(const ui_screen *s, int y, int x, int w, int max_rows, const char *t,
                           const float *conf, int32_t n_conf, bool *cut) {
    wrap wr;
    wcell c;
    size_t n = strlen(t);
    int word = -1, rows = 0;
    bool in = false;
    *cut = false;
    wrap_init(&wr, s, t, n, w);
    while (wrap_next(&wr, &c)) {
        uint32_t cp;
        mt_utf8_decode(t + c.off, n - c.off, &cp);
        bool sp = is_space_ascii(cp);
        if (!sp && !in) word++;
        in = !sp;
        rows = c.row + 1;
        if (c.row >= max_rows) {
            *cut = true;
            continue;
        }
        float cf = (!sp && conf && word < n_conf) ? conf[word] : -1.0f;
        int role = cf >= 0.0f && cf < 0.7f ? ui_conf_role(cf) : UI_ROLE_NORMAL;
        use_role(s, role, c.special ? A_DIM : 0);
        put_glyph(y + c.row, x + c.col, c.g);
    }
    if (*cut && max_rows > 0) {
        wchar_t g[2] = {s->utf8 ? 0x2026 : '>', 0};
        use_role(s, UI_ROLE_HEADING, 0);
        put_glyph(y + max_rows - 1, x + w - 1, g);
    }
    use_role(s, UI_ROLE_NORMAL, 0);
    return rows > 0 ? rows : 1;
}

/* One alternative: "M-1 " (or "  12 " past 9), its label ("TM 95% ") or
** its score at the right, and its text wrapped under itself (continuation
** rows indented by the prefix); a TM entry's source follows on rows of its
** own, grey, labelled "src", its differences to the segment's source marked.  Draws at most max_rows rows (none: only
** measures); returns the rows it needs. */
static int draw_alt(const ui_screen *s, const ed_mt *m, int i, int y, int x, int w, int max_rows,
                    bool *cut) {
    char key[16], score[32] = "";
    if (i < 9)
        snprintf(key, sizeof key, "M-%d ", i + 1);
    else
        snprintf(key, sizeof key, "%3d ", i + 1);
    const char *tag = m->labels ? m->labels[i] : NULL;
    if (!tag && m->scores) snprintf(score, sizeof score, " %.2f", m->scores[i]);
    int kw = (int)strlen(key), sw = (int)strlen(score);
    /* the label gets what leaves the text 8 columns at least (then it is cut) */
    int tagw = tag ? ui_str_width(tag, strlen(tag)) : 0;
    if (tag && tagw > w - kw - sw - 9) tagw = w - kw - sw - 9 > 0 ? w - kw - sw - 9 : 0;
    int pw = kw + (tagw ? tagw + 1 : 0), tw = w - pw - sw;
    if (tw < 4) tw = w - pw, sw = 0;
    if (tw < 1) tw = 1;
    if (max_rows > 0) {
        int xx = x + put_str(s, y, x, w, key, UI_ROLE_HEADING, 0);
        if (tagw) {
            xx += put_str(s, y, xx, tagw, tag, UI_ROLE_MARK_DONE, 0);
            put_str(s, y, xx, x + w - xx, " ", UI_ROLE_NORMAL, 0);
        }
        if (sw) put_str(s, y, x + w - sw, sw, score, UI_ROLE_GREY, 0);
    }
    bool is_hyp = strcmp(m->nbest[i], m->hyp) == 0;
    const float *conf = is_hyp ? m->conf : NULL;
    const char *src = m->sources ? m->sources[i] : NULL; /* a TM entry's source */
    int src_rows = src ? wrapped_rows(s, src, strlen(src), tw) : 0;
    if (max_rows <= 0) {
        *cut = false;
        return wrapped_rows(s, m->nbest[i], strlen(m->nbest[i]), tw) + src_rows;
    }
    int rows = draw_entry_text(s, y, x + pw, tw, max_rows, m->nbest[i], conf,
                               is_hyp ? m->n_conf : 0, cut);
    if (src) { /* under it, grey: the source, its differences to this one marked */
        int left = max_rows - rows;
        if (left > 0) {
            if (tagw >= 3) put_str(s, y + rows, x + kw, tagw, "src", UI_ROLE_GREY, 0);
            draw_wrapped_marked(s, src, m->src_marks[i], m->n_src_marks[i], UI_ROLE_GREY,
                                (rect){y + rows, x + pw, left < src_rows ? left : src_rows, tw});
        }
        if (left < src_rows) *cut = true;
        rows += src_rows;
    }
    return rows;
}

/* The alternatives pane: every entry wrapped in full, as many as fit (at
** most M-1..M-9); when some do not fit, the last row says F4 shows them. */
static void draw_nbest(const ui_screen *s, const ui_editor *ed, rect r) {
    const ed_mt *m = ed->segs[ed->cur].mt;
    if (m == NULL || m->n_nbest == 0) {
        put_str(s, r.y, r.x, r.w, m ? "(no alternatives)" : "(waiting for the machine translation)",
                UI_ROLE_GREY, 0);
        return;
    }
    int n = m->n_nbest < 9 ? m->n_nbest : 9, need = 0;
    bool cut;
    for (int i = 0; i < n; i++)
        need += draw_alt(s, m, i, 0, r.x, r.w, 0, &cut);
    bool more = need > r.h || m->n_nbest > 9;
    int avail = more && r.h > 1 ? r.h - 1 : r.h, y = r.y, shown = 0;
    for (int i = 0; i < n && y < r.y + avail; i++) {
        y += draw_alt(s, m, i, y, r.x, r.w, r.y + avail - y, &cut);
        if (!cut) shown++;
    }
    if (more && r.h > 1) {
        char hint[96];
        snprintf(hint, sizeof hint, "(%d of %d shown in full: F4 shows all)", shown,
                 (int)m->n_nbest);
        put_str(s, r.y + r.h - 1, r.x, r.w, hint, UI_ROLE_GREY, 0);
    }
}

/* F4: every alternative in full, from entry ed->list_scroll on (clamped
** here; the view scrolls by entries), a blank row between entries. */
static void draw_full_list(const ui_screen *s, ui_editor *ed, rect r) {
    const ed_mt *m = ed->segs[ed->cur].mt;
    int n = m ? m->n_nbest : 0;
    if (ed->list_scroll > n - 1) ed->list_scroll = n > 0 ? n - 1 : 0;
    char title[160];
    snprintf(title, sizeof title,
             "All alternatives of segment %lld: %d, from %d  (Up/Down PgUp/PgDn scroll)",
             (long long)ed->cur + 1, n, n ? ed->list_scroll + 1 : 0);
    heading(s, r.y, r.x, r.w, title);
    rect b = {r.y + 1, r.x + 1, r.h - 1, r.w - 2};
    if (n == 0) {
        put_str(s, b.y, b.x, b.w, m ? "(no alternatives)" : "(waiting for the machine translation)",
                UI_ROLE_GREY, 0);
        return;
    }
    bool cut;
    int y = b.y;
    for (int i = ed->list_scroll; i < n && y < b.y + b.h; i++)
        y += draw_alt(s, m, i, y, b.x, b.w, b.y + b.h - y, &cut) + 1;
}

/* The heat map.  Columns are as wide as the longest source token label
** (at most HEAT_COL_MAX columns, at least 2; wider when all fit), so every
** label is readable; when they do not all fit, the map scrolls by columns
** from ed->heat_scroll (M-Left/M-Right; clamped here), ‹ and › marking
** the columns out of view. */
#define HEAT_COL_MAX 16
static void draw_heat(const ui_screen *s, ui_editor *ed, rect r) {
    const ed_mt *m = ed->segs[ed->cur].mt;
    if (r.h < 2 || r.w < 10) return;
    if (m == NULL || m->attn == NULL) {
        put_str(s, r.y, r.x, r.w, "(no attention for this segment)", UI_ROLE_GREY, 0);
        return;
    }
    int lw = 0;
    for (int32_t t = 0; t < m->n_trg; t++) {
        int w = ui_str_width(m->trg_tok[t], strlen(m->trg_tok[t]));
        if (w > lw) lw = w;
    }
    lw = lw > 14 ? 15 : lw + 1;
    if (lw > r.w / 3) lw = r.w / 3;
    int longest = 1;
    for (int32_t j = 0; j < m->n_src; j++) {
        int w = ui_str_width(m->src_tok[j], strlen(m->src_tok[j]));
        if (w > longest) longest = w;
    }
    int room = r.w - lw - 1; /* the last column: the › mark */
    int cw = longest + 1 > HEAT_COL_MAX ? HEAT_COL_MAX : longest + 1;
    int spread = room / (m->n_src > 0 ? m->n_src : 1); /* when all fit: up to 8 wide */
    if (spread > 8) spread = 8;
    if (spread > cw) cw = spread;
    if (cw > room) cw = room;
    if (cw < 2) cw = 2;
    int ncols = room / cw;
    if (ncols < 1) ncols = 1;
    if (ncols > m->n_src) ncols = m->n_src;
    int first = ed->heat_scroll, maxfirst = m->n_src - ncols;
    if (first > maxfirst) first = maxfirst;
    if (first < 0) first = 0;
    ed->heat_scroll = first;
    for (int j = 0; j < ncols; j++)
        put_str(s, r.y, r.x + lw + j * cw, cw - 1, m->src_tok[first + j], UI_ROLE_HEADING, 0);
    if (first > 0)
        put_str(s, r.y, r.x + lw - 1, 1, s->utf8 ? "\xe2\x80\xb9" : "<", UI_ROLE_HEADING, 0);
    if (first + ncols < m->n_src)
        put_str(s, r.y, r.x + r.w - 1, 1, s->utf8 ? "\xe2\x80\xba" : ">", UI_ROLE_HEADING, 0);
    static const wchar_t shades_u[5] = {' ', 0x2591, 0x2592, 0x2593, 0x2588};
    static const wchar_t shades_a[5] = {' ', '.', ':', '+', '#'};
    int rows = r.h - 1;
    bool cut = m->n_trg > rows;
    for (int t = 0; t < m->n_trg && t < rows; t++) {
        int y = r.y + 1 + t;
        if (cut && t == rows - 1) {
            char more[48];
            snprintf(more, sizeof more, "... %d more target tokens", (int)(m->n_trg - t));
            put_str(s, y, r.x, r.w, more, UI_ROLE_GREY, 0);
            break;
        }
        put_str(s, y, r.x, lw - 1, m->trg_tok[t], UI_ROLE_NORMAL, 0);
        for (int j = 0; j < ncols; j++) {
            float v = m->attn[(size_t)t * (size_t)m->n_src + (size_t)(first + j)];
            v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
            int x = r.x + lw + j * cw;
            if (s->colors == 256) {
                int lvl = (int)(v * (UI_HEAT_LEVELS - 1) + 0.5f);
                use_role(s, UI_ROLE_HEAT0 + lvl, 0);
                mvhline(y, x, ' ', cw - 1);
            } else {
                int lvl = v < 0.1f ? 0 : v < 0.3f ? 1 : v < 0.5f ? 2 : v < 0.75f ? 3 : 4;
                wchar_t g[2] = {s->utf8 ? shades_u[lvl] : shades_a[lvl], 0};
                use_role(s, UI_ROLE_NORMAL, 0);
                for (int k = 0; k < cw - 1; k++)
                    put_glyph(y, x + k, g);
            }
        }
        use_role(s, UI_ROLE_NORMAL, 0);
    }
}

/* The status line: position and words on the left, then model, speed and
** background progress, then the latest message; when the message would get
** fewer than 40 columns, progress, speed and model give way in that order. */
static void draw_status(const ui_screen *s, const ui_editor *ed, int y, int cols) {
    const char *sep = s->utf8 ? " \xe2\x94\x82 " : " | ";
    char left[128], items[3][128], buf[512];
    int n_items = 0;
    fill_row(s, y, 0, cols, UI_ROLE_STATUS, 0);
    int pct = (int)(ed->words_total ? ed->words_done * 100 / ed->words_total : 0);
    snprintf(left, sizeof left, " seg %lld/%lld%s%lld/%lld words (%d%%)", (long long)ed->cur + 1,
             (long long)ed->n_segs, sep, (long long)ed->words_done, (long long)ed->words_total,
             pct);
    if (ed->model && ed->model[0]) snprintf(items[n_items++], sizeof items[0], "%s", ed->model);
    if (ed->speed > 0) snprintf(items[n_items++], sizeof items[0], "%.0f tok/s", ed->speed);
    if (ed->progress[0]) snprintf(items[n_items++], sizeof items[0], "%s", ed->progress);
    int sw = ui_str_width(sep, strlen(sep));
    int msg_w = ed->msg[0] ? ui_str_width(ed->msg, strlen(ed->msg)) : 0;
    int want_msg = msg_w ? sw + (msg_w < 40 ? msg_w : 40) : 0;
    for (;;) {
        int o = snprintf(buf, sizeof buf, "%s", left);
        for (int i = 0; i < n_items && o < (int)sizeof buf; i++)
            o += snprintf(buf + o, sizeof buf - (size_t)o, "%s%s", sep, items[i]);
        if (n_items == 0 || ui_str_width(buf, strlen(buf)) + want_msg <= cols) break;
        n_items--;
    }
    int x = put_str(s, y, 0, cols, buf, UI_ROLE_STATUS, 0);
    if (ed->msg[0] && x + sw < cols) {
        x += put_str(s, y, x, cols - x, sep, UI_ROLE_STATUS, 0);
        int role = ed->msg_level >= MT_LOG_ERROR  ? UI_ROLE_MSG_ERR
                   : ed->msg_level == MT_LOG_WARN ? UI_ROLE_MSG_WARN
                                                  : UI_ROLE_STATUS;
        put_str(s, y, x, cols - x, ed->msg, role, 0);
    }
}

/* The command line, scrolled so that the cursor is visible. */
static void draw_cmdline(const ui_screen *s, const ui_editor *ed, int y, int cols, int *cy,
                         int *cx) {
    const ed_line *l = &ed->cmd;
    size_t start = 0;
    int avail = cols - 2;
    while (start < l->cur && ui_str_width(l->text + start, l->cur - start) > avail)
        start = ui_utf8_next(l->text, l->len, start);
    put_str(s, y, 0, 1, ":", UI_ROLE_NORMAL, A_BOLD);
    put_text(s, y, 1, cols - 1, l->text + start, l->len - start, UI_ROLE_NORMAL, 0);
    *cy = y;
    *cx = 1 + ui_str_width(l->text + start, l->cur - start);
}

static void draw_bottom(const ui_screen *s, const ui_editor *ed, int y, int cols, int *cy,
                        int *cx) {
    switch (ed->mode) {
    case ED_MODE_CMDLINE: draw_cmdline(s, ed, y, cols, cy, cx); break;
    case ED_MODE_ASK_QUIT:
        put_str(s, y, 0, cols, "Unsaved changes. Save before quitting? (y)es (n)o, other: stay",
                UI_ROLE_MSG_WARN, 0);
        break;
    case ED_MODE_HELP:
        put_str(s, y, 0, cols, "Up/Down PgUp/PgDn scroll, any other key closes the help",
                UI_ROLE_GREY, 0);
        break;
    case ED_MODE_SPELL: {
        /* 'Datie'  1 Datei  2 Dativ  a add  Esc close */
        char line[1200];
        int o = snprintf(line, sizeof line, "'%.*s' ", (int)(ed->sug_len > 80 ? 80 : ed->sug_len),
                         ed->field.text + ed->sug_at);
        if (ed->n_sug == 0) o += snprintf(line + o, sizeof line - (size_t)o, " (no suggestions)");
        for (int i = 0; i < ed->n_sug && o < (int)sizeof line; i++)
            o += snprintf(line + o, sizeof line - (size_t)o, " %d %s ", i + 1, ed->sug[i]);
        if (o < (int)sizeof line) snprintf(line + o, sizeof line - (size_t)o, " a add  Esc close");
        put_str(s, y, 0, cols, line, UI_ROLE_HEADING, 0);
        break;
    }
    case ED_MODE_LIST:
        put_str(s, y, 0, cols, "Up/Down PgUp/PgDn scroll, any other key closes the list",
                UI_ROLE_GREY, 0);
        break;
    case ED_MODE_REPLACE:
        put_str(s, y, 0, cols,
                "Replace this occurrence?  y: yes  n: no  a: this and all remaining  q Esc: stop",
                UI_ROLE_MSG_WARN, 0);
        break;
    case ED_MODE_EDIT:
        put_str(s, y, 0, cols,
                "F1 help  Tab word  End all  Enter confirm  M-1..9 alternative  PgUp/PgDn "
                "segment  :q quit",
                UI_ROLE_GREY, 0);
        break;
    }
}

static void draw_help(const ui_screen *s, ui_editor *ed, rect r) {
    int n = ui_help_count(), max = n - r.h;
    if (max < 0) max = 0;
    if (ed->help_scroll > max) ed->help_scroll = max;
    char buf[256];
    for (int row = 0; row < r.h; row++) {
        const char *line = ui_help_line(ed->help_scroll + row, buf, sizeof buf);
        if (line == NULL) break;
        bool title = line[0] && line[0] != ' ';
        put_str(s, r.y + row, r.x + 1, r.w - 2, line, title ? UI_ROLE_HEADING : UI_ROLE_NORMAL, 0);
    }
}

/* Rows the alternatives M-1..M-9 need, wrapped at width w. */
static int nbest_rows(const ui_screen *s, const ed_mt *m, int w) {
    int rows = 0;
    bool cut;
    for (int i = 0; m && i < m->n_nbest && i < 9; i++)
        rows += draw_alt(s, m, i, 0, 0, w, 0, &cut);
    return rows < 1 ? 1 : rows;
}

/* The forms of the PO plural entry that segment seg is a form of: its
** label says "plural form K/N" (app/edit labels them so) and the N forms
** are consecutive segments from *first.  false: not a plural form. */
static bool plural_entry(const ui_editor *ed, int64_t seg, int64_t *first, int *n) {
    int k, nn;
    const char *l = ed->segs[seg].label;
    if (l == NULL || sscanf(l, "plural form %d/%d", &k, &nn) != 2 || k < 1 || nn < 2 || k > nn)
        return false;
    int64_t f = seg - (k - 1);
    if (f < 0 || f + nn > ed->n_segs) return false;
    for (int j = 0; j < nn; j++) {
        int kj, nj;
        const char *lj = ed->segs[f + j].label;
        if (lj == NULL || sscanf(lj, "plural form %d/%d", &kj, &nj) != 2 || kj != j + 1 || nj != nn)
            return false;
    }
    *first = f, *n = nn;
    return true;
}

/* The source pane's text: the source, or for a plural form both sources
** of the entry, "singular: msgid" and "plural: msgid_plural" (malloc'd;
** NULL: the plain source, also on OOM). */
static void plural_sources(const ui_editor *ed, char **one, char **other) {
    int64_t f;
    int n;
    *one = *other = NULL;
    if (!plural_entry(ed, ed->cur, &f, &n)) return;
    const char *a = ed->segs[f].source, *b = ed->segs[f + 1].source;
    size_t la = strlen(a) + 16, lb = strlen(b) + 16;
    *one = mt_try_malloc(la);
    *other = mt_try_malloc(lb);
    if (*one == NULL || *other == NULL) {
        mt_free(*one), mt_free(*other);
        *one = *other = NULL;
        return;
    }
    snprintf(*one, la, "singular: %s", a);
    snprintf(*other, lb, "plural:   %s", b);
}

static int source_rows(const ui_screen *s, const ui_editor *ed, int tw) {
    char *one, *other;
    plural_sources(ed, &one, &other);
    const ed_seg *sg = &ed->segs[ed->cur];
    int rows =
        one ? wrapped_rows(s, one, strlen(one), tw) + wrapped_rows(s, other, strlen(other), tw)
            : wrapped_rows(s, sg->source, strlen(sg->source), tw);
    mt_free(one), mt_free(other);
    if (sg->terms_line) rows += wrapped_rows(s, sg->terms_line, strlen(sg->terms_line), tw);
    return rows;
}

/* Rows of the "other forms" block of a plural form (heading included). */
static int others_rows(const ui_editor *ed) {
    int64_t f;
    int n;
    return plural_entry(ed, ed->cur, &f, &n) ? n : 0;
}

/* The current translations of the entry's other forms, one row each. */
static void draw_others(const ui_screen *s, const ui_editor *ed, int y, int x, int w, int rows) {
    int64_t f;
    int n;
    if (!plural_entry(ed, ed->cur, &f, &n)) return;
    for (int j = 0; j < n && rows > 0; j++) {
        if (f + j == ed->cur) continue;
        const ed_seg *o = &ed->segs[f + j];
        int xx = x + put_str(s, y, x, w, o->label, UI_ROLE_HEADING, 0);
        xx += put_str(s, y, xx, x + w - xx, ": ", UI_ROLE_HEADING, 0);
        if (o->target[0])
            put_str(s, y, xx, x + w - xx, o->target, UI_ROLE_NORMAL, 0);
        else
            put_str(s, y, xx, x + w - xx, "(no translation yet)", UI_ROLE_GREY, 0);
        y++, rows--;
    }
}

/* Rows the stacked panes of the narrow layout would use at text width tw. */
static int main_need(const ui_screen *s, const ui_editor *ed, int tw) {
    const ed_seg *sg = &ed->segs[ed->cur];
    const ed_mt *m = sg->mt;
    int lower = 1;
    if (ed->lower_pane == 0 && m) lower = nbest_rows(s, m, tw);
    if (ed->lower_pane == 1 && m && m->attn) lower = m->n_trg + 1;
    return 3 + source_rows(s, ed, tw) + field_rows(s, ed, tw) + lower + others_rows(ed);
}

/* Sizes of the three (or four) stacked sections of the main area. */
static void draw_main(const ui_screen *s, ui_editor *ed, rect m, bool both_panes, int *cy,
                      int *cx) {
    const ed_seg *sg = &ed->segs[ed->cur];
    int tx = m.x + 1, tw = m.w - 2;
    int headings = both_panes ? 4 : 3;
    int avail = m.h - headings;
    if (avail < 2 || tw < 4) return;
    char *one, *other; /* a plural form: both sources of the entry */
    plural_sources(ed, &one, &other);
    int src_need = source_rows(s, ed, tw);
    int fld_need = field_rows(s, ed, tw);
    int lower_min = avail >= 8 ? 3 : 0;
    int cap = (avail - lower_min) / 2;
    if (cap < 1) cap = 1;
    int src_h = src_need < cap ? src_need : cap, fld_h = fld_need < cap ? fld_need : cap;
    int spare = avail - lower_min - src_h - fld_h;
    if (spare > 0 && fld_need > fld_h) {
        int add = fld_need - fld_h < spare ? fld_need - fld_h : spare;
        fld_h += add, spare -= add;
    }
    if (spare > 0 && src_need > src_h) src_h += src_need - src_h < spare ? src_need - src_h : spare;
    int lower_h = avail - src_h - fld_h;

    char title[256];
    int y = m.y;
    snprintf(title, sizeof title, "Source  %lld/%lld%s%s", (long long)ed->cur + 1,
             (long long)ed->n_segs, sg->label ? "  " : "", sg->label ? sg->label : "");
    heading(s, y++, m.x, m.w, title);
    {
        /* the glossary line gets the rows left under the text, at least one */
        int text_rows =
            one ? wrapped_rows(s, one, strlen(one), tw) + wrapped_rows(s, other, strlen(other), tw)
                : wrapped_rows(s, sg->source, strlen(sg->source), tw);
        int gl_h = 0;
        if (sg->terms_line && src_h >= 2) {
            gl_h = src_h - text_rows;
            if (gl_h < 1) gl_h = 1;
        }
        int txt_h = src_h - gl_h;
        if (one) {
            /* both sources of the plural entry; the terms are marked in the
            ** one that is this form's source, after its 10-byte heading */
            bool first = strcmp(sg->source, other + 10) != 0;
            ui_span *sh = sg->n_terms ? mt_try_malloc(sizeof(ui_span) * (size_t)sg->n_terms) : NULL;
            for (int32_t i = 0; sh && i < sg->n_terms; i++)
                sh[i] = (ui_span){sg->terms[i].start + 10, sg->terms[i].len};
            int32_t nsh = sh ? sg->n_terms : 0;
            int h1 = wrapped_rows(s, one, strlen(one), tw);
            if (h1 > txt_h - 1) h1 = txt_h > 1 ? txt_h - 1 : 1;
            draw_wrapped_marked(s, one, first ? sh : NULL, first ? nsh : 0, UI_ROLE_NORMAL,
                                (rect){y, tx, h1, tw});
            if (txt_h > h1)
                draw_wrapped_marked(s, other, first ? NULL : sh, first ? 0 : nsh, UI_ROLE_NORMAL,
                                    (rect){y + h1, tx, txt_h - h1, tw});
            mt_free(sh);
        } else {
            draw_wrapped_marked(s, sg->source, sg->terms, sg->n_terms, UI_ROLE_NORMAL,
                                (rect){y, tx, txt_h, tw});
        }
        if (gl_h > 0)
            draw_wrapped_marked(s, sg->terms_line, NULL, 0, UI_ROLE_GREY,
                                (rect){y + txt_h, tx, gl_h, tw});
    }
    mt_free(one), mt_free(other);
    y += src_h;
    /* an exact TM match in the field's place of the MT says so */
    bool tm_hyp =
        sg->mt && sg->mt->hyp_label && (sg->status == UI_SEG_NEW || sg->status == UI_SEG_MT);
    snprintf(title, sizeof title, "Translation  [%s]",
             tm_hyp ? sg->mt->hyp_label : status_name(sg->status));
    heading(s, y++, m.x, m.w, title);
    draw_field(s, ed, (rect){y, tx, fld_h, tw}, cy, cx);
    y += fld_h;
    char gl[1024]; /* the grammar corrections, on a row taken from the pane below */
    if (lower_h >= 2 && ed_gec_line(ed, gl, sizeof gl)) {
        put_str(s, y++, tx, tw, gl, UI_ROLE_CONF_MID, 0);
        lower_h--;
    }
    if (lower_h <= 0) return;
    int oth = others_rows(ed); /* a plural form: the other forms' translations */
    if (oth > 0 && lower_h - oth >= 2) {
        heading(s, y++, m.x, m.w, "Other forms of this entry");
        draw_others(s, ed, y, tx, tw, oth - 1);
        y += oth - 1;
        lower_h -= oth;
    }
    if (both_panes) {
        int nb = nbest_rows(s, sg->mt, tw);
        if (nb > lower_h / 2) nb = lower_h / 2 > 0 ? lower_h / 2 : 1;
        heading(s, y++, m.x, m.w, "Alternatives");
        draw_nbest(s, ed, (rect){y, tx, nb, tw});
        y += nb;
        heading(s, y++, m.x, m.w, "Attention (rows: translation, columns: source)");
        draw_heat(s, ed, (rect){y, tx, m.y + m.h - y, tw});
    } else if (ed->lower_pane == 0) {
        heading(s, y++, m.x, m.w, "Alternatives  (F3: attention)");
        draw_nbest(s, ed, (rect){y, tx, lower_h, tw});
    } else {
        heading(s, y++, m.x, m.w, "Attention  (F3: alternatives)");
        draw_heat(s, ed, (rect){y, tx, lower_h, tw});
    }
}

void ui_screen_draw(ui_screen *s, ui_editor *ed) {
    if (s == NULL || ed == NULL || ed->cur < 0) return;
    set_term(s->scr);
    if (ed->redraw) {
        clearok(stdscr, TRUE);
        ed->redraw = false;
    }
    int rows = LINES, cols = COLS, cy = -1, cx = -1;
    attr_set(A_NORMAL, 0, NULL);
    erase();
    if (rows < MIN_ROWS || cols < MIN_COLS) {
        char msg[64];
        snprintf(msg, sizeof msg, "terminal too small (%dx%d, need %dx%d)", cols, rows, MIN_COLS,
                 MIN_ROWS);
        put_str(s, 0, 0, cols, msg, UI_ROLE_NORMAL, A_BOLD);
        curs_set(0);
        s->cur_y = s->cur_x = -1;
        refresh();
        return;
    }
    draw_header(s, ed, cols);
    int n_bad;
    ed_spell_spans(ed, &n_bad); /* checks the field again when it changed */
    rect body = {1, 0, rows - 3, cols};
    if (ed->mode == ED_MODE_HELP) {
        draw_help(s, ed, body);
    } else if (ed->mode == ED_MODE_LIST) {
        draw_full_list(s, ed, body);
    } else {
        bool wide = cols >= 120 && body.h >= 16;
        rect list, main;
        if (wide) {
            int lw = cols * 2 / 5 > 70 ? 70 : cols * 2 / 5;
            list = (rect){body.y, 0, body.h, lw};
            main = (rect){body.y, lw + 1, body.h, cols - lw - 1};
            use_role(s, UI_ROLE_HEADING, 0);
            rule(s, body.y, lw, body.h, false);
            use_role(s, UI_ROLE_NORMAL, 0);
        } else {
            int lh = body.h / 5;
            lh = lh < 2 ? 2 : lh > 8 ? 8 : lh;
            int spare = body.h - lh - main_need(s, ed, cols - 2); /* rows the panes leave */
            if (spare > 0 && lh < body.h / 2)
                lh += spare < body.h / 2 - lh ? spare : body.h / 2 - lh;
            if (lh > ed->n_segs) lh = (int)ed->n_segs;
            list = (rect){body.y, 0, lh, cols};
            main = (rect){body.y + lh, 0, body.h - lh, cols};
        }
        draw_list(s, ed, list);
        draw_main(s, ed, main, wide && main.h >= 18, &cy, &cx);
    }
    draw_status(s, ed, rows - 2, cols);
    int by = -1, bx = -1;
    draw_bottom(s, ed, rows - 1, cols, &by, &bx);
    if (ed->mode == ED_MODE_CMDLINE) cy = by, cx = bx;
    if (ed->mode == ED_MODE_HELP || ed->mode == ED_MODE_ASK_QUIT || ed->mode == ED_MODE_LIST)
        cy = -1;
    if (cy >= 0 && cx >= 0) {
        curs_set(1);
        move(cy, cx);
        s->cur_y = cy, s->cur_x = cx;
    } else {
        curs_set(0);
        move(rows - 1, cols - 1);
        s->cur_y = s->cur_x = -1;
    }
    if (ed->bells != s->last_bells) {
        s->last_bells = ed->bells;
        beep();
    }
    refresh();
}

/* ========================================================= set-up, exit */

/* The curses code of an arrow key with a modifier: what terminfo's cap
** defines, else seq defined as code (ncurses' define_key). */
static int alt_arrow(const char *seq, const char *cap, int code) {
    int k = key_defined(seq);
    if (k <= 0) {
        const char *c = tigetstr(cap);
        if (c && c != (char *)-1) k = key_defined(c);
    }
    if (k > 0) return k;
    return define_key(seq, code) == OK ? code : 0;
}

mt_status ui_screen_init(const char *term_type, void *out_file, void *in_file, ui_keydec *dec,
                         ui_screen **out) {
    *out = NULL;
    if (active_screen) return mt_seterr(MT_ERR_INVALID, "ui: the screen is already in use");
    ui_screen *s = mt_try_calloc(1, sizeof *s);
    if (s == NULL) return mt_seterr(MT_ERR_NOMEM, "ui: cannot allocate the screen");
    FILE *fo = out_file ? (FILE *)out_file : stdout, *fi = in_file ? (FILE *)in_file : stdin;
    s->scr = newterm(term_type, fo, fi);
    if (s->scr == NULL) {
        mt_free(s);
        return mt_seterr(MT_ERR_IO, "ui: cannot use the terminal '%s' (check TERM)",
                         term_type ? term_type : "$TERM");
    }
    active_screen = s->scr;
    set_term(s->scr);
    const char *cs = nl_langinfo(CODESET);
    s->utf8 = cs && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0);
    raw(); /* C-c, C-z, C-s, C-q, C-v reach us as keys */
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    set_escdelay(25);
    init_colors(s);
    if (dec) {
        /* Ctrl-Left/Right have no fixed codes: ask terminfo (xterm: kLFT5). */
        int k = key_defined("\033[1;5D");
        if (k <= 0) {
            const char *cap = tigetstr("kLFT5");
            if (cap && cap != (char *)-1) k = key_defined(cap);
        }
        dec->kc_cleft = k > 0 ? k : 0;
        k = key_defined("\033[1;5C");
        if (k <= 0) {
            const char *cap = tigetstr("kRIT5");
            if (cap && cap != (char *)-1) k = key_defined(cap);
        }
        dec->kc_cright = k > 0 ? k : 0;
        /* Alt-Left/Right (xterm, tmux: ESC [1;3D / ESC [1;3C) scroll the
        ** heat map: terminfo's kLFT3/kRIT3, else defined here */
        dec->kc_mleft = alt_arrow("\033[1;3D", "kLFT3", 0x1f00);
        dec->kc_mright = alt_arrow("\033[1;3C", "kRIT3", 0x1f01);
    }
    *out = s;
    return MT_OK;
}

void ui_screen_free(ui_screen *s) {
    if (s == NULL) return;
    set_term(s->scr);
    endwin();
    if (active_screen == s->scr) active_screen = NULL;
    delscreen(s->scr);
    mt_free(s);
}

void ui_screen_emergency_end(void) {
    if (active_screen) {
        set_term(active_screen);
        endwin();
        active_screen = NULL;
    }
}

void ui_screen_resize(ui_screen *s, int rows, int cols) {
    set_term(s->scr);
    if (rows > 0 && cols > 0) resizeterm(rows, cols);
    clearok(stdscr, TRUE);
}

int ui_screen_colors(const ui_screen *s) { return s->colors; }

size_t ui_screen_row(ui_screen *s, int y, char *buf, size_t size) {
    set_term(s->scr);
    size_t o = 0;
    if (size == 0) return 0;
    buf[0] = '\0';
    if (y < 0 || y >= LINES) return 0;
    for (int x = 0; x < COLS; x++) {
        cchar_t cc;
        wchar_t wc[CCHARW_MAX + 1];
        attr_t a;
        short pair;
        if (mvin_wch(y, x, &cc) == ERR) break;
        if (getcchar(&cc, wc, &a, &pair, NULL) == ERR) continue;
        for (int k = 0; wc[k] && k < CCHARW_MAX; k++) {
            char u[4];
            size_t n = mt_utf8_encode((uint32_t)wc[k], u);
            if (o + n + 1 > size) goto done;
            memcpy(buf + o, u, n);
            o += n;
        }
        int w = wc[0] ? wcwidth(wc[0]) : 1;
        if (w > 1) x += w - 1; /* skip the continuation cell */
    }
done:
    buf[o] = '\0';
    return o;
}

int ui_screen_cell_role(ui_screen *s, int y, int x) {
    set_term(s->scr);
    cchar_t cc;
    wchar_t wc[CCHARW_MAX + 1];
    attr_t a;
    short pair = 0;
    if (mvin_wch(y, x, &cc) == ERR || getcchar(&cc, wc, &a, &pair, NULL) == ERR) return -1;
    return pair;
}

bool ui_screen_cell_dim(ui_screen *s, int y, int x) {
    set_term(s->scr);
    cchar_t cc;
    wchar_t wc[CCHARW_MAX + 1];
    attr_t a = 0;
    short pair = 0;
    if (mvin_wch(y, x, &cc) == ERR || getcchar(&cc, wc, &a, &pair, NULL) == ERR) return false;
    return (a & A_DIM) != 0;
}

bool ui_screen_cell_underline(ui_screen *s, int y, int x) {
    set_term(s->scr);
    cchar_t cc;
    wchar_t wc[CCHARW_MAX + 1];
    attr_t a = 0;
    short pair = 0;
    if (mvin_wch(y, x, &cc) == ERR || getcchar(&cc, wc, &a, &pair, NULL) == ERR) return false;
    return (a & A_UNDERLINE) != 0;
}

void ui_screen_size(ui_screen *s, int *rows, int *cols) {
    set_term(s->scr);
    *rows = LINES;
    *cols = COLS;
}

void ui_screen_cursor(ui_screen *s, int *y, int *x) {
    *y = s->cur_y;
    *x = s->cur_x;
}
