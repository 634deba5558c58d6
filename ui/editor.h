/*
** editor.h: ui-private interfaces shared by the ui/ sources and tests/test_editor.c.
**
**   ed_line      a UTF-8 line editor: cursor, Emacs editing, kill buffer,
**                multi-level undo (editor.c)
**   ui_editor    the post-editor state machine: segments, the edit field,
**                completion, n-best, command line, hook calls.  No curses,
**                no clock: every entry point takes the time in ms (editor.c)
**   keys         key codes, the decoder of curses input into keys (ESC+key
**                is Alt-key), and the one binding table that serves both
**                dispatch and the help screen (keys.c)
**   commands     ':' command parsing, history and Tab completion (cmdline.c)
**   post queue   events from ui_post_*() (loop.c)
**   screen       ncurses drawing (screen.c)
*/
#ifndef MT_UI_EDITOR_H
#define MT_UI_EDITOR_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <regex.h>

#include "mt_base.h"
#include "ui.h"

/* ================================================================= UTF-8 */

/* Decoding and encoding: mt_utf8_decode, mt_utf8_encode (mt_base.h). */
/* Offset of the character boundary after / before byte offset i. */
size_t ui_utf8_next(const char *s, size_t n, size_t i);
size_t ui_utf8_prev(const char *s, size_t i);
/* Display columns of a code point: wcwidth() where the locale knows it,
** else a built-in East Asian width table (2 for CJK, 0 for combining marks);
** control characters are drawn as one-column symbols (↵, →, ·). */
int ui_cp_width(uint32_t cp);
/* Display columns of s[0..n). */
int ui_str_width(const char *s, size_t n);
/* Word characters for M-b/M-f/M-d: letters, digits, '_', and non-ASCII
** characters except common punctuation (« » „ “ ” ‘ ’ – — … and spaces). */
bool ui_is_word_cp(uint32_t cp);

/* ============================================================ line editor */

typedef struct ed_undo {
    char *text;
    size_t len, cur;
} ed_undo;

#define ED_UNDO_MAX 200

typedef struct ed_line {
    char *text; /* NUL-terminated, len bytes                    */
    size_t len, cap;
    size_t cur; /* byte offset, on a character boundary          */
    ed_undo undo[ED_UNDO_MAX];
    int n_undo;
    bool coalesce; /* last edit was a typed character: extend it   */
    char *kill;    /* kill buffer (C-y), kill_len bytes             */
    size_t kill_len;
    int last_kill; /* +1 killed forward, -1 backward, 0 not a kill */
} ed_line;

/* Result of an editing call that changes nothing (cursor at a limit, empty
** kill buffer): ED_NOOP, not an error. */
#define ED_NOOP ((mt_status)2)

mt_status ed_line_init(ed_line *l); /* empty line; MT_ERR_NOMEM */
void ed_line_free(ed_line *l);
/* Replaces the text (cursor at the end); records an undo step when undoable. */
mt_status ed_line_set(ed_line *l, const char *s, size_t n, bool undoable);
void ed_line_clear_undo(ed_line *l);
mt_status ed_line_insert(ed_line *l, const char *s, size_t n); /* typed text */
mt_status ed_line_insert_cp(ed_line *l, uint32_t cp);
mt_status ed_line_backspace(ed_line *l);
mt_status ed_line_delete(ed_line *l);
mt_status ed_line_kill_eol(ed_line *l);
mt_status ed_line_kill_bol(ed_line *l);
mt_status ed_line_kill_word_back(ed_line *l); /* C-w: back to whitespace */
mt_status ed_line_kill_word_fwd(ed_line *l);  /* M-d: to the end of the word */
mt_status ed_line_yank(ed_line *l);
mt_status ed_line_transpose(ed_line *l);
mt_status ed_line_undo(ed_line *l);
/* Cursor moves (not undoable); return ED_NOOP at a limit. */
mt_status ed_line_left(ed_line *l);
mt_status ed_line_right(ed_line *l);
mt_status ed_line_word_left(ed_line *l);
mt_status ed_line_word_right(ed_line *l);
mt_status ed_line_home(ed_line *l);
mt_status ed_line_end(ed_line *l);
/* Byte offset M-f would move to from i. */
size_t ed_word_end(const char *s, size_t n, size_t i);

