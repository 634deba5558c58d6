/*
** store.c: the store's connection, its cached statements and the queries
** of store.h.  The schema and migrations are in schema.c (with the layout of
** the file header fields the store uses).
**
** Durability: WAL journal with synchronous=FULL, so that every COMMIT has
** reached the disk when sqlite3_step returns; every writing function is one
** transaction that commits before returning.  SQLite allocates through
** mt_try_malloc (SQLITE_CONFIG_MALLOC, set before SQLite initialises), so
** allocation fault injection reaches it too.
*/
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mt_base.h"
#include "store_impl.h"
#include "store_tm.h"
#include "tm_impl.h"

/* ------------------------------------------------------------ statements */

/* Column lists shared by the statements that read one kind of row; the
** read_* functions below depend on their order. */
#define DOC_COLUMNS                                                                                \
    "SELECT d.id, d.path, d.format, d.src_lang, d.tgt_lang, d.content_hash, d.created_ms,"         \
    " d.opened_ms, d.cursor_segment, d.cursor_offset,"                                             \
    " (SELECT count(*) FROM segment s WHERE s.document_id = d.id) FROM document d"
#define SEG_COLUMNS                                                                                \
    "SELECT id, document_id, idx, source, context, plural_source, plural_form,"                    \
    " original_target, target, status, source_words, time_spent_ms, updated_ms FROM segment"
#define EXPORT_COLUMNS                                                                             \
    "SELECT d.id, s.id, c.id, s.idx, d.path, d.src_lang, d.tgt_lang, s.context,"                   \
    " " STORE_TM_SOURCE_S                                                                          \
    ", c.text, c.time_ms FROM segment s JOIN document d ON d.id = s.document_id"                   \
    " JOIN confirmation c ON c.id ="                                                               \
    " (SELECT max(c2.id) FROM confirmation c2 WHERE c2.segment_id = s.id)"
#define RUN_COLUMNS                                                                                \
    "SELECT id, base_model_id, output_model_id, status, started_ms, ended_ms, n_edits,"            \
    " data_until_ms, log_path, metrics FROM finetune_run"
#define PROGRESS_COLUMNS "SELECT status, count(*), sum(source_words) FROM segment"

#define STORE_STATEMENTS(X)                                                                        \
    X(BEGIN, "BEGIN IMMEDIATE")                                                                    \
    X(BEGIN_READ, "BEGIN")                                                                         \
    X(COMMIT, "COMMIT")                                                                            \
    X(ROLLBACK, "ROLLBACK")                                                                        \
    X(DOC_FIND, "SELECT id FROM document WHERE path = ?1 AND content_hash = ?2")                   \
    X(TM_DOC_FIND, "SELECT id FROM document WHERE origin = 1 AND content_hash = ?1")               \
    X(DOC_FIND_SAVED, "SELECT id FROM (SELECT id, created_ms AS t, 0 AS v FROM document"           \
                      " WHERE path = ?1 AND content_hash = ?2 UNION ALL"                           \
                      " SELECT v.document_id, v.saved_ms, v.id FROM doc_version v"                 \
                      " JOIN document d ON d.id = v.document_id"                                   \
                      " WHERE d.path = ?1 AND v.content_hash = ?2) ORDER BY t DESC, v DESC")       \
    X(VER_LAST, "SELECT content_hash FROM (SELECT content_hash, 0 AS v FROM document"              \
                " WHERE id = ?1 UNION ALL SELECT content_hash, id FROM doc_version"                \
                " WHERE document_id = ?1) ORDER BY v DESC")                                        \
    X(VER_BASE, "SELECT s.idx, s.id, CASE WHEN sv.version_id IS NULL THEN s.original_target"       \
                " ELSE sv.target END, CASE WHEN sv.version_id IS NULL THEN s.original_status"      \
                " ELSE sv.status END FROM segment s LEFT JOIN segment_version sv"                  \
                " ON sv.segment_id = s.id AND sv.version_id = (SELECT max(version_id)"             \
                " FROM segment_version WHERE segment_id = s.id)"                                   \
                " WHERE s.document_id = ?1 ORDER BY s.idx")                                        \
    X(VER_INSERT, "INSERT INTO doc_version (document_id, content_hash, saved_ms, n_changed)"       \
                  " VALUES (?1, ?2, ?3, 0)")                                                       \
    X(VER_CHANGED, "UPDATE doc_version SET n_changed = ?2 WHERE id = ?1")                          \
    X(SEGVER_INSERT, "INSERT INTO segment_version (version_id, segment_id, target, status)"        \
                     " VALUES (?1, ?2, ?3, ?4)")                                                   \
    X(VER_LIST, "SELECT id, document_id, content_hash, saved_ms, n_changed FROM doc_version"       \
                " WHERE document_id = ?1 ORDER BY id")                                             \
    X(SEGVER_LIST,                                                                                 \
      "SELECT s.idx, s.id, sv.target, sv.status, " STORE_TM_SOURCE_S " FROM segment_version sv"    \
      " JOIN segment s ON s.id = sv.segment_id WHERE sv.version_id = ?1"                           \
      " ORDER BY s.idx")                                                                           \
    X(DOC_INSERT, "INSERT INTO document (path, format, src_lang, tgt_lang, content_hash,"          \
                  " created_ms, opened_ms, origin) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7)")       \
    X(DOC_OPENED, "UPDATE document SET opened_ms = ?2 WHERE id = ?1")                              \
    X(DOC_GET, DOC_COLUMNS " WHERE d.id = ?1")                                                     \
    X(DOC_LIST, DOC_COLUMNS " ORDER BY d.opened_ms DESC, d.id DESC")                               \
    X(CURSOR_SET, "UPDATE document SET cursor_segment = ?2, cursor_offset = ?3 WHERE id = ?1")     \
    X(CURSOR_GET, "SELECT cursor_segment, cursor_offset FROM document WHERE id = ?1")              \
    X(SEG_INSERT,                                                                                  \
      "INSERT INTO segment (document_id, idx, source, context, plural_source,"                     \
      " plural_form, original_target, target, status, original_status, source_words,"              \
      " updated_ms, tm_terms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?8, ?9, ?10,"            \
      " ?11)")                                                                                     \
    X(SEG_LIST, SEG_COLUMNS " WHERE document_id = ?1 AND (?2 >> status) & 1 ORDER BY idx")         \
    X(SEG_GET, SEG_COLUMNS " WHERE id = ?1")                                                       \
    X(SEG_AT, SEG_COLUMNS " WHERE document_id = ?1 AND idx = ?2")                                  \
    X(SEG_UPDATE, "UPDATE segment SET target = ?2, status = ?3,"                                   \
                  " time_spent_ms = max(time_spent_ms, ?4), updated_ms = ?5 WHERE id = ?1")        \
    X(PROGRESS_DOC, PROGRESS_COLUMNS " WHERE document_id = ?1 GROUP BY status")                    \
    X(PROGRESS_ALL, PROGRESS_COLUMNS " GROUP BY status")                                           \
    X(MT_INSERT, "INSERT INTO mt_output (segment_id, model_id, created_ms, n_best)"                \
                 " VALUES (?1, ?2, ?3, ?4)")                                                       \
    X(HYP_INSERT, "INSERT INTO mt_hypothesis (output_id, rank, text, score)"                       \
                  " VALUES (?1, ?2, ?3, ?4)")                                                      \
    X(MT_LIST, "SELECT o.id, o.segment_id, o.model_id, o.created_ms, h.rank, h.text, h.score"      \
               " FROM mt_output o JOIN mt_hypothesis h ON h.output_id = o.id"                      \
               " WHERE o.segment_id = ?1 ORDER BY o.id DESC, h.rank")                              \
    X(EDIT_INSERT, "INSERT INTO edit (segment_id, kind, text, time_ms, spent_ms, keystrokes,"      \
                   " mt_output_id, mt_rank) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")              \
    X(CONF_INSERT, "INSERT INTO confirmation (segment_id, edit_id, text, time_ms, spent_ms)"       \
                   " VALUES (?1, ?2, ?3, ?4, ?5)")                                                 \
    X(EDITS_SINCE, "SELECT e.id, e.segment_id, s.document_id, s.idx, e.kind,"                      \
                   " " STORE_TM_SOURCE_S ", e.text,"                                               \
                   " e.time_ms, e.spent_ms, e.keystrokes, e.mt_output_id, e.mt_rank"               \
                   " FROM edit e JOIN segment s ON s.id = e.segment_id"                            \
                   " WHERE e.time_ms >= ?1 ORDER BY e.time_ms, e.id")                              \
    X(EXPORT_DOC, EXPORT_COLUMNS " WHERE s.document_id = ?1 ORDER BY s.idx")                       \
    X(EXPORT_ALL, EXPORT_COLUMNS " ORDER BY d.id, s.idx")                                          \
    X(CONFIRMED, "SELECT * FROM (SELECT s.id, d.id, d.path, " STORE_TM_SOURCE_S ", s.target,"      \
                 " coalesce((SELECT max(c.time_ms) FROM confirmation c"                            \
                 " WHERE c.segment_id = s.id), s.updated_ms) AS t,"                                \
                 " (SELECT h.text FROM mt_output o JOIN mt_hypothesis h ON h.output_id = o.id"     \
                 " AND h.rank = 0 WHERE o.segment_id = s.id ORDER BY o.id DESC LIMIT 1)"           \
                 " FROM segment s JOIN document d ON d.id = s.document_id"                         \
                 " WHERE s.status = 3 AND s.target IS NOT NULL AND s.target <> ''"                 \
                 " AND " STORE_TM_SOURCE_S " <> '' AND (?1 = 0 OR s.document_id = ?1))"            \
                 " WHERE t >= ?2 ORDER BY 1")                                                      \
    X(MODEL_FIND, "SELECT id FROM model WHERE path = ?1")                                          \
    X(MODEL_INSERT, "INSERT INTO model (path, name, kind, created_ms) VALUES (?1, ?2, ?3, ?4)")    \
    X(MODEL_LIST, "SELECT id, path, name, kind, created_ms FROM model ORDER BY id")                \
    X(RUN_INSERT, "INSERT INTO finetune_run (base_model_id, status, started_ms, n_edits,"          \
                  " data_until_ms, log_path) VALUES (?1, 0, ?2, ?3, ?4, ?5)")                      \
    X(RUN_END, "UPDATE finetune_run SET status = ?2, ended_ms = ?3, output_model_id = ?4,"         \
               " metrics = ?5 WHERE id = ?1 AND status = 0")                                       \
    X(RUN_GET, RUN_COLUMNS " WHERE id = ?1")                                                       \
    X(RUN_LIST, RUN_COLUMNS " ORDER BY id DESC")                                                   \
    X(TM_EXACT, "SELECT id FROM segment WHERE " STORE_TM_SOURCE " = ?1 AND status = 3")            \
    X(TM_DF, "SELECT df FROM tm_term WHERE term = ?1")                                             \
    X(TM_POSTINGS, "SELECT rowid FROM tm_fts WHERE tm_fts MATCH ?1")                               \
    X(TM_SEG, "SELECT " STORE_TM_SOURCE_S                                                          \
              ", s.target, s.document_id, s.idx, d.origin, d.path, s.updated_ms"                   \
              " FROM segment s JOIN document d ON d.id = s.document_id"                            \
              " WHERE s.id = ?1 AND s.status = 3")                                                 \
    X(TM_SRC, "SELECT " STORE_TM_SOURCE " FROM segment WHERE id = ?1 AND status = 3")              \
    X(TM_NEIGHBOUR, "SELECT " STORE_TM_SOURCE " FROM segment"                                      \
                    " WHERE document_id = ?1 AND idx = ?2")                                        \
    X(TM_LIST, "SELECT " STORE_TM_SOURCE_S                                                         \
               " AS src, s.target, d.src_lang, d.tgt_lang, d.format, s.updated_ms,"                \
               " min(s.id) AS first FROM segment s JOIN document d ON d.id = s.document_id"        \
               " WHERE s.status = 3 AND s.target IS NOT NULL"                                      \
               " GROUP BY src, s.target, d.src_lang, d.tgt_lang ORDER BY first")                   \
    X(TM_STATS,                                                                                    \
      "SELECT d.origin, EXISTS (SELECT 1 FROM confirmation c WHERE c.segment_id = s.id),"          \
      " count(*), total(s.source_words) FROM segment s"                                            \
      " JOIN document d ON d.id = s.document_id WHERE s.status = 3 GROUP BY 1, 2")                 \
    X(TM_STAT_DOCS, "SELECT (SELECT count(DISTINCT document_id) FROM segment WHERE status = 3),"   \
                    " (SELECT count(*) FROM document WHERE origin = 1),"                           \
                    " (SELECT count(*) FROM tm_term)")

