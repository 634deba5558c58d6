/*
** store_glossary.c: the glossary of the store (store_glossary.h), on the
** table glossary_entry of schema version 4.  Glossary calls are rare (an
** import, the editor opening a document), so statements are prepared per
** call rather than kept with the store's.
*/
#include <stdio.h>
#include <string.h>

#include "mt_base.h"
#include "store_glossary.h"
#include "store_impl.h"

#define CHECK_GLOSS_STORE(s) MT_ASSERT((s) != NULL && !store_in_callback(s))

static mt_status fail(store *s, int rc, const char *op) {
    return store_sqlite_error(store_db(s), rc, store_path(s), op);
}

static const char *nz(const char *t) { return t ? t : ""; }

/* --------------------------------------------------------------- languages */

static char lang_char(char c) {
    if (c == '_') return '-';
    return (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
}

/* Length of the primary subtag (up to '-', '_', '.', '@' or the end). */
static size_t primary_len(const char *l) {
    size_t n = 0;
    while (l[n] && l[n] != '-' && l[n] != '_' && l[n] != '.' && l[n] != '@')
        n++;
    return n;
}

bool store_glossary_lang_match(const char *want, const char *entry) {
    if (want == NULL || entry == NULL || want[0] == '\0' || entry[0] == '\0') return true;
    size_t pw = primary_len(want), pe = primary_len(entry);
    if (pw != pe) return false;
    for (size_t i = 0; i < pw; i++)
        if (lang_char(want[i]) != lang_char(entry[i])) return false;
    /* a bare language matches any region of it */
    if (want[pw] == '\0' || want[pw] == '.' || entry[pe] == '\0' || entry[pe] == '.') return true;
    /* both have a region (script, variant): the rest must be equal too */
    size_t i = pw;
    for (; want[i] && want[i] != '.' && entry[i] && entry[i] != '.'; i++)
        if (lang_char(want[i]) != lang_char(entry[i])) return false;
    return (want[i] == '\0' || want[i] == '.') && (entry[i] == '\0' || entry[i] == '.');
}

/* --------------------------------------------------------------------- add */

mt_status store_glossary_add(store *s, const store_gloss_entry *e, int32_t n, int32_t *n_added) {
    CHECK_GLOSS_STORE(s);
    MT_ASSERT(e != NULL || n == 0);
    if (n_added) *n_added = 0;
    if (n < 0)
        return mt_seterr(MT_ERR_INVALID, "store %s: add glossary entries: negative count",
                         store_path(s));
    for (int32_t i = 0; i < n; i++)
        if (e[i].source == NULL || e[i].source[0] == '\0' || e[i].target == NULL ||
            e[i].target[0] == '\0')
            return mt_seterr(MT_ERR_INVALID,
                             "store %s: add glossary entries: entry %d has an empty source or "
                             "target term",
                             store_path(s), (int)i + 1);
    sqlite3 *db = store_db(s);
    int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK) return fail(s, rc, "add glossary entries: begin");
    sqlite3_stmt *st = NULL;
    mt_status ret = MT_OK;
    int32_t added = 0;
    rc = sqlite3_prepare_v2(db,
                            "INSERT OR IGNORE INTO glossary_entry(project, src_lang, tgt_lang, "
                            "source, target, note, case_sensitive, origin, added_ms) "
                            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                            -1, &st, NULL);
    if (rc != SQLITE_OK) {
        ret = fail(s, rc, "add glossary entries: prepare");
        goto out;
    }
    int64_t now = store_now_ms(s);
    for (int32_t i = 0; i < n; i++) {
        const store_gloss_entry *g = &e[i];
        sqlite3_reset(st);
        rc = sqlite3_bind_text(st, 1, nz(g->project), -1, SQLITE_STATIC);
        if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 2, nz(g->src_lang), -1, SQLITE_STATIC);
        if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 3, nz(g->tgt_lang), -1, SQLITE_STATIC);
        if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 4, g->source, -1, SQLITE_STATIC);
        if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 5, g->target, -1, SQLITE_STATIC);
        if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 6, nz(g->note), -1, SQLITE_STATIC);
        if (rc == SQLITE_OK) rc = sqlite3_bind_int(st, 7, g->case_sensitive ? 1 : 0);
        if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 8, nz(g->origin), -1, SQLITE_STATIC);
        if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 9, now);
        if (rc == SQLITE_OK) rc = sqlite3_step(st);
        if (rc != SQLITE_DONE) {
            ret = fail(s, rc, "add glossary entries: insert");
            goto out;
        }
        added += sqlite3_changes(db) > 0;
    }
    sqlite3_finalize(st);
    st = NULL;
    rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        ret = fail(s, rc, "add glossary entries: commit");
        goto out;
    }
    if (n_added) *n_added = added;
    return MT_OK;
