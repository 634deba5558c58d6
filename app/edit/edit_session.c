/*
** edit_session.c: the translation workers of `mtpe edit` and their request
** queue (see edit_session.h for the rules: priorities, cancellation,
** pre-translation, results).
**
** State, all under s->mu:
**   q_comp, q_mt     the interactive slots: the latest completion request
**                    and the current segment's MT (at most one each)
**   pre              the pre-translation queue, in document order
**   workers[i].job   the job worker i is running (NULL: idle)
**   mt_gen[seg]      generation of the engine whose MT of seg was posted
**                    (0: none); fail_gen likewise for failures, so that a
**                    segment the engine cannot translate is not retried
**                    with the same engine
**   eng, gen         the current engine (reference counted: a worker keeps
**                    the engine of its per-thread state until it picks up
**                    a job under a newer one) and its generation
** A job's cancel flag is atomic because the engine polls it without the
** lock; it is set, and tested before posting, under the lock.
*/
#include "edit_session.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* --------------------------------------------------------------- output */

static void free_strv(char **v, int32_t n) {
    for (int32_t i = 0; v && i < n; i++)
        mt_free(v[i]);
    mt_free(v);
}

void app_edit_output_clear(app_edit_output *o) {
    mt_free(o->hyp);
    free_strv(o->nbest, o->n_nbest);
    mt_free(o->scores);
    free_strv(o->src_tok, o->n_src);
    free_strv(o->trg_tok, o->n_trg);
    mt_free(o->attn);
    mt_free(o->word_conf);
    mt_free(o->completion);
    mt_free(o->comp_conf);
    mt_free(o->ape);
    memset(o, 0, sizeof *o);
}

int32_t app_edit_count_words(const char *s) {
    int32_t n = 0;
    bool in = false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        bool sp = *p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v';
        if (!sp && !in) n++;
        in = !sp;
    }
    return n;
}

/* --------------------------------------------------------------- engine */

mt_status app_edit_engine_new(const app_edit_engine_ops *ops, void *impl, const char *name,
                              const char *path, app_edit_engine **out) {
    *out = NULL;
    app_edit_engine *e = mt_try_calloc(1, sizeof *e);
    if (e) {
        e->ops = ops;
        e->impl = impl;
        e->name = mt_try_strdup(name ? name : "");
        e->path = mt_try_strdup(path ? path : "");
    }
    if (e == NULL || e->name == NULL || e->path == NULL) {
        if (e) {
            mt_free(e->name);
            mt_free(e->path);
            mt_free(e);
        }
        if (ops->free) ops->free(impl);
        return mt_seterr(MT_ERR_NOMEM, "edit: out of memory (engine)");
    }
    *out = e;
    return MT_OK;
}

void app_edit_engine_free(app_edit_engine *e) {
    if (e == NULL) return;
    if (e->ops->free) e->ops->free(e->impl);
    mt_free(e->name);
    mt_free(e->path);
    mt_free(e);
}

/* ----------------------------------------------------------------- sink */

static mt_status ui_sink_mt(void *u, int64_t seg, const ui_mt_result *r) {
    (void)u;
    return ui_post_mt(seg, r);
}
static mt_status ui_sink_completion(void *u, int64_t seg, const char *prefix, const char *text,
                                    const float *conf, int32_t n) {
    (void)u;
    return ui_post_completion(seg, prefix, text, conf, n);
}
static mt_status ui_sink_message(void *u, mt_log_level level, const char *text) {
    (void)u;
    return ui_post_message(level, text);
}
static mt_status ui_sink_progress(void *u, const char *task, int64_t done, int64_t total) {
    (void)u;
    return ui_post_progress(task, done, total);
}
static mt_status ui_sink_model(void *u, const char *name) {
    (void)u;
    return ui_post_model(name);
}

app_edit_sink app_edit_ui_sink(void) {
    app_edit_sink k = {
        NULL, ui_sink_mt, ui_sink_completion, ui_sink_message, ui_sink_progress, ui_sink_model};
    return k;
}

/* -------------------------------------------------------------- session */

