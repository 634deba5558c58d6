/*
** ui.h: the terminal post-editor of `mtpe edit`, as seen by app/.
**
** ui/ never calls the engine, the models or the store.  app/ describes the
** document (ui_document), fills in ui_hooks and calls ui_run() on the thread
** that owns the terminal.  The hooks run on that ui thread and must return
** quickly: slow work (translation, completion) is queued by app/ and its
** result comes back, from any thread, through the ui_post_*() functions.
**
** Segments are named by their 0-based index in ui_document.segs ("seg").
**
** ---------------------------------------------------------------------------
** The screen (80x24 and up; wide terminals get the segment list on the left):
**
**   header        file, languages, segment n/N, progress bar
**   segment list  one line per segment: number, status mark, source text;
**                 marks: ' ' new, 'm' machine translated, 'e' edited (draft),
**                 '*' confirmed
**   source        the current source segment, wrapped; its heading shows
**                 the segment's label (ui_segment.label: "plural form 2/2
**                 (n = 0, 2, 3, …)" for the forms of a PO plural entry);
**                 glossary terms (ui_segment.terms, computed by app/)
**                 underlined in cyan, and under the text the term pairs
**                 (ui_segment.terms_line: "Terms: file → Datei · …")
**   translation   the edit field: what the translator typed, then the
**                 completion greyed after it (words coloured by the engine's
**                 confidence: low red, medium yellow, high grey)
**   lower pane    n-best alternatives (M-1..M-9; TM matches first, labelled
**                 "TM 95%"; with `mtpe edit --ape DIR` the APE model's
**                 post-edit of the MT next, labelled "APE", or that label
**                 on the entry it equals), each wrapped in full onto continuation rows
**                 indented under its text, as many as fit (then a line says
**                 F4 shows all), or the attention heat map between source
**                 and target tokens of the 1-best (F3 toggles; wide
**                 terminals show both); heat map columns are as wide as the
**                 longest source token label (up to 16), so labels are
**                 whole, and scroll sideways (M-Left/M-Right, ‹ › mark
**                 what is out of view); 256-colour ramp when the terminal
**                 has 256 colours, else shaded characters ░▒▓█.  For a form
**                 of a PO plural entry (label "plural form k/n"; the n forms
**                 are consecutive segments) the source pane shows
**                 "singular: msgid" and "plural: msgid_plural" and an
**                 "Other forms of this entry" block the other forms'
**                 current translations
**   status line   segment n/N, words done/total, model, decoding speed,
**                 background progress, the latest engine message
**   bottom line   key hints, or the ':' command line while it is open
**
** ---------------------------------------------------------------------------
** The edit field.  A line editor with the Emacs keys of bash; UTF-8 aware
** (the cursor moves by characters, widths come from wcwidth, so CJK takes two
** columns).  Text may contain '\n' (shown as ↵); C-v quotes the next key.
**
**   C-a Home        start of field
**   C-e End         end of field; already at the end: accept ALL of the
**                   greyed completion
**   C-b Left        back one character;  C-f Right forward one character
**                   (at the end: accept one character of the completion)
**   M-b C-Left      back one word;  M-f C-Right forward one word (at the end:
**                   accept one word of the completion, as Tab)
**   C-d Delete      delete the character under the cursor;  Backspace C-h
**                   delete the one before it
**   C-k             kill to end;  C-u kill to start;  C-w M-Backspace kill
**                   the word before the cursor (up to whitespace);  M-d kill
**                   the word after it.  Consecutive kills append; C-y yanks.
**   C-t             transpose the two characters around the cursor
**   C-z C-_         undo (multi-level; a run of typed characters is one step)
**   Tab             accept the next word of the completion
**   M-1 .. M-9      replace the field with n-best alternative 1..9 (TM
**                   matches and the APE suggestion are alternatives too);
**                   nothing is completed after it until it is edited
**                   (M- is Alt, or Esc then the key within 0.2 s)
**   Enter           confirm: commit what the field shows, greyed completion
**                   included (so Enter on an untouched segment confirms the
**                   MT), then go to the next segment that is not confirmed
**   PgDn C-n Down   next segment;  PgUp C-p Up previous segment
**   M-n             next segment that is not confirmed
**   M-< M->         first / last segment
**   :               at the start of the field: open the command line
**                   (elsewhere it types ':');  M-: and F2 open it anywhere
**   F1              help: every key and command
**   F3              toggle n-best list / attention heat map
**   F7 M-s          spelling suggestions for the misspelled word at or
**                   before the cursor (else the first after it), listed
**                   in the bottom line: 1..9 replaces the word with that
**                   suggestion (one undo step, an edit like typing), a or
**                   + adds the word to the personal dictionary, Esc or
**                   C-g closes the list, any other key closes it and acts
**   M-g             grammar (GEC): apply the correction at the cursor, else
**                   the next one after it (else the first); one undo step
**   M-G             grammar (GEC): dismiss that correction (not shown again)
**   F4              every alternative in full on a scrollable screen
**                   (Up/Down PgUp/PgDn scroll by entries, any other key
**                   closes it)
**   M-Left M-Right  scroll the heat map's columns (the terminal's Alt-arrow
**                   sequences ESC [1;3D / ESC [1;3C, or Esc then the arrow)
**   C-l             redraw;  Esc C-g dismiss the message
**   C-c             says how to quit (the terminal is in raw mode: C-c, C-z
**                   and C-s are keys, not signals)
**
** Spell checking.  Misspelled words of the field are underlined (and red
** where the terminal has colours): before the field is drawn after its
** text changed, the ui asks hooks->spell(seg, text) for them.  When that
** hook returns -1 (no dictionary for the target language) checking stays
** off and the hook's message (mt_errmsg) is shown once on the status line.
**
** Grammar checking (GEC, `mtpe edit --gec MODEL`).  When the field's text
** has not changed for UI_GEC_PAUSE_MS (800 ms), the ui calls
** hooks->gec_request(seg, text) once for that text; app/ checks it on a
** worker thread and answers with ui_post_gec(seg, text, fixes).  The fixes
** are shown only while the field still holds exactly that text: each
** corrected span underlined (yellow where there are colours; an insertion
** marks the character after it) and a line under the field lists them
** ("Grammar: Dateii → Datei · …  M-g apply, M-G dismiss").  Nothing is
** ever applied without M-g.  app/ leaves placeholders, tags and glossary
** target terms out of the fixes.
**
** Completion.  The field of an untouched segment (new or machine translated)
** is empty and shows the segment's MT greyed.  After each edit of the field
** the ui calls hooks->request_completion(seg, prefix = the whole field)
** after a 30 ms debounce; a newer request makes older ones outdated (app
** cancels them; the ui ignores their results).  app/ answers with
** ui_post_completion(seg, prefix, completion, ...): prefix + completion is
** the predicted full translation.  A completion (or the MT, with prefix "")
** stays displayed while the field is a prefix of prefix + completion and
** starts with prefix, so typing the predicted characters "types through"
** it; no new request is made while a displayed completion still covers the
** field, nor for an empty field (its completion is the MT, which app/ starts
** in segment_changed).
**
** The ':' command line (the line-editing keys above; history with Up/Down,
** Tab completes command names and file paths, Esc, C-g or Backspace on an
** empty line closes it; names of 3+ letters may be shortened: :go 12):
**   :w              save the document (hooks->save)
**   :q              quit; with unsaved changes it asks (y: save and quit,
**                   n: quit without saving, anything else: stay)
**   :wq  :x         save, then quit if the save succeeded
**   :q!             quit without saving
**   :goto N  :N     go to segment N (1-based)
**   :find [-s|-t] [-r] [-w] TEXT
**                   next segment whose source or target contains TEXT
**                   (case-insensitive, Unicode simple folding; wraps;
**                   -s sources only, -t targets only, -r POSIX ERE, -w
**                   whole words; -- ends the options; without TEXT: again)
**   :replace [-r] [-i] [-w] OLD NEW
**                   replace OLD by NEW in the targets (drafts and confirmed
**                   ones; sources are read-only, MT nobody took is left
**                   alone), segment by segment from the current one,
**                   wrapping: each occurrence is shown reversed in its
**                   segment and answered y (replace), n (skip), a (this and
**                   all remaining), q Esc C-g (stop); a summary "replaced 7
**                   of 9 occurrences in 5 segments" follows.  -r: POSIX ERE
**                   (NEW's \0..\9: the occurrence, its groups; \\ a
**                   backslash), -i any case, -w whole words.  OLD and NEW are
**                   split as a shell does: "..." or '...' quote spaces,
**                   \" \' \\ \space escape, \n \t are newline and tab, other
**                   \x stay as they are.  A draft in the field is stored
**                   first.  Each changed segment goes to hooks->replace when
**                   the operation leaves it, keeping its status.
**   :undo           revert the last :replace in every segment it changed
**                   (hooks->replace with undo; a segment edited since is
**                   kept); C-z right after the :replace does the same
**   :model PATH     switch to another model (hooks->load_model)
**   :export tmx PATH    export confirmed segments (hooks->export_doc);
**   :export tsv PATH    also tsv
**   :help           the help screen (as F1)
**   :spell [on|off] turn spell checking on or off (no argument: toggle)
**   :spell add WORD add WORD to the personal dictionary
** "Unsaved changes" are commits and drafts since the last successful :w.
*/
#ifndef MT_UI_H
#define MT_UI_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mt_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ document */

