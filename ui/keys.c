/*
** keys.c: from terminal input to editor actions.
**
**   decoder   curses delivers characters (wget_wch OK) and KEY_* codes
**             (KEY_CODE_YES).  Esc followed by a key within UI_ESC_MS is
**             that key with UI_KEY_META (terminals send Alt-x as ESC x, so
**             Alt-1 arrives as ESC '1'); a lone Esc is flushed after the
**             timeout.  DEL (127) and KEY_BACKSPACE are Backspace; CR, LF
**             and KEY_ENTER are Enter.
**   bindings  one table serves dispatch (ui_keymap_lookup) and the help
**             screen (ui_help_line), so the help cannot list a key that
**             does nothing.
**   names     "C-a", "M-b", "PgDn" ... <-> key codes.
*/
#include <ncurses.h>
#include <stdio.h>
#include <string.h>

#include "editor.h"

/* ================================================================ decoder */

void ui_keydec_init(ui_keydec *d) { memset(d, 0, sizeof *d); }

static int32_t from_curses(const ui_keydec *d, int32_t code) {
    switch (code) {
    case KEY_UP: return UI_KEY_UP;
    case KEY_DOWN: return UI_KEY_DOWN;
    case KEY_LEFT: return UI_KEY_LEFT;
    case KEY_RIGHT: return UI_KEY_RIGHT;
    case KEY_HOME: return UI_KEY_HOME;
    case KEY_END: return UI_KEY_END;
    case KEY_PPAGE: return UI_KEY_PGUP;
    case KEY_NPAGE: return UI_KEY_PGDN;
    case KEY_DC: return UI_KEY_DELETE;
    case KEY_IC: return UI_KEY_INSERT;
    case KEY_BACKSPACE: return UI_KEY_BACKSPACE;
    case KEY_ENTER: return UI_KEY_ENTER;
    case KEY_BTAB: return UI_KEY_BTAB;
    case KEY_RESIZE: return UI_KEY_RESIZE;
    case KEY_A1: return UI_KEY_HOME; /* keypad corners */
    case KEY_C1: return UI_KEY_END;
    case KEY_A3: return UI_KEY_PGUP;
    case KEY_C3: return UI_KEY_PGDN;
    default: break;
    }
    if (code >= KEY_F(1) && code <= KEY_F(12)) return UI_KEY_F0 + (code - KEY_F0);
    if (d->kc_cleft && code == d->kc_cleft) return UI_KEY_CLEFT;
    if (d->kc_cright && code == d->kc_cright) return UI_KEY_CRIGHT;
    if (d->kc_mleft && code == d->kc_mleft) return UI_KEY_LEFT | UI_KEY_META;
    if (d->kc_mright && code == d->kc_mright) return UI_KEY_RIGHT | UI_KEY_META;
    return UI_KEY_NONE;
}

static int32_t from_char(int32_t c) {
    if (c == 127) return UI_KEY_BACKSPACE;
    if (c == '\r' || c == '\n') return UI_KEY_ENTER;
    return c;
}

int ui_keydec_feed(ui_keydec *d, bool is_keycode, int32_t value, int64_t now_ms, int32_t out[2]) {
    int32_t k = is_keycode ? from_curses(d, value) : from_char(value);
    int n = 0;
    if (k == UI_KEY_NONE || k < 0) return 0;
    if (d->esc_pending) {
        d->esc_pending = false;
        if (now_ms - d->esc_ms > UI_ESC_MS || k == UI_KEY_ESC || k == UI_KEY_RESIZE) {
            out[n++] = UI_KEY_ESC; /* the Esc stands alone; k is handled below */
        } else {
            out[n++] = k | UI_KEY_META;
            return n;
        }
    }
    if (k == UI_KEY_ESC) {
        d->esc_pending = true;
        d->esc_ms = now_ms;
        return n;
    }
    out[n++] = k;
    return n;
}