enum {
#define X(name, sql) ST_##name,
    STORE_STATEMENTS(X)
#undef X
        ST_COUNT
};

static const char *const statement_sql[ST_COUNT] = {
#define X(name, sql) sql,
    STORE_STATEMENTS(X)
#undef X
};

typedef struct cand_map cand_map;
static void cand_free(cand_map *m);

struct store {
    sqlite3 *db;
    char *path;
    sqlite3_stmt *st[ST_COUNT]; /* prepared once at open, reset after each use */
    int64_t (*now_ms)(void *user);
    void *now_user;
    bool in_callback; /* a listing function is calling user code */
    cand_map *tm_cand; /* TM lookup candidates, kept between lookups; NULL: none yet */
};

/* --------------------------------------------------------- enum names */

static const char *const format_names[] = {"po", "xliff", "text", "moses", "tmx", "tsv"};
static const char *const seg_status_names[] = {"new", "mt", "edited", "confirmed"};
static const char *const edit_kind_names[] = {"typed",      "accept_word", "accept_all",
                                              "nbest_pick", "undo",        "confirm"};
static const char *const run_status_names[] = {"running", "done", "failed", "cancelled"};

const char *store_format_name(store_format f) {
    return (unsigned)f < STORE_FORMAT_COUNT ? format_names[f] : "?";
}
const char *store_seg_status_name(store_seg_status s) {
    return (unsigned)s < STORE_SEG_STATUS_COUNT ? seg_status_names[s] : "?";
}
const char *store_edit_kind_name(store_edit_kind k) {
    return (unsigned)k < STORE_EDIT_KIND_COUNT ? edit_kind_names[k] : "?";
}
const char *store_run_status_name(store_run_status s) {
    return (unsigned)s < STORE_RUN_STATUS_COUNT ? run_status_names[s] : "?";
}

/* ------------------------------------------------ SQLite memory methods */

/* Each block carries its size in front (SQLite asks for it through xSize). */
#define MEM_HDR 16

static void *mem_malloc(int n) {
    if (n < 0) return NULL;
    unsigned char *p = mt_try_malloc((size_t)n + MEM_HDR);
    if (p == NULL) return NULL;
    int64_t size = n;
    memcpy(p, &size, sizeof size);
    return p + MEM_HDR;
}

static void mem_free(void *p) {
    if (p) mt_free((unsigned char *)p - MEM_HDR);
}

static void *mem_realloc(void *p, int n) {
    if (p == NULL) return mem_malloc(n);
    if (n < 0) return NULL;
    unsigned char *q = mt_try_realloc((unsigned char *)p - MEM_HDR, (size_t)n + MEM_HDR);
    if (q == NULL) return NULL;
    int64_t size = n;
    memcpy(q, &size, sizeof size);
    return q + MEM_HDR;
}

static int mem_size(void *p) {
    int64_t size;
    memcpy(&size, (unsigned char *)p - MEM_HDR, sizeof size);
    return (int)size;
}

static int mem_roundup(int n) { return n > INT_MAX - 7 ? n : (n + 7) & ~7; }
static int mem_init(void *user) { return SQLITE_OK; }
static void mem_shutdown(void *user) {}

static const sqlite3_mem_methods mem_methods = {mem_malloc,  mem_free, mem_realloc,  mem_size,
                                                mem_roundup, mem_init, mem_shutdown, NULL};

/* Installs the memory methods once per process, before SQLite initialises
** (0: not yet, 1: being done, 2: done). */
static atomic_int sqlite_setup_state;

static void setup_sqlite(void) {
    int expected = 0;
    if (atomic_compare_exchange_strong(&sqlite_setup_state, &expected, 1)) {
        if (sqlite3_config(SQLITE_CONFIG_MALLOC, &mem_methods) != SQLITE_OK)
            mt_log(MT_LOG_DEBUG, "store: SQLite was initialised before the store; its memory "
                                 "bypasses mt_alloc");
        atomic_store(&sqlite_setup_state, 2);
    }
    while (atomic_load(&sqlite_setup_state) != 2) {
    }
}

/* ---------------------------------------------------------------- errors */

mt_status store_status_from_sqlite(int rc) {
    if (rc == SQLITE_IOERR_NOMEM) return MT_ERR_NOMEM;
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE: return MT_OK;
    case SQLITE_NOMEM: return MT_ERR_NOMEM;
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_FORMAT:
    case SQLITE_ERROR:
    case SQLITE_SCHEMA: return MT_ERR_FORMAT;
    case SQLITE_CONSTRAINT:
    case SQLITE_MISUSE:
    case SQLITE_RANGE:
    case SQLITE_TOOBIG:
    case SQLITE_MISMATCH: return MT_ERR_INVALID;
    default: return MT_ERR_IO;
    }
}

mt_status store_sqlite_error(sqlite3 *db, int rc, const char *path, const char *op) {
    /* errmsg of a connection that failed to allocate is "out of memory" */
    const char *msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    /* a full disk: SQLITE_FULL, or an I/O error (a write, growing the -shm
    ** file: "disk I/O error") whose system error is ENOSPC */
    if ((rc & 0xff) == SQLITE_FULL ||
        ((rc & 0xff) == SQLITE_IOERR && db && sqlite3_system_errno(db) == ENOSPC))
        msg = "disk full (no space left on device)";
    mt_status st = store_status_from_sqlite(rc);
    if (st == MT_OK) st = MT_ERR_IO; /* called for a failure: never report success */
    return mt_seterr(st, "store %s: %s: %s (SQLite code %d)", path, op, msg, rc);
}

static mt_status fail_sql(store *s, int rc, const char *op) {
    return store_sqlite_error(s->db, rc, s->path, op);
}

static mt_status invalid(store *s, const char *op, const char *what) {
    return mt_seterr(MT_ERR_INVALID, "store %s: %s: %s", s->path, op, what);
}

/* ------------------------------------------------------------- helpers */

static int64_t default_now(void *user) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t now_ms(store *s) { return s->now_ms(s->now_user); }

/* Binding with a sticky result code: after a failure the others are no-ops.
** Text is bound SQLITE_STATIC: statements are reset and cleared before the
** caller's strings can go away. */
static void bind_text(sqlite3_stmt *st, int i, const char *t, int *rc) {
    if (*rc != SQLITE_OK) return;
    *rc = t ? sqlite3_bind_text(st, i, t, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}

static void bind_int(sqlite3_stmt *st, int i, int64_t v, int *rc) {
    if (*rc == SQLITE_OK) *rc = sqlite3_bind_int64(st, i, v);
}

/* An optional id or index: NULL when absent. */
static void bind_opt(sqlite3_stmt *st, int i, int64_t v, bool present, int *rc) {
    if (*rc != SQLITE_OK) return;
    *rc = present ? sqlite3_bind_int64(st, i, v) : sqlite3_bind_null(st, i);
}

static void bind_double(sqlite3_stmt *st, int i, double v, int *rc) {
    if (*rc == SQLITE_OK) *rc = sqlite3_bind_double(st, i, v);
}

static void finish(sqlite3_stmt *st) {
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

/* Runs a statement that returns no rows; the bind result comes in rc. */
static mt_status run(store *s, int id, int rc, const char *op) {
    sqlite3_stmt *st = s->st[id];
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    mt_status ret = rc == SQLITE_DONE ? MT_OK : fail_sql(s, rc, op);
    finish(st);
    return ret;
}

/* Steps a statement to its first row: MT_OK with the row in place (the
** caller reads it and calls finish), MT_ERR_NOTFOUND without a row
** (statement finished, mt_errmsg not set), another error (finished). */
static mt_status first_row(store *s, int id, int rc, const char *op) {
    sqlite3_stmt *st = s->st[id];
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) return MT_OK;
    mt_status ret = rc == SQLITE_DONE ? MT_ERR_NOTFOUND : fail_sql(s, rc, op);
    finish(st);
    return ret;
}

/* Calls each(st, ctx) for every row; each returns nonzero to stop. */
static mt_status each_row(store *s, int id, int rc, const char *op,
                          int (*each)(sqlite3_stmt *st, void *ctx), void *ctx, int64_t *n_rows) {
    sqlite3_stmt *st = s->st[id];
    mt_status ret = MT_OK;
    int64_t n = 0;
    if (rc == SQLITE_OK) {
        s->in_callback = true;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            n++;
            if (each(st, ctx)) {
                ret = MT_ABORTED;
                break;
            }
        }
        s->in_callback = false;
    }
    if (ret == MT_OK && rc != SQLITE_DONE) ret = fail_sql(s, rc, op);
    finish(st);
    if (n_rows) *n_rows = n;
    return ret;
}

static const char *col_text(sqlite3_stmt *st, int i) {
    return (const char *)sqlite3_column_text(st, i);
}

/* An optional id: 0 for NULL. */
static int64_t col_id(sqlite3_stmt *st, int i) { return sqlite3_column_int64(st, i); }

static int32_t col_opt_int(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int(st, i);
}

static mt_status tx_begin(store *s, const char *op) { return run(s, ST_BEGIN, SQLITE_OK, op); }

/* Rolls back an open transaction (SQLite may already have done so after an
** I/O error); keeps mt_errmsg, which describes the original failure. */
static void tx_rollback(store *s) {
    if (sqlite3_get_autocommit(s->db)) return;
    sqlite3_stmt *st = s->st[ST_ROLLBACK];
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        mt_log(MT_LOG_WARN, "store %s: rollback failed: %s", s->path, sqlite3_errmsg(s->db));
}

static mt_status tx_commit(store *s, const char *op) {
    mt_status ret = run(s, ST_COMMIT, SQLITE_OK, op);
    if (ret != MT_OK) tx_rollback(s);
    return ret;
}

#define CHECK_STORE(s) MT_ASSERT((s) != NULL && !(s)->in_callback)

/* ----------------------------------------------------------- open/close */

/* Reads one integer from a query run once (open-time PRAGMAs); *src gets
** SQLite's result code. */
static mt_status query_int(store *s, const char *sql, const char *op, int64_t *out, int *src) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_int64(st, 0);
        rc = SQLITE_OK;
    }
    mt_status ret = rc == SQLITE_OK ? MT_OK : fail_sql(s, rc, op);
    sqlite3_finalize(st);
    *src = rc;
    return ret;
}

/* Accepts an mtpe store at a version this build knows or an empty database;
** refuses anything else without writing to it. */
static mt_status check_identity(store *s) {
    int64_t app_id = 0, version = 0, n_objects = 0;
    int rc = SQLITE_OK;
    mt_status ret = query_int(s, "PRAGMA application_id", "read header", &app_id, &rc);
    if (ret == MT_OK) ret = query_int(s, "PRAGMA user_version", "read header", &version, &rc);
    if (ret == MT_OK)
        ret = query_int(s, "SELECT count(*) FROM sqlite_master", "read schema", &n_objects, &rc);
    if (ret != MT_OK) {
        if ((rc & 0xff) == SQLITE_NOTADB)
            return mt_seterr(MT_ERR_FORMAT, "store %s: not an mtpe store: not an SQLite database",
                             s->path);
        return ret;
    }
    int known = store_schema_version();
    if (app_id != STORE_APPLICATION_ID) {
        if (app_id == 0 && version == 0 && n_objects == 0) return MT_OK; /* new */
        return mt_seterr(MT_ERR_FORMAT,
                         "store %s: not an mtpe store: an SQLite database of another program "
                         "(application_id 0x%08llx, user_version %lld, %lld schema objects)",
                         s->path, (unsigned long long)(uint32_t)app_id, (long long)version,
                         (long long)n_objects);
    }
    if (version > known)
        return mt_seterr(MT_ERR_UNSUPPORTED,
                         "store %s: written by a newer mtpe (schema version %lld; this mtpe "
                         "knows versions up to %d): upgrade mtpe to open it",
                         s->path, (long long)version, known);
    if (version <= 0)
        return mt_seterr(MT_ERR_FORMAT, "store %s: damaged: mtpe store with schema version %lld",
                         s->path, (long long)version);
    return MT_OK;
}

