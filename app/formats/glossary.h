/*
** glossary.h: glossary files (TBX-Basic, CSV, TSV) and the term matcher
** (issue 30).  The entries live in the store (db/store_glossary.h); this
** module reads and writes the files `mtpe glossary` imports and exports,
** and finds the glossary's source terms in a segment for the editor's
** highlighting, the QA check (app/formats/qa.h) and the decoder's term
** constraints.
**
** Files (byte/field tables in glossary.c): UTF-8 only; a broken file (NUL
** byte, invalid UTF-8, malformed XML, an empty term, a row with the wrong
** number of fields, an unknown case value) is refused as a whole with one
** message "FILE:LINE: what", so nothing of it is imported.
**
** Matching.  Texts and terms are cut into tokens:
**   word      a maximal run of word characters: ASCII letters, digits, '_',
**             and every code point >= U+0080 that is not a space, a
**             punctuation mark or a symbol (Latin-1 U+0080..U+00BF, U+00D7,
**             U+00F7, U+2000..U+2BFF, U+2E00..U+2E7F, U+3000..U+303F,
**             U+FE30..U+FE4F, fullwidth ASCII punctuation, U+1F000..U+1FAFF)
**             and not a CJK ideograph or kana;
**   CJK       each ideograph or kana character (U+2E80..U+9FFF,
**             U+F900..U+FAFF, U+20000..U+2FFFF) is a token by itself,
**             since those scripts do not separate words;
**   other     every other character that is not white space is a token by
**             itself (punctuation: "e-mail" is e, -, mail).
** White space (ASCII blanks, line breaks, U+00A0, U+2000..U+200A, U+202F,
** U+205F, U+3000, U+FEFF) separates tokens; a token records whether white
** space comes before it.  A term occurs in a text where the text has the
** term's tokens one after another, equal after case folding (each code
** point through mt_unicode_lower, the simple Unicode lowercase: "GRÖSSE"
** does not fold to "größe") or byte for byte for a case-sensitive entry,
** with white space between the same neighbours as in the term (any amount
** and kind).  So matches start and end at word boundaries: "file" is not
** found in "profile" or "file_name", but in "file-based" and "(file)".
** A source term's last word may take a plural "s" or "es" in the text
** ("calendars", "boxes", "file managers" for calendar, box, file manager).
**
** app_glossary_match finds every occurrence of every source term, then
** keeps the longest (in bytes; ties: the earlier one, then the entry added
** first) and drops those overlapping a kept one: "file manager" wins over
** "file" and "manager".  Entries with the same source span (one term with
** several targets) are all kept, as alternatives at that span.  The
** source terms are indexed by their first folded token (a hash table), so
** a lookup costs one probe per text token plus the candidates' compares,
** whatever the glossary's size.
**
** app_glossary_target_present checks a translation for a target term with
** the same rules, except that the term's last word may go on in the text
** (an inflection or a compound: "Datei" is found in "Dateien" and
** "Dateiname", not in "Textdatei").
*/
#ifndef APP_GLOSSARY_H
#define APP_GLOSSARY_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mt.h"
#include "store.h"

/* One term pair (strings not owned). */
typedef struct app_gloss_entry {
    const char *source, *target;
    const char *note; /* "" when none */
    bool case_sensitive;
} app_gloss_entry;

/* ------------------------------------------------------------------ files */

typedef enum app_gloss_format {
    APP_GLOSS_AUTO = 0, /* by suffix (.tbx .xml, .csv, .tsv .tab .txt), then content */
    APP_GLOSS_TBX,
    APP_GLOSS_CSV,
    APP_GLOSS_TSV,
} app_gloss_format;

/* "tbx", "csv", "tsv", "auto"; and back (-1 for an unknown name). */
const char *app_gloss_format_name(app_gloss_format f);
int app_gloss_format_from_name(const char *name);

/* The entries read from a file; their strings live in the list's arena. */
typedef struct app_gloss_list {
    app_gloss_entry *v;
    int32_t n, cap;
    mt_arena *text;
    int64_t skipped; /* TBX: entries without both languages, deprecated terms */
} app_gloss_list;
void app_gloss_list_free(app_gloss_list *l); /* the list itself is not freed */

