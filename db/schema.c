/*
** schema.c: the store's schema and its migrations.
**
** A store is an SQLite 3 database.  SQLite reads the file; mtpe relies on
** two fields of its 100-byte header, which it reads and writes through
** PRAGMAs (big-endian on disk):
**
**   OFFSET  SIZE  DESCRIPTION
**      0     16   "SQLite format 3\0"; anything else is SQLITE_NOTADB
**     60      4   PRAGMA user_version: schema version of the store
**                 (0 = empty database, 1.. = store_migrations[version - 1])
**     68      4   PRAGMA application_id: 0x6d747065 ("mtpe") in a store
**
** Migrations: store_migrations[k] turns a version-k database into a
** version-(k+1) one.  Steps are never edited once released (a store made by
** an older mtpe went through them); a schema change is a new step appended
** to the array, with a test that seeds data at the old version (see
** tests/test_store.c).  All pending steps run in one transaction, so a
** crash or failure leaves the store at its old version, untouched.
**
** Version 1 (tables; *_ms are ms since the Unix epoch):
**   doc_format, segment_status, edit_kind, run_status
**                  code -> name of the enums of store.h (foreign-key targets)
**   document       one file version: path, format, languages, content hash,
**                  created/opened times, cursor (segment index, byte offset)
**   segment        document, index, source, context, plural source and form,
**                  original and current target, status, source words,
**                  time spent, last change
**   model          a model file: path (unique), name, kind, created
**   mt_output      one MT result shown for a segment: model, time, n-best size
**   mt_hypothesis  its n-best entries: rank (0 = best), text, score
**   edit           every edit event: segment, kind, whole text after it,
**                  time, time spent and keystrokes so far, the MT output
**                  and rank it started from
**   confirmation   segment, final text, time, time spent, its CONFIRM event
**   finetune_run   base and output model, status, start/end, edits used
**                  (count, up to time), log path, metrics (JSON object)
**
** Version 2 (saving a document records what changed, not a full copy):
**   segment.original_status   the status the segment was imported with
**                  (NULL in rows imported before version 2)
**   doc_version    one save of a document: the written file's content
**                  hash, the time, the number of segments it changed
**   segment_version  the segments a save changed: target and status as
**                  written, for each segment whose (target, status)
**                  differs from its previous save's (or, before the first
**                  save, from the imported one)
**
** Version 3 (translation memory, db/store_tm.h):
**   doc_format     adds 4 'tmx' and 5 'tsv' (imported memories)
**   document.origin  0: opened in the editor, 1: imported by `mtpe tm import`
**   segment.tm_terms  the index terms of the source as a JSON array of
**                  distinct strings (store_tm_terms_json), set for every
**                  segment when it is inserted; the migration fills it
**   segment_tm_source  index on the source of the confirmed segments
**                  (exact matches)
**   tm_fts         FTS5 table, contentless, detail=none, unicode61 without
**                  diacritics removal: row id = segment id, one row per
**                  confirmed segment, its tm_terms as the text (the JSON
**                  punctuation separates the terms)
**   tm_term        each index term of the confirmed segments and the number
**                  of them holding it (document frequency)
**   triggers tm_segment_insert / _update / _delete keep tm_fts and tm_term
**                  in step with the segments whose status is 3 (confirmed),
**                  whoever writes them
**
** Version 4 (glossary and spell checking):
**   glossary_entry one term pair of a project's glossary: project name
**                  ('' = every project), source and target languages ('' =
**                  any), source term, target term, note, case-sensitive
**                  flag, the file it was imported from, time added; unique
**                  by (project, languages, source, target), so importing
**                  the same file twice adds nothing
**   glossary_source  index on (project, lower(source)) for lookups
**   spell_word     the personal dictionary: words the user added, by
**                  language ('de_DE', 'en_US', ...), with the time added
**   segment_tm_eff_source  replaces segment_tm_source: index on the source
**                  a confirmed segment translates (STORE_TM_SOURCE_SQL of
**                  store_impl.h: msgid_plural for the plural forms 1.. of
**                  a PO entry, else source), for exact matches
**   segment.tm_terms  of plural forms 1.. recomputed from msgid_plural
**                  (version 3 indexed every form under the msgid, so the
**                  TM paired the msgid with the plural translations)
*/
#include <stdio.h>