static mt_status configure(store *s) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *mode = col_text(st, 0);
        if (mode && strcmp(mode, "wal") != 0 && strcmp(mode, "memory") != 0)
            mt_log(MT_LOG_WARN, "store %s: WAL journal not available, journal mode is %s", s->path,
                   mode);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK) return fail_sql(s, rc, "set journal mode");
    /* memory-mapped reads and a larger page cache: a TM lookup reads
    ** postings and candidate rows all over a large store */
    static const char *const pragmas[] = {"PRAGMA synchronous = FULL", "PRAGMA foreign_keys = ON",
                                          "PRAGMA mmap_size = 1073741824",
                                          "PRAGMA cache_size = -32768"};
    for (size_t i = 0; i < sizeof pragmas / sizeof pragmas[0]; i++) {
        rc = sqlite3_exec(s->db, pragmas[i], NULL, NULL, NULL);
        if (rc != SQLITE_OK) return fail_sql(s, rc, pragmas[i]);
    }
    return MT_OK;
}

static mt_status prepare_all(store *s) {
    for (int i = 0; i < ST_COUNT; i++) {
        int rc = sqlite3_prepare_v3(s->db, statement_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                                    &s->st[i], NULL);
        if (rc != SQLITE_OK) {
            /* Our SQL is fixed: a failure other than memory means the schema
            ** is not the one its version promises. */
            mt_status st = fail_sql(s, rc, "prepare statements");
            if (st == MT_ERR_FORMAT) {
                char why[512];
                snprintf(why, sizeof why, "%s", mt_errmsg());
                st = mt_seterr(MT_ERR_FORMAT, "%s; the store's schema is damaged", why);
            }
            return st;
        }
    }
    return MT_OK;
}

/* A store the editor cannot write is refused before SQLite opens it: a
** read-only connection would create PATH-wal and PATH-shm with the file's
** mode (0444), and they break the next run after the file is made writable.
** The write permission bits decide, also for root (whom they do not stop),
** as for documents; then access() (a read-only mount, another owner).  The
** WAL files of an earlier run and the directory (where SQLite creates them)
** must be writable too. */
static mt_status check_writable(const char *path) {
    if (!strcmp(path, ":memory:") || path[0] == '\0' || !strncmp(path, "file:", 5)) return MT_OK;
    char side[PATH_MAX + 8];
    static const char *const suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(side, sizeof side, "%s%s", path, suffix[i]);
        struct stat st;
        if (stat(side, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if ((st.st_mode & 0222) == 0 || access(side, W_OK) != 0) {
            if (i == 0)
                return mt_seterr(MT_ERR_IO,
                                 "store %s: the file is read-only (permissions?); the editor "
                                 "must be able to write every edit",
                                 path);
            return mt_seterr(MT_ERR_IO,
                             "store %s: %s is read-only (left by an earlier run?): make it "
                             "writable or, with no mtpe running, delete it",
                             path, side);
        }
    }
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (access(dir, W_OK | X_OK) != 0 && (errno == EACCES || errno == EROFS))
        return mt_seterr(MT_ERR_IO,
                         "store %s: its directory %s is not writable (%s); SQLite keeps its "
                         "-wal and -shm files next to the store",
                         path, dir, strerror(errno));
    return MT_OK;
}

mt_status store_open(const char *path, store **out) {
    MT_ASSERT(path != NULL && out != NULL);
    *out = NULL;
    setup_sqlite();
    mt_status ret = MT_ERR_NOMEM;
    store *s = mt_try_calloc(1, sizeof *s);
    if (s == NULL) return mt_seterr(MT_ERR_NOMEM, "store %s: open: out of memory", path);
    s->now_ms = default_now;
    s->path = mt_try_strdup(path);
    if (s->path == NULL) {
        ret = mt_seterr(MT_ERR_NOMEM, "store %s: open: out of memory", path);
        goto fail;
    }
    ret = check_writable(path);
    if (ret != MT_OK) goto fail;
    int rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK) {
        ret = fail_sql(s, rc, "open");
        goto fail;
    }
    sqlite3_extended_result_codes(s->db, 1);
    sqlite3_busy_timeout(s->db, 5000);
    /* the translation memory's index is an FTS5 table (schema version 3) */
    sqlite3_stmt *probe = NULL;
    rc = sqlite3_prepare_v2(s->db, "SELECT fts5_source_id()", -1, &probe, NULL);
    sqlite3_finalize(probe);
    if (rc != SQLITE_OK) {
        ret = (rc & 0xff) == SQLITE_NOMEM
                  ? fail_sql(s, rc, "open")
                  : mt_seterr(MT_ERR_UNSUPPORTED,
                              "store %s: the SQLite library linked (%s) has no FTS5, which the "
                              "translation memory index needs (build SQLite with "
                              "SQLITE_ENABLE_FTS5)",
                              path, sqlite3_libversion());
        goto fail;
    }

    ret = check_identity(s);
    if (ret != MT_OK) goto fail;
    if (sqlite3_db_readonly(s->db, "main") == 1) {
        ret = mt_seterr(MT_ERR_IO,
                        "store %s: the file is read-only (permissions?); the editor "
                        "must be able to write every edit",
                        path);
        goto fail;
    }
    ret = configure(s);
    if (ret != MT_OK) goto fail;
    int from = 0;
    ret = store_migrate(s->db, path, store_migrations, store_n_migrations, store_schema_version(),
                        &from);
    if (ret != MT_OK) goto fail;
    if (from != 0 && from < store_schema_version())
        mt_log(MT_LOG_INFO, "store %s: schema migrated from version %d to %d", path, from,
               store_schema_version());
    ret = prepare_all(s);
    if (ret != MT_OK) goto fail;
    *out = s;
    return MT_OK;
fail:
    store_close(s);
    return ret;
}

void store_close(store *s) {
    if (s == NULL) return;
    MT_ASSERT(!s->in_callback);
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(s->st[i]);
    if (s->db) {
        int rc = sqlite3_close(s->db);
        if (rc != SQLITE_OK)
            mt_log(MT_LOG_WARN, "store %s: close: %s", s->path ? s->path : "?", sqlite3_errstr(rc));
    }
    cand_free(s->tm_cand);
    mt_free(s->path);
    mt_free(s);
}

void store_set_clock(store *s, int64_t (*now)(void *user), void *user) {
    CHECK_STORE(s);
    s->now_ms = now ? now : default_now;
    s->now_user = now ? user : NULL;
}

sqlite3 *store_db(store *s) { return s->db; }
const char *store_path(const store *s) { return s->path; }
int64_t store_now_ms(store *s) { return now_ms(s); }
bool store_in_callback(const store *s) { return s->in_callback; }
void store_set_in_callback(store *s, bool on) { s->in_callback = on; }

mt_status store_check(store *s) {
    CHECK_STORE(s);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "PRAGMA integrity_check", -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    mt_status ret = MT_OK;
    if (rc == SQLITE_ROW) {
        const char *res = col_text(st, 0);
        if (res == NULL || strcmp(res, "ok") != 0)
            ret = mt_seterr(MT_ERR_FORMAT, "store %s: integrity check failed: %s", s->path,
                            res ? res : "(no result)");
    } else {
        ret = fail_sql(s, rc, "integrity check");
    }
    sqlite3_finalize(st);
    if (ret != MT_OK) return ret;

    st = NULL;
    rc = sqlite3_prepare_v2(s->db, "PRAGMA foreign_key_check", -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *table = col_text(st, 0);
        ret = mt_seterr(MT_ERR_FORMAT, "store %s: foreign key violation in table %s, row %lld",
                        s->path, table ? table : "?", (long long)sqlite3_column_int64(st, 1));
    } else if (rc != SQLITE_DONE) {
        ret = fail_sql(s, rc, "foreign key check");
    }
    sqlite3_finalize(st);
    return ret;
}

/* ------------------------------------------------------------ documents */

static bool valid_segment_in(const store_segment_in *g) {
    return g->source != NULL && (unsigned)g->status < STORE_SEG_STATUS_COUNT &&
           (g->plural_source == NULL || g->plural_form >= 0);
}

/* Adds a document in one transaction (store_add_document, store_tm_import).
** A TM import whose content hash is known (an imported document with the
** same hash, or any document with the same path and hash) writes nothing
** and sets *already. */
static mt_status add_document(store *s, const store_doc_info *info, const store_segment_in *segs,
                              int32_t n, store_origin origin, int64_t *doc_id, bool *already) {
    const char *op =
        origin == STORE_ORIGIN_TM_IMPORT ? "import translation memory" : "add document";
    if (!info->path || !info->src_lang || !info->tgt_lang || !info->content_hash)
        return invalid(s, op, "path, languages and content hash are required");
    if ((unsigned)info->format >= STORE_FORMAT_COUNT) return invalid(s, op, "unknown format");
    if (n < 0) return invalid(s, op, "negative segment count");
    for (int32_t i = 0; i < n; i++) {
        if (!valid_segment_in(&segs[i]))
            return mt_seterr(MT_ERR_INVALID,
                             "store %s: %s %s: segment %d lacks a source, has an "
                             "unknown status or a negative plural form",
                             s->path, op, info->path, (int)i);
        if (origin == STORE_ORIGIN_TM_IMPORT && segs[i].target == NULL)
            return mt_seterr(MT_ERR_INVALID, "store %s: %s %s: segment %d has no target", s->path,
                             op, info->path, (int)i);
    }
    int64_t now = now_ms(s), id = 0;
    mt_status ret = tx_begin(s, op);
    if (ret != MT_OK) return ret;

    int rc = SQLITE_OK;
    if (origin == STORE_ORIGIN_TM_IMPORT) {
        bind_text(s->st[ST_TM_DOC_FIND], 1, info->content_hash, &rc);
        ret = first_row(s, ST_TM_DOC_FIND, rc, op);
        if (ret == MT_OK) {
            *doc_id = sqlite3_column_int64(s->st[ST_TM_DOC_FIND], 0);
            *already = true;
            finish(s->st[ST_TM_DOC_FIND]);
            return tx_commit(s, op);
        }
        if (ret != MT_ERR_NOTFOUND) goto fail;
        rc = SQLITE_OK;
    }
    bind_text(s->st[ST_DOC_FIND], 1, info->path, &rc);
    bind_text(s->st[ST_DOC_FIND], 2, info->content_hash, &rc);
    ret = first_row(s, ST_DOC_FIND, rc, op);
    if (ret == MT_OK) {
        id = sqlite3_column_int64(s->st[ST_DOC_FIND], 0);
        finish(s->st[ST_DOC_FIND]);
        if (origin == STORE_ORIGIN_TM_IMPORT) {
            *doc_id = id;
            *already = true;
            return tx_commit(s, op);
        }
        ret = mt_seterr(MT_ERR_INVALID,
                        "store %s: %s: %s with this content hash is already "
                        "document %lld",
                        s->path, op, info->path, (long long)id);
        goto fail;
    }
    if (ret != MT_ERR_NOTFOUND) goto fail;

    sqlite3_stmt *st = s->st[ST_DOC_INSERT];
    rc = SQLITE_OK;
    bind_text(st, 1, info->path, &rc);
    bind_int(st, 2, info->format, &rc);
    bind_text(st, 3, info->src_lang, &rc);
    bind_text(st, 4, info->tgt_lang, &rc);
    bind_text(st, 5, info->content_hash, &rc);
    bind_int(st, 6, now, &rc);
    bind_int(st, 7, origin, &rc);
    ret = run(s, ST_DOC_INSERT, rc, op);
    if (ret != MT_OK) goto fail;
    id = sqlite3_last_insert_rowid(s->db);

    st = s->st[ST_SEG_INSERT];
    for (int32_t i = 0; i < n; i++) {
        const store_segment_in *g = &segs[i];
        store_seg_status status =
            origin == STORE_ORIGIN_TM_IMPORT ? STORE_SEG_CONFIRMED : g->status;
        /* indexed under the source it translates (plural forms 1..: msgid_plural) */
        char *terms =
            store_tm_terms_json(STORE_TM_SOURCE_OF(g->source, g->plural_source, g->plural_form));
        if (terms == NULL) {
            ret = mt_seterr(MT_ERR_NOMEM, "store %s: %s: out of memory", s->path, op);
            goto fail;
        }
        rc = SQLITE_OK;
        bind_int(st, 1, id, &rc);
        bind_int(st, 2, i, &rc);
        bind_text(st, 3, g->source, &rc);
        bind_text(st, 4, g->context, &rc);
        bind_text(st, 5, g->plural_source, &rc);
        bind_opt(st, 6, g->plural_form, g->plural_source != NULL, &rc);
        bind_text(st, 7, g->target, &rc);
        bind_int(st, 8, status, &rc);
        bind_int(st, 9, store_count_words(g->source), &rc);
        bind_int(st, 10, now, &rc);
        bind_text(st, 11, terms, &rc);
        ret = run(s, ST_SEG_INSERT, rc, "add document: insert segment");
        mt_free(terms);
        if (ret != MT_OK) goto fail;
    }
    ret = tx_commit(s, origin == STORE_ORIGIN_TM_IMPORT ? "import translation memory: commit"
                                                        : "add document: commit");
    if (ret != MT_OK) return ret;
    *doc_id = id;
    return MT_OK;
fail:
    tx_rollback(s);
    return ret;
}