int ui_keydec_feed_bytes(ui_keydec *d, const char *bytes, size_t n, int64_t now_ms, int32_t *out,
                         int max) {
    int count = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += mt_utf8_decode(bytes + i, n - i, &cp);
        int32_t k[2];
        int m = ui_keydec_feed(d, false, (int32_t)cp, now_ms, k);
        for (int j = 0; j < m && count < max; j++)
            out[count++] = k[j];
    }
    return count;
}

int ui_keydec_flush(ui_keydec *d, int64_t now_ms, int32_t *out) {
    if (!d->esc_pending || now_ms - d->esc_ms < UI_ESC_MS) return 0;
    d->esc_pending = false;
    *out = UI_KEY_ESC;
    return 1;
}

int64_t ui_keydec_deadline(const ui_keydec *d) {
    return d->esc_pending ? d->esc_ms + UI_ESC_MS : INT64_MAX;
}

/* =============================================================== bindings */

#define E UI_KEYMODE_EDIT
#define C UI_KEYMODE_CMDLINE
#define H UI_KEYMODE_HELP
#define S UI_KEYMODE_SPELL
#define EC (UI_KEYMODE_EDIT | UI_KEYMODE_CMDLINE)
#define M(k) ((k) | UI_KEY_META)
#define F(n) (UI_KEY_F0 + (n))

