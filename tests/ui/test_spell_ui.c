/*
** test_spell_ui.c: spell checking in the editor (ui/editor.c, ui/screen.c,
** ui/keys.c, ui/cmdline.c) against a fake checker behind ui_hooks.spell:
**   - the misspelled words of the field, checked again when it changes;
**   - F7 / M-s: the word at or before the cursor (else the first), its
**     suggestions in the bottom line, a digit replaces it (one undo step,
**     reported as typing), a / + adds it to the personal dictionary, Esc
**     closes, any other key closes the list and acts;
**   - :spell, :spell on|off, :spell add WORD; a checker without a
**     dictionary (-1) says why once;
**   - underlined (and red with colours) cells of the field.
** The fake flags the words of a fixed list (found by strstr, independently
** of the editor's code) that were not added.
*/
#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "editor.h"
#include "harness.h"

typedef struct fake {
    const char *bad[4];
    char added[8][32];
    int n_added, n_calls, n_edited;
    char last_edit[128];
    ui_edit_kind last_kind;
    bool unavailable;
} fake;

static bool was_added(const fake *f, const char *w, size_t n) {
    for (int i = 0; i < f->n_added; i++)
        if (strlen(f->added[i]) == n && memcmp(f->added[i], w, n) == 0) return true;
    return false;
}

static int f_spell(void *u, int64_t seg, const char *text, ui_span *out, int max) {
    fake *f = u;
    (void)seg;
    f->n_calls++;
    if (f->unavailable) {
        mt_seterr(MT_ERR_NOTFOUND, "spell checking off: no hunspell dictionary for 'xx'");
        return -1;
    }
    /* every occurrence of each bad word, merged in text order */
    int n = 0;
    for (const char *p = text; *p; p++) {
        for (int b = 0; b < 4 && f->bad[b]; b++) {
            size_t l = strlen(f->bad[b]);
            if (strncmp(p, f->bad[b], l) == 0 && !was_added(f, p, l)) {
                if (n < max) out[n] = (ui_span){(int32_t)(p - text), (int32_t)l};
                n++;
            }
        }
    }
    return n;
}

static int f_suggest(void *u, const char *word, char *buf, size_t n) {
    (void)u;
    if (strcmp(word, "Datie") == 0) {
        snprintf(buf, n, "Datei\nDaten\n");
        return 2;
    }
    buf[0] = '\0';
    return 0;
}

static mt_status f_add(void *u, const char *word) {
    fake *f = u;
    if (f->n_added < 8) snprintf(f->added[f->n_added++], 32, "%s", word);
    return MT_OK;
}

static void f_edited(void *u, int64_t seg, const char *text, ui_edit_kind kind, int32_t keys) {
    fake *f = u;
    (void)seg, (void)keys;
    f->n_edited++;
    f->last_kind = kind;
    snprintf(f->last_edit, sizeof f->last_edit, "%s", text);
}

static int64_t T = 1000;

static ui_hooks hooks_of(fake *f) {
    ui_hooks h;
    memset(&h, 0, sizeof h);
    h.user = f;
    h.edited = f_edited;
    h.spell = f_spell;
    h.spell_suggest = f_suggest;
    h.spell_add = f_add;
    return h;
}

static const ui_segment segs[] = {
    {.source = "The file is there", .target = NULL, .status = UI_SEG_NEW, .label = NULL},
    {.source = "Thanks", .target = "Danke", .status = UI_SEG_CONFIRMED, .label = NULL},
};
static const ui_document doc = {"doc.po", "en", "de", NULL, segs, 2};

static ui_editor *open_editor(const ui_hooks *h) {
    ui_editor *ed = NULL;
    CHECK_STATUS(ed_init(h, &doc, &ed));
    if (ed) ed_open(ed, 0, T);
    return ed;
}

static void type(ui_editor *ed, const char *s) {
    for (const char *p = s; *p; p++)
        ed_key(ed, (unsigned char)*p, T);
}

static void run_cmd(ui_editor *ed, const char *cmd) {
    ed_key(ed, UI_KEY_F0 + 2, T); /* F2: command line */
    type(ed, cmd);
    ed_key(ed, UI_KEY_ENTER, T);
}

static int spans(ui_editor *ed, char *buf, size_t n) {
    int k;
    const ui_span *sp = ed_spell_spans(ed, &k);
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < k; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%d+%d", i ? " " : "", sp[i].start, sp[i].len);
    return k;
}

