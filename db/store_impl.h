/*
** store_impl.h: private to db/ (and white-box tests): the migration
** machinery of schema.c and access to the store's SQLite connection.
*/
#ifndef MT_STORE_IMPL_H
#define MT_STORE_IMPL_H
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* "mtpe" as PRAGMA application_id: marks a database as an mtpe store. */
#define STORE_APPLICATION_ID 0x6d747065

/* One schema migration: it turns a database at version - 1 into one at
** version.  sql (may be NULL) runs first, then fn (may be NULL), which
** sets mt_errmsg() when it fails.  Both run inside the migration's
** transaction, with foreign keys off (the checks run before COMMIT). */
typedef struct store_migration {
    int version;
    const char *what; /* one line, for messages */
    const char *sql;
    mt_status (*fn)(sqlite3 *db);
} store_migration;

/* The schema version this build writes: the number of migrations (checked
** at compile time in schema.c). */
#define STORE_SCHEMA_VERSION 4

/* The source a segment translates, as an SQL expression over the columns
** of segment (prefix "s." or ""): a PO plural entry is stored as one
** segment per form, each with the msgid as source, msgid_plural as
** plural_source and k as plural_form; form 0 translates the msgid, forms
** 1.. the msgid_plural.  The translation memory, the corpus exports and
** fine-tuning read this, never source alone.  The exact-match index of
** schema version 4 (segment_tm_eff_source) is on this same expression:
** keep the two in step (SQLite matches an indexed expression by its
** text). */
#define STORE_TM_SOURCE_SQL(p)                                                                     \
    "(CASE WHEN " p "plural_form > 0 AND " p "plural_source IS NOT NULL THEN " p                   \
    "plural_source ELSE " p "source END)"

/* The two forms the statements use: over segment, over segment s. */
#define STORE_TM_SOURCE STORE_TM_SOURCE_SQL("")
#define STORE_TM_SOURCE_S STORE_TM_SOURCE_SQL("s.")

/* The same in C, for a segment being inserted (store_segment_in fields). */
#define STORE_TM_SOURCE_OF(src, plural_src, form)                                                  \
    ((plural_src) != NULL && (form) > 0 ? (plural_src) : (src))

/* The migrations of this build: versions 1..STORE_SCHEMA_VERSION in order. */
extern const store_migration store_migrations[];
extern const int store_n_migrations;

/* Brings db (which must not be in a transaction) to target_version by
** applying steps[k] for every version above the current one, all in one
** BEGIN IMMEDIATE transaction that also sets PRAGMA user_version; on any
** failure everything is rolled back.  steps must hold versions 1..n in
** order (asserted).  A database already at or above target_version is left
** alone.  *from_version (may be NULL) receives the version found.  path
** names the database in messages.  Leaves PRAGMA foreign_keys on. */
mt_status store_migrate(sqlite3 *db, const char *path, const store_migration *steps, int n_steps,
                        int target_version, int *from_version);

/* Maps an SQLite result code to an mt_status (see store.h). */
mt_status store_status_from_sqlite(int rc);

/* Sets mt_errmsg() to "store <path>: <op>: <sqlite message> (<code name>)"
** and returns the mapped status. */
mt_status store_sqlite_error(sqlite3 *db, int rc, const char *path, const char *op);

/* The connection behind a store (tests: fault injection). */
sqlite3 *store_db(store *s);

/* For the other modules of db/ (store_glossary.c): the path the store was
** opened with (for messages), its clock (store_set_clock), and the flag
** that a listing function is calling user code (set it around such calls,
** and assert it is off on entry, as store.c's functions do). */
const char *store_path(const store *s);
int64_t store_now_ms(store *s);
bool store_in_callback(const store *s);
void store_set_in_callback(store *s, bool on);

#endif /* MT_STORE_IMPL_H */