#include "mt_base.h"
#include "store_impl.h"
#include "store_tm.h"

static const char schema_v1[] =
    "PRAGMA application_id = 1836347493;\n" /* 0x6d747065 "mtpe" */
    "CREATE TABLE doc_format (code INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE) STRICT;\n"
    "INSERT INTO doc_format VALUES (0, 'po'), (1, 'xliff'), (2, 'text'), (3, 'moses');\n"
    "CREATE TABLE segment_status (code INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE) STRICT;\n"
    "INSERT INTO segment_status VALUES (0, 'new'), (1, 'mt'), (2, 'edited'), (3, 'confirmed');\n"
    "CREATE TABLE edit_kind (code INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE) STRICT;\n"
    "INSERT INTO edit_kind VALUES (0, 'typed'), (1, 'accept_word'), (2, 'accept_all'),\n"
    "    (3, 'nbest_pick'), (4, 'undo'), (5, 'confirm');\n"
    "CREATE TABLE run_status (code INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE) STRICT;\n"
    "INSERT INTO run_status VALUES (0, 'running'), (1, 'done'), (2, 'failed'), (3, 'cancelled');\n"
    "CREATE TABLE document (\n"
    "    id INTEGER PRIMARY KEY,\n"
    "    path TEXT NOT NULL,\n"
    "    format INTEGER NOT NULL REFERENCES doc_format(code),\n"
    "    src_lang TEXT NOT NULL,\n"
    "    tgt_lang TEXT NOT NULL,\n"
    "    content_hash TEXT NOT NULL,\n"
    "    created_ms INTEGER NOT NULL,\n"
    "    opened_ms INTEGER NOT NULL,\n"
    "    cursor_segment INTEGER NOT NULL DEFAULT 0 CHECK (cursor_segment >= 0),\n"
    "    cursor_offset INTEGER NOT NULL DEFAULT 0 CHECK (cursor_offset >= 0),\n"
    "    UNIQUE (path, content_hash)\n"
    ") STRICT;\n"
    "CREATE TABLE segment (\n"
    "    id INTEGER PRIMARY KEY,\n"
    "    document_id INTEGER NOT NULL REFERENCES document(id) ON DELETE CASCADE,\n"
    "    idx INTEGER NOT NULL CHECK (idx >= 0),\n"
    "    source TEXT NOT NULL,\n"
    "    context TEXT,\n"
    "    plural_source TEXT,\n"
    "    plural_form INTEGER CHECK (plural_form >= 0),\n"
    "    original_target TEXT,\n"
    "    target TEXT,\n"
    "    status INTEGER NOT NULL DEFAULT 0 REFERENCES segment_status(code),\n"
    "    source_words INTEGER NOT NULL DEFAULT 0 CHECK (source_words >= 0),\n"
    "    time_spent_ms INTEGER NOT NULL DEFAULT 0 CHECK (time_spent_ms >= 0),\n"
    "    updated_ms INTEGER NOT NULL,\n"
    "    UNIQUE (document_id, idx)\n"
    ") STRICT;\n"
    "CREATE TABLE model (\n"
    "    id INTEGER PRIMARY KEY,\n"
    "    path TEXT NOT NULL UNIQUE,\n"
    "    name TEXT NOT NULL,\n"
    "    kind TEXT NOT NULL,\n"
    "    created_ms INTEGER NOT NULL\n"
    ") STRICT;\n"
    "CREATE TABLE mt_output (\n"
    "    id INTEGER PRIMARY KEY,\n"
    "    segment_id INTEGER NOT NULL REFERENCES segment(id) ON DELETE CASCADE,\n"
    "    model_id INTEGER REFERENCES model(id) ON DELETE SET NULL,\n"
    "    created_ms INTEGER NOT NULL,\n"
    "    n_best INTEGER NOT NULL CHECK (n_best >= 1)\n"
    ") STRICT;\n"
    "CREATE INDEX mt_output_segment ON mt_output(segment_id);\n"
    "CREATE TABLE mt_hypothesis (\n"
    "    output_id INTEGER NOT NULL REFERENCES mt_output(id) ON DELETE CASCADE,\n"
    "    rank INTEGER NOT NULL CHECK (rank >= 0),\n"
    "    text TEXT NOT NULL,\n"
    "    score REAL,\n"
    "    PRIMARY KEY (output_id, rank)\n"
    ") STRICT, WITHOUT ROWID;\n"
    "CREATE TABLE edit (\n"
    "    id INTEGER PRIMARY KEY,\n"
    "    segment_id INTEGER NOT NULL REFERENCES segment(id) ON DELETE CASCADE,\n"
    "    kind INTEGER NOT NULL REFERENCES edit_kind(code),\n"
    "    text TEXT NOT NULL,\n"
    "    time_ms INTEGER NOT NULL,\n"
    "    spent_ms INTEGER NOT NULL CHECK (spent_ms >= 0),\n"
    "    keystrokes INTEGER NOT NULL CHECK (keystrokes >= 0),\n"
    "    mt_output_id INTEGER REFERENCES mt_output(id) ON DELETE SET NULL,\n"
    "    mt_rank INTEGER CHECK (mt_rank >= 0)\n"
    ") STRICT;\n"
    "CREATE INDEX edit_segment ON edit(segment_id);\n"
    "CREATE INDEX edit_time ON edit(time_ms);\n"
    "CREATE TABLE confirmation (\n"
    "    id INTEGER PRIMARY KEY,\n"
    "    segment_id INTEGER NOT NULL REFERENCES segment(id) ON DELETE CASCADE,\n"
    "    edit_id INTEGER NOT NULL REFERENCES edit(id) ON DELETE CASCADE,\n"
    "    text TEXT NOT NULL,\n"
    "    time_ms INTEGER NOT NULL,\n"
    "    spent_ms INTEGER NOT NULL CHECK (spent_ms >= 0)\n"
    ") STRICT;\n"
    "CREATE INDEX confirmation_segment ON confirmation(segment_id);\n"
    "CREATE TABLE finetune_run (\n"
    "    id INTEGER PRIMARY KEY,\n"
    "    base_model_id INTEGER NOT NULL REFERENCES model(id),\n"
    "    output_model_id INTEGER REFERENCES model(id),\n"
    "    status INTEGER NOT NULL REFERENCES run_status(code),\n"
    "    started_ms INTEGER NOT NULL,\n"
    "    ended_ms INTEGER,\n"
    "    n_edits INTEGER NOT NULL DEFAULT 0 CHECK (n_edits >= 0),\n"
    "    data_until_ms INTEGER,\n"
    "    log_path TEXT,\n"
    "    metrics TEXT CHECK (metrics IS NULL OR json_valid(metrics))\n"
    ") STRICT;\n";

