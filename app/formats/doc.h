/*
** doc.h: the document model behind `mtpe edit` and `mtpe translate --format`.
**
** A document is a list of segments (source text, context, notes, one or more
** translation forms and a state) read from a file, updated one segment at a
** time, and written back so that everything the user did not touch stays as
** it was.  Formats (one reader/writer each):
**
**   po        gettext PO/POT (app/formats/doc_po.c).  One segment per entry; the
**             header entry and obsolete (#~) entries are kept, not segments.
**             Saving rewrites only the msgstr and "#," lines of changed
**             entries; every other byte is copied from the original file
**             (but see stamp_header below).
**   xliff     XLIFF 1.2 (app/formats/doc_xliff.c, libxml2).  One segment per
**             trans-unit (translate="no" units are skipped).  Inline tags
**             become placeholders, see "Inline tags" below.
**   text      plain text, one segment per line (app/formats/doc_text.c); the
**             translations are written to a separate target file.
**   parallel  Moses-style parallel text: a source file and a line-aligned
**             target file (the target may not exist yet).
**   tsv       "source<TAB>target" lines, rewritten in place.
**
** Segment states and how each format stores them:
**
**   state       PO                      XLIFF 1.2 (<target state=...>)
**   EMPTY       msgstr ""               no <target>, or an empty one (written
**                                       as state="needs-translation")
**   DRAFT       "#, fuzzy"              new, needs-* and unknown states (MT
**                                       output, unreviewed)
**   CONFIRMED   translated, not fuzzy   no state, translated, signed-off, final,
**                                       or approved="yes" on the trans-unit
**
** Text formats have no state marker: a non-empty target line is CONFIRMED.
** When saving, app_doc_save_params.draft_as_fuzzy decides how DRAFT segments
** are written: true (default, gettext's convention for MT output) marks them
** "#, fuzzy" / state="needs-review-translation" state-qualifier="mt-suggestion";
** false writes them as ordinary translations.  CONFIRMED segments lose the
** fuzzy flag (PO) or get state="translated" and approved="yes" (XLIFF).
**
** PO header stamp.  With app_doc_save_params.stamp_header (false by
** default; `mtpe edit` sets it), a save that rewrites any entry also sets,
** as Poedit and gettext's tools do after a translator's revision:
**   PO-Revision-Date  the time of the save, local, "YYYY-MM-DD HH:MM+ZZZZ"
**   Last-Translator   $MTPE_TRANSLATOR verbatim ("Name <email>"), else
**                     $USER; left alone when neither is one line of UTF-8
**   X-Generator       "mtpe VERSION"
** A field the header has keeps its place: only the text between the quotes
** of its line(s) changes; missing ones are added as lines after the last.
** A file without a header entry gets none (msgfmt compiles it without
** one).  Nothing changed: the header is not touched either.
**
** Inline tags (XLIFF only).  Segment text shows each inline element of the
** <source> as a numbered placeholder between U+27E6 and U+27E7:
**
**   <g>, <mrk> (with content)             ⟦1⟧ ... ⟦/1⟧
**   <x/>, <bx/>, <ex/>, <ph>, <bpt>,
**   <ept>, <it>, other elements           ⟦2/⟧      (native code kept whole)
**
** Numbers count the source's inline elements in document order from 1.
** A literal ⟦ or ⟧ in the text is doubled (⟦⟦, ⟧⟧), so placeholder syntax is
** never ambiguous.  A target may omit placeholders or reorder them, but may
** use each number at most once, must nest paired ones properly, and may use
** only numbers the segment knows; app_doc_set_target() refuses anything else.
** On save each placeholder is replaced by a copy of the original element.
** app_doc_strip_tags() gives the plain text (for MT input or export).
**
** Text files: UTF-8 only (invalid sequences are reported with file:line);
** a leading byte-order mark is skipped; lines may end in LF or CRLF and
** written files use the line ending of the file they replace or mirror, and
** end with a newline iff that file did.  PO files keep their line endings
** byte for byte; rewritten lines take the ending of the lines they replace
** (inserted ones that of the file's first line).
**
** Ownership: app_doc owns every string it hands out; segment pointers stay
** valid until the next call that modifies that segment or app_doc_free().
** Thread-safety: an app_doc is used by one thread at a time.  Call
** xmlInitParser() once from the main thread before using XLIFF documents
** from several threads (app_doc_open() calls it too).
*/
#ifndef APP_DOC_H
#define APP_DOC_H
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mt.h"