/* =================================================================== keys */

/* A key: a Unicode code point (control characters are the C- keys: C-a is
** 1), or a special key below, optionally with UI_KEY_META (Alt, or Esc then
** the key). */
enum {
    UI_KEY_NONE = -1,
    UI_KEY_SPECIAL = 0x110000,
    UI_KEY_UP = UI_KEY_SPECIAL,
    UI_KEY_DOWN,
    UI_KEY_LEFT,
    UI_KEY_RIGHT,
    UI_KEY_HOME,
    UI_KEY_END,
    UI_KEY_PGUP,
    UI_KEY_PGDN,
    UI_KEY_DELETE,
    UI_KEY_INSERT,
    UI_KEY_BACKSPACE,                  /* Backspace / DEL (127); C-h stays 8 */
    UI_KEY_ENTER,                      /* Return (C-m), C-j, keypad Enter */
    UI_KEY_BTAB,                       /* Shift-Tab */
    UI_KEY_CLEFT,                      /* Ctrl-Left */
    UI_KEY_CRIGHT,                     /* Ctrl-Right */
    UI_KEY_RESIZE,                     /* the terminal changed size */
    UI_KEY_F0 = UI_KEY_SPECIAL + 0x40, /* F1 is UI_KEY_F0 + 1 ... F12 */
    UI_KEY_ESC = 27,
    UI_KEY_TAB = 9,
    UI_KEY_META = 0x1000000,
};
#define UI_CTRL(c) ((c)&0x1f)

/* Key decoder: curses input (characters and KEY_* codes) to keys.  Esc
** followed by a key within UI_ESC_MS is that key with UI_KEY_META; a lone
** Esc is delivered when the timeout passes (ui_keydec_flush).  The timeout
** is long enough for a person to type Esc then 1 on terminals whose Alt
** key does not send Esc (xterm without metaSendsEscape). */
#define UI_ESC_MS 200
typedef struct ui_keydec {
    bool esc_pending;
    int64_t esc_ms;
    int kc_cleft, kc_cright; /* curses codes of Ctrl-Left/Right (terminal-
                                dependent, set by screen.c), 0 if unknown */
    int kc_mleft, kc_mright; /* the same for Alt-Left/Right (M-Left, M-Right) */
} ui_keydec;

void ui_keydec_init(ui_keydec *d);
/* Feeds one unit: a curses KEY_* code (is_keycode) or a character.  Writes
** 0, 1 or 2 keys to out and returns how many. */
int ui_keydec_feed(ui_keydec *d, bool is_keycode, int32_t value, int64_t now_ms, int32_t out[2]);
/* Feeds raw terminal bytes (UTF-8 + escape sequences are NOT parsed: Esc is
** the Esc key), as the tests type.  Writes at most max keys; returns count. */
int ui_keydec_feed_bytes(ui_keydec *d, const char *bytes, size_t n, int64_t now_ms, int32_t *out,
                         int max);
/* A pending lone Esc whose time has come: writes it and returns 1. */
int ui_keydec_flush(ui_keydec *d, int64_t now_ms, int32_t *out);
/* When ui_keydec_flush should be called (INT64_MAX: nothing pending). */
int64_t ui_keydec_deadline(const ui_keydec *d);

