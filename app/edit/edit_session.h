/*
** edit_session.h: the machinery behind `mtpe edit` (app/cmd_edit.c).
**
**   engine    what translates one segment (app_edit_engine): the real one
**             wraps mt_translator (app/edit/edit_engine.c), tests plug in fakes
**   sink      where results go (app_edit_sink): ui_post_*() under ui_run,
**             a queue in --script mode, a recorder in tests
**   session   translation workers and the request queue (app/edit/edit_session.c)
**   ctl       the document, the store and the session behind ui_hooks
**             (app/edit/edit_ctl.c)
**
** Threads (DESIGN.md section 5).  The ui thread owns the terminal, the
** document and the store connection; every function here except the
** workers' own runs on it.  Workers translate and hand results to the sink
** (which copies them and wakes the ui thread) and to a result list that the
** ui thread drains into the store.  Nothing on the ui thread waits for a
** translation.
**
** Requests, by priority:
**   completion  request_completion(seg, prefix): a forced-prefix search; a
**               newer request cancels the older one, queued or running
**   MT          the current segment's translation (n-best, attention, word
**               confidences); requested on segment_changed, cancelled when
**               the translator leaves the segment before it is done
**   pre         the next `lookahead` segments after the current one that
**               have no translation yet, in document order; a queued one
**               that leaves that window is dropped, a running one finishes.
**               When no worker is idle, an interactive request preempts a
**               running pre-translation (it is queued again).
** Cancellation is a flag the engine polls before every decoding step; a
** cancelled job never reaches the sink (the flag is set and tested under
** the session lock, so once app_edit_session_goto/complete returned, an
** outdated result can no longer be posted).
*/
#ifndef APP_EDIT_SESSION_H
#define APP_EDIT_SESSION_H
#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "doc.h"
#include "mt.h"
#include "store.h"
#include "ui.h"

/* --------------------------------------------------------------- output */

/* One translation.  Full jobs (prefix NULL) fill hyp, nbest, tokens,
** attention and word confidences; prefix jobs fill hyp (the whole text,
** prefix included), completion and its confidences.  Every pointer is owned
** (mt_free); app_edit_output_clear frees and zeroes. */
typedef struct app_edit_output {
    char *hyp;
    char **nbest;  /* n_nbest texts, best first (nbest[0] is hyp)         */
    float *scores; /* n_nbest normalised model scores                    */
    int32_t n_nbest;
    char **src_tok; /* n_src labels of the attention columns (EOS last) */
    int32_t n_src;
    char **trg_tok; /* n_trg labels of the attention rows               */
    int32_t n_trg;
    float *attn;      /* [n_trg, n_src] or NULL                           */
    float *word_conf; /* per whitespace word of hyp, in [0, 1], or NULL  */
    int32_t n_words;
    char *completion; /* prefix jobs: the text that follows the prefix  */
    float *comp_conf; /* per whitespace word of completion, or NULL     */
    int32_t n_comp_words;
    int32_t n_tokens; /* target tokens of hyp (EOS included), for speed */
    char *ape;        /* full jobs with an APE model (spec.ape_dir): its
                         post-edit of hyp (app/ape.h), or NULL            */
} app_edit_output;

void app_edit_output_clear(app_edit_output *o);

/* Number of whitespace-separated words of s. */
int32_t app_edit_count_words(const char *s);

/* --------------------------------------------------------------- engine */

typedef struct app_edit_engine_ops {
    /* Per-thread state of a worker (graphs, scratch). */
    mt_status (*worker_init)(void *impl, void **worker);
    void (*worker_free)(void *worker);
    /* Translates source (plain text); prefix NULL: full translation, else
    ** complete the forced prefix.  cancel(cancel_user) is polled between
    ** decoding steps: MT_ABORTED when it returned true.  On MT_OK *out is
    ** filled (zeroed first); on error it is left empty. */
    mt_status (*translate)(void *worker, const char *source, const char *prefix,
                           bool (*cancel)(void *), void *cancel_user, app_edit_output *out);
    void (*free)(void *impl); /* the engine, when no worker uses it any more */
    /* Optional (NULL: no APE): the APE model's post-edit of (source, mt)
    ** into *out (caller mt_free()s); MT_ERR_UNSUPPORTED when the engine
    ** has no APE model, MT_ABORTED as translate. */
    mt_status (*post_edit)(void *worker, const char *source, const char *mt, bool (*cancel)(void *),
                           void *cancel_user, char **out);
} app_edit_engine_ops;