static const char schema_v2[] =
    "ALTER TABLE segment ADD COLUMN original_status INTEGER REFERENCES segment_status(code);\n"
    "CREATE TABLE doc_version (\n"
    "    id INTEGER PRIMARY KEY,\n"
    "    document_id INTEGER NOT NULL REFERENCES document(id) ON DELETE CASCADE,\n"
    "    content_hash TEXT NOT NULL,\n"
    "    saved_ms INTEGER NOT NULL,\n"
    "    n_changed INTEGER NOT NULL CHECK (n_changed >= 0)\n"
    ") STRICT;\n"
    "CREATE INDEX doc_version_document ON doc_version(document_id);\n"
    "CREATE INDEX doc_version_hash ON doc_version(content_hash);\n"
    "CREATE TABLE segment_version (\n"
    "    version_id INTEGER NOT NULL REFERENCES doc_version(id) ON DELETE CASCADE,\n"
    "    segment_id INTEGER NOT NULL REFERENCES segment(id) ON DELETE CASCADE,\n"
    "    target TEXT,\n"
    "    status INTEGER NOT NULL REFERENCES segment_status(code),\n"
    "    PRIMARY KEY (segment_id, version_id)\n"
    ") STRICT, WITHOUT ROWID;\n";

static const char schema_v3[] =
    "INSERT INTO doc_format VALUES (4, 'tmx'), (5, 'tsv');\n"
    "ALTER TABLE document ADD COLUMN origin INTEGER NOT NULL DEFAULT 0"
    " CHECK (origin IN (0, 1));\n"
    "ALTER TABLE segment ADD COLUMN tm_terms TEXT;\n"
    "CREATE INDEX segment_tm_source ON segment(source) WHERE status = 3;\n"
    "CREATE INDEX document_hash ON document(content_hash);\n"
    "CREATE VIRTUAL TABLE tm_fts USING fts5(terms, content='', detail=none,"
    " tokenize='unicode61 remove_diacritics 0');\n"
    "CREATE TABLE tm_term (term TEXT PRIMARY KEY, df INTEGER NOT NULL CHECK (df >= 0))"
    " STRICT, WITHOUT ROWID;\n"
    "CREATE TRIGGER tm_segment_insert AFTER INSERT ON segment"
    " WHEN new.status = 3 AND new.tm_terms IS NOT NULL BEGIN\n"
    "  INSERT INTO tm_fts(rowid, terms) VALUES (new.id, new.tm_terms);\n"
    "  INSERT INTO tm_term(term, df) SELECT value, 1 FROM json_each(new.tm_terms) WHERE true\n"
    "    ON CONFLICT(term) DO UPDATE SET df = df + 1;\n"
    "END;\n"
    "CREATE TRIGGER tm_segment_delete AFTER DELETE ON segment"
    " WHEN old.status = 3 AND old.tm_terms IS NOT NULL BEGIN\n"
    "  INSERT INTO tm_fts(tm_fts, rowid, terms) VALUES ('delete', old.id, old.tm_terms);\n"
    "  UPDATE tm_term SET df = df - 1 WHERE term IN (SELECT value FROM json_each(old.tm_terms));\n"
    "  DELETE FROM tm_term WHERE df = 0 AND term IN (SELECT value FROM json_each(old.tm_terms));\n"
    "END;\n"
    "CREATE TRIGGER tm_segment_update AFTER UPDATE OF status, tm_terms ON segment"
    " WHEN (old.status = 3 AND old.tm_terms IS NOT NULL) IS NOT"
    " (new.status = 3 AND new.tm_terms IS NOT NULL) OR (old.status = 3 AND new.status = 3"
    " AND old.tm_terms IS NOT new.tm_terms) BEGIN\n"
    "  INSERT INTO tm_fts(tm_fts, rowid, terms) SELECT 'delete', old.id, old.tm_terms"
    " WHERE old.status = 3 AND old.tm_terms IS NOT NULL;\n"
    "  UPDATE tm_term SET df = df - 1 WHERE old.status = 3 AND"
    " term IN (SELECT value FROM json_each(old.tm_terms));\n"
    "  DELETE FROM tm_term WHERE df = 0 AND term IN (SELECT value FROM json_each(old.tm_terms));\n"
    "  INSERT INTO tm_fts(rowid, terms) SELECT new.id, new.tm_terms"
    " WHERE new.status = 3 AND new.tm_terms IS NOT NULL;\n"
    "  INSERT INTO tm_term(term, df) SELECT value, 1 FROM json_each(new.tm_terms)"
    " WHERE new.status = 3\n"
    "    ON CONFLICT(term) DO UPDATE SET df = df + 1;\n"
    "END;\n";

