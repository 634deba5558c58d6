/*
** test_store.c: the SQLite store (db/).  Every API function in ':memory:'
** and in a file; reopening; migrations from an empty database, from every
** older schema version and through synthetic steps (failure rolls back);
** refusal of non-SQLite files, other programs' databases, newer and damaged
** stores; SQLite errors as statuses (read-only, locked, disk full) with the
** committed edits intact; allocation failures inside SQLite.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "mt_base.h"
#include "store.h"
#include "store_impl.h"
#include "store_tm.h"

static char tmpdir[256];

static void tmp_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", tmpdir, name);
}

/* Removes a database and its WAL files. */
static void remove_db(const char *path) {
    char buf[1024];
    unlink(path);
    snprintf(buf, sizeof buf, "%s-wal", path);
    unlink(buf);
    snprintf(buf, sizeof buf, "%s-shm", path);
    unlink(buf);
    snprintf(buf, sizeof buf, "%s-journal", path);
    unlink(buf);
}

static bool file_exists(const char *path) { return access(path, F_OK) == 0; }

static long read_file(const char *path, unsigned char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    long n = (long)fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

static int write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, n, f);
    fclose(f);
    return w == n ? 0 : -1;
}

static bool contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

/* --------------------------------------------------------- fake clock */

typedef struct fake_clock {
    int64_t t;
} fake_clock;

static int64_t fake_now(void *user) { return ((fake_clock *)user)->t; }

/* ------------------------------------------------- row collectors */

#define TXT 512

static void copy_opt(char *dst, const char *src, bool *has) {
    if (has) *has = src != NULL;
    snprintf(dst, TXT, "%s", src ? src : "");
}

typedef struct seg_rec {
    store_segment g; /* strings re-pointed to the buffers below */
    char source[TXT], context[TXT], plural_source[TXT], original_target[TXT], target[TXT];
    bool has_context, has_plural, has_original, has_target;
} seg_rec;

typedef struct seg_list {
    int n, stop_after; /* stop_after > 0: return 1 after that many rows */
    seg_rec r[32];
} seg_list;

static int collect_seg(void *user, const store_segment *g) {
    seg_list *l = user;
    if (l->n < 32) {
        seg_rec *r = &l->r[l->n];
        r->g = *g;
        copy_opt(r->source, g->source, NULL);
        copy_opt(r->context, g->context, &r->has_context);
        copy_opt(r->plural_source, g->plural_source, &r->has_plural);
        copy_opt(r->original_target, g->original_target, &r->has_original);
        copy_opt(r->target, g->target, &r->has_target);
    }
    l->n++;
    return l->stop_after > 0 && l->n >= l->stop_after;
}

static seg_rec get_seg(store *s, int64_t seg_id) {
    seg_list l = {0};
    CHECK_STATUS(store_get_segment(s, seg_id, collect_seg, &l));
    CHECK(l.n == 1, "get segment %lld: %d rows", (long long)seg_id, l.n);
    return l.r[0];
}

typedef struct doc_rec {
    store_document d;
    char path[TXT], src[TXT], tgt[TXT], hash[TXT];
} doc_rec;

typedef struct doc_list {
    int n;
    doc_rec r[8];
} doc_list;

static int collect_doc(void *user, const store_document *d) {
    doc_list *l = user;
    if (l->n < 8) {
        doc_rec *r = &l->r[l->n];
        r->d = *d;
        copy_opt(r->path, d->path, NULL);
        copy_opt(r->src, d->src_lang, NULL);
        copy_opt(r->tgt, d->tgt_lang, NULL);
        copy_opt(r->hash, d->content_hash, NULL);
    }
    l->n++;
    return 0;
}

typedef struct mt_rec {
    store_mt_row m;
    char text[TXT];
} mt_rec;

typedef struct mt_list {
    int n;
    mt_rec r[16];
} mt_list;

static int collect_mt(void *user, const store_mt_row *m) {
    mt_list *l = user;
    if (l->n < 16) {
        l->r[l->n].m = *m;
        copy_opt(l->r[l->n].text, m->text, NULL);
    }
    l->n++;
    return 0;
}

typedef struct edit_rec {
    store_edit e;
    char source[TXT], text[TXT];
} edit_rec;

typedef struct edit_list {
    int n;
    edit_rec r[64];
} edit_list;

static int collect_edit(void *user, const store_edit *e) {
    edit_list *l = user;
    if (l->n < 64) {
        l->r[l->n].e = *e;
        copy_opt(l->r[l->n].source, e->source, NULL);
        copy_opt(l->r[l->n].text, e->text, NULL);
    }
    l->n++;
    return 0;
}

static int count_edits_fn(void *user, const store_edit *e) {
    (*(int *)user)++;
    return 0;
}

static int count_edits(store *s) {
    int n = 0;
    CHECK_STATUS(store_list_edits_since(s, INT64_MIN, count_edits_fn, &n));
    return n;
}

typedef struct export_rec {
    store_export_row x;
    char path[TXT], src[TXT], tgt[TXT], context[TXT], source[TXT], target[TXT];
    bool has_context;
} export_rec;

typedef struct export_list {
    int n;
    export_rec r[32];
} export_list;

static int collect_export(void *user, const store_export_row *x) {
    export_list *l = user;
    if (l->n < 32) {
        export_rec *r = &l->r[l->n];
        r->x = *x;
        copy_opt(r->path, x->doc_path, NULL);
        copy_opt(r->src, x->src_lang, NULL);
        copy_opt(r->tgt, x->tgt_lang, NULL);
        copy_opt(r->context, x->context, &r->has_context);
        copy_opt(r->source, x->source, NULL);
        copy_opt(r->target, x->target, NULL);
    }
    l->n++;
    return 0;
}

typedef struct model_list {
    int n;
    store_model m[8];
    char path[8][TXT], name[8][TXT], kind[8][TXT];
} model_list;

static int collect_model(void *user, const store_model *m) {
    model_list *l = user;
    if (l->n < 8) {
        l->m[l->n] = *m;
        copy_opt(l->path[l->n], m->path, NULL);
        copy_opt(l->name[l->n], m->name, NULL);
        copy_opt(l->kind[l->n], m->kind, NULL);
    }
    l->n++;
    return 0;
}

typedef struct run_list {
    int n;
    store_run r[8];
    char log[8][TXT], metrics[8][TXT];
    bool has_log[8], has_metrics[8];
} run_list;

static int collect_run(void *user, const store_run *r) {
    run_list *l = user;
    if (l->n < 8) {
        l->r[l->n] = *r;
        copy_opt(l->log[l->n], r->log_path, &l->has_log[l->n]);
        copy_opt(l->metrics[l->n], r->metrics_json, &l->has_metrics[l->n]);
    }
    l->n++;
    return 0;
}

