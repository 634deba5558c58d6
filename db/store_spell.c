/*
** store_spell.c: the personal dictionary and the glossary's target terms
** for the spell checker (store_spell.h).  The statements are prepared per
** call: these run when the editor opens and when the translator adds a
** word, not per keystroke.
**
** Rows read (schema version 4, db/schema.c):
**   spell_word(lang TEXT, word TEXT, added_ms INTEGER), key (lang, word)
**   glossary_entry(..., tgt_lang TEXT, ..., target TEXT, ...): target only
** The time added is taken from SQLite's clock (milliseconds since the
** epoch, julianday('now')).
*/
#include <stdio.h>
#include <string.h>

#include "mt_base.h"
#include "store_impl.h"
#include "store_spell.h"

static const char *db_name(sqlite3 *db) {
    const char *f = sqlite3_db_filename(db, "main");
    return f && f[0] ? f : ":memory:";
}

static mt_status prepare(sqlite3 *db, const char *sql, const char *op, sqlite3_stmt **st) {
    int rc = sqlite3_prepare_v2(db, sql, -1, st, NULL);
    if (rc != SQLITE_OK) return store_sqlite_error(db, rc, db_name(db), op);
    return MT_OK;
}

/* Steps st to its end, calling fn with column 0 of every row. */
static mt_status each_word(sqlite3 *db, sqlite3_stmt *st, const char *op, store_word_fn fn,
                           void *user) {
    int rc;
    mt_status ret = MT_OK;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *w = (const char *)sqlite3_column_text(st, 0);
        if (w == NULL) continue;
        if (fn(user, w) != 0) {
            ret = MT_ABORTED;
            break;
        }
    }
    if (ret == MT_OK && rc != SQLITE_DONE) ret = store_sqlite_error(db, rc, db_name(db), op);
    sqlite3_finalize(st);
    return ret;
}

mt_status store_spell_words(store *s, const char *lang, store_word_fn fn, void *user) {
    MT_ASSERT(s != NULL && lang != NULL && fn != NULL);
    sqlite3 *db = store_db(s);
    sqlite3_stmt *st;
    const char *op = "personal dictionary";
    mt_status rc = prepare(db, "SELECT word FROM spell_word WHERE lang = ?1", op, &st);
    if (rc != MT_OK) return rc;
    sqlite3_bind_text(st, 1, lang, -1, SQLITE_STATIC);
    return each_word(db, st, op, fn, user);
}

static mt_status write_word(store *s, const char *sql, const char *lang, const char *word,
                            const char *op) {
    MT_ASSERT(s != NULL);
    if (lang == NULL || lang[0] == '\0' || word == NULL || word[0] == '\0')
        return mt_seterr(MT_ERR_INVALID, "%s: empty %s", op, lang && lang[0] ? "word" : "language");
    sqlite3 *db = store_db(s);
    sqlite3_stmt *st;
    mt_status ret = prepare(db, sql, op, &st);
    if (ret != MT_OK) return ret;
    sqlite3_bind_text(st, 1, lang, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, word, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) ret = store_sqlite_error(db, rc, db_name(db), op);
    sqlite3_finalize(st);
    return ret;
}

mt_status store_spell_add_word(store *s, const char *lang, const char *word) {
    return write_word(s,
                      "INSERT OR IGNORE INTO spell_word (lang, word, added_ms) VALUES (?1, ?2,"
                      " CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER))",
                      lang, word, "add to the personal dictionary");
}

mt_status store_spell_remove_word(store *s, const char *lang, const char *word) {
    return write_word(s, "DELETE FROM spell_word WHERE lang = ?1 AND word = ?2", lang, word,
                      "remove from the personal dictionary");
}

mt_status store_glossary_target_words(store *s, const char *tgt_lang, store_word_fn fn,
                                      void *user) {
    MT_ASSERT(s != NULL && fn != NULL);
    /* the primary subtag: "de" of "de_DE" / "de-AT" */
    char primary[16] = "";
    if (tgt_lang) {
        size_t n = strcspn(tgt_lang, "-_");
        if (n >= sizeof primary) n = sizeof primary - 1;
        memcpy(primary, tgt_lang, n);
        primary[n] = '\0';
    }
    sqlite3 *db = store_db(s);
    sqlite3_stmt *st;
    const char *op = "glossary target terms";
    mt_status rc = prepare(db,
                           "SELECT DISTINCT target FROM glossary_entry WHERE ?1 = '' OR"
                           " tgt_lang = '' OR lower(replace(tgt_lang, '_', '-')) = lower(?1)"
                           " OR lower(replace(tgt_lang, '_', '-')) LIKE lower(?1) || '-%'"
                           " ORDER BY target",
                           op, &st);
    if (rc != MT_OK) return rc;
    sqlite3_bind_text(st, 1, primary, -1, SQLITE_TRANSIENT);
    return each_word(db, st, op, fn, user);
}
