/*
** test_replace.c: search and replace (ui/replace.c) and the readable panes
** (ui/screen.c), without a terminal, as tests/ui/test_editor.c does.
**
**   matcher      literal, case-folded (UTF-8: Ö finds ö), whole words
**                (ß is a word character), POSIX ERE with groups, empty
**                regex matches skipped, bad regexes refused
**   parsing      :replace quoting ("Datei öffnen", 'c d', a\ b), escapes,
**                options, errors; :find -s/-t/--; :undo
**   :replace     occurrences visited segment by segment with y/n/a/q,
**                only drafts and confirmed targets (MT untouched), each
**                changed segment through ui_hooks.replace once with its
**                status kept, the summary "replaced 2 of 4 occurrences in
**                2 segments", a draft in the field stored first, a failing
**                hook leaving the segment as it was, C-z right after and
**                :undo restoring every segment (one edited since is kept)
**   screen       the occurrence highlighted; a long alternative wraps onto
**                indented continuation rows with no word lost; the F4 list;
**                heat map labels whole and scrolled with M-Right; the forms
**                of a PO plural entry together
*/
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "editor.h"
#include "harness.h"

/* ============================================================ fake hooks */

typedef struct rec {
    int n_changed;
    int n_drafts; /* segment_changed calls with a draft */
    char last_draft[256];
    int n_repl;
    int64_t repl_seg[32];
    char repl_text[32][128];
    ui_seg_status repl_status[32];
    bool repl_undo[32];
    mt_status repl_rc;
    char by_seg[8][128]; /* the text each segment last got through the hook */
} rec;

static void h_changed(void *u, int64_t from, const char *draft, int64_t to) {
    rec *r = u;
    (void)from, (void)to;
    r->n_changed++;
    if (draft) {
        r->n_drafts++;
        snprintf(r->last_draft, sizeof r->last_draft, "%s", draft);
    }
}

static mt_status h_replace(void *u, int64_t seg, const char *text, ui_seg_status st, bool undo) {
    rec *r = u;
    if (r->repl_rc != MT_OK) return mt_seterr(r->repl_rc, "disk full");
    if (seg >= 0 && seg < 8) snprintf(r->by_seg[seg], sizeof r->by_seg[seg], "%s", text);
    int i = r->n_repl++;
    if (i >= 32) return MT_OK;
    r->repl_seg[i] = seg;
    snprintf(r->repl_text[i], sizeof r->repl_text[i], "%s", text);
    r->repl_status[i] = st;
    r->repl_undo[i] = undo;
    return MT_OK;
}

static ui_hooks make_hooks(rec *r) {
    memset(r, 0, sizeof *r);
    ui_hooks h;
    memset(&h, 0, sizeof h);
    h.user = r;
    h.segment_changed = h_changed;
    h.replace = h_replace;
    return h;
}

static const int64_t T = 1000;

static void type(ui_editor *ed, const char *bytes) {
    ui_keydec d;
    ui_keydec_init(&d);
    int32_t keys[512];
    int n = ui_keydec_feed_bytes(&d, bytes, strlen(bytes), T, keys, 512);
    for (int i = 0; i < n; i++)
        ed_key(ed, keys[i], T);
    int32_t k;
    if (ui_keydec_flush(&d, T + UI_ESC_MS, &k)) ed_key(ed, k, T);
}

static void key(ui_editor *ed, int32_t k) { ed_key(ed, k, T); }

static void run_cmd(ui_editor *ed, const char *cmd) {
    type(ed, "\x1b:"); /* M-: opens the command line anywhere */
    type(ed, cmd);
    key(ed, UI_KEY_ENTER);
}

/* ================================================================ matcher */

/* Replaces all occurrences of pat (flags) in s; returns the count, the
** result in out. */
static int repl_all(const char *pat, int flags, const char *s, const char *with, char *out,
                    size_t size) {
    ui_matcher m;
    out[0] = '\0';
    if (ui_matcher_init(&m, pat, flags) != MT_OK) {
        ui_matcher_free(&m);
        return -1;
    }
    char *t = NULL;
    int n = -2;
    if (ui_replace_all(&m, s, with, &t, &n) == MT_OK) snprintf(out, size, "%s", t);
    mt_free(t);
    ui_matcher_free(&m);
    return n;
}

