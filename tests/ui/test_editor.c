/*
** test_editor.c: the ui/ layer without a terminal.
**
**   UTF-8 helpers and display widths (umlauts, CJK, combining marks)
**   the line editor: Emacs moves, kills and yank, transpose, undo chains
**   the key decoder (Esc+digit is Alt-digit, lone Esc after a timeout)
**   the binding table: every key the help text lists parses and is bound
**   the editor state machine driven by key sequences, with a fake ui_hooks
**   that records every call: completion by word (Tab) and all (End),
**   outdated completions, Alt-digit n-best picks, Enter confirming the MT,
**   next-untranslated navigation, drafts, effort statistics
**   the ':' command line: parsing of every command, history, completion
**   allocation failures: every failing allocation leaves a usable editor
**   the screen, drawn by ncurses into a virtual terminal (/dev/null)
*/
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "editor.h"
#include "harness.h"

/* ============================================================ fake hooks */

typedef struct rec {
    int n_changed;
    int64_t ch_from[64], ch_to[64];
    char ch_draft[64][64]; /* "" when NULL */
    bool ch_draft_null[64];
    int n_req;
    int64_t req_seg;
    char req_prefix[256];
    int n_commit;
    int64_t commit_seg;
    char commit_text[256];
    ui_edit_stats st;
    char st_sugg[256];
    mt_status commit_rc;
    int n_save;
    mt_status save_rc;
    char model[256];
    char exp_fmt[8], exp_path[256];
    int n_edited; /* hooks.edited: kinds, keystrokes and texts */
    ui_edit_kind ed_kind[32];
    int32_t ed_keys[32];
    char ed_text[32][64];
} rec;

static void h_edited(void *u, int64_t seg, const char *text, ui_edit_kind kind, int32_t keys) {
    rec *r = u;
    (void)seg;
    int i = r->n_edited++;
    if (i >= 32) return;
    r->ed_kind[i] = kind, r->ed_keys[i] = keys;
    snprintf(r->ed_text[i], sizeof r->ed_text[i], "%s", text);
}

static void h_changed(void *u, int64_t from, const char *draft, int64_t to) {
    rec *r = u;
    int i = r->n_changed++;
    if (i >= 64) return;
    r->ch_from[i] = from, r->ch_to[i] = to;
    r->ch_draft_null[i] = draft == NULL;
    snprintf(r->ch_draft[i], sizeof r->ch_draft[i], "%s", draft ? draft : "");
}

static void h_request(void *u, int64_t seg, const char *prefix) {
    rec *r = u;
    r->n_req++;
    r->req_seg = seg;
    snprintf(r->req_prefix, sizeof r->req_prefix, "%s", prefix);
}

static mt_status h_commit(void *u, int64_t seg, const char *text, const ui_edit_stats *st) {
    rec *r = u;
    if (r->commit_rc != MT_OK) return mt_seterr(r->commit_rc, "disk full");
    r->n_commit++;
    r->commit_seg = seg;
    snprintf(r->commit_text, sizeof r->commit_text, "%s", text);
    r->st = *st;
    snprintf(r->st_sugg, sizeof r->st_sugg, "%s", st->suggestion ? st->suggestion : "(null)");
    r->st.suggestion = NULL;
    return MT_OK;
}

static mt_status h_save(void *u, bool force) {
    (void)force;
    rec *r = u;
    r->n_save++;
    return r->save_rc == MT_OK ? MT_OK : mt_seterr(r->save_rc, "cannot write doc.po");
}

static mt_status h_model(void *u, const char *path) {
    snprintf(((rec *)u)->model, 256, "%s", path);
    return MT_OK;
}

static mt_status h_export(void *u, const char *fmt, const char *path) {
    rec *r = u;
    snprintf(r->exp_fmt, sizeof r->exp_fmt, "%s", fmt);
    snprintf(r->exp_path, sizeof r->exp_path, "%s", path);
    return MT_OK;
}

static ui_hooks make_hooks(rec *r) {
    memset(r, 0, sizeof *r);
    /* designated: hooks added at the end of ui_hooks stay NULL here */
    return (ui_hooks){.user = r,
                      .segment_changed = h_changed,
                      .request_completion = h_request,
                      .commit = h_commit,
                      .save = h_save,
                      .load_model = h_model,
                      .export_doc = h_export,
                      .edited = h_edited};
}

/* ============================================================== helpers */

static int64_t T = 1000; /* the test clock, ms */

/* Types raw terminal bytes (Esc = Alt prefix) through the key decoder. */
static void type(ui_editor *ed, const char *bytes) {
    ui_keydec d;
    ui_keydec_init(&d);
    int32_t keys[256];
    int n = ui_keydec_feed_bytes(&d, bytes, strlen(bytes), T, keys, 256);
    for (int i = 0; i < n; i++)
        ed_key(ed, keys[i], T);
    int32_t k;
    if (ui_keydec_flush(&d, T + UI_ESC_MS, &k)) ed_key(ed, k, T);
}

static void key(ui_editor *ed, int32_t k) { ed_key(ed, k, T); }

static const char *rest_of(const ui_editor *ed) {
    static char buf[512];
    size_t n;
    const char *r = ed_completion_rest(ed, &n);
    if (r == NULL) return "(none)";
    snprintf(buf, sizeof buf, "%.*s", (int)n, r);
    return buf;
}

static const ui_segment doc_segs[] = {
    {.source = "Hello world.", .target = NULL, .status = UI_SEG_NEW, .label = NULL},
    {.source = "Good morning.", .target = "Guten Morgen.", .status = UI_SEG_MT, .label = NULL},
    {.source = "Thank you.", .target = "Danke.", .status = UI_SEG_CONFIRMED, .label = NULL},
    {.source = "See you.", .target = "Bis bald", .status = UI_SEG_EDITED, .label = NULL},
    {.source = "Goodbye, my friend.", .target = "", .status = UI_SEG_NEW, .label = NULL},
};
static const ui_document doc = {"doc.po", "en", "de", "tiny-en-de", doc_segs, 5};

static ui_editor *new_editor(const ui_hooks *h, int64_t start) {
    ui_editor *ed = NULL;
    mt_status rc = ed_init(h, &doc, &ed);
    CHECK(rc == MT_OK && ed, "ed_init: %s", mt_errmsg());
    if (ed) ed_open(ed, start, T);
    return ed;
}

static const char *const nbest3[] = {"Hallo Welt.", "Hallo, Welt.", "Servus Welt."};
static const float scores3[] = {-0.5f, -1.25f, -2.0f};
static const float conf2[] = {0.9f, 0.3f};
static const char *const src_tok[] = {"Hello", "world", "."};
static const char *const trg_tok[] = {"Hallo", "Welt", "."};
static const float attn[] = {0.9f, 0.05f, 0.05f, 0.1f, 0.8f, 0.1f, 0.0f, 0.2f, 0.8f};

static ui_mt_result mt_hallo(void) {
    return (ui_mt_result){.hyp = "Hallo Welt.",
                          .nbest = nbest3,
                          .nbest_scores = scores3,
                          .n_nbest = 3,
                          .src_tokens = src_tok,
                          .n_src = 3,
                          .trg_tokens = trg_tok,
                          .n_trg = 3,
                          .attention = attn,
                          .word_conf = conf2,
                          .n_words = 2,
                          .tokens_per_sec = 250.0};
}

/* ================================================================= UTF-8 */

static void test_utf8(void) {
    uint32_t cp;
    CHECK(mt_utf8_decode("\xc3\xa4", 2, &cp) == 2 && cp == 0xE4, "decode ä");
    CHECK(mt_utf8_decode("\xe2\x82\xac", 3, &cp) == 3 && cp == 0x20AC, "decode €");
    CHECK(mt_utf8_decode("\xf0\x9d\x84\x9e", 4, &cp) == 4 && cp == 0x1D11E, "decode U+1D11E");
    CHECK(mt_utf8_decode("\xc3", 1, &cp) == 1 && cp == 0xFFFD, "truncated sequence");
    CHECK(mt_utf8_decode("\xc0\x80", 2, &cp) == 1 && cp == 0xFFFD, "overlong NUL");
    CHECK(mt_utf8_decode("\xed\xa0\x80", 3, &cp) == 1 && cp == 0xFFFD, "surrogate");
    char b[4];
    uint32_t samples[] = {0x41, 0xE4, 0x20AC, 0x65E5, 0x1F600};
    for (int i = 0; i < 5; i++) {
        size_t n = mt_utf8_encode(samples[i], b);
        CHECK(n > 0 && mt_utf8_decode(b, n, &cp) == n && cp == samples[i], "round trip %x",
              samples[i]);
    }
    const char *s = "a\xc3\xa4\xe6\x97\xa5"; /* aä日 */
    CHECK(ui_utf8_next(s, 6, 0) == 1 && ui_utf8_next(s, 6, 1) == 3 && ui_utf8_next(s, 6, 3) == 6,
          "next boundaries");
    CHECK(ui_utf8_prev(s, 6) == 3 && ui_utf8_prev(s, 3) == 1 && ui_utf8_prev(s, 1) == 0,
          "prev boundaries");
    CHECK(ui_utf8_prev("a\x80", 2) == 1, "stray continuation byte is one character");
    /* widths (C.UTF-8 is set in main when available; the fallback table
    ** gives the same answers for these) */
    CHECK(ui_cp_width('a') == 1 && ui_cp_width(0xFC) == 1, "latin width");
    CHECK(ui_cp_width(0x65E5) == 2 && ui_cp_width(0xAC00) == 2, "CJK / Hangul width 2");
    CHECK(ui_cp_width(0x301) == 0, "combining acute has width 0");
    CHECK(ui_str_width("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"
                       "abc",
                       12) == 9,
          "日本語abc = 9");
    CHECK(ed_count_words("  Das ist  ein Test ") == 4, "word count");
    CHECK(ui_is_word_cp(0xDF) && !ui_is_word_cp(0x201E) && !ui_is_word_cp(','), "word chars");
}