/* Editor actions. */
typedef enum ui_action {
    UI_ACT_NONE = 0,
    UI_ACT_SELF_INSERT, /* the key is a character to insert */
    UI_ACT_BOL,
    UI_ACT_EOL, /* at the end of the field: accept all of the completion */
    UI_ACT_LEFT,
    UI_ACT_RIGHT, /* at the end: accept one character of the completion */
    UI_ACT_WORD_LEFT,
    UI_ACT_WORD_RIGHT, /* at the end: accept one word of the completion */
    UI_ACT_DELETE,
    UI_ACT_BACKSPACE,
    UI_ACT_KILL_EOL,
    UI_ACT_KILL_BOL,
    UI_ACT_KILL_WORD_BACK,
    UI_ACT_KILL_WORD_FWD,
    UI_ACT_YANK,
    UI_ACT_TRANSPOSE,
    UI_ACT_UNDO,
    UI_ACT_QUOTED_INSERT,
    UI_ACT_ACCEPT_WORD, /* Tab */
    UI_ACT_CONFIRM,     /* Enter */
    UI_ACT_NBEST,       /* arg: 1..9 */
    UI_ACT_NEXT_SEG,
    UI_ACT_PREV_SEG,
    UI_ACT_FIRST_SEG,
    UI_ACT_LAST_SEG,
    UI_ACT_NEXT_OPEN, /* next segment that is not confirmed */
    UI_ACT_COLON,     /* ':' : command line at the start of the field, else insert */
    UI_ACT_CMDLINE,   /* open the command line */
    UI_ACT_HELP,
    UI_ACT_TOGGLE_PANE,
    UI_ACT_REDRAW,
    UI_ACT_CANCEL,    /* Esc, C-g: dismiss message / close command line */
    UI_ACT_QUIT_HINT, /* C-c: say how to quit */
    UI_ACT_HIST_PREV, /* command line */
    UI_ACT_HIST_NEXT,
    UI_ACT_COMPLETE,
    UI_ACT_EXECUTE,
    UI_ACT_SCROLL_UP, /* help screen */
    UI_ACT_SCROLL_DOWN,
    UI_ACT_SPELL,      /* F7 M-s: suggestions for the misspelled word */
    UI_ACT_SPELL_PICK, /* the suggestion list: arg 1..9 */
    UI_ACT_SPELL_ADD,  /* the suggestion list: add the word to the dictionary */
    UI_ACT_FULL_LIST,  /* F4: every alternative in a scrollable full-screen view */
    UI_ACT_HEAT_LEFT,  /* M-Left / M-Right: scroll the heat map's columns */
    UI_ACT_HEAT_RIGHT,
    UI_ACT_GEC_ACCEPT,  /* M-g: apply the grammar correction at/after the cursor */
    UI_ACT_GEC_DISMISS, /* M-G: dismiss it */
    UI_ACT_COUNT
} ui_action;

typedef enum ui_keymode {
    UI_KEYMODE_EDIT = 1,
    UI_KEYMODE_CMDLINE = 2,
    UI_KEYMODE_HELP = 4,
    UI_KEYMODE_SPELL = 8 /* the spelling suggestions (F7) */
} ui_keymode;

typedef struct ui_binding {
    int modes; /* mask of ui_keymode */
    int32_t key;
    ui_action action;
    int arg;
    const char *name; /* "C-a", "Home", "M-1" ... (parsed by ui_key_parse) */
    const char *help; /* NULL: same help line as the previous binding */
} ui_binding;

/* The binding table (ui_bindings()[i] for i < n). */
const ui_binding *ui_bindings(int *n);
/* Action bound to key in mode (UI_ACT_SELF_INSERT for printable characters
** in the edit field and command line), UI_ACT_NONE when unbound. */
ui_action ui_keymap_lookup(ui_keymode mode, int32_t key, int *arg);
/* Key names: "C-a", "M-b", "M-C-x", "Tab", "Enter", "Esc", "Backspace",
** "Delete", "Home", "End", "Left", "Right", "Up", "Down", "PgUp", "PgDn",
** "C-Left", "C-Right", "M-Backspace", "F1".."F12", "Space", or one character.
** ui_key_parse returns UI_KEY_NONE for an unknown name. */
int32_t ui_key_parse(const char *name);
/* Writes the name of key into buf; returns buf. */
const char *ui_key_name(int32_t key, char *buf, size_t size);

/* Help text: the lines of the help screen, generated from the binding table
** and the command table.  Key lines have the form
**   "  KEYS<two or more spaces>description"
** where KEYS is a space-separated list of key names or "M-1..M-9" ranges.
** ui_help_line returns line i (NULL past the end) in buf. */
const char *ui_help_line(int i, char *buf, size_t size);
int ui_help_count(void);

/* =============================================================== commands */

