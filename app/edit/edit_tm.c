/*
** edit_tm.c: translation memory matches in the editor's n-best pane.
**
** A sink wrapper (app_edit_tm_sink): when the MT of a segment is posted,
** the TM matches of its source scoring 75 or more (at most APP_EDIT_TM_MAX,
** best first, in-context exact ones first: the document's neighbouring
** sources are passed as context) are put above the MT alternatives, each
** labelled "TM NN%" (or "TM ICE"), so that M-1.. picks them as it picks an
** alternative; each with its source, whose tokens that differ from the
** segment's source (store_tm_diff) are marked.  The segment itself (any stored version of the same
*file at
** the same index) is left out.  The lookups run on the workers' threads,
** through a store connection of their own, one at a time (a mutex); the
** editor's connection stays on the ui thread.  The MT last posted for each
** segment is kept, so that moving to a segment (app_edit_tm_refresh, from
** the ui thread) posts it again with the matches of now: a segment
** pre-translated before its near-duplicate was confirmed gets that match.
*/
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "edit_tm.h"
#include "editor.h"
#include "store_tm.h"

struct app_edit_tm {
    app_edit_sink inner;
    store *st;
    pthread_mutex_t mu; /* the lookups, the cache */
    const ui_document *doc;
    char *path;   /* the document's path as stored: its own segments are left out */
    ed_mt **last; /* doc->n_segs: the last MT posted for each segment, without matches */
};

typedef struct tm_rows {
    const app_edit_tm *t;
    int64_t seg;
    const char *query; /* the segment's source */
    int n;
    char *text[APP_EDIT_TM_MAX];
    char label[APP_EDIT_TM_MAX][16];
    char *source[APP_EDIT_TM_MAX];   /* the match's source (NULL: out of memory) */
    ui_span *marks[APP_EDIT_TM_MAX]; /* its tokens that differ from query */
    int32_t n_marks[APP_EDIT_TM_MAX];
} tm_rows;

/* The differing tokens of source, as ui spans (none on failure). */
static void diff_marks(const char *query, const char *source, ui_span **out, int32_t *n) {
    store_tm_span *q = NULL, *sp = NULL;
    int32_t nq = 0, ns = 0;
    *out = NULL;
    *n = 0;
    if (store_tm_diff(query, source, &q, &nq, &sp, &ns) == MT_OK && ns > 0 &&
        (*out = mt_try_malloc(sizeof(ui_span) * (size_t)ns)) != NULL) {
        for (int32_t i = 0; i < ns; i++)
            (*out)[i] = (ui_span){sp[i].start, sp[i].len};
        *n = ns;
    }
    mt_free(q);
    mt_free(sp);
}

static int take_match(void *user, const store_tm_match *m) {
    tm_rows *r = user;
    if (r->t->path && m->doc_path && strcmp(m->doc_path, r->t->path) == 0 && m->index == r->seg)
        return 0; /* the segment itself */
    if (r->n >= APP_EDIT_TM_MAX) return 1;
    r->text[r->n] = mt_try_strdup(m->target);
    if (r->text[r->n] == NULL) return 1;
    r->source[r->n] = mt_try_strdup(m->source);
    if (r->source[r->n]) diff_marks(r->query, m->source, &r->marks[r->n], &r->n_marks[r->n]);
    if (m->score >= STORE_TM_ICE)
        snprintf(r->label[r->n], sizeof r->label[0], "TM ICE");
    else
        snprintf(r->label[r->n], sizeof r->label[0], "TM %d%%", m->score);
    r->n++;
    return 0;
}