static void test_editor(void) {
    fake f = {.bad = {"Datie", "Wortt"}};
    ui_hooks h = hooks_of(&f);
    ui_editor *ed = open_editor(&h);
    if (ed == NULL) return;
    char b[256];

    /* the spans follow the text; an unchanged text is not checked again */
    type(ed, "Die Datie ist da");
    CHECK(spans(ed, b, sizeof b) == 1 && strcmp(b, "4+5") == 0, "spans '%s'", b);
    int calls = f.n_calls;
    spans(ed, b, sizeof b);
    CHECK(f.n_calls == calls, "cached: %d calls, was %d", f.n_calls, calls);

    /* F7 at the end: the word before the cursor; 1 picks Datei */
    int edits = f.n_edited, keys = ed->segs[0].keystrokes;
    ed_key(ed, UI_KEY_F0 + 7, T);
    CHECK(ed->mode == ED_MODE_SPELL && ed->n_sug == 2 && strcmp(ed->sug[0], "Datei") == 0 &&
              ed->sug_at == 4 && ed->sug_len == 5,
          "suggestion list: mode %d, %d suggestions", (int)ed->mode, ed->n_sug);
    ed_key(ed, '1', T);
    CHECK(ed->mode == ED_MODE_EDIT && strcmp(ed->field.text, "Die Datei ist da") == 0,
          "replaced: '%s'", ed->field.text);
    CHECK(ed->field.cur == 9, "cursor after the word: %zu", ed->field.cur);
    CHECK(f.n_edited > edits && f.last_kind == UI_EDIT_TYPED &&
              strcmp(f.last_edit, "Die Datei ist da") == 0,
          "reported as typing: '%s' kind %d", f.last_edit, (int)f.last_kind);
    CHECK(ed->segs[0].keystrokes == keys + 2, "F7 and 1 counted: %d -> %d", keys,
          ed->segs[0].keystrokes);
    CHECK(spans(ed, b, sizeof b) == 0, "no misspelling left: '%s'", b);
    ed_key(ed, UI_CTRL('z'), T);
    CHECK(strcmp(ed->field.text, "Die Datie ist da") == 0, "one undo step: '%s'", ed->field.text);
    CHECK(spans(ed, b, sizeof b) == 1, "misspelled again after undo");

    /* M-s with the cursor inside a word; Esc closes without a change */
    ed_key(ed, UI_CTRL('a'), T);
    type(ed, "Wortt ");
    ed_key(ed, UI_CTRL('a'), T);
    ed_key(ed, UI_KEY_RIGHT, T);
    ed_key(ed, UI_KEY_RIGHT, T); /* inside "Wortt" */
    CHECK(spans(ed, b, sizeof b) == 2 && strcmp(b, "0+5 10+5") == 0, "two spans: '%s'", b);
    ed_key(ed, 's' | UI_KEY_META, T);
    CHECK(ed->mode == ED_MODE_SPELL && ed->sug_at == 0 && ed->n_sug == 0,
          "M-s: the word under the cursor, no suggestions (at %zu, %d)", ed->sug_at, ed->n_sug);
    ed_key(ed, '1', T); /* no suggestion 1: refused, the list stays */
    CHECK(ed->mode == ED_MODE_SPELL && strcmp(ed->field.text, "Wortt Die Datie ist da") == 0,
          "digit without a suggestion refused");
    ed_key(ed, UI_KEY_ESC, T);
    CHECK(ed->mode == ED_MODE_EDIT && strcmp(ed->field.text, "Wortt Die Datie ist da") == 0,
          "Esc closes: '%s'", ed->field.text);

    /* cursor at the start, before every misspelling: the first one */
    ed_key(ed, UI_CTRL('a'), T);
    ed_key(ed, UI_CTRL('d'), T); /* "ortt Die Datie ist da": "ortt" is fine for the fake */
    ed_key(ed, UI_KEY_F0 + 7, T);
    CHECK(ed->mode == ED_MODE_SPELL && ed->sug_at == 9, "first misspelling after the cursor: %zu",
          ed->sug_at);
    /* another key closes the list and acts: 'X' is typed */
    ed_key(ed, 'X', T);
    CHECK(ed->mode == ED_MODE_EDIT && strcmp(ed->field.text, "Xortt Die Datie ist da") == 0,
          "other key typed: '%s'", ed->field.text);

    /* a adds the word: no longer flagged */
    ed_key(ed, UI_KEY_F0 + 7, T);
    ed_key(ed, 'a', T);
    CHECK(f.n_added == 1 && strcmp(f.added[0], "Datie") == 0, "added '%s'", f.added[0]);
    CHECK(ed->mode == ED_MODE_EDIT && spans(ed, b, sizeof b) == 0, "not flagged after a: '%s'", b);
    CHECK(strstr(ed->msg, "personal dictionary") != NULL, "message: %s", ed->msg);
    type(ed, " Wortt");
    CHECK(spans(ed, b, sizeof b) == 1, "Wortt flagged");
    ed_key(ed, UI_KEY_F0 + 7, T);
    ed_key(ed, '+', T);
    CHECK(f.n_added == 2 && strcmp(f.added[1], "Wortt") == 0 && spans(ed, b, sizeof b) == 0,
          "+ adds too");

    /* :spell off / on / toggle / add */
    type(ed, " Datie2");
    f.bad[2] = "Datie2";
    CHECK(spans(ed, b, sizeof b) == 1, "Datie2 flagged by the fake");
    run_cmd(ed, "spell off");
    CHECK(spans(ed, b, sizeof b) == 0 && ed->spell_off, "off: nothing flagged");
    ed_key(ed, UI_KEY_F0 + 7, T);
    CHECK(ed->mode == ED_MODE_EDIT && strstr(ed->msg, "off"), "F7 when off: %s", ed->msg);
    run_cmd(ed, "spell");
    CHECK(!ed->spell_off && spans(ed, b, sizeof b) == 1, "toggled on");
    run_cmd(ed, "spell add Datie2");
    CHECK(f.n_added == 3 && strcmp(f.added[2], "Datie2") == 0 && spans(ed, b, sizeof b) == 0,
          ":spell add");

    /* a confirmed segment: F7 refused until Enter reopens it */
    ed_key(ed, UI_KEY_PGDN, T);
    ed_key(ed, UI_KEY_F0 + 7, T);
    CHECK(ed->mode == ED_MODE_EDIT && strstr(ed->msg, "confirmed"), "locked: %s", ed->msg);
    ed_free(ed);
}