static void test_matcher(void) {
    char out[256];
    ui_matcher m;
    ui_match mt;
    /* occurrence iteration: "Datei und Dateien" has Datei at 0 and 10 */
    CHECK_STATUS(ui_matcher_init(&m, "Datei", 0));
    const char *s = "Datei und Dateien";
    CHECK(ui_matcher_next(&m, s, strlen(s), 0, &mt) && mt.start == 0 && mt.end == 5, "first at 0");
    CHECK(ui_matcher_next(&m, s, strlen(s), 1, &mt) && mt.start == 10 && mt.end == 15,
          "second at 10 (%zu)", mt.start);
    CHECK(!ui_matcher_next(&m, s, strlen(s), 11, &mt), "no third");
    ui_matcher_free(&m);

    CHECK(repl_all("Datei", 0, s, "Akte", out, sizeof out) == 2 &&
              strcmp(out, "Akte und Akteen") == 0,
          "literal: '%s'", out);
    CHECK(repl_all("Datei", UI_FIND_WORD, s, "Akte", out, sizeof out) == 1 &&
              strcmp(out, "Akte und Dateien") == 0,
          "-w: '%s'", out);
    CHECK(repl_all("datei", 0, s, "Akte", out, sizeof out) == 0 && strcmp(out, s) == 0,
          "case matters by default: '%s'", out);
    CHECK(repl_all("DATEI", UI_FIND_ICASE, s, "Akte", out, sizeof out) == 2, "-i: '%s'", out);
    /* UTF-8 case folding: Ö (2 bytes) finds ö, Ä finds ä */
    CHECK(repl_all("ÖFFNEN", UI_FIND_ICASE, "Datei öffnen", "laden", out, sizeof out) == 1 &&
              strcmp(out, "Datei laden") == 0,
          "-i with umlauts: '%s'", out);
    CHECK(repl_all("ÖFFNEN", 0, "Datei öffnen", "laden", out, sizeof out) == 0, "no -i: none");
    /* ß is a word character: "Maß" is not a whole word inside "Maßband" */
    CHECK(repl_all("Maß", UI_FIND_WORD, "Maß Maßband «Maß»", "Größe", out, sizeof out) == 2 &&
              strcmp(out, "Größe Maßband «Größe»") == 0,
          "-w with UTF-8 neighbours: '%s'", out);
    /* NEW containing OLD does not loop; the search goes on after it */
    CHECK(repl_all("a", 0, "a b a", "aa", out, sizeof out) == 2 && strcmp(out, "aa b aa") == 0,
          "NEW contains OLD: '%s'", out);
    /* regex: groups as \1 \2, \\ a backslash, \0 the whole occurrence */
    CHECK(repl_all("([a-z]+)-([a-z]+)", UI_FIND_REGEX, "foo-bar, baz-qux", "\\2-\\1", out,
                   sizeof out) == 2 &&
              strcmp(out, "bar-foo, qux-baz") == 0,
          "regex groups: '%s'", out);
    CHECK(repl_all("[0-9]+", UI_FIND_REGEX, "3 Dateien, 12 Ordner", "<\\0>\\\\", out, sizeof out) ==
                  2 &&
              strcmp(out, "<3>\\ Dateien, <12>\\ Ordner") == 0,
          "regex \\0 and \\\\: '%s'", out);
    CHECK(repl_all("^Die", UI_FIND_REGEX, "Die Datei, Die", "Eine", out, sizeof out) == 1 &&
              strcmp(out, "Eine Datei, Die") == 0,
          "^ only at the start: '%s'", out);
    /* multibyte: '.' is one character, never a byte of one */
    CHECK(repl_all("ö.", UI_FIND_REGEX, "öffnen", "oe", out, sizeof out) == 1 &&
              strcmp(out, "oefnen") == 0,
          "regex over UTF-8: '%s'", out);
    CHECK(repl_all(".", UI_FIND_REGEX, "äß日", "x", out, sizeof out) == 3 &&
              strcmp(out, "xxx") == 0,
          "regex '.' takes whole characters: '%s'", out);
    CHECK(repl_all("datei", UI_FIND_REGEX | UI_FIND_ICASE | UI_FIND_WORD, "Datei Dateien DATEI",
                   "Akte", out, sizeof out) == 2 &&
              strcmp(out, "Akte Dateien Akte") == 0,
          "regex -i -w: '%s'", out);
    /* an empty match is not an occurrence */
    CHECK(repl_all("x*", UI_FIND_REGEX, "abc", "y", out, sizeof out) == 0 &&
              strcmp(out, "abc") == 0,
          "empty matches skipped: '%s'", out);
    CHECK(repl_all("(", UI_FIND_REGEX, "abc", "y", out, sizeof out) == -1, "bad regex refused");
    CHECK(repl_all("", 0, "abc", "y", out, sizeof out) == -1, "empty pattern refused");
    CHECK(mt_utf8_valid("äöü \xef\xbf\xbd", strlen("äöü \xef\xbf\xbd"), NULL), "valid UTF-8");
    CHECK(!mt_utf8_valid("a\xc3", 2, NULL) && !mt_utf8_valid("\xff", 1, NULL), "invalid UTF-8");
}