static const char schema_v4[] =
    "CREATE TABLE glossary_entry (\n"
    "    id INTEGER PRIMARY KEY,\n"
    "    project TEXT NOT NULL DEFAULT '',\n"
    "    src_lang TEXT NOT NULL DEFAULT '',\n"
    "    tgt_lang TEXT NOT NULL DEFAULT '',\n"
    "    source TEXT NOT NULL CHECK (source <> ''),\n"
    "    target TEXT NOT NULL CHECK (target <> ''),\n"
    "    note TEXT NOT NULL DEFAULT '',\n"
    "    case_sensitive INTEGER NOT NULL DEFAULT 0 CHECK (case_sensitive IN (0, 1)),\n"
    "    origin TEXT NOT NULL DEFAULT '',\n"
    "    added_ms INTEGER NOT NULL,\n"
    "    UNIQUE (project, src_lang, tgt_lang, source, target)\n"
    ") STRICT;\n"
    "CREATE INDEX glossary_source ON glossary_entry(project, lower(source));\n"
    "CREATE TABLE spell_word (\n"
    "    lang TEXT NOT NULL,\n"
    "    word TEXT NOT NULL CHECK (word <> ''),\n"
    "    added_ms INTEGER NOT NULL,\n"
    "    PRIMARY KEY (lang, word)\n"
    ") STRICT, WITHOUT ROWID;\n"
    "DROP INDEX segment_tm_source;\n"
    "CREATE INDEX segment_tm_eff_source ON segment(" STORE_TM_SOURCE ") WHERE status = 3;\n";