typedef enum app_doc_format {
    APP_DOC_FORMAT_AUTO = 0, /* by suffix, then by content (app_doc_detect_format) */
    APP_DOC_FORMAT_PO,
    APP_DOC_FORMAT_XLIFF,
    APP_DOC_FORMAT_TEXT,
    APP_DOC_FORMAT_PARALLEL,
    APP_DOC_FORMAT_TSV,
} app_doc_format;

typedef enum app_doc_state {
    APP_DOC_STATE_EMPTY = 0, /* no translation                                 */
    APP_DOC_STATE_DRAFT,     /* machine translation or fuzzy: needs review      */
    APP_DOC_STATE_CONFIRMED, /* translated and confirmed                        */
} app_doc_state;

/* One segment, read-only for callers (change it through app_doc_set_*). */
typedef struct app_doc_segment {
    const char *source;        /* UTF-8; XLIFF: with placeholders              */
    const char *source_plural; /* PO msgid_plural; NULL otherwise              */
    const char *context;       /* PO msgctxt, XLIFF resname or id; or NULL     */
    const char *note;          /* PO "#.", XLIFF <note>s, '\n'-joined; or NULL */
    const char *refs;          /* PO "#:" references, ' '-joined; or NULL      */
    const char *flags;         /* PO flags but fuzzy ("c-format"); or NULL     */
    char **targets;            /* n_targets strings, "" when untranslated      */
    int n_targets;             /* 1, or the number of plural forms (PO)        */
    app_doc_state state;       /* see the state table above                   */
    bool changed;              /* modified since the document was opened       */
    int64_t line;              /* 1-based line where the entry starts          */
} app_doc_segment;

typedef struct app_doc_save_params {
    bool draft_as_fuzzy; /* DRAFT segments written as fuzzy/needs review (true) */
    bool stamp_header;   /* PO: stamp the header when entries change (false) */
} app_doc_save_params;

typedef struct app_doc app_doc;

app_doc_save_params app_doc_default_save_params(void);

/* "po", "xliff", "text", "parallel", "tsv" ("auto" for AUTO). */
const char *app_doc_format_name(app_doc_format f);
/* Parses a name as above (also "xlf", "txt", "moses").  MT_ERR_INVALID if unknown. */
mt_status app_doc_format_from_name(const char *name, app_doc_format *out);
/* Suffix first (.po .pot, .xlf .xliff, .tsv, .txt), then content: XML whose
** root is <xliff> -> XLIFF, a line starting with msgid -> PO, else TEXT.
** MT_ERR_IO if the file cannot be read. */
mt_status app_doc_detect_format(const char *path, app_doc_format *out);

/* Opens a document.  fmt AUTO detects; PARALLEL is refused here (use
** app_doc_open_parallel).  Errors: MT_ERR_IO (unreadable, message names the
** file), MT_ERR_FORMAT (malformed: "file:line: what"), MT_ERR_UNSUPPORTED
** (PO charset other than UTF-8, XLIFF 2.x), MT_ERR_NOMEM.  On success *out
** owns the document; free with app_doc_free(). */
mt_status app_doc_open(const char *path, app_doc_format fmt, app_doc **out);
/* Opens Moses-style parallel text: src_path line i <-> tgt_path line i.
** tgt_path need not exist (all targets empty); when it does, both files must
** have the same number of lines (MT_ERR_FORMAT naming both counts). */
mt_status app_doc_open_parallel(const char *src_path, const char *tgt_path, app_doc **out);
void app_doc_free(app_doc *d); /* NULL is a no-op */