static int64_t pragma_int(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    int64_t v = INT64_MIN;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static bool exec_ok(sqlite3 *db, const char *sql) {
    return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK;
}

/* ------------------------------------------------------ the test document */

/* UTF-8 of several scripts, combining marks, an emoji, RTL and a malformed
** byte sequence: all must come back byte for byte. */
static const char *const src_text[] = {
    "Hello, world!",
    "Gr\xc3\xbc\xc3\x9f"
    "e aus K\xc3\xb6ln",                                            /* Grüße aus Köln */
    "\xe6\x9d\xb1\xe4\xba\xac\xe3\x82\xbf\xe3\x83\xaf\xe3\x83\xbc", /* 東京タワー */
    "One file",
    "%d files",
    /* مرحبا 👋 été (e + combining acute) */
    "\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7 \xf0\x9f\x91\x8b e\xcc\x81t\xc3\xa9",
    "bad \xff\xfe bytes",
};
static const int32_t src_words[] = {2, 3, 5, 2, 2, 3, 3};
#define N_SEGS 7

static void make_segments(store_segment_in *segs) {
    memset(segs, 0, sizeof(store_segment_in) * N_SEGS);
    for (int i = 0; i < N_SEGS; i++) {
        segs[i].source = src_text[i];
        segs[i].status = STORE_SEG_NEW;
    }
    segs[0].context = "menu|File";
    segs[1].target = "Salutations de Cologne"; /* a target found in the file */
    segs[1].status = STORE_SEG_EDITED;
    segs[3].plural_source = "%d files"; /* msgid "One file" / msgid_plural "%d files" */
    segs[3].plural_form = 0;
    segs[4].plural_source = "%d files";
    segs[4].plural_form = 1;
    segs[4].context = "";
}

static const store_doc_info doc_info = {"docs/app.po", STORE_FORMAT_PO, "en", "de", "sha256:aa01"};

/* ------------------------------------------------------------- API test */

static void test_word_count(void) {
    static const struct {
        const char *text;
        int32_t words;
    } cases[] = {
        {"", 0},
        {"   \t\n", 0},
        {"a b  c\n", 3},
        {"  leading and trailing  ", 3},
        {"na\xc3\xafve caf\xc3\xa9", 2}, /* naïve café */
        {"a\xc2\xa0"
         "b",
         2}, /* NBSP */
        {"a\xe3\x80\x80"
         "b",
         2}, /* ideographic space */
        {"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3"
         "\x83\x88",
         8},                                     /* 日本語のテキスト */
        {"Use \xe6\x9d\xb1\xe4\xba\xac now", 4}, /* Use 東京 now */
        {"\xff\xfe", 1},
        {"x\xe2\x80\x83y", 2}, /* em space */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(store_count_words(cases[i].text) == cases[i].words, "words(%s) = %d, want %d",
              cases[i].text, store_count_words(cases[i].text), cases[i].words);
    CHECK(store_count_words(NULL) == 0, "words(NULL)");
    for (int i = 0; i < N_SEGS; i++)
        CHECK(store_count_words(src_text[i]) == src_words[i], "words of segment %d = %d", i,
              store_count_words(src_text[i]));
}

static void test_names(void) {
    CHECK(strcmp(store_format_name(STORE_FORMAT_XLIFF), "xliff") == 0, "format name");
    CHECK(strcmp(store_format_name(STORE_FORMAT_MOSES), "moses") == 0, "format name");
    CHECK(strcmp(store_seg_status_name(STORE_SEG_CONFIRMED), "confirmed") == 0, "status name");
    CHECK(strcmp(store_edit_kind_name(STORE_EDIT_NBEST_PICK), "nbest_pick") == 0, "kind name");
    CHECK(strcmp(store_run_status_name(STORE_RUN_CANCELLED), "cancelled") == 0, "run name");
    CHECK(strcmp(store_format_name((store_format)99), "?") == 0, "unknown format name");

    static const struct {
        int rc;
        mt_status want;
    } map[] = {
        {SQLITE_OK, MT_OK},
        {SQLITE_DONE, MT_OK},
        {SQLITE_NOMEM, MT_ERR_NOMEM},
        {SQLITE_IOERR_NOMEM, MT_ERR_NOMEM},
        {SQLITE_NOTADB, MT_ERR_FORMAT},
        {SQLITE_CORRUPT, MT_ERR_FORMAT},
        {SQLITE_ERROR, MT_ERR_FORMAT},
        {SQLITE_CONSTRAINT_FOREIGNKEY, MT_ERR_INVALID},
        {SQLITE_TOOBIG, MT_ERR_INVALID},
        {SQLITE_FULL, MT_ERR_IO},
        {SQLITE_IOERR_FSYNC, MT_ERR_IO},
        {SQLITE_READONLY, MT_ERR_IO},
        {SQLITE_BUSY, MT_ERR_IO},
        {SQLITE_CANTOPEN, MT_ERR_IO},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        CHECK(store_status_from_sqlite(map[i].rc) == map[i].want, "SQLite code %d -> %s", map[i].rc,
              mt_status_str(store_status_from_sqlite(map[i].rc)));
    CHECK(store_sqlite_error(NULL, SQLITE_FULL, "x.db", "write thing") == MT_ERR_IO &&
              contains(mt_errmsg(), "x.db") && contains(mt_errmsg(), "write thing") &&
              contains(mt_errmsg(), "full"),
          "error text: %s", mt_errmsg());
}

/* The enum names in the code and the lookup tables of the schema agree. */
static void check_lookup_tables(store *s) {
    static const struct {
        const char *table;
        int n;
        const char *(*name)(int);
    } t[] = {
        {"doc_format", STORE_FORMAT_COUNT, (const char *(*)(int))store_format_name},
        {"segment_status", STORE_SEG_STATUS_COUNT, (const char *(*)(int))store_seg_status_name},
        {"edit_kind", STORE_EDIT_KIND_COUNT, (const char *(*)(int))store_edit_kind_name},
        {"run_status", STORE_RUN_STATUS_COUNT, (const char *(*)(int))store_run_status_name},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT code, name FROM %s ORDER BY code", t[i].table);
        sqlite3_stmt *st = NULL;
        int n = 0;
        CHECK(sqlite3_prepare_v2(store_db(s), sql, -1, &st, NULL) == SQLITE_OK, "%s", sql);
        while (st && sqlite3_step(st) == SQLITE_ROW) {
            int code = sqlite3_column_int(st, 0);
            const char *name = (const char *)sqlite3_column_text(st, 1);
            CHECK(code == n && strcmp(name, t[i].name(code)) == 0, "%s row %d: %d %s", t[i].table,
                  n, code, name);
            n++;
        }
        sqlite3_finalize(st);
        CHECK(n == t[i].n, "%s has %d rows, enum %d", t[i].table, n, t[i].n);
    }
}

static void check_segments_as_imported(store *s, int64_t doc) {
    seg_list l = {0};
    CHECK_STATUS(store_list_segments(s, doc, STORE_SEG_ALL, collect_seg, &l));
    CHECK(l.n == N_SEGS, "segments: %d", l.n);
    for (int i = 0; i < N_SEGS && i < l.n; i++) {
        seg_rec *r = &l.r[i];
        CHECK(r->g.index == i && r->g.doc_id == doc, "segment %d index %d", i, r->g.index);
        CHECK(strcmp(r->source, src_text[i]) == 0, "segment %d source bytes changed", i);
        CHECK(r->g.source_words == src_words[i], "segment %d words %d", i, r->g.source_words);
    }
    if (l.n < N_SEGS) return;
    CHECK(l.r[0].has_context && strcmp(l.r[0].context, "menu|File") == 0, "context");
    CHECK(!l.r[2].has_context, "no context is NULL, not \"\"");
    CHECK(l.r[4].has_context && l.r[4].context[0] == '\0', "empty context stays \"\"");
    CHECK(!l.r[0].has_plural && l.r[0].g.plural_form == -1, "not plural");
    CHECK(l.r[3].has_plural && strcmp(l.r[3].plural_source, "%d files") == 0 &&
              l.r[3].g.plural_form == 0,
          "plural form 0");
    CHECK(l.r[4].has_plural && l.r[4].g.plural_form == 1, "plural form 1");
    CHECK(l.r[1].has_original && strcmp(l.r[1].original_target, "Salutations de Cologne") == 0,
          "original target");
    CHECK(!l.r[2].has_original && !l.r[2].has_target, "no target");
}

static void test_api(const char *path) {
    fprintf(stderr, "# API on %s\n", path);
    store *s = NULL;
    CHECK_STATUS(store_open(path, &s));
    if (!s) return;
    bool is_file = strcmp(path, ":memory:") != 0;
    sqlite3 *db = store_db(s);
    CHECK(pragma_int(db, "PRAGMA user_version") == store_schema_version(), "user_version");
    CHECK(pragma_int(db, "PRAGMA application_id") == STORE_APPLICATION_ID, "application_id");
    CHECK(pragma_int(db, "PRAGMA synchronous") == 2, "synchronous FULL");
    CHECK(pragma_int(db, "PRAGMA foreign_keys") == 1, "foreign keys on");
    if (is_file) {
        sqlite3_stmt *st = NULL;
        sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL);
        CHECK(st && sqlite3_step(st) == SQLITE_ROW &&
                  strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0,
              "journal mode WAL");
        sqlite3_finalize(st);
    }
    check_lookup_tables(s);
    CHECK_STATUS(store_check(s));

    fake_clock clk = {1700000000000};
    store_set_clock(s, fake_now, &clk);

    /* ---- documents */
    int64_t doc = 0, doc2 = 0, id = 0;
    CHECK(store_find_document(s, doc_info.path, doc_info.content_hash, &id) == MT_ERR_NOTFOUND,
          "find in empty store");
    CHECK(contains(mt_errmsg(), "docs/app.po"), "NOTFOUND names the path: %s", mt_errmsg());
    store_segment_in segs[N_SEGS];
    make_segments(segs);
    CHECK_STATUS(store_add_document(s, &doc_info, segs, N_SEGS, &doc));
    CHECK(doc > 0, "doc id");
    clk.t += 1000;
    id = -1;
    CHECK(store_add_document(s, &doc_info, segs, N_SEGS, &id) == MT_ERR_INVALID,
          "same path and hash twice");
    CHECK(id == -1, "no id on failure");
    CHECK(contains(mt_errmsg(), "already"), "%s", mt_errmsg());
    store_doc_info info2 = doc_info;
    info2.content_hash = "sha256:bb02"; /* the file changed: another document */
    info2.format = STORE_FORMAT_MOSES;
    CHECK_STATUS(store_add_document(s, &info2, segs, 2, &doc2));
    CHECK(doc2 > 0 && doc2 != doc, "second document");
    CHECK_STATUS(store_find_document(s, doc_info.path, doc_info.content_hash, &id));
    CHECK(id == doc, "find document");
    CHECK_STATUS(store_find_document(s, info2.path, info2.content_hash, &id));
    CHECK(id == doc2, "find second document");

    store_segment_in bad = segs[0];
    bad.source = NULL;
    store_doc_info info3 = doc_info;
    info3.content_hash = "sha256:cc03";
    CHECK(store_add_document(s, &info3, &bad, 1, &id) == MT_ERR_INVALID, "segment without source");
    bad.source = "x";
    bad.status = (store_seg_status)7;
    CHECK(store_add_document(s, &info3, &bad, 1, &id) == MT_ERR_INVALID, "bad status");
    info3.format = (store_format)9;
    CHECK(store_add_document(s, &info3, segs, 1, &id) == MT_ERR_INVALID, "bad format");
    info3.format = STORE_FORMAT_TEXT;
    info3.src_lang = NULL;
    CHECK(store_add_document(s, &info3, segs, 1, &id) == MT_ERR_INVALID, "no language");

    doc_list dl = {0};
    CHECK_STATUS(store_get_document(s, doc, collect_doc, &dl));
    CHECK(dl.n == 1, "get document rows %d", dl.n);
    if (dl.n == 1) {
        store_document *d = &dl.r[0].d;
        CHECK(d->id == doc && strcmp(dl.r[0].path, "docs/app.po") == 0, "doc path");
        CHECK(d->format == STORE_FORMAT_PO, "doc format");
        CHECK(strcmp(dl.r[0].src, "en") == 0 && strcmp(dl.r[0].tgt, "de") == 0, "doc langs");
        CHECK(strcmp(dl.r[0].hash, "sha256:aa01") == 0, "doc hash");
        CHECK(d->created_ms == 1700000000000 && d->opened_ms == 1700000000000, "doc times");
        CHECK(d->cursor_segment == 0 && d->cursor_offset == 0, "new cursor");
        CHECK(d->n_segments == N_SEGS, "n_segments %d", d->n_segments);
    }
    CHECK(store_get_document(s, 999, collect_doc, &dl) == MT_ERR_NOTFOUND, "unknown document");

    dl.n = 0;
    CHECK_STATUS(store_list_documents(s, collect_doc, &dl));
    CHECK(dl.n == 2 && dl.r[0].d.id == doc2 && dl.r[1].d.id == doc, "recent first");
    CHECK(dl.r[0].d.format == STORE_FORMAT_MOSES && dl.r[0].d.n_segments == 2, "second doc");
    clk.t += 1000;
    CHECK_STATUS(store_document_opened(s, doc));
    dl.n = 0;
    CHECK_STATUS(store_list_documents(s, collect_doc, &dl));
    CHECK(dl.n == 2 && dl.r[0].d.id == doc && dl.r[0].d.opened_ms == clk.t, "reopened first");
    CHECK(store_document_opened(s, 999) == MT_ERR_NOTFOUND, "open unknown document");

    /* ---- segments */
    check_segments_as_imported(s, doc);
    seg_list l = {0};
    CHECK_STATUS(store_list_segments(s, doc, STORE_SEG_MASK(STORE_SEG_EDITED), collect_seg, &l));
    CHECK(l.n == 1 && l.r[0].g.index == 1 && l.r[0].has_target &&
              strcmp(l.r[0].target, "Salutations de Cologne") == 0,
          "filter by status: %d rows", l.n);
    memset(&l, 0, sizeof l);
    l.stop_after = 2;
    CHECK(store_list_segments(s, doc, STORE_SEG_ALL, collect_seg, &l) == MT_ABORTED,
          "callback stops the listing");
    CHECK(l.n == 2, "stopped after 2 rows: %d", l.n);
    memset(&l, 0, sizeof l);
    CHECK_STATUS(store_list_segments(s, doc, 0, collect_seg, &l));
    CHECK(l.n == 0, "empty mask lists nothing");
    memset(&l, 0, sizeof l);
    CHECK_STATUS(store_get_segment_at(s, doc, 2, collect_seg, &l));
    CHECK(l.n == 1 && strcmp(l.r[0].source, src_text[2]) == 0, "segment at index 2");
    int64_t seg[N_SEGS];
    memset(&l, 0, sizeof l);
    CHECK_STATUS(store_list_segments(s, doc, STORE_SEG_ALL, collect_seg, &l));
    for (int i = 0; i < N_SEGS; i++)
        seg[i] = l.r[i].g.id;
    CHECK(store_get_segment_at(s, doc, N_SEGS, collect_seg, &l) == MT_ERR_NOTFOUND,
          "index past the end");
    CHECK(store_get_segment(s, 99999, collect_seg, &l) == MT_ERR_NOTFOUND, "unknown segment");

    /* ---- models */
    int64_t model = 0, model2 = 0;
    CHECK(store_find_model(s, "models/base.npz", &id) == MT_ERR_NOTFOUND, "no model yet");
    clk.t = 1700000100000;
    CHECK_STATUS(store_add_model(s, "models/base.npz", "ende-base", "transformer", &model));
    CHECK_STATUS(store_add_model(s, "models/base.npz", "other name", "rnn", &id));
    CHECK(id == model, "same path, same model");
    CHECK_STATUS(store_find_model(s, "models/base.npz", &id));
    CHECK(id == model, "find model");
    CHECK_STATUS(store_add_model(s, "models/ft1.npz", "ende-ft1", "transformer", &model2));
    CHECK(model2 != model, "second model");
    model_list ml = {0};
    CHECK_STATUS(store_list_models(s, collect_model, &ml));
    CHECK(ml.n == 2 && ml.m[0].id == model && strcmp(ml.name[0], "ende-base") == 0 &&
              strcmp(ml.kind[0], "transformer") == 0 && ml.m[0].created_ms == 1700000100000 &&
              strcmp(ml.path[1], "models/ft1.npz") == 0,
          "list models");
    CHECK(store_add_model(s, NULL, "x", "y", &id) == MT_ERR_INVALID, "model without path");

    /* ---- MT outputs */
    const char *hyp_de = "Hallo, Welt! \xe2\x80\x9e\xc3\x9c\xe2\x80\x9c"; /* „Ü“ */
    store_hyp hyps[3] = {{hyp_de, -0.25}, {"Hallo Welt!", -1.5}, {"Servus, Welt", -3.125}};
    int64_t mt1 = 0, mt2 = 0;
    clk.t = 1700000200000;
    CHECK_STATUS(store_add_mt(s, seg[0], model, hyps, 3, &mt1));
    clk.t += 10;
    CHECK_STATUS(store_add_mt(s, seg[0], 0, hyps + 1, 1, &mt2)); /* model unknown */
    mt_list mtl = {0};
    CHECK_STATUS(store_list_mt(s, seg[0], collect_mt, &mtl));
    CHECK(mtl.n == 4, "MT rows %d", mtl.n);
    if (mtl.n == 4) {
        CHECK(mtl.r[0].m.mt_id == mt2 && mtl.r[0].m.model_id == 0 && mtl.r[0].m.rank == 0,
              "newest first, unknown model is 0");
        for (int k = 0; k < 3; k++) {
            const store_mt_row *m = &mtl.r[1 + k].m;
            CHECK(m->mt_id == mt1 && m->model_id == model && m->rank == k &&
                      m->score == hyps[k].score && m->time_ms == 1700000200000 &&
                      m->seg_id == seg[0] && strcmp(mtl.r[1 + k].text, hyps[k].text) == 0,
                  "MT row %d", k);
        }
    }
    CHECK(store_add_mt(s, 99999, model, hyps, 1, &id) == MT_ERR_INVALID, "MT for unknown seg");
    CHECK(contains(mt_errmsg(), "record MT output"), "names the operation: %s", mt_errmsg());
    CHECK(store_add_mt(s, seg[0], 99999, hyps, 1, &id) == MT_ERR_INVALID, "unknown model");
    CHECK(store_add_mt(s, seg[0], model, hyps, 0, &id) == MT_ERR_INVALID, "empty n-best");
    mtl.n = 0;
    CHECK_STATUS(store_list_mt(s, seg[0], collect_mt, &mtl));
    CHECK(mtl.n == 4, "failed MT outputs left nothing behind: %d", mtl.n);

    /* ---- edits */
    int64_t e1 = 0, e2 = 0, e3 = 0, e4 = 0;
    clk.t = 1700000300000;
    store_edit_in ed = {seg[0], STORE_EDIT_ACCEPT_ALL, hyp_de, 1200, 1, mt1, 0};
    CHECK_STATUS(store_record_edit(s, &ed, &e1));
    seg_rec r = get_seg(s, seg[0]);
    CHECK(r.g.status == STORE_SEG_MT && strcmp(r.target, hyp_de) == 0, "accept all -> MT");
    CHECK(r.g.time_spent_ms == 1200 && r.g.updated_ms == clk.t, "time spent");
    clk.t += 2500;
    ed = (store_edit_in){seg[0], STORE_EDIT_TYPED, "Hallo, Welt!", 3700, 9, mt1, 0};
    CHECK_STATUS(store_record_edit(s, &ed, &e2));
    r = get_seg(s, seg[0]);
    CHECK(r.g.status == STORE_SEG_EDITED && strcmp(r.target, "Hallo, Welt!") == 0, "typed");
    clk.t += 500;
    ed = (store_edit_in){seg[0], STORE_EDIT_NBEST_PICK, "Servus, Welt", 100, 10, mt1, 2};
    CHECK_STATUS(store_record_edit(s, &ed, &e3));
    r = get_seg(s, seg[0]);
    CHECK(r.g.status == STORE_SEG_MT && r.g.time_spent_ms == 3700, "time spent never decreases");
    clk.t += 500;
    ed = (store_edit_in){seg[0], STORE_EDIT_UNDO, "Hallo, Welt!", 4500, 11, 0, 0};
    CHECK_STATUS(store_record_edit(s, &ed, &e4));
    r = get_seg(s, seg[0]);
    CHECK(r.g.status == STORE_SEG_EDITED && strcmp(r.target, "Hallo, Welt!") == 0, "undo");
    CHECK(e1 < e2 && e2 < e3 && e3 < e4, "edit ids increase");
    int n_edits = count_edits(s);
    CHECK(n_edits == 4, "4 edits, got %d", n_edits);

    /* failures leave the store as it was */
    int64_t before_time = r.g.updated_ms;
    ed = (store_edit_in){99999, STORE_EDIT_TYPED, "x", 1, 1, 0, 0};
    CHECK(store_record_edit(s, &ed, &id) == MT_ERR_NOTFOUND, "edit of unknown segment");
    ed = (store_edit_in){seg[0], STORE_EDIT_TYPED, "must not stay", 5000, 12, 99999, 0};
    CHECK(store_record_edit(s, &ed, &id) == MT_ERR_INVALID, "edit from unknown MT output");
    CHECK(contains(mt_errmsg(), "record edit"), "names the operation: %s", mt_errmsg());
    r = get_seg(s, seg[0]);
    CHECK(strcmp(r.target, "Hallo, Welt!") == 0 && r.g.updated_ms == before_time &&
              r.g.time_spent_ms == 4500,
          "the failed edit's segment update was rolled back: %s", r.target);
    ed = (store_edit_in){seg[0], STORE_EDIT_CONFIRM, "x", 1, 1, 0, 0};
    CHECK(store_record_edit(s, &ed, &id) == MT_ERR_INVALID, "confirm through record_edit");
    ed = (store_edit_in){seg[0], STORE_EDIT_TYPED, NULL, 1, 1, 0, 0};
    CHECK(store_record_edit(s, &ed, &id) == MT_ERR_INVALID, "edit without text");
    ed = (store_edit_in){seg[0], STORE_EDIT_TYPED, "x", -1, 1, 0, 0};
    CHECK(store_record_edit(s, &ed, &id) == MT_ERR_INVALID, "negative time");
    ed = (store_edit_in){seg[0], (store_edit_kind)17, "x", 1, 1, 0, 0};
    CHECK(store_record_edit(s, &ed, &id) == MT_ERR_INVALID, "unknown kind");
    CHECK(count_edits(s) == n_edits, "failed edits were not stored");

    /* ---- confirmations */
    int64_t c1 = 0, c2 = 0, c3 = 0, c5 = 0;
    clk.t = 1700000400000;
    CHECK_STATUS(store_confirm(s, seg[0], "Hallo, Welt!", 5000, 12, &c1));
    r = get_seg(s, seg[0]);
    CHECK(r.g.status == STORE_SEG_CONFIRMED && r.g.time_spent_ms == 5000, "confirmed");
    clk.t += 1000;
    const char *de2 = "Gr\xc3\xbc\xc3\x9f"
                      "e aus K\xc3\xb6ln \xe2\x9c\x93"; /* ✓ */
    CHECK_STATUS(store_confirm(s, seg[1], de2, 800, 3, &c2));
    clk.t += 1000;
    CHECK_STATUS(store_confirm(s, seg[5], src_text[6], 0, 0, &c5)); /* malformed UTF-8 too */
    clk.t += 1000;
    CHECK_STATUS(store_confirm(s, seg[1],
                               "Gr\xc3\xbc\xc3\x9f"
                               "e aus K\xc3\xb6ln",
                               900, 5, &c3));
    CHECK(c1 && c2 && c3 && c5 && c3 > c2, "confirmation ids");
    CHECK(store_confirm(s, 99999, "x", 0, 0, &id) == MT_ERR_NOTFOUND, "confirm unknown segment");
    CHECK(store_confirm(s, seg[2], NULL, 0, 0, &id) == MT_ERR_INVALID, "confirm without text");
    /* edited again after confirming: the export keeps the last confirmation */
    clk.t += 1000;
    ed = (store_edit_in){seg[5], STORE_EDIT_TYPED, "draft", 10, 1, 0, 0};
    CHECK_STATUS(store_record_edit(s, &ed, &id));
    int64_t c_doc2 = 0;
    CHECK_STATUS(store_confirm(s, seg[0], "Hallo, Welt!", 5000, 12, &id)); /* again, same text */
    seg_list l2 = {0};
    CHECK_STATUS(store_list_segments(s, doc2, STORE_SEG_ALL, collect_seg, &l2));
    CHECK(l2.n == 2, "doc2 segments");
    clk.t += 1000;
    CHECK_STATUS(store_confirm(s, l2.r[1].g.id, "Doc two", 1, 1, &c_doc2));

    /* ---- edit history */
    edit_list el = {0};
    CHECK_STATUS(store_list_edits_since(s, 0, collect_edit, &el));
    CHECK(el.n == 11, "edit events: %d", el.n);
    if (el.n == 11) {
        edit_rec *a = &el.r[0];
        CHECK(a->e.id == e1 && a->e.kind == STORE_EDIT_ACCEPT_ALL && a->e.mt_id == mt1 &&
                  a->e.mt_rank == 0 && a->e.keystrokes == 1 && a->e.spent_ms == 1200 &&
                  a->e.time_ms == 1700000300000 && a->e.seg_id == seg[0] && a->e.doc_id == doc &&
                  a->e.seg_index == 0 && strcmp(a->text, hyp_de) == 0 &&
                  strcmp(a->source, src_text[0]) == 0,
              "first edit event");
        CHECK(el.r[2].e.kind == STORE_EDIT_NBEST_PICK && el.r[2].e.mt_rank == 2, "n-best pick");
        CHECK(el.r[3].e.kind == STORE_EDIT_UNDO && el.r[3].e.mt_id == 0 && el.r[3].e.mt_rank == -1,
              "no MT origin");
        CHECK(el.r[4].e.kind == STORE_EDIT_CONFIRM && strcmp(el.r[4].text, "Hallo, Welt!") == 0 &&
                  el.r[4].e.time_ms == 1700000400000,
              "confirm event");
        CHECK(strcmp(el.r[5].text, de2) == 0 && strcmp(el.r[6].text, src_text[6]) == 0,
              "UTF-8 and malformed bytes unchanged");
        for (int i = 1; i < el.n; i++)
            CHECK(el.r[i].e.time_ms >= el.r[i - 1].e.time_ms, "oldest first at %d", i);
    }
    el.n = 0;
    CHECK_STATUS(store_list_edits_since(s, 1700000400000 + 2000, collect_edit, &el));
    CHECK(el.n == 5 && el.r[0].e.time_ms == 1700000400000 + 2000, "edits since: %d", el.n);

    /* ---- export */
    export_list xl = {0};
    CHECK_STATUS(store_export_confirmed(s, doc, collect_export, &xl));
    CHECK(xl.n == 3, "exported rows: %d", xl.n);
    if (xl.n == 3) {
        CHECK(xl.r[0].x.seg_index == 0 && strcmp(xl.r[0].target, "Hallo, Welt!") == 0 &&
                  strcmp(xl.r[0].source, src_text[0]) == 0 && xl.r[0].has_context &&
                  strcmp(xl.r[0].context, "menu|File") == 0 &&
                  strcmp(xl.r[0].path, "docs/app.po") == 0 && strcmp(xl.r[0].src, "en") == 0 &&
                  strcmp(xl.r[0].tgt, "de") == 0 && xl.r[0].x.doc_id == doc,
              "export row 0");
        CHECK(xl.r[1].x.seg_index == 1 && xl.r[1].x.confirmation_id == c3 &&
                  strcmp(xl.r[1].target, "Gr\xc3\xbc\xc3\x9f"
                                         "e aus K\xc3\xb6ln") == 0 &&
                  xl.r[1].x.time_ms == 1700000400000 + 3000,
              "latest confirmation of segment 1");
        CHECK(xl.r[2].x.seg_index == 5 && xl.r[2].x.confirmation_id == c5 &&
                  strcmp(xl.r[2].target, src_text[6]) == 0 &&
                  strcmp(xl.r[2].source, src_text[5]) == 0 && !xl.r[2].has_context,
              "segment edited after confirming keeps its confirmation");
    }
    xl.n = 0;
    CHECK_STATUS(store_export_confirmed(s, 0, collect_export, &xl));
    CHECK(xl.n == 4 && xl.r[3].x.doc_id == doc2 && strcmp(xl.r[3].target, "Doc two") == 0,
          "export of the whole store: %d", xl.n);

    /* ---- progress */
    store_progress p;
    CHECK_STATUS(store_get_progress(s, doc, &p));
    /* seg 0 confirmed, 1 confirmed, 5 edited (after confirm), others new */
    CHECK(p.segments[STORE_SEG_CONFIRMED] == 2 && p.segments[STORE_SEG_EDITED] == 1 &&
              p.segments[STORE_SEG_NEW] == 4 && p.segments[STORE_SEG_MT] == 0,
          "progress segments %lld %lld %lld %lld", (long long)p.segments[0],
          (long long)p.segments[1], (long long)p.segments[2], (long long)p.segments[3]);
    CHECK(p.words[STORE_SEG_CONFIRMED] == src_words[0] + src_words[1] &&
              p.words[STORE_SEG_EDITED] == src_words[5] &&
              p.words[STORE_SEG_NEW] == src_words[2] + src_words[3] + src_words[4] + src_words[6],
          "progress words");
    CHECK(p.total_segments == N_SEGS && p.total_words == 20, "progress totals %lld %lld",
          (long long)p.total_segments, (long long)p.total_words);
    CHECK_STATUS(store_get_progress(s, 0, &p));
    CHECK(p.total_segments == N_SEGS + 2 && p.segments[STORE_SEG_CONFIRMED] == 3 &&
              p.segments[STORE_SEG_EDITED] == 1 &&
              p.total_words == 20 + src_words[0] + src_words[1],
          "progress of the store");
    CHECK_STATUS(store_get_progress(s, 999, &p));
    CHECK(p.total_segments == 0 && p.total_words == 0, "progress of an unknown document");

    /* ---- cursor */
    int32_t cs = -1, co = -1;
    CHECK_STATUS(store_get_cursor(s, doc, &cs, &co));
    CHECK(cs == 0 && co == 0, "initial cursor");
    CHECK_STATUS(store_set_cursor(s, doc, 5, 7));
    CHECK_STATUS(store_get_cursor(s, doc, &cs, &co));
    CHECK(cs == 5 && co == 7, "cursor set");
    CHECK(store_set_cursor(s, doc, -1, 0) == MT_ERR_INVALID, "negative cursor");
    CHECK(store_set_cursor(s, 999, 1, 0) == MT_ERR_NOTFOUND, "cursor of unknown document");
    CHECK(store_get_cursor(s, 999, &cs, &co) == MT_ERR_NOTFOUND, "cursor of unknown document");

    /* ---- fine-tuning runs */
    int64_t run1 = 0, run2 = 0;
    clk.t = 1700000500000;
    CHECK_STATUS(store_run_begin(s, model, 42, 1700000450000, "logs/ft1.log", &run1));
    run_list rl = {0};
    CHECK_STATUS(store_get_run(s, run1, collect_run, &rl));
    CHECK(rl.n == 1 && rl.r[0].status == STORE_RUN_RUNNING && rl.r[0].ended_ms == 0 &&
              rl.r[0].base_model_id == model && rl.r[0].output_model_id == 0 &&
              rl.r[0].n_edits == 42 && rl.r[0].data_until_ms == 1700000450000 &&
              rl.r[0].started_ms == 1700000500000 && rl.has_log[0] &&
              strcmp(rl.log[0], "logs/ft1.log") == 0 && !rl.has_metrics[0],
          "run started");
    clk.t += 60000;
    CHECK(store_run_end(s, run1, STORE_RUN_DONE, model2, "{not json") == MT_ERR_INVALID,
          "metrics must be JSON");
    rl.n = 0;
    CHECK_STATUS(store_get_run(s, run1, collect_run, &rl));
    CHECK(rl.n == 1 && rl.r[0].status == STORE_RUN_RUNNING, "still running after bad metrics");
    CHECK(store_run_end(s, run1, STORE_RUN_RUNNING, 0, NULL) == MT_ERR_INVALID, "end as running");
    const char *metrics = "{\"bleu_before\": 31.2, \"bleu_after\": 33.9, \"chrf\": 0.61}";
    CHECK_STATUS(store_run_end(s, run1, STORE_RUN_DONE, model2, metrics));
    CHECK(store_run_end(s, run1, STORE_RUN_FAILED, 0, NULL) == MT_ERR_INVALID, "ended twice");
    CHECK(contains(mt_errmsg(), "already ended"), "%s", mt_errmsg());
    CHECK(store_run_end(s, 999, STORE_RUN_FAILED, 0, NULL) == MT_ERR_NOTFOUND, "unknown run");
    CHECK(store_run_begin(s, 99999, 1, 0, NULL, &id) == MT_ERR_INVALID, "unknown base model");
    clk.t += 1000;
    CHECK_STATUS(store_run_begin(s, model2, 0, 0, NULL, &run2));
    CHECK_STATUS(store_run_end(s, run2, STORE_RUN_CANCELLED, 0, NULL));
    rl.n = 0;
    CHECK_STATUS(store_list_runs(s, collect_run, &rl));
    CHECK(rl.n == 2 && rl.r[0].id == run2 && rl.r[1].id == run1, "runs newest first");
    if (rl.n == 2) {
        CHECK(rl.r[1].status == STORE_RUN_DONE && rl.r[1].output_model_id == model2 &&
                  rl.r[1].ended_ms == 1700000560000 && strcmp(rl.metrics[1], metrics) == 0,
              "run done");
        CHECK(rl.r[0].status == STORE_RUN_CANCELLED && !rl.has_log[0] && !rl.has_metrics[0] &&
                  rl.r[0].output_model_id == 0,
              "run cancelled");
    }
    CHECK(store_get_run(s, 999, collect_run, &rl) == MT_ERR_NOTFOUND, "get unknown run");

    CHECK_STATUS(store_check(s));
    store_set_clock(s, NULL, NULL);
    int64_t before = 0;
    {
        /* the default clock is the real time */
        CHECK_STATUS(store_document_opened(s, doc2));
        dl.n = 0;
        CHECK_STATUS(store_get_document(s, doc2, collect_doc, &dl));
        before = dl.r[0].d.opened_ms;
        CHECK(before > 1600000000000 && before < 4000000000000, "real clock: %lld",
              (long long)before);
    }
    store_close(s);
    if (!is_file) return;

    /* ---- reopen: everything, the cursor included, is back */
    s = NULL;
    CHECK_STATUS(store_open(path, &s));
    if (!s) return;
    CHECK_STATUS(store_get_cursor(s, doc, &cs, &co));
    CHECK(cs == 5 && co == 7, "reopen restores the cursor: %d %d", cs, co);
    check_segments_as_imported(s, doc);
    CHECK(count_edits(s) == 11, "edits after reopen");
    CHECK_STATUS(store_get_progress(s, doc, &p));
    CHECK(p.segments[STORE_SEG_CONFIRMED] == 2 && p.total_words == 20, "progress after reopen");
    xl.n = 0;
    CHECK_STATUS(store_export_confirmed(s, 0, collect_export, &xl));
    CHECK(xl.n == 4, "export after reopen");
    CHECK_STATUS(store_find_document(s, doc_info.path, doc_info.content_hash, &id));
    CHECK(id == doc, "find after reopen");
    CHECK_STATUS(store_check(s));
    store_close(s);
    store_close(NULL);
}

/* -------------------------------------------------------------- versions */

typedef struct ver_list {
    int n;
    store_version v[8];
    char hash[8][32];
} ver_list;

static int collect_ver(void *user, const store_version *v) {
    ver_list *l = user;
    if (l->n < 8) {
        l->v[l->n] = *v;
        snprintf(l->hash[l->n], sizeof l->hash[0], "%s", v->content_hash);
        l->v[l->n].content_hash = l->hash[l->n];
    }
    l->n++;
    return 0;
}

typedef struct verseg_list {
    int n;
    int32_t index[N_SEGS];
    store_seg_status status[N_SEGS];
    char target[N_SEGS][64];
    bool has_target[N_SEGS];
} verseg_list;

static int collect_verseg(void *user, const store_version_segment *g) {
    verseg_list *l = user;
    if (l->n < N_SEGS) {
        l->index[l->n] = g->index;
        l->status[l->n] = g->status;
        l->has_target[l->n] = g->target != NULL;
        snprintf(l->target[l->n], sizeof l->target[0], "%s", g->target ? g->target : "");
    }
    l->n++;
    return 0;
}

/* The saved state of every segment as the import had it. */
static void saved_as_imported(const store_segment_in *in, store_saved_segment *out) {
    for (int i = 0; i < N_SEGS; i++) {
        out[i].target = in[i].target;
        out[i].status = in[i].status;
    }
}

static int64_t table_rows(store *s, const char *table) {
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    sqlite3_stmt *q = NULL;
    int64_t n = -1;
    if (sqlite3_prepare_v2(store_db(s), sql, -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return n;
}

/* Saves record the segments they change, not copies; a saved hash finds
** the document. */
static void test_versions(void) {
    store *s = NULL;
    CHECK_STATUS(store_open(":memory:", &s));
    if (!s) return;
    store_segment_in in[N_SEGS];
    make_segments(in);
    int64_t doc = 0, v = -1, id = 0;
    int32_t changed = -1;
    CHECK_STATUS(store_add_document(s, &doc_info, in, N_SEGS, &doc));
    store_saved_segment sv[N_SEGS];
    saved_as_imported(in, sv);

    /* the import's own content: nothing to record */
    CHECK_STATUS(store_add_version(s, doc, doc_info.content_hash, sv, N_SEGS, &v, &changed));
    CHECK(v == 0 && changed == 0, "the imported content is no new version");

    /* a save that changes segments 0 (target) and 1 (status only) */
    sv[0].target = "Datei";
    sv[0].status = STORE_SEG_CONFIRMED;
    sv[1].status = STORE_SEG_CONFIRMED; /* same text as imported, now confirmed */
    CHECK_STATUS(store_add_version(s, doc, "sha256:bb02", sv, N_SEGS, &v, &changed));
    CHECK(v > 0 && changed == 2, "two changed segments recorded, got %d", changed);
    CHECK(table_rows(s, "segment") == N_SEGS, "no segment copied");
    verseg_list g = {0};
    CHECK_STATUS(store_version_segments(s, v, collect_verseg, &g));
    CHECK(g.n == 2 && g.index[0] == 0 && !strcmp(g.target[0], "Datei") &&
              g.status[0] == STORE_SEG_CONFIRMED && g.index[1] == 1 &&
              !strcmp(g.target[1], "Salutations de Cologne") && g.status[1] == STORE_SEG_CONFIRMED,
          "the version holds what changed");
    CHECK_STATUS(store_find_document(s, doc_info.path, "sha256:bb02", &id));
    CHECK(id == doc, "the saved hash finds the document");
    CHECK_STATUS(store_find_document(s, doc_info.path, doc_info.content_hash, &id));
    CHECK(id == doc, "the imported hash still finds it");
    CHECK(store_find_document(s, "other/app.po", "sha256:bb02", &id) == MT_ERR_NOTFOUND,
          "another path does not");

    /* the same content again: nothing; a further change: only that segment */
    CHECK_STATUS(store_add_version(s, doc, "sha256:bb02", sv, N_SEGS, &v, &changed));
    CHECK(v == 0 && changed == 0, "saving the same content again records nothing");
    sv[2].target = "Hallo";
    sv[2].status = STORE_SEG_EDITED;
    CHECK_STATUS(store_add_version(s, doc, "sha256:cc03", sv, N_SEGS, &v, &changed));
    CHECK(v > 0 && changed == 1, "one changed segment, got %d", changed);
    /* back to an earlier text: compared with the last save, so recorded */
    sv[0].target = NULL;
    sv[0].status = STORE_SEG_NEW;
    CHECK_STATUS(store_add_version(s, doc, "sha256:dd04", sv, N_SEGS, &v, &changed));
    g.n = 0;
    CHECK_STATUS(store_version_segments(s, v, collect_verseg, &g));
    CHECK(changed == 1 && g.n == 1 && g.index[0] == 0 && !g.has_target[0] &&
              g.status[0] == STORE_SEG_NEW,
          "a target removed again is a change");
    /* segment 1 was imported with a target: removing it is a change, and a
    ** later save of the same removal is none (the save, not the import, is
    ** the base) */
    sv[1].target = NULL;
    CHECK_STATUS(store_add_version(s, doc, "sha256:dd05", sv, N_SEGS, &v, &changed));
    CHECK(v > 0 && changed == 1, "a removed imported target is a change, got %d", changed);
    CHECK_STATUS(store_add_version(s, doc, "sha256:dd06", sv, N_SEGS, &v, &changed));
    CHECK(v > 0 && changed == 0, "the same removal saved again is none, got %d", changed);
    ver_list l = {0};
    CHECK_STATUS(store_list_versions(s, doc, collect_ver, &l));
    CHECK(l.n == 5 && !strcmp(l.hash[0], "sha256:bb02") && l.v[0].n_changed == 2 &&
              !strcmp(l.hash[2], "sha256:dd04") && l.v[2].saved_ms >= l.v[0].saved_ms,
          "five versions, oldest first");
    CHECK(table_rows(s, "segment_version") == 5, "5 changed segments stored in all");

    /* refusals */
    CHECK(store_add_version(s, doc, "sha256:ee05", sv, N_SEGS - 1, &v, NULL) == MT_ERR_INVALID,
          "a save of another number of segments is refused");
    CHECK(store_add_version(s, doc + 100, "sha256:ee05", sv, N_SEGS, &v, NULL) == MT_ERR_NOTFOUND,
          "an unknown document is refused");
    sv[3].status = (store_seg_status)99;
    CHECK(store_add_version(s, doc, "sha256:ee05", sv, N_SEGS, &v, NULL) == MT_ERR_INVALID,
          "an unknown status is refused");
    l.n = 0;
    CHECK_STATUS(store_list_versions(s, doc, collect_ver, &l));
    CHECK(l.n == 5, "refused saves leave nothing");
    CHECK_STATUS(store_check(s));
    store_close(s);
}

/* ------------------------------------------------------------- migrations */

/* Seeds a database at schema version k with data through raw SQL (the API
** writes the current version only) and checks it after the upgrade.  One
** entry per older version: adding a migration without a seeder for the
** version before it fails to compile. */
typedef struct seeder {
    void (*seed)(sqlite3 *db);
    void (*check)(store *s);
} seeder;

static void seed_v0(sqlite3 *db) { (void)db; /* an empty database has no data */ }

static void check_v0(store *s) {
    /* the upgraded store is fully usable */
    store_segment_in segs[N_SEGS];
    make_segments(segs);
    int64_t doc = 0, c = 0;
    CHECK_STATUS(store_add_document(s, &doc_info, segs, N_SEGS, &doc));
    seg_list l = {0};
    CHECK_STATUS(store_list_segments(s, doc, STORE_SEG_ALL, collect_seg, &l));
    CHECK(l.n == N_SEGS, "segments after migration from an empty database");
    if (l.n) CHECK_STATUS(store_confirm(s, l.r[0].g.id, "Hallo", 1, 1, &c));
}

/* Version 1: documents and segments without original_status; a save was a
** full copy (a second document with the same path). */
static void seed_v1(sqlite3 *db) {
    static const char sql[] =
        "INSERT INTO document (id, path, format, src_lang, tgt_lang, content_hash, created_ms,"
        " opened_ms) VALUES (1, 'old.po', 0, 'en', 'de', 'h1', 1000, 1000),"
        " (2, 'old.po', 0, 'en', 'de', 'h2', 2000, 2000);"
        "INSERT INTO segment (id, document_id, idx, source, original_target, target, status,"
        " updated_ms) VALUES (1, 1, 0, 'Open', NULL, NULL, 0, 1000),"
        " (2, 1, 1, 'Close', 'Zu', 'Zu', 3, 1000),"
        " (3, 2, 0, 'Open', NULL, 'Öffnen', 3, 2000), (4, 2, 1, 'Close', 'Zu', 'Zu', 3, 2000);"
        "INSERT INTO edit (id, segment_id, kind, text, time_ms, spent_ms, keystrokes)"
        " VALUES (1, 3, 5, 'Öffnen', 2500, 10, 6);"
        "INSERT INTO confirmation (segment_id, edit_id, text, time_ms, spent_ms)"
        " VALUES (3, 1, 'Öffnen', 2500, 10);";
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "seed v1: %s", sqlite3_errmsg(db));
}

static void check_v1(store *s) {
    int64_t id = 0, v = 0;
    int32_t changed = -1;
    CHECK_STATUS(store_find_document(s, "old.po", "h2", &id));
    CHECK(id == 2, "the old copies stay documents");
    seg_list l = {0};
    CHECK_STATUS(store_list_segments(s, 2, STORE_SEG_ALL, collect_seg, &l));
    CHECK(l.n == 2 && l.r[0].has_target && !strcmp(l.r[0].target, "Öffnen"),
          "segments survive the migration");
    /* a save of an old document: the imported status is unknown, targets
    ** are compared */
    store_saved_segment sv[2] = {{"Öffnen", STORE_SEG_CONFIRMED},
                                 {"Schließen", STORE_SEG_CONFIRMED}};
    CHECK_STATUS(store_add_version(s, 2, "h3", sv, 2, &v, &changed));
    CHECK(v > 0 && changed == 2, "both targets differ from the imported ones, got %d", changed);
    CHECK_STATUS(store_find_document(s, "old.po", "h3", &id));
    CHECK(id == 2, "the new save finds the old document");
}

/* Version 2: confirmed segments (translated in the file, confirmed in the
** editor) and unconfirmed ones, before the translation memory index. */
static void seed_v2(sqlite3 *db) {
    static const char sql[] =
        "INSERT INTO document (id, path, format, src_lang, tgt_lang, content_hash, created_ms,"
        " opened_ms) VALUES (1, 'app.po', 0, 'en', 'de', 'h1', 1000, 1000);"
        "INSERT INTO segment (id, document_id, idx, source, original_target, target, status,"
        " original_status, updated_ms) VALUES"
        " (1, 1, 0, 'Open the file', 'Datei öffnen', 'Datei öffnen', 3, 3, 1000),"
        " (2, 1, 1, 'Save the file as', NULL, 'Datei speichern unter', 3, 0, 1000),"
        " (3, 1, 2, 'Close the window now', NULL, 'Fenster schließen', 2, 0, 1000),"
        " (4, 1, 3, 'Print 3 pages', NULL, NULL, 0, 0, 1000);"
        "INSERT INTO edit (id, segment_id, kind, text, time_ms, spent_ms, keystrokes)"
        " VALUES (1, 2, 5, 'Datei speichern unter', 2500, 10, 6);"
        "INSERT INTO confirmation (segment_id, edit_id, text, time_ms, spent_ms)"
        " VALUES (2, 1, 'Datei speichern unter', 2500, 10);";
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "seed v2: %s", sqlite3_errmsg(db));
}

typedef struct tm_hits {
    int n, score[8];
    char target[8][64];
} tm_hits;

static int tm_hit(void *user, const store_tm_match *m) {
    tm_hits *h = user;
    if (h->n < 8) {
        h->score[h->n] = m->score;
        snprintf(h->target[h->n], 64, "%s", m->target);
    }
    h->n++;
    return 0;
}

static void check_v2(store *s) {
    /* the migration indexed the confirmed segments: fuzzy matches through
    ** the FTS5 index ("save" and "as" only in segment 2) */
    tm_hits h = {0};
    store_tm_query q = {.source = "Save the files as", .min_score = 70, .max_results = 5};
    CHECK_STATUS(store_tm_lookup(s, &q, tm_hit, &h));
    /* [Save the file as] / [Save the files as]: 1 hard of 4 -> 75 */
    CHECK(h.n == 1 && h.score[0] == 75 && !strcmp(h.target[0], "Datei speichern unter"),
          "migrated store: fuzzy match of a confirmed segment (%d)", h.n);
    h = (tm_hits){0};
    q.source = "Close the window now";
    CHECK_STATUS(store_tm_lookup(s, &q, tm_hit, &h));
    CHECK(h.n == 0, "an edited, unconfirmed segment is not in the TM");
    store_tm_stats t;
    CHECK_STATUS(store_tm_get_stats(s, &t));
    /* terms of the two confirmed sources: open the file save as -> 5 */
    CHECK(t.segments == 2 && t.editor_segments == 1 && t.opened_segments == 1 && t.terms == 5,
          "migrated TM: %lld segments, %lld terms", (long long)t.segments, (long long)t.terms);
    /* confirming the unconfirmed one after the migration indexes it */
    int64_t c = 0;
    CHECK_STATUS(store_confirm(s, 4, "3 Seiten drucken", 1, 1, &c));
    h = (tm_hits){0};
    q.source = "Print 5 pages";
    CHECK_STATUS(store_tm_lookup(s, &q, tm_hit, &h));
    CHECK(h.n == 1 && h.score[0] == 99, "confirmed after the migration: found");
}

/* Version 3 had no glossary: the migration adds empty tables that take
** entries and keep the TM as it was. */
static void seed_v3(sqlite3 *db) {
    seed_v2(db);
    /* at version 3 every segment carries its index terms (the triggers
    ** index the confirmed ones) */
    static const char *const sources[] = {"Open the file", "Save the file as",
                                          "Close the window now", "Print 3 pages"};
    for (int i = 0; i < 4; i++) {
        char *terms = store_tm_terms_json(sources[i]);
        char *sql = sqlite3_mprintf("UPDATE segment SET tm_terms = %Q WHERE id = %d", terms, i + 1);
        CHECK(sql && sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "seed v3: %s",
              sqlite3_errmsg(db));
        sqlite3_free(sql);
        mt_free(terms);
    }
    /* a PO plural entry as version 3 stored it: one segment per form, each
    ** with the msgid as source and indexed under the msgid's terms (the TM
    ** paired "Delete %d file" with the plural translation); an unconfirmed
    ** entry too */
    char *t_del = store_tm_terms_json("Delete %d file");
    char *t_copy = store_tm_terms_json("Copy %d item");
    char *sql = sqlite3_mprintf(
        "INSERT INTO document (id, path, format, src_lang, tgt_lang, content_hash, created_ms,"
        " opened_ms) VALUES (2, 'plural.po', 0, 'en', 'de', 'h2', 1000, 1000);"
        "INSERT INTO segment (id, document_id, idx, source, plural_source, plural_form,"
        " original_target, target, status, original_status, updated_ms, tm_terms) VALUES"
        " (5, 2, 0, 'Delete %%d file', 'Delete %%d files', 0, '%%d Datei löschen',"
        " '%%d Datei löschen', 3, 3, 1000, %Q),"
        " (6, 2, 1, 'Delete %%d file', 'Delete %%d files', 1, '%%d Dateien löschen',"
        " '%%d Dateien löschen', 3, 3, 1000, %Q),"
        " (7, 2, 2, 'Copy %%d item', 'Copy %%d items', 0, NULL, NULL, 0, 0, 1000, %Q),"
        " (8, 2, 3, 'Copy %%d item', 'Copy %%d items', 1, NULL, NULL, 0, 0, 1000, %Q);",
        t_del, t_del, t_copy, t_copy);
    CHECK(sql && sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "seed v3 plural: %s",
          sqlite3_errmsg(db));
    sqlite3_free(sql);
    mt_free(t_del);
    mt_free(t_copy);
}

static void check_v3(store *s) {
    sqlite3 *db = store_db(s);
    CHECK(pragma_int(db, "SELECT count(*) FROM glossary_entry") == 0 &&
              pragma_int(db, "SELECT count(*) FROM spell_word") == 0,
          "v3 -> v4: new tables are empty");
    CHECK(sqlite3_exec(db,
                       "INSERT INTO glossary_entry (source, target, added_ms)"
                       " VALUES ('file', 'Datei', 1);"
                       "INSERT INTO spell_word (lang, word, added_ms) VALUES ('de_DE', 'mtpe', 1)",
                       NULL, NULL, NULL) == SQLITE_OK,
          "v4 tables take rows: %s", sqlite3_errmsg(db));
    CHECK(sqlite3_exec(db,
                       "INSERT INTO glossary_entry (source, target, added_ms)"
                       " VALUES ('file', 'Datei', 2)",
                       NULL, NULL, NULL) != SQLITE_OK,
          "the same term pair twice is refused");
    /* v3 -> v4: plural forms 1.. are indexed under the msgid_plural; the
    ** msgid finds the singular only, the msgid_plural the plural form */
    tm_hits h = {0};
    store_tm_query q = {.source = "Delete %d file", .min_score = 75, .max_results = 5};
    CHECK_STATUS(store_tm_lookup(s, &q, tm_hit, &h));
    CHECK(h.n == 1 && h.score[0] == 100 && !strcmp(h.target[0], "%d Datei löschen"),
          "v3 -> v4: the msgid finds the singular only (%d: %s)", h.n, h.n ? h.target[0] : "");
    h = (tm_hits){0};
    q.source = "Delete %d files";
    CHECK_STATUS(store_tm_lookup(s, &q, tm_hit, &h));
    CHECK(h.n == 1 && h.score[0] == 100 && !strcmp(h.target[0], "%d Dateien löschen"),
          "v3 -> v4: the msgid_plural finds the plural form (%d)", h.n);
    /* confirmed sources holding each term: file: "Open the file", "Save
    ** the file as", "Delete %d file"; files: form 1 only; delete: both */
    CHECK(pragma_int(db, "SELECT df FROM tm_term WHERE term = 'file'") == 3 &&
              pragma_int(db, "SELECT df FROM tm_term WHERE term = 'files'") == 1 &&
              pragma_int(db, "SELECT df FROM tm_term WHERE term = 'delete'") == 2 &&
              pragma_int(db, "SELECT count(*) FROM tm_term WHERE term = 'items'") == 0,
          "v3 -> v4: term frequencies follow the plural sources");
    CHECK(pragma_int(db, "SELECT count(*) FROM tm_fts WHERE tm_fts MATCH '\"files\"'") == 1 &&
              pragma_int(db, "SELECT count(*) FROM tm_fts WHERE tm_fts MATCH '\"file\"'") == 3,
          "v3 -> v4: the FTS index follows the plural sources");
    CHECK(pragma_int(db, "SELECT count(*) FROM segment WHERE id = 8 AND tm_terms ="
                         " '[\"copy\",\"items\"]'") == 1 &&
              pragma_int(db, "SELECT count(*) FROM segment WHERE id = 7 AND tm_terms ="
                             " '[\"copy\",\"item\"]'") == 1,
          "v3 -> v4: an unconfirmed plural form gets its terms too");
    CHECK(pragma_int(db, "SELECT count(*) FROM segment WHERE source = 'Delete %d file'") == 2,
          "v3 -> v4: the segments keep the msgid as source");
    /* the exact lookup uses the index on the effective source */
    {
        sqlite3_stmt *st = NULL;
        bool idx = false;
        CHECK(sqlite3_prepare_v2(db,
                                 "EXPLAIN QUERY PLAN SELECT id FROM segment WHERE (CASE WHEN"
                                 " plural_form > 0 AND plural_source IS NOT NULL THEN"
                                 " plural_source ELSE source END) = 'x' AND status = 3",
                                 -1, &st, NULL) == SQLITE_OK,
              "explain: %s", sqlite3_errmsg(db));
        while (st && sqlite3_step(st) == SQLITE_ROW) {
            const char *d = (const char *)sqlite3_column_text(st, 3);
            if (d && strstr(d, "segment_tm_eff_source")) idx = true;
        }
        sqlite3_finalize(st);
        CHECK(idx, "v3 -> v4: exact lookups use segment_tm_eff_source");
    }
    /* removing the plural document leaves the TM of version 2's checks */
    CHECK(sqlite3_exec(db, "DELETE FROM document WHERE id = 2", NULL, NULL, NULL) == SQLITE_OK,
          "delete the plural document: %s", sqlite3_errmsg(db));
    check_v2(s);
}

static const seeder seeders[] = {
    {seed_v0, check_v0}, {seed_v1, check_v1}, {seed_v2, check_v2}, {seed_v3, check_v3}};
_Static_assert(sizeof seeders / sizeof seeders[0] == STORE_SCHEMA_VERSION,
               "tests/db/test_store.c: add a seeder for every older schema version");

static void test_migrate_from_each_version(void) {
    for (int k = 0; k < store_schema_version(); k++) {
        char path[512], name[64];
        snprintf(name, sizeof name, "from_v%d.db", k);
        tmp_path(path, sizeof path, name);
        remove_db(path);
        sqlite3 *db = NULL;
        CHECK(sqlite3_open(path, &db) == SQLITE_OK, "open %s", path);
        int from = -1;
        CHECK_STATUS(store_migrate(db, path, store_migrations, store_n_migrations, k, &from));
        CHECK(from == 0 && pragma_int(db, "PRAGMA user_version") == k, "built version %d", k);
        seeders[k].seed(db);
        sqlite3_close(db);

        store *s = NULL;
        CHECK_STATUS(store_open(path, &s));
        if (!s) continue;
        CHECK(pragma_int(store_db(s), "PRAGMA user_version") == store_schema_version(),
              "migrated from %d", k);
        seeders[k].check(s);
        CHECK_STATUS(store_check(s));
        store_close(s);
        remove_db(path);
    }
}

/* Synthetic steps after the real ones test the machinery itself. */
static mt_status fill_notes(sqlite3 *db) {
    int rc = sqlite3_exec(db, "UPDATE segment SET note = 'n:' || idx", NULL, NULL, NULL);
    return rc == SQLITE_OK ? MT_OK : mt_seterr(MT_ERR_IO, "fill notes failed");
}

static mt_status failing_fn(sqlite3 *db) {
    (void)db;
    return mt_seterr(MT_ERR_FORMAT, "synthetic failure");
}

static bool has_column(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    bool ok = sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK;
    sqlite3_finalize(st);
    return ok;
}

static void test_migration_machinery(void) {
    char path[512];
    tmp_path(path, sizeof path, "machinery.db");
    remove_db(path);
    const int v = store_schema_version();
    store_migration steps[16];
    MT_ASSERT(v + 3 <= 16);
    memcpy(steps, store_migrations, sizeof(store_migration) * (size_t)v);
    steps[v] = (store_migration){v + 1, "add note",
                                 "ALTER TABLE segment ADD COLUMN note TEXT;"
                                 "CREATE TABLE extra (x INTEGER);",
                                 fill_notes};
    steps[v + 1] = (store_migration){v + 2, "broken",
                                     "CREATE TABLE more (y INTEGER);"
                                     "INSERT INTO no_such_table VALUES (1);",
                                     NULL};

    /* data at the current version, through the API */
    store *s = NULL;
    CHECK_STATUS(store_open(path, &s));
    if (!s) return;
    store_segment_in segs[N_SEGS];
    make_segments(segs);
    int64_t doc = 0, c = 0;
    CHECK_STATUS(store_add_document(s, &doc_info, segs, N_SEGS, &doc));
    seg_list l = {0};
    CHECK_STATUS(store_list_segments(s, doc, STORE_SEG_ALL, collect_seg, &l));
    CHECK_STATUS(store_confirm(s, l.r[2].g.id, "Tokyo Tower", 10, 3, &c));
    store_close(s);

    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK, "raw open");
    /* all pending steps are one transaction: the broken one undoes the good one */
    int from = -1;
    mt_status st = store_migrate(db, path, steps, v + 2, v + 2, &from);
    CHECK(st == MT_ERR_FORMAT, "broken step fails: %s", mt_status_str(st));
    CHECK(contains(mt_errmsg(), "broken") && contains(mt_errmsg(), "no_such_table") &&
              contains(mt_errmsg(), path),
          "message names the step: %s", mt_errmsg());
    CHECK(from == v && pragma_int(db, "PRAGMA user_version") == v, "version unchanged");
    CHECK(!has_column(db, "SELECT note FROM segment") && !has_column(db, "SELECT x FROM extra") &&
              !has_column(db, "SELECT y FROM more"),
          "nothing of the failed migration remains");
    CHECK(sqlite3_get_autocommit(db), "no transaction left open");
    CHECK(pragma_int(db, "PRAGMA foreign_keys") == 1, "foreign keys back on");

    /* a failing function step */
    store_migration fsteps[16];
    memcpy(fsteps, steps, sizeof(store_migration) * (size_t)(v + 1));
    fsteps[v + 1] =
        (store_migration){v + 2, "function", "CREATE TABLE more (y INTEGER);", failing_fn};
    st = store_migrate(db, path, fsteps, v + 2, v + 2, NULL);
    CHECK(st == MT_ERR_FORMAT && contains(mt_errmsg(), "synthetic failure") &&
              contains(mt_errmsg(), "function"),
          "function step failure: %s", mt_errmsg());
    CHECK(pragma_int(db, "PRAGMA user_version") == v, "version unchanged after fn failure");

    /* a step that breaks a foreign key is refused before COMMIT */
    fsteps[v + 1] =
        (store_migration){v + 2, "orphan",
                          "INSERT INTO edit (segment_id, kind, text, time_ms, spent_ms, keystrokes)"
                          " VALUES (424242, 0, 'orphan', 0, 0, 0);",
                          NULL};
    st = store_migrate(db, path, fsteps, v + 2, v + 2, NULL);
    CHECK(st == MT_ERR_FORMAT && contains(mt_errmsg(), "foreign key"),
          "foreign key violation refused: %s", mt_errmsg());
    CHECK(pragma_int(db, "SELECT count(*) FROM edit WHERE text = 'orphan'") == 0, "rolled back");

    /* the good step alone: data survives, the function ran */
    st = store_migrate(db, path, steps, v + 2, v + 1, &from);
    CHECK_STATUS(st);
    CHECK(from == v && pragma_int(db, "PRAGMA user_version") == v + 1, "migrated to %d", v + 1);
    CHECK(pragma_int(db, "SELECT count(*) FROM segment WHERE note = 'n:' || idx") == N_SEGS,
          "function step filled the new column");
    CHECK(pragma_int(db, "SELECT count(*) FROM confirmation WHERE text = 'Tokyo Tower'") == 1,
          "data survives the migration");
    st = store_migrate(db, path, steps, v + 2, v + 1, &from);
    CHECK(st == MT_OK && from == v + 1, "a second run does nothing");
    sqlite3_close(db);

    /* this build refuses the newer store, clearly, and leaves it alone */
    s = NULL;
    st = store_open(path, &s);
    CHECK(st == MT_ERR_UNSUPPORTED && s == NULL, "newer store refused: %s", mt_status_str(st));
    CHECK(contains(mt_errmsg(), "newer mtpe") && contains(mt_errmsg(), path), "clear message: %s",
          mt_errmsg());
    CHECK(sqlite3_open(path, &db) == SQLITE_OK, "raw reopen");
    CHECK(pragma_int(db, "PRAGMA user_version") == v + 1, "left at its version");
    sqlite3_close(db);
    remove_db(path);
}

/* -------------------------------------------------------------- refusals */

static void expect_refused(const char *path, mt_status want, const char *msg_part,
                           const char *what) {
    unsigned char before[8192], after[8192];
    long nb = read_file(path, before, sizeof before);
    store *s = NULL;
    mt_status st = store_open(path, &s);
    CHECK(st == want && s == NULL, "%s: got %s (%s)", what, mt_status_str(st), mt_errmsg());
    CHECK(contains(mt_errmsg(), msg_part) && contains(mt_errmsg(), path), "%s: message: %s", what,
          mt_errmsg());
    store_close(s);
    long na = read_file(path, after, sizeof after);
    CHECK(nb == na && (nb < 0 || memcmp(before, after, (size_t)nb) == 0),
          "%s: the file was not modified", what);
    char wal[600];
    snprintf(wal, sizeof wal, "%s-wal", path);
    CHECK(!file_exists(wal), "%s: no WAL file created", what);
}

static void test_refusals(void) {
    char path[512];

    tmp_path(path, sizeof path, "notes.txt");
    char text[3000];
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = (char)('a' + i % 26);
    memcpy(text, "These are my notes, not a database.\n", 36);
    CHECK(write_file(path, text, sizeof text) == 0, "write %s", path);
    expect_refused(path, MT_ERR_FORMAT, "not an SQLite database", "text file");
    unlink(path);

    tmp_path(path, sizeof path, "short.bin");
    CHECK(write_file(path, "\x01\x02garbage", 9) == 0, "write %s", path);
    expect_refused(path, MT_ERR_FORMAT, "not an SQLite database", "short binary file");
    unlink(path);

    /* another program's database */
    tmp_path(path, sizeof path, "other.db");
    remove_db(path);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK, "open %s", path);
    CHECK(exec_ok(db, "CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('a');"),
          "create other");
    sqlite3_close(db);
    expect_refused(path, MT_ERR_FORMAT, "another program", "foreign database");
    remove_db(path);

    CHECK(sqlite3_open(path, &db) == SQLITE_OK, "open %s", path);
    CHECK(exec_ok(db, "PRAGMA application_id = 1234;"), "other app id");
    sqlite3_close(db);
    expect_refused(path, MT_ERR_FORMAT, "another program", "foreign application id");
    remove_db(path);

    /* an mtpe store from the future, and a damaged one */
    char sql[128];
    snprintf(sql, sizeof sql, "PRAGMA application_id = %d; PRAGMA user_version = 99;",
             STORE_APPLICATION_ID);
    CHECK(sqlite3_open(path, &db) == SQLITE_OK && exec_ok(db, sql), "future store");
    sqlite3_close(db);
    expect_refused(path, MT_ERR_UNSUPPORTED, "newer mtpe", "newer schema version");
    remove_db(path);

    snprintf(sql, sizeof sql, "PRAGMA application_id = %d;", STORE_APPLICATION_ID);
    CHECK(sqlite3_open(path, &db) == SQLITE_OK && exec_ok(db, sql), "versionless store");
    sqlite3_close(db);
    expect_refused(path, MT_ERR_FORMAT, "damaged", "mtpe id without a version");
    remove_db(path);

    /* a store whose table was dropped behind its back */
    store *s = NULL;
    CHECK_STATUS(store_open(path, &s));
    store_close(s);
    CHECK(sqlite3_open(path, &db) == SQLITE_OK && exec_ok(db, "DROP TABLE finetune_run;"),
          "drop table");
    sqlite3_close(db);
    s = NULL;
    mt_status st = store_open(path, &s);
    CHECK(st == MT_ERR_FORMAT && s == NULL && contains(mt_errmsg(), "damaged") &&
              contains(mt_errmsg(), "finetune_run"),
          "damaged schema: %s (%s)", mt_status_str(st), mt_errmsg());
    remove_db(path);

    /* unusable paths */
    tmp_path(path, sizeof path, "no/such/dir/store.db");
    s = NULL;
    st = store_open(path, &s);
    CHECK(st == MT_ERR_IO && s == NULL && contains(mt_errmsg(), "open"),
          "missing directory: %s (%s)", mt_status_str(st), mt_errmsg());
    s = NULL;
    st = store_open(tmpdir, &s);
    CHECK(st != MT_OK && s == NULL, "a directory: %s (%s)", mt_status_str(st), mt_errmsg());
}

