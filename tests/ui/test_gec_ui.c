/*
** test_gec_ui.c: grammar checking in the editor (ui/gec.c, ui/editor.c,
** ui/keys.c) against a fake behind ui_hooks.gec_request, without a model:
**   - the request comes UI_GEC_PAUSE_MS after the last change of the field,
**     not before, once per text, never for an empty field, and the
**     deadline says when;
**   - posted fixes are shown only while the field holds the text they were
**     made for (a result for another segment or an older text is not);
**   - M-g applies the fix at the cursor, else the next one after it, as one
**     undo step reported as typing; the other fixes are shifted and stay;
**   - M-G dismisses a fix, and the same fix in a later result is dropped;
**   - the line under the field; bad posts (out of order, outside the text)
**     are refused; without the hook M-g only says grammar checking is off.
*/
#include <stdio.h>
#include <string.h>

#include "editor.h"
#include "harness.h"

typedef struct fake {
    int n_req;
    int64_t seg;
    char text[256];
    char last_edit[256];
    int n_edited;
} fake;

static void f_req(void *u, int64_t seg, const char *text) {
    fake *f = u;
    f->n_req++;
    f->seg = seg;
    snprintf(f->text, sizeof f->text, "%s", text);
}

static void f_edited(void *u, int64_t seg, const char *text, ui_edit_kind kind, int32_t keys) {
    fake *f = u;
    (void)seg, (void)kind, (void)keys;
    f->n_edited++;
    snprintf(f->last_edit, sizeof f->last_edit, "%s", text);
}

static const ui_segment segs[] = {
    {.source = "The file is empty", .target = NULL, .status = UI_SEG_NEW},
    {.source = "Thanks", .target = "Danke", .status = UI_SEG_CONFIRMED},
};
static const ui_document doc = {"doc.po", "en", "de", NULL, segs, 2};

static void type(ui_editor *ed, const char *s, int64_t now) {
    for (const char *p = s; *p; p++)
        ed_key(ed, (unsigned char)*p, now);
}

static ed_gec_result *result(int64_t seg, const char *text, const ui_gec_fix *f, int n) {
    ed_gec_result *r = NULL;
    CHECK(ed_gec_result_copy(seg, text, f, n, &r) == MT_OK, "copy: %s", mt_errmsg());
    return r;
}