/* ========================================================== line editor */

static void set(ed_line *l, const char *s) {
    ed_line_set(l, s, strlen(s), false);
    ed_line_clear_undo(l);
}

static void test_line_editing(void) {
    ed_line l;
    CHECK_STATUS(ed_line_init(&l));
    for (const char *p = "Hallo Welt"; *p; p++)
        ed_line_insert_cp(&l, (uint8_t)*p);
    CHECK(strcmp(l.text, "Hallo Welt") == 0 && l.cur == 10, "typed '%s' cur %zu", l.text, l.cur);
    ed_line_home(&l);
    ed_line_right(&l);
    ed_line_right(&l);
    CHECK(l.cur == 2, "C-a C-f C-f -> 2 (%zu)", l.cur);
    ed_line_end(&l);
    ed_line_word_left(&l);
    CHECK(l.cur == 6, "M-b to the start of 'Welt' (%zu)", l.cur);
    ed_line_word_left(&l);
    CHECK(l.cur == 0, "M-b to the start (%zu)", l.cur);
    ed_line_word_right(&l);
    CHECK(l.cur == 5, "M-f to the end of 'Hallo' (%zu)", l.cur);
    ed_line_end(&l);
    CHECK(ed_line_delete(&l) == ED_NOOP, "C-d at the end does nothing");
    CHECK(ed_line_right(&l) == ED_NOOP, "C-f at the end does nothing");

    /* kills append when consecutive: C-w C-w, then yank brings both back */
    set(&l, "one two three");
    ed_line_kill_word_back(&l);
    CHECK(strcmp(l.text, "one two ") == 0 && strcmp(l.kill, "three") == 0, "C-w: '%s' / '%s'",
          l.text, l.kill);
    ed_line_kill_word_back(&l);
    CHECK(strcmp(l.text, "one ") == 0 && strcmp(l.kill, "two three") == 0,
          "C-w C-w prepends: '%s' / '%s'", l.text, l.kill);
    ed_line_yank(&l);
    CHECK(strcmp(l.text, "one two three") == 0 && l.cur == 13, "C-y: '%s'", l.text);
    ed_line_home(&l);
    ed_line_kill_eol(&l);
    CHECK(l.len == 0 && strcmp(l.kill, "one two three") == 0, "C-a C-k");
    ed_line_yank(&l);
    ed_line_yank(&l);
    CHECK(strcmp(l.text, "one two threeone two three") == 0, "yank twice: '%s'", l.text);

    set(&l, "foo bar baz");
    l.cur = 4;
    ed_line_kill_bol(&l);
    CHECK(strcmp(l.text, "bar baz") == 0 && l.cur == 0 && strcmp(l.kill, "foo ") == 0, "C-u");
    ed_line_kill_word_fwd(&l); /* right after C-u: the kills join, in text order */
    CHECK(strcmp(l.text, " baz") == 0 && strcmp(l.kill, "foo bar") == 0, "C-u M-d: '%s' / '%s'",
          l.text, l.kill);
    ed_line_end(&l);
    ed_line_home(&l);
    ed_line_kill_word_fwd(&l);
    CHECK(l.len == 0 && strcmp(l.kill, " baz") == 0, "a move starts a new kill: '%s'", l.kill);
    set(&l, "eins zwei drei");
    ed_line_home(&l);
    ed_line_kill_word_fwd(&l);
    ed_line_kill_word_fwd(&l);
    CHECK(strcmp(l.text, " drei") == 0 && strcmp(l.kill, "eins zwei") == 0, "M-d M-d: '%s'",
          l.kill);
    ed_line_home(&l);
    CHECK(ed_line_kill_word_back(&l) == ED_NOOP, "C-w at the start");

    /* transpose */
    set(&l, "ab");
    ed_line_transpose(&l);
    CHECK(strcmp(l.text, "ba") == 0 && l.cur == 2, "C-t at the end: '%s'", l.text);
    set(&l, "abc");
    l.cur = 1;
    ed_line_transpose(&l);
    CHECK(strcmp(l.text, "bac") == 0 && l.cur == 2, "C-t in the middle: '%s' %zu", l.text, l.cur);
    l.cur = 0;
    CHECK(ed_line_transpose(&l) == ED_NOOP, "C-t at the start");
    set(&l, "\xe6\x97\xa5\xe6\x9c\xac"); /* 日本 */
    ed_line_transpose(&l);
    CHECK(strcmp(l.text, "\xe6\x9c\xac\xe6\x97\xa5") == 0, "C-t on CJK");
    set(&l, "a\xc3\xbc"); /* aü */
    ed_line_transpose(&l);
    CHECK(strcmp(l.text, "\xc3\xbc"
                         "a") == 0 &&
              l.cur == 3,
          "C-t mixed widths");

    /* UTF-8 moves and deletes: Grüße */
    set(&l, "Gr\xc3\xbc\xc3\x9f"
            "e");
    ed_line_left(&l);
    ed_line_left(&l);
    CHECK(l.cur == 4, "two chars left of 'Grüße' end: byte 4 (%zu)", l.cur);
    ed_line_backspace(&l);
    CHECK(strcmp(l.text, "Gr\xc3\x9f"
                         "e") == 0 &&
              l.cur == 2,
          "backspace removes ü: '%s'", l.text);
    ed_line_delete(&l);
    CHECK(strcmp(l.text, "Gre") == 0, "C-d removes ß: '%s'", l.text);
    ed_line_word_left(&l);
    CHECK(l.cur == 0, "M-b over a word with umlauts");
    set(&l, "Stra\xc3\x9f"
            "e und Br\xc3\xbc"
            "cke");
    ed_line_home(&l);
    ed_line_word_right(&l);
    CHECK(l.cur == 7, "M-f: 'Straße' is one word (%zu)", l.cur);

    /* undo chain: a run of typed characters up to a space is one step */
    set(&l, "");
    for (const char *p = "ab cd"; *p; p++)
        ed_line_insert_cp(&l, (uint8_t)*p);
    ed_line_kill_word_back(&l);
    ed_line_backspace(&l);
    CHECK(strcmp(l.text, "ab") == 0, "before undo: '%s'", l.text);
    const char *want[] = {"ab ", "ab cd", "ab ", ""};
    for (int i = 0; i < 4; i++) {
        CHECK(ed_line_undo(&l) == MT_OK && strcmp(l.text, want[i]) == 0, "undo %d: '%s' want '%s'",
              i + 1, l.text, want[i]);
    }
    CHECK(ed_line_undo(&l) == ED_NOOP, "nothing more to undo");
    /* cursor moves break a run: typing after a move is a new step */
    for (const char *p = "xy"; *p; p++)
        ed_line_insert_cp(&l, (uint8_t)*p);
    ed_line_left(&l);
    ed_line_insert_cp(&l, 'z');
    ed_line_undo(&l);
    CHECK(strcmp(l.text, "xy") == 0, "undo after a move: '%s'", l.text);
    /* the undo stack is bounded */
    set(&l, "");
    for (int i = 0; i < 3 * ED_UNDO_MAX; i++)
        ed_line_insert_cp(&l, i % 2 ? ' ' : 'w');
    CHECK(l.n_undo == ED_UNDO_MAX, "undo depth bounded: %d", l.n_undo);
    int n = 0;
    while (ed_line_undo(&l) == MT_OK)
        n++;
    CHECK(n == ED_UNDO_MAX && l.len == 3 * ED_UNDO_MAX - 2 * ED_UNDO_MAX,
          "undo the last %d steps: %d, len %zu", ED_UNDO_MAX, n, l.len);
    ed_line_free(&l);
}

/* ================================================================== keys */