/* Overwrites the pages after the first with a pattern: the damage must be
** reported as MT_ERR_FORMAT by open, by a query or by store_check. */
static int count_seg_fn(void *user, const store_segment *g) {
    (*(int *)user)++;
    return 0;
}

static void test_corruption(void) {
    char path[512];
    tmp_path(path, sizeof path, "corrupt.db");
    remove_db(path);
    store *s = NULL;
    CHECK_STATUS(store_open(path, &s));
    if (!s) return;
    store_segment_in segs[200];
    char texts[200][80];
    memset(segs, 0, sizeof segs);
    for (int i = 0; i < 200; i++) {
        snprintf(texts[i], sizeof texts[i], "segment number %d with some words to fill pages", i);
        segs[i].source = texts[i];
    }
    int64_t doc = 0;
    CHECK_STATUS(store_add_document(s, &doc_info, segs, 200, &doc));
    store_close(s);

    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0, "open for damage");
    unsigned char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)(i * 37 + 11);
    struct stat sb;
    fstat(fd, &sb);
    for (off_t off = 4096; off + 4096 <= sb.st_size; off += 4096)
        CHECK(pwrite(fd, junk, sizeof junk, off) == (ssize_t)sizeof junk, "pwrite");
    close(fd);

    s = NULL;
    mt_status st = store_open(path, &s);
    if (st == MT_OK) {
        int n = 0;
        mt_status q = store_list_segments(s, doc, STORE_SEG_ALL, count_seg_fn, &n);
        mt_status c = store_check(s);
        CHECK((q == MT_ERR_FORMAT || q == MT_OK) && c == MT_ERR_FORMAT,
              "damage found: list %s, check %s (%s)", mt_status_str(q), mt_status_str(c),
              mt_errmsg());
        store_close(s);
    } else {
        CHECK(st == MT_ERR_FORMAT, "damaged store refused: %s (%s)", mt_status_str(st),
              mt_errmsg());
    }
    remove_db(path);
}