typedef enum ui_cmd_kind {
    UI_CMD_NONE = 0, /* empty line */
    UI_CMD_WRITE,
    UI_CMD_QUIT,
    UI_CMD_WRITE_QUIT,
    UI_CMD_QUIT_FORCE,
    UI_CMD_GOTO,
    UI_CMD_FIND,
    UI_CMD_MODEL,
    UI_CMD_EXPORT,
    UI_CMD_HELP,
    UI_CMD_WRITE_FORCE, /* :w! */
    UI_CMD_QA,          /* :qa */
    UI_CMD_TUNE,        /* :tune [cancel] */
    UI_CMD_STATS,       /* :stats */
    UI_CMD_SPELL,       /* :spell [on|off|add WORD] (arg) */
    UI_CMD_REPLACE,     /* :replace [-r] [-i] [-w] OLD NEW (replace.c) */
    UI_CMD_UNDO,        /* :undo: revert the last :replace */
} ui_cmd_kind;

#define UI_CMD_ARG_MAX 4096
typedef struct ui_cmd {
    ui_cmd_kind kind;
    int64_t n;                 /* GOTO: 1-based segment number */
    char format[8];            /* EXPORT: "tmx" or "tsv"         */
    char arg[UI_CMD_ARG_MAX];  /* FIND text, MODEL/EXPORT path (~ expanded; MODEL: ""
                                  lists the models), TUNE "" or "cancel",
                                  REPLACE: OLD */
    int flags;                 /* FIND, REPLACE: UI_FIND_* options        */
    char arg2[UI_CMD_ARG_MAX]; /* REPLACE: NEW (may be "")               */
} ui_cmd;

/* Parses a command line (without the ':').  MT_ERR_INVALID with a message
** naming the problem for unknown commands and bad or missing arguments. */
mt_status ui_cmd_parse(const char *line, ui_cmd *out);

typedef struct ui_command_def {
    const char *name;  /* "w", "goto", ...                    */
    const char *usage; /* "goto N"                            */
    const char *help;
    int arg; /* 0 none, 1 text, 2 path, 3 format+path */
} ui_command_def;
const ui_command_def *ui_commands(int *n);

/* Command history: newest last, no consecutive duplicates. */
#define UI_HIST_MAX 100
typedef struct ui_history {
    char *items[UI_HIST_MAX];
    int n;
    int pos;     /* browsing position; n when at the line being typed */
    char *saved; /* the line being typed, while browsing */
} ui_history;
void ui_hist_init(ui_history *h);
void ui_hist_free(ui_history *h);
mt_status ui_hist_add(ui_history *h, const char *line);
/* Moves one entry older (dir -1) or newer (+1) and puts it in l.
** ED_NOOP at either end. */
mt_status ui_hist_move(ui_history *h, ed_line *l, int dir);
void ui_hist_reset(ui_history *h);

/* Tab completion of the command line in l: command names for the first
** word, file paths for the path arguments, "tmx"/"tsv" after export.
** Completes the longest common prefix; a unique command gets a space, a
** unique directory a '/'.  With several candidates, writes up to size bytes
** of them, space-separated, to list (else list = "").  ED_NOOP when nothing
** matches or nothing could be added. */
mt_status ui_cmd_complete(ed_line *l, char *list, size_t size);

/* ================================================================= editor */

typedef struct ed_mt {
    char *hyp;
    char **nbest;
    float *scores; /* NULL when not given */
    int32_t n_nbest;
    char **src_tok;
    int32_t n_src;
    char **trg_tok;
    int32_t n_trg;
    float *attn; /* [n_trg, n_src] or NULL */
    float *conf; /* per word of hyp, or NULL */
    int32_t n_conf;
    double speed;
    char **labels;   /* n_nbest, entries may be NULL; NULL when none */
    char *hyp_label; /* ui_mt_result.hyp_label; NULL when hyp is the MT */
    /* ui_mt_result.nbest_sources and their marks: n_nbest each, entries
    ** NULL / 0 when none; the arrays NULL when no entry has a source */
    char **sources;
    ui_span **src_marks;
    int32_t *n_src_marks;
} ed_mt;