/* Sets segment.tm_terms to the index terms of the text of each row of sel
** (id, text); the update trigger of version 3 keeps tm_fts and tm_term in
** step for the confirmed ones. */
static mt_status set_tm_terms(sqlite3 *db, const char *sel_sql) {
    sqlite3_stmt *sel = NULL, *upd = NULL;
    mt_status ret = MT_OK;
    int rc = sqlite3_prepare_v2(db, sel_sql, -1, &sel, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "UPDATE segment SET tm_terms = ?2 WHERE id = ?1", -1, &upd,
                                NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
        const char *src = (const char *)sqlite3_column_text(sel, 1);
        char *terms = store_tm_terms_json(src ? src : "");
        if (terms == NULL) {
            ret = mt_seterr(MT_ERR_NOMEM, "out of memory computing index terms");
            break;
        }
        sqlite3_bind_int64(upd, 1, sqlite3_column_int64(sel, 0));
        sqlite3_bind_text(upd, 2, terms, -1, SQLITE_TRANSIENT);
        mt_free(terms);
        rc = sqlite3_step(upd);
        sqlite3_reset(upd);
        if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    if (ret == MT_OK && rc != SQLITE_DONE)
        ret = mt_seterr(store_status_from_sqlite(rc), "index terms: %s", sqlite3_errmsg(db));
    sqlite3_finalize(sel);
    sqlite3_finalize(upd);
    return ret;
}

/* Version 3: the index terms of every segment; the update trigger adds
** the confirmed ones to the index. */
static mt_status fill_tm_terms(sqlite3 *db) {
    return set_tm_terms(db, "SELECT id, source FROM segment ORDER BY id");
}

/* Version 4: plural forms 1.. were indexed under the msgid; they translate
** the msgid_plural (STORE_TM_SOURCE_SQL), whose terms they now get. */
static mt_status fill_plural_tm_terms(sqlite3 *db) {
    return set_tm_terms(db, "SELECT id, " STORE_TM_SOURCE " FROM segment"
                            " WHERE plural_form > 0 AND plural_source IS NOT NULL ORDER BY id");
}

const store_migration store_migrations[] = {
    {1, "initial schema", schema_v1, NULL},
    {2, "document versions by changed segments", schema_v2, NULL},
    {3, "translation memory index", schema_v3, fill_tm_terms},
    {4, "glossary, personal dictionary, plural sources in the TM", schema_v4, fill_plural_tm_terms},
};
const int store_n_migrations = (int)(sizeof store_migrations / sizeof store_migrations[0]);
_Static_assert(sizeof store_migrations / sizeof store_migrations[0] == STORE_SCHEMA_VERSION,
               "STORE_SCHEMA_VERSION must count the migrations");

int store_schema_version(void) { return store_n_migrations; }

/* Runs one SQL text (several statements allowed). */
static mt_status exec(sqlite3 *db, const char *path, const char *sql, const char *op) {
    int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? MT_OK : store_sqlite_error(db, rc, path, op);
}

static mt_status read_user_version(sqlite3 *db, const char *path, int *version) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *version = sqlite3_column_int(st, 0);
        rc = SQLITE_OK;
    }
    mt_status ret =
        rc == SQLITE_OK ? MT_OK : store_sqlite_error(db, rc, path, "read schema version");
    sqlite3_finalize(st);
    return ret;
}