typedef enum job_kind { JOB_COMPLETE, JOB_MT, JOB_PRE } job_kind;

typedef struct job {
    struct job *next;
    job_kind kind;
    int64_t seg;
    char *prefix; /* JOB_COMPLETE */
    atomic_bool cancel;
    bool preempted;
} job;

typedef struct eng_ref {
    app_edit_engine *e;
    int refs;
    uint64_t gen;
} eng_ref;

typedef struct worker {
    app_edit_session *s;
    pthread_t tid;
    bool started;
    eng_ref *eng; /* engine of state (holds a reference) */
    void *state;
    job *job; /* running, or NULL */
} worker;

struct app_edit_session {
    pthread_mutex_t mu;
    pthread_cond_t work_cv, idle_cv;
    app_edit_session_params p;
    app_edit_sink sink;
    int64_t n;
    char **src;
    bool *translated;
    uint64_t *mt_gen, *fail_gen;
    int64_t cur;
    job *q_comp, *q_mt, *pre;
    worker *workers;
    int n_workers;
    eng_ref *eng;
    uint64_t gen;
    bool stop;
    bool progress_shown;
    /* :model */
    pthread_t loader;
    bool loader_started, loader_busy;
    char *load_path;
    /* results for the store */
    app_edit_result *res_head, *res_tail;
    app_edit_session_stats stats;
};

app_edit_session_params app_edit_session_default_params(void) {
    app_edit_session_params p = {.n_workers = 1, .lookahead = 3};
    return p;
}

static job *job_new(job_kind kind, int64_t seg, const char *prefix) {
    job *j = mt_try_calloc(1, sizeof *j);
    if (j == NULL) return NULL;
    j->kind = kind;
    j->seg = seg;
    atomic_init(&j->cancel, false);
    if (prefix) {
        j->prefix = mt_try_strdup(prefix);
        if (j->prefix == NULL) {
            mt_free(j);
            return NULL;
        }
    }
    return j;
}

static void job_free(job *j) {
    if (j == NULL) return;
    mt_free(j->prefix);
    mt_free(j);
}

static bool job_cancelled(void *user) {
    job *j = user;
    return atomic_load(&j->cancel);
}