/* A help line is a binding with help text followed by those with NULL help.
** Within a line all bindings share modes and action. */
static const ui_binding bindings[] = {
    /* line editing: the edit field and the command line */
    {EC, UI_CTRL('a'), UI_ACT_BOL, 0, "C-a", "go to the start of the line"},
    {EC, UI_KEY_HOME, UI_ACT_BOL, 0, "Home", NULL},
    {EC, UI_CTRL('e'), UI_ACT_EOL, 0, "C-e",
     "go to the end; already there: accept the whole completion"},
    {EC, UI_KEY_END, UI_ACT_EOL, 0, "End", NULL},
    {EC, UI_CTRL('b'), UI_ACT_LEFT, 0, "C-b", "back one character"},
    {EC, UI_KEY_LEFT, UI_ACT_LEFT, 0, "Left", NULL},
    {EC, UI_CTRL('f'), UI_ACT_RIGHT, 0, "C-f",
     "forward one character; at the end: accept one character"},
    {EC, UI_KEY_RIGHT, UI_ACT_RIGHT, 0, "Right", NULL},
    {EC, M('b'), UI_ACT_WORD_LEFT, 0, "M-b", "back one word"},
    {EC, UI_KEY_CLEFT, UI_ACT_WORD_LEFT, 0, "C-Left", NULL},
    {EC, M('f'), UI_ACT_WORD_RIGHT, 0, "M-f", "forward one word; at the end: accept one word"},
    {EC, UI_KEY_CRIGHT, UI_ACT_WORD_RIGHT, 0, "C-Right", NULL},
    {EC, UI_CTRL('d'), UI_ACT_DELETE, 0, "C-d", "delete the character under the cursor"},
    {EC, UI_KEY_DELETE, UI_ACT_DELETE, 0, "Delete", NULL},
    {EC, UI_KEY_BACKSPACE, UI_ACT_BACKSPACE, 0, "Backspace", "delete the character before"},
    {EC, UI_CTRL('h'), UI_ACT_BACKSPACE, 0, "C-h", NULL},
    {EC, UI_CTRL('k'), UI_ACT_KILL_EOL, 0, "C-k", "kill to the end of the line"},
    {EC, UI_CTRL('u'), UI_ACT_KILL_BOL, 0, "C-u", "kill to the start of the line"},
    {EC, UI_CTRL('w'), UI_ACT_KILL_WORD_BACK, 0, "C-w", "kill the word before the cursor"},
    {EC, M(UI_KEY_BACKSPACE), UI_ACT_KILL_WORD_BACK, 0, "M-Backspace", NULL},
    {EC, M('d'), UI_ACT_KILL_WORD_FWD, 0, "M-d", "kill the word after the cursor"},
    {EC, UI_CTRL('y'), UI_ACT_YANK, 0, "C-y", "yank (insert) the last killed text"},
    {EC, UI_CTRL('t'), UI_ACT_TRANSPOSE, 0, "C-t", "transpose the characters at the cursor"},
    {EC, UI_CTRL('z'), UI_ACT_UNDO, 0, "C-z", "undo (repeat for more)"},
    {EC, UI_CTRL('_'), UI_ACT_UNDO, 0, "C-_", NULL},
    {EC, UI_CTRL('v'), UI_ACT_QUOTED_INSERT, 0, "C-v",
     "insert the next key as it is (C-v C-j: line break)"},

    /* the edit field */
    {E, UI_KEY_TAB, UI_ACT_ACCEPT_WORD, 0, "Tab", "accept the next word of the completion"},
    {E, UI_KEY_ENTER, UI_ACT_CONFIRM, 0, "Enter",
     "confirm what the field shows (completion included), go to the next open segment; "
     "on a confirmed segment: reopen it for editing"},
    {E, M('1'), UI_ACT_NBEST, 1, "M-1",
     "replace the translation with alternative 1..9 (TM, APE, n-best)"},
    {E, M('2'), UI_ACT_NBEST, 2, "M-2", NULL},
    {E, M('3'), UI_ACT_NBEST, 3, "M-3", NULL},
    {E, M('4'), UI_ACT_NBEST, 4, "M-4", NULL},
    {E, M('5'), UI_ACT_NBEST, 5, "M-5", NULL},
    {E, M('6'), UI_ACT_NBEST, 6, "M-6", NULL},
    {E, M('7'), UI_ACT_NBEST, 7, "M-7", NULL},
    {E, M('8'), UI_ACT_NBEST, 8, "M-8", NULL},
    {E, M('9'), UI_ACT_NBEST, 9, "M-9", NULL},
    {E, UI_KEY_PGDN, UI_ACT_NEXT_SEG, 0, "PgDn", "next segment"},
    {E, UI_CTRL('n'), UI_ACT_NEXT_SEG, 0, "C-n", NULL},
    {E, UI_KEY_DOWN, UI_ACT_NEXT_SEG, 0, "Down", NULL},
    {E, UI_KEY_PGUP, UI_ACT_PREV_SEG, 0, "PgUp", "previous segment"},
    {E, UI_CTRL('p'), UI_ACT_PREV_SEG, 0, "C-p", NULL},
    {E, UI_KEY_UP, UI_ACT_PREV_SEG, 0, "Up", NULL},
    {E, M('n'), UI_ACT_NEXT_OPEN, 0, "M-n", "next segment that is not confirmed"},
    {E, M('<'), UI_ACT_FIRST_SEG, 0, "M-<", "first segment"},
    {E, M('>'), UI_ACT_LAST_SEG, 0, "M->", "last segment"},
    {E, ':', UI_ACT_COLON, 0, ":",
     "command line, at the start of the field or on a confirmed segment (elsewhere: types :)"},
    {E, M(':'), UI_ACT_CMDLINE, 0, "M-:", "command line"},
    {E, F(2), UI_ACT_CMDLINE, 0, "F2", NULL},
    {E | C, F(1), UI_ACT_HELP, 0, "F1", "this help"},
    {E, F(3), UI_ACT_TOGGLE_PANE, 0, "F3", "show alternatives / attention heat map"},
    {E, F(7), UI_ACT_SPELL, 0, "F7",
     "spelling suggestions for the misspelled (underlined) word at or before the cursor"},
    {E, M('s'), UI_ACT_SPELL, 0, "M-s", NULL},
    {E, M('g'), UI_ACT_GEC_ACCEPT, 0, "M-g",
     "grammar (mtpe edit --gec): apply the underlined correction at or after the cursor"},
    {E, M('G'), UI_ACT_GEC_DISMISS, 0, "M-G", "grammar: dismiss that correction"},
    {E, F(4), UI_ACT_FULL_LIST, 0, "F4",
     "all alternatives and TM matches in full, on a scrollable screen"},
    {E, M(UI_KEY_LEFT), UI_ACT_HEAT_LEFT, 0, "M-Left", "scroll the attention heat map left"},
    {E, M(UI_KEY_RIGHT), UI_ACT_HEAT_RIGHT, 0, "M-Right", "scroll the attention heat map right"},
    {E, UI_CTRL('l'), UI_ACT_REDRAW, 0, "C-l", "redraw the screen"},
    {E, UI_KEY_ESC, UI_ACT_CANCEL, 0, "Esc", "dismiss the message"},
    {E, UI_CTRL('g'), UI_ACT_CANCEL, 0, "C-g", NULL},
    {E, UI_CTRL('c'), UI_ACT_QUIT_HINT, 0, "C-c", "say how to quit (:q)"},

    /* the command line */
    {C, UI_KEY_ENTER, UI_ACT_EXECUTE, 0, "Enter", "run the command"},
    {C, UI_KEY_TAB, UI_ACT_COMPLETE, 0, "Tab", "complete the command name or file path"},
    {C, UI_KEY_UP, UI_ACT_HIST_PREV, 0, "Up", "previous command in the history"},
    {C, UI_CTRL('p'), UI_ACT_HIST_PREV, 0, "C-p", NULL},
    {C, UI_KEY_DOWN, UI_ACT_HIST_NEXT, 0, "Down", "next command in the history"},
    {C, UI_CTRL('n'), UI_ACT_HIST_NEXT, 0, "C-n", NULL},
    {C, UI_KEY_ESC, UI_ACT_CANCEL, 0, "Esc", "close the command line"},
    {C, UI_CTRL('g'), UI_ACT_CANCEL, 0, "C-g", NULL},
    {C, UI_CTRL('c'), UI_ACT_CANCEL, 0, "C-c", NULL},

    /* the spelling suggestions (F7; any other key closes them and acts) */
    {S, '1', UI_ACT_SPELL_PICK, 1, "1", "replace the word with suggestion 1..9"},
    {S, '2', UI_ACT_SPELL_PICK, 2, "2", NULL},
    {S, '3', UI_ACT_SPELL_PICK, 3, "3", NULL},
    {S, '4', UI_ACT_SPELL_PICK, 4, "4", NULL},
    {S, '5', UI_ACT_SPELL_PICK, 5, "5", NULL},
    {S, '6', UI_ACT_SPELL_PICK, 6, "6", NULL},
    {S, '7', UI_ACT_SPELL_PICK, 7, "7", NULL},
    {S, '8', UI_ACT_SPELL_PICK, 8, "8", NULL},
    {S, '9', UI_ACT_SPELL_PICK, 9, "9", NULL},
    {S, 'a', UI_ACT_SPELL_ADD, 0, "a", "add the word to the personal dictionary"},
    {S, '+', UI_ACT_SPELL_ADD, 0, "+", NULL},
    {S, UI_KEY_ESC, UI_ACT_CANCEL, 0, "Esc", "close the suggestions"},
    {S, UI_CTRL('g'), UI_ACT_CANCEL, 0, "C-g", NULL},

    /* the help screen and the F4 list (any other key closes them) */
    {H, UI_KEY_UP, UI_ACT_SCROLL_UP, 1, "Up", "scroll up"},
    {H, UI_CTRL('p'), UI_ACT_SCROLL_UP, 1, "C-p", NULL},
    {H, UI_KEY_PGUP, UI_ACT_SCROLL_UP, 10, "PgUp", "scroll up a page"},
    {H, UI_KEY_DOWN, UI_ACT_SCROLL_DOWN, 1, "Down", "scroll down"},
    {H, UI_CTRL('n'), UI_ACT_SCROLL_DOWN, 1, "C-n", NULL},
    {H, UI_KEY_PGDN, UI_ACT_SCROLL_DOWN, 10, "PgDn", "scroll down a page"},
    {H, ' ', UI_ACT_SCROLL_DOWN, 10, "Space", NULL},
};
static const int n_bindings = (int)(sizeof bindings / sizeof bindings[0]);

