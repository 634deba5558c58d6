/*
** term_list.h: a glossary read from a TSV file, matched against source
** sentences, for `mtpe translate --glossary FILE` (the target terms of the
** entries whose source term occurs become lexical constraints of the MT,
** models/translator.h "Terms").
**
** STOPGAP: this is the small reader the term constraints need until the
** project's glossary module (app/formats/glossary.h, `mtpe glossary
** import`) is merged; then app_terms_load and app_terms_match should be
** replaced by that module's reader and matcher.  Nothing else depends on
** this file's format details.
**
** File format (UTF-8 text, one entry per line):
**   field 1   source term (bytes up to the first TAB), not empty
**   TAB       0x09
**   field 2   target term (up to the next TAB or the end of the line), not
**             empty
**   TAB ...   further fields (a note, ...): ignored
**   end       LF, or CR LF
** Empty lines and lines starting with '#' are skipped.  A line without a
** TAB, with an empty field or with invalid UTF-8 is an error naming the
** file and line.  An entry whose source term repeats an earlier one
** (ignoring case) is skipped: one target per source term.
**
** Matching (app_terms_match): a source term occurs in a sentence when its
** bytes appear there with ASCII letters compared case-insensitively, and
** neither the byte before nor the byte after is a letter, digit or a
** non-ASCII byte (word boundaries).  Longer source terms are tried
** first (file order among equals), and an occurrence that overlaps one
** already chosen does not count ("already" inside "already exists"), so
** with a limit the longer terms win.
*/
#ifndef APP_TERM_LIST_H
#define APP_TERM_LIST_H
#include "mt.h"

typedef struct app_terms app_terms;

/* Reads path.  MT_ERR_IO (cannot read), MT_ERR_INVALID (a bad line: the
** message names file and line), MT_ERR_NOMEM. */
mt_status app_terms_load(const char *path, app_terms **out);
void app_terms_free(app_terms *t); /* NULL is a no-op */
/* Number of entries. */
int app_terms_count(const app_terms *t);
/* Writes to out[0..max) the target terms (owned by t) of the entries whose
** source term occurs in text; returns how many (at most max). */
int app_terms_match(const app_terms *t, const char *text, const char **out, int max);
/* Whether term occurs in text with the same rules (case-insensitive ASCII,
** word boundaries). */
bool app_terms_occurs(const char *text, const char *term);

#endif