/* ------------------------------------------------------- fault injection */

static int64_t add_one_doc(store *s, int64_t *seg0) {
    store_segment_in segs[N_SEGS];
    make_segments(segs);
    int64_t doc = 0;
    CHECK_STATUS(store_add_document(s, &doc_info, segs, N_SEGS, &doc));
    seg_list l = {0};
    CHECK_STATUS(store_list_segments(s, doc, STORE_SEG_ALL, collect_seg, &l));
    *seg0 = l.n ? l.r[0].g.id : 0;
    return doc;
}

static void test_read_only(void) {
    char path[512];
    tmp_path(path, sizeof path, "readonly.db");
    remove_db(path);
    store *s = NULL;
    CHECK_STATUS(store_open(path, &s));
    if (!s) return;
    int64_t seg0 = 0, id = 0;
    add_one_doc(s, &seg0);
    store_edit_in ed = {seg0, STORE_EDIT_TYPED, "committed", 10, 1, 0, 0};
    CHECK_STATUS(store_record_edit(s, &ed, &id));

    /* the connection refuses writes: every writer reports it */
    CHECK(exec_ok(store_db(s), "PRAGMA query_only = 1"), "query_only");
    ed.text = "refused";
    mt_status st = store_record_edit(s, &ed, &id);
    CHECK(st == MT_ERR_IO && contains(mt_errmsg(), "record edit") &&
              contains(mt_errmsg(), "readonly"),
          "read-only edit: %s (%s)", mt_status_str(st), mt_errmsg());
    st = store_confirm(s, seg0, "refused", 1, 1, &id);
    CHECK(st == MT_ERR_IO && contains(mt_errmsg(), "confirm"), "read-only confirm: %s",
          mt_errmsg());
    st = store_set_cursor(s, 1, 1, 1);
    CHECK(st == MT_ERR_IO && contains(mt_errmsg(), "set cursor"), "read-only cursor: %s",
          mt_errmsg());
    int n = 0;
    CHECK_STATUS(store_list_edits_since(s, 0, count_edits_fn, &n)); /* reads still work */
    CHECK(n == 1, "one committed edit");
    CHECK(exec_ok(store_db(s), "PRAGMA query_only = 0"), "query_only off");
    ed.text = "after";
    CHECK_STATUS(store_record_edit(s, &ed, &id));
    seg_rec r = get_seg(s, seg0);
    CHECK(strcmp(r.target, "after") == 0, "writable again");
    store_close(s);
    remove_db(path);
}