/* An engine: ops + impl, with its name (status line) and model path (the
** store's model table).  app_edit_engine_free calls ops->free(impl). */
typedef struct app_edit_engine {
    const app_edit_engine_ops *ops;
    void *impl;
    char *name;
    char *path;
} app_edit_engine;

/* Translates a segment with engine e through the segment anatomy
** (app/edit/edit_anatomy.c): blanks, line breaks, columns and placeholders of
** the source are kept; arguments and result as ops->translate. */
mt_status app_edit_translate_segment(const app_edit_engine *e, void *worker, const char *source,
                                     const char *prefix, bool (*cancel)(void *), void *cancel_user,
                                     app_edit_output *out);

/* Wraps impl (ownership moves in, also on failure: then ops->free(impl)). */
mt_status app_edit_engine_new(const app_edit_engine_ops *ops, void *impl, const char *name,
                              const char *path, app_edit_engine **out);
void app_edit_engine_free(app_edit_engine *e); /* NULL is a no-op */

/* The real engine (app/edit/edit_engine.c): an ensemble with its vocabularies
** and two translators over it, one for full translations (n-best, word
** scores, attention, beam_size) and one for completions (word scores,
** completion_beam). */
typedef struct app_edit_model_spec {
    const char *models[MT_MAX_MODELS];
    int n_models;
    const char *vocabs[MT_MAX_VOCABS]; /* source, then target */
    int n_vocabs;
    int32_t beam_size;       /* full translations and the n-best list  */
    int32_t completion_beam; /* completions                            */
    float normalize;         /* length normalisation exponent          */
    float max_length_factor;
    /* Glossary terms enforced in the full MT, not in completions
    ** (app_glossary_constraints of each translated piece of a source:
    ** models/translator.h "Terms"), at most
    ** glossary_max per piece; NULL or 0: none.  Not owned: it must outlive
    ** every engine loaded with the spec. */
    const struct app_glossary *glossary;
    int32_t glossary_max;
    /* An APE model folder (app/ape.h; `mtpe edit --ape DIR`) or NULL: the
    ** full MT of each piece is post-edited by it on the worker, after the
    ** MT (app_edit_output.ape), and the ui shows the result as one more
    ** alternative labelled "APE" (edit_session.c).  Not owned. */
    const char *ape_dir;
} app_edit_model_spec;

/* Defaults: beam 6, completion beam 3, normalize 0.6, length factor 3. */
app_edit_model_spec app_edit_model_default_spec(void);
/* Loads the models and vocabularies of spec (single-source, left-to-right
** models only: completions force a prefix).  Errors name the file. */
mt_status app_edit_engine_load(const app_edit_model_spec *spec, app_edit_engine **out);
/* The loader of `:model PATH` (an app_edit_load_fn; user: the
** app_edit_model_spec of the running model, which must outlive the
** session).  PATH is a model file, or a directory holding model.npz; the
** vocabularies are vocab.spm next to the model when it exists, else those
** of the running model. */
mt_status app_edit_engine_load_path(void *user, const char *path, app_edit_engine **out);

/* ----------------------------------------------------------------- sink */

/* Where results go.  Called from worker threads (with the session lock
** held: a sink must not call back into the session); each may be NULL. */
typedef struct app_edit_sink {
    void *user;
    mt_status (*mt)(void *user, int64_t seg, const ui_mt_result *r);
    mt_status (*completion)(void *user, int64_t seg, const char *prefix, const char *completion,
                            const float *conf, int32_t n_conf);
    mt_status (*message)(void *user, mt_log_level level, const char *text);
    mt_status (*progress)(void *user, const char *task, int64_t done, int64_t total);
    mt_status (*model)(void *user, const char *name);
} app_edit_sink;

/* The sink of the terminal editor: ui_post_mt, ui_post_completion, ... */
app_edit_sink app_edit_ui_sink(void);

/* -------------------------------------------------------------- session */

typedef struct app_edit_session app_edit_session;

/* Loads the engine named by `:model PATH`; runs on a background thread. */
typedef mt_status (*app_edit_load_fn)(void *user, const char *path, app_edit_engine **out);

typedef struct app_edit_session_params {
    int n_workers;         /* translation threads, >= 1                 */
    int lookahead;         /* segments pre-translated ahead (3); 0: none */
    app_edit_load_fn load; /* `:model`; NULL: not available             */
    void *load_user;
} app_edit_session_params;

app_edit_session_params app_edit_session_default_params(void);