typedef struct ed_seg {
    char *source;
    char *label; /* NULL when none */
    /* glossary terms in source (ui_segment.terms) and the line listing
    ** them (ui_segment.terms_line); NULL: none */
    ui_span *terms;
    int32_t n_terms;
    char *terms_line;
    char *target; /* "" when none */
    ui_seg_status status;
    ed_mt *mt; /* NULL until posted */
    int32_t src_words;
    /* effort statistics, summed over visits */
    int64_t spent_ms;
    int32_t keystrokes;
    int32_t completions_used;
    ui_origin origin;
    int32_t nbest_rank;
    char *suggestion; /* owned; NULL for UI_ORIGIN_NONE */
} ed_seg;

typedef struct ed_completion {
    bool have;
    char *prefix;
    char *text;
    float *conf; /* per word of text, or NULL */
    int32_t n_conf;
} ed_completion;

typedef enum ed_mode {
    ED_MODE_EDIT,
    ED_MODE_CMDLINE,
    ED_MODE_HELP,
    ED_MODE_ASK_QUIT,
    ED_MODE_SPELL,   /* the spelling suggestions of a word are listed (F7) */
    ED_MODE_REPLACE, /* :replace asks y/n/a/q about one occurrence (replace.c) */
    ED_MODE_LIST,    /* F4: the full list of alternatives (keys of the help screen) */
} ed_mode;

typedef struct ed_repl ed_repl; /* :replace state and undo log (replace.c) */

#define ED_COMPLETION_DEBOUNCE_MS 30
#define ED_PERSIST_MS 1000 /* typed text reaches hooks.edited at most this late */
#define ED_MSG_MAX 512
#define ED_SPELL_MAX 256 /* misspelled words of the field marked at most */

typedef struct ui_editor {
    ui_hooks hooks;
    ed_seg *segs;
    int64_t n_segs;
    int64_t cur;
    char *title, *src_lang, *trg_lang, *model;

    ed_line field;       /* the edit field of segment cur                  */
    char *field_initial; /* its text when the segment was opened            */
    int64_t entered_ms;  /* when cur became current                         */
    ed_completion comp;  /* the latest completion for cur                   */
    bool comp_pending;   /* a request_completion is due at comp_due_ms     */
    int64_t comp_due_ms;
    bool edit_pending;   /* typed text not yet reported (hooks.edited) ...  */
    int64_t edit_due_ms; /* ... due then: at most ED_PERSIST_MS after its first key */
    bool quoted;         /* C-v: the next key is inserted literally */
    /* The field shows a confirmed segment, read-only until Enter reopens it
    ** for editing: keys that would change its text only say so (issue 29:
    ** typing never silently changes a confirmed translation), and ':'
    ** anywhere in it opens the command line. */
    bool locked;

    ed_mode mode;
    ed_line cmd; /* the ':' command line */
    ui_history hist;
    char *last_find;
    int help_scroll;
    int lower_pane;  /* 0 n-best, 1 heat map */
    int heat_scroll; /* first source column the heat map shows (M-Left/M-Right) */
    int list_scroll; /* first row of the F4 view (ED_MODE_LIST) */
    ed_repl *repl;   /* NULL until the first :replace */
    int find_flags;  /* UI_FIND_* of last_find */

    char msg[ED_MSG_MAX]; /* status-line message */
    mt_log_level msg_level;
    int64_t msg_ms;
    char progress[128];
    double speed; /* last decoding speed, tokens/s */
    int64_t words_done, words_total;
    int64_t n_confirmed;

    bool dirty; /* commits/drafts since the last successful save */
    bool quit;
    bool redraw; /* full repaint requested (C-l, resize) */
    int bells;   /* count of refused keys, for the screen (and tests) */

    /* Spell checking (hooks.spell): the misspelled words of the field, for
    ** the text spell_text of segment spell_seg (NULL: to be checked). */
    bool spell_off;     /* :spell off                                     */
    bool spell_unavail; /* the hook said -1: no dictionary                */
    bool spell_told;    /* ... and that was shown                         */
    char spell_why[ED_MSG_MAX];
    char *spell_text;
    int64_t spell_seg;
    ui_span spell[ED_SPELL_MAX];
    int n_spell;
    /* ED_MODE_SPELL: the word [sug_at, sug_at + sug_len) of the field and
    ** its suggestions (pointers into sug_buf). */
    size_t sug_at, sug_len;
    char sug_buf[1024];
    const char *sug[9];
    int n_sug;
    struct ed_gec *gec; /* grammar checking state (ui/gec.c); NULL until used */
} ui_editor;