typedef enum ui_seg_status {
    UI_SEG_NEW = 0,   /* no translation yet                              */
    UI_SEG_MT,        /* target holds an unedited machine translation   */
    UI_SEG_EDITED,    /* target holds a draft the translator edited     */
    UI_SEG_CONFIRMED, /* target was confirmed                           */
} ui_seg_status;

/* Bytes [start, start + len) of a text: a glossary term of a source
** (ui_segment.terms), a misspelled word of the field (ui_hooks.spell). */
typedef struct ui_span {
    int32_t start, len;
} ui_span;

typedef struct ui_segment {
    const char *source;   /* UTF-8; must not be NULL                          */
    const char *target;   /* UTF-8 current target; NULL or "" when none       */
    ui_seg_status status; /* CONFIRMED with no target only for an empty source */
    const char *label;    /* shown after the source heading, e.g. which plural
                             form of an entry this is; NULL: none           */
    const ui_span *terms; /* n_terms glossary terms in source, highlighted:
                             in order, inside source (others are ignored); NULL:
                             none.  app/ finds them (app/formats/glossary.h) */
    int32_t n_terms;
    const char *terms_line; /* drawn under the source text, e.g. "Terms: file
                               → Datei (note) · …"; NULL: none              */
} ui_segment;

typedef struct ui_document {
    const char *title;      /* shown in the header (file name); may be NULL */
    const char *src_lang;   /* e.g. "en"; may be NULL                        */
    const char *trg_lang;   /* e.g. "de"; may be NULL                        */
    const char *model_name; /* shown in the status line; may be NULL        */
    const ui_segment *segs;
    int64_t n_segs; /* >= 1 */
} ui_document;