/* Fails when the foreign keys do not hold (a migration must keep them). */
static mt_status check_foreign_keys(sqlite3 *db, const char *path) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA foreign_key_check", -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    mt_status ret = MT_OK;
    if (rc == SQLITE_ROW) {
        const unsigned char *table = sqlite3_column_text(st, 0);
        ret =
            mt_seterr(MT_ERR_FORMAT, "store %s: foreign key violation in table %s, row %lld", path,
                      table ? (const char *)table : "?", (long long)sqlite3_column_int64(st, 1));
    } else if (rc != SQLITE_DONE) {
        ret = store_sqlite_error(db, rc, path, "foreign key check");
    }
    sqlite3_finalize(st);
    return ret;
}

mt_status store_migrate(sqlite3 *db, const char *path, const store_migration *steps, int n_steps,
                        int target_version, int *from_version) {
    MT_ASSERT(db && path && (steps || n_steps == 0));
    MT_ASSERT(target_version >= 0 && target_version <= n_steps);
    MT_ASSERT(sqlite3_get_autocommit(db));
    for (int i = 0; i < n_steps; i++)
        MT_ASSERT(steps[i].version == i + 1);

    /* Off for the steps (a table rebuild must not cascade); checked below. */
    mt_status ret = exec(db, path, "PRAGMA foreign_keys = OFF", "migrate: foreign keys off");
    if (ret != MT_OK) return ret;
    ret = exec(db, path, "BEGIN IMMEDIATE", "migrate: begin");
    if (ret != MT_OK) goto done;

    int version = 0;
    ret = read_user_version(db, path, &version);
    if (ret != MT_OK) goto done;
    if (from_version) *from_version = version;
    for (int v = version + 1; v <= target_version; v++) {
        const store_migration *m = &steps[v - 1];
        if (m->sql) {
            int rc = sqlite3_exec(db, m->sql, NULL, NULL, NULL);
            if (rc != SQLITE_OK) {
                char op[160];
                snprintf(op, sizeof op, "migrate from version %d to %d (%s)", v - 1, v, m->what);
                ret = store_sqlite_error(db, rc, path, op);
                goto done;
            }
        }
        if (m->fn) {
            ret = m->fn(db);
            if (ret != MT_OK) {
                char why[512];
                snprintf(why, sizeof why, "%s", mt_errmsg());
                ret = mt_seterr(ret, "store %s: migrate from version %d to %d (%s): %s", path,
                                v - 1, v, m->what, why);
                goto done;
            }
        }
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", v);
        ret = exec(db, path, sql, "migrate: set schema version");
        if (ret != MT_OK) goto done;
    }
    if (version < target_version) {
        ret = check_foreign_keys(db, path);
        if (ret != MT_OK) goto done;
    }
    ret = exec(db, path, "COMMIT", "migrate: commit");

done:
    if (!sqlite3_get_autocommit(db)) {
        int rc = sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
            mt_log(MT_LOG_WARN, "store %s: migrate: rollback failed: %s", path, sqlite3_errmsg(db));
    }
    /* On is the store's setting; a failure here only matters on success. */
    int rc = sqlite3_exec(db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
    if (rc != SQLITE_OK && ret == MT_OK)
        ret = store_sqlite_error(db, rc, path, "migrate: foreign keys on");
    return ret;
}