mt_status store_add_document(store *s, const store_doc_info *info, const store_segment_in *segs,
                             int32_t n, int64_t *doc_id) {
    CHECK_STORE(s);
    MT_ASSERT(info != NULL && doc_id != NULL && (segs != NULL || n == 0));
    bool already = false;
    return add_document(s, info, segs, n, STORE_ORIGIN_EDITOR, doc_id, &already);
}

mt_status store_tm_import(store *s, const store_doc_info *info, const store_segment_in *segs,
                          int32_t n, int64_t *doc_id, bool *already) {
    CHECK_STORE(s);
    MT_ASSERT(info != NULL && doc_id != NULL && already != NULL && (segs != NULL || n == 0));
    *already = false;
    return add_document(s, info, segs, n, STORE_ORIGIN_TM_IMPORT, doc_id, already);
}

mt_status store_find_document(store *s, const char *path, const char *content_hash,
                              int64_t *doc_id) {
    CHECK_STORE(s);
    MT_ASSERT(doc_id != NULL);
    if (!path || !content_hash)
        return invalid(s, "find document", "path and content hash are required");
    int rc = SQLITE_OK;
    bind_text(s->st[ST_DOC_FIND_SAVED], 1, path, &rc);
    bind_text(s->st[ST_DOC_FIND_SAVED], 2, content_hash, &rc);
    mt_status ret = first_row(s, ST_DOC_FIND_SAVED, rc, "find document");
    if (ret == MT_ERR_NOTFOUND)
        return mt_seterr(ret, "store %s: no document %s with content hash %s", s->path, path,
                         content_hash);
    if (ret != MT_OK) return ret;
    *doc_id = sqlite3_column_int64(s->st[ST_DOC_FIND_SAVED], 0);
    finish(s->st[ST_DOC_FIND_SAVED]);
    return MT_OK;
}

/* The stored (target, status) a save is compared with: the segment's last
** saved one, else the imported one (status -1: unknown, rows imported
** before schema version 2). */
typedef struct ver_base {
    int64_t seg_id;
    char *target; /* NULL: none */
    int status;
} ver_base;

static void free_bases(ver_base *b, int32_t n) {
    if (b == NULL) return;
    for (int32_t i = 0; i < n; i++)
        mt_free(b[i].target);
    mt_free(b);
}

static bool same_target(const char *a, const char *b) {
    return strcmp(a ? a : "", b ? b : "") == 0;
}

mt_status store_add_version(store *s, int64_t doc_id, const char *content_hash,
                            const store_saved_segment *segs, int32_t n, int64_t *version_id,
                            int32_t *n_changed) {
    CHECK_STORE(s);
    MT_ASSERT(version_id != NULL && (segs != NULL || n == 0));
    const char *op = "add version";
    if (!content_hash) return invalid(s, op, "a content hash is required");
    for (int32_t i = 0; i < n; i++)
        if ((unsigned)segs[i].status >= STORE_SEG_STATUS_COUNT)
            return invalid(s, op, "unknown segment status");
    *version_id = 0;
    if (n_changed) *n_changed = 0;
    int64_t now = now_ms(s);
    ver_base *base = NULL;
    int32_t n_base = 0, changed = 0;
    bool other_segments = false;
    mt_status ret = tx_begin(s, op);
    if (ret != MT_OK) return ret;

    /* the same content as the last save (or the import): nothing to record */
    int rc = SQLITE_OK;
    bind_int(s->st[ST_VER_LAST], 1, doc_id, &rc);
    ret = first_row(s, ST_VER_LAST, rc, op);
    if (ret == MT_ERR_NOTFOUND) {
        ret = mt_seterr(MT_ERR_NOTFOUND, "store %s: %s: no document %lld", s->path, op,
                        (long long)doc_id);
        goto fail;
    }
    if (ret != MT_OK) goto fail;
    const char *last = (const char *)sqlite3_column_text(s->st[ST_VER_LAST], 0);
    bool same = last && strcmp(last, content_hash) == 0;
    finish(s->st[ST_VER_LAST]);
    if (same) return tx_commit(s, "add version: commit");

    base = mt_try_calloc((size_t)(n > 0 ? n : 1), sizeof *base);
    if (base == NULL) {
        ret = mt_seterr(MT_ERR_NOMEM, "store %s: %s: out of memory", s->path, op);
        goto fail;
    }
    sqlite3_stmt *st = s->st[ST_VER_BASE];
    rc = SQLITE_OK;
    bind_int(st, 1, doc_id, &rc);
    if (rc != SQLITE_OK) {
        ret = fail_sql(s, rc, op);
        goto fail;
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t idx = sqlite3_column_int64(st, 0);
        if (idx != n_base || n_base >= n) {
            other_segments = true;
            break;
        }
        ver_base *b = &base[n_base++];
        b->seg_id = sqlite3_column_int64(st, 1);
        const char *t = (const char *)sqlite3_column_text(st, 2);
        if (t && (b->target = mt_try_strdup(t)) == NULL) {
            finish(st);
            ret = mt_seterr(MT_ERR_NOMEM, "store %s: %s: out of memory", s->path, op);
            goto fail;
        }
        b->status = sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 3);
    }
    finish(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        ret = fail_sql(s, rc, op);
        goto fail;
    }
    if (other_segments || n_base != n) {
        ret = mt_seterr(MT_ERR_INVALID,
                        "store %s: %s: document %lld has other segments than the %d saved", s->path,
                        op, (long long)doc_id, (int)n);
        goto fail;
    }

    rc = SQLITE_OK;
    bind_int(s->st[ST_VER_INSERT], 1, doc_id, &rc);
    bind_text(s->st[ST_VER_INSERT], 2, content_hash, &rc);
    bind_int(s->st[ST_VER_INSERT], 3, now, &rc);
    ret = run(s, ST_VER_INSERT, rc, op);
    if (ret != MT_OK) goto fail;
    int64_t vid = sqlite3_last_insert_rowid(s->db);
    for (int32_t i = 0; i < n; i++) {
        const ver_base *b = &base[i];
        if (same_target(b->target, segs[i].target) &&
            (b->status < 0 || b->status == (int)segs[i].status))
            continue;
        rc = SQLITE_OK;
        bind_int(s->st[ST_SEGVER_INSERT], 1, vid, &rc);
        bind_int(s->st[ST_SEGVER_INSERT], 2, b->seg_id, &rc);
        bind_text(s->st[ST_SEGVER_INSERT], 3, segs[i].target, &rc);
        bind_int(s->st[ST_SEGVER_INSERT], 4, segs[i].status, &rc);
        ret = run(s, ST_SEGVER_INSERT, rc, "add version: changed segment");
        if (ret != MT_OK) goto fail;
        changed++;
    }
    rc = SQLITE_OK;
    bind_int(s->st[ST_VER_CHANGED], 1, vid, &rc);
    bind_int(s->st[ST_VER_CHANGED], 2, changed, &rc);
    ret = run(s, ST_VER_CHANGED, rc, op);
    if (ret != MT_OK) goto fail;
    ret = tx_commit(s, "add version: commit");
    free_bases(base, n_base);
    if (ret != MT_OK) return ret;
    *version_id = vid;
    if (n_changed) *n_changed = changed;
    return MT_OK;
fail:
    free_bases(base, n_base);
    tx_rollback(s);
    return ret;
}

typedef struct ver_ctx {
    store_version_fn fn;
    store_version_segment_fn seg_fn;
    void *user;
} ver_ctx;

static int ver_row(sqlite3_stmt *st, void *ctx) {
    ver_ctx *c = ctx;
    store_version v = {
        .id = sqlite3_column_int64(st, 0),
        .doc_id = sqlite3_column_int64(st, 1),
        .content_hash = col_text(st, 2),
        .saved_ms = sqlite3_column_int64(st, 3),
        .n_changed = sqlite3_column_int(st, 4),
    };
    return c->fn(c->user, &v);
}

static int segver_row(sqlite3_stmt *st, void *ctx) {
    ver_ctx *c = ctx;
    store_version_segment g = {
        .index = sqlite3_column_int(st, 0),
        .seg_id = sqlite3_column_int64(st, 1),
        .target = col_text(st, 2),
        .status = (store_seg_status)sqlite3_column_int(st, 3),
        .source = col_text(st, 4),
    };
    return c->seg_fn(c->user, &g);
}

mt_status store_list_versions(store *s, int64_t doc_id, store_version_fn fn, void *user) {
    CHECK_STORE(s);
    MT_ASSERT(fn != NULL);
    ver_ctx c = {.fn = fn, .user = user};
    int rc = SQLITE_OK;
    bind_int(s->st[ST_VER_LIST], 1, doc_id, &rc);
    return each_row(s, ST_VER_LIST, rc, "list versions", ver_row, &c, NULL);
}

mt_status store_version_segments(store *s, int64_t version_id, store_version_segment_fn fn,
                                 void *user) {
    CHECK_STORE(s);
    MT_ASSERT(fn != NULL);
    ver_ctx c = {.seg_fn = fn, .user = user};
    int rc = SQLITE_OK;
    bind_int(s->st[ST_SEGVER_LIST], 1, version_id, &rc);
    return each_row(s, ST_SEGVER_LIST, rc, "list version segments", segver_row, &c, NULL);
}

/* Runs an UPDATE of one row; MT_ERR_NOTFOUND when it matched none. */
static mt_status update_one(store *s, int id, int rc, const char *op, const char *what,
                            int64_t row) {
    mt_status ret = run(s, id, rc, op);
    if (ret == MT_OK && sqlite3_changes(s->db) == 0)
        ret = mt_seterr(MT_ERR_NOTFOUND, "store %s: %s: no %s %lld", s->path, op, what,
                        (long long)row);
    return ret;
}

mt_status store_document_opened(store *s, int64_t doc_id) {
    CHECK_STORE(s);
    int rc = SQLITE_OK;
    bind_int(s->st[ST_DOC_OPENED], 1, doc_id, &rc);
    bind_int(s->st[ST_DOC_OPENED], 2, now_ms(s), &rc);
    return update_one(s, ST_DOC_OPENED, rc, "mark document opened", "document", doc_id);
}

typedef struct doc_ctx {
    store_document_fn fn;
    void *user;
} doc_ctx;

static int doc_row(sqlite3_stmt *st, void *ctx) {
    doc_ctx *c = ctx;
    store_document d = {
        .id = sqlite3_column_int64(st, 0),
        .path = col_text(st, 1),
        .format = (store_format)sqlite3_column_int(st, 2),
        .src_lang = col_text(st, 3),
        .tgt_lang = col_text(st, 4),
        .content_hash = col_text(st, 5),
        .created_ms = sqlite3_column_int64(st, 6),
        .opened_ms = sqlite3_column_int64(st, 7),
        .cursor_segment = sqlite3_column_int(st, 8),
        .cursor_offset = sqlite3_column_int(st, 9),
        .n_segments = sqlite3_column_int(st, 10),
    };
    return c->fn(c->user, &d);
}

mt_status store_get_document(store *s, int64_t doc_id, store_document_fn fn, void *user) {
    CHECK_STORE(s);
    MT_ASSERT(fn != NULL);
    doc_ctx c = {fn, user};
    int rc = SQLITE_OK;
    int64_t n = 0;
    bind_int(s->st[ST_DOC_GET], 1, doc_id, &rc);
    mt_status ret = each_row(s, ST_DOC_GET, rc, "get document", doc_row, &c, &n);
    if (ret == MT_OK && n == 0)
        ret = mt_seterr(MT_ERR_NOTFOUND, "store %s: no document %lld", s->path, (long long)doc_id);
    return ret;
}