static void test_unavailable(void) {
    fake f = {.bad = {"Datie"}, .unavailable = true};
    ui_hooks h = hooks_of(&f);
    ui_editor *ed = open_editor(&h);
    if (ed == NULL) return;
    char b[64];
    type(ed, "Die Datie");
    CHECK(spans(ed, b, sizeof b) == 0 && ed->spell_unavail, "unavailable: nothing flagged");
    int calls = f.n_calls;
    type(ed, " x");
    spans(ed, b, sizeof b);
    CHECK(f.n_calls == calls, "not asked again");
    CHECK(ed_deadline(ed) <= T, "the message is due now");
    ed_tick(ed, T);
    CHECK(strstr(ed->msg, "no hunspell dictionary for 'xx'") && ed->msg_level == MT_LOG_INFO,
          "said once: '%s'", ed->msg);
    ed_key(ed, UI_KEY_ESC, T);
    ed_tick(ed, T);
    CHECK(ed->msg[0] == '\0', "not said twice: '%s'", ed->msg);
    ed_key(ed, UI_KEY_F0 + 7, T);
    CHECK(ed->mode == ED_MODE_EDIT && strstr(ed->msg, "'xx'"), "F7 says why: %s", ed->msg);
    ed_free(ed);

    /* no hook at all */
    ui_hooks none;
    memset(&none, 0, sizeof none);
    ed = open_editor(&none);
    if (ed == NULL) return;
    type(ed, "Datie");
    CHECK(spans(ed, b, sizeof b) == 0, "no hook: nothing");
    ed_key(ed, UI_KEY_F0 + 7, T);
    CHECK(ed->mode == ED_MODE_EDIT && strstr(ed->msg, "not available"), "F7: %s", ed->msg);
    ed_free(ed);
}

static void test_cmd_parse(void) {
    static ui_cmd c;
    CHECK(ui_cmd_parse("spell", &c) == MT_OK && c.kind == UI_CMD_SPELL && c.arg[0] == '\0',
          ":spell");
    CHECK(ui_cmd_parse("spell on ", &c) == MT_OK && strcmp(c.arg, "on") == 0, ":spell on");
    CHECK(ui_cmd_parse("spe off", &c) == MT_OK && strcmp(c.arg, "off") == 0, ":spe off");
    CHECK(ui_cmd_parse("spell add  Größe ", &c) == MT_OK && strcmp(c.arg, "add Größe") == 0,
          ":spell add: '%s'", c.arg);
    CHECK(ui_cmd_parse("spell add", &c) == MT_ERR_INVALID, ":spell add without a word");
    CHECK(ui_cmd_parse("spell add ", &c) == MT_ERR_INVALID, ":spell add with blanks only");
    CHECK(ui_cmd_parse("spell add a b", &c) == MT_ERR_INVALID, ":spell add two words");
    CHECK(ui_cmd_parse("spell maybe", &c) == MT_ERR_INVALID, ":spell maybe");
    CHECK(ui_cmd_parse("spell addx", &c) == MT_ERR_INVALID, ":spell addx");
}