out:
    sqlite3_finalize(st);
    if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return ret;
}

/* ------------------------------------------------------------- list, count */

/* The rows of a filter, project order: global first, then by id. */
static int prepare_select(store *s, const store_gloss_filter *f, const char *what,
                          sqlite3_stmt **st) {
    char sql[512];
    const char *where = f->project == NULL ? "1"
                        : f->with_global   ? "(project = ?1 OR project = '')"
                                           : "project = ?1";
    snprintf(sql, sizeof sql,
             "SELECT %s FROM glossary_entry WHERE %s ORDER BY project <> '', project, id", what,
             where);
    int rc = sqlite3_prepare_v2(store_db(s), sql, -1, st, NULL);
    if (rc == SQLITE_OK && f->project != NULL)
        rc = sqlite3_bind_text(*st, 1, f->project, -1, SQLITE_STATIC);
    return rc;
}

static const char *col(sqlite3_stmt *st, int i) {
    const char *t = (const char *)sqlite3_column_text(st, i);
    return t ? t : "";
}

/* Steps through the rows the filter takes; fn (may be NULL: count) is
** called for each.  *n gets the count. */
static mt_status each_entry(store *s, const store_gloss_filter *f, store_gloss_fn fn, void *user,
                            int64_t *n, const char *op) {
    sqlite3_stmt *st = NULL;
    int rc = prepare_select(s, f,
                            "id, project, src_lang, tgt_lang, source, target, note, "
                            "case_sensitive, origin, added_ms",
                            &st);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(st);
        return fail(s, rc, op);
    }
    mt_status ret = MT_OK;
    int64_t count = 0;
    store_set_in_callback(s, true);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        store_gloss_entry e = {
            .id = sqlite3_column_int64(st, 0),
            .project = col(st, 1),
            .src_lang = col(st, 2),
            .tgt_lang = col(st, 3),
            .source = col(st, 4),
            .target = col(st, 5),
            .note = col(st, 6),
            .case_sensitive = sqlite3_column_int(st, 7) != 0,
            .origin = col(st, 8),
            .added_ms = sqlite3_column_int64(st, 9),
        };
        if (!store_glossary_lang_match(f->src_lang, e.src_lang) ||
            !store_glossary_lang_match(f->tgt_lang, e.tgt_lang))
            continue;
        count++;
        if (fn && fn(user, &e) != 0) {
            ret = MT_ABORTED;
            break;
        }
    }
    store_set_in_callback(s, false);
    if (ret == MT_OK && rc != SQLITE_DONE) ret = fail(s, rc, op);
    sqlite3_finalize(st);
    if (n) *n = count;
    return ret;
}

mt_status store_glossary_list(store *s, const store_gloss_filter *f, store_gloss_fn fn,
                              void *user) {
    CHECK_GLOSS_STORE(s);
    MT_ASSERT(f != NULL && fn != NULL);
    return each_entry(s, f, fn, user, NULL, "list glossary");
}

mt_status store_glossary_count(store *s, const store_gloss_filter *f, int64_t *n) {
    CHECK_GLOSS_STORE(s);
    MT_ASSERT(f != NULL && n != NULL);
    return each_entry(s, f, NULL, NULL, n, "count glossary entries");
}

/* ---------------------------------------------------------- delete, clear */

static mt_status run_delete(store *s, const char *sql, const char *text, int64_t id,
                            int64_t *changed, const char *op) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(store_db(s), sql, -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = text ? sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC)
                  : sqlite3_bind_int64(st, 1, id);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return fail(s, rc, op);
    *changed = sqlite3_changes(store_db(s));
    return MT_OK;
}

mt_status store_glossary_delete(store *s, int64_t id) {
    CHECK_GLOSS_STORE(s);
    int64_t n = 0;
    mt_status rc = run_delete(s, "DELETE FROM glossary_entry WHERE id = ?1", NULL, id, &n,
                              "delete glossary entry");
    if (rc != MT_OK) return rc;
    if (n == 0)
        return mt_seterr(MT_ERR_NOTFOUND, "store %s: no glossary entry %lld", store_path(s),
                         (long long)id);
    return MT_OK;
}

mt_status store_glossary_clear(store *s, const char *project, int64_t *n_deleted) {
    CHECK_GLOSS_STORE(s);
    int64_t n = 0;
    mt_status rc = run_delete(s, "DELETE FROM glossary_entry WHERE project = ?1", nz(project), 0,
                              &n, "clear glossary");
    if (rc == MT_OK && n_deleted) *n_deleted = n;
    return rc;
}
