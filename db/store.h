/*
** store.h: the post-editing store, one SQLite database per user.  It holds
** the documents a translator opened, their segments, every machine
** translation shown, every edit event and confirmation, the models and the
** fine-tuning runs made from the edits.  The editor writes every edit here at
** once: each writing function commits (WAL, synchronous=FULL) before it
** returns, so an edit the editor was told about survives a crash.
**
** Conventions:
**   - Fallible functions return mt_status (MT_OK, or an error with the detail
**     in mt_errmsg(), naming the operation and quoting SQLite's message).
**     SQLite result codes map as: NOMEM -> MT_ERR_NOMEM; NOTADB, CORRUPT,
**     FORMAT, SQL errors -> MT_ERR_FORMAT; CONSTRAINT, MISUSE, RANGE, TOOBIG
**     -> MT_ERR_INVALID; everything else (IOERR, FULL, READONLY, BUSY,
**     LOCKED, CANTOPEN, PERM, ...) -> MT_ERR_IO.
**   - Ids are int64_t row ids (> 0); 0 means "none" where an id is optional.
**   - Times are milliseconds since the Unix epoch, taken from the store's
**     clock (store_set_clock; default CLOCK_REALTIME).
**   - Text is UTF-8 and is stored and returned byte for byte.
**   - Listing functions call fn once per row.  The row and its strings are
**     valid only during the call; copy what you keep.  fn returns 0 to go
**     on, nonzero to stop, in which case the function returns MT_ABORTED.
**     fn must not call back into the same store (asserted).
**   - A store is used by one thread at a time.  Several processes may open
**     the same file (SQLite locking, busy timeout 5 s).
*/
#ifndef MT_STORE_H
#define MT_STORE_H
#include <stdint.h>

#include "mt_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct store store;

/* The numeric values are stored in the database: never renumber them. */
typedef enum store_format {
    STORE_FORMAT_PO = 0,
    STORE_FORMAT_XLIFF = 1,
    STORE_FORMAT_TEXT = 2,
    STORE_FORMAT_MOSES = 3,
    STORE_FORMAT_TMX = 4, /* imported translation memories (schema version 3) */
    STORE_FORMAT_TSV = 5,
    STORE_FORMAT_COUNT
} store_format;

typedef enum store_seg_status {
    STORE_SEG_NEW = 0,       /* nothing done yet                          */
    STORE_SEG_MT = 1,        /* target is an MT hypothesis taken as is    */
    STORE_SEG_EDITED = 2,    /* target edited by the translator           */
    STORE_SEG_CONFIRMED = 3, /* target confirmed (store_confirm)          */
    STORE_SEG_STATUS_COUNT
} store_seg_status;

/* Bit mask of statuses for store_list_segments. */
#define STORE_SEG_MASK(st) (1u << (st))
#define STORE_SEG_ALL ((1u << STORE_SEG_STATUS_COUNT) - 1u)

typedef enum store_edit_kind {
    STORE_EDIT_TYPED = 0,       /* keystrokes                    -> EDITED    */
    STORE_EDIT_ACCEPT_WORD = 1, /* took the next word of an MT   -> EDITED    */
    STORE_EDIT_ACCEPT_ALL = 2,  /* took a whole MT hypothesis    -> MT        */
    STORE_EDIT_NBEST_PICK = 3,  /* took an n-best alternative    -> MT        */
    STORE_EDIT_UNDO = 4,        /* undo                          -> EDITED    */
    STORE_EDIT_CONFIRM = 5,     /* written only by store_confirm -> CONFIRMED */
    STORE_EDIT_KIND_COUNT
} store_edit_kind;

typedef enum store_run_status {
    STORE_RUN_RUNNING = 0,
    STORE_RUN_DONE = 1,
    STORE_RUN_FAILED = 2,
    STORE_RUN_CANCELLED = 3,
    STORE_RUN_STATUS_COUNT
} store_run_status;

const char *store_format_name(store_format f);         /* "po", "xliff", ...   */
const char *store_seg_status_name(store_seg_status s); /* "new", "mt", ...     */
const char *store_edit_kind_name(store_edit_kind k);   /* "typed", ...         */
const char *store_run_status_name(store_run_status s); /* "running", ...       */

/* ------------------------------------------------------------ open/close */