mt_status store_list_documents(store *s, store_document_fn fn, void *user) {
    CHECK_STORE(s);
    MT_ASSERT(fn != NULL);
    doc_ctx c = {fn, user};
    return each_row(s, ST_DOC_LIST, SQLITE_OK, "list documents", doc_row, &c, NULL);
}

mt_status store_set_cursor(store *s, int64_t doc_id, int32_t segment, int32_t offset) {
    CHECK_STORE(s);
    if (segment < 0 || offset < 0) return invalid(s, "set cursor", "negative position");
    int rc = SQLITE_OK;
    bind_int(s->st[ST_CURSOR_SET], 1, doc_id, &rc);
    bind_int(s->st[ST_CURSOR_SET], 2, segment, &rc);
    bind_int(s->st[ST_CURSOR_SET], 3, offset, &rc);
    return update_one(s, ST_CURSOR_SET, rc, "set cursor", "document", doc_id);
}

mt_status store_get_cursor(store *s, int64_t doc_id, int32_t *segment, int32_t *offset) {
    CHECK_STORE(s);
    MT_ASSERT(segment != NULL && offset != NULL);
    int rc = SQLITE_OK;
    bind_int(s->st[ST_CURSOR_GET], 1, doc_id, &rc);
    mt_status ret = first_row(s, ST_CURSOR_GET, rc, "get cursor");
    if (ret == MT_ERR_NOTFOUND)
        return mt_seterr(ret, "store %s: get cursor: no document %lld", s->path, (long long)doc_id);
    if (ret != MT_OK) return ret;
    *segment = sqlite3_column_int(s->st[ST_CURSOR_GET], 0);
    *offset = sqlite3_column_int(s->st[ST_CURSOR_GET], 1);
    finish(s->st[ST_CURSOR_GET]);
    return MT_OK;
}

/* ------------------------------------------------------------- segments */

typedef struct seg_ctx {
    store_segment_fn fn;
    void *user;
} seg_ctx;

static int seg_row(sqlite3_stmt *st, void *ctx) {
    seg_ctx *c = ctx;
    store_segment g = {
        .id = sqlite3_column_int64(st, 0),
        .doc_id = sqlite3_column_int64(st, 1),
        .index = sqlite3_column_int(st, 2),
        .source = col_text(st, 3),
        .context = col_text(st, 4),
        .plural_source = col_text(st, 5),
        .plural_form = col_opt_int(st, 6),
        .original_target = col_text(st, 7),
        .target = col_text(st, 8),
        .status = (store_seg_status)sqlite3_column_int(st, 9),
        .source_words = sqlite3_column_int(st, 10),
        .time_spent_ms = sqlite3_column_int64(st, 11),
        .updated_ms = sqlite3_column_int64(st, 12),
    };
    return c->fn(c->user, &g);
}

mt_status store_list_segments(store *s, int64_t doc_id, unsigned status_mask, store_segment_fn fn,
                              void *user) {
    CHECK_STORE(s);
    MT_ASSERT(fn != NULL);
    seg_ctx c = {fn, user};
    int rc = SQLITE_OK;
    bind_int(s->st[ST_SEG_LIST], 1, doc_id, &rc);
    bind_int(s->st[ST_SEG_LIST], 2, status_mask & STORE_SEG_ALL, &rc);
    return each_row(s, ST_SEG_LIST, rc, "list segments", seg_row, &c, NULL);
}

mt_status store_get_segment(store *s, int64_t seg_id, store_segment_fn fn, void *user) {
    CHECK_STORE(s);
    MT_ASSERT(fn != NULL);
    seg_ctx c = {fn, user};
    int rc = SQLITE_OK;
    int64_t n = 0;
    bind_int(s->st[ST_SEG_GET], 1, seg_id, &rc);
    mt_status ret = each_row(s, ST_SEG_GET, rc, "get segment", seg_row, &c, &n);
    if (ret == MT_OK && n == 0)
        ret = mt_seterr(MT_ERR_NOTFOUND, "store %s: no segment %lld", s->path, (long long)seg_id);
    return ret;
}

mt_status store_get_segment_at(store *s, int64_t doc_id, int32_t index, store_segment_fn fn,
                               void *user) {
    CHECK_STORE(s);
    MT_ASSERT(fn != NULL);
    seg_ctx c = {fn, user};
    int rc = SQLITE_OK;
    int64_t n = 0;
    bind_int(s->st[ST_SEG_AT], 1, doc_id, &rc);
    bind_int(s->st[ST_SEG_AT], 2, index, &rc);
    mt_status ret = each_row(s, ST_SEG_AT, rc, "get segment", seg_row, &c, &n);
    if (ret == MT_OK && n == 0)
        ret = mt_seterr(MT_ERR_NOTFOUND, "store %s: document %lld has no segment %d", s->path,
                        (long long)doc_id, (int)index);
    return ret;
}

static int progress_row(sqlite3_stmt *st, void *ctx) {
    store_progress *p = ctx;
    int status = sqlite3_column_int(st, 0);
    if (status >= 0 && status < STORE_SEG_STATUS_COUNT) { /* the schema's FK guarantees it */
        p->segments[status] = sqlite3_column_int64(st, 1);
        p->words[status] = sqlite3_column_int64(st, 2);
        p->total_segments += p->segments[status];
        p->total_words += p->words[status];
    }
    return 0;
}

mt_status store_get_progress(store *s, int64_t doc_id, store_progress *out) {
    CHECK_STORE(s);
    MT_ASSERT(out != NULL);
    store_progress p;
    memset(&p, 0, sizeof p);
    int rc = SQLITE_OK, id = doc_id ? ST_PROGRESS_DOC : ST_PROGRESS_ALL;
    if (doc_id) bind_int(s->st[id], 1, doc_id, &rc);
    mt_status ret = each_row(s, id, rc, "progress", progress_row, &p, NULL);
    if (ret == MT_OK) *out = p;
    return ret;
}

/* White space of Unicode (Zs, and the ASCII and line/paragraph separators). */
static bool is_space(uint32_t c) {
    return c == ' ' || (c >= 0x09 && c <= 0x0d) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
           c == 0x205f || c == 0x3000;
}

/* Scripts written without spaces, counted a character per word (kana, CJK
** ideographs and their extensions and compatibility forms). */
static bool is_cjk(uint32_t c) {
    return (c >= 0x3040 && c <= 0x30ff) || (c >= 0x3400 && c <= 0x4dbf) ||
           (c >= 0x4e00 && c <= 0x9fff) || (c >= 0xf900 && c <= 0xfaff) ||
           (c >= 0x20000 && c <= 0x3ffff);
}

/* Decodes one UTF-8 sequence; a malformed byte reads as U+FFFD. */
static uint32_t next_codepoint(const unsigned char **p) {
    uint32_t c; /* NUL-terminated: decoding stops at the NUL */
    *p += mt_utf8_decode((const char *)*p, 4, &c);
    return c;
}

int32_t store_count_words(const char *text) {
    if (text == NULL) return 0;
    const unsigned char *p = (const unsigned char *)text;
    int32_t n = 0;
    bool in_word = false;
    while (*p) {
        uint32_t c = next_codepoint(&p);
        if (is_space(c)) {
            in_word = false;
        } else if (is_cjk(c)) {
            n++;
            in_word = false;
        } else if (!in_word) {
            n++;
            in_word = true;
        }
    }
    return n;
}

/* ------------------------------------------------------------ MT outputs */

mt_status store_add_mt(store *s, int64_t seg_id, int64_t model_id, const store_hyp *hyps, int32_t n,
                       int64_t *mt_id) {
    CHECK_STORE(s);
    MT_ASSERT(mt_id != NULL && (hyps != NULL || n == 0));
    const char *op = "record MT output";
    if (n < 1) return invalid(s, op, "empty n-best list");
    for (int32_t i = 0; i < n; i++)
        if (hyps[i].text == NULL) return invalid(s, op, "hypothesis without text");
    mt_status ret = tx_begin(s, op);
    if (ret != MT_OK) return ret;
    sqlite3_stmt *st = s->st[ST_MT_INSERT];
    int rc = SQLITE_OK;
    bind_int(st, 1, seg_id, &rc);
    bind_opt(st, 2, model_id, model_id != 0, &rc);
    bind_int(st, 3, now_ms(s), &rc);
    bind_int(st, 4, n, &rc);
    ret = run(s, ST_MT_INSERT, rc, "record MT output (unknown segment or model?)");
    if (ret != MT_OK) goto fail;
    int64_t id = sqlite3_last_insert_rowid(s->db);
    st = s->st[ST_HYP_INSERT];
    for (int32_t i = 0; i < n; i++) {
        rc = SQLITE_OK;
        bind_int(st, 1, id, &rc);
        bind_int(st, 2, i, &rc);
        bind_text(st, 3, hyps[i].text, &rc);
        bind_double(st, 4, hyps[i].score, &rc);
        ret = run(s, ST_HYP_INSERT, rc, "record MT output: hypothesis");
        if (ret != MT_OK) goto fail;
    }
    ret = tx_commit(s, "record MT output: commit");
    if (ret != MT_OK) return ret;
    *mt_id = id;
    return MT_OK;
fail:
    tx_rollback(s);
    return ret;
}

typedef struct mt_ctx {
    store_mt_fn fn;
    void *user;
} mt_ctx;

static int mt_row(sqlite3_stmt *st, void *ctx) {
    mt_ctx *c = ctx;
    store_mt_row r = {
        .mt_id = sqlite3_column_int64(st, 0),
        .seg_id = sqlite3_column_int64(st, 1),
        .model_id = col_id(st, 2),
        .time_ms = sqlite3_column_int64(st, 3),
        .rank = sqlite3_column_int(st, 4),
        .text = col_text(st, 5),
        .score = sqlite3_column_double(st, 6),
    };
    return c->fn(c->user, &r);
}

mt_status store_list_mt(store *s, int64_t seg_id, store_mt_fn fn, void *user) {
    CHECK_STORE(s);
    MT_ASSERT(fn != NULL);
    mt_ctx c = {fn, user};
    int rc = SQLITE_OK;
    bind_int(s->st[ST_MT_LIST], 1, seg_id, &rc);
    return each_row(s, ST_MT_LIST, rc, "list MT outputs", mt_row, &c, NULL);
}

/* ----------------------------------------------------------------- edits */

/* Inside a transaction: sets the segment's target and status, then inserts
** the edit event; *edit_id gets its id. */
static mt_status write_edit(store *s, const store_edit_in *e, store_seg_status status, int64_t now,
                            const char *op, int64_t *edit_id) {
    sqlite3_stmt *st = s->st[ST_SEG_UPDATE];
    int rc = SQLITE_OK;
    bind_int(st, 1, e->seg_id, &rc);
    bind_text(st, 2, e->text, &rc);
    bind_int(st, 3, status, &rc);
    bind_int(st, 4, e->spent_ms, &rc);
    bind_int(st, 5, now, &rc);
    mt_status ret = update_one(s, ST_SEG_UPDATE, rc, op, "segment", e->seg_id);
    if (ret != MT_OK) return ret;

    st = s->st[ST_EDIT_INSERT];
    rc = SQLITE_OK;
    bind_int(st, 1, e->seg_id, &rc);
    bind_int(st, 2, e->kind, &rc);
    bind_text(st, 3, e->text, &rc);
    bind_int(st, 4, now, &rc);
    bind_int(st, 5, e->spent_ms, &rc);
    bind_int(st, 6, e->keystrokes, &rc);
    bind_opt(st, 7, e->mt_id, e->mt_id != 0, &rc);
    bind_opt(st, 8, e->mt_rank, e->mt_id != 0, &rc);
    ret = run(s, ST_EDIT_INSERT, rc, e->mt_id ? "record edit (unknown MT output?)" : op);
    if (ret == MT_OK) *edit_id = sqlite3_last_insert_rowid(s->db);
    return ret;
}

static mt_status check_edit(store *s, const store_edit_in *e, const char *op) {
    if (e->text == NULL) return invalid(s, op, "no text");
    if (e->spent_ms < 0 || e->keystrokes < 0)
        return invalid(s, op, "negative time spent or keystroke count");
    if (e->mt_id != 0 && e->mt_rank < 0) return invalid(s, op, "MT output without a rank");
    return MT_OK;
}