const ui_binding *ui_bindings(int *n) {
    *n = n_bindings;
    return bindings;
}

ui_action ui_keymap_lookup(ui_keymode mode, int32_t key, int *arg) {
    *arg = 0;
    for (int i = 0; i < n_bindings; i++) {
        if ((bindings[i].modes & (int)mode) && bindings[i].key == key) {
            *arg = bindings[i].arg;
            return bindings[i].action;
        }
    }
    if ((mode == UI_KEYMODE_EDIT || mode == UI_KEYMODE_CMDLINE) && key >= 0x20 && key != 0x7F &&
        key < UI_KEY_SPECIAL)
        return UI_ACT_SELF_INSERT;
    return UI_ACT_NONE;
}

/* ================================================================== names */

static const struct {
    const char *name;
    int32_t key;
} key_names[] = {
    {"Tab", UI_KEY_TAB},       {"Enter", UI_KEY_ENTER},
    {"Esc", UI_KEY_ESC},       {"Backspace", UI_KEY_BACKSPACE},
    {"Delete", UI_KEY_DELETE}, {"Insert", UI_KEY_INSERT},
    {"Home", UI_KEY_HOME},     {"End", UI_KEY_END},
    {"Left", UI_KEY_LEFT},     {"Right", UI_KEY_RIGHT},
    {"Up", UI_KEY_UP},         {"Down", UI_KEY_DOWN},
    {"PgUp", UI_KEY_PGUP},     {"PgDn", UI_KEY_PGDN},
    {"C-Left", UI_KEY_CLEFT},  {"C-Right", UI_KEY_CRIGHT},
    {"S-Tab", UI_KEY_BTAB},    {"Space", ' '},
    {"C-_", UI_CTRL('_')},
};
static const int n_key_names = (int)(sizeof key_names / sizeof key_names[0]);