/* ---------------------------------------------------------------- hooks */

/* Where the committed text came from (for effort statistics). */
typedef enum ui_origin {
    UI_ORIGIN_NONE = 0, /* typed without any suggestion                     */
    UI_ORIGIN_MT,       /* started from the segment's machine translation   */
    UI_ORIGIN_NBEST,    /* started from n-best alternative nbest_rank       */
    UI_ORIGIN_DRAFT,    /* started from the target the document already had */
} ui_origin;

/* Counted over all visits of the segment since it was last confirmed. */
typedef struct ui_edit_stats {
    double seconds;           /* time the segment was current               */
    int32_t keystrokes;       /* keys that edited or moved in the field     */
    int32_t completions_used; /* Tab / End / Right acceptances              */
    ui_origin origin;         /* see ui_origin                              */
    int32_t nbest_rank;       /* 1-based, for UI_ORIGIN_NBEST; else 0       */
    const char *suggestion;   /* the text the edit started from; NULL when
                                 origin is UI_ORIGIN_NONE                  */
    bool edited;              /* committed text differs from suggestion    */
} ui_edit_stats;

/* Every hook may be NULL (then the action only shows a message).  They run
** on the ui thread; strings are valid only during the call.  Hooks returning
** mt_status report failures through mt_seterr(); the ui shows mt_errmsg(). */
/* What changed the field's text (ui_hooks.edited). */
typedef enum ui_edit_kind {
    UI_EDIT_TYPED = 0,   /* keys typed or deleted (a burst of them)          */
    UI_EDIT_ACCEPT_WORD, /* Tab (or C-Right at the end): the next word        */
    UI_EDIT_ACCEPT_ALL,  /* End at the end of the field: the whole completion */
    UI_EDIT_NBEST,       /* M-1..M-9: an n-best alternative                   */
} ui_edit_kind;