static void test_keys(void) {
    ui_keydec d;
    ui_keydec_init(&d);
    int32_t k[8];
    int n = ui_keydec_feed_bytes(&d,
                                 "\x1b"
                                 "1",
                                 2, 0, k, 8);
    CHECK(n == 1 && k[0] == ('1' | UI_KEY_META), "ESC 1 -> M-1 (%d keys, %x)", n, k[0]);
    n = ui_keydec_feed_bytes(&d,
                             "\x1b"
                             "\x1b"
                             "b",
                             3, 0, k, 8);
    CHECK(n == 2 && k[0] == UI_KEY_ESC && k[1] == ('b' | UI_KEY_META), "ESC ESC b");
    n = ui_keydec_feed_bytes(&d, "\x1b", 1, 100, k, 8);
    CHECK(n == 0 && ui_keydec_deadline(&d) == 100 + UI_ESC_MS, "lone ESC pending");
    CHECK(ui_keydec_flush(&d, 110, k) == 0, "not flushed before the timeout");
    n = ui_keydec_feed_bytes(&d, "x", 1, 100 + UI_ESC_MS + 5, k, 8);
    CHECK(n == 2 && k[0] == UI_KEY_ESC && k[1] == 'x', "late key after ESC: two keys");
    ui_keydec_feed_bytes(&d, "\x1b", 1, 200, k, 8);
    CHECK(ui_keydec_flush(&d, 200 + UI_ESC_MS, k) == 1 && k[0] == UI_KEY_ESC, "ESC flushed");
    CHECK(ui_keydec_deadline(&d) == INT64_MAX, "nothing pending");
    n = ui_keydec_feed_bytes(&d, "\x7f\r\n\xc3\xa4\x01", 6, 0, k, 8);
    CHECK(n == 5 && k[0] == UI_KEY_BACKSPACE && k[1] == UI_KEY_ENTER && k[2] == UI_KEY_ENTER &&
              k[3] == 0xE4 && k[4] == 1,
          "DEL, CR, LF, ä, C-a");
    /* curses key codes (KEY_LEFT = 0404, KEY_F(1) = 0411, KEY_NPAGE = 0522) */
    n = ui_keydec_feed(&d, true, 0404, 0, k);
    CHECK(n == 1 && k[0] == UI_KEY_LEFT, "KEY_LEFT");
    n = ui_keydec_feed(&d, true, 0411, 0, k);
    CHECK(n == 1 && k[0] == UI_KEY_F0 + 1, "KEY_F(1)");
    ui_keydec_feed(&d, false, 27, 0, k);
    n = ui_keydec_feed(&d, true, 0522, 1, k);
    CHECK(n == 1 && k[0] == (UI_KEY_PGDN | UI_KEY_META), "ESC PgDn -> M-PgDn");
    d.kc_cleft = 555;
    n = ui_keydec_feed(&d, true, 555, 0, k);
    CHECK(n == 1 && k[0] == UI_KEY_CLEFT, "terminal-specific Ctrl-Left");

    int arg;
    CHECK(ui_keymap_lookup(UI_KEYMODE_EDIT, '7' | UI_KEY_META, &arg) == UI_ACT_NBEST && arg == 7,
          "M-7 picks alternative 7");
    CHECK(ui_keymap_lookup(UI_KEYMODE_EDIT, 'x', &arg) == UI_ACT_SELF_INSERT, "x inserts");
    CHECK(ui_keymap_lookup(UI_KEYMODE_CMDLINE, ':', &arg) == UI_ACT_SELF_INSERT,
          ": inserts in the command line");
    CHECK(ui_keymap_lookup(UI_KEYMODE_EDIT, UI_KEY_TAB, &arg) == UI_ACT_ACCEPT_WORD &&
              ui_keymap_lookup(UI_KEYMODE_CMDLINE, UI_KEY_TAB, &arg) == UI_ACT_COMPLETE,
          "Tab per mode");
    CHECK(ui_keymap_lookup(UI_KEYMODE_EDIT, UI_CTRL('q'), &arg) == UI_ACT_NONE, "C-q unbound");

    char buf[32];
    int32_t names[] = {UI_CTRL('a'), 'b' | UI_KEY_META,
                       UI_KEY_PGDN,  UI_KEY_F0 + 12,
                       0xFC,         UI_KEY_BACKSPACE | UI_KEY_META,
                       UI_CTRL('_'), ' '};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        ui_key_name(names[i], buf, sizeof buf);
        CHECK(ui_key_parse(buf) == names[i], "name round trip '%s'", buf);
    }
    CHECK(strcmp(ui_key_name(UI_CTRL('w'), buf, sizeof buf), "C-w") == 0, "C-w name");
    CHECK(ui_key_parse("C-Left") == UI_KEY_CLEFT && ui_key_parse("F13") == UI_KEY_NONE &&
              ui_key_parse("Hyper-x") == UI_KEY_NONE && ui_key_parse("M-M-x") == UI_KEY_NONE,
          "names");
}

/* Every key the help lists parses and is bound, all keys of one line to the
** same action; every binding and every command appears in the help. */
static void test_help_matches_bindings(void) {
    int nb;
    const ui_binding *b = ui_bindings(&nb);
    bool listed[256] = {false};
    CHECK(nb < 256, "table size");
    int n = ui_help_count(), mode = 0, n_keys = 0, n_cmds = 0;
    char line[256];
    for (int i = 0; i < n; i++) {
        CHECK(ui_help_line(i, line, sizeof line) != NULL, "help line %d", i);
        if (strncmp(line, "Editing", 7) == 0)
            mode = UI_KEYMODE_EDIT | UI_KEYMODE_CMDLINE;
        else if (strncmp(line, "The translation field", 21) == 0)
            mode = UI_KEYMODE_EDIT;
        else if (strncmp(line, "The command line", 16) == 0)
            mode = UI_KEYMODE_CMDLINE;
        else if (strncmp(line, "This help screen", 16) == 0)
            mode = UI_KEYMODE_HELP;
        else if (strncmp(line, "Spelling suggestions", 20) == 0)
            mode = UI_KEYMODE_SPELL;
        else if (strncmp(line, "Commands", 8) == 0)
            mode = -1;
        if (strncmp(line, "  ", 2) != 0) continue;
        if (mode == -1) { /* "  :usage   description": a filled-in usage must parse */
            char cmdl[128];
            const char *p = line + 3, *e = strstr(p, "  ");
            CHECK(line[2] == ':' && e && e > p, "command line format: '%s'", line);
            if (!e) continue;
            snprintf(cmdl, sizeof cmdl, "%.*s", (int)(e - p), p);
            char *v, *w;
            /* optional parts ("[cancel]", "[PATH|NAME]") are left out */
            while ((v = strchr(cmdl, '[')) && (w = strchr(v, ']'))) {
                memmove(v > cmdl && v[-1] == ' ' ? v - 1 : v, w + 1, strlen(w + 1) + 1);
            }
            while ((v = strstr(cmdl, "tmx|tsv")))
                memmove(v + 3, v + 7, strlen(v + 7) + 1);
            while ((v = strchr(cmdl, 'N')) && (v == cmdl || v[-1] == ' '))
                *v = '7';
            if ((v = strstr(cmdl, "TEXT"))) memcpy(v, "word", 4);
            if ((v = strstr(cmdl, "PATH"))) memcpy(v, "/tmp", 4);
            ui_cmd c;
            CHECK(ui_cmd_parse(cmdl, &c) == MT_OK && c.kind != UI_CMD_NONE,
                  "help command '%s' parses: %s", cmdl, mt_errmsg());
            n_cmds++;
            continue;
        }
        CHECK(mode > 0, "key line outside a section: '%s'", line);
        const char *p = line + 2, *e = strstr(p, "  ");
        const char *desc = e ? e + strspn(e, " ") : NULL;
        CHECK(e && e > p && desc[0] != '\0', "key line has keys and a description: '%s'", line);
        if (!e) continue;
        char keys[128];
        snprintf(keys, sizeof keys, "%.*s", (int)(e - p), p);
        ui_action line_act = UI_ACT_NONE;
        for (char *tok = strtok(keys, " "); tok; tok = strtok(NULL, " ")) {
            int32_t lo, hi;
            char *dots = strstr(tok, "..");
            if (dots) {
                *dots = '\0';
                lo = ui_key_parse(tok), hi = ui_key_parse(dots + 2);
            } else {
                lo = hi = ui_key_parse(tok);
            }
            CHECK(lo != UI_KEY_NONE && hi != UI_KEY_NONE && lo <= hi, "key name '%s' parses", tok);
            if (lo == UI_KEY_NONE || hi == UI_KEY_NONE) continue;
            for (int32_t k = lo; k <= hi; k++) {
                for (int m = 1; m <= UI_KEYMODE_SPELL; m <<= 1) {
                    if (!(mode & m)) continue;
                    int arg;
                    ui_action a = ui_keymap_lookup((ui_keymode)m, k, &arg);
                    CHECK(a != UI_ACT_NONE && a != UI_ACT_SELF_INSERT,
                          "listed key %x ('%s') is bound in mode %d", k, tok, m);
                    if (line_act == UI_ACT_NONE) line_act = a;
                    CHECK(a == line_act, "all keys of '%s' do the same", line);
                }
                for (int j = 0; j < nb; j++)
                    if (b[j].key == k && (b[j].modes & mode)) listed[j] = true;
                n_keys++;
            }
        }
    }
    for (int j = 0; j < nb; j++)
        CHECK(listed[j], "binding %s (action %d) is in the help", b[j].name, b[j].action);
    int nc;
    ui_commands(&nc);
    CHECK(n_cmds == nc, "every command in the help: %d of %d", n_cmds, nc);
    CHECK(n_keys >= nb, "help lists %d keys for %d bindings", n_keys, nb);
}

/* ============================================================== editor */

