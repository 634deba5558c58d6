/*
** store_spell.h: what the spell checker of the editor (app/edit/spell.h)
** reads from and writes to the store (schema version 4, db/schema.c).
**
**   spell_word       the personal dictionary: words the translator added,
**                    by dictionary name ("de_DE", "en_US"), kept across
**                    sessions
**   glossary_entry   the glossary's target terms, read only: a word of a
**                    target term is never flagged as misspelled
**
** Conventions as in store.h: errors are mt_status with the detail in
** mt_errmsg(); listing functions call fn once per row with strings valid
** only during the call (fn returns nonzero to stop: MT_ABORTED) and fn
** must not call back into the store.
*/
#ifndef MT_STORE_SPELL_H
#define MT_STORE_SPELL_H
#include <stdint.h>

#include "store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Called once per word (or term) of a listing. */
typedef int (*store_word_fn)(void *user, const char *word);

/* The personal dictionary of lang (a dictionary name such as "de_DE";
** compared byte for byte), in no particular order. */
mt_status store_spell_words(store *s, const char *lang, store_word_fn fn, void *user);

/* Adds word (UTF-8, not empty) to the personal dictionary of lang, with the
** time now; a word already there is left as it is (MT_OK).  MT_ERR_INVALID
** for an empty word or language. */
mt_status store_spell_add_word(store *s, const char *lang, const char *word);

/* Removes word from the personal dictionary of lang; MT_OK also when it
** was not there. */
mt_status store_spell_remove_word(store *s, const char *lang, const char *word);

/* The distinct target terms of every glossary entry (all projects) whose
** target language fits tgt_lang: the entry's tgt_lang is '' (any), or has
** the same primary subtag as tgt_lang, case-insensitively, with '-' and
** '_' alike ("de" fits "de", "de-AT", "de_DE"; "de-AT" fits "de" too).
** tgt_lang NULL or "": every entry. */
mt_status store_glossary_target_words(store *s, const char *tgt_lang, store_word_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif /* MT_STORE_SPELL_H */