typedef struct ui_hooks {
    void *user;
    /* The translator left segment `from` (-1 when the editor opens) for
    ** segment `to` (-1 when the editor closes).  draft: the field's text when
    ** it was edited and not committed (the ui marks the segment UI_SEG_EDITED),
    ** else NULL.  app/ stores the draft and starts translating `to` (and may
    ** pre-translate its neighbours); results come back through ui_post_mt(). */
    void (*segment_changed)(void *user, int64_t from, const char *draft, int64_t to);
    /* Predict the rest of segment seg's translation after `prefix`; answer
    ** with ui_post_completion().  Implicitly cancels the previous request. */
    void (*request_completion)(void *user, int64_t seg, const char *prefix);
    /* The translator confirmed seg with text.  MT_OK: the ui marks it
    ** confirmed and moves on; an error keeps the segment open. */
    mt_status (*commit)(void *user, int64_t seg, const char *text, const ui_edit_stats *st);
    /* :w (force false: refuses a file its toolchain would reject, saying
    ** why) and :w! (force true: writes it anyway) */
    mt_status (*save)(void *user, bool force);
    mt_status (*load_model)(void *user, const char *path); /* :model PATH   */
    /* :export FORMAT PATH, format "tmx" or "tsv" (path with ~ expanded). */
    mt_status (*export_doc)(void *user, const char *format, const char *path);
    /* :qa: the first segment after `from` (wrapping) with QA problems, -1
    ** when none; msg (n bytes) gets what to show either way.  May be NULL. */
    int64_t (*qa)(void *user, int64_t from, char *msg, size_t n);
    /* The field of seg now holds text: once per Tab, End and M-digit, and
    ** for typing at most ED_PERSIST_MS (1 s) after the first key of a burst,
    ** so that a killed editor loses at most the last second.  keystrokes:
    ** on the segment so far (as ui_edit_stats).  May be NULL. */
    void (*edited)(void *user, int64_t seg, const char *text, ui_edit_kind kind,
                   int32_t keystrokes);
    /* :model without a path: msg (n bytes) gets the models to show.  May be NULL. */
    mt_status (*models)(void *user, char *msg, size_t n);
    /* :tune ("") and :tune cancel ("cancel"): msg gets what to show (also
    ** on failure).  May be NULL. */
    mt_status (*tune)(void *user, const char *arg, char *msg, size_t n);
    /* :stats: msg (n bytes) gets the document's statistics.  May be NULL. */
    mt_status (*stats)(void *user, char *msg, size_t n);
    /* Spell checking (see "Spell checking" above).  spell: the misspelled
    ** words of text (the field of seg), in order, the first max into out;
    ** returns how many there are, or -1 when spell checking is not
    ** available (mt_seterr says why).  Called on the ui thread whenever the
    ** field's text changed: it must be fast.  May be NULL (no checking). */
    int (*spell)(void *user, int64_t seg, const char *text, ui_span *out, int max);
    /* Up to 9 suggestions for word, best first, into buf (n bytes), each
    ** ended by '\n'; returns how many (0: none, -1: not available). */
    int (*spell_suggest)(void *user, const char *word, char *buf, size_t n);
    /* Adds word to the personal dictionary (kept in the store). */
    mt_status (*spell_add)(void *user, const char *word);
    /* :replace (and the :undo of one) set seg's target to text, keeping its
    ** status: UI_SEG_EDITED (a draft stays a draft) or UI_SEG_CONFIRMED (a
    ** confirmed translation stays confirmed).  app/ stores it at once, as an
    ** edit event and, for a confirmed segment, a new confirmation, and puts
    ** it in the document.  An error leaves the segment as it was and stops
    ** the :replace.  undo: this puts back the text a :replace changed.  May
    ** be NULL (then only the ui's copy changes). */
    mt_status (*replace)(void *user, int64_t seg, const char *text, ui_seg_status status,
                         bool undo);
    /* Grammar checking (see "Grammar checking" above): check text, the
    ** field of seg, off the ui thread and answer with ui_post_gec().  May
    ** be NULL (no grammar checking). */
    void (*gec_request)(void *user, int64_t seg, const char *text);
} ui_hooks;

/* A grammar correction of a field: bytes [start, start + len) of the text
** are to be replaced by with (len 0: with is inserted before start). */
typedef struct ui_gec_fix {
    int32_t start, len;
    const char *with;
} ui_gec_fix;

