/*
** spell.h: spell checking of translations with hunspell (issue 30), for the
** editor's field (app/cmd_edit.c wires it to ui_hooks.spell, .spell_suggest
** and .spell_add) and for tests.
**
** Dictionary.  The document's target language picks a hunspell dictionary
** (a pair NAME.aff + NAME.dic): "de" -> de_DE, "de-AT" / "de_AT" -> de_AT
** when there is one, else de_DE; "en" -> en_US, "en-GB" -> en_GB, else
** en_US; other languages LL -> LL_RR of a small table (fr_FR, es_ES, ...),
** then LL, then the first LL_*.dic of the directory.  Directories searched
** in order: each entry of $MTPE_DICPATH and of $DICPATH (':'-separated),
** then /usr/share/hunspell, /usr/share/myspell/dicts, /usr/share/myspell.
** No dictionary for the language is not an error for the editor: spell
** checking is off (app_spell_open says MT_ERR_NOTFOUND, with a message
** naming the language and the directories searched).
**
** Words.  A word is a run of letters (and digits and combining marks),
** with the apostrophes ' ’ and hyphens '-' inside it ("don't",
** "E-Mail-Adresse").  Never flagged, whatever the dictionary says:
**   - placeholders and markup as the segment anatomy finds them
**     (app_ph_scan: printf/Python/KDE placeholders, {name}, tags, entities,
**     --options, $VARS, URLs, XLIFF tags), which are not words at all;
**   - e-mail addresses, host names and paths: every word of a
**     blank-delimited chunk holding '@', "://", "www.", or starting with
**     '/', '~' or '\';
**   - words with a digit, with '.' or '_' inside (file.txt, file_name),
**     of a single letter, or with a capital after the first letter
**     (capitals only: PDF, USB; camel case: LibreOffice, setValue,
**     KAlgebra);
**   - the translator's personal dictionary (store_spell_words of the
**     dictionary's name) and every word of a glossary target term
**     (store_glossary_target_words), also with the first letter in lower
**     case (a term at the start of a sentence).
** A word the dictionary rejects that is followed by '.' is tried with the
** '.' too (abbreviations: "usw.").  A hyphenated word the dictionary
** rejects as a whole is judged by its parts, each by the rules above:
** the parts that are wrong are flagged ("Mial" of "E-Mial-Adresse"); a
** part left alone by a rule (the acronym of "CDDB-Server") leaves the
** judgement to the others; when every part is a dictionary word, the
** whole word is flagged.
**
** The dictionary's own encoding (its .aff file's "SET" line; hunspell's
** default ISO8859-1) is converted to and from UTF-8 with iconv when it is
** not UTF-8; a word that cannot be converted is not flagged.
**
** Speed: each distinct word is looked up once; the results are cached
** (up to APP_SPELL_CACHE words, then the cache starts afresh).
*/
#ifndef APP_SPELL_H
#define APP_SPELL_H
#include <stdbool.h>
#include <stddef.h>

#include "mt.h"
#include "store.h"

#define APP_SPELL_CACHE 65536

typedef struct app_spell app_spell;

/* A misspelled word: bytes [at, at + len) of the checked text. */
typedef struct app_spell_span {
    size_t at, len;
} app_spell_span;

/* The dictionary for lang ("de", "de-AT", "en_US", ...): its name ("de_DE",
** name_n bytes) and the path of its files without the suffix (path_n
** bytes: PATH.aff, PATH.dic).  MT_ERR_NOTFOUND (message: language and
** directories) when there is none; MT_ERR_INVALID for an empty lang. */
mt_status app_spell_find(const char *lang, char *name, size_t name_n, char *path, size_t path_n);

/* Opens the checker for lang (app_spell_find).  st (may be NULL: none)
** gives the personal dictionary and the glossary's target terms, and
** keeps the words app_spell_add adds; it must outlive the checker.
** MT_ERR_NOTFOUND: no dictionary (spell checking off); MT_ERR_FORMAT:
** hunspell cannot load it or its encoding is unknown to iconv; store
** errors as the store reports them; MT_ERR_NOMEM. */
mt_status app_spell_open(const char *lang, store *st, app_spell **out);
void app_spell_free(app_spell *sp); /* NULL is a no-op */

/* The dictionary's name ("de_DE"). */
const char *app_spell_dict(const app_spell *sp);

/* Whether the word w[0..n) is spelled right, by the rules above (n bytes
** of UTF-8 holding one word). */
bool app_spell_word_ok(app_spell *sp, const char *w, size_t n);

/* The misspelled words of text (UTF-8), in order: the first max go to out
** (out may be NULL when max is 0).  Returns how many there are, or -1 out
** of memory (mt_errmsg). */
int app_spell_check(app_spell *sp, const char *text, app_spell_span *out, int max);

/* Up to max suggestions for word, best first (hunspell's order), as
** mt_malloc'd UTF-8 strings in out[0..return); free each with mt_free.
** Returns the count (0: none), -1 out of memory. */
int app_spell_suggest(app_spell *sp, const char *word, char **out, int max);

/* Adds word to the personal dictionary: in the store (when the checker
** has one) and in the live dictionary, so it is no longer flagged.
** MT_ERR_INVALID for an empty word or one with blanks; store errors. */
mt_status app_spell_add(app_spell *sp, const char *word);

/* Accepts every word of term from now on, in memory only (glossary
** terms; app_spell_open reads the store's).  MT_ERR_NOMEM. */
mt_status app_spell_allow_term(app_spell *sp, const char *term);

#endif