/* Starts the workers.  sources: the n_segs texts to translate (copied);
** translated (may be NULL): segments that already have a target, which
** pre-translation skips.  engine: owned by the session on success; NULL:
** no MT until `:model` loads one.  No job starts before the first
** app_edit_session_goto. */
mt_status app_edit_session_init(const app_edit_session_params *p, const app_edit_sink *sink,
                                app_edit_engine *engine, int64_t n_segs, const char *const *sources,
                                const bool *translated, app_edit_session **out);
/* Cancels everything, joins the threads (waits for a model still loading). */
void app_edit_session_free(app_edit_session *s); /* NULL is a no-op */

/* The translator is on segment seg now (-1: none; everything is cancelled).
** Cancels outdated work, requests seg's MT unless the current engine already
** produced it, and refreshes the pre-translation window. */
void app_edit_session_goto(app_edit_session *s, int64_t seg);
/* Completion of prefix in segment seg; cancels any older completion. */
void app_edit_session_complete(app_edit_session *s, int64_t seg, const char *prefix);
/* Segment seg got a target (draft or confirmation), or lost it (an empty
** draft): pre-translation skips segments that have one. */
void app_edit_session_set_translated(app_edit_session *s, int64_t seg, bool translated);
/* Starts loading another engine with params.load in the background; on
** success it replaces the current one (sink->model, then MT is requested
** again), on failure the current one stays (sink->message).  MT_ERR_INVALID
** while another load runs or without a loader. */
mt_status app_edit_session_load_model(app_edit_session *s, const char *path);

/* Finished MT (full and pre-translations), for the store: a list, oldest
** first, taken by the caller (free with app_edit_results_free). */
typedef struct app_edit_result {
    struct app_edit_result *next;
    int64_t seg;
    char *model_path; /* path of the engine that produced it */
    char *model_name;
    app_edit_output out;
} app_edit_result;
app_edit_result *app_edit_session_take_results(app_edit_session *s);
void app_edit_results_free(app_edit_result *r);

/* Waits until no job is queued or running and no model is loading (true),
** or timeout_ms passed (false). */
bool app_edit_session_wait_idle(app_edit_session *s, int64_t timeout_ms);

typedef struct app_edit_session_stats {
    int64_t started;   /* jobs handed to the engine                        */
    int64_t posted_mt; /* MT results posted (full and pre-translations)     */
    int64_t posted_completions;
    int64_t cancelled; /* jobs cancelled (running: aborted; or dropped)    */
    int64_t preempted; /* pre-translations stopped for interactive work    */
    int64_t failed;    /* jobs the engine failed                           */
} app_edit_session_stats;
app_edit_session_stats app_edit_session_get_stats(app_edit_session *s);

/* ------------------------------------------------------------------ ctl */

/* The editor's controller: one document in the store, behind ui_hooks.
**
** Opening: the document is looked up in the store by its path (resolved)
** and a hash of its bytes.  Found: the stored targets and statuses (which
** may be newer than the file after a crash) are applied to the document
** and the editor reopens at the stored cursor.  Not found: it is imported
** as a new document version; statuses and the cursor carry over from the
** latest stored version of the same path for segments whose source and
** target are unchanged.  PO plural entries give one segment per form.
**
** Hooks, in this order, on the ui thread:
**   1. pending MT results are recorded (store_add_mt; untouched segments
**      take the MT as their target, which the file gets only with
**      params.save_mt);
**   2. edit events and confirmations are written to the store (each
**      committed, synchronous=FULL, before anything else happens);
**   3. then the document in memory, the cursor, and the session.
** save: the document is written atomically (temporary file, fsync, rename;
** confirmed = translated, drafts fuzzy / needs-review) and then registered
** in the store as the new version of the file, so that a later crash
** reopens at the right place. */
typedef struct app_edit_ctl app_edit_ctl;

typedef struct app_edit_ctl_params {
    const char *src_lang, *trg_lang; /* store's language codes (NULL: from the
                                        document, else "en" / "de")           */
    app_doc_save_params save;
    bool save_mt;             /* PO/XLIFF: MT nobody edited is saved as a draft
                                 (fuzzy); false: it stays out of the file     */
    bool qa_confirm;          /* a translation with QA issues needs a second confirmation */
    bool qa_save;             /* :w refuses what msgfmt --check would reject (:w! writes) */
    const char *open_message; /* logged (mt_log, a warning: the status line)
                                 when the editor opens; NULL: none        */
    /* the store's glossary entries of this project ("": the global ones)
    ** and the global ones are highlighted in the source and checked by QA;
    ** NULL: no glossary */
    const char *glossary_project;
} app_edit_ctl_params;