static void test_help(void) {
    char buf[256];
    bool f7 = false, digits = false, add = false, cmd = false, section = false;
    for (int i = 0; ui_help_line(i, buf, sizeof buf); i++) {
        f7 |= strstr(buf, "F7 M-s") != NULL;
        digits |= strstr(buf, "1..9") && strstr(buf, "suggestion");
        add |= strstr(buf, "a +") && strstr(buf, "personal dictionary");
        cmd |= strstr(buf, ":spell [on|off|add WORD]") != NULL;
        section |= strncmp(buf, "Spelling suggestions", 20) == 0;
    }
    CHECK(f7 && digits && add && cmd && section,
          "help: F7 %d digits %d add %d :spell %d section %d", f7, digits, add, cmd, section);
    int arg;
    CHECK(ui_keymap_lookup(UI_KEYMODE_EDIT, UI_KEY_F0 + 7, &arg) == UI_ACT_SPELL, "F7 bound");
    CHECK(ui_keymap_lookup(UI_KEYMODE_SPELL, '3', &arg) == UI_ACT_SPELL_PICK && arg == 3, "3");
    CHECK(ui_keymap_lookup(UI_KEYMODE_SPELL, 'x', &arg) == UI_ACT_NONE, "x is not bound");
}

/* Underlined cells: the misspelled word only; red with colours. */
static void test_screen(void) {
    FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
    const char *terms[] = {"xterm-256color", "vt100"};
    for (int t = 0; t < 2; t++) {
        ui_screen *s = NULL;
        ui_keydec dec;
        ui_keydec_init(&dec);
        bool ok = out && in && ui_screen_init(terms[t], out, in, &dec, &s) == MT_OK;
        if (!CHECK(ok, "terminal %s (%s)", terms[t], mt_errmsg())) continue;
        fake f = {.bad = {"Datie"}};
        ui_hooks h = hooks_of(&f);
        ui_editor *ed = open_editor(&h);
        if (ed == NULL) {
            ui_screen_free(s);
            continue;
        }
        type(ed, "Die Datie da");
        ui_screen_resize(s, 24, 80);
        ui_screen_draw(s, ed);
        int rows, cols, y = -1;
        char buf[4096];
        ui_screen_size(s, &rows, &cols);
        for (int r = 1; r < rows - 2 && y < 0; r++) {
            ui_screen_row(s, r, buf, sizeof buf);
            if (strstr(buf, "Die Datie da")) y = r;
        }
        CHECK(y > 0, "%s: field drawn", terms[t]);
        if (y > 0) {
            int x0 = (int)(strstr(buf, "Die Datie") - buf);
            for (int x = x0; x < x0 + 12; x++) {
                bool want = x >= x0 + 4 && x < x0 + 9;
                CHECK(ui_screen_cell_underline(s, y, x) == want, "%s: cell %d underline %d",
                      terms[t], x - x0, !want);
                if (want && ui_screen_colors(s))
                    CHECK(ui_screen_cell_role(s, y, x) == UI_ROLE_CONF_LOW, "%s: red cell %d",
                          terms[t], x - x0);
            }
        }
        ed_key(ed, UI_KEY_F0 + 7, T);
        ui_screen_draw(s, ed);
        ui_screen_row(s, rows - 1, buf, sizeof buf);
        CHECK(strstr(buf, "'Datie'") && strstr(buf, "1 Datei") && strstr(buf, "2 Daten") &&
                  strstr(buf, "a add"),
              "%s: bottom line '%s'", terms[t], buf);
        int cy, cx;
        ui_screen_cursor(s, &cy, &cx);
        CHECK(cy == y, "%s: the cursor stays in the field (%d)", terms[t], cy);
        ed_key(ed, '1', T);
        ui_screen_draw(s, ed);
        if (y > 0) {
            ui_screen_row(s, y, buf, sizeof buf);
            int x0 = (int)(strstr(buf, "Die Datei") ? strstr(buf, "Die Datei") - buf : 0);
            CHECK(strstr(buf, "Die Datei da") && !ui_screen_cell_underline(s, y, x0 + 5),
                  "%s: corrected, not underlined: '%s'", terms[t], buf);
        }
        ed_free(ed);
        ui_screen_free(s);
    }
    if (out) fclose(out);
    if (in) fclose(in);
}

int main(void) {
    if (setlocale(LC_CTYPE, "C.UTF-8") == NULL) setlocale(LC_CTYPE, "");
    test_editor();
    test_unavailable();
    test_cmd_parse();
    test_help();
    test_screen();
    TEST_MAIN_END();
}