/* Opens (creating if needed) the store at path; ":memory:" gives a private
** in-memory store.  The directory must exist.  An older store is migrated
** to the current schema in one transaction.  Errors: MT_ERR_FORMAT for a
** file that is not an SQLite database, an SQLite database that is not an
** mtpe store, or a damaged schema; MT_ERR_UNSUPPORTED for a store written
** by a newer mtpe; MT_ERR_IO for a file that cannot be opened or written
** (a store, -wal/-shm file or directory without write permission is refused
** before SQLite touches it, also for root).  On success *out owns the
** store; free with store_close(). */
mt_status store_open(const char *path, store **out);
void store_close(store *s); /* NULL is a no-op */

/* Replaces the clock (tests); now_ms(user) returns ms since the epoch.
** NULL restores the default. */
void store_set_clock(store *s, int64_t (*now_ms)(void *user), void *user);

/* Schema version this build writes (PRAGMA user_version). */
int store_schema_version(void);

/* Runs PRAGMA integrity_check and foreign_key_check: MT_OK, or
** MT_ERR_FORMAT with the first problem in mt_errmsg(). */
mt_status store_check(store *s);

/* ------------------------------------------------------------- documents */

/* A document is one file version: the same path with a different content
** hash is a different document. */
typedef struct store_doc_info {
    const char *path; /* as given by the user (not normalised)        */
    store_format format;
    const char *src_lang;     /* e.g. "en"                                    */
    const char *tgt_lang;     /* e.g. "de"                                    */
    const char *content_hash; /* caller's digest of the file bytes, any text  */
} store_doc_info;

typedef struct store_segment_in {
    const char *source;        /* required                                       */
    const char *context;       /* msgctxt / XLIFF resname; NULL for none         */
    const char *plural_source; /* msgid_plural; NULL when not a plural entry     */
    int32_t plural_form;       /* msgstr[plural_form]; used only with plural_source */
    const char *target;        /* target found in the file; NULL for none        */
    store_seg_status status;   /* initial status (usually STORE_SEG_NEW)         */
} store_segment_in;

/* Adds a document and its n segments (indices 0..n-1) in one transaction;
** created and opened time are now.  MT_ERR_INVALID if (path, content_hash)
** is already stored (use store_find_document first). */
mt_status store_add_document(store *s, const store_doc_info *info, const store_segment_in *segs,
                             int32_t n, int64_t *doc_id);

/* Finds the document with this path whose import or one of whose saves
** (store_add_version) had this content hash, the most recent if several:
** MT_OK and *doc_id, or MT_ERR_NOTFOUND. */
mt_status store_find_document(store *s, const char *path, const char *content_hash,
                              int64_t *doc_id);

/* A save of the document: the file was written with content_hash.  segs[i]
** is what was written for segment i (n: all the document's segments, else
** MT_ERR_INVALID); only the segments whose (target, status) differ from
** their previous save (or, before the first, from the import) are stored
** with the version, so a save costs what it changed.  A hash equal to the
** last save's (or the import's, before any save) records nothing
** (*version_id 0).  store_find_document finds the document by the hash of
** any of its saves.  *n_changed (may be NULL): segments recorded. */
typedef struct store_saved_segment {
    const char *target; /* as written; NULL for none */
    store_seg_status status;
} store_saved_segment;
mt_status store_add_version(store *s, int64_t doc_id, const char *content_hash,
                            const store_saved_segment *segs, int32_t n, int64_t *version_id,
                            int32_t *n_changed);

typedef struct store_version {
    int64_t id, doc_id;
    const char *content_hash;
    int64_t saved_ms;
    int32_t n_changed;
} store_version;
typedef int (*store_version_fn)(void *user, const store_version *v);
/* The saves of a document, oldest first. */
mt_status store_list_versions(store *s, int64_t doc_id, store_version_fn fn, void *user);

typedef struct store_version_segment {
    int32_t index;
    int64_t seg_id;
    const char *target; /* NULL when none */
    store_seg_status status;
    const char *source; /* the source it translates (store_tm.h: plural forms) */
} store_version_segment;
typedef int (*store_version_segment_fn)(void *user, const store_version_segment *g);
/* The segments a save changed, by index. */
mt_status store_version_segments(store *s, int64_t version_id, store_version_segment_fn fn,
                                 void *user);

/* Records that the document was opened now (for "recent documents"). */
mt_status store_document_opened(store *s, int64_t doc_id);