mt_status store_record_edit(store *s, const store_edit_in *e, int64_t *edit_id) {
    CHECK_STORE(s);
    MT_ASSERT(e != NULL && edit_id != NULL);
    const char *op = "record edit";
    if ((unsigned)e->kind >= STORE_EDIT_KIND_COUNT || e->kind == STORE_EDIT_CONFIRM)
        return invalid(s, op, "unknown edit kind (confirmations go through store_confirm)");
    mt_status ret = check_edit(s, e, op);
    if (ret != MT_OK) return ret;
    store_seg_status status = e->kind == STORE_EDIT_ACCEPT_ALL || e->kind == STORE_EDIT_NBEST_PICK
                                  ? STORE_SEG_MT
                                  : STORE_SEG_EDITED;
    int64_t id = 0;
    ret = tx_begin(s, op);
    if (ret != MT_OK) return ret;
    ret = write_edit(s, e, status, now_ms(s), op, &id);
    if (ret != MT_OK) {
        tx_rollback(s);
        return ret;
    }
    ret = tx_commit(s, "record edit: commit");
    if (ret != MT_OK) return ret;
    *edit_id = id;
    return MT_OK;
}

mt_status store_confirm(store *s, int64_t seg_id, const char *text, int64_t spent_ms,
                        int32_t keystrokes, int64_t *confirmation_id) {
    CHECK_STORE(s);
    MT_ASSERT(confirmation_id != NULL);
    const char *op = "confirm segment";
    store_edit_in e = {.seg_id = seg_id,
                       .kind = STORE_EDIT_CONFIRM,
                       .text = text,
                       .spent_ms = spent_ms,
                       .keystrokes = keystrokes};
    mt_status ret = check_edit(s, &e, op);
    if (ret != MT_OK) return ret;
    int64_t now = now_ms(s), edit_id = 0;
    ret = tx_begin(s, op);
    if (ret != MT_OK) return ret;
    ret = write_edit(s, &e, STORE_SEG_CONFIRMED, now, op, &edit_id);
    if (ret != MT_OK) goto fail;
    sqlite3_stmt *st = s->st[ST_CONF_INSERT];
    int rc = SQLITE_OK;
    bind_int(st, 1, seg_id, &rc);
    bind_int(st, 2, edit_id, &rc);
    bind_text(st, 3, text, &rc);
    bind_int(st, 4, now, &rc);
    bind_int(st, 5, spent_ms, &rc);
    ret = run(s, ST_CONF_INSERT, rc, op);
    if (ret != MT_OK) goto fail;
    int64_t id = sqlite3_last_insert_rowid(s->db);
    ret = tx_commit(s, "confirm segment: commit");
    if (ret != MT_OK) return ret;
    *confirmation_id = id;
    return MT_OK;
fail:
    tx_rollback(s);
    return ret;
}

typedef struct edit_ctx {
    store_edit_fn fn;
    void *user;
} edit_ctx;

static int edit_row(sqlite3_stmt *st, void *ctx) {
    edit_ctx *c = ctx;
    store_edit e = {
        .id = sqlite3_column_int64(st, 0),
        .seg_id = sqlite3_column_int64(st, 1),
        .doc_id = sqlite3_column_int64(st, 2),
        .seg_index = sqlite3_column_int(st, 3),
        .kind = (store_edit_kind)sqlite3_column_int(st, 4),
        .source = col_text(st, 5),
        .text = col_text(st, 6),
        .time_ms = sqlite3_column_int64(st, 7),
        .spent_ms = sqlite3_column_int64(st, 8),
        .keystrokes = sqlite3_column_int(st, 9),
        .mt_id = col_id(st, 10),
        .mt_rank = col_opt_int(st, 11),
    };
    return c->fn(c->user, &e);
}

mt_status store_list_edits_since(store *s, int64_t since_ms, store_edit_fn fn, void *user) {
    CHECK_STORE(s);
    MT_ASSERT(fn != NULL);
    edit_ctx c = {fn, user};
    int rc = SQLITE_OK;
    bind_int(s->st[ST_EDITS_SINCE], 1, since_ms, &rc);
    return each_row(s, ST_EDITS_SINCE, rc, "list edits", edit_row, &c, NULL);
}

typedef struct export_ctx {
    store_export_fn fn;
    void *user;
} export_ctx;

static int export_row(sqlite3_stmt *st, void *ctx) {
    export_ctx *c = ctx;
    store_export_row r = {
        .doc_id = sqlite3_column_int64(st, 0),
        .seg_id = sqlite3_column_int64(st, 1),
        .confirmation_id = sqlite3_column_int64(st, 2),
        .seg_index = sqlite3_column_int(st, 3),
        .doc_path = col_text(st, 4),
        .src_lang = col_text(st, 5),
        .tgt_lang = col_text(st, 6),
        .context = col_text(st, 7),
        .source = col_text(st, 8),
        .target = col_text(st, 9),
        .time_ms = sqlite3_column_int64(st, 10),
    };
    return c->fn(c->user, &r);
}

mt_status store_export_confirmed(store *s, int64_t doc_id, store_export_fn fn, void *user) {
    CHECK_STORE(s);
    MT_ASSERT(fn != NULL);
    export_ctx c = {fn, user};
    int rc = SQLITE_OK, id = doc_id ? ST_EXPORT_DOC : ST_EXPORT_ALL;
    if (doc_id) bind_int(s->st[id], 1, doc_id, &rc);
    return each_row(s, id, rc, "export confirmed segments", export_row, &c, NULL);
}

typedef struct confirmed_ctx {
    store_confirmed_fn fn;
    void *user;
} confirmed_ctx;

static int confirmed_row(sqlite3_stmt *st, void *ctx) {
    confirmed_ctx *c = ctx;
    store_confirmed r = {
        .seg_id = sqlite3_column_int64(st, 0),
        .doc_id = sqlite3_column_int64(st, 1),
        .doc_path = col_text(st, 2),
        .source = col_text(st, 3),
        .target = col_text(st, 4),
        .time_ms = sqlite3_column_int64(st, 5),
        .mt = col_text(st, 6),
    };
    return c->fn(c->user, &r);
}

mt_status store_list_confirmed(store *s, int64_t doc_id, int64_t since_ms, store_confirmed_fn fn,
                               void *user) {
    CHECK_STORE(s);
    MT_ASSERT(fn != NULL);
    confirmed_ctx c = {fn, user};
    int rc = SQLITE_OK;
    bind_int(s->st[ST_CONFIRMED], 1, doc_id, &rc);
    bind_int(s->st[ST_CONFIRMED], 2, since_ms, &rc);
    return each_row(s, ST_CONFIRMED, rc, "list confirmed segments", confirmed_row, &c, NULL);
}

/* ------------------------------------------------------ models and runs */

mt_status store_find_model(store *s, const char *path, int64_t *model_id) {
    CHECK_STORE(s);
    MT_ASSERT(model_id != NULL);
    if (path == NULL) return invalid(s, "find model", "no path");
    int rc = SQLITE_OK;
    bind_text(s->st[ST_MODEL_FIND], 1, path, &rc);
    mt_status ret = first_row(s, ST_MODEL_FIND, rc, "find model");
    if (ret == MT_ERR_NOTFOUND) return mt_seterr(ret, "store %s: no model %s", s->path, path);
    if (ret != MT_OK) return ret;
    *model_id = sqlite3_column_int64(s->st[ST_MODEL_FIND], 0);
    finish(s->st[ST_MODEL_FIND]);
    return MT_OK;
}

mt_status store_add_model(store *s, const char *path, const char *name, const char *kind,
                          int64_t *model_id) {
    CHECK_STORE(s);
    MT_ASSERT(model_id != NULL);
    const char *op = "add model";
    if (!path || !name || !kind) return invalid(s, op, "path, name and kind are required");
    mt_status ret = tx_begin(s, op);
    if (ret != MT_OK) return ret;
    int64_t id = 0;
    int rc = SQLITE_OK;
    bind_text(s->st[ST_MODEL_FIND], 1, path, &rc);
    ret = first_row(s, ST_MODEL_FIND, rc, op);
    if (ret == MT_OK) {
        id = sqlite3_column_int64(s->st[ST_MODEL_FIND], 0);
        finish(s->st[ST_MODEL_FIND]);
    } else if (ret == MT_ERR_NOTFOUND) {
        sqlite3_stmt *st = s->st[ST_MODEL_INSERT];
        rc = SQLITE_OK;
        bind_text(st, 1, path, &rc);
        bind_text(st, 2, name, &rc);
        bind_text(st, 3, kind, &rc);
        bind_int(st, 4, now_ms(s), &rc);
        ret = run(s, ST_MODEL_INSERT, rc, op);
        id = sqlite3_last_insert_rowid(s->db);
    }
    if (ret != MT_OK) {
        tx_rollback(s);
        return ret;
    }
    ret = tx_commit(s, "add model: commit");
    if (ret != MT_OK) return ret;
    *model_id = id;
    return MT_OK;
}

typedef struct model_ctx {
    store_model_fn fn;
    void *user;
} model_ctx;

static int model_row(sqlite3_stmt *st, void *ctx) {
    model_ctx *c = ctx;
    store_model m = {
        .id = sqlite3_column_int64(st, 0),
        .path = col_text(st, 1),
        .name = col_text(st, 2),
        .kind = col_text(st, 3),
        .created_ms = sqlite3_column_int64(st, 4),
    };
    return c->fn(c->user, &m);
}

mt_status store_list_models(store *s, store_model_fn fn, void *user) {
    CHECK_STORE(s);
    MT_ASSERT(fn != NULL);
    model_ctx c = {fn, user};
    return each_row(s, ST_MODEL_LIST, SQLITE_OK, "list models", model_row, &c, NULL);
}

mt_status store_run_begin(store *s, int64_t base_model_id, int64_t n_edits, int64_t data_until_ms,
                          const char *log_path, int64_t *run_id) {
    CHECK_STORE(s);
    MT_ASSERT(run_id != NULL);
    if (n_edits < 0) return invalid(s, "start fine-tuning run", "negative edit count");
    sqlite3_stmt *st = s->st[ST_RUN_INSERT];
    int rc = SQLITE_OK;
    bind_int(st, 1, base_model_id, &rc);
    bind_int(st, 2, now_ms(s), &rc);
    bind_int(st, 3, n_edits, &rc);
    bind_int(st, 4, data_until_ms, &rc);
    bind_text(st, 5, log_path, &rc);
    mt_status ret = run(s, ST_RUN_INSERT, rc, "start fine-tuning run (unknown base model?)");
    if (ret != MT_OK) return ret;
    *run_id = sqlite3_last_insert_rowid(s->db);
    return MT_OK;
}

typedef struct run_ctx {
    store_run_fn fn;
    void *user;
} run_ctx;

static int run_row(sqlite3_stmt *st, void *ctx) {
    run_ctx *c = ctx;
    store_run r = {
        .id = sqlite3_column_int64(st, 0),
        .base_model_id = sqlite3_column_int64(st, 1),
        .output_model_id = col_id(st, 2),
        .status = (store_run_status)sqlite3_column_int(st, 3),
        .started_ms = sqlite3_column_int64(st, 4),
        .ended_ms = col_id(st, 5),
        .n_edits = sqlite3_column_int64(st, 6),
        .data_until_ms = sqlite3_column_int64(st, 7),
        .log_path = col_text(st, 8),
        .metrics_json = col_text(st, 9),
    };
    return c->fn(c->user, &r);
}

static int count_row(void *user, const store_run *r) {
    (*(int *)user)++;
    return 0;
}

mt_status store_run_end(store *s, int64_t run_id, store_run_status status, int64_t output_model_id,
                        const char *metrics_json) {
    CHECK_STORE(s);
    const char *op = "end fine-tuning run";
    if (status == STORE_RUN_RUNNING || (unsigned)status >= STORE_RUN_STATUS_COUNT)
        return invalid(s, op, "the final status must be done, failed or cancelled");
    sqlite3_stmt *st = s->st[ST_RUN_END];
    int rc = SQLITE_OK;
    bind_int(st, 1, run_id, &rc);
    bind_int(st, 2, status, &rc);
    bind_int(st, 3, now_ms(s), &rc);
    bind_opt(st, 4, output_model_id, output_model_id != 0, &rc);
    bind_text(st, 5, metrics_json, &rc);
    mt_status ret = run(s, ST_RUN_END, rc, "end fine-tuning run (metrics not JSON?)");
    if (ret != MT_OK || sqlite3_changes(s->db) == 1) return ret;
    /* No row changed: unknown run, or one that already ended. */
    int n = 0;
    ret = store_get_run(s, run_id, count_row, &n);
    if (ret != MT_OK) return ret; /* NOTFOUND, with its message */
    return mt_seterr(MT_ERR_INVALID, "store %s: %s: run %lld has already ended", s->path, op,
                     (long long)run_id);
}