app_doc_format app_doc_get_format(const app_doc *d);
const char *app_doc_path(const app_doc *d);
/* The file app_doc_save(d, NULL, ...) writes: the document's own file, or
** for text and parallel documents the target file (NULL when none). */
const char *app_doc_save_path(const app_doc *d);
/* Language codes from the file (PO "Language:", XLIFF source-language /
** target-language of the first <file>); NULL when the file has none. */
const char *app_doc_source_lang(const app_doc *d);
const char *app_doc_target_lang(const app_doc *d);
int64_t app_doc_count(const app_doc *d);
const app_doc_segment *app_doc_segment_at(const app_doc *d, int64_t i); /* asserts range */

/* Sets translation form `form` (0 unless plural) of segment i and the
** segment's state.  The text must be valid UTF-8; text formats refuse line
** breaks (and TSV tabs); XLIFF checks placeholders as described above.
** Errors: MT_ERR_INVALID (bad index/form/text, message says why),
** MT_ERR_NOMEM.  On error the segment is unchanged. */
mt_status app_doc_set_target(app_doc *d, int64_t i, int form, const char *text,
                             app_doc_state state);
/* Changes only the state (e.g. confirm a draft as it is). */
mt_status app_doc_set_state(app_doc *d, int64_t i, app_doc_state state);

/* Writes the document atomically (app_doc_atomic_write).  path NULL: the file
** it was read from (text/parallel: the target file; a plain text document
** opened without one needs a path: MT_ERR_INVALID).  When no segment changed,
** PO, XLIFF and TSV documents are written back byte for byte.  Saving does not
** reset `changed` (it means "changed since opened"); saving again writes the
** same bytes (a stamped PO header aside: its date is that of each save). */
mt_status app_doc_save(app_doc *d, const char *path, app_doc_save_params p);
/* Writes the document to an open stream (mtpe translate --format to
** stdout); MT_ERR_IO naming `what` when the stream fails. */
mt_status app_doc_write(app_doc *d, FILE *f, const char *what, app_doc_save_params p);

/* PO: which counts n plural form `form` serves, from the header's
** Plural-Forms (without one, gettext's default n != 1): the first three n
** in 0..1000 that select it, then ", …" if there are more, e.g. "1",
** "0, 2, 3, …", "1, 21, 31, …".  NULL for other formats, a form no n in
** 0..1000 selects, or an expression that cannot be evaluated. */
const char *app_doc_plural_examples(const app_doc *d, int form);

/* Plain text of a segment string: XLIFF placeholders removed, doubled
** brackets undoubled.  *out is owned by the caller (mt_free). */
mt_status app_doc_strip_tags(const char *text, char **out);

/* ------------------------------------------------------------ atomic save */

/* Writes the contents of a file: returns MT_OK or an error with mt_seterr().
** Write errors on f need not be checked; the helper checks ferror(). */
typedef mt_status (*app_doc_write_fn)(FILE *f, void *user);

/* Creates a temporary file next to path, lets fn write it, then fflush,
** fsync, close, rename over path and fsync the directory.  The new file gets
** the permissions of the file it replaces (or 0666 & ~umask).  On any failure
** the temporary file is removed and path is untouched.  Errors: MT_ERR_IO
** (message names the path and the step; "no space left on device" for
** ENOSPC), or whatever fn returned. */
mt_status app_doc_atomic_write(const char *path, app_doc_write_fn fn, void *user);
/* The same in steps, for output written as it is produced (mtpe translate
** -o FILE): begin creates the temporary file (a->f, write to it); commit
** checks the stream, fsyncs, closes and renames it over path (errors as
** above; on failure the temporary file is removed); abort removes it.  After
** begin fails, or after commit or abort, nothing is left to release. */
typedef struct app_doc_atomic {
    FILE *f;
    bool tmp_made;
    char path[PATH_MAX], target[PATH_MAX], dir[PATH_MAX];
    char tmp[2 * PATH_MAX + 64];
} app_doc_atomic;
mt_status app_doc_atomic_begin(app_doc_atomic *a, const char *path);
mt_status app_doc_atomic_commit(app_doc_atomic *a);
void app_doc_atomic_abort(app_doc_atomic *a);
/* Test hook: the next app_doc_atomic_write() fails as if its fsync had
** returned errno err (0 disables).  Process-wide, for tests only. */
void app_doc_atomic_inject_errno(int err);
/* Test hook: PO header stamps use time t (seconds since the epoch, shown
** in the local time zone, TZ) instead of the clock; 0 restores the clock.
** Process-wide, for tests only. */
void app_doc_po_set_clock_for_tests(int64_t t);