/* ================================================================ parsing */

static void test_parse(void) {
    static ui_cmd c;
    CHECK_STATUS(ui_cmd_parse("replace \"Datei öffnen\" \"Datei laden\"", &c));
    CHECK(c.kind == UI_CMD_REPLACE && strcmp(c.arg, "Datei öffnen") == 0 &&
              strcmp(c.arg2, "Datei laden") == 0 && c.flags == 0,
          "quoted: '%s' '%s'", c.arg, c.arg2);
    CHECK_STATUS(ui_cmd_parse("rep -rw a\\ b 'c d'", &c));
    CHECK(c.kind == UI_CMD_REPLACE && strcmp(c.arg, "a b") == 0 && strcmp(c.arg2, "c d") == 0 &&
              c.flags == (UI_FIND_REGEX | UI_FIND_WORD),
          "options, \\space, single quotes: '%s' '%s' %d", c.arg, c.arg2, c.flags);
    CHECK_STATUS(ui_cmd_parse("replace -r -i (a)\\.b \\1x", &c));
    CHECK(strcmp(c.arg, "(a)\\.b") == 0 && strcmp(c.arg2, "\\1x") == 0 &&
              c.flags == (UI_FIND_REGEX | UI_FIND_ICASE),
          "regex escapes kept: '%s' '%s'", c.arg, c.arg2);
    CHECK_STATUS(ui_cmd_parse("replace \"say \\\"hi\\\"\" \"\"", &c));
    CHECK(strcmp(c.arg, "say \"hi\"") == 0 && c.arg2[0] == '\0', "\\\" and an empty NEW: '%s'",
          c.arg);
    CHECK_STATUS(ui_cmd_parse("replace -- -x y\\tz", &c));
    CHECK(strcmp(c.arg, "-x") == 0 && strcmp(c.arg2, "y\tz") == 0, "-- and \\t: '%s' '%s'", c.arg,
          c.arg2);
    static const char *const bad[][2] = {
        {"replace a", "needs OLD and NEW"},      {"replace a b c", "two texts"},
        {"replace -s a b", "read-only"},         {"replace \"a b", "missing closing"},
        {"replace -x a b", "unknown option -x"}, {"replace \"\" b", "OLD is empty"},
        {"find -q x", "unknown option -q"},      {"undo now", "takes no argument"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mt_clearerr();
        mt_status rc = ui_cmd_parse(bad[i][0], &c);
        CHECK(rc == MT_ERR_INVALID && strstr(mt_errmsg(), bad[i][1]), "':%s' -> '%s'", bad[i][0],
              mt_errmsg());
    }
    CHECK_STATUS(ui_cmd_parse("find -s Hello world", &c));
    CHECK(c.kind == UI_CMD_FIND && c.flags == UI_FIND_SOURCE && strcmp(c.arg, "Hello world") == 0,
          ":find -s: %d '%s'", c.flags, c.arg);
    CHECK_STATUS(ui_cmd_parse("find -- -s", &c));
    CHECK(c.flags == 0 && strcmp(c.arg, "-s") == 0, ":find -- -s: '%s'", c.arg);
    CHECK_STATUS(ui_cmd_parse("find \"quoted stays\"", &c));
    CHECK(strcmp(c.arg, "\"quoted stays\"") == 0, ":find keeps its text as typed: '%s'", c.arg);
    CHECK_STATUS(ui_cmd_parse("undo", &c));
    CHECK(c.kind == UI_CMD_UNDO, ":undo");
    CHECK_STATUS(ui_cmd_parse("und", &c));
    CHECK(c.kind == UI_CMD_UNDO, ":und abbreviates :undo");
}

/* ================================================================ :replace */

static const ui_segment rsegs[] = {
    {.source = "Open the file",
     .target = "Datei öffnen",
     .status = UI_SEG_CONFIRMED,
     .label = NULL},
    {.source = "The file, the file",
     .target = "Die Datei, die Datei",
     .status = UI_SEG_EDITED,
     .label = NULL},
    {.source = "New", .target = NULL, .status = UI_SEG_NEW, .label = NULL},
    {.source = "Files", .target = "Dateien", .status = UI_SEG_CONFIRMED, .label = NULL},
    {.source = "Machine", .target = "Datei", .status = UI_SEG_MT, .label = NULL},
    {.source = "Save the file",
     .target = "Datei speichern",
     .status = UI_SEG_CONFIRMED,
     .label = NULL},
};
static const ui_document rdoc = {"r.po", "en", "de", NULL, rsegs, 6};

static ui_editor *open_doc(const ui_hooks *h, int64_t start) {
    ui_editor *ed = NULL;
    CHECK_STATUS(ed_init(h, &rdoc, &ed));
    if (ed) ed_open(ed, start, T);
    return ed;
}

static void test_replace_flow(void) {
    rec r;
    ui_hooks h = make_hooks(&r);
    ui_editor *ed = open_doc(&h, 0);
    if (!ed) return;
    int64_t confirmed = ed->n_confirmed;
    run_cmd(ed, "replace -w Datei Akte");
    size_t a, b;
    /* 4 occurrences: 1 in segment 1, 2 in segment 2, 1 in segment 6; not
    ** "Dateien" (-w), not the MT of segment 5 */
    CHECK(ed->mode == ED_MODE_REPLACE && ed->cur == 0 && ed_replace_highlight(ed, &a, &b) &&
              a == 0 && b == 5,
          "asks about segment 1's occurrence: mode %d seg %lld", (int)ed->mode,
          (long long)ed->cur + 1);
    CHECK(strstr(ed->msg, "(1 of 4)"), "prompt counts: '%s'", ed->msg);
    key(ed, 'x'); /* not an answer: asks again */
    CHECK(ed->mode == ED_MODE_REPLACE && r.n_repl == 0, "other keys do not answer");
    key(ed, 'y');
    CHECK(r.n_repl == 1 && r.repl_seg[0] == 0 && strcmp(r.repl_text[0], "Akte öffnen") == 0 &&
              r.repl_status[0] == UI_SEG_CONFIRMED && !r.repl_undo[0],
          "segment 1 stored at once, still confirmed: %d '%s'", r.n_repl, r.repl_text[0]);
    CHECK(ed->cur == 1 && ed_replace_highlight(ed, &a, &b) && a == 4 && b == 9,
          "segment 2, first occurrence at 4: %lld %zu", (long long)ed->cur + 1, a);
    key(ed, 'n');
    CHECK(ed->cur == 1 && ed_replace_highlight(ed, &a, &b) && a == 15 && b == 20,
          "n: the second occurrence, at 15 (%zu)", a);
    key(ed, 'Y');
    CHECK(r.n_repl == 2 && r.repl_seg[1] == 1 &&
              strcmp(r.repl_text[1], "Die Datei, die Akte") == 0 &&
              r.repl_status[1] == UI_SEG_EDITED,
          "segment 2 once, both answers, still a draft: '%s'", r.repl_text[1]);
    CHECK(ed->cur == 5 && ed->mode == ED_MODE_REPLACE, "segment 6 next (%lld)",
          (long long)ed->cur + 1);
    key(ed, 'q');
    CHECK(ed->mode == ED_MODE_EDIT && r.n_repl == 2, "q stops");
    CHECK(strstr(ed->msg, "replaced 2 of 4 occurrences in 2 segments"), "summary: '%s'", ed->msg);
    CHECK(strcmp(ed->segs[0].target, "Akte öffnen") == 0 &&
              ed->segs[0].status == UI_SEG_CONFIRMED &&
              strcmp(ed->segs[1].target, "Die Datei, die Akte") == 0 &&
              ed->segs[1].status == UI_SEG_EDITED && strcmp(ed->segs[3].target, "Dateien") == 0 &&
              strcmp(ed->segs[4].target, "Datei") == 0 && ed->segs[4].status == UI_SEG_MT &&
              strcmp(ed->segs[5].target, "Datei speichern") == 0,
          "exactly the answered occurrences changed");
    CHECK(ed->n_confirmed == confirmed && ed->dirty, "statuses kept, unsaved changes");
    CHECK(r.n_drafts == 0, "moving between segments made no drafts (%d)", r.n_drafts);
    CHECK(strcmp(ed->field.text, "Datei speichern") == 0, "the field shows segment 6: '%s'",
          ed->field.text);

    /* C-z right after: every segment back, stored as undo */
    key(ed, UI_CTRL('z'));
    CHECK(r.n_repl == 4 && r.repl_undo[2] && r.repl_undo[3], "two undo calls (%d)", r.n_repl);
    CHECK(strcmp(ed->segs[0].target, "Datei öffnen") == 0 &&
              ed->segs[0].status == UI_SEG_CONFIRMED &&
              strcmp(ed->segs[1].target, "Die Datei, die Datei") == 0 &&
              ed->segs[1].status == UI_SEG_EDITED,
          "undo restored both segments: '%s' '%s'", ed->segs[0].target, ed->segs[1].target);
    CHECK(strstr(ed->msg, "undid the :replace in 2 segments"), "undo message: '%s'", ed->msg);
    run_cmd(ed, "undo");
    CHECK(r.n_repl == 4 && strstr(ed->msg, "nothing to undo"), "nothing more: '%s'", ed->msg);

    /* a: this and all the remaining ones, without moving */
    run_cmd(ed, "1");
    run_cmd(ed, "replace -w Datei Akte");
    key(ed, 'a');
    CHECK(ed->mode == ED_MODE_EDIT && strstr(ed->msg, "replaced 4 of 4 occurrences in 3 segments"),
          "a: '%s'", ed->msg);
    CHECK(strcmp(ed->segs[1].target, "Die Akte, die Akte") == 0 &&
              strcmp(ed->segs[5].target, "Akte speichern") == 0 && ed->cur == 0,
          "all replaced: '%s'", ed->segs[1].target);
    /* segment 6 edited since: :undo keeps it, restores the others */
    run_cmd(ed, "6");
    key(ed, UI_KEY_ENTER); /* reopen the confirmed segment */
    type(ed, "!");
    run_cmd(ed, "undo");
    CHECK(r.n_drafts == 1 && strcmp(r.last_draft, "Akte speichern!") == 0,
          "the field's draft is stored first: '%s'", r.last_draft);
    CHECK(strcmp(ed->segs[5].target, "Akte speichern!") == 0 &&
              strcmp(ed->segs[0].target, "Datei öffnen") == 0 &&
              strcmp(ed->segs[1].target, "Die Datei, die Datei") == 0,
          "undo kept the edited segment: '%s'", ed->segs[5].target);
    CHECK(strstr(ed->msg, "in 2 segments; 1 segment edited since kept"), "undo message: '%s'",
          ed->msg);

    /* the field's draft is searched too; UTF-8, quotes and -i */
    type(ed, " Datei öffnen");
    run_cmd(ed, "replace -i \"DATEI ÖFFNEN\" \"Datei laden\"");
    CHECK(ed->mode == ED_MODE_REPLACE && ed->cur == 5 && r.n_drafts == 2 &&
              strstr(r.last_draft, "Datei öffnen"),
          "the draft became the segment's, then asked in it: '%s'", r.last_draft);
    key(ed, 'y');
    CHECK(ed->cur == 0 && ed->mode == ED_MODE_REPLACE, "then segment 1");
    key(ed, UI_KEY_ESC);
    CHECK(strcmp(ed->segs[5].target, "Akte speichern! Datei laden") == 0 &&
              strcmp(ed->segs[0].target, "Datei öffnen") == 0 && ed->mode == ED_MODE_EDIT,
          "Esc stops: '%s'", ed->segs[5].target);
    CHECK(strstr(ed->msg, "replaced 1 of 2 occurrences in 1 segment "), "summary: '%s'", ed->msg);

    /* typing after a :replace: C-z is the field's undo again */
    run_cmd(ed, "replace Datei Akte");
    key(ed, 'a');
    int n = r.n_repl;
    run_cmd(ed, "2");
    type(ed, "x");
    key(ed, UI_CTRL('z'));
    CHECK(r.n_repl == n && strcmp(ed->field.text, "Die Akte, die Akte") == 0,
          "C-z after typing undoes the typing: '%s'", ed->field.text);

    /* a failing hook: the segment stays as it was, the operation stops */
    r.repl_rc = MT_ERR_IO;
    run_cmd(ed, "replace Akte Datei");
    key(ed, 'a');
    CHECK(ed->mode == ED_MODE_EDIT && strcmp(ed->segs[1].target, "Die Akte, die Akte") == 0 &&
              strstr(ed->msg, "not changed: disk full"),
          "hook failure: '%s'", ed->msg);
    r.repl_rc = MT_OK;

    run_cmd(ed, "replace zebra Zebra");
    CHECK(ed->mode == ED_MODE_EDIT && strstr(ed->msg, "not found in the translations"),
          "nothing to replace: '%s'", ed->msg);
    run_cmd(ed, "replace -r ( x");
    CHECK(ed->mode == ED_MODE_EDIT && strstr(ed->msg, "bad regular expression"), "'%s'", ed->msg);

    /* :find scopes */
    run_cmd(ed, "1");
    run_cmd(ed, "find -s Files");
    CHECK(ed->cur == 3, ":find -s in sources -> 4 (%lld)", (long long)ed->cur + 1);
    run_cmd(ed, "find -t Machine");
    CHECK(ed->cur == 3 && strstr(ed->msg, "not found"), ":find -t skips sources: '%s'", ed->msg);
    run_cmd(ed, "find -t speichern");
    CHECK(ed->cur == 5, ":find -t in targets -> 6 (%lld)", (long long)ed->cur + 1);
    run_cmd(ed, "find -w -s file");
    CHECK(ed->cur == 0, ":find -w: 'file', not 'Files' (%lld)", (long long)ed->cur + 1);
    ed_free(ed);

    /* without the hook the ui alone changes */
    ed = open_doc(NULL, 0);
    run_cmd(ed, "replace -w Datei Akte");
    key(ed, 'a');
    CHECK(strcmp(ed->segs[5].target, "Akte speichern") == 0, "no hook: '%s'", ed->msg);
    ed_free(ed);
}

/* Every allocation of a :replace / :undo scenario failing in turn: no
** crash, no leak, and the ui's text of each segment is what the hook (the
** store) got last, so the two never disagree. */
static void replace_scenario(ui_editor *ed) {
    run_cmd(ed, "replace -w Datei Akte");
    key(ed, 'y');
    key(ed, 'n');
    key(ed, 'a');
    key(ed, UI_CTRL('z'));
    run_cmd(ed, "replace -r \"(D)atei \" \"\\1ATEI \"");
    key(ed, 'a');
    run_cmd(ed, "undo");
    run_cmd(ed, "find -t speichern");
}

static void test_alloc_failures(void) {
    rec r;
    ui_hooks h = make_hooks(&r);
    mt_alloc_stats s0 = mt_alloc_get_stats();
    int n_runs = 0;
    bool finished = false;
    for (int64_t n = 0; n < 5000 && !finished; n++) {
        memset(r.by_seg, 0, sizeof r.by_seg);
        ui_editor *ed = NULL;
        mt_alloc_fail_at(n, true);
        mt_status rc = ed_init(&h, &rdoc, &ed);
        if (rc == MT_OK) {
            ed_open(ed, 0, T);
            replace_scenario(ed);
        }
        finished = rc == MT_OK && mt_alloc_count() <= n;
        mt_alloc_fail_at(-1, false);
        n_runs++;
        for (int i = 0; ed && i < 6; i++)
            if (r.by_seg[i][0])
                CHECK(strcmp(ed->segs[i].target, r.by_seg[i]) == 0,
                      "failure %lld: segment %d ui '%s' store '%s'", (long long)n, i + 1,
                      ed->segs[i].target, r.by_seg[i]);
        ed_free(ed);
        CHECK(mt_alloc_get_stats().live_blocks == s0.live_blocks, "no leak, failure %lld",
              (long long)n);
    }
    fprintf(stderr, "test_replace: scenario run with each of its %d allocations failing\n",
            n_runs - 1);
    CHECK(finished && n_runs > 30, "ran with each of %d allocations failing", n_runs - 1);
    /* without failures: the regex replaced all, then :undo put them back */
    memset(r.by_seg, 0, sizeof r.by_seg);
    ui_editor *ed = NULL;
    CHECK_STATUS(ed_init(&h, &rdoc, &ed));
    if (ed) {
        ed_open(ed, 0, T);
        run_cmd(ed, "replace -r \"(D)atei \" \"\\1ATEI \"");
        key(ed, 'a');
        CHECK(strcmp(ed->segs[0].target, "DATEI öffnen") == 0 &&
                  strcmp(ed->segs[5].target, "DATEI speichern") == 0 &&
                  strcmp(ed->segs[1].target, "Die Datei, die Datei") == 0,
              "regex back-reference in the editor: '%s' '%s' '%s'", ed->segs[0].target,
              ed->segs[5].target, ed->segs[1].target);
        run_cmd(ed, "undo");
        CHECK(strcmp(ed->segs[0].target, "Datei öffnen") == 0 &&
                  strcmp(ed->segs[5].target, "Datei speichern") == 0,
              "undone: '%s'", ed->segs[0].target);
    }
    ed_free(ed);
}

/* ================================================================= screen */

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

static void trim(char *b) {
    size_t n = strlen(b);
    while (n && b[n - 1] == ' ')
        b[--n] = '\0';
}

static const char *const long_alts[] = {
    "Die Datei konnte nicht geöffnet werden, weil sie von einem anderen Programm gesperrt "
    "wird oder weil Ihnen die Rechte fehlen, sie zu lesen; ENDE",
    "Die Datei ließ sich nicht öffnen.",
    "Kurz.",
};
static const char *const alt_labels[] = {"TM 95%", NULL, NULL};
static const char *const tok12[] = {"Tokenlabel01", "Tokenlabel02", "Tokenlabel03", "Tokenlabel04",
                                    "Tokenlabel05", "Tokenlabel06", "Tokenlabel07", "Tokenlabel08",
                                    "Tokenlabel09", "Tokenlabel10", "Tokenlabel11", "Tokenlabel12"};
static const char *const trg2[] = {"Die", "Datei"};

static void test_screen(void) {
    FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
    ui_screen *s = NULL;
    ui_keydec dec;
    ui_keydec_init(&dec);
    bool ok = out && in && ui_screen_init("xterm-256color", out, in, &dec, &s) == MT_OK;
    if (!CHECK(ok, "no xterm-256color terminfo for the screen tests (%s)", mt_errmsg())) {
        if (out) fclose(out);
        if (in) fclose(in);
        return;
    }
    char buf[4096];
    rec r;
    ui_hooks h = make_hooks(&r);
    ui_editor *ed = open_doc(&h, 2);
    float attn[2 * 12];
    for (int i = 0; i < 24; i++)
        attn[i] = (i % 12) == 11 ? 0.9f : 0.01f;
    ui_mt_result m = {.hyp = long_alts[0],
                      .nbest = long_alts,
                      .n_nbest = 3,
                      .nbest_labels = alt_labels,
                      .src_tokens = tok12,
                      .n_src = 12,
                      .trg_tokens = trg2,
                      .n_trg = 2,
                      .attention = attn};
    CHECK_STATUS(ed_apply_mt(ed, 2, &m));
    ui_screen_resize(s, 30, 80);
    ui_screen_draw(s, ed);

    /* the long alternative wraps: continuation rows indented under its text,
    ** every word of it on screen, then the next entry */
    int y1 = find_row(s, "M-1 TM 95% Die Datei", 1);
    int y2 = find_row(s, "M-2 Die Datei ließ sich nicht öffnen.", 1);
    int y3 = find_row(s, "M-3 Kurz.", 1);
    CHECK(y1 > 0 && y2 > y1 + 1 && y3 == y2 + 1, "entries at rows %d %d %d", y1, y2, y3);
    if (y1 > 0 && y2 > y1 + 1) {
        static char joined[8192];
        joined[0] = '\0';
        for (int y = y1; y < y2; y++) {
            ui_screen_row(s, y, buf, sizeof buf);
            trim(buf);
            const char *t = buf + 1 + strlen("M-1 TM 95% "); /* the pane starts at column 1 */
            if (y > y1) {
                CHECK(strncmp(buf, "            ", 12) == 0 && buf[12] != ' ',
                      "continuation row %d indented under the text: '%s'", y, buf);
                t = buf + 12;
            }
            snprintf(joined + strlen(joined), sizeof joined - strlen(joined), "%s%s",
                     y > y1 ? " " : "", t);
        }
        CHECK(strcmp(joined, long_alts[0]) == 0, "no word cut: '%s'", joined);
    }

    /* too small for all: as many as fit, then the F4 hint */
    ui_screen_resize(s, 13, 80);
    ui_screen_draw(s, ed);
    if (!CHECK(find_row(s, "F4 shows all", 1) > 0, "the F4 hint when not all fit"))
        for (int y = 0; y < 13; y++) {
            ui_screen_row(s, y, buf, sizeof buf);
            fprintf(stderr, "|%s\n", buf);
        }
    key(ed, UI_KEY_F0 + 4);
    CHECK(ed->mode == ED_MODE_LIST, "F4 opens the list");
    ui_screen_draw(s, ed);
    CHECK(find_row(s, "All alternatives of segment 3: 3", 1) == 1 && find_row(s, "ENDE", 1) > 0 &&
              find_row(s, "M-3 Kurz.", 1) > 0,
          "the list shows every entry in full");
    key(ed, UI_KEY_DOWN);
    ui_screen_draw(s, ed);
    CHECK(ed->list_scroll == 1 && find_row(s, "M-2 Die Datei", 1) == 2 &&
              find_row(s, "M-1 ", 1) < 0,
          "Down scrolls by an entry (%d)", ed->list_scroll);
    key(ed, 'x');
    CHECK(ed->mode == ED_MODE_EDIT, "any other key closes it");

    /* the heat map: whole labels, scrolled to the last one */
    ui_screen_resize(s, 30, 80);
    key(ed, UI_KEY_F0 + 3);
    ui_screen_draw(s, ed);
    int hm = find_row(s, "Attention", 1);
    CHECK(hm > 0 && find_row(s, "Tokenlabel01 Tokenlabel02", hm) == hm + 1 &&
              find_row(s, "Tokenlabel12", hm) < 0,
          "labels whole, the last out of view (heading at %d)", hm);
    for (int i = 0; i < 4; i++)
        key(ed, UI_KEY_RIGHT | UI_KEY_META);
    ui_screen_draw(s, ed);
    int ly = find_row(s, "Tokenlabel12", hm);
    CHECK(ly == hm + 1 && find_row(s, "Tokenlabel01", hm) < 0, "M-Right scrolled to it (row %d)",
          ly);
    if (ly > 0) {
        ui_screen_row(s, ly, buf, sizeof buf);
        int col = ui_str_width(buf, (size_t)(strstr(buf, "Tokenlabel12") - buf));
        CHECK(ui_screen_cell_role(s, ly + 1, col) == UI_ROLE_HEAT0 + 8,
              "its column shows its attention (0.9): role %d", ui_screen_cell_role(s, ly + 1, col));
    }
    key(ed, UI_KEY_LEFT | UI_KEY_META);
    ui_screen_draw(s, ed);
    CHECK(ed->heat_scroll > 0 && find_row(s, "\xe2\x80\xb9", hm) == hm + 1, "‹ marks the left");
    key(ed, UI_KEY_F0 + 3);

    /* the occurrence :replace asks about is highlighted in the field */
    run_cmd(ed, "replace -w Datei Akte"); /* from segment 3 on: 6 first */
    ui_screen_draw(s, ed);
    int fy = find_row(s, "Translation", 1) + 1;
    ui_screen_row(s, fy, buf, sizeof buf);
    CHECK(ed->cur == 5 && strstr(buf, "Datei speichern") &&
              ui_screen_cell_role(s, fy, 1) == UI_ROLE_MSG_WARN &&
              ui_screen_cell_role(s, fy, 7) == UI_ROLE_NORMAL,
          "highlighted: '%s' roles %d %d", buf, ui_screen_cell_role(s, fy, 1),
          ui_screen_cell_role(s, fy, 7));
    CHECK(find_row(s, "y: yes  n: no  a: this and all remaining", 1) == 29, "the answers shown");
    key(ed, 'q');
    ed_free(ed);

    /* the forms of a plural entry together */
    const ui_segment psegs[] = {
        {.source = "Open", .target = "Öffnen", .status = UI_SEG_CONFIRMED, .label = NULL},
        {.source = "%d file",
         .target = "%d Datei",
         .status = UI_SEG_CONFIRMED,
         .label = "plural form 1/2 (n = 1)"},
        {.source = "%d files",
         .target = NULL,
         .status = UI_SEG_NEW,
         .label = "plural form 2/2 (n = 0, 2, 3, \xe2\x80\xa6)"},
    };
    const ui_document pd = {"p.po", "en", "de", NULL, psegs, 3};
    ed = NULL;
    CHECK_STATUS(ed_init(&h, &pd, &ed));
    if (ed) {
        ed_open(ed, 2, T);
        ui_screen_draw(s, ed);
        int sy = find_row(s, "Source  3/3", 1);
        CHECK(sy > 0 && find_row(s, "singular: %d file", sy) == sy + 1 &&
                  find_row(s, "plural:   %d files", sy) == sy + 2,
              "both sources (heading at %d)", sy);
        int oy = find_row(s, "Other forms of this entry", 1);
        CHECK(oy > 0 && find_row(s, "plural form 1/2 (n = 1): %d Datei", oy) == oy + 1,
              "the other form's translation (heading at %d)", oy);
        key(ed, UI_KEY_PGUP);
        ui_screen_draw(s, ed);
        oy = find_row(s, "Other forms of this entry", 1);
        CHECK(oy > 0 && find_row(s, "(no translation yet)", oy) == oy + 1, "form 2 not yet");
        key(ed, UI_KEY_PGUP);
        ui_screen_draw(s, ed);
        CHECK(find_row(s, "Other forms", 1) < 0 && find_row(s, "singular:", 1) < 0,
              "a plain entry: none of it");
    }
    ed_free(ed);
    ui_screen_free(s);
    fclose(out);
    fclose(in);
}

int main(void) {
    if (setlocale(LC_CTYPE, "C.UTF-8") == NULL) setlocale(LC_CTYPE, "");
    test_matcher();
    test_parse();
    test_replace_flow();
    test_alloc_failures();
    test_screen();
    TEST_MAIN_END();
}