static bool exists(const char *path, const char *suffix) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s%s", path, suffix);
    return access(buf, F_OK) == 0;
}

/* A store without write permission bits is refused before SQLite opens it
** (also for root, whom the bits do not stop), and the refusal leaves no
** -wal/-shm behind; a read-only -wal of an earlier run is named. */
static void test_read_only_mode(void) {
    char path[512], wal[600];
    tmp_path(path, sizeof path, "readonly_mode.db");
    remove_db(path);
    store *s = NULL;
    CHECK_STATUS(store_open(path, &s));
    if (!s) return;
    int64_t seg0 = 0;
    add_one_doc(s, &seg0);
    store_close(s);
    CHECK(!exists(path, "-wal") && !exists(path, "-shm"), "closed store: no WAL files");
    chmod(path, 0444);
    s = NULL;
    mt_status st = store_open(path, &s);
    CHECK(st == MT_ERR_IO && s == NULL && contains(mt_errmsg(), "read-only") &&
              contains(mt_errmsg(), path),
          "mode 0444: %s (%s)", mt_status_str(st), mt_errmsg());
    store_close(s);
    CHECK(!exists(path, "-wal") && !exists(path, "-shm"), "refused: no -wal/-shm left");
    chmod(path, 0644);
    s = NULL;
    CHECK_STATUS(store_open(path, &s)); /* the next run after chmod works */
    store_close(s);

    /* a -wal without write permission (left by a run of the old code) */
    snprintf(wal, sizeof wal, "%s-wal", path);
    int fd = open(wal, O_WRONLY | O_CREAT | O_EXCL, 0444);
    CHECK(fd >= 0, "create %s: %s", wal, strerror(errno));
    if (fd >= 0) close(fd);
    s = NULL;
    st = store_open(path, &s);
    CHECK(st == MT_ERR_IO && s == NULL && contains(mt_errmsg(), wal) &&
              contains(mt_errmsg(), "read-only"),
          "read-only -wal: %s (%s)", mt_status_str(st), mt_errmsg());
    store_close(s);
    unlink(wal);
    s = NULL;
    CHECK_STATUS(store_open(path, &s));
    store_close(s);
    remove_db(path);
}