static void test_timer_and_fixes(void) {
    fake f = {0};
    ui_hooks h = {0};
    h.user = &f;
    h.gec_request = f_req;
    h.edited = f_edited;
    ui_editor *ed = NULL;
    CHECK_STATUS(ed_init(&h, &doc, &ed));
    if (!ed) return;
    int64_t t = 1000;
    ed_open(ed, 0, t);
    ed_tick(ed, t + 5000);
    CHECK(f.n_req == 0, "an empty field is not checked");
    type(ed, "Die Dateii ist leer", t);
    ed_tick(ed, t);
    CHECK(ed_deadline(ed) <= t + UI_GEC_PAUSE_MS, "deadline %lld", (long long)ed_deadline(ed));
    ed_tick(ed, t + UI_GEC_PAUSE_MS - 1);
    CHECK(f.n_req == 0, "asked before the pause");
    ed_tick(ed, t + UI_GEC_PAUSE_MS);
    CHECK(f.n_req == 1 && f.seg == 0 && !strcmp(f.text, "Die Dateii ist leer"),
          "asked once after the pause: %d '%s'", f.n_req, f.text);
    ed_tick(ed, t + 5000);
    CHECK(f.n_req == 1, "the same text is not asked again (%d)", f.n_req);

    /* typing again: a new pause */
    t += 6000;
    ed_key(ed, '.', t);
    ed_tick(ed, t);
    ed_tick(ed, t + 500);
    CHECK(f.n_req == 1, "asked during typing");
    ed_tick(ed, t + UI_GEC_PAUSE_MS);
    CHECK(f.n_req == 2 && !strcmp(f.text, "Die Dateii ist leer."), "second request '%s'", f.text);

    /* a result for an older text or another segment is not shown */
    ui_gec_fix fx[2] = {{4, 6, "Datei"}, {19, 1, "!"}};
    ed_gec_take(ed, result(0, "Die Dateii ist leer", fx, 1));
    int n;
    CHECK(ed_gec_fixes(ed, &n) == NULL && n == 0, "a fix for an older text shown");
    ed_gec_take(ed, result(1, "Die Dateii ist leer.", fx, 2));
    CHECK(ed_gec_fixes(ed, &n) == NULL, "a fix for another segment shown");
    ed_gec_take(ed, result(0, "Die Dateii ist leer.", fx, 2));
    const ed_gec_fix *g = ed_gec_fixes(ed, &n);
    CHECK(g && n == 2 && g[0].start == 4 && g[1].start == 19, "fixes shown: %d", n);
    char line[256];
    CHECK(ed_gec_line(ed, line, sizeof line) &&
              strstr(line, "Grammar: Dateii \xE2\x86\x92 Datei \xC2\xB7 . \xE2\x86\x92 !"),
          "line '%s'", line);
    CHECK(!strcmp(ed->field.text, "Die Dateii ist leer."), "nothing applied by itself");

    /* M-g with the cursor at the end: the first fix at or after it is the
    ** period (19..20 ends at 20 = the cursor) */
    ed_key(ed, 'g' | UI_KEY_META, t + 2000);
    CHECK(!strcmp(ed->field.text, "Die Dateii ist leer!"), "M-g at the end: '%s'", ed->field.text);
    CHECK(!strcmp(f.last_edit, "Die Dateii ist leer!"), "reported as an edit: '%s'", f.last_edit);
    g = ed_gec_fixes(ed, &n);
    CHECK(g && n == 1 && g[0].start == 4 && g[0].len == 6, "the other fix stays (%d)", n);
    /* cursor at the start: the next one is Dateii */
    ed_key(ed, UI_CTRL('a'), t + 2000);
    ed_key(ed, 'g' | UI_KEY_META, t + 2000);
    CHECK(!strcmp(ed->field.text, "Die Datei ist leer!"), "M-g: '%s'", ed->field.text);
    CHECK(ed->field.cur == 9, "cursor after the fix: %zu", ed->field.cur);
    CHECK(ed_gec_fixes(ed, &n) == NULL, "no fix left");
    ed_tick(ed, t + 10000);
    CHECK(f.n_req == 2, "an applied fix's text is not checked again (%d)", f.n_req);
    ed_key(ed, UI_CTRL('z'), t + 10000);
    CHECK(!strcmp(ed->field.text, "Die Dateii ist leer!"), "C-z undoes one fix: '%s'",
          ed->field.text);

    /* M-G dismisses; the same fix in a later result is dropped, others stay */
    ed_gec_take(ed, result(0, "Die Dateii ist leer!", fx, 1));
    CHECK(ed_gec_fixes(ed, &n) && n == 1, "fix shown");
    ed_key(ed, 'G' | UI_KEY_META, t + 11000);
    CHECK(ed_gec_fixes(ed, &n) == NULL && !strcmp(ed->field.text, "Die Dateii ist leer!"),
          "M-G dismissed, text kept");
    ui_gec_fix fy[2] = {{0, 3, "Der"}, {4, 6, "Datei"}};
    ed_gec_take(ed, result(0, "Die Dateii ist leer!", fy, 2));
    g = ed_gec_fixes(ed, &n);
    CHECK(g && n == 1 && g[0].start == 0, "dismissed fix not shown again (%d)", n);
    ed_key(ed, 'g' | UI_KEY_META, t + 12000);
    CHECK(!strcmp(ed->field.text, "Der Dateii ist leer!"), "M-g: '%s'", ed->field.text);

    /* bad posts */
    ed_gec_result *r = NULL;
    ui_gec_fix bad1[2] = {{4, 6, "x"}, {2, 1, "y"}};
    CHECK(ed_gec_result_copy(0, "Die Dateii", bad1, 2, &r) == MT_ERR_INVALID && !r, "order");
    ui_gec_fix bad2[1] = {{8, 6, "x"}};
    CHECK(ed_gec_result_copy(0, "Die Dateii", bad2, 1, &r) == MT_ERR_INVALID, "outside");
    ed_free(ed);
}

static void test_no_hook(void) {
    ui_hooks h = {0};
    ui_editor *ed = NULL;
    CHECK_STATUS(ed_init(&h, &doc, &ed));
    if (!ed) return;
    ed_open(ed, 0, 1000);
    type(ed, "Die Dateii", 1000);
    ed_tick(ed, 9000);
    CHECK(ed_deadline(ed) > 9000 || ed_deadline(ed) == INT64_MAX, "no grammar timer");
    ed_key(ed, 'g' | UI_KEY_META, 9000);
    CHECK(!strcmp(ed->field.text, "Die Dateii") && strstr(ed->msg, "grammar checking is off"),
          "M-g without a model: '%s'", ed->msg);
    ed_free(ed);
}

int main(int argc, char **argv) {
    TEST_MAIN_BEGIN(argc, argv);
    test_timer_and_fixes();
    test_no_hook();
    TEST_MAIN_END();
}