/* Edit events (issue 29, finding 10): one per Tab, End and M-digit, typed
** bursts at most ED_PERSIST_MS late, with the keystrokes so far; typing
** that follows the MT is reported too (a kill must not lose it). */
static void test_edit_events(void) {
    rec r;
    ui_hooks h = make_hooks(&r);
    ui_editor *ed = new_editor(&h, 0);
    if (!ed) return;
    ui_mt_result m = mt_hallo();
    CHECK_STATUS(ed_apply_mt(ed, 0, &m));
    type(ed, "Hal"); /* typed through the MT: no completion request ... */
    CHECK(r.n_edited == 0, "typing is not reported at once");
    ed_tick(ed, T + ED_PERSIST_MS - 1);
    CHECK(r.n_edited == 0 && ed_deadline(ed) == T + ED_PERSIST_MS, "due %d ms after the key",
          ED_PERSIST_MS);
    ed_tick(ed, T + ED_PERSIST_MS);
    CHECK(r.n_edited == 1 && r.ed_kind[0] == UI_EDIT_TYPED && !strcmp(r.ed_text[0], "Hal") &&
              r.ed_keys[0] == 3,
          "... but stored within a second: %d '%s' keys %d", r.n_edited, r.ed_text[0],
          r.ed_keys[0]);
    T += ED_PERSIST_MS;
    type(ed, "l"); /* a burst, then Tab: the burst first, then the accepted word */
    key(ed, UI_KEY_TAB);
    CHECK(r.n_edited == 3 && r.ed_kind[1] == UI_EDIT_TYPED && !strcmp(r.ed_text[1], "Hall") &&
              r.ed_kind[2] == UI_EDIT_ACCEPT_WORD && !strcmp(r.ed_text[2], "Hallo") &&
              r.ed_keys[2] == 5,
          "typed burst then accept_word: %d events, '%s' '%s' keys %d", r.n_edited, r.ed_text[1],
          r.ed_text[2], r.ed_keys[2]);
    key(ed, UI_KEY_END);
    CHECK(r.n_edited == 4 && r.ed_kind[3] == UI_EDIT_ACCEPT_ALL &&
              !strcmp(r.ed_text[3], "Hallo Welt."),
          "End: accept_all '%s'", r.ed_text[3]);
    type(ed, "\x1b"
             "2");
    CHECK(r.n_edited == 5 && r.ed_kind[4] == UI_EDIT_NBEST && !strcmp(r.ed_text[4], "Hallo, Welt."),
          "M-2: nbest '%s'", r.ed_text[4]);
    type(ed, "\x15"); /* C-u: an empty field is a typed edit, reported on leaving */
    key(ed, UI_KEY_PGDN);
    CHECK(r.n_edited == 6 && r.ed_kind[5] == UI_EDIT_TYPED && r.ed_text[5][0] == '\0',
          "the emptied field is reported before leaving: %d", r.n_edited);
    ed_tick(ed, T + 10 * ED_PERSIST_MS);
    CHECK(r.n_edited == 6, "nothing more is due");
    ed_free(ed);
}

static void test_completion(void) {
    rec r;
    ui_hooks h = make_hooks(&r);
    ui_editor *ed = new_editor(&h, 0);
    if (!ed) return;
    CHECK(r.n_changed == 1 && r.ch_from[0] == -1 && r.ch_to[0] == 0 && r.ch_draft_null[0],
          "open: segment_changed(-1, NULL, 0)");
    CHECK(ed->field.len == 0 && ed_completion_rest(ed, &(size_t){0}) == NULL, "no MT yet");
    key(ed, UI_KEY_ENTER);
    CHECK(r.n_commit == 0 && ed->cur == 0 && ed->bells == 1, "Enter on an empty field refused");

    ui_mt_result m = mt_hallo();
    CHECK_STATUS(ed_apply_mt(ed, 0, &m));
    CHECK(strcmp(rest_of(ed), "Hallo Welt.") == 0, "MT shown greyed: '%s'", rest_of(ed));
    CHECK(ed->segs[0].status == UI_SEG_MT && ed->speed == 250.0, "status MT, speed");
    CHECK_CLOSE(ed_completion_conf(ed, 0), 0.9, 1e-6, 0, "conf of 'Hallo'");
    CHECK_CLOSE(ed_completion_conf(ed, 6), 0.3, 1e-6, 0, "conf of 'Welt.'");
    CHECK(ed_completion_conf(ed, 5) < 0, "no conf on the space");

    key(ed, UI_KEY_TAB);
    CHECK(strcmp(ed->field.text, "Hallo") == 0 && strcmp(rest_of(ed), " Welt.") == 0,
          "Tab accepts one word: '%s' + '%s'", ed->field.text, rest_of(ed));
    CHECK_CLOSE(ed_completion_conf(ed, 1), 0.3, 1e-6, 0, "conf follows the accepted words");
    key(ed, UI_KEY_TAB);
    CHECK(strcmp(ed->field.text, "Hallo Welt.") == 0 && strcmp(rest_of(ed), "") == 0,
          "Tab accepts the next word with its space: '%s'", ed->field.text);
    CHECK(ed_line_undo(&ed->field) == MT_OK && strcmp(ed->field.text, "Hallo") == 0,
          "acceptance is undoable");
    key(ed, UI_KEY_HOME);
    key(ed, UI_KEY_END);
    CHECK(strcmp(ed->field.text, "Hallo") == 0 && ed->field.cur == 5,
          "End away from the end only moves");
    key(ed, UI_CTRL('e'));
    CHECK(strcmp(ed->field.text, "Hallo Welt.") == 0, "C-e at the end accepts all: '%s'",
          ed->field.text);
    type(ed, "\x1a\x1a"); /* C-z C-z */
    CHECK(ed->field.len == 0 && strcmp(rest_of(ed), "Hallo Welt.") == 0, "undo back to empty");
    key(ed, UI_KEY_RIGHT);
    CHECK(strcmp(ed->field.text, "H") == 0, "Right at the end accepts one character");
    type(ed, "\x1b"
             "f");
    CHECK(strcmp(ed->field.text, "Hallo") == 0, "M-f at the end accepts the word: '%s'",
          ed->field.text);
    CHECK(ed->segs[0].completions_used == 5, "completions counted: %d",
          ed->segs[0].completions_used);

    /* type-through: typing what the MT predicted keeps it; no request */
    type(ed, "\x15"); /* C-u */
    type(ed, "Hal");
    CHECK(strcmp(rest_of(ed), "lo Welt.") == 0 && !ed->comp_pending, "typed through the MT");
    ed_tick(ed, T + 100);
    CHECK(r.n_req == 0, "no request while the MT covers the field");

    /* diverging: debounced request with the latest prefix */
    type(ed, "t");
    CHECK(strcmp(rest_of(ed), "(none)") == 0 && ed->comp_pending, "diverged: no completion");
    T += 10;
    type(ed, "e");
    ed_tick(ed, T + ED_COMPLETION_DEBOUNCE_MS - 1);
    CHECK(r.n_req == 0, "debounced: nothing before %d ms", ED_COMPLETION_DEBOUNCE_MS);
    ed_tick(ed, T + ED_COMPLETION_DEBOUNCE_MS);
    CHECK(r.n_req == 1 && r.req_seg == 0 && strcmp(r.req_prefix, "Halte") == 0,
          "one request for 'Halte': %d '%s'", r.n_req, r.req_prefix);
    ed_tick(ed, T + 1000);
    CHECK(r.n_req == 1, "a request is made once");

    /* outdated completions are ignored, current ones shown */
    CHECK(ed_apply_completion(ed, 0, "Halt", "! Stopp", NULL, 0) == ED_NOOP,
          "completion for an older prefix that does not cover 'Halte' is dropped");
    CHECK(ed_apply_completion(ed, 1, "Halte", "n Sie", NULL, 0) == ED_NOOP,
          "completion for another segment is dropped");
    CHECK(ed_apply_completion(ed, 0, "Hal", "ten Sie", NULL, 0) == MT_OK,
          "an older prefix whose prediction still covers the field is kept");
    CHECK(strcmp(rest_of(ed), "n Sie") == 0, "covered rest: '%s'", rest_of(ed));
    float cf[] = {0.2f, 0.8f};
    CHECK(ed_apply_completion(ed, 0, "Halte", "n Sie bitte", cf, 2) == MT_OK, "current prefix");
    CHECK(strcmp(rest_of(ed), "n Sie bitte") == 0, "rest '%s'", rest_of(ed));
    CHECK_CLOSE(ed_completion_conf(ed, 0), 0.2, 1e-6, 0, "completion conf word 0");
    CHECK_CLOSE(ed_completion_conf(ed, 3), 0.8, 1e-6, 0, "completion conf word 1");
    CHECK(ed_completion_conf(ed, 6) < 0, "no conf for a third word");
    type(ed, "n S");
    CHECK(strcmp(rest_of(ed), "ie bitte") == 0 && !ed->comp_pending, "typed through: '%s'",
          rest_of(ed));
    type(ed, "\x7f\x7f\x7f\x7f\x7f");
    CHECK(strcmp(ed->field.text, "Hal") == 0 && strcmp(rest_of(ed), "lo Welt.") == 0,
          "backspacing below the prefix falls back to the MT: '%s' + '%s'", ed->field.text,
          rest_of(ed));

    /* n-best picks */
    type(ed, "\x1b"
             "2");
    CHECK(strcmp(ed->field.text, "Hallo, Welt.") == 0 && ed->field.cur == 12, "M-2: '%s'",
          ed->field.text);
    type(ed, "\x1b"
             "3");
    CHECK(strcmp(ed->field.text, "Servus Welt.") == 0, "M-3");
    int bells = ed->bells;
    type(ed, "\x1b"
             "9");
    CHECK(strcmp(ed->field.text, "Servus Welt.") == 0 && ed->bells == bells + 1 &&
              strstr(ed->msg, "no alternative 9"),
          "M-9 without a 9th alternative: '%s'", ed->msg);
    type(ed, "\x1a");
    CHECK(strcmp(ed->field.text, "Hallo, Welt.") == 0, "undo an n-best pick");
    type(ed, "\x1b"
             "1");
    type(ed, "!");
    T += 2500;
    key(ed, UI_KEY_ENTER);
    CHECK(r.n_commit == 1 && strcmp(r.commit_text, "Hallo Welt.!") == 0, "commit '%s'",
          r.commit_text);
    CHECK(r.st.origin == UI_ORIGIN_NBEST && r.st.nbest_rank == 1 &&
              strcmp(r.st_sugg, "Hallo Welt.") == 0 && r.st.edited,
          "stats: origin %d rank %d sugg '%s'", r.st.origin, r.st.nbest_rank, r.st_sugg);
    CHECK(r.st.seconds >= 2.5 && r.st.keystrokes > 20, "time %.2f s, %d keys", r.st.seconds,
          r.st.keystrokes);
    CHECK(ed->cur == 1 && ed->segs[0].status == UI_SEG_CONFIRMED, "moved on to segment 2");
    ed_free(ed);
}