typedef struct store_document {
    int64_t id;
    const char *path;
    store_format format;
    const char *src_lang, *tgt_lang, *content_hash;
    int64_t created_ms, opened_ms;
    int32_t cursor_segment, cursor_offset;
    int32_t n_segments;
} store_document;
typedef int (*store_document_fn)(void *user, const store_document *doc);

/* One document (MT_ERR_NOTFOUND if none), or all, most recently opened first. */
mt_status store_get_document(store *s, int64_t doc_id, store_document_fn fn, void *user);
mt_status store_list_documents(store *s, store_document_fn fn, void *user);

/* Where the translator left the document: segment index and byte offset in
** its target.  A new document starts at (0, 0).  MT_ERR_NOTFOUND for an
** unknown document; set rejects negative values with MT_ERR_INVALID. */
mt_status store_set_cursor(store *s, int64_t doc_id, int32_t segment, int32_t offset);
mt_status store_get_cursor(store *s, int64_t doc_id, int32_t *segment, int32_t *offset);

/* -------------------------------------------------------------- segments */

typedef struct store_segment {
    int64_t id, doc_id;
    int32_t index;
    const char *source;
    const char *context;       /* NULL when none                         */
    const char *plural_source; /* NULL when not plural                   */
    int32_t plural_form;       /* -1 when not plural                     */
    const char *original_target;
    const char *target; /* current target; NULL when none yet     */
    store_seg_status status;
    int32_t source_words;
    int64_t time_spent_ms;
    int64_t updated_ms;
} store_segment;
typedef int (*store_segment_fn)(void *user, const store_segment *seg);

/* Segments of a document in index order whose status is in status_mask
** (STORE_SEG_ALL for every segment). */
mt_status store_list_segments(store *s, int64_t doc_id, unsigned status_mask, store_segment_fn fn,
                              void *user);
/* One segment by id, or by document and index; MT_ERR_NOTFOUND if none. */
mt_status store_get_segment(store *s, int64_t seg_id, store_segment_fn fn, void *user);
mt_status store_get_segment_at(store *s, int64_t doc_id, int32_t index, store_segment_fn fn,
                               void *user);

/* Segments and source words per status, for one document or (doc_id 0)
** the whole store. */
typedef struct store_progress {
    int64_t segments[STORE_SEG_STATUS_COUNT];
    int64_t words[STORE_SEG_STATUS_COUNT];
    int64_t total_segments, total_words;
} store_progress;
mt_status store_get_progress(store *s, int64_t doc_id, store_progress *out);

/* Number of words the store counts in a source text: runs of characters
** other than white space, each CJK ideograph or kana counting as a word. */
int32_t store_count_words(const char *text);

/* ------------------------------------------------------------ MT outputs */

typedef struct store_hyp {
    const char *text;
    double score; /* model score (log-probability, normalised or not) */
} store_hyp;

/* Records the n-best list (n >= 1, best first) that model_id (0: unknown)
** produced for a segment and the editor showed. */
mt_status store_add_mt(store *s, int64_t seg_id, int64_t model_id, const store_hyp *hyps, int32_t n,
                       int64_t *mt_id);

typedef struct store_mt_row {
    int64_t mt_id, seg_id, model_id; /* model_id 0 when unknown */
    int64_t time_ms;
    int32_t rank; /* 0 = best */
    const char *text;
    double score;
} store_mt_row;
typedef int (*store_mt_fn)(void *user, const store_mt_row *row);

/* MT outputs of a segment, newest first, each as its rows in rank order. */
mt_status store_list_mt(store *s, int64_t seg_id, store_mt_fn fn, void *user);

/* ----------------------------------------------------------------- edits */

typedef struct store_edit_in {
    int64_t seg_id;
    store_edit_kind kind; /* any but STORE_EDIT_CONFIRM */
    const char *text;     /* the whole target after the edit             */
    int64_t spent_ms;     /* time spent on the segment so far            */
    int32_t keystrokes;   /* keystrokes on the segment so far            */
    int64_t mt_id;        /* MT output the edit started from; 0 for none */
    int32_t mt_rank;      /* its rank; used only when mt_id != 0         */
} store_edit_in;

/* Records an edit event and makes its text the segment's target, status as
** listed at store_edit_kind; committed before returning.  MT_ERR_NOTFOUND
** for an unknown segment, MT_ERR_INVALID for an unknown MT output. */
mt_status store_record_edit(store *s, const store_edit_in *e, int64_t *edit_id);

