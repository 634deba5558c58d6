/*
** corpus_io.h: parallel text for training from translation files, and
** export of the store's confirmed segments (`mtpe corpus`, app/cmd_corpus.c).
**
** Building (app_corpus_build) reads gettext PO and MO, XLIFF 1.2 and TMX
** files and writes line-aligned PREFIX.<src-lang> / PREFIX.<trg-lang> files
** and/or a "source<TAB>target" file, one segment pair per line:
**
**   - kept: translated entries (PO/MO: msgstr[0] not empty, gettext's rule;
**     XLIFF: a confirmed target, see doc.h; TMX: a <tu> with a <tuv> in each
**     language).  Fuzzy PO entries and XLIFF drafts (needs-*, new, ...) only
**     with include_fuzzy.  Skipped: the PO header, obsolete (#~) entries,
**     XLIFF units with translate="no".
**   - plural entries give one pair per form: msgid/msgstr[0], then
**     msgid_plural/msgstr[k] for k >= 1 (an empty form gives no pair).
**   - line breaks and tabs inside a segment become spaces, since a
**     line-based corpus cannot hold them: LF, CR, CR LF (one space), TAB,
**     VT, FF, U+0085, U+2028, U+2029.  Nothing else is changed: no trimming,
**     no Unicode normalisation.
**   - XLIFF inline tags are removed (app_doc_strip_tags), with the native
**     code they hold: <ph>%1</ph> leaves nothing, so such a unit loses its
**     placeholder.  TMX inline codes (<bpt> <ept> <it> <ph> <ut>) are
**     dropped the same way and the text of <hi> kept.
**   - optional: accelerator markers removed (app_corpus_strip_accelerators),
**     exact duplicate pairs removed (the first one is kept).
**   - a pair whose source or target is empty (or only white space) after
**     these steps is dropped.
**   - a file that names its languages (PO "Language:", MO header, XLIFF
**     source-/target-language) and names others than requested is skipped
**     with a warning (see app_corpus_lang_match).
** All outputs are written at the end, together: each to a temporary file
** next to it, all fsynced, then all renamed.  Any error before the renames
** (a bad input file, a full disk) leaves every output as it was.
**
** Languages are codes such as "en", "de", "pt-BR", "de_DE".
*/
#ifndef APP_CORPUS_IO_H
#define APP_CORPUS_IO_H
#include <stdbool.h>
#include <stdint.h>

#include "mt.h"
#include "store.h"

/* ------------------------------------------------------ file formats */

typedef enum app_corpus_kind {
    APP_CORPUS_PO = 0,
    APP_CORPUS_MO,
    APP_CORPUS_XLIFF,
    APP_CORPUS_TMX,
} app_corpus_kind;

const char *app_corpus_kind_name(app_corpus_kind k); /* "po", "mo", "xliff", "tmx" */

/* By suffix (.po .pot, .mo .gmo, .xlf .xliff, .tmx, any case), else by
** content: the MO magic number, an XML root element <xliff> or <tmx>, a
** line starting with msgid.  MT_ERR_IO (unreadable), MT_ERR_FORMAT (none of
** these; the message names the file). */
mt_status app_corpus_detect(const char *path, app_corpus_kind *out);

/* One entry of a MO file; strings are NUL-terminated and point into the
** app_mo that holds them.  context and msgid_plural are NULL when absent.
** n_msgstr is 1 for a plain entry, the number of forms for a plural one. */
typedef struct app_mo_entry {
    const char *context, *msgid, *msgid_plural;
    const char **msgstr;
    int n_msgstr;
} app_mo_entry;

typedef struct app_mo {
    app_mo_entry *entries; /* in file order, the header (msgid "") excluded */
    int64_t n_entries;
    const char *header;   /* msgstr of the header entry, "" when none       */
    const char *language; /* its "Language:" value, NULL when none          */
    char *data;           /* private: the file                              */
    const char **forms;   /* private: storage of every msgstr array        */
    char *lang_buf;       /* private */
    mt_arena *converted;  /* private: strings converted to UTF-8            */
} app_mo;

/* Reads a GNU MO file (byte table in corpus_io.c).  Errors name the file:
** MT_ERR_IO, MT_ERR_FORMAT (bad magic, truncated, a string past the end of
** the file or not NUL-terminated, invalid UTF-8, or invalid in the charset
** the header names: other charsets are converted to UTF-8),
** MT_ERR_UNSUPPORTED (major revision > 1, a charset iconv does not know),
** MT_ERR_NOMEM.  On success *out
** owns the result: free with app_mo_free. */
mt_status app_mo_read(const char *path, app_mo **out);
void app_mo_free(app_mo *m); /* NULL is a no-op */

/* Called once per <tu> of a TMX file with the plain text of the first <tuv>
** in each wanted language, NULL where the unit has none.  Return 0 to go on,
** nonzero to stop (app_tmx_read then returns MT_ABORTED). */
typedef int (*app_tmx_fn)(void *user, const char *src, const char *trg);

/* Reads a TMX file (1.1-1.4: xml:lang or lang on <tuv>).  Errors: MT_ERR_IO,
** MT_ERR_FORMAT ("file:line: what" for malformed XML, or a root other than
** <tmx>), MT_ERR_NOMEM, or MT_ABORTED. */
mt_status app_tmx_read(const char *path, const char *src_lang, const char *trg_lang, app_tmx_fn fn,
                       void *user);