/* Copies doc; hooks are copied too (NULL hooks = all NULL). */
mt_status ed_init(const ui_hooks *hooks, const ui_document *doc, ui_editor **out);
void ed_free(ui_editor *ed);
/* Opens segment start (clamped) and calls segment_changed(-1, NULL, start). */
void ed_open(ui_editor *ed, int64_t start, int64_t now_ms);
/* Closes the field (drafts reported by segment_changed(cur, draft, -1)). */
void ed_close(ui_editor *ed, int64_t now_ms);

/* Handles one key (see the binding table). */
void ed_key(ui_editor *ed, int32_t key, int64_t now_ms);
/* Applies one action (what ed_key does after the lookup). */
void ed_action(ui_editor *ed, ui_action act, int arg, int32_t key, int64_t now_ms);
/* Fires the debounced completion request when due. */
void ed_tick(ui_editor *ed, int64_t now_ms);
/* Earliest time ed_tick has something to do (INT64_MAX: nothing). */
int64_t ed_deadline(const ui_editor *ed);

/* Results (called by the loop when it drains the post queue).  ed_mt_copy
** validates and deep-copies r (MT_ERR_INVALID names the bad field);
** ed_take_mt hands m to segment seg (ownership moves; out of range: freed);
** ed_apply_mt = copy + take. */
mt_status ed_mt_copy(const ui_mt_result *r, ed_mt **out);
void ed_mt_free(ed_mt *m);
void ed_take_mt(ui_editor *ed, int64_t seg, ed_mt *m);
mt_status ed_apply_mt(ui_editor *ed, int64_t seg, const ui_mt_result *r);
/* Keeps the completion when seg is current and it covers the field (MT_OK);
** outdated ones are dropped (ED_NOOP). */
mt_status ed_apply_completion(ui_editor *ed, int64_t seg, const char *prefix, const char *text,
                              const float *conf, int32_t n_conf);