int32_t ui_key_parse(const char *name) {
    if (name == NULL || name[0] == '\0') return UI_KEY_NONE;
    if (name[0] == 'M' && name[1] == '-' && name[2]) {
        int32_t k = ui_key_parse(name + 2);
        return k == UI_KEY_NONE || (k & UI_KEY_META) ? UI_KEY_NONE : k | UI_KEY_META;
    }
    for (int i = 0; i < n_key_names; i++)
        if (strcmp(name, key_names[i].name) == 0) return key_names[i].key;
    if (name[0] == 'F' && name[1] >= '1' && name[1] <= '9') {
        int n = name[1] - '0';
        if (name[2] >= '0' && name[2] <= '9' && name[3] == '\0')
            n = n * 10 + (name[2] - '0');
        else if (name[2] != '\0')
            return UI_KEY_NONE;
        return n >= 1 && n <= 12 ? UI_KEY_F0 + n : UI_KEY_NONE;
    }
    if (name[0] == 'C' && name[1] == '-' && name[2] && name[3] == '\0') {
        char c = name[2];
        if (c >= 'a' && c <= 'z') return UI_CTRL(c);
        if (c == '@' || c == '[' || c == '\\' || c == ']' || c == '^') return UI_CTRL(c);
        return UI_KEY_NONE;
    }
    uint32_t cp;
    size_t n = strlen(name), k = mt_utf8_decode(name, n, &cp);
    if (k == n && cp >= 0x20 && cp != 0x7F && cp != 0xFFFD) return (int32_t)cp;
    return UI_KEY_NONE;
}

const char *ui_key_name(int32_t key, char *buf, size_t size) {
    const char *meta = (key != UI_KEY_NONE && (key & UI_KEY_META)) ? "M-" : "";
    int32_t k = key == UI_KEY_NONE ? key : key & ~UI_KEY_META;
    if (size == 0) return buf;
    for (int i = 0; i < n_key_names; i++) {
        if (key_names[i].key == k) {
            snprintf(buf, size, "%s%s", meta, key_names[i].name);
            return buf;
        }
    }
    if (k > UI_KEY_F0 && k <= UI_KEY_F0 + 12) {
        snprintf(buf, size, "%sF%d", meta, k - UI_KEY_F0);
    } else if (k >= 0 && k < 0x20) {
        snprintf(buf, size, "%sC-%c", meta, (char)(k | 0x60));
    } else if (k >= 0x20 && k < UI_KEY_SPECIAL && k != 0x7F) {
        char u[5] = {0};
        mt_utf8_encode((uint32_t)k, u);
        snprintf(buf, size, "%s%s", meta, u);
    } else {
        snprintf(buf, size, "%s<%d>", meta, (int)k);
    }
    return buf;
}