/* Part "read_only_file": a file without write permission (root writes anyway). */
static void test_read_only_file(void) {
    if (geteuid() == 0) {
        SKIP("running as root: a file without write permission is writable");
        return;
    }
    char path[512];
    tmp_path(path, sizeof path, "readonly.db");
    remove_db(path);
    store *s = NULL;
    CHECK_STATUS(store_open(path, &s));
    if (!s) return;
    int64_t seg0 = 0;
    add_one_doc(s, &seg0);
    store_close(s);
    chmod(path, 0444);
    s = NULL;
    mt_status st = store_open(path, &s);
    CHECK(st == MT_ERR_IO && s == NULL && contains(mt_errmsg(), "read-only"),
          "read-only file: %s (%s)", mt_status_str(st), mt_errmsg());
    store_close(s);
    CHECK(!exists(path, "-wal") && !exists(path, "-shm"), "refused: no -wal/-shm left");
    chmod(path, 0644);
    s = NULL;
    CHECK_STATUS(store_open(path, &s)); /* the next run after chmod works */
    store_close(s);
    /* a directory without write permission: SQLite could not create -wal */
    char dir[512], in_dir[600];
    tmp_path(dir, sizeof dir, "ro_dir");
    CHECK(mkdir(dir, 0755) == 0, "mkdir %s", dir);
    snprintf(in_dir, sizeof in_dir, "%s/s.db", dir);
    s = NULL;
    CHECK_STATUS(store_open(in_dir, &s));
    store_close(s);
    chmod(dir, 0555);
    s = NULL;
    st = store_open(in_dir, &s);
    CHECK(st == MT_ERR_IO && s == NULL && contains(mt_errmsg(), "directory"),
          "read-only directory: %s (%s)", mt_status_str(st), mt_errmsg());
    store_close(s);
    chmod(dir, 0755);
    remove_db(in_dir);
    rmdir(dir);
    remove_db(path);
}

