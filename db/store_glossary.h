/*
** store_glossary.h: the glossary (term base) of the store, schema version 4
** (table glossary_entry, see schema.c).
**
** An entry is one term pair: a source term, its target term, an optional
** note, and whether the source term is matched case-sensitively.  Entries
** belong to a project, a free-form name: '' holds the global entries, which
** apply to every project; a named project sees its own entries and the
** global ones.  Each entry has a source and a target language ('' = any).
**
** Entries are unique by (project, src_lang, tgt_lang, source, target):
** adding one that exists changes nothing (INSERT OR IGNORE), so importing
** the same file twice adds nothing the second time.  The note, the case
** flag and the origin of an entry that exists stay as they were.
**
** Languages match as app_corpus_lang_match does, by primary subtag: a
** filter "en" takes entries of "en", "en-US" and "en_GB" (and those of '');
** a filter "en-US" takes "en", "en-US" and '' but not "en-GB".  Case and
** '-' / '_' are ignored.
**
** Conventions as in store.h (mt_status, listing callbacks, strings valid
** only during the call, fn must not call back into the store).
*/
#ifndef MT_STORE_GLOSSARY_H
#define MT_STORE_GLOSSARY_H
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct store_gloss_entry {
    int64_t id;           /* row id; ignored by store_glossary_add       */
    const char *project;  /* '' = global (every project); NULL as ''     */
    const char *src_lang; /* '' = any; NULL as ''                        */
    const char *tgt_lang; /* '' = any; NULL as ''                        */
    const char *source;   /* the source term, not empty                  */
    const char *target;   /* the target term, not empty                  */
    const char *note;     /* '' when none; NULL as ''                    */
    bool case_sensitive;  /* match the source term's case exactly        */
    const char *origin;   /* the file it was imported from; NULL as ''   */
    int64_t added_ms;     /* set by the store; ignored by add            */
} store_gloss_entry;
typedef int (*store_gloss_fn)(void *user, const store_gloss_entry *e);

/* Adds n entries in one transaction; entries that exist are left alone.
** *n_added (may be NULL) gets how many rows were new.  MT_ERR_INVALID (and
** nothing written) when an entry has a NULL or empty source or target. */
mt_status store_glossary_add(store *s, const store_gloss_entry *e, int32_t n, int32_t *n_added);

/* Which entries a listing or count takes. */
typedef struct store_gloss_filter {
    const char *project;             /* NULL: every project; else this project's entries */
    bool with_global;                /* and the global ones (project '') too             */
    const char *src_lang, *tgt_lang; /* NULL or '': any; else as above     */
} store_gloss_filter;

/* The entries the filter takes, in the order they were added (global ones
** first when with_global). */
mt_status store_glossary_list(store *s, const store_gloss_filter *f, store_gloss_fn fn, void *user);

/* How many entries the filter takes. */
mt_status store_glossary_count(store *s, const store_gloss_filter *f, int64_t *n);

/* Deletes one entry by id; MT_ERR_NOTFOUND when there is none. */
mt_status store_glossary_delete(store *s, int64_t id);

/* Deletes every entry of a project ('' = the global entries, not the
** others); *n_deleted (may be NULL) gets how many. */
mt_status store_glossary_clear(store *s, const char *project, int64_t *n_deleted);

/* True when language code `entry` (from an entry) is taken by a filter
** language `want` (rules above); '' or NULL on either side matches. */
bool store_glossary_lang_match(const char *want, const char *entry);

#ifdef __cplusplus
}
#endif
#endif /* MT_STORE_GLOSSARY_H */