/* Looks up seg's matches and posts r with them to the inner sink (t->mu held). */
static mt_status post_with_matches(app_edit_tm *t, int64_t seg, const ui_mt_result *r) {
    tm_rows rows = {.t = t, .seg = seg, .query = t->doc->segs[seg].source};
    store_tm_query q = {
        .source = t->doc->segs[seg].source,
        .prev = seg > 0 ? t->doc->segs[seg - 1].source : "",
        .next = seg + 1 < t->doc->n_segs ? t->doc->segs[seg + 1].source : "",
        .min_score = 75,
        .max_results = APP_EDIT_TM_MAX + 1, /* the segment itself may be one */
    };
    mt_status rc = store_tm_lookup(t->st, &q, take_match, &rows);
    if (rc != MT_OK && rc != MT_ABORTED)
        mt_log(MT_LOG_DEBUG, "segment %lld: TM lookup failed: %s", (long long)seg + 1, mt_errmsg());
    if (rows.n == 0) return t->inner.mt(t->inner.user, seg, r);

    int32_t n = rows.n + r->n_nbest;
    const char **texts = mt_try_calloc((size_t)n, sizeof *texts);
    const char **labels = mt_try_calloc((size_t)n, sizeof *labels);
    const char **sources = mt_try_calloc((size_t)n, sizeof *sources);
    const ui_span **marks = mt_try_calloc((size_t)n, sizeof *marks);
    int32_t *n_marks = mt_try_calloc((size_t)n, sizeof *n_marks);
    float *scores = r->nbest_scores ? mt_try_calloc((size_t)n, sizeof *scores) : NULL;
    mt_status ret;
    if (texts == NULL || labels == NULL || sources == NULL || marks == NULL || n_marks == NULL ||
        (r->nbest_scores && scores == NULL)) {
        ret = t->inner.mt(t->inner.user, seg, r); /* without the TM */
    } else {
        for (int i = 0; i < rows.n; i++) {
            texts[i] = rows.text[i];
            labels[i] = rows.label[i];
            sources[i] = rows.source[i];
            marks[i] = rows.marks[i];
            n_marks[i] = rows.n_marks[i];
        }
        for (int32_t i = 0; i < r->n_nbest; i++) {
            texts[rows.n + i] = r->nbest[i];
            labels[rows.n + i] = r->nbest_labels ? r->nbest_labels[i] : NULL; /* "APE" */
            if (scores) scores[rows.n + i] = r->nbest_scores[i];
        }
        ui_mt_result r2 = *r;
        r2.nbest = texts;
        r2.nbest_labels = labels;
        r2.nbest_sources = sources;
        r2.nbest_source_marks = marks;
        r2.nbest_n_marks = n_marks;
        r2.nbest_scores = scores;
        r2.n_nbest = n;
        /* an exact match (100% or in-context) takes the MT's place in the
        ** field, marked as such; Enter confirms it as it would the MT, and
        ** the MT stays among the alternatives (the word confidences are the
        ** MT's: not for this text) */
        if (!strcmp(rows.label[0], "TM ICE") || !strcmp(rows.label[0], "TM 100%")) {
            r2.hyp = rows.text[0];
            r2.hyp_label = rows.label[0];
            r2.word_conf = NULL;
            r2.n_words = 0;
        }
        ret = t->inner.mt(t->inner.user, seg, &r2);
    }
    mt_free(texts);
    mt_free(labels);
    mt_free(sources);
    mt_free(marks);
    mt_free(n_marks);
    mt_free(scores);
    for (int i = 0; i < rows.n; i++) {
        mt_free(rows.text[i]);
        mt_free(rows.source[i]);
        mt_free(rows.marks[i]);
    }
    return ret;
}

static mt_status tm_mt(void *user, int64_t seg, const ui_mt_result *r) {
    app_edit_tm *t = user;
    if (t->inner.mt == NULL) return MT_OK;
    if (seg < 0 || seg >= t->doc->n_segs) return t->inner.mt(t->inner.user, seg, r);
    pthread_mutex_lock(&t->mu);
    ed_mt *copy = NULL; /* kept for app_edit_tm_refresh; without it, no refresh */
    if (ed_mt_copy(r, &copy) == MT_OK) {
        ed_mt_free(t->last[seg]);
        t->last[seg] = copy;
    }
    mt_status ret = post_with_matches(t, seg, r);
    pthread_mutex_unlock(&t->mu);
    return ret;
}