static void test_confirm_and_navigation(void) {
    rec r;
    ui_hooks h = make_hooks(&r);
    ui_editor *ed = new_editor(&h, 0);
    if (!ed) return;
    int64_t total = ed->words_total, done0 = ed->words_done;
    CHECK(total == 2 + 2 + 2 + 2 + 3 && done0 == 2, "words %lld done %lld", (long long)total,
          (long long)done0);
    ui_mt_result m = mt_hallo();
    CHECK_STATUS(ed_apply_mt(ed, 0, &m));
    key(ed, UI_KEY_ENTER); /* untouched: confirms the MT */
    CHECK(r.n_commit == 1 && r.commit_seg == 0 && strcmp(r.commit_text, "Hallo Welt.") == 0,
          "Enter on an untouched segment confirms the MT: '%s'", r.commit_text);
    CHECK(r.st.origin == UI_ORIGIN_MT && !r.st.edited && r.st.keystrokes == 0 &&
              strcmp(r.st_sugg, "Hallo Welt.") == 0,
          "stats of an unedited MT");
    CHECK(ed->cur == 1 && r.n_changed == 2 && r.ch_from[1] == 0 && r.ch_to[1] == 1 &&
              r.ch_draft_null[1],
          "segment_changed(0, NULL, 1)");
    /* segment 2 was machine translated by the document: its target is the MT */
    CHECK(ed->field.len == 0 && strcmp(rest_of(ed), "Guten Morgen.") == 0, "doc MT greyed");
    key(ed, UI_KEY_ENTER);
    CHECK(r.n_commit == 2 && strcmp(r.commit_text, "Guten Morgen.") == 0 &&
              r.st.origin == UI_ORIGIN_MT,
          "confirmed the document's MT");
    CHECK(ed->cur == 3, "skipped the confirmed segment 3: now %lld", (long long)ed->cur + 1);
    /* an edited draft opens with its text */
    CHECK(strcmp(ed->field.text, "Bis bald") == 0 && ed->field.cur == 8, "draft in the field");
    CHECK(ed->comp_pending, "a draft asks for a completion");
    ed_tick(ed, T + ED_COMPLETION_DEBOUNCE_MS);
    CHECK(r.n_req == 1 && r.req_seg == 3 && strcmp(r.req_prefix, "Bis bald") == 0,
          "request for the draft");
    type(ed, "!");
    key(ed, UI_KEY_PGDN);
    CHECK(ed->cur == 4 && r.ch_from[r.n_changed - 1] == 3 &&
              strcmp(r.ch_draft[r.n_changed - 1], "Bis bald!") == 0,
          "PgDn reports the draft");
    CHECK(ed->segs[3].status == UI_SEG_EDITED && strcmp(ed->segs[3].target, "Bis bald!") == 0,
          "draft kept");
    int bells = ed->bells;
    key(ed, UI_KEY_PGDN);
    CHECK(ed->cur == 4 && ed->bells == bells + 1, "PgDn on the last segment rings");
    key(ed, UI_CTRL('p'));
    CHECK(ed->cur == 3 && strcmp(ed->field.text, "Bis bald!") == 0, "C-p back to the draft");
    CHECK(r.ch_draft_null[r.n_changed - 1], "leaving unchanged: no draft");
    type(ed, "\x1b"
             "n");
    CHECK(ed->cur == 4, "M-n: the next open segment is 5 (%lld)", (long long)ed->cur + 1);
    type(ed, "\x1b"
             "n");
    CHECK(ed->cur == 3, "M-n wraps past the confirmed 1..3 to 4 (%lld)", (long long)ed->cur + 1);
    key(ed, UI_CTRL('n'));
    type(ed, "\x1b<");
    CHECK(ed->cur == 0, "M-< first");
    type(ed, "\x1b>");
    CHECK(ed->cur == 4, "M-> last");
    key(ed, UI_KEY_UP);
    key(ed, UI_KEY_DOWN);
    CHECK(ed->cur == 4, "Up/Down");

    /* typed from scratch, a failing commit keeps the segment open */
    type(ed, "Tsch\xc3\xbc\xc3\x9f, mein Freund.");
    r.commit_rc = MT_ERR_IO;
    key(ed, UI_KEY_ENTER);
    CHECK(r.n_commit == 2 && ed->cur == 4 && strstr(ed->msg, "disk full"), "failed commit: '%s'",
          ed->msg);
    r.commit_rc = MT_OK;
    key(ed, UI_KEY_ENTER);
    CHECK(r.n_commit == 3 && r.st.origin == UI_ORIGIN_NONE && r.st.edited && r.st.keystrokes == 20,
          "typed from scratch: origin %d, %d keys", r.st.origin, r.st.keystrokes);
    CHECK(ed->cur == 3, "next untranslated wraps around to segment 4: %lld",
          (long long)ed->cur + 1);
    key(ed, UI_KEY_ENTER);
    CHECK(r.n_commit == 4 && strcmp(r.commit_text, "Bis bald!") == 0 &&
              r.st.origin == UI_ORIGIN_DRAFT && !r.st.edited,
          "draft confirmed as it was");
    CHECK(ed->cur == 3 && strstr(ed->msg, "all 5 segments"), "all confirmed: stays, '%s'", ed->msg);
    CHECK(r.st.keystrokes == 1, "the '!' typed on the first visit counted: %d", r.st.keystrokes);
    /* the confirmed segment stays open read-only: typing never changes it
    ** (issue 29: ':' after :find or on the last segment appended ":w" to the
    ** confirmed text and confirmed it again) */
    CHECK(ed->locked, "the confirmed segment is open read-only");
    key(ed, UI_KEY_END);
    type(ed, "abc");
    key(ed, UI_KEY_BACKSPACE);
    CHECK(strcmp(ed->field.text, "Bis bald!") == 0 && r.n_commit == 4 &&
              strstr(ed->msg, "Enter reopens"),
          "typing on a confirmed segment changes nothing: '%s', '%s'", ed->field.text, ed->msg);
    type(ed, ":");
    CHECK(ed->mode == ED_MODE_CMDLINE && strcmp(ed->field.text, "Bis bald!") == 0,
          "':' at the end of a confirmed segment opens the command line");
    key(ed, UI_KEY_ESC);
    T += 1000;
    key(ed, UI_KEY_ENTER);
    CHECK(!ed->locked && r.n_commit == 4 && strstr(ed->msg, "editing confirmed"),
          "Enter reopens a confirmed segment for editing: '%s'", ed->msg);
    key(ed, UI_KEY_ENTER);
    CHECK(r.n_commit == 5 && r.st.keystrokes == 0 && r.st.origin == UI_ORIGIN_DRAFT &&
              r.st.seconds > 0.99 && r.st.seconds < 1.01,
          "statistics restart after a confirmation: %d keys, %.3f s", r.st.keystrokes,
          r.st.seconds);
    CHECK(ed->words_done == ed->words_total && ed->n_confirmed == 5, "progress complete");
    CHECK(ed_next_untranslated(ed, 0) == -1, "nothing left");
    /* editing a confirmed segment and leaving it makes it a draft again */
    key(ed, UI_KEY_ENTER); /* reopen it */
    type(ed, "\x08");
    key(ed, UI_CTRL('p'));
    CHECK(ed->segs[3].status == UI_SEG_EDITED && ed->n_confirmed == 4 &&
              ed->words_done == ed->words_total - 2,
          "unconfirmed by a draft");

    /* ':' opens the command line only at the start of an editable field */
    key(ed, UI_CTRL('n')); /* back to the draft */
    key(ed, UI_KEY_HOME);
    type(ed, "x:");
    CHECK(strncmp(ed->field.text, "x:", 2) == 0 && ed->mode == ED_MODE_EDIT, "':' types");
    key(ed, UI_KEY_HOME);
    type(ed, ":");
    CHECK(ed->mode == ED_MODE_CMDLINE, "':' at the start opens the command line");
    key(ed, UI_KEY_ESC);
    CHECK(ed->mode == ED_MODE_EDIT, "Esc closes it");
    /* C-v quotes: a line break in the text */
    key(ed, UI_KEY_END);
    type(ed, "\x16\r");
    CHECK(ed->field.text[ed->field.len - 1] == '\n', "C-v Enter inserts a newline");
    ed_free(ed);
}

/* ============================================================ commands */