/* ============================================================= help text */

/* The help screen, built from the tables:
**   sections of key lines, one per group of bindings, then the commands. */
typedef struct help_line {
    int kind; /* 0 text, 1 key group (binding index), 2 command */
    int index;
    const char *text;
} help_line;

static const struct {
    int mode;
    const char *title;
} sections[] = {
    {EC, "Editing (the translation field and the command line)"},
    {E, "The translation field"},
    {C, "The command line"},
    {S, "Spelling suggestions (F7 or M-s; any other key closes them and acts)"},
    {H, "This help screen and the F4 list (any other key closes them)"},
};

/* A group is listed in the section whose modes equal its own. */
static bool group_in_section(const ui_binding *b, int mode) { return b->modes == mode; }

static int build_help(help_line *out, int max) {
    int n = 0;
#define ADD(k, i, t)                                                                               \
    do {                                                                                           \
        if (out && n < max) out[n] = (help_line){k, i, t};                                         \
        n++;                                                                                       \
    } while (0)
    ADD(0, 0, "mtpe edit: keys and commands");
    for (size_t s = 0; s < sizeof sections / sizeof sections[0]; s++) {
        ADD(0, 0, "");
        ADD(0, 0, sections[s].title);
        for (int i = 0; i < n_bindings; i++)
            if (bindings[i].help && group_in_section(&bindings[i], sections[s].mode))
                ADD(1, i, NULL);
    }
    ADD(0, 0, "");
    ADD(0, 0, "Commands (type : at the start of the field, then the command and Enter)");
    int nc;
    ui_commands(&nc);
    for (int i = 0; i < nc; i++)
        ADD(2, i, NULL);
    ADD(0, 0, "");
    ADD(0, 0, ":replace asks at each occurrence (shown reversed in its segment)");
    ADD(0, 0, " y                 replace it");
    ADD(0, 0, " n                 leave it, go to the next one");
    ADD(0, 0, " a                 replace it and all the remaining ones");
    ADD(0, 0, " q Esc C-g         stop (what was replaced stays; :undo reverts it)");
#undef ADD
    return n;
}

int ui_help_count(void) { return build_help(NULL, 0); }

const char *ui_help_line(int i, char *buf, size_t size) {
    help_line lines[160];
    int n = build_help(lines, 160);
    MT_ASSERT(n <= 160);
    if (i < 0 || i >= n || size == 0) return NULL;
    const help_line *h = &lines[i];
    if (h->kind == 0) {
        snprintf(buf, size, "%s", h->text);
        return buf;
    }
    if (h->kind == 2) {
        int nc;
        const ui_command_def *c = ui_commands(&nc);
        snprintf(buf, size, "  :%-20s  %s", c[h->index].usage, c[h->index].help);
        return buf;
    }
    /* a key group: the first binding and the following ones without help */
    int first = h->index, last = first;
    while (last + 1 < n_bindings && bindings[last + 1].help == NULL)
        last++;
    char keys[128] = "";
    size_t kl = 0;
    bool range = last - first >= 3;
    for (int j = first; j <= last; j++) {
        if (range && j != first && j != last) continue;
        char name[32];
        ui_key_name(bindings[j].key, name, sizeof name);
        MT_ASSERT(strcmp(name, bindings[j].name) == 0); /* table and names agree */
        const char *sep = j == first ? "" : range ? ".." : " ";
        kl += (size_t)snprintf(keys + kl, sizeof keys - kl, "%s%s", sep, bindings[j].name);
        if (kl >= sizeof keys) kl = sizeof keys - 1;
    }
    snprintf(buf, size, "  %-16s  %s", keys, bindings[first].help);
    return buf;
}