mt_status store_get_run(store *s, int64_t run_id, store_run_fn fn, void *user) {
    CHECK_STORE(s);
    MT_ASSERT(fn != NULL);
    run_ctx c = {fn, user};
    int rc = SQLITE_OK;
    int64_t n = 0;
    bind_int(s->st[ST_RUN_GET], 1, run_id, &rc);
    mt_status ret = each_row(s, ST_RUN_GET, rc, "get fine-tuning run", run_row, &c, &n);
    if (ret == MT_OK && n == 0)
        ret = mt_seterr(MT_ERR_NOTFOUND, "store %s: no fine-tuning run %lld", s->path,
                        (long long)run_id);
    return ret;
}

mt_status store_list_runs(store *s, store_run_fn fn, void *user) {
    CHECK_STORE(s);
    MT_ASSERT(fn != NULL);
    run_ctx c = {fn, user};
    return each_row(s, ST_RUN_LIST, SQLITE_OK, "list fine-tuning runs", run_row, &c, NULL);
}

/* ------------------------------------------------- translation memory */

/* Candidate weights by segment id: open addressing, id 0 = free slot; the
** filled slots are listed in `used`, so that clearing and walking cost what
** was filled.  Kept in the store between lookups (no fresh pages each time). */
struct cand_map {
    int64_t *ids;
    double *w;
    uint32_t *used;
    size_t cap, n; /* cap: a power of two */
};

static size_t cand_slot(const cand_map *m, int64_t id) {
    size_t h = ((uint64_t)id * 0x9e3779b97f4a7c15ull) >> 20 & (m->cap - 1);
    while (m->ids[h] != 0 && m->ids[h] != id)
        h = (h + 1) & (m->cap - 1);
    return h;
}

static bool cand_grow(cand_map *m) {
    cand_map g = {.cap = m->cap ? m->cap * 2 : 4096, .n = m->n};
    g.ids = mt_try_calloc(g.cap, sizeof *g.ids);
    g.w = mt_try_malloc(g.cap * sizeof *g.w);
    g.used = mt_try_malloc(g.cap / 2 * sizeof *g.used);
    if (g.ids == NULL || g.w == NULL || g.used == NULL) {
        mt_free(g.ids);
        mt_free(g.w);
        mt_free(g.used);
        return false;
    }
    for (size_t k = 0; k < m->n; k++) {
        size_t old = m->used[k], h = cand_slot(&g, m->ids[old]);
        g.ids[h] = m->ids[old];
        g.w[h] = m->w[old];
        g.used[k] = (uint32_t)h;
    }
    mt_free(m->ids);
    mt_free(m->w);
    mt_free(m->used);
    *m = g;
    return true;
}

/* Adds w to id's weight; a new id only when add_new. */
static bool cand_add(cand_map *m, int64_t id, double w, bool add_new) {
    if ((m->n + 1) * 2 > m->cap && !cand_grow(m)) return false;
    size_t h = cand_slot(m, id);
    if (m->ids[h] == 0) {
        if (!add_new) return true;
        m->ids[h] = id;
        m->w[h] = 0;
        m->used[m->n++] = (uint32_t)h;
    }
    m->w[h] += w;
    return true;
}

static void cand_clear(cand_map *m) {
    for (size_t k = 0; k < m->n; k++)
        m->ids[m->used[k]] = 0;
    m->n = 0;
}

static void cand_free(cand_map *m) {
    if (m == NULL) return;
    mt_free(m->ids);
    mt_free(m->w);
    mt_free(m->used);
    mt_free(m);
}

/* A query term: its text, its document frequency, and whether it is taken. */
typedef struct q_term {
    char text[TM_TERM_MAX + 4];
    int64_t df;
    bool taken;
} q_term;

typedef struct term_ctx {
    q_term *terms;
    int32_t n, cap;
    int32_t *tok_term; /* pairs (word token index, term index) */
    int32_t n_pairs, cap_pairs;
    int32_t cur_tok;
    bool failed;
} term_ctx;

static int collect_term(void *user, const char *term, size_t len) {
    term_ctx *c = user;
    int32_t k = 0;
    while (k < c->n && !(strlen(c->terms[k].text) == len && !memcmp(c->terms[k].text, term, len)))
        k++;
    if (k == c->n) {
        if (c->n == c->cap) {
            int32_t cap = c->cap ? c->cap * 2 : 16;
            q_term *t = mt_try_realloc(c->terms, (size_t)cap * sizeof *t);
            if (t == NULL) {
                c->failed = true;
                return 1;
            }
            c->terms = t;
            c->cap = cap;
        }
        memcpy(c->terms[k].text, term, len);
        c->terms[k].text[len] = '\0';
        c->terms[k].df = 0;
        c->terms[k].taken = false;
        c->n++;
    }
    if (c->n_pairs == c->cap_pairs) {
        int32_t cap = c->cap_pairs ? c->cap_pairs * 2 : 32;
        int32_t *p = mt_try_realloc(c->tok_term, (size_t)cap * 2 * sizeof *p);
        if (p == NULL) {
            c->failed = true;
            return 1;
        }
        c->tok_term = p;
        c->cap_pairs = cap;
    }
    c->tok_term[2 * c->n_pairs] = c->cur_tok;
    c->tok_term[2 * c->n_pairs + 1] = k;
    c->n_pairs++;
    return 0;
}

/* A match found, with copies of its strings. */
typedef struct tm_hit {
    store_tm_match m;
    char *source, *target, *path;
    int64_t updated_ms;
} tm_hit;

static int hit_order(const void *pa, const void *pb) {
    const tm_hit *a = pa, *b = pb;
    if (a->m.score != b->m.score) return a->m.score > b->m.score ? -1 : 1;
    if (a->m.hard != b->m.hard) return a->m.hard < b->m.hard ? -1 : 1;
    if (a->m.soft != b->m.soft) return a->m.soft < b->m.soft ? -1 : 1;
    if (a->updated_ms != b->updated_ms) return a->updated_ms > b->updated_ms ? -1 : 1;
    return a->m.seg_id > b->m.seg_id ? -1 : a->m.seg_id < b->m.seg_id;
}

typedef struct heap_item {
    double w;
    int64_t id;
} heap_item;

/* Min-heap on w of the best candidates. */
static void heap_push(heap_item *h, int32_t *n, int32_t cap, heap_item it) {
    if (*n == cap) {
        if (it.w <= h[0].w) return;
        h[0] = it; /* replace the smallest, sift down */
        int32_t i = 0;
        for (;;) {
            int32_t l = 2 * i + 1, r = l + 1, m = i;
            if (l < *n && h[l].w < h[m].w) m = l;
            if (r < *n && h[r].w < h[m].w) m = r;
            if (m == i) break;
            heap_item t = h[i];
            h[i] = h[m];
            h[m] = t;
            i = m;
        }
        return;
    }
    int32_t i = (*n)++;
    h[i] = it;
    while (i > 0 && h[(i - 1) / 2].w > h[i].w) {
        heap_item t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

/* Source of segment idx of a document: MT_OK with *out (mt_free) or NULL
** when there is none. */
static mt_status neighbour(store *s, int64_t doc_id, int32_t idx, char **out) {
    *out = NULL;
    if (idx < 0) return MT_OK;
    int rc = SQLITE_OK;
    bind_int(s->st[ST_TM_NEIGHBOUR], 1, doc_id, &rc);
    bind_int(s->st[ST_TM_NEIGHBOUR], 2, idx, &rc);
    mt_status ret = first_row(s, ST_TM_NEIGHBOUR, rc, "TM lookup: neighbour");
    if (ret == MT_ERR_NOTFOUND) return MT_OK;
    if (ret != MT_OK) return ret;
    const char *t = col_text(s->st[ST_TM_NEIGHBOUR], 0);
    *out = mt_try_strdup(t ? t : "");
    finish(s->st[ST_TM_NEIGHBOUR]);
    return *out ? MT_OK : mt_seterr(MT_ERR_NOMEM, "store %s: TM lookup: out of memory", s->path);
}

static bool same_neighbour(const char *want, const char *have) {
    return strcmp(want, have ? have : "") == 0;
}

/* Scores candidate seg_id and appends it to hits when it scores min or more. */
static mt_status score_candidate(store *s, const store_tm_query *q, const tm_tokens *qt,
                                 int64_t seg_id, tm_hit **hits, int32_t *n_hits, int32_t *cap) {
    /* the source first (most candidates end here), the rest for matches */
    int rc = SQLITE_OK;
    sqlite3_stmt *st = s->st[ST_TM_SRC];
    bind_int(st, 1, seg_id, &rc);
    mt_status ret = first_row(s, ST_TM_SRC, rc, "TM lookup: read segment");
    if (ret == MT_ERR_NOTFOUND) return MT_OK; /* no longer confirmed */
    if (ret != MT_OK) return ret;
    const char *src0 = col_text(st, 0);
    tm_tokens stok;
    ret = tm_tokenize(src0 ? src0 : "", &stok);
    if (ret != MT_OK) {
        finish(st);
        return ret;
    }
    /* hard >= |n - m|: a length that cannot reach min_score is skipped */
    int32_t n = qt->n, m = stok.n, lmax = n > m ? n : m, diff = n > m ? n - m : m - n;
    int score = -2, hard = 0, soft = 0;
    if (src0 && (strcmp(src0, q->source) == 0 ||
                 (lmax > 0 && (100 * (int64_t)(lmax - diff)) / lmax >= q->min_score) || lmax == 0))
        score = tm_score_tokens(q->source, qt, src0, &stok, &hard, &soft);
    tm_tokens_free(&stok);
    finish(st);
    if (score == -1) return mt_seterr(MT_ERR_NOMEM, "store %s: TM lookup: out of memory", s->path);
    if (score < q->min_score) return MT_OK;
    st = s->st[ST_TM_SEG];
    rc = SQLITE_OK;
    bind_int(st, 1, seg_id, &rc);
    ret = first_row(s, ST_TM_SEG, rc, "TM lookup: read segment");
    if (ret == MT_ERR_NOTFOUND) return MT_OK;
    if (ret != MT_OK) return ret;
    const char *src = col_text(st, 0), *tgt = col_text(st, 1);
    if (src == NULL || tgt == NULL) {
        finish(st);
        return MT_OK;
    }
    if (*n_hits == *cap) {
        int32_t c = *cap ? *cap * 2 : 16;
        tm_hit *h = mt_try_realloc(*hits, (size_t)c * sizeof *h);
        if (h == NULL) {
            finish(st);
            return mt_seterr(MT_ERR_NOMEM, "store %s: TM lookup: out of memory", s->path);
        }
        *hits = h;
        *cap = c;
    }
    tm_hit *h = &(*hits)[*n_hits];
    memset(h, 0, sizeof *h);
    h->source = mt_try_strdup(src);
    h->target = mt_try_strdup(tgt);
    h->path = mt_try_strdup(col_text(st, 5) ? col_text(st, 5) : "");
    h->m.seg_id = seg_id;
    h->m.doc_id = sqlite3_column_int64(st, 2);
    h->m.index = sqlite3_column_int(st, 3);
    h->m.origin = (store_origin)sqlite3_column_int(st, 4);
    h->updated_ms = sqlite3_column_int64(st, 6);
    h->m.score = score;
    h->m.hard = hard;
    h->m.soft = soft;
    finish(st);
    (*n_hits)++;
    if (!h->source || !h->target || !h->path)
        return mt_seterr(MT_ERR_NOMEM, "store %s: TM lookup: out of memory", s->path);
    if (score == 100 && q->prev != NULL && q->next != NULL) {
        char *before = NULL, *after = NULL;
        ret = neighbour(s, h->m.doc_id, h->m.index - 1, &before);
        if (ret == MT_OK) ret = neighbour(s, h->m.doc_id, h->m.index + 1, &after);
        if (ret == MT_OK && same_neighbour(q->prev, before) && same_neighbour(q->next, after))
            h->m.score = STORE_TM_ICE;
        mt_free(before);
        mt_free(after);
    }
    return ret;
}

/* Reads the postings of one term into the candidate map. */
static mt_status read_postings(store *s, const char *term, double w, bool add_new, cand_map *m) {
    char match[TM_TERM_MAX + 8];
    snprintf(match, sizeof match, "\"%s\"", term);
    sqlite3_stmt *st = s->st[ST_TM_POSTINGS];
    int rc = sqlite3_bind_text(st, 1, match, -1, SQLITE_TRANSIENT);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!cand_add(m, sqlite3_column_int64(st, 0), w, add_new)) {
            finish(st);
            return mt_seterr(MT_ERR_NOMEM, "store %s: TM lookup: out of memory", s->path);
        }
        rc = SQLITE_OK;
    }
    mt_status ret = rc == SQLITE_DONE ? MT_OK : fail_sql(s, rc, "TM lookup: postings");
    finish(st);
    return ret;
}