static void test_cmd_parse(void) {
    static ui_cmd c;
    setenv("HOME", "/home/tr", 1);
    struct {
        const char *line;
        ui_cmd_kind kind;
        int64_t n;
        const char *arg, *fmt;
    } ok[] = {
        {"w", UI_CMD_WRITE, 0, "", ""},
        {"q", UI_CMD_QUIT, 0, "", ""},
        {"  wq  ", UI_CMD_WRITE_QUIT, 0, "", ""},
        {"x", UI_CMD_WRITE_QUIT, 0, "", ""},
        {"q!", UI_CMD_QUIT_FORCE, 0, "", ""},
        {"goto 12", UI_CMD_GOTO, 12, "", ""},
        {"go 3", UI_CMD_GOTO, 3, "", ""},
        {"42", UI_CMD_GOTO, 42, "", ""},
        {"find  foo bar ", UI_CMD_FIND, 0, "foo bar ", ""},
        {"find", UI_CMD_FIND, 0, "", ""},
        {"f Gr\xc3\xbc\xc3\x9f"
         "e",
         UI_CMD_FIND, 0,
         "Gr\xc3\xbc\xc3\x9f"
         "e",
         ""},
        {"model ~/models/en-de.npz", UI_CMD_MODEL, 0, "/home/tr/models/en-de.npz", ""},
        {"mod /m.npz ", UI_CMD_MODEL, 0, "/m.npz", ""},
        {"export tmx out.tmx", UI_CMD_EXPORT, 0, "out.tmx", "tmx"},
        {"export tsv /tmp/a b.tsv", UI_CMD_EXPORT, 0, "/tmp/a b.tsv", "tsv"},
        {"help", UI_CMD_HELP, 0, "", ""},
        {":w", UI_CMD_WRITE, 0, "", ""},
        {"w!", UI_CMD_WRITE_FORCE, 0, "", ""},
        {"qa", UI_CMD_QA, 0, "", ""},
        {"", UI_CMD_NONE, 0, "", ""},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        mt_status rc = ui_cmd_parse(ok[i].line, &c);
        CHECK(rc == MT_OK && c.kind == ok[i].kind && c.n == ok[i].n &&
                  strcmp(c.arg, ok[i].arg) == 0 && strcmp(c.format, ok[i].fmt) == 0,
              "parse '%s': rc %d kind %d n %lld arg '%s' fmt '%s' (%s)", ok[i].line, rc, c.kind,
              (long long)c.n, c.arg, c.format, mt_errmsg());
    }
    struct {
        const char *line, *msg;
    } bad[] = {
        {"frobnicate", "unknown command"},    {"goto", "needs a segment number"},
        {"goto x", "not a segment number"},   {"goto 0", "not a segment number"},
        {"goto 3 4", "not a segment number"}, {"12x", "not a segment number"},
        {"w file.po", "takes no argument"},   {"q now", "takes no argument"},
        {"tune now", "nothing or 'cancel'"},  {"tune cancel it", "nothing or 'cancel'"},
        {"export", "needs a format"},         {"export xml f.xml", "unknown format"},
        {"export tmx", "needs a PATH"},       {"e", "needs a format"},
        {"0", "not a segment number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mt_clearerr();
        mt_status rc = ui_cmd_parse(bad[i].line, &c);
        CHECK(rc == MT_ERR_INVALID && strstr(mt_errmsg(), bad[i].msg), "'%s' rejected: rc %d '%s'",
              bad[i].line, rc, mt_errmsg());
    }
    /* :model alone lists the models; :tune and :tune cancel */
    CHECK(ui_cmd_parse("model", &c) == MT_OK && c.kind == UI_CMD_MODEL && c.arg[0] == '\0',
          ":model without a path");
    CHECK(ui_cmd_parse("tune", &c) == MT_OK && c.kind == UI_CMD_TUNE && c.arg[0] == '\0', ":tune");
    CHECK(ui_cmd_parse("tune cancel ", &c) == MT_OK && c.kind == UI_CMD_TUNE &&
              strcmp(c.arg, "cancel") == 0,
          ":tune cancel");
    char longp[UI_CMD_ARG_MAX + 16] = "model ";
    memset(longp + 6, 'a', UI_CMD_ARG_MAX);
    longp[6 + UI_CMD_ARG_MAX] = '\0';
    CHECK(ui_cmd_parse(longp, &c) == MT_ERR_INVALID, "over-long path rejected");
}

static void run_cmd(ui_editor *ed, const char *cmd) {
    key(ed, UI_KEY_HOME);
    type(ed, "\x1b:"); /* M-: opens it anywhere */
    type(ed, cmd);
    key(ed, UI_KEY_ENTER);
}

static void test_commands_in_editor(void) {
    rec r;
    ui_hooks h = make_hooks(&r);
    ui_editor *ed = new_editor(&h, 0);
    if (!ed) return;
    run_cmd(ed, "goto 3");
    CHECK(ed->cur == 2 && ed->mode == ED_MODE_EDIT, ":goto 3 -> %lld", (long long)ed->cur + 1);
    run_cmd(ed, "9");
    CHECK(ed->cur == 2 && strstr(ed->msg, "no segment 9"), ":9 out of range: '%s'", ed->msg);
    run_cmd(ed, "find MORNING");
    CHECK(ed->cur == 1 && strstr(ed->msg, "wrapped"), ":find wraps, ignores case: %lld '%s'",
          (long long)ed->cur + 1, ed->msg);
    run_cmd(ed, "find bald");
    CHECK(ed->cur == 3, ":find in targets: %lld", (long long)ed->cur + 1);
    run_cmd(ed, "find o");
    CHECK(ed->cur == 4, ":find o -> 5 (%lld)", (long long)ed->cur + 1);
    run_cmd(ed, "find");
    CHECK(ed->cur == 0, ":find again -> 1 (%lld)", (long long)ed->cur + 1);
    run_cmd(ed, "find zebra");
    CHECK(ed->cur == 0 && strstr(ed->msg, "not found"), "not found: '%s'", ed->msg);
    run_cmd(ed, "model ~/m.npz");
    CHECK(strcmp(r.model, "/home/tr/m.npz") == 0, ":model -> '%s'", r.model);
    run_cmd(ed, "export tmx /tmp/out.tmx");
    CHECK(strcmp(r.exp_fmt, "tmx") == 0 && strcmp(r.exp_path, "/tmp/out.tmx") == 0, ":export");
    run_cmd(ed, "bogus");
    CHECK(strstr(ed->msg, "unknown command ':bogus'") && ed->mode == ED_MODE_EDIT,
          "error shown: '%s'", ed->msg);
    run_cmd(ed, "help");
    CHECK(ed->mode == ED_MODE_HELP, ":help");
    key(ed, UI_KEY_DOWN);
    CHECK(ed->mode == ED_MODE_HELP && ed->help_scroll == 1, "help scrolls");
    key(ed, 'q');
    CHECK(ed->mode == ED_MODE_EDIT, "any other key closes the help");
    key(ed, UI_KEY_F0 + 1);
    CHECK(ed->mode == ED_MODE_HELP, "F1");
    key(ed, UI_KEY_ESC);

    /* history */
    type(ed, "\x1b:");
    type(ed, "fi");
    key(ed, UI_KEY_UP);
    CHECK(strcmp(ed->cmd.text, "help") == 0, "Up: '%s'", ed->cmd.text);
    key(ed, UI_KEY_UP);
    CHECK(strcmp(ed->cmd.text, "bogus") == 0, "Up Up: '%s'", ed->cmd.text);
    key(ed, UI_KEY_UP);
    CHECK(strcmp(ed->cmd.text, "export tmx /tmp/out.tmx") == 0, "Up x3: '%s'", ed->cmd.text);
    for (int i = 0; i < 3; i++)
        key(ed, UI_KEY_DOWN);
    CHECK(strcmp(ed->cmd.text, "fi") == 0, "Down back to the typed line: '%s'", ed->cmd.text);
    int bells = ed->bells;
    key(ed, UI_KEY_DOWN);
    CHECK(ed->bells == bells + 1, "Down at the newest rings");
    for (int i = 0; i < 20; i++)
        key(ed, UI_CTRL('p'));
    CHECK(strcmp(ed->cmd.text, "goto 3") == 0, "oldest entry: '%s'", ed->cmd.text);
    key(ed, UI_CTRL('u'));
    key(ed, UI_KEY_BACKSPACE);
    CHECK(ed->mode == ED_MODE_EDIT, "Backspace on an empty command line closes it");

    /* saving and quitting */
    CHECK(!ed->dirty, "nothing changed yet");
    run_cmd(ed, "w");
    CHECK(r.n_save == 1 && strcmp(ed->msg, "saved") == 0, ":w");
    type(ed, "Hallo"); /* an edited field counts as unsaved */
    key(ed, UI_KEY_HOME);
    run_cmd(ed, "q");
    CHECK(ed->mode == ED_MODE_ASK_QUIT && !ed->quit, ":q with changes asks");
    key(ed, 'c');
    CHECK(ed->mode == ED_MODE_EDIT && !ed->quit, "any other key: stay");
    r.save_rc = MT_ERR_IO;
    run_cmd(ed, "wq");
    CHECK(!ed->quit && strstr(ed->msg, "cannot write doc.po"), "failed save keeps it open: '%s'",
          ed->msg);
    run_cmd(ed, "q");
    key(ed, 'y');
    CHECK(!ed->quit && r.n_save == 3, "y with a failing save stays");
    r.save_rc = MT_OK;
    int changed = r.n_changed;
    run_cmd(ed, "q");
    key(ed, 'n');
    CHECK(ed->quit && r.n_save == 3, "n quits without saving");
    CHECK(r.n_changed == changed + 1 && r.ch_to[changed] == -1 && r.ch_from[changed] == 0 &&
              strcmp(r.ch_draft[changed], "Hallo") == 0,
          "closing reports the draft");
    ed_free(ed);

    ed = new_editor(&h, 2);
    run_cmd(ed, "q");
    CHECK(ed && ed->quit, ":q without changes quits at once");
    ed_free(ed);
    ed = new_editor(&h, 2);
    r.n_save = 0;
    run_cmd(ed, "wq");
    CHECK(ed && ed->quit && r.n_save == 1, ":wq saves and quits");
    ed_free(ed);
    ed = new_editor(&h, 2);
    type(ed, "x");
    run_cmd(ed, "q!");
    CHECK(ed && ed->quit && r.n_save == 1, ":q! quits without asking");
    ed_free(ed);
    ed = new_editor(NULL, 0); /* no hooks at all */
    key(ed, UI_KEY_ENTER);
    type(ed, "abc\r");
    run_cmd(ed, "w");
    CHECK(ed->cur == 1 && ed->segs[0].status == UI_SEG_CONFIRMED &&
              strstr(ed->msg, "not available"),
          "NULL hooks: '%s'", ed->msg);
    ed_free(ed);
}

static void touch(const char *path) {
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
}

static void test_cmd_completion(void) {
    ed_line l;
    char list[256];
    CHECK_STATUS(ed_line_init(&l));
    set(&l, "mo");
    CHECK(ui_cmd_complete(&l, list, sizeof list) == MT_OK && strcmp(l.text, "model ") == 0,
          "command name completed with a space: '%s'", l.text);
    set(&l, "q");
    CHECK(ui_cmd_complete(&l, list, sizeof list) == ED_NOOP && strcmp(list, "q q! qa") == 0,
          "ambiguous: list '%s'", list);
    set(&l, "he");
    ui_cmd_complete(&l, list, sizeof list);
    CHECK(strcmp(l.text, "help") == 0, "no space after a command without arguments: '%s'", l.text);
    set(&l, "zz");
    CHECK(ui_cmd_complete(&l, list, sizeof list) == ED_NOOP, "no candidates");
    set(&l, "export t");
    CHECK(ui_cmd_complete(&l, list, sizeof list) == ED_NOOP && strcmp(list, "tmx tsv") == 0,
          "formats listed: '%s'", list);
    set(&l, "export tm");
    ui_cmd_complete(&l, list, sizeof list);
    CHECK(strcmp(l.text, "export tmx ") == 0, "format completed: '%s'", l.text);

    char dir[] = "/tmp/mtpe_ui_testXXXXXX";
    if (!CHECK(mkdtemp(dir) != NULL, "mkdtemp %s", dir)) {
        ed_line_free(&l);
        return;
    }
    char p[512];
    snprintf(p, sizeof p, "%s/alpha.npz", dir);
    touch(p);
    snprintf(p, sizeof p, "%s/alps", dir);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/beta", dir);
    touch(p);
    snprintf(p, sizeof p, "model %s/al", dir);
    set(&l, p);
    CHECK(ui_cmd_complete(&l, list, sizeof list) == MT_OK && strcmp(list, "alpha.npz alps/") == 0,
          "common prefix, list '%s'", list);
    snprintf(p, sizeof p, "model %s/alp", dir);
    CHECK(strcmp(l.text, p) == 0, "completed to '%s'", l.text);
    ed_line_insert(&l, "h", 1);
    ui_cmd_complete(&l, list, sizeof list);
    snprintf(p, sizeof p, "model %s/alpha.npz", dir);
    CHECK(strcmp(l.text, p) == 0, "unique file: '%s'", l.text);
    snprintf(p, sizeof p, "export tsv %s/alp", dir);
    set(&l, p);
    ed_line_insert(&l, "s", 1);
    ui_cmd_complete(&l, list, sizeof list);
    snprintf(p, sizeof p, "export tsv %s/alps/", dir);
    CHECK(strcmp(l.text, p) == 0, "directory gets '/': '%s'", l.text);
    snprintf(p, sizeof p, "%s/alpha.npz", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/beta", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/alps", dir);
    rmdir(p);
    rmdir(dir);
    ed_line_free(&l);

    /* through the keys: Tab in the command line */
    rec r;
    ui_hooks h = make_hooks(&r);
    ui_editor *ed = new_editor(&h, 0);
    type(ed, ":go");
    key(ed, UI_KEY_TAB);
    type(ed, "5\r");
    CHECK(ed && ed->cur == 4, "':go' Tab '5' Enter -> segment 5");
    ed_free(ed);
}

/* ================================================== allocation failures */

static void scenario(ui_editor *ed) {
    ui_mt_result m = mt_hallo();
    ed_apply_mt(ed, 0, &m);
    type(ed, "Hal\t\t\x1b"
             "2x\x1a\x0b\x19");
    ed_apply_completion(ed, 0, ed->field.text, " und so", conf2, 2);
    type(ed, "\x05\x05\r");
    type(ed, "\x1b:find see\r");
    ed_tick(ed, T + 100);
    type(ed, "!\x0e");
    ed_close(ed, T);
}

static void test_alloc_failures(void) {
    rec r;
    ui_hooks h = make_hooks(&r);
    mt_alloc_stats s0 = mt_alloc_get_stats();
    int n_ok = 0, n_runs = 0;
    for (int64_t n = 0; n < 5000; n++) {
        ui_editor *ed = NULL;
        mt_alloc_fail_at(n, true);
        mt_status rc = ed_init(&h, &doc, &ed);
        if (rc == MT_OK) {
            ed_open(ed, 0, T);
            scenario(ed);
        } else {
            CHECK(rc == MT_ERR_NOMEM && ed == NULL, "failure %lld: rc %d", (long long)n, rc);
        }
        bool finished = rc == MT_OK && mt_alloc_count() <= n; /* n was never reached */
        mt_alloc_fail_at(-1, false);
        n_runs++;
        ed_free(ed);
        mt_alloc_stats s1 = mt_alloc_get_stats();
        CHECK(s1.live_blocks == s0.live_blocks, "no leak with allocation %lld failing: %zu -> %zu",
              (long long)n, s0.live_blocks, s1.live_blocks);
        if (finished) { /* the scenario ran without reaching allocation n */
            n_ok = 1;
            break;
        }
    }
    fprintf(stderr, "test_editor: scenario run with each of its %d allocations failing\n",
            n_runs - 1);
    CHECK(n_ok && n_runs > 50, "the scenario eventually runs without failures (%d runs)", n_runs);
    /* and the same scenario without failures ends where expected */
    ui_editor *ed = new_editor(&h, 0);
    if (ed) {
        scenario(ed);
        CHECK(ed->segs[0].status == UI_SEG_CONFIRMED && ed->quit == false, "scenario result");
        ed_free(ed);
    }
    CHECK(mt_alloc_get_stats().live_blocks == s0.live_blocks, "no leak");
}

/* ================================================================ screen */

static int find_row(ui_screen *s, const char *needle, int from) {
    int rows, cols;
    char buf[4096];
    ui_screen_size(s, &rows, &cols);
    for (int y = from; y < rows; y++) {
        ui_screen_row(s, y, buf, sizeof buf);
        if (strstr(buf, needle)) return y;
    }
    return -1;
}

static int find_col(ui_screen *s, int y, const char *needle) {
    char buf[4096];
    ui_screen_row(s, y, buf, sizeof buf);
    const char *p = strstr(buf, needle);
    return p ? ui_str_width(buf, (size_t)(p - buf)) : -1;
}

static void test_screen(void) {
    FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
    ui_screen *s = NULL;
    ui_keydec dec;
    ui_keydec_init(&dec);
    /* xterm-256color: ncurses-base, which every Debian system has */
    bool ok = out && in && ui_screen_init("xterm-256color", out, in, &dec, &s) == MT_OK;
    if (!CHECK(ok, "no xterm-256color terminfo for the screen tests (%s)", mt_errmsg())) {
        if (out) fclose(out);
        if (in) fclose(in);
        return;
    }
    CHECK(ui_screen_colors(s) == 256, "256 colours: %d", ui_screen_colors(s));
    rec r;
    ui_hooks h = make_hooks(&r);
    ui_editor *ed = new_editor(&h, 0);
    ui_mt_result m = mt_hallo();
    ed_apply_mt(ed, 0, &m);
    ui_screen_resize(s, 24, 80);
    ui_screen_draw(s, ed);
    char buf[4096];
    ui_screen_row(s, 0, buf, sizeof buf);
    CHECK(strstr(buf, "mtpe edit") && strstr(buf, "doc.po") && strstr(buf, "1/5 confirmed"),
          "header: '%s'", buf);
    ui_screen_row(s, 22, buf, sizeof buf);
    CHECK(strstr(buf, "seg 1/5") && strstr(buf, "2/11 words") && strstr(buf, "tiny-en-de") &&
              strstr(buf, "250 tok/s"),
          "status line: '%s'", buf);
    int list = find_row(s, "4 e See you.", 1);
    CHECK(list > 0 && list < 8, "segment list shows segment 4 as edited (row %d)", list);
    CHECK(find_row(s, "3 * Thank you.", 1) == list - 1, "segment 3 confirmed");
    int lr = find_row(s, "1 m Hello world.", 1);
    CHECK(lr == 1, "segment 1 listed first with mark 'm' (row %d)", lr);
    int src = find_row(s, "Source", list);
    CHECK(src > list && find_row(s, "Hello world.", src + 1) == src + 1, "source pane");
    int tr = find_row(s, "Translation", src);
    CHECK(tr > src && find_row(s, "Hallo Welt.", tr + 1) == tr + 1, "field row");
    int cy, cx;
    ui_screen_cursor(s, &cy, &cx);
    CHECK(cy == tr + 1 && cx == 1, "cursor at the start of the field (%d,%d)", cy, cx);
    CHECK(ui_screen_cell_role(s, tr + 1, 1) == UI_ROLE_GREY, "'Hallo' greyed: role %d",
          ui_screen_cell_role(s, tr + 1, 1));
    CHECK(ui_screen_cell_role(s, tr + 1, 7) == UI_ROLE_CONF_LOW, "'Welt.' low confidence: %d",
          ui_screen_cell_role(s, tr + 1, 7));
    int alt = find_row(s, "M-2 Hallo, Welt.", tr);
    CHECK(alt > tr && find_col(s, alt, "-1.25") > 60, "n-best with scores (row %d)", alt);
    CHECK(ui_screen_cell_role(s, alt - 1, 5 + 6) == UI_ROLE_CONF_LOW,
          "1-best coloured by confidence (role %d)", ui_screen_cell_role(s, alt - 1, 11));

    /* typing moves the cursor; the completion follows it */
    type(ed, "Hal");
    ui_screen_draw(s, ed);
    ui_screen_cursor(s, &cy, &cx);
    CHECK(cy == tr + 1 && cx == 4, "cursor after 'Hal' (%d,%d)", cy, cx);
    CHECK(ui_screen_cell_role(s, tr + 1, 1) == UI_ROLE_NORMAL &&
              ui_screen_cell_role(s, tr + 1, 4) == UI_ROLE_GREY,
          "typed text normal, rest grey");
    type(ed, "\x15\xe6\x97\xa5\xe6\x9c\xac"); /* C-u 日本 */
    ui_screen_draw(s, ed);
    ui_screen_cursor(s, &cy, &cx);
    CHECK(cx == 5, "CJK: two columns each, cursor at 5 (%d)", cx);
    ui_screen_row(s, tr + 1, buf, sizeof buf);
    CHECK(strstr(buf, "\xe6\x97\xa5\xe6\x9c\xac"), "CJK drawn: '%s'", buf);

    /* long text wraps by words and keeps the cursor visible */
    type(ed, "\x15");
    for (int i = 0; i < 40; i++)
        type(ed, "Wort ");
    ui_screen_draw(s, ed);
    ui_screen_cursor(s, &cy, &cx);
    ui_screen_row(s, cy, buf, sizeof buf);
    CHECK(cy > tr && cy < 21 && strstr(buf, "Wort"), "wrapped field, cursor row %d", cy);
    for (int y = tr + 1; y <= cy; y++) {
        ui_screen_row(s, y, buf, sizeof buf);
        size_t bl = strlen(buf);
        while (bl && buf[bl - 1] == ' ')
            bl--;
        CHECK(bl < 5 || strncmp(buf + bl - 4, "Wort", 4) == 0, "no word cut at row %d: '%s'", y,
              buf);
    }

    /* attention heat map: F3, 256-colour cells */
    key(ed, UI_KEY_F0 + 3);
    ui_screen_draw(s, ed);
    int hm = find_row(s, "Attention", tr);
    CHECK(hm > 0, "heat map pane");
    int hy = find_row(s, "Hallo", hm + 1);
    int hx = find_col(s, hm + 1, "Hello");
    CHECK(hy == hm + 2 && hx > 0, "heat map labels (%d, %d)", hy, hx);
    if (hy > 0 && hx > 0) {
        CHECK(ui_screen_cell_role(s, hy, hx) == UI_ROLE_HEAT0 + 8, "0.9 -> level 8: %d",
              ui_screen_cell_role(s, hy, hx));
        int hx2 = find_col(s, hm + 1, "world");
        CHECK(ui_screen_cell_role(s, hy, hx2) == UI_ROLE_HEAT0 + 0, "0.05 -> level 0: %d",
              ui_screen_cell_role(s, hy, hx2));
    }

    /* wide terminal: list on the left, both panes; tiny terminal; help */
    ui_screen_resize(s, 40, 160);
    ui_screen_draw(s, ed);
    CHECK(find_row(s, "Alternatives", 1) > 0 && find_row(s, "Attention", 1) > 0,
          "wide layout shows both panes");
    int y5 = find_row(s, "Goodbye", 1);
    CHECK(y5 > 0 && find_col(s, y5, "Goodbye") < 64, "list on the left");
    ui_screen_resize(s, 6, 30);
    ui_screen_draw(s, ed);
    CHECK(find_row(s, "terminal too small", 0) == 0, "too small");
    ui_screen_resize(s, 10, 40);
    ui_screen_draw(s, ed);
    CHECK(find_row(s, "seg 1/5", 0) == 8, "10x40 draws");
    ui_screen_resize(s, 24, 80);
    key(ed, UI_KEY_F0 + 1);
    ui_screen_draw(s, ed);
    CHECK(find_row(s, "C-a Home", 1) > 0 && find_row(s, "go to the start of the line", 1) > 0,
          "help drawn");
    key(ed, UI_KEY_ESC);
    type(ed, "\x1b:goto 3");
    ui_screen_draw(s, ed);
    ui_screen_row(s, 23, buf, sizeof buf);
    ui_screen_cursor(s, &cy, &cx);
    CHECK(strncmp(buf, ":goto 3", 7) == 0 && cy == 23 && cx == 7, "command line: '%s' (%d,%d)", buf,
          cy, cx);
    ed_free(ed);
    ui_screen_free(s);

    /* monochrome: shaded characters for the heat map */
    s = NULL;
    if (ui_screen_init("vt100", out, in, &dec, &s) == MT_OK) {
        CHECK(ui_screen_colors(s) == 0, "vt100 has no colours");
        ed = new_editor(&h, 0);
        ed_apply_mt(ed, 0, &m);
        key(ed, UI_KEY_F0 + 3);
        ui_screen_resize(s, 24, 80);
        ui_screen_draw(s, ed);
        int y = find_row(s, "Hallo", 1);
        y = find_row(s, "Hallo", y + 1); /* the list shows no target; field, then heat map */
        int hrow = find_row(s, "Attention", 1);
        int rowh = find_row(s, "Hallo", hrow);
        ui_screen_row(s, rowh, buf, sizeof buf);
        CHECK(rowh > hrow && strstr(buf, "\xe2\x96\x88") && !strstr(buf, "\xe2\x96\x91"),
              "0.9 shaded full, 0.05 blank: '%s'", buf);
        ui_screen_row(s, rowh + 1, buf, sizeof buf);
        CHECK(strstr(buf, "\xe2\x96\x92") == NULL && strstr(buf, "\xe2\x96\x93") == NULL &&
                  strstr(buf, "\xe2\x96\x91 \xe2\x96\x88\xe2\x96\x88") &&
                  strstr(buf, "\xe2\x96\x88 \xe2\x96\x91"),
              "0.1 -> light shade, 0.8 -> full: '%s'", buf);
        int fr = find_row(s, "Translation", 1) + 1;
        CHECK(ui_screen_cell_dim(s, fr, 1), "completion dim without colours");
        (void)y;
        ed_free(ed);
        ui_screen_free(s);
    }
    fclose(out);
    fclose(in);
}

/* Issue 29, finding 8a: the forms of a PO plural entry say so by the
** source heading (ui_segment.label), so they do not look like unrelated
** segments. */
static void test_screen_label(void) {
    FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
    ui_screen *s = NULL;
    ui_keydec dec;
    ui_keydec_init(&dec);
    bool ok = out && in && ui_screen_init("xterm-256color", out, in, &dec, &s) == MT_OK;
    if (!CHECK(ok, "no xterm-256color terminfo for the label test (%s)", mt_errmsg())) {
        if (out) fclose(out);
        if (in) fclose(in);
        return;
    }
    const ui_segment segs[] = {
        {.source = "Open", .target = NULL, .status = UI_SEG_NEW, .label = NULL},
        {.source = "%d file",
         .target = NULL,
         .status = UI_SEG_NEW,
         .label = "plural form 1/2 (n = 1)"},
        {.source = "%d files",
         .target = NULL,
         .status = UI_SEG_NEW,
         .label = "plural form 2/2 (n = 0, 2, 3, \xe2\x80\xa6)"},
    };
    const ui_document d = {"doc.po", "en", "de", NULL, segs, 3};
    rec r;
    ui_hooks h = make_hooks(&r);
    ui_editor *ed = NULL;
    CHECK_STATUS(ed_init(&h, &d, &ed));
    if (ed) {
        ed_open(ed, 0, T);
        ui_screen_resize(s, 24, 80);
        char buf[4096];
        static const char *const want[] = {
            NULL, "Source  2/3  plural form 1/2 (n = 1) ",
            "Source  3/3  plural form 2/2 (n = 0, 2, 3, \xe2\x80\xa6) "};
        for (int i = 0; i < 3; i++) {
            if (i) key(ed, UI_KEY_PGDN);
            ui_screen_draw(s, ed);
            int y = find_row(s, "Source  ", 1);
            if (y >= 0) ui_screen_row(s, y, buf, sizeof buf);
            CHECK(y > 0 && (want[i] ? strstr(buf, want[i]) != NULL : !strstr(buf, "plural")),
                  "segment %d heading: '%s'", i + 1, y > 0 ? buf : "(none)");
        }
    }
    ed_free(ed);
    ui_screen_free(s);
    fclose(out);
    fclose(in);
}

int main(void) {
    /* UTF-8 for wcwidth and ncursesw, as ui_run sets it up */
    if (setlocale(LC_CTYPE, "C.UTF-8") == NULL) setlocale(LC_CTYPE, "");
    test_utf8();
    test_line_editing();
    test_keys();
    test_help_matches_bindings();
    test_completion();
    test_edit_events();
    test_confirm_and_navigation();
    test_cmd_parse();
    test_commands_in_editor();
    test_cmd_completion();
    test_alloc_failures();
    test_screen();
    test_screen_label();
    CHECK(ui_post_message(MT_LOG_INFO, "x") == MT_ERR_INVALID, "posting without a running ui");
    TEST_MAIN_END();
}