static void message(app_edit_session *s, mt_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void message(app_edit_session *s, mt_log_level level, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (s->sink.message) s->sink.message(s->sink.user, level, buf);
}

/* Drops a reference; returns the engine to free (outside the lock) or NULL. */
static app_edit_engine *eng_release(eng_ref *r) {
    if (r == NULL || --r->refs > 0) return NULL;
    app_edit_engine *e = r->e;
    mt_free(r);
    return e;
}

static bool has_mt(const app_edit_session *s, int64_t seg) {
    return s->mt_gen[seg] == s->gen || s->fail_gen[seg] == s->gen;
}

/* The running job of segment seg that is not cancelled, or NULL. */
static job *running_for(app_edit_session *s, int64_t seg) {
    for (int i = 0; i < s->n_workers; i++) {
        job *j = s->workers[i].job;
        if (j && j->seg == seg && j->kind != JOB_COMPLETE && !atomic_load(&j->cancel)) return j;
    }
    return NULL;
}

static void drop_completions(app_edit_session *s) {
    if (s->q_comp) {
        job_free(s->q_comp);
        s->q_comp = NULL;
        s->stats.cancelled++;
    }
    for (int i = 0; i < s->n_workers; i++) {
        job *j = s->workers[i].job;
        if (j && j->kind == JOB_COMPLETE) atomic_store(&j->cancel, true);
    }
}

/* Recomputes the pre-translation queue: of the first `lookahead` segments
** after the current one that had no translation (in the document or from
** the translator), those whose MT is not done or running, in order; queued
** ones outside the window are dropped. */
static void refill_pre(app_edit_session *s) {
    job *old = s->pre, *head = NULL, **tail = &head;
    s->pre = NULL;
    int want = s->cur < 0 || s->stop || s->eng->e == NULL ? 0 : s->p.lookahead;
    for (int64_t i = s->cur + 1; i < s->n && want > 0; i++) {
        if (s->translated[i]) continue;
        want--; /* untranslated: in the window, whether its MT is done or not */
        if (has_mt(s, i) || running_for(s, i) || (s->q_mt && s->q_mt->seg == i)) continue;
        job *j = NULL, **pp = &old;
        for (; *pp; pp = &(*pp)->next) {
            if ((*pp)->seg == i) {
                j = *pp;
                *pp = j->next;
                break;
            }
        }
        if (j == NULL) j = job_new(JOB_PRE, i, NULL);
        if (j == NULL) break; /* out of memory: fewer pre-translations */
        j->next = NULL;
        *tail = j;
        tail = &j->next;
    }
    while (old) {
        job *next = old->next;
        job_free(old);
        old = next;
    }
    s->pre = head;
}

/* Interactive work waiting and no idle worker: stop running pre-translations
** (refill_pre queues them again when they finish). */
static void preempt(app_edit_session *s) {
    int need = (s->q_comp != NULL) + (s->q_mt != NULL), idle = 0;
    for (int i = 0; i < s->n_workers; i++)
        idle += s->workers[i].job == NULL;
    for (int i = 0; i < s->n_workers && need > idle; i++) {
        job *j = s->workers[i].job;
        if (j && j->kind == JOB_PRE && !atomic_load(&j->cancel)) {
            atomic_store(&j->cancel, true);
            j->preempted = true;
            need--;
        }
    }
}

/* Requests the current segment's MT unless it has one or is on its way. */
static void want_current(app_edit_session *s) {
    int64_t seg = s->cur;
    if (seg < 0 || s->eng->e == NULL || has_mt(s, seg)) return;
    job *r = running_for(s, seg);
    if (r) {
        r->kind = JOB_MT; /* a running pre-translation becomes the current MT */
        return;
    }
    if (s->q_mt && s->q_mt->seg == seg) return;
    for (job **pp = &s->pre; *pp; pp = &(*pp)->next) {
        if ((*pp)->seg == seg) {
            job *j = *pp;
            *pp = j->next;
            job_free(j);
            break;
        }
    }
    job *j = job_new(JOB_MT, seg, NULL);
    if (j == NULL) {
        message(s, MT_LOG_ERROR, "out of memory: segment %lld not translated", (long long)seg + 1);
        return;
    }
    job_free(s->q_mt);
    s->q_mt = j;
}

static void show_progress(app_edit_session *s) {
    bool active = s->pre != NULL;
    for (int i = 0; i < s->n_workers && !active; i++)
        active = s->workers[i].job && s->workers[i].job->kind == JOB_PRE;
    if (!s->sink.progress) return;
    if (!active) {
        if (s->progress_shown) s->sink.progress(s->sink.user, "MT", 0, 0);
        s->progress_shown = false;
        return;
    }
    int64_t done = 0;
    for (int64_t i = 0; i < s->n; i++)
        done += s->translated[i] || s->mt_gen[i] == s->gen;
    s->sink.progress(s->sink.user, "MT", done, s->n);
    s->progress_shown = true;
}

static job *pick(app_edit_session *s) {
    job *j = NULL;
    if (s->q_comp) {
        j = s->q_comp;
        s->q_comp = NULL;
    } else if (s->q_mt) {
        j = s->q_mt;
        s->q_mt = NULL;
    } else if (s->pre) {
        j = s->pre;
        s->pre = j->next;
    }
    if (j) j->next = NULL;
    return j;
}

static bool busy(const app_edit_session *s) {
    if (s->q_comp || s->q_mt || s->pre || s->loader_busy) return true;
    for (int i = 0; i < s->n_workers; i++)
        if (s->workers[i].job) return true;
    return false;
}

/* The most alternatives a result may have to get its APE entry. */
enum { APE_LIST_MAX = 64 };

/* Posts a finished job (lock held).  Returns true when out was moved into
** the result list. */
static bool post_result(app_edit_session *s, worker *w, job *j, app_edit_output *out,
                        double seconds) {
    if (j->kind == JOB_COMPLETE) {
        if (s->sink.completion)
            s->sink.completion(s->sink.user, j->seg, j->prefix,
                               out->completion ? out->completion : "", out->comp_conf,
                               out->comp_conf ? out->n_comp_words : 0);
        s->stats.posted_completions++;
        return false;
    }
    ui_mt_result r = {
        .hyp = out->hyp ? out->hyp : "",
        .nbest = (const char *const *)out->nbest,
        .nbest_scores = out->scores,
        .n_nbest = out->nbest ? out->n_nbest : 0,
        .src_tokens = (const char *const *)out->src_tok,
        .n_src = out->src_tok ? out->n_src : 0,
        .trg_tokens = (const char *const *)out->trg_tok,
        .n_trg = out->trg_tok ? out->n_trg : 0,
        .attention = out->src_tok && out->trg_tok ? out->attn : NULL,
        .word_conf = out->word_conf,
        .n_words = out->word_conf ? out->n_words : 0,
        .tokens_per_sec = seconds > 0 && out->n_tokens > 0 ? out->n_tokens / seconds : 0,
    };
    /* the APE post-edit: the entry it equals is labelled "APE", else it is
    ** one more alternative, first (M-1 picks it) */
    const char *ape_texts[APE_LIST_MAX + 1], *ape_labels[APE_LIST_MAX + 1];
    float ape_scores[APE_LIST_MAX + 1];
    if (out->ape && r.n_nbest <= APE_LIST_MAX) {
        int32_t at = -1;
        for (int32_t k = 0; k < r.n_nbest && at < 0; k++)
            if (strcmp(r.nbest[k], out->ape) == 0) at = k;
        int32_t n = 0;
        if (at < 0) {
            ape_texts[n] = out->ape;
            ape_labels[n] = "APE";
            ape_scores[n++] = 0.0f;
        }
        for (int32_t k = 0; k < r.n_nbest; k++) {
            ape_texts[n] = r.nbest[k];
            ape_labels[n] = k == at ? "APE" : NULL;
            ape_scores[n++] = r.nbest_scores ? r.nbest_scores[k] : 0.0f;
        }
        if (r.n_nbest == 0 && at < 0) { /* no list: the MT after the APE entry */
            ape_texts[n] = r.hyp;
            ape_labels[n] = NULL;
            ape_scores[n++] = 0.0f;
        }
        r.nbest = ape_texts;
        r.nbest_labels = ape_labels;
        r.nbest_scores = ape_scores;
        r.n_nbest = n;
    }
    if (s->sink.mt && s->sink.mt(s->sink.user, j->seg, &r) != MT_OK && s->sink.message)
        message(s, MT_LOG_DEBUG, "segment %lld: MT not shown: %s", (long long)j->seg + 1,
                mt_errmsg());
    s->mt_gen[j->seg] = w->eng->gen;
    s->stats.posted_mt++;
    app_edit_result *res = mt_try_calloc(1, sizeof *res);
    if (res) {
        res->seg = j->seg;
        res->model_path = mt_try_strdup(w->eng->e->path);
        res->model_name = mt_try_strdup(w->eng->e->name);
    }
    if (res == NULL || res->model_path == NULL || res->model_name == NULL) {
        if (res) {
            mt_free(res->model_path);
            mt_free(res->model_name);
            mt_free(res);
        }
        message(s, MT_LOG_WARN, "out of memory: the MT of segment %lld is not stored",
                (long long)j->seg + 1);
        return false;
    }
    res->out = *out;
    if (s->res_tail)
        s->res_tail->next = res;
    else
        s->res_head = res;
    s->res_tail = res;
    return true;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    app_edit_session *s = w->s;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        job *j = NULL;
        while (!s->stop && (j = pick(s)) == NULL)
            pthread_cond_wait(&s->work_cv, &s->mu);
        if (s->stop) break;
        w->job = j;
        s->stats.started++;
        /* the per-thread state must belong to the current engine */
        eng_ref *old = NULL;
        void *old_state = NULL;
        if (w->eng != s->eng) {
            old = w->eng;
            old_state = w->state;
            w->state = NULL;
            w->eng = s->eng;
            w->eng->refs++;
        }
        eng_ref *er = w->eng;
        const char *src = s->src[j->seg];
        pthread_mutex_unlock(&s->mu);

        if (old) {
            if (old_state) old->e->ops->worker_free(old_state);
            pthread_mutex_lock(&s->mu);
            app_edit_engine *dead = eng_release(old);
            pthread_mutex_unlock(&s->mu);
            app_edit_engine_free(dead);
        }
        mt_status rc = MT_OK;
        if (w->state == NULL) rc = er->e->ops->worker_init(er->e->impl, &w->state);
        app_edit_output out;
        memset(&out, 0, sizeof out);
        double t0 = app_now();
        if (rc == MT_OK)
            rc =
                app_edit_translate_segment(er->e, w->state, src, j->prefix, job_cancelled, j, &out);
        double dt = app_now() - t0;

        pthread_mutex_lock(&s->mu);
        w->job = NULL;
        bool moved = false;
        if (rc == MT_OK && !atomic_load(&j->cancel) && er->gen == s->gen && !s->stop) {
            moved = post_result(s, w, j, &out, dt);
        } else if (j->preempted) {
            s->stats.preempted++;
        } else if (rc == MT_OK || rc == MT_ABORTED) {
            s->stats.cancelled++;
        } else {
            s->stats.failed++;
            if (j->kind != JOB_COMPLETE) s->fail_gen[j->seg] = er->gen;
            message(s, MT_LOG_ERROR, "segment %lld: %s failed: %s", (long long)j->seg + 1,
                    j->kind == JOB_COMPLETE ? "completion" : "translation",
                    mt_errmsg()[0] ? mt_errmsg() : mt_status_str(rc));
        }
        if (!moved) app_edit_output_clear(&out);
        job_free(j);
        want_current(s); /* a preempted current MT, after a model switch */
        refill_pre(s);
        show_progress(s);
        pthread_cond_broadcast(&s->idle_cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

mt_status app_edit_session_init(const app_edit_session_params *p, const app_edit_sink *sink,
                                app_edit_engine *engine, int64_t n_segs, const char *const *sources,
                                const bool *translated, app_edit_session **out) {
    *out = NULL;
    if (p->n_workers < 1 || p->n_workers > 64 || p->lookahead < 0 || n_segs < 0)
        return mt_seterr(MT_ERR_INVALID, "edit session: %d workers, lookahead %d, %lld segments",
                         p->n_workers, p->lookahead, (long long)n_segs);
    app_edit_session *s = mt_try_calloc(1, sizeof *s);
    if (s == NULL) return mt_seterr(MT_ERR_NOMEM, "edit session: out of memory");
    mt_status rc = MT_ERR_NOMEM;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work_cv, NULL);
    pthread_cond_init(&s->idle_cv, NULL);
    s->p = *p;
    if (sink) s->sink = *sink;
    s->n = n_segs;
    s->cur = -1;
    size_t n = (size_t)(n_segs > 0 ? n_segs : 1);
    s->src = mt_try_calloc(n, sizeof *s->src);
    s->translated = mt_try_calloc(n, sizeof *s->translated);
    s->mt_gen = mt_try_calloc(n, sizeof *s->mt_gen);
    s->fail_gen = mt_try_calloc(n, sizeof *s->fail_gen);
    s->workers = mt_try_calloc((size_t)p->n_workers, sizeof *s->workers);
    s->eng = mt_try_calloc(1, sizeof *s->eng);
    if (!s->src || !s->translated || !s->mt_gen || !s->fail_gen || !s->workers || !s->eng) {
        mt_seterr(rc, "edit session: out of memory");
        goto fail;
    }
    for (int64_t i = 0; i < n_segs; i++) {
        s->src[i] = mt_try_strdup(sources[i] ? sources[i] : "");
        if (s->src[i] == NULL) {
            mt_seterr(rc, "edit session: out of memory");
            goto fail;
        }
        s->translated[i] = translated ? translated[i] : false;
    }
    s->eng->e = engine;
    s->eng->refs = 1;
    s->eng->gen = s->gen = 1;
    s->n_workers = p->n_workers;
    for (int i = 0; i < s->n_workers; i++) {
        worker *w = &s->workers[i];
        w->s = s;
        if (pthread_create(&w->tid, NULL, worker_main, w) != 0) {
            rc = mt_seterr(MT_ERR_NOMEM, "edit session: cannot start worker thread %d", i + 1);
            goto fail;
        }
        w->started = true;
    }
    *out = s;
    return MT_OK;
fail:
    if (s->eng) s->eng->e = NULL; /* the caller keeps the engine on failure */
    app_edit_session_free(s);
    return rc;
}

static void free_queue(job *j) {
    while (j) {
        job *next = j->next;
        job_free(j);
        j = next;
    }
}

void app_edit_session_free(app_edit_session *s) {
    if (s == NULL) return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    for (int i = 0; s->workers && i < s->n_workers; i++)
        if (s->workers[i].job) atomic_store(&s->workers[i].job->cancel, true);
    pthread_cond_broadcast(&s->work_cv);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; s->workers && i < s->n_workers; i++)
        if (s->workers[i].started) pthread_join(s->workers[i].tid, NULL);
    if (s->loader_started) pthread_join(s->loader, NULL);
    for (int i = 0; s->workers && i < s->n_workers; i++) {
        worker *w = &s->workers[i];
        if (w->eng) {
            if (w->state) w->eng->e->ops->worker_free(w->state);
            app_edit_engine_free(eng_release(w->eng));
        }
    }
    if (s->eng) app_edit_engine_free(eng_release(s->eng));
    free_queue(s->q_comp);
    free_queue(s->q_mt);
    free_queue(s->pre);
    app_edit_results_free(s->res_head);
    for (int64_t i = 0; s->src && i < s->n; i++)
        mt_free(s->src[i]);
    mt_free(s->src);
    mt_free(s->translated);
    mt_free(s->mt_gen);
    mt_free(s->fail_gen);
    mt_free(s->workers);
    mt_free(s->load_path);
    pthread_cond_destroy(&s->work_cv);
    pthread_cond_destroy(&s->idle_cv);
    pthread_mutex_destroy(&s->mu);
    mt_free(s);
}

void app_edit_session_goto(app_edit_session *s, int64_t seg) {
    pthread_mutex_lock(&s->mu);
    if (seg >= s->n) seg = -1;
    s->cur = seg;
    drop_completions(s);
    if (s->q_mt && s->q_mt->seg != seg) {
        job_free(s->q_mt);
        s->q_mt = NULL;
        s->stats.cancelled++;
    }
    for (int i = 0; i < s->n_workers; i++) {
        job *j = s->workers[i].job;
        if (j && (seg < 0 || (j->kind == JOB_MT && j->seg != seg))) atomic_store(&j->cancel, true);
    }
    want_current(s);
    refill_pre(s);
    preempt(s);
    show_progress(s);
    pthread_cond_broadcast(&s->work_cv);
    pthread_mutex_unlock(&s->mu);
}

void app_edit_session_complete(app_edit_session *s, int64_t seg, const char *prefix) {
    pthread_mutex_lock(&s->mu);
    drop_completions(s);
    if (seg >= 0 && seg < s->n && prefix) {
        s->q_comp = job_new(JOB_COMPLETE, seg, prefix);
        if (s->q_comp == NULL) message(s, MT_LOG_ERROR, "out of memory: no completion");
    }
    preempt(s);
    pthread_cond_broadcast(&s->work_cv);
    pthread_mutex_unlock(&s->mu);
}

void app_edit_session_set_translated(app_edit_session *s, int64_t seg, bool translated) {
    pthread_mutex_lock(&s->mu);
    if (seg >= 0 && seg < s->n && s->translated[seg] != translated) {
        s->translated[seg] = translated;
        refill_pre(s);
        pthread_cond_broadcast(&s->work_cv);
    }
    pthread_mutex_unlock(&s->mu);
}

static void *loader_main(void *arg) {
    app_edit_session *s = arg;
    app_edit_engine *e = NULL;
    mt_status rc = s->p.load(s->p.load_user, s->load_path, &e);
    const char *err = mt_errmsg();
    eng_ref *r = NULL;
    if (rc == MT_OK) {
        r = mt_try_calloc(1, sizeof *r);
        if (r == NULL) {
            rc = MT_ERR_NOMEM;
            err = "out of memory";
        }
    }
    app_edit_engine *dead = NULL;
    pthread_mutex_lock(&s->mu);
    if (rc == MT_OK && !s->stop) {
        r->e = e;
        r->refs = 1;
        r->gen = ++s->gen;
        dead = eng_release(s->eng);
        s->eng = r;
        if (s->sink.model) s->sink.model(s->sink.user, e->name);
        message(s, MT_LOG_INFO, "model %s loaded", e->name);
        /* the new model translates everything again, the current segment first */
        drop_completions(s);
        for (int i = 0; i < s->n_workers; i++)
            if (s->workers[i].job) atomic_store(&s->workers[i].job->cancel, true);
        job_free(s->q_mt);
        s->q_mt = NULL;
        want_current(s);
        refill_pre(s);
        pthread_cond_broadcast(&s->work_cv);
    } else {
        if (rc == MT_OK) {
            dead = e; /* stopping: nobody wants it */
            mt_free(r);
        } else {
            message(s, MT_LOG_ERROR, "cannot load model %s: %s%s%s", s->load_path,
                    err[0] ? err : mt_status_str(rc), s->eng->e ? "; keeping " : "",
                    s->eng->e ? s->eng->e->name : "");
        }
    }
    s->loader_busy = false;
    pthread_cond_broadcast(&s->idle_cv);
    pthread_mutex_unlock(&s->mu);
    app_edit_engine_free(dead);
    return NULL;
}

mt_status app_edit_session_load_model(app_edit_session *s, const char *path) {
    if (s->p.load == NULL) return mt_seterr(MT_ERR_INVALID, "switching models is not available");
    pthread_mutex_lock(&s->mu);
    bool busy_now = s->loader_busy;
    pthread_mutex_unlock(&s->mu);
    if (busy_now) return mt_seterr(MT_ERR_INVALID, "another model is still loading");
    if (s->loader_started) { /* finished: loader_busy is false */
        pthread_join(s->loader, NULL);
        s->loader_started = false;
    }
    char *p = mt_try_strdup(path);
    if (p == NULL) return mt_seterr(MT_ERR_NOMEM, "edit: out of memory");
    mt_free(s->load_path);
    s->load_path = p;
    pthread_mutex_lock(&s->mu);
    s->loader_busy = true;
    pthread_mutex_unlock(&s->mu);
    if (pthread_create(&s->loader, NULL, loader_main, s) != 0) {
        pthread_mutex_lock(&s->mu);
        s->loader_busy = false;
        pthread_mutex_unlock(&s->mu);
        return mt_seterr(MT_ERR_NOMEM, "cannot start the model loader thread");
    }
    s->loader_started = true;
    return MT_OK;
}

app_edit_result *app_edit_session_take_results(app_edit_session *s) {
    pthread_mutex_lock(&s->mu);
    app_edit_result *r = s->res_head;
    s->res_head = s->res_tail = NULL;
    pthread_mutex_unlock(&s->mu);
    return r;
}

void app_edit_results_free(app_edit_result *r) {
    while (r) {
        app_edit_result *next = r->next;
        app_edit_output_clear(&r->out);
        mt_free(r->model_path);
        mt_free(r->model_name);
        mt_free(r);
        r = next;
    }
}

bool app_edit_session_wait_idle(app_edit_session *s, int64_t timeout_ms) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += (time_t)(timeout_ms / 1000);
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&s->mu);
    bool idle = true;
    while (busy(s)) {
        if (pthread_cond_timedwait(&s->idle_cv, &s->mu, &dl) != 0 && busy(s)) {
            idle = false;
            break;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return idle;
}

app_edit_session_stats app_edit_session_get_stats(app_edit_session *s) {
    pthread_mutex_lock(&s->mu);
    app_edit_session_stats st = s->stats;
    pthread_mutex_unlock(&s->mu);
    return st;
}