/* ------------------------------------------------------------------- TMX */

typedef struct app_doc_tmx_row {
    const char *source, *target;     /* UTF-8 plain text                           */
    const char *src_lang, *trg_lang; /* e.g. "en", "de-DE"                        */
    int64_t time;                    /* seconds since the epoch; <= 0: no date      */
} app_doc_tmx_row;

/* Writes a TMX 1.4 file atomically: header (creationtool mtpe, srclang of the
** first row, or "*all*" when rows differ, segtype sentence, o-tmf mtpe,
** adminlang en, datatype plaintext) and one <tu> per row with a creationdate
** (YYYYMMDDThhmmssZ, UTC) and two <tuv xml:lang><seg>.  Errors:
** MT_ERR_INVALID (a row with NULL fields, invalid UTF-8, or a control
** character XML cannot carry; message names the row), MT_ERR_IO, MT_ERR_NOMEM. */
mt_status app_doc_tmx_write(const char *path, const app_doc_tmx_row *rows, int64_t n_rows);
/* The same on an open stream (`mtpe tm export` to standard output); write
** errors are the caller's to check (ferror). */
mt_status app_doc_tmx_fwrite(FILE *f, const app_doc_tmx_row *rows, int64_t n_rows);

/* ------------------------------------------ private to app/formats/doc*.c ------- */

/* Growable byte buffer (mt_try_realloc); failures are sticky. */
typedef struct app_doc_buf {
    char *data;
    size_t len, cap;
    bool failed;
} app_doc_buf;

void app_doc_buf_put(app_doc_buf *b, const void *p, size_t n);
void app_doc_buf_puts(app_doc_buf *b, const char *s);
void app_doc_buf_putc(app_doc_buf *b, char c);
/* Returns the NUL-terminated contents and resets b (caller frees), NULL if a
** put failed (then b is freed). */
char *app_doc_buf_take(app_doc_buf *b);
void app_doc_buf_free(app_doc_buf *b);

/* Per-format operations. */
typedef struct app_doc_ops {
    /* checks text for segment i (valid UTF-8 already) and applies it to the
    ** format's own representation; NULL: nothing to check.  The caller then
    ** stores the copy in targets[form]. */
    mt_status (*set_target)(app_doc *d, int64_t i, int form, const char *text);
    /* writes the whole document to f (called by app_doc_atomic_write) */
    mt_status (*save)(app_doc *d, FILE *f, app_doc_save_params p);
    void (*free_impl)(app_doc *d);
} app_doc_ops;

struct app_doc {
    app_doc_format format;
    char *path;        /* the file read (text/parallel: the source file)       */
    char *target_path; /* text/parallel: target file, may be NULL              */
    char *src_lang, *trg_lang;
    app_doc_segment *segs;
    int64_t n_segs, cap_segs;
    mt_arena *strings; /* immutable segment strings (source, context, ...)    */
    char *raw;         /* original bytes of the file rewritten on save          */
    size_t raw_len;
    const app_doc_ops *ops;
    void *impl; /* format-private data                                   */
};

/* Allocates a document with an arena; path copied. */
mt_status app_doc_alloc(app_doc_format fmt, const char *path, app_doc **out);
/* Appends a segment with n_targets empty targets; returns it in *seg. */
mt_status app_doc_add_segment(app_doc *d, int n_targets, app_doc_segment **seg);
/* Copies n bytes of s into the document's string arena (NUL-terminated). */
char *app_doc_strdup(app_doc *d, const char *s, size_t n);
/* Reads a whole file (NUL-terminated copy, *len excludes the NUL). */
mt_status app_doc_read_file(const char *path, char **data, size_t *len);
/* Replaces targets[form] of segment i with a heap copy of text. */
mt_status app_doc_store_target(app_doc *d, int64_t i, int form, const char *text);

mt_status app_doc_po_open(app_doc *d);
mt_status app_doc_xliff_open(app_doc *d);
mt_status app_doc_text_open(app_doc *d, const char *tgt_path, bool tsv);

#endif