static void test_locked(void) {
    char path[512];
    tmp_path(path, sizeof path, "locked.db");
    remove_db(path);
    store *s = NULL;
    CHECK_STATUS(store_open(path, &s));
    if (!s) return;
    int64_t seg0 = 0, id = 0;
    add_one_doc(s, &seg0);
    sqlite3 *other = NULL;
    CHECK(sqlite3_open(path, &other) == SQLITE_OK && exec_ok(other, "BEGIN IMMEDIATE"),
          "second writer");
    sqlite3_busy_timeout(store_db(s), 20);
    store_edit_in ed = {seg0, STORE_EDIT_TYPED, "blocked", 10, 1, 0, 0};
    mt_status st = store_record_edit(s, &ed, &id);
    CHECK(st == MT_ERR_IO && contains(mt_errmsg(), "locked"), "locked: %s (%s)", mt_status_str(st),
          mt_errmsg());
    CHECK(exec_ok(other, "ROLLBACK"), "release");
    sqlite3_close(other);
    CHECK_STATUS(store_record_edit(s, &ed, &id));
    store_close(s);
    remove_db(path);
}

/* An I/O error (not SQLITE_FULL) whose system error is ENOSPC, as growing
** the -shm file on a full disk gives ("disk I/O error", SQLite code 4874):
** the unix VFS's ftruncate fails with ENOSPC during a TRUNCATE checkpoint. */
static sqlite3_syscall_ptr real_ftruncate;
static int enospc_ftruncate(int fd, off_t len) {
    (void)fd;
    (void)len;
    errno = ENOSPC;
    return -1;
}