/* ---------------------------------------------------- text helpers */

/* True when a language code `have` read from a file is the requested
** `want`: equal ignoring case and '-'/'_', or one of them is a bare language
** and the other that language with a region, script or variant ("de"
** matches "de-DE", "de_AT", "de_DE.UTF-8" and the other way round; "de-DE"
** does not match "de-AT"). */
bool app_corpus_lang_match(const char *want, const char *have);

/* Replaces line breaks and tabs by spaces, in place (list in the header
** comment); the string never grows. */
void app_corpus_flatten(char *s);

/* Removes accelerator markers from a source/target pair, in place, with the
** rules the project's training corpus was built with (shared/data recipe):
**   - a marker is '_' or '&' followed by a letter or digit; "__" and "&&"
**     are escapes, not markers; '&' starting an entity (&amp; &#38; &#x26;)
**     is not a marker;
**   - each kind is removed only when each side has at most one marker of
**     it, and at least one side has one;
**   - '_' between a letter/digit and a letter/digit is kept when the word
**     holding it also occurs as a word of the target (identifiers such as
**     file_name copied verbatim), or the word looks like a_bc_...;
**     a target-only '_' inside a lower-case word that is not capitalised
**     (magic_quotes_gpc) is kept;
**   - '&' is kept in AT&T-like words (1-3 capitals '&' 1-3 capitals), and a
**     target-only '&' is kept (most likely a literal ampersand);
**   - finally "&&" becomes "&" when both sides hold one.
** Letters beyond ASCII are recognised approximately (Latin, Greek, Cyrillic
** case pairs; most non-ASCII characters outside punctuation and symbol
** blocks count as letters).  The strings never grow. */
void app_corpus_strip_accelerators(char *src, char *trg);

/* Parses an ISO 8601 date or date-time into ms since the epoch:
** YYYY-MM-DD, YYYY-MM-DD[T ]hh:mm[:ss[.fff]] and the basic form
** YYYYMMDD[Thhmm[ss]] (TMX creationdate), each with an optional zone: Z,
** +hh, +hh:mm, +hhmm (or -).  Without a zone the time is local time.
** MT_ERR_INVALID for anything else (message quotes the text). */
mt_status app_parse_iso8601(const char *s, int64_t *ms);

/* ----------------------------------------------------------- build */

typedef struct app_corpus_build_params {
    const char *const *files;
    int n_files;
    const char *src_lang, *trg_lang; /* required                                */
    const char *out_prefix;          /* PREFIX.<src_lang>, PREFIX.<trg_lang>; NULL: none */
    const char *tsv_path;            /* NULL: none (at least one output)         */
    bool include_fuzzy, dedup, strip_accelerators;
} app_corpus_build_params;

typedef struct app_corpus_stats {
    int64_t files;            /* files read                                      */
    int64_t files_other_lang; /* files skipped: they name other languages       */
    int64_t entries;          /* entries / translation units / <tu>s read       */
    int64_t pairs;            /* pairs written                                  */
    int64_t untranslated;     /* entries without a translation                  */
    int64_t fuzzy;            /* fuzzy entries / draft targets left out         */
    int64_t obsolete;         /* obsolete PO entries (#~)                       */
    int64_t no_lang;          /* TMX <tu>s without a <tuv> in both languages    */
    int64_t empty;            /* pairs empty after cleaning (or empty plural form) */
    int64_t duplicates;       /* pairs dropped by dedup                          */
    int64_t documents;        /* export: documents exported                     */
    int64_t before_since;     /* export: confirmed before --since               */
    int64_t superseded;       /* export: older versions' translations left out  */
} app_corpus_stats;

/* Builds the corpus (see the header comment).  Errors name the file:
** MT_ERR_INVALID (parameters), and the readers' and writers' errors.  *st
** is filled as far as the work went. */
mt_status app_corpus_build(const app_corpus_build_params *p, app_corpus_stats *st);

/* ---------------------------------------------------------- export */

typedef struct app_corpus_export_params {
    const char *document;            /* only documents stored with this path (as given, or
                                        the same file after resolving both); NULL: all */
    int64_t since_ms;                /* only segments confirmed at or after; INT64_MIN: all */
    const char *tmx_path;            /* TMX 1.4 (app_doc_tmx_write); NULL: none       */
    const char *tsv_path;            /* source<TAB>target, flattened; NULL: none      */
    const char *src_lang, *trg_lang; /* when set, only documents in these languages */
    bool strip_accelerators, dedup;
    bool history; /* also the confirmed translations each save wrote, and
                     every imported version's; false: the final translation
                     of each segment (its newest version's)                 */
} app_corpus_export_params;

/* Writes the latest confirmation of every confirmed segment (of one
** document or all, segments by index).  Every :w stores the segments it
** changed (store_add_version); a file changed elsewhere is imported as a
** new document.  Without history only the final translation of a segment
** is written: the segment (same path, index and source) of the newest
** document that has it confirmed; with history also every save's
** confirmed segments (oldest first) and every document's rows.
** Documents by id.  XLIFF segments
** lose their inline-tag placeholders.  TMX keeps line breaks; TSV flattens
** them.  Rows with an empty side are left out.  Errors: MT_ERR_NOTFOUND (no
** document with that path), MT_ERR_INVALID, the store's and writers'. */
mt_status app_corpus_export(store *s, const app_corpus_export_params *p, app_corpus_stats *st);

#endif