void app_edit_tm_refresh(app_edit_tm *t, int64_t seg) {
    if (t == NULL || seg < 0 || seg >= t->doc->n_segs || t->inner.mt == NULL) return;
    pthread_mutex_lock(&t->mu);
    const ed_mt *m = t->last[seg];
    if (m != NULL) {
        ui_mt_result r = {
            .hyp = m->hyp,
            .nbest = (const char *const *)m->nbest,
            .nbest_scores = m->scores,
            .n_nbest = m->n_nbest,
            .src_tokens = (const char *const *)m->src_tok,
            .n_src = m->n_src,
            .trg_tokens = (const char *const *)m->trg_tok,
            .n_trg = m->n_trg,
            .attention = m->attn,
            .word_conf = m->conf,
            .n_words = m->n_conf,
            .tokens_per_sec = 0,                            /* not a new decoding */
            .nbest_labels = (const char *const *)m->labels, /* "APE" */
        };
        if (post_with_matches(t, seg, &r) != MT_OK)
            mt_log(MT_LOG_DEBUG, "segment %lld: TM matches not refreshed: %s", (long long)seg + 1,
                   mt_errmsg());
    }
    pthread_mutex_unlock(&t->mu);
}

static mt_status tm_completion(void *user, int64_t seg, const char *prefix, const char *text,
                               const float *conf, int32_t n) {
    app_edit_tm *t = user;
    return t->inner.completion ? t->inner.completion(t->inner.user, seg, prefix, text, conf, n)
                               : MT_OK;
}
static mt_status tm_message(void *user, mt_log_level level, const char *text) {
    app_edit_tm *t = user;
    return t->inner.message ? t->inner.message(t->inner.user, level, text) : MT_OK;
}
static mt_status tm_progress(void *user, const char *task, int64_t done, int64_t total) {
    app_edit_tm *t = user;
    return t->inner.progress ? t->inner.progress(t->inner.user, task, done, total) : MT_OK;
}
static mt_status tm_model(void *user, const char *name) {
    app_edit_tm *t = user;
    return t->inner.model ? t->inner.model(t->inner.user, name) : MT_OK;
}

mt_status app_edit_tm_open(const char *db_path, const char *doc_path, const ui_document *doc,
                           app_edit_sink inner, app_edit_tm **out) {
    *out = NULL;
    app_edit_tm *t = mt_try_calloc(1, sizeof *t);
    if (t == NULL) return mt_seterr(MT_ERR_NOMEM, "edit: out of memory");
    t->inner = inner;
    t->doc = doc;
    t->path = doc_path ? mt_try_strdup(doc_path) : NULL;
    if (doc_path && t->path == NULL) {
        mt_free(t);
        return mt_seterr(MT_ERR_NOMEM, "edit: out of memory");
    }
    t->last = mt_try_calloc((size_t)(doc->n_segs > 0 ? doc->n_segs : 1), sizeof *t->last);
    mt_status rc =
        t->last ? store_open(db_path, &t->st) : mt_seterr(MT_ERR_NOMEM, "edit: out of memory");
    if (rc != MT_OK) {
        mt_free(t->last);
        mt_free(t->path);
        mt_free(t);
        return rc;
    }
    pthread_mutex_init(&t->mu, NULL);
    *out = t;
    return MT_OK;
}

app_edit_sink app_edit_tm_sink(app_edit_tm *t) {
    return (app_edit_sink){t, tm_mt, tm_completion, tm_message, tm_progress, tm_model};
}

void app_edit_tm_free(app_edit_tm *t) {
    if (t == NULL) return;
    store_close(t->st);
    pthread_mutex_destroy(&t->mu);
    for (int64_t i = 0; i < t->doc->n_segs; i++)
        ed_mt_free(t->last[i]);
    mt_free(t->last);
    mt_free(t->path);
    mt_free(t);
}