/* Reads the glossary file path (format fmt; APP_GLOSS_AUTO detects it,
** *used_fmt (may be NULL) says which) into *out (zeroed first).  src_lang,
** tgt_lang: the languages whose TBX langSets are read (primary subtag
** match: "en" takes en-US); CSV and TSV ignore them, except that a CSV/TSV
** header may name its columns by them.  On error nothing is left in *out
** and mt_errmsg() is "path:line: what". */
mt_status app_glossary_read(const char *path, app_gloss_format fmt, const char *src_lang,
                            const char *tgt_lang, app_gloss_list *out, app_gloss_format *used_fmt);

/* The same on bytes in memory (path names them in messages); fmt must not
** be APP_GLOSS_AUTO unless path has a known suffix or the bytes tell. */
mt_status app_glossary_parse(const char *path, const char *data, size_t len, app_gloss_format fmt,
                             const char *src_lang, const char *tgt_lang, app_gloss_list *out,
                             app_gloss_format *used_fmt);

/* Writes entries as TSV (with the header row "source<TAB>target<TAB>note
** <TAB>case"; tabs and line breaks inside a field become spaces) or as
** TBX-Basic (one termEntry per entry, the note as a <note> of the source
** term, case-sensitive entries marked by a termNote the reader honours). */
mt_status app_glossary_write_tsv(FILE *f, const app_gloss_entry *e, int32_t n);
mt_status app_glossary_write_tbx(FILE *f, const app_gloss_entry *e, int32_t n, const char *src_lang,
                                 const char *tgt_lang);

/* ---------------------------------------------------------------- matcher */

typedef struct app_glossary app_glossary;

/* A matcher over copies of n entries (entries with an empty source or
** target are left out).  MT_ERR_NOMEM. */
mt_status app_glossary_new(const app_gloss_entry *e, int32_t n, app_glossary **out);

/* A matcher over the store's entries of project (its own and the global
** ones; NULL or "" = the global ones only) for the languages given (NULL
** or "": any). */
mt_status app_glossary_load(store *s, const char *project, const char *src_lang,
                            const char *tgt_lang, app_glossary **out);
/* A matcher over the entries of the glossary file path (any format
** app_glossary_read detects; src_lang, tgt_lang pick TBX langSets).
** Errors as app_glossary_read's, MT_ERR_NOMEM. */
mt_status app_glossary_load_file(const char *path, const char *src_lang, const char *tgt_lang,
                                 app_glossary **out);
void app_glossary_free(app_glossary *g); /* NULL is a no-op */

int32_t app_glossary_count(const app_glossary *g);
/* Entry i (0 <= i < count), as given to app_glossary_new (copies). */
const app_gloss_entry *app_glossary_entry(const app_glossary *g, int32_t i);

/* One occurrence of a source term: bytes [start, start + len) of the text,
** entry the index of the entry whose source it is. */
typedef struct app_gloss_match {
    int32_t start, len;
    int32_t entry;
} app_gloss_match;

/* The occurrences of g's source terms in text (rules above), in text order;
** alternatives at the same span follow each other in entry order.  *out
** is mt_free()d by the caller (NULL when *n == 0).  g NULL: none.
** MT_ERR_NOMEM. */
mt_status app_glossary_match(const app_glossary *g, const char *text, app_gloss_match **out,
                             int32_t *n);

/* The same for the target terms: their occurrences in text (a
** translation), whole words, folded unless the entry is case-sensitive,
** longest first, without the inflection tolerance of
** app_glossary_target_present.  For the spell checker: words inside these
** spans are never flagged. */
mt_status app_glossary_match_targets(const app_glossary *g, const char *text, app_gloss_match **out,
                                     int32_t *n);

/* The target terms to enforce in the MT of text (models/translator.h
** "Terms", `mtpe translate --glossary`, the editor): one per matched span
** of app_glossary_match (its first alternative), each distinct target
** once; when there are more than max, the longest source spans win (ties:
** the earlier).  Writes up to max pointers (owned by g) to out, in text
** order, and returns how many; 0 when g is NULL.  MT_ERR_NOMEM: -1. */
int app_glossary_constraints(const app_glossary *g, const char *text, const char **out, int max);

/* Whether text holds the term (a target term; rules above). */
bool app_glossary_target_present(const char *text, const char *term, bool case_sensitive);

/* Whether text holds the term exactly as a match would: word boundaries on
** both sides, folded unless case_sensitive. */
bool app_glossary_term_present(const char *text, const char *term, bool case_sensitive);

#endif