void ed_message(ui_editor *ed, mt_log_level level, int64_t now_ms, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
void ed_set_progress(ui_editor *ed, const char *task, int64_t done, int64_t total);
mt_status ed_set_model(ui_editor *ed, const char *name);

/* The greyed completion displayed after the field: rest[0..*len), or NULL
** (and *len = 0) when no completion covers the field. */
const char *ed_completion_rest(const ui_editor *ed, size_t *len);
/* Confidence of the word containing rest[off] (of ed_completion_rest), or
** -1 when the engine gave none. */
float ed_completion_conf(const ui_editor *ed, size_t off);
/* What Enter would commit (field + rest), newly allocated; NULL on OOM. */
char *ed_field_text_with_completion(const ui_editor *ed);
/* Next segment after from (wrapping) that is not confirmed; -1 if none. */
int64_t ed_next_untranslated(const ui_editor *ed, int64_t from);
/* Number of whitespace-separated words. */
int32_t ed_count_words(const char *s);
/* The misspelled words of the field (*n of them, sorted), checked again
** through hooks.spell when the field's text changed since the last call;
** none (*n = 0) while checking is off or unavailable. */
const ui_span *ed_spell_spans(ui_editor *ed, int *n);

/* Goes to segment seg (leaving the current one as navigation does). */
void ed_goto(ui_editor *ed, int64_t seg, int64_t now_ms);
/* The current field, when edited and not committed, becomes its segment's
** draft (as when the translator leaves it: segment_changed(cur, draft,
** cur)) and the field reopens on it.  Nothing happens for an unedited field. */
void ed_store_field(ui_editor *ed, int64_t now_ms);

/* ======================================================= search and replace */

/* Options of :find and :replace (ui_cmd.flags). */
enum {
    UI_FIND_SOURCE = 1, /* :find -s: sources only                           */
    UI_FIND_TARGET = 2, /* :find -t: targets only (neither: both)           */
    UI_FIND_REGEX = 4,  /* -r: POSIX extended regular expression            */
    UI_FIND_ICASE = 8,  /* -i: case-insensitive (Unicode simple case folding) */
    UI_FIND_WORD = 16,  /* -w: whole words (no word character either side)  */
};

/* A compiled search pattern.  Occurrences never start or end inside a
** UTF-8 character and are never empty (a regex's empty match is skipped). */
#define UI_MATCH_GROUPS 10
typedef struct ui_matcher {
    int flags;
    char *pat; /* the literal pattern (not UI_FIND_REGEX) */
    size_t pat_len;
    regex_t re;
    bool have_re;
} ui_matcher;

typedef struct ui_match {
    size_t start, end;                                       /* byte offsets of the occurrence */
    size_t g_start[UI_MATCH_GROUPS], g_end[UI_MATCH_GROUPS]; /* regex groups; -1 unset */
} ui_match;

/* MT_ERR_INVALID with the regcomp message for a bad regex or an empty
** pattern; MT_ERR_NOMEM. */
mt_status ui_matcher_init(ui_matcher *m, const char *pattern, int flags);
void ui_matcher_free(ui_matcher *m);
/* The first occurrence in s[0..n) (NUL-terminated) starting at or after
** byte from; false when none. */
bool ui_matcher_next(const ui_matcher *m, const char *s, size_t n, size_t from, ui_match *out);
/* The text that replaces occurrence mt of s: repl as it is, or with -r its
** \0..\9 (the occurrence, group N) and \\ (a backslash) expanded.  New
** string in *out; MT_ERR_NOMEM. */
mt_status ui_replacement(const ui_matcher *m, const char *s, const ui_match *mt, const char *repl,
                         char **out);
/* Replaces every occurrence in s: a new string in *out (a copy when none),
** the count in *count.  The result is valid UTF-8 when s and repl are. */
mt_status ui_replace_all(const ui_matcher *m, const char *s, const char *repl, char **out,
                         int *count);

/* :find with the UI_FIND_* flags (scope, regex, whole words; always
** case-insensitive); text "" repeats the last search. */
void ed_find(ui_editor *ed, const char *text, int flags, int64_t now_ms);
/* :replace: starts the operation (ED_MODE_REPLACE while it asks). */
void ed_replace_start(ui_editor *ed, const ui_cmd *c, int64_t now_ms);
/* A key while ED_MODE_REPLACE asks: y, n, a, q (Esc C-g C-c stop too). */
void ed_replace_key(ui_editor *ed, int32_t key, int64_t now_ms);
/* :undo, or C-z right after a :replace: reverts the last :replace. */
void ed_replace_undo(ui_editor *ed, int64_t now_ms);
/* Whether C-z now means "undo the :replace" (nothing else happened since). */
bool ed_replace_undo_ready(const ui_editor *ed);
void ed_replace_disarm(ui_editor *ed);
/* The occurrence ED_MODE_REPLACE asks about: byte range of the field. */
bool ed_replace_highlight(const ui_editor *ed, size_t *start, size_t *end);
/* What the field shows while ED_MODE_REPLACE asks (the segment's text with
** the answers so far), the occurrence at [*start, *end); NULL otherwise. */
const char *ed_replace_view(const ui_editor *ed, size_t *start, size_t *end);
void ed_repl_free(ed_repl *r);

/* ============================================================ post queue */

typedef enum ui_event_kind {
    UI_EV_MT,
    UI_EV_COMPLETION,
    UI_EV_MESSAGE,
    UI_EV_PROGRESS,
    UI_EV_MODEL,
    UI_EV_QUIT,
    UI_EV_GEC,
} ui_event_kind;

/* ============================================== grammar checking (gec.c) */

/* A posted result of hooks.gec_request (copied from ui_post_gec). */
typedef struct ed_gec_fix {
    int32_t start, len;
    char *with;
} ed_gec_fix;
typedef struct ed_gec_result {
    int64_t seg;
    char *text;
    ed_gec_fix *fix;
    int32_t n;
} ed_gec_result;
/* Validates and copies (MT_ERR_INVALID, MT_ERR_NOMEM). */
mt_status ed_gec_result_copy(int64_t seg, const char *text, const ui_gec_fix *f, int32_t n,
                             ed_gec_result **out);
void ed_gec_result_free(ed_gec_result *r); /* NULL is a no-op */
/* Hands r to the editor (ownership moves): kept for the current segment. */
void ed_gec_take(ui_editor *ed, ed_gec_result *r);
/* The pause timer: ed_tick calls it; it asks hooks.gec_request when the
** field has not changed for UI_GEC_PAUSE_MS.  ed_gec_deadline: when it
** next has something to do (INT64_MAX: nothing). */
void ed_gec_tick(ui_editor *ed, int64_t now_ms);
int64_t ed_gec_deadline(const ui_editor *ed);
/* The corrections shown for the field now (*n of them; NULL when none). */
const ed_gec_fix *ed_gec_fixes(const ui_editor *ed, int *n);
/* The line under the field listing them; false when there are none. */
bool ed_gec_line(const ui_editor *ed, char *buf, size_t size);
/* M-g and M-G. */
void ed_gec_accept(ui_editor *ed, int64_t now_ms);
void ed_gec_dismiss(ui_editor *ed, int64_t now_ms);
void ed_gec_free(ui_editor *ed);
/* Replaces bytes [at, at + len) of the field with `with` as one undo step,
** reported to hooks.edited as typing, the cursor after it (editor.c). */
mt_status ed_field_replace(ui_editor *ed, size_t at, size_t len, const char *with, int64_t now_ms);

/* ================================================================ screen */

typedef struct ui_screen ui_screen;
/* Starts curses on the given terminal (NULL type: $TERM); in/out default
** to stdin/stdout.  MT_ERR_IO when the terminal cannot be used. */
mt_status ui_screen_init(const char *term_type, void *out_file, void *in_file, ui_keydec *dec,
                         ui_screen **out);
void ui_screen_free(ui_screen *s); /* endwin; NULL is a no-op */
/* Draws the whole screen from the editor state. */
void ui_screen_draw(ui_screen *s, ui_editor *ed);
/* Call after KEY_RESIZE (or with rows/cols > 0 to force a size, for tests). */
void ui_screen_resize(ui_screen *s, int rows, int cols);
/* Colour capabilities chosen at init: 0 monochrome, 8, 256. */
int ui_screen_colors(const ui_screen *s);
/* Restores the terminal (abort hook); safe to call from anywhere. */
void ui_screen_emergency_end(void);

/* Colour roles: the colour pair number of a cell is its role when the
** terminal has colours (monochrome terminals use attributes instead). */
#define UI_HEAT_LEVELS 10
enum ui_role {
    UI_ROLE_NORMAL = 0,
    UI_ROLE_HEADER,
    UI_ROLE_STATUS,
    UI_ROLE_HEADING,
    UI_ROLE_GREY,     /* completion, high or unknown confidence */
    UI_ROLE_CONF_LOW, /* completion / MT word with confidence < 0.4 */
    UI_ROLE_CONF_MID, /* confidence < 0.7 */
    UI_ROLE_MARK_MT,
    UI_ROLE_MARK_EDITED,
    UI_ROLE_MARK_DONE,
    UI_ROLE_MSG_WARN,
    UI_ROLE_MSG_ERR,
    UI_ROLE_HEAT0, /* .. UI_ROLE_HEAT0 + UI_HEAT_LEVELS - 1: heat map cells */
    UI_ROLE_COUNT = UI_ROLE_HEAT0 + UI_HEAT_LEVELS
};
/* Role of a confidence value (-1: unknown). */
int ui_conf_role(float conf);

/* Test access to what was drawn: row y as UTF-8 (returns its length), the
** role of cell (y, x), the screen size and the cursor position (-1 -1 when
** hidden). */
size_t ui_screen_row(ui_screen *s, int y, char *buf, size_t size);
int ui_screen_cell_role(ui_screen *s, int y, int x);
bool ui_screen_cell_dim(ui_screen *s, int y, int x);
bool ui_screen_cell_underline(ui_screen *s, int y, int x);
void ui_screen_size(ui_screen *s, int *rows, int *cols);
void ui_screen_cursor(ui_screen *s, int *y, int *x);

#endif /* MT_UI_EDITOR_H */