/* Confirms a segment with its final text: one CONFIRM edit event, one
** confirmation, target = text and status CONFIRMED, in one transaction. */
mt_status store_confirm(store *s, int64_t seg_id, const char *text, int64_t spent_ms,
                        int32_t keystrokes, int64_t *confirmation_id);

typedef struct store_edit {
    int64_t id, seg_id, doc_id;
    int32_t seg_index;
    store_edit_kind kind;
    const char *source; /* the source it translates (store_tm.h: plural forms) */
    const char *text;
    int64_t time_ms, spent_ms;
    int32_t keystrokes;
    int64_t mt_id;   /* 0 for none */
    int32_t mt_rank; /* -1 for none */
} store_edit;
typedef int (*store_edit_fn)(void *user, const store_edit *e);

/* Edit events with time_ms >= since_ms, oldest first (fine-tuning data). */
mt_status store_list_edits_since(store *s, int64_t since_ms, store_edit_fn fn, void *user);

/* The latest confirmation of every confirmed segment (also of one edited
** again since), with its source, of one document or (doc_id 0) all, by
** document and segment index: the rows of a TMX/TSV export. */
typedef struct store_export_row {
    int64_t doc_id, seg_id, confirmation_id;
    int32_t seg_index;
    const char *doc_path, *src_lang, *tgt_lang;
    const char *context;         /* NULL when none */
    const char *source, *target; /* source: the one it translates (store_tm.h) */
    int64_t time_ms;             /* when it was confirmed */
} store_export_row;
typedef int (*store_export_fn)(void *user, const store_export_row *row);
mt_status store_export_confirmed(store *s, int64_t doc_id, store_export_fn fn, void *user);

/* Every confirmed segment with a non-empty source and target, of one
** document (doc_id) or (doc_id 0) every document (edited in the editor or
** imported as confirmed), by segment id, whose confirmation (or, for an
** imported one, last change) is at or after since_ms: the data of
** fine-tuning, of APE triplets and of HTER.  mt: the best hypothesis of
** the segment's latest MT output (NULL when none was shown). */
typedef struct store_confirmed {
    int64_t seg_id, doc_id;
    const char *doc_path, *source, *target, *mt; /* source: as in store_tm.h */
    int64_t time_ms;
} store_confirmed;
typedef int (*store_confirmed_fn)(void *user, const store_confirmed *c);
mt_status store_list_confirmed(store *s, int64_t doc_id, int64_t since_ms, store_confirmed_fn fn,
                               void *user);

/* ------------------------------------------------------ models and runs */

/* Registers a model by path (name and kind are free text, e.g. "ende-base",
** "transformer"); returns the existing id when the path is known. */
mt_status store_add_model(store *s, const char *path, const char *name, const char *kind,
                          int64_t *model_id);
mt_status store_find_model(store *s, const char *path, int64_t *model_id); /* NOTFOUND */

typedef struct store_model {
    int64_t id;
    const char *path, *name, *kind;
    int64_t created_ms;
} store_model;
typedef int (*store_model_fn)(void *user, const store_model *m);
mt_status store_list_models(store *s, store_model_fn fn, void *user); /* by id */

/* Starts a fine-tuning run record (status RUNNING, started now) from
** base_model_id using n_edits edits made up to data_until_ms. */
mt_status store_run_begin(store *s, int64_t base_model_id, int64_t n_edits, int64_t data_until_ms,
                          const char *log_path, int64_t *run_id);
/* Ends a run: status DONE/FAILED/CANCELLED, output model (0: none) and
** metrics as a JSON object text (NULL: none; MT_ERR_INVALID if not JSON).
** MT_ERR_NOTFOUND for an unknown run, MT_ERR_INVALID for one already ended. */
mt_status store_run_end(store *s, int64_t run_id, store_run_status status, int64_t output_model_id,
                        const char *metrics_json);

typedef struct store_run {
    int64_t id, base_model_id, output_model_id; /* output 0 when none */
    store_run_status status;
    int64_t started_ms, ended_ms; /* ended 0 while running */
    int64_t n_edits, data_until_ms;
    const char *log_path;     /* NULL when none */
    const char *metrics_json; /* NULL when none */
} store_run;
typedef int (*store_run_fn)(void *user, const store_run *r);
mt_status store_get_run(store *s, int64_t run_id, store_run_fn fn, void *user);
mt_status store_list_runs(store *s, store_run_fn fn, void *user); /* newest first */

#ifdef __cplusplus
}
#endif
#endif /* MT_STORE_H */