mt_status store_tm_lookup(store *s, const store_tm_query *q, store_tm_match_fn fn, void *user) {
    CHECK_STORE(s);
    MT_ASSERT(q != NULL && fn != NULL);
    const char *op = "TM lookup";
    if (q->source == NULL) return invalid(s, op, "no source text");
    if (q->min_score < 0 || q->min_score > 100) return invalid(s, op, "min score outside 0..100");
    if (q->max_results < 1) return invalid(s, op, "max results below 1");
    tm_tokens qt;
    mt_status ret = tm_tokenize(q->source, &qt);
    if (ret != MT_OK) return ret;
    /* one read transaction: one lock and one cache check for all the reads */
    bool in_tx = sqlite3_get_autocommit(s->db) != 0;
    if (in_tx) {
        ret = run(s, ST_BEGIN_READ, SQLITE_OK, "TM lookup: begin");
        if (ret != MT_OK) {
            tm_tokens_free(&qt);
            return ret;
        }
    }
    term_ctx tc = {0};
    cand_map *cm = NULL;
    tm_hit *hits = NULL;
    heap_item *heap = NULL;
    int32_t n_hits = 0, cap_hits = 0, n_heap = 0;
    bool *covered = NULL;

    /* the query's terms, word token by word token */
    int32_t n_word = 0; /* word tokens with one or more terms */
    for (int32_t k = 0; k < qt.n; k++) {
        if (qt.v[k].kind != TM_TOK_WORD) continue;
        tm_tokens one = {.text = qt.text, .v = &qt.v[k], .n = 1, .cap = 1};
        int32_t before = tc.n_pairs;
        tc.cur_tok = k;
        tm_each_term(&one, collect_term, &tc);
        if (tc.failed) break;
        if (tc.n_pairs > before) n_word++;
    }
    if (tc.failed) {
        ret = mt_seterr(MT_ERR_NOMEM, "store %s: %s: out of memory", s->path, op);
        goto done;
    }
    for (int32_t k = 0; k < tc.n; k++) {
        int rc = SQLITE_OK;
        bind_text(s->st[ST_TM_DF], 1, tc.terms[k].text, &rc);
        ret = first_row(s, ST_TM_DF, rc, "TM lookup: term frequency");
        if (ret == MT_OK) {
            tc.terms[k].df = sqlite3_column_int64(s->st[ST_TM_DF], 0);
            finish(s->st[ST_TM_DF]);
        } else if (ret != MT_ERR_NOTFOUND) {
            goto done;
        }
        ret = MT_OK;
    }
    /* the pairs refer to terms by index: sort a copy of the order instead */
    int32_t *order = mt_try_malloc(sizeof(int32_t) * (size_t)(tc.n + 1));
    covered = mt_try_calloc((size_t)qt.n + 1, sizeof *covered);
    if (order == NULL || covered == NULL) {
        mt_free(order);
        ret = mt_seterr(MT_ERR_NOMEM, "store %s: %s: out of memory", s->path, op);
        goto done;
    }
    /* order[k]: index of the k-th rarest term (insertion sort: few terms) */
    for (int32_t a = 0; a < tc.n; a++) {
        int32_t b = a - 1;
        while (b >= 0 && tc.terms[order[b]].df > tc.terms[a].df) {
            order[b + 1] = order[b];
            b--;
        }
        order[b + 1] = a;
    }
    /* a source scoring min_score or more shares at least need_tok tokens
    ** with the query, hence need_word word tokens: it contains a term of
    ** every set of terms that leaves fewer than need_word word tokens of the
    ** query without one of its terms */
    int64_t need_tok = ((int64_t)qt.n * q->min_score + 99) / 100;
    int64_t need_word = need_tok - (qt.n - n_word);
    int64_t uncovered = n_word, postings = 0;
    int32_t k = 0;
    for (; k < tc.n && need_word > 0 && uncovered >= need_word; k++) {
        q_term *t = &tc.terms[order[k]];
        if (postings + t->df > STORE_TM_POSTINGS_CAP) break; /* beyond: approximate */
        t->taken = true;
        postings += t->df;
        for (int32_t p = 0; p < tc.n_pairs; p++) {
            if (tc.tok_term[2 * p + 1] != order[k]) continue;
            int32_t tok = tc.tok_term[2 * p];
            if (!covered[tok]) {
                covered[tok] = true;
                uncovered--;
            }
        }
    }
    /* without a required set (too few words) the rarest terms in a budget
    ** give candidates, without the guarantee */
    bool guaranteed = k > 0;
    if (!guaranteed)
        for (int64_t extra = 0; k < tc.n; k++) {
            q_term *t = &tc.terms[order[k]];
            if (extra + t->df > STORE_TM_POSTINGS_EXTRA) break;
            t->taken = true;
            extra += t->df;
        }
    if (s->tm_cand == NULL && (s->tm_cand = mt_try_calloc(1, sizeof *s->tm_cand)) == NULL) {
        mt_free(order);
        ret = mt_seterr(MT_ERR_NOMEM, "store %s: %s: out of memory", s->path, op);
        goto done;
    }
    cm = s->tm_cand;
    cand_clear(cm);
    for (int32_t j = 0; j < tc.n && ret == MT_OK; j++) {
        q_term *t = &tc.terms[j];
        if (t->taken && t->df > 0)
            ret = read_postings(s, t->text, log1p(1e6 / (double)t->df), true, cm);
    }
    /* more candidates than get scored: the next rarest terms rank them */
    int32_t n_cand = STORE_TM_CANDIDATES + (q->max_results > 20 ? q->max_results * 4 : 0);
    for (int64_t extra = 0; k < tc.n && ret == MT_OK && cm->n > (size_t)n_cand; k++) {
        q_term *t = &tc.terms[order[k]];
        if (extra + t->df > STORE_TM_POSTINGS_EXTRA) break;
        extra += t->df;
        if (t->df > 0) ret = read_postings(s, t->text, log1p(1e6 / (double)t->df), false, cm);
    }
    mt_free(order);
    if (ret != MT_OK) goto done;
    /* identical sources always */
    {
        int rc = SQLITE_OK;
        sqlite3_stmt *st = s->st[ST_TM_EXACT];
        bind_text(st, 1, q->source, &rc);
        while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            if (!cand_add(cm, sqlite3_column_int64(st, 0), 1e12, true)) {
                finish(st);
                ret = mt_seterr(MT_ERR_NOMEM, "store %s: %s: out of memory", s->path, op);
                goto done;
            }
            rc = SQLITE_OK;
        }
        ret = rc == SQLITE_DONE ? MT_OK : fail_sql(s, rc, "TM lookup: exact matches");
        finish(st);
        if (ret != MT_OK) goto done;
    }
    /* the best candidates by weight (ties: the newest segment) */
    heap = mt_try_malloc(sizeof *heap * (size_t)n_cand);
    if (heap == NULL) {
        ret = mt_seterr(MT_ERR_NOMEM, "store %s: %s: out of memory", s->path, op);
        goto done;
    }
    for (size_t i = 0; i < cm->n; i++) {
        size_t h = cm->used[i];
        if (cm->ids[h] == q->exclude_seg_id) continue;
        heap_push(heap, &n_heap, n_cand,
                  (heap_item){cm->w[h] + (double)cm->ids[h] * 1e-15, cm->ids[h]});
    }
    for (int32_t i = 0; i < n_heap; i++) {
        ret = score_candidate(s, q, &qt, heap[i].id, &hits, &n_hits, &cap_hits);
        if (ret != MT_OK) goto done;
    }
    if (n_hits > 1) qsort(hits, (size_t)n_hits, sizeof *hits, hit_order);
    /* one line per (source, target): the best one */
    int32_t out = 0;
    for (int32_t i = 0; i < n_hits; i++) {
        bool dup = false;
        for (int32_t j = 0; j < out && !dup; j++)
            dup =
                !strcmp(hits[j].source, hits[i].source) && !strcmp(hits[j].target, hits[i].target);
        if (dup) {
            mt_free(hits[i].source);
            mt_free(hits[i].target);
            mt_free(hits[i].path);
            continue;
        }
        hits[out++] = hits[i];
    }
    n_hits = out;
    if (in_tx) {
        in_tx = false;
        ret = run(s, ST_COMMIT, SQLITE_OK, "TM lookup: end");
        if (ret != MT_OK) goto done;
    }
    s->in_callback = true;
    for (int32_t i = 0; i < n_hits && i < q->max_results; i++) {
        tm_hit *h = &hits[i];
        h->m.source = h->source;
        h->m.target = h->target;
        h->m.doc_path = h->path;
        if (fn(user, &h->m)) {
            ret = MT_ABORTED;
            break;
        }
    }
    s->in_callback = false;
done:
    if (in_tx) tx_rollback(s);
    for (int32_t i = 0; i < n_hits; i++) {
        mt_free(hits[i].source);
        mt_free(hits[i].target);
        mt_free(hits[i].path);
    }
    mt_free(hits);
    mt_free(heap);
    mt_free(covered);
    if (cm) cand_clear(cm);
    mt_free(tc.terms);
    mt_free(tc.tok_term);
    tm_tokens_free(&qt);
    return ret;
}

typedef struct tm_list_ctx {
    store_tm_row_fn fn;
    void *user;
} tm_list_ctx;

static int tm_list_row(sqlite3_stmt *st, void *ctx) {
    tm_list_ctx *c = ctx;
    store_tm_row r = {
        .source = col_text(st, 0),
        .target = col_text(st, 1),
        .src_lang = col_text(st, 2),
        .tgt_lang = col_text(st, 3),
        .format = (store_format)sqlite3_column_int(st, 4),
        .updated_ms = sqlite3_column_int64(st, 5),
    };
    return c->fn(c->user, &r);
}

mt_status store_tm_list(store *s, store_tm_row_fn fn, void *user) {
    CHECK_STORE(s);
    MT_ASSERT(fn != NULL);
    tm_list_ctx c = {fn, user};
    return each_row(s, ST_TM_LIST, SQLITE_OK, "list translation memory", tm_list_row, &c, NULL);
}

static int tm_stats_row(sqlite3_stmt *st, void *ctx) {
    store_tm_stats *t = ctx;
    int origin = sqlite3_column_int(st, 0), edited = sqlite3_column_int(st, 1);
    int64_t n = sqlite3_column_int64(st, 2), w = (int64_t)sqlite3_column_double(st, 3);
    t->segments += n;
    t->words += w;
    if (origin == STORE_ORIGIN_TM_IMPORT) {
        t->imported_segments += n;
        t->imported_words += w;
    } else if (edited) {
        t->editor_segments += n;
        t->editor_words += w;
    } else {
        t->opened_segments += n;
        t->opened_words += w;
    }
    return 0;
}

mt_status store_tm_get_stats(store *s, store_tm_stats *out) {
    CHECK_STORE(s);
    MT_ASSERT(out != NULL);
    store_tm_stats t;
    memset(&t, 0, sizeof t);
    mt_status ret = each_row(s, ST_TM_STATS, SQLITE_OK, "TM statistics", tm_stats_row, &t, NULL);
    if (ret != MT_OK) return ret;
    ret = first_row(s, ST_TM_STAT_DOCS, SQLITE_OK, "TM statistics");
    if (ret != MT_OK)
        return ret == MT_ERR_NOTFOUND ? fail_sql(s, SQLITE_ERROR, "TM statistics") : ret;
    t.documents = sqlite3_column_int64(s->st[ST_TM_STAT_DOCS], 0);
    t.imported_documents = sqlite3_column_int64(s->st[ST_TM_STAT_DOCS], 1);
    t.terms = sqlite3_column_int64(s->st[ST_TM_STAT_DOCS], 2);
    finish(s->st[ST_TM_STAT_DOCS]);
    *out = t;
    return MT_OK;
}