#define UI_GEC_PAUSE_MS 800 /* typing pause before the field is checked */

/* Runs the editor on the terminal (stdin/stdout) until the user quits, with
** segment start_seg current (clamped to the document).  The document is
** copied; hooks must outlive the call.  While it runs, mt_log() goes to the
** status line (mt_log_set(ui_log_sink)) and an abort hook restores the
** terminal; on return both are reset to the defaults (NULL).  Only one
** ui_run may be active in a process.
** Returns MT_OK when the user quit, MT_ERR_INVALID for a bad document or a
** second concurrent call, MT_ERR_IO when the terminal cannot be set up (no
** tty, unknown TERM), MT_ERR_NOMEM. */
mt_status ui_run(const ui_hooks *hooks, const ui_document *doc, int64_t start_seg);

/* ------------------------------------------------- results, any thread */

/* Result of translating one segment.  Word lists index the whitespace-
** separated words of hyp; token lists are what the heat map labels. */
typedef struct ui_mt_result {
    const char *hyp;           /* the 1-best translation (UTF-8)          */
    const char *const *nbest;  /* n_nbest alternatives, best first (the
                                  first is normally hyp); may be NULL    */
    const float *nbest_scores; /* n_nbest model scores; may be NULL      */
    int32_t n_nbest;
    const char *const *src_tokens; /* n_src labels of the heat map columns   */
    int32_t n_src;
    const char *const *trg_tokens; /* n_trg labels of the heat map rows      */
    int32_t n_trg;
    const float *attention; /* [n_trg, n_src] row-major: row t is the
                               attention of target token t over the
                               source tokens (rows sum to 1); NULL
                               when none                               */
    const float *word_conf; /* n_words confidences in [0,1] for the
                               words of hyp; may be NULL               */
    int32_t n_words;
    double tokens_per_sec;           /* decoding speed, shown in the status line;
                                        <= 0: unknown                           */
    const char *const *nbest_labels; /* n_nbest labels drawn before the
                                        alternatives ("TM 95%"), an entry or
                                        the whole list NULL: none          */
    const char *hyp_label;           /* hyp is not the MT but what this says
                                        ("TM 100%": an exact TM match); NULL: MT */
    /* For TM entries: the source the entry translates, drawn in grey under
    ** it with the bytes that differ from the segment's source marked
    ** (nbest_n_marks[i] spans nbest_source_marks[i], in order); the whole
    ** list, an entry (NULL) or its marks may be missing. */
    const char *const *nbest_sources;
    const ui_span *const *nbest_source_marks;
    const int32_t *nbest_n_marks;
} ui_mt_result;

/* These copy what they are given into a queue and wake the ui thread; they
** are thread-safe and never block on the ui.  They are accepted only while
** ui_run() is active (else MT_ERR_INVALID, nothing queued); MT_ERR_NOMEM
** when the copy cannot be made.  Results for a segment the user has left
** are kept for when they come back; outdated completions are dropped. */
mt_status ui_post_mt(int64_t seg, const ui_mt_result *r);
/* prefix: the prefix the completion was computed for (as passed to
** request_completion); completion: the text that follows it; word_conf:
** n_words confidences for the words of completion (may be NULL). */
mt_status ui_post_completion(int64_t seg, const char *prefix, const char *completion,
                             const float *word_conf, int32_t n_words);
/* A line for the status line (engine logs, job results). */
mt_status ui_post_message(mt_log_level level, const char *text);
/* Progress of a background job (pre-translation, fine-tuning) shown in the
** status line as "task done/total"; total <= 0 clears it. */
mt_status ui_post_progress(const char *task, int64_t done, int64_t total);
/* A new model name for the status line (after :model succeeded). */
mt_status ui_post_model(const char *name);
/* The grammar corrections of text, the field of seg when it was checked
** (hooks->gec_request): n fixes, in order, not overlapping, inside text
** (MT_ERR_INVALID otherwise).  Shown only while the field holds text. */
mt_status ui_post_gec(int64_t seg, const char *text, const ui_gec_fix *fixes, int32_t n);
/* Asks the editor to close as after :q! (drafts are reported, no save). */
mt_status ui_post_quit(void);

/* An mt_log_fn that forwards to ui_post_message() (what ui_run installs). */
void ui_log_sink(mt_log_level level, const char *msg, void *user);

#ifdef __cplusplus
}
#endif
#endif /* MT_UI_H */