/* doc and st are not owned and must outlive the ctl. */
mt_status app_edit_ctl_open(store *st, app_doc *doc, const app_edit_ctl_params *p,
                            app_edit_ctl **out);
void app_edit_ctl_free(app_edit_ctl *c); /* NULL is a no-op */

/* The editor's segments (valid until the ctl is freed; statuses as opened)
** and the segment to start on. */
const ui_document *app_edit_ctl_document(const app_edit_ctl *c);
int64_t app_edit_ctl_start(const app_edit_ctl *c);
/* What the session translates (tags stripped) and which segments have a
** target, for app_edit_session_init. */
const char *const *app_edit_ctl_mt_sources(const app_edit_ctl *c);
const bool *app_edit_ctl_translated(const app_edit_ctl *c);
int64_t app_edit_ctl_count(const app_edit_ctl *c);
/* The glossary the editor uses (params.glossary_project; NULL: none), for
** the decoder's term constraints (app/formats/glossary.h). */
const struct app_glossary *app_edit_ctl_glossary(const app_edit_ctl *c);
/* Store ids: the document version and segment seg's row (they change when
** a save registers a new version). */
int64_t app_edit_ctl_doc_id(const app_edit_ctl *c);
int64_t app_edit_ctl_seg_id(const app_edit_ctl *c, int64_t seg);

/* The session the hooks drive (not owned; NULL detaches). */
void app_edit_ctl_attach(app_edit_ctl *c, app_edit_session *s);
/* The hooks (user = c). */
ui_hooks app_edit_ctl_hooks(app_edit_ctl *c);
/* Records pending MT results (the hooks do it; call once more at the end). */
void app_edit_ctl_flush(app_edit_ctl *c);

/* Observer of durable events, called after they are committed: "confirmed"
** (id: the confirmation row, text: what was confirmed) and "saved" (id:
** the new document version, text: the file).  For --script acks. */
typedef void (*app_edit_observer)(void *user, const char *event, int64_t seg, int64_t id,
                                  const char *text);
void app_edit_ctl_set_observer(app_edit_ctl *c, app_edit_observer fn, void *user);

/* Content hash of a document's files as the store keys it (caller mt_frees). */
mt_status app_edit_doc_hash(const app_doc *doc, char **out);

/* ---------------------------------------------------------------- tune */

/* `:tune` (app/edit/edit_tune.c): `mtpe tune` of base_model on the store's
** confirmed segments in a niced child process, progress and result through
** the sink; an accepted model is loaded into sess when auto_switch. */
typedef struct app_edit_tuner app_edit_tuner;
typedef struct app_edit_tuner_params {
    const char *db_path;
    const char *models_dir; /* tuned-N folders go here */
    const char *base_model, *vocabs[2];
    app_edit_session *sess; /* not owned; NULL: no hot switch */
    app_edit_sink sink;
    bool auto_switch;
    int32_t adapt_every;    /* > 0: a tune starts after that many confirmations */
    const char *extra_args; /* more `mtpe tune` options, space-separated; NULL: none */
} app_edit_tuner_params;
mt_status app_edit_tuner_init(const app_edit_tuner_params *p, app_edit_tuner **out);
/* Cancels a running tune (SIGTERM) and waits for it. */
void app_edit_tuner_free(app_edit_tuner *t); /* NULL is a no-op */
/* Start / cancel; msg gets what to tell the translator either way. */
mt_status app_edit_tuner_start(app_edit_tuner *t, char *msg, size_t n);
mt_status app_edit_tuner_cancel(app_edit_tuner *t, char *msg, size_t n);
bool app_edit_tuner_running(app_edit_tuner *t);
/* app_edit_session_load_model of the tuner's session, serialised with the
** tuner's own switch (its reader thread): what :model calls when a tuner
** exists. */
mt_status app_edit_tuner_load_model(app_edit_tuner *t, const char *path);
/* The last run's result ("" when none yet). */
void app_edit_tuner_last(app_edit_tuner *t, char *out, size_t n);
/* A segment was confirmed (--adapt-every counts them). */
void app_edit_tuner_confirmed(app_edit_tuner *t);
/* The tuner behind the ctl's :tune and :model (not owned; NULL: none). */
void app_edit_ctl_set_tuner(app_edit_ctl *c, app_edit_tuner *t);

/* ---------------------------------------------------------------- bench */

/* `mtpe bench edit`: completion latency (app/bench/bench_edit.c). */
int app_bench_edit_main(int argc, char **argv);

#endif