static void test_io_error_enospc(void) {
    char path[512];
    tmp_path(path, sizeof path, "ioerr.db");
    remove_db(path);
    store *s = NULL;
    CHECK_STATUS(store_open(path, &s));
    if (!s) return;
    int64_t seg0 = 0;
    add_one_doc(s, &seg0);
    sqlite3_vfs *vfs = sqlite3_vfs_find("unix");
    CHECK(vfs && vfs->iVersion >= 3 && vfs->xSetSystemCall, "unix VFS with xSetSystemCall");
    if (!(vfs && vfs->iVersion >= 3 && vfs->xSetSystemCall)) {
        store_close(s);
        return;
    }
    real_ftruncate = vfs->xGetSystemCall(vfs, "ftruncate");
    CHECK(vfs->xSetSystemCall(vfs, "ftruncate", (sqlite3_syscall_ptr)enospc_ftruncate) == SQLITE_OK,
          "override ftruncate");
    int rc = sqlite3_exec(store_db(s), "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
    vfs->xSetSystemCall(vfs, "ftruncate", real_ftruncate);
    CHECK((rc & 0xff) == SQLITE_IOERR, "checkpoint: SQLite code %d", rc);
    mt_status st = store_sqlite_error(store_db(s), rc, path, "checkpoint");
    CHECK(st == MT_ERR_IO && contains(mt_errmsg(), "disk full (no space left on device)") &&
              contains(mt_errmsg(), "checkpoint"),
          "I/O error with ENOSPC: %s (%s)", mt_status_str(st), mt_errmsg());
    store_close(s);
    remove_db(path);
}

static void test_disk_full(void) {
    char path[512];
    tmp_path(path, sizeof path, "full.db");
    remove_db(path);
    store *s = NULL;
    CHECK_STATUS(store_open(path, &s));
    if (!s) return;
    int64_t seg0 = 0, id = 0, c = 0;
    add_one_doc(s, &seg0);
    char text[2048];
    for (int i = 0; i < 10; i++) {
        snprintf(text, sizeof text, "committed edit %d", i);
        store_edit_in ed = {seg0, STORE_EDIT_TYPED, text, 10 * i, i, 0, 0};
        CHECK_STATUS(store_record_edit(s, &ed, &id));
    }
    CHECK_STATUS(store_confirm(s, seg0, "committed edit 9", 100, 10, &c));

    /* the disk is full: no page beyond the current size */
    sqlite3 *db = store_db(s);
    int64_t pages = pragma_int(db, "PRAGMA page_count");
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA max_page_count = %lld", (long long)pages);
    CHECK(pragma_int(db, sql) == pages, "max_page_count");
    int ok = 0;
    mt_status st = MT_OK;
    char last[2048] = "committed edit 9";
    for (int i = 0; i < 5000 && st == MT_OK; i++) {
        memset(text, 'a' + i % 26, sizeof text - 1);
        text[sizeof text - 1] = '\0';
        snprintf(text, 32, "filler %d ", i);
        text[strlen(text)] = ' ';
        store_edit_in ed = {seg0, STORE_EDIT_TYPED, text, 200 + i, 20 + i, 0, 0};
        st = store_record_edit(s, &ed, &id);
        if (st == MT_OK) {
            ok++;
            memcpy(last, text, sizeof last);
        }
    }
    CHECK(st == MT_ERR_IO, "disk full reported: %s (%s)", mt_status_str(st), mt_errmsg());
    CHECK(contains(mt_errmsg(), "disk full (no space left on device)") &&
              contains(mt_errmsg(), "record edit") && contains(mt_errmsg(), path),
          "message: %s", mt_errmsg());
    fprintf(stderr, "# disk full after %d more edits: %s\n", ok, mt_errmsg());
    CHECK(sqlite3_get_autocommit(db), "no transaction left open after the failure");
    st = store_confirm(s, seg0, text, 1, 1, &id);
    CHECK(st == MT_ERR_IO, "confirm on a full disk: %s", mt_status_str(st));
    seg_rec r = get_seg(s, seg0);
    CHECK(strncmp(r.target, last, TXT - 1) == 0, /* collectors keep TXT - 1 bytes */
          "target is the last committed edit: %.20s, want %.20s", r.target, last);
    CHECK(count_edits(s) == 11 + ok, "committed edits remain: %d, want %d", count_edits(s),
          11 + ok);
    /* space again: the store goes on */
    CHECK(pragma_int(db, "PRAGMA max_page_count = 1000000") >= 1000000, "more space");
    store_edit_in ed = {seg0, STORE_EDIT_TYPED, "after the disk was freed", 5000, 99, 0, 0};
    CHECK_STATUS(store_record_edit(s, &ed, &id));
    store_close(s);

    s = NULL;
    CHECK_STATUS(store_open(path, &s));
    if (!s) return;
    CHECK(count_edits(s) == 12 + ok, "after reopen: %d edits", count_edits(s));
    r = get_seg(s, seg0);
    CHECK(strcmp(r.target, "after the disk was freed") == 0, "target after reopen");
    export_list xl = {0};
    CHECK_STATUS(store_export_confirmed(s, 0, collect_export, &xl));
    CHECK(xl.n == 1 && xl.r[0].x.confirmation_id == c, "confirmation survived");
    CHECK_STATUS(store_check(s));
    store_close(s);
    remove_db(path);
}

/* Every try-allocation from the n-th on fails (SQLite's included): each
** scenario stops with a clean MT_ERR_NOMEM and frees everything.  Failure
** positions: all of the first 400, then every (1 + n/200)-th (all with
** MT_STORE_EXHAUSTIVE=1). */
static mt_status scenario_open(store **out) {
    store *s = NULL;
    mt_status st = store_open(":memory:", &s);
    store_close(s);
    return st;
}

static mt_status scenario_ops(store **out) {
    store *s = *out;
    store_segment_in segs[N_SEGS];
    make_segments(segs);
    int64_t doc = 0, id = 0;
    mt_status st = store_add_document(s, &doc_info, segs, N_SEGS, &doc);
    int n = 0;
    if (st == MT_OK) st = store_list_segments(s, doc, STORE_SEG_ALL, count_seg_fn, &n);
    if (st == MT_OK) st = store_find_document(s, doc_info.path, doc_info.content_hash, &id);
    store_hyp hyp = {"Hallo Welt", -0.5};
    if (st == MT_OK) st = store_add_mt(s, 1, 0, &hyp, 1, &id);
    if (st == MT_OK) {
        store_edit_in ed = {1, STORE_EDIT_ACCEPT_ALL, "Hallo", 10, 1, id, 0};
        st = store_record_edit(s, &ed, &id);
    }
    if (st == MT_OK) st = store_confirm(s, 1, "Hallo!", 20, 2, &id);
    store_progress p;
    if (st == MT_OK) st = store_get_progress(s, doc, &p);
    if (st == MT_OK) st = store_set_cursor(s, doc, 1, 0);
    if (st == MT_OK) {
        export_list *xl = calloc(1, sizeof *xl);
        st = store_export_confirmed(s, 0, collect_export, xl);
        if (st == MT_OK && xl->n != 1) st = MT_ERR_INVALID;
        free(xl);
    }
    if (st == MT_OK) st = store_add_model(s, "m.npz", "m", "transformer", &id);
    if (st == MT_OK) st = store_run_begin(s, id, 1, 0, "log", &id);
    if (st == MT_OK) st = store_run_end(s, id, STORE_RUN_DONE, 0, "{\"bleu\": 1}");
    return st;
}

static int n_logged;
static void count_log(mt_log_level level, const char *msg, void *user) { n_logged++; }

static void alloc_loop(const char *what, mt_status (*scenario)(store **), bool on_open_store) {
    bool exhaustive = getenv("MT_STORE_EXHAUSTIVE") != NULL;
    store *s = NULL;
    if (on_open_store) CHECK_STATUS(store_open(":memory:", &s));
    CHECK_STATUS(scenario(&s)); /* warm-up: SQLite's one-time initialisation */
    store_close(s);
    mt_log_set(count_log, NULL); /* "rollback failed: out of memory" is expected here */
    size_t base = mt_alloc_get_stats().live_blocks;
    int n, tried = 0, odd = 0;
    for (n = 0; n < 100000; n += exhaustive || n < 400 ? 1 : 1 + n / 200) {
        s = NULL;
        mt_status ost = on_open_store ? store_open(":memory:", &s) : MT_OK;
        if (ost != MT_OK) {
            CHECK_STATUS(ost);
            break;
        }
        mt_alloc_fail_at(n, true);
        mt_status st = scenario(&s);
        mt_alloc_fail_at(-1, false);
        tried++;
        if (st != MT_OK && st != MT_ERR_NOMEM) {
            odd++;
            CHECK(st == MT_ERR_NOMEM, "%s: allocation %d: %s (%s)", what, n, mt_status_str(st),
                  mt_errmsg());
        }
        if (s) {
            /* the store survives: no transaction left open, consistent, usable */
            CHECK(sqlite3_get_autocommit(store_db(s)), "%s: allocation %d: open transaction", what,
                  n);
            CHECK_STATUS(store_check(s));
            int64_t id = 0;
            CHECK_STATUS(store_add_model(s, "after.npz", "after", "rnn", &id));
            store_close(s);
        }
        size_t live = mt_alloc_get_stats().live_blocks;
        CHECK(live == base, "%s: allocation %d: %zu blocks leaked", what, n, live - base);
        if (st == MT_OK || live != base || odd > 3) break;
    }
    mt_log_set(NULL, NULL);
    CHECK(n > 10 && n < 100000, "%s: succeeded after %d allocations", what, n);
    fprintf(stderr, "# %s: succeeds from allocation %d on; %d failure positions tried, all clean\n",
            what, n, tried - 1);
}

static void test_alloc_failures(void) {
    alloc_loop("open", scenario_open, false);
    alloc_loop("operations", scenario_ops, true);
}

int main(int argc, char **argv) {
    TEST_MAIN_BEGIN(argc, argv);
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/mtpe_store_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        fprintf(stderr, "mkdtemp %s: %s\n", tmpdir, strerror(errno));
        return 1;
    }
    char path[512];
    tmp_path(path, sizeof path, "api.db");

    if (TEST_PART("read_only_file")) {
        test_read_only_file();
    } else {
        test_word_count();
        test_names();
        test_alloc_failures(); /* first: SQLite's memory goes through mt_alloc from here on */
        test_api(":memory:");
        test_api(path);
        remove_db(path);
        test_versions();
        test_migrate_from_each_version();
        test_migration_machinery();
        test_refusals();
        test_corruption();
        test_read_only();
        test_read_only_mode();
        test_locked();
        test_io_error_enospc();
        test_disk_full();
    }
    rmdir(tmpdir);
    TEST_MAIN_END();
}
